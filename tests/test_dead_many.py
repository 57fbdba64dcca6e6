"""`crawler dead list|drop|requeue` with thousands of dead letters (subprocesses against the real embedded
Redis of a data folder): each works a page of the hash at a time (bench/queue_scale.py --dead measures
100,000), and nothing is lost or doubled."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from conftest import SiteServer
from crawlsite import COMMAND_TIMEOUT, Site, wait_until
from redis.connection import AbstractConnection
from scrapy import Request

from crawler.cli.main import main
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.queue import LeasedQueue
from crawler.requests import encode_request

KEYS = Keys("crawler")
# More letters than two HSCAN pages and HDELs of DEAD_SCAN_COUNT (1,000).
LETTERS = 2_500
# When the first letter died (epoch seconds); letter n died n seconds later.
FIRST_AT = 1_795_000_000.0


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path)


@contextmanager
def held_redis(site: Site) -> Iterator[redis.Redis]:
    """A client of the site's embedded Redis, kept running meanwhile (the commands run use it, and its
    INFO counts their commands)."""
    with EmbeddedRedis(site.data, watch_seconds=0) as server:
        client = connect(server.ensure())
        try:
            yield client
        finally:
            client.close()


def letter_member(number: int) -> bytes:
    """Letter ``number``'s request: of site alpha when even (HTTP 404), beta when odd (timeout)."""
    site = "alpha" if number % 2 == 0 else "beta"
    meta = {"site": site, "job": "j1", "kind": "article", "depth": 1}
    return encode_request(Request(f"http://{site}.example/a/{number:05d}.html", meta=meta, priority=10))


def fill(client: redis.Redis, count: int = LETTERS) -> None:
    with client.pipeline(transaction=False) as pipe:
        for number in range(count):
            kind = "HTTP 404" if number % 2 == 0 else "timeout"
            record = {"reason": f"{kind} (number {number})", "kind": kind, "at": FIRST_AT + number}
            pipe.hset(KEYS.dead, letter_member(number), json.dumps(record))
        pipe.execute()


@contextmanager
def commands_logged(client: redis.Redis) -> Iterator[list[list[bytes]]]:
    """The commands the server runs meanwhile, each as its words (SLOWLOG of every command: past 32
    words, Redis logs 31 and '... (N more arguments)')."""
    logged: list[list[bytes]] = []
    client.config_set("slowlog-max-len", 100_000)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    try:
        yield logged
    finally:
        client.config_set("slowlog-log-slower-than", 10_000)
        entries = client.execute_command("SLOWLOG", "GET", -1)  # type: ignore[no-untyped-call]
        logged.extend(list(entry[3]) for entry in reversed(entries))


def fill_named(client: redis.Redis, count: int) -> None:
    """``count`` dead letters as a worker of this release writes them: each named in dead-superseded (its
    queue slot and URL -> member)."""
    with client.pipeline(transaction=False) as pipe:
        for number in range(count):
            member = letter_member(number)
            request = json.loads(member)
            record = {"reason": "HTTP 404", "kind": "HTTP 404", "at": FIRST_AT + number}
            pipe.hset(KEYS.dead, member, json.dumps(record))
            pipe.hset(KEYS.dead_superseded, f"{request['meta']['site']}\n{request['url']}", member)
        pipe.execute()


def arguments(words: list[bytes]) -> int:
    """How many arguments a logged command had, its name and key not counted."""
    more = words[-1].decode() if words else ""
    if more.startswith("... (") and more.endswith(" more arguments)"):
        return len(words) - 3 + int(more.removeprefix("... (").split()[0])
    return len(words) - 2


def test_dead_drop_all_of_2500_deletes_them_a_thousand_at_a_time_and_leaves_none(site: Site) -> None:
    """`dead drop --all` deleted every letter in one HDEL (100,000: Redis held 0.3 s, serving no worker);
    now an HDEL of at most DEAD_SCAN_COUNT (1,000) a page of the hash: 2,500 in 3, none left."""
    with held_redis(site) as client:
        fill(client)
        with commands_logged(client) as logged:
            dropped = site.crawler("dead", "drop", "--all")
        assert dropped.returncode == 0, dropped.stderr
        assert dropped.stdout.splitlines()[0] == "dropped 2500 dead letters", dropped.stdout
        assert client.hlen(KEYS.dead) == 0
        deleted = [
            arguments(words)
            for words in logged
            if words[0].upper() == b"HDEL" and words[1] == KEYS.dead.encode()
        ]
        assert sum(deleted) == LETTERS and max(deleted) <= 1_000, deleted


def test_status_and_dead_list_of_5000_letters_all_named_send_none_of_them_to_be_named(site: Site) -> None:
    """Reading the dead letters named those a worker of an older release wrote unnamed (f6678b7): each read,
    `crawler status` and `dead list` alike, sent every page of letters to a naming script (5,000 letters: 5
    calls), though every letter a worker of this release writes is named. A read asks Redis once whether
    any letter may be unnamed, and sends none when none can be (the letters less the names as the last full
    pass left them, here a first status read's; a read of no letter leaves no count, so that a data folder
    nothing was crawled in holds no key): the letters are read, and no more."""
    site.rule()
    with held_redis(site) as client:
        assert site.status()["queue"]["dead_letters"] == 0
        assert client.dbsize() == 0
        fill_named(client, 5_000)
        assert site.status()["queue"]["dead_letters"] == 5_000
        naming = LeasedQueue(client, KEYS)._index_dead.sha.encode()
        with commands_logged(client) as logged:
            status = site.status()
            listed = site.crawler("dead", "list")
        assert status["queue"]["dead_letters"] == 5_000, status["queue"]
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines()[0] == "5,000 dead letters by site and kind of error", listed.stdout
        assert sum(words[:2] == [b"EVALSHA", naming] for words in logged) == 0
        scans = sum(words[:2] == [b"HSCAN", KEYS.dead.encode()] for words in logged)
        assert scans >= 10, f"each read reads them: {scans} pages"


def test_dead_requeue_all_of_2500_puts_them_back_a_page_a_round_trip(
    redis_client: redis.Redis, redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dead requeue --all` made one script call, a round trip, a letter (100,000: 74 s under load); now a
    pipeline a page of the hash: 2,500 letters in a handful of round trips (39; 45 since a read first checks
    whether every letter is named and, these being written unnamed, names them), every one queued, none
    left."""
    fill(redis_client)
    monkeypatch.setenv("REDIS_URL", redis_server)
    monkeypatch.setenv("CRAWLER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CRAWLER_RULES_DIR", str(tmp_path / "rules"))
    sent = 0
    send = AbstractConnection.send_packed_command

    def counted(connection: AbstractConnection, command: object, check_health: bool = True) -> None:
        nonlocal sent
        sent += 1
        send(connection, command, check_health)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    assert main(["dead", "requeue", "--all"]) == 0
    monkeypatch.undo()
    assert redis_client.hlen(KEYS.dead) == 0
    queued = redis_client.zcard(KEYS.queue_of("alpha")) + redis_client.zcard(KEYS.queue_of("beta"))
    assert queued == LETTERS
    assert sent < 50, f"{sent} round trips"


def test_dead_requeue_killed_midway_leaves_each_letter_either_dead_or_queued(site: Site) -> None:
    """A `dead requeue --all` killed (SIGKILL) between two pages: each letter is still dead or queued,
    none lost, none both (its deletion and its request's queueing are one script call), and a second
    requeue puts the rest back, once each."""
    with held_redis(site) as client:
        fill(client, 10_000)
        requeuing = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "dead", "requeue", "--all"],
            env=site.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: client.hlen(KEYS.dead) < 10_000 or requeuing.poll() is not None, "a first page")
        requeuing.send_signal(signal.SIGKILL)
        requeuing.wait(COMMAND_TIMEOUT)
        dead = set(client.hkeys(KEYS.dead))
        queued = {
            member
            for site_name in ("alpha", "beta")
            for member in client.zrange(KEYS.queue_of(site_name), 0, -1)
        }
        assert len(dead) + len(queued) == 10_000 and not dead & queued, (len(dead), len(queued))
        again = site.crawler("dead", "requeue", "--all")
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[0] == f"requeued {len(dead)} dead letters", again.stdout
        assert client.hlen(KEYS.dead) == 0
        assert client.zcard(KEYS.queue_of("alpha")) + client.zcard(KEYS.queue_of("beta")) == 10_000


def test_dead_list_of_2500_shows_the_count_by_site_and_kind_then_the_latest_20_and_all_on_demand(
    site: Site,
) -> None:
    """`dead list` rendered every letter in one table (100,000: a minute of CPU, 618 MB, a table no one
    reads); now the count by site and kind of error, then the latest 20, and how to see more; --all
    every one, --format jsonl --all streams them one a line."""
    with held_redis(site) as client:
        fill(client)
        listed = site.crawler("dead", "list")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0] == "2,500 dead letters by site and kind of error", listed.stdout
        summary = [
            [cell.strip() for cell in line.strip("│").split("│")][:3] for line in lines if "1,250" in line
        ]
        assert summary == [["alpha", "HTTP 404", "1,250"], ["beta", "timeout", "1,250"]], listed.stdout
        assert "the latest 20 of 2,500 dead letters" in listed.stdout
        urls = [number for number in range(LETTERS) if f"/a/{number:05d}.html" in listed.stdout]
        assert urls == list(range(LETTERS - 20, LETTERS)), urls
        assert lines[-1].startswith("`crawler dead list --limit 200` shows more, --all every one"), lines[-1]

        every = site.crawler("dead", "list", "--all")
        assert every.returncode == 0, every.stderr
        assert every.stdout.splitlines()[0] == "2500 dead letters", every.stdout[:200]
        assert sum(f"/a/{number:05d}.html" in every.stdout for number in range(LETTERS)) == LETTERS

        streamed = site.crawler("dead", "list", "--all", "--format", "jsonl")
        assert streamed.returncode == 0, streamed.stderr
        documents = [json.loads(line) for line in streamed.stdout.splitlines()]
        assert len({document["id"] for document in documents}) == len(documents) == LETTERS

        latest = site.crawler("dead", "list", "--site", "beta", "--limit", "3", "--format", "json")
        assert latest.returncode == 0, latest.stderr
        assert [document["url"].rsplit("/", 1)[1] for document in json.loads(latest.stdout)] == [
            "02499.html",
            "02497.html",
            "02495.html",
        ]
        assert "the latest 3 of 1,250 dead letters" in latest.stderr, latest.stderr
