"""``SummaryPipeline`` (300): extractive summaries of the body, stored with the article."""

from __future__ import annotations

from typing import Self

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from crawler.errors import InputError
from crawler.items import Article
from extractors.summary import summaries

__all__ = ["SummaryPipeline"]


class SummaryPipeline:
    """Extractive summaries of the body, ``{"1": ..., "3": ...}`` for ``SUMMARY_SENTENCES = [1, 3]``,
    in the item's ``summary``; off when the list is empty."""

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = lengths

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        lengths = crawler.settings.getlist("SUMMARY_SENTENCES")
        if not lengths:
            raise NotConfigured("SUMMARY_SENTENCES is empty: no summaries")
        try:
            numbers = sorted({int(length) for length in lengths})
        except (TypeError, ValueError):
            numbers = []
        if not numbers or numbers[0] < 1:
            raise InputError(
                f"setting SUMMARY_SENTENCES is {lengths!r}: expected sentence counts of 1 or more,"
                " e.g. [1, 3]"
            )
        return cls(numbers)

    def process_item(self, item: Article) -> Article:
        if item.body:
            item.summary = summaries(item.body, self.lengths, title=item.title)
        return item
