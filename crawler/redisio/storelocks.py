"""The write locks of the SQLite store's week files that workers found held by another process.

A worker whose write waited for a week's write lock past the busy timeout (a ``sqlite3`` shell left in a
transaction, a worker stopped inside its write) notes it in the hash ``crawler:store-locks``, field the
worker's pid space (:func:`crawler.redisio.workers.pid_space`: a pid names a process there alone) and the
file, value JSON: the file, the holder's pid as the kernel named it on the worker's machine (None when it
could not), that pid space, the machine's host name, and by Redis's clock (milliseconds) when the lock was
first found held (``since``: the lock episode) and last (``seen``). A lock found again with the same holder
keeps its ``since``; another holder starts an episode. A worker that noted a lock forgets it (:func:`let_go`)
once one of its writes into that file succeeds (the lock was let go); a write into another week's file
keeps it, ``since`` with it: ``since`` is when a worker of that machine first found it held by that holder
with none of their writes into the file succeeding since (the lock may be older, taken while no worker
wrote into the file). ``crawler status`` reads them (:func:`held`) to name the holder and how long
the lock has lasted; the hash expires ``KEEP_SECONDS`` after the last lock noted.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from typing import Any

import redis

from crawler.keys import Keys
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded

__all__ = ["KEEP_SECONDS", "held", "let_go", "noted"]

# How long the notes outlive the last lock noted: longer than the status looks back for store failures
# (crawler.status.STORE_FAILING_HOURS, 2 h).
KEEP_SECONDS = 24 * 3600

# Notes (or renews) the lock of field ARGV[1]: ARGV[2] the note's JSON, ARGV[3] its holder (an empty string
# when unknown); the since of a note of the same holder is kept, else it is the note's seen.
_NOTE = """
local note = cjson.decode(ARGV[2])
note['since'] = note['seen']
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local ok, found = pcall(cjson.decode, old)
  if ok and type(found) == 'table' and type(found['since']) == 'number'
      and (found['holder'] == cjson.null and '' or tostring(found['holder'])) == ARGV[3] then
    note['since'] = found['since']
  end
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(note))
redis.call('EXPIRE', KEYS[1], ARGV[4])
"""


def _field(space: str | None, path: str) -> str:
    """The field of the lock of the week's file ``path`` found by a worker of pid space ``space``."""
    return f"{space or ''} {path}"


def noted(server: redis.Redis, keys: Keys, space: str | None, path: str, holder: int | None) -> str:
    """Note that a write found the write lock of ``path`` held by ``holder`` (a pid of pid space ``space``,
    or None when unknown): its field."""
    name = _field(space, path)
    now = int(shared_now() * 1000)
    note = {
        "path": path,
        "holder": holder,
        "pid_space": space,
        "host": socket.gethostname(),
        "seen": now,
    }
    server.eval(
        _NOTE,
        1,
        keys.store_locks,
        name,
        json.dumps(note),
        "" if holder is None else str(holder),
        KEEP_SECONDS,
    )
    return name


def let_go(server: redis.Redis, keys: Keys, fields: Iterable[str]) -> None:
    """Forget the locks of ``fields``: a write of the worker that noted them succeeded since."""
    names = list(fields)
    if names:
        server.hdel(keys.store_locks, *names)


def held(server: redis.Redis, keys: Keys) -> list[dict[str, Any]]:
    """The locks noted, each as written (those that cannot be read left out), the latest seen first."""
    found = []
    for raw in server.hvals(keys.store_locks):
        try:
            note = json.loads(decoded(raw))
        except ValueError:
            continue
        if (
            isinstance(note, dict)
            and isinstance(note.get("seen"), int)
            and isinstance(note.get("since"), int)
        ):
            found.append(note)
    return sorted(found, key=lambda note: -note["seen"])
