"""The store contract: the same cases against every backend.

- ``sqlite``: the embedded store, always.
- ``mongodb``: a real MongoDB server, when ``MONGO_URI`` is set (each test uses databases of its own
  prefix, dropped afterwards); skipped, saying so, when it is not.
- ``mongo-shaped-fake``: the MongoDB store's code over mongomock (tests/mongofake.py). It checks the
  store's query and update shapes; it is NOT MongoDB and counts as nothing more. Cases that need what
  mongomock lacks (``$text``, several processes) skip on it.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import xxhash

from crawler.store import DOCUMENT_FIELDS, DedupPolicy, Store, StoreError, Written, article_id, content_hash
from crawler.store.fingerprint import from_hex, hamming, simhash, to_hex
from crawler.store.sqlite import SqliteStore

MONGO_URI = os.environ.get("MONGO_URI")
BACKENDS = ["sqlite", "mongodb", "mongo-shaped-fake"]
WRITERS = 4
SHARED_URLS = 120

# Two different articles about the same event, and a repost of the first one with a byline and site
# chrome added (the body a crawler reads on the reposting site).
FLOOD = (
    "Heavy rain flooded the lower districts of Riverton on Tuesday night, forcing the evacuation of"
    " more than two thousand residents from homes along the Miller River.\n\n"
    "The river rose four metres in six hours after the storm stalled over the valley, the regional"
    " water authority said, and the old levee near the rail bridge gave way shortly after midnight.\n\n"
    "Mayor Ellen Park said emergency shelters at the sports hall and two schools were taking in"
    " families, and asked people to stay away from the flooded streets until the water recedes.\n\n"
    "Forecasters expect more rain on Thursday. Repairs to the levee will start once the water level"
    " drops, which engineers say could take the rest of the week."
)
FLOOD_REPOST = "By Jane Doe, Staff Reporter\n\n" + FLOOD + "\n\nShare this article. Read more: weather news."
FLOOD_OTHER = (
    "Residents of Riverton returned on Friday to homes damaged by this week's flood, as the Miller"
    " River fell back below its banks for the first time since the storm.\n\n"
    "Insurers estimate the damage at several million, and the city council will meet on Monday to"
    " discuss a new levee. Mayor Ellen Park said the old one had been due for repair for years.\n\n"
    "Volunteers cleared mud from the main street while engineers inspected the rail bridge, which"
    " stays closed to trains until the checks are complete, the rail operator said."
)
CHINESE = (
    "本市昨日举行科技创新大会，来自全国各地的三百多家企业参加了展览，展示了人工智能、新能源汽车和生物医药"
    "等领域的最新成果。\n\n市长在开幕式上表示，今年将投入五十亿元支持企业研发，并在高新区建设新的孵化基地，"
    "吸引更多年轻人才来本市创业。\n\n大会将持续三天，市民可以凭身份证免费参观。"
)


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


def open_backend(kind: str, tmp_path: Path, prefix: str, **options: Any) -> Store:
    """A store of ``kind`` over ``tmp_path`` (SQLite files, the spool) and, for MongoDB, ``prefix``."""
    if kind == "sqlite":
        return SqliteStore(tmp_path, **options)
    from crawler.store.mongo import MongoStore

    if kind == "mongodb":
        if not MONGO_URI:
            pytest.skip("MONGO_URI is not set: no MongoDB server to run the contract against")
        return MongoStore(MONGO_URI, spool_dir=tmp_path, prefix=prefix, **options)
    from mongofake import FakeClient

    client = options.pop("client", None) or FakeClient()
    return MongoStore("mongodb://fake", spool_dir=tmp_path, prefix=prefix, client=client, **options)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"test{uuid.uuid4().hex[:10]}"
    yield name
    if MONGO_URI:
        from pymongo import MongoClient

        client: MongoClient[dict[str, Any]] = MongoClient(MONGO_URI, serverSelectionTimeoutMS=3000)
        for database in client.list_database_names():
            if database.startswith(f"{name}_"):
                client.drop_database(database)
        client.close()


@pytest.fixture
def store(backend: str, tmp_path: Path, prefix: str) -> Iterator[Store]:
    opened = open_backend(backend, tmp_path, prefix)
    try:
        yield opened
    finally:
        opened.close()


def outcomes(results: list[Written]) -> list[str]:
    return [result.outcome for result in results]


# --- upserts ----------------------------------------------------------------------------------------------


def test_upsert_is_idempotent(store: Store) -> None:
    item = article("http://news.test/a", "2026-11-20T10:00:00Z")
    assert store.upsert(item) == Written("new", "http://news.test/a")
    assert store.upsert(item).outcome == "updated"
    assert store.upsert(dict(item)).outcome == "updated"
    assert store.count() == 1


def test_the_stored_document_has_every_field(store: Store) -> None:
    url = "http://news.test/a"
    extraction = {"body_from": "rule", "algorithm": None, "body_chars": len(FLOOD)}
    summary = {"1": "Heavy rain flooded Riverton.", "3": "Heavy rain flooded Riverton. More rain."}
    store.upsert(
        article(
            url, "2026-11-20T10:00:00+00:00", body=FLOOD, extraction=extraction, summary=summary, _html="<p>"
        )
    )
    document = store.get(url)
    fingerprint = simhash(FLOOD)
    assert fingerprint is not None
    assert document == {
        "id": article_id(url),
        "url": url,
        "site": "citynews",
        "title": f"Title of {url}",
        "body": FLOOD,
        "published": "2026-11-20",
        "author": "A. Writer",
        "fields": {"section": "city"},
        "fetched_at": "2026-11-20T10:00:00.000000Z",
        "first_seen": "2026-11-20T10:00:00.000000Z",
        "week": "2026w47",
        "extraction": extraction,
        "content_hash": content_hash(FLOOD),
        "simhash": to_hex(fingerprint),
        "summary": summary,
        "reposts": [],
        "job": "job-1",
        "redirected_from": [],
    }
    assert list(document) == list(DOCUMENT_FIELDS)
    assert store.get(article_id(url)) == document
    assert store.get("http://news.test/missing") is None


def test_a_refetch_updates_the_fields_but_keeps_first_seen(store: Store) -> None:
    url = "http://news.test/a"
    store.upsert(article(url, "2026-11-20T10:00:00Z"))
    refetch = article(url, "2026-11-21T08:00:00Z", title="Corrected title", body="New body.")
    assert store.upsert(refetch).outcome == "updated"
    document = store.get(url)
    assert document is not None
    assert (document["title"], document["body"]) == ("Corrected title", "New body.")
    assert document["fetched_at"] == "2026-11-21T08:00:00.000000Z"
    assert document["first_seen"] == "2026-11-20T10:00:00.000000Z"
    assert document["content_hash"] == content_hash("New body.")
    # A fetch older than the stored one (a late retry) changes nothing.
    assert store.upsert(article(url, "2026-11-20T12:00:00Z", title="Stale title")).outcome == "unchanged"
    assert store.get(url) == document


def test_a_refetch_that_reads_no_title_date_or_author_keeps_those_stored(backend: str, store: Store) -> None:
    """`temp --stored` with a rule without `published` wiped the dates the feed had given (3 articles)."""
    url = "http://news.test/a"
    store.upsert(article(url, "2026-11-20T10:00:00Z", title="Harbour bridge reopens"))
    refetch = article(url, "2026-11-21T08:00:00Z", title=None, published=None, author=None, body="New body.")
    assert store.upsert(refetch).outcome == "updated"
    document = store.get(url)
    assert document is not None
    assert (document["title"], document["published"], document["author"], document["body"]) == (
        "Harbour bridge reopens",
        "2026-11-20",
        "A. Writer",
        "New body.",
    )
    if backend != "mongo-shaped-fake":  # mongomock has no $text
        assert [found["url"] for found in store.search("harbour")] == [url]
    # A value read replaces the one stored, and a new article keeps its nones.
    store.upsert(article(url, "2026-11-22T08:00:00Z", published="2026-11-19", author=None))
    document = store.get(url)
    assert document is not None
    assert (document["published"], document["author"]) == ("2026-11-19", "A. Writer")
    other = "http://news.test/b"
    assert store.upsert(article(other, "2026-11-22T08:00:00Z", published=None, author=None)).new
    assert (store.get(other) or {}).get("published", "missing") is None
    assert (store.get(other) or {}).get("author", "missing") is None


def test_a_feed_entry_fills_only_the_fields_a_stored_article_lacks(backend: str, store: Store) -> None:
    """An article stored before its feed was read had no date; the feed's entry, meeting its URL seen,
    gives it one, and never replaces a title, date or author the document has."""
    url = "http://news.test/a"
    store.upsert(article(url, "2026-11-20T10:00:00Z", title=None, published=None, author="Desk"))
    entry = {"title": "Harbour bridge reopens", "published": "2026-11-19T08:00:00+00:00", "author": "Feed"}
    assert store.fill_empty(url, entry) == ("title", "published")
    document = store.get(url)
    assert document is not None
    assert (document["title"], document["published"], document["author"]) == (
        "Harbour bridge reopens",
        "2026-11-19T08:00:00+00:00",
        "Desk",
    )
    if backend != "mongo-shaped-fake":  # mongomock has no $text
        assert [found["url"] for found in store.search("harbour")] == [url]
    assert store.fill_empty(url, {**entry, "published": "2026-01-01"}) == (), "a known value stays"
    assert (store.get(url) or {})["published"] == "2026-11-19T08:00:00+00:00"
    assert store.fill_empty("http://news.test/unstored", entry) is None


def test_a_retry_after_the_week_ended_updates_last_weeks_document(store: Store) -> None:
    url = "http://news.test/a"
    assert store.upsert(article(url, "2027-01-03T23:59:50Z")).new
    assert store.upsert(article(url, "2027-01-04T00:00:30Z", title="Retried")).outcome == "updated"
    assert store.weeks() == ["2026w53"]
    document = store.get(url)
    assert document is not None
    assert (document["week"], document["title"]) == ("2026w53", "Retried")
    # More than a week later, the URL gets a document in its new week.
    assert store.upsert(article(url, "2027-01-12T09:00:00Z")).new
    assert store.weeks() == ["2026w53", "2027w02"]
    newest = store.get(url)
    assert newest is not None and newest["week"] == "2027w02"


def test_a_refetch_whose_clock_went_back_over_the_weeks_end_makes_no_second_document(store: Store) -> None:
    """A clock set back an hour over Monday's midnight (it ran ahead, NTP set it right): the page stored at
    Monday 00:30 by it, fetched again at what reads Sunday 23:35, is the same document, an older fetch that
    changes nothing; it is not stored anew in the Sunday's week."""
    url = "http://news.test/a"
    assert store.upsert(article(url, "2026-11-30T00:30:00Z")).new
    again = store.upsert(article(url, "2026-11-29T23:35:00Z", title="Fetched by the clock set back"))
    assert again.outcome == "unchanged"
    assert store.weeks() == ["2026w49"]
    assert store.count() == 1
    document = store.get(url)
    assert document is not None and document["title"] == f"Title of {url}"


def test_upsert_many_reports_each_article_and_validates_before_writing(store: Store) -> None:
    items = [article(f"http://news.test/{n}", f"2026-11-2{n % 3}T10:00:00Z") for n in range(10)]
    assert outcomes(store.upsert_many(items)) == ["new"] * 10
    again = store.upsert_many([*items[:4], article("http://news.test/new", "2026-11-20T10:00:00Z")])
    assert outcomes(again) == ["updated"] * 4 + ["new"]
    assert [result.url for result in again][-1] == "http://news.test/new"
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
        ({"summary": {"1": 3}}, r"field 'summary' is \{'1': 3\}: expected a mapping of lengths to texts"),
    ],
)
def test_an_invalid_article_is_refused_with_the_field_named(
    store: Store, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(StoreError, match=rf"article http://news.test/a: {message}"):
        store.upsert({**article("http://news.test/a", "2026-11-20T10:00:00Z"), **change})
    assert store.count() == 0


def test_a_write_over_a_stored_url_says_whether_the_same_job_stored_it(store: Store) -> None:
    """A crawl job counts an article it stored once, even when its write is repeated (its request's
    acknowledgement lost): the store tells such a write from one over an article stored before the job."""
    url = "http://news.test/jobs"
    assert store.upsert(article(url, "2026-11-20T10:00:00Z")) == Written("new", url)
    assert store.upsert(article(url, "2026-11-20T11:00:00Z")) == Written("updated", url, same_job=True)
    assert store.upsert(article(url, "2026-11-20T12:00:00Z", job="job-2")) == Written("updated", url)
    older = store.upsert(article(url, "2026-11-20T09:00:00Z", job="job-2"))
    assert older == Written("unchanged", url, same_job=True)
    assert store.upsert(article(url, "2026-11-20T13:00:00Z", job=None)) == Written("updated", url)
    assert store.upsert(article(url, "2026-11-20T14:00:00Z", job=None)) == Written("updated", url), (
        "no job: nothing to tell"
    )


def test_the_fragment_of_a_url_is_dropped_and_a_copy_under_another_is_the_same_document(
    store: Store,
) -> None:
    first = store.upsert(article("http://news.test/6#frag", "2026-11-17T10:00:00Z", body=FLOOD))
    assert first == Written("new", "http://news.test/6")
    again = store.upsert(article("http://news.test/6#other", "2026-11-17T11:00:00Z", body=FLOOD))
    assert again == Written("updated", "http://news.test/6", same_job=True), "the same page, not a repost"
    (stored,) = store.iter_articles()
    assert (stored["url"], stored["id"], stored["reposts"]) == (
        "http://news.test/6",
        article_id("http://news.test/6"),
        [],
    )
    with pytest.raises(StoreError, match="field 'url' is '#top': expected a non-empty string before its"):
        store.upsert(article("#top", "2026-11-17T11:00:00Z"))


def test_an_article_reached_through_redirects_is_found_by_each_url_asked_for(store: Store) -> None:
    """The URLs that redirected to an article's URL when it was fetched are kept with it (fragments dropped,
    each once, never its own URL), added to by later fetches and never dropped by one that was not
    redirected; ``redirected_to`` finds the article by any of them."""
    url, old, short = "http://news.test/a/7", "http://news.test/r/7", "http://t.test/7"
    first = store.upsert(
        article(url, "2026-11-20T10:00:00Z", redirected_from=[f"{short}#x", old, short, f"{url}#top"])
    )
    assert first == Written("new", url)
    document = store.get(url)
    assert document is not None and document["redirected_from"] == [short, old]
    assert store.redirected_to(old) == document
    assert store.redirected_to(short) == document
    assert store.get(old) is None and store.redirected_to(url) is None
    assert store.redirected_to("http://news.test/r/8") is None
    assert store.upsert(article(url, "2026-11-20T11:00:00Z")).outcome == "updated"
    refetched = store.get(url)
    assert refetched is not None and refetched["redirected_from"] == [short, old], "kept by a direct fetch"
    again = "http://news.test/r/7?via=feed"
    assert store.upsert(article(url, "2026-11-20T12:00:00Z", redirected_from=[again, old])).outcome == (
        "updated"
    )
    latest = store.get(url)
    assert latest is not None and latest["redirected_from"] == [short, old, again]
    assert store.redirected_to(again) == latest
    wrong = article("http://news.test/b", "2026-11-20T10:00:00Z", redirected_from="http://x.test/")
    with pytest.raises(StoreError, match=r"field 'redirected_from' is 'http://x\.test/': expected a list of"):
        store.upsert(wrong)


def test_links_that_redirected_to_a_stored_article_are_added_to_its_redirected_from(store: Store) -> None:
    """A link skipped unfetched because it redirects to an article stored (or to a URL that redirected to
    it) is added to the article's ``redirected_from`` as a fetch through it would add it; a URL of no
    document adds nothing."""
    url, short = "http://news.test/a/9", "http://t.test/9"
    store.upsert(article(url, "2026-11-20T10:00:00Z", redirected_from=[short]))
    tracked, old = "http://news.test/a/9?utm=x", "http://news.test/r/9"
    assert store.add_redirects(url, [f"{tracked}#top", short, url])
    via_short = "http://feed.test/9"
    assert store.add_redirects(short, [via_short, old])
    document = store.get(url)
    assert document is not None and document["redirected_from"] == [short, tracked, via_short, old]
    assert store.redirected_to(via_short) == document
    assert not store.add_redirects("http://news.test/a/10", [old])


def test_a_url_that_redirected_to_two_articles_of_a_week_finds_the_one_fetched_last(store: Store) -> None:
    """A short link that led to one article, then (the site changed it) to another: ``redirected_to``
    gives the article it led to last, as it gives the newest week's across weeks."""
    short = "http://t.test/7"
    first, then = "http://news.test/a/7", "http://news.test/a/8"
    assert store.upsert(article(first, "2026-11-17T10:00:00Z", redirected_from=[short])).new
    assert store.upsert(article(then, "2026-11-18T10:00:00Z", redirected_from=[short])).new
    found = store.redirected_to(short)
    assert found is not None and found["url"] == then
    assert store.upsert(article(first, "2026-11-19T10:00:00Z", redirected_from=[short])).outcome == "updated"
    again = store.redirected_to(short)
    assert again is not None and again["url"] == first, "fetched through the link last"


def test_an_article_without_fetched_at_or_url_is_refused(store: Store) -> None:
    item = article("http://news.test/a", "2026-11-20T10:00:00Z")
    del item["fetched_at"]
    with pytest.raises(StoreError, match="field 'fetched_at' is missing"):
        store.upsert(item)
    with pytest.raises(StoreError, match="field 'url' is None: expected a non-empty string"):
        store.upsert({"site": "citynews", "fetched_at": "2026-11-20T10:00:00Z"})


# --- reads ------------------------------------------------------------------------------------------------


def test_count_per_site_and_week(store: Store) -> None:
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


def test_delete_site_deletes_its_articles_of_every_week_and_no_other(store: Store) -> None:
    store.upsert(article("http://news.test/a", "2026-11-17T10:00:00Z"))
    store.upsert(article("http://news.test/b", "2026-11-24T10:00:00Z"))
    store.upsert(article("http://other.test/a", "2026-11-17T10:00:00Z", site="other"))
    assert store.delete_site("citynews") == 2
    assert store.count(site="citynews") == 0 and store.get("http://news.test/a") is None
    assert [d["url"] for d in store.iter_articles()] == ["http://other.test/a"]
    assert store.delete_site("citynews") == 0, "nothing left to delete"
    store.upsert(article("http://news.test/a", "2026-11-17T12:00:00Z"))
    assert store.count(site="citynews") == 1, "stored again as new"


def test_iter_articles_orders_by_first_seen_and_filters(store: Store) -> None:
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


def test_iter_articles_filters_by_the_published_instant_in_every_week(store: Store) -> None:
    """``published_since``/``published_until`` compare the instant each stored ``published`` names (a date
    alone its midnight UTC, a time without an offset UTC), in every week whatever its first-seen dates:
    an old article found late, and one first seen before the date it gives; values that are no date are
    left out."""
    stored = {
        "http://news.test/date": ("2026-11-20T09:00:00Z", "2026-11-20"),
        "http://news.test/east": ("2026-11-20T09:01:00Z", "2026-11-20T06:00:00+08:00"),  # 11-19 22:00 UTC
        "http://news.test/west": ("2026-11-21T09:00:00Z", "2026-11-20T23:30:00-05:00"),  # 11-21 04:30 UTC
        "http://news.test/naive": ("2026-11-20T13:00:00Z", "2026-11-20T12:00:00"),
        "http://news.test/text": ("2026-11-20T14:00:00Z", "Friday afternoon"),
        "http://news.test/none": ("2026-11-20T15:00:00Z", None),
        "http://news.test/next": ("2026-11-21T10:00:00Z", "2026-11-21"),
        "http://news.test/late": ("2026-12-02T08:00:00Z", "2026-11-20T10:00:00Z"),
        "http://news.test/ahead": ("2026-11-15T22:30:00Z", "2026-11-20T00:30:00+00:00"),
    }
    store.upsert_many(
        article(url, seen, published=published, site="other" if url.endswith("naive") else "citynews")
        for url, (seen, published) in stored.items()
    )

    def urls(**query: Any) -> list[str]:
        return [document["url"].rsplit("/", 1)[1] for document in store.iter_articles(**query)]

    day = {"published_since": datetime(2026, 11, 20, tzinfo=UTC), "published_until": datetime(2026, 11, 21)}
    assert urls(newest_first=False, **day) == ["ahead", "date", "naive", "late"]
    assert urls(**day) == ["late", "naive", "date", "ahead"]
    assert urls(limit=2, **day) == ["late", "naive"], "the limit counts the articles in the window"
    assert urls(site="citynews", **day) == ["late", "date", "ahead"]
    assert urls(week="2026w47", **day) == ["naive", "date"]
    assert urls(since=datetime(2026, 11, 20, 10), **day) == ["late", "naive"]
    assert urls(published_since=datetime(2026, 11, 21, 4, 30, tzinfo=UTC)) == ["west"]
    assert urls(published_until=datetime(2026, 11, 20)) == ["east"]
    assert urls(published_since=datetime(2026, 11, 19, 22, tzinfo=UTC), limit=100) == [
        "late",
        "next",
        "west",
        "naive",
        "east",
        "date",
        "ahead",
    ]


def test_iter_articles_reads_large_weeks_in_pages_with_ties_in_id_order(
    backend: str, tmp_path: Path, prefix: str
) -> None:
    start = datetime(2026, 11, 16, tzinfo=UTC)
    with open_backend(backend, tmp_path, prefix, batch_size=500) as store:
        store.upsert_many(
            article(f"http://news.test/{n}", (start + timedelta(seconds=n // 3)).isoformat())
            for n in range(1234)
        )
        documents = list(store.iter_articles(newest_first=False))
        assert len(documents) == 1234
        keys = [(document["first_seen"], document["id"]) for document in documents]
        assert keys == sorted(keys)
        assert len(set(keys)) == 1234
        assert len(list(store.iter_articles(limit=777))) == 777


def test_search_finds_whole_words_phrases_and_chinese(backend: str, store: Store) -> None:
    if backend == "mongo-shaped-fake":
        pytest.skip("mongomock has no $text: search runs against SQLite and a real MongoDB only")
    store.upsert_many(
        [
            article("http://news.test/flood", "2026-11-17T10:00:00Z", title="Riverton flood", body=FLOOD),
            article(
                "http://news.test/after", "2026-11-18T10:00:00Z", title="After the flood", body=FLOOD_OTHER
            ),
            article(
                "http://cn.test/keji", "2026-11-18T11:00:00Z", site="huaxia", title="科技大会", body=CHINESE
            ),
        ]
    )

    def found(text: str, **options: Any) -> list[str]:
        return [document["url"] for document in store.search(text, **options)]

    assert found("levee") == ["http://news.test/after", "http://news.test/flood"]
    assert found("LEVEE Mayor") == ["http://news.test/after", "http://news.test/flood"]
    assert found('"rail bridge" evacuation') == ["http://news.test/flood"]
    assert found("lev") == [], "whole words only"
    assert found("人工智能") == ["http://cn.test/keji"]
    assert found("levee", site="huaxia") == []
    assert found("levee", limit=1) == ["http://news.test/after"]
    assert found("levee", week="2026w47") == ["http://news.test/after", "http://news.test/flood"]
    for nothing in ('  ""  ', "?!", "- --"):
        with pytest.raises(StoreError, match="has no words"):
            list(store.search(nothing))


def test_search_takes_the_first_seen_and_the_published_windows(store: Store) -> None:
    """``since``/``until`` (first seen, which prunes weeks) and ``published_since``/``published_until``
    (the published instant; a document with no date left out) as :meth:`Store.iter_articles` takes them;
    a Chinese term, which MongoDB finds by regex (the pymongo-shaped fake has no ``$text``)."""
    stored = {
        "old": ("2026-11-17T10:00:00Z", "2026-11-17"),
        "east": ("2026-11-20T10:00:00Z", "2026-11-20T06:00:00+08:00"),  # 11-19 22:00 UTC
        "none": ("2026-11-20T12:00:00Z", None),
        "other": ("2026-11-20T13:00:00Z", "2026-11-20"),
        "late": ("2026-12-02T08:00:00Z", "2026-11-20T10:00:00Z"),
    }
    store.upsert_many(
        article(
            f"http://cn.test/{name}",
            seen,
            published=published,
            body=f"{name}: no such words here."
            if name == "other"
            else f"人工智能的报道 http://cn.test/{name}",
        )
        for name, (seen, published) in stored.items()
    )

    def found(**options: Any) -> list[str]:
        return [document["url"].rsplit("/", 1)[1] for document in store.search("人工智能", **options)]

    day = {"published_since": datetime(2026, 11, 20, tzinfo=UTC), "published_until": datetime(2026, 11, 21)}
    assert found() == ["late", "none", "east", "old"]
    assert found(since=datetime(2026, 11, 20)) == ["late", "none", "east"]
    assert found(until=datetime(2026, 11, 20)) == ["old"]
    assert found(since=datetime(2026, 11, 18), until=datetime(2026, 11, 21)) == ["none", "east"]
    assert found(**day) == ["late"]
    assert found(published_until=datetime(2026, 11, 20)) == ["east", "old"]
    assert found(since=datetime(2026, 11, 20), published_until=datetime(2026, 11, 20)) == ["east"]
    assert found(published_since=datetime(2026, 11, 17), limit=2) == ["late", "east"]
    assert found(week="2026w47", published_since=datetime(2026, 11, 17)) == ["east", "old"]


def test_search_ignores_accents_as_the_indexes_do(backend: str, store: Store) -> None:
    if backend == "mongo-shaped-fake":
        pytest.skip("mongomock has no $text: search runs against SQLite and a real MongoDB only")
    store.upsert_many(
        [
            article(
                "http://news.test/accents",
                "2026-11-17T10:00:00Z",
                title="Café culture",
                body="A naïve guide to Zürich's cafés.",
            ),
            article(
                "http://news.test/plain", "2026-11-18T10:00:00Z", title="Cafe prices", body="Zurich is dear."
            ),
        ]
    )

    def found(text: str) -> list[str]:
        return [document["url"] for document in store.search(text)]

    both = ["http://news.test/plain", "http://news.test/accents"]
    assert found("cafe") == both
    assert found("CAFÉ") == both
    assert found("zurich") == both
    assert found("Zürich") == both
    assert found("naive") == ["http://news.test/accents"]
    assert found("naïve zurich") == ["http://news.test/accents"]
    assert found("cafes") == ["http://news.test/accents"]


def test_mongodb_looks_an_accented_word_up_in_its_text_index(tmp_path: Path, prefix: str) -> None:
    """The query's shape (on the fake: mongomock has no $text): an accented word is looked up in the text
    index, which folds accents as SQLite's does, not by a regular expression of its exact letters, which
    would miss the articles that write it without them."""
    from crawler.store.mongo import MongoStore

    store = open_backend("mongo-shaped-fake", tmp_path, prefix)
    assert isinstance(store, MongoStore)
    store.upsert(article("http://news.test/plain", "2026-11-18T10:00:00Z", body="Zurich is dear."))
    asked: list[Any] = []

    def recorded(weeks: list[str], query: Any, newest_first: bool, limit: int | None) -> Iterator[Any]:
        asked.append(query)
        return iter(())

    store._iter = recorded  # type: ignore[method-assign]
    assert list(store.search("Zürich")) == []
    assert asked == [{"$text": {"$search": '"zürich"'}}]
    store.close()


def test_search_reads_a_term_as_the_index_reads_the_text_punctuation_around_a_word_ignored(
    backend: str, store: Store
) -> None:
    """A term is read as the text indexes read the text: punctuation around a word ignored (``-light``,
    ``harbour,``), a word joined by punctuation (``light-show``, ``U.S.``) the phrase of its parts. On the
    pymongo-shaped fake (no ``$text``) the query's shape is checked and every stored document given back
    as its candidates, so the filter that keeps the matching ones runs as on MongoDB."""
    store.upsert_many(
        [
            article(
                "http://news.test/show",
                "2026-11-17T10:00:00Z",
                title="Harbour light-show tonight",
                body="The U.S. consul will watch the lights over the harbour.",
            ),
            article(
                "http://news.test/lamp",
                "2026-11-18T10:00:00Z",
                title="A light in the window",
                body="Light the way home; the show starts late.",
            ),
            article("http://news.test/us", "2026-11-18T11:00:00Z", title="Bus routes", body="Use the bus."),
        ]
    )
    asked: list[Any] = []
    if backend == "mongo-shaped-fake":
        everything = store._iter  # type: ignore[attr-defined]

        def candidates(weeks: list[str], query: Any, newest_first: bool, limit: int | None) -> Iterator[Any]:
            asked.append(query)
            return everything(weeks, {}, newest_first, limit)  # type: ignore[no-any-return]

        store._iter = candidates  # type: ignore[attr-defined]

    def found(text: str) -> list[str]:
        return [document["url"].rsplit("/", 1)[1] for document in store.search(text)]

    assert found("light") == ["lamp", "show"]
    assert found("-light") == ["lamp", "show"]
    assert found("harbour, -light") == ["show"]
    assert found("light-show") == ["show"]
    assert found('"light show"') == ["show"]
    assert found("light show") == ["lamp", "show"]
    assert found("U.S.") == ["show"]
    assert found("u.s") == ["show"]
    with pytest.raises(StoreError, match="has no words"):
        list(store.search("-- ,"))
    if backend == "mongo-shaped-fake":
        assert asked == [
            {"$text": {"$search": f'"{word}"'}}
            for word in ("light", "light", "harbour", "light", "light", "light", "u", "u")
        ]


def test_stats_count_articles_reposts_and_qread_bodies(store: Store) -> None:
    qread = {"body_from": "qread", "algorithm": "qread", "body_chars": 10}
    store.upsert_many(
        [
            article("http://news.test/1", "2026-11-17T10:00:00Z", body=FLOOD),
            article("http://news.test/2", "2026-11-18T10:00:00Z", extraction=qread),
            article("http://other.test/1", "2026-11-18T10:00:00Z", site="other", body=FLOOD_REPOST),
            article("http://news.test/3", "2026-11-24T10:00:00Z", extraction=qread),
        ]
    )
    assert store.stats() == [
        {"week": "2026w47", "site": "citynews", "articles": 2, "reposts": 1, "qread": 1},
        {"week": "2026w48", "site": "citynews", "articles": 1, "reposts": 0, "qread": 1},
    ]
    assert store.stats("2026w48") == [
        {"week": "2026w48", "site": "citynews", "articles": 1, "reposts": 0, "qread": 1}
    ]


# --- duplicate articles -----------------------------------------------------------------------------------


def test_an_exact_repost_is_recorded_against_the_earlier_article(store: Store) -> None:
    original = article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD)
    # The same text, differently spaced and punctuated: the same normalised text.
    copy = article("http://other.test/copy", "2026-11-18T08:00:00Z", site="other", body=FLOOD.upper() + "!!")
    assert store.upsert(original).new
    assert store.upsert(copy) == Written("repost", "http://other.test/copy", "http://news.test/flood")
    assert store.upsert(copy) == Written(
        "repost", "http://other.test/copy", "http://news.test/flood", recorded_before=True
    ), "a retried repost is recorded once, and says it was recorded before"
    assert store.count() == 1
    kept = store.get("http://news.test/flood")
    assert kept is not None
    assert kept["reposts"] == [
        {
            "url": "http://other.test/copy",
            "site": "other",
            "fetched_at": "2026-11-18T08:00:00.000000Z",
            "match": "exact",
            "distance": 0,
            "share": 1.0,
        }
    ]
    assert store.get("http://other.test/copy") is None
    assert store.original_of("http://other.test/copy") == kept
    assert store.original_of("http://other.test/unknown") is None


def test_a_repost_reached_through_a_redirect_is_found_by_the_url_asked_for(store: Store) -> None:
    assert store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD)).new
    copy = article(
        "http://other.test/a/copy",
        "2026-11-18T08:00:00Z",
        site="other",
        body=FLOOD,
        redirected_from=["http://other.test/r/copy"],
    )
    assert store.upsert(copy) == Written("repost", "http://other.test/a/copy", "http://news.test/flood")
    kept = store.get("http://news.test/flood")
    assert kept is not None
    (record,) = kept["reposts"]
    assert (record["url"], record["redirected_from"]) == (
        "http://other.test/a/copy",
        ["http://other.test/r/copy"],
    )
    assert store.original_of("http://other.test/r/copy") == kept
    assert store.original_of("http://other.test/a/copy") == kept
    assert store.redirected_to("http://other.test/r/copy") is None, "not stored: a repost"


def test_a_repost_whose_url_holds_a_quote_is_found_by_it_and_by_the_url_that_redirected_to_it(
    store: Store,
) -> None:
    """A URL as stored in the reposts' JSON text has its ``"`` and ``\\`` escaped: found all the same."""
    assert store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD)).new
    url, asked = 'http://other.test/a/copy?q="flood"', 'http://other.test/r/copy?q="flood"\\x'
    copy = article(url, "2026-11-18T08:00:00Z", site="other", body=FLOOD, redirected_from=[asked])
    assert store.upsert(copy) == Written("repost", url, "http://news.test/flood")
    kept = store.get("http://news.test/flood")
    assert kept is not None
    assert store.original_of(url) == kept
    assert store.original_of(asked) == kept


def test_a_near_repost_is_found_and_a_different_article_on_the_same_event_is_kept(store: Store) -> None:
    first, repost, other = simhash(FLOOD), simhash(FLOOD_REPOST), simhash(FLOOD_OTHER)
    assert first is not None and repost is not None and other is not None
    results = store.upsert_many(
        [
            article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD),
            article("http://news.test/after", "2026-11-17T11:00:00Z", body=FLOOD_OTHER),
            # In the same batch, and in the next week: both are compared.
            article("http://other.test/repost", "2026-11-23T09:00:00Z", site="other", body=FLOOD_REPOST),
        ]
    )
    assert outcomes(results) == ["new", "new", "repost"]
    assert results[2].original == "http://news.test/flood"
    kept = store.get("http://news.test/flood")
    assert kept is not None
    (record,) = kept["reposts"]
    assert (record["url"], record["match"]) == ("http://other.test/repost", "near")
    assert record["distance"] == hamming(first, repost) <= store.dedup.max_distance
    assert hamming(first, other) > store.dedup.max_distance
    assert store.count() == 2
    assert {d["url"] for d in store.iter_articles()} == {"http://news.test/flood", "http://news.test/after"}


def made_up(seed: int, paragraphs: int, words: int = 45) -> list[str]:
    """Paragraphs of made-up text, different for each ``seed`` (their three-word phrases shared by no other
    seed's, but by chance)."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(VOCABULARY) for _ in range(words)).capitalize() + "." for _ in range(paragraphs)
    ]


VOCABULARY = (
    "council river bridge school market price water road station village harbour election minister court"
    " report budget hospital farmer museum festival storm railway factory workers union police mayor city"
    " county tax housing energy plant solar wind grid airport flight tourism season harvest rain drought"
    " library teacher student museum theatre artist concert league match coach player injury transfer club"
    " bank loan rate inflation company shares profit loss merger deal court judge trial witness verdict"
    " appeal law vote party leader campaign poll survey office plan project cost contract tender builder"
).split()
DISCLAIMER = (
    "This article is for general information only and is not advice of any kind. Readers should take"
    " independent professional advice before acting on it. The publisher accepts no liability for any loss"
    " arising from its use, and no copy of it may be made or shared without written permission."
)


def test_a_partial_repost_is_found_and_names_the_whole(store: Store) -> None:
    paragraphs = made_up(1, 8)
    part = "By Sam Lee, Staff Reporter\n\n" + "\n\n".join(paragraphs[:3])
    results = store.upsert_many(
        [
            article("http://news.test/whole", "2026-11-17T10:00:00Z", body="\n\n".join(paragraphs)),
            article("http://other.test/part", "2026-11-17T12:00:00Z", site="other", body=part),
        ]
    )
    assert outcomes(results) == ["new", "repost"], "the first 3 of 8 paragraphs, republished"
    kept = store.get("http://news.test/whole")
    assert kept is not None
    (record,) = kept["reposts"]
    assert (record["match"], record["partial_of"]) == ("partial", "http://news.test/whole")
    assert record["share"] >= 0.9 and record["distance"] > store.dedup.max_distance, "far in SimHash bits"


def test_an_original_held_whole_by_its_repost_is_found(store: Store) -> None:
    short = "\n\n".join(made_up(2, 2))
    related = "Related stories\n\n" + "\n\n".join(made_up(seed, 1, words=9)[0] for seed in range(10, 15))
    assert store.upsert(article("http://news.test/short", "2026-11-17T10:00:00Z", body=short)).new
    repost = article("http://other.test/more", "2026-11-17T11:00:00Z", body=f"{short}\n\n{related}")
    assert store.upsert(repost) == Written("repost", "http://other.test/more", "http://news.test/short")
    kept = store.get("http://news.test/short")
    assert kept is not None
    (record,) = kept["reposts"]
    assert (record["match"], record["partial_of"]) == ("partial", "http://other.test/more")


def test_shared_boilerplate_never_makes_distinct_articles_one(store: Store) -> None:
    """A page that is mostly a disclaimer, then articles carrying it: none is the page's repost, nor another's
    (the disclaimer is boilerplate once two stored documents carry it), however short its own text."""
    own = " ".join(made_up(3, 1)[0].split()[:18])
    page = article("http://legal.test/0", "2026-11-17T08:00:00Z", body=f"{own}\n\n{DISCLAIMER}")
    assert store.upsert(page).new
    for n, paragraphs in enumerate([3, 2, 1, 4, 1], start=1):
        body = "\n\n".join([*made_up(100 + n, paragraphs, words=40 if paragraphs > 1 else 22), DISCLAIMER])
        written = store.upsert(article(f"http://news.test/{n}", f"2026-11-17T1{n}:00:00Z", body=body))
        assert written.new, f"carrier {n} ({paragraphs} paragraphs of its own) taken for {written.original}"
    assert store.count() == 6


def test_a_batchs_paragraph_counts_are_those_of_each_documents_own_weeks(store: Store) -> None:
    """A batch across a week's end: the Wednesday article counts the disclaimer in its weeks (46 to 48: no
    carrier), the next Monday's page in its own (47 to 49: two carriers in week 49, so boilerplate). The
    page, the disclaimer and five words of its own, is no part of the Wednesday article."""
    for n in (1, 2):
        body = "\n\n".join([*made_up(200 + n, 3), DISCLAIMER])
        assert store.upsert(article(f"http://legal.test/{n}", "2026-12-02T10:00:00Z", body=body)).new
    wednesday = "\n\n".join([*made_up(210, 2), DISCLAIMER])
    monday = f"Opening hours change next week.\n\n{DISCLAIMER}"
    results = store.upsert_many(
        [
            article("http://news.test/wednesday", "2026-11-18T10:00:00Z", body=wednesday),
            article("http://other.test/monday", "2026-11-23T10:00:00Z", body=monday),
        ]
    )
    assert outcomes(results) == ["new", "new"]


@pytest.mark.parametrize("seed", [240, 500])
def test_a_batch_decides_as_its_documents_written_one_by_one(store: Store, seed: int) -> None:
    """A carrier of the disclaimer is stored; one batch then holds a second carrier and a page of the
    disclaimer and five words of its own. Two carriers make the disclaimer common, so the page is no part
    of them, as when the three are written one by one. (With seed 500 the second carrier's SimHash is 15
    bits from the page's and shares no band key with it: a lookup of the page alone does not find it.)"""
    first, second = (
        article(
            f"http://legal.test/{n}",
            "2026-11-17T10:00:00Z",
            body="\n\n".join([*made_up(seed + n, 3), DISCLAIMER]),
        )
        for n in (1, 2)
    )
    assert store.upsert(first).new
    page = article(
        "http://other.test/page",
        "2026-11-18T10:00:00Z",
        body=f"Opening hours change next week.\n\n{DISCLAIMER}",
    )
    assert outcomes(store.upsert_many([second, page])) == ["new", "new"]


def test_paragraphs_common_only_outside_a_documents_weeks_are_its_own(store: Store) -> None:
    """The disclaimer is carried by two articles of week 45 and one of week 48. One batch then holds a
    week-46 article carrying it (its weeks, 45 to 47, hold the two carriers) and a week-48 page, the
    disclaimer and five words of its own: its weeks (47 to 49) hold one copy of the disclaimer, the
    week-48 article's, whose text it is there; the page is a part of that article."""
    for n in (1, 2):
        body = "\n\n".join([*made_up(220 + n, 3), DISCLAIMER])
        assert store.upsert(article(f"http://legal.test/{n}", "2026-11-03T10:00:00Z", body=body)).new
    whole = "\n\n".join([*made_up(230, 2), DISCLAIMER])
    assert store.upsert(article("http://news.test/whole", "2026-11-24T10:00:00Z", body=whole)).new
    earlier = "\n\n".join([*made_up(231, 2), DISCLAIMER])
    page = f"Opening hours change next week.\n\n{DISCLAIMER}"
    results = store.upsert_many(
        [
            article("http://news.test/earlier", "2026-11-11T10:00:00Z", body=earlier),
            article("http://other.test/page", "2026-11-25T10:00:00Z", body=page),
        ]
    )
    assert [(written.outcome, written.original) for written in results] == [
        ("new", None),
        ("repost", "http://news.test/whole"),
    ]


def test_two_articles_sharing_a_paragraph_beside_boilerplate_are_kept(store: Store) -> None:
    """An early article whose paragraphs but one became common (a templated site draws them from one pool),
    then an article holding that one: what is left of the first is found whole in it, and still they are
    two articles (the shared part is a fifth of the shorter one)."""
    common, (kept,), rest = made_up(300, 4), made_up(301, 1, words=60), made_up(302, 20)
    bodies = [
        [*common, kept],
        [*common, *rest[0:8]],
        [*common, *rest[8:16]],
        [kept, *rest[16:20]],
    ]
    results = store.upsert_many(
        [
            article(f"http://templated.test/{n}", f"2026-11-17T1{n}:00:00Z", body="\n\n".join(body))
            for n, body in enumerate(bodies)
        ]
    )
    assert outcomes(results) == ["new"] * 4


def test_a_copy_outside_the_time_window_is_stored(backend: str, tmp_path: Path, prefix: str) -> None:
    policy = DedupPolicy(window=timedelta(days=2))
    with open_backend(backend, tmp_path, prefix, dedup=policy) as store:
        assert store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD)).new
        assert store.upsert(article("http://b.test/1", "2026-11-20T10:00:00Z", body=FLOOD_REPOST)).new
        assert (
            store.upsert(article("http://c.test/1", "2026-11-21T10:00:00Z", body=FLOOD)).outcome == "repost"
        )


def test_duplicate_detection_can_be_switched_off(backend: str, tmp_path: Path, prefix: str) -> None:
    with open_backend(backend, tmp_path, prefix, dedup=DedupPolicy(enabled=False)) as store:
        results = store.upsert_many(
            [
                article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD),
                article("http://other.test/copy", "2026-11-17T11:00:00Z", body=FLOOD),
            ]
        )
        assert outcomes(results) == ["new", "new"]


def test_a_refetch_with_an_edited_body_keeps_its_reposts(store: Store) -> None:
    store.upsert(article("http://news.test/flood", "2026-11-17T10:00:00Z", body=FLOOD))
    store.upsert(article("http://other.test/copy", "2026-11-17T11:00:00Z", body=FLOOD))
    edited = FLOOD.replace("Tuesday", "Tuesday evening")
    assert (
        store.upsert(article("http://news.test/flood", "2026-11-18T10:00:00Z", body=edited)).outcome
        == "updated"
    )
    kept = store.get("http://news.test/flood")
    assert kept is not None
    assert kept["body"] == edited
    assert [record["url"] for record in kept["reposts"]] == ["http://other.test/copy"]
    assert kept["simhash"] == to_hex(simhash(edited) or 0)
    assert from_hex(kept["simhash"]) == simhash(edited)


# --- concurrent writers -----------------------------------------------------------------------------------


def _write_shared_urls(kind: str, tmp: str, prefix: str, writer: int) -> list[str]:
    """One writer process: the same URLs as every other writer, one upsert each."""
    results: list[str] = []
    with open_backend(kind, Path(tmp) if kind == "sqlite" else Path(tmp) / f"spool{writer}", prefix) as store:
        for n in range(SHARED_URLS):
            fetched_at = f"2026-11-20T10:{n // 60:02d}:{n % 60:02d}.{writer:06d}Z"
            written = store.upsert(article(f"http://news.test/{n}", fetched_at, title=f"writer {writer}"))
            results.append(written.outcome)
    return results


def test_concurrent_writer_processes_store_each_url_once(backend: str, tmp_path: Path, prefix: str) -> None:
    if backend == "mongo-shaped-fake":
        pytest.skip("mongomock lives in one process: concurrent writers run against SQLite and real MongoDB")
    if backend == "mongodb" and not MONGO_URI:
        pytest.skip("MONGO_URI is not set: no MongoDB server to run the contract against")
    context = multiprocessing.get_context("spawn")
    with context.Pool(WRITERS) as pool:
        results = pool.starmap(
            _write_shared_urls, [(backend, str(tmp_path), prefix, writer) for writer in range(WRITERS)]
        )
    assert sum(result.count("new") for result in results) == SHARED_URLS, "each URL new to one writer"
    with open_backend(backend, tmp_path, prefix) as store:
        assert store.weeks() == ["2026w47"]
        assert store.count() == SHARED_URLS
        # The newest fetch of each URL won, whichever process wrote last.
        assert {document["title"] for document in store.iter_articles()} == {f"writer {WRITERS - 1}"}


def _small_hash_phrases(count: int) -> list[str]:
    """``count`` three-word phrases whose shingle hash is under 2**50: smaller than every other shingle
    hash of a few pages of text (those are about 2**54 and up), so that they are its smallest, its anchors."""
    phrases = []
    for n in itertools.count():
        phrase = f"zq{n} zr{n} zs{n}"
        if xxhash.xxh64_intdigest(phrase.encode()) < 1 << 50:
            phrases.append(phrase)
            if len(phrases) == count:
                return phrases
    raise AssertionError("unreachable")


def _with(phrases: list[str], paragraphs: list[str]) -> str:
    """The ``paragraphs`` with the ``phrases`` put in them, one after each fifth word, in turn."""
    words = [paragraph.split() for paragraph in paragraphs]
    for n, phrase in enumerate(phrases):
        paragraph = words[n % len(words)]
        paragraph.insert(5 * (n // len(words) + 1), phrase)
    return "\n\n".join(" ".join(paragraph) for paragraph in words)


def test_a_repost_is_found_among_many_articles_sharing_its_commonest_anchors(store: Store) -> None:
    """A short article, then 20 articles holding 16 phrases (a phrase like "on the other" is an anchor of
    hundreds of articles of a week), then a page holding the short article whole and those 16 phrases:
    all 16 are among the page's smallest shingle hashes, so each of the 20 shares 16 of its anchors, as
    many as the short article can; an anchor held by that many articles is no evidence, and the page is
    the short article's repost."""
    common = _small_hash_phrases(16)
    short = "\n\n".join(made_up(30, 2))
    for n in range(20):
        body = _with(common, made_up(40 + n, 3))
        assert store.upsert(article(f"http://many.test/{n}", f"2026-11-17T08:{n:02d}:00Z", body=body)).new
    assert store.upsert(article("http://news.test/short", "2026-11-17T10:00:00Z", body=short)).new
    page = f"{short}\n\n{_with(common, made_up(60, 6))}"
    written = store.upsert(article("http://other.test/page", "2026-11-17T11:00:00Z", body=page))
    assert written == Written("repost", "http://other.test/page", "http://news.test/short")
    kept = store.get("http://news.test/short")
    assert kept is not None
    (record,) = kept["reposts"]
    assert (record["match"], record["partial_of"]) == ("partial", "http://other.test/page")
    assert record["distance"] > store.dedup.max_distance, "found by its anchors, not its SimHash"
