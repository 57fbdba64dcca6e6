"""``StorePipeline`` (900): the article stored, in batches, before its request is acknowledged.

Every outcome is a crawler stat (the status view reads them): ``store/new/<site>`` (with a document its
own job had stored too: a batch stored in part before it failed, written again, or a write whose
acknowledgement was lost; not a stored article read again, ``crawler temp --stored``, nor one
first seen before a job that fetches seen URLs again, ``--again``),
``store/updated/<site>`` (stored before the job), ``store/unchanged/<site>``,
``store/repost/<site>`` (a repost recorded), ``store/repost_again/<site>`` (a repost recorded before,
fetched again), ``store/spooled/<site>``, ``store/dropped_empty/<site>``, ``store/errors/<site>`` (an
invalid article, refused alone: as its document is made, or by MongoDB for its own sake,
:func:`crawler.store.base.refused_for_itself`, dead-lettered at once),
``store/unavailable/<site>`` (the store could not write: the request is deferred and tried again, or
dead-lettered at once for an error no wait mends, :func:`crawler.store.base.lasting_failure`, counted
``store/lasting/<site>`` too: a batch so
refused is written again one article at a time, so that an article refused alone fails alone; a week's
SQLite file locked by another process, :func:`crawler.store.base.locked_failure`, uses up no try and is
counted ``store/locked/<site>`` too, the file, its holder and when it was first found so noted in Redis for
the status, :mod:`crawler.redisio.storelocks`, until the worker's next write into that file that succeeds);
``store/week_made_anew`` (a week's file the store found emptied, 0 bytes, and made anew: what it held is
lost, said once as it was found, :meth:`crawler.store.base.Store.weeks_made_anew`);
and ``extract/qread_fallback/<site>`` for each article stored (not stored before its job, no repost) whose
body came from qRead (``extraction.body_from``), a discover page's aside: once per article, however many
times its page was fetched and extracted before the store could write it.

Backpressure: while the store cannot write (its oldest batch has waited ``STALL_SECONDS`` for its write, or
two batches' worth of articles, ``2 * STORE_BATCH_SIZE``, wait for it: a week's file locked by another
process, a disk or a server that does not answer; or its last write stored none of its articles: a lock
past the busy timeout, a full disk, a damaged week; not when MongoDB refused each for its own sake,
:func:`crawler.store.base.refused_for_itself`), the scheduler leases no
new page while the worker holds a lease (:meth:`StorePipeline.holds_back`): a worker that crawled on
would only fetch pages whose articles are deferred and fetched again. A store that spools
(:attr:`Store.spools <crawler.store.base.Store.spools>`: MongoDB, whose writes that cannot reach the
server go to the local spool, and whose spool is tried again every ``STORE_SPOOL_RETRY_SECONDS``, each try
waiting ``MONGO_TIMEOUT_MS``) is never taken for one that cannot write for a slow write: its articles are
stored or spooled, none deferred, so the crawl goes on at full speed; only a write that stored none of its
articles (refused by MongoDB, or its spool's disk full) pauses it. Its write under way for
``SLOW_WRITE_SECONDS`` (a server answering hello but not commands) is said once, and once as its writes
answer again. It is said once as it begins and
once as the store writes again (:data:`store_writes_again`, which wakes the scheduler), and counted
``worker/store_paused`` (the worker's heartbeat carries it to the status).

Links that redirected to an article URL seen already, skipped unfetched (:mod:`crawler.redisio.redirects`),
are added to the article's ``redirected_from`` on the store's thread: at once when its document is there
(:meth:`StorePipeline.redirected`), else when its batch is written (one read of the notes a batch).
Likewise a feed's, sitemap's or API's entry whose URL was seen already (:mod:`crawler.redisio.entries`)
gives the article's document (or that of the article its URL redirected to, ``Store.redirected_to``) the
title, date or author it lacks, never replacing a stored one
(:meth:`StorePipeline.met`, counted ``feed/filled/<field>/<site>``; notes never taken, dropped after
``NOTE_SECONDS``, ``feed/notes_expired``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Self
from weakref import WeakKeyDictionary

import redis
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from crawler.commandline import counted
from crawler.errors import InputError, StoreError, StoreUnavailableError
from crawler.items import Article
from crawler.keys import NO_BODY, SKIP_PREFIX, Keys
from crawler.redisio import entries, redirects, storelocks
from crawler.redisio.workers import pid_space
from crawler.store import Store, StoreConfig, Written, store_config
from crawler.store.base import lasting_failure, locked_failure, refused_for_itself
from crawler.store.document import add_fingerprints, make_document, parse_timestamp
from crawler.store.sqlite import LockedWeekError
from crawler.worker.connection import RedisOutage, keys_of, outage_of, server_of
from crawler.worker.download import STOP_DOWNLOADS

__all__ = ["RepostRecorded", "StorePipeline", "store_pipeline_of", "store_writes_again"]

logger = logging.getLogger(__name__)

# Seconds the oldest batch handed to the store may wait for its write before the store is taken for one
# that cannot write now. A batch is written in milliseconds (SQLite stores ~16k articles/s; another
# worker's write holds a week's file locked as briefly), so 2 s is past a normal write on a loaded machine
# and far short of the busy timeout a lock is waited for (STORE_BUSY_TIMEOUT_SECONDS, 30 s), through which
# the worker leased and fetched some 300 pages that were all deferred (bench/chaos.py).
STALL_SECONDS = 2.0
# Seconds a write of a store that spools (MongoDB) may take before it is said, once, as slow: such a store
# never pauses the crawl for a slow write (its articles are stored or spooled), so a server that answers
# but does not write (pymongo waits its socket timeout, 30 s, and tries once more) went unsaid for 60 s.
# A batch is written in well under a second; 10 s is past any normal write, and short of that wait.
SLOW_WRITE_SECONDS = 10.0
# A pause that begins within this many seconds of the last one's end (a week's file another process locks
# again and again, a store whose writes fail and pass in turn) is counted but logged at DEBUG: one pair of
# lines a minute at most.
PAUSE_SAID_SECONDS = 60.0

# Sent when the store writes again after a pause of the worker's leasing (StorePipeline.holds_back).
store_writes_again = object()


class RepostRecorded(DropItem):
    """The item is a repost of a stored article: recorded against the original, not stored again (its job
    counts it as a repost when ``new``: not recorded by an earlier fetch)."""

    def __init__(self, message: str, *, new: bool) -> None:
        super().__init__(message, log_level="INFO")
        self.new = new


class StorePipeline:
    """Stores each item in the store the settings name (``store_config(settings)``, checked when the
    pipeline is made; opened when the spider opens, closed when it closes); an item with no body (even
    after the qRead fallback) is dropped. The item's page is let go first: it is never stored.

    Group commit: items wait (at most ``STORE_FLUSH_SECONDS``) until ``STORE_BATCH_SIZE`` of them can
    be written together; the batch is written on a thread of its own (the store's only thread, so the
    crawl never waits on a disk or a network write), and each item moves on, and its request is
    acknowledged, only once its batch is stored. An item is checked once, as its document is made (on
    the crawl's thread, cheap), and refused alone before it joins a batch; its fingerprints (the costly
    part) come from the text pool (:mod:`crawler.worker.textwork`), else are computed on the store's
    thread. A repost (the same article as a stored one, under another
    URL) is recorded against the original and dropped at INFO level: it is no stored article.
    """

    def __init__(self, crawler: Crawler, config: StoreConfig, batch_size: int, flush_seconds: float) -> None:
        self.crawler = crawler
        self.config = config
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self.store: Store | None = None
        self._executor: ThreadPoolExecutor | None = None
        # Each waiting document, its future, whether its fingerprints are still to be computed, and whether
        # its week is to be found (Article.find_week).
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[Written], bool, bool]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Future[None]] = set()
        # Where skipped redirects are noted (the shared Redis): none in a crawl without it, which skips
        # no redirect either (the pipeline run alone).
        # A Redis failure there is one of the worker's outage, said once (outage_of).
        self.noted = (
            (server_of(crawler), keys_of(crawler), outage_of(crawler))
            if crawler.settings.get("REDIS_URL")
            else None
        )
        # The fields of crawler:store-locks this worker noted (redisio/storelocks.py), each with its file's
        # week, forgotten at its next write into that file that succeeds; used on the store's thread alone.
        self._locks: dict[str, str] = {}
        self._stop = _StopWaits()
        crawler.signals.connect(self._stopping, signal=STOP_DOWNLOADS)
        # When (monotonic) each batch handed to the store's thread and not settled yet was handed, and how
        # many articles they hold together.
        self._writing: list[float] = []
        self._handed = 0
        # Why the last write stored none of its articles (the store failed), until one stores again.
        self._failure: str | None = None
        # When (monotonic) the writes of a store that spools were said slow, until none under way is.
        self._slow_since: float | None = None
        # When the worker's leasing paused (holds_back), and when the last pause ended.
        self._paused_at: float | None = None
        self._resumed_at = -PAUSE_SAID_SECONDS
        # The weeks' files the store found emptied and made anew, counted so far (store/week_made_anew).
        self._made_anew = 0
        _pipelines[crawler] = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        batch_size = crawler.settings.getint("STORE_BATCH_SIZE")
        flush_seconds = crawler.settings.getfloat("STORE_FLUSH_SECONDS")
        if batch_size < 1 or flush_seconds < 0:
            raise InputError(
                f"settings STORE_BATCH_SIZE {batch_size!r} and STORE_FLUSH_SECONDS {flush_seconds!r}:"
                " expected a batch of 1 or more articles and 0 or more seconds"
            )
        # Checked here, as the crawl is set up: a wrong value is an error before anything is crawled.
        return cls(crawler, store_config(crawler.settings), batch_size, flush_seconds)

    async def open_spider(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        self.store = await self._run(self.config.open)
        logger.info("storing articles in %r", self.store)

    def met(self, site: str, met: dict[str, dict[str, str]]) -> None:
        """Entries of ``site``'s listing met article URLs seen already (URL -> title, published, author):
        noted in Redis for the documents not stored yet, and given at once to those stored, on the
        store's thread."""
        if self.store is None or self._executor is None or self.noted is None:
            return
        task = asyncio.ensure_future(self._met(site, self.store, self.noted, met))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _met(
        self,
        site: str,
        store: Store,
        noted: tuple[redis.Redis, Keys, RedisOutage | None],
        met: dict[str, dict[str, str]],
    ) -> None:
        filled, expired = await self._run(_note_entries, store, *noted, met)
        self._count_filled(site, filled.values())
        if expired:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("feed/notes_expired", expired)
            logger.info(
                "Dropped %s of entries whose articles were not stored within %.0f days of the note",
                counted(expired, "note"),
                entries.NOTE_SECONDS / 86400,
            )

    def _count_filled(self, site: str, filled: Iterable[tuple[str, ...]]) -> None:
        for names in filled:
            for name in names:
                self._count(f"feed/filled/{name}/{site}")

    def _stopping(self) -> None:
        self._stop.asked.set()

    def redirected(self, url: str) -> None:
        """Links that redirected to the article URL ``url`` were noted (:mod:`crawler.redisio.redirects`):
        added to its document on the store's thread, if it is stored; else its batch adds them."""
        if self.store is not None and self._executor is not None and self.noted is not None:
            self._executor.submit(_record_redirects, self.store, *self.noted, [url])

    async def close_spider(self) -> None:
        if self._executor is None:
            return
        await self._flush()
        if self.store is not None:
            await self._run(self.store.close)
            self.store = None
        self._executor.shutdown(wait=True)
        self._executor = None

    async def process_item(self, item: Article) -> Article:
        if self.store is None:
            raise StoreError("StorePipeline got an item before the spider opened: the store is not open")
        item.page = None
        site = item.site
        if not item.body:
            self._count(f"store/dropped_empty/{site}")
            item.count_job("skipped")
            item.count_job(SKIP_PREFIX + NO_BODY)
            # INFO: counted (the crawl's summary, `skipped 1 (no body: 1)`, and status), not a warning that
            # Scrapy's own log line would print amid a temp crawl's output.
            raise DropItem(
                f"no body in {item.url} of site {site!r}, neither from the rule nor from qRead",
                log_level="INFO",
            )
        try:
            document = make_document(item.document(), fingerprints=False)
        except StoreError:
            self._count(f"store/errors/{site}")
            raise
        if item.fingerprints is not None:
            document["content_hash"], document["simhash"] = item.fingerprints
        written = asyncio.get_running_loop().create_future()
        self._waiting.append((document, written, item.fingerprints is None, item.find_week))
        if len(self._waiting) >= self.batch_size:
            await self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds, self._flush_soon)
        try:
            result = await written
        except StoreUnavailableError as exc:
            # Refused for its own sake, the article is an invalid one: not a store that cannot write (the
            # status's "the store cannot write", store/failed_at_ms).
            self._count(f"store/errors/{site}" if refused_for_itself(exc) else f"store/unavailable/{site}")
            if exc.locked:
                self._count(f"store/locked/{site}")
            if exc.lasting:
                self._count(f"store/lasting/{site}")
            raise
        if result.outcome == "repost" and result.recorded_before:
            self._count(f"store/repost_again/{site}")
            raise RepostRecorded(
                f"{result.url} is a repost of {result.original}: recorded there before, not stored",
                new=False,
            )
        item.spooled = result.outcome == "spooled"
        # A document its own job stored (a batch stored in part before it failed, written again; a write
        # whose acknowledgement was lost) is new for the job, as the job's counts have it; but for a stored
        # article read again (`crawler temp --stored`: its request carries the document's first_seen),
        # which was stored before its job however many times the job writes it.
        new_to_job = result.same_job and item.first_seen is None
        item.stored_before = result.outcome in ("updated", "unchanged") and not new_to_job
        item.job_wrote_before = result.outcome in ("updated", "unchanged") and new_to_job
        outcome = "new" if new_to_job else result.outcome
        self._count(f"store/{outcome}/{site}")
        self._count_filled(site, [result.filled])
        if (
            result.outcome != "repost"
            and not item.stored_before
            and item.discover is None
            and item.extraction is not None
            and item.extraction["body_from"] == "qread"
        ):
            self._count(f"extract/qread_fallback/{site}")
        if result.outcome == "repost":
            raise RepostRecorded(
                f"{result.url} is a repost of {result.original}: recorded there, not stored again", new=True
            )
        return item

    def cannot_write(self) -> str | None:
        """Why the store cannot write now (see the module's docstring), else None."""
        if self._failure is not None:
            return self._failure
        if not self._writing or (self.store is not None and self.store.spools):
            return None
        waiting = self._handed + len(self._waiting)
        waited = time.monotonic() - self._writing[0]
        if waited < STALL_SECONDS and waiting < 2 * self.batch_size:
            return None
        return (
            f"{counted(waiting, 'article')} wait for its write, the oldest batch for {waited:.1f} s (a week's"
            " file locked by another process, a disk or a server that does not answer)"
        )

    def holds_back(self) -> bool:
        """Whether the scheduler, which holds leases, may lease no more now: the store cannot write. The
        first such answer pauses the worker's leasing, said and counted once; the next write that stores
        an article ends the pause. A worker that holds no lease is never held back, so that its next pages
        try the store (the bound: one pop, ``SCHEDULER_POP_BATCH`` leases, at a time)."""
        cause = self.cannot_write()
        if cause is None:
            return False
        if self._paused_at is None:
            self._paused_at = time.monotonic()
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("worker/store_paused")
            logger.log(
                self._pause_level,
                "%r cannot write: %s; this worker leases no new page until it writes again, finishing"
                " the pages it holds (their articles are deferred if it still cannot)",
                self.store,
                cause,
            )
        return True

    @property
    def _pause_level(self) -> int:
        """The level of the lines of the pause under way, as it begins and ends: INFO (a slow write is no
        error, and a failed one is said as its articles are deferred), DEBUG for a pause that began within
        ``PAUSE_SAID_SECONDS`` of the last one's end."""
        assert self._paused_at is not None
        return logging.DEBUG if self._paused_at - self._resumed_at < PAUSE_SAID_SECONDS else logging.INFO

    def _wrote(self, stored: bool, failure: str | None) -> None:
        """A batch's write settled: ``stored`` some article, or stored none, failing for ``failure`` (the
        store's; None when its articles were refused for their own sake). Ends the pause once the store
        writes again."""
        if stored:
            self._failure = None
        elif failure is not None:
            self._failure = failure
        if self._paused_at is None or self.cannot_write() is not None:
            return
        now = time.monotonic()
        logger.log(
            self._pause_level,
            "%r writes again: this worker leases new pages again, after %.0f s paused",
            self.store,
            now - self._paused_at,
        )
        self._paused_at, self._resumed_at = None, now
        self.crawler.signals.send_catch_log(store_writes_again)

    def _flush_soon(self) -> None:
        self._timer = None
        flush = asyncio.ensure_future(self._flush())
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        """Write the waiting items as one batch; each item's future gets its result or the batch's error."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._waiting = self._waiting, []
        store = self.store
        if not batch or store is None or self._executor is None:
            return
        loop = asyncio.get_running_loop()
        handed = time.monotonic()
        self._writing.append(handed)
        self._handed += len(batch)
        slow = loop.call_later(SLOW_WRITE_SECONDS, self._said_slow, store) if store.spools else None
        writing = loop.run_in_executor(
            self._executor,
            _on_store_thread,
            _write,
            store,
            [(document, needed, find) for document, _, needed, find in batch],
            self.noted,
            self._locks,
            self._stop,
        )

        def unavailable(error: BaseException) -> StoreUnavailableError:
            # The documents were checked before: whatever failed is the store's, not theirs.
            failed = StoreUnavailableError(
                f"{store!r} could not write: {type(error).__name__}: {error}",
                lasting=lasting_failure(error),
                locked=locked_failure(error),
            )
            failed.__cause__ = error
            return failed

        def settle(done: asyncio.Future[list[Written | StoreError]]) -> None:
            self._writing.remove(handed)
            self._handed -= len(batch)
            if slow is not None:
                slow.cancel()
                self._slow_ended(store)
            error = None if done.cancelled() else done.exception()
            for index, (_, written, _needed, _find) in enumerate(batch):
                if done.cancelled():
                    written.set_exception(StoreUnavailableError(f"the write to {store!r} was cancelled"))
                elif error is not None:
                    written.set_exception(unavailable(error))
                else:
                    result = done.result()[index]
                    if isinstance(result, StoreError):
                        written.set_exception(unavailable(result))
                    else:
                        written.set_result(result)
            if not done.cancelled():
                self._wrote(*_how_written(done, len(batch)))
            made_anew = store.weeks_made_anew()
            if made_anew > self._made_anew:
                assert self.crawler.stats is not None
                self.crawler.stats.inc_value("store/week_made_anew", made_anew - self._made_anew)
                self._made_anew = made_anew

        writing.add_done_callback(settle)
        await asyncio.wait([writing])

    def _said_slow(self, store: Store) -> None:
        """A write of ``store`` (one that spools) is still under way ``SLOW_WRITE_SECONDS`` after it was
        handed to the store's thread: said once, until :meth:`_slow_ended`."""
        if self._slow_since is not None or not self._writing:
            return
        self._slow_since = self._writing[0]
        logger.warning(
            "%r has not answered a write for %.0f s (%s wait for it): a server that takes commands but does"
            " not answer them, or a disk that does not; the crawl goes on, its articles stored or spooled"
            " as each write ends",
            store,
            time.monotonic() - self._slow_since,
            counted(self._handed + len(self._waiting), "article"),
        )

    def _slow_ended(self, store: Store) -> None:
        """A write settled: once no write under way has taken ``SLOW_WRITE_SECONDS``, the slow writes
        said (:meth:`_said_slow`) are said to have ended."""
        now = time.monotonic()
        if self._slow_since is None or (self._writing and now - self._writing[0] >= SLOW_WRITE_SECONDS):
            return
        logger.info("%r answers its writes again, after %.0f s", store, now - self._slow_since)
        self._slow_since = None

    async def _run(self, function: Any, *args: Any) -> Any:
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, _on_store_thread, function, *args
        )

    def _count(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)


class _StopWaits:
    """Whether the crawl stops (a stop signal: :data:`~crawler.worker.download.STOP_DOWNLOADS`), and the
    error of the first write that found a week's file locked since, set on the store's thread: the writes
    after it fail at once with it (:func:`_write_found`), their requests deferred as any locked write's,
    rather than each wait the busy timeout (30 s) in turn, which held a stop for as long as another
    process kept the file locked (296 s in a fault hunt; a stop is given 60 s)."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.locked: LockedWeekError | None = None


def _on_store_thread(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, run on the store's thread; a StopIteration it lets out (a ``next()`` on an
    exhausted iterator: a bug of the store's) is raised as a RuntimeError. asyncio refuses a StopIteration
    into the future that waits for the call: that future stayed pending for ever, its batch's articles
    never learned their outcome (their leases renewed for ever), and the articles counted as waiting for
    the store never went down, so the worker's leasing paused for good."""
    try:
        return function(*args)
    except StopIteration as exc:
        name = getattr(function, "__qualname__", repr(function))
        raise RuntimeError(f"{name} raised {exc!r} (a bug: report it with this worker's log)") from exc


def _how_written(done: asyncio.Future[list[Written | StoreError]], size: int) -> tuple[bool, str | None]:
    """Whether the write ``done`` of a batch of ``size`` articles stored one, and why the store failed
    when it stored none; no failure of the store's when each of its articles was refused for its own sake
    (:func:`~crawler.store.base.refused_for_itself`: too large for MongoDB, refused by its validator), as
    the store writes others meanwhile."""
    error = done.exception()
    if error is not None:
        return False, None if size == 1 and refused_for_itself(error) else f"{type(error).__name__}: {error}"
    results = done.result()
    if any(isinstance(result, Written) for result in results):
        return True, None
    failed = next(
        (result for result in results if isinstance(result, StoreError) and not refused_for_itself(result)),
        None,
    )
    return False, None if failed is None else f"{type(failed).__name__}: {failed}"


def _write(
    store: Store,
    documents: list[tuple[dict[str, Any], bool, bool]],
    noted: tuple[redis.Redis, Keys, RedisOutage | None] | None,
    locks: dict[str, str],
    stop: _StopWaits | None = None,
) -> list[Written | StoreError]:
    """On the store's thread: the fingerprints the text pool did not compute, the week of the documents
    whose week is to be found (:func:`_in_stored_week`), then one batch write, then the links noted as
    redirecting to the URLs it stored. A batch refused for an error no wait mends
    (:func:`~crawler.store.base.lasting_failure`: one document too large for MongoDB, say) is written again
    one document at a time, so that only the documents refused fail (with their error, in their place).
    A document whose week cannot be found (the store unreachable: MongoDB away) fails alone, in its place:
    written without it, it would be a second copy in this week; the others are written (or spooled). The
    first look-up that fails fails the batch's other such documents too, unlooked: each would wait as long
    (``MONGO_TIMEOUT_MS`` for a MongoDB away) to fail the same way. Such a document first seen before its
    job is not the job's own (``same_job`` False), however many times the job writes it. A write that
    found a week's file locked by another process notes the lock in Redis for the status
    (:func:`_note_lock`); the next write into that file that succeeds forgets it."""
    ready = [add_fingerprints(document) if needed else document for document, needed, _ in documents]
    unfound: dict[int, StoreError] = {}
    before: set[int] = set()
    failed: StoreError | None = None
    for index, (document, (_, _, find)) in enumerate(zip(ready, documents, strict=True)):
        if find and failed is not None:
            unfound[index] = failed
        elif find:
            try:
                if _in_stored_week(store, document, noted):
                    before.add(index)
            except StoreError as exc:
                unfound[index] = failed = exc
    found = [document for index, document in enumerate(ready) if index not in unfound]
    rest = iter(_write_found(store, found, noted, locks, stop))
    written = [unfound[index] if index in unfound else next(rest) for index in range(len(ready))]
    # Stored before its job, which then wrote it (its acknowledgement lost): no document of the job's own.
    return [
        replace(result, same_job=False) if index in before and isinstance(result, Written) else result
        for index, result in enumerate(written)
    ]


def _write_found(
    store: Store,
    ready: list[dict[str, Any]],
    noted: tuple[redis.Redis, Keys, RedisOutage | None] | None,
    locks: dict[str, str],
    stop: _StopWaits | None = None,
) -> list[Written | StoreError]:
    """:func:`_write`'s batch write of ``ready`` (none: nothing written) and the redirects noted; not
    tried once the crawl stops and a write found a week's file locked (``stop``, :class:`_StopWaits`; a
    write with none, outside a crawl, waits as the store does)."""
    if not ready:
        return []
    if stop is not None and stop.locked is not None:
        raise LockedWeekError(
            f"cannot write {counted(len(ready), 'article')} (first {ready[0]['url']}) to"
            f" {stop.locked.path}: not tried, as the crawl stops and a write found the file locked by"
            " another process",
            stop.locked.path,
            stop.locked.holder,
            stop.locked.week,
        ) from stop.locked.__cause__
    written: list[Written | StoreError]
    try:
        written = list(store.write(ready))
    except StoreError as exc:
        if isinstance(exc, LockedWeekError):
            if noted is not None:
                _note_lock(exc, *noted, locks)
            if stop is not None and stop.asked.is_set():
                stop.locked = exc
        if len(ready) == 1 or not lasting_failure(exc):
            raise
        written = [_write_alone(store, document) for document in ready]
    if noted is not None and locks:
        _let_locks_go(*noted, locks, {result.week for result in written if isinstance(result, Written)})
    if noted is not None:
        stored = [
            result.url
            for result in written
            if isinstance(result, Written) and result.outcome in ("new", "updated", "unchanged")
        ]
        _record_redirects(store, *noted, stored)
        done = set(stored)
        kept = [document for document in ready if document["url"] in done]
        filled = _take_entries(store, *noted, kept) if kept else {}
        written = [
            replace(result, filled=filled[result.url])
            if isinstance(result, Written) and result.url in filled
            else result
            for result in written
        ]
    return written


def _in_stored_week(
    store: Store, document: dict[str, Any], noted: tuple[redis.Redis, Keys, RedisOutage | None] | None
) -> bool:
    """Give ``document`` the ``first_seen`` and ``week`` of the document stored with its URL, if any, in
    whichever week (a page of ``crawler temp SITE --again``): written there, it updates that document, not
    a second one in this week's store. Whether that document was first seen before its job was created
    (the job's hash, ``created``), though the job wrote it since; False when Redis cannot say."""
    stored = store.get(document["url"])
    if stored is None or stored["url"] != document["url"]:
        return False
    document["first_seen"], document["week"] = stored["first_seen"], stored["week"]
    job = document["job"]
    if stored.get("job") != job or job is None or noted is None:
        return False
    server, keys, outage = noted
    try:
        created = server.hget(keys.job(job), "created")
    except redis.RedisError as exc:
        if outage is not None:
            outage.failed(f"read when job {job} was created: {stored['url']} counted new", exc)
            return False
        logger.warning(
            "Redis failed (read when job %s was created): %s; %s counted new", job, exc, stored["url"]
        )
        return False
    first_seen = parse_timestamp(stored["first_seen"], "first_seen").timestamp()
    return created is not None and first_seen < float(created)


def _write_alone(store: Store, document: dict[str, Any]) -> Written | StoreError:
    """One document written by itself: what became of it, or why the store refused it."""
    try:
        return store.write([document])[0]
    except StoreError as exc:
        return exc


def _note_lock(
    error: LockedWeekError,
    server: redis.Redis,
    keys: Keys,
    outage: RedisOutage | None,
    locks: dict[str, str],
) -> None:
    """On the store's thread: note in Redis that a write found the week's file of ``error`` locked by
    another process (:mod:`crawler.redisio.storelocks`), its field kept in ``locks`` (with the file's week);
    Redis failing is a
    call of the worker's ``outage``: the status then names no holder."""
    try:
        locks[storelocks.noted(server, keys, pid_space(), str(error.path), error.holder)] = error.week
    except redis.RedisError as exc:
        if outage is not None:
            outage.failed(f"note that the write lock of {error.path} is held by another process", exc)


def _let_locks_go(
    server: redis.Redis, keys: Keys, outage: RedisOutage | None, locks: dict[str, str], weeks: set[str | None]
) -> None:
    """On the store's thread, after a write that succeeded into the files of ``weeks``: forget the ``locks``
    this worker noted of those files, let go since; those of other weeks' files are kept, their ``since``
    with them (a write into another file says nothing of theirs)."""
    free = [name for name, week in locks.items() if week in weeks]
    if not free:
        return
    try:
        storelocks.let_go(server, keys, free)
    except redis.RedisError as exc:
        if outage is not None:
            outage.failed("forget the store's write locks noted, let go since", exc)
        return
    for name in free:
        del locks[name]


def _record_redirects(
    store: Store, server: redis.Redis, keys: Keys, outage: RedisOutage | None, urls: Sequence[str]
) -> None:
    """On the store's thread: the links noted as redirecting to ``urls`` added to their documents, and
    their notes removed. The store or Redis failing leaves the notes for the next link noted for the same
    article (logged; Redis failing as a call of the worker's ``outage``, when given: once per outage, not
    at each article); it never fails the articles written."""
    notes: dict[str, str] | None = None
    try:
        recorded: list[tuple[str, str]] = []
        notes = redirects.noted(server, keys, urls)
        for url, note in notes.items():
            found, taken = redirects.gathered(server, keys, note)
            if store.add_redirects(url, found):
                recorded += [(url, note), *taken]
        if recorded:
            redirects.forget(server, keys, recorded)
    except (redis.RedisError, StoreError) as exc:
        if outage is not None and isinstance(exc, redis.RedisError):
            outage.failed(
                f"read the links noted as redirecting to {counted(len(urls), 'article URL')} just stored"
                f" (first {urls[0]}): they stay noted in Redis ({keys.redirected}) and are added when"
                " another link to the same article is skipped",
                exc,
            )
            return
        if notes is None:
            logger.warning(
                "Cannot read whether links were noted as redirecting to %s just stored (first %s): %s; notes"
                " of such links stay in Redis (%s) and are added when another link to the same article is"
                " skipped",
                counted(len(urls), "article URL"),
                urls[0],
                exc,
                keys.redirected,
            )
            return
        logger.warning(
            "Links noted as redirecting to %s (first %s) are not in their redirected_from"
            " yet: %s; they stay noted in Redis (%s) and are added when another link to the same article is"
            " skipped",
            counted(len(notes), "article URL"),
            next(iter(notes)),
            exc,
            keys.redirected,
        )
        return
    for url, note in recorded:
        logger.debug("Recorded as redirecting to %s (or to a link among them): %s", url, note)


def _note_entries(
    store: Store,
    server: redis.Redis,
    keys: Keys,
    outage: RedisOutage | None,
    met: dict[str, dict[str, str]],
) -> tuple[dict[str, tuple[str, ...]], int]:
    """On the store's thread: the entries ``met`` noted, then given to the documents stored with their
    URLs, or to the articles they redirected to (whose notes go); the fields filled, by the URL of the
    document filled, and how many old notes the note dropped. Noted first: a document another worker
    stores meanwhile takes the note as its batch is written. Redis or the store failing is logged
    (Redis's as a call of ``outage``), never raised."""
    filled: dict[str, tuple[str, ...]] = {}
    expired = 0
    try:
        expired = entries.note(server, keys, met)
        _give_notes(store, server, keys, {url: url for url in met}, filled)
    except (redis.RedisError, StoreError) as exc:
        _entries_failed(keys, outage, f"note the entries met of {counted(len(met), 'article URL')}", met, exc)
    return filled, expired


def _take_entries(
    store: Store,
    server: redis.Redis,
    keys: Keys,
    outage: RedisOutage | None,
    documents: Sequence[dict[str, Any]],
) -> dict[str, tuple[str, ...]]:
    """On the store's thread, after a batch is written: the entries noted for the URLs of ``documents``
    just stored, or for the URLs they were redirected from (read in one call), given to those lacking a
    title, date or author, and removed; the fields filled, by document URL. A document stored with all
    three takes nothing from its notes, removed all the same (else they stay ``NOTE_SECONDS``): a write
    only when it has some. Redis or the store failing leaves the notes (logged) and fails no article."""
    asked = {
        url: None if all(document[name] for name in entries.FIELDS) else document["url"]
        for document in documents
        for url in (*document["redirected_from"], document["url"])
    }
    filled: dict[str, tuple[str, ...]] = {}
    try:
        _give_notes(store, server, keys, asked, filled)
    except (redis.RedisError, StoreError) as exc:
        _entries_failed(
            keys, outage, f"give {counted(len(documents), 'article')} just stored their entries", asked, exc
        )
    return filled


def _give_notes(
    store: Store,
    server: redis.Redis,
    keys: Keys,
    asked: Mapping[str, str | None],
    filled: dict[str, tuple[str, ...]],
) -> None:
    """Give the notes of the URLs ``asked`` (noted URL -> the URL of the document to fill: itself, or the
    article it redirected to; None: a document stored whole, which takes nothing) to their stored
    documents and remove those notes; ``filled`` takes the fields filled, by document URL, as they are
    (what was filled before Redis or the store raises stays there). A URL asked for itself that no
    document has is looked up among the URLs that redirected to the stored articles
    (``Store.redirected_to``: a feed's link to an article stored under the URL it led to)."""
    taken: list[tuple[str, str]] = []
    for url, (text, values) in entries.noted(server, keys, list(asked)).items():
        target = asked[url]
        if target is None:
            taken.append((url, text))
            continue
        done = store.fill_empty(target, values)
        if done is None and target == url and (found := store.redirected_to(url)) is not None:
            target = found["url"]
            done = store.fill_empty(target, values)
        if done is not None:
            filled[target] = (*filled.get(target, ()), *done)
            taken.append((url, text))
    entries.forget(server, keys, taken)


def _entries_failed(
    keys: Keys, outage: RedisOutage | None, what: str, urls: Iterable[str], exc: redis.RedisError | StoreError
) -> None:
    """Say that the store's thread could not ``what`` for ``urls``: Redis failing as a call of ``outage``
    (once per outage), else a warning; the notes stay in Redis."""
    first = next(iter(urls), "")
    if outage is not None and isinstance(exc, redis.RedisError):
        outage.failed(
            f"{what} (first {first}): their notes in Redis ({keys.met_entries}) wait for the next", exc
        )
        return
    logger.warning(
        "Cannot %s (first %s): %s; their notes in Redis (%s) wait for the next listing that meets them or"
        " the next fetch that stores them",
        what,
        first,
        exc,
        keys.met_entries,
    )


_pipelines: WeakKeyDictionary[Crawler, StorePipeline] = WeakKeyDictionary()


def store_pipeline_of(crawler: Crawler) -> StorePipeline | None:
    """The crawl's store pipeline, once made (None in a crawl without one)."""
    return _pipelines.get(crawler)
