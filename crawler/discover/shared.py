"""A discover rule's link model, shared by every worker through Redis, and versioned.

Each worker learns on its own copy (:class:`~crawler.discover.links.LinkModel`) and, every ``sync_every``
pages and when its crawl stops, shares what it learnt since the last time in one Lua call: the changes
are added to the model's sum in Redis (``<prefix>:discover:<site>:model:v<FEATURES_VERSION>:w`` and
``:g``, hashes of feature -> weight, summed squares) and appended to its log (``...:log``, a stream
capped at ``LOG_LENGTH`` entries). Then the worker reads the log's entries after the last one it read and
adds those of the other workers to its copy. The entry id it read last is its copy's version.

A worker that starts, or one that fell more than the log's length behind, reads the whole sum and the
log's last id in one transaction, so no change is counted twice or missed. Since every change is added,
never set, workers learning at once lose nothing of each other's (the model is the sum of their steps).
A model of features hashed another way is another model: ``FEATURES_VERSION`` is in its keys. A share whose
reply was lost (the connection dropped after Redis ran it) is sent again with its number, and added once
(:mod:`crawler.redisio.once`).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import Any

import redis

from crawler.discover.links import LinkModel
from crawler.keys import Keys
from crawler.redisio.connection import decoded
from crawler.redisio.once import APPLIED_SECONDS, ONCE, Flushes

__all__ = ["FEATURES_VERSION", "SharedModel"]

logger = logging.getLogger(__name__)

# The version of crawler.discover.links's features: a change in them starts a new model.
FEATURES_VERSION = 1
# Entries of the log kept: at a sync every 20 pages, ten thousand pages of every worker together.
LOG_LENGTH = 500
# One change in a log entry: feature, weight change, squares change.
_CHANGE = struct.Struct("<Idd")

# KEYS: the share's mark (crawler.redisio.once), weights, squares, log. ARGV: the share's number and the
# mark's life (once), worker id, log length, pages learnt, packed changes. Reply: the log entry's id, nil
# when the share was applied already (a try whose reply was lost).
_SHARE = (
    ONCE
    + """
if not first_time() then return nil end
local blob = ARGV[6]
for at = 1, #blob, 20 do
  local feature, weight, square = struct.unpack('<Idd', blob, at)
  redis.call('HINCRBYFLOAT', KEYS[2], feature, string.format('%.17g', weight))
  redis.call('HINCRBYFLOAT', KEYS[3], feature, string.format('%.17g', square))
end
return redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'by', ARGV[3], 'pages', ARGV[5], 'd', blob)
"""
)


class SharedModel:
    """``model`` shared through Redis under ``site``'s keys (see the module docstring)."""

    def __init__(
        self, server: redis.Redis, keys: Keys, site: str, worker: str, *, sync_every: int = 20
    ) -> None:
        self.server = server
        base = f"{keys.prefix}:discover:{site}:model:v{FEATURES_VERSION}"
        self.weights_key, self.squares_key, self.log_key = f"{base}:w", f"{base}:g", f"{base}:log"
        self.worker = worker
        self.sync_every = sync_every
        self.model = LinkModel()
        self.version = ""
        self._since_sync = 0
        self._share = server.register_script(_SHARE)
        # Each share: the pages learnt from, the packed changes.
        self._shares: Flushes[tuple[int, bytes]] = Flushes(keys, f"model:{site}")

    def load(self) -> None:
        """This worker's copy from the sum in Redis (see the module docstring)."""
        with self.server.pipeline(transaction=True) as pipe:
            pipe.hgetall(self.weights_key)
            pipe.hgetall(self.squares_key)
            pipe.xrevrange(self.log_key, count=1)
            weights, squares, last = pipe.execute()
        self.model = LinkModel(
            weights={int(decoded(k)): float(decoded(v)) for k, v in weights.items()},
            squares={int(decoded(k)): float(decoded(v)) for k, v in squares.items()},
        )
        self.version = decoded(last[0][0]) if last else "0-0"

    def learnt(self) -> None:
        """A page was learnt from: every ``sync_every`` pages, :meth:`sync`."""
        self._since_sync += 1
        if self._since_sync >= self.sync_every:
            self.sync()

    def flush(self) -> None:
        """:meth:`sync` when this copy learnt from a page since the last one, or has a share Redis failed
        (a crawl that stops)."""
        if self._since_sync or self._shares.waiting:
            self.sync()

    def close(self) -> None:
        """The crawl stops: :meth:`flush`, then this copy's mark of numbered shares is deleted
        (:meth:`Flushes.end`). Raises ``redis.RedisError`` when Redis fails the flush (the mark kept)."""
        self.flush()
        self._shares.end(self.server)

    def sync(self) -> None:
        """Share what this copy learnt, and take what the others did (see the module docstring). When
        Redis fails the share, it is kept and sent again as it was at the next sync, before what was learnt
        since: added once, though Redis ran it and its reply was lost; a share that went through is never
        shared again, whatever befalls the read of the others' after it."""
        if not self.version:
            self.load()
        self._shares.again(self._send)
        changes = self.model.take_changes()
        pages, self._since_sync = self._since_sync, 0
        if changes:
            blob = b"".join(_CHANGE.pack(f, w, g) for f, (w, g) in changes.items())
            self._shares.send((pages, blob), self._send)
        self._catch_up()

    def _send(self, number: int, share: tuple[int, bytes]) -> None:
        """Add ``share`` (pages, packed changes), numbered ``number``, to the sum and the log, once. Raises
        ``redis.RedisError`` when Redis fails it (kept by ``_shares`` to be sent again)."""
        pages, blob = share
        self._share(
            keys=[self._shares.mark, self.weights_key, self.squares_key, self.log_key],
            args=[number, APPLIED_SECONDS, self.worker, LOG_LENGTH, pages, blob],
        )

    def _catch_up(self) -> None:
        """Add the other workers' entries after this copy's version. When the log's first entry is newer
        than the version, the entry of the version was trimmed away, and maybe others after it: reload."""
        first: list[Any] = self.server.xrange(self.log_key, count=1) or []
        entries: list[Any] = (
            self.server.xrange(self.log_key, min=f"({self.version}", count=LOG_LENGTH * 2) or []
        )
        if first and _newer(decoded(first[0][0]), self.version):
            logger.info("Link model of %s: behind the log's start, reloading it", self.log_key)
            self.load()
            return
        for entry_id, values in entries:
            fields = {decoded(k): v for k, v in values.items()}
            if decoded(fields.get("by", b"")) != self.worker:
                self.model.merge(_changes(fields.get("d", b"")))
            self.version = decoded(entry_id)


def _changes(blob: bytes | str) -> Iterator[tuple[int, float, float]]:
    data = blob.encode("latin-1") if isinstance(blob, str) else blob
    yield from _CHANGE.iter_unpack(data)


def _id(entry: str) -> tuple[int, int]:
    millis, _, sequence = entry.partition("-")
    return int(millis), int(sequence or 0)


def _newer(entry: str, version: str) -> bool:
    return _id(entry) > _id(version)
