"""``AgentRobotsTxtMiddleware`` (100, in place of Scrapy's ``RobotsTxtMiddleware``): a site's robots.txt
is fetched with the User-Agent of the request that needs it (a rule's own, from its ``headers``, else
``USER_AGENT``) and matched against that agent (``ROBOTSTXT_USER_AGENT`` instead, when set: Scrapy's
precedence, :func:`robots_agent`), one parser per host and agent. Scrapy's ``robots_parsed`` signal (the
spider keeps the crawl-delay it asks for, in the request's queue slot) is sent for each slot whose requests
use a parser: two sites (two rules) on one host share the parse, and each keeps the crawl-delay.

Scrapy's middleware fetches every robots.txt with ``USER_AGENT`` and keeps one parser per host, so a
site that answers a rule's agent otherwise, or a rule under another name than ours, was read as the
built-in agent sees it.

A robots.txt is given ``ROBOTS_DOWNLOAD_TIMEOUT`` (10 s) and ``ROBOTS_RETRY_TIMES`` (1) retries, each
bounded by the pages' ``DOWNLOAD_TIMEOUT`` and ``RETRY_TIMES``: the pages of its host wait for it (with
the pages' 30 s and 2 retries, one that hangs held them 90 s). One that cannot be downloaded (its retries
spent on a refused connection, a timeout, a connection closed with no answer) or that answers a 5xx (RFC
9309 2.3.1.3: unreachable; its body is an error page, never read as the file) is read as allowing
everything, as Scrapy does; once per host the worker says so, a warning with the reason in one line (INFO
for another job's request, which a temp crawl's worker helps with), and counts it as
``robots/unreachable/<site>`` for ``crawler status``; each try that failed is logged at DEBUG alone
(Scrapy's middleware logged a traceback at each, again at each refresh).

A parse is fetched again once ``ROBOTS_MAX_AGE_SECONDS`` old (RFC 9309 2.4: at most 24 h), by the host's
next request, which waits for it; the requests that come meanwhile keep to the old parse, and so does
every request when the new one cannot be downloaded or answers a 5xx (counted as
``robots/refreshed/<site>`` when it is read). At most ``ROBOTS_CACHE_SIZE`` parses are kept, the least
recently used dropped (fetched again when next needed): a discover crawl meets thousands of hosts.

It reuses the parent's ``process_request``, ``_parsers`` (in the order of their last use), ``_parserimpl``
and ``_stats``, in their Scrapy 2.18 shapes: pyproject.toml's floor for Scrapy is that version.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from http import HTTPStatus
from time import monotonic

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.settings import BaseSettings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred
from twisted.internet.error import TimeoutError as TxTimeoutError

from crawler.errors import redacted
from crawler.requests import Work
from crawler.worker.connection import job_level
from crawler.worker.download import DownloadStopped, connection_lost, undecompressed

__all__ = ["ROBOTS_REFUSAL", "AgentRobotsTxtMiddleware", "robots_agent", "sent_agent"]

logger = logging.getLogger(__name__)

# How the IgnoreRequest of a request robots.txt disallows begins (Scrapy's).
ROBOTS_REFUSAL = "Forbidden by robots.txt"


def robots_agent(request: Request, settings: BaseSettings) -> str:
    """The User-Agent the robots.txt rules of ``request`` are read for, by Scrapy's precedence:
    ``ROBOTSTXT_USER_AGENT`` when set, else the agent the request is sent with (:func:`sent_agent`). The
    crawl-delay kept and the agent a refusal names are this one's."""
    return str(settings.get("ROBOTSTXT_USER_AGENT") or "") or sent_agent(request, settings)


def sent_agent(request: Request, settings: BaseSettings) -> str:
    """The User-Agent ``request`` is sent with, and its robots.txt fetched with: its own header (a rule's
    ``headers``), else ``USER_AGENT``."""
    agent = request.headers.get(b"User-Agent")
    return agent.decode("latin-1") if agent else str(settings["USER_AGENT"])


def _waiter(shared: Deferred[RobotParser | None]) -> Deferred[RobotParser | None]:
    """A Deferred of its own, fired with the parser ``shared`` fires with, for one request that waits for a
    robots.txt being fetched. Awaiting ``shared`` itself (as Scrapy's middleware does) hands its result to
    the first request only: ``Deferred.asFuture`` leaves None in its place, which every other request
    waiting then read as "no robots.txt", and was fetched whatever it disallowed."""
    waiter: Deferred[RobotParser | None] = Deferred()

    def passed_on(parser: RobotParser | None) -> RobotParser | None:
        waiter.callback(parser)
        return parser

    shared.addCallback(passed_on)
    return waiter


class AgentRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, per host and User-Agent (see the module's docstring); matching
    is Scrapy's, the agent of :func:`robots_agent`: ``ROBOTSTXT_USER_AGENT`` when set, else the
    request's User-Agent."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self._max_age = settings.getfloat("ROBOTS_MAX_AGE_SECONDS")
        self._capacity = settings.getint("ROBOTS_CACHE_SIZE")
        # The time limit of a robots.txt download, and the setting it comes from.
        self._timeout, self._timeout_setting = min(
            (settings.getfloat(name), name) for name in ("ROBOTS_DOWNLOAD_TIMEOUT", "DOWNLOAD_TIMEOUT")
        )
        self._retries = min(settings.getint("ROBOTS_RETRY_TIMES"), settings.getint("RETRY_TIMES"))
        # The parent's, in the order of their last use (the least recently used first).
        self._parsers: OrderedDict[str, RobotParser | Deferred[RobotParser | None] | None] = OrderedDict()
        # Per parser, the moment (:func:`time.monotonic`) it is to be fetched again; inf while it is.
        self._stale_at: dict[str, float] = {}
        # Per parser, the queue slots told of it through ``robots_parsed``.
        self._told: dict[str, set[str]] = {}
        # The hosts whose robots.txt could not be downloaded, said once each until it is again.
        self._unreachable: set[str] = set()

    async def robot_parser(self, request: Request) -> RobotParser | None:
        agent = sent_agent(request, self.crawler.settings)
        url = urlparse_cached(request)
        key = f"{url.netloc} {agent}"
        slot = Work.of(request).slot
        if key not in self._parsers:
            pending: Deferred[RobotParser | None] = Deferred()
            self._parsers[key] = pending
            self._forget_least_used()
            parser = await self._fetch(request, agent)
            self._keep(key, parser)
            if parser is not None:
                await self._tell(parser, request, key, slot)
            pending.callback(parser)
            return parser
        known = self._parsers[key]
        if isinstance(known, Deferred):
            parser = await maybe_deferred_to_future(_waiter(known))
        else:
            parser = known
            self._parsers.move_to_end(key)
            if monotonic() >= self._stale_at[key]:
                parser = await self._refresh(request, key, agent, parser)
        if parser is not None and slot not in self._told.get(key, ()):
            await self._tell(parser, request, key, slot)
        return parser

    async def _tell(self, parser: RobotParser, request: Request, key: str, slot: str) -> None:
        """Send ``robots_parsed`` for the queue slot of ``request``, once per parse."""
        self._told.setdefault(key, set()).add(slot)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=parser, request=request
        )

    async def _fetch(
        self, request: Request, agent: str, old: RobotParser | None = None
    ) -> RobotParser | None:
        """The parse of the robots.txt of the host of ``request``, fetched with ``agent``; None when it
        cannot be downloaded or answers a 5xx (RFC 9309 2.3.1.3: unreachable, its body an error page): the
        caller keeps to ``old``, the parse read before, if any, else allows everything, as Scrapy does."""
        url = urlparse_cached(request)
        robots = Request(
            f"{url.scheme}://{url.netloc}/robots.txt",
            headers={"User-Agent": agent},
            priority=self.DOWNLOAD_PRIORITY,
            meta={
                "dont_obey_robotstxt": True,
                "download_timeout": self._timeout,
                "max_retry_times": self._retries,
            },
            callback=NO_CALLBACK,
        )
        assert self.crawler.engine is not None
        self._stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(robots)
            parser = build_from_crawler(self._parserimpl, self.crawler, response.body)
        except Exception as exc:  # noqa: BLE001 - as Scrapy's: a robots.txt that cannot be read allows all
            if not isinstance(exc, IgnoreRequest):
                self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
                if not isinstance(exc, DownloadStopped):
                    why = self._why(exc)
                    logger.debug("Error downloading <%s %s>: %s", robots.method, redacted(robots.url), why)
                    self._unfetched(request, url.netloc, why, kept=old is not None)
            return None
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        if response.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
            self._unfetched(request, url.netloc, f"HTTP {response.status}", kept=old is not None)
            return None
        self._unreachable.discard(url.netloc)
        return parser

    async def _refresh(
        self, request: Request, key: str, agent: str, old: RobotParser | None
    ) -> RobotParser | None:
        """The robots.txt of ``key`` fetched again, past ``ROBOTS_MAX_AGE_SECONDS``, for ``request``, which
        waits for it; the requests that come meanwhile keep to ``old``, and so does every request when it
        cannot be downloaded or answers a 5xx (RFC 9309 2.3.1.3 and 2.4: a cached copy may be used while
        the file is unreachable), until the next try a ``ROBOTS_MAX_AGE_SECONDS`` later."""
        self._stale_at[key] = math.inf
        parser = old
        try:
            fetched = await self._fetch(request, agent, old)
            if fetched is not None:
                parser = fetched
                self._told.pop(key, None)
                self._stats.inc_value(f"robots/refreshed/{Work.of(request).site}")
        finally:
            self._keep(key, parser)
            self._forget_least_used()
        return parser

    def _keep(self, key: str, parser: RobotParser | None) -> None:
        self._parsers[key] = parser
        self._stale_at[key] = monotonic() + self._max_age

    def _forget_least_used(self) -> None:
        """Drop the parses least recently used beyond ``ROBOTS_CACHE_SIZE`` (never one being fetched for
        the first time: its requests wait for it): they are fetched again when next needed."""
        excess = len(self._parsers) - self._capacity
        if excess <= 0:
            return
        dropped = []
        for key, parser in self._parsers.items():
            if not isinstance(parser, Deferred):
                dropped.append(key)
                if len(dropped) == excess:
                    break
        for key in dropped:
            del self._parsers[key]
            del self._stale_at[key]
            self._told.pop(key, None)
            self._unreachable.discard(key.partition(" ")[0])

    def _unfetched(self, request: Request, host: str, why: str, *, kept: bool) -> None:
        """Say once per ``host`` (a URL's netloc, its user name and password masked as the log's URLs are)
        that its robots.txt could not be downloaded, ``why``, and what the crawl does: keeps the copy read
        before (``kept``), else crawls its pages as if it allowed them, counted for the site of
        ``request``, the page that needed it."""
        work = Work.of(request)
        if not kept:
            self._stats.inc_value(f"robots/unreachable/{work.site}")
        if host in self._unreachable:
            return
        self._unreachable.add(host)
        logger.log(
            job_level(self.crawler, work.job),
            "robots.txt of %s could not be fetched (%s): %s",
            redacted(host),
            why,
            "the copy read before is kept" if kept else "its pages are crawled as if it allowed them",
        )

    def _why(self, error: Exception) -> str:
        """``error`` in a few words, as a dead letter says a download's failure: a timeout as the limit
        robots.txt had and the setting that gave it, how its connection ended
        (:func:`~crawler.worker.download.connection_lost`: ``connection closed before an answer: Connection
        was closed cleanly``, not Twisted's reprs), a body that could not be decompressed, else its name and
        message."""
        if isinstance(error, DownloadTimeoutError | TxTimeoutError):
            return f"timed out: no answer in {self._timeout:g} s, {self._timeout_setting}"
        said = connection_lost(error) or undecompressed(error)
        if said is None:
            message = str(error).rstrip(".")
            said = f"{type(error).__name__}: {message}" if message else type(error).__name__
        return said.rstrip(".")
