"""The shared request queue with leases: a request taken by a worker is leased, never deleted.

scrapy-redis pops a request and deletes it: a worker that dies loses what it held. Here (all in Redis, each
step one Lua script, so workers on many machines agree):

- ``crawler:queue`` is a sorted set of JSON requests; the score orders by priority, then by arrival
  (FIFO within a priority). An identical request pushed twice is stored once.
- ``pop`` moves the first request to ``crawler:leases`` (score = lease deadline) and remembers its queue
  score in ``crawler:lease-scores``; the worker keeps the member, which names the lease, in the
  request's metadata.
- ``ack`` removes the lease once the request's items are stored and its links queued; ``renew`` pushes the
  deadlines of a live worker's leases forward; ``requeue_expired`` puts every lease past its deadline back
  in the queue with its old score (a worker killed with SIGKILL stops renewing, so what it held returns).
- ``handoff`` ends a lease and queues the request that replaces it (a retry, a redirect) in one step:
  the work goes on under a new lease, the old one is never left behind.
- ``defer`` ends a lease for now (an article that could not be stored): the request waits in
  ``crawler:delayed`` (score: when it may be taken again) and ``queue_due`` returns it to the queue, at
  most ``max_attempts`` times. A retry handed on with a backoff waits there too.
- ``dead_letter`` ends a lease for good with a reason (an error after its retries, an entry that is no
  request): the member moves to ``crawler:dead`` (hash: member -> JSON with the reason), from where
  ``requeue_dead`` puts it back in the queue.
- ``crawler:pending`` counts, per site, the requests queued or leased and not yet ended, and
  ``crawler:job:<id>`` does the same for a job (``pending``): a job is done when its count is zero.

Every request that enters the queue ends exactly once: acknowledged (stored, or nothing to store), or
dead-lettered with its reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import redis

from crawler.keys import Keys
from crawler.redisio.connection import decoded

__all__ = ["LeasedQueue"]

# The queue score is -priority * 2**40 + an arrival counter (in _PUSH): priorities are small integers
# (rules say 0 by default) and the counter fills the rest of a double's 53-bit mantissa, so requests of
# one priority come out in the order they went in.

_PUSH = """
local score = -tonumber(ARGV[1]) * 1099511627776 + redis.call('INCR', KEYS[4])
local added = redis.call('ZADD', KEYS[1], 'NX', score, ARGV[2])
if added == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
  if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[3], 'pending', 1) end
end
return added
"""

_POP = """
local item = redis.call('ZPOPMIN', KEYS[1])
if #item == 0 then return false end
redis.call('ZADD', KEYS[2], ARGV[1], item[1])
redis.call('HSET', KEYS[3], item[1], item[2])
return item[1]
"""

_ACK = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[2], -1)
if ARGV[3] ~= '' then
  redis.call('HINCRBY', KEYS[4], 'pending', -1)
  if ARGV[4] ~= '0' then redis.call('HINCRBY', KEYS[4], 'fetched', ARGV[4]) end
  if ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[4], 'stored', ARGV[5]) end
end
return 1
"""

# KEYS: leases, lease-scores, queue, pending, job (or ''), sequence, attempts, delayed.
# ARGV: the old lease, the new member, its priority, site, job (or ''), the time before which it may not
# be taken (0: at once). A later one waits in the delayed set until queue_due moves it to the queue (a
# retry's backoff), with its queue score kept in lease-scores.
# A lease that is no longer held (it expired: its request is back in the queue, or with another worker)
# hands nothing on: the request goes on from the queue.
_HANDOFF = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return -1 end
redis.call('HDEL', KEYS[2], ARGV[1])
local attempts = redis.call('HGET', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[7], ARGV[1])
local score = -tonumber(ARGV[3]) * 1099511627776 + redis.call('INCR', KEYS[6])
local added = 0
if tonumber(ARGV[6]) > 0 then
  local queued = redis.call('ZSCORE', KEYS[3], ARGV[2])
  if not queued and redis.call('ZADD', KEYS[8], 'NX', ARGV[6], ARGV[2]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[2], score)
    added = 1
  end
else
  added = redis.call('ZADD', KEYS[3], 'NX', score, ARGV[2])
end
if added == 1 then
  if attempts then redis.call('HSET', KEYS[7], ARGV[2], attempts) end
else
  redis.call('HINCRBY', KEYS[4], ARGV[4], -1)
  if ARGV[5] ~= '' then redis.call('HINCRBY', KEYS[5], 'pending', -1) end
end
return added
"""

# KEYS: leases, attempts, delayed. ARGV: the lease, when it may be taken again, the most attempts.
# Returns the attempts so far, 0 when they are used up (the lease is kept: the caller dead-letters it),
# -1 when not held. A deferred request leaves the leases for the delayed set (its queue score stays).
_DEFER = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return -1 end
local attempts = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
if attempts > tonumber(ARGV[3]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return attempts
"""

# KEYS: leases, lease-scores, pending, job (or ''), dead, attempts. ARGV: the lease, site (or '' for an
# entry that never was a request: no counter counted it), job (or ''), the record (JSON).
_DEAD = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
if ARGV[2] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[2], -1) end
if ARGV[3] ~= '' then
  redis.call('HINCRBY', KEYS[4], 'pending', -1)
  redis.call('HINCRBY', KEYS[4], 'errors', 1)
end
return 1
"""

# KEYS: dead, queue, pending, job (or ''), sequence. ARGV: the member, its priority, site, job (or '').
_REQUEUE_DEAD = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
local score = -tonumber(ARGV[2]) * 1099511627776 + redis.call('INCR', KEYS[5])
if redis.call('ZADD', KEYS[2], 'NX', score, ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
if ARGV[4] ~= '' then
  redis.call('HINCRBY', KEYS[4], 'pending', 1)
  redis.call('HINCRBY', KEYS[4], 'errors', -1)
end
return 1
"""

_RENEW = """
local renewed = 0
for i = 2, #ARGV do
  renewed = renewed + redis.call('ZADD', KEYS[1], 'XX', 'CH', ARGV[1], ARGV[i])
end
return renewed
"""

# KEYS: a sorted set by time (the leases, or the delayed requests), lease-scores, queue. ARGV: now, the
# most to move. Every member whose time has passed goes back to the queue with its old score.
_REQUEUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  local score = redis.call('HGET', KEYS[2], member) or '0'
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
  redis.call('ZADD', KEYS[3], score, member)
end
return #due
"""

_RELEASE = """
local released = 0
for i = 1, #ARGV do
  local score = redis.call('HGET', KEYS[2], ARGV[i])
  if score and redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[3], score, ARGV[i])
    released = released + 1
  end
end
return released
"""


class LeasedQueue:
    """The shared queue of encoded requests with leases; see the module docstring.

    A member is the request's canonical JSON (:mod:`crawler.requests` encodes and decodes it); the
    caller gives its priority, site and job, which the counters need.
    """

    def __init__(self, server: redis.Redis, keys: Keys, *, lease_seconds: float = 60.0) -> None:
        self.server = server
        self.keys = keys
        self.lease_seconds = lease_seconds
        self._push = server.register_script(_PUSH)
        self._pop = server.register_script(_POP)
        self._ack = server.register_script(_ACK)
        self._renew = server.register_script(_RENEW)
        self._requeue = server.register_script(_REQUEUE)
        self._release = server.register_script(_RELEASE)
        self._handoff = server.register_script(_HANDOFF)
        self._defer = server.register_script(_DEFER)
        self._dead = server.register_script(_DEAD)
        self._requeue_dead = server.register_script(_REQUEUE_DEAD)

    def __len__(self) -> int:
        return int(self.server.zcard(self.keys.queue))

    def push(self, member: bytes, *, priority: int, site: str, job: str | None) -> bool:
        """Queue ``member``; False when the very same member is already queued."""
        keys = [self.keys.queue, self.keys.pending, self.keys.job(job) if job else "", self.keys.sequence]
        return bool(self._push(keys=keys, args=[int(priority), member, site, job or ""]))

    def pop(self) -> str | None:
        """Lease the first member for ``lease_seconds``; None when the queue is empty. The member (as
        text) names the lease."""
        deadline = time.time() + self.lease_seconds
        member = self._pop(keys=[self.keys.queue, self.keys.leases, self.keys.lease_scores], args=[deadline])
        if not member:
            return None
        return decoded(member)

    def ack(self, lease: str, *, site: str, job: str | None, fetched: int = 0, stored: int = 0) -> bool:
        """End ``lease`` for good: its work is done. False if it was not leased (any more).

        ``fetched`` and ``stored`` go to its job's counters in the same call (one round trip a page)."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.attempts,
        ]
        return bool(self._ack(keys=keys, args=[lease, site, job or "", fetched, stored]))

    def handoff(
        self, lease: str, member: bytes, *, priority: int, site: str, job: str | None, delay: float = 0.0
    ) -> bool:
        """End ``lease`` and queue ``member`` in its place (a retry or a redirect of its request), in one
        step; with a ``delay`` (seconds), it is queued only that much later (a retry's backoff). False
        when the lease was no longer held (its request is queued again, or with another worker) or the
        very same member is queued already: nothing more to do either way."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.queue,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.sequence,
            self.keys.attempts,
            self.keys.delayed,
        ]
        deadline = time.time() + delay if delay > 0 else 0.0
        args: list[str | bytes | int | float] = [lease, member, int(priority), site, job or "", deadline]
        return int(self._handoff(keys=keys, args=args)) == 1

    def defer(self, lease: str, seconds: float, *, max_attempts: int) -> int:
        """End ``lease`` for now and queue its request again in ``seconds`` (its work could not be finished
        now). Returns the attempts so far; 0 when ``max_attempts`` are used up (the lease is kept:
        dead-letter it), -1 when it was not held any more."""
        keys = [self.keys.leases, self.keys.attempts, self.keys.delayed]
        return int(self._defer(keys=keys, args=[lease, time.time() + seconds, max_attempts]))

    def dead_letter(self, lease: str, record: bytes, *, site: str, job: str | None) -> bool:
        """End ``lease`` for good and keep its member in the dead letters with ``record`` (JSON: the
        reason). ``site`` is empty for an entry that never was a request. False if it was not held."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.dead,
            self.keys.attempts,
        ]
        return bool(self._dead(keys=keys, args=[lease, site, job or "", record]))

    def dead(self) -> dict[str, str]:
        """The dead letters: member -> record (JSON)."""
        records = self.server.hgetall(self.keys.dead)
        return {decoded(member): decoded(record) for member, record in records.items()}

    def requeue_dead(self, member: str, *, priority: int, site: str, job: str | None) -> bool:
        """Put a dead letter back in the queue; False if it is not (or no longer) a dead letter."""
        keys = [
            self.keys.dead,
            self.keys.queue,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.sequence,
        ]
        return bool(self._requeue_dead(keys=keys, args=[member, int(priority), site, job or ""]))

    def drop_dead(self, members: Iterable[str]) -> int:
        """Forget these dead letters for good; returns how many there were."""
        chosen = list(members)
        return int(self.server.hdel(self.keys.dead, *chosen)) if chosen else 0

    def renew(self, members: Iterable[str]) -> int:
        """Move the deadlines of these leases ``lease_seconds`` from now; returns how many were still held."""
        held = list(members)
        if not held:
            return 0
        return int(self._renew(keys=[self.keys.leases], args=[time.time() + self.lease_seconds, *held]))

    def release(self, members: Iterable[str]) -> int:
        """Put these leases back in the queue now (a worker closing with work it has not finished)."""
        held = list(members)
        if not held:
            return 0
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.queue]
        return int(self._release(keys=keys, args=held))

    def requeue_expired(self, now: float | None = None, limit: int = 1000) -> int:
        """Put up to ``limit`` leases whose deadline has passed back in the queue; returns how many."""
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.queue]
        return int(self._requeue(keys=keys, args=[time.time() if now is None else now, limit]))

    def queue_due(self, now: float | None = None, limit: int = 1000) -> int:
        """Move up to ``limit`` delayed requests whose time has come (retries after their backoff, deferred
        ones) into the queue; returns how many."""
        keys = [self.keys.delayed, self.keys.lease_scores, self.keys.queue]
        return int(self._requeue(keys=keys, args=[time.time() if now is None else now, limit]))

    def delayed(self) -> int:
        """Requests waiting for their time (a retry's backoff, a deferred store)."""
        return int(self.server.zcard(self.keys.delayed))

    def leased(self) -> int:
        return int(self.server.zcard(self.keys.leases))

    def pending(self, site: str | None = None) -> int:
        """Requests queued or leased and not yet acknowledged, for one site or all."""
        if site is not None:
            return int(self.server.hget(self.keys.pending, site) or 0)
        return sum(int(count) for count in self.server.hvals(self.keys.pending))

    def job_pending(self, job: str) -> int:
        return int(self.server.hget(self.keys.job(job), "pending") or 0)

    def clear(self) -> None:
        self.server.delete(
            self.keys.queue, self.keys.leases, self.keys.lease_scores, self.keys.pending, self.keys.delayed
        )
