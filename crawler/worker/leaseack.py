"""``LeaseAckMiddleware`` (a spider middleware): a request's lease ends when its work is done."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.python import global_object_name

from crawler.worker.scheduler import scheduler_of

__all__ = ["LeaseAckMiddleware", "ack"]


class LeaseAckMiddleware:
    """Ends a request's lease once its work is done: every item it gave stored (or dropped), every link
    it gave queued, or its failure handled. Until then the lease is renewed, and if the worker dies it
    expires and the request goes back to the queue.

    The spider's output is passed through unchanged; items are counted per request, and the
    ``item_scraped``/``item_dropped``/``item_error`` signals (which carry the response) count them down.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.open_items: dict[int, int] = {}  # id(request) -> items not yet through the pipelines
        self.stored: dict[int, int] = {}  # id(request) -> items stored
        self.output_done: set[int] = set()
        crawler.signals.connect(self._item_stored, signal=signals.item_scraped)
        for signal in (signals.item_dropped, signals.item_error):
            crawler.signals.connect(self._item_done, signal=signal)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        request = response.request
        assert request is not None
        key = id(request)
        self.open_items.setdefault(key, 0)
        async for element in result:
            if not isinstance(element, Request):
                self.open_items[key] += 1
            yield element
        self.output_done.add(key)
        self._maybe_ack(request)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        request = response.request
        assert request is not None
        key = id(request)
        self.open_items.setdefault(key, 0)
        for element in result:
            if not isinstance(element, Request):
                self.open_items[key] += 1
            yield element
        self.output_done.add(key)
        self._maybe_ack(request)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        request = response.request
        assert request is not None and self.crawler.stats is not None
        self.crawler.stats.inc_value(f"spider/exception/{global_object_name(type(exception))}")
        self.output_done.add(id(request))
        self._maybe_ack(request)

    def _item_stored(self, item: Any, response: Response | None = None, **_: Any) -> None:
        if response is not None and response.request is not None and id(response.request) in self.open_items:
            key = id(response.request)
            self.stored[key] = self.stored.get(key, 0) + 1
        self._item_done(item, response)

    def _item_done(self, item: Any, response: Response | None = None, **_: Any) -> None:
        if response is None or response.request is None:
            return
        key = id(response.request)
        if key in self.open_items:
            self.open_items[key] -= 1
            self._maybe_ack(response.request)

    def _maybe_ack(self, request: Request) -> None:
        key = id(request)
        if key in self.output_done and self.open_items.get(key, 0) <= 0:
            self.output_done.discard(key)
            self.open_items.pop(key, None)
            ack(self.crawler, request, fetched=1, stored=self.stored.pop(key, 0))


def ack(crawler: Crawler, request: Request, *, fetched: int = 0, stored: int = 0) -> None:
    """End ``request``'s lease (no-op when the scheduler is not the leased one)."""
    scheduler = scheduler_of(crawler)
    if scheduler is not None:
        scheduler.ack(request, fetched=fetched, stored=stored)
