"""Where a request may go: ``NetworkGuardMiddleware`` (a downloader middleware) refuses loopback, private,
link-local and reserved addresses."""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured

from crawler.config import ALLOW_PRIVATE_NETWORKS_ENV

__all__ = ["BlockedRequest", "NetworkGuardMiddleware", "blocked_reason"]


class BlockedRequest(IgnoreRequest):
    """A request refused by the network guard: ``reason`` says which address, and what kind it is."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"refusing {url}: {reason}")
        self.url = url
        self.reason = reason


def blocked_reason(address: str) -> str | None:
    """Why ``address`` may not be fetched (``"a loopback address"``), ``None`` when it is public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved or not ip.is_global:
        return "a reserved address, not globally routable"
    return None


class NetworkGuardMiddleware:
    """Refuses requests to loopback, private, link-local and reserved addresses, checked on the resolved
    address of every request, redirects included (they come back through the downloader middlewares).

    Off (``NotConfigured``) only with the test-only ``CRAWLER_ALLOW_PRIVATE_NETWORKS``, for the local test
    and demo servers. Host lookups are cached per host for the life of the crawl.
    """

    def __init__(self, crawler: Crawler) -> None:
        if crawler.settings.getbool("CRAWLER_ALLOW_PRIVATE_NETWORKS"):
            raise NotConfigured(
                f"private networks allowed ({ALLOW_PRIVATE_NETWORKS_ENV}, tests and demo only)"
            )
        self.crawler = crawler
        self.verdicts: dict[str, str | None] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        parts = urllib.parse.urlsplit(request.url)
        if parts.scheme not in ("http", "https"):
            raise IgnoreRequest(f"refusing {request.url}: only http and https are fetched")
        host = parts.hostname or ""
        if host not in self.verdicts:
            self.verdicts[host] = self._verdict(host)
        reason = self.verdicts[host]
        if reason is not None:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("net/blocked")
            raise BlockedRequest(request.url, reason)

    @staticmethod
    def _verdict(host: str) -> str | None:
        """Why ``host`` is refused (``127.0.0.1 is a loopback address``, ``localhost resolves to
        127.0.0.1, a loopback address``), None when every address it has is public."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            kind = blocked_reason(str(literal))
            return None if kind is None else f"{host} is {kind}"
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return None  # not an address at all: the download fails on it, as a DNS error
        for info in infos:
            kind = blocked_reason(str(info[4][0]))
            if kind is not None:
                return f"{host} resolves to {info[4][0]}, {kind}"
        return None
