"""Shared fixtures: the local test site server (a real HTTP server in a subprocess on 127.0.0.1) and the
embedded Redis server (one real redis-server for the session, in a temporary folder). Every test runs without
``CRAWLER_COMMAND`` (``./run.sh test`` exports it): the commands the crawler suggests read as a user who runs
``crawler`` sees them, whether the tests run under ``./run.sh`` or plain pytest; a test of the variable
sets it."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis

TESTS_DIR = Path(__file__).resolve().parent
SITE_SERVER_SCRIPT = TESTS_DIR / "siteserver.py"
SITES_DIR = TESTS_DIR / "sites"
STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
# `python -X dev` runs asyncio in debug mode, which logs each callback that ran longer than 0.1 s: a line that
# tells how loaded the machine was, not what the command said.
_SLOW_CALLBACK = re.compile(r"^.*\[asyncio\] WARNING: Executing .* took \d+\.\d+ seconds\n", re.MULTILINE)


def command_stderr(stderr: str) -> str:
    """What a command run with ``python -X dev`` said on stderr: without asyncio's slow-callback lines."""
    return _SLOW_CALLBACK.sub("", stderr)


def stderr_until_interrupted(worker: subprocess.Popen[str], timeout: float) -> list[str]:
    """The stderr lines of a started `crawler worker` (its stderr a text pipe): those up to Scrapy's
    "Spider opened", then, once it was sent SIGINT there, the rest until it exits (within ``timeout``)."""
    assert worker.stderr is not None
    lines = []
    for line in worker.stderr:
        lines.append(line)
        if "Spider opened" in line:
            break
    worker.send_signal(signal.SIGINT)
    rest = worker.communicate(timeout=timeout)[1]
    return lines + rest.splitlines(keepends=True)


@dataclass(frozen=True, slots=True)
class SiteServer:
    """The running test site server: ``url("/news/x.html")`` is a page on it."""

    host: str
    port: int
    root: Path

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.origin}{path}"


@pytest.fixture(autouse=True)
def _plain_crawler_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRAWLER_COMMAND", raising=False)


@pytest.fixture(scope="session")
def site_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    """Start ``tests/siteserver.py`` once per session; stopped (killed if need be) at the end."""
    with serving(SITES_DIR, tmp_path_factory.mktemp("siteserver") / "stderr.log") as server:
        yield server


@contextmanager
def serving(root: Path, log_path: Path) -> Iterator[SiteServer]:
    """``tests/siteserver.py`` serving the files of ``root`` (its stderr in ``log_path``) while the block
    runs; stopped (killed if need be) after it."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(SITE_SERVER_SCRIPT), "--root", str(root)],
            stdin=subprocess.PIPE,  # the server stops when this pipe closes, even if pytest is killed
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        port = _read_port(process, log_path)
        yield SiteServer("127.0.0.1", port, root)
    finally:
        _stop(process)


def _read_port(process: subprocess.Popen[bytes], log_path: Path) -> int:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTUP_TIMEOUT)
    line = process.stdout.readline() if ready else b""
    try:
        return int(line.decode("ascii").strip())
    except ValueError:
        _stop(process)
        errors = log_path.read_text("utf-8", "replace").strip()
        raise RuntimeError(
            f"the test site server did not print its port within {STARTUP_TIMEOUT:g} s"
            f" (first line {line!r}); its stderr: {errors or '(empty)'}"
        ) from None


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One embedded Redis server for the test session; yields its URL, shut down at the end."""
    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture
def redis_client(redis_server: str) -> Iterator[redis.Redis]:
    """A client of the session's Redis server, emptied (FLUSHALL) before the test."""
    client = connect(redis_server)
    client.flushall()
    try:
        yield client
    finally:
        client.close()
