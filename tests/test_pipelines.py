"""The item pipelines built by Scrapy from settings (deprecation warnings are errors): clean, text (qRead,
summaries, fingerprints, in the text pool), store."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import redis
from crawlsite import sites_spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse, Request
from scrapy.pipelines import ItemPipelineManager
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from crawler import settings as project_settings
from crawler.errors import InputError, StoreUnavailableError
from crawler.items import Article, Page
from crawler.keys import Keys
from crawler.published import published_date
from crawler.redisio import clock as clock_module
from crawler.requests import enqueue_job
from crawler.store import SqliteStore, StoreError
from crawler.store.document import add_fingerprints
from crawler.worker import spider as spider_module
from crawler.worker import textwork
from crawler.worker.pipelines.clean import CleanPipeline
from crawler.worker.pipelines.store import StorePipeline
from crawler.worker.pipelines.text import TextPipeline
from crawler.worker.textjob import article_text
from crawler.worker.textwork import text_pool_of

STORY = [
    "The harbour bridge reopened to traffic on Monday morning after six weeks of repairs to its deck and its"
    " expansion joints, the city's transport office said.",
    "Engineers replaced the worn road surface and renewed the lighting along the whole span, work that had"
    " been planned for two years and was brought forward after a storm damaged the joints in the spring.",
    "Drivers are asked to keep to the lower speed limit for the first weeks while the new surface settles,"
    " and buses return to their usual routes from Tuesday.",
]
PAGE = f"""<!doctype html><html><head><title>Bridge reopens after repairs | City News</title></head><body>
<ul class="nav"><li><a href="/">Home</a></li><li><a href="/city/">City</a></li>
<li><a href="/sport/">Sport</a></li><li><a href="/weather/">Weather</a></li></ul>
<h1>Bridge reopens after repairs</h1>
<div class="story">{"".join(f"<p>{paragraph}</p>" for paragraph in STORY)}</div>
<div class="footer"><a href="/about">About</a> <a href="/privacy">Privacy</a></div>
</body></html>"""
LONG_RULE_BODY = "A body the rule read in full. " * 10


def make_crawler(data_dir: Path, **overrides: Any) -> Crawler:
    """A crawler with the project's settings (and so its ITEM_PIPELINES), storing under ``data_dir``."""
    settings = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    settings.update(CRAWLER_DATA_DIR=str(data_dir), MONGO_URI=None, TEXT_PROCESSES=0)
    settings.update(overrides)
    return get_crawler(settings_dict=settings)


def item(*, html: str = PAGE, min_body_chars: int = 200, **values: Any) -> Article:
    fields: dict[str, Any] = {
        "site": "citynews",
        "url": "http://127.0.0.1:8631/citynews/2026/bridge.html",
        "fetched_at": "2026-11-20T10:31:00Z",
        "title": "Bridge reopens after repairs",
        "body": LONG_RULE_BODY,
        "published": "2026-11-20",
        "author": "A. Writer",
        "fields": {},
        "job": None,
        **values,
    }
    return Article(**fields, page=Page(html, min_body_chars))


@pytest.fixture
def crawler(tmp_path: Path) -> Crawler:
    return make_crawler(tmp_path)


def run_store(crawler: Crawler, items: list[Article]) -> list[Article | BaseException]:
    """Open a StorePipeline, send ``items`` through it at once (as concurrent responses do), close it;
    each item's output, or the exception it raised."""
    pipeline = build_from_crawler(StorePipeline, crawler)

    async def run() -> list[Article | BaseException]:
        await pipeline.open_spider()
        try:
            return list(
                await asyncio.gather(*(pipeline.process_item(one) for one in items), return_exceptions=True)
            )
        finally:
            await pipeline.close_spider()

    return asyncio.run(run())


def text(pipeline: TextPipeline, one: Article) -> Article:
    """``one`` through the text pipeline."""
    return asyncio.run(pipeline.process_item(one))


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return crawler.stats.get_stats()


# --- CleanPipeline -----------------------------------------------------------------------------------


def test_clean_normalises_text_fields_and_drops_the_fragment(crawler: Crawler) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    cleaned = pipeline.process_item(
        item(
            url=" http://127.0.0.1:8631/citynews/2026/bridge.html#comments ",
            title="\n  Bridge\u00a0reopens \t after   repairs\u200b ",
            author="   ",
            published=" Published: 20 November 2026 ",
            body="  First\nparagraph,  wrapped. \n \n\n\x07 \n\n Second\tparagraph.\r\n\r\n   ",
            fields={"section": "  City  ", "tags": ""},
        )
    )
    assert cleaned.url == "http://127.0.0.1:8631/citynews/2026/bridge.html"
    assert cleaned.title == "Bridge reopens after repairs"
    assert cleaned.author is None
    assert cleaned.published == "2026-11-20"
    assert cleaned.body == "First paragraph, wrapped.\n\nSecond paragraph."
    assert cleaned.fields == {"section": "City", "tags": None}


def test_clean_turns_an_empty_body_into_none(crawler: Crawler) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    assert pipeline.process_item(item(body=" \n\n \t ")).body is None


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2026-11-20", "2026-11-20"),
        ("2026-11-20T10:31:00+08:00", "2026-11-20T10:31:00+08:00"),
        ("2026-11-20 10:31", "2026-11-20T10:31:00"),
        ("Fri, 20 Nov 2026 10:31:00 GMT", "2026-11-20T10:31:00+00:00"),
        ("2026/11/20", "2026-11-20"),
        ("Updated 2026.11.20 10:31", "2026-11-20T10:31:00"),
        # A time inside other text keeps the UTC offset the page gives with it.
        ("Published 2026-11-20T10:31:00+08:00", "2026-11-20T10:31:00+08:00"),
        ("Updated 2026/11/20 10:31 +0800", "2026-11-20T10:31:00+08:00"),
        ("2026-11-20T10:31:00.000Z (updated)", "2026-11-20T10:31:00+00:00"),
        # A date with a month name inside other text keeps its time too.
        ("Updated: Fri, 20 Nov 2026 10:31:00 +0800", "2026-11-20T10:31:00+08:00"),
        ("Published: November 20th, 2026 at 10:31 AM", "2026-11-20T10:31:00"),
        ("By Ann Lee, 20 November 2026, 14:05 GMT", "2026-11-20T14:05:00+00:00"),
        # An offset after GMT or UTC is the offset (a JavaScript date's text, a site's "UTC+05:30").
        ("Fri Nov 20 2026 10:31:00 GMT+0800 (China Standard Time)", "2026-11-20T10:31:00+08:00"),
        # ...in hours alone too ("GMT+8", "UTC-5", "GMT+5:30"): it was read as GMT.
        ("Fri, 20 Nov 2026 10:31:00 GMT+8", "2026-11-20T10:31:00+08:00"),
        ("2026-11-20 10:31 GMT+8", "2026-11-20T10:31:00+08:00"),
        ("20 November 2026 10:31 UTC-5", "2026-11-20T10:31:00-05:00"),
        ("2026年11月20日 10:31 GMT+5:30", "2026-11-20T10:31:00+05:30"),
        ("20 Nov 2026 10:31 UTC+05:30", "2026-11-20T10:31:00+05:30"),
        ("2026年11月20日", "2026-11-20"),
        ("2026年11月20日 10:31", "2026-11-20T10:31:00"),
        ("November 20, 2026", "2026-11-20"),
        ("Sept. 3rd 2026", "2026-09-03"),
        ("20 Nov. 2026", "2026-11-20"),
        # A 12-hour clock: the hour after noon is the afternoon's, 12 AM is midnight.
        ("Nov 20, 2026 2:05 PM EST", "2026-11-20T14:05:00-05:00"),
        ("November 20, 2026 10:31 p.m.", "2026-11-20T22:31:00"),
        ("20 Nov 2026 12:15 AM GMT", "2026-11-20T00:15:00+00:00"),
        ("Fri, 20 Nov 2026 12:40pm", "2026-11-20T12:40:00"),
        # A dotted time (10.31), and the Chinese clock's morning and afternoon (上午, 下午).
        ("Updated 2026.11.20 10.31 GMT", "2026-11-20T10:31:00+00:00"),
        ("2026/11/20 10.31.05", "2026-11-20T10:31:05"),
        ("2026-11-20 10.31", "2026-11-20T10:31:00"),
        ("2026-11-20T10.31+08:00", "2026-11-20T10:31:00+08:00"),
        # A number with a dot after the date (a count, a price) is no time.
        ("20 Nov 2026 1.234 views", "2026-11-20"),
        ("2026/11/20 12.500 EUR", "2026-11-20"),
        ("20 Nov 2026, 10.31 p.m.", "2026-11-20T22:31:00"),
        ("2026年11月20日 下午2:05", "2026-11-20T14:05:00"),
        ("2026年11月20日 上午10:31", "2026-11-20T10:31:00"),
        ("2026年11月20日下午12:30", "2026-11-20T12:30:00"),
        ("2026-11-20 上午12:15", "2026-11-20T00:15:00"),
        ("2026年11月20日 晚上8:05", "2026-11-20T20:05:00"),
        # 晚上12:05 is 00:05 of the next day: no time of this date.
        ("2026年11月20日 晚上12:05", "2026-11-20"),
        ("2026年11月20日 下午2.05", "2026-11-20T14:05:00"),
        ("2026年11月20日 下午2：05", "2026-11-20T14:05:00"),
        # An impossible time: the date alone.
        ("Nov 20, 2026 25:99", "2026-11-20"),
        ("Fri, 20 Nov 2026 25:99:00 GMT", "2026-11-20"),
        ("2026-11-20 25:99", "2026-11-20"),
        # A Unix timestamp (an API's created_at), in seconds or milliseconds: the UTC time it counts to.
        ("1763634660", "2025-11-20T10:31:00+00:00"),
        ("1763634660000", "2025-11-20T10:31:00+00:00"),
        ("1763634660.25", "2025-11-20T10:31:00+00:00"),
        # A date with its UTC offset and no time (an XML Schema date, as a sitemap may give it): no time.
        ("2026-11-20+08:00", "2026-11-20"),
        ("2026-11-20-05:00", "2026-11-20"),
        ("2026-11-20Z", "2026-11-20"),
        # Unparsed: kept as the page gave it (day/month order unknown, or no date at all, or no such day).
        ("11/20/2026", "11/20/2026"),
        ("yesterday", "yesterday"),
        ("2026-02-30", "2026-02-30"),
        ("17636346", "17636346"),
        # Ten digits that count to a time years ahead are no timestamp: a date and hour without separators.
        ("2026112010", "2026-11-20T10:00:00"),
        # Neither a date and hour nor a timestamp before a day ahead: kept.
        ("2026113110", "2026113110"),
    ],
)
def test_published_dates_become_iso(crawler: Crawler, text: str, iso: str) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    assert pipeline.process_item(item(published=text)).published == iso


@pytest.mark.parametrize(
    ("text", "now", "iso"),
    [
        # Ten digits that read both as a date and hour and as a timestamp not ahead of the crawl: the later
        # of the two, the one nearer to the crawl (it reads new pages), whatever the clock says now.
        ("2024031510", "2026-11-20T00:00:00", "2024-03-15T10:00:00"),
        ("2024031510", "2034-03-01T00:00:00", "2034-02-20T06:58:30+00:00"),
        ("2034022010", "2034-03-01T00:00:00", "2034-02-20T10:00:00"),
        # A timestamp of today whose digits also read as a date and hour centuries ago.
        ("1712011510", "2024-04-02T00:00:00", "2024-04-01T22:45:10+00:00"),
    ],
)
def test_ten_digits_that_read_as_a_date_and_hour_and_as_a_timestamp_are_the_later_one(
    text: str, now: str, iso: str
) -> None:
    moment = datetime.fromisoformat(now).replace(tzinfo=UTC).timestamp()
    assert published_date(text, now=moment) == iso


@pytest.mark.parametrize("text", ["2026010100005", "2026010100012", "2026112010.5"])
def test_digits_other_than_ten_alone_are_never_read_as_a_date_and_hour(text: str) -> None:
    """Milliseconds, or seconds with a fraction, that count to a time years ahead are no date: their first
    ten digits are not read as a date and hour (2026-01-01 05:00 for ``2026010100005``)."""
    now = datetime(2026, 11, 20, tzinfo=UTC).timestamp()
    assert published_date(text, now=now) is None


SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        # A time without a UTC offset, in every form the crawl reads: read in the rule's zone.
        ("2026-11-20 10:31", "2026-11-20T10:31:00+08:00"),
        ("2026-11-20T10:31:00", "2026-11-20T10:31:00+08:00"),
        ("2026年11月20日 10:31", "2026-11-20T10:31:00+08:00"),
        ("2026年11月20日 下午2:05", "2026-11-20T14:05:00+08:00"),
        ("Nov 20, 2026 2:05 PM", "2026-11-20T14:05:00+08:00"),
        ("Fri, 20 Nov 2026 10:31:00", "2026-11-20T10:31:00+08:00"),
        ("2026112010", "2026-11-20T10:00:00+08:00"),
        # A time with its offset is kept as the page says; a Unix timestamp counts to a UTC time.
        ("2026-11-20T10:31:00Z", "2026-11-20T10:31:00+00:00"),
        ("2026-11-20 10:31 +0100", "2026-11-20T10:31:00+01:00"),
        ("Fri, 20 Nov 2026 10:31:00 GMT", "2026-11-20T10:31:00+00:00"),
        ("1763634660", "2025-11-20T10:31:00+00:00"),
        # A date alone stays a date: no time to place in the zone.
        ("2026-11-20", "2026-11-20"),
        ("2026年11月20日", "2026-11-20"),
        ("2026-11-20+05:00", "2026-11-20"),
    ],
)
def test_a_time_without_offset_is_read_in_the_zone_given(text: str, iso: str) -> None:
    now = datetime(2026, 11, 28, tzinfo=UTC).timestamp()
    assert published_date(text, now=now, zone=SHANGHAI) == iso


def test_a_fixed_offset_zone_gives_its_offset() -> None:
    zone = timezone(-timedelta(hours=5, minutes=30))
    assert published_date("2026-11-20 10:31", zone=zone) == "2026-11-20T10:31:00-05:30"


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        # Clocks go back at 03:00 summer time on 2026-10-25: 02:00-02:59 comes twice, first at +02:00.
        ("2026-10-25 01:59", "2026-10-25T01:59:00+02:00"),
        ("2026-10-25 02:30", "2026-10-25T02:30:00+02:00"),
        ("2026-10-25 03:00", "2026-10-25T03:00:00+01:00"),
        # Clocks go forward at 02:00 on 2026-03-29: no clock showed 02:30, which is the time an hour on.
        ("2026-03-29 01:59", "2026-03-29T01:59:00+01:00"),
        ("2026-03-29 02:30", "2026-03-29T03:30:00+02:00"),
        ("2026-03-29 03:00", "2026-03-29T03:00:00+02:00"),
        # Winter and summer offsets of the same zone.
        ("2026-01-15 12:00", "2026-01-15T12:00:00+01:00"),
        ("2026-07-15 12:00", "2026-07-15T12:00:00+02:00"),
    ],
)
def test_a_zone_with_summer_time_reads_the_repeated_hour_as_the_first_and_the_skipped_one_an_hour_on(
    text: str, iso: str
) -> None:
    assert published_date(text, zone=ZoneInfo("Europe/Berlin")) == iso
    assert (
        datetime.fromisoformat(iso).astimezone(ZoneInfo("Europe/Berlin")).isoformat(timespec="seconds") == iso
    )


def test_a_published_value_that_is_no_date_is_kept_and_counted(crawler: Crawler) -> None:
    pipeline = build_from_crawler(CleanPipeline, crawler)
    assert pipeline.process_item(item(published="21/11/2026")).published == "21/11/2026"
    assert pipeline.process_item(item(published="20 Nov 2026")).published == "2026-11-20"
    assert stats(crawler) == {"fields/unparsed/published/citynews": 1}


def test_a_published_timestamp_is_judged_by_redis_clock_whatever_the_clock_of_the_workers_machine(
    tmp_path: Path, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on a machine whose clock is 2 days behind (a virtual machine resumed from a snapshot) read
    an API's timestamp of an hour ago as more than a day ahead of now, no date: kept as the page gave it
    and counted unparsed. It is judged by Redis's clock now, as the article's ``fetched_at`` is."""
    from crawler.worker.connection import server_of

    real = time.time
    published = int(real()) - 3600
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() - 2 * 86_400)
    crawler = make_crawler(tmp_path, REDIS_URL=redis_server)
    server_of(crawler)  # the worker connects as it starts
    pipeline = build_from_crawler(CleanPipeline, crawler)
    cleaned = pipeline.process_item(item(published=str(published)))
    assert cleaned.published == datetime.fromtimestamp(published, UTC).isoformat(timespec="seconds")
    assert stats(crawler) == {}


# --- TextPipeline ----------------------------------------------------------------------------------------


def test_qread_supplies_the_body_when_the_rules_is_short(crawler: Crawler) -> None:
    pipeline = build_from_crawler(TextPipeline, crawler)
    result = text(pipeline, item(body="Bridge reopens."))
    assert result.body == "\n\n".join(STORY)
    assert result.extraction == {
        "body_from": "qread",
        "algorithm": "qread-learned",
        "body_chars": len(result.body),
    }
    assert stats(crawler) == {"extract/short_body/citynews": 1}, "the fallback is counted once stored"


def test_qread_supplies_a_missing_body(crawler: Crawler) -> None:
    pipeline = build_from_crawler(TextPipeline, crawler)
    result = text(pipeline, item(body=None))
    assert result.body == "\n\n".join(STORY)
    assert result.extraction is not None and result.extraction["body_from"] == "qread"


def test_the_rules_body_is_kept_when_long_enough(crawler: Crawler) -> None:
    pipeline = build_from_crawler(TextPipeline, crawler)
    result = text(pipeline, item())
    assert result.body == LONG_RULE_BODY
    assert result.extraction == {"body_from": "rule", "algorithm": None, "body_chars": len(LONG_RULE_BODY)}
    assert stats(crawler) == {"extract/rule_body/citynews": 1}


def test_the_rules_own_minimum_wins_over_the_setting(crawler: Crawler) -> None:
    pipeline = build_from_crawler(TextPipeline, crawler)
    assert text(pipeline, item(body="Bridge reopens.", min_body_chars=10)).body == "Bridge reopens."
    assert text(pipeline, item(min_body_chars=10_000)).body == "\n\n".join(STORY)
    assert stats(crawler)["extract/rule_body/citynews"] == 1


def test_a_short_rule_body_stays_when_qread_finds_less(crawler: Crawler) -> None:
    pipeline = build_from_crawler(TextPipeline, crawler)
    result = text(pipeline, item(body="Bridge reopens.", html="<html><body><p>Hi</p></body></html>"))
    assert result.body == "Bridge reopens."
    assert result.extraction is not None and result.extraction["body_from"] == "rule"
    assert stats(crawler)["extract/short_body/citynews"] == 1
    assert stats(crawler)["extract/rule_body/citynews"] == 1


def test_an_unknown_algorithm_setting_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="setting QREAD_ALGORITHM is 'magic': expected one of qread"):
        build_from_crawler(TextPipeline, make_crawler(tmp_path, QREAD_ALGORITHM="magic"))


def test_the_text_pool_gives_what_the_crawl_thread_gives_and_outlives_a_killed_process(
    tmp_path: Path,
) -> None:
    here = make_crawler(tmp_path / "here")
    pooled = make_crawler(tmp_path / "pool", TEXT_PROCESSES=1)
    inline = build_from_crawler(TextPipeline, here)
    pipeline = build_from_crawler(TextPipeline, pooled)
    pool = text_pool_of(pooled)
    try:
        bodies: tuple[dict[str, Any], ...] = ({"body": "Bridge reopens."}, {})
        for values in bodies:
            expected, got = text(inline, item(**values)), text(pipeline, item(**values))
            assert got == expected and got.fingerprints == expected.fingerprints
            assert got.summary is not None and got.fingerprints is not None
            document = add_fingerprints({"body": got.body})
            assert got.fingerprints == (document["content_hash"], document["simhash"])
        executor = pool._executor
        assert executor is not None
        for process in list(executor._processes.values()):
            process.kill()
            process.join()
        again = text(pipeline, item(body="Bridge reopens."))
        assert again.body == "\n\n".join(STORY), "done on the crawl's thread when the pool broke"
        assert stats(pooled)["text/pool_restarted"] == 1
        assert text(pipeline, item()).fingerprints == text(inline, item()).fingerprints, "a new pool"
        assert pool._executor is not None and pool._executor is not executor
    finally:
        pool.close()


def test_text_work_runs_off_the_crawl_thread_with_the_projects_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN.md's invariant: CPU-heavy per-article work (qRead, summary, fingerprints) never runs on the
    crawl's thread. With the project's TEXT_PROCESSES, the text work of this process is made to fail: the
    article still gets its text, from a pool process, and nothing falls back to this thread."""
    assert project_settings.TEXT_PROCESSES > 0
    inline = build_from_crawler(TextPipeline, make_crawler(tmp_path / "here"))
    expected = text(inline, item(body="Bridge reopens."))
    crawler = make_crawler(tmp_path / "pool", TEXT_PROCESSES=project_settings.TEXT_PROCESSES)
    pipeline = build_from_crawler(TextPipeline, crawler)
    pool = text_pool_of(crawler)

    def on_the_crawl_thread(*args: Any) -> Any:
        raise AssertionError("text work ran on the crawl's thread")

    monkeypatch.setattr(textwork, "article_text", on_the_crawl_thread)
    try:
        got = text(pipeline, item(body="Bridge reopens."))
    finally:
        pool.close()
    assert got.body == expected.body == "\n\n".join(STORY)
    assert got.fingerprints == expected.fingerprints and got.summary == expected.summary
    assert "text/pool_restarted" not in stats(crawler)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_ctrl_c_or_sigterm_while_the_text_processes_start_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: signal.Signals
) -> None:
    """The processes start with Ctrl-C and SIGTERM blocked on the starting thread (so one sent to the
    group does not kill them while they import); one that comes meanwhile still reaches the crawl, even
    when another thread (a helper started without a block, a library's) takes it."""
    crawler = make_crawler(tmp_path, TEXT_PROCESSES=1)
    build_from_crawler(TextPipeline, crawler)
    pool = text_pool_of(crawler)

    def starting(*args: Any, **kwargs: Any) -> ProcessPoolExecutor:
        os.kill(os.getpid(), signum)  # while the pool starts
        return ProcessPoolExecutor(*args, **kwargs)

    monkeypatch.setattr(textwork, "ProcessPoolExecutor", starting)
    caught: list[int] = []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="takes-signals")  # blocks none
    previous = signal.signal(signum, lambda number, _frame: caught.append(number))
    try:
        other.start()
        pool.start()
        deadline = time.monotonic() + 60
        while not caught:
            assert time.monotonic() < deadline, f"{signum.name} sent while the pool started was lost"
            time.sleep(0.05)
        assert caught == [signum]
        executor = pool._executor
        assert executor is not None
        assert executor.submit(sum, [1, 2]).result(timeout=60) == 3, "the processes did not die of it"
    finally:
        stop.set()
        other.join()
        signal.signal(signum, previous)
        pool.close()


def test_a_text_process_is_out_of_its_parents_process_group_and_terminate_stops_it(tmp_path: Path) -> None:
    """A signal to the crawl's process group (a service manager's stop, a terminal's Ctrl-C) does not
    reach the text processes, but one sent to a process alone does: ``terminate()`` (which the standard
    library uses on the survivors of a broken pool) and an operator's ``kill PID`` stop it."""
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=2))
    try:
        pool.start()
        assert len(asyncio.run(pool.started(60))) == 2, "every process ran its initializer"
        executor = pool._executor
        assert executor is not None
        processes = list(executor._processes.values())
        for process in processes:
            assert process.pid is not None
            assert os.getpgid(process.pid) != os.getpgid(0), "in a process group of its own"
            process.terminate()
        deadline = time.monotonic() + 60
        for process in processes:
            # The pool's own thread, seeing one die, may reap the other: its join() then returns first.
            while process.exitcode is None:
                assert time.monotonic() < deadline, f"text process {process.pid} ignored SIGTERM"
                process.join(0.1)
            assert process.exitcode == -signal.SIGTERM
    finally:
        pool.close()


POOL_SIGNALLED_AS_IT_STARTS = """
import asyncio, os, signal
from concurrent.futures import ProcessPoolExecutor
from scrapy.utils.test import get_crawler
from crawler.worker import textwork

class Signalled(ProcessPoolExecutor):
    def submit(self, *args, **kwargs):
        future = super().submit(*args, **kwargs)
        os.killpg(0, signal.SIGTERM)  # a service manager's stop while the processes import
        return future

if __name__ == "__main__":
    stops = []
    signal.signal(signal.SIGTERM, lambda number, _frame: stops.append(number))
    textwork.ProcessPoolExecutor = Signalled
    pool = textwork.TextPool(get_crawler(), 2)
    pool.start()
    answered = asyncio.run(pool.started(60))
    print(len(stops) > 0, len(answered), flush=True)
    pool.close()
"""


def test_a_sigterm_to_the_group_while_the_text_processes_start_stops_the_crawl_not_them() -> None:
    run = subprocess.run(
        [sys.executable, "-c", POOL_SIGNALLED_AS_IT_STARTS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        start_new_session=True,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.split() == ["True", "2"], "the crawl got the stop; both processes lived and answered"


def _bodies(count: int, repeat: int) -> list[str]:
    return [f"{' '.join(STORY)} Story {number}.\n\n" * repeat for number in range(count)]


def test_the_text_pool_is_started_when_every_process_has_answered(tmp_path: Path) -> None:
    """A worker's first requests must not share the cores with the text processes' imports (they left up
    to 0.2 s after their politeness slot): the wait ends when each process has answered, not the first."""
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=2))

    async def run() -> tuple[set[int], set[int | None]]:
        pool.start()
        answered = await pool.started(60)
        executor = pool._executor
        assert executor is not None
        return answered, {process.pid for process in executor._processes.values()}

    try:
        answered, alive = asyncio.run(run())
        assert len(answered) == 2
        assert answered == alive
    finally:
        pool.close()


def test_the_text_pipeline_opens_after_the_pool_has_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crawler = make_crawler(tmp_path, TEXT_PROCESSES=2, TEXT_START_SECONDS=12.5)
    pipeline = build_from_crawler(TextPipeline, crawler)
    pool = text_pool_of(crawler)
    waited: list[float] = []

    async def started(seconds: float) -> set[int]:
        waited.append(seconds)
        return set()

    monkeypatch.setattr(pool, "started", started)
    try:
        asyncio.run(pipeline.open_spider())
        assert waited == [12.5]
        assert pool._executor is not None, "the processes were started first"
    finally:
        pool.close()


def _started_with_a_process(pool: Any) -> tuple[Any, int]:
    """Start ``pool``: its executor and the pid of one of its processes."""
    pool.start()
    executor = pool._executor
    assert executor is not None
    pid = next(iter(executor._processes.values())).pid
    assert pid is not None
    return executor, pid


def test_a_text_process_that_died_at_the_start_does_not_stop_the_crawl_opening(tmp_path: Path) -> None:
    """A process killed while the pool starts breaks it: the wait ends (the crawl's first articles start
    a new pool) instead of raising out of the pipeline's opening."""
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=2))

    async def run() -> set[int]:
        executor, pid = _started_with_a_process(pool)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not executor._broken:
            assert time.monotonic() < deadline, "the pool never saw its process die"
            await asyncio.sleep(0.05)
        return await pool.started(60)

    try:
        assert len(asyncio.run(run())) < 2
    finally:
        pool.close()


def test_a_text_process_that_died_while_the_pool_starts_leaves_no_error_unread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every process's first answer failed when one died; the wait read the first failure alone, and the
    others were logged as asyncio's ERROR "Future exception was never retrieved", with a traceback."""
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=2))

    async def run() -> set[int]:
        _, pid = _started_with_a_process(pool)
        asyncio.get_running_loop().call_soon(os.kill, pid, signal.SIGKILL)  # as the wait begins
        return await pool.started(60)

    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            assert len(asyncio.run(run())) < 2
            gc.collect()
        assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []
    finally:
        pool.close()


def test_without_time_to_wait_the_text_pool_does_not_wait(tmp_path: Path) -> None:
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=2))

    async def run() -> set[int]:
        pool.start()
        return await pool.started(0)

    try:
        assert asyncio.run(run()) == set()
    finally:
        pool.close()


def test_the_text_pool_sends_waiting_articles_together_and_an_error_stays_with_its_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = text_pool_of(make_crawler(tmp_path, TEXT_PROCESSES=1))
    sent: list[int] = []
    executor = pool._pool()
    submit = executor.submit

    def counted(function: Any, batch: list[Any]) -> Any:
        sent.append(len(batch))
        return submit(function, batch)

    monkeypatch.setattr(executor, "submit", counted)
    bodies = _bodies(40, 1)

    async def run() -> list[Any]:
        calls = [pool.article_text(None, f"http://x.test/{n}", "Bridge", body, "qread", (1, 3)) for n, body in
                 enumerate(bodies)]  # fmt: skip
        calls.insert(7, pool.article_text(None, "http://x.test/bad", "Bridge", bodies[0], "qread", (0,)))
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        results = asyncio.run(run())
    finally:
        pool.close()
    bad = results.pop(7)
    assert isinstance(bad, ValueError) and "at least 1 sentence" in str(bad), "only its own article failed"
    for number, (body, result) in enumerate(zip(bodies, results, strict=True)):
        assert result == article_text(None, f"http://x.test/{number}", "Bridge", body, "qread", (1, 3))
    assert sum(sent) == 41
    assert len(sent) < 10 and max(sent) > 1, f"batches sent: {sent}"


def test_articles_of_batches_under_way_when_a_text_process_dies_are_done_here(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path, TEXT_PROCESSES=1)
    pool = text_pool_of(crawler)
    executor = pool._pool()
    bodies = _bodies(24, 20)  # about 20 ms of work each: the process is still busy when it is killed

    async def run() -> list[Any]:
        calls = [
            asyncio.ensure_future(
                pool.article_text(None, f"http://x.test/{n}", "Bridge", body, "qread", (1, 3))
            )
            for n, body in enumerate(bodies)
        ]
        await asyncio.sleep(0.05)
        for process in list(executor._processes.values()):
            process.kill()
        return await asyncio.gather(*calls)

    try:
        results = asyncio.run(run())
    finally:
        pool.close()
    for number, (body, result) in enumerate(zip(bodies, results, strict=True)):
        assert result == article_text(None, f"http://x.test/{number}", "Bridge", body, "qread", (1, 3))
    assert stats(crawler)["text/pool_restarted"] == 1, "one new pool, however many batches were under way"


POOL_OF_A_KILLED_PARENT = """
import multiprocessing, os, signal, sys
from concurrent.futures import ProcessPoolExecutor
from crawler.worker.textjob import quiet_child
pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"), initializer=quiet_child)
print(*{pool.submit(os.getpid).result() for _ in range(8)}, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_text_processes_of_a_killed_worker_end_with_it() -> None:
    run = subprocess.run(
        [sys.executable, "-c", POOL_OF_A_KILLED_PARENT],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    children = [int(pid) for pid in run.stdout.split()]
    assert children

    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        return state != "Z"  # a zombie has ended: only its parent (now init) has not reaped it yet

    deadline = time.monotonic() + 10
    while any(running(pid) for pid in children):
        assert time.monotonic() < deadline, f"pool processes {children} outlived their parent"
        time.sleep(0.2)


# --- StorePipeline -----------------------------------------------------------------------------------


def test_store_upserts_without_private_keys_and_counts(tmp_path: Path, crawler: Crawler) -> None:
    (stored,) = run_store(crawler, [item(min_body_chars=100)])
    assert isinstance(stored, Article)
    assert stored.page is None, "the page is let go once the article is stored"
    run_store(crawler, [item(fetched_at="2026-11-21T08:00:00Z", title="Bridge reopens at last")])
    assert stats(crawler) == {"store/new/citynews": 1, "store/updated/citynews": 1}
    assert sorted(path.name for path in (tmp_path / "articles").iterdir() if path.suffix == ".sqlite") == [
        "articles_2026w47.sqlite"
    ]
    with SqliteStore(tmp_path) as store:
        document = store.get(item().url)
    assert document is not None
    assert (document["title"], document["first_seen"]) == (
        "Bridge reopens at last",
        "2026-11-20T10:31:00.000000Z",
    )
    assert not [key for key in document if key.startswith("_")]


def test_a_week_whose_file_was_emptied_is_said_once_and_counted_as_a_worker_makes_it_anew(
    tmp_path: Path, crawler: Crawler, caplog: pytest.LogCaptureFixture
) -> None:
    """A week's file cut to 0 bytes (`> articles_2026w47.sqlite`: its articles lost) was made anew by the
    next article a worker stored in that week, nothing said (readers warn of it since 02fd1e1, until a write
    makes it look sound)."""
    emptied = tmp_path / "articles" / "articles_2026w47.sqlite"
    emptied.parent.mkdir()
    emptied.touch()
    an_hour_ago = time.time() - 3600
    os.utime(emptied, (an_hour_ago, an_hour_ago))
    caplog.set_level(logging.WARNING, logger="crawler.store.sqlite")
    first, second = run_store(
        crawler,
        [item(), item(url="http://127.0.0.1:8631/citynews/2026/other.html", body=f"Other. {LONG_RULE_BODY}")],
    )
    assert isinstance(first, Article) and isinstance(second, Article)
    run_store(
        crawler, [item(url="http://127.0.0.1:8631/citynews/2026/third.html", body=f"Third. {LONG_RULE_BODY}")]
    )
    assert [r.getMessage() for r in caplog.records] == [
        f"the article store {emptied} was empty (0 bytes), where the crawler makes a week's file with its"
        " tables in it: what it held is lost (a copy or restore onto it that failed, a redirection `>` onto"
        " it); it is made anew, this week's articles stored in it from now on, the earlier ones gone from it:"
        " restore them from a backup of the file (docs/operations.md, 'Backing up a week'), every crawler on"
        " the folder stopped first"
    ]
    assert stats(crawler) == {"store/new/citynews": 3, "store/week_made_anew": 1}


def test_items_are_written_in_batches_and_each_learns_its_outcome(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path, STORE_BATCH_SIZE=4, STORE_FLUSH_SECONDS=0.05)
    body = "\n\n".join(STORY)
    items = [
        item(url=f"http://127.0.0.1:8631/citynews/{n}.html", body=f"Story {n}. {LONG_RULE_BODY}")
        for n in range(9)
    ]
    items.append(item(url="http://127.0.0.1:8631/citynews/copy.html", body="Story 0. " + LONG_RULE_BODY))
    items.append(item(url="http://127.0.0.1:8631/citynews/bad.html", fetched_at="not a time", body=body))
    outputs = run_store(crawler, items)
    assert all(isinstance(output, Article) for output in outputs[:9])
    assert isinstance(outputs[9], DropItem)
    assert str(outputs[9]).endswith(
        "copy.html is a repost of http://127.0.0.1:8631/citynews/0.html: recorded there, not stored again"
    )
    assert isinstance(outputs[10], StoreError)
    assert "field 'fetched_at' 'not a time' is not an ISO-8601 time" in str(outputs[10])
    assert stats(crawler) == {"store/new/citynews": 9, "store/repost/citynews": 1, "store/errors/citynews": 1}
    with SqliteStore(tmp_path) as store:
        assert store.count() == 9
        original = store.get("http://127.0.0.1:8631/citynews/0.html")
    assert original is not None
    assert [r["url"] for r in original["reposts"]] == ["http://127.0.0.1:8631/citynews/copy.html"]


def test_a_failed_batch_fails_each_of_its_items(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path)
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "articles_2026w47.sqlite").write_bytes(b"this is not a database" * 100)
    outputs = run_store(crawler, [item(url=f"http://127.0.0.1:8631/citynews/{n}.html") for n in range(3)])
    # The store's failure, not the articles'; a damaged file, which waiting does not mend: each request is
    # dead-lettered at once, not deferred.
    assert all(isinstance(output, StoreUnavailableError) and output.lasting for output in outputs)
    assert "articles_2026w47.sqlite" in str(outputs[0])
    assert stats(crawler) == {"store/unavailable/citynews": 3, "store/lasting/citynews": 3}


def test_a_write_of_articles_each_refused_for_its_own_sake_pauses_no_worker_and_a_failed_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose every article MongoDB refused for its own sake (its collection's validator) was taken
    for a store that cannot write, pausing the worker's leasing, and a lone article refused by a damaged
    week's file for one refused for its own sake, pausing nothing. Now only the store's failure pauses: a
    damaged week's file, which refuses every article of its week, whatever the batch's size."""
    from pymongo.errors import BulkWriteError

    crawler = make_crawler(tmp_path, STORE_BATCH_SIZE=2, STORE_FLUSH_SECONDS=0.05)
    pipeline = build_from_crawler(StorePipeline, crawler)

    def refusing(documents: Any) -> Any:
        refusal = {"index": 0, "code": 121, "errmsg": "Document failed validation"}
        raise StoreError(f"MongoDB refused {documents[0]['url']}") from BulkWriteError(
            {"writeErrors": [refusal]}
        )

    async def run() -> list[tuple[list[str], str | None]]:
        (tmp_path / "articles").mkdir()
        (tmp_path / "articles" / "articles_2026w47.sqlite").write_bytes(b"this is not a database" * 100)
        await pipeline.open_spider()
        assert pipeline.store is not None
        seen = []
        write = pipeline.store.write
        monkeypatch.setattr(pipeline.store, "write", refusing)
        for names in (["a", "b"], ["c"]):
            articles = [item(url=f"http://127.0.0.1:8631/citynews/{name}.html") for name in names]
            outputs = await asyncio.gather(*map(pipeline.process_item, articles), return_exceptions=True)
            seen.append(([type(output).__name__ for output in outputs], pipeline.cannot_write()))
        monkeypatch.setattr(pipeline.store, "write", write)
        damaged = item(url="http://127.0.0.1:8631/citynews/damaged.html")
        (output,) = await asyncio.gather(pipeline.process_item(damaged), return_exceptions=True)
        seen.append(([type(output).__name__], pipeline.cannot_write()))
        await pipeline.close_spider()
        return seen

    (pair, pair_failure), (lone, lone_failure), (damaged, damaged_failure) = asyncio.run(run())
    assert (pair, lone, damaged) == (
        ["StoreUnavailableError"] * 2,
        ["StoreUnavailableError"],
        ["StoreUnavailableError"],
    )
    assert (pair_failure, lone_failure) == (None, None)
    assert damaged_failure is not None and "articles_2026w47.sqlite" in damaged_failure, damaged_failure


def test_a_write_of_a_store_that_spools_that_hangs_is_said_once_as_slow_and_once_as_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that spools (MongoDB: here the SQLite store made to spool) never pauses the crawl for a slow
    write, so a write that hung (a server answering hello but not commands: pymongo waits 30 s, then tries
    once more) was said by nothing for 60 s. Now a write under way for SLOW_WRITE_SECONDS is said once,
    however many batches wait behind it, and once as the writes answer again."""
    from crawler.worker.pipelines import store as store_pipeline

    monkeypatch.setattr(store_pipeline, "SLOW_WRITE_SECONDS", 0.2, raising=False)
    crawler = make_crawler(tmp_path, STORE_BATCH_SIZE=1, STORE_FLUSH_SECONDS=0)
    pipeline = build_from_crawler(StorePipeline, crawler)
    answer = threading.Event()

    def slow_lines() -> list[str]:
        return [record.getMessage() for record in caplog.records if "answer" in record.getMessage()]

    async def run() -> list[Article | BaseException]:
        await pipeline.open_spider()
        assert pipeline.store is not None
        monkeypatch.setattr(pipeline.store, "spools", True)
        write = pipeline.store.write

        def hanging(*args: Any, **kwargs: Any) -> Any:
            answer.wait(timeout=30)
            return write(*args, **kwargs)

        monkeypatch.setattr(pipeline.store, "write", hanging)
        articles = [item(url=f"http://127.0.0.1:8631/citynews/{name}.html") for name in "ab"]
        stored = asyncio.gather(*map(pipeline.process_item, articles), return_exceptions=True)
        # Up to 2 s for the line, then 0.3 s more, past the second batch's bound, for any line more.
        for _ in range(40):
            if slow_lines():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        answer.set()
        outputs = await stored
        await pipeline.close_spider()
        return outputs

    with caplog.at_level(logging.INFO, logger="crawler.worker.pipelines.store"):
        outputs = asyncio.run(run())
    assert not any(isinstance(output, StoreUnavailableError) for output in outputs), outputs
    said, ended = slow_lines()
    assert said.startswith("SqliteStore(") and " has not answered a write for " in said, said
    assert "s (2 articles wait for it): a server that takes commands but does not answer them" in said, said
    assert ended.startswith("SqliteStore(") and " answers its writes again, after " in ended, ended


def test_the_articles_waiting_for_the_store_are_counted_down_by_every_way_a_write_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is taken for one that cannot write (the worker's leasing paused) by the articles waiting
    for it and how long its oldest write under way has waited: every way a write ends must count its
    articles down, as a count that drifted up would pause the worker for good. A write that stores, one of
    a repost (dropped), one the store fails (deferred), one of an article refused for its own sake, an
    exception of no store's kind inside the store, a StopIteration inside it (asyncio refuses it into the
    future that waits for the write, which stayed pending for ever: its articles never learned their
    outcome), and the crawl's stop with articles still waiting. Only a write that stores ends a failure."""
    crawler = make_crawler(tmp_path, STORE_BATCH_SIZE=2, STORE_FLUSH_SECONDS=0.05)
    pipeline = build_from_crawler(StorePipeline, crawler)
    copy = "Story 0. " + LONG_RULE_BODY

    def article(name: str, **values: Any) -> Article:
        return item(url=f"http://127.0.0.1:8631/citynews/{name}.html", **values)

    def failing(error: BaseException) -> Any:
        def write(documents: Any) -> Any:
            raise error

        return write

    def nothing_waits() -> None:
        assert (pipeline._handed, pipeline._writing, pipeline._waiting) == (0, [], [])

    async def run() -> list[list[Any]]:
        await pipeline.open_spider()
        assert pipeline.store is not None
        write = pipeline.store.write

        async def settled(*articles: Article) -> list[Any]:
            # A guard against a write that never settles, no timing: each write here takes milliseconds.
            waiting = asyncio.gather(
                *(pipeline.process_item(one) for one in articles), return_exceptions=True
            )
            outputs = await asyncio.wait_for(waiting, timeout=60)
            nothing_waits()
            return list(outputs)

        outcomes = [await settled(article("0", body=copy), article("1", body=f"Story 1. {LONG_RULE_BODY}"))]
        outcomes.append(await settled(article("copy", body=copy), article("bad", fetched_at="not a time")))
        assert pipeline.cannot_write() is None
        for error in (StoreError("the test's disk is full"), KeyError("url"), StopIteration()):
            monkeypatch.setattr(pipeline.store, "write", failing(error))
            outcomes.append(await settled(article("2", body=f"Story 2. {LONG_RULE_BODY}")))
            assert pipeline.cannot_write() is not None, error
        monkeypatch.setattr(pipeline.store, "write", write)
        outcomes.append(await settled(article("3", body=f"Story 3. {LONG_RULE_BODY}")))
        assert pipeline.cannot_write() is None, "a write that stores ends the failure"
        pipeline.flush_seconds = 60.0  # the article waits for the stop
        stopped = asyncio.ensure_future(
            pipeline.process_item(article("4", body=f"Story 4. {LONG_RULE_BODY}"))
        )
        await asyncio.sleep(0)  # it waits for its batch, which the stop writes
        await pipeline.close_spider()
        outcomes.append([await stopped])
        nothing_waits()
        return outcomes

    outcomes = asyncio.run(run())
    kinds = [[type(output).__name__ for output in outputs] for outputs in outcomes]
    assert kinds == [
        ["Article", "Article"],
        ["RepostRecorded", "StoreError"],
        *[["StoreUnavailableError"]] * 3,
        ["Article"],
        ["Article"],
    ]
    assert "RuntimeError: _write raised StopIteration() (a bug" in str(outcomes[4][0])


def test_articles_a_batch_stored_before_it_failed_are_counted_new_when_it_is_written_again(
    tmp_path: Path,
) -> None:
    # The batch's week 47 is committed, then its week 45 is a damaged file: the batch is written again one
    # article at a time, and finds the week 47 article stored, by its own job: new for the job, not updated.
    crawler = make_crawler(tmp_path)
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "articles_2026w45.sqlite").write_bytes(b"this is not a database" * 100)
    stored_first = item(url="http://127.0.0.1:8631/citynews/47.html", job="job-1")
    damaged = item(
        url="http://127.0.0.1:8631/citynews/45.html", fetched_at="2026-11-05T10:00:00Z", job="job-1"
    )
    outputs = run_store(crawler, [stored_first, damaged])
    assert isinstance(outputs[0], Article) and not outputs[0].stored_before
    assert isinstance(outputs[1], StoreUnavailableError) and outputs[1].lasting
    assert stats(crawler) == {
        "store/new/citynews": 1,
        "store/unavailable/citynews": 1,
        "store/lasting/citynews": 1,
    }
    # A URL stored before the job is an update.
    run_store(crawler, [item(url=stored_first.url, fetched_at="2026-11-21T08:00:00Z", job="job-2")])
    assert stats(crawler)["store/updated/citynews"] == 1


def test_a_stored_article_read_again_and_written_twice_by_its_job_stays_an_update(tmp_path: Path) -> None:
    """`crawler temp --stored` reads a stored article again (its request carries the document's
    `first_seen`); written once by its job, then again (its acknowledgement lost with a Redis killed, its
    lease expired, the page fetched again), it was stored before the job all the same: an update, not a new
    article (a walk's summary said "stored 1 article, updated 47 stored before" of 48 stored articles, and
    the status counted it among the site's new articles)."""
    crawler = make_crawler(tmp_path)
    url = "http://127.0.0.1:8631/citynews/2026/bridge.html"
    run_store(crawler, [item(url=url, job="grab")])
    reread: dict[str, Any] = {"url": url, "job": "stored-1", "first_seen": "2026-11-20T10:31:00Z"}
    outputs = [
        *run_store(crawler, [item(**reread, fetched_at="2026-11-21T08:00:00Z", title="Bridge reopens")]),
        *run_store(crawler, [item(**reread, fetched_at="2026-11-21T08:01:00Z", title="Bridge reopens")]),
    ]
    assert all(isinstance(output, Article) and output.stored_before for output in outputs), outputs
    assert stats(crawler) == {"store/new/citynews": 1, "store/updated/citynews": 2}


def test_a_seen_article_fetched_again_and_written_twice_by_its_again_job_stays_an_update(
    tmp_path: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    """A job that fetches seen URLs again (`crawler temp SITE --again`) writes a stored article once, then
    again (its acknowledgement lost with a Redis killed, its lease expired, the page fetched again): it was
    stored before the job all the same, an update (the second write was counted a new article, as 918ed11
    found of `--stored`); an article the job stored first and wrote twice stays new to it."""
    crawler = make_crawler(tmp_path, REDIS_URL=redis_server)
    seen, fresh = (f"http://127.0.0.1:8631/citynews/2026/{name}.html" for name in ("bridge", "tunnel"))
    run_store(crawler, [item(url=seen, job="grab", fetched_at="2026-11-20T10:31:00Z")])
    job = enqueue_job(redis_client, Keys(project_settings.REDIS_KEY_PREFIX), [], job="again-1", again=True)
    again: dict[str, Any] = {"job": job, "find_week": True, "title": "Bridge reopens"}
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    outputs = [
        *run_store(
            crawler, [item(url=seen, fetched_at=now, **again), item(url=fresh, fetched_at=now, **again)]
        ),
        *run_store(
            crawler, [item(url=seen, fetched_at=now, **again), item(url=fresh, fetched_at=now, **again)]
        ),
    ]
    assert [isinstance(output, Article) and output.stored_before for output in outputs] == [
        True,
        False,
        True,
        False,
    ], outputs
    assert stats(crawler) == {"store/new/citynews": 3, "store/updated/citynews": 2}


def test_a_jobs_creation_time_is_never_after_the_moment_it_was_queued(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An article the job stores in the millisecond it was queued is the job's own: the job's ``created``
    rounded up past it (1.0006 written "1.001") made the article "first seen before its job", counted an
    update of a document stored before (the flaky failure of the test above in CI)."""
    monkeypatch.setattr(clock_module, "_offset", 0.0)
    monkeypatch.setattr(clock_module, "time", SimpleNamespace(time=lambda: 1_764_400_000.0006))
    job = enqueue_job(redis_client, Keys(project_settings.REDIS_KEY_PREFIX), [], job="again-2", again=True)
    created = redis_client.hget(Keys(project_settings.REDIS_KEY_PREFIX).job(job), "created")
    assert created is not None and float(created) <= 1_764_400_000.0006, created


class _MachineDatetime(datetime):
    """datetime whose now() reads time.time(): the machine's clock, as a test sets it."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return cls.fromtimestamp(time.time(), tz)


@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_a_jobs_articles_are_its_own_whatever_the_clock_of_the_workers_machine(
    tmp_path: Path,
    redis_client: redis.Redis,
    redis_server: str,
    monkeypatch: pytest.MonkeyPatch,
    skew: float,
) -> None:
    """A job that fetches seen URLs again (`--again`) created on time; a worker on a machine whose clock is
    2 minutes behind (or ahead) stores an article of it, then again (its acknowledgement lost): the article's
    first_seen, by the worker's clock, was before the job's created, by the other machine's, and its second
    write counted an update of a document stored before the job, not the job's own. Both go by Redis's
    clock now: the worker's offset to it is measured as it connects."""
    keys = Keys(project_settings.REDIS_KEY_PREFIX)
    job = enqueue_job(redis_client, keys, [], job=f"again-{skew:+.0f}", again=True)
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    monkeypatch.setattr(spider_module, "datetime", _MachineDatetime)
    spider = sites_spider(tmp_path, redis_server)
    spider.opened()
    url = "http://127.0.0.1/2026/tunnel.html"
    body = f"<h1>Tunnel opens</h1><div class='article'><p>{LONG_RULE_BODY}</p></div>".encode()
    request = Request(url, meta={"site": "news", "kind": "article", "job": job, "again": True})
    fetched = [
        next(iter(spider.parse_article(HtmlResponse(url, body=body, request=request)))) for _ in range(2)
    ]
    crawler = make_crawler(tmp_path, REDIS_URL=redis_server)
    outputs = [*run_store(crawler, fetched[:1]), *run_store(crawler, fetched[1:])]
    assert [isinstance(output, Article) and not output.stored_before for output in outputs] == [True, True], [
        getattr(output, "fetched_at", output) for output in outputs
    ]
    assert stats(crawler) == {"store/new/news": 2}


def test_an_item_without_a_body_is_dropped_and_counted(tmp_path: Path, crawler: Crawler) -> None:
    dropped = item(body=None)
    (output,) = run_store(crawler, [dropped])
    assert isinstance(output, DropItem)
    assert "no body in http://127.0.0.1:8631/citynews/2026/bridge.html" in str(output)
    assert dropped.page is None and PAGE not in repr(dropped)  # Scrapy logs a dropped item: never its page
    assert stats(crawler) == {"store/dropped_empty/citynews": 1}
    with SqliteStore(tmp_path) as store:
        assert store.count() == 0


def test_summaries_of_the_configured_lengths(tmp_path: Path) -> None:
    pipeline = build_from_crawler(TextPipeline, make_crawler(tmp_path, SUMMARY_SENTENCES="3,1"))
    summarised = text(pipeline, item(body="\n\n".join(STORY))).summary
    assert summarised is not None and set(summarised) == {"1", "3"}
    assert summarised["1"] in " ".join(STORY)
    assert len(summarised["3"]) > len(summarised["1"])
    assert text(pipeline, item(body=None, html="")).summary is None
    unsummarised = build_from_crawler(TextPipeline, make_crawler(tmp_path, SUMMARY_SENTENCES=[]))
    assert text(unsummarised, item()).summary is None
    with pytest.raises(InputError, match=r"setting SUMMARY_SENTENCES is \['0'\]: expected sentence counts"):
        build_from_crawler(TextPipeline, make_crawler(tmp_path, SUMMARY_SENTENCES="0"))


def test_the_pipelines_run_in_order_through_scrapys_manager(tmp_path: Path, crawler: Crawler) -> None:
    manager = ItemPipelineManager.from_crawler(crawler)

    async def run() -> list[Article]:
        await manager.open_spider_async()
        try:
            outputs = [
                await manager.process_item_async(
                    item(url=f"http://127.0.0.1:8631/citynews/{n}.html#top", body=body)
                )
                for n, body in enumerate(["  Too   short. ", LONG_RULE_BODY])
            ]
            with pytest.raises(DropItem):
                await manager.process_item_async(item(body=None, html="<html></html>"))
        finally:
            await manager.close_spider_async()
        return outputs

    outputs = asyncio.run(run())
    assert [(output.extraction or {}).get("body_from") for output in outputs] == ["qread", "rule"]
    assert stats(crawler) == {
        "extract/short_body/citynews": 2,
        "extract/qread_fallback/citynews": 1,
        "extract/rule_body/citynews": 1,
        "store/new/citynews": 2,
        "store/dropped_empty/citynews": 1,
    }
    with SqliteStore(tmp_path) as store:
        documents = {document["url"]: document for document in store.iter_articles()}
    assert set(documents) == {
        "http://127.0.0.1:8631/citynews/0.html",
        "http://127.0.0.1:8631/citynews/1.html",
    }
    assert documents["http://127.0.0.1:8631/citynews/0.html"]["body"] == "\n\n".join(STORY)


def test_a_body_from_qread_is_counted_once_per_article_stored_not_per_attempt(tmp_path: Path) -> None:
    crawler = make_crawler(tmp_path)
    (tmp_path / "articles").mkdir()
    broken = tmp_path / "articles" / "articles_2026w47.sqlite"
    broken.write_bytes(b"this is not a database" * 100)

    async def attempt() -> Article | BaseException:
        """The page fetched again and sent through every pipeline, as after a deferred store."""
        manager = ItemPipelineManager.from_crawler(crawler)
        await manager.open_spider_async()
        try:
            stored: Article = await manager.process_item_async(item(body="Too short."))
        except StoreUnavailableError as exc:
            return exc
        finally:
            await manager.close_spider_async()
        return stored

    outcomes = [asyncio.run(attempt()), asyncio.run(attempt())]
    assert all(isinstance(outcome, StoreUnavailableError) for outcome in outcomes)
    assert "extract/qread_fallback/citynews" not in stats(crawler), "no article stored: no fallback counted"
    broken.unlink()
    stored = asyncio.run(attempt())
    assert isinstance(stored, Article) and stored.extraction is not None
    assert stored.extraction["body_from"] == "qread"
    assert stats(crawler)["extract/short_body/citynews"] == 3, "each attempt extracted the page again"
    assert stats(crawler)["extract/qread_fallback/citynews"] == 1
    assert stats(crawler)["store/new/citynews"] == 1


@pytest.mark.parametrize(
    ("name", "value", "build"),
    [
        ("TEXT_PROCESSES", -1, text_pool_of),
        ("QREAD_MIN_BODY_CHARS", -1, TextPipeline.from_crawler),
        ("QREAD_MIN_BODY_CHARS", "many", TextPipeline.from_crawler),
        # Scrapy's getint() cannot read "2.0": a whole-number setting's text is a whole number's.
        ("QREAD_MIN_BODY_CHARS", "2.0", TextPipeline.from_crawler),
    ],
)
def test_the_text_components_word_a_setting_out_of_range_as_every_crawl_command_does(
    tmp_path: Path, name: str, value: object, build: Any
) -> None:
    """A crawl that no crawl command checked first (`scrapy crawl sites`) is refused by the component that
    reads the setting, in the words of the check every crawl command runs (crawler.bounds.checked_setting):
    the setting, the value, its range, its default and where to set it."""
    from crawler.bounds import declared_ranges

    taken = declared_ranges(project_settings)[name]
    with pytest.raises(InputError) as raised:
        build(make_crawler(tmp_path, **{name: value}))
    assert str(raised.value) == (
        f"{name} is {value!r}: expected {taken} (the default is {getattr(project_settings, name)!r}); set"
        f" {name} to a value in that range where it is given (-s {name}=VALUE, the environment or"
        " crawler/settings.py), or leave it out to take the default"
    )
