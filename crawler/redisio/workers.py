"""The workers' heartbeats in ``crawler:workers`` as every part reads them: a worker's id, the pid space
its pid belongs to, and whether a beat is a live worker's. The worker writes them
(:mod:`crawler.worker.heartbeat`); ``crawler status`` and ``crawler demo`` read them."""

from __future__ import annotations

import functools
import json
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
    "beat_suspended",
    "dead_workers",
    "pid_space",
    "redis_clock",
    "worker_id",
]

# A worker is taken for dead after this many missed heartbeats.
MISSED_BEATS = 3

# The start part of worker_id(), per pid of this process.
_starts: dict[int, str] = {}


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


def beat_alive(beat: Mapping[str, Any], now: float) -> bool:
    """A worker's last ``beat`` (its JSON, decoded) is a live worker's at ``now`` (epoch seconds): it beat
    within ``MISSED_BEATS`` of its beats and, written in this process's pid space, its process runs (a
    worker killed with SIGKILL on this machine is dead at once, not three beats later; elsewhere only its
    beats tell)."""
    return not _silent(beat, now) and not _gone(beat)


def beat_suspended(beat: Mapping[str, Any]) -> bool:
    """A worker's last ``beat`` (its JSON, decoded) is a suspended worker's: written in this process's pid
    space, its process is there but stopped (SIGSTOP, Ctrl-Z: state ``T``, or ``t`` under a debugger), so
    it beats no more and is taken for dead, yet goes on where it was once resumed (SIGCONT)."""
    space = beat.get("pid_space")
    return space is not None and space == pid_space() and process_stopped(int(beat["pid"]))


def dead_workers(beats: Mapping[str, str], now: float, *, quiet_for: float) -> list[str]:
    """The ids of the workers whose last beat (``crawler:workers``: id -> JSON) is a dead worker's at
    ``now`` (:func:`beat_alive`). One whose process is known gone (a beat of this pid space) is dead at
    once; one only silent is counted dead when the caller had Redis for ``quiet_for`` seconds (since its
    last failed call) longer than that worker's silence may be: a Redis away stopped its beats too, and
    it may not have beaten again yet. A beat that cannot be read is nobody's death."""
    dead = []
    for worker, text in beats.items():
        try:
            beat = json.loads(text)
            if not isinstance(beat, dict):
                continue
            if _gone(beat) or (_silent(beat, now) and quiet_for > MISSED_BEATS * float(beat["every"])):
                dead.append(worker)
        except (ValueError, TypeError, KeyError):
            continue
    return dead


def _silent(beat: Mapping[str, Any], now: float) -> bool:
    """``beat`` is older at ``now`` than ``MISSED_BEATS`` of its worker's beats."""
    return now - float(beat["seen"]) > MISSED_BEATS * float(beat["every"])


def _gone(beat: Mapping[str, Any]) -> bool:
    """``beat`` was written in this process's pid space, and its worker's process no longer runs."""
    space = beat.get("pid_space")
    return space is not None and space == pid_space() and not process_running(int(beat["pid"]))
