"""The per-article text work in a pool of processes, off the crawl's thread: the body from qRead when the
rule's falls short, the summaries and the fingerprints.

Each of these is pure Python over one article's text (qRead parses the page; a 100 KB page costs
milliseconds), so on the crawl's thread they would hold the GIL away from the reactor and use one core
only. :class:`TextPool` sends them to ``TEXT_PROCESSES`` processes (spawned, so they share nothing with the
reactor's threads), one call per article: :func:`article_text` gets what it needs (the page's HTML only
when qRead must read it) and returns plain values. ``TEXT_PROCESSES = 0`` does the same work on the
crawl's thread.

A process that dies (killed, out of memory) breaks the pool: the article's work is done on the crawl's
thread instead and a new pool is started, so an article is never lost to it; counted as
``text/pool_restarted``.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Self
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.crawler import Crawler

from crawler.errors import InputError
from crawler.store import fingerprint
from crawler.store.document import content_hash
from crawler.worker.pipelines.clean import clean_body
from extractors import extract
from extractors.summary import summaries

__all__ = ["TextPool", "TextResult", "article_text", "text_pool_of"]

logger = logging.getLogger(__name__)

# Seconds between a pool process's looks at whether its parent still runs.
_PARENT_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class TextResult:
    """What :func:`article_text` found: the body from qRead (None when the rule's stays), its algorithm,
    the summaries by length (None without a body or without lengths), the body's content hash and
    SimHash (hex)."""

    qread_body: str | None
    algorithm: str | None
    summary: dict[str, str] | None
    content_hash: str | None
    simhash: str | None


def article_text(
    html: str | None,
    url: str,
    title: str | None,
    body: str | None,
    algorithm: str,
    lengths: tuple[int, ...],
) -> TextResult:
    """The text work of one article (in a pool process): with ``html`` (the rule's body fell short), the
    body qRead finds there, kept when longer than ``body``; then, on the body kept, its summaries of
    ``lengths`` sentences and its fingerprints."""
    qread_body = found_by = None
    if html:
        result = extract(html, url=url, title=title, algo=algorithm)
        text = clean_body(result.text)
        if text and len(text) > len(body or ""):
            qread_body, found_by = text, result.algorithm
    kept = qread_body or body
    if not kept:
        return TextResult(qread_body, found_by, None, None, None)
    summary = summaries(kept, list(lengths), title=title) if lengths else None
    shingled = fingerprint.simhash(kept)
    return TextResult(
        qread_body,
        found_by,
        summary,
        content_hash(kept),
        None if shingled is None else fingerprint.to_hex(shingled),
    )


def _ready() -> None:
    """Nothing: a first call that makes a pool process start."""


def _quiet_child() -> None:
    """A pool process leaves Ctrl-C to its parent (which stops the crawl and then the pool), and ends when
    its parent is gone (a worker killed with SIGKILL never shuts its pool down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class TextPool:
    """``TEXT_PROCESSES`` processes doing :func:`article_text` (see the module docstring)."""

    def __init__(self, crawler: Crawler, processes: int) -> None:
        self.crawler = crawler
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        processes = crawler.settings.getint("TEXT_PROCESSES")
        if processes < 0:
            raise InputError(
                f"setting TEXT_PROCESSES is {processes!r}: expected a number of processes, or 0 to do the"
                " text work on the crawl's thread"
            )
        pool = cls(crawler, processes)
        crawler.signals.connect(pool.close, signal=signals.engine_stopped)
        return pool

    def _pool(self) -> ProcessPoolExecutor:
        """The pool, its processes started (a call each) while Ctrl-C is ignored, which they inherit: the
        terminal sends it to the whole process group, and a process still importing would die of it."""
        if self._executor is None:
            try:
                previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            except ValueError:  # not the main thread: the processes ignore it once started
                previous = None
            try:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_quiet_child,
                )
                for _ in range(self.processes):
                    self._executor.submit(_ready)
            finally:
                if previous is not None:
                    signal.signal(signal.SIGINT, previous)
        return self._executor

    def start(self) -> None:
        """Start the processes now (each imports the extractors once), not under the crawl's first
        articles."""
        if self.processes > 0:
            self._pool()

    async def article_text(
        self,
        html: str | None,
        url: str,
        title: str | None,
        body: str | None,
        algorithm: str,
        lengths: tuple[int, ...],
    ) -> TextResult:
        """:func:`article_text` in a pool process (on this thread when there is none, or the pool broke)."""
        if self.processes == 0:
            return article_text(html, url, title, body, algorithm, lengths)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._pool(), article_text, html, url, title, body, algorithm, lengths
            )
        except BrokenProcessPool as exc:
            logger.warning("A text process died (%s): %s done here, and a new pool started", exc, url)
            self._restart()
            return article_text(html, url, title, body, algorithm, lengths)

    def _restart(self) -> None:
        broken, self._executor = self._executor, None
        if broken is not None:
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
