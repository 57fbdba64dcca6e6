"""The crawls of the failure tests (tests/test_failures.py, tests/test_input_failures.py,
tests/test_store_failures.py, tests/test_redis_failures.py) and of the tests of other features that run
`crawler` against the local test server: a rule of that server in a folder of its own (own data folder,
own embedded Redis), the settings that make failures come round in seconds, and a week of the store whose
write lock is held."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from conftest import SiteServer

from crawler.config import ALLOW_PRIVATE_NETWORKS_ENV
from crawler.store import open_store
from crawler.store.document import make_document, week_of

if TYPE_CHECKING:
    from crawler.worker.spider import SitesSpider

COMMAND_TIMEOUT = 180
# Upper bound of the waits below; never a timing assertion.
WAIT_LIMIT = 60.0
# Short leases and retries, so that failures come round in seconds.
FAST = (
    "LEASE_SECONDS=4",
    "LEASE_RENEW_SECONDS=1",
    "STORE_RETRY_SECONDS=1",
    "STORE_MAX_ATTEMPTS=2",
    "RETRY_TIMES=2",
    "RETRY_BACKOFF_SECONDS=0.2",
    "BACKOFF_FIRST_SECONDS=1",
    "DOWNLOAD_TIMEOUT=10",
)
# FAST as the `-s NAME=VALUE` arguments of a crawler command.
FAST_ARGS = tuple(item for pair in FAST for item in ("-s", pair))
# The busy timeout of the crawls that write into a week locked_week holds: each write fails after it, as
# after the default 30 s, without waiting as long.
LOCKED_BUSY_TIMEOUT = 0.5
LOCKED = ("-s", f"STORE_BUSY_TIMEOUT_SECONDS={LOCKED_BUSY_TIMEOUT}")

RULE = """
domains: [127.0.0.1]
start_urls: ["{start}"]
index:
  links: {{xpath: "//ul[@class='news']"}}
article:
  fields:
    title: {{xpath: //h1}}
    body: {{xpath: "//div[@class='article']/p", join: "\\n\\n"}}
"""


def spider_settings(tmp_path: Path) -> dict[str, Any]:
    """The project's settings for a spider made in the test process: a rule of site ``news`` under
    ``tmp_path``, and counters kept in memory (the Redis collector's flush loop would start a reactor)."""
    from crawler import settings as project_settings

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "news.yaml").write_text(RULE.format(start="http://127.0.0.1/"), encoding="utf-8")
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        CRAWLER_RULES_DIR=str(rules),
        CRAWLER_DATA_DIR=str(tmp_path),
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
    )
    return values


def sites_spider(tmp_path: Path, redis_url: str, **settings: Any) -> SitesSpider:
    """A sites spider made in the test process (not opened), its crawler's spider: with the settings of
    :func:`spider_settings` (the rule of site ``news``, of 127.0.0.1), Redis at ``redis_url``, and
    ``settings``."""
    from scrapy.utils.test import get_crawler

    from crawler.worker.spider import SitesSpider

    values = {**spider_settings(tmp_path), "REDIS_URL": redis_url, **settings}
    crawler = get_crawler(SitesSpider, settings_dict=values)
    spider = SitesSpider.from_crawler(crawler)
    crawler.spider = spider
    return spider


@dataclass
class Site:
    """A rule of the local test server in a folder of its own, with its own data folder (own Redis)."""

    server: SiteServer
    root: Path
    name: str = "faults"

    @property
    def rules(self) -> Path:
        return self.root / "rules"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def rule(self, *links: str, name: str | None = None) -> str:
        """Write the rule of a site whose index page links to ``links``; its site id."""
        site = name or self.name
        start = self.server.url("/links?to=" + quote(",".join(links), safe="/,:?="))
        self.write_rule(RULE.format(start=start), site)
        return site

    def write_rule(self, text: str, name: str | None = None) -> Path:
        """Write ``text`` as the rule file of site ``name`` (this site's when None) in the rules folder;
        its path."""
        path = self.rules / f"{name or self.name}.yaml"
        self.rules.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("REDIS_URL", "MONGO_URI", "CRAWLER_COMMAND")  # ./run.sh test sets CRAWLER_COMMAND
        }
        env.update(CRAWLER_DATA_DIR=str(self.data), CRAWLER_RULES_DIR=str(self.rules))
        env.update({ALLOW_PRIVATE_NETWORKS_ENV: "1", **extra})
        return env

    def crawler(
        self, *args: str, files_writable: bool = True, timeout: float = COMMAND_TIMEOUT, **env: str
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "crawler.cli", *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            preexec_fn=None if files_writable else _cannot_write_files,
        )
        assert "Traceback" not in done.stderr, done.stderr[-4000:]
        return done

    def temp(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return self.crawler("temp", self.name, *FAST_ARGS, *args, timeout=timeout)

    @contextmanager
    def temp_running(self, *args: str) -> Iterator[subprocess.Popen[str]]:
        """`crawler temp` in the background (its stdout and stderr piped); killed if still running."""
        crawl = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "temp", self.name, *FAST_ARGS, *args],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            yield crawl
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.communicate()

    def dead(self) -> list[dict[str, Any]]:
        done = self.crawler("dead", "list", "--format", "json")
        assert done.returncode == 0, done.stderr
        letters: list[dict[str, Any]] = json.loads(done.stdout)
        return letters

    def status(self) -> dict[str, Any]:
        done = self.crawler("status", "--format", "json")
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def stored(self) -> dict[str, dict[str, Any]]:
        """Stored articles by path."""
        with open_store({"CRAWLER_DATA_DIR": str(self.data)}) as store:
            return {
                str(a["url"]).removeprefix(self.server.origin): a
                for a in store.iter_articles(newest_first=False)
            }


def unique(name: str) -> str:
    """An id no other test (or run) of the session server has used: /flaky counts per id."""
    return f"{name}-{os.getpid()}-{time.monotonic_ns()}"


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_LIMIT
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def _cannot_write_files() -> None:
    """In a child process: no file may grow past 0 bytes (EFBIG instead of SIGXFSZ), as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))


@contextmanager
def locked_week(data: Path) -> Iterator[Callable[[], None]]:
    """This week's SQLite file under the data folder ``data``, holding one article of another site, with
    its write lock held (a write transaction left open, as a sqlite3 shell leaves it): each write of a crawl
    waits the busy timeout (LOCKED sets it to LOCKED_BUSY_TIMEOUT), then fails with "database is locked", an
    error that waiting mends. The function yielded lets the lock go (so does the end)."""
    with open_store({"CRAWLER_DATA_DIR": str(data)}) as store:
        store.upsert_many(
            [
                make_document(
                    {
                        "url": "http://kept.test/before-the-lock",
                        "site": "kept",
                        "title": "Kept",
                        "body": "A story stored before the week's file was locked. " * 20,
                        "fetched_at": datetime.now(UTC).isoformat(),
                    }
                )
            ]
        )
    holder = sqlite3.connect(data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite")
    holder.isolation_level = None
    holder.execute("BEGIN IMMEDIATE")

    def release() -> None:
        if holder.in_transaction:
            holder.execute("ROLLBACK")

    try:
        yield release
    finally:
        release()
        holder.close()
