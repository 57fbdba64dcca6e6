"""Keyword mode: a rule's ``search`` (a search URL template with ``{keyword}``, keywords, how results and
the next result page are found) checked, and real temp crawls of the local test server's search pages:
results on the rule's domains are its articles, results on another rule's domains that rule's, the others
counted; result pages followed up to ``max_pages``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from urllib.parse import quote_plus

import pytest
from conftest import SiteServer
from crawlsite import Site
from siteserver import GBK_KEYWORD, GBK_LACKS_MARK

from crawler.rules import RuleErrors, load_rules, parse_rule

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


def test_search_encoding_percent_encodes_the_keywords_and_the_template_query_in_that_encoding() -> None:
    """A GBK search page reads 长江 as %B3%A4%BD%AD, not as UTF-8's %E9%95%BF%E6%B1%9F; the path stays
    UTF-8, as browsers send it. A browser label names the encoding (``gb2312`` is read as GBK)."""
    rule = parse_rule(
        SEARCH_RULE.replace("[harbour bridge, ferry, ferry]", "[长江 大桥]")
        .replace("&lang=en", "&channel=新闻")
        .replace("/search?", "/搜索?")
        + "  encoding: gb2312\n",
        site="finder",
    )
    assert rule.search is not None and rule.search.encoding == "gbk"
    assert rule.search.urls() == [
        "https://find.test/%E6%90%9C%E7%B4%A2?q=%B3%A4%BD%AD+%B4%F3%C7%C5&channel=%D0%C2%CE%C5"
    ]
    assert rule.listing_key(rule.search.urls()[0]) == ("search", "search.url")
    utf8 = parse_rule(SEARCH_RULE.replace("[harbour bridge, ferry, ferry]", "[长江]"), site="finder")
    assert utf8.search is not None and utf8.search.encoding == "utf-8"
    assert utf8.search.urls() == ["https://find.test/search?q=%E9%95%BF%E6%B1%9F&lang=en"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("max_pages: 2", "max_pages: 2\n  encoding: gbx"),
            'search.encoding: unknown encoding "gbx" (expected the encoding the search page reads its'
            " query in, such as utf-8, gbk, big5, shift_jis or euc-kr",
        ),
        (
            ("max_pages: 2", "max_pages: 2\n  encoding: utf-16le"),
            'search.encoding: "utf-16le": a URL\'s query is never sent in UTF-16 or UTF-32 (browsers send'
            " UTF-8 for such pages)",
        ),
        (
            ("max_pages: 2", "max_pages: 2\n  encoding: 5"),
            "search.encoding: wrong type",
        ),
        (
            ("[harbour bridge, ferry, ferry]", "[harbour bridge, 香港 ferry ⛴]\n  encoding: big5"),
            'search.keywords[1]: "香港 ferry ⛴" cannot be encoded in big5 (search.encoding): "⛴" (U+26F4)'
            " is not in it (expected a keyword big5 can encode, or search.encoding utf-8 if the search"
            " page reads UTF-8",
        ),
        (
            ('q={keyword}&lang=en"', 'q={keyword}&lang=한국어"\n  encoding: gbk'),
            'search.url: "https://find.test/search?q={keyword}&lang=한국어" cannot be encoded in gbk'
            ' (search.encoding): "한" (U+D55C) is not in it (expected the query\'s other characters in gbk,'
            " or percent-encoded in it)",
        ),
        (
            ("q={keyword}", "q=ferry"),
            'search.url: no {keyword} in "https://find.test/search?q=ferry&lang=en"',
        ),
        (
            ("https://find", "ftp://find"),
            'search.url: not an http(s) URL: "ftp://find.test/search?q={keyword}',
        ),
        (
            ("https://find", "https://user:s3cret@find"),
            'search.url: credentials in the URL "https://***@find.test/search?q={keyword}&lang=en" (expected'
            " a URL without them)",
        ),
        (
            ("https://find", "ftp://user:s3cret@find"),
            'search.url: not an http(s) URL: "ftp://***@find.test/search?q={keyword}',
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


def gbk_search(site: Site, query: str = "", max_pages: int | None = None) -> str:
    """The ``search`` section of a rule for the test server's GBK search page (``/search-gbk``, ``query``
    after its keyword): its keyword, ``encoding: gbk``, its results and next page."""
    return (
        "search:\n"
        f'  url: "{site.server.url("/search-gbk?q={keyword}" + query)}"\n'
        f"  keywords: [{GBK_KEYWORD}]\n"
        "  encoding: gbk\n"
        "  links: {xpath: \"//ol[@class='results']\"}\n"
        "  next_page: \"//a[@rel='next']\"\n" + (f"  max_pages: {max_pages}\n" if max_pages else "")
    )


def test_results_go_to_the_rule_whose_domains_hold_them_and_result_pages_are_followed(site: Site) -> None:
    site.write_rule(
        "domains: [127.0.0.1]\n"
        "search:\n"
        f'  url: "{site.server.url("/search?q={keyword}")}"\n'
        "  keywords: [harbour, ferry]\n"
        "  links: {xpath: \"//ol[@class='results']\"}\n"
        "  next_page: \"//a[@rel='next']\"\n"
        "  max_pages: 2\n" + ARTICLE,
        "finder",
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


def test_a_rule_whose_search_encoding_fails_is_the_only_rule_that_fails(tmp_path: Path) -> None:
    (tmp_path / "gbx.yaml").write_text(SEARCH_RULE + "  encoding: gbx\n", encoding="utf-8")
    (tmp_path / "emoji.yaml").write_text(
        SEARCH_RULE.replace("ferry, ferry]", "⛴]") + "  encoding: gbk\n", encoding="utf-8"
    )
    (tmp_path / "good.yaml").write_text(SEARCH_RULE + "  encoding: gbk\n", encoding="utf-8")
    ruleset = load_rules(tmp_path)
    assert list(ruleset.rules) == ["good"]
    assert [(error.file, error.key) for error in ruleset.errors] == [
        (str(tmp_path / "emoji.yaml"), "search.keywords[1]"),
        (str(tmp_path / "gbx.yaml"), "search.encoding"),
    ]


def test_a_gbk_search_page_finds_the_keyword_sent_in_search_encoding(site: Site) -> None:
    """The search page reads its query as GBK and finds results only for its keyword: sent in UTF-8 (the
    default) it finds none; with ``search.encoding: gbk`` the crawl stores both result pages' articles,
    the next page's href holding the keyword as is (encoded as GBK too, as `rules try` shows it). A rule
    with a bad ``search.encoding`` in the folder stops nothing."""
    with urllib.request.urlopen(site.server.url(f"/search-gbk?q={quote_plus(GBK_KEYWORD)}")) as answer:
        assert b"gbk-found" not in answer.read(), "the page finds nothing for the keyword in UTF-8"
    site.write_rule("domains: [127.0.0.1]\n" + gbk_search(site, max_pages=2) + ARTICLE, "finder")
    (site.rules / "broken.yaml").write_text(
        "domains: [localhost]\n"
        f'search: {{url: "{site.server.url("/search-gbk?q={keyword}")}", keywords: [x], encoding: gbx,'
        " links: {xpath: //ol}}\n",
        encoding="utf-8",
    )
    in_gbk = quote_plus(GBK_KEYWORD, encoding="gbk")
    done = site.crawler("rules", "try", "finder", site.server.url(f"/search-gbk?q={in_gbk}"))
    assert done.returncode == 0, done.stderr
    assert f"next page  {site.server.url(f'/search-gbk?q={in_gbk}&page=2')}\n" in done.stdout, done.stdout
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {"/a/gbk-found-1", "/a/gbk-found-2"}, done.stdout[-4000:]


def test_a_next_page_href_with_a_character_the_search_encoding_lacks_is_sent_as_browsers_send_it(
    site: Site,
) -> None:
    """A GBK result page's next-page href holds a character GBK lacks (written ``&#9972;``): the next
    page's query sends it as a browser does, as that character reference percent-encoded, and the page
    finds its results."""
    site.write_rule("domains: [127.0.0.1]\n" + gbk_search(site, "&mark=1", max_pages=2) + ARTICLE, "finder")
    in_gbk = quote_plus(GBK_KEYWORD, encoding="gbk")
    done = site.crawler("rules", "try", "finder", site.server.url(f"/search-gbk?q={in_gbk}&mark=1"))
    assert done.returncode == 0, done.stderr
    following = site.server.url(f"/search-gbk?q={in_gbk}&page=2&mark={quote_plus(GBK_LACKS_MARK)}")
    assert f"next page  {following}\n" in done.stdout, done.stdout
    with urllib.request.urlopen(following) as answer:
        assert b"/a/gbk-found-2" in answer.read()


def test_rules_try_reads_a_search_url_written_with_the_words_in_search_encoding(site: Site) -> None:
    """A URL of a GBK rule's ``search.url`` given with the keyword as it is (``?q=长江大桥``) is its
    result page, as the same URL percent-encoded in GBK is, and is fetched as the crawl requests it: the
    page finds its results. The rule has ``start_urls`` too, so only ``search.url`` makes it one; without
    them, any page is one, and its next page is fetched so too."""
    search = gbk_search(site)
    site.rules.mkdir(parents=True, exist_ok=True)
    rule = site.rules / "finder.yaml"
    rule.write_text(
        "domains: [127.0.0.1]\n"
        f'start_urls: ["{site.server.url("/links?to=/a/one")}"]\n'
        "index: {links: {xpath: \"//ul[@class='news']\"}}\n" + search + ARTICLE,
        encoding="utf-8",
    )
    in_gbk = quote_plus(GBK_KEYWORD, encoding="gbk")
    done = site.crawler("rules", "try", "finder", site.server.url(f"/search-gbk?q={GBK_KEYWORD}"))
    assert done.returncode == 0, done.stderr
    assert "as a search result page: 1 result\n" in done.stdout, done.stdout
    assert f"  {site.server.url('/a/gbk-found-1')}\n" in done.stdout, done.stdout
    assert f"next page  {site.server.url(f'/search-gbk?q={in_gbk}&page=2')}\n" in done.stdout, done.stdout
    assert "as an index page" not in done.stdout
    rule.write_text("domains: [127.0.0.1]\n" + search + ARTICLE, encoding="utf-8")
    done = site.crawler("rules", "try", "finder", site.server.url(f"/search-gbk?q={GBK_KEYWORD}&page=2"))
    assert done.returncode == 0, done.stderr
    assert "as a search result page: 1 result\n" in done.stdout, done.stdout
    assert f"  {site.server.url('/a/gbk-found-2')}\n" in done.stdout, done.stdout


def test_rules_try_on_a_saved_result_page_of_a_search_only_rule(site: Site) -> None:
    site.write_rule(
        f'domains: [127.0.0.1]\nsearch: {{url: "{site.server.url("/search?q={keyword}")}", keywords: [ferry],'
        " links: {xpath: \"//ol[@class='results']\"}}\n",
        "finder",
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
