"""The Scrapy scheduler on the shared leased queue (``SCHEDULER``): scrapy-redis's, with what it lacks fixed.

Compared with ``scrapy_redis.scheduler.Scheduler``, which it subclasses:

- requests are leased, not deleted (:class:`crawler.redisio.queue.LeasedQueue`); the worker renews its
  leases every ``LEASE_RENEW_SECONDS`` and puts back everyone's expired leases, and on close it returns
  the leases it still holds, so neither a crash nor a clean exit loses a request;
- the queue always persists (``SCHEDULER_PERSIST`` is ignored: one worker's exit must never wipe the
  queue all workers share);
- requests are JSON (:func:`crawler.requests.encode_request`), never pickle;
- duplicate checks use Scrapy's request fingerprinter, through :mod:`crawler.worker.dupefilter`;
- stats and logs go through Scrapy's current APIs (no ``spider=`` argument, no ``Spider.log``).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Self

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.utils.misc import load_object
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task

from crawler.redisio import serializer
from crawler.redisio.queue import LeasedQueue
from crawler.requests import Work, decode_request, leased, push
from crawler.worker.connection import keys_of, server_of

logger = logging.getLogger(__name__)


def worker_id() -> str:
    """A name for this worker process, unique across machines."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeasedScheduler(Scheduler):  # type: ignore[misc]  # scrapy-redis ships no type hints
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        super().__init__(
            server=server_of(crawler),
            persist=True,
            dupefilter=load_object(settings["DUPEFILTER_CLASS"]).from_crawler(crawler),
            serializer=serializer,
        )
        self.crawler = crawler
        self.stats = crawler.stats
        self.keys = keys_of(crawler)
        self.lease_seconds = settings.getfloat("LEASE_SECONDS")
        self.renew_seconds = settings.getfloat("LEASE_RENEW_SECONDS")
        self.poll_seconds = settings.getfloat("SCHEDULER_IDLE_POLL_SECONDS", 0.5)
        self.worker = worker_id()
        self.held: set[str] = set()
        self._renewal: task.LoopingCall | None = None
        self._poll: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.queue = LeasedQueue(self.server, self.keys, lease_seconds=self.lease_seconds)
        waiting = len(self.queue)
        if waiting:
            logger.info("Resuming: %d requests queued, %d leased", waiting, self.queue.leased())
        self._renewal = task.LoopingCall(self.tend_leases)
        self._renewal.start(self.renew_seconds, now=True)
        if self.poll_seconds > 0:
            self._poll = task.LoopingCall(self.wake_engine)
            self._poll.start(self.poll_seconds, now=False)

    def close(self, reason: str) -> None:
        for loop in (self._renewal, self._poll):
            if loop is not None and loop.running:
                loop.stop()
        released = self.queue.release(self.held)
        if released:
            logger.info("Returned %d unfinished requests to the queue", released)
            self.stats.inc_value("lease/released", released)
        self.held.clear()

    def wake_engine(self) -> None:
        """Have the engine ask this scheduler for a request now. An idle engine asks only on its 5 s
        heartbeat (a private constant of Scrapy's engine); requests queued by other processes (a grab, a
        temp crawl) would wait that long. The engine's slot is private too: without it, nothing is done."""
        slot = getattr(self.crawler.engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def tend_leases(self) -> None:
        """Renew what this worker holds; put back what any worker let expire."""
        self.queue.renew(self.held)
        expired = self.queue.requeue_expired()
        if expired:
            logger.warning("%d expired leases went back to the queue", expired)
            self.stats.inc_value("lease/expired", expired)

    def enqueue_request(self, request: Request) -> bool:
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        if push(self.queue, request, self.spider):
            self.stats.inc_value("scheduler/enqueued/redis")
            return True
        self.stats.inc_value("scheduler/already_queued")
        return False

    def next_request(self) -> Request | None:
        lease = self.queue.pop()
        if lease is None:
            return None
        request = decode_request(lease, self.spider)
        leased(request, lease)
        only = getattr(self.spider, "only_sites", None)
        if only and Work.of(request).site not in only:
            # A site this worker does not serve (`crawler worker --sites`): back to the queue at once for
            # a worker that does, never dropped.
            self.queue.release([lease])
            self.stats.inc_value("scheduler/returned_other_site")
            return None
        self.held.add(lease)
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def ack(self, request: Request, *, fetched: int = 0, stored: int = 0) -> None:
        """``request``'s work is done (items stored, links queued): its lease ends, and its job counts the
        page ``fetched`` and the items ``stored``."""
        work = Work.of(request)
        lease = work.lease
        if lease is None or lease not in self.held:
            return
        self.held.discard(lease)
        if not self.queue.ack(lease, site=work.site, job=work.job, fetched=fetched, stored=stored):
            self.stats.inc_value("lease/ack_after_expiry")

    def has_pending_requests(self) -> bool:
        return len(self.queue) > 0

    def __len__(self) -> int:
        return len(self.queue)

    def __repr__(self) -> str:
        return f"<LeasedScheduler worker={self.worker}>"


def scheduler_of(crawler: Crawler) -> LeasedScheduler | None:
    """The crawler's scheduler, when it is ours."""
    scheduler = crawler.engine.scheduler if crawler.engine is not None else None
    return scheduler if isinstance(scheduler, LeasedScheduler) else None
