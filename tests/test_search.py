"""Keyword mode: a rule's ``search`` (a search URL template with ``{keyword}``, keywords, how results and
the next result page are found) checked, and real temp crawls of the local test server's search pages:
results on the rule's domains are its articles, results on another rule's domains that rule's, the others
counted; result pages followed up to ``max_pages``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SiteServer
from crawlsite import Site

from crawler.rules import RuleErrors, parse_rule

SEARCH_RULE = """
domains: [news.test]
search:
  url: "https://find.test/search?q={keyword}&lang=en"
  keywords: [harbour bridge, ferry, ferry]
  links: {xpath: "//ol[@class='results']", deny: ['/video/']}
  next_page: "//a[@rel='next']"
  max_pages: 2
"""


def test_each_keyword_gives_its_first_result_page() -> None:
    rule = parse_rule(SEARCH_RULE, site="finder")
    assert rule.search is not None and rule.start_urls == ()
    assert rule.search.urls() == [
        "https://find.test/search?q=harbour+bridge&lang=en",
        "https://find.test/search?q=ferry&lang=en",
    ], "keywords URL-encoded, each once"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("q={keyword}", "q=ferry"),
            'search.url: no {keyword} in "https://find.test/search?q=ferry&lang=en"',
        ),
        (
            ("https://find", "ftp://find"),
            'search.url: not an http(s) URL: "ftp://find.test/search?q={keyword}',
        ),
        (("[harbour bridge, ferry, ferry]", "[]"), "search.keywords: an empty list (expected a keyword"),
        (
            ("{xpath: \"//ol[@class='results']\", deny: ['/video/']}", "{deny: [x]}"),
            "search.links: neither xpath",
        ),
        (("//a[@rel='next']", "//a["), 'search.next_page: invalid XPath "//a["'),
        (("max_pages: 2", "max_pages: 0"), "search.max_pages: out of range: 0"),
    ],
)
def test_a_bad_search_section_is_named_with_its_key_and_value(change: tuple[str, str], message: str) -> None:
    with pytest.raises(RuleErrors) as raised:
        parse_rule(SEARCH_RULE.replace(*change), site="finder")
    assert any(str(error).startswith(f"rules/finder.yaml: {message}") for error in raised.value.errors), [
        str(error) for error in raised.value.errors
    ]


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path, name="finder")


ARTICLE = (
    "article:\n  fields:\n    title: {xpath: //h1}\n"
    '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n'
)


def test_results_go_to_the_rule_whose_domains_hold_them_and_result_pages_are_followed(site: Site) -> None:
    site.rules.mkdir(parents=True, exist_ok=True)
    (site.rules / "finder.yaml").write_text(
        "domains: [127.0.0.1]\n"
        "search:\n"
        f'  url: "{site.server.url("/search?q={keyword}")}"\n'
        "  keywords: [harbour, ferry]\n"
        "  links: {xpath: \"//ol[@class='results']\"}\n"
        "  next_page: \"//a[@rel='next']\"\n"
        "  max_pages: 2\n" + ARTICLE,
        encoding="utf-8",
    )
    (site.rules / "other.yaml").write_text(
        "domains: [localhost]\nfeeds: [http://localhost/feed]\n" + ARTICLE, encoding="utf-8"
    )
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = {(article["site"], path) for path, article in site.stored().items()}
    port = site.server.port
    expected = {
        ("finder", f"/a/found-{keyword}-{page}") for keyword in ("harbour", "ferry") for page in (1, 2)
    } | {
        ("other", f"http://localhost:{port}/a/there-{keyword}-{page}")
        for keyword in ("harbour", "ferry")
        for page in (1, 2)
    }
    assert stored == expected, "two result pages of each keyword; the localhost results are the other rule's"
    assert "stored 8 articles" in done.stdout


def test_rules_try_on_a_saved_result_page_of_a_search_only_rule(site: Site) -> None:
    site.rules.mkdir(parents=True, exist_ok=True)
    (site.rules / "finder.yaml").write_text(
        f'domains: [127.0.0.1]\nsearch: {{url: "{site.server.url("/search?q={keyword}")}", keywords: [ferry],'
        " links: {xpath: \"//ol[@class='results']\"}}\n",
        encoding="utf-8",
    )
    saved = site.root / "results.html"
    saved.write_text(
        "<html><body><ol class='results'><li><a href='/a/one'>1</a></li>"
        "<li><a href='http://elsewhere.test/two'>2</a></li></ol></body></html>",
        encoding="utf-8",
    )
    done = site.crawler("rules", "try", "finder", str(saved), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["links"] == [site.server.url("/a/one"), "http://elsewhere.test/two"]


def test_rules_try_on_a_result_page_shows_its_results_and_the_next_page_search_next_page_gives(
    site: Site,
) -> None:
    """The rule of docs/rules.md's Keyword search (no start_urls): a result page is shown as one, its next
    page the one ``search.next_page`` gives, as the crawl follows it; with start_urls too, a URL of
    ``search.url`` is still a result page."""
    search = (
        "search:\n"
        f'  url: "{site.server.url("/search?q={keyword}")}"\n'
        "  keywords: [ferry]\n"
        "  links: {xpath: \"//ol[@class='results']\"}\n"
        "  next_page: \"//a[@rel='next']\"\n"
        "  max_pages: 2\n"
    )
    site.rules.mkdir(parents=True, exist_ok=True)
    rule = site.rules / "finder.yaml"
    rule.write_text("domains: [127.0.0.1]\n" + search + ARTICLE, encoding="utf-8")
    port = site.server.port
    results = (
        "as a search result page: 3 results\n"
        "  (each one of the rule's article when on its domains, else of the rule whose domains hold it, else"
        " left)\n"
        f"  {site.server.url('/a/found-ferry-1')}\n"
        f"  http://localhost:{port}/a/there-ferry-1\n"
        "  http://elsewhere.test/ferry\n"
        f"next page  {site.server.url('/search?q=ferry&page=2')}\n"
    )
    done = site.crawler("rules", "try", "finder", site.server.url("/search?q=ferry"))
    assert done.returncode == 0, done.stderr
    assert results in done.stdout, done.stdout
    assert "as an index page" not in done.stdout
    rule.write_text(
        "domains: [127.0.0.1]\n"
        f'start_urls: ["{site.server.url("/links?to=/a/one")}"]\n'
        "index: {links: {xpath: \"//ul[@class='news']\"}}\n" + search + ARTICLE,
        encoding="utf-8",
    )
    done = site.crawler("rules", "try", "finder", site.server.url("/search?q=ferry"))
    assert done.returncode == 0, done.stderr
    assert results in done.stdout, done.stdout
