"""The bundled demo news sites: served for real by ``python -m crawler.demo.server`` and read with urllib.

The expectations come from ``crawler.demo.sites.demo_sites()``, the same data ``crawler demo``'s tests assert
stored articles against; these tests check that the served pages say what that data says.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import select
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import urllib.robotparser
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import lxml.html
import pytest

from crawler.demo import DEMO_RULES
from crawler.demo.server import DemoError, DemoServer
from crawler.demo.sites import (
    ARTICLES_PER_PAGE,
    ARTICLES_PER_SITE,
    DEMO_ORIGIN,
    INDEX_PAGES,
    DemoArticle,
    DemoSite,
    demo_sites,
)
from crawler.published import published_date
from crawler.rules import Rule, load_rule
from crawler.rules.feeds import read_feed
from extractors import extract

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = DEMO_RULES
SITES = demo_sites()
SITE_IDS = [site.id for site in SITES]
STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
HTTP_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Message
    body: bytes


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> Response:
    """One request, redirects not followed; error statuses are responses too."""
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with _OPENER.open(request, timeout=HTTP_TIMEOUT) as response:
            return Response(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        with error:
            return Response(error.code, error.headers, error.read())


def _start_server(*args: str) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "crawler.demo.server", *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,  # the server stops when this pipe closes, even if pytest is killed
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], STARTUP_TIMEOUT)
    line = process.stdout.readline() if ready else b""
    if not line.strip().isdigit():
        _stop(process)
        raise RuntimeError(f"the demo server did not print its port (first line {line!r})")
    return process, int(line)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """``python -m crawler.demo.server --port 0`` for this module; its origin."""
    process, port = _start_server("--port", "0")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)


def page(origin: str, path: str, site: DemoSite) -> lxml.html.HtmlElement:
    response = fetch(origin + path)
    assert response.status == 200, path
    return lxml.html.document_fromstring(response.body.decode(site.encoding))


def text_of(root: lxml.html.HtmlElement) -> str:
    return " ".join(root.text_content().split())


def site_by_id(site_id: str) -> DemoSite:
    return next(site for site in SITES if site.id == site_id)


def all_articles() -> list[DemoArticle]:
    return [article for site in SITES for article in site.articles]


# --- index pages --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("site_id", SITE_IDS)
def test_index_pages_paginate_to_every_article(origin: str, site_id: str) -> None:
    site = site_by_id(site_id)
    expected = {article.path for article in site.articles}
    path: str | None = site.start_path
    seen_pages: list[str] = []
    found: set[str] = set()
    while path is not None:
        seen_pages.append(path)
        root = page(origin, path, site)
        hrefs = set(root.xpath("//a/@href"))
        listed = {article.path for article in site.page_articles(len(seen_pages))}
        assert len(listed) == ARTICLES_PER_PAGE
        assert listed <= hrefs, f"{path} does not link its own articles"
        found |= hrefs & expected
        next_links = root.xpath("//a[@rel='next']/@href")
        assert len(next_links) <= 1
        path = next_links[0] if next_links else None
    assert seen_pages == list(site.index_paths)
    assert len(seen_pages) == INDEX_PAGES
    assert found == expected
    assert len(found) == ARTICLES_PER_SITE


@pytest.mark.parametrize("site_id", SITE_IDS)
def test_index_pages_repeat_links_on_a_page_and_across_pages(origin: str, site_id: str) -> None:
    site = site_by_id(site_id)
    articles = {article.path for article in site.articles}
    pages_linking: Counter[str] = Counter()
    for path in site.index_paths:
        hrefs = [href for href in page(origin, path, site).xpath("//a/@href") if href in articles]
        counts = Counter(hrefs)
        repeated = [href for href, count in counts.items() if count >= 2]
        assert len(repeated) >= ARTICLES_PER_PAGE // 2, f"{path}: too few links repeated on the page"
        pages_linking.update(set(hrefs))
    assert sum(1 for count in pages_linking.values() if count >= 2) >= 3
    assert max(pages_linking.values()) == INDEX_PAGES  # the "most read" box is on every page


@pytest.mark.parametrize("site_id", SITE_IDS)
def test_pages_have_menus_sidebars_and_footers(origin: str, site_id: str) -> None:
    site = site_by_id(site_id)
    hrefs = set(page(origin, site.start_path, site).xpath("//a/@href"))
    assert {section.path for section in site.sections} <= hrefs
    for section in site.sections:
        titles = text_of(page(origin, section.path, site))
        assert all(a.title in titles for a in site.articles if a.section == section.name)
    article = site.articles[0]
    article_page = page(origin, article.path, site)
    most_read = [a.title for a in (site.articles[3], site.articles[11])]
    assert all(title in text_of(article_page) for title in most_read)


# --- articles -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("site_id", SITE_IDS)
def test_served_articles_match_the_data(origin: str, site_id: str) -> None:
    site = site_by_id(site_id)
    for article in (*site.articles, *site.private_articles, *site.denied_articles):
        root = page(origin, article.path, site)
        text = text_of(root)
        assert [" ".join(h1.text_content().split()) for h1 in root.iter("h1")] == [article.title]
        for paragraph in article.paragraphs:
            assert paragraph in text, f"{article.path}: paragraph missing: {paragraph[:60]}"
        assert article.author in text
        assert article.published_date in lxml.html.tostring(root, encoding="unicode")


def test_article_data_is_complete_and_consistent() -> None:
    paths = [article.path for site in SITES for article in (*site.articles, *site.private_articles)]
    assert len(paths) == len(set(paths))
    for site in SITES:
        assert len(site.articles) == ARTICLES_PER_SITE
        dates = [article.published for article in site.articles]
        assert dates == sorted(dates, reverse=True)
        assert {article.section for article in site.articles} == {section.name for section in site.sections}
        for article in site.articles:
            assert article.site == site.id
            assert article.path.startswith(f"/{site.id}/")
            assert len(article.paragraphs) >= 3
            assert article.title and article.author
        layouts = Counter(article.layout for article in site.articles)
        assert layouts["feature"] + layouts["short"] == 3
        assert sum(article.needs_qread for article in site.articles) == 3


@pytest.mark.parametrize("site_id", SITE_IDS)
def test_qread_reads_the_bodies_the_rule_misses(origin: str, site_id: str) -> None:
    site = site_by_id(site_id)
    for article in site.articles:
        if article.needs_qread:
            html = fetch(origin + article.path).body.decode(site.encoding)
            extraction = extract(html, algo="qread")
            for paragraph in article.paragraphs:
                assert paragraph in extraction.text, f"{article.path}: qRead missed: {paragraph[:60]}"


def test_reposts_exist_with_the_original_text(origin: str) -> None:
    by_path = {article.path: article for article in all_articles()}
    reposts = [article for article in all_articles() if article.repost_of]
    assert len(reposts) >= 3
    assert any(by_path[r.repost_of].site != r.site for r in reposts if r.repost_of)
    for repost in reposts:
        assert repost.repost_of is not None
        original = by_path[repost.repost_of]
        assert original.repost_of is None
        assert repost.path != original.path
        assert set(original.paragraphs) <= set(repost.paragraphs)
        assert repost.title != original.title or len(repost.paragraphs) > len(original.paragraphs)
        assert repost.published > original.published
        assert not repost.needs_qread and not original.needs_qread
        for article in (repost, original):
            text = text_of(page(origin, article.path, site_by_id(article.site)))
            assert article.title in text
            assert original.paragraphs[-1] in text


def _shingles(text: str, language: str) -> set[str]:
    if language == "zh":
        chars = "".join(text.split())
        return {chars[i : i + 4] for i in range(len(chars) - 3)}
    words = text.lower().split()
    return {" ".join(words[i : i + 5]) for i in range(len(words) - 4)}


def test_only_reposts_are_near_duplicates() -> None:
    pairs = {(a.path, a.repost_of) for a in all_articles() if a.repost_of}
    pairs |= {(original, repost) for repost, original in pairs}
    for site_a, site_b in itertools.combinations_with_replacement(SITES, 2):
        if site_a.language != site_b.language:
            continue
        for a, b in itertools.product(site_a.articles, site_b.articles):
            if a.path >= b.path:
                continue
            x, y = _shingles(a.body, site_a.language), _shingles(b.body, site_b.language)
            similarity = len(x & y) / len(x | y)
            if (a.path, b.path) in pairs:
                assert similarity > 0.8, (a.path, b.path)
            else:
                assert similarity < 0.5, (a.path, b.path)


def test_generation_is_the_same_in_every_process() -> None:
    script = (
        "import hashlib; from crawler.demo.sites import demo_sites;"
        " from crawler.demo.layouts import render_pages;"
        "print(hashlib.sha256(repr(demo_sites()).encode()).hexdigest(),"
        " hashlib.sha256(repr(sorted(render_pages().items())).encode()).hexdigest())"
    )
    digests = set()
    for seed in ("1", "2"):
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(result.stdout)
    assert len(digests) == 1
    assert digests.pop().split()[0] == hashlib.sha256(repr(SITES).encode()).hexdigest()


# --- encoding, robots.txt, HTTP ----------------------------------------------------------------------------


def test_the_chinese_site_is_gbk_and_says_so(origin: str) -> None:
    site = site_by_id("huaxia")
    assert site.encoding == "gbk"
    for path in (site.start_path, site.articles[0].path, site.sections[0].path):
        response = fetch(origin + path)
        assert response.headers["Content-Type"] == "text/html; charset=gbk"
        with pytest.raises(UnicodeDecodeError):
            response.body.decode("utf-8")
        text = response.body.decode("gbk")
        assert '<meta http-equiv="Content-Type" content="text/html; charset=gbk">' in text
    article = site.articles[0]
    text = fetch(origin + article.path).body.decode("gbk")
    assert article.title in text and article.paragraphs[0] in text


def test_english_sites_are_utf8(origin: str) -> None:
    for site in SITES:
        if site.language == "en":
            response = fetch(origin + site.articles[0].path)
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
            assert site.articles[0].title in response.body.decode("utf-8")


def test_robots_txt_disallows_the_linked_private_pages(origin: str) -> None:
    response = fetch(origin + "/robots.txt")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(response.body.decode().splitlines())
    for site in SITES:
        assert f"Disallow: {site.robots_disallow}" in response.body.decode()
        (private,) = site.private_articles
        assert private.path.startswith(site.robots_disallow)
        assert private.path in page(origin, site.start_path, site).xpath("//a/@href")
        assert fetch(origin + private.path).status == 200  # served: robots.txt, not a 404, keeps crawlers out
        assert not robots.can_fetch("focused-crawler", origin + private.path)
        assert robots.can_fetch("focused-crawler", origin + site.start_path)
        assert all(robots.can_fetch("focused-crawler", origin + a.path) for a in site.articles)


def test_http_headers_404_redirect_etag_and_head(origin: str) -> None:
    response = fetch(origin + "/citynews/")
    assert response.status == 200
    assert int(response.headers["Content-Length"]) == len(response.body)
    etag = response.headers["ETag"]
    assert etag
    assert fetch(origin + "/citynews/", headers={"If-None-Match": etag}).status == 304
    head = fetch(origin + "/citynews/", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert int(head.headers["Content-Length"]) == len(response.body)
    redirect = fetch(origin + "/citynews")
    assert (redirect.status, redirect.headers["Location"]) == (301, "/citynews/")
    for missing in (
        "/nope",
        "/citynews/2026/no-such-story.html",
        "/huaxia/index_6.html",
        "/citynews/page/6/",
    ):
        assert fetch(origin + missing).status == 404
    assert fetch(origin + "/citynews/2026/x.html?utm_source=feed").status == 404
    root = fetch(origin + "/")
    assert all(site.start_path.encode() in root.body for site in SITES)


# --- the rules --------------------------------------------------------------------------------------------


def _listed(origin: str, site: DemoSite, rule: Rule) -> tuple[list[str], int]:
    """The article links a crawl of ``rule`` finds, the way its rule reads the site (index pages, its feed
    or its JSON API), and how many pages that took."""
    links: list[str] = []
    pages_read = 0
    if rule.feeds:
        (feed_url,) = (url.replace(DEMO_ORIGIN, origin) for url in rule.feeds)
        pages_read = 1
        feed = read_feed(fetch(feed_url).body, feed_url)
        return [entry.url for entry in rule.feed_entries(feed.entries, feed_url)], pages_read
    if rule.api is not None:
        next_url: str | None = rule.api.urls[0].replace(DEMO_ORIGIN, origin)
        while next_url is not None and pages_read < rule.api.max_pages:
            pages_read += 1
            found = rule.api.read(fetch(next_url).body, next_url)
            urls = [rule.absolute_url(item.url) for item in found.items]
            links += [url for url in urls if url is not None and rule.links.accepts(url)]
            next_url = found.next_url
        return links, pages_read
    url: str | None = rule.start_urls[0].replace(DEMO_ORIGIN, origin)
    while url is not None and pages_read < rule.max_pages:
        pages_read += 1
        root = page(origin, url.removeprefix(origin), site)
        links += rule.article_links(url, root)
        url = rule.next_page_url(url, root)
    return links, pages_read


@pytest.mark.parametrize(
    ("site_id", "way_in"), [("citynews", "index"), ("techdaily", "feed"), ("huaxia", "api")]
)
def test_rules_find_the_articles_and_their_fields(origin: str, site_id: str, way_in: str) -> None:
    site = site_by_id(site_id)
    rule = load_rule(RULES_DIR / f"{site.rule_id}.yaml")
    if way_in == "index":
        assert rule.start_urls == (DEMO_ORIGIN + site.start_path,) and rule.max_pages == INDEX_PAGES
    elif way_in == "feed":
        assert rule.feeds == (f"{DEMO_ORIGIN}/techdaily/feed.xml",) and rule.start_urls == ()
    else:
        assert rule.api is not None and rule.api.urls == (f"{DEMO_ORIGIN}/huaxia/api/list_1.json",)
    assert (rule.delay, rule.concurrency, rule.obey_robots) == (0.0, 4, True)
    assert rule.every is not None and rule.every.total_seconds() == 20 * 60
    links, pages_read = _listed(origin, site, rule)
    assert pages_read == (1 if way_in == "feed" else INDEX_PAGES)
    expected = {origin + a.path for a in (*site.articles, *site.private_articles)}
    assert set(links) == expected, "every article, the private ones too, and no sponsored post"
    if way_in == "index":
        assert len(links) > len(expected)  # articles linked again on later pages
    else:
        assert len(links) == len(expected), "a feed or an API lists each story once"
    for article in site.articles:
        fields = rule.extract_fields(page(origin, article.path, site))
        assert fields["title"] == article.title
        assert published_date(str(fields["published"]), zone=rule.timezone) == article.published_stored
        assert fields["author"] == article.author
        assert fields["section"] == article.section
        assert rule.needs_qread(fields["body"]) == article.needs_qread, article.path
        if not article.needs_qread:
            assert fields["body"] == article.body


# --- the server ---------------------------------------------------------------------------------------------


def test_in_process_server_serves_and_stops() -> None:
    with DemoServer(port=0) as server:
        assert server.origin == f"http://127.0.0.1:{server.port}"
        article = SITES[0].articles[0]
        response = fetch(server.url(article.path))
        assert response.status == 200 and article.title.encode() in response.body
        port = server.port
        with pytest.raises(DemoError, match=f"127.0.0.1:{port}"):
            DemoServer(port=port).start()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT):
        pass


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_server_process_stops_at_stdin_eof_and_on_sigterm(how: str) -> None:
    process, port = _start_server()
    try:
        assert fetch(f"http://127.0.0.1:{port}/robots.txt").status == 200
        assert process.stdin is not None
        if how == "eof":
            process.stdin.close()
        else:
            process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_TIMEOUT) == 0
        assert process.stderr is not None
        errors = process.stderr.read().decode()
        assert "Traceback" not in errors
        assert re.search(r"serving the demo news sites: http://127\.0\.0\.1:\d+/citynews/", errors)
    finally:
        _stop(process)
