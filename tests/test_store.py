"""The article store: week names, upserts (idempotent, also across processes), reads, filters and files."""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from test_store_contract import FLOOD, FLOOD_OTHER, FLOOD_REPOST, article

from crawler.store import SqliteStore, StoreError, Written, article_id, open_store, store_config, week_of
from crawler.store.base import Candidate, Original, lasting_failure
from crawler.store.document import (
    content_hash,
    make_document,
    newest_published,
    previous_week,
    week_bounds,
    weeks_between,
)
from crawler.store.fingerprint import band_keys, from_hex, same_article
from crawler.store.sqlite import SCHEMA_VERSION, DamagedWeekError

if TYPE_CHECKING:
    from crawler.store.mongo import MongoStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path) as opened:
        yield opened


@pytest.mark.parametrize(
    ("moment", "week"),
    [
        (datetime(2027, 1, 1, 12), "2026w53"),
        (datetime(2020, 12, 31, 23, 59), "2020w53"),
        (datetime(2021, 1, 3, 23, 59), "2020w53"),
        (datetime(2021, 1, 4), "2021w01"),
        (datetime(2024, 12, 30), "2025w01"),
        (datetime(2026, 11, 20, tzinfo=UTC), "2026w47"),
        # 01:00 on Monday at UTC+05:00 is still Sunday in UTC: the week of the week before.
        (datetime(2027, 1, 4, 1, tzinfo=timezone(timedelta(hours=5))), "2026w53"),
    ],
)
def test_week_names_follow_isocalendar_in_utc(moment: datetime, week: str) -> None:
    assert week_of(moment) == week


def test_week_arithmetic_crosses_year_ends() -> None:
    assert previous_week("2027w01") == "2026w53"
    assert previous_week("2026w47") == "2026w46"
    assert week_bounds("2026w53") == (datetime(2026, 12, 28, tzinfo=UTC), datetime(2027, 1, 4, tzinfo=UTC))


def test_the_newest_published_order_takes_the_first_and_last_days_with_any_utc_offset() -> None:
    """Published times at year 1 and 9999 with an offset are outside what a datetime holds once in UTC;
    they sort as any other time: by the published day, then by the instant in UTC."""
    published = [
        "0001-01-01T00:30:00+05:00",
        "9999-12-31T20:00:00+00:00",
        "2026-11-20T10:00:00+01:00",
        "0001-01-01T00:10:00+00:00",
        "9999-12-31T23:00:00-05:00",
        "2026-11-20T09:30:00Z",
        "2026-11-20",
    ]
    documents = [{"published": value, "first_seen": "2026-11-20T12:00:00.000000Z"} for value in published]
    newest = [document["published"] for document in sorted(documents, key=newest_published, reverse=True)]
    assert newest == [
        "9999-12-31T23:00:00-05:00",
        "9999-12-31T20:00:00+00:00",
        "2026-11-20T09:30:00Z",
        "2026-11-20T10:00:00+01:00",
        "2026-11-20",
        "0001-01-01T00:10:00+00:00",
        "0001-01-01T00:30:00+05:00",
    ]


@pytest.mark.parametrize("name", ["2025w53", "2026w00", "26w47", "2026-W47", "2026w7"])
def test_a_name_that_is_no_iso_week_is_refused(store: SqliteStore, name: str) -> None:
    with pytest.raises(StoreError, match=rf"week '{name}' is not an ISO week: expected YYYYwWW"):
        store.count(week=name)


def test_files_land_under_the_data_dir_one_per_week_in_wal_mode(tmp_path: Path, store: SqliteStore) -> None:
    store.upsert(article("http://news.test/a", "2026-11-20T10:00:00Z"))
    store.upsert(article("http://news.test/b", "2027-01-01T10:00:00Z"))
    files = sorted(path.name for path in (tmp_path / "articles").glob("*.sqlite"))
    assert files == ["articles_2026w47.sqlite", "articles_2026w53.sqlite"]
    assert store.weeks() == ["2026w47", "2026w53"]
    with sqlite3.connect(tmp_path / "articles" / "articles_2026w47.sqlite") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection.close()


def test_a_write_that_only_records_a_repost_makes_no_file_for_its_week(
    tmp_path: Path, store: SqliteStore
) -> None:
    assert store.upsert(article("http://news.test/flood", "2026-12-31T10:00:00Z", body=FLOOD)).new
    copy = article("http://other.test/copy", "2027-01-04T08:00:00Z", site="other", body=FLOOD_REPOST)
    assert store.upsert(copy) == Written("repost", "http://other.test/copy", "http://news.test/flood")
    assert store.upsert(copy).recorded_before
    assert store.weeks() == ["2026w53"]
    assert list((tmp_path / "articles").glob("articles_2027w01*")) == [], "no file for a week with nothing"
    # A batch that stores a document in that week makes its file, and still records the repost in its own.
    other = article("http://other.test/other", "2027-01-04T09:00:00Z", site="other", body=FLOOD_OTHER)
    again = article("http://third.test/copy", "2027-01-04T10:00:00Z", site="third", body=FLOOD)
    assert [w.outcome for w in store.upsert_many([again, other])] == ["repost", "new"]
    assert store.weeks() == ["2026w53", "2027w01"]
    assert store.count(week="2027w01") == 1
    original = store.get("http://news.test/flood")
    assert original is not None
    assert [r["url"] for r in original["reposts"]] == ["http://other.test/copy", "http://third.test/copy"]


def test_open_store_reads_settings_or_the_environment(tmp_path: Path) -> None:
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BATCH_SIZE": "7"}) as store:
        assert isinstance(store, SqliteStore)
        assert store.directory == tmp_path / "articles"
        assert store.batch_size == 7
    refused = "STORE_BATCH_SIZE is 'many': expected a number of articles, 1 or more (a whole number)"
    with pytest.raises(StoreError, match=re.escape(refused)):
        open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BATCH_SIZE": "many"})


def test_the_busy_timeout_is_a_setting_of_30_seconds_by_default(tmp_path: Path) -> None:
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store:
        assert isinstance(store, SqliteStore)
        assert store.busy_timeout == 30.0
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BUSY_TIMEOUT_SECONDS": "0.1"}) as store:
        assert isinstance(store, SqliteStore)
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        store.flush()
        path = store.path("2026w47")
        with _write_lock_held(path), pytest.raises(StoreError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
    assert f"held the write lock of {path} for over 0.1 s (the busy timeout)" in str(raised.value)


@pytest.mark.parametrize("given", ["-1", "inf", "nan", "2147484", "1e300"])
def test_a_busy_timeout_sqlite_cannot_keep_is_refused_not_made_no_wait(tmp_path: Path, given: str) -> None:
    # SQLite keeps its busy timeout in whole milliseconds of a C int: Python's sqlite3 makes a longer one, or
    # one that is no number, 0, and every write kept waiting by a lock would fail at once.
    refused = (
        f"STORE_BUSY_TIMEOUT_SECONDS is '{given}': expected seconds from 0 to 2147483 (SQLite's limit, about"
        " 24 days) (the default is 30.0)"
    )
    with pytest.raises(StoreError, match=re.escape(refused)):
        open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BUSY_TIMEOUT_SECONDS": given})


@pytest.mark.parametrize("name", ["DEDUP_WINDOW_DAYS", "STORE_SPOOL_RETRY_SECONDS"])
def test_a_store_setting_that_is_no_finite_number_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    settings = {"CRAWLER_DATA_DIR": str(tmp_path), "MONGO_URI": "mongodb://127.0.0.1:1/", name: "nan"}
    unit = "days" if name == "DEDUP_WINDOW_DAYS" else "seconds"
    with pytest.raises(StoreError, match=re.escape(f"{name} is 'nan': expected {unit}, 0 or more")):
        store_config(settings)
    settings[name] = "inf"
    with pytest.raises(StoreError, match=re.escape(f"{name} is 'inf': expected {unit}, 0 or more")):
        store_config(settings)


def test_the_longest_busy_timeout_sqlite_keeps_is_kept(tmp_path: Path) -> None:
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BUSY_TIMEOUT_SECONDS": "2147483"}) as store:
        assert isinstance(store, SqliteStore)
        assert store.busy_timeout == 2147483.0


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.upsert(article("http://news.test/a", "2026-11-20T10:00:00Z"))
    store.flush()
    store.close()
    store.close()
    with pytest.raises(StoreError, match=r"the article store under .*articles is closed"):
        store.count()


def test_open_store_gives_mongodb_for_mongo_uri_without_showing_the_password(tmp_path: Path) -> None:
    from crawler.store.mongo import MongoStore

    settings = {
        "CRAWLER_DATA_DIR": str(tmp_path),
        "MONGO_URI": "mongodb://crawler:s3cret@127.0.0.1:1/?serverSelectionTimeoutMS=100",
        "MONGO_DB_PREFIX": "news",
        "MONGO_WRITE_CONCERN": "2",
    }
    with open_store(settings) as store:
        assert isinstance(store, MongoStore)
        assert store.prefix == "news"
        assert store.write_concern.document == {"w": 2}
        assert "s3cret" not in repr(store)
        assert store.spool.directory == tmp_path / "spool"
    bad = {**settings, "MONGO_URI": "http://crawler:s3cret@db.test/"}
    message = re.escape("MONGO_URI is 'http://***@db.test/': expected mongodb://")
    with pytest.raises(StoreError, match=message) as raised:
        open_store(bad)
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MONGO_WRITE_CONCERN", "0", "MONGO_WRITE_CONCERN is '0': expected 'majority' or a number"),
        ("MONGO_DB_PREFIX", "my db", "MONGO_DB_PREFIX is 'my db': expected 1 to 40 letters"),
        ("DEDUP_WINDOW_DAYS", "-1", "DEDUP_WINDOW_DAYS is '-1': expected days, 0 or more (the default is 7)"),
        (
            "DEDUP_MAX_DISTANCE",
            "70",
            "DEDUP_MAX_DISTANCE is '70': expected a bit count from 0 to 64 (a whole number)"
            " (the default is 16)",
        ),
        ("DEDUP_ENABLED", "maybe", "DEDUP_ENABLED is 'maybe': expected true or false"),
    ],
)
def test_store_settings_are_checked_by_name(tmp_path: Path, name: str, value: str, message: str) -> None:
    settings = {"CRAWLER_DATA_DIR": str(tmp_path), "MONGO_URI": "mongodb://127.0.0.1:1", name: value}
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(settings)


@pytest.mark.parametrize(
    "name",
    [
        "STORE_BATCH_SIZE",
        "DEDUP_WINDOW_DAYS",
        "DEDUP_MAX_DISTANCE",
        "MONGO_TIMEOUT_MS",
        "STORE_SPOOL_RETRY_SECONDS",
    ],
)
def test_the_store_takes_the_range_each_setting_declares_in_crawler_settings(
    tmp_path: Path, name: str
) -> None:
    from crawler import settings as project_settings
    from crawler.bounds import declared_ranges

    taken = declared_ranges(project_settings)[name]
    settings = {"CRAWLER_DATA_DIR": str(tmp_path), "MONGO_URI": "mongodb://127.0.0.1:1"}
    store_config({**settings, name: str(taken.lowest)})
    below = str(taken.lowest - 1)
    with pytest.raises(StoreError, match=re.escape(f"{name} is {below!r}: expected {taken}")):
        store_config({**settings, name: below})


def test_weekly_mongodb_databases_follow_iso_weeks(tmp_path: Path) -> None:
    from mongofake import FakeClient

    from crawler.store.mongo import MongoStore

    client = FakeClient()
    with MongoStore("mongodb://fake", spool_dir=tmp_path, prefix="news", client=client) as store:  # type: ignore[arg-type]
        store.upsert_many(
            [
                article("http://news.test/a", "2027-01-01T12:00:00Z"),
                article("http://news.test/b", "2027-01-04T00:00:01Z"),
                article("http://news.test/c", "2020-12-31T23:59:00Z"),
            ]
        )
        assert store.weeks() == ["2020w53", "2026w53", "2027w01"]
    names = sorted(client.list_database_names())
    assert names == ["news_2020w53", "news_2026w53", "news_2027w01"]
    indexes = client["news_2026w53"]["articles"].index_information()
    assert indexes["url"]["unique"] is True
    assert {"site_published", "content_hash", "simhash_bands", "text", "reposts_url"} <= set(indexes)


@contextmanager
def _fake_mongo_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[MongoStore, list[dict[str, Any]]]]:
    """A MongoStore on the pymongo-shaped fake (NOT MongoDB), and the queries its finds send, in order."""
    from mongofake import FakeClient, FakeCollection

    from crawler.store.mongo import MongoStore

    queries: list[dict[str, Any]] = []

    def find(collection: FakeCollection, query: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        queries.append(query)
        return collection._collection.find(query, *args, **kwargs)

    monkeypatch.setattr(FakeCollection, "find", find, raising=False)
    with MongoStore("mongodb://fake", spool_dir=tmp_path, prefix="news", client=FakeClient()) as store:  # type: ignore[arg-type]
        yield store, queries


def test_mongodb_asks_for_the_published_text_range_and_keeps_the_instants_in_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query a published window sends (the pymongo-shaped fake, NOT MongoDB): the text range of the
    values that may be in it, a day wider on each side for UTC offsets, which the index on site and
    published serves for a site; the instants are compared on what it finds, the limit counted after."""
    with _fake_mongo_asked(tmp_path, monkeypatch) as (store, queries):
        store.upsert_many(
            [
                article("http://news.test/a", "2026-11-20T12:00:00Z", published="2026-11-20T06:00:00+08:00"),
                article("http://news.test/b", "2026-11-20T13:00:00Z", published="2026-11-20T12:00:00Z"),
                article("http://news.test/c", "2026-11-20T14:00:00Z", published="2026-11-20"),
            ]
        )
        queries.clear()
        found = store.iter_articles(
            site="citynews",
            published_since=datetime(2026, 11, 20, tzinfo=UTC),
            published_until=datetime(2026, 11, 21, tzinfo=UTC),
            limit=1,
        )
        assert [document["url"] for document in found] == ["http://news.test/c"]
    assert queries == [{"site": "citynews", "published": {"$gte": "2026-11-19", "$lt": "2026-11-23"}}]


def test_mongodb_search_asks_for_the_first_seen_and_published_ranges_with_its_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query a search with windows sends (the pymongo-shaped fake, NOT MongoDB): its terms, the
    first-seen range, the text range of the published values that may be in the window; the instants
    compared on what it finds, the limit counted after."""
    with _fake_mongo_asked(tmp_path, monkeypatch) as (store, queries):
        store.upsert_many(
            [
                article(
                    "http://cn.test/a",
                    "2026-11-20T12:00:00Z",
                    published="2026-11-20T06:00:00+08:00",
                    body="人工智能 a",
                ),
                article(
                    "http://cn.test/b",
                    "2026-11-20T13:00:00Z",
                    published="2026-11-20T12:00:00Z",
                    body="人工智能 b",
                ),
                article(
                    "http://cn.test/c", "2026-11-20T14:00:00Z", published="2026-11-20", body="人工智能 c"
                ),
            ]
        )
        queries.clear()
        found = store.search(
            "人工智能",
            site="citynews",
            since=datetime(2026, 11, 20, 12, 30, tzinfo=UTC),
            published_since=datetime(2026, 11, 20, tzinfo=UTC),
            published_until=datetime(2026, 11, 21, tzinfo=UTC),
            limit=1,
        )
        assert [document["url"] for document in found] == ["http://cn.test/c"]
    regex = {"$regex": "人工智能", "$options": "i"}
    assert queries == [
        {
            "$or": [{"title": regex}, {"body": regex}],
            "site": "citynews",
            "first_seen": {"$gte": "2026-11-20T12:30:00.000000Z"},
            "published": {"$gte": "2026-11-19", "$lt": "2026-11-23"},
        }
    ]


def test_a_version_1_file_is_migrated_with_its_rows(tmp_path: Path) -> None:
    folder = tmp_path / "articles"
    folder.mkdir()
    path = folder / "articles_2026w47.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE articles (id TEXT NOT NULL, url TEXT NOT NULL UNIQUE, site TEXT NOT NULL, title TEXT,
            body TEXT, published TEXT, author TEXT, fields TEXT NOT NULL, fetched_at TEXT NOT NULL,
            first_seen TEXT NOT NULL, week TEXT NOT NULL, extraction TEXT, content_hash TEXT, job TEXT);
        PRAGMA user_version = 1;
        """
    )
    connection.execute(
        "INSERT INTO articles VALUES (?, ?, 'citynews', 'Old', 'Kept body text', NULL, NULL,"
        " '{\"a\": \"1\"}', '2026-11-20T10:00:00.000000Z', '2026-11-19T10:00:00.000000Z', '2026w47',"
        " NULL, 'stale', NULL)",
        (article_id("http://news.test/old"), "http://news.test/old"),
    )
    connection.commit()
    connection.close()
    with SqliteStore(tmp_path) as store:
        document = store.get("http://news.test/old")
        assert document is not None
        assert (document["title"], document["fields"], document["reposts"]) == ("Old", {"a": "1"}, [])
        assert document["first_seen"] == "2026-11-19T10:00:00.000000Z"
        assert document["content_hash"] == content_hash("Kept body text")
        assert [d["url"] for d in store.search("kept")] == ["http://news.test/old"]
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    check.close()


def test_a_near_match_needs_the_bodies_to_share_their_shingles(store: SqliteStore) -> None:
    document = make_document(article("http://news.test/new", "2026-11-20T10:00:00Z", body=FLOOD_REPOST))
    # A stored document with the very same SimHash (as if by chance) but another text is no original.
    twin = Candidate(
        "http://a.test/1", "a", "2026w47", "2026-11-19T10:00:00.000000Z", None, document["simhash"]
    )
    assert not same_article(FLOOD_REPOST, FLOOD_OTHER)
    assert store.find_original(document, [twin], lambda _: FLOOD_OTHER) is None
    found = store.find_original(document, [twin], lambda _: FLOOD)
    assert found is not None and (found.candidate, found.match, found.distance) == (twin, "near", 0)
    # Outside the window, or the same URL: never.
    late = Candidate(
        "http://a.test/2", "a", "2026w48", "2026-11-28T10:00:00.000000Z", None, document["simhash"]
    )
    itself = Candidate(
        document["url"], "a", "2026w47", "2026-11-19T10:00:00.000000Z", None, document["simhash"]
    )
    assert store.find_original(document, [late, itself], lambda _: FLOOD) is None
    # An exact match wins over a closer-looking near one, and needs no body.
    exact = Candidate(
        "http://b.test/1", "b", "2026w47", "2026-11-20T09:00:00.000000Z", document["content_hash"], None
    )
    assert store.find_original(document, [twin, exact], lambda _: None) == Original(exact, "exact", 0)


# The search index of schema versions 2 and 3, as they created it: trigrams of the raw text, triggers.
_TRIGRAM_SEARCH = """
    DROP TRIGGER articles_bands_delete;
    DROP TABLE articles_fts;
    CREATE VIRTUAL TABLE articles_fts USING fts5(
        title, body, content='articles', content_rowid='pk', tokenize='trigram'
    );
    CREATE TRIGGER articles_fts_insert AFTER INSERT ON articles BEGIN
        INSERT INTO articles_fts (rowid, title, body) VALUES (new.pk, new.title, new.body);
    END;
    CREATE TRIGGER articles_fts_delete AFTER DELETE ON articles BEGIN
        INSERT INTO articles_fts (articles_fts, rowid, title, body)
            VALUES ('delete', old.pk, old.title, old.body);
        DELETE FROM simhash_bands WHERE pk = old.pk;
    END;
    CREATE TRIGGER articles_fts_update AFTER UPDATE OF title, body ON articles BEGIN
        INSERT INTO articles_fts (articles_fts, rowid, title, body)
            VALUES ('delete', old.pk, old.title, old.body);
        INSERT INTO articles_fts (rowid, title, body) VALUES (new.pk, new.title, new.body);
    END;
    INSERT INTO articles_fts (articles_fts) VALUES ('rebuild');
"""


# What a file of version 8 made by a crawler of before 2026-11-29 lacks: the table of the URLs that
# redirected to its articles, and its triggers.
_WITHOUT_REDIRECTS_TABLE = """
    DROP TRIGGER IF EXISTS articles_redirects_insert;
    DROP TRIGGER IF EXISTS articles_redirects_update;
    DROP TRIGGER IF EXISTS articles_redirects_delete;
    DROP TABLE IF EXISTS redirects;
"""


def _as_old_version(path: Path, version: int) -> None:
    """Turn a week's file written by this crawler into one of schema ``version`` (2 to 6): no table of
    redirects nor partial indexes of the rows with reposts or redirects, no ``redirected_from`` column;
    before 6, no anchors nor paragraph counts; before 5, the band keys without their SimHash (version 2: of
    another layout); before 4, the trigram search index."""
    connection = sqlite3.connect(path)
    connection.executescript(_WITHOUT_REDIRECTS_TABLE)
    connection.executescript("DROP INDEX articles_reposted; DROP INDEX articles_redirected;")
    connection.execute("ALTER TABLE articles DROP COLUMN redirected_from")
    if version < 6:
        connection.executescript(
            "DROP TRIGGER articles_anchors_delete; DROP TABLE anchors; DROP TABLE paragraphs;"
        )
    if version in (5, 6):
        connection.execute(f"PRAGMA user_version = {version}")
        connection.commit()
        connection.close()
        return
    if version < 4:
        connection.executescript(_TRIGRAM_SEARCH)
    rows = connection.execute("SELECT pk, simhash FROM articles WHERE simhash IS NOT NULL").fetchall()
    connection.executescript(
        """
        DROP TABLE simhash_bands;
        CREATE TABLE simhash_bands (key INTEGER NOT NULL, pk INTEGER NOT NULL);
        CREATE INDEX simhash_bands_key ON simhash_bands (key);
        CREATE INDEX simhash_bands_pk ON simhash_bands (pk);
        """
    )
    offset = 1_000_000 if version == 2 else 0  # keys of the old layout
    connection.executemany(
        "INSERT INTO simhash_bands (key, pk) VALUES (?, ?)",
        [(key + offset, pk) for pk, simhash in rows for key in band_keys(from_hex(simhash))],
    )
    connection.execute(f"PRAGMA user_version = {version}")
    connection.commit()
    connection.close()


def _indexed(path: Path, phrase: str) -> list[int]:
    """Rows of the week's search index holding ``phrase`` (an FTS5 query)."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT rowid FROM articles_fts WHERE articles_fts MATCH ?", (phrase,))
        found = [row[0] for row in rows]
    connection.close()
    return found


def _repost_to_old_file(tmp_path: Path, version: int) -> tuple[str, Path]:
    """The outcome of storing FLOOD's repost once the week's file holding FLOOD is made one of schema
    ``version`` (the store upgrades it when it opens it), and the file."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD))
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    _as_old_version(path, version)
    with SqliteStore(tmp_path) as store:
        repost = store.upsert(article("http://other.test/copy", "2026-11-17T11:00:00Z", body=FLOOD_REPOST))
    return repost.outcome, path


def test_a_version_2_file_gets_its_band_keys_rebuilt(tmp_path: Path) -> None:
    outcome, _ = _repost_to_old_file(tmp_path, 2)
    assert outcome == "repost", "found through the rebuilt keys"


def test_a_version_5_file_gets_anchors_and_paragraph_counts(tmp_path: Path) -> None:
    """Version 5 kept neither: they are made from its articles, and a part of one of them is found."""
    whole = "\n\n".join(f"{paragraph} Paragraph {n} of the story." for n, paragraph in enumerate([FLOOD] * 3))
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/whole", "2026-11-17T10:00:00Z", body=whole))
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    _as_old_version(path, 5)
    with SqliteStore(tmp_path) as store:
        part = FLOOD.split("\n\n")[0] + "\n\n" + FLOOD.split("\n\n")[1]
        written = store.upsert(article("http://other.test/part", "2026-11-17T11:00:00Z", body=part))
    assert written == Written("repost", "http://other.test/part", "http://news.test/whole")
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT count(*) FROM anchors").fetchone() == (16,)
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    check.close()


def test_a_version_6_file_opens_and_keeps_the_urls_that_redirect_to_its_articles(tmp_path: Path) -> None:
    """Version 6 kept no ``redirected_from``: its articles read with none, and a fetch through a redirect
    keeps the URL asked for."""
    url, asked = "http://news.test/a/1", "http://news.test/r/1"
    with SqliteStore(tmp_path) as store:
        store.upsert(article(url, "2026-11-17T10:00:00Z", body=FLOOD))
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    _as_old_version(path, 6)
    with SqliteStore(tmp_path) as store:
        document = store.get(url)
        assert document is not None and (document["body"], document["redirected_from"]) == (FLOOD, [])
        assert store.redirected_to(asked) is None
        refetch = article(url, "2026-11-17T11:00:00Z", body=FLOOD, redirected_from=[asked])
        assert store.upsert(refetch).outcome == "updated"
        found = store.redirected_to(asked)
        assert found is not None and (found["url"], found["redirected_from"]) == (url, [asked])
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    check.close()


def _redirects(path: Path) -> list[tuple[str, str]]:
    """The rows of the week's table of redirects: (URL, the URL of the article it redirected to)."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT r.url, a.url FROM redirects r JOIN articles a ON a.pk = r.pk ORDER BY r.url, a.url"
        ).fetchall()
    connection.close()
    return rows


def test_a_version_8_file_without_the_table_of_redirects_gets_it_whole_and_every_write_keeps_it(
    tmp_path: Path,
) -> None:
    """`redirected_to` read every row that records redirects in every week (a LIKE, then its JSON), too
    slow for the store pipeline to ask it of each feed entry whose URL is seen. Each URL that redirected to
    an article is a row of the week's ``redirects`` table, which a version 8 file made by a crawler of
    before it gets when it is opened, from the articles it holds (a damaged ``redirected_from`` gives
    none, and fails nothing); triggers keep it in step with every write that changes ``redirected_from``,
    an older crawler's too."""
    with SqliteStore(tmp_path) as store:
        store.upsert(
            article("http://news.test/a/1", "2026-11-17T10:00:00Z", redirected_from=["http://t.test/1"])
        )
        store.upsert(article("http://news.test/a/2", "2026-11-17T11:00:00Z", body=FLOOD_OTHER))
        store.upsert(article("http://news.test/a/3", "2026-11-17T12:00:00Z", body="Third.", site="other"))
        path = store.path("2026w47")
    with sqlite3.connect(path) as older:
        older.executescript(_WITHOUT_REDIRECTS_TABLE)
        older.execute("UPDATE articles SET redirected_from = 'not JSON' WHERE url = 'http://news.test/a/3'")
    older.close()
    with SqliteStore(tmp_path) as store:
        found = store.redirected_to("http://t.test/1")
        assert found is not None and found["url"] == "http://news.test/a/1"
        assert _redirects(path) == [("http://t.test/1", "http://news.test/a/1")]
        store.upsert(
            article(
                "http://news.test/a/4",
                "2026-11-17T13:00:00Z",
                body="Fourth.",
                redirected_from=["http://t.test/4"],
            )
        )
        assert store.add_redirects("http://news.test/a/2", ["http://t.test/2"])
        assert store.add_redirects("http://t.test/1", ["http://t.test/1b"]), "a link to a link"
        refetch = article(
            "http://news.test/a/4",
            "2026-11-17T14:00:00Z",
            body="Fourth.",
            redirected_from=["http://t.test/4c"],
        )
        assert store.upsert(refetch).outcome == "updated"
    assert _redirects(path) == [
        ("http://t.test/1", "http://news.test/a/1"),
        ("http://t.test/1b", "http://news.test/a/1"),
        ("http://t.test/2", "http://news.test/a/2"),
        ("http://t.test/4", "http://news.test/a/4"),
        ("http://t.test/4c", "http://news.test/a/4"),
    ]
    with sqlite3.connect(path) as older:
        older.execute(
            "UPDATE articles SET redirected_from = '[\"http://t.test/2x\"]' WHERE url = 'http://news.test/a/2'"
        )
        older.execute("DELETE FROM articles WHERE url = 'http://news.test/a/4'")
    older.close()
    with SqliteStore(tmp_path) as store:
        found = store.redirected_to("http://t.test/2x")
        assert found is not None and found["url"] == "http://news.test/a/2"
        assert store.redirected_to("http://t.test/2") is None
        assert store.redirected_to("http://t.test/4") is None
        assert store.delete_site("citynews") == 2
        assert store.redirected_to("http://t.test/1") is None
    assert _redirects(path) == []
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    check.close()


def test_a_read_only_version_8_file_without_the_table_of_redirects_finds_an_article_by_them(
    tmp_path: Path,
) -> None:
    """A version 8 file made by a crawler of before the table of redirects that cannot be written (made
    immutable: ``chattr +i``, which root obeys, as a read-only disk) is read as before: `redirected_to`
    reads its rows that record redirects, the table left to the next process that can write the file."""
    with SqliteStore(tmp_path) as store:
        store.upsert(
            article("http://news.test/a/1", "2026-11-17T10:00:00Z", redirected_from=["http://t.test/1"])
        )
        path = store.path("2026w47")
    with sqlite3.connect(path) as older:
        older.executescript(_WITHOUT_REDIRECTS_TABLE)
    older.close()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no read-only file can be made as root")
    try:
        with SqliteStore(tmp_path) as store:
            found = store.redirected_to("http://t.test/1")
            assert found is not None and found["url"] == "http://news.test/a/1"
            assert store.redirected_to("http://t.test/2") is None
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    with SqliteStore(tmp_path) as store:
        found = store.redirected_to("http://t.test/1")
        assert found is not None and found["url"] == "http://news.test/a/1"
    assert _redirects(path) == [("http://t.test/1", "http://news.test/a/1")], "made once it can be written"


def test_a_version_3_file_gets_the_word_search_index(tmp_path: Path) -> None:
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD))
        store.upsert(
            article("http://cn.test/1", "2026-11-17T11:00:00Z", title="经济新闻", body="今天的经济形势很好。")
        )
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    _as_old_version(path, 3)
    assert _indexed(path, '"经济形"') == [2], "the old trigram index"
    assert _indexed(path, '"经济"') == [], "trigrams hold no two-character term"
    with SqliteStore(tmp_path) as store:
        assert [d["url"] for d in store.search("经济")] == ["http://cn.test/1"]
        assert [d["url"] for d in store.search("levee")] == ["http://news.test/flood"]
        store.upsert(article("http://news.test/later", "2026-11-17T12:00:00Z", body="A levee report."))
        assert [d["url"] for d in store.search("levee")] == [
            "http://news.test/later",
            "http://news.test/flood",
        ]
    assert _indexed(path, '"经 济"') == [2]
    assert _indexed(path, "levee") == [1, 3]
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        triggers = check.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        assert sorted(name for (name,) in triggers) == [
            "articles_anchors_delete",
            "articles_bands_delete",
            "articles_redirects_delete",
            "articles_redirects_insert",
            "articles_redirects_update",
        ], "the trigram index's triggers gone"
    check.close()


def test_a_refetched_body_leaves_the_search_index(store: SqliteStore, tmp_path: Path) -> None:
    store.upsert(article("http://news.test/1", "2026-11-17T10:00:00Z", title="Levee", body="The old words."))
    store.upsert(
        article("http://news.test/1", "2026-11-17T12:00:00Z", title="Levee", body="Fresh text here.")
    )
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    assert _indexed(path, "old") == []
    assert _indexed(path, "fresh") == [1]
    assert _indexed(path, "levee") == [1]
    assert [d["url"] for d in store.search("fresh levee")] == ["http://news.test/1"]
    assert list(store.search("old")) == []


def test_a_sites_deleted_articles_leave_the_search_index_and_the_duplicate_lookup(
    store: SqliteStore, tmp_path: Path
) -> None:
    store.upsert(article("http://news.test/1", "2026-11-17T10:00:00Z", title="Levee", body=FLOOD))
    store.upsert(article("http://other.test/1", "2026-11-17T10:00:00Z", site="other", title="Levee"))
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    assert store.delete_site("citynews") == 1
    assert _indexed(path, "levee") == [2] and _indexed(path, "riverton") == []
    with sqlite3.connect(path) as connection:
        (bands,) = connection.execute("SELECT count(*) FROM simhash_bands WHERE pk = 1").fetchone()
        (anchors,) = connection.execute("SELECT count(*) FROM anchors WHERE pk = 1").fetchone()
    connection.close()
    assert bands == 0 and anchors == 0
    written = store.upsert(article("http://news.test/2", "2026-11-17T11:00:00Z", body=FLOOD_REPOST))
    assert written.outcome == "new", "no repost of a deleted article"


def test_search_uses_the_index_for_short_and_mixed_terms(store: SqliteStore) -> None:
    store.upsert_many(
        [
            article(
                "http://news.test/ai", "2026-11-17T10:00:00Z", body="AI rules in the U.S. for Café owners."
            ),
            article("http://cn.test/phone", "2026-11-17T11:00:00Z", body="新款iPhone手机发布了。"),
        ]
    )

    def found(text: str) -> list[str]:
        return [document["url"] for document in store.search(text)]

    assert found("ai") == ["http://news.test/ai"]
    assert found('"u.s."') == ["http://news.test/ai"]
    assert found("cafe") == ["http://news.test/ai"], "accents folded, as the index folds them"
    assert found("café") == ["http://news.test/ai"]
    assert found("phone手机") == ["http://cn.test/phone"], "a CJK term matches anywhere"
    assert found("手") == ["http://cn.test/phone"]


def test_latin_words_and_numbers_joined_to_chinese_are_whole_words(store: SqliteStore) -> None:
    """Chinese is written without spaces: a CJK character beside a Latin word or number does not make it
    part of a longer word, as a letter or digit of another script does."""
    store.upsert_many(
        [
            article(
                "http://cn.test/ai",
                "2026-11-17T10:00:00Z",
                title="人工智能",
                body="人工智能AI大模型在2027年投入应用，5G基站覆盖率达到95%。",
            ),
            article(
                "http://news.test/pets", "2026-11-17T11:00:00Z", body="A category of its own: concatenated."
            ),
        ]
    )

    def found(text: str) -> list[str]:
        return [document["url"] for document in store.search(text)]

    for term in ("AI", "2027", "5G", "95%", "ai 2027 5g", '"95%"'):
        assert found(term) == ["http://cn.test/ai"], term
    assert found("202") == [], "a digit after the term joins it to a longer number"
    assert found("cat") == [], "Latin words still whole words"
    assert found("category") == ["http://news.test/pets"]


def test_a_version_4_file_gets_the_simhash_beside_its_band_keys(tmp_path: Path) -> None:
    outcome, path = _repost_to_old_file(tmp_path, 4)
    assert outcome == "repost"
    with sqlite3.connect(path) as check:
        columns = [row[1] for row in check.execute("PRAGMA table_info(simhash_bands)")]
        (keys,) = check.execute("SELECT count(*) FROM simhash_bands WHERE simhash IS NOT NULL").fetchone()
    check.close()
    assert columns == ["key", "pk", "simhash"]
    assert keys == 4, "the original's 4 keys (the repost is not stored)"


def test_a_band_key_shared_by_a_far_simhash_is_no_candidate(store: SqliteStore) -> None:
    store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD))
    document = make_document(article("http://news.test/other", "2026-11-17T11:00:00Z", body=FLOOD_OTHER))
    flood = make_document(article("http://x.test/1", "2026-11-17T10:00:00Z", body=FLOOD))
    far = from_hex(flood["simhash"]) ^ ((1 << 64) - (1 << 16))  # the first band kept, 48 bits flipped
    document["simhash"] = f"{far:016x}"
    connection = store._open("2026w47", create=False)
    assert connection is not None
    files = store._dedup_files(connection, "2026w47", document)
    assert store._candidates(files, document, None) == [], "one band alike, 48 bits apart"
    document["simhash"] = flood["simhash"]
    assert [c.url for c in store._candidates(files, document, None)] == ["http://news.test/flood"]


NEW_FILES = 30
OPENERS = 6


def _open_new_stores(tmp: str, start: float, opener: int) -> list[str]:
    """One process: from ``start`` on, a write to each of ``NEW_FILES`` stores no process has opened yet."""
    while time.time() < start:
        time.sleep(0.001)
    failures: list[str] = []
    for n in range(NEW_FILES):
        try:
            with SqliteStore(Path(tmp) / str(n)) as store:
                store.upsert(article(f"http://news.test/{opener}", "2026-11-20T10:00:00Z"))
        except StoreError as exc:
            failures.append(str(exc))
    return failures


def test_processes_opening_a_new_week_file_together_all_write(tmp_path: Path) -> None:
    # SQLite answers one of two connections switching a new file to WAL at once with "database is locked"
    # at once, busy timeout or not: the CI saw a writer fail so when four started together.
    context = multiprocessing.get_context("spawn")
    with context.Pool(OPENERS) as pool:
        start = time.time() + 2.0
        failures = pool.starmap(
            _open_new_stores, [(str(tmp_path), start, opener) for opener in range(OPENERS)]
        )
    assert [failure for failed in failures for failure in failed] == []
    for n in range(NEW_FILES):
        with SqliteStore(tmp_path / str(n)) as store:
            assert store.count() == OPENERS


def _write_past_a_file_size_limit(directory: str) -> tuple[str, int, int]:
    """In a process of its own: a second article written while no file may grow (``RLIMIT_FSIZE``, which
    any process may lower: SQLite fails as on a full disk), then once they may; the first error, the
    count and the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    with SqliteStore(directory) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        largest = max(path.stat().st_size for path in store.directory.iterdir())
        resource.setrlimit(resource.RLIMIT_FSIZE, (largest, hard))
        try:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z", body="Words. " * 2000))
        except StoreError as exc:
            error = str(exc)
        else:
            error = ""
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z", body="Words. " * 2000))
        return error, store.count(), largest


def test_a_store_whose_file_cannot_grow_names_disk_space_and_the_file_size_limit(tmp_path: Path) -> None:
    """SQLite says only "disk I/O error" for a file grown past `ulimit -f`: with a limit set, the advice
    names it beside the disk, since freeing disk space does not lift it."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        error, count, limit = pool.apply(_write_past_a_file_size_limit, (str(tmp_path),))
    folder = tmp_path / "articles"
    assert error.startswith(
        f"cannot write 1 article (first http://news.test/second) to {folder}/articles_2026w47"
    ), error
    assert error.endswith(
        f": disk I/O error; free disk space under {folder}, or mend its disk, or raise the file size limit"
        f" of the crawler's processes (`ulimit -f`: {limit} bytes)"
    ), error
    assert count == 2


def _make_a_week_with_no_room(directory: str) -> tuple[str, str, bool, list[str]]:
    """In a process of its own: an article written to a week with no file yet while no file may grow
    (``RLIMIT_FSIZE`` 0, as on a full disk); the error's name, its message, whether it is one no wait mends,
    and the files left in the articles folder."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    with SqliteStore(directory) as store:
        try:
            store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        except StoreError as exc:
            return type(exc).__name__, str(exc), lasting_failure(exc), sorted(os.listdir(store.directory))
    return "", "", False, []


def test_a_weeks_file_that_cannot_be_made_for_want_of_room_is_not_left_empty(tmp_path: Path) -> None:
    """SQLite made the file, then could not write its tables: it was left empty (0 bytes), a minute later
    taken for a week's file emptied, its articles lost ("restore it from a backup"), by the readers and the
    worker that made it anew; and the error was a damaged week's (DamagedWeekError: "the file cannot be
    read: ... restore it from a backup"), not the full disk's."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        name, error, lasting, left = pool.apply(_make_a_week_with_no_room, (str(tmp_path),))
    week = tmp_path / "articles" / "articles_2026w47.sqlite"
    assert (name, error, lasting) == (
        "StoreError",
        f"cannot create the article store {week}: disk I/O error; free disk space under {week.parent}, or"
        " mend its disk, or raise the file size limit of the crawler's processes (`ulimit -f`: 0 bytes)",
        False,
    )
    assert week.name not in left, left


def _write_with_no_room_for_the_shm_file(directory: str) -> tuple[str, str, bool]:
    """In a process of its own: an article written to a week's file stored before, while no file may
    grow past 1 KB (``RLIMIT_FSIZE``, which any process may lower: SQLite cannot make the file's ``-shm``,
    as on a full disk); the error's name, its message, and whether it is one no wait mends."""
    with SqliteStore(directory) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    with SqliteStore(directory) as store:
        try:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
        except StoreError as exc:
            return type(exc).__name__, str(exc), lasting_failure(exc)
    return "", "", False


def test_a_write_with_no_room_for_the_weeks_shm_file_is_a_disk_error_tried_again(tmp_path: Path) -> None:
    """A week's file SQLite cannot make the ``-shm`` file of is sound: the error is the store's for a
    full disk, not a damaged week's, and it may mend (the write is tried again later)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        name, error, lasting = pool.apply(_write_with_no_room_for_the_shm_file, (str(tmp_path),))
    week = tmp_path / "articles" / "articles_2026w47.sqlite"
    assert name == "StoreError", (name, error)
    assert error == (
        f"cannot open the article store {week}: disk I/O error; SQLite could not make {week.name}-shm,"
        f" which it reads the file with, beside it: free disk space under {week.parent}, or raise the file"
        " size limit of the crawler's processes (`ulimit -f`: 1024 bytes) (the week's file is not damaged)"
    ), error
    assert not lasting


def test_a_write_kept_waiting_by_another_writer_names_the_lock_and_what_to_do(tmp_path: Path) -> None:
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
        with _write_lock_held(path), pytest.raises(StoreError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
        assert store.count() == 1
    assert str(raised.value).endswith(
        f": database is locked; another process held the write lock of {path} for over 0.1 s (the"
        " busy timeout): a sqlite3 shell or a script in a write transaction; end it (`fuser"
        f" {path}` names the processes that have the file open)"
    ), raised.value


# A process that takes the write lock of the week's file given, says so, then stops itself (SIGSTOP) inside
# its transaction, as a worker stopped in the middle of a batch's write.
_STOPPED_WRITER = """
import os, signal, sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None)
holder.execute("BEGIN IMMEDIATE")
print("held", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the lock's holder is asked of Linux (F_GETLK)")
def test_a_write_kept_waiting_by_a_stopped_process_names_it_and_how_to_resume_it(tmp_path: Path) -> None:
    """A worker stopped (SIGSTOP) inside its write keeps the week's write lock until continued: the write
    kept waiting names that process, stopped, and `kill -CONT` it, not a sqlite3 shell."""
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
        with subprocess.Popen(
            [sys.executable, "-c", _STOPPED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
        ) as holder:
            try:
                assert holder.stdout is not None and holder.stdout.readline() == "held\n"
                with pytest.raises(StoreError) as raised:
                    store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
            finally:
                holder.kill()
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
    assert str(raised.value).endswith(
        f": database is locked; process {holder.pid} held the write lock of {path} for over 0.1 s (the busy"
        " timeout), and is stopped (SIGSTOP, Ctrl-Z) in its write transaction: `kill -CONT"
        f" {holder.pid}` lets it finish (or end it); what waits for the lock is stored once it lets go"
    ), raised.value


_FIRST_WEEK = datetime(2026, 9, 16, 9, tzinfo=UTC)
_FIFTH_WEEK = _FIRST_WEEK + timedelta(weeks=4)


@contextmanager
def _ten_weeks_locked_but_the_fifth(store: SqliteStore, held: dict[str, Any]) -> Iterator[Path]:
    """Ten weeks of one article each, ``held`` stored in the fifth, the write lock of every other week's file
    held by another connection meanwhile; gives the fifth week's file."""
    for n in range(10):
        store.upsert(article(f"http://news.test/{n}", (_FIRST_WEEK + timedelta(weeks=n)).isoformat()))
    assert store.upsert(held).outcome == "new"
    weeks = store.weeks()
    assert len(weeks) == 10
    fifth = week_of(_FIFTH_WEEK)
    with ExitStack() as locks:
        for week in weeks:
            if week != fifth:
                locks.enter_context(_write_lock_held(store.path(week)))
        yield store.path(fifth)


def test_filling_a_feed_entrys_fields_takes_the_write_lock_of_the_week_holding_its_url_alone(
    tmp_path: Path,
) -> None:
    """A feed entry's fields are given to its stored article on the store's thread of every worker: it
    took the write lock of every week's file, newest first, up to the one holding the URL (all of them for
    a URL stored in none), so another writer holding any of those kept it waiting, then failed it."""
    held = article("http://news.test/held", _FIFTH_WEEK.isoformat(), author=None)
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        with _ten_weeks_locked_but_the_fifth(store, held) as fifth:
            with _write_lock_held(fifth):
                assert store.fill_empty("http://news.test/unstored", {"author": "B. Writer"}) is None
            assert store.fill_empty(held["url"], {"author": "B. Writer"}) == ("author",)
        assert store.get(held["url"])["author"] == "B. Writer"  # type: ignore[index]


def test_adding_redirects_takes_the_write_lock_of_the_week_holding_the_url_alone(tmp_path: Path) -> None:
    """The links noted as redirecting to the articles of a batch are added on the store's thread of every
    worker: it took the write lock of every week's file, newest first, up to the one holding the URL (all
    of them for a URL stored in none, then again for the article a short link leads to), so another writer
    holding any of those kept it waiting, then failed it."""
    held = article("http://news.test/held", _FIFTH_WEEK.isoformat())
    held["redirected_from"] = ["http://t.test/1"]
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        with _ten_weeks_locked_but_the_fifth(store, held) as fifth:
            with _write_lock_held(fifth):
                assert not store.add_redirects("http://news.test/unstored", ["http://t.test/0"])
            assert store.add_redirects(held["url"], ["http://t.test/2"])
            assert store.add_redirects("http://t.test/1", ["http://t.test/3"]), "a link to the article"
        assert store.get(held["url"])["redirected_from"] == [  # type: ignore[index]
            "http://t.test/1",
            "http://t.test/2",
            "http://t.test/3",
        ]


def test_a_write_that_fails_on_no_sqlite_error_leaves_the_week_free_for_the_next_writes(
    tmp_path: Path,
) -> None:
    """A document SQLite cannot be given (a lone surrogate, which no UTF-8 text holds) fails its write; the
    write's transaction is rolled back, so the next write of this store, and another process's, go on."""
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        with pytest.raises(UnicodeEncodeError):
            store.upsert({**article("http://news.test/cut", "2026-11-20T11:00:00Z"), "title": "Cut \ud83d"})
        assert store.upsert(article("http://news.test/second", "2026-11-20T12:00:00Z")).outcome == "new"
        with SqliteStore(tmp_path, busy_timeout=0.1) as other:
            assert other.upsert(article("http://news.test/third", "2026-11-20T13:00:00Z")).outcome == "new"
        assert [d["url"] for d in store.iter_articles(newest_first=False)] == [
            "http://news.test/first",
            "http://news.test/second",
            "http://news.test/third",
        ]


@pytest.mark.parametrize("how", ["moved", "deleted", "replaced"])
def test_a_weeks_file_moved_or_deleted_under_a_writing_store_is_written_at_its_path_again(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A week's file moved out of the folder (what to do with a damaged one), deleted, or replaced by a
    backup while a worker has it open: the worker's writes went on into the file moved away, or deleted,
    where no reader of the folder sees them. Then (fdf7a24) every write of that week failed until the
    worker was restarted: a week's articles dead-lettered. The store now opens the file at the path again
    (a new one when none is there), saying so, and the write is stored where readers see it."""
    aside = tmp_path / "aside"
    aside.mkdir()
    with SqliteStore(tmp_path / "data") as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
        if how == "deleted":
            path.unlink()
        else:
            for file in path.parent.glob(f"{path.name}*"):
                file.rename(aside / file.name)
        if how == "replaced":
            with SqliteStore(tmp_path / "backup") as backup:
                backup.upsert(article("http://news.test/backed-up", "2026-11-20T09:00:00Z"))
            backup.path("2026w47").rename(path)
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
    assert (
        f"the article store {path} was moved or deleted while this process had it open: it is opened again"
        " (made anew when an article is next stored in that week)"
    ) in caplog.text
    with SqliteStore(tmp_path / "data") as store:
        kept = ["http://news.test/backed-up"] if how == "replaced" else []
        assert [d["url"] for d in store.iter_articles(newest_first=False)] == [
            *kept,
            "http://news.test/second",
        ]


_OTHER_WRITER: dict[str, SqliteStore] = {}


def _other_writer_upserts(directory: str, urls: list[str]) -> None:
    """In a process of its own (a pool's, called again): upsert ``urls`` with the store it keeps open."""
    store = _OTHER_WRITER.setdefault(directory, SqliteStore(directory))
    for url in urls:
        store.upsert(article(url, "2026-11-20T10:00:00Z"))


@pytest.mark.parametrize("writers", [1, 2])
def test_a_weeks_file_renamed_alone_under_writing_stores_keeps_every_article_it_held(
    tmp_path: Path, writers: int
) -> None:
    """`mv` of a week's file alone (its -wal and -shm left at the old name) while workers write into it:
    the articles committed since its last checkpoint were in the -wal alone, which closing the connection to
    a moved file does not apply to it, and which the file made anew at the path then deleted (SQLite drops
    the -wal of an empty file). In the fault hunt, 22 of the 80 articles the file held were in neither file
    after it. Now the first store to find the file moved applies the -wal to it; another process's store,
    which finds the file at the path made anew meanwhile with a -wal of its own, applies nothing."""
    urls = [f"http://news.test/{number}" for number in range(20)]
    with multiprocessing.get_context("spawn").Pool(1) as other, SqliteStore(tmp_path) as store:
        for url in urls[: 20 // writers]:
            store.upsert(article(url, "2026-11-20T10:00:00Z"))
        if writers == 2:
            other.apply(_other_writer_upserts, (str(tmp_path), urls[10:]))
        path = store.path("2026w47")
        assert path.with_name(path.name + "-wal").stat().st_size > 0, "the articles are in the -wal"
        moved = path.with_name("moved.sqlite")
        path.rename(moved)
        store.upsert(article("http://news.test/after", "2026-11-20T11:00:00Z"))
        if writers == 2:
            other.apply(_other_writer_upserts, (str(tmp_path), ["http://news.test/after-too"]))
    with sqlite3.connect(moved) as kept:
        assert kept.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert sorted(url for (url,) in kept.execute("SELECT url FROM articles")) == sorted(urls)
    with SqliteStore(tmp_path) as store:
        assert store.count() == writers


@pytest.mark.parametrize("other", ["another week's file", "a file in WAL mode"])
def test_a_weeks_file_replaced_by_mv_of_another_database_under_a_writing_store_is_read_as_it_is(
    tmp_path: Path, other: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`mv OTHER articles_2026w47.sqlite` while a worker writes the week, its -wal and -shm left at the
    path: the worker let its file go (replaced) and opened the one now there, and SQLite applied the -wal
    left at the path, the replaced file's, to it: the file put there "malformed" (or its rows out of order),
    the worker's later writes, acknowledged, in it. Now the worker applies that -wal to the file it had open
    and removes it before it opens the one put there, which is read as it was put there."""
    with SqliteStore(tmp_path / "data") as store:
        store.upsert_many([article(f"http://news.test/last-{n}", "2026-11-13T10:00:00Z") for n in range(10)])
        store.upsert_many([article(f"http://news.test/first-{n}", "2026-11-20T10:00:00Z") for n in range(20)])
        path = store.path("2026w47")
        assert path.with_name(path.name + "-wal").stat().st_size > 0, "the articles are in the -wal"
        if other == "a file in WAL mode":
            with SqliteStore(tmp_path / "other") as elsewhere:
                elsewhere.upsert(article("http://news.test/elsewhere", "2026-11-20T09:00:00Z"))
                source = elsewhere.path("2026w47")
            kept = ["http://news.test/elsewhere"]
        else:
            store.flush()
            source = tmp_path / "copy.sqlite"
            shutil.copy(store.path("2026w46"), source)
            kept = [f"http://news.test/last-{n}" for n in range(10)]
        source.rename(path)
        assert store.upsert(article("http://news.test/after", "2026-11-20T11:00:00Z")).outcome == "new"
    with sqlite3.connect(path) as put:
        assert put.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert sorted(url for (url,) in put.execute("SELECT url FROM articles")) == sorted(
            [*kept, "http://news.test/after"]
        )
    said = [record.getMessage() for record in caplog.records if str(path) in record.getMessage()]
    assert said == [
        f"the article store {path} was replaced by another file while this process had it open (a `mv` onto"
        " it): the -wal file left beside it, the replaced file's, was applied to that file and removed, so"
        " that the file now at the path is read as it was put there; move a week's file with its -wal and"
        " -shm files, every crawler on the folder stopped first (docs/operations.md, 'Backing up a week')"
    ], said


@pytest.mark.parametrize("when", ["before the store opens it", "under a writing store"])
def test_another_programs_database_at_a_weeks_name_is_refused_naming_it_and_left_as_it_is(
    tmp_path: Path, when: str
) -> None:
    """Another program's SQLite database put at a week's name (`mv app.db articles_2026w47.sqlite`, while a
    worker writes the week or before): the store switched it to WAL mode and wrote the crawler's tables
    into it, its articles stored beside that program's tables, nothing said. It is now refused, as a
    damaged week is (no wait mends it), naming the file and what to do; the file is left as it was."""
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as app:
        app.execute("CREATE TABLE users (name TEXT)")
        app.execute("INSERT INTO users VALUES ('ann')")
    app.close()
    with SqliteStore(tmp_path / "data") as store:
        path = store.path("2026w47")
        if when == "under a writing store":
            store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        else:
            path.parent.mkdir(parents=True)
        foreign.rename(path)
        with pytest.raises(DamagedWeekError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
    assert str(raised.value) == (
        f"cannot open the article store {path}: the file is no week of articles but another program's SQLite"
        " database (its tables: users; no schema version), put at a week's name: move it out of the folder;"
        " the week's file is made anew when an article is next stored in that week"
    ), raised.value
    with sqlite3.connect(path) as app:
        assert app.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert app.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == [("users",)]
    app.close()


class _SchemaCommittedAfterFirstRead:
    """A connection whose first statement is followed by another process's commit of a new week's schema
    (``commit``): the moment two processes opening a new week's file meet."""

    def __init__(self, connection: sqlite3.Connection, commit: Any) -> None:
        self.connection, self.commit, self.reads = connection, commit, 0

    def execute(self, sql: str) -> _Rows:
        rows = _Rows(self.connection.execute(sql).fetchall())  # its read ended: no lock held
        self.reads += 1
        if self.reads == 1:
            self.commit()
        return rows


class _Rows(list[tuple[Any, ...]]):
    """A statement's rows, read to the end: a cursor's ``fetchone`` and iteration."""

    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None


def test_a_new_weeks_file_whose_schema_another_process_commits_as_it_is_opened_is_no_other_programs(
    tmp_path: Path,
) -> None:
    """A new week's file opened as another process commits its tables and schema version (one transaction):
    the version was read before that commit and the tables after it, and the week was refused as "another
    program's SQLite database" (a fresh-clone CI: one of six processes opening 30 new files together)."""
    from crawler.store.sqlite import _check_article_store

    with SqliteStore(tmp_path) as store:
        path = store.path("2026w47")
        path.parent.mkdir(parents=True)
        opening = sqlite3.connect(path)
        try:
            other = _SchemaCommittedAfterFirstRead(
                opening, lambda: store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
            )
            _check_article_store(other, path)  # type: ignore[arg-type]
            assert other.reads == 1, "the version and the tables in one statement"
        finally:
            opening.close()
        assert store.count() == 1


def test_last_weeks_file_deleted_under_a_writing_store_leaves_this_weeks_writes_stored(
    tmp_path: Path,
) -> None:
    """Dropping an old week is deleting its file (docs/storage.md); a worker that read last week's file
    (the URL look-up of a retry across midnight, the duplicate window) had it open, and every write of the
    week after failed, naming the deleted file, until the worker was restarted."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/last-week", "2026-11-13T10:00:00Z"))
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        store.path("2026w46").unlink()
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
        assert store.weeks() == ["2026w47"]
        assert store.count() == 2


def test_a_batch_looks_up_the_weeks_files_of_its_duplicate_window_once_not_at_each_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Profiled (bench/crawl.py, 4,000 articles): the store's thread looked up each week's file of the
    duplicate window (a stat of the file, or of the path where none is, 8 us each) about four times per new
    article. A batch now looks each week up once, at its first use: a batch of 20 new articles stats the
    weeks' files as often as a batch of 2."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/last-week", "2026-11-13T10:00:00Z"))
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        looked: list[str] = []
        stat = Path.stat

        def counted(self: Path, **kwargs: Any) -> os.stat_result:
            if self.name.startswith("articles_"):
                looked.append(self.name)
            return stat(self, **kwargs)

        def batch(count: int, first: int) -> list[dict[str, Any]]:
            return [
                make_document(article(f"http://news.test/{first + n}", f"2026-11-20T11:{n:02d}:00Z"))
                for n in range(count)
            ]

        monkeypatch.setattr(Path, "stat", counted)
        assert [written.outcome for written in store.write(batch(2, 0))] == ["new"] * 2
        two, looked[:] = len(looked), []
        assert [written.outcome for written in store.write(batch(20, 100))] == ["new"] * 20
        assert len(looked) == two, looked


def test_the_weeks_of_a_new_articles_duplicate_window_are_worked_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Profiled (bench/crawl.py): the store's thread worked out the weeks of each new article's duplicate
    window twice (for its paragraph counts, then for its candidates), through its bounds as text parsed back
    (40 us an article). Now once an article, from its first_seen: the same weeks, at a year's end and a
    week's bounds too."""
    with SqliteStore(tmp_path) as store:
        for first_seen in (
            "2026-11-20T11:00:00Z",
            "2026-11-23T00:00:00Z",
            "2026-11-29T23:59:59.999999Z",
            "2026-12-31T12:00:00.5+02:00",
            "2027-01-04T00:00:00Z",
        ):
            lower, upper = store.dedup_range({"first_seen": first_seen})
            before = weeks_between(datetime.fromisoformat(lower), datetime.fromisoformat(upper))
            assert store.dedup_weeks({"first_seen": first_seen}) == before, first_seen
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        worked_out: list[str] = []
        dedup_weeks = SqliteStore.dedup_weeks

        def counted(self: SqliteStore, document: Mapping[str, Any]) -> list[str]:
            worked_out.append(document["url"])
            return dedup_weeks(self, document)

        monkeypatch.setattr(SqliteStore, "dedup_weeks", counted)
        documents = [
            make_document(article(f"http://news.test/{n}", f"2026-11-20T11:{n:02d}:00Z")) for n in range(5)
        ]
        assert [written.outcome for written in store.write(documents)] == ["new"] * 5
    assert worked_out == [document["url"] for document in documents]


def test_a_windows_week_file_moved_between_two_batches_of_a_write_is_noticed_by_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch looks each week's file up once (above), at least once a batch: last week's file moved out
    (what to do with a damaged one) after a write's first batch is noticed by its second, which reads the
    file now at the path (none) and finds no original of the repost there."""
    aside = tmp_path / "aside"
    aside.mkdir()
    with SqliteStore(tmp_path / "data", batch_size=2) as store:
        store.upsert(article("http://news.test/flood", "2026-11-13T10:00:00Z", body=FLOOD))
        path = store.path("2026w46")
        homes = SqliteStore._homes
        batches: list[int] = []

        def moving(self: SqliteStore, documents: Sequence[dict[str, Any]]) -> list[str]:
            batches.append(len(documents))
            if len(batches) == 2:
                for file in path.parent.glob(f"{path.name}*"):
                    file.rename(aside / file.name)
            return homes(self, documents)

        monkeypatch.setattr(SqliteStore, "_homes", moving)
        written = store.write(
            [
                make_document(
                    article("http://news.test/repost-1", "2026-11-18T10:00:00Z", body=FLOOD_REPOST)
                ),
                make_document(article("http://news.test/other", "2026-11-18T10:01:00Z", body=FLOOD_OTHER)),
                make_document(
                    article("http://news.test/repost-2", "2026-11-18T10:02:00Z", body=FLOOD_REPOST)
                ),
            ]
        )
    assert batches == [2, 1]
    assert [w.outcome for w in written] == ["repost", "new", "new"]
    assert f"the article store {path} was moved or deleted while this process had it open" in caplog.text


def test_a_weeks_file_deleted_while_a_write_is_committed_into_it_is_no_stored_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file deleted between the store's look at it and the commit: the write went into no file a reader
    sees; it fails, so that its request is not acknowledged, and its retry stores it at the path."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
        write_one = SqliteStore._write_one

        def deleting(self: SqliteStore, *args: Any) -> Written:
            path.unlink(missing_ok=True)
            return write_one(self, *args)

        monkeypatch.setattr(SqliteStore, "_write_one", deleting)
        with pytest.raises(StoreError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
        assert str(raised.value) == (
            f"cannot write 1 article (first http://news.test/second) to {path}: the file was moved or deleted"
            " as it was written, so what was written is in no file a reader sees; it is to be written again,"
            " into the file at that path"
        )
        monkeypatch.setattr(SqliteStore, "_write_one", write_one)
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
    with SqliteStore(tmp_path) as store:
        assert [d["url"] for d in store.iter_articles()] == ["http://news.test/second"]


def test_a_weeks_file_emptied_between_two_writes_is_made_anew_said_once_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file cut to 0 bytes in place while the store has it open, its pages all in it (checkpointed): the
    next write failed as on a damaged file ("file is not a database", restore it), whose articles are
    dead-lettered, though the file is only to be made anew, as the store makes one it opens emptied."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
        other = sqlite3.connect(path)
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages in the file, not in its -wal
        other.close()
        os.truncate(path, 0)
        caplog.set_level(logging.WARNING, logger="crawler.store.sqlite")
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
        assert store.upsert(article("http://news.test/third", "2026-11-20T12:00:00Z")).outcome == "new"
        assert store.weeks_made_anew() == 1
    assert len(caplog.records) == 1
    assert (
        caplog.records[0]
        .getMessage()
        .startswith(f"the article store {path} was emptied (0 bytes) while this process had it open")
    )
    with SqliteStore(tmp_path) as store:
        assert sorted(d["url"] for d in store.iter_articles()) == [
            "http://news.test/second",
            "http://news.test/third",
        ]


@pytest.mark.parametrize("checkpointed", [True, False])
def test_a_weeks_file_emptied_while_a_write_is_committed_into_it_is_no_stored_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, checkpointed: bool
) -> None:
    """A file cut to 0 bytes in place between the store's look at it and the commit: the write went into
    the -wal of an emptied file, SQLite reading zeros for every page not in it (found "malformed", and so a
    damaged week whose articles are dead-lettered, or not, and then acknowledged). It fails as one to try
    again, so that its request is not acknowledged; the next write makes the file anew and stores it."""
    with SqliteStore(tmp_path) as store:
        store.upsert_many(
            [
                article(f"http://news.test/before-{n}", "2026-11-20T09:00:00Z", body=f"Story {n}. " * 200)
                for n in range(40)
            ]
        )
        if checkpointed:  # every page in the file, none in the -wal: SQLite reads them as zeros, "malformed"
            other = sqlite3.connect(store.path("2026w47"))
            other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            other.close()
        path = store.path("2026w47")
        write_one = SqliteStore._write_one

        def emptying(self: SqliteStore, *args: Any) -> Written:
            os.truncate(path, 0)
            return write_one(self, *args)

        monkeypatch.setattr(SqliteStore, "_write_one", emptying)
        caplog.set_level(logging.WARNING, logger="crawler.store.sqlite")
        with pytest.raises(StoreError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
        assert str(raised.value).startswith(
            f"cannot write 1 article (first http://news.test/second) to {path}: the file was emptied (0"
            " bytes) as it was written, so what was written is in no sound file; it is to be written again,"
            " into the file made anew at that path"
        ), raised.value
        assert not lasting_failure(raised.value)
        monkeypatch.setattr(SqliteStore, "_write_one", write_one)
        assert store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z")).outcome == "new"
        assert store.weeks_made_anew() == 1
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        f"the article store {path} was emptied (0 bytes) while this process had it open (a copy or restore"
        " onto it that failed, a redirection `>` onto it)"
    ]
    with SqliteStore(tmp_path) as store:
        assert [d["url"] for d in store.iter_articles()] == ["http://news.test/second"]


@pytest.mark.parametrize(
    ("damaged", "how", "error"),
    [
        ("2026w47", "header", "file is not a database"),
        ("2026w47", "page", "database disk image is malformed"),
        ("2026w46", "header", "file is not a database"),
        ("2026w46", "page", "database disk image is malformed"),
    ],
)
def test_a_week_damaged_under_a_writing_store_is_named_with_what_to_do(
    tmp_path: Path, damaged: str, how: str, error: str
) -> None:
    """A week's file damaged while a worker has it open (overwritten by another program, a failing disk; one
    cut to 0 bytes is made anew: test_a_weeks_file_emptied_between_two_writes_...): this week's, which it
    writes, or last week's, which it reads for the URL look-up and the duplicate window. The write failed
    with SQLite's words alone ('cannot write ... : file is not a database'), where the same file damaged
    before the worker opened it is named with what to do."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/last-week", "2026-11-13T10:00:00Z"))
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path(damaged)
        other = sqlite3.connect(path)
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages in the file, not in its -wal
        other.close()
        with path.open("r+b") as file:
            file.seek(0 if how == "header" else 2 * 4096)
            file.write(b"damaged!" * 512)
        with pytest.raises(StoreError) as raised:
            store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
    assert str(raised.value).endswith(
        f"{path}: {error}; the file is damaged: restore it from a backup (docs/operations.md, 'Backing up a"
        " week'), or move it out of the folder to go on without that week's articles"
    ), raised.value
    assert lasting_failure(raised.value)


def test_a_week_to_migrate_kept_locked_by_another_process_names_the_file_and_what_to_do(
    tmp_path: Path,
) -> None:
    """A week's file of an older schema is migrated when opened, under its write lock: another process
    holding that lock past the busy timeout is named as a write's is, not a bare "database is locked"."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
    _as_old_version(path, 6)
    with (
        _write_lock_held(path),
        SqliteStore(tmp_path, busy_timeout=0.1) as store,
        pytest.raises(StoreError) as raised,
    ):
        store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
    assert str(raised.value) == (
        f"cannot open the article store {path}: database is locked; another process held the write lock"
        f" of {path} for over 0.1 s (the busy timeout), which setting up the file's schema (upgrading an"
        " older crawler's file) needs: a sqlite3 shell or a script in a write transaction, or another crawler"
        f" upgrading the file (a large week takes a while); end it (`fuser {path}` names the processes that"
        " have the file open)"
    ), raised.value


@contextmanager
def _write_lock_held(path: Path) -> Iterator[None]:
    """The write lock of the SQLite file ``path`` held by another connection (a write transaction left open,
    as a sqlite3 shell leaves it), let go at the end."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """``folder`` made one no file can be created in: without write permission, or as root (whom
    permissions do not stop) immutable (``chattr +i``); writable again at the end."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no unwritable folder can be made as root")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_new_week_in_a_folder_that_cannot_be_written_says_to_make_the_folder_writable(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "articles"
    folder.mkdir()
    with SqliteStore(tmp_path) as store, _unwritable(folder), pytest.raises(StoreError) as raised:
        store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
    assert str(raised.value) == (
        f"cannot create the article store {folder / 'articles_2026w47.sqlite'}: unable to open database"
        f" file; make {folder} and its files writable by the crawler's user (a file marked immutable too:"
        " chattr -i), or remount its disk read-write"
    ), raised.value
    assert list(folder.iterdir()) == []


def test_a_week_read_while_its_folder_could_not_be_written_is_opened_again_once_it_can(
    tmp_path: Path,
) -> None:
    """A worker that opens a week's file while data/articles cannot be written (`chmod a-w`; chattr +i as
    root) and no -wal is beside it reads it as it is (SQLite's immutable: no lock, no -wal), and its writes
    of the week fail, saying to make the folder writable. Made writable again, the worker kept that
    connection: every write of the week failed on, still saying to make the folder writable ("attempt to
    write a readonly database"), its articles dead-lettered at once, until the worker was restarted; and
    it read the week without the other workers' writes in its -wal. Now the week is opened again, with its
    -wal, at its first look-up once the folder can be written."""
    urls = [f"http://news.test/{n}" for n in range(31)]
    with SqliteStore(tmp_path) as store:
        store.upsert(article(urls[0], "2026-11-20T10:00:00Z"))
        path = store.path("2026w47")
    worker = SqliteStore(tmp_path)
    try:
        with _unwritable(path.parent):
            assert worker.count() == 1  # read in place
            with pytest.raises(StoreError) as raised:
                worker.upsert(article(urls[1], "2026-11-20T10:01:00Z"))
        assert str(raised.value) == (
            f"cannot write 1 article (first {urls[1]}) to {path}: attempt to write a readonly database;"
            f" make {path.parent} and its files writable by the crawler's user (a file marked immutable too:"
            " chattr -i), or remount its disk read-write"
        ), raised.value
        with SqliteStore(tmp_path) as other:
            other.upsert_many([article(url, "2026-11-20T10:02:00Z") for url in urls[1:11]])
            for url in urls[11:21]:
                worker.upsert(article(url, "2026-11-20T10:03:00Z"))
            other.upsert_many([article(url, "2026-11-20T10:04:00Z") for url in urls[21:]])
    finally:
        worker.close()
    with sqlite3.connect(path) as kept:
        assert kept.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with SqliteStore(tmp_path) as store:
        assert sorted(document["url"] for document in store.iter_articles()) == sorted(urls)


# A worker's store that stores 20 articles into the file (checkpointed), 20 into its -wal, has the -wal
# deleted (between two writes, or as one is written), stores 40 more, and is killed before it closes.
_WAL_DELETED_CHILD = """
import os, sys
from pathlib import Path
from test_store_contract import article
from crawler.store import SqliteStore

def batch(start):
    return [article(f"http://news.test/{n}", "2026-11-20T10:00:00Z", body=f"Story {n}. " * 100)
            for n in range(start, start + 20)]

store = SqliteStore(sys.argv[1])
store.upsert_many(batch(0))
store.flush()
store.upsert_many(batch(20))
wal = Path(f"{store.path('2026w47')}-wal")
write_one = SqliteStore._write_one
if sys.argv[2] == "between":
    wal.unlink()
else:
    def deleting(self, *args):
        wal.unlink(missing_ok=True)
        return write_one(self, *args)
    SqliteStore._write_one = deleting
store.upsert_many(batch(40))
SqliteStore._write_one = write_one
store.upsert_many(batch(60))
os._exit(0)
"""


@pytest.mark.parametrize("when", ["between", "during"])
def test_a_weeks_wal_deleted_under_a_writing_store_loses_no_article_and_is_said_once(
    tmp_path: Path, when: str
) -> None:
    """A week's -wal deleted while a worker writes the week (a clean-up of the folder): SQLite wrote on into
    the -wal it held open, deleted, so that readers failed on the week ("disk I/O error ... restore it from
    a backup") and a worker killed before it closed the week lost every article since the file's last
    checkpoint (60 of 80 here). The store now copies that -wal into the file as it finds it gone (at the
    first look-up of a write, and after a commit), says so once and opens the week again."""
    done = subprocess.run(
        [sys.executable, "-c", _WAL_DELETED_CHILD, str(tmp_path), when],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with SqliteStore(tmp_path) as store:
        assert store.count() == 80
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    assert done.stderr.splitlines() == [
        f"the -wal file of the article store {path} was deleted while this process had the week open (a"
        " clean-up of the folder, a backup tool): the articles written into it were copied into the file, and"
        " the week is opened again with a -wal of its own; never delete a week's -wal or -shm file while a"
        " crawler runs (docs/storage.md)"
    ], done.stderr[-2000:]


def test_a_weeks_shm_deleted_under_a_writing_store_loses_no_other_processs_article_and_is_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A week's -shm deleted while a worker writes the week (a clean-up of the folder): the worker wrote on
    with the -shm it had mapped, deleted, while a worker that opened the week after made a new one: two
    -shm files, two write locks and two indexes of the one -wal, each worker writing its frames over the
    other's. In the fault hunt, the 60 articles the other worker stored (acknowledged) after the deletion
    were gone, the file sound, nothing said. Now the worker finds its -shm gone (its inode, looked at with
    the file's at the first look-up of a batch and after a commit), says so once and opens the week again
    with the -shm now at the path, without copying the -wal into the file through the index it had (as it
    closes too: that index lacked the other worker's articles, and the close deleted the -wal)."""
    batches = {
        name: [article(f"http://news.test/{name}-{n}", "2026-11-20T10:00:00Z") for n in range(20)]
        for name in ("a", "b", "c", "p", "q", "r", "s")
    }
    with multiprocessing.get_context("spawn").Pool(1) as other, SqliteStore(tmp_path) as store:
        store.upsert_many(batches["a"])
        path = store.path("2026w47")
        Path(f"{path}-shm").unlink()
        for mine, theirs in (("b", "p"), ("c", "q"), (None, "r")):
            other.apply(_other_writer_upserts_many, (str(tmp_path), batches[theirs]))
            if mine is not None:
                store.upsert_many(batches[mine])
        other.apply(_other_writer_closes, (str(tmp_path),))
        Path(f"{path}-shm").unlink()
        other.apply(_other_writer_upserts_many, (str(tmp_path), batches["s"]))
        other.apply(_other_writer_closes, (str(tmp_path),))
    with sqlite3.connect(path) as kept:
        assert kept.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert kept.execute("SELECT count(*) FROM articles").fetchone() == (140,)
    said = [record.getMessage() for record in caplog.records if str(path) in record.getMessage()]
    assert said == [
        f"the -shm file of the article store {path} was deleted while this process had the week open (a"
        " clean-up of the folder, a backup tool): the week is opened again with the -shm file at its path,"
        " which the processes that opened it since write with (two -shm files let two processes write the"
        " -wal at once, each over the other's articles); never delete a week's -wal or -shm file while a"
        " crawler runs (docs/storage.md)"
    ], said


def _other_writer_upserts_many(directory: str, documents: list[dict[str, Any]]) -> None:
    """In a process of its own (a pool's, called again): upsert ``documents`` with the store it keeps open."""
    _OTHER_WRITER.setdefault(directory, SqliteStore(directory)).upsert_many(documents)


def _other_writer_closes(directory: str) -> None:
    _OTHER_WRITER.pop(directory).close()


_FROZEN_SHM_CHILD = """
import subprocess, sys
from test_store_contract import article
from crawler.store import SqliteStore, StoreError

store = SqliteStore(sys.argv[1])
store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
shm = f"{store.path('2026w47')}-shm"
subprocess.run(["chattr", "+i", shm], check=True)
try:
    store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
except StoreError as exc:
    print(exc)
finally:
    store.close()
    subprocess.run(["chattr", "-i", shm], check=True)
"""


def test_a_weeks_shm_file_made_immutable_under_a_writing_store_fails_its_writes_without_a_crash(
    tmp_path: Path,
) -> None:
    """The -shm file beside a week's file, which a worker's connection maps in memory, marked immutable
    (``chattr +i``, as ``chattr -R +i data/`` does) while the worker has it open: its next write (or read)
    of the week, and its close, killed the worker with SIGBUS, no line said why (and a temp crawl printed
    no summary). The write now fails, naming the file and what to do; the store closes without a crash."""
    probe = tmp_path / "probe"
    probe.touch()
    if os.geteuid() != 0 or subprocess.run(["chattr", "+i", str(probe)], check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no immutable file can be made")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FROZEN_SHM_CHILD, str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        )
    finally:  # a child killed before its own chattr -i
        subprocess.run(["chattr", "-i", f"{path}-shm"], capture_output=True, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == (
        f"cannot use the article store {path}: articles_2026w47.sqlite-shm beside it was made read-only (or"
        " immutable) while this process had the week open, and SQLite would crash the process on it; make"
        f" {path.parent} and its files writable by the crawler's user (a file marked immutable too: chattr"
        " -i), or remount its disk read-write"
    )
    assert f"the article store {path} is left as it is, not closed" in done.stderr
    with SqliteStore(tmp_path) as store:
        assert [d["url"] for d in store.iter_articles()] == ["http://news.test/first"]


_FROZEN_SHM_MOVED_CHILD = """
import os, shutil, subprocess, sys
from test_store_contract import article
from crawler.store import SqliteStore, StoreError

store = SqliteStore(sys.argv[1])
store.upsert(article("http://news.test/first", "2026-11-20T10:00:00Z"))
path = store.path("2026w47")
if sys.argv[2] == "moved":
    os.rename(path, f"{path}.moved")
else:
    shutil.copy(path, f"{path}.copy")
    os.replace(f"{path}.copy", path)
shm = f"{path}-shm"
subprocess.run(["chattr", "+i", shm], check=True)
try:
    store.upsert(article("http://news.test/second", "2026-11-20T11:00:00Z"))
except StoreError as exc:
    print(exc)
finally:
    store.close()
    subprocess.run(["chattr", "-i", shm], check=True)
"""


@pytest.mark.parametrize("change", ["moved", "replaced"])
def test_a_week_moved_or_replaced_with_its_shm_file_made_immutable_is_let_go_without_a_crash(
    tmp_path: Path, change: str
) -> None:
    """A week's file moved away (or replaced) under a writing store, its -shm file then marked immutable:
    the store lets the connection to the old file go (_forget) and closes it, which does not crash the
    process as the close of a connection to an unmoved file would (SQLite checkpoints no moved file as it
    closes, so nothing is written through the -shm mapping); the write fails naming the file."""
    probe = tmp_path / "probe"
    probe.touch()
    if os.geteuid() != 0 or subprocess.run(["chattr", "+i", str(probe)], check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no immutable file can be made")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FROZEN_SHM_MOVED_CHILD, str(tmp_path), change],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        )
    finally:  # a child killed before its own chattr -i
        subprocess.run(["chattr", "-i", f"{path}-shm"], capture_output=True, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    said = "was moved or deleted" if change == "moved" else "was replaced by another file"
    assert f"the article store {path} {said} while this process had it open" in done.stderr
    assert f"{path}: attempt to write a readonly database" in done.stdout, done.stdout


# --- where a worker stores (its heartbeat; `crawler status` warns when the workers alive store apart) -------


def _where(uri: str, prefix: str = "news") -> str:
    return store_config({"MONGO_URI": uri, "MONGO_DB_PREFIX": prefix}).where()


def test_one_mongodb_written_in_different_ways_is_one_place() -> None:
    same = [
        "mongodb://crawler:s3cret@db1.test:27017,db2.test/news?replicaSet=rs0&w=majority",
        "mongodb://other:s3cret2@DB2.test:27017,db1.test:27017/?w=majority&replicaSet=rs0",
        "mongodb://db2.test,db1.test/admin?authSource=admin&replicaSet=rs0&tls=false",
    ]
    places = {_where(uri) for uri in same}
    assert places == {"mongodb://db1.test:27017,db2.test:27017 (news_*)"}, places
    srv = "mongodb+srv://u:s3cret@Cluster.test/?retryWrites=true"
    assert _where(srv) == "mongodb+srv://cluster.test (news_*)"
    assert _where("mongodb://u:s3cret@[::1]:27018,%2Ftmp%2Fmongodb.sock/") == (
        "mongodb://%2Ftmp%2Fmongodb.sock,[::1]:27018 (news_*)"
    )


def test_other_mongodb_servers_or_prefixes_are_other_places() -> None:
    first = _where("mongodb://db1.test,db2.test/")
    assert _where("mongodb://db1.test,db3.test/") != first
    assert _where("mongodb://db1.test:27018,db2.test/") != first
    assert _where("mongodb://db1.test,db2.test/", prefix="other") != first


def test_a_store_made_with_a_batch_size_out_of_range_says_so_as_the_setting_check_does(
    tmp_path: Path,
) -> None:
    """A store made in code (not from settings) refuses STORE_BATCH_SIZE 0 in the words of every setting's
    check (crawler.bounds.checked_setting): the setting, the value, the range, the default and the fix."""
    from crawler.store.mongo import MongoStore

    refused = (
        "STORE_BATCH_SIZE is 0: expected a number of articles, 1 or more (a whole number) (the default is"
        " 100); set STORE_BATCH_SIZE to a value in that range where it is given"
    )
    with pytest.raises(StoreError) as sqlite_refused:
        SqliteStore(tmp_path, batch_size=0)
    assert str(sqlite_refused.value).startswith(refused)
    with pytest.raises(StoreError) as mongo_refused:
        MongoStore("mongodb://127.0.0.1:1/", spool_dir=tmp_path, batch_size=0)
    assert str(mongo_refused.value).startswith(refused)


def test_a_store_made_with_a_batch_size_past_any_float_is_refused_in_the_settings_words(
    tmp_path: Path,
) -> None:
    """A whole number too large for a float (10**400) is refused as a setting out of its range, not left to
    an OverflowError traceback from the range check."""
    refused = r"^STORE_BATCH_SIZE is 1000+: expected a number of articles, 1 or more"
    with pytest.raises(StoreError, match=refused):
        SqliteStore(tmp_path, batch_size=10**400)


def _stored_body_not_utf8(tmp_path: Path) -> Path:
    """The week file of http://news.test/old (body FLOOD), its stored body damaged by a byte that is not
    UTF-8 at its end; its path."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/old", "2026-11-19T10:00:00Z", body=FLOOD))
        path = store.path("2026w47")
    with sqlite3.connect(path) as damage:
        damage.execute(
            "UPDATE articles SET body = CAST(CAST(body AS BLOB) || X'ff' AS TEXT) WHERE url = 'http://news.test/old'"
        )
    damage.close()
    return path


def test_a_near_duplicate_of_a_stored_body_that_is_not_utf8_is_stored_as_its_repost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored body that is not UTF-8 (a damaged week file) made the write of a new article it was a
    duplicate candidate of fail ('Could not decode to UTF-8 column 'body''), to be retried then
    dead-lettered; it is read with the bytes it cannot decode as U+FFFD, and a warning names the file."""
    path = _stored_body_not_utf8(tmp_path)
    with SqliteStore(tmp_path) as store:
        written = store.upsert(article("http://news.test/new", "2026-11-20T10:00:00Z", body=FLOOD_REPOST))
        assert (written.outcome, written.original) == ("repost", "http://news.test/old")
        candidate = Candidate("http://news.test/old", "citynews", "2026w47", "", None, None)
        assert store._body(None, candidate) == FLOOD + "\ufffd"
    assert f"the article store {path} holds text that is not UTF-8" in caplog.text, caplog.text


def test_a_week_that_holds_text_that_is_not_utf8_is_warned_of_once_not_at_each_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A week's file whose stored body is not UTF-8 (damaged, or written by another program) warned at each
    read that met it: each new article of the week whose near-duplicate candidate it is (a worker storing a
    flood of reposts of it: 20 lines for 20 articles here). It is warned of once a file for the life of the
    store: the damage lasts."""
    path = _stored_body_not_utf8(tmp_path)
    with SqliteStore(tmp_path) as store:
        for number in range(20):
            written = store.upsert(
                article(f"http://news.test/new{number}", "2026-11-20T10:00:00Z", body=FLOOD_REPOST)
            )
            assert (written.outcome, written.original) == ("repost", "http://news.test/old")
    warned = [record for record in caplog.records if "holds text that is not UTF-8" in record.getMessage()]
    assert len(warned) == 1, [record.getMessage() for record in warned]
    assert str(path) in warned[0].getMessage()


def test_a_url_is_looked_up_in_reposts_and_redirects_through_the_rows_that_record_some(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`show URL` of a repost's URL reads the rows that record reposts through their partial index (version
    8), and of one stored nowhere the table of the URLs that redirected to articles, not every row of every
    week; a version 7 file gets them when it is opened."""
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD))
        store.upsert(article("http://other.test/copy", "2026-11-17T11:00:00Z", body=FLOOD_REPOST))
    path = tmp_path / "articles" / "articles_2026w47.sqlite"
    with sqlite3.connect(path) as old:
        old.executescript(
            _WITHOUT_REDIRECTS_TABLE
            + "DROP INDEX IF EXISTS articles_reposted; DROP INDEX IF EXISTS articles_redirected;"
            " PRAGMA user_version = 7;"
        )
    old.close()
    asked: list[tuple[str, Sequence[object]]] = []
    newest = SqliteStore._newest

    def spied(self: SqliteStore, query: str, params: Sequence[object]) -> dict[str, Any] | None:
        asked.append((query, params))
        return newest(self, query, params)

    monkeypatch.setattr(SqliteStore, "_newest", spied)
    with SqliteStore(tmp_path) as store:
        original = store.original_of("http://other.test/copy")
        assert original is not None and original["url"] == "http://news.test/flood"
        assert store.redirected_to("http://nowhere.test/") is None
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        plans = [" ".join(row[3] for row in check.execute(f"EXPLAIN QUERY PLAN {q}", p)) for q, p in asked]
    check.close()
    assert len(plans) == 2
    assert "USING INDEX articles_reposted" in plans[0], plans[0]
    assert "SEARCH redirects USING PRIMARY KEY (url=?)" in plans[1], plans[1]
    assert "SCAN" not in plans[1], plans[1]


def test_stats_count_a_damaged_reposts_or_extraction_as_the_article_is_read(tmp_path: Path) -> None:
    """A row whose ``reposts`` or ``extraction`` does not parse (written by another program, or damaged
    on disk) made `articles stats` fail on the whole week ('cannot read the article store ...: malformed
    JSON'), where reading the article takes those columns as empty: stats counts it so, with no repost and
    no qRead body."""
    qread = {"body_from": "qread", "algorithm": "qread", "body_chars": 10}
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/1", "2026-11-17T10:00:00Z", body=FLOOD, extraction=qread))
        store.upsert(article("http://news.test/2", "2026-11-17T11:00:00Z", body=FLOOD_OTHER))
        store.upsert(article("http://other.test/copy", "2026-11-17T12:00:00Z", body=FLOOD_REPOST))
        path = store.path("2026w47")
    with sqlite3.connect(path) as damaging:
        damaging.execute(
            "UPDATE articles SET extraction = '{\"body_fr', reposts = '[{\"url' WHERE url = 'http://news.test/2'"
        )
    damaging.close()
    with SqliteStore(tmp_path) as store:
        assert store.stats() == [
            {"week": "2026w47", "site": "citynews", "articles": 2, "reposts": 1, "qread": 1}
        ]


def _full_read_stats(store: SqliteStore) -> list[dict[str, Any]]:
    """The figures of `articles stats` counted from every article read whole, as stats once did."""
    counted: dict[tuple[str, str], dict[str, Any]] = {}
    for document in store.iter_articles(limit=None):
        row = counted.setdefault(
            (document["week"], document["site"]),
            {"week": document["week"], "site": document["site"], "articles": 0, "reposts": 0, "qread": 0},
        )
        row["articles"] += 1
        row["reposts"] += len(document["reposts"])
        row["qread"] += (document["extraction"] or {}).get("body_from") == "qread"
    return [counted[key] for key in sorted(counted)]


def test_stats_read_indexes_and_the_rows_that_record_reposts_not_every_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`articles stats` read every article of every week (11.5 s at 845,000 articles in 26 weeks): it
    counts them per site from an index, the reposts through the rows that record some
    (articles_reposted), and the qRead bodies from articles_qread, which a version 8 file made by an older
    crawler gets when it is opened. Its figures are those of every article read whole, after a repost is
    added to an article of a closed week, an article is stored there by a crawler that does not know the
    index, and a week is deleted."""
    qread = {"body_from": "qread", "algorithm": "qread", "body_chars": 10}
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/1", "2026-11-10T10:00:00Z", extraction=qread))
        store.upsert(article("http://other.test/1", "2026-11-10T11:00:00Z", site="other", extraction=qread))
        store.upsert(article("http://news.test/2", "2026-11-17T10:00:00Z", body=FLOOD))
        store.upsert(article("http://news.test/3", "2026-11-17T11:00:00Z", site="other", extraction=qread))
        store.upsert(article("http://other.test/2", "2026-11-24T10:00:00Z", site="other"))
        old = store.path("2026w47")
    with sqlite3.connect(old) as older:
        older.execute("DROP INDEX articles_qread")
    older.close()
    asked: list[str] = []
    query = SqliteStore._query

    def spied(self: SqliteStore, week: str, sql: str, params: Sequence[object], **kw: bool) -> list[Any]:
        asked.append(sql)
        return query(self, week, sql, params, **kw)

    monkeypatch.setattr(SqliteStore, "_query", spied)
    with SqliteStore(tmp_path) as store:
        assert store.stats() == _full_read_stats(store)
        assert [row["qread"] for row in store.stats()] == [1, 1, 0, 1, 0]
        store.upsert(article("http://copy.test/1", "2026-11-23T09:00:00Z", site="copy", body=FLOOD_REPOST))
        assert store.stats("2026w47") == [
            {"week": "2026w47", "site": "citynews", "articles": 1, "reposts": 1, "qread": 0},
            {"week": "2026w47", "site": "other", "articles": 1, "reposts": 0, "qread": 1},
        ]
    with sqlite3.connect(store.path("2026w46")) as other_crawler:
        other_crawler.execute(
            "INSERT INTO articles (id, url, site, fields, fetched_at, first_seen, week, extraction)"
            " SELECT 'ffffffffffffffff', 'http://news.test/9', site, fields, fetched_at, first_seen, week,"
            " extraction FROM articles WHERE url = 'http://news.test/1'"
        )
    other_crawler.close()
    store.path("2026w48").unlink()
    with SqliteStore(tmp_path) as store:
        stats = store.stats()
        assert stats == _full_read_stats(store)
        assert [tuple(row.values()) for row in stats] == [
            ("2026w46", "citynews", 2, 0, 2),
            ("2026w46", "other", 1, 0, 1),
            ("2026w47", "citynews", 1, 1, 0),
            ("2026w47", "other", 1, 0, 1),
        ]
    with sqlite3.connect(old) as check:
        counting = next(sql for sql in reversed(asked) if "GROUP BY site" in sql)
        plan = " ".join(row[3] for row in check.execute(f"EXPLAIN QUERY PLAN {counting}"))
    check.close()
    assert "SCAN articles USING COVERING INDEX" in plan, plan
    assert "USING INDEX articles_reposted" in plan and "USING INDEX articles_qread" in plan, plan
    assert "SCAN articles " not in plan.replace("SCAN articles USING", ""), plan


def test_stats_of_a_read_only_file_made_by_an_older_crawler_reads_every_article(tmp_path: Path) -> None:
    """A version 8 file without articles_qread (an older crawler's) that cannot be written (made
    immutable: ``chattr +i``, which root obeys, as a read-only disk) is read as before, its qRead bodies
    counted from every article: the index is left to the next process that can write the file."""
    qread = {"body_from": "qread", "algorithm": "qread", "body_chars": 10}
    with SqliteStore(tmp_path) as store:
        store.upsert(article("http://news.test/1", "2026-11-17T10:00:00Z", extraction=qread))
        store.upsert(article("http://news.test/2", "2026-11-17T11:00:00Z"))
        path = store.path("2026w47")
    with sqlite3.connect(path) as older:
        older.execute("DROP INDEX articles_qread")
    older.close()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no read-only file can be made as root")
    try:
        with SqliteStore(tmp_path) as store:
            assert store.stats() == [
                {"week": "2026w47", "site": "citynews", "articles": 2, "reposts": 0, "qread": 1}
            ]
            assert [document["url"] for document in store.iter_articles()] == [
                "http://news.test/2",
                "http://news.test/1",
            ]
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
