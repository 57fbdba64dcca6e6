"""The workers' heartbeats in ``crawler:workers`` as every part reads them: a worker's id, and whether a
beat is a live worker's. The worker writes them (:mod:`crawler.worker.heartbeat`); ``crawler status`` and
``crawler demo`` read them."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSED_BEATS", "beat_alive", "worker_id"]

# A worker is taken for dead after this many missed heartbeats.
MISSED_BEATS = 3


def worker_id() -> str:
    """This process's id as a worker: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def beat_alive(beat: Mapping[str, Any], now: float) -> bool:
    """A worker's last ``beat`` (its JSON, decoded) is a live worker's at ``now`` (epoch seconds): it beat
    within ``MISSED_BEATS`` of its beats."""
    return now - float(beat["seen"]) <= MISSED_BEATS * float(beat["every"])
