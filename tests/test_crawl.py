"""End to end: the demo news sites served on 127.0.0.1, crawled by the real ``crawler`` commands through the
real embedded Redis, stored in SQLite. Each test has its own data folder, so its own Redis and store."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from crawler.cli.crawl import _print_summary
from crawler.cli.terminal import fit_progress
from crawler.config import crawl_settings
from crawler.demo import DEMO_RULES
from crawler.demo.sites import DEMO_ORIGIN, DemoSite, demo_sites
from crawler.keys import Keys
from crawler.redisio.connection import connect, decoded
from crawler.requests import JobCounts, enqueue_job
from crawler.rules import load_rules
from crawler.store import open_store

REPO = Path(__file__).resolve().parents[1]
CRAWL_TIMEOUT = 240


@dataclass
class DemoRun:
    origin: str
    rules: Path
    data: Path
    requests_log: Path
    process: subprocess.Popen[bytes]

    def env(self, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
        env.update(
            CRAWLER_DATA_DIR=str(self.data),
            CRAWLER_RULES_DIR=str(self.rules),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
            **extra,
        )
        return env

    def crawler(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "crawler.cli", *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=CRAWL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def requested(self) -> collections.Counter[str]:
        return collections.Counter(self.requests_log.read_text(encoding="utf-8").split())


def start_demo(tmp_path: Path, *, delay: float = 0.0, concurrency: int | None = None) -> DemoRun:
    log = tmp_path / "requests.log"
    log.touch()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawler.demo.server",
            "--port",
            "0",
            "--request-log",
            str(log),
            "--delay",
            str(delay),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    origin = f"http://127.0.0.1:{port}"
    rules = tmp_path / "rules"
    rules.mkdir()
    for path in sorted((DEMO_RULES).glob("demo-*.yaml")):
        text = path.read_text(encoding="utf-8").replace(DEMO_ORIGIN, origin)
        if concurrency is not None:
            text = text.replace("  concurrency: 4\n", f"  concurrency: {concurrency}\n")
        (rules / path.name).write_text(text, "utf-8")
    return DemoRun(origin, rules, tmp_path / "data", log, process)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoRun]:
    run = start_demo(tmp_path)
    yield run
    stop(run.process)


@pytest.fixture
def slow_demo(tmp_path: Path) -> Iterator[DemoRun]:
    run = start_demo(tmp_path, delay=0.3)
    yield run
    stop(run.process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    process.communicate(timeout=10)


def site(site_id: str) -> DemoSite:
    return next(s for s in demo_sites() if s.rule_id == site_id)


def article_paths(demo_site: DemoSite) -> set[str]:
    return {article.path for article in demo_site.articles}


def stored(run: DemoRun, site_id: str | None = None) -> list[dict[str, object]]:
    store = open_store({"CRAWLER_DATA_DIR": str(run.data)})
    try:
        return [a for a in store.iter_articles() if site_id is None or a["site"] == site_id]
    finally:
        store.close()


def reposts(run: DemoRun) -> dict[str, str]:
    """Repost path -> original path, as recorded against the stored originals."""
    return {
        str(record["url"]).removeprefix(run.origin): str(article["url"]).removeprefix(run.origin)
        for article in stored(run)
        for record in article["reposts"]  # type: ignore[attr-defined]
    }


def accounted(run: DemoRun) -> list[str]:
    """Every article path the store knows: stored ones, and reposts recorded against them."""
    return [str(a["url"]).removeprefix(run.origin) for a in stored(run)] + list(reposts(run))


def no_deprecations(output: str) -> None:
    assert "DeprecationWarning" not in output, output[-3000:]
    assert "Traceback" not in output, output[-3000:]


def test_temp_crawl_stores_exactly_the_expected_articles(demo: DemoRun) -> None:
    result = demo.crawler("temp", "demo-citynews")
    no_deprecations(result.stderr)
    assert result.returncode == 0, result.stderr[-3000:]
    expected = site("demo-citynews")
    articles = {str(a["url"]).removeprefix(demo.origin): a for a in stored(demo)}
    paths = accounted(demo)
    assert sorted(paths) == sorted(article_paths(expected)), "every article once (robots.txt obeyed)"
    same_site = {a.path: a.repost_of for a in expected.articles if a.repost_of in article_paths(expected)}
    assert same_site, "the demo site reposts one of its own articles"
    assert {frozenset(pair) for pair in reposts(demo).items()} == {
        frozenset(pair) for pair in same_site.items()
    }, "each repost is recorded against its original, whichever was fetched first"
    for article in expected.articles:
        if article.path not in articles:
            continue
        got = articles[article.path]
        assert got["title"] == article.title
        assert got["published"] == article.published_stored, "with its time of day"
        body = str(got["body"])
        for paragraph in article.paragraphs:
            assert " ".join(paragraph.split()) in " ".join(body.split())
        assert (got["extraction"] or {})["body_from"] == ("qread" if article.needs_qread else "rule")  # type: ignore[index]
    assert f"stored {len(expected.articles) - len(same_site)} articles" in result.stdout
    requested = demo.requested()
    assert expected.private_articles, "the demo site links a page robots.txt disallows"
    assert not any(requested[article.path] for article in expected.private_articles)


def test_articles_list_of_a_crawl_is_in_the_order_it_was_fetched_newest_first(demo: DemoRun) -> None:
    """A crawl fetches many articles a second: each one's first_seen keeps the microseconds it was fetched
    at, so `articles list` shows them in the order they were fetched (and stored), newest first, not
    those of one second by their id."""
    assert demo.crawler("temp", "demo-citynews").returncode == 0
    listed = demo.crawler("articles", "list", "--format", "jsonl", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr[-3000:]
    first_seen = [json.loads(line)["first_seen"] for line in listed.stdout.splitlines()]
    assert len(first_seen) > 20
    assert len(set(first_seen)) == len(first_seen), "no two fetched at the same time"
    assert first_seen == sorted(first_seen, reverse=True)


_ESCAPE_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_the_temp_progress_line_fits_a_terminal_80_columns_wide(demo: DemoRun) -> None:
    # As on a terminal 80 columns wide: rich redraws the line in place while the crawl runs.
    result = demo.crawler("temp", "demo-techdaily", COLUMNS="80", TTY_COMPATIBLE="1", TTY_INTERACTIVE="1")
    assert result.returncode == 0, result.stderr
    frames = [_ESCAPE_RE.sub("", frame).rstrip() for frame in re.split(r"[\r\n]", result.stderr)]
    lines = [frame for frame in frames if re.search(r"\bstored \d+", frame)]
    assert lines, result.stderr
    for line in lines:
        assert len(line) <= 80 and re.search(r" \d+:\d\d:\d\d$", line), line
        assert "…" not in line and "None" not in line, line
    # 52 pages asked for: the one robots.txt disallows, skipped, among them.
    assert re.match(r"temp crawl of demo-techdaily .*51/52 pages stored \d+ +skipped 1", lines[-1]), lines[-1]


def test_a_narrow_progress_line_leaves_out_the_bar_and_zeros_then_cuts_the_title() -> None:
    tallies = [("stored", 48), ("skipped", 0), ("errors", 2)]
    title = "temp crawl of demo-techdaily (job 5b76c16c36d7 resumed)"
    assert fit_progress(160, title, "51/51 pages", tallies, "0:00:04") == (
        title,
        40,
        "51/51 pages stored 48  skipped 0  errors 2",
        "0:00:04",
    )
    assert fit_progress(110, title, "51/51 pages", tallies, "0:00:04") == (
        title,
        15,
        "51/51 pages stored 48 errors 2",
        "0:00:04",
    )
    assert fit_progress(100, title, "51/51 pages", tallies, "0:00:04") == (
        title,
        0,
        "51/51 pages stored 48 errors 2",
        "0:00:04",
    )
    cut_title, bar, counts, elapsed = fit_progress(80, title, "51/51 pages", tallies, "0:00:04")
    assert (bar, counts, elapsed) == (0, "51/51 pages stored 48 errors 2", "0:00:04")
    assert cut_title.startswith("temp crawl of demo-techdaily") and cut_title.endswith("…")
    assert len(f"{cut_title} {counts} {elapsed}") == 80
    # No room for the title: it is left out, then the tallies from the last, before the pages are cut.
    assert fit_progress(40, title, "51/51 pages", tallies, "0:00:04") == (
        "",
        0,
        "51/51 pages stored 48 errors 2",
        "0:00:04",
    )
    assert fit_progress(20, title, "51/51 pages", tallies, "0:00:04") == ("", 0, "51/51 pages", "0:00:04")
    for width in range(1, 19):
        _, bar, counts, elapsed = fit_progress(width, title, "51/51 pages", tallies, "0:00:04")
        assert bar == 0 and len(" ".join(filter(None, (counts, elapsed)))) <= width


def test_a_second_temp_crawl_stores_nothing_new_and_fetches_no_article_twice(demo: DemoRun) -> None:
    first = demo.crawler("temp", "demo-techdaily")
    assert first.returncode == 0, first.stderr[-3000:]
    second = demo.crawler("temp", "demo-techdaily")
    no_deprecations(second.stderr)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "stored 0 articles" in second.stdout
    expected = site("demo-techdaily")
    requested = demo.requested()
    assert all(requested[path] == 1 for path in article_paths(expected)), "article pages are read once"
    assert requested["/techdaily/feed.xml"] == 2, "its feed is read every grab (as index pages are)"
    assert sorted(accounted(demo)) == sorted(article_paths(expected))


def test_two_workers_sharing_the_queue_never_fetch_the_same_url(tmp_path: Path) -> None:
    from crawler.redisio.embedded import EmbeddedRedis

    # Answers take a second and every article is queued at once, and the sites allow more downloads at
    # once (3 x 16) than one worker makes (CONCURRENT_REQUESTS, 32): both workers take part.
    demo = start_demo(tmp_path, delay=1.0, concurrency=16)
    logs = [tmp_path / f"worker{number}.log" for number in range(2)]
    streams = [log.open("w", encoding="utf-8") for log in logs]
    try:
        with EmbeddedRedis(demo.data) as embedded:
            url = embedded.ensure()
            server = connect(url)
            workers = [
                subprocess.Popen(
                    [sys.executable, "-m", "crawler.cli", "worker"],
                    env=demo.env(REDIS_URL=url),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stream,
                )
                for stream in streams
            ]
            try:
                ruleset = load_rules(demo.rules)
                jobs = [
                    enqueue_job(
                        server,
                        Keys("crawler"),
                        [ruleset[s.rule_id]],
                        article_urls=[a.url(demo.origin) for a in s.articles],
                    )
                    for s in demo_sites()
                ]
                for job in jobs:
                    wait_until_done(server, job)
            finally:
                for worker in workers:
                    finish(worker)
    finally:
        for stream in streams:
            stream.close()
        stop(demo.process)
    outputs = [log.read_text(encoding="utf-8") for log in logs]
    for output in outputs:
        no_deprecations(output)
    took_part = re.compile(r"The worker ran [^\n]*: fetched [1-9]\d* pages?")
    assert all(took_part.search(output) for output in outputs), "both workers took part"
    requested = demo.requested()
    expected = {article.path for s in demo_sites() for article in s.articles}
    assert all(requested[path] == 1 for path in expected), {
        p: requested[p] for p in expected if requested[p] != 1
    }
    assert sorted(accounted(demo)) == sorted(expected)


def test_a_worker_killed_mid_crawl_loses_nothing(slow_demo: DemoRun) -> None:
    from crawler.redisio.embedded import EmbeddedRedis

    demo = slow_demo
    with EmbeddedRedis(demo.data) as embedded:
        url = embedded.ensure()
        server = connect(url)
        job = enqueue_job(server, Keys("crawler"), load_rules(demo.rules).rules.values())
        env = demo.env(REDIS_URL=url)
        command = [
            sys.executable,
            "-m",
            "crawler.cli",
            "worker",
            "-s",
            "LEASE_SECONDS=3",
            "-s",
            "LEASE_RENEW_SECONDS=1",
        ]
        victim = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + CRAWL_TIMEOUT
        while int(server.hget(f"crawler:job:{job}", "stored") or 0) < 20:
            assert time.monotonic() < deadline and victim.poll() is None
            time.sleep(0.05)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        assert int(server.zcard("crawler:leases")) > 0, "the killed worker held leases"
        survivor = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until_done(server, job)
        finally:
            no_deprecations(finish(survivor))
    requested = demo.requested()
    expected = {article.path for s in demo_sites() for article in s.articles}
    assert sorted(accounted(demo)) == sorted(expected), "each article stored or recorded once"
    assert all(requested[path] >= 1 for path in expected)


def _held_by(server: object, worker: subprocess.Popen[str]) -> list[str]:
    """The leases the worker process holds, as the pops recorded their holders (``host:pid:start``)."""
    holders = server.hgetall("crawler:lease-holders")  # type: ignore[attr-defined]
    return [decoded(m) for m, h in holders.items() if decoded(h).split(":")[-2] == str(worker.pid)]


def _worker(env: dict[str, str], *settings: str) -> subprocess.Popen[str]:
    """A `crawler worker` whose leases would last 600 s, renewed every second unless ``settings`` say."""
    pairs = ("LEASE_SECONDS=600", "LEASE_RENEW_SECONDS=1", *settings)
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", *(f"--set={pair}" for pair in pairs)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_killed_workers_leases_go_back_to_the_queue_without_waiting_for_them_to_expire(
    slow_demo: DemoRun,
) -> None:
    """Two workers, one killed: its leases held its sites' download slots until they expired (80 to 95 s
    with the defaults), the other worker fetching nothing of them meanwhile. Here the leases last 900 s
    and are renewed (expired ones looked for) every 300 s, longer than the crawl may take: the crawl ends
    only if the other worker returns them once it knows the killed one dead."""
    from crawler.redisio.embedded import EmbeddedRedis

    demo = slow_demo
    with EmbeddedRedis(demo.data) as embedded:
        url = embedded.ensure()
        server = connect(url)
        job = enqueue_job(server, Keys("crawler"), load_rules(demo.rules).rules.values())
        env = demo.env(REDIS_URL=url)
        victim = _worker(env, "LEASE_SECONDS=900", "LEASE_RENEW_SECONDS=300")
        survivor = _worker(env, "LEASE_SECONDS=900", "LEASE_RENEW_SECONDS=300")
        try:
            deadline = time.monotonic() + CRAWL_TIMEOUT
            while int(server.hget(f"crawler:job:{job}", "stored") or 0) < 5 or not _held_by(server, victim):
                assert time.monotonic() < deadline and victim.poll() is None
                time.sleep(0.05)
            # It holds leases (the loop above): the survivor may return them before they can be read again.
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            wait_until_done(server, job)
            victim.communicate()
        finally:
            output = finish(survivor)
    no_deprecations(output)
    released = re.search(r"leases? of dead workers went back to the queue: (\d+) of [^\s:]+:(\d+):", output)
    assert released, output[-3000:]
    assert int(released[1]) >= 1 and int(released[2]) == victim.pid
    assert "expired lease" not in output
    expected = {article.path for s in demo_sites() for article in s.articles}
    assert sorted(accounted(demo)) == sorted(expected), "each article stored or recorded once"


def test_a_stopped_worker_whose_heartbeat_is_fresh_keeps_its_leases_and_goes_on_when_continued(
    slow_demo: DemoRun,
) -> None:
    """SIGSTOP (a debugger, a paused container) is no death: another worker takes none of its leases
    while its heartbeat is fresh (here it beats every 600 s), and once continued it renews and ends them."""
    from crawler.redisio.embedded import EmbeddedRedis

    demo = slow_demo
    with EmbeddedRedis(demo.data) as embedded:
        url = embedded.ensure()
        server = connect(url)
        job = enqueue_job(server, Keys("crawler"), load_rules(demo.rules).rules.values())
        env = demo.env(REDIS_URL=url)
        sleeper = _worker(env, "SUPERVISION_HEARTBEAT_SECONDS=600")
        survivor: subprocess.Popen[str] | None = None
        try:
            deadline = time.monotonic() + CRAWL_TIMEOUT
            while int(server.hget(f"crawler:job:{job}", "stored") or 0) < 5 or not _held_by(server, sleeper):
                assert time.monotonic() < deadline and sleeper.poll() is None
                time.sleep(0.05)
            sleeper.send_signal(signal.SIGSTOP)
            while Path(f"/proc/{sleeper.pid}/stat").read_text("ascii").rsplit(")", 1)[1].split()[0] != "T":
                time.sleep(0.01)
            time.sleep(0.2)  # a call it sent before it stopped is run by Redis meanwhile
            kept = set(_held_by(server, sleeper))
            assert kept, "the stopped worker holds leases"
            survivor = _worker(env, "SUPERVISION_HEARTBEAT_SECONDS=1")
            # The survivor crawls what it may, tending the leases every second, for four of its beats.
            beats: set[float] = set()
            while len(beats) < 4:
                assert time.monotonic() < deadline and survivor.poll() is None
                ours = [
                    w
                    for w in server.hkeys("crawler:workers")
                    if decoded(w).split(":")[-2] == str(survivor.pid)
                ]
                if ours:
                    beats.add(json.loads(cast(str, server.hget("crawler:workers", ours[0])))["seen"])
                time.sleep(0.2)
            assert set(_held_by(server, sleeper)) == kept, "the stopped worker's leases are its own still"
            sleeper.send_signal(signal.SIGCONT)
            wait_until_done(server, job)
        finally:
            sleeper.send_signal(signal.SIGCONT)
            sleeper_output = finish(sleeper)
            output = finish(survivor) if survivor is not None else ""
    assert "dead workers" not in output and "expired lease" not in output + sleeper_output
    no_deprecations(sleeper_output)
    expected = {article.path for s in demo_sites() for article in s.articles}
    assert sorted(accounted(demo)) == sorted(expected), "each article stored or recorded once"


def test_a_worker_killed_says_nothing_after_it_of_the_semaphores_its_text_pool_left(
    slow_demo: DemoRun,
) -> None:
    from crawler.redisio.embedded import EmbeddedRedis

    demo = slow_demo
    with EmbeddedRedis(demo.data) as embedded:
        url = embedded.ensure()
        server = connect(url)
        job = enqueue_job(server, Keys("crawler"), load_rules(demo.rules).rules.values())
        victim = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "worker"],
            env=demo.env(REDIS_URL=url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + CRAWL_TIMEOUT
        while int(server.hget(f"crawler:job:{job}", "stored") or 0) < 5:
            assert time.monotonic() < deadline and victim.poll() is None
            time.sleep(0.05)
        semaphores = _semaphores_of(victim.pid)
        victim.send_signal(signal.SIGKILL)
        # Its stderr ends once the processes it started that write there are gone too: its text processes
        # and multiprocessing's resource tracker, which unlinks the pool's semaphores the worker left.
        _, stderr = victim.communicate(timeout=60)
    assert "leaked semaphore" not in stderr, stderr
    assert semaphores, "the worker's text pool held semaphores"
    deadline = time.monotonic() + 30
    while any(path.exists() for path in semaphores) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [path for path in semaphores if path.exists()], "the resource tracker removed them"


def _semaphores_of(pid: int) -> set[Path]:
    """The named semaphores of multiprocessing (``/dev/shm/sem.mp-*``) that process ``pid`` has open,
    whatever other processes hold: those whose inode is mapped into its memory (glibc maps a semaphore by
    the temporary name it was created under, the inode the same)."""
    fields = [line.split() for line in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8").splitlines()]
    inodes = {int(line[4]) for line in fields if len(line) > 5 and line[5].startswith("/dev/shm/sem.")}
    held = set()
    for path in Path("/dev/shm").glob("sem.mp-*"):
        with contextlib.suppress(FileNotFoundError):  # another process's, unlinked meanwhile
            if path.stat().st_ino in inodes:
                held.add(path)
    return held


# The demo server's delay of each page (seconds): the 50 pages of one site of concurrency 4 take it 2.5 s
# at least, so the worker that looks first takes them alone a small part of the run (until the other's
# first idle poll). The workers poll every 0.1 s, not the default 0.5 s: 150 pages of no delay take the two
# about 1.5 s, and a head start of up to 0.5 s gave the first worker 110-120 of them in 2 runs of 16.
@pytest.mark.parametrize(
    ("copies", "concurrency", "page_delay"), [(10, 1, 0.0), (1, 4, 0.2)], ids=["10 sites of 1", "1 site of 4"]
)
def test_two_workers_share_sites_whose_slots_one_worker_could_hold_all_of(
    tmp_path: Path, copies: int, concurrency: int, page_delay: float
) -> None:
    """Sites of no delay with fewer slots than one worker makes downloads at once (CONCURRENT_REQUESTS):
    the first worker to look held every slot, and took each one again as its download ended, while the
    other, looking every idle poll, found every site full: 150 pages and 0 (10 sites of concurrency 1),
    50 and 0 (one site of concurrency 4). Each worker fetches at least a quarter now. Each has its own
    data folder; every page is fetched once."""
    from crawler.redisio.embedded import EmbeddedRedis

    demo = start_demo(tmp_path, delay=page_delay, concurrency=concurrency)
    sites = demo_sites()[: min(copies, len(demo_sites()))]
    rule_ids: dict[str, list[str]] = {}
    for number in range(copies):
        demo_site = sites[number % len(sites)]
        rule_id = f"{demo_site.rule_id}-{number}"
        path = demo.rules / f"{demo_site.rule_id}.yaml"
        (demo.rules / f"{rule_id}.yaml").write_text(path.read_text(encoding="utf-8"), "utf-8")
        rule_ids.setdefault(demo_site.rule_id, []).append(rule_id)
    for path in demo.rules.glob("demo-*.yaml"):
        if path.stem in {s.rule_id for s in demo_sites()}:
            path.unlink()
    logs = [tmp_path / f"worker{number}.log" for number in range(2)]
    streams = [log.open("w", encoding="utf-8") for log in logs]
    try:
        with EmbeddedRedis(tmp_path / "redis") as embedded:
            url = embedded.ensure()
            server = connect(url)
            workers = [
                subprocess.Popen(
                    [sys.executable, "-m", "crawler.cli", "worker", "-s", "SCHEDULER_IDLE_POLL_SECONDS=0.1"],
                    env={**demo.env(REDIS_URL=url), "CRAWLER_DATA_DIR": str(tmp_path / f"data{number}")},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stream,
                )
                for number, stream in enumerate(streams)
            ]
            try:
                deadline = time.monotonic() + CRAWL_TIMEOUT
                while server.hlen("crawler:workers") < len(workers):
                    assert time.monotonic() < deadline, "the workers did not start"
                    time.sleep(0.1)
                ruleset = load_rules(demo.rules)
                jobs = [
                    enqueue_job(
                        server,
                        Keys("crawler"),
                        [ruleset[rule_id]],
                        article_urls=[
                            article.url(demo.origin)
                            for index, article in enumerate(demo_site.articles)
                            if index % len(rule_ids[demo_site.rule_id]) == copy
                        ],
                    )
                    for demo_site in sites
                    for copy, rule_id in enumerate(rule_ids[demo_site.rule_id])
                ]
                for job in jobs:
                    wait_until_done(server, job)
            finally:
                for worker in workers:
                    finish(worker)
    finally:
        for stream in streams:
            stream.close()
        stop(demo.process)
    expected = {article.path for s in sites for article in s.articles}
    closing = [re.findall(r"The worker ran [^\n]*", log.read_text(encoding="utf-8")) for log in logs]
    fetched = [int(re.findall(r": fetched (\d+) pages?", line[-1])[0]) if line else 0 for line in closing]
    assert all(count >= len(expected) / 4 for count in fetched), closing
    requested = demo.requested()
    assert all(requested[path] == 1 for path in expected), {
        p: requested[p] for p in expected if requested[p] != 1
    }


def test_a_worker_killed_while_hungry_loses_nothing_and_holds_a_site_offered_to_it_no_longer_than_the_offer(
    tmp_path: Path,
) -> None:
    """A worker hungry (its pops took nothing while this test held the site's one slot) is killed with
    SIGKILL; the slot this test then frees is offered to it, the dead worker, and nobody takes it until the
    offer lapses (OFFER_SECONDS); its hunger lapses too (HUNGRY_SECONDS). Every page of the job is then
    taken and ended by this test: nothing was lost, no site left untakeable."""
    from crawler.redisio.embedded import EmbeddedRedis
    from crawler.redisio.queue import HUNGRY_SECONDS, OFFER_SECONDS, LeasedQueue

    demo = start_demo(tmp_path, concurrency=1)
    demo_site = demo_sites()[0]
    keys = Keys("crawler")
    with EmbeddedRedis(tmp_path / "redis") as embedded:
        url = embedded.ensure()
        server = connect(url)
        queue = LeasedQueue(server, keys)
        rule = load_rules(demo.rules)[demo_site.rule_id]
        urls = [article.url(demo.origin) for article in demo_site.articles[:5]]
        job = enqueue_job(server, keys, [rule], article_urls=urls)
        held = queue.pop_many(count=1, worker="test", may_hunger=True)
        assert held[0].member is not None, "this test holds the site's one slot"
        worker = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "worker"],
            env=demo.env(REDIS_URL=url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + CRAWL_TIMEOUT
            while not server.zcard(keys.hungry):
                assert worker.poll() is None and time.monotonic() < deadline, "the worker never looked"
                time.sleep(0.05)
            (hungry,) = [decoded(member) for member in cast(list[bytes], server.zrange(keys.hungry, 0, -1))]
        finally:
            worker.kill()
            worker.wait()
        passed = queue.pop_many([held[0].member], 1, worker="test", may_hunger=True)
        seconds, micro = server.time()
        assert (server.zscore(keys.hungry, hungry) or 0.0) <= seconds + micro / 1e6 + HUNGRY_SECONDS, (
            "hungry a while"
        )
        assert server.get(keys.offer_of(demo_site.rule_id)) == hungry.encode(), (
            "the freed slot is the dead worker's"
        )
        assert (
            passed[0].member is None
            and 0 < server.pttl(keys.offer_of(demo_site.rule_id)) <= OFFER_SECONDS * 1000
        )
        assert queue.ack(held[0].member, site=demo_site.rule_id, job=job)
        ended = [held[0].member]
        while int(server.hget(keys.job(job), "pending") or 0):
            assert time.monotonic() < deadline, "a request was lost or its site never taken again"
            taken = queue.pop_many(count=1, worker="test", may_hunger=True)[0].member
            if taken is None:
                time.sleep(0.05)
                continue
            ended.append(taken)
            assert queue.ack(taken, site=demo_site.rule_id, job=job)
    stop(demo.process)
    assert len(set(ended)) == len(ended) == len(urls)


def wait_until_done(server: object, job: str) -> None:
    deadline = time.monotonic() + CRAWL_TIMEOUT
    while True:
        pending = int(server.hget(f"crawler:job:{job}", "pending") or 0)  # type: ignore[attr-defined]
        if pending == 0:
            return
        assert time.monotonic() < deadline, f"job {job} still has {pending} requests pending"
        time.sleep(0.1)


def finish(worker: subprocess.Popen[str] | subprocess.Popen[bytes]) -> str:
    """Stop a worker as Ctrl-C does; what it wrote on stderr, when that was a pipe."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGINT)
    try:
        _, stderr = worker.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()
        _, stderr = worker.communicate()
    if isinstance(stderr, bytes):
        return stderr.decode("utf-8", "replace")
    return stderr or ""


def test_crawl_settings_come_from_the_project_with_overrides() -> None:
    settings = crawl_settings({"LEASE_SECONDS": "7"})
    assert settings.getfloat("LEASE_SECONDS") == 7
    assert settings["SCHEDULER"] == "crawler.worker.scheduler.LeasedScheduler"
    assert settings.getbool("SCHEDULER_PERSIST")
    assert not settings.getbool("REMOTE_CONTROL_ENABLED")


def test_the_environment_fills_what_nothing_set_and_mongo_timeout_ms_over_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scrapy.settings import Settings

    from crawler import settings as project_settings
    from crawler.config import apply_environment

    for name in ("REDIS_URL", "MONGO_URI", "MONGO_TIMEOUT_MS"):
        monkeypatch.delenv(name, raising=False)

    def made() -> Settings:
        settings = Settings()
        settings.setmodule(project_settings, priority="project")
        settings.set("REDIS_URL", "redis://given:6379/0", priority="project")
        return settings

    given = made()
    apply_environment(given)
    assert given["REDIS_URL"] == "redis://given:6379/0", "an unset variable takes nothing away"
    assert given.getint("MONGO_TIMEOUT_MS") == project_settings.MONGO_TIMEOUT_MS
    monkeypatch.setenv("MONGO_TIMEOUT_MS", "300")
    monkeypatch.setenv("MONGO_URI", "mongodb://env:27017/")
    given = made()
    apply_environment(given)
    assert given.getint("MONGO_TIMEOUT_MS") == 300, "the environment over crawler/settings.py's default"
    assert given["MONGO_URI"] == "mongodb://env:27017/"
    assert given["REDIS_URL"] == "redis://given:6379/0"
    given = made()
    given.set("MONGO_TIMEOUT_MS", 100, priority="cmdline")
    apply_environment(given)
    assert given.getint("MONGO_TIMEOUT_MS") == 100, "-s over the environment"


def test_crawler_run_stopped_and_started_again_goes_on_where_it_stopped(slow_demo: DemoRun) -> None:
    from crawler.redisio.embedded import EmbeddedRedis

    demo = slow_demo
    expected = {article.path for s in demo_sites() for article in s.articles}

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "run"],
            env=demo.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def stored_count() -> int:
        if not (demo.data / "articles").exists():
            return 0
        return len(stored(demo))

    first = start()
    deadline = time.monotonic() + CRAWL_TIMEOUT
    while stored_count() < 20:
        assert time.monotonic() < deadline and first.poll() is None, "the first run stores articles"
        time.sleep(0.1)
    no_deprecations(finish(first))
    assert len(accounted(demo)) < len(expected), "stopped mid-crawl"
    second = start()
    try:
        while len(accounted(demo)) < len(expected):
            assert time.monotonic() < deadline and second.poll() is None, "the second run finishes the crawl"
            time.sleep(0.1)
    finally:
        no_deprecations(finish(second))
    assert sorted(accounted(demo)) == sorted(expected), "every article stored (or recorded) once"
    with EmbeddedRedis(demo.data) as embedded:
        server = connect(embedded.ensure())
        grabs = {s.rule_id: int(server.hget(f"crawler:grab:{s.rule_id}", "grabs") or 0) for s in demo_sites()}
    assert grabs == {s.rule_id: 1 for s in demo_sites()}, "the restart seeded no grab twice (20m periods)"
    requested = demo.requested()
    first_pages = ("/citynews/", "/techdaily/feed.xml", "/huaxia/api/list_1.json")
    assert all(requested[path] == 1 for path in first_pages), "each site's first page read once"


# A crawl's download handlers, as the project's settings give them, fetch a page of the demo sites (kept
# alive by the server, so the handler's pool holds its connection), then close with the reactor busy for
# longer than the handler's 1 s disconnect timeout (a loaded machine as the crawl closes): the pool's
# aborted connection and the timeout are then handled in one pass of the reactor.
CLOSE_RACE = """
import asyncio
import time
from scrapy import Request, Spider
from scrapy.core.downloader.handlers import DownloadHandlers
from scrapy.crawler import Crawler
from scrapy.utils.reactor import install_reactor
from crawler.config import crawl_settings
from crawler.demo.server import DemoServer

settings = crawl_settings()
install_reactor(settings["TWISTED_REACTOR"])
from twisted.internet import reactor
from twisted.internet.defer import Deferred

async def fetch_then_close(origin):
    crawler = Crawler(Spider, settings)
    crawler.spider = Spider("close-race")
    handlers = DownloadHandlers(crawler)
    response = await handlers.download_request_async(Request(origin + "/citynews/"))
    print("fetched", response.status, flush=True)
    closing = asyncio.ensure_future(handlers._close())
    await asyncio.sleep(0)  # the handler's close starts: its connections aborted, its timeout set
    time.sleep(1.5)  # the reactor busy past the timeout
    await closing
    print("closed", flush=True)

with DemoServer(port=0) as server:
    done = Deferred.fromFuture(asyncio.ensure_future(fetch_then_close(server.origin)))
    done.addBoth(lambda result: reactor.callLater(0.2, reactor.stop) and result)
    reactor.run()
"""


# The same with a pool slower to close than the handler's disconnect timeout (its connections' aborts
# taking longer than that): the pool's Deferred fires after the timeout ended the wait.
SLOW_POOL = CLOSE_RACE.replace(
    "    closing = asyncio.ensure_future(handlers._close())",
    """    handler = handlers._handlers["http"]
    handler._disconnect_timeout = 0.1
    close_pool = handler._pool.closeCachedConnections
    def slowly():
        late = Deferred()
        close_pool().addBoth(lambda _: reactor.callLater(0.5, late.callback, None))
        return late
    handler._pool.closeCachedConnections = slowly
    closing = asyncio.ensure_future(handlers._close())""",
).replace(
    "    time.sleep(1.5)  # the reactor busy past the timeout\n    await closing\n",
    "    await closing\n    await asyncio.sleep(1)  # the pool closes meanwhile\n",
)


@pytest.mark.parametrize("script", [CLOSE_RACE, SLOW_POOL], ids=["busy reactor", "slow pool"])
def test_a_handler_closing_while_the_reactor_is_busy_prints_no_already_called_traceback(script: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0 and "fetched 200" in run.stdout and "closed" in run.stdout, run
    assert "AlreadyCalledError" not in run.stderr, run.stderr


@pytest.mark.parametrize(
    ("reposts", "said"),
    [
        (1, "recorded 1 repost (the same article under another URL) against its original, not"),
        (2, "recorded 2 reposts (the same article under another URL) against their originals, not"),
    ],
)
def test_the_summary_counts_reposts_in_words(
    reposts: int, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = JobCounts(
        pending=0, fetched=3, stored=3 - reposts, skipped=0, errors=0, refused=0, reposts=reposts
    )
    _print_summary("job-1", counts, crawl_settings())
    assert f"{said} stored twice" in capsys.readouterr().out.splitlines()
