"""What the crawl keeps of each listing page of a site by its URL (an index page, a feed, a sitemap, an API
page), in a hash per site: the validators of its last answer (``crawler:validators:<site>``,
crawler/worker/conditional.py) and the latest change a sitemap listed (``crawler:sitemaps:<site>``,
crawler/worker/spider.py).

The URLs a site's listings are read at change: a sitemap index lists a sitemap a day (``sitemap-2026-11-29
.xml``), an API's next page or an index page's ``next_page`` carries a cursor or a date, a rule's
``start_urls`` are edited. Each hash would keep every URL ever read, one more a day or a grab, for as long
as the site is crawled. So each hash has a sorted set beside it (``crawler:validators-at:<site>``,
``crawler:sitemaps-at:<site>``: URL -> when it was read last, by Redis's clock), and each write drops (a
hundred at most) the URLs not read for ``KEEP_SECONDS``: a listing page still read keeps its value, one
read no more goes a month later. The fields a version before this one wrote, with no time (before the
upgrade, or by its workers still running beside the new ones), are given the time of the next write or
touch, so they go a month later unless read again.
"""

from __future__ import annotations

import redis

from crawler.redisio.clock import shared_now
from crawler.redisio.connection import script
from crawler.redisio.entries import DROP_OLD_LUA

__all__ = ["KEEP_SECONDS", "keep", "touch"]

# How long a listing page's value is kept after it was read last. A month: far past any rule's grab period
# (schedule.max, a weekly cron), so a page still read is never dropped; one dropped is read whole once.
KEEP_SECONDS = 30 * 24 * 3600.0
# Values past KEEP_SECONDS dropped by one write, at most (the rest go with the next writes).
_DROPPED_AT_ONCE = 100

# KEYS: the values' hash, their times (a sorted set: every member a field of the hash). ARGV[1]: now. The
# hash's fields that have no time (written by a version that kept none, or by such a worker still running
# beside this one) are given that time: the hash has more fields than times only then.
_TIMED = """
if redis.call('HLEN', KEYS[1]) > redis.call('ZCARD', KEYS[2]) then
  for _, url in ipairs(redis.call('HKEYS', KEYS[1])) do
    if not redis.call('ZSCORE', KEYS[2], url) then
      redis.call('ZADD', KEYS[2], ARGV[1], url)
    end
  end
end
"""
# KEYS and ARGV[1] as _TIMED's. ARGV: the time of the oldest values kept, how many older ones to drop at most,
# the URL, its value ('': the URL's value removed). Returns how many values it dropped.
_KEEP = (
    _TIMED
    + """
if ARGV[5] == '' then
  redis.call('HDEL', KEYS[1], ARGV[4])
  redis.call('ZREM', KEYS[2], ARGV[4])
else
  redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[4])
end
"""
    + DROP_OLD_LUA
)
# KEYS and ARGV[1] as _TIMED's. ARGV[2]: the URL read again (timed only when the hash holds it).
_TOUCH = (
    _TIMED
    + """
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
"""
)


def keep(server: redis.Redis, key: str, times: str, url: str, value: str, *, now: float | None = None) -> int:
    """Set ``url``'s ``value`` in the hash ``key`` (``''``: remove it), read at ``now`` (Redis's clock by
    default) by the sorted set ``times``; the values not read for ``KEEP_SECONDS`` are dropped. How many
    were dropped."""
    moment = shared_now() if now is None else now
    oldest = moment - KEEP_SECONDS
    dropped = script(server, _KEEP)([key, times], [repr(moment), repr(oldest), _DROPPED_AT_ONCE, url, value])
    return int(dropped)


def touch(server: redis.Redis, key: str, times: str, url: str, *, now: float | None = None) -> None:
    """``url``'s value in the hash ``key`` was read again and is still true (an index page answered 304): it
    is kept ``KEEP_SECONDS`` from ``now`` (Redis's clock by default)."""
    script(server, _TOUCH)([key, times], [repr(shared_now() if now is None else now), url])
