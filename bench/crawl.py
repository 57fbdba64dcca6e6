"""Crawl bench: pages/s, CPU, peak memory and extraction quality of plain Scrapy, stock scrapy-redis, the
usual scrapy-redis + trafilatura recipe and ours, on one local site (generated, or of real pages).

Run from the repo root::

    .venv/bin/python bench/crawl.py                     # 20,000 articles, the four crawls, Bloom bytes/URL
    .venv/bin/python bench/crawl.py --quick             # smoke run: 2,000 articles, Bloom at 100,000 URLs
    .venv/bin/python bench/crawl.py --site real --only scrapy-redis,recipe,ours --bloom-urls 0
    .venv/bin/python bench/crawl.py --articles 50000 --only scrapy-redis,ours
    .venv/bin/python bench/crawl.py --quick --only ours --profile /tmp/prof   # + cProfile of each crawl

    --site synthetic|real  the generated news site (default), or the real-page site (bench/realsite.py)
    --articles N        article pages of the site (default 20000, --site real 10000; 50 per index page)
    --only a,b          crawls to run, of: plain, scrapy-redis, recipe, ours (default all four, in that
                        order; recipe is skipped, with a message, when trafilatura is not installed)
    --quick             2000 articles and a 100,000-URL Bloom comparison (unless given explicitly)
    --bloom-urls N      URLs of the Bloom vs fingerprint-set comparison (default 1000000; 0 skips it)
    --repeat N          run the crawls N times, in turn (plain, scrapy-redis, recipe, ours, plain, ...); the
                        table shows each crawler's median run, and every run's pages/s and ratio are listed
    -s NAME=VALUE       a Scrapy setting for all the crawls (repeatable), e.g. -s CONCURRENT_ITEMS=8
    --profile DIR       run each crawl under cProfile, write DIR/<crawl>.prof, print its top functions
    --py-spy DIR        sample each crawl with py-spy (.venv/bin/python -m pip install py-spy; the one
                        beside the Python that runs the bench, else the PATH's), write DIR/<crawl>.txt,
                        print where the main thread's time goes (ms per page: Redis, SQLite, fields,
                        qRead, ...); without py-spy, says so and exits with 2 before anything

The synthetic site: a news site generated into memory and served by a ``ThreadingHTTPServer`` (HTTP/1.1
keep-alive) in its own process on 127.0.0.1. Article pages are 5-10 KB (head, section menu, breadcrumb,
headline, date, byline, 5-9 paragraphs, tags, related links, footer); one in ten keeps only a short lead in
the story block and the rest of its text in a feature block, so the rule's body is short and qRead supplies
it. Index pages (``/news/``, ``/news/page/N/``) list 50 articles each, every one linked three times
(picture, headline, "read more"), plus 10 "most read" links to articles of any page and a pager. Before
the crawls the server's raw fetch rate is measured with 32 keep-alive connections, and its CPU time is
read during each crawl, to show it is not the bottleneck.

The real-page site (``--site real``, bench/realsite.py): the English pages of ../shared/extraction-dev and
extraction-train (692 of 694: two repeat another page's text; about 190 KB on average), article N being
copy N // 692 of page N % 692 with every word of its text replaced by a word of the same length chosen by
a hash of (copy, word): markup and sizes unchanged, every copy a distinct article. The same paths, index
pages and pager as the synthetic site; the server renders every copy once at its start into an unlinked
temporary file and serves it from there. Our rule for it has a title XPath (``//title``) and no body
XPath, so qRead reads every body. Without those corpora, ``--site real`` names the missing manifest.json
files and where the corpora come from (bench/corpus.py), and exits with 2 before it serves or crawls
anything.

The crawls, one after another, each in a fresh Python process (its peak RSS is its own ``VmHWM`` at the end
of the crawl; the embedded Redis server is another process and not counted), all with CONCURRENT_REQUESTS
32 (32 per site), crawler/settings.py's CONCURRENT_ITEMS (Scrapy's default 100 when it sets none), no delay,
AutoThrottle off, robots.txt obeyed, LOG_LEVEL WARNING (COMMON_SETTINGS, printed at the start):

- ``plain``: plain Scrapy and its in-memory scheduler; a minimal spider that follows the pager and the
  article links of index pages (deduplicated within the page) and yields a small item per article;
- ``scrapy-redis``: the same spider on stock scrapy-redis (its Scheduler, RFPDupeFilter, PriorityQueue,
  pickle) against an embedded Redis (``crawler.redisio.embedded.EmbeddedRedis``) in a temporary folder; no
  pipelines;
- ``recipe``: what users build instead: the ``scrapy-redis`` crawl with an item pipeline
  (``RecipePipeline``) that runs ``trafilatura.extract(html)`` on each article page and inserts (url,
  title, text) into a plain SQLite table, one INSERT and one commit per item (trafilatura comes with
  ``pip install -e .[bench]``);
- ``ours``: the ``sites`` spider with the whole pipeline, run as ``crawler temp`` runs it: a rule for
  the site in a temporary rules folder, ``enqueue_job`` of its start URL, ``run_worker(settings, job=...)``
  on the embedded Redis of a temporary data folder (leased queue, Bloom filter, rule extraction, qRead
  fallback, SQLite store), with CRAWLER_ALLOW_PRIVATE_NETWORKS=1.

pages/s = responses (robots.txt, index and article pages) / seconds from the first request reaching the
downloader to spider_closed. Each crawl checks that it fetched every article once (distinct article
URLs among the responses) and counts its items (stored articles for recipe and ours). Redis round trips are
counted in the crawl process (socket sends of redis-py; a pipeline is one), with the commands behind them
and the wall time the crawl process spent in each; the Redis server's side comes from INFO (commandstats,
append-only file). On a busy 2-core machine a crawler's pages/s differ by up to a quarter between runs of
the same code, its ratio to stock scrapy-redis in the same round by a few hundredths: use --repeat
(docs/performance.md).

CPU: user + system seconds (/proc) from the start of the crawl to its end, of the crawl process (every
thread) and its descendants (helper processes, reaped ones included), and of the Redis server with its
forks; the site server apart. The details table gives them per 1,000 stored articles (items for plain and
scrapy-redis) and over stock scrapy-redis's.

Extraction quality, for recipe and ours: token P/R/F1 (``extractors.scoring.token_prf``, the corpus
README's definition) of each stored text against the article's known body (synthetic site: the generated
paragraphs; real site: the page's truth file with the copy's substitution), averaged over stored articles.

Last, Redis bytes per URL at ``--bloom-urls`` URLs: scrapy-redis's fingerprint set against our Bloom
filter, measured by ``bench/bloom.py`` (its ``bench_set`` and ``bench_bloom``).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import hashlib
import http.client
import importlib.util
import itertools
import json
import math
import os
import pstats
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self, TypeVar

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `bench` and `crawler` importable
    sys.path.insert(0, str(_REPO_ROOT))

import redis  # noqa: E402
from scrapy import Request, Spider, signals  # noqa: E402
from scrapy.crawler import Crawler, CrawlerProcess  # noqa: E402
from scrapy.http import Response  # noqa: E402
from scrapy.settings import Settings, default_settings  # noqa: E402

from bench import bloom as bloom_bench  # noqa: E402
from bench.realsite import CORPORA, LANGUAGE, RealSite, default_corpora, index_parts, missing_corpora  # noqa: E402
from crawler import settings as project_settings  # noqa: E402
from crawler.commandline import pip_install  # noqa: E402
from extractors.scoring import ACC_F1, token_prf  # noqa: E402

CRAWLS = ("plain", "scrapy-redis", "recipe", "ours")
LABELS = {
    "plain": "plain Scrapy (memory scheduler)",
    "scrapy-redis": "stock scrapy-redis (crawl only)",
    "recipe": "recipe: scrapy-redis + trafilatura + SQLite",
    "ours": "ours (full pipeline)",
}
REFERENCE = "scrapy-redis"  # the ratio columns are pages/s and CPU per article over this crawl's
DEFAULT_ARTICLES = {"synthetic": 20_000, "real": 10_000}  # --articles when not given (2,000 with --quick)
CORPORA_MISSING = 2  # exit code of --site real without its corpora (as bench/extraction.py's, asked for one)
PY_SPY_MISSING = 2  # exit code of --py-spy without py-spy (as of a missing corpus)
SITE_ID = "bench-gazette"
PER_PAGE = 50  # articles listed per index page
RELATED = 4  # related-article links on an article page
SHORT_BODY_EVERY = 10  # one article in this many keeps only a short lead in the rule's body block
CONCURRENCY = 32
RAW_FETCH_CONNECTIONS = 32
RAW_FETCH_SECONDS = 3.0
ARTICLE_RE = re.compile(r"/news/\d{3}/a(\d{6})\.html$")
ARTICLE_PATTERN = r"/news/\d{3}/a\d{6}\.html$"  # the same, as the rule and the minimal spider say it
# A crawl's process runs this bench's main() from a `-c` command, not this file: multiprocessing starts
# our text processes (spawned) by running the parent's __main__ file again, which here imports Scrapy,
# redis-py and the bench (0.33 s of CPU a process, measured with `python -c "import runpy; ..."` against
# `import crawler.worker.textjob` alone), where `crawler temp`'s __main__ (the `crawler` script) imports
# next to nothing. A `-c` command has no file to run again.
CHILD_MAIN = (
    f"import sys; sys.path.insert(0, {str(_REPO_ROOT)!r}); from bench.crawl import main; sys.exit(main())"
)

# Settings every crawl gets (on top of Scrapy's defaults for plain and scrapy-redis, of
# crawler/settings.py for ours). CONCURRENT_ITEMS (outputs of one response processed at once; Scrapy makes
# that many asyncio tasks per response) is crawler/settings.py's value, or Scrapy's default, for all three.
COMMON_SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": CONCURRENCY,
    "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
    "CONCURRENT_ITEMS": getattr(project_settings, "CONCURRENT_ITEMS", default_settings.CONCURRENT_ITEMS),
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "ROBOTSTXT_OBEY": True,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "USER_AGENT": "focused-crawler-bench/0.1",
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
}

# --- the site ------------------------------------------------------------------------------------------

_WORDS = (
    "council city river bridge market school budget mayor report street harbour station museum park "
    "library hospital police festival weather storm traffic railway airport museum theatre gallery "
    "residents officials plan vote meeting project funding housing rent tenants developers workers "
    "union strike wages prices energy water power grid solar wind climate flood drought farmers harvest "
    "season league match team coach players fans stadium season record goal final title victory defeat "
    "court judge trial verdict appeal lawyer witness evidence police arrest charge investigation "
    "minister government election campaign poll voters party leader debate policy reform tax spending "
    "company profits shares investors bank loan interest inflation jobs factory exports trade port "
    "research university students teachers exam science study data survey health doctors patients "
    "virus vaccine clinic nurses care elderly children families community volunteers charity event "
    "concert film book author artist music stage night morning week month year today yesterday "
    "announced said added warned expected reported confirmed described agreed rejected proposed "
    "new old local national regional public private major minor early late long short high low "
    "the a of and to in for on with at by from after before during while about over under"
).split()
_SECTIONS = ("city", "politics", "business", "sport", "culture", "science", "health", "world", "opinion")
_AUTHORS = ("Ana Lima", "Ben Okafor", "Chen Wei", "Dara Walsh", "Emil Novak", "Fatima Zahra", "Gus Berg")


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, 8, 20) for _ in range(rng.randint(4, 7)))


class BenchSite:
    """The generated news site: every page rendered once, as a whole HTTP response, keyed by path."""

    def __init__(self, articles: int) -> None:
        self.articles = articles
        self.pages = math.ceil(articles / PER_PAGE)
        rng = random.Random(2026)
        self._paragraphs = [_paragraph(rng) for _ in range(1000)]
        self._titles = [_sentence(random.Random(i), 6, 11).rstrip(".") for i in range(articles)]

    @staticmethod
    def article_path(number: int) -> str:
        return f"/news/{number // 1000:03d}/a{number:06d}.html"

    @staticmethod
    def index_path(page: int) -> str:
        return "/news/" if page == 1 else f"/news/page/{page}/"

    def short_body(self, number: int) -> bool:
        return number % SHORT_BODY_EVERY == 3

    def responses(self) -> dict[str, bytes]:
        """Every page of the site as a complete HTTP/1.1 response."""
        bodies: dict[str, str] = {"/robots.txt": ROBOTS_TXT}
        for page in range(1, self.pages + 1):
            bodies[self.index_path(page)] = self.index_html(page)
        for number in range(self.articles):
            bodies[self.article_path(number)] = self.article_html(number)
        return {path: _http_response(body, path.endswith(".txt")) for path, body in bodies.items()}

    def _chrome_top(self, title: str) -> str:
        menu = "".join(f'<li><a href="/section/{name}/">{name.title()}</a></li>' for name in _SECTIONS)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title} | Bench Gazette</title>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="description" content="{title}">'
            '<link rel="stylesheet" href="/static/site.css"><script src="/static/site.js" defer></script>'
            '</head><body><header class="masthead"><a class="logo" href="/">Bench Gazette</a>'
            f'<nav class="sections"><ul>{menu}</ul></nav>'
            '<form class="search" action="/search"><input name="q" placeholder="Search">'
            "<button>Search</button></form></header>\n"
        )

    @staticmethod
    def _chrome_bottom() -> str:
        links = "".join(
            f'<li><a href="/{name}/">{name.title()}</a></li>'
            for name in ("about", "contact", "advertise", "privacy", "terms", "jobs")
        )
        return (
            f'<footer><ul class="links">{links}</ul>'
            "<p>&copy; 2026 Bench Gazette. All rights reserved.</p></footer></body></html>\n"
        )

    def index_html(self, page: int) -> str:
        items, most_read, pager = index_parts(
            page,
            self.pages,
            self.articles,
            lambda number: self._titles[number],
            lambda number: self._paragraphs[number % len(self._paragraphs)][:160],
        )
        return (
            self._chrome_top(f"Latest news, page {page}")
            + f'<main><h1>Latest news</h1><ul class="list">\n{items}</ul>'
            + f'<aside class="most-read"><h2>Most read</h2><ol>{most_read}</ol></aside>'
            + f'<div class="pager">{pager}</div></main>\n'
            + self._chrome_bottom()
        )

    def _article_paragraphs(self, rng: random.Random) -> list[str]:
        """The paragraphs of an article, drawn first from its ``random.Random(number)``."""
        return [self._paragraphs[rng.randrange(len(self._paragraphs))] for _ in range(rng.randint(5, 9))]

    def article_text(self, number: int) -> str:
        """The known body of article ``number``: the text of its story and feature blocks, paragraphs
        separated by a blank line (a short-body article's lead is cut as its page shows it)."""
        paragraphs = self._article_paragraphs(random.Random(number))
        if self.short_body(number):
            paragraphs[0] = paragraphs[0][:120]
        return "\n\n".join(paragraphs)

    def article_html(self, number: int) -> str:
        rng = random.Random(number)
        section = _SECTIONS[number % len(_SECTIONS)]
        title = self._titles[number]
        day = f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}"
        paragraphs = self._article_paragraphs(rng)
        if self.short_body(number):
            story = f"<p>{paragraphs[0][:120]}</p>"
            feature = (
                '<div class="feature">' + "".join(f"<p>{text}</p>" for text in paragraphs[1:]) + "</div>"
            )
        else:
            story = "".join(f"<p>{text}</p>" for text in paragraphs)
            feature = ""
        tags = "".join(f'<li><a href="/tag/{word}/">{word}</a></li>' for word in rng.sample(_WORDS[:120], 4))
        related = "".join(
            f'<li><a href="{self.article_path(other)}">{self._titles[other]}</a></li>'
            for other in (rng.randrange(self.articles) for _ in range(RELATED))
        )
        return (
            self._chrome_top(title)
            + '<main><nav class="breadcrumb"><a href="/">Home</a> &rsaquo; '
            + f'<a href="/section/{section}/">{section.title()}</a></nav>'
            + f'<article><h1 class="headline">{title}</h1>'
            + f'<p class="meta"><time datetime="{day}T08:30:00Z">{day}</time> '
            + f'<span class="byline">By {_AUTHORS[number % len(_AUTHORS)]}</span></p>'
            + f'<div class="story">{story}</div>{feature}<ul class="tags">{tags}</ul></article>'
            + f'<aside class="related"><h2>Related</h2><ul>{related}</ul></aside></main>\n'
            + self._chrome_bottom()
        )

    def rule_yaml(self, origin: str) -> str:
        """Our rule for the site (rules/<site>.yaml format)."""
        return f"""\
name: Bench Gazette
domains: [127.0.0.1]
start_urls:
  - {origin}/news/
index:
  links:
    xpath: ["//main"]
    allow: ['{ARTICLE_PATTERN}']
  next_page: "//div[@class='pager']/a[@rel='next']/@href"
  max_pages: {self.pages}
depth: 1
article:
  fields:
    title: {{xpath: "//h1[@class='headline']"}}
    body: {{xpath: "//div[@class='story']/p", join: "\\n\\n"}}
    published: {{xpath: "//p[@class='meta']/time/@datetime", regex: '(\\d{{4}}-\\d{{2}}-\\d{{2}})'}}
    author: {{xpath: "//span[@class='byline']", regex: 'By (.+)'}}
    section: {{xpath: "//nav[@class='breadcrumb']/a[last()]"}}
  min_body_chars: 300
politeness:
  delay: 0
  concurrency: {CONCURRENCY}
  obey_robots: true
schedule:
  every: 1d
"""


def real_rule_yaml(site: RealSite, origin: str) -> str:
    """Our rule for the real-page site: the index part of the synthetic site's rule, a title from
    ``<title>`` and no body XPath, so that qRead reads every body."""
    return f"""\
name: Bench Reader
domains: [127.0.0.1]
start_urls:
  - {origin}/news/
index:
  links:
    xpath: ["//main"]
    allow: ['{ARTICLE_PATTERN}']
  next_page: "//div[@class='pager']/a[@rel='next']/@href"
  max_pages: {site.pages}
depth: 1
article:
  fields:
    title: {{xpath: "//title"}}
politeness:
  delay: 0
  concurrency: {CONCURRENCY}
  obey_robots: true
schedule:
  every: 1d
"""


Site = BenchSite | RealSite
SITES = ("synthetic", "real")
ROBOTS_TXT = "User-agent: *\nDisallow: /search\n"


def make_site(kind: str, articles: int) -> Site:
    """The bench site of ``kind`` for the crawl processes (the real site without its page templates)."""
    return BenchSite(articles) if kind == "synthetic" else RealSite(articles)


def _http_response(body: str | bytes, text: bool) -> bytes:
    data = body.encode("utf-8") if isinstance(body, str) else body
    kind = "text/plain" if text else "text/html"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {kind}; charset=utf-8\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode("ascii") + data


_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Scrapy's downloader uses it
    disable_nagle_algorithm = True
    pages: ClassVar[dict[str, bytes]] = {}  # whole responses by path
    rendered: ClassVar[int] = -1  # the real site: descriptor of the file of its rendered article responses
    offsets: ClassVar[list[tuple[int, int]]] = []  # (offset, length) of article N's response in that file

    def do_GET(self) -> None:
        page = self.pages.get(self.path)
        if page is None and self.offsets:
            match = ARTICLE_RE.search(self.path)
            if match is not None and int(match[1]) < len(self.offsets):
                offset, length = self.offsets[int(match[1])]
                page = os.pread(self.rendered, length, offset)
        self.wfile.write(_NOT_FOUND if page is None else page)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # 32 connections open at once: the default backlog of 5 makes SYN retries


def serve(articles: int, site: str) -> int:
    """The server process: render the site, print the port and the site's bytes, serve until terminated."""
    if site == "synthetic":
        _Handler.pages = BenchSite(articles).responses()
        size = sum(map(len, _Handler.pages.values()))
        return _serve_forever(size)
    real = RealSite(articles, templates=True)
    pages = {"/robots.txt": _http_response(ROBOTS_TXT, True)}
    pages.update(
        (real.index_path(page), _http_response(real.index_html(page), False))
        for page in range(1, real.pages + 1)
    )
    _Handler.pages = pages
    # Every copy rendered once, into an unlinked temporary file read back per request: the server does no
    # substitution during the crawls (each crawl fetches every article), and its memory stays the templates'.
    with tempfile.TemporaryFile(prefix="bench-crawl-real-") as rendered:
        offset = 0
        for number in range(articles):
            response = _http_response(real.article_html(number), False)
            rendered.write(response)
            _Handler.offsets.append((offset, len(response)))
            offset += len(response)
        rendered.flush()
        _Handler.rendered = rendered.fileno()
        real.templates.clear()
        return _serve_forever(sum(map(len, pages.values())) + offset)


def _serve_forever(size: int) -> int:
    with _Server(("127.0.0.1", 0), _Handler) as server:
        print(f"READY {server.server_address[1]} {size}", flush=True)
        server.serve_forever()
    return 0


@dataclass
class SiteServer:
    process: subprocess.Popen[str]
    origin: str
    site_bytes: int

    @classmethod
    def start(cls, articles: int, site: str) -> SiteServer:
        script = str(Path(__file__).resolve())
        command = [sys.executable, script, "--serve", "--articles", str(articles), "--site", site]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        line = process.stdout.readline().split()
        if len(line) != 3 or line[0] != "READY":
            process.kill()
            code = process.wait()
            said = f"it printed {' '.join(line)!r}" if line else f"exit code {code}: its error is above"
            raise SystemExit(f"the bench site server did not start ({said})")
        return cls(process, f"http://127.0.0.1:{line[1]}", int(line[2]))

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_fetch_rate(origin: str, articles: int, seconds: float = RAW_FETCH_SECONDS) -> float:
    """Article pages per second the server gives to RAW_FETCH_CONNECTIONS keep-alive clients (threads)."""
    host, port = origin.removeprefix("http://").split(":")
    deadline = time.perf_counter() + seconds
    counts = [0] * RAW_FETCH_CONNECTIONS

    def client(slot: int) -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        number = slot
        while time.perf_counter() < deadline:
            connection.request("GET", BenchSite.article_path(number % articles))
            response = connection.getresponse()
            response.read()
            counts[slot] += 1
            number += RAW_FETCH_CONNECTIONS
        connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(slot,)) for slot in range(RAW_FETCH_CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


# --- the crawl process ---------------------------------------------------------------------------------


class BenchMeter:
    """Extension of every bench crawl: times from the first request reaching the downloader to
    spider_closed, counts responses, distinct article pages fetched and items; writes ``bench/*`` stats,
    the two moments also as epoch seconds (``bench/started_at``, ``bench/ended_at``: comparable between
    the processes of bench/scaling.py)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.first: float | None = None
        self.started_at: float | None = None
        self.last_response = 0.0
        self.responses = 0
        self.items = 0
        self.articles: set[int] = set()
        crawler.signals.connect(self.request_reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def request_reached(self, **_: Any) -> None:
        if self.first is None:
            self.first = time.perf_counter()
            self.started_at = time.time()

    def response_received(self, response: Response, **_: Any) -> None:
        self.responses += 1
        self.last_response = time.perf_counter()
        match = ARTICLE_RE.search(response.url)
        if match is not None and response.status == 200:
            self.articles.add(int(match[1]))

    def item_scraped(self, **_: Any) -> None:
        self.items += 1

    def spider_closed(self, **_: Any) -> None:
        now = time.perf_counter()
        first = now if self.first is None else self.first
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value("bench/seconds", now - first)
        stats.set_value("bench/tail_seconds", now - max(self.last_response, first))
        stats.set_value("bench/responses", self.responses)
        stats.set_value("bench/articles", len(self.articles))
        stats.set_value("bench/items", self.items)
        ended_at = time.time()
        stats.set_value("bench/started_at", ended_at if self.started_at is None else self.started_at)
        stats.set_value("bench/ended_at", ended_at)


class BenchSpider(Spider):
    """The minimal spider of the plain and scrapy-redis crawls: the pager and the article links of index
    pages (each link once per page), a small item per article page."""

    name = "bench"
    article_re = re.compile(ARTICLE_PATTERN)

    def __init__(self, *args: Any, start_url: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_url = start_url

    async def start(self) -> AsyncIterator[Request]:
        yield Request(self.start_url, callback=self.parse_index, priority=1, dont_filter=True)

    def parse_index(self, response: Response) -> Iterator[Request]:
        seen: set[str] = set()
        for href in response.xpath("//main//a/@href").getall():
            url = response.urljoin(href)
            if url not in seen and self.article_re.search(url):
                seen.add(url)
                yield Request(url, callback=self.parse_article)
        next_page = response.xpath("//div[@class='pager']/a[@rel='next']/@href").get()
        if next_page:
            yield Request(response.urljoin(next_page), callback=self.parse_index, priority=1)

    def parse_article(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "title": response.xpath("//h1/text()").get()}


class RecipeSpider(BenchSpider):
    """The recipe crawl's spider: BenchSpider's, its article items carrying the page's HTML."""

    name = "recipe"

    def parse_article(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "title": response.xpath("//title/text()").get(), "html": response.text}


RECIPE_TABLE = "articles"


class RecipePipeline:
    """What users add to scrapy-redis for articles: ``trafilatura.extract(html)`` on each article page and
    one INSERT and one commit per item into a plain SQLite table (url, title, text), in the crawl thread."""

    def __init__(self, path: str) -> None:
        import trafilatura  # noqa: PLC0415 - optional (pip install -e .[bench]); bench() checks it first

        self.extract = trafilatura.extract
        self.path = path
        self.connection: sqlite3.Connection | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings["RECIPE_DATABASE"])

    def open_spider(self) -> None:
        self.connection = sqlite3.connect(self.path)
        self.connection.execute(
            f"CREATE TABLE IF NOT EXISTS {RECIPE_TABLE} (url TEXT PRIMARY KEY, title TEXT, text TEXT)"
        )
        self.connection.commit()

    def close_spider(self) -> None:
        if self.connection is not None:
            self.connection.close()

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        assert self.connection is not None
        text = self.extract(item["html"], url=item["url"])
        self.connection.execute(
            f"INSERT OR REPLACE INTO {RECIPE_TABLE} (url, title, text) VALUES (?, ?, ?)",
            (item["url"], item["title"], text),
        )
        self.connection.commit()
        return item


def _stack_names(names: Iterable[str]) -> str:
    """A pipeline's commands, a run of one command as one name and its count: ``EVALSHA×64+HINCRBY``."""
    runs = ((name, len(list(group))) for name, group in itertools.groupby(names))
    return "+".join(name if count == 1 else f"{name}×{count}" for name, count in runs)


class RedisMeter:
    """Counts redis-py's socket sends (round trips: a pipeline is one) and times the commands behind them
    (wall time in the client, the round trip included), in this process, by wrapping redis-py's connection
    and client classes."""

    def __init__(self) -> None:
        self.round_trips = 0
        self.commands: dict[str, list[float]] = {}  # name -> [calls, seconds]
        self.scripts = _script_names()

    def install(self) -> None:
        connection_class: Any = redis.connection.AbstractConnection
        send = connection_class.send_packed_command

        @functools.wraps(send)
        def send_packed_command(connection: Any, command: Any, check_health: bool = True) -> Any:
            self.round_trips += 1
            return send(connection, command, check_health)

        client_class: Any = redis.Redis
        pipeline_class: Any = redis.client.Pipeline
        execute = client_class.execute_command

        @functools.wraps(execute)
        def execute_command(client: Any, *args: Any, **options: Any) -> Any:
            started = time.perf_counter()
            try:
                return execute(client, *args, **options)
            finally:
                self._count(self._name(args), time.perf_counter() - started)

        execute_pipeline = pipeline_class.execute

        @functools.wraps(execute_pipeline)
        def execute_stack(pipeline: Any, raise_on_error: bool = True) -> Any:
            names = _stack_names(str(command[0][0]) for command in pipeline.command_stack)
            started = time.perf_counter()
            try:
                return execute_pipeline(pipeline, raise_on_error)
            finally:
                self._count(f"pipeline {names}", time.perf_counter() - started)

        connection_class.send_packed_command = send_packed_command
        client_class.execute_command = execute_command
        pipeline_class.execute = execute_stack

    def _name(self, args: Sequence[Any]) -> str:
        name = str(args[0]).upper() if args else "?"
        if name in {"EVALSHA", "EVAL"} and len(args) > 1:
            sha = args[1] if isinstance(args[1], str) else hashlib.sha1(str(args[1]).encode()).hexdigest()
            name = f"{name} {self.scripts.get(sha, sha[:8])}"
        return name

    def _count(self, name: str, seconds: float) -> None:
        entry = self.commands.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds

    def report(self) -> dict[str, list[float]]:
        """The commands, most time first."""
        return dict(sorted(self.commands.items(), key=lambda item: -item[1][1]))


def _script_names() -> dict[str, str]:
    """SHA-1 of our Lua scripts -> a name, to tell the EVALSHA calls apart."""
    from crawler.redisio import bloom, queue  # noqa: PLC0415 - only the crawl processes need them

    sources = {
        "queue.push": queue._PUSH,
        "queue.pop": queue._POP,
        "queue.ack": queue._ACK,
        "queue.renew": queue._RENEW,
        "queue.requeue_expired": queue._REQUEUE,
        "queue.release": queue._RELEASE,
        "bloom.test_and_set": bloom._LUA_TEST_AND_SET,
    }
    return {hashlib.sha1(source.encode("utf-8")).hexdigest(): name for name, source in sources.items()}


def _settings(base: Settings, overrides: Mapping[str, Any]) -> Settings:
    for name, value in overrides.items():
        base.set(name, value, priority="cmdline")
    return base


def _run_spider(settings: Settings, spider: type[Spider] = BenchSpider, **spider_args: Any) -> dict[str, Any]:
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(spider)
    process.crawl(crawler, **spider_args)
    process.start()
    assert crawler.stats is not None
    return dict(crawler.stats.get_stats())


def _redis_info(url: str) -> dict[str, Any]:
    """Of the Redis server at ``url``: its pid, CPU seconds so far, memory used."""
    client = redis.Redis.from_url(url)
    try:
        info: dict[str, Any] = client.info("all")
    finally:
        client.close()
    pid = int(info["process_id"])
    return {
        "pid": pid,
        "cpu": _cpu_seconds(pid),
        "used_memory": int(info["used_memory"]),
        "forks": int(info.get("total_forks", 0)),
        "aof_delayed_fsync": int(info.get("aof_delayed_fsync", 0)),
        "aof_size": int(info.get("aof_current_size", 0)),
        "commandstats": {
            key.removeprefix("cmdstat_"): (int(value["calls"]), int(value["usec"]))
            for key, value in info.items()
            if key.startswith("cmdstat_")
        },
    }


def _server_side(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What the Redis server did during the crawl: CPU seconds, memory at the end, commands (calls, usec)."""
    commands: dict[str, tuple[int, int]] = {}
    for name, (calls, usec) in after["commandstats"].items():
        calls_before, usec_before = before["commandstats"].get(name, (0, 0))
        if calls > calls_before:
            commands[name] = (calls - calls_before, usec - usec_before)
    return {
        "redis_cpu": after["cpu"] - before["cpu"],
        "redis_memory": after["used_memory"],
        "redis_forks": after["forks"] - before["forks"],
        "aof_delayed_fsync": after["aof_delayed_fsync"] - before["aof_delayed_fsync"],
        "aof_bytes": after["aof_size"],
        "redis_commands": dict(sorted(commands.items(), key=lambda item: -item[1][1])),
    }


def _process_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of the process and of its reaped children) of every process."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            # utime, stime, cutime, cstime: a child is counted alive, or in its parent once reaped
            table[int(entry.name)] = (int(fields[1]), sum(map(int, fields[11:15])) / tick)
    return table


def _tree(table: Mapping[int, tuple[int, float]], root: int) -> set[int]:
    """``root`` and its descendants in ``table``."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in table and pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


def cpu_mark(redis_pid: int | None = None) -> dict[str, float]:
    """CPU seconds so far of a crawl's processes: ``crawl``, this process (every thread) and its other
    descendants (helper processes; reaped ones included); ``redis``, the Redis server and its forks."""
    table = _process_table()
    redis_tree = _tree(table, redis_pid) if redis_pid is not None else set()
    crawl_tree = _tree(table, os.getpid()) - redis_tree
    return {
        "crawl": sum(table[pid][1] for pid in crawl_tree),
        "redis": sum(table[pid][1] for pid in redis_tree),
    }


def _crawl_ended(cpu_before: Mapping[str, float], redis_pid: int | None = None) -> dict[str, Any]:
    """At the end of a crawl: the CPU seconds its processes used since ``cpu_before`` (cpu_mark), and this
    process's peak RSS so far (taken here, before the stored texts are read back and scored)."""
    after = cpu_mark(redis_pid)
    return {
        "cpu": {name: after[name] - cpu_before[name] for name in cpu_before},
        "peak_rss_kb": _peak_rss_kb(),
    }


def _peak_rss_kb() -> int:
    peak = re.search(r"^VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    return int(peak[1]) if peak else 0


def score_texts(site: Site, texts: Iterable[tuple[str, str | None]]) -> dict[str, Any]:
    """Token P/R/F1 (extractors.scoring.token_prf, the corpus README's definition) of each stored text
    against its article's known body (``site.article_text``), averaged over the stored articles."""
    scores = []
    for url, text in texts:
        match = ARTICLE_RE.search(url)
        if match is not None:
            scores.append(token_prf(text or "", site.article_text(int(match[1])), "en"))
    count = max(len(scores), 1)
    return {
        "scored": len(scores),
        "precision": sum(p for p, _, _ in scores) / count,
        "recall": sum(r for _, r, _ in scores) / count,
        "f1": sum(f for _, _, f in scores) / count,
        "acc": sum(1 for _, _, f in scores if f >= ACC_F1) / count,
        "empty": sum(1 for _, _, f in scores if f == 0.0),
    }


def crawl_plain(origin: str, site: Site, workdir: Path, extra: Mapping[str, Any]) -> dict[str, Any]:
    settings = _settings(Settings(), {**COMMON_SETTINGS, **extra})
    cpu_before = cpu_mark()
    stats = _run_spider(settings, start_url=f"{origin}/news/")
    return {"stats": stats, **_crawl_ended(cpu_before)}


def crawl_scrapy_redis(
    origin: str,
    site: Site,
    workdir: Path,
    extra: Mapping[str, Any],
    spider: type[BenchSpider] = BenchSpider,
) -> dict[str, Any]:
    from crawler.redisio.embedded import EmbeddedRedis  # noqa: PLC0415 - only this crawl process needs it

    with EmbeddedRedis(workdir / "data") as embedded:
        before = _redis_info(embedded.url)
        settings = _settings(
            Settings(),
            {
                **COMMON_SETTINGS,
                "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
                "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
                "REDIS_URL": embedded.url,
                **extra,
            },
        )
        cpu_before = cpu_mark(before["pid"])
        stats = _run_spider(settings, spider, start_url=f"{origin}/news/")
        ended = _crawl_ended(cpu_before, before["pid"])
        after = _redis_info(embedded.url)
    return {"stats": stats, **_server_side(before, after), **ended}


def crawl_recipe(origin: str, site: Site, workdir: Path, extra: Mapping[str, Any]) -> dict[str, Any]:
    """Stock scrapy-redis with RecipePipeline: trafilatura and one SQLite INSERT + commit per article."""
    database = workdir / "recipe.sqlite"
    recipe = {"ITEM_PIPELINES": {RecipePipeline: 300}, "RECIPE_DATABASE": str(database)}
    outcome = crawl_scrapy_redis(origin, site, workdir, {**extra, **recipe}, spider=RecipeSpider)
    connection = sqlite3.connect(database)
    try:
        rows: list[tuple[str, str | None]] = connection.execute(
            f"SELECT url, text FROM {RECIPE_TABLE}"
        ).fetchall()
    finally:
        connection.close()
    return {**outcome, "stored": len(rows), "texts": rows}


def crawl_ours(origin: str, site: Site, workdir: Path, extra: Mapping[str, Any]) -> dict[str, Any]:
    # As `crawler temp` runs a crawl (crawler/cli/crawl.py run_temp and _crawl_job), without the progress bar.
    from crawler.cli.crawl import redis_for  # noqa: PLC0415 - only this crawl process needs them
    from crawler.config import Config  # noqa: PLC0415
    from crawler.keys import Keys  # noqa: PLC0415
    from crawler.redisio.connection import connect  # noqa: PLC0415
    from crawler.requests import JobCounts, enqueue_job  # noqa: PLC0415
    from crawler.rules import load_rule  # noqa: PLC0415
    from crawler.store import open_store  # noqa: PLC0415
    from crawler.worker.process import run_worker  # noqa: PLC0415

    rules = workdir / "rules"
    rules.mkdir(parents=True)
    path = rules / f"{SITE_ID}.yaml"
    rule_text = site.rule_yaml(origin) if isinstance(site, BenchSite) else real_rule_yaml(site, origin)
    path.write_text(rule_text, encoding="utf-8")
    rule = load_rule(path)
    config = Config(data_dir=workdir / "data", rules_dir=rules, allow_private_networks=True)
    # The bench's extensions beside the project's (a crawl's EXTENSIONS replace the project's whole).
    extensions = {**project_settings.EXTENSIONS, **extra.get("EXTENSIONS", {})}
    with redis_for(config) as url:
        settings = config.replace(redis_url=url).settings(
            {**COMMON_SETTINGS, **extra, "EXTENSIONS": extensions}
        )
        server = connect(url)
        keys = Keys(settings["REDIS_KEY_PREFIX"])
        job = enqueue_job(server, keys, [rule], lease_seconds=settings.getfloat("LEASE_SECONDS"))
        before = _redis_info(url)
        cpu_before = cpu_mark(before["pid"])
        stats = run_worker(settings, job=job, sites=[rule.site])
        ended = _crawl_ended(cpu_before, before["pid"])
        after = _redis_info(url)
        counts = JobCounts.read(server, keys, job)
        server.close()
    store = open_store(settings)
    try:
        stored = store.count(site=rule.site)
        texts = [
            (document["url"], document.get("body"))
            for document in store.iter_articles(site=rule.site, newest_first=False)
        ]
    finally:
        store.close()
    return {
        "stats": stats,
        **_server_side(before, after),
        **ended,
        "texts": texts,
        "job": {"fetched": counts.fetched, "stored": counts.stored, "pending": counts.pending,
                "skipped": counts.skipped, "errors": counts.errors},
        "stored": stored,
    }  # fmt: skip


CRAWL_FUNCTIONS: dict[str, Callable[[str, Site, Path, Mapping[str, Any]], dict[str, Any]]] = {
    "plain": crawl_plain,
    "scrapy-redis": crawl_scrapy_redis,
    "recipe": crawl_recipe,
    "ours": crawl_ours,
}


def child(
    kind: str,
    site_kind: str,
    origin: str,
    articles: int,
    workdir: Path,
    result: Path,
    profile: Path | None,
    settings: Mapping[str, Any],
) -> int:
    """One crawl in this (fresh) process; its results as JSON in ``result``."""
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("MONGO_URI", None)
    if kind == "ours":
        os.environ["CRAWLER_ALLOW_PRIVATE_NETWORKS"] = "1"
    site = make_site(site_kind, articles)
    meter = RedisMeter()
    meter.install()
    extra = {**settings, "EXTENSIONS": {BenchMeter: 0}}
    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()
    outcome = CRAWL_FUNCTIONS[kind](origin, site, workdir, extra)
    if profiler is not None:
        profiler.disable()
        assert profile is not None
        profiler.dump_stats(profile)
    texts = outcome.pop("texts", None)
    if texts is not None:  # the crawls that extract article text: (url, text) of every stored article
        outcome["quality"] = score_texts(site, texts)
    stats = outcome.pop("stats")
    outcome.update(
        {
            "seconds": stats.get("bench/seconds", 0.0),
            "tail_seconds": stats.get("bench/tail_seconds", 0.0),
            "responses": stats.get("bench/responses", 0),
            "articles": stats.get("bench/articles", 0),
            "items": stats.get("bench/items", 0),
            "errors": stats.get("log_count/ERROR", 0),
            "qread": sum(v for k, v in stats.items() if k.startswith("extract/qread_fallback/")),
            "peak_rss_kb": outcome.get("peak_rss_kb") or _peak_rss_kb(),
            "round_trips": meter.round_trips,
            "commands": meter.report(),
        }
    )
    result.write_text(json.dumps(outcome, default=str), encoding="utf-8")
    return 0


# --- the bench -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CrawlResult:
    kind: str
    name: str
    data: dict[str, Any]
    server_cpu: float

    @property
    def seconds(self) -> float:
        return float(self.data["seconds"])

    @property
    def responses(self) -> int:
        return int(self.data["responses"])

    @property
    def rate(self) -> float:
        return self.responses / self.seconds if self.seconds else 0.0

    @property
    def stored(self) -> int:
        """Articles stored (items for the crawls that store nothing)."""
        return int(self.data.get("stored", self.data["items"]))

    @property
    def cpu_per_1000(self) -> float:
        """CPU seconds of the crawl's processes (crawl process and Redis) per 1,000 stored articles."""
        return 1000 * sum(self.data["cpu"].values()) / self.stored if self.stored else 0.0


@dataclass(frozen=True, slots=True)
class CrawlOptions:
    """What every crawl of a bench run gets: settings on top of COMMON_SETTINGS, where its profiles go
    (cProfile in the crawl process, or py-spy sampling it from outside), and the site (SITES)."""

    settings: dict[str, Any]
    profile: Path | None = None
    py_spy: Path | None = None
    py_spy_program: str = ""  # py-spy's executable (py_spy_program()), when py_spy is given
    site: str = "synthetic"


def run_crawl(
    kind: str, name: str, server: SiteServer, articles: int, folder: Path, options: CrawlOptions
) -> CrawlResult:
    """One crawl in its own process; ``name`` names its folder and profile files."""
    workdir = folder / name
    workdir.mkdir()
    result = workdir / "result.json"
    log = workdir / "crawl.log"
    command = [
        sys.executable, "-c", CHILD_MAIN, "--child", kind, "--site", options.site,
        "--origin", server.origin, "--articles", str(articles), "--workdir", str(workdir),
        "--result", str(result),
        "--settings-json", json.dumps(options.settings),
    ]  # fmt: skip
    if options.profile is not None:
        command += ["--profile-file", str(options.profile / f"{name}.prof")]
    if options.py_spy is not None:
        # --idle: blocked time (Redis replies, SQLite, the event loop's wait) is sampled too.
        samples = options.py_spy / f"{name}.txt"
        spy = [options.py_spy_program, "record", "--idle", "--threads", "--format", "raw", "-o", str(samples)]
        command = [*spy, "--", *command]
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "MONGO_URI"}}
    cpu_before = server.cpu_seconds()
    with log.open("wb") as output:
        code = subprocess.run(
            command, stdout=output, stderr=subprocess.STDOUT, env=env, check=False
        ).returncode
    server_cpu = server.cpu_seconds() - cpu_before
    if code != 0 or not result.exists():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise SystemExit(f"the {kind} crawl failed (exit code {code}); the end of {log}:\n{tail}")
    warnings = Counter(
        match[1][:150]
        for match in re.finditer(r"\] (?:WARNING|ERROR): (.*)", log.read_text(errors="replace"))
    )
    for message, count in warnings.items():
        print(f"  log ({count}x): {message}")
    return CrawlResult(kind, name, json.loads(result.read_text(encoding="utf-8")), server_cpu)


def crawl_table(results: Sequence[CrawlResult], articles: int, index_pages: int) -> str:
    reference = next((r for r in results if r.kind == REFERENCE), None)
    lines = [
        "| crawler | pages | articles fetched | items | seconds | pages/s | vs stock scrapy-redis"
        " | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        ratio = f"{r.rate / reference.rate:.2f}x" if reference is not None and reference.rate else "-"
        check = "" if r.data["articles"] == articles else " (MISSING)"
        lines.append(
            f"| {LABELS[r.kind]} | {r.responses:,} | {r.data['articles']:,}/{articles:,}{check}"
            f" | {r.data['items']:,} | {r.seconds:.1f} | {r.rate:.1f} | {ratio}"
            f" | {r.data['peak_rss_kb'] / 1024:.0f} |"
        )
    lines.append(
        f"\npages = responses: robots.txt + {index_pages:,} index pages + {articles:,} articles"
        " when complete."
    )
    return "\n".join(lines)


def details_table(results: Sequence[CrawlResult]) -> str:
    reference = next((r for r in results if r.kind == REFERENCE), None)
    lines = [
        "| crawler | Redis round trips/page | crawl process CPU s | Redis CPU s | CPU s per 1,000 articles"
        " | vs stock scrapy-redis | site server CPU (% of a core) | idle tail s | qRead fallbacks | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        pages = max(r.responses, 1)
        cpu = r.data["cpu"]
        ratio = (
            f"{r.cpu_per_1000 / reference.cpu_per_1000:.2f}x"
            if reference is not None and reference.cpu_per_1000
            else "-"
        )
        redis_cpu = f"{cpu['redis']:.1f}" if "redis_cpu" in r.data else "-"
        lines.append(
            f"| {LABELS[r.kind]} | {r.data['round_trips'] / pages:.2f} | {cpu['crawl']:.1f}"
            f" | {redis_cpu} | {r.cpu_per_1000:.2f} | {ratio}"
            f" | {100 * r.server_cpu / r.seconds if r.seconds else 0:.0f}%"
            f" | {r.data['tail_seconds']:.1f} | {r.data['qread']:,} | {r.data['errors']} |"
        )
    lines.append(
        "\nCPU s = user + system seconds from the crawl's start to its end: the crawl process with every"
        " thread and helper process, and the Redis server with its forks (the site server apart);"
        " per 1,000 articles stored (items for the crawl-only crawls)."
    )
    for r in results:
        commands = r.data["commands"]
        if commands:
            pages = max(r.responses, 1)
            waited = sum(seconds for _, seconds in commands.values())
            shown = ", ".join(
                f"{name} {calls / pages:.2f} ({1e6 * seconds / pages:.0f} us)"
                for name, (calls, seconds) in list(commands.items())[:10]
            )
            lines.append(
                f"\n{LABELS[r.kind]}: the crawl process waited {waited:.1f} s on Redis"
                f" ({100 * waited / r.seconds if r.seconds else 0:.0f}% of the crawl);"
                f" commands per page (client wall time per page): {shown}"
            )
        server_side = r.data.get("redis_commands")
        if server_side:
            pages = max(r.responses, 1)
            shown = ", ".join(
                f"{name} {calls / pages:.2f} calls {usec / pages:.0f} us"
                for name, (calls, usec) in list(server_side.items())[:8]
            )
            lines.append(f"{LABELS[r.kind]}, Redis server time per page (INFO commandstats): {shown}")
            lines.append(
                f"{LABELS[r.kind]}, Redis persistence: append-only file {r.data['aof_bytes'] / 2**20:.0f} MB"
                f" at the end, {r.data['redis_forks']} fork(s) (AOF rewrites),"
                f" {r.data['aof_delayed_fsync']} delayed fsync(s)"
            )
        if "job" in r.data:
            lines.append(
                f"{LABELS[r.kind]}, job counters: {r.data['job']}; stored in SQLite: {r.data['stored']:,}"
            )
        elif "stored" in r.data:
            lines.append(f"{LABELS[r.kind]}: rows in its SQLite table: {r.data['stored']:,}")
    return "\n".join(lines)


def quality_table(results: Sequence[CrawlResult], site: str) -> str:
    """Token P/R/F1 of the stored texts (score_texts) of the crawls that extract the article text."""
    truth = (
        "the generated article text"
        if site == "synthetic"
        else "the page's ground truth (truth/<id>.txt) with the copy's word substitution"
    )
    lines = [
        "| crawler | articles scored | token F1 | precision | recall | F1 >= 0.9 | empty texts |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        q = r.data["quality"]
        lines.append(
            f"| {LABELS[r.kind]} | {q['scored']:,} | {q['f1']:.3f} | {q['precision']:.3f} | {q['recall']:.3f}"
            f" | {100 * q['acc']:.1f}% | {q['empty']:,} |"
        )
    lines.append(
        f"\nExtraction quality: each stored text against {truth}; token P/R/F1 as extractors/scoring.py"
        " (white-space tokens), averaged over the stored articles."
    )
    return "\n".join(lines)


def print_profile(path: Path, limit: int = 25) -> None:
    for order in ("tottime", "cumulative"):
        print(f"\n{path.name}, top {limit} by {order}:")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.sort_stats(order).print_stats(limit)


# Where a py-spy sample of the crawl's main thread goes: the first category (in this order) with a frame
# matching its pattern anywhere in the stack; a sample matching none is "Scrapy, Twisted, asyncio".
SPY_CATEGORIES = (
    ("Redis calls (redis-py, waiting for the reply included)", re.compile(r"\(redis/")),
    ("SQLite store (StorePipeline)", re.compile(r"^StorePipeline\.process_item ")),
    ("qRead, summaries, fingerprints (TextPipeline)", re.compile(r"^TextPipeline\.process_item ")),
    ("clean pipeline", re.compile(r"^CleanPipeline\.process_item ")),
    ("rule fields (Rule.extract_fields)", re.compile(r"^Rule\.extract_fields ")),
    ("index links (Rule.article_links, next_page_url)", re.compile(r"^Rule\.(article_links|next_page_url) ")),
    ("request JSON (crawler/redisio/serializer.py)", re.compile(r"\(crawler/redisio/serializer\.py")),
    ("HTML parsing (parsel create_root_node)", re.compile(r"create_root_node ")),
    ("minimal spider callbacks", re.compile(r"^BenchSpider\.")),
    ("event loop waiting (select: nothing to do)", re.compile(r"^(EpollSelector|BaseSelector)\.select ")),
)
_LINE_NUMBER_RE = re.compile(r":\d+\)$")


def summarize_py_spy(path: Path, pages: int, limit: int = 20) -> str:
    """Categories (SPY_CATEGORIES) and top functions of the crawl's main thread in a py-spy raw file, in
    milliseconds per page (100 samples a second), from when the reactor runs."""
    categories: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        start = next((i for i, frame in enumerate(frames) if frame.startswith("CrawlerProcess.start ")), None)
        if not frames[0].endswith("MainThread") or start is None:
            continue
        samples = int(count)
        total += samples
        crawl = [_LINE_NUMBER_RE.sub(")", frame) for frame in frames[start + 1 :]]
        category = next(
            (name for name, pattern in SPY_CATEGORIES if any(pattern.search(frame) for frame in crawl)),
            "Scrapy, Twisted, asyncio (the rest)",
        )
        categories[category] += samples
        leaves[crawl[-1] if crawl else "?"] += samples
        for frame in set(crawl):
            if "(crawler/" in frame or "(extractors/" in frame or "(scrapy/" in frame or "(redis/" in frame:
                inclusive[frame] += samples
    per_page = 10_000 / max(pages, 1)  # ms per page of one sample (10 ms)

    def rows(counter: Counter[str], top: int) -> list[str]:
        return [
            f"| {name} | {count * per_page / 1000:.2f} | {100 * count / max(total, 1):.1f}% |"
            for name, count in counter.most_common(top)
        ]

    header = ["", "| where | ms/page | share |", "|---|---:|---:|"]
    lines = [f"py-spy, {path.name}: {total / 100:.1f} s of the crawl's main thread sampled, {pages:,} pages"]
    lines += [*header, *rows(categories, len(categories))]
    lines += [f"\nTop {limit} functions, self time (the innermost frame):", *header, *rows(leaves, limit)]
    lines += [f"\nTop {limit} functions of crawler/, extractors/, scrapy/, redis/, inclusive:", *header]
    lines += rows(inclusive, limit)
    return "\n".join(lines)


def bloom_comparison(urls: int) -> None:
    """Redis bytes per URL of scrapy-redis's fingerprint set and of our Bloom filter, by bench/bloom.py."""
    from crawler.redisio.connection import connect  # noqa: PLC0415
    from crawler.redisio.embedded import EmbeddedRedis  # noqa: PLC0415 - the crawl processes import it themselves

    error_rate = 0.001
    probes = max(urls // 10, 1000)
    everything = bloom_bench.fingerprints(urls + probes, seed=2026)
    added, unseen = everything[:urls], everything[urls:]
    with (
        tempfile.TemporaryDirectory(prefix="bench-crawl-bloom-") as folder,
        EmbeddedRedis(Path(folder)) as server,
    ):
        client = connect(server.url)
        rows = [
            bloom_bench.bench_set(client, added, unseen),
            bloom_bench.bench_bloom(
                client, "RedisBloom (ours), at capacity", urls, error_rate, added, unseen
            ),
        ]
        client.close()
    print(f"\nRedis bytes per URL at {urls:,} URLs (bench/bloom.py):\n")
    print(bloom_bench.table(rows, error_rate))
    fingerprint_set, bloom = rows
    print(
        f"\nbytes/URL: scrapy-redis fingerprint set {fingerprint_set.redis_bytes / urls:.1f},"
        f" our Bloom filter {bloom.redis_bytes / urls:.2f}"
        f" ({fingerprint_set.redis_bytes / bloom.redis_bytes:.0f}x less)"
    )


def bench(args: argparse.Namespace, options: CrawlOptions) -> int:
    kinds = [kind.strip() for kind in args.only.split(",") if kind.strip()]
    unknown = sorted(set(kinds) - set(CRAWLS))
    if unknown:
        raise SystemExit(
            f"--only {args.only!r}: unknown crawl {', '.join(unknown)}; expected some of {CRAWLS}"
        )
    if options.site == "real":
        missing = missing_corpora(default_corpora())
        if missing is not None:
            print(missing, file=sys.stderr)
            return CORPORA_MISSING
    if "recipe" in kinds and importlib.util.find_spec("trafilatura") is None:
        install = pip_install("-e '.[bench]'")
        print(
            "The recipe crawl is skipped: trafilatura is not installed in this environment"
            f" ({install}, which ./run.sh bench does)."
        )
        kinds.remove("recipe")
        if not kinds:
            raise SystemExit("--only recipe: nothing left to run")
    default_articles = DEFAULT_ARTICLES[options.site]
    articles = args.articles if args.articles is not None else (2000 if args.quick else default_articles)
    bloom_urls = args.bloom_urls if args.bloom_urls is not None else (100_000 if args.quick else 1_000_000)
    index_pages = math.ceil(articles / PER_PAGE)
    started = time.perf_counter()
    what = "the generated news site" if options.site == "synthetic" else "the real-page site"
    print(
        f"Generating and serving {what}: {articles:,} articles, {index_pages:,} index pages ...", flush=True
    )
    server = SiteServer.start(articles, options.site)
    try:
        print(
            f"Site on {server.origin} (ready in {time.perf_counter() - started:.0f} s):"
            f" {server.site_bytes / articles / 1024:.1f} KB/page on average,"
            f" {server.site_bytes / 2**20:.0f} MB in all."
        )
        if options.site == "real":
            real = RealSite(articles)
            left_out = ", ".join(f"{page} (repeats {earlier})" for page, earlier in real.repeats.items())
            print(
                f"Real pages: {len(real.sources)} pages of language {LANGUAGE!r} of {', '.join(CORPORA)},"
                f" up to {real.copies} word-substituted copies of each"
                + (f"; left out: {left_out}." if left_out else ".")
            )
        shared = {**COMMON_SETTINGS, **options.settings}
        print("Settings of every crawl: " + ", ".join(f"{name}={value}" for name, value in shared.items()))
        rate = raw_fetch_rate(server.origin, articles)
        print(f"Raw fetch rate: {rate:,.0f} pages/s with {RAW_FETCH_CONNECTIONS} keep-alive connections.")
        runs: dict[str, list[CrawlResult]] = {}
        with tempfile.TemporaryDirectory(prefix="bench-crawl-") as folder:
            for number in range(1, args.repeat + 1):
                for kind in [kind for kind in CRAWLS if kind in kinds]:
                    name = kind if args.repeat == 1 else f"{kind}-{number}"
                    print(
                        f"Crawl: {LABELS[kind]}{'' if args.repeat == 1 else f', run {number}'} ...",
                        flush=True,
                    )
                    result = run_crawl(kind, name, server, articles, Path(folder), options)
                    print(
                        f"  {result.responses:,} pages in {result.seconds:.1f} s: {result.rate:.1f} pages/s"
                    )
                    runs.setdefault(kind, []).append(result)
    finally:
        server.stop()
    # The median run of each crawler (by pages/s) stands for it; with --repeat, every run's pages/s is shown.
    results = [median_run(done) for done in runs.values()]
    print(f"\n{crawl_table(results, articles, index_pages)}\n")
    if args.repeat > 1:
        for kind, done in runs.items():
            print(
                f"{LABELS[kind]}: pages/s of the {len(done)} runs: {', '.join(f'{r.rate:.1f}' for r in done)}"
            )
        reference = runs.get(REFERENCE)
        if reference is not None:
            for kind, done in runs.items():
                ratios = [r.rate / ref.rate for r, ref in zip(done, reference, strict=True) if ref.rate]
                print(f"{LABELS[kind]}: ratio to the stock scrapy-redis run of the same round: "
                      + ", ".join(f"{ratio:.2f}x" for ratio in ratios))  # fmt: skip
        print()
    print(details_table(results))
    quality = [r for r in results if "quality" in r.data]
    if quality:
        print(f"\n{quality_table(quality, options.site)}")
    print(f"\nsite server raw fetch rate: {rate:,.0f} pages/s ({os.cpu_count()} CPUs on this machine)")
    for done in runs.values():
        for result in done:
            if options.profile is not None:
                print_profile(options.profile / f"{result.name}.prof")
            if options.py_spy is not None:
                print(f"\n{summarize_py_spy(options.py_spy / f'{result.name}.txt', result.responses)}")
    if bloom_urls > 0:
        bloom_comparison(bloom_urls)
    print(f"\nwhole run: {time.perf_counter() - started:.0f} s")
    return 0


class _Rated(Protocol):
    @property
    def rate(self) -> float: ...


RunT = TypeVar("RunT", bound=_Rated)


def median_run(runs: Sequence[RunT]) -> RunT:
    """The run of median pages/s (the lower one of an even count)."""
    return sorted(runs, key=lambda run: run.rate)[(len(runs) - 1) // 2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--articles", type=int, default=None, help="article pages (default 20000; --site real 10000)"
    )
    parser.add_argument(
        "--site", choices=SITES, default="synthetic", help="the generated site, or real pages"
    )
    parser.add_argument("--only", default=",".join(CRAWLS), help=f"crawls to run, of {', '.join(CRAWLS)}")
    parser.add_argument("--quick", action="store_true", help="2000 articles, Bloom at 100,000 URLs")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the crawls N times, in turn; report the median",
    )
    parser.add_argument("--bloom-urls", type=int, default=None, help="URLs of the Bloom comparison (0: skip)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR", help="cProfile each crawl")
    parser.add_argument(
        "--py-spy", type=Path, default=None, metavar="DIR", help="sample each crawl with py-spy (installed)"
    )
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for every crawl (VALUE read as JSON when it parses, else a string)",
    )
    # The server and crawl processes this script starts:
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=CRAWLS, help=argparse.SUPPRESS)
    parser.add_argument("--origin", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--settings-json", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: expected 1 or more")
    if args.articles is not None and args.articles < PER_PAGE:
        parser.error(f"--articles {args.articles}: expected at least {PER_PAGE} (one index page)")
    if args.serve:
        return serve(args.articles, args.site)
    if args.child is not None:
        settings = json.loads(args.settings_json)
        return child(
            args.child, args.site, args.origin, args.articles, args.workdir, args.result, args.profile_file,
            settings,
        )  # fmt: skip
    spy = py_spy_program() if args.py_spy is not None else ""
    if spy is None:
        print(
            f"--py-spy: no py-spy in {Path(sys.executable).parent} nor on the PATH;"
            f" install it: {pip_install('py-spy')}",
            file=sys.stderr,
        )
        return PY_SPY_MISSING
    for folder in (args.profile, args.py_spy):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    options = CrawlOptions(_settings_from(parser, args.set), args.profile, args.py_spy, spy, args.site)
    return bench(args, options)


def py_spy_program() -> str | None:
    """py-spy's executable: the one beside the Python that runs this (where its pip installs it), else the
    PATH's; None when neither is."""
    beside = str(Path(sys.executable).parent)
    return shutil.which("py-spy", path=os.pathsep.join([beside, os.environ.get("PATH", os.defpath)]))


def _settings_from(parser: argparse.ArgumentParser, pairs: Sequence[str]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.isupper():
            parser.error(f"--set {pair!r}: expected NAME=VALUE with an upper-case setting name")
        try:
            settings[name] = json.loads(value)
        except ValueError:
            settings[name] = value
    return settings


if __name__ == "__main__":
    sys.exit(main())
