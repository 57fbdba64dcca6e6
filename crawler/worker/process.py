"""A worker in this process: the ``sites`` spider on Scrapy's process runner, until its job is done."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from scrapy import signals
from scrapy.settings import BaseSettings, Settings
from twisted.internet import task
from twisted.python.failure import Failure

from crawler import settings as defaults
from crawler.errors import CrawlerError, InputError
from crawler.worker.fetch import SignalledProcess
from crawler.worker.spider import SitesSpider
from crawler.worker.textwork import text_processes

__all__ = ["check_worker_settings", "run_worker"]


class _OneLine(logging.Filter):
    """Keeps a record's message and drops its traceback: for a robots.txt that cannot be downloaded (a
    host that refuses connections: the crawl goes on, the page's own failure is reported), and for our
    named errors in the item pipelines (their messages say what failed and the fix). A bug keeps its
    traceback."""

    def __init__(self, *, only_ours: bool) -> None:
        super().__init__()
        self.only_ours = only_ours

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and (not self.only_ours or isinstance(error, CrawlerError)):
            record.msg = f"{record.msg}: {type(error).__name__}: {error}"
            record.exc_info = None
            record.exc_text = None
        return True


class _NeverOpened(logging.Filter):
    """A crawl that fails as it opens (a pipeline that cannot open) is closed before Scrapy's CoreStats
    had its start time, and CoreStats logs an AssertionError with a traceback for it: said in one DEBUG
    line instead; the failure itself is raised by :func:`run_worker`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, AssertionError) and "CoreStats.spider_closed" in record.getMessage():
            record.msg, record.args = "the crawl closed before it had opened: no core stats to close", ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


_NEVER_OPENED = _NeverOpened()
_ONE_LINE_LOGGERS = {
    "crawler.worker.robots": _OneLine(only_ours=False),
    "scrapy.core.scraper": _OneLine(only_ours=True),
}


class _Lowest(NamedTuple):
    """The lowest value a numeric setting takes (``above``: the value itself refused), and what it counts."""

    value: float
    above: bool
    unit: str


_SECONDS_ABOVE_0 = _Lowest(0, above=True, unit="seconds")
_SECONDS = _Lowest(0, above=False, unit="seconds")
# The numeric settings a crawl reads as it runs (the store's are checked by crawler.store.store_config),
# with their lowest values: checked together, before Redis starts or anything is queued, rather than
# failing (or looping) in the middle of a crawl.
_LOWEST: dict[str, _Lowest] = {
    "CONCURRENT_REQUESTS": _Lowest(1, above=False, unit="a number of requests"),
    "CONCURRENT_REQUESTS_PER_DOMAIN": _Lowest(1, above=False, unit="a number of requests"),
    "CONCURRENT_ITEMS": _Lowest(1, above=False, unit="a number of items"),
    "DOWNLOAD_DELAY": _SECONDS,
    "AUTOTHROTTLE_START_DELAY": _SECONDS,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": _Lowest(0, above=True, unit="a number of requests"),
    "RETRY_TIMES": _Lowest(0, above=False, unit="a number of retries"),
    "DOWNLOAD_TIMEOUT": _SECONDS_ABOVE_0,
    "DOWNLOAD_MAXSIZE": _Lowest(0, above=False, unit="a number of bytes"),
    "DOWNLOAD_WARNSIZE": _Lowest(0, above=False, unit="a number of bytes"),
    "REDIRECT_MAX_TIMES": _Lowest(0, above=False, unit="a number of redirects"),
    "RETRY_BACKOFF_SECONDS": _SECONDS,
    "RETRY_BACKOFF_MAX_SECONDS": _SECONDS,
    "SCHEDULER_IDLE_POLL_SECONDS": _SECONDS,
    "SCHEDULER_POP_BATCH": _Lowest(1, above=False, unit="a number of requests"),
    "SCHEDULE_TICK_SECONDS": _SECONDS_ABOVE_0,
    "SCHEDULE_GRAB_WAIT_MAX_SECONDS": _SECONDS,
    "SCHEDULE_LEADER_SECONDS": _SECONDS_ABOVE_0,
    "SCHEDULE_ADAPT_MIN_FACTOR": _Lowest(0, above=True, unit="a factor"),
    "SCHEDULE_ADAPT_MAX_FACTOR": _Lowest(0, above=True, unit="a factor"),
    "SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS": _SECONDS,
    "SUPERVISION_FLUSH_SECONDS": _SECONDS_ABOVE_0,
    "SUPERVISION_KEEP_HOURS": _Lowest(0, above=True, unit="hours"),
    "SUPERVISION_HEARTBEAT_SECONDS": _SECONDS_ABOVE_0,
    "SUPERVISION_RATE_SECONDS": _SECONDS_ABOVE_0,
    "SUPERVISION_FORGET_WORKER_SECONDS": _SECONDS,
    "ROBOTS_MAX_CRAWL_DELAY": _SECONDS,
    "BACKOFF_FIRST_SECONDS": _SECONDS,
    "BACKOFF_MAX_SECONDS": _SECONDS,
    "BACKOFF_CALM_SECONDS": _SECONDS,
    "BACKOFF_THROTTLE_SECONDS": _SECONDS,
    "BACKOFF_MAX_THROTTLE_SECONDS": _SECONDS,
    "BACKOFF_MAX_TRIES": _Lowest(0, above=False, unit="a number of tries"),
    "BAN_WINDOW": _Lowest(1, above=False, unit="a number of answers"),
    "BAN_MIN_SIGNALS": _Lowest(1, above=False, unit="a number of signs"),
    "BAN_MIN_SHARE": _Lowest(0, above=False, unit="a share"),
    "BAN_BACKOFF_SECONDS": _SECONDS,
    "PROXY_CONCURRENCY": _Lowest(1, above=False, unit="a number of requests"),
    "PROXY_MAX_FAILURES": _Lowest(1, above=False, unit="a number of failures"),
    "PROXY_BENCH_SECONDS": _SECONDS,
    "SESSION_LEASE_SECONDS": _SECONDS_ABOVE_0,
    "SESSION_BENCH_SECONDS": _SECONDS,
    "SESSION_WAIT_SECONDS": _SECONDS,
    "SESSION_MAX_WAITS": _Lowest(0, above=False, unit="a number of waits"),
    "LEASE_SECONDS": _SECONDS_ABOVE_0,
    "LEASE_RENEW_SECONDS": _SECONDS_ABOVE_0,
    "BLOOM_CAPACITY": _Lowest(1, above=False, unit="a number of URLs"),
    "BLOOM_ERROR_RATE": _Lowest(0, above=True, unit="a fraction"),
    "BLOOM_GROWTH": _Lowest(1, above=False, unit="a factor"),
    "STORE_FLUSH_SECONDS": _SECONDS,
    "STORE_RETRY_SECONDS": _SECONDS,
    "STORE_MAX_ATTEMPTS": _Lowest(1, above=False, unit="a number of tries"),
    "WORKER_SWITCH_INTERVAL": _SECONDS_ABOVE_0,
    "TEXT_START_SECONDS": _SECONDS,
    "RULES_REGEX_PAGE_SECONDS": _SECONDS_ABOVE_0,
    "RULES_RELOAD_SECONDS": _SECONDS,
    "SITEMAPS_MAX_DEPTH": _Lowest(0, above=False, unit="a number of levels"),
    "SITEMAPS_MAX_BYTES": _Lowest(1, above=False, unit="a number of bytes"),
    "SITEMAPS_SINCE_MARGIN_SECONDS": _SECONDS,
    "DISCOVER_QUEUE_TARGET": _Lowest(1, above=False, unit="a number of requests"),
    "DISCOVER_SYNC_PAGES": _Lowest(1, above=False, unit="a number of pages"),
    "DISCOVER_FRONTIER_PER_HOST": _Lowest(1, above=False, unit="a number of links"),
    "DISCOVER_EXAMPLE_ARTICLES": _Lowest(0, above=False, unit="a number of articles"),
    "DOCUMENTS_MAX_BYTES": _Lowest(1, above=False, unit="a number of bytes"),
    "QREAD_MIN_BODY_CHARS": _Lowest(0, above=False, unit="a number of characters"),
}


def check_worker_settings(settings: BaseSettings) -> None:
    """:class:`InputError` naming a numeric setting of a crawl that it cannot run with (``LEASE_SECONDS``
    of 0, a negative ``STORE_RETRY_SECONDS``, ``STORE_MAX_ATTEMPTS`` of 0, ``TEXT_PROCESSES`` below 0, ...),
    its value, what it takes and its default, so that a command can refuse it before anything is queued."""
    for name, lowest in _LOWEST.items():
        value = settings.getfloat(name)
        if value > lowest.value or (value == lowest.value and not lowest.above):
            continue
        expected = f"above {lowest.value:g}" if lowest.above else f"{lowest.value:g} or more"
        raise InputError(
            f"{name} is {settings[name]!r}: expected {lowest.unit}{' ' if lowest.above else ', '}{expected}"
            f" (the default is {getattr(defaults, name)!r})"
        )
    text_processes(settings)


def run_worker(
    settings: Settings,
    *,
    job: str | None = None,
    sites: Iterable[str] = (),
    every: float = 0.5,
    on_tick: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Run the ``sites`` spider in this process until its job is done (or, with no job, until stopped).

    ``on_tick`` is called every ``every`` seconds while it runs (a progress display); when it returns
    False, the crawl stops as on Ctrl-C. Returns the crawl's stats; raises KeyboardInterrupt when it was
    stopped by Ctrl-C or ``on_tick``, :class:`Terminated` (a KeyboardInterrupt) by SIGTERM, after Scrapy's
    clean stop: its unfinished requests are back in the queue.
    """
    for name, one_line in _ONE_LINE_LOGGERS.items():
        logging.getLogger(name).addFilter(one_line)
    logging.getLogger("scrapy.utils.signal").addFilter(_NEVER_OPENED)
    check_worker_settings(settings)
    sys.setswitchinterval(settings.getfloat("WORKER_SWITCH_INTERVAL"))
    process = SignalledProcess(settings)
    crawler = process.create_crawler(SitesSpider)
    tickers: list[task.LoopingCall] = []

    def ticking() -> None:
        assert on_tick is not None
        if not on_tick() and not process.interrupted:
            process.interrupted = True
            process._graceful_stop_reactor()  # what Scrapy's own Ctrl-C handler calls

    def start_ticking() -> None:
        # Made once the crawl runs: a LoopingCall takes the global reactor, which Scrapy installs first.
        tickers.append(task.LoopingCall(ticking))
        tickers[0].start(every, now=True)

    started: list[bool] = []
    crawler.signals.connect(lambda: started.append(True), signal=signals.engine_started, weak=False)
    if on_tick is not None:
        crawler.signals.connect(start_ticking, signal=signals.engine_started)
    # The crawl's own failure (a component that cannot be made, a pipeline that cannot open: the store),
    # kept to be raised as itself: else the reactor stops as if interrupted, and the failure is lost.
    failures: list[Failure] = []
    process.crawl(crawler, job=job, sites=",".join(sites) or None).addErrback(failures.append)
    process.start()
    for ticker in tickers:
        if ticker.running:
            ticker.stop()
    if failures and not process.interrupted:
        failures[0].raiseException()
    if not started:
        raise process.stopped()  # stopped (Ctrl-C, SIGTERM) before the crawl had started: nothing ran
    assert crawler.stats is not None
    stats = dict(crawler.stats.get_stats())
    if process.interrupted or stats.get("finish_reason") == "shutdown":
        raise process.stopped()  # Ctrl-C or SIGTERM, once the crawl ran or while it opened
    return stats
