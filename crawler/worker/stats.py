"""Per-site counters shared by every worker, in Redis, by the hour: what ``crawler status`` reads.

``RedisStatsCollector`` is Scrapy's in-memory stats collector (``STATS_CLASS``) that also adds every
per-site counter (a key ``<what>/<site>``, such as ``crawl/errors/citynews``, ``ban/citynews``,
``fields/missing/body/citynews``) to the hash ``crawler:stats:<site>:<YYYYMMDDHH>`` (UTC hour, by Redis's
clock as the status reads it: :mod:`crawler.redisio.clock`) under ``<what>``. Increments are summed in
memory and written every ``SUPERVISION_FLUSH_SECONDS`` in one Lua call (one round trip), and when the
crawl closes; each hourly hash expires after ``SUPERVISION_KEEP_HOURS``. What Redis could not write (away,
refusing writes, or a site's hash of another type: someone SET it, named once) is kept for the next
flush; what it wrote is never written again. A flush whose reply was lost (the connection dropped after
Redis ran it) is sent again with its number, and counted once (:mod:`crawler.redisio.once`).
A worker killed (SIGKILL) loses what it had not written yet, except the new articles: ``store/new`` is
written by the acknowledgement of each request (:class:`crawler.redisio.queue.Ack`), with its job's
``stored``, not here. It counts the articles the store found new; not those kept in the store's local
spool while MongoDB is unreachable (``store/spooled``, written here): whether one is new, an update or a
repost is known only once MongoDB takes it, and nothing counts that.

The moment of a site's last store failure (``store/unavailable``) and of its last article the store
answered (stored, updated, unchanged, a repost, spooled) is kept in the hour's hash too, in milliseconds
by Redis's clock (``store/failed_at_ms``, ``store/stored_at_ms``: the latest of every worker's), so that
the status tells a store that cannot write now from one that failed and has stored since; and of its last
write that found a week's SQLite file locked by another process (``store/locked``, ``store/locked_at_ms``),
so that it tells a lock from the other failures. A failure no wait mends (a damaged week's file),
dead-lettered at once, is counted ``store/lasting`` too, so that it tells those from failures tried again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

import redis
from scrapy.crawler import Crawler
from scrapy.spiders import Spider
from scrapy.statscollectors import MemoryStatsCollector
from twisted.internet import task

from crawler.keys import hour_of
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import script
from crawler.redisio.once import APPLIED_SECONDS, ONCE, Flushes
from crawler.worker.connection import WrongTypeKeys, keys_of, outage_of, server_of

__all__ = ["GROUPS", "RedisStatsCollector"]

logger = logging.getLogger(__name__)

# Stats key groups that end in a site id (the others, Scrapy's own, stay in the process).
GROUPS = (
    "crawl/",
    "extract/",
    "store/",
    "ban/",
    "ban_signal/",
    "backoff/",
    "errors/",
    "fields/",
    "rules/",
    "robots/",
    "dead/",
    "discover/",
)
# Counters the acknowledgement of a request writes to Redis (crawler.redisio.queue), not the flush.
ACKED = frozenset({"store/new"})
# Counters whose last moment is kept too, under the field given (docstring).
STAMPED = {
    "store/unavailable": "store/failed_at_ms",
    "store/locked": "store/locked_at_ms",
    **dict.fromkeys(
        (
            "store/new",
            "store/updated",
            "store/unchanged",
            "store/repost",
            "store/repost_again",
            "store/spooled",
        ),
        "store/stored_at_ms",
    ),
}
# KEYS: the flush's mark (crawler.redisio.once), the hourly hashes. ARGV: the flush's number and the mark's
# life (once), the hashes' life in seconds, how many counts; then per count its hash (its place in KEYS),
# field and amount, then per moment its hash, field and moment, set unless the hash holds a later one
# (another worker's, flushed first). Reply: nil when the flush was applied already (a try whose reply was
# lost); else the places (counts first, from 1) of those not written: their hash holds another type.
_FLUSH = (
    ONCE
    + """
if not first_time() then return nil end
local unwritten = {}
local counts = tonumber(ARGV[4])
local at = 5
for entry = 1, (#ARGV - 4) / 3 do
  local key, field, value = KEYS[tonumber(ARGV[at])], ARGV[at + 1], ARGV[at + 2]
  local reply
  if entry <= counts then
    reply = redis.pcall('HINCRBY', key, field, value)
  else
    reply = redis.pcall('HGET', key, field)
    if type(reply) ~= 'table' and tonumber(value) > (tonumber(reply) or 0) then
      redis.call('HSET', key, field, value)
    end
  end
  if type(reply) == 'table' then unwritten[#unwritten + 1] = entry end
  at = at + 3
end
for place = 2, #KEYS do redis.call('EXPIRE', KEYS[place], ARGV[3]) end
return unwritten
"""
)

Entry = tuple[tuple[str, str, str], int]
# The counts and moments of one flush (crawler.redisio.once numbers it).
_Flush = tuple[list[Entry], list[Entry]]


class RedisStatsCollector(MemoryStatsCollector):
    """Scrapy's stats, with the per-site counters also summed in Redis by the hour."""

    # Scrapy's StatsCollector looks every attribute up through a __getattribute__ of its own, which wraps
    # its methods to warn of a deprecated ``spider`` argument: 2 to 4 µs more a call, and the crawl counts
    # some 20 things a page. Nothing of ours passes one; the methods still accept it.
    __getattribute__ = object.__getattribute__

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.crawler = crawler
        self.keys = keys_of(crawler)
        self.flush_seconds = settings.getfloat("SUPERVISION_FLUSH_SECONDS")
        self.keep_seconds = int(settings.getfloat("SUPERVISION_KEEP_HOURS") * 3600)
        self._shared = bool(settings.get("REDIS_URL"))
        self._pending: Counter[tuple[str, str, str]] = Counter()
        self._stamps: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()
        self._loop: task.LoopingCall | None = None
        self._wrong = WrongTypeKeys("Site counters", "they are kept")
        self._flushes: Flushes[_Flush] = Flushes(self.keys, "stats")

    def inc_value(self, key: str, count: int = 1, start: int = 0, spider: Spider | None = None) -> None:
        super().inc_value(key, count, start)
        if key.startswith(GROUPS) and "/" in key:
            what, _, site = key.rpartition("/")
            now = shared_now()
            stamp = STAMPED.get(what)
            if stamp is not None:
                with self._lock:
                    self._stamp((site, hour_of(now), stamp), int(now * 1000))
            if what in ACKED:
                return
            with self._lock:
                self._pending[(site, hour_of(now), what)] += count

    def _stamp(self, field: tuple[str, str, str], moment: int) -> None:
        """Keep ``moment`` for ``field`` (site, hour, name) unless a later one is kept; under the lock."""
        if moment > self._stamps.get(field, 0):
            self._stamps[field] = moment

    def open_spider(self, spider: Spider | None = None) -> None:
        super().open_spider()
        if self._shared:
            self._loop = task.LoopingCall(self.flush)
            self._loop.start(self.flush_seconds, now=False)

    def close_spider(self, spider: Spider | None = None, reason: str | None = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.flush()
        if self._shared:
            self._flushes.end(server_of(self.crawler))
        super().close_spider(reason=reason)

    def flush(self) -> None:
        """Write the counts summed since the last flush, after the flush Redis failed if one did (sent again
        as it was: counted once). Redis away, or refusing the write: kept for the next flush; a count whose
        site's hourly hash holds another type, named once, is kept alone: the others written are never
        written twice."""
        with self._lock:
            pending, self._pending = self._pending, Counter()
            stamps, self._stamps = self._stamps, {}
        if not self._shared:
            return
        try:
            resent = self._flushes.again(self._write)
        except redis.RedisError as exc:
            self._failed(exc)
            self._keep(list(pending.items()), list(stamps.items()))
            return
        if resent is not None:
            counts, moments = resent
            pending.update(dict(counts))
            for field, moment in moments:
                stamps[field] = max(stamps.get(field, 0), moment)
        if not (pending or stamps):
            return
        try:
            unwritten = self._flushes.send((list(pending.items()), list(stamps.items())), self._write)
        except redis.RedisError as exc:
            self._failed(exc)
            return
        self._keep(*unwritten)
        self._wrong.say(
            {self.keys.stats(site, hour) for entries in unwritten for (site, hour, _), _ in entries}
        )

    def _failed(self, exc: redis.RedisError) -> None:
        outage_of(self.crawler).failed("write the site counters, kept for the next try", exc)

    def _write(self, number: int, flush: _Flush) -> _Flush:
        """Write the counts and moments of ``flush``, under its ``number``: those not written (their hash
        holds another type). Raises ``redis.RedisError`` when Redis fails it."""
        counts, moments = flush
        entries = [*counts, *moments]
        of_entry = [self.keys.stats(site, hour) for (site, hour, _), _ in entries]
        hashes = list(dict.fromkeys(of_entry))
        place = {key: index for index, key in enumerate(hashes, 2)}
        args: list[str | int] = [number, APPLIED_SECONDS, self.keep_seconds, len(counts)]
        for ((_, _, name), value), key in zip(entries, of_entry, strict=True):
            args += (place[key], name, value)
        reply = script(server_of(self.crawler), _FLUSH)(keys=[self._flushes.mark, *hashes], args=args)
        if reply is None:  # applied by a try whose reply was lost
            outage_of(self.crawler).ok(wrote=False)
            return [], []
        unwritten = {int(entry) for entry in reply}
        if len(unwritten) < len(entries):
            outage_of(self.crawler).ok(wrote=True)
        return (
            [entry for index, entry in enumerate(counts, 1) if index in unwritten],
            [entry for index, entry in enumerate(moments, len(counts) + 1) if index in unwritten],
        )

    def _keep(self, counts: list[Entry], moments: list[Entry]) -> None:
        """Keep ``counts`` and ``moments`` that were not written for the next flush."""
        with self._lock:
            self._pending.update(dict(counts))
            for field, moment in moments:
                self._stamp(field, moment)
