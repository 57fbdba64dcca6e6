"""The MongoDB store: one database per ISO week, ``<prefix>_2026w47``, collection ``articles``.

A week's indexes are created when this process first uses the week: the URL (unique), ``(site,
published)``, ``content_hash``, ``simhash_bands`` (the SimHash's band keys, a field kept for the
near-duplicate lookup and never returned), ``anchors`` (the body's smallest phrase hashes, likewise, for
the lookup of the documents a body is a part of or holds), ``(first_seen, _id)``, ``(site, first_seen,
_id)``, ``reposts.url``, ``redirected_from``, ``reposts.redirected_from``, and a text index on title and
body (``default_language: none``: no stemming, no stop words, any language split on white space and
punctuation). ``_id`` is the document's ``id``. The week's ``paragraphs`` collection counts the stored
documents each paragraph occurs in (``_id``: its hash, ``urls``: the first few of them; boilerplate when
common: :class:`crawler.store.fingerprint.Phrases`). A batch counts its new documents' paragraphs before
it writes them, by URL: a batch written again after a failure (a retry, the spool's replay) neither
counts a document twice nor leaves one uncounted, and its own URLs are left out of the counts it reads. A
batch decides as its documents written one by one.

Writes: each batch is read once per week for the URLs it holds and the duplicate candidates, then written
with one unordered ``bulk_write`` per week, under the configured write concern. A document is an upsert
filtered on its URL and on ``fetched_at`` not being newer than its own, so a retried item never makes a
second document and a late retry changes nothing (its upsert meets the unique URL: ``unchanged``).

When the server cannot be reached (``ConnectionFailure``: no server, network errors, no primary), the
batch goes to the local spool (:mod:`crawler.store.spool`) under ``CRAWLER_DATA_DIR/spool``; while the
spool holds documents, later batches join it (order is kept), and every ``retry_seconds`` the spool is
replayed in order through the same write path. Orphan spools of crashed workers are replayed too. Any
other error is a ``StoreError`` (pymongo's error its cause): one no wait mends (the login or the write
refused for want of a role, a name refused, a document too large) is a lasting failure
(:func:`crawler.store.base.lasting_failure`), dead-lettered at once; the others are tried again later.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from bson.errors import InvalidDocument
from pymongo import ASCENDING, DESCENDING, TEXT, IndexModel, MongoClient, UpdateOne
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError, ConnectionFailure, PyMongoError
from pymongo.uri_parser import split_hosts
from pymongo.write_concern import WriteConcern

from crawler.commandline import counted, suggest
from crawler.errors import StoreError, StoreSettingError, redacted
from crawler.store import fingerprint
from crawler.store.base import (
    COMMON_ANCHOR_DOCUMENTS,
    DUPLICATE_KEY,
    Candidate,
    DedupPolicy,
    PublishedWindow,
    Store,
    Written,
    check_limit,
    checked_batch_size,
    limited,
    matches,
    search_terms,
)
from crawler.store.document import (
    DOCUMENT_FIELDS,
    KEPT_WHEN_NONE,
    UPDATED_FIELDS,
    format_timestamp,
    neighbour_weeks,
    parse_week,
    repost_record,
)
from crawler.store.spool import Spool
from extractors.text import CJK_RE

__all__ = ["MongoConfig", "MongoStore", "check_prefix", "check_uri", "parse_write_concern"]

logger = logging.getLogger(__name__)

# Seconds between two lines that MongoDB is still unreachable: the spool's replay is tried every
# retry_seconds (10 s), which said the same line 360 times an hour; once a minute, as a worker reminds that
# Redis is still down.
REMINDER_SECONDS = 60.0

# Documents per cursor batch when reading: a few MB of articles at most in memory.
_READ_BATCH = 500
# The URLs a paragraph keeps: enough to tell it common (fingerprint.COMMON_DOCUMENTS besides the document
# compared with) once the URLs of the batch being written, counted by a write cut short, are left out.
_PARAGRAPH_URLS = 8
_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_PREFIX_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")
# What pymongo adds to the reason a server could not be reached: the topology (hundreds of characters),
# and the timeouts, which the message of ``_unreachable`` gives once.
_TOPOLOGY_RE = re.compile(r", Timeout: [\d.]+s, Topology Description: .*$", re.DOTALL)
_TIMEOUTS_RE = re.compile(r" \(configured timeouts: [^)]*\)")
_HIDDEN = {"_id": 0, "simhash_bands": 0, "anchors": 0}
_CANDIDATE_FIELDS = {
    "_id": 0,
    "url": 1,
    "site": 1,
    "week": 1,
    "first_seen": 1,
    "content_hash": 1,
    "simhash": 1,
    "anchors": 1,
}
_INDEXES = [
    IndexModel([("url", ASCENDING)], unique=True, name="url"),
    IndexModel([("site", ASCENDING), ("published", ASCENDING)], name="site_published"),
    IndexModel([("content_hash", ASCENDING)], name="content_hash"),
    IndexModel([("simhash_bands", ASCENDING)], name="simhash_bands"),
    IndexModel([("anchors", ASCENDING)], name="anchors"),
    IndexModel([("first_seen", ASCENDING), ("_id", ASCENDING)], name="first_seen"),
    IndexModel([("site", ASCENDING), ("first_seen", ASCENDING), ("_id", ASCENDING)], name="site_first_seen"),
    IndexModel([("reposts.url", ASCENDING)], name="reposts_url"),
    IndexModel([("redirected_from", ASCENDING)], name="redirected_from"),
    IndexModel([("reposts.redirected_from", ASCENDING)], name="reposts_redirected_from"),
    IndexModel([("title", TEXT), ("body", TEXT)], name="text", default_language="none"),
]


def parse_write_concern(value: object) -> WriteConcern:
    """``MONGO_WRITE_CONCERN``: ``majority`` or a number of members (1 or more), acknowledged writes only."""
    text = str(value).strip()
    if text == "majority":
        return WriteConcern(w="majority")
    if text.isdigit() and int(text) >= 1:
        return WriteConcern(w=int(text))
    raise StoreSettingError(
        f"MONGO_WRITE_CONCERN is {value!r}: expected 'majority' or a number of members, 1 or more"
        " (unacknowledged writes would lose articles silently)"
    )


def check_uri(uri: str) -> None:
    """:class:`StoreSettingError` unless ``uri`` is a MongoDB URI the driver takes: parsed and its options
    checked, without connecting (and without the DNS lookup of a ``mongodb+srv://`` host)."""
    expected = f"MONGO_URI is {redacted(uri)!r}: expected mongodb://HOST[:PORT] or mongodb+srv://HOST"
    if not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise StoreSettingError(expected)
    try:
        MongoClient(uri, connect=False).close()
    except (PyMongoError, ValueError, TypeError) as exc:
        raise StoreSettingError(f"{expected} ({exc})") from exc


def check_prefix(prefix: str) -> str:
    """``prefix`` when it is a valid ``MONGO_DB_PREFIX``, else :class:`StoreSettingError`."""
    if not _PREFIX_RE.fullmatch(prefix):
        raise StoreSettingError(
            f"MONGO_DB_PREFIX is {prefix!r}: expected 1 to 40 letters, digits, '_' or '-'"
            " (database names are <prefix>_<YYYY>w<WW>)"
        )
    return prefix


def _shown_host(host: str, port: int | None) -> str:
    """A host of a MongoDB URI as the URI writes it: a socket path percent-encoded, an IPv6 address in
    brackets, the port after it."""
    if "/" in host:
        return quote(host, safe="")
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


@dataclass(frozen=True)
class MongoConfig:
    """The MongoDB store's settings, checked and not connected to (:func:`crawler.store.store_config`);
    :meth:`open` opens the store."""

    uri: str
    prefix: str
    write_concern: WriteConcern
    timeout_ms: int
    retry_seconds: float

    def __post_init__(self) -> None:
        check_uri(self.uri)
        check_prefix(self.prefix)

    def open(self, spool_dir: str | Path, *, batch_size: int, dedup: DedupPolicy) -> MongoStore:
        return MongoStore(
            self.uri,
            spool_dir=spool_dir,
            prefix=self.prefix,
            write_concern=self.write_concern,
            batch_size=batch_size,
            dedup=dedup,
            timeout_ms=self.timeout_ms,
            retry_seconds=self.retry_seconds,
        )

    def place(self) -> str:
        """Where this store keeps articles, the same for every URI that names the same servers, whatever
        the order of their hosts, the options, the database or the credentials in it: the scheme, the hosts
        with their ports, sorted, and the databases' prefix (``mongodb://db1:27017,db2:27017 (news_*)``)."""
        scheme, _, rest = self.uri.partition("://")
        authority = re.split(r"[/?]", rest, maxsplit=1)[0].rpartition("@")[2]
        default_port = None if scheme == "mongodb+srv" else 27017
        hosts = sorted(_shown_host(host, port) for host, port in split_hosts(authority, default_port))
        return f"{scheme}://{','.join(hosts)} ({self.prefix}_*)"

    def spooled(self, spool_dir: str | Path) -> str | None:
        """What waits in this store's spool files under ``spool_dir`` (how many articles, where), else
        None."""
        return _spool(spool_dir, self.prefix).waiting()


def _spool(spool_dir: str | Path, prefix: str) -> Spool:
    """The spool of the stores of ``prefix`` on the data folder ``spool_dir``: ``spool_dir/spool``."""
    return Spool(Path(spool_dir) / "spool", f"mongo_{prefix}")


def _filter(
    query: dict[str, Any],
    site: str | None,
    lower: datetime | None,
    upper: datetime | None,
    published: PublishedWindow | None,
) -> None:
    """Add to ``query`` the conditions of ``site``, ``lower <= first_seen < upper`` and the text range of
    the ``published`` values that may be in that window (the index on site and published finds them for a
    site); the caller compares the instants on what the query finds, so it counts the limit after them."""
    if site is not None:
        query["site"] = site
    bounds = {}
    if lower is not None:
        bounds["$gte"] = format_timestamp(lower)
    if upper is not None:
        bounds["$lt"] = format_timestamp(upper)
    if bounds:
        query["first_seen"] = bounds
    if published is not None:
        text = {key: bound for key, bound in (("$gte", published.start), ("$lt", published.end)) if bound}
        if text:
            query["published"] = text


class MongoStore(Store):
    """Articles in weekly MongoDB databases ``<prefix>_<YYYY>w<WW>``; see the module's docstring."""

    spools = True

    def __init__(
        self,
        uri: str,
        *,
        spool_dir: str | Path,
        prefix: str = "crawler",
        write_concern: WriteConcern | None = None,
        batch_size: int = 100,
        dedup: DedupPolicy | None = None,
        timeout_ms: int = 5000,
        retry_seconds: float = 10.0,
        client: MongoClient[dict[str, Any]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.prefix = check_prefix(prefix)
        self._where = redacted(uri)
        self._hosts = urlsplit(uri).netloc.rpartition("@")[2]
        self.timeout_ms = timeout_ms
        self.batch_size = checked_batch_size(batch_size)
        self.dedup = DedupPolicy() if dedup is None else dedup
        self.write_concern = write_concern or WriteConcern(w="majority")
        self.retry_seconds = retry_seconds
        self._clock = clock
        self._retry_at = 0.0
        self._orphans_at = 0.0
        # When it last said that MongoDB is unreachable, or still is (REMINDER_SECONDS).
        self._said_unreachable = -math.inf
        self._indexed: set[str] = set()
        self._week_re = re.compile(rf"^{re.escape(prefix)}_(\d{{4}}w\d{{2}})$")
        self._closed = False
        try:
            self.client: MongoClient[dict[str, Any]] = client or MongoClient(
                uri,
                serverSelectionTimeoutMS=timeout_ms,
                connectTimeoutMS=timeout_ms,
                socketTimeoutMS=max(timeout_ms * 6, 30_000),
                appname="focused-crawler",
            )
        except PyMongoError as exc:
            raise StoreError(f"MONGO_URI cannot be used: {exc}: expected mongodb://HOST[:PORT]/...") from exc
        self.spool = _spool(spool_dir, prefix)

    def __repr__(self) -> str:
        return f"MongoStore({self._where!r}, prefix={self.prefix!r})"

    def collection(self, week: str, *, create: bool = True) -> Collection[dict[str, Any]]:
        """The ``articles`` collection of the week's database, its indexes made on first use when
        ``create`` (reading a week that does not exist creates nothing)."""
        self._check_open()
        parse_week(week)
        collection = self.client[f"{self.prefix}_{week}"].get_collection(
            "articles", write_concern=self.write_concern
        )
        if create and week not in self._indexed:
            collection.create_indexes(_INDEXES)
            self._indexed.add(week)
        return collection

    # --- writing ----------------------------------------------------------------------------------------

    def write(self, documents: Sequence[dict[str, Any]]) -> list[Written]:
        self._check_open()
        if self.spool.pending or self._orphans_due():
            self._replay_if_due(force=not self.spool.pending)
        if self.spool.pending:
            self.spool.append(documents)
            return [Written("spooled", document["url"]) for document in documents]
        results: list[Written] = []
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            try:
                results.extend(self._write(batch))
            except ConnectionFailure as exc:
                rest = documents[start:]
                logger.warning(
                    "MongoDB is unreachable (%s): %s spooled to %s until it is back",
                    _reason(exc),
                    counted(len(rest), "article"),
                    self.spool.path,
                )
                self._said_unreachable = self._clock()
                self.spool.append(rest)
                self._retry_at = self._clock() + self.retry_seconds
                results.extend(Written("spooled", document["url"]) for document in rest)
                break
            except (PyMongoError, InvalidDocument) as exc:
                raise StoreError(
                    f"cannot write {counted(len(batch), 'article')} (first {batch[0]['url']}) to MongoDB:"
                    f" {exc}"
                ) from exc
        return results

    def _write(self, documents: Sequence[dict[str, Any]]) -> list[Written]:
        """Write one batch: read what its weeks hold, decide each document, one bulk write per week."""
        stored = self._stored(documents)
        unknown = [
            d
            for d in documents
            if not {(week, d["url"]) for week in (d["week"], *neighbour_weeks(d["week"]))} & stored.keys()
        ]
        bodied = [d for d in documents if d["body"]]
        paragraphs = {d["url"]: fingerprint.paragraph_hashes(d["body"]) for d in bodied}
        counts = self._paragraph_counts(bodied, paragraphs)

        def counter(document: Mapping[str, Any]) -> Callable[[list[int]], dict[int, int]]:
            """The paragraph counts of the weeks ``document`` is compared with, kept in step with the
            batch's new documents."""
            weeks = [counts.setdefault(week, {}) for week in self.dedup_weeks(document)]

            def counts_of(hashes: list[int]) -> dict[int, int]:
                return {h: sum(week.get(h, 0) for week in weeks) for h in hashes}

            return counts_of

        phrases = {
            d["url"]: fingerprint.Phrases.of(d["body"], fingerprint.common_of(counter(d)))
            for d in unknown
            if d["body"]
        }
        # The stored candidates are looked up once for the whole batch, with the phrases of its start. Each
        # document is then compared with those a lookup of its own would find (see _reachable), its phrases
        # made again when the batch counted some of its paragraphs meanwhile: as if written on its own.
        candidates = self._candidates(unknown, phrases)
        bands: dict[str, frozenset[int]] = {}
        operations: dict[str, list[UpdateOne]] = {}
        recounts: dict[str, list[UpdateOne]] = {}
        recounted: set[int] = set()
        planned: list[tuple[str, int, Written]] = []
        bodies: dict[str, str | None] = {}  # this batch's new documents: candidates not written yet
        for document in documents:
            url = document["url"]
            home = next(
                (week for week in neighbour_weeks(document["week"]) if (week, url) in stored),
                document["week"],
            )
            known = stored.get((home, url))
            same_job = known is not None and known[1] is not None and known[1] == document["job"]
            if known is not None and document["fetched_at"] < known[0]:
                planned.append(("", -1, Written("unchanged", url, same_job=same_job)))
                continue
            own = phrases.get(url)
            counted = counter(document)
            if own is not None and not recounted.isdisjoint(paragraphs.get(url, ())):
                own = fingerprint.Phrases.of(document["body"], fingerprint.common_of(counted))
            if known is None:
                found = self.find_original(
                    document,
                    _reachable(document, candidates, own, bands),
                    lambda c: bodies[c.url] if c.url in bodies else self._body(c),
                    counted,
                    own,
                )
                if found is not None:
                    candidate = found.candidate
                    record = repost_record(
                        document, found.match, found.distance, found.share, found.partial_of
                    )
                    ops = operations.setdefault(candidate.week, [])
                    ops.append(
                        UpdateOne(
                            {"url": candidate.url, "reposts.url": {"$ne": url}},
                            {"$push": {"reposts": record}},
                        )
                    )
                    planned.append((candidate.week, len(ops) - 1, Written("repost", url, candidate.url)))
                    continue
                bodies[url] = document["body"]
                candidates.append(
                    Candidate(
                        url,
                        document["site"],
                        home,
                        document["first_seen"],
                        document["content_hash"],
                        document["simhash"],
                        frozenset(own.anchors()) if own is not None else frozenset(),
                    )
                )
                counted_here = counts.setdefault(home, {})
                for paragraph in paragraphs.get(url, ()):
                    counted_here[paragraph] = counted_here.get(paragraph, 0) + 1
                    recounted.add(paragraph)
                    recounts.setdefault(home, []).append(_counted_in(paragraph, url))
            elif own is None and document["body"]:
                own = fingerprint.Phrases.of(document["body"], fingerprint.common_of(counted))
            ops = operations.setdefault(home, [])
            ops.append(_upsert(document, home, own.anchors() if own is not None else []))
            upsert = Written("updated" if known is not None else "new", url, same_job=same_job)
            planned.append((home, len(ops) - 1, upsert))
        self._recount(recounts)
        recorded = self._reposts_recorded([(week, written) for week, _, written in planned])
        upserted, refused = self._bulk(operations)
        return [
            _settled(written, (week, index), upserted, refused, recorded) for week, index, written in planned
        ]

    def _reposts_recorded(self, planned: Sequence[tuple[str, Written]]) -> set[tuple[str, str]]:
        """Of the reposts ``planned`` (each with its original's week), the ``(original, repost)`` URLs
        recorded already (by an earlier write: a re-fetch), read before the batch is written."""
        pairs: dict[str, set[tuple[str, str]]] = {}
        for week, written in planned:
            if written.outcome == "repost" and written.original is not None:
                pairs.setdefault(week, set()).add((written.original, written.url))
        recorded: set[tuple[str, str]] = set()
        for week, wanted in pairs.items():
            query = {
                "url": {"$in": sorted({original for original, _ in wanted})},
                "reposts.url": {"$in": sorted({repost for _, repost in wanted})},
            }
            for found in self.collection(week).find(query, {"_id": 0, "url": 1, "reposts.url": 1}):
                recorded.update(
                    pair
                    for record in found.get("reposts", ())
                    if (pair := (found["url"], record["url"])) in wanted
                )
        return recorded

    def _recount(self, recounts: Mapping[str, list[UpdateOne]]) -> None:
        """Add the batch's new documents to the counts of their paragraphs (see :func:`_counted_in`). A
        duplicate key is a document counted already: by this batch written before, or by another writer."""
        for week, ops in recounts.items():
            try:
                self._paragraphs(week).bulk_write(ops, ordered=False)
            except BulkWriteError as exc:
                self._duplicates(exc, "a paragraph count", week)

    def _paragraphs(self, week: str) -> Collection[dict[str, Any]]:
        """The week's ``paragraphs`` collection (``_id``: a paragraph's hash, ``urls``: the first
        ``_PARAGRAPH_URLS`` documents holding it; ``documents``: how many more, counted before ``urls``)."""
        return self.client[f"{self.prefix}_{week}"].get_collection(
            "paragraphs", write_concern=self.write_concern
        )

    def _paragraph_counts(
        self, documents: Sequence[Mapping[str, Any]], paragraphs: Mapping[str, list[int]]
    ) -> dict[str, dict[int, int]]:
        """For each week ``documents`` are compared with, in how many of its stored documents each of their
        ``paragraphs`` occurs, ``documents`` themselves left out (a write of them cut short counted them)."""
        hashes = sorted({h for hashes in paragraphs.values() for h in hashes})
        if not hashes or not self.dedup.enabled:
            return {}
        weeks = sorted({week for document in documents for week in self.dedup_weeks(document)})
        batch = {document["url"] for document in documents}
        return {
            week: {
                found["_id"]: int(found.get("documents", 0))
                + sum(url not in batch for url in found.get("urls", ()))
                for found in self._paragraphs(week).find({"_id": {"$in": hashes}})
            }
            for week in weeks
        }

    def _stored(
        self, documents: Sequence[Mapping[str, Any]]
    ) -> dict[tuple[str, str], tuple[str, str | None]]:
        """``(week, url) -> (fetched_at, job)`` of the batch's URLs held by their own week or a week beside
        it (:func:`~crawler.store.document.neighbour_weeks`)."""
        urls_by_week: dict[str, set[str]] = {}
        for document in documents:
            for week in (document["week"], *neighbour_weeks(document["week"])):
                urls_by_week.setdefault(week, set()).add(document["url"])
        stored = {}
        for week, urls in urls_by_week.items():
            query = {"url": {"$in": sorted(urls)}}
            for found in self.collection(week, create=False).find(
                query, {"_id": 0, "url": 1, "fetched_at": 1, "job": 1}
            ):
                stored[(week, found["url"])] = (found["fetched_at"], found.get("job"))
        return stored

    def _candidates(
        self, documents: Sequence[Mapping[str, Any]], phrases: Mapping[str, fingerprint.Phrases]
    ) -> list[Candidate]:
        """Stored documents within the duplicate window of ``documents`` that share a content hash, a
        SimHash band key or an anchor (among its ``ANCHOR_PROBES`` smallest phrase hashes: ``phrases``)
        with one of them."""
        if not self.dedup.enabled:
            return []
        hashes: set[str] = set()
        keys: set[int] = set()
        probes: set[int] = set()
        lowers, uppers, weeks = [], [], set()
        for document in documents:
            if document["content_hash"] is None:
                continue
            hashes.add(document["content_hash"])
            if document["simhash"] is not None:
                keys.update(fingerprint.band_keys(fingerprint.from_hex(document["simhash"])))
                if document["url"] in phrases:
                    probes.update(phrases[document["url"]].anchors(fingerprint.ANCHOR_PROBES))
            lower, upper = self.dedup_range(document)
            lowers.append(lower)
            uppers.append(upper)
            weeks.update(self.dedup_weeks(document))
        if not hashes:
            return []
        query = {
            "$or": [
                {"content_hash": {"$in": sorted(hashes)}},
                {"simhash_bands": {"$in": sorted(keys)}},
                {"anchors": {"$in": sorted(probes)}},
            ],
            "first_seen": {"$gte": min(lowers), "$lte": max(uppers)},
        }
        return [
            Candidate(
                row["url"],
                row["site"],
                row["week"],
                row["first_seen"],
                row.get("content_hash"),
                row.get("simhash"),
                frozenset(row.get("anchors") or ()),
            )
            for week in sorted(weeks)
            for row in self.collection(week, create=False).find(query, _CANDIDATE_FIELDS)
        ]

    def _body(self, candidate: Candidate) -> str | None:
        found = self.collection(candidate.week, create=False).find_one({"url": candidate.url}, {"body": 1})
        return None if found is None else found.get("body")

    def _bulk(
        self, operations: Mapping[str, list[UpdateOne]]
    ) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
        """Run each week's operations unordered; ``(week, index)`` of the upserts that inserted, and of
        those refused by the unique URL (a newer fetch stored meanwhile)."""
        upserted: set[tuple[str, int]] = set()
        refused: set[tuple[str, int]] = set()
        for week, ops in operations.items():
            try:
                result = self.collection(week).bulk_write(ops, ordered=False)
                upserted.update((week, index) for index in result.upserted_ids or {})
            except BulkWriteError as exc:
                upserted.update((week, entry["index"]) for entry in exc.details.get("upserted", []))
                refused.update((week, index) for index in self._duplicates(exc, "an article write", week))
        return upserted, refused

    def _duplicates(self, exc: BulkWriteError, what: str, week: str) -> list[int]:
        """The indexes of the operations of an unordered bulk write that met a duplicate key; any other
        refusal is a StoreError naming ``what`` was refused and the week's database, and so is a write the
        write concern did not confirm (the batch is tried again: an upsert written twice is the same)."""
        unconfirmed = exc.details.get("writeConcernErrors") or []
        if unconfirmed:
            raise StoreError(
                f"MongoDB did not confirm {what} in {self.prefix}_{week} under its write concern "
                f"({self.write_concern.document}): {unconfirmed[0].get('errmsg')}; the batch is tried again "
                "(check the replica set's members, or lower MONGO_WRITE_CONCERN)"
            ) from exc
        duplicates = []
        for error in exc.details.get("writeErrors", []):
            if error.get("code") != DUPLICATE_KEY:
                raise StoreError(
                    f"MongoDB refused {what} in {self.prefix}_{week}: {error.get('errmsg')}"
                ) from exc
            duplicates.append(error["index"])
        return duplicates

    # --- the spool --------------------------------------------------------------------------------------

    def _orphans_due(self) -> bool:
        """Whether spools of stopped workers wait (looked for every ``retry_seconds``)."""
        now = self._clock()
        if now < self._orphans_at:
            return False
        self._orphans_at = now + self.retry_seconds
        return bool(self.spool.orphans())

    def _replay_if_due(self, force: bool = False) -> None:
        """Replay this process's spool, then orphans, in order; stop at the first unreachable write."""
        if not force and self._clock() < self._retry_at:
            return
        self._retry_at = self._clock() + self.retry_seconds
        sources = [
            self.spool.replay(self.batch_size),
            *(self.spool.adopt(path, self.batch_size) for path in self.spool.orphans()),
        ]
        replayed = 0
        try:
            for batches in sources:
                for batch in batches:
                    self._write(batch)
                    replayed += len(batch)
        except ConnectionFailure as exc:
            if replayed or self._clock() - self._said_unreachable >= REMINDER_SECONDS:
                self._said_unreachable = self._clock()
                logger.info(
                    "MongoDB still unreachable (%s); %s written so far",
                    _reason(exc),
                    counted(replayed, "spooled article"),
                )
            return
        except PyMongoError as exc:
            raise StoreError(f"cannot replay the spool {self.spool.path} into MongoDB: {exc}") from exc
        if replayed:
            logger.info("MongoDB is back: %s written", counted(replayed, "spooled article"))

    def _add_redirects(self, url: str, redirects: list[str]) -> bool:
        for week in reversed(self.weeks()):
            try:
                found = self.collection(week).update_one(
                    {"url": url}, {"$addToSet": {"redirected_from": {"$each": redirects}}}
                )
            except ConnectionFailure as exc:
                raise self._unreachable(exc) from exc
            except PyMongoError as exc:
                raise StoreError(
                    f"cannot add the URLs that redirected to {url} in MongoDB ({self!r}): {exc}"
                ) from exc
            if found.matched_count:
                return True
        return False

    def fill_empty(self, url: str, values: Mapping[str, str]) -> tuple[str, ...] | None:
        names = [name for name in KEPT_WHEN_NONE if values.get(name)]
        for week in reversed(self.weeks()):
            try:
                found = self.collection(week).find_one({"url": url}, dict.fromkeys(KEPT_WHEN_NONE, 1))
                if found is None:
                    continue
                # Each field set only where it is still empty: a fetch storing one meanwhile keeps its own.
                filled = tuple(
                    name
                    for name in names
                    if not found.get(name)
                    and self.collection(week)
                    .update_one({"url": url, name: {"$in": [None, ""]}}, {"$set": {name: values[name]}})
                    .modified_count
                )
            except ConnectionFailure as exc:
                raise self._unreachable(exc) from exc
            except PyMongoError as exc:
                raise StoreError(
                    f"cannot fill the empty fields of {url} in MongoDB ({self!r}): {exc}"
                ) from exc
            return filled
        return None

    # --- reading ----------------------------------------------------------------------------------------

    def get(self, url_or_id: str) -> dict[str, Any] | None:
        query = {"_id": url_or_id} if _ID_RE.match(url_or_id) else {"url": url_or_id}
        return self._find_one(query)

    def original_of(self, url: str) -> dict[str, Any] | None:
        return self._find_one({"$or": [{"reposts.url": url}, {"reposts.redirected_from": url}]})

    def redirected_to(self, url: str) -> dict[str, Any] | None:
        return self._find_one({"redirected_from": url}, sort=[("fetched_at", DESCENDING)])

    def _find_one(
        self, query: Mapping[str, Any], sort: list[tuple[str, int]] | None = None
    ) -> dict[str, Any] | None:
        """The first document ``query`` finds (in ``sort`` order) in the newest week that has one."""
        for week in reversed(self.weeks()):
            with self._reading():
                found = self.collection(week).find_one(query, _HIDDEN, sort=sort)
            if found is not None:
                return _ordered(found)
        return None

    def count(self, site: str | None = None, week: str | None = None) -> int:
        query = {} if site is None else {"site": site}
        total = 0
        for name in self.weeks_asked(week):
            with self._reading():
                total += self.collection(name).count_documents(query)
        return total

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
        check_limit(limit)
        weeks, lower, upper = self.time_window(week, since, until)
        query: dict[str, Any] = {}
        published = PublishedWindow.of(published_since, published_until)
        _filter(query, site, lower, upper, published)
        if published is None:
            return self._iter(weeks, query, newest_first, limit)
        found = self._iter(weeks, query, newest_first, None)
        return limited((document for document in found if published.holds(document["published"])), limit)

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
        check_limit(limit)
        terms = search_terms(query)
        words = [word for term in terms if not CJK_RE.search(term) for word in term.split()]
        condition: dict[str, Any]
        if words:
            condition = {"$text": {"$search": f'"{max(words, key=len)}"'}}
        else:
            pattern = {"$regex": r"[\W_]+".join(map(re.escape, terms[0].split())), "$options": "i"}
            condition = {"$or": [{"title": pattern}, {"body": pattern}]}
        weeks, lower, upper = self.time_window(week, since, until)
        published = PublishedWindow.of(published_since, published_until)
        _filter(condition, site, lower, upper, published)
        hits = self._iter(weeks, condition, True, None)
        return limited(
            (
                document
                for document in hits
                if matches(document, terms) and (published is None or published.holds(document["published"]))
            ),
            limit,
        )

    def stats(self, week: str | None = None) -> list[dict[str, Any]]:
        pipeline: list[dict[str, Any]] = [
            {
                "$group": {
                    "_id": "$site",
                    "articles": {"$sum": 1},
                    "reposts": {"$sum": {"$size": {"$ifNull": ["$reposts", []]}}},
                    "qread": {"$sum": {"$cond": [{"$eq": ["$extraction.body_from", "qread"]}, 1, 0]}},
                }
            },
            {"$sort": {"_id": 1}},
        ]
        rows: list[dict[str, Any]] = []
        for name in self.weeks() if week is None else [week]:
            with self._reading():
                groups = list(self.collection(name).aggregate(pipeline))
            rows.extend(
                {
                    "week": name,
                    "site": group["_id"],
                    **{key: group[key] for key in ("articles", "reposts", "qread")},
                }
                for group in groups
            )
        return rows

    def _iter(
        self, weeks: list[str], query: Mapping[str, Any], newest_first: bool, limit: int | None
    ) -> Iterator[dict[str, Any]]:
        direction = DESCENDING if newest_first else ASCENDING
        left = limit
        for week in sorted(weeks, reverse=newest_first):
            if left is not None and left <= 0:
                return
            cursor = (
                self.collection(week)
                .find(query, _HIDDEN)
                .sort([("first_seen", direction), ("_id", direction)])
                .batch_size(_READ_BATCH)
            )
            if left is not None:
                cursor = cursor.limit(left)
            try:
                for found in cursor:
                    yield _ordered(found)
                    if left is not None:
                        left -= 1
            except ConnectionFailure as exc:
                raise self._unreachable(exc) from exc
            except PyMongoError as exc:
                raise StoreError(f"cannot read {self.prefix}_{week} from MongoDB: {exc}") from exc
            finally:
                cursor.close()

    def delete_site(self, site: str) -> int:
        deleted = 0
        for name in self.weeks():
            try:
                deleted += self.collection(name, create=False).delete_many({"site": site}).deleted_count
            except ConnectionFailure as exc:
                raise self._unreachable(exc) from exc
            except PyMongoError as exc:
                raise StoreError(
                    f"cannot delete the articles of site {site} from MongoDB ({self!r}): {exc}"
                ) from exc
        return deleted

    def weeks(self) -> list[str]:
        self._check_open()
        with self._reading():
            names = self.client.list_database_names()
        return sorted(match[1] for name in names if (match := self._week_re.match(name)))

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except ConnectionFailure as exc:
            raise self._unreachable(exc) from exc
        except PyMongoError as exc:
            raise StoreError(f"cannot read from MongoDB ({self!r}): {exc}") from exc

    def _unreachable(self, exc: ConnectionFailure) -> StoreError:
        """The error of a read that could not reach the server, in one line, with what waits in the spool;
        the spool is not tried again before ``retry_seconds`` (closing the store does not wait twice)."""
        self._retry_at = self._clock() + self.retry_seconds
        waiting = self.spool.waiting()
        return StoreError(
            f"cannot reach MongoDB at {self._hosts} (MONGO_URI) within {self.timeout_ms} ms"
            f" (MONGO_TIMEOUT_MS): {_reason(exc)}"
            + (f"; {waiting}, written into MongoDB when it is back" if waiting else "")
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the MongoDB article store {self.prefix}_* is closed")

    def flush(self) -> None:
        """Replay the spool now if it holds documents (it stays on disk if MongoDB is still away)."""
        self._check_open()
        if self.spool.pending or self.spool.orphans():
            self._replay_if_due(force=True)

    def close(self) -> None:
        """Replay the spool if it holds documents and its retry is due (not when MongoDB was found
        unreachable within ``retry_seconds``: no second wait), then close."""
        if self._closed:
            return
        try:
            if self.spool.pending or self.spool.orphans():
                self._replay_if_due()
        finally:
            self._closed = True
            self.spool.close()
            self.client.close()
        waiting = self.spool.waiting() if self.spool.pending else None
        if waiting:
            logger.warning(
                "MongoDB is unreachable: %s, written into MongoDB when it is back (by the next crawl or"
                " `%s` command on this data folder)",
                waiting,
                suggest("articles"),
            )


def _reason(exc: ConnectionFailure) -> str:
    """Why the server could not be reached (``127.0.0.1:1: [Errno 111] Connection refused``), without the
    topology and timeouts pymongo adds."""
    return _TIMEOUTS_RE.sub("", _TOPOLOGY_RE.sub("", str(exc)))


def _settled(
    planned: Written,
    operation: tuple[str, int],
    upserted: set[tuple[str, int]],
    refused: set[tuple[str, int]],
    recorded: set[tuple[str, str]],
) -> Written:
    """What a planned write did, as the bulk write reported it (and, for a repost, whether its original
    held it already: ``recorded``)."""
    if planned.outcome == "repost":
        return dataclasses.replace(planned, recorded_before=(planned.original, planned.url) in recorded)
    if planned.outcome not in {"new", "updated"}:
        return planned
    if operation in refused:
        return dataclasses.replace(planned, outcome="unchanged")  # a newer fetch is stored already
    if operation in upserted:
        return Written("new", planned.url)
    return dataclasses.replace(
        planned, outcome="updated"
    )  # (if planned new: another worker stored it meanwhile)


def _reachable(
    document: Mapping[str, Any],
    candidates: list[Candidate],
    phrases: fingerprint.Phrases | None,
    bands: dict[str, frozenset[int]],
) -> list[Candidate]:
    """Those of the batch's ``candidates`` a lookup of ``document`` alone finds, as SqliteStore's does: the
    same content hash, a SimHash band key in common, or an anchor among the probes of its ``phrases``
    held by no more than ``COMMON_ANCHOR_DOCUMENTS`` of the candidates (each candidate's anchors cut to
    those). ``bands`` keeps the band keys of the SimHashes met (hex)."""

    def keys_of(simhash: str | None) -> frozenset[int]:
        if not simhash:
            return frozenset()
        if simhash not in bands:
            bands[simhash] = frozenset(fingerprint.band_keys(fingerprint.from_hex(simhash)))
        return bands[simhash]

    keys = keys_of(document["simhash"])
    probes = frozenset(phrases.anchors(fingerprint.ANCHOR_PROBES)) if phrases is not None else frozenset()
    held = Counter(key for candidate in candidates for key in candidate.anchors & probes)
    probes = frozenset(key for key in probes if held[key] <= COMMON_ANCHOR_DOCUMENTS)
    return [
        dataclasses.replace(candidate, anchors=candidate.anchors & probes)
        for candidate in candidates
        if candidate.content_hash == document["content_hash"]
        or not keys.isdisjoint(keys_of(candidate.simhash))
        or not probes.isdisjoint(candidate.anchors)
    ]


def _counted_in(paragraph: int, url: str) -> UpdateOne:
    """``url`` added to the documents holding ``paragraph``, once: a URL counted already makes the upsert
    meet the paragraph's ``_id`` (a duplicate key, see ``_recount``). Beyond ``_PARAGRAPH_URLS`` URLs the
    count stays there, which is common enough."""
    return UpdateOne(
        {"_id": paragraph, "urls": {"$ne": url}},
        {"$push": {"urls": {"$each": [url], "$slice": _PARAGRAPH_URLS}}},
        upsert=True,
    )


def _upsert(document: Mapping[str, Any], week: str, anchors: list[int]) -> UpdateOne:
    """The write of a new or re-fetched document (its body's ``anchors`` with it): insert it, or replace
    the fields a re-fetch changes (but a title, date or author it read none of) unless the stored fetch is
    newer, adding the URLs that redirected to it
    this time to those kept (a document spooled before the field has none)."""
    updated = {
        name: document[name]
        for name in UPDATED_FIELDS
        if not (name in KEPT_WHEN_NONE and document[name] is None)
    }
    simhash = document["simhash"]
    updated["simhash_bands"] = [] if simhash is None else fingerprint.band_keys(fingerprint.from_hex(simhash))
    updated["anchors"] = anchors
    fixed = {
        "_id": document["id"],
        "id": document["id"],
        "first_seen": document["first_seen"],
        "week": week,
        "reposts": document["reposts"],
        **{name: None for name in KEPT_WHEN_NONE if name not in updated},
    }
    update: dict[str, Any] = {"$set": updated, "$setOnInsert": fixed}
    redirects = document.get("redirected_from") or []
    if redirects:
        update["$addToSet"] = {"redirected_from": {"$each": redirects}}
    else:
        fixed["redirected_from"] = []
    return UpdateOne(
        {"url": document["url"], "fetched_at": {"$lte": document["fetched_at"]}}, update, upsert=True
    )


def _ordered(found: Mapping[str, Any]) -> dict[str, Any]:
    """A document as read, its fields in order; one stored before ``redirected_from`` with none."""
    document = {name: found.get(name) for name in DOCUMENT_FIELDS}
    document["redirected_from"] = document["redirected_from"] or []
    return document
