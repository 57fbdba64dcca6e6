"""``DUPEFILTER_CLASS``: Scrapy's duplicate-request filter on the shared Bloom filter in Redis."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Self

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.statscollectors import StatsCollector
from scrapy.utils.request import RequestFingerprinterProtocol

from crawler.redisio.bloom import RedisBloom
from crawler.worker.connection import keys_of, server_of

__all__ = ["RedisBloomDupeFilter", "bloom_of"]

logger = logging.getLogger(__name__)


def bloom_of(crawler: Crawler) -> RedisBloom:
    """The crawl's Bloom filter of seen article URLs, sized by the ``BLOOM_`` settings."""
    settings = crawler.settings
    return RedisBloom(
        server_of(crawler),
        keys_of(crawler).bloom,
        capacity=settings.getint("BLOOM_CAPACITY"),
        error_rate=settings.getfloat("BLOOM_ERROR_RATE"),
        growth=settings.getint("BLOOM_GROWTH"),
    )


class RedisBloomDupeFilter(BaseDupeFilter):
    """Scrapy's ``DUPEFILTER_CLASS``: a request is seen when its Scrapy fingerprint is in the Bloom filter.

    It subclasses Scrapy's ``BaseDupeFilter`` (the interface Scrapy's scheduler builds with
    ``build_from_crawler``), not scrapy-redis's ``RFPDupeFilter``: everything that one adds is what we must
    not use (its own fingerprint instead of Scrapy's fingerprinter, a Redis set of 40-hex strings, a
    ``close()`` that deletes the shared key when one worker stops, ``from_spider``/``from_settings``).
    The filter is shared by every worker and persists: ``close()`` deletes nothing.
    """

    def __init__(
        self,
        bloom: RedisBloom,
        fingerprinter: RequestFingerprinterProtocol,
        stats: StatsCollector,
        *,
        debug: bool = False,
    ) -> None:
        self.bloom = bloom
        self.fingerprinter = fingerprinter
        self.stats = stats
        self.debug = debug
        self._logged_once = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        return cls(
            bloom_of(crawler),
            crawler.request_fingerprinter,
            crawler.stats,
            debug=crawler.settings.getbool("DUPEFILTER_DEBUG"),
        )

    def request_seen(self, request: Request) -> bool:
        """Test-and-set one request: True if its fingerprint was already in the filter."""
        return self.seen_many([request])[0]

    def seen_many(self, requests: Sequence[Request]) -> list[bool]:
        """Test-and-set a page's links in one Redis call: True for each request already seen (including a
        second copy earlier in ``requests``). ``dont_filter`` is not looked at: leave those requests out."""
        seen = [
            not added for added in self.bloom.add_many([self.fingerprinter.fingerprint(r) for r in requests])
        ]
        repeated = sum(seen)
        if repeated:
            self.stats.inc_value("bloom/seen", repeated)
        if repeated < len(seen):
            self.stats.inc_value("bloom/added", len(seen) - repeated)
        return seen

    def seen_already(self, request: Request) -> bool:
        """Whether the filter has seen ``request`` (or a false positive); marks nothing: a request handed
        on is marked (:meth:`mark_seen`) once it is queued."""
        seen = self.bloom.contains_many([self.fingerprinter.fingerprint(request)])[0]
        if seen:
            self.stats.inc_value("bloom/seen")
        return seen

    def mark_seen(self, request: Request) -> None:
        """Mark ``request`` seen (it was queued)."""
        self.seen_many([request])

    def log(self, request: Request, spider: Spider) -> None:
        """Log a filtered request (every one with ``DUPEFILTER_DEBUG``, else only the first)."""
        if self.debug:
            logger.debug("Filtered duplicate request: %s", request, extra={"spider": spider})
        elif not self._logged_once:
            logger.debug(
                "Filtered duplicate request: %s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                request,
                extra={"spider": spider},
            )
            self._logged_once = True
