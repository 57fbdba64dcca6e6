"""Workers alive: each worker writes a heartbeat into Redis, which ``crawler status`` reads.

``crawler:workers`` (hash) maps a worker id (``host:pid:start``, :func:`crawler.redisio.workers.worker_id`;
``host:pid`` from a worker of a version before it) to JSON: ``host``, ``pid``, ``started`` and ``seen``
(epoch seconds of its start and of its last beat, by Redis's clock, ``TIME``: the machines' clocks may
differ), ``every`` (seconds between its beats), ``responses`` (every response so far: pages, robots.txt,
feeds, redirects, error answers), ``rate`` (responses per minute over the last
``SUPERVISION_RATE_SECONDS``), ``sites`` (the sites it serves, empty for all), ``redis_errors`` (Redis calls
that failed and were tried again), ``store_paused`` (how many times it leased no new page while its store
could not write: :mod:`crawler.worker.pipelines.store`), and ``store`` (where it stores articles:
:meth:`crawler.store.StoreConfig.where`, a SQLite folder with its host's name, or a MongoDB), ``forget`` (its
``SUPERVISION_FORGET_WORKER_SECONDS``) and ``pid_space`` (where its pid
names it: :func:`crawler.redisio.workers.pid_space`). A worker is alive while ``seen`` is at most three of
its beats old and, seen from its own pid space, while its process runs
(:func:`crawler.redisio.workers.beat_alive`); a clean stop removes its entry, and the entry of a worker
that died (``kill -9``, its machine gone) is removed by the first beat of a live worker once it is older
than its own ``forget`` and three of its beats: a worker's entry is never removed while it is alive,
whatever the setting. A beat reads only the entries whose beat is due by then
(:class:`crawler.redisio.workers.Heartbeats`), not the whole hash. :func:`announced` writes a process's
first beat before its worker starts, and removes it when the process is done. Each beat checks too that
Redis still holds the crawler's data (:class:`crawler.redisio.since.DataMarker`), recorded in the data
folder ``CRAWLER_DATA_DIR`` when the settings name one: the crawler's commands do, and so does ``scrapy
crawl sites`` (:func:`crawler.config.apply_environment` gives it the environment's, else ``data``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import redis
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from twisted.internet import task

from crawler.redisio.clock import redis_clock, shared_now
from crawler.redisio.since import DataMarker
from crawler.redisio.workers import Heartbeats, pid_space, worker_id
from crawler.store import StoreConfig, store_config
from crawler.worker.connection import keys_of, outage_of, server_of

__all__ = ["WorkerHeartbeat", "announced"]

logger = logging.getLogger(__name__)


class WorkerHeartbeat:
    """The worker's beat, every ``SUPERVISION_HEARTBEAT_SECONDS``."""

    def __init__(
        self,
        crawler: Crawler,
        server: redis.Redis,
        seconds: float,
        rate_seconds: float,
        forget_seconds: float,
        store: StoreConfig,
    ) -> None:
        self.crawler = crawler
        self.store = store.where()
        self.server = server
        self.seconds = seconds
        self.rate_seconds = rate_seconds
        self.forget_seconds = forget_seconds
        self.key = keys_of(crawler).workers
        self.heartbeats = Heartbeats(server, self.key)
        self.worker = worker_id()
        folder = crawler.settings.get("CRAWLER_DATA_DIR")
        self.marker = DataMarker(server, keys_of(crawler), self.worker, Path(folder) if folder else None)
        self.started = shared_now()
        self.responses = 0
        self._history: deque[tuple[float, int]] = deque()
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        seconds = crawler.settings.getfloat("SUPERVISION_HEARTBEAT_SECONDS")
        if seconds <= 0 or not crawler.settings.get("REDIS_URL"):
            raise NotConfigured("no heartbeat: SUPERVISION_HEARTBEAT_SECONDS is 0 or REDIS_URL is unset")
        rate_seconds = crawler.settings.getfloat("SUPERVISION_RATE_SECONDS")
        forget_seconds = crawler.settings.getfloat("SUPERVISION_FORGET_WORKER_SECONDS")
        store = store_config(crawler.settings)
        return cls(crawler, server_of(crawler), seconds, rate_seconds, forget_seconds, store)

    def received(self) -> None:
        self.responses += 1

    def opened(self) -> None:
        self._loop = task.LoopingCall(self.beat)
        self._loop.start(self.seconds, now=True)

    def closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        try:
            self.heartbeats.remove(self.worker)
        except redis.RedisError as exc:
            logger.warning("cannot remove this worker's heartbeat: %s", exc)

    def beat(self) -> None:
        try:
            now = redis_clock(self.server)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("write this worker's heartbeat", exc)
            return
        self._history.append((now, self.responses))
        while len(self._history) > 1 and now - self._history[0][0] > self.rate_seconds:
            self._history.popleft()
        first_time, first_responses = self._history[0]
        elapsed = now - first_time
        rate = (self.responses - first_responses) * 60 / elapsed if elapsed > 0 else 0.0
        stats = self.crawler.stats
        beat = _beat(
            started=self.started,
            now=now,
            every=self.seconds,
            forget=self.forget_seconds,
            store=self.store,
            responses=self.responses,
            rate=rate,
            sites=sorted(getattr(self.crawler.spider, "only_sites", None) or ()),
            redis_errors=int(stats.get_value("redis/errors", 0)) if stats else 0,
            store_paused=int(stats.get_value("worker/store_paused", 0)) if stats else 0,
        )
        try:
            self.heartbeats.write(self.worker, beat, now, self.forget_seconds)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("write this worker's heartbeat", exc)
            return
        try:
            self.marker.check(now)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("check that Redis still holds the crawler's data", exc)
            return
        outage_of(self.crawler).ok(wrote=True)


@contextlib.contextmanager
def announced(server: redis.Redis, key: str, settings: BaseSettings) -> Iterator[str]:
    """This process's first beat in the workers' hash ``key``, written before its worker starts, for the
    block; yields this worker's id. A process that queues work for its own worker (``crawler demo``) is
    alive on the Redis from then on, so that another takes none of that work for a dead worker's in the
    seconds before the worker's own first beat, which replaces this one. The entry goes when the block
    ends, however it ends: a process stopped or failed before its worker's clean stop leaves no worker
    that died (listed for an hour) and none alive for three beats where its pid cannot be checked."""
    now = redis_clock(server)
    beat = _beat(
        started=now,
        now=now,
        every=settings.getfloat("SUPERVISION_HEARTBEAT_SECONDS"),
        forget=settings.getfloat("SUPERVISION_FORGET_WORKER_SECONDS"),
        store=store_config(settings).where(),
        responses=0,
        rate=0.0,
        sites=[],
        redis_errors=0,
        store_paused=0,
    )
    worker = worker_id()
    heartbeats = Heartbeats(server, key)
    heartbeats.write(worker, beat, now, settings.getfloat("SUPERVISION_FORGET_WORKER_SECONDS"))
    try:
        yield worker
    finally:
        try:
            heartbeats.remove(worker)
        except redis.RedisError as exc:
            logger.warning("cannot remove this worker's heartbeat: %s", exc)


def _beat(
    *,
    started: float,
    now: float,
    every: float,
    forget: float,
    store: str,
    responses: int,
    rate: float,
    sites: list[str],
    redis_errors: int,
    store_paused: int,
) -> dict[str, object]:
    """A beat as the module docstring says."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "pid_space": pid_space(),
        "started": round(started, 3),
        "seen": round(now, 3),
        "every": every,
        "responses": responses,
        "rate": round(rate, 1),
        "sites": sites,
        "redis_errors": redis_errors,
        "store_paused": store_paused,
        "store": store,
        "forget": forget,
    }
