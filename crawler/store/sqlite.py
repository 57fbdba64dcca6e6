"""The embedded store: one SQLite file per ISO week, ``<data_dir>/articles/articles_2026w47.sqlite``.

Each file is created when first written, in WAL mode with ``synchronous=NORMAL`` (a commit survives the
process being killed; the last commits before a power cut may be lost until :meth:`SqliteStore.flush`
checkpoints them), and holds one table ``articles`` with the document fields of :mod:`crawler.store.base`
as columns (``fields`` and ``extraction`` as JSON text), the URL UNIQUE, and indexes on ``id``,
``(site, published)``, ``content_hash``, ``first_seen`` and ``(site, first_seen)``.

Several processes may write the same week at once (workers on one machine): writes take the file's write
lock at once (``BEGIN IMMEDIATE``) and wait up to ``busy_timeout`` seconds for it; the URL check and the
``INSERT ... ON CONFLICT(url) DO UPDATE`` run in that one transaction, so a URL never gets two rows.
``PRAGMA user_version`` holds the schema version.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from crawler.store.base import (
    DOCUMENT_FIELDS,
    Store,
    StoreError,
    format_timestamp,
    make_document,
    parse_timestamp,
    parse_week,
    previous_week,
    week_bounds,
)

__all__ = ["BUSY_TIMEOUT_SECONDS", "SCHEMA_VERSION", "SqliteStore"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# Seconds a write waits for another process's transaction on the same week's file.
BUSY_TIMEOUT_SECONDS = 30.0
# Rows read per query by iter_articles (keyset pages: no statement stays open between pages).
_PAGE_SIZE = 500
_FILE_RE = re.compile(r"^articles_(\d{4}w\d{2})\.sqlite$")
_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_JSON_COLUMNS = frozenset({"fields", "extraction"})
_COLUMNS = ", ".join(DOCUMENT_FIELDS)
_WEEK = DOCUMENT_FIELDS.index("week")
_FIRST_SEEN = DOCUMENT_FIELDS.index("first_seen")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS articles (
        id TEXT NOT NULL,
        url TEXT NOT NULL UNIQUE,
        site TEXT NOT NULL,
        title TEXT,
        body TEXT,
        published TEXT,
        author TEXT,
        fields TEXT NOT NULL,
        fetched_at TEXT NOT NULL,
        first_seen TEXT NOT NULL,
        week TEXT NOT NULL,
        extraction TEXT,
        content_hash TEXT,
        job TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS articles_id ON articles (id)",
    "CREATE INDEX IF NOT EXISTS articles_site_published ON articles (site, published)",
    "CREATE INDEX IF NOT EXISTS articles_content_hash ON articles (content_hash)",
    "CREATE INDEX IF NOT EXISTS articles_first_seen ON articles (first_seen)",
    "CREATE INDEX IF NOT EXISTS articles_site_first_seen ON articles (site, first_seen)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)
# A re-fetch replaces every field but id, url, first_seen and week; an older fetch changes nothing.
_UPDATED = [name for name in DOCUMENT_FIELDS if name not in {"id", "url", "first_seen", "week"}]
_UPSERT = (
    f"INSERT INTO articles ({_COLUMNS}) VALUES ({', '.join('?' for _ in DOCUMENT_FIELDS)})"
    f" ON CONFLICT (url) DO UPDATE SET {', '.join(f'{name} = excluded.{name}' for name in _UPDATED)}"
    " WHERE excluded.fetched_at >= articles.fetched_at"
)


class SqliteStore(Store):
    """Articles in weekly SQLite files under ``<data_dir>/articles``; ``upsert_many`` writes
    ``batch_size`` articles per transaction."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        batch_size: int = 100,
        busy_timeout: float = BUSY_TIMEOUT_SECONDS,
    ) -> None:
        if batch_size < 1:
            raise StoreError(f"STORE_BATCH_SIZE is {batch_size!r}: expected a whole number of at least 1")
        self.directory = Path(data_dir) / "articles"
        self.batch_size = batch_size
        self.busy_timeout = busy_timeout
        self._connections: dict[str, sqlite3.Connection] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.directory)!r})"

    def path(self, week: str) -> Path:
        """The file of the week named ``week``."""
        parse_week(week)
        return self.directory / f"articles_{week}.sqlite"

    # --- writing ----------------------------------------------------------------------------------------

    def upsert_many(self, articles: Iterable[Mapping[str, Any]]) -> int:
        documents = [make_document(article) for article in articles]
        rows = [_row(document) for document in documents]
        new = 0
        for start in range(0, len(documents), self.batch_size):
            by_week: dict[str, list[tuple[str, Sequence[object]]]] = {}
            batch = documents[start : start + self.batch_size]
            homes = self._homes(batch)
            for document, row, home in zip(batch, rows[start : start + self.batch_size], homes, strict=True):
                by_week.setdefault(home, []).append((document["url"], row))
            for week, writes in by_week.items():
                new += self._write(week, writes)
        return new

    def _homes(self, documents: Sequence[Mapping[str, Any]]) -> list[str]:
        """The week each document is written to: the week before its own if that week holds its URL."""
        urls_by_previous: dict[str, list[str]] = {}
        for document in documents:
            urls_by_previous.setdefault(previous_week(document["week"]), []).append(document["url"])
        held: set[tuple[str, str]] = set()
        for week, urls in urls_by_previous.items():
            connection = self._open(week, create=False)
            if connection is None:
                continue
            marks = ", ".join("?" for _ in urls)
            query = f"SELECT url FROM articles WHERE url IN ({marks})"
            try:
                held.update((week, url) for (url,) in connection.execute(query, urls))
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the article store {self.path(week)}: {exc}") from exc
        homes = []
        for document in documents:
            previous = previous_week(document["week"])
            homes.append(previous if (previous, document["url"]) in held else document["week"])
        return homes

    def _write(self, week: str, writes: Sequence[tuple[str, Sequence[object]]]) -> int:
        """Upsert ``writes`` (url, row) into the week's file in one transaction; returns how many were new."""
        connection = self._open(week, create=True)
        assert connection is not None  # created when missing
        new = 0
        try:
            connection.execute("BEGIN IMMEDIATE")
            for url, row in writes:
                known = connection.execute("SELECT 1 FROM articles WHERE url = ?", (url,)).fetchone()
                values = list(row)
                values[_WEEK] = week
                connection.execute(_UPSERT, values)
                new += known is None
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise StoreError(
                f"cannot write {len(writes)} article(s) (first {writes[0][0]}) to {self.path(week)}: {exc}"
            ) from exc
        return new

    # --- reading ----------------------------------------------------------------------------------------

    def get(self, url_or_id: str) -> dict[str, Any] | None:
        column = "id" if _ID_RE.match(url_or_id) else "url"
        query = f"SELECT {_COLUMNS} FROM articles WHERE {column} = ? LIMIT 1"
        for week in reversed(self.weeks()):
            row = self._query(week, query, (url_or_id,)).fetchone()
            if row is not None:
                return _document(row)
        return None

    def count(self, site: str | None = None, week: str | None = None) -> int:
        weeks = self._weeks_asked(week)
        query = "SELECT count(*) FROM articles" + (" WHERE site = ?" if site is not None else "")
        params = () if site is None else (site,)
        total = 0
        for name in weeks:
            (number,) = self._query(name, query, params).fetchone()
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
    ) -> Iterator[dict[str, Any]]:
        if limit is not None and limit < 0:
            raise StoreError(f"limit {limit!r} is negative: expected None (no limit) or a count of 0 or more")
        lower = None if since is None else parse_timestamp(since, "since")
        upper = None if until is None else parse_timestamp(until, "until")
        weeks = [
            name
            for name in self._weeks_asked(week)
            if (lower is None or week_bounds(name)[1] > lower)
            and (upper is None or week_bounds(name)[0] < upper)
        ]
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
        return self._iter(weeks, conditions, params, newest_first, limit)

    def _iter(
        self,
        weeks: list[str],
        conditions: list[str],
        params: list[object],
        newest_first: bool,
        limit: int | None,
    ) -> Iterator[dict[str, Any]]:
        order, after = ("DESC", "<") if newest_first else ("ASC", ">")
        left = limit
        for week in sorted(weeks, reverse=newest_first):
            last: tuple[object, object] | None = None
            while left is None or left > 0:
                where = [*conditions, f"(first_seen, rowid) {after} (?, ?)"] if last else conditions
                page = _PAGE_SIZE if left is None else min(_PAGE_SIZE, left)
                query = (
                    f"SELECT rowid, {_COLUMNS} FROM articles"
                    + (f" WHERE {' AND '.join(where)}" if where else "")
                    + f" ORDER BY first_seen {order}, rowid {order} LIMIT {page}"
                )
                rows = self._query(week, query, [*params, *(last or ())]).fetchall()
                for row in rows:
                    yield _document(row[1:])
                if left is not None:
                    left -= len(rows)
                if len(rows) < page:
                    break
                last = (rows[-1][_FIRST_SEEN + 1], rows[-1][0])

    def weeks(self) -> list[str]:
        self._check_open()
        if not self.directory.is_dir():
            return []
        return sorted(match[1] for path in self.directory.iterdir() if (match := _FILE_RE.match(path.name)))

    def _weeks_asked(self, week: str | None) -> list[str]:
        if week is None:
            return self.weeks()
        parse_week(week)
        return [week] if self.path(week).exists() else []

    def _query(self, week: str, query: str, params: Sequence[object]) -> sqlite3.Cursor:
        connection = self._open(week, create=False)
        if connection is None:
            raise StoreError(f"the article store {self.path(week)} disappeared while being read")
        try:
            return connection.execute(query, params)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the article store {self.path(week)}: {exc}") from exc

    # --- connections ------------------------------------------------------------------------------------

    def _open(self, week: str, *, create: bool) -> sqlite3.Connection | None:
        """The connection to the week's file, opened (and the file created if ``create``) on first use."""
        self._check_open()
        connection = self._connections.get(week)
        if connection is not None:
            return connection
        path = self.path(week)
        if not create and not path.exists():
            return None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(path, timeout=self.busy_timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the article store {path}: {exc}") from exc
        try:
            _prepare(connection, path)
        except sqlite3.Error as exc:
            connection.close()
            raise StoreError(f"cannot open the article store {path}: {exc}") from exc
        except StoreError:
            connection.close()
            raise
        logger.debug("opened the article store %s", path)
        self._connections[week] = connection
        return connection

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the article store under {self.directory} is closed")

    def flush(self) -> None:
        for week, connection in self._connections.items():
            try:
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot checkpoint the article store {self.path(week)}: {exc}") from exc

    def close(self) -> None:
        connections, self._connections = self._connections, {}
        self._closed = True
        for connection in connections.values():
            connection.close()


def _prepare(connection: sqlite3.Connection, path: Path) -> None:
    """WAL mode, NORMAL sync and the schema (created by whichever process comes first)."""
    (mode,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
    if str(mode).lower() != "wal":
        raise StoreError(
            f"the article store {path} cannot use write-ahead logging (journal mode stays {mode!r}):"
            " put CRAWLER_DATA_DIR on a local file system"
        )
    connection.execute("PRAGMA synchronous = NORMAL")
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the article store {path} has schema version {version}, newer than this crawler's"
            f" {SCHEMA_VERSION}: upgrade the crawler to read it"
        )
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute("COMMIT")
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")


def _row(document: Mapping[str, Any]) -> tuple[object, ...]:
    """Column values of ``document`` in DOCUMENT_FIELDS order, JSON columns encoded."""
    values: list[object] = []
    for name in DOCUMENT_FIELDS:
        value = document[name]
        if name in _JSON_COLUMNS and value is not None:
            try:
                value = json.dumps(value, ensure_ascii=False, sort_keys=True)
            except (TypeError, ValueError) as exc:
                raise StoreError(
                    f"article {document['url']}: field {name!r} cannot be stored as JSON ({exc}):"
                    " expected strings, numbers, booleans, None, lists and mappings"
                ) from None
        values.append(value)
    return tuple(values)


def _document(row: Sequence[object]) -> dict[str, Any]:
    """The document of a row read in DOCUMENT_FIELDS order."""
    document = dict(zip(DOCUMENT_FIELDS, row, strict=True))
    for name in _JSON_COLUMNS:
        value = document[name]
        if isinstance(value, str):
            document[name] = json.loads(value)
    return document
