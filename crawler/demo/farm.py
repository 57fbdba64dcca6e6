"""A farm of generated news sites on 127.0.0.1 whose articles appear over a controllable clock.

The service tests and ``bench/simulate.py`` run regular grabs against it: each site publishes
``per_hour`` articles per simulated hour, so its index page changes at its own pace. The farm's clock is
``Farm.now`` (epoch seconds), set by the caller; nothing sleeps.

Routes, per site ``<name>``:

- ``/<name>/``: the index, the newest ``LISTED`` articles already published, with an ``ETag`` (the
  newest article's number and the layout) and a ``Last-Modified`` (its publication time); a request
  whose ``If-None-Match`` or ``If-Modified-Since`` shows nothing changed gets ``304 Not Modified``;
- ``/<name>/feed.xml``: a site with ``feed``: an RSS 2.0 feed of the same articles, each with its
  publication date and its author (``Reporter k mod 5``; the article pages give neither), with the
  index's ``ETag``, ``Last-Modified`` and ``304``; the site's rule reads the feed alone (no index page);
- ``/<name>/sitemap.xml``: a site with ``sitemap``: a sitemap of the same articles, each with its
  publication time as ``lastmod``, with the index's validators; the site's rule reads the sitemap alone;
- ``/<name>/api.json``: a site with ``api``: the same articles as JSON (``{"items": [{"url", "title"}]}``),
  with the index's validators; the site's rule reads the API alone;
- ``/<name>/a/<k>.html``: article ``k`` once published (404 before);
- every page of a site in ``Farm.banned``: ``403``; of a site in ``Farm.captcha``: a challenge page;
- ``Farm.layout[name] = 2``: the article pages change their markup (the rule's XPaths stop matching);
- a site with ``rate_limit`` (requests per second): above it, ``429`` with ``Retry-After`` (seconds);
- a site with ``comment_captcha``: every article ends with a comment form holding a reCAPTCHA widget (a
  real article all the same);
- a site with ``cookie``: a request without ``Cookie: session=<cookie>`` is redirected to ``/login``;
- ``Farm.crawl_delay = s``: robots.txt asks for a ``Crawl-delay`` of ``s`` seconds;
- ``Farm.proxy_limit[name] = n``: requests that came through the proxy ``name`` (its ``Via`` header)
  get ``403`` after the first ``n``;
- ``Farm.hold = n``: article requests wait unanswered until ``n`` of them wait at once (each at most
  ``HOLD_SECONDS``), then go on, and none waits again; ``Farm.most_waiting`` is the most that waited at once.

``Farm.log`` records every request: simulated time, site, kind (``index``/``feed``/``sitemap``/``article``),
status, the article number, the real time it was answered, the proxy it came through and its ``Cookie``.
:meth:`Farm.rule` writes each site's rule.
"""

from __future__ import annotations

import email.utils
import http.server
import json
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from crawler.threads import STOP_SIGNALS, signals_blocked

__all__ = ["LISTED", "Farm", "FarmSite", "Visit"]

# Articles an index page lists (newest first).
LISTED = 20
# Articles each site has published before the clock starts.
BACKLOG = 5
# Seconds an article request waits at most for the others ``Farm.hold`` asks for (under DOWNLOAD_TIMEOUT).
HOLD_SECONDS = 10.0
_WORDS = (
    "council river bridge market school police budget report storm election mayor museum hospital train"
    " station park festival court judge company workers price energy water harbour library tram road"
    " housing tax farmers airport museum orchestra football theatre clinic bakery ferry tunnel forest"
    " village district minister protest strike vote inquiry contract factory warehouse reservoir"
).split()


def _listed(newest: int) -> range:
    """The articles an index page, a feed, a sitemap or an API page lists: the ``LISTED`` newest."""
    return range(newest, max(newest - LISTED, -1), -1)


@dataclass(frozen=True)
class FarmSite:
    """One site of the farm and the schedule its rule asks for."""

    name: str
    per_hour: float
    every: str = "20m"
    min: str | None = None
    max: str | None = None
    delay: float = 0.0
    concurrency: int = 8
    rate_limit: float | None = None
    retry_after: int = 1
    comment_captcha: bool = False
    cookie: str | None = None
    feed: bool = False
    sitemap: bool = False
    api: bool = False


@dataclass(frozen=True)
class Visit:
    moment: float
    site: str
    kind: str
    status: int
    article: int | None
    at: float = 0.0
    proxy: str | None = None
    cookie: str | None = None


@dataclass
class Farm:
    """The sites, their server (started by ``with``), the clock and the request log."""

    sites: list[FarmSite]
    start: float
    now: float = 0.0
    banned: set[str] = field(default_factory=set)
    captcha: set[str] = field(default_factory=set)
    layout: dict[str, int] = field(default_factory=dict)
    proxy_limit: dict[str, int] = field(default_factory=dict)
    crawl_delay: float | None = None
    hold: int = 0
    most_waiting: int = 0
    log: list[Visit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.now = self.now or self.start
        self._by_name = {site.name: site for site in self.sites}
        self._lock = threading.Lock()
        self._holding = threading.Condition()
        self._waiting = 0
        self._server: http.server.ThreadingHTTPServer | None = None
        self._recent: dict[str, list[float]] = {}
        self._through: dict[str, int] = {}

    # --- publication ----------------------------------------------------------------------------------

    def published(self, name: str, article: int) -> float:
        """When article ``article`` of site ``name`` appears: the first moment :meth:`newest` counts it
        (the ``BACKLOG`` articles numbered below it are out before the start)."""
        return self.start + (article - BACKLOG + 1) * 3600.0 / self._by_name[name].per_hour

    def newest(self, name: str, moment: float | None = None) -> int:
        """The number of the newest article of site ``name`` published at ``moment`` (default now)."""
        at = self.now if moment is None else moment
        return int((at - self.start) * self._by_name[name].per_hour / 3600.0) + BACKLOG - 1

    # --- the server -----------------------------------------------------------------------------------

    @property
    def origin(self) -> str:
        assert self._server is not None, "the farm is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        farm = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                farm._serve(self)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        with signals_blocked(STOP_SIGNALS):
            threading.Thread(target=self._server.serve_forever, name="farm", daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _serve(self, request: http.server.BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path).path.strip("/").split("/")
        site = self._by_name.get(parts[0])
        if parts == ["robots.txt"]:
            delay = "" if self.crawl_delay is None else f"Crawl-delay: {self.crawl_delay:g}\n"
            self._send(request, 200, f"User-agent: *\nAllow: /\n{delay}".encode(), "text/plain")
            return
        if site is None:
            self._send(request, 404, b"no such site", "text/plain")
            return
        kind = {(): "index", ("feed.xml",): "feed", ("sitemap.xml",): "sitemap", ("api.json",): "api"}.get(
            tuple(parts[1:]), "article"
        )
        article = None
        if kind == "article":
            try:
                article = int(parts[2].removesuffix(".html")) if len(parts) == 3 and parts[1] == "a" else None
            except ValueError:
                article = None
        if parts[1:] == ["login"]:
            kind = "login"
        via = request.headers.get("Via")
        proxy = via.split()[-1] if via else None
        cookie = request.headers.get("Cookie")
        if kind == "article" and self.hold:
            self._wait_for_others()
        answered_at = time.time()
        status = self._gate(request, site, proxy, cookie, answered_at)
        if status is None:
            status = self._answer(request, site, kind, article)
        with self._lock:
            self.log.append(Visit(self.now, site.name, kind, status, article, answered_at, proxy, cookie))

    def _wait_for_others(self) -> None:
        """An article request while ``hold`` is set: it waits until ``hold`` requests wait at once (or
        ``HOLD_SECONDS`` pass), then they all go on and ``hold`` is cleared."""
        with self._holding:
            self._waiting += 1
            self.most_waiting = max(self.most_waiting, self._waiting)
            if self._waiting >= self.hold or not self._holding.wait_for(lambda: not self.hold, HOLD_SECONDS):
                self.hold = 0
                self._holding.notify_all()
            self._waiting -= 1

    def _gate(
        self,
        request: http.server.BaseHTTPRequestHandler,
        site: FarmSite,
        proxy: str | None,
        cookie: str | None,
        now: float,
    ) -> int | None:
        """The answer of a request the site refuses (rate limit, proxy ban, no session), else None."""
        with self._lock:
            recent = [moment for moment in self._recent.get(site.name, []) if moment > now - 1.0]
            self._recent[site.name] = [*recent, now]
            self._through[proxy or ""] = self._through.get(proxy or "", 0) + 1
            through = self._through[proxy or ""]
        if site.rate_limit is not None and len(recent) + 1 > site.rate_limit:
            return self._send(request, 429, b"slow down", headers={"Retry-After": str(site.retry_after)})
        if proxy is not None and through > self.proxy_limit.get(proxy, through):
            return self._send(request, 403, b"<html><body>Forbidden</body></html>")
        path = urlsplit(request.path).path
        if site.cookie is not None and not path.endswith("/login") and cookie != f"session={site.cookie}":
            return self._send(request, 302, b"", headers={"Location": f"/{site.name}/login"})
        return None

    def _answer(
        self, request: http.server.BaseHTTPRequestHandler, site: FarmSite, kind: str, article: int | None
    ) -> int:
        if site.name in self.banned:
            return self._send(request, 403, b"<html><body>Forbidden</body></html>")
        if site.name in self.captcha:
            page = b'<html><body><div class="g-recaptcha">Are you a robot?</div></body></html>'
            return self._send(request, 200, page)
        if kind == "login":
            page = b"<html><body><form action='login'><input name='user'><input name='pw'></form></body>"
            return self._send(request, 200, page)
        newest = self.newest(site.name)
        if kind in ("index", "feed", "sitemap", "api"):
            version = self.layout.get(site.name, 1)
            etag = f'"{site.name}-{newest}-{version}"'
            modified = email.utils.formatdate(self.published(site.name, newest), usegmt=True)
            since = request.headers.get("If-Modified-Since")
            unchanged = request.headers.get("If-None-Match") == etag or (
                since is not None
                and request.headers.get("If-None-Match") is None
                and email.utils.parsedate_to_datetime(since).timestamp() >= self.published(site.name, newest)
            )
            headers = {"ETag": etag, "Last-Modified": modified}
            if unchanged:
                return self._send(request, 304, b"", headers=headers)
            if kind == "api":
                listed = [
                    {"url": f"/{site.name}/a/{k}.html", "title": self._title(site, k)}
                    for k in _listed(newest)
                ]
                body = json.dumps({"items": listed}).encode()
                return self._send(request, 200, body, "application/json", headers)
            if kind == "sitemap":
                return self._send(
                    request, 200, self._sitemap(site, newest).encode(), "application/xml", headers
                )
            if kind == "feed":
                return self._send(
                    request, 200, self._feed(site, newest).encode(), "application/rss+xml", headers
                )
            return self._send(request, 200, self._index(site, newest).encode(), headers=headers)
        if article is None or not 0 <= article <= newest:
            return self._send(request, 404, b"<html><body>Not found</body></html>")
        return self._send(request, 200, self._article(site, article).encode())

    @staticmethod
    def _send(
        request: http.server.BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> int:
        request.send_response(status)
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        if status != 304:
            request.send_header("Content-Type", content_type)
            request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        if status != 304:
            request.wfile.write(body)
        return status

    # --- pages ----------------------------------------------------------------------------------------

    def _index(self, site: FarmSite, newest: int) -> str:
        items = "".join(
            f'<li><a href="/{site.name}/a/{k}.html">{self._title(site, k)}</a></li>' for k in _listed(newest)
        )
        return (
            f"<html><head><title>{site.name}</title></head><body><h1>{site.name}</h1>"
            f'<ul class="list">{items}</ul></body></html>'
        )

    def _feed(self, site: FarmSite, newest: int) -> str:
        items = "".join(
            f"<item><title>{self._title(site, k)}</title><link>/{site.name}/a/{k}.html</link>"
            f"<pubDate>{email.utils.formatdate(self.published(site.name, k), usegmt=True)}</pubDate>"
            f"<author>desk@{site.name}.test ({self.author(k)})</author></item>"
            for k in _listed(newest)
        )
        return (
            f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>{site.name}</title>'
            f"<link>{self.origin}/{site.name}/</link>{items}</channel></rss>"
        )

    def _sitemap(self, site: FarmSite, newest: int) -> str:
        entries = "".join(
            f"<url><loc>{self.origin}/{site.name}/a/{k}.html</loc><lastmod>"
            f"{datetime.fromtimestamp(self.published(site.name, k), UTC).isoformat()}</lastmod></url>"
            for k in _listed(newest)
        )
        return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'

    @staticmethod
    def author(article: int) -> str:
        """The author a feed gives for article number ``article``."""
        return f"Reporter {article % 5}"

    def _article(self, site: FarmSite, article: int) -> str:
        title = self._title(site, article)
        rng = random.Random(f"{site.name}/{article}")
        paragraphs = [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(40, 70))).capitalize() + "."
            for _ in range(5)
        ]
        if self.layout.get(site.name, 1) == 2:
            text = "".join(f"<section><p>{p}</p></section>" for p in paragraphs)
            return (
                f"<html><head><title>{title}</title></head><body><h2 class='title'>{title}</h2>{text}"
                "</body></html>"
            )
        text = "".join(f"<p>{p}</p>" for p in paragraphs)
        comments = (
            "<form class='comments'><textarea name='comment'></textarea>"
            "<div class='g-recaptcha' data-sitekey='x'></div><button>Post</button></form>"
            if site.comment_captcha
            else ""
        )
        return (
            f"<html><head><title>{title}</title></head><body><h1 class='headline'>{title}</h1>"
            f"<div class='story'>{text}</div>{comments}</body></html>"
        )

    @staticmethod
    def _title(site: FarmSite, article: int) -> str:
        rng = random.Random(f"title/{site.name}/{article}")
        return f"{site.name} {article}: " + " ".join(rng.choice(_WORDS) for _ in range(6))

    # --- rules ----------------------------------------------------------------------------------------

    def rule(self, name: str) -> str:
        """The YAML rule of site ``name`` on this farm's origin."""
        site = self._by_name[name]
        bounds = "".join(
            f", {key}: {value}" for key, value in (("min", site.min), ("max", site.max)) if value
        )
        if site.feed:
            where = f"feeds: ['{self.origin}/{name}/feed.xml']\n"
        elif site.sitemap:
            where = f"sitemaps: ['{self.origin}/{name}/sitemap.xml']\n"
        elif site.api:
            api = (
                f"{{url: '{self.origin}/{name}/api.json', items: items, fields: {{url: url, title: title}}}}"
            )
            where = f"api: {api}\n"
        else:
            where = (
                f"start_urls: ['{self.origin}/{name}/']\n"
                "index:\n"
                "  links:\n"
                "    xpath: [\"//ul[@class='list']\"]\n"
                f"    allow: ['/{name}/a/\\d+\\.html$']\n"
            )
        return (
            f"name: Farm site {name}\n"
            "domains: [127.0.0.1]\n"
            f"{where}"
            "article:\n"
            "  fields:\n"
            "    title: {xpath: \"//h1[@class='headline']\"}\n"
            '    body: {xpath: "//div[@class=\'story\']/p", join: "\\n\\n"}\n'
            "  min_body_chars: 100\n"
            f"politeness: {{delay: {site.delay}, concurrency: {site.concurrency}, obey_robots: false}}\n"
            f"schedule: {{every: {site.every}{bounds}}}\n"
        )
