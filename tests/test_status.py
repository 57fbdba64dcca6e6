"""`crawler status` from the counters in Redis (the real embedded server): an overdue grab, a broken rule,
dead workers, field history; and the ban detector's captcha markers."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from crawlsite import WAIT_LIMIT, wait_until
from scrapy.utils.test import get_crawler

from crawler import settings as project_settings
from crawler.cli import main
from crawler.demo import DEMO_RULES
from crawler.keys import Keys, hour_of
from crawler.redisio import clock as clock_module
from crawler.redisio.clock import redis_clock
from crawler.redisio.connection import connect, decoded
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.queue import LeasedQueue
from crawler.redisio.since import RECORD_FILE, Back, DataMarker, Since, read_since
from crawler.redisio.workers import Heartbeats, dead_workers, pid_space, worker_id
from crawler.requests import WrittenOff, write_off_lost
from crawler.rules import load_rules
from crawler.schedule.grabs import GrabScheduler
from crawler.status import OVERDUE_SECONDS, SITES_PER_PIPELINE, build_status, workers_alive
from crawler.worker.bans import looks_like_captcha
from crawler.worker.heartbeat import WorkerHeartbeat

REPO = Path(__file__).resolve().parents[1]
# The id of a worker of this process in crawler:workers.
THIS_WORKER = worker_id().encode()


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    """An empty rules folder."""
    folder = tmp_path / "rules"
    folder.mkdir()
    return folder


@pytest.fixture
def run_crawler(
    tmp_path: Path,
    rules: Path,
    redis_server: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., str]:
    """`crawler ARGS` in this process, on the test's Redis, ``rules`` and a data folder of its own: what it
    printed, its exit code 0 asserted."""
    monkeypatch.setenv("REDIS_URL", redis_server)
    monkeypatch.setenv("CRAWLER_RULES_DIR", str(rules))
    monkeypatch.setenv("CRAWLER_DATA_DIR", str(tmp_path / "data"))

    def run(*args: str) -> str:
        assert main(list(args)) == 0
        return capsys.readouterr().out

    return run


# What a line of fetch errors, or of errors rising, of a site ends with.
FAILED = (
    "`crawler status --site {site}` gives their kinds, `crawler dead list --site {site}` the requests"
    " given up and why"
)


def _citynews(
    rules: Path, server: redis.Redis, now: float, counters: dict[Any, int], **earlier: dict[Any, int]
) -> dict[str, Any]:
    """demo-citynews's status at ``now``: its rule copied into ``rules``, ``counters`` in its hour's
    counters, and those of ``earlier`` (``h5={...}``: 5 hours before) in earlier hours."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    keys = Keys("crawler")
    server.hset(keys.stats("demo-citynews", hour_of(now)), mapping=counters)
    for hours, mapping in earlier.items():
        server.hset(keys.stats("demo-citynews", hour_of(now - int(hours[1:]) * 3600)), mapping=mapping)
    site: dict[str, Any] = build_status(server, keys, load_rules(rules), now)["sites"][0]
    return site


def _words(text: str) -> str:
    """``text`` with its white space (a table's line breaks) as single spaces."""
    return " ".join(text.split())


def _beat(server: redis.Redis, worker: str, seen: float, **fields: object) -> None:
    """The last heartbeat of ``worker`` (``host:pid``), seen at ``seen``: one beat every 5 s, ``fields``
    (host, pid, responses, rate, forget...) over those of a worker started 100 s before; a field given None is
    left out (as a worker of an older version did not write it)."""
    beat = {
        "host": "h",
        "pid": 1,
        "started": seen - 100,
        "every": 5.0,
        "responses": 1,
        "rate": 1.0,
        "sites": [],
    }
    beat = {name: value for name, value in {**beat, **fields, "seen": seen}.items() if value is not None}
    server.hset(Keys("crawler").workers, worker, json.dumps(beat))


def _beat_here(redis_server: str, **settings: object) -> None:
    """One heartbeat of a worker of this process (:data:`THIS_WORKER`), with the project's settings and
    ``settings``."""
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    crawler = get_crawler(settings_dict={**values, "REDIS_URL": redis_server, **settings})
    WorkerHeartbeat.from_crawler(crawler).beat()


def _dead_letter(server: redis.Redis, url: str, reason: str) -> None:
    """A dead letter of site news, now: the request of ``url``, failed for ``reason``."""
    request = {"url": url, "meta": {"site": "news"}, "priority": 0}
    server.hset(Keys("crawler").dead, json.dumps(request), json.dumps({"reason": reason, "at": time.time()}))


@pytest.mark.parametrize("kind", ["grab", "temp"])
def test_a_grab_that_waits_for_the_last_one_to_end_says_so_rather_than_overdue(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str], kind: str
) -> None:
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    now = time.time()
    due = now - 2400
    redis_client.hset(
        "crawler:grab:demo-citynews",
        mapping={
            "last": now - 3600,
            "next": due,
            "job": "j1",
            "waiting": "j1",
            "waiting_since": due,
            "deferred": 2,
        },
    )
    redis_client.hset("crawler:job:j1", mapping={"pending": 3, "kind": kind})
    (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"]
    since = datetime.fromtimestamp(due, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    assert site["grab_waiting"] == {"job": "j1", "temp": kind == "temp", "pending": 3, "since": since}
    assert site["grabs_deferred"] == 2
    waited_for = "a temp crawl of the site" if kind == "temp" else "the last grab"
    reason = (
        f"grab due since {since} waits for {waited_for}, job j1, to end (3 requests of it pending: a slow"
        " crawl, or no worker running: `crawler worker` starts one)"
    )
    assert site["attention"] == [reason], "not: is a scheduler running?"
    shown = _words(run_crawler("status"))
    assert reason in shown
    assert f"(waits for {'the temp crawl' if kind == 'temp' else 'the last grab'})" in shown


def test_a_rule_whose_schedule_was_taken_out_shows_no_grab_waiting(
    rules: Path, redis_client: redis.Redis
) -> None:
    """A grab waited for the last one, then the rule lost its schedule (temp crawls only): no grab of it
    waits any more, and status says none does; the scheduler's next tick clears the mark."""
    text = (DEMO_RULES / "demo-citynews.yaml").read_text(encoding="utf-8")
    assert "schedule:\n  every: 20m\n" in text
    (rules / "demo-citynews.yaml").write_text(text.replace("schedule:\n  every: 20m\n", ""), encoding="utf-8")
    loaded = load_rules(rules)
    (rule,) = loaded.rules.values()
    assert rule.every is None and rule.cron is None
    now = time.time()
    key = "crawler:grab:demo-citynews"
    redis_client.hset(key, mapping={"last": now - 3600, "job": "j1", "waiting": "j1", "waiting_since": now})
    redis_client.hset("crawler:job:j1", mapping={"pending": 3})
    (site,) = build_status(redis_client, Keys("crawler"), loaded, now)["sites"]
    assert site["grab_waiting"] is None and site["attention"] == []
    assert GrabScheduler(redis_client, Keys("crawler")).tick([rule]) == []
    assert redis_client.hget(key, "waiting") is None


def test_a_rule_whose_schedule_was_taken_out_shows_no_next_grab(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A rule's schedule taken out (temp crawls only): its status read `schedule: none (temp crawls only)`
    above `next grab (UTC): 2026-11-29 10:30`, the next grab the scheduler had set when it had one, which
    stays in Redis and never comes."""
    text = (DEMO_RULES / "demo-citynews.yaml").read_text(encoding="utf-8")
    (rules / "demo-citynews.yaml").write_text(text.replace("schedule:\n  every: 20m\n", ""), encoding="utf-8")
    now = time.time()
    redis_client.hset("crawler:grab:demo-citynews", mapping={"last": now - 3600, "next": now + 600})
    (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert (site["schedule"], site["next_grab"]) == ("none (temp crawls only)", None), site
    assert site["last_grab"] is not None and site["attention"] == []
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert row["next grab (UTC)"] == "-", row


def test_an_overdue_grab_says_how_to_start_a_scheduler_or_which_one_is_active(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    now = time.time()
    redis_client.hset("crawler:grab:demo-citynews", mapping={"last": now - 3600, "next": now - 2400})
    since = datetime.fromtimestamp(now - 2400, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"]
    none_active = (
        f"grab overdue since {since}: no scheduler is active to queue it: start one with `crawler schedule`"
        " (or `crawler run`, the scheduler with a worker)"
    )
    assert site["attention"] == [none_active]
    assert none_active in _words(run_crawler("status"))
    redis_client.set("crawler:scheduler:leader", "vm:3417:a0ca74")
    (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"]
    assert site["attention"] == [
        f"grab overdue since {since} though scheduler vm:3417:a0ca74 is active: its log says what it queues"
        " (does it read this rules folder?)"
    ]


def _overdue(site: dict[str, Any]) -> bool:
    return any("grab overdue" in reason for reason in site["attention"])


# A scheduler's one tick on a machine whose clock is sys.argv[3] seconds off (set before anything reads it).
_SKEWED_TICK = (
    "import sys, time\n"
    "real = time.time\n"
    "time.time = lambda: real() + float(sys.argv[3])\n"
    "from crawler.keys import Keys\n"
    "from crawler.redisio.connection import connect\n"
    "from crawler.rules import load_rules\n"
    "from crawler.schedule.grabs import GrabScheduler\n"
    "rules = load_rules(sys.argv[2]).rules.values()\n"
    "assert len(GrabScheduler(connect(sys.argv[1]), Keys('crawler')).tick(rules)) == 1\n"
)


@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_a_grab_is_overdue_by_redis_clock_whatever_the_clock_of_the_schedulers_machine(
    rules: Path, redis_client: redis.Redis, redis_server: str, skew: float
) -> None:
    """A scheduler on a machine whose clock is 2 minutes ahead (or behind) claims a grab of demo-citynews
    (every 20 m), then stops: the next grab it set by its clock was said overdue, by `crawler status`
    elsewhere, 2 minutes late (or early). Set by Redis's clock, it is overdue OVERDUE_SECONDS after it was
    due, as seen from anywhere."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    claimed = redis_clock(redis_client)
    tick = [sys.executable, "-c", _SKEWED_TICK, redis_server, str(rules), str(skew)]
    subprocess.run(tick, check=True, timeout=120)
    due = claimed + 1200
    # The scheduler's start and tick took well under the 30 s either side.
    for now, overdue in ((due + OVERDUE_SECONDS - 30, False), (due + OVERDUE_SECONDS + 30, True)):
        (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"]
        assert _overdue(site) is overdue, (now - due, site["next_grab"], site["attention"])


@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_status_on_a_machine_whose_clock_is_off_says_a_grab_overdue_by_redis_clock(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    skew: float,
) -> None:
    """`crawler status` on a machine whose clock is 2 minutes ahead (or behind) judged the grabs by it: one
    due 200 s ago was overdue (OVERDUE_SECONDS, 300 s), or one due 400 s ago was not. It judges by Redis's
    clock now."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    now = redis_clock(redis_client)
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    for late, overdue in ((OVERDUE_SECONDS - 100, False), (OVERDUE_SECONDS + 100, True)):
        redis_client.hset(
            Keys("crawler").grab("demo-citynews"), mapping={"last": now - 1200 - late, "next": now - late}
        )
        (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
        assert _overdue(site) is overdue, (late, site["attention"])


def test_a_rule_broken_in_the_schedulers_folder_alone_needs_attention_in_status_from_another_folder(
    tmp_path: Path, rules: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """Workers and `crawler status` on one machine, the scheduler on another, a rule file broken on the
    scheduler's alone: the scheduler queued no grab of the site (its log said why), and status, reading
    this machine's sound copy, showed `next grab: -` and needed no attention."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    theirs = tmp_path / "scheduler-rules"
    theirs.mkdir()
    text = (DEMO_RULES / "demo-citynews.yaml").read_text(encoding="utf-8")
    (theirs / "demo-citynews.yaml").write_text(text.replace("depth: 1", "depth: one"), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env.update(REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(theirs), CRAWLER_DATA_DIR=str(tmp_path / "data"))
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "schedule"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not redis_client.exists("crawler:scheduler:rule-errors"):
            assert scheduler.poll() is None, scheduler.communicate()[1]
            assert time.monotonic() < deadline, "the scheduler wrote no rule error"
            time.sleep(0.2)
        owner = decoded(redis_client.get("crawler:scheduler:leader") or b"")
        (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), time.time())["sites"]
    finally:
        scheduler.send_signal(2)
        scheduler.communicate(timeout=60)
    error = (
        f'{theirs / "demo-citynews.yaml"}: depth: wrong type: the string "one" (expected a whole number >= 1)'
    )
    assert site["next_grab"] is None and not site["rule_broken"]
    assert site["scheduler_rule_error"] == error
    assert site["attention"] == [
        f"the active scheduler, {owner}, cannot read its copy of the site's rule file, so queues no grab of"
        f" it: {error}; mend the file in that scheduler's rules folder (`crawler rules check` there)"
    ]
    (site,) = build_status(redis_client, Keys("crawler"), load_rules(rules), time.time())["sites"]
    assert site["attention"] == [], "a scheduler no longer active is not read"


def test_overdue_grabs_broken_rules_dead_workers_and_field_history(
    rules: Path, redis_client: redis.Redis
) -> None:
    for name in ("demo-citynews", "demo-techdaily"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    (rules / "broken.yaml").write_text("name: Broken\nstart_urls: 12\n", encoding="utf-8")
    now = time.time()
    redis_client.hset(
        "crawler:grab:demo-citynews", mapping={"last": now - 3600, "next": now - 2400, "job": "j1"}
    )
    redis_client.hset("crawler:job:j1", mapping={"stored": 7})
    redis_client.hset("crawler:grab:demo-techdaily", mapping={"last": now - 60, "next": now + 1140})
    _beat(redis_client, "h:1", now - 2, started=now - 100, pages=10, rate=6.0)
    _beat(redis_client, "h:2", now - 600, pid=2, started=now - 100, pages=10, rate=6.0)
    # techdaily's author field: missing on most pages for a week (no news), body fine.
    for back, pages, missing_author in ((2, 10, 9), (30, 50, 45), (100, 40, 36)):
        key = Keys("crawler").stats("demo-techdaily", hour_of(now - back * 3600))
        redis_client.hset(key, mapping={"fields/pages": pages, "fields/missing/author": missing_author})
    report = build_status(redis_client, Keys("crawler"), load_rules(rules), now)
    sites = {site["site"]: site for site in report["sites"]}
    assert [w["alive"] for w in report["workers"]] == [True, False]
    assert report["workers_alive"] == 1
    assert sites["demo-citynews"]["new_last_grab"] == 7
    assert any("grab overdue" in reason for reason in sites["demo-citynews"]["attention"])
    author = next(f for f in sites["demo-techdaily"]["fields"] if f["field"] == "author")
    assert author["missing_24h"] == 0.9 and author["missing_before"] == 0.9 and not author["stopped"]
    assert sites["demo-techdaily"]["attention"] == []
    assert report["rule_errors"] and report["rule_errors"][0]["file"].endswith("broken.yaml")
    assert report["attention"] == ["broken", "demo-citynews"]


@pytest.mark.parametrize("command", [("status",), ("dead", "list")])
def test_output_to_a_full_disk_is_one_line_that_says_it_was_cut(
    tmp_path: Path, rules: Path, redis_client: redis.Redis, redis_server: str, command: tuple[str, ...]
) -> None:
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    (tmp_path / "data").mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    environment.update(
        REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(rules), CRAWLER_DATA_DIR=str(tmp_path / "data")
    )
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-m", "crawler.cli", *command],
            env=environment,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (
        2,
        [
            f"crawler {' '.join(command)}: error: cannot write the output to stdout: [Errno 28] No space left"
            " on device; free space on the disk stdout goes to, or send the output to another disk; the"
            " output is cut short"
        ],
    ), done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_captcha_pages_are_told_from_articles_about_captchas() -> None:
    assert looks_like_captcha(b'<div class="g-recaptcha" data-sitekey="x"></div>')
    assert looks_like_captcha("<p>请输入验证码</p>".encode())
    assert looks_like_captcha(b"<h1>Our systems have detected unusual traffic from your computer</h1>")
    article = b"<p>Sites ask readers to solve a captcha more and more often, researchers say.</p>" * 50
    assert not looks_like_captcha(article)


def test_the_status_tables_show_brackets_in_rule_errors_and_data_as_written(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    broken = 'domains: [news.test]\nstart_urls: http://news.test/\nindex:\n  links: {xpath: "count(//a)"}\n'
    broken += "article:\n  fields:\n    published: {xpath: '//time[re:test(., \"\\d\")]'}\n"
    (rules / "broken.yaml").write_text(broken, encoding="utf-8")
    _beat(redis_client, "[red]box[/red]:1", time.time() - 2)
    shown = _words(run_crawler("status"))
    assert 'invalid XPath "//time[re:test(., \\"\\\\d\\")]": undefined namespace prefix re:' in shown, shown
    assert (
        "(expected an XPath selecting elements or href strings, e.g. //ul[@class='news'] or //a/@href)"
        in (shown)
    )
    assert "[red]box[/red]:1" in shown


def test_dead_list_shows_brackets_in_urls_and_reasons_as_written(
    redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    _dead_letter(redis_client, "http://news.test/a?[b]=1", "HTTP 500 [bold]x[/bold] at //ul[@class='news']")
    out = run_crawler("dead", "list")
    shown_url, shown_reason = _dead_list_cells(out, 4), _dead_list_cells(out, 5)
    assert shown_url == "http://news.test/a?[b]=1", out
    assert shown_reason == "HTTP500[bold]x[/bold]at//ul[@class='news']", out


def _dead_list_cells(out: str, column: int) -> str:
    """The text of a column of the table `crawler dead list` printed (column 1: id), its cells folded over
    lines joined, without spaces."""
    rows = [line.split("│") for line in out.splitlines() if line.count("│") == 7]
    return "".join(row[column] for row in rows).replace(" ", "")


def test_dead_list_piped_shows_long_urls_and_reasons_whole(
    redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    url = "http://news.test/" + "/".join(f"section-{n}" for n in range(12)) + "/article.html"
    reason = (
        "DownloadConnectionRefusedError: Connection was refused by other side: 111: Connection refused"
        " while fetching the page of the news site. (after 2 retries)"
    )
    assert len(url) > 80 and len(reason) > 100
    _dead_letter(redis_client, url, reason)
    out = run_crawler("dead", "list")
    assert "…" not in out, out
    assert _dead_list_cells(out, 4) == url, out
    assert _dead_list_cells(out, 5) == reason.replace(" ", ""), out


def test_dead_list_piped_keeps_each_url_on_one_line_whole(
    redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A URL is what a person copies from `crawler dead list > file` or `| less` (to a browser; an id or a
    job to `dead requeue`): piped, the table was 100 columns wide and folded them over lines (found by a new
    user's walk: a URL of 60 characters on two lines). Each cell but the reason is on one line, whole, the
    table as wide as that needs; the reasons are folded, none a word a line; no line ends in a space."""
    long = "http://news.test/" + "section/" * 20 + "a.html"
    short = "http://news.test/" + "section/" * 5 + "b.html"
    reason = "HTTP 500 " + "while fetching the page of the news site " * 6
    _dead_letter(redis_client, long, reason)
    _dead_letter(redis_client, short, reason)
    lines = run_crawler("dead", "list").splitlines()
    rows = [line.split("│") for line in lines if line.count("│") == 7]
    urls = [row[4].strip() for row in rows if row[4].strip()]
    assert sorted(urls) == sorted([long, short]), lines
    ids = [row[1].strip() for row in rows if row[1].strip()]
    assert len(ids) == 2 and all(re.fullmatch("[0-9a-f]{12}", shown) for shown in ids), lines
    assert all(len(row[5].strip()) > len("HTTP 500") for row in rows), lines
    assert _dead_list_cells("\n".join(lines), 5).count("HTTP500") == 2, lines
    assert [line for line in lines if line != line.rstrip()] == []


def test_a_site_whose_rule_file_is_broken_stays_listed_with_its_counters_and_dead_letters(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    (rules / "gone.yaml").write_text("domains: [gone.test]\nstart_urls: [\n", encoding="utf-8")  # YAML error
    (rules / "wrong.yaml").write_text("name: Wrong\nstart_urls: 12\n", encoding="utf-8")  # rule error
    (rules / "no site.yaml").write_text("name: No site\n", encoding="utf-8")  # a name no site id can have
    now = time.time()
    keys = Keys("crawler")
    redis_client.hset(
        keys.stats("gone", hour_of(now - 3600)),
        mapping={"crawl/pages": 5, "store/new": 4, "fields/pages": 4, "fields/missing/body": 1},
    )
    record = {"reason": "HTTP 500", "site": "gone", "url": "http://gone.test/a", "at": now}
    redis_client.hset(keys.dead, json.dumps({"url": "http://gone.test/a"}), json.dumps(record))
    redis_client.hset(keys.grab("wrong"), mapping={"last": now - 600, "next": now - 3000})
    report = build_status(redis_client, keys, load_rules(rules), now)
    sites = {site["site"]: site for site in report["sites"]}
    assert sorted(sites) == ["demo-citynews", "gone", "wrong"]
    gone, wrong = sites["gone"], sites["wrong"]
    assert gone["rule_broken"] and wrong["rule_broken"] and not sites["demo-citynews"]["rule_broken"]
    assert (gone["pages_24h"], gone["new_24h"], gone["dead_letters"]) == (5, 4, 1)
    # No article page in the 7 days before: nothing measured then (null), not 0% missing.
    body = {
        "field": "body",
        "missing_24h": 0.25,
        "missing_before": None,
        "stopped": False,
        "never_matched": False,
    }
    assert gone["fields"] == [body]
    assert gone["attention"][0].startswith(f"rule file has errors: {rules / 'gone.yaml'}: `")
    assert any(reason.startswith("1 dead letter") for reason in gone["attention"])
    assert len(wrong["attention"]) == 1, "no grab overdue"
    assert wrong["attention"][0].startswith(f"rule file has errors: {rules / 'wrong.yaml'}: `")
    assert wrong["last_grab"] is not None
    files = {error["file"] for error in report["rule_errors"]}
    assert files == {str(rules / name) for name in ("gone.yaml", "wrong.yaml", "no site.yaml")}
    assert report["attention"] == sorted([str(rules / "no site.yaml"), "gone", "wrong"])
    lines = run_crawler("status").splitlines()
    assert _table(lines, "Sites")["gone"]["new last/24h"] == "-/4"
    assert lines[lines.index("NEEDS ATTENTION gone") + 1].startswith(
        f"  rule file has errors: {rules / 'gone.yaml'}: `"
    )
    shown = {site["site"]: site for site in json.loads(run_crawler("status", "--format", "json"))["sites"]}
    assert shown["gone"]["rule_broken"] and shown["gone"]["dead_letters"] == 1


def test_status_with_no_rule_file_says_so_where_the_folder_is_and_the_sites_redis_still_holds(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """An empty rules folder shows no empty Sites heading: it says there is no site, in which folder, where
    that is, and the sites whose grabs Redis still holds (their rule files removed, or in another folder);
    why and the fix are the note on stderr."""
    keys = Keys("crawler")
    for site in ("oldnews", "gone"):
        redis_client.hset(keys.grab(site), mapping={"last": "1", "next": "2"})
    shown = run_crawler("status")
    assert "Sites (counts" not in shown, shown
    lines = " ".join(shown.split())
    assert f"Sites: none in {str(rules)!r} ({rules.resolve()})" in lines, shown
    assert (
        "Redis still holds the last and next grab of 2 sites with no rule file there: gone, oldnews" in lines
    )
    report = json.loads(run_crawler("status", "--format", "json"))
    assert (report["rules_dir"], report["removed_sites"]) == (str(rules), ["gone", "oldnews"])
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    assert json.loads(run_crawler("status", "--format", "json"))["removed_sites"] == []


def test_dead_letters_of_sites_with_no_rule_file_here_need_attention(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """Dead letters whose site has no rule file in the rules folder (removed, renamed, or crawled with
    another folder) and entries that were no request are in no row of the Sites table: they are said on
    a line of their own, with the command that lists them, not only counted in the queue line."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    now = time.time()
    keys = Keys("crawler")
    for site, url in [
        ("feedwrong", "http://a.test/feed"),
        ("feedwrong", "http://a.test/b"),
        ("demo-citynews", "http://c.test/"),
    ]:
        record = {"reason": "HTTP 500", "site": site, "url": url, "at": now}
        redis_client.hset(keys.dead, json.dumps({"url": url}), json.dumps(record))
    redis_client.hset(keys.dead, "not json", json.dumps({"reason": "queue entry 'x' is not JSON", "at": now}))
    report = build_status(redis_client, keys, load_rules(rules), now)
    said = (
        "3 dead letters belong to no site of the rules folder (feedwrong: 2, entries that were no request:"
        " 1): `crawler dead list` shows them; requeue them once their rules are back (`crawler dead requeue"
        " --site SITE`), or drop them"
    )
    assert report["dead_elsewhere"] == said
    assert "dead_letters" in report["attention"]
    assert f"NEEDS ATTENTION {said}" in run_crawler("status").splitlines()
    only = build_status(redis_client, keys, load_rules(rules), now, site="demo-citynews")
    assert only["dead_elsewhere"] is None
    redis_client.hdel(keys.dead, "not json", json.dumps({"url": "http://a.test/b"}))
    assert build_status(redis_client, keys, load_rules(rules), now)["dead_elsewhere"] == (
        "1 dead letter belongs to no site of the rules folder (feedwrong: 1): `crawler dead list` shows it;"
        " requeue it once its rule is back (`crawler dead requeue --site SITE`), or drop it"
    )


def test_a_sites_queued_requests_count_those_of_its_discover_crawls_host_slots(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A discover crawl queues its pages by host (``energy@news.test``): the site's `queued` counted its own
    queue alone (1 here, where 3 wait)."""
    (rules / "energy.yaml").write_text(
        "discover:\n  topic: {keywords: [solar, wind]}\n  seeds: ['https://news.test/']\n  budget: 50\n"
        "  domains: [news.test, wind.test]\n",
        encoding="utf-8",
    )
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    queue = LeasedQueue(redis_client, Keys("crawler"))
    for number, slot in enumerate(("energy", "energy@news.test", "energy@wind.test", "demo-citynews")):
        request = {"url": f"https://news.test/{number}", "meta": {"site": slot.split("@")[0]}, "priority": 0}
        assert queue.push(json.dumps(request).encode(), priority=0, site=slot, job=None)
    report = json.loads(run_crawler("status", "--format", "json"))
    assert {site["site"]: site["queued"] for site in report["sites"]} == {"demo-citynews": 1, "energy": 3}


def test_a_discover_crawl_shows_its_links_kept_refused_seen_already_released_and_hosts_expired(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    (rules / "energy.yaml").write_text(
        "discover:\n  topic: {keywords: [solar, wind]}\n  seeds: ['https://news.test/']\n  budget: 50\n"
        "  domains: [news.test]\n",
        encoding="utf-8",
    )
    now = time.time()
    redis_client.hset(
        Keys("crawler").stats("energy", hour_of(now)),
        mapping={
            "discover/relevant": 3,
            "discover/irrelevant": 7,
            "discover/links_kept": 41,
            "discover/links_refused": 5,
            "discover/links_seen": 17,
            "discover/released": 9,
            "discover/hosts_expired": 4,
        },
    )
    found = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"][0]["discover"]
    shown = {name: found[name] for name in found if name.startswith("links_")}
    assert shown == {
        "links_kept_24h": 41,
        "links_refused_24h": 5,
        "links_seen_24h": 17,
        "links_released_24h": 9,
    }
    assert found["hosts_expired_24h"] == 4
    columns = _table(run_crawler("status").splitlines(), "Discover crawls")["energy"]
    assert (columns["links kept"], columns["refused"], columns["seen already"], columns["released"]) == (
        "41",
        "5",
        "17",
        "9",
    )


def test_the_tables_show_pages_ban_signs_backoffs_and_each_fields_missing_share(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    counters = {
        "crawl/pages": 12,
        "ban": 1,
        "ban_signal": 3,
        "backoff": 2,
        "fields/pages": 10,
        "fields/missing/body": 5,
    }
    earlier = {"fields/pages": 10, "fields/missing/body": 1}
    site = _citynews(rules, redis_client, time.time(), counters, h30=earlier)
    assert (site["article_pages_24h"], site["article_pages_before"]) == (10, 10)
    lines = run_crawler("status").splitlines()
    row = _table(lines, "Sites")["demo-citynews"]
    assert (row["pages"], row["bans"], row["backoffs"]) == ("12", "1 (3 signs)", "2")
    fields = _table(lines, "Rule fields")["demo-citynews"]
    assert fields["article pages"] == "10 (10)"
    assert "author 0% (0%), body 50% (10%) STOPPED MATCHING, published 0% (0%)" in fields["fields"]
    reasons = lines[lines.index("NEEDS ATTENTION demo-citynews") + 1 :]
    assert (
        "  field body stopped matching: missing on 50% of pages (before: 10%): the site's layout changed?"
        " `crawler rules try demo-citynews URL` shows what each field finds on a page" in (reasons)
    )


def test_a_blank_line_parts_the_reasons_a_site_needs_attention_from_the_next_heading(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """Piped, the last reason demo-citynews needs attention is followed by a blank line, then the heading
    of the rule fields, as every heading follows one."""
    counters = {"fields/pages": 10, "fields/missing/body": 5}
    _citynews(rules, redis_client, time.time(), counters, h30={"fields/pages": 10, "fields/missing/body": 1})
    lines = run_crawler("status").splitlines()
    heading = next(index for index, line in enumerate(lines) if line.startswith("Rule fields"))
    assert lines[heading - 2].startswith("  field body stopped matching"), lines
    assert lines[heading - 1] == "", lines


def test_a_published_field_that_gives_no_date_on_most_pages_needs_attention(
    rules: Path, redis_client: redis.Redis
) -> None:
    counters = {"fields/pages": 10, "fields/unparsed/published": 8}
    site = _citynews(rules, redis_client, time.time(), counters)
    (reason,) = site["attention"]
    assert reason.startswith(
        "published is no date the crawl recognises on 8 of 10 pages in 24 h (stored as the page gives it):"
        f" {rules / 'demo-citynews.yaml'}: article.fields.published: "
    )
    assert "ambiguous" in reason


def test_a_new_rules_field_that_never_matched_names_its_key_and_one_the_feed_supplies_is_no_fault(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    counters = {
        "fields/pages": 10,
        "fields/missing/title": 10,
        "fields/missing/published": 10,
        "fields/from_feed/published": 10,
    }
    site = _citynews(rules, redis_client, time.time(), counters)
    fields = {field["field"]: field for field in site["fields"]}
    assert (fields["title"]["never_matched"], fields["title"]["stopped"]) == (True, False)
    assert not (fields["published"]["never_matched"] or fields["published"]["stopped"])
    assert site["attention"] == [
        "field title found nothing on any page (no article page before): check article.fields.title in"
        f" {rules / 'demo-citynews.yaml'} with `crawler rules try demo-citynews URL`"
    ]
    lines = run_crawler("status").splitlines()
    row = _words(_table(lines, "Rule fields")["demo-citynews"]["fields"])
    assert "title 100% (-) NEVER MATCHED" in row and "published 100% (-)," in row
    assert "STOPPED MATCHING" not in row


def test_status_piped_fits_100_columns_and_shows_every_value_whole(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """Piped, the tables are blocks of lines no wider than 100 columns, each value whole: a site whose next
    grab waits, with errors of three kinds; a discover crawl; a worker storing in a long folder."""
    (rules / "energy.yaml").write_text(
        "discover:\n  topic: {keywords: [solar, wind]}\n  seeds: ['https://news.test/']\n  budget: 50\n"
        "  domains: [news.test]\n",
        encoding="utf-8",
    )
    now = time.time()
    kinds = {"errors/HTTP 404": 3, "errors/DownloadTimeoutError": 2, "errors/ConnectionRefusedError": 1}
    _citynews(rules, redis_client, now, {"crawl/pages": 12, "ban": 1, "ban_signal": 3, **kinds})
    redis_client.hset(
        "crawler:grab:demo-citynews",
        mapping={
            "last": now - 3600,
            "next": now - 60,
            "job": "j1",
            "waiting": "j1",
            "waiting_since": now - 60,
        },
    )
    store = "crawler-machine-number-one.example.internal:/srv/crawler/data/a/long/path/to/the/articles"
    _beat(redis_client, "crawler-machine-number-one.example.internal:4242", now - 2, store=store)
    lines = run_crawler("status").splitlines()
    report = json.loads(run_crawler("status", "--format", "json"))
    # A message is one line however long, for grep; the rest fits 100 columns.
    reasons = {f"  {reason}" for site in report["sites"] for reason in site["attention"]}
    wide = [line for line in lines if len(line) > 100]
    assert all(line.startswith("NEEDS ATTENTION") or line in reasons for line in wide), "\n".join(lines)
    row = _table(lines, "Sites")["demo-citynews"]
    assert row["errors"] == "6 (ConnectionRefusedError: 1, DownloadTimeoutError: 2, HTTP 404: 3)", row
    assert row["next grab (UTC)"].endswith(" (waits for the last grab)") and row["bans"] == "1 (3 signs)", row
    worker = _table(lines, "Workers")["crawler-machine-number-one.example.internal:4242"]
    assert worker["store"].replace(" ", "") == store, worker
    assert _table(lines, "Discover crawls")["energy"]["model ms/page"] == "-"


def test_status_labels_the_grab_times_utc_on_a_terminal_and_piped_and_json_keeps_its_keys(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last and next grab are UTC times: their columns say so, in a terminal's table and in the piped
    blocks; ``--format json`` keeps ``last_grab`` and ``next_grab`` (ISO 8601 with their offset)."""
    now = time.time()
    _citynews(rules, redis_client, now, {"crawl/pages": 1})
    redis_client.hset(
        "crawler:grab:demo-citynews", mapping={"last": now - 3600, "next": now + 600, "job": "j1"}
    )
    last, following = (datetime.fromtimestamp(moment, UTC) for moment in (now - 3600, now + 600))
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert (row["last grab (UTC)"], row["next grab (UTC)"]) == (
        f"{last:%Y-%m-%d %H:%M}",
        f"{following:%Y-%m-%d %H:%M}",
    ), row
    (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert (site["last_grab"][:16], site["next_grab"][:16]) == (
        f"{last:%Y-%m-%dT%H:%M}",
        f"{following:%Y-%m-%dT%H:%M}",
    )
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "300")
    shown = re.sub(r"\x1b\[[0-9;]*m", "", run_crawler("status"))
    header = next(line for line in shown.splitlines() if "new last/24h" in line)
    assert "last grab (UTC)" in header and "next grab (UTC)" in header, shown


def test_a_site_crawled_by_temp_alone_shows_its_last_temp_crawl_beside_never_grabbed(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A new user's `crawler temp SITE` crawled the site, and its status said `last grab (UTC): never`
    alone, as of a site nothing ever crawled: it names the last temp crawl's start too, and `--format
    json` gives it, ``last_temp`` (its job, started, ended; null for a site with none)."""
    now = time.time()
    _citynews(rules, redis_client, now, {"crawl/pages": 3})
    keys = Keys("crawler")
    redis_client.set(keys.temp("demo-citynews"), "t1")
    redis_client.hset(keys.job("t1"), mapping={"kind": "temp", "created": now - 120, "ended": now - 60})
    started, ended = (datetime.fromtimestamp(moment, UTC) for moment in (now - 120, now - 60))
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert row["last grab (UTC)"] == f"never (temp crawl {started:%Y-%m-%d %H:%M})", row
    (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert site["last_grab"] is None
    assert site["last_temp"] == {
        "job": "t1",
        "started": f"{started:%Y-%m-%dT%H:%M:%SZ}",
        "ended": f"{ended:%Y-%m-%dT%H:%M:%SZ}",
    }
    redis_client.delete(keys.job("t1"))
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert row["last grab (UTC)"] == "never (temp crawl t1)", row
    redis_client.delete(keys.temp("demo-citynews"))
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert row["last grab (UTC)"] == "never", row
    (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert site["last_temp"] is None


def test_status_piped_folds_a_first_cell_longer_than_a_line_indented_under_it(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A worker's id and a proxy's URL longer than 100 columns, first cells of their blocks: folded over
    lines indented deeper than the block's ``name: value`` lines, never from column 0 as another row."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    worker = "crawler-" + ".".join(f"rack-{n}" for n in range(20)) + ".example.internal:4242"
    proxy = "http://proxy.example.internal:3128/" + "/".join(f"route-{n}" for n in range(20))
    assert len(worker) > 100 and len(proxy) > 100
    _beat(redis_client, worker, time.time() - 2)
    redis_client.hset(Keys("crawler").proxy(proxy), mapping={"ok": 3, "failed": 1})
    lines = run_crawler("status").splitlines()
    assert not [line for line in lines if len(line) > 100 and not line.startswith("NEEDS ATTENTION")], lines
    tables = {title: _table(lines, title) for title in ("Workers", "Proxies")}
    assert list(tables["Workers"]) == [worker], lines
    assert tables["Workers"][worker]["alive"] == "yes", lines
    assert tables["Proxies"] == {
        proxy: {"ok": "3", "failed": "1", "banned": "0", "latency": "-", "state": "ok"}
    }
    first = next(index for index, line in enumerate(lines) if worker.startswith(line))
    assert lines[first + 1].startswith("    ") and worker.endswith(lines[first + 1].strip()), lines


def _table(lines: list[str], title: str) -> dict[str, dict[str, str]]:
    """The rows of the table of ``title`` as ``crawler status`` printed it piped (a block per row: its first
    cell, folded over lines indented by four when long, then ``  name: value`` lines), by their first cell
    (its lines joined as they are: the ids and URLs of the tests hold no spaces); the lines of a folded
    value joined with spaces."""
    start = next(index for index, line in enumerate(lines) if line.startswith(title))
    blocks: list[tuple[list[str], dict[str, str]]] = []
    name = ""
    for line in lines[start + 1 :]:
        if not line:
            break
        if not line.startswith(" "):
            blocks.append(([line], {}))
            name = ""
        elif not name and line.startswith("    "):
            blocks[-1][0].append(line.strip())
        elif not line.startswith("   "):
            name, _, value = line.strip().partition(":")
            blocks[-1][1][name] = value.strip()
        else:
            blocks[-1][1][name] = f"{blocks[-1][1][name]} {line.strip()}"
    return {"".join(first): row for first, row in blocks}


def test_errors_rising_say_the_mean_an_hour_over_the_23_hours_before(
    rules: Path, redis_client: redis.Redis
) -> None:
    site = _citynews(rules, redis_client, time.time(), {"crawl/errors": 12}, h5={"crawl/errors": 23})
    assert (
        "errors rising: 12 in the last hour, against a mean of 1.0 an hour over the 23 h before: "
        + FAILED.format(site="demo-citynews")
        in (site["attention"])
    )


def test_errors_of_a_site_with_no_requests_in_the_hours_before_are_not_said_rising(
    rules: Path, redis_client: redis.Redis
) -> None:
    """A site new to the service (its first requests in the last hour, five of them 404s) had "errors
    rising: 5 in the last hour, against a mean of 0.0": nothing rose. Its failed share is what is said."""
    site = _citynews(rules, redis_client, time.time(), {"crawl/errors": 5, "crawl/pages": 1})
    assert not [line for line in site["attention"] if line.startswith("errors rising")], site["attention"]
    said = "fetch errors: 5 of 6 requests in 24 h failed: " + FAILED.format(site="demo-citynews")
    assert said in site["attention"], site["attention"]


def test_a_dead_worker_shows_no_rate_and_is_dropped_an_hour_after_its_last_beat(
    tmp_path: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    keys = Keys("crawler")
    now = time.time()
    for worker, seen in (("vm:1", now - 2), ("vm:9524", now - 1398), ("vm:7", now - 3601)):
        # vm:9524's beat is an older worker's, with no sites.
        sites: list[str] | None = None if worker == "vm:9524" else []
        _beat(
            redis_client, worker, seen, host="vm", started=now - 9000, responses=100, rate=240.0, sites=sites
        )
    report = build_status(redis_client, keys, load_rules(tmp_path), now)
    assert [(w["id"], w["alive"], w["rate_per_minute"], w["sites"]) for w in report["workers"]] == [
        ("vm:1", True, 240.0, []),
        ("vm:9524", False, 0.0, []),
    ]
    assert report["workers_alive"] == 1
    # A live worker's beat removes the entry of the worker dead for over an hour, and only that one.
    _beat_here(redis_server)
    assert sorted(redis_client.hkeys(keys.workers)) == sorted([b"vm:1", b"vm:9524", THIS_WORKER])


def test_a_worker_restarted_with_the_same_host_and_pid_is_not_taken_for_the_dead_one(
    tmp_path: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    """A worker's id was ``host:pid``: a container restarted keeps its host name and its process is pid 1
    again, so the new worker's beat overwrote the dead one's entry (the dead worker gone from status, its
    figures taken for the new one's) and held its session holds under the same name. The id names the
    process start (``host:pid:start``); the entry of a worker of an earlier version (``host:pid``, here the
    dead one) is still read, and forgotten as any dead worker's."""
    keys = Keys("crawler")
    now = time.time()
    dead = f"{socket.gethostname()}:{os.getpid()}"
    fields = {"host": socket.gethostname(), "pid": os.getpid(), "pid_space": "old-boot/pid:[1]"}
    _beat(redis_client, dead, now - 60, started=now - 9000, responses=5000, **fields)
    _beat_here(redis_server)
    report = build_status(redis_client, keys, load_rules(tmp_path), now)
    shown = sorted((worker["id"], worker["alive"], worker["responses"]) for worker in report["workers"])
    assert shown == [(dead, False, 5000), (THIS_WORKER.decode(), True, 0)], report["workers"]
    assert re.fullmatch(rf"{re.escape(dead)}:[0-9a-f]{{6}}", THIS_WORKER.decode())
    _beat(redis_client, dead, now - 7200, **fields)
    _beat_here(redis_server)
    assert redis_client.hkeys(keys.workers) == [THIS_WORKER]


def test_a_worker_is_forgotten_by_its_own_setting_and_never_while_alive(
    tmp_path: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    keys = Keys("crawler")
    now = time.time()
    # vm:1 alive; vm:2 dead for 100 s with SUPERVISION_FORGET_WORKER_SECONDS=60 of its own; vm:3 the same
    # without a setting of its own in its beat (the default, an hour, applies).
    beats: tuple[tuple[str, float, dict[str, float]], ...] = (
        ("vm:1", now - 2, {}),
        ("vm:2", now - 100, {"forget": 60.0}),
        ("vm:3", now - 100, {}),
    )
    for worker, seen, own in beats:
        _beat(redis_client, worker, seen, host="vm", started=now - 9000, responses=100, rate=240.0, **own)
    report = build_status(redis_client, keys, load_rules(tmp_path), now)
    assert [w["id"] for w in report["workers"]] == ["vm:1", "vm:3"]
    # A worker started with 0 forgets the dead ones at once, never a live one.
    _beat_here(redis_server, SUPERVISION_FORGET_WORKER_SECONDS=0)
    assert sorted(redis_client.hkeys(keys.workers)) == sorted([b"vm:1", THIS_WORKER])


@pytest.mark.parametrize(
    ("urls", "again", "said"),
    [
        (
            ("http://news.test/a", "http://news.test/b"),
            False,
            "or `crawler temp news` crawls them, going on with its last temp crawl (job j7), whose dead"
            " letters they were",
        ),
        (
            ("http://news.test/a",),
            True,
            "or `crawler temp news --again` crawls it, going on with its last temp crawl (job j7), whose dead"
            " letter it was",
        ),
    ],
    ids=["temp", "temp_again"],
)
def test_requeued_dead_letters_of_a_sites_last_temp_crawl_say_that_temp_goes_on_with_them(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    urls: tuple[str, ...],
    again: bool,
    said: str,
) -> None:
    """docs/cli.md: the next `crawler temp S` of a site whose last temp crawl's dead letters were requeued
    continues that job with them; `dead requeue` said only to start a worker. A site's last temp crawl was
    `crawler temp S --again` (its job's fetches_seen): a plain `crawler temp S` does not go on with its job
    (it starts a new one, which keeps the seen filter); `dead requeue` named it all the same."""
    for url in urls:
        request = {"url": url, "meta": {"site": "news", "job": "j7"}, "priority": 0}
        redis_client.hset(Keys("crawler").dead, json.dumps(request), json.dumps({"reason": "HTTP 500"}))
    if again:
        redis_client.hset(Keys("crawler").job("j7"), mapping={"kind": "temp", "fetches_seen": 1})
    redis_client.set(Keys("crawler").temp("news"), "j7")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    out = run_crawler("dead", "requeue", "--all")
    assert out.splitlines()[-1] == said, out


def test_requests_waiting_with_no_worker_alive_say_how_to_start_one(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = Keys("crawler")
    _dead_letter(redis_client, "http://news.test/a", "HTTP 500")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    # A worker that died long ago does not crawl them.
    now = time.time()
    _beat(redis_client, "h:1", now - 600, started=now - 900)
    hint = "no worker alive to crawl it: start one with `crawler worker` (or `crawler run`"
    out = run_crawler("dead", "requeue", "--all")
    assert "requeued 1 dead letter" in out and f"1 request in the queue and {hint}" in out, out
    shown = _words(run_crawler("status"))
    assert f"NEEDS ATTENTION 1 request in the queue and {hint}" in shown, shown
    report = build_status(redis_client, keys, load_rules(rules), time.time())
    assert "queue" in report["attention"] and report["no_worker"].startswith("1 request in the queue")
    # With a worker alive, nothing to say.
    _beat(redis_client, "h:2", time.time(), pid=2, started=now - 900)
    report = build_status(redis_client, keys, load_rules(rules), time.time())
    assert report["no_worker"] is None and "queue" not in report["attention"]


def test_a_dead_letter_requeued_for_a_site_whose_queue_key_is_wrong_says_it_waits_in_delayed(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With site news's queue key SET to a string, `dead requeue` put its request in crawler:delayed and said
    only '1 request in the queue'."""
    keys = Keys("crawler")
    _dead_letter(redis_client, "http://news.test/a", "HTTP 500")
    redis_client.set(keys.queue_of("news"), "oops")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    out = _words(run_crawler("dead", "requeue", "--all"))
    assert redis_client.zcard(keys.delayed) == 1
    assert (
        "news: its 1 requeued request waits in crawler:delayed, not in its queue: Redis key"
        " crawler:queue:news is a string, not a sorted set: the workers skip the site, its requests neither"
        " taken nor queued, until the key is removed; fix: redis-cli DEL crawler:queue:news" in out
    ), out


def test_leases_past_their_deadline_are_shown_as_expired_apart_from_those_held(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    keys = Keys("crawler")
    # A worker killed with its leases (deadline passed: a negative lease time), and one holding its lease.
    killed = LeasedQueue(redis_client, keys, lease_seconds=-60.0)
    for index in range(6):
        request = {"url": f"http://news.test/{index}", "meta": {"site": "news"}, "priority": 0}
        killed.push(json.dumps(request).encode(), priority=0, site="news", job=None)
    assert all(popped.member for popped in killed.pop_many(count=4))
    assert LeasedQueue(redis_client, keys, lease_seconds=600.0).pop().member
    report = build_status(redis_client, keys, load_rules(rules), time.time())
    assert report["queue"]["leased"] == 5 and report["queue"]["expired"] == 4, report["queue"]
    shown = _words(run_crawler("status"))
    assert "5 leased (4 of them expired: back in the queue when a worker runs)" in shown, shown
    redis_client.delete(keys.leases)
    shown = _words(run_crawler("status"))
    assert " 0 leased, " in shown and "expired" not in shown, shown


def test_a_site_whose_every_request_failed_needs_attention_however_few_they_were(
    rules: Path, redis_client: redis.Redis
) -> None:
    for name in ("demo-citynews", "demo-techdaily"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    now = time.time()
    keys = Keys("crawler")
    redis_client.hset(keys.stats("demo-citynews", hour_of(now - 3600)), mapping={"crawl/errors": 2})
    # Two failures beside a page fetched are below the minimum of "most requests failed".
    redis_client.hset(
        keys.stats("demo-techdaily", hour_of(now - 3600)), mapping={"crawl/errors": 2, "crawl/pages": 1}
    )
    report = build_status(redis_client, keys, load_rules(rules), now)
    sites = {site["site"]: site for site in report["sites"]}
    assert sites["demo-citynews"]["attention"] == [
        "fetch errors: 2 of 2 requests in 24 h failed: " + FAILED.format(site="demo-citynews")
    ]
    assert sites["demo-techdaily"]["attention"] == []
    assert report["attention"] == ["demo-citynews"]


def test_status_of_one_site_shows_its_block_and_the_service_lines_and_names_the_sites_when_unknown(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("demo-citynews", "demo-techdaily"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    (rules / "broken.yaml").write_text("name: Broken\nstart_urls: 12\n", encoding="utf-8")
    now = time.time()
    keys = Keys("crawler")
    for site, errors in (("demo-citynews", 2), ("demo-techdaily", 5)):
        redis_client.hset(keys.stats(site, hour_of(now - 3600)), mapping={"crawl/errors": errors})
    request = {"url": "http://news.test/a", "meta": {"site": "demo-techdaily"}, "priority": 0}
    LeasedQueue(redis_client, keys).push(
        json.dumps(request).encode(), priority=0, site="demo-techdaily", job=None
    )
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    shown = _words(run_crawler("status", "--site", "demo-citynews"))
    assert "queue 1 request" in shown and "redis " in shown, shown
    assert "NEEDS ATTENTION 1 request in the queue and no worker alive" in shown, shown
    assert "NEEDS ATTENTION demo-citynews fetch errors: 2 of 2 requests in 24 h failed" in shown, shown
    assert "demo-techdaily" not in shown and "broken" not in shown, shown
    report = json.loads(run_crawler("status", "--site", "broken", "--format", "json"))
    assert [site["site"] for site in report["sites"]] == ["broken"]
    assert {error["file"] for error in report["rule_errors"]} == {str(rules / "broken.yaml")}
    assert report["attention"] == ["broken", "queue"]
    assert report["queue"]["queued"] == 1
    # An unknown site is exit 2, which run_crawler does not expect: main() itself, in its environment.
    assert main(["status", "--site", "demo-citynew"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("crawler status: error: no site 'demo-citynew' in ")
    assert "did you mean 'demo-citynews'?" in error, error
    assert "(sites: broken, demo-citynews, demo-techdaily)" in error, error


def test_pages_a_rules_encoding_read_though_they_say_utf8_are_noted_in_the_tables_without_attention(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """The JSON's `rule_encoding_unproven_utf8_24h`, told piped too: a note, the site needs no attention."""
    counters = {"crawl/pages": 5, "crawl/rule_encoding_unproven_utf8": 2}
    _citynews(rules, redis_client, time.time(), counters)
    rule_file = rules / "demo-citynews.yaml"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + "encoding: gbk\n", encoding="utf-8")
    lines = run_crawler("status").splitlines()
    assert "NEEDS ATTENTION demo-citynews" not in lines, lines
    notes = lines[lines.index("NOTE demo-citynews") + 1 :]
    assert notes[0] == (
        "  the rule's `encoding: gbk` read 2 pages in 24 h that say UTF-8 and are valid UTF-8, with too few"
        " multi-byte characters to tell UTF-8 from gbk: if the site's pages are UTF-8 now, remove the key"
        f" from {rule_file} (the crawl's warning names a page)"
    ), notes
    assert notes[1] == "", notes


# --- Redis: the embedded server, started on demand ---------------------------------------------------------


@pytest.fixture
def embedded_data(tmp_path: Path, rules: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder whose embedded Redis holds a key (a crawl was there) and runs no more; the commands
    in this process use it (no REDIS_URL)."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    data = tmp_path / "data"
    with EmbeddedRedis(data) as embedded:
        client = redis.Redis.from_url(embedded.url)
        client.set("crawler:sequence", 1)
        client.close()
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("CRAWLER_RULES_DIR", str(rules))
    monkeypatch.setenv("CRAWLER_DATA_DIR", str(data))
    return data


def _redis_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The Redis line of `crawler status` (piped, it wraps: its lines joined)."""
    assert main(["status", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = next(index for index, line in enumerate(lines) if line.startswith("redis "))
    last = next(index for index in range(first, len(lines)) if lines[index].endswith(" MB"))
    return " ".join(lines[first : last + 1])


def test_status_of_an_embedded_redis_it_started_says_so_not_up_0s(
    embedded_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No process runs the data folder's embedded Redis: `status` starts it to read it, and says so, with
    where its data lives, rather than an uptime of 0 s that tells nothing."""
    line = _redis_line(capsys)
    assert " up " not in line, line
    aof = embedded_data.resolve() / "redis" / "appendonly.aof"
    assert "embedded, started by this command" in line and str(aof) in line, line
    assert main(["status", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["redis"]["embedded"]
    assert shown == {"started_by_this_command": True, "data": str(aof), "users": []}, shown


def test_status_of_an_embedded_redis_other_processes_run_gives_its_uptime_and_who_runs_it(
    embedded_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process runs the data folder's embedded Redis (a worker, a crawl): `status` gives its uptime and
    the pids that run it."""
    holding = (
        "import sys; from pathlib import Path; from crawler.redisio.embedded import EmbeddedRedis;"
        " server = EmbeddedRedis(Path(sys.argv[1])); server.ensure(); print('up', flush=True);"
        " sys.stdin.read(); server.close()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holding, str(embedded_data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "up\n"
        time.sleep(1.1)
        line = _redis_line(capsys)
        assert main(["status", "--format", "json"]) == 0
        shown = json.loads(capsys.readouterr().out)["redis"]
    finally:
        holder.communicate(timeout=60)
    assert " up " in line and " up 0s" not in line, line
    assert f"run by pid {holder.pid}" in line, line
    assert shown["embedded"]["started_by_this_command"] is False and shown["uptime_seconds"] >= 1, shown


def test_status_of_a_redis_given_by_url_keeps_its_uptime(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    line = next(line for line in run_crawler("status").splitlines() if line.startswith("redis "))
    assert " up " in line and "embedded" not in line, line
    assert json.loads(run_crawler("status", "--format", "json"))["redis"]["embedded"] is None


def _round_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of the commands and pipelines sent to Redis (each one round trip), from now on."""
    sent = [0]
    send: Callable[..., None] = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        sent[0] += 1
        send(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    return sent


def test_status_reads_the_sites_in_as_many_round_trips_for_30_sites_as_for_3(
    rules: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`crawler status` read each site in about 10 round trips of its own (its grab, counters, last job,
    ban, politeness, errors, pause, queue slots and their sizes): 3,017 for 300 sites, seconds of waiting
    on a Redis across a network. The sites' reads are pipelined together: their number does not change
    the round trips."""
    keys = Keys("crawler")
    now = time.time()
    trips = []
    for count in (3, 30):
        for index in range(count):
            (rules / f"site{index:02d}.yaml").write_text(
                f"domains: [site{index}.test]\nstart_urls: ['https://site{index}.test/']\n"
                "schedule: {every: 1h}\narticle:\n  fields:\n    body: {xpath: //p}\n",
                encoding="utf-8",
            )
            redis_client.hset(keys.grab(f"site{index:02d}"), mapping={"job": f"j{index}", "next": now})
            redis_client.hset(keys.job(f"j{index}"), mapping={"stored": index})
        ruleset = load_rules(rules)
        build_status(redis_client, keys, ruleset, now)  # the connections it opens, opened
        sent = _round_trips(monkeypatch)
        report = build_status(redis_client, keys, ruleset, now)
        trips.append(sent[0])
        monkeypatch.undo()
        assert [site["new_last_grab"] for site in report["sites"]] == list(range(count))
    assert trips[1] == trips[0], trips


def test_status_reads_120_sites_in_pipelines_of_a_bounded_size(
    rules: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status read the grabs and 192 counter hashes of all sites in one pipeline: 1,000 sites were
    about 195,000 commands and tens of MB of replies held at once. It reads them a few sites at a time
    (SITES_PER_PIPELINE): 120 sites are three pipelines of at most 50 sites' commands, and the report
    is the same."""
    keys = Keys("crawler")
    now = time.time()
    for index in range(120):
        (rules / f"site{index:03d}.yaml").write_text(
            f"domains: [site{index}.test]\nstart_urls: ['https://site{index}.test/']\n"
            "schedule: {every: 1h}\narticle:\n  fields:\n    body: {xpath: //p}\n",
            encoding="utf-8",
        )
        redis_client.hset(keys.grab(f"site{index:03d}"), mapping={"job": f"j{index}", "next": now})
        redis_client.hset(keys.job(f"j{index}"), mapping={"stored": index})
    ruleset = load_rules(rules)
    sizes: list[int] = []
    execute = redis.client.Pipeline.execute

    def measured(self: redis.client.Pipeline, raise_on_error: bool = True) -> list[Any]:
        sizes.append(len(self.command_stack))
        return execute(self, raise_on_error)

    monkeypatch.setattr(redis.client.Pipeline, "execute", measured)
    report = build_status(redis_client, keys, ruleset, now)
    assert [site["new_last_grab"] for site in report["sites"]] == list(range(120))
    per_site = 1 + 192 + 3  # its grab, counters, ban, pause and last temp crawl
    assert max(sizes) == SITES_PER_PIPELINE * per_site, sizes
    assert sizes.count(SITES_PER_PIPELINE * per_site) == 2, sizes
    assert 20 * per_site in sizes, sizes


def test_a_redis_error_while_the_status_is_read_is_one_line_not_a_traceback(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Redis answers PING, then an error to a read of the status (a key of the crawler's prefix that holds
    another type, written by another program: WRONGTYPE; or the connection lost): `crawler status` ended
    with a traceback."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    run_crawler("status")
    redis_client.set(Keys("crawler").workers, "not a hash")
    assert main(["status"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "crawler status: error: Redis answered a read of the status with an error"
    ), captured.err
    assert "WRONGTYPE" in captured.err and "Traceback" not in captured.err, captured.err
    assert "give the crawler a prefix of its own (REDIS_KEY_PREFIX)" in captured.err, captured.err
    assert len(captured.err.splitlines()) == 1, captured.err


# --- status --check: for cron, systemd, Nagios, CI ---------------------------------------------------------


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`crawler status --check ARGS` in this process: its exit code, stdout and stderr."""
    code = main(["status", "--check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_check_of_a_quiet_healthy_service_prints_nothing_and_exits_0(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("demo-citynews", "demo-techdaily"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    keys = Keys("crawler")
    redis_client.hset(keys.stats("demo-citynews", hour_of(time.time())), mapping={"crawl/pages": 4})
    _beat(redis_client, "h:1", time.time())
    assert _check(capsys) == (0, "", "")
    assert _check(capsys, "--format", "json") == (0, "[]\n", "")
    assert _check(capsys, "--site", "demo-techdaily") == (0, "", "")


def test_status_check_names_each_site_and_part_that_needs_attention_and_exits_1(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One line each, the site or part then the reason, in the table's words; JSON: those entries; --site:
    that site's and the service's."""
    for name in ("demo-citynews", "demo-techdaily"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    (rules / "broken.yaml").write_text("name: Broken\nstart_urls: 12\n", encoding="utf-8")
    now = time.time()
    keys = Keys("crawler")
    signal = {"what": "HTTP 403", "url": "http://news.test/a"}
    redis_client.hset(
        keys.bans, "demo-citynews", json.dumps({"at": now - 60, "what": "HTTP 403", "signals": [signal]})
    )
    redis_client.hset(keys.stats("demo-techdaily", hour_of(now - 3600)), mapping={"crawl/errors": 2})
    request = {"url": "http://news.test/b", "meta": {"site": "demo-techdaily"}, "priority": 0}
    LeasedQueue(redis_client, keys).push(
        json.dumps(request).encode(), priority=0, site="demo-techdaily", job=None
    )
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    table = run_crawler("status")
    code, out, err = _check(capsys)
    assert (code, err) == (1, ""), err
    lines = out.splitlines()
    report = json.loads(run_crawler("status", "--format", "json"))
    sites = {site["site"]: site for site in report["sites"]}
    ban = sites["demo-citynews"]["attention"][0]
    assert ban.startswith("banned at ") and "HTTP 403 at http://news.test/a" in ban, ban
    errors = str(rules / "broken.yaml")
    assert lines[:4] == [
        "queue: 1 request in the queue and no worker alive to crawl it: start one with `crawler worker` (or"
        " `crawler run`, the scheduler with a worker)",
        f"broken: rule file has errors: {errors}: `crawler rules check {errors}` lists them",
        f"demo-citynews: {ban}",
        "demo-techdaily: fetch errors: 2 of 2 requests in 24 h failed: "
        + FAILED.format(site="demo-techdaily"),
    ], lines
    assert lines[4:] == [
        f"{error['file']}: {error['error'].removeprefix(error['file'] + ': ')};"
        f" `crawler rules check {errors}` lists them"
        for error in report["rule_errors"]
    ]
    assert len(lines) > 4 and all(line.startswith(errors + ": ") for line in lines[4:]), lines
    # The table's words: each reason is a line of the table's.
    for line in lines[1:4]:
        assert line.split(": ", 1)[1] in table, line
    code, out, _ = _check(capsys, "--format", "json")
    entries = json.loads(out)
    assert code == 1
    assert entries[:4] == [
        {"part": "queue", "reason": lines[0].removeprefix("queue: ")},
        {"site": "broken", "reason": lines[1].removeprefix("broken: ")},
        {"site": "demo-citynews", "reason": ban},
        {"site": "demo-techdaily", "reason": lines[3].removeprefix("demo-techdaily: ")},
    ], entries
    assert {entry.get("site") or entry.get("part") or entry["file"] for entry in entries} == {
        *report["attention"],
        errors,
    }
    code, out, _ = _check(capsys, "--site", "demo-citynews")
    assert code == 1
    assert out.splitlines() == [lines[0], lines[2]], out
    redis_client.flushall()
    assert _check(capsys, "--site", "demo-citynews") == (0, "", "")


def test_status_check_that_cannot_read_the_status_exits_3_not_1(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redis unreachable (or answering the status's reads with an error) is no site needing attention: a
    code of its own, 3, that a check tells apart from 1; `crawler status` alone keeps exit 1."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    redis_client.set(Keys("crawler").workers, "not a hash")
    code, out, err = _check(capsys)
    assert (code, out) == (3, ""), err
    assert err.startswith("crawler status: error: Redis answered a read of the status with an error"), err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{port}/0")
    for form in ("table", "json"):
        code, out, err = _check(capsys, "--format", form)
        assert (code, out) == (3, ""), err
        assert err.startswith(f"crawler status: error: cannot reach Redis at redis://127.0.0.1:{port}/0"), err
    assert main(["status"]) == 1


def test_status_names_a_site_whose_inflight_count_is_no_integer_and_reports_the_others(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Someone wrote a site's count of downloads under way (HSET crawler:polite:SITE inflight oops), which
    the workers now set the site aside for: `crawler status` failed for every site reading it (ValueError:
    invalid literal for int()). The site is named with the key, the value and the fix (exit 1), the others
    reported as usual."""
    for name in ("demo-citynews", "demo-huaxia"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    keys = Keys("crawler")
    _beat(redis_client, "h:1", time.time())
    redis_client.hset(keys.polite("demo-citynews"), "inflight", "oops")
    code, out, err = _check(capsys)
    assert (code, err) == (1, ""), err
    assert out.splitlines() == [
        "demo-citynews: Redis key crawler:polite:demo-citynews has inflight 'oops', not an integer (the"
        " site's downloads under way): the workers skip the site, its requests neither taken nor queued,"
        " until it is mended; fix: redis-cli HDEL crawler:polite:demo-citynews inflight"
    ], out
    report = json.loads(run_crawler("status", "--format", "json"))
    sites = {site["site"]: site for site in report["sites"]}
    assert not sites["demo-huaxia"]["attention"] and sites["demo-citynews"]["politeness"]["downloading"] == 0


def test_status_names_a_site_whose_queue_or_politeness_key_holds_another_type_and_reports_the_others(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Someone SET one site's queue key (and another's politeness hash) to a string: `status --check`
    exited 3, 'the status cannot be read', naming neither the site nor the key, and `status` showed no
    site at all. Each such site is named with its key, the key's type and the fix (exit 1), the others
    reported as usual."""
    for name in ("demo-citynews", "demo-techdaily", "demo-huaxia"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    keys = Keys("crawler")
    _beat(redis_client, "h:1", time.time())
    request = {"url": "http://news.test/b", "meta": {"site": "demo-huaxia"}, "priority": 0}
    LeasedQueue(redis_client, keys).push(
        json.dumps(request).encode(), priority=0, site="demo-huaxia", job=None
    )
    redis_client.set(keys.queue_of("demo-citynews"), "oops")
    redis_client.set(keys.polite("demo-techdaily"), "oops")
    code, out, err = _check(capsys)
    assert (code, err) == (1, ""), err
    assert out.splitlines() == [
        "demo-citynews: Redis key crawler:queue:demo-citynews is a string, not a sorted set: the workers skip"
        " the site, its requests neither taken nor queued, until the key is removed; fix: redis-cli DEL"
        " crawler:queue:demo-citynews",
        "demo-techdaily: Redis key crawler:polite:demo-techdaily is a string, not a hash: the workers skip"
        " the site, its requests neither taken nor queued, until the key is removed; fix: redis-cli DEL"
        " crawler:polite:demo-techdaily",
    ], out
    report = json.loads(run_crawler("status", "--format", "json"))
    sites = {site["site"]: site for site in report["sites"]}
    assert sites["demo-huaxia"]["queued"] == 1 and not sites["demo-huaxia"]["attention"]
    assert report["queue"]["queued"] == 1
    table = run_crawler("status")
    assert "crawler:queue:demo-citynews is a string" in table and "demo-huaxia" in table, table
    # Another key of the prefix, read in a pipeline (Redis's words then begin 'Command # 1 (...)'): the
    # fix for a key written by another program, not 'Redis's log says why'.
    redis_client.set(keys.bans, "oops")
    code, out, err = _check(capsys)
    assert code == 3 and "give the crawler a prefix of its own (REDIS_KEY_PREFIX)" in err, err


def test_a_workers_count_is_named_responses_for_it_counts_every_response(
    redis_client: redis.Redis, redis_server: str, run_crawler: Callable[..., str]
) -> None:
    """A worker counts every response (robots.txt, feeds, redirects, error answers), more than the pages a
    crawl's summary says it fetched: status named the count `pages` too (found by a new user's walk). It
    is `responses`, in the table and the JSON; a worker of an older version, whose beat names it `pages`,
    shows the same."""
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    heartbeat = WorkerHeartbeat.from_crawler(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    for _ in range(3):
        heartbeat.received()
    heartbeat.beat()
    _beat(redis_client, "old:1", time.time(), responses=None, pages=7)
    report = json.loads(run_crawler("status", "--format", "json"))
    counts = {worker["id"]: worker["responses"] for worker in report["workers"]}
    assert counts == {THIS_WORKER.decode(): 3, "old:1": 7}, report["workers"]
    shown = run_crawler("status")
    workers = shown[shown.index("Workers") : shown.index("Sites") if "Sites" in shown else None]
    assert "responses/min:" in workers and "responses:" in workers, workers
    assert "pages" not in workers, workers


def test_grab_times_under_a_minute_apart_are_shown_to_the_second(
    rules: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A site grabbed every 30 s showed its last and next grab alike, to the minute (found by a new user's
    walk): two times under a minute apart are shown to the second; others to the minute, as before."""
    now = float(int(time.time() // 60 * 60 + 10))  # 10 s into a minute: the next grab, 30 s on, in it
    _citynews(rules, redis_client, now, {"crawl/pages": 1})
    redis_client.hset("crawler:grab:demo-citynews", mapping={"last": now, "next": now + 30, "job": "j1"})
    (site,) = json.loads(run_crawler("status", "--format", "json"))["sites"]
    last, following = (datetime.fromisoformat(site[key]) for key in ("last_grab", "next_grab"))
    assert following - last < timedelta(minutes=1), site
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert (row["last grab (UTC)"], row["next grab (UTC)"]) == (
        f"{last:%Y-%m-%d %H:%M:%S}",
        f"{following:%Y-%m-%d %H:%M:%S}",
    ), row
    redis_client.hset("crawler:grab:demo-citynews", "next", now + 600)
    row = _table(run_crawler("status").splitlines(), "Sites")["demo-citynews"]
    assert len(row["last grab (UTC)"]) == len(row["next grab (UTC)"]) == len("2026-11-28 21:40"), row


def test_status_names_a_site_whose_grab_counters_or_job_key_holds_another_type_and_reports_the_others(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A site's grab hash, an hour's counters or its last job's hash SET to a string: `status --check`
    exited 3 ('... of pipeline caused error: WRONGTYPE ...'), naming no site, and `status` showed none."""
    for name in ("demo-citynews", "demo-techdaily", "demo-huaxia"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    keys = Keys("crawler")
    _beat(redis_client, "h:1", time.time())
    redis_client.hset(keys.grab("demo-huaxia"), mapping={"job": "j1", "next": str(time.time() + 600)})
    redis_client.hset(keys.job("j1"), "stored", 4)
    redis_client.set(keys.grab("demo-citynews"), "oops")
    redis_client.set(keys.stats("demo-techdaily", hour_of(time.time())), "oops")
    code, out, err = _check(capsys)
    assert (code, err) == (1, ""), err
    fix = "the crawler can neither read nor write it (its status shows it empty) until it is removed"
    assert out.splitlines() == [
        f"demo-citynews: Redis key crawler:grab:demo-citynews is a string, not a hash: {fix}; fix: redis-cli"
        " DEL crawler:grab:demo-citynews",
        f"demo-techdaily: Redis key {keys.stats('demo-techdaily', hour_of(time.time()))} is a string, not a"
        f" hash: {fix}; fix: redis-cli DEL {keys.stats('demo-techdaily', hour_of(time.time()))}",
    ], out
    report = json.loads(run_crawler("status", "--format", "json"))
    sites = {site["site"]: site for site in report["sites"]}
    assert not sites["demo-huaxia"]["attention"], sites["demo-huaxia"]
    redis_client.set(keys.job("j1"), "oops")
    code, out, err = _check(capsys)
    assert code == 1 and "demo-huaxia: Redis key crawler:job:j1 is a string, not a hash" in out, (out, err)


def test_a_sites_grab_hash_field_holding_no_number_needs_attention_named_and_the_others_reported(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A field of a site's grab hash set to no number (HSET crawler:grab:SITE next soon), or its ban record's
    time (HSET crawler:bans SITE '{"at": "soon"}'): `status` and `status --check` failed with "ValueError:
    could not convert string to float: 'soon'". Now each is read as absent, the site needs attention naming
    the key, the field, its value and the fix."""
    for name in ("demo-citynews", "demo-huaxia"):
        shutil.copy(DEMO_RULES / f"{name}.yaml", rules)
    keys = Keys("crawler")
    _beat(redis_client, "h:1", time.time())
    redis_client.hset(keys.grab("demo-huaxia"), mapping={"next": "soon", "last": "1.5", "yield": "inf"})
    redis_client.hset(keys.grab("demo-citynews"), mapping={"next": str(time.time() + 600), "grabs": "2"})
    redis_client.hset(keys.bans, "demo-huaxia", json.dumps({"at": "soon"}))
    code, out, err = _check(capsys)
    assert (code, err) == (1, ""), err
    key = keys.grab("demo-huaxia")
    assert out.splitlines() == [
        *(
            f"demo-huaxia: Redis key {key} has {field} {value!r}, not a number (the site's grab state, edited"
            " by hand or by another tool): its status reads it as absent and the scheduler fails at the"
            f" site's grabs (its log names the error); fix: redis-cli HDEL {key} {field}, or redis-cli DEL"
            f" {key} to start the site's schedule anew"
            for field, value in (("next", "soon"), ("yield", "inf"))
        ),
        'demo-huaxia: Redis key crawler:bans has demo-huaxia \'{"at": "soon"}\', no ban record a worker'
        " writes (a JSON object with its time at, a number): its status shows no ban of the site; fix:"
        " redis-cli HDEL crawler:bans demo-huaxia (a worker writes the site's next ban anew)",
    ], out
    report = json.loads(run_crawler("status", "--format", "json"))
    sites = {site["site"]: site for site in report["sites"]}
    assert (sites["demo-huaxia"]["next_grab"], sites["demo-huaxia"]["yield"]) == (None, None)
    assert sites["demo-huaxia"]["last_grab"] == "1970-01-01T00:00:01Z"
    assert (sites["demo-citynews"]["attention"], sites["demo-citynews"]["grabs"]) == ([], 2)
    assert "demo-huaxia" in run_crawler("status")


def test_a_site_whose_store_writes_fail_needs_attention_until_an_article_is_stored_after_them(
    rules: Path,
    redis_client: redis.Redis,
    redis_server: str,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The workers' counters (RedisStatsCollector, flushed to the real Redis): store failures after the
    site's last article stored mark the site (`status --check` exits 1 while the disk is full, before any
    dead letter); an article stored after them clears it, one stored before does not."""
    from crawler.worker.stats import RedisStatsCollector

    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    counters = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    keys = Keys("crawler")

    def attention() -> list[str]:
        site: dict[str, Any] = build_status(redis_client, keys, load_rules(rules), time.time())["sites"][0]
        return [reason for reason in site["attention"] if "store" in reason]

    counters.inc_value("store/new/demo-citynews")
    counters.flush()
    assert attention() == []
    time.sleep(0.01)
    for _ in range(3):
        counters.inc_value("store/unavailable/demo-citynews")
    counters.flush()
    [reason] = attention()
    assert reason.startswith("the store cannot write: 3 writes failed in the last 2 h, the last at "), reason
    assert "no article stored since: the workers' log names the store" in reason, reason
    assert _check(capsys) == (1, f"demo-citynews: {reason}\n", "")
    # A worker that flushes later an older failure (its own) keeps the latest moment.
    late = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    late.inc_value("store/unavailable/demo-citynews")
    time.sleep(0.01)
    counters.inc_value("store/updated/demo-citynews")
    counters.flush()
    assert attention() == []
    late.flush()
    assert attention() == []
    assert _check(capsys) == (0, "", "")


def test_a_site_whose_store_failures_are_in_part_ones_no_wait_mends_says_how_many_were_dead_lettered_at_once(
    rules: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    """Failures no wait mends (a damaged week's file: ``store/lasting``) among others (a full disk): the
    line says how many were dead-lettered at once and that the others' articles are tried again."""
    from crawler.worker.stats import RedisStatsCollector

    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    counters = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    for lasting in (True, True, False):
        counters.inc_value("store/unavailable/demo-citynews")
        if lasting:
            counters.inc_value("store/lasting/demo-citynews")
    counters.flush()
    status = build_status(redis_client, Keys("crawler"), load_rules(rules), time.time())
    site: dict[str, Any] = status["sites"][0]
    [reason] = [reason for reason in site["attention"] if "store" in reason]
    assert reason.startswith("the store cannot write: 3 writes failed in the last 2 h"), reason
    assert (
        "; 2 of them, which no wait mends (a damaged week's file), dead-lettered at once, the others'"
        " articles tried again, then dead-lettered (docs/operations.md" in reason
    ), reason


def test_a_store_locked_by_another_process_is_named_as_locked_not_as_failing(
    rules: Path, redis_client: redis.Redis, redis_server: str
) -> None:
    """A worker stopped inside its write holds the week's SQLite file locked: the other workers' writes fail
    ("database is locked"), which no free disk space mends and which dead-letters nothing: the status says
    the store is locked and how to free it, not "the store cannot write"."""
    from crawler.worker.stats import RedisStatsCollector

    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    counters = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    for _ in range(2):
        counters.inc_value("store/unavailable/demo-citynews")
        counters.inc_value("store/locked/demo-citynews")
    counters.flush()
    site = build_status(redis_client, Keys("crawler"), load_rules(rules), time.time())["sites"][0]
    [reason] = [reason for reason in site["attention"] if "store" in reason]
    assert reason.startswith(
        "the store is locked: 2 writes found the write lock of a week's SQLite file held past the busy"
        " timeout in the last 2 h, the last at "
    ), reason
    assert "a worker stopped (SIGSTOP) in its write" in reason and "`kill -CONT PID`" in reason, reason
    assert "none dead-lettered for it" in reason, reason


# A sqlite3 shell left in a write transaction of the file given: it says so, then waits (running) until its
# stdin closes, and lets the lock go.
_HOLDER = """
import sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None)
holder.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
holder.execute("ROLLBACK")
"""


@contextmanager
def _write_locked(path: Path) -> Iterator[subprocess.Popen[str]]:
    """_HOLDER holding the write lock of the file at path, until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "held\n"
            yield holder
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)


def test_a_store_locked_names_the_file_its_holder_and_since_when_on_this_machine_or_another(
    rules: Path, redis_client: redis.Redis, redis_server: str, tmp_path: Path
) -> None:
    """A week's file whose write lock another process keeps (a sqlite3 shell left in BEGIN IMMEDIATE): the
    status said "the store is locked" and that the workers' log names the holder, not who it is nor since
    when. The worker's write notes the file, the holder the kernel names and when it first found it so; the
    status names them, with what to do: here the holder runs; on another machine's worker's note it cannot
    tell whether the holder is stopped, and says so. The worker's next write that succeeds forgets it."""
    from crawler.store import SqliteStore
    from crawler.store.document import make_document
    from crawler.store.sqlite import LockedWeekError
    from crawler.worker.pipelines.store import _write_found
    from crawler.worker.stats import RedisStatsCollector

    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    counters = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    keys = Keys("crawler")
    noted = (redis_client, keys, None)

    def article(path: str) -> dict[str, Any]:
        fetched = datetime.now(UTC).isoformat()
        return make_document(
            {
                "site": "demo-citynews",
                "url": f"http://citynews.test{path}",
                "fetched_at": fetched,
                "body": path,
            }
        )

    def reason() -> str:
        site = build_status(redis_client, keys, load_rules(rules), time.time())["sites"][0]
        [found] = [reason for reason in site["attention"] if "store" in reason]
        return str(found)

    locks: dict[str, str] = {}
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        store.write([article("/a/first")])
        [path] = (tmp_path / "articles").glob("*.sqlite")
        with _write_locked(path) as holder:
            for _ in range(2):
                with pytest.raises(LockedWeekError):
                    _write_found(store, [article("/a/second")], noted, locks)
                counters.inc_value("store/unavailable/demo-citynews")
                counters.inc_value("store/locked/demo-citynews")
            counters.flush()
            [note] = redis_client.hvals(keys.store_locks)
            first = json.loads(note)
            assert first["holder"] == holder.pid and first["since"] < first["seen"], first
            since = datetime.fromtimestamp(first["since"] / 1000, UTC).isoformat(timespec="seconds")
            held = f"{path} found locked since {since.replace('+00:00', 'Z')} ("
            assert f"no article stored since: {held}" in reason(), reason()
            assert (
                f"), by process {holder.pid}, running: a sqlite3 shell or a script left in a write"
                " transaction, or a crawler upgrading the file; end its transaction (COMMIT or ROLLBACK)"
                " or the process; each article is tried again until the lock is let go"
            ) in reason(), reason()
            # As a worker of another machine noted it.
            redis_client.hset(
                keys.store_locks, "elsewhere", json.dumps({**first, "pid_space": "x", "host": "crawl-2"})
            )
            redis_client.hdel(keys.store_locks, *locks)
            assert (
                f"), by process {holder.pid} on crawl-2, the"
                " machine of the worker that found it: this status runs on another machine and cannot"
                f" tell whether it is stopped; there, `kill -CONT {holder.pid}` lets a stopped one"
                " (SIGSTOP, Ctrl-Z) finish, or end its transaction;"
            ) in reason(), reason()
            redis_client.hdel(keys.store_locks, "elsewhere")
            # Its note gone (a write succeeded meanwhile), the lock found again is noted anew.
            with pytest.raises(LockedWeekError):
                _write_found(store, [article("/a/third")], noted, locks)
            [note] = redis_client.hvals(keys.store_locks)
            assert json.loads(note)["since"] == json.loads(note)["seen"] > first["seen"], note
        [written] = _write_found(store, [article("/a/fourth")], noted, locks)
        assert getattr(written, "outcome", written) == "new"
    assert redis_client.hgetall(keys.store_locks) == {}, "forgotten once a write succeeded"


def test_a_store_lock_keeps_since_when_it_was_found_across_writes_into_other_weeks_files(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """A worker forgot every lock it had noted at its next write that succeeded, into any week's file: last
    week's file (where the re-fetches of its articles go) found locked, then a write into this week's file,
    then the lock found again was noted anew, and the status's "found locked since" came later than the
    workers first found it (a lower bound). Only a write into the locked file itself forgets it now."""
    from crawler.store import SqliteStore, Written
    from crawler.store.document import make_document, week_of
    from crawler.store.sqlite import LockedWeekError
    from crawler.worker.pipelines.store import _write_found

    keys = Keys("crawler")
    noted = (redis_client, keys, None)
    now = datetime.now(UTC)
    last_week = now - timedelta(days=7)

    def article(path: str, fetched: datetime) -> dict[str, Any]:
        return make_document(
            {"site": "demo-citynews", "url": f"http://citynews.test{path}", "fetched_at": fetched.isoformat()}
            | {"body": path}
        )

    def note() -> dict[str, Any]:
        [found] = redis_client.hvals(keys.store_locks)
        return dict(json.loads(found))

    locks: dict[str, str] = {}
    with SqliteStore(tmp_path, busy_timeout=0.1) as store:
        store.write([article("/old/first", last_week)])
        [path] = (tmp_path / "articles").glob("*.sqlite")
        with _write_locked(path):
            with pytest.raises(LockedWeekError):
                _write_found(store, [article("/old/second", last_week)], noted, locks)
            first = note()
            [written] = _write_found(store, [article("/new/first", now)], noted, locks)
            assert isinstance(written, Written) and written.week == week_of(now), written
            assert note() == first, "kept: the write went into another week's file"
            with pytest.raises(LockedWeekError):
                _write_found(store, [article("/old/third", last_week)], noted, locks)
            again = note()
            assert again["since"] == first["since"] < again["seen"], (first, again)
        [written] = _write_found(store, [article("/old/fourth", last_week)], noted, locks)
        assert isinstance(written, Written) and written.week == week_of(last_week), written
    assert redis_client.hgetall(keys.store_locks) == {}, "forgotten once a write into its file succeeded"
    assert locks == {}


def test_an_article_stored_after_a_failure_clears_it_whatever_the_clocks_of_the_workers_machines(
    rules: Path, redis_client: redis.Redis, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on a machine whose clock is 2 minutes ahead failed to store, then a worker on time stored an
    article: the failure, stamped by the first machine's clock, came after the article, and the status said
    the store could not write for 2 minutes more. Both are stamped by Redis's clock now."""
    from crawler.worker.connection import server_of
    from crawler.worker.stats import RedisStatsCollector

    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + 120)
    ahead = get_crawler(settings_dict={**values, "REDIS_URL": redis_server})
    server_of(ahead)  # the worker connects as it starts
    failing = RedisStatsCollector(ahead)
    failing.inc_value("store/unavailable/demo-citynews")
    failing.flush()
    monkeypatch.setattr(time, "time", real)
    on_time = get_crawler(settings_dict={**values, "REDIS_URL": redis_server})
    server_of(on_time)
    time.sleep(0.01)
    storing = RedisStatsCollector(on_time)
    storing.inc_value("store/new/demo-citynews")
    storing.flush()
    now = redis_clock(redis_client)
    site = build_status(redis_client, Keys("crawler"), load_rules(rules), now)["sites"][0]
    assert [reason for reason in site["attention"] if "store" in reason] == []


def test_requests_a_forget_cut_short_left_set_aside_need_attention_until_the_site_is_forgotten_again(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A `sites forget` cut short (Ctrl-C, a kill, Redis gone) leaves the site's queue set aside in
    crawler:taking:SITE, no worker taking it, its requests counted pending: `crawler status` showed the site
    with 0 queued and nothing to see, `status --check` exited 0. It names them and the fix."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    keys = Keys("crawler")
    queue = LeasedQueue(redis_client, keys)
    for number in range(3):
        request = {"url": f"https://citynews.test/a/{number}", "meta": {"site": "demo-citynews"}}
        assert queue.push(json.dumps(request).encode(), priority=0, site="demo-citynews", job="j1")
    # The state a forget leaves when it stops after its first step (the queue renamed), before its batches.
    redis_client.rename(keys.queue_of("demo-citynews"), keys.taking("demo-citynews"))
    [site] = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert (site["queued"], site["set_aside_requests"], site["lost_requests"]) == (0, 3, 0)
    reason = (
        "3 requests set aside by a `sites forget` that did not finish (cut short by Ctrl-C, a kill or Redis"
        " gone), in crawler:taking:demo-citynews: no worker takes them, and their jobs count them pending;"
        " `crawler sites forget demo-citynews --yes` takes them out"
    )
    assert reason in site["attention"], site["attention"]
    assert _check(capsys) == (1, f"demo-citynews: {reason}\n", "")
    assert main(["sites", "forget", "demo-citynews", "--yes"]) == 0
    capsys.readouterr()
    [site] = json.loads(run_crawler("status", "--format", "json"))["sites"]
    assert (site["set_aside_requests"], site["attention"]) == (0, [])


def test_a_site_counting_requests_pending_that_redis_holds_nowhere_needs_attention(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A site's queue dropped under `crawler run` (DEL, eviction, a SET over it, a Redis restarted from an
    older snapshot) left its requests counted pending, in the site's count and its jobs', with none left
    to take: nobody said so (`status --check` exited 0, the site showed 0 queued). A site counting
    requests pending of which Redis holds none (queued, leased or waiting) needs attention, named with
    what to do; one whose requests are leased or queued (its own, or a discover host slot's) does not."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    keys = Keys("crawler")
    queue = LeasedQueue(redis_client, keys)
    for number in range(3):
        request = {
            "url": f"https://citynews.test/a/{number}",
            "meta": {"site": "demo-citynews"},
            "priority": 0,
        }
        assert queue.push(json.dumps(request).encode(), priority=0, site="demo-citynews", job="j1")

    def lost() -> tuple[int, list[str]]:
        report = json.loads(run_crawler("status", "--format", "json"))
        [site] = report["sites"]
        return site["lost_requests"], [reason for reason in site["attention"] if "counted pending" in reason]

    assert lost() == (0, [])
    leased = queue.pop().member
    assert leased is not None
    assert redis_client.sismember(keys.downloading, leased)
    redis_client.delete(keys.queue_of("demo-citynews"))
    assert lost() == (0, [])  # its lease is held: a worker has it
    redis_client.delete(keys.leases)  # the lease lost with the leases' set, its site left behind
    count, [reason] = lost()
    assert count == 3, reason
    assert reason == (
        "3 requests counted pending, none of which Redis holds (none queued, leased or waiting): lost with"
        " the site's queue key (deleted, evicted, or overwritten by a SET) or with a Redis restarted from an"
        " older snapshot; the next grab (or `crawler temp demo-citynews`) queues its index pages again,"
        " `crawler temp demo-citynews --again` fetches its articles seen before again (a plain crawl skips"
        " their URLs), and writes the count off"
    )
    assert _check(capsys) == (1, f"demo-citynews: {reason}\n", "")
    redis_client.set(keys.queue_of("demo-citynews"), "x")
    assert lost()[0] == 3
    redis_client.delete(keys.queue_of("demo-citynews"))
    # Written off (by the next grab due, or `crawler temp`), the count is the truth again.
    assert write_off_lost(redis_client, keys, "demo-citynews") == WrittenOff(site=3, jobs=0)
    assert redis_client.hget(keys.lease_sites, leased) is None
    assert not redis_client.sismember(keys.downloading, leased), "its download's slot given back"
    assert int(redis_client.hget(keys.polite("demo-citynews"), "inflight") or 0) == 0
    assert lost() == (0, [])
    assert _check(capsys) == (0, "", "")
    # A request of a discover host slot of the site held: not lost.
    slot = {"url": "https://news.test/1", "meta": {"site": "demo-citynews"}, "priority": 0}
    assert queue.push(json.dumps(slot).encode(), priority=0, site="demo-citynews@news.test", job=None)
    assert lost() == (0, [])


def test_a_worker_killed_here_is_dead_at_once_a_stopped_one_with_a_fresh_beat_is_not(tmp_path: Path) -> None:
    """Whose leases another worker may return to the queue (crawler.worker.scheduler): a worker killed on
    this machine, though its last beat is a second old; not one stopped (SIGSTOP) while its beat is fresh,
    nor, after a Redis outage, one only silent before it could beat again."""
    killed, stopped = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in "ab")
    try:
        killed.kill()
        killed.wait()
        stopped.send_signal(signal.SIGSTOP)
        now = time.time()

        def beat(pid: int, seen: float, space: str | None) -> str:
            return json.dumps({"pid": pid, "seen": seen, "every": 5.0, "pid_space": space})

        here = pid_space()
        beats = {
            "h:1:killed": beat(killed.pid, now - 1, here),
            "h:2:stopped": beat(stopped.pid, now - 1, here),
            "h:3:stopped-long": beat(stopped.pid, now - 16, here),
            "far:4:silent": beat(4, now - 16, "another machine"),
            "far:5:beating": beat(5, now - 1, "another machine"),
            "h:6:unreadable": "{",
        }
        assert dead_workers(beats, now, quiet_for=3.0) == ["h:1:killed"], "Redis failed 3 s ago"
        assert dead_workers(beats, now, quiet_for=16.0) == ["h:1:killed", "h:3:stopped-long", "far:4:silent"]
    finally:
        stopped.send_signal(signal.SIGCONT)
        stopped.kill()
        stopped.wait()


def test_the_beats_of_a_thousand_live_workers_read_none_of_them_and_still_find_a_dead_one(
    redis_client: redis.Redis,
) -> None:
    """Each beat read the whole of crawler:workers (HGETALL, in the beat script and in the look for dead
    workers): with N workers beating, N x N entries a period. A beat and a look read only the entries whose
    beat is due by Redis's clock (and those of the looker's own pid space): none of 1,000 live workers of
    another machine, and the one dead among them is still found."""
    heartbeats = Heartbeats(redis_client, Keys("crawler").workers)
    now = redis_client.time()[0] + 0.0
    far = {"host": "far", "pid": 4, "pid_space": "another machine", "every": 5.0}
    for number in range(1000):
        assert heartbeats.write(f"far:{number}:aaaaaa", {**far, "seen": now}, now, 3600.0) == 0
    assert heartbeats.may_be_dead(now) == {}
    dead = {**far, "seen": now - 20}
    heartbeats.write("far:1000:dead", dead, now - 20, 3600.0)
    assert heartbeats.write("far:7:aaaaaa", {**far, "seen": now}, now, 3600.0) == 1, "the dead one's alone"
    beats = heartbeats.may_be_dead(now)
    assert list(beats) == ["far:1000:dead"]
    assert dead_workers(beats, now, quiet_for=16.0) == ["far:1000:dead"]
    assert redis_client.hlen(Keys("crawler").workers) == 1001


def test_the_beats_of_workers_of_an_earlier_version_written_to_the_hash_alone_are_indexed_and_judged(
    redis_client: redis.Redis,
) -> None:
    """A worker of a version before the index writes crawler:workers alone (HSET): its entries are indexed
    by the next look (the hash read whole once, while it holds more than the index), its dead one found, and
    its live one, which beat again since it was indexed, indexed anew by that beat, not taken for dead."""
    key = Keys("crawler").workers
    heartbeats = Heartbeats(redis_client, key)
    now = redis_client.time()[0] + 0.0
    far = {"host": "old", "pid": 4, "pid_space": "another machine", "every": 5.0}
    redis_client.hset(key, mapping={"old:1": json.dumps({**far, "seen": now - 20}), "old:2": "{"})
    redis_client.hset(key, "old:3", json.dumps({**far, "seen": now - 20}))
    assert list(heartbeats.may_be_dead(now)) == ["old:1", "old:3"]
    redis_client.hset(key, "old:3", json.dumps({**far, "seen": now}))
    beats = heartbeats.may_be_dead(now)
    assert dead_workers(beats, now, quiet_for=16.0) == ["old:1"]
    assert redis_client.zscore(f"{key}:due", "old:3") == now + 15, "due three of its beats after its last"
    redis_client.hdel(key, "old:1")
    assert heartbeats.may_be_dead(now) == {}
    assert sorted(redis_client.zrange(f"{key}:due", 0, -1)) == [b"old:2", b"old:3"], "old:1 left the index"


def test_the_look_for_dead_workers_asks_once_whether_a_process_of_this_machine_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dead_workers tested "this pid space, and its process gone" itself, then again through beat_alive: a
    live worker of this machine was looked up in /proc twice a beat, by every worker. Once now."""
    from crawler.redisio.embedded import process_running

    asked: list[int] = []

    def counted(pid: int) -> bool:
        asked.append(pid)
        return process_running(pid)

    monkeypatch.setattr("crawler.redisio.workers.process_running", counted)
    now = time.time()
    beats = {
        "h:1:me": json.dumps({"pid": os.getpid(), "seen": now - 1, "every": 5.0, "pid_space": pid_space()})
    }
    assert dead_workers(beats, now, quiet_for=16.0) == []
    assert asked == [os.getpid()]


def test_a_beat_here_whose_pid_is_no_process_id_is_told_by_its_beats_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A beat of this pid space whose pid no worker wrote (beyond pid_t, Infinity, 0, -1: someone wrote the
    entry) was asked of os.kill: beyond pid_t it raised OverflowError, which stopped every worker's look for
    dead workers (a LoopingCall that raises stops) and `crawler status`; 0 and -1 name groups of processes,
    alive while any is. Such a beat is told by its beats alone, as one of another machine, and said once."""
    now = time.time()
    here = pid_space()

    def beat(pid: object, seen: float) -> str:
        return json.dumps({"pid": pid, "seen": seen, "every": 5.0, "pid_space": here})

    beats = {
        "h:1:huge": beat(2**70, now - 1),
        "h:2:infinite": beat(float("inf"), now - 1),
        "h:3:zero": beat(0, now - 16),
        "h:4:all": beat(-1, now - 16),
        "h:5:huge-silent": beat(2**70, now - 16),
    }
    with caplog.at_level("WARNING", logger="crawler.redisio.workers"):
        for _ in range(2):
            assert dead_workers(beats, now, quiet_for=16.0) == ["h:3:zero", "h:4:all", "h:5:huge-silent"]
    said = [r.getMessage() for r in caplog.records if "no process id" in r.getMessage()]
    assert len(said) == 5, said
    assert said[0].startswith("Worker h:1:huge's heartbeat names pid 1180591620717411303424, which is no")


def test_a_heartbeat_that_cannot_be_read_is_named_with_its_fix_not_a_traceback(
    redis_client: redis.Redis,
    redis_server: str,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An entry of crawler:workers that is no beat a worker writes (not JSON, no object, its last beat no
    number, no UTF-8: someone else wrote it) made `crawler status` raise a traceback (json.loads unguarded),
    and every command that counts the workers alive with it. It is left out of the workers and named, cut
    short, with the command that removes it: no worker's beat does."""
    keys = Keys("crawler")
    _beat_here(redis_server)
    unreadable = {
        b"junk:1": b"not json " + b"x" * 60,
        b"list:2": b"[1, 2]",
        b"text-seen:3": json.dumps({"host": "h", "pid": 3, "seen": "soon", "every": 5.0}).encode(),
        b"bin:4": b"\xff{",
    }
    for worker, value in unreadable.items():
        redis_client.hset(keys.workers, worker, value)
    _beat_here(redis_server)
    assert set(redis_client.hkeys(keys.workers)) == {THIS_WORKER, *unreadable}, "no beat removes them"
    report = json.loads(run_crawler("status", "--format", "json"))
    assert [worker["id"] for worker in report["workers"]] == [THIS_WORKER.decode()]
    assert report["workers_alive"] == 1
    said = report["workers_unreadable"]
    assert said.startswith(
        "4 heartbeats in crawler:workers cannot be read (not the JSON a worker writes): bin:4: b'\\xff{';"
        f" junk:1: 'not json {'x' * 31}'…; list:2: '[1, 2]'; text-seen:3: "
    ), said
    assert said.endswith(
        "no worker is counted alive or dead by them and no beat removes them: remove with `redis-cli HDEL"
        " crawler:workers bin:4` and `redis-cli HDEL crawler:workers junk:1` and `redis-cli HDEL"
        " crawler:workers list:2` and `redis-cli HDEL crawler:workers text-seen:3` (a live worker writes"
        " its own again at its next beat)"
    ), said
    assert "workers" in report["attention"]
    assert f"NEEDS ATTENTION {said}" in _words(run_crawler("status"))
    assert main(["status", "--check"]) == 1
    assert capsys.readouterr().out == f"workers: {said}\n"
    assert workers_alive(redis_client, keys) == 1


def test_every_line_of_status_check_names_the_command_that_shows_or_mends_it(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each kind of --check line, alone on its line away from the table's others, names a command: a ban,
    a backoff, fetch errors and errors rising, a store that cannot write, a field that stopped matching,
    no news, refused private addresses, a published field with no date, a rule file with errors (its site
    and each error), workers storing in two places, a Redis that may evict keys."""
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    (rules / "broken.yaml").write_text("name: Broken\nstart_urls: 12\n", encoding="utf-8")
    now = time.time()
    keys = Keys("crawler")
    site = "demo-citynews"
    signal = {"what": "HTTP 403", "url": "http://news.test/a"}
    redis_client.hset(keys.bans, site, json.dumps({"at": now - 60, "what": "HTTP 403", "signals": [signal]}))
    LeasedQueue(redis_client, keys).back_off(
        site, seconds=600.0, first=1.0, longest=600.0, calm=60.0, reason="HTTP 429"
    )
    redis_client.hset(
        keys.stats(site, hour_of(now)),
        mapping={
            "crawl/errors": 11,
            "crawl/refused": 2,
            "store/failed_at_ms": int(now * 1000),
            "store/unavailable": 2,
            "fields/pages": 10,
            "fields/missing/body": 10,
            "fields/unparsed/published": 8,
        },
    )
    redis_client.hset(keys.stats(site, hour_of(now - 5 * 3600)), mapping={"crawl/pages": 10})
    redis_client.hset(keys.stats(site, hour_of(now - 30 * 3600)), mapping={"fields/pages": 10})
    redis_client.hset(
        keys.grab(site), mapping={"visits": 6, "first_visit": now - 7 * 1200, "next": now + 600}
    )
    _beat(redis_client, "h:1", now, store="/data/a")
    _beat(redis_client, "h:2", now, store="/data/b")
    redis_client.config_set("maxmemory", "1gb")
    redis_client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        code, out, err = _check(capsys)
    finally:
        redis_client.config_set("maxmemory-policy", "noeviction")
    assert (code, err) == (1, ""), err
    lines = out.splitlines()
    kinds = (
        "redis: Redis may evict keys",
        "store: workers store articles in 2 places",
        "broken: rule file has errors",
        f"{site}: banned at ",
        f"{site}: backing off until ",
        f"{site}: fetch errors: 11 of 21 requests",
        f"{site}: errors rising: 11 in the last hour",
        f"{site}: the store cannot write",
        f"{site}: no new articles",
        f"{site}: refused 2 requests to private addresses",
        f"{site}: published is no date",
        f"{site}: field body stopped matching",
        f"{rules / 'broken.yaml'}: ",
    )
    for kind in kinds:
        assert any(line.startswith(kind) for line in lines), (kind, lines)
    for line in lines:
        assert re.search(r"`(crawler|redis-cli) [^`]+`", line), line


def test_a_worker_suspended_on_this_machine_is_said_suspended_with_how_to_resume_it_not_killed(
    tmp_path: Path, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A worker stopped with SIGSTOP (Ctrl-Z) beats no more and is taken for dead (its leases go to the
    others), yet its process is there: status said it 'stopped without a clean stop, killed or its machine
    gone', which sends the operator to start another; it names it suspended and the command that resumes
    it. One killed is said as before."""
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    try:
        stopped.send_signal(signal.SIGSTOP)
        wait_until(
            lambda: Path(f"/proc/{stopped.pid}/stat").read_text("ascii").rsplit(")", 1)[1].split()[0] == "T",
            "the process to stop",
        )
        now = time.time()
        for worker, pid in (("h:1:aaaaaa", stopped.pid), ("h:2:bbbbbb", killed.pid)):
            _beat(redis_client, worker, now - 30, pid=pid, started=now - 900, pid_space=pid_space())
        report = build_status(redis_client, Keys("crawler"), load_rules(tmp_path), now)
        assert [(w["id"], w["alive"], w["suspended"]) for w in report["workers"]] == [
            ("h:1:aaaaaa", False, True),
            ("h:2:bbbbbb", False, False),
        ]
        shown = _words(run_crawler("status"))
        assert (
            f"workers alive: 0 of 2 (1 suspended on this machine, its process stopped (SIGSTOP, Ctrl-Z):"
            f" its leases go back to the queue as a dead worker's; `kill -CONT {stopped.pid}` resumes it;"
            " 1 stopped without a clean stop, killed or its machine gone: listed until 1h00m after its last"
            " beat, SUPERVISION_FORGET_WORKER_SECONDS; forgotten in "
        ) in shown, shown
        assert f"alive: no, suspended (kill -CONT {stopped.pid})" in shown, shown
    finally:
        stopped.send_signal(signal.SIGCONT)
        stopped.kill()
        stopped.wait()


def test_the_redis_line_says_its_megabytes_are_memory_not_the_append_only_files_size(
    run_crawler: Callable[..., str],
) -> None:
    """`append-only file FAILING, 3.3 MB` read as a file of 3.3 MB, when Redis's memory was meant (the
    file, on a full disk, was 1.2 MB)."""
    shown = _words(run_crawler("status"))
    assert re.search(r"append-only file (ok|off|FAILING), memory \d+\.\d MB", shown), shown


def test_a_live_worker_is_alive_whatever_the_clocks_of_its_machine_and_of_the_one_that_looks(
    tmp_path: Path, redis_client: redis.Redis, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's heartbeat was stamped by its machine's clock and judged by the clock of the machine that
    looked: a worker beating on a machine 60 s behind (or looked at from one 60 s ahead; NTP set a clock
    forward) was dead at once, listed dead and its leases taken from it at every beat. Both go by Redis's
    clock now."""
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored by the undo
    monkeypatch.setattr(time, "time", lambda: real() - 60)
    _beat_here(redis_server)
    monkeypatch.undo()
    keys = Keys("crawler")
    for looking in (real(), real() + 60):
        report = build_status(redis_client, keys, load_rules(tmp_path), looking)
        assert [(w["id"], w["alive"]) for w in report["workers"]] == [(THIS_WORKER.decode(), True)], looking
        assert report["workers"][0]["seen_seconds_ago"] < 5, report["workers"]


@pytest.mark.parametrize("skew", [-120.0, 120.0])
def test_a_workers_start_in_its_heartbeat_is_dated_by_redis_clock_as_its_beats_whatever_its_machines_clock(
    redis_client: redis.Redis, redis_server: str, monkeypatch: pytest.MonkeyPatch, skew: float
) -> None:
    """A worker on a machine whose clock is 2 minutes ahead (or behind) wrote a heartbeat whose ``seen`` is
    by Redis's clock and whose ``started`` by its own: started 2 minutes after its last beat (or running 2
    minutes longer than it had), and ``started`` moved by as much from the first beat its process announced
    (by Redis's clock). It is by Redis's clock now."""
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    WorkerHeartbeat.from_crawler(get_crawler(settings_dict={**values, "REDIS_URL": redis_server})).beat()
    beat = json.loads(redis_client.hget(Keys("crawler").workers, THIS_WORKER) or b"{}")
    assert 0 <= beat["seen"] - beat["started"] < 10, (beat["seen"], beat["started"])


# A scheduler that takes the lead, then is killed (SIGKILL), in a process of its own; ARGV: the Redis URL.
_SCHEDULER_KILLED = (
    "import os, signal, sys\n"
    "from crawler.keys import Keys\n"
    "from crawler.redisio.connection import connect\n"
    "from crawler.schedule.grabs import GrabScheduler\n"
    "assert GrabScheduler(connect(sys.argv[1]), Keys('crawler')).lead(30)\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n"
)


def test_a_scheduler_killed_on_this_machine_is_not_active_though_its_lead_has_not_lapsed(
    rules: Path, redis_server: str, redis_client: redis.Redis, run_crawler: Callable[..., str]
) -> None:
    """A killed scheduler's lead holds up to SCHEDULE_LEADER_SECONDS (30 s): status on its machine said it
    active all that while; it says it killed, its process gone, and none active."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    killed = subprocess.run([sys.executable, "-c", _SCHEDULER_KILLED, redis_server], check=False)
    assert killed.returncode == -signal.SIGKILL
    owner = decoded(redis_client.get("crawler:scheduler:leader") or b"")
    assert owner, "its lead holds"
    pid = int(owner.split(":")[1])
    report = build_status(redis_client, Keys("crawler"), load_rules(rules), time.time())
    assert report["scheduler"] == {"active": None, "killed": {"owner": owner, "pid": pid}, "failing": None}
    assert (
        f"scheduler: none active ({owner} stopped without a clean stop, killed: its process {pid} is gone;"
    ) in _words(run_crawler("status"))


def test_a_sites_counters_key_of_another_type_neither_stops_nor_repeats_the_other_sites_counts(
    redis_client: redis.Redis, redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's flush of the site counters is one pipeline; one site's hourly hash of another type
    (someone SET it) failed its command alone, yet the flush took the whole pipeline for failed and kept
    every count for the next try: the other sites' counts, written already, were written again at each
    flush (a page fetched counted 3 times in 3 flushes). The counts written stay written; those of the
    site whose key holds another type are kept for the next flush, the key named once."""
    from crawler.worker.stats import RedisStatsCollector

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    counters = RedisStatsCollector(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    keys = Keys("crawler")
    now = redis_clock(redis_client)
    # This hour's and the next: the counts are of the hour they are counted in.
    broken = [keys.stats("broken", hour_of(moment)) for moment in (now, now + 3600)]
    for key in broken:
        redis_client.set(key, "someone's string")
    counters.inc_value("crawl/fetched/news")
    counters.inc_value("crawl/fetched/broken")
    with caplog.at_level(logging.WARNING, logger="crawler.worker.stats"):
        for _ in range(3):
            counters.flush()
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith("Site counters not written: Redis key crawler:stats:broken:"), said

    def fetched(site: str) -> list[Any]:
        return [
            redis_client.hget(key, "crawl/fetched") for key in redis_client.keys(f"crawler:stats:{site}:*")
        ]

    assert fetched("news") == [b"1"]
    redis_client.delete(*broken)
    counters.flush()
    assert fetched("broken") == [b"1"], "kept until it could be written"
    assert fetched("news") == [b"1"]


def _lost_said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The errors logged of a loss of Redis's crawler data."""
    return [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("Redis lost the crawler's data")
    ]


def test_a_worker_says_once_that_redis_lost_the_crawlers_data_and_status_shows_when(
    rules: Path,
    redis_client: redis.Redis,
    redis_server: str,
    run_crawler: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis emptied under a running worker (FLUSHALL, or a restart without persistence) failed no call:
    the worker went on with no queue, no URL seen, no dead letter and no counter, and neither its log nor
    `crawler status` said anything was lost. Its heartbeat finds the marker it saw gone, logs one error
    naming what was lost and what happens now, and writes it again; status shows when the data began and
    when it was lost."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    heartbeat = WorkerHeartbeat.from_crawler(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    key = Keys("crawler").since
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        heartbeat.beat()
        began = float(redis_client.hget(key, "began") or 0)
        assert began > 0
        report = json.loads(run_crawler("status", "--format", "json"))
        assert report["redis"]["data_began"] == datetime.fromtimestamp(began, UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        assert report["redis"]["data_lost"] is None
        assert "Redis lost its data" not in run_crawler("status")
        redis_client.flushall()
        heartbeat.beat()
        heartbeat.beat()
    said = _lost_said(caplog)
    assert len(said) == 1, said
    assert [r.levelno for r in caplog.records if r.getMessage() in said] == [logging.ERROR]
    assert "(a FLUSHALL, or a restart without persistence): crawler:since, which said it began at" in said[0]
    for words in (
        "the requests queued, leased and waiting",
        "the URLs seen (the Bloom filter)",
        "the dead letters",
        "counters",
        "grab is queued again at its next tick",
        "the temp crawls under way end with an error",
        "the dead letters are gone for good",
    ):
        assert words in said[0], (words, said[0])
    marker = {decoded(k): decoded(v) for k, v in redis_client.hgetall(key).items()}
    assert marker["began"] == marker["lost"] and float(marker["held"]) >= began, marker
    assert marker["by"] == THIS_WORKER.decode(), marker
    report = json.loads(run_crawler("status", "--format", "json"))
    lost_at = datetime.fromtimestamp(float(marker["lost"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert report["redis"]["data_began"] == lost_at
    assert report["redis"]["data_lost"]["at"] == lost_at
    assert report["redis"]["data_lost"]["found_by"] == THIS_WORKER.decode()
    shown = _words(run_crawler("status"))
    assert f"Redis's crawler data began at {lost_at}" in shown, shown
    assert (
        f"NOTE Redis lost its data at {lost_at} (a FLUSHALL or a restart without persistence): found by"
        f" {THIS_WORKER.decode()}, which saw it held at "
    ) in shown, shown
    assert "the requests queued, the URLs seen, the dead letters and the counters before it are gone" in shown


def test_the_scheduler_says_a_loss_of_redis_data_and_a_worker_of_its_process_does_not_again(
    rules: Path,
    redis_client: redis.Redis,
    redis_server: str,
    run_crawler: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The scheduler's ticks find the loss too (with no worker beside it: `crawler schedule`), and under
    `crawler run` the worker of its process, finding the marker the scheduler wrote again, says nothing
    more: one error a process."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    scheduler = GrabScheduler(connect(redis_server), Keys("crawler"), tick_seconds=0.05)
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    heartbeat = WorkerHeartbeat.from_crawler(get_crawler(settings_dict={**values, "REDIS_URL": redis_server}))
    key = Keys("crawler").since
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(load_rules(rules).rules.values, stop))
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        thread.start()
        try:
            wait_until(lambda: redis_client.hexists(key, "began"), "the scheduler's marker")
            heartbeat.beat()
            redis_client.flushall()
            wait_until(lambda: redis_client.hexists(key, "lost"), "the scheduler to find the loss")
            heartbeat.beat()
        finally:
            stop.set()
            thread.join(WAIT_LIMIT)
    said = _lost_said(caplog)
    assert len(said) == 1, said
    assert redis_client.hget(key, "by") == scheduler.owner.encode()
    assert "Redis lost its data at " in run_crawler("status")


def test_a_process_that_saw_the_data_says_its_loss_when_one_started_after_it_marked_it_anew(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A process started on the emptied Redis, having seen nothing before, writes the marker as new; one
    that saw the old marker finds it replaced, not gone: it says the loss all the same, and records it."""
    keys = Keys("crawler")
    seen, started = DataMarker(redis_client, keys, "old:1:a"), DataMarker(redis_client, keys, "new:2:b")
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        assert seen.check(1000.0) is None
        redis_client.flushall()
        assert started.check(1010.0) is None
        lost = seen.check(1020.0)
    said = _lost_said(caplog)
    assert len(said) == 1, said
    assert "between 1970-01-01T00:16:40Z and 1970-01-01T00:16:50Z" in said[0], said[0]
    assert lost == Since(began=1010.0, lost=1010.0, held=1000.0, by="old:1:a", wrote=1020.0)
    assert read_since(redis_client, keys) == lost


def test_a_loss_of_redis_data_while_no_process_ran_is_told_once_by_each_data_folder_that_saw_it(
    tmp_path: Path,
    redis_client: redis.Redis,
    redis_server: str,
    run_crawler: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis emptied while no worker or scheduler ran (FLUSHALL, a restart without persistence, then the
    processes started) was told by no one: the first process wrote a new marker. Each data folder records
    the marker its processes saw: `crawler status` there says the loss before any process runs, and the
    first process of each such folder says it once; another process of the same folder, or one of a folder
    that never saw the old marker, says nothing."""
    keys = Keys("crawler")
    here, there, fresh = tmp_path / "data", tmp_path / "there", tmp_path / "fresh"
    DataMarker(redis_client, keys, "w:1:a", here).check(3000.0)
    DataMarker(redis_client, keys, "w:2:a", there).check(3005.0)
    assert (here / RECORD_FILE).is_file()
    redis_client.flushall()
    report = json.loads(run_crawler("status", "--format", "json"))
    assert report["redis"]["data_began"] is None
    assert report["redis"]["data_lost"] == {
        "at": None,
        "held_at": "1970-01-01T00:50:00Z",
        "found_by": None,
        "record": str(here / RECORD_FILE),
    }
    shown = _words(run_crawler("status"))
    assert (
        "NOTE Redis lost its data after 1970-01-01T00:50:00Z (a FLUSHALL or a restart without persistence,"
        " while no crawler process ran): this data folder's processes saw it held then"
        f" ({here / RECORD_FILE}), no worker or scheduler has run on it since; the requests queued, the URLs"
        " seen, the dead letters and the counters before it are gone (pages are fetched again)"
    ) in shown, shown
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    settings = {**values, "REDIS_URL": redis_server, "CRAWLER_DATA_DIR": str(here)}
    heartbeat = WorkerHeartbeat.from_crawler(get_crawler(settings_dict=settings))
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        assert DataMarker(redis_client, keys, "w:3:b", fresh).check(3100.0) is None
        assert "Redis lost its data after" in run_crawler("status")
        heartbeat.beat()
        heartbeat.beat()
        assert DataMarker(redis_client, keys, "w:5:b", here).check(3120.0) is None
        other = DataMarker(redis_client, keys, "w:6:c", there).check(3130.0)
        assert DataMarker(redis_client, keys, "w:7:c", there).check(3140.0) is None
    said = _lost_said(caplog)
    assert len(said) == 2, said
    assert said[0].startswith(
        "Redis lost the crawler's data between 1970-01-01T00:50:00Z and 1970-01-01T00:51:40Z (a FLUSHALL, or"
        " a restart without persistence): crawler:since, which said it began at 1970-01-01T00:50:00Z, was"
        f" gone (as {here / RECORD_FILE}, this data folder's record, had it). Gone with it:"
    ), said[0]
    assert said[1].startswith(
        "Redis lost the crawler's data between 1970-01-01T00:50:05Z and 1970-01-01T00:51:40Z (a FLUSHALL, or"
        " a restart without persistence): crawler:since, which said it began at 1970-01-01T00:50:00Z, was"
        f" gone (found by {heartbeat.worker}; as {there / RECORD_FILE}, this data folder's record, had it)."
    ), said[1]
    assert other is not None
    assert (other.began, other.lost, other.held, other.by) == (3100.0, 3100.0, 3000.0, heartbeat.worker)
    assert "Redis lost its data at 1970-01-01T00:51:40Z" in run_crawler("status")


def test_a_redis_gone_back_to_an_older_copy_of_its_data_is_told_once_by_each_data_folder_past_the_copy(
    tmp_path: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Redis restarted from an older snapshot keeps the marker (its ``began`` is in the copy): nothing
    was told of the writes lost since. Each check writes its time into the marker (``wrote``) and the data
    folder's record: a marker whose last check is older than what the folder (or the process) saw came back
    from an older copy. Status says so before a process runs; the first process of each data folder that
    had seen Redis past the copy says it once, as does a process with no data folder."""
    keys = Keys("crawler")
    here, there = tmp_path / "data", tmp_path / "there"
    first = DataMarker(redis_client, keys, "w:1:a", here)
    first.check(4000.0)
    copy = redis_client.dump(keys.since)
    assert copy is not None
    DataMarker(redis_client, keys, "w:2:a", there).check(4080.0)
    alone = DataMarker(redis_client, keys, "w:9:z")
    alone.check(4090.0)
    first.check(4100.0)
    # Redis back from its copy of 4000: what was written since is gone, the marker's began the same.
    redis_client.restore(keys.since, 0, copy, replace=True)
    report = json.loads(run_crawler("status", "--format", "json"))
    assert report["redis"]["data_lost"] is None
    assert report["redis"]["data_back"] == {
        "to": "1970-01-01T01:06:40Z",
        "seen_at": "1970-01-01T01:08:20Z",
        "found_at": None,
        "found_by": None,
        "record": str(here / RECORD_FILE),
    }
    assert (
        "NOTE Redis went back to an older copy of its data (a restart from an older snapshot or append-only"
        " file, or a failover to a replica that was behind), while no crawler process ran: its last check in"
        " it is at 1970-01-01T01:06:40Z, yet this data folder's processes saw it at 1970-01-01T01:08:20Z"
    ) in _words(run_crawler("status"))
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        assert first.check(4200.0) is None
        assert DataMarker(redis_client, keys, "w:3:a", here).check(4210.0) is None
        assert DataMarker(redis_client, keys, "w:4:b", there).check(4220.0) is None
        assert DataMarker(redis_client, keys, "w:5:b", there).check(4230.0) is None
        assert alone.check(4240.0) is None
        assert alone.check(4250.0) is None
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Redis went back")]
    assert [r.levelno for r in caplog.records] == [logging.ERROR] * 3, said
    assert said[0].startswith(
        "Redis went back to an older copy of its data (a restart from an older snapshot or append-only file,"
        " or a failover to a replica that was behind): crawler:since says the crawler's data was last checked"
        " at 1970-01-01T01:06:40Z, yet this data folder's processes saw it at 1970-01-01T01:08:20Z. Gone"
        " with the writes between:"
    ), said[0]
    assert "the URLs marked seen (fetched again)" in said[0]
    assert "the dead letters and the counters of those 1m40s" in said[0]
    assert "saw it at 1970-01-01T01:08:00Z (found by w:1:a)." in said[1], said[1]
    assert "yet this process saw it at 1970-01-01T01:08:10Z (found by w:1:a)." in said[2], said[2]
    assert read_since(redis_client, keys) == Since(
        began=4000.0, by="w:1:a", wrote=4250.0, back=Back(to=4000.0, seen=4100.0, found=4200.0, by="w:1:a")
    )
    shown = _words(run_crawler("status"))
    assert (
        "NOTE Redis went back to an older copy of its data at 1970-01-01T01:10:00Z (a restart from an older"
        " snapshot or append-only file, or a failover to a replica that was behind): found by w:1:a, which"
        " had seen it at 1970-01-01T01:08:20Z, past its last check in the copy at 1970-01-01T01:06:40Z; the"
        " writes between are gone"
    ) in shown, shown


def test_a_marker_of_redis_data_set_to_another_type_is_warned_of_once_not_taken_for_a_loss(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """``crawler:since`` overwritten with a string (someone SET it) fails each check with WRONGTYPE: it is
    warned of once, with the fix; removed, it is written anew, and no loss is said of it."""
    keys = Keys("crawler")
    marker = DataMarker(redis_client, keys, "w:1:a")
    with caplog.at_level(logging.INFO, logger="crawler.redisio.since"):
        marker.check(1000.0)
        redis_client.set(keys.since, "mine")
        assert marker.check(1010.0) is None
        assert marker.check(1020.0) is None
        redis_client.delete(keys.since)
        assert marker.check(1030.0) is None
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "Redis key crawler:since is a string, not a hash: a loss of Redis's data (a FLUSHALL, a restart"
        " without persistence) cannot be told; fix: redis-cli DEL crawler:since (written again at the next"
        " check)"
    ], said
    assert read_since(redis_client, keys) == Since(began=1030.0, by="w:1:a", wrote=1030.0)


def test_a_scheduler_whose_ticks_fail_needs_attention_and_status_check_exits_1(
    rules: Path,
    redis_client: redis.Redis,
    run_crawler: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The active scheduler's ticks failing with an unexpected error queue no grab: a monitor's `status
    --check` exits 1 naming it (it exited 0 with the failure shown only in the scheduler line)."""
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules)
    keys = Keys("crawler")
    _beat(redis_client, "h:1", time.time())
    owner = "elsewhere:41:a0ca74"
    redis_client.set(keys.leader, owner, px=60_000)
    record = {"scheduler": owner, "error": "ValueError: broken", "since": 1_795_000_000.0, "ticks": 14}
    redis_client.set(keys.tick_failure, json.dumps(record))
    reason = (
        f"the active scheduler, {owner}, has its ticks failing since 2026-11-18T11:06:40Z with an unexpected"
        " error (14 ticks so far), no grab queued: ValueError: broken; its log has the traceback, and it"
        " tries again every tick"
    )
    assert _check(capsys) == (1, f"scheduler: {reason}\n", "")
    code, out, _ = _check(capsys, "--format", "json")
    assert (code, json.loads(out)) == (1, [{"part": "scheduler", "reason": reason}])
    report = json.loads(run_crawler("status", "--format", "json"))
    assert "scheduler" in report["attention"], report["attention"]
    table = _words(run_crawler("status"))
    assert f"scheduler: {owner}, its ticks failing (NEEDS ATTENTION below);" in table, table
    assert f"NEEDS ATTENTION {reason}" in table, table
    redis_client.delete(keys.tick_failure)
    assert _check(capsys) == (0, "", "")
