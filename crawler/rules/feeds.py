"""Feeds (RSS 0.9x, 1.0 and 2.0, Atom) read with feedparser: each entry's link, title, date and author.

A rule's ``feeds`` are read like its index pages: again at every grab (conditionally, so an unchanged feed
costs a 304), never deduplicated. :meth:`Rule.feed_entries` keeps the entries whose links are on the rule's
domains and pass ``index.links``' ``allow`` and ``deny``; the date and author of an entry fill the
article's ``published`` and ``author`` where its page has none (``entry`` in the article request's
metadata). An entry's time without a UTC offset is read in the rule's ``timezone``, as a page's is.
"""

from __future__ import annotations

import calendar
import codecs
import io
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

import feedparser

from crawler.errors import CrawlerError
from crawler.published import in_zone, published_date
from crawler.rules.gzipped import GZIP_MAGIC, gunzip
from crawler.settings import DOWNLOAD_MAXSIZE, RULES_MAX_LINKS

__all__ = ["MAX_ENTRIES", "Feed", "FeedEntry", "FeedError", "read_feed"]

# Entries read from one feed, newest first as feeds list them: the crawl's limit of article links of one
# listing page, which a crawl reads from its settings.
MAX_ENTRIES = RULES_MAX_LINKS
_HTML_RE = re.compile(rb"<(?:!doctype\s+html|html[\s>])", re.IGNORECASE)
# The markup of an XML document in bytes of any encoding that writes ASCII as ASCII (UTF-8, GBK, Big5,
# Shift_JIS: none has "<" or ">" in a character's trailing bytes): what holds no element (a comment,
# CDATA, a processing instruction, a DOCTYPE with its entities), an end tag, a start tag. One of the first
# four left open takes the rest of the document, which is read once, not again at each such opening.
# No part but the first four's runs to the end may take a "<" (a name or the text between two tags), and a
# start tag's name ends where its attributes begin: a "<" never closed ("<a<a<a...", a garbled body) fails
# at the next "<", not at the end of the document after trying each split of the name (cubic: 5 KB held
# the crawl thread for minutes).
_NO_ELEMENT = (
    rb"<!--(?:.*?-->|.*)|<!\[CDATA\[(?:.*?\]\]>|.*)|<\?(?:.*?\?>|.*)"
    rb"|<!DOCTYPE[^\[<>]*(?:\[(?:.*?\]\s*>|.*)|>)|<![^<>]*>"
)
_MARKUP_RE = re.compile(
    _NO_ELEMENT + rb"|</(?P<end>[^\s<>]+)\s*>"
    rb"|<(?P<start>[^\s/<>!?]+)(?:\s(?:[^<>\"']|\"[^\"]*\"|'[^']*')*)?/?>",
    re.DOTALL,
)
# Entries are the root's children (Atom's entry, RSS 1.0's item) or the channel's (RSS 0.9x and 2.0).
_ENTRY_NAMES = frozenset((b"item", b"entry"))
_ENTRY_DEPTHS = (1, 2)
# An item or entry start tag, of any prefix and in any case, outside what holds no element: an entry of a
# broken feed, as feedparser's loose parser reads it.
_LOOSE_ENTRY_RE = re.compile(
    _NO_ELEMENT + rb"|<(?P<entry>(?:[^\s/>!?:]+:)?(?:item|entry))[\s/>]", re.DOTALL | re.IGNORECASE
)
# An author as feeds write it: RSS's "email (Name)", and "Name (email)" (Atom's name and email as
# feedparser joins them) or "Name <email>". An email's domain may end in any word (.online, .example):
# feedparser's own split assumes 2 to 4 letters and cuts "editor@wire.example (Jane)" into "ple (Jane".
_EMAIL = r"[^\s@()<>]+@[^\s@()<>]+"
_EMAIL_NAME_RE = re.compile(rf"(?P<email>{_EMAIL})\s*\((?P<name>.*)\)")
_NAME_EMAIL_RE = re.compile(rf"(?P<name>.+?)\s*(?:\({_EMAIL}\)|<{_EMAIL}>)")
# A time of day in a date's text (10:31): a date alone the page's reader gives of such a text lost a time
# feedparser may read (RFC 3339's lowercase 2026-11-20t10:31:00z).
_CLOCK_RE = re.compile(r"\d:\d\d")


class FeedError(CrawlerError):
    """A document that is no RSS or Atom feed (the message says what it is instead)."""


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One entry of a feed: its link (absolute when the feed gives a base), and what the feed says of it."""

    url: str
    title: str | None = None
    published: str | None = None  # ISO 8601, a time in UTC or a date alone, from its published or updated
    author: str | None = None

    def hints(self) -> dict[str, str]:
        """What the entry tells of the article page, for the request's metadata (no empty values)."""
        found = {"title": self.title, "published": self.published, "author": self.author}
        return {name: value for name, value in found.items() if value}


@dataclass(frozen=True, slots=True)
class Feed:
    """A feed's kind (``rss20``, ``atom10``...), its entries in the feed's order, and how many were left
    out past ``MAX_ENTRIES`` or for having no link."""

    version: str
    entries: tuple[FeedEntry, ...]
    over_limit: int = 0
    without_link: int = 0


def read_feed(
    body: bytes,
    url: str,
    content_type: str | None = None,
    max_entries: int = MAX_ENTRIES,
    zone: tzinfo | None = None,
    now: float | None = None,
    max_bytes: int = DOWNLOAD_MAXSIZE,
) -> Feed:
    """The feed ``body`` fetched from ``url``; :class:`FeedError` when it is no feed at all. An entry's
    time without a UTC offset is read in ``zone`` (the rule's ``timezone``), else in UTC; a timestamp is
    judged by ``now`` (:func:`published_date`; the crawl passes Redis's clock). A gzip file
    (``feed.xml.gz``, no Content-Encoding undid) is read decompressed, never past ``max_bytes`` (the size
    limit of a page after decompression), its type (``application/gzip``) set aside.

    feedparser takes broken feeds (an unescaped ``&``, a wrong encoding): a document it recognises as a
    feed, or that has entries, is read, whatever its flaws."""
    if body.startswith(GZIP_MAGIC):
        over = (
            "the size limit of a page after decompression (a gzip bomb, or a feed to read with a larger"
            " DOWNLOAD_MAXSIZE, or --max-bytes of a command)"
        )
        body, content_type = gunzip(body, url, max_bytes, over, FeedError), None
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    document, past = _cut(body, max_entries)
    # A file object, never the bytes themselves: feedparser takes a string or bytes for a path or URL to
    # open first, and a body of "/dev/zero" would be read from this machine's disk.
    parsed = feedparser.parse(
        io.BytesIO(document), response_headers=headers, sanitize_html=False, resolve_relative_uris=True
    )
    version = str(parsed.get("version") or "")
    if not version and not parsed.entries:
        start = body[:40].decode("utf-8", "replace").strip()
        if _HTML_RE.search(body[:2048]):
            raise FeedError(f"{url} is an HTML page, not an RSS or Atom feed (it starts {start!r})")
        reason = parsed.get("bozo_exception")
        detail = f": {_first_line(reason)}" if reason else ""
        raise FeedError(f"{url} is not an RSS or Atom feed{detail} (it starts {start!r})")
    entries: list[FeedEntry] = []
    without_link = 0
    for entry in parsed.entries[:max_entries]:
        link = _link(entry)
        if link is None:
            without_link += 1
            continue
        entries.append(
            FeedEntry(
                url=link,
                title=_text(entry.get("title")),
                published=_published(entry, zone or UTC, now),
                author=_author(entry),
            )
        )
    over_limit = past + max(0, len(parsed.entries) - max_entries)
    return Feed(version or "unknown", tuple(entries), over_limit, without_link)


def _cut(body: bytes, max_entries: int) -> tuple[bytes, int]:
    """``body`` cut before its entry past ``max_entries``, and how many entries it leaves out: feedparser
    reads a whole document, 9 s for one of 100,000 entries, to give all of them. A body in UTF-16 is read
    in UTF-8 to find where, and cut there in UTF-16; one in UTF-32 is read whole as it is."""
    codec = _utf16(body)
    if codec is None:
        found = _cut_at(body, max_entries)
        return (body, 0) if found is None else (body[: found[0]] + found[1], found[2])
    bom = len(codecs.BOM_UTF16) if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else 0
    try:
        wide = body[bom:].decode(codec).encode("utf-8")
    except UnicodeDecodeError:
        return body, 0
    found = _cut_at(wide, max_entries)
    if found is None:
        return body, 0
    at, closing, past = found
    at = bom + len(wide[:at].decode("utf-8").encode(codec))
    return body[:at] + closing.decode("ascii").encode(codec), past


def _cut_at(body: bytes, max_entries: int) -> tuple[int, bytes, int] | None:
    """Where to cut ``body``, in an encoding that writes ASCII as ASCII, before its entry past
    ``max_entries``, the end tags that close what is open there, and how many entries that leaves out;
    None when it has no more entries.

    1. Read the markup from the start, keeping the open elements, until the entry past the limit starts;
    2. cut there and close the open elements, so that the first entries read as in the whole document;
    3. count the entries left out by their start tags.

    A body whose tags do not nest (a broken feed, which feedparser reads with its loose parser: an entry
    at each item or entry start tag, wherever it is) is cut before the item or entry start tag past the
    limit, nothing closed (:func:`_cut_loose`)."""
    # 1.
    open_names: list[bytes] = []
    seen = 0
    for match in _MARKUP_RE.finditer(body):
        end, start = match["end"], match["start"]
        if end is not None:
            if not open_names or open_names.pop() != end:
                return _cut_loose(body, max_entries)
            continue
        if start is None:
            continue
        if start.rpartition(b":")[2] in _ENTRY_NAMES and len(open_names) in _ENTRY_DEPTHS:
            seen += 1
            if seen > max_entries:
                # 2.
                closing = b"".join(b"</%s>" % name for name in reversed(open_names))
                # 3.
                starts = re.findall(
                    rb"%s|(<%s[\s/>])" % (_NO_ELEMENT, re.escape(start)), body[match.start() :], re.DOTALL
                )
                return match.start(), closing, len(starts) - starts.count(b"")
        if not match[0].endswith(b"/>"):
            open_names.append(start)
    return None


def _cut_loose(body: bytes, max_entries: int) -> tuple[int, bytes, int] | None:
    """:func:`_cut_at` of a body whose tags do not nest: before its item or entry start tag (any prefix,
    any case, as feedparser's loose parser reads them) past ``max_entries``, those in comments and CDATA
    not counted; the entries left out are the start tags from there on."""
    seen = 0
    for match in _LOOSE_ENTRY_RE.finditer(body):
        if match["entry"] is None:
            continue
        seen += 1
        if seen > max_entries:
            rest = _LOOSE_ENTRY_RE.findall(body, match.start())
            return match.start(), b"", len(rest) - rest.count(b"")
    return None


def _utf16(body: bytes) -> str | None:
    """The codec of a body in UTF-16, by its byte order mark or its first character ("<"); None for any
    other (UTF-32's mark starts as UTF-16's little-endian one)."""
    if body.startswith((codecs.BOM_UTF32_LE, b"<\0\0\0")):
        return None
    if body.startswith((codecs.BOM_UTF16_LE, b"<\0")):
        return "utf-16-le"
    if body.startswith((codecs.BOM_UTF16_BE, b"\0<")):
        return "utf-16-be"
    return None


def _link(entry: Any) -> str | None:
    """The entry's page: its ``link`` (Atom: the ``alternate`` link), else its id when that is a URL (an
    RSS ``guid`` that is a permalink)."""
    link = entry.get("link")
    if isinstance(link, str) and link.strip():
        return link.strip()
    ident = entry.get("id")
    if isinstance(ident, str) and ident.startswith(("http://", "https://")):
        return ident.strip()
    return None


def _author(entry: Any) -> str | None:
    """The entry's author by name: the Name of an RSS ``email (Name)``, of ``Name (email)`` or of
    ``Name <email>``; else the author as written (a name, or an email alone)."""
    author = _text(entry.get("author"))
    if author is None:
        return None
    match = _EMAIL_NAME_RE.fullmatch(author)
    if match is not None:
        return _text(match["name"]) or match["email"]
    match = _NAME_EMAIL_RE.fullmatch(author)
    return match["name"] if match is not None else author


def _published(entry: Any, zone: tzinfo, now: float | None) -> str | None:
    """The entry's ``published`` date, else its ``updated`` date, in UTC: as feedparser reads it, but for
    a time written without a UTC offset (``2026-11-20 10:31:00``, as feeds of Chinese sites write their
    ``pubDate``), which feedparser reads as UTC, and sometimes not at all (``Fri, 20 Nov 2026 10:31:00``)
    or wrongly (``2026/11/20 10:31`` as 2026-11-01): that time is read as a page's published is
    (:func:`published_date`), in ``zone``; and for a date alone (``2026-11-20``), which feedparser makes
    midnight in UTC (08:00 in Shanghai, the day before in New York): it stays that date, as a page's does
    (but for a text with a time of day that feedparser reads and :func:`published_date` does not). A time
    with its UTC offset is that instant, as :func:`published_date` reads it too: feedparser makes ISO
    8601's basic form (``20261120T103100Z``) midnight in UTC."""
    for key in ("published", "updated"):
        # feedparser gives an entry without "updated" its "published" for it, with a DeprecationWarning.
        if key not in entry:
            continue
        text = entry[key]
        found = _in_utc(text, zone, now) if isinstance(text, str) else None
        if found is None or ("T" not in found and _CLOCK_RE.search(text)):
            found = _date(entry.get(f"{key}_parsed")) or found
        if found is not None:
            return found
    return None


def _in_utc(text: str, zone: tzinfo, now: float | None) -> str | None:
    """The time ``text`` gives, in UTC (without a UTC offset, read in ``zone``); the date ``text`` gives
    without a time, as that date (``2026-11-20``); None when :func:`published_date` reads neither (a
    timestamp judged by ``now``)."""
    found = published_date(text, now=now)
    if found is None or "T" not in found:
        return found
    moment = datetime.fromisoformat(found)
    try:
        return in_zone(moment, zone).astimezone(UTC).isoformat()
    except OverflowError:  # a time at the edge of the calendar (year 1, 9999) that UTC cannot hold
        return None


def _date(parsed: time.struct_time | None) -> str | None:
    if parsed is None:
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(parsed), UTC).isoformat()
    except (OverflowError, ValueError, OSError):
        return None


def _text(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text or None


def _first_line(error: object) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__
