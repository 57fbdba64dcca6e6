"""Regular grabs on a controllable clock, against the real embedded Redis: one seeding per period, with two
schedulers, across restarts; cron expressions; a seeding cut short; the one active scheduler."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from crawler.commandline import counted
from crawler.demo import DEMO_RULES
from crawler.keys import Keys
from crawler.redisio import serializer
from crawler.redisio.queue import Ack, LeasedQueue
from crawler.requests import JobCounts, discover_request, encode_request, enqueue_job
from crawler.rules import Rule, load_rule, load_rules
from crawler.schedule.grabs import GrabScheduler, Planned, Seeded, Waiting, next_due, rule_loader
from crawler.schedule.revisit import Revisits, bounds, next_interval
from crawler.settings import SCHEDULE_TICK_SECONDS

REPO = Path(__file__).resolve().parents[1]
PREFIX = "crawler"


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta).total_seconds()


@pytest.fixture
def rules() -> dict[str, Rule]:
    return dict(load_rules(DEMO_RULES).rules)


def queued_index_pages(server: redis.Redis) -> int:
    return len(LeasedQueue(server, Keys(PREFIX)))


def job_kind(server: redis.Redis, job: str) -> str:
    value = server.hget(Keys(PREFIX).job(job), "kind")
    assert isinstance(value, bytes)
    return value.decode()


DISCOVER_RULE = """
name: Energy news anywhere
discover:
  topic:
    keywords: [solar, wind turbine, battery storage]
  seeds: ["https://portal.test/energy/", "https://news.test/", "https://blog.test/"]
  budget: 20
  domains: [portal.test, news.test, blog.test]
schedule: {every: 5s}
"""


def take_all(server: redis.Redis, *, killed: bool = False) -> int:
    """A worker takes every queued request, and crawls it (its lease ended: its grab ends), or is killed
    holding it (``killed``: its lease past its deadline, no worker alive to put it back); how many."""
    queue = LeasedQueue(server, Keys(PREFIX), lease_seconds=-60 if killed else 60)
    taken: list[str] = []
    while (popped := queue.pop(taken[-1:])).member is not None:
        taken.append(popped.member)
        if not killed:
            assert popped.site is not None
            job = serializer.loads(popped.member)["meta"]["job"]
            queue.ack(popped.member, site=popped.site, job=job, fetched=1)
    return len(taken)


def test_next_due_of_every_and_cron(rules: dict[str, Rule]) -> None:
    rule = rules["demo-citynews"]
    assert rule.every == timedelta(minutes=20)
    moment = datetime(2026, 11, 22, 10, 7, 30, tzinfo=UTC).timestamp()
    assert next_due(rule, moment) == moment + 20 * 60
    assert next_due(rule, moment, interval=600) == moment + 600, "the adapted interval"
    cron = dataclasses.replace(rule, every=None, cron="30 6,18 * * 1-5")  # 06:30 and 18:30 on weekdays
    friday_evening = datetime(2026, 11, 20, 19, 0, tzinfo=UTC).timestamp()
    assert next_due(cron, friday_evening) == datetime(2026, 11, 23, 6, 30, tzinfo=UTC).timestamp()
    assert next_due(dataclasses.replace(rule, every=None, cron=None), moment) is None


def test_a_rule_without_a_schedule_has_no_regular_grab(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    unscheduled = dataclasses.replace(rules["demo-citynews"], every=None, cron=None)
    assert GrabScheduler(redis_client, Keys(PREFIX), clock=clock).tick([unscheduled]) == []
    assert queued_index_pages(redis_client) == 0


def test_each_period_is_seeded_once_by_two_schedulers(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    first = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    second = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    citynews = [rules["demo-citynews"]]
    seeded = first.tick(citynews) + second.tick(citynews)
    assert [s.site for s in seeded] == ["demo-citynews"], "the first grab of a new every rule is due at once"
    assert job_kind(redis_client, seeded[0].job) == "grab"
    assert queued_index_pages(redis_client) == len(rules["demo-citynews"].start_urls)
    take_all(redis_client)  # each grab crawled within its period
    periods = 1
    for _ in range(12):  # 12 ticks a minute apart: 10:08 .. 10:19, still in the first period
        clock.advance(minutes=1)
        assert first.tick(citynews) + second.tick(citynews) == []
    for _ in range(3 * 20):  # the next hour, minute by minute, both schedulers ticking
        clock.advance(minutes=1)
        periods += len(first.tick(citynews)) + len(second.tick(citynews))
        take_all(redis_client)
    assert periods == 4, "10:07, 10:27, 10:47, 11:07: one grab per period"
    state = redis_client.hgetall(Keys(PREFIX).grab("demo-citynews"))
    assert int(state[b"grabs"]) == 4
    assert float(state[b"next"]) == datetime(2026, 11, 22, 11, 27, tzinfo=UTC).timestamp()


def test_a_paused_site_gets_no_grab_however_long_it_is_due_and_resumed_is_due_at_once(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    two = [rules["demo-citynews"], rules["demo-techdaily"]]
    assert sorted(s.site for s in scheduler.tick(two)) == ["demo-citynews", "demo-techdaily"]
    take_all(redis_client)
    LeasedQueue(redis_client, Keys(PREFIX)).pause("demo-citynews", clock.now)
    assert scheduler.paused(two) == ["demo-citynews"]
    grabbed = []
    for _ in range(60):  # an hour, minute by minute: three periods of each site
        clock.advance(minutes=1)
        grabbed += [s.site for s in scheduler.tick(two)]
        take_all(redis_client)
    assert grabbed == ["demo-techdaily"] * 3, "the paused site gets none"
    state = redis_client.hgetall(Keys(PREFIX).grab("demo-citynews"))
    assert int(state[b"grabs"]) == 1 and b"waiting" not in state
    assert LeasedQueue(redis_client, Keys(PREFIX)).resume("demo-citynews")
    clock.advance(seconds=5)
    assert [s.site for s in scheduler.tick(two)] == ["demo-citynews"], "due since the pause: grabbed now"


def recorded_next(server: redis.Redis, site: str) -> datetime:
    value = server.hget(Keys(PREFIX).grab(site), "next")
    assert value is not None, f"no next grab recorded for {site}"
    return datetime.fromtimestamp(float(value), UTC)


@pytest.mark.parametrize(
    ("cron", "first_seen", "first_grab"),
    [
        ("0 3 * * mon", datetime(2026, 11, 27, 0, 28, tzinfo=UTC), datetime(2026, 11, 30, 3, tzinfo=UTC)),
        ("*/20 6-23 * * *", datetime(2026, 11, 27, 0, 23, tzinfo=UTC), datetime(2026, 11, 27, 6, tzinfo=UTC)),
    ],
)
def test_a_new_cron_rule_is_first_grabbed_at_its_next_cron_time(
    redis_client: redis.Redis, rules: dict[str, Rule], cron: str, first_seen: datetime, first_grab: datetime
) -> None:
    clock = Clock(first_seen)
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    rule = dataclasses.replace(rules["demo-citynews"], every=None, cron=cron)
    assert scheduler.tick([rule]) == []
    assert queued_index_pages(redis_client) == 0, "not grabbed before its cron time"
    assert recorded_next(redis_client, rule.site) == first_grab
    redis_client.delete(Keys(PREFIX).grab(rule.site))
    assert scheduler.plan([rule]) == [Planned(rule.site, first_grab.timestamp(), first=True)]
    assert GrabScheduler(redis_client, Keys(PREFIX), clock=clock).plan([rule]) == [], "said once"
    assert recorded_next(redis_client, rule.site) == first_grab
    clock.now = first_grab.timestamp() - 1
    assert scheduler.tick([rule]) == []
    clock.now = first_grab.timestamp() + 2
    seeded = scheduler.tick([rule])
    assert [(s.site, type(s)) for s in seeded] == [(rule.site, Seeded)]
    assert queued_index_pages(redis_client) == len(rule.start_urls)
    assert recorded_next(redis_client, rule.site) > first_grab
    assert scheduler.tick([rule]) == []


def test_a_new_cron_rule_seen_within_its_cron_minute_is_grabbed_at_once(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 30, 3, 0, 40, tzinfo=UTC))
    rule = dataclasses.replace(rules["demo-citynews"], every=None, cron="0 3 * * mon")
    seeded = GrabScheduler(redis_client, Keys(PREFIX), clock=clock).tick([rule])
    assert [(s.site, type(s)) for s in seeded] == [(rule.site, Seeded)]
    assert recorded_next(redis_client, rule.site) == datetime(2026, 12, 7, 3, 0, tzinfo=UTC)


def test_a_changed_schedule_moves_the_next_grab_to_the_new_cron_time(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 27, 0, 28, tzinfo=UTC))  # a Friday
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    weekly = dataclasses.replace(rules["demo-citynews"], every=None, cron="0 3 * * mon")
    assert scheduler.tick([weekly]) == []
    daily = dataclasses.replace(weekly, cron="0 3 * * *")
    three_today = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
    assert scheduler.plan([daily]) == [Planned(daily.site, three_today.timestamp(), first=False)]
    assert recorded_next(redis_client, daily.site) == three_today, "not Monday, the old expression's"
    assert scheduler.plan([daily]) == []

    every = rules["demo-techdaily"]
    assert len(scheduler.tick([every])) == 1, "a new every rule is grabbed at once"
    queued = queued_index_pages(redis_client)
    nightly = dataclasses.replace(every, every=None, cron="0 3 * * *")
    assert scheduler.tick([nightly]) == []
    assert recorded_next(redis_client, nightly.site) == three_today
    clock.advance(minutes=25)  # the every rule's next grab would be due now
    assert scheduler.tick([daily, nightly]) == [], "the cron decides, not the former period"
    assert queued_index_pages(redis_client) == queued, "the every rule's one grab only"


def test_crawler_schedule_once_says_when_a_new_cron_rule_is_first_grabbed(
    redis_server: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    text = (DEMO_RULES / "demo-citynews.yaml").read_text("utf-8")
    assert "every: 20m" in text
    (tmp_path / "leapday.yaml").write_text(text.replace("every: 20m", 'cron: "0 3 29 2 *"'), "utf-8")
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env.update(REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(tmp_path))
    command = [sys.executable, "-m", "crawler.cli", "schedule", "--once"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    due = recorded_next(redis_client, "leapday")
    assert (due.month, due.day, due.hour, due.minute) == (2, 29, 3, 0)
    when = f"{due:%Y-%m-%dT%H:%M:%SZ}"
    assert done.stdout == f"leapday: first grab at {when}\nnothing due: the next grab at {when} (leapday)\n"
    assert queued_index_pages(redis_client) == 0


def test_a_restarted_scheduler_neither_seeds_twice_nor_skips(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    citynews = [rules["demo-citynews"]]
    assert len(GrabScheduler(redis_client, Keys(PREFIX), clock=clock).tick(citynews)) == 1
    take_all(redis_client)
    clock.advance(minutes=5)
    restarted = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    assert restarted.tick(citynews) == [], "same period: nothing"
    clock.advance(hours=3)  # stopped for three hours: the current period is seeded once, at the restart
    again = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    assert len(again.tick(citynews)) == 1
    assert again.tick(citynews) == []


def test_a_clock_stepped_back_past_the_last_grab_delays_the_next_by_one_period_at_most(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """A machine whose clock ran a day ahead (no RTC, a wrong time zone) is set right by NTP: the next
    grab recorded then is a day ahead too, and the site was not grabbed for that day. A last grab in the
    future by the clock is the sign: the next one comes the same time after now as it was after that."""
    clock = Clock(datetime(2026, 11, 23, 10, 0, tzinfo=UTC))
    citynews = rules["demo-citynews"]
    assert citynews.every == timedelta(minutes=20)
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    assert len(scheduler.tick([citynews])) == 1
    take_all(redis_client)
    clock.advance(days=-1)
    with caplog.at_level(logging.WARNING, logger="crawler.schedule.grabs"):
        assert scheduler.tick([citynews]) == []
    assert recorded_next(redis_client, citynews.site).timestamp() == pytest.approx(clock.now + 20 * 60)
    assert "demo-citynews: its last grab, at 2026-11-23T10:00:00Z, is 24h00m ahead of the clock" in (
        caplog.text
    ), caplog.text
    clock.advance(minutes=21)
    assert len(scheduler.tick([citynews])) == 1, "one period on, not a day"
    assert scheduler.tick([citynews]) == []


def test_a_clock_stepped_back_past_a_cron_rules_last_grab_moves_it_to_now_with_a_warning(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """A cron rule's last grab a day ahead of the clock stayed there until its next grab (a week for a
    weekly one: `crawler status` showed a last grab in the future), and ``plan`` moved its next grab to
    the expression's next time as an edit of the schedule (INFO ``schedule changed``), not a clock set
    back."""
    clock = Clock(datetime(2026, 11, 23, 11, 0, tzinfo=UTC))
    hourly = dataclasses.replace(rules["demo-citynews"], every=None, cron="0 * * * *")
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    assert len(scheduler.tick([hourly])) == 1
    take_all(redis_client)
    clock.advance(days=-1, minutes=10)
    with caplog.at_level(logging.INFO, logger="crawler.schedule.grabs"):
        assert scheduler.plan([hourly]) == []
        assert scheduler.tick([hourly]) == []
    assert [record.getMessage() for record in caplog.records] == [
        "demo-citynews: its last grab, at 2026-11-23T11:00:00Z, is 23h50m ahead of the clock (was the clock"
        " set back?): its next grab moves from 2026-11-23T12:00:00Z to 2026-11-22T12:00:00Z"
    ]
    state = redis_client.hgetall(Keys(PREFIX).grab(hourly.site))
    assert float(state[b"last"]) == clock.now
    assert recorded_next(redis_client, hourly.site) == datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    clock.advance(minutes=50)
    assert len(scheduler.tick([hourly])) == 1, "at the expression's next time"


def test_a_seeding_cut_short_is_finished_by_the_next_tick(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    key = Keys(PREFIX).grab("demo-citynews")
    # A scheduler claimed the period and died before queueing its job.
    redis_client.hset(
        key, mapping={"next": str(clock.now + 600), "last": str(clock.now), "seeding": "abc123"}
    )
    assert scheduler.tick([rules["demo-citynews"]]) == []
    assert redis_client.hget(key, "job") == b"abc123"
    assert redis_client.hget(key, "seeding") is None
    assert queued_index_pages(redis_client) == len(rules["demo-citynews"].start_urls)
    assert job_kind(redis_client, "abc123") == "grab"


def test_a_grab_names_a_seeds_dead_letter_written_unnamed_so_that_the_seeds_ack_takes_it(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """A discover rule's seed is fetched at every grab, and the ack of its page deletes the dead letter
    named for it in crawler:dead-superseded (736cbf2). One written unnamed by a worker of an older release
    (during a rolling upgrade, the letters read through before) was named only when something read the
    letters again (`crawler status`, `dead list`), and stayed after its seed was fetched fine. A grab names
    it before it queues the seeds."""
    (tmp_path / "energy.yaml").write_text(DISCOVER_RULE, encoding="utf-8")
    rule = load_rule(tmp_path / "energy.yaml")
    assert rule.discover is not None
    keys = Keys(PREFIX)
    queue = LeasedQueue(redis_client, keys)
    assert queue.dead() == {}
    seed = rule.discover.seeds[0]
    old = encode_request(discover_request(rule, seed, job="0123456789ab", job_kind="grab"))
    redis_client.hset(keys.dead, old, json.dumps({"reason": "HTTP 503", "kind": "HTTP 503"}))

    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    (grab,) = GrabScheduler(redis_client, keys, clock=clock).tick([rule])
    acks = []
    while (popped := queue.pop()).member is not None:
        assert popped.site is not None
        url = serializer.loads(popped.member)["url"]
        clears = f"{popped.site}\n{url}" if url in rule.discover.seeds else ""
        acks.append(Ack(popped.member, popped.site, grab.job, fetched=1, clears=clears))
    assert len(acks) == len(rule.discover.seeds)
    assert queue.ack_many(acks) == [True] * len(acks)
    assert redis_client.hlen(keys.dead) == 0, "the seed's letter taken by its ack"


@pytest.mark.parametrize("kind", ["site", "discover"])
def test_a_grab_due_while_the_last_one_has_work_left_waits_until_that_one_ends(
    redis_client: redis.Redis,
    rules: dict[str, Rule],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    if kind == "site":
        rule = rules["demo-citynews"]
    else:
        (tmp_path / "energy.yaml").write_text(DISCOVER_RULE, encoding="utf-8")
        rule = load_rule(tmp_path / "energy.yaml")
    assert rule.every is not None
    period = rule.every.total_seconds()
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    key = Keys(PREFIX).grab(rule.site)
    (first,) = scheduler.tick([rule])
    queued = queued_index_pages(redis_client)
    for _ in range(8):  # 8 periods while no worker crawls the first grab's pages
        clock.advance(seconds=period)
        assert scheduler.tick([rule]) == [], "no grab beside the last one, which has its pages to crawl"
    assert queued_index_pages(redis_client) == queued, "its pages queued once"
    state = redis_client.hgetall(key)
    assert state[b"waiting"] == first.job.encode()
    assert int(state[b"deferred"]) == 1 and int(state[b"grabs"]) == 1
    said = [record.getMessage() for record in caplog.records if "deferred" in record.getMessage()]
    assert len(said) == 1 and first.job in said[0], "logged once"

    assert take_all(redis_client) == queued
    assert JobCounts.read(redis_client, Keys(PREFIX), first.job).pending == 0
    (second,) = scheduler.tick([rule])
    assert second.job != first.job, "queued at the first tick after the last grab ended"
    assert b"waiting" not in redis_client.hgetall(key)

    held = take_all(redis_client, killed=True)
    assert JobCounts.read(redis_client, Keys(PREFIX), second.job).pending == held > 0
    clock.advance(seconds=period)
    third = scheduler.tick([rule])
    assert len(third) == 1, "a last grab left with nothing but expired leases is over"
    assert third[0].job not in (first.job, second.job)
    assert int(redis_client.hget(key, "deferred") or 0) == 1


@pytest.mark.parametrize("kind", ["site", "discover"])
def test_a_grab_due_while_a_temp_crawl_of_the_site_has_work_left_waits_until_that_one_ends(
    redis_client: redis.Redis,
    rules: dict[str, Rule],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    """`crawler temp SITE` reads the site's index pages (a discover rule's seeds and frontier) now: a grab
    due meanwhile would read them again beside it (a discover grab with a budget of its own). It waits,
    as for its last grab, and is queued at the first tick after the temp crawl ends; a temp crawl of
    pages given with --url reads no index page and holds no grab back."""
    if kind == "site":
        rule = rules["demo-citynews"]
    else:
        (tmp_path / "energy.yaml").write_text(DISCOVER_RULE, encoding="utf-8")
        rule = load_rule(tmp_path / "energy.yaml")
    assert rule.every is not None
    period = rule.every.total_seconds()
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    key = Keys(PREFIX).grab(rule.site)
    (first,) = scheduler.tick([rule])
    take_all(redis_client)
    temp = enqueue_job(redis_client, Keys(PREFIX), [rule], kind="temp", boost=100, temp_of=rule.site)
    queued = queued_index_pages(redis_client)
    assert queued > 0
    for _ in range(3):
        clock.advance(seconds=period)
        assert scheduler.tick([rule]) == [], "no grab beside the temp crawl, which has its pages to crawl"
    assert queued_index_pages(redis_client) == queued
    state = redis_client.hgetall(key)
    assert state[b"waiting"] == temp.encode() and int(state[b"deferred"]) == 1
    (waiting,) = scheduler.waiting([rule])
    assert str(waiting) == (
        f"grab of {rule.site} due, deferred until a temp crawl of the site, job {temp}, ends"
        f" ({counted(queued, 'request')} of it still to crawl)"
    )
    said = [record.getMessage() for record in caplog.records if "deferred" in record.getMessage()]
    assert len(said) == 1 and f"a temp crawl of the site, job {temp}," in said[0], "logged once"

    assert take_all(redis_client) == queued
    (second,) = scheduler.tick([rule])
    assert second.job not in (first.job, temp), "queued at the first tick after the temp crawl ended"
    assert b"waiting" not in redis_client.hgetall(key)
    take_all(redis_client)

    enqueue_job(
        redis_client, Keys(PREFIX), [rule], article_urls=["https://portal.test/energy/a"], kind="temp"
    )
    clock.advance(seconds=period)
    assert len(scheduler.tick([rule])) == 1, "a temp crawl of given pages is no reason to wait"


def test_a_grab_deferred_for_one_request_left_says_it_in_the_singular(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    rule = dataclasses.replace(rules["demo-citynews"], start_urls=rules["demo-citynews"].start_urls[:1])
    assert rule.every is not None
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    (first,) = scheduler.tick([rule])
    assert queued_index_pages(redis_client) == 1
    clock.advance(seconds=rule.every.total_seconds())
    assert scheduler.tick([rule]) == []
    said = [record.getMessage() for record in caplog.records if "deferred" in record.getMessage()]
    assert said == [
        f"grab of {rule.site} due, deferred: its last grab, job {first.job}, has 1 request still to crawl;"
        " the next grab is queued once it ends, going on from where it stopped"
    ]
    assert str(Waiting(rule.site, first.job, 1)) == (
        f"grab of {rule.site} due, deferred until its last grab, job {first.job}, ends (1 request of it"
        " still to crawl)"
    )


def test_a_grab_waits_for_the_last_one_at_most_its_longest_wait_then_is_queued_with_a_warning(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """A last grab whose job counts requests that are nowhere (its counter left high by a Redis that lost
    its last writes, say) must not hold the rule's grabs back for ever: after SCHEDULE_GRAB_WAIT_MAX_SECONDS
    the due grab is queued anyway, with a warning naming the job and what to look at."""
    rule = rules["demo-citynews"]
    assert rule.every is not None
    period = rule.every.total_seconds()
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock, wait_max_seconds=3 * period)
    (first,) = scheduler.tick([rule])
    take_all(redis_client)
    redis_client.hincrby(Keys(PREFIX).job(first.job), "pending", 2)  # two requests that are nowhere
    # A request of the site's held in the queue (another job's): they may not be lost.
    other = {"url": "https://citynews.test/a/1", "meta": {"site": rule.site}, "priority": 0}
    LeasedQueue(redis_client, Keys(PREFIX)).push(
        json.dumps(other).encode(), priority=0, site=rule.site, job=None
    )
    for _ in range(3):
        clock.advance(seconds=period)
        assert scheduler.tick([rule]) == [], "it waits, up to its longest wait"
    clock.advance(seconds=period)
    (second,) = scheduler.tick([rule])
    assert second.job != first.job
    assert b"waiting" not in redis_client.hgetall(Keys(PREFIX).grab(rule.site))
    warned = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warned) == 1, [record.getMessage() for record in caplog.records]
    said = warned[0].getMessage()
    assert first.job in said and "SCHEDULE_GRAB_WAIT_MAX_SECONDS" in said and "crawler status" in said


def test_a_grab_waiting_when_the_clock_is_set_back_waits_its_longest_wait_from_then_not_the_step_more(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A grab waiting for its last one recorded since when by a clock a day ahead; NTP set it right: the
    wait was measured from that moment in the future, so the grab waited SCHEDULE_GRAB_WAIT_MAX_SECONDS
    and the day more. A wait begun ahead of the clock is counted from now, as the next grab is (6.)."""
    rule = rules["demo-citynews"]
    assert rule.every is not None
    period = rule.every.total_seconds()
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock, wait_max_seconds=3 * period)
    (first,) = scheduler.tick([rule])
    take_all(redis_client)
    redis_client.hincrby(Keys(PREFIX).job(first.job), "pending", 2)
    other = {"url": "https://citynews.test/a/1", "meta": {"site": rule.site}, "priority": 0}
    LeasedQueue(redis_client, Keys(PREFIX)).push(
        json.dumps(other).encode(), priority=0, site=rule.site, job=None
    )
    clock.advance(seconds=period)
    assert scheduler.tick([rule]) == [], "it waits"
    clock.advance(days=-1)
    seeded = []
    for _ in range(5):
        clock.advance(seconds=period)
        seeded += scheduler.tick([rule])
    assert len(seeded) == 1, "queued once its longest wait passed by the clock set right"


def test_a_period_shorter_than_the_tick_is_grabbed_once_a_tick_and_the_log_says_when(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    rule = dataclasses.replace(rules["demo-citynews"], every=timedelta(seconds=1))
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock, tick_seconds=5)
    (first,) = scheduler.tick([rule])
    after_a_tick = datetime(2026, 11, 22, 10, 0, 5, tzinfo=UTC)
    assert first.next_due == after_a_tick.timestamp(), "not 10:00:01: the next tick is at 10:00:05"
    assert recorded_next(redis_client, rule.site) == after_a_tick
    said = [record.getMessage() for record in caplog.records]
    assert said == [f"grab of {rule.site} queued as job {first.job}; next at 2026-11-22T10:00:05Z"]


def test_one_scheduler_is_active_at_a_time(redis_client: redis.Redis) -> None:
    first = GrabScheduler(redis_client, Keys(PREFIX))
    second = GrabScheduler(redis_client, Keys(PREFIX))
    assert first.lead(30)
    assert not second.lead(30)
    assert first.lead(30), "the leader renews its lock"
    first.resign()
    assert second.lead(30)
    assert not first.lead(30)
    redis_client.delete(Keys(PREFIX).leader)  # the lock expired: its holder stopped without resigning
    assert first.lead(30)


def test_the_active_scheduler_says_so_quietly_and_one_left_waiting_warns(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    first = GrabScheduler(redis_client, Keys(PREFIX), tick_seconds=0)
    second = GrabScheduler(redis_client, Keys(PREFIX), tick_seconds=0.01)
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    stop = threading.Event()

    def one_tick() -> list[Rule]:
        stop.set()
        return []

    first.run(one_tick, stop)
    assert first.lead(30), "the first is the active one again (it resigned as it stopped)"
    stop.clear()
    waiting = threading.Thread(
        target=second.run,
        args=(lambda: [], stop),
    )
    waiting.start()
    waiting.join(0.2)
    stop.set()
    waiting.join(10)
    first.resign()
    records = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert (logging.INFO, f"{first.owner}: active scheduler") in records
    assert (
        logging.WARNING,
        f"{second.owner}: another scheduler, {first.owner}, is active; this one waits, and takes over within"
        " 30s of its stop (SCHEDULE_LEADER_SECONDS)",
    ) in records
    assert [level for level, message in records if message.startswith(first.owner)] == [logging.INFO]


def test_a_tick_failing_with_an_unexpected_error_is_said_whole_once_then_once_a_minute_with_a_count(
    redis_client: redis.Redis,
    rules: dict[str, Rule],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tick that raises an error of the scheduler's own (neither Redis's nor the rules'): its first with
    its traceback, the next ones counted and said once a minute (ticks 10 s apart here), the scheduler
    ticking on; the first tick that works says how many failed."""
    import threading

    ticks = [0]
    clock = [0.0]

    def tick(self: GrabScheduler, rules: list[Rule]) -> list[Seeded]:
        ticks[0] += 1
        if ticks[0] <= 13:
            raise ValueError(f"broken at tick {ticks[0]}")
        return []

    class Ticks(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            clock[0] += 10.0
            if ticks[0] == 14:
                self.set()
            return self.is_set()

    monkeypatch.setattr(GrabScheduler, "tick", tick)
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), tick_seconds=0, monotonic=lambda: clock[0])
    scheduler.run(lambda: [rules["demo-citynews"]], Ticks())
    said = [
        (
            record.levelname,
            record.getMessage().removeprefix(f"{scheduler.owner}: "),
            record.exc_info is not None,
        )
        for record in caplog.records
        if "tick" in record.getMessage()
    ]
    assert said == [
        (
            "ERROR",
            "a tick failed with an unexpected error, ValueError: broken at tick 1 (a fault of the scheduler:"
            " its traceback follows); no grab is queued while it lasts: trying again every tick, the ticks"
            " that fail so said once a minute with their count",
            True,
        ),
        (
            "ERROR",
            "6 more ticks failed so in the 60 s since the last line (7 ticks in all), the last: ValueError:"
            " broken at tick 7",
            False,
        ),
        (
            "ERROR",
            "6 more ticks failed so in the 60 s since the last line (13 ticks in all), the last: ValueError:"
            " broken at tick 13",
            False,
        ),
        (
            "INFO",
            "the scheduler works again, after 13 ticks failed with ValueError: broken at tick 13",
            False,
        ),
    ]
    assert redis_client.get(Keys(PREFIX).tick_failure) is None, "its record for the status removed"


def test_the_scheduler_names_the_sites_without_a_schedule_at_its_first_tick_and_those_added_later(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """`crawler run` and `crawler schedule` (both :meth:`GrabScheduler.run`) say once which sites only a temp
    crawl reads: at the first tick, then each such rule added later; a scheduled rule is never named."""
    import threading

    def unscheduled(site: str) -> Rule:
        return dataclasses.replace(rules["demo-citynews"], site=site, every=None, cron=None)

    folders = [
        [rules["demo-citynews"], unscheduled("wire"), unscheduled("archive")],
        [rules["demo-citynews"], unscheduled("wire"), unscheduled("archive")],
        [rules["demo-citynews"], unscheduled("wire"), unscheduled("archive"), unscheduled("gazette")],
        [rules["demo-citynews"], unscheduled("wire"), unscheduled("archive"), unscheduled("gazette")],
    ]
    stop = threading.Event()

    def load() -> list[Rule]:
        folder = folders.pop(0)
        if not folders:
            stop.set()
        return folder

    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    GrabScheduler(redis_client, Keys(PREFIX), tick_seconds=0).run(load, stop)
    said = [record.getMessage() for record in caplog.records if "temp crawls only" in record.getMessage()]
    assert said == [
        "temp crawls only: archive, wire (no schedule in their rules)",
        "temp crawls only: gazette (no schedule in its rule)",
    ]
    assert {record.levelno for record in caplog.records if "temp crawls only" in record.getMessage()} == {
        logging.INFO
    }


def test_crawler_schedule_once_queues_the_due_grabs(redis_server: str, redis_client: redis.Redis) -> None:
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env.update(REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(DEMO_RULES))
    command = [sys.executable, "-m", "crawler.cli", "schedule", "--once"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert first.returncode == 0, first.stderr[-2000:]
    sites = sorted(
        line.split()[4] for line in first.stdout.splitlines() if line.startswith("queued the grab of")
    )
    assert sites == ["demo-citynews", "demo-huaxia", "demo-techdaily"]
    # No worker runs: the line after them says how to start one.
    assert "3 grabs in the queue and no worker alive to crawl them: start one with `" in first.stdout
    assert "INFO" not in first.stderr, "the queued lines are not logged a second time without -v"
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert second.returncode == 0, second.stderr[-2000:]
    upcoming = sorted((recorded_next(redis_client, site), site) for site in sites)
    said = ", ".join(f"{due:%Y-%m-%dT%H:%M:%SZ} ({site})" for due, site in upcoming)
    assert second.stdout == f"nothing due: the next grabs at {said}\n", "not due again within the period"
    redis_client.hset(Keys(PREFIX).grab("demo-citynews"), "next", "0")  # due again, its grab not crawled
    (job,) = [
        line.split()[-1]
        for line in first.stdout.splitlines()
        if line.startswith("queued the grab of demo-citynews")
    ]
    third = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert third.returncode == 0, third.stderr[-2000:]
    pending = JobCounts.read(redis_client, Keys(PREFIX), job).pending
    assert third.stdout == (
        f"grab of demo-citynews due, deferred until its last grab, job {job}, ends"
        f" ({counted(pending, 'request')} of it still to crawl)\n"
    )


def _grabbed_every_10m(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> tuple[Clock, GrabScheduler, Revisits, Rule]:
    """demo-citynews as a rule of ``every: 10m``, grabbed once at 12:00 (its requests taken), with the
    scheduler's clock and the workers' revisits."""
    clock = Clock(datetime(2026, 11, 28, 12, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    revisits = Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0)
    rule = dataclasses.replace(rules["demo-citynews"], every=timedelta(minutes=10))
    assert len(scheduler.tick([rule])) == 1
    take_all(redis_client)
    return clock, scheduler, revisits, rule


def test_an_edited_every_moves_the_next_grab_to_the_new_period(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A rule's ``every`` edited from 10m to 1m kept the period adapted under the old one and its next
    grab (``crawler status``: ``every 14m (rule: 1m)``, the next grab 14 minutes on): the new period now
    starts at the rule's ``every``, one period after the last grab, said once, as an edited cron is."""
    clock, scheduler, revisits, rule = _grabbed_every_10m(redis_client, rules)
    last = clock.now
    assert revisits.record(rule, 0, clock.now) == pytest.approx(840), "no news: 40% later"
    edited = dataclasses.replace(rule, every=timedelta(minutes=1))
    clock.advance(seconds=5)
    assert scheduler.plan([edited]) == [Planned(rule.site, last + 60, first=False)]
    assert recorded_next(redis_client, rule.site) == datetime.fromtimestamp(last + 60, UTC)
    assert float(redis_client.hget(Keys(PREFIX).grab(rule.site), "interval") or 0) == 60
    assert scheduler.plan([edited]) == [], "said once"
    clock.advance(seconds=55)
    assert len(scheduler.tick([edited])) == 1, "grabbed one new period after the last grab"
    take_all(redis_client)
    assert revisits.record(edited, 0, clock.now) == pytest.approx(84), "adapted from the new period"
    assert scheduler.plan([edited]) == [], "the every the grab was made under is unchanged"


def test_a_visit_recorded_under_the_rule_before_an_edit_leaves_the_new_period_alone(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A worker still holding a rule's old ``every`` (it looks at the rules folder at most every
    RULES_RELOAD_SECONDS) recorded the first page of a grab after the scheduler had moved the site to the
    edited ``every``: the interval it adapted within the old bounds (300 s, the shortest of a 10m rule,
    where the 1m rule's longest is 240 s), and the next grab it set from it, undid the edit. Such a visit
    counts for the yield, and moves neither."""
    clock, scheduler, revisits, rule = _grabbed_every_10m(redis_client, rules)
    key = Keys(PREFIX).grab(rule.site)
    last = clock.now
    edited = dataclasses.replace(rule, every=timedelta(minutes=1))
    clock.advance(seconds=5)
    assert scheduler.plan([edited]) == [Planned(rule.site, last + 60, first=False)]
    assert revisits.record(rule, 0, clock.now) == pytest.approx(60), "the stale rule's visit adapts nothing"
    assert float(redis_client.hget(key, "interval") or 0) == 60
    assert recorded_next(redis_client, rule.site) == datetime.fromtimestamp(last + 60, UTC)
    assert redis_client.hget(key, "visits") == b"1", "the visit is counted"
    assert revisits.record(edited, 0, clock.now) == pytest.approx(84), "the edited rule's visit adapts"


@pytest.mark.parametrize("edit", ["every", "cron"])
def test_a_grab_waiting_for_the_last_one_whose_schedule_is_edited_to_later_waits_no_more(
    redis_client: redis.Redis, rules: dict[str, Rule], edit: str
) -> None:
    """A grab due and waiting for the last one to end, whose rule was edited to a longer every (or to a
    cron), had its next grab moved ahead but kept its wait: `crawler status` showed the next grab, hours
    ahead, as waiting for the last one, `crawler schedule --once` said it due and deferred, and the wait
    of the next due grab counted from the first one's, SCHEDULE_GRAB_WAIT_MAX_SECONDS sooner."""
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    rule = rules["demo-citynews"]
    key = Keys(PREFIX).grab(rule.site)
    (first,) = scheduler.tick([rule])  # no worker crawls it
    clock.advance(minutes=21)
    assert scheduler.tick([rule]) == []
    assert [wait.job for wait in scheduler.waiting([rule])] == [first.job]
    edited = (
        dataclasses.replace(rule, every=timedelta(hours=2))
        if edit == "every"
        else dataclasses.replace(rule, every=None, cron="0 * * * *")
    )
    clock.advance(minutes=1)
    (planned,) = scheduler.plan([edited])
    assert planned.next_due > clock.now
    assert scheduler.waiting([edited]) == []
    assert not {b"waiting", b"waiting_since"} & set(redis_client.hgetall(key))
    assert scheduler.tick([edited]) == [] and scheduler.waiting([edited]) == []
    clock.now = planned.next_due
    assert scheduler.tick([edited]) == []
    assert float(redis_client.hget(key, "waiting_since") or 0) == clock.now, "its wait counted from now"


def test_a_visit_recorded_under_the_every_a_cron_replaced_leaves_the_cron_time_alone(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A rule's ``every`` edited into a ``cron``: the scheduler moved its next grab to the expression's
    time, and a worker still holding the ``every`` rule then recorded the grab's first page: it set the
    next grab one adapted interval after the last, not at the expression's time (a grab at a time the
    cron never names once that is past)."""
    clock, scheduler, revisits, rule = _grabbed_every_10m(redis_client, rules)
    nightly = dataclasses.replace(rule, every=None, cron="0 3 * * *")
    clock.advance(seconds=5)
    third_hour = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    assert scheduler.plan([nightly]) == [Planned(rule.site, third_hour.timestamp(), first=False)]
    revisits.record(rule, 0, clock.now)
    assert recorded_next(redis_client, rule.site) == third_hour
    assert scheduler.plan([nightly]) == [], "said once"


def test_adaptive_intervals_shrink_and_grow_within_the_bounds(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    rule = dataclasses.replace(
        rules["demo-citynews"], every_min=timedelta(minutes=10), every_max=timedelta(hours=1)
    )
    assert bounds(rule, 0.5, 4.0) == (600, 3600)
    assert bounds(rules["demo-citynews"], 0.5, 4.0) == (600, 4800), "the settings' factors of every"
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    revisits = Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0)
    intervals = []
    for found in [3, 2, 5, 1, 0, 0, 0, 0, 0, 0, 0, 4]:
        assert len(scheduler.tick([rule])) == 1
        take_all(redis_client)
        intervals.append(revisits.record(rule, found, clock.now))
        state = redis_client.hgetall(Keys(PREFIX).grab(rule.site))
        assert float(state[b"next"]) == pytest.approx(clock.now + intervals[-1]), (
            "one interval after this grab"
        )
        clock.now = float(state[b"next"])
    expected = [1200.0]
    for found in [3, 2, 5, 1, 0, 0, 0, 0, 0, 0, 0, 4]:
        expected.append(next_interval(expected[-1], found, 600, 3600))
    assert intervals == pytest.approx(expected[1:])
    assert intervals[:4] == pytest.approx([960, 768, 614.4, 600]), (
        "shorter while grabs find news, down to min"
    )
    assert intervals[4:7] == pytest.approx([840, 1176, 1646.4]), "longer while they find none"
    assert intervals[-2] == 3600.0 and intervals[-1] == 2880.0, "up to max; shorter again on news"
    assert 0 < float(redis_client.hget(Keys(PREFIX).grab(rule.site), "yield") or 0) < 1


def test_a_grab_or_a_304_that_changes_the_period_logs_it_once_with_the_next_grab(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """The worker that records a grab's first index page logs, at INFO, a period that changed and the next
    grab; a visit that leaves the period as it was (at a bound, a cron rule, a rule edited since) logs
    nothing."""
    rule = dataclasses.replace(
        rules["demo-citynews"], every_min=timedelta(minutes=10), every_max=timedelta(minutes=30)
    )
    revisits = Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0)
    now = datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()
    redis_client.hset(Keys(PREFIX).grab(rule.site), "every", "1200")  # its grabs claimed under every: 20m
    caplog.set_level(logging.INFO, logger="crawler.schedule.revisit")
    revisits.record(rule, 3, now)  # 20m less 20%
    revisits.record(rule, 0, now + 960, not_modified=True)  # 16m and 40%
    revisits.record(rule, 1, now + 2304)  # 22m24s less 20%: 17m55s
    revisits.record(rule, 0, now + 3379.2)  # 25m05s
    revisits.record(rule, 0, now + 4884.48)  # 35m07s: 30m, the max
    revisits.record(rule, 0, now + 6684.48, not_modified=True)  # at the max: unchanged
    revisits.record(dataclasses.replace(rule, every=None, cron="0 * * * *"), 2, now + 8484.48)
    revisits.record(dataclasses.replace(rule, every=timedelta(minutes=5)), 2, now + 8500)  # edited since
    said = [(record.levelno, record.getMessage()) for record in caplog.records]
    changes = [  # why, the period now, before, the next grab (10:00 plus the visit's offset and the period),
        # and the next grab the line before said (none before the first: no scheduler claimed this grab)
        ("its first index page gave 3 new article links", "16m", "20m", "10:16:00", ""),
        (
            "its grab was answered 304 Not Modified",
            "22m24s",
            "16m",
            "10:38:24",
            " (was 2026-11-22T10:16:00Z)",
        ),
        (
            "its first index page gave 1 new article link",
            "17m55s",
            "22m24s",
            "10:56:19",
            " (was 2026-11-22T10:38:24Z)",
        ),
        (
            "its first index page gave 0 new article links",
            "25m05s",
            "17m55s",
            "11:21:24",
            " (was 2026-11-22T10:56:19Z)",
        ),
        (
            "its first index page gave 0 new article links",
            "30m",
            "25m05s",
            "11:51:24",
            " (was 2026-11-22T11:21:24Z)",
        ),
    ]
    assert said == [
        (
            logging.INFO,
            f"demo-citynews: {why}: its period is now {period} (was {was});"
            f" next grab at 2026-11-22T{at}Z{before}",
        )
        for why, period, was, at, before in changes
    ], said


def test_an_adaptive_period_never_shrinks_under_the_schedulers_tick(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A site with news at every grab speeds up to its ``min``; a ``min`` (set, or every times
    SCHEDULE_ADAPT_MIN_FACTOR) shorter than the tick is the tick: the scheduler looks no more often, and
    an interval recorded under it would have the site slow down from a period it never had."""
    fast = dataclasses.replace(rules["demo-citynews"], every=timedelta(seconds=8), every_min=None)
    given = dataclasses.replace(fast, site="given-min", every_min=timedelta(seconds=1))
    assert SCHEDULE_TICK_SECONDS == 5
    revisits = Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0)
    now = datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()
    for rule in (fast, given):
        intervals = [revisits.record(rule, 3, now + grab * 10) for grab in range(6)]
        assert intervals == pytest.approx([6.4, 5.12, 5, 5, 5, 5]), rule.site
        assert float(redis_client.hget(Keys(PREFIX).grab(rule.site), "interval") or 0) == 5
        assert revisits.record(rule, 0, now + 60) == pytest.approx(7), "slower from the tick"
    assert bounds(fast, 0.5, 4.0, tick=5) == (5, 32)
    assert bounds(dataclasses.replace(fast, every=timedelta(seconds=2)), 0.5, 1.0, tick=5) == (5, 5)
    assert bounds(fast, 0.5, 4.0, tick=10) == (10, 32), "SCHEDULE_TICK_SECONDS as the scheduler has it"


def test_productive_sites_and_temp_crawls_go_first(redis_client: redis.Redis, rules: dict[str, Rule]) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock, yield_boost=5)
    revisits = Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0)
    busy, idle = rules["demo-citynews"], rules["demo-techdaily"]
    scheduler.tick([busy, idle])
    for _ in range(6):
        revisits.record(busy, 4, clock.now)
        revisits.record(idle, 0, clock.now)
    take_all(redis_client)
    clock.advance(hours=5)
    scheduler.tick([busy, idle])
    temp = enqueue_job(redis_client, Keys(PREFIX), [idle], kind="temp", boost=100)
    queue = LeasedQueue(redis_client, Keys(PREFIX))
    order = []
    while (member := queue.pop().member) is not None:
        request = serializer.loads(member)
        order.append((request["meta"]["job_kind"], request["meta"]["site"], request["priority"]))
    assert [kind for kind, _, _ in order[: len(idle.start_urls)]] == ["temp"] * len(idle.start_urls)
    assert order[0][2] == idle.priority + 101
    grabs = [(site, priority) for kind, site, priority in order if kind == "grab"]
    assert grabs[0][0] == "demo-citynews", "the productive site's grab first"
    assert grabs[0][1] > grabs[-1][1]
    assert redis_client.hget(Keys(PREFIX).job(temp), "kind") == b"temp"
    assert redis_client.hget(Keys(PREFIX).grab("demo-techdaily"), "job") != temp.encode(), (
        "the schedule untouched"
    )


def test_the_scheduler_survives_redis_killed_and_started_again(
    rules: dict[str, Rule], tmp_path: Path
) -> None:
    import signal
    import threading
    import time

    from crawler.redisio.connection import connect
    from crawler.redisio.embedded import EmbeddedRedis

    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    stop = threading.Event()
    with EmbeddedRedis(tmp_path, watch_seconds=0) as embedded:
        server = connect(embedded.url)
        scheduler = GrabScheduler(server, Keys(PREFIX), clock=clock, tick_seconds=0.05)
        citynews = [rules["demo-citynews"]]
        thread = threading.Thread(target=scheduler.run, args=(lambda: citynews, stop))
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while int(server.hget(Keys(PREFIX).grab("demo-citynews"), "grabs") or 0) < 1:
                assert time.monotonic() < deadline, "the first grab was never seeded"
                time.sleep(0.05)
            assert embedded.pid is not None
            os.kill(embedded.pid, signal.SIGKILL)
            time.sleep(1)  # ticks fail meanwhile
            assert thread.is_alive(), "a tick that fails is tried again, the scheduler goes on"
            embedded.ensure()
            # The first grab crawled (what the restart kept of it: a lease too), or the next one waits for it.
            LeasedQueue(server, Keys(PREFIX)).requeue_expired(time.time() + 3600)
            take_all(server)
            clock.advance(minutes=25)  # the next period is due
            while int(server.hget(Keys(PREFIX).grab("demo-citynews"), "grabs") or 0) < 2:
                assert time.monotonic() < deadline, "no grab was seeded after Redis came back"
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()
        server.close()


def test_a_grab_that_moves_the_next_one_says_which_time_it_replaces(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """The scheduler's line says when the next grab is (10:20), then the worker that read the grab's first
    index page logs another (10:16): one after the other they contradicted each other (found by a new
    user's walk). The worker's line names the time it replaces, after why the period changed."""
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    rule = rules["demo-citynews"]
    caplog.set_level(logging.INFO, logger="crawler.schedule")
    GrabScheduler(redis_client, Keys(PREFIX), clock=clock).tick([rule])
    Revisits(redis_client, Keys(PREFIX), min_factor=0.5, max_factor=4.0).record(rule, 3, clock.now + 2)
    queued, adapted = (record.getMessage() for record in caplog.records)
    assert queued.endswith("; next at 2026-11-22T10:20:00Z"), queued
    assert adapted == (
        "demo-citynews: its first index page gave 3 new article links: its period is now 16m (was 20m); next"
        " grab at 2026-11-22T10:16:00Z (was 2026-11-22T10:20:00Z)"
    ), adapted


def test_a_site_whose_grab_hash_holds_another_type_stops_no_other_sites_grab(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """Someone SET demo-citynews's grab hash to a string: the tick raised WRONGTYPE at it, and the sites
    after it (demo-techdaily) were never grabbed."""
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    keys = Keys(PREFIX)
    redis_client.set(keys.grab("demo-citynews"), "oops")
    scheduler = GrabScheduler(redis_client, keys, clock=clock)
    chosen = [rules["demo-citynews"], rules["demo-techdaily"]]
    with caplog.at_level(logging.WARNING, logger="crawler.schedule.grabs"):
        seeded = scheduler.tick(chosen)
    assert [s.site for s in seeded] == ["demo-techdaily"]
    assert redis_client.get(keys.grab("demo-citynews")) == b"oops"
    assert (
        "demo-citynews: no regular grab: Redis key crawler:grab:demo-citynews is a string, not a hash; fix:"
        " redis-cli DEL crawler:grab:demo-citynews (its schedule starts anew)" in caplog.text
    ), caplog.text
    assert [site for _, site in scheduler.upcoming(chosen)] == ["demo-techdaily"]
    assert [w.site for w in scheduler.waiting(chosen)] == []


def test_a_sites_temp_or_job_key_of_another_type_stops_no_sites_grab(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """Someone SET demo-citynews's last grab's job hash to a string, and HSET its temp crawl key (a string):
    each tick raised WRONGTYPE at it, and no site after it was ever grabbed again. Such a key names no job,
    counting no request, as write_off_lost and `crawler status` read it (status names the key)."""
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    keys = Keys(PREFIX)
    scheduler = GrabScheduler(redis_client, keys, clock=clock)
    chosen = [rules["demo-citynews"], rules["demo-huaxia"], rules["demo-techdaily"]]
    first = {seeded.site: seeded.job for seeded in scheduler.tick(chosen)}
    take_all(redis_client)
    redis_client.delete(keys.job(first["demo-citynews"]))
    redis_client.set(keys.job(first["demo-citynews"]), "oops")
    redis_client.hset(keys.temp("demo-citynews"), "job", "oops")
    clock.advance(minutes=25)
    assert sorted(seeded.site for seeded in scheduler.tick(chosen)) == sorted(first)
    take_all(redis_client)
    clock.advance(minutes=25)
    job = redis_client.hget(keys.grab("demo-citynews"), "job")
    assert isinstance(job, bytes)
    redis_client.set(keys.job(job.decode()), "oops")
    assert len(scheduler.tick(chosen)) == 3
    assert scheduler.waiting(chosen) == []


def test_a_rule_edited_to_a_cron_of_no_day_is_a_rule_error_and_the_other_sites_are_grabbed(
    redis_client: redis.Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``cron: "0 0 31 2 *"`` (31 February) passed ``crawler rules check``, and croniter, asked for its next
    time, raised CroniterBadDateError at every tick: `crawler schedule` exited with a traceback, and the
    scheduler thread of `crawler run` ended, no site grabbed again."""
    folder = tmp_path / "rules"
    folder.mkdir()
    for path in DEMO_RULES.glob("*.yaml"):
        (folder / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, Keys(PREFIX), clock=clock)
    load, errors = rule_loader(folder)
    assert len(scheduler.tick(load())) == 3
    take_all(redis_client)
    edited = folder / "demo-citynews.yaml"
    edited.write_text(
        edited.read_text(encoding="utf-8").replace("every: 20m", 'cron: "0 0 31 2 *"'), encoding="utf-8"
    )
    clock.advance(minutes=25)
    with caplog.at_level(logging.ERROR, logger="crawler.schedule.grabs"):
        seeded = scheduler.tick(load())
    assert sorted(s.site for s in seeded) == ["demo-huaxia", "demo-techdaily"]
    expected = (
        f'{edited}: schedule.cron: invalid cron expression "0 0 31 2 *": day of month "31" comes in no month'
        ' of "2" (February has 29 days, April, June, September and November 30): it names no time'
        ' (expected a cron expression of 5 fields "minute hour day-of-month month day-of-week", e.g.'
        ' "*/20 * * * *")'
    )
    assert [record.getMessage() for record in caplog.records] == [
        f"rule error, site not scheduled: {expected}"
    ]
    assert errors() == {"demo-citynews": expected}, "for `crawler status` on other machines"


def test_a_grab_due_while_the_last_one_counts_requests_redis_holds_nowhere_is_queued_at_once(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """The site's queue key dropped under `crawler run` (DEL, eviction, a SET over it; or a Redis restarted
    from an older snapshot): its last grab's job, and the site, counted the requests pending for ever, and
    each due grab waited SCHEDULE_GRAB_WAIT_MAX_SECONDS for them (then another grab's count was wrong,
    `crawler status` too). Redis holding none of the site's requests, the counts are written off and the
    grab queued at once, with a warning saying what was lost and how to fetch it."""
    rule = rules["demo-citynews"]
    assert rule.every is not None
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    keys = Keys(PREFIX)
    scheduler = GrabScheduler(redis_client, keys, clock=clock, wait_max_seconds=10 * 86400)
    (first,) = scheduler.tick([rule])
    queued = queued_index_pages(redis_client)
    assert queued > 0
    redis_client.set(keys.queue_of(rule.site), "x")  # a SET over it: its requests lost with its old value
    assert LeasedQueue(redis_client, keys).lost(rule.site) == (queued, 0)
    redis_client.delete(keys.queue_of(rule.site))
    clock.advance(seconds=rule.every.total_seconds())
    (second,) = scheduler.tick([rule])
    assert second.job != first.job
    assert JobCounts.read(redis_client, keys, first.job).pending == 0
    assert int(redis_client.hget(keys.job(first.job), "lost") or 0) == queued
    assert LeasedQueue(redis_client, keys).pending(rule.site) == queued_index_pages(redis_client), (
        "the new grab's"
    )
    warned = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warned == [
        f"grab of {rule.site} queued: its last grab, job {first.job}, counted {counted(queued, 'request')}"
        " still to crawl, none of which Redis holds (lost with the site's queue key, deleted, evicted or"
        " overwritten, or with a Redis restarted from an older snapshot): their counts are written off;"
        f" `crawler temp {rule.site} --again` fetches the articles seen before again"
    ]


def test_a_grabs_job_hash_expires_once_the_next_grab_of_its_site_is_queued(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """Every grab made a job hash (crawler:job:<id>: its counts and notes) that nothing removed: `crawler
    run` of 30 sites grabbed every minute or two left 1,300 more an hour, for ever (bench/soak.py). Once
    the next grab of the site is queued, the last one's hash is kept SCHEDULE_JOB_KEEP_HOURS, then
    expires; the site's current grab keeps its own."""
    rule = rules["demo-citynews"]
    assert rule.every is not None
    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    keys = Keys(PREFIX)
    scheduler = GrabScheduler(redis_client, keys, clock=clock, job_keep_hours=2.0)
    jobs = []
    for _ in range(3):
        (seeded,) = scheduler.tick([rule])
        jobs.append(seeded.job)
        take_all(redis_client)
        clock.advance(seconds=rule.every.total_seconds())
    ttls = [redis_client.ttl(keys.job(job)) for job in jobs]
    assert 0 < ttls[0] <= 2 * 3600 and 0 < ttls[1] <= 2 * 3600, ttls
    assert ttls[2] == -1, "the site's current grab keeps its hash"
    assert redis_client.hget(keys.grab(rule.site), "job") == jobs[2].encode()


def test_the_job_hashes_an_older_version_left_without_a_time_to_live_are_given_one(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A version before SCHEDULE_JOB_KEEP_HOURS gave no job hash a time-to-live, and the grab's claim
    gives one to the site's last grab alone: after an upgrade the hashes of every grab before it, and of
    the temp crawls seen ending, stayed for ever (a site grabbed every minute had made 1,440 a day). The
    scheduler goes through them once: a grab's that is no site's current one and a temp crawl's seen
    ending expire after SCHEDULE_JOB_KEEP_HOURS; the current grab, the job it waits for, a site's last temp
    crawl and a temp crawl under way keep theirs."""
    rule = rules["demo-citynews"]
    keys = Keys(PREFIX)
    # As an older version left them: grabs of the site, each superseded by the next, none with a TTL.
    old_grabs = [enqueue_job(redis_client, keys, [rule], kind="grab") for _ in range(3)]
    take_all(redis_client)
    ended_temp = enqueue_job(redis_client, keys, [rule], article_urls=["http://127.0.0.1:1/a"])
    take_all(redis_client)
    redis_client.hset(keys.job(ended_temp), "ended", "1")
    running_temp = enqueue_job(redis_client, keys, [rule], article_urls=["http://127.0.0.1:1/b"])
    last_temp = enqueue_job(
        redis_client, keys, [rule], article_urls=["http://127.0.0.1:1/c"], temp_of=rule.site
    )
    take_all(redis_client)
    redis_client.hset(keys.job(last_temp), "ended", "1")
    current = enqueue_job(redis_client, keys, [rule], kind="grab")
    waited = enqueue_job(redis_client, keys, [rule], kind="grab")
    redis_client.hset(keys.grab(rule.site), mapping={"job": current, "waiting": waited, "next": "9999999999"})
    redis_client.hset(keys.job(current), "note:x", "kept")

    clock = Clock(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, keys, clock=clock, job_keep_hours=2.0)
    for _ in range(3):
        assert scheduler.tick([rule]) == []

    ttls = {job: redis_client.ttl(keys.job(job)) for job in [*old_grabs, ended_temp]}
    assert all(0 < ttl <= 2 * 3600 for ttl in ttls.values()), ttls
    for job in (current, waited, running_temp, last_temp):
        assert redis_client.ttl(keys.job(job)) == -1, job


def test_the_sweep_of_job_hashes_leaves_those_of_a_site_whose_grab_key_is_unreadable(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """A site whose grab key holds another type (someone SET it) may have any job as its current one: its
    jobs' hashes keep no time-to-live, and the ticks go on (those of the other sites are given one)."""
    citynews, other = rules["demo-citynews"], rules["demo-huaxia"]
    keys = Keys(PREFIX)
    kept = enqueue_job(redis_client, keys, [citynews], kind="grab")
    expiring = enqueue_job(redis_client, keys, [other], kind="grab")
    take_all(redis_client)
    redis_client.set(keys.grab(citynews.site), "oops")
    redis_client.hset(keys.grab(other.site), "next", "9999999999")
    scheduler = GrabScheduler(redis_client, keys, job_keep_hours=2.0)
    assert scheduler.tick([citynews, other]) == []
    assert redis_client.ttl(keys.job(kept)) == -1
    assert 0 < redis_client.ttl(keys.job(expiring)) <= 2 * 3600


def test_one_sites_broken_grab_state_is_that_sites_alone_said_once_the_other_sites_grabbed(
    redis_client: redis.Redis, rules: dict[str, Rule], caplog: pytest.LogCaptureFixture
) -> None:
    """A grab hash edited by hand (`interval` no number; a cron rule's `next` no number, read as it is
    planned) raised out of the tick: no site after it was grabbed, tick after tick. Now that site is skipped,
    said once with its traceback, the others grabbed; once its hash is mended its grab goes through."""
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    keys = Keys(PREFIX)
    every = rules["demo-citynews"]
    cron = dataclasses.replace(rules["demo-huaxia"], every=None, cron="*/5 * * * *")
    sound = rules["demo-techdaily"]
    redis_client.hset(keys.grab(every.site), mapping={"interval": "twenty minutes", "next": "0"})
    redis_client.hset(keys.grab(cron.site), mapping={"next": "soon"})
    caplog.set_level(logging.INFO, logger="crawler.schedule.grabs")
    scheduler = GrabScheduler(redis_client, keys, clock=clock)
    assert [s.site for s in scheduler.tick([every, cron, sound])] == ["demo-techdaily"]
    take_all(redis_client)
    clock.advance(minutes=30)
    assert [s.site for s in scheduler.tick([every, cron, sound])] == ["demo-techdaily"]
    faults = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [(r.getMessage().split(":")[0], r.exc_info is not None) for r in faults] == [
        ("demo-huaxia", True),
        ("demo-citynews", True),
    ], "each said once (the cron rule's as the tick plans), with its traceback"
    assert (
        "no grab of it while its grab meets an unexpected error, ValueError: could not convert string to"
        " float: 'twenty minutes' (its grab hash crawler:grab:demo-citynews edited by hand"
    ) in faults[1].getMessage()
    take_all(redis_client)
    redis_client.hdel(keys.grab(every.site), "interval")
    redis_client.delete(keys.grab(cron.site))
    clock.advance(minutes=28)  # 11:05, a time of the cron rule's
    caplog.clear()
    assert sorted(s.site for s in scheduler.tick([every, cron, sound])) == [
        "demo-citynews",
        "demo-huaxia",
        "demo-techdaily",
    ]
    assert [r.getMessage() for r in caplog.records if "works again" in r.getMessage()] == [
        "demo-citynews: its grab works again, after ValueError: could not convert string to float:"
        " 'twenty minutes'",
        "demo-huaxia: its grab works again, after ValueError: could not convert string to float: 'soon'",
    ]


def test_crawler_schedule_once_of_a_site_whose_grab_time_is_no_number_says_no_time_can_be_read(
    redis_server: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """`crawler schedule --once` of one cron rule whose grab hash's `next` was edited to no number: the
    tick says the site's fault (stderr) and grabs nothing; the last line said "no rule has a schedule",
    which the rule has. It now says no next grab recorded can be read."""
    text = (DEMO_RULES / "demo-citynews.yaml").read_text("utf-8")
    (tmp_path / "nightly.yaml").write_text(text.replace("every: 20m", 'cron: "0 3 * * *"'), "utf-8")
    redis_client.hset(Keys(PREFIX).grab("nightly"), "next", "soon")
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env.update(REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(tmp_path))
    command = [sys.executable, "-m", "crawler.cli", "schedule", "--once"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "nothing due: no next grab recorded that can be read (the lines above say why)\n"
    assert "nightly: no grab of it while its grab meets an unexpected error" in done.stderr, done.stderr


def test_the_grabs_to_come_leave_out_a_site_whose_recorded_time_is_no_number(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    """`crawler schedule --once` with nothing due lists the grabs to come (GrabScheduler.upcoming): a grab
    hash whose `next` was edited to no number ended it in a traceback, after its tick had said the site's
    fault and grabbed the others. That site is left out of the list, the others listed."""
    keys = Keys(PREFIX)
    broken, sound = rules["demo-citynews"], rules["demo-techdaily"]
    redis_client.hset(keys.grab(broken.site), "next", "soon")
    redis_client.hset(keys.grab(sound.site), "next", "1796515200.000")
    scheduler = GrabScheduler(redis_client, keys)
    assert scheduler.upcoming([broken, sound]) == [(1796515200.0, "demo-techdaily")]
