"""Bans: a site that answers 403 or 429, or a captcha page, has stopped serving the crawler.

``BanDetectionMiddleware`` (a downloader middleware) counts each as ``ban/<site>`` (``crawler status``
marks a site with bans in the last 24 hours as needing a person's attention) and logs it. A 403/429
goes on to Scrapy's retry and HTTP-error handling as any error status does; a captcha-like page (a 200
whose markup holds a known challenge widget or wording, read in its first ``_SNIFF_BYTES``) is refused
with IgnoreRequest, so no challenge page is ever stored as an article.
"""

from __future__ import annotations

import logging
import re
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from crawler.requests import Work

__all__ = ["BAN_STATUSES", "BanDetectionMiddleware", "looks_like_captcha"]

logger = logging.getLogger(__name__)

BAN_STATUSES = frozenset({403, 429})
# Challenge pages put their widget near the top; an article that merely mentions captchas is longer
# and names none of these markers.
_SNIFF_BYTES = 50_000
_CAPTCHA_RE = re.compile(
    rb"g-recaptcha|h-captcha|hcaptcha\.com|cf-challenge|challenge-platform|captcha-container"
    rb"|are you a robot|unusual traffic from your computer|verify you are (?:a )?human"
    rb"|\xe8\xaf\xb7\xe8\xbe\x93\xe5\x85\xa5\xe9\xaa\x8c\xe8\xaf\x81\xe7\xa0\x81"  # 请输入验证码
    rb"|\xe4\xba\xba\xe6\x9c\xba\xe9\xaa\x8c\xe8\xaf\x81",  # 人机验证
    re.IGNORECASE,
)


def looks_like_captcha(body: bytes) -> bool:
    """Whether a page's first bytes hold a known challenge widget or wording."""
    return _CAPTCHA_RE.search(body[:_SNIFF_BYTES]) is not None


class BanDetectionMiddleware:
    """Counts ``ban/<site>`` for 403/429 answers and captcha-like pages (see the module's docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        site = Work.of(request).site or "unknown"
        if response.status in BAN_STATUSES:
            self._count(site)
            logger.warning("Site %s refused %s with HTTP %d: banned?", site, request.url, response.status)
        elif response.status == 200 and looks_like_captcha(response.body):
            self._count(site)
            logger.warning("Site %s answered %s with a captcha-like page: banned?", site, request.url)
            raise IgnoreRequest(f"captcha-like page at {request.url}: not stored")
        return response

    def _count(self, site: object) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"ban/{site}")
