"""Chaos: a crawl of a 5,000-article local site by 3 workers while faults are injected; at the end every
article must be stored exactly once, the dead letters empty or explained, the job finished.

    .venv/bin/python bench/chaos.py                  # 5,000 articles, 3 workers, every fault
    .venv/bin/python bench/chaos.py --articles 1000  # quicker

The site is bench/crawl.py's generated news site (100 index pages of 50 articles, robots.txt), served on
127.0.0.1 by a process of this script that adds, on purpose: a redirect (301) for one article in 20, a
first answer 503 (``Retry-After: 0``) for another one in 20 (a retry), and, when told, a whole-site 503
for some seconds. The workers are `crawler worker` processes on one Redis (an embedded server this script
owns: REDIS_URL for the workers), storing in SQLite under one data folder.

Faults, at set points of the crawl's progress (articles stored): a worker killed with SIGKILL (and a new
one started), Redis killed with SIGKILL and started again 3 s later, the whole site answering 503 for 8 s,
the store locked by another process for 35 s (SQLite's busy timeout is 30 s: writes fail, the requests
are deferred), a second worker killed, Redis killed again.

It prints one table: faults injected, articles lost, duplicated (documents of one article beyond the
first), re-fetched (article pages served more than once with 200), dead letters, and the time; then the
dead letters' reasons. docs/operations.md keeps a run's table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `bench` and `crawler` importable
    sys.path.insert(0, str(_REPO_ROOT))

import redis  # noqa: E402

from bench.crawl import SITE_ID, BenchSite  # noqa: E402
from crawler.deadletters import dead_letters  # noqa: E402
from crawler.keys import Keys  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.redisio.queue import LeasedQueue  # noqa: E402
from crawler.requests import JobCounts, enqueue_job  # noqa: E402
from crawler.rules import load_rule  # noqa: E402
from crawler.store import open_store  # noqa: E402
from crawler.store.document import week_of  # noqa: E402

WORKERS = 3
# One article in this many is reached through a 301; another one in this many answers 503 first.
REDIRECT_EVERY = 20
FLAKY_EVERY = 20
SITE_DOWN_SECONDS = 8.0
REDIS_DOWN_SECONDS = 3.0
# Longer than SQLite's busy timeout (crawler/store/sqlite.py, 30 s): writes fail and are deferred.
STORE_LOCK_SECONDS = 35.0
# The workers' settings: short leases and retries, so faults come round within the run.
WORKER_SETTINGS = (
    "LEASE_SECONDS=10",
    "LEASE_RENEW_SECONDS=2",
    "STORE_RETRY_SECONDS=5",
    "STORE_MAX_ATTEMPTS=30",
    "RETRY_TIMES=6",
    "DOWNLOAD_TIMEOUT=15",
    "SCHEDULER_IDLE_POLL_SECONDS=0.2",
)
ARTICLE_RE = re.compile(r"/a(\d{6})\.html$")
TIMEOUT_SECONDS = 1800.0


# --- the site with faults --------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    pages: ClassVar[dict[str, bytes]] = {}
    served: ClassVar[Counter[int]] = Counter()  # article number -> 200 answers
    first_seen: ClassVar[set[int]] = set()
    down_until: ClassVar[float] = 0.0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_GET(self) -> None:
        path = self.path
        if path.startswith("/_chaos/"):
            self._control(path)
            return
        if time.monotonic() < self.down_until:
            self._plain(503, b"down for maintenance", {"Retry-After": "0"})
            return
        moved = path.startswith("/moved/")
        real = path.removeprefix("/moved") if moved else path
        match = ARTICLE_RE.search(real)
        number = int(match.group(1)) if match else None
        if number is not None and not moved and number % REDIRECT_EVERY == 7:
            self._plain(301, b"", {"Location": "/moved" + real})
            return
        if number is not None and number % FLAKY_EVERY == 11:
            with self.lock:
                first = number not in self.first_seen
                self.first_seen.add(number)
            if first:
                self._plain(503, b"busy, try again", {"Retry-After": "0"})
                return
        page = self.pages.get(real)
        if page is None:
            self._plain(404, b"not found", {})
            return
        if number is not None:
            with self.lock:
                self.served[number] += 1
        self.wfile.write(page)

    def _control(self, path: str) -> None:
        if path.startswith("/_chaos/down/"):
            _Handler.down_until = time.monotonic() + float(path.rsplit("/", 1)[1])
            self._plain(200, b"down", {})
        else:
            with self.lock:
                body = json.dumps({str(number): count for number, count in self.served.items()}).encode()
            self._plain(200, body, {"Content-Type": "application/json"})

    def _plain(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def serve(articles: int) -> int:
    _Handler.pages = BenchSite(articles).responses()
    with _Server(("127.0.0.1", 0), _Handler) as server:
        print(f"READY {server.server_address[1]}", flush=True)
        server.serve_forever()
    return 0


def _get(origin: str, path: str) -> bytes:
    import http.client  # noqa: PLC0415 - the parent process only

    host, port = origin.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", path)
        return connection.getresponse().read()
    finally:
        connection.close()


# --- the run ---------------------------------------------------------------------------------------------


class Chaos:
    """The site, Redis, the workers, and the faults."""

    def __init__(self, workdir: Path, articles: int, seed: int) -> None:
        self.workdir = workdir
        self.articles = articles
        self.random = random.Random(seed)
        self.data = workdir / "data"
        self.rules = workdir / "rules"
        self.rules.mkdir(parents=True)
        self.faults: Counter[str] = Counter()
        self.workers: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--articles", str(articles)]
        self.site = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.site.stdout is not None
        self.origin = f"http://127.0.0.1:{self.site.stdout.readline().split()[1]}"
        rule = self.rules / f"{SITE_ID}.yaml"
        rule.write_text(BenchSite(articles).rule_yaml(self.origin), encoding="utf-8")
        self.rule = load_rule(rule)
        self.redis = EmbeddedRedis(self.data, watch_seconds=0)
        self.url = self.redis.ensure()

    def start_worker(self) -> None:
        log = self.workdir / f"worker{len(self.logs)}.log"
        self.logs.append(log)
        settings = [item for pair in WORKER_SETTINGS for item in ("-s", pair)]
        env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
        env.update(
            REDIS_URL=self.url,
            CRAWLER_DATA_DIR=str(self.data),
            CRAWLER_RULES_DIR=str(self.rules),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
        )
        with log.open("wb") as stream:
            self.workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "crawler.cli", "worker", *settings],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stream,
                    cwd=_REPO_ROOT,
                )
            )

    def kill_worker(self) -> None:
        live = [worker for worker in self.workers if worker.poll() is None]
        victim = self.random.choice(live)
        victim.kill()
        victim.wait()
        self.faults["worker killed (SIGKILL), a new one started"] += 1
        self.start_worker()

    def kill_redis(self) -> None:
        assert self.redis.pid is not None
        os.kill(self.redis.pid, signal.SIGKILL)
        time.sleep(REDIS_DOWN_SECONDS)
        self.redis.ensure()
        self.faults[f"Redis killed (SIGKILL), started again {REDIS_DOWN_SECONDS:g} s later"] += 1

    def site_down(self) -> None:
        _get(self.origin, f"/_chaos/down/{SITE_DOWN_SECONDS}")
        self.faults[f"the whole site answers 503 for {SITE_DOWN_SECONDS:g} s"] += 1

    def lock_store(self) -> None:
        path = self.data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite"

        def hold() -> None:
            connection = sqlite3.connect(path, timeout=60, isolation_level=None)
            connection.execute("BEGIN EXCLUSIVE")
            time.sleep(STORE_LOCK_SECONDS)
            connection.execute("ROLLBACK")
            connection.close()

        threading.Thread(target=hold, daemon=True).start()
        self.faults[f"the store locked by another process for {STORE_LOCK_SECONDS:g} s"] += 1

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGINT)
        for worker in self.workers:
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        self.site.terminate()
        self.site.wait()
        self.redis.close()


def run(workdir: Path, articles: int, seed: int) -> dict[str, Any]:
    chaos = Chaos(workdir, articles, seed)
    keys = Keys("crawler")
    started = time.monotonic()
    try:
        for _ in range(WORKERS):
            chaos.start_worker()
        server = connect(chaos.url)
        job = enqueue_job(server, keys, [chaos.rule], kind="temp")
        plan: list[tuple[float, Callable[[], None]]] = [
            (0.10, chaos.kill_worker),
            (0.20, chaos.kill_redis),
            (0.35, chaos.site_down),
            (0.50, chaos.lock_store),
            (0.65, chaos.kill_worker),
            (0.80, chaos.kill_redis),
        ]
        counts = JobCounts(1, 0, 0, 0, 0, 0)
        while True:
            try:
                counts = JobCounts.read(server, keys, job)
            except redis.RedisError:  # Redis restarting: read again
                time.sleep(0.5)
                continue
            if plan and counts.stored >= plan[0][0] * articles:
                plan.pop(0)[1]()
                server = connect(chaos.url)
                continue
            if counts.pending <= 0:
                break
            if time.monotonic() - started > TIMEOUT_SECONDS:
                raise SystemExit(f"the job did not finish in {TIMEOUT_SECONDS:g} s: {counts}")
            time.sleep(0.5)
        seconds = time.monotonic() - started
        queue = LeasedQueue(server, keys)
        leftover = {"queued": len(queue), "leased": queue.leased()}
        letters = dead_letters(queue)
        served = {
            int(number): count for number, count in json.loads(_get(chaos.origin, "/_chaos/counts")).items()
        }
    finally:
        chaos.stop()
    with open_store({"CRAWLER_DATA_DIR": str(chaos.data)}) as store:
        documents = Counter(
            int(match.group(1))
            for article in store.iter_articles(newest_first=False)
            if (match := ARTICLE_RE.search(str(article["url"])))
        )
    dead = {
        int(match.group(1)) for letter in letters if letter.url and (match := ARTICLE_RE.search(letter.url))
    }
    expected = set(range(articles))
    return {
        "articles": articles,
        "workers": WORKERS,
        "faults": dict(chaos.faults),
        "faults_not_injected": len(plan),
        "stored": len(documents),
        "lost": len(expected - set(documents) - dead),
        "duplicated": sum(count - 1 for count in documents.values() if count > 1),
        "refetched": sum(count - 1 for count in served.values() if count > 1),
        "dead_letters": [{"url": letter.url, "reason": letter.reason} for letter in letters],
        "job": counts,
        "leftover": leftover,
        "seconds": seconds,
    }


def report(result: dict[str, Any]) -> str:
    faults = "; ".join(f"{name} x{count}" for name, count in result["faults"].items())
    if result["faults_not_injected"]:
        faults += f"; {result['faults_not_injected']} more planned, not reached (the crawl ended first)"
    lines = [
        f"{result['articles']:,} articles, {result['workers']} workers; faults: {faults}",
        "",
        "| faults injected | articles stored | lost | duplicated | re-fetched | dead letters | left in"
        " the queue | job | time |",
        "|---:|---:|---:|---:|---:|---:|---|---|---:|",
        f"| {sum(result['faults'].values())} | {result['stored']:,} | {result['lost']} |"
        f" {result['duplicated']} | {result['refetched']} | {len(result['dead_letters'])} |"
        f" {result['leftover']['queued']} queued, {result['leftover']['leased']} leased |"
        f" pending {result['job'].pending}, errors {result['job'].errors} | {result['seconds']:.0f} s |",
    ]
    if result["dead_letters"]:
        lines += ["", "Dead letters:"]
        lines += [f"- {letter['url']}: {letter['reason']}" for letter in result["dead_letters"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=5000, help="article pages of the site (default 5000)")
    parser.add_argument("--seed", type=int, default=1, help="which worker each kill picks")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.articles)
    with tempfile.TemporaryDirectory(prefix="bench-chaos-") as folder:
        result = run(Path(folder), args.articles, args.seed)
    print(report(result))
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    failed = (
        result["lost"] or result["duplicated"] or result["job"].pending or any(result["leftover"].values())
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
