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

from crawler.redisio.embedded import process_running, process_stopped

__all__ = [
    "MISSED_BEATS",
    "beat_alive",
    "beat_id",
    "beat_suspended",
    "dead_workers",
    "pid_space",
    "read_beat",
    "redis_clock",
    "worker_id",
]

logger = logging.getLogger(__name__)

# A worker is taken for dead after this many missed heartbeats.
MISSED_BEATS = 3

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


def redis_clock(server: redis.Redis) -> float:
    """Redis's clock (``TIME``, epoch seconds), by which heartbeats are stamped and judged: the clocks of
    the workers' machines and of the one that looks may differ, or jump (NTP)."""
    seconds, microseconds = server.time()
    return float(seconds) + microseconds / 1e6


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
    one of its counts (``forget``, ``rate``, ``responses``, ``pages``, ``redis_errors``) no number, its
    ``sites`` no list of names, or its ``store`` no text."""
    try:
        beat = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(beat, dict) or not all(_number(beat.get(name)) for name in ("seen", "every")):
        return None
    counts = ("forget", "rate", "responses", "pages", "redis_errors")
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
    """The ids of the workers whose last beat (``crawler:workers``: id -> JSON) is a dead worker's at
    ``now`` (:func:`beat_alive`). One whose process is known gone (a beat of this pid space) is dead at
    once; one only silent is counted dead when the caller had Redis for ``quiet_for`` seconds (since its
    last failed call) longer than that worker's silence may be: a Redis away stopped its beats too, and
    it may not have beaten again yet. A beat that cannot be read (:func:`read_beat`) is nobody's death."""
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
