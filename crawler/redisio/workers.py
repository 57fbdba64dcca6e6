"""The workers' heartbeats in ``crawler:workers`` as every part reads them: a worker's id, the pid space
its pid belongs to, and whether a beat is a live worker's. The worker writes them
(:mod:`crawler.worker.heartbeat`); ``crawler status`` and ``crawler demo`` read them."""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import redis

from crawler.redisio.embedded import process_running
from crawler.threads import process_stopped

__all__ = [
    "MISSED_BEATS",
    "Heartbeats",
    "beat_alive",
    "beat_id",
    "beat_suspended",
    "dead_workers",
    "pid_space",
    "read_beat",
    "worker_id",
]

logger = logging.getLogger(__name__)

# A worker is taken for dead after this many missed heartbeats.
MISSED_BEATS = 3

# How often an entry of the workers' hash that is no beat a worker writes is looked at again (seconds): it
# is indexed as due then, so it costs a beat one read a minute, and one removed by hand leaves the index.
_UNREADABLE_RECHECK_SECONDS = 60.0

# The largest process id: pid_t is a signed 32-bit integer (Linux's pid_max is at most 2**22).
_PID_MAX = 2**31 - 1

# The start part of worker_id(), per pid of this process.
_starts: dict[int, str] = {}

# The beats whose pid is no process id that this process has warned of: (worker, pid as written).
_warned_pids: set[tuple[str, str]] = set()


def worker_id() -> str:
    """This process's id as a worker, the holder of its heartbeat, its sessions and its dead letters:
    ``host:pid:start``, ``start`` six hex digits drawn once per process start. A host name and a pid do
    not name one process: a container restarted keeps its host name, and its process is pid 1 again."""
    pid = os.getpid()
    if pid not in _starts:  # a forked child draws its own
        _starts[pid] = uuid.uuid4().hex[:6]
    return f"{socket.gethostname()}:{pid}:{_starts[pid]}"


@functools.cache
def pid_space() -> str | None:
    """Where this process's pids name the same processes: this boot of the machine (its kernel's
    ``boot_id``, which a container shares with its host) and this pid namespace (a container has its own);
    None without ``/proc`` (not Linux). A host name does not tell it: machines and containers may share
    one."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text("ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}"


def beat_alive(beat: Mapping[str, Any], now: float, worker: str = "") -> bool:
    """``worker``'s last ``beat`` (its JSON, decoded) is a live worker's at ``now`` (epoch seconds): it
    beat within ``MISSED_BEATS`` of its beats and, written in this process's pid space, its process runs (a
    worker killed with SIGKILL on this machine is dead at once, not three beats later; elsewhere, or with a
    pid that is no process id, only its beats tell)."""
    return not _silent(beat, now) and not _gone(beat, worker)


def beat_suspended(beat: Mapping[str, Any], worker: str = "") -> bool:
    """``worker``'s last ``beat`` (its JSON, decoded) is a suspended worker's: written in this process's pid
    space, its process is there but stopped (SIGSTOP, Ctrl-Z: state ``T``, or ``t`` under a debugger), so
    it beats no more and is taken for dead, yet goes on where it was once resumed (SIGCONT)."""
    pid = _pid_here(beat, worker)
    return pid is not None and process_stopped(pid)


def beat_id(field: bytes | str) -> str:
    """A worker's id in ``crawler:workers`` (its field) as text; bytes that are no UTF-8 (no worker's id:
    someone else wrote the entry) escaped (``\\xff``)."""
    return field.decode("utf-8", "backslashreplace") if isinstance(field, bytes) else field


def read_beat(raw: bytes | str) -> dict[str, Any] | None:
    """A beat of ``crawler:workers`` (its value) decoded; None when it is not what a worker writes, which
    no reader can tell alive or dead: no UTF-8 JSON object, its ``seen`` and ``every`` no finite numbers,
    one of its counts (``forget``, ``rate``, ``responses``, ``pages``, ``redis_errors``, ``store_paused``) no
    number, its ``sites`` no list of names, or its ``store`` no text."""
    try:
        beat = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(beat, dict) or not all(_number(beat.get(name)) for name in ("seen", "every")):
        return None
    counts = ("forget", "rate", "responses", "pages", "redis_errors", "store_paused")
    if not all(_number(beat[name]) for name in counts if name in beat):
        return None
    sites = beat.get("sites", [])
    if not isinstance(sites, list) or not all(isinstance(site, str) for site in sites):
        return None
    return beat if isinstance(beat.get("store", ""), str | None) else None


def _number(value: object) -> bool:
    """``value`` (of a beat's JSON) is a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _pid_here(beat: Mapping[str, Any], worker: str) -> int | None:
    """The pid of ``worker``'s ``beat`` when it was written in this process's pid space; None for a beat
    of another, or one whose pid is no process id (0, negative, beyond pid_t, no integer: a worker writes
    its own, someone else wrote this one), which os.kill cannot be asked about (0 and -1 name groups of
    processes; beyond pid_t raises OverflowError): told by its beats alone, said once per process."""
    space = beat.get("pid_space")
    if space is None or space != pid_space():
        return None
    written = beat.get("pid")
    try:
        pid = int(written) if isinstance(written, int | str) and not isinstance(written, bool) else 0
    except ValueError:
        pid = 0
    if 0 < pid <= _PID_MAX:
        return pid
    if (worker, repr(written)) not in _warned_pids:
        _warned_pids.add((worker, repr(written)))
        logger.warning(
            "Worker %s's heartbeat names pid %r, which is no process id (1 to %d): it is taken for alive or"
            " dead by its beats alone, as a worker of another machine. A worker writes its own pid, so"
            " someone else wrote this entry: `crawler status` lists the workers",
            worker or "?",
            written,
            _PID_MAX,
        )
    return None


def dead_workers(beats: Mapping[str, bytes | str], now: float, *, quiet_for: float) -> list[str]:
    """The ids of the workers whose last beat (of ``crawler:workers``, id -> JSON: all, or those
    :meth:`Heartbeats.may_be_dead` returns) is a dead worker's at ``now`` (:func:`beat_alive`). One whose
    process is known gone (a beat of this pid space) is dead at once; one only silent is counted dead when the
    caller had Redis for ``quiet_for`` seconds (since its last failed call) longer than that worker's silence
    may be: a Redis away stopped its beats too, and it may not have beaten again yet. A beat that cannot be
    read (:func:`read_beat`) is nobody's death."""
    dead = []
    for worker, text in beats.items():
        beat = read_beat(text)
        if beat is None:
            continue
        if _gone(beat, worker) or (_silent(beat, now) and quiet_for > MISSED_BEATS * float(beat["every"])):
            dead.append(worker)
    return dead


def _silent(beat: Mapping[str, Any], now: float) -> bool:
    """``beat`` is older at ``now`` than ``MISSED_BEATS`` of its worker's beats."""
    return now - float(beat["seen"]) > MISSED_BEATS * float(beat["every"])


def _gone(beat: Mapping[str, Any], worker: str) -> bool:
    """``worker``'s ``beat`` was written in this process's pid space, and its process no longer runs."""
    pid = _pid_here(beat, worker)
    return pid is not None and not process_running(pid)


# The index of the workers' hash (KEYS[1]) that lets a beat read only the entries that may be dead: KEYS[2],
# a sorted set of the workers by the Redis-clock time their beat is due by (seen + MISSED_BEATS * every;
# an unreadable entry's: when it is looked at again), and one set a pid space of the workers whose beats
# were written in it (ARGV[1] and the space), whose processes a looker of that space can check. ARGV[2]:
# the time, ARGV[3]: the seconds before an unreadable entry is looked at again. look() tracks the entries
# no worker indexed (a worker of a version before the index writes the hash alone: while the hash holds
# more entries than the index, it is read whole once), then returns the workers due (entries removed from
# the hash leave the index; one whose beat is not due after all, a worker that wrote the hash alone, is
# due again later), and the number of entries it read.
_INDEX = f"""
local missed = {MISSED_BEATS}
local now = tonumber(ARGV[2])
local recheck = tonumber(ARGV[3])

local function deadline(raw)
  local ok, beat = pcall(cjson.decode, raw)
  if not ok or type(beat) ~= 'table' or type(beat['seen']) ~= 'number' or type(beat['every']) ~= 'number' then
    return nil, nil
  end
  local due = beat['seen'] + missed * beat['every']
  if due ~= due then
    return nil, nil
  end
  return due, beat
end

local function space_of(beat)
  if beat and type(beat['pid_space']) == 'string' and beat['pid_space'] ~= '' then
    return ARGV[1] .. beat['pid_space']
  end
  return nil
end

local function track(worker, raw)
  local due, beat = deadline(raw)
  if due == nil then
    redis.call('ZADD', KEYS[2], now + recheck, worker)
    return nil, nil
  end
  redis.call('ZADD', KEYS[2], string.format('%.17g', due), worker)
  local space = space_of(beat)
  if space then
    redis.call('SADD', space, worker)
  end
  return due, beat
end

local function look()
  local read = 0
  if redis.call('HLEN', KEYS[1]) > redis.call('ZCARD', KEYS[2]) then
    local beats = redis.call('HGETALL', KEYS[1])
    read = read + #beats / 2
    for i = 1, #beats, 2 do
      if not redis.call('ZSCORE', KEYS[2], beats[i]) then
        track(beats[i], beats[i + 1])
      end
    end
  end
  local due = {{}}
  for _, worker in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
    local raw = redis.call('HGET', KEYS[1], worker)
    read = read + 1
    local at, beat = nil, nil
    if raw then
      at, beat = deadline(raw)
    end
    if not raw then
      redis.call('ZREM', KEYS[2], worker)
    elseif at == nil or at > now then
      track(worker, raw)
    else
      due[#due + 1] = {{worker, raw, beat}}
    end
  end
  return due, read
end
"""

# ARGV[4]: this worker's id, ARGV[5]: its beat (JSON), ARGV[6]: its forget seconds (for an entry written
# without its own). One round trip a beat: this worker's entry written and indexed, those of long-dead
# workers removed (older than their own forget seconds and 3 of their beats). Returns the entries read.
_BEAT = (
    _INDEX
    + """
redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
track(ARGV[4], ARGV[5])
local due, read = look()
for _, entry in ipairs(due) do
  local dead_for = now - entry[3]['seen']
  local forget = tonumber(entry[3]['forget']) or tonumber(ARGV[6])
  if dead_for > forget and dead_for > missed * entry[3]['every'] then
    redis.call('HDEL', KEYS[1], entry[1])
    redis.call('ZREM', KEYS[2], entry[1])
    local space = space_of(entry[3])
    if space then
      redis.call('SREM', space, entry[1])
    end
  end
end
return read
"""
)

# ARGV[4]: the looker's pid space (empty when it has none). The workers that may be dead: those due, and
# those whose beats were written in the looker's pid space (a process gone there is dead at once), as
# [worker, beat, ...]; entries gone from the hash leave that space's set.
_LOOK = (
    _INDEX
    + """
local due = look()
local found = {}
local reply = {}
for _, entry in ipairs(due) do
  found[entry[1]] = true
  reply[#reply + 1] = entry[1]
  reply[#reply + 1] = entry[2]
end
if ARGV[4] ~= '' then
  local space = ARGV[1] .. ARGV[4]
  for _, worker in ipairs(redis.call('SMEMBERS', space)) do
    local raw = redis.call('HGET', KEYS[1], worker)
    if not raw then
      redis.call('SREM', space, worker)
    elseif not found[worker] then
      reply[#reply + 1] = worker
      reply[#reply + 1] = raw
    end
  end
end
return reply
"""
)


class Heartbeats:
    """The workers' heartbeats, ``key`` (a hash: worker id -> JSON), and its index (``<key>:due``, a sorted
    set of the workers by when their next beat is due, by Redis's clock; ``<key>:in:<pid space>``, a set a
    pid space of the workers that beat in it) by which a beat and a look for dead workers read only the
    entries of the workers that may be dead, and those of the looker's own pid space: with 1,000 workers
    alive elsewhere, none. A worker of an earlier version writes the hash alone: its entries are indexed by
    the next beat or look (the hash read whole once), and looked at again whenever their indexed beat is
    due."""

    def __init__(self, server: redis.Redis, key: str) -> None:
        self.server = server
        self.key = key
        self.due = f"{key}:due"
        self.spaces = f"{key}:in:"
        self._beat = server.register_script(_BEAT)
        self._look = server.register_script(_LOOK)

    def write(self, worker: str, beat: Mapping[str, object], now: float, forget: float) -> int:
        """Write ``worker``'s ``beat`` at ``now`` (Redis's clock), removing the entries of workers dead
        longer than their own forget seconds (``forget`` for one that wrote none) and three of their beats;
        the number of entries of other workers read."""
        args: list[str | float] = [
            self.spaces,
            now,
            _UNREADABLE_RECHECK_SECONDS,
            worker,
            json.dumps(beat),
            forget,
        ]
        return int(self._beat(keys=[self.key, self.due], args=args))

    def may_be_dead(self, now: float) -> dict[str, bytes]:
        """The beats (id -> JSON) of the workers that may be dead at ``now`` (Redis's clock): those whose
        beat was due by then, and those of this process's pid space, whose processes it can check; for
        :func:`dead_workers`."""
        args: list[str | float] = [self.spaces, now, _UNREADABLE_RECHECK_SECONDS, pid_space() or ""]
        reply = self._look(keys=[self.key, self.due], args=args)
        return {beat_id(worker): raw for worker, raw in zip(reply[::2], reply[1::2], strict=True)}

    def remove(self, worker: str) -> None:
        """Remove this process's ``worker``'s entry and its index."""
        space = pid_space()
        with self.server.pipeline() as pipe:
            pipe.hdel(self.key, worker)
            pipe.zrem(self.due, worker)
            if space is not None:
                pipe.srem(f"{self.spaces}{space}", worker)
            pipe.execute()
