"""Sitemaps (the sitemaps.org protocol, Google's news extension) and the sitemaps a robots.txt names.

A rule's ``sitemaps`` are read like its index pages, again at every grab. :func:`read_sitemap` reads one
document, gzip-compressed or not: a ``urlset`` gives pages (with ``lastmod``, and ``news:title`` and
``news:publication_date`` of a news sitemap), a ``sitemapindex`` or a robots.txt gives more sitemaps.
The limits are the protocol's own (50,000 entries, 50 MB uncompressed): a file past them, or one that
decompresses past them (a gzip bomb), is refused with a :class:`SitemapError` that says so.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo
from io import BytesIO
from urllib.parse import urlsplit

import lxml.etree

from crawler.errors import CrawlerError
from crawler.isodates import read_iso
from crawler.rules.gzipped import GZIP_MAGIC, gunzip

__all__ = [
    "MAX_BYTES",
    "MAX_ENTRIES",
    "NotASitemapError",
    "Sitemap",
    "SitemapEntry",
    "SitemapError",
    "read_sitemap",
]

# The protocol's limits for one sitemap file (sitemaps.org): entries, and bytes once uncompressed.
MAX_ENTRIES = 50_000
MAX_BYTES = 50 * 1024 * 1024
_ROBOTS_SITEMAP_RE = re.compile(rb"^\s*sitemap\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


class SitemapError(CrawlerError):
    """A document that is no sitemap, or one past the protocol's limits (the message says which)."""


class NotASitemapError(SitemapError):
    """A document that is no sitemap at all (an HTML page, a text): not a sitemap past the limits."""


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """A page of a ``urlset`` or a sitemap of an index: its URL (``loc``, as given) and its dates as the
    sitemap gives them: a date-time in UTC, or a date alone (W3C datetime allows it), no time made up."""

    url: str
    lastmod: datetime | date | None = None
    title: str | None = None  # news:title
    published: datetime | date | None = None  # news:publication_date

    @property
    def changed(self) -> datetime | None:
        """When the page last changed, as far as the sitemap says (a date alone: its midnight in UTC)."""
        moment = self.lastmod or self.published
        if moment is None or isinstance(moment, datetime):
            return moment
        return datetime.combine(moment, time(), UTC)

    def hints(self) -> dict[str, str]:
        """What a news sitemap says of the article, for the request's metadata (its date in ISO 8601, a
        date alone as one)."""
        found = {"title": self.title, "published": self.published.isoformat() if self.published else None}
        return {name: value for name, value in found.items() if value}


@dataclass(frozen=True, slots=True)
class Sitemap:
    """``urlset`` (its entries are pages), ``sitemapindex`` or ``robots`` (its entries are sitemaps)."""

    kind: str
    entries: tuple[SitemapEntry, ...]

    @property
    def lists_sitemaps(self) -> bool:
        return self.kind != "urlset"


def read_sitemap(
    body: bytes,
    url: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_entries: int = MAX_ENTRIES,
    zone: tzinfo | None = None,
) -> Sitemap:
    """The sitemap ``body`` fetched from ``url`` (a robots.txt when the URL's path is ``/robots.txt``); a
    date-time it gives without a UTC offset is read in ``zone`` (the rule's ``timezone``), else in UTC."""
    if body.startswith(GZIP_MAGIC):
        body = gunzip(
            body, url, max_bytes, "the limit of a sitemap (a gzip bomb, or a sitemap to split)", SitemapError
        )
    if len(body) > max_bytes:
        raise SitemapError(
            f"{url} holds {len(body):,} bytes, over the {max_bytes:,} a sitemap may have: split it into"
            " several sitemaps listed by a sitemap index"
        )
    if urlsplit(url).path == "/robots.txt":
        robots = body.removeprefix(codecs.BOM_UTF8)  # RFC 9309: a byte order mark is ignored
        found = [match.decode("utf-8", "replace") for match in _ROBOTS_SITEMAP_RE.findall(robots)]
        return Sitemap("robots", tuple(SitemapEntry(link) for link in dict.fromkeys(found)))
    return _read_xml(body, url, max_entries, zone or UTC)


def _read_xml(body: bytes, url: str, max_entries: int, zone: tzinfo) -> Sitemap:
    """1. Parse incrementally, entities never expanded and no network; 2. the root names the kind;
    3. each ``url`` or ``sitemap`` element gives an entry, and is freed once read."""
    # 1.
    events = lxml.etree.iterparse(
        BytesIO(body),
        events=("start", "end"),
        recover=True,
        resolve_entities=False,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        huge_tree=False,
    )
    entries: list[SitemapEntry] = []
    kind = ""
    try:
        for event, element in events:
            name = _local(element)
            # 2.
            if not kind:
                kind = name
                if kind not in ("urlset", "sitemapindex"):
                    raise NotASitemapError(f"{url} is not a sitemap: its root element is <{name}>")
                continue
            # 3.
            if event != "end" or name not in ("url", "sitemap"):
                continue
            entry = _entry(element, zone)
            element.clear()
            if entry is None:
                continue
            if len(entries) >= max_entries:
                raise SitemapError(
                    f"{url} lists more than {max_entries:,} entries, the protocol's limit for one sitemap"
                )
            entries.append(entry)
    except lxml.etree.XMLSyntaxError:
        if kind:
            return Sitemap(kind, tuple(entries))  # what came before the broken end is read
    if not kind:
        start = body[:40].decode("utf-8", "replace").strip()
        raise NotASitemapError(f"{url} is not a sitemap: it holds no XML element (it starts {start!r})")
    return Sitemap(kind, tuple(entries))


def _entry(element: lxml.etree._Element, zone: tzinfo) -> SitemapEntry | None:
    loc = lastmod = title = published = None
    for child in element.iter():
        name = _local(child)
        text = (child.text or "").strip()
        if name == "loc" and loc is None:
            loc = text
        elif name == "lastmod":
            lastmod = _date(text, zone)
        elif name == "title":
            title = " ".join(text.split()) or None
        elif name == "publication_date":
            published = _date(text, zone)
    if not loc:
        return None
    return SitemapEntry(loc, lastmod, title, published)


def _local(element: lxml.etree._Element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _date(text: str, zone: tzinfo) -> datetime | date | None:
    """A W3C date-time (``2026-11-20T10:31:00+01:00``, ``...Z``; one without its offset, which W3C
    datetime does not allow but sitemaps give, in ``zone``) in UTC, or a date alone (``2026-11-20``) as it
    is, its zone (``2026-11-20+08:00``) left out. An hour a zone's clocks repeat or skip is read with the
    offset before the change (``fold`` 0), as a page's published time is (``published_date``)."""
    moment = read_iso(text)
    if not isinstance(moment, datetime):
        return moment
    try:
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)).astimezone(UTC)
    except OverflowError:  # a date at the edge of the calendar (0001, 9999)
        return None
