"""`crawler sites pause|resume SITE` against the real embedded Redis: what each says, and what a pause
refuses (a site with no rule file, a temp crawl of a paused site). The pause's effect on the queue, the
scheduler and a running service: tests/test_queue.py, test_grabs.py and test_service.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from crawler.demo import DEMO_RULES
from crawler.keys import Keys

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


def crawler(folder: Path, redis_url: str, *args: str) -> Ran:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("CRAWLER_", "MONGO_"))}
    env["REDIS_URL"] = redis_url
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
    redis_client.hset(Keys("crawler").grab(SITE), "next", f"{time.time() - 60:.3f}")
    resumed = crawler(folder, redis_server, "sites", "resume", SITE)
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout == (
        f"resumed {SITE}: workers take its queued requests again (0 now); its regular grab, due since the"
        " pause, is queued at the scheduler's next tick\n"
    )
    assert "queued the grab of demo-citynews" in crawler(folder, redis_server, "schedule", "--once").stdout
    not_paused = crawler(folder, redis_server, "sites", "resume", SITE)
    assert not_paused.code == 0 and not_paused.stdout == f"{SITE} is not paused: nothing to resume\n"
