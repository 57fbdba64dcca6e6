"""Sitemaps: urlsets (news sitemaps too), sitemap indexes, robots.txt naming sitemaps, gzip, and the
protocol's limits; the rule key ``sitemaps``; and real temp crawls of sitemaps served by the local test
server (from robots.txt down to the articles, a news sitemap's dates stored, a sitemap index that lists
itself, a gzip bomb). Grabs that offer only what changed since the last one are in tests/test_service.py."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
from conftest import SiteServer
from crawlsite import COMMAND_TIMEOUT, FAST_ARGS, Site
from siteserver import sitemap_document

from crawler.published import published_date
from crawler.rules import RuleErrors, parse_rule
from crawler.rules.sitemaps import SitemapEntry, SitemapError, read_sitemap

SITEMAP_URL = "http://news.test/sitemaps/news.xml"
SITEMAP_RULE = """
domains: [news.test]
sitemaps: ["http://news.test/robots.txt"]
article:
  fields:
    title: {xpath: //h1}
"""


def test_a_news_sitemap_gives_pages_their_lastmod_title_and_publication_date() -> None:
    links = ["http://news.test/a/1.html", "/a/2.html"]
    document = sitemap_document("urlset", links, ["2026-11-20T10:31:00+01:00"], news=True)
    sitemap = read_sitemap(document.encode(), SITEMAP_URL)
    assert sitemap.kind == "urlset" and not sitemap.lists_sitemaps
    first, second = sitemap.entries
    assert first == SitemapEntry(
        "http://news.test/a/1.html",
        lastmod=datetime(2026, 11, 20, 9, 31, tzinfo=UTC),
        title="News 0",
        published=datetime(2026, 11, 1, 8, tzinfo=UTC),
    )
    assert second.url == "/a/2.html" and second.lastmod is None, "as given: the rule resolves it"
    assert second.hints() == {"title": "News 1", "published": "2026-11-02T08:00:00+00:00"}


def test_a_date_alone_stays_a_date_and_changes_at_its_midnight_in_utc() -> None:
    # W3C datetime allows a date alone: no time is made up for it, but a grab compares it as its midnight.
    document = sitemap_document("urlset", ["http://news.test/a/1"], ["2026-11-20"], news=True, date_only=True)
    (entry,) = read_sitemap(document.encode(), SITEMAP_URL).entries
    assert (entry.lastmod, entry.published) == (date(2026, 11, 20), date(2026, 11, 1))
    assert not isinstance(entry.lastmod, datetime) and not isinstance(entry.published, datetime)
    assert entry.changed == datetime(2026, 11, 20, tzinfo=UTC)
    assert entry.hints() == {"title": "News 0", "published": "2026-11-01"}
    assert SitemapEntry("/a/2", published=date(2026, 11, 2)).changed == datetime(2026, 11, 2, tzinfo=UTC)


def test_a_date_time_without_offset_is_read_in_the_zone_given_else_in_utc() -> None:
    document = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://news.test/a/1</loc><lastmod>2026-11-20T10:31:00</lastmod></url>"
        b"<url><loc>http://news.test/a/2</loc><lastmod>2026-11-20T10:31:00+01:00</lastmod></url>"
        b"<url><loc>http://news.test/a/3</loc><lastmod>2026-11-20</lastmod></url></urlset>"
    )
    naive, offset, day = read_sitemap(document, SITEMAP_URL, zone=ZoneInfo("Asia/Shanghai")).entries
    assert naive.lastmod == datetime(2026, 11, 20, 2, 31, tzinfo=UTC)
    assert offset.lastmod == datetime(2026, 11, 20, 9, 31, tzinfo=UTC), "its own offset kept"
    assert day.lastmod == date(2026, 11, 20), "a date alone stays a date"
    naive, _, _ = read_sitemap(document, SITEMAP_URL).entries
    assert naive.lastmod == datetime(2026, 11, 20, 10, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "utc"),
    [
        # Berlin's clocks go back at 03:00 on 2026-10-25 (02:30 twice: the first, +02:00) and forward at
        # 02:00 on 2026-03-29 (no 02:30: read at +01:00, the clocks' 03:30+02:00), as a page's time is.
        ("2026-10-25T02:30:00", datetime(2026, 10, 25, 0, 30, tzinfo=UTC)),
        ("2026-03-29T02:30:00", datetime(2026, 3, 29, 1, 30, tzinfo=UTC)),
    ],
)
def test_a_sitemaps_time_in_an_hour_the_clocks_repeat_or_skip_is_read_as_a_pages_is(
    given: str, utc: datetime
) -> None:
    document = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>http://news.test/a/1</loc><lastmod>{given}</lastmod></url></urlset>"
    ).encode()
    (entry,) = read_sitemap(document, SITEMAP_URL, zone=ZoneInfo("Europe/Berlin")).entries
    assert entry.lastmod == utc
    page = published_date(given.replace("T", " "), zone=ZoneInfo("Europe/Berlin"))
    assert page is not None and datetime.fromisoformat(page) == utc


def test_a_date_with_its_utc_offset_stays_a_date_with_no_time_made_up() -> None:
    # An XML Schema date may carry its zone (2026-11-20+08:00); Python reads any character after the date
    # as the separator of a time, so the offset must not become the time 08:00.
    document = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>http://news.test/a/1</loc><lastmod>2026-11-20+08:00</lastmod></url>"
        "<url><loc>http://news.test/a/2</loc><lastmod>2026-11-21-05:00</lastmod></url></urlset>"
    )
    first, second = read_sitemap(document.encode(), SITEMAP_URL).entries
    assert (first.lastmod, second.lastmod) == (date(2026, 11, 20), date(2026, 11, 21))


@pytest.mark.parametrize("given", ["2026-11-20+0800", "2026-11-20-0500", "2026-11-20+08", "2026-11-20z"])
def test_a_date_with_its_utc_offset_written_short_stays_a_date_as_a_pages_published_does(given: str) -> None:
    # A zone without its colon, or without its minutes: datetime.fromisoformat reads it as a time too, and the
    # pipeline's published_date takes the date alone of each.
    document = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>http://news.test/a/1</loc><lastmod>{given}</lastmod></url></urlset>"
    )
    (entry,) = read_sitemap(document.encode(), SITEMAP_URL).entries
    assert entry.lastmod == date(2026, 11, 20)
    assert published_date(given) == "2026-11-20"


def test_a_gzip_compressed_sitemap_and_a_sitemap_index_are_read() -> None:
    document = sitemap_document("urlset", ["http://news.test/a/1"], ["2026-11-20"], news=False)
    sitemap = read_sitemap(gzip.compress(document.encode()), SITEMAP_URL + ".gz")
    assert [(e.url, e.lastmod) for e in sitemap.entries] == [("http://news.test/a/1", date(2026, 11, 20))]
    index = sitemap_document(
        "sitemapindex", ["http://news.test/s1.xml", "http://news.test/s2.xml"], [], news=False
    )
    listed = read_sitemap(index.encode(), "http://news.test/index.xml")
    assert listed.kind == "sitemapindex" and listed.lists_sitemaps
    assert [entry.url for entry in listed.entries] == ["http://news.test/s1.xml", "http://news.test/s2.xml"]


def test_a_robots_txt_gives_the_sitemaps_it_names() -> None:
    robots = b"User-agent: *\nDisallow: /admin/\nSitemap: http://news.test/s1.xml\nsitemap:http://news.test/s2.xml\n"
    sitemap = read_sitemap(robots, "http://news.test/robots.txt")
    assert sitemap.kind == "robots" and sitemap.lists_sitemaps
    assert [entry.url for entry in sitemap.entries] == ["http://news.test/s1.xml", "http://news.test/s2.xml"]


def test_a_robots_txt_saved_with_a_byte_order_mark_gives_the_sitemap_of_its_first_line() -> None:
    """A robots.txt saved with a UTF-8 byte order mark (Notepad's default), which robots.txt readers
    ignore (RFC 9309): its first line, a Sitemap line, was read as no Sitemap line, and its sitemap left
    out of the crawl and of `crawler rules new`'s draft."""
    robots = b"\xef\xbb\xbfSitemap: http://news.test/s1.xml\r\nSitemap: http://news.test/s2.xml\r\n"
    sitemap = read_sitemap(robots, "http://news.test/robots.txt")
    assert [entry.url for entry in sitemap.entries] == ["http://news.test/s1.xml", "http://news.test/s2.xml"]


def test_entities_are_never_expanded() -> None:
    document = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&b;</loc></url>'
        b"<url><loc>http://news.test/a/1.html</loc></url></urlset>"
    )
    assert [entry.url for entry in read_sitemap(document, SITEMAP_URL).entries] == [
        "http://news.test/a/1.html"
    ]


def test_what_comes_before_a_broken_end_is_read() -> None:
    document = sitemap_document("urlset", ["http://news.test/a/1.html"], [], news=False)
    broken = document.removesuffix("</urlset>") + "<url><loc>http://news.test/a/2"
    assert [entry.url for entry in read_sitemap(broken.encode(), SITEMAP_URL).entries][:1] == [
        "http://news.test/a/1.html"
    ]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (
            b"<!DOCTYPE html><html><body>Not found</body></html>",
            "is not a sitemap: its root element is <html>",
        ),
        (b"", "is not a sitemap: it holds no XML element (it starts '')"),
        (b"Sorry, try later", "is not a sitemap: it holds no XML element (it starts 'Sorry, try later')"),
        (b"\x1f\x8b\x08garbage", "is not a readable gzip file"),
    ],
)
def test_a_document_that_is_no_sitemap_says_what_it_is(body: bytes, says: str) -> None:
    with pytest.raises(SitemapError) as raised:
        read_sitemap(body, SITEMAP_URL)
    assert str(raised.value).startswith(SITEMAP_URL) and says in str(raised.value)


def test_the_protocols_limits_hold_for_entries_bytes_and_decompression() -> None:
    document = sitemap_document("urlset", [f"http://news.test/a/{n}" for n in range(11)], [], news=False)
    with pytest.raises(SitemapError, match=r"lists more than 10 entries, the protocol's limit"):
        read_sitemap(document.encode(), SITEMAP_URL, max_entries=10)
    with pytest.raises(SitemapError, match=r"holds [\d,]+ bytes, over the 100 a sitemap may have"):
        read_sitemap(document.encode(), SITEMAP_URL, max_bytes=100)
    bomb = gzip.compress(b"<urlset>" + b" " * 5_000_000 + b"</urlset>")
    assert len(bomb) < 10_000
    with pytest.raises(SitemapError, match=r"decompresses to more than 1,000,000 bytes, .* \(a gzip bomb"):
        read_sitemap(bomb, SITEMAP_URL + ".gz", max_bytes=1_000_000)


# --- the rule key ------------------------------------------------------------------------------------------


def test_a_rule_may_read_its_site_from_sitemaps_alone() -> None:
    rule = parse_rule(SITEMAP_RULE, site="maps")
    assert rule.sitemaps == ("http://news.test/robots.txt",) and rule.start_urls == () and rule.feeds == ()


def test_a_sitemap_off_the_domains_is_named_with_its_key_and_value() -> None:
    text = SITEMAP_RULE.replace("http://news.test/robots.txt", "http://other.test/sitemap.xml")
    with pytest.raises(RuleErrors) as raised:
        parse_rule(text, site="maps")
    (error,) = raised.value.errors
    assert str(error).startswith(
        'rules/maps.yaml: sitemaps[0]: host "other.test" of "http://other.test/sitemap'
    )


def test_allow_and_deny_filter_a_sitemaps_pages_not_the_sitemaps_it_lists() -> None:
    rule = parse_rule(SITEMAP_RULE + "index:\n  links: {allow: ['/news/']}\n", site="maps")
    entries = [
        SitemapEntry("/news/1.html"),
        SitemapEntry("/sport/2.html"),
        SitemapEntry("http://x.test/news/3"),
    ]
    pages = rule.sitemap_entries(entries, SITEMAP_URL, pages=True)
    assert [entry.url for entry in pages] == ["http://news.test/news/1.html"]
    sitemaps = rule.sitemap_entries([SitemapEntry("/sitemaps/sport.xml")], SITEMAP_URL, pages=False)
    assert [entry.url for entry in sitemaps] == ["http://news.test/sitemaps/sport.xml"]


# --- crawls ------------------------------------------------------------------------------------------------


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path, name="maps")


def _sitemap_rule(site: Site, *sitemaps: str, fields: str = "") -> None:
    text = (
        "domains: [127.0.0.1]\n"
        "sitemaps: [" + ", ".join(f'"{site.server.url(path)}"' for path in sitemaps) + "]\n"
        "article:\n  fields:\n    title: {xpath: //h1}\n"
        '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n' + fields
    )
    site.write_rule(text)


def _map(path: str, *links: str, news: bool = False, date_only: bool = False, naive: bool = False) -> str:
    said = "&news=date" if date_only else "&news=naive" if naive else "&news=1" if news else ""
    return f"{path}?to=" + quote(",".join(links), safe="/,") + said


def test_a_temp_crawl_follows_robots_txt_and_a_sitemap_index_down_to_the_articles(site: Site) -> None:
    news = site.server.url(_map("/sitemap.xml", "/a/news-one", news=True))
    packed = site.server.url(_map("/sitemap.xml.gz", "/a/packed-one", "http://elsewhere.test/a/x"))
    index = _map("/sitemap-index.xml", news, packed)
    _sitemap_rule(site, "/robots.txt", index)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {"/a/from-robots", "/a/news-one", "/a/packed-one"}
    assert stored["/a/news-one"]["published"] == "2026-11-01T08:00:00+00:00", "the news sitemap's date"
    assert stored["/a/news-one"]["title"] == "Article news-one", "the page's own title before the sitemap's"
    assert stored["/a/from-robots"]["published"] is None


# `crawler` whose spider says each batch of a sitemap's pages it queues ("batch N: M pages, the reactor ran
# since the last: True|False") and is killed (SIGKILL) as it comes to batch KILL_AT.
QUEUE_WATCH = """
import asyncio, os, signal, sys
from crawler.worker.spider import SitesSpider
queue_new, calls, turned = SitesSpider._queue_new, [], [False]

def watched(self, rule, requests, job):
    calls.append(len(requests))
    if len(calls) == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    said = f"batch {len(calls)}: {len(requests)} pages, the reactor ran since the last: {turned[0]}"
    print(said, file=sys.stderr)
    turned[0] = False
    asyncio.get_running_loop().call_soon(turned.__setitem__, 0, True)
    return queue_new(self, rule, requests, job)

SitesSpider._queue_new = watched
from crawler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_large_sitemap_is_queued_in_batches_between_which_the_crawl_goes_on_and_a_kill_loses_none(
    site: Site,
) -> None:
    """A sitemap of 50,000 pages (the protocol's limit) held the crawl thread 3.7 s CPU, 34.9 s wall in a
    real worker, its pages queued in the callback: they are queued ``SITEMAPS_BATCH_ENTRIES`` at a time,
    the reactor running between batches, and the sitemap's lease ends once the last is queued, so a worker
    killed between two batches loses none: the sitemap is read again, its pages queued already seen."""
    pages = [f"/a/b{n}" for n in range(150)]
    _sitemap_rule(site, _map("/sitemap.xml", *pages))
    settings = [*FAST_ARGS, "-s", "SITEMAPS_BATCH_ENTRIES=50"]
    killed = subprocess.run(
        [sys.executable, "-c", QUEUE_WATCH, "temp", site.name, *settings],
        env=site.env(KILL_AT="3"),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    batches = [line for line in killed.stderr.splitlines() if line.startswith("batch ")]
    assert batches == [
        "batch 1: 50 pages, the reactor ran since the last: False",
        "batch 2: 50 pages, the reactor ran since the last: True",
    ], killed.stderr[-4000:]
    assert killed.returncode == -9, "killed as it came to the third batch"
    done = site.temp()  # resumes the job once the sitemap's lease expired
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(site.stored()) == sorted(pages), "every page of the sitemap, each once"
    assert "stored 150 articles" in done.stdout and "errors 0" in done.stdout, done.stdout


# `crawler` whose spider takes 0.1 s to queue each batch of a sitemap's pages (a Redis far away, or busy).
SLOW_QUEUE = """
import sys, time
from crawler.worker.spider import SitesSpider
queue_new = SitesSpider._queue_new

def slow(self, rule, requests, job):
    time.sleep(0.1)
    return queue_new(self, rule, requests, job)

SitesSpider._queue_new = slow
from crawler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_queueing_of_a_sitemaps_batches_is_not_counted_as_its_rules_regex_time(site: Site) -> None:
    """The page's regex budget (RULES_REGEX_PAGE_SECONDS) counted the time each batch of a sitemap took to
    be queued: a 40,000-page sitemap had 36,000 of its pages' searches skipped, and those pages not queued,
    on a loaded machine with a trivial ``allow``. Only the rule's searches count."""
    _every_page_of_a_slow_sitemap_stored(site, SLOW_QUEUE)


# `crawler` whose rules take 0.1 s beside their searches to read each batch of a sitemap's entries (a
# loaded machine: the URLs of 40,000 entries took 0.8 s CPU to read, their searches 0.07 s).
SLOW_ENTRIES = """
import sys, time
from crawler.rules.model import Rule
sitemap_entries = Rule.sitemap_entries

def slow(self, *args, **kwargs):
    time.sleep(0.1)
    return sitemap_entries(self, *args, **kwargs)

Rule.sitemap_entries = slow
from crawler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_sitemaps_other_work_than_its_rules_searches_is_not_counted_as_their_time(site: Site) -> None:
    """The page's regex budget ran on the wall clock: the reading of a sitemap's entries (their URLs
    joined, checked against the rule's domains) spent it, not only the searches. A 40,000-entry sitemap
    still had 16,602 searches skipped, and their pages not queued, once the queueing was taken out."""
    _every_page_of_a_slow_sitemap_stored(site, SLOW_ENTRIES)


def _every_page_of_a_slow_sitemap_stored(site: Site, script: str) -> None:
    """A temp crawl of a 60-page sitemap read in batches of 5 with a page budget of 0.5 s for the rule's
    searches, run by ``script`` (``crawler`` made slow at some step): no search skipped, every page stored."""
    pages = [f"/a/slow{n}" for n in range(60)]
    site.write_rule(
        "domains: [127.0.0.1]\n"
        f'sitemaps: ["{site.server.url(_map("/sitemap.xml", *pages))}"]\n'
        "index:\n  links:\n    allow: ['/a/slow\\d+$']\n"
        "article:\n  fields:\n    title: {xpath: //h1}\n"
        '    body: {xpath: "//div[@class=\'article\']/p", join: "\\n\\n"}\n'
    )
    settings = [*FAST_ARGS, "-s", "SITEMAPS_BATCH_ENTRIES=5", "-s", "RULES_REGEX_PAGE_SECONDS=0.5"]
    done = subprocess.run(
        [sys.executable, "-c", script, "temp", site.name, *settings],
        env=site.env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "searches skipped" not in done.stderr, done.stderr[-4000:]
    assert sorted(site.stored()) == sorted(pages), "every page of the sitemap queued and stored"


def test_a_large_sitemap_index_has_every_sitemap_it_lists_queued_batch_after_batch(site: Site) -> None:
    """The sitemaps an index lists are queued in one Redis round trip per batch, not one push each through
    the scheduler: each of them read once, and its page stored."""
    listed = [_map("/sitemap.xml", f"/a/i{n}") for n in range(60)]
    _sitemap_rule(site, _map("/sitemap-index.xml", *listed))
    done = site.temp("-s", "SITEMAPS_BATCH_ENTRIES=25")
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(site.stored()) == sorted(f"/a/i{n}" for n in range(60))
    assert done.stdout.startswith("fetched 121 pages, stored 60 articles, skipped 0"), done.stdout


def test_a_news_sitemaps_date_alone_is_stored_as_a_date_and_the_pages_own_date_wins(site: Site) -> None:
    news = _map("/sitemap.xml", "/a/news-one", "/news/harbour-bridge.html", date_only=True)
    _sitemap_rule(site, news, fields="    published: {xpath: \"//p[@class='byline']\"}\n")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert stored["/a/news-one"]["published"] == "2026-11-01", "the sitemap's date, with no time made up"
    assert stored["/news/harbour-bridge.html"]["published"] == "2026-11-21", "the page's own date first"


def test_a_news_sitemaps_time_without_offset_is_read_in_the_rules_timezone(site: Site) -> None:
    """A news sitemap's ``2026-11-01T08:00:00`` (no UTC offset, which W3C datetime does not allow but
    sites give) was read as UTC whatever the rule's ``timezone``: with ``timezone: Asia/Shanghai`` it is
    Beijing time, the instant stored in UTC as the sitemap's other dates are."""
    _sitemap_rule(site, _map("/sitemap.xml", "/a/news-one", naive=True), fields="timezone: Asia/Shanghai\n")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert site.stored()["/a/news-one"]["published"] == "2026-11-01T00:00:00+00:00"


def test_a_sitemap_index_that_lists_itself_ends_at_the_depth_limit(site: Site) -> None:
    _sitemap_rule(site, "/sitemap-loop.xml", _map("/sitemap.xml", "/a/fine"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "lists 1 sitemap 3 levels below the rule's (SITEMAPS_MAX_DEPTH): left out\n" in done.stderr, (
        done.stderr
    )
    assert list(site.stored()) == ["/a/fine"]
    assert site.dead() == []


def test_a_gzip_bomb_is_dead_lettered_saying_so(site: Site) -> None:
    _sitemap_rule(site, "/sitemap-bomb.xml.gz", _map("/sitemap.xml", "/a/fine"))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert "decompresses to more than 52,428,800 bytes" in letter["reason"], letter
    assert list(site.stored()) == ["/a/fine"]


def test_a_sitemap_that_is_an_html_page_counts_as_fetched_and_the_summary_names_its_rule_key(
    site: Site,
) -> None:
    listed = site.server.url("/a/listed-page")
    _sitemap_rule(site, _map("/sitemap-index.xml", listed), "/a/named-page")
    done = site.temp()
    assert done.returncode == 1, "errors, nothing stored"
    lines = done.stdout.splitlines()
    assert lines[0].startswith("fetched 3 pages, stored 0 articles, skipped 0"), done.stdout
    rule = site.rules / "maps.yaml"
    hint = "(`crawler rules try maps URL` shows what a URL holds)"
    listed_said = (
        f"{listed} is not a sitemap (got text/html): a sitemap that `sitemaps` in {rule} leads to lists it:"
        f" the site lists a page that is no sitemap {hint}"
    )
    named_said = (
        f"{site.server.url('/a/named-page')} is not a sitemap (got text/html): `sitemaps[1]` in {rule}"
        f" names it: give the URL of the site's sitemap there {hint}"
    )
    assert lines[-2:] == [listed_said, named_said], done.stdout
    assert f"crawler temp: warning: maps: {named_said}" in done.stderr.splitlines(), done.stderr[-4000:]


def test_rules_try_on_a_sitemap_lists_what_a_crawl_would_follow(site: Site) -> None:
    _sitemap_rule(site, "/robots.txt")
    url = site.server.url(_map("/sitemap.xml", "/a/one", "http://elsewhere.test/a/two", news=True))
    done = site.crawler("rules", "try", "maps", url)
    assert done.returncode == 0, done.stderr
    assert "as a urlset: 1 article link, 1 left out" in done.stdout, done.stdout
    assert "title: News 0; published: 2026-11-01T08:00:00+00:00" in done.stdout
    said = site.crawler("rules", "try", "maps", site.server.url("/robots.txt"))
    assert "as a robots.txt: 1 sitemap, 0 left out" in said.stdout, said.stdout
    robots = site.crawler("rules", "try", "maps", site.server.url("/robots.txt"), "--format", "json")
    document = json.loads(robots.stdout)
    assert document["sitemap"] == "robots"
    assert [entry["url"] for entry in document["entries"]] == [
        site.server.url("/sitemap.xml?to=/a/from-robots")
    ]


def test_rules_try_shows_a_date_alone_as_the_sitemap_gives_it(site: Site) -> None:
    _sitemap_rule(site, "/robots.txt")
    url = site.server.url(_map("/sitemap.xml", "/a/one", date_only=True) + "&lastmod=2026-11-20")
    done = site.crawler("rules", "try", "maps", url)
    assert done.returncode == 0, done.stderr
    assert "    lastmod: 2026-11-20; title: News 0; published: 2026-11-01\n" in done.stdout, done.stdout
    said = site.crawler("rules", "try", "maps", url, "--format", "json")
    (entry,) = json.loads(said.stdout)["entries"]
    assert (entry["lastmod"], entry["published"]) == ("2026-11-20", "2026-11-01"), entry


def test_a_date_at_the_edge_of_the_calendar_is_no_date() -> None:
    document = sitemap_document(
        "urlset",
        ["http://news.test/a/1", "http://news.test/a/2"],
        ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:00-01:00"],
        news=False,
    )
    entries = read_sitemap(document.encode(), SITEMAP_URL).entries
    assert [(entry.url, entry.lastmod) for entry in entries] == [
        ("http://news.test/a/1", None),
        ("http://news.test/a/2", None),
    ]


def test_rules_try_on_a_sitemap_url_that_is_an_html_page_says_what_the_crawl_says_of_it(site: Site) -> None:
    page = "/links?to=/a/one,/a/two"
    _sitemap_rule(site, "/robots.txt", page)
    url = site.server.url(page)
    done = site.crawler("rules", "try", "maps", url)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    said = (
        f"crawler rules try: error: {url} is not a sitemap (got text/html): `sitemaps[1]` in"
        f" {site.rules / 'maps.yaml'} names it: give the URL of the site's sitemap there; a crawl"
        f" dead-letters it: {url} is not a sitemap: its root element is <html>"
    )
    assert done.stderr.strip() == said, done.stderr
