"""The one Redis client of a worker: every plug-in of a crawl shares it (and its connection pool)."""

from __future__ import annotations

import logging
import time
from weakref import WeakKeyDictionary

import redis
from scrapy.crawler import Crawler

from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.connection import connect

__all__ = ["RedisOutage", "keys_of", "outage_of", "server_of"]

logger = logging.getLogger(__name__)

# Seconds between two reminders that Redis is still down.
REMINDER_SECONDS = 60.0

_servers: WeakKeyDictionary[Crawler, redis.Redis] = WeakKeyDictionary()
_outages: WeakKeyDictionary[Crawler, RedisOutage] = WeakKeyDictionary()


def server_of(crawler: Crawler) -> redis.Redis:
    """The crawl's Redis client (``REDIS_URL``), made on first use."""
    server = _servers.get(crawler)
    if server is None:
        url = crawler.settings.get("REDIS_URL")
        if not url:
            raise InputError(
                "setting REDIS_URL is not set: the crawl needs the shared Redis (run it with a `crawler`"
                " command, which starts the embedded one, or set REDIS_URL)"
            )
        server = _servers[crawler] = connect(str(url))
    return server


def keys_of(crawler: Crawler) -> Keys:
    """The Redis keys of the crawl's deployment (``REDIS_KEY_PREFIX``)."""
    return Keys(str(crawler.settings["REDIS_KEY_PREFIX"]))


class RedisOutage:
    """Redis away, as the whole worker sees it: every failed call is counted (``redis/errors``); the
    outage is logged once when it starts, reminded every ``REMINDER_SECONDS`` while it lasts, and logged
    once when a call succeeds again, with its length from the last call that succeeded before it."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.since: float | None = None
        self._reminded = 0.0
        # When a call last succeeded: an outage is counted from then, not from its first error (a frozen
        # Redis raises only after the socket timeout).
        self._last_ok = time.monotonic()

    def failed(self, what: str, exc: redis.RedisError) -> None:
        """A call to Redis (doing ``what``) failed with ``exc``."""
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("redis/errors")
        now = time.monotonic()
        if self.since is None:
            self.since, self._reminded = self._last_ok, now
            logger.error("Redis failed (%s: %s): the worker goes on and tries again", what, exc)
        elif now - self._reminded >= REMINDER_SECONDS:
            self._reminded = now
            logger.warning(
                "Redis still down after %.0f s: %s (%s); the worker goes on and tries again",
                now - self.since,
                exc,
                what,
            )

    def ok(self) -> None:
        """A call to Redis succeeded."""
        self._last_ok = time.monotonic()
        if self.since is not None:
            logger.warning("Redis is back after %.1f s", self._last_ok - self.since)
            self.since = None


def outage_of(crawler: Crawler) -> RedisOutage:
    """The crawl's account of Redis being away, shared by every plug-in that calls Redis."""
    outage = _outages.get(crawler)
    if outage is None:
        outage = _outages[crawler] = RedisOutage(crawler)
    return outage
