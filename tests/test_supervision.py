"""Supervision and anti-blocking across workers (issue 12), against the news farm (crawler/demo/farm.py, a
real HTTP server on 127.0.0.1), real `crawler` processes and the real embedded Redis: each site's
politeness held by all workers together, backoff on 429 with Retry-After, bans judged on a pattern and
never on one page, proxies and sessions rotated and benched, errors counted by kind. Every article is
stored once and nothing is lost."""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from crawlsite import RULE
from proxyserver import TestProxy

from crawler.demo.farm import Farm, FarmSite, Visit
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.queue import THROTTLE_HALF_LIFE
from crawler.requests import enqueue_job
from crawler.rules import Rule, load_rules
from crawler.settings import BACKOFF_THROTTLE_SECONDS
from crawler.store import open_store

COMMAND_TIMEOUT = 240.0
KEYS = Keys("crawler")


@dataclass
class Setup:
    farm: Farm
    root: Path
    url: str
    server: redis.Redis

    @property
    def rules(self) -> Path:
        return self.root / "rules"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("CRAWLER_", "REDIS_", "MONGO_"))
        }
        env.update(
            REDIS_URL=self.url,
            CRAWLER_RULES_DIR=str(self.rules),
            CRAWLER_DATA_DIR=str(self.data),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
            **extra,
        )
        return env

    def rule(self, name: str, extra: str = "") -> None:
        self.rules.mkdir(exist_ok=True)
        (self.rules / f"{name}.yaml").write_text(self.farm.rule(name) + extra, encoding="utf-8")

    def temp(self, site: str, *settings: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "crawler.cli", "temp", site, *(f"--set={pair}" for pair in settings)],
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def stored_urls(self) -> list[str]:
        store = open_store({"CRAWLER_DATA_DIR": str(self.data)})
        try:
            return [str(article["url"]) for article in store.iter_articles()]
        finally:
            store.close()

    def status(self) -> dict[str, object]:
        run = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "status", "--format", "json"],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=True,
        )
        report: dict[str, object] = json.loads(run.stdout)
        return report


def farm_site(name: str, **options: object) -> FarmSite:
    return FarmSite(name, per_hour=1.0, **options)  # type: ignore[arg-type]


@pytest.fixture
def setup(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Setup]:
    sites: list[FarmSite] = request.param
    # 15 simulated hours after the start, each site (one article an hour) lists 20 articles.
    farm = Farm(sites, start=1_700_000_000.0, now=1_700_000_000.0 + 15 * 3600)
    with farm, EmbeddedRedis(tmp_path / "data", watch_seconds=0) as embedded:
        url = embedded.ensure()
        server = connect(url)
        yield Setup(farm, tmp_path, url, server)
        server.close()


def articles_of(farm: Farm, name: str) -> set[str]:
    """The URLs of the articles a grab of the farm site ``name`` finds (those listed on its index)."""
    newest = farm.newest(name)
    return {f"{farm.origin}/{name}/a/{k}.html" for k in range(max(newest - 19, 0), newest + 1)}


def no_traceback(output: str) -> None:
    assert "Traceback" not in output, output[-4000:]


@contextlib.contextmanager
def reloading_worker(setup: Setup, seconds: float, *settings: str) -> Iterator[list[str]]:
    """A `crawler worker` that looks at the rules folder at most every ``seconds``, from its first beat
    on, with ``settings`` (NAME=VALUE); the list it gives holds its stderr once it was stopped (SIGINT).
    Its stderr goes to a file: a pipe read only at the end would stop the worker once 64 KB of lines
    filled it."""
    log = setup.root / "reloading-worker.log"
    pairs = (f"RULES_RELOAD_SECONDS={seconds}", *settings)
    with log.open("w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "worker", *(f"--set={pair}" for pair in pairs)],
            env=setup.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    output: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not setup.server.hlen(KEYS.workers):
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.2)
        yield output
    finally:
        process.send_signal(2)
        process.wait(timeout=60)
        output.append(log.read_text(encoding="utf-8"))


def crawled(setup: Setup, rule: Rule, urls: list[str]) -> str:
    """``urls`` of ``rule`` queued as a job, which has none pending within 60 s; the job's id."""
    job = enqueue_job(setup.server, KEYS, [rule], article_urls=urls)
    deadline = time.monotonic() + 60
    while int(setup.server.hget(KEYS.job(job), "pending") or 0) > 0:
        assert time.monotonic() < deadline, "a job did not finish"
        time.sleep(0.1)
    return job


# The queue's scripts write times with 14 significant digits (Lua's tostring): 0.1 ms at today's epoch.
CLOCK_DIGITS = 0.001
_STOP_WATCHING = "the test stops watching"


@dataclass
class QueueLog:
    """What the shared queue did for one site, by Redis's own clock (on this machine the farm's clock too):
    each request taken (the moment, its URL), each ``next`` moment the site may send again that a take set,
    and each backoff (when it began, until when)."""

    taken: list[tuple[float, str]] = field(default_factory=list)
    next_moments: list[float] = field(default_factory=list)
    held: list[tuple[float, float]] = field(default_factory=list)

    def taken_before(self, url: str, moment: float) -> float:
        """When the request for ``url`` that reached the site at ``moment`` was taken (its last take
        before)."""
        takes = [taken for taken, taken_url in self.taken if taken_url == url and taken <= moment]
        assert takes, f"{url} reached the site at {moment} without being taken from the queue"
        return max(takes)


@contextlib.contextmanager
def queue_watched(url: str, site: str) -> Iterator[QueueLog]:
    """Redis's MONITOR of the queue's scripts for ``site`` while the block runs: what a worker did, by the
    moment it happened in Redis, however late a loaded machine let the request reach the site."""
    log = QueueLog()
    client = redis.Redis.from_url(url, socket_timeout=None)

    def watch(monitor: redis.client.Monitor) -> None:
        for seen in monitor.listen():  # type: ignore[no-untyped-call]
            words = seen["command"].split(" ")
            if seen["command"] == f"ECHO {_STOP_WATCHING}":
                return
            if seen["client_type"] != "lua" or words[0] != "HSET":
                continue
            if words[1] == KEYS.lease_sites and words[-1] == site:
                log.taken.append((seen["time"], json.loads(" ".join(words[2:-1]))["url"]))
            elif words[1] == KEYS.polite(site) and words[2] == "next":
                log.next_moments.append(float(words[3]))
            elif words[1] == KEYS.polite(site) and words[2] == "until":
                log.held.append((float(words[-1]), float(words[3])))

    try:
        with client.monitor() as monitor:  # type: ignore[no-untyped-call]
            watcher = threading.Thread(target=watch, args=(monitor,))
            watcher.start()
            try:
                yield log
            finally:
                client.echo(_STOP_WATCHING)
                watcher.join(timeout=COMMAND_TIMEOUT)
    finally:
        client.close()


def url_of(farm: Farm, visit: Visit) -> str:
    """The URL a visit of the farm asked for (an index or an article)."""
    if visit.kind == "article":
        return f"{farm.origin}/{visit.site}/a/{visit.article}.html"
    return f"{farm.origin}/{visit.site}/"


# --- politeness held by every worker together -------------------------------------------------------------


# The delay of the site the three workers share: long enough for a take that ignored it to show among the
# gaps (the machine's noise is in when a request reaches the site, not in Redis's clock), short enough that
# 12 articles take 6 s, not 12.
SHARED_DELAY = 0.5


@pytest.mark.parametrize("setup", [[farm_site("polite", delay=SHARED_DELAY, concurrency=2)]], indirect=True)
def test_three_workers_together_keep_a_sites_delay(setup: Setup) -> None:
    setup.rule("polite")
    with queue_watched(setup.url, "polite") as queue:
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "worker"],
                env=setup.env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        try:
            rule = load_rules(setup.rules).rules["polite"]
            urls = sorted(articles_of(setup.farm, "polite"))[:12]
            job = enqueue_job(setup.server, KEYS, [rule], article_urls=urls)
            deadline = time.monotonic() + 120
            while int(setup.server.hget(KEYS.job(job), "pending") or 0) > 0:
                assert time.monotonic() < deadline, "the job did not finish"
                time.sleep(0.2)
        finally:
            outputs = []
            for worker in workers:
                worker.send_signal(2)
                outputs.append(worker.communicate(timeout=60)[1])
    for output in outputs:
        no_traceback(output)
    visits = [visit for visit in setup.farm.log if visit.site == "polite"]
    assert len(visits) == 12, "every article fetched once"
    assert len(queue.taken) == 12, "each taken from the shared queue once"
    for visit in visits:
        queue.taken_before(url_of(setup.farm, visit), visit.at)
    # The workers together took one request each SHARED_DELAY, by Redis's clock: each take set the next
    # moment the site may send, SHARED_DELAY on, and the next take came at it or later. (When each request
    # then reaches the site is up to how busy the machine is.)
    assert len(queue.next_moments) == 12, "each take set the next moment the site may send"
    gaps = [later - earlier for earlier, later in itertools.pairwise(queue.next_moments)]
    closest = min(gaps)
    assert closest >= SHARED_DELAY - CLOCK_DIGITS, f"two requests taken {closest:.3f} s apart (gaps {gaps})"
    assert all("Serving 1 site rule: " in output for output in outputs), "three workers served the site"
    assert sorted(setup.stored_urls()) == urls


# A worker whose crawl gets Ctrl-C as it opens (on spider_opened, before the engine runs).
_CTRL_C_AT_OPEN = """
import os, signal, sys
from scrapy import signals
from crawler.worker.spider import SitesSpider

def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)

made = SitesSpider.from_crawler.__func__

def from_crawler(cls, crawler, *args, **kwargs):
    crawler.signals.connect(ctrl_c, signal=signals.spider_opened, weak=False)
    return made(cls, crawler, *args, **kwargs)

if __name__ == "__main__":
    SitesSpider.from_crawler = classmethod(from_crawler)
    from crawler.cli.main import main
    sys.exit(main(["worker"]))
"""


@pytest.mark.parametrize("setup", [[farm_site("polite")]], indirect=True)
def test_ctrl_c_while_the_crawl_opens_ends_the_worker_as_interrupted(setup: Setup) -> None:
    setup.rule("polite")
    script = setup.root / "ctrl_c_at_open.py"
    script.write_text(_CTRL_C_AT_OPEN, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        env=setup.env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    no_traceback(run.stderr)
    assert "Received SIGINT" in run.stderr
    assert run.returncode == 130, run.stderr[-3000:]
    assert "crawler worker: interrupted" in run.stderr


@pytest.mark.parametrize("setup", [[farm_site("slow", concurrency=4)]], indirect=True)
def test_a_longer_robots_crawl_delay_holds_the_site(setup: Setup) -> None:
    setup.farm.crawl_delay = 0.5
    setup.rule("slow")
    rule = setup.rules / "slow.yaml"
    rule.write_text(rule.read_text(encoding="utf-8").replace("obey_robots: false", "obey_robots: true"))
    done = setup.temp("slow")
    assert done.returncode == 0, done.stderr[-3000:]
    moments = sorted(visit.at for visit in setup.farm.log if visit.site == "slow" and visit.kind == "article")
    assert len(moments) == 20
    rate = (len(moments) - 1) / (moments[-1] - moments[0])
    assert rate <= 2.1, f"{rate:.2f} requests/s with a crawl-delay of 0.5 s"
    assert float(setup.server.hget(KEYS.polite("slow"), "crawl_delay") or 0) == 0.5


# --- 429 and Retry-After ---------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("busy", rate_limit=3, retry_after=1)]], indirect=True)
def test_a_site_answering_429_is_waited_for_and_loses_nothing(setup: Setup) -> None:
    setup.rule("busy")
    with queue_watched(setup.url, "busy") as queue:
        done = setup.temp("busy")
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = articles_of(setup.farm, "busy")
    assert sorted(setup.stored_urls()) == sorted(expected), "every article stored once"
    visits = [visit for visit in setup.farm.log if visit.site == "busy"]
    refused = [visit for visit in visits if visit.status == 429]
    assert refused, "the farm's limit was reached"
    assert queue.held, "the 429s held the site back"
    for moment, url in queue.taken:
        assert not any(since < moment < until for since, until in queue.held), f"{url} taken while held"
    for answer in refused:
        began = min((since for since, _ in queue.held if since >= answer.at), default=None)
        assert began is not None, f"the 429 at {answer.at} held the site back"
        # Within the Retry-After of the 429 (1 s), only requests already on their way reach the site: taken
        # before the crawler read a 429 and held the site back (however late a busy machine sent them).
        for visit in visits:
            if answer.at < visit.at < answer.at + 1:
                url = url_of(setup.farm, visit)
                taken = queue.taken_before(url, visit.at)
                assert taken <= began, (
                    f"{url} taken {taken - began:.3f} s into the backoff of the 429 at {answer.at}"
                )
    # Then the site is asked gently: at most once every BACKOFF_THROTTLE_SECONDS, a delay halving every
    # THROTTLE_HALF_LIFE (a crawler that kept asking at full speed would be refused again and again).
    first = min(since for since, _ in queue.held)
    later_takes = [moment for moment, _ in queue.taken if moment > first]
    assert len(queue.next_moments) == len(later_takes) > 0, "each take after the backoff set the next moment"
    for earlier, later in itertools.pairwise(queue.next_moments):
        least = BACKOFF_THROTTLE_SECONDS * 0.5 ** ((later - first) / THROTTLE_HALF_LIFE)
        assert later - earlier >= least - CLOCK_DIGITS, f"asked again {later - earlier:.3f} s after"
    assert "errors 0" in done.stdout


# --- bans: a pattern, never one page -----------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("comments", comment_captcha=True)]], indirect=True)
def test_articles_with_a_recaptcha_comment_form_are_stored_and_no_ban(setup: Setup) -> None:
    setup.rule("comments")
    done = setup.temp("comments")
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(setup.stored_urls()) == sorted(articles_of(setup.farm, "comments"))
    assert "a sign of a ban" not in done.stderr
    site = next(s for s in setup.status()["sites"] if s["site"] == "comments")  # type: ignore[attr-defined]
    assert site["bans_24h"] == 0 and not site["attention"]


@pytest.mark.parametrize("setup", [[farm_site("walled")]], indirect=True)
def test_a_site_serving_challenge_pages_is_banned_with_evidence_and_its_requests_kept(setup: Setup) -> None:
    setup.rule("walled")
    setup.farm.captcha.add("walled")
    done = setup.temp("walled")
    assert done.returncode == 1, "nothing could be stored"
    assert "challenge page" in done.stdout, done.stdout
    site = next(s for s in setup.status()["sites"] if s["site"] == "walled")  # type: ignore[attr-defined]
    assert site["bans_24h"] >= 1
    ban = site["ban"]
    assert ban is not None and "challenge page" in ban["what"]
    assert ban["signals"] and ban["signals"][0]["url"].startswith(setup.farm.origin)
    assert any("banned" in reason for reason in site["attention"])
    dead = [json.loads(record) for record in setup.server.hvals(KEYS.dead)]
    assert dead and all(letter["kind"] == "challenge page" for letter in dead), "kept, with what it was"
    assert setup.stored_urls() == []


# --- proxies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("proxied")]], indirect=True)
def test_a_proxy_the_site_bans_is_benched_and_the_other_serves_every_article(setup: Setup) -> None:
    with (
        TestProxy("alpha", user="crawler", password="s3cret-alpha") as alpha,
        TestProxy("beta", user="crawler", password="s3cret-beta") as beta,
    ):
        setup.farm.proxy_limit["alpha"] = 3
        proxies = f"{alpha.url('crawler', 's3cret-alpha')},{beta.url('crawler', 's3cret-beta')}"
        setup.rule("proxied")
        done = setup.temp("proxied", CRAWLER_PROXIES=proxies)
        status = setup.status()
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(setup.stored_urls()) == sorted(articles_of(setup.farm, "proxied")), "every article once"
    assert alpha.relayed >= 3 and beta.relayed > alpha.relayed
    assert "Proxy http://127.0.0.1" in done.stderr and "benched" in done.stderr
    everything = done.stdout + done.stderr + json.dumps(status) + _redis_dump(setup.server)
    for secret in ("s3cret-alpha", "s3cret-beta"):
        assert secret not in everything, "a proxy's credentials were shown or stored"
    proxies_shown = {p["proxy"]: p for p in status["proxies"]}  # type: ignore[attr-defined]
    assert proxies_shown[f"http://127.0.0.1:{alpha.port}"]["benched"]


@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_a_proxy_benched_by_a_worker_whose_clock_is_off_is_benched_for_its_bench_seconds_by_every_worker(
    redis_server: str, monkeypatch: pytest.MonkeyPatch, skew: float
) -> None:
    """A worker whose machine's clock is 10 minutes off benches a proxy for PROXY_BENCH_SECONDS (300 s),
    and another worker, its clock right, leaves the proxy out for that long: its bench was written by the
    benching machine's clock, so a clock 10 minutes behind benched it for nobody else, one ahead for 15
    minutes."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.redisio import clock as clock_module
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(REDIS_URL=redis_server, STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector")
    bench_seconds = values["PROXY_BENCH_SECONDS"]
    proxies = global_proxies("http://127.0.0.1:9 http://127.0.0.1:10", None)
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", 0.0)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    skewed = ProxyPool(get_crawler(settings_dict=values), proxies, {})
    skewed.bench(proxies[0].id, "3 failures in a row")  # its connection measures its offset to Redis's clock
    monkeypatch.setattr(time, "time", real)
    clock_module._offset = 0.0
    other = ProxyPool(get_crawler(settings_dict=values), proxies, {})
    other.flush()
    assert other.choose(proxies[:1]) is None, "benched for every worker"
    assert other.bench_left(proxies[:1]) <= bench_seconds


def test_a_proxy_benched_again_is_said_once_until_it_works_again_and_its_benches_counted(
    redis_server: str, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A proxy benched again before it worked once is the same fault going on: said once, then counted
    (its health's ``benches``, read by ``crawler status``); the request that goes through it again ends
    it in one line with the benches not said; benched after that, it is said whole again."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(REDIS_URL=redis_server, STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector")
    (proxy,) = global_proxies("http://127.0.0.1:9", None)
    pool = ProxyPool(get_crawler(settings_dict=values), [proxy], {})
    with caplog.at_level(logging.INFO, logger="crawler.worker"):
        for _ in range(3):
            pool.bench(proxy.id, "3 failures in a row")
        pool.release(proxy.id, ok=True)
        pool.bench(proxy.id, "3 failures in a row")
    pool.flush()
    said = [record.getMessage() for record in caplog.records if "127.0.0.1:9" in record.getMessage()]
    first = (
        "Proxy http://127.0.0.1:9 benched for 300 s: 3 failures in a row; benched again while it fails so,"
        " said once an hour with a count"
    )
    assert len(said) == 3 and said[0] == said[2] == first, said
    assert re.fullmatch(
        r"Proxy http://127\.0\.0\.1:9 works again: 2 more times proxy http://127\.0\.0\.1:9 benched so in the"
        r" \d+ s since the last line, the last: 3 failures in a row",
        said[1],
    ), said
    assert redis_client.hget(KEYS.proxy(proxy.id), "benches") == b"4"


def test_a_proxy_no_worker_configures_any_more_has_its_health_expire(
    redis_server: str, redis_client: redis.Redis
) -> None:
    """A proxy's health hash outlived the proxy: one removed from ``CRAWLER_PROXIES`` (or a rule) kept
    ``crawler:proxy:<id>`` for ever, shown by ``crawler status`` as if it were in use. Each flush of a
    worker that has it configured (and each write) keeps it ``SUPERVISION_KEEP_HOURS`` from then on: a
    proxy no worker has any more goes that long after the last one let it go."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(REDIS_URL=redis_server, STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector")
    keep = values["SUPERVISION_KEEP_HOURS"] * 3600
    urls = "http://127.0.0.1:9 http://127.0.0.1:10 http://127.0.0.1:11"
    kept, removed, benched = global_proxies(urls, None)
    before = ProxyPool(get_crawler(settings_dict=values), [kept, removed, benched], {})
    before.release(kept.id, ok=True, latency=0.2)
    before.release(removed.id, ok=False)
    before.flush()
    before.bench(benched.id, "3 failures in a row")
    redis_client.persist(KEYS.proxy(kept.id))  # written by a version that set no expiry
    after = ProxyPool(get_crawler(settings_dict=values), [kept], {})
    after.flush()
    ttls = {proxy.id: redis_client.ttl(KEYS.proxy(proxy.id)) for proxy in (kept, removed, benched)}
    assert all(keep - 60 <= ttl <= keep for ttl in ttls.values()), ttls


@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_a_ban_judged_by_a_worker_whose_clock_is_off_has_its_evidence_timed_by_redis(
    redis_server: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, skew: float
) -> None:
    """The evidence of a ban (``crawler status --format json``: each signal's ``at``) is timed by Redis's
    clock, as the ban itself is: a worker whose machine's clock is 10 minutes off timed its signals by
    that clock, 10 minutes before or after the ban they made."""
    from scrapy.http import Request, Response
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.redisio import clock as clock_module
    from crawler.worker.bans import BanDetectionMiddleware

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        REDIS_URL=redis_server,
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
        BAN_MIN_SIGNALS=1,
        BAN_MIN_SHARE=0.0,
    )
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", 0.0)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    bans = BanDetectionMiddleware(get_crawler(settings_dict=values))  # its connection measures the offset
    request = Request("http://skewed.test/a/1", meta={"site": "skewed"})
    bans.process_response(request, Response(request.url, status=403, request=request))
    ban = json.loads(redis_client.hget(KEYS.bans, "skewed") or "{}")
    assert ban["signals"], ban
    # Both are read within the same millisecond or so; 10 minutes apart before.
    assert all(abs(signal["at"] - ban["at"]) < 60 for signal in ban["signals"]), ban


@pytest.mark.parametrize("setup", [[farm_site("rule-proxy")]], indirect=True)
def test_a_rules_own_proxies_are_used_for_its_site(setup: Setup) -> None:
    with TestProxy("own", user="u", password="rule-secret") as own:
        setup.rule("rule-proxy", f"access:\n  proxies: ['{own.url('u', 'rule-secret')}']\n")
        done = setup.temp("rule-proxy", "LOG_LEVEL=INFO")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "INFO: Proxies: 0 shared, 1 site with its own\n" in done.stderr, done.stderr[-3000:]
    assert own.relayed == len([v for v in setup.farm.log if v.site == "rule-proxy"]) > 0
    assert {v.proxy for v in setup.farm.log} == {"own"}
    assert "rule-secret" not in done.stdout + done.stderr + _redis_dump(setup.server)


@pytest.mark.parametrize("setup", [[farm_site("unreachable")]], indirect=True)
def test_a_proxy_that_refuses_connections_is_named_in_the_error(setup: Setup) -> None:
    setup.rule("unreachable", "access:\n  proxies: ['http://u:closed-secret@127.0.0.1:9']\n")
    done = setup.temp("unreachable", "PROXY_MAX_FAILURES=10", "RETRY_BACKOFF_SECONDS=0.1")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    (letter,) = [json.loads(record) for record in setup.server.hvals(KEYS.dead)]
    assert letter["reason"].endswith("(through the proxy http://127.0.0.1:9)"), letter["reason"]
    assert "closed-secret" not in done.stdout + done.stderr + _redis_dump(setup.server)


def _redis_dump(server: redis.Redis) -> str:
    """Every key and value in Redis, as text (to look for a secret)."""
    parts = []
    for key in server.scan_iter():
        kind = server.type(key)
        if kind == b"string":
            parts.append(repr(server.get(key)))
        elif kind == b"hash":
            parts.append(repr(server.hgetall(key)))
        elif kind == b"zset":
            parts.append(repr(server.zrange(key, 0, -1)))
        elif kind == b"set":
            parts.append(repr(server.smembers(key)))
        elif kind == b"list":
            parts.append(repr(server.lrange(key, 0, -1)))
    return "\n".join(parts)


# --- sessions ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("members", cookie="good-token")]], indirect=True)
def test_a_logged_out_session_is_benched_and_another_serves_the_site(setup: Setup) -> None:
    sessions = setup.rules / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "expired.yaml").write_text("cookies: {session: old-token}\n", encoding="utf-8")
    (sessions / "fresh.yaml").write_text("cookies: {session: good-token}\n", encoding="utf-8")
    setup.rule("members", "access:\n  sessions: [sessions/expired.yaml, sessions/fresh.yaml]\n")
    done = setup.temp("members")
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(setup.stored_urls()) == sorted(articles_of(setup.farm, "members"))
    assert "session expired benched" in done.stderr
    served = {v.cookie for v in setup.farm.log if v.status == 200 and v.kind == "article"}
    assert served == {"session=good-token"}
    dump = _redis_dump(setup.server)
    assert "good-token" not in dump and "old-token" not in dump, "a session's cookies reached Redis"


@pytest.mark.parametrize(
    ("first", "now", "sent"),
    [
        ("http://news.test/a/1", "https://news.test/a/1", True),
        ("http://news.test/a/1", "http://news.test:8080/a/1", True),
        ("https://news.test/a/1", "http://news.test/a/1", False),
        ("http://news.test/a/1", "http://cdn.test/a/1", False),
        ("http://news.test/a/1", "http://www.news.test/a/1", False),
    ],
)
def test_a_redirect_keeps_the_session_on_its_host_and_withholds_it_elsewhere_or_in_clear(
    tmp_path: Path, redis_server: str, first: str, now: str, sent: bool
) -> None:
    """DESIGN.md: credentials never follow a redirect to another host. The same host on HTTPS or on another
    port is no other host (a cookie is the host's, whatever its port), so a site's http:// links that
    redirect to https:// keep their login; another host, or HTTPS left for plain HTTP (where anyone on the
    way reads it), goes without the session."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules import load_rule
    from crawler.worker.sessions import SessionMiddleware, SessionPool

    (tmp_path / "alice.yaml").write_text(
        "cookies: {sid: alice-token}\nheaders: {X-Api-Key: alice-key}\n", encoding="utf-8"
    )
    rule_file = tmp_path / "news.yaml"
    rule_file.write_text(
        RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
        + "access:\n  sessions: [alice.yaml]\n",
        encoding="utf-8",
    )
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        REDIS_URL=redis_server,
        REDIS_KEY_PREFIX=f"redirect-{tmp_path.name}",
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
    )
    crawler = get_crawler(settings_dict=values)
    pool = SessionPool(crawler, {"news": load_rule(rule_file)}.get)
    sessions = SessionMiddleware(crawler, pool)
    try:
        request = Request(now, meta={"site": "news", "redirect_urls": [first]})
        assert sessions.process_request(request) is None
        carried = (request.headers.get(b"Cookie"), request.headers.get(b"X-Api-Key"))
        withheld = crawler.stats.get_value("session/withheld_redirect/news")
    finally:
        pool.stop()
    if sent:
        assert carried == (b"sid=alice-token", b"alice-key"), f"{first} -> {now}"
        assert withheld is None
    else:
        assert carried == (None, None), f"{first} -> {now}"
        assert withheld == 1


def test_a_session_edited_while_the_worker_runs_is_sent_as_it_is_now(
    tmp_path: Path, redis_server: str
) -> None:
    """A worker reads a rule file edited while it runs, the session files it names too (a cookie renewed
    by hand once the old one expired), but the session pool kept the session it held as it took it: its
    requests went on with the old cookie until the site logged it out, and a session taken out of the
    rule was used until then. The session held is now the rule's as it is, and one taken out of the rule
    is given back for another."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules import load_rule
    from crawler.worker.sessions import SessionMiddleware, SessionPool

    (tmp_path / "alice.yaml").write_text("cookies: {sid: alice-token}\n", encoding="utf-8")
    (tmp_path / "bob.yaml").write_text("cookies: {sid: bob-token}\n", encoding="utf-8")
    rule_file = tmp_path / "news.yaml"
    text = RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
    rule_file.write_text(text + "access:\n  sessions: [alice.yaml]\n", encoding="utf-8")
    rules: dict[str, Rule] = {"news": load_rule(rule_file)}
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        REDIS_URL=redis_server,
        REDIS_KEY_PREFIX=f"edited-{tmp_path.name}",
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
    )
    crawler = get_crawler(settings_dict=values)
    pool = SessionPool(crawler, rules.get)
    sessions = SessionMiddleware(crawler, pool)

    def cookie_sent() -> bytes | None:
        request = Request("http://news.test/a/1", meta={"site": "news"})
        assert sessions.process_request(request) is None
        return request.headers.get(b"Cookie")

    try:
        assert cookie_sent() == b"sid=alice-token"
        (tmp_path / "alice.yaml").write_text("cookies: {sid: alice-renewed}\n", encoding="utf-8")
        rules["news"] = load_rule(rule_file)
        assert cookie_sent() == b"sid=alice-renewed", "the session file as it is now"
        rule_file.write_text(text + "access:\n  sessions: [bob.yaml]\n", encoding="utf-8")
        rules["news"] = load_rule(rule_file)
        assert cookie_sent() == b"sid=bob-token", "a session taken out of the rule is used no more"
    finally:
        pool.stop()


# --- errors are errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("gone")]], indirect=True)
def test_a_start_url_answering_404_is_an_error_of_its_kind(setup: Setup) -> None:
    setup.rule("gone")
    (setup.rules / "gone.yaml").write_text(
        (setup.rules / "gone.yaml").read_text(encoding="utf-8").replace("/gone/'", "/gone/missing/'"),
        encoding="utf-8",
    )
    done = setup.temp("gone")
    assert done.returncode == 1
    assert "errors 1 (HTTP 404: 1)" in done.stdout, done.stdout
    site = next(s for s in setup.status()["sites"] if s["site"] == "gone")  # type: ignore[attr-defined]
    assert site["errors_by_kind_24h"] == {"HTTP 404": 1}


# --- a rule added while the workers run --------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("first"), farm_site("later")]], indirect=True)
def test_a_running_worker_takes_a_rule_added_after_it_started_and_loses_nothing_without_one(
    setup: Setup,
) -> None:
    setup.rule("first")
    worker = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "--rules-dir", str(setup.rules), "worker"],
        env=setup.env(CRAWLER_COMMAND="./run.sh crawler"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not setup.server.hlen(KEYS.workers):
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.2)
        setup.rule("later")
        urls = sorted(articles_of(setup.farm, "later"))[:3]
        job = enqueue_job(setup.server, KEYS, [load_rules(setup.rules).rules["later"]], article_urls=urls)
        other = setup.root / "other-rules"
        other.mkdir()
        (other / "ghost.yaml").write_text(
            setup.farm.rule("first").replace("first", "ghost"), encoding="utf-8"
        )
        ghost = enqueue_job(setup.server, KEYS, [load_rules(other).rules["ghost"]], article_urls=[urls[0]])
        for one in (job, ghost):
            while int(setup.server.hget(KEYS.job(one), "pending") or 0) > 0:
                assert time.monotonic() < deadline + 60, "a job did not finish"
                time.sleep(0.2)
    finally:
        worker.send_signal(2)
        output = worker.communicate(timeout=60)[1]
    no_traceback(output)
    assert sorted(setup.stored_urls()) == urls, "the rule added later was read by the running worker"
    assert setup.server.hget(KEYS.job(ghost), "error:no rule") == b"1"
    letters = [json.loads(record) for record in setup.server.hvals(KEYS.dead)]
    command = f"./run.sh crawler --rules-dir {setup.rules}"
    assert [letter["reason"] for letter in letters] == [
        f"no rule for site 'ghost' in {socket.gethostname()}:{setup.rules.resolve()}, the rules folder of the"
        f" worker that took it: add or fix its rule file there (`{command} rules check`), then"
        f" `{command} dead requeue --site ghost`; a site removed on purpose:"
        f" `{command} dead drop --site ghost`"
    ], "the commands it suggests are run as the worker was, on its rules folder"


@pytest.mark.parametrize("setup", [[farm_site("edited")]], indirect=True)
def test_a_running_worker_reads_a_rule_edited_after_it_started(setup: Setup) -> None:
    """A worker (`crawler run`'s too) kept the rule it read as it started: an article fetched after the
    rule file was edited (its title field, say, and then `crawler temp SITE --url URL` to see the fix)
    was read with the old rule, in the service's worker, where the scheduler had the new one. A file
    edited into errors leaves the rule as it was; a file removed takes it away (a `no rule` dead letter)."""
    setup.rule("edited")
    path = setup.rules / "edited.yaml"
    headline = "title: {xpath: \"//h1[@class='headline']\"}"
    good = path.read_text(encoding="utf-8")
    edits = [
        good,
        good.replace(headline, headline[:-1] + ", regex: '^(\\S+)'}"),
        good.replace(headline, headline[:-1] + ", regex: '^(\\S+)'}").replace("article:", "artcle:"),
        None,
    ]
    urls = sorted(articles_of(setup.farm, "edited"))[: len(edits)]
    rule = load_rules(setup.rules).rules["edited"]
    with reloading_worker(setup, 0.2) as stderr:
        for url, text in zip(urls, edits, strict=True):
            if text is None:
                path.unlink()
            elif text != path.read_text(encoding="utf-8"):
                path.write_text(text, encoding="utf-8")
            time.sleep(0.5)
            crawled(setup, rule, [url])
    output = stderr[0]
    no_traceback(output)
    with open_store({"CRAWLER_DATA_DIR": str(setup.data)}) as store:
        titles = {
            str(article["url"]): str(article["title"]) for article in store.iter_articles(site="edited")
        }
    first, edited, broken, removed = urls
    assert titles[first].startswith("edited ") and titles[first] != "edited", "the rule as it started"
    assert titles[edited] == "edited", "the edited rule: its title's first word"
    assert titles[broken] == "edited", "the file has errors: the rule as it was before them"
    assert removed not in titles
    letters = [json.loads(record) for record in setup.server.hvals(KEYS.dead)]
    assert [(letter["url"], letter["kind"]) for letter in letters] == [(removed, "no rule")]
    assert "Rules changed while running: edited" in output
    assert (
        "Rule files changed while running have errors, their sites keep the rule read before: edited"
        in output
    )
    assert "Rules removed while running: edited" in output


@pytest.mark.parametrize("setup", [[farm_site("edited")]], indirect=True)
def test_a_rule_edited_beside_a_yml_file_of_its_site_is_taken_as_changed(setup: Setup) -> None:
    """A ``SITE.yml`` left beside ``SITE.yaml`` (not read: rule files end in ``.yaml``) is an error of the
    site's name: an edit of the ``.yaml`` file was logged as "have errors, their sites keep the rule read
    before", though the edited rule was read and used."""
    setup.rule("edited")
    path = setup.rules / "edited.yaml"
    good = path.read_text(encoding="utf-8")
    (setup.rules / "edited.yml").write_text(good, encoding="utf-8")
    headline = "title: {xpath: \"//h1[@class='headline']\"}"
    first, second = sorted(articles_of(setup.farm, "edited"))[:2]
    rule = load_rules(setup.rules).rules["edited"]
    with reloading_worker(setup, 0.2) as stderr:
        crawled(setup, rule, [first])
        path.write_text(good.replace(headline, headline[:-1] + ", regex: '^(\\S+)'}"), encoding="utf-8")
        time.sleep(0.5)
        crawled(setup, rule, [second])
    output = stderr[0]
    no_traceback(output)
    with open_store({"CRAWLER_DATA_DIR": str(setup.data)}) as store:
        titles = {
            str(article["url"]): str(article["title"]) for article in store.iter_articles(site="edited")
        }
    assert titles[second] == "edited", "the edited rule: its title's first word"
    assert "Rules changed while running: edited" in output
    assert "have errors" not in output


@pytest.mark.parametrize("setup", [[farm_site("saved")]], indirect=True)
def test_a_rule_file_saved_by_renaming_takes_no_rule_away_for_the_moment_it_is_missing(setup: Setup) -> None:
    """An editor that saves by renaming (vim's default: the file moved aside, the new one written) leaves
    the folder without the rule file for a moment: a worker that looked then took the rule away, and the
    site's requests of that moment became `no rule` dead letters. A rule is taken away only once the
    folder has not changed for RULES_RELOAD_SECONDS."""
    setup.rule("saved")
    path = setup.rules / "saved.yaml"
    aside = setup.rules / "saved.yaml~"
    rule = load_rules(setup.rules).rules["saved"]
    first, second = sorted(articles_of(setup.farm, "saved"))[:2]
    with reloading_worker(setup, 3) as stderr:
        crawled(setup, rule, [first])
        time.sleep(3.5)  # the worker's next request of the site looks at the folder
        path.rename(aside)
        crawled(setup, rule, [second])  # while the file is missing
        aside.rename(path)
    output = stderr[0]
    no_traceback(output)
    assert setup.server.hlen(KEYS.dead) == 0, [json.loads(v) for v in setup.server.hvals(KEYS.dead)]
    assert sorted(setup.stored_urls()) == [first, second]
    assert "Rules removed while running" not in output


@pytest.mark.parametrize("setup", [[farm_site("gone")]], indirect=True)
def test_the_requests_of_a_site_whose_rule_file_is_removed_are_said_once_not_in_a_line_each(
    setup: Setup,
) -> None:
    """A rule file deleted while a worker crawls its site: each of the site's queued requests (780 in the
    fault hunt) was dead-lettered with one warning line of its own, the same "no rule for site ..." over
    and over. They are still each dead-lettered and counted, but said in one line with how many are
    queued still and the fix, then with their count (here when the rule is read again, which is said)."""
    setup.rule("gone")
    rule = load_rules(setup.rules).rules["gone"]
    path = setup.rules / "gone.yaml"
    text = path.read_text(encoding="utf-8")
    listed = sorted(articles_of(setup.farm, "gone"))
    unruled = [f"{setup.farm.origin}/gone/a/{k}.html" for k in range(1000, 1200)]
    with reloading_worker(setup, 0.2) as stderr:
        crawled(setup, rule, listed[:1])
        path.unlink()
        time.sleep(0.5)  # the rule is taken away once the folder has not changed for RULES_RELOAD_SECONDS
        job = crawled(setup, rule, unruled)
        path.write_text(text, encoding="utf-8")
        crawled(setup, rule, listed[1:2])
    output = stderr[0]
    no_traceback(output)
    assert setup.server.hget(KEYS.job(job), "error:no rule") == b"200"
    assert setup.server.hlen(KEYS.dead) == 200
    assert sorted(setup.stored_urls()) == listed[:2], "the rule read again"
    lines = output.splitlines()
    said = [number for number, line in enumerate(lines) if "no rule for site 'gone'" in line]
    assert len(said) == 2, [lines[number] for number in said]
    first, rest = said
    removed = lines.index(next(line for line in lines if "Rules removed while running: gone" in line))
    added = lines.index(next(line for line in lines if "Rules added while running: gone" in line))
    assert removed < first < added < rest
    assert re.search(
        r"WARNING: Dead-lettered \S+ of site 'gone': no rule for site 'gone' in .*`[^`]*dead requeue --site"
        r" gone`; a site removed on purpose: `[^`]*dead drop --site gone`; the site's other requests this"
        r" worker takes \(\d+ queued now\) are dead-lettered alike"
        r" until its rule is read again, said once a minute with a count$",
        lines[first],
    ), lines[first]
    assert re.search(
        r"WARNING: 199 more requests dead-lettered so in the \d+ s since the last line, the last: no rule for"
        r" site 'gone' in ",
        lines[rest],
    ), lines[rest]


@pytest.mark.parametrize("setup", [[farm_site("broken")]], indirect=True)
def test_the_requests_of_a_site_whose_rule_file_a_worker_cannot_read_are_said_once_when_dead_lettered(
    setup: Setup,
) -> None:
    """A worker started while a site's rule file is broken (invalid YAML saved, a key of a newer version)
    puts each of the site's requests back for another worker, and dead-letters it once its tries are used
    up (RULES_UNREADABLE_MAX_ATTEMPTS): each with one warning line of its own, the same "the worker that
    took it cannot read the rule file ..." over and over (100 lines for 100 requests here). They are still
    each dead-lettered and counted, but said as the requests of a removed rule file are: the first whole
    with the file, its line, the fix and how many of the site's requests are pending still, the rest in one
    line with their count (here when the file, mended, is read again)."""
    setup.rule("broken")
    rule = load_rules(setup.rules).rules["broken"]
    path = setup.rules / "broken.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "  misplaced: [\n", encoding="utf-8")
    listed = sorted(articles_of(setup.farm, "broken"))
    unread = [f"{setup.farm.origin}/broken/a/{k}.html" for k in range(1000, 1100)]
    tries = ("RULES_UNREADABLE_RETRY_SECONDS=0.05", "RULES_UNREADABLE_MAX_ATTEMPTS=2")
    with reloading_worker(setup, 0.2, *tries) as stderr:
        job = crawled(setup, rule, unread)
        path.write_text(text, encoding="utf-8")
        crawled(setup, rule, listed[:1])
    output = stderr[0]
    no_traceback(output)
    assert setup.server.hget(KEYS.job(job), "error:no rule") == b"100"
    assert setup.server.hlen(KEYS.dead) == 100
    assert sorted(setup.stored_urls()) == listed[:1], "the rule read once mended"
    lines = output.splitlines()
    said = [number for number, line in enumerate(lines) if re.search("Dead-lettered|dead-lettered so", line)]
    assert len(said) == 2, [lines[number] for number in said]
    first, rest = said
    added = lines.index(next(line for line in lines if "Rules added while running: broken" in line))
    assert first < added < rest
    assert re.search(
        rf"WARNING: Dead-lettered \S+ of site 'broken': the worker that took it cannot read the rule file of"
        rf" site 'broken' \({re.escape(str(path))}: line \d+, column \d+: invalid YAML: .*\): run the crawler"
        r" version .*, or mend the file here \(`[^`]*rules check`\), then `[^`]*dead requeue --site broken`"
        r" \(tried 2 times\); the site's other requests this worker takes \(\d+ pending now\) are put"
        r" back alike and dead-lettered once their tries are used up, until its rule file is read, said"
        r" once a minute with a count$",
        lines[first],
    ), lines[first]
    assert re.search(
        r"WARNING: 99 more requests dead-lettered so in the \d+ s since the last line, the last: the worker"
        r" that took it cannot read the rule file of site 'broken' ",
        lines[rest],
    ), lines[rest]


@pytest.mark.parametrize("setup", [[farm_site("edited")]], indirect=True)
def test_a_rule_edited_before_a_workers_first_request_of_its_site_is_taken_as_changed(setup: Setup) -> None:
    """A worker that read the rules as it started (Scrapy's ``update_settings``) kept no stamp of the
    folder: a rule edited before its first request of the site (a worker started at 9:00, the rule's delay
    raised at 9:05, its first grab at 9:10) was read, but not as changed: its politeness stayed the one
    the job was queued with, and no `Rules changed while running` was logged."""
    setup.rule("edited")
    rule = load_rules(setup.rules).rules["edited"]
    path = setup.rules / "edited.yaml"
    text = path.read_text(encoding="utf-8")
    slowed = text.replace("politeness: {delay: 0.0,", "politeness: {delay: 0.25,")
    assert slowed != text
    with reloading_worker(setup, 0.2) as stderr:
        path.write_text(slowed, encoding="utf-8")
        time.sleep(0.5)
        # Queued with the rule as it was: the job sets the site's politeness of that rule.
        crawled(setup, rule, sorted(articles_of(setup.farm, "edited"))[:1])
    output = stderr[0]
    no_traceback(output)
    assert "Rules changed while running: edited" in output
    assert float(setup.server.hget(KEYS.polite("edited"), "delay") or 0) == 0.25


# --- what crawler status counts, across a worker killed mid-crawl -------------------------------------------


def worker(setup: Setup, *settings: str) -> subprocess.Popen[str]:
    """A `crawler worker` whose leases expire 3 s after it stops renewing them, with ``settings``."""
    pairs = ("LEASE_SECONDS=3", "LEASE_RENEW_SECONDS=1", *settings)
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", *(f"--set={pair}" for pair in pairs)],
        env=setup.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_job(setup: Setup, job: str, field: str, done: Callable[[int], bool]) -> None:
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while not done(int(setup.server.hget(KEYS.job(job), field) or 0)):
        assert time.monotonic() < deadline, f"job {job}: {field} did not get there"
        time.sleep(0.1)


@pytest.mark.parametrize("setup", [[farm_site("killed", delay=0.2, concurrency=1)]], indirect=True)
def test_new_articles_of_a_worker_killed_mid_crawl_are_counted_once(setup: Setup) -> None:
    setup.rule("killed")
    job = enqueue_job(setup.server, KEYS, [load_rules(setup.rules).rules["killed"]])
    # Its counters are never flushed before the kill: only what it acknowledged reaches Redis.
    victim = worker(setup, "SUPERVISION_FLUSH_SECONDS=3600")
    try:
        wait_for_job(setup, job, "stored", lambda stored: stored >= 5)
    finally:
        victim.kill()
        victim.communicate(timeout=60)
    survivor = worker(setup)
    try:
        wait_for_job(setup, job, "pending", lambda pending: pending == 0)
    finally:
        survivor.send_signal(2)
        no_traceback(survivor.communicate(timeout=60)[1])
    stored = setup.stored_urls()
    assert sorted(stored) == sorted(articles_of(setup.farm, "killed"))
    site = next(s for s in setup.status()["sites"] if s["site"] == "killed")  # type: ignore[attr-defined]
    assert (site["new_24h"], int(setup.server.hget(KEYS.job(job), "stored") or 0)) == (
        len(stored),
        len(stored),
    )


# --- one store for every worker -----------------------------------------------------------------------------


@pytest.mark.parametrize("setup", [[farm_site("split")]], indirect=True)
def test_workers_of_one_redis_storing_in_two_local_folders_need_attention(setup: Setup) -> None:
    """Two machines, simulated by two data folders on this host, share one Redis without MONGO_URI: each
    worker says at start that it stores apart, and `crawler status` names both places."""
    setup.rule("split")
    folders = [setup.root / "machine-a", setup.root / "machine-b"]
    workers = []
    for folder in folders:
        env = setup.env()
        env["CRAWLER_DATA_DIR"] = str(folder)
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "worker"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        deadline = time.monotonic() + 60
        while setup.server.hlen(KEYS.workers) < 2:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        report = setup.status()
        shown = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "status"],
            env=setup.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=True,
        ).stdout
    finally:
        outputs = []
        for worker in workers:
            worker.send_signal(2)
            outputs.append(worker.communicate(timeout=60)[1])
    places = [f"{socket.gethostname()}:{(folder / 'articles').resolve()}" for folder in folders]
    said = (
        f"workers store articles in 2 places: {places[0]}, {places[1]}; set MONGO_URI so they share one store"
        " (docs/operations.md); `crawler status` lists each worker's store"
    )
    assert report["store_split"] == said, report
    assert "store" in report["attention"]  # type: ignore[operator]
    assert f"NEEDS ATTENTION {said}" in shown, shown
    for output, place in zip(outputs, places, strict=True):
        no_traceback(output)
        warnings = [line for line in output.splitlines() if "MONGO_URI is not" in line]
        assert len(warnings) == 1, output[-4000:]
        assert "] WARNING: REDIS_URL is set" in warnings[0], warnings[0]
        assert f"stores its articles in {place}," in warnings[0]
        assert "set MONGO_URI so they share one store (docs/operations.md)" in warnings[0]
