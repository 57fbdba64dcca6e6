"""One clock for the times that machines compare: Redis's (``TIME``).

The clocks of the machines of a crawl differ (no NTP, a virtual machine resumed, a clock set by hand), so a
time one machine writes into shared state and another compares goes by Redis's clock: a job's ``created``
and ``ended``, an article's ``fetched_at`` and ``first_seen``, a grab's ``last`` and ``next``, a heartbeat.
Lua scripts read ``TIME`` themselves; the other writers use :func:`shared_now`, this machine's clock plus
its offset to Redis's. Each ``TIME`` this process reads (:func:`redis_clock`: at connect, at each heartbeat
of a worker, at each tick of the scheduler) measures the offset again: no round trip of its own, none per
page.

A reading of ``TIME`` taken between ``before`` and ``after`` (this machine's clock) bounds the offset:
between ``redis - after`` and ``redis - before``. The offset kept is moved only as far as needed to lie
within those bounds, so that on Redis's own machine it stays 0 (its clock is Redis's: the bounds always
hold 0) and elsewhere a slow reply never undoes a close measurement; a clock that jumps (NTP) is followed
at the next reading.
"""

from __future__ import annotations

import time

import redis

__all__ = ["redis_clock", "shared_now"]

# Redis's TIME gives whole microseconds (truncated), and an epoch time as a float is exact to about 0.25 µs:
# a reading may seem up to this much earlier than the moment it was taken.
_RESOLUTION = 2e-6

# Seconds to add to this machine's clock to read Redis's: 0 until the first reading.
_offset = 0.0


def redis_clock(server: redis.Redis) -> float:
    """Redis's clock (``TIME``, epoch seconds), by which the times that machines compare are stamped and
    judged: the clocks of the machines may differ, or jump (NTP). The reading measures this process's
    offset to it again (:func:`shared_now`)."""
    global _offset  # noqa: PLW0603 - the process's one offset, read by shared_now
    before = time.time()
    seconds, microseconds = server.time()
    after = time.time()
    now = float(seconds) + microseconds / 1e6
    _offset = min(max(_offset, now - after), now + _RESOLUTION - before)
    return now


def shared_now() -> float:
    """Now by Redis's clock (epoch seconds), read without a round trip: this machine's clock plus its
    offset to Redis's, measured by the last :func:`redis_clock` (within that reading's round trip)."""
    return time.time() + _offset
