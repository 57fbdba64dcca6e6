"""The store interface, the document every backend keeps, and the weekly partitioning they share.

An article document has these fields, in every backend (SQLite today, MongoDB next):

==============  =================================================================================
``id``          stable id: the first 16 hex digits of sha1(url)
``url``         the article URL, fragment dropped; unique within a week's store
``site``        the site id (the rule file name without ``.yaml``)
``title``       str or None
``body``        the main text, paragraphs separated by a blank line; str or None
``published``   the site's publication date: ISO ``2026-11-20`` (or ``2026-11-20T10:31:00+08:00`` when
                the page gives a time) when it parsed, else the text the rule read; or None
``author``      str or None
``fields``      the rule's custom fields, ``{name: str | None}`` (JSON in SQLite)
``fetched_at``  ISO-8601 UTC time of the latest fetch, ``2026-11-20T10:31:00.000000Z`` (fixed width, so
                text order is time order)
``first_seen``  ``fetched_at`` of the first fetch; never changes afterwards
``week``        ISO week of ``first_seen``, ``2026w47``: the weekly store that holds the document
``extraction``  where the body came from: ``{"body_from": "rule" | "qread", "algorithm": str | None,
                "body_chars": int}`` (JSON in SQLite); None when the item did not say
``content_hash``  sha1 (hex) of the body after NFKC and white-space collapsing, for the duplicate pass;
                None without a body
``job``         the crawl job (a temp crawl or a regular grab) that fetched it; str or None
==============  =================================================================================

Weekly stores: a document lives in the store of the ISO week of its first fetch (``isocalendar()``, in
UTC: 2027-01-01 belongs to ``2026w53``). Upserts: the URL is unique, so a retried or re-fetched item never
makes a second document; a re-fetch replaces every field but ``id``, ``url``, ``first_seen`` and ``week``
(a fetch older than the stored one changes nothing). A re-fetch is looked up in its own week and the week
before, so a retry across the Sunday/Monday midnight updates last week's document; a URL fetched again
more than a week later gets a document in its new week (the Bloom filter keeps that rare; the duplicate
pass finds such pairs by ``content_hash``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from crawler.errors import CrawlerError

__all__ = [
    "DOCUMENT_FIELDS",
    "Store",
    "StoreError",
    "article_id",
    "content_hash",
    "format_timestamp",
    "make_document",
    "parse_timestamp",
    "parse_week",
    "previous_week",
    "week_bounds",
    "week_of",
]

DOCUMENT_FIELDS = (
    "id",
    "url",
    "site",
    "title",
    "body",
    "published",
    "author",
    "fields",
    "fetched_at",
    "first_seen",
    "week",
    "extraction",
    "content_hash",
    "job",
)
# Fields holding a string or None.
_TEXT_FIELDS = ("title", "body", "published", "author", "job")
_WEEK_RE = re.compile(r"^(\d{4})w(\d{2})$")


class StoreError(CrawlerError):
    """The article store cannot be opened, read or written, or an article or query given to it is invalid."""


def week_of(dt: datetime) -> str:
    """Name of the ISO week holding ``dt`` (aware times in UTC, naive ones taken as UTC): ``2026w47``."""
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    year, week, _ = dt.isocalendar()
    return f"{year}w{week:02d}"


def parse_week(name: str) -> tuple[int, int]:
    """``(year, week)`` of a week name such as ``2026w47``; StoreError if it names no ISO week."""
    match = _WEEK_RE.match(name)
    if match is not None:
        year, week = int(match[1]), int(match[2])
        try:
            date.fromisocalendar(year, week, 1)
        except ValueError:
            pass
        else:
            return year, week
    raise StoreError(
        f"week {name!r} is not an ISO week: expected YYYYwWW with WW from 01 to 52 (53 in long years),"
        " e.g. 2026w47"
    )


def week_bounds(name: str) -> tuple[datetime, datetime]:
    """Start (Monday 00:00 UTC, included) and end (next Monday, excluded) of the week named ``name``."""
    year, week = parse_week(name)
    start = datetime.combine(date.fromisocalendar(year, week, 1), datetime.min.time(), UTC)
    return start, start + timedelta(days=7)


def previous_week(name: str) -> str:
    """Name of the ISO week before ``name``: ``2027w01`` -> ``2026w53``."""
    return week_of(week_bounds(name)[0] - timedelta(days=1))


def parse_timestamp(value: object, what: str) -> datetime:
    """An aware UTC datetime from an ISO-8601 string or a datetime (naive ones are taken as UTC)."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise StoreError(
                f"{what} {value!r} is not an ISO-8601 time: expected e.g. 2026-11-20T10:31:00Z"
            ) from None
    else:
        raise StoreError(f"{what} {value!r} is not a time: expected an ISO-8601 string or a datetime")
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_timestamp(dt: datetime) -> str:
    """Fixed-width ISO-8601 UTC text of ``dt``, ``2026-11-20T10:31:00.000000Z``: text order is time order."""
    return dt.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def article_id(url: str) -> str:
    """The stable document id of ``url``: the first 16 hex digits of its sha1."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()[:16]


def content_hash(body: str | None) -> str | None:
    """sha1 (hex) of ``body`` after NFKC normalisation and white-space collapsing; None without a body."""
    if not body:
        return None
    normalised = " ".join(unicodedata.normalize("NFKC", body).split())
    return hashlib.sha1(normalised.encode("utf-8")).hexdigest()


def make_document(article: Mapping[str, Any]) -> dict[str, Any]:
    """The stored document for ``article`` (an item of the pipeline, or a document read from a store).

    Keys starting with ``_`` are left out; ``id``, ``week`` and ``content_hash`` are computed; a
    ``first_seen`` given is kept (a document copied from another store), else it is ``fetched_at``.
    StoreError names the article and the field when a field is missing, unknown or of the wrong type.
    """
    url = article.get("url")
    if not isinstance(url, str) or not url.strip():
        raise StoreError(f"article {_describe(article)}: field 'url' is {url!r}: expected a non-empty string")
    unknown = sorted(key for key in article if not key.startswith("_") and key not in DOCUMENT_FIELDS)
    if unknown:
        raise StoreError(
            f"article {url}: unknown field {unknown[0]!r}: expected one of {', '.join(DOCUMENT_FIELDS)}"
            " (keys starting with '_' are not stored)"
        )
    site = article.get("site")
    if not isinstance(site, str) or not site:
        raise StoreError(f"article {url}: field 'site' is {site!r}: expected a site id (non-empty string)")
    for name in _TEXT_FIELDS:
        value = article.get(name)
        if value is not None and not isinstance(value, str):
            raise StoreError(f"article {url}: field {name!r} is {value!r}: expected a string or None")
    fields = article.get("fields") or {}
    if not isinstance(fields, Mapping) or not all(isinstance(key, str) for key in fields):
        raise StoreError(
            f"article {url}: field 'fields' is {fields!r}: expected a mapping of names to values"
        )
    extraction = article.get("extraction")
    if extraction is not None and not isinstance(extraction, Mapping):
        raise StoreError(f"article {url}: field 'extraction' is {extraction!r}: expected a mapping or None")
    if "fetched_at" not in article:
        raise StoreError(f"article {url}: field 'fetched_at' is missing: expected an ISO-8601 UTC time")
    fetched_at = parse_timestamp(article["fetched_at"], f"article {url}: field 'fetched_at'")
    first_seen_value = article.get("first_seen")
    first_seen = (
        fetched_at
        if first_seen_value is None
        else parse_timestamp(first_seen_value, f"article {url}: field 'first_seen'")
    )
    body = article.get("body")
    return {
        "id": article_id(url),
        "url": url,
        "site": site,
        "title": article.get("title"),
        "body": body,
        "published": article.get("published"),
        "author": article.get("author"),
        "fields": dict(fields),
        "fetched_at": format_timestamp(fetched_at),
        "first_seen": format_timestamp(first_seen),
        "week": week_of(first_seen),
        "extraction": None if extraction is None else dict(extraction),
        "content_hash": content_hash(body),
        "job": article.get("job"),
    }


def _describe(article: Mapping[str, Any]) -> str:
    site = article.get("site")
    return f"of site {site!r}" if site else "(no site, no url)"


class Store(ABC):
    """Where articles are kept: one store per ISO week of the first fetch, the URL unique in each.

    Writes are committed before they return (a request is acknowledged only once its item is stored).
    Reads see every week unless given one; documents are plain dicts with the fields of ``DOCUMENT_FIELDS``.
    """

    @abstractmethod
    def upsert_many(self, articles: Iterable[Mapping[str, Any]]) -> int:
        """Store ``articles`` (all validated before any is written) in batches, each committed;
        returns how many of their URLs were new."""

    def upsert(self, article: Mapping[str, Any]) -> bool:
        """Store one article, committed before returning; True if its URL was new, False if it was updated."""
        return self.upsert_many([article]) == 1

    @abstractmethod
    def get(self, url_or_id: str) -> dict[str, Any] | None:
        """The document of this URL or id (the newest week's when several weeks hold it), or None."""

    @abstractmethod
    def count(self, site: str | None = None, week: str | None = None) -> int:
        """Number of documents, of one site and/or one week if given."""

    @abstractmethod
    def iter_articles(
        self,
        site: str | None = None,
        week: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        newest_first: bool = True,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Documents in ``first_seen`` order (newest first unless told otherwise), filtered by site, week
        and ``since <= first_seen < until``, at most ``limit`` of them."""

    @abstractmethod
    def weeks(self) -> list[str]:
        """Names of the weeks that have a store, oldest first."""

    @abstractmethod
    def flush(self) -> None:
        """Make every write so far durable in the backend's main storage (writes are committed already)."""

    @abstractmethod
    def close(self) -> None:
        """Release the backend's connections; closing twice is harmless."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
