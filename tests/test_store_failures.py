"""Nothing lost when the store fails: real crawls (the `crawler` commands, subprocesses) against the local
test server, through the real embedded Redis, when the store's week is locked, damaged, read-only or not a
folder, when the spider fails on a page, when MongoDB is unreachable; and what each leaves behind (dead
letters, counters, spooled articles), read back with the commands a person would use; and the settings a
crawl refuses as it starts (bad store and worker settings, a refused REDIS_URL), a lease shorter than its
renewal interval. Retries and redirects are
tests/test_failures.py; broken rule files and queue entries, lying charsets are tests/test_input_failures.py;
Redis killed, frozen or full and crawls stopped by a signal are tests/test_redis_failures.py."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from urllib.request import urlopen

import pytest
from conftest import SiteServer
from crawlsite import (
    COMMAND_TIMEOUT,
    FAST_ARGS,
    LOCKED,
    RULE,
    Site,
    locked_week,
    unique,
    wait_until,
)

from crawler import settings as project_settings
from crawler.keys import Keys
from crawler.redisio.connection import connect, decoded
from crawler.redisio.embedded import EmbeddedRedis
from crawler.store import fingerprint, open_store
from crawler.store.document import make_document, week_of

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path)


# --- the store fails ------------------------------------------------------------------------------------


def _corrupt_this_weeks_store(data: Path) -> Path:
    path = data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    return path


# A process that takes the write lock of the week's file given, says so, then stops itself (SIGSTOP) inside
# its transaction, as a worker stopped in the middle of a batch's write; continued, it lets the lock go.
_STOPPED_WRITER = """
import os, signal, sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None)
holder.execute("BEGIN IMMEDIATE")
print("held", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
holder.execute("ROLLBACK")
"""


def test_an_article_waiting_for_a_lock_a_stopped_process_holds_is_tried_past_its_tries_and_stored_once_freed(
    site: Site,
) -> None:
    """A week's file whose write lock a stopped process holds (a worker stopped, SIGSTOP, inside a write):
    "database is locked" is an error a wait mends, so the article's request is deferred however many times
    it takes, none counted against STORE_MAX_ATTEMPTS (1 here), never dead-lettered; once the holder is
    continued and lets the lock go, the article is stored. Meanwhile `crawler status` says the store is
    locked, naming the file, the process that holds it, stopped, with `kill -CONT PID`, and since when; the
    lock is forgotten once the article is stored."""
    page = unique("locked")
    site.rule(f"/held/{page}?seconds=0")
    with locked_week(site.data) as release:
        release()
    week = site.data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite"
    with subprocess.Popen(
        [sys.executable, "-c", _STOPPED_WRITER, str(week)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            with site.temp_running(*LOCKED, "-s", "STORE_MAX_ATTEMPTS=1") as crawl:
                # Fetched three times: past its one try (a second failure dead-lettered it before).
                wait_until(
                    lambda: crawl.poll() is not None or _asked(site, page) >= 3,
                    "the page fetched three times",
                )
                [locked] = [
                    reason
                    for listed in site.status()["sites"]
                    for reason in listed["attention"]
                    if reason.startswith("the store ")
                ]
                assert locked.startswith("the store is locked: "), locked
                # The holder named, with what resumes it, and since when the workers find the file locked.
                assert re.search(
                    rf"no article stored since: {re.escape(str(week))} found locked since \S+Z \(\d+s\), by"
                    rf" process {holder.pid}, stopped \(SIGSTOP, Ctrl-Z\) in its transaction: `kill -CONT"
                    rf" {holder.pid}` lets it finish \(or end it\); each article is tried again",
                    locked,
                ), locked
                os.kill(holder.pid, signal.SIGCONT)
                holder.wait(timeout=COMMAND_TIMEOUT)
                out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
        finally:
            if holder.poll() is None:
                holder.kill()
    assert site.dead() == []
    assert crawl.returncode == 0, err[-4000:]
    assert "stored 1 article" in out and "errors 0" in out, out
    assert f"/held/{page}?seconds=0" in site.stored()
    assert "no try used up" in err, err[-4000:]
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        assert connect(redis_server.ensure()).hgetall(Keys("crawler").store_locks) == {}


def _asked(site: Site, page: str) -> int:
    with urlopen(site.server.url(f"/asked/{page}"), timeout=COMMAND_TIMEOUT) as answer:
        return int(answer.read())


def _temp_on_a_full_disk(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    """A temp crawl of ``site`` whose processes may grow no file (``ulimit -f 0``, as on a full disk: SQLite
    cannot make the week's -shm file, an error that waiting may mend), into this week's file made before;
    its Redis started here, where files may grow."""
    with locked_week(site.data) as release:
        release()
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        return site.crawler(
            "temp",
            site.name,
            *FAST_ARGS,
            "-s",
            "TEXT_PROCESSES=0",
            *args,
            files_writable=False,
            REDIS_URL=url,
        )


def test_articles_the_store_refuses_are_never_acknowledged_and_end_as_dead_letters(site: Site) -> None:
    """A store error that waiting may mend (a full disk): each article is tried STORE_MAX_ATTEMPTS times
    (2 here), then dead-lettered saying so."""
    site.rule("/a/one", "/a/two")
    done = _temp_on_a_full_disk(site)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "stored 0 articles" in done.stdout and "errors 2" in done.stdout, done.stdout
    letters = site.dead()
    assert sorted(str(letter["url"]).removeprefix(site.server.origin) for letter in letters) == [
        "/a/one",
        "/a/two",
    ]
    assert all(
        "could not be stored" in letter["reason"] and "(tried 2 times)" in letter["reason"]
        for letter in letters
    )
    assert site.status()["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 2}


def test_an_article_the_store_refused_at_its_only_attempt_says_tried_1_time(site: Site) -> None:
    site.rule("/a/only-once")
    done = _temp_on_a_full_disk(site, "-s", "STORE_MAX_ATTEMPTS=1")
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    (letter,) = site.dead()
    assert letter["reason"].endswith(" (tried 1 time)"), letter


@dataclass(frozen=True)
class DamagedWeek:
    """A temp crawl of two articles into a damaged week's file (``refused``), the dead letters it left
    (``letters``) and the status's attention for the site then (``attention``), then the file moved away,
    the letters requeued (``requeued``) and crawled again (``again``): what was stored and dead-lettered
    after (``stored``, ``left``)."""

    site: Site
    corrupt: Path
    refused: subprocess.CompletedProcess[str]
    letters: list[dict[str, Any]]
    attention: list[str]
    requeued: subprocess.CompletedProcess[str]
    again: subprocess.CompletedProcess[str]
    stored: dict[str, dict[str, Any]]
    left: list[dict[str, Any]]


@pytest.fixture(scope="module")
def damaged_week(site_server: SiteServer, tmp_path_factory: pytest.TempPathFactory) -> DamagedWeek:
    site = Site(site_server, tmp_path_factory.mktemp("damaged"))
    site.rule("/a/damaged-one", "/a/damaged-two")
    corrupt = _corrupt_this_weeks_store(site.data)
    refused = site.temp("-s", "STORE_MAX_ATTEMPTS=20")
    letters = site.dead()
    (status,) = site.status()["sites"]
    corrupt.unlink()
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    again = site.temp()
    return DamagedWeek(
        site, corrupt, refused, letters, status["attention"], requeued, again, site.stored(), site.dead()
    )


def test_articles_a_damaged_week_refuses_are_dead_lettered_at_once_and_stored_once_requeued(
    damaged_week: DamagedWeek,
) -> None:
    """A damaged week's file is no store error that waiting mends: its articles are not tried again
    STORE_MAX_ATTEMPTS times (20 here), each is dead-lettered at once with the store's error and what to do,
    its URL kept; the file mended, `crawler dead requeue` stores them."""
    site, corrupt, done = damaged_week.site, damaged_week.corrupt, damaged_week.refused
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "it is tried again in" not in done.stderr, done.stderr[-4000:]
    assert done.stdout.splitlines()[0].startswith("fetched 3 pages, stored 0 articles,"), done.stdout
    assert done.stdout.splitlines()[0].endswith("errors 2 (store: 2)"), done.stdout
    letters = damaged_week.letters
    assert sorted(str(letter["url"]).removeprefix(site.server.origin) for letter in letters) == [
        "/a/damaged-one",
        "/a/damaged-two",
    ]
    said = (
        f"{corrupt}: file is not a database; the file is damaged: restore it from a backup"
        " (docs/operations.md, 'Backing up a week'), or move it out of the folder to go on without that"
        " week's articles"
    )
    lasting = (
        "; waiting does not mend that, so it was not tried again: mend it, then"
        f" `crawler dead requeue --site {site.name}`"
    )
    for letter in letters:
        reason = " ".join(str(letter["reason"]).split())
        assert reason.startswith("its article could not be stored: "), reason
        assert said in reason and reason.endswith(lasting), reason
    requeued = damaged_week.requeued
    assert requeued.returncode == 0, requeued.stderr
    again = damaged_week.again
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert sorted(damaged_week.stored) == ["/a/damaged-one", "/a/damaged-two"]
    assert damaged_week.left == []


def test_the_status_of_a_damaged_weeks_failures_says_they_were_dead_lettered_at_once_not_tried_again(
    damaged_week: DamagedWeek,
) -> None:
    """The status learns of store failures from the workers' counters: those no wait mends (a damaged
    week's file) are counted apart, so that its line says what became of their articles (dead-lettered at
    once), not that each is tried again."""
    (line,) = [reason for reason in damaged_week.attention if reason.startswith("the store cannot write")]
    assert "each article was dead-lettered at once, as no wait mends its failure" in line, line
    assert "tried again" not in line, line


def test_a_file_where_the_articles_folder_goes_is_named_and_the_summary_says_storing_failed(
    site: Site,
) -> None:
    """The pages are fetched (each twice), only storing fails: the summary says so, not that nothing could
    be fetched; the store's error says what is wrong with the folder."""
    site.rule("/a/one")
    site.data.mkdir(parents=True)
    (site.data / "articles").write_text("a file\n", encoding="utf-8")
    done = site.temp("--url", site.server.url("/a/one"), "--url", site.server.url("/a/two"))
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert done.stdout.startswith("fetched 2 pages, stored 0 articles,"), done.stdout
    assert "errors 2 (store: 2)" in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1] == (
        "the articles of 2 of the 2 pages fetched could not be stored (errors of kind store): see the store's"
        " errors above, and in the dead letters"
    ), done.stdout
    assert "nothing could be fetched" not in done.stdout
    said = f"{site.data / 'articles'} is a file, not a folder: move it away, or give another data folder"
    assert said in done.stderr, done.stderr[-4000:]
    assert all(said in letter["reason"] for letter in site.dead())


@contextmanager
def _read_only_week(site: Site) -> Iterator[Path]:
    """This week's SQLite file of ``site``, holding one article, made immutable (``chattr +i``, which root
    obeys, unlike permissions): SQLite opens it read-only and refuses every write with "attempt to write
    a readonly database", as on a read-only disk. Made mutable again at the end."""
    path = site.data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite"
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        store.upsert_many(
            [
                make_document(
                    {
                        "url": site.server.url("/a/kept"),
                        "site": site.name,
                        "title": "Kept",
                        "body": "A story stored before the disk became read-only. " * 20,
                        "fetched_at": datetime.now(UTC).isoformat(),
                    }
                )
            ]
        )
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no read-only file can be made as root")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@dataclass(frozen=True)
class ReadOnlyWeek:
    """A temp crawl of two articles into a read-only week's file (``refused``, with STORE_MAX_ATTEMPTS=20),
    the dead letters it left (``letters``), then the file writable again, the letters requeued
    (``requeued``) and crawled again (``again``)."""

    site: Site
    week: Path
    refused: subprocess.CompletedProcess[str]
    letters: list[dict[str, Any]]
    requeued: subprocess.CompletedProcess[str]
    again: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def read_only_week(site_server: SiteServer, tmp_path_factory: pytest.TempPathFactory) -> ReadOnlyWeek:
    site = Site(site_server, tmp_path_factory.mktemp("read-only"))
    site.rule("/a/ro-one", "/a/ro-two")
    with _read_only_week(site) as week:
        refused = site.temp("-s", "STORE_MAX_ATTEMPTS=20")
    letters = site.dead()
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    return ReadOnlyWeek(site, week, refused, letters, requeued, site.temp())


def test_pages_whose_articles_a_read_only_store_refuses_are_counted_fetched_once_and_errors_once(
    read_only_week: ReadOnlyWeek,
) -> None:
    """The index page and its 2 article pages are fetched (once: a read-only file is not waited for); the
    store refuses both articles. 3 pages fetched, 2 errors of kind store, and the last line says the
    same figures; requeued and stored, the job counts each page fetched once."""
    done = read_only_week.refused
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    first, last = done.stdout.splitlines()[0], done.stdout.splitlines()[-1]
    assert first.startswith("fetched 3 pages, stored 0 articles,"), done.stdout
    assert first.endswith("errors 2 (store: 2)"), done.stdout
    assert last == (
        "the articles of 2 of the 3 pages fetched could not be stored (errors of kind store): see the store's"
        " errors above, and in the dead letters"
    ), done.stdout
    assert len(read_only_week.letters) == 2
    assert "attempt to write a readonly database" in done.stderr, done.stderr[-4000:]
    # The disk mended, the dead letters requeued: the job's pages are counted fetched once still.
    requeued = read_only_week.requeued
    assert requeued.returncode == 0, requeued.stderr
    again = read_only_week.again
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    said = again.stdout.splitlines()[1]
    assert said.startswith("fetched 3 pages, stored 2 articles,") and said.endswith("errors 0"), again.stdout


SPIDER_BUG = """
import sys
import threading
import time
from crawler.worker.spider import SitesSpider

parse_article = SitesSpider.parse_article

def failing(self, response):  # a bug of the spider's, on one page only
    if response.url.endswith("/a/spider-fails"):
        raise RuntimeError("a bug on this page")
    yield from parse_article(self, response)

SitesSpider.parse_article = failing
from crawler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_page_the_spider_failed_on_is_counted_fetched_once_and_an_error_once(site: Site) -> None:
    """The index page and its 2 article pages are fetched; the spider raises on one of them: 3 pages
    fetched, 1 stored, 1 error of kind spider. Requeued and fetched again (the spider mended), the job
    counts each page fetched once still."""
    site.rule("/a/spider-works", "/a/spider-fails")
    done = subprocess.run(
        [sys.executable, "-c", SPIDER_BUG, "temp", site.name, *FAST_ARGS],
        env=site.env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    first = done.stdout.splitlines()[0]
    assert first.startswith("fetched 3 pages, stored 1 article,"), done.stdout + done.stderr[-4000:]
    assert first.endswith("errors 1 (spider: 1)"), done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == "the spider failed on the page: RuntimeError: a bug on this page"
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    assert requeued.returncode == 0, requeued.stderr
    again = site.temp()
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    said = again.stdout.splitlines()[1]
    assert said.startswith("fetched 3 pages, stored 2 articles,") and said.endswith("errors 0"), again.stdout


def test_a_read_only_store_refusal_says_what_to_do(read_only_week: ReadOnlyWeek) -> None:
    """The refusal of a read-only week's file says how to mend it, as a full disk's does; waiting does not
    mend it, so each article is dead-lettered at once, not tried again (STORE_MAX_ATTEMPTS=20)."""
    site, week, done = read_only_week.site, read_only_week.week, read_only_week.refused
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "it is tried again in" not in done.stderr, done.stderr[-4000:]
    advice = (
        f"{week}: attempt to write a readonly database; make {week.parent} and its files writable by the"
        " crawler's user (a file marked immutable too: chattr -i), or remount its disk read-write; waiting"
        " does not mend that, so it was not tried again: mend it, then `crawler dead requeue --site"
        f" {site.name}`"
    )
    # The first article's line, then the count of the other, said as the crawl ends (not a line each).
    refusals = [line for line in done.stderr.splitlines() if advice in line]
    assert len(refusals) == 2, done.stderr[-4000:]
    assert refusals[0].startswith("crawler temp: warning: Dead-lettered "), refusals
    assert refusals[1].startswith("crawler temp: warning: 1 more request dead-lettered so in the "), refusals
    assert len(read_only_week.letters) == 2
    assert all(advice in letter["reason"] for letter in read_only_week.letters), read_only_week.letters


def test_a_stop_while_the_store_is_locked_waits_for_the_lock_once_not_once_a_write(site: Site) -> None:
    """SIGTERM to a crawl whose week's file another process keeps locked: in the fault hunt, `crawler run`
    took 296 s to stop (until the holder let go, at 300 s), not the 60 s a stop is given: each write
    queued on the store's thread waited the busy timeout (30 s) in turn. Now, once the stop is asked, a
    write that finds the file locked makes the writes after it fail at once, without waiting: their
    requests go back to the queue, deferred as any locked write's (none dead-lettered), and the crawl
    stops, the lock still held. Here four writes a second queue up while the first waits its 10 s:
    before, the stop waited 10 s for each of them, past the command's timeout."""
    links = [f"/a/{unique('stop')}" for _ in range(200)]
    start = site.server.url("/links?to=" + quote(",".join(links), safe="/,:?="))
    site.write_rule(RULE.format(start=start) + "politeness: {delay: 0.25, concurrency: 1}\n")
    with locked_week(site.data), site.temp_running("-s", "STORE_BUSY_TIMEOUT_SECONDS=10") as crawl:
        assert crawl.stderr is not None
        for line in crawl.stderr:
            if "could not be stored" in line:
                break
        crawl.send_signal(signal.SIGTERM)
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 143, out + err[-4000:]
    assert "stopped before its end" in err, err[-4000:]
    assert site.dead() == []


def test_a_store_that_comes_back_stores_every_article_once(site: Site) -> None:
    site.rule(*(f"/a/back{n}" for n in range(6)))
    attempts = ("-s", "STORE_MAX_ATTEMPTS=20")
    with locked_week(site.data) as release, site.temp_running(*attempts, *LOCKED) as crawl:
        assert crawl.stderr is not None
        for line in crawl.stderr:  # the store refuses, the requests are deferred; then it is mended
            if "could not be stored" in line:
                assert "it is tried again in" in line, line
                release()
                break
        out, err = crawl.communicate(timeout=COMMAND_TIMEOUT)
    assert crawl.returncode == 0, err[-4000:]
    assert "stored 6 articles" in out and "errors 0" in out, out
    stored = [path for path in site.stored() if path.startswith("/a/")]
    assert sorted(stored) == sorted(f"/a/back{n}" for n in range(6))
    assert site.dead() == []


def test_an_article_the_store_refuses_is_logged_in_one_line_never_whole(damaged_week: DamagedWeek) -> None:
    """The crawl of `damaged_week`: each article dead-lettered at once (a damaged file is not waited for),
    the refusal logged in one line (the first article's; the other is counted), never with an article's
    body."""
    site, corrupt, refused = damaged_week.site, damaged_week.corrupt, damaged_week.refused
    paths = ("/a/damaged-one", "/a/damaged-two")
    assert refused.returncode == 1, refused.stdout + refused.stderr[-4000:]
    log = refused.stderr.splitlines(keepends=True)
    assert damaged_week.requeued.returncode == 0
    done = damaged_week.again
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 2 articles" in done.stdout and "errors 0" in done.stdout, done.stdout
    stored = damaged_week.stored
    assert sorted(stored) == sorted(paths)
    text = "".join(log)
    for path in paths:
        for paragraph in str(stored[path]["body"]).split("\n\n"):
            assert paragraph[:80] not in text, f"the body of {path} is in the log: {text[-4000:]}"
    # The refusal is one line: the URL, the site, the store, its error and what to do.
    lines = [line for line in log if any(site.server.url(path) in line for path in paths)]
    error = f"{corrupt}: file is not a database; the file is damaged: restore it"
    assert len(lines) == 1, text[-4000:]
    assert (
        "of site 'faults': its article could not be stored:"
        f" SqliteStore({str(site.data / 'articles')!r}) could not write:"
        in lines[0]
        and error in lines[0]
    ), lines


def test_a_damaged_week_is_said_once_not_once_an_article_and_every_article_is_dead_lettered(
    site: Site,
) -> None:
    """A damaged week's file refused each of 1,000 articles with a warning line of its own: one line now,
    then one with the count of the others, each article dead-lettered all the same."""
    paths = [f"/a/flood-{number}" for number in range(8)]
    site.rule(*paths)
    corrupt = _corrupt_this_weeks_store(site.data)
    done = site.temp()
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    log = done.stderr.splitlines()
    refusals = [line for line in log if f"{corrupt}: file is not a database" in line]
    assert len(refusals) == 2, done.stderr[-4000:]
    assert any(site.server.url(path) in refusals[0] for path in paths), refusals
    assert refusals[1].startswith("crawler temp: warning: 7 more requests dead-lettered so in the "), refusals
    letters = site.dead()
    assert sorted(str(letter["url"]).removeprefix(site.server.origin) for letter in letters) == sorted(paths)


@pytest.mark.parametrize(
    ("command", "env", "said"),
    [
        (("temp", "faults"), {"MONGO_URI": "localhost"}, "MONGO_URI is 'localhost': expected mongodb://"),
        (
            ("temp", "faults", "--url", "/a/one"),
            {"MONGO_URI": "mongodb://crawler:s3cret@127.0.0.1:99999/"},
            "MONGO_URI is 'mongodb://***@127.0.0.1:99999/': expected mongodb://HOST[:PORT] or mongodb+srv://HOST"
            " (Port must be an integer between 0 and 65535)",
        ),
        (("temp", "faults", "-s", "DEDUP_WINDOW_DAYS=-1"), {}, "DEDUP_WINDOW_DAYS is -1.0: expected"),
        (("worker", "-s", "DEDUP_MAX_DISTANCE=99"), {}, "DEDUP_MAX_DISTANCE is '99': expected a bit count"),
        (("run",), {"MONGO_URI": "mongodb://127.0.0.1:1/", "MONGO_DB_PREFIX": "my db"}, "MONGO_DB_PREFIX is"),
        (("demo", "--port", "0"), {"MONGO_URI": "localhost"}, "MONGO_URI is 'localhost': expected"),
    ],
)
def test_a_bad_store_setting_is_one_line_and_exit_2_before_redis_starts_or_anything_is_queued(
    site: Site, command: tuple[str, ...], env: dict[str, Any], said: str
) -> None:
    site.rule("/a/one")
    args = [site.server.url(arg) if arg.startswith("/") else arg for arg in command]
    done = site.crawler(*args, **env)
    assert done.returncode == 2, done.stdout + done.stderr[-4000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"crawler {command[0]}: error: {said}"), line
    assert "s3cret" not in done.stderr
    assert not site.data.exists(), "checked before the embedded Redis started (or anything was queued)"


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ("temp", "faults", "-s", "WORKER_SWITCH_INTERVAL=0"),
            "WORKER_SWITCH_INTERVAL is 0.0: expected seconds above 0 (the default is 0.0005)",
        ),
        (
            ("worker", "-s", "WORKER_SWITCH_INTERVAL=-1"),
            "WORKER_SWITCH_INTERVAL is -1.0: expected seconds above 0",
        ),
        (
            ("run", "-s", "WORKER_SWITCH_INTERVAL=0"),
            "WORKER_SWITCH_INTERVAL is 0.0: expected seconds above 0",
        ),
        (
            ("temp", "faults", "-s", "TEXT_PROCESSES=-1"),
            "TEXT_PROCESSES is -1: expected a number of processes",
        ),
        (
            ("temp", "faults", "-s", "STORE_RETRY_SECONDS=-1"),
            "STORE_RETRY_SECONDS is -1.0: expected seconds, 0 or more (the default is 30.0)",
        ),
        (
            ("temp", "faults", "-s", "SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS=-5"),
            "SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS is -5.0: expected seconds, 0 or more (the default is"
            " 120.0)",
        ),
        (
            ("worker", "-s", "STORE_MAX_ATTEMPTS=0"),
            "STORE_MAX_ATTEMPTS is 0: expected a number of tries, 1 or more (a whole number)"
            " (the default is 5)",
        ),
        (
            ("run", "-s", "LEASE_SECONDS=0"),
            "LEASE_SECONDS is 0.0: expected seconds above 0 (the default is 60.0)",
        ),
        (
            ("schedule", "--once", "-s", "SCHEDULE_TICK_SECONDS=0"),
            "SCHEDULE_TICK_SECONDS is 0.0: expected seconds above 0 (the default is 5.0)",
        ),
        (
            ("temp", "faults", "-s", "BAN_MIN_SHARE=1.5"),
            "BAN_MIN_SHARE is 1.5: expected a share from 0 to 1 (the default is 0.5); set BAN_MIN_SHARE to a"
            " value in that range where it is given (-s BAN_MIN_SHARE=VALUE, the environment or"
            " crawler/settings.py), or leave it out to take the default",
        ),
        (
            ("worker", "-s", "BLOOM_ERROR_RATE=1"),
            "BLOOM_ERROR_RATE is 1.0: expected a false-positive rate above 0 and below 1 (the default is"
            " 0.001); set BLOOM_ERROR_RATE to a value in that range",
        ),
        (
            ("schedule", "--once", "-s", "SCHEDULE_ADAPT_MIN_FACTOR=2"),
            "SCHEDULE_ADAPT_MIN_FACTOR is 2.0: expected a factor of every above 0 and 1 at most (the default"
            " is 0.5)",
        ),
    ],
)
def test_a_bad_worker_setting_is_one_line_and_exit_2_before_redis_starts_or_anything_is_queued(
    site: Site, command: tuple[str, ...], said: str
) -> None:
    site.rule("/a/one")
    done = site.crawler(*command)
    assert done.returncode == 2, done.stdout + done.stderr[-4000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"crawler {command[0]}: error: {said}"), line
    assert not site.data.exists(), "checked before the embedded Redis started (or anything was queued)"


@pytest.mark.parametrize(
    ("command", "value", "env"),
    [
        # The check every crawl command runs first (check_worker_settings).
        (("temp", "faults", "-s", "MONGO_TIMEOUT_MS=0"), "0.0", {}),
        # The store's own check, as a command that only reads opens it (store_config).
        (("articles", "stats"), "'0.5'", {"MONGO_URI": "mongodb://127.0.0.1:9/", "MONGO_TIMEOUT_MS": "0.5"}),
    ],
)
def test_a_setting_out_of_its_range_is_worded_alike_by_a_crawls_check_and_the_stores(
    site: Site, command: tuple[str, ...], value: str, env: dict[str, Any]
) -> None:
    """Both checks of a numeric setting say it the same way: the setting, the value given, the range it
    takes, its default and where to set it; a usage error (exit 2), nothing started."""
    site.rule("/a/one")
    done = site.crawler(*command, **env)
    assert done.returncode == 2, done.stdout + done.stderr[-4000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"crawler {command[0]}"), line
    assert line.endswith(
        f": error: MONGO_TIMEOUT_MS is {value}: expected milliseconds, 1 or more (a whole"
        " number) (the default is 5000); set MONGO_TIMEOUT_MS to a value in that range where it is given"
        " (-s MONGO_TIMEOUT_MS=VALUE, the environment or crawler/settings.py), or leave it out to take the"
        " default"
    ), line
    assert not site.data.exists(), "checked before the embedded Redis started (or anything was read)"


# Numeric settings of crawler/settings.py that take any number (priorities).
ANY_NUMBER = {"SCHEDULE_YIELD_BOOST", "SCHEDULE_TEMP_BOOST"}


@pytest.mark.parametrize(
    "name",
    sorted(
        name
        for name, value in vars(project_settings).items()
        if name.isupper() and isinstance(value, int | float) and not isinstance(value, bool)
        if name not in ANY_NUMBER
    ),
)
def test_every_numeric_setting_below_0_is_refused_as_a_crawl_starts_and_its_default_taken(name: str) -> None:
    """Every numeric setting of crawler/settings.py is checked before a crawl starts (the store's by
    store_config, the others by check_worker_settings, which _check_store runs with it): -1 is refused with
    the setting's name, its value and its default; the defaults are all taken."""
    from scrapy.settings import Settings

    from crawler.errors import InputError, StoreSettingError
    from crawler.store import store_config
    from crawler.worker.process import check_worker_settings

    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    mongo = {"MONGO_URI": "mongodb://127.0.0.1:9/"}  # the MongoDB store's settings, read with it alone
    said: list[str] = []
    checks: list[tuple[Callable[[Settings], object], dict[str, str]]] = [
        (check_worker_settings, {}),
        (store_config, {}),
        (store_config, mongo),
    ]
    for check, store in checks:
        check(Settings({**values, **store}))
        try:
            check(Settings({**values, **store, name: -1}))
        except (InputError, StoreSettingError) as exc:
            said.append(str(exc))
    assert said, f"{name}=-1 taken"
    assert all(line.startswith(f"{name} is -1: expected ") for line in said), said


def test_every_numeric_setting_declares_the_range_it_takes_and_its_default_is_in_it() -> None:
    """A numeric setting added to crawler/settings.py says beside it which values it takes (its annotation,
    crawler.bounds.Range), for the check of every crawl command to read."""
    from crawler.bounds import declared_ranges

    ranges = declared_ranges(project_settings)
    numeric = {
        name
        for name, value in vars(project_settings).items()
        if name.isupper() and isinstance(value, int | float) and not isinstance(value, bool)
    }
    assert sorted(numeric - ranges.keys()) == [], "numeric settings with no Range in their annotation"
    assert sorted(ranges.keys() - set(dir(project_settings))) == []
    assert [name for name in numeric if not ranges[name].admits(getattr(project_settings, name))] == []


def test_a_busy_timeout_past_sqlites_limit_is_refused_as_a_crawl_starts_naming_the_limit() -> None:
    """The check every crawl command runs first names why STORE_BUSY_TIMEOUT_SECONDS stops at 2147483, as
    the store's own check does: the user learns it is SQLite's limit, not a whim of the crawler."""
    from scrapy.settings import Settings

    from crawler.errors import InputError
    from crawler.worker.process import check_worker_settings

    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    with pytest.raises(InputError) as raised:
        check_worker_settings(Settings({**values, "STORE_BUSY_TIMEOUT_SECONDS": 3_000_000.0}))
    assert str(raised.value).startswith(
        "STORE_BUSY_TIMEOUT_SECONDS is 3000000.0: expected seconds from 0 to 2147483 (SQLite's limit, about"
        " 24 days) (the default is 30.0); set STORE_BUSY_TIMEOUT_SECONDS to a value in that range"
    ), raised.value


def test_a_setting_given_empty_takes_its_default_in_the_crawls_check_as_in_the_stores() -> None:
    """``-s DEDUP_MAX_DISTANCE=`` (a script's empty variable) is no value: the store takes its default for
    it, so the check every crawl command runs first does not refuse it as "DEDUP_MAX_DISTANCE is :"."""
    from scrapy.settings import Settings

    from crawler.store import store_config
    from crawler.worker.process import check_worker_settings

    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    settings = Settings({**values, "DEDUP_MAX_DISTANCE": ""})
    check_worker_settings(settings)
    assert store_config(settings).dedup.max_distance == fingerprint.DEFAULT_MAX_DISTANCE


def test_every_setting_above_its_highest_value_is_refused_as_a_crawl_starts() -> None:
    """The highest value a setting takes is checked as its lowest is: one past it is refused, naming the
    setting, the value, the range and the default; the highest itself is taken unless the range is open."""
    from scrapy.settings import Settings

    from crawler.bounds import declared_ranges
    from crawler.errors import InputError
    from crawler.worker.process import check_worker_settings

    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    ranges = declared_ranges(project_settings).items()
    bounded = {name: taken for name, taken in ranges if math.isfinite(taken.highest)}
    assert {"BAN_MIN_SHARE", "BLOOM_ERROR_RATE", "DEDUP_MAX_DISTANCE"} <= bounded.keys()
    for name, taken in bounded.items():
        if not taken.below:
            check_worker_settings(Settings({**values, name: taken.highest}))
        past = taken.highest if taken.below else taken.highest + 1
        with pytest.raises(InputError) as raised:
            check_worker_settings(Settings({**values, name: past}))
        default = getattr(project_settings, name)
        known = "" if default is None else f" (the default is {default!r})"
        assert str(raised.value).startswith(f"{name} is {past!r}: expected {taken}{known}; set {name} to ")


@pytest.mark.parametrize(
    ("command", "query", "said"),
    [
        (("temp", "faults"), "", "cannot reach Redis at redis://127.0.0.1:{port}/0 (REDIS_URL): "),
        (("worker",), "", "cannot reach Redis at redis://127.0.0.1:{port}/0 (REDIS_URL): "),
        (("run",), "?timeout=3", "REDIS_URL 'redis://127.0.0.1:{port}/0?timeout=3' has query parameters"),
    ],
)
def test_a_refused_redis_url_is_the_one_line_said_without_the_warning_of_the_store_it_would_use(
    site: Site, command: tuple[str, ...], query: str, said: str
) -> None:
    """REDIS_URL set, MONGO_URI not: a command that crawls warns that its articles go to this machine's
    SQLite files, but only once Redis answered; a REDIS_URL that nothing answers, or that is refused, stops
    it first, and its error is all it says."""
    site.rule("/a/one")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there
    done = site.crawler(*command, REDIS_URL=f"redis://127.0.0.1:{port}/0{query}")
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"crawler {command[0]}: error: {said.format(port=port)}"), line


def test_a_lease_shorter_than_the_renewal_interval_is_renewed_in_time_and_its_slow_page_fetched_once(
    site: Site, tmp_path: Path
) -> None:
    """`-s LEASE_SECONDS=6` with the default LEASE_RENEW_SECONDS (20 s), as docs/operations.md's example
    of `-s` gives it: the worker renews its leases often enough for its lease on a page that takes 10 s to
    answer to hold. Another worker putting back expired leases meanwhile (as every worker does) finds none,
    and the page is fetched once."""
    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import JobCounts

    site.rule(f"/slow?seconds=10&n={unique('renewed')}")
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        other = LeasedQueue(client, keys)
        with (tmp_path / "stderr.log").open("w+", encoding="utf-8") as stderr:
            crawl = subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "temp", site.name, "-s", "LEASE_SECONDS=6"],
                env=site.env(REDIS_URL=url),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            put_back = 0
            try:
                deadline = time.monotonic() + COMMAND_TIMEOUT
                while crawl.poll() is None:
                    assert time.monotonic() < deadline, "gave up waiting for the temp crawl to end"
                    put_back += other.requeue_expired()
                    time.sleep(0.1)
            finally:
                if crawl.poll() is None:
                    crawl.kill()
                crawl.wait()
            stderr.seek(0)
            said = stderr.read()
        assert crawl.returncode == 0, said[-4000:]
        job = decoded(client.keys(keys.job("*"))[0]).removeprefix(keys.job(""))
        counts = JobCounts.read(client, keys, job)
        client.close()
    assert put_back == 0, f"{put_back} leases of the running crawl expired"
    assert (counts.fetched, counts.stored) == (2, 1), counts


def test_a_temp_crawl_with_mongodb_unreachable_says_what_it_spooled_and_articles_says_so_in_one_line(
    site: Site,
) -> None:
    site.rule("/a/one", "/a/two")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"mongodb://127.0.0.1:{probe.getsockname()[1]}/"  # nothing listens there
    done = site.crawler(
        "--data-dir",
        str(site.data),
        "temp",
        site.name,
        "-s",
        "MONGO_TIMEOUT_MS=200",
        MONGO_URI=uri,
        CRAWLER_COMMAND="./run.sh crawler",
    )
    assert done.returncode == 0, done.stderr[-4000:]
    (spool,) = (site.data / "spool").glob("*.jsonl")
    assert len(spool.read_text(encoding="utf-8").splitlines()) == 2, "nothing lost"
    assert "stored 2 articles" in done.stdout, done.stdout
    assert (
        "spooled 2 of them to local disk, MongoDB being unreachable (MONGO_URI):"
        f" 2 articles wait in the spool {spool}, written into MongoDB when it is back"
    ) in done.stdout, done.stdout
    warning = (
        f"crawler temp: warning: MongoDB is unreachable: 2 articles wait in the spool {spool}, written into"
        " MongoDB when it is back (by the next crawl or"
        f" `./run.sh crawler --data-dir {site.data} articles` command on this data folder)"
    )
    assert warning in done.stderr, done.stderr
    assert "holds SQLite article files" not in done.stderr, "no SQLite store was filled before"
    shown = site.crawler("articles", "stats", MONGO_URI=uri)
    assert shown.returncode == 1, shown.stderr
    (line,) = shown.stderr.splitlines()
    port = uri.rsplit(":", 1)[1].strip("/")
    assert line == (
        f"crawler articles stats: error: cannot reach MongoDB at 127.0.0.1:{port} (MONGO_URI) within 5000 ms"
        f" (MONGO_TIMEOUT_MS): 127.0.0.1:{port}: [Errno 111] Connection refused;"
        f" 2 articles wait in the spool {spool}, written into MongoDB when it is back"
    ), line


def test_articles_spooled_while_mongodb_is_unreachable_are_not_counted_new_in_status(site: Site) -> None:
    """Whether a spooled article is new, an update or a repost is known only once MongoDB takes it: the
    status's ``new_24h`` counts the articles the store found new, none of those waiting in the spool."""
    site.rule("/a/spooled", "/a/kept")
    first = site.temp("--url", site.server.url("/a/kept"))
    assert first.returncode == 0, first.stderr[-4000:]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"mongodb://127.0.0.1:{probe.getsockname()[1]}/"  # nothing listens there
    done = site.crawler(
        "temp", site.name, "--url", site.server.url("/a/spooled"), "-s", "MONGO_TIMEOUT_MS=200", MONGO_URI=uri
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 1 article" in done.stdout and "spooled 1 of them" in done.stdout, done.stdout
    # The first crawl stored into this data folder's SQLite files: its pages are seen, and not fetched
    # again into MongoDB.
    moved = (
        f"MONGO_URI is set, and the data folder {site.data} holds SQLite article files"
        f" ({site.data / 'articles'}) from crawls without it: the pages those crawls fetched are seen already"
        " by its Redis and are not"
        " fetched again into MongoDB; to fill MongoDB from the start, give another data folder"
    )
    assert moved in " ".join(done.stderr.split()), done.stderr[-4000:]
    status = site.crawler("status", "--format", "json")
    assert status.returncode == 0, status.stderr[-4000:]
    (shown,) = json.loads(status.stdout)["sites"]
    assert shown["new_24h"] == 1, "the article stored in the local store, not the one spooled"


OPEN_FAILS = """
import sys
import threading
import time

from crawler.config import crawl_settings
from crawler.errors import StoreError
from crawler.worker.pipelines.store import StorePipeline
from crawler.worker.process import run_worker


class Unopenable(StorePipeline):
    async def open_spider(self) -> None:
        raise StoreError("the store cannot be opened: the test says so")


settings = crawl_settings({"ITEM_PIPELINES": {"__main__.Unopenable": 900}, "REDIS_URL": sys.argv[1]})
try:
    run_worker(settings, job="nojob")
except StoreError as exc:
    print(f"raised {type(exc).__name__}: {exc}")
"""


def _run_script(
    script: Path, text: str, redis_server: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``text`` as the Python file ``script`` with the Redis at ``redis_server`` and ``args`` as its
    arguments, in ``env``, else with a data folder beside it and no store or Redis of the environment; its
    outcome."""
    script.write_text(text, encoding="utf-8")
    if env is None:
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
        env["CRAWLER_DATA_DIR"] = str(script.parent / "data")
    return subprocess.run(
        [sys.executable, str(script), redis_server, *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_a_store_that_fails_as_the_crawl_opens_is_raised_as_itself_not_as_an_interruption(
    tmp_path: Path, redis_server: str
) -> None:
    done = _run_script(tmp_path / "open_fails.py", OPEN_FAILS, redis_server)
    assert done.returncode == 0, done.stderr[-4000:]
    said = "raised StoreError: the store cannot be opened: the test says so\n"
    assert done.stdout == said, done.stderr[-4000:]
    assert "Traceback" not in done.stderr, done.stderr[-4000:]


GC_DURING_CRAWL = """
import gc
import sys

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro

from crawler.config import crawl_settings
from crawler.worker.process import run_worker

seen = []


class Look:
    def __init__(self, crawler):
        self.crawler = crawler
        crawler.signals.connect(self.started, signal=signals.engine_started)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def started(self):
        from twisted.internet import reactor  # the crawl's, installed by then

        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        reactor.callLater(0, lambda: deferred_from_coro(self.crawler.stop_async()))


if __name__ == "__main__":  # not in the text processes, which run this file again as they start
    settings = crawl_settings(
        {"EXTENSIONS": {"__main__.Look": 0}, "REDIS_URL": sys.argv[1], "WORKER_GC_THRESHOLD": 1234}
    )
    try:
        run_worker(settings, job="nojob")
    except KeyboardInterrupt:  # the crawl stopped as by Ctrl-C, as Look stops it
        pass
    print(f"during the crawl {seen}, frozen after it: {gc.get_freeze_count()}")
"""


def test_a_crawl_runs_with_its_gc_threshold_and_its_start_up_objects_frozen_until_it_ends(
    tmp_path: Path, redis_server: str
) -> None:
    done = _run_script(tmp_path / "gc_during_crawl.py", GC_DURING_CRAWL, redis_server)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout == "during the crawl [(1234, True)], frozen after it: 0\n", done.stderr[-4000:]


def test_a_worker_leases_no_more_pages_while_the_store_is_locked_and_stores_each_once_it_writes_again(
    site: Site,
) -> None:
    """A week's file locked by another process: the worker stops leasing once two batches of articles wait
    for the store (or its write failed), finishing the pages it holds, and takes one pop at a time only
    when it holds none, so the pages fetched while the lock lasts stay under the bound, not the whole
    site fetched and fetched again; said once as it pauses and once as the store writes again, counted in
    the status, and every article stored once."""
    base, pages, batch, busy = unique("paused"), 200, 4, 2.0
    site.rule(*(f"/held/{base}-{n}?seconds=0" for n in range(pages)))
    settings = ("-s", f"STORE_BATCH_SIZE={batch}", "-s", f"STORE_BUSY_TIMEOUT_SECONDS={busy}")
    said: list[str] = []
    with locked_week(site.data) as release, site.temp_running(*settings, "-s", "LOG_LEVEL=INFO") as crawl:
        began = time.monotonic()
        assert crawl.stderr is not None
        reader = threading.Thread(target=said.extend, args=(crawl.stderr,), daemon=True)
        reader.start()
        wait_until(lambda: any("could not be stored" in line for line in said), "a write failed for the lock")
        time.sleep(2 * busy)  # two more writes that fail for the lock, each a pop at most
        locked_for = time.monotonic() - began
        fetched = sum(_asked(site, f"{base}-{n}") for n in range(pages))
        # Held when the pause began: the articles waiting for the store (2 batches), the pages downloading
        # (CONCURRENT_REQUESTS_PER_DOMAIN, 8) and the pop buffer (SCHEDULER_POP_BATCH, 8); then a pop at
        # most each write that fails, which waits the busy timeout first.
        bound = 2 * batch + 8 + 8 + 8 * (math.ceil(locked_for / busy) + 1)
        assert fetched <= bound < pages, (fetched, bound, "".join(said)[-4000:])
        # The pause counted in the worker's heartbeat, which the status reads.
        wait_until(
            lambda: [worker.get("store_paused") for worker in site.status()["workers"]] == [1],
            "the status to count the worker's pause",
        )
        release()
        crawl.wait(timeout=COMMAND_TIMEOUT)
        reader.join(timeout=COMMAND_TIMEOUT)
        out, _ = crawl.communicate(timeout=COMMAND_TIMEOUT)
    err = "".join(said)
    assert crawl.returncode == 0, err[-4000:]
    assert f"stored {pages} articles" in out and "errors 0" in out, out
    stored = [path for path in site.stored() if path.startswith("/held/")]
    assert len(stored) == pages
    assert site.dead() == []
    paused = [line for line in err.splitlines() if "this worker leases no new page" in line]
    resumed = [line for line in err.splitlines() if "this worker leases new pages again" in line]
    assert len(paused) == 1 and "cannot write: " in paused[0], err[-4000:]
    assert len(resumed) == 1 and "writes again" in resumed[0], err[-4000:]


SPOOLED_CRAWL = """
import json
import sys

from crawler.config import crawl_settings
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.requests import enqueue_job
from crawler.rules.load import load_rules
from crawler.worker.process import run_worker

if __name__ == "__main__":  # not in the text processes, which run this file again as they start
    redis_url, rules, mongo_uri = sys.argv[1:]
    settings = crawl_settings(
        {
            "REDIS_URL": redis_url,
            "CRAWLER_RULES_DIR": rules,
            "MONGO_URI": mongo_uri,
            # Each write waits 2.5 s for the server that is away (past STALL_SECONDS, 2 s): the writes
            # after the first try the spool again (STORE_SPOOL_RETRY_SECONDS 0: at each write).
            "MONGO_TIMEOUT_MS": 2500,
            "STORE_SPOOL_RETRY_SECONDS": 0,
            "STORE_BATCH_SIZE": 8,
        }
    )
    keys = Keys(settings["REDIS_KEY_PREFIX"])
    job = enqueue_job(connect(redis_url), keys, load_rules(rules).rules.values())
    stats = run_worker(settings, job=job)
    print(json.dumps({name: stats.get(name, 0) for name in ("worker/store_paused", "acked/spooled")}))
"""


@pytest.mark.usefixtures("redis_client")  # an empty Redis
def test_a_worker_whose_articles_mongodb_spools_while_away_leases_on_and_never_pauses(
    site: Site, redis_server: str
) -> None:
    """MongoDB away (nothing listens at its address): each write waits for the server, past the time a
    write may take before the store is taken for one that cannot write, and then spools its articles,
    which is a write that worked. The worker leases on meanwhile: no pause counted (worker/store_paused),
    every page fetched once and every article spooled."""
    base, pages = unique("spooled"), 32
    site.rule(*(f"/held/{base}-{n}?seconds=0" for n in range(pages)))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"mongodb://127.0.0.1:{probe.getsockname()[1]}/"  # nothing listens there
    done = _run_script(
        site.root / "spooled_crawl.py", SPOOLED_CRAWL, redis_server, str(site.rules), uri, env=site.env()
    )
    assert done.returncode == 0, done.stderr[-4000:]
    counts = json.loads(done.stdout.splitlines()[-1])
    assert counts == {"worker/store_paused": 0, "acked/spooled": pages}, done.stderr[-4000:]
    assert [_asked(site, f"{base}-{n}") for n in range(pages)] == [1] * pages
    (spool,) = (site.data / "spool").glob("*.jsonl")
    assert len(spool.read_text(encoding="utf-8").splitlines()) == pages


REFUSED_CRAWL = """
import json
import sys

import crawler.store.mongo
from crawler.config import crawl_settings
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.requests import enqueue_job
from crawler.rules.load import load_rules
from crawler.worker.process import run_worker

if __name__ == "__main__":  # not in the text processes, which run this file again as they start
    redis_url, rules, tests, refused = sys.argv[1:]
    sys.path.insert(0, tests)
    from mongofake import FakeClient

    client = FakeClient()
    client.refuse(refused)
    crawler.store.mongo.MongoClient = lambda *args, **kwargs: client
    settings = crawl_settings(
        {
            "REDIS_URL": redis_url,
            "CRAWLER_RULES_DIR": rules,
            "MONGO_URI": "mongodb://fake/",
            "STORE_BATCH_SIZE": 8,
        }
    )
    keys = Keys(settings["REDIS_KEY_PREFIX"])
    job = enqueue_job(connect(redis_url), keys, load_rules(rules).rules.values())
    stats = run_worker(settings, job=job)
    counted = ("worker/store_paused", "store/errors/faults", "store/unavailable/faults")
    print(json.dumps({name: stats.get(name, 0) for name in counted}))
"""


@pytest.mark.usefixtures("redis_client")  # an empty Redis
def test_a_worker_whose_articles_are_each_refused_for_their_own_sake_leases_on_and_dead_letters_each(
    site: Site, redis_server: str
) -> None:
    """A batch whose every article MongoDB refused for its own sake (its collection's validator; a document
    too large) was taken for a store that cannot write: the worker's leasing paused until a write stored
    something, so that it leased one pop at a time, each waiting for its articles' write (200 such pages:
    10.2-12.8 s, 2.5-3.0 s now), said "cannot write" and counted paused in the status while the store
    wrote. The store writes: the worker leases on, each page fetched once, each article dead-lettered
    at once (no wait mends it) and counted."""
    base, pages = unique("refused"), 24
    site.rule(*(f"/held/{base}-{n}?seconds=0" for n in range(pages)))
    done = _run_script(
        site.root / "refused_crawl.py",
        REFUSED_CRAWL,
        redis_server,
        str(site.rules),
        str(REPO / "tests"),
        base,
        env=site.env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    counts = json.loads(done.stdout.splitlines()[-1])
    assert counts == {
        "worker/store_paused": 0,
        "store/errors/faults": pages,
        "store/unavailable/faults": 0,
    }, done.stderr[-4000:]
    assert "cannot write" not in done.stderr, done.stderr[-4000:]
    assert [_asked(site, f"{base}-{n}") for n in range(pages)] == [1] * pages
    listed = site.crawler("dead", "list", "--all", "--format", "json", REDIS_URL=redis_server)
    assert listed.returncode == 0, listed.stderr
    letters = json.loads(listed.stdout)
    assert sorted(str(letter["url"]) for letter in letters) == sorted(
        site.server.url(f"/held/{base}-{n}?seconds=0") for n in range(pages)
    )
    assert all("Document failed validation" in letter["reason"] for letter in letters), letters[0]
    shown = site.crawler("status", "--format", "json", REDIS_URL=redis_server)
    assert shown.returncode == 0, shown.stderr
    (status,) = json.loads(shown.stdout)["sites"]
    assert status["errors_24h"] == pages, status
    assert not any("the store cannot write" in problem for problem in status["attention"]), status


# A worker of a job of the site's rule (its data folder the environment's), 4 articles a batch, printing the
# worker's count of the weeks' files its store made anew as it ends.
WORKER_OF_A_JOB = """
import json
import sys

from crawler.config import crawl_settings
from crawler.keys import Keys
from crawler.redisio.connection import connect
from crawler.requests import enqueue_job
from crawler.rules.load import load_rules
from crawler.worker.process import run_worker

if __name__ == "__main__":  # not in the text processes, which run this file again as they start
    redis_url, rules = sys.argv[1:]
    settings = crawl_settings(
        {"REDIS_URL": redis_url, "CRAWLER_RULES_DIR": rules, "STORE_BATCH_SIZE": 4, "DOWNLOAD_TIMEOUT": 60}
    )
    keys = Keys(settings["REDIS_KEY_PREFIX"])
    job = enqueue_job(connect(redis_url), keys, load_rules(rules).rules.values())
    stats = run_worker(settings, job=job)
    print(json.dumps({"store/week_made_anew": stats.get("store/week_made_anew", 0)}))
"""


@pytest.mark.usefixtures("redis_client")  # an empty Redis
def test_a_weeks_file_emptied_as_a_worker_writes_it_is_said_once_counted_and_made_anew_with_what_follows(
    site: Site, redis_server: str
) -> None:
    """This week's file cut to 0 bytes in place (`> articles_2026w47.sqlite`, a restore onto it that failed)
    while a worker has it open: the worker wrote on into its -wal, said nothing, and its last connection's
    checkpoint copied the -wal into the empty file: the pages written since the file's last checkpoint,
    zeros for all the others, a file "malformed" to every reader, the articles stored after the emptying
    in it. Now the worker's next write finds the file emptied (its size, at the first look-up of the week in
    a batch), says so once, counts it (store/week_made_anew) and makes it anew: the articles stored after
    the emptying are read back; what the file held before is lost, as said."""
    path = site.data / "articles" / f"articles_{week_of(datetime.now(UTC))}.sqlite"
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        store.upsert_many(
            [
                make_document(
                    {
                        "url": f"http://kept.test/before-{n}",
                        "site": "kept",
                        "title": f"Kept {n}",
                        "body": f"Story {n} stored before the week's file was emptied. " * 40,
                        "fetched_at": datetime.now(UTC).isoformat(),
                    }
                )
                for n in range(60)
            ]
        )
    base = unique("emptied")
    first = [f"/a/{base}-{n}" for n in range(8)]
    # Asked first, each answered after 5 s: stored after the file was emptied.
    after = [f"/held/{base}-after-{n}?seconds=5" for n in range(8)]
    site.rule(*first, *after)
    script = site.root / "worker_of_a_job.py"
    script.write_text(WORKER_OF_A_JOB, encoding="utf-8")
    worker = subprocess.Popen(
        [sys.executable, str(script), redis_server, str(site.rules)],
        env=site.env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: set(first) <= site.stored().keys(), "the first articles to be stored")
        assert not set(after) & site.stored().keys(), "an article meant for after the emptying came before"
        os.truncate(path, 0)
        out, err = worker.communicate(timeout=COMMAND_TIMEOUT)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, err[-4000:]
    assert json.loads(out.splitlines()[-1]) == {"store/week_made_anew": 1}, err[-4000:]
    said = [line for line in err.splitlines() if str(path) in line]
    assert len(said) == 1, err[-4000:]
    assert (
        f"the article store {path} was emptied (0 bytes) while this process had it open (a copy or restore"
        " onto it that failed, a redirection `>` onto it): what it held is lost, with the articles its -wal"
        " held; it is made anew, this week's articles stored in it from now on (those written as it was"
        " emptied are written again), the earlier ones gone from it: restore them from a backup of the file"
        " (docs/operations.md, 'Backing up a week'), every crawler on the folder stopped first"
    ) in said[0], said[0]
    assert sorted(site.stored()) == sorted(after)
    assert site.dead() == []
