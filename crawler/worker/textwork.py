"""The per-article text work in a pool of processes, off the crawl's thread: the body from qRead when the
rule's falls short, the summaries and the fingerprints.

Each of these is pure Python over one article's text (qRead parses the page; a 100 KB page costs
milliseconds), so on the crawl's thread they would hold the GIL away from the reactor and use one core
only. :class:`TextPool` sends them to ``TEXT_PROCESSES`` processes (spawned, so they share nothing with the
reactor's threads; they run :mod:`crawler.worker.textjob`, which imports no Scrapy): an article's call
gets what it needs (the page's HTML only when qRead must read it) and returns plain values.
``TEXT_PROCESSES = 0`` does the same work on the crawl's thread.

Articles go to the processes in batches (``textjob.article_texts``): a call costs about 0.3 ms of the
crawl process's CPU and 0.2 ms of the pool's whatever it carries, as much as a short article's summaries.
At most two batches per process are under way; the articles that come meanwhile wait and go together in
the next one (up to ``_BATCH_MAX``), so a crawl at rest sends each article at once and a busy one sends
them several a call.

A process that dies (killed, out of memory) breaks the pool: the article's work is done on the crawl's
thread instead and a new pool is started, so an article is never lost to it; counted as
``text/pool_restarted``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import resource_tracker
from typing import Any, Self
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from crawler import settings as defaults
from crawler.bounds import setting_in_range
from crawler.commandline import counted
from crawler.discover.topic import Topic
from crawler.errors import InputError
from crawler.threads import STOP_SIGNALS, signals_blocked
from crawler.worker.textjob import Args, TextResult, article_text, article_texts, quiet_child, ready

__all__ = ["TextPool", "text_pool_of"]

logger = logging.getLogger(__name__)

# Batches under way per process: one being worked on, one waiting in its queue, so a process never idles
# between two.
_BATCHES_PER_PROCESS = 2
# Articles per batch at most: 16 short articles are about 25 ms of work, which keeps an article's wait for
# its text (and so its store and acknowledgement) short.
_BATCH_MAX = 16
# Between two rounds of calls while a process still imports (one that has answered may take a round's
# calls alone): short beside an import's 0.2 s, long enough not to keep the answered one busy.
_STARTED_POLL_SECONDS = 0.02

_Batched = tuple[Args, "asyncio.Future[TextResult]"]

# The warning of multiprocessing's resource tracker about the semaphores of the pool's queues that a crawl
# killed (SIGKILL) left behind, as a -W option (its message starts with "resource_tracker").
_TRACKER_WARNING = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker without its warning at exit: the tracker outlives a crawl
    killed with SIGKILL, unlinks the semaphores of the pool's queues that the crawl did not, and warns
    "There appear to be 5 leaked semaphore objects to clean up at shutdown" on the crawl's stderr, after
    the crawl is gone, about what it has just cleaned up. multiprocessing starts the tracker (and the text
    processes) with this interpreter's ``sys.warnoptions`` as ``-W`` options: the filter goes there, not
    into the environment, which other threads may be reading.

    The tracker ignores Ctrl-C and SIGTERM, sent to the crawl's whole process group, but not SIGHUP, which
    a closing terminal sends there too: it is started with SIGHUP blocked, which it inherits and keeps
    (it dying while the crawl stops cleanly, multiprocessing warned and printed a traceback for each
    semaphore the pool freed)."""
    if _TRACKER_WARNING not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_WARNING)
    with signals_blocked({signal.SIGHUP}):
        resource_tracker.ensure_running()


def text_processes(settings: BaseSettings) -> int:
    """``TEXT_PROCESSES``, checked against its range (:func:`crawler.bounds.setting_in_range`, as every crawl
    command checks it first): :class:`InputError` names the value, the range and the fix."""
    return int(setting_in_range(settings, "TEXT_PROCESSES", defaults, error=InputError))


class TextPool:
    """``TEXT_PROCESSES`` processes doing :func:`~crawler.worker.textjob.article_text` (see the module
    docstring)."""

    def __init__(self, crawler: Crawler, processes: int) -> None:
        self.crawler = crawler
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None
        # Articles not sent yet, and batches sent whose results have not come back.
        self._waiting: list[_Batched] = []
        self._under_way = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        pool = cls(crawler, text_processes(crawler.settings))
        crawler.signals.connect(pool.close, signal=signals.engine_stopped)
        return pool

    def _pool(self) -> ProcessPoolExecutor:
        """The pool, its processes started (a call each) with the stop signals blocked on this thread,
        which they inherit: a terminal's Ctrl-C, or a service manager's stop, signals the whole process
        group, and a process that died of it while importing would look like a crash (its articles' work
        done here, a new pool started) while the crawl stops. Each process drops such a signal as it
        leaves the group (:func:`~crawler.worker.textjob.quiet_child`); the crawl stops, then shuts the
        pool down.

        The crawl's handlers stay as they are: a signal sent to it meanwhile goes to another thread (run
        on the main thread by Python), or waits until the block ends. The threads the pool starts inherit
        the block."""
        if self._executor is None:
            # multiprocessing starts its resource tracker with the first process and unblocks Ctrl-C and
            # SIGTERM on this thread after it: it is started before.
            _start_resource_tracker()
            with signals_blocked(STOP_SIGNALS):
                self._executor = ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=quiet_child,
                )
                for _ in range(self.processes):
                    self._executor.submit(ready)
        return self._executor

    def start(self) -> None:
        """Start the processes now (each imports the extractors once), not under the crawl's first
        articles."""
        if self.processes > 0:
            self._pool()

    async def started(self, seconds: float) -> set[int]:
        """Wait, at most ``seconds``, until every process has answered once (its imports done), and give
        the ids of those that did: a worker's first requests then do not share the cores with them, and
        leave when the site's politeness delay lets them, not a fifth of a second later."""
        executor = self._executor
        answered: set[int] = set()
        if executor is None:
            return answered
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while len(answered) < self.processes:
            remaining = deadline - loop.time()
            if remaining <= 0:
                logger.info("Text processes not all started after %.0f s: crawling meanwhile", seconds)
                return answered
            try:
                calls = [asyncio.wrap_future(executor.submit(ready)) for _ in range(self.processes)]
            except BrokenProcessPool:  # a process died: the crawl's first articles start a new pool
                return answered
            done, pending = await asyncio.wait(calls, timeout=remaining)
            for call in pending:
                call.cancel()
            # Each answer read, failed or not: one unread failure is logged as an asyncio error.
            failed = [call for call in done if call.exception() is not None]
            if failed:  # as above
                return answered
            answered.update(call.result() for call in done)
            if len(answered) < self.processes:
                await asyncio.sleep(_STARTED_POLL_SECONDS)
        return answered

    async def article_text(
        self,
        html: str | None,
        url: str,
        title: str | None,
        body: str | None,
        algorithm: str,
        lengths: tuple[int, ...],
        document: bytes | None = None,
        topic: Topic | None = None,
        encoding: str = "utf-8",
        max_chars: int | None = None,
    ) -> TextResult:
        """:func:`~crawler.worker.textjob.article_text` in a pool process (on this thread when there is
        none, or the pool broke)."""
        args = (html, url, title, body, algorithm, lengths, document, topic, encoding, max_chars)
        if self.processes == 0:
            return article_text(*args)
        future: asyncio.Future[TextResult] = asyncio.get_running_loop().create_future()
        self._waiting.append((args, future))
        self._send()
        return await future

    def _send(self) -> None:
        """Send the waiting articles in batches while fewer than ``_BATCHES_PER_PROCESS`` per process are
        under way."""
        while self._waiting and self._under_way < self.processes * _BATCHES_PER_PROCESS:
            batch, self._waiting = self._waiting[:_BATCH_MAX], self._waiting[_BATCH_MAX:]
            executor = self._pool()
            try:
                sent = asyncio.wrap_future(executor.submit(article_texts, [args for args, _ in batch]))
            except BrokenProcessPool as exc:
                self._settle_here(batch, executor, exc)
                continue
            self._under_way += 1
            sent.add_done_callback(functools.partial(self._settle, executor, batch))

    def _settle(
        self, executor: ProcessPoolExecutor, batch: list[_Batched], sent: asyncio.Future[Any]
    ) -> None:
        """A batch came back: each article's result or error to its caller; then the next batch."""
        if executor is self._executor:
            self._under_way -= 1
        try:
            results = sent.result()
        except (BrokenProcessPool, asyncio.CancelledError) as exc:
            # A process died (the batch sent to a pool that broke, or cancelled when it was replaced).
            self._settle_here(batch, executor, exc)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that would not pickle
            logger.warning("A batch of %d articles failed in the text pool (%r): done here", len(batch), exc)
            self._settle_here(batch, executor, None)
        else:
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)
        self._send()

    def _settle_here(
        self, batch: list[_Batched], executor: ProcessPoolExecutor, broken: BaseException | None
    ) -> None:
        """The batch's work on this thread: its pool broke (a new one is started, once) or it failed as a
        whole."""
        if broken is not None and executor is self._executor:
            logger.warning(
                "A text process died (%r): %s done here, and a new pool started",
                broken,
                counted(len(batch), "article"),
            )
            self._restart()
        for args, future in batch:
            if future.done():
                continue
            try:
                future.set_result(article_text(*args))
            except Exception as exc:  # noqa: BLE001 - the article's own error, raised to its caller
                future.set_exception(exc)

    def _restart(self) -> None:
        broken, self._executor = self._executor, None
        if broken is not None:
            self._under_way = 0
            broken.shutdown(wait=False, cancel_futures=True)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("text/pool_restarted")

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


_pools: WeakKeyDictionary[Crawler, TextPool] = WeakKeyDictionary()


def text_pool_of(crawler: Crawler) -> TextPool:
    """The crawl's text pool, made on first use."""
    pool = _pools.get(crawler)
    if pool is None:
        pool = _pools[crawler] = TextPool.from_crawler(crawler)
    return pool
