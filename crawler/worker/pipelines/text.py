"""``TextPipeline`` (200): the body from qRead when the rule's is missing or too short, the summaries and
the fingerprints of the body, computed in the text pool (:mod:`crawler.worker.textwork`)."""

from __future__ import annotations

import logging
from typing import Self

from scrapy.crawler import Crawler

from crawler import settings as defaults
from crawler.bounds import setting_in_range
from crawler.errors import BodyTooLongError, DocumentError, InputError
from crawler.items import Article
from crawler.worker.discovery import discovery_of
from crawler.worker.textjob import BodyTooLong
from crawler.worker.textwork import TextPool, text_pool_of
from extractors import ALGORITHMS
from extractors.documents import DocumentError as UnreadableDocument

__all__ = ["TextPipeline"]

logger = logging.getLogger(__name__)


class TextPipeline:
    """The body from ``QREAD_ALGORITHM`` when the rule's is missing or shorter than the rule's
    ``min_body_chars`` (carried by the item's page), if longer (one over ``TEXT_MAX_BODY_CHARS``, counted
    ``crawl/body_too_long/<site>``, dead-letters its request: kind "body too long"); where the body came
    from in ``extraction``; summaries of ``SUMMARY_SENTENCES`` sentences in ``summary`` (``{"1": ...,
    "3": ...}``, none when the list is empty); the body's content hash and SimHash for the store. An item
    left without a body gets no ``extraction`` (StorePipeline drops it). A body from qRead is counted by
    StorePipeline, once the article is stored: a page fetched again because its article could not be
    stored is extracted again, and counted once."""

    def __init__(
        self,
        crawler: Crawler,
        pool: TextPool,
        algorithm: str,
        min_body_chars: int,
        lengths: tuple[int, ...],
        max_body_chars: int,
    ) -> None:
        self.crawler = crawler
        self.pool = pool
        self.algorithm = algorithm
        self.min_body_chars = min_body_chars
        self.lengths = lengths
        self.max_body_chars = max_body_chars

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        algorithm = settings.get("QREAD_ALGORITHM")
        if algorithm not in ALGORITHMS:
            raise InputError(
                f"setting QREAD_ALGORITHM is {algorithm!r}: expected one of {', '.join(ALGORITHMS)}"
            )
        min_body_chars = int(setting_in_range(settings, "QREAD_MIN_BODY_CHARS", defaults, error=InputError))
        given = settings.getlist("SUMMARY_SENTENCES")
        try:
            lengths = tuple(sorted({int(length) for length in given}))
        except (TypeError, ValueError):
            lengths = (0,)
        if lengths and lengths[0] < 1:
            raise InputError(
                f"setting SUMMARY_SENTENCES is {given!r}: expected sentence counts of 1 or more, e.g. [1, 3],"
                " or an empty list for no summaries"
            )
        max_body_chars = settings.getint("TEXT_MAX_BODY_CHARS")
        return cls(crawler, text_pool_of(crawler), algorithm, min_body_chars, lengths, max_body_chars)

    async def open_spider(self) -> None:
        self.pool.start()
        await self.pool.started(self.crawler.settings.getfloat("TEXT_START_SECONDS"))

    async def process_item(self, item: Article) -> Article:
        site = item.site
        body = item.body or None
        minimum = item.page.min_body_chars if item.page is not None else self.min_body_chars
        rule_chars = len(body) if body is not None else 0
        short = body is None or rule_chars < minimum
        topic = discovery_of(self.crawler).topic(site) if item.discover is not None else None
        wanted = short or topic is not None
        html = item.page.html if wanted and item.page is not None and item.page.html else None
        encoding = item.page.encoding if item.page is not None else "utf-8"
        document = item.page.document if item.page is not None else None
        if document is not None:
            html = None
        elif short and topic is None:  # a discover page has no rule fields: qRead is its reader, no fallback
            self._count(f"extract/short_body/{site}")
        if html is None and body is None and document is None:
            return item
        try:
            result = await self.pool.article_text(
                html,
                item.url,
                item.title,
                body,
                self.algorithm,
                self.lengths,
                document,
                topic,
                encoding,
                self.max_body_chars,
            )
        except BodyTooLong as exc:
            self._count(f"crawl/body_too_long/{site}")
            what = "the text of the document" if document is not None else "the body qRead read from the page"
            raise BodyTooLongError(
                item.url,
                what,
                exc.chars,
                self.max_body_chars,
                (exc.pages_read, exc.pages),
                readable=exc.readable,
            ) from None
        except UnreadableDocument as exc:
            self._count(f"extract/document_errors/{site}")
            raise DocumentError(str(exc)) from None
        if document is not None:
            item.body = result.qread_body
            item.extraction = {
                "body_from": "document",
                "algorithm": result.algorithm,
                "body_chars": len(result.qread_body or ""),
            }
            for name, value in (result.metadata or {}).items():
                if getattr(item, name) is None:
                    setattr(item, name, value)
            self._count(f"extract/document/{site}")
        elif result.qread_body is not None:
            item.body = result.qread_body
            item.extraction = {
                "body_from": "qread",
                "algorithm": result.algorithm,
                "body_chars": len(result.qread_body),
            }
            logger.debug("body of %s from %s: %d characters", item.url, result.algorithm, len(item.body))
        elif body is not None:
            item.extraction = {"body_from": "rule", "algorithm": None, "body_chars": rule_chars}
            self._count(f"extract/rule_body/{site}")
        item.summary = result.summary
        item.fingerprints = (result.content_hash, result.simhash)
        if item.discover is not None and result.relevance is not None:
            item.discover.score = result.relevance.score
            item.discover.why = result.relevance.why
            item.discover.links = result.links or []
        return item

    def _count(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)
