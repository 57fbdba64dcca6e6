"""``crawler articles`` on a store filled by a real crawl of the demo sites (served on 127.0.0.1), and the
same commands giving the same output on the MongoDB store (the pymongo-shaped fake, NOT MongoDB, always;
a real server when MONGO_URI is set)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
import tracemalloc
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mongofake import FakeClient

from crawler.cli import articles as articlescli
from crawler.cli import main
from crawler.cli import parser as parser_module
from crawler.cli.parser import build_parser
from crawler.commandline import counted
from crawler.demo import DEMO_RULES
from crawler.demo.sites import demo_sites
from crawler.errors import StoreError
from crawler.redisio import clock as clock_module
from crawler.store import DOCUMENT_FIELDS, SqliteStore, Store
from crawler.store.base import lasting_failure
from crawler.store.mongo import MongoStore
from crawler.store.sqlite import DamagedWeekError
from extractors.summary import sentences_in, summaries

REPO = Path(__file__).resolve().parents[1]
DEMO_ARTICLES = sum(len(site.articles) for site in demo_sites())
DEMO_REPOSTS = sum(1 for site in demo_sites() for article in site.articles if article.repost_of)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data folder of one `crawler demo` run: 3 sites crawled into the weekly SQLite store."""
    data = tmp_path_factory.mktemp("demo")
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
    env.update(CRAWLER_DATA_DIR=str(data), CRAWLER_RULES_DIR=str(DEMO_RULES))
    result = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "demo", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"{DEMO_ARTICLES - DEMO_REPOSTS} articles stored in {data / 'demo'}; {DEMO_REPOSTS} reposts"
        in result.stdout
    )
    # The demo shows three ways in: index pages, a feed and a JSON API.
    assert "demo-citynews (read from its index pages): " in result.stdout
    assert "demo-techdaily (read from its RSS/Atom feed): " in result.stdout
    assert "demo-huaxia (read from its JSON API): " in result.stdout
    return data / "demo"


def articles(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, data: Path, *args: str
) -> tuple[int, str, str]:
    """Run `crawler articles ARGS` in this process on the SQLite store under ``data``."""
    monkeypatch.setenv("CRAWLER_DATA_DIR", str(data))
    monkeypatch.delenv("MONGO_URI", raising=False)
    code = main(["articles", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_crawl_filled_the_store(crawled: Path) -> None:
    with SqliteStore(crawled) as store:
        assert store.count() == DEMO_ARTICLES - DEMO_REPOSTS
        recorded = {r["url"] for row in store.iter_articles() for r in row["reposts"]}
    expected = {a.path for s in demo_sites() for a in s.articles if a.repost_of} | {
        a.repost_of for s in demo_sites() for a in s.articles if a.repost_of
    }
    assert len(recorded) == DEMO_REPOSTS
    assert {url.split(":", 2)[2].split("/", 1)[1] for url in recorded} <= {p.lstrip("/") for p in expected}


def test_a_list_of_limit_0_says_none_were_shown_not_that_more_follow(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--limit 0` shows no article: the table's count says so, not "the first ones: --limit N shows more"
    (the first none of a store that has some)."""
    for command in (("list",), ("search", "the")):
        code, out, err = articles(capsys, monkeypatch, crawled, *command, "--limit", "0")
        assert code == 0, err
        assert "0 articles shown (--limit 0: give 1 or more to see some)" in out
        assert "the first ones" not in out


def test_list_newest_first_with_filters(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = articles(capsys, monkeypatch, crawled, "list", "--format", "jsonl", "--limit", "0")
    assert (code, out) == (0, "")
    code, out, _ = articles(capsys, monkeypatch, crawled, "list", "--format", "jsonl", "--limit", "500")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == DEMO_ARTICLES - DEMO_REPOSTS
    keys = [(row["first_seen"], row["id"]) for row in rows]
    assert keys == sorted(keys, reverse=True)
    _, out, _ = articles(capsys, monkeypatch, crawled, "list", "--site", "demo-huaxia", "--format", "json")
    huaxia = json.loads(out)
    assert huaxia and {row["site"] for row in huaxia} == {"demo-huaxia"}
    week = rows[0]["week"]
    _, out, _ = articles(
        capsys, monkeypatch, crawled, "list", "--week", week, "--format", "jsonl", "--limit", "3"
    )
    assert [json.loads(line)["url"] for line in out.splitlines()] == [row["url"] for row in rows[:3]]
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
    _, out, _ = articles(capsys, monkeypatch, crawled, "list", "--since", future, "--format", "jsonl")
    assert out == ""
    _, out, _ = articles(capsys, monkeypatch, crawled, "list", "--since", "1d", "--until", future)
    assert "Articles, latest stored first" in out
    assert "20 articles (the first ones: --limit N shows more)" in out
    assert rows[0]["id"] in out
    with pytest.raises(SystemExit):
        articles(capsys, monkeypatch, crawled, "list", "--week", "2026w99")
    assert "week '2026w99' is not an ISO week" in capsys.readouterr().err


def test_list_and_search_label_the_first_seen_time_utc(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table's first seen is the stored ``first_seen`` in UTC, to the minute: its column says UTC; the
    JSON lines keep ``first_seen`` as stored."""
    _, out, _ = articles(capsys, monkeypatch, crawled, "list", "--format", "jsonl", "--limit", "1")
    (newest,) = (json.loads(line) for line in out.splitlines())
    first_seen = datetime.fromisoformat(newest["first_seen"])
    assert first_seen.utcoffset() == timedelta(0), newest["first_seen"]
    for command in (("list", "--limit", "1"), ("search", str(newest["title"]).split()[0], "--limit", "1")):
        code, out, err = articles(capsys, monkeypatch, crawled, *command)
        assert code == 0, err
        header = next(line for line in out.splitlines() if " site " in line)
        assert "first seen (UTC)" in header, out
        assert f"{first_seen:%Y-%m-%d %H:%M}" in out, out


def test_tables_piped_end_no_line_with_a_space(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piped, the tables of `crawler articles` have lines of at most 100 columns, none padded with trailing
    spaces (the titles of `articles list` shorter than their column)."""
    for command in (("list", "--limit", "50"), ("search", "the"), ("stats",)):
        code, out, err = articles(capsys, monkeypatch, crawled, *command)
        assert code == 0, err
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 100, out
        assert [line for line in lines if line != line.rstrip()] == [], command


@pytest.mark.parametrize("command", [("list",), ("export",), ("search", "city")])
def test_since_not_before_until_is_an_input_error_naming_both(
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for given, said in (
        (("2026-11-21", "2026-11-20"), ("2026-11-21T00:00:00Z", "2026-11-20T00:00:00Z")),
        (("2026-11-20T08:00+02:00", "2026-11-20T06:00Z"), ("2026-11-20T06:00:00Z", "2026-11-20T06:00:00Z")),
    ):
        code, out, err = articles(
            capsys, monkeypatch, tmp_path, *command, "--since", given[0], "--until", given[1]
        )
        assert (code, out) == (2, ""), err
        assert f"--since {said[0]} is not before --until {said[1]}: " in err, err
        assert "give the earlier time to --since" in err


@pytest.mark.parametrize("command", [("list",), ("export",), ("search", "city")])
def test_published_since_not_before_published_until_is_an_input_error_naming_both(
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = articles(
        capsys,
        monkeypatch,
        tmp_path,
        *command,
        "--published-since",
        "2026-11-20T08:00+02:00",
        "--published-until",
        "2026-11-20",
    )
    assert (code, out) == (2, ""), err
    assert (
        f"crawler articles {command[0]}: error: --published-since 2026-11-20T06:00:00Z is not before"
        " --published-until 2026-11-20T00:00:00Z: no article can be published at or after --published-since"
        " and before --published-until; give the earlier time to --published-since"
    ) in err, err


def _published_stored(folder: Path) -> Path:
    """Articles of two weeks whose ``published`` values are of every stored form, in ``folder``: the
    data folder."""
    given = {
        "date": ("2026-11-20T09:00:00Z", "2026-11-20"),
        "east": ("2026-11-20T09:01:00Z", "2026-11-20T06:00:00+08:00"),
        "naive": ("2026-11-20T13:00:00Z", "2026-11-20T12:00:00"),
        "text": ("2026-11-20T14:00:00Z", "Friday afternoon"),
        "none": ("2026-11-20T15:00:00Z", None),
        "next": ("2026-11-21T10:00:00Z", "2026-11-21"),
        "late": ("2026-12-02T08:00:00Z", "2026-11-20T10:00:00Z"),
    }
    with SqliteStore(folder) as store:
        store.upsert_many(
            {
                "site": "citynews",
                "url": f"http://news.test/{name}",
                "fetched_at": seen,
                "title": f"Title {name}",
                "body": f"Body of the article {name}, about the city.",
                "published": published,
                "fields": {"section": "city"},
            }
            for name, (seen, published) in given.items()
        )
    return folder


def _stored_with_fields(data: Path, name: str, fields: dict[str, str]) -> None:
    """One article more of citynews in the data folder ``data``, ``http://news.test/NAME``, fetched after
    :func:`_published_stored`'s, with the rule's ``fields``."""
    with SqliteStore(data) as store:
        store.upsert(
            {
                "site": "citynews",
                "url": f"http://news.test/{name}",
                "fetched_at": "2026-12-03T09:00:00Z",
                "title": f"Title {name}",
                "body": f"Body of the article {name}, about the city.",
                "fields": fields,
            }
        )


def _names(rows: list[dict[str, Any]]) -> list[str]:
    return [row["url"].rsplit("/", 1)[1] for row in rows]


def test_list_and_export_by_the_published_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _published_stored(tmp_path / "data")
    day = ("--published-since", "2026-11-20", "--published-until", "2026-11-21")
    code, out, err = articles(capsys, monkeypatch, data, "list", "--format", "jsonl", *day)
    assert code == 0, err
    assert _names([json.loads(line) for line in out.splitlines()]) == ["late", "naive", "date"]
    code, out, err = articles(capsys, monkeypatch, data, "export", *day)
    assert code == 0, err
    assert _names([json.loads(line) for line in out.splitlines()]) == ["date", "naive", "late"]
    assert err == "crawler articles export: exported 3 articles\n"
    since = ("--published-since", "2026-11-20T10:00Z")
    code, out, err = articles(capsys, monkeypatch, data, "list", "--format", "jsonl", "--limit", "1", *since)
    assert _names([json.loads(line) for line in out.splitlines()]) == ["late"]
    code, out, err = articles(capsys, monkeypatch, data, "export", "--published-until", "2026-11-20T01:00Z")
    assert _names([json.loads(line) for line in out.splitlines()]) == ["date", "east"]
    target = tmp_path / "november.csv"
    code, _, err = articles(
        capsys,
        monkeypatch,
        data,
        "export",
        "--format",
        "csv",
        "--published-since",
        "36500d",
        "-o",
        str(target),
    )
    assert code == 0, err
    with target.open(encoding="utf-8", newline="") as handle:
        assert _names(list(csv.DictReader(handle))) == ["date", "east", "naive", "next", "late"]
    assert not target.with_name("november.csv.part").exists()


def test_search_by_the_first_seen_and_the_published_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`articles search` takes the windows of list and export: --since/--until (first seen),
    --published-since/--published-until (published; no date: left out)."""
    data = _published_stored(tmp_path / "data")

    def found(*options: str) -> list[str]:
        code, out, err = articles(capsys, monkeypatch, data, "search", "city", "--format", "jsonl", *options)
        assert code == 0, err
        return _names([json.loads(line) for line in out.splitlines()])

    assert found() == ["late", "next", "none", "text", "naive", "east", "date"]
    day = ("--published-since", "2026-11-20", "--published-until", "2026-11-21")
    assert found(*day) == ["late", "naive", "date"]
    assert found(*day, "--limit", "1") == ["late"]
    assert found("--since", "2026-11-20T13:00Z", "--until", "2026-11-21") == ["none", "text", "naive"]
    assert found("--since", "2026-11-21", *day) == ["late"]
    assert found("--published-until", "2026-11-20T01:00Z") == ["east", "date"]


def test_export_writes_the_fields_asked_for_in_their_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _published_stored(tmp_path / "data")
    fields = ("--fields", "url,published,title,fields")
    code, out, err = articles(capsys, monkeypatch, data, "export", "--site", "citynews", *fields)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 7
    assert [list(row) for row in rows] == [["url", "published", "title", "fields"]] * 7
    assert rows[0] == {
        "url": "http://news.test/date",
        "published": "2026-11-20",
        "title": "Title date",
        "fields": {"section": "city"},
    }
    target = tmp_path / "out.csv"
    code, _, err = articles(
        capsys, monkeypatch, data, "export", "--format", "csv", *fields, "-o", str(target)
    )
    assert code == 0, err
    with target.open(encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["url", "published", "title", "fields"]
    assert table[1] == ["http://news.test/date", "2026-11-20", "Title date", '{"section": "city"}']
    assert table[5] == ["http://news.test/none", "", "Title none", '{"section": "city"}']
    assert len(table) == 8
    assert not tmp_path.joinpath("out.csv.part").exists()


def test_export_takes_a_rule_field_by_its_nested_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--fields fields.NAME` is one of the rule's extracted fields (the document's ``fields``): a JSON key
    and a CSV column of its own, empty where an article has none; one that no exported article holds is
    exported empty, with a warning naming the names they hold. Before, 'fields.section' was 'no field'."""
    data = _published_stored(tmp_path / "data")
    _stored_with_fields(data, "bylined", {"section": "port", "byline": "Ann Lee"})
    asked = ("export", "--site", "citynews", "--fields", "url,fields.byline,fields.section")
    code, out, err = articles(capsys, monkeypatch, data, *asked)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0] == {"url": "http://news.test/date", "fields.byline": None, "fields.section": "city"}
    assert rows[-1] == {
        "url": "http://news.test/bylined",
        "fields.byline": "Ann Lee",
        "fields.section": "port",
    }
    assert "warning" not in err
    target = tmp_path / "out.csv"
    code, _, err = articles(capsys, monkeypatch, data, *asked, "--format", "csv", "-o", str(target))
    assert code == 0, err
    with target.open(encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["url", "fields.byline", "fields.section"]
    assert table[1] == ["http://news.test/date", "", "city"]
    assert table[-1] == ["http://news.test/bylined", "Ann Lee", "port"]
    code, out, err = articles(capsys, monkeypatch, data, "export", "--fields", "url,fields.sektion")
    assert code == 0, err
    assert {json.loads(line)["fields.sektion"] for line in out.splitlines()} == {None}
    assert (
        "warning: no article exported has fields.sektion (the names of their fields: byline, section)" in err
    ), err


def test_export_of_a_rule_field_when_no_article_has_any_says_none_holds_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The articles of a rule with no field but title, body, published and author hold no `fields`: the
    warning for `--fields fields.byline` read "(the names of their fields: none)"."""
    data = tmp_path / "data"
    with SqliteStore(data) as store:
        store.upsert_many(
            [
                {
                    "site": "citynews",
                    "url": "http://news.test/plain",
                    "fetched_at": "2026-12-03T09:00:00Z",
                    "title": "Title plain",
                    "body": "Body of the article plain, about the city.",
                }
            ]
        )
    code, _, err = articles(capsys, monkeypatch, data, "export", "--fields", "url,fields.byline")
    assert code == 0, err
    assert err.splitlines()[-1] == (
        "crawler articles export: warning: no article exported has fields.byline (none of them holds a field"
        " in its `fields`, the rule's fields beyond title, body, published and author)"
    ), err


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("url,titel", "no field is named 'titel'; did you mean 'title'?"),
        ("url,,title", "an empty field name"),
        ("url,title,url", "field 'url' is given twice: give each once"),
        ("url,fields.", "'fields.' names no field of the rule's: give fields.NAME (fields.section)"),
        ("url,fields.title", "'title' is a field of the document itself: give title, not fields.title"),
    ],
)
def test_an_unknown_export_field_is_a_usage_error_naming_it_and_the_fields(
    given: str,
    problem: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _published_stored(tmp_path / "data")
    target = tmp_path / "out.jsonl"
    with pytest.raises(SystemExit) as exited:
        articles(capsys, monkeypatch, data, "export", "--fields", given, "-o", str(target))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"crawler articles export: error: argument --fields: {given!r}: {problem}" in err, err
    if "no field is named" in problem or "empty" in problem:
        listed = f"(the fields are {','.join(DOCUMENT_FIELDS)}, and fields.NAME for a field of the rule's)"
        assert listed in err, err
    assert not target.exists()


def test_the_articles_synopses_of_cli_md_are_the_parsers() -> None:
    """Every option of every `articles` sub-command is in its synopsis in docs/cli.md, and nothing else."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    block = text[text.index("crawler articles list ") :]
    block = block[: block.index("```")]
    synopses: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        started = re.match(r"crawler articles (\w+)(.*)", line.strip())
        if started:
            name = started[1]
            synopses[name] = started[2]
        else:
            synopses[name] += " " + line.strip()
    parser = build_parser()
    (top,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (actions,) = (a for a in top.choices["articles"]._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(synopses) == sorted(actions.choices)
    for action, sub in actions.choices.items():
        given = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", synopses[action]))
        options = [a.option_strings for a in sub._actions if a.option_strings and a.dest != "help"]
        missing = [strings[-1] for strings in options if not given & set(strings)]
        unknown = given - {string for strings in options for string in strings}
        assert (missing, unknown) == ([], set()), (action, synopses[action])


def test_show_prints_every_field_and_finds_reposts(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        original = next(d for d in store.iter_articles() if d["reposts"])
    code, out, _ = articles(capsys, monkeypatch, crawled, "show", original["url"])
    assert code == 0
    for label in (
        "id:",
        "url:",
        "site:",
        "title:",
        "published:",
        "first_seen:",
        "week:",
        "simhash:",
        "body:",
    ):
        assert label in out
    assert "summary, 1 sentence:" in out and "summary, 3 sentences:" in out
    repost = original["reposts"][0]
    assert "reposts (1), when fetched (UTC):" in out and repost["url"] in out, "the tables say (UTC) too"
    assert f"  {repost['fetched_at'][:16].replace('T', ' ')}  {repost['site']}  {repost['url']}" in out
    assert max(len(line) for line in out.splitlines() if "://" not in line) <= articlescli.MAX_WRAP, "wrapped"
    _, by_id, _ = articles(capsys, monkeypatch, crawled, "show", original["id"])
    assert by_id == out
    repost_url = original["reposts"][0]["url"]
    _, via_repost, _ = articles(capsys, monkeypatch, crawled, "show", repost_url, "--format", "json")
    shown = json.loads(via_repost)
    assert next(iter(shown)) == "repost", "the JSON says first that the URL asked for is a repost"
    assert shown == {"repost": original["reposts"][0], **original}
    _, by_own_url, _ = articles(capsys, monkeypatch, crawled, "show", original["url"], "--format", "json")
    assert json.loads(by_own_url) == original
    code, _, err = articles(capsys, monkeypatch, crawled, "show", "http://nowhere.test/x")
    assert code == 1
    assert "no stored article has the URL or id 'http://nowhere.test/x'" in err
    # An id cut short (a narrow table's column, a dead letter's or job's id of 12) was said as any URL.
    code, _, err = articles(capsys, monkeypatch, crawled, "show", original["id"][:12])
    assert code == 1
    assert (
        f"no stored article has the URL or id {original['id'][:12]!r} (12 hex digits: an article's id has 16;"
        " the ids of dead letters and jobs have 12): see `"
    ) in err, err


def test_show_labels_each_summary_with_the_sentences_it_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body of near-identical paragraphs has a 3-sentence summary of one sentence (the others repeat
    it), the same as its 1-sentence summary: it is shown once, its label saying one sentence, also of 3
    asked, not "3 sentences" (it was shown twice, the same text under two labels)."""
    paragraph = "The council approved the new bridge over the river on {} after a long debate."
    body = "\n\n".join(paragraph.format(day) for day in ("Monday", "Tuesday", "Wednesday", "Thursday"))
    with SqliteStore(tmp_path) as store:
        store.upsert(
            {
                "site": "citynews",
                "url": "http://news.test/bridge",
                "fetched_at": "2026-11-20T10:00:00Z",
                "title": "Bridge approved",
                "body": body,
                "summary": summaries(body, [1, 3], title="Bridge approved"),
                "job": "job-1",
            }
        )
    code, out, err = articles(capsys, monkeypatch, tmp_path, "show", "http://news.test/bridge")
    assert code == 0, err
    assert "summary, 3 sentences:" not in out, out
    labels = [line for line in out.splitlines() if line.startswith("summary")]
    assert labels == ["summary, 1 sentence (also of 3 asked):"], out
    assert out.count("The council approved") == 5, out  # the body's four paragraphs, the summary once


def test_show_takes_a_url_with_a_fragment_and_an_id_in_capitals(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored URLs have their fragment dropped, ids are hex digits: a URL copied with its #fragment, or an
    id in capitals, is the same article."""
    with SqliteStore(crawled) as store:
        original = next(d for d in store.iter_articles() if d["reposts"])
    _, expected, _ = articles(capsys, monkeypatch, crawled, "show", original["id"])
    for asked in (f"{original['url']}#comments", original["id"].upper()):
        assert articles(capsys, monkeypatch, crawled, "show", asked) == (0, expected, ""), asked
    repost = original["reposts"][0]["url"]
    code, out, _ = articles(capsys, monkeypatch, crawled, "show", f"{repost}#top")
    assert code == 0
    assert out.startswith(f"{repost} is a repost of this article, {original['url']}")


def test_list_reposts_gives_the_articles_reposts_were_recorded_against(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        originals = [d["url"] for d in store.iter_articles() if d["reposts"]]
    assert originals, "the demo records reposts"
    code, out, _ = articles(capsys, monkeypatch, crawled, "list", "--reposts", "--format", "jsonl")
    assert code == 0
    assert [json.loads(line)["url"] for line in out.splitlines()] == originals
    _, one, _ = articles(
        capsys, monkeypatch, crawled, "list", "--reposts", "--limit", "1", "--format", "jsonl"
    )
    assert [json.loads(line)["url"] for line in one.splitlines()] == originals[:1]
    _, every, err = articles(
        capsys, monkeypatch, crawled, "list", "--reposts", "--limit", str(2**70), "--format", "jsonl"
    )
    assert [json.loads(line)["url"] for line in every.splitlines()] == originals, err


@pytest.mark.parametrize("command", ["list", "export"])
@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize("age", ["800000d", "99999999999w", "999999999999999999999m"])
def test_an_age_past_the_year_1_is_an_input_error_naming_it(
    command: str,
    option: str,
    age: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(SystemExit) as stopped:
        articles(capsys, monkeypatch, tmp_path, command, option, age)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {age!r} is not a time: an age reaches back to the year 1 at most" in err, err


class _MachineDatetime(datetime):
    """datetime whose now() reads time.time(): the machine's clock, as a test sets it."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return cls.fromtimestamp(time.time(), tz)


def _seen_ago(folder: Path, now: float) -> Path:
    """Articles first seen 5 minutes (``fresh``) and 30 minutes (``older``) before ``now``, in the data
    folder ``folder``."""
    with SqliteStore(folder) as store:
        store.upsert_many(
            {
                "site": "citynews",
                "url": f"http://news.test/{name}",
                "fetched_at": datetime.fromtimestamp(now - ago, UTC).isoformat().replace("+00:00", "Z"),
                "title": f"Title {name}",
                "body": f"Body of the article {name}, about the city.",
                "fields": {},
            }
            for name, ago in (("fresh", 300), ("older", 1800))
        )
    return folder


@pytest.mark.parametrize("skew", [-1500.0, 1500.0])
def test_an_age_counts_back_from_redis_clock_whatever_the_clock_of_this_machine(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    redis_server: str,
    skew: float,
) -> None:
    """`articles list --since 10m` on a machine whose clock is 25 minutes ahead listed nothing (behind: the
    articles of the last 35 minutes), its age counted back from that clock and compared with first_seen,
    which follows Redis's. With REDIS_URL it counts back from Redis's clock (one TIME read)."""
    real = time.time
    data = _seen_ago(tmp_path / "data", real())
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    monkeypatch.setattr(parser_module, "datetime", _MachineDatetime)
    monkeypatch.setenv("REDIS_URL", redis_server)
    for command in (("list", "--format", "jsonl"), ("search", "city", "--format", "jsonl"), ("export",)):
        code, out, err = articles(capsys, monkeypatch, data, *command, "--since", "10m")
        assert code == 0, err
        assert _names([json.loads(line) for line in out.splitlines()]) == ["fresh"], command


def test_an_age_counts_back_from_this_machines_clock_when_redis_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A REDIS_URL that does not answer leaves the store readable: the age is counted back from this
    machine's clock, and a warning says so, naming the Redis."""
    data = _seen_ago(tmp_path / "data", time.time())
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    code, out, err = articles(capsys, monkeypatch, data, "list", "--format", "jsonl", "--since", "10m")
    assert code == 0, err
    assert _names([json.loads(line) for line in out.splitlines()]) == ["fresh"]
    assert err.startswith(
        "crawler articles list: warning: --since 10m counted back from this machine's clock, not from Redis's"
        " (REDIS_URL), which first seen follows: cannot reach Redis at redis://127.0.0.1:1/0: "
    ), err
    assert err.endswith("; a clock off by minutes moves the window as much\n"), err


def _three_stored(folder: Path) -> Path:
    """Three articles of one week stored in ``folder``, http://news.test/0 to 2, each with a field; the
    week's SQLite file."""
    with SqliteStore(folder) as store:
        for number in range(3):
            store.upsert(
                {
                    "site": "citynews",
                    "url": f"http://news.test/{number}",
                    "fetched_at": f"2026-11-20T1{number}:00:00Z",
                    "title": f"Title {number}",
                    "body": f"Body number {number} of the city's news.",
                    "fields": {"section": "city"},
                    "job": "job-1",
                }
            )
        return store.path("2026w47")


def test_an_article_whose_stored_text_is_not_utf8_is_listed_and_exported_with_the_others(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One stored title that is not UTF-8 (written by another tool, or bytes the disk damaged) made `list`
    and `export` of the whole week fail (exit 1, nothing exported); it is read with the bytes it cannot
    decode as U+FFFD, and a warning names the file."""
    path = _three_stored(tmp_path)
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE articles SET title = CAST(X'4ec3284f' AS TEXT) WHERE url = 'http://news.test/1'"
        )
    for command in (("list", "--format", "jsonl"), ("export",)):
        caplog.clear()
        code, out, err = articles(capsys, monkeypatch, tmp_path, *command)
        assert code == 0, err
        titles = sorted(json.loads(line)["title"] for line in out.splitlines())
        assert titles == ["N\ufffd(O", "Title 0", "Title 2"], command
        assert f"the article store {path} holds text that is not UTF-8" in caplog.text, caplog.text


def test_an_article_whose_stored_json_column_is_damaged_is_listed_with_the_others_and_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One row whose JSON column (``fields``) does not parse made `list` and `export` end in a traceback
    (JSONDecodeError, exit 1); the article is read with that column empty, and a warning names the file,
    the article, the column and the text it holds."""
    path = _three_stored(tmp_path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE articles SET fields = '{\"sect' WHERE url = 'http://news.test/1'")
    for command in (("list", "--format", "jsonl"), ("export",), ("show", "http://news.test/1")):
        caplog.clear()
        code, out, err = articles(capsys, monkeypatch, tmp_path, *command)
        assert code == 0, err
        if command[0] != "show":
            fields = [json.loads(line)["fields"] for line in out.splitlines()]
            assert sorted(map(str, fields)) == ["{'section': 'city'}", "{'section': 'city'}", "{}"]
        assert (
            f"the article store {path} holds a damaged 'fields' of http://news.test/1, not JSON: '{{\"sect';"
            " it is read as {}" in caplog.text
        ), caplog.text


def test_show_of_a_partial_repost_names_its_original_and_how_much_they_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paragraphs = [
        f"Paragraph {n} of the harbour story: crews worked through the night on pier {n}, the port said,"
        f" while {n * 3} ships waited offshore for berth number {n + 10} to open again on the morning tide."
        for n in range(1, 9)
    ]
    with SqliteStore(tmp_path) as store:
        store.upsert(
            {
                "site": "port",
                "url": "http://port.test/whole",
                "fetched_at": "2026-11-17T10:00:00Z",
                "title": "Harbour",
                "body": "\n\n".join(paragraphs),
            }
        )
        part = store.upsert(
            {
                "site": "agg",
                "url": "http://agg.test/part",
                "fetched_at": "2026-11-17T11:00:00Z",
                "title": "Harbour",
                "body": "\n\n".join(paragraphs[:3]),
            }
        )
    assert part.outcome == "repost"
    code, out, _ = articles(capsys, monkeypatch, tmp_path, "show", "http://agg.test/part")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith(
        "http://agg.test/part is a repost of this article, http://port.test/whole: a part of it"
    )
    assert "100% of the shorter text's own phrases shared" in first
    _, whole, _ = articles(capsys, monkeypatch, tmp_path, "show", "http://port.test/whole")
    assert "http://agg.test/part  (a part of it (100% of the shorter text's own phrases shared" in whole


def test_show_of_a_url_that_redirected_to_a_repost_names_the_repost_and_its_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An article link that redirected to a copy of an article stored before: the copy is recorded as a
    repost, with the URL asked for, and ``show`` of that URL finds the original through it."""
    body = "\n\n".join(
        f"Paragraph {n} of the tram story: the new line to the airport opened on Monday with {n * 4} stops,"
        f" and {n * 1000} people rode it on its first day, the transport office said of route {n + 20}."
        for n in range(1, 6)
    )
    asked, copy, original = "http://agg.test/r/9", "http://agg.test/a/9", "http://city.test/tram"
    with SqliteStore(tmp_path) as store:
        store.upsert({"site": "city", "url": original, "fetched_at": "2026-11-17T10:00:00Z", "body": body})
        written = store.upsert(
            {
                "site": "agg",
                "url": copy,
                "fetched_at": "2026-11-17T11:00:00Z",
                "body": body,
                "redirected_from": [asked],
            }
        )
    assert (written.outcome, written.original) == ("repost", original)
    code, out, _ = articles(capsys, monkeypatch, tmp_path, "show", asked)
    assert code == 0, out
    assert out.splitlines()[0] == (
        f"{asked} redirected to {copy} when it was fetched, a repost of this article, {original}: an exact"
        " copy (recorded here, not stored again)"
    )
    _, as_json, _ = articles(capsys, monkeypatch, tmp_path, "show", asked, "--format", "json")
    shown = json.loads(as_json)
    assert next(iter(shown)) == "repost"
    assert (shown["repost"]["url"], shown["repost"]["redirected_from"], shown["url"]) == (
        copy,
        [asked],
        original,
    )


def test_search_words_and_chinese(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        english = next(d for d in store.iter_articles(site="demo-citynews"))
        chinese = next(d for d in store.iter_articles(site="demo-huaxia"))
    word = max(english["title"].split(), key=len).strip(".,:;'\"").lower()
    _, out, _ = articles(capsys, monkeypatch, crawled, "search", word, "--format", "jsonl", "--limit", "100")
    hits = [json.loads(line) for line in out.splitlines()]
    assert english["url"] in {hit["url"] for hit in hits}
    assert all(word in (hit["title"] + " " + hit["body"]).lower() for hit in hits)
    phrase = chinese["title"][:4]
    _, out, _ = articles(capsys, monkeypatch, crawled, "search", phrase, "--format", "jsonl")
    assert chinese["url"] in {json.loads(line)["url"] for line in out.splitlines()}
    code, out, _ = articles(capsys, monkeypatch, crawled, "search", "zzzqqqxxx")
    assert (code, out.strip()) == (0, "0 articles")


def test_search_finds_a_number_written_against_chinese_characters(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        holding = [
            d["url"] for d in store.iter_articles(site="demo-huaxia") if "2027" in f"{d['title']} {d['body']}"
        ]
    assert holding, "the demo's Chinese articles say 到2027年"
    code, out, _ = articles(
        capsys,
        monkeypatch,
        crawled,
        "search",
        "2027",
        "--site",
        "demo-huaxia",
        "--format",
        "jsonl",
        "--limit",
        "100",
    )
    assert code == 0
    assert [json.loads(line)["url"] for line in out.splitlines()] == holding


@pytest.mark.parametrize("text", ["", "   ", '""', "--", "?!", '" . "'])
def test_a_search_with_nothing_to_look_for_is_an_input_error(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as exited:
        articles(capsys, monkeypatch, tmp_path, "search", "--", text)
    assert exited.value.code == 2
    assert f"search text {text!r} has no words: a search needs a word" in capsys.readouterr().err


def test_a_search_text_starting_with_a_dash_goes_after_two_dashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as exited:
        articles(capsys, monkeypatch, tmp_path, "search", "-light")
    assert exited.value.code == 2
    assert "give it after --, as in `crawler articles search -- -light`" in capsys.readouterr().err
    with SqliteStore(tmp_path) as store:
        store.upsert(
            {
                "site": "s",
                "url": "http://s.test/1",
                "fetched_at": "2026-11-17T10:00:00Z",
                "body": "Set the mode to -light at night.",
            }
        )
    code, out, _ = articles(capsys, monkeypatch, tmp_path, "search", "--format", "jsonl", "--", "-light")
    assert code == 0
    assert [json.loads(line)["url"] for line in out.splitlines()] == ["http://s.test/1"]


def test_export_streams_jsonl_and_csv_to_stdout_or_a_file(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, out, err = articles(capsys, monkeypatch, crawled, "export")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == DEMO_ARTICLES - DEMO_REPOSTS
    assert err.splitlines() == [f"crawler articles export: exported {len(rows)} articles"], "as every line"
    assert [r["first_seen"] for r in rows] == sorted(r["first_seen"] for r in rows), "oldest first"
    target = tmp_path / "out.csv"
    code, _, _ = articles(capsys, monkeypatch, crawled, "export", "--format", "csv", "-o", str(target))
    assert code == 0
    with target.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [row["url"] for row in table] == [row["url"] for row in rows]
    assert json.loads(table[0]["fields"]) == rows[0]["fields"]
    assert table[0]["body"] == rows[0]["body"]
    assert not (tmp_path / "out.csv.part").exists()


def test_export_to_a_folder_is_refused_before_it_starts(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    code, out, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(folder))
    assert (code, out) == (2, "")
    assert f"-o {folder} is a folder: give the path of a file" in err and "or - for stdout" in err, err
    assert "exported" not in err
    missing = tmp_path / "nowhere" / "out.jsonl"
    code, _, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(missing))
    assert code == 2
    assert f"the folder {missing.parent} does not exist" in err, err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["exports"], "no .part file left"
    # A file where a folder of the path goes is named: no folder can be made there first.
    in_the_way = tmp_path / "notes.txt"
    in_the_way.write_text("a file\n", encoding="utf-8")
    code, _, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(in_the_way / "x" / "out.csv"))
    assert code == 2
    assert (
        f"crawler articles export: error: -o {in_the_way / 'x' / 'out.csv'}: {in_the_way} is a file, not a"
        " folder: give a path in a folder"
    ) in err, err


def test_export_to_dash_writes_to_stdout(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    _, expected, _ = articles(capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia")
    code, out, err = articles(capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia", "-o", "-")
    assert (code, out) == (0, expected)
    assert "exported" in err
    assert list(tmp_path.iterdir()) == [], "no file named -"


def test_an_export_to_a_pipe_writes_into_it_and_leaves_it_a_pipe(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An ``-o`` that is no regular file (a FIFO here; /dev/null or /dev/stdout alike) is written into, not
    replaced by a FILE.part renamed over it."""
    _, expected, _ = articles(capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia")
    fifo = tmp_path / "articles.fifo"
    os.mkfifo(fifo)
    with subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True) as reader:
        try:
            code, out, err = articles(
                capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia", "-o", str(fifo)
            )
            assert stat.S_ISFIFO(fifo.stat().st_mode), "the FIFO is still one, not a file renamed over it"
            received, _ = reader.communicate(timeout=30)
        finally:
            reader.kill()
    assert (code, out, received) == (0, "", expected)
    assert err.splitlines() == [f"crawler articles export: exported {len(expected.splitlines())} articles"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["articles.fifo"], "no .part file left"


def test_an_export_whose_part_file_cannot_be_made_is_one_error_line(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A FILE.part that is a folder failed the export, then its clean-up failed on it: a traceback
    (IsADirectoryError from unlinking the folder), exit 1."""
    target = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.part").mkdir()
    code, out, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(target))
    assert (code, out) == (2, "")
    assert err == (
        f"crawler articles export: error: cannot write the export to {target}: [Errno 21] Is a directory:"
        f" '{target}.part'\n"
    ), err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl.part"], "the folder left as it was"


def test_an_export_to_a_folder_that_takes_no_new_file_says_what_to_do(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o /proc/x.jsonl`: the folder is there, but no FILE.part can be made in it; the error said only
    "[Errno 2] No such file or directory: '/proc/x.jsonl.part'", with nothing to do."""
    target = Path("/proc/x.jsonl")
    code, out, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(target))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"crawler articles export: error: cannot write the export to {target}: [Errno 2] No such file or"
        f" directory: '{target}.part'; /proc takes no new file (a system folder, as /proc or /sys are): give"
        " -o FILE in a folder of a disk you can write to, or - for stdout"
    ]


def test_an_export_to_a_symbolic_link_writes_the_file_it_points_to(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """FILE.part was renamed over the link itself: the link became a plain file, and the file it pointed
    to (exports/latest.jsonl -> 2026/articles.jsonl, say) kept the last export."""
    _, expected, _ = articles(capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia")
    (tmp_path / "kept").mkdir()
    real = tmp_path / "kept" / "articles.jsonl"
    real.write_text("the last export\n", encoding="utf-8")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    code, _, _ = articles(capsys, monkeypatch, crawled, "export", "--site", "demo-huaxia", "-o", str(link))
    assert code == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_text(encoding="utf-8") == expected
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["articles.jsonl", "kept", "latest.jsonl"]


def test_an_export_to_a_symbolic_link_that_leads_round_in_a_loop_is_one_error_line(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Resolving a link that leads to itself raised RuntimeError ('Symlink loop from ...'): a traceback."""
    link = tmp_path / "latest.jsonl"
    link.symlink_to(link.name)
    code, out, err = articles(capsys, monkeypatch, crawled, "export", "-o", str(link))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"crawler articles export: error: -o {link} is a symbolic link that leads round in a loop"
        " (Too many levels of symbolic links): point it at a file, or give another -o FILE"
    ]
    assert link.is_symlink() and sorted(path.name for path in tmp_path.iterdir()) == ["latest.jsonl"]


def test_an_export_that_fails_part_way_leaves_no_part_file(
    three_weeks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    _copy_damaged(three_weeks, data, "pages")
    target = tmp_path / "out.jsonl"
    code, _, err = articles(capsys, monkeypatch, data, "export", "--week", DAMAGED_WEEK, "-o", str(target))
    assert code == 1 and "the file is damaged" in err, err
    assert not target.exists()
    assert not (tmp_path / "out.jsonl.part").exists(), "the unfinished export is removed"


def test_stats_per_site_and_week(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, out, _ = articles(capsys, monkeypatch, crawled, "stats", "--format", "json")
    stats = json.loads(out)
    assert stats["total"]["articles"] == DEMO_ARTICLES - DEMO_REPOSTS
    assert stats["total"]["reposts"] == DEMO_REPOSTS
    qread = sum(1 for s in demo_sites() for a in s.articles if a.needs_qread)
    assert stats["total"]["qread"] == qread
    assert {row["site"] for row in stats["weeks"]} == {s.rule_id for s in demo_sites()}
    _, table, _ = articles(capsys, monkeypatch, crawled, "stats")
    assert "demo-citynews" in table and "total" in table and "qRead bodies" in table


def test_stats_of_one_site_and_one_week_in_every_format(
    three_weeks: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"week": "2026w45", "site": "north", "articles": 12, "reposts": 0, "qread": 0}
    selection = ("--site", "north", "--week", "2026w45")
    code, out, err = articles(capsys, monkeypatch, three_weeks, "stats", *selection, "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {"weeks": [row], "total": {"articles": 12, "reposts": 0, "qread": 0}}
    code, out, err = articles(capsys, monkeypatch, three_weeks, "stats", *selection, "--format", "jsonl")
    assert (code, [json.loads(line) for line in out.splitlines()]) == (0, [row]), err
    code, out, err = articles(capsys, monkeypatch, three_weeks, "stats", "--site", "south", "--format", "csv")
    assert code == 0, err
    assert list(csv.DictReader(io.StringIO(out))) == [
        {"week": week, "site": "south", "articles": "12", "reposts": "0", "qread": "0"}
        for week in STORED_WEEKS
    ]
    code, table, err = articles(capsys, monkeypatch, three_weeks, "stats", "--week", "2026w46")
    assert code == 0, err
    assert "2026w46" in table and "2026w45" not in table and "north" in table and "south" in table


@pytest.mark.parametrize(
    "selection", [(), ("--site", "north"), ("--week", "2026w45"), ("--site", "north", "--week", "2026w45")]
)
def test_stats_reads_the_store_once_whatever_it_is_asked(
    three_weeks: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    selection: tuple[str, ...],
) -> None:
    """`articles stats` reads the per-week counts once, for the check of --site and the rows alike, and
    prints in every format the rows that read gives for the site and week asked."""
    with SqliteStore(three_weeks) as store:
        everything = store.stats()
    site = selection[selection.index("--site") + 1] if "--site" in selection else None
    week = selection[selection.index("--week") + 1] if "--week" in selection else None
    rows = [row for row in everything if site in (None, row["site"]) and week in (None, row["week"])]
    assert rows and len(rows) < len(everything) if selection else rows == everything
    reads: list[str | None] = []
    counted_stats = SqliteStore.stats

    def counting(store: SqliteStore, week: str | None = None) -> list[dict[str, Any]]:
        reads.append(week)
        return counted_stats(store, week)

    monkeypatch.setattr(SqliteStore, "stats", counting)
    for form in ("table", "json", "jsonl", "csv"):
        reads.clear()
        code, out, err = articles(capsys, monkeypatch, three_weeks, "stats", *selection, "--format", form)
        assert (code, err) == (0, "")
        assert len(reads) == 1, reads
        articlescli._print_stats(rows, form)
        assert out == capsys.readouterr().out


def test_export_memory_does_not_grow_with_the_store(tmp_path: Path) -> None:
    """Constant memory: exporting 5x more articles takes no more memory (bench/export.py: 100k)."""
    peaks = []
    body = "Words of a stored article body. " * 60
    with SqliteStore(tmp_path, batch_size=1000) as store:
        start = datetime(2026, 11, 16, tzinfo=UTC)
        for count in (2000, 10_000):
            store.upsert_many(
                {
                    "site": "s",
                    "url": f"http://s.test/{count}/{n}",
                    "fetched_at": start + timedelta(seconds=n),
                    "body": f"{n} {body}",
                }
                for n in range(count)
            )
            sink = io.StringIO()
            tracemalloc.start()
            exported = articlescli._write_documents(
                store.iter_articles(newest_first=False), "jsonl", _Null(sink)
            )
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            assert exported == store.count()
    assert peaks[1] < peaks[0] * 1.5 + 200_000, peaks


# The export's peak of Python memory, in an interpreter of its own: in this one, what earlier tests left
# (caches, modules, objects awaiting the collector) moved the peak by megabytes, whatever the export did.
_EXPORT_PEAK = """
import os, sys, tracemalloc
from crawler.cli import main
data, command = sys.argv[1], ["articles", *sys.argv[2:]]
main(command)  # the modules it imports, before measuring, on an empty folder
os.environ["CRAWLER_DATA_DIR"] = data
tracemalloc.start()
code = main(command)
print(code, tracemalloc.get_traced_memory()[1])
"""


def test_an_export_by_published_time_of_chosen_fields_keeps_its_memory_constant(tmp_path: Path) -> None:
    """The whole command, with a published window and --fields, to -o FILE: 5x more articles in the window
    take no more memory (the window is tested a row at a time, the fields picked a document at a time)."""
    peaks = []
    body = "Words of a stored article body. " * 60
    data = tmp_path / "data"
    target = tmp_path / "out.csv"
    window = ("--published-since", "2026-11-01", "--published-until", "2026-12-01")
    command = ("export", *window, "--fields", "url,published,body", "--format", "csv", "-o", str(target))
    (tmp_path / "empty").mkdir()
    environment = {**os.environ, "CRAWLER_DATA_DIR": str(tmp_path / "empty")}
    environment.pop("MONGO_URI", None)
    with SqliteStore(data, batch_size=1000) as store:
        start = datetime(2026, 11, 16, tzinfo=UTC)
        for count in (2000, 10_000):
            store.upsert_many(
                {
                    "site": "s",
                    "url": f"http://s.test/{count}/{n}",
                    "fetched_at": start + timedelta(seconds=n),
                    "published": (start + timedelta(seconds=n - 3600)).isoformat(),
                    "body": f"{n} {body}",
                }
                for n in range(count)
            )
            store.flush()
            done = subprocess.run(
                [sys.executable, "-c", _EXPORT_PEAK, str(data), *command],
                capture_output=True,
                text=True,
                env=environment,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            code, peak = done.stdout.split()
            assert code == "0" and f"exported {store.count()} articles" in done.stderr, done.stderr
            peaks.append(int(peak))
    assert peaks[1] < peaks[0] * 1.5 + 200_000, peaks


class _Null(io.StringIO):
    """A stream that counts and forgets what it is given (the export's memory, not the output's)."""

    def __init__(self, sink: io.StringIO) -> None:
        super().__init__()
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


# --- the same output on both backends ---------------------------------------------------------------------


@pytest.fixture(params=["mongo-shaped-fake", "mongodb"])
def mongo_copy(request: pytest.FixtureRequest, crawled: Path, tmp_path: Path) -> Iterator[Store]:
    """The crawled documents copied, oldest first, into a MongoDB store."""
    if request.param == "mongodb":
        uri = os.environ.get("MONGO_URI")
        if not uri:
            pytest.skip("MONGO_URI is not set: no MongoDB server to compare with")
        store = MongoStore(uri, spool_dir=tmp_path, prefix=f"cli{os.getpid()}")
    else:
        store = MongoStore("mongodb://fake", spool_dir=tmp_path, prefix="cli", client=FakeClient())  # type: ignore[arg-type]
    with SqliteStore(crawled) as source:
        results = store.upsert_many(source.iter_articles(newest_first=False))
    assert {r.outcome for r in results} == {"new"}
    try:
        yield store
    finally:
        if request.param == "mongodb":
            for week in store.weeks():
                store.client.drop_database(f"{store.prefix}_{week}")
        store.close()


COMPARED = [
    ("list",),
    ("list", "--format", "csv", "--limit", "500"),
    ("list", "--site", "demo-huaxia", "--format", "jsonl"),
    ("export",),
    ("export", "--format", "csv", "--site", "demo-techdaily"),
    ("stats",),
    ("stats", "--format", "json"),
    ("stats", "--site", "demo-huaxia", "--format", "csv"),
    ("list", "--week", "2026w01"),
]


def test_every_articles_command_prints_the_same_on_mongodb(
    crawled: Path,
    mongo_copy: Store,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with SqliteStore(crawled) as store:
        some = next(d for d in store.iter_articles() if d["reposts"])
        word = max(some["title"].split(), key=len).strip(".,:;'\"").lower()
    commands: list[tuple[str, ...]] = [*COMPARED, ("show", some["url"]), ("show", some["reposts"][0]["url"])]
    if not isinstance(mongo_copy.client, FakeClient):  # type: ignore[attr-defined]
        commands += [("search", word), ("search", word, "--format", "jsonl", "--site", some["site"])]
    for command in commands:
        expected = articles(capsys, monkeypatch, crawled, *command)
        monkeypatch.setattr(articlescli, "open_store", lambda _env, **_options: _Unclosed(mongo_copy))
        assert articles(capsys, monkeypatch, crawled, *command) == expected, command
        monkeypatch.undo()


class _Unclosed:
    """The MongoDB store for one command, left open for the next (the command closes what it opens)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def close(self) -> None:
        return None


def test_a_site_with_articles_is_checked_without_reading_every_weeks_statistics(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--site S` checks S by its count (its index): the statistics of every week, which read every article
    of every week, are read only to name the sites when S has none, and by `stats` of every week."""
    read: list[str | None] = []
    stats = SqliteStore.stats

    def spied(self: SqliteStore, week: str | None = None) -> list[dict[str, Any]]:
        read.append(week)
        return stats(self, week)

    with SqliteStore(crawled) as store:
        week = store.weeks()[-1]
    monkeypatch.setattr(SqliteStore, "stats", spied)
    site = "demo-citynews"
    for command in (["list"], ["search", "the"], ["export"], ["stats", "--week", week]):
        code, out, err = articles(capsys, monkeypatch, crawled, *command, "--site", site, "--format", "jsonl")
        assert code == 0, (command, err)
        rows = [json.loads(line) for line in out.splitlines()]
        assert rows, command
        assert {row["site"] for row in rows} == {site}, command
        assert None not in read, command
    assert read == [week]


def test_an_unknown_site_is_named_with_the_sites_that_have_articles(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for command in (["list"], ["search", "harbour"], ["export"], ["stats"]):
        code, out, err = articles(capsys, monkeypatch, crawled, *command, "--site", "demo-citynew")
        assert code == 2, (command, out, err)
        assert "no articles of site 'demo-citynew'; did you mean 'demo-citynews'?" in err
        assert "(sites with articles: demo-citynews, demo-huaxia, demo-techdaily)" in err


def test_a_week_with_no_store_is_named_with_the_weeks_stored(
    three_weeks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.jsonl"
    for command in (["list"], ["search", "harbour"], ["export"], ["export", "-o", str(target)], ["stats"]):
        code, out, err = articles(capsys, monkeypatch, three_weeks, *command, "--week", "2026w47")
        assert (code, out) == (2, ""), (command, out, err)
        assert err == (
            f"crawler articles {command[0]}: error: no articles of week '2026w47'"
            " (weeks stored: 2026w44, 2026w45, 2026w46)\n"
        ), err
    assert not target.exists()
    (tmp_path / "empty").mkdir()
    code, out, err = articles(capsys, monkeypatch, tmp_path / "empty", "list", "--week", "2026w47")
    assert (code, out) == (2, ""), err
    assert "error: no articles of week '2026w47': the store has no articles yet" in err, err


@pytest.mark.parametrize("damage", ["header", "pages"])
def test_a_damaged_week_file_is_named_with_what_to_do(
    crawled: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(crawled, data)
    (week,) = (data / "articles").glob("articles_*.sqlite")
    _damage(week, damage)
    code, out, err = articles(capsys, monkeypatch, data, "stats")
    assert code == 1, (out, err)
    assert f"the article store {week}" in err and "the file is damaged" in err, err
    assert "Backing up a week" in err and "move it out of the folder" in err, err


def _damage(path: Path, damage: str) -> None:
    """Overwrite a SQLite file's header (its first 4 KB: no longer a database), its pages (the last
    three quarters but those of its schema, which SQLite reads as it opens the file: malformed), or
    (``schema``) the pages of its schema but the first (which a -wal file beside it holds once the file has
    grown; the others change only with the schema: malformed as it opens) with 0xff bytes; or
    (``unreadable``) put a folder in its place, or (``emptied``) cut it to 0 bytes (a copy onto it that
    failed, a redirection `>` onto it) an hour ago."""
    if damage == "unreadable":
        path.unlink()
        path.mkdir()
        return
    if damage == "emptied":
        path.write_bytes(b"")
        an_hour_ago = time.time() - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
        return
    raw = bytearray(path.read_bytes())
    if damage == "header":
        raw[:4096] = b"\xff" * 4096
    else:
        # Immutable: the -wal file beside it neither read nor checkpointed into it as the reader closes.
        with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as connection:
            size = connection.execute("PRAGMA page_size").fetchone()[0]
            schema = {
                n for (n,) in connection.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'")
            }
        connection.close()
        if damage == "schema":
            damaged = schema - {1}
            assert damaged, f"the schema of {path} fits in its first page: nothing to damage"
        else:
            damaged = set(range(len(raw) // 4 // size + 1, len(raw) // size + 1)) - schema
        for page in damaged:
            raw[(page - 1) * size : page * size] = b"\xff" * size
    path.write_bytes(bytes(raw))


def _copy_damaged(three_weeks: Path, data: Path, damage: str) -> Path:
    """A copy of ``three_weeks`` in ``data``, its week ``DAMAGED_WEEK`` damaged as :func:`_damage` says:
    that week's file."""
    shutil.copytree(three_weeks, data)
    damaged = data / "articles" / f"articles_{DAMAGED_WEEK}.sqlite"
    _damage(damaged, damage)
    return damaged


# Three weeks of articles; the oldest is the one damaged.
STORED_WEEKS = {
    "2026w44": datetime(2026, 10, 28, 9, tzinfo=UTC),
    "2026w45": datetime(2026, 11, 4, 9, tzinfo=UTC),
    "2026w46": datetime(2026, 11, 11, 9, tzinfo=UTC),
}
DAMAGED_WEEK = "2026w44"


@pytest.fixture(scope="module")
def three_weeks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder whose SQLite store holds 3 weeks of 24 articles (sites north and south), each with
    "harbour" in its title and a body of its own."""
    data = tmp_path_factory.mktemp("weeks")
    rng = random.Random(47)
    vocabulary = [
        "".join(rng.choice("bdfgklmnprstv") + rng.choice("aeiou") for _ in range(3)) for _ in range(800)
    ]
    with SqliteStore(data) as store:
        results = store.upsert_many(
            {
                "site": ("north", "south")[n % 2],
                "url": f"http://{('north', 'south')[n % 2]}.test/{week}/{n}",
                "fetched_at": start + timedelta(minutes=n),
                "title": f"Harbour report {n} of {week}",
                "body": "\n\n".join(" ".join(rng.choices(vocabulary, k=80)) for _ in range(5)),
            }
            for week, start in STORED_WEEKS.items()
            for n in range(24)
        )
        assert {r.outcome for r in results} == {"new"}
        assert store.weeks() == list(STORED_WEEKS)
    return data


# What the warning says for each kind of damage: how the file failed, and what to do.
DAMAGE_MESSAGES = {
    "header": ("open", "file is not a database; the file is damaged: restore it from a backup"),
    "pages": ("read", "the file is damaged: restore it from a backup"),
    "unreadable": (
        "open",
        "unable to open database file; the file cannot be read: make it a file the crawler's user may read"
        " and write, restore it from a backup",
    ),
    "emptied": (
        "open",
        "the file is empty (0 bytes), where the crawler makes a week's file with its tables in it: what it"
        " held is lost (a copy or restore onto it that failed, a redirection `>` onto it, or a crawler killed"
        " as it made the file); restore it from a backup",
    ),
}


def test_a_week_unread_for_a_full_disk_says_to_free_space_not_to_restore_it(
    three_weeks: Path, tmp_path: Path
) -> None:
    """SQLite reads a week's file through a ``-shm`` file it makes beside it, which a full disk refuses
    (here a file-size limit, which fails the same way): the file is sound, only space is missing."""
    data = tmp_path / "data"
    shutil.copytree(three_weeks, data)
    folder = data / "articles"
    done = _articles_to(data, "stats", file_limit=1024)
    assert done.returncode == 1, done.stderr
    week = folder / "articles_2026w44.sqlite"
    assert (
        f"crawler articles stats: warning: articles of week 2026w44 are missing from this output: cannot"
        f" open the article store {week}: disk I/O error; SQLite could not make {week.name}-shm, which it"
        f" reads the file with, beside it: free disk space under {folder}, or raise the file size limit of"
        " the crawler's processes (`ulimit -f`: 1024 bytes) (the week's file is not damaged)\n"
    ) in done.stderr, done.stderr
    assert "restore it" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_week_in_a_folder_that_cannot_be_written_says_so_not_that_the_file_cannot_be_read(
    three_weeks: Path, tmp_path: Path
) -> None:
    """A data folder on a read-only disk (a mounted backup, a snapshot) or one marked immutable, a week's
    -wal file beside its file (copied with it, its -shm not): SQLite makes a -shm file beside a week's file
    to read it with its -wal, and cannot. Every week was left out with "the file cannot be read: make it a
    file the crawler's user may read and write, restore it from a backup", of a file that reads well. One
    error (every week of the folder fails alike) names the folder and what to do."""
    data = tmp_path / "data"
    week, _ = _beside_a_killed_writers_wal(three_weeks, data)
    folder = data / "articles"
    Path(f"{week}-shm").unlink()
    with _unwritable(folder):
        done = _articles_to(data, "stats")
    assert done.returncode == 1, done.stderr
    assert (
        f"crawler articles stats: error: cannot open the article store {week}: unable to open database"
        f" file; SQLite makes {week.name}-shm beside"
        f" the week's file to read it, and {folder} cannot be written (the week's file is not damaged):"
        f" make {folder} writable by the crawler's user (chattr -i for a folder marked immutable), remount"
        " its disk read-write, or copy the data folder to a disk that can be written and read the copy"
        " (--data-dir DIR)\n"
    ) == done.stderr, done.stderr
    assert "restore it" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_backup_in_a_folder_that_cannot_be_written_is_read_in_place(
    three_weeks: Path, tmp_path: Path
) -> None:
    """A copy of the data folder kept where it cannot be written (a read-only disk, a folder of mode 0555
    or marked immutable), with no -wal file beside its weeks: SQLite could not make the -shm file it reads
    a week in WAL mode with, and every command that reads articles failed, telling to copy the folder to a
    disk that can be written. All of it is in the weeks' files: they are read in place, and left as they
    were."""
    data = tmp_path / "data"
    shutil.copytree(three_weeks, data)
    folder = data / "articles"
    files = {path.name: path.read_bytes() for path in folder.iterdir()}
    with _unwritable(folder):
        listed = _articles_to(data, "list", "--format", "jsonl", "--limit", "500")
        counted = _articles_to(data, "stats")
    assert (listed.returncode, listed.stderr) == (0, ""), listed.stderr
    assert len(listed.stdout.splitlines()) == 3 * 24, listed.stdout[-2000:]
    assert (counted.returncode, counted.stderr) == (0, ""), counted.stderr
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == files


@contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """``folder`` made a folder this user cannot write: mode 0555, or marked immutable (chattr +i) for
    root, whom modes do not stop (skipped where it cannot be); made writable again at the end."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
    elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here: no unwritable folder can be made as root")
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def _articles_to(data: Path, *args: str, stdout: Any = subprocess.PIPE, file_limit: int | None = None) -> Any:
    """`crawler articles ARGS` in a process of its own, its stdout on ``stdout``, its files limited to
    ``file_limit`` bytes (``RLIMIT_FSIZE``: writing past it fails as a full disk does, with EFBIG)."""

    def limit() -> None:
        if file_limit is not None:
            resource.setrlimit(
                resource.RLIMIT_FSIZE, (file_limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
            )

    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--data-dir", str(data), "articles", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=limit,
    )


def test_an_export_to_a_full_disk_says_so_in_one_line_with_what_to_do(
    three_weeks: Path, tmp_path: Path
) -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = _articles_to(three_weeks, "export", stdout=full)
    assert (done.returncode, done.stderr) == (
        2,
        "crawler articles export: error: cannot write the export to stdout: [Errno 28] No space left on"
        " device; free space on the disk stdout goes to, or give -o FILE on another disk; what it holds is"
        " incomplete\n",
    ), done.stderr
    target = tmp_path / "articles.jsonl"
    target.write_text("the last export\n", encoding="utf-8")
    done = _articles_to(three_weeks, "export", "-o", str(target), file_limit=100_000)
    assert (done.returncode, done.stderr) == (
        2,
        f"crawler articles export: error: cannot write the export to {target}: [Errno 27] File too large;"
        " the file grew past the largest allowed (`ulimit -f`, or its file system's limit): export a part"
        f" at a time (--week, --site, --since and --until); {target} is left as it was\n",
    ), done.stderr
    assert target.read_text(encoding="utf-8") == "the last export\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["articles.jsonl"]


@pytest.mark.parametrize(
    "args", [("list",), ("list", "--format", "jsonl"), ("search", "harbour"), ("stats",)]
)
def test_output_to_a_full_disk_is_one_line_that_says_it_was_cut(
    three_weeks: Path, args: tuple[str, ...]
) -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = _articles_to(three_weeks, *args, stdout=full)
    assert (done.returncode, done.stderr) == (
        2,
        f"crawler articles {args[0]}: error: cannot write the output to stdout: [Errno 28] No space left on"
        " device; free space on the disk stdout goes to, or send the output to another disk; the output is"
        " cut short\n",
    ), done.stderr


def test_output_past_the_file_size_limit_is_one_line_that_says_it_was_cut(
    three_weeks: Path, tmp_path: Path
) -> None:
    with (tmp_path / "list.jsonl").open("w", encoding="utf-8") as handle:
        done = _articles_to(
            three_weeks, "list", "--format", "jsonl", "--limit", "500", stdout=handle, file_limit=100_000
        )
    assert (done.returncode, done.stderr) == (
        2,
        "crawler articles list: error: cannot write the output to stdout: [Errno 27] File too large; the"
        " file grew past the largest allowed (`ulimit -f`, or its file system's limit): send the output to"
        " a file system that takes it, or ask for less; the output is cut short\n",
    ), done.stderr


@pytest.mark.parametrize("earlier", ["the last export\n", None], ids=["over_an_earlier", "none_before"])
def test_an_export_that_left_out_a_week_writes_its_part_and_leaves_file_as_it_was(
    three_weeks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    earlier: str | None,
) -> None:
    """An incomplete export replaces no earlier FILE; FILE absent, it is no more FILE than over an earlier
    one, so it is FILE.part too (a script that checks only for FILE takes no partial export for a whole
    one)."""
    data = tmp_path / "data"
    _copy_damaged(three_weeks, data, "header")
    target = tmp_path / "articles.jsonl"
    if earlier is not None:
        target.write_text(earlier, encoding="utf-8")
    code, out, err = articles(capsys, monkeypatch, data, "export", "-o", str(target))
    assert (code, out) == (1, ""), err
    if earlier is None:
        assert not target.exists()
    else:
        assert target.read_text(encoding="utf-8") == earlier
    partial = tmp_path / "articles.jsonl.part"
    assert {json.loads(line)["week"] for line in partial.read_text(encoding="utf-8").splitlines()} == {
        "2026w45",
        "2026w46",
    }
    left = "" if earlier is None else ", which is left as it was"
    assert err.startswith(
        f"crawler articles export: exported 48 articles to {partial}, not to {target}{left}: weeks are"
        " missing from this export (see below)\n"
        f"crawler articles export: warning: articles of week {DAMAGED_WEEK} are missing from this output: "
    ), err


@pytest.mark.parametrize("damage", list(DAMAGE_MESSAGES))
def test_a_damaged_old_week_leaves_out_only_its_articles_with_a_warning_and_exit_1(
    three_weeks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(three_weeks, data)
    with SqliteStore(data) as store:
        kept = [d for d in store.iter_articles(newest_first=False) if d["week"] != DAMAGED_WEEK]
        kept_stats = [row for row in store.stats() if row["week"] != DAMAGED_WEEK]
    assert len(kept) == 48 and {row["week"] for row in kept_stats} == {"2026w45", "2026w46"}
    damaged = data / "articles" / f"articles_{DAMAGED_WEEK}.sqlite"
    _damage(damaged, damage)

    failed, why = DAMAGE_MESSAGES[damage]

    def warned_once(err: str, action: str) -> None:
        assert err.count("warning:") == 1, err
        assert (
            f"crawler articles {action}: warning: articles of week {DAMAGED_WEEK} are missing from this"
            f" output: cannot {failed} the article store {damaged}: "
        ) in err, err
        assert f"{why} (docs/operations.md, 'Backing up a week')" in err, err
        assert "or move it out of the folder to go on without that week's articles" in err
        assert "-wal" not in err, "no writes are left beside the file: nothing more to move"
        assert "error" not in err and "Traceback" not in err and "no articles stored" not in err, err

    code, out, err = articles(capsys, monkeypatch, data, "stats", "--format", "json")
    assert code == 1, err
    warned_once(err, "stats")
    stats = json.loads(out)
    assert stats["weeks"] == kept_stats
    assert stats["total"]["articles"] == 48
    code, out, err = articles(capsys, monkeypatch, data, "stats")
    assert code == 1 and "2026w45" in out and "2026w46" in out and DAMAGED_WEEK not in out, out
    assert re.search(r"total\W+48\W", out), out
    warned_once(err, "stats")

    code, out, err = articles(
        capsys, monkeypatch, data, "search", "harbour", "--format", "jsonl", "--limit", "100"
    )
    assert code == 1, err
    assert [json.loads(line)["url"] for line in out.splitlines()] == [d["url"] for d in reversed(kept)]
    warned_once(err, "search")

    code, out, err = articles(capsys, monkeypatch, data, "export")
    assert code == 1, err
    assert [json.loads(line) for line in out.splitlines()] == kept
    assert "exported 48 articles" in err
    warned_once(err, "export")
    target = tmp_path / "out.csv"
    code, _, err = articles(capsys, monkeypatch, data, "export", "--format", "csv", "-o", str(target))
    assert code == 1, err
    assert not target.exists(), "an incomplete export goes to FILE.part"
    with target.with_name("out.csv.part").open(encoding="utf-8", newline="") as handle:
        assert [row["url"] for row in csv.DictReader(handle)] == [d["url"] for d in kept]
    warned_once(err, "export")

    code, out, err = articles(capsys, monkeypatch, data, "list", "--format", "jsonl", "--limit", "100")
    assert code == 1, err
    assert [json.loads(line)["url"] for line in out.splitlines()] == [d["url"] for d in reversed(kept)]
    warned_once(err, "list")
    if damage == "emptied":
        assert damaged.stat().st_size == 0, "a reader makes no empty week of it, which would hide the loss"


def test_a_damaged_week_asked_for_with_week_is_an_error_and_the_other_weeks_read_as_before(
    three_weeks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    damaged = _copy_damaged(three_weeks, data, "pages")
    for command in (["export"], ["search", "harbour"], ["list"]):
        code, out, err = articles(capsys, monkeypatch, data, *command, "--week", DAMAGED_WEEK)
        assert (code, out) == (1, ""), (command, out, err)
        assert err.startswith(
            f"crawler articles {command[0]}: error: cannot read the article store {damaged}: "
        ), err
        assert "; the file is damaged: restore it from a backup" in err, err
        assert "warning" not in err
    code, out, err = articles(capsys, monkeypatch, data, "export", "--week", "2026w45")
    assert code == 0 and "warning" not in err, err
    assert {json.loads(line)["week"] for line in out.splitlines()} == {"2026w45"}


def test_show_of_an_article_not_found_with_a_week_unread_says_it_may_be_in_that_week(
    three_weeks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    shutil.copytree(three_weeks, data)
    with SqliteStore(data) as store:
        lost, kept = (next(d for d in store.iter_articles(week=week)) for week in (DAMAGED_WEEK, "2026w45"))
    _damage(data / "articles" / f"articles_{DAMAGED_WEEK}.sqlite", "pages")
    code, out, err = articles(capsys, monkeypatch, data, "show", kept["id"], "--format", "json")
    assert (code, err) == (0, "") and json.loads(out)["url"] == kept["url"], err
    code, out, err = articles(capsys, monkeypatch, data, "show", lost["id"])
    assert (code, out) == (1, ""), err
    warning, error = err.splitlines()
    assert warning.startswith(
        f"crawler articles show: warning: articles of week {DAMAGED_WEEK} are missing"
    ), err
    assert error == (
        f"crawler articles show: error: no readable week holds the URL or id {lost['id']!r}; week"
        f" {DAMAGED_WEEK} could not be read (see above): restore it (docs/operations.md, 'Backing up a week')"
        " and try again"
    ), err


# Writes into the damaged week, in the data folder given, by a process then killed: its -wal file stays.
_KILLED_WRITER = """
import os, signal, sys
from crawler.store import SqliteStore

store = SqliteStore(sys.argv[1])
store.upsert_many(
    {"site": "north", "url": f"http://north.test/late/{n}", "fetched_at": "2026-10-29T09:00:00Z",
     "title": f"Late report {n}", "body": f"Late report number {n} of the harbour."}
    for n in range(5)
)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("damage", ["pages", "schema"])
def test_a_damaged_week_with_a_killed_writers_wal_file_beside_it_names_the_files_to_move_out(
    three_weeks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    """Damaged pages are found by a read, a damaged schema as the file is opened. Either way the files
    named are left as they were: the store, closing the week (or failing to open it), used to checkpoint
    the -wal into the damaged file and delete it, so that the hint named a -wal that was gone."""
    data = tmp_path / "data"
    damaged, wal = _damaged_beside_a_killed_writers_wal(three_weeks, data, damage)
    left = damaged.read_bytes(), wal.read_bytes()
    code, _, err = articles(capsys, monkeypatch, data, "stats")
    assert code == 1, err
    failed = "open" if damage == "schema" else "read"
    assert f"cannot {failed} the article store {damaged}: database disk image is malformed;" in err, err
    assert wal.exists(), "the -wal was checkpointed into the damaged file and deleted"
    assert (damaged.read_bytes(), wal.read_bytes()) == left, "the -wal was applied to the damaged file"
    assert (
        "; the file is damaged: restore it from a backup (docs/operations.md, 'Backing up a week'), or move"
        " it out of the folder to go on without that week's articles; move"
        f" articles_{DAMAGED_WEEK}.sqlite-wal and articles_{DAMAGED_WEEK}.sqlite-shm out of the folder with"
        " it, every crawler on the folder"
        " stopped first: SQLite applies the writes of a -wal file to the database file of its name, a backup"
        " copied in too"
    ) in err, err


def test_a_store_flushing_a_week_it_found_damaged_leaves_its_wal_file_beside_it(
    three_weeks: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    damaged, wal = _damaged_beside_a_killed_writers_wal(three_weeks, data, "pages")
    left = damaged.read_bytes(), wal.read_bytes()
    with SqliteStore(data) as store:
        with pytest.raises(DamagedWeekError, match=re.escape(f"move {wal.name} and")):
            list(store.iter_articles(week=DAMAGED_WEEK))
        store.flush()
        assert (damaged.read_bytes(), wal.read_bytes()) == left, "flush applied the -wal to the damaged file"
    assert (damaged.read_bytes(), wal.read_bytes()) == left, "close applied the -wal to the damaged file"


def _damaged_beside_a_killed_writers_wal(three_weeks: Path, data: Path, damage: str) -> tuple[Path, Path]:
    """A copy of ``three_weeks`` in ``data`` whose damaged week has the -wal file of a writer killed
    beside it: the week's file and its -wal."""
    damaged, wal = _beside_a_killed_writers_wal(three_weeks, data)
    _damage(damaged, damage)
    return damaged, wal


def _beside_a_killed_writers_wal(three_weeks: Path, data: Path) -> tuple[Path, Path]:
    """A copy of ``three_weeks`` in ``data`` whose oldest week has the -wal file (and -shm) of a writer
    killed beside it: the week's file and its -wal."""
    shutil.copytree(three_weeks, data)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    damaged = data / "articles" / f"articles_{DAMAGED_WEEK}.sqlite"
    wal = Path(f"{damaged}-wal")
    assert wal.stat().st_size > 0 and Path(f"{damaged}-shm").exists()
    return damaged, wal


def test_a_store_reads_around_a_damaged_week_only_when_told_and_writes_never_skip_it(
    three_weeks: Path, tmp_path: Path
) -> None:
    damaged = _copy_damaged(three_weeks, tmp_path / "data", "header")
    with (
        SqliteStore(tmp_path / "data") as store,
        pytest.raises(DamagedWeekError, match=re.escape(str(damaged))),
    ):
        store.stats()
    with SqliteStore(tmp_path / "data", skip_damaged=True) as store:
        assert store.count() == 48
        assert list(store.weeks_left_out()) == [DAMAGED_WEEK]
        assert "the file is damaged" in str(store.weeks_left_out()[DAMAGED_WEEK])
        with pytest.raises(DamagedWeekError, match=re.escape(str(damaged))):
            store.count(week=DAMAGED_WEEK)
        # The week after it is compared with it for duplicates: storing there fails, naming the file.
        article = {"site": "north", "title": "Harbour", "body": "A new harbour report."}
        with pytest.raises(DamagedWeekError, match=re.escape(str(damaged))):
            store.upsert({**article, "url": "http://north.test/new/1", "fetched_at": "2026-11-02T09:00:00Z"})
        written = store.upsert(
            {**article, "url": "http://north.test/new/2", "fetched_at": "2026-11-18T09:00:00Z"}
        )
        assert written.outcome == "new"
        assert store.count(week="2026w47") == 1


def test_show_puts_a_space_after_every_label(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        document = next(d for d in store.iter_articles() if d["site"] == "demo-citynews" and d["fields"])
    _, out, _ = articles(capsys, monkeypatch, crawled, "show", document["id"])
    section = document["fields"]["section"]
    assert re.search(rf"^fields\.section: +{re.escape(section)}$", out, re.MULTILINE), out
    assert not re.search(r"^[\w.]+:\S", out, re.MULTILINE), "a label runs into its value"
    # Every one-line label's value starts in one column, the extraction's too.
    labelled = out.split("\n\n")[0].splitlines()
    assert labelled[-1].startswith("extraction:"), out
    starts = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in labelled}
    assert len(starts) == 1, out


def _columns(line: str) -> int:
    """The terminal columns ``line`` takes: two for a wide (Chinese, Japanese, Korean) character."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


def test_show_wraps_chinese_text_to_the_columns_it_takes_on_the_terminal(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(crawled) as store:
        document = next(
            d
            for d in store.iter_articles()
            if d["site"] == "demo-huaxia"
            and any(_columns(p) > articlescli.MAX_WRAP for p in d["body"].split("\n\n"))
        )
    _, out, _ = articles(capsys, monkeypatch, crawled, "show", document["id"])
    wide = [line for line in out.splitlines() if "://" not in line and _columns(line) > articlescli.MAX_WRAP]
    assert not wide, f"lines wider than {articlescli.MAX_WRAP} columns: {wide}"
    body = out.split("\nbody:\n", 1)[1]
    assert "".join(body.split()) == "".join(document["body"].split()), "the whole body, only wrapped"


@pytest.mark.parametrize("columns", ["100", "41", "20"])
def test_show_starts_no_line_of_chinese_text_with_a_closing_punctuation_mark(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """Chinese text was cut between any two characters: a line could start with "，" or "。" (or end with
    "「"). A line now breaks before the character such a mark holds on to (kinsoku), the body whole."""
    with SqliteStore(crawled) as store:
        documents = [d for d in store.iter_articles() if d["site"] == "demo-huaxia"]
    assert documents, "the demo's Chinese articles"
    monkeypatch.setenv("COLUMNS", columns)
    for document in documents:
        _, out, _ = articles(capsys, monkeypatch, crawled, "show", document["id"])
        body = out.split("\nbody:\n", 1)[1]
        assert "".join(body.split()) == "".join(document["body"].split()), "the whole body, only wrapped"
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        assert not [line for line in lines if line[0] in "，。、：；！？）」』】》”"], out
        assert not [line for line in lines if line[-1] in "（「『【《“"], out
        assert not [line for line in body.splitlines() if _columns(line) > int(columns)], body


@pytest.mark.parametrize("columns", ["1", "2", "3"])
def test_show_on_a_terminal_narrower_than_a_chinese_character_prints_every_character(
    crawled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    with SqliteStore(crawled) as store:
        document = next(d for d in store.iter_articles() if d["site"] == "demo-huaxia" and d["summary"])
    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = articles(capsys, monkeypatch, crawled, "show", document["id"])
    assert code == 0, err
    head, body = out.split("\nbody:\n", 1)
    assert "".join(body.split()) == "".join(document["body"].split()), "the whole body, only wrapped"
    for length, summary in document["summary"].items():
        count = sentences_in(summary, document["body"])
        asked = "" if count == int(length) else f" (of {length} asked)"
        shown = head.split(f"summary, {counted(count, 'sentence')}{asked}:\n", 1)[1].split("\n\n", 1)[0]
        assert "".join(summary.split()) in "".join(shown.split()), f"the whole summary of {length}"


@pytest.mark.parametrize("command", [("stats",), ("list",), ("search", "news"), ("export",), ("show", "x")])
def test_a_data_folder_that_does_not_exist_is_an_error_not_an_empty_store(
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A misspelt ``--data-dir`` (no such folder) is an input error naming it, as for ``status`` and
    ``dead``, not "0 articles" with exit code 0 and a note to crawl first; no folder is made."""
    missing = tmp_path / "dmeo"
    code, out, err = articles(capsys, monkeypatch, missing, *command)
    assert (code, out) == (2, ""), out + err
    assert err == (
        f"crawler articles {command[0]}: error: no data folder {str(missing)!r}: nothing was crawled there"
        " (give the folder of your crawls with --data-dir DIR)\n"
    )
    assert not missing.exists()


def test_an_empty_store_says_where_articles_come_from_and_where_the_demos_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "demo").mkdir()
    code, out, err = articles(capsys, monkeypatch, tmp_path, "stats")
    assert code == 0 and "total" in out
    assert f"no articles stored under {tmp_path} yet; crawl first: `crawler temp SITE`" in err
    assert (
        f"the demo's are under {tmp_path / 'demo'}: `crawler --data-dir {tmp_path / 'demo'} articles stats`"
        in err
    )


def test_an_empty_store_of_a_given_data_dir_suggests_a_crawl_into_that_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`crawler --data-dir D articles stats` on an empty D suggests `crawler --data-dir D temp SITE`: the
    command without it would crawl into ./data, which this command does not read."""
    monkeypatch.delenv("MONGO_URI", raising=False)
    code = main(["--data-dir", str(tmp_path), "articles", "stats"])
    err = capsys.readouterr().err
    assert code == 0
    assert f"crawl first: `crawler --data-dir {tmp_path} temp SITE`" in err


def test_an_empty_demo_folder_suggests_a_crawl_with_its_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`crawler demo --serve` starts data/demo anew and writes the demo's rules in data/demo/rules: its
    `articles stats` before a crawl suggested `crawler --data-dir data/demo temp SITE`, which reads the rules
    of ./rules, where no demo site is (a new user's walk: "no rule for site 'demo-citynews'"). The
    suggestion gives the folder's rules."""
    monkeypatch.delenv("MONGO_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    demo = Path("data", "demo")
    (demo / "rules").mkdir(parents=True)
    shutil.copy2(DEMO_RULES / "demo-citynews.yaml", demo / "rules")
    code = main(["--data-dir", str(demo), "articles", "stats"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0
    assert f"crawl first: `crawler --data-dir {demo} --rules-dir {demo / 'rules'} temp SITE`" in err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["articles", "search", "-light"], "`crawler --data-dir {data} articles search -- -light`"),
        (
            ["-s", "LEASE_SECONDS=5", "temp", "news"],
            "`crawler --data-dir {data} temp SITE -s LEASE_SECONDS=5`",
        ),
    ],
)
def test_a_usage_error_suggests_the_command_with_the_data_dir_given(
    argv: list[str], hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands a usage error suggests repeat the --data-dir given before the command, as every
    other suggested command does: without it, they would read or crawl ./data."""
    with pytest.raises(SystemExit) as exited:
        main(["--data-dir", str(tmp_path), *argv])
    assert exited.value.code == 2
    assert hint.format(data=tmp_path) in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("option", ["--data", "--data-dir="])
def test_a_usage_error_suggests_the_data_dir_given_as_the_parser_took_it(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The parser takes ``--data DIR`` (a prefix of ``--data-dir``, as argparse allows) and
    ``--data-dir=DIR``: the suggested command repeats that folder too, not ./data."""
    given = [f"{option}{tmp_path}"] if option.endswith("=") else [option, str(tmp_path)]
    with pytest.raises(SystemExit) as exited:
        main([*given, "articles", "search", "-light"])
    assert exited.value.code == 2
    hint = f"`crawler --data-dir {tmp_path} articles search -- -light`"
    assert hint in " ".join(capsys.readouterr().err.split())


MARKUP_TITLE = "[bold]Ferry[/bold] strike [updated] [red]x"


def test_markup_in_stored_data_is_shown_as_written_in_the_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(tmp_path) as store:
        (written,) = store.upsert_many(
            [
                {
                    "site": "wire",
                    "url": "http://wire.test/ferry",
                    "fetched_at": datetime(2026, 11, 18, 9, tzinfo=UTC),
                    "title": MARKUP_TITLE,
                    "body": "The ferry strike goes on.",
                }
            ]
        )
        assert written.outcome == "new"
    for command in (["list"], ["search", "ferry"], ["search", "[updated]"]):
        code, out, err = articles(capsys, monkeypatch, tmp_path, *command)
        assert (code, err) == (0, ""), command
        # The title column's lines (a long title wraps onto the next line of its cell).
        title = " ".join(line.split("│")[5].strip() for line in out.splitlines() if line.startswith("│"))
        assert title == MARKUP_TITLE, (command, out)
    assert out.startswith("Articles with [updated], latest stored first")


def run_articles(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`crawler articles ARGS` as a subprocess on the data folder ``data``, with ``env`` added."""
    environment = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
    environment.update(CRAWLER_DATA_DIR=str(data), **env)
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "articles", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        ("mongodb://crawler:s3cret@127.0.0.1:99999/", "(Port must be an integer between 0 and 65535)"),
        ("mongodb+srv://crawler:s3cret@db.test:27017/", "(mongodb+srv:// URIs must not include a port"),
        ("mongodb://crawler:s3cret@db.test/news$", "(Bad database name)"),
    ],
)
def test_a_mongo_uri_the_driver_refuses_is_a_usage_error_naming_it(
    tmp_path: Path, uri: str, said: str
) -> None:
    done = run_articles(tmp_path, "stats", MONGO_URI=uri)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("crawler articles stats: error: MONGO_URI is 'mongodb"), line
    assert "expected mongodb://HOST[:PORT]" in line and said in line, line
    assert "s3cret" not in done.stderr


def test_export_takes_a_rule_field_named_as_a_stored_field_of_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule may name a field of its own summary, url or site (article.fields.summary: a standfirst),
    stored under the document's fields as any other; only title, body, published and author go to the
    document itself. `--fields fields.summary` was refused ("'summary' is a field of the document itself:
    give summary"), and summary is the store's summary, not the rule's field."""
    data = _published_stored(tmp_path / "data")
    _stored_with_fields(
        data, "standfirst", {"summary": "The bridge reopens.", "url": "http://news.test/canonical"}
    )
    asked = ("export", "--site", "citynews", "--fields", "url,fields.summary,fields.url")
    code, out, err = articles(capsys, monkeypatch, data, *asked)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[-1] == {
        "url": "http://news.test/standfirst",
        "fields.summary": "The bridge reopens.",
        "fields.url": "http://news.test/canonical",
    }
    assert "warning" not in err


@pytest.mark.parametrize("backend", ["sqlite", "mongo-shaped-fake"])
def test_export_writes_a_rule_field_that_is_a_list_or_a_mapping_as_json_in_csv(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's field whose value is a list or a mapping was a CSV cell in Python's notation
    ("['harbour', 'ferry']") where the document's own nested columns are JSON: it is JSON too."""
    data = _published_stored(tmp_path / "data")
    document = {
        "site": "citynews",
        "url": "http://news.test/tagged",
        "fetched_at": "2026-12-03T09:00:00Z",
        "title": "Title tagged",
        "body": "Body of the article tagged, about the city.",
        "fields": {"tags": ["harbour", "ferry"], "place": {"city": "Ålesund"}, "section": "port"},
    }
    if backend == "sqlite":
        with SqliteStore(data) as store:
            store.upsert_many([document])
    else:
        mongo = MongoStore("mongodb://fake", spool_dir=tmp_path, prefix="cli", client=FakeClient())  # type: ignore[arg-type]
        mongo.upsert_many([document])
        monkeypatch.setattr(articlescli, "open_store", lambda _env, **_options: mongo)
    asked = (
        "export",
        "--site",
        "citynews",
        "--format",
        "csv",
        "--fields",
        "url,fields.tags,fields.place,fields.section",
    )
    code, out, err = articles(capsys, monkeypatch, data, *asked)
    assert code == 0, err
    table = list(csv.reader(io.StringIO(out)))
    assert table[0] == ["url", "fields.tags", "fields.place", "fields.section"]
    assert table[-1] == ["http://news.test/tagged", '["harbour", "ferry"]', '{"city": "Ålesund"}', "port"]


def test_a_store_never_writes_into_a_week_it_found_damaged_so_its_wal_file_stays_as_it_was(
    three_weeks: Path, tmp_path: Path
) -> None:
    """A week whose file a read found damaged, with a killed writer's -wal beside it: a write of an article
    into that week, which touched none of the damaged pages, succeeded, appending to that -wal, and SQLite's
    automatic checkpoint (at 1000 pages of it) would copy its writes into the damaged file, which the
    error said to move out with it. The store writes no more into a week it found damaged: the write fails
    with the damage and what to do, the files stay as they were."""
    data = tmp_path / "data"
    damaged, wal = _damaged_beside_a_killed_writers_wal(three_weeks, data, "pages")
    left = damaged.read_bytes(), wal.read_bytes()
    with SqliteStore(data) as store:
        with pytest.raises(DamagedWeekError):
            list(store.iter_articles(week=DAMAGED_WEEK))
        with pytest.raises(StoreError) as raised:
            store.upsert(
                {
                    "site": "north",
                    "url": "http://north.test/after/1",
                    "fetched_at": "2026-10-29T10:00:00Z",
                    "title": "After",
                    "body": "Written after the week was found damaged.",
                }
            )
        assert (damaged.read_bytes(), wal.read_bytes()) == left, "the write went into the damaged week"
    assert f"{damaged}: database disk image is malformed; the file is damaged" in str(raised.value)
    assert lasting_failure(raised.value), raised.value
