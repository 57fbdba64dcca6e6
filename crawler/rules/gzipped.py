"""A listing fetched as a gzip file (``sitemap.xml.gz``, ``feed.xml.gz``): no Content-Encoding undoes it,
so the reader of the document does, never past a size limit (a few KB of gzip can hold gigabytes).
"""

from __future__ import annotations

import zlib

from crawler.errors import CrawlerError

__all__ = ["GZIP_MAGIC", "gunzip", "gunzipped_start"]

# The first bytes of a gzip file (RFC 1952): a listing so compressed is read whatever its type says.
GZIP_MAGIC = b"\x1f\x8b"


def gunzip(body: bytes, url: str, max_bytes: int, over: str, error: type[CrawlerError]) -> bytes:
    """``body`` uncompressed; ``error`` when it is no readable gzip or decompresses past ``max_bytes``
    (``over`` says whose limit that is, and what to do)."""
    inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise error(f"{url} is not a readable gzip file: {exc}") from None
    if len(data) > max_bytes:
        raise error(f"{url} decompresses to more than {max_bytes:,} bytes, over {over}")
    return data


def gunzipped_start(body: bytes, size: int) -> bytes:
    """The first ``size`` bytes of the gzip file ``body`` (fewer when it is shorter or broken there): what
    it holds, told without decompressing the rest."""
    try:
        return zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(body, size)
    except zlib.error:
        return b""
