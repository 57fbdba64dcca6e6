"""Regular grabs: when each rule's index pages are due, and seeding them exactly once per period.

A rule's period is ``schedule.every`` (adapted between its bounds by :mod:`crawler.revisit`: the next grab
is due one interval after the last one started) or ``schedule.cron`` (5 fields, UTC). A rule without a
schedule has no regular grab (``crawler temp`` crawls it on demand). The state of each site lives in
Redis, so it survives a restart of any scheduler:

``crawler:grab:<site>`` (hash)
    ``next`` (epoch seconds the next grab is due, by Redis's clock as every time here: the scheduler,
    the workers and ``crawler status`` compare them on machines whose clocks may differ, see
    :mod:`crawler.redisio.clock`), ``last`` (when the last one was seeded), ``job`` (its
    job id), ``seeding`` (a job claimed but not yet queued), ``grabs`` (how many so far), ``waiting`` and
    ``waiting_since`` (a grab due that waits for the last one to end, see 0.), ``deferred`` (how many
    grabs waited so), ``every`` (the rule's period in seconds when its last grab was claimed, or when
    ``plan`` moved its next grab; ``cron`` for a cron rule), and what :mod:`crawler.schedule.revisit`
    keeps there (``interval``, ``yield``, ...).

0. A grab due while the site's last grab has work left (its job's requests queued, leased, waiting to be
   retried) waits until that one ends: each grab goes on from where the last one stopped (a discover
   rule's frontier, a site's article links), rather than read the same pages beside it with a budget of
   its own. So does a grab due while a temp crawl of the whole site (``crawler temp SITE``, its job in
   ``crawler:temp:<site>``) has work left: that crawl reads the site's index pages (a discover rule's seeds
   and frontier) now, and the grab beside it would read them again. The wait is recorded once
   (``waiting``: the job waited for, ``deferred``; logged once) and the grab is queued at the first tick
   after that job ends. A last grab left with nothing but leases past their deadline
   (its worker killed, none alive to put them back) is over; so is one whose requests Redis holds none of
   (none of the site's queued, leased or waiting: lost with its queue key, or with a Redis restarted from
   an older snapshot): their counts are written off (``LeasedQueue.lost``), with a warning; and after
   ``wait_max_seconds`` (``SCHEDULE_GRAB_WAIT_MAX_SECONDS``) the due grab is queued anyway, with a
   warning (a pending count that nothing brings down, its requests held by other jobs of the site, never
   holds the schedule up for ever).
1. ``claim`` (one Lua script): if ``next`` is missing or not after now, set ``next`` to now plus the
   site's interval (or the cron expression's next time), ``last`` to now and ``seeding`` to a new job id,
   and say yes; any other scheduler asking for the same period is told no. Two schedulers, or one
   restarted, never seed a period twice.
2. The site's start URLs are queued as that job (:func:`crawler.requests.enqueue_job`), with a priority
   boost that grows with the site's yield (how often its grabs find new articles), then ``seeding`` is
   cleared. A scheduler that died between the two leaves ``seeding`` set: the next tick queues that same
   job again (the queue stores an identical request once), so no period is skipped either.
3. Periods missed while no scheduler ran are not replayed one by one: the first tick after seeds the
   current one (an index page read once shows what a missed read would have).
4. A scheduler looks every ``tick_seconds`` (``SCHEDULE_TICK_SECONDS``): a period shorter than that is
   grabbed once a tick, and the next grab recorded (and logged) is the next tick's.
5. A site paused (``crawler:paused``, ``crawler sites pause``) is skipped: no grab is claimed nor queued
   for it, nor recorded as waiting, however long it is due (a seeding a stopped scheduler left is
   finished: the queue holds its requests). Resumed, it is due as its ``next`` says: at the first tick
   when that passed during the pause.
6. Redis's clock set back (it ran ahead: NTP set it right) leaves the last grab, and the next, ahead of
   it by as much: the site would not be grabbed for that long. A last grab more than a tick ahead of the
   clock moves the next one to as long after now as it was after the last (a cron rule's to its
   expression's next time, which ``plan`` leaves to the tick: no schedule changed), and the last to now,
   with a warning. A grab waiting
   since a moment ahead of the clock (0.) counts its wait from now, not ``wait_max_seconds`` and the
   step more.
7. A grab's job hash (``crawler:job:<id>``) is given a time-to-live of ``job_keep_hours``
   (``SCHEDULE_JOB_KEEP_HOURS``) by the claim of the site's next grab (1.), a temp crawl's once the crawl
   sees it end. A version before that setting gave none: after an upgrade, the hashes of every grab before
   the site's last one, and of the temp crawls seen ending, would stay for ever. So each scheduler goes
   once through the job hashes, ``JOB_SWEEP_COUNT`` a tick (a SCAN call), and gives that time-to-live to
   those with none that are a grab's, or a temp crawl's seen ending (``ended``), but not the current job
   of one of their sites (its grab's ``job``, ``seeding`` or ``waiting``, its last temp crawl): what the
   claim and the temp crawl would have expired. A temp crawl not seen ending keeps its hash.

A rule seen for the first time (no ``next``) is grabbed at once when it has ``every``; with ``cron`` its
first grab is at the expression's next time (at once only within a minute the expression names), and
that time is recorded as ``next``. A cron rule whose recorded ``next`` in the future is not the
expression's next time (the expression was edited, or the rule had ``every`` before) gets the
expression's next time instead; so does one whose ``next``, past, was set under an ``every`` (the grab it
made due, paused, waiting (0.) or missed while no scheduler ran, is not made at once). A rule whose
``every`` is not the one its last grab was claimed under (it was edited, or the rule had ``cron`` before)
starts its adaptive interval again at the new ``every``, its next grab one such period after the last (at
once when that is past), rather than keep a period adapted under the old one. Both are set by ``plan``
(one Lua call that changes ``next`` only if it is still what the scheduler read), so two schedulers say it
once; a next grab so moved ahead of now is no longer due, so no grab waits (0.) any more: its ``waiting``
is dropped.

``crawler:scheduler:leader`` (a string with a time-to-live) names the one active scheduler of ``crawler
schedule``; the others wait, and take over within ``SCHEDULE_LEADER_SECONDS`` when it stops. As it takes
the lead it writes where it runs in ``crawler:scheduler:leader-process`` (its pid and pid space), by
which ``crawler status`` on its machine tells it killed at once. At each
tick it writes the errors of the rule files it cannot read in ``crawler:scheduler:rule-errors``, for
`crawler status` on machines whose copy of those files is sound; while its ticks fail with an unexpected
error (a fault of its own), that error in ``crawler:scheduler:tick-failure``. An unexpected error met with
one site's grab (its grab hash edited by hand, a field no number) is that site's alone: said once, with its
traceback, the site skipped, the other sites grabbed, and said again once the site's grab goes through.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import redis

from crawler import settings as defaults
from crawler.commandline import TOLD, counted, span
from crawler.keys import Keys
from crawler.redisio.clock import redis_clock
from crawler.redisio.connection import (
    SteadyWrites,
    decoded,
    hash_of,
    read_wrong_as,
    turned_away,
    writes_refused,
)
from crawler.redisio.queue import LeasedQueue
from crawler.redisio.since import DataMarker
from crawler.redisio.workers import pid_space
from crawler.requests import enqueue_job, expired_leases, write_off_lost
from crawler.rules import Rule, RuleError, RuleFiles, load_rules
from crawler.rules.periods import cron_after
from crawler.schedule.revisit import period_of, when

__all__ = ["GrabScheduler", "Planned", "Seeded", "Waiting", "next_due", "rule_loader", "when"]

logger = logging.getLogger(__name__)


# Job hashes looked at per tick by the sweep of those an older version left with no time-to-live (7.): a
# Redis of months of grabs holds hundreds of thousands; 1,000 (one SCAN call and two pipelines) keep a
# tick's added work to milliseconds, and the sweep of 500,000 done within an hour of 5 s ticks.
JOB_SWEEP_COUNT = 1000

# How often a tick's unexpected error that goes on is said again, with the count of the ticks it failed
# since: once a minute, as a worker's repeated faults (12 lines an hour, not 720 of 5 s ticks).
TICK_FAILURE_REMINDER_SECONDS = 60.0

_CLAIM = """
local due = redis.call('HGET', KEYS[1], 'next')
if due and tonumber(due) > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[2], 'last', ARGV[1], 'seeding', ARGV[3], 'every', ARGV[4])
redis.call('HDEL', KEYS[1], 'waiting', 'waiting_since')
redis.call('HINCRBY', KEYS[1], 'grabs', 1)
if KEYS[2] ~= '' then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
return 1
"""
_PLAN = """
if (redis.call('HGET', KEYS[1], 'next') or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[2], 'every', 'cron')
if tonumber(ARGV[2]) > tonumber(ARGV[3]) then redis.call('HDEL', KEYS[1], 'waiting', 'waiting_since') end
return 1
"""
_REPERIOD = """
if (redis.call('HGET', KEYS[1], 'every') or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'every', ARGV[2], 'interval', ARGV[2], 'next', ARGV[3])
if tonumber(ARGV[3]) > tonumber(ARGV[4]) then redis.call('HDEL', KEYS[1], 'waiting', 'waiting_since') end
return 1
"""
_REBASE = """
if (redis.call('HGET', KEYS[1], 'next') or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[2], 'last', ARGV[3])
return 1
"""
_RENEW_LEADER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RESIGN_LEADER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def next_due(rule: Rule, moment: float, interval: float | None = None) -> float | None:
    """When the grab after one started at ``moment`` is due: ``moment`` plus the site's ``interval``
    (default ``schedule.every``), or the cron expression's first time after ``moment``; None without a
    schedule."""
    if rule.cron is not None:
        return cron_after(rule.cron, moment)
    if rule.every is None:
        return None
    return moment + (interval if interval is not None else rule.every.total_seconds())


@dataclass(frozen=True)
class Seeded:
    """A grab queued by :meth:`GrabScheduler.tick`."""

    site: str
    job: str
    next_due: float


@dataclass(frozen=True)
class Planned:
    """A cron rule's next grab set by :meth:`GrabScheduler.plan`: the rule is new (``first``) or its
    schedule changed."""

    site: str
    next_due: float
    first: bool

    def __str__(self) -> str:
        change = "first grab" if self.first else "schedule changed; next grab"
        return f"{self.site}: {change} at {when(self.next_due)}"


@dataclass(frozen=True)
class Waiting:
    """A due grab that waits for ``job`` to end (``left``: its requests still to crawl): the site's last
    grab, or a temp crawl of the site (``temp``)."""

    site: str
    job: str
    left: int
    temp: bool = False

    def __str__(self) -> str:
        return f"grab of {self.site} due, deferred until {self.ended()}"

    def ended(self) -> str:
        """``its last grab, job J, ends (N requests of it still to crawl)``, or a temp crawl's."""
        return (
            f"{_waited_for(self.temp)}, job {self.job}, ends ({counted(self.left, 'request')} of it still to"
            " crawl)"
        )


def _waited_for(temp: bool) -> str:
    return "a temp crawl of the site" if temp else "its last grab"


class GrabScheduler:
    """Seeds the regular grabs of ``rules`` into the shared queue (see the module's docstring); ``data_dir``:
    the data folder that records the marker of Redis's crawler data it saw
    (:class:`~crawler.redisio.since.DataMarker`), None for none."""

    def __init__(
        self,
        server: redis.Redis,
        keys: Keys,
        *,
        lease_seconds: float = 60.0,
        yield_boost: int = defaults.SCHEDULE_YIELD_BOOST,
        tick_seconds: float = defaults.SCHEDULE_TICK_SECONDS,
        wait_max_seconds: float = defaults.SCHEDULE_GRAB_WAIT_MAX_SECONDS,
        job_keep_hours: float = defaults.SCHEDULE_JOB_KEEP_HOURS,
        clock: Callable[[], float] | None = None,
        data_dir: Path | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self.keys = keys
        self.lease_seconds = lease_seconds
        self.tick_seconds = tick_seconds
        self.wait_max_seconds = wait_max_seconds
        self.job_keep_seconds = max(int(job_keep_hours * 3600), 1)
        self.yield_boost = yield_boost
        # Redis's clock by default: the grabs' times are compared by workers, `crawler status` and the other
        # schedulers, on machines whose clocks may differ.
        self.clock = clock if clock is not None else functools.partial(redis_clock, server)
        # The seconds the failures of its ticks go by (:meth:`run`): this process's, as Redis may be away.
        self.monotonic = monotonic
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.marker = DataMarker(server, keys, self.owner, data_dir)
        self._claim = server.register_script(_CLAIM)
        self._plan = server.register_script(_PLAN)
        self._reperiod = server.register_script(_REPERIOD)
        self._rebase = server.register_script(_REBASE)
        self._renew = server.register_script(_RENEW_LEADER)
        self._resign = server.register_script(_RESIGN_LEADER)
        self._unreadable: set[str] = set()
        # Site -> the unexpected error its grab met (:meth:`_alone`), said once, until its grab goes through.
        self._faulty: dict[str, str] = {}
        self._faulty_now: set[str] = set()
        # The SCAN cursor of the sweep of the job hashes with no time-to-live (7.); None once it is done.
        self._sweep: int | None = 0

    def readable(self, rules: Iterable[Rule]) -> list[Rule]:
        """``rules`` but those whose grab hash holds another type (someone SET it: every read of it would
        fail with WRONGTYPE): no grab of such a site, the others as usual; a warning names the key and the
        fix, once until it is removed. One round trip."""
        rules = list(rules)
        pipe = self.server.pipeline(transaction=False)
        for rule in rules:
            pipe.type(self.keys.grab(rule.site))
        kept = []
        for rule, kind in zip(rules, (decoded(kind) for kind in pipe.execute()), strict=True):
            if kind in ("hash", "none"):
                self._unreadable.discard(rule.site)
                kept.append(rule)
            elif rule.site not in self._unreadable:
                self._unreadable.add(rule.site)
                key = self.keys.grab(rule.site)
                logger.warning(
                    "%s: no regular grab: Redis key %s is a %s, not a hash; fix: redis-cli DEL %s (its"
                    " schedule starts anew)",
                    rule.site,
                    key,
                    kind,
                    key,
                )
        return kept

    def tick(self, rules: Iterable[Rule]) -> list[Seeded]:
        """Seed every rule whose grab is due now, and finish any seeding a stopped scheduler left (after
        :meth:`plan`: a cron rule is due at its expression's times only)."""
        rules = self.readable(rules)
        self._faulty_now.clear()
        self.plan(rules)
        now = self.clock()
        seeded = []
        paused = set(self.paused(rules))
        for rule in rules:
            with self._alone(rule.site):
                grabbed = self._tick_site(rule, now, paused)
                if grabbed is not None:
                    seeded.append(grabbed)
        for rule in rules:
            if rule.site in self._faulty and rule.site not in self._faulty_now:
                logger.info(
                    "%s: its grab works again, after %s", rule.site, self._faulty.pop(rule.site), extra=TOLD
                )
        self._keep_unkept_jobs()
        return seeded

    @contextlib.contextmanager
    def _alone(self, site: str) -> Iterator[None]:
        """An unexpected error met with ``site``'s grab (neither Redis's, which is the tick's: Redis away)
        is that site's alone: said once with its traceback, until its grab goes through; the site is
        skipped, the other sites grabbed."""
        try:
            yield
        except redis.RedisError:
            raise
        except Exception as exc:  # one site's grab state, or a fault met with it: that site's alone
            self._faulty_now.add(site)
            if site in self._faulty:
                return
            reason = self._faulty[site] = f"{type(exc).__name__}: {exc}"
            key = self.keys.grab(site)
            logger.error(
                "%s: no grab of it while its grab meets an unexpected error, %s (its grab hash %s edited by"
                " hand, or a fault of the scheduler: its traceback follows); the other sites are grabbed;"
                " `redis-cli HGETALL %s` shows the hash, `redis-cli DEL %s` starts its schedule anew",
                site,
                reason,
                key,
                key,
                key,
                exc_info=exc,
            )

    def _tick_site(self, rule: Rule, now: float, paused: set[str]) -> Seeded | None:
        """Seed ``rule``'s grab when it is due ``now`` (not when its site is one of the ``paused``), or
        finish a seeding a stopped scheduler left; the grab queued, None for none."""
        key = self.keys.grab(rule.site)
        state = hash_of(self.server, key)
        if "seeding" in state:
            self._seed(rule, state["seeding"], self._boost(state))
            return None
        if rule.site in paused:
            return None
        self._rebase_if_ahead(rule, state, now)
        interval = float(state["interval"]) if "interval" in state else None
        following = next_due(rule, now, interval)
        if following is None and "waiting" in state:  # the rule lost its schedule: no grab waits
            self.server.hdel(key, "waiting", "waiting_since")
        if following is None or ("next" in state and float(state["next"]) > now):
            return None
        if rule.cron is None:
            following = max(following, now + self.tick_seconds)  # no grab comes before the next tick
        if self._wait_for(rule, state, now):
            return None
        job = uuid.uuid4().hex[:12]
        last = self.keys.job(state["job"]) if "job" in state else ""
        claimed = self._claim(
            keys=[key, last],
            args=[f"{now:.3f}", f"{following:.3f}", job, period_of(rule), self.job_keep_seconds],
        )
        if not claimed:
            return None
        self._seed(rule, job, self._boost(state))
        waited = ""
        if "waiting" in state:
            since = float(state.get("waiting_since", now))
            waited = f" (it waited {now - since:.0f} s for job {state['waiting']} to end)"
        logger.info("grab of %s queued as job %s%s; next at %s", rule.site, job, waited, when(following))
        return Seeded(rule.site, job, following)

    def _keep_unkept_jobs(self) -> None:
        """One step of the sweep of the job hashes with no time-to-live (see the module's docstring, 7.):
        ``JOB_SWEEP_COUNT`` of them looked at, those a grab's claim or a temp crawl's end would have given
        one given ``job_keep_hours``."""
        if self._sweep is None:
            return
        prefix = self.keys.job("")
        cursor, names = self.server.scan(self._sweep, match=f"{prefix}*", count=JOB_SWEEP_COUNT, _type="hash")
        self._sweep = int(cursor) or None
        pipe = self.server.pipeline(transaction=False)
        for name in names:
            pipe.ttl(name)
            pipe.hmget(name, "kind", "ended", "sites")
        read = pipe.execute(raise_on_error=False)
        unkept: dict[str, list[str]] = {}
        for name, ttl, fields in zip(names, read[::2], read[1::2], strict=True):
            if ttl != -1 or not isinstance(fields, list):  # a key of another type since the SCAN: not a job's
                continue
            kind, ended, sites = fields
            if kind == b"grab" or ended is not None:
                unkept[decoded(name)] = [site for site in decoded(sites or b"").split(",") if site]
        sites = sorted({site for of_job in unkept.values() for site in of_job})
        for site in sites:
            pipe.hmget(self.keys.grab(site), "job", "seeding", "waiting")
            pipe.get(self.keys.temp(site))
        # The current jobs of those sites; a site whose grab or temp key holds another type may have any.
        current: set[str] = set()
        unread: set[str] = set()
        replies = pipe.execute(raise_on_error=False)
        for site, grab, temp in zip(sites, replies[::2], replies[1::2], strict=True):
            if isinstance(grab, Exception) or isinstance(temp, Exception):
                unread.add(site)
                continue
            current.update(prefix + decoded(job) for job in [*grab, temp] if job is not None)
        for name, of_job in unkept.items():
            if name not in current and unread.isdisjoint(of_job):
                pipe.expire(name, self.job_keep_seconds)
        pipe.execute()

    def _ahead(self, last: str | bytes | None, now: float) -> bool:
        """Whether the last grab ``last`` is more than a tick ahead of the clock (see 6. of the module's
        docstring)."""
        return last is not None and float(decoded(last)) > now + self.tick_seconds

    def _rebase_if_ahead(self, rule: Rule, state: dict[str, str], now: float) -> None:
        """A last grab ahead of the clock (set back: it ran ahead, NTP set it right) would hold the next
        one back by as much; the next grab comes as long after now as it was after that one (a cron rule's:
        at its expression's next time), and the last is taken as now (see 6. of the module's docstring).
        ``state`` is updated."""
        if "next" not in state or not self._ahead(state.get("last"), now):
            return
        last, due = float(state["last"]), float(state["next"])
        rebased = cron_after(rule.cron, now) if rule.cron is not None else now + max(due - last, 0.0)
        if self._rebase(
            keys=[self.keys.grab(rule.site)], args=[state["next"], f"{rebased:.3f}", f"{now:.3f}"]
        ):
            logger.warning(
                "%s: its last grab, at %s, is %s ahead of the clock (was the clock set back?): its next"
                " grab moves from %s to %s",
                rule.site,
                when(last),
                span(last - now),
                when(due),
                when(rebased),
            )
        state["next"], state["last"] = f"{rebased:.3f}", f"{now:.3f}"

    def waiting(self, rules: Iterable[Rule]) -> list[Waiting]:
        """The grabs of ``rules`` deferred until their last grab, or a temp crawl of their site, ends (as
        the last tick found them)."""
        found = []
        for rule in self.readable(rules):
            waited = self.server.hget(self.keys.grab(rule.site), "waiting")
            if waited is not None:
                job = decoded(waited)
                found.append(Waiting(rule.site, job, self.unfinished(job), self._is_temp(job)))
        return found

    def paused(self, rules: Iterable[Rule]) -> list[str]:
        """The sites of ``rules`` paused (``crawler sites pause``): no grab of them is queued."""
        paused = {decoded(site) for site in self.server.hkeys(self.keys.paused)}
        return [rule.site for rule in rules if rule.site in paused]

    def _is_temp(self, job: str) -> bool:
        return self._read(self.keys.job(job), "kind") == b"temp"

    def _read(self, key: str, field: str | None = None) -> bytes | None:
        """The string ``key``, or the ``field`` of the hash ``key``; None when the key holds another type
        (someone SET it: `crawler status` names the key): it names no job, and counts no request."""
        with self.server.pipeline(transaction=False) as pipe:
            if field is None:
                pipe.get(key)
            else:
                pipe.hget(key, field)
            (value,) = read_wrong_as(pipe.execute(raise_on_error=False), None)
        return value if isinstance(value, bytes) else None

    def unfinished(self, job: str) -> int:
        """The requests of ``job`` still to crawl: those pending (queued, leased, waiting to be retried) but
        the leases past their deadline, whose worker was killed (Redis's clock times leases)."""
        pending = int(self._read(self.keys.job(job), "pending") or 0)
        if pending <= 0:
            return 0
        return max(pending - expired_leases(self.server, self.keys, job, redis_clock(self.server)), 0)

    def _blocking(self, rule: Rule, state: dict[str, str]) -> tuple[str, bool, int] | None:
        """The job a due grab of ``rule`` waits for, whether it is a temp crawl, and its requests still to
        crawl: the site's last grab (``state``'s ``job``), else its last temp crawl of the whole site,
        while it has some; None when neither has, or when Redis holds none of the site's requests (they
        were lost: their counts are written off, with a warning)."""
        held = self.held_by(rule.site, state)
        if held is not None:
            job, is_temp, left = held.job, held.temp, held.left
            if write_off_lost(self.server, self.keys, rule.site) is None:
                return job, is_temp, left
            logger.warning(
                "grab of %s queued: %s, job %s, counted %s still to crawl, none of which Redis holds"
                " (lost with the site's queue key, deleted, evicted or overwritten, or with a Redis"
                " restarted from an older snapshot): their counts are written off; `crawler temp %s"
                " --again` fetches the articles seen before again",
                rule.site,
                _waited_for(is_temp),
                job,
                counted(left, "request"),
                rule.site,
            )
        return None

    def held_by(self, site: str, state: Mapping[str, str]) -> Waiting | None:
        """The job a grab of ``site`` due now would wait for (see 0. of the module's docstring): its last
        grab (``state``, its grab hash: its ``job``), else its last temp crawl of the whole site, while it
        has requests still to crawl; None when neither has."""
        temp = self._read(self.keys.temp(site))
        jobs = [(state["job"], False)] if "job" in state else []
        if temp is not None:
            jobs.append((decoded(temp), True))
        for job, is_temp in jobs:
            if left := self.unfinished(job):
                return Waiting(site, job, left, is_temp)
        return None

    def _wait_for(self, rule: Rule, state: dict[str, str], now: float) -> bool:
        """True while ``rule``'s due grab waits for its last grab (``state``'s ``job``), or a temp crawl
        of the site, to end (see the module's docstring), at most ``wait_max_seconds``; the wait is
        recorded, and logged, by the first tick that finds it."""
        blocking = self._blocking(rule, state)
        if blocking is None:
            return False
        last, is_temp, left = blocking
        key = self.keys.grab(rule.site)
        if self.server.hsetnx(key, "waiting", last):
            pipe = self.server.pipeline()
            pipe.hset(key, "waiting_since", f"{now:.3f}")
            pipe.hincrby(key, "deferred", 1)
            pipe.execute()
            going_on = (
                "rather than read the same pages beside it" if is_temp else "going on from where it stopped"
            )
            logger.info(
                "grab of %s due, deferred: %s, job %s, has %s still to crawl; the next grab is"
                " queued once it ends, %s",
                rule.site,
                _waited_for(is_temp),
                last,
                counted(left, "request"),
                going_on,
            )
            return True
        if state.get("waiting") != last:  # the job waited for ended, another one of the site goes on
            self.server.hset(key, "waiting", last)
        since = float(self.server.hget(key, "waiting_since") or now)
        if since > now:  # recorded by a clock since set back (6.): the wait is counted from now
            since = now
            self.server.hset(key, "waiting_since", f"{now:.3f}")
        if now - since < self.wait_max_seconds:
            return True
        logger.warning(
            "grab of %s queued though %s, job %s, still counts %s to crawl: it waited %s,"
            " SCHEDULE_GRAB_WAIT_MAX_SECONDS; see `crawler status` (are workers crawling the site? dead"
            " letters?) and `crawler dead list --site %s`",
            rule.site,
            _waited_for(is_temp),
            last,
            counted(left, "request"),
            span(now - since),
            rule.site,
        )
        return False

    def plan(self, rules: Iterable[Rule]) -> list[Planned]:
        """Set the next grab of every cron rule that is new (no ``next``) or whose ``next`` ahead is not
        its expression's next time, and of every rule whose ``every`` is not the one its last grab was
        claimed under (the rule was edited); returns those set in the future, each once however many
        schedulers plan. A new rule within a minute its expression names is made due now. An unexpected
        error met with one site's grab is that site's alone (:meth:`_alone`)."""
        now = self.clock()
        planned = []
        for rule in self.readable(rules):
            with self._alone(rule.site):
                if rule.cron is None:
                    if rule.every is not None and (moved := self._reperiod_of(rule, now)) is not None:
                        planned.append(moved)
                        logger.info("%s", moved)
                    continue
                key = self.keys.grab(rule.site)
                recorded, last, claimed = self.server.hmget(key, "next", "last", "every")
                if self._ahead(last, now):  # the clock was set back: the tick moves the next grab (6.)
                    continue
                if recorded is None:
                    due = cron_after(rule.cron, now - 60)
                else:
                    due = cron_after(rule.cron, now)
                    # A grab due under this cron is the tick's to queue; one due under an every is moved.
                    recorded_due = float(decoded(recorded))
                    if due == recorded_due or (recorded_due <= now and claimed in (None, b"cron")):
                        continue
                if (
                    not self._plan(keys=[key], args=[recorded or b"", f"{due:.3f}", f"{now:.3f}"])
                    or due <= now
                ):
                    continue
                planned.append(Planned(rule.site, due, first=recorded is None))
                logger.info("%s", planned[-1])
        return planned

    def _reperiod_of(self, rule: Rule, now: float) -> Planned | None:
        """The next grab of ``rule`` (with ``every``) moved to one new period after its last grab, when its
        last grab was claimed under another period (or a cron); None when it was not, or that time is
        past (the grab is then due now)."""
        key = self.keys.grab(rule.site)
        claimed = self.server.hget(key, "every")
        period = period_of(rule)
        if claimed is None or decoded(claimed) == period:
            return None
        last = self.server.hget(key, "last")
        due = max((now if last is None else float(decoded(last))) + float(period), now)
        if not self._reperiod(keys=[key], args=[claimed, period, f"{due:.3f}", f"{now:.3f}"]) or due <= now:
            return None
        return Planned(rule.site, due, first=False)

    def upcoming(self, rules: Iterable[Rule]) -> list[tuple[float, str]]:
        """The next grab recorded of each of ``rules`` that has one (a rule with ``every`` or ``cron``,
        planned or grabbed already), as ``(epoch seconds, site)``, the earliest first; one whose recorded
        time is no number (its grab hash edited by hand, which the tick says of the site) is left out."""
        rules = self.readable(rules)
        pipe = self.server.pipeline(transaction=False)
        for rule in rules:
            pipe.hget(self.keys.grab(rule.site), "next")
        upcoming = []
        for rule, due in zip(rules, pipe.execute(), strict=True):
            if due is not None and (rule.every or rule.cron):
                with contextlib.suppress(ValueError):
                    upcoming.append((float(decoded(due)), rule.site))
        return sorted(upcoming)

    def _boost(self, state: dict[str, str]) -> int:
        """Priority over other sites' grabs: the site's yield (0 to 1) times ``yield_boost``; a site never
        grabbed yet counts as productive."""
        return round(self.yield_boost * float(state.get("yield", 1.0)))

    def _seed(self, rule: Rule, job: str, boost: int) -> None:
        # The grab fetches its listing pages and a discover rule's seeds again, whose acks delete their
        # dead letters found by name: one written unnamed (an older worker's) is named first.
        LeasedQueue(self.server, self.keys).index_all_dead()
        enqueue_job(
            self.server,
            self.keys,
            [rule],
            job=job,
            kind="grab",
            boost=boost,
            lease_seconds=self.lease_seconds,
        )
        key = self.keys.grab(rule.site)
        pipe = self.server.pipeline()
        pipe.hset(key, "job", job)
        pipe.hdel(key, "seeding")
        pipe.execute()

    # --- the one active scheduler ------------------------------------------------------------------------

    def lead(self, seconds: float) -> bool:
        """Become (or stay) the active scheduler for ``seconds``; False while another one is."""
        milliseconds = max(int(seconds * 1000), 1)
        if self._renew(keys=[self.keys.leader], args=[self.owner, milliseconds]):
            return True
        if not self.server.set(self.keys.leader, self.owner, nx=True, px=milliseconds):
            return False
        where = {"owner": self.owner, "pid": os.getpid(), "pid_space": pid_space()}
        self.server.set(self.keys.leader_process, json.dumps(where))
        return True

    def publish_rule_errors(self, errors: Mapping[str, str]) -> None:
        """Replace the rule errors this scheduler's folder has (site -> its file's errors) in Redis."""
        pipe = self.server.pipeline(transaction=True)
        pipe.delete(self.keys.rule_errors)
        for site, error in errors.items():
            pipe.hset(self.keys.rule_errors, site, json.dumps({"scheduler": self.owner, "error": error}))
        pipe.execute()

    def resign(self) -> None:
        """Let another scheduler take over at once."""
        self._resign(keys=[self.keys.leader], args=[self.owner])

    def run(
        self,
        load: Callable[[], Iterable[Rule]],
        stop: threading.Event,
        *,
        leader_seconds: float = 30.0,
        rule_errors: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """Tick every ``tick_seconds`` while leader (rules re-read each tick), until ``stop`` is set. Says
        whether it is the active scheduler when it starts and each time that changes, and names the sites
        whose rule has no schedule at its first tick (and each such site added later, once). Each tick
        writes ``rule_errors`` (site -> the errors of its rule file, at the last ``load``) for `crawler
        status` on other machines, whose rules folder may be sound, and checks that Redis still holds the
        crawler's data (:class:`~crawler.redisio.since.DataMarker`: a loss is logged once). A failure of the
        ticks is said once for each kind in a row, and its end once (:meth:`_works_again`); so is an
        unexpected error (a fault of the scheduler's own), with its traceback, then once a minute with the
        count of the ticks it failed, and it is written for `crawler status` (:meth:`_broken`)."""
        leading: bool | None = None
        # The kind of the failure of the ticks (:func:`_kind`) while they fail: each said once.
        failing: str | None = None
        steady = SteadyWrites()
        # The unexpected error the ticks fail with while they do (:meth:`_broken`).
        broken: _Broken | None = None
        unscheduled: set[str] = set()
        try:
            while not stop.is_set():
                try:
                    self.marker.check(self.clock())
                    now_leading = self.lead(leader_seconds)
                    if now_leading != leading:
                        if now_leading:
                            logger.info("%s: active scheduler", self.owner)
                        else:
                            logger.warning(
                                "%s: another scheduler, %s, is active; this one waits, and takes over within"
                                " %s of its stop (SCHEDULE_LEADER_SECONDS)",
                                self.owner,
                                decoded(self.server.get(self.keys.leader) or b"(gone since)"),
                                span(leader_seconds),
                            )
                        leading = now_leading
                    if leading:
                        rules = list(load())
                        _say_unscheduled(rules, unscheduled)
                        self.tick(rules)
                        if rule_errors is not None:
                            self.publish_rule_errors(rule_errors())
                    if failing is not None and self._works_again(failing, steady):
                        logger.info("%s: the scheduler works again", self.owner, extra=TOLD)
                        failing = None
                    if broken is not None:
                        self._mended(broken)
                        broken = None
                except (redis.RedisError, RuleError) as exc:
                    # Redis away (a restart, a failover), or the rules folder unreadable: next tick.
                    steady.reset()
                    why = self._why(exc)
                    kind = _kind(exc, why)
                    if kind != failing:
                        logger.error(
                            "%s: a tick failed (%s); trying again every tick%s", self.owner, exc, why
                        )
                        failing = kind
                except Exception as exc:  # noqa: BLE001 - a fault of the scheduler's: said, the next tick tries
                    broken = self._broken(exc, broken)
                stop.wait(self.tick_seconds)
        finally:
            if leading:
                with contextlib.suppress(redis.RedisError):
                    self.resign()

    def _broken(self, failure: Exception, broken: _Broken | None) -> _Broken:
        """A tick failed with ``failure``, an unexpected error (neither Redis's nor the rules folder's);
        ``broken``, the one the ticks failed with before it, if any. A new one (another type, or raised at
        another line) is logged with its traceback; one that goes on is counted, and said with its count
        at most once a ``TICK_FAILURE_REMINDER_SECONDS``. Written in Redis for `crawler status`, when
        Redis takes it."""
        now = self.monotonic()
        reason = f"{type(failure).__name__}: {failure}"
        place = _raised_at(failure)
        if broken is None or broken.place != place:
            if broken is not None:
                self._say_unsaid(broken, now)
            logger.error(
                "%s: a tick failed with an unexpected error, %s (a fault of the scheduler: its traceback"
                " follows); no grab is queued while it lasts: trying again every tick, the ticks that fail"
                " so said once a minute with their count",
                self.owner,
                reason,
                exc_info=failure,
            )
            broken = _Broken(place, reason, since=time.time(), said=now)
        else:
            broken.reason = reason
            broken.ticks += 1
            broken.unsaid += 1
            if now - broken.said >= TICK_FAILURE_REMINDER_SECONDS:
                self._say_unsaid(broken, now)
        record = {"scheduler": self.owner, "error": reason, "since": broken.since, "ticks": broken.ticks}
        with contextlib.suppress(redis.RedisError):
            self.server.set(self.keys.tick_failure, json.dumps(record))
        return broken

    def _say_unsaid(self, broken: _Broken, now: float) -> None:
        if broken.unsaid:
            logger.error(
                "%s: %s failed so in the %.0f s since the last line (%s in all), the last: %s",
                self.owner,
                counted(broken.unsaid, "more tick"),
                now - broken.said,
                counted(broken.ticks, "tick"),
                broken.reason,
            )
        broken.said, broken.unsaid = now, 0

    def _mended(self, broken: _Broken) -> None:
        """A tick went through after ``broken`` failed the ticks before it: said, with their count, and its
        record for `crawler status` removed."""
        logger.info(
            "%s: the scheduler works again, after %s failed with %s",
            self.owner,
            counted(broken.ticks, "tick"),
            broken.reason,
            extra=TOLD,
        )
        with contextlib.suppress(redis.RedisError):
            self.server.delete(self.keys.tick_failure)

    def _works_again(self, failing: str, steady: SteadyWrites) -> bool:
        """A tick went through while the ticks failed of the kind ``failing``: the failure is over, but one
        of Redis refusing writes only once Redis takes them (a tick that writes nothing goes through a full
        Redis) and they went through for ``STEADY_SECONDS``, none refused (:class:`SteadyWrites`, as a
        worker's outage: a Redis whose memory hovers at its maxmemory refuses every other tick)."""
        if failing != "refuses writes":
            return True
        if writes_refused(self.server) is not None:
            steady.reset()
            return False
        return steady.over(self.monotonic()) is not None

    def _why(self, failure: Exception) -> str:
        """``; `` and what a Redis that runs but refused a tick means and its fix: it refuses writes
        (``MISCONF``, ``OOM``, ``READONLY``: :func:`writes_refused`) or turns the scheduler away (a password,
        its ``maxclients``: :func:`turned_away`); nothing for another failure, or when Redis cannot say."""
        if not isinstance(failure, redis.RedisError):
            return ""
        if (turned := turned_away(failure)) is not None:
            return f"; {turned}"
        if not isinstance(failure, redis.ResponseError):
            return ""
        try:
            refused = writes_refused(self.server)
        except redis.RedisError:
            return ""
        return f"; {refused}" if refused else ""


@dataclass(slots=True)
class _Broken:
    """The unexpected error the ticks fail with: where it was raised (what tells one error from another),
    the last one's type and message, when it began (epoch seconds), the ticks it failed, and those since
    its last line (said at ``said``, monotonic seconds)."""

    place: str
    reason: str
    since: float
    said: float
    ticks: int = 1
    unsaid: int = 0


def _raised_at(failure: BaseException) -> str:
    """``TypeError at /path/grabs.py:312``: the type of ``failure`` and the line that raised it."""
    frames = traceback.extract_tb(failure.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(failure).__name__}{where}"


def _kind(failure: Exception, why: str) -> str:
    """The kind of a tick's ``failure``, whose cause the scheduler said as ``why`` (:meth:`_why`): the
    rules folder unreadable, Redis turning the scheduler away, refusing writes, or down (any other)."""
    if isinstance(failure, RuleError):
        return "rules"
    if isinstance(failure, redis.RedisError) and turned_away(failure) is not None:
        return "turned away"
    return "refuses writes" if why else "down"


def _say_unscheduled(rules: list[Rule], said: set[str]) -> None:
    """Log the sites of ``rules`` whose rule has no schedule and that are not in ``said`` (then add them):
    only a temp crawl reads them."""
    new = sorted(
        rule.site for rule in rules if rule.every is None and rule.cron is None and rule.site not in said
    )
    if new:
        said.update(new)
        logger.info(
            "temp crawls only: %s (no schedule in %s)",
            ", ".join(new),
            "its rule" if len(new) == 1 else "their rules",
        )


def rule_loader(
    folder: Path, *, worker_logs: bool = False
) -> tuple[Callable[[], list[Rule]], Callable[[], dict[str, str]]]:
    """Reads the rules folder afresh (edits take effect at the next tick), parsing the files changed since
    the last read alone (:class:`~crawler.rules.RuleFiles`); broken files are logged once, and once again
    when mended (INFO: the site is scheduled again). With ``worker_logs`` (``crawler run``), the errors of
    the folder as it is now are not: the worker started beside the scheduler logs them as it loads the same
    folder. Beside the loader, the errors of its last read: site -> its file's errors."""
    files = RuleFiles()
    errors: dict[str, str] = {}
    reported: set[str] = set()
    broken: dict[str, str] = {}  # site -> its file, broken at the last read
    if worker_logs:
        first = load_rules(folder, files=files)
        reported.update(str(error) for error in first.errors)
        broken.update(first.broken)

    def load() -> list[Rule]:
        ruleset = load_rules(folder, files=files)
        for error in ruleset.errors:
            if str(error) not in reported:
                reported.add(str(error))
                logger.error("rule error, site not scheduled: %s", error)
        for site, file in list(broken.items()):
            if site in ruleset.broken:
                continue
            del broken[site]
            reported.difference_update([error for error in reported if error.startswith(f"{file}: ")])
            if site in ruleset.rules:
                logger.info(
                    "rule of site %s read again (%s): its error is mended, its grabs go on",
                    site,
                    ruleset.rules[site].path,
                )
        broken.update(ruleset.broken)
        errors.clear()
        for site, file in ruleset.broken.items():
            errors[site] = "; ".join(str(error) for error in ruleset.errors if error.file == file)
        return list(ruleset.rules.values())

    return load, lambda: dict(errors)
