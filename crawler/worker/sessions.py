"""The session (account) pool: a site's requests carry one of its named sessions, one worker per session.

A rule's ``access.sessions`` names files of cookies and headers (a logged-in account, an API token;
:mod:`crawler.rules.access`). ``SessionMiddleware`` gives each request of such a site the session this
worker holds for it, and takes one when it holds none:

- a session is held by one worker at a time: ``crawler:session:<site>:<name>`` names its holder, with a
  time-to-live of ``SESSION_LEASE_SECONDS`` the worker renews while it runs (a worker that dies lets it go
  by itself) and gives back when it closes;
- a session is *benched* for ``SESSION_BENCH_SECONDS`` when its site sends it to the login page
  (``access.login_url``, else any URL whose path is a login page) or bans the site: the worker takes
  another one, and the request is tried again with it;
- a request of a site whose every session is held by other workers (or benched) waits in the queue
  ``SESSION_WAIT_SECONDS``, at most ``SESSION_MAX_WAITS`` times, then is dead-lettered.

A redirect to another host than the URL first asked for, or from HTTPS to plain HTTP, goes without the
session: credentials never follow a redirect to another host, nor go in clear. The same host on another
port, or upgraded to HTTPS, keeps it (a cookie is the host's, whatever its port).

Cookies go out in a ``Cookie`` header (Scrapy's cookie jar is off: nothing of one session leaks into
another), headers as given. None of it is ever queued (:data:`crawler.requests.SENT_ONLY_META`), logged,
stored or shown: a session is known by its name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Self
from urllib.parse import urljoin, urlsplit
from weakref import WeakKeyDictionary

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import task

from crawler.errors import CrawlerError
from crawler.redisio.workers import worker_id
from crawler.requests import Work
from crawler.rules import Rule
from crawler.rules.access import Session
from crawler.worker.bans import looks_like_login
from crawler.worker.connection import keys_of, outage_of, server_of

__all__ = ["NoSessionError", "SessionMiddleware", "SessionPool", "sessions_of"]

logger = logging.getLogger(__name__)

# Takes the first of the given sessions that nobody holds and that is not benched. KEYS: per session,
# its holder key then its bench key. ARGV: the worker, the hold's milliseconds. Reply: its index, or 0.
_TAKE = """
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 and redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return (i + 1) / 2
  end
end
return 0
"""
# Renews (ARGV[2] milliseconds) or gives back (ARGV[2] = 0) a hold, if this worker (ARGV[1]) has it.
_HOLD = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return redis.call('DEL', KEYS[1])
"""


class NoSessionError(CrawlerError):
    """Every session of a site stayed held by other workers or benched: the request is dead-lettered."""


class SessionPool:
    """The sessions of the rules, and the one this worker holds per site (see the module docstring).
    ``rule_of`` gives a site's rule: the spider's, which knows a rule file added while the worker runs."""

    def __init__(self, crawler: Crawler, rule_of: Callable[[str], Rule | None]) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.rule_of = rule_of
        self.keys = keys_of(crawler)
        self.worker = worker_id()
        self.lease_ms = int(settings.getfloat("SESSION_LEASE_SECONDS") * 1000)
        self.bench_ms = int(settings.getfloat("SESSION_BENCH_SECONDS") * 1000)
        self.held: dict[str, Session] = {}
        server = server_of(crawler)
        self.server = server
        self._take = server.register_script(_TAKE)
        self._hold = server.register_script(_HOLD)
        self._loop: task.LoopingCall | None = None

    def rule(self, site: str | None) -> Rule | None:
        """The rule of ``site`` when it names sessions, else None."""
        rule = self.rule_of(site) if site else None
        return rule if rule is not None and rule.sessions else None

    def session_for(self, rule: Rule) -> Session | None:
        """The session this worker holds for ``rule``'s site, as ``rule`` names it now (its file read again
        while the worker runs: a cookie renewed), taking a free one when it holds none, or holds one the
        rule no longer names (given back)."""
        site = rule.site
        held = self.held.get(site)
        if held is not None:
            current = next((session for session in rule.sessions if session.name == held.name), None)
            if current is not None:
                self.held[site] = current
                return current
            self._give_back(site, held)
        sessions = rule.sessions
        keys = [
            key
            for s in sessions
            for key in (self.keys.session(site, s.name), self.keys.session_bench(site, s.name))
        ]
        index = int(self._take(keys=keys, args=[self.worker, self.lease_ms]))
        if index == 0:
            return None
        session = self.held[site] = sessions[index - 1]
        logger.info("%s: this worker now uses session %s", site, session.name)
        return session

    def bench(self, site: str, name: str, reason: str) -> None:
        """The session ``name`` of ``site`` was logged out or banned: it rests, and is given back."""
        if self.held.get(site) is not None and self.held[site].name == name:
            del self.held[site]
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"session/benched/{site}")
        logger.warning("%s: session %s benched for %.0f s: %s", site, name, self.bench_ms / 1000, reason)
        try:
            self.server.set(self.keys.session_bench(site, name), reason, px=self.bench_ms)
            self._hold(keys=[self.keys.session(site, name)], args=[self.worker, 0])
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"share that session {name} of {site} is benched", exc)
            return
        outage_of(self.crawler).ok(wrote=True)

    def renew(self) -> None:
        """Keep this worker's holds (Redis away: tried again at the next turn; a hold lost meanwhile is
        taken again, or another session is)."""
        for site, session in list(self.held.items()):
            try:
                kept = int(
                    self._hold(
                        keys=[self.keys.session(site, session.name)], args=[self.worker, self.lease_ms]
                    )
                )
            except redis.RedisError as exc:
                outage_of(self.crawler).failed("renew the session holds", exc)
                return
            outage_of(self.crawler).ok(wrote=bool(kept))  # a hold still ours is renewed (PEXPIRE)
            if not kept:
                del self.held[site]

    def start(self) -> None:
        self._loop = task.LoopingCall(self.renew)
        self._loop.start(self.lease_ms / 3000, now=False)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        for site, session in list(self.held.items()):
            self._give_back(site, session)

    def _give_back(self, site: str, session: Session) -> None:
        """This worker holds ``session`` of ``site`` no more (Redis away: its hold expires)."""
        del self.held[site]
        try:
            self._hold(keys=[self.keys.session(site, session.name)], args=[self.worker, 0])
        except redis.RedisError as exc:
            logger.debug("session %s of %s not given back (Redis: %s): it expires", session.name, site, exc)


_pools: WeakKeyDictionary[Crawler, SessionPool] = WeakKeyDictionary()


def sessions_of(crawler: Crawler) -> SessionPool | None:
    """The crawl's session pool, None when its middleware is off (see :class:`SessionMiddleware`)."""
    return _pools.get(crawler)


def _redirected_elsewhere(request: Request) -> bool:
    """``request`` is a redirect to another host than the URL first asked for, or from HTTPS to plain
    HTTP, where the site's session must not follow it. The same host on another port or upgraded to HTTPS
    keeps it: a cookie is the host's, whatever its port."""
    asked = request.meta.get("redirect_urls")
    if not asked:
        return False
    first, now = urlsplit(str(asked[0])), urlparse_cached(request)
    return first.hostname != now.hostname or (first.scheme == "https" and now.scheme != "https")


# The meta key marking a request whose redirects set a cookie (Set-Cookie), which the crawl does not keep
# (COOKIES_ENABLED is off): a redirect loop through it is a site's cookie wall.
COOKIE_SET_META = "cookie_set"


class SessionMiddleware:
    """Gives each request of a site with sessions the session this worker holds for it (see the module
    docstring), and marks ``COOKIE_SET_META`` on a request whose redirect sets a cookie. On for the sites
    spider, whose rules may name sessions, a rule file added while the worker runs too (``rule_of`` reads
    it); off (``NotConfigured``) for a spider that serves no site rules."""

    def __init__(self, crawler: Crawler, pool: SessionPool) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.pool = pool
        self.wait_seconds = settings.getfloat("SESSION_WAIT_SECONDS")
        self.max_waits = settings.getint("SESSION_MAX_WAITS")
        _pools[crawler] = pool

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        rule_of: Callable[[str], Rule | None] | None = getattr(crawler.spider, "rule_of", None)
        if rule_of is None:
            raise NotConfigured("the spider serves no site rules (it has no rule_of)")
        pool = SessionPool(crawler, rule_of)
        pool.start()
        crawler.signals.connect(pool.stop, signal=signals.spider_closed)
        return cls(crawler, pool)

    def process_request(self, request: Request) -> Request | None:
        if "session" in request.meta:
            return None
        rule = self.pool.rule(Work.of(request).site)
        if rule is None:
            return None
        site = rule.site
        assert self.crawler.stats is not None
        if _redirected_elsewhere(request):
            self.crawler.stats.inc_value(f"session/withheld_redirect/{site}")
            return None
        session = self.pool.session_for(rule)
        if session is None:
            waits = int(request.meta.get("session_waits", 0)) + 1
            count = len(rule.sessions)
            if waits > self.max_waits:
                raise NoSessionError(
                    f"no session of {site} came free for {request.url}: all {count} are held by other workers"
                    " or benched (add sessions to access.sessions, or run fewer workers on the site)"
                )
            self.crawler.stats.inc_value(f"session/wait/{site}")
            meta = {**request.meta, "session_waits": waits, "wait_seconds": self.wait_seconds}
            return request.replace(meta=meta, dont_filter=True)
        if session.cookies:
            request.headers[b"Cookie"] = "; ".join(
                f"{name}={value}" for name, value in session.cookies.items()
            )
        for name, value in session.headers.items():
            request.headers[name] = value
        request.meta["session"] = session.name
        request.meta["session_headers"] = list(session.headers)
        return None

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if 300 <= response.status < 400 and b"Set-Cookie" in response.headers:
            # Kept by the redirect made of this request, and by each after it: a loop says it.
            request.meta[COOKIE_SET_META] = True
        name = request.meta.get("session")
        rule = self.pool.rule(Work.of(request).site) if name is not None else None
        if name is None or rule is None:
            return response
        site = rule.site
        # The login page, reached, or about to be (a redirect to it): the session was logged out.
        location = response.headers.get(b"Location") if 300 <= response.status < 400 else None
        target = urljoin(response.url, location.decode("latin-1")) if location else response.url
        login = rule.login_url
        if not (login.search(target) if login is not None else looks_like_login(target)):
            return response
        self.pool.bench(site, name, f"sent to the login page {target}")
        # Tried again from where it started (before any redirect), with another session.
        dropped = ("session", "session_headers", "redirect_urls", "redirect_reasons", "redirect_times")
        meta = {key: value for key, value in request.meta.items() if key not in dropped}
        original = request.meta.get("redirect_urls", [request.url])[0]
        retry = request.replace(url=original, meta=meta, dont_filter=True)
        for header in (b"Cookie", *(h.encode() for h in request.meta.get("session_headers", ()))):
            retry.headers.pop(header, None)
        return retry
