"""`crawler temp SITE --stored`: a site's stored articles fetched again and updated in place with the rule
as it is now (a title the rule read wrong for a week, mended), through the temp crawl's own path: the
embedded Redis queue, robots.txt, the dead letters; the local test server's pages."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteServer
from crawlsite import FAST_ARGS, RULE, Site

from crawler.store import open_store
from crawler.store.document import week_of

WRONG_TITLE = "title: {xpath: //h1}"
# The rule's mistake: the title read from the page's navigation bar, "Home" on every page.
MISTAKE = "title: {xpath: \"//div[@class='nav']/a[1]\"}"
BODY = "A story stored three weeks ago, whose page has gone or is out of bounds since. " * 20


def _stored_weeks_ago(site: Site, path: str, weeks: int) -> str:
    """Store an article of ``path`` on the test server first fetched ``weeks`` ago, titled as the rule's
    mistake titled it; its week."""
    fetched = datetime.now(UTC) - timedelta(weeks=weeks)
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        store.upsert(
            {
                "site": site.name,
                "url": site.server.url(path),
                "fetched_at": fetched.isoformat(),
                "title": "Home",
                "body": f"{path} {BODY}",
                # As the feed that led to it gave it: the rule has no `published`.
                "published": "2026-10-30",
            }
        )
    return week_of(fetched)


def test_stored_articles_are_read_again_with_the_mended_rule_and_a_failed_page_leaves_its_article(
    tmp_path: Path, site_server: SiteServer
) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/stored-one", "/a/stored-two")
    rule = site.rules / "news.yaml"
    assert WRONG_TITLE in rule.read_text(encoding="utf-8")
    rule.write_text(rule.read_text(encoding="utf-8").replace(WRONG_TITLE, MISTAKE), encoding="utf-8")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert {path: a["title"] for path, a in site.stored().items()} == {
        "/a/stored-one": "Home",
        "/a/stored-two": "Home",
    }
    # Stored three weeks ago: a page still there, one gone (404), one robots.txt disallows now.
    old_week = _stored_weeks_ago(site, "/a/stored-old", 3)
    _stored_weeks_ago(site, "/status/404", 3)
    _stored_weeks_ago(site, "/private/withdrawn", 3)
    rule.write_text(rule.read_text(encoding="utf-8").replace(MISTAKE, WRONG_TITLE), encoding="utf-8")

    again = site.temp("--stored")

    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    lines = again.stdout.splitlines()
    assert lines[0] == (
        "fetched 3 pages, stored 0 articles, updated 3 stored before,"
        " skipped 1 (disallowed by robots.txt: 1), errors 1 (HTTP 404: 1)"
    ), again.stdout
    assert f"read 5 stored articles of site news again with the rule as it is now ({rule})" in again.stdout
    stored = site.stored()
    assert {path: a["title"] for path, a in stored.items()} == {
        "/a/stored-one": "Article stored-one",
        "/a/stored-two": "Article stored-two",
        "/a/stored-old": "Article stored-old",
        "/status/404": "Home",
        "/private/withdrawn": "Home",
    }, "the pages fetched are read by the mended rule; the others stay as they were stored"
    # Updated in the week of its first fetch, not stored anew in this week's store.
    assert stored["/a/stored-old"]["week"] == old_week
    assert stored["/a/stored-old"]["published"] == "2026-10-30", "a date no rule reads is no date lost"
    assert stored["/status/404"]["body"] == f"/status/404 {BODY}"
    dead = site.dead()
    assert [letter["url"] for letter in dead] == [site_server.url("/status/404")], dead


def test_stored_reads_only_the_window_asked_and_refuses_an_empty_one(
    tmp_path: Path, site_server: SiteServer
) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/window-new")
    old_week = _stored_weeks_ago(site, "/a/window-old", 3)
    _stored_weeks_ago(site, "/a/window-older", 5)

    week = site.temp("--stored", "--week", old_week)
    assert week.returncode == 0, week.stdout + week.stderr[-3000:]
    assert (
        week.stdout.splitlines()[0]
        == "fetched 1 page, stored 0 articles, updated 1 stored before, skipped 0, errors 0"
    )
    assert f"read 1 stored article of site news (first seen in week {old_week}) again" in week.stdout
    assert site.stored()["/a/window-older"]["title"] == "Home"

    empty = site.temp("--stored", "--since", "1d")
    assert empty.returncode == 2, empty.stdout + empty.stderr
    assert empty.stderr.startswith(
        "crawler temp: error: --stored: site news has no stored articles (first seen at or after "
    ), empty.stderr
    assert "nothing to read again" in empty.stderr

    alone = site.temp("--since", "7d")
    assert alone.returncode == 2, alone.stdout + alone.stderr
    assert (
        "--since chooses the stored articles that --stored reads again: give --stored with it" in alone.stderr
    )


def test_stored_and_url_read_both_in_one_job(tmp_path: Path, site_server: SiteServer) -> None:
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/both-listed")
    _stored_weeks_ago(site, "/a/both-stored", 2)

    run = site.temp("--stored", "--url", site_server.url("/a/both-given"))

    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.splitlines()[0] == (
        "fetched 2 pages, stored 1 article, updated 1 stored before, skipped 0, errors 0"
    ), run.stdout
    assert set(site.stored()) == {"/a/both-stored", "/a/both-given"}, "the index page is not read"


def test_a_url_given_of_an_article_stored_weeks_ago_updates_it_in_its_week(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """`--url` of a page stored three weeks ago: its document is updated, in its own week (before, the
    fetch was stored anew in this week's store, and the old document kept its old title)."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/url-listed")
    old_week = _stored_weeks_ago(site, "/a/url-old", 3)

    run = site.temp("--url", site_server.url("/a/url-old"))

    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.splitlines()[0] == (
        "fetched 1 page, stored 0 articles, updated 1 stored before, skipped 0, errors 0"
    ), run.stdout
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        documents = list(store.iter_articles())
    assert [(d["title"], d["week"]) for d in documents] == [("Article url-old", old_week)], documents


def test_stored_articles_off_the_rules_domains_now_are_left_out_and_named(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """A stored article whose host the rule's `domains` no longer hold is not fetched by the rule: when
    it is all there is, the command says so, with the rule's domains and the first such URL (exit 2)."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/off-listed")
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        store.upsert(
            {
                "site": "news",
                "url": "http://moved.test/a/off",
                "fetched_at": datetime.now(UTC).isoformat(),
                "title": "Home",
                "body": BODY,
            }
        )

    run = site.temp("--stored")

    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith(
        "crawler temp: error: --stored: none of the 1 stored article of site news is on its domains now"
        " (127.0.0.1, "
    ), run.stderr
    assert "the first: http://moved.test/a/off): nothing to read again" in run.stderr
    assert not (site.data / "redis").exists(), "Redis started for nothing to queue"


@pytest.mark.parametrize("until", ["2026-11-20T08:00Z", "2026-11-20T07:00Z"])
def test_stored_with_until_not_after_since_is_refused_naming_both(
    tmp_path: Path, until: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--until` at or before `--since` chooses no article: a usage error naming both times (UTC), before
    the store is read or Redis starts."""
    from crawler.cli.main import main

    rules, data = tmp_path / "rules", tmp_path / "data"
    rules.mkdir()
    (rules / "news.yaml").write_text(RULE.format(start="http://127.0.0.1/"), encoding="utf-8")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    code = main(
        [
            *("--rules-dir", str(rules), "--data-dir", str(data)),
            *("temp", "news", "--stored", "--since", "2026-11-20T09:00+01:00", "--until", until),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == (
        f"crawler temp: error: --since 2026-11-20T08:00:00Z is not before --until {until[:-1]}:00Z: no"
        " article can be first seen at or after --since and before --until; give the earlier time to"
        " --since\n"
    )
    assert not data.exists(), "refused before anything started"


class _MachineDatetime(datetime):
    """datetime whose now() reads time.time(): the machine's clock, as a test sets it."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return cls.fromtimestamp(time.time(), tz)


def test_stored_since_an_age_counts_back_from_redis_clock_whatever_the_clock_of_this_machine(
    tmp_path: Path,
    redis_server: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`temp news --stored --since 10m` on a machine whose clock is 25 minutes ahead chose the articles
    first seen since 15 minutes ahead of Redis's clock, which first_seen follows: none, ever. With
    REDIS_URL it counts back from Redis's clock (the window named as the store has none in it)."""
    from crawler.cli import parser as parser_module
    from crawler.cli.main import main
    from crawler.redisio import clock as clock_module

    rules, data = tmp_path / "rules", tmp_path / "data"
    rules.mkdir()
    (rules / "news.yaml").write_text(RULE.format(start="http://127.0.0.1/"), encoding="utf-8")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    monkeypatch.setenv("REDIS_URL", redis_server)
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + 1500)
    monkeypatch.setattr(parser_module, "datetime", _MachineDatetime)
    before = int(real())
    code = main(
        [
            *("--rules-dir", str(rules), "--data-dir", str(data)),
            *("temp", "news", "--stored", "--since", "10m"),
        ]
    )
    after = int(real()) + 1
    err = capsys.readouterr().err
    assert code == 2, err
    found = re.search(r"first seen at or after (\S+Z)", err)
    assert found is not None, err
    since = datetime.fromisoformat(found[1]).timestamp()
    assert before - 600 <= since <= after - 600, (err, before)


def test_the_progress_line_counts_the_stored_pages_as_they_are_queued_then_the_crawls_line_follows(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """The stored articles of a site take seconds to queue when there are thousands: meanwhile the
    progress line says so and counts them, on a terminal (before, nothing was shown until all were
    queued)."""
    site = Site(site_server, tmp_path, name="news")
    site.rule("/a/queued-listed")
    for number in range(3):
        _stored_weeks_ago(site, f"/a/queued-{number}", 2)

    run = site.crawler(
        "temp", site.name, *FAST_ARGS, "--stored", COLUMNS="100", TTY_COMPATIBLE="1", TTY_INTERACTIVE="1"
    )

    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    frames = [
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", frame).strip() for frame in re.split(r"[\r\n]", run.stderr)
    ]
    shown = [frame for frame in frames if frame]
    queueing = [index for index, frame in enumerate(shown) if "queueing" in frame]
    crawling = [index for index, frame in enumerate(shown) if re.search(r"\d+/\d+ pages stored \d+", frame)]
    assert queueing and crawling, run.stderr[-3000:]
    assert re.match(r"temp crawl of news .*queueing 3 pages… +\d+:\d\d:\d\d$", shown[queueing[-1]]), shown
    assert queueing[-1] < crawling[0], shown
    assert re.match(r"temp crawl of news .*3/3 pages stored 0", shown[crawling[-1]]), shown[crawling[-1]]
    piped = site.temp("--stored")
    assert piped.returncode == 0, piped.stdout + piped.stderr[-3000:]
    # Not on a pipe, nor a blank line in its place: the crawl's last progress line ends its stderr.
    lines = piped.stderr.splitlines()
    assert "" not in lines and not any("queueing" in line for line in lines), piped.stderr
    assert lines[-1].startswith("temp crawl of news "), piped.stderr
