"""`crawler sites pause|resume|forget SITE` against the real embedded Redis: what each says, and what they
refuse (a site with no rule file, a temp crawl of a paused site, a forget without --yes and no terminal to
ask on, a forget of requests a live worker fetches). The pause's effect on the queue, the scheduler and a
running service: tests/test_queue.py, test_grabs.py and test_service.py; the store's delete_site:
tests/test_store_contract.py and test_store.py."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from conftest import SiteServer
from crawlsite import COMMAND_TIMEOUT, Site, unique, wait_until

from crawler.commandline import counted
from crawler.demo import DEMO_RULES
from crawler.discover.frontier import slot_of
from crawler.keys import Keys
from crawler.redisio.connection import decoded
from crawler.redisio.queue import LeasedQueue
from crawler.requests import JobCounts, open_job
from crawler.schedule.grabs import when
from crawler.store import SqliteStore

SITE = "demo-citynews"


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def folder(tmp_path: Path, redis_client: redis.Redis) -> Path:
    shutil.copytree(DEMO_RULES, tmp_path / "rules")
    return tmp_path


def environment(redis_url: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("CRAWLER_", "MONGO_"))}
    env["REDIS_URL"] = redis_url
    return env


def crawler(folder: Path, redis_url: str, *args: str) -> Ran:
    env = environment(redis_url)
    run = subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return Ran(run.returncode, run.stdout, run.stderr)


def test_a_pause_of_a_site_with_no_rule_file_names_the_file_looked_for(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    ran = crawler(folder, redis_server, "sites", "pause", "demo-citynew")
    assert ran.code == 2 and ran.stdout == ""
    assert ran.stderr == (
        "crawler sites pause: error: no rule for site 'demo-citynew': 'rules/demo-citynew.yaml' does not"
        " exist; did you mean 'demo-citynews'? (sites: demo-citynews, demo-huaxia, demo-techdaily)\n"
    )
    assert not redis_client.exists(Keys("crawler").paused), "nothing paused"
    resumed = crawler(folder, redis_server, "sites", "resume", "demo-citynew")
    assert resumed.code == 2 and "'rules/demo-citynew.yaml' does not exist" in resumed.stderr


def test_a_resumed_site_whose_rule_has_no_schedule_is_told_no_regular_grab_comes(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A site whose rule lost its schedule (temp crawls only), resumed: it said `its next regular grab is
    due at ...`, the next grab the scheduler set while the rule had one, which stays in Redis and never
    comes (or, with none set, `if its rule has a schedule`, which the command can read): it says, as
    `sites forget` does, that no regular grab comes and what crawls it."""
    rule = folder / "rules" / f"{SITE}.yaml"
    text = rule.read_text(encoding="utf-8")
    assert "schedule:\n  every: 20m\n" in text
    rule.write_text(text.replace("schedule:\n  every: 20m\n", ""), encoding="utf-8")
    redis_client.hset(Keys("crawler").grab(SITE), "next", time.time() + 600)
    for _ in range(2):
        assert crawler(folder, redis_server, "sites", "pause", SITE).code == 0
        resumed = crawler(folder, redis_server, "sites", "resume", SITE)
        assert resumed.code == 0, resumed.stderr
        assert resumed.stdout == (
            f"resumed {SITE}: workers take its queued requests again (0 now); its rule has no `schedule`: no"
            f" regular grab (`crawler temp {SITE}` crawls it)\n"
        )
        redis_client.delete(Keys("crawler").grab(SITE))


def test_a_site_resumed_before_its_first_grab_is_told_when_its_rule_schedules_it(
    folder: Path, redis_server: str
) -> None:
    """A site paused before any scheduler planned its grabs (no `next` in Redis), resumed: it said "its
    first regular grab, if its rule has a schedule, is queued at the scheduler's next tick", while its rule,
    in the rules folder of the command, says every 20m: now it says when, as the rule schedules it."""
    assert "schedule:\n  every: 20m\n" in (folder / "rules" / f"{SITE}.yaml").read_text(encoding="utf-8")
    assert crawler(folder, redis_server, "sites", "pause", SITE).code == 0
    resumed = crawler(folder, redis_server, "sites", "resume", SITE)
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout == (
        f"resumed {SITE}: workers take its queued requests again (0 now); its first regular grab is queued"
        " at the scheduler's next tick\n"
    ), resumed.stdout


def test_a_paused_site_is_said_by_schedule_refused_by_temp_and_resumed_due_at_once(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    paused = crawler(folder, redis_server, "sites", "pause", SITE)
    assert paused.code == 0, paused.stderr
    assert paused.stdout == (
        f"paused {SITE}: no regular grab of it is queued, and workers take none of its queued requests"
        f" (0 now; those being fetched end as usual), on every machine, until `crawler sites resume {SITE}`\n"
    )
    again = crawler(folder, redis_server, "sites", "pause", SITE)
    assert again.code == 0 and again.stdout.startswith(f"{SITE} is paused already, since "), again.stdout
    # UTC in the form status gives it (2026-11-20T08:00:00Z), not 2026-11-20T08:00:00+00:00.
    since = again.stdout.split(", since ")[1].split(";")[0]
    assert since.endswith("Z") and "+" not in since, again.stdout
    scheduled = crawler(folder, redis_server, "schedule", "--once")
    assert scheduled.code == 0, scheduled.stderr
    assert f"queued the grab of {SITE}" not in scheduled.stdout
    assert "queued the grab of demo-huaxia" in scheduled.stdout
    assert (
        f"{SITE} is paused: no grab of it queued (`crawler sites resume {SITE}` resumes it)\n"
        in scheduled.stdout
    )
    temp = crawler(folder, redis_server, "temp", SITE)
    assert temp.code == 2 and temp.stdout == ""
    assert temp.stderr == (
        f"crawler temp: error: site {SITE} is paused: its requests are held, a temp crawl of it would wait"
        f" for ever; `crawler sites resume {SITE}` first\n"
    )
    due = time.time() - 60
    redis_client.hset(Keys("crawler").grab(SITE), "next", f"{due:.3f}")
    resumed = crawler(folder, redis_server, "sites", "resume", SITE)
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout == (
        f"resumed {SITE}: workers take its queued requests again (0 now); its regular grab, due since"
        f" {when(due)}, is queued at the scheduler's next tick\n"
    )
    assert "queued the grab of demo-citynews" in crawler(folder, redis_server, "schedule", "--once").stdout
    not_paused = crawler(folder, redis_server, "sites", "resume", SITE)
    assert not_paused.code == 0 and not_paused.stdout == f"{SITE} is not paused: nothing to resume\n"


def test_a_site_paused_during_its_grab_and_resumed_is_told_its_due_grab_waits_for_that_one(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A site paused while its grab had requests queued (held by the pause), resumed once its next grab was
    due: it said `its regular grab, due since the pause, is queued at the scheduler's next tick`, while
    the scheduler defers that grab until the last one, whose requests the pause held, ends."""
    scheduled = crawler(folder, redis_server, "schedule", "--once")
    assert f"queued the grab of {SITE} as job " in scheduled.stdout, scheduled.stdout
    job = redis_client.hget(KEYS.grab(SITE), "job")
    assert isinstance(job, bytes)
    left = JobCounts.read(redis_client, KEYS, job.decode()).pending
    assert left > 0
    assert crawler(folder, redis_server, "sites", "pause", SITE).code == 0
    due = time.time() - 60
    redis_client.hset(KEYS.grab(SITE), "next", f"{due:.3f}")
    resumed = crawler(folder, redis_server, "sites", "resume", SITE)
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout == (
        f"resumed {SITE}: workers take its queued requests again ({left} now); its regular grab, due since"
        f" {when(due)}, is queued once its last grab, job {job.decode()}, ends ({counted(left, 'request')}"
        " of it still to crawl)\n"
    ), resumed.stdout
    again = crawler(folder, redis_server, "schedule", "--once")
    assert again.stdout.startswith(f"grab of {SITE} due, deferred until its last grab, job {job.decode()}")


KEYS = Keys("crawler")
FORGET_SAID = (
    "{site}: {requests} taken out of the queue, its grab state dropped ({state}); its next grab is a new"
    " rule's first: at the scheduler's next tick\n"
)
SEEN_STAY = (
    "its seen URLs stay seen: the Bloom filter of seen URLs is shared by every site and cannot remove one, so"
    " its grabs fetch only articles they never saw; `crawler temp {site} --again` fetches every article its"
    " index pages link to again, `crawler temp {site} --url URL` one page\n"
)


def grabbed(folder: Path, redis_server: str) -> str:
    """`crawler schedule --once`: the grabs of every demo site, queued; its output."""
    scheduled = crawler(folder, redis_server, "schedule", "--once")
    assert scheduled.code == 0, scheduled.stderr
    return scheduled.stdout


def stored(folder: Path) -> SqliteStore:
    store = SqliteStore(folder / "data")
    for site, url in ((SITE, "http://127.0.0.1:8631/citynews/a.html"), ("demo-huaxia", "http://h.test/a")):
        body = f"The words of {url}."
        store.upsert(
            {"site": site, "url": url, "fetched_at": "2026-11-17T10:00:00Z", "title": "T", "body": body}
        )
    return store


def test_forget_without_yes_and_no_terminal_to_ask_on_refuses_and_forgets_nothing(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    grabbed(folder, redis_server)
    ran = crawler(folder, redis_server, "sites", "forget", SITE, "--articles")
    assert ran.code == 2 and ran.stdout == ""
    assert ran.stderr == (
        f"crawler sites forget: error: `sites forget` asks before it forgets {SITE}'s grab state and queued"
        " requests and its stored articles, and its input is no terminal to answer on: give --yes to forget"
        f" without asking, as in `crawler sites forget {SITE} --articles --yes`\n"
    )
    assert redis_client.exists(KEYS.grab(SITE)) and redis_client.zcard(KEYS.queue_of(SITE)) == 1


def test_forget_drops_the_grab_state_and_queued_requests_of_the_site_alone_and_it_is_grabbed_anew(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    grabbed(folder, redis_server)
    redis_client.hset(KEYS.validators(SITE), "http://127.0.0.1:8631/citynews/", json.dumps(["etag", None]))
    job = decoded(redis_client.hget(KEYS.grab(SITE), "job") or b"")
    store = stored(folder)
    ran = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert ran.code == 0, ran.stderr
    said = FORGET_SAID.format(
        site=SITE, requests="1 request", state="last and next grab, validators, politeness"
    )
    assert ran.stdout == f"forgot {said}{SEEN_STAY.format(site=SITE)}"
    assert not redis_client.exists(KEYS.grab(SITE), KEYS.validators(SITE), KEYS.queue_of(SITE))
    assert redis_client.hget(KEYS.job(job), "pending") == b"0", "its request ended in its job"
    assert redis_client.zcard(KEYS.queue_of("demo-huaxia")) == 1, "other sites keep theirs"
    assert store.count(site=SITE) == 1, "its articles stay without --articles"
    assert f"queued the grab of {SITE}" in grabbed(folder, redis_server), "grabbed as a new rule"


def test_forget_names_the_state_it_dropped_and_when_the_sites_schedule_grabs_it_next(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """It said `(3 keys: last and next grab, validators, sitemap dates, temp crawl, discover frontier)`
    whatever the keys were, `(0 keys: ...)` the same for a site with none, and `at the scheduler's next
    tick` for a cron rule and a rule with no schedule too."""
    grabbed(folder, redis_server)
    redis_client.hset(KEYS.sitemaps(SITE), "http://127.0.0.1:8631/sitemap.xml", "2026-11-20T08:00:00+00:00")
    first = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert first.code == 0, first.stderr
    said = FORGET_SAID.format(
        site=SITE, requests="1 request", state="last and next grab, sitemap dates, politeness"
    )
    assert first.stdout == f"forgot {said}{SEEN_STAY.format(site=SITE)}"
    rule = folder / "rules" / f"{SITE}.yaml"
    text = rule.read_text(encoding="utf-8")
    rule.write_text(text.replace("every: 20m", 'cron: "0 6 * * *"'), encoding="utf-8")
    again = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert again.code == 0, again.stderr
    assert again.stdout.startswith(
        f"forgot {SITE}: 0 requests taken out of the queue, it had no grab state to drop; its next grab is"
        " a new rule's first: at its cron expression's next time (0 6 * * *)\n"
    ), again.stdout
    rule.write_text(text.replace("schedule:\n  every: 20m\n", ""), encoding="utf-8")
    unscheduled = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert unscheduled.stdout.startswith(
        f"forgot {SITE}: 0 requests taken out of the queue, it had no grab state to drop; its rule has no"
        f" `schedule`: no regular grab (`crawler temp {SITE}` crawls it)\n"
    ), unscheduled.stdout


def test_forget_takes_the_requests_of_a_discover_crawls_host_slots_too(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A discover crawl queues each host's pages in a slot of its own (``<site>@<host>``): forget took the
    site's own queue alone, and left them queued and counted in their job."""
    grabbed(folder, redis_server)
    queue = LeasedQueue(redis_client, KEYS)
    open_job(redis_client, KEYS, "found")
    for host in ("a.test", "b.test"):
        member = json.dumps({"url": f"http://{host}/", "meta": {"site": SITE, "job": "found"}}).encode()
        assert queue.push(member, priority=0, site=slot_of(SITE, host), job="found")
    ran = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith(f"forgot {SITE}: 3 requests taken out of the queue"), ran.stdout
    assert redis_client.hget(KEYS.job("found"), "pending") == b"0", "they ended in their job"
    assert queue.queued(SITE) == 0 and redis_client.zcard(KEYS.queue_of("demo-huaxia")) == 1


def _left_of(server: redis.Redis, site: str) -> list[str]:
    """Every key of ``site`` (or of its discover host slots) in Redis, and every field of it in the hashes
    kept by site."""
    left = sorted(
        name
        for name in (decoded(key) for key in server.scan_iter(match="crawler:*"))
        if f":{site}:" in name or name.endswith((f":{site}",)) or f":{site}@" in name
    )
    for shared in (KEYS.politeness, KEYS.pending, KEYS.bans, KEYS.paused):
        left += sorted(
            f"{shared} {field}"
            for field in (decoded(name) for name in server.hkeys(shared))
            if field == site or field.startswith(f"{site}@")
        )
    return left


def test_forget_leaves_nothing_of_the_site_but_the_crawl_delays_robots_asked_for_a_day(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """forget left the site's politeness (its hash and its saved copy), its ban, its pending count (0), its
    crawl-delays, and all of those of its discover host slots (whose prune reads the frontier's touches,
    which forget drops: kept for ever), and its offer. Now nothing stays but the crawl-delays robots.txt
    asked for, for ROBOTS_MAX_AGE_SECONDS (a worker running tells them again only once it reads robots.txt
    again), which the next grab's politeness starts from."""
    from crawler.settings import ROBOTS_MAX_AGE_SECONDS

    grabbed(folder, redis_server)
    queue = LeasedQueue(redis_client, KEYS)
    host = slot_of(SITE, "a.test")
    queue.configure(host, delay=1.0, concurrency=1, obey_robots=True)
    queue.set_crawl_delay(host, 7.0, "a.test")
    queue.set_crawl_delay(SITE, 9.0, "127.0.0.1:8631")
    open_job(redis_client, KEYS, "found")
    member = json.dumps({"url": "http://a.test/", "meta": {"site": SITE, "slot": host, "job": "found"}})
    assert queue.push(member.encode(), priority=0, site=host, job="found")
    queue.back_off(SITE, seconds=None, first=5.0, longest=600.0, calm=300.0, reason="banned: HTTP 403")
    redis_client.hset(KEYS.bans, SITE, json.dumps({"at": 1.0, "signals": [], "what": "HTTP 403"}))
    redis_client.set(KEYS.offer_of(SITE), "worker-1", px=60_000)
    others = _left_of(redis_client, "demo-huaxia")
    ran = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert ran.code == 0, ran.stderr
    delays = [KEYS.crawl_delays(SITE), KEYS.crawl_delays(host)]
    assert _left_of(redis_client, SITE) == sorted(delays)
    assert all(0 < redis_client.ttl(key) <= ROBOTS_MAX_AGE_SECONDS for key in delays)
    assert _left_of(redis_client, "demo-huaxia") == others, "other sites keep theirs"
    grabbed(folder, redis_server)
    assert queue.politeness([SITE])[0].crawl_delay == 9.0, "the next grab keeps to robots.txt"
    queue.set_crawl_delay(SITE, 9.0, "127.0.0.1:8631")
    assert redis_client.ttl(KEYS.crawl_delays(SITE)) == -1, "told again: kept while the site is"


def test_forget_drops_what_an_earlier_forget_left_of_a_site_whose_rule_file_is_gone(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A forget of an earlier version left the politeness, ban and pending count of a site whose rule was
    then removed: forgetting it again was refused (no rule file, and nothing of its crawling in Redis as
    it looked), so they stayed for ever."""
    gone = "demo-gone"
    LeasedQueue(redis_client, KEYS).configure(gone, delay=2.0, concurrency=1, obey_robots=True)
    redis_client.hset(KEYS.pending, gone, 0)
    redis_client.hset(KEYS.bans, gone, json.dumps({"at": 1.0, "signals": [], "what": "HTTP 403"}))
    ran = crawler(folder, redis_server, "sites", "forget", gone, "--yes")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith(
        f"forgot {gone}: 0 requests taken out of the queue, its grab state dropped (ban, politeness);"
    ), ran.stdout
    assert _left_of(redis_client, gone) == []


def test_forget_of_a_discover_site_names_no_command_its_rule_refuses(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """forget told of a discover site, as of any, that `crawler temp SITE --again` fetches every article its
    index pages link to again, and `--url URL` one page: a discover rule refuses both (exit 2). It says what
    a discover crawl of it reads again: its seeds, and the links it never saw."""
    rule = folder / "rules" / "energy.yaml"
    seeds = "  seeds:\n    - http://127.0.0.1:9/energy/\n"
    rule.write_text(f"discover:\n  topic:\n    keywords: [solar]\n{seeds}  budget: 10\n", encoding="utf-8")
    ran = crawler(folder, redis_server, "sites", "forget", "energy", "--yes")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.splitlines()[1:] == [
        "its seen URLs stay seen: the Bloom filter of seen URLs is shared by every site and cannot remove"
        " one, so a crawl of this discover site reads its seeds and only the links it never saw; a page read"
        " before is read again only as a seed (`discover.seeds` in rules/energy.yaml)"
    ], ran.stdout
    for given in (["--again"], ["--url", "http://127.0.0.1:9/energy/a"]):
        refused = crawler(folder, redis_server, "temp", "energy", *given)
        assert refused.code == 2 and "is a discover crawl" in refused.stderr, refused.stderr


def test_forget_with_articles_deletes_its_stored_articles_too(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    store = stored(folder)
    ran = crawler(folder, redis_server, "sites", "forget", SITE, "--articles", "--yes")
    assert ran.code == 0, ran.stderr
    assert f"\ndeleted 1 article of {SITE} from SqliteStore('data/articles')\n" in ran.stdout
    assert store.count(site=SITE) == 0 and store.count(site="demo-huaxia") == 1


def test_forget_leaves_a_site_alone_while_a_live_worker_fetches_its_requests(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    grabbed(folder, redis_server)
    popped = LeasedQueue(redis_client, KEYS).pop()
    assert popped.site is not None and popped.member is not None
    beat = {"seen": time.time() + 600, "every": 5, "host": "elsewhere", "pid": 1, "responses": 0, "rate": 0.0}
    redis_client.hset(KEYS.workers, "elsewhere:1:abc", json.dumps(beat))
    ran = crawler(folder, redis_server, "sites", "forget", popped.site, "--yes")
    assert ran.code == 2 and ran.stdout == ""
    assert ran.stderr == (
        f"crawler sites forget: error: a live worker is fetching requests of {popped.site}: `crawler sites"
        f" pause {popped.site}` first, then forget it once they end (`crawler status --site {popped.site}`:"
        " downloading 0)\n"
    )
    assert redis_client.exists(KEYS.grab(popped.site)) and redis_client.zscore(KEYS.leases, popped.member)


def test_forget_takes_a_retry_waiting_its_delay_while_workers_are_alive_and_fetch_none_of_the_site(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """A retry waiting out its delay is no lease, though the queue keeps its site beside it as it keeps a
    lease's: forget refused it as 'a live worker is fetching requests' while no worker fetched any."""
    grabbed(folder, redis_server)
    queue = LeasedQueue(redis_client, KEYS)
    popped = queue.pop()
    assert popped.site is not None and popped.member is not None
    retry = popped.member.replace("citynews", "citynews?retry=1", 1).encode()
    assert queue.handoff(popped.member, retry, priority=0, site=popped.site, job=None, delay=3600)
    beat = {"seen": time.time() + 600, "every": 5, "host": "elsewhere", "pid": 1, "responses": 0, "rate": 0.0}
    redis_client.hset(KEYS.workers, "elsewhere:1:abc", json.dumps(beat))
    ran = crawler(folder, redis_server, "sites", "forget", popped.site, "--yes")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith(f"forgot {popped.site}: ")
    assert not redis_client.zscore(KEYS.delayed, retry) and queue.pending(popped.site) == 0


@pytest.mark.parametrize(("answer", "forgotten"), [("n", False), ("y", True)])
def test_forget_asks_on_a_terminal_and_a_no_forgets_nothing(
    folder: Path, redis_server: str, redis_client: redis.Redis, answer: str, forgotten: bool
) -> None:
    grabbed(folder, redis_server)
    main, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "sites", "forget", SITE],
        cwd=folder,
        env=environment(redis_server),
        stdin=terminal,
        stdout=terminal,
        stderr=subprocess.PIPE,
    ) as process:
        os.close(terminal)
        output = b""
        try:
            while b"[y/N] " not in output:
                ready, _, _ = select.select([main], [], [], 60)
                assert ready, f"no question asked: {output!r}"
                output += os.read(main, 4096)
            os.write(main, f"{answer}\n".encode())
            code = process.wait(60)
        finally:
            process.kill()
        assert process.stderr is not None
        errors = process.stderr.read().decode()
    while select.select([main], [], [], 0.5)[0]:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal's other end closed with the process
            break
        if not chunk:
            break
        output += chunk
    os.close(main)
    text = output.decode().replace("\r\n", "\n")
    assert text.startswith(
        f"forget {SITE}'s grab state and queued requests? Its seen URLs stay seen. [y/N] "
    ), text
    if forgotten:
        assert code == 0, errors
        assert f"\nforgot {SITE}: 1 request taken out of the queue" in text, text
        assert not redis_client.exists(KEYS.grab(SITE))
    else:
        assert code == 1, errors
        assert text.endswith(f"\nnothing of {SITE} was forgotten\n"), text
        assert redis_client.exists(KEYS.grab(SITE)) and redis_client.zcard(KEYS.queue_of(SITE)) == 1


def test_forget_of_a_site_redis_never_saw_and_no_rule_names_is_refused_before_it_asks(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    grabbed(folder, redis_server)
    ran = crawler(folder, redis_server, "sites", "forget", "demo-citynew")
    assert ran.code == 2 and ran.stdout == ""
    assert ran.stderr.startswith(
        "crawler sites forget: error: no rule for site 'demo-citynew': 'rules/demo-citynew.yaml' does not"
        " exist"
    ), ran.stderr
    (folder / "rules" / "demo-huaxia.yaml").unlink()
    removed = crawler(folder, redis_server, "sites", "forget", "demo-huaxia", "--yes")
    assert removed.code == 0, removed.stderr
    assert removed.stdout.startswith("forgot demo-huaxia: 1 request taken out of the queue"), removed.stdout
    assert not redis_client.exists(KEYS.grab("demo-huaxia"), KEYS.queue_of("demo-huaxia"))


def test_pause_resume_and_status_of_a_site_whose_rule_file_is_elsewhere_alone_work_from_redis(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """Run on a machine whose rules folder lacks the site's file (its rule on the scheduler's machine
    alone), `sites pause`, `sites resume` and `status --site` were refused (exit 2, "no rule for site")
    though Redis held the site's grab state and requests, which `sites forget` took. They work when Redis
    knows the site, saying this folder has no rule of it; refused only when neither knows it."""
    grabbed(folder, redis_server)
    (folder / "rules" / "demo-huaxia.yaml").unlink()
    elsewhere = (
        "note: this rules folder has no rule file of demo-huaxia (rules/demo-huaxia.yaml): Redis holds its"
        " crawling, from the rules folder of another machine\n"
    )
    paused = crawler(folder, redis_server, "sites", "pause", "demo-huaxia")
    assert paused.code == 0, paused.stderr
    assert paused.stdout.startswith("paused demo-huaxia: no regular grab of it is queued"), paused.stdout
    assert paused.stderr == f"crawler sites pause: {elsewhere}", paused.stderr
    assert "demo-huaxia" in LeasedQueue(redis_client, KEYS).paused()
    status = crawler(folder, redis_server, "status", "--site", "demo-huaxia", "--format", "json")
    assert status.code == 0, status.stderr
    assert status.stderr == f"crawler status: {elsewhere}", status.stderr
    (shown,) = json.loads(status.stdout)["sites"]
    assert shown["site"] == "demo-huaxia" and shown["paused"] is not None, shown
    table = crawler(folder, redis_server, "status", "--site", "demo-huaxia")
    assert table.code == 0 and "demo-huaxia" in table.stdout, table.stdout + table.stderr
    resumed = crawler(folder, redis_server, "sites", "resume", "demo-huaxia")
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout.startswith("resumed demo-huaxia: workers take its queued requests again (1 now)")
    assert resumed.stderr == f"crawler sites resume: {elsewhere}", resumed.stderr
    again = crawler(folder, redis_server, "sites", "resume", "demo-huaxia")
    assert (again.code, again.stdout) == (0, "demo-huaxia is not paused: nothing to resume\n"), again.stderr
    for command in (("sites", "pause"), ("sites", "resume"), ("status", "--site")):
        unknown = crawler(folder, redis_server, *command, "demo-citynew")
        assert unknown.code == 2 and "demo-citynew" in unknown.stderr, unknown.stderr


def test_dead_letters_of_a_removed_site_with_none_left_are_none_not_a_missing_rule(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """docs/rules.md, "To remove a site": delete its rule file; its requests end as dead letters, which
    `crawler dead drop --site SITE` deletes. With none of the site (none yet, or dropped already), `dead
    list`, `drop` and `requeue --site SITE` were refused (exit 2, "no rule for site ...: does not exist"),
    the rule the user had just removed, while Redis held the site's crawling: they select none, as for a
    site with a rule. A site neither the rules nor Redis know is still refused (a misspelt name)."""
    grabbed(folder, redis_server)
    (folder / "rules" / "demo-huaxia.yaml").unlink()
    assert redis_client.exists(KEYS.grab("demo-huaxia"))
    listed = crawler(folder, redis_server, "dead", "list", "--site", "demo-huaxia")
    assert (listed.code, listed.stdout) == (0, "no dead letters of site demo-huaxia\n"), listed.stderr
    dropped = crawler(folder, redis_server, "dead", "drop", "--site", "demo-huaxia")
    assert (dropped.code, dropped.stdout) == (0, "dropped 0 dead letters\n"), dropped.stderr
    requeued = crawler(folder, redis_server, "dead", "requeue", "--site", "demo-huaxia")
    assert (requeued.code, requeued.stdout) == (0, "requeued 0 dead letters\n"), requeued.stderr
    unknown = crawler(folder, redis_server, "dead", "drop", "--site", "demo-huaxi")
    assert unknown.code == 2 and "no rule for site 'demo-huaxi'" in unknown.stderr, unknown.stderr


def test_forget_of_a_site_whose_rule_file_is_elsewhere_alone_does_not_say_it_is_never_grabbed_again(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """Run on a machine whose rules folder lacks the site's file (added on the scheduler's machine alone,
    or removed here only), `forget` said `no grab of it is made until one is added back`, yet the
    scheduler of the other machine, whose folder has the rule, queued its grab at its next tick."""
    grabbed(folder, redis_server)
    (folder / "rules" / "demo-huaxia.yaml").unlink()
    forgot = crawler(folder, redis_server, "sites", "forget", "demo-huaxia", "--yes")
    assert forgot.code == 0, forgot.stderr
    assert forgot.stdout.splitlines()[0] == (
        "forgot demo-huaxia: 1 request taken out of the queue, its grab state dropped (last and next grab,"
        " politeness);"
        " it has no rule file in this rules folder (rules/demo-huaxia.yaml): a scheduler of this folder grabs"
        " it no more, but one whose rules folder has it (on another machine) grabs it anew at its next tick,"
        " as a new rule's first: remove its file there too, or `crawler sites pause demo-huaxia` holds it on"
        " every machine"
    ), forgot.stdout
    # It said `crawler temp demo-huaxia --again` fetches its articles again, which fails with no rule file.
    assert forgot.stdout.splitlines()[-1] == (
        "its seen URLs stay seen: the Bloom filter of seen URLs is shared by every site and cannot remove"
        " one, so a rule of demo-huaxia added back to this rules folder skips the article pages it fetched"
        " before; `crawler temp demo-huaxia --again` then fetches them again"
    ), forgot.stdout


def test_a_temp_crawl_whose_site_is_paused_while_it_runs_says_so_stops_and_goes_on_once_resumed(
    site_server: SiteServer, tmp_path: Path
) -> None:
    """A pause landing mid-crawl (slow pages, one at a time) holds the site's requests: the temp crawl says
    so once, stops when the page being fetched is in, exit 1 with what is held and what takes it once
    resumed: the queue is shared, so the next crawl on this Redis, as its Ctrl-C note says (d64005a), not
    only `crawler temp` of the site; that one goes on with the same job and fetches the rest."""
    site = Site(site_server, tmp_path)
    # Each page answered after a second, the next one asked a second later (the rule's delay).
    pages = [f"/held/{unique('paused')}?seconds=1" for _ in range(8)]
    site.rule(*pages)
    rule = site.rules / f"{site.name}.yaml"
    rule.write_text(
        rule.read_text(encoding="utf-8") + "politeness: {delay: 1, concurrency: 1}\n", encoding="utf-8"
    )
    with site.temp_running() as crawl:
        wait_until(lambda: site.data.is_dir() and len(site.stored()) >= 1, "the first slow page stored")
        paused = site.crawler("sites", "pause", site.name)
        assert paused.returncode == 0, paused.stderr
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, out + err[-4000:]
    assert "Traceback" not in err and "interrupted" not in err, err[-4000:]
    said = [line for line in err.splitlines() if "was paused" in line]
    assert len(said) == 1, err[-4000:]
    job = said[0].split(" of job ")[1].split()[0]
    assert said[0] == (
        f"crawler temp: note: {site.name} was paused (`crawler sites pause {site.name}`): its requests are"
        " held; this temp crawl stops once the pages it is fetching are in (Ctrl-C stops it now), the other"
        f" requests of job {job} left held in the queue; after `crawler sites resume {site.name}`, the next"
        " crawl on this Redis takes them, at the pace of their site, a temp crawl of any site or a worker"
        f" (`crawler temp {site.name}` goes on with job {job}); `crawler sites forget {site.name}` takes them"
        " out of the queue (and drops its grab state)"
    ), said
    last = out.splitlines()[-1]
    held = int(last.split(f" was paused (`crawler sites pause {site.name}`), ")[1].split()[0])
    assert 1 <= held < len(pages), out
    them, their = ("it", "its") if held == 1 else ("them", "their")
    assert last == (
        f"stopped before its end: {site.name} was paused (`crawler sites pause {site.name}`),"
        f" {held} request{'s' if held > 1 else ''} of job {job} held in the queue; after `crawler sites"
        f" resume {site.name}`, the next crawl on this Redis takes {them}, at the pace of {their} site, a"
        f" temp crawl of any site or a worker (`crawler temp {site.name}` goes on with job {job});"
        f" `crawler sites forget {site.name}` takes {them} out of the queue (and drops its grab state)"
    ), out
    fetched = len(site.stored())
    assert fetched + held == len(pages), (fetched, held)
    assert site.crawler("sites", "resume", site.name).returncode == 0
    again = site.temp()
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert f"resumed job {job}, the last temp crawl of {site.name}" in again.stdout, again.stdout
    assert len(site.stored()) == len(pages)


def test_a_temp_crawl_whose_site_is_forgotten_while_it_runs_ends_saying_what_was_taken(
    site_server: SiteServer, tmp_path: Path
) -> None:
    """`sites forget` between two requests of a running temp crawl (a site of one request every 3 s) takes
    the crawl's queued requests: the crawl ends, not hung, no traceback, and says what it ended without,
    exit 1, rather than a summary that reads as a whole crawl."""
    site = Site(site_server, tmp_path)
    pages = [f"/a/{unique('forgotten')}" for _ in range(8)]
    site.rule(*pages)
    rule = site.rules / f"{site.name}.yaml"
    rule.write_text(
        rule.read_text(encoding="utf-8") + "politeness: {delay: 3, concurrency: 1}\n", encoding="utf-8"
    )
    with site.temp_running() as crawl:
        wait_until(lambda: site.data.is_dir() and len(site.stored()) >= 1, "the first page stored")
        # Refused (exit 2) while the crawl's worker holds a lease of the site: asked again until between two.
        forgotten: list[str] = []

        def forgot() -> bool:
            ran = site.crawler("sites", "forget", site.name, "--yes")
            assert ran.returncode in (0, 2), ran.stderr
            forgotten.append(ran.stdout)
            return ran.returncode == 0

        wait_until(forgot, "the forget between two requests")
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 1, out + err[-4000:]
    assert "Traceback" not in err and "interrupted" not in err, err[-4000:]
    taken = int(forgotten[-1].split(": ")[1].split()[0])
    assert taken >= 1, forgotten[-1]
    fetched = int(out.split("fetched ")[1].split()[0])
    assert fetched + taken == len(pages) + 1, out  # the index page too
    job = out.split(" of job ")[1].split(":")[0]
    requests = f"{taken} request{'s' if taken > 1 else ''}"
    assert out.splitlines()[-1] == (
        f"ended without {requests} of job {job}: {'it was' if taken == 1 else 'they were'} taken out of"
        f" the queue unfetched while this crawl ran (`crawler sites forget {site.name}`);"
        f" {'its page stays' if taken == 1 else 'their pages stay'} seen: `crawler temp {site.name} --url"
        " URL` fetches one"
    ), out


def test_forget_and_temp_of_a_site_whose_queue_key_holds_another_type_name_the_key_and_the_fix(
    folder: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """Someone SET a site's queue key to a string: `sites forget SITE --yes` ended in a traceback
    (WRONGTYPE in its take script), `crawler temp SITE` queued its start pages where no worker takes them
    and waited for ever, and with the politeness hash SET instead it ended in a traceback (WRONGTYPE at
    its configure). Each says what is wrong and the fix in one line, exit 1; the fix lets them run."""
    redis_client.set(KEYS.queue_of(SITE), "oops")
    forget = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert (forget.code, forget.stdout) == (1, ""), forget
    assert forget.stderr == (
        f"crawler sites forget: error: cannot take {SITE}'s requests out of the queue: Redis key"
        f" crawler:queue:{SITE} is a string, not a sorted set: the workers skip the site, its requests"
        f" neither taken nor queued, until the key is removed; fix: redis-cli DEL crawler:queue:{SITE}, then"
        " forget it\n"
    )
    temp = crawler(folder, redis_server, "temp", SITE)
    assert (temp.code, temp.stdout) == (1, ""), temp
    assert temp.stderr == (
        f"crawler temp: error: site {SITE} cannot be crawled now: Redis key crawler:queue:{SITE} is a string,"
        " not a sorted set: the workers skip the site, its requests neither taken nor queued, until the key"
        f" is removed; fix: redis-cli DEL crawler:queue:{SITE}\n"
    )
    assert not redis_client.exists(KEYS.temp(SITE)), "no job queued"
    redis_client.delete(KEYS.queue_of(SITE))
    redis_client.set(KEYS.polite(SITE), "oops")
    temp = crawler(folder, redis_server, "temp", SITE)
    assert temp.code == 1 and "Traceback" not in temp.stderr, temp
    assert temp.stderr.endswith(f"fix: redis-cli DEL crawler:polite:{SITE}\n"), temp.stderr
    redis_client.delete(KEYS.polite(SITE))
    forget = crawler(folder, redis_server, "sites", "forget", SITE, "--yes")
    assert forget.code == 0 and forget.stdout.startswith(f"forgot {SITE}: "), forget
