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
- ``crawler:pending`` counts, per site, the requests queued or leased and not yet acknowledged, and
  ``crawler:job:<id>`` does the same for a job (``pending``): a job is done when its count is zero.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import redis

from crawler.keys import Keys

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
redis.call('HINCRBY', KEYS[3], ARGV[2], -1)
if ARGV[3] ~= '' then
  redis.call('HINCRBY', KEYS[4], 'pending', -1)
  if ARGV[4] ~= '0' then redis.call('HINCRBY', KEYS[4], 'fetched', ARGV[4]) end
  if ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[4], 'stored', ARGV[5]) end
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

_REQUEUE = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(expired) do
  local score = redis.call('HGET', KEYS[2], member) or '0'
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
  redis.call('ZADD', KEYS[3], score, member)
end
return #expired
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
        return member.decode("utf-8") if isinstance(member, bytes) else str(member)

    def ack(self, lease: str, *, site: str, job: str | None, fetched: int = 0, stored: int = 0) -> bool:
        """End ``lease`` for good: its work is done. False if it was not leased (any more).

        ``fetched`` and ``stored`` go to its job's counters in the same call (one round trip a page)."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(job) if job else "",
        ]
        return bool(self._ack(keys=keys, args=[lease, site, job or "", fetched, stored]))

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
        self.server.delete(self.keys.queue, self.keys.leases, self.keys.lease_scores, self.keys.pending)
