"""A worker in this process: the ``sites`` spider on Scrapy's process runner, until its job is done."""

from __future__ import annotations

import gc
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from scrapy import signals
from scrapy.settings import BaseSettings, Settings
from twisted.internet import task
from twisted.python.failure import Failure

from crawler import PROCESS_STARTED
from crawler import settings as defaults
from crawler.bounds import checked_setting, declared_ranges
from crawler.commandline import TOLD, counted
from crawler.errors import CrawlerError, InputError, redacted_text
from crawler.worker.connection import RedisOutage, outage_of
from crawler.worker.fetch import SignalledProcess
from crawler.worker.spider import SitesSpider

__all__ = ["check_worker_settings", "run_worker"]

logger = logging.getLogger(__name__)


class _OneLine(logging.Filter):
    """Keeps a record's message and drops its traceback: for our named errors in the item pipelines (their
    messages say what failed and the fix). A bug keeps its traceback."""

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
    had its start time, and CoreStats logs an AssertionError with a traceback for it; one whose scheduler
    fails to open (its Redis refuses the seen-URL filter's write) is closed before its scraper opened, and
    the engine logs the scraper's RuntimeError "Scraper slot not assigned" with a traceback: each said in
    one DEBUG line instead; the failure itself is raised by :func:`run_worker`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, AssertionError) and "CoreStats.spider_closed" in record.getMessage():
            said = "the crawl closed before it had opened: no core stats to close"
        elif isinstance(error, RuntimeError) and str(error) == "Scraper slot not assigned":
            said = "the crawl closed before its scraper had opened: no scraper to close"
        else:
            return True
        record.msg, record.args = said, ()
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


class _ScrapysList(logging.Filter):
    """Scrapy's start-up lists (its version and the libraries', the settings overridden, the add-ons,
    extensions, middlewares and pipelines enabled: about 80 lines) and its stats dumped at the stop (a
    dict of 40 lines or more) are logged at DEBUG, not INFO: shown with ``LOG_LEVEL=DEBUG``, for
    diagnosing; :func:`run_worker` says what the crawl did in one line of its own. Scrapy's other lines,
    and every warning, keep their level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and str(record.msg).startswith(_SCRAPYS_LISTS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


class _GaveUp(logging.Filter):
    """Scrapy's ERROR "Gave up retrying <GET URL> (failed 3 times): ..." is logged at DEBUG: the request's
    dead letter says it (once for a site's requests that fail alike: crawler.worker.scheduler), or the
    warning of a robots.txt that could not be fetched (once per host); a site that is down gave a line per
    request of its queue."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Gave up retrying"):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


class _Redacted(logging.Filter):
    """A line shown with the secrets of its URLs masked (:func:`redacted_text`): Scrapy's and ours name
    the URLs requested (``Gave up retrying <GET https://site.test/feed?token=***>``), and a rule's start
    URL may hold a token; so may the exception a line shows with its traceback (the formatter takes the
    masked text set in ``exc_text``). A handler's filter: only the lines a handler shows are read."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            shown = record.getMessage()
        except Exception:  # noqa: BLE001 - a line that cannot be formatted, for any reason (arguments that
            # do not fit, a missing %(key)s, a failing __str__): the handler reports it, as logging does
            return True
        if "://" in shown:
            record.msg, record.args = redacted_text(shown), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redacted_text(_TRACEBACKS.formatException(record.exc_info))
        return True


# The formatter of a traceback whose URLs _Redacted masks: logging's own (each handler's formats it so).
_TRACEBACKS = logging.Formatter()


class _WorkerProcess(SignalledProcess):
    """Says at once that a stop signal stops the crawl, and what becomes of the downloads it cancelled: at
    INFO (a command that crawls for a person says it as a note) for a stop asked for, Ctrl-C or SIGTERM; a
    warning for a terminal that closed under it (SIGHUP)."""

    def stopping(self, cancelled: int) -> None:
        name = signal.Signals(self.signum).name if self.signum is not None else "a signal"
        level, extra = (logging.WARNING, None) if self.signum == signal.SIGHUP else (logging.INFO, TOLD)
        if cancelled:
            them = "its request goes" if cancelled == 1 else "their requests go"
            logger.log(
                level,
                "stopping (%s): %s under way cancelled, %s back to the queue",
                name,
                counted(cancelled, "download"),
                them,
                extra=extra,
            )
        else:
            logger.log(level, "stopping (%s): no download under way", name, extra=extra)


_NEVER_OPENED = _NeverOpened()
_REDACTED = _Redacted()
_SCRAPYS_LIST = _ScrapysList()
# The start of each of Scrapy's start-up messages and of its stats dump (their templates, scrapy 2.19), and
# the logger of each.
_SCRAPYS_LISTS = ("Scrapy ", "Versions:", "Overridden settings:", "Enabled ", "Dumping Scrapy stats:")
_SCRAPYS_LIST_LOGGERS = (
    "scrapy.utils.log",
    "scrapy.crawler",
    "scrapy.addons",
    "scrapy.middleware",
    "scrapy.statscollectors",
)
_ONE_LINE_LOGGERS = {
    "scrapy.core.scraper": _OneLine(only_ours=True),
}
_GAVE_UP = _GaveUp()


# The numeric settings a crawl reads (crawler/settings.py declares the range of each beside it), checked
# together before Redis starts or anything is queued, rather than failing (or looping) in the middle of a
# crawl. The store's are checked again by crawler.store.store_config, for any mapping of settings.
_RANGES = declared_ranges(defaults)


def check_worker_settings(settings: BaseSettings) -> None:
    """:class:`InputError` naming a numeric setting of a crawl that it cannot run with (``LEASE_SECONDS``
    of 0, a negative ``STORE_RETRY_SECONDS``, ``BAN_MIN_SHARE`` above 1, ``TEXT_PROCESSES`` below 0, ...),
    its value, the range it takes and its default (:func:`crawler.bounds.checked_setting`), so that a
    command can refuse it before anything is queued. A setting given empty is left out, as the store reads
    it."""
    for name, taken in _RANGES.items():
        checked_setting(name, settings[name], taken, default=getattr(defaults, name), error=InputError)


def run_worker(
    settings: Settings,
    *,
    job: str | None = None,
    sites: Iterable[str] = (),
    every: float = 0.5,
    on_tick: Callable[[RedisOutage], bool] | None = None,
) -> dict[str, Any]:
    """Run the ``sites`` spider in this process until its job is done (or, with no job, until stopped).

    ``on_tick`` is called every ``every`` seconds while it runs (a progress display), with the worker's
    account of Redis being away (:func:`outage_of`: it knows the refusals the display's reads do not meet);
    when it returns False, the crawl stops as on Ctrl-C. Returns the crawl's stats; raises KeyboardInterrupt
    when it was stopped by Ctrl-C or ``on_tick``, :class:`Terminated` (a KeyboardInterrupt) by SIGTERM,
    :class:`HungUp` (one too) by SIGHUP, after Scrapy's clean stop: its unfinished requests are back in the
    queue.
    """
    for name, one_line in _ONE_LINE_LOGGERS.items():
        logging.getLogger(name).addFilter(one_line)
    logging.getLogger("scrapy.downloadermiddlewares.retry").addFilter(_GAVE_UP)
    logging.getLogger("scrapy.utils.signal").addFilter(_NEVER_OPENED)
    logging.getLogger("scrapy.core.engine").addFilter(_NEVER_OPENED)
    for name in _SCRAPYS_LIST_LOGGERS:
        logging.getLogger(name).addFilter(_SCRAPYS_LIST)
    check_worker_settings(settings)
    sys.setswitchinterval(settings.getfloat("WORKER_SWITCH_INTERVAL"))
    _, *older = gc.get_threshold()
    gc.set_threshold(settings.getint("WORKER_GC_THRESHOLD"), *older)
    process = _WorkerProcess(settings)
    crawler = process.create_crawler(SitesSpider)
    tickers: list[task.LoopingCall] = []

    def ticking() -> None:
        assert on_tick is not None
        if not on_tick(outage_of(crawler)) and not process.interrupted:
            process.interrupted = True
            process._graceful_stop_reactor()  # what Scrapy's own Ctrl-C handler calls

    def start_ticking() -> None:
        # Made once the crawl runs: a LoopingCall takes the global reactor, which Scrapy installs first.
        tickers.append(task.LoopingCall(ticking))
        tickers[0].start(every, now=True)

    started: list[bool] = []
    crawler.signals.connect(lambda: started.append(True), signal=signals.engine_started, weak=False)
    crawler.signals.connect(_freeze_start_up, signal=signals.engine_started, weak=False)
    if on_tick is not None:
        crawler.signals.connect(start_ticking, signal=signals.engine_started)
    # The crawl's own failure (a component that cannot be made, a pipeline that cannot open: the store),
    # kept to be raised as itself: else the reactor stops as if interrupted, and the failure is lost.
    failures: list[Failure] = []
    process.crawl(crawler, job=job, sites=",".join(sites) or None).addErrback(failures.append)
    # Scrapy's root handler is made anew as the crawl applies its settings, above.
    for handler in logging.getLogger().handlers:
        handler.addFilter(_REDACTED)
    try:
        process.start()
    finally:
        gc.unfreeze()
    for ticker in tickers:
        if ticker.running:
            ticker.stop()
    if failures and not process.interrupted:
        failures[0].raiseException()
    if not started:
        raise process.stopped()  # stopped (Ctrl-C, SIGTERM) before the crawl had started: nothing ran
    assert crawler.stats is not None
    stats = dict(crawler.stats.get_stats())
    logger.info("%s", _what_it_did(stats))
    if process.interrupted or stats.get("finish_reason") == "shutdown":
        raise process.stopped()  # Ctrl-C or SIGTERM, once the crawl ran or while it opened
    return stats


def _freeze_start_up() -> None:
    """Keep the objects alive as the crawl starts out of the garbage collector's passes for as long as it
    runs (``WORKER_GC_THRESHOLD``): collected once, then frozen; unfrozen when the crawl ends."""
    gc.collect()
    gc.freeze()


def _what_it_did(stats: dict[str, Any]) -> str:
    """What a crawl did, from its stats, in the words of a temp crawl's summary: ``The worker ran 8 s
    (shutdown): fetched 55 pages, stored 49 articles, errors 0`` (those spooled to local disk, the articles
    re-stored, updated, stored before, and the kinds of the errors, dead letters, when there are some). It
    ran since its process started (its start-up and its stop too: Scrapy's ``elapsed_time_seconds``, from
    the spider's opening to its closing, left out half of a short run's 8 s). The articles are counted by
    the acknowledgements that ended their requests (``acked/stored``, ``acked/updated``): once each,
    however many times the store wrote them; those this worker wrote again after an acknowledgement of its
    own had counted them (Redis restored from an older snapshot gave their requests back) are said apart
    (``acked/stored_again``), never counted stored twice."""

    def total(prefix: str) -> int:
        return sum(int(count) for name, count in stats.items() if name.startswith(prefix))

    updated = int(stats.get("acked/updated", 0))
    spooled = int(stats.get("acked/spooled", 0))
    again = int(stats.get("acked/stored_again", 0))
    errors = total("dead/")
    kinds: dict[str, int] = {}
    for name, count in stats.items():
        if name.startswith("errors/"):
            kind = name.removeprefix("errors/").rpartition("/")[0]
            kinds[kind] = kinds.get(kind, 0) + int(count)
    return (
        f"The worker ran {time.monotonic() - PROCESS_STARTED:.0f} s"
        f" ({stats.get('finish_reason', 'stopped')}): fetched {counted(total('crawl/pages/'), 'page')},"
        f" stored {counted(int(stats.get('acked/stored', 0)), 'article')}"
        + (f" ({spooled} of them spooled to local disk)" if spooled else "")
        + (f", re-stored {again} it had stored already" if again else "")
        + (f", updated {updated} stored before" if updated else "")
        + f", errors {errors}"
        + (f" ({', '.join(f'{kind}: {count}' for kind, count in sorted(kinds.items()))})" if errors else "")
    )
