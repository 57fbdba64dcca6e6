"""Regular grabs: when each rule's index pages are due, and seeding them exactly once per period.

A rule's period is ``schedule.every`` (slots aligned on multiples of the period since the Unix epoch, so
every scheduler computes the same ones) or ``schedule.cron`` (5 fields, UTC); a rule with neither is
grabbed every ``SCHEDULE_DEFAULT_EVERY``. The state of each site lives in Redis, so it survives a restart
of any scheduler:

``crawler:grab:<site>`` (hash)
    ``next`` (epoch seconds the next grab is due), ``last`` (when the last one was seeded), ``job`` (its
    job id), ``seeding`` (a job claimed but not yet queued), ``grabs`` (how many so far).

1. ``claim`` (one Lua script): if ``next`` is missing or not after now, set ``next`` to the following
   slot, ``last`` to now and ``seeding`` to a new job id, and say yes; any other scheduler asking for the
   same period is told no. Two schedulers, or one restarted, never seed a period twice.
2. The site's start URLs are queued as that job (:func:`crawler.runner.enqueue_job`), then ``seeding``
   is cleared. A scheduler that died between the two leaves ``seeding`` set: the next tick queues that
   same job again (the queue stores an identical request once), so no period is skipped either.
3. Periods missed while no scheduler ran are not replayed one by one: the first tick after seeds the
   current one (an index page read once shows what a missed read would have).

``crawler:scheduler:leader`` (a string with a time-to-live) names the one active scheduler of ``crawler
schedule``; the others wait, and take over within ``SCHEDULE_LEADER_SECONDS`` when it stops.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis
from croniter import croniter

from crawler.queue import Keys
from crawler.rules import Rule
from crawler.runner import enqueue_job

__all__ = ["DEFAULT_EVERY", "GrabScheduler", "Seeded", "next_slot"]

logger = logging.getLogger(__name__)

# SCHEDULE_DEFAULT_EVERY when the settings do not say (crawler/settings.py does).
DEFAULT_EVERY = timedelta(hours=1)

_CLAIM = """
local due = redis.call('HGET', KEYS[1], 'next')
if due and tonumber(due) > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[2], 'last', ARGV[1], 'seeding', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'grabs', 1)
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


def next_slot(rule: Rule, moment: float, default_every: timedelta = DEFAULT_EVERY) -> float:
    """The first slot of ``rule``'s schedule strictly after ``moment`` (epoch seconds)."""
    if rule.cron is not None:
        start = datetime.fromtimestamp(moment, UTC)
        return float(croniter(rule.cron, start).get_next(float))
    period = (rule.every or default_every).total_seconds()
    return (math.floor(moment / period) + 1) * period


@dataclass(frozen=True)
class Seeded:
    """A grab queued by :meth:`GrabScheduler.tick`."""

    site: str
    job: str
    next_due: float


class GrabScheduler:
    """Seeds the regular grabs of ``rules`` into the shared queue (see the module's docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        prefix: str,
        *,
        lease_seconds: float = 60.0,
        default_every: timedelta = DEFAULT_EVERY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.server = server
        self.keys = Keys(prefix)
        self.lease_seconds = lease_seconds
        self.default_every = default_every
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._claim = server.register_script(_CLAIM)
        self._renew = server.register_script(_RENEW_LEADER)
        self._resign = server.register_script(_RESIGN_LEADER)

    def state_key(self, site: str) -> str:
        return f"{self.keys.prefix}:grab:{site}"

    @property
    def leader_key(self) -> str:
        return f"{self.keys.prefix}:scheduler:leader"

    def tick(self, rules: Iterable[Rule]) -> list[Seeded]:
        """Seed every rule whose grab is due now, and finish any seeding a stopped scheduler left."""
        now = self.clock()
        seeded = []
        for rule in rules:
            key = self.state_key(rule.site)
            unfinished = self.server.hget(key, "seeding")
            if unfinished is not None:
                self._seed(rule, unfinished.decode() if isinstance(unfinished, bytes) else str(unfinished))
                continue
            job = uuid.uuid4().hex[:12]
            following = next_slot(rule, now, self.default_every)
            if not self._claim(keys=[key], args=[f"{now:.3f}", f"{following:.3f}", job]):
                continue
            self._seed(rule, job)
            seeded.append(Seeded(rule.site, job, following))
            logger.info("grab of %s queued as job %s; next at %s", rule.site, job, _when(following))
        return seeded

    def _seed(self, rule: Rule, job: str) -> None:
        enqueue_job(
            self.server, self.keys.prefix, [rule], job=job, kind="grab", lease_seconds=self.lease_seconds
        )
        key = self.state_key(rule.site)
        pipe = self.server.pipeline()
        pipe.hset(key, "job", job)
        pipe.hdel(key, "seeding")
        pipe.execute()

    # --- the one active scheduler ------------------------------------------------------------------------

    def lead(self, seconds: float) -> bool:
        """Become (or stay) the active scheduler for ``seconds``; False while another one is."""
        milliseconds = max(int(seconds * 1000), 1)
        if self._renew(keys=[self.leader_key], args=[self.owner, milliseconds]):
            return True
        return bool(self.server.set(self.leader_key, self.owner, nx=True, px=milliseconds))

    def resign(self) -> None:
        """Let another scheduler take over at once."""
        self._resign(keys=[self.leader_key], args=[self.owner])

    def run(
        self,
        load: Callable[[], Iterable[Rule]],
        stop: threading.Event,
        *,
        tick_seconds: float = 5.0,
        leader_seconds: float = 30.0,
    ) -> None:
        """Tick every ``tick_seconds`` while leader (rules re-read each tick), until ``stop`` is set."""
        leading = False
        try:
            while not stop.is_set():
                now_leading = self.lead(leader_seconds)
                if now_leading != leading:
                    logger.warning(
                        "%s: %s",
                        self.owner,
                        "active scheduler" if now_leading else "another scheduler is active; waiting",
                    )
                    leading = now_leading
                if leading:
                    self.tick(load())
                stop.wait(tick_seconds)
        finally:
            if leading:
                self.resign()


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")
