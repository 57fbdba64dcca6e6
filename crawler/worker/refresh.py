"""``CheckedRefreshMiddleware`` (a downloader middleware, in the place of Scrapy's MetaRefreshMiddleware,
580): Scrapy's meta refresh, but a refresh to no URL a request can be made of leaves the page as it is.

Scrapy's follows a ``<meta http-equiv="refresh">`` to an http or https URL, and leaves the page to be read
as it is when the target is of another scheme it can make a request of (``ftp:``, ``data:``). A target
with no ``//`` (``mailto:``, ``javascript:``, ``tel:``), whose request Scrapy refuses ("Missing scheme in
request url"), or one that cannot be read as a URL (``http://[x``) failed the page with a ValueError,
dead-lettered as kind ``ValueError``. A browser stays on such a page; the crawl reads it as it is, as it
reads one that refreshes to ``ftp:``. A refresh to a host off the site's rule is not followed either
(:mod:`crawler.worker.onsite`): its request is skipped.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Response
from scrapy.utils.response import get_meta_refresh

from crawler.rules.model import HTTP_SCHEMES
from crawler.worker.onsite import OnSiteRedirects

__all__ = ["CheckedRefreshMiddleware"]


class CheckedRefreshMiddleware(OnSiteRedirects, MetaRefreshMiddleware):
    """Scrapy's meta refresh, not followed to a target that is no http or https URL, nor off the site
    (:mod:`crawler.worker.onsite`; see the module docstring)."""

    def process_response(  # type: ignore[override]  # hooks take no spider (Scrapy 2.14+)
        self, request: Request, response: Response
    ) -> Request | Response:
        if isinstance(response, HtmlResponse) and not _refreshes_to_the_web(response, self._ignore_tags):
            return response
        return super().process_response(request, response)


def _refreshes_to_the_web(response: HtmlResponse, ignore_tags: list[str]) -> bool:
    """Whether the page has no meta refresh, or one to an http or https URL (Scrapy keeps what it finds, so
    its middleware does not read the page again)."""
    try:
        _, url = get_meta_refresh(response, ignore_tags=ignore_tags)
    except ValueError:  # urljoin: a target such as http://[x
        return False
    return url is None or urlsplit(url).scheme in HTTP_SCHEMES
