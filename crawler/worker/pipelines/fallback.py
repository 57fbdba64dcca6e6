"""``QreadFallbackPipeline`` (200): the body from qRead when the rule's is missing or too short."""

from __future__ import annotations

import logging
from typing import Self

from scrapy.crawler import Crawler

from crawler.errors import InputError
from crawler.items import Article
from crawler.worker.pipelines.clean import clean_body
from extractors import ALGORITHMS, extract

__all__ = ["QreadFallbackPipeline"]

logger = logging.getLogger(__name__)


class QreadFallbackPipeline:
    """The body from ``QREAD_ALGORITHM`` when the rule's is missing or shorter than the rule's
    ``min_body_chars`` (carried by the item's page), if longer; records where the body came from in
    ``extraction``. An item left without a body gets no ``extraction`` (StorePipeline drops it)."""

    def __init__(self, crawler: Crawler, algorithm: str, min_body_chars: int) -> None:
        self.crawler = crawler
        self.algorithm = algorithm
        self.min_body_chars = min_body_chars

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        algorithm = crawler.settings.get("QREAD_ALGORITHM")
        if algorithm not in ALGORITHMS:
            raise InputError(
                f"setting QREAD_ALGORITHM is {algorithm!r}: expected one of {', '.join(ALGORITHMS)}"
            )
        min_body_chars = crawler.settings.getint("QREAD_MIN_BODY_CHARS")
        if min_body_chars < 0:
            raise InputError(
                f"setting QREAD_MIN_BODY_CHARS is {min_body_chars!r}: expected a character count, 0 or more"
            )
        return cls(crawler, algorithm, min_body_chars)

    def process_item(self, item: Article) -> Article:
        site = item.site
        body = item.body or None
        minimum = item.page.min_body_chars if item.page is not None else self.min_body_chars
        rule_chars = len(body) if body is not None else 0
        if body is not None and rule_chars >= minimum:
            return self._from_rule(item, rule_chars)
        self._count(f"extract/short_body/{site}")
        if item.page is not None and item.page.html:
            result = extract(item.page.html, url=item.url, title=item.title, algo=self.algorithm)
            text = clean_body(result.text)
            if text and len(text) > rule_chars:
                item.body = text
                item.extraction = {
                    "body_from": "qread",
                    "algorithm": result.algorithm,
                    "body_chars": len(text),
                }
                self._count(f"extract/qread_fallback/{site}")
                logger.debug("body of %s from %s: %d characters", item.url, result.algorithm, len(text))
                return item
        return self._from_rule(item, rule_chars) if body is not None else item

    def _from_rule(self, item: Article, chars: int) -> Article:
        item.extraction = {"body_from": "rule", "algorithm": None, "body_chars": chars}
        self._count(f"extract/rule_body/{item.site}")
        return item

    def _count(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)
