"""Nothing lost, nothing hung when Redis or a crawl dies: real crawls (the `crawler` commands, subprocesses)
against the local test server when the embedded Redis is killed, frozen, cannot start again, or its disk
is full, when a temp crawl is killed and run again, and when a crawl or the scheduler is stopped by
SIGTERM or Ctrl-C; what each says, once, and what it leaves behind. The other failures are
tests/test_failures.py, tests/test_input_failures.py and tests/test_store_failures.py."""

from __future__ import annotations

import errno
import http.server
import itertools
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from conftest import SiteServer
from crawlsite import (
    COMMAND_TIMEOUT,
    FAST_ARGS,
    RULE,
    WAIT_LIMIT,
    Site,
    sites_spider,
    spider_settings,
    unique,
    wait_until,
)
from lossyredis import LossyRelay
from siteserver import generated_article

from crawler.errors import folder_advice
from crawler.keys import Keys
from crawler.redisio.connection import SOCKET_TIMEOUT, STEADY_SECONDS, connect, decoded
from crawler.redisio.embedded import EmbeddedRedis, RedisUnavailableError
from crawler.requests import open_job
from crawler.store import open_store
from crawler.store.document import make_document
from crawler.worker.connection import outage_of
from crawler.worker.pipelines.store import _record_redirects


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path)


# --- Redis is killed ------------------------------------------------------------------------------------


def test_a_worker_survives_redis_killed_and_restarted(site: Site) -> None:
    site.rule(*(f"/flaky/{unique('slow')}?fail=0" for _ in range(1)), *(f"/a/r{n}" for n in range(30)))
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        log = site.root / "worker.log"
        with log.open("w", encoding="utf-8") as stream:
            worker = subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "worker", *FAST_ARGS,
                 "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.2"],
                env=site.env(REDIS_URL=url),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stream,
            )  # fmt: skip
            try:
                from crawler.requests import JobCounts, enqueue_job
                from crawler.rules import load_rule

                client = connect(url)
                keys = Keys("crawler")
                job = enqueue_job(client, keys, [load_rule(site.rules / f"{site.name}.yaml")])
                wait_until(lambda: JobCounts.read(client, keys, job).stored >= 3, "some articles stored")
                os.kill(redis_server.pid or 0, signal.SIGKILL)
                client.close()
                # Redis away until the worker's calls fail; its loops go on
                wait_until(lambda: "Redis failed (" in log.read_text(encoding="utf-8"), "a failed call")
                redis_server.ensure()  # started again on its append-only file
                client = connect(url)
                wait_until(lambda: JobCounts.read(client, keys, job).pending == 0, "the job to finish")
                counts = JobCounts.read(client, keys, job)
                assert worker.poll() is None, "the worker is still running"
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(WAIT_LIMIT)
        text = log.read_text(encoding="utf-8")
        assert "Unhandled error in Deferred" not in text, text[-4000:]
        assert "Redis is back" in text, text[-4000:]
    assert counts.errors == 0
    stored = site.stored()
    assert {f"/a/r{n}" for n in range(30)} <= set(stored), "every article stored"
    assert len(stored) == 31, "each once"


def _worker_on_the_embedded_redis(site: Site, log: Path) -> subprocess.Popen[str]:
    """`crawler worker` on the site's data folder (its embedded Redis), its stderr into ``log``."""
    with log.open("w", encoding="utf-8") as stream:
        return subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "worker", *FAST_ARGS],
            env=site.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stream,
            text=True,
        )


def _beats(socket_path: Path) -> bool:
    """True when a worker's heartbeat is in the Redis of ``socket_path``."""
    if not socket_path.exists():
        return False
    with connect(f"unix://{socket_path}") as client:
        return bool(client.hlen(Keys("crawler").workers))


def _server_starts(redis_log: Path) -> int:
    """How many times a redis-server started on the folder (each writes its banner to redis.log)."""
    return redis_log.read_text(encoding="utf-8", errors="replace").count("Redis is starting")


def test_a_redis_that_cannot_start_again_is_logged_once_not_at_every_try(site: Site) -> None:
    site.rule("/a/once")
    folder = site.data / "redis"
    log = site.root / "worker.log"
    worker = _worker_on_the_embedded_redis(site, log)
    try:
        wait_until(lambda: _beats(folder / "redis.sock"), "the worker's first heartbeat")
        aof = folder / "appendonly.aof"
        kept = aof.read_bytes()
        with aof.open("ab") as stream:
            stream.write(b"*3\r\n$3\r\nSET\r\n garbage, not the protocol\r\n")
        starts = _server_starts(folder / "redis.log")
        before = len(log.read_text(encoding="utf-8"))
        os.kill(int((folder / "redis.pid").read_text("ascii")), signal.SIGKILL)
        wait_until(lambda: _server_starts(folder / "redis.log") >= starts + 5, "five failed restarts")
        aof.write_bytes(kept)  # mended: the next try starts it
        wait_until(lambda: "Redis is back" in log.read_text(encoding="utf-8"), "the worker to see Redis back")
    finally:
        worker.send_signal(signal.SIGINT)
        worker.wait(WAIT_LIMIT)
    text = log.read_text(encoding="utf-8")
    outage = text[before:]
    assert outage.count("could not be started again") == 1, outage[-4000:]
    assert outage.count("Bad file format reading the append only file") == 1, "redis.log's tail once"
    assert outage.count("Redis failed") == 1, outage[-4000:]
    assert "idle" not in outage, outage[-4000:]
    assert outage.count("Redis is back after") == 1, outage[-4000:]
    said = [
        line.split("] ", 1)[1].split(":", 1)[0]
        for line in outage.splitlines()
        if "[crawler.redisio.embedded] " in line
        and (" is gone " in line or " could not " in line or " is back " in line)
    ]
    assert said == ["WARNING", "ERROR", "INFO"], "gone, could not start, back: " + outage[-4000:]


def test_a_frozen_redis_is_down_from_before_its_first_error_not_from_it(site: Site) -> None:
    site.rule("/a/frozen")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        log = site.root / "worker.log"
        with log.open("w", encoding="utf-8") as stream:
            worker = subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "worker", *FAST_ARGS],
                env=site.env(REDIS_URL=url),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stream,
            )
        try:
            wait_until(lambda: _beats(redis_server.socket_path), "the worker's first heartbeat")
            os.kill(redis_server.pid or 0, signal.SIGSTOP)
            try:
                deadline = time.monotonic() + WAIT_LIMIT + 4 * SOCKET_TIMEOUT
                while "Redis failed" not in log.read_text(encoding="utf-8"):
                    assert time.monotonic() < deadline, "gave up waiting for the worker's first error"
                    time.sleep(0.1)
            finally:
                os.kill(redis_server.pid or 0, signal.SIGCONT)
            wait_until(lambda: "Redis is back after" in log.read_text(encoding="utf-8"), "Redis back")
        finally:
            worker.send_signal(signal.SIGINT)
            worker.wait(WAIT_LIMIT)
    text = log.read_text(encoding="utf-8")
    back = re.search(r"Redis is back after ([0-9.]+) s", text)
    assert back, text[-4000:]
    # The call that failed first waited the whole socket timeout before its error; the outage began
    # before that call, so it lasted at least as long.
    assert float(back.group(1)) >= SOCKET_TIMEOUT, text[-4000:]
    stopped = re.search(r"the embedded server's process \(pid (\d+)\) is stopped \(SIGSTOP, Ctrl-Z\)", text)
    assert stopped and f"`kill -CONT {stopped.group(1)}` resumes it" in text, text[-4000:]


# `crawler CMD` whose Redis clients wait $SOCKET_TIMEOUT seconds for an answer, not SOCKET_TIMEOUT's 30.
_SHORT_SOCKET_TIMEOUT = (
    "import os, sys\n"
    "from crawler.redisio import connection\n"
    "connection._CLIENT_OPTIONS['socket_timeout'] = float(os.environ['SOCKET_TIMEOUT'])\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


def test_a_redis_paused_longer_than_the_socket_timeout_is_said_paused_and_the_worker_goes_on_losing_nothing(
    site: Site,
) -> None:
    """CLIENT PAUSE longer than the client's socket timeout was said as a plain timeout ("Redis failed
    (...: Timeout reading from socket)"), which reads as a network fault. Redis took the connection and
    answers nothing, not even PING on a new one: it is said, with what it may be (paused for every
    client, stopped, busy in one command). Once the pause ends the worker goes on: the page it was
    fetching is stored once, its job done."""
    held = unique("paused")
    asked = site.server.url(f"/asked/{held}")
    socket_timeout = 1.0

    def pause(client: redis.Redis) -> None:
        wait_until(lambda: _read(asked) == "1", "the worker to fetch the held page")
        # Longer than a lease renewal's wait (1 s), its socket timeout and the probe's 2 s: the worker's
        # first error and its probe both fall in the pause.
        client.client_pause(6000, all=True)

    stored, did = _worker_run(
        site,
        f"/held/{held}?seconds=3",
        scraped=1,
        meanwhile=pause,
        socket_timeout=socket_timeout,
        settings=["LEASE_SECONDS=30"],
    )
    text = (site.root / "worker.log").read_text(encoding="utf-8")
    assert text.count("Redis failed (") == 1, text[-4000:]
    failed = next(line for line in text.splitlines() if "Redis failed (" in line)
    assert (
        f"Redis took the connection and answered nothing for {socket_timeout:g} s, nor PING on a new"
        " connection in 2 s: it is paused for every client (CLIENT PAUSE" in failed
    ), failed
    assert "Redis is back after" in text, text[-4000:]
    assert stored == 1
    assert "stored 1 article" in did, did


def test_a_redis_whose_writes_are_paused_is_said_so_and_one_paused_for_all_refuses_a_command_start_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that starts on a Redis paused for every client said "cannot reach Redis at ...: Timeout
    reading from socket" (REDIS_URL: "start it"); one whose writes are paused (CLIENT PAUSE WRITE) holds
    the crawler's scripts while it answers PING: each is said."""
    from crawler.redisio import connection

    monkeypatch.setitem(connection._CLIENT_OPTIONS, "socket_timeout", 0.5)
    with EmbeddedRedis(tmp_path, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        # The pauser waits for its answers as long as a pause lasts (no socket timeout).
        with redis.Redis.from_url(url) as pauser, connect(url) as client:
            pauser.client_pause(4000, all=False)
            assert client.ping()
            with pytest.raises(redis.TimeoutError) as timed_out:
                client.eval("return 1", 0)
            said = connection.unanswered(client, timed_out.value)
            assert said is not None
            assert "answers PING but holds a write 2 s: its writes are paused (CLIENT PAUSE with WRITE" in (
                said
            )
            assert pauser.eval("return 1", 0) == 1  # answered once the pause ends
            pauser.client_pause(4000, all=True)
            with pytest.raises(RedisUnavailableError) as refused:
                connect(url)
            assert pauser.ping()
        assert str(refused.value).startswith(
            f"cannot use Redis at {url}: Redis took the connection and answered nothing for 0.5 s, nor PING"
        ), refused.value


def test_responses_that_bench_proxies_and_sessions_and_ban_a_site_log_a_redis_outage_once_not_at_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from scrapy.http import Request, Response
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules import load_rule
    from crawler.rules.access import global_proxies
    from crawler.worker.bans import BanDetectionMiddleware
    from crawler.worker.proxies import ProxyMiddleware, ProxyPool
    from crawler.worker.sessions import SessionMiddleware, SessionPool

    (tmp_path / "alice.yaml").write_text("cookies: {sid: alice}\n", encoding="utf-8")
    rule_file = tmp_path / "news.yaml"
    rule_file.write_text(
        RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
        + "access:\n  sessions: [alice.yaml]\n",
        encoding="utf-8",
    )

    with EmbeddedRedis(tmp_path, watch_seconds=0) as redis_server:
        values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
        values.update(
            REDIS_URL=redis_server.ensure(),
            STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
            BAN_MIN_SIGNALS=1,
            BAN_MIN_SHARE=0.0,
            PROXY_MAX_FAILURES=1,
        )
        crawler = get_crawler(settings_dict=values)
        proxies = ProxyMiddleware(
            crawler, ProxyPool(crawler, global_proxies("http://127.0.0.1:9 http://127.0.0.1:10", None), {})
        )
        sessions = SessionMiddleware(crawler, SessionPool(crawler, {"news": load_rule(rule_file)}.get))
        bans = BanDetectionMiddleware(crawler)

        def answer(n: int, status: int) -> None:
            meta = {"site": "news", "proxy_id": "http://127.0.0.1:9", "session": "alice"}
            request = Request(f"http://news.test/a/{n}", meta=meta)
            response = Response(request.url, status=status, request=request)
            bans.process_response(request, proxies.process_response(request, response))

        def logged_out(n: int) -> None:
            request = Request(f"http://news.test/a/{n}", meta={"site": "news", "session": "alice"})
            sessions.process_response(request, Response("http://news.test/login", request=request))

        answer(0, 502)  # Redis up: the proxy is benched in Redis
        os.kill(redis_server.pid or 0, signal.SIGKILL)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            for n in range(1, 6):
                answer(n, 502)  # benches the proxy
                answer(n, 403)  # bans the site and the proxy
                logged_out(n)  # benches the session
            redis_server.ensure()
            answer(6, 502)
    said = [record.getMessage() for record in caplog.records if record.name.startswith("crawler.worker.")]
    # redis-py says "connect" in each of its connection errors (refused, reset, closed).
    failures = [line for line in said if "connect" in line.lower() or "Redis failed" in line]
    assert len(failures) == 1 and failures[0].startswith("Redis failed ("), "\n".join(said)
    assert sum("Redis is back after" in line for line in said) == 1, "\n".join(said)
    assert sum("looks banned" in line for line in said) == 5, "each ban is still said"
    assert crawler.stats.get_value("redis/errors") == 20, "every failed call is counted"


def test_a_request_waiting_for_a_busy_proxy_takes_its_sites_own_proxies_once_its_rule_is_read(
    tmp_path: Path,
) -> None:
    # The request's site had no rule yet (a rule file the worker has not read): it waits for the shared
    # proxy, busy. The rule, read meanwhile, names the site's own proxy: the request goes through that one.
    import asyncio

    from scrapy.http import Request
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules import Rule, load_rule
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyMiddleware, ProxyPool

    rule_file = tmp_path / "news.yaml"
    rule_file.write_text(
        RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
        + "access:\n  proxies: ['http://127.0.0.1:11']\n",
        encoding="utf-8",
    )
    rules: dict[str, Rule] = {}
    with EmbeddedRedis(tmp_path, watch_seconds=0) as redis_server:
        values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
        values.update(REDIS_URL=redis_server.ensure(), PROXY_CONCURRENCY=1)
        crawler = get_crawler(settings_dict=values)
        pool = ProxyPool(crawler, global_proxies("http://127.0.0.1:9", None), {}, rules.get, rules)
        pool.rule_asked_seconds = WAIT_LIMIT * 10  # the rule read meanwhile is taken at once, not asked again
        proxies = ProxyMiddleware(crawler, pool)
        assert pool.choose(pool.shared) == pool.shared[0], "the shared proxy, now busy with another request"
        request = Request("http://news.test/a/1", meta={"site": "news"})

        async def wait_then_read_the_rule() -> None:
            waiting = asyncio.ensure_future(proxies.process_request(request))
            await asyncio.sleep(0)  # the request has looked for a proxy once, and waits
            assert not waiting.done() and "proxy_id" not in request.meta
            rules["news"] = load_rule(rule_file)
            await asyncio.wait_for(waiting, WAIT_LIMIT)

        asyncio.run(wait_then_read_the_rule())
    assert request.meta["proxy_id"] == "http://127.0.0.1:11", request.meta


def test_a_rule_whose_proxies_were_edited_while_the_worker_runs_has_its_requests_go_through_the_new_ones(
    tmp_path: Path,
) -> None:
    """A worker reads a rule file edited while it runs (RULES_RELOAD_SECONDS), but its proxy pool kept the
    proxies the site's rule named when the pool first met them: a proxy taken out of the rule (dead, or
    no longer paid for) still carried the site's requests, and one put in was never used, until the
    worker restarted. The pool now takes the site's proxies from its rule as the worker has it."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules import Rule, load_rule
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    rule_file = tmp_path / "news.yaml"
    text = RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
    rule_file.write_text(text + "access:\n  proxies: ['http://127.0.0.1:11']\n", encoding="utf-8")
    rules: dict[str, Rule] = {"news": load_rule(rule_file)}
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    crawler = get_crawler(settings_dict=values)
    by_site = {site: rule.proxies for site, rule in rules.items() if rule.proxies}
    pool = ProxyPool(crawler, global_proxies("http://127.0.0.1:9", None), by_site, rules.get, dict(rules))
    assert [proxy.id for proxy in pool.candidates("news")] == ["http://127.0.0.1:11"]
    rule_file.write_text(text + "access:\n  proxies: ['http://127.0.0.1:12']\n", encoding="utf-8")
    rules["news"] = load_rule(rule_file)
    assert [proxy.id for proxy in pool.candidates("news")] == ["http://127.0.0.1:12"], "the edited rule's"
    rule_file.write_text(text, encoding="utf-8")
    rules["news"] = load_rule(rule_file)
    assert [proxy.id for proxy in pool.candidates("news")] == ["http://127.0.0.1:9"], (
        "none of its own: shared"
    )


def test_a_proxys_health_key_of_another_type_neither_stops_nor_repeats_the_other_proxies_counts(
    redis_client: redis.Redis, redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's flush of its proxies' health is one pipeline; one proxy's hash of another type (someone
    SET it) failed its command alone, yet the flush took the whole pipeline for failed and kept every count
    for the next try: the other proxies' counts, written already, were written again at each flush (a
    request that went well counted 3 times in 3 flushes), and no proxy's bench by another worker was read.
    The counts written stay written; those of the proxy whose key holds another type are kept for the next
    flush, the key named once."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    crawler = get_crawler(settings_dict={**values, "REDIS_URL": redis_server})
    pool = ProxyPool(crawler, global_proxies("http://127.0.0.1:9 http://127.0.0.1:10", None), {})
    keys = Keys("crawler")
    good, broken = keys.proxy("http://127.0.0.1:9"), keys.proxy("http://127.0.0.1:10")
    redis_client.set(broken, "someone's string")
    redis_client.hset(good, "benched_until", f"{time.time() + 600:.3f}")  # by another worker
    pool.release("http://127.0.0.1:9", ok=True)
    pool.release("http://127.0.0.1:10", ok=True)
    with caplog.at_level(logging.WARNING, logger="crawler.worker.proxies"):
        for _ in range(3):
            pool.flush()
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith(f"Proxy health not written: Redis key {broken} holds another type"), said
    assert redis_client.hget(good, "ok") == b"1"
    assert "http://127.0.0.1:9" in pool.benched, "another worker's bench read"
    redis_client.delete(broken)
    pool.flush()
    assert redis_client.hget(broken, "ok") == b"1", "kept until it could be written"
    assert redis_client.hget(good, "ok") == b"1"


def test_site_counters_whose_flush_lost_its_reply_are_counted_once(
    redis_client: redis.Redis, redis_server: str
) -> None:
    """A connection that drops after Redis ran a flush of the site counters and before its reply arrived:
    the flush failed and kept its counts for the next one, which added them again (1 + 3 + 2 + 4 fetched,
    two replies lost in a row, counted 18). Each flush is numbered, sent again with its number before any
    other, and Redis applies a number once (crawler.redisio.once)."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.worker.stats import RedisStatsCollector

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    with LossyRelay(redis_server.removeprefix("unix://")) as relay:
        crawler = get_crawler(settings_dict={**values, "REDIS_URL": relay.url})
        counters = RedisStatsCollector(crawler)
        counters.inc_value("crawl/fetched/news", 1)
        counters.flush()  # Redis knows the flush's script: the replies lost are of flushes it ran
        for fetched in (3, 2):
            counters.inc_value("crawl/fetched/news", fetched)
            relay.lose(b"crawler:stats:news:")
            counters.flush()  # fails: kept; the second sends the first again, its reply lost again
        counters.inc_value("crawl/fetched/news", 4)
        counters.flush()
        lost = relay.lost
    hours = redis_client.scan_iter("crawler:stats:news:*")
    assert lost == 2
    assert sum(int(redis_client.hget(key, "crawl/fetched") or 0) for key in hours) == 10


def test_proxy_health_whose_flush_lost_its_reply_is_counted_once(
    redis_client: redis.Redis, redis_server: str
) -> None:
    """As the site counters' flush (above): a proxy's answers were counted twice when the reply to the flush
    of its health was lost after Redis ran it."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    proxy = "http://127.0.0.1:9"

    def answered(times: int) -> None:
        for _ in range(times):
            pool.release(proxy, ok=True)

    with LossyRelay(redis_server.removeprefix("unix://")) as relay:
        crawler = get_crawler(settings_dict={**values, "REDIS_URL": relay.url})
        pool = ProxyPool(crawler, global_proxies(proxy, None), {})
        answered(1)
        pool.flush()  # Redis knows the flush's script: the replies lost are of flushes it ran
        for times in (3, 2):
            answered(times)
            relay.lose(b"crawler:proxy:")
            pool.flush()  # fails: kept; the second sends the first again, its reply lost again
        answered(4)
        pool.flush()
        lost = relay.lost
    assert lost == 2
    assert redis_client.hget(Keys("crawler").proxy(proxy), "ok") == b"10"


def test_writers_that_end_with_their_flushes_applied_leave_no_mark(
    redis_client: redis.Redis, redis_server: str
) -> None:
    """Each process's writers (its site counters, its proxies' health, its copy of a discover link model)
    number their flushes under a mark of their own, crawler:applied:<writer>, kept a week for a flush sent
    again; a writer ended, no flush reads it again, yet it stayed: a key a writer per process start (the
    soak's temp crawl every 5 minutes made 12 an hour, 2,016 kept at a week's life). Ended with its last
    flush applied, a writer deletes its mark."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.discover.shared import SharedModel
    from crawler.rules.access import global_proxies
    from crawler.worker.proxies import ProxyPool
    from crawler.worker.stats import RedisStatsCollector

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    proxy = "http://127.0.0.1:9"
    crawls = 3
    for _ in range(crawls):
        crawler = get_crawler(settings_dict={**values, "REDIS_URL": redis_server})
        counters = RedisStatsCollector(crawler)
        counters.inc_value("crawl/fetched/news", 1)
        counters.flush()
        pool = ProxyPool(crawler, global_proxies(proxy, None), {})
        pool.release(proxy, ok=True)
        pool.flush()
        model = SharedModel(redis_client, Keys("crawler"), "energy", "w")
        model.load()
        model.model.learn([7], 1.0)
        model.sync()
        model.model.learn([8], 1.0)
        model.learnt()  # shared as the crawl stops
        pool.stop()
        model.close()
        counters.close_spider()
    hours = redis_client.scan_iter("crawler:stats:news:*")
    assert sum(int(redis_client.hget(key, "crawl/fetched") or 0) for key in hours) == crawls
    assert redis_client.hget(Keys("crawler").proxy(proxy), "ok") == str(crawls).encode()
    assert redis_client.xlen("crawler:discover:energy:model:v1:log") == 2 * crawls
    assert sorted(redis_client.scan_iter("crawler:applied:*")) == []


def test_the_proxy_pool_sees_the_rules_a_running_worker_read_again(redis_server: str, tmp_path: Path) -> None:
    """The proxy pool looks a site's rule up in the spider's rules between two asks of ``rule_of``; a
    worker that read its rules folder again (a proxies file edited) replaced that dict with a new one,
    so the pool kept looking at the rules as the worker started: a site whose rule dropped its proxies
    went back to them every other second."""
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.worker.proxies import ProxyPool
    from crawler.worker.spider import SitesSpider

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "proxies.txt").write_text("http://127.0.0.1:11\n", encoding="utf-8")
    text = RULE.format(start="http://news.test/").replace("[127.0.0.1]", "[news.test]")
    (rules / "news.yaml").write_text(text + "access:\n  proxies_file: proxies.txt\n", encoding="utf-8")
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        REDIS_URL=redis_server,
        CRAWLER_RULES_DIR=str(rules),
        CRAWLER_DATA_DIR=str(tmp_path),
        RULES_RELOAD_SECONDS=0.01,
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
    )
    crawler = get_crawler(SitesSpider, settings_dict=values)
    crawler.spider = spider = SitesSpider.from_crawler(crawler)
    # As ProxyMiddleware.from_crawler makes it (which also starts its flush loop, and with it a reactor).
    pool = ProxyPool(crawler, (), {}, spider.rule_of, spider.rules)
    (rules / "proxies.txt").write_text("http://127.0.0.1:1234\n", encoding="utf-8")
    time.sleep(0.05)
    rule = spider.rule_of("news")
    assert rule is not None and [proxy.id for proxy in rule.proxies] == ["http://127.0.0.1:1234"]
    assert pool.known.get("news") is rule, "the rules the worker has now"


def test_requests_waiting_for_a_busy_proxy_ask_a_site_without_proxies_of_its_own_for_its_rule_once(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each ask for a site's rule may read the rules folder: a site whose rule names no proxies (here, with
    # no rule file) was asked for it before a request looked for a free proxy, at each look while the
    # request waited, every 50 ms, and by each request of the site.
    import asyncio

    from scrapy.http import Request
    from scrapy.utils.test import get_crawler

    from crawler.rules import Rule, load_rules
    from crawler.rules.access import Proxy, global_proxies
    from crawler.worker.proxies import ProxyMiddleware, ProxyPool

    values = {**spider_settings(tmp_path), "REDIS_URL": redis_server, "PROXY_CONCURRENCY": 1}
    asked: list[str] = []

    def rule_of(site: str) -> Rule | None:
        asked.append(site)
        return load_rules(values["CRAWLER_RULES_DIR"]).rules.get(site)

    crawler = get_crawler(settings_dict=values)
    pool = ProxyPool(crawler, global_proxies("http://127.0.0.1:9", None), {}, rule_of)
    pool.rule_asked_seconds = WAIT_LIMIT * 10  # the count does not hang on how long the waits take
    proxies = ProxyMiddleware(crawler, pool)
    (shared,) = pool.shared
    assert pool.choose(pool.shared) == shared, "the shared proxy, now busy with another request"
    looks: list[Sequence[Proxy]] = []
    choose = pool.choose

    def counted_choose(candidates: Sequence[Proxy]) -> Proxy | bool | None:
        looks.append(candidates)
        return choose(candidates)

    monkeypatch.setattr(pool, "choose", counted_choose)

    async def wait_for_the_busy_proxy(n: int) -> None:
        request = Request(f"http://news.test/a/{n}", meta={"site": "ghost"})
        waiting = asyncio.ensure_future(proxies.process_request(request))
        deadline = time.monotonic() + WAIT_LIMIT
        looked = len(looks)
        while len(looks) < looked + 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not waiting.done(), "the request waits for the busy proxy"
        pool.release(shared.id, ok=True)
        await asyncio.wait_for(waiting, WAIT_LIMIT)
        assert request.meta["proxy_id"] == shared.id, request.meta

    for n in range(2):
        asyncio.run(wait_for_the_busy_proxy(n))
    assert len(looks) >= 12, "each request looked for a free proxy six times or more"
    assert asked == ["ghost"], f"the site's rule asked {len(asked)} times in {len(looks)} looks"


def test_the_temp_crawls_own_redis_killed_is_started_again_and_nothing_is_lost(site: Site) -> None:
    site.rule(*(f"/a/k{n}" for n in range(40)))
    pid_file = site.data / "redis" / "redis.pid"
    with site.temp_running("-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.1") as crawl:
        # Killed mid-crawl (not as the crawl opens: a loaded machine takes seconds to start one).
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        os.kill(int(pid_file.read_text("ascii")), signal.SIGKILL)
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 0, err[-4000:]
    assert "is gone" in err and "starting it again" in err, err[-4000:]
    assert "stored 40 articles" in out and "errors 0" in out, out
    assert sorted(site.stored()) == sorted(f"/a/k{n}" for n in range(40))


def test_a_temp_crawl_killed_and_run_again_resumes_its_job_and_says_what_it_stored(site: Site) -> None:
    paths = [f"/a/again{n}" for n in range(30)]
    site.rule(*paths)
    with site.temp_running("-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.1") as crawl:
        wait_until(lambda: len(site.stored()) >= 5, "some articles stored")
        crawl.kill()  # SIGKILL: its leases come back after LEASE_SECONDS, its Redis runs on
        crawl.communicate(timeout=COMMAND_TIMEOUT)
    again = site.temp()
    assert again.returncode == 0, again.stderr[-4000:]
    assert f"stored {len(paths)} articles" in again.stdout and "errors 0" in again.stdout, again.stdout
    resumed = again.stdout.splitlines()[0]
    assert resumed.startswith("resumed job ") and f"{len(paths)} articles stored in all" in resumed, resumed
    assert sorted(site.stored()) == sorted(paths), "the job's articles, each once"
    assert site.status()["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 0}
    fresh = site.temp()  # the resumed job ended: the next temp crawl is a new one, its links seen already
    assert "resumed" not in fresh.stdout and "stored 0 articles" in fresh.stdout, fresh.stdout
    assert f"skipped {len(paths)}" in fresh.stdout, fresh.stdout


def test_a_temp_crawl_resuming_a_killed_one_says_it_waits_for_the_leases_that_one_held(site: Site) -> None:
    """The killed crawl held its article's lease: the next one says, once, on stderr, that it waits for
    that lease to expire, how long at most, and why; then fetches the article and ends the job."""
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts

    site.rule(f"/slow?seconds=8&n={unique('held')}")  # the killed crawl holds its lease while it waits
    keys = Keys("crawler")
    held = ("LEASE_SECONDS=20", "LEASE_RENEW_SECONDS=1", "CONCURRENT_REQUESTS=1")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        queue = LeasedQueue(client, keys)
        crawl = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "temp", site.name, *(f"--set={pair}" for pair in held)],
            env=site.env(REDIS_URL=url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            job = _the_job(client, keys)
            wait_until(
                lambda: JobCounts.read(client, keys, job).fetched == 1 and queue.leased() == 1,
                "the index page fetched and the article leased",
            )
        finally:
            crawl.kill()  # SIGKILL: its lease is left held until it expires
            crawl.wait()
        again = site.crawler("temp", site.name, REDIS_URL=url)
        assert again.returncode == 0, again.stderr[-4000:]
        assert again.stdout.startswith(f"resumed job {job}, "), again.stdout
        said = re.findall(r"crawler temp: note: [^\n]*", again.stderr)
        assert len(said) == 1, again.stderr[-4000:]
        assert re.fullmatch(
            rf"crawler temp: note: 1 request of job {job} is leased to a worker that stopped without ending"
            r" it \(killed\), or runs still: this crawl waits up to \d+ s for its lease to expire and the"
            r" request to come back to the queue \(a lease lasts LEASE_SECONDS from its worker's last"
            r" renewal; a worker that runs still renews it, and crawls the request itself\)",
            said[0],
        ), said[0]
        assert JobCounts.read(client, keys, job).stored == 1, "the article fetched once its lease expired"
        client.close()


def test_a_temp_crawl_says_how_many_pages_gave_a_published_that_is_no_date_and_the_key_to_mend(
    site: Site,
) -> None:
    """The rule's published reads the page's title, no date: the summary says on how many pages of the
    site, as `rules try` words it for one page, with the rule file and its key."""
    site.rule("/a/undated1", "/a/undated2")
    path = site.rules / f"{site.name}.yaml"
    rule = path.read_text(encoding="utf-8").replace("    title:", "    published: {xpath: //h1}\n    title:")
    path.write_text(rule, encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 2 articles" in done.stdout, done.stdout
    said = (
        f"the published value of 2 pages of site {site.name} is no date the crawl recognises: it is stored as"
        f" each page gives it (and counted, fields/unparsed/published/{site.name}); in {path},"
        " article.fields.published: give a regex that captures an ISO-8601 date"
    )
    assert said in done.stdout, done.stdout
    site.rule("/a/dated")  # the rule without published: nothing to say
    assert "no date" not in site.temp().stdout


def test_a_temp_crawl_after_dead_requeue_continues_the_requeued_letters_and_the_next_reads_the_site(
    site: Site,
) -> None:
    """The last temp crawl ended; `dead requeue` put its dead letter back under its job. The next temp
    crawl says it continues those requeued letters (not that the job was killed), and that it does not
    read the site's index page again; the temp crawl after it, a new job, does."""
    site.rule("/a/kept", "/status/404")
    first = site.temp()
    assert first.stdout.splitlines()[0].startswith("fetched 2 pages, stored 1 article,"), first.stdout
    job = first.stdout.split("dead list --job ")[1][:12]
    assert site.crawler("dead", "requeue", "--site", site.name).stdout.startswith("requeued 1 dead letter")
    again = site.temp()
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert again.stdout.splitlines()[:2] == [
        f"continued job {job}, the last temp crawl of {site.name}, which had ended: its 1 dead letter"
        " requeued (`crawler dead requeue`) was fetched again, the site's listings not read again (`crawler"
        f" temp {site.name}` reads them, in a new job, once this one has ended): 1 article stored in all, 1"
        " before this run, 0 in it; the counts below are the job's in all",
        "fetched 2 pages, stored 1 article, skipped 0, errors 1 (HTTP 404: 1)",
    ], again.stdout
    assert "had not ended" not in again.stdout
    fresh = site.temp()
    assert fresh.stdout.splitlines()[0].startswith("fetched 1 page, stored 0 articles, skipped 2"), (
        fresh.stdout
    )
    assert f"--job {job}" not in fresh.stdout, "a new job"


def test_a_requeued_dead_letter_is_retried_as_a_new_request_is(site: Site) -> None:
    """A page that failed its three tries (RETRY_TIMES=2) is requeued and answers 503 once more, then
    200: it gets its retries again, as a request never tried does, and is stored; it was dead-lettered at
    its first 503, "after 2 retries" that were the last crawl's."""
    flaky = f"/flaky/{unique('requeued')}?fail=4"
    site.rule(flaky)
    first = site.temp()
    assert "errors 1 (HTTP 503: 1)" in first.stdout, first.stdout
    assert site.crawler("dead", "requeue", "--site", site.name).returncode == 0
    again = site.temp()
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert again.stdout.splitlines()[1].startswith("fetched 2 pages, stored 1 article,"), again.stdout
    assert site.dead() == []
    assert set(site.stored()) == {flaky}


def test_a_continued_temp_crawls_progress_line_says_continued_uncut_on_a_narrow_terminal(site: Site) -> None:
    """The progress line of a temp crawl that continues a job after `dead requeue` says "continued", as
    its summary does, and a terminal too narrow for the whole title cuts the title, never that word."""
    site.rule("/a/kept", "/status/404")
    site.temp()
    assert site.crawler("dead", "requeue", "--site", site.name).returncode == 0
    again = site.crawler("temp", site.name, *FAST_ARGS, COLUMNS="50", TTY_COMPATIBLE="1", TTY_INTERACTIVE="1")
    assert again.stdout.startswith("continued job "), again.stdout
    frames = [
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", frame).strip() for frame in re.split(r"[\r\n]", again.stderr)
    ]
    titles = [
        found.group(1)
        for frame in frames
        if (found := re.match(r"(.*?) *\d+(?:/\d+)? pages? stored \d+", frame)) is not None
    ]
    assert any(titles), again.stderr[-4000:]
    for title in filter(None, titles):
        assert title.startswith("continued ") or title == "continued…", title


def _slow_temp(patience: int) -> tuple[str, ...]:
    """The settings of a temp crawl slow enough to be caught mid-crawl, which gives up on Redis after
    ``patience`` seconds."""
    return (
        "-s",
        "CONCURRENT_REQUESTS=1",
        "-s",
        "DOWNLOAD_DELAY=0.2",
        "-s",
        f"SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS={patience}",
    )


def _killed_for_good(redis_dir: Path) -> None:
    """Kill the embedded Redis of ``redis_dir`` so that it cannot be started again: its append-only file
    damaged first."""
    (redis_dir / "appendonly.aof").write_bytes(b"not an append-only file\n" * 40)
    os.kill(int((redis_dir / "redis.pid").read_text("ascii")), signal.SIGKILL)


def test_a_temp_crawl_whose_redis_cannot_start_again_ends_with_an_error_within_its_patience(
    site: Site,
) -> None:
    site.rule(*(f"/a/p{n}" for n in range(40)))
    redis_dir = site.data / "redis"
    with site.temp_running(*_slow_temp(3)) as crawl:
        # Killed mid-crawl (not as the crawl opens: a loaded machine takes seconds to start one).
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        _killed_for_good(redis_dir)
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, (out, err[-4000:])
    assert (
        "Redis has not answered for 3 s (SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS): the temp crawl stops" in err
    )
    assert "Traceback" not in err, err[-4000:]


def test_a_temp_crawl_whose_redis_refuses_writes_ends_with_an_error_within_its_patience(site: Site) -> None:
    """A Redis whose disk fills mid-crawl still answers the reads of the progress bar, so the crawl's
    patience never ran out while its worker could take no request: the crawl waited for ever."""
    site.rule(*(f"/a/w{n}" for n in range(40)))
    redis_dir = site.data / "redis"
    with site.temp_running(*_slow_temp(3)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{redis_dir / 'redis.sock'}")
        try:
            with _snapshots_failing(client, redis_dir):
                out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
        finally:
            client.shutdown(nosave=True)
    assert crawl.returncode == 1, (out, err[-4000:])
    assert re.search(
        r"crawler temp: error: Redis refuses writes: .*; the temp crawl stops after 3 s of it"
        r" \(SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS\), job [0-9a-f]+ left in the queue",
        err,
    ), err[-4000:]
    assert "Traceback" not in err, err[-4000:]


def test_a_temp_crawl_whose_redis_fills_its_maxmemory_ends_with_an_error_within_its_patience(
    site: Site,
) -> None:
    """A Redis at its maxmemory that evicts nothing refuses writes (OOM) yet answers PING, which was all
    the crawl's patience asked: the crawl waited for ever while its worker could take no request."""
    site.rule(*(f"/a/o{n}" for n in range(40)))
    with site.temp_running(*_slow_temp(3)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
        said = _memory_full(client)
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, (out, err[-4000:])
    assert re.search(
        rf"crawler temp: error: {re.escape(said)}; the temp crawl stops after 3 s of it"
        r" \(SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS\), job [0-9a-f]+ left in the queue",
        err,
    ), err[-4000:]


def test_a_temp_crawl_whose_redis_user_may_not_run_a_command_of_its_worker_ends_within_its_patience(
    site: Site,
) -> None:
    """A Redis user who may run SET but not SADD, which the script that takes a request calls: the temp
    crawl's patience asked only whether SET works, so the crawl waited for ever while its worker, refused,
    could take no request. It ends within its patience naming the user, the command and the grant, its job
    left in the queue: once granted, the next temp crawl goes on with it."""
    site.rule(*(f"/a/d{n}" for n in range(3)))
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        url = _user_denied(client, redis_server, "taker", "sadd")
        try:
            temp = site.crawler("temp", site.name, *_slow_temp(3), REDIS_URL=url, timeout=COMMAND_TIMEOUT / 3)
            client.acl_setuser("taker", enabled=True, commands=["+sadd"])
            done = site.crawler("temp", site.name, *FAST_ARGS, REDIS_URL=url)
        finally:
            client.acl_deluser("taker")
            client.close()
    assert temp.returncode == 1, (temp.stdout, temp.stderr[-4000:])
    error = temp.stderr[temp.stderr.find("crawler temp: error: ") :]
    assert error.startswith(
        "crawler temp: error: Redis refuses a command of the worker: the Redis user taker may not run SADD, a"
        ' command the crawler needs (Redis says "'
    ), temp.stderr[-4000:]
    assert (
        "The user executing the script can't run this command or subcommand\"); give it to that user (ACL"
        " SETUSER taker +sadd; or every command the crawler needs: ACL SETUSER taker on ~crawler:* +@all), or"
        " put a user who has it in REDIS_URL; the temp crawl stops after 3 s of it"
        " (SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS), job "
    ) in error, error
    left = re.search(r", job ([0-9a-f]+) left in the queue for when the user may run it again\n", error)
    assert left is not None, error
    assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
    assert done.stdout.startswith(f"resumed job {left[1]}, "), done.stdout
    assert sorted(site.stored()) == [f"/a/d{n}" for n in range(3)]


def test_a_temp_crawl_whose_redis_refuses_writes_for_a_moment_goes_on_to_its_end(site: Site) -> None:
    """A Redis at its maxmemory for a moment refuses the worker's writes, an outage the worker says over
    only after STEADY_SECONDS of writes (10 s): the temp crawl's patience (5 s here) runs from the end of
    the refusal, not from the end of the worker's outage, so the crawl goes on to its end."""
    site.rule(*(f"/a/m{n}" for n in range(40)))
    with site.temp_running(*_slow_temp(5)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
        try:
            refused = _refused_for_memory(client)
            _memory_full(client)
            wait_until(lambda: _refused_for_memory(client) >= refused + 3, "writes refused for memory")
            client.config_set("maxmemory", "0")
        finally:
            client.close()
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 0, (out, err[-4000:])
    assert "Redis refuses writes (" in err, err[-4000:]
    assert sorted(site.stored()) == sorted(f"/a/m{n}" for n in range(40))


def _refused_for_memory(client: redis.Redis) -> int:
    """How many commands Redis has refused as its memory was full (OOM) since it started."""
    return int(client.info("errorstats").get("errorstat_OOM", {}).get("count", 0))


def test_a_temp_crawl_whose_redis_is_emptied_says_its_job_was_lost_not_that_nothing_was_fetched(
    site: Site,
) -> None:
    """Redis emptied mid-crawl (FLUSHALL, or restarted without its data) took the job's counters and
    requests: the crawl ended at once with "fetched 0 pages, stored 0 articles ... nothing could be
    fetched", though it had stored articles, and its other pages were silently never fetched."""
    site.rule(*(f"/a/e{n}" for n in range(40)))
    with site.temp_running(*_slow_temp(3)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
        client.flushall()
        client.close()
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    _said_emptied(crawl.returncode, out, err)


@contextmanager
def _crawl_made_a_replica_of_an_empty_primary(
    site: Site, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], redis.Redis, int]]:
    """``site``'s temp crawl (slow: 3 s of Redis patience), its Redis made a replica (REPLICAOF) of an empty
    Redis of its own on 127.0.0.1 once an article is stored: the crawl, a client of the crawl's Redis and
    the primary's port. The client is closed after (the crawl's own Redis stops with the crawl), the primary
    stopped."""
    from crawler.redisio.embedded import redis_server_executable

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    primary = subprocess.Popen(
        [str(redis_server_executable()), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with site.temp_running(*_slow_temp(3)) as crawl:
            wait_until(lambda: len(site.stored()) >= 1, "an article stored")
            client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
            try:
                client.replicaof("127.0.0.1", str(port))
                yield crawl, client, port
            finally:
                client.close()
    finally:
        primary.kill()
        primary.wait()


def test_a_temp_crawl_whose_redis_becomes_a_replica_of_an_empty_primary_says_its_job_was_lost(
    site: Site, tmp_path: Path
) -> None:
    """REPLICAOF an empty primary mid-crawl (a replica syncing from it, then made a primary again: REPLICAOF
    NO ONE, a failover) replaces Redis's data with none, as FLUSHALL does: the crawl said "it was emptied
    while the crawl ran: FLUSHALL, or restarted without its data", not that cause."""
    site.rule(*(f"/a/r{n}" for n in range(40)))
    with _crawl_made_a_replica_of_an_empty_primary(site, tmp_path) as (crawl, client, _):
        # Synced (its data replaced by none), then made a primary again: within the 3 s of refused writes
        # the crawl waits out, it takes writes again.
        wait_until(lambda: client.info("replication")["master_link_status"] == "up", "the replica synced")
        client.replicaof("NO", "ONE")
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    _said_emptied(crawl.returncode, out, err)


def test_a_temp_crawl_whose_redis_stays_a_replica_of_an_empty_primary_says_its_job_was_lost_not_kept(
    site: Site, tmp_path: Path
) -> None:
    """REPLICAOF an empty primary mid-crawl, left a replica past the crawl's patience: the sync emptied
    Redis, yet the crawl said "job ... left in the queue for when Redis takes writes again", a job no
    Redis holds. It says the refusal, and that the job went with the replica's sync."""
    site.rule(*(f"/a/p{n}" for n in range(40)))
    with _crawl_made_a_replica_of_an_empty_primary(site, tmp_path) as (crawl, _, port):
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, (out, err[-4000:])
    assert "left in the queue" not in err, err[-4000:]
    assert re.search(
        r"crawler temp: error: Redis refuses writes: it is a read-only replica of another Redis at"
        rf" 127\.0\.0\.1:{port} .*; the temp crawl stops after 3 s of it"
        r" \(SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS\), and Redis no longer holds job [0-9a-f]+ \(the replica's"
        r" sync replaced its data with its primary's\): ",
        err,
    ), err[-4000:]


def _said_emptied(returncode: int | None, out: str, err: str) -> None:
    """The temp crawl ended with the error of a Redis emptied under it."""
    assert returncode == 1, (out, err[-4000:])
    assert "nothing could be fetched" not in out, out
    assert re.search(
        r"crawler temp: error: Redis no longer holds job [0-9a-f]+ \(it was emptied while the crawl ran:"
        r" FLUSHALL, REPLICAOF of an empty primary, or restarted without its data\): ",
        err,
    ), err[-4000:]


@pytest.mark.parametrize("how", ["deleted", "evicted", "overwritten", "leases deleted"])
def test_a_temp_crawl_whose_sites_queue_is_dropped_from_redis_says_its_requests_were_lost(
    site: Site, how: str
) -> None:
    """Redis dropping the site's queue key mid-crawl (a maxmemory-policy allkeys-lru evicting it, a DEL, or
    a SET that overwrote it with a string), its job's hash kept: the job still counted its requests
    pending, which no worker could take any more, and the temp crawl waited for them forever, its bar
    still, saying nothing (overwritten: a WRONGTYPE traceback at each tick); run again, it resumed the
    job and waited again. The leases' set deleted (or evicted) with a request being fetched left that
    lease's site behind in crawler:lease-sites, which made the site look as if it held a request for ever.
    It ends, saying what was lost, why, and what to do, which fetches the rest."""
    site.rule(*(f"/a/q{n}" for n in range(40)))
    queue_key = Keys("crawler").queue_of(site.name)
    with site.temp_running(*_slow_temp(3)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
        try:
            if how == "evicted":
                client.config_set("maxmemory", str(100 * 2**20))
                client.config_set("maxmemory-policy", "allkeys-lru")
            if how == "overwritten":
                client.set(queue_key, "x")
            elif how == "leases deleted":
                # The leases' set alone, a request being fetched in it: its lease's site is left behind.
                wait_until(
                    lambda: bool(client.eval(_DELETED_WHEN_HELD, 1, "crawler:leases")), "a lease deleted"
                )
            else:
                client.delete(queue_key)
            try:
                out, err = crawl.communicate(timeout=WAIT_LIMIT)
            except subprocess.TimeoutExpired:
                pytest.fail("the temp crawl waits for requests Redis no longer holds")
        finally:
            client.close()  # the crawl's own Redis: it stopped with the crawl
    assert crawl.returncode == 1, (out, err[-4000:])
    assert "Traceback" not in err, err[-4000:]
    said = {
        "leases deleted": r"its keys were deleted \(DEL, UNLINK\) while the crawl ran, or Redis restarted"
        r" from an older snapshot;",
        "evicted": r"Redis dropped them to free memory: at its maxmemory of 104857600 bytes its"
        r" maxmemory-policy allkeys-lru drops keys .*; then",
        "deleted": r"its keys were deleted \(DEL, UNLINK\) while the crawl ran, or Redis restarted from an"
        r" older snapshot;",
        "overwritten": rf"Redis key {queue_key} is a string now, not a sorted set \(someone SET it while the"
        rf" crawl ran\): the requests queued in it were lost with its old value; first redis-cli DEL"
        rf" {queue_key}, then",
    }[how]
    assert re.search(
        r"crawler temp: error: Redis no longer holds the \d+ requests job [0-9a-f]+ had not fetched yet: none"
        rf" is in the queue of site {site.name} \(crawler:queue:{site.name}\), leased or waiting; {said}"
        rf" `crawler temp {site.name} --again` fetches them",
        err,
    ), err[-4000:]
    if how == "overwritten":
        refused = site.temp()
        assert refused.returncode == 1 and f"redis-cli DEL {queue_key}" in refused.stderr, refused.stderr
        with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
            mending = connect(redis_server.ensure())
            mending.delete(queue_key)
            mending.close()
    else:
        # Their counts written off, the job is not resumed to wait for them again; its URLs stay seen.
        plain = site.temp()
        assert "resumed job" not in plain.stdout, (plain.stdout, plain.stderr[-4000:])
        assert "Redis no longer holds" not in plain.stderr, plain.stderr[-4000:]
    again = site.temp("--again")
    assert again.returncode == 0, (again.stdout, again.stderr[-4000:])
    assert "resumed job" not in again.stdout, again.stdout
    assert len(site.stored()) == 40, sorted(site.stored())


@pytest.mark.parametrize("waiting", [1, 6_000], ids=["one_of_another_job", "thousands_of_another_job"])
def test_a_temp_crawl_whose_requests_are_lost_while_another_job_of_its_site_holds_some_ends_alone(
    site: Site, waiting: int
) -> None:
    """The temp crawl's check for requests Redis lost was per site: its job's requests gone (the site's
    queue key deleted) while another job of the site (a regular grab) had a retry waiting in the delayed
    set, Redis still "held a request of the site", and the temp crawl waited for its own, which no worker
    would ever take, until the other job ended (here: never). It is per job. Then the look read at most
    5,000 members of the site's queue, the leases and the delayed set (JOB_LOST_READ_MAX, from their
    heads): behind 6,000 retries of another job it could not tell, and waited for ever. It reads every
    member now, a bounded number each script call. Either way the crawl ends saying how many were lost,
    the other job's requests and counts left as they were."""
    site.rule(*(f"/a/o{n}" for n in range(40)))
    keys = Keys("crawler")
    meta = {"site": site.name, "job": "othergrab", "kind": "article"}
    others = [json.dumps({"url": site.server.url(f"/a/other{n}"), "meta": meta}) for n in range(waiting)]
    with site.temp_running(*_slow_temp(3)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
        try:
            # The other job's retries, waiting their backoff for an hour, then the temp crawl's queue lost.
            with client.pipeline(transaction=True) as pipe:
                pipe.zadd(keys.delayed, dict.fromkeys(others, time.time() + 3600))
                pipe.hset(keys.lease_sites, mapping=dict.fromkeys(others, site.name))
                pipe.hset(keys.lease_scores, mapping=dict.fromkeys(others, 0))
                pipe.hincrby(keys.pending, site.name, waiting)
                pipe.hincrby(keys.job("othergrab"), "pending", waiting)
                pipe.delete(keys.queue_of(site.name))
                pipe.execute()
            try:
                out, err = crawl.communicate(timeout=WAIT_LIMIT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the temp crawl waits for its requests while {waiting:,} of another job wait")
        finally:
            client.close()
    assert crawl.returncode == 1, (out, err[-4000:])
    lost = re.search(
        r"crawler temp: error: Redis no longer holds the (\d+) requests? job [0-9a-f]+ had not fetched yet:"
        rf" none is in the queue of site {site.name} \(crawler:queue:{site.name}\), leased or waiting",
        err,
    )
    assert lost is not None and 1 <= int(lost[1]) <= 39, err[-4000:]
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        try:
            assert None not in client.zmscore(keys.delayed, others), "the other job's requests wait still"
            assert client.zcard(keys.delayed) == waiting
            assert client.hget(keys.job("othergrab"), "pending") == str(waiting).encode()
            assert client.hget(keys.pending, site.name) == str(waiting).encode(), (
                "the site counts the other job's requests"
            )
        finally:
            client.close()


def test_a_temp_crawl_writes_off_the_requests_its_site_lost_before_it_started(site: Site) -> None:
    """The site's last temp crawl, killed, left its job with requests pending, then its queue key was
    deleted (as under `crawler run`, the site's next grab not due yet): the next `crawler temp SITE`
    resumed that job, waited for requests no worker could take, and ended with nothing fetched, saying
    they were lost. The counts are written off as it starts, with a note; it crawls the site anew."""
    from crawler.requests import enqueue_job
    from crawler.rules import load_rule

    site.rule(*(f"/a/w{n}" for n in range(3)))
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        rule = load_rule(site.rules / f"{site.name}.yaml")
        job = enqueue_job(client, keys, [rule], kind="temp", temp_of=site.name)
        client.delete(keys.queue_of(site.name))
        client.close()
    done = site.temp()
    assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
    assert (
        f"crawler temp: note: Redis held none of the 1 request {site.name} counted pending (lost with its"
        " queue key, deleted, evicted or overwritten, or with a Redis restarted from an older snapshot):"
        " their counts are written off, and its last jobs no longer wait for them; `crawler temp"
        f" {site.name} --again` fetches the articles seen before again"
    ) in done.stderr, done.stderr[-4000:]
    assert f"resumed temp crawl of {site.name} (job {job})" not in done.stderr, done.stderr[-4000:]
    assert len(site.stored()) == 3, sorted(site.stored())


@pytest.mark.parametrize(
    ("denied", "said"),
    [
        ("hsetnx", "this user has no permissions to run the 'hsetnx' command or its subcommand"),
        ("zadd", "The user executing the script can't run this command or subcommand"),
    ],
)
def test_a_temp_crawl_stopped_as_it_queues_its_job_leaves_it_known_and_the_next_one_goes_on_with_it(
    site: Site, denied: str, said: str
) -> None:
    """A temp crawl of the whole site queued its job, then recorded it as the site's last (crawler:temp:SITE):
    killed in between, it left requests of a job no crawl knew, which the next `crawler temp SITE` neither
    resumed nor waited for (a new job, the site's pages queued twice). The job is recorded first, marked
    ``seeding`` until all is queued; the next crawl goes on with it and queues the rest. The stop is a
    Redis user denied a command after the record: the job's first write (HSETNX of its ``created``), or a
    command the script of a request's push calls (ZADD), which ended `crawler temp` with a traceback; it is
    one line naming the command, the user and the fix."""
    site.rule(*(f"/a/s{n}" for n in range(3)))
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        url = _user_denied(client, redis_server, "seeder", denied)
        try:
            _said_denied(site.crawler("temp", site.name, REDIS_URL=url), "temp", "seeder", denied, said)
            last = client.get(keys.temp(site.name))
            assert last is not None, "the job is recorded before anything of it is queued"
            job = decoded(last)
            assert client.hget(keys.job(job), "seeding") == b"1"
            client.acl_setuser("seeder", enabled=True, commands=[f"+{denied}"])
            done = site.crawler("temp", site.name, *FAST_ARGS, REDIS_URL=url)
            assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
            assert done.stdout.startswith(f"resumed job {job}, "), done.stdout
            assert not client.hexists(keys.job(job), "seeding"), "queued in full"
        finally:
            client.acl_deluser("seeder")
            client.close()
    assert sorted(site.stored()) == [f"/a/s{n}" for n in range(3)]
    assert site.status()["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 0}


def test_a_temp_crawls_note_of_requests_lost_says_its_jobs_counted_them_when_the_site_counted_none(
    site: Site,
) -> None:
    """The site's count of pending requests deleted with its queue (crawler:pending gone), only its last
    temp crawl's job counted the lost request: the note said "the 1 request SITE counted pending", a count
    the site no longer had. It says the site's last jobs counted it, the site none."""
    from crawler.requests import enqueue_job
    from crawler.rules import load_rule

    site.rule(*(f"/a/j{n}" for n in range(3)))
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        rule = load_rule(site.rules / f"{site.name}.yaml")
        enqueue_job(client, keys, [rule], kind="temp", temp_of=site.name)
        client.delete(keys.queue_of(site.name), keys.pending)
        client.close()
    done = site.temp()
    assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
    assert (
        f"crawler temp: note: Redis held none of the 1 request the last jobs of {site.name} counted pending,"
        f" {site.name} itself counting none (lost with its queue key,"
    ) in done.stderr, done.stderr[-4000:]
    assert len(site.stored()) == 3, sorted(site.stored())


def test_a_temp_crawl_whose_last_requests_end_between_its_reads_says_none_was_lost(
    redis_client: redis.Redis,
) -> None:
    """A temp crawl's tick read its job's counts (3 pending, unchanged for LOST_REQUESTS_SECONDS: its
    queue key had been a string), then looked for the requests (_requests_lost); its worker, a process
    of its own, fetched and acknowledged all 3 in between (the key deleted, the requests due): the site
    then held none, LeasedQueue.lost said so, and the crawl ended exit 1 with "Redis no longer holds the
    3 requests" (test_a_sites_queue_key_set_to_a_string_mid_crawl_... under load). What was lost is what
    the look wrote off of the job's pending, in the same script: none here."""
    from crawler.cli.crawl import _requests_lost
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts

    keys = Keys("crawler")
    open_job(redis_client, keys, "j1")
    queue = LeasedQueue(redis_client, keys)
    for n in range(3):
        member = json.dumps({"url": f"http://alpha.test/{n}", "meta": {"site": "alpha", "job": "j1"}})
        assert queue.push(member.encode(), priority=0, site="alpha", job="j1")
    assert JobCounts.read(redis_client, keys, "j1").pending == 3, "the tick's read"
    for popped in queue.pop_many((), 3):
        assert popped.member is not None and queue.ack(popped.member, site="alpha", job="j1")
    assert _requests_lost(redis_client, keys, "j1", "alpha") is None
    assert redis_client.hget(keys.job("j1"), "lost") is None

    member = json.dumps({"url": "http://alpha.test/x", "meta": {"site": "alpha", "job": "j1"}})
    assert queue.push(member.encode(), priority=0, site="alpha", job="j1")
    redis_client.delete(keys.queue_of("alpha"))
    said = _requests_lost(redis_client, keys, "j1", "alpha")
    assert said is not None and said.startswith("Redis no longer holds the 1 request job j1"), said
    assert redis_client.hmget(keys.job("j1"), "pending", "lost") == [b"0", b"1"]


# KEYS: a sorted set. Deleted when it holds a member: 1 then, else 0.
_DELETED_WHEN_HELD = "if redis.call('ZCARD', KEYS[1]) > 0 then return redis.call('DEL', KEYS[1]) end return 0"


def test_a_temp_crawl_whose_redis_refused_writes_then_went_away_says_it_went_away(site: Site) -> None:
    """The crawl kept the last refusal it read when Redis stopped answering, so a server that refused
    writes for a moment, then died and could not start again, ended the crawl with 'Redis refuses
    writes', where the truth was that it no longer answered."""
    site.rule(*(f"/a/g{n}" for n in range(40)))
    redis_dir = site.data / "redis"
    with site.temp_running(*_slow_temp(8)) as crawl:
        wait_until(lambda: len(site.stored()) >= 1, "an article stored")
        client = connect(f"unix://{redis_dir / 'redis.sock'}")
        _refuse_writes(client, redis_dir)
        time.sleep(1.5)  # the progress bar's ticks (every 0.5 s) read the refusal
        _killed_for_good(redis_dir)
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, (out, err[-4000:])
    assert "Redis has not answered for 8 s (SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS)" in err, err[-4000:]
    assert "crawler temp: error: Redis refuses writes" not in err, err[-4000:]


def test_articles_stored_while_redis_is_away_are_not_said_to_have_links_noted_as_redirecting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Reading the notes failed, yet the warning said every article stored had links noted as redirecting to
    it (none had): it says now that it could not read whether any had."""
    away = redis.Redis(unix_socket_path=str(tmp_path / "gone.sock"))
    urls = ["http://news.example/a/1", "http://news.example/a/2"]
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store, caplog.at_level(logging.WARNING):
        _record_redirects(store, away, Keys("crawler"), None, urls)
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith(
        "Cannot read whether links were noted as redirecting to 2 article URLs just stored (first"
        " http://news.example/a/1): Error "
    ), said
    assert "Links noted as redirecting" not in said, said


def test_articles_stored_while_redis_is_away_log_the_outage_once_not_a_warning_at_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With Redis gone (restarted, say) a worker that stored an article with links noted as redirecting to
    it logged "Cannot read whether links were noted as redirecting to 1 article URL just stored (first
    .../a/restart5): Error 111 connecting to 127.0.0.1:16401. Connection refused.; ..." at each such article,
    beside the worker's one line for the outage. It is a call of that outage now: one line for all."""
    import asyncio

    from crawler.worker.pipelines.store import StorePipeline

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        spider = sites_spider(tmp_path, server.ensure())
        pipeline = StorePipeline.from_crawler(spider.crawler)
        asyncio.run(pipeline.open_spider())
    # Redis stopped: each article's notes cannot be read.
    with caplog.at_level(logging.WARNING):
        for n in range(5):
            pipeline.redirected(f"http://news.example/a/{n}")
        asyncio.run(pipeline.close_spider())
    said = [record.getMessage() for record in caplog.records]
    assert not [line for line in said if line.startswith("Cannot read whether links")], said
    (outage,) = [line for line in said if line.startswith("Redis failed")]
    assert outage.startswith(
        "Redis failed (read the links noted as redirecting to 1 article URL just stored (first"
        " http://news.example/a/0): they stay noted in Redis (crawler:redirected) and are added when another"
        " link to the same article is skipped: "
    ), outage


def test_a_forget_cut_short_by_redis_killed_names_what_is_left_set_aside_and_forgetting_again_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from crawler.cli import main
    from crawler.redisio import queue as queue_module
    from crawler.redisio.queue import LeasedQueue

    keys = Keys("crawler")
    (tmp_path / "rules").mkdir()
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        with connect(url) as client:
            # Each write in the append-only file before its reply: what the kill leaves is what was said.
            client.config_set("appendfsync", "always")
            queue = LeasedQueue(client, keys)
            for n in range(3):
                member = json.dumps({"url": f"http://news.test/a/{n}", "meta": {"site": "news"}}).encode()
                queue.push(member, priority=0, site="news", job=None)
        monkeypatch.setenv("REDIS_URL", url)
        monkeypatch.setenv("CRAWLER_RULES_DIR", str(tmp_path / "rules"))
        members_taken = queue_module._members_taken
        killed: list[int] = []

        def killing_redis(reply: list[Any]) -> dict[str, int]:
            # Once the site's queue is set aside (the take's first step) and before it is taken out.
            if not killed:
                pid = redis_server.pid or 0
                os.kill(pid, signal.SIGKILL)
                wait_until(lambda: _refused(url), "Redis gone")
                killed.append(pid)
            return members_taken(reply)

        monkeypatch.setattr(queue_module, "_members_taken", killing_redis)
        code = main(["sites", "forget", "news", "--yes"])
        said = capsys.readouterr().err
        assert code == 1, said
        assert "Traceback" not in said and len(said.splitlines()) == 1, said
        assert "crawler:taking:news" in said and "sites forget news --yes" in said, said
        monkeypatch.setattr(queue_module, "_members_taken", members_taken)
        redis_server.ensure()  # started again on its append-only file
        with connect(url) as client:
            # Set aside, or still queued when the append-only file had not taken the take's step yet.
            assert client.zcard(keys.taking("news")) + client.zcard(keys.queue_of("news")) == 3, "none lost"
            assert main(["sites", "forget", "news", "--yes"]) == 0
            assert "3 requests taken out of the queue" in capsys.readouterr().out
            assert not client.exists(keys.taking("news"), keys.queue_of("news"))
            assert int(client.hget(keys.pending, "news") or 0) == 0


def test_a_command_whose_redis_is_paused_longer_than_the_socket_timeout_is_not_told_redis_went_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command under way whose Redis is paused (CLIENT PAUSE) past the client's socket timeout said
    "Redis went away while the command ran (Timeout reading from socket)": Redis runs and holds it."""
    from crawler.cli import main
    from crawler.deadletters import requeue
    from crawler.redisio import connection

    monkeypatch.setitem(connection._CLIENT_OPTIONS, "socket_timeout", 0.5)
    keys = Keys("crawler")
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        with redis.Redis.from_url(url) as pauser:  # no socket timeout: it waits out the pause
            member = json.dumps({"url": "http://news.test/a/1", "meta": {"site": "news"}})
            pauser.hset(keys.dead, member, json.dumps({"reason": "HTTP 503", "kind": "http", "at": 1.0}))
            monkeypatch.setenv("REDIS_URL", url)

            def pausing_redis(*args: Any) -> Any:
                pauser.client_pause(2000, all=True)
                return requeue(*args)

            monkeypatch.setattr("crawler.cli.dead.requeue", pausing_redis)
            code = main(["dead", "requeue", "--all"])
            said = capsys.readouterr().err
            assert pauser.ping()
        assert code == 1, said
        assert "Traceback" not in said and len(said.splitlines()) == 1, said
        assert (
            "Redis took a command and answered nothing for 0.5 s while the command ran (Timeout reading from"
            " socket): it is paused (CLIENT PAUSE), stopped (SIGSTOP) or busy with one long command" in said
        ), said
        monkeypatch.setattr("crawler.cli.dead.requeue", requeue)
        assert main(["dead", "requeue", "--all"]) == 0
        assert "requeued 1 dead letter" in capsys.readouterr().out


def test_a_dead_requeue_cut_short_by_redis_killed_says_so_in_one_line_and_run_again_requeues_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from crawler.cli import main
    from crawler.deadletters import requeue

    keys = Keys("crawler")
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        with connect(url) as client:
            # Each write in the append-only file before its reply: what the kill leaves is what was said.
            client.config_set("appendfsync", "always")
            for n in range(3):
                member = json.dumps({"url": f"http://news.test/a/{n}", "meta": {"site": "news"}})
                client.hset(keys.dead, member, json.dumps({"reason": "HTTP 503", "kind": "http", "at": 1.0}))
        monkeypatch.setenv("REDIS_URL", url)

        def killing_redis(*args: Any) -> Any:
            os.kill(redis_server.pid or 0, signal.SIGKILL)
            wait_until(lambda: _refused(url), "Redis gone")
            return requeue(*args)

        monkeypatch.setattr("crawler.cli.dead.requeue", killing_redis)
        code = main(["dead", "requeue", "--all"])
        said = capsys.readouterr().err
        assert code == 1, said
        assert "Traceback" not in said and len(said.splitlines()) == 1, said
        assert "Redis went away" in said and "run it again once Redis answers" in said, said
        monkeypatch.setattr("crawler.cli.dead.requeue", requeue)
        redis_server.ensure()  # started again on its append-only file
        assert main(["dead", "requeue", "--all"]) == 0
        assert "requeued 3 dead letters" in capsys.readouterr().out


def _refused(url: str) -> bool:
    """True when no Redis answers at ``url``."""
    try:
        connect(url).close()
    except RedisUnavailableError:
        return True
    return False


# --- stopped by a signal: SIGTERM (docker stop, a service manager) or Ctrl-C -------------------------------


def _text_processes(session: int) -> set[int]:
    """The running text processes (spawned by multiprocessing) of the session ``session``: they leave
    the crawl's process group, not its session."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
            command = (entry / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        state, _, _, sid = stat.rsplit(")", 1)[1].split()[:4]
        if int(sid) == session and state != "Z" and b"spawn_main" in command:
            found.add(int(entry.name))
    return found


@pytest.mark.parametrize(
    ("command", "sign", "code", "said", "whole_group"),
    [
        ("worker", signal.SIGTERM, 143, "terminated (SIGTERM)", False),
        ("worker", signal.SIGINT, 130, "interrupted", False),
        ("temp", signal.SIGTERM, 143, "terminated (SIGTERM)", False),
        # A service manager's stop, or Ctrl-C in a terminal, signals the whole process group: the text
        # pool's processes too, which must leave the stop to the crawl rather than die of it.
        ("temp", signal.SIGTERM, 143, "terminated (SIGTERM)", True),
        ("temp", signal.SIGINT, 130, "interrupted", True),
        ("worker", signal.SIGTERM, 143, "terminated (SIGTERM)", True),
        # SIGHUP: its terminal closed (a terminal test_a_worker_whose_terminal_closes_... closes).
        ("worker", signal.SIGHUP, 129, "hung up (SIGHUP)", False),
        ("temp", signal.SIGHUP, 129, "hung up (SIGHUP)", True),
    ],
)
def test_a_crawl_stopped_by_sigterm_or_ctrl_c_returns_its_leases_and_exits_with_128_plus_the_signal(
    site: Site, command: str, sign: signal.Signals, code: int, said: str, whole_group: bool
) -> None:
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts, enqueue_job
    from crawler.rules import load_rule

    site.rule(*(f"/slow?seconds=1&n={unique('held')}" for _ in range(20)))  # each holds its lease 1 s
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        queue = LeasedQueue(client, keys)
        if command == "worker":
            enqueue_job(client, keys, [load_rule(site.rules / f"{site.name}.yaml")])
        settings = [*FAST_ARGS, "-s", "CONCURRENT_REQUESTS=2"]
        arguments = [command, *settings] if command == "worker" else [command, site.name, *settings]
        with _in_a_group_of_its_own(site, url, *arguments) as crawl:
            job = _the_job(client, keys)

            def text_work_done() -> bool:
                counts = JobCounts.read(client, keys, job)  # the pages are alike: one stored, reposts
                return counts.stored + counts.reposts >= 2

            wait_until(
                lambda: text_work_done() and queue.leased() > 0,
                "articles stored or recorded as reposts (their text work done) and leases held",
            )
            pool = _text_processes(crawl.pid)
            assert pool, "the crawl's text processes are found"
            if whole_group:
                os.killpg(crawl.pid, sign)
            else:
                crawl.send_signal(sign)
            _, err = crawl.communicate(timeout=WAIT_LIMIT)
        assert crawl.returncode == code, err[-4000:]
        assert f"crawler {command}: {said}" in err, err[-4000:]
        assert "Traceback" not in err, err[-4000:]
        assert "A text process died" not in err, err[-4000:]
        if sign == signal.SIGHUP:
            logged = (
                "Received SIGHUP (the terminal closed), shutting down gracefully"
                if command == "worker"
                else ("crawler temp: warning: stopping (SIGHUP)")
            )
            assert logged in err, err[-4000:]
        assert not _text_processes(crawl.pid), f"text processes outlived the command (of {sorted(pool)})"
        counts = JobCounts.read(client, keys, job)
        assert queue.leased() == 0, "every lease given back"
        assert client.hlen(keys.workers) == 0, "its heartbeat removed"
        assert 0 < counts.pending == len(queue), "the unfinished requests are back in the queue"
        assert counts.fetched + counts.pending == 21, "nothing lost: the index page and 20 pages"
        if command == "temp":
            assert (
                f"crawler temp: note: stopped before its end: {counts.pending} requests of job {job} wait in"
                " the queue: the next crawl on this Redis takes them, at the pace of their site, a temp"
                f" crawl of any site or a worker (`crawler temp {site.name}` goes on with job {job});"
                f" `crawler sites forget {site.name}` takes them out of the queue (and drops its grab"
                " state)\n"
            ) in err, err[-4000:]
        client.close()


def test_a_temp_crawl_stopped_by_ctrl_c_says_the_next_crawl_of_any_site_takes_its_requests(
    site: Site,
) -> None:
    """The note said "`crawler temp SITE` goes on with them", while the next temp crawl of any site takes
    them from the shared queue (at the pace of their site): it says so, and how to take them out."""
    from crawler.requests import JobCounts

    site.rule(*(f"/slow?seconds=1&n={unique('held')}" for _ in range(8)))  # each holds its lease 1 s
    other = site.rule("/a/plain", name="other")
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        settings = [*FAST_ARGS, "-s", "CONCURRENT_REQUESTS=2"]
        with _in_a_group_of_its_own(site, url, "temp", site.name, *settings) as crawl:
            job = _the_job(client, keys)
            wait_until(
                lambda: JobCounts.read(client, keys, job).fetched >= 2, "the index page and a page fetched"
            )
            os.killpg(crawl.pid, signal.SIGINT)
            _, err = crawl.communicate(timeout=WAIT_LIMIT)
        assert crawl.returncode == 130, err[-4000:]
        left = JobCounts.read(client, keys, job).pending
        assert left > 0, err[-4000:]
        assert (
            f"crawler temp: note: stopped before its end: {left} requests of job {job} wait in the queue:"
            " the next crawl on this Redis takes them, at the pace of their site, a temp crawl of any site"
            f" or a worker (`crawler temp {site.name}` goes on with job {job}); `crawler sites forget"
            f" {site.name}` takes them out of the queue (and drops its grab state)\n"
        ) in err, err[-4000:]
        with _in_a_group_of_its_own(site, url, "temp", other, *FAST_ARGS) as crawl:
            out, err = crawl.communicate(timeout=WAIT_LIMIT)
        assert crawl.returncode == 0, err[-4000:]
        assert (
            f"its worker also handled {left} requests of other jobs from the shared queue (site {site.name})"
        ) in out, out
        assert JobCounts.read(client, keys, job).pending == 0
        client.close()


# `crawler ARGUMENTS` in the terminal on its stdin, which it makes its session's controlling terminal (it
# is started in a session of its own): the terminal's hangup is its.
_IN_ITS_TERMINAL = (
    "import fcntl, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


def test_a_worker_whose_terminal_closes_stops_cleanly_and_returns_its_leases(site: Site) -> None:
    """`crawler worker` in a terminal that is closed (the kernel hangs it up: SIGHUP to its session):
    the clean stop of SIGTERM, exit 129, its leases back in the queue and its heartbeat removed, though
    nothing more can be written to the terminal."""
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts, enqueue_job
    from crawler.rules import load_rule

    site.rule(*(f"/slow?seconds=1&n={unique('hangup')}" for _ in range(20)))
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        queue = LeasedQueue(client, keys)
        enqueue_job(client, keys, [load_rule(site.rules / f"{site.name}.yaml")])
        settings = [*FAST_ARGS, "-s", "CONCURRENT_REQUESTS=2"]
        terminal, its_side = os.openpty()
        worker = subprocess.Popen(
            [sys.executable, "-c", _IN_ITS_TERMINAL, "worker", *settings],
            env=site.env(REDIS_URL=url),
            stdin=its_side,
            stdout=its_side,
            stderr=its_side,
            start_new_session=True,
        )
        os.close(its_side)
        shown: list[bytes] = []
        reading = threading.Event()
        reading.set()

        def read_the_terminal() -> None:
            while reading.is_set():
                if select.select([terminal], [], [], 0.05)[0]:
                    try:
                        shown.append(os.read(terminal, 65536))
                    except OSError:  # EIO: the worker's side closed
                        return

        reader = threading.Thread(target=read_the_terminal)
        reader.start()
        try:
            job = _the_job(client, keys)
            wait_until(
                lambda: JobCounts.read(client, keys, job).fetched >= 2 and queue.leased() > 0,
                "pages fetched and leases held",
            )
            assert client.hlen(keys.workers) == 1, "its heartbeat"
            reading.clear()
            reader.join()
            os.close(terminal)  # the terminal window closed
            worker.wait(WAIT_LIMIT)
        finally:
            reading.clear()
            reader.join()
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        text = b"".join(shown).decode("utf-8", "replace")[-4000:]
        assert worker.returncode == 129, text
        counts = JobCounts.read(client, keys, job)
        assert queue.leased() == 0, "every lease given back"
        assert client.hlen(keys.workers) == 0, "its heartbeat removed"
        assert 0 < counts.pending == len(queue), "the unfinished requests are back in the queue"
        assert counts.fetched + counts.pending == 21, "nothing lost: the index page and 20 pages"
        client.close()


def test_a_temp_crawl_stopped_with_one_request_left_says_so_in_the_singular(site: Site) -> None:
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts

    site.rule(f"/slow?seconds=600&n={unique('held')}")  # the one article holds its lease until the stop
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        queue = LeasedQueue(client, keys)
        with _in_a_group_of_its_own(site, url, "temp", site.name) as crawl:
            job = _the_job(client, keys)
            wait_until(
                lambda: JobCounts.read(client, keys, job).fetched == 1 and queue.leased() == 1,
                "the index page fetched and the article's request leased",
            )
            os.killpg(crawl.pid, signal.SIGINT)
            _, err = crawl.communicate(timeout=WAIT_LIMIT)
        client.close()
    assert crawl.returncode == 130, err[-4000:]
    assert (
        f"crawler temp: note: stopped before its end: 1 request of job {job} waits in the queue: the next"
        " crawl on this Redis takes it, at the pace of its site, a temp crawl of any site or a worker"
        f" (`crawler temp {site.name}` goes on with job {job}); `crawler sites forget {site.name}` takes it"
        " out of the queue (and drops its grab state)\n"
    ) in err, err[-4000:]


@pytest.mark.parametrize(
    ("sign", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_a_temp_crawl_stopped_during_a_hung_download_stops_at_once_and_loses_nothing(
    site: Site, sign: signal.Signals, code: int, said: str
) -> None:
    """A stop while a page does not come says so at once and cancels its download: Scrapy's clean stop
    waited for it, up to DOWNLOAD_TIMEOUT (30 s by default; 600 s here, longer than the wait for the
    command's end), saying nothing. The cancelled download is neither retried nor dead-lettered: its
    request is back in the queue, and the next temp crawl stores its article."""
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts

    held = unique("held")
    site.rule(f"/held/{held}?seconds=600")  # its first request is held unanswered until the server stops
    asked = site.server.url(f"/asked/{held}")
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        queue = LeasedQueue(client, keys)
        returncode, err = _temp_stopped(
            site, url, sign, lambda: _read(asked) == "1", "the held page asked for"
        )
        assert returncode == code, err[-4000:]
        job = _the_job(client, keys)
        said_lines = [line for line in err.splitlines() if line.startswith("crawler temp: ")]
        assert said_lines == [
            f"crawler temp: note: stopping ({sign.name}): 1 download under way cancelled, its request"
            " goes back to the queue",
            f"crawler temp: note: stopped before its end: 1 request of job {job} waits in the queue: the"
            " next crawl on this Redis takes it, at the pace of its site, a temp crawl of any site or a"
            f" worker (`crawler temp {site.name}` goes on with job {job}); `crawler sites forget"
            f" {site.name}` takes it out of the queue (and drops its grab state)",
            f"crawler temp: {said}",
        ], err[-4000:]
        counts = JobCounts.read(client, keys, job)
        assert (queue.leased(), len(queue), counts.pending, counts.errors) == (0, 1, 1, 0), counts
        again = site.crawler("temp", site.name, REDIS_URL=url)
        assert again.returncode == 0, again.stderr[-4000:]
        assert again.stdout.startswith(f"resumed job {job}, "), again.stdout
        client.close()
    assert list(site.stored()) == [f"/held/{held}?seconds=600"], "the page stored by the next crawl"
    assert site.dead() == [], "no dead letter"
    assert _read(asked) == "2", "asked for once more, by the next crawl"


def test_a_worker_whose_lease_expired_while_it_fetched_counts_the_article_written_twice_once(
    site: Site,
) -> None:
    """A lease that expires while its page downloads (Redis stalled past LEASE_SECONDS) sends its request
    back to the queue, and the worker fetches and writes the page again: the job counts the article once,
    but the worker's closing line counted each write ("stored 47 articles" of 40). It counts the articles
    whose acknowledgement counted them in their job: the store's new documents, each once."""
    from crawler.redisio.queue import LeasedQueue

    held = unique("held")
    page = f"/held/{held}?seconds=3"
    asked = site.server.url(f"/asked/{held}")

    def expire(client: redis.Redis) -> None:
        queue = LeasedQueue(client, Keys("crawler"))
        wait_until(lambda: _read(asked) == "1" and queue.leased() == 1, "the held page asked for")
        # As a stall past LEASE_SECONDS would: its lease expires while the page downloads.
        assert queue.requeue_expired(time.time() + 3600) == 1

    stored, did = _worker_run(site, page, scraped=2, meanwhile=expire)
    assert stored == 1
    assert re.fullmatch(
        r"The worker ran \d+ s \(shutdown\): fetched 3 pages, stored 1 article, errors 0", did
    ), did


def test_a_worker_counts_an_article_its_job_wrote_unacknowledged_before_as_stored_once(site: Site) -> None:
    """An article its own job wrote before, unacknowledged (a batch stored in part before it failed, its
    requests deferred and fetched again; a worker killed between the write and the acknowledgement), is
    new to the job when it is written again: the worker's closing line counts it stored, once (a count of
    the writes again apart, tried in a branch of this series, took it out of the line: stored 0)."""
    page = f"/a/{unique('part')}"

    def written_before(job: str, _client: redis.Redis) -> None:
        with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
            document = {
                "url": site.server.url(page),
                "site": site.name,
                "job": job,
                "title": "Written before",
                "body": "A story its own job wrote before its request was acknowledged. " * 20,
                "fetched_at": datetime.now(UTC).isoformat(),
            }
            store.upsert_many([make_document(document)])

    stored, did = _worker_run(site, page, scraped=1, before=written_before)
    assert stored == 1
    assert re.fullmatch(
        r"The worker ran \d+ s \(shutdown\): fetched 2 pages, stored 1 article, errors 0", did
    ), did


def test_a_worker_counts_an_article_it_stored_before_redis_went_back_to_an_older_snapshot_once(
    site: Site,
) -> None:
    """Redis restored from a snapshot taken before the worker stored an article gives the article's request
    back to its job (its count too: the job counts it once), and the worker, which lived through it,
    fetches and writes the article again, over its own document: its closing line counted each write
    ("stored 340 articles" of 251 in the store). It counts the articles it stored, and says apart those
    it wrote again."""
    page = f"/a/{unique('restored')}"
    snapshot: list[tuple[Any, int, Any]] = []
    jobs: list[str] = []

    def take(job: str, client: redis.Redis) -> None:
        jobs.append(job)
        snapshot.extend((key, client.pttl(key), client.dump(key)) for key in client.scan_iter())

    def restore(client: redis.Redis) -> None:
        from crawler.requests import JobCounts

        wait_until(lambda: JobCounts.read(client, Keys("crawler"), jobs[0]).stored == 1, "the article stored")
        client.flushall()
        for key, ttl, value in snapshot:
            client.restore(key, max(ttl, 0), value)

    stored, did = _worker_run(site, page, scraped=2, before=take, meanwhile=restore)
    assert list(site.stored()) == [page]
    assert stored == 1
    assert re.fullmatch(
        r"The worker ran \d+ s \(shutdown\): fetched 4 pages, stored 1 article, re-stored 1 it had stored"
        r" already, errors 0",
        did,
    ), did


def test_a_worker_says_re_stored_only_the_articles_it_had_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of the articles its job wrote before (unacknowledged: a batch stored in part, a worker killed before
    its acknowledgement), a worker says re-stored those its acknowledgements had counted, and only those:
    after 50,000 articles counted, none of 50,000 others it never counted, and every one of 1,000 of the
    first written again (pybloom-live's ScalableBloomFilter, which remembered them, said 88 of the 50,000
    re-stored, not stored)."""
    from crawler.redisio.queue import Ack
    from crawler.worker.scheduler import _Pending

    batch = 100  # STORE_BATCH_SIZE: the acknowledgements of a batch stored end together

    def landed(urls: Sequence[str], job_wrote_before: bool) -> dict[str, int]:
        said = {"stored": 0, "stored_again": 0}
        for start in range(0, len(urls), batch):
            scheduler._acks = [
                _Pending(Ack("lease", "news", "job", stored=1), float("inf"), ((url, job_wrote_before),))
                for url in urls[start : start + batch]
            ]
            before = {name: crawler.stats.get_value(f"acked/{name}", 0) for name in said}
            scheduler.flush_acks()
            for name in said:
                said[name] += crawler.stats.get_value(f"acked/{name}", 0) - before[name]
        return said

    with _scheduler_of_embedded_redis(tmp_path) as (_, crawler, scheduler, _):
        monkeypatch.setattr(scheduler.queue, "ack_many", lambda acks: [True] * len(acks))
        counted = [f"https://news.example/a/{number}" for number in range(50_000)]
        assert landed(counted, False) == {"stored": 50_000, "stored_again": 0}
        others = [f"https://news.example/b/{number}" for number in range(50_000)]
        assert landed(others, True) == {"stored": 50_000, "stored_again": 0}
        assert landed(counted[:1000], True) == {"stored": 0, "stored_again": 1000}


def _worker_run(
    site: Site,
    page: str,
    *,
    scraped: int,
    before: Callable[[str, redis.Redis], None] | None = None,
    meanwhile: Callable[[redis.Redis], None] | None = None,
    socket_timeout: float | None = None,
    settings: Sequence[str] = (),
) -> tuple[int, str]:
    """A job of the site's rule (its index page linking to ``page``) queued, ``before`` called with the
    job's id and a Redis client, a worker started (its Redis socket timeout ``socket_timeout`` when given,
    its ``settings`` NAME=VALUE after FAST's), ``meanwhile`` called with a Redis client, the worker run
    until it scraped ``page`` ``scraped`` times and the job is done, then stopped: the job's count of
    articles stored, and the worker's closing line."""
    from crawler.requests import JobCounts, enqueue_job
    from crawler.rules import load_rule

    site.rule(page)
    url_of_page = site.server.url(page)
    log = site.root / "worker.log"
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        job = enqueue_job(client, keys, [load_rule(site.rules / f"{site.name}.yaml")])
        if before is not None:
            before(job, client)
        with log.open("w", encoding="utf-8") as stream:
            start = ["-m", "crawler.cli"] if socket_timeout is None else ["-c", _SHORT_SOCKET_TIMEOUT]
            given = [item for setting in settings for item in ("-s", setting)]
            worker = subprocess.Popen(
                [sys.executable, *start, "worker", *FAST_ARGS, *given, "-s", "LOG_LEVEL=DEBUG"],
                env=site.env(REDIS_URL=url, SOCKET_TIMEOUT=str(socket_timeout)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stream,
            )
            try:
                if meanwhile is not None:
                    meanwhile(client)
                wait_until(
                    lambda: (
                        log.read_text(encoding="utf-8").count(f"Scraped {url_of_page}") == scraped
                        and JobCounts.read(client, keys, job).pending == 0
                    ),
                    "the page scraped and the job done",
                )
                counts = JobCounts.read(client, keys, job)
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(COMMAND_TIMEOUT)
        client.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    # What it did, not the line of the stop asked for (INFO: "stopping (SIGINT): ...").
    did = [
        line.split("] INFO: ", 1)[1]
        for line in lines
        if "[crawler.worker.process] INFO: " in line and "] INFO: stopping (" not in line
    ]
    assert len(did) == 1, lines[-40:]
    return counts.stored, did[0]


def test_a_download_through_a_proxy_cancelled_by_a_stop_is_no_failure_of_the_proxy(site: Site) -> None:
    """A download the stop cancelled says nothing of its proxy: counted a failure, it benched the proxy
    for every worker (PROXY_MAX_FAILURES=1 here; 3 by default: three requests under way at a stop)."""
    from proxyserver import TestProxy

    held = unique("held")
    site.rule(f"/held/{held}?seconds=600")
    asked = site.server.url(f"/asked/{held}")
    with TestProxy("held") as proxy:
        with (site.rules / f"{site.name}.yaml").open("a", encoding="utf-8") as rule:
            rule.write(f"access:\n  proxies: ['{proxy.url()}']\n")
        keys = Keys("crawler")
        with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
            url = redis_server.ensure()
            returncode, err = _temp_stopped(
                site,
                url,
                signal.SIGTERM,
                lambda: _read(asked) == "1",
                "the held page asked for through the proxy",
                "-s",
                "PROXY_MAX_FAILURES=1",
            )
            assert returncode == 143, err[-4000:]
            health = connect(url).hgetall(keys.proxy(f"http://127.0.0.1:{proxy.port}"))
    assert b"benched_until" not in health, health
    assert int(health.get(b"failed", 0)) == 0, health


def test_a_crawl_stopped_while_robots_txt_does_not_come_logs_no_download_error(site: Site) -> None:
    """The robots.txt download a stop cancelled is no error of the site's robots.txt: it was logged as
    ERROR 'Error downloading <GET .../robots.txt>: DownloadStopped: ...' as the crawl stopped."""
    from crawler.redisio.queue import LeasedQueue

    with socket.socket() as silent:  # listens, never accepts: a site that does not answer
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        start = f"http://127.0.0.1:{silent.getsockname()[1]}/news/"
        site.write_rule(RULE.format(start=start))
        keys = Keys("crawler")
        with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
            url = redis_server.ensure()
            client = connect(url)
            queue = LeasedQueue(client, keys)
            returncode, err = _temp_stopped(
                site,
                url,
                signal.SIGINT,
                lambda: bool(select.select([silent], [], [], 0)[0]),
                "robots.txt asked for",
            )
            assert returncode == 130, err[-4000:]
            assert "Error downloading" not in err, err[-4000:]
            assert (queue.leased(), len(queue)) == (0, 1), "the index page's request back in the queue"
            client.close()


def _temp_stopped(
    site: Site, url: str, sign: signal.Signals, when: Callable[[], bool], what: str, *settings: str
) -> tuple[int, str]:
    """`crawler temp SITE` on the Redis at ``url``, its downloads given 600 s (longer than the wait for its
    end), stopped by ``sign`` once ``when()`` holds (``what``): its exit code and its stderr."""
    arguments = ("temp", site.name, "-s", "DOWNLOAD_TIMEOUT=600", *settings)
    with _in_a_group_of_its_own(site, url, *arguments) as crawl:
        wait_until(when, what)
        crawl.send_signal(sign)
        _, err = crawl.communicate(timeout=WAIT_LIMIT)
    return crawl.returncode, err


def _read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=WAIT_LIMIT) as answer:
        return answer.read().decode()  # type: ignore[no-any-return]


@contextmanager
def _in_a_group_of_its_own(site: Site, url: str, *arguments: str) -> Iterator[subprocess.Popen[str]]:
    """`crawler ARGUMENTS` of ``site`` on the Redis at ``url``, in the background (its stdout and stderr
    piped) in a process group of its own, which a test signals as a terminal or a service manager does;
    the group killed if the command still runs at the end."""
    crawl = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", *arguments],
        env=site.env(REDIS_URL=url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield crawl
    finally:
        if crawl.poll() is None:
            os.killpg(crawl.pid, signal.SIGKILL)
            crawl.communicate()


def _the_job(client: redis.Redis, keys: Keys) -> str:
    """The id of the one job in Redis, once it is queued."""

    def jobs() -> list[str]:
        return [decoded(key).removeprefix(keys.job("")) for key in client.keys(keys.job("*"))]

    wait_until(lambda: len(jobs()) == 1, "the job to be queued")
    (job,) = jobs()
    return job


def _scheduler_stopped_by(
    site: Site, sign: signal.Signals, *, sigint_ignored: bool = False
) -> tuple[int | None, str]:
    """``crawler schedule`` of ``site`` started (with SIGINT ignored, as a script's background job ``&``
    starts it, when ``sigint_ignored``), sent ``sign`` once it runs: its exit code and its log."""
    site.rule("/a/scheduled")
    log = site.root / "schedule.log"
    with log.open("w", encoding="utf-8") as stream:
        inherited = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
        try:
            scheduler = subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "schedule"],
                env=site.env(),
                stdin=subprocess.DEVNULL,
                stdout=stream,
                stderr=stream,
            )
        finally:
            if inherited is not None:
                signal.signal(signal.SIGINT, inherited)
        try:
            wait_until(lambda: "active scheduler" in log.read_text(encoding="utf-8"), "the scheduler to run")
            scheduler.send_signal(sign)
            scheduler.wait(WAIT_LIMIT)
        finally:
            if scheduler.poll() is None:
                scheduler.kill()
                scheduler.wait()
    return scheduler.returncode, log.read_text(encoding="utf-8")


def test_the_scheduler_stopped_by_sigterm_stops_its_embedded_redis_and_exits_with_143(site: Site) -> None:
    code, text = _scheduler_stopped_by(site, signal.SIGTERM)
    pid_file = site.data / "redis" / "redis.pid"
    left = int(pid_file.read_text("ascii")) if pid_file.exists() else None
    if left is not None:
        os.kill(left, signal.SIGKILL)  # a server the scheduler left running (the test fails below)
    assert code == 143, text[-4000:]
    assert "crawler schedule: terminated (SIGTERM)" in text, text[-4000:]
    assert left is None and "shut down (exit code 0)" in text, "the embedded Redis it started is stopped"
    assert list((site.data / "redis" / "users").iterdir()) == [], "it left the server's users"


def test_the_scheduler_started_with_ctrl_c_ignored_stops_on_sigint_as_the_worker_does(site: Site) -> None:
    code, text = _scheduler_stopped_by(site, signal.SIGINT, sigint_ignored=True)
    assert code == 130, f"not stopped by `kill -INT`, as if Ctrl-C were ignored: {text[-4000:]}"
    assert "crawler schedule: interrupted" in text, text[-4000:]
    assert list((site.data / "redis" / "users").iterdir()) == [], "it left the server's users"


# `crawler CMD` whose crawl waits, once its start-up is done and before Scrapy takes the stop signals, until
# it is stopped: it says so by creating the file $PAUSED_AT.
_PAUSED_BEFORE_THE_CRAWL = (
    "import os, pathlib, sys, time\n"
    "import crawler.cli.crawl as crawl\n"
    "def paused(*args, **kwargs):\n"
    "    pathlib.Path(os.environ['PAUSED_AT']).touch()\n"
    "    while True:\n"
    "        time.sleep(0.05)\n"
    "crawl.run_worker = paused\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


@pytest.mark.parametrize("command", ["temp", "worker", "run"])
def test_a_crawl_started_with_ctrl_c_ignored_stops_on_sigint_in_its_start_up(
    site: Site, command: str
) -> None:
    """A script's `crawler temp SITE &` starts with SIGINT ignored: Scrapy takes the signal once the crawl
    runs, and the `kill -INT` of its first seconds (Redis starting, the job queued) was dropped. It stops
    the command then as later: exit 130, and a temp crawl's job left to go on with."""
    site.rule(f"/a/{unique('startup')}")
    paused_at = site.root / "paused"
    arguments = [command, site.name] if command == "temp" else [command]
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a script's `&` starts it
    try:
        crawl = subprocess.Popen(
            [sys.executable, "-c", _PAUSED_BEFORE_THE_CRAWL, *arguments],
            env=site.env(PAUSED_AT=str(paused_at)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    err = _interrupted_once_paused(
        crawl, paused_at, "the command's start-up done", "in the start-up was ignored"
    )
    assert crawl.returncode == 130, err[-4000:]
    assert err.endswith(f"crawler {command}: interrupted\n"), err[-4000:]
    if command == "temp":
        assert f"`crawler temp {site.name}` goes on with job " in err, err[-4000:]
        assert f"`crawler sites forget {site.name}` takes it out of the queue" in err, err[-4000:]
        again = site.temp()
        assert again.returncode == 0, again.stderr[-4000:]
        assert again.stdout.startswith("resumed job "), again.stdout
        assert len(site.stored()) == 1, "the article stored by the crawl that went on with the job"


def _interrupted_once_paused(crawl: subprocess.Popen[str], paused_at: Path, paused: str, unheard: str) -> str:
    """SIGINT sent to ``crawl`` once it created ``paused_at`` (``paused``: what that tells), and its stderr
    once it ended (failing with ``unheard`` if the signal did not end it, then killing it)."""
    try:
        wait_until(paused_at.exists, paused)
        crawl.send_signal(signal.SIGINT)
        try:
            _, err = crawl.communicate(timeout=WAIT_LIMIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"SIGINT {unheard}: the command runs on")
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.communicate()
    return err


# `crawler temp SITE` that waits, once its crawl has ended, until it is stopped: it says so by creating the
# file $PAUSED_AT.
_PAUSED_AFTER_THE_CRAWL = (
    "import os, pathlib, sys, time\n"
    "import crawler.cli.crawl as crawl\n"
    "crawled = crawl.run_worker\n"
    "def paused(*args, **kwargs):\n"
    "    stats = crawled(*args, **kwargs)\n"
    "    pathlib.Path(os.environ['PAUSED_AT']).touch()\n"
    "    while True:\n"
    "        time.sleep(0.05)\n"
    "crawl.run_worker = paused\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


def test_a_temp_crawl_stops_on_sigint_after_its_crawl_ended(site: Site) -> None:
    """Scrapy's handler of the stop signals stayed in place once its reactor had stopped, and only asked
    that stopped reactor to stop: a Ctrl-C after the crawl (its summary, Redis stopping) was dropped."""
    site.rule(f"/a/{unique('ended')}")
    paused_at = site.root / "paused"
    crawl = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_AFTER_THE_CRAWL, "temp", site.name],
        env=site.env(PAUSED_AT=str(paused_at)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = _interrupted_once_paused(crawl, paused_at, "the crawl ended", "after the crawl was dropped")
    assert crawl.returncode == 130, err[-4000:]
    assert err.endswith("crawler temp: interrupted\n"), err[-4000:]


def test_crawler_run_logs_each_rule_error_once(site: Site) -> None:
    """`crawler run` is a scheduler and a worker on one rules folder: a broken rule file is logged once,
    not by each of them."""
    site.rule("/a/scheduled")
    path = site.rules / f"{site.name}.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "schedule: {every: 20m}\n", encoding="utf-8")
    (site.rules / "broken.yaml").write_text("start_urls: 12\n", encoding="utf-8")
    log = site.root / "run.log"
    with log.open("w", encoding="utf-8") as stream:
        service = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "run", *FAST_ARGS],
            env=site.env(),
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
        )
        try:
            # The scheduler queued the site's grab (it read the rules folder) and the worker crawled it.
            wait_until(lambda: "/a/scheduled" in site.stored(), "the scheduled grab's article stored")
            service.send_signal(signal.SIGINT)
            service.wait(WAIT_LIMIT)
        finally:
            if service.poll() is None:
                service.kill()
                service.wait()
    text = log.read_text(encoding="utf-8")
    assert service.returncode == 130, text[-4000:]
    said = [line for line in text.splitlines() if "broken.yaml: start_urls" in line]
    assert len(said) == 1, said


# `crawler run` whose scheduler's ticks raise an error of no kind it knows (a fault of its code) while the
# file BROKEN_WHILE names exists.
_TICKS_BROKEN = (
    "import os, pathlib, sys\n"
    "from crawler.schedule.grabs import GrabScheduler\n"
    "ticked = GrabScheduler.tick\n"
    "def tick(self, rules):\n"
    "    if pathlib.Path(os.environ['BROKEN_WHILE']).exists():\n"
    "        raise TypeError('the test breaks this tick')\n"
    "    return ticked(self, rules)\n"
    "GrabScheduler.tick = tick\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


def test_crawler_runs_scheduler_says_a_tick_broken_by_its_own_fault_once_goes_on_and_status_shows_it(
    site: Site,
) -> None:
    """A tick that raised anything but a Redis or rule error ended `crawler run`'s scheduler thread (a
    traceback on stderr, none in the log) while the worker ran on: no grab was queued any more. It is
    logged once with its traceback, counted, written for `crawler status`, and the next tick tries again."""
    site.rule("/a/scheduled-after-the-fault")
    path = site.rules / f"{site.name}.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "schedule: {every: 20m}\n", encoding="utf-8")
    broken = site.root / "broken"
    broken.touch()
    log = site.root / "run.log"
    with log.open("w", encoding="utf-8") as stream:
        service = subprocess.Popen(
            [sys.executable, "-c", _TICKS_BROKEN, "run", *FAST_ARGS, "-s", "SCHEDULE_TICK_SECONDS=0.2"],
            env=site.env(BROKEN_WHILE=str(broken)),
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
        )
        try:

            def failing() -> dict[str, Any] | None:
                shown: dict[str, Any] | None = site.status()["scheduler"]["failing"]
                return shown

            wait_until(
                lambda: "a tick failed with an unexpected error" in log.read_text(encoding="utf-8"),
                "the tick's failure logged",
            )
            wait_until(lambda: (failing() or {}).get("ticks", 0) >= 3, "three ticks failed, for the status")
            shown = failing()
            assert shown is not None
            assert shown["error"] == "TypeError: the test breaks this tick", shown
            table = site.crawler("status")
            assert "its ticks failing since" in " ".join(table.stdout.split()), table.stdout
            broken.unlink()
            wait_until(lambda: "/a/scheduled-after-the-fault" in site.stored(), "the grab queued after it")
            assert failing() is None, "the record goes once a tick works again"
            service.send_signal(signal.SIGINT)
            service.wait(WAIT_LIMIT)
        finally:
            if service.poll() is None:
                service.kill()
                service.wait()
    text = log.read_text(encoding="utf-8")
    assert service.returncode == 130, text[-4000:]
    said = [line for line in text.splitlines() if "a tick failed with an unexpected error" in line]
    assert len(said) == 1, text[-4000:]
    assert "TypeError: the test breaks this tick (a fault of the scheduler" in said[0], said
    assert text.count("Traceback") == 1, text[-4000:]
    assert re.search(r"the scheduler works again, after \d+ ticks failed with TypeError", text), text[-4000:]


def test_crawler_run_says_once_that_redis_lost_its_data_and_status_shows_it(site: Site) -> None:
    """Redis emptied under `crawler run` (FLUSHALL; a restart without persistence alike) failed no call:
    the service went on, its grab queued again, and neither its log nor `crawler status` said the queue,
    the URLs seen, the dead letters and the counters were gone. It logs one error (its scheduler and worker
    both check), and status says when the data began and when it was lost."""
    site.rule("/a/kept")
    path = site.rules / f"{site.name}.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "schedule: {every: 20m}\n", encoding="utf-8")
    log = site.root / "run.log"
    beats = ("-s", "SUPERVISION_HEARTBEAT_SECONDS=0.5", "-s", "SCHEDULE_TICK_SECONDS=0.5")
    with log.open("w", encoding="utf-8") as stream:
        service = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "run", *FAST_ARGS, *beats],
            env=site.env(),
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=stream,
        )
        try:
            wait_until(lambda: "/a/kept" in site.stored(), "the scheduled grab's article stored")
            client = connect(f"unix://{site.data / 'redis' / 'redis.sock'}")
            try:
                client.flushall()
                # Both the scheduler and the worker have checked since: the grab queued again, the
                # worker's heartbeat written again after the marker was.
                wait_until(lambda: client.hexists(Keys("crawler").since, "lost"), "the loss found")
                lost = float(client.hget(Keys("crawler").since, "lost") or 0)
                wait_until(
                    lambda: any(
                        json.loads(beat)["seen"] > lost + 1 for beat in client.hvals(Keys("crawler").workers)
                    ),
                    "a heartbeat after the loss",
                )
                wait_until(
                    lambda: bool(client.exists(Keys("crawler").grab(site.name))), "the grab queued again"
                )
            finally:
                client.close()
            service.send_signal(signal.SIGINT)
            service.wait(WAIT_LIMIT)
        finally:
            if service.poll() is None:
                service.kill()
                service.wait()
    text = log.read_text(encoding="utf-8")
    said = [line for line in text.splitlines() if "Redis lost the crawler's data" in line]
    assert len(said) == 1, said
    assert "ERROR" in said[0] and "crawler:since, which said it began at" in said[0], said[0]
    status = site.crawler("status")
    assert status.returncode == 0, status.stderr[-4000:]
    at = datetime.fromtimestamp(lost, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown = " ".join(status.stdout.split())
    assert f"Redis's crawler data began at {at}" in shown, shown
    assert f"Redis lost its data at {at} (a FLUSHALL or a restart without persistence): found by " in shown, (
        shown
    )


# --- Redis's disk is full -------------------------------------------------------------------------------


def _refuses_writes(client: redis.Redis) -> bool:
    try:
        client.ping()
    except redis.ResponseError as exc:
        return str(exc).startswith("MISCONF")
    return False


def _on_dev_full(site: Site, name: str) -> Path:
    """The embedded server's file ``name`` made a link to /dev/full, whose writes fail with ENOSPC as on
    a full disk."""
    path = site.data.resolve() / "redis" / name
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/full")
    return path


def test_a_redis_whose_disk_is_full_is_said_at_once_and_status_still_shows_the_queue(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded server's append-only file is /dev/full: its writes fail with ENOSPC, as on a full disk,
    and Redis answers every write, and PING, with MISCONF; it still answers reads. Its last user leaves it
    running: SHUTDOWN would lose the write it could not make."""
    site.rule("/a/full")
    aof = _on_dev_full(site, "appendonly.aof")
    said = (
        f'Redis refuses writes: the disk of its append-only file {aof} is full (Redis says "MISCONF Errors'
        ' writing to the AOF file: No space left on device"); free space on that disk: Redis then takes'
        " writes again by itself, and nothing is lost"
    )
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        record = {"site": site.name, "url": site.server.url("/a/full"), "reason": "HTTP 404 Not Found"}
        client.hset(Keys("crawler").dead, "000000000001", json.dumps(record))  # taken, then not written
        wait_until(lambda: _refuses_writes(client), "Redis to refuse writes")
        client.close()

        # Read by a person, on that disk: status cannot write a byte either (not even its user file).
        status = site.crawler("status", files_writable=False)
        assert status.returncode == 0, status.stderr[-4000:]
        assert "queue 0 requests, 0 leased, 0 waiting (retries, deferred), 1 dead letter" in status.stdout
        assert f"NEEDS ATTENTION {said}" in status.stdout, status.stdout
        report = site.status()
        assert report["queue"]["dead_letters"] == 1
        assert report["redis"]["writes_refused"].startswith(said)
        assert report["attention"] == [site.name, "redis"]

        temp = site.crawler("temp", site.name)
        assert temp.returncode == 1, temp.stdout
        assert f"crawler temp: error: {said}" in temp.stderr, temp.stderr[-4000:]
        requeue = site.crawler("dead", "requeue", "--all")
        assert requeue.returncode == 1 and f"crawler dead requeue: error: {said}" in requeue.stderr, (
            requeue.stderr
        )
        process = redis_server._process
        assert process is not None
    try:
        assert process.poll() is None, "left running, refusing writes"
        assert any("left the embedded Redis server at" in r.getMessage() for r in caplog.records)
    finally:
        process.kill()
        process.wait()


def _user_denied(client: redis.Redis, server: EmbeddedRedis, user: str, command: str) -> str:
    """The Redis URL of ``user``, made on ``server`` by ``client`` with every right but ``command``."""
    client.acl_setuser(user, enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", f"-{command}"])
    return f"unix://{user}:pw@{server.socket_path}"


def _memory_full(client: redis.Redis) -> str:
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", "1")
    return (
        'Redis refuses writes: its memory is full (maxmemory of 1 bytes; Redis says "command not allowed when'
        " used memory > 'maxmemory'.\"); raise its maxmemory (CONFIG SET maxmemory, and in its configuration"
        " file) or free memory: Redis then takes writes again, and nothing it stored is lost"
    )


def _replica(client: redis.Redis) -> str:
    client.replicaof("127.0.0.1", "1")  # a primary that never answers: the replica stays read-only
    return (
        'Redis refuses writes: it is a read-only replica of another Redis at 127.0.0.1:1 (Redis says "You'
        " can't write against a read only replica.\"); set REDIS_URL to that primary, which takes the writes"
    )


def _reader(client: redis.Redis) -> str:
    client.acl_setuser(
        "reader", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@read", "+ping", "+info"]
    )
    return (
        'Redis refuses writes: the user of the Redis URL may not write (Redis says "this user has no'
        " permissions to run the 'set' command or its subcommand\"); give that user the crawler's commands"
        " on its keys (ACL SETUSER <user> on ~<REDIS_KEY_PREFIX>:* +@all), or put a user who has them in the"
        " URL"
    )


@pytest.mark.parametrize("refusing", [_memory_full, _replica, _reader], ids=["oom", "replica", "noperm"])
def test_a_redis_that_answers_ping_but_refuses_writes_is_said_by_temp_and_status(
    site: Site, refusing: Callable[[redis.Redis], str]
) -> None:
    """A Redis at its maxmemory that evicts nothing (OOM), a read-only replica (READONLY) and a user
    without the right to write (NOPERM) answer PING, which was all the start checked: `crawler temp`
    queued its job into the refusal and ended with a traceback, and status said nothing of it."""
    site.rule("/a/refused")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        said = refusing(client)
        url = f"unix://reader:pw@{redis_server.socket_path}" if refusing is _reader else redis_server.url
        try:
            temp = site.crawler("temp", site.name, REDIS_URL=url)
            assert temp.returncode == 1, temp.stdout
            assert f"crawler temp: error: {said}" in temp.stderr, temp.stderr[-4000:]
            status = site.crawler("status", "--format", "json", REDIS_URL=redis_server.url)
            assert status.returncode == 0, status.stderr[-4000:]
            if refusing is not _reader:  # the status's own user may write
                assert json.loads(status.stdout)["redis"]["writes_refused"] == said
        finally:
            client.config_set("maxmemory", "0")
            client.replicaof("NO", "ONE")
            client.close()


def test_a_worker_whose_redis_refuses_a_write_as_its_engine_opens_says_so_not_engine_slot_not_assigned(
    site: Site,
) -> None:
    """The start check's write (SET) can pass and the next write fail: Redis filled its maxmemory in between
    (seen once under load), or a user may run SET and not the rest. The seen-URL filter's first write ran
    as Scrapy's engine built the scheduler, before it had the slot it closes: `crawler worker` ended with
    Scrapy's "RuntimeError: Engine slot not assigned" and a traceback, the refusal lost. A user who may not
    run HSETNX meets that window on every start."""
    site.rule("/a/opening")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        url = _user_denied(client, redis_server, "opener", "hsetnx")
        try:
            worker = site.crawler("worker", REDIS_URL=url, timeout=60)
        finally:
            client.close()
    assert worker.returncode == 1, (worker.stdout, worker.stderr[-4000:])
    assert "Engine slot not assigned" not in worker.stderr, worker.stderr[-4000:]
    assert (
        "crawler worker: error: the user of the Redis URL may not run a command the worker needs (Redis says"
        ' "Command # 1 (HSETNX crawler:bloom:meta capacity 1000000) of pipeline caused error: this user has'
        " no permissions to run the 'hsetnx' command or its subcommand\"); give that user the crawler's"
        " commands on its keys"
    ) in worker.stderr, worker.stderr[-4000:]


def test_a_key_of_another_type_met_as_the_crawl_opens_is_said_with_its_fix_not_to_start_the_worker_again(
    site: Site,
) -> None:
    """A key under the crawler's prefix that another program wrote with another type, met by the seen-URL
    filter's first write as the crawl opens (crawler:bloom:meta a string): `crawler temp` said "Redis failed
    as the worker opened (... WRONGTYPE ...): start the worker again once Redis answers", though Redis
    answered and the user started no worker. It says what `crawler status` says of such a key, and the
    fix."""
    site.rule("/a/wrongtype")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        client.set("crawler:bloom:meta", "another program's")
        try:
            temp = site.crawler("temp", site.name, REDIS_URL=f"unix://{redis_server.socket_path}", timeout=60)
        finally:
            client.close()
    assert temp.returncode == 1, (temp.stdout, temp.stderr[-4000:])
    assert "start the worker again" not in temp.stderr, temp.stderr[-4000:]
    assert (
        "crawler temp: error: Redis answered the crawl's first write with an error (Redis says"
        ' "Command # 1 (HSETNX crawler:bloom:meta capacity 1000000) of pipeline caused error: WRONGTYPE'
        ' Operation against a key holding the wrong kind of value"); a key under crawler: holds another type,'
        " written by another program: give the crawler a prefix of its own (REDIS_KEY_PREFIX), or another"
        " Redis database in REDIS_URL"
    ) in temp.stderr, temp.stderr[-4000:]


def test_status_for_a_user_who_may_not_run_the_commands_it_needs_says_so_without_a_traceback(
    site: Site,
) -> None:
    """A REDIS_URL user with Redis's read commands alone (a monitoring user) may not run every command the
    status uses (TIME, EVALSHA): `crawler status` ended with a traceback (NoPermissionError)."""
    site.rule("/a/reader")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        _reader(client)
        try:
            status = site.crawler("status", REDIS_URL=f"unix://reader:pw@{redis_server.socket_path}")
        finally:
            client.close()
    assert status.returncode == 1, status.stdout
    assert re.search(
        r"crawler status: error: the Redis user reader may not run ([A-Z]+), a command the crawler needs"
        r" \(Redis says \"this user has no permissions to run the '([a-z]+)' command or its subcommand\"\);"
        r" give it to that user \(ACL SETUSER reader \+\2; or every command the crawler needs: ACL SETUSER"
        r" reader on ~crawler:\* \+@all\), or put a user who has it in REDIS_URL; then run the status"
        r" again\n",
        status.stderr,
    ), status.stderr


@pytest.mark.parametrize(
    ("command", "denied", "said"),
    [
        (
            ("dead", "list"),
            "evalsha",
            "this user has no permissions to run the 'evalsha' command or its subcommand",
        ),
        (("sites", "resume"), "time", "The user executing the script can't run this command or subcommand"),
    ],
    ids=["dead", "sites"],
)
def test_a_command_whose_redis_user_is_denied_a_command_says_which_without_a_traceback(
    site: Site, command: tuple[str, ...], denied: str, said: str
) -> None:
    """`crawler dead list` run by a Redis user who may not run EVALSHA, `crawler sites resume` by one who
    may not run TIME (which its script calls) on a paused site ended with a traceback (NoPermissionError,
    or the script's ResponseError): as `temp`, each names the command, the user and the fix in one line,
    exit code 1."""
    site.rule("/a/denied")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        url = _user_denied(client, redis_server, "denied", denied)
        try:
            if command == ("sites", "resume"):
                assert site.crawler("sites", "pause", site.name, REDIS_URL=redis_server.url).returncode == 0
            done = site.crawler(
                *command,
                *(() if command[0] == "dead" else (site.name,)),
                REDIS_URL=url,
            )
        finally:
            client.close()
    _said_denied(done, " ".join(command), "denied", denied, said)


def test_a_command_whose_embedded_redis_refuses_its_default_user_a_command_of_a_script_names_it(
    site: Site,
) -> None:
    """The embedded Redis (no REDIS_URL) whose default user was refused TIME (ACL SETUSER default -time),
    which the script of `crawler sites resume` calls: the command said "may not run a command the crawler
    needs (Redis's ACL LOG names it)", as Redis's reply to a script names no command and the log was read
    only through REDIS_URL. It reads the log of the embedded server while the command holds it, and names
    TIME with the fix, as for a REDIS_URL user."""
    site.rule("/a/denied")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        try:
            assert site.crawler("sites", "pause", site.name).returncode == 0
            client.acl_setuser("default", enabled=True, commands=["-time"])
            done = site.crawler("sites", "resume", site.name)
        finally:
            client.acl_setuser("default", enabled=True, commands=["+time"])
            client.close()
    _said_denied(
        done,
        "sites resume",
        "default",
        "time",
        "The user executing the script can't run this command or subcommand",
    )


def _said_denied(
    done: subprocess.CompletedProcess[str], command: str, user: str, denied: str, said: str
) -> None:
    """`crawler COMMAND` (``done``) ended with exit code 1 and the line of a Redis ``user`` refused the
    command ``denied``, Redis saying ``said``."""
    assert done.returncode == 1, (done.stdout, done.stderr[-4000:])
    assert (
        f"crawler {command}: error: the Redis user {user} may not run {denied.upper()}, a command the crawler"
        " needs (Redis says"
    ) in done.stderr, done.stderr[-4000:]
    assert (
        f'{said}"); give it to that user (ACL SETUSER {user} +{denied}; or every command the crawler needs:'
        f" ACL SETUSER {user} on ~crawler:* +@all), or put a user who has it in REDIS_URL; then run the"
        " command again: what it wrote before the refusal stands, each change whole\n"
    ) in done.stderr, done.stderr[-4000:]


def test_a_redis_that_may_evict_keys_is_said_at_start_and_by_status(site: Site) -> None:
    """A REDIS_URL server with a maxmemory and an eviction policy (allkeys-lru) drops keys when full: the
    queue, leases, attempts, the seen-URL filter, with no error to anyone. Nothing said so, at a crawl's
    start or in status."""
    site.rule("/a/evicting")
    said = (
        "Redis may evict keys: at its maxmemory of 104857600 bytes its maxmemory-policy allkeys-lru drops"
        " keys (it dropped 0 so far), which loses queued requests, leases and the seen-URL filter without a"
        " word; set maxmemory-policy noeviction (`redis-cli CONFIG SET maxmemory-policy noeviction`, and in"
        " its configuration file): a full Redis then refuses writes, which the crawler says and waits out"
    )
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        client.config_set("maxmemory", str(100 * 2**20))
        client.config_set("maxmemory-policy", "allkeys-lru")
        try:
            temp = site.crawler("temp", site.name, REDIS_URL=redis_server.url)
            assert temp.returncode == 0, temp.stderr[-4000:]
            assert f"crawler temp: warning: {said} (REDIS_URL {redis_server.url})" in temp.stderr, temp.stderr
            status = site.crawler("status", REDIS_URL=redis_server.url)
            assert f"NEEDS ATTENTION {said}" in status.stdout, status.stdout
            report = site.status()
            assert report["redis"]["evicts"] == said
            assert "redis" in report["attention"]
        finally:
            client.config_set("maxmemory", "0")
            client.close()


def _refuse_writes(client: redis.Redis, folder: Path) -> None:
    """Make Redis refuse writes, and answer reads: its snapshot (BGSAVE) fails, as on a full disk, and
    ``stop-writes-on-bgsave-error`` (on by default) then refuses every write with MISCONF until a snapshot
    succeeds. It fails because its file's name is that of a folder, which the snapshot cannot replace
    (whoever runs the test, root too)."""
    (folder / "taken.rdb").mkdir()
    (folder / "taken.rdb" / "in-the-way").touch()
    client.config_set("save", "3600 1")
    client.config_set("dbfilename", "taken.rdb")
    client.bgsave()
    wait_until(lambda: _refuses_writes(client), "Redis to refuse writes")


@contextmanager
def _snapshots_failing(client: redis.Redis, folder: Path) -> Iterator[None]:
    """Redis refuses writes while this runs (:func:`_refuse_writes`), and takes them again after."""
    _refuse_writes(client, folder)
    try:
        yield
    finally:
        client.config_set("dbfilename", "dump.rdb")
        client.bgsave()
        wait_until(lambda: not _refuses_writes(client), "Redis to take writes again")
        client.config_set("save", "")


def _scheduler_on(
    tmp_path: Path, server: EmbeddedRedis, url: str | None = None, **settings: Any
) -> tuple[Any, Any, redis.Redis]:
    """A crawler, its leased scheduler and a client of ``server`` (at ``url``, with its user, when given),
    made in the test process with ``settings``: the scheduler has what its open() sets, without its loops
    (they would install a reactor in this process)."""
    from crawler.redisio.queue import LeasedQueue
    from crawler.worker.dupefilter import RedisBloomDupeFilter
    from crawler.worker.scheduler import LeasedScheduler

    spider = sites_spider(tmp_path, url or server.ensure(), **settings)
    crawler = spider.crawler
    scheduler = LeasedScheduler.from_crawler(crawler)
    client = connect(url or server.url)
    scheduler.spider, scheduler.queue = spider, LeasedQueue(client, Keys("crawler"))
    scheduler.df = RedisBloomDupeFilter.from_crawler(crawler)
    return crawler, scheduler, client


@contextmanager
def _scheduler_of_embedded_redis(
    tmp_path: Path, **settings: Any
) -> Iterator[tuple[EmbeddedRedis, Any, Any, redis.Redis]]:
    """An embedded Redis under tmp_path and _scheduler_on's crawler, scheduler and client of it, made with
    ``settings``; the client closed at the end, before the Redis stops."""
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server, **settings)
        try:
            yield server, crawler, scheduler, client
        finally:
            client.close()


def _worker_of_a_user(tmp_path: Path, server: EmbeddedRedis) -> tuple[Any, redis.Redis, Callable[[], None]]:
    """A worker's scheduler whose Redis user is ``worker`` (every right, until the test takes some), a client
    of ``server`` with every right, and one idle turn of the worker: its heartbeat, its leases tended, a
    counter flushed."""
    from crawler.worker.heartbeat import WorkerHeartbeat
    from crawler.worker.stats import RedisStatsCollector

    client = connect(server.ensure())
    client.acl_setuser("worker", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all"])
    crawler, scheduler, _ = _scheduler_on(tmp_path, server, f"unix://worker:pw@{server.socket_path}")
    heartbeat = WorkerHeartbeat.from_crawler(crawler)
    counters = RedisStatsCollector(crawler)

    def idle_turn() -> None:
        heartbeat.beat()
        scheduler.tend_leases()
        counters.inc_value("crawl/fetched/news")
        counters.flush()

    return scheduler, client, idle_turn


def _steady(crawler: Any, turn: Callable[[], None]) -> None:
    """``turn`` (writes Redis takes), and again ``STEADY_SECONDS`` later by the clock the crawler's outage
    goes by from now on: an outage of refused writes is over once writes went through that long."""
    now = [time.monotonic()]
    outage_of(crawler).clock = lambda: now[0]
    turn()
    now[0] += STEADY_SECONDS
    turn()


def _said_of_redis(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if "Redis" in record.getMessage()]


def test_one_expired_lease_put_back_is_logged_in_the_singular(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker that puts back the one lease a killed worker left says so in the singular, as it counts
    any number: "1 expired lease went back to the queue", not "1 expired leases"."""
    from crawler.redisio.queue import LeasedQueue

    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        # A lease whose deadline has passed as it is taken: the killed worker's.
        killed = LeasedQueue(client, Keys("crawler"), lease_seconds=-1)
        assert killed.push(b'{"url": "http://127.0.0.1/a"}', priority=0, site="news", job="j1")
        assert killed.pop().member is not None
        with caplog.at_level(logging.WARNING):
            scheduler.tend_leases()
    said = [record.getMessage() for record in caplog.records if "expired" in record.getMessage()]
    assert said == ["1 expired lease went back to the queue"], said


def test_a_worker_of_some_sites_logs_the_rule_errors_of_those_sites_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``crawler worker --sites news`` loads the rule of news alone: the errors of another site's rule file
    are no concern of its (the workers that serve that site, and the scheduler, log them), where a worker
    of every site logs each of them."""
    from scrapy.utils.test import get_crawler

    from crawler.worker.spider import SitesSpider

    values = spider_settings(tmp_path)
    (tmp_path / "rules" / "typo.yaml").write_text(
        RULE.format(start="http://127.0.0.1/") + "shedule: {every: 5m}\n", encoding="utf-8"
    )
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        settings = {**values, "REDIS_URL": server.ensure()}
        with caplog.at_level(logging.WARNING):
            some = SitesSpider.from_crawler(get_crawler(SitesSpider, settings_dict=settings), sites="news")
        of_some = [record.getMessage() for record in caplog.records]
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            every = SitesSpider.from_crawler(get_crawler(SitesSpider, settings_dict=settings))
        of_every = [record.getMessage() for record in caplog.records]
    assert sorted(some.rules) == ["news"] and sorted(every.rules) == ["news"]
    assert of_some == [], of_some
    assert (some.rule_errors, every.rule_errors) == (0, 1)
    assert len(of_every) == 1 and of_every[0].startswith(f"{tmp_path / 'rules' / 'typo.yaml'}: shedule:"), (
        of_every
    )


def test_a_redis_that_refuses_writes_is_logged_once_though_reads_work_and_once_when_writes_do(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis refuses writes (MISCONF), still answers reads and scripts that write nothing: an idle worker's
    heartbeat and counters fail while its scheduler's polls and validators reads succeed. One outage,
    logged once, not ended by a read: only a write ends it, in one line."""
    from scrapy.http import Request

    from crawler.worker.conditional import ConditionalIndexMiddleware
    from crawler.worker.heartbeat import WorkerHeartbeat
    from crawler.worker.stats import RedisStatsCollector

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server)
        heartbeat = WorkerHeartbeat.from_crawler(crawler)
        conditional = ConditionalIndexMiddleware.from_crawler(crawler)
        counters = RedisStatsCollector(crawler)
        heartbeat.beat()

        def idle_turn() -> None:
            """What an idle worker calls on Redis, every one in turn."""
            heartbeat.beat()
            scheduler.tend_leases()
            assert scheduler.next_request() is None
            counters.inc_value("crawl/fetched/news")
            counters.flush()
            conditional.process_request(Request("http://127.0.0.1/", meta={"site": "news", "job": "j1"}))

        try:
            with caplog.at_level(logging.INFO), _snapshots_failing(client, server.directory):
                for _ in range(3):
                    idle_turn()
                refusing = _said_of_redis(caplog)
                caplog.clear()
            with caplog.at_level(logging.INFO):
                assert scheduler.next_request() is None  # a read: Redis took no write yet
                _steady(crawler, idle_turn)
            back = _said_of_redis(caplog)
        finally:
            client.close()
    assert len(refusing) == 1, refusing
    assert refusing[0].startswith("Redis refuses writes (write this worker's heartbeat: "), refusing
    assert "MISCONF" in refusing[0], refusing
    assert (
        "; it cannot write its snapshot (RDB) file " in refusing[0]
        and "its log says what failed" in refusing[0]
    )
    assert back == [back[0]] and back[0].startswith("Redis takes writes again after "), back
    assert crawler.stats is not None and crawler.stats.get_value("redis/errors") == 6, "each failed write"


def test_a_redis_at_its_maxmemory_is_one_outage_of_refused_writes_though_writes_that_free_memory_work(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis at its maxmemory that evicts nothing refuses the writes that take memory (OOM) and takes
    those that free it (a lease's release, a DEL): each of these ended the outage ("Redis takes writes
    again") and the next refusal began a new one, every turn of an idle worker; and a refusal of a plain
    command or of a pipeline's (redis-py drops the "OOM" of its words) was said as Redis gone away."""
    from crawler.worker.heartbeat import WorkerHeartbeat
    from crawler.worker.stats import RedisStatsCollector

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server)
        heartbeat = WorkerHeartbeat.from_crawler(crawler)
        counters = RedisStatsCollector(crawler)
        heartbeat.beat()
        client.set(b"crawler:spare", b"x")

        def idle_turn() -> None:
            """What an idle worker calls on Redis, a write that frees memory among them."""
            counters.inc_value("crawl/fetched/news")
            counters.flush()
            client.delete(b"crawler:spare")
            outage_of(crawler).ok(wrote=True)
            heartbeat.beat()
            scheduler.tend_leases()

        try:
            with caplog.at_level(logging.INFO):
                said_full = _memory_full(client)
                for _ in range(3):
                    idle_turn()
                refusing = _said_of_redis(caplog)
                caplog.clear()
                client.config_set("maxmemory", "0")
                _steady(crawler, idle_turn)
            back = _said_of_redis(caplog)
        finally:
            client.config_set("maxmemory", "0")
            client.close()
    assert len(refusing) == 1, refusing
    assert refusing[0].startswith("Redis refuses writes (write the site counters, kept for the next try: ")
    assert refusing[0].endswith(said_full.removeprefix("Redis refuses writes: ")), refusing
    assert back == [back[0]] and back[0].startswith("Redis takes writes again after "), back


def test_a_worker_whose_redis_user_loses_its_rights_says_so_with_the_fix_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A running worker whose Redis user lost the right to run its commands (ACL: NOPERM) logged it as
    Redis gone away ("Redis failed ...: the worker goes on"), not with the fix the start check gives. It
    is said once with that fix, and once when the rights are back."""
    _said_while_denied(
        tmp_path,
        caplog,
        {"reset": True, "passwords": ["+pw"], "keys": ["*"], "commands": ["+@read", "+ping"]},
        ["+@all"],
        "it",
    )


def test_a_worker_whose_redis_user_may_not_run_a_command_of_its_scripts_says_so_with_the_fix_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis user who may not run SADD, which the heartbeat's Lua script calls: Redis's error is the
    script's ("The user executing the script can't run this command"), not NOPERM, and names no command.
    The worker logged it as Redis gone ("Redis failed ...") and each write of another command as "Redis is
    back", a pair of lines per turn, without the fix. It is said once with the fix, naming the command
    (Redis's ACL LOG), and ends when the user may run it again."""
    refusing = _said_while_denied(tmp_path, caplog, {"commands": ["-sadd"]}, ["+sadd"], "SADD")
    assert "The user executing the script can't run this command" in refusing, refusing


def test_a_workers_refusal_of_a_command_to_its_user_lasts_until_the_user_may_run_it_not_the_outage_over(
    tmp_path: Path,
) -> None:
    """A temp crawl's patience reads the worker's refusal of a command to its user (RedisOutage.refused_user):
    it lasts while the user may not run the command, and ends as soon as it may, not when the outage is said
    over, after STEADY_SECONDS of writes (a temp crawl of less patience would end once granted)."""
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        scheduler, client, idle_turn = _worker_of_a_user(tmp_path, server)
        outage = outage_of(scheduler.crawler)
        try:
            idle_turn()
            before = outage.refused_user()
            client.acl_setuser("worker", enabled=True, commands=["-sadd"])
            idle_turn()
            during = outage.refused_user()
            client.acl_setuser("worker", enabled=True, commands=["+sadd"])
            idle_turn()
            after = outage.refused_user(), outage.since is not None
        finally:
            client.close()
    assert before is None
    assert during is not None and during[1] == ("command", "sadd"), during
    assert "The user executing the script can't run this command" in str(during[0]), during
    assert after == (None, True), "granted, though the outage is not said over yet"


@pytest.mark.parametrize(
    ("rights", "call", "said"),
    [
        (
            {"commands": ["-sadd", "-acl"]},
            "SADD",
            "the Redis user worker may not run a command the crawler needs (Redis's ACL LOG names it)",
        ),
        (
            {"reset_keys": True, "keys": ["crawler:workers*"]},
            "SET",
            "the Redis user worker may not use the key crawler:queue:news",
        ),
    ],
    ids=["acl-log-refused", "key"],
)
def test_a_temp_crawls_ticks_ask_the_workers_refusal_without_a_connection_of_their_own(
    tmp_path: Path, rights: dict[str, Any], call: str, said: str
) -> None:
    """A worker's user refused a command a script calls while it may not read the ACL LOG (no command named),
    or refused a key in a script (the log names a key, not a command): the temp crawl's tick (every 0.5 s)
    read the refusal anew from the ACL LOG on a connection of its own, opened and closed at each tick (5
    ticks, 5 connections). It reads what the worker's outage read: no connection, the same words."""
    from crawler.cli.crawl import _refusal
    from crawler.worker.connection import server_of

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        scheduler, client, idle_turn = _worker_of_a_user(tmp_path, server)
        crawler = scheduler.crawler
        try:
            idle_turn()
            client.acl_setuser("worker", enabled=True, **rights)
            with pytest.raises(redis.ResponseError) as refused:
                server_of(crawler).eval(f"return redis.call('{call}', ARGV[1], 'x')", 0, "crawler:queue:news")
            outage_of(crawler).failed("take a request", refused.value)
            opened = int(client.info("stats")["total_connections_received"])
            outage = outage_of(crawler)
            refusals = [_refusal(crawler.settings, Keys("crawler"), client, outage) for _ in range(5)]
            opened = int(client.info("stats")["total_connections_received"]) - opened
        finally:
            client.close()
    assert opened == 0, f"{opened} connections for 5 ticks"
    assert all(refusal is not None and said in refusal.said for refusal in refusals), refusals


def _said_while_denied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, deny: dict[str, Any], grant: list[str], named: str
) -> str:
    """What a worker of a user (:func:`_worker_of_a_user`) says of Redis in three turns once the ACL
    ``deny`` (``acl_setuser``'s keywords) is set, checked to be one line with the fix that says the user
    may not run ``named``, and in its steady turns once the commands ``grant`` are, checked to be the
    outage's end; the first line."""
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        scheduler, client, idle_turn = _worker_of_a_user(tmp_path, server)
        try:
            idle_turn()
            client.acl_setuser("worker", enabled=True, **deny)
            with caplog.at_level(logging.INFO):
                for _ in range(3):
                    idle_turn()
                refusing = _said_of_redis(caplog)
                caplog.clear()
                client.acl_setuser("worker", enabled=True, commands=grant)
                _steady(scheduler.crawler, idle_turn)
            back = _said_of_redis(caplog)
        finally:
            client.close()
    assert len(refusing) == 1, refusing
    assert refusing[0].startswith("Redis refuses a command of the worker (write this worker's heartbeat: "), (
        refusing
    )
    assert refusing[0].endswith(
        f"the user of the Redis URL may not run {named}: give that user the crawler's commands on its keys"
        " (ACL SETUSER <user> on ~<REDIS_KEY_PREFIX>:* +@all), or put a user who has them in the URL"
    ), refusing
    assert back == [back[0]] and back[0].startswith("Redis takes writes again after "), back
    return refusing[0]


_AUTHENTICATION_FIX = (
    "put its user and password in the Redis URL (REDIS_URL=redis://USER:PASSWORD@HOST:PORT; the user default"
    " when it has a password alone: redis://:PASSWORD@HOST:PORT), then start the crawler's processes again:"
    " a running one cannot learn them"
)


def test_a_worker_whose_redis_is_given_a_password_says_so_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A running worker whose Redis was given a password (CONFIG SET requirepass; its connections closed,
    so the new ones meet NOAUTH) logged "Redis failed (write this worker's heartbeat: HELLO must be called
    with the client already authenticated, ...): the worker goes on and tries again": Redis's words, no
    fix, as for a Redis gone away. It says Redis asks for a password and what to do, once, and that Redis
    is back when it lets the worker in again."""
    from crawler.worker.heartbeat import WorkerHeartbeat

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, _, client = _scheduler_on(tmp_path, server)
        heartbeat = WorkerHeartbeat.from_crawler(crawler)
        heartbeat.beat()
        try:
            client.config_set("requirepass", "sekret")
            client.client_kill_filter(_type="normal", skipme=True)
            with caplog.at_level(logging.WARNING):
                for _ in range(3):
                    heartbeat.beat()
                away = _said_of_redis(caplog)
            caplog.clear()
            client.config_set("requirepass", "")
            with caplog.at_level(logging.INFO):  # Redis back is good news, said at INFO
                heartbeat.beat()
            back = _said_of_redis(caplog)
        finally:
            client.close()
    assert len(away) == 1, away
    assert away[0].startswith(
        "Redis failed (write this worker's heartbeat): the worker goes on and tries again; Redis asks for a"
        " user and password (it says: "
    ), away
    assert away[0].endswith(_AUTHENTICATION_FIX), away
    assert len(back) == 1 and back[0].startswith("Redis is back after "), back


def test_status_of_a_redis_that_asks_for_a_password_says_so_not_to_start_it(tmp_path: Path) -> None:
    """`crawler status --check` (and every command) on a REDIS_URL server that asks for a password the URL
    lacks said "cannot reach Redis at URL (REDIS_URL): authentication failed (Authentication required.); put
    the right user and password in the URL; start it or unset REDIS_URL to use the embedded server": Redis
    runs, so "start it" is no fix. It says what Redis wants and the fix alone."""
    from crawler.redisio.connection import resolve_redis_url

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        url = server.ensure()
        client = connect(url)
        try:
            client.config_set("requirepass", "sekret")
            with pytest.raises(RedisUnavailableError) as raised:
                resolve_redis_url(url, tmp_path / "unused", reads_only=True)
        finally:
            client.config_set("requirepass", "")
            client.close()
    message = str(raised.value)
    assert message.startswith(
        f"cannot use Redis at {url} (REDIS_URL): Redis asks for a user and password (it says: "
    ), message
    assert message.endswith(_AUTHENTICATION_FIX), message


def test_a_redis_at_its_maxclients_is_said_to_run_with_the_fix_not_to_be_started(site: Site) -> None:
    """`crawler status` (and every command) on a REDIS_URL server that has as many clients as its maxclients
    allows said "cannot reach Redis at URL (REDIS_URL): max number of clients reached; start it or unset
    REDIS_URL to use the embedded server": Redis runs, so "start it" is untrue. It says Redis runs, how
    many clients it takes and the fix; so does a connection of a worker (:func:`connect`)."""
    site.rule("/a/one")
    with EmbeddedRedis(site.data / "redis", watch_seconds=0) as server:
        url = server.ensure()
        client = connect(url)
        try:
            client.config_set("maxclients", client.info("clients")["connected_clients"])
            done = site.crawler("status", REDIS_URL=url)
            with pytest.raises(RedisUnavailableError) as raised:
                connect(url)
        finally:
            client.config_set("maxclients", 10000)
            client.close()
    assert done.returncode == 1, done.stderr
    # Redis writes its refusal and closes the connection: the client reads it, or (on a Unix socket, where
    # the close often comes first) its PING meets a closed socket (EPIPE); either says Redis runs and why.
    for said in (done.stderr.strip(), str(raised.value)):
        assert said.removeprefix("crawler status: error: ").startswith(f"cannot use Redis at {url}"), said
        assert "start it" not in said, said
        assert "raise maxclients" in said, said
        assert (
            "Redis runs but takes no new connection (it says: max number of clients reached); it has as many"
            " clients as its maxclients allows"
            in said
            or "Redis took the connection and closed it at once (Broken pipe): it runs but turns new"
            " connections away; at its maxclients it does so"
            in said
        ), said


def _ticks_of_half_steady() -> Callable[[], float]:
    """A clock for a scheduler's outages that each read puts STEADY_SECONDS / 2 later: it works again two
    ticks after Redis takes writes again, not STEADY_SECONDS of the test's time."""
    return itertools.count(0.0, STEADY_SECONDS / 2).__next__


def test_a_scheduler_whose_redis_refuses_writes_says_why_and_the_fix_once_and_when_it_works_again(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """The scheduler of `crawler run` or `crawler schedule` on a Redis at its maxmemory (or a read-only
    replica, or one that cannot write its disk) logged "a tick failed (command not allowed when used memory >
    'maxmemory'.); trying again every tick" and nothing of what to do, where a worker beside it said the
    maxmemory and the fix. It says them too, once, and when it works again."""
    import threading

    from crawler.rules import load_rule
    from crawler.schedule.grabs import GrabScheduler

    site.rule("/a/one")
    rule = load_rule(site.rules / f"{site.name}.yaml")
    stop = threading.Event()
    with EmbeddedRedis(site.data / "redis", watch_seconds=0) as server, caplog.at_level(logging.INFO):
        client = connect(server.ensure())
        client.config_set("maxmemory", 1)
        scheduler = GrabScheduler(client, Keys("crawler"), tick_seconds=0.05)
        scheduler.monotonic = _ticks_of_half_steady()
        ticking = threading.Thread(target=scheduler.run, args=(lambda: [rule], stop))
        ticking.start()
        try:
            wait_until(lambda: "a tick failed" in caplog.text, "the scheduler's first failed tick")
            time.sleep(0.5)  # ten ticks more, each refused
            client.config_set("maxmemory", 0)
            wait_until(lambda: "the scheduler works again" in caplog.text, "the scheduler to work again")
        finally:
            stop.set()
            ticking.join(WAIT_LIMIT)
            client.close()
    failed = [record.getMessage() for record in caplog.records if "a tick failed" in record.getMessage()]
    assert len(failed) == 1, failed
    assert "; Redis refuses writes: its memory is full (maxmemory of 1 bytes;" in failed[0], failed[0]
    assert "raise its maxmemory (CONFIG SET maxmemory, and in its configuration file)" in failed[0], failed[0]


def test_a_scheduler_whose_redis_memory_hovers_at_its_maxmemory_says_one_failure_not_a_pair_each_tick(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis at its maxmemory (noeviction) whose memory hovers at the limit refuses a tick's writes (OOM),
    takes the next tick's, refuses the one after: the scheduler said "a tick failed" and "the scheduler works
    again" at every other tick (35 pairs in 70 ticks here), up to a pair each 10 s of its 5-s ticks. As a
    worker's outage of refused writes (RedisOutage), it works again once its ticks went through for
    STEADY_SECONDS with none refused and Redis taking writes; a refusal after that is a new failure, said at
    once."""
    from crawler.rules import load_rule
    from crawler.schedule.grabs import GrabScheduler

    site.rule("/a/one")
    rule = load_rule(site.rules / f"{site.name}.yaml")
    with EmbeddedRedis(site.data / "redis", watch_seconds=0) as server, caplog.at_level(logging.INFO):
        client = connect(server.ensure())
        scheduler = GrabScheduler(client, Keys("crawler"), tick_seconds=0)
        now = [1000.0]
        scheduler.monotonic = lambda: now[0]
        # Full at the odd ticks of the first 70 (the scheduler's rule errors, written each tick, refused),
        # not after; full again at the last.
        full = [tick < 70 and tick % 2 == 1 for tick in range(90)] + [True]

        class Ticks(threading.Event):
            """Each wait between two ticks is a second of the scheduler's clock; Redis full or not at the
            next tick as ``full`` says, and the scheduler stopped after the last."""

            count = 0

            def wait(self, timeout: float | None = None) -> bool:
                self.count += 1
                now[0] += 1.0
                if self.count == len(full):
                    self.set()
                else:
                    client.config_set("maxmemory", 1 if full[self.count] else 0)
                return self.is_set()

        try:
            scheduler.run(lambda: [rule], Ticks(), rule_errors=lambda: {"other": "other.yaml: broken"})
        finally:
            client.config_set("maxmemory", 0)
            client.close()
    said = [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if "a tick failed" in record.getMessage() or "works again" in record.getMessage()
    ]
    assert [level for level, _ in said] == ["ERROR", "INFO", "ERROR"], said
    assert "; Redis refuses writes: its memory is full (maxmemory of 1 bytes;" in said[0][1], said
    assert said[1][1].endswith(": the scheduler works again"), said
    assert "; Redis refuses writes: its memory is full" in said[2][1], said


def test_a_scheduler_says_an_outage_that_changes_kind_again_and_that_it_works_again_as_info(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis out of the scheduler's reach, then back at its maxmemory: the scheduler logged "a tick failed
    (... No such file or directory ...)" once and nothing when the outage became one of a Redis refusing
    writes, whose cause and fix it says in a first failure (a worker says it again); and "the scheduler
    works again" was a WARNING, where the worker's "Redis is back" is INFO. It says each kind of outage
    once, and that it works again at INFO."""
    import threading

    from crawler.rules import load_rule
    from crawler.schedule.grabs import GrabScheduler

    site.rule("/a/one")
    rule = load_rule(site.rules / f"{site.name}.yaml")
    stop = threading.Event()
    with EmbeddedRedis(site.data, watch_seconds=0) as server, caplog.at_level(logging.INFO):
        other = connect(server.ensure())
        client = connect(server.url)
        pool = client.connection_pool
        scheduler = GrabScheduler(client, Keys("crawler"), tick_seconds=0.05)
        scheduler.monotonic = _ticks_of_half_steady()
        # Its lead lapses in the outage: the SET that takes it again is a write Redis can refuse.
        ticking = threading.Thread(
            target=scheduler.run, args=(lambda: [rule], stop), kwargs={"leader_seconds": 0.2}
        )
        ticking.start()
        try:
            wait_until(lambda: "active scheduler" in caplog.text, "the scheduler to lead")
            socket_path = pool.connection_kwargs["path"]
            pool.connection_kwargs["path"] = str(site.root / "gone.sock")  # Redis unreachable: down
            pool.disconnect()
            pool.reset()  # its connections made anew, to that path
            wait_until(lambda: "a tick failed" in caplog.text, "the scheduler's first failed tick")
            time.sleep(0.5)  # its lead lapsed
            other.config_set("maxmemory", 1)
            pool.connection_kwargs["path"] = socket_path  # back, refusing writes
            pool.disconnect()
            pool.reset()
            wait_until(lambda: caplog.text.count("a tick failed") == 2, "the outage said again, refusing")
            time.sleep(0.5)  # ten ticks more, each refused
            other.config_set("maxmemory", 0)
            wait_until(lambda: "the scheduler works again" in caplog.text, "the scheduler to work again")
        finally:
            stop.set()
            ticking.join(WAIT_LIMIT)
            client.close()
            other.close()
    said = [
        (record.levelno, record.getMessage())
        for record in caplog.records
        if "a tick failed" in record.getMessage() or "works again" in record.getMessage()
    ]
    assert [level for level, _ in said] == [logging.ERROR, logging.ERROR, logging.INFO], said
    assert "No such file or directory" in said[0][1], said
    assert "; Redis refuses writes: its memory is full (maxmemory of 1 bytes;" in said[1][1], said
    assert said[2][1].endswith(": the scheduler works again"), said


def test_a_worker_whose_redis_user_loses_scripts_alone_logs_one_outage_and_one_recovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis user who loses EVALSHA and EVAL (ACL -@scripting, NOPERM) but may still SET: the write
    check (a SET) passed, so every successful write of a turn (the site counters' pipeline) ended the
    outage and the next script began one: "Redis refuses a command" and "Redis takes writes again" on every
    turn. The outage ends when the user may run the refused command again, and the requests the worker
    held through it are done after it."""
    from scrapy.http import Request

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        scheduler, client, idle_turn = _worker_of_a_user(tmp_path, server)
        try:
            for page in ("a", "b"):
                meta = {"site": "news", "job": "j1"}
                assert scheduler.enqueue_request(Request(f"http://127.0.0.1/{page}", meta=meta))
            held = [scheduler.next_request(), scheduler.next_request()]
            idle_turn()
            client.acl_setuser("worker", enabled=True, commands=["-@scripting"])
            with caplog.at_level(logging.INFO):
                for _ in range(3):
                    idle_turn()
                refusing = _said_of_redis(caplog)
                caplog.clear()
                client.acl_setuser("worker", enabled=True, commands=["+@scripting"])
                _steady(scheduler.crawler, idle_turn)
            back = _said_of_redis(caplog)
            done = [
                scheduler.queue.ack(request.meta["lease"], site="news", job="j1")
                for request in held
                if request is not None
            ]
            left = (len(scheduler.queue), scheduler.queue.leased())
        finally:
            client.close()
    assert len(refusing) == 1, refusing
    assert refusing[0].startswith("Redis refuses a command of the worker (write this worker's heartbeat: "), (
        refusing
    )
    assert "'evalsha'" in refusing[0], refusing
    assert back == [back[0]] and back[0].startswith("Redis takes writes again after "), back
    assert done == [True, True], "each request held through the outage is done after it"
    assert left == (0, 0)


def test_a_redirect_whose_hand_on_meets_a_redis_outage_lets_its_lease_expire(tmp_path: Path) -> None:
    """An article link redirected while Redis is away: the seen filter's check of where it leads fails. The
    lease must leave the worker's hold (it expires and goes back to the queue); held, the worker renewed it
    for ever and the crawl never ended (seen in bench/chaos.py: two redirected articles, pending 2)."""
    from scrapy.http import Request

    from crawler.requests import Work, push

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        _, scheduler, client = _scheduler_on(tmp_path, server)
        meta = {"site": "news", "job": "j1", "kind": "article"}
        request = Request("http://127.0.0.1/a.html", meta=meta, dont_filter=True)
        assert push(scheduler.queue, request, scheduler.spider)
        taken = scheduler.next_request()
        assert taken is not None
        lease = Work.of(taken).lease
        assert lease in scheduler.held
        moved = taken.replace(
            url="http://127.0.0.1/moved/a.html",
            meta={**taken.meta, "redirect_times": 1, "redirect_urls": [taken.url]},
        )
        client.shutdown(nosave=True)
        client.close()
        assert scheduler.enqueue_request(moved) is False
    assert lease not in scheduler.held


def test_an_embedded_redis_whose_files_cannot_be_written_is_said_without_a_traceback(site: Site) -> None:
    """Its config file is /dev/full: written at every start, it fails with ENOSPC, as on a full disk."""
    site.rule("/a/full")
    config = _on_dev_full(site, "redis.conf")
    said = (
        f"cannot start the embedded Redis: cannot write {config}: No space left on device; free space on"
        f" the disk of {config.parent}, then run the command again"
    )
    for command in (("status",), ("temp", site.name)):
        done = site.crawler(*command)
        assert done.returncode == 1, done.stdout
        assert f"crawler {command[0]}: error: {said}" in done.stderr, done.stderr[-4000:]
        assert "Traceback" not in done.stderr


def test_a_data_folder_under_a_file_names_that_file_not_the_disk_space(site: Site) -> None:
    """``--data-dir`` under a file (as ``/etc/hostname/x``): the embedded Redis cannot make its folder
    (ENOTDIR); the error names the file in the way, and says nothing of disk space."""
    site.rule("/a/one")
    in_the_way = site.root / "hostname"
    in_the_way.write_text("a file\n", encoding="utf-8")
    data = in_the_way / "x"
    said = (
        f"cannot start the embedded Redis: cannot write {data / 'redis'}: Not a directory; {in_the_way} is a"
        " file, not a folder: move it away, or give another data folder, then run the command again"
    )
    done = site.crawler("--data-dir", str(data), "temp", site.name)
    assert done.returncode == 1, done.stdout
    assert f"crawler temp: error: {said}" in done.stderr, done.stderr[-4000:]
    assert "free space" not in done.stderr
    # The commands that only read the service's state start no Redis where no data folder is.
    for command in (("status",), ("dead", "list")):
        done = site.crawler("--data-dir", str(data), *command)
        assert done.returncode == 2, done.stdout
        assert (
            f"crawler {' '.join(command)}: error: no data folder {str(data)!r}: nothing was crawled there"
            in done.stderr
        )


def test_a_data_folder_that_cannot_be_written_is_the_folder_named_to_make_writable(site: Site) -> None:
    """The embedded Redis's folder cannot be made in a data folder marked immutable (``chattr +i``, which
    root obeys, unlike permissions): the folder to make writable is the data folder, which exists, not
    its ``redis`` folder, which does not."""
    site.rule("/a/one")
    data = site.root / "readonly-data"
    data.mkdir()
    if subprocess.run(["chattr", "+i", str(data)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no read-only folder can be made as root")
    try:
        done = site.crawler("--data-dir", str(data), "temp", site.name)
    finally:
        subprocess.run(["chattr", "-i", str(data)], check=True)
    assert done.returncode == 1, done.stdout
    assert (
        f"cannot start the embedded Redis: cannot write {data / 'redis'}: Operation not permitted;"
        f" make {data} writable by the crawler's user, or give another data folder, then run the command"
        " again"
    ) in done.stderr, done.stderr[-4000:]


def test_a_file_where_the_embedded_redis_keeps_its_users_is_named_and_no_server_is_left(site: Site) -> None:
    site.rule("/a/one")
    users = site.data.resolve() / "redis" / "users"
    users.parent.mkdir(parents=True)
    users.write_text("a file\n", encoding="utf-8")
    for command in (("status",), ("temp", site.name)):
        done = site.crawler(*command)
        assert done.returncode == 1, done.stdout
        assert "which keeps the embedded Redis running for this process: File exists;" in done.stderr
        assert f"; {users} is a file, not a folder: move it away" in done.stderr, done.stderr[-4000:]
        assert not (users.parent / "redis.pid").exists(), "the server started for the command is stopped"


@pytest.mark.parametrize(
    ("number", "advice"),
    [
        (errno.ENOSPC, "free space on the disk of {folder}"),
        (errno.EDQUOT, "free space on the disk of {folder}"),
        (
            errno.EFBIG,
            "a file in {folder} may grow no larger (`ulimit -f`, or its file system's limit): raise the"
            " limit, or give another data folder",
        ),
        (errno.EACCES, "make {folder} writable by the crawler's user, or give another data folder"),
        (errno.EPERM, "make {folder} writable by the crawler's user, or give another data folder"),
        (errno.EROFS, "make {folder} writable by the crawler's user, or give another data folder"),
        (errno.ENOENT, "{folder} takes no new file or folder (a system folder): give another data folder"),
        (errno.EIO, ""),
    ],
)
def test_the_advice_for_a_folder_that_cannot_be_written_fits_the_error(
    tmp_path: Path, number: int, advice: str
) -> None:
    """Errors a test cannot cause as root on a real disk (permissions, a read-only or full file system)
    are made by hand; the advice is the same function's as for the files above."""
    folder = tmp_path / "redis"
    folder.mkdir()
    exc = OSError(number, os.strerror(number), str(folder / "redis.conf"))
    assert folder_advice(exc, folder) == advice.format(folder=folder)


def test_no_advice_is_given_for_a_file_whose_folder_was_removed_meanwhile(tmp_path: Path) -> None:
    """ENOENT in a folder that is there is one that takes no new entry (/proc); in a folder removed since
    (the data folder deleted under a running worker), the error alone says what is wrong."""
    gone = tmp_path / "data" / "redis"
    exc = OSError(errno.ENOENT, os.strerror(errno.ENOENT), str(gone / "redis.conf"))
    assert folder_advice(exc, gone) == ""


def test_the_advice_for_a_data_folder_inside_a_folder_the_user_cannot_search_names_a_folder_it_sees(
    tmp_path: Path,
) -> None:
    """A data folder under a folder the crawler's user may not enter (mode 0700 of another user): making
    its redis folder fails with EACCES, and so does looking whether that folder or the data folder exists;
    the advice names the deepest folder above them the user sees, rather than failing itself. Run as
    nobody in a child process (root may enter any folder)."""
    folder = tmp_path / "locked" / "data" / "redis"

    def make() -> str:
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            return f"{exc.errno} {folder_advice(exc, folder)}"
        return "made"

    outcome = _as_nobody_under_a_locked_folder(tmp_path, make)
    number, _, advice = outcome.partition(" ")
    assert number == str(errno.EACCES), outcome
    named = re.fullmatch(r"make (.+) writable by the crawler's user, or give another data folder", advice)
    assert named is not None, outcome
    assert Path(named.group(1)) in folder.parents and Path(named.group(1)).is_dir(), outcome


@pytest.mark.parametrize("number", [errno.ENOTDIR, errno.EEXIST])
def test_the_advice_for_a_file_in_the_way_under_a_folder_the_user_cannot_search_names_that_folder(
    number: int,
) -> None:
    """Looking for the file in the way of a folder (ENOTDIR, EEXIST) under a folder the crawler's user may
    not enter (mode 0700 of another user) cannot tell what is in it: the advice names that folder to make
    searchable, rather than failing itself (PermissionError) or naming nothing. Made by hand, as nobody in
    a child process (root may enter any folder), under a folder of /tmp: pytest's own folders are root's
    alone, and nobody could not even reach the locked one."""
    with tempfile.TemporaryDirectory() as name:
        top = Path(name)
        folder = top / "locked" / "data" / "redis"
        (top / "locked" / "data").mkdir(parents=True)
        outcome = _as_nobody_under_a_locked_folder(
            top,
            lambda: folder_advice(OSError(number, os.strerror(number), str(folder / "redis.conf")), folder),
        )
        assert outcome == (
            f"the crawler's user may not search {top / 'locked'}: make it readable and searchable by that"
            " user, or give another data folder"
        ), outcome


def _as_nobody_under_a_locked_folder(top: Path, outcome_of: Callable[[], str]) -> str:
    """What ``outcome_of`` gives (or the exception it raised) when called as nobody, in a child process,
    with ``top/locked`` made a folder nobody cannot enter (mode 0700 of root; root may enter any folder)."""
    locked = top / "locked"
    locked.mkdir(exist_ok=True)
    reading, writing = os.pipe()
    os.chmod(top, 0o755)
    os.chmod(locked, 0o700 if os.geteuid() == 0 else 0)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's outcome is read by the parent
        os.close(reading)
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            outcome = outcome_of()
        except BaseException as exc:  # noqa: BLE001 - anything the advice raised, told to the parent
            outcome = f"raised {exc!r}"
        os.write(writing, outcome.encode())
        os._exit(0)
    os.close(writing)
    try:
        with os.fdopen(reading, "rb") as pipe:
            outcome = pipe.read().decode()
        os.waitpid(child, 0)
    finally:
        os.chmod(locked, 0o700)
    return outcome


def test_backoffs_and_validators_log_a_redis_outage_once_not_at_each_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Per-page Redis calls of the backoff and the conditional requests report through the worker's one
    outage: one line for a Redis away, every failure counted (a page's job counters go with its
    acknowledgement: test_a_jobs_counts_of_a_page_go_with_its_acknowledgement_once)."""
    from scrapy.http import HtmlResponse, Request

    from crawler.worker.backoff import BackoffMiddleware
    from crawler.worker.conditional import ConditionalIndexMiddleware

    with EmbeddedRedis(tmp_path / "redis") as server:  # made with Redis there, then used without it
        crawler = sites_spider(tmp_path, server.url).crawler
        backoff = BackoffMiddleware.from_crawler(crawler)
        conditional = ConditionalIndexMiddleware.from_crawler(crawler)
    with caplog.at_level(logging.WARNING):
        for n in range(3):
            meta = {"site": "news", "kind": "index", "job": "j1", "job_kind": "grab"}
            request = Request(f"http://news.test/{n}", meta=meta)
            conditional.process_request(request)
            backoff.process_response(request, HtmlResponse(request.url, status=429, request=request))
    said = [record.getMessage() for record in caplog.records if "Redis" in record.getMessage()]
    assert len(said) == 1 and said[0].startswith("Redis failed (read http://news.test/0's validators"), said
    assert crawler.stats is not None and crawler.stats.get_value("redis/errors") == 6


def test_seeds_unreadable_as_the_crawl_starts_are_one_outage_line_and_no_start_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis gone as the crawl starts (killed, restarting): reading the seeds is an outage said in one line,
    not a traceback from Scrapy's start; the idle signal reads them once Redis is back."""
    import asyncio

    with EmbeddedRedis(tmp_path / "redis") as server:
        spider = sites_spider(tmp_path, server.url)
    # The server is gone now.

    async def started() -> list[object]:
        return [request async for request in spider.start()]

    with caplog.at_level(logging.ERROR):
        assert asyncio.run(started()) == []
    (said,) = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert said.startswith("Redis failed (read the seeds as the crawl starts:"), said
    assert not any(record.exc_info for record in caplog.records)


def test_an_outage_of_a_redis_gone_that_comes_back_refusing_writes_says_so_once(
    redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis gone (a connection error), then back but refusing writes (its disk full): the outage is said
    once as Redis gone, once more as Redis refusing writes, and its reminders say which; a read does not
    end it, a write does."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from crawler.worker.connection import RedisOutage

    now = [1000.0]
    outage = RedisOutage(get_crawler(Spider, settings_dict={"REDIS_URL": redis_server}), clock=lambda: now[0])
    misconf = redis.ResponseError("MISCONF Errors writing to the AOF file: No space left on device")
    with caplog.at_level(logging.INFO, logger="crawler.worker.connection"):
        outage.failed("write this worker's heartbeat", redis.ConnectionError("Connection refused"))
        outage.failed("write this worker's heartbeat", misconf)
        outage.failed("write this worker's heartbeat", misconf)
        outage.ok(wrote=False)
        now[0] += 120  # a reminder is due
        outage.failed("write this worker's heartbeat", misconf)
        outage.ok(wrote=True)
        now[0] += STEADY_SECONDS
        outage.ok(wrote=True)
    said = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert [level for level, _ in said] == ["ERROR", "ERROR", "WARNING", "INFO"], said
    assert said[0][1].startswith("Redis failed (write this worker's heartbeat: Connection refused)")
    assert said[1][1].startswith("Redis refuses writes (write this worker's heartbeat: MISCONF"), said
    assert said[2][1].startswith("Redis still refuses writes after "), said
    assert said[3][1].startswith("Redis takes writes again after "), said


def test_a_redis_whose_memory_hovers_at_its_maxmemory_is_one_outage_not_a_pair_of_lines_each_refusal(
    redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis at its maxmemory (noeviction) whose memory hovers at the limit refuses a write (OOM), takes
    the next, refuses the one after: "Redis refuses writes" and "Redis takes writes again" were said 10-19
    times in 20 s by each process (the fault hunt). It is one outage, reminded once a minute, said over
    once writes went through for STEADY_SECONDS with none refused; a refusal after that is a new outage,
    said at once."""
    from redis.exceptions import OutOfMemoryError
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from crawler.worker.connection import RedisOutage

    now = [1000.0]
    outage = RedisOutage(get_crawler(Spider, settings_dict={"REDIS_URL": redis_server}), clock=lambda: now[0])
    full = OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")
    with caplog.at_level(logging.INFO, logger="crawler.worker.connection"):
        for _ in range(70):  # a refusal a second, a write taken half a second after each
            outage.failed("write the site counters", full)
            now[0] += 0.5
            outage.ok(wrote=True)
            now[0] += 0.5
        hovered = [(record.levelname, record.getMessage()) for record in caplog.records]
        caplog.clear()
        while now[0] < 1070.0 + STEADY_SECONDS:  # writes go through, none refused
            outage.ok(wrote=True)
            now[0] += 2.0
        outage.ok(wrote=True)
        steady = [(record.levelname, record.getMessage()) for record in caplog.records]
        caplog.clear()
        outage.failed("write the site counters", full)
        again = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert [level for level, _ in hovered] == ["ERROR", "WARNING"], hovered
    assert hovered[0][1].startswith("Redis refuses writes (write the site counters: "), hovered
    assert hovered[1][1].startswith("Redis still refuses writes after 60 s: "), hovered
    assert steady == [("INFO", "Redis takes writes again after 69.5 s")], steady
    assert [level for level, _ in again] == ["ERROR"], again
    assert again[0][1].startswith("Redis refuses writes (write the site counters: "), again


def test_redis_back_is_said_by_temp_as_a_note_as_the_worker_logs_it_at_info(
    redis_server: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """Redis back (or taking writes again) is good news: the worker logs it at INFO, and a command that
    crawls for a person (temp) says it as a note, not "crawler temp: warning: Redis is back after 11.4 s";
    its other INFO records are not said."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from crawler.cli.crawl import _warnings_said
    from crawler.worker.connection import RedisOutage

    now = [1000.0]
    outage = RedisOutage(get_crawler(Spider, settings_dict={"REDIS_URL": redis_server}), clock=lambda: now[0])
    misconf = redis.ResponseError("MISCONF Errors writing to the AOF file: No space left on device")
    with caplog.at_level(logging.INFO), _warnings_said():
        outage.failed("write this worker's heartbeat", redis.ConnectionError("Connection refused"))
        outage.ok(wrote=True)
        outage.failed("write this worker's heartbeat", misconf)
        outage.ok(wrote=True)
        now[0] += STEADY_SECONDS
        outage.ok(wrote=True)
        logging.getLogger("crawler.worker.process").info("an INFO record of the crawl's")
    said = capsys.readouterr().err.splitlines()
    back = [line.split(": ", 1)[1] for line in said if " again after " in line or " is back after " in line]
    assert len(back) == 2, said
    assert re.fullmatch(r"note: Redis is back after [0-9.]+ s", back[0]), back
    assert re.fullmatch(r"note: Redis takes writes again after [0-9.]+ s", back[1]), back
    assert not any("an INFO record" in line for line in said), said


def test_a_spider_that_opens_while_redis_is_away_reads_its_pages_once_redis_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose spider opens while Redis is away (killed between the scheduler's start and the
    spider's open): the open reads nothing from Redis that the spider cannot do without, so it fails in
    no part (it raised a ConnectionError from its Bloom filter's first read, left the spider without its
    settings, and every page it read later was a dead letter, "'SitesSpider' object has no attribute
    'regex_page_seconds'", index pages too, whose links were never found); once Redis is back, an index
    page's links are marked seen and queued, and the sites' politeness is written a second later."""
    import twisted.internet
    from scrapy.http import HtmlResponse, Request
    from twisted.internet.task import Clock

    from crawler.redisio.queue import LeasedQueue

    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        spider = sites_spider(tmp_path, url)
        os.kill(redis_server.pid or 0, signal.SIGKILL)
        wait_until(lambda: not _answers(url), "the killed Redis to stop answering")
        # The open's retry of the sites' politeness runs on the reactor: a clock here, as importing
        # twisted.internet.reactor would install the default reactor in the test process, which every later
        # test making a crawler (on the asyncio reactor) would fail on.
        clock = Clock()
        monkeypatch.setattr(twisted.internet, "reactor", clock, raising=False)
        monkeypatch.setitem(sys.modules, "twisted.internet.reactor", clock)
        spider.opened()
        redis_server.ensure()
        assert not connect(url).exists(Keys("crawler").polite("news"))
        clock.advance(1.0)
        assert connect(url).exists(Keys("crawler").polite("news")), "the politeness written at the retry"
        links = "".join(f'<li><a href="/a/{n}">{n}</a></li>' for n in range(3))
        request = Request("http://127.0.0.1/", meta={"site": "news", "kind": "index", "job": "j1"})
        response = HtmlResponse(
            "http://127.0.0.1/", body=f"<ul class='news'>{links}</ul>".encode(), request=request
        )
        assert [out for out in spider.parse_index(response) if isinstance(out, Request)] == []
        queue = LeasedQueue(connect(url), Keys("crawler"))
        assert len(queue) == 3 and spider.bloom.count() == 3, "marked seen and queued once Redis is back"


def test_a_spider_that_opens_while_redis_is_away_says_the_outage_once_not_at_each_retry_of_its_politeness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A temp crawl whose Redis was made a replica (REPLICAOF) as its spider opened logged "Redis failed (set
    the sites' politeness: ... -READONLY You can't write against a read only replica.): the worker goes on
    and tries again in 1 s" at each second of it (9 lines in 9 s), beside the worker's one line for the
    outage. The retries are calls of that outage now: one line, and one when Redis is back."""
    import twisted.internet
    from twisted.internet.task import Clock

    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        spider = sites_spider(tmp_path, url)
        os.kill(redis_server.pid or 0, signal.SIGKILL)
        wait_until(lambda: not _answers(url), "the killed Redis to stop answering")
        clock = Clock()  # as in the test above: the retry runs on the reactor
        monkeypatch.setattr(twisted.internet, "reactor", clock, raising=False)
        monkeypatch.setitem(sys.modules, "twisted.internet.reactor", clock)
        with caplog.at_level(logging.INFO, logger="crawler"):
            spider.opened()
            for _ in range(5):
                clock.advance(1.0)
            redis_server.ensure()
            clock.advance(1.0)
        assert connect(url).exists(Keys("crawler").polite("news")), (
            "the politeness written once Redis is back"
        )
    said = [record.getMessage() for record in caplog.records if record.name.startswith("crawler.worker")]
    failed = [line for line in said if line.startswith("Redis failed")]
    assert len(failed) == 1, said
    assert failed[0].startswith("Redis failed (set the sites' politeness, tried again every second: "), failed
    assert len([line for line in said if line.startswith("Redis is back after")]) == 1, said


def test_a_crawl_delay_robots_txt_no_longer_asks_for_while_redis_is_away_is_written_once_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A robots.txt read again that no longer asks for its crawl-delay puts the site back to its rule's
    delay (crawl_delay 0 in Redis). Redis away at that moment: the outage is said once by the worker's
    outage handling, not an ERROR traceback from the robots_parsed signal's handler, and the crawl-delay is
    written once Redis is back (tried again every second)."""
    import twisted.internet
    from scrapy import Request, signals
    from scrapy.robotstxt import ProtegoRobotParser
    from twisted.internet.task import Clock

    polite = Keys("crawler").polite("news")
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        spider = sites_spider(tmp_path, url)
        clock = Clock()  # the retry runs on the reactor
        monkeypatch.setattr(twisted.internet, "reactor", clock, raising=False)
        monkeypatch.setitem(sys.modules, "twisted.internet.reactor", clock)
        request = Request("http://127.0.0.1/a/1", meta={"site": "news", "slot": "news"})

        def parsed(robots: bytes) -> None:
            parser = ProtegoRobotParser.from_crawler(spider.crawler, robots)
            spider.crawler.signals.send_catch_log(
                signal=signals.robots_parsed, robotparser=parser, request=request
            )

        parsed(b"User-agent: *\nCrawl-delay: 5\n")
        assert connect(url).hget(polite, "crawl_delay") == b"5.0"
        os.kill(redis_server.pid or 0, signal.SIGKILL)
        wait_until(lambda: not _answers(url), "the killed Redis to stop answering")
        with caplog.at_level(logging.INFO):
            parsed(b"User-agent: *\nDisallow:\n")
            for _ in range(3):
                clock.advance(1.0)
            redis_server.ensure()
            clock.advance(1.0)
        assert connect(url).hget(polite, "crawl_delay") == b"0.0", "the rule's delay, once Redis is back"
    tracebacks = [record.getMessage() for record in caplog.records if record.exc_info is not None]
    assert tracebacks == [], "no 'Error caught on signal handler' with its traceback"
    said = [record.getMessage() for record in caplog.records if record.name.startswith("crawler.worker")]
    failed = [line for line in said if line.startswith("Redis failed")]
    assert len(failed) == 1, said
    assert failed[0].startswith(
        "Redis failed (keep the crawl-delay robots.txt asks for, tried again every"
    ), said
    assert len([line for line in said if line.startswith("Redis is back after")]) == 1, said


def test_pages_whose_links_redis_refuses_log_the_outage_once_not_a_traceback_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A temp crawl whose Redis was made a replica (REPLICAOF) as it read its index page logged Scrapy's
    "Spider error processing <GET .../links?to=...>" and a traceback ending in "ReadOnlyError: Command # 1
    (HSETNX crawler:bloom:meta capacity 1000000) of pipeline caused error": the page's links could not be
    queued, so its lease was let expire (it is fetched again), but the exception went on to Scrapy, which
    logs one traceback a page. The lease middleware takes it now: one line for the outage, nothing to
    Scrapy."""
    import twisted.internet
    from scrapy.http import HtmlResponse, Request
    from twisted.internet.task import Clock

    from crawler.worker.leaseack import LeaseAckMiddleware

    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        spider = sites_spider(tmp_path, url)
        middleware = LeaseAckMiddleware(spider.crawler)
        clock = Clock()  # as in the tests above: the politeness retry runs on the reactor
        monkeypatch.setattr(twisted.internet, "reactor", clock, raising=False)
        monkeypatch.setitem(sys.modules, "twisted.internet.reactor", clock)
        spider.opened()
        admin = connect(url)
        open_job(admin, spider.keys, "j1")
        admin.config_set("maxmemory", 1)  # every write refused (OOM), as a replica's
        handed: list[object] = []
        with caplog.at_level(logging.INFO, logger="crawler"):
            for n in range(3):
                request = Request(
                    f"http://127.0.0.1/{n}", meta={"site": "news", "kind": "index", "job": "j1"}
                )
                response = HtmlResponse(
                    request.url, body=b"<ul class='news'><li><a href='/a/1'>1</a></li></ul>", request=request
                )
                with pytest.raises(redis.RedisError) as raised:
                    list(spider.parse_index(response))
                handed.append(middleware.process_spider_exception(response, raised.value))
        admin.config_set("maxmemory", 0)
        admin.close()
    assert handed == [[], [], []], "taken: nothing goes on to Scrapy, which would log a traceback"
    said = [record.getMessage() for record in caplog.records if record.name.startswith("crawler.worker")]
    refused = [line for line in said if line.startswith("Redis refuses writes")]
    assert len(refused) == 1, said
    # Each page's queueing: three calls of the one outage (its count of its links goes with its
    # acknowledgement, never sent: it is fetched again).
    assert spider.crawler.stats.get_value("redis/errors") == 3


def _answers(url: str) -> bool:
    try:
        return bool(connect(url).ping())
    except (redis.RedisError, RedisUnavailableError):
        return False


def test_a_sites_queue_key_set_to_a_string_mid_crawl_stops_no_other_site_and_loses_none_of_its_requests(
    site: Site, redis_server: str, redis_client: redis.Redis
) -> None:
    """Someone SETs alpha's queue key while alpha's temp crawl downloads a slow page: beta's temp crawl
    beside it ends as usual; once the key is removed (redis-cli DEL), every request of alpha is fetched
    and stored (its retry and its links, waiting in crawler:delayed meanwhile) and its temp crawl ends."""
    keys = Keys("crawler")
    alpha = site.rule("/slow?seconds=4", "/flaky/e2e-wrongtype-1", "/a/e2e-wrongtype-2", name="alpha")
    beta = site.rule("/a/e2e-wrongtype-3", "/a/e2e-wrongtype-4", name="beta")

    def slow_page_leased() -> bool:
        return any(b"/slow" in member for member in redis_client.zrange(keys.leases, 0, -1))

    with _in_a_group_of_its_own(
        site, redis_server, "temp", alpha, *FAST_ARGS, "-s", "CONCURRENT_REQUESTS=1"
    ) as a:
        wait_until(slow_page_leased, "alpha's slow page leased")
        redis_client.set(keys.queue_of(alpha), "oops")
        done = site.crawler("temp", beta, *FAST_ARGS, REDIS_URL=redis_server)
        assert done.returncode == 0 and "stored 2 articles" in done.stdout, (done.stdout, done.stderr[-3000:])
        assert a.poll() is None, "alpha's crawl waits for its requests set aside"
        redis_client.delete(keys.queue_of(alpha))
        out, err = a.communicate(timeout=WAIT_LIMIT + 120)
    assert a.returncode == 0, err[-3000:]
    assert "fetched 4 pages, stored 3 articles" in out, (out, err[-3000:])
    assert {path for path in site.stored()} >= {
        "/slow?seconds=4",
        "/flaky/e2e-wrongtype-1",
        "/a/e2e-wrongtype-2",
    }


@contextmanager
def _timed_site(arrivals: list[tuple[str, float]], articles: int) -> Iterator[str]:
    """A site on 127.0.0.1 whose index links to ``articles`` article pages (``/a/N``), each request's path
    and arrival (time.monotonic) added to ``arrivals``; its origin, served while the block runs."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            arrivals.append((self.path, time.monotonic()))
            if self.path == "/":
                links = "".join(f'<li><a href="/a/{n}">{n}</a></li>' for n in range(articles))
                body, status = f'<html><body><ul class="news">{links}</ul></body></html>', 200
            elif self.path.startswith("/a/"):
                body, status = generated_article(f"timed-{self.path.removeprefix('/a/')}"), 200
            else:
                body, status = "not here", 404
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_sites_politeness_key_removed_mid_crawl_is_written_again_and_its_delay_holds(
    site: Site, redis_server: str, redis_client: redis.Redis
) -> None:
    """Someone removes the politeness hash of a site whose rule says `delay: 1` while its temp crawl runs
    (DEL crawler:polite:timed, as after SET then DEL): the next pop writes it again from the rule's
    politeness, and no two of the site's pages are asked closer together than the delay (half of it here:
    the arrivals are this server's clock, not Redis's)."""
    keys = Keys("crawler")
    arrivals: list[tuple[str, float]] = []
    with _timed_site(arrivals, articles=8) as origin:
        site.write_rule(RULE.format(start=f"{origin}/") + "politeness:\n  delay: 1\n", "timed")

        def pages() -> list[float]:
            return [at for path, at in arrivals if path != "/robots.txt"]

        with _in_a_group_of_its_own(site, redis_server, "temp", "timed", *FAST_ARGS) as crawl:
            wait_until(lambda: len(pages()) >= 3, "the index and two articles asked")
            assert redis_client.delete(keys.polite("timed")) == 1
            out, err = crawl.communicate(timeout=WAIT_LIMIT + 60)
    assert crawl.returncode == 0, err[-3000:]
    assert "stored 8 articles" in out, (out, err[-3000:])
    asked = pages()
    gaps = [round(later - before, 3) for before, later in itertools.pairwise(asked)]
    assert len(asked) == 9 and min(gaps) >= 0.5, gaps
    assert "Redis key crawler:polite:timed was removed" in err, err[-3000:]


class _AtOnce:
    """A scheduler's call made later in its reactor's turn, made at once (the test process has no reactor)."""

    def __init__(self, call: Callable[[], None]) -> None:
        self.call = call

    def schedule(self) -> None:
        self.call()

    def cancel(self) -> None:
        """Nothing waits."""


def test_an_ack_whose_job_hash_is_of_another_type_fails_alone_named_once_and_the_others_are_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reactor turn's acknowledgements go to Redis in one pipeline (flush_acks). One whose job's hash held
    another type (someone SET crawler:job:<id>) failed its script with WRONGTYPE: execute() raised, so the
    worker counted none of the turn's acks (acked/stored 0 for the 2 articles Redis had acknowledged, and
    counted in their job), and it was logged as Redis failing, every turn one such ack came. Each ack
    stands alone: the others are counted, the key is named once with its fix, and Redis is not said down."""
    from scrapy.http import Request

    from crawler.requests import ARTICLE

    keys = Keys("crawler")
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server)
        scheduler._ack_soon = _AtOnce(lambda: None)  # a turn's acks are sent by flush_acks below
        try:
            scheduler.queue.configure("news", delay=0, concurrency=4)
            jobs = ("good", "bad", "good", "bad")
            for job in set(jobs):
                open_job(client, keys, job)
            for number, job in enumerate(jobs):
                url = f"http://127.0.0.1/a/ack{number}"
                meta = {"site": "news", "kind": ARTICLE, "job": job}
                assert scheduler.enqueue_request(Request(url, meta=meta, dont_filter=True))
            leased = [scheduler.next_request() for _ in jobs]
            assert all(request is not None for request in leased), leased
            client.set(keys.job("bad"), "someone's")
            with caplog.at_level(logging.INFO):
                for request in leased[:3]:
                    scheduler.ack(request, fetched=1, stored=1)
                scheduler.flush_acks()
                first = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
                caplog.clear()
                scheduler.ack(leased[3], fetched=1, stored=1)
                scheduler.flush_acks()
                second = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            good = client.hgetall(keys.job("good"))
            leased_still = client.zcard(keys.leases)
        finally:
            client.close()
    assert crawler.stats is not None and crawler.stats.get_value("acked/stored") == 2, "the good job's two"
    assert good[b"stored"] == b"2" and good[b"pending"] == b"0", good
    assert leased_still == 0, "the failed acks' leases ended before their job's counts"
    assert len(first) == 1, first
    assert first[0].startswith(
        "An acknowledgement of job bad (site news) failed: Redis key crawler:job:bad is a string, not a hash"
    ), first
    assert first[0].endswith("fix: redis-cli DEL crawler:job:bad"), first
    assert second == [], "named once"
    assert crawler.stats.get_value("redis/errors") is None, "Redis was not away"


def _articles_leased(scheduler: Any, client: redis.Redis, count: int) -> list[Any]:
    """``count`` article requests of job j1, queued and leased by ``scheduler``, whose acknowledgements are
    sent at once; each write in the append-only file before its reply (a kill keeps what was said)."""
    from scrapy.http import Request

    from crawler.requests import ARTICLE

    client.config_set("appendfsync", "always")
    scheduler._ack_soon = _AtOnce(scheduler.flush_acks)
    scheduler.queue.configure("news", delay=0, concurrency=count)
    open_job(client, Keys("crawler"), "j1")
    for number in range(count):
        meta = {"site": "news", "kind": ARTICLE, "job": "j1"}
        assert scheduler.enqueue_request(Request(f"http://127.0.0.1/a/acked{number}", meta=meta))
    leased = [scheduler.next_request() for _ in range(count)]
    assert all(request is not None for request in leased), leased
    return leased


def _acked_while_killed(server: EmbeddedRedis, scheduler: Any, leased: list[Any], *, emptied: bool) -> None:
    """Redis killed, ``leased`` acknowledged (stored) while it is away, then Redis started again: on its
    append-only file, or ``emptied`` (no file: a restart without its data)."""
    os.kill(server.pid or 0, signal.SIGKILL)
    wait_until(lambda: _refused(server.url), "Redis gone")
    for request in leased:
        scheduler.ack(request, fetched=1, stored=1)
    if emptied:
        server.aof_path.unlink()
        (server.directory / "dump.rdb").unlink(missing_ok=True)
    server.ensure()


def test_pages_acknowledged_while_redis_is_away_are_acknowledged_once_it_is_back_not_fetched_again(
    tmp_path: Path,
) -> None:
    """The acknowledgements that failed while Redis was away were dropped, though their leases came back
    with it (its append-only file): each page was fetched again once its lease expired (36 to 67 pages a
    Redis kill in bench/chaos.py --articles 2000). They are sent again once Redis answers."""
    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (server, crawler, scheduler, client):
        leased = _articles_leased(scheduler, client, 3)
        _acked_while_killed(server, scheduler, leased, emptied=False)
        scheduler.tend_leases()
        expired = scheduler.queue.requeue_expired(now=time.time() + 3600)
        again = scheduler.next_request()
        job = client.hgetall(keys.job("j1"))
    assert expired == 0 and again is None, "acknowledged once Redis was back: not fetched again"
    assert job[b"stored"] == b"3" and job[b"fetched"] == b"3" and job[b"pending"] == b"0", job
    assert crawler.stats is not None and crawler.stats.get_value("acked/stored") == 3


def test_pages_acknowledged_while_redis_refuses_writes_are_acknowledged_once_it_takes_them(
    tmp_path: Path,
) -> None:
    """Redis refusing writes (here: it lacks the replicas min-replicas-to-write asks for, NOREPLICAS, as a
    read-only replica or a failed disk, MISCONF, refuse them) fails each acknowledgement's script at its
    first write: they are kept as for a Redis away, and sent again at the first renewal it takes."""
    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (_server, crawler, scheduler, client):
        leased = _articles_leased(scheduler, client, 2)
        client.config_set("min-replicas-to-write", "1")
        for request in leased:
            scheduler.ack(request, fetched=1, stored=1)
        refused = client.zcard(keys.leases)
        client.config_set("min-replicas-to-write", "0")
        scheduler.tend_leases()
        job = client.hgetall(keys.job("j1"))
    assert refused == 2, "both refused"
    assert job[b"stored"] == b"2" and job[b"pending"] == b"0", job
    assert crawler.stats is not None and crawler.stats.get_value("acked/stored") == 2


def test_acknowledgements_kept_for_a_redis_that_comes_back_empty_write_nothing(tmp_path: Path) -> None:
    """Redis started again without its data holds none of the leases: the acknowledgements sent again
    find none, write nothing (the loss is said by the data marker, crawler.redisio.since, as before), and
    are not kept any longer."""
    with _scheduler_of_embedded_redis(tmp_path) as (server, crawler, scheduler, client):
        leased = _articles_leased(scheduler, client, 3)
        _acked_while_killed(server, scheduler, leased, emptied=True)
        scheduler.tend_leases()
        written = client.dbsize()
        scheduler.tend_leases()
    assert written == 0, "nothing written"
    assert crawler.stats is not None and crawler.stats.get_value("lease/ack_after_expiry") == 3, "sent once"
    assert crawler.stats.get_value("acked/stored") is None


def test_an_acknowledgement_kept_past_its_lease_is_dropped_not_ending_the_lease_another_worker_took(
    tmp_path: Path,
) -> None:
    """An acknowledgement Redis did not take is sent again only while its lease lasts: once it may have
    expired, another worker may hold it (the ack script ends a lease whoever holds it), so it is dropped,
    counted, and the page is fetched again by that worker."""
    from crawler.redisio.queue import LeasedQueue

    keys = Keys("crawler")
    now = [0.0]
    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server)
        scheduler.clock = lambda: now[0]
        try:
            scheduler.tend_leases()  # as open() does first: its renewals by this clock
            (request,) = _articles_leased(scheduler, client, 1)
            _acked_while_killed(server, scheduler, [request], emptied=False)
            now[0] = scheduler.lease_seconds
            assert scheduler.queue.requeue_expired(now=time.time() + 3600) == 1, "its lease expired"
            taken = LeasedQueue(client, keys).pop_many((), 1, worker="other")[0].member
            scheduler.tend_leases()
            held = client.zscore(keys.leases, request.meta["lease"])
        finally:
            client.close()
    assert taken == request.meta["lease"]
    assert held is not None, "the other worker's lease is its own still"
    assert crawler.stats is not None and crawler.stats.get_value("lease/ack_unsent") == 1


class _Never:
    """A scheduler's call made later in its reactor's turn, never made: its process is killed first."""

    def schedule(self) -> None:
        """Nothing runs."""

    def cancel(self) -> None:
        """Nothing waits."""


def _ignored(scheduler: Any, request: Any) -> None:
    """``request``, leased by ``scheduler``, ignored on purpose by its spider (a skip its job counts)."""
    from scrapy.exceptions import IgnoreRequest
    from twisted.python.failure import Failure

    scheduler.spider.crawler.engine = SimpleNamespace(scheduler=scheduler)  # the part the spider uses
    failure = Failure(IgnoreRequest("refused by a test"))  # type: ignore[no-untyped-call]
    failure.request = request  # type: ignore[attr-defined]
    scheduler.spider.on_error(failure)


@pytest.mark.parametrize("fault", ["redis_refuses_writes", "worker_killed_before_its_ack"])
def test_a_jobs_counts_of_a_page_go_with_its_acknowledgement_once(tmp_path: Path, fault: str) -> None:
    """A job's counts of a page (count_job: the links it gave, a listing read, a skip and why) were each
    written at once, apart from the page's acknowledgement: Redis refusing the write lost the count, while
    the acknowledgement was kept and sent again once Redis took writes (the page ended, its skip not
    counted: the temp crawl's summary short); a worker killed between the count and its acknowledgement
    left the count written and the page leased, so the worker that fetched it again counted it again (1
    skip counted 2). They go in the acknowledgement's script now: kept and sent again with it, written as
    the lease ends, once."""
    from crawler.keys import SKIP_PREFIX

    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (server, _crawler, scheduler, client):
        (request,) = _articles_leased(scheduler, client, 1)
        if fault == "redis_refuses_writes":
            client.config_set("min-replicas-to-write", "1")
            _ignored(scheduler, request)
            client.config_set("min-replicas-to-write", "0")
            scheduler.tend_leases()
        else:
            scheduler._ack_soon = _Never()
            _ignored(scheduler, request)
            assert scheduler.queue.requeue_expired(now=time.time() + 3600) == 1
            (tmp_path / "other").mkdir()
            _, other, other_client = _scheduler_on(tmp_path / "other", server)
            try:
                other._ack_soon = _AtOnce(other.flush_acks)
                again = other.next_request()
                assert again is not None and again.url == request.url
                _ignored(other, again)
            finally:
                other_client.close()
        job = client.hgetall(keys.job("j1"))
    assert job[b"pending"] == b"0", job
    assert job.get(b"skipped") == b"1", job
    assert job.get(f"{SKIP_PREFIX}ignored (the worker's log says why: Ignored URL)".encode()) == b"1", job


def test_an_acknowledgement_of_a_lease_another_worker_took_since_leaves_that_lease_alone(
    tmp_path: Path,
) -> None:
    """A worker that acknowledges late (stopped past its lease, cut off from Redis while the others took it
    for dead) ended the lease whoever held it: the worker that took the request since lost it under its
    download, its site's slot given back as it ran, its own acknowledgement found no lease, and a redirect
    or retry of it would have handed nothing on. The lease is the holder's; the late one finds none."""
    from crawler.redisio.queue import LeasedQueue

    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (_server, crawler, scheduler, client):
        (request,) = _articles_leased(scheduler, client, 1)
        lease = request.meta["lease"]
        assert scheduler.queue.release_holders({scheduler.worker}) == {scheduler.worker: 1}, "for dead"
        other = LeasedQueue(client, keys).pop_many((), 1, worker="other")[0].member
        scheduler.ack(request, fetched=1, stored=1)
        held = client.zscore(keys.leases, lease)
        holder = client.hget(keys.lease_holders, lease)
        job = client.hgetall(keys.job("j1"))
    assert other == lease
    assert held is not None and holder == b"other", "the other worker's lease, its own still"
    assert job.get(b"stored") is None and job[b"pending"] == b"1", job
    assert crawler.stats is not None and crawler.stats.get_value("lease/ack_after_expiry") == 1


def _again_article_leased(scheduler: Any, url: str) -> Any:
    """An article request of job j1, which fetches seen URLs again, queued and leased by ``scheduler``,
    whose acknowledgements are sent at once."""
    from scrapy.http import Request

    from crawler.requests import ARTICLE

    scheduler._ack_soon = _AtOnce(scheduler.flush_acks)
    article = Request(
        url, meta={"site": "news", "kind": ARTICLE, "job": "j1", "again": True}, dont_filter=True
    )
    scheduler.enqueue_request(article)
    leased = scheduler.next_request()
    assert leased is not None and leased.url == url and leased.meta.get("lease")
    return leased


def _redirected(leased: Any, target: str) -> Any:
    """``leased`` redirected to ``target``, as Scrapy's redirect middleware makes it."""
    meta = {**leased.meta, "redirect_times": 1, "redirect_urls": [leased.url]}
    return leased.replace(url=target, meta=meta)


def _redirect_again_after_a_failed_handoff(
    scheduler: Any, client: redis.Redis, leased: Any, target: str
) -> tuple[bool, Any]:
    """``leased``'s redirect to ``target`` handed on while Redis fails the handoff (its sequence's INCR,
    once), then, its lease expired and the article fetched again, handed on anew: whether that second
    handoff was taken, and the request the queue gives next."""
    keys = Keys("crawler")
    sequence = client.get(keys.sequence)
    client.set(keys.sequence, "not a number")  # the handoff's INCR fails once
    assert not scheduler.enqueue_request(_redirected(leased, target))
    client.set(keys.sequence, sequence or b"0")
    client.zadd(keys.leases, {leased.meta["lease"]: 0})  # its lease expires
    scheduler.tend_leases()
    again = scheduler.next_request()
    assert again is not None and again.url == leased.url, "the article, back in the queue"
    return scheduler.enqueue_request(_redirected(again, target)), scheduler.next_request()


def test_an_again_redirect_whose_handoff_failed_goes_on_when_its_article_is_fetched_again(
    tmp_path: Path,
) -> None:
    """The redirect of an article link of a job that fetches seen URLs again (`crawler temp SITE --again`)
    was added to the job's set before its handoff, in a call of its own: a handoff that failed (a Redis
    error; or the worker dying between the two) left the target in the set, so the article, fetched again
    once its lease expired, was skipped ('it redirects to ..., seen already') and the target never fetched
    in the job. The set takes it in the handoff's own call."""
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        source, target = "http://127.0.0.1/r/moved", "http://127.0.0.1/a/moved"
        leased = _again_article_leased(scheduler, source)
        handed, taken = _redirect_again_after_a_failed_handoff(scheduler, client, leased, target)
    assert handed, "the redirect handed on"
    assert taken is not None and taken.url == target


def test_a_redirect_whose_handoff_failed_is_fetched_when_its_article_is_fetched_again(tmp_path: Path) -> None:
    """An article link's redirect was marked seen in the Bloom filter before its handoff, in a call of its
    own: a handoff that failed (Redis at its maxmemory refusing the script, OOM; or the worker dying between
    the two) left the target seen and never queued, so the article, fetched again once its lease expired,
    was skipped ('it redirects to ..., seen already'): lost (1 of 3,000 articles of a temp crawl under 20 s
    of OOM, errors 0). The target is marked seen once its request is handed on."""
    from scrapy.http import Request

    from crawler.requests import ARTICLE

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        _crawler, scheduler, client = _scheduler_on(tmp_path, server)
        scheduler._ack_soon = _AtOnce(scheduler.flush_acks)
        try:
            source, target = "http://127.0.0.1/r/short", "http://127.0.0.1/a/long"
            meta = {"site": "news", "kind": ARTICLE, "job": "j1"}
            assert scheduler.enqueue_request(Request(source, meta=meta, dont_filter=True))
            leased = scheduler.next_request()
            assert leased is not None
            handed, taken = _redirect_again_after_a_failed_handoff(scheduler, client, leased, target)
            seen_after = scheduler.df.request_seen(Request(target))
        finally:
            client.close()
    assert handed, "the redirect handed on, not skipped as seen"
    assert taken is not None and taken.url == target
    assert seen_after, "its URL marked seen once handed on"


def test_a_lost_leases_redirect_after_its_again_jobs_end_leaves_no_set_behind(tmp_path: Path) -> None:
    """A worker whose lease was lost (written off, its job ended and its set deleted) that handed on the
    article's redirect after that made the job's set again, kept SCHEDULE_TEMP_AGAIN_SECONDS (a week). The
    handoff of a lease no longer held touches no set."""
    from crawler.requests import WrittenOff, end_again, write_off_lost

    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        leased = _again_article_leased(scheduler, "http://127.0.0.1/r/lost")
        client.zrem(keys.leases, leased.meta["lease"])  # lost (Redis restarted from an older snapshot)
        assert write_off_lost(client, keys, "news") == WrittenOff(site=1, jobs=0)
        end_again(client, keys, "j1")
        handed = scheduler.enqueue_request(_redirected(leased, "http://127.0.0.1/a/lost"))
        left = client.exists(keys.again("j1"))
    assert not handed
    assert left == 0, "the job's set made again after its end"


def test_an_again_redirect_handed_on_renews_the_time_to_live_of_its_jobs_set(tmp_path: Path) -> None:
    """The job's set of a job that fetches seen URLs again lives SCHEDULE_TEMP_AGAIN_SECONDS after its last
    URL added (a crashed crawl resumed within them fetches each page once still), a redirect's too."""
    keys = Keys("crawler")
    with _scheduler_of_embedded_redis(tmp_path) as (_server, crawler, scheduler, client):
        leased = _again_article_leased(scheduler, "http://127.0.0.1/r/renewed")
        client.sadd(keys.again("j1"), b"an article link queued earlier")
        client.expire(keys.again("j1"), 60)
        assert scheduler.enqueue_request(_redirected(leased, "http://127.0.0.1/a/renewed"))
        ttl = client.ttl(keys.again("j1"))
        held = client.scard(keys.again("j1"))
    assert held == 2
    assert ttl > 60, ttl
    assert ttl <= crawler.settings.getint("SCHEDULE_TEMP_AGAIN_SECONDS"), ttl


def test_a_redis_failing_as_the_crawl_opens_says_to_run_the_command_again(tmp_path: Path) -> None:
    """A Redis that fails the crawl's first write as it opens (it went away: no Redis at the URL), neither
    refusing writes nor answering an error, is said for any crawl command, not "start the worker again"."""
    from crawler.worker.scheduler import _opening_error

    gone = redis.Redis(unix_socket_path=str(tmp_path / "gone.sock"), socket_timeout=1)
    with pytest.raises(redis.ConnectionError) as failed:
        gone.ping()
    error = _opening_error(gone, failed.value, "crawler")
    gone.close()
    assert isinstance(error, RedisUnavailableError)
    assert str(error) == (
        f"Redis failed as the crawl opened ({failed.value}): run the command again once Redis answers"
    )


def test_status_says_the_workers_figures_are_as_of_their_last_beat_while_redis_refuses_writes(
    site: Site,
) -> None:
    """While Redis refuses writes a worker cannot write its heartbeat, so `crawler status` showed its last
    one's figures as now: "Redis errors: 0" beside a Redis that refused every write of that worker. It says
    the figures are as of the last beat and how old that is, and that its Redis errors since are not in
    them."""
    from crawler.worker.heartbeat import _beat

    site.rule("/a/one")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        beat = _beat(
            started=time.time() - 100,
            now=time.time() - 45,
            every=30.0,
            forget=3600.0,
            store="here",
            responses=7,
            rate=2.0,
            sites=[],
            redis_errors=0,
            store_paused=0,
        )
        client.hset(Keys("crawler").workers, "host:1", json.dumps(beat))
        said = _memory_full(client)
        try:
            text = site.crawler("status", REDIS_URL=redis_server.url)
            report = site.crawler("status", "--format", "json", REDIS_URL=redis_server.url)
        finally:
            client.config_set("maxmemory", "0")
            client.close()
    assert text.returncode == 0 and report.returncode == 0, text.stderr[-4000:] + report.stderr[-4000:]
    assert json.loads(report.stdout)["redis"]["writes_refused"] == said
    # The beat was written 45 s before each status read it, and some seconds more (each status a process).
    age = json.loads(report.stdout)["workers"][0]["seen_seconds_ago"]
    assert age >= 45, report.stdout
    stale = (
        "the workers' figures (responses, responses/min, Redis errors) are those of their last heartbeat,"
        " written before Redis refused writes: host:1's {} s ago; the Redis errors of each since (a"
        " heartbeat refused, at least) are counted in its process and said in its log"
    )
    assert json.loads(report.stdout)["workers_figures"] == stale.format(f"{age:.0f}"), report.stdout
    notes = [line for line in text.stdout.splitlines() if line.startswith("NOTE the workers' figures")]
    assert [re.sub(r"'s \d+ s ago", "'s N s ago", note) for note in notes] == [f"NOTE {stale.format('N')}"]
    assert re.search(r"alive: +yes\n(.*\n){3} +Redis errors: +0 as of \d+ s ago\n", text.stdout), text.stdout


_BACKOFF_NOTE_FAILS_ONCE = (
    "import sys, redis\n"
    "import crawler.cli.crawl as crawl\n"
    "said = crawl._say_backoff\n"
    "failed = []\n"
    "def fails_once(*args, **kwargs):\n"
    "    if not failed:\n"
    "        failed.append(True)\n"
    "        raise redis.ConnectionError('Redis went away under the backoff note')\n"
    "    return said(*args, **kwargs)\n"
    "crawl._say_backoff = fails_once\n"
    "from crawler.cli import main\n"
    "sys.exit(main())\n"
)


def test_a_temp_crawl_whose_redis_fails_under_its_backoff_note_waits_as_for_any_redis_failure(
    site: Site,
) -> None:
    """The temp crawl's tick read the site's backoff (for its note) outside its handling of Redis errors:
    Redis failing there was an unhandled error of the tick, not Redis away for a moment, which the crawl
    waits out within its patience."""
    site.rule("/a/small")
    done = subprocess.run(
        [sys.executable, "-c", _BACKOFF_NOTE_FAILS_ONCE, "temp", site.name, *FAST_ARGS],
        env=site.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Redis went away under the backoff note" not in done.stderr, done.stderr[-4000:]
    assert done.stdout == "fetched 2 pages, stored 1 article, skipped 0, errors 0\n", done.stdout


def test_a_stopping_worker_ends_its_wake_listener_at_once_not_when_its_blpop_ends(tmp_path: Path) -> None:
    """The wake listener waits on the worker's wake list (BLPOP) an idle poll at a time, and close() joined
    it for that poll: the reactor held up to SCHEDULER_IDLE_POLL_SECONDS at each stop, and past Redis's
    socket timeout (30 s) with a longer poll. close() now pushes a wake to the list, which ends the wait at
    once. (The 10 s bound tells a stop that waited for the socket timeout from one that did not.)"""
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        scheduler.poll_seconds = 3600.0
        scheduler._listener = threading.Thread(target=scheduler._listen, daemon=True)
        scheduler._listener.start()
        wait_until(lambda: any(c.get("cmd") == "blpop" for c in client.client_list()), "the listener's BLPOP")
        closer = threading.Thread(target=scheduler.close, args=("finished",), daemon=True)
        closer.start()
        closer.join(10)
        assert not closer.is_alive(), "close() waited for the listener's BLPOP to time out"
        assert not scheduler._listener.is_alive()


def test_a_wake_listener_polling_longer_than_the_socket_timeout_keeps_listening_and_is_woken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wake listener's BLPOP waited an idle poll (SCHEDULER_IDLE_POLL_SECONDS): one of 40 s on the
    client's 30 s socket timed out first, was retried by redis-py and raised, and the listener slept a poll
    before it listened again, waking no worker meanwhile. Its wait is now capped below the socket timeout
    of its client's pool (here 0.5 s, against a poll of 2 s): each BLPOP ends, none fails, and a wake pushed
    later still wakes it."""
    import twisted.internet

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        _crawler, scheduler, client = _scheduler_on(tmp_path, server)
        listening = redis.Redis.from_url(server.url, socket_timeout=0.5)
        ended: list[object] = []
        failed: list[redis.RedisError] = []
        blpop = listening.blpop

        def watched_blpop(*args: Any, **kwargs: Any) -> Any:
            try:
                woken = blpop(*args, **kwargs)
            except redis.RedisError as exc:
                failed.append(exc)
                raise
            ended.append(woken)
            return woken

        monkeypatch.setattr(listening, "blpop", watched_blpop)
        woke = threading.Event()
        # The listener hands a wake to the reactor; importing twisted.internet.reactor would install the
        # default one in the test process, which later tests making a crawler (asyncio reactor) fail on.
        reactor = _WakeRecorder(woke)
        monkeypatch.setattr(twisted.internet, "reactor", reactor, raising=False)
        monkeypatch.setitem(sys.modules, "twisted.internet.reactor", reactor)
        try:
            scheduler.server = listening
            scheduler.poll_seconds = 2.0
            scheduler._listener = threading.Thread(target=scheduler._listen, daemon=True)
            scheduler._listener.start()
            wait_until(lambda: len(ended) >= 2 or bool(failed), "two BLPOPs of the listener to end")
            assert not failed, f"the listener's BLPOP outlived the socket timeout: {failed[0]!r}"
            assert ended[:2] == [None, None]
            client.lpush(Keys("crawler").wake_of(scheduler.worker), "news")
            wait_until(woke.is_set, "the listener to be woken")
            scheduler.close("finished")
            assert not scheduler._listener.is_alive()
            assert not failed
        finally:
            client.close()
            listening.close()


class _WakeRecorder:
    """The reactor the wake listener hands a wake to, recording that it did."""

    def __init__(self, woke: threading.Event) -> None:
        self.woke = woke

    def callFromThread(self, call: Callable[[], object]) -> None:
        self.woke.set()


def test_a_stopping_worker_is_offered_no_site_it_will_not_take(tmp_path: Path) -> None:
    """A worker whose last pops took nothing (a `crawler temp` whose job ended while other workers crawl)
    stayed hungry HUNGRY_SECONDS after it stopped: each slot the other workers freed meanwhile was offered
    to it, held OFFER_SECONDS for a worker that would never take it. close() now takes it out of
    crawler:hungry."""
    from crawler.redisio.queue import LeasedQueue

    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        other = LeasedQueue(client, Keys("crawler"))
        other.configure("news", delay=0.0, concurrency=1)
        for number in range(3):
            member = json.dumps({"url": f"http://127.0.0.1/{number}"}).encode()
            assert other.push(member, priority=0, site="news", job="j1")
        first = other.pop_many(count=1, worker="other", may_hunger=True)[0].member
        assert first is not None
        mine = scheduler.queue.pop_many(count=1, worker=scheduler.worker, may_hunger=True)
        assert mine[0].member is None, "news is at its concurrency: the worker is hungry"
        assert client.zscore(Keys("crawler").hungry, scheduler.worker) is not None
        scheduler.close("finished")
        taken = other.pop_many([first], 1, worker="other", may_hunger=True)
        assert taken[0].site == "news", "the slot freed was offered to the worker that stopped"


def _leased_by_far_worker(client: redis.Redis, keys: Keys) -> Any:
    """The queue of ``keys`` holding one request of site ``news``, leased by worker ``far:4:aaaaaa``."""
    from crawler.redisio.queue import LeasedQueue

    queue = LeasedQueue(client, keys)
    queue.configure("news", delay=0.0, concurrency=1)
    member = json.dumps({"url": "http://127.0.0.1/1", "meta": {"site": "news"}}).encode()
    assert queue.push(member, priority=0, site="news", job=None)
    assert queue.pop_many(count=1, worker="far:4:aaaaaa")[0].member is not None
    return queue


def test_a_worker_that_just_started_takes_no_silent_worker_for_dead_before_three_of_its_beats(
    tmp_path: Path,
) -> None:
    """A worker takes another that only went silent (no beat for three of its beats, elsewhere than its own
    machine) for dead only if it had Redis itself the whole while: after an outage every worker is given
    that long to beat again (56d81b2). A worker that started since had Redis only since its start, but
    counted as having had it for ever (no call failed yet): started just after Redis came back, its first
    look returned to the queue the leases of a live worker whose beats had stopped with Redis, to be
    fetched twice. It now counts from its start."""
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        keys = Keys("crawler")
        queue = _leased_by_far_worker(client, keys)
        silent = {"host": "far", "pid": 4, "pid_space": "another machine", "every": 5.0}
        now = time.time()
        client.hset(
            keys.workers, "far:4:aaaaaa", json.dumps({**silent, "started": now - 100, "seen": now - 20})
        )
        scheduler.release_dead()
        assert queue.leased() == 1, "silent 20 s, but this worker has had Redis for less than 15 s"
        scheduler._started -= 16
        scheduler.release_dead()
        assert queue.leased() == 0, "this worker had Redis for three of its beats: the silent one is dead"


def test_a_heartbeat_that_cannot_be_read_stops_no_workers_look_for_dead_workers(tmp_path: Path) -> None:
    """An entry of crawler:workers that is no UTF-8, or whose every is a number beyond a float, raised out
    of release_dead (UnicodeDecodeError, OverflowError), a LoopingCall that stops when it raises: no dead
    worker's leases went back to the queue before they expired. Such an entry is nobody's death, and the
    dead worker beside it is still found."""
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        keys = Keys("crawler")
        queue = _leased_by_far_worker(client, keys)
        now = time.time()
        silent = {"host": "far", "pid": 4, "pid_space": "another machine", "every": 5.0, "seen": now - 20}
        huge = {**silent, "every": 10**400}
        client.hset(
            keys.workers,
            mapping={"far:4:aaaaaa": json.dumps(silent), "odd:1": b"\xff{", "odd:2": json.dumps(huge)},
        )
        scheduler._started -= 16
        scheduler.release_dead()
        assert queue.leased() == 0, "the silent worker is dead, its lease back in the queue"


def _news_at_its_concurrency_by_another_worker(scheduler: Any, client: redis.Redis) -> tuple[Any, str]:
    """Another worker's queue of site news (concurrency 1, three requests queued) and the request it leased,
    which holds news's one slot: ``scheduler`` pops nothing."""
    from crawler.redisio.queue import LeasedQueue

    other = LeasedQueue(client, Keys("crawler"))
    other.configure("news", delay=0.0, concurrency=1)
    for number in range(3):
        member = json.dumps({"url": f"http://127.0.0.1/{number}", "meta": {"site": "news"}}).encode()
        assert other.push(member, priority=0, site="news", job="j1")
    first = other.pop_many(count=1, worker="other", may_hunger=True)[0].member
    assert first is not None
    assert scheduler.next_request() is None, "news is at its concurrency"
    return other, first


def test_a_worker_with_no_wake_listener_is_never_hungry(tmp_path: Path) -> None:
    """A worker that polls nothing (SCHEDULER_IDLE_POLL_SECONDS 0: no idle poll, no wake listener) pops
    only when its engine asks, on its own downloads' ends or Scrapy's 5 s heartbeat; its pops that took
    nothing made it hungry all the same, so every slot another worker freed was offered to it and passed
    over OFFER_SECONDS by them, for a worker no wake reaches. Only a worker that listens is made hungry."""
    with _scheduler_of_embedded_redis(tmp_path) as (_server, _crawler, scheduler, client):
        scheduler.poll_seconds = 0.0
        other, first = _news_at_its_concurrency_by_another_worker(scheduler, client)
        assert client.zscore(Keys("crawler").hungry, scheduler.worker) is None
        taken = other.pop_many([first], 1, worker="other", may_hunger=True)
        assert taken[0].site == "news", "the slot freed is no one's to wait for"


def test_a_hungry_worker_polling_every_2_s_stays_hungry_between_its_pops(tmp_path: Path) -> None:
    """A hungry worker pops again at its next idle poll (SCHEDULER_IDLE_POLL_SECONDS) at the latest; its
    hunger lasted a constant second, so with a 2 s poll it lapsed for half of each poll, and the slots other
    workers freed meanwhile were theirs again. It now lasts two polls, and the wake a freed slot pushes to it
    lasts as long."""
    keys = Keys("crawler")
    polling = _scheduler_of_embedded_redis(tmp_path, SCHEDULER_IDLE_POLL_SECONDS=2.0)
    with polling as (_server, _crawler, scheduler, client):
        scheduler._listener = threading.Thread(target=lambda: None)
        other, first = _news_at_its_concurrency_by_another_worker(scheduler, client)
        popped = time.time()
        until = client.zscore(keys.hungry, scheduler.worker)
        assert until is not None and until > popped + 2.0, "hungry past its next poll"
        assert other.pop_many([first], 1, worker="other", may_hunger=True)[0].member is None, "offered"
        assert client.pttl(keys.wake_of(scheduler.worker)) > 2000, "its wake lasts while it is hungry"


def test_a_download_that_ends_while_the_store_holds_the_worker_back_frees_its_sites_slot_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While its store cannot write, a worker leases no new page (StorePipeline.holds_back); the downloads
    that ended meanwhile were told to Redis only with its next pop, so each held its site's slot until its
    lease ended (its article stored, or deferred a busy timeout later for a locked week), and no worker took
    another request of the site. They are told as they end, before the engine asks for a request (it may
    not ask: Scrapy's scraper takes no more while 5 MB of responses wait for their items), the lease still
    held for its article: together, DOWNLOADS_TOLD_SECONDS after the first (one call a download was 0.17
    more round trips a page on bench/crawl.py, whose store holds back often)."""
    from scrapy.http import HtmlResponse

    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import Work
    from crawler.worker.pipelines.store import StorePipeline
    from crawler.worker.scheduler import DOWNLOADS_TOLD_SECONDS
    from crawler.worker.slots import SiteSlotMiddleware

    with _scheduler_of_embedded_redis(tmp_path) as (_server, crawler, scheduler, client):
        crawler.engine = SimpleNamespace(scheduler=scheduler)  # the part of the engine the middleware uses
        other = LeasedQueue(client, Keys("crawler"))
        other.configure("news", delay=0.0, concurrency=2)
        for number in range(3):
            member = json.dumps({"url": f"http://127.0.0.1/{number}", "meta": {"site": "news"}}).encode()
            assert other.push(member, priority=0, site="news", job="j1")
        requests = [scheduler.next_request(), scheduler.next_request()]
        pipeline = StorePipeline.from_crawler(crawler)
        monkeypatch.setattr(pipeline, "cannot_write", lambda: "the test's store cannot write")
        delays: list[float] = []
        scheduler._tell_soon = SimpleNamespace(schedule=delays.append, cancel=lambda: None)
        middleware = SiteSlotMiddleware.from_crawler(crawler)
        for request in requests:
            assert request is not None
            middleware.process_response(
                request, HtmlResponse(request.url, body=b"<html></html>", request=request)
            )
        assert scheduler.next_request() is None, "held back"
        assert set(delays) == {DOWNLOADS_TOLD_SECONDS}, delays
        assert other.pop_many(count=1, worker="other")[0].member is None, "told together, later"
        scheduler._tell_downloads_ended()  # the timer's call
        taken = other.pop_many(count=1, worker="other")
        assert taken[0].member is not None and taken[0].site == "news", "news's slots are free"
        assert crawler.stats.get_value("worker/store_paused") == 1
        assert scheduler.downloaded == []
        assert all(Work.of(request).lease in scheduler.held for request in requests if request is not None)


def test_a_page_whose_next_page_redis_refused_to_queue_is_fetched_again(tmp_path: Path) -> None:
    """Scrapy takes a callback's output whole, then queues the requests in it: the lease of an index page
    ended with its output, before its next page was queued, so Redis refusing that push (OOM at its
    maxmemory) lost the next page and every page after it (a temp crawl of 60 index pages ended at 16,
    907 of 3,000 articles, errors 0). The page's lease now ends once the requests it gave are queued; one
    that Redis refused lets it expire, so the page is fetched again."""
    from scrapy.http import HtmlResponse, Request

    from crawler.worker.leaseack import LeaseAckMiddleware

    def index(page: int) -> Request:
        meta = {"site": "news", "job": "j1", "kind": "index", "page": page}
        return Request(f"http://127.0.0.1/news/{page}", meta=meta, dont_filter=True)

    with EmbeddedRedis(tmp_path / "redis", watch_seconds=0) as server:
        crawler, scheduler, client = _scheduler_on(tmp_path, server)
        crawler.engine = SimpleNamespace(scheduler=scheduler)  # the part of the engine the middleware uses
        scheduler._ack_soon = _AtOnce(scheduler.flush_acks)
        middleware = LeaseAckMiddleware.from_crawler(crawler)
        try:
            assert scheduler.enqueue_request(index(1)) and scheduler.enqueue_request(index(2))
            taken = [scheduler.next_request(), scheduler.next_request()]
            outcomes = []
            for request, refused in zip(taken, (True, False), strict=True):
                assert request is not None
                response = HtmlResponse(request.url, body=b"<html></html>", request=request)
                next_page = index(int(request.url.rsplit("/", 1)[1]) + 2)
                given = list(middleware.process_spider_output(response, iter([next_page])))
                if refused:
                    _memory_full(client)
                outcomes.append(scheduler.enqueue_request(*given))
                client.config_set("maxmemory", "0")
            leases = [b"/news/1" in member for member in client.zrange("crawler:leases", 0, -1)]
            queued = [b"/news/4" in member for member in client.zrange("crawler:queue:news", 0, -1)]
        finally:
            client.config_set("maxmemory", "0")
            client.close()
    assert outcomes == [False, True]
    assert leases == [True], "the page whose next page was lost: leased still, so it comes back"
    assert queued == [True], "the next page of the other page: queued"
