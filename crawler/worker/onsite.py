"""Redirects kept on the site: a request of a site's rule redirected (HTTP 301, 302, 303, 307, 308, or a
meta refresh) to a host off the rule's domains is not followed, so that a site's articles are the pages of
its own domains.

``OnSiteRedirectMiddleware`` takes the place of Scrapy's RedirectMiddleware (600), and
:class:`crawler.worker.refresh.CheckedRefreshMiddleware` of its MetaRefreshMiddleware: both decide a
redirect in ``_redirect``, which :class:`OnSiteRedirects` checks first against the rule of the request's
site (:meth:`crawler.rules.model.Rule.redirect_off_site`: its domains and their subdomains, the host with
or without ``www.``, the host first asked for; a discover rule's ``discover.domains`` and
``deny_domains``). A redirect off them fails its request with :class:`OffSiteRedirect`, which the spider
counts skipped (``crawl/redirect_off_site/<site>``, the job's cause "redirected off the site"), naming
the target. A request of no site's rule (robots.txt) is redirected as Scrapy does.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import BaseRedirectMiddleware, RedirectMiddleware
from scrapy.exceptions import IgnoreRequest

from crawler.rules.model import Rule

__all__ = ["OffSiteRedirect", "OnSiteRedirectMiddleware", "OnSiteRedirects"]


class OffSiteRedirect(IgnoreRequest):
    """A redirect of ``url`` to ``target``, off its site's rule: ``why`` says so, and what to change."""

    def __init__(self, url: str, target: str, why: str) -> None:
        super().__init__(f"it redirects to {target}, which a crawl does not follow: {why}")
        self.url = url
        self.target = target
        self.why = why


@runtime_checkable
class SiteRules(Protocol):
    """A spider whose requests carry their site (``meta["site"]``), each crawled by a rule."""

    def rule_of(self, site: str | None) -> Rule | None:
        """The rule of ``site`` (None for an unknown site)."""
        ...


class OnSiteRedirects(BaseRedirectMiddleware):
    """A redirect middleware's ``_redirect`` that refuses a target off the rule of the request's site."""

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        spider = self.crawler.spider
        site = request.meta.get("site")
        rule = spider.rule_of(site) if isinstance(spider, SiteRules) and isinstance(site, str) else None
        if rule is not None:
            asked = str((request.meta.get("redirect_urls") or [request.url])[0])
            why = rule.redirect_off_site(asked, redirected.url)
            if why is not None:
                raise OffSiteRedirect(request.url, redirected.url, why)
        return super()._redirect(redirected, request, reason)


class OnSiteRedirectMiddleware(OnSiteRedirects, RedirectMiddleware):
    """Scrapy's RedirectMiddleware, not followed off the site (see the module docstring)."""
