"""Which addresses the crawl never fetches (the network guard's verdict), without the crawl's imports: the
worker's guard (:mod:`crawler.worker.netguard`) refuses them, and ``crawler rules check`` warns of a rule's
domains that are such addresses."""

from __future__ import annotations

import ipaddress

__all__ = ["blocked_reason"]


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
