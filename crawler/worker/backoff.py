"""``BackoffMiddleware`` (a downloader middleware): a site that answers 429 Too Many Requests, or 503
Service Unavailable with a ``Retry-After``, is held back for every worker, as it asked.

The wait is the answer's ``Retry-After`` (seconds, or an HTTP date counted from Redis's clock, as the hold
is; 0 or a date gone by counts as none), else ``BACKOFF_FIRST_SECONDS`` doubled at each backoff since the
last ``BACKOFF_CALM_SECONDS`` without one, at most ``BACKOFF_MAX_SECONDS``. The shared queue gates the
site until then (:meth:`crawler.redisio.queue.LeasedQueue.back_off`): no worker takes its requests, which
stay queued; the other sites go on. Afterwards the site is asked at most once
every ``BACKOFF_THROTTLE_SECONDS`` (doubled at each backoff, at most ``BACKOFF_MAX_THROTTLE_SECONDS``), a
delay that halves every two minutes: a site that asked to slow down is not flooded again at once.

A site's first such answer is logged whole; the next ones alike (its URL aside) at most once a minute
with their count (:class:`RepeatedFaults`), the rest as the worker stops: a URL answered 429 for ever
waits behind its site's backoff ``BACKOFF_MAX_TRIES`` times, then through Scrapy's retries (11 lines
before its dead letter, a line each).

The request that got such an answer goes back to its site's queue without using one of Scrapy's retries
(the site asked to wait; the request did not fail), at most ``BACKOFF_MAX_TRIES`` times, after which its
answer goes on as an HTTP error (a dead letter). A 503 without ``Retry-After`` (or with 0) is a server
error of that page, as a 500 is: Scrapy's retries, each after its own backoff (``RETRY_BACKOFF_SECONDS``),
then a dead letter; a few pages that fail now and then never hold a whole site back. Counted as
``backoff/<site>``; ``crawler status`` shows the site "backing off until ...".
"""

from __future__ import annotations

import email.utils
import logging
from typing import Self

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.redisio.clock import shared_now
from crawler.redisio.queue import LeasedQueue
from crawler.requests import Work
from crawler.worker.connection import job_level, keys_of, outage_of, server_of
from crawler.worker.faults import RepeatedFaults

__all__ = ["BACKOFF_STATUSES", "BackoffMiddleware", "retry_after"]

logger = logging.getLogger(__name__)

BACKOFF_STATUSES = frozenset({429, 503})
# What befell a request answered so, as the count of their lines says it (RepeatedFaults).
_ASKED_TO_WAIT = "were answered with a wait"
# The request's meta key counting its backoffs.
TRIES_KEY = "backoff_tries"


def retry_after(value: bytes | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds, or an HTTP date); None when
    there is none or it cannot be read."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isascii() and text.isdigit():  # str.isdigit takes "²" (0xB2 in latin-1) too, which float refuses
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(moment.timestamp() - now, 0.0)


class BackoffMiddleware:
    """Holds a site back after a 429 or 503, for every worker (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.first = settings.getfloat("BACKOFF_FIRST_SECONDS")
        self.longest = settings.getfloat("BACKOFF_MAX_SECONDS")
        self.calm = settings.getfloat("BACKOFF_CALM_SECONDS")
        self.max_tries = settings.getint("BACKOFF_MAX_TRIES")
        self.throttle = settings.getfloat("BACKOFF_THROTTLE_SECONDS")
        self.longest_throttle = settings.getfloat("BACKOFF_MAX_THROTTLE_SECONDS")
        self._queue: LeasedQueue | None = None
        self._waits = RepeatedFaults()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = cls(crawler)
        crawler.signals.connect(middleware._waits.close, signal=signals.spider_closed)
        return middleware

    @property
    def queue(self) -> LeasedQueue:
        if self._queue is None:
            self._queue = LeasedQueue(server_of(self.crawler), keys_of(self.crawler))
        return self._queue

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in BACKOFF_STATUSES or request.meta.get("dont_retry"):
            return response
        # A Retry-After of 0 asks for no wait.
        asked = retry_after(response.headers.get(b"Retry-After"), shared_now()) or None
        if response.status == 503 and asked is None:
            return response  # a server error of this page: Scrapy's retries, each after its backoff
        work = Work.of(request)
        site = work.site or "unknown"
        reason = f"HTTP {response.status}"
        if asked is not None and asked > self.longest:
            # A wait too long to be kept (400 digits read as infinity, a date in the year 9999) is said so.
            reason += f", Retry-After past BACKOFF_MAX_SECONDS ({self.longest:g} s)"
        elif asked is not None:  # whole seconds, as the wait is said: a date's is read to the microsecond
            reason += f", Retry-After {asked:.0f} s"
        try:
            seconds = self.queue.back_off(
                site,
                seconds=asked,
                first=self.first,
                longest=self.longest,
                calm=self.calm,
                reason=reason,
                throttle=self.throttle,
                longest_throttle=self.longest_throttle,
            )
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"record {site}'s backoff: the request is retried as usual", exc)
            return response
        outage_of(self.crawler).ok(wrote=True)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"backoff/{site}")
        tries = int(request.meta.get(TRIES_KEY, 0)) + 1
        fault = f"{site} answered {request.url} with {reason}"
        level, end = self._waits.said_first(
            _ASKED_TO_WAIT,
            fault,
            job_level(self.crawler, work.job),
            lambda said: f"; while the site goes on asking so, {said}",
        )
        logger.log(
            level, "%s: every worker waits %.0f s before its next request there%s", fault, seconds, end
        )
        if tries > self.max_tries:
            return response  # an HTTP error now: Scrapy's retries, then a dead letter with the reason
        return request.replace(meta={**request.meta, TRIES_KEY: tries}, dont_filter=True)
