"""Bans: a site (or a proxy) that has stopped serving the crawler, judged on a pattern of answers, never
on one page.

A *signal* is one answer that looks like a refusal: an HTTP 403, a redirect to a login page, a
challenge page (a captcha widget or wording where the article should be), or an empty page where the
rule's fields used to match. A page whose rule fields and body are complete is never a signal, whatever
its markup holds (a comment form with a reCAPTCHA, an article about captchas): the spider judges
challenge and empty pages after it has read the page (:meth:`BanWatch.page`).

Each worker keeps, per site and per proxy, the outcomes of the last ``BAN_WINDOW`` answers. A ban is
declared when at least ``BAN_MIN_SIGNALS`` of them are signals and they are at least ``BAN_MIN_SHARE`` of
the window: the site is then held back for every worker (a backoff, doubling as 429s do), the ban is
kept in Redis with its evidence (each signal's URL, status, what it was, and the proxy; ``crawler
status`` shows them) and counted as ``ban/<site>``; a proxy's ban benches the proxy
(:mod:`crawler.worker.proxies`). Every signal is counted as ``ban_signal/<site>``.

The page behind a signal is not stored and not lost: a 403 is retried (``RETRY_HTTP_CODES``), a challenge,
login or empty page is retried as a failed download is (``RETRY_TIMES``, after the site's backoff), then
dead-lettered with what it was.
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from dataclasses import dataclass
from typing import Self
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import redis
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.errors import redacted
from crawler.redisio.clock import shared_now
from crawler.redisio.queue import LeasedQueue
from crawler.requests import Work
from crawler.worker.connection import keys_of, outage_of, server_of

__all__ = [
    "BAN_STATUSES",
    "BanDetectionMiddleware",
    "BanWatch",
    "Signal",
    "looks_like_captcha",
    "looks_like_login",
    "watch_of",
]

logger = logging.getLogger(__name__)

# A 429 asks the crawler to slow down (crawler.worker.backoff holds the site back): not a sign of a ban.
BAN_STATUSES = frozenset({403})
# Challenge pages put their widget near the top; the markers are looked for in this many first bytes.
_SNIFF_BYTES = 50_000
# Markers of a challenge widget or wording, looked for (lower-cased) as plain substrings: a byte search
# per marker is about 30 times faster than one case-insensitive alternation over the same bytes.
_CAPTCHA_MARKERS = tuple(
    marker.encode("utf-8")
    for marker in (
        "g-recaptcha",
        "h-captcha",
        "hcaptcha.com",
        "cf-challenge",
        "challenge-platform",
        "captcha-container",
        "are you a robot",
        "unusual traffic from your computer",
        "verify you are a human",
        "verify you are human",
        "请输入验证码",
        "人机验证",
    )
)
# A path that is a login page: where a site sends a visitor it no longer serves.
_LOGIN_RE = re.compile(
    r"(?:^|/)(?:login|log-in|signin|sign-in|sign_in|logon|auth/login|account/login)\b", re.I
)
# How many signals each declared ban keeps as its evidence.
EVIDENCE_KEPT = 5


def looks_like_captcha(body: bytes) -> bool:
    """Whether a page's first bytes hold a known challenge widget or wording (a hint, not a verdict: an
    article with a reCAPTCHA comment form holds one too)."""
    sniffed = body[:_SNIFF_BYTES].lower()
    return any(marker in sniffed for marker in _CAPTCHA_MARKERS)


def looks_like_login(url: str) -> bool:
    """Whether ``url``'s path is a login page."""
    return _LOGIN_RE.search(urlsplit(url).path) is not None


@dataclass(frozen=True, slots=True)
class Signal:
    """One answer that looked like a refusal, as a ban's evidence shows it."""

    url: str
    status: int
    what: str  # "HTTP 403", "challenge page", "redirected to a login page", "empty page"
    proxy: str | None
    at: float  # by Redis's clock (shared_now), as the ban it makes

    def record(self) -> dict[str, object]:
        """The signal as a ban keeps it in Redis and ``crawler status`` shows it: its URL's secrets masked."""
        return {
            "url": redacted(self.url),
            "status": self.status,
            "what": self.what,
            "proxy": self.proxy,
            "at": self.at,
        }


class BanWatch:
    """The last answers of each site and proxy in this worker, and the bans they add up to (see the
    module docstring). One per crawl: :func:`watch_of`."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.window = settings.getint("BAN_WINDOW")
        self.min_signals = settings.getint("BAN_MIN_SIGNALS")
        self.min_share = settings.getfloat("BAN_MIN_SHARE")
        self.first = settings.getfloat("BAN_BACKOFF_SECONDS")
        self.longest = settings.getfloat("BACKOFF_MAX_SECONDS")
        self.calm = settings.getfloat("BACKOFF_CALM_SECONDS")
        self.outcomes: dict[str, deque[bool]] = {}
        self.evidence: dict[str, deque[Signal]] = {}
        self._queue: LeasedQueue | None = None

    @property
    def queue(self) -> LeasedQueue:
        if self._queue is None:
            self._queue = LeasedQueue(server_of(self.crawler), keys_of(self.crawler))
        return self._queue

    def ok(self, site: str, proxy: str | None = None) -> None:
        """An answer that served the page."""
        self._outcome(site, False)
        if proxy is not None:
            self._outcome(f"proxy {proxy}", False)

    def signal(self, site: str, signal: Signal) -> None:
        """An answer that looked like a refusal: counted, kept as evidence, and judged with the others."""
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"ban_signal/{site}")
        logger.warning("%s: %s at %s (a sign of a ban)", site, signal.what, redacted(signal.url))
        for key in (site, None if signal.proxy is None else f"proxy {signal.proxy}"):
            if key is None:
                continue
            self.evidence.setdefault(key, deque(maxlen=EVIDENCE_KEPT)).append(signal)
            if self._outcome(key, True):
                self._declare(site, key)

    def _outcome(self, key: str, signalled: bool) -> bool:
        """Record one outcome; True when the window now adds up to a ban."""
        window = self.outcomes.get(key)
        if window is None:
            window = self.outcomes[key] = deque(maxlen=self.window)
        window.append(signalled)
        if not signalled:
            return False
        signals = sum(window)
        return signals >= self.min_signals and signals >= self.min_share * len(window)

    def _declare(self, site: str, key: str) -> None:
        """A ban: the site (or proxy) is held back, the ban and its evidence kept in Redis, counted."""
        evidence = list(self.evidence.get(key, ()))
        self.outcomes[key].clear()
        self.evidence[key].clear()
        assert self.crawler.stats is not None
        if key.startswith("proxy "):
            proxy = key.removeprefix("proxy ")
            self.crawler.stats.inc_value(f"ban/proxy/{site}")
            logger.warning("Proxy %s is banned by %s: %s", proxy, site, "; ".join(s.what for s in evidence))
            from crawler.worker.proxies import pool_of  # noqa: PLC0415 - the pool imports this module

            pool = pool_of(self.crawler)
            if pool is not None:
                pool.banned(proxy, evidence)
            return
        self.crawler.stats.inc_value(f"ban/{site}")
        what = ", ".join(sorted({s.what for s in evidence}))
        from crawler.worker.sessions import sessions_of  # noqa: PLC0415 - the pool imports this module

        sessions = sessions_of(self.crawler)
        held = sessions.held.get(site) if sessions is not None else None
        if sessions is not None and held is not None:
            sessions.bench(site, held.name, f"the site banned the crawler: {what}")
        record = {"at": round(shared_now(), 3), "signals": [s.record() for s in evidence], "what": what}
        try:
            seconds = self.queue.back_off(
                site,
                seconds=None,
                first=self.first,
                longest=self.longest,
                calm=self.calm,
                reason=f"banned: {what}",
            )
            self.queue.server.hset(keys_of(self.crawler).bans, site, json.dumps(record, ensure_ascii=False))
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"hold {site} back for its ban", exc)
            logger.error("%s looks banned (%s), but Redis is away: no worker holds it back", site, what)
            return
        outage_of(self.crawler).ok(wrote=True)
        logger.error(
            "%s looks banned (%s): every worker waits %.0f s before asking it again", site, what, seconds
        )


_watches: WeakKeyDictionary[Crawler, BanWatch] = WeakKeyDictionary()


def watch_of(crawler: Crawler) -> BanWatch:
    """The crawl's ban watch, made on first use."""
    watch = _watches.get(crawler)
    if watch is None:
        watch = _watches[crawler] = BanWatch(crawler)
    return watch


class BanDetectionMiddleware:
    """Signals the answers a downloader middleware can judge alone: a 403, and a redirect to a login
    page. Pages that came through are judged by the spider once read (challenge, empty)."""

    def __init__(self, crawler: Crawler) -> None:
        self.watch = watch_of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        site = Work.of(request).site or "unknown"
        proxy = request.meta.get("proxy_id")
        if response.status in BAN_STATUSES:
            self.watch.signal(
                site, Signal(request.url, response.status, f"HTTP {response.status}", proxy, shared_now())
            )
        elif request.meta.get("redirect_urls") and looks_like_login(response.url):
            what = "redirected to a login page"
            self.watch.signal(site, Signal(request.url, response.status, what, proxy, shared_now()))
            request.meta["ban_signal"] = what
        return response
