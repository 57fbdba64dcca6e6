"""``crawler demo`` starts its data folder anew, but never one in use: not under a worker that uses its
embedded Redis, not under a ``crawler demo --serve`` whose printed commands crawl its rules, not with
articles waiting in its MongoDB spool (docs/cli.md)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from test_first_hour import crawler, demo_rule

from crawler.cli.crawl import _leftovers
from crawler.config import crawl_settings
from crawler.demo import DEMO_PORT
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis, process_running
from crawler.redisio.queue import LeasedQueue
from crawler.requests import enqueue_job
from crawler.rules import load_rules
from crawler.status import workers_alive
from crawler.worker.heartbeat import announced

START_TIMEOUT = 60.0


def _environment() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CRAWLER_", "REDIS_", "MONGO_"))
    }


def _start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=cwd,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def _served_until_interrupted(*args: str, cwd: Path) -> str:
    """The stderr of `crawler demo --serve ...` (``args``), interrupted once it serves."""
    serving = _start(*args, cwd=cwd)
    try:
        assert serving.stdout is not None
        assert serving.stdout.readline().startswith("Serving the demo sites on")
        serving.send_signal(signal.SIGINT)
        _, err = serving.communicate(timeout=60)
    finally:
        _stop(serving)
    return err


def _wait_for(what: str, process: subprocess.Popen[str], check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not check():
        if process.poll() is not None:
            _, errors = process.communicate()
            pytest.fail(f"the process ended (exit {process.returncode}) before {what}: {errors[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {START_TIMEOUT} s")
        time.sleep(0.1)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """``crawler worker`` on data/demo with the demo rule of citynews (its sites need not be served), once
    it uses the folder's embedded Redis."""
    demo_rule(tmp_path / "data" / "demo" / "rules", "http://127.0.0.1:9/", allow=True)
    process = _start("--data-dir", "data/demo", "--rules-dir", "data/demo/rules", "worker", cwd=tmp_path)
    users = tmp_path / "data" / "demo" / "redis" / "users"
    _wait_for(
        "the worker's Redis user file",
        process,
        lambda: users.is_dir() and any(path.name.startswith(f"{process.pid}-") for path in users.iterdir()),
    )
    try:
        yield process
    finally:
        _stop(process)


def test_the_demo_refuses_to_start_anew_a_folder_a_worker_uses(
    tmp_path: Path, worker: subprocess.Popen[str]
) -> None:
    users = tmp_path / "data" / "demo" / "redis" / "users"
    before = sorted(users.iterdir())
    run = crawler("demo", "--port", "0", cwd=tmp_path)
    assert run.code == 2, (run.stdout[-2000:], run.stderr[-3000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "data/demo" in lines[0]
    assert f"pid {worker.pid}" in lines[0]
    assert "--keep" in lines[0] and "--data-dir" in lines[0]
    assert worker.poll() is None
    assert sorted(users.iterdir()) == before
    assert (tmp_path / "data" / "demo" / "redis" / "redis.sock").exists()
    assert (tmp_path / "data" / "demo" / "rules" / "demo-citynews.yaml").exists()


def test_the_demo_refuses_a_folder_a_demo_serves(tmp_path: Path) -> None:
    serving = _start("demo", "--serve", "--port", "0", cwd=tmp_path)
    try:
        assert serving.stdout is not None
        line = serving.stdout.readline()
        assert line.startswith("Serving the demo sites on"), line
        rules = tmp_path / "data" / "demo" / "rules"
        written = {path.name: path.read_text(encoding="utf-8") for path in rules.iterdir()}
        for args in (("demo",), ("demo", "--keep"), ("demo", "--serve")):
            run = crawler(*args, "--port", "0", cwd=tmp_path)
            assert run.code == 2, (args, run.stdout[-2000:], run.stderr[-3000:])
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1, run.stderr
            assert "data/demo" in lines[0] and f"pid {serving.pid}" in lines[0], lines[0]
            assert {path.name: path.read_text(encoding="utf-8") for path in rules.iterdir()} == written
        assert serving.poll() is None
    finally:
        _stop(serving)
    assert not process_running(serving.pid)


def test_the_demo_refuses_to_delete_articles_waiting_in_its_spool(tmp_path: Path) -> None:
    spool = tmp_path / "data" / "demo" / "spool"
    spool.mkdir(parents=True)
    waiting = spool / "mongo_crawler@somehost-4242.jsonl"
    waiting.write_text('{"url": "http://127.0.0.1:9/a"}\n{"url": "http://127.0.0.1:9/b"}\n', encoding="utf-8")
    run = crawler("demo", "--port", "0", cwd=tmp_path)
    assert run.code == 2, (run.stdout[-2000:], run.stderr[-3000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "2 articles" in lines[0] and str(Path("data/demo/spool") / waiting.name) in lines[0], lines[0]
    assert "articles stats" in lines[0] and "--keep" in lines[0]
    assert waiting.read_text(encoding="utf-8").count("\n") == 2


def test_demo_serve_starts_anew_so_the_temp_it_prints_stores_the_sites_served_on_another_port(
    tmp_path: Path,
) -> None:
    """A demo crawled on one port, then `crawler demo --serve` on another (8631 taken): the served folder is
    started anew (not `--keep`), so the `temp demo-citynews` it prints stores the site's articles (49, and
    its one repost of its own) rather than recording all 50 as reposts of the earlier port's."""
    first = crawler("demo", "--port", "0", cwd=tmp_path)
    assert first.code == 0, first.stderr[-3000:]
    serving = _start("demo", "--serve", "--port", "0", cwd=tmp_path)
    try:
        assert serving.stdout is not None
        assert serving.stdout.readline().startswith("Serving the demo sites on")
        temp = serving.stdout.readline().split()
        assert temp[-2:] == ["temp", "demo-citynews"], temp
        run = crawler(*temp[1:], cwd=tmp_path)
    finally:
        _stop(serving)
    assert run.code == 0, run.stdout + run.stderr[-3000:]
    assert "stored 49 articles" in run.stdout and "recorded 1 repost " in run.stdout, run.stdout


def test_the_demo_serving_in_the_background_with_sigint_ignored_stops_on_it(tmp_path: Path) -> None:
    """A shell script's `crawler demo --serve &` starts it with SIGINT ignored: it stops on SIGINT all the
    same, as `crawler temp`, `run` and `worker` do."""
    serving = subprocess.Popen(
        # As a script's `&` starts it: SIGINT ignored (the shell's trap), then the command in its place.
        [
            "sh",
            "-c",
            'trap "" INT; exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "crawler.cli",
            "demo",
            "--serve",
            "--port",
            "0",
        ],
        cwd=tmp_path,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serving.stdout is not None
        line = serving.stdout.readline()
        assert line.startswith("Serving the demo sites on"), line
        serving.send_signal(signal.SIGINT)
        _, err = serving.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        serving.kill()
        serving.communicate()
        pytest.fail("SIGINT left the demo serving")
    finally:
        if serving.poll() is None:
            serving.kill()
            serving.communicate()
    assert serving.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == "crawler demo: interrupted", err[-3000:]


def test_demo_serve_says_where_it_serves_once(tmp_path: Path) -> None:
    """`crawler demo --serve` names its address and sites on stdout only: stderr does not say it again."""
    serving = _start("demo", "--serve", "--port", "0", cwd=tmp_path)
    try:
        assert serving.stdout is not None
        line = serving.stdout.readline()
        assert line.startswith("Serving the demo sites on"), line
        origin = line.split()[5]
        assert origin.startswith("http://127.0.0.1:"), line
        assert "demo-citynews" in line, line
        serving.send_signal(signal.SIGINT)
        _, err = serving.communicate(timeout=60)
    finally:
        if serving.poll() is None:
            serving.kill()
            serving.communicate()
    assert origin not in err, err[-3000:]


def test_demo_serve_on_its_port_taken_says_so_as_a_note_on_stderr(tmp_path: Path) -> None:
    """`crawler demo --serve` with 8631 taken wrote "Port 8631 is taken: ..." on stderr alone, without the
    `crawler demo: note:` every other line a command writes there starts with."""
    with contextlib.ExitStack() as stack:
        holder = stack.enter_context(socket.socket())
        try:
            holder.bind(("127.0.0.1", DEMO_PORT))
            holder.listen()
        except OSError:
            pass  # taken by another process already
        err = _served_until_interrupted("demo", "--serve", cwd=tmp_path)
    assert (
        f"crawler demo: note: Port {DEMO_PORT} is taken: the demo sites use a free port instead."
        in err.splitlines()
    ), err[-3000:]


# --- what an interrupted `crawler demo --keep` left in its queue -----------------------------------------

DEMO_STATUS = ("--data-dir", "data/demo", "--rules-dir", "data/demo/rules", "status", "--format", "json")


def _leave_an_interrupted_demo(data: Path, origin: str) -> None:
    """What a `crawler demo --keep` on ``origin`` stopped before its end leaves in data/demo's Redis: its
    sites' requests queued, and two leased by its worker, killed (one lease expired, one not yet)."""

    rules = data / "demo" / "rules"
    for site in ("citynews", "techdaily", "huaxia"):
        demo_rule(rules, origin, site, allow=True)
    with EmbeddedRedis(data / "demo") as embedded:
        client = connect(embedded.url)
        keys = Keys("crawler")
        enqueue_job(client, keys, load_rules(rules).rules.values())
        assert LeasedQueue(client, keys, lease_seconds=-1).pop().member is not None
        assert LeasedQueue(client, keys, lease_seconds=60).pop().member is not None
        client.close()


def test_a_demo_kept_after_one_stopped_on_another_port_crawls_none_of_its_requests(tmp_path: Path) -> None:
    """The requests a demo on another port left (stopped before its end: their server is gone) are dropped
    as the next `crawler demo --keep` starts, and it says so: it fetches none of them (no connection
    refused, no retry left waiting, no dead letter), and crawls its own sites whole."""
    gone = "http://127.0.0.1:9"
    _leave_an_interrupted_demo(tmp_path / "data", gone)
    run = crawler("demo", "--keep", "--port", "0", cwd=tmp_path)
    assert run.code == 0, run.stderr[-3000:]
    assert "stored 146 articles" in run.stdout, run.stdout
    assert "127.0.0.1:9/" not in run.stderr, run.stderr[-3000:]
    dropped = [line for line in run.stdout.splitlines() if "stopped before its end" in line]
    assert len(dropped) == 1, run.stdout
    assert "3 requests" in dropped[0] and gone in dropped[0], dropped[0]
    status = crawler(*DEMO_STATUS, cwd=tmp_path)
    assert status.code == 0, status.stderr
    queue = json.loads(status.stdout)["queue"]
    assert (queue["queued"], queue["leased"], queue["waiting"], queue["dead_letters"]) == (0, 0, 0, 0), queue


def test_a_demo_kept_after_one_stopped_on_its_port_crawls_its_requests_in_its_own_job(
    tmp_path: Path,
) -> None:
    """The requests a demo on the same port left are the pages this one serves: they are crawled in this
    demo's job (its summary counts them), none left behind."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _leave_an_interrupted_demo(tmp_path / "data", f"http://127.0.0.1:{port}")
    run = crawler("demo", "--keep", "--port", str(port), cwd=tmp_path)
    assert run.code == 0, run.stderr[-3000:]
    assert "stored 146 articles" in run.stdout, run.stdout
    assert "3 requests" in run.stdout and "crawled in this demo's job" in run.stdout, run.stdout
    status = crawler(*DEMO_STATUS, cwd=tmp_path)
    queue = json.loads(status.stdout)["queue"]
    assert (queue["queued"], queue["leased"], queue["waiting"], queue["dead_letters"]) == (0, 0, 0, 0), queue


def test_a_demo_leaves_to_a_live_worker_the_requests_another_demo_left_on_a_shared_redis(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """With REDIS_URL, demos of other data folders share the queue: while a worker is alive on it, the
    demo sites' requests in the queue may be a running demo's, and the demo takes none of them out (its
    own worker helps with them, as a temp crawl's does), and says so."""
    keys = Keys("crawler")
    rules = tmp_path / "other" / "rules"
    for site in ("citynews", "techdaily", "huaxia"):
        demo_rule(rules, "http://127.0.0.1:9", site, allow=True)
    job = enqueue_job(redis_client, keys, load_rules(rules).rules.values())
    beat = {"seen": time.time() + 600, "every": 5, "host": "elsewhere", "pid": 1, "responses": 0, "rate": 0.0}
    redis_client.hset(keys.workers, "elsewhere:1:abc", json.dumps(beat))
    run = crawler("demo", "--port", "0", cwd=tmp_path, env={"REDIS_URL": redis_server})
    assert run.code == 0, run.stderr[-3000:]
    assert "dropped" not in run.stdout, run.stdout
    said = [line for line in run.stdout.splitlines() if "a worker is alive" in line]
    assert len(said) == 1 and "3 requests" in said[0], run.stdout
    assert redis_client.hget(keys.job(job), "taken") is None


def test_a_demo_helping_with_requests_of_an_unreachable_host_shows_no_scrapy_error(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """The demo's worker helps with another demo's requests on a shared Redis; their host gone, it showed
    Scrapy's ERROR lines among its own: '[crawler.worker.robots] ERROR: Error downloading <GET
    http://127.0.0.1:9/robots.txt>' and '[scrapy.downloadermiddlewares.retry] ERROR: Gave up retrying'.
    As in a temp crawl, they are at INFO (its own words say its own job's failures)."""
    keys = Keys("crawler")
    rules = tmp_path / "other" / "rules"
    for site in ("citynews", "techdaily", "huaxia"):
        demo_rule(rules, "http://127.0.0.1:9", site, allow=True)
    enqueue_job(redis_client, keys, load_rules(rules).rules.values())
    beat = {"seen": time.time() + 600, "every": 5, "host": "elsewhere", "pid": 1, "responses": 0, "rate": 0.0}
    redis_client.hset(keys.workers, "elsewhere:1:abc", json.dumps(beat))
    run = crawler("demo", "--port", "0", cwd=tmp_path, env={"REDIS_URL": redis_server})
    assert run.code == 0, run.stderr[-3000:]
    assert "stored 146 articles" in run.stdout, run.stdout
    assert "ERROR" not in run.stderr, run.stderr[-3000:]


def test_a_demo_served_with_keep_drops_what_a_demo_on_another_port_left(tmp_path: Path) -> None:
    """`crawler demo --serve --keep` after a demo on another port stopped before its end: the requests it
    left are dropped as it starts (nothing serves their port), so the crawls it prints fetch none of them."""
    gone = "http://127.0.0.1:9"
    _leave_an_interrupted_demo(tmp_path / "data", gone)
    err = _served_until_interrupted("demo", "--serve", "--keep", "--port", "0", cwd=tmp_path)
    said = [line for line in err.splitlines() if "stopped before its end" in line]
    assert len(said) == 1 and "3 requests" in said[0] and gone in said[0], err[-3000:]
    # Served, the demo's stdout holds the commands that crawl the sites: its own lines are notes on stderr,
    # as every command words its stderr lines.
    assert said[0].startswith("crawler demo: note: An earlier demo on "), said
    status = crawler(*DEMO_STATUS, cwd=tmp_path)
    queue = json.loads(status.stdout)["queue"]
    assert (queue["queued"], queue["leased"], queue["waiting"], queue["dead_letters"]) == (0, 0, 0, 0), queue


DEMO_SITES = ["demo-citynews", "demo-huaxia", "demo-techdaily"]

# A process that marks itself alive as `crawler demo` does before it queues its job (announced), queues a
# job of the demo sites on ``argv[1]`` (a Redis URL) like a demo on ``argv[2]`` (an origin), says so, and
# waits for its stdin to close.
_ANOTHER_DEMO = """
import sys
from crawler.config import crawl_settings
from crawler.demo import DEMO_PORT
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.requests import enqueue_job
from crawler.rules import load_rules
from crawler.worker.heartbeat import announced

client, keys = connect(sys.argv[1]), Keys("crawler")
with announced(client, keys.workers, crawl_settings()) as me:
    print(me, enqueue_job(client, keys, load_rules(sys.argv[3]).rules.values()), flush=True)
    sys.stdin.read()
"""


def _another_demo(redis_url: str, rules: Path, origin: str) -> tuple[subprocess.Popen[str], str, str]:
    """:data:`_ANOTHER_DEMO` started with the demo rules of ``origin`` in ``rules``, once its job is
    queued; the process, its worker id and its job."""
    for site in ("citynews", "techdaily", "huaxia"):
        demo_rule(rules, origin, site, allow=True)
    process = subprocess.Popen(
        [sys.executable, "-c", _ANOTHER_DEMO, redis_url, origin, str(rules)],
        env=_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    me, job = process.stdout.readline().split()
    return process, me, job


def test_a_demo_alive_before_its_worker_beats_keeps_its_job_from_another_demo_on_the_redis(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """Two demos on one REDIS_URL: the first has queued its job and its worker has not beaten yet (Scrapy
    starts for seconds); the second, which takes what a dead demo left, sees it alive and takes none of
    its requests (they were dropped before: another origin, its job ended with nothing crawled)."""
    first, first_id, job = _another_demo(redis_server, tmp_path / "first", "http://127.0.0.1:9")
    try:
        keys = Keys("crawler")
        queue = LeasedQueue(redis_client, keys)
        pending = queue.job_pending(job)
        assert pending == 3
        with announced(redis_client, keys.workers, crawl_settings()) as me:
            assert me != first_id
            leftovers, waiting = _leftovers(queue, DEMO_SITES, me)
        assert (leftovers, waiting) == ({}, 3)
        assert queue.job_pending(job) == pending and redis_client.hget(keys.job(job), "taken") is None
    finally:
        first.communicate("")


def test_a_demo_takes_at_once_what_a_demo_killed_on_this_machine_left_not_what_one_elsewhere_holds(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A demo killed with SIGKILL leaves a beat that looks alive for three beats (15 s): a demo run again
    on the same machine sees that its process is gone and takes its requests at once; a beat of the same
    age from another machine (another boot, or another pid namespace: a container), or of a worker that
    does not say where its pid belongs, is taken for alive as before."""
    killed, killed_id, job = _another_demo(redis_server, tmp_path / "killed", "http://127.0.0.1:9")
    killed.kill()
    killed.communicate()
    keys = Keys("crawler")
    beat = json.loads(redis_client.hget(keys.workers, killed_id) or b"{}")
    assert beat["pid"] == killed.pid and time.time() - beat["seen"] < 3 * beat["every"]
    assert workers_alive(redis_client, keys) == 0, "crawler status says so too"
    queue = LeasedQueue(redis_client, keys)
    for elsewhere in ({**beat, "pid_space": "another-boot/pid:[4026531836]"}, {**beat, "pid_space": None}):
        redis_client.hset(keys.workers, "elsewhere:1", json.dumps(elsewhere))
        assert _leftovers(queue, DEMO_SITES) == ({}, 3)
    redis_client.hdel(keys.workers, "elsewhere:1")
    leftovers, waiting = _leftovers(queue, DEMO_SITES)
    assert waiting == 0 and [len(members) for members in leftovers.values()] == [3], leftovers
    assert queue.job_pending(job) == 0 and redis_client.hget(keys.job(job), "taken") == b"3"


# `crawler demo` stopped by Ctrl-C while its worker starts, before the worker's first beat: the worker
# raises KeyboardInterrupt then (crawler.worker.process.run_worker), as it does here at once.
_DEMO_STOPPED_AS_ITS_WORKER_STARTS = """
import sys
import crawler.cli.crawl
from crawler.cli.main import main

def stopped(*args, **kwargs):
    raise KeyboardInterrupt

crawler.cli.crawl.run_worker = stopped
sys.exit(main(["demo", "--port", "0"]))
"""


def test_a_demo_stopped_before_its_worker_beats_leaves_no_beat_behind(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """The beat a demo writes before it queues its job (its worker's own replace it, and its clean stop
    removes them) goes when the demo ends without its worker's clean stop: else `crawler status` lists a
    worker that died without one for an hour, and for three beats other machines take it for alive."""
    keys = Keys("crawler")
    run = subprocess.run(
        [sys.executable, "-c", _DEMO_STOPPED_AS_ITS_WORKER_STARTS],
        cwd=tmp_path,
        env={**_environment(), "REDIS_URL": redis_server},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 130, run.stderr[-3000:]
    queue = LeasedQueue(redis_client, keys)
    assert sum(queue.pending(site) for site in DEMO_SITES) > 0, "stopped once its job was queued"
    assert redis_client.hgetall(keys.workers) == {}
