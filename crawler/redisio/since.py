"""When this Redis's crawler data began, and when a worker or the scheduler found it lost.

A Redis emptied under a running service (``FLUSHALL``, ``REPLICAOF`` of an empty primary, a restart with no
append-only file) fails no call: the workers and the scheduler go on with an empty queue, no URL seen, no
dead letter and no counter, and nothing would say so. So ``crawler:since`` (a hash) holds ``began``, when
the crawler's data in this Redis began (epoch seconds, Redis's clock), written by the first worker or
scheduler that finds it missing; the loss takes it with the rest. A process that saw it and finds it gone
(:meth:`DataMarker.check`, at each heartbeat of a worker and each tick of the scheduler, never per request)
writes it again with ``began`` and ``lost`` the time it found that, ``held`` when it last saw it there (the
loss came between the two) and ``by`` (its id), and logs one error that names what was lost and what
happens now; another process that saw the old one and finds this one logs the same error, found by that
process; in one process (``crawler run``: a worker and the scheduler) it is said once. A process that
starts on an emptied Redis, having seen nothing before, writes ``began`` alone; one that saw the old
``began`` adds ``lost`` to it. ``crawler status`` shows both (:func:`read_since`). A loss while no worker or
scheduler runs is told by no one: ``began`` is then when the first one started again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from crawler.keys import Keys
from crawler.redisio.connection import decoded

__all__ = ["DataMarker", "Since", "read_since"]

logger = logging.getLogger(__name__)

# KEYS[1]: the marker. ARGV: the ``began`` this process saw ('' for none yet), now, this process's id, when
# it last saw the marker. Replies the marker (HGETALL), or the key's type when it is no hash.
_CHECK = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
  return kind
end
local began = redis.call('HGET', KEYS[1], 'began')
if not began then
  redis.call('DEL', KEYS[1])
  if ARGV[1] == '' then
    redis.call('HSET', KEYS[1], 'began', ARGV[2], 'by', ARGV[3])
  else
    redis.call('HSET', KEYS[1], 'began', ARGV[2], 'lost', ARGV[2], 'held', ARGV[4], 'by', ARGV[3])
  end
elseif ARGV[1] ~= '' and began ~= ARGV[1] and redis.call('HEXISTS', KEYS[1], 'lost') == 0 then
  redis.call('HSET', KEYS[1], 'lost', began, 'held', ARGV[4], 'by', ARGV[3])
end
return redis.call('HGETALL', KEYS[1])
"""

# The losses said by this process: (the marker's key, the ``began`` that was lost). A worker and the
# scheduler of one process (`crawler run`) find the same loss.
_said: set[tuple[str, str]] = set()
_said_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Since:
    """The marker: when the crawler's data began; when it was found lost (None: never since ``began``),
    when it was last seen held before, and by whom."""

    began: float
    lost: float | None = None
    held: float | None = None
    by: str | None = None

    @classmethod
    def of(cls, fields: dict[str, str]) -> Since | None:
        """The marker of its hash's ``fields``; None without a ``began`` that is a number."""
        try:
            began = float(fields["began"])
            lost = float(fields["lost"]) if "lost" in fields else None
            held = float(fields["held"]) if "held" in fields else None
        except (KeyError, ValueError):
            return None
        return cls(began, lost, held, fields.get("by"))


def read_since(server: redis.Redis, keys: Keys) -> Since | None:
    """The marker as Redis holds it; None when no worker or scheduler wrote it (or it is no hash)."""
    if decoded(server.type(keys.since)) != "hash":
        return None
    return Since.of({decoded(name): decoded(value) for name, value in server.hgetall(keys.since).items()})


class DataMarker:
    """One process's watch of the marker (see the module's docstring), as ``who`` (its worker id, or its
    scheduler's owner)."""

    def __init__(self, server: redis.Redis, keys: Keys, who: str) -> None:
        self.key = keys.since
        self.who = who
        self._check = server.register_script(_CHECK)
        self._began: str | None = None
        self._held = 0.0
        self._wrong: str | None = None

    def check(self, now: float) -> Since | None:
        """Write the marker when it is missing, at ``now`` (Redis's clock); the marker when this process saw
        another one before, which was lost (said once), else None. Raises ``redis.RedisError`` when Redis
        fails."""
        args = [self._began or "", f"{now:.3f}", self.who, f"{self._held:.3f}"]
        reply = self._check(keys=[self.key], args=args)
        if isinstance(reply, bytes | str):
            self._began = None  # a loss meanwhile cannot be told
            self._say_wrong(decoded(reply))
            return None
        self._wrong = None
        fields = {decoded(name): decoded(value) for name, value in zip(reply[::2], reply[1::2], strict=True)}
        before, self._began = self._began, fields["began"]
        held, self._held = self._held, now
        if before is None or before == fields["began"]:
            return None
        since = Since.of(fields)
        if since is None:
            return None
        with _said_lock:
            if (self.key, before) in _said:
                return since
            _said.add((self.key, before))
        self._say_lost(since, float(before), held)
        return since

    def _say_lost(self, since: Since, began: float, held: float) -> None:
        """The error of a loss, once: between when this process (or the one that found it) last saw the
        marker and when it was found gone."""
        found = since.lost if since.lost is not None else since.began
        seen = max(held, since.held or 0.0)
        by = "" if since.by in (None, self.who) else f" (found by {since.by})"
        logger.error(
            "Redis lost the crawler's data between %s and %s (a FLUSHALL, or a restart without persistence):"
            " %s, which said it began at %s, was gone%s. Gone with it: the requests queued, leased and"
            " waiting, the URLs seen (the Bloom filter), the dead letters, and the jobs' and sites' counters."
            " Now each scheduled site's grab is queued again at its next tick (articles stored before are"
            " fetched again and stored over themselves), the temp crawls under way end with an error (run"
            " them again), the dead letters are gone for good, and `crawler status` counts from zero; %s"
            " now says the data began at %s",
            _at(seen),
            _at(found),
            self.key,
            _at(began),
            by,
            self.key,
            _at(since.began),
        )

    def _say_wrong(self, kind: str) -> None:
        """The warning of a marker that is no hash, once until it is one (or gone)."""
        if self._wrong == kind:
            return
        self._wrong = kind
        logger.warning(
            "Redis key %s is a %s, not a hash: a loss of Redis's data (a FLUSHALL, a restart without"
            " persistence) cannot be told; fix: redis-cli DEL %s (written again at the next check)",
            self.key,
            kind,
            self.key,
        )


def _at(moment: float) -> str:
    """``moment`` (epoch seconds) in UTC to the second, as the other logs and ``crawler status`` give it."""
    return f"{datetime.fromtimestamp(moment, UTC):%Y-%m-%dT%H:%M:%SZ}"
