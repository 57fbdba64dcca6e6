"""``LeaseAckMiddleware`` (a spider middleware): a request's lease ends when its work is done, the way
its work ended.

- every item it gave stored (or dropped: a repost, a page without an article) and every link it gave
  queued: acknowledged (Scrapy takes a callback's output whole before it queues the requests in it, so
  the lease waits for each, :data:`~crawler.worker.scheduler.request_queued`);
- an item the store could not write (disk full, a locked file, store away): deferred, fetched and stored
  again later (``STORE_RETRY_SECONDS``, at most ``STORE_MAX_ATTEMPTS`` times), never acknowledged; for
  an error no wait mends (a damaged file, no permission, a read-only disk:
  :func:`crawler.store.base.lasting_failure`), dead-lettered at once, saying so; for a week's SQLite file
  whose write lock another process holds (:func:`crawler.store.base.locked_failure`: a worker stopped in
  a write), deferred as often as it takes, no try used up;
- an item refused (an invalid article, a pipeline's error) or a spider error on the page: dead-lettered
  with the reason, its page counted fetched all the same (once: a requeue takes it back);
- Redis failing under the callback, or under the queuing of a request it gave (its links, its next
  page, could not be queued): forgotten, so its lease expires and the page is fetched again.

A page of a discover crawl teaches the link model and keeps its links once its item is done (stored,
dropped or refused: :meth:`~crawler.worker.discovery.Discovery.settle`), never when its store is
deferred: fetched again, it is counted once. Redis failing then defers it; any other error dead-letters
it with the error (kind ``spider``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, Self

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.python import global_object_name
from twisted.python.failure import Failure

from crawler.commandline import suggest
from crawler.errors import BodyTooLongError, StoreUnavailableError
from crawler.items import Article
from crawler.requests import Work, count_job
from crawler.worker.connection import outage_of
from crawler.worker.discovery import discovery_of
from crawler.worker.pipelines.store import RepostRecorded
from crawler.worker.scheduler import request_queued, scheduler_of

__all__ = ["LeaseAckMiddleware", "ack", "dead_letter", "put_back"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Work:
    """What became of one request's output so far."""

    open_items: int = 0
    stored: int = 0
    spooled: int = 0  # of those stored, kept in the store's local spool (MongoDB unreachable)
    updated: int = 0  # items whose URL was stored before its job: written again, not stored anew
    # The URL of each article stored or updated, and whether its own job had written it before.
    written: list[tuple[str, bool]] = field(default_factory=list)
    reposts: int = 0
    output_done: bool = False
    retry: str | None = None  # why its article could not be stored now
    retry_counted: bool = False  # its retry uses up a try: all but a wait for a lock another process holds
    error: str | None = None  # why it failed for good
    error_kind: str = "other"
    fetched: bool = False  # its page counts as fetched though it failed (an article refused, a spider error)
    redis_failed: bool = False
    handed_on: bool = False  # the spider tries it again (a refused page): its lease goes with the retry


class LeaseAckMiddleware:
    """Ends a request's lease once its work is done (see the module's docstring). Until then the lease is
    renewed, and if the worker dies it expires and the request goes back to the queue.

    The spider's output is passed through unchanged; items are counted per request, and the
    ``item_scraped``/``item_dropped``/``item_error`` signals (which carry the response) count them down.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.work: dict[int, _Work] = {}  # id(request) -> its work
        self.givers: dict[int, Request] = {}  # id(a request a callback gave, not queued yet) -> its page's
        crawler.signals.connect(self._item_stored, signal=signals.item_scraped)
        crawler.signals.connect(self._item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self._item_failed, signal=signals.item_error)
        crawler.signals.connect(self._request_queued, signal=request_queued)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        request = response.request
        assert request is not None
        work = self.work.setdefault(id(request), _Work())
        async for element in result:
            self._count(work, request, element)
            yield element
        work.output_done = True
        self._maybe_done(request)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        request = response.request
        assert request is not None
        work = self.work.setdefault(id(request), _Work())
        for element in result:
            self._count(work, request, element)
            yield element
        work.output_done = True
        self._maybe_done(request)

    def _count(self, work: _Work, request: Request, element: Any) -> None:
        """An item or a request to queue to wait for, or a retry of the request itself (which takes its
        lease on)."""
        lease = element.meta.get("lease") if isinstance(element, Request) else None
        if not isinstance(element, Request):
            work.open_items += 1
        elif lease is None:
            work.open_items += 1
            self.givers[id(element)] = request
        elif lease == request.meta.get("lease"):
            work.handed_on = True

    def _request_queued(self, request: Request, lost: bool) -> None:
        """A request a callback gave was queued (or seen already); ``lost``: Redis failed under it, so the
        page that gave it is fetched again."""
        giver = self.givers.pop(id(request), None)
        work = self._work_of_request(giver)
        if giver is None or work is None:
            return
        work.redis_failed = work.redis_failed or lost
        work.open_items -= 1
        self._maybe_done(giver)

    def process_spider_exception(self, response: Response, exception: Exception) -> Iterable[Any] | None:
        """A callback failed: Redis failing under it is one call of the worker's outage (said once, not as
        Scrapy's "Spider error processing" and its traceback at each page), the page fetched again; any
        other error dead-letters it, and goes on to Scrapy, which logs it."""
        request = response.request
        assert request is not None and self.crawler.stats is not None
        self.crawler.stats.inc_value(f"spider/exception/{global_object_name(type(exception))}")
        work = self.work.setdefault(id(request), _Work())
        handled: list[Any] | None = None
        if isinstance(exception, redis.RedisError):
            work.redis_failed, handled = True, []
            outage_of(self.crawler).failed(
                f"queue what {request.url} gave: its lease expires and it is fetched again", exception
            )
        else:
            work.error, work.error_kind = (
                f"the spider failed on the page: {type(exception).__name__}: {exception}",
                "spider",
            )
            work.fetched = True
        work.output_done = True
        self._maybe_done(request)
        return handled

    def _item_stored(self, item: Any, response: Response | None = None, **_: Any) -> None:
        work = self._work_of(response)
        if work is not None:
            try:
                self._settle(work, item, response)
                _count_for_job(item, response)
                if isinstance(item, Article):
                    work.written.append((item.url, item.job_wrote_before))
                if isinstance(item, Article) and item.stored_before:
                    work.updated += 1
                else:
                    work.stored += 1
                    if isinstance(item, Article) and item.spooled:
                        work.spooled += 1
            finally:
                self._item_done(response)

    def _item_dropped(
        self, item: Any, response: Response | None = None, exception: Exception | None = None, **_: Any
    ) -> None:
        try:
            work = self._work_of(response)
            if work is not None:
                self._settle(work, item, response)
                _count_for_job(item, response)
                if isinstance(exception, RepostRecorded) and exception.new:
                    work.reposts += 1
        finally:
            self._item_done(response)

    def _item_failed(
        self, item: Any, response: Response | None = None, failure: Failure | None = None, **_: Any
    ) -> None:
        try:
            work = self._work_of(response)
            if work is not None and failure is not None:
                error = failure.value
                if isinstance(error, StoreUnavailableError) and error.lasting:
                    site = Work.of(response.request).site if response and response.request else None
                    requeue = suggest("dead requeue" + (f" --site {site}" if site else ""))
                    work.error = (
                        f"its article could not be stored: {error}; waiting does not mend that, so it was"
                        f" not tried again: mend it, then `{requeue}`"
                    )
                    work.error_kind = "store"
                    work.fetched = True
                elif isinstance(error, BodyTooLongError):
                    work.error, work.error_kind, work.fetched = str(error), "body too long", True
                elif isinstance(error, StoreUnavailableError):
                    work.retry = f"its article could not be stored: {error}"
                    work.retry_counted = work.retry_counted or not error.locked
                else:
                    work.error = f"its article was refused: {type(error).__name__}: {error}"
                    work.error_kind = "article refused"
                    work.fetched = True
                    self._settle(work, item, response)
        finally:
            self._item_done(response)

    def _settle(self, work: _Work, item: Any, response: Response | None) -> None:
        """``item`` is done: a discover crawl's page teaches and keeps its links now; Redis failing defers
        its request, any other error dead-letters it with the error (a signal handler's exception would be
        logged and lost by Scrapy, and the request left leased for ever)."""
        if not isinstance(item, Article) or item.discover is None:
            return
        request = response.request if response is not None else None
        lease = Work.of(request).lease if request is not None else None
        try:
            discovery_of(self.crawler).settle(item, lease)
        except redis.RedisError as exc:
            work.retry, work.retry_counted = f"Redis failed while its links were kept ({exc})", True
        except Exception as exc:  # any bug under it ends the request's lease, as a spider error does
            logger.exception("%s: its links could not be kept", item.url)
            work.error = f"its links could not be kept: {type(exc).__name__}: {exc}"
            work.error_kind = "spider"
            work.fetched = True

    def _work_of(self, response: Response | None) -> _Work | None:
        return self._work_of_request(response.request if response is not None else None)

    def _work_of_request(self, request: Request | None) -> _Work | None:
        return self.work.get(id(request)) if request is not None else None

    def _item_done(self, response: Response | None) -> None:
        work = self._work_of(response)
        if work is not None and response is not None and response.request is not None:
            work.open_items -= 1
            self._maybe_done(response.request)

    def _maybe_done(self, request: Request) -> None:
        work = self.work.get(id(request))
        if work is None or not work.output_done or work.open_items > 0:
            return
        del self.work[id(request)]
        scheduler = scheduler_of(self.crawler)
        if scheduler is None:
            return
        if work.handed_on:
            return
        if work.redis_failed:
            scheduler.forget(request)
        elif work.retry is not None:
            scheduler.defer(request, work.retry, uses_try=work.retry_counted)
        elif work.error is not None:
            scheduler.dead_letter(request, work.error, kind=work.error_kind, fetched=work.fetched)
        else:
            scheduler.ack(
                request,
                fetched=1,
                stored=work.stored,
                reposts=work.reposts,
                spooled=work.spooled,
                updated=work.updated,
                written=tuple(work.written),
            )


def _count_for_job(item: Any, response: Response | None) -> None:
    """What the item pipelines counted of ``item`` for its job, handed to its page's request, whose
    acknowledgement writes it (:func:`crawler.requests.count_job`)."""
    if isinstance(item, Article) and response is not None and response.request is not None:
        for name, amount in item.job_counts.items():
            count_job(response.request, name, amount)


def ack(crawler: Crawler, request: Request, *, fetched: int = 0, stored: int = 0) -> None:
    """End ``request``'s lease (no-op when the scheduler is not the leased one)."""
    scheduler = scheduler_of(crawler)
    if scheduler is not None:
        scheduler.ack(request, fetched=fetched, stored=stored)


def dead_letter(
    crawler: Crawler,
    request: Request,
    reason: str,
    kind: str = "other",
    *,
    fetched: bool = False,
    quiet: bool = False,
) -> None:
    """End ``request``'s lease as failed for good, with ``reason`` and the ``kind`` of error, its page
    counted fetched when ``fetched``, its line logged at DEBUG when ``quiet`` (its caller says it; no-op
    when the scheduler is not the leased one)."""
    scheduler = scheduler_of(crawler)
    if scheduler is not None:
        scheduler.dead_letter(request, reason, kind=kind, fetched=fetched, quiet=quiet)


def put_back(
    crawler: Crawler, request: Request, reason: str, *, seconds: float, max_attempts: int, kind: str
) -> str | None:
    """Queue ``request`` again in ``seconds``, or dead-letter it with ``reason`` as ``kind`` once
    ``max_attempts`` tries are used up, either logged at DEBUG: its caller says why. The reason of its dead
    letter when it was dead-lettered, else None (so when the scheduler is not the leased one)."""
    scheduler = scheduler_of(crawler)
    if scheduler is None:
        return None
    return scheduler.defer(request, reason, seconds=seconds, max_attempts=max_attempts, kind=kind, quiet=True)
