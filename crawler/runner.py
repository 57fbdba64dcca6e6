"""Running crawls from the command line: settings, jobs, one worker in this process, progress.

A *job* is a set of requests queued together (a temp crawl, the demo): its counters live in
``crawler:job:<id>`` (``pending``, ``fetched``, ``stored``, ``skipped``, ``errors``); it is done when
``pending`` is back to zero, whichever workers did the work.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
from twisted.internet import task

from crawler.queue import Keys, LeasedQueue
from crawler.rules import Rule
from crawler.spiders.sites import SitesSpider, article_request, index_request

logger = logging.getLogger(__name__)

JOB_FIELDS = ("pending", "fetched", "stored", "skipped", "errors")


def crawl_settings(overrides: Mapping[str, Any]) -> Settings:
    """The project's settings (``crawler/settings.py``) with ``overrides`` on top."""
    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    for name, value in overrides.items():
        settings.set(name, value, priority="cmdline")
    return settings


@dataclass(frozen=True, slots=True)
class JobCounts:
    pending: int
    fetched: int
    stored: int
    skipped: int
    errors: int

    @classmethod
    def read(cls, server: redis.Redis, keys: Keys, job: str) -> JobCounts:
        values = server.hmget(keys.job(job), list(JOB_FIELDS))
        return cls(*(int(value or 0) for value in values))


def enqueue_job(
    server: redis.Redis,
    prefix: str,
    rules: Iterable[Rule],
    *,
    article_urls: Iterable[str] = (),
    lease_seconds: float = 60.0,
    job: str | None = None,
    kind: str = "temp",
    boost: int = 0,
) -> str:
    """Queue a job: each rule's start URLs as index pages, or, when ``article_urls`` are given (one rule
    then), those pages alone as article pages. ``kind`` is ``temp`` (a crawl asked for now) or ``grab``
    (a regular grab of the schedule); ``boost`` raises the priority of its requests (and of the article
    requests they lead to) over the rule's own. Returns the job id (a new one unless given: queueing a
    job again adds nothing, since the queue stores an identical request once)."""
    job = job or uuid.uuid4().hex[:12]
    keys = Keys(prefix)
    rules = list(rules)
    server.hsetnx(keys.job(job), "created", f"{time.time():.3f}")
    server.hset(keys.job(job), mapping={"sites": ",".join(rule.site for rule in rules), "kind": kind})
    queue = LeasedQueue(server, None, prefix, lease_seconds=lease_seconds)
    urls = list(article_urls)
    for rule in rules:
        if urls:
            for url in urls:
                queue.push(article_request(rule, url, job=job, boost=boost, job_kind=kind))
        else:
            for url in rule.start_urls:
                queue.push(index_request(rule, url, job=job, boost=boost, job_kind=kind))
    return job


def run_worker(
    settings: Settings,
    *,
    job: str | None = None,
    sites: Iterable[str] = (),
    every: float = 0.5,
    on_tick: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run the ``sites`` spider in this process until its job is done (or, with no job, until stopped).

    ``on_tick`` is called every ``every`` seconds while it runs (a progress display). Returns the crawl's
    stats.
    """
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SitesSpider)
    tickers: list[task.LoopingCall] = []

    def start_ticking() -> None:
        # Made once the crawl runs: a LoopingCall takes the global reactor, which Scrapy installs first.
        assert on_tick is not None
        tickers.append(task.LoopingCall(on_tick))
        tickers[0].start(every, now=True)

    if on_tick is not None:
        crawler.signals.connect(start_ticking, signal=signals.engine_started)
    process.crawl(crawler, job=job, sites=",".join(sites) or None)
    process.start()
    for ticker in tickers:
        if ticker.running:
            ticker.stop()
    assert crawler.stats is not None
    return dict(crawler.stats.get_stats())
