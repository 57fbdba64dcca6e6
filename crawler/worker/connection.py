"""The one Redis client of a worker: every plug-in of a crawl shares it (and its connection pool)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

import redis
from scrapy.crawler import Crawler

from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.connection import connect

__all__ = ["keys_of", "server_of"]

_servers: WeakKeyDictionary[Crawler, redis.Redis] = WeakKeyDictionary()


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
