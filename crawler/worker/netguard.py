"""Where a request may go: no loopback, private, link-local or reserved address, checked on the address the
connection is made to.

Two parts: ``GuardedResolver`` (``TWISTED_DNS_RESOLVER``) checks every address a host name resolves to, at the
moment Scrapy resolves it to connect, so the address checked is the address connected to (a DNS answer
that changes between a check and the connection, DNS rebinding, cannot slip a private address in);
``NetworkGuardMiddleware`` (a downloader middleware) refuses other schemes and IP literals at once,
before any connection, for every request and every redirect. ``UnfollowedRedirectMiddleware`` leaves a
redirect to another scheme (``mailto:``, ``ftp:``), to a URL with a user name or password, to a URL
longer than ``URLLENGTH_LIMIT``, or to one no request can be made of (a ``Location`` that is no URL,
``http://[x``; no host name, ``http://:8080/``; a port out of range or 0; a space in its host)
unfollowed, so that it fails as its 3xx answer, which :func:`unfollowed_redirect` names (never its
password), rather than as the error Scrapy's redirect makes of it, or as a fetch of a URL no link may be.

A site on this machine or an intranet is crawled when its rule says ``allow_private_addresses: true``:
its domains may then be private addresses, for its own requests only (the rule is the one of the
request's site, ``meta["site"]``, asked of the spider through :class:`PrivateSites`). The resolver sees
no request, so it lets the domains of every such rule resolve to private addresses; a request of another
rule to one of them is checked by the middleware, on the address the resolver gives (and caches for the
connection). ``NETGUARD_PRIVATE_DOMAINS`` are allowed for every request of a crawl (``crawler extract
--allow-private``, ``crawler rules try``). Both parts are off for every host only with the test-only
``CRAWLER_ALLOW_PRIVATE_NETWORKS``.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import NamedTuple, Protocol, Self, runtime_checkable

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.resolver import CachingThreadedResolver
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.base import ReactorBase
from twisted.internet.defer import Deferred, fail
from twisted.internet.error import DNSLookupError
from twisted.python.failure import Failure
from w3lib.url import safe_url_string

from crawler.config import ALLOW_PRIVATE_NETWORKS_ENV
from crawler.errors import redacted
from crawler.rules.addresses import blocked_reason

__all__ = [
    "ALLOW_HINT",
    "BlockedAddress",
    "BlockedRequest",
    "GuardedResolver",
    "NetworkGuardMiddleware",
    "PrivateSites",
    "RefusedHostMiddleware",
    "UnfollowedRedirect",
    "UnfollowedRedirectMiddleware",
    "blocked_by_guard",
    "private_allowed",
    "redirect_target",
    "unfollowed_redirect",
]

# How a refusal says what to do about it.
ALLOW_HINT = "a rule for this site allows it with `allow_private_addresses: true`"


class BlockedRequest(IgnoreRequest):
    """A request refused by the network guard: ``reason`` says which address, and what kind it is."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"refusing {url}: {reason}")
        self.url = url
        self.reason = reason


def private_allowed(host: str, domains: Iterable[str]) -> bool:
    """True when ``host`` is one of ``domains`` (those of the rules with ``allow_private_addresses``) or a
    subdomain of one."""
    host = host.rstrip(".").lower()
    return any(host == domain or host.endswith(f".{domain}") for domain in domains)


class BlockedAddress(DNSLookupError):
    """A host name that resolves to an address that is never fetched (the resolver's refusal)."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"refusing {host}: {reason}")
        self.host = host
        self.reason = reason


# Domains some rule (or crawl) of this process allows private addresses, which the resolver lets resolve
# to them. Scrapy builds the resolver once per process from the process's settings, not a crawl's: the
# spider adds its rules' domains here, each crawl's middleware its NETGUARD_PRIVATE_DOMAINS.
_private_domains: set[str] = set()


def allow_private_domains(domains: Iterable[str]) -> None:
    """Let the resolver give private addresses for ``domains`` (a rule's, ``allow_private_addresses``);
    which requests may go there is the middleware's decision."""
    _private_domains.update(domains)


@runtime_checkable
class PrivateSites(Protocol):
    """A spider whose requests carry their site (``meta["site"]``), each allowed private addresses by its
    own rule."""

    def private_domains_of(self, site: str) -> Sequence[str]:
        """The domains the requests of ``site`` may reach on private addresses (none for an unknown
        site)."""
        ...


# Host names the resolver refused, and why (Twisted turns a resolver's error into "no results", so the
# reason is kept here for the failed request's report). Bounded as Scrapy's DNS cache is.
_refused: LocalCache[str, str] = LocalCache(10_000)


def blocked_by_guard(failure: Failure) -> BlockedAddress | None:
    """The guard's refusal behind a download that failed to resolve its host, if it is one."""
    if not isinstance(failure.value, DNSLookupError | CannotResolveHostError):
        return None
    request = getattr(failure, "request", None)
    host = urllib.parse.urlsplit(request.url).hostname if isinstance(request, Request) else None
    reason = _refused.get(host) if host else None
    return None if host is None or reason is None else BlockedAddress(host, reason)


class GuardedResolver(CachingThreadedResolver):
    """Scrapy's caching resolver (``TWISTED_DNS_RESOLVER``) that refuses a host name whose address is
    loopback, private, link-local or reserved: the address it returns is the address the connection goes
    to, so the check and the connection see the same answer."""

    def __init__(
        self,
        reactor: ReactorBase,
        cache_size: int,
        timeout: float,
        *,
        allow_private: bool,
        private_domains: Sequence[str] = (),
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.allow_private = allow_private
        self.private_domains = tuple(private_domains)

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        return cls(
            reactor,
            cache_size,
            settings.getfloat("DNS_TIMEOUT"),
            allow_private=settings.getbool("CRAWLER_ALLOW_PRIVATE_NETWORKS"),
            private_domains=settings.getlist("NETGUARD_PRIVATE_DOMAINS"),
        )

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        resolved = super().getHostByName(name, timeout)
        if self.allow_private or private_allowed(name, (*self.private_domains, *_private_domains)):
            return resolved
        return resolved.addCallback(self._checked, name)

    @staticmethod
    def _checked(address: str, name: str) -> str | Deferred[str]:
        kind = blocked_reason(address)
        if kind is None:
            return address
        reason = f"{name} is {kind}" if name == address else f"{name} resolves to {address}, {kind}"
        _refused[name] = reason
        return fail(BlockedAddress(name, reason))


class _Check(Enum):
    # A host name a request's own rule does not allow: checked on its address when another rule's does
    # (the resolver lets it through then), else by the resolver.
    RESOLVE = "resolve"


class NetworkGuardMiddleware:
    """Refuses requests to other schemes than http and https, and to IP literals that are loopback,
    private, link-local or reserved, at once, for every request, redirects included (they come back
    through the downloader middlewares). Host names are checked by :class:`GuardedResolver` when they are
    resolved to connect.

    A request passes to the private hosts its own rule allows (the spider's :class:`PrivateSites`), and
    to those of ``NETGUARD_PRIVATE_DOMAINS``. A request of no site (Scrapy's robots.txt requests, made for
    a request that passed here) goes by every rule's. A host name that the resolver lets through for
    another rule is resolved here and refused on a private address. Off (``NotConfigured``) only with the
    test-only ``CRAWLER_ALLOW_PRIVATE_NETWORKS``.
    """

    def __init__(self, crawler: Crawler) -> None:
        if crawler.settings.getbool("CRAWLER_ALLOW_PRIVATE_NETWORKS"):
            raise NotConfigured(f"private networks allowed ({ALLOW_PRIVATE_NETWORKS_ENV}, tests only)")
        self.crawler = crawler
        self.private_domains = tuple(crawler.settings.getlist("NETGUARD_PRIVATE_DOMAINS"))
        _private_domains.update(self.private_domains)
        self.sites = crawler.spider if isinstance(crawler.spider, PrivateSites) else None
        # Per (site, host): None passes, a reason refuses, _Check.RESOLVE is a host name to check here when
        # the resolver lets it through for another rule.
        self.verdicts: dict[tuple[str, str], str | _Check | None] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        parts = urllib.parse.urlsplit(request.url)
        if parts.scheme not in ("http", "https"):
            raise IgnoreRequest(f"refusing {request.url}: only http and https are fetched")
        host = parts.hostname or ""
        site = str(request.meta.get("site") or "")
        if (site, host) not in self.verdicts:
            self.verdicts[site, host] = self._verdict(host, site)
        reason = self.verdicts[site, host]
        if reason is _Check.RESOLVE:
            reason = await _resolved_verdict(host) if private_allowed(host, _private_domains) else None
        if reason is not None:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("net/blocked")
            raise BlockedRequest(request.url, reason)

    def _verdict(self, host: str, site: str) -> str | _Check | None:
        """Why a request of ``site`` may not go to ``host`` (``127.0.0.1 is a loopback address``); None
        when it may; ``_Check.RESOLVE`` for a host name not allowed to ``site``."""
        if not site or self.sites is None:
            allowed: Iterable[str] = _private_domains
        else:
            allowed = (*self.private_domains, *self.sites.private_domains_of(site))
        if private_allowed(host, allowed):
            return None
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            return _Check.RESOLVE
        kind = blocked_reason(str(literal))
        return None if kind is None else f"{host} is {kind}"


async def _resolved_verdict(host: str) -> str | None:
    """Why ``host`` may not be fetched, on the address the resolver gives for it (and keeps in its cache
    for the connection); None for a public address, or a host that does not resolve (the download fails
    as it would)."""
    from twisted.internet import reactor  # noqa: PLC0415 - the reactor the crawl installed

    lookup: Deferred[str] = reactor.resolver.getHostByName(host)
    try:
        address = await maybe_deferred_to_future(lookup)
    except (DNSLookupError, CannotResolveHostError):
        return None
    kind = blocked_reason(address)
    return None if kind is None else f"{host} resolves to {address}, {kind}"


class RefusedHostMiddleware:
    """Turns the resolver's refusal of a host name (Twisted reports it as a failed DNS lookup) into
    :class:`BlockedRequest` before Scrapy's RetryMiddleware sees it: a refused address is not retried, and
    is reported as a refusal, not as a DNS failure. Its order must be above RetryMiddleware's."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls()

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not isinstance(exception, DNSLookupError | CannotResolveHostError):
            return
        host = urllib.parse.urlsplit(request.url).hostname
        reason = _refused.get(host) if host else None
        if reason is not None:
            raise BlockedRequest(request.url, reason)


class UnfollowedRedirectMiddleware:
    """Marks a redirect :func:`unfollowed_redirect` refuses ``dont_redirect`` before Scrapy's
    RedirectMiddleware (600) reads it: that one returns the 3xx answer of an ``ftp:`` target unfollowed, but
    fails on a ``mailto:`` one (``ValueError: Missing scheme``) and on ``http://[x`` (``Invalid IPv6 URL``,
    ``Port out of range``), follows one with credentials (which fails as ``invalid hostname``, the password
    in its message), one to port 0 (refused, retried) and one of any length. Its order must be above 600."""

    def __init__(self, url_limit: int) -> None:
        self.url_limit = url_limit

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings.getint("URLLENGTH_LIMIT"))

    def process_response(self, request: Request, response: Response) -> Response:
        if unfollowed_redirect(response, self.url_limit) is not None:
            request.meta["dont_redirect"] = True
        return response


class UnfollowedRedirect(NamedTuple):
    """A redirect a crawl does not follow: ``kind`` as its errors are counted, ``target`` as a message may
    show it, ``why`` it is not followed."""

    kind: str
    target: str
    why: str


# The 3xx answers Scrapy's RedirectMiddleware follows to their Location.
_FOLLOWED_STATUSES = frozenset({301, 302, 303, 307, 308})
# Characters of an over-long redirect target a message shows: its host and the start of its path.
_SHOWN_CHARACTERS = 100


def unfollowed_redirect(response: Response, url_limit: int) -> UnfollowedRedirect | None:
    """Why the redirect of a 3xx answer is not followed: its target is no http or https URL, holds a user
    name or password (a crawl sends none, and would show it), is no URL a request can be made of (as no
    link queued is: ``http://[x``, no host name, a port out of range or 0, a space in its host), or is
    longer than ``url_limit`` characters (``URLLENGTH_LIMIT``, which no link queued may be either).
    ``None`` for one followed, or no redirect."""
    target = redirect_target(response)
    if target is None:
        return _unreadable_location(response)
    parts = urllib.parse.urlsplit(target)
    credentials = parts.username is not None or parts.password is not None
    shown = redacted(target) if credentials else target
    if parts.scheme.lower() not in ("http", "https"):
        return UnfollowedRedirect("redirect to another scheme", shown, "a crawl fetches http and https only")
    if credentials:
        return UnfollowedRedirect(
            "redirect with credentials", shown, "a crawl sends no user name or password in a URL"
        )
    try:
        problem = (
            "no host name"
            if not parts.hostname
            else "port 0"
            if parts.port == 0
            else "a space in its host"
            if " " in parts.netloc
            else None
        )
    except ValueError as exc:  # .port: a port out of range
        problem = str(exc)
    if problem is not None:
        return UnfollowedRedirect("redirect to no URL", shown, f"no request can be made of it ({problem})")
    # As Scrapy requests it: percent-encoded, which a Location of non-ASCII characters grows by.
    fetched = safe_url_string(target)
    if len(fetched) > url_limit:
        return UnfollowedRedirect(
            "redirect too long",
            f"{fetched[:_SHOWN_CHARACTERS]}... ({len(fetched):,} characters)",
            f"longer than URLLENGTH_LIMIT ({url_limit:,} characters)",
        )
    return None


def _unreadable_location(response: Response) -> UnfollowedRedirect | None:
    """The redirect of a 3xx answer that Scrapy's redirect follows whose ``Location`` cannot be read as a
    URL (``http://[x``, on which that redirect fails with a ValueError); ``None`` otherwise (a 300 answer is
    left unfollowed as it is)."""
    location = response.headers.get(b"Location")
    if response.status not in _FOLLOWED_STATUSES or not location:
        return None
    text = location.decode("latin-1").strip()
    try:
        urllib.parse.urljoin(response.url, text)
    except ValueError as exc:
        return UnfollowedRedirect(
            "redirect to no URL", redacted(text), f"no request can be made of it ({exc})"
        )
    return None


def redirect_target(response: Response) -> str | None:
    """Where a 3xx answer points (absolute), when it has a ``Location`` that reads as a URL (not
    ``http://[x``, which Scrapy's redirect fails on, and which a 300 answer, left unfollowed, may carry)."""
    if not 300 <= response.status < 400:
        return None
    location = response.headers.get(b"Location")
    if not location:
        return None
    try:
        return urllib.parse.urljoin(response.url, location.decode("latin-1").strip())
    except ValueError:
        return None
