"""The schema of the weekly SQLite files (:mod:`crawler.store.sqlite` describes them): tables, indexes,
search index and triggers, rows to documents and back, and the migrations of older files.

The search index is a contentless FTS5 table of words (``unicode61``, diacritics folded) over the title
and body with a space put around every CJK character (:func:`search_text`), so a Chinese term is a phrase
of characters and needs no word segmentation. It indexes about four times faster than the trigram
tokenizer of schema version 3 (0.23 ms against 0.96 ms for a 4 KB article), and a term of one or two
characters can use it too. The crawler keeps it in step (:func:`index_search`): SQLite cannot compute the
spaced text in a trigger.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crawler.errors import StoreError
from crawler.store import fingerprint
from crawler.store.base import sqlite_code
from crawler.store.document import DOCUMENT_FIELDS, UPDATED_FIELDS, make_document
from extractors.text import CJK_RE

__all__ = [
    "COLUMNS",
    "INSERT",
    "QREAD_BODY",
    "REPOSTS_COUNTED",
    "SCHEMA_VERSION",
    "UPDATE",
    "UPDATED_COLUMNS",
    "document_of",
    "index_bands",
    "index_phrases",
    "index_search",
    "paragraph_counts",
    "prepare",
    "row_of",
    "search_text",
    "unindex_search",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 8
# The columns that hold JSON, each with what it is read as when it does not parse (JSON, each read a new
# value): that of a document that has none.
_UNREADABLE_JSON = {
    "fields": "{}",
    "extraction": "null",
    "summary": "{}",
    "reposts": "[]",
    "redirected_from": "[]",
}
_JSON_COLUMNS = frozenset(_UNREADABLE_JSON)
# A row's reposts, and whether its body came from qRead (1 or 0), in SQL: a JSON column that does not parse
# counts as document_of reads it (SQLite's JSON functions fail on it, and CASE alone evaluates lazily).
REPOSTS_COUNTED = "CASE WHEN json_valid(reposts) THEN json_array_length(reposts) ELSE 0 END"
QREAD_BODY = (
    "CASE WHEN json_valid(extraction) THEN json_extract(extraction, '$.body_from') = 'qread' ELSE 0 END"
)
COLUMNS = ", ".join(DOCUMENT_FIELDS)

_TABLES = (
    """CREATE TABLE articles (
        pk INTEGER PRIMARY KEY,
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
        simhash TEXT,
        summary TEXT,
        reposts TEXT NOT NULL DEFAULT '[]',
        job TEXT,
        redirected_from TEXT NOT NULL DEFAULT '[]'
    )""",
    "CREATE INDEX articles_id ON articles (id)",
    "CREATE INDEX articles_site_published ON articles (site, published)",
    "CREATE INDEX articles_content_hash ON articles (content_hash)",
    "CREATE INDEX articles_first_seen ON articles (first_seen, id)",
    "CREATE INDEX articles_site_first_seen ON articles (site, first_seen, id)",
)
# A band key of each SimHash with the SimHash itself (signed, as SQLite keeps integers): the lookup reads
# the keys' rows from the index alone and keeps those within the distance before it reads any article.
_BANDS = (
    "CREATE TABLE simhash_bands (key INTEGER NOT NULL, pk INTEGER NOT NULL, simhash INTEGER NOT NULL)",
    "CREATE INDEX simhash_bands_key ON simhash_bands (key, simhash, pk)",
    "CREATE INDEX simhash_bands_pk ON simhash_bands (pk)",
)
# Each document's anchors (fingerprint.Phrases.anchors: a lookup of the documents a body is a part of, or
# holds), and in how many stored documents each paragraph occurs (fingerprint.paragraph_hashes: a paragraph
# in several is boilerplate). A document deleted takes its anchors; its paragraphs stay counted.
_PHRASES = (
    "CREATE TABLE anchors (key INTEGER NOT NULL, pk INTEGER NOT NULL)",
    "CREATE INDEX anchors_key ON anchors (key, pk)",
    "CREATE INDEX anchors_pk ON anchors (pk)",
    "CREATE TABLE paragraphs (hash INTEGER PRIMARY KEY, documents INTEGER NOT NULL)",
    """CREATE TRIGGER articles_anchors_delete AFTER DELETE ON articles BEGIN
        DELETE FROM anchors WHERE pk = old.pk;
    END""",
)
_SEARCH = (
    """CREATE VIRTUAL TABLE articles_fts USING fts5(
        title, body, content='', tokenize='unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER articles_bands_delete AFTER DELETE ON articles BEGIN
        DELETE FROM simhash_bands WHERE pk = old.pk;
    END""",
)
# The search index of schema version 3 (trigram, external content, kept by triggers).
_OLD_SEARCH = (
    "DROP TRIGGER IF EXISTS articles_fts_insert",
    "DROP TRIGGER IF EXISTS articles_fts_update",
    "DROP TRIGGER IF EXISTS articles_fts_delete",
    "DROP TABLE IF EXISTS articles_fts",
)
# The rows that record reposts or the URLs that redirected to them (5 in 100 in a store of news): looking a
# URL up in those columns reads these rows alone, not every row of every week (version 8).
_RECORDED = (
    "CREATE INDEX IF NOT EXISTS articles_reposted ON articles (pk) WHERE reposts != '[]'",
    "CREATE INDEX IF NOT EXISTS articles_redirected ON articles (pk) WHERE redirected_from != '[]'",
)
# The strings of the redirected_from of the row named {row}, in SQL (a table j of value and type): none
# when the column is no JSON array (written by another program, or damaged on disk: document_of reads []).
_REDIRECT_URLS = (
    "json_each(CASE WHEN json_valid({row}.redirected_from) AND json_type({row}.redirected_from) = 'array'"
    " THEN {row}.redirected_from ELSE '[]' END) AS j"
)
_REDIRECTED_ROWS = (
    f"SELECT j.value, a.pk FROM articles AS a, {_REDIRECT_URLS.format(row='a')}"
    " WHERE a.redirected_from != '[]' AND j.type = 'text'"
)
_NEW_REDIRECTS = (
    "INSERT OR IGNORE INTO redirects (url, pk) SELECT j.value, new.pk"
    f" FROM {_REDIRECT_URLS.format(row='new')} WHERE j.type = 'text'"
)
# Each URL of each article's redirected_from with the article's pk: redirected_to finds the articles a URL
# redirected to in this index, not by reading every row that records redirects in every week. Triggers keep
# it in step with every write that changes the column. Made in a version 8 file that lacks it with no version
# bump, as articles_qread: an older crawler of version 8 reads and writes a file that has it, its writes
# kept in step by the triggers.
_REDIRECTS = (
    "CREATE TABLE redirects (url TEXT NOT NULL, pk INTEGER NOT NULL, PRIMARY KEY (url, pk)) WITHOUT ROWID",
    "CREATE INDEX redirects_pk ON redirects (pk)",
    f"""CREATE TRIGGER articles_redirects_insert AFTER INSERT ON articles
        WHEN new.redirected_from != '[]' BEGIN
        {_NEW_REDIRECTS};
    END""",
    f"""CREATE TRIGGER articles_redirects_update AFTER UPDATE OF redirected_from ON articles BEGIN
        DELETE FROM redirects WHERE pk = old.pk;
        {_NEW_REDIRECTS};
    END""",
    """CREATE TRIGGER articles_redirects_delete AFTER DELETE ON articles BEGIN
        DELETE FROM redirects WHERE pk = old.pk;
    END""",
)
_INDEX_REDIRECTS = f"INSERT OR IGNORE INTO redirects (url, pk) {_REDIRECTED_ROWS}"
# A file without the redirects table that cannot be written: a view of this connection alone gives the same
# rows, read from the rows that record redirects (articles_redirected), as before the table.
_REDIRECTS_VIEW = f"CREATE TEMP VIEW redirects (url, pk) AS {_REDIRECTED_ROWS}"
_SCHEMA = _TABLES + _BANDS + _PHRASES + _SEARCH + _RECORDED + _REDIRECTS
# The rows whose body came from qRead, per site: `articles stats` counts them from this index alone, not by
# reading every article's extraction. Made in any file that lacks it with no version bump: an older
# crawler of version 8 reads and writes a file that has it, and SQLite keeps it in step with every write.
_QREAD_INDEX = f"CREATE INDEX IF NOT EXISTS articles_qread ON articles (site) WHERE {QREAD_BODY}"
# Versions 1 to 6 kept no redirected_from: their articles have none.
_ADD_REDIRECTS = "ALTER TABLE articles ADD COLUMN redirected_from TEXT NOT NULL DEFAULT '[]'"
# The first pause between two tries of a journal-mode switch another process holds up, doubled up to the
# last: a switch takes a millisecond or two, and a file is new at most once a week.
_WAL_RETRY_FIRST_PAUSE = 0.002
_WAL_RETRY_LAST_PAUSE = 0.05
_FTS_INSERT = "INSERT INTO articles_fts (rowid, title, body) VALUES (?, ?, ?)"
# A contentless FTS5 row leaves the index by the 'delete' command with the values it was indexed with.
_FTS_DELETE = "INSERT INTO articles_fts (articles_fts, rowid, title, body) VALUES ('delete', ?, ?, ?)"
INSERT = f"INSERT INTO articles ({COLUMNS}) VALUES ({', '.join('?' for _ in DOCUMENT_FIELDS)})"
UPDATE = f"UPDATE articles SET {', '.join(f'{name} = ?' for name in UPDATED_FIELDS)} WHERE pk = ?"
# Where the updated fields sit in a row of row_of().
UPDATED_COLUMNS = [DOCUMENT_FIELDS.index(name) for name in UPDATED_FIELDS]


def index_bands(connection: sqlite3.Connection, pk: int, simhash: str | None) -> None:
    connection.execute("DELETE FROM simhash_bands WHERE pk = ?", (pk,))
    if simhash is not None:
        value = fingerprint.from_hex(simhash)
        signed = value - (1 << 64) if value >> 63 else value
        connection.executemany(
            "INSERT INTO simhash_bands (key, pk, simhash) VALUES (?, ?, ?)",
            [(key, pk, signed) for key in fingerprint.band_keys(value)],
        )


def index_phrases(
    connection: sqlite3.Connection, pk: int, phrases: fingerprint.Phrases, paragraphs: Sequence[int] = ()
) -> None:
    """Keep article ``pk``'s anchors (in place of its old ones), and count its ``paragraphs`` (a new
    document's: an updated one's were counted when it was new)."""
    connection.execute("DELETE FROM anchors WHERE pk = ?", (pk,))
    connection.executemany(
        "INSERT INTO anchors (key, pk) VALUES (?, ?)", [(key, pk) for key in phrases.anchors()]
    )
    connection.executemany(
        "INSERT INTO paragraphs (hash, documents) VALUES (?, 1)"
        " ON CONFLICT (hash) DO UPDATE SET documents = documents + 1",
        [(paragraph,) for paragraph in paragraphs],
    )


def paragraph_counts(connection: sqlite3.Connection, hashes: Sequence[int]) -> dict[int, int]:
    """In how many stored documents of this file each of the paragraph ``hashes`` occurs (those in none
    left out)."""
    if not hashes:
        return {}
    query = f"SELECT hash, documents FROM paragraphs WHERE hash IN ({', '.join('?' for _ in hashes)})"
    return dict(connection.execute(query, list(hashes)).fetchall())


def _index_all_phrases(connection: sqlite3.Connection) -> None:
    """Versions 1 to 5 kept no anchors nor paragraph counts: made from the articles, in the order they were
    first seen."""
    common = fingerprint.common_of(functools.partial(paragraph_counts, connection))
    for pk, body in connection.execute(
        "SELECT pk, body FROM articles WHERE body IS NOT NULL ORDER BY first_seen, pk"
    ).fetchall():
        phrases = fingerprint.Phrases.of(body, common)
        index_phrases(connection, pk, phrases, fingerprint.paragraph_hashes(body))


def search_text(text: str | None) -> str:
    """``text`` as the search index reads it: every CJK character a word of its own."""
    if not text:
        return ""
    return text if text.isascii() else CJK_RE.sub(r" \g<0> ", text)


def index_search(
    connection: sqlite3.Connection,
    pk: int,
    title: str | None,
    body: str | None,
    old: tuple[str | None, str | None] | None = None,
) -> None:
    """Put article ``pk``'s title and body in the search index, after taking out its ``old`` ones."""
    if old is not None:
        connection.execute(_FTS_DELETE, (pk, search_text(old[0]), search_text(old[1])))
    connection.execute(_FTS_INSERT, (pk, search_text(title), search_text(body)))


def unindex_search(connection: sqlite3.Connection, pk: int, title: str | None, body: str | None) -> None:
    """Take article ``pk``'s ``title`` and ``body`` (those stored) out of the search index."""
    connection.execute(_FTS_DELETE, (pk, search_text(title), search_text(body)))


def prepare(connection: sqlite3.Connection, path: Path, timeout: float, *, immutable: bool = False) -> None:
    """WAL mode, NORMAL sync and the schema (created, or migrated from an older version, by whichever
    process comes first), waiting up to ``timeout`` seconds for the other processes that open the file. A
    file opened ``immutable`` (read as it is, never written) keeps its journal mode: SQLite reads one in WAL
    mode as a file without its -wal."""
    mode = "wal" if immutable else _switch_to_wal(connection, timeout)
    if str(mode).lower() != "wal":
        raise StoreError(
            f"the article store {path} cannot use write-ahead logging (journal mode stays {mode!r}):"
            " put CRAWLER_DATA_DIR on a local file system"
        )
    connection.execute("PRAGMA synchronous = NORMAL")
    if _schema_version(connection, path) == SCHEMA_VERSION:
        _index_qread(connection, path)
        _index_redirects(connection, path)
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = _schema_version(connection, path)
        if version == 1:
            _migrate_from_1(connection)
        elif version in (2, 3, 4, 5, 6, 7):
            if version < 7:
                connection.execute(_ADD_REDIRECTS)
            if version < 5:
                _rebuild_bands(connection)
            if version < 4:
                _rebuild_search(connection)
            if version < 6:
                for statement in _PHRASES:
                    connection.execute(statement)
                _index_all_phrases(connection)
            for statement in _RECORDED:
                connection.execute(statement)
            _make_redirects(connection)
        elif version == 0:
            for statement in _SCHEMA:
                connection.execute(statement)
        connection.execute(_QREAD_INDEX)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")


def _switch_to_wal(connection: sqlite3.Connection, timeout: float) -> object:
    """The journal mode after asking for WAL. Two processes switching a new file at once: SQLite answers
    one of them SQLITE_BUSY at once, without the busy timeout (waiting could deadlock), so the switch is
    tried again until ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = _WAL_RETRY_FIRST_PAUSE
    while True:
        try:
            (mode,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, _WAL_RETRY_LAST_PAUSE)
        else:
            return mode


def _index_qread(connection: sqlite3.Connection, path: Path) -> None:
    """Make articles_qread in a version 8 file that lacks it (an older crawler's), unless the file cannot
    be written: stats then reads every article for it, as before."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'articles_qread'"
    if connection.execute(query).fetchone() is not None:
        return
    try:
        connection.execute(_QREAD_INDEX)
    except sqlite3.OperationalError as exc:
        if sqlite_code(exc) != sqlite3.SQLITE_READONLY:
            raise
        logger.debug("the article store %s cannot be written: it is read without articles_qread", path)


def _index_redirects(connection: sqlite3.Connection, path: Path) -> None:
    """Make the redirects table (and its triggers) from the articles in a version 8 file that lacks it (an
    older crawler's), in one transaction, so that a file that has it has it whole; by whichever process
    comes first. A file that cannot be written is read through a view of this connection instead."""
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'redirects'"
    if connection.execute(query).fetchone() is not None:
        return
    try:
        connection.execute("BEGIN IMMEDIATE")
        if connection.execute(query).fetchone() is None:
            _make_redirects(connection)
        connection.execute("COMMIT")
        return
    except sqlite3.OperationalError as exc:
        if sqlite_code(exc) != sqlite3.SQLITE_READONLY:
            raise
        logger.debug("the article store %s cannot be written: it is read without its redirects table", path)
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
    # After the rollback, which would take a view made in the transaction away.
    connection.execute(_REDIRECTS_VIEW)


def _make_redirects(connection: sqlite3.Connection) -> None:
    """The redirects table, its triggers, and its rows for the articles stored (in the caller's
    transaction)."""
    for statement in _REDIRECTS:
        connection.execute(statement)
    connection.execute(_INDEX_REDIRECTS)


def _schema_version(connection: sqlite3.Connection, path: Path) -> int:
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the article store {path} has schema version {version}, newer than this crawler's"
            f" {SCHEMA_VERSION}: upgrade the crawler to read it"
        )
    return int(version)


def _rebuild_bands(connection: sqlite3.Connection) -> None:
    """Version 2 kept 8 band keys of 8 bits per SimHash, versions 3 and 4 kept 4 of 16 bits without the
    SimHash beside them."""
    connection.execute("DROP TABLE IF EXISTS simhash_bands")
    for statement in _BANDS:
        connection.execute(statement)
    for pk, simhash in connection.execute(
        "SELECT pk, simhash FROM articles WHERE simhash IS NOT NULL"
    ).fetchall():
        index_bands(connection, pk, simhash)


def _rebuild_search(connection: sqlite3.Connection) -> None:
    """Versions 2 and 3 kept a trigram index of the raw text, by triggers: the word index replaces it."""
    for statement in _OLD_SEARCH + _SEARCH:
        connection.execute(statement)
    for pk, title, body in connection.execute("SELECT pk, title, body FROM articles").fetchall():
        index_search(connection, pk, title, body)


def _migrate_from_1(connection: sqlite3.Connection) -> None:
    """Version 1 had no pk, SimHash, summary, reposts, redirected_from or search index: rebuild the table
    from its rows (hashes computed afresh)."""
    connection.execute("ALTER TABLE articles RENAME TO articles_v1")
    for statement in (
        "DROP INDEX IF EXISTS " + name
        for name in (
            "articles_id",
            "articles_site_published",
            "articles_content_hash",
            "articles_first_seen",
            "articles_site_first_seen",
        )
    ):
        connection.execute(statement)
    for statement in _SCHEMA:
        connection.execute(statement)
    old_columns = [
        name for name in DOCUMENT_FIELDS if name not in {"simhash", "summary", "reposts", "redirected_from"}
    ]
    rows = connection.execute(
        f"SELECT {', '.join(old_columns)} FROM articles_v1 ORDER BY first_seen, rowid"
    ).fetchall()
    for row in rows:
        old = dict(zip(old_columns, row, strict=True))
        for name in ("fields", "extraction"):
            if isinstance(old[name], str):
                old[name] = json.loads(old[name])
        document = make_document(old)
        document["week"] = old["week"]
        cursor = connection.execute(INSERT, row_of(document))
        assert cursor.lastrowid is not None
        index_bands(connection, cursor.lastrowid, document["simhash"])
        index_search(connection, cursor.lastrowid, document["title"], document["body"])
    connection.execute("DROP TABLE articles_v1")
    _index_all_phrases(connection)


def row_of(document: Mapping[str, Any]) -> tuple[object, ...]:
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


def document_of(row: Sequence[object], path: Path) -> dict[str, Any]:
    """The document of a row of the week's file ``path`` read in DOCUMENT_FIELDS order. A JSON column
    that does not parse (written by another program, or damaged on disk) is read as empty, with a warning
    naming the file, the article, the column and the text it holds."""
    document = dict(zip(DOCUMENT_FIELDS, row, strict=True))
    for name in _JSON_COLUMNS:
        value = document[name]
        if isinstance(value, str):
            try:
                document[name] = json.loads(value)
            except json.JSONDecodeError:
                document[name] = json.loads(_UNREADABLE_JSON[name])
                logger.warning(
                    "the article store %s holds a damaged %r of %s, not JSON: %r; it is read as %r",
                    path,
                    name,
                    document["url"],
                    value[:200],
                    document[name],
                )
    return document
