"""What the crawl keeps in Redis per listing page URL stays bounded as the service runs for months: the URLs
a site's listings are read at change (a sitemap a day, an API cursor a grab), and those read no more are
dropped a month later (crawler/redisio/listings.py). Days pass by the process's offset to Redis's clock."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from crawlsite import sites_spider
from scrapy.http import HtmlResponse, Request

from crawler.redisio import clock, listings
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
