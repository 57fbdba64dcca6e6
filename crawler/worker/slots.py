"""``SiteSlotMiddleware`` (a downloader middleware): a download that ended frees its site's slot.

A site's ``concurrency`` holds for every worker together: the shared queue counts the site's downloads
under way (:mod:`crawler.redisio.queue`). This middleware, next to the downloader, tells the scheduler of
each leased request whose download ended (a response or an error); the scheduler passes them on with its
next pop, in the same round trip, or at once while it leases nothing for its store cannot write. The
parsing and storing that follow take no slot of the site.
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from crawler.requests import Work
from crawler.worker.scheduler import scheduler_of

__all__ = ["SiteSlotMiddleware"]


class SiteSlotMiddleware:
    """Reports each leased request's end of download to the scheduler (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        self._downloaded(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._downloaded(request)

    def _downloaded(self, request: Request) -> None:
        lease = Work.of(request).lease
        scheduler = scheduler_of(self.crawler)
        if lease is not None and scheduler is not None:
            scheduler.download_ended(lease)
