"""A worker in this process: the ``sites`` spider on Scrapy's process runner, until its job is done."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
from twisted.internet import task

from crawler.worker.spider import SitesSpider

__all__ = ["run_worker"]


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
