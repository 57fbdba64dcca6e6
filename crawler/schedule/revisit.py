"""Adaptive revisits of index pages, in the spirit of Nutch's AdaptiveFetchSchedule.

A rule with ``schedule.every`` has its index pages re-read every *interval*, which starts at ``every``
and moves within ``[min, max]`` (the rule's ``schedule.min``/``schedule.max``, else ``every`` times the
``SCHEDULE_ADAPT_MIN_FACTOR``/``SCHEDULE_ADAPT_MAX_FACTOR`` settings):

1. A grab whose first index page shows new articles shortens the interval by ``DEC_RATE``; one that shows
   none (or is answered 304 Not Modified) lengthens it by ``INC_RATE``. A visit read under another
   ``every`` than the site's grab state holds (a worker that has not read the edited rule yet, within
   ``RULES_RELOAD_SECONDS``) adapts nothing: the scheduler moved the site to the edited period.
2. The interval is clamped to the bounds, and the next grab is due one interval after this one started;
   an interval that changed is logged (INFO) with that next grab.
   The shortest bound is never under the scheduler's tick (``SCHEDULE_TICK_SECONDS``): the scheduler
   looks no more often, so a site with news at every grab is grabbed once a tick, and one that then finds
   none slows down from the period it had, not from a shorter one it never had.
3. The site's *yield* (a moving average of "this grab found new articles", 0 to 1) ranks sites: the
   scheduler queues a grab of a high-yield site with a higher priority.

Cron schedules are not adapted (their times are the user's); their visits still count for the yield. A
discover rule's grabs have no index page, so record no visit: its interval stays ``every``.
The state is in the site's hash ``crawler:grab:<site>`` (see :mod:`crawler.schedule.grabs`): ``interval``,
``yield``, ``visits``, ``productive``, ``not_modified``, ``last_new``, ``last_visit``, ``first_visit``,
``last_found`` (the last visit that found new articles); one Lua call per visit updates it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import redis

from crawler import settings as defaults
from crawler.commandline import counted, span
from crawler.keys import Keys
from crawler.redisio.connection import decoded
from crawler.rules import Rule

__all__ = [
    "DEC_RATE",
    "INC_RATE",
    "YIELD_WEIGHT",
    "Revisits",
    "bounds",
    "next_interval",
    "period_of",
    "when",
]

logger = logging.getLogger(__name__)

# Nutch's AdaptiveFetchSchedule defaults (db.fetch.schedule.adaptive.inc_rate / dec_rate): a page that
# changed is visited 20% sooner, one that did not 40% later, so an idle site backs off faster than a busy
# one speeds up.
INC_RATE = 0.4
DEC_RATE = 0.2
# Weight of the newest grab in the yield's moving average: about the last five grabs count.
YIELD_WEIGHT = 0.3

_VISIT = """
local key = KEYS[1]
local now, found, low, high = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local every, inc, dec, weight = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local adaptive, not_modified = ARGV[9] == '1', ARGV[10] == '1'
local productive = found > 0 and 1 or 0
local yield = tonumber(redis.call('HGET', key, 'yield') or productive)
yield = (1 - weight) * yield + weight * productive
redis.call('HSET', key, 'yield', tostring(yield), 'last_new', found, 'last_visit', ARGV[1])
redis.call('HSETNX', key, 'first_visit', ARGV[1])
if productive == 1 then redis.call('HSET', key, 'last_found', ARGV[1]) end
redis.call('HINCRBY', key, 'visits', 1)
redis.call('HINCRBY', key, 'productive', productive)
if not_modified then redis.call('HINCRBY', key, 'not_modified', 1) end
if not adaptive then return {tostring(every)} end
local claimed = redis.call('HGET', key, 'every')
if claimed and claimed ~= ARGV[11] then return {redis.call('HGET', key, 'interval') or tostring(every)} end
local previous = tonumber(redis.call('HGET', key, 'interval') or every)
local interval = previous
if productive == 1 then interval = interval * (1 - dec) else interval = interval * (1 + inc) end
interval = math.max(low, math.min(high, interval))
local last = tonumber(redis.call('HGET', key, 'last') or now)
local planned = redis.call('HGET', key, 'next') or ''
redis.call('HSET', key, 'interval', tostring(interval), 'next', tostring(last + interval))
return {tostring(interval), tostring(previous), tostring(last + interval), planned}
"""


def bounds(
    rule: Rule, min_factor: float, max_factor: float, *, tick: float = defaults.SCHEDULE_TICK_SECONDS
) -> tuple[float, float]:
    """Seconds: the shortest and the longest interval of ``rule``'s index pages, neither under the
    scheduler's ``tick``."""
    every = (rule.every or timedelta(0)).total_seconds()
    low = rule.every_min.total_seconds() if rule.every_min is not None else every * min_factor
    high = rule.every_max.total_seconds() if rule.every_max is not None else every * max_factor
    low = max(min(low, every), tick)
    return low, max(high, every, low)


def period_of(rule: Rule) -> str:
    """``rule``'s period as the site's grab state keeps it (``every``, :mod:`crawler.schedule.grabs`):
    ``every`` in seconds, ``cron`` for a cron rule."""
    return "cron" if rule.every is None else f"{rule.every.total_seconds():g}"


def next_interval(interval: float, found_new: int, low: float, high: float) -> float:
    """The interval after a visit that found ``found_new`` new articles (what the Lua script computes)."""
    changed = interval * (1 - DEC_RATE) if found_new > 0 else interval * (1 + INC_RATE)
    return max(low, min(high, changed))


class Revisits:
    """Records the visits of regular grabs (see the module's docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        keys: Keys,
        *,
        min_factor: float,
        max_factor: float,
        tick_seconds: float = defaults.SCHEDULE_TICK_SECONDS,
    ) -> None:
        self.server = server
        self.keys = keys
        self.min_factor = min_factor
        self.max_factor = max_factor
        self.tick_seconds = tick_seconds
        self._visit = server.register_script(_VISIT)

    def record(self, rule: Rule, found_new: int, now: float, *, not_modified: bool = False) -> float:
        """A grab's first index page was read: ``found_new`` article links the Bloom filter had not seen.
        Returns the site's interval from now on (seconds); a changed one is logged with the next grab."""
        low, high = bounds(rule, self.min_factor, self.max_factor, tick=self.tick_seconds)
        every = (rule.every or timedelta(0)).total_seconds()
        args: list[str | int | float] = [
            f"{now:.3f}",
            found_new,
            low,
            high,
            every,
            INC_RATE,
            DEC_RATE,
            YIELD_WEIGHT,
            "1" if rule.every is not None else "0",
            "1" if not_modified else "0",
            period_of(rule),
        ]
        interval, *changed = (
            decoded(value) for value in self._visit(keys=[self.keys.grab(rule.site)], args=args)
        )
        if changed and changed[0] != interval:
            previous, following, planned = changed
            moved = (
                f" (was {when(float(planned))})"
                if planned and when(float(planned)) != when(float(following))
                else ""
            )
            logger.info(
                "%s: %s: its period is now %s (was %s); next grab at %s%s",
                rule.site,
                "its grab was answered 304 Not Modified"
                if not_modified
                else f"its first index page gave {counted(found_new, 'new article link')}",
                span(float(interval)),
                span(float(previous)),
                when(float(following)),
                moved,
            )
        return float(interval)


def when(moment: float) -> str:
    """``moment`` in UTC to the second, in the form status and the other commands give it:
    ``2026-11-20T08:00:00Z``."""
    return f"{datetime.fromtimestamp(moment, UTC):%Y-%m-%dT%H:%M:%SZ}"
