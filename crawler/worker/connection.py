"""The one Redis client of a worker: every plug-in of a crawl shares it (and its connection pool)."""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterable
from typing import Literal
from weakref import WeakKeyDictionary

import redis
from redis.commands.core import Script
from redis.exceptions import NoPermissionError, OutOfMemoryError, ReadOnlyError
from scrapy.crawler import Crawler

from crawler.commandline import TOLD
from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.connection import (
    NO_PERMISSION_FIX,
    SteadyWrites,
    connect,
    denied,
    may_run,
    refused_command,
    script_refusal,
    turned_away,
    unanswered,
    writes_refused,
)

__all__ = [
    "RedisOutage",
    "WrongTypeKeys",
    "keys_of",
    "outage_of",
    "refused_reply",
    "server_of",
    "write_job",
    "wrong_type",
]

logger = logging.getLogger(__name__)

# Seconds between two reminders that Redis is still down.
REMINDER_SECONDS = 60.0
# The error codes of a write Redis refuses: at the start of the reply ("MISCONF ..."), after a pipeline's
# "caused error: " or after a Lua script's ": -".
_WRITE_REFUSED = re.compile(r"(?:^|: -?)(?:MISCONF|OOM|READONLY) ")

_servers: WeakKeyDictionary[Crawler, redis.Redis] = WeakKeyDictionary()
_outages: WeakKeyDictionary[Crawler, RedisOutage] = WeakKeyDictionary()
_job_writes: WeakKeyDictionary[Crawler, Script] = WeakKeyDictionary()

# KEYS: a job's hash. ARGV: HINCRBY or HSET, the field, the value. Written only while the hash is there: an
# ended job's hash expires (SCHEDULE_JOB_KEEP_HOURS), and a late page of it (its lease outlived the job)
# made it again, with no time-to-live, kept for ever. Reply: 1 when written, else 0.
_WRITE_JOB = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call(ARGV[1], KEYS[1], ARGV[2], ARGV[3])
return 1
"""


def server_of(crawler: Crawler) -> redis.Redis:
    """The crawl's Redis client (``REDIS_URL``), made on first use."""
    server = _servers.get(crawler)
    if server is None:
        url = crawler.settings.get("REDIS_URL")
        if not url:
            raise InputError(
                "setting REDIS_URL is not set: the crawl needs the shared Redis (run it with a `crawler`"
                " command, which starts the embedded one, or set REDIS_URL)"
            )
        server = _servers[crawler] = connect(str(url))
    return server


def keys_of(crawler: Crawler) -> Keys:
    """The Redis keys of the crawl's deployment (``REDIS_KEY_PREFIX``)."""
    return Keys(str(crawler.settings["REDIS_KEY_PREFIX"]))


def write_job(
    crawler: Crawler, job: str, command: Literal["HINCRBY", "HSET"], field: str, value: int | str
) -> bool:
    """``command`` (``HINCRBY``, ``HSET``) ``field`` of ``job``'s hash with ``value``, while the hash is
    there; False when it is not (the job ended and its hash expired: it is not made again). Raises
    ``redis.RedisError`` when Redis fails."""
    script = _job_writes.get(crawler)
    if script is None:
        script = _job_writes[crawler] = server_of(crawler).register_script(_WRITE_JOB)
    return bool(script(keys=[keys_of(crawler).job(job)], args=[command, field, value]))


def job_level(crawler: Crawler, job: str | None) -> int:
    """The level of what befell a request of ``job``: WARNING for a request of the crawling worker's own
    job (the worker of ``crawler temp``, ``demo``), or of any for a worker of none (``crawler run``,
    ``worker``); INFO for another job's, which a temp crawl's worker takes from the shared queue to help:
    the command's warnings are its own crawl's (``crawler dead list`` has the others)."""
    own = getattr(crawler.spider, "job", None)
    return logging.WARNING if own is None or job == own else logging.INFO


def helps(crawler: Crawler, job: str | None) -> bool:
    """The crawling worker has a job of its own (``crawler temp``, ``demo``) and ``job`` is another's."""
    own = getattr(crawler.spider, "job", None)
    return own is not None and job != own


class RedisOutage:
    """Redis away, as the whole worker sees it: every failed call is counted (``redis/errors``); the
    outage is logged once when it starts, reminded every ``REMINDER_SECONDS`` while it lasts, and logged
    once when it ends, with its length from the last call that succeeded before it.

    A Redis that refuses writes (``MISCONF``: it cannot write to its disk; ``OOM``: its ``maxmemory`` is
    full; ``READONLY``: a replica) still answers reads, and scripts that write nothing: that outage ends
    only when a write succeeds, not at the next read. So does one whose user lost the right to run the
    worker's commands (``NOPERM``: ACL), which is said with the fix; it ends when the user may run the
    commands Redis refused again, not at a write of another (a user who lost EVALSHA alone still runs SET).
    Such an outage is said to be over once writes went through for ``STEADY_SECONDS``, none refused: a
    refusal before then goes on with the same outage, not a new one (a Redis whose memory hovers at its
    maxmemory). ``clock``: the monotonic seconds it goes by."""

    def __init__(self, crawler: Crawler, clock: Callable[[], float] = time.monotonic) -> None:
        self.crawler = crawler
        self.clock = clock
        self.since: float | None = None
        # True while Redis refuses writes (see the class docstring).
        self.refusing = False
        # The commands Redis said the user may not run (NOPERM) in this outage.
        self.denied: set[str] = set()
        # Redis's last refusal of a command or key to the user in this outage, and why, as script_refusal
        # reads it: ("command", name), ("key", key), (None, None) when Redis did not say.
        self._refused_user: tuple[redis.ResponseError, tuple[str | None, str | None]] | None = None
        self._reminded = 0.0
        # When a call last succeeded: an outage is counted from then, not from its first error (a frozen
        # Redis raises only after the socket timeout).
        self._last_ok = clock()
        # While Redis refuses writes: whether writes went through long enough, none refused.
        self._steady = SteadyWrites()
        # When a call last failed (monotonic; -inf before any): the beats of other workers stopped as long.
        self.last_failed = -math.inf

    def failed(self, what: str, exc: redis.RedisError) -> None:
        """A call to Redis (doing ``what``) failed with ``exc``."""
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("redis/errors")
        now = self.clock()
        self.last_failed = now
        self._steady.reset()
        refuses = _refuses_writes(exc)
        command = None
        if denied(exc):
            why = self._why_denied(exc)
            self._refused_user = exc, why
            command = why[1] if why[0] == "command" else None
        if command is not None:
            self.denied.add(command)
        if self.since is None or (refuses and not self.refusing):
            # An outage starts, or one of a Redis gone away becomes one of a Redis refusing writes (back,
            # with its disk full): each is said once, the second with the file and the fix.
            if self.since is None:
                self.since = self._last_ok
            self._reminded = now
            self.refusing = refuses
            if denied(exc):
                logger.error(
                    "Redis refuses a command of the worker (%s: %s): the worker goes on and tries again;"
                    " the user of the Redis URL may not run %s: %s",
                    what,
                    exc,
                    # A script's error names no command.
                    "it" if isinstance(exc, NoPermissionError) or command is None else command.upper(),
                    NO_PERMISSION_FIX,
                )
            elif refuses:
                logger.error(
                    "Redis refuses writes (%s: %s): the worker goes on and tries again (Redis still answers"
                    " its reads)%s",
                    what,
                    exc,
                    self._why_refused(),
                )
            elif (turned := turned_away(exc)) is not None:
                logger.error("Redis failed (%s): the worker goes on and tries again; %s", what, turned)
            elif isinstance(exc, redis.TimeoutError) and (held := self._why_unanswered(exc)) is not None:
                logger.error("Redis failed (%s: %s): the worker goes on and tries again; %s", what, exc, held)
            else:
                logger.error("Redis failed (%s: %s): the worker goes on and tries again", what, exc)
        elif now - self._reminded >= REMINDER_SECONDS:
            self._reminded = now
            logger.warning(
                "Redis still %s after %.0f s: %s (%s); the worker goes on and tries again",
                "refuses writes" if self.refusing else "down",
                now - self.since,
                exc,
                what,
            )

    def refused_user(self) -> tuple[redis.ResponseError, tuple[str | None, str | None]] | None:
        """Redis's last refusal of a command or key to the user in this outage and why, as read when it came
        (``("command", name)``, ``("key", key)``, ``(None, None)``: Redis did not say; asked no more, for
        :func:`denial`), while the user still may not run a command Redis refused it (``may_run``), or, when
        Redis cannot say (no command named, or the rights cannot be asked), until the outage ends; None when
        Redis refused the user nothing, or the user may run those commands again (the outage is said to be
        over only once writes went through for ``STEADY_SECONDS``). Raises ``redis.RedisError`` when Redis
        fails."""
        refused = self._refused_user
        if refused is None or self.since is None:
            return None
        server = server_of(self.crawler)
        asked = [may_run(server, command) for command in sorted(self.denied)]
        return refused if False in asked or True not in asked else None

    def _why_denied(self, exc: redis.ResponseError) -> tuple[str | None, str | None]:
        """Why Redis refused the user (``exc``: :func:`denied`): ``("command", name)`` named in its reply,
        or, for a command or key a Lua script called, what its ACL LOG says (:func:`script_refusal`, on the
        worker's own connections); ``(None, None)`` when neither says."""
        if isinstance(exc, NoPermissionError):
            return "command", refused_command(exc)
        return script_refusal(server_of(self.crawler))

    def _why_unanswered(self, exc: redis.TimeoutError) -> str | None:
        """Why Redis answered nothing for the socket timeout (:func:`unanswered`, on a new connection of
        the worker's client); None when that cannot say."""
        try:
            return unanswered(server_of(self.crawler), exc)
        except redis.RedisError:
            return None

    def _why_refused(self) -> str:
        """What Redis's refusal means and what to do, naming its data file (``writes_refused``): ``; `` and
        that, or nothing when Redis cannot say (it answers PING: OOM, a replica; or it is gone now)."""
        try:
            why = writes_refused(server_of(self.crawler))
        except redis.RedisError:
            return ""
        return f"; {why.removeprefix('Redis refuses writes: ')}" if why else ""

    def _still_refused(self) -> bool:
        """True when Redis still refuses writes, though one succeeded: at its ``maxmemory`` it takes those
        that free memory (a DEL, a lease released), not those that take it (``writes_refused``); a user
        who may write still may not run a command Redis refused it (``may_run``; when Redis cannot say,
        the write check alone decides)."""
        server = server_of(self.crawler)
        try:
            if any(may_run(server, command) is False for command in sorted(self.denied)):
                return True
            return writes_refused(server) is not None
        except redis.RedisError:
            return True

    def ok(self, *, wrote: bool) -> None:
        """A call to Redis succeeded; ``wrote``: it ran a write command (so Redis takes writes), not only
        reads."""
        now = self._last_ok = self.clock()
        if self.since is None or (self.refusing and not wrote):
            return
        if self.refusing:
            if self._still_refused():
                self._steady.reset()
                return
            if (steady := self._steady.over(now)) is None:
                return
            logger.info("Redis takes writes again after %.1f s", steady - self.since, extra=TOLD)
        else:
            logger.info("Redis is back after %.1f s", now - self.since, extra=TOLD)
        self.since, self.refusing, self._refused_user = None, False, None
        self._steady.reset()
        self.denied.clear()


def _refuses_writes(exc: redis.RedisError) -> bool:
    """True when ``exc`` is Redis refusing a write (``MISCONF``, ``OOM``, ``READONLY``) or a command the
    user may not run (``NOPERM``), whether it was a command, a command of a pipeline or a command of a Lua
    script (each words it differently, and redis-py drops the code of an ``OOM``, ``READONLY`` or ``NOPERM``
    of a command or pipeline, raising its own class)."""
    if isinstance(exc, OutOfMemoryError | ReadOnlyError) or denied(exc):
        return True
    return isinstance(exc, redis.ResponseError) and _WRITE_REFUSED.search(str(exc)) is not None


def wrong_type(exc: BaseException) -> bool:
    """True when ``exc`` is Redis's reply to a command on a key that holds another type (WRONGTYPE: someone
    SET it), which fails that command alone."""
    return isinstance(exc, redis.ResponseError) and "WRONGTYPE" in str(exc)


def refused_reply(replies: Iterable[object]) -> redis.RedisError | None:
    """The first error among a pipeline's ``replies`` (``execute(raise_on_error=False)``) that is not a key
    of another type (:func:`wrong_type`, whose command alone failed): Redis refusing writes, as when it is
    away."""
    return next(
        (reply for reply in replies if isinstance(reply, redis.RedisError) and not wrong_type(reply)),
        None,
    )


class WrongTypeKeys:
    """The hashes a flush found holding another type (someone SET them), each named once while it does:
    ``what`` was not written, ``kept`` says that its counts wait for the key's removal."""

    def __init__(self, what: str, kept: str) -> None:
        self.what, self.kept = what, kept
        self.named: set[str] = set()

    def say(self, keys: set[str]) -> None:
        """Name those of ``keys`` not named at the last flush; the others named are forgotten."""
        for key in sorted(keys - self.named):
            logger.warning(
                "%s not written: Redis key %s holds another type than a hash (someone SET it); %s and written"
                " once it is removed: redis-cli DEL %s",
                self.what,
                key,
                self.kept,
                key,
            )
        self.named = keys


def outage_of(crawler: Crawler) -> RedisOutage:
    """The crawl's account of Redis being away, shared by every plug-in that calls Redis."""
    outage = _outages.get(crawler)
    if outage is None:
        outage = _outages[crawler] = RedisOutage(crawler)
    return outage
