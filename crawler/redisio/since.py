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
``began`` adds ``lost`` to it. ``crawler status`` shows both (:func:`read_since`).

The data folder outlives Redis: its processes record there the marker they last saw and when
(:class:`FolderRecord`, ``redis-since.json``: an entry per Redis and marker key), so that a loss while no
worker or scheduler ran is told too. A process starting on a Redis whose marker is missing, or other than
its folder's record, takes the recorded one for the one it saw: it says the loss (and marks it in Redis as
above). The record is swapped under an ``flock``: the first process of a data folder to find the new marker
says the loss, the others of that folder find the record already holding it and say nothing; each data
folder (each machine, when they do not share one) says a loss at most once. ``crawler status`` compares
the marker with its own data folder's record (:func:`read_record`), writing nothing.

A Redis gone back to an older copy of its data (an older snapshot, a replica that was behind) keeps the
marker, ``began`` and all. So each check writes its time into the marker (``wrote``) as into the folder's
record (or this process's memory): the marker's ``wrote`` over ``BACK_SECONDS`` older than what the folder
saw is a rollback. The check that finds it writes ``back`` (that ``wrote``), ``back_seen``, ``back_found``
and ``back_by`` into the marker and says it; each other data folder whose processes had seen Redis past
the copy before it was found says it once, found by that process (:class:`Back`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis

from crawler.commandline import span
from crawler.keys import Keys
from crawler.redisio.connection import decoded

__all__ = [
    "BACK_SECONDS",
    "RECORD_FILE",
    "Back",
    "DataMarker",
    "FolderRecord",
    "Seen",
    "Since",
    "read_record",
    "read_since",
]

logger = logging.getLogger(__name__)

# The data folder's record of the markers its processes last saw (FolderRecord).
RECORD_FILE = "redis-since.json"

# How much older than what a data folder's processes (or a process) last saw Redis's last check may be
# before Redis is taken for gone back to an older copy of its data: more than a heartbeat or tick between
# the checks (5 s by default; each check writes ``wrote``) and the second an append-only file synced every
# second loses in a crash, which are no rollback to tell.
BACK_SECONDS = 60.0

# KEYS[1]: the marker. ARGV: the ``began`` this process saw ('' for none yet), now, this process's id, when
# it last saw the marker, BACK_SECONDS. ``wrote`` is the latest check's now: a marker that has the
# ``began`` seen but a ``wrote`` over BACK_SECONDS older than when it was last seen came back from an older
# copy (``back``: that ``wrote``, ``back_seen``, ``back_found``, ``back_by``). Replies the marker
# (HGETALL), or the key's type when it is no hash.
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
elseif ARGV[1] ~= '' and began ~= ARGV[1] then
  if redis.call('HEXISTS', KEYS[1], 'lost') == 0 then
    redis.call('HSET', KEYS[1], 'lost', began, 'held', ARGV[4], 'by', ARGV[3])
  end
elseif began == ARGV[1] then
  local wrote = redis.call('HGET', KEYS[1], 'wrote')
  if wrote and tonumber(wrote) and tonumber(ARGV[4]) - tonumber(wrote) > tonumber(ARGV[5]) then
    redis.call('HSET', KEYS[1], 'back', wrote, 'back_seen', ARGV[4])
    redis.call('HSET', KEYS[1], 'back_found', ARGV[2], 'back_by', ARGV[3])
  end
end
local wrote = tonumber(redis.call('HGET', KEYS[1], 'wrote'))
if not wrote or wrote < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'wrote', ARGV[2])
end
return redis.call('HGETALL', KEYS[1])
"""

# What this process said with no data folder's record (whose swap tells it once a folder): (the marker's
# key, the ``began`` that was lost, or ``back`` and when the rollback was found). A worker and the
# scheduler of one process (`crawler run`) find the same loss.
_said: set[tuple[str, str]] = set()
_said_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Back:
    """Redis found gone back to an older copy of its data: its last check then (``to``), when the process
    that found it (or its data folder's processes) had last seen it (``seen``), when it found it and who."""

    to: float
    seen: float
    found: float
    by: str | None


@dataclass(frozen=True, slots=True)
class Since:
    """The marker: when the crawler's data began; when it was found lost (None: never since ``began``),
    when it was last seen held before, and by whom; its last check (``wrote``; None from a version before
    it), and the last time it was found gone back to an older copy (``back``)."""

    began: float
    lost: float | None = None
    held: float | None = None
    by: str | None = None
    wrote: float | None = None
    back: Back | None = None

    @classmethod
    def of(cls, fields: dict[str, str]) -> Since | None:
        """The marker of its hash's ``fields``; None without a ``began`` that is a number."""
        try:
            began = float(fields["began"])
            lost = float(fields["lost"]) if "lost" in fields else None
            held = float(fields["held"]) if "held" in fields else None
            wrote = float(fields["wrote"]) if "wrote" in fields else None
            back = (
                Back(
                    float(fields["back"]),
                    float(fields["back_seen"]),
                    float(fields["back_found"]),
                    fields.get("back_by"),
                )
                if "back" in fields
                else None
            )
        except (KeyError, ValueError):
            return None
        return cls(began, lost, held, fields.get("by"), wrote, back)


@dataclass(frozen=True, slots=True)
class Seen:
    """A data folder's record of one Redis's marker: its ``began`` (as Redis holds it) and when its
    processes last saw it there (``seen``, Redis's clock)."""

    began: str
    seen: float


class FolderRecord:
    """The markers the processes of the data folder ``folder`` last saw, in its :data:`RECORD_FILE` (JSON:
    an entry per Redis and marker key, ``entry``), read and written under an ``flock`` of the file."""

    def __init__(self, folder: Path, entry: str) -> None:
        self.path = folder / RECORD_FILE
        self.entry = entry

    def read(self) -> Seen | None:
        """The entry as recorded; None when there is none (or no file). Raises OSError when the file cannot
        be read."""
        if not self.path.exists():
            return None
        with self.path.open("r", encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            return _seen(_entries(handle.read()).get(self.entry))

    def swap(self, began: str, now: float) -> Seen | None:
        """Record that this process saw the marker ``began`` at ``now``; the entry it replaced (None when
        there was none), read and written under one lock. Raises OSError when the file cannot be written."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+", encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            handle.seek(0)
            entries = _entries(handle.read())
            old = _seen(entries.get(self.entry))
            seen = now if old is None or old.began != began else max(old.seen, now)
            entries[self.entry] = {"began": began, "seen": round(seen, 3)}
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(entries, indent=1, sort_keys=True))
            handle.flush()
        return old


def _entries(text: str) -> dict[str, object]:
    """The entries of a record file's ``text``; none when it is empty or no JSON object (a torn write: the
    processes write it anew at their next check)."""
    try:
        found = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _seen(entry: object) -> Seen | None:
    if not isinstance(entry, dict):
        return None
    began, seen = entry.get("began"), entry.get("seen")
    if not isinstance(began, str) or not isinstance(seen, int | float):
        return None
    return Seen(began, float(seen))


def _place(server: redis.Redis) -> str:
    """The Redis ``server`` connects to, as the data folder's record names it: its socket or host and port,
    and its database (no user name or password)."""
    settings = server.connection_pool.connection_kwargs
    where = (
        f"unix://{settings['path']}"
        if "path" in settings
        else f"{settings.get('host')}:{settings.get('port')}"
    )
    return f"{where}/{settings.get('db', 0)}"


def _record_of(folder: Path, server: redis.Redis, keys: Keys) -> FolderRecord:
    """The data folder ``folder``'s record of the marker of ``keys`` in ``server``."""
    return FolderRecord(folder, f"{_place(server)} {keys.since}")


def read_record(folder: Path, server: redis.Redis, keys: Keys) -> Seen | None:
    """What the data folder ``folder`` recorded of the marker of ``keys`` in ``server``; None when it
    recorded nothing (or cannot be read)."""
    try:
        return _record_of(folder, server, keys).read()
    except OSError:
        return None


def read_since(server: redis.Redis, keys: Keys) -> Since | None:
    """The marker as Redis holds it; None when no worker or scheduler wrote it (or it is no hash)."""
    if decoded(server.type(keys.since)) != "hash":
        return None
    return Since.of({decoded(name): decoded(value) for name, value in server.hgetall(keys.since).items()})


class DataMarker:
    """One process's watch of the marker (see the module's docstring), as ``who`` (its worker id, or its
    scheduler's owner); with ``folder``, the data folder whose record it reads and writes
    (:class:`FolderRecord`)."""

    def __init__(self, server: redis.Redis, keys: Keys, who: str, folder: Path | None = None) -> None:
        self.key = keys.since
        self.who = who
        self.record = None if folder is None else _record_of(folder, server, keys)
        self._check = server.register_script(_CHECK)
        self._began: str | None = None
        self._held = 0.0
        self._wrong: str | None = None
        self._unrecorded: str | None = None

    def check(self, now: float) -> Since | None:
        """Write the marker when it is missing, at ``now`` (Redis's clock); the marker when this process (or
        its data folder's record) saw another one before, which was lost (said once), else None. Raises
        ``redis.RedisError`` when Redis fails."""
        recorded = self._recorded()
        saw, held = (self._began, self._held) if recorded is None else (recorded.began, recorded.seen)
        args = [saw or "", f"{now:.3f}", self.who, f"{held:.3f}", f"{BACK_SECONDS:g}"]
        reply = self._check(keys=[self.key], args=args)
        if isinstance(reply, bytes | str):
            self._began = None  # a loss meanwhile cannot be told
            self._say_wrong(decoded(reply))
            return None
        self._wrong = None
        fields = {decoded(name): decoded(value) for name, value in zip(reply[::2], reply[1::2], strict=True)}
        mine = before = self._began
        self._began = fields["began"]
        held, self._held = self._held, now
        swapped = False
        if self.record is not None:
            try:
                old = self.record.swap(fields["began"], now)
            except OSError as exc:
                self._say_unrecorded(exc)
            else:
                self._unrecorded = None
                swapped = True
                # The record is the data folder's: a loss another process of it recorded was said there.
                if old is not None:
                    before, held = old.began, old.seen
        since = Since.of(fields)
        if since is not None and before == fields["began"] and since.back is not None:
            self._tell_back(since.back, held, swapped=swapped)
        if before is None or before == fields["began"] or since is None:
            return None
        if not swapped and not _first_said((self.key, before)):
            return since
        self._say_lost(since, float(before), held, recorded=mine is None)
        return since

    def _tell_back(self, back: Back, seen: float, *, swapped: bool) -> None:
        """Say, once a data folder (or a process without one), that Redis went back to an older copy of its
        data, when this folder (or process) had seen it past that copy (``seen``) before it was found."""
        if not back.to + BACK_SECONDS < seen < back.found:
            return
        if not swapped and not _first_said((self.key, f"back {back.found:.3f}")):
            return
        by = "" if back.by in (None, self.who) else f" (found by {back.by})"
        logger.error(
            "Redis went back to an older copy of its data (a restart from an older snapshot or append-only"
            " file, or a failover to a replica that was behind): %s says the crawler's data was last checked"
            " at %s, yet %s saw it at %s%s. Gone with the writes between: the requests queued, leased and"
            " acknowledged then (those acknowledged are fetched again and stored over themselves), the URLs"
            " marked seen (fetched again), the dead letters and the counters of those %s; the jobs and"
            " requests of the copy are back as they were",
            self.key,
            _at(back.to),
            "this data folder's processes" if swapped else "this process",
            _at(seen),
            by,
            span(seen - back.to),
        )

    def _recorded(self) -> Seen | None:
        """The data folder's record of the marker; None without one (or when it cannot be read: said)."""
        if self.record is None:
            return None
        try:
            return self.record.read()
        except OSError as exc:
            self._say_unrecorded(exc)
            return None

    def _say_unrecorded(self, exc: OSError) -> None:
        """The warning of a record that cannot be read or written, once until it can."""
        if self._unrecorded == str(exc):
            return
        self._unrecorded = str(exc)
        assert self.record is not None
        logger.warning(
            "cannot keep the data folder's record of Redis's crawler data in %s: %s; a loss of Redis's data"
            " while no crawler process runs cannot be told from this data folder meanwhile; fix: make the"
            " file writable by this process (or free space on its disk)",
            self.record.path,
            exc,
        )

    def _say_lost(self, since: Since, began: float, held: float, *, recorded: bool) -> None:
        """The error of a loss, once: between when this process (or its data folder's processes, the one
        that found it) last saw the marker and when it was found gone; ``recorded``: this process knows the
        marker lost by its data folder's record alone (it started after the loss)."""
        found = since.lost if since.lost is not None else since.began
        seen = max(held, since.held or 0.0)
        notes = [] if since.by in (None, self.who) else [f"found by {since.by}"]
        if recorded and self.record is not None:
            notes.append(f"as {self.record.path}, this data folder's record, had it")
        by = f" ({'; '.join(notes)})" if notes else ""
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


def _first_said(said: tuple[str, str]) -> bool:
    """Whether this process says ``said`` (a marker's key and what of it) for the first time: noted."""
    with _said_lock:
        if said in _said:
            return False
        _said.add(said)
        return True


def _at(moment: float) -> str:
    """``moment`` (epoch seconds) in UTC to the second, as the other logs and ``crawler status`` give it."""
    return f"{datetime.fromtimestamp(moment, UTC):%Y-%m-%dT%H:%M:%SZ}"
