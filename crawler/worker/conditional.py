"""Conditional requests for index pages: an unchanged index page costs a 304, not a download.

``ConditionalIndexMiddleware`` (a downloader middleware) keeps, in the Redis hash of the page's site
``crawler:validators:<site>`` (URL -> JSON ``[etag, last_modified]``), the ``ETag`` and ``Last-Modified``
of each index page's last 200 answer, and sends them back as ``If-None-Match`` and ``If-Modified-Since``
when a regular grab of that site reads the page again. A 304 answer reaches the spider
(``handle_httpstatus_list``), which counts it (``crawl/not_modified/<site>``) and records a visit that
found nothing new. Temp crawls always read the whole page. Every worker shares the validators, so whichever
worker reads a page next can ask. They are kept per site: a rule reading a page another rule reads has its
first grab read the whole page. A page no grab read for a month (a sitemap of a past day, an API page of a
cursor gone) has its validators dropped (:mod:`crawler.redisio.listings`).
"""

from __future__ import annotations

import json
import logging
from typing import Self

import redis
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from crawler.keys import Keys
from crawler.redisio import listings
from crawler.requests import Work
from crawler.worker.connection import keys_of, outage_of, server_of

__all__ = ["ConditionalIndexMiddleware"]

logger = logging.getLogger(__name__)


class ConditionalIndexMiddleware:
    """If-None-Match / If-Modified-Since on the index pages of regular grabs (see the module's docstring)."""

    def __init__(self, crawler: Crawler, server: redis.Redis, keys: Keys) -> None:
        self.crawler = crawler
        self.server = server
        self.keys = keys

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("SCHEDULE_CONDITIONAL_REQUESTS") or not settings.get("REDIS_URL"):
            raise NotConfigured(
                "conditional index requests are off (SCHEDULE_CONDITIONAL_REQUESTS, or no REDIS_URL to keep"
                " the validators in)"
            )
        return cls(crawler, server_of(crawler), keys_of(crawler))

    @staticmethod
    def _applies(request: Request) -> bool:
        work = Work.of(request)
        return not work.is_article and work.is_grab

    def process_request(self, request: Request) -> None:
        if not self._applies(request):
            return
        key = self.keys.validators(Work.of(request).site)
        request.meta["handle_httpstatus_list"] = [*request.meta.get("handle_httpstatus_list", ()), 304]
        try:
            saved = self.server.hget(key, request.url)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"read {request.url}'s validators: the page is read whole", exc)
            return
        outage_of(self.crawler).ok(wrote=False)
        if saved is None:
            return
        etag, modified = json.loads(saved)
        if etag and b"If-None-Match" not in request.headers:
            request.headers[b"If-None-Match"] = etag
        if modified and b"If-Modified-Since" not in request.headers:
            request.headers[b"If-Modified-Since"] = modified

    def process_response(self, request: Request, response: Response) -> Response:
        work = Work.of(request)
        if work.is_article or response.status not in (200, 304):
            return response
        key, times = self.keys.validators(work.site), self.keys.validators_at(work.site)
        try:
            if response.status == 304:
                listings.touch(self.server, key, times, request.url)
            else:
                etag = response.headers.get(b"ETag")
                modified = response.headers.get(b"Last-Modified")
                value = [(etag or b"").decode("latin-1"), (modified or b"").decode("latin-1")]
                saved = json.dumps(value) if etag or modified else ""
                listings.keep(self.server, key, times, request.url, saved)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(
                f"save {request.url}'s validators: the next grab reads the page whole", exc
            )
        else:
            outage_of(self.crawler).ok(wrote=True)
        return response
