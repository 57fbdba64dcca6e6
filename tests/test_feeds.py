"""Feeds: RSS 0.91, 1.0 and 2.0 and Atom read into entries; the rule key ``feeds`` checked like the other
URLs; a feed's entries kept by the rule; and real temp crawls of feeds served by the local test server
(entries' dates and authors stored where the page has none, a document that is no feed and one over the
size limit dead-lettered with the reason). The grabs of feed-only sites (conditional requests, the
revisit interval) are in tests/test_service.py."""

from __future__ import annotations

import codecs
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import feedparser
import pytest
import redis
from conftest import SiteServer
from crawlsite import RULE, Site
from siteserver import feed_document
from test_store import _WITHOUT_REDIRECTS_TABLE

from crawler.rules import RuleErrors, parse_rule
from crawler.rules.feeds import MAX_ENTRIES, FeedEntry, FeedError, read_feed
from crawler.store import open_store

FEED_URL = "http://news.test/feeds/latest.xml"
FEED_RULE = """
domains: [news.test]
feeds: ["http://news.test/feeds/latest.xml"]
article:
  fields:
    title: {xpath: //h1}
"""


@pytest.mark.parametrize(
    ("kind", "version"), [("rss", "rss20"), ("rss1", "rss10"), ("rss091", "rss091u"), ("atom", "atom10")]
)
def test_each_kind_of_feed_gives_its_entries_links_dates_and_authors(kind: str, version: str) -> None:
    document = feed_document(["/news/1.html", "http://news.test/news/2.html"], kind)
    feed = read_feed(document.encode(), FEED_URL)
    assert feed.version == version
    assert [entry.url for entry in feed.entries] == [
        "http://news.test/news/1.html",
        "http://news.test/news/2.html",
    ], "a relative link resolves against the feed's URL"
    assert [entry.title for entry in feed.entries] == ["Entry 0", "Entry 1"]
    if kind == "rss091":
        assert [(entry.published, entry.author) for entry in feed.entries] == [(None, None), (None, None)]
    else:
        assert [entry.published for entry in feed.entries] == [
            "2026-11-01T08:00:00+00:00",
            "2026-11-02T08:00:00+00:00",
        ]
        assert [entry.author for entry in feed.entries] == ["Author 0", "Author 1"], "the name, not the email"


SHANGHAI = ZoneInfo("Asia/Shanghai")


def _rss_dated(*dates: str) -> bytes:
    items = "".join(
        f"<item><link>http://news.test/{n}</link><pubDate>{d}</pubDate></item>" for n, d in enumerate(dates)
    )
    return f'<rss version="2.0"><channel><title>t</title>{items}</channel></rss>'.encode()


@pytest.mark.parametrize(
    ("written", "zone", "published"),
    [
        # A time without a UTC offset, as feeds of Chinese sites write pubDate: in the rule's zone.
        ("2026-11-20 10:31:00", SHANGHAI, "2026-11-20T02:31:00+00:00"),
        ("2026-11-20T10:31:00", ZoneInfo("America/New_York"), "2026-11-20T15:31:00+00:00"),
        ("2026-11-20 10:31:00", None, "2026-11-20T10:31:00+00:00"),
        # RFC 2822 without its zone, which feedparser does not read, and a year-first date it misreads
        # (2026-11-01T00:00): read as a page's published is.
        ("Fri, 20 Nov 2026 10:31:00", SHANGHAI, "2026-11-20T02:31:00+00:00"),
        ("Fri, 20 Nov 2026 10:31:00", None, "2026-11-20T10:31:00+00:00"),
        ("2026/11/20 10:31", SHANGHAI, "2026-11-20T02:31:00+00:00"),
        ("2026/11/20 10:31", None, "2026-11-20T10:31:00+00:00"),
        # A time with its offset is that instant whatever the zone.
        ("Fri, 20 Nov 2026 10:31:00 +0100", SHANGHAI, "2026-11-20T09:31:00+00:00"),
        ("Fri, 20 Nov 2026 10:31:00 GMT", SHANGHAI, "2026-11-20T10:31:00+00:00"),
        ("2026-11-20T10:31:00Z", SHANGHAI, "2026-11-20T10:31:00+00:00"),
        # ISO 8601's basic form, which feedparser reads as the date's midnight in UTC.
        ("20261120T103100Z", SHANGHAI, "2026-11-20T10:31:00+00:00"),
        ("20261120T103100+0800", None, "2026-11-20T02:31:00+00:00"),
        ("20261120T1031Z", None, "2026-11-20T10:31:00+00:00"),
        # A date alone stays a date, as a page's does (feedparser made it midnight in UTC: 08:00 in
        # Shanghai, and the day before in New York).
        ("2026-11-20", SHANGHAI, "2026-11-20"),
        ("Fri, 20 Nov 2026", SHANGHAI, "2026-11-20"),
        ("2026/11/20", ZoneInfo("America/New_York"), "2026-11-20"),
        ("2026-11-20", None, "2026-11-20"),
        # ...but a time the page's reader leaves out and feedparser reads is kept: RFC 3339 (Atom's dates)
        # allows a lowercase t and z.
        ("2026-11-20t10:31:00z", SHANGHAI, "2026-11-20T10:31:00+00:00"),
        # Where Berlin's clocks go back (02:30 twice: the first, +02:00) and forward (no 02:30: read at
        # +01:00), as a page's time is.
        ("2026-10-25 02:30:00", ZoneInfo("Europe/Berlin"), "2026-10-25T00:30:00+00:00"),
        ("2026-03-29 02:30:00", ZoneInfo("Europe/Berlin"), "2026-03-29T01:30:00+00:00"),
        ("no date at all", SHANGHAI, None),
    ],
)
def test_an_entrys_time_without_offset_is_read_in_the_zone_given_else_in_utc(
    written: str, zone: tzinfo | None, published: str | None
) -> None:
    (entry,) = read_feed(_rss_dated(written), FEED_URL, zone=zone).entries
    assert entry.published == published


def test_an_entrys_timestamp_is_judged_by_redis_clock_whatever_the_clock_of_the_workers_machine(
    tmp_path: Path, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on a machine whose clock is 2 days behind (a virtual machine resumed from a snapshot) read
    an entry's ``pubDate`` written as a timestamp of an hour ago as more than a day ahead of now, no date:
    its article was queued without it. It is judged by Redis's clock now, as the article's ``fetched_at``
    is."""
    from crawlsite import sites_spider
    from scrapy.http import Request, XmlResponse

    from crawler.redisio import clock as clock_module
    from crawler.requests import FEED, listing_request
    from crawler.worker.connection import server_of

    rules = tmp_path / "feed-rules"
    rules.mkdir()
    (rules / "news.yaml").write_text(FEED_RULE, encoding="utf-8")
    real = time.time
    published = int(real()) - 3600
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() - 2 * 86_400)
    spider = sites_spider(tmp_path, redis_server, CRAWLER_RULES_DIR=str(rules))
    server_of(spider.crawler)  # the worker connects as it starts
    spider.opened()
    rule = spider.rule_of("news")
    assert rule is not None
    queued: list[Request] = []

    def queue_new(_rule: object, requests: list[Request], _job: str | None) -> int:
        queued.extend(requests)
        return len(requests)

    monkeypatch.setattr(spider, "_queue_new", queue_new)
    request = listing_request(rule, FEED, FEED_URL)
    list(spider.parse_feed(XmlResponse(FEED_URL, body=_rss_dated(str(published)), request=request)))
    assert [one.meta["entry"].get("published") for one in queued] == [
        datetime.fromtimestamp(published, UTC).isoformat()
    ]


def test_an_entrys_updated_time_without_offset_is_read_in_the_zone_when_it_has_no_published() -> None:
    document = (
        b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><id>urn:f</id>'
        b'<entry><id>urn:1</id><link href="http://news.test/1"/><updated>2026-11-20T10:31:00</updated></entry>'
        b'<entry><id>urn:2</id><link href="http://news.test/2"/><published>2026-11-20T10:31:00</published>'
        b"<updated>2026-11-21T10:31:00+08:00</updated></entry></feed>"
    )
    only_updated, both = read_feed(document, FEED_URL, zone=SHANGHAI).entries
    assert only_updated.published == "2026-11-20T02:31:00+00:00"
    assert both.published == "2026-11-20T02:31:00+00:00", "published before updated, as before"


@pytest.mark.parametrize(
    ("written", "author"),
    [
        ("editor@wire.example (Jane Feed)", "Jane Feed"),
        ("desk@paper.online (Li Wei)", "Li Wei"),
        ("news@press.agency(Ana  María)", "Ana María"),
        ("jane@x.com (Jane (the elder) Doe)", "Jane (the elder) Doe"),
        ("desk@paper.online ()", "desk@paper.online"),
        ("desk@paper.online", "desk@paper.online"),
        ("Jane Plain", "Jane Plain"),
        ("Jane Doe (Reuters)", "Jane Doe (Reuters)"),
        ("Jane Angle <jane@wire.example>", "Jane Angle"),
    ],
)
def test_an_rss_author_gives_the_name_whatever_the_email_ends_with(written: str, author: str) -> None:
    escaped = written.replace("<", "&lt;").replace(">", "&gt;")
    document = (
        '<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title>'
        f"<item><link>http://news.test/a</link><author>{escaped}</author></item>"
        f"<item><link>http://news.test/b</link><dc:creator>{escaped}</dc:creator></item>"
        "</channel></rss>"
    )
    feed = read_feed(document.encode(), FEED_URL)
    assert [entry.author for entry in feed.entries] == [author, author]


def test_an_atom_author_gives_the_name_else_the_email() -> None:
    entries = [
        "<name>Jane Atom</name><email>jane@wire.example</email>",
        "<email>desk@paper.online</email>",
        "<name>Only Name</name>",
    ]
    document = (
        '<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
        + "".join(
            f'<entry><title>{n}</title><link href="http://news.test/{n}"/><author>{author}</author></entry>'
            for n, author in enumerate(entries)
        )
        + "</feed>"
    )
    feed = read_feed(document.encode(), FEED_URL)
    assert [entry.author for entry in feed.entries] == ["Jane Atom", "desk@paper.online", "Only Name"]


def test_an_entry_without_a_link_takes_its_permalink_guid_or_is_counted_out() -> None:
    document = (
        '<rss version="2.0"><channel><title>t</title>'
        '<item><title>guid</title><guid isPermaLink="true">http://news.test/g.html</guid></item>'
        "<item><title>nothing to follow</title><description>text</description></item>"
        "</channel></rss>"
    )
    feed = read_feed(document.encode(), FEED_URL)
    assert [entry.url for entry in feed.entries] == ["http://news.test/g.html"]
    assert feed.without_link == 1


def test_a_broken_but_recognisable_feed_is_read() -> None:
    document = '<rss version="2.0"><channel><item><title>Fish & chips</title><link>/a</link></item></channel>'
    feed = read_feed(document.encode(), FEED_URL)
    assert [(entry.url, entry.title) for entry in feed.entries] == [("http://news.test/a", "Fish & chips")]


def test_entries_past_the_limit_are_left_out_and_counted() -> None:
    document = feed_document([f"/a/{n}" for n in range(12)], "rss")
    feed = read_feed(document.encode(), FEED_URL, max_entries=5)
    assert [entry.url for entry in feed.entries] == [f"http://news.test/a/{n}" for n in range(5)]
    assert feed.over_limit == 7


@pytest.mark.parametrize("junk", ["<a", "</", "<!", "<!DOCTYPE", "<a b"])
def test_a_feed_body_of_tags_never_closed_is_read_in_one_pass(junk: str) -> None:
    """A body garbled into "<" never closed ("<a<a<a..." after the channel, 1 MB) held the crawl thread
    for ever: the feed's cut (_cut) tried, at each "<", every split of the rest into a tag name and its
    attributes, to the end of the body (5 KB took over 2 minutes; "<!" and "</" read the rest at each "<",
    quadratic). It reads the body once. Run in a process of its own whose guard (60 s, against well under
    a second) turns a hang into a failure."""
    code = (
        "from crawler.rules.feeds import _cut\n"
        f"body = b'<rss version=\"2.0\"><channel>' + {junk.encode()!r} * (1000000 // {len(junk)})\n"
        "document, left = _cut(body, 1000)\n"
        "print(document == body, left)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "0"], "read whole, no entry left out"


@pytest.mark.parametrize("kind", ["rss", "rss1", "atom"])
def test_a_feed_far_past_the_limit_is_parsed_no_further_than_the_limit(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """feedparser reads the entries up to the limit, not the whole feed (one of 100,000 entries held the
    crawl thread 9 s and 199 MB to keep its first 1000), and the entries past it are still counted."""
    parsed: list[int] = []
    parse = feedparser.parse

    def counting(*args: Any, **kwargs: Any) -> Any:
        result = parse(*args, **kwargs)
        parsed.append(len(result.entries))
        return result

    monkeypatch.setattr(feedparser, "parse", counting)
    document = feed_document([f"/a/{n}" for n in range(5000)], kind)
    feed = read_feed(document.encode(), FEED_URL, max_entries=10)
    assert [entry.url for entry in feed.entries] == [f"http://news.test/a/{n}" for n in range(10)]
    assert feed.over_limit == 4990
    assert parsed == [10], "entries feedparser read"


def _broken(document: str) -> bytes:
    """``document`` with an unclosed ``<br>`` in each entry's title and its item tags in capitals: tags
    that do not nest, which feedparser reads with its loose parser."""
    return (
        document.replace("</title>", "<br></title>")
        .replace("<item>", "<ITEM>")
        .replace("</item>", "</ITEM>")
        .encode()
    )


def _utf16(document: str, codec: str) -> bytes:
    declared = document.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-16"?>')
    return codecs.BOM_UTF16_LE + declared.encode(codec) if codec == "utf-16-le" else declared.encode(codec)


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda document: _utf16(document, "utf-16-le"), id="utf-16-le"),
        pytest.param(lambda document: _utf16(document, "utf-16-be"), id="utf-16-be"),
        pytest.param(_broken, id="broken"),
    ],
)
def test_a_utf16_or_broken_feed_far_past_the_limit_is_parsed_no_further_than_the_limit(
    encode: Callable[[str], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A feed in UTF-16, and one whose tags do not nest, are cut before the entry past the limit too (they
    were parsed whole: 15.6 s and 23.7 s of CPU for 100,000 entries), and the entries past it counted."""
    parsed: list[int] = []
    parse = feedparser.parse

    def counting(*args: Any, **kwargs: Any) -> Any:
        result = parse(*args, **kwargs)
        parsed.append(len(result.entries))
        return result

    monkeypatch.setattr(feedparser, "parse", counting)
    body = encode(feed_document([f"/a/{n}" for n in range(5000)], "rss"))
    feed = read_feed(body, FEED_URL, max_entries=10)
    assert [entry.url for entry in feed.entries] == [f"http://news.test/a/{n}" for n in range(10)]
    titles = [(entry.title or "").removesuffix("<br />") for entry in feed.entries[:2]]
    assert titles == ["Entry 0", "Entry 1"]
    assert feed.over_limit == 4990
    assert parsed == [10], "entries feedparser read"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            b"<!DOCTYPE html><html><body><p>Sign in</p></body></html>",
            "is an HTML page, not an RSS or Atom feed",
        ),
        (b"", "is not an RSS or Atom feed (it starts '')"),
        (b"%PDF-1.7 binary", "is not an RSS or Atom feed: "),
        (b'<?xml version="1.0"?><catalog><book/></catalog>', "is not an RSS or Atom feed"),
    ],
)
def test_a_document_that_is_no_feed_says_what_it_is(body: bytes, says: str) -> None:
    with pytest.raises(FeedError) as raised:
        read_feed(body, FEED_URL)
    assert str(raised.value).startswith(FEED_URL) and says in str(raised.value)


def test_entry_hints_leave_out_what_the_feed_does_not_say() -> None:
    entry = FeedEntry("http://news.test/a", title="A", published=None, author="")
    assert entry.hints() == {"title": "A"}


# --- the rule key ------------------------------------------------------------------------------------------


def test_a_rule_may_read_its_site_from_feeds_alone() -> None:
    rule = parse_rule(FEED_RULE, site="wire")
    assert rule.feeds == (FEED_URL,)
    assert rule.start_urls == ()


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ('"ftp://news.test/feed.xml"', 'feeds: not an http(s) URL: "ftp://news.test/feed.xml"'),
        ('["http://elsewhere.test/feed.xml"]', 'feeds[0]: host "elsewhere.test" of'),
        ("[]", "feeds: an empty list (expected an http"),
        ("42", "feeds: wrong type: the number 42"),
    ],
)
def test_a_bad_feed_url_is_named_with_its_key_and_value(feeds: str, message: str) -> None:
    text = FEED_RULE.replace('["http://news.test/feeds/latest.xml"]', feeds)
    with pytest.raises(RuleErrors) as raised:
        parse_rule(text, site="wire")
    assert any(str(error).startswith(f"rules/wire.yaml: {message}") for error in raised.value.errors), (
        raised.value
    )


def test_a_rule_with_no_start_urls_nor_any_other_way_in_names_them_all() -> None:
    text = "domains: [news.test]\nindex: {links: {xpath: //ul}}\n"
    with pytest.raises(RuleErrors) as raised:
        parse_rule(text, site="wire")
    (error,) = raised.value.errors
    assert str(error).startswith("rules/wire.yaml: start_urls: missing")
    assert str(error).endswith("(or feeds, sitemaps, api, search or discover))")


def test_start_urls_still_need_an_index_when_the_rule_has_feeds_too() -> None:
    text = FEED_RULE + 'start_urls: ["http://news.test/"]\n'
    with pytest.raises(RuleErrors) as raised:
        parse_rule(text, site="wire")
    assert [error.key for error in raised.value.errors] == ["index"]


def test_the_rule_keeps_the_entries_on_its_domains_that_its_links_allow() -> None:
    text = FEED_RULE + "index:\n  links: {allow: ['/news/\\d+\\.html$'], deny: ['/news/9']}\n"
    rule = parse_rule(text, site="wire")
    entries = [
        FeedEntry("/news/1.html", title="one"),
        FeedEntry("http://news.test/news/1.html#comments", title="one again"),
        FeedEntry("http://elsewhere.test/news/2.html"),
        FeedEntry("/video/3.html"),
        FeedEntry("/news/9.html"),
        FeedEntry("https://live.news.test/news/4.html", author="A"),
    ]
    kept = rule.feed_entries(entries, FEED_URL)
    assert kept == [
        FeedEntry("http://news.test/news/1.html", title="one"),
        FeedEntry("https://live.news.test/news/4.html", author="A"),
    ]


# --- crawls ------------------------------------------------------------------------------------------------


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path, name="wire")


def _feed_rule(site: Site, *feeds: str, start: str | None = None, zone: str | None = None) -> None:
    """A rule of the test server reading ``feeds`` (paths), and an index page when ``start`` is given;
    ``zone``, its ``timezone``."""
    text = (
        RULE.format(start=site.server.url(start))
        if start
        else RULE.split("start_urls:")[0]
        + (
            "article:\n  fields:\n    title: {xpath: //h1}\n"
            '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n'
        )
    )
    text += "feeds: [" + ", ".join(f'"{site.server.url(feed)}"' for feed in feeds) + "]\n"
    text += f"timezone: {zone}\n" if zone else ""
    site.write_rule(text)


def _feed(kind: str, *links: str) -> str:
    return f"/feed?format={kind}&to=" + quote(",".join(links), safe="/,")


@pytest.mark.parametrize("kind", ["rss", "atom"])
def test_a_temp_crawl_of_a_feed_stores_its_articles_with_the_entries_dates_and_authors(
    site: Site, kind: str
) -> None:
    _feed_rule(site, _feed(kind, "/a/feed-one", "/a/feed-two", "http://elsewhere.test/a/three"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 2 articles" in done.stdout, done.stdout
    stored = site.stored()
    assert set(stored) == {"/a/feed-one", "/a/feed-two"}, "the entry off the rule's domains is not followed"
    one, two = stored["/a/feed-one"], stored["/a/feed-two"]
    assert (one["published"], one["author"]) == ("2026-11-01T08:00:00+00:00", "Author 0")
    assert (two["published"], two["author"]) == ("2026-11-02T08:00:00+00:00", "Author 1")
    assert one["title"] == "Article feed-one", "the page's own title before the entry's"


@pytest.mark.parametrize(
    ("kind", "timezone", "published"),
    [
        ("rss", "Asia/Shanghai", "2026-11-01T00:00:00+00:00"),
        ("atom", "'+05:30'", "2026-11-01T02:30:00+00:00"),
        ("rss", None, "2026-11-01T08:00:00+00:00"),
    ],
)
def test_a_feeds_time_without_offset_is_stored_as_read_in_the_rules_timezone(
    site: Site, kind: str, timezone: str | None, published: str
) -> None:
    """An entry's ``2026-11-01 08:00:00`` (no UTC offset, as feeds of Chinese sites write ``pubDate``) was
    read as UTC whatever the rule's ``timezone``: with the key it is the site's time, the instant stored in
    UTC as the feed's other dates are; without it, UTC as before."""
    _feed_rule(site, _feed(kind, "/a/feed-one") + "&dates=naive", zone=timezone)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert site.stored()["/a/feed-one"]["published"] == published


def test_a_feed_beside_index_pages_adds_only_what_they_do_not_list(site: Site) -> None:
    _feed_rule(site, _feed("rss", "/a/both", "/a/feed-only"), start="/links?to=/a/both,/a/index-only")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {"/a/both", "/a/feed-only", "/a/index-only"}
    assert "stored 3 articles" in done.stdout, "an article listed in both is fetched once"
    assert stored["/a/both"]["published"] == "2026-11-01T08:00:00+00:00", "whichever listing queued it"


def test_an_article_stored_before_its_feed_was_read_takes_the_entrys_date_but_keeps_a_known_one(
    site: Site,
) -> None:
    """An article fetched from an index page before the feed was read was stored with no date, and the
    feed, meeting its URL seen, queued nothing: its entry's date was lost. The stored document now takes
    the date, author (and title) it lacks, never one it has."""
    site.rule("/a/one", "/a/two")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert [(stored[p]["published"], stored[p]["author"]) for p in ("/a/one", "/a/two")] == [(None, None)] * 2
    with open_store({"CRAWLER_DATA_DIR": str(site.data)}) as store:
        assert store.fill_empty(site.server.url("/a/two"), {"published": "2026-01-05"}) == ("published",)
    _feed_rule(site, _feed("rss", "/a/one", "/a/two"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    one, two = stored["/a/one"], stored["/a/two"]
    assert (one["published"], one["author"]) == ("2026-11-01T08:00:00+00:00", "Author 0")
    assert (two["published"], two["author"]) == ("2026-01-05", "Author 1"), "a known date is kept"
    assert one["title"] == "Article one", "the page's own title before the entry's"


def test_an_article_stored_before_a_feed_whose_link_redirects_to_it_takes_the_entrys_date(site: Site) -> None:
    """A feed's link that 301-redirects to an article stored by an earlier crawl (under the URL it led to,
    the link in its ``redirected_from``) met its URL seen, and its note found no document of that URL: the
    entry's date was lost. The note finds the article the link redirected to (the store's table of
    redirects, which the week's file stored by a crawler of before it gets as it is opened), and the
    article takes what it lacks; `articles show` of the link still finds it."""
    link = "/redirect?to=/a/moved-one&status=301"
    site.rule(link)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {"/a/moved-one"}
    assert stored["/a/moved-one"]["redirected_from"] == [site.server.url(link)]
    assert (stored["/a/moved-one"]["published"], stored["/a/moved-one"]["author"]) == (None, None)
    (week,) = (site.data / "articles").glob("articles_*.sqlite")
    with sqlite3.connect(week) as older:
        older.executescript(_WITHOUT_REDIRECTS_TABLE)
    older.close()
    _feed_rule(site, _feed("rss", link))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    moved = site.stored()["/a/moved-one"]
    assert (moved["published"], moved["author"]) == ("2026-11-01T08:00:00+00:00", "Author 0")
    assert moved["title"] == "Article moved-one", "the page's own title before the entry's"
    shown = site.crawler("articles", "show", site.server.url(link), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["redirect"] == {
        "url": site.server.url(link),
        "stored_as": site.server.url("/a/moved-one"),
    }
    assert document["published"] == "2026-11-01T08:00:00+00:00"
    with sqlite3.connect(week) as check:
        assert check.execute("SELECT url FROM redirects").fetchall() == [(site.server.url(link),)]
    check.close()


def test_an_entry_met_by_one_worker_reaches_the_article_another_worker_stores(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """The worker that reads a feed meeting a URL seen noted its entry in its own process only: the
    article another worker fetched (the queue is shared) was stored without the date. The entry is noted
    in Redis, and the batch write that stores the article (any worker's) gives the document what it
    lacks and removes the note."""
    from crawler.keys import Keys
    from crawler.redisio import entries
    from crawler.store import Written
    from crawler.store.document import make_document
    from crawler.worker.pipelines.store import _write_found

    keys = Keys("crawler")
    url = "http://news.test/a/two"
    entries.note(redis_client, keys, {url: {"published": "2026-11-02T08:00:00+00:00", "author": "Feed"}})
    article = {
        "site": "news", "url": url, "fetched_at": "2026-11-20T10:00:00Z", "title": "Two",
        "body": "The second article, in full.", "published": None, "author": "Desk", "job": "j1",
    }  # fmt: skip
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store:
        (written,) = _write_found(store, [make_document(article)], (redis_client, keys, None), {})
        assert isinstance(written, Written)
        assert (written.outcome, written.filled) == ("new", ("published",))
        document = store.get(url)
    assert document is not None
    assert (document["published"], document["author"]) == ("2026-11-02T08:00:00+00:00", "Desk")
    assert redis_client.hlen(keys.met_entries) == redis_client.zcard(keys.met_entries_at) == 0


def test_an_entry_noted_before_its_article_was_stored_whole_goes_with_the_batch_that_stores_it(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """A feed meeting a URL another listing queued notes its entry; the article's page gave a title, date
    and author, so its batch took nothing from the note and left it for 7 days: a site read from its index
    page and its feed kept a note of each of its articles of the week (20 of 22 notes in a soak). The batch
    that stores a whole document drops the notes of its URL and of the URLs it was redirected from."""
    from crawler.keys import Keys
    from crawler.redisio import entries
    from crawler.store import Written
    from crawler.store.document import make_document
    from crawler.worker.pipelines.store import _write_found

    keys = Keys("crawler")
    url, short, other = "http://news.test/a/whole", "http://news.test/s/1", "http://news.test/a/later"
    met = {"published": "2026-11-02T08:00:00+00:00", "author": "Feed"}
    entries.note(redis_client, keys, {url: met, short: met, other: met})
    article = {
        "site": "news", "url": url, "fetched_at": "2026-11-20T10:00:00Z", "title": "Whole",
        "body": "An article with every field.", "published": "2026-11-01T08:00:00+00:00", "author": "Desk",
        "job": "j1", "redirected_from": [short],
    }  # fmt: skip
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store:
        (written,) = _write_found(store, [make_document(article)], (redis_client, keys, None), {})
        assert isinstance(written, Written) and (written.outcome, written.filled) == ("new", ())
        document = store.get(url)
    assert document is not None and (document["published"], document["author"]) == (
        "2026-11-01T08:00:00+00:00",
        "Desk",
    )
    assert redis_client.hkeys(keys.met_entries) == [other.encode()], "the note of an article not stored stays"
    assert redis_client.zrange(keys.met_entries_at, 0, -1) == [other.encode()]
    redis_client.delete(keys.met_entries, keys.met_entries_at)


def test_a_batch_of_whole_and_lacking_documents_reads_their_notes_in_one_call_and_writes_none_when_none(
    redis_client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch with a document stored whole and one lacking a field made a call to drop the first's notes
    (HDEL, ZREM in MULTI) whether it had any, and another to read the second's: three round trips a batch
    with the redirects' read, a write each. The notes of both are read in one call, and those of a whole
    document removed, as read, only when there are some: two round trips, no write, when no note waits."""
    from redis.connection import AbstractConnection

    from crawler.keys import Keys
    from crawler.redisio import entries
    from crawler.store import Written
    from crawler.store.document import make_document
    from crawler.worker.pipelines.store import _write_found

    keys = Keys("crawler")
    redis_client.delete(keys.met_entries, keys.met_entries_at)
    base = {"site": "news", "fetched_at": "2026-11-20T10:00:00Z", "job": "j1"}
    whole_url, lacking_url = "http://news.test/a/whole", "http://news.test/a/lacking"
    whole = {**base, "url": whole_url, "title": "Whole", "author": "Desk"}
    whole |= {"published": "2026-11-01T08:00:00+00:00", "body": "An article with every field."}
    lacking = {**base, "url": lacking_url, "title": "Lacking", "published": None}
    lacking["body"] = "An article with no date and no author."
    sent: list[bytes] = []
    send = AbstractConnection.send_packed_command

    def recorded(connection: AbstractConnection, command: Any, check_health: bool = True) -> None:
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        send(connection, command, check_health)  # type: ignore[no-untyped-call]

    batch = [make_document(whole), make_document(lacking)]
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store:
        monkeypatch.setattr(AbstractConnection, "send_packed_command", recorded)
        written = _write_found(store, batch, (redis_client, keys, None), {})
        monkeypatch.undo()
        assert [result.outcome for result in written if isinstance(result, Written)] == ["new", "new"]
        assert len(sent) == 2, sent
        assert not [command for command in sent if b"HDEL" in command or b"MULTI" in command], sent
        met = {"published": "2026-11-02T08:00:00+00:00", "author": "Feed"}
        entries.note(redis_client, keys, {whole_url: met, lacking_url: met})
        _write_found(store, [make_document(whole), make_document(lacking)], (redis_client, keys, None), {})
        document = store.get(lacking_url)
    assert document is not None and (document["published"], document["author"]) == (
        "2026-11-02T08:00:00+00:00",
        "Feed",
    )
    assert redis_client.hlen(keys.met_entries) == redis_client.zcard(keys.met_entries_at) == 0


def test_a_note_noted_again_while_a_batch_gives_it_stays_for_the_worker_that_noted_it(
    redis_client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_give_notes reads the notes (HMGET), fills the documents, then removes each note only if it is
    still as read (a second read, in the script that removes it): another worker's listing that notes an
    entry again meanwhile (its author, say) keeps its note, which its own give reads after noting. One
    read and a plain HDEL would drop that author for good."""
    from crawler.keys import Keys
    from crawler.redisio import entries
    from crawler.store.document import make_document
    from crawler.worker.pipelines.store import _write_found

    keys = Keys("crawler")
    redis_client.delete(keys.met_entries, keys.met_entries_at)
    url = "http://news.test/a/raced"
    entries.note(redis_client, keys, {url: {"published": "2026-11-02T08:00:00+00:00"}})
    article = {
        "site": "news", "url": url, "fetched_at": "2026-11-20T10:00:00Z", "title": "Raced",
        "body": "An article whose feed is read twice.", "published": None, "author": None, "job": "j1",
    }  # fmt: skip
    with open_store({"CRAWLER_DATA_DIR": str(tmp_path)}) as store:
        fill = store.fill_empty

        def noted_meanwhile(target: str, values: Any) -> tuple[str, ...] | None:
            entries.note(redis_client, keys, {url: {"author": "Feed"}})
            return fill(target, values)

        monkeypatch.setattr(store, "fill_empty", noted_meanwhile)
        _write_found(store, [make_document(article)], (redis_client, keys, None), {})
    assert json.loads(redis_client.hget(keys.met_entries, url) or b"{}") == {
        "published": "2026-11-02T08:00:00+00:00",
        "author": "Feed",
    }
    redis_client.delete(keys.met_entries, keys.met_entries_at)


def test_a_note_of_a_worker_whose_clock_is_days_ahead_drops_no_other_workers_note(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes are dropped 7 days after they were noted: a worker on a machine whose clock is 8 days ahead
    dropped the note another worker had just made, by its own clock. Notes go by Redis's clock."""
    import time

    from crawler.keys import Keys
    from crawler.redisio import clock as clock_module
    from crawler.redisio import entries

    keys = Keys("crawler")
    redis_client.delete(keys.met_entries, keys.met_entries_at)
    entries.note(redis_client, keys, {"http://news.test/a/one": {"published": "2026-11-02T08:00:00+00:00"}})
    real = time.time
    monkeypatch.setattr(clock_module, "_offset", clock_module._offset)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + 8 * 24 * 3600)
    clock_module.redis_clock(redis_client)  # the far worker's offset, measured as it connects
    dropped = entries.note(redis_client, keys, {"http://news.test/a/two": {"author": "Feed"}})
    assert dropped == 0
    assert sorted(redis_client.hkeys(keys.met_entries)) == [
        b"http://news.test/a/one",
        b"http://news.test/a/two",
    ]
    redis_client.delete(keys.met_entries, keys.met_entries_at)


def test_a_feed_that_is_an_html_page_is_dead_lettered_saying_so(site: Site) -> None:
    _feed_rule(site, "/a/not-a-feed", _feed("atom", "/a/fine"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert letter["url"] == site.server.url("/a/not-a-feed")
    assert "is an HTML page, not an RSS or Atom feed" in letter["reason"], letter
    assert list(site.stored()) == ["/a/fine"], "the other feed of the rule is read all the same"
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    assert requeued.stdout.splitlines()[0] == "requeued 1 dead letter", (
        "nothing lost: the feed can be read again"
    )


def test_a_feed_that_is_an_html_page_counts_as_fetched_and_the_summary_names_its_rule_key(site: Site) -> None:
    _feed_rule(site, "/a/front-page")
    done = site.temp()
    assert done.returncode == 1, "an error, nothing stored"
    lines = done.stdout.splitlines()
    assert lines[0].startswith("fetched 1 page, stored 0 articles, skipped 0"), done.stdout
    url = site.server.url("/a/front-page")
    said = (
        f"{url} is not a feed (got text/html): `feeds[0]` in {site.rules / 'wire.yaml'} names it: give the"
        " URL of the site's feed there (`crawler rules try wire URL` shows what a URL holds)"
    )
    assert lines[-1] == said, done.stdout
    assert f"crawler temp: warning: wire: {said}" in done.stderr.splitlines(), done.stderr[-4000:]
    assert "nothing could be fetched" not in done.stdout
    # Requeued and an HTML page still: the job counts the page fetched once.
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    assert requeued.stdout.splitlines()[0] == "requeued 1 dead letter", requeued.stderr
    again = site.temp()
    summary = again.stdout.splitlines()[1]
    assert summary.startswith("fetched 1 page, stored 0 articles,"), again.stdout
    assert summary.endswith("errors 1 (not a feed: 1)"), again.stdout


def test_the_note_of_a_feed_that_is_an_html_page_suggests_rules_try_as_the_crawler_was_run(
    site: Site,
) -> None:
    """The worker writes the note: it suggests ``rules try`` with ``CRAWLER_COMMAND`` and the ``--rules-dir``
    given, as the command's own messages do."""
    _feed_rule(site, "/a/front-page")
    done = site.crawler("--rules-dir", str(site.rules), "temp", site.name, CRAWLER_COMMAND="./run.sh crawler")
    assert done.returncode == 1, "an error, nothing stored"
    hint = f"(`./run.sh crawler --rules-dir {site.rules} rules try wire URL` shows what a URL holds)"
    assert done.stdout.splitlines()[-1].endswith(hint), done.stdout


def test_a_feed_url_the_request_percent_encodes_is_still_named_by_its_rule_key(site: Site) -> None:
    """``/a/front page`` is requested as ``/a/front%20page``: the page is still the one ``feeds[0]``
    names."""
    _feed_rule(site, "/a/front page")
    done = site.temp()
    assert done.returncode == 1, "an error, nothing stored"
    said = f"is not a feed (got text/html): `feeds[0]` in {site.rules / 'wire.yaml'} names it"
    assert said in done.stdout.splitlines()[-1], done.stdout


def test_a_feed_that_is_no_html_page_gets_no_note_that_it_is_an_html_page(site: Site) -> None:
    _feed_rule(site, "/robots.txt")
    done = site.temp()
    (letter,) = site.dead()
    assert "is not an RSS or Atom feed" in letter["reason"], letter
    assert "is not a feed (got" not in done.stdout + done.stderr, done.stdout


def test_a_50_mb_feed_ends_as_a_dead_letter_at_the_size_limit(site: Site) -> None:
    _feed_rule(site, "/large?mb=50", _feed("rss", "/a/small"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert letter["reason"] == (
        "download cancelled: the response was larger than DOWNLOAD_MAXSIZE (33,554,432 bytes):"
        " 52,428,800 bytes by its Content-Length; a page this large needs a larger DOWNLOAD_MAXSIZE than"
        " 33,554,432 bytes: `-s DOWNLOAD_MAXSIZE=67108864` on the crawl's command (worker, run or temp),"
        " then requeue it"
    ), letter["reason"]  # DOWNLOAD_MAXSIZE, 32 MB by default
    assert list(site.stored()) == ["/a/small"]


def test_a_gzipped_feed_that_decompresses_past_the_size_limit_ends_as_a_dead_letter(site: Site) -> None:
    """A feed.xml.gz is read decompressed (no Content-Encoding undoes it), never past DOWNLOAD_MAXSIZE: 40
    KB that inflate to 40 MB are dead-lettered saying so; the other feed of the rule is read."""
    _feed_rule(site, "/feed-bomb.xml.gz", "/feed.xml.gz?to=/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert letter["reason"] == (
        f"{site.server.url('/feed-bomb.xml.gz')} decompresses to more than 33,554,432 bytes, over the size"
        " limit of a page after decompression (a gzip bomb, or a feed to read with a larger"
        " DOWNLOAD_MAXSIZE, or --max-bytes of a command)"
    ), letter["reason"]
    assert list(site.stored()) == ["/a/small"]


def test_a_feed_past_the_entry_limit_says_how_many_entries_were_left_out_in_good_english(site: Site) -> None:
    """The limit is ``MAX_ENTRIES`` (1000): a feed of 1001 entries leaves out one entry, 1002 two."""
    for extra, said in ((1, "has 1 entry past its first 1000"), (2, "has 2 entries past its first 1000")):
        feed = _feed("rss", "/a/kept") + f"&elsewhere={MAX_ENTRIES - 1 + extra}"
        _feed_rule(site, feed)
        done = site.temp()
        assert done.returncode == 0, done.stderr[-4000:]
        assert f"wire: the feed {site.server.url(feed)} {said}, left out" in done.stderr, done.stderr[-4000:]
        assert list(site.stored()) == ["/a/kept"]


def test_rules_try_on_a_feed_gives_why_entries_may_be_left_out_only_when_some_were(site: Site) -> None:
    feed = _feed("rss", "/a/one", "/a/two")
    _feed_rule(site, feed)
    done = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert done.returncode == 0, done.stderr
    assert "as a feed (rss20): 2 article links, 0 left out\n" in done.stdout, done.stdout
    assert "off the rule's domains" not in done.stdout, "reasons for entries none of which was left out"
    feed = _feed("rss", "/a/one", "http://elsewhere.test/a/two")
    _feed_rule(site, feed)
    done = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert "as a feed (rss20): 1 article link, 1 left out: 1 off the domains\n" in done.stdout, done.stdout


def test_rules_try_on_a_feed_or_a_sitemap_counts_each_reason_an_entry_was_left_out(site: Site) -> None:
    """It said `1 left out (off the rule's domains, refused by index.links allow/deny, repeated, or without
    a link)` of a feed, every reason that might be, and of a sitemap `1 left out` and no reason at all: a
    user could not tell which entry was dropped or why."""
    feed = _feed("rss", "/a/one", "/a/one", "http://elsewhere.test/a/two", "/a/denied")
    _feed_rule(site, feed)
    rule = site.rules / f"{site.name}.yaml"
    rule.write_text(rule.read_text(encoding="utf-8") + "index:\n  links: {deny: '/a/denied'}\n", "utf-8")
    done = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert done.returncode == 0, done.stderr
    assert (
        "as a feed (rss20): 1 article link, 3 left out: 1 repeated, 1 off the domains, 1 refused by"
        " index.links\n"
    ) in done.stdout, done.stdout
    links = ("/a/one", "http://elsewhere.test/a/two", "/a/denied", "/a/one")
    sitemap = site.server.url("/sitemap.xml?to=" + quote(",".join(links), safe="/,"))
    done = site.crawler("rules", "try", "wire", sitemap)
    assert done.returncode == 0, done.stderr
    assert (
        "as a urlset: 1 article link, 3 left out: 1 off the domains, 1 refused by index.links, 1 repeated\n"
    ) in done.stdout, done.stdout


def test_rules_try_on_a_feed_lists_the_entries_the_crawl_would_follow(site: Site) -> None:
    feed = _feed("atom", "/a/one", "http://elsewhere.test/a/two", "/a/three")
    _feed_rule(site, feed)
    done = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert done.returncode == 0, done.stderr
    assert "as a feed (atom10): 2 article links, 1 left out" in done.stdout, done.stdout
    said = "title: Entry 0; published: 2026-11-01T08:00:00+00:00; author: Author 0"
    assert f"  {site.server.url('/a/one')}\n    {said}\n" in done.stdout
    as_json = site.crawler("rules", "try", "wire", site.server.url(feed), "--format", "json")
    document = json.loads(as_json.stdout)
    assert document["feed"] == "atom10" and document["left_out"] == 1
    assert [entry["url"] for entry in document["entries"]] == [
        site.server.url("/a/one"),
        site.server.url("/a/three"),
    ]


def test_rules_try_on_a_feed_reads_its_times_without_offset_in_the_rules_timezone(site: Site) -> None:
    feed = _feed("rss", "/a/one") + "&dates=naive"
    said = "title: Entry 0; published: 2026-11-01T00:00:00+00:00; author: Author 0"
    _feed_rule(site, feed, zone="Asia/Shanghai")
    named = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert named.returncode == 0, named.stderr
    assert f"  {site.server.url('/a/one')}\n    {said}\n" in named.stdout, named.stdout
    _feed_rule(site, _feed("rss", "/a/other"), zone="Asia/Shanghai")
    unnamed = site.crawler("rules", "try", "wire", site.server.url(feed))
    assert unnamed.returncode == 0, unnamed.stderr
    assert f"  {site.server.url('/a/one')}\n    {said}\n" in unnamed.stdout, "a feed no key names, alike"


def test_rules_try_on_a_saved_feed_resolves_its_links_against_the_rules_feed(site: Site) -> None:
    _feed_rule(site, "/feeds/news.xml")
    saved = site.root / "news.xml"
    saved.write_text(feed_document(["/a/one", "/a/two"], "rss"), encoding="utf-8")
    done = site.crawler("rules", "try", "wire", str(saved), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [entry["url"] for entry in json.loads(done.stdout)["entries"]] == [
        site.server.url("/a/one"),
        site.server.url("/a/two"),
    ]


def test_a_body_that_names_a_file_is_never_read_from_this_machine(tmp_path: Path) -> None:
    local = tmp_path / "feed.xml"
    local.write_text(feed_document(["/a/secret"], "rss"), encoding="utf-8")
    with pytest.raises(FeedError, match="is not an RSS or Atom feed"):
        read_feed(str(local).encode(), FEED_URL)


def test_rules_try_on_a_feed_url_that_is_an_html_page_says_what_the_crawl_says_of_it(site: Site) -> None:
    """``feeds[1]`` names an HTML page: rules try reads it as the feed the crawl reads, not as an index
    page, and fails saying what the crawl says."""
    page = "/links?to=/a/one,/a/two,/a/three"
    _feed_rule(site, _feed("atom", "/a/fine"), page)
    url = site.server.url(page)
    done = site.crawler("rules", "try", "wire", url)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    said = (
        f"crawler rules try: error: {url} is not a feed (got text/html): `feeds[1]` in"
        f" {site.rules / 'wire.yaml'} names it: give the URL of the site's feed there; a crawl dead-letters"
        " it:"
        f" {url} is an HTML page, not an RSS or Atom feed (it starts "
    )
    assert done.stderr.startswith(said), done.stderr
