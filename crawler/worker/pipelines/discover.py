"""``DiscoverPipeline``: a page of a discover crawl, once its text is read, is stored when relevant, with
its ``relevance`` and the reason (``relevance_why``) among its fields, and dropped (counted) when not.

It teaches the link model and fills the frontier once its item is done, stored or dropped
(:meth:`crawler.worker.discovery.Discovery.settle`, from :mod:`crawler.worker.leaseack`), never while
its store is deferred; Redis failing then defers the page: it is fetched again later, so its links are
not lost.
"""

from __future__ import annotations

import logging
from typing import Self

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from crawler.items import Article
from crawler.worker.discovery import Discovery, discovery_of, is_relevant

__all__ = ["DiscoverPipeline", "NotRelevant"]

logger = logging.getLogger(__name__)


class NotRelevant(DropItem):
    """A page of a discover crawl under its rule's relevance threshold: read, learnt from, not stored
    (most pages of a discover crawl: logged at DEBUG, counted in ``discover/irrelevant/<site>``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="DEBUG")


class DiscoverPipeline:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @property
    def discovery(self) -> Discovery:
        """The crawl's discover state (made at the first page of a discover crawl: Redis is needed)."""
        return discovery_of(self.crawler)

    def process_item(self, item: Article) -> Article:
        page = item.discover
        if page is None:
            return item
        rule = self.discovery.rule(item.site)
        if rule is None or rule.discover is None:
            raise DropItem(f"{item.url}: site {item.site!r} has no discover rule any more")
        score = page.score or 0.0
        if not is_relevant(rule.discover, score):
            raise NotRelevant(
                f"{item.url}: relevance {score:.2f} under {rule.discover.threshold:g} ({page.why})"
            )
        item.fields["relevance"] = f"{score:.3f}"
        item.fields["relevance_why"] = page.why
        return item
