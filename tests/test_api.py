"""JSON APIs as a site's index: the rule's ``api`` section checked (JMESPath compiled at load time),
a page read into items and its next page (a URL or a cursor), and real temp crawls of the local test
server's API: articles stored from the JSON without fetching a page, or fetched at their URL with the
item's fields filling the page's; cursor pages up to ``max_pages``; a cursor that loops; a page that is no
JSON."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import SiteServer
from crawlsite import Site
from siteserver import GBK_TITLE
from test_rules import crawler, write

from crawler.rules import RuleErrors, parse_rule
from crawler.rules.api import ApiError

API_RULE = """
domains: [api.test]
api:
  url: http://api.test/v1/posts?limit=2
  items: data.posts
  next: paging.next
  cursor_param: cursor
  max_pages: 3
  fields:
    url: link
    title: title
    body: content.text
    author: user.name
    published: created
    likes: stats.likes
    tags: tags
"""
PAGE = {
    "data": {
        "posts": [
            {
                "link": "/p/1",
                "title": " One ",
                "content": {"text": "Body one."},
                "user": {"name": "Ann"},
                "created": "2026-11-20T08:00:00Z",
                "stats": {"likes": 3},
                "tags": ["a", "b"],
            },
            {"link": "https://api.test/p/2", "title": "Two", "user": None},
            {"title": "no link"},
        ]
    },
    "paging": {"next": "c2"},
}


def test_a_page_gives_items_with_their_fields_and_the_next_cursor() -> None:
    api = parse_rule(API_RULE, site="api").api
    assert api is not None
    page = api.read(json.dumps(PAGE).encode(), "http://api.test/v1/posts?limit=2&cursor=c1")
    first, second = page.items
    assert first.url == "http://api.test/p/1" and first.is_article
    assert dict(first.fields) == {
        "title": "One",
        "body": "Body one.",
        "author": "Ann",
        "published": "2026-11-20T08:00:00Z",
        "likes": "3",
        "tags": '["a", "b"]',
    }
    assert second.url == "https://api.test/p/2" and not second.is_article, "no body: its page is fetched"
    assert second.fields["author"] is None
    assert page.without_url == 1
    assert page.next_url == "http://api.test/v1/posts?limit=2&cursor=c2", "the cursor replaces the old one"


def test_without_a_cursor_parameter_next_is_a_url() -> None:
    api = parse_rule(API_RULE.replace("  cursor_param: cursor\n", ""), site="api").api
    assert api is not None
    page = api.read(
        json.dumps({"data": {"posts": []}, "paging": {"next": "/v1/posts?page=2"}}).encode(),
        "http://api.test/v1/posts",
    )
    assert page.items == () and page.next_url == "http://api.test/v1/posts?page=2"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            b"<html><body>Sign in</body></html>",
            "is not JSON: Expecting value: line 1 column 1 (char 0) (it starts '<html>",
        ),
        (
            b'{"data": {"posts": {"link": "/x"}}}',
            'api.items "data.posts" gives an object, not a list of items',
        ),
        (
            b'{"error": "rate limited"}',
            'api.items "data.posts" gives nothing (null or no such key), not a list',
        ),
    ],
)
def test_a_page_that_is_not_the_apis_json_says_what_it_is(body: bytes, says: str) -> None:
    api = parse_rule(API_RULE, site="api").api
    assert api is not None
    with pytest.raises(ApiError) as raised:
        api.read(body, "http://api.test/v1/posts")
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("items: data.posts", "items: data.["), 'api.items: invalid JMESPath "data.[": '),
        (
            ("    url: link\n", ""),
            "api.fields.url: missing (expected the JMESPath of each item's article URL)",
        ),
        (("    title: title", "    title: 5"), "api.fields.title: wrong type: the number 5"),
        (("  next: paging.next\n", ""), "api.cursor_param: without api.next"),
        (("http://api.test/v1", "http://other.test/v1"), 'api.url: host "other.test" of'),
        (("  max_pages: 3", "  max_pages: 0"), "api.max_pages: out of range: 0"),
        (("  items: data.posts\n", ""), "api.items: missing"),
    ],
)
def test_a_bad_api_section_is_named_with_its_key_and_value(change: tuple[str, str], message: str) -> None:
    with pytest.raises(RuleErrors) as raised:
        parse_rule(API_RULE.replace(*change), site="api")
    assert any(str(error).startswith(f"rules/api.yaml: {message}") for error in raised.value.errors), [
        str(error) for error in raised.value.errors
    ]


# --- crawls ------------------------------------------------------------------------------------------------


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path, name="api")


def _api_rule(site: Site, query: str, *, max_pages: int = 5, more: str = "") -> None:
    text = (
        "domains: [127.0.0.1]\n"
        "api:\n"
        f'  url: "{site.server.url("/api?" + query)}"\n'
        "  items: data.posts\n"
        "  next: paging.next\n"
        "  cursor_param: cursor\n"
        f"  max_pages: {max_pages}\n"
        "  fields: {url: link, title: title, body: content.text, author: user.name, published: created,"
        " likes: stats.likes}\n"
        "article:\n  fields:\n    title: {xpath: //h1}\n"
        '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n'
        f"{more}"
    )
    site.write_rule(text)


def test_articles_held_in_the_json_are_stored_without_fetching_their_pages(site: Site) -> None:
    _api_rule(site, "pages=3&per=2&full=1")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {f"/a/api-{page}-{item}" for page in (1, 2, 3) for item in (0, 1)}
    article = stored["/a/api-2-1"]
    assert article["title"] == "API post 2-1" and article["author"] == "Writer 1"
    assert article["published"] == "2026-11-03T08:00:00+00:00"
    assert article["fields"] == {"likes": "21"}
    assert str(article["body"]).startswith(str(article["body"]).split("\n\n")[0]) and "\n\n" in str(
        article["body"]
    )
    assert "fetched 3 pages" in done.stdout, "three API pages and no article page"


def test_an_item_with_a_lone_surrogate_in_its_json_is_stored_without_it_beside_the_others(
    site: Site,
) -> None:
    """JSON may escape half a surrogate pair (``"\\ud83d"``, an emoji cut in two), which no UTF-8 store
    can write: the item is stored without it, and the other items of its page are stored too."""
    _api_rule(site, "pages=1&per=3&full=1&surrogate=1")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {f"/a/api-1-{item}" for item in range(3)}, done.stderr[-4000:]
    assert (stored["/a/api-1-0"]["title"], stored["/a/api-1-0"]["author"]) == ("API post 1-0", "Writer 0")
    assert site.dead() == []


def test_an_item_whose_link_holds_a_lone_surrogate_is_requested_as_a_browser_would(site: Site) -> None:
    """A link with half a surrogate pair (``"/a/api-1-0\\ud83d"``: no URL can encode it) left the item out
    silently ('skipped 0, errors 0'), and `rules try` said '1 off the domains'; as browsers do, the lone
    surrogate reads as U+FFFD, percent-encoded in UTF-8."""
    _api_rule(site, "pages=1&per=3&full=1&surrogate=link")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {"/a/api-1-0%EF%BF%BD", "/a/api-1-1", "/a/api-1-2"}, done.stderr[-4000:]
    tried = site.crawler("rules", "try", "api", site.server.url("/api?pages=1&per=3&full=1&surrogate=link"))
    assert tried.returncode == 0, tried.stderr
    assert "as an API page: 3 items, 0 left out\n" in tried.stdout, tried.stdout
    assert f"{site.server.url('/a/api-1-0%EF%BF%BD')} (stored from the JSON)" in tried.stdout, tried.stdout


def test_a_lone_surrogate_in_a_link_or_cursor_reads_as_u_fffd() -> None:
    api = parse_rule(API_RULE, site="api").api
    assert api is not None
    page = {
        "data": {"posts": [{"link": "/p/\ud83d1"}, {"link": "/p/\ud83d\ude00"}]},
        "paging": {"next": "c\ud83d"},
    }
    found = api.read(json.dumps(page).encode(), "http://api.test/v1/posts?limit=2")
    assert [item.url for item in found.items] == ["http://api.test/p/\ufffd1", "http://api.test/p/\U0001f600"]
    assert found.next_url == "http://api.test/v1/posts?limit=2&cursor=c%EF%BF%BD"


def test_items_without_a_body_are_fetched_with_the_items_fields_filling_the_pages(site: Site) -> None:
    _api_rule(site, "pages=2&per=2", max_pages=1)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {"/a/api-1-0", "/a/api-1-1"}, "max_pages 1: the second page is not read"
    article = stored["/a/api-1-0"]
    assert article["title"] == "Article api-1-0", "the page's own title first"
    assert (article["author"], article["published"]) == ("Writer 0", "2026-11-01T08:00:00+00:00")


def test_a_time_without_offset_is_stored_with_the_offset_of_the_rules_timezone(site: Site) -> None:
    """The API gives ``2026-11-01 08:00``, Beijing time with no UTC offset: without a ``timezone`` it was
    stored ``2026-11-01T08:00:00``, eight hours off the other sites' times; with ``timezone:
    Asia/Shanghai`` it is stored with +08:00, on the article pages fetched from 127.0.0.1 as on those the
    JSON holds."""
    _api_rule(site, "pages=1&per=2&naive=1", more="timezone: Asia/Shanghai\n")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert {path: article["published"] for path, article in stored.items()} == {
        "/a/api-1-0": "2026-11-01T08:00:00+08:00",
        "/a/api-1-1": "2026-11-02T08:00:00+08:00",
    }
    assert stored["/a/api-1-0"]["title"] == "Article api-1-0", "the article page was fetched"


def test_a_cursor_that_loops_stops_the_chain_saying_so(site: Site) -> None:
    _api_rule(site, "pages=9&per=1&full=1&loop=1", max_pages=9)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "the cursor loops, stopped" in done.stderr
    assert set(site.stored()) == {"/a/api-1-0"}, "page 1 and its repeat hold the same post"
    assert site.dead() == []


def test_an_api_answering_html_is_dead_lettered_saying_so(site: Site) -> None:
    text_rule = site.server.url("/a/not-json")
    site.write_rule(
        f'domains: [127.0.0.1]\napi: {{url: "{text_rule}", items: data.posts, fields: {{url: link}}}}\n',
        "api",
    )
    done = site.temp()
    assert done.returncode == 1, "nothing stored, an error: the temp crawl fails"
    (letter,) = site.dead()
    assert letter["reason"].startswith(f"{text_rule} is not JSON: "), letter


def test_an_api_whose_items_give_no_list_is_summed_up_as_such_not_as_no_json(site: Site) -> None:
    _api_rule(site, "pages=1&per=2&full=1")
    rule = site.rules / "api.yaml"
    rule.write_text(rule.read_text(encoding="utf-8").replace("items: data.posts", "items: data.none"))
    done = site.temp()
    assert done.returncode == 1, "nothing stored, an error: the temp crawl fails"
    (letter,) = site.dead()
    assert 'api.items "data.none" gives nothing (null or no such key)' in letter["reason"], letter
    assert "errors 1 (api.items no list: 1)" in done.stdout, done.stdout
    assert "not the API's JSON" not in done.stdout


def test_rules_try_on_an_api_page_whose_items_give_no_list_names_api_items_not_the_url(site: Site) -> None:
    # The URL is right and answers the API's JSON: the key to mend is api.items, not api.url. It said the
    # page's top-level keys alone ("data, paging"), where the same page saved and given as a file was told
    # the JMESPath of its list of items: now both name it.
    _api_rule(site, "pages=1&per=2&full=1")
    rule = site.rules / "api.yaml"
    rule.write_text(rule.read_text(encoding="utf-8").replace("items: data.posts", "items: data.post"))
    url = site.server.url("/api?pages=1&per=2&full=1")
    done = site.crawler("rules", "try", "api", url)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith(
        f"crawler rules try: error: {url} is the API's JSON, but `api.items` in {rule} gives no list of"
        " items: mend `api.items` there (the JMESPath of the page's list of items: data.posts); a crawl"
        f' dead-letters it: {url}: api.items "data.post" gives nothing (null or no such key), not a list'
        " of items"
    ), done.stderr
    assert "give the URL of the site's API there" not in done.stderr


def test_rules_try_on_an_api_page_shows_its_items_and_next_page(site: Site) -> None:
    _api_rule(site, "pages=2&per=2&full=1")
    url = site.server.url("/api?pages=2&per=2")
    done = site.crawler("rules", "try", "api", url)
    assert done.returncode == 0, done.stderr
    assert "as an API page: 2 items, 0 left out" in done.stdout
    assert f"{site.server.url('/a/api-1-0')} (its page fetched)\n    title: API post 1-0\n" in done.stdout
    assert f"next page  {site.server.url('/api?pages=2&per=2&cursor=2')}" in done.stdout
    as_json = json.loads(site.crawler("rules", "try", "api", url + "&full=1", "--format", "json").stdout)
    assert [item["stored_from"] for item in as_json["items"]] == ["json", "json"]
    assert as_json["items"][1]["fields"]["likes"] == "11"


def test_index_links_allow_and_deny_filter_the_items(site: Site) -> None:
    _api_rule(site, "pages=1&per=3&full=1")
    rule = site.rules / "api.yaml"
    links = "index:\n  links: {allow: ['/a/'], deny: ['api-1-1$']}\n"
    rule.write_text(rule.read_text(encoding="utf-8") + links, encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {"/a/api-1-0", "/a/api-1-2"}


def test_rules_try_on_an_api_page_leaves_out_the_items_index_links_refuse_as_the_crawl_does(
    site: Site,
) -> None:
    _api_rule(site, "pages=1&per=3&full=1")
    rule = site.rules / "api.yaml"
    links = "index:\n  links: {allow: ['/a/'], deny: ['api-1-1$']}\n"
    rule.write_text(rule.read_text(encoding="utf-8") + links, encoding="utf-8")
    url = site.server.url("/api?pages=1&per=3&full=1")
    done = site.crawler("rules", "try", "api", url)
    assert done.returncode == 0, done.stderr
    assert "as an API page: 2 items, 1 left out: 1 refused by index.links\n" in done.stdout, done.stdout
    assert site.server.url("/a/api-1-1") not in done.stdout
    as_json = json.loads(site.crawler("rules", "try", "api", url, "--format", "json").stdout)
    assert [item["url"] for item in as_json["items"]] == [
        site.server.url("/a/api-1-0"),
        site.server.url("/a/api-1-2"),
    ]
    assert as_json["left_out"] == 1


def test_rules_try_on_an_api_page_says_why_its_items_are_left_out(site: Site) -> None:
    _api_rule(site, "pages=1&per=3&full=1")
    rule = site.rules / "api.yaml"
    rule.write_text(rule.read_text(encoding="utf-8").replace("{url: link,", "{url: permalink,"))
    done = site.crawler("rules", "try", "api", site.server.url("/api?pages=1&per=3&full=1"))
    assert done.returncode == 0, done.stderr
    assert (
        'as an API page: 0 items, 3 left out: 3 without a URL (api.fields.url "permalink" gives none)\n'
        in done.stdout
    ), done.stdout


def test_an_empty_fields_mapping_is_an_error_naming_url() -> None:
    with pytest.raises(RuleErrors) as raised:
        parse_rule(API_RULE.split("  fields:", maxsplit=1)[0] + "  fields: {}\n", site="api")
    assert [error.key for error in raised.value.errors] == ["api.fields.url"]


def test_a_url_that_is_no_string_is_an_item_without_url() -> None:
    api = parse_rule(API_RULE, site="api").api
    assert api is not None
    body = json.dumps({"data": {"posts": [{"link": {"a": 1}}, {"link": 7}, {"link": " /p/3 "}]}}).encode()
    page = api.read(body, "http://api.test/v1/posts")
    assert [item.url for item in page.items] == ["http://api.test/p/3"] and page.without_url == 2


def test_the_rules_encoding_reads_an_api_in_gbk() -> None:
    api = parse_rule(API_RULE + "encoding: gbk\n", site="api").api
    assert api is not None
    body = json.dumps({"data": {"posts": [{"link": "/p/1", "title": "新闻"}]}}, ensure_ascii=False).encode(
        "gbk"
    )
    (item,) = api.read(body, "http://api.test/v1/posts", "gb18030").items
    assert item.fields["title"] == "新闻"


@pytest.mark.parametrize(
    ("title", "said"),
    [
        # Its UTF-8 leaves two bytes GBK cannot read (its lone 0x80 bytes are euro signs to GBK).
        (GBK_TITLE + "了", "undecodable; the page is valid UTF-8, which decodes it: read as utf-8 instead"),
        ("长江大桥重新通车", "without an error, but the page is valid UTF-8 with"),
    ],
    ids=["gbk-leaves-undecodable-characters", "gbk-decodes-into-other-characters"],
)
def test_an_api_in_utf8_is_stored_readable_and_warned_of_when_the_rules_encoding_does_not_read_it(
    site: Site, title: str, said: str
) -> None:
    """`encoding: gbk` on a site whose API answers UTF-8 (as JSON should): the items are read in UTF-8, as
    HTML pages are, and the crawl says once which key of which file to fix."""
    _api_rule(site, f"pages=1&per=2&full=1&title={quote(title)}")
    rule_file = site.rules / f"{site.name}.yaml"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + "encoding: gbk\n", encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert {article["title"] for article in site.stored().values()} == {f"{title} 1-0", f"{title} 1-1"}
    warned = " ".join(done.stderr.split())
    assert warned.count(f"{rule_file}: its `encoding: gbk` ") == 1, done.stderr[-4000:]
    assert said in warned, done.stderr[-4000:]
    assert "remove the `encoding` key, or set it to utf-8" in warned, done.stderr[-4000:]


def test_rules_try_on_an_api_url_answering_html_says_it_is_not_json(site: Site) -> None:
    url = site.server.url("/a/not-json")
    site.write_rule(
        f'domains: [127.0.0.1]\napi: {{url: "{url}", items: data.posts, fields: {{url: link}}}}\n', "api"
    )
    done = site.crawler("rules", "try", "api", url)
    assert done.returncode == 1, done.stdout
    assert done.stdout == "", "not read as an index page nor as an article page"
    said = (
        f"crawler rules try: error: {url} is not the API's JSON (got text/html): `api.url` in"
        f" {site.rules / 'api.yaml'} names it: give the URL of the site's API there; a crawl dead-letters it:"
        f" {url} is not JSON: Expecting value"
    )
    assert done.stderr.startswith(said), done.stderr


def test_rules_try_on_an_api_page_reads_unix_timestamps_and_names_a_published_it_cannot_read(
    tmp_path: Path,
) -> None:
    # An API's created_at is often a Unix timestamp: in seconds, in milliseconds, as a number or a string.
    write(tmp_path / "rules", "api.yaml", API_RULE)
    posts: list[dict[str, object]] = [
        {"link": "/p/1", "created": 1763634660},
        {"link": "/p/2", "created": 1763634660000},
        {"link": "/p/3", "created": "1763634660"},
    ]
    page = write(tmp_path, "page.json", json.dumps({"data": {"posts": posts}}))
    run = crawler("rules", "try", "api", str(page), "--url", "http://api.test/v1/posts", cwd=tmp_path)
    assert (run.code, run.stderr) == (0, "")
    stored = [line for line in run.stdout.splitlines() if line.startswith("    published: ")]
    assert stored == [
        f"    published: {value} (stored as 2025-11-20T10:31:00+00:00)"
        for value in ("1763634660", "1763634660000", "1763634660")
    ], run.stdout

    posts[1]["created"] = "21/11/2026"
    page.write_text(json.dumps({"data": {"posts": posts}}), encoding="utf-8")
    run = crawler("rules", "try", "api", str(page), "--url", "http://api.test/v1/posts", cwd=tmp_path)
    assert run.code == 0
    assert "    published: 21/11/2026\n" in run.stdout
    assert run.stderr.startswith(
        "crawler rules try: note: published '21/11/2026' is no date the crawl recognises: it is stored as"
        " the API gives it (and counted, fields/unparsed/published/api); in rules/api.yaml,"
        " api.fields.published: "
    ), run.stderr


def test_rules_try_on_a_json_page_whose_items_give_no_list_names_the_file_key_value_and_fix(
    tmp_path: Path,
) -> None:
    # A JSON page that api.url does not name is read as a page of the API all the same.
    write(tmp_path / "rules", "api.yaml", API_RULE)
    page = write(tmp_path, "page.json", json.dumps({"meta": {"total": 1}, "result": {"posts": [PAGE]}}))
    run = crawler("rules", "try", "api", "page.json", cwd=tmp_path)
    assert run.code == 1, run.stdout
    assert run.stderr == (
        'crawler rules try: error: rules/api.yaml: api.items: "data.posts" gives nothing (null or no such'
        " key) on page.json, read as a page of the rule's API, not a list of items (expected the JMESPath"
        " of the page's list of items: result.posts)\n"
    )
    page.write_text('{"data": {"posts": {"link": "/p/1"}}}', encoding="utf-8")
    run = crawler("rules", "try", "api", "page.json", cwd=tmp_path)
    assert run.stderr == (
        'crawler rules try: error: rules/api.yaml: api.items: "data.posts" gives an object on page.json,'
        " read as a page of the rule's API, not a list of items (expected the JMESPath of the page's list of"
        " items: the page's top level has the keys data)\n"
    )


def test_rules_try_on_a_json_page_whose_items_give_no_list_suggests_jmespath_that_gives_its_lists(
    tmp_path: Path,
) -> None:
    # Lists inside a list's objects (a page of sections, each with its posts), and keys JMESPath quotes
    # (a dash, a space): each suggestion is a JMESPath that gives that list on this very page.
    write(tmp_path / "rules", "api.yaml", API_RULE)
    post = PAGE["data"]["posts"][0]  # type: ignore[index]
    data = {
        "sections": [{"name": "city", "posts": [post]}, {"name": "sport", "posts": [post, post]}],
        "data-feed": {"top stories": [post]},
    }
    write(tmp_path, "page.json", json.dumps(data))
    run = crawler("rules", "try", "api", "page.json", cwd=tmp_path)
    assert run.code == 1, run.stdout
    suggested = run.stderr.rsplit("the JMESPath of the page's list of items: ", 1)[1].removesuffix(")\n")
    assert suggested == 'sections, sections[].posts[], "data-feed"."top stories"', run.stderr
    rule = tmp_path / "rules" / "api.yaml"
    for expression in suggested.split(", "):
        rule.write_text(API_RULE.replace("items: data.posts", f"items: '{expression}'"), encoding="utf-8")
        run = crawler("rules", "try", "api", "page.json", cwd=tmp_path)
        assert run.code == 0, (expression, run.stderr)
