"""The store interface, the document every backend keeps, and the logic the backends share: weekly
partitioning, duplicate-article detection and the search predicate.

An article document has these fields, in every backend (SQLite and MongoDB):

==============  =================================================================================
``id``          stable id: the first 16 hex digits of sha1(url)
``url``         the article URL, fragment dropped; unique within a week's store
``site``        the site id (the rule file name without ``.yaml``)
``title``       str or None
``body``        the main text, paragraphs separated by a blank line; str or None
``published``   the site's publication date: ISO ``2026-11-20`` (or ``2026-11-20T10:31:00+08:00`` when
                the page gives a time) when it parsed, else the text the rule read; or None
``author``      str or None
``fields``      the rule's custom fields, ``{name: str | None}``
``fetched_at``  ISO-8601 UTC time of the latest fetch, ``2026-11-20T10:31:00.000000Z`` (fixed width, so
                text order is time order)
``first_seen``  ``fetched_at`` of the first fetch; never changes afterwards
``week``        ISO week of ``first_seen``, ``2026w47``: the weekly store that holds the document
``extraction``  where the body came from: ``{"body_from": "rule" | "qread", "algorithm": str | None,
                "body_chars": int}``; None when the item did not say
``content_hash``  sha1 (hex) of the body's normalised text (:func:`crawler.store.fingerprint.normalise`):
                equal for exact duplicates; None without a body
``simhash``     the body's 64-bit SimHash as 16 hex digits (near duplicates are a few bits apart); None
                when the body is too short to fingerprint
``summary``     extractive summaries of the body by length in sentences, ``{"1": str, "3": str}``; None
                when not made
``reposts``     the same article seen under other URLs, oldest first: ``[{"url", "site", "fetched_at",
                "match": "exact" | "near", "distance": int}]``; never changed by a re-fetch
``job``         the crawl job (a temp crawl or a regular grab) that fetched it; str or None
==============  =================================================================================

Weekly stores: a document lives in the store of the ISO week of its first fetch (``isocalendar()``, in
UTC: 2027-01-01 belongs to ``2026w53``). Upserts: the URL is unique, so a retried or re-fetched item never
makes a second document; a re-fetch replaces every field but ``id``, ``url``, ``first_seen``, ``week`` and
``reposts`` (a fetch older than the stored one changes nothing). A re-fetch is looked up in its own week
and the week before, so a retry across the Sunday/Monday midnight updates last week's document.

Duplicate articles: a new URL whose body has the ``content_hash`` of a document first seen within
``DedupPolicy.window`` of it (exact), or a SimHash at most ``max_distance`` bits from one and most of its
shingles (near, :meth:`Store.find_original`), is not stored: it is recorded in that document's
``reposts``. Candidates for the near match have a band key among the SimHash's probe keys
(:func:`crawler.store.fingerprint.probe_keys`).
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from crawler.errors import CrawlerError
from crawler.store import fingerprint

__all__ = [
    "DOCUMENT_FIELDS",
    "Candidate",
    "DedupPolicy",
    "Store",
    "StoreError",
    "Written",
    "article_id",
    "check_article",
    "content_hash",
    "format_timestamp",
    "make_document",
    "matches",
    "parse_timestamp",
    "parse_week",
    "previous_week",
    "search_terms",
    "week_bounds",
    "week_of",
    "weeks_between",
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
    "simhash",
    "summary",
    "reposts",
    "job",
)
# Fields a re-fetch of a stored URL replaces (the others are fixed when the URL is first stored).
UPDATED_FIELDS = tuple(
    name for name in DOCUMENT_FIELDS if name not in {"id", "url", "first_seen", "week", "reposts"}
)
# Fields holding a string or None.
_TEXT_FIELDS = ("title", "body", "published", "author", "job")
_WEEK_RE = re.compile(r"^(\d{4})w(\d{2})$")
_CJK_TERM_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_QUOTED_RE = re.compile(r'"([^"]*)"|(\S+)')

Outcome = Literal["new", "updated", "unchanged", "repost", "spooled"]


class StoreError(CrawlerError):
    """The article store cannot be opened, read or written, or an article or query given to it is invalid."""


@dataclass(frozen=True)
class Written:
    """What storing one article did: ``new`` (a document made), ``updated`` (its URL's document
    replaced), ``unchanged`` (an older fetch than the stored one), ``repost`` (recorded against
    ``original``), or ``spooled`` (kept on local disk until the backend is reachable again)."""

    outcome: Outcome
    url: str
    original: str | None = None

    @property
    def new(self) -> bool:
        return self.outcome == "new"


@dataclass(frozen=True)
class DedupPolicy:
    """Which earlier documents a new URL's body is compared with: those first seen at most ``window``
    before or after it; ``max_distance`` SimHash bits apart at most for a near duplicate; off when not
    ``enabled``."""

    window: timedelta = timedelta(days=7)
    max_distance: int = fingerprint.DEFAULT_MAX_DISTANCE
    enabled: bool = True

    def __post_init__(self) -> None:
        if self.window < timedelta(0):
            raise StoreError(f"DEDUP_WINDOW_DAYS is {self.window.days}: expected 0 or more days")
        if not 0 <= self.max_distance <= 64:
            raise StoreError(
                f"DEDUP_MAX_DISTANCE is {self.max_distance!r}: expected a bit count from 0 to 64"
            )


@dataclass(frozen=True)
class Candidate:
    """A stored document a new body may duplicate, as the backends read it for the duplicate pass."""

    url: str
    site: str
    week: str
    first_seen: str
    content_hash: str | None
    simhash: str | None


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


def weeks_between(lower: datetime, upper: datetime) -> list[str]:
    """Names of the weeks that overlap ``[lower, upper]``, oldest first."""
    names = []
    moment = lower
    while moment <= upper:
        names.append(week_of(moment))
        moment = week_bounds(names[-1])[1]
    return names


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
    """sha1 (hex) of ``body``'s normalised text (case, punctuation and white space ignored); None
    without a body or when nothing is left."""
    if not body:
        return None
    normalised = fingerprint.normalise(body)
    if not normalised:
        return None
    return hashlib.sha1(normalised.encode("utf-8")).hexdigest()


def check_article(article: Mapping[str, Any]) -> None:
    """StoreError, naming the article and the field, if :func:`make_document` would refuse ``article``
    (the fingerprints, the costly part, are not computed)."""
    make_document(article, fingerprints=False)


def make_document(article: Mapping[str, Any], *, fingerprints: bool = True) -> dict[str, Any]:
    """The stored document for ``article`` (an item of the pipeline, or a document read from a store).

    Keys starting with ``_`` are left out; ``id``, ``week``, ``content_hash`` and ``simhash`` are
    computed (the last two only with ``fingerprints``); a ``first_seen`` or ``reposts`` given is kept (a
    document copied from another store), else ``first_seen`` is ``fetched_at``. StoreError names the
    article and the field when a field is missing, unknown or of the wrong type.
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
    summary = article.get("summary")
    if summary is not None and not (
        isinstance(summary, Mapping) and all(isinstance(v, str) for v in summary.values())
    ):
        raise StoreError(
            f"article {url}: field 'summary' is {summary!r}: expected a mapping of lengths to texts, or None"
        )
    reposts = article.get("reposts") or []
    if not isinstance(reposts, Sequence) or not all(isinstance(r, Mapping) for r in reposts):
        raise StoreError(f"article {url}: field 'reposts' is {reposts!r}: expected a list of mappings")
    for name, value in (
        ("fields", fields),
        ("extraction", extraction),
        ("summary", summary),
        ("reposts", reposts),
    ):
        _check_json(url, name, value)
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
    shingled = fingerprint.simhash(body) if body and fingerprints else None
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
        "content_hash": content_hash(body) if fingerprints else None,
        "simhash": None if shingled is None else fingerprint.to_hex(shingled),
        "summary": None if summary is None else {str(k): v for k, v in summary.items()},
        "reposts": [dict(r) for r in reposts],
        "job": article.get("job"),
    }


def _check_json(url: str, name: str, value: object) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"article {url}: field {name!r} cannot be stored as JSON ({exc}):"
            " expected strings, numbers, booleans, None, lists and mappings"
        ) from None


def _describe(article: Mapping[str, Any]) -> str:
    site = article.get("site")
    return f"of site {site!r}" if site else "(no site, no url)"


def repost_record(document: Mapping[str, Any], match: str, distance: int) -> dict[str, Any]:
    """The entry a repost leaves in its original's ``reposts``."""
    return {
        "url": document["url"],
        "site": document["site"],
        "fetched_at": document["fetched_at"],
        "match": match,
        "distance": distance,
    }


def redacted(uri: str) -> str:
    """``uri`` without its user name and password: a message must not show credentials."""
    parts = urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}/..." if parts.scheme and host else "a value that is not a URI"


def check_limit(limit: int | None) -> None:
    """StoreError unless ``limit`` is None (no limit) or 0 or more."""
    if limit is not None and limit < 0:
        raise StoreError(f"limit {limit!r} is negative: expected None (no limit) or a count of 0 or more")


def limited(documents: Iterator[dict[str, Any]], limit: int | None) -> Iterator[dict[str, Any]]:
    """The first ``limit`` of ``documents`` (all when None), read lazily."""
    for number, document in enumerate(documents):
        if limit is not None and number >= limit:
            return
        yield document


def search_terms(query: str) -> list[str]:
    """The terms of a search: words, or phrases in double quotes; lower-cased, empty ones dropped."""
    found = [(quoted or word).lower() for quoted, word in _QUOTED_RE.findall(query)]
    terms = [" ".join(term.split()) for term in found]
    return [term for term in terms if term]


def matches(document: Mapping[str, Any], terms: Sequence[str]) -> bool:
    """Whether every term is in the document's title or body (lower-cased): CJK terms anywhere, other
    terms as whole words (not inside a longer word). Both backends filter their index's hits with this,
    so a search gives the same documents everywhere."""
    text = " ".join(" ".join(str(document.get(name) or "").split()) for name in ("title", "body")).lower()
    for term in terms:
        if _CJK_TERM_RE.search(term):
            if term not in text:
                return False
        elif re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text) is None:
            return False
    return True


class Store(ABC):
    """Where articles are kept: one store per ISO week of the first fetch, the URL unique in each.

    Writes are committed (or spooled to local disk) before they return: a request is acknowledged only
    once its item is stored. Reads see every week unless given one; documents are plain dicts with the
    fields of ``DOCUMENT_FIELDS``.
    """

    dedup: DedupPolicy

    @abstractmethod
    def upsert_many(self, articles: Iterable[Mapping[str, Any]]) -> list[Written]:
        """Store ``articles`` (all validated before any is written) in batches, in order; one
        :class:`Written` per article."""

    def upsert(self, article: Mapping[str, Any]) -> Written:
        """Store one article, committed before returning."""
        return self.upsert_many([article])[0]

    @abstractmethod
    def get(self, url_or_id: str) -> dict[str, Any] | None:
        """The document of this URL or id (the newest week's when several weeks hold it), or None."""

    @abstractmethod
    def original_of(self, url: str) -> dict[str, Any] | None:
        """The document that records ``url`` among its reposts, or None."""

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
    def search(
        self, query: str, *, site: str | None = None, week: str | None = None, limit: int | None = 20
    ) -> Iterator[dict[str, Any]]:
        """Documents matching every term of ``query`` (:func:`search_terms`, :func:`matches`), newest
        first, at most ``limit``."""

    @abstractmethod
    def stats(self) -> list[dict[str, Any]]:
        """Per week and site, oldest week first: ``{"week", "site", "articles", "reposts", "qread"}``
        (documents, reposts recorded against them, bodies that came from qRead)."""

    @abstractmethod
    def weeks(self) -> list[str]:
        """Names of the weeks that have a store, oldest first."""

    @abstractmethod
    def flush(self) -> None:
        """Make every write so far durable in the backend's main storage."""

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

    # --- reads shared by the backends ---------------------------------------------------------------

    def weeks_asked(self, week: str | None) -> list[str]:
        """Every week with a store, or just ``week`` if it has one (StoreError if it names no week)."""
        if week is None:
            return self.weeks()
        parse_week(week)
        return [week] if week in self.weeks() else []

    def time_window(
        self, week: str | None, since: datetime | None, until: datetime | None
    ) -> tuple[list[str], datetime | None, datetime | None]:
        """The weeks that may hold documents with ``since <= first_seen < until`` (in ``week`` if given),
        and those bounds as aware UTC times."""
        lower = None if since is None else parse_timestamp(since, "since")
        upper = None if until is None else parse_timestamp(until, "until")
        weeks = [
            name
            for name in self.weeks_asked(week)
            if (lower is None or week_bounds(name)[1] > lower)
            and (upper is None or week_bounds(name)[0] < upper)
        ]
        return weeks, lower, upper

    # --- the duplicate pass, shared by the backends -------------------------------------------------

    def find_original(
        self,
        document: Mapping[str, Any],
        candidates: Iterable[Candidate],
        body_of: Callable[[Candidate], str | None],
    ) -> tuple[Candidate, str, int] | None:
        """The stored document ``document`` duplicates among ``candidates`` (which the backend read by
        content hash and band keys), with the match (``exact`` or ``near``) and the SimHash distance.

        1. Candidates outside the window, or of the same URL, are left out.
        2. The same content hash is an exact match: the earliest such document wins at once.
        3. Otherwise, SimHashes at most ``max_distance`` bits apart, closest (then earliest) first, are
           confirmed by their bodies (``body_of``, :func:`crawler.store.fingerprint.same_article`): the
           first confirmed one wins. Two texts whose SimHashes collide by chance never pass.
        """
        if not self.dedup.enabled or document.get("content_hash") is None:
            return None
        lower, upper = self.dedup_range(document)
        own = None if document.get("simhash") is None else fingerprint.from_hex(document["simhash"])
        # 1.
        eligible = [c for c in candidates if c.url != document["url"] and lower <= c.first_seen <= upper]
        # 2.
        exact = [c for c in eligible if c.content_hash == document["content_hash"]]
        if exact:
            return min(exact, key=lambda c: (c.first_seen, c.url)), "exact", 0
        if own is None:
            return None
        # 3.
        near = sorted(
            (distance, c.first_seen, c.url, c)
            for c in {c.url: c for c in eligible if c.simhash is not None}.values()
            if (distance := fingerprint.hamming(own, fingerprint.from_hex(c.simhash or "0")))
            <= self.dedup.max_distance
        )
        for distance, _, _, candidate in near:
            body = body_of(candidate)
            if body is not None and fingerprint.same_article(document["body"], body):
                return candidate, "near", distance
        return None

    def dedup_range(self, document: Mapping[str, Any]) -> tuple[str, str]:
        """``first_seen`` bounds (text, inclusive) of the documents ``document`` is compared with."""
        first_seen = parse_timestamp(document["first_seen"], "first_seen")
        return (
            format_timestamp(first_seen - self.dedup.window),
            format_timestamp(first_seen + self.dedup.window),
        )

    def dedup_weeks(self, document: Mapping[str, Any]) -> list[str]:
        """The weeks that may hold a document ``document`` is compared with."""
        lower, upper = self.dedup_range(document)
        return weeks_between(parse_timestamp(lower, "lower"), parse_timestamp(upper, "upper"))
