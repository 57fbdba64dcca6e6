"""``AgentRobotsTxtMiddleware`` (100, in place of Scrapy's ``RobotsTxtMiddleware``): a site's robots.txt
is fetched with the User-Agent of the request that needs it (a rule's own, from its ``headers``, else
``USER_AGENT``) and matched against that agent (``ROBOTSTXT_USER_AGENT`` instead, when set: Scrapy's
precedence, :func:`robots_agent`), one parser per host and agent. Scrapy's ``robots_parsed`` signal (the
spider keeps the crawl-delay it asks for, in the request's queue slot) is sent for each slot whose requests
use a parser: two sites (two rules) on one host share the parse, and each keeps the crawl-delay.

Scrapy's middleware fetches every robots.txt with ``USER_AGENT`` and keeps one parser per host, so a
site that answers a rule's agent otherwise, or a rule under another name than ours, was read as the
built-in agent sees it.

A robots.txt that cannot be downloaded (its retries spent on a refused connection, a timeout, a connection
closed with no answer) is read as allowing everything, as Scrapy does; once per host the worker says so,
a warning (INFO for another job's request, which a temp crawl's worker helps with), and counts it as
``robots/unreachable/<site>`` for ``crawler status``.

It reuses the parent's ``_parsers``, ``_parse_robots`` and ``_robots_error``, in their Scrapy 2.18 shapes
(``_parse_robots`` a coroutine taking the request): pyproject.toml's floor for Scrapy is that version.
"""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.settings import BaseSettings
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

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
        # Per parser, the queue slots told of it through ``robots_parsed``.
        self._told: dict[str, set[str]] = {}
        # The hosts whose robots.txt could not be downloaded, said once each.
        self._unreachable: set[str] = set()

    async def robot_parser(self, request: Request) -> RobotParser | None:
        agent = sent_agent(request, self.crawler.settings)
        url = urlparse_cached(request)
        key = f"{url.netloc} {agent}"  # Scrapy's own methods below take it as the parser's name
        slot = Work.of(request).slot
        if key not in self._parsers:
            self._told[key] = {slot}  # _parse_robots sends robots_parsed with this request
            self._parsers[key] = Deferred()
            robots = Request(
                f"{url.scheme}://{url.netloc}/robots.txt",
                headers={"User-Agent": agent},
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True},
                callback=NO_CALLBACK,
            )
            assert self.crawler.engine is not None
            try:
                response = await self.crawler.engine.download_async(robots)
                await self._parse_robots(response, key, request)
            except Exception as exc:  # as Scrapy's: a robots.txt that cannot be read allows everything
                if not isinstance(exc, IgnoreRequest | DownloadStopped):
                    logger.exception("Error downloading %s", robots)
                    self._unfetched(request, url.netloc, exc)
                self._robots_error(exc, key)
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[key]
        if isinstance(parser, Deferred):
            parser = await maybe_deferred_to_future(_waiter(parser))
        if parser is not None and slot not in self._told[key]:
            self._told[key].add(slot)
            await self.crawler.signals.send_catch_log_async(
                signal=signals.robots_parsed, robotparser=parser, request=request
            )
        return parser

    def _unfetched(self, request: Request, host: str, error: Exception) -> None:
        """Say once per host that its robots.txt could not be downloaded, why (``error``), and what the
        crawl does; count it for the site of ``request``, the page that needed it."""
        work = Work.of(request)
        self._stats.inc_value(f"robots/unreachable/{work.site}")
        if host in self._unreachable:
            return
        self._unreachable.add(host)
        logger.log(
            job_level(self.crawler, work.job),
            "robots.txt of %s could not be fetched (%s): its pages are crawled as if it allowed them",
            host,
            _why(error),
        )


def _why(error: Exception) -> str:
    """``error`` in a few words, as a dead letter says a download's failure: how its connection ended
    (:func:`~crawler.worker.download.connection_lost`: ``connection closed before an answer: Connection was
    closed cleanly``, not Twisted's reprs), a body that could not be decompressed, else its name and
    message."""
    said = connection_lost(error) or undecompressed(error)
    if said is None:
        message = str(error).rstrip(".")
        said = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return said.rstrip(".")
