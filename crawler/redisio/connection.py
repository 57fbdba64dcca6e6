"""Which Redis to use and how to connect to it: ``REDIS_URL`` when set, else the embedded server.

Typical use (the caller closes the embedded server, which stops it only if this process started it)::

    url, embedded = resolve_redis_url(config.redis_url, config.data_dir)
    client = connect(url)
    ...
    client.close()
    if embedded is not None:
        embedded.close()
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import re
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard, cast
from urllib.parse import parse_qs, unquote, urlsplit
from weakref import WeakKeyDictionary

import redis
from redis.commands.core import Script
from redis.connection import URL_QUERY_ARGUMENT_PARSERS
from redis.exceptions import NoPermissionError, OutOfMemoryError, ReadOnlyError

from crawler.errors import redacted
from crawler.redisio.clock import redis_clock
from crawler.redisio.embedded import EmbeddedRedis, RedisUnavailableError
from crawler.threads import process_stopped

__all__ = [
    "MAX_CLIENTS_FIX",
    "NO_PERMISSION_FIX",
    "RedisUnavailableError",
    "connect",
    "decoded",
    "denial",
    "denied",
    "evicts",
    "hash_of",
    "lost_while",
    "may_run",
    "read_wrong_as",
    "refused_command",
    "resolve_redis_url",
    "script",
    "script_refusal",
    "turned_away",
    "unanswered",
    "writes_refused",
]

logger = logging.getLogger(__name__)

_scripts: WeakKeyDictionary[redis.Redis, dict[str, Script]] = WeakKeyDictionary()

# Seconds to open a connection: Redis answers at once or not at all.
CONNECT_TIMEOUT = 5.0
# Seconds a command may take: a whole Lua call on a page's links included, with room for a slow disk.
SOCKET_TIMEOUT = 30.0
# A connection idle this many seconds is checked with a PING before it is used again.
HEALTH_CHECK_INTERVAL = 15
# Seconds a new connection waits for each answer when it asks why Redis answered nothing (unanswered): a
# Redis that runs and is not held answers a PING or a write that changes nothing in a millisecond.
PROBE_SECONDS = 2.0


def resolve_redis_url(
    url: str | None, data_dir: Path, *, reads_only: bool = False
) -> tuple[str, EmbeddedRedis | None]:
    """The Redis URL to use and the embedded server behind it if there is one.

    ``url`` (``REDIS_URL``) wins: it is checked with a PING, and :class:`RedisUnavailableError` says so
    when nothing answers there. Without it, the embedded server under ``data_dir`` is started, or attached
    to when another process runs it; call its ``close()`` when done. A Redis that refuses writes (its
    disk is full) is an error that says so and what to do (:func:`writes_refused`), unless ``reads_only``.
    """
    if url:
        client = _client(str(url), "REDIS_URL")
        try:
            failure = _ping_failure(client)
            refused = None if failure is not None or reads_only else writes_refused(client)
        finally:
            client.close()
        if failure is not None:
            why, runs = failure
            raise RedisUnavailableError(
                f"cannot use Redis at {redacted(str(url))} (REDIS_URL): {why}"
                if runs
                else f"cannot reach Redis at {redacted(str(url))} (REDIS_URL): {why};"
                " start it or unset REDIS_URL to use the embedded server"
            )
        if refused is not None:
            raise RedisUnavailableError(f"{refused} (REDIS_URL {redacted(str(url))})")
        if not reads_only:
            _warn_of_eviction(str(url))
        return str(url), None
    embedded = EmbeddedRedis(data_dir)
    resolved = embedded.ensure(reads_only=reads_only)
    if not reads_only:
        try:
            connect(resolved).close()
        except RedisUnavailableError:
            embedded.close()
            raise
    return resolved, embedded


def connect(url: str, *, reads_only: bool = False) -> redis.Redis:
    """A client of the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``), checked with a PING:
    bytes in and out (``decode_responses=False``), bounded timeouts, health checks on idle connections.
    A Redis that refuses writes (its disk is full) is an error that says so and what to do
    (:func:`writes_refused`), unless ``reads_only``: its reads still work. This process's offset to Redis's
    clock is measured (:func:`crawler.redisio.clock.redis_clock`), by which it stamps the times other
    machines compare."""
    client = _client(url, "the Redis URL")
    failure = _ping_failure(client)
    refused = None if failure is not None or reads_only else writes_refused(client)
    if failure is not None:
        client.close()
        why, runs = failure
        raise RedisUnavailableError(f"cannot {'use' if runs else 'reach'} Redis at {redacted(url)}: {why}")
    if refused is not None:
        client.close()
        raise RedisUnavailableError(refused)
    # A user Redis does not let run TIME (an ACL) stamps by this machine's clock.
    with contextlib.suppress(NoPermissionError):
        redis_clock(client)
    return client


# Seconds writes must go through, none refused, before an outage of refused writes is said to be over: a
# Redis whose memory hovers at its maxmemory takes a write, then refuses the next (the fault hunt's OOM
# outage said "refuses writes" and "takes writes again" 10-19 times in 20 s, a refusal every 1-2 s).
STEADY_SECONDS = 10.0


class SteadyWrites:
    """Whether an outage of refused writes is over: once writes went through for ``STEADY_SECONDS``, none
    refused. A refusal before then goes on with the same outage, not a new one (a Redis whose memory hovers
    at its maxmemory takes a write, then refuses the next). Times are the caller's monotonic seconds."""

    def __init__(self) -> None:
        # Since when writes go through, none refused (None: not now).
        self.since: float | None = None

    def reset(self) -> None:
        """A write was refused, or the outage is over: writes go through steadily from the next one."""
        self.since = None

    def over(self, now: float) -> float | None:
        """A write went through at ``now``: once writes went through for ``STEADY_SECONDS``, since when they
        did (the outage's end); None before."""
        if self.since is None:
            self.since = now
        return self.since if now - self.since >= STEADY_SECONDS else None


def writes_refused(server: redis.Redis) -> str | None:
    """Why Redis refuses writes, quoting it, and what to do: it runs, but answers PING with an error
    (``MISCONF`` when it could not write its data to disk), or answers PING and refuses a write that
    changes nothing (:func:`_write_refused`: its memory is full, it is a read-only replica, the user may
    not write); None when it takes writes."""
    try:
        server.ping()
    except redis.ResponseError as exc:
        said = str(exc)
    else:
        return _write_refused(server)
    if not said.startswith("MISCONF"):
        return f'Redis runs but answers PING with an error: "{said}"; its log says why'
    kind, setting = ("append-only", "appendfilename") if "AOF" in said else ("snapshot (RDB)", "dbfilename")
    path = _data_file(server, setting)
    what = f"its {kind} file" + (f" {path}" if path else "")
    if "No space left on device" in said:
        cause, fix = f"the disk of {what} is full", "free space on that disk"
    else:
        cause, fix = f"it cannot write {what}", "make it writable again (its log says what failed)"
    return (
        f'Redis refuses writes: {cause} (Redis says "{said}"); {fix}: Redis then takes writes again by'
        " itself, and nothing is lost (what it could not write yet waits in its memory: keep it running"
        " until then)"
    )


def evicts(server: redis.Redis) -> str | None:
    """What to do when Redis may evict keys (a ``maxmemory`` and a ``maxmemory-policy`` other than
    ``noeviction``), with how many it evicted so far: it would drop queued requests, leases, attempts
    and the seen-URL filter without a word; None when it evicts nothing, or INFO is refused."""
    memory = _info(server, "memory")
    policy = decoded(memory.get("maxmemory_policy", "noeviction"))
    if not memory.get("maxmemory") or policy == "noeviction":
        return None
    evicted = int(_info(server, "stats").get("evicted_keys", 0))
    return (
        f"Redis may evict keys: at its maxmemory of {memory['maxmemory']} bytes its maxmemory-policy"
        f" {policy} drops keys (it dropped {evicted} so far), which loses queued requests, leases and the"
        " seen-URL filter without a word; set maxmemory-policy noeviction (`redis-cli CONFIG SET"
        " maxmemory-policy noeviction`, and in its configuration file): a full Redis then refuses writes,"
        " which the crawler says and waits out"
    )


def _warn_of_eviction(url: str) -> None:
    """Log a warning when the Redis at ``url`` may evict keys (:func:`evicts`)."""
    client = _client(url, "REDIS_URL")
    try:
        said = evicts(client)
    finally:
        client.close()
    if said is not None:
        logger.warning("%s (REDIS_URL %s)", said, redacted(url))


def _write_refused(server: redis.Redis) -> str | None:
    """Why Redis, which answers PING, refuses a write that changes nothing (a SET of a key only if it
    exists, on a key that does not): ``OOM`` (its ``maxmemory`` is full and its policy evicts nothing),
    ``READONLY`` (a replica) or ``NOPERM`` (the user of the URL may not run SET); None when it takes it.
    Redis checks these before it runs a command, so the write's outcome is that of every write."""
    try:
        server.set(_WRITE_CHECK_KEY, b"", xx=True)
    except redis.ResponseError as exc:
        refusal = exc
    else:
        return None
    said = str(refusal)
    if isinstance(refusal, OutOfMemoryError):
        memory = _info(server, "memory")
        limit = f" of {memory['maxmemory']} bytes" if memory.get("maxmemory") else ""
        return (
            f'Redis refuses writes: its memory is full (maxmemory{limit}; Redis says "{said}"); raise its'
            " maxmemory (CONFIG SET maxmemory, and in its configuration file) or free memory: Redis then"
            " takes writes again, and nothing it stored is lost"
        )
    if isinstance(refusal, ReadOnlyError):
        replication = _info(server, "replication")
        primary = (
            f" at {decoded(replication['master_host'])}:{replication['master_port']}"
            if replication.get("master_host")
            else ""
        )
        return (
            f"Redis refuses writes: it is a read-only replica of another Redis{primary}"
            f' (Redis says "{said}"); set REDIS_URL to that primary, which takes the writes'
        )
    if isinstance(refusal, NoPermissionError) and "command" in said:
        return (
            f'Redis refuses writes: the user of the Redis URL may not write (Redis says "{said}");'
            f" {NO_PERMISSION_FIX}"
        )
    return None


def refused_command(refusal: NoPermissionError) -> str | None:
    """The command a ``NOPERM`` reply says the user may not run ("... no permissions to run the 'evalsha'
    command ..."); None when it names none (a key the user may not touch) or names a subcommand."""
    named = _REFUSED_COMMAND.search(str(refusal))
    return named.group(1) if named else None


def denied(exc: BaseException) -> TypeGuard[redis.ResponseError]:
    """True when ``exc`` is Redis refusing its user a command or a key (ACL): a command's or a pipeline's
    ``NOPERM``, or that of a command a Lua script calls (an error of the script, its own words)."""
    return isinstance(exc, NoPermissionError) or (
        isinstance(exc, redis.ResponseError) and _SCRIPT_DENIED in str(exc)
    )


def denial(
    exc: redis.RedisError, url: str | None, prefix: str, logged: tuple[str | None, str | None] | None = None
) -> str:
    """What Redis refused the user of ``url`` (None: the embedded server's, its ``default`` user), quoting
    Redis (``exc``: :func:`denied`), and the fix: that command, or the keys under ``prefix``, given to the
    user. What a Lua script was refused is not in Redis's reply: it is ``logged`` when the caller read it
    already (:func:`script_refusal`'s answer), else read from Redis's ``ACL LOG`` when the user may read
    it."""
    user = unquote(urlsplit(url).username or "default") if url else "default"
    reason: str | None
    refused: str | None
    if isinstance(exc, NoPermissionError):
        reason, refused = ("key", None) if _KEY_DENIED in str(exc) else ("command", refused_command(exc))
    elif logged is not None:
        reason, refused = logged
    elif url:
        client = _client(url, "REDIS_URL")
        try:
            reason, refused = script_refusal(client)
        finally:
            client.close()
    else:
        reason, refused = None, None
    everything = f"ACL SETUSER {user} on ~{prefix}:* +@all"
    if reason == "key":
        what = f"use the key {refused}" if refused else "use a key of the crawler"
        fix = f"ACL SETUSER {user} ~{prefix}:*"
    elif refused:
        what = f"run {refused.upper()}, a command the crawler needs"
        fix = f"ACL SETUSER {user} +{refused}; or every command the crawler needs: {everything}"
    else:
        what = "run a command the crawler needs (Redis's ACL LOG names it)"
        fix = everything
    return (
        f'the Redis user {user} may not {what} (Redis says "{exc}"); give it to that user ({fix}), or put a'
        " user who has it in REDIS_URL"
    )


def script_refusal(server: redis.Redis) -> tuple[str | None, str | None]:
    """Why Redis last refused the user of ``server`` a command or a key a Lua script called, from its ``ACL
    LOG``: ``command`` or ``key`` and the command or key refused; (None, None) when the log says nothing of
    it or cannot be read (the user may not run ACL)."""
    user = server.connection_pool.connection_kwargs.get("username") or "default"
    try:
        entries = server.acl_log(_ACL_LOG_ENTRIES)
    except redis.RedisError:
        return None, None
    # redis-py reads the log's entries as text. A script's refusal is logged in the context "lua", or
    # "multi" (Redis 6.2, whose scripts run as a transaction), not "toplevel" (a command of a client).
    for entry in entries:
        if entry.get("username") == user and entry.get("context") != "toplevel":
            return str(entry.get("reason")), str(entry.get("object"))
    return None, None


def may_run(server: redis.Redis, command: str) -> bool | None:
    """Whether the user of ``server`` may run ``command`` now, asked without running it: the command, with
    as many arguments as it takes, is queued in a transaction that is then discarded (Redis checks the
    user's rights as it queues a command, and runs nothing); None when Redis cannot say (the user may not
    run COMMAND or MULTI)."""
    connection = server.connection_pool.get_connection()
    try:
        info = _reply(connection, "COMMAND", "INFO", command)
        if not isinstance(info, list) or not info or not isinstance(info[0], list):
            return None
        # Arity counts the command's name, a negative one as a least number; Redis checks it before the
        # rights, so the command is given that many arguments.
        _reply(connection, "MULTI")
        allowed: bool | None = True
        try:
            _reply(connection, command, *[_WRITE_CHECK_KEY] * (abs(int(info[0][1])) - 1))
        except NoPermissionError:
            allowed = False
        except redis.ResponseError:
            allowed = None  # a command a transaction may not hold (WATCH): it cannot be asked so
        _reply(connection, "DISCARD")
    except redis.ResponseError:
        return None  # COMMAND or MULTI refused; nothing is left queued
    except (redis.ConnectionError, redis.TimeoutError):
        connection.disconnect()  # type: ignore[no-untyped-call]
        raise
    finally:
        server.connection_pool.release(connection)
    return allowed


def _reply(connection: redis.connection.AbstractConnection, *command: str | bytes) -> object:
    """Redis's reply to ``command`` on ``connection``, unparsed (an error reply raised)."""
    connection.send_command(*command)  # type: ignore[no-untyped-call]
    return connection.read_response()


# A NOPERM reply naming the command refused (a subcommand, "config|set", is not named alone).
_REFUSED_COMMAND = re.compile(r"no permissions to run the '([a-z_.-]+)' command")
# The words of Redis's error of a Lua script that called a command or a key its user may not use.
_SCRIPT_DENIED = "The user executing the script can't"
# The words of a NOPERM reply to a command on a key its user may not use.
_KEY_DENIED = "no permissions to access one of the keys"
# The latest refusals of Redis's ACL LOG read to find the one of a Lua script: the command's is among the
# last few, unless other clients are refused many meanwhile.
_ACL_LOG_ENTRIES = 16

# What to do when the user of the Redis URL may not run a command the crawler needs (NOPERM).
AUTHENTICATION_FIX = (
    "put its user and password in the Redis URL (REDIS_URL=redis://USER:PASSWORD@HOST:PORT; the user"
    " default when it has a password alone: redis://:PASSWORD@HOST:PORT), then start the crawler's processes"
    " again: a running one cannot learn them"
)
# What to do when Redis has as many clients as its maxclients allows (redis-py's message for its reply).
_MAX_CLIENTS = "max number of clients reached"
MAX_CLIENTS_FIX = (
    "it has as many clients as its maxclients allows (CONFIG GET maxclients on a connection it holds, or its"
    " configuration file, says how many; INFO clients how many it has): stop the processes that hold"
    " connections they do not need, or raise maxclients (CONFIG SET maxclients, and in its configuration"
    " file); the crawler's processes connect again by themselves"
)
NO_PERMISSION_FIX = (
    "give that user the crawler's commands on its keys (ACL SETUSER <user> on ~<REDIS_KEY_PREFIX>:* +@all),"
    " or put a user who has them in the URL"
)

# The key of :func:`_write_refused`'s write, which sets it only if it exists: it never does.
_WRITE_CHECK_KEY = b"crawler:write-check"


def _info(server: redis.Redis, section: str) -> dict[str, Any]:
    """The ``section`` of Redis's INFO; empty when INFO is refused (ACL)."""
    try:
        return dict(server.info(section))
    except redis.ResponseError:
        return {}


def _data_file(server: redis.Redis, setting: str) -> PurePosixPath | None:
    """The path of Redis's data file named by ``setting`` (in its folder ``dir``), as its configuration
    says; None when the configuration cannot be read (CONFIG refused)."""
    try:
        folder = server.config_get("dir").get("dir")
        name = server.config_get(setting).get(setting)
    except redis.ResponseError:
        return None
    return PurePosixPath(decoded(folder)) / decoded(name) if folder and name else None


def _client(url: str, source: str) -> redis.Redis:
    split = urlsplit(url)
    scheme = split.scheme
    if "@" not in split.netloc and redacted(url).partition("://")[2].startswith("***@"):
        # Read on, its query parameters or redis-py's error ("Port could not be cast to integer value as
        # 'pa'") would show pieces of the password.
        raise RedisUnavailableError(
            f"{source} {redacted(url)!r} is not a Redis URL: a '?', '#' or '/' in its user name or password"
            " ends the URL's host part there; write each percent-encoded (? as %3F, # as %23, / as %2F)"
        )
    refused = _refused_query_parameters(url, scheme) if scheme in _CONNECTION_CLASSES else []
    if refused:
        shown = ", ".join(sorted(_query_parameters(scheme) & _SHOWN))
        raise RedisUnavailableError(
            f"{source} {redacted(url)!r} has query parameters redis-py does not take for a {scheme}:// URL:"
            f" {', '.join(refused)}; redis-py would fail with a TypeError at the first command; remove them"
            f" (known ones for {scheme}:// include {shown})"
        )
    untaken = _untaken_query_parameters(url, scheme) if scheme in _CONNECTION_CLASSES else []
    if untaken:
        raise RedisUnavailableError(
            f"{source} {redacted(url)!r} has query parameters the crawler does not take:"
            f" {', '.join(untaken)}; remove them"
        )
    try:
        return redis.Redis.from_url(url, **_CLIENT_OPTIONS)
    except ValueError as exc:
        raise RedisUnavailableError(
            f"{source} {redacted(url)!r} is not a Redis URL ({exc}); expected"
            " redis://host:port/db, rediss://host:port/db or unix:///path/to/redis.sock"
        ) from None


# What the crawler gives every client: bytes in and out, UTF-8 text, bounded timeouts, health checks. A
# query parameter of the URL would win over it (redis-py lets it), so none may name it.
_CLIENT_OPTIONS: dict[str, object] = {
    "decode_responses": False,
    "encoding": "utf-8",
    "encoding_errors": "strict",
    "socket_connect_timeout": CONNECT_TIMEOUT,
    "socket_timeout": SOCKET_TIMEOUT,
    "health_check_interval": HEALTH_CHECK_INTERVAL,
}
# The connections redis-py makes for a URL of each scheme.
_CONNECTION_CLASSES: dict[str, type[object]] = {
    "redis": redis.Connection,
    "rediss": redis.SSLConnection,
    "unix": redis.UnixDomainSocketConnection,
}
# The query parameters a refusal names as known ones when the URL's scheme takes them: the common ones,
# not redis-py's internal ones.
_SHOWN = frozenset(URL_QUERY_ARGUMENT_PARSERS) - {"retry_on_error"} - _CLIENT_OPTIONS.keys() | {
    "client_name",
    "password",
    "ssl_ca_certs",
    "ssl_cert_reqs",
    "ssl_certfile",
    "ssl_keyfile",
    "username",
}
# The query parameters a URL can give, as text, when its scheme takes them: those redis-py converts from
# text, and those it takes as text. Not retry_on_error: redis-py makes a list of its letters.
_TEXT = _SHOWN | {
    "host",
    "lib_name",
    "lib_version",
    "path",
    "port",
    "ssl_ca_data",
    "ssl_ca_path",
    "ssl_ciphers",
    "ssl_ocsp_expected_cert",
    "ssl_password",
}
# What the connection pool reads from the keyword parameters it hands on to its connections.
_POOL_KEYWORDS = frozenset({"cache", "cache_config"})


@functools.cache
def _query_parameters(scheme: str) -> frozenset[str]:
    """The query parameters redis-py takes in a URL of ``scheme``: the keyword parameters of its connection
    pool and those the pool reads (``cache``), and those of the connections it makes for that scheme, to
    which it hands every other query parameter as it is (as text when it has no parser for it)."""
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    pool = {
        name
        for name, parameter in inspect.signature(redis.ConnectionPool.__init__).parameters.items()
        if parameter.kind in keywords and name != "self"
    }
    connection = {
        name
        for cls in _CONNECTION_CLASSES[scheme].__mro__
        if "__init__" in vars(cls)
        for name, parameter in inspect.signature(vars(cls)["__init__"]).parameters.items()
        if parameter.kind in keywords and name != "self"
    }
    return frozenset(pool | _POOL_KEYWORDS | connection)


def _refused_query_parameters(url: str, scheme: str) -> list[str]:
    """The query parameters of ``url`` that redis-py does not take for ``scheme``, each with what takes it
    when something does (redis-py would hand them to a connection that fails on them)."""
    refused = []
    for name in sorted(set(parse_qs(urlsplit(url).query)) - _query_parameters(scheme)):
        takers = [f"{other}://" for other in _CONNECTION_CLASSES if name in _query_parameters(other)]
        if takers:
            refused.append(f"{name} (only {' and '.join(takers)} URLs take it)")
        elif name in URL_QUERY_ARGUMENT_PARSERS:
            refused.append(f"{name} (redis-py reads it, but no connection from a URL takes it)")
        else:
            refused.append(name)
    return refused


def _untaken_query_parameters(url: str, scheme: str) -> list[str]:
    """The query parameters of ``url`` that redis-py takes for ``scheme`` but the crawler does not, each
    with its value as a message may show it and why: the crawler sets it itself, or redis-py takes a
    Python object there (a flag, a class, a function), which it would get as text or a list of letters."""
    values = parse_qs(urlsplit(redacted(url)).query)
    untaken = []
    for name in sorted(set(parse_qs(urlsplit(url).query)) & _query_parameters(scheme)):
        value = values[name][0]
        if name in _CLIENT_OPTIONS:
            untaken.append(f"{name}={value} (the crawler sets it itself, to {_CLIENT_OPTIONS[name]!r})")
        elif name not in _TEXT:
            untaken.append(f"{name}={value} (redis-py takes a Python object there, which text cannot give)")
    return untaken


def turned_away(exc: redis.RedisError) -> str | None:
    """What to do when Redis runs but turns the client away with ``exc``: it asks for a password the URL
    does not give or gives wrong (``NOAUTH``, ``WRONGPASS``), or it has as many clients as its
    ``maxclients`` allows; None for any other error."""
    if isinstance(exc, redis.AuthenticationError):
        return f"Redis asks for a user and password (it says: {exc}); {AUTHENTICATION_FIX}"
    if isinstance(exc, redis.ConnectionError) and str(exc) == _MAX_CLIENTS:
        return f"Redis runs but takes no new connection (it says: {exc}); {MAX_CLIENTS_FIX}"
    return None


def unanswered(server: redis.Redis, exc: redis.TimeoutError) -> str | None:
    """Why Redis took a command of ``server`` and answered nothing for its socket timeout (``exc``, a read
    that timed out), and what to check, asked on a new connection (each answer awaited ``PROBE_SECONDS``):
    it answers nothing there either (paused for every client, stopped, or busy in one command; the embedded
    server's process found stopped is named), it answers PING but holds a write (its writes are paused), or
    it answers both now (it was held or busy until now). None for another timeout (connecting, writing),
    or when the new connection is refused (Redis is gone: the caller says so)."""
    if not str(exc).startswith("Timeout reading"):
        return None
    pool = server.connection_pool
    waited = f"{pool.connection_kwargs.get('socket_timeout') or SOCKET_TIMEOUT:g} s"
    probe = pool.connection_class(
        **dict(pool.connection_kwargs, socket_timeout=PROBE_SECONDS, socket_connect_timeout=PROBE_SECONDS)
    )
    step = "PING"
    try:
        _reply(probe, "PING")
        step = "a write that changes nothing"
        _reply(probe, "SET", _WRITE_CHECK_KEY, b"", "XX")
    except redis.TimeoutError as probed:
        if not str(probed).startswith("Timeout reading"):
            return None
    except redis.ResponseError as said:
        return f'Redis answered nothing for {waited}, and a new connection\'s {step} with "{said}"'
    except redis.ConnectionError:
        return None
    else:
        return (
            f"Redis answered nothing for {waited}, and answers a new connection at once now: it was paused"
            " (CLIENT PAUSE) or busy with one long command until now (SLOWLOG GET names a slow one)"
        )
    finally:
        probe.disconnect()
    if step != "PING":
        return (
            f"Redis answered nothing for {waited}, and on a new connection answers PING but holds a write"
            f" {PROBE_SECONDS:g} s: its writes are paused (CLIENT PAUSE with WRITE, or a FAILOVER under way),"
            " which holds the crawler's scripts too until CLIENT UNPAUSE or the pause's timeout ends it (a"
            " command held past the socket timeout is dropped with its connection, and tried again)"
        )
    stopped = _stopped_embedded_server(pool.connection_kwargs.get("path"))
    if stopped is not None:
        return (
            f"Redis took the connection and answered nothing for {waited}: the embedded server's process"
            f" (pid {stopped}) is stopped (SIGSTOP, Ctrl-Z); `kill -CONT {stopped}` resumes it"
        )
    return (
        f"Redis took the connection and answered nothing for {waited}, nor PING on a new connection in"
        f" {PROBE_SECONDS:g} s: it is paused for every client (CLIENT PAUSE, which holds even CLIENT UNPAUSE"
        " until the pause's timeout ends it), its process is stopped (SIGSTOP, a suspended machine), or"
        " it is busy with one long command (SLOWLOG GET names it afterwards)"
    )


def _stopped_embedded_server(socket_path: object) -> int | None:
    """The pid of the embedded server of the unix socket ``socket_path`` (its ``redis.pid`` beside it) when
    its process is stopped; None when it is not, or none is known (another Redis)."""
    if not isinstance(socket_path, str):
        return None
    try:
        pid = int((Path(socket_path).parent / "redis.pid").read_text("ascii").strip())
    except (OSError, ValueError):
        return None
    return pid if process_stopped(pid) else None


def _ping_failure(client: redis.Redis) -> tuple[str, bool] | None:
    """Why ``client`` cannot PING its server, and whether the server runs (it answered, turning the client
    away: :func:`turned_away`; or it took the new connection and closed it before the PING was sent, as
    one at its ``maxclients`` does when its reply comes first; or it took it and answered nothing:
    :func:`unanswered`), or None when it can."""
    try:
        client.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        if (turned := turned_away(exc)) is not None:
            return turned, True
        if isinstance(exc, redis.TimeoutError) and (held := unanswered(client, exc)) is not None:
            return held, True
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, BrokenPipeError | ConnectionResetError):
            return (
                f"Redis took the connection and closed it at once ({cause.strerror}): it runs but turns new"
                " connections away; at its maxclients it does so (INFO clients says how many it has; raise"
                " maxclients or stop processes that hold connections), else its log says why",
                True,
            )
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror, False
        return str(exc), False
    except redis.ResponseError:
        return None  # it answers, with an error: see writes_refused
    return None


def lost_while(what: str, exc: BaseException) -> str:
    """How Redis failed a command while ``what`` went on (``exc``: a connection error): gone, or, a reply
    that did not come within the socket timeout, holding the command (it still runs)."""
    if isinstance(exc, redis.TimeoutError) and str(exc).startswith("Timeout reading"):
        waited = float(cast("float", _CLIENT_OPTIONS["socket_timeout"]))
        return (
            f"Redis took a command and answered nothing for {waited:g} s while {what} ({exc}): it is paused"
            " (CLIENT PAUSE), stopped (SIGSTOP) or busy with one long command, not gone"
        )
    return f"Redis went away while {what} ({exc})"


def decoded(value: bytes | str) -> str:
    """A reply of the clients of :func:`connect` (bytes) as text."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def script(server: redis.Redis, text: str) -> Script:
    """The Lua ``text`` registered on ``server`` once: a call of it is an EVALSHA, the text sent again only
    when Redis lost it (NOSCRIPT: restarted, SCRIPT FLUSH). For module functions handed a client; an object
    that keeps its client registers its scripts itself (``server.register_script``). Not for a pipeline,
    which checks its scripts with SCRIPT EXISTS, a round trip more at each execute: EVAL there."""
    registered = _scripts.setdefault(server, {})
    found = registered.get(text)
    if found is None:
        found = registered[text] = server.register_script(text)
    return found


def hash_of(server: redis.Redis, key: str) -> dict[str, str]:
    """The hash at ``key`` (HGETALL) with its fields and values as text; empty when there is none."""
    return {decoded(field): decoded(value) for field, value in server.hgetall(key).items()}


def read_wrong_as(replies: list[Any], default: Any) -> list[Any]:
    """A pipeline's ``replies``, each WRONGTYPE error read as ``default`` (a key someone overwrote with
    another type, which `crawler status` names); any other error raised."""
    for reply in replies:
        if isinstance(reply, redis.ResponseError) and "WRONGTYPE" not in str(reply):
            raise reply
    return [default if isinstance(reply, redis.ResponseError) else reply for reply in replies]
