"""The stored article document: its fields, how an article becomes one, its week and its fingerprints.

An article document has these fields, in every backend (SQLite and MongoDB):

==============  =================================================================================
``id``          stable id: the first 16 hex digits of sha1(url)
``url``         the article URL, fragment dropped; unique within a week's store
``site``        the site id (the rule file name without ``.yaml``)
``title``       str or None
``body``        the main text, paragraphs separated by a blank line; str or None
``published``   the site's publication date: ISO ``2026-11-20`` (or ``2026-11-20T10:31:00+08:00`` when
                the page, or the feed or sitemap entry that led to it, gives a time; its UTC offset the
                page's, else the rule's ``timezone``'s, else none) when it parsed, else the text the rule
                read; or None
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
                "match": "exact" | "near", "distance": int}]`` (and ``redirected_from``, as below, when
                URLs redirected to the repost's); never changed by a re-fetch
``job``         the crawl job (a temp crawl or a regular grab) that fetched it; str or None
``redirected_from``  the URLs that redirected to ``url`` when it was fetched: the one asked for (the link
                a listing gave) first, then any on the way; fragments dropped, each once; ``[]`` when it
                was not redirected. A later fetch adds those it met; one without redirect drops none
==============  =================================================================================

Weekly stores: a document lives in the store of the ISO week of its first fetch (``isocalendar()``, in
UTC: 2027-01-01 belongs to ``2026w53``). Upserts: the URL is unique, so a retried or re-fetched item never
makes a second document; a re-fetch replaces every field but ``id``, ``url``, ``first_seen``, ``week``,
``reposts`` and ``redirected_from`` (which it adds to); a fetch older than the stored one changes nothing.
A re-fetch is looked up in its own week and the weeks before and after, so a retry across the Sunday/Monday
midnight updates last week's document, and a re-fetch by a clock set back over it (NTP) finds next
week's document.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urldefrag

from crawler.errors import StoreError
from crawler.store import fingerprint

__all__ = [
    "DOCUMENT_FIELDS",
    "KEPT_WHEN_NONE",
    "UPDATED_FIELDS",
    "StoreError",
    "add_fingerprints",
    "article_id",
    "check_article",
    "content_hash",
    "fingerprints",
    "format_timestamp",
    "make_document",
    "merged_redirects",
    "neighbour_weeks",
    "parse_timestamp",
    "parse_week",
    "previous_week",
    "published_prefix_range",
    "published_utc",
    "repost_record",
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
    "redirected_from",
)
# Fields a re-fetch of a stored URL replaces (the others are fixed when the URL is first stored, but for
# redirected_from, which a re-fetch adds to: merged_redirects).
UPDATED_FIELDS = tuple(
    name
    for name in DOCUMENT_FIELDS
    if name not in {"id", "url", "first_seen", "week", "reposts", "redirected_from"}
)
# Updated fields a re-fetch that reads none of leaves as stored: a feed's or an API's entry gives them to the
# fetch it queued, and a later fetch of the page (`temp --stored`, a listing that reached it first, a rule
# without the field) must not replace a known date, title or byline by none.
KEPT_WHEN_NONE = ("title", "published", "author")
# Fields holding a string or None.
_TEXT_FIELDS = ("title", "body", "published", "author", "job")
_WEEK_RE = re.compile(r"^(\d{4})w(\d{2})$")
# A ``published`` value that is a date (and time): the forms crawler/published.py writes, a date first.
_PUBLISHED_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2}(?::\d{2})?)?)?"
)


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


def neighbour_weeks(name: str) -> tuple[str, str]:
    """The weeks a document of week ``name`` may be stored in already, besides its own: the week before
    (a retry across Monday's midnight) and the week after (a clock set back over it, as NTP does to a
    clock that ran ahead), in that order."""
    return previous_week(name), week_of(week_bounds(name)[1])


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


def newest_published(document: Mapping[str, Any]) -> tuple[bool, str, str, str]:
    """The sort key, newest first with ``reverse=True``, of "the newest articles" by publication: the
    published day (as the page gives it), then its time of day where the stored value has one (compared
    in UTC, a time without a UTC offset taken as UTC; before the articles of that day without one), then
    ``first_seen``, the time stored; a published value that is no date (stored as the page gave it, or
    none) after every date, by ``first_seen``."""
    published = str(document.get("published") or "").strip()
    first_seen = str(document.get("first_seen") or "")
    try:
        moment = datetime.fromisoformat(published)
    except ValueError:
        return (False, "", "", first_seen)
    if len(published) == len("2026-11-20"):
        return (True, published, "", first_seen)
    return (True, moment.date().isoformat(), _utc_order(moment), first_seen)


def published_utc(value: object) -> str | None:
    """The instant a stored ``published`` value names, as fixed-width UTC text (:func:`format_timestamp`),
    what ``--published-since`` and ``--published-until`` compare: a date alone is its midnight in UTC (as
    ``--since 2026-11-20`` is), a time without a UTC offset is taken as UTC (as :func:`newest_published`
    does). None when the value is no date (none, or the text the rule read when it did not parse)."""
    if not isinstance(value, str) or _PUBLISHED_RE.fullmatch(value) is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        return format_timestamp(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    except OverflowError:
        return None


def published_prefix_range(lower: datetime | None, upper: datetime | None) -> tuple[str | None, str | None]:
    """Text bounds, ``(from, before)``, of the stored ``published`` values whose instant
    (:func:`published_utc`) may be in ``[lower, upper)``: a value starts with its own day, which is at most
    a day from its UTC day (an offset is less than 24 hours), so every such value sorts in them. An index on
    ``published`` finds those; :func:`published_utc` decides. None where there is no bound (or the year 1
    or 9999 leaves no room for the day's margin: every value is read then)."""
    start = end = None
    if lower is not None:
        with contextlib.suppress(OverflowError):
            start = (lower.astimezone(UTC).date() - timedelta(days=1)).isoformat()
    if upper is not None:
        with contextlib.suppress(OverflowError):
            end = (upper.astimezone(UTC).date() + timedelta(days=2)).isoformat()
    return start, end


def _utc_order(moment: datetime) -> str:
    """``moment`` (without a UTC offset: in UTC) as text whose order is the order of its instants in UTC:
    microseconds since 0000-12-31T00:00Z in 20 digits. A time at year 1 or 9999 with an offset has one,
    though no ``datetime`` holds it in UTC."""
    offset = moment.utcoffset() or timedelta(0)
    since = moment.replace(tzinfo=None) - datetime.min - offset + timedelta(days=1)
    return f"{since // timedelta(microseconds=1):020d}"


def article_id(url: str) -> str:
    """The stable document id of ``url``: the first 16 hex digits of its sha1."""
    return hashlib.sha1(url.encode("utf-8")).hexdigest()[:16]


def content_hash(body: str | None) -> str | None:
    """sha1 (hex) of ``body``'s normalised text (case, punctuation and white space ignored); None
    without a body or when nothing is left."""
    normalised = fingerprint.normalise(body) if body else ""
    return _sha1(normalised) if normalised else None


def fingerprints(body: str | None) -> tuple[str | None, str | None]:
    """``body``'s content hash (:func:`content_hash`) and SimHash (hex, None when the body is too short
    for one), its text normalised once for both."""
    normalised = fingerprint.normalise(body) if body else ""
    if not normalised:
        return None, None
    shingled = fingerprint.simhash(normalised, normalised=True)
    return _sha1(normalised), None if shingled is None else fingerprint.to_hex(shingled)


def _sha1(normalised: str) -> str:
    return hashlib.sha1(normalised.encode("utf-8")).hexdigest()


def check_article(article: Mapping[str, Any]) -> None:
    """StoreError, naming the article and the field, if :func:`make_document` would refuse ``article``
    (the fingerprints, the costly part, are not computed)."""
    make_document(article, fingerprints=False)


def make_document(article: Mapping[str, Any], *, fingerprints: bool = True) -> dict[str, Any]:
    """The stored document for ``article`` (an item of the pipeline, or a document read from a store).

    The URL's fragment (``#...``, a place in the same page) is dropped. Keys starting with ``_`` are left
    out; ``id``, ``week``, ``content_hash`` and ``simhash`` are computed (the last two only with
    ``fingerprints``); a ``first_seen`` or ``reposts`` given is kept (a document copied from another
    store), else ``first_seen`` is ``fetched_at``. The URLs of ``redirected_from`` lose their fragments
    too, each kept once, the article's own URL left out. StoreError names the article and the field when a
    field is missing, unknown or of the wrong type.
    """
    given = article.get("url")
    url = urldefrag(given).url if isinstance(given, str) else given
    if not isinstance(url, str) or not url.strip():
        before = " before its fragment" if isinstance(given, str) else ""
        raise StoreError(
            f"article {_describe(article)}: field 'url' is {given!r}: expected a non-empty string{before}"
        )
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
    redirected_from = _redirects(url, article.get("redirected_from"))
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
    document = {
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
        "content_hash": None,
        "simhash": None,
        "summary": None if summary is None else {str(k): v for k, v in summary.items()},
        "reposts": [dict(r) for r in reposts],
        "job": article.get("job"),
        "redirected_from": redirected_from,
    }
    return add_fingerprints(document) if fingerprints else document


def _redirects(url: str, given: object) -> list[str]:
    """The URLs of an article's ``redirected_from`` as stored: without fragments, each once, in order, its
    own ``url`` left out; StoreError unless ``given`` is None or a list of non-empty strings."""
    if given is None:
        return []
    if (
        isinstance(given, str | bytes)
        or not isinstance(given, Sequence)
        or not all(isinstance(u, str) and u.strip() for u in given)
    ):
        raise StoreError(
            f"article {url}: field 'redirected_from' is {given!r}: expected a list of the URLs that"
            " redirected to it (non-empty strings), or None"
        )
    return merged_redirects([], (urldefrag(u).url for u in given), url)


def merged_redirects(stored: Sequence[str], new: Iterable[str], url: str) -> list[str]:
    """``stored`` URLs that redirected to ``url``, then those of ``new`` not among them, each once (``url``
    itself left out): what a document's ``redirected_from`` becomes when its URL is fetched again."""
    merged = list(stored)
    for redirect in new:
        if redirect != url and redirect not in merged:
            merged.append(redirect)
    return merged


def add_fingerprints(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (from :func:`make_document`) with its body's ``content_hash`` and ``simhash`` (the
    costly part, which the crawl computes off the reactor's thread)."""
    document["content_hash"], document["simhash"] = fingerprints(document.get("body"))
    return document


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


def repost_record(
    document: Mapping[str, Any],
    match: str,
    distance: int | None,
    share: float = 1.0,
    partial_of: str | None = None,
) -> dict[str, Any]:
    """The entry a repost leaves in its original's ``reposts``: how it matched (``exact``, ``near``,
    ``partial``), the SimHash distance, the share of the shorter body's distinctive phrases in the longer,
    for a partial match the URL of the whole (``partial_of``: the original's, or the repost's when the
    original is a part of it), and the URLs that redirected to the repost's when there were some
    (``redirected_from``)."""
    record = {
        "url": document["url"],
        "site": document["site"],
        "fetched_at": document["fetched_at"],
        "match": match,
        "distance": distance,
        "share": round(share, 3),
    }
    if partial_of is not None:
        record["partial_of"] = partial_of
    if document.get("redirected_from"):
        record["redirected_from"] = list(document["redirected_from"])
    return record
