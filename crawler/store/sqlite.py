"""The embedded store: one SQLite file per ISO week, ``<data_dir>/articles/articles_2026w47.sqlite``.

Each file is created when a document is first stored in it (a write that only records reposts of other
weeks' documents creates none), in WAL mode with ``synchronous=NORMAL`` (a commit survives the
process being killed; the last commits before a power cut may be lost until :meth:`SqliteStore.flush`
checkpoints them). It holds:

- ``articles``: the document fields of :mod:`crawler.store.document` as columns (``fields``, ``extraction``,
  ``summary``, ``reposts`` and ``redirected_from`` as JSON text) behind an ``INTEGER PRIMARY KEY pk``, the
  URL UNIQUE, and indexes on ``id``, ``(site, published)``, ``content_hash``, ``(first_seen, id)`` and
  ``(site, first_seen, id)`` (reads are in ``first_seen`` order, ties broken by id, as in MongoDB);
- ``simhash_bands``: the 4 band keys of each document's SimHash with the SimHash, indexed together, for
  the near-duplicate lookup;
- ``anchors`` and ``paragraphs``: each document's 16 smallest phrase hashes, for the lookup of the
  documents a body is a part of or holds, and in how many documents each paragraph occurs (boilerplate:
  :class:`crawler.store.fingerprint.Phrases`);
- ``articles_fts``: a contentless FTS5 index of the words of title and body, every CJK character a word
  (:func:`crawler.store.sqlite_schema.search_text`), kept in step by the writes, for ``search``;
- ``redirects``: each URL of each document's ``redirected_from`` with the document's pk, kept in step by
  triggers, for ``redirected_to``.

Several processes may write the same week at once (workers on one machine): writes take the file's write
lock at once (``BEGIN IMMEDIATE``) and wait up to ``busy_timeout`` seconds for it (and for the switch of
a new file to WAL, which SQLite refuses at once, busy timeout or not, while another process makes it); the
URL check, the duplicate lookup in that week and the write run in that one transaction, so a URL never gets
two rows and two copies of an article written into one week never both stay. A repost is recorded in its
original's file after that transaction commits. ``PRAGMA user_version`` holds the schema version; files of
older versions are migrated when opened.

A week's file SQLite cannot read (damaged: not a database, malformed; or unreadable) is a
:class:`DamagedWeekError` naming it and what to do (the store never checkpoints a ``-wal`` file beside it
into it, nor writes into it once found damaged: the -wal is named, to be moved out with it); one it
cannot read for want of disk space (no room for the ``-shm`` file it reads the file with) is a
:class:`StoreError` saying to free disk space, the file being sound. A store opened with
``skip_damaged`` leaves either week out of reads across weeks (``get``, ``original_of``, ``redirected_to``,
``stats``, and ``count``, ``iter_articles``, ``search`` without ``week``) and keeps the error in
:meth:`SqliteStore.weeks_left_out`, so that a reader shows the other weeks and says what is missing; reads
of that week alone, and writes, still fail.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import fcntl
import functools
import json
import logging
import os
import re
import resource
import sqlite3
import struct
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from crawler import settings as defaults
from crawler.commandline import counted
from crawler.errors import StoreError, folder_advice
from crawler.store import fingerprint
from crawler.store.base import (
    ANCHORED_CANDIDATES,
    COMMON_ANCHOR_DOCUMENTS,
    Candidate,
    DedupPolicy,
    Original,
    PublishedWindow,
    Store,
    Written,
    check_limit,
    checked_batch_size,
    limited,
    matches,
    search_terms,
    sqlite_code,
)
from crawler.store.document import (
    DOCUMENT_FIELDS,
    KEPT_WHEN_NONE,
    format_timestamp,
    merged_redirects,
    neighbour_weeks,
    parse_week,
    published_utc,
    repost_record,
)
from crawler.store.sqlite_schema import (
    COLUMNS,
    INSERT,
    QREAD_BODY,
    REPOSTS_COUNTED,
    SCHEMA_VERSION,
    UPDATE,
    UPDATED_COLUMNS,
    document_of,
    index_bands,
    index_phrases,
    index_search,
    paragraph_counts,
    prepare,
    row_of,
    search_text,
    unindex_search,
)
from crawler.threads import process_stopped
from extractors.text import CJK_RE, CJK_RUN_RE

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "SCHEMA_VERSION",
    "DamagedWeekError",
    "LockedWeekError",
    "SqliteStore",
]

logger = logging.getLogger(__name__)

# Seconds a write waits for another process's transaction on the same week's file.
BUSY_TIMEOUT_SECONDS = defaults.STORE_BUSY_TIMEOUT_SECONDS
# Rows read per query by iter_articles (keyset pages: no statement stays open between pages).
_PAGE_SIZE = 500
# A word character of the search index's tokenizer (unicode61 splits on everything else).
_WORD_CHAR_RE = re.compile(r"[^\W_]")
_FILE_RE = re.compile(r"^articles_(\d{4}w\d{2})\.sqlite$")
_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_FIRST_SEEN = DOCUMENT_FIELDS.index("first_seen")
_ID = DOCUMENT_FIELDS.index("id")

# A SimHash as the band index keeps it (signed) back to its unsigned value.
_UNSIGNED = (1 << 64) - 1
_CANDIDATE_COLUMNS = "a.url, a.site, a.week, a.first_seen, a.content_hash, a.simhash, a.body"
# The ANCHORED_CANDIDATES stored documents of the duplicate window sharing the most anchors with a new
# body's probes (a JSON array), not found by their SimHash already (a JSON array of pks) nor of its URL,
# each with the anchors it shares; ranked on the anchors index, so that only their rows are read, the
# anchors held by more than COMMON_ANCHOR_DOCUMENTS documents of the file left out.
_ANCHORED = (
    "SELECT an.pk, group_concat(an.key) FROM anchors an JOIN articles a ON a.pk = an.pk"
    " WHERE an.key IN (SELECT key FROM anchors WHERE key IN (SELECT value FROM json_each(?))"
    " GROUP BY key HAVING count(*) <= ?)"
    " AND an.pk NOT IN (SELECT value FROM json_each(?)) AND a.first_seen BETWEEN ? AND ? AND a.url != ?"
    " GROUP BY an.pk ORDER BY count(*) DESC, a.first_seen, a.url LIMIT ?"
)
# The figures of `articles stats` per site, in one statement (one snapshot of the file) that reads no
# article but those recording reposts: the articles counted from the (site, published) index, the reposts
# through articles_reposted, the qRead bodies from articles_qread alone (a file read-only and made by an
# older crawler has none: then every article is read for them).
_STATS = (
    "SELECT site, sum(articles), sum(reposts), sum(qread) FROM ("
    "SELECT site, count(*) AS articles, 0 AS reposts, 0 AS qread FROM articles GROUP BY site"
    f" UNION ALL SELECT site, 0, {REPOSTS_COUNTED}, 0 FROM articles WHERE reposts != '[]'"
    f" UNION ALL SELECT site, 0, 0, count(*) FROM articles WHERE {QREAD_BODY} GROUP BY site"
    ") GROUP BY site ORDER BY site"
)
# SQLite's primary result codes for a file that is damaged, or that cannot be opened or read.
# A week's file is empty from its making (open) until its first write (the switch to WAL mode, at once by
# the first process to make it): an empty file older than this was left so, or emptied.
_MAKING_SECONDS = 60
_DAMAGED_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_UNREADABLE_CODES = frozenset({sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN})
# Failures to make or grow the -shm file beside a week's file, which every reader needs: a full disk.
_SHM_CODES = frozenset(
    {sqlite3.SQLITE_IOERR_SHMOPEN, sqlite3.SQLITE_IOERR_SHMSIZE, sqlite3.SQLITE_IOERR_SHMMAP}
)
# What became of a week's file an open connection was opened on (SqliteStore._became).
_MOVED = "moved"
_EMPTIED = "emptied"
_WAL_GONE = "wal gone"
_SHM_GONE = "shm gone"
# Why a write into a file emptied as it was written is not acknowledged.
_EMPTIED_AS_WRITTEN = (
    "the file was emptied (0 bytes) as it was written, so what was written is in no sound file; it is to be"
    " written again, into the file made anew at that path"
)
# Why a week's file is locked as it is opened: its schema is made, or upgraded from an older crawler's.
_SCHEMA_NEEDS_LOCK = ", which setting up the file's schema (upgrading an older crawler's file) needs"
_ADD_REPOST = (
    "UPDATE articles SET reposts = json_insert(reposts, '$[#]', json(?)) WHERE url = ?"
    " AND NOT EXISTS (SELECT 1 FROM json_each(articles.reposts) WHERE json_extract(value, '$.url') = ?)"
)


class DamagedWeekError(StoreError):
    """A week's file that SQLite cannot read: damaged (not a database, malformed) or unreadable; the
    message names the file and what to do."""


class LockedWeekError(StoreError):
    """A write that found the write lock of the file ``path`` of ``week`` held by another process past the
    busy timeout: ``holder``, that process's pid on this machine, when the kernel names it
    (:func:`_lock_holder`)."""

    def __init__(self, message: str, path: Path, holder: int | None, week: str) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder
        self.week = week


class SqliteStore(Store):
    """Articles in weekly SQLite files under ``<data_dir>/articles``; ``upsert_many`` writes
    ``batch_size`` articles per transaction. With ``skip_damaged``, reads across weeks leave out the weeks
    whose files cannot be read (:meth:`weeks_left_out`) instead of failing."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        batch_size: int = 100,
        busy_timeout: float = BUSY_TIMEOUT_SECONDS,
        dedup: DedupPolicy | None = None,
        skip_damaged: bool = False,
    ) -> None:
        self.directory = Path(data_dir) / "articles"
        self.batch_size = checked_batch_size(batch_size)
        self.busy_timeout = busy_timeout
        self.dedup = DedupPolicy() if dedup is None else dedup
        self.skip_damaged = skip_damaged
        self._left_out: dict[str, StoreError] = {}
        # The weeks' files this store found emptied and made anew (weeks_made_anew).
        self._made_anew = 0
        self._connections: dict[str, sqlite3.Connection] = {}
        # The file (device, inode) each connection opened: one moved or deleted since is written no more.
        self._files: dict[str, tuple[int, int] | None] = {}
        # The -wal file (device, inode) beside each connection's file as it was opened (None: read in place,
        # without one): one deleted since leaves the articles committed into it in no file but the one
        # this process holds open (_save_wal).
        self._wals: dict[str, tuple[int, int] | None] = {}
        # The -shm file (device, inode) each connection mapped as it was opened (None: read in place, without
        # one): one deleted since leaves this process writing the -wal with an index and a write lock of its
        # own, apart from those of a process that opens the week since (_let_go_shm).
        self._shms: dict[str, tuple[int, int] | None] = {}
        # The weeks whose file was opened to be read as it is (_read_in_place), while its folder could not
        # be written: opened again once it can (_let_go_in_place).
        self._in_place: set[str] = set()
        # The weeks whose open file was found damaged, with the error that found it: nothing more is
        # written into them, and their -wal files are never checkpointed into them.
        self._damaged: dict[str, StoreError] = {}
        # The weeks whose open file was found holding text that is not UTF-8: warned of once, as it lasts.
        self._not_utf8: set[str] = set()
        self._closed = False
        # Paragraph counts read from each week's file during the batch being written, kept in step with the
        # new documents written into it.
        self._counts: dict[str, dict[int, int]] = {}
        # During a batch's write: the connection (None: no file) of each week looked up so far. A week's file
        # is checked (moved, deleted, replaced; its -shm made read-only) at its first look-up of a batch, not
        # at each of the four or so a new article made (8 us each); a commit checks its file again.
        self._batch_files: dict[str, sqlite3.Connection | None] | None = None

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.directory)!r})"

    def path(self, week: str) -> Path:
        """The file of the week named ``week``."""
        parse_week(week)
        return self.directory / f"articles_{week}.sqlite"

    # --- writing ----------------------------------------------------------------------------------------

    def write(self, documents: Sequence[dict[str, Any]]) -> list[Written]:
        results: list[Written] = []
        for start in range(0, len(documents), self.batch_size):
            batch = documents[start : start + self.batch_size]
            self._counts = {}
            self._batch_files = {}
            try:
                by_week: dict[str, list[tuple[int, dict[str, Any]]]] = {}
                for index, (document, home) in enumerate(zip(batch, self._homes(batch), strict=True)):
                    by_week.setdefault(home, []).append((index, document))
                written: dict[int, Written] = {}
                for week, writes in by_week.items():
                    reposts: list[tuple[int, str, str, dict[str, Any]]] = []
                    written.update(self._write(week, writes, reposts))
                    for index, original_week, original_url, record in reposts:
                        if not self._add_repost(original_week, original_url, record):
                            written[index] = dataclasses.replace(written[index], recorded_before=True)
            finally:
                self._batch_files = None
            results.extend(written[index] for index in range(len(batch)))
        return results

    def _homes(self, documents: Sequence[Mapping[str, Any]]) -> list[str]:
        """The week each document is written to: the week before its own, or the week after, if that week
        holds its URL (:func:`~crawler.store.document.neighbour_weeks`)."""
        urls_by_week: dict[str, list[str]] = {}
        for document in documents:
            for week in neighbour_weeks(document["week"]):
                urls_by_week.setdefault(week, []).append(document["url"])
        held: set[tuple[str, str]] = set()
        for week, urls in urls_by_week.items():
            connection = self._open(week, create=False)
            if connection is None:
                continue
            marks = ", ".join("?" for _ in urls)
            query = f"SELECT url FROM articles WHERE url IN ({marks})"
            try:
                held.update((week, url) for (url,) in connection.execute(query, urls))
            except sqlite3.Error as exc:
                raise self._unread(week, exc) from exc
        homes = []
        for document in documents:
            neighbours = [
                week for week in neighbour_weeks(document["week"]) if (week, document["url"]) in held
            ]
            homes.append(neighbours[0] if neighbours else document["week"])
        return homes

    def _write(
        self,
        week: str,
        writes: Sequence[tuple[int, dict[str, Any]]],
        reposts: list[tuple[int, str, str, dict[str, Any]]],
    ) -> list[tuple[int, Written]]:
        """Write ``writes`` (batch index, document) into the week's file in one transaction; reposts
        found are appended to ``reposts`` (batch index, original's week, original's URL, record) for after
        the commit. A week with no file gets one only when a document is to be stored in it."""
        connection = self._open(week, create=False, checked=True)
        if connection is None:
            elsewhere = self._reposts_elsewhere(week, writes, reposts)
            if elsewhere is not None:
                return elsewhere
            connection = self._open(week, create=True)
            assert connection is not None  # created when missing
        results = []
        what = f"write {counted(len(writes), 'article')} (first {writes[0][1]['url']}) to"
        with self._immediate(connection, week, what):
            for index, document in writes:
                written = self._write_one(connection, week, index, document, reposts)
                results.append((index, dataclasses.replace(written, week=week)))
        return results

    @contextmanager
    def _immediate(self, connection: sqlite3.Connection, week: str, what: str) -> Iterator[None]:
        """One write transaction on the week's ``connection`` (``BEGIN IMMEDIATE`` ... ``COMMIT``): a
        SQLite error is a StoreError saying it could not ``what`` the week's file, with the disk's and the
        lock's hints (a :class:`LockedWeekError` naming the lock's holder); so is a commit into a file
        moved or deleted meanwhile (:meth:`_forget`), or emptied (:meth:`_let_go_emptied`: then a SQLite
        error too, which pages read as zeros from the empty file give, is no damage but a write to try
        again); any failure rolls it back. A week found damaged
        (:attr:`_damaged`) is written no more: a write that touched none of its damaged pages would
        succeed, and SQLite's automatic checkpoint (at 1000 pages of -wal) would then copy the -wal beside
        it, which the damage's error says to move out with it, into it."""
        found = self._damaged.get(week)
        if found is not None:
            raise DamagedWeekError(
                f"cannot {what} {self.path(week)}: this process found the file damaged, and writes nothing"
                f" more into it: {found}"
            ) from found
        try:
            connection.execute("BEGIN IMMEDIATE")
            yield
            connection.execute("COMMIT")
            became = self._became(week)
            if became == _MOVED:
                raise StoreError(
                    f"cannot {what} {self.path(week)}: the file was moved or deleted as it was written, so"
                    " what was written is in no file a reader sees; it is to be written again, into the"
                    " file at that path"
                )
            if became == _EMPTIED:
                raise StoreError(f"cannot {what} {self.path(week)}: {_EMPTIED_AS_WRITTEN}")
            if became == _WAL_GONE:
                self._checkpoint_wal_gone(week, connection, what)
            if became == _SHM_GONE:
                raise StoreError(
                    f"cannot {what} {self.path(week)}: its -shm file was deleted as it was written, so what"
                    " was written may be written over by a process that opened the week since; it is to be"
                    " written again, with the -shm file at that path"
                )
        except sqlite3.Error as exc:
            path = self.path(week)
            if self._became(week) == _EMPTIED:
                # Not the damage SQLite finds in pages read from the emptied file: not dead-lettered for it.
                raise StoreError(f"cannot {what} {path}: {_EMPTIED_AS_WRITTEN} ({exc})") from None
            damaged = _damaged_hint(exc, path)
            message = f"cannot {what} {path}: {exc}{_disk_hint(exc, self.directory)}"
            if _busy(exc):
                holder = _lock_holder(path)
                raise LockedWeekError(
                    f"{message}{_busy_hint(exc, path, self.busy_timeout, holder=holder)}", path, holder, week
                ) from exc
            error = StoreError(f"{message}{damaged}")
            if damaged:
                self._damaged[week] = error
            raise error from exc
        finally:
            # Any failure (a value SQLite cannot take too): left open, the week's write lock is held.
            if connection.in_transaction:
                connection.execute("ROLLBACK")

    def _write_one(
        self,
        connection: sqlite3.Connection,
        week: str,
        index: int,
        document: dict[str, Any],
        reposts: list[tuple[int, str, str, dict[str, Any]]],
    ) -> Written:
        url = document["url"]
        stored = connection.execute(
            "SELECT pk, fetched_at, simhash, title, body, job, redirected_from, published, author"
            " FROM articles WHERE url = ?",
            (url,),
        ).fetchone()
        if stored is not None:
            pk, fetched_at, simhash, title, body, job, redirected_from, published, author = stored
            same_job = job is not None and job == document["job"]
            if document["fetched_at"] < fetched_at:
                return Written("unchanged", url, same_job=same_job)
            held = {"title": title, "published": published, "author": author}
            document = {**document, **{name: held[name] for name in KEPT_WHEN_NONE if document[name] is None}}
            row = row_of(document)
            connection.execute(UPDATE, [row[column] for column in UPDATED_COLUMNS] + [pk])
            known = json.loads(redirected_from)
            redirects = merged_redirects(known, document["redirected_from"], url)
            if redirects != known:
                connection.execute(
                    "UPDATE articles SET redirected_from = ? WHERE pk = ?",
                    (json.dumps(redirects, ensure_ascii=False), pk),
                )
            if simhash != document["simhash"]:
                index_bands(connection, pk, document["simhash"])
            if body != document["body"] and document["body"]:
                files = self._dedup_files(connection, week, document)
                common = fingerprint.common_of(functools.partial(self._paragraph_counts, files))
                index_phrases(connection, pk, fingerprint.Phrases.of(document["body"], common))
            if (title, body) != (document["title"], document["body"]):
                index_search(connection, pk, document["title"], document["body"], old=(title, body))
            return Written("updated", url, same_job=same_job)
        body = document["body"]
        paragraphs = fingerprint.paragraph_hashes(body) if body else []
        found, phrases = self._original(connection, week, document)
        if found is not None:
            return _repost(index, document, found, reposts)
        document = {**document, "week": week}
        cursor = connection.execute(INSERT, row_of(document))
        assert cursor.lastrowid is not None
        index_bands(connection, cursor.lastrowid, document["simhash"])
        if phrases is not None:
            index_phrases(connection, cursor.lastrowid, phrases, paragraphs)
            counted = self._counts.get(week, {})
            for paragraph in paragraphs:
                if paragraph in counted:
                    counted[paragraph] += 1
        index_search(connection, cursor.lastrowid, document["title"], document["body"])
        return Written("new", url)

    def _add_redirects(self, url: str, redirects: list[str]) -> bool:
        for week in reversed(self.weeks()):
            connection = self._open(week, create=False)
            if connection is None or not self._holds(connection, week, url):
                continue
            with self._immediate(connection, week, f"add the URLs that redirected to {url} to"):
                row = connection.execute(
                    "SELECT pk, redirected_from FROM articles WHERE url = ?", (url,)
                ).fetchone()
                if row is None:  # deleted since it was read
                    continue
                known = json.loads(row[1])
                merged = merged_redirects(known, redirects, url)
                if merged != known:
                    connection.execute(
                        "UPDATE articles SET redirected_from = ? WHERE pk = ?",
                        (json.dumps(merged, ensure_ascii=False), row[0]),
                    )
            return True
        return False

    def fill_empty(self, url: str, values: Mapping[str, str]) -> tuple[str, ...] | None:
        names = [name for name in KEPT_WHEN_NONE if values.get(name)]
        for week in reversed(self.weeks()):
            connection = self._open(week, create=False)
            if connection is None or not self._holds(connection, week, url):
                continue
            with self._immediate(connection, week, f"fill the empty fields of {url} in"):
                row = connection.execute(
                    "SELECT pk, title, body, published, author FROM articles WHERE url = ?", (url,)
                ).fetchone()
                if row is None:  # deleted since it was read
                    continue
                pk, title, body, published, author = row
                stored = {"title": title, "published": published, "author": author}
                filled = tuple(name for name in names if not stored[name])
                if filled:
                    merged = {**stored, **{name: values[name] for name in filled}}
                    connection.execute(
                        "UPDATE articles SET title = ?, published = ?, author = ? WHERE pk = ?",
                        (merged["title"], merged["published"], merged["author"], pk),
                    )
                if "title" in filled:
                    index_search(connection, pk, values["title"], body, old=(title, body))
            return filled
        return None

    def _holds(self, connection: sqlite3.Connection, week: str, url: str) -> bool:
        """Whether the week's file holds a document of ``url``, read without the write lock, which a write
        looking for the URL in every week would take in each (another writer holding it keeps it
        waiting)."""
        try:
            return connection.execute("SELECT 1 FROM articles WHERE url = ?", (url,)).fetchone() is not None
        except sqlite3.Error as exc:
            raise self._unread(week, exc) from exc

    def _reposts_elsewhere(
        self,
        week: str,
        writes: Sequence[tuple[int, dict[str, Any]]],
        reposts: list[tuple[int, str, str, dict[str, Any]]],
    ) -> list[tuple[int, Written]] | None:
        """For a week that has no file: the results of ``writes`` (batch index, document) when each one is
        a repost of a document of another week (appended to ``reposts`` as :meth:`_write` does), else None
        (a document is to be stored: the week needs its file)."""
        found_reposts: list[tuple[int, str, str, dict[str, Any]]] = []
        results = []
        for index, document in writes:
            found, _ = self._original(None, week, document)
            if found is None:
                return None
            results.append((index, _repost(index, document, found, found_reposts)))
        reposts.extend(found_reposts)
        return results

    def _original(
        self, home: sqlite3.Connection | None, home_week: str, document: Mapping[str, Any]
    ) -> tuple[Original | None, fingerprint.Phrases | None]:
        """The stored document that ``document``, a URL new to ``home_week``, reposts, if any, and its
        body's phrases; ``home`` is the connection of that week's file (its open transaction), None when
        it has no file."""
        body = document["body"]
        files = self._dedup_files(home, home_week, document)
        counts = functools.partial(self._paragraph_counts, files)
        phrases = fingerprint.Phrases.of(body, fingerprint.common_of(counts)) if body else None
        found = self.find_original(
            document,
            self._candidates(files, document, phrases),
            lambda candidate: self._body(home if candidate.week == home_week else None, candidate),
            counts,
            phrases,
        )
        return found, phrases

    def _dedup_files(
        self, home: sqlite3.Connection | None, home_week: str, document: Mapping[str, Any]
    ) -> list[tuple[str, sqlite3.Connection]]:
        """The weeks ``document`` is compared with that have a file, and their connections (``home``'s for
        ``home_week``, when given); none when the duplicate check is off."""
        if not self.dedup.enabled:
            return []
        files = []
        for week in self.dedup_weeks(document):
            connection = home if week == home_week and home is not None else self._open(week, create=False)
            if connection is not None:
                files.append((week, connection))
        return files

    def _paragraph_counts(
        self, weeks: list[tuple[str, sqlite3.Connection]], hashes: list[int]
    ) -> dict[int, int]:
        """In how many stored documents of the ``weeks`` a document is compared with (its
        :meth:`_dedup_files`) each of the paragraph ``hashes`` occurs (each week's file read once per batch,
        kept in step with its new documents), as :meth:`Store.find_original` and
        :func:`crawler.store.fingerprint.common_of` ask for them."""
        total = dict.fromkeys(hashes, 0)
        for week, connection in weeks:
            counted = self._counts.setdefault(week, {})
            unknown = [h for h in hashes if h not in counted]
            if unknown:
                try:
                    found = paragraph_counts(connection, unknown)
                except sqlite3.Error as exc:
                    raise self._unread(week, exc) from exc
                counted.update((h, found.get(h, 0)) for h in unknown)
            for h in hashes:
                total[h] += counted[h]
        return total

    def _candidates(
        self,
        files: list[tuple[str, sqlite3.Connection]],
        document: Mapping[str, Any],
        phrases: fingerprint.Phrases | None,
    ) -> list[Candidate]:
        """Stored documents of the weeks' ``files`` (:meth:`_dedup_files`) within the duplicate window with
        the same content hash, or a shared band key and a SimHash within the distance (read from the band
        index alone), or an anchor among the body's ``ANCHOR_PROBES`` smallest phrase hashes."""
        if not self.dedup.enabled or document["content_hash"] is None:
            return []
        lower, upper = self.dedup_range(document)
        own = None if document["simhash"] is None else fingerprint.from_hex(document["simhash"])
        keys = [] if own is None else fingerprint.band_keys(own)
        bands = f"SELECT pk, simhash FROM simhash_bands WHERE key IN ({', '.join('?' for _ in keys)})"
        probes = [] if own is None or phrases is None else phrases.anchors(fingerprint.ANCHOR_PROBES)
        found: list[Candidate] = []
        for week, connection in files:
            try:
                near = (
                    {
                        pk
                        for pk, simhash in connection.execute(bands, keys)
                        if fingerprint.hamming(own, simhash & _UNSIGNED) <= self.dedup.max_distance
                    }
                    if own is not None
                    else set()
                )
                anchored = (
                    {
                        pk: frozenset(map(int, shared.split(",")))
                        for pk, shared in connection.execute(
                            _ANCHORED,
                            (
                                json.dumps(probes),
                                COMMON_ANCHOR_DOCUMENTS,
                                json.dumps(sorted(near)),
                                lower,
                                upper,
                                document["url"],
                                ANCHORED_CANDIDATES,
                            ),
                        )
                    }
                    if probes
                    else {}
                )
                query = (
                    f"SELECT a.pk, {_CANDIDATE_COLUMNS} FROM articles a WHERE a.content_hash = ?"
                    " AND a.first_seen BETWEEN ? AND ?"
                )
                params: list[object] = [document["content_hash"], lower, upper]
                if near or anchored:
                    # The keys as one JSON array: one statement whatever their number, prepared once.
                    query += (
                        f" UNION ALL SELECT a.pk, {_CANDIDATE_COLUMNS} FROM articles a"
                        " WHERE a.pk IN (SELECT value FROM json_each(?)) AND a.first_seen BETWEEN ? AND ?"
                    )
                    params += [json.dumps(sorted(near | anchored.keys())), lower, upper]
                rows = self._fetch(connection, week, query, params)
            except sqlite3.Error as exc:
                raise self._unread(week, exc) from exc
            for pk, url, site, of_week, first_seen, content, simhash, body in rows:
                shared = anchored.get(pk, frozenset())
                found.append(Candidate(url, site, of_week, first_seen, content, simhash, shared, body))
        return found

    def _body(self, connection: sqlite3.Connection | None, candidate: Candidate) -> str | None:
        """The body of a duplicate candidate, read on ``connection`` (the open transaction's, for its
        own week) or on its week's."""
        connection = connection or self._open(candidate.week, create=False)
        if connection is None:
            return None
        try:
            rows = self._fetch(
                connection, candidate.week, "SELECT body FROM articles WHERE url = ?", (candidate.url,)
            )
        except sqlite3.Error as exc:
            raise self._unread(candidate.week, exc) from exc
        return rows[0][0] if rows else None

    def _add_repost(self, week: str, url: str, record: dict[str, Any]) -> bool:
        """Record ``record`` among the reposts of ``url`` in the week's file; False when it was there."""
        connection = self._open(week, create=False, checked=True)
        if connection is None:
            raise StoreError(f"the article store {self.path(week)} disappeared while a repost was recorded")
        try:
            cursor = connection.execute(_ADD_REPOST, (json.dumps(record, sort_keys=True), url, record["url"]))
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot record {record['url']} as a repost of {url} in {self.path(week)}:"
                f" {exc}{_disk_hint(exc, self.directory)}"
            ) from exc
        return cursor.rowcount > 0

    # --- reading ----------------------------------------------------------------------------------------

    def get(self, url_or_id: str) -> dict[str, Any] | None:
        column = "id" if _ID_RE.match(url_or_id) else "url"
        return self._newest(f"SELECT {COLUMNS} FROM articles WHERE {column} = ? LIMIT 1", (url_or_id,))

    def original_of(self, url: str) -> dict[str, Any] | None:
        query = (
            f"SELECT {COLUMNS} FROM articles WHERE reposts != '[]' AND reposts LIKE ? ESCAPE '\\' AND EXISTS"
            " (SELECT 1 FROM"
            " json_each(articles.reposts) AS r WHERE json_extract(r.value, '$.url') = ? OR EXISTS (SELECT 1"
            " FROM json_each(r.value, '$.redirected_from') AS f WHERE f.value = ?)) LIMIT 1"
        )
        return self._newest(query, (_holding_json(url), url, url))

    def redirected_to(self, url: str) -> dict[str, Any] | None:
        query = (
            f"SELECT {COLUMNS} FROM articles WHERE pk IN (SELECT pk FROM redirects WHERE url = ?)"
            " ORDER BY fetched_at DESC LIMIT 1"
        )
        return self._newest(query, (url,))

    def _newest(self, query: str, params: Sequence[object]) -> dict[str, Any] | None:
        """The document of the first row ``query`` gives in the newest week that has one, or None."""
        for week in reversed(self.weeks()):
            rows = self._query(week, query, params, across=True)
            if rows:
                return document_of(rows[0], self.path(week))
        return None

    def count(self, site: str | None = None, week: str | None = None) -> int:
        weeks = self.weeks_asked(week)
        query = "SELECT count(*) FROM articles" + (" WHERE site = ?" if site is not None else "")
        params = () if site is None else (site,)
        total = 0
        for name in weeks:
            for (number,) in self._query(name, query, params, across=week is None):
                total += int(number)
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
        conditions, params = _filters(
            site, lower, upper, PublishedWindow.of(published_since, published_until)
        )
        return self._iter(weeks, conditions, params, newest_first, limit, across=week is None)

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
        weeks, lower, upper = self.time_window(week, since, until)
        conditions, params = _filters(
            site, lower, upper, PublishedWindow.of(published_since, published_until)
        )
        phrases = [phrase for term in terms for phrase in _index_phrases(term)]
        if phrases:
            conditions.insert(0, "pk IN (SELECT rowid FROM articles_fts WHERE articles_fts MATCH ?)")
            params.insert(0, " AND ".join('"' + phrase.replace('"', '""') + '"' for phrase in phrases))
        hits = self._iter(weeks, conditions, params, True, None, across=week is None)
        return limited((document for document in hits if matches(document, terms)), limit)

    def stats(self, week: str | None = None) -> list[dict[str, Any]]:
        rows = []
        for name in self.weeks() if week is None else [week]:
            for site, articles, reposts, qread in self._query(name, _STATS, (), across=week is None):
                rows.append(
                    {"week": name, "site": site, "articles": articles, "reposts": reposts, "qread": qread}
                )
        return rows

    def _iter(
        self,
        weeks: list[str],
        conditions: list[str],
        params: list[object],
        newest_first: bool,
        limit: int | None,
        *,
        across: bool,
    ) -> Iterator[dict[str, Any]]:
        order, after = ("DESC", "<") if newest_first else ("ASC", ">")
        left = limit
        for week in sorted(weeks, reverse=newest_first):
            last: tuple[object, object] | None = None
            while left is None or left > 0:
                where = [*conditions, f"(first_seen, id) {after} (?, ?)"] if last else conditions
                page = _PAGE_SIZE if left is None else min(_PAGE_SIZE, left)
                query = (
                    f"SELECT {COLUMNS} FROM articles"
                    + (f" WHERE {' AND '.join(where)}" if where else "")
                    + f" ORDER BY first_seen {order}, id {order} LIMIT {page}"
                )
                rows = self._query(week, query, [*params, *(last or ())], across=across)
                for row in rows:
                    yield document_of(row, self.path(week))
                if left is not None:
                    left -= len(rows)
                if len(rows) < page:
                    break
                last = (rows[-1][_FIRST_SEEN], rows[-1][_ID])

    def weeks(self) -> list[str]:
        self._check_open()
        if not self.directory.is_dir():
            return []
        return sorted(match[1] for path in self.directory.iterdir() if (match := _FILE_RE.match(path.name)))

    def delete_site(self, site: str) -> int:
        deleted = 0
        for week in self.weeks():
            connection = self._open(week, create=False)
            if connection is None:
                continue
            with self._immediate(connection, week, f"delete the articles of site {site} from"):
                rows = connection.execute("SELECT pk, title, body FROM articles WHERE site = ?", (site,))
                for pk, title, body in rows.fetchall():
                    unindex_search(connection, pk, title, body)
                    deleted += 1
                connection.execute("DELETE FROM articles WHERE site = ?", (site,))
        return deleted

    def weeks_left_out(self) -> dict[str, StoreError]:
        return dict(self._left_out)

    def weeks_made_anew(self) -> int:
        return self._made_anew

    def _query(self, week: str, query: str, params: Sequence[object], *, across: bool = False) -> list[Any]:
        """The rows of ``query`` on the week's file. A read ``across`` weeks by a store that skips damaged
        weeks gets no rows from a week whose file cannot be read, and records it in ``weeks_left_out``."""
        if across and self.skip_damaged and week in self._left_out:
            return []
        try:
            return self._rows(week, query, params)
        except StoreError as exc:
            if not (across and self.skip_damaged and _week_unread(exc)):
                raise
            logger.debug("week %s left out of a read across weeks: %s", week, exc)
            self._left_out[week] = exc
            return []

    def _rows(self, week: str, query: str, params: Sequence[object]) -> list[Any]:
        connection = self._open(week, create=False)
        if connection is None:
            raise StoreError(f"the article store {self.path(week)} disappeared while being read")
        try:
            return self._fetch(connection, week, query, params)
        except sqlite3.Error as exc:
            raise self._unread(week, exc) from exc

    def _unread(self, week: str, exc: sqlite3.Error) -> StoreError:
        """The error of a read of the week's file that failed on ``exc``, with what to do when the file is
        damaged or unreadable, or has no room for its ``-shm`` (:func:`_read_error`); for a file emptied
        while open, one to try again, as a write's (:meth:`_immediate`)."""
        what = f"cannot read the article store {self.path(week)}"
        if self._became(week) == _EMPTIED:
            return StoreError(f"{what}: {_EMPTIED_AS_WRITTEN} ({exc})")
        error = _read_error(what, exc, self.path(week))
        if isinstance(error, DamagedWeekError):
            self._damaged[week] = error
        return error

    def _fetch(
        self, connection: sqlite3.Connection, week: str, query: str, params: Sequence[object]
    ) -> list[Any]:
        """The rows of ``query`` on the week's ``connection``; text in them that is not UTF-8 (another
        tool wrote it, or the disk damaged it) is read again with its undecodable bytes as U+FFFD, with a
        warning naming the file, once for the file (not at each read that meets it)."""
        try:
            return connection.execute(query, params).fetchall()
        except sqlite3.OperationalError as exc:
            if not str(exc).startswith(_NOT_UTF8):
                raise
        if week not in self._not_utf8:
            self._not_utf8.add(week)
            logger.warning(
                "the article store %s holds text that is not UTF-8 (written by another program, or damaged"
                " on disk): its undecodable bytes are read as U+FFFD",
                self.path(week),
            )
        connection.text_factory = _lenient_text
        try:
            return connection.execute(query, params).fetchall()
        finally:
            connection.text_factory = str

    # --- connections ------------------------------------------------------------------------------------

    def _open(self, week: str, *, create: bool, checked: bool = False) -> sqlite3.Connection | None:
        """The connection to the week's file, opened (and the file created if ``create``) on first use;
        during a batch's write, the one its first look-up found (:attr:`_batch_files`) unless ``checked``
        (a write outside the batch's transactions, which no commit checks) or ``create`` (none found)."""
        batch = self._batch_files
        if batch is not None and not checked:
            found = batch.get(week)
            if found is not None or (week in batch and not create):
                return found
        connection = self._open_file(week, create=create)
        if batch is not None:
            batch[week] = connection
        return connection

    def _open_file(self, week: str, *, create: bool) -> sqlite3.Connection | None:
        """:meth:`_open` of the week's file as it is now: a connection opened before is checked against it
        (:meth:`_forget` when moved, deleted or replaced; :func:`_check_shm_writable`)."""
        self._check_open()
        connection = self._connections.get(week)
        path = self.path(week)
        emptied_open = False
        if connection is not None:
            became = self._became(week)
            if became is None and week in self._in_place and not _read_in_place(path):
                self._let_go_in_place(week, connection)
            elif became is None:
                _check_shm_writable(path, self.directory)
                return connection
            elif became == _EMPTIED:
                self._let_go_emptied(week, connection)
                emptied_open = True
            elif became == _WAL_GONE:
                self._save_wal(week, connection)
            elif became == _SHM_GONE:
                self._let_go_shm(week, connection)
            else:
                self._forget(week, connection)
        exists = path.exists()
        if not create and not exists:
            return None
        if exists and self.skip_damaged:
            _check_not_emptied(path, at_once=emptied_open)
        emptied = exists and not self.skip_damaged and not emptied_open and _emptied(path)
        in_place = exists and _read_in_place(path)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                f"{path.absolute().as_uri()}?immutable=1" if in_place else path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=in_place,
            )
        except OSError as exc:
            advice = folder_advice(exc, self.directory)
            raise StoreError(
                f"cannot open the article store {path}: {exc}" + (f"; {advice}" if advice else "")
            ) from exc
        except sqlite3.Error as exc:
            if not exists:
                raise StoreError(
                    f"cannot create the article store {path}: {exc}{_create_hint(exc, self.directory)}"
                ) from exc
            raise _read_error(f"cannot open the article store {path}", exc, path) from exc
        connection.create_function("published_utc", 1, published_utc, deterministic=True)
        try:
            if exists:
                _check_article_store(connection, path)
            prepare(connection, path, self.busy_timeout, immutable=in_place)
        except sqlite3.Error as exc:
            if not exists and not _busy(exc):
                connection.close()
                _remove_unmade(path)
                raise StoreError(
                    f"cannot create the article store {path}: {exc}{_create_hint(exc, self.directory)}"
                ) from exc
            what = f"cannot open the article store {path}"
            busy = _busy_hint(exc, path, self.busy_timeout, _SCHEMA_NEEDS_LOCK)
            # Built before the close, which the -wal file it names must outlive.
            error = _read_error(what, exc, path, self.directory, busy)
            if isinstance(error, DamagedWeekError):
                _close_leaving_wal(connection, path, self.busy_timeout)
            else:
                connection.close()
            raise error from exc
        except StoreError:
            connection.close()
            raise
        logger.debug("opened the article store %s", path)
        if emptied:
            self._made_anew += 1
            logger.warning(
                "the article store %s was empty (0 bytes), where the crawler makes a week's file with its"
                " tables in it: what it held is lost (a copy or restore onto it that failed, a redirection"
                " `>` onto it); it is made anew, this week's articles stored in it from now on, the earlier"
                " ones gone from it: restore them from a backup of the file (docs/operations.md, 'Backing up"
                " a week'), every crawler on the folder stopped first",
                path,
            )
        self._connections[week] = connection
        self._files[week] = self._file_of(path)
        self._wals[week] = None if in_place else self._file_of(_wal_of(path))
        self._shms[week] = None if in_place else self._file_of(_shm_of(path))
        if in_place:
            self._in_place.add(week)
        return connection

    def _let_go_in_place(self, week: str, connection: sqlite3.Connection) -> None:
        """Close the week's ``connection``, opened to read the file as it is (:func:`_read_in_place`) while
        its folder could not be written, which can be now (or has a -wal beside it): it would refuse every
        write of the week ("attempt to write a readonly database", saying to make the folder writable) and
        read the file without the writes of the other processes' -wal, as long as the process runs. The
        week is opened again as any other."""
        logger.info(
            "the article store %s, read as it is while %s could not be written, is opened again to be"
            " written",
            self.path(week),
            self.directory,
        )
        self._drop(week)
        connection.close()

    def _forget(self, week: str, connection: sqlite3.Connection) -> None:
        """Close the week's ``connection``, whose file was moved or deleted (or replaced) since it was
        opened: what it would write would land in the file moved away, or in none, where no reader looks.
        SQLite writes nothing back to the name on that close, so the file now at the path is left as it is
        (or made when an article is next stored in the week); nor does it checkpoint a moved file as it
        closes, so the close writes nothing through the -shm mapping and is safe even where that file was
        made immutable (which crashes the close of an unmoved week, :meth:`close`). The articles committed
        since the file's last checkpoint are in its -wal alone, left at the path when the file was moved
        without it (``mv`` of the file alone): they are applied to the file moved away first
        (:func:`_checkpoint_moved`), while no file is at the path, and that -wal is removed, by the first
        store of the folder to find the file moved, for every process's articles (they share the -wal); the
        file made anew at the path then gets a -wal of its own (SQLite would take the emptied one for its
        own), so that a store of another process, finding a -wal at the path other than the one it holds
        open, leaves it to that file. Finding the one it holds open beside a file at the path, it finds a
        database put there from elsewhere (``mv`` onto it), which SQLite would read with that -wal's pages
        over its own (a file "malformed", or rows out of order, the writes made into it since in it too):
        the -wal is applied to the file replaced and removed alike, said so."""
        path = self.path(week)
        wal = self._wals[week]
        # Held open by this connection, that -wal cannot be deleted and its inode taken by another file. A
        # damaged file's is left as it is, to be moved out with it (_restore_advice).
        ours = wal is not None and week not in self._damaged and self._file_of(_wal_of(path)) == wal
        replaced = ours and path.exists()
        if not replaced:
            logger.warning(
                "the article store %s was moved or deleted while this process had it open: it is opened"
                " again (made anew when an article is next stored in that week)",
                path,
            )
        applied = (
            (replaced or not path.exists())
            and week not in self._damaged
            and not _shm_frozen(path)
            and _checkpoint_moved(connection, path)
        )
        if ours:
            with suppress(FileNotFoundError):
                _wal_of(path).unlink()
        if replaced:
            logger.warning(
                "the article store %s was replaced by another file while this process had it open (a `mv`"
                " onto it): the -wal file left beside it, the replaced file's, was %s, so that the file now"
                " at the path is read as it was put there; move a week's file with its -wal and -shm files,"
                " every crawler on the folder stopped first (docs/operations.md, 'Backing up a week')",
                path,
                "applied to that file and removed" if applied else "removed",
            )
        self._drop(week)
        connection.close()

    def _let_go_emptied(self, week: str, connection: sqlite3.Connection) -> None:
        """Close the week's ``connection``, whose file was emptied (cut to 0 bytes in place, the same file)
        since it was opened, said once and counted among the weeks made anew: the file is made anew at the
        next write (:meth:`_open_file`). Closed as usual, SQLite would checkpoint the ``-wal`` into the
        empty file, the pages written since the last checkpoint with zeros for all the others: a file found
        "malformed" by every reader, the articles written since the emptying in it
        (:func:`_close_leaving_wal` keeps it from that, and drops the -wal)."""
        path = self.path(week)
        self._made_anew += 1
        logger.warning(
            "the article store %s was emptied (0 bytes) while this process had it open (a copy or restore"
            " onto it that failed, a redirection `>` onto it): what it held is lost, with the articles its"
            " -wal held; it is made anew, this week's articles stored in it from now on (those written as it"
            " was emptied are written again), the earlier ones gone from it: restore them from a backup of"
            " the file (docs/operations.md, 'Backing up a week'), every crawler on the folder stopped first",
            path,
        )
        self._drop(week)
        _close_leaving_wal(connection, path, self.busy_timeout, emptied=True)

    def _checkpoint_wal_gone(self, week: str, connection: sqlite3.Connection, what: str) -> None:
        """Copy the writes of the week's ``connection``'s ``-wal``, deleted (or replaced) since it was opened,
        into the week's file (SQLite writes on into the -wal it holds open, which no other process, nor a
        crash of this one, would read): a failure (another process reading the -wal meanwhile) is a
        StoreError saying it could not ``what`` the file, the write to be tried again."""
        failure = _truncating_checkpoint(connection, "another process was reading the week")
        if failure:
            raise StoreError(
                f"cannot {what} {self.path(week)}: its -wal file was deleted as it was written, and what"
                " was written could not be copied from the -wal this process holds open into the file"
                f" ({failure}): tried again at the next write"
            )

    def _save_wal(self, week: str, connection: sqlite3.Connection) -> None:
        """Close the week's ``connection``, whose ``-wal`` file was deleted (or replaced) since it was opened,
        its writes copied into the week's file first (:meth:`_checkpoint_wal_gone`, its failure raised: tried
        again at the next look-up), said once: the file is opened again with a -wal at its path. Left so,
        the articles committed since the file's last checkpoint would be in no file another process reads
        (a reader of the week fails on it: "disk I/O error"), and lost if this process were killed before
        it closed the week."""
        self._checkpoint_wal_gone(week, connection, "copy the writes of its -wal into")
        logger.warning(
            "the -wal file of the article store %s was deleted while this process had the week open (a"
            " clean-up of the folder, a backup tool): the articles written into it were copied into the file,"
            " and the week is opened again with a -wal of its own; never delete a week's -wal or -shm file"
            " while a crawler runs (docs/storage.md)",
            self.path(week),
        )
        self._drop(week)
        connection.close()

    def _let_go_shm(self, week: str, connection: sqlite3.Connection) -> None:
        """Close the week's ``connection``, whose ``-shm`` file was deleted (or replaced) since it was opened,
        said once: a process that opens the week since makes one anew, and the two write the -wal with two
        indexes and two write locks, each over the other's frames. The -wal holds every commit (a process
        opening the week reads them all from it); closed as usual, the connection could copy the -wal into
        the file through the index it had, which lacks the other process's commits, and delete the -wal
        (:func:`_close_leaving_wal` keeps it from that). The week is opened again with the -shm at its
        path."""
        logger.warning(
            "the -shm file of the article store %s was deleted while this process had the week open (a"
            " clean-up of the folder, a backup tool): the week is opened again with the -shm file at its"
            " path, which the processes that opened it since write with (two -shm files let two processes"
            " write the -wal at once, each over the other's articles); never delete a week's -wal or -shm"
            " file while a crawler runs (docs/storage.md)",
            self.path(week),
        )
        self._drop(week)
        _close_leaving_wal(connection, self.path(week), self.busy_timeout)

    def _drop(self, week: str) -> None:
        """Forget all this store knows of the week's file, whose connection is being closed."""
        del self._connections[week], self._files[week], self._wals[week], self._shms[week]
        self._in_place.discard(week)
        if self._batch_files is not None:
            self._batch_files.pop(week, None)
        self._counts.pop(week, None)
        self._damaged.pop(week, None)
        self._not_utf8.discard(week)

    def _became(self, week: str) -> str | None:
        """What became of the file the week's open connection was opened on: None when it is at its path as
        it was; ``_MOVED`` when moved, deleted or replaced; ``_EMPTIED`` when cut to 0 bytes in place (a
        file the store opened holds its header page at least); ``_WAL_GONE`` when its ``-wal`` file was
        deleted or replaced; ``_SHM_GONE`` when its ``-shm`` file was. Three ``stat`` calls (5 us each), as
        :meth:`_file_of`."""
        if week not in self._connections:
            return None
        path = self.path(week)
        try:
            found = path.stat()
        except FileNotFoundError:
            return _MOVED
        if (found.st_dev, found.st_ino) != self._files[week]:
            return _MOVED
        if not found.st_size:
            return _EMPTIED
        wal = self._wals[week]
        if wal is not None and self._file_of(_wal_of(path)) != wal:
            return _WAL_GONE
        shm = self._shms[week]
        return _SHM_GONE if shm is not None and self._file_of(_shm_of(path)) != shm else None

    @staticmethod
    def _file_of(path: Path) -> tuple[int, int] | None:
        """The (device, inode) of the file at ``path``; None when there is none."""
        try:
            found = path.stat()
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the article store under {self.directory} is closed")

    def flush(self) -> None:
        for week, connection in self._connections.items():
            if week in self._damaged:
                continue
            try:
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot checkpoint the article store {self.path(week)}: {exc}") from exc

    def close(self) -> None:
        connections, self._connections = self._connections, {}
        self._closed = True
        for week, connection in connections.items():
            if _shm_frozen(self.path(week)):
                logger.warning(
                    "the article store %s is left as it is, not closed: its -shm file was made read-only (or"
                    " immutable), and closing would crash the process; the next crawler to open the week"
                    " reads what was written",
                    self.path(week),
                )
                # Closing checkpoints the week through the -shm mapping (SIGBUS), and so would the
                # connection's deallocation: it is kept for the life of the process.
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(connection))
                continue
            shm = self._shms.get(week)
            # A -shm deleted since: closed as usual, the connection could apply the -wal through an index
            # that lacks the commits of the processes that opened the week since, and delete it (_let_go_shm).
            if week in self._damaged or (shm is not None and self._file_of(_shm_of(self.path(week))) != shm):
                _close_leaving_wal(connection, self.path(week), self.busy_timeout)
                continue
            connection.close()


def _repost(
    index: int,
    document: Mapping[str, Any],
    found: Original,
    reposts: list[tuple[int, str, str, dict[str, Any]]],
) -> Written:
    """``document`` (batch index ``index``) as a repost of ``found``: its record appended to ``reposts``
    (to be added to the original's after the commit)."""
    record = repost_record(document, found.match, found.distance, found.share, found.partial_of)
    reposts.append((index, found.candidate.week, found.candidate.url, record))
    return Written("repost", document["url"], found.candidate.url)


def _holding_json(url: str) -> str:
    """A LIKE pattern (escaped by ``\\``) of the JSON texts that hold the string ``url`` (as row_of writes
    it: ``ensure_ascii=False``, so only ``"``, ``\\`` and control characters are escaped): it passes over
    most rows without their JSON being parsed."""
    text = json.dumps(url, ensure_ascii=False)[1:-1]
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _filters(
    site: str | None, lower: datetime | None, upper: datetime | None, published: PublishedWindow | None
) -> tuple[list[str], list[object]]:
    """The SQL conditions, and their parameters, of ``site``, ``lower <= first_seen < upper`` and the
    ``published`` window: the text range of the values that may be in it (the index on site and published
    finds them for a site), then the instant each value names."""
    conditions = []
    params: list[object] = []
    if site is not None:
        conditions.append("site = ?")
        params.append(site)
    if lower is not None:
        conditions.append("first_seen >= ?")
        params.append(format_timestamp(lower))
    if upper is not None:
        conditions.append("first_seen < ?")
        params.append(format_timestamp(upper))
    if published is not None:
        for condition, bound in (
            ("published >= ?", published.start),
            ("published < ?", published.end),
            ("published_utc(published) >= ?", published.lower),
            ("published_utc(published) < ?", published.upper),
        ):
            if bound is not None:
                conditions.append(condition)
                params.append(bound)
    return conditions, params


def _index_phrases(term: str) -> list[str]:
    """The phrases of the search index that every document ``matches`` for ``term`` holds: the whole term
    when it is a Latin word or phrase (matched at word boundaries), each run of CJK characters when it has
    some (matched anywhere, so its Latin part may be inside a longer word); none without a word
    character."""
    if CJK_RE.search(term):
        return [search_text(run) for run in CJK_RUN_RE.findall(term)]
    return [term] if _WORD_CHAR_RE.search(term) else []


# How Python's sqlite3 says a TEXT value is not UTF-8 (an OperationalError with no SQLite error code).
_NOT_UTF8 = "Could not decode to UTF-8"


def _lenient_text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


def _read_error(
    what: str, exc: sqlite3.Error, path: Path, directory: Path | None = None, busy: str = ""
) -> StoreError:
    """The error for ``what`` failed (``cannot open/read the article store PATH``) on ``exc``: what to do
    when SQLite cannot make the ``-shm`` file of the week's file ``path`` (a full disk, or a folder that
    cannot be written: every week of it fails alike, so no week is skipped for it); a
    :class:`DamagedWeekError` with what to do when that file is damaged or unreadable; else, with the
    store's ``directory``, what to do when its disk is full, and ``busy`` (the :func:`_busy_hint` of a
    file kept locked)."""
    if getattr(exc, "sqlite_errorcode", None) in _SHM_CODES:
        return StoreError(
            f"{what}: {exc}; SQLite could not make {path.name}-shm, which it reads the file with, beside it:"
            f" free disk space under {path.parent}{_size_limit_hint()} (the week's file is not damaged)"
        )
    if _folder_unwritable(exc, path):
        return StoreError(
            f"{what}: {exc}; SQLite makes {path.name}-shm beside the week's file to read it, and"
            f" {path.parent} cannot be written (the week's file is not damaged): make {path.parent} writable"
            " by the crawler's user (chattr -i for a folder marked immutable), remount its disk read-write,"
            " or copy the data folder to a disk that can be written and read the copy (--data-dir DIR)"
        )
    hint = _damage_hint(exc, path)
    if hint:
        return DamagedWeekError(f"{what}: {exc}{hint}")
    full = _disk_hint(exc, directory) if directory is not None else ""
    return StoreError(f"{what}: {exc}{full}{busy}")


def _read_in_place(path: Path) -> bool:
    """Whether the week's file ``path`` is read as it is (SQLite's ``immutable``: no lock, no ``-shm``
    file): in a folder that cannot be written (a backup on a read-only disk, a folder of mode 0555 or
    marked immutable), where SQLite cannot make the -shm file it reads a file in WAL mode with, and with no
    ``-wal`` file beside it, whose writes only a -shm would let it read: what the file holds is all there
    is, and nothing can write it meanwhile."""
    return not os.access(path.parent, os.W_OK) and not _wal_of(path).exists()


def _folder_unwritable(exc: sqlite3.Error, path: Path) -> bool:
    """Whether SQLite could not open the readable week's file ``path`` (``SQLITE_CANTOPEN``) for want of
    its ``-shm`` file, which it cannot make in a folder that cannot be written (a read-only disk, one
    marked immutable, no write permission)."""
    shm = path.with_name(path.name + "-shm")
    return (
        sqlite_code(exc) == sqlite3.SQLITE_CANTOPEN
        and path.is_file()
        and os.access(path, os.R_OK)
        and not shm.exists()
        and not os.access(path.parent, os.W_OK)
    )


def _damage_hint(exc: sqlite3.Error, path: Path) -> str:
    """What to do with the week's file ``path`` that SQLite finds damaged (not a database, or malformed)
    or cannot open or read; empty for any other error. A ``-wal`` file beside it that holds writes (one
    a writer killed while writing leaves) is named, with its ``-shm``: SQLite would apply it to a backup
    copied in beside it."""
    code = sqlite_code(exc)
    if code not in _DAMAGED_CODES | _UNREADABLE_CODES:
        return ""
    restore = _restore_advice(path)
    if code in _DAMAGED_CODES:
        return f"; the file is damaged: {restore}"
    return f"; the file cannot be read: make it a file the crawler's user may read and write, {restore}"


def _restore_advice(path: Path) -> str:
    """What to do with the week's file ``path`` that cannot be read: restore it or move it out, with the
    ``-wal`` and ``-shm`` files that hold writes beside it."""
    restore = (
        "restore it from a backup (docs/operations.md, 'Backing up a week'), or move it out of the folder to"
        " go on without that week's articles"
    )
    leftovers = _wal_leftovers(path)
    if leftovers:
        restore += (
            f"; move {' and '.join(leftovers)} out of the folder with it, every crawler on the folder stopped"
            " first: SQLite applies the writes of a -wal file to the database file of its name, a backup"
            " copied in too"
        )
    return restore


def _emptied(path: Path) -> bool:
    """Whether the week's file ``path`` is empty (0 bytes) and was last changed ``_MAKING_SECONDS`` ago or
    more: the crawler makes a week's file with its tables in it, so what it held was lost. A younger one
    may be a file another process is making."""
    try:
        found = path.stat()
    except OSError:
        return False
    return not found.st_size and time.time() - found.st_mtime >= _MAKING_SECONDS


def _remove_unmade(path: Path) -> None:
    """Remove the week's file ``path`` that this store created but could not make (its tables not written:
    a full disk, `ulimit -f`), when it is still empty: left there, it would be taken for a week's file
    emptied, its articles lost (:func:`_emptied`), once the disk lets the crawler write again."""
    try:
        if not path.stat().st_size:
            path.unlink()
    except OSError as exc:
        logger.debug("could not remove the empty article store %s it failed to make: %s", path, exc)


def _check_not_emptied(path: Path, *, at_once: bool = False) -> None:
    """A DamagedWeekError when the week's file ``path`` was emptied (:func:`_emptied`; ``at_once``: found
    emptied while open, whatever its age). SQLite would read it as an empty week, and the store's opening
    would write the tables into it, hiding the loss."""
    if not (at_once or _emptied(path)):
        return
    raise DamagedWeekError(
        f"cannot open the article store {path}: the file is empty (0 bytes), where the crawler makes a"
        " week's file with its tables in it: what it held is lost (a copy or restore onto it that failed, a"
        f" redirection `>` onto it, or a crawler killed as it made the file); {_restore_advice(path)}"
    )


def _damaged_hint(exc: sqlite3.Error, path: Path) -> str:
    """What to do with the week's file ``path`` that a write finds damaged (not a database, malformed):
    as for a read; empty for any other error (a write's failing I/O is a disk's: :func:`_disk_hint`)."""
    return _damage_hint(exc, path) if sqlite_code(exc) in _DAMAGED_CODES else ""


def _shm_frozen(path: Path) -> bool:
    """Whether the ``-shm`` file of the week's file ``path`` can no longer be written (marked immutable,
    ``chattr +i``, or made read-only): a connection that mapped it before would kill the process with
    SIGBUS on its next read or write of the week, or as it closes. A connection opened on such a file maps
    it read-only, which SQLite handles."""
    shm = path.with_name(path.name + "-shm")
    return not os.access(shm, os.W_OK) and shm.exists()


def _check_shm_writable(path: Path, directory: Path) -> None:
    """Raise a StoreError when the ``-shm`` file of the week's file ``path``, which an open connection has
    mapped, is :func:`_shm_frozen`."""
    if not _shm_frozen(path):
        return
    shm = path.with_name(path.name + "-shm")
    raise StoreError(
        f"cannot use the article store {path}: {shm.name} beside it was made read-only (or immutable)"
        " while this process had the week open, and SQLite would crash the process on it"
        f"{_writable_hint(directory)}"
    ) from PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(shm))


def _wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _shm_of(path: Path) -> Path:
    return path.with_name(path.name + "-shm")


def _check_article_store(connection: sqlite3.Connection, path: Path) -> None:
    """A DamagedWeekError when the file ``path`` at a week's name holds tables but no schema version: another
    program's database (put there by `mv` or `cp`), which opening would switch to WAL mode and write the
    crawler's tables into, its articles beside that program's tables. The crawler makes a week's file with
    its tables and its version in one transaction, which another process may commit as this one opens the
    file: the version and the tables are read in one statement, one snapshot of the file (read apart, a
    version of 0 read before that commit and its tables after it took the new week for another program's
    file). One read of the file's header, as it is opened."""
    query = (
        "SELECT name FROM sqlite_master WHERE type = 'table'"
        " AND (SELECT user_version FROM pragma_user_version) = 0 ORDER BY name LIMIT 4"
    )
    names = [name for (name,) in connection.execute(query)]
    if names:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise DamagedWeekError(
            f"cannot open the article store {path}: the file is no week of articles but another program's"
            f" SQLite database (its tables: {shown}; no schema version), put at a week's name: move it out of"
            " the folder; the week's file is made anew when an article is next stored in that week"
        )


def _truncating_checkpoint(connection: sqlite3.Connection, busy: str) -> str:
    """Apply the -wal of ``connection``'s file to the file and empty it (``wal_checkpoint(TRUNCATE)``): ""
    when done, ``busy`` when another process's read kept it from the end, else SQLite's error."""
    try:
        kept_from_it, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        return str(exc)
    return busy if kept_from_it else ""


def _checkpoint_moved(connection: sqlite3.Connection, path: Path) -> bool:
    """Apply the -wal of ``connection``'s file, moved away from ``path`` (or deleted), to that file, and
    empty it (TRUNCATE), so that the articles committed into the file are in it wherever it went, and the
    -wal left at ``path`` holds nothing that a file put there next could take for its own. A failure is
    said, not raised (False): the store goes on with the file at the path."""
    failure = _truncating_checkpoint(connection, "another process read it meanwhile")
    if failure:
        logger.warning(
            "cannot apply the -wal left at %s to the file moved away from there (%s): the articles written"
            " into that file since its last checkpoint may be missing from it; move a week's file with its"
            " -wal and -shm files (docs/storage.md)",
            path,
            failure,
        )
    return not failure


def _close_leaving_wal(
    connection: sqlite3.Connection, path: Path, busy_timeout: float, *, emptied: bool = False
) -> None:
    """Close ``connection`` to the damaged week's file ``path`` without applying the writes of the
    ``-wal`` file beside it to that file: the -wal stays, as the error's hint says, to be moved out with it.
    SQLite checkpoints a file, and deletes its -wal, as the file's last connection closes, under the file's
    exclusive lock (Python 3.11 cannot set SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): a read-only connection that
    holds the file's shared lock meanwhile keeps it from that, and does not checkpoint as it closes in
    turn. Its read waits for another process's lock (a recovery of the -wal, a connection in exclusive
    locking mode) up to the store's ``busy_timeout``, as the store's other connections do, then closes
    ``connection`` without it. A file that cannot be opened again read-only (moved away, made unreadable)
    is closed as usual. A file ``emptied`` (0 bytes): the read-only connection, finding it so, deletes its
    -wal (as SQLite does for a database of no pages, so that the file made anew does not take the -wal's
    pages for its own) and is no WAL connection, so it keeps the shared lock only in exclusive locking
    mode."""
    try:
        holder = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=busy_timeout)
    except sqlite3.Error:
        connection.close()
        return
    try:
        # Any read opens the -wal and takes the shared lock, which SQLite keeps in WAL mode even when the
        # read fails on the damaged file.
        with suppress(sqlite3.Error):
            if emptied:
                holder.execute("PRAGMA locking_mode = EXCLUSIVE")
            holder.execute("PRAGMA user_version").fetchone()
        connection.close()
    finally:
        holder.close()


def _wal_leftovers(path: Path) -> list[str]:
    """The names of the ``-wal`` and ``-shm`` files beside the week's file ``path`` when its ``-wal``
    holds writes (an empty one is an open connection's)."""
    wal = _wal_of(path)
    try:
        if wal.stat().st_size == 0:
            return []
    except OSError:
        return []
    shm = path.with_name(path.name + "-shm")
    return [wal.name] + ([shm.name] if shm.exists() else [])


def _disk_hint(exc: sqlite3.Error, directory: Path) -> str:
    """What to do when SQLite cannot write a week's file to its disk: full (``SQLITE_FULL``), failing
    to write (``SQLITE_IOERR``, which a file grown past its size limit gives too), or read-only
    (``SQLITE_READONLY``: the file, or its folder, or its disk, cannot be written by this user)."""
    code = sqlite_code(exc)
    if code == sqlite3.SQLITE_READONLY:
        return _writable_hint(directory)
    if code not in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
        return ""
    limit = _size_limit_hint() if code == sqlite3.SQLITE_IOERR else ""
    return f"; free disk space under {directory}, or mend its disk{limit}"


def _size_limit_hint() -> str:
    """The file size limit (``ulimit -f``) of this process to raise, which SQLite fails on with a disk I/O
    error as on a full disk; empty without one."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return ""
    return f", or raise the file size limit of the crawler's processes (`ulimit -f`: {limit} bytes)"


def _week_unread(exc: StoreError) -> bool:
    """Whether ``exc`` is of a week's file that cannot be read, which a read across weeks of a store
    opened with ``skip_damaged`` leaves out: damaged or unreadable, or no room for its ``-shm`` file."""
    cause = exc.__cause__
    return isinstance(exc, DamagedWeekError) or (
        isinstance(cause, sqlite3.Error) and getattr(cause, "sqlite_errorcode", None) in _SHM_CODES
    )


def _create_hint(exc: sqlite3.Error, directory: Path) -> str:
    """What to do when SQLite cannot create a week's file in ``directory``: a folder no file can be made
    in (``SQLITE_CANTOPEN``: no write permission, immutable, a read-only disk), or as for a write."""
    if sqlite_code(exc) == sqlite3.SQLITE_CANTOPEN:
        return _writable_hint(directory)
    return _disk_hint(exc, directory)


def _writable_hint(directory: Path) -> str:
    return (
        f"; make {directory} and its files writable by the crawler's user (a file marked immutable too:"
        " chattr -i), or remount its disk read-write"
    )


def _busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (``SQLITE_BUSY``)."""
    return sqlite_code(exc) == sqlite3.SQLITE_BUSY


def _busy_hint(
    exc: sqlite3.Error, path: Path, timeout: float, needed_for: str = "", *, holder: int | None = None
) -> str:
    """What to do when the week's file ``path`` stayed locked by another writer past the busy
    ``timeout`` (``SQLITE_BUSY``): the crawler's own writes are short, so it is a transaction left open, or
    a process stopped (SIGSTOP) in one, named when it can be found (``holder``, else :func:`_lock_holder`);
    ``needed_for`` says what the lock was wanted for, and who else may hold it, when not for a write."""
    if not _busy(exc):
        return ""
    if holder is None:
        holder = _lock_holder(path)
    who = "another process" if holder is None else f"process {holder}"
    held = f"; {who} held the write lock of {path} for over {timeout:g} s (the busy timeout){needed_for}"
    if holder is not None and process_stopped(holder):
        return (
            f"{held}, and is stopped (SIGSTOP, Ctrl-Z) in its write transaction: `kill -CONT {holder}` lets"
            " it finish (or end it); what waits for the lock is stored once it lets go"
        )
    return (
        f"{held}: a sqlite3 shell or a script in a write transaction"
        f"{', or another crawler upgrading the file (a large week takes a while)' if needed_for else ''};"
        f" end it (`fuser {path}` names the processes that have the file open)"
    )


# SQLite's write lock of a file in WAL mode: a POSIX lock on this byte of its -shm file (WALINDEX_LOCK_OFFSET
# 120 + WAL_WRITE_LOCK 0, in sqlite3's os_unix.c); and Linux's struct flock (type, whence, start, length,
# pid), the layout F_GETLK reads and writes.
_WAL_WRITE_LOCK_BYTE = 120
_FLOCK = "hhqqi4x"


def _lock_holder(path: Path) -> int | None:
    """The pid of the process on this machine that holds the write lock of the week's file ``path``, asked
    of the kernel (F_GETLK on its -shm file: one system call, made only when a write found it locked); None
    where it cannot be known (not Linux, a lock of another machine's, let go since, no -shm file)."""
    if sys.platform != "linux":
        return None
    try:
        descriptor = os.open(f"{path}-shm", os.O_RDONLY)
    except OSError:
        return None
    try:
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _WAL_WRITE_LOCK_BYTE, 1, 0)
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(descriptor, fcntl.F_GETLK, asked))
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return pid if kind != fcntl.F_UNLCK and pid > 0 else None
