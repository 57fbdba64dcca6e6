"""Regular grabs on a controllable clock, against the real embedded Redis: one seeding per period, with two
schedulers, across restarts; cron expressions; a seeding cut short; the one active scheduler."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from crawler.grabs import GrabScheduler, next_slot
from crawler.queue import Keys
from crawler.rules import Rule, load_rules

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
    return dict(load_rules(REPO / "rules").rules)


def queued_index_pages(server: redis.Redis) -> int:
    return int(server.zcard(Keys(PREFIX).queue))


def job_kind(server: redis.Redis, job: str) -> str:
    value = server.hget(Keys(PREFIX).job(job), "kind")
    assert isinstance(value, bytes)
    return value.decode()


def test_next_slot_of_every_and_cron(rules: dict[str, Rule]) -> None:
    rule = rules["demo-citynews"]
    assert rule.every == timedelta(minutes=20)
    moment = datetime(2026, 11, 22, 10, 7, 30, tzinfo=UTC).timestamp()
    assert next_slot(rule, moment) == datetime(2026, 11, 22, 10, 20, tzinfo=UTC).timestamp()
    on_the_slot = datetime(2026, 11, 22, 10, 20, tzinfo=UTC).timestamp()
    assert next_slot(rule, on_the_slot) == datetime(2026, 11, 22, 10, 40, tzinfo=UTC).timestamp()
    cron = dataclasses.replace(rule, every=None, cron="30 6,18 * * 1-5")  # 06:30 and 18:30 on weekdays
    friday_evening = datetime(2026, 11, 20, 19, 0, tzinfo=UTC).timestamp()
    assert next_slot(cron, friday_evening) == datetime(2026, 11, 23, 6, 30, tzinfo=UTC).timestamp()
    neither = dataclasses.replace(rule, every=None, cron=None)
    assert (
        next_slot(neither, moment, timedelta(hours=2)) == datetime(2026, 11, 22, 12, tzinfo=UTC).timestamp()
    )


def test_each_period_is_seeded_once_by_two_schedulers(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    first = GrabScheduler(redis_client, PREFIX, clock=clock)
    second = GrabScheduler(redis_client, PREFIX, clock=clock)
    citynews = [rules["demo-citynews"]]
    seeded = first.tick(citynews) + second.tick(citynews)
    assert [s.site for s in seeded] == ["demo-citynews"], "the first grab of a new rule is due at once"
    assert job_kind(redis_client, seeded[0].job) == "grab"
    assert queued_index_pages(redis_client) == len(rules["demo-citynews"].start_urls)
    periods = 1
    for _ in range(12):  # 12 ticks a minute apart: 10:08 .. 10:19, still in the first period
        clock.advance(minutes=1)
        assert first.tick(citynews) + second.tick(citynews) == []
    for _ in range(3 * 20):  # the next hour, minute by minute, both schedulers ticking
        clock.advance(minutes=1)
        periods += len(first.tick(citynews)) + len(second.tick(citynews))
    assert periods == 4, "10:07, 10:20, 10:40, 11:00: one grab per period"
    state = redis_client.hgetall(first.state_key("demo-citynews"))
    assert int(state[b"grabs"]) == 4
    assert float(state[b"next"]) == datetime(2026, 11, 22, 11, 20, tzinfo=UTC).timestamp()


def test_a_restarted_scheduler_neither_seeds_twice_nor_skips(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    citynews = [rules["demo-citynews"]]
    assert len(GrabScheduler(redis_client, PREFIX, clock=clock).tick(citynews)) == 1
    clock.advance(minutes=5)
    restarted = GrabScheduler(redis_client, PREFIX, clock=clock)
    assert restarted.tick(citynews) == [], "same period: nothing"
    clock.advance(hours=3)  # stopped for three hours: the current period is seeded once, at the restart
    again = GrabScheduler(redis_client, PREFIX, clock=clock)
    assert len(again.tick(citynews)) == 1
    assert again.tick(citynews) == []


def test_a_seeding_cut_short_is_finished_by_the_next_tick(
    redis_client: redis.Redis, rules: dict[str, Rule]
) -> None:
    clock = Clock(datetime(2026, 11, 22, 10, 7, tzinfo=UTC))
    scheduler = GrabScheduler(redis_client, PREFIX, clock=clock)
    key = scheduler.state_key("demo-citynews")
    # A scheduler claimed the period and died before queueing its job.
    redis_client.hset(
        key, mapping={"next": str(clock.now + 600), "last": str(clock.now), "seeding": "abc123"}
    )
    assert scheduler.tick([rules["demo-citynews"]]) == []
    assert redis_client.hget(key, "job") == b"abc123"
    assert redis_client.hget(key, "seeding") is None
    assert queued_index_pages(redis_client) == len(rules["demo-citynews"].start_urls)
    assert job_kind(redis_client, "abc123") == "grab"


def test_one_scheduler_is_active_at_a_time(redis_client: redis.Redis) -> None:
    first = GrabScheduler(redis_client, PREFIX)
    second = GrabScheduler(redis_client, PREFIX)
    assert first.lead(30)
    assert not second.lead(30)
    assert first.lead(30), "the leader renews its lock"
    first.resign()
    assert second.lead(30)
    assert not first.lead(30)
    redis_client.delete(second.leader_key)  # the lock expired: its holder stopped without resigning
    assert first.lead(30)


def test_crawler_schedule_once_queues_the_due_grabs(redis_server: str, redis_client: redis.Redis) -> None:
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env.update(REDIS_URL=redis_server, CRAWLER_RULES_DIR=str(REPO / "rules"))
    command = [sys.executable, "-m", "crawler.cli", "schedule", "--once"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert first.returncode == 0, first.stderr[-2000:]
    sites = sorted(
        line.split()[4] for line in first.stdout.splitlines() if line.startswith("queued the grab of")
    )
    assert sites == ["demo-citynews", "demo-huaxia", "demo-techdaily"]
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (second.returncode, second.stdout) == (0, ""), "not due again within the period"
