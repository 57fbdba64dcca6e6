"""Discover mode, its parts: the rule's ``discover`` section checked (errors name the file, key and value),
the relevance of a page to a topic (English and Chinese), the features of a link and the online link
model (a step checked by hand), the model shared through the real embedded Redis, the frontier (Bloom
filter, budget, queue slots) and the host bandit. Real crawls of the generated web are in
tests/test_discover_crawl.py."""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lxml.html
import pytest
import redis
from lossyredis import LossyRelay
from scrapy import Request

from crawler.demo.web import TOPIC, TOPIC_KEYWORDS, SimWeb
from crawler.discover.frontier import Entry, Frontier, slot_of
from crawler.discover.links import LEARNING_RATE, LinkModel, link_features, page_links, tokens
from crawler.discover.shared import SharedModel
from crawler.discover.topic import Relevance, Topic, words
from crawler.items import Article, Discovered
from crawler.keys import Keys
from crawler.redisio.bloom import RedisBloom
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.queue import LeasedQueue
from crawler.requests import JobCounts, Work, discover_request, enqueue_job
from crawler.rules import RuleErrors, load_rules, parse_rule
from crawler.rules.model import BEST_FIRST, BREADTH_FIRST, LEARNED, base_url
from crawler.settings import QREAD_ALGORITHM, ROBOTS_MAX_AGE_SECONDS
from crawler.worker.pipelines.discover import DiscoverPipeline, NotRelevant
from crawler.worker.scheduler import leases_ending
from crawler.worker.textjob import article_text

DISCOVER_RULE = """
name: Energy news anywhere
discover:
  topic:
    keywords: [solar, wind turbine, battery storage]
  seeds: ["https://portal.test/energy/", "https://news.test/"]
  budget: 50
  max_depth: 2
  domains: [portal.test, news.test, blog.test]
  deny_domains: [ads.blog.test]
  threshold: 0.4
  strategy: best-first
politeness: {delay: 1, concurrency: 2}
"""


# --- the rule -------------------------------------------------------------------------------------------


def rules_check(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``crawler rules check`` run in ``cwd`` with ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "rules", "check"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_a_discover_rule_needs_no_domains_start_urls_or_index() -> None:
    rule = parse_rule(DISCOVER_RULE, site="energy")
    discover = rule.discover
    assert discover is not None
    assert rule.domains == () and rule.start_urls == ()
    assert discover.keywords == ("solar", "wind turbine", "battery storage")
    assert discover.seeds == ("https://portal.test/energy/", "https://news.test/")
    assert (discover.budget, discover.max_depth, discover.threshold) == (50, 2, 0.4)
    assert discover.strategy == BEST_FIRST
    assert rule.known_domains == ("portal.test", "news.test", "blog.test")
    assert discover.allows_host("www.blog.test") and discover.allows_host("NEWS.test.")
    assert not discover.allows_host("ads.blog.test") and not discover.allows_host("x.ads.blog.test")
    assert not discover.allows_host("elsewhere.test") and not discover.allows_host(None)
    anywhere = parse_rule(
        DISCOVER_RULE.replace("  domains: [portal.test, news.test, blog.test]\n", ""), site="e"
    )
    assert anywhere.discover is not None and anywhere.discover.allows_host("elsewhere.test")
    learned = parse_rule(DISCOVER_RULE.replace("  strategy: best-first\n", ""), site="e").discover
    assert learned is not None and learned.strategy == LEARNED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("  strategy: best-first", "  strategy: random"), 'discover.strategy: unknown strategy "random"'),
        (("  budget: 50", "  budget: 0"), "discover.budget: out of range: 0"),
        (("  threshold: 0.4", "  threshold: 1.5"), "discover.threshold: 1.5 is 1 or more"),
        (('  seeds: ["https://portal.test/energy/", "https://news.test/"]\n', ""), "discover.seeds: missing"),
        (('"https://news.test/"]', '"https://other.test/"]'), 'discover.seeds[1]: host "other.test"'),
        (
            ("    keywords: [solar, wind turbine, battery storage]", "    keywords: []"),
            "discover.topic.keywords",
        ),
        (("    keywords: [solar, wind turbine, battery storage]", "    sites: []"), "discover.topic.sites"),
        (
            ("    keywords: [solar, wind turbine, battery storage]", "    colour: red"),
            'discover.topic.colour: unknown key "colour"',
        ),
        (("  budget: 50", "  pages: 50"), 'discover.pages: unknown key "pages"'),
        (("[ads.blog.test]", "[ads blog]"), 'discover.deny_domains[0]: not a host name: "ads blog"'),
    ],
)
def test_a_bad_discover_section_is_named_with_its_key_and_value(
    change: tuple[str, str], message: str
) -> None:
    assert change[0] in DISCOVER_RULE
    with pytest.raises(RuleErrors) as raised:
        parse_rule(DISCOVER_RULE.replace(*change), site="energy")
    assert any(str(error).startswith(f"rules/energy.yaml: {message}") for error in raised.value.errors), [
        str(error) for error in raised.value.errors
    ]


def test_a_discover_section_missing_a_key_names_every_key_it_takes() -> None:
    with pytest.raises(RuleErrors) as raised:
        parse_rule(
            DISCOVER_RULE.replace('  seeds: ["https://portal.test/energy/", "https://news.test/"]\n', ""),
            site="e",
        )
    assert [str(error) for error in raised.value.errors] == [
        "rules/e.yaml: discover.seeds: missing (expected a mapping with topic, seeds, and optionally budget,"
        " max_depth, domains, deny_domains, threshold, strategy)"
    ]


def test_allow_private_addresses_on_a_discover_rule_without_domains_is_an_error_saying_to_list_them(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    anywhere = "allow_private_addresses: true\n" + DISCOVER_RULE.replace(
        "  domains: [portal.test, news.test, blog.test]\n", ""
    )
    (rules / "energy.yaml").write_text(anywhere, "utf-8")
    (rules / "listed.yaml").write_text("allow_private_addresses: true\n" + DISCOVER_RULE, "utf-8")
    env = {**os.environ, "CRAWLER_RULES_DIR": str(rules), "CRAWLER_DATA_DIR": str(tmp_path / "data")}
    checked = rules_check(tmp_path, env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert (
        "rules/energy.yaml: allow_private_addresses: applies to discover.domains, which this discover rule"
        " does not have (expected the private hosts listed in discover.domains)"
    ) in checked.stdout, checked.stdout
    assert "listed.yaml" not in checked.stdout, checked.stdout
    listed = parse_rule("allow_private_addresses: true\n" + DISCOVER_RULE, site="energy")
    assert "list the host in discover.domains" in listed.private_hint("allows it")


def test_every_error_of_a_discover_rule_is_reported_together(tmp_path: Path) -> None:
    anywhere = "allow_private_addresses: true\n" + DISCOVER_RULE.replace(
        "  domains: [portal.test, news.test, blog.test]\n", ""
    )
    private = "rules/energy.yaml: allow_private_addresses: applies to discover.domains"
    for change, other in (
        (("  threshold: 0.4", "  threshold: 1"), "rules/energy.yaml: discover.threshold: 1.0 is 1 or more"),
        (
            ("    keywords: [solar, wind turbine, battery storage]", "    examples: [nope.html]"),
            'rules/energy.yaml: discover.topic.examples[0]: cannot read "nope.html"',
        ),
    ):
        with pytest.raises(RuleErrors) as raised:
            parse_rule(anywhere.replace(*change), site="energy", file=str(tmp_path / "rules/energy.yaml"))
        errors = [str(error).removeprefix(f"{tmp_path}/") for error in raised.value.errors]
        assert len(errors) == 2, errors
        assert any(error.startswith(private) for error in errors), errors
        assert any(error.startswith(other) for error in errors), errors


def test_rules_check_warns_of_a_topic_site_that_names_no_rule(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    topic = "    keywords: [solar, wind turbine, battery storage]\n"
    (rules / "energy.yaml").write_text(
        DISCOVER_RULE.replace(topic, topic + "    sites: [citynews, grid-news, energy]\n"), "utf-8"
    )
    (rules / "citynewz.yaml").write_text("name: [broken\n", "utf-8")
    (rules / "grid-news.yaml").write_text(DISCOVER_RULE, "utf-8")
    checked = rules_check(tmp_path, {**os.environ, "CRAWLER_RULES_DIR": str(rules)})
    lines = checked.stdout.splitlines()
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert lines[1:] == [
        f'{rules / "energy.yaml"}: discover.topic.sites: warning: no rule for site "citynews" in {rules};'
        ' did you mean "citynewz"? (expected a site id of a rule file there: citynewz, energy, grid-news)',
        "2 rules ok, 1 file with 1 error, 1 warning",
    ], lines
    assert lines[0].startswith(f"{rules / 'citynewz.yaml'}: line ")


def test_rules_check_warns_of_seeds_past_the_budget_which_are_never_fetched(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "energy.yaml").write_text(DISCOVER_RULE.replace("budget: 50", "budget: 1"), "utf-8")
    checked = rules_check(tmp_path, {**os.environ, "CRAWLER_RULES_DIR": str(rules)})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        f"{rules / 'energy.yaml'}: discover.budget: warning: budget 1 is smaller than the 2 seeds: the last"
        " seed (https://news.test/) is never fetched (expected a budget over 2, the seeds' pages and the"
        " pages their links lead to)",
        "1 rule ok, 1 warning",
    ]


def test_example_articles_are_read_next_to_the_rule_and_a_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "one.html").write_text(
        "<html><body><article><h1>Solar farms</h1>"
        + "<p>The solar farm feeds the grid with cheap electricity every sunny day of the year.</p>" * 8
        + "</article><footer>Contact us</footer></body></html>",
        "utf-8",
    )
    (tmp_path / "examples" / "two.txt").write_text("Wind and solar power keep the grid green.\n" * 5, "utf-8")
    text = DISCOVER_RULE.replace(
        "    keywords: [solar, wind turbine, battery storage]",
        "    examples: [examples/one.html, examples/two.txt]",
    )
    (tmp_path / "energy.yaml").write_text(text, "utf-8")
    (tmp_path / "broken.yaml").write_text(text.replace("two.txt", "three.txt"), "utf-8")
    ruleset = load_rules(tmp_path)
    assert list(ruleset.rules) == ["energy"], "the broken rule never stops the other"
    discover = ruleset.rules["energy"].discover
    assert discover is not None and len(discover.examples) == 2
    assert "Contact us" not in discover.examples[0], "an HTML example's main text"
    assert any(
        'broken.yaml: discover.topic.examples[1]: cannot read "examples/three.txt"' in str(error)
        for error in ruleset.errors
    ), [str(error) for error in ruleset.errors]


@pytest.mark.parametrize(
    ("encoded", "head"),
    [
        (lambda text: text.encode("gbk"), '<meta charset="gbk">'),
        (lambda text: text.encode("gbk"), ""),
        (lambda text: b"\xff\xfe" + text.encode("utf-16-le"), ""),
    ],
    ids=["gbk-labelled", "gbk-unlabelled", "utf-16-bom"],
)
def test_an_example_article_is_decoded_as_a_page_is(
    tmp_path: Path, encoded: Callable[[str], bytes], head: str
) -> None:
    story = "太阳能发电和风力发电为电网提供了越来越多的电力，储能电站在晚高峰时段向电网供电。" * 6
    page = f"<html><head>{head}</head><body><article><h1>新能源</h1><p>{story}</p></article></body></html>"
    (tmp_path / "zh.html").write_bytes(encoded(page))
    text = DISCOVER_RULE.replace(
        "    keywords: [solar, wind turbine, battery storage]", "    examples: [zh.html]"
    )
    (tmp_path / "energy.yaml").write_text(text, "utf-8")
    discover = load_rules(tmp_path).rules["energy"].discover
    assert discover is not None and discover.examples[0] == story


def test_temp_url_with_a_discover_rule_says_how_to_crawl_it_or_judge_that_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crawler.cli.main import main

    (tmp_path / "energy.yaml").write_text(DISCOVER_RULE, "utf-8")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    data = tmp_path / "data"
    code = main(
        [
            "--rules-dir",
            str(tmp_path),
            "--data-dir",
            str(data),
            "temp",
            "energy",
            "--url",
            "https://news.test/a/1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    folders = f"--data-dir {data} --rules-dir {tmp_path}"
    assert "site energy is a discover crawl" in err, err
    assert f"`crawler {folders} temp energy` without --url" in err, err
    assert f"`crawler {folders} rules try energy https://news.test/a/1`" in err, err
    assert not data.exists(), "refused before anything started"


def test_temp_stored_with_a_discover_rule_is_refused_and_says_to_crawl_it_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crawler.cli.main import main

    (tmp_path / "energy.yaml").write_text(DISCOVER_RULE, "utf-8")
    monkeypatch.setenv("CRAWLER_COMMAND", "crawler")
    data = tmp_path / "data"
    code = main(["--rules-dir", str(tmp_path), "--data-dir", str(data), "temp", "energy", "--stored"])
    err = capsys.readouterr().err
    assert code == 2, err
    folders = f"--data-dir {data} --rules-dir {tmp_path}"
    assert err.startswith(
        f"crawler temp: error: --stored: site energy is a discover crawl ({tmp_path / 'energy.yaml'}): it"
        " judges each page as it reads it from its seeds, and reads no page again by a rule;"
    ), err
    assert f"`crawler {folders} temp energy` without --stored" in err, err
    assert not data.exists(), "refused before anything started"


# --- relevance --------------------------------------------------------------------------------------------

ON_TOPIC = (
    "Offshore wind turbines and solar farms now supply a third of the grid's electricity. Battery storage "
    "smooths the evening peak, and the new solar parks feed the batteries at noon. Engineers say the wind "
    "turbine fleet will double, and battery storage sites are being built beside every substation. "
) * 3
IN_PASSING = (
    "The football club won the derby on Saturday after a late penalty. The coach praised the squad, the "
    "keeper saved two shots, and the supporters sang until the end. The stadium, lit by a solar roof, was "
    "full. "
) + (
    "Next week the team travels north for the cup tie, and the captain is fit again. The manager said the "
    "young players had earned their places and the club would sign a new striker before the winter. "
) * 3


def test_a_page_about_the_topic_scores_high_and_a_passing_mention_low() -> None:
    topic = Topic.build(["solar", "wind turbine", "battery storage", "grid"])
    about = topic.relevance("Solar and wind power the grid", ON_TOPIC)
    passing = topic.relevance("Derby won late", IN_PASSING)
    assert about.score >= 0.9 and passing.score <= 0.3, (about, passing)
    assert dict(about.terms)["solar"] >= 6 and dict(about.terms)["wind turbine"] == 6, about.terms
    assert about.why.startswith("topic terms are") and "solar ×" in about.why
    assert dict(passing.terms) == {"solar": 1}
    assert topic.relevance(None, "").why == "no topic term in 0 words"
    # A short page's share is of MIN_WORDS words (100), as the score counts it: 3 of 100 is 3%, not 3 of its
    # 5 words (stop words left out).
    short = topic.relevance(None, "Solar panels on the grid, solar at noon.")
    assert short.why.startswith("topic terms are 3.0% of 5 words, counted as 100, 2 distinct"), short.why
    assert not short.why.endswith("...")
    # More distinct terms than the reason names: it says so.
    many = Topic.build(["solar", "grid", "battery", "turbine", "inverter", "panel", "storage", "meter"])
    cut = many.relevance(None, "Solar grid battery turbine inverter panel storage meter. " * 10)
    assert cut.why.endswith(", ...") and "8 distinct" in cut.why and len(cut.terms) == 6, cut.why
    assert words("Batteries, turbines and the grid's grids") == ["battery", "turbine", "grid", "grid"]


def test_a_short_page_that_names_two_topic_words_in_a_box_of_headlines_is_not_relevant() -> None:
    # The generated web's plain hosts (never on the topic) have section indexes and home pages of about 50
    # words whose only topic words are two headlines of their "Trending" box, which qRead keeps: read as a
    # discover crawl reads them, they scored 0.633 (2 of 60 words) and were stored, up to 3 of them in a
    # crawl of 90 pages (tests/test_discover_crawl.py). The topic's own section indexes name three distinct
    # terms or more, and stay.
    web = SimWeb(3, 40)
    origin = [f"http://127.0.0.1:{20000 + index}" for index in range(len(web.hosts))]
    topic = Topic.build(TOPIC_KEYWORDS)
    off: dict[tuple[int, str], Relevance] = {}
    on: dict[tuple[int, str], Relevance] = {}
    for host in web.hosts[1:]:
        for path in ("/", *(f"/{section.slug}/" for section in host.sections)):
            html = web.page(host.index, path, origin)
            assert html is not None
            title = str(lxml.html.fromstring(html).xpath("normalize-space(//title)"))
            found = article_text(
                html, origin[host.index] + path, title, None, QREAD_ALGORITHM, (), topic=topic
            )
            assert found.relevance is not None
            (on if web.about_topic(host.index, path) else off)[(host.index, path)] = found.relevance
    assert {page: r.score for page, r in off.items() if r.score >= 0.5} == {}
    assert off[(24, "/recipes-0/")].why.startswith(
        "topic terms are 2.0% of 57 words, counted as 100, 2 distinct"
    )
    named = [r.score for r in on.values() if len(r.terms) >= 3]
    assert len(named) >= 10 and min(named) >= 0.5, named


def test_chinese_pages_are_segmented_by_jieba_and_scored() -> None:
    topic = Topic.build(["光伏", "储能", "新能源汽车", "电网"])
    about = topic.relevance(
        "光伏和储能助力电网",
        "今年光伏装机容量大幅增长，储能电站建设加快。电网公司表示，新能源汽车充电需求上升，光伏发电和储能"
        "系统将共同保障电网稳定。多地出台政策支持光伏与储能项目。" * 2,
    )
    unrelated = topic.relevance(
        "足球联赛", "昨晚的足球联赛中，主队在最后时刻打进制胜一球，球迷们欢呼雀跃。" * 3
    )
    assert about.score >= 0.9 and unrelated.score == 0.0, (about, unrelated)
    assert "光伏" in dict(about.terms) and "新能源汽车" in dict(about.terms)
    mixed = Topic.build(["solar", "wind turbine", "battery storage", "grid", "光伏"])
    assert mixed.summary == "2 terms, 2 phrases and 1 Chinese keyword", "each keyword counted"
    assert Topic.build(["solar"]).summary == "1 term and 0 phrases"
    assert words("新能源汽车销量") == ["新能源", "汽车销量"], "jieba cuts the keyword otherwise here"
    assert dict(topic.relevance(None, "新能源汽车销量大增").terms) == {"新能源汽车": 1}, "found as written"


def test_the_examples_give_the_words_most_of_them_share() -> None:
    examples = [
        "Heat pumps warm homes; heat pumps save gas. Insulation helps the pumps.",
        "A heat pump moves heat. Pumps and insulation cut bills.",
        "Football scores and heat.",
    ]
    topic = Topic.build([], examples)
    assert topic.terms["pump"] == pytest.approx(0.5 * 2 / 3, abs=0.001)
    assert topic.terms["heat"] == 0.5, "every example holds it"
    assert "football" not in topic.terms, "one example of three"
    assert Topic.build(["pump"], examples).terms["pump"] == 1.0, "a keyword keeps its weight"


# --- links and the link model ---------------------------------------------------------------------------


def test_a_pages_links_come_with_their_anchor_and_context_text() -> None:
    page = (
        "<html><head><base href='http://h.test/news/'></head><body><nav><ul><li><a href='/a'>Home</a></li>"
        "<li><a href='b.html#top'>Sport</a></li></ul></nav><p>Prices fell as <a href='http://x.test/c'>"
        "solar panels</a> got cheaper this year.</p><a href='mailto:x@h.test'>mail</a><a href='#'>top</a>"
        "<a href='/a'>Home again</a></body></html>"
    )
    assert page_links(page, "http://h.test/other/") == [
        ("http://h.test/a", "Home", "Home Sport"),
        ("http://h.test/news/b.html", "Sport", "Home Sport"),
        ("http://x.test/c", "solar panels", "Prices fell as solar panels got cheaper this year."),
    ]
    assert page_links("", "http://h.test/") == []
    broken = (
        "<a href='http://h.test:99999/x'>port</a><a href='http://[::1/x'>v6</a><a href='http://a b/'>sp</a>"
    )
    assert page_links(f"<p>{broken}<a href='/ok'>ok</a></p>", "http://h.test/") == [
        ("http://h.test/ok", "ok", "port v6 sp ok")
    ], "links no request can be made of are left out"
    assert tokens("Solar 2026 光伏发电") == ["solar", "光伏", "伏发", "发电"]


def test_the_links_of_a_page_nested_deeper_than_the_parser_reads_are_all_read() -> None:
    """page_links parsed a page with lxml.html's own parser, which stops at 256 levels of nesting (no
    huge_tree), all after lost: of a listing whose 3,000 items each leave a <div> open, it read the first
    253 links. It reads pages as the extractors do (parse_tree: 2,048 levels, a page deeper read again
    flat, its links kept)."""
    items = "".join(f"<div class='item'><a href='/news/{n}'>Story {n}</a>" for n in range(3000))
    links = page_links(f"<html><body>{items}<p>End</p></body></html>", "http://h.test/", limit=5000)
    assert [(url, anchor) for url, anchor, _ in links] == [
        (f"http://h.test/news/{n}", f"Story {n}") for n in range(3000)
    ]
    declared = "<?xml version='1.0' encoding='utf-8'?><html><body><a href='/a'>A</a></body></html>"
    assert page_links(declared, "http://h.test/") == [("http://h.test/a", "A", "A")], (
        "an XML declaration naming the encoding: lxml refused the page as a str"
    )


def test_a_pages_links_resolve_against_the_base_the_crawl_takes() -> None:
    page = (
        "<html><head><base target='_blank'><base href='http://h.test/news/'></head>"
        "<body><a href='b.html'>Sport</a></body></html>"
    )
    root = lxml.html.document_fromstring(page)
    assert base_url("http://h.test/other/", root) == "http://h.test/news/"
    assert [url for url, _, _ in page_links(page, "http://h.test/other/")] == ["http://h.test/news/b.html"], (
        "a first <base> with no href is passed over, as the crawl's rules pass it"
    )
    ftp = "<html><head><base href='ftp://h.test/files/'></head><body><a href='b.html'>b</a></body></html>"
    assert [url for url, _, _ in page_links(ftp, "http://h.test/other/")] == ["http://h.test/other/b.html"]


def test_link_features_are_the_same_in_every_process() -> None:
    here = link_features("http://h.test/energy/solar-farm-12.html", "Solar farm", "news", 0.7, 2)
    code = (
        "from crawler.discover.links import link_features as f;"
        "print(sorted(f('http://h.test/energy/solar-farm-12.html', 'Solar farm', 'news', 0.7, 2)))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert there.stdout.strip() == str(sorted(here)), "CRC-32, never Python's salted hash"
    named = [
        "h=h.test",
        "u=energy",
        "u=solar",
        "u=farm",
        "u=N",
        "u=html",
        "a=solar",
        "a=farm",
        "c=news",
        "s=3",
        "d=2",
        "b",
    ]
    assert {zlib.crc32(name.encode()) & 0xFFFFF for name in named} <= set(here)


def test_one_step_of_the_link_model_is_logistic_regression_with_adagrad() -> None:
    model = LinkModel()
    assert model.learn([1, 2], 1.0) == 0.5, "an empty model says one chance in two"
    # By hand: gradient 0.5 - 1 = -0.5; each feature's squares 0.25; step 0.5 * -0.5 / 0.5 = -0.5.
    assert model.weights == {1: LEARNING_RATE, 2: LEARNING_RATE}
    assert model.squares == {1: 0.25, 2: 0.25}
    predicted = model.value([1, 2])
    assert predicted == pytest.approx(1 / (1 + math.exp(-2 * LEARNING_RATE)))
    model.learn([2, 3], 0.0)
    # By hand: the prediction sigmoid(w2 + w3) = sigmoid(0.5) is the gradient; feature 3's first step is
    # the whole rate, feature 2's is scaled by the root of both its squared gradients.
    gradient = 1 / (1 + math.exp(-LEARNING_RATE))
    assert model.weights[3] == pytest.approx(-LEARNING_RATE)
    assert model.weights[2] == pytest.approx(
        LEARNING_RATE - LEARNING_RATE * gradient / math.sqrt(0.25 + gradient**2)
    )
    assert model.updates == 2
    changes = model.take_changes()
    assert changes[2][0] == pytest.approx(model.weights[2]) and model.changes == {}


def test_the_link_model_learns_which_links_lead_to_the_topic() -> None:
    rng = random.Random(3)
    model = LinkModel()
    for _ in range(400):
        relevant = rng.random() < 0.3
        section = "energy" if relevant != (rng.random() < 0.1) else rng.choice(["sport", "food", "film"])
        model.learn(
            link_features(f"http://h.test/{section}/{rng.randrange(999)}.html", "", "", 0.5, 2), relevant
        )
    energy = model.value(link_features("http://h.test/energy/77.html", "", "", 0.5, 2))
    sport = model.value(link_features("http://h.test/sport/77.html", "", "", 0.5, 2))
    assert energy > 0.7 and sport < 0.2, (energy, sport)


# --- shared through Redis -----------------------------------------------------------------------------------


def test_workers_learn_from_each_others_pages_through_redis(redis_client: Any) -> None:
    keys = Keys("crawler")
    first = SharedModel(redis_client, keys, "energy", "worker-1", sync_every=2)
    second = SharedModel(redis_client, keys, "energy", "worker-2", sync_every=2)
    first.load()
    second.load()
    first.model.learn([1, 2], 1.0)
    first.learnt()
    second.model.learn([2, 3], 0.0)
    second.learnt()
    assert second.model.weights.get(1) is None, "not shared before a sync"
    first.model.learn([1], 1.0)
    first.learnt()  # the second page: shared
    second.sync()
    third = SharedModel(redis_client, keys, "energy", "worker-3")
    third.load()
    for model in (second, third):
        assert model.model.weights[1] == pytest.approx(first.model.weights[1])
    first.sync()
    assert first.model.weights[3] == pytest.approx(second.model.weights[3]), "both ways"
    assert first.model.weights[2] == pytest.approx(second.model.weights[2]), "the sum of both steps"
    third.sync()
    assert third.model.weights == pytest.approx(first.model.weights)
    assert first.version == second.version == third.version != "0-0"


def test_a_worker_behind_the_trimmed_log_reloads_the_whole_model(redis_client: Any) -> None:
    keys = Keys("crawler")
    ahead = SharedModel(redis_client, keys, "energy", "ahead")
    behind = SharedModel(redis_client, keys, "energy", "behind")
    ahead.load()
    behind.load()
    for feature in range(5):
        ahead.model.learn([feature], 1.0)
        ahead.sync()
    redis_client.xtrim(ahead.log_key, maxlen=1, approximate=False)
    behind.sync()
    assert behind.model.weights == pytest.approx(ahead.model.weights), "the entries trimmed away are not lost"


@contextmanager
def _relayed_model(redis_server: str) -> Iterator[tuple[SharedModel, LossyRelay]]:
    """Worker "w"'s model, loaded through a LossyRelay to the Redis of redis_server, and the relay."""
    with LossyRelay(redis_server.removeprefix("unix://")) as relay:
        client = connect(relay.url)
        try:
            model = SharedModel(client, Keys("crawler"), "energy", "w")
            model.load()
            yield model, relay
        finally:
            client.close()


def _loaded_by_another_worker(redis_client: Any) -> SharedModel:
    other = SharedModel(redis_client, Keys("crawler"), "energy", "other")
    other.load()
    return other


def test_a_sync_that_redis_refuses_keeps_what_was_learnt(redis_client: Any, redis_server: str) -> None:
    with _relayed_model(redis_server) as (away, relay):
        away.model.learn([7], 1.0)
        learnt = away.model.weights[7]
        relay.cut()
        with pytest.raises(redis.ConnectionError):
            away.sync()
        relay.cut(False)
        away.sync()
    other = _loaded_by_another_worker(redis_client)
    assert other.model.weights == {7: pytest.approx(learnt)}, "shared at the next sync"


def test_a_share_whose_reply_was_lost_is_added_once(redis_client: Any, redis_server: str) -> None:
    """A connection that drops after Redis ran a sync's share and before its reply arrived: the sync failed
    and kept the changes, shared again at the next sync, and the model's sum counted that worker's steps
    twice. Each share is numbered, sent again with its number, and Redis adds a number once
    (crawler.redisio.once)."""
    with _relayed_model(redis_server) as (worker, relay):
        worker.model.learn([6], 1.0)
        worker.sync()  # Redis knows the share's script: the replies lost are of shares it ran
        for feature in (7, 8):
            worker.model.learn([feature], 1.0)
            relay.lose(b":model:v1:w")
            with pytest.raises(redis.ConnectionError):
                worker.sync()  # the second sends the first share again, its reply lost again
        worker.model.learn([9], 1.0)
        worker.sync()
        lost = relay.lost
    other = _loaded_by_another_worker(redis_client)
    assert lost == 2
    assert other.model.weights == pytest.approx(worker.model.weights), "each step added once"


def test_a_sync_whose_share_went_through_and_whose_catch_up_failed_shares_it_once(redis_client: Any) -> None:
    """A sync shares what the copy learnt (one script), then reads the other workers' entries. A Redis that
    took the share and failed the read after it (a connection cut between the two, a user who may not read
    the log) had the changes, written already, kept for the next sync, which added them again: the model's
    sum counted that worker's steps twice. What was shared is not shared again."""
    keys = Keys("crawler")
    socket_path = redis_client.connection_pool.connection_kwargs["path"]
    redis_client.acl_setuser(
        "learner", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-xrange"]
    )
    learner = redis.Redis(unix_socket_path=socket_path, username="learner", password="pw")
    try:
        worker = SharedModel(learner, keys, "energy", "w")
        worker.load()
        worker.model.learn([7], 1.0)
        learnt = worker.model.weights[7]
        with pytest.raises(redis.exceptions.NoPermissionError):
            worker.sync()
        redis_client.acl_setuser("learner", commands=["+xrange"])
        worker.model.learn([8], 1.0)
        worker.sync()
    finally:
        learner.close()
        redis_client.acl_deluser("learner")
    other = SharedModel(redis_client, keys, "energy", "other")
    other.load()
    assert other.model.weights[7] == pytest.approx(learnt), "shared once"


# --- the frontier and the bandit --------------------------------------------------------------------------


def _entry(url: str, value: float, depth: int = 1, source: float = 0.0) -> Entry:
    return Entry(url, depth, (1, 2), source, value)


def _frontier(server: Any, strategy: str = LEARNED, seed: int = 0) -> tuple[Frontier, RedisBloom]:
    keys = Keys("crawler")
    bloom = RedisBloom(server, keys.bloom, capacity=10_000, error_rate=0.001)
    return Frontier(server, keys, "energy", strategy=strategy, per_host=3, rng=random.Random(seed)), bloom


def test_links_are_kept_once_per_url_and_a_host_keeps_its_best(redis_client: Any) -> None:
    frontier, bloom = _frontier(redis_client)
    urls = [f"http://a.test/{n}" for n in range(5)]
    entries = [_entry(url, value=n / 10) for n, url in enumerate(urls)]
    assert frontier.keep(bloom, [u.encode() for u in urls], ["a.test"] * 5, entries) == 5
    assert frontier.keep(bloom, [u.encode() for u in urls], ["a.test"] * 5, entries) == 0, "seen: never again"
    assert frontier.size() == 3, "per_host: the lowest went"
    members = redis_client.zrange(f"{frontier.target.prefix}a.test", 0, -1)
    assert [Entry.decode(member).url for member in members] == urls[2:]
    assert float(redis_client.hget(frontier.target.best, "a.test")) == pytest.approx(0.4)


def test_a_seeding_discover_job_queued_again_counts_each_seed_once(redis_client: Any) -> None:
    """A discover job whose queueing was cut short (its temp crawl killed, the scheduler stopped as it queued
    a grab: the job keeps ``seeding``) is queued again, the same job: a seed a worker had fetched meanwhile
    was queued again, fetched twice, and counted in the job's ``issued`` again (3 of a budget taken by 2
    seeds). Each seed is queued and counted once in its job."""
    keys = Keys("crawler")
    rule = parse_rule(DISCOVER_RULE, site="energy")
    job = enqueue_job(redis_client, keys, [rule], temp_of="energy")
    queue = LeasedQueue(redis_client, keys)
    fetched = queue.pop()
    assert fetched.member is not None and fetched.site is not None
    assert queue.ack(fetched.member, site=fetched.site, job=job)
    redis_client.hset(keys.job(job), "seeding", 1)  # as its crawl, killed before all was queued, left it
    enqueue_job(redis_client, keys, [rule], job=job, temp_of="energy")
    assert int(redis_client.hget(keys.job(job), "issued") or 0) == 2
    assert JobCounts.read(redis_client, keys, job).pending == 1, "the seed not fetched alone"
    # Cut between the second seed's queueing and its count: queued again, it is counted then.
    redis_client.hset(keys.job(job), mapping={"seeded": 1, "issued": 1})
    enqueue_job(redis_client, keys, [rule], job=job, temp_of="energy")
    assert int(redis_client.hget(keys.job(job), "issued") or 0) == 2
    assert JobCounts.read(redis_client, keys, job).pending == 1


def test_release_queues_best_entries_in_their_hosts_slots_and_never_passes_the_budget(
    redis_client: Any,
) -> None:
    keys = Keys("crawler")
    job = "j1"
    redis_client.hset(keys.job(job), mapping={"budget": 6, "issued": 0})
    frontiers = [_frontier(redis_client, BEST_FIRST, seed)[0] for seed in range(4)]
    frontier, bloom = _frontier(redis_client, BEST_FIRST)
    hosts = [f"h{n}.test" for n in range(8)]
    urls = [f"http://{host}/{k}" for host in hosts for k in range(3)]
    entries = [_entry(url, 0.0, source=(n % 7) / 10) for n, url in enumerate(urls)]
    frontier.keep(bloom, [u.encode() for u in urls], [urlsplit_host(u) for u in urls], entries)

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return f'{{"url": "{entry.url}"}}'.encode(), int(entry.source * 100)

    released: list[int] = []

    def release(each: Frontier) -> None:
        released.extend(
            each.release(3, job=job, budget=6, delay=2.0, concurrency=1, request_of=request_of)[0]
            for _ in range(5)
        )

    threads = [threading.Thread(target=release, args=(each,)) for each in frontiers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(released) == 6 and int(redis_client.hget(keys.job(job), "issued")) == 6
    assert int(redis_client.hget(keys.job(job), "pending")) == 6
    queue = LeasedQueue(redis_client, keys)
    assert len(queue) == 6 and frontier.size() == len(urls) - 6, (
        "each entry once, in the queue or the frontier"
    )
    slots = [key.decode().split(":queue:", 1)[1] for key in redis_client.keys("crawler:queue:*")]
    assert all(slot.startswith("energy@h") for slot in slots)
    polite = redis_client.hgetall(keys.polite(slots[0]))
    assert (float(polite[b"delay"]), int(polite[b"concurrency"])) == (2.0, 1), (
        "the rule's politeness per host"
    )
    assert slot_of("energy", "h1.test:8080") == "energy@h1.test:8080"


def test_a_late_page_of_a_discover_job_whose_hash_expired_does_not_write_the_hash_again(
    redis_client: Any,
) -> None:
    """A discover job's hash expires after it ended (SCHEDULE_JOB_KEEP_HOURS). A late page of it (its lease
    outlived the hash) wrote the hash again, with no time-to-live, kept for ever: its settling counted
    ``links_seen``, a refund of a request robots.txt disallows ``issued`` -1, and a release, reading no
    ``issued``, found the whole budget left and queued as much again, the job pending again. Nothing of
    the job is written now, and nothing is released for it (its links stay for the rule's next crawl); its
    host is rewarded as before, and a job whose hash is there gets its budget back."""
    keys = Keys("crawler")
    frontier, bloom = _frontier(redis_client, BEST_FIRST)
    urls = [f"http://a.test/{n}" for n in range(3)]
    frontier.keep(bloom, [u.encode() for u in urls], ["a.test"] * 3, [_entry(u, 0.5) for u in urls])

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return json.dumps({"url": entry.url, "meta": {"site": "energy", "job": "gone"}}).encode(), 0

    released = frontier.release(2, job="gone", budget=10, delay=0, concurrency=1, request_of=request_of)
    assert released == (0, 0) and frontier.size() == 3
    assert frontier.settle(frontier.record("lease-1"), "a.test", True, 5, keys.job("gone"), 60) == 0
    assert frontier.refund(frontier.record("lease-2"), keys.job("gone"), 60, "a.test")
    assert not redis_client.exists(keys.job("gone"))
    assert len(LeasedQueue(redis_client, keys)) == 0
    good, bad = (redis_client.hget(f"{frontier.base}:{name}", "a.test") for name in ("good", "bad"))
    assert (good, bad) == (b"1", b"1"), "its host rewarded as before"
    redis_client.hset(keys.job("live"), "issued", 2)
    assert frontier.refund(frontier.record("lease-3"), keys.job("live"), 60, "a.test")
    assert redis_client.hget(keys.job("live"), "issued") == b"1"


def test_a_hosts_crawl_delay_goes_once_its_rule_stops_obeying_robots_txt(redis_client: Any) -> None:
    # A host met while the rule obeyed robots.txt kept the crawl-delay its robots.txt asked for (its slot's
    # politeness is written once, HSETNX): once the rule says obey_robots: false, no robots.txt read lowers
    # it again, as configure() drops the site's own.
    keys = Keys("crawler")
    job = "j1"
    redis_client.hset(keys.job(job), mapping={"budget": 10, "issued": 0})
    frontier, bloom = _frontier(redis_client, BEST_FIRST)
    urls = ["http://a.test/1", "http://a.test/2"]
    frontier.keep(bloom, [u.encode() for u in urls], ["a.test"] * 2, [_entry(u, 0.5) for u in urls])
    queue = LeasedQueue(redis_client, keys)
    slot = slot_of("energy", "a.test")

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return json.dumps({"url": entry.url, "meta": {"site": "energy", "slot": slot}}).encode(), 1

    frontier.release(1, job=job, budget=10, delay=0.5, concurrency=1, request_of=request_of)
    queue.set_crawl_delay(slot, 5.0, "a.test")
    assert redis_client.hlen(keys.crawl_delays(slot)) == 1
    frontier.release(
        1, job=job, budget=10, delay=0.5, concurrency=1, request_of=request_of, obey_robots=False
    )
    assert float(redis_client.hget(keys.polite(slot), "crawl_delay")) == 0.0
    saved = json.loads(redis_client.hget(keys.politeness, slot))
    assert float(saved["crawl_delay"]) == 0.0, "nor does the pop restore it"
    assert float(redis_client.hget(keys.polite(slot), "delay")) == 0.5, "the rule's own delay is kept"
    assert not redis_client.exists(keys.crawl_delays(slot)), "nor its host's, counted again once obeyed"


def urlsplit_host(url: str) -> str:
    return url.split("/")[2]


def test_the_bandit_gives_the_budget_to_hosts_that_gave_relevant_pages_and_still_tries_new_ones(
    redis_client: Any,
) -> None:
    frontier, bloom = _frontier(redis_client, LEARNED, seed=7)
    hosts = ["good.test", "bad.test", "new.test"]
    urls = [f"http://{host}/{k}" for host in hosts for k in range(3)]
    frontier.keep(
        bloom, [u.encode() for u in urls], [urlsplit_host(u) for u in urls], [_entry(u, 0.6) for u in urls]
    )
    for _ in range(20):
        frontier.reward("good.test", relevant=True)
        frontier.reward("bad.test", relevant=False)
    picks = [frontier.choose(1)[0] for _ in range(300)]
    assert picks.count("good.test") > 200 and picks.count("bad.test") < 10, {h: picks.count(h) for h in hosts}
    assert picks.count("new.test") > 10, "a host with no record yet is tried"
    best_first, _ = _frontier(redis_client, BEST_FIRST)
    assert best_first.choose(3) == sorted(hosts), "the other strategies: the best entries, no sampling"


def test_each_request_is_its_own_draw_so_a_good_host_gets_several_and_a_bad_one_none(
    redis_client: Any,
) -> None:
    # Two hosts, fewer than the requests wanted: each request is drawn on its own, not one per host.
    keys = Keys("crawler")
    redis_client.hset(keys.job("j"), mapping={"budget": 2, "issued": 0})
    frontier, bloom = _frontier(redis_client, LEARNED, seed=3)
    urls = [f"http://{host}/{k}" for host in ("good.test", "bad.test") for k in range(3)]
    frontier.keep(
        bloom, [u.encode() for u in urls], [urlsplit_host(u) for u in urls], [_entry(u, 0.6) for u in urls]
    )
    for _ in range(20):
        frontier.reward("good.test", relevant=True)
        frontier.reward("bad.test", relevant=False)
    assert frontier.choose(2) == ["good.test", "good.test"]
    assert frontier.choose(5) == ["good.test"] * 3 + ["bad.test"] * 2, "no more than a host's 3 links"
    redis_client.hset(keys.pending, "energy@waiting.test", 1)
    for _ in range(20):
        frontier.reward("waiting.test", relevant=True)
    picks = frontier.choose(5, wait=True)
    assert picks == ["good.test", "good.test"], "a draw won by a host whose links are not in yet waits"

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return entry.url.encode(), 0

    released = frontier.release(3, job="j", budget=2, delay=0, concurrency=1, request_of=request_of)
    assert released == (2, 0) and int(redis_client.hget(keys.job("j"), "issued")) == 2, "within the budget"
    assert len(redis_client.zrange("crawler:queue:energy@good.test", 0, -1)) == 2, "its two best links"


def test_the_first_seed_read_does_not_take_the_queue_while_another_seeds_request_is_pending(
    redis_client: Any,
) -> None:
    # Two seeds: the first read (its index, not relevant) gave ten links; the other's request is pending and
    # its host has taught the bandit nothing yet. Its host draws as one whose links are not in yet: the draws
    # it wins wait for them, where before the first seed's host won every draw and took the whole queue.
    keys = Keys("crawler")
    frontier = Frontier(redis_client, keys, "energy", per_host=20, rng=random.Random(5))
    bloom = RedisBloom(redis_client, keys.bloom, capacity=10_000, error_rate=0.001)
    urls = [f"http://read.test/{k}" for k in range(10)]
    frontier.keep(bloom, [u.encode() for u in urls], ["read.test"] * 10, [_entry(u, 0.5) for u in urls])
    frontier.reward("read.test", relevant=False)
    redis_client.hset(keys.pending, "energy@pending.test", 1)
    assert frontier.choose(16, wait=True) == ["read.test"] * 10, "a host no page taught about is unknown"
    picks = frontier.choose(16, wait=True, seeded=["pending.test", "read.test"])
    assert 0 < len(picks) < 10 and set(picks) == {"read.test"}, picks
    redis_client.hdel(keys.pending, "energy@pending.test")
    assert frontier.choose(16, wait=True, seeded=["pending.test"]) == ["read.test"] * 10, "its seed is over"


def _kept_frontier(server: Any, hosts: list[str]) -> tuple[Frontier, RedisBloom, LeasedQueue]:
    """A frontier kept an hour untouched, two links kept to each of ``hosts``, each host rewarded, and
    one request released to each (queued in its slot), for job ``j``."""
    keys = Keys("crawler")
    bloom = RedisBloom(server, keys.bloom, capacity=10_000, error_rate=0.001)
    frontier = Frontier(server, keys, "energy", strategy=BEST_FIRST, per_host=5, keep_seconds=3600)
    server.hset(keys.job("j"), mapping={"budget": 100, "issued": 0})
    urls = [f"http://{host}/{k}" for host in hosts for k in range(2)]
    frontier.keep(
        bloom, [u.encode() for u in urls], [urlsplit_host(u) for u in urls], [_entry(u, 0.5) for u in urls]
    )
    for host in hosts:
        frontier.reward(host, relevant=True)
        frontier.reward(host, relevant=False)

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        meta = {"site": "energy", "slot": slot_of("energy", host), "job": "j"}
        return json.dumps({"url": entry.url, "meta": meta}).encode(), 0

    assert frontier.release(
        len(hosts), job="j", budget=100, delay=0.5, concurrency=1, request_of=request_of
    ) == (
        len(hosts),
        0,
    )
    return frontier, bloom, LeasedQueue(server, keys)


def _ended(queue: LeasedQueue, slots: set[str]) -> None:
    """Lease and acknowledge the queued request of each of ``slots``."""
    while slots:
        popped = queue.pop()
        assert popped.member is not None and popped.site in slots, popped
        assert queue.ack(popped.member, site=popped.site, job="j")
        slots.discard(popped.site)


def _untouched(server: Any, frontier: Frontier, host: str, seconds: float) -> None:
    """Move ``host``'s last touch ``seconds`` back (the time of Redis, as the scripts read it)."""
    now = server.time()
    server.zadd(frontier.touched, {host: now[0] + now[1] / 1e6 - seconds})


def _held(server: Any, frontier: Frontier, host: str) -> dict[str, bool]:
    keys, slot = Keys("crawler"), slot_of("energy", host)
    return {
        "frontier": bool(server.exists(f"{frontier.target.prefix}{host}")),
        "best": server.hexists(frontier.target.best, host),
        "good": server.hexists(f"{frontier.base}:good", host),
        "bad": server.hexists(f"{frontier.base}:bad", host),
        "polite": bool(server.exists(keys.polite(slot))),
        "politeness": server.hexists(keys.politeness, slot),
        "pending": server.hexists(keys.pending, slot),
        "touched": server.zscore(frontier.touched, host) is not None,
    }


def test_an_idle_hosts_entries_go_and_a_busy_or_queued_hosts_stay(redis_client: Any) -> None:
    frontier, bloom, queue = _kept_frontier(redis_client, ["idle.test", "busy.test", "queued.test"])
    _ended(queue, {"energy@idle.test", "energy@busy.test"})
    assert 0 < redis_client.ttl(f"{frontier.target.prefix}idle.test") <= 3600, "a host's links expire too"
    assert frontier.prune() == 0, "all touched within the hour"
    _untouched(redis_client, frontier, "idle.test", 3601)
    _untouched(redis_client, frontier, "queued.test", 7200)
    assert frontier.prune() == 1
    assert _held(redis_client, frontier, "idle.test") == dict.fromkeys(
        ["frontier", "best", "good", "bad", "polite", "politeness", "pending", "touched"], False
    )
    for host in ("busy.test", "queued.test"):
        assert all(_held(redis_client, frontier, host).values()), host
    now = redis_client.time()[0]
    assert redis_client.zscore(frontier.touched, "queued.test") >= now - 1, (
        "its queued request: looked at later"
    )
    assert queue.pop().site == "energy@queued.test", "nothing queued lost"
    assert frontier.prune() == 0
    again = ["http://idle.test/0", "http://idle.test/9"]
    assert (
        frontier.keep(bloom, [u.encode() for u in again], ["idle.test"] * 2, [_entry(u, 0.5) for u in again])
        == 1
    ), "its links forgotten stay seen: only a new one brings the host back"
    assert _held(redis_client, frontier, "idle.test")["touched"]


def test_a_host_kept_for_its_queued_request_or_a_page_read_keeps_its_links(redis_client: Any) -> None:
    """A host is forgotten once untouched for keep_seconds: no link kept to it, none released, no page of it
    read. Its frontier's time-to-live was renewed by a keeping and a release alone: a page of it read
    (settled) touched the host and left its links to expire, and a host the prune passed over for its
    queued request (touched again, "never pruned") lost its links by that time-to-live all the same."""
    frontier, _bloom, queue = _kept_frontier(redis_client, ["queued.test", "done.test"])
    _ended(queue, {"energy@done.test"})
    for host in ("queued.test", "done.test"):
        redis_client.expire(f"{frontier.target.prefix}{host}", 5)  # its last keeping or release long ago
    _untouched(redis_client, frontier, "queued.test", 7200)
    assert frontier.prune() == 0, "its request is queued"
    assert redis_client.ttl(f"{frontier.target.prefix}queued.test") > 5, "kept: its links too"
    assert frontier.settle(frontier.record("a lease"), "done.test", True, 0, "", 60) == 0
    assert redis_client.ttl(f"{frontier.target.prefix}done.test") > 5, "a page of it read: its links kept"


@pytest.mark.parametrize("written", ["per host", "in the politeness alone"])
def test_a_pruned_hosts_crawl_delay_is_still_obeyed_when_it_is_met_again(
    redis_client: Any, written: str
) -> None:
    """The crawl-delay stays in the slot's crawl-delays hash alone (``in the politeness alone``: as a
    version before that hash wrote it, moved there by the prune); the slot's politeness goes."""
    frontier, bloom, queue = _kept_frontier(redis_client, ["slow.test"])
    _ended(queue, {"energy@slow.test"})
    queue.set_crawl_delay("energy@slow.test", 30.0, "slow.test")
    keys = Keys("crawler")
    if written == "in the politeness alone":
        redis_client.delete(keys.crawl_delays("energy@slow.test"))
    _untouched(redis_client, frontier, "slow.test", 3601)
    assert frontier.prune() == 1
    held = _held(redis_client, frontier, "slow.test")
    assert not any(held.values()), held
    kept = redis_client.hgetall(keys.crawl_delays("energy@slow.test"))
    assert {host: float(seconds) for host, seconds in kept.items()} == {b"slow.test": 30.0}
    urls = [f"http://slow.test/new{k}" for k in range(2)]
    frontier.keep(bloom, [u.encode() for u in urls], ["slow.test"] * 2, [_entry(u, 0.5) for u in urls])

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return json.dumps(
            {"url": entry.url, "meta": {"site": "energy", "slot": slot_of("energy", host)}}
        ).encode(), 0

    for _ in urls:
        assert (
            frontier.release(1, job="j", budget=100, delay=0.5, concurrency=1, request_of=request_of)[0] == 1
        )
    assert float(redis_client.hget(keys.polite("energy@slow.test"), "crawl_delay")) == 30.0
    assert float(json.loads(redis_client.hget(keys.politeness, "energy@slow.test"))["crawl_delay"]) == 30.0
    first = queue.pop()
    assert first.site == "energy@slow.test"
    queue.ack(first.member or "", site="energy@slow.test", job="j")
    second = queue.pop()
    assert second.member is None and second.wait is not None and second.wait > 25, second


@pytest.mark.parametrize("written", ["per host", "in the politeness alone"])
def test_a_pruned_hosts_crawl_delay_is_kept_a_robots_max_age_and_for_good_once_read_again(
    redis_client: Any, written: str
) -> None:
    """The crawl-delay a pruned host's slot keeps in crawler:crawl-delays:<slot> stayed with no expiry
    while the crawl ran: one key for ever a host ever met whose robots.txt asked for a delay. It expires
    ROBOTS_MAX_AGE_SECONDS after the prune, as a forgotten site's does (a host met again has its robots.txt
    read again by then); read again (the worker tells it), it is kept for good."""
    frontier, _bloom, queue = _kept_frontier(redis_client, ["slow.test"])
    _ended(queue, {"energy@slow.test"})
    queue.set_crawl_delay("energy@slow.test", 30.0, "slow.test")
    asked = Keys("crawler").crawl_delays("energy@slow.test")
    if written == "in the politeness alone":
        redis_client.delete(asked)
    assert redis_client.ttl(asked) < 0, "kept while the host is crawled"
    _untouched(redis_client, frontier, "slow.test", 3601)
    assert frontier.prune() == 1
    assert ROBOTS_MAX_AGE_SECONDS - 5 < redis_client.ttl(asked) <= ROBOTS_MAX_AGE_SECONDS
    queue.set_crawl_delay("energy@slow.test", 30.0, "slow.test")
    assert redis_client.ttl(asked) == -1


def test_a_pruned_hosts_slot_met_again_by_a_request_its_frontier_did_not_release_keeps_its_rules_politeness(
    redis_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Frontier.prune drops an idle host's politeness hash and its saved copy; a slot is made again with the
    rule's delay and concurrency by its frontier's release alone. A request queued in the slot another way
    (``crawler dead requeue`` of the host's dead letters, a week later) was taken with no delay and no
    concurrency: 3 pops, 3 requests at once, the slot's hash {inflight: 3}. The slot now takes its rule's
    (the workers save each rule's politeness as they start), without a warning of a key removed."""
    frontier, _bloom, queue = _kept_frontier(redis_client, ["idle.test"])
    queue.configure("energy", delay=0.5, concurrency=1)
    _ended(queue, {"energy@idle.test"})
    _untouched(redis_client, frontier, "idle.test", 3601)
    assert frontier.prune() == 1
    assert not _held(redis_client, frontier, "idle.test")["polite"]
    for number in range(3):
        meta = {"site": "energy", "slot": "energy@idle.test"}
        member = {"url": f"http://idle.test/dead{number}", "meta": meta}
        assert queue.push(json.dumps(member).encode(), priority=0, site="energy@idle.test", job="j")
    with caplog.at_level(logging.WARNING):
        taken = [popped for popped in (queue.pop() for _ in range(3)) if popped.member is not None]
    assert len(taken) <= 1, taken
    polite = queue.politeness(["energy@idle.test"])[0]
    assert (polite.delay, polite.concurrency) == (0.5, 1)
    assert not [record.getMessage() for record in caplog.records if "was removed" in record.getMessage()]


def test_a_pruned_hosts_slot_met_again_by_a_request_its_frontier_did_not_release_keeps_its_crawl_delay(
    redis_client: Any,
) -> None:
    """The prune keeps a host's crawl-delay in crawler:crawl-delays:<slot> alone: a slot made again from
    its rule's politeness by the pop (a request its frontier did not release) takes it too."""
    frontier, _bloom, queue = _kept_frontier(redis_client, ["slow.test"])
    queue.configure("energy", delay=0.5, concurrency=1)
    _ended(queue, {"energy@slow.test"})
    queue.set_crawl_delay("energy@slow.test", 30.0, "slow.test")
    _untouched(redis_client, frontier, "slow.test", 3601)
    assert frontier.prune() == 1
    assert not _held(redis_client, frontier, "slow.test")["polite"]
    meta = {"site": "energy", "slot": "energy@slow.test"}
    member = {"url": "http://slow.test/dead", "meta": meta}
    assert queue.push(json.dumps(member).encode(), priority=0, site="energy@slow.test", job="j")
    queue.pop()
    assert float(redis_client.hget(Keys("crawler").polite("energy@slow.test"), "crawl_delay") or 0) == 30.0


def test_a_pruned_hosts_slot_made_again_by_the_pop_goes_with_its_host_once_idle_again(
    redis_client: Any,
) -> None:
    """A pruned host's slot made again by the pop (a dead letter requeued to it, dead-lettered again: no
    page of it read, none released) was no longer among the frontier's hosts: no prune looked at it again,
    and its politeness hash stayed in Redis for ever. The pop that makes it again touches its host: once
    idle for the frontier's keep, the host goes again, its hash with it."""
    frontier, _bloom, queue = _kept_frontier(redis_client, ["idle.test"])
    keys, slot = Keys("crawler"), "energy@idle.test"
    queue.configure("energy", delay=0.5, concurrency=1)
    _ended(queue, {slot})
    _untouched(redis_client, frontier, "idle.test", 3601)
    assert frontier.prune() == 1
    meta = {"site": "energy", "slot": slot}
    dead = json.dumps({"url": "http://idle.test/dead", "meta": meta}).encode()
    assert queue.push(dead, priority=0, site=slot, job="j")
    assert queue.pop().member is None, "made again, gated by the rule's delay"
    assert redis_client.zscore(frontier.touched, "idle.test") is not None, "the pop touched its host"
    redis_client.hset(keys.polite(slot), "next", 0)
    redis_client.zadd(keys.gated, {slot: 0})
    popped = queue.pop()
    assert popped.member is not None and popped.site == slot, popped
    record = json.dumps({"reason": "connection failed again"}).encode()
    assert queue.dead_letter(popped.member, record, site=slot, job="j", kind="connection", fetched=False)
    assert frontier.prune() == 0, "touched within the hour"
    _untouched(redis_client, frontier, "idle.test", 3601)
    assert frontier.prune() == 1
    assert _held(redis_client, frontier, "idle.test") == dict.fromkeys(
        ("frontier", "best", "good", "bad", "polite", "politeness", "pending", "touched"), False
    )


@pytest.mark.parametrize("first", ["the reloaded worker", "the older worker"])
def test_a_pruned_hosts_slot_made_again_by_the_pop_takes_an_edited_rule_at_its_next_release(
    redis_client: Any, first: str
) -> None:
    """A pruned host's slot made again by the pop (a dead letter requeued) from its rule's politeness has no
    saved copy: once idle and its pending count deleted (a `crawler temp` of the idle site writes its
    counts off as it starts), a worker reading an edit of the rule (LeasedQueue.configure,
    hosts=True) does not find it, and the frontier's release wrote its politeness with HSETNX: it kept the
    old rule's (0.5, 1) until the next start or edit. The release writes the rule's delay and concurrency
    where none is saved, with a saved copy, the host's crawl-delay kept; then, as for the site's own slot,
    only configure writes them: a worker still holding the older rule releases to the slot without writing
    it again, and its own reading of the edit finds the copy it wrote."""
    frontier, bloom, queue = _kept_frontier(redis_client, ["idle.test"])
    keys, slot = Keys("crawler"), "energy@idle.test"
    queue.configure("energy", delay=0.5, concurrency=1, hosts=True)
    _ended(queue, {slot})
    queue.set_crawl_delay(slot, 3.0, "idle.test")
    _untouched(redis_client, frontier, "idle.test", 3601)
    assert frontier.prune() == 1
    meta = {"site": "energy", "slot": slot}
    dead = json.dumps({"url": "http://idle.test/dead", "meta": meta}).encode()
    assert queue.push(dead, priority=0, site=slot, job="j")
    assert queue.pop().member is None, "made again, gated by the crawl-delay kept for the host"
    redis_client.hset(keys.polite(slot), "next", 0)
    redis_client.zadd(keys.gated, {slot: 0})
    _ended(queue, {slot})
    assert queue.lost("energy", write_off=True) is None, "a temp crawl's start: its count of 0 deleted"
    queue.configure("energy", delay=2.0, concurrency=4, hosts=True)
    assert not redis_client.hexists(keys.politeness, slot) and not redis_client.hexists(keys.pending, slot)

    def shown() -> tuple[tuple[float, int, float], tuple[float, int, float]]:
        (polite,) = queue.politeness([slot])
        saved = json.loads(redis_client.hget(keys.politeness, slot))
        copy = (float(saved["delay"]), int(saved["concurrency"]), float(saved.get("crawl_delay", 0)))
        return (polite.delay, polite.concurrency, polite.crawl_delay), copy

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return json.dumps({"url": entry.url, "meta": {**meta, "job": "j"}}).encode(), 0

    def released(delay: float, concurrency: int) -> None:
        url = f"http://idle.test/new-{delay}"
        frontier.keep(bloom, [url.encode()], ["idle.test"], [_entry(url, 0.5)])
        release = frontier.release(
            1, job="j", budget=100, delay=delay, concurrency=concurrency, request_of=request_of
        )
        assert release == (1, 0)

    assert queue.politeness([slot])[0].delay == 0.5, "made again by the pop from the rule read before"
    if first == "the reloaded worker":
        released(2.0, 4)
        assert shown() == ((2.0, 4, 3.0), (2.0, 4, 3.0))
        released(0.5, 1)
        assert shown() == ((2.0, 4, 3.0), (2.0, 4, 3.0)), "the older worker's release writes nothing"
    else:
        released(0.5, 1)
        assert shown() == ((0.5, 1, 3.0), (0.5, 1, 3.0))
        released(2.0, 4)
        assert shown() == ((0.5, 1, 3.0), (0.5, 1, 3.0)), "saved: an edit comes from configure alone"
    queue.configure("energy", delay=2.0, concurrency=4, hosts=True)
    assert shown() == ((2.0, 4, 3.0), (2.0, 4, 3.0)), "the older worker reading the edit"
    assert {float(s) for s in redis_client.hvals(keys.crawl_delays(slot))} == {3.0}


def test_a_chosen_hosts_links_are_valued_again_and_one_worth_less_now_waits(redis_client: Any) -> None:
    keys = Keys("crawler")
    redis_client.hset(keys.job("j"), mapping={"budget": 10, "issued": 0})
    frontier, bloom = _frontier(redis_client, LEARNED)
    urls = ["http://a.test/old-favourite", "http://a.test/now-best", "http://c.test/faded"]
    now = {urls[0]: 0.1, urls[1]: 0.8, urls[2]: 0.1}

    def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
        return entry.url.encode(), 0

    def release() -> tuple[int, int]:
        return frontier.release(
            1,
            job="j",
            budget=10,
            delay=0,
            concurrency=1,
            request_of=request_of,
            value_of=lambda e: now[e.url],
        )

    frontier.keep(
        bloom, [u.encode() for u in urls[:2]], ["a.test"] * 2, [_entry(urls[0], 0.9), _entry(urls[1], 0.5)]
    )
    assert release() == (1, 0), "its best link valued again (0.8 >= 0.8 x 0.9) goes"
    assert redis_client.zrange("crawler:queue:energy@a.test", 0, -1) == [urls[1].encode()], "worth most now"
    assert float(redis_client.hget(frontier.target.best, "a.test")) == pytest.approx(0.1), (
        "its score corrected"
    )
    redis_client.delete(frontier.target.prefix + "a.test", frontier.target.best)
    frontier.keep(bloom, [urls[2].encode()], ["c.test"], [_entry(urls[2], 0.9)])
    assert release() == (0, 1), "worth 0.1 now, under 0.8 x 0.9: left for the next choice"
    assert float(redis_client.hget(frontier.target.best, "c.test")) == pytest.approx(0.1)
    assert frontier.release(1, job="j", budget=10, delay=0, concurrency=1, request_of=request_of) == (1, 0)


def test_breadth_first_orders_by_depth_then_arrival(redis_client: Any) -> None:
    frontier, bloom = _frontier(redis_client, BREADTH_FIRST)
    urls = ["http://a.test/deep", "http://a.test/first", "http://a.test/second"]
    entries = [_entry(urls[0], 0.9, depth=3), _entry(urls[1], 0.1, depth=1), _entry(urls[2], 0.5, depth=1)]
    frontier.keep(bloom, [u.encode() for u in urls], ["a.test"] * 3, entries)
    ranked = redis_client.zrevrange(f"{frontier.target.prefix}a.test", 0, -1)
    assert [Entry.decode(member).url for member in ranked] == [urls[1], urls[2], urls[0]]


# --- the generated web --------------------------------------------------------------------------------------


def test_the_generated_web_is_a_function_of_its_seed_with_the_topic_planted() -> None:
    web, again, other = SimWeb(5, 60), SimWeb(5, 60), SimWeb(6, 60)
    origin = [f"http://127.0.0.1:{9000 + n}" for n in range(60)]
    assert [h.sections for h in web.hosts] == [h.sections for h in again.hosts]
    assert [h.sections for h in web.hosts] != [h.sections for h in other.hosts]
    kinds = {host.kind for host in web.hosts}
    assert {"directory", "hub", "mixed", "plain"} <= kinds
    relevant = [
        (host.index, web.article_path(host.index, number, page))
        for host in web.hosts
        for number, section in enumerate(host.sections)
        if section.theme == TOPIC
        for page in range(section.pages)
    ]
    assert len(relevant) == web.relevant_pages() > 0
    host, path = relevant[0]
    page = web.page(host, path, origin)
    assert page is not None and web.relevant(host, path)
    assert page == again.page(host, path, origin), "the same page every time"
    hub = next(h for h in web.hosts if h.kind == "hub")
    plain = next(h for h in web.hosts if h.kind == "plain")
    topic_index = next(f"/{section.slug}/" for section in hub.sections if section.theme == TOPIC)
    assert web.about_topic(hub.index, "/") and web.about_topic(hub.index, topic_index)
    assert web.about_topic(host, path) and not web.relevant(hub.index, topic_index), "an index is no article"
    assert not web.about_topic(plain.index, "/") and not web.about_topic(
        plain.index, f"/{plain.sections[0].slug}/"
    )
    assert web.page(host, "/missing.html", origin) is None and not web.relevant(host, "/missing.html")
    topic = Topic.build(TOPIC_KEYWORDS)
    assert topic.relevance(None, page).score >= 0.5
    assert web.seeds(origin) == [f"{origin[0]}/dir/{n}.html" for n in range(1, 5)]
    listed: set[str] = set()
    for seed in web.seeds(origin):
        listed |= {
            url for url, _, _ in page_links(web.page(0, seed.removeprefix(origin[0]), origin) or "", seed)
        }
    assert listed == {f"{o}/" for o in origin[1:]}, "the directory lists every host"


def test_a_trap_hosts_calendar_never_ends() -> None:
    web = SimWeb(1, 200)
    trap = next(host.index for host in web.hosts if host.kind == "trap")
    origin = [f"http://127.0.0.1:{9000 + n}" for n in range(200)]
    path = "/calendar/2026/11/26.html"
    for _ in range(50):
        page = web.page(trap, path, origin) or ""
        nexts = [url for url, anchor, _ in page_links(page, origin[trap] + path) if anchor == "Next day"]
        path = nexts[0].removeprefix(origin[trap])
    assert path == "/calendar/2027/01/15.html"


# --- a worker's part: the pipeline ----------------------------------------------------------------------


def _pipeline(redis_url: str, tmp_path: Path) -> DiscoverPipeline:
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.worker.spider import SitesSpider

    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "energy.yaml").write_text(DISCOVER_RULE.replace("  strategy: best-first\n", ""), "utf-8")
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(
        REDIS_URL=redis_url,
        CRAWLER_RULES_DIR=str(rules),
        CRAWLER_DATA_DIR=str(tmp_path),
        # In memory: the Redis collector's flush loop would start a reactor in the test process.
        STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector",
    )
    crawler = get_crawler(SitesSpider, settings_dict=values)
    crawler.spider = SitesSpider.from_crawler(crawler)
    return DiscoverPipeline.from_crawler(crawler)


def _page(score: float, features: tuple[int, ...] = ()) -> Article:
    links = [
        ("http://news.test/energy/solar-farm-1.html", "Solar farm opens", "Energy news: solar farm opens"),
        ("http://ads.blog.test/win", "Win a prize", ""),
        ("http://elsewhere.test/x", "Elsewhere", ""),
    ]
    return Article(
        site="energy",
        url="http://portal.test/energy/",
        fetched_at="2026-11-26T09:00:00+00:00",
        body="text",
        job="j1",
        discover=Discovered(0, features, 0.0, "portal.test", score=score, why="why it scored", links=links),
    )


def test_a_page_teaches_the_model_keeps_its_allowed_links_and_its_lease_ending_tops_the_queue_up(
    redis_server: str, redis_client: Any, tmp_path: Path
) -> None:
    keys = Keys("crawler")
    redis_client.hset(keys.job("j1"), mapping={"budget": 10, "issued": 1, "pending": 1, "kind": "temp"})
    pipeline = _pipeline(redis_server, tmp_path)
    irrelevant = _page(0.1)
    with pytest.raises(NotRelevant, match=r"relevance 0\.10 under 0\.4"):
        pipeline.process_item(irrelevant)
    stats = pipeline.crawler.stats
    assert stats is not None and stats.get_value("discover/irrelevant/energy") is None, "not done yet"
    pipeline.discovery.settle(irrelevant)  # its item dropped: done
    assert int(redis_client.hget(keys.job("j1"), "issued")) == 1, "nothing released before its lease ends"
    crawler = pipeline.crawler
    rule = pipeline.discovery.rule("energy")
    assert rule is not None
    work = Work.of(discover_request(rule, "http://portal.test/energy/", job="j1"))
    crawler.signals.send_catch_log(leases_ending, works=[work])
    assert int(redis_client.hget(keys.job("j1"), "issued")) == 2, "its one allowed link released"
    queued = LeasedQueue(redis_client, keys)
    assert len(queued) == 1 and queued.job_pending("j1") == 2
    assert redis_client.hget("crawler:discover:energy:bad", "portal.test") == b"1"
    assert stats.get_value("discover/links_refused/energy") == 2
    relevant = pipeline.process_item(_page(0.9, features=(1, 2, 3)))
    assert relevant.fields == {"relevance": "0.900", "relevance_why": "why it scored"}
    assert pipeline.discovery.model("energy").model.updates == 0, "nothing learnt before it is stored"
    pipeline.discovery.settle(relevant)  # its item stored: done
    model = pipeline.discovery.model("energy").model
    assert model.updates == 1 and model.weights[1] > 0, "learnt from the link that led there"
    assert stats.get_value("discover/links_seen/energy") == 1, "the same link again: the Bloom filter"


def _settled_once(
    redis_client: Any, tmp_path: Path, redis_server: str, *, fails_after_keep: bool
) -> dict[str, object]:
    """A relevant page of job j1 settled (its lease ``lease-1``), Redis failing once right after its links
    were kept when ``fails_after_keep``, so that its request is fetched again and settled again; what it
    counted."""
    redis_client.flushall()
    keys = Keys("crawler")
    redis_client.hset(keys.job("j1"), mapping={"budget": 10, "issued": 1, "pending": 1, "kind": "temp"})
    data = tmp_path / ("faulted" if fails_after_keep else "clean")
    data.mkdir()
    pipeline = _pipeline(redis_server, data)
    links = [
        ("http://news.test/energy/solar-farm-1.html", "Solar farm opens", "Energy news: solar farm opens"),
        ("http://news.test/energy/wind-2.html", "Wind farm", "Energy news: wind"),
        ("http://portal.test/energy/", "Home", ""),  # the page itself: seen
    ]
    seen_before = "http://news.test/energy/wind-2.html"
    pipeline.discovery._bloom.add(pipeline.crawler.request_fingerprinter.fingerprint(Request(seen_before)))
    page = Discovered(0, (1, 2, 3), 0.0, "portal.test", score=0.9, why="why it scored", links=links)
    article = Article(
        site="energy",
        url="http://portal.test/energy/",
        fetched_at="2026-11-26T09:00:00+00:00",
        body="text",
        job="j1",
        discover=page,
    )
    real_keep = Frontier.keep
    failures = [redis.ConnectionError("Connection reset by peer")] if fails_after_keep else []

    def keep(self: Frontier, *args: Any, **kwargs: Any) -> int:
        kept = real_keep(self, *args, **kwargs)
        if failures:
            raise failures.pop()
        return kept

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Frontier, "keep", keep)
        if fails_after_keep:
            with pytest.raises(redis.ConnectionError):
                pipeline.discovery.settle(article, "lease-1")
        pipeline.discovery.settle(article, "lease-1")  # fetched again: done
    stats = pipeline.crawler.stats
    rule = pipeline.discovery.rule("energy")
    assert stats is not None and rule is not None
    return {
        "stats": {
            name: stats.get_value(f"discover/{name}/energy")
            for name in ("relevant", "irrelevant", "links_kept", "links_seen", "links_refused")
        },
        "links_seen": redis_client.hget(keys.job("j1"), "links_seen"),
        "good": redis_client.hgetall("crawler:discover:energy:good"),
        "frontier": pipeline.discovery.frontier(rule).size(),
        "updates": pipeline.discovery.model("energy").model.updates,
    }


def test_a_page_whose_settling_redis_failed_under_midway_counts_once_when_settled_again(
    redis_server: str, redis_client: Any, tmp_path: Path
) -> None:
    """Redis failing after its links were kept and before its host's reward and the job's links_seen were
    written: its request is deferred; fetched again, the page counts as it would have in one pass, its
    links kept then not counted seen, the model taught once."""
    once = _settled_once(redis_client, tmp_path, redis_server, fails_after_keep=False)
    assert once == {
        "stats": {"relevant": 1, "irrelevant": None, "links_kept": 1, "links_seen": 2, "links_refused": None},
        "links_seen": b"2",
        "good": {b"portal.test": b"1"},
        "frontier": 1,
        "updates": 1,
    }
    assert _settled_once(redis_client, tmp_path, redis_server, fails_after_keep=True) == once


def test_redis_failing_as_a_page_is_done_is_an_error_of_redis(tmp_path: Path) -> None:
    """Its lease's middleware defers the page then (see tests/test_discover_crawl.py for the crawl)."""
    with EmbeddedRedis(tmp_path / "redis") as server:
        pipeline = _pipeline(server.url, tmp_path)
    with pytest.raises(redis.RedisError):
        pipeline.discovery.settle(_page(0.9))


def test_leases_ending_while_redis_is_away_log_the_outage_once_not_at_each_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with EmbeddedRedis(tmp_path / "redis") as server:
        pipeline = _pipeline(server.url, tmp_path)
        rule = pipeline.discovery.rule("energy")
    assert rule is not None
    with caplog.at_level(logging.WARNING):
        for n in range(5):
            work = Work.of(discover_request(rule, f"http://portal.test/energy/{n}.html", job="j1"))
            pipeline.crawler.signals.send_catch_log(leases_ending, works=[work])
    said = [record.getMessage() for record in caplog.records if record.name.startswith("crawler.worker.")]
    assert len(said) == 1 and said[0].startswith("Redis failed (refill energy's discover crawl: "), said
    stats = pipeline.crawler.stats
    assert stats is not None and stats.get_value("redis/errors") == 5, "every failed refill is counted"


def test_rules_try_shows_a_pages_relevance_and_the_links_a_discover_crawl_would_keep(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "energy.yaml").write_text(DISCOVER_RULE, "utf-8")
    page = tmp_path / "page.html"
    links = (
        '<a href="https://news.test/wind">Wind</a> <a href="https://ads.blog.test/x">Ad</a>'
        ' <a href="https://elsewhere.test/y">Elsewhere</a>'
    )
    page.write_text(
        f"<html><head><title>Solar and wind</title></head><body><article><p>{ON_TOPIC}</p><p>{links}</p>"
        "</article></body></html>",
        "utf-8",
    )
    env = {**os.environ, "CRAWLER_RULES_DIR": str(rules), "CRAWLER_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "crawler.cli", "rules", "try", "energy", str(page)]
    shown = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "relevance  1.000 (stored: threshold 0.4)" in shown.stdout, shown.stdout
    assert "why        topic terms are" in shown.stdout
    assert "links      1 kept of 3 links" in shown.stdout and "https://news.test/wind" in shown.stdout
    as_json = subprocess.run(
        [*command, "--format", "json"], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    document = json.loads(as_json.stdout)
    assert document["stored"] is True and document["links_kept"] == ["https://news.test/wind"]


def test_the_json_of_rules_try_on_a_discover_page_has_the_keys_docs_cli_md_gives(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("|  | for a discover page: ")]
    assert len(rows) == 1, "docs/cli.md, `rules try`: one `--format json` row for a discover page"
    documented = re.findall(r"`(\w+)`", re.sub(r"\([^()]*\)", "", rows[0]))
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "energy.yaml").write_text(DISCOVER_RULE, "utf-8")
    page = tmp_path / "page.html"
    page.write_text(f"<html><head><title>Solar</title></head><body><p>{ON_TOPIC}</p></body></html>", "utf-8")
    env = {**os.environ, "CRAWLER_RULES_DIR": str(rules), "CRAWLER_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "crawler.cli", "rules", "try", "energy", str(page), "--format", "json"]
    shown = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    assert documented == list(json.loads(shown.stdout)), rows[0]


def test_a_refill_whose_every_choice_fell_in_value_still_releases_a_link(
    redis_server: str, redis_client: Any, tmp_path: Path
) -> None:
    keys = Keys("crawler")
    # Room for one request (DISCOVER_QUEUE_TARGET 16, 15 pending): each choice is of one host.
    redis_client.hset(keys.job("j1"), mapping={"budget": 100, "issued": 0, "pending": 15, "kind": "temp"})
    pipeline = _pipeline(redis_server, tmp_path)
    discovery = pipeline.discovery
    rule = discovery.rule("energy")
    assert rule is not None
    frontier = discovery.frontier(rule)
    urls = [f"http://h{n}.test/once-promising" for n in range(3)]
    hosts = [urlsplit_host(url) for url in urls]
    frontier.keep(discovery._bloom, [u.encode() for u in urls], hosts, [_entry(u, 0.9) for u in urls])
    for host in hosts:  # hosts that gave relevant pages: their draws are all near 1
        redis_client.hset("crawler:discover:energy:good", host, 1000)
    # The empty model values each 0.5 now, under 0.8 x 0.9: each choice is left, corrected, and the next
    # choice takes another host; after three, the best link as it is goes, so a crawl never stops.
    assert discovery.refill(rule, "j1") == 1
    assert LeasedQueue(redis_client, keys).job_pending("j1") == 16
    assert sorted(float(redis_client.hget(frontier.target.best, host) or 0) for host in hosts) == [
        0.0,
        0.5,
        0.5,
    ]


def test_a_refill_forgets_the_rules_idle_hosts_once_a_while_and_counts_them(
    redis_server: str, redis_client: Any, tmp_path: Path
) -> None:
    keys = Keys("crawler")
    redis_client.hset(keys.job("j1"), mapping={"budget": 100, "issued": 0, "pending": 16, "kind": "temp"})
    pipeline = _pipeline(redis_server, tmp_path)
    discovery = pipeline.discovery
    rule = discovery.rule("energy")
    assert rule is not None
    frontier = discovery.frontier(rule)
    assert frontier.keep_seconds == 7 * 86400, "DISCOVER_HOST_KEEP_DAYS"
    urls = ["http://old.test/a", "http://new.test/a"]
    frontier.keep(
        discovery._bloom, [u.encode() for u in urls], ["old.test", "new.test"], [_entry(u, 0.5) for u in urls]
    )
    _untouched(redis_client, frontier, "old.test", 8 * 86400)
    assert discovery.refill(rule, "j1") == 0, "no room: the queue is full"
    assert discovery.refill(rule, "j1") == 0
    assert redis_client.zrange(frontier.touched, 0, -1) == [b"new.test"]
    assert not redis_client.exists(f"{frontier.target.prefix}old.test")
    _untouched(redis_client, frontier, "new.test", 8 * 86400)
    assert discovery.refill(rule, "j1") == 0
    assert redis_client.zrange(frontier.touched, 0, -1) == [b"new.test"], "once a PRUNE_SECONDS a worker"
    assert discovery.crawler.stats is not None
    assert discovery.crawler.stats.get_value("discover/hosts_expired/energy") == 1
