"""The store interface and the logic the backends share: duplicate-article detection and the search
predicate (the document itself is :mod:`crawler.store.document`).

Duplicate articles: a new URL whose body has the ``content_hash`` of a document first seen within
``DedupPolicy.window`` of it (exact); or whose body is that document's, but for edits, or a part of it, or
holds it whole (near or partial, :meth:`Store.find_original`, on the bodies' distinctive phrases:
:class:`crawler.store.fingerprint.Phrases`), is not stored: it is recorded in that document's ``reposts``.
Candidates for the near or partial match share a SimHash band key
(:func:`crawler.store.fingerprint.band_keys`) or an anchor (the smallest phrase hashes) with the body.
"""

from __future__ import annotations

import errno
import re
import sqlite3
import sys
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self
from urllib.parse import urldefrag

from crawler import settings as defaults
from crawler.bounds import setting_in_range
from crawler.errors import StoreError, StoreSettingError
from crawler.store import fingerprint
from crawler.store.document import (
    format_timestamp,
    make_document,
    merged_redirects,
    parse_timestamp,
    parse_week,
    published_prefix_range,
    published_utc,
    week_bounds,
    weeks_between,
)
from extractors.text import CJK_RE, NON_CJK_WORD_CHAR_RE

if TYPE_CHECKING:
    from bson.errors import InvalidDocument
    from pymongo.errors import PyMongoError

__all__ = [
    "DUPLICATE_KEY",
    "Candidate",
    "DedupPolicy",
    "Original",
    "PublishedWindow",
    "Store",
    "StoreError",
    "Written",
    "check_limit",
    "fold",
    "lasting_failure",
    "limited",
    "locked_failure",
    "matches",
    "refused_for_itself",
    "search_terms",
]

_QUOTED_RE = re.compile(r'"([^"]*)"|(\S+)')
# A word as the search indexes split the text: letters and digits of any script; anything else separates.
_WORD_RE = re.compile(r"[^\W_]+")
# What may not touch a Latin search term, before or after it: a letter or digit of a script other than CJK.
_JOINS = NON_CJK_WORD_CHAR_RE.pattern
# The combining marks search drops once letters are decomposed: the accents of Latin (Greek, Cyrillic)
# letters, which the search indexes fold too. Marks that are part of other scripts' letters stay (the kana
# voicing marks: が is not か).
_ACCENTS_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
# Candidates found by their anchors alone whose bodies are read, at most: those sharing the most anchors
# (a part of 30% shares about 5 of 16 with its whole; others share a name or a quote, if anything).
ANCHORED_CANDIDATES = 8
# An anchor held by more stored documents than this (of a week's file) is a common phrase, no evidence of
# a repost, and is not looked up: "on the other", "in terms of" are anchors of 73 and 41 of the 762 real
# articles of the extraction corpora (/work/shared/extraction-*/truth), and such an anchor is one of
# hundreds of documents in a week of news, each of them read before this. A repost is not stored, so an
# article's own anchor is held by one document, or a few when it was stored more than once.
COMMON_ANCHOR_DOCUMENTS = 16

Outcome = Literal["new", "updated", "unchanged", "repost", "spooled"]


@dataclass(frozen=True)
class Written:
    """What storing one article did: ``new`` (a document made), ``updated`` (its URL's document
    replaced), ``unchanged`` (an older fetch than the stored one), ``repost`` (recorded against
    ``original``; ``recorded_before`` when an earlier write had recorded it, as for a re-fetch, and
    nothing changed), or ``spooled`` (kept on local disk until the backend is reachable again).
    ``same_job``: the document ``updated`` or left ``unchanged`` was stored by the article's own crawl job
    (a write repeated because its request's acknowledgement was lost), not before it. ``week``: the week
    whose SQLite file took the write (its write lock was free), None for MongoDB; not compared."""

    outcome: Outcome
    url: str
    original: str | None = None
    recorded_before: bool = False
    same_job: bool = False
    # The fields a feed's entry noted for its URL gave the document it lacked (crawler/redisio/entries.py).
    filled: tuple[str, ...] = ()
    week: str | None = field(default=None, compare=False)

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
            raise StoreSettingError(f"DEDUP_WINDOW_DAYS is {self.window.days}: expected 0 or more days")
        if not 0 <= self.max_distance <= 64:
            raise StoreSettingError(
                f"DEDUP_MAX_DISTANCE is {self.max_distance!r}: expected a bit count from 0 to 64"
            )


@dataclass(frozen=True)
class PublishedWindow:
    """``published_since <= published < published_until`` of :meth:`Store.iter_articles`: its bounds as
    :func:`crawler.store.document.published_utc` text (``lower``, ``upper``), and the text range
    (``start``, ``end``: :func:`crawler.store.document.published_prefix_range`) of the stored values that
    may be in it, which the index on site and published finds for a site; :meth:`holds` decides."""

    lower: str | None
    upper: str | None
    start: str | None
    end: str | None

    @classmethod
    def of(cls, since: datetime | None, until: datetime | None) -> PublishedWindow | None:
        """The window of these bounds; None when neither is given."""
        if since is None and until is None:
            return None
        lower = None if since is None else parse_timestamp(since, "published_since")
        upper = None if until is None else parse_timestamp(until, "published_until")
        return cls(
            None if lower is None else format_timestamp(lower),
            None if upper is None else format_timestamp(upper),
            *published_prefix_range(lower, upper),
        )

    def holds(self, published: object) -> bool:
        """Whether a stored ``published`` value is a date (and time) in the window."""
        moment = published_utc(published)
        return (
            moment is not None
            and (self.lower is None or moment >= self.lower)
            and (self.upper is None or moment < self.upper)
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
    # Its anchors the backend read (or those among the new body's probes); find_original ranks it by those
    # among the probes, the backend having left out the common ones (COMMON_ANCHOR_DOCUMENTS).
    anchors: frozenset[int] = frozenset()
    # Its body, when the backend read it with the rest (else find_original asks for it).
    body: str | None = None


@dataclass(frozen=True)
class Original:
    """The stored document a new body duplicates, and how: ``exact``, ``near`` (the same article but for
    edits) or ``partial`` (one body a part of the other: ``partial_of`` is the URL of the whole, the
    original's or the new one's); the SimHash distance (None when a body has no SimHash), and the share of
    the shorter body's distinctive phrases found in the longer."""

    candidate: Candidate
    match: Literal["exact", "near", "partial"]
    distance: int | None
    share: float = 1.0
    partial_of: str | None = None


def checked_batch_size(batch_size: int) -> int:
    """``batch_size``, a store's ``STORE_BATCH_SIZE``; :class:`StoreSettingError` in the words of every
    setting's check (:func:`crawler.bounds.setting_in_range`) when it is out of the range crawler/settings.py
    declares."""
    setting_in_range({"STORE_BATCH_SIZE": batch_size}, "STORE_BATCH_SIZE", defaults, error=StoreSettingError)
    return batch_size


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
    """The terms of a search: words, or phrases in double quotes, read as the search indexes read the text
    (:func:`index_words`): lower-cased, punctuation around a word dropped (``-light`` is ``light``), a word
    joined by punctuation the phrase of its parts (``light-show`` is ``light show``, ``U.S.`` is ``u s``),
    empty ones dropped. StoreError when no term has a letter or digit (``query`` is empty, white space or
    punctuation alone): there is nothing to look for."""
    terms = [index_words((quoted or word).lower()) for quoted, word in _QUOTED_RE.findall(query)]
    if not any(terms):
        raise StoreError(
            f"search text {query!r} has no words: a search needs a word (letters or digits, or Chinese"
            ' characters) or "a phrase" to look for'
        )
    return [term for term in terms if term]


def index_words(text: str) -> str:
    """``text``'s words (runs of letters and digits) joined by one space: what SQLite's ``unicode61`` and
    MongoDB's text index read of it, every other character a separator."""
    return " ".join(_WORD_RE.findall(text))


def fold(text: str) -> str:
    """``text`` as search compares it, the way the search indexes read it (SQLite's ``unicode61
    remove_diacritics 2``, MongoDB's text index): compatibility forms decomposed (NFKD), accents dropped,
    case folded, composed again (NFC). ``Café``, ``CAFE`` and ``café`` are all ``cafe``."""
    if text.isascii():
        return text.lower()
    bare = _ACCENTS_RE.sub("", unicodedata.normalize("NFKD", text.casefold()))
    return unicodedata.normalize("NFC", bare)


def matches(document: Mapping[str, Any], terms: Sequence[str]) -> bool:
    """Whether every term is in the document's title or body, both :func:`fold`-ed (case and accents
    ignored) and read as their words (:func:`index_words`: ``light-show`` holds the phrase ``light show``
    and the word ``light``): CJK terms anywhere, other terms as whole words (not inside a longer word: no
    letter or digit of a script other than CJK just before or after them, so ``2027`` is a word of
    ``到2027年`` and ``cat`` none of ``category``). Both backends filter their index's hits with this, so a
    search gives the same documents everywhere."""
    text = " ".join(index_words(fold(str(document.get(name) or ""))) for name in ("title", "body"))
    for term in (index_words(fold(term)) for term in terms):
        if CJK_RE.search(term):
            if term not in text:
                return False
        elif re.search(rf"(?<!{_JOINS}){re.escape(term)}(?!{_JOINS})", text) is None:
            return False
    return True


class Store(ABC):
    """Where articles are kept: one store per ISO week of the first fetch, the URL unique in each.

    Writes are committed (or spooled to local disk) before they return: a request is acknowledged only
    once its item is stored. Reads see every week unless given one; documents are plain dicts with the
    fields of ``DOCUMENT_FIELDS``.
    """

    dedup: DedupPolicy
    # Whether a write that cannot reach the backend keeps its documents on local disk (``spooled``) rather
    # than failing: a slow write of such a store ends with its documents stored or spooled, never deferred
    # (MongoDB's spool, crawler.store.mongo). SQLite's writes wait for a locked file and then fail.
    spools = False

    def upsert_many(self, articles: Iterable[Mapping[str, Any]]) -> list[Written]:
        """Store ``articles`` (all validated before any is written) in batches, in order; one
        :class:`Written` per article."""
        return self.write([make_document(article) for article in articles])

    @abstractmethod
    def write(self, documents: Sequence[dict[str, Any]]) -> list[Written]:
        """Store ``documents`` (made by :func:`crawler.store.document.make_document`, fingerprints
        included) in batches, in order; one :class:`Written` per document."""

    def upsert(self, article: Mapping[str, Any]) -> Written:
        """Store one article, committed before returning."""
        return self.upsert_many([article])[0]

    def add_redirects(self, url: str, redirects: Sequence[str]) -> bool:
        """Add ``redirects``, URLs that redirected to ``url`` (the one asked for first), to the
        ``redirected_from`` of ``url``'s document (the newest week's), as a fetch through them would:
        fragments dropped, each once, after those it has. A URL that is no document's but one's
        ``redirected_from`` (a short link to a stored article) adds them to that document. False when no
        document has that URL either way."""
        url = urldefrag(url).url
        if self._add_redirects(url, merged_redirects([], (urldefrag(u).url for u in redirects), url)):
            return True
        target = self.redirected_to(url)
        if target is None:
            return False
        found = target["url"]
        return self._add_redirects(found, merged_redirects([], (urldefrag(u).url for u in redirects), found))

    @abstractmethod
    def _add_redirects(self, url: str, redirects: list[str]) -> bool:
        """:meth:`add_redirects` of URLs made as stored (no fragment, each once, ``url`` left out)."""

    @abstractmethod
    def fill_empty(self, url: str, values: Mapping[str, str]) -> tuple[str, ...] | None:
        """Give ``url``'s document (the newest week's) those of ``values`` (a feed entry's title,
        published, author) whose field it has none of; a stored value is never replaced. The names of the
        fields it filled (of title, published, author, in that order); None when no document has that URL."""

    @abstractmethod
    def get(self, url_or_id: str) -> dict[str, Any] | None:
        """The document of this URL or id (the newest week's when several weeks hold it), or None."""

    @abstractmethod
    def original_of(self, url: str) -> dict[str, Any] | None:
        """The document that records ``url`` among its reposts (a repost's URL, or one that redirected to
        it), or None."""

    @abstractmethod
    def redirected_to(self, url: str) -> dict[str, Any] | None:
        """The document ``url`` redirected to when it was fetched (``url`` among its ``redirected_from``;
        when several hold it, the newest week's, and of that week's the one fetched last), or None."""

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
        *,
        published_since: datetime | None = None,
        published_until: datetime | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Documents in ``first_seen`` order (latest stored first unless told otherwise), filtered by site,
        week, ``since <= first_seen < until`` and ``published_since <= published < published_until`` (the
        instant :func:`crawler.store.document.published_utc` reads; a document whose ``published`` is no
        date is left out when either is given), at most ``limit`` of them."""

    @abstractmethod
    def search(
        self,
        query: str,
        *,
        site: str | None = None,
        week: str | None = None,
        limit: int | None = 20,
        since: datetime | None = None,
        until: datetime | None = None,
        published_since: datetime | None = None,
        published_until: datetime | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Documents matching every term of ``query`` (:func:`search_terms`, :func:`matches`), latest stored
        (``first_seen``) first, at most ``limit``, filtered by site, week, and the first-seen and published
        windows as :meth:`iter_articles` filters them."""

    @abstractmethod
    def stats(self, week: str | None = None) -> list[dict[str, Any]]:
        """Per week and site, oldest week first: ``{"week", "site", "articles", "reposts", "qread"}``
        (documents, reposts recorded against them, bodies that came from qRead); ``week``: that week's
        alone."""

    @abstractmethod
    def weeks(self) -> list[str]:
        """Names of the weeks that have a store, oldest first."""

    @abstractmethod
    def delete_site(self, site: str) -> int:
        """Delete every article of ``site``, of every week (``crawler sites forget --articles``); how many.
        Their search entries, SimHash bands and anchors go with them; reposts of them recorded in other
        sites' articles stay, and so do the paragraph counts (boilerplate found) they added."""

    def weeks_left_out(self) -> dict[str, StoreError]:
        """The weeks reads across weeks left out so far, each with the error that says why and what to
        do: weeks whose files cannot be read, in a store opened to skip them (``SqliteStore``'s
        ``skip_damaged``); none in a store that fails on them instead."""
        return {}

    def weeks_made_anew(self) -> int:
        """How many weeks' files this store found emptied (0 bytes: what they held lost) and made anew as
        it wrote into them, each said as it was found (``SqliteStore``); none in a store with no files."""
        return 0

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
        counts: Callable[[list[int]], Mapping[int, int]] | None = None,
        phrases: fingerprint.Phrases | None = None,
    ) -> Original | None:
        """The stored document ``document`` duplicates among ``candidates`` (which the backend read by
        content hash, band keys and anchors), and how; ``counts`` gives the stored documents each
        paragraph hash occurs in (:func:`crawler.store.fingerprint.paragraph_hashes`: boilerplate when
        common), ``phrases`` are the new body's (boilerplate left out) when the backend made them already.

        1. Candidates outside the window, or of the same URL, are left out.
        2. The same content hash is an exact match: the earliest such document wins at once.
        3. Otherwise the candidates whose SimHash is at most ``max_distance`` bits away, closest (then
           earliest) first, then those sharing anchors with the body (most shared first, at most
           ``ANCHORED_CANDIDATES``), are confirmed by their bodies' distinctive phrases
           (:func:`crawler.store.fingerprint.same_or_part`): the first confirmed one wins. Two texts whose
           SimHashes collide by chance, or that share only boilerplate, never pass.
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
            return Original(min(exact, key=lambda c: (c.first_seen, c.url)), "exact", 0)
        if own is None:
            return None
        # 3.
        unique = {c.url: c for c in eligible}.values()
        distances = {
            c.url: fingerprint.hamming(own, fingerprint.from_hex(c.simhash)) if c.simhash else None
            for c in unique
        }
        near = sorted(
            (distance, c.first_seen, c.url, c)
            for c in unique
            if (distance := distances[c.url]) is not None and distance <= self.dedup.max_distance
        )
        if phrases is None:
            phrases = fingerprint.Phrases.of(document["body"], counts and fingerprint.common_of(counts))
        probes = set(phrases.anchors(fingerprint.ANCHOR_PROBES))
        near_urls = {url for _, _, url, _ in near}
        anchored = sorted(
            (-hits, c.first_seen, c.url, c)
            for c in unique
            if c.url not in near_urls and (hits := len(c.anchors & probes))
        )[:ANCHORED_CANDIDATES]
        checked = [candidate for _, _, _, candidate in near + anchored]
        if counts is not None:  # every paragraph count the decisions need, in one read
            counts([h for c in checked if c.body for h in fingerprint.paragraph_hashes(c.body)])
        for candidate in checked:
            body = candidate.body if candidate.body is not None else body_of(candidate)
            if body is None:
                continue
            # The pair's boilerplate: paragraphs common besides the candidate's own copy of them.
            pair = counts and fingerprint.common_of(counts, set(fingerprint.paragraph_hashes(body)))
            theirs = fingerprint.Phrases.of(body, pair)
            mine = fingerprint.Phrases.of(document["body"], pair)
            same, share, ratio = fingerprint.same_or_part(mine, theirs)
            if not same:
                continue
            distance = distances[candidate.url]
            if ratio >= fingerprint.PART_RATIO:
                return Original(candidate, "near", distance, share)
            whole = document["url"] if len(mine.shingles) > len(theirs.shingles) else candidate.url
            return Original(candidate, "partial", distance, share, whole)
        return None

    def dedup_range(self, document: Mapping[str, Any]) -> tuple[str, str]:
        """``first_seen`` bounds (text, inclusive) of the documents ``document`` is compared with."""
        first_seen = parse_timestamp(document["first_seen"], "first_seen")
        return (
            format_timestamp(first_seen - self.dedup.window),
            format_timestamp(first_seen + self.dedup.window),
        )

    def dedup_weeks(self, document: Mapping[str, Any]) -> list[str]:
        """The weeks that may hold a document ``document`` is compared with (those of :meth:`dedup_range`)."""
        first_seen = parse_timestamp(document["first_seen"], "first_seen")
        return weeks_between(first_seen - self.dedup.window, first_seen + self.dedup.window)


# SQLite's primary result codes that no wait mends: a damaged file, and one that cannot be opened or
# written (no permission, immutable, a read-only disk). A locked file (SQLITE_BUSY) and a full or failing
# disk (SQLITE_FULL, SQLITE_IOERR) may mend.
_LASTING_SQLITE_CODES = frozenset(
    {
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_AUTH,
    }
)
# The same for the file system: no permission, a read-only disk, a file where a folder goes. A full disk
# (ENOSPC, EDQUOT), a file past its size limit (EFBIG) or a network error may mend.
_LASTING_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.EISDIR}
)

# MongoDB's error codes that no wait mends: no permission (Unauthorized), a login refused
# (AuthenticationFailed), a database or collection name it refuses (InvalidNamespace, DatabaseDifferCase:
# a database of that name in another case), a document too large (BSONObjectTooLarge) or refused by the
# collection's validator (DocumentValidationFailure). A server away, stepping down or shutting down, or a
# write concern that timed out, may mend.
_LASTING_MONGO_CODES = frozenset({13, 18, 73, 121, 10334, 13297})
# Those of them that refuse the document itself, not the store: too large (BSONObjectTooLarge), refused by
# the collection's validator (DocumentValidationFailure). The store writes other documents meanwhile.
_OWN_MONGO_CODES = frozenset({121, 10334})
# MongoDB's refusal of a document whose URL is stored already: no failure (the stores read it so).
DUPLICATE_KEY = 11000


def lasting_failure(error: BaseException) -> bool:
    """Whether ``error``, why a store could not write, is one that no wait mends (its first SQLite, file
    system or MongoDB error along its causes says: a damaged week's file, no permission, a read-only disk,
    a file in the way of a folder; MongoDB refusing the login or the write for want of a role, a database
    name it refuses, a document too large), so that trying again later is no use; False for any other (a
    locked file, a full disk, a server away)."""
    for cause in _causes(error):
        if isinstance(cause, sqlite3.Error):
            return sqlite_code(cause) in _LASTING_SQLITE_CODES
        if isinstance(cause, OSError):
            return cause.errno in _LASTING_ERRNOS
        mongo = _mongo_error(cause)
        if mongo is not None:
            return _lasting_mongo(mongo)
    return False


def refused_for_itself(error: BaseException) -> bool:
    """Whether ``error``, why a store could not write a document, is a refusal of that document for its
    own sake (its first MongoDB error along its causes says: a document too large, or refused by the
    collection's validator, on the server or by pymongo), not a failure of the store, which writes other
    documents meanwhile; False for any other, and for every SQLite or file system error (a week's file,
    which all of that week's documents share)."""
    mongo = next((found for cause in _causes(error) if (found := _mongo_error(cause)) is not None), None)
    if mongo is None:
        return False
    from bson.errors import InvalidDocument  # noqa: PLC0415 - imported already, by the MongoDB store
    from pymongo.errors import BulkWriteError, OperationFailure  # noqa: PLC0415 - likewise

    if isinstance(mongo, BulkWriteError):
        refused = {entry.get("code") for entry in mongo.details.get("writeErrors", [])} - {DUPLICATE_KEY}
        return bool(refused) and refused <= _OWN_MONGO_CODES and not mongo.details.get("writeConcernErrors")
    if isinstance(mongo, OperationFailure):
        return mongo.code in _OWN_MONGO_CODES
    return isinstance(mongo, InvalidDocument)


def locked_failure(error: BaseException) -> bool:
    """Whether ``error``, why a store could not write, is SQLite's "database is locked" (its first SQLite
    error along its causes is SQLITE_BUSY): another process holds the write lock of a week's file (another
    worker's write, a worker stopped inside one, a sqlite3 shell's transaction); it ends when that process
    commits, rolls back or dies, so that waiting for it uses up no try of the article's."""
    first = next((cause for cause in _causes(error) if isinstance(cause, sqlite3.Error)), None)
    return first is not None and sqlite_code(first) == sqlite3.SQLITE_BUSY


def sqlite_code(error: sqlite3.Error) -> int | None:
    """The primary result code of ``error`` (SQLITE_BUSY, SQLITE_FULL, ...: the low byte of its extended
    code, SQLITE_IOERR of SQLITE_IOERR_SHMOPEN); None when SQLite gave it none."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what it was raised from (``__cause__``), and so on."""
    cause: BaseException | None = error
    while cause is not None:
        yield cause
        cause = cause.__cause__


def _mongo_error(error: BaseException) -> PyMongoError | InvalidDocument | None:
    """``error`` when it is pymongo's (or bson's), else None. Neither is imported for it: no such error
    exists before they are, and a store without MongoDB never imports them (pymongo is slow to import)."""
    if "pymongo.errors" not in sys.modules and "bson.errors" not in sys.modules:
        return None
    from bson.errors import InvalidDocument  # noqa: PLC0415 - imported already, by the MongoDB store
    from pymongo.errors import PyMongoError  # noqa: PLC0415 - imported already, by the MongoDB store

    return error if isinstance(error, PyMongoError | InvalidDocument) else None


def _lasting_mongo(error: PyMongoError | InvalidDocument) -> bool:
    """:func:`lasting_failure` of a pymongo error: a refusal whose code no wait mends (every refusal of a
    bulk write's but duplicate keys, and no write concern error), a name pymongo refuses, a document it
    cannot send."""
    from bson.errors import InvalidDocument  # noqa: PLC0415 - imported already, by the MongoDB store
    from pymongo.errors import (  # noqa: PLC0415 - imported already, by the MongoDB store
        BulkWriteError,
        ConnectionFailure,
        InvalidName,
        OperationFailure,
    )

    if isinstance(error, ConnectionFailure):
        return False
    if isinstance(error, BulkWriteError):
        refused = {entry.get("code") for entry in error.details.get("writeErrors", [])} - {DUPLICATE_KEY}
        return (
            bool(refused) and refused <= _LASTING_MONGO_CODES and not error.details.get("writeConcernErrors")
        )
    if isinstance(error, OperationFailure):
        return error.code in _LASTING_MONGO_CODES
    return isinstance(error, InvalidName | InvalidDocument)
