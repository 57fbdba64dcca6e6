"""A worker reads its rules folder again after an edit: only the files changed since are parsed (a folder of
many rules was parsed whole, on the crawl thread, at each edit of one), with the same rules, errors and log
lines as a read of the whole folder; and the download slots it made of a site take the edited rule's
concurrency."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from crawlsite import RULE, sites_spider
from scrapy import Request
from scrapy.core.downloader import Slot

from crawler.commandline import suggest
from crawler.discover.frontier import Entry, Frontier, slot_of
from crawler.redisio.connection import hash_of
from crawler.rules import RuleFiles, load_rules, rules_stamp
from crawler.rules import load as rules_load
from crawler.rules.model import BEST_FIRST
from crawler.schedule.grabs import rule_loader
from crawler.worker import spider as spider_module
from crawler.worker.spider import SitesSpider

SITES = 40
# A rule file's mtime set this far back: older than the window where a file may change unseen (RACY_NS).
LONG_AGO = 3600


def rule_text(site: str, concurrency: int = 2) -> str:
    host = f"{site}.test"
    return (
        RULE.format(start=f"http://{host}/").replace("[127.0.0.1]", f"[{host}]")
        + f"politeness: {{delay: 0, concurrency: {concurrency}}}\n"
    )


def write(path: Path, text: str) -> None:
    """``text`` written to ``path``, dated an hour ago."""
    path.write_text(text, encoding="utf-8")
    past = time.time() - LONG_AGO
    os.utime(path, (past, past))


def many_rules(rules: Path) -> None:
    for number in range(SITES):
        write(rules / f"site{number:02d}.yaml", rule_text(f"site{number:02d}"))


@pytest.fixture
def nanosecond_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule file changed seconds ago is kept as one changed long ago: as on a file system that dates
    files to the nanosecond (the files of these tests change within a second)."""
    monkeypatch.setattr(rules_load, "RACY_NS", 0)


def counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the rule files parsed from now on (load_rule's calls)."""
    parsed: list[str] = []
    parse = rules_load.load_rule

    def spy(path: str | Path, **options: Any) -> Any:
        parsed.append(Path(path).name)
        return parse(path, **options)

    monkeypatch.setattr(rules_load, "load_rule", spy)
    return parsed


# No middleware, pipeline or extension: some start looping calls, which install a reactor in the test process.
BARE_ENGINE: dict[str, dict[str, int]] = {
    name: {}
    for name in (
        "DOWNLOADER_MIDDLEWARES",
        "DOWNLOADER_MIDDLEWARES_BASE",
        "SPIDER_MIDDLEWARES",
        "SPIDER_MIDDLEWARES_BASE",
        "ITEM_PIPELINES",
        "EXTENSIONS",
        "EXTENSIONS_BASE",
    )
}


def reloading_spider(tmp_path: Path, redis_url: str) -> SitesSpider:
    """A sites spider of :func:`many_rules` (and ``news``) with Scrapy's engine and downloader (not
    started), that looks at the rules folder at every request."""
    spider = sites_spider(tmp_path, redis_url, RULES_RELOAD_SECONDS=0.01, **BARE_ENGINE)
    many_rules(tmp_path / "rules")
    spider.crawler.engine = spider.crawler._create_engine()
    spider.slots_opened()
    assert spider.rule_of("site00") is not None
    return spider


def looked_again(spider: SitesSpider, site: str) -> None:
    time.sleep(0.05)
    spider.rule_of(site)


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_reload_after_an_edit_of_one_of_many_rule_files_parses_that_file_alone(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spider = reloading_spider(tmp_path, redis_server)
    before = dict(spider.rules)
    parsed = counted_parses(monkeypatch)
    (tmp_path / "rules" / "site07.yaml").write_text(rule_text("site07", concurrency=1), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        looked_again(spider, "site07")
    assert parsed == ["site07.yaml"]
    assert spider.rules["site07"].concurrency == 1
    assert all(spider.rules[site] is rule for site, rule in before.items() if site != "site07")
    assert "Rules changed while running: site07" in caplog.text


@pytest.mark.usefixtures("nanosecond_dates")
def test_an_edit_that_breaks_one_of_many_rule_files_keeps_its_rule_and_names_it(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spider = reloading_spider(tmp_path, redis_server)
    kept = spider.rules["site03"]
    parsed = counted_parses(monkeypatch)
    (tmp_path / "rules" / "site03.yaml").write_text(
        rule_text("site03").replace("article:", "artcle:"), encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING):
        looked_again(spider, "site03")
    assert parsed == ["site03.yaml"]
    assert spider.rules["site03"] is kept
    assert len(spider.rules) == SITES + 1, "the other sites are unaffected"
    said = [record.getMessage() for record in caplog.records if "have errors" in record.getMessage()]
    assert len(said) == 1, said
    # The file, the key and the fix: not only the site, and a command to run to learn what is wrong.
    assert said[0].startswith(
        "Rule files changed while running have errors, their sites keep the rule read before: site03"
        f" ({tmp_path / 'rules' / 'site03.yaml'}: artcle: "
    ), said
    # suggest(): the command as this process was given its folders (another test's CLI run may have set them).
    fix = f"mend the files (`{suggest('rules check')}`): each is read again as it is saved"
    assert said[0].endswith(f"); {fix}"), said
    parsed.clear()
    looked_again(spider, "site04")
    looked_again(spider, "site05")
    assert parsed == [], "an unchanged broken file is not parsed again"
    assert spider.rules["site03"] is kept


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_removed_rule_file_takes_its_rule_away_and_an_added_one_is_read_alone(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spider = reloading_spider(tmp_path, redis_server)
    parsed = counted_parses(monkeypatch)
    (tmp_path / "rules" / "site11.yaml").unlink()
    (tmp_path / "rules" / "later.yaml").write_text(rule_text("later"), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        looked_again(spider, "later")
    assert parsed == ["later.yaml"]
    assert "later" in spider.rules
    assert "site11" not in spider.rules
    assert "Rules removed while running: site11" in caplog.text


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_rule_file_is_parsed_again_when_a_file_it_reads_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's session (or proxies, or example) files are read with it: an edit of one is an edit of the
    rule, though its own file did not change."""
    rules = tmp_path / "rules"
    rules.mkdir()
    many_rules(rules)
    sessions = rules / "sessions"
    sessions.mkdir()
    write(sessions / "bob.yaml", "cookies: {sid: bob}\n")
    write(rules / "news.yaml", rule_text("news") + "access:\n  sessions: [sessions/bob.yaml]\n")
    files = RuleFiles()
    load_rules(rules, files=files)
    parsed = counted_parses(monkeypatch)
    (sessions / "bob.yaml").write_text("cookies: {sid: alice}\n", encoding="utf-8")
    again = load_rules(rules, files=files)
    assert parsed == ["news.yaml"]
    assert again["news"].sessions[0].cookies == {"sid": "alice"}
    (sessions / "bob.yaml").unlink()
    broken = load_rules(rules, files=files)
    assert parsed == ["news.yaml", "news.yaml"]
    assert [error.file for error in broken.errors] == [str(rules / "news.yaml")]


@pytest.mark.usefixtures("nanosecond_dates")
@pytest.mark.parametrize(
    "change",
    [
        lambda rules: (rules / "site05.yaml").write_text(rule_text("site05", 3), encoding="utf-8"),
        lambda rules: (rules / "site05.yaml").write_text("index: [", encoding="utf-8"),
        lambda rules: (rules / "site05.yaml").unlink(),
        lambda rules: (rules / "site05.yaml").rename(rules / "site05.yml"),
        lambda rules: (rules / "new.yaml").write_text(rule_text("new"), encoding="utf-8"),
    ],
    ids=["edited", "broken", "removed", "renamed", "added"],
)
def test_a_folder_read_again_gives_what_a_whole_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], object]
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    many_rules(rules)
    write(rules / "bad.yaml", "article: {}\n")
    files = RuleFiles()
    load_rules(rules, files=files)
    counted_parses(monkeypatch)
    change(rules)
    again, whole = load_rules(rules, files=files), load_rules(rules)
    assert {site: rule.concurrency for site, rule in again.rules.items()} == {
        site: rule.concurrency for site, rule in whole.rules.items()
    }
    assert list(map(str, again.errors)) == list(map(str, whole.errors))
    assert dict(again.broken) == dict(whole.broken)


def test_a_rule_file_written_just_now_is_parsed_again_when_its_bytes_change_with_its_stamp_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written within the file system's time resolution of its read may be written again with the
    same size and dates: its rule is kept for the next read with its bytes, and parsed again when they
    differ, though its stamp is the same."""
    rules = tmp_path / "rules"
    rules.mkdir()
    fresh = rules / "fresh.yaml"
    fresh.write_text(rule_text("fresh", concurrency=2), encoding="utf-8")
    files = RuleFiles()
    first = load_rules(rules, files=files)["fresh"]
    parsed = counted_parses(monkeypatch)
    assert load_rules(rules, files=files)["fresh"] is first
    assert parsed == []
    stamp = rules_load._file_stamp(fresh)
    same_stamp = rules_load._file_stamp
    monkeypatch.setattr(rules_load, "_file_stamp", lambda path: stamp if path == fresh else same_stamp(path))
    fresh.write_text(rule_text("fresh", concurrency=3), encoding="utf-8")  # within the same clock tick
    assert load_rules(rules, files=files)["fresh"].concurrency == 3
    assert parsed == ["fresh.yaml"]


@pytest.mark.usefixtures("nanosecond_dates")
def test_the_download_slots_of_a_site_take_the_concurrency_of_its_edited_rule(
    redis_server: str, tmp_path: Path
) -> None:
    """Scrapy reads a slot's settings once, as it makes the slot: a worker whose slot of a site (or of a
    host of its discover crawl) was made kept the concurrency of the rule as it was then."""
    spider = reloading_spider(tmp_path, redis_server)
    assert spider.crawler.engine is not None
    downloader = spider.crawler.engine.downloader

    def slot(key: str) -> Slot:
        made: Slot = downloader._get_slot(Request("http://site07.test/", meta={"download_slot": key}))[1]
        return made

    async def edited() -> None:  # the downloader's slots are collected by a looping call of the loop
        made = {key: slot(key) for key in ("site07", "site07@other.test", "site08")}
        (tmp_path / "rules" / "site07.yaml").write_text(rule_text("site07", concurrency=5), encoding="utf-8")
        looked_again(spider, "site07")
        assert {key: made[key].concurrency for key in made} == {
            "site07": 5,
            "site07@other.test": 5,
            "site08": 2,
        }
        assert made["site07"].delay == 0.0, "the rule's delay is the shared queue's"
        assert slot("site07@new.test").concurrency == 5
        downloader._stop_slot_gc()

    asyncio.run(edited())


@pytest.mark.usefixtures("nanosecond_dates")
def test_the_schedulers_tick_parses_only_the_rule_files_changed_since_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`crawler schedule` reads the rules folder at every tick (SCHEDULE_TICK_SECONDS, 5 s): it parsed
    every file each time, 1.8 CPU s a tick for 1,000 rules."""
    rules = tmp_path / "rules"
    rules.mkdir()
    many_rules(rules)
    write(rules / "bad.yaml", "article: {}\n")
    load, _ = rule_loader(rules)
    parsed = counted_parses(monkeypatch)
    with caplog.at_level(logging.ERROR):
        assert len(load()) == SITES
    assert len(parsed) == SITES + 1
    parsed.clear()
    (rules / "site09.yaml").write_text(rule_text("site09", concurrency=3), encoding="utf-8")
    with caplog.at_level(logging.ERROR):
        ticked = {rule.site: rule.concurrency for rule in load()}
    assert parsed == ["site09.yaml"]
    assert ticked["site09"] == 3
    assert caplog.text.count("rule error, site not scheduled") == len(load_rules(rules).errors)


def test_the_rules_folders_stamp_changes_when_a_file_is_written_in_place_with_its_size_and_date_kept(
    tmp_path: Path,
) -> None:
    """A worker reads the rules folder again only when its stamp (rules_stamp) changed; the stamp held each
    file's name, modification time and size: a rule rewritten in place with its size and date kept
    (`cp -p`, `rsync --inplace -t`, `touch -r`: concurrency 2 -> 3) left it as it was, so a running worker
    kept the rule read before for good, while the scheduler (which reads every tick) took the edit."""
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "site00.yaml"
    write(rule, rule_text("site00", concurrency=2))
    dated = rule.stat().st_mtime_ns
    before = rules_stamp(rules)
    time.sleep(0.05)  # past the file system's clock tick: the rewrite's change time is another
    with rule.open("r+", encoding="utf-8") as handle:
        handle.write(rule_text("site00", concurrency=3))
    os.utime(rule, ns=(dated, dated))
    assert rule.stat().st_size == len(rule_text("site00", concurrency=2))
    assert rules_stamp(rules) != before
    assert load_rules(rules).rules["site00"].concurrency == 3


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_worker_takes_a_session_file_of_a_subfolder_rewritten_in_place(
    redis_server: str, tmp_path: Path
) -> None:
    """A worker reads the rules folder again when its stamp (rules_stamp: the folder's own entries)
    changed; a session file in a subfolder (access.sessions: [sessions/bob.yaml], as docs/rules.md shows
    it) rewritten in place (a script refreshing its cookies) changes no entry of the folder: the worker
    kept the session read before for good, while the scheduler took the edit."""
    spider = reloading_spider(tmp_path, redis_server)
    rules = tmp_path / "rules"
    (rules / "sessions").mkdir()
    write(rules / "sessions" / "bob.yaml", "cookies: {sid: old}\n")
    write(rules / "news.yaml", rule_text("news") + "access:\n  sessions: [sessions/bob.yaml]\n")
    assert spider.rule_of("news") is not None
    assert spider.rules["news"].sessions[0].cookies == {"sid": "old"}
    with (rules / "sessions" / "bob.yaml").open("r+", encoding="utf-8") as handle:
        handle.write("cookies: {sid: new}\n")
    looked_again(spider, "news")
    assert spider.rules["news"].sessions[0].cookies == {"sid": "new"}


def test_a_worker_reads_again_a_rule_file_it_read_too_soon_after_its_change_though_its_stamp_is_the_same(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule file written again within the file system's time resolution (1 s on ext3, 2 s on FAT) with
    the same size leaves the folder's stamp as it was: a worker that read it between the two writes kept
    the first for good (the scheduler, which reads every tick, parses such a file again)."""
    spider = reloading_spider(tmp_path, redis_server)
    rule = tmp_path / "rules" / "fresh.yaml"
    rule.write_text(rule_text("fresh", concurrency=2), encoding="utf-8")
    assert spider.rule_of("fresh") is not None
    seen = rules_stamp(tmp_path / "rules")
    monkeypatch.setattr(spider_module, "rules_stamp", lambda folder: seen)  # the second write within the tick
    rule.write_text(rule_text("fresh", concurrency=3), encoding="utf-8")
    looked_again(spider, "fresh")
    assert spider.rules["fresh"].concurrency == 3
    assert spider.crawler.engine is not None
    assert spider.crawler.engine.downloader.per_slot_settings["fresh"]["concurrency"] == 3


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_rule_file_dated_in_the_future_is_read_once_not_as_changed_at_every_look(
    redis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A rule file whose modification time is ahead of the clock (copied with `rsync -t` or unpacked from a
    machine whose clock is ahead, `touch -d tomorrow`) was never kept as read: its time was within RACY_NS
    of every look (negative), so the worker parsed it at every look and, taking each new parse for an
    edit, logged 'Rules changed while running' every RULES_RELOAD_SECONDS until that time came. A write
    after the read would date the file now, not then: its stamp would differ, so it is kept as any other."""
    spider = reloading_spider(tmp_path, redis_server)
    rule = tmp_path / "rules" / "ahead.yaml"
    write(rule, rule_text("ahead"))
    ahead = time.time() + LONG_AGO
    os.utime(rule, (ahead, ahead))
    looked_again(spider, "ahead")
    held = spider.rules["ahead"]
    parsed = counted_parses(monkeypatch)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            looked_again(spider, "ahead")
    assert parsed == []
    assert spider.rules["ahead"] is held
    assert "Rules changed while running" not in caplog.text


def test_a_rule_file_written_just_before_a_worker_reads_it_is_no_change_of_its_rule(
    redis_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`crawler rules new loc URL`, then `crawler temp loc` at once: the rule file, written within RACY_NS
    of the worker's read, was parsed again at each look until RACY_NS had passed, each parse another rule,
    which the worker took for an edit: 'Rules changed while running: loc', twice, in the temp crawl of a
    rule no one had touched. A file read again with the bytes it was parsed from gives the rule kept."""
    spider = reloading_spider(tmp_path, redis_server)
    (tmp_path / "rules" / "fresh.yaml").write_text(rule_text("fresh"), encoding="utf-8")
    assert spider.rule_of("fresh") is not None
    held = spider.rules["fresh"]
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            looked_again(spider, "fresh")
    assert spider.rules["fresh"] is held
    assert "Rules changed while running" not in caplog.text


def test_the_scheduler_says_a_broken_rule_mended_is_read_again_and_a_new_break_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`crawler schedule` logs an ERROR when a rule breaks (its site not scheduled); when the file is mended
    it says so (INFO: read again, its site's grabs go on), once, and a later break is an ERROR again."""
    rules = tmp_path / "rules"
    rules.mkdir()
    write(rules / "good.yaml", rule_text("good"))
    write(rules / "news.yaml", "article: {}\n")
    load, _ = rule_loader(rules)
    with caplog.at_level(logging.INFO, logger="crawler.schedule.grabs"):
        assert [rule.site for rule in load()] == ["good"]
        broken = [record for record in caplog.records if record.levelno == logging.ERROR]
        assert broken and all("news.yaml" in record.getMessage() for record in broken), caplog.text
        caplog.clear()
        (rules / "news.yaml").write_text(rule_text("news"), encoding="utf-8")
        assert sorted(rule.site for rule in load()) == ["good", "news"]
        assert sorted(rule.site for rule in load()) == ["good", "news"]
        said = [record for record in caplog.records if "news" in record.getMessage()]
        assert [(record.levelno, record.getMessage()) for record in said] == [
            (
                logging.INFO,
                f"rule of site news read again ({rules / 'news.yaml'}): its error is mended, its grabs go on",
            )
        ], caplog.text
        caplog.clear()
        (rules / "news.yaml").write_text("article: {}\n", encoding="utf-8")
        assert [rule.site for rule in load()] == ["good"]
        broken = [record for record in caplog.records if record.levelno == logging.ERROR]
        assert broken and all("news.yaml" in record.getMessage() for record in broken), caplog.text


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_rule_edited_to_obey_robots_false_drops_its_sites_crawl_delay_in_a_running_worker(
    redis_server: str, tmp_path: Path
) -> None:
    """A worker wrote a site's politeness again only when its rule's delay or concurrency changed: a rule
    edited to ``obey_robots: false`` left the crawl-delay its robots.txt asked for before, which no
    robots.txt read lowers any more."""
    spider = reloading_spider(tmp_path, redis_server)
    spider.queue.set_crawl_delay("site07", 5.0, "127.0.0.1:8080")
    polite = spider.queue.keys.polite("site07")
    assert float(spider.queue.server.hget(polite, "crawl_delay") or 0) == 5.0
    assert spider.queue.server.hlen(spider.queue.keys.crawl_delays("site07")) == 1
    (tmp_path / "rules" / "site07.yaml").write_text(
        rule_text("site07").replace("politeness: {", "politeness: {obey_robots: false, "), encoding="utf-8"
    )
    looked_again(spider, "site07")
    assert spider.rules["site07"].obey_robots is False
    assert float(spider.queue.server.hget(polite, "crawl_delay") or 0) == 0.0
    # The host's crawl-delay goes too: it would count again once the rule obeys robots.txt anew.
    assert not spider.queue.server.exists(spider.queue.keys.crawl_delays("site07"))


DISCOVER_RULE = """
discover:
  topic:
    keywords: [solar]
  seeds: ["http://slow.test/"]
  budget: 50
  strategy: best-first
politeness: {delay: 1, concurrency: 1}
"""


@pytest.mark.usefixtures("nanosecond_dates")
def test_a_discover_rules_edited_politeness_holds_for_the_hosts_it_met_before_their_crawl_delays_kept(
    redis_client: redis.Redis, redis_server: str, tmp_path: Path
) -> None:
    """A discover host's slot was made with its rule's delay and concurrency (HSETNX, by the frontier's
    release) and kept them: an edited rule moved its site's politeness, not its hosts'. They follow it now;
    the crawl-delay a host's robots.txt asked for stays, the longer of it and the delay spacing the host;
    a host pruned (no politeness left) is made again from the rule by the pop, and nothing is written for
    it."""
    spider = reloading_spider(tmp_path, redis_server)
    write(tmp_path / "rules" / "energy.yaml", DISCOVER_RULE)
    looked_again(spider, "energy")
    assert spider.rules["energy"].discover is not None
    queue, server = spider.queue, redis_client
    frontier = Frontier(server, queue.keys, "energy", strategy=BEST_FIRST, per_host=3)
    hosts = ["slow.test", "fast.test"]
    urls = [f"http://{host}/1" for host in hosts]
    entries = [Entry(url, 1, (1,), 0.0, 0.5) for url in urls]
    assert frontier.keep(spider.bloom, [url.encode() for url in urls], hosts, entries) == 2
    server.hset(queue.keys.job("j"), mapping={"budget": 50, "issued": 0})

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        meta = {"site": "energy", "slot": slot_of("energy", host), "job": "j"}
        return json.dumps({"url": entry.url, "meta": meta}).encode(), 0

    assert frontier.release(2, job="j", budget=50, delay=1.0, concurrency=1, request_of=request_of)[0] == 2
    queue.set_crawl_delay("energy@slow.test", 3.0, "slow.test")
    # What the prune leaves of a host, a request of it queued since another way (a dead letter requeued).
    pruned = "energy@gone.test"
    server.hset(queue.keys.crawl_delays(pruned), "gone.test", 4.0)
    server.hset(queue.keys.pending, pruned, 1)

    (tmp_path / "rules" / "energy.yaml").write_text(
        DISCOVER_RULE.replace("{delay: 1, concurrency: 1}", "{delay: 2, concurrency: 4}"), encoding="utf-8"
    )
    looked_again(spider, "energy")
    assert spider.rules["energy"].delay == 2.0
    shown = {
        polite.site: (polite.delay, polite.concurrency, polite.crawl_delay)
        for polite in queue.politeness(["energy", "energy@slow.test", "energy@fast.test"])
    }
    assert shown == {
        "energy": (2.0, 4, 0.0),
        "energy@slow.test": (2.0, 4, 3.0),
        "energy@fast.test": (2.0, 4, 0.0),
    }
    saved = {slot: json.loads(hash_of(server, queue.keys.politeness)[slot]) for slot in shown}
    assert {slot: (float(s["delay"]), int(s["concurrency"])) for slot, s in saved.items()} == dict.fromkeys(
        shown, (2.0, 4)
    ), "what the pop restores a removed hash from"
    assert float(saved["energy@slow.test"]["crawl_delay"]) == 3.0
    assert not server.exists(queue.keys.polite(pruned)) and not server.hexists(queue.keys.politeness, pruned)

    (tmp_path / "rules" / "energy.yaml").write_text(
        DISCOVER_RULE.replace("{delay: 1, concurrency: 1}", "{delay: 2, concurrency: 4, obey_robots: false}"),
        encoding="utf-8",
    )
    looked_again(spider, "energy")
    (slow,) = queue.politeness(["energy@slow.test"])
    assert slow.crawl_delay == 0.0
    assert not server.exists(queue.keys.crawl_delays("energy@slow.test")), "counted again once obeyed"
