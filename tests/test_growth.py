"""What the crawl keeps in Redis per listing page URL stays bounded as the service runs for months: the URLs
a site's listings are read at change (a sitemap a day, an API cursor a grab), and those read no more are
dropped a month later (crawler/redisio/listings.py). Days pass by the process's offset to Redis's clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from crawlsite import sites_spider
from redis.connection import AbstractConnection
from scrapy.http import HtmlResponse, Request

from crawler.keys import Keys
from crawler.redisio import clock, entries, listings, redirects
from crawler.redisio.connection import decoded
from crawler.requests import Work
from crawler.worker.conditional import ConditionalIndexMiddleware

DAY = 86400.0
DAYS = 40
GRAB = {"site": "news", "kind": "index", "job": "j1", "job_kind": "grab"}


def _on_day(monkeypatch: pytest.MonkeyPatch, day: int) -> None:
    monkeypatch.setattr(clock, "_offset", day * DAY)


def test_validators_of_listing_pages_no_grab_read_for_a_month_are_dropped(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grab a day reads the index page (unchanged: 304 from its second day on), the sitemap, and an API
    page whose cursor changes each day: 40 days keep the validators of the two pages still read and of the
    cursors of the last month, not of every cursor ever read."""
    crawler = sites_spider(tmp_path, redis_server).crawler
    conditional = ConditionalIndexMiddleware.from_crawler(crawler)
    pages = ["http://127.0.0.1/", "http://127.0.0.1/sitemap.xml"]
    for day in range(DAYS):
        _on_day(monkeypatch, day)
        for url in [*pages, f"http://127.0.0.1/api?cursor={day}"]:
            request = Request(url, meta=GRAB)
            conditional.process_request(request)
            status = 304 if url == pages[0] and day else 200
            headers = {"ETag": f'"{day}"', "Last-Modified": "Sun, 29 Nov 2026 10:00:00 GMT"}
            conditional.process_response(
                request, HtmlResponse(url, status=status, headers=headers, request=request)
            )
    kept = {decoded(url) for url in redis_client.hkeys("crawler:validators:news")}
    month = range(DAYS - 30, DAYS)
    assert kept == {*pages, *(f"http://127.0.0.1/api?cursor={day}" for day in month)}, len(kept)
    assert redis_client.zcard("crawler:validators-at:news") == len(kept)
    last = Request(pages[0], meta=GRAB)
    conditional.process_request(last)
    assert last.headers.get("If-None-Match") == b'"0"', "the index page, 304 each day, keeps its validators"


def test_the_dates_of_sitemaps_no_grab_read_for_a_month_are_dropped(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sitemap index lists a sitemap a day: 40 days of grabs keep the dates of the index and of the last
    month's sitemaps; the index's date is still read."""
    spider = sites_spider(tmp_path, redis_server)
    rule, work = spider.rules["news"], Work(site="news", kind="sitemap", job="j1", job_kind="grab")
    index = "http://127.0.0.1/sitemap.xml"
    for day in range(DAYS):
        _on_day(monkeypatch, day)
        spider._sitemap_read(rule, index, work, [day * DAY])
        spider._sitemap_read(rule, f"http://127.0.0.1/sitemap-{day}.xml", work, [day * DAY])
    kept = {decoded(url) for url in redis_client.hkeys("crawler:sitemaps:news")}
    assert kept == {index, *(f"http://127.0.0.1/sitemap-{day}.xml" for day in range(DAYS - 30, DAYS))}
    margin = spider.crawler.settings.getfloat("SITEMAPS_SINCE_MARGIN_SECONDS")
    assert spider._sitemap_since(rule, index, work) == (DAYS - 1) * DAY - margin


def test_values_written_before_they_were_timed_are_timed_by_the_next_write_and_go_a_month_later(
    redis_client: redis.Redis,
) -> None:
    """The validators an earlier version wrote (no times), before the upgrade or by its workers still
    running beside the new ones, get the time of the next write or touch: those read no more go a month
    after it, those read again stay."""
    key, times = "crawler:validators:news", "crawler:validators-at:news"
    redis_client.hset(key, mapping={f"http://127.0.0.1/old-{n}": '["e", ""]' for n in range(3)})
    assert listings.keep(redis_client, key, times, "http://127.0.0.1/new", '["f", ""]', now=1000.0) == 0
    assert redis_client.zcard(times) == 4
    redis_client.hset(key, "http://127.0.0.1/old-3", '["e", ""]')  # an older worker, still running
    listings.touch(redis_client, key, times, "http://127.0.0.1/old-0", now=1000.0)
    listings.touch(redis_client, key, times, "http://127.0.0.1/none", now=1000.0)
    assert redis_client.zcard(times) == 5, "the old worker's field timed; a URL the hash lacks is not"
    later = 1000.0 + listings.KEEP_SECONDS + 1
    listings.touch(redis_client, key, times, "http://127.0.0.1/old-0", now=later - 1)
    assert listings.keep(redis_client, key, times, "http://127.0.0.1/new", '["g", ""]', now=later) == 3
    assert sorted(redis_client.hkeys(key)) == [b"http://127.0.0.1/new", b"http://127.0.0.1/old-0"]
    assert listings.keep(redis_client, key, times, "http://127.0.0.1/new", "", now=later) == 0
    assert redis_client.hkeys(key) == [b"http://127.0.0.1/old-0"] and redis_client.zcard(times) == 1


def test_the_scripts_of_listings_and_notes_are_sent_once_then_called_by_their_sha(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """listings.keep and touch, entries.note and forget and redirects.note sent their Lua (0.4 to 1 kB)
    with every call (EVAL): a listing page's write or 304, each feed's notes. Each is sent once a server
    (and again when Redis lost it: SCRIPT FLUSH, a restart), then called by its SHA1, one round trip a
    call as before."""
    keys = Keys("crawler")
    key, times = "crawler:validators:news", "crawler:validators-at:news"
    url = "http://127.0.0.1/a/1"
    calls: list[Callable[[], object]] = [
        lambda: listings.keep(redis_client, key, times, url, '["e", ""]', now=1000.0),
        lambda: listings.touch(redis_client, key, times, url, now=1000.0),
        lambda: entries.note(redis_client, keys, {url: {"author": "Feed"}}, now=1000.0),
        lambda: entries.forget(redis_client, keys, [(url, '{"author": "Feed"}')]),
        lambda: redirects.note(redis_client, keys, url, ["http://127.0.0.1/s/1"], now=1000.0),
    ]
    scripts = (listings._KEEP, listings._TOUCH, entries._NOTE, entries._FORGET, redirects._NOTE)
    sent: list[bytes] = []
    send = AbstractConnection.send_packed_command

    def recorded(connection: AbstractConnection, command: Any, check_health: bool = True) -> None:
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        send(connection, command, check_health)  # type: ignore[no-untyped-call]

    for call in calls:
        call()
    redis_client.script_flush()
    for call in calls:
        call()
    monkeypatch.setattr(AbstractConnection, "send_packed_command", recorded)
    for call in calls:
        call()
    monkeypatch.undo()
    assert len(sent) == len(calls), "a round trip a call"
    for script in scripts:
        assert not [command for command in sent if script.encode() in command], script
    assert all(b"EVALSHA" in command for command in sent), sent
