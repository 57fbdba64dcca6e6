"""The article store: week names, upserts (idempotent, also across processes), reads, filters and files."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from crawler.store import SqliteStore, StoreError, article_id, open_store, week_of
from crawler.store.base import DOCUMENT_FIELDS, content_hash, previous_week, week_bounds

WRITERS = 4
SHARED_URLS = 200


def article(url: str, fetched_at: str, *, site: str = "citynews", **extra: Any) -> dict[str, Any]:
    return {
        "site": site,
        "url": url,
        "fetched_at": fetched_at,
        "title": f"Title of {url}",
        "body": f"Body of {url}.",
        "published": "2026-11-20",
        "author": "A. Writer",
        "fields": {"section": "city"},
        "job": "job-1",
        **extra,
    }


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


def test_upsert_is_idempotent(store: SqliteStore) -> None:
    item = article("http://news.test/a", "2026-11-20T10:00:00Z")
    assert store.upsert(item) is True
    assert store.upsert(item) is False
    assert store.upsert(dict(item)) is False
    assert store.count() == 1


def test_the_stored_document_has_every_field(store: SqliteStore) -> None:
    url = "http://news.test/a"
    extraction = {"body_from": "rule", "algorithm": None, "body_chars": 24}
    store.upsert(article(url, "2026-11-20T10:00:00+00:00", extraction=extraction, _html="<html></html>"))
    document = store.get(url)
    assert document == {
        "id": article_id(url),
        "url": url,
        "site": "citynews",
        "title": f"Title of {url}",
        "body": f"Body of {url}.",
        "published": "2026-11-20",
        "author": "A. Writer",
        "fields": {"section": "city"},
        "fetched_at": "2026-11-20T10:00:00.000000Z",
        "first_seen": "2026-11-20T10:00:00.000000Z",
        "week": "2026w47",
        "extraction": extraction,
        "content_hash": content_hash(f"Body of {url}."),
        "job": "job-1",
    }
    assert list(document) == list(DOCUMENT_FIELDS)
    assert store.get(article_id(url)) == document
    assert store.get("http://news.test/missing") is None


def test_a_refetch_updates_the_fields_but_keeps_first_seen(store: SqliteStore) -> None:
    url = "http://news.test/a"
    store.upsert(article(url, "2026-11-20T10:00:00Z"))
    assert (
        store.upsert(article(url, "2026-11-21T08:00:00Z", title="Corrected title", body="New body.")) is False
    )
    document = store.get(url)
    assert document is not None
    assert (document["title"], document["body"]) == ("Corrected title", "New body.")
    assert document["fetched_at"] == "2026-11-21T08:00:00.000000Z"
    assert document["first_seen"] == "2026-11-20T10:00:00.000000Z"
    assert document["content_hash"] == content_hash("New body.")
    # A fetch older than the stored one (a late retry) changes nothing.
    store.upsert(article(url, "2026-11-20T12:00:00Z", title="Stale title"))
    assert store.get(url) == document


def test_a_retry_after_the_week_ended_updates_last_weeks_document(store: SqliteStore) -> None:
    url = "http://news.test/a"
    assert store.upsert(article(url, "2027-01-03T23:59:50Z")) is True
    assert store.upsert(article(url, "2027-01-04T00:00:30Z", title="Retried")) is False
    assert store.weeks() == ["2026w53"]
    document = store.get(url)
    assert document is not None
    assert (document["week"], document["title"]) == ("2026w53", "Retried")
    # More than a week later, the URL gets a document in its new week.
    assert store.upsert(article(url, "2027-01-12T09:00:00Z")) is True
    assert store.weeks() == ["2026w53", "2027w02"]
    newest = store.get(url)
    assert newest is not None and newest["week"] == "2027w02"


def test_upsert_many_counts_new_urls_and_validates_before_writing(tmp_path: Path) -> None:
    with SqliteStore(tmp_path, batch_size=3) as store:
        items = [article(f"http://news.test/{n}", f"2026-11-2{n % 3}T10:00:00Z") for n in range(10)]
        assert store.upsert_many(items) == 10
        assert store.upsert_many([*items[:4], article("http://news.test/new", "2026-11-20T10:00:00Z")]) == 1
        assert store.count() == 11
        with pytest.raises(StoreError, match=r"article http://news.test/bad: unknown field 'colour'"):
            store.upsert_many(
                [
                    article("http://news.test/12", "2026-11-20T10:00:00Z"),
                    {**article("http://news.test/bad", "2026-11-20T10:00:00Z"), "colour": "red"},
                ]
            )
        assert store.count() == 11


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fetched_at": "yesterday"}, r"field 'fetched_at' 'yesterday' is not an ISO-8601 time"),
        ({"site": ""}, r"field 'site' is '': expected a site id"),
        ({"title": 12}, r"field 'title' is 12: expected a string or None"),
        ({"fields": ["a"]}, r"field 'fields' is \['a'\]: expected a mapping"),
        ({"fields": {"when": datetime(2026, 1, 1)}}, r"field 'fields' cannot be stored as JSON"),
    ],
)
def test_an_invalid_article_is_refused_with_the_field_named(
    store: SqliteStore, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(StoreError, match=rf"article http://news.test/a: {message}"):
        store.upsert({**article("http://news.test/a", "2026-11-20T10:00:00Z"), **change})
    assert store.count() == 0


def test_an_article_without_fetched_at_or_url_is_refused(store: SqliteStore) -> None:
    item = article("http://news.test/a", "2026-11-20T10:00:00Z")
    del item["fetched_at"]
    with pytest.raises(StoreError, match="field 'fetched_at' is missing"):
        store.upsert(item)
    with pytest.raises(StoreError, match="field 'url' is None: expected a non-empty string"):
        store.upsert({"site": "citynews", "fetched_at": "2026-11-20T10:00:00Z"})


def test_count_per_site_and_week(store: SqliteStore) -> None:
    store.upsert_many(
        [
            article("http://news.test/1", "2026-11-17T10:00:00Z"),
            article("http://news.test/2", "2026-11-18T10:00:00Z"),
            article("http://other.test/1", "2026-11-18T10:00:00Z", site="other"),
            article("http://news.test/3", "2026-11-24T10:00:00Z"),
        ]
    )
    assert store.count() == 4
    assert store.count(site="citynews") == 3
    assert store.count(week="2026w47") == 3
    assert store.count(site="citynews", week="2026w48") == 1
    assert store.count(site="other", week="2026w48") == 0
    assert store.count(week="2026w30") == 0


def test_iter_articles_orders_by_first_seen_and_filters(store: SqliteStore) -> None:
    times = {
        "http://news.test/1": "2026-11-16T09:00:00Z",
        "http://other.test/1": "2026-11-17T09:00:00Z",
        "http://news.test/2": "2026-11-22T23:00:00Z",
        "http://news.test/3": "2026-11-23T01:00:00Z",
        "http://other.test/2": "2026-11-25T09:00:00Z",
    }
    store.upsert_many(
        article(url, fetched, site="other" if "other" in url else "citynews")
        for url, fetched in times.items()
    )
    # A re-fetch moves fetched_at, never first_seen, so it does not change the order.
    store.upsert(article("http://news.test/1", "2026-11-24T09:00:00Z"))

    def urls(**query: Any) -> list[str]:
        return [document["url"] for document in store.iter_articles(**query)]

    newest = list(reversed(times))
    assert urls() == newest
    assert urls(newest_first=False) == list(times)
    assert urls(site="citynews") == ["http://news.test/3", "http://news.test/2", "http://news.test/1"]
    assert urls(week="2026w47") == ["http://news.test/2", "http://other.test/1", "http://news.test/1"]
    assert urls(since=datetime(2026, 11, 17, 9, tzinfo=UTC)) == newest[:4]
    assert urls(until=datetime(2026, 11, 23, 1, tzinfo=UTC)) == newest[2:]
    assert urls(since=datetime(2026, 11, 22, 12), until=datetime(2026, 11, 24)) == newest[1:3]
    assert urls(limit=2) == newest[:2]
    assert urls(limit=3, newest_first=False) == list(times)[:3]
    assert urls(limit=0) == []
    with pytest.raises(StoreError, match="limit -1 is negative"):
        store.iter_articles(limit=-1)


def test_iter_articles_reads_large_weeks_in_pages(tmp_path: Path) -> None:
    start = datetime(2026, 11, 16, tzinfo=UTC)
    with SqliteStore(tmp_path, batch_size=500) as store:
        store.upsert_many(
            article(f"http://news.test/{n}", (start + timedelta(seconds=n // 2)).isoformat())
            for n in range(1234)
        )
        documents = list(store.iter_articles(newest_first=False))
        assert len(documents) == 1234
        assert len({document["url"] for document in documents}) == 1234
        keys = [document["first_seen"] for document in documents]
        assert keys == sorted(keys)
        assert len(list(store.iter_articles(limit=777))) == 777


def test_open_store_reads_settings_or_the_environment(tmp_path: Path) -> None:
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BATCH_SIZE": "7"}) as store:
        assert isinstance(store, SqliteStore)
        assert store.directory == tmp_path / "articles"
        assert store.batch_size == 7
    with pytest.raises(StoreError, match="STORE_BATCH_SIZE is 'many': expected a whole number"):
        open_store({"CRAWLER_DATA_DIR": str(tmp_path), "STORE_BATCH_SIZE": "many"})


def test_mongo_uri_is_refused_by_name_without_showing_the_password(tmp_path: Path) -> None:
    settings = {"CRAWLER_DATA_DIR": str(tmp_path), "MONGO_URI": "mongodb://crawler:s3cret@db.example:27017/x"}
    with pytest.raises(StoreError, match="MONGO_URI is set") as raised:
        open_store(settings)
    assert "s3cret" not in str(raised.value)
    assert "mongodb://db.example:27017/" in str(raised.value)


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.upsert(article("http://news.test/a", "2026-11-20T10:00:00Z"))
    store.flush()
    store.close()
    store.close()
    with pytest.raises(StoreError, match=r"the article store under .*articles is closed"):
        store.count()


def _write_shared_urls(data_dir: str, writer: int) -> int:
    """One writer process: the same URLs as every other writer, one committed upsert each."""
    new = 0
    with SqliteStore(data_dir) as store:
        for n in range(SHARED_URLS):
            fetched_at = f"2026-11-20T10:{n // 60:02d}:{n % 60:02d}.{writer:06d}Z"
            new += store.upsert(article(f"http://news.test/{n}", fetched_at, title=f"writer {writer}"))
    return new


def test_concurrent_writer_processes_store_each_url_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(WRITERS) as pool:
        new_counts = pool.starmap(_write_shared_urls, [(str(tmp_path), writer) for writer in range(WRITERS)])
    assert sum(new_counts) == SHARED_URLS  # each URL was new to exactly one writer
    with SqliteStore(tmp_path) as store:
        assert store.weeks() == ["2026w47"]
        assert store.count() == SHARED_URLS
        # The newest fetch of each URL won, whichever process wrote last.
        assert {document["title"] for document in store.iter_articles()} == {f"writer {WRITERS - 1}"}
    with sqlite3.connect(tmp_path / "articles" / "articles_2026w47.sqlite") as connection:
        (rows,) = connection.execute("SELECT count(*) FROM articles").fetchone()
    connection.close()
    assert rows == SHARED_URLS
