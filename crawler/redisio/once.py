"""Counts added to Redis once, though a flush is sent again: its reply lost, its outcome unknown.

A connection that drops after Redis ran a command and before its reply arrived leaves the client not
knowing whether the command ran: a flush that failed so kept its counts for the next one, which added them
again. So each writer (a worker's site counters, its proxies' health, its copy of a discover link model)
numbers its flushes, and each flush is one Lua call that begins with :data:`ONCE`'s ``first_time()``: the
flush's number is applied only when it is above the writer's last one applied (kept in
:meth:`crawler.keys.Keys.applied`), which it then becomes, in the same call as the counts, so in the same
round trip. A writer sends a flush that failed again with its number, before any later one: a number is
never applied after a higher one (:class:`Flushes` keeps it and sends it so). (The crawler's clients
retry nothing themselves: redis-py, given a connection pool from a URL, makes connections with no
retries.)
A refusal (OOM, READONLY, MISCONF, NOPERM) comes at the call's first write, the mark's: nothing of the
flush was applied, and sending it again applies it.
A writer that ends with its last flush applied (none to send again) deletes its mark (:meth:`Flushes.end`):
a mark is read only by its own writer's flushes, each process's writers are new ones, and a mark left to its
week's life made one key a process start (a temp crawl every 5 minutes kept 2,016).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

import redis

from crawler.keys import Keys
from crawler.redisio.workers import worker_id

__all__ = ["APPLIED_SECONDS", "ONCE", "Flushes"]

# Seconds a writer's mark is kept after its last flush applied. A flush whose reply was lost is sent again
# at each of the writer's next flushes (every SUPERVISION_FLUSH_SECONDS, 2 s; a link model's every
# DISCOVER_SYNC_PAGES pages) until Redis answers, so the mark must outlive the longest time a worker cannot
# reach a Redis that keeps running (a network cut): a week, past any such outage an operator leaves be. It
# is one small key per writer (a worker's counters, its proxies, one per discover rule it learns for),
# which a worker killed, or stopped while Redis failed its last flush, leaves that long.
APPLIED_SECONDS = 7 * 24 * 3600

# KEYS[1]: the writer's mark. ARGV[1]: the flush's number, ARGV[2]: the mark's life in seconds. A mark of
# another type (someone SET it) reads as no flush applied and is written over.
ONCE = """
local function first_time()
  local applied = tonumber(redis.pcall('GET', KEYS[1])) or 0
  if tonumber(ARGV[1]) <= applied then return false end
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return true
end
"""

# Numbers the writers of this process apart (a process may run several crawls, each with its writers).
_writers = itertools.count(1)

Body = TypeVar("Body")
Reply = TypeVar("Reply")


class Flushes(Generic[Body]):
    """The numbered flushes of one writer (``what`` it writes), applied once each (module docstring): each
    ``Body`` is sent through a ``write(number, body)`` of the writer's, which raises ``redis.RedisError``
    when Redis fails it; that flush is then kept, and sent again as it was, with its number, by
    :meth:`again`, which the writer calls before it sends any new one."""

    def __init__(self, keys: Keys, what: str) -> None:
        self.mark = keys.applied(f"{what}:{worker_id()}:{next(_writers)}")
        self._numbers = itertools.count(1)
        self._unsent: tuple[int, Body] | None = None
        # Whether a flush was numbered: the mark may be in Redis.
        self._numbered = False

    @property
    def waiting(self) -> bool:
        """Whether a flush Redis failed waits to be sent again."""
        return self._unsent is not None

    def again(self, write: Callable[[int, Body], Reply]) -> Reply | None:
        """Send the flush Redis failed, if one did, as it was: its reply; None when none waits. Kept still
        when Redis fails it again (``write`` raises)."""
        if self._unsent is None:
            return None
        return self._sent(*self._unsent, write)

    def send(self, body: Body, write: Callable[[int, Body], Reply]) -> Reply:
        """Send ``body`` as a new flush, under the next number: its reply. Kept when Redis fails it
        (``write`` raises), to be sent :meth:`again`, which comes first: this one takes the place of a flush
        kept."""
        self._numbered = True
        return self._sent(next(self._numbers), body, write)

    def end(self, server: redis.Redis) -> None:
        """The writer ends: its mark is deleted when its last flush was applied (none waits to be sent
        again), as no flush will read it again. Redis failing the delete leaves the mark to its
        time-to-live."""
        if self._numbered and self._unsent is None:
            with contextlib.suppress(redis.RedisError):
                server.delete(self.mark)

    def _sent(self, number: int, body: Body, write: Callable[[int, Body], Reply]) -> Reply:
        self._unsent = number, body
        reply = write(number, body)
        self._unsent = None
        return reply
