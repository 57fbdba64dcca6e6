"""Seen URLs: a scalable Bloom filter in Redis (the Scrapy dupefilter on it is
:mod:`crawler.worker.dupefilter`).

Words: a *slice* is one sub-filter of the scalable filter, stored as one Redis string (``<key>:s0``,
``<key>:s1``, ...); a *partition* is one of the ``k`` equal parts of a slice's bitmap, each with its own
hash function (pybloom-live calls them "slices" of its ``BloomFilter``).
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

import redis
from pybloom_live.pybloom import make_hashfuncs

from crawler import settings as defaults
from crawler.bounds import checked_setting, declared_ranges
from crawler.errors import CrawlerError
from crawler.redisio.queue import SITE_LUA

__all__ = [
    "MAX_ITEMS_PER_CALL",
    "TIGHTENING",
    "BloomError",
    "QueueTarget",
    "RedisBloom",
    "SliceGeometry",
    "StashTarget",
]

# Each slice's error rate is this fraction of the previous one's, and the first slice gets
# error_rate * (1 - TIGHTENING): the rates sum to less than error_rate however many slices there are.
# 0.5 keeps the first slice cheap (1.98 bytes/URL for a 0.1% target); pybloom-live's 0.9 lets the sum
# reach 9x its target.
TIGHTENING: Final = 0.5
# Items per Lua call: a longer batch is split, since Redis runs nothing else while a script runs.
MAX_ITEMS_PER_CALL: Final = 1000
# The largest Redis string (proto-max-bulk-len and string limit, 512 MiB): the largest slice possible.
MAX_SLICE_BYTES: Final = 512 * 1024 * 1024

# Test-and-set (mode "add") or test (mode "has") a batch of items against every slice, atomically.
# KEYS: the metadata hash, then the slices s0, s1, ... the caller sent offsets for.
# ARGV: mode, slices the caller knows, 1 if it also sent the next (not yet created) slice else 0, item count;
# then for each sent slice its partitions (bit offsets per item), its capacity, its size in bytes; then the
# offsets, big-endian uint32, item after item and, for each item, slice after slice.
# Item after item, newest slice first, it reads the item's bits with GETBIT until one is 0 (most new items
# stop after a bit or two), and sets a new item's bits in the last slice with one BITFIELD call; a second copy
# of an item later in the batch is then seen. A new slice is made at its full size by SETRANGE of its last
# byte (one exact allocation; SETBIT growing a string leaves up to 1 MB of slack). Offsets travel as one
# packed string, not one argument each: redis-py spends microseconds packing every argument.
# Reply: {status, slices, items in the last slice, items added in all, "0"/"1" (1: seen) per item handled}.
# Status 0: every item handled. 1: stopped because the last slice is full and the next slice's offsets were
# not sent (the caller resends the rest with them). 2: the caller knows a different number of slices than the
# metadata says (another client grew the filter): nothing was done, the caller refreshes and resends.
_LUA_TEST_AND_SET_CORE = """
local mode = ARGV[1]
local known = tonumber(ARGV[2])
local sent = known + tonumber(ARGV[3])
local nitems = tonumber(ARGV[4])
local blob = ARGV[5 + 3 * sent]
local parts, caps, sizes, first = {}, {}, {}, {}
local stride = 0
for i = 1, sent do
  parts[i] = tonumber(ARGV[4 + i])
  caps[i] = tonumber(ARGV[4 + sent + i])
  sizes[i] = tonumber(ARGV[4 + 2 * sent + i])
  first[i] = stride
  stride = stride + parts[i]
end
local state = redis.call('HMGET', KEYS[1], 'slices', 'last_count', 'count')
local slices = tonumber(state[1]) or 0
local last_count = tonumber(state[2]) or 0
local count = tonumber(state[3]) or 0
local count_before = count
if slices ~= known then
  return {2, slices, last_count, count, ''}
end
local decode = struct.unpack
local flags = {}
local status = 0
for j = 0, nitems - 1 do
  local seen = false
  for i = slices, 1, -1 do
    local at = 1 + 4 * (j * stride + first[i])
    local all = true
    for p = 0, parts[i] - 1 do
      if redis.call('GETBIT', KEYS[1 + i], (decode('>I', blob, at + 4 * p))) == 0 then
        all = false
        break
      end
    end
    if all then
      seen = true
      break
    end
  end
  if not seen and mode == 'add' then
    if slices == 0 or last_count >= caps[slices] then
      if slices == sent then
        status = 1
        break
      end
      slices = slices + 1
      redis.call('SETRANGE', KEYS[1 + slices], sizes[slices] - 1, '\\0')
      last_count = 0
    end
    local at = 1 + 4 * (j * stride + first[slices])
    local ops = {}
    for p = 0, parts[slices] - 1 do
      ops[4 * p + 1] = 'SET'
      ops[4 * p + 2] = 'u1'
      ops[4 * p + 3] = (decode('>I', blob, at + 4 * p))
      ops[4 * p + 4] = 1
    end
    redis.call('BITFIELD', KEYS[1 + slices], unpack(ops))
    last_count = last_count + 1
    count = count + 1
  end
  flags[j + 1] = seen and '1' or '0'
end
if count ~= count_before then
  redis.call('HSET', KEYS[1], 'slices', slices, 'last_count', last_count, 'count', count)
end
"""
_LUA_TEST_AND_SET = (
    _LUA_TEST_AND_SET_CORE
    + """
return {status, slices, last_count, count, table.concat(flags)}
"""
)
# The same, and every new item queued in the same call: a URL is marked seen only together with its
# queuing (a crash between the two cannot lose it). After the slice keys: the pending counts, the arrival
# counter, the job's hash (or ''), the job's set of items queued (or ''); after the offsets: site, job (or
# ''), priority, the queue's key prefix, the set's time-to-live in seconds, then per item its queue member
# (queued, scored and counted as crawler/redisio/queue.py's push does) and, with a set, the item itself.
# With a set (a job that fetches seen URLs again: `crawler temp SITE --again`), an item is queued when the
# set did not hold it, seen or not (flag "2": seen, queued again, counted in the job's ``again``), and an
# item the set held is not queued (flag "1"); the set's time-to-live is renewed. A job with nothing pending,
# its set gone (it ended), queues as with no set.
_LUA_TEST_AND_SET_AND_QUEUE = (
    SITE_LUA
    + _LUA_TEST_AND_SET_CORE
    + """
local queue_keys = 1 + sent
local site, job, priority = ARGV[6 + 3 * sent], ARGV[7 + 3 * sent], tonumber(ARGV[8 + 3 * sent])
local prefix = ARGV[9 + 3 * sent]
local again = KEYS[queue_keys + 4]
local before = 10 + 3 * sent
-- Each item's values: its member, and with a set the item too.
local step = again == '' and 1 or 2
-- A job that ended (nothing pending, its set deleted at its end) fetches seen URLs again no more: a late
-- page of it (its lease expired meanwhile) has its links tested against the seen filter alone, as any
-- job's. A page of it requeued from the dead letters is pending: its job goes on.
if again ~= '' and redis.call('EXISTS', again) == 0
    and (tonumber(redis.call('HGET', KEYS[queue_keys + 3], 'pending')) or 0) <= 0 then
  again = ''
end
-- A job whose hash is gone (it ended and expired) counts none of its late page's links: HINCRBY would make
-- the hash again, with no time-to-live, kept for ever.
local counted = job_kept(KEYS[queue_keys + 3])
if again == '' then
  for j = 1, #flags do
    if flags[j] == '0' then
      local score = -priority * 1099511627776 + redis.call('INCR', KEYS[queue_keys + 2])
      if enqueue(prefix, site, score, ARGV[before + step * (j - 1) + 1]) == 1 then
        redis.call('HINCRBY', KEYS[queue_keys + 1], site, 1)
        if counted then redis.call('HINCRBY', KEYS[queue_keys + 3], 'pending', 1) end
      end
    end
  end
else
  local queued_again = 0
  for j = 1, #flags do
    if redis.call('SADD', again, ARGV[before + 2 * j]) == 0 then
      flags[j] = '1'
    else
      if flags[j] == '1' then flags[j] = '2' end
      local score = -priority * 1099511627776 + redis.call('INCR', KEYS[queue_keys + 2])
      if enqueue(prefix, site, score, ARGV[before + 2 * j - 1]) == 1 then
        redis.call('HINCRBY', KEYS[queue_keys + 1], site, 1)
        if counted then redis.call('HINCRBY', KEYS[queue_keys + 3], 'pending', 1) end
        if flags[j] == '2' then queued_again = queued_again + 1 end
      end
    end
  end
  redis.call('EXPIRE', again, ARGV[before])
  if counted and queued_again > 0 then redis.call('HINCRBY', KEYS[queue_keys + 3], 'again', queued_again) end
end
return {status, slices, last_count, count, table.concat(flags)}
"""
)
# The same, and every new item kept in a discover rule's frontier in the same call (a link is marked seen
# only together with its keeping), counted in the record's ``kept`` (a hash, its time-to-live renewed) when
# a record is given. After the slice keys: the frontier's hash of each host's best score, the record (or
# '', the sorted set of each host's last touch (or ''); after the offsets: the frontier's key prefix (a
# host's sorted set is the prefix and the host), the most entries a host keeps (0: no limit; past it the
# lowest goes), the record's time-to-live in seconds, the seconds a host's set is kept untouched (0: for
# ever; each keeping touches the host, now in Redis's clock), then host, score and entry per item.
_LUA_TEST_AND_SET_AND_STASH = (
    _LUA_TEST_AND_SET_CORE
    + """
local frontier, cap = ARGV[6 + 3 * sent], tonumber(ARGV[7 + 3 * sent])
local keep = tonumber(ARGV[9 + 3 * sent])
local best, record, touched = KEYS[2 + sent], KEYS[3 + sent], KEYS[4 + sent]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local kept = 0
for j = 1, #flags do
  if flags[j] == '0' then
    local at = 7 + 3 * sent + 3 * j
    local host = ARGV[at]
    local key = frontier .. host
    redis.call('ZADD', key, tonumber(ARGV[at + 1]), ARGV[at + 2])
    if cap > 0 and redis.call('ZCARD', key) > cap then redis.call('ZPOPMIN', key) end
    if keep > 0 then redis.call('EXPIRE', key, keep) end
    if touched ~= '' then redis.call('ZADD', touched, now, host) end
    redis.call('HSET', best, host, redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
    kept = kept + 1
  end
end
if record ~= '' then
  redis.call('HINCRBY', record, 'kept', kept)
  redis.call('EXPIRE', record, ARGV[8 + 3 * sent])
end
return {status, slices, last_count, count, table.concat(flags)}
"""
)
_NEED_NEXT: Final = 1  # the reply status "stopped: send the next slice's offsets"

# The ranges of the BLOOM_ settings, declared beside them in crawler/settings.py.
_RANGES: Final = declared_ranges(defaults)


class BloomError(CrawlerError):
    """The Bloom filter cannot be used: bad sizing settings, a filter in Redis made with other settings,
    or a filter grown past the largest slice Redis can hold."""


@dataclass(frozen=True, slots=True)
class SliceGeometry:
    """One slice: its capacity and error rate, and pybloom-live's sizing and hash functions for them."""

    index: int
    capacity: int
    error_rate: float
    partitions: int
    bits_per_partition: int
    hashes: Callable[[str], Iterator[int]] = field(repr=False, compare=False)
    starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = tuple(range(0, self.partitions * self.bits_per_partition, self.bits_per_partition))
        object.__setattr__(self, "starts", starts)  # the first bit of each partition

    @classmethod
    def of(cls, index: int, capacity: int, error_rate: float) -> SliceGeometry:
        """The slice sized as ``pybloom_live.BloomFilter(capacity, error_rate)`` sizes itself."""
        partitions = math.ceil(math.log(1.0 / error_rate, 2))
        bits_per_partition = math.ceil(
            (capacity * abs(math.log(error_rate))) / (partitions * (math.log(2) ** 2))
        )
        hashes, _ = make_hashfuncs(partitions, bits_per_partition)
        return cls(index, capacity, error_rate, partitions, bits_per_partition, hashes)

    @property
    def nbytes(self) -> int:
        """Bytes of the slice's bitmap in Redis."""
        return (self.partitions * self.bits_per_partition + 7) // 8

    def offsets(self, text: str) -> list[int]:
        """The item's bit offsets in the slice's bitmap: one per partition."""
        return list(map(operator.add, self.starts, self.hashes(text)))


@dataclass(frozen=True, slots=True)
class QueueTarget:
    """Where :meth:`RedisBloom.add_and_queue` queues new items: the leased queue's key prefix and keys
    (pending counts, arrival counter, the job's hash or ''), and the site, job and priority of every
    member. ``again``: the set of the items a job that fetches seen URLs again has queued (kept
    ``again_seconds`` after its last call), whose items are queued once each, seen or not; '' for every
    other job."""

    prefix: str
    pending: str
    sequence: str
    job_key: str
    site: str
    job: str | None
    priority: int
    again: str = ""
    again_seconds: int = 0

    @property
    def keys(self) -> list[str]:
        return [self.pending, self.sequence, self.job_key, self.again]

    def args(self) -> list[str | int]:
        return [self.site, self.job or "", int(self.priority), self.prefix, int(self.again_seconds)]


@dataclass(frozen=True, slots=True)
class StashTarget:
    """Where :meth:`RedisBloom.add_and_stash` keeps new items: a discover rule's frontier (the key prefix
    of its hosts' sorted sets, the hash of each host's best score) and the most entries a host keeps; the
    ``record`` (a hash, kept ``record_seconds``) whose ``kept`` counts them, when not ''; the sorted set
    ``touched`` of each host's last keeping, when not '', and the seconds ``keep_seconds`` a host's set is
    kept after it (0: for ever)."""

    prefix: str
    best: str
    per_host: int
    record: str = ""
    record_seconds: int = 0
    touched: str = ""
    keep_seconds: int = 0

    @property
    def keys(self) -> list[str]:
        return [self.best, self.record, self.touched]

    def args(self) -> list[str | int]:
        return [self.prefix, self.per_host, self.record_seconds, self.keep_seconds]


class RedisBloom:
    """A scalable Bloom filter in Redis: test-and-set of a batch of items in one atomic Lua call.

    Items are bytes, or str taken as their UTF-8 bytes (``"x"`` and ``b"x"`` are one item). The first slice
    holds ``capacity`` items at ``error_rate * (1 - TIGHTENING)``; when it is full a new slice is created,
    ``growth`` times larger and with ``TIGHTENING`` times its error rate, so the false-positive rate stays
    under ``error_rate`` however far the filter grows. Each slice is a bitmap sized and hashed like
    pybloom-live's ``BloomFilter`` (``k`` partitions, ``make_hashfuncs``); the bit offsets are computed here
    and sent to the script, which checks every slice (an item is seen if one slice has all its bits) and sets
    the item's bits in the last slice. Bits are never cleared, so there is no false negative.

    Growth is safe when workers race: the metadata hash ``<key>:meta`` (slice count, items in the last slice,
    items in all) is read and written only inside the script, which Redis runs atomically, so exactly one
    call creates a slice. A client sends offsets for the slices it knows of (and for the next one when its
    batch may fill the last); a script call that finds a different slice count does nothing and answers
    "stale" with the slice count, and the client resends for those slices, so an item is never tested
    against fewer slices than exist. The sizing parameters are written to the metadata once and checked by
    every client: a client with other settings would hash to other bits, so it is refused (BloomError).
    """

    def __init__(
        self, server: redis.Redis, key: str, capacity: int, error_rate: float, growth: int = 2
    ) -> None:
        checked = [
            checked_setting(name, value, _RANGES[name], default=getattr(defaults, name), error=BloomError)
            for name, value in (
                ("BLOOM_CAPACITY", capacity),
                ("BLOOM_ERROR_RATE", error_rate),
                ("BLOOM_GROWTH", growth),
            )
        ]
        self.server = server
        self.key = key
        # As numbers, not as given: the metadata every client compares holds "1000", never "1000.0".
        self.capacity = capacity if checked[0] is None else int(checked[0])
        self.error_rate = error_rate if checked[1] is None else checked[1]
        self.growth = growth if checked[2] is None else int(checked[2])
        self.meta_key = f"{key}:meta"
        self._script = server.register_script(_LUA_TEST_AND_SET)
        self._and_queue = server.register_script(_LUA_TEST_AND_SET_AND_QUEUE)
        self._and_stash = server.register_script(_LUA_TEST_AND_SET_AND_STASH)
        self._slices: list[SliceGeometry] = []
        self._known = 0  # slices that exist, as of the last reply
        self._last_count = 0  # items in the last of them
        self._check_parameters()

    def _check_parameters(self) -> None:
        """Write the sizing parameters if the filter is new; refuse a filter made with other ones."""
        wanted = {
            "capacity": str(self.capacity),
            "error_rate": repr(self.error_rate),
            "growth": str(self.growth),
            "tightening": repr(TIGHTENING),
        }
        with self.server.pipeline(transaction=True) as pipe:
            for name, value in wanted.items():
                pipe.hsetnx(self.meta_key, name, value)
            pipe.hmget(self.meta_key, [*wanted, "slices", "last_count"])
            replies = pipe.execute()
        stored = [_text(value) for value in replies[-1]]
        for (name, value), found in zip(wanted.items(), stored, strict=False):
            if found != value:
                raise BloomError(
                    f"Bloom filter {self.key}: {self.meta_key} field {name!r} is {found!r} but this client"
                    f" was given {value!r}; every worker must use the same BLOOM_ settings (restore them, or"
                    f" delete the keys {self.key}:* to start an empty filter)"
                )
        self._known = self._count_field("slices", stored[len(wanted)])
        self._last_count = self._count_field("last_count", stored[len(wanted) + 1])

    def _count_field(self, name: str, found: str | None) -> int:
        """The metadata's count ``name`` as read (``found``; none yet is 0); a BloomError when it is no
        whole number (the hash written by another program, or by hand), which the filter's script would
        read as 0, growing a slice anew over those it has."""
        if found is None or (found.isascii() and found.isdigit()):
            return int(found or 0)
        meaning = {
            "slices": f"the number of keys {self.key}:s0, {self.key}:s1, ... that exist",
            "last_count": (
                "the URLs added to the last slice; its capacity, BLOOM_CAPACITY x BLOOM_GROWTH^(slices - 1),"
                " is safe: the next URL begins a new slice"
            ),
        }[name]
        raise BloomError(
            f"Bloom filter {self.key}: {self.meta_key} field {name!r} is {found!r}, not a count, so the seen"
            f" URLs cannot be read: set it back, `HSET {self.meta_key} {name} N` (N: {meaning}), or delete"
            f" the keys {self.key}:* to start an empty filter (the URLs seen are then fetched again)"
        )

    @property
    def keys(self) -> list[str]:
        """The Redis keys of the filter: the metadata hash, then the slices that exist (as last seen)."""
        return [self.meta_key, *(self._slice_key(i) for i in range(self._known))]

    def slice(self, index: int) -> SliceGeometry:
        """Geometry of slice ``index`` (0 is the first)."""
        while len(self._slices) <= index:
            i = len(self._slices)
            geometry = SliceGeometry.of(
                i,
                self.capacity * self.growth**i,
                self.error_rate * (1.0 - TIGHTENING) * TIGHTENING**i,
            )
            if geometry.nbytes > MAX_SLICE_BYTES:
                raise BloomError(
                    f"Bloom filter {self.key} is full: slice {i} would need {geometry.nbytes} bytes, over the"
                    f" {MAX_SLICE_BYTES} bytes of a Redis string; raise BLOOM_CAPACITY or BLOOM_GROWTH"
                    " for a new filter"
                )
            self._slices.append(geometry)
        return self._slices[index]

    def add_many(self, items: Sequence[bytes | str]) -> list[bool]:
        """Test-and-set: True for each item that was new and is now added, False for one already seen
        (including a second copy earlier in ``items``). One Lua call per ``MAX_ITEMS_PER_CALL`` items."""
        return [not seen for seen in self._run("add", items)]

    def add_and_queue(
        self, items: Sequence[bytes | str], members: Sequence[bytes], target: QueueTarget
    ) -> list[bool]:
        """Test-and-set ``items`` and, in the same atomic calls, queue the member of each new one into
        ``target`` (a URL is never marked seen without its request queued). True for each new item, and,
        when ``target`` names a job's set (``again``), for each item queued again though seen."""
        if target.again:
            return self._add_with(
                items, [[member, item] for member, item in zip(members, items, strict=False)], target
            )
        return self._add_with(items, [[member] for member in members], target)

    def add_and_stash(
        self, items: Sequence[bytes | str], entries: Sequence[tuple[str, float, bytes]], target: StashTarget
    ) -> list[bool]:
        """Test-and-set ``items`` and, in the same atomic calls, keep the entry of each new one (its host,
        score and value) in the frontier ``target``. True for each new item."""
        return self._add_with(items, [list(entry) for entry in entries], target)

    def _add_with(
        self,
        items: Sequence[bytes | str],
        extras: Sequence[list[str | float | bytes]],
        target: QueueTarget | StashTarget,
    ) -> list[bool]:
        if len(items) != len(extras):
            raise ValueError(f"{len(items)} items but {len(extras)} members: expected one member per item")
        texts = [_as_text(item) for item in items]
        seen: list[bool] = []
        for start in range(0, len(texts), MAX_ITEMS_PER_CALL):
            batch = extras[start : start + MAX_ITEMS_PER_CALL]
            seen.extend(self._call("add", texts[start : start + MAX_ITEMS_PER_CALL], (target, batch)))
        return [not was_seen for was_seen in seen]

    def add(self, item: bytes | str) -> bool:
        """Test-and-set one item: True if it was new and is now added."""
        return self.add_many([item])[0]

    def contains_many(self, items: Sequence[bytes | str]) -> list[bool]:
        """True for each item the filter has seen (or a false positive); adds nothing."""
        return self._run("has", items)

    def __contains__(self, item: bytes | str) -> bool:
        return self.contains_many([item])[0]

    def count(self) -> int:
        """Items added (new items only; duplicates are not counted)."""
        return int(_text(self.server.hget(self.meta_key, "count")) or 0)

    def bytes_used(self) -> int:
        """Bytes Redis uses for the filter's keys (``MEMORY USAGE``: the bitmaps plus Redis's overhead)."""
        self._refresh()
        with self.server.pipeline(transaction=False) as pipe:
            for key in self.keys:
                pipe.memory_usage(key, samples=0)
            return sum(int(size or 0) for size in pipe.execute())

    def clear(self) -> None:
        """Delete the filter (every slice and the metadata): every item becomes new again.

        For an operator with the workers stopped: a slice created by a worker meanwhile would stay behind.
        """
        self._refresh()
        self.server.delete(*self.keys)
        self._known = 0
        self._last_count = 0
        self._check_parameters()

    def _run(self, mode: str, items: Sequence[bytes | str]) -> list[bool]:
        texts = [_as_text(item) for item in items]
        seen: list[bool] = []
        for start in range(0, len(texts), MAX_ITEMS_PER_CALL):
            seen.extend(self._call(mode, texts[start : start + MAX_ITEMS_PER_CALL]))
        return seen

    def _call(
        self,
        mode: str,
        texts: list[str],
        queued: tuple[QueueTarget | StashTarget, Sequence[list[str | float | bytes]]] | None = None,
    ) -> list[bool]:
        """One batch: calls the script until every item is handled (a retry happens only on growth).
        With ``queued``, each new item's member is queued (or its entry kept) in the same call (the target,
        and each item's arguments)."""
        seen: list[bool] = []
        with_next = False
        while len(seen) < len(texts):
            pending = texts[len(seen) :]
            known = self._known
            if mode == "add" and not with_next:
                with_next = known == 0 or self._last_count + len(pending) > self.slice(known - 1).capacity
            sent = [self.slice(i) for i in range(known + (mode == "add" and with_next))]
            args: list[str | int | float | bytes] = [mode, known, len(sent) - known, len(pending)]
            args.extend(geometry.partitions for geometry in sent)
            args.extend(geometry.capacity for geometry in sent)
            args.extend(geometry.nbytes for geometry in sent)
            offsets = [offset for text in pending for geometry in sent for offset in geometry.offsets(text)]
            args.append(struct.pack(f">{len(offsets)}I", *offsets))
            keys = [self.meta_key, *(self._slice_key(i) for i in range(len(sent)))]
            if queued is None:
                reply = self._script(keys=keys, args=args)
            else:
                target, extras = queued
                keys.extend(target.keys)
                args.extend(target.args())
                args.extend(value for extra in extras[len(seen) :] for value in extra)
                script = self._and_queue if isinstance(target, QueueTarget) else self._and_stash
                reply = script(keys=keys, args=args)
            status, self._known, self._last_count = int(reply[0]), int(reply[1]), int(reply[2])
            seen.extend(flag == "1" for flag in _text(reply[4]) or "")
            # Stale: the slice count changed under us (the next loop sends the right slices). Need next: the
            # last slice filled up and the next slice's offsets were not sent.
            with_next = status == _NEED_NEXT
        return seen

    def _refresh(self) -> None:
        self._known = int(_text(self.server.hget(self.meta_key, "slices")) or 0)

    def _slice_key(self, index: int) -> str:
        return f"{self.key}:s{index}"


def _as_text(item: bytes | str) -> str:
    """The item as pybloom-live's hash functions take it: a str of one character per byte.

    pybloom-live hashes ``str.encode("utf-8")`` but ``str(key)`` (the repr) of bytes; the latin-1 text of the
    item's bytes is one str per byte string, so bytes hash as themselves and ``"x"`` is the same item as
    ``b"x"``.
    """
    data = item.encode("utf-8") if isinstance(item, str) else item
    return data.decode("latin-1")


def _text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value
