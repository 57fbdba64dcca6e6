"""A discover rule's frontier: the links found and not fetched yet, kept per host in Redis, and the bandit
that picks the hosts the next requests go to.

Keys (``<prefix>:discover:<site>:...``): ``frontier:<host>`` (a sorted set of entries by score),
``best`` (hash: host -> its best entry's score), ``good`` and ``bad`` (hashes: host -> relevant and
irrelevant pages fetched there; ``bad`` counts the pages that failed there for good too), ``touched``
(sorted set: host -> when a link was last kept to it, released from it, or a page of it settled, by
Redis's clock).

1. **Keeping** (:meth:`Frontier.keep`): a page's new links are tested against the Bloom filter and kept
   in their hosts' sets in one Lua call, so a link is marked seen only together with its keeping, and
   counted in the page's record (``settled:<lease digest>``, a hash with a time-to-live) in that call. A
   host keeps its ``per_host`` best entries. The page is then settled (:meth:`Frontier.settle`): its
   host's reward and its job's ``links_seen`` (its links less those its record kept), in one Lua call
   that marks the record settled, once: a page fetched again after Redis failed between the two counts
   its links kept the first time as kept, not seen, and rewards its host once.
2. **Choosing hosts** (:meth:`Frontier.choose`): with the ``learned`` strategy, each request is its own
   draw, a Thompson sample of each host's rate of relevant pages (Beta(1 + good, 1 + bad)) times its
   best entry's value, won by the highest: a host that gave relevant pages gets more of the budget, as
   many requests as it wins up to its entries, an unknown one is tried, one that gave none fades however
   few the hosts (Anthelion's "Thompson sampling · best score"); a draw won by a host whose requests are
   pending and whose entries are all out (or a seed's host, its seed pending) waits for its links. The
   other strategies take the hosts of the best entries, each once.
3. **Releasing** (:meth:`Frontier.release`): each chosen host's best entries (one per time it was chosen)
   become requests in the shared queue (with the ``learned`` strategy, its few best entries are valued
   again by the model of now first: a link's value was the model's when it was found), in one Lua call
   that takes each entry out of the frontier, counts it against the job's budget (``issued`` in the job's
   hash) and queues the request, so an entry is queued once whichever workers release at the same time,
   and never past the budget. The
   request goes to the host's own queue slot (``<site>@<host>``), which has the rule's delay and
   concurrency: politeness holds per host, across every worker.
4. **Forgetting** (:meth:`Frontier.prune`): a host untouched for ``keep_seconds`` loses its entries: its
   frontier (whose time-to-live, renewed at each keeping, release and page read, and as a prune passes
   over a host with requests pending, ends it even with no prune), best
   score, rewards, and its slot's politeness and pending count, but the crawl-delay its robots.txt asked
   for (kept per host: ``Keys.crawl_delays``, ``keep_asked`` seconds: the release that makes the slot
   again meanwhile writes it in its politeness); a host with requests pending is not forgotten. Its links
   stay seen in the Bloom filter. A forgotten host's slot made again by the pop (a request its frontier
   did not release: a dead letter requeued) touches the host again (the pop's restore): it is forgotten
   again once idle, its slot with it.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import redis

from crawler.keys import Keys
from crawler.redisio.bloom import RedisBloom, StashTarget
from crawler.redisio.connection import decoded
from crawler.redisio.queue import SITE_LUA
from crawler.rules.model import BEST_FIRST, BREADTH_FIRST, LEARNED
from crawler.settings import ROBOTS_MAX_AGE_SECONDS

__all__ = ["Entry", "Frontier", "slot_of"]

# KEYS: pending counts, the job's hash, the arrival counter, the best scores, the hosts' last touches. ARGV:
# the queue's key prefix, the frontier's, the budget, the rule's delay and concurrency, the seconds a host's
# set is kept untouched (0: for ever), '1' when the rule obeys robots.txt (else '0': a crawl-delay a host's
# robots.txt asked for before is dropped, as LeasedQueue.configure drops a site's), then per host: host,
# queue slot, the entry to release ('' for none), its queued request, its priority, how many entries are
# valued again, then score and entry of each (a score is changed only for an entry still there). Each host
# is touched. A host's slot takes the rule's delay and concurrency where no delay is saved for it in
# crawler:politeness: a slot made now, or made again by the pop's restore (a pruned host met by a request its
# frontier did not release, from the site's saved politeness); a slot saved takes an edit from
# LeasedQueue.configure, as the site does, never from a release, so two workers holding two versions of the
# rule do not write in turn. Its crawl_delay is read from crawler:crawl-delays:<slot> only as it is made.
# Reply: how many were queued (none for a job whose hash is gone: it ended and expired).
_RELEASE = (
    SITE_LUA
    + """
local K, frontier, budget, keep = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[6])
local now = now_of()
-- A job whose hash is gone (it ended and expired) releases nothing: it has no budget left to count against,
-- and HINCRBY would make its hash again, with no time-to-live, kept for ever.
local alive = job_kept(KEYS[2])
local released = 0
local at = 8
while at <= #ARGV do
  local host, slot, entry, member, priority = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  local changed = tonumber(ARGV[at + 5])
  local key = frontier .. host
  for i = 0, changed - 1 do
    redis.call('ZADD', key, 'XX', tonumber(ARGV[at + 6 + 2 * i]), ARGV[at + 7 + 2 * i])
  end
  at = at + 6 + 2 * changed
  local spent = not alive or (tonumber(redis.call('HGET', KEYS[2], 'issued')) or 0) >= budget
  if not spent and entry ~= '' and redis.call('ZREM', key, entry) == 1 then
    local polite = K .. ':polite:' .. slot
    local made = redis.call('HSETNX', polite, 'delay', ARGV[4]) == 1
    if made and ARGV[7] ~= '0' then
      local asked = asked_of(K .. ':crawl-delays:' .. slot)
      if asked then redis.call('HSETNX', polite, 'crawl_delay', asked) end
    end
    redis.call('HSETNX', polite, 'concurrency', ARGV[5])
    local saved = redis.pcall('HGET', K .. ':politeness', slot)
    local ok, settings = pcall(cjson.decode, type(saved) == 'string' and saved or '')
    if not ok or type(settings) ~= 'table' then settings = {} end
    if settings.delay == nil and type(saved) ~= 'table' then
      -- No saved delay: the slot is made now, or made again by the pop's restore (no reload finds it).
      redis.call('HSET', polite, 'delay', ARGV[4], 'concurrency', ARGV[5])
      settings.delay, settings.concurrency = ARGV[4], ARGV[5]
      local held = redis.call('HGET', polite, 'crawl_delay')
      if settings.crawl_delay == nil and held then settings.crawl_delay = held end
      redis.pcall('HSET', K .. ':politeness', slot, cjson.encode(settings))
    end
    if ARGV[7] == '0' then
      redis.pcall('DEL', K .. ':crawl-delays:' .. slot)
      -- A key of another type (someone SET it) is left as it is: the pop sets the slot aside.
      if (tonumber(redis.pcall('HGET', polite, 'crawl_delay')) or 0) > 0 then
        redis.pcall('HSET', polite, 'crawl_delay', 0)
      end
      saved = redis.pcall('HGET', K .. ':politeness', slot)
      ok, settings = pcall(cjson.decode, type(saved) == 'string' and saved or '')
      if ok and type(settings) == 'table' and (tonumber(settings.crawl_delay) or 0) > 0 then
        settings.crawl_delay = 0
        redis.pcall('HSET', K .. ':politeness', slot, cjson.encode(settings))
      end
    end
    local score = -tonumber(priority) * 1099511627776 + redis.call('INCR', KEYS[3])
    if enqueue(K, slot, score, member) == 1 then
      redis.call('HINCRBY', KEYS[1], slot, 1)
      redis.call('HINCRBY', KEYS[2], 'pending', 1)
    end
    redis.call('HINCRBY', KEYS[2], 'issued', 1)
    released = released + 1
  end
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #top == 0 then redis.call('HDEL', KEYS[4], host) else redis.call('HSET', KEYS[4], host, top[2]) end
  if #top > 0 and keep > 0 then redis.call('EXPIRE', key, keep) end
  redis.call('ZADD', KEYS[5], now, host)
end
return released
"""
)
# KEYS: the page's record, its host's count of relevant or irrelevant pages, the job's hash (or ''), the
# hosts' last touches, the host's frontier. ARGV: the host, the links the page gave that the crawl follows,
# the record's time-to-live in seconds, the seconds a host's set is kept untouched (0: for ever). The host
# is touched, its frontier's time-to-live renewed. Reply: the links its record kept, or -1 when it was
# settled already (nothing is written).
_SETTLE = """
if redis.call('HSETNX', KEYS[1], 'settled', 1) == 0 then return -1 end
redis.call('EXPIRE', KEYS[1], ARGV[3])
local clock = redis.call('TIME')
redis.call('ZADD', KEYS[4], tonumber(clock[1]) + tonumber(clock[2]) / 1000000, ARGV[1])
if tonumber(ARGV[4]) > 0 then redis.call('EXPIRE', KEYS[5], ARGV[4]) end
local kept = tonumber(redis.call('HGET', KEYS[1], 'kept')) or 0
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
local seen = tonumber(ARGV[2]) - kept
-- A job's hash gone (it ended and expired) is not made again, with no time-to-live, by a late page.
if KEYS[3] ~= '' and seen > 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HINCRBY', KEYS[3], 'links_seen', seen)
end
return kept
"""
# KEYS: the record of the request's page, the job's hash, the hosts' counts of pages that gave nothing.
# ARGV: the record's time-to-live in seconds, the request's host. Reply: 1 when the job's budget got the
# request back (and its host counted it), 0 when it had already (the request read again). A job whose hash
# is gone (it ended and expired) gets nothing back: HINCRBY would make the hash again, kept for ever.
_REFUND = """
if redis.call('HSETNX', KEYS[1], 'refunded', 1) == 0 then return 0 end
redis.call('EXPIRE', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HINCRBY', KEYS[2], 'issued', -1) end
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
return 1
"""
# KEYS: the hosts' last touches, the best scores, the good and bad counts, pending counts, the saved
# politeness, the ready and gated sites. ARGV: the queue's key prefix, the frontier's, the site, the seconds
# a host is kept untouched, how many hosts to look at, the seconds a crawl-delay is kept. The hosts
# untouched that long (the first ARGV[5]) lose their entries, each host at once, unless their slot has
# requests pending (queued, leased or waiting), queued however it is counted, or downloading: those are
# touched now, their frontier's time-to-live renewed, to be looked at again that much later. The
# crawl-delay a slot's robots.txt asked for stays in crawler:crawl-delays:<slot> ARGV[6] seconds (as
# LeasedQueue.forget_politeness keeps a site's; the worker's next robots.txt read keeps it for good), from
# which _RELEASE writes it in the slot's politeness when the host is met again, so it holds before its
# robots.txt is read again. Reply: the hosts whose entries went.
_PRUNE = (
    SITE_LUA
    + """
local K, frontier, site, keep = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_of()
local idle = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - keep, 'LIMIT', 0, tonumber(ARGV[5]))
local gone = 0
for _, host in ipairs(idle) do
  local slot = site .. '@' .. host
  local polite = K .. ':polite:' .. slot
  local pending = tonumber(redis.call('HGET', KEYS[5], slot)) or 0
  local p = redis.pcall('HMGET', polite, 'inflight', 'crawl_delay')
  if type(p) ~= 'table' or p.err then p = {} end
  local queued = redis.pcall('ZCARD', K .. ':queue:' .. slot)
  if type(queued) ~= 'number' then queued = 1 end
  queued = queued + redis.call('EXISTS', K .. ':taking:' .. slot)
  if pending ~= 0 or queued > 0 or (tonumber(p[1]) or 0) > 0 then
    redis.call('ZADD', KEYS[1], now, host)
    redis.call('EXPIRE', frontier .. host, keep)
  else
    redis.call('DEL', frontier .. host)
    redis.call('HDEL', KEYS[2], host)
    redis.call('HDEL', KEYS[3], host)
    redis.call('HDEL', KEYS[4], host)
    redis.call('HDEL', KEYS[5], slot)
    local saved = redis.pcall('HGET', KEYS[6], slot)
    local delay = tonumber(p[2]) or 0
    if type(saved) == 'string' then
      local ok, settings = pcall(cjson.decode, saved)
      if ok and type(settings) == 'table' then
        delay = math.max(delay, tonumber(settings.crawl_delay) or 0)
      end
    end
    -- A crawl-delay a version before crawler:crawl-delays:<slot> wrote in the politeness alone goes there.
    local asked = K .. ':crawl-delays:' .. slot
    if delay > 0 and redis.pcall('HLEN', asked) == 0 then redis.call('HSET', asked, host, delay) end
    redis.call('EXPIRE', asked, ARGV[6])
    redis.call('DEL', polite)
    redis.pcall('HDEL', KEYS[6], slot)
    redis.call('ZREM', KEYS[7], slot)
    redis.call('ZREM', KEYS[8], slot)
    redis.call('ZREM', KEYS[1], host)
    gone = gone + 1
  end
end
return gone
"""
)
# Hosts :meth:`Frontier.prune` looks at in one call: 200 idle hosts of the generated web (a 3.3 KB
# frontier each) took 12-20 ms of Redis on the shared 2-core machine, so half as many, however many are idle.
PRUNE_BATCH = 100
# Entries of a chosen host valued again with the model of now before one is released (the learned strategy):
# a link's value is the model's when it was found, and the model learns; the host's best few are enough to
# correct its order where it matters, a few at each release.
REVALUED = 4
# A chosen host whose best entry, valued again, fell under this share of its score is not sent a request
# this time: its score is corrected, and the next choice weighs it with the others again.
REVALUE_KEEP = 0.8


def slot_of(site: str, host: str) -> str:
    """The queue slot of ``host``'s requests in ``site``'s discover crawl."""
    return f"{site}@{host}"


@dataclass(frozen=True, slots=True)
class Entry:
    """A link in the frontier: its URL, its depth from a seed, its features (for the model to learn
    from the page it leads to), the relevance of the page it was found on, and its value."""

    url: str
    depth: int
    features: tuple[int, ...]
    source: float
    value: float

    def encode(self) -> bytes:
        data = [self.url, self.depth, list(self.features), round(self.source, 3), round(self.value, 4)]
        return json.dumps(data, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes | str) -> Entry:
        url, depth, features, source, value = json.loads(data)
        return cls(str(url), int(depth), tuple(int(f) for f in features), float(source), float(value))


class Frontier:
    """A discover rule's frontier and host bandit (see the module docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        keys: Keys,
        site: str,
        *,
        strategy: str = LEARNED,
        per_host: int = 2000,
        keep_seconds: int = 0,
        keep_asked: float = ROBOTS_MAX_AGE_SECONDS,
        rng: random.Random | None = None,
    ) -> None:
        self.server = server
        self.keys = keys
        self.site = site
        self.strategy = strategy
        self.base = f"{keys.prefix}:discover:{site}"
        self.keep_seconds = keep_seconds
        self.keep_asked = max(1, round(keep_asked))
        self.touched = f"{self.base}:touched"
        self.target = StashTarget(
            prefix=f"{self.base}:frontier:",
            best=f"{self.base}:best",
            per_host=per_host,
            touched=self.touched,
            keep_seconds=keep_seconds,
        )
        self.rng = rng or random.Random()
        self._release = server.register_script(_RELEASE)
        self._settle = server.register_script(_SETTLE)
        self._refund = server.register_script(_REFUND)
        self._prune = server.register_script(_PRUNE)

    def score(self, entry: Entry, sequence: int) -> float:
        """The entry's place in its host's set: its value (``learned``), the relevance of the page it was
        found on (``best-first``), or its depth then its arrival (``breadth-first``)."""
        if self.strategy == BREADTH_FIRST:
            return -float(entry.depth * 2**32 + sequence)
        if self.strategy == BEST_FIRST:
            return entry.source
        return entry.value

    def record(self, lease: str | None) -> str:
        """The key of the record of the page of the request whose lease is ``lease`` (a page without one
        gets a record of its own)."""
        name = hashlib.sha1(lease.encode()).hexdigest() if lease is not None else uuid.uuid4().hex
        return f"{self.base}:settled:{name}"

    def keep(
        self,
        bloom: RedisBloom,
        fingerprints: Sequence[bytes],
        hosts: Sequence[str],
        entries: Sequence[Entry],
        record: str = "",
        record_seconds: int = 0,
    ) -> int:
        """Keep the entries whose fingerprints the Bloom filter had not seen (step 1), counted in
        ``record`` (kept ``record_seconds``) when given; how many."""
        if not entries:
            return 0
        first = int(self.server.incrby(f"{self.base}:seq", len(entries))) - len(entries)
        stashed = [
            (host, self.score(entry, first + at), entry.encode())
            for at, (host, entry) in enumerate(zip(hosts, entries, strict=True))
        ]
        target = replace(self.target, record=record, record_seconds=record_seconds)
        return sum(bloom.add_and_stash(fingerprints, stashed, target))

    def settle(
        self, record: str, host: str, relevant: bool, found: int, job_key: str, record_seconds: int
    ) -> int | None:
        """The page of ``record`` (of ``host``, relevant or not, its ``found`` links followed) is settled
        (step 1): its host rewarded, its links that ``record`` did not keep counted seen in the job's hash
        ``job_key`` (or ''). The links its record kept; None when it was settled already."""
        kept = int(
            self._settle(
                keys=[
                    record,
                    f"{self.base}:{'good' if relevant else 'bad'}",
                    job_key,
                    self.touched,
                    f"{self.target.prefix}{host}",
                ],
                args=[host, found, record_seconds, self.keep_seconds],
            )
        )
        return kept if kept >= 0 else None

    def refund(self, record: str, job_key: str, record_seconds: int, host: str) -> bool:
        """The request of ``record``, to ``host``, was never fetched (robots.txt disallows it): the job of
        hash ``job_key`` gets its budget back, and ``host`` counts a page that gave nothing for the bandit,
        once however often the request is read (``record`` kept ``record_seconds``). False when it had
        already."""
        return bool(self._refund(keys=[record, job_key, f"{self.base}:bad"], args=[record_seconds, host]))

    def reward(self, host: str, relevant: bool) -> None:
        """A page of ``host`` was fetched: relevant or not."""
        self.server.hincrby(f"{self.base}:{'good' if relevant else 'bad'}", host, 1)

    def choose(self, count: int, *, wait: bool = False, seeded: Iterable[str] = ()) -> list[str]:
        """The host of each of the next ``count`` requests (step 2). With the ``learned`` strategy each
        request is its own draw over every host, so a host that gives may be chosen several times and one
        that gave nothing rarely, however few the hosts; a host is chosen no more times than it has
        entries. With ``wait`` (the job has other requests pending, whose ends choose again), a host whose
        requests are pending and whose frontier is empty draws too, as if it had the frontier's best entry:
        a request it wins is not made now, and waits for its links. So fewer than ``count`` may be chosen.
        The hosts of ``seeded`` (the seeds', whose requests do not come from the frontier) are such hosts
        while their requests are pending, before any of their pages taught the bandit: the first seed
        read does not take the whole queue for its host. With the other strategies, the hosts of the best
        entries, each once."""
        with self.server.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.target.best)
            pipe.hgetall(f"{self.base}:good")
            pipe.hgetall(f"{self.base}:bad")
            best_raw, good_raw, bad_raw = pipe.execute()
        best = {decoded(host): float(score) for host, score in best_raw.items()}
        if self.strategy != LEARNED:
            return sorted(best, key=lambda host: (-best[host], host))[:count]
        if not best:
            return []
        good = {decoded(host): int(n) for host, n in good_raw.items()}
        bad = {decoded(host): int(n) for host, n in bad_raw.items()}
        arms = {host: (1 + good.get(host, 0), 1 + bad.get(host, 0), value) for host, value in best.items()}
        waiting: dict[str, tuple[int, int, float]] = {}
        emptied = sorted((good.keys() | bad.keys() | set(seeded)) - best.keys()) if wait else []
        if emptied:
            pending = self.server.hmget(self.keys.pending, [slot_of(self.site, host) for host in emptied])
            top = max(best.values())
            waiting = {
                host: (1 + good.get(host, 0), 1 + bad.get(host, 0), top)
                for host, count_pending in zip(emptied, pending, strict=True)
                if int(count_pending or 0) > 0
            }
        betavariate = self.rng.betavariate

        def drawn(host: str) -> tuple[float, str]:
            alpha, beta, value = arms[host] if host in arms else waiting[host]
            return betavariate(alpha, beta) * value, host

        picks: Counter[str] = Counter()
        wanted = count
        while wanted > 0 and arms:
            for _ in range(wanted):
                winner = max([*arms, *waiting], key=drawn)
                if winner in arms:
                    picks[winner] += 1
            # A host chosen more times than it has entries gives the rest to the other hosts' draws.
            several = [host for host in arms if picks[host] > 1]
            with self.server.pipeline(transaction=False) as pipe:
                for host in several:
                    pipe.zcard(f"{self.target.prefix}{host}")
                sizes = [int(size) for size in pipe.execute()]
            wanted = 0
            for host, size in zip(several, sizes, strict=True):
                if picks[host] >= size:
                    wanted += picks[host] - size
                    picks[host] = size
                    del arms[host]
        return [host for host, times in picks.items() for _ in range(times)]

    def release(
        self,
        count: int,
        *,
        job: str,
        budget: int,
        delay: float,
        concurrency: int,
        request_of: Callable[[Entry, str], tuple[bytes, int]],
        value_of: Callable[[Entry], float] | None = None,
        wait: bool = False,
        seeded: Iterable[str] = (),
        obey_robots: bool = True,
    ) -> tuple[int, int]:
        """Queue ``count`` requests of ``job`` within ``budget`` (step 3): a host chosen for n of them gives
        its n best entries; ``request_of(entry, host)`` gives an entry's queued request and priority. With
        ``value_of`` (the learned strategy), each chosen host's best entries (``REVALUED``, or n if more)
        are valued again first, and a host whose best fell under ``REVALUE_KEEP`` of its score is left for
        the next choice; a rule that does not obey robots.txt (``obey_robots`` False) drops the crawl-delay
        a chosen host's robots.txt asked for before. ``wait`` and ``seeded``: see :meth:`choose`. How many
        were queued, and how many requests were left so."""
        if count <= 0:
            return 0, 0
        chosen = Counter(self.choose(count, wait=wait, seeded=seeded))
        if not chosen:
            return 0, 0
        with self.server.pipeline(transaction=False) as pipe:
            for host, times in chosen.items():
                last = max(times, REVALUED if value_of else 1) - 1
                pipe.zrevrange(f"{self.target.prefix}{host}", 0, last, withscores=True)
            tops = pipe.execute()
        args: list[str | int | float | bytes] = [
            self.keys.prefix,
            self.target.prefix,
            budget,
            delay,
            concurrency,
            self.keep_seconds,
            int(obey_robots),
        ]
        left = 0
        for (host, times), top in zip(chosen.items(), tops, strict=True):
            block: list[str | int | float | bytes] = [host, slot_of(self.site, host)]
            if not top:  # taken meanwhile: the call only updates the host's best score
                args.extend([*block, b"", b"", 0, 0])
                continue
            valued = [(float(score), member, Entry.decode(member)) for member, score in top]
            changes: list[str | int | float | bytes] = []
            if value_of is not None:
                old_best = valued[0][0]
                valued = [(value_of(entry), member, entry) for _, member, entry in valued]
                valued = [(value, member, replace(entry, value=value)) for value, member, entry in valued]
                changes = [part for score, member, _ in valued for part in (score, member)]
                valued.sort(key=lambda item: -item[0])
                if valued[0][0] < REVALUE_KEEP * old_best:
                    left += times
                    args.extend([*block, b"", b"", 0, len(valued), *changes])
                    continue
            for _, member, entry in valued[:times]:
                request, priority = request_of(entry, host)
                args.extend([*block, member, request, priority, len(changes) // 2, *changes])
                changes = []
        keys = [self.keys.pending, self.keys.job(job), self.keys.sequence, self.target.best, self.touched]
        return int(self._release(keys=keys, args=args)), left

    def prune(self, batch: int = PRUNE_BATCH) -> int:
        """Forget the hosts untouched for ``keep_seconds`` (no link kept to them, none released, no page of
        theirs settled), the first ``batch`` of them (``_PRUNE``): their frontier, best score, rewards and
        queue slot's politeness and pending count, but a crawl-delay their robots.txt asked for (in their
        slot's crawl-delays alone, ``keep_asked`` seconds), and nothing of a host with requests pending.
        The links of a forgotten frontier stay seen in the Bloom filter: the host is found again through
        new links only. Nothing without ``keep_seconds``. How many hosts went."""
        if self.keep_seconds <= 0:
            return 0
        keys = [
            self.touched,
            self.target.best,
            f"{self.base}:good",
            f"{self.base}:bad",
            self.keys.pending,
            self.keys.politeness,
            self.keys.ready,
            self.keys.gated,
        ]
        args: list[str | int] = [
            self.keys.prefix,
            self.target.prefix,
            self.site,
            self.keep_seconds,
            batch,
            self.keep_asked,
        ]
        return int(self._prune(keys=keys, args=args))

    def size(self) -> int:
        """Entries in the frontier (one call per host)."""
        hosts = [decoded(host) for host in self.server.hkeys(self.target.best)]
        with self.server.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.zcard(f"{self.target.prefix}{host}")
            return sum(int(n) for n in pipe.execute())

    def clear(self) -> None:
        """Forget the frontier and the hosts' record (the link model stays)."""
        hosts = [decoded(host) for host in self.server.hkeys(self.target.best)]
        names = [f"{self.target.prefix}{host}" for host in hosts]
        self.server.delete(*names, self.target.best, f"{self.base}:good", f"{self.base}:bad", self.touched)
