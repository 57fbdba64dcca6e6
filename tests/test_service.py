"""The service over simulated time: regular grabs of the news farm (crawler/demo/farm.py, a real HTTP server
on 127.0.0.1 whose articles appear on a controllable clock), crawled by a real `crawler worker` process
through the real embedded Redis. The scheduler ticks on the same clock; nothing sleeps through a period."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from conftest import SiteServer
from proxyserver import TestProxy

from crawler.demo.farm import LISTED, Farm, FarmSite
from crawler.keys import Keys
from crawler.redisio.connection import hash_of
from crawler.requests import JobCounts
from crawler.rules import load_rules
from crawler.schedule.grabs import GrabScheduler
from crawler.status import build_status
from crawler.store import open_store

PREFIX = "crawler"
JOB_TIMEOUT = 60.0


@dataclass
class Service:
    farm: Farm
    server: redis.Redis
    scheduler: GrabScheduler
    rules: Path
    data: Path
    url: str
    worker: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in ("MONGO_URI",)}
        env.update(
            REDIS_URL=self.url,
            CRAWLER_RULES_DIR=str(self.rules),
            CRAWLER_DATA_DIR=str(self.data),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
        )
        return env

    def step(self, seconds: float) -> list[str]:
        """Advance the clock, tick the scheduler, wait until the grabs it queued are done."""
        self.farm.now += seconds
        seeded = self.scheduler.tick(load_rules(self.rules).rules.values())
        for grab in seeded:
            wait_for_job(self.server, grab.job)
        return [grab.site for grab in seeded]

    def grab(self, site: str) -> None:
        """Step a minute at a time until the scheduler queues a grab of ``site``, and it is done."""
        seeded: list[str] = []
        while site not in seeded:
            seeded = self.step(60)

    def run(self, hours: float, step_minutes: float = 1.0) -> None:
        for _ in range(int(hours * 60 / step_minutes)):
            self.step(step_minutes * 60)

    def state(self, site: str) -> dict[str, str]:
        return hash_of(self.server, Keys(PREFIX).grab(site))


def wait_for_job(server: redis.Redis, job: str) -> None:
    deadline = time.monotonic() + JOB_TIMEOUT
    while int(server.hget(Keys(PREFIX).job(job), "pending") or 0) > 0:
        assert time.monotonic() < deadline, f"job {job} did not finish"
        time.sleep(0.02)


Read = TypeVar("Read")


def once_written(read: Callable[[], Read], written: Callable[[Read], bool]) -> Read:
    """What ``read`` gives once ``written`` says the worker wrote its counters (every 2 s, later on a loaded
    machine), or after JOB_TIMEOUT: the caller asserts on it."""
    deadline = time.monotonic() + JOB_TIMEOUT
    value = read()
    while not written(value) and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()
    return value


def start_worker(service: Service, log: Path, *settings: str) -> subprocess.Popen[bytes]:
    """A real `crawler worker` process on the service's Redis and rules, its stderr written to ``log``;
    ``settings`` (``NAME=VALUE``) more than the test's own."""
    with log.open("w", encoding="utf-8") as stderr:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crawler.cli",
                "worker",
                *("-s", "SCHEDULER_IDLE_POLL_SECONDS=0.05"),
                # A banned site is held back for seconds, not minutes: the clock of the farm is simulated,
                # the queue's is Redis's.
                *("-s", "BAN_BACKOFF_SECONDS=0.5", "-s", "BACKOFF_MAX_SECONDS=2"),
                *("-s", "RETRY_BACKOFF_SECONDS=0.1"),
                *(item for setting in settings for item in ("-s", setting)),
            ],
            env=service.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """Stop ``worker`` as Ctrl-C does."""
    worker.send_signal(signal.SIGINT)
    try:
        worker.wait(60)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def wait_serving(log: Path, sites: str) -> None:
    """Wait until the worker logging to ``log`` has read the rules folder as it starts, and serves ``sites``
    (comma-separated, sorted): a rule file written after is one added while it runs."""
    count = sites.count(",") + 1
    serving = f"Serving {count} site {'rule' if count == 1 else 'rules'}: {sites}\n"
    deadline = time.monotonic() + JOB_TIMEOUT
    while serving not in (text := log.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, f"the worker never logged {serving!r}: {text[-3000:]}"
        time.sleep(0.05)


def assert_clean(log: Path) -> None:
    """A worker's log shows no traceback and no deprecation warning."""
    output = log.read_text(encoding="utf-8")
    assert "Traceback" not in output, output[-3000:]
    assert "DeprecationWarning" not in output, output[-3000:]


@pytest.fixture
def service(
    request: pytest.FixtureRequest, tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> Iterator[Service]:
    sites: list[FarmSite] = request.param
    start = float(int(time.time()))
    with Farm(sites, start) as farm:
        rules = tmp_path / "rules"
        rules.mkdir()
        for site in sites:
            (rules / f"{site.name}.yaml").write_text(farm.rule(site.name), encoding="utf-8")
        scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=lambda: farm.now)
        service = Service(farm, redis_client, scheduler, rules, tmp_path / "data", redis_server)
        log = tmp_path / "worker.log"
        worker = service.worker = start_worker(service, log)
        try:
            yield service
        finally:
            stop_worker(worker)
    assert_clean(log)


QUIET_AND_BUSY = [
    FarmSite("quiet", per_hour=0.001, every="10m", min="10m", max="40m"),
    FarmSite("busy", per_hour=12, every="20m", min="10m", max="80m"),
]


@pytest.mark.parametrize("service", [QUIET_AND_BUSY], indirect=True)
def test_unchanged_index_pages_cost_304s_and_intervals_adapt(service: Service) -> None:
    service.run(hours=3)
    farm = service.farm
    index = [v for v in farm.log if v.kind == "index"]
    quiet = [v.status for v in index if v.site == "quiet"]
    assert quiet[0] == 200 and len(quiet) >= 4
    assert set(quiet[1:]) == {304}, "an unchanged index page costs a 304, never a download"
    assert float(service.state("quiet")["interval"]) == 2400, "no news: the interval grew to max (40m)"
    assert float(service.state("busy")["interval"]) == 600, "news at every grab: it shrank to min (10m)"
    for site, low in (("quiet", 600), ("busy", 600)):
        times = [v.moment for v in index if v.site == site]
        assert min(b - a for a, b in itertools.pairwise(times)) >= low, f"{site}: never under min"
    # Every article of the busy site published before the last grab was fetched, within one period.
    fetched = {
        v.article: v.moment for v in farm.log if v.site == "busy" and v.kind == "article" and v.status == 200
    }
    last_grab = max(v.moment for v in index if v.site == "busy")
    published = [k for k in range(farm.newest("busy", last_grab) + 1)]
    assert set(published) <= set(fetched)
    latency = [fetched[k] - max(farm.published("busy", k), farm.start) for k in published]
    assert max(latency) <= 20 * 60 + 60, "stored within one period (20m, the rule's every) of appearing"
    with open_store({"CRAWLER_DATA_DIR": str(service.data)}) as store:
        assert store.count(site="busy") == len(fetched)
        assert store.count(site="quiet") == farm.newest("quiet") + 1


SECTIONS = FarmSite("sections", per_hour=0.001, every="10m", min="5m", max="40m")


@pytest.mark.parametrize("service", [[SECTIONS]], indirect=True)
def test_a_grab_of_a_rule_with_two_start_urls_adapts_the_interval_once(service: Service) -> None:
    """Only the rule's first index page adapts the interval: each start URL's first page did, so a rule
    of two sections grew its interval twice per grab with no news (10m to 19m36s, not 14m)."""
    rule = service.rules / "sections.yaml"
    first = f"{service.farm.origin}/sections/"
    rule.write_text(
        rule.read_text(encoding="utf-8").replace(f"['{first}']", f"['{first}', '{first}?part=2']"),
        encoding="utf-8",
    )
    service.grab("sections")
    assert service.state("sections")["visits"] == "1", "one visit per grab, its first index page's"
    # Both start URLs list the same articles: the first page has the news when it is read first, none
    # when the second page was read before it and marked them seen. Either way the interval moved once.
    first_interval = float(service.state("sections")["interval"])
    assert first_interval in (480, 840), "news: 20% sooner, or none: 40% later, once"
    service.grab("sections")
    state = service.state("sections")
    assert (state["visits"], state["not_modified"]) == ("2", "1"), "the second grab: one visit, a 304"
    assert float(state["interval"]) == pytest.approx(first_interval * 1.4), "no news: 40% later, once"


CALM = FarmSite("calm", per_hour=0.001, every="10m", min="10m", max="40m", feed=True)
FEED_SITES = [FarmSite("wire", per_hour=6, every="20m", feed=True), CALM]
# The service of one site whose feed has no news: a test adds a rule file beside it.
CALM_FEED = pytest.mark.parametrize("service", [[CALM]], indirect=True)


@pytest.mark.parametrize("service", [FEED_SITES], indirect=True)
def test_sites_read_from_their_feeds_alone_get_every_article_with_the_feeds_dates_and_authors(
    service: Service,
) -> None:
    service.run(hours=1, step_minutes=5)
    farm = service.farm
    assert [v for v in farm.log if v.kind == "index"] == [], "a feed-only rule reads no index page"
    calm = [v.status for v in farm.log if v.kind == "feed" and v.site == "calm"]
    assert calm[0] == 200 and len(calm) >= 2
    assert set(calm[1:]) == {304}, "an unchanged feed costs a 304 (the grab's conditional request)"
    feeds = [v for v in farm.log if v.kind == "feed" and v.site == "wire"]
    assert len(feeds) >= 3 and all(v.status == 200 for v in feeds), "news at every grab"
    fetched = {v.article for v in farm.log if v.site == "wire" and v.kind == "article" and v.status == 200}
    assert set(range(farm.newest("wire", feeds[-1].moment) + 1)) <= fetched
    with open_store({"CRAWLER_DATA_DIR": str(service.data)}) as store:
        stored = list(store.iter_articles(site="wire"))
    assert len(stored) == len(fetched)
    for article in stored:
        number = int(str(article["url"]).rsplit("/", 1)[1].removesuffix(".html"))
        assert article["author"] == farm.author(number), "the page has no author: the feed's"
        published = datetime.fromisoformat(str(article["published"]))
        assert published.timestamp() == int(farm.published("wire", number)), (
            "the page has no date: the feed's"
        )
        assert str(article["title"]).startswith(f"wire {number}: "), "the page's own title"
    state = service.state("calm")
    assert float(state["interval"]) > 600, "a feed with no news lets the interval grow, as an index page"


@CALM_FEED
def test_a_new_rule_reading_a_feed_another_site_reads_gets_the_whole_feed_at_its_first_grab(
    service: Service,
) -> None:
    service.run(hours=0.5, step_minutes=5)
    assert int(service.state("calm")["not_modified"]) >= 1, "calm's feed is unchanged: 304s"
    (service.rules / "copy.yaml").write_text(service.farm.rule("calm"), encoding="utf-8")
    seeded: list[str] = []
    while "copy" not in seeded:
        before = len(service.farm.log)
        seeded = service.step(60)
    assert seeded == ["copy"]
    feeds = [v.status for v in service.farm.log[before:] if v.kind == "feed"]
    assert feeds == [200], "the site's first grab reads the whole feed, unconditionally"


@CALM_FEED
def test_a_rule_added_while_a_worker_runs_has_the_304_of_its_feed_counted_there(
    service: Service, tmp_path: Path
) -> None:
    assert service.worker is not None
    service.grab("calm")
    # The worker started before the rule was added; another one reads the new site's feed first.
    service.worker.send_signal(signal.SIGSTOP)
    try:
        (service.rules / "copy.yaml").write_text(service.farm.rule("calm"), encoding="utf-8")
        log = tmp_path / "other-worker.log"
        other = start_worker(service, log)
        try:
            service.grab("copy")
        finally:
            stop_worker(other)
        assert_clean(log)
    finally:
        service.worker.send_signal(signal.SIGCONT)
    assert "not_modified" not in service.state("copy"), "the feed's first read is whole"
    service.grab("copy")
    assert service.state("copy").get("not_modified") == "1", "the second grab's 304, counted"


@CALM_FEED
def test_a_rule_added_while_a_worker_runs_has_its_unreadable_feed_noted_in_its_grab(service: Service) -> None:
    service.grab("calm")
    typo = f"{service.farm.origin}/calm/fed.xml"
    rule = service.farm.rule("calm").replace(f"{service.farm.origin}/calm/feed.xml", typo)
    (service.rules / "typo.yaml").write_text(rule, encoding="utf-8")
    service.grab("typo")
    job = service.state("typo")["job"]
    # The worker writes the note just after the dead letter that ends the job, in the same callback: once
    # it has ended a later grab, the note is there.
    service.grab("calm")
    counts = JobCounts.read(service.server, Keys(PREFIX), job)
    assert counts.errors == 1
    assert len(counts.notes) == 1, "the feed that could not be read is noted, as for a site known at start"
    assert counts.notes[0].startswith(f"{typo} could not be read (HTTP 404 Not Found): `feeds[0]` in ")
    assert "typo.yaml" in counts.notes[0]


@CALM_FEED
def test_a_rule_added_while_a_worker_runs_keeps_the_crawl_delay_of_its_robots_txt(service: Service) -> None:
    service.grab("calm")
    service.farm.crawl_delay = 0.5
    rule = service.farm.rule("calm").replace("obey_robots: false", "obey_robots: true")
    (service.rules / "polite.yaml").write_text(rule, encoding="utf-8")
    service.grab("polite")
    polite = hash_of(service.server, Keys(PREFIX).polite("polite"))
    assert float(polite.get("crawl_delay", 0)) == 0.5, "robots.txt's crawl-delay, longer than the rule's"


@CALM_FEED
def test_two_sites_on_one_host_each_keep_the_crawl_delay_of_its_robots_txt(service: Service) -> None:
    service.grab("calm")
    service.farm.crawl_delay = 0.5
    rule = service.farm.rule("calm").replace("obey_robots: false", "obey_robots: true")
    for site in ("polite", "second"):
        (service.rules / f"{site}.yaml").write_text(rule, encoding="utf-8")
    service.grab("polite")
    service.grab("second")
    for site in ("polite", "second"):
        polite = hash_of(service.server, Keys(PREFIX).polite(site))
        assert float(polite.get("crawl_delay", 0)) == 0.5, f"{site}: robots.txt is kept for each site"


@CALM_FEED
def test_a_rule_added_while_a_worker_runs_has_its_requests_carry_its_session(service: Service) -> None:
    service.grab("calm")
    sessions = service.rules / "sessions"
    sessions.mkdir()
    (sessions / "member.yaml").write_text("cookies: {session: member-token}\n", encoding="utf-8")
    rule = service.farm.rule("calm") + "access:\n  sessions: [sessions/member.yaml]\n"
    (service.rules / "members.yaml").write_text(rule, encoding="utf-8")
    before = len(service.farm.log)
    service.grab("members")
    # calm's grab may come in the same step, without a session: the feed is calm's for both.
    cookies = [v.cookie for v in service.farm.log[before:] if v.kind == "feed"]
    assert "session=member-token" in cookies, "the rule's session, as for a rule the worker started with"


@CALM_FEED
def test_a_rule_added_while_a_worker_runs_has_its_requests_go_through_its_proxies(service: Service) -> None:
    service.grab("calm")
    with TestProxy("own", user="u", password="rule-secret") as own:
        rule = service.farm.rule("calm") + f"access:\n  proxies: ['{own.url('u', 'rule-secret')}']\n"
        (service.rules / "proxied.yaml").write_text(rule, encoding="utf-8")
        before = len(service.farm.log)
        service.grab("proxied")
    # calm's grab may come in the same step, without a proxy: the feed is calm's for both.
    proxies = [v.proxy for v in service.farm.log[before:] if v.kind == "feed"]
    assert "own" in proxies, "the rule's proxy, as for a rule the worker started with"
    assert own.relayed == proxies.count("own")


@pytest.mark.parametrize(
    "service", [[FarmSite("wide", per_hour=60, every="10m", concurrency=12, feed=True)]], indirect=True
)
def test_a_rule_added_while_a_worker_runs_has_its_own_concurrency_in_the_worker(
    service: Service, tmp_path: Path
) -> None:
    wait_serving(tmp_path / "worker.log", "wide")
    # wide is never grabbed: its twin's articles are all new. An hour lists the feed's 20 articles.
    service.farm.now += 3600
    (service.rules / "twin.yaml").write_text(service.farm.rule("wide"), encoding="utf-8")
    service.farm.hold = 12
    (twin,) = service.scheduler.tick([load_rules(service.rules).rules["twin"]])
    wait_for_job(service.server, twin.job)
    assert service.farm.most_waiting == 12, "the rule's concurrency of 12, not the worker's default of 8"


@CALM_FEED
@pytest.mark.parametrize("mended", [False, True], ids=["added", "mended in place"])
def test_a_rule_written_just_after_the_worker_read_the_rules_folder_has_its_first_grab_crawled(
    service: Service, tmp_path: Path, mended: bool
) -> None:
    assert service.worker is not None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ghost.yaml").write_text(service.farm.rule("calm"), encoding="utf-8")
    if mended:
        # Broken when the worker reads the folder, mended in place after: the folder's own time is unchanged.
        (service.rules / "fresh.yaml").write_text(service.farm.rule("calm") + "typo: 1\n", encoding="utf-8")
    wait_serving(tmp_path / "worker.log", "calm")
    service.worker.send_signal(signal.SIGSTOP)
    try:
        log = tmp_path / "paced-worker.log"
        # Reads of the rules folder an hour apart unless it changed: the timer never lets the new rule in.
        paced = start_worker(service, log, "RULES_RELOAD_SECONDS=3600")
        try:
            wait_serving(log, "calm")
            # A grab of a site with no rule file in the folder: the worker reads the folder again, in vain.
            (ghost,) = service.scheduler.tick([load_rules(elsewhere).rules["ghost"]])
            wait_for_job(service.server, ghost.job)
            (service.rules / "fresh.yaml").write_text(service.farm.rule("calm"), encoding="utf-8")
            (fresh,) = service.scheduler.tick([load_rules(service.rules).rules["fresh"]])
            wait_for_job(service.server, fresh.job)
        finally:
            stop_worker(paced)
        assert_clean(log)
    finally:
        service.worker.send_signal(signal.SIGCONT)
    letters = [json.loads(record) for record in service.server.hvals(Keys(PREFIX).dead)]
    assert [(letter["site"], letter["kind"]) for letter in letters] == [("ghost", "no rule")], (
        "the new rule's first request is crawled, not dead-lettered as of no rule"
    )
    with open_store({"CRAWLER_DATA_DIR": str(service.data)}) as store:
        assert store.count(site="fresh") == service.farm.newest("calm") + 1


# The article fields of the test site server's pages (tests/siteserver.py).
SERVER_ARTICLE = (
    "article:\n  fields:\n    title: {xpath: //h1}\n"
    '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n'
)


@CALM_FEED
def test_search_results_on_the_domains_of_a_rule_added_while_a_worker_runs_are_that_rules_articles(
    service: Service, site_server: SiteServer, tmp_path: Path
) -> None:
    assert service.worker is not None
    service.grab("calm")
    finder = (
        "domains: [127.0.0.1]\n"
        "search:\n"
        f'  url: "{site_server.url("/search?q={keyword}")}"\n'
        "  keywords: [ferry]\n"
        "  links: {xpath: \"//ol[@class='results']\"}\n"
        "schedule: {every: 10m}\n" + SERVER_ARTICLE
    )
    # A worker that knows the search rule from its start: nothing of it makes the worker read the rules again.
    service.worker.send_signal(signal.SIGSTOP)
    try:
        (service.rules / "finder.yaml").write_text(finder, encoding="utf-8")
        log = tmp_path / "finder-worker.log"
        other = start_worker(service, log)
        try:
            wait_serving(log, "calm, finder")
            (service.rules / "other.yaml").write_text(
                "domains: [localhost]\nfeeds: [http://localhost/feed]\n" + SERVER_ARTICLE, encoding="utf-8"
            )
            service.grab("finder")
        finally:
            stop_worker(other)
        assert_clean(log)
    finally:
        service.worker.send_signal(signal.SIGCONT)
    with open_store({"CRAWLER_DATA_DIR": str(service.data)}) as store:
        found = {str(article["url"]) for article in store.iter_articles(site="other")}
    assert found == {f"http://localhost:{site_server.port}/a/there-ferry-1"}, (
        "the result on the new rule's domain is its article, not left as no rule's"
    )


# The service of one site read from its sitemap alone (no feed, no index page).
MAPS_SITEMAP = pytest.mark.parametrize(
    "service", [[FarmSite("maps", per_hour=6, every="20m", sitemap=True)]], indirect=True
)


@MAPS_SITEMAP
def test_a_site_read_from_its_sitemap_offers_each_grab_only_what_changed_since_the_last(
    service: Service,
) -> None:
    service.run(hours=2, step_minutes=10)
    farm = service.farm
    sitemaps = [v for v in farm.log if v.kind == "sitemap"]
    assert all(v.status == 200 for v in sitemaps) and len(sitemaps) >= 5
    assert not [v for v in farm.log if v.kind in ("index", "feed")], "a sitemap-only rule"
    fetched = [v.article for v in farm.log if v.kind == "article" and v.status == 200]
    assert len(fetched) == len(set(fetched)), "no article fetched twice"
    assert set(range(farm.newest("maps", sitemaps[-1].moment) + 1)) <= set(fetched)
    # A grab offers the entries changed after the latest change the grab before saw, less an hour.
    expected = 0
    for before, now in itertools.pairwise(sitemaps):
        latest = farm.published("maps", farm.newest("maps", before.moment))
        newest = farm.newest("maps", now.moment)
        listed = range(max(newest - LISTED + 1, 0), newest + 1)
        expected += sum(1 for k in listed if farm.published("maps", k) <= latest - 3600)
    assert expected > 0
    unchanged = once_written(
        lambda: sum(
            int(service.server.hget(key, "crawl/sitemap_unchanged") or 0)
            for key in service.server.scan_iter(f"{PREFIX}:stats:maps:*")
        ),
        lambda counted: counted >= expected,
    )
    assert unchanged == expected, "what an earlier grab read is not offered again"
    assert service.server.hget(Keys(PREFIX).sitemaps("maps"), f"{farm.origin}/maps/sitemap.xml") is not None


@MAPS_SITEMAP
def test_a_new_rule_reading_a_sitemap_another_site_reads_is_offered_every_entry_at_its_first_grab(
    service: Service,
) -> None:
    service.run(hours=1, step_minutes=10)
    assert len([v for v in service.farm.log if v.kind == "sitemap"]) >= 2, "maps' grabs read it first"
    (service.rules / "copy.yaml").write_text(service.farm.rule("maps"), encoding="utf-8")
    service.grab("copy")
    listed = min(service.farm.newest("maps") + 1, LISTED)
    job = service.state("copy")["job"]
    links = int(service.server.hget(Keys(PREFIX).job(job), "links") or 0)
    assert links == listed, "the site's first grab offers every entry, whatever another site's grab saw"


@pytest.mark.parametrize(
    "service",
    [[FarmSite("calm-api", per_hour=0.001, every="10m", min="10m", max="40m", api=True)]],
    indirect=True,
)
def test_an_unchanged_api_page_costs_a_304_and_is_never_dead_lettered(service: Service) -> None:
    service.run(hours=1, step_minutes=5)
    farm = service.farm
    pages = [v.status for v in farm.log if v.kind == "api"]
    assert pages[0] == 200 and len(pages) >= 2
    assert set(pages[1:]) == {304}, "the grab's conditional request"
    assert service.server.hlen(Keys(PREFIX).dead) == 0, "a 304 is no page that is not JSON"
    fetched = {v.article for v in farm.log if v.kind == "article" and v.status == 200}
    assert fetched == set(range(farm.newest("calm-api") + 1))
    assert float(service.state("calm-api")["interval"]) > 600


SUPERVISED = [
    FarmSite("steady", per_hour=6, every="20m"),
    FarmSite("banning", per_hour=6, every="20m"),
    FarmSite("redesigned", per_hour=6, every="20m"),
]


@pytest.mark.parametrize("service", [SUPERVISED], indirect=True)
def test_status_marks_a_banned_site_and_a_changed_layout(service: Service) -> None:
    service.run(hours=1, step_minutes=5)
    service.farm.banned.add("banning")
    service.farm.layout["redesigned"] = 2
    service.run(hours=2, step_minutes=5)

    def flushed(report: dict[str, Any]) -> bool:
        steady = next(site for site in report["sites"] if site["site"] == "steady")
        return bool(report["attention"]) and steady["new_24h"] == steady["pages_24h"] - steady["grabs"]

    report = once_written(
        lambda: build_status(service.server, Keys(PREFIX), load_rules(service.rules), time.time()), flushed
    )
    sites = {site["site"]: site for site in report["sites"]}
    assert sites["steady"]["attention"] == []
    assert sites["banning"]["bans_24h"] > 0
    assert any(reason.startswith("banned") for reason in sites["banning"]["attention"])
    body = next(f for f in sites["redesigned"]["fields"] if f["field"] == "body")
    assert body["stopped"] and body["missing_24h"] >= 0.5
    assert any("field body stopped matching" in reason for reason in sites["redesigned"]["attention"])
    assert sites["redesigned"]["qread_fallbacks_24h"] > 0, "qRead read the redesigned pages"
    assert report["attention"] == ["banning", "redesigned"]
    assert report["workers_alive"] == 1
    assert sites["steady"]["new_24h"] == sites["steady"]["pages_24h"] - sites["steady"]["grabs"]
    assert sites["steady"]["last_grab"] is not None and sites["steady"]["next_grab"] is not None
    result = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "status", "--format", "json"],
        env=service.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout)["attention"] == ["banning", "redesigned"]
    table = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "status"],
        env=service.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert table.stdout.count("NEEDS ATTENTION") == 2


@pytest.mark.parametrize("service", [[FarmSite("news", per_hour=6, every="20m")]], indirect=True)
def test_a_temp_crawl_on_a_running_service_leaves_the_schedule_alone(service: Service) -> None:
    service.run(hours=0.5)
    before = service.state("news")
    service.farm.now += 5 * 60
    result = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "temp", "news"],
        env=service.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "stored" in result.stdout
    after = service.state("news")
    assert after == before, "a temp crawl changes nothing of the regular grabs"
    temp_index = [v for v in service.farm.log if v.kind == "index"][-1]
    assert temp_index.status == 200, "a temp crawl reads the whole index page (no conditional request)"
    jobs = [key for key in service.server.scan_iter(f"{PREFIX}:job:*")]
    kinds = sorted(service.server.hget(key, "kind") or b"" for key in jobs)
    assert kinds.count(b"temp") == 1 and kinds.count(b"grab") == int(before["grabs"])


@pytest.mark.parametrize(
    "service",
    [[FarmSite("news", per_hour=6, every="20m"), FarmSite("other", per_hour=6, every="20m")]],
    indirect=True,
)
def test_a_site_paused_from_the_command_line_is_not_grabbed_until_resumed(service: Service) -> None:
    def crawler(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "crawler.cli", *args],
            env=service.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert sorted(service.step(0)) == ["news", "other"]
    paused = crawler("sites", "pause", "news")
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout.startswith("paused news: no regular grab of it is queued"), paused.stdout
    reads = len([visit for visit in service.farm.log if visit.site == "news"])
    grabbed: list[str] = []
    for _ in range(6):  # an hour, 10 minutes a tick: three periods of each site
        grabbed += service.step(600)
    assert grabbed == ["other"] * 3, "no grab of the paused site, across every tick"
    assert len([visit for visit in service.farm.log if visit.site == "news"]) == reads
    report = json.loads(crawler("status", "--format", "json").stdout)
    (news,) = [site for site in report["sites"] if site["site"] == "news"]
    assert news["paused"] is not None and news["attention"] == [], "paused, not overdue"
    assert "PAUSED" in crawler("status", "--site", "news").stdout
    resumed = crawler("sites", "resume", "news")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("resumed news: workers take its queued requests again"), resumed.stdout
    assert service.step(60) == ["news"], "due during the pause: grabbed at the next tick"
    assert len([visit for visit in service.farm.log if visit.site == "news"]) > reads, "and crawled"
