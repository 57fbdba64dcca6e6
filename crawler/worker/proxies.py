"""The proxy pool: requests go out through proxies, each proxy's health shared by every worker.

Proxies come from the settings (``CRAWLER_PROXIES``: URLs separated by commas or white space, or
``CRAWLER_PROXY_FILE``: one URL per line; both also from the environment) and from rules
(``access.proxies`` or ``access.proxies_file``): a site whose rule names proxies uses those, the others
the global ones, or none when there are none. ``ProxyMiddleware`` picks one for each request:

- never a *benched* proxy: one banned by a site (:mod:`crawler.worker.bans` judges proxies as it judges
  sites), or one that failed ``PROXY_MAX_FAILURES`` times in a row (refused connections, timeouts),
  benched for ``PROXY_BENCH_SECONDS``, for every worker (by Redis's clock, so whichever machine benched it);
- at most ``PROXY_CONCURRENCY`` requests at once through one proxy in this worker (a request waits for a
  free one among its site's proxies as they are at each look: a rule file read meanwhile counts; the rules
  folder itself is read for them at most every second);
- the least busy, then the one with the fewest failures, in turn.

A retry or a redirect goes back through the queue, where no proxy is kept (:data:`crawler.requests
.SENT_ONLY_META`): its next try picks again, so a failing proxy is left behind. When every proxy of a site
is benched, the site backs off until the first one is back, and its requests wait in the queue.

Health is kept in Redis per proxy (``crawler:proxy:<id>``: ``ok``, ``failed``, ``banned``, ``latency_ms``,
``benched_until``, ``reason``), summed every ``SUPERVISION_FLUSH_SECONDS`` in one Lua call, counted once
though its reply is lost and it is sent again (:mod:`crawler.redisio.once`); ``crawler status`` shows it.
Each flush of a worker that has the proxy configured (and each write) keeps the hash
``SUPERVISION_KEEP_HOURS`` from then on: a proxy no worker has any more (taken out of ``CRAWLER_PROXIES``,
of a rule, or of every worker's configuration) is forgotten that long after the last one let it go. The
configuration is each worker's own, so no worker can tell a proxy gone from one another worker has.
Only a proxy's id (its URL without credentials) is ever logged, stored or shown; the credentials go from
the rule or setting to Scrapy's ``HttpProxyMiddleware``, which sends them to the proxy alone.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Self
from weakref import WeakKeyDictionary

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from twisted.internet import task

from crawler.commandline import counted
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded, script
from crawler.redisio.once import APPLIED_SECONDS, ONCE, Flushes
from crawler.redisio.queue import LeasedQueue
from crawler.requests import Work
from crawler.rules import Rule
from crawler.rules.access import Proxy, global_proxies
from crawler.worker.connection import WrongTypeKeys, keys_of, outage_of, server_of
from crawler.worker.download import DownloadStopped
from crawler.worker.faults import RepeatedFaults

if TYPE_CHECKING:
    from crawler.worker.bans import Signal

__all__ = ["ProxyMiddleware", "ProxyPool", "pool_of"]

logger = logging.getLogger(__name__)

# How the latency average follows new answers (an exponentially weighted mean).
_LATENCY_WEIGHT = 0.2
# Seconds a request waits between two looks for a free proxy.
_WAIT_STEP = 0.05
# Seconds before a site whose rule names no proxies (or that has no rule) is asked of ``rule_of`` again:
# each ask may read the rules folder, and each request of the site asks at each look for a free proxy.
_RULE_ASKED_SECONDS = 1.0
# Seconds between two lines of a proxy benched again and again (one that is down is benched again each
# time its bench of PROXY_BENCH_SECONDS ends, 12 times an hour at 300 s): its first bench is said, the next
# ones counted (proxy/benched, and its health's `benches`) and said with their count once an hour.
PROXY_REMINDER_SECONDS = 3600.0
# Answers that are the proxy's failure, not the site's: its credentials refused, its upstream unreachable.
PROXY_FAILURE_STATUSES = frozenset({407, 502, 504})
# KEYS: the flush's mark (crawler.redisio.once), the proxies' hashes. ARGV: the flush's number and the mark's
# life (once), the hashes' life in seconds, how many counts, then per count its hash (its place in KEYS),
# field and amount; how many latencies, then per latency its hash and milliseconds; then the hashes whose
# benched_until to read. The counts are added unless the flush was applied already (a try whose reply was
# lost); each hash is kept the hashes' life from now. Reply: the places (from 1) of the counts not written
# (their hash holds another type), and each benched_until read ('' when none).
_FLUSH = (
    ONCE
    + """
local unwritten = {}
local counts = tonumber(ARGV[4])
local at = 5
if first_time() then
  for entry = 1, counts do
    local reply = redis.pcall('HINCRBY', KEYS[tonumber(ARGV[at])], ARGV[at + 1], ARGV[at + 2])
    if type(reply) == 'table' then unwritten[#unwritten + 1] = entry end
    at = at + 3
  end
else
  at = at + 3 * counts
end
local latencies = tonumber(ARGV[at])
for _ = 1, latencies do
  redis.pcall('HSET', KEYS[tonumber(ARGV[at + 1])], 'latency_ms', ARGV[at + 2])
  at = at + 2
end
for place = 2, #KEYS do redis.call('EXPIRE', KEYS[place], ARGV[3]) end
local benched = {}
for read = at + 1, #ARGV do
  local until_ = redis.pcall('HGET', KEYS[tonumber(ARGV[read])], 'benched_until')
  benched[#benched + 1] = type(until_) == 'string' and until_ or ''
end
return {unwritten, benched}
"""
)

# The counts of one flush of the proxies' health (crawler.redisio.once numbers it).
_Flush = list[tuple[tuple[str, str], int]]


class ProxyPool:
    """The proxies of a worker, their use here and their shared health (see the module docstring)."""

    def __init__(
        self,
        crawler: Crawler,
        shared: Sequence[Proxy],
        by_site: dict[str, tuple[Proxy, ...]],
        rule_of: Callable[[str], Rule | None] | None = None,
        known: Mapping[str, Rule] | None = None,
    ) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.shared = tuple(shared)
        self.by_site = by_site
        self.rule_of = rule_of
        self.known: Mapping[str, Rule] = {} if known is None else known
        self.rule_asked_seconds = _RULE_ASKED_SECONDS
        self.concurrency = settings.getint("PROXY_CONCURRENCY")
        self.bench_seconds = settings.getfloat("PROXY_BENCH_SECONDS")
        self.max_failures = settings.getint("PROXY_MAX_FAILURES")
        self.keep_seconds = int(settings.getfloat("SUPERVISION_KEEP_HOURS") * 3600)
        self.keys = keys_of(crawler)
        self.inflight: Counter[str] = Counter()
        self.failures_in_row: Counter[str] = Counter()
        self.benched: dict[str, float] = {}  # proxy -> until when, by Redis's clock (shared_now)
        self.latency: dict[str, float] = {}
        self._counts: Counter[tuple[str, str]] = Counter()
        self._turn = 0
        # When (time.monotonic()) each site whose rule named no proxies is asked of rule_of again.
        self._ask_again: dict[str, float] = {}
        self._loop: task.LoopingCall | None = None
        self._wrong = WrongTypeKeys("Proxy health", "its counts are kept")
        # The benches of each proxy, said once, then once an hour with a count, until it works again.
        self._benches = RepeatedFaults(PROXY_REMINDER_SECONDS, noun="time")
        # Per proxy benched since it last worked, the reason of its last bench (its fault in _benches).
        self._bench_reason: dict[str, str] = {}
        self._flushes: Flushes[_Flush] = Flushes(self.keys, "proxies")

    def candidates(self, site: str | None) -> tuple[Proxy, ...]:
        """The proxies of ``site``: its rule's, else the shared ones; none when there are neither. A site
        not in ``by_site`` has its rule asked of ``rule_of`` (the spider's: it knows a rule file added
        while the worker runs, and may read the rules folder for it), again ``rule_asked_seconds`` later
        at the soonest; in between its rule is looked up in ``known`` (the rules read so far: the spider's,
        which ``rule_of`` adds to). A site in ``by_site`` has its rule asked of ``rule_of`` each time (one
        the spider knows: no folder read but every ``RULES_RELOAD_SECONDS``), so that a rule file edited
        while the worker runs gives its requests the proxies it names now."""
        if site and site in self.by_site and self.rule_of is not None:
            rule = self.rule_of(site)
            if rule is not None and rule.proxies:
                self.by_site[site] = rule.proxies
            else:
                del self.by_site[site]
        elif site and self.rule_of is not None:
            now = time.monotonic()
            if self._ask_again.get(site, now) <= now:
                rule = self.rule_of(site)
                self._ask_again[site] = now + self.rule_asked_seconds
            else:
                rule = self.known.get(site)
            if rule is not None and rule.proxies:
                self.by_site[site] = rule.proxies
                del self._ask_again[site]
        return self.by_site.get(site or "", ()) or self.shared

    def all_proxies(self) -> list[Proxy]:
        return list(dict.fromkeys([*self.shared, *(p for proxies in self.by_site.values() for p in proxies)]))

    def choose(self, proxies: Sequence[Proxy]) -> Proxy | bool | None:
        """One of the ``proxies`` (a site's :meth:`candidates`) for a request: the least busy one that is not
        benched and has a free slot; True when every usable one is busy (wait), None when every one is
        benched."""
        now = shared_now()
        usable = [p for p in proxies if self.benched.get(p.id, 0.0) <= now]
        if not usable:
            return None
        free = [p for p in usable if self.inflight[p.id] < self.concurrency]
        if not free:
            return True
        self._turn += 1
        turn = self._turn
        order = {p.id: (index - turn) % len(free) for index, p in enumerate(free)}
        chosen = min(free, key=lambda p: (self.inflight[p.id], self.failures_in_row[p.id], order[p.id]))
        self.inflight[chosen.id] += 1
        return chosen

    async def acquire(self, site: str | None) -> Proxy | None:
        """One of the proxies of ``site`` (its :meth:`candidates`) for a request, waiting for a free one;
        None when every one is benched. They are asked again at each look: a rule file of the site read
        while the request waits has it wait for the rule's proxies instead."""
        while True:
            chosen = self.choose(self.candidates(site))
            if chosen is not True:
                return chosen if isinstance(chosen, Proxy) else None
            await asyncio.sleep(_WAIT_STEP)

    def bench_left(self, proxies: Sequence[Proxy]) -> float:
        """Seconds until the first benched one of the ``proxies`` (a site's :meth:`candidates`) is back."""
        now = shared_now()
        return max(min((self.benched.get(p.id, now) for p in proxies), default=now) - now, 1.0)

    def free(self, proxy: str) -> None:
        """A request through ``proxy`` ended: its slot is free."""
        self.inflight[proxy] = max(self.inflight[proxy] - 1, 0)

    def release(self, proxy: str, *, ok: bool, latency: float | None = None) -> None:
        """A request through ``proxy`` ended: its slot is free, its outcome counted."""
        self.free(proxy)
        if ok:
            self.failures_in_row[proxy] = 0
            reason = self._bench_reason.pop(proxy, None)
            if reason is not None:
                self._benches.ended(_benched(proxy), reason, over=f"Proxy {proxy} works again")
            self._counts[(proxy, "ok")] += 1
            if latency is not None:
                before = self.latency.get(proxy)
                self.latency[proxy] = (
                    latency if before is None else before + _LATENCY_WEIGHT * (latency - before)
                )
            return
        self._counts[(proxy, "failed")] += 1
        self.failures_in_row[proxy] += 1
        if self.failures_in_row[proxy] >= self.max_failures:
            self.bench(proxy, f"{self.failures_in_row[proxy]} failures in a row")

    def banned(self, proxy: str, evidence: Iterable[Signal]) -> None:
        """A site banned ``proxy`` (its evidence, from the ban watch): benched for every worker."""
        self._counts[(proxy, "banned")] += 1
        self.bench(proxy, "banned: " + ", ".join(sorted({signal.what for signal in evidence})))

    def bench(self, proxy: str, reason: str) -> None:
        until = shared_now() + self.bench_seconds
        self.benched[proxy] = until
        self.failures_in_row[proxy] = 0
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("proxy/benched")
        self._counts[(proxy, "benches")] += 1
        level, end = self._benches.said_first(
            _benched(proxy),
            reason,
            logging.WARNING,
            lambda said: f"; benched again while it fails so, {said}",
        )
        self._bench_reason[proxy] = reason
        logger.log(level, "Proxy %s benched for %g s: %s%s", proxy, self.bench_seconds, reason, end)
        try:
            with self._server().pipeline(transaction=False) as pipe:
                pipe.hset(self.keys.proxy(proxy), mapping={"benched_until": f"{until:.3f}", "reason": reason})
                pipe.expire(self.keys.proxy(proxy), self.keep_seconds)
                pipe.execute()
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"share that proxy {proxy} is benched", exc)
            return
        outage_of(self.crawler).ok(wrote=True)

    def _server(self) -> redis.Redis:
        return server_of(self.crawler)

    def start(self, seconds: float) -> None:
        self._loop = task.LoopingCall(self.flush)
        self._loop.start(seconds, now=True)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.flush()
        self._benches.close()
        self._flushes.end(self._server())

    def flush(self) -> None:
        """Add this worker's counts to each proxy's health in Redis, after the flush Redis failed if one did
        (sent again as it was: counted once), and read which proxies other workers benched; each proxy
        configured here, or written, is kept ``keep_seconds`` from now. Redis away, or refusing writes: the
        counts wait for the next turn; a proxy's hash of another type (someone SET it, named once): its
        counts alone wait, the others written are never written twice."""
        proxies = [p.id for p in self.all_proxies()]

        def write(number: int, counts: _Flush) -> None:
            self._write(number, counts, proxies)

        try:
            if self._flushes.waiting:
                self._flushes.again(write)
                if not self._counts:
                    return
            counts, self._counts = self._counts, Counter()
            if counts:
                self._flushes.send(list(counts.items()), write)
            elif proxies:
                write(0, [])  # number 0, none applied: reads and keeps alone, and writes no mark
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("write the proxies' health, kept for the next try", exc)

    def _write(self, number: int, counts: _Flush, proxies: list[str]) -> None:
        """Write ``counts`` under their ``number`` and the latencies, keep the ``proxies`` and read their
        benches. Raises ``redis.RedisError`` when Redis fails it."""
        latencies = list(self.latency.items())
        of_count = [self.keys.proxy(proxy) for (proxy, _), _ in counts]
        of_latency = [self.keys.proxy(proxy) for proxy, _ in latencies]
        of_proxy = [self.keys.proxy(proxy) for proxy in proxies]
        hashes = list(dict.fromkeys([*of_count, *of_latency, *of_proxy]))
        place = {key: index for index, key in enumerate(hashes, 2)}
        args: list[str | int] = [number, APPLIED_SECONDS, self.keep_seconds, len(counts)]
        for ((_, what), count), key in zip(counts, of_count, strict=True):
            args += (place[key], what, count)
        args.append(len(latencies))
        for (_, latency), key in zip(latencies, of_latency, strict=True):
            args += (place[key], round(latency * 1000))
        args += (place[key] for key in of_proxy)
        unwritten, benched = script(self._server(), _FLUSH)(keys=[self._flushes.mark, *hashes], args=args)
        failed = [counts[int(place) - 1] for place in unwritten]
        self._counts.update(dict(failed))
        self._wrong.say({self.keys.proxy(proxy) for (proxy, _), _ in failed})
        outage_of(self.crawler).ok(wrote=len(failed) < len(counts) or bool(latencies))
        for proxy, until in zip(proxies, benched, strict=True):
            if until:
                self.benched[proxy] = max(self.benched.get(proxy, 0.0), float(decoded(until)))


def _benched(proxy: str) -> str:
    """What befell ``proxy`` at a bench, as the count of its benches says it."""
    return f"proxy {proxy} benched"


_pools: WeakKeyDictionary[Crawler, ProxyPool] = WeakKeyDictionary()


def pool_of(crawler: Crawler) -> ProxyPool | None:
    """The crawl's proxy pool, None when it uses no proxy."""
    return _pools.get(crawler)


class ProxyMiddleware:
    """Sends each request through a proxy of its site's pool (see the module docstring). On for the sites
    spider, whose rules may name proxies, a rule file added while the worker runs too (``rule_of`` reads
    it); off (``NotConfigured``) for a spider that serves no site rules."""

    def __init__(self, crawler: Crawler, pool: ProxyPool) -> None:
        self.crawler = crawler
        self.pool = pool
        self.queue = LeasedQueue(server_of(crawler), keys_of(crawler))
        _pools[crawler] = pool

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        shared = global_proxies(settings.get("CRAWLER_PROXIES"), settings.get("CRAWLER_PROXY_FILE"))
        rule_of: Callable[[str], Rule | None] | None = getattr(crawler.spider, "rule_of", None)
        if rule_of is None:
            raise NotConfigured("the spider serves no site rules (it has no rule_of)")
        rules: dict[str, Rule] = getattr(crawler.spider, "rules", {})
        by_site = {site: rule.proxies for site, rule in rules.items() if rule.proxies}
        pool = ProxyPool(crawler, shared, by_site, rule_of, rules)
        middleware = cls(crawler, pool)
        pool.start(settings.getfloat("SUPERVISION_FLUSH_SECONDS"))
        crawler.signals.connect(pool.stop, signal=signals.spider_closed)
        if shared or by_site:
            logger.info(
                "Proxies: %d shared, %s",
                len(shared),
                counted(len(by_site), "site with its own", "sites with their own"),
            )
        return middleware

    async def process_request(self, request: Request) -> Request | None:
        if "proxy_id" in request.meta or request.meta.get("dont_proxy"):
            return None
        work = Work.of(request)
        if not self.pool.candidates(work.site):
            return None
        proxy = await self.pool.acquire(work.site)
        if proxy is None:
            return self._all_benched(request, work, self.pool.candidates(work.site))
        request.meta["proxy"] = proxy.url
        request.meta["proxy_id"] = proxy.id
        request.meta["proxy_sent"] = time.monotonic()
        return None

    def process_response(self, request: Request, response: Response) -> Response:
        proxy = request.meta.get("proxy_id")
        if proxy is not None:
            sent = request.meta.get("proxy_sent")
            latency = time.monotonic() - sent if isinstance(sent, float) else None
            self.pool.release(proxy, ok=response.status not in PROXY_FAILURE_STATUSES, latency=latency)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        proxy = request.meta.get("proxy_id")
        if proxy is None:
            return
        if isinstance(exception, DownloadStopped):
            self.pool.free(proxy)  # the crawl stopped it: no outcome of the proxy
        else:
            self.pool.release(proxy, ok=False)

    def _all_benched(self, request: Request, work: Work, proxies: Sequence[Proxy]) -> Request:
        """Every one of the site's ``proxies`` is benched: the site waits for the first one back, the request
        too."""
        if work.lease is None:
            raise IgnoreRequest(f"no proxy to fetch {request.url}: every proxy is benched")
        seconds = self.pool.bench_left(proxies)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"proxy/all_benched/{work.site}")
        try:
            self.queue.back_off(
                work.site,
                seconds=seconds,
                first=seconds,
                longest=max(seconds, self.pool.bench_seconds),
                calm=0.0,
                reason="every proxy of the site is benched",
            )
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"hold {work.site} back while its proxies are benched", exc)
        else:
            outage_of(self.crawler).ok(wrote=True)
        return request.replace(dont_filter=True)
