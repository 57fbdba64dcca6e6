"""``CleanPipeline`` (100): the article's text fields tidied, its publication date in ISO-8601."""

from __future__ import annotations

import re
from datetime import tzinfo
from typing import TYPE_CHECKING, Self
from urllib.parse import urldefrag

from crawler.items import Article
from crawler.published import published_date
from extractors.text import normalize_space

if TYPE_CHECKING:  # a text process imports clean_body without Scrapy (crawler/worker/textjob.py)
    from scrapy.crawler import Crawler

__all__ = ["CleanPipeline", "clean_body", "clean_line"]

# Control characters but tab, newline and carriage return (C0, DEL, C1): never part of an article's text.
# Lone surrogates too (half an emoji a JSON API escapes as "\ud83d"): no UTF-8 store can write one.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# A blank line (white space allowed on it): the paragraph separator of a body.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")


def clean_line(value: str | None) -> str | None:
    """One-line text with white space collapsed and control characters (lone surrogates too) removed; ""
    becomes None."""
    if value is None:
        return None
    return normalize_space(_CONTROL_RE.sub(" ", value)) or None


def clean_body(value: str | None) -> str | None:
    """Paragraphs (separated by blank lines) cleaned like :func:`clean_line`, empty ones dropped, joined
    by one blank line; None when nothing is left."""
    if value is None:
        return None
    paragraphs = (normalize_space(part) for part in _PARAGRAPH_BREAK_RE.split(_CONTROL_RE.sub(" ", value)))
    return "\n\n".join(part for part in paragraphs if part) or None


class CleanPipeline:
    """White space of title, author and published collapsed, body paragraphs cleaned, empty strings to
    None (custom fields too), ``published`` in ISO-8601 when it parses (a time without a UTC offset in the
    zone of the site's rule, ``timezone``, when it has one; a timestamp judged by Redis's clock, as the
    article's ``fetched_at`` is; else kept as given and counted, ``fields/unparsed/published/<site>``, and
    in its job's ``unparsed_published``), the URL's fragment dropped."""

    def __init__(self, crawler: Crawler) -> None:
        # Here, not above: a text process imports this module for clean_body, without Redis.
        from crawler.redisio.clock import shared_now  # noqa: PLC0415

        self.crawler = crawler
        self._now = shared_now

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Article) -> Article:
        item.url = urldefrag(item.url.strip()).url
        item.title = clean_line(item.title)
        item.author = clean_line(item.author)
        published = clean_line(item.published)
        if published is not None:
            found = published_date(published, now=self._now(), zone=self._zone(item.site))
            if found is None:
                assert self.crawler.stats is not None
                self.crawler.stats.inc_value(f"fields/unparsed/published/{item.site}")
                item.count_job("unparsed_published")
            published = found or published
        item.published = published
        item.body = clean_body(item.body)
        item.fields = {name: clean_line(value) for name, value in item.fields.items()}
        return item

    def _zone(self, site: str) -> tzinfo | None:
        """The ``timezone`` of the rule of ``site``, as the spider serving it has the rule."""
        # Scrapy's, in a worker alone: a text process imports this module for clean_body.
        from crawler.worker.spider import SitesSpider  # noqa: PLC0415

        spider = self.crawler.spider
        rule = spider.rule_of(site) if isinstance(spider, SitesSpider) else None
        return rule.timezone if rule is not None else None
