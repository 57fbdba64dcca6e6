"""``ItemLogFormatter`` (``LOG_FORMATTER``): Scrapy's log lines, except that an article is never logged
whole: a line about an item names its URL, never its body.

Scrapy logs an item that fails in the pipelines at ERROR with the whole item, its body and all, and does
so again at every retry: a full disk would fill the log with article bodies. The request of such an article
is deferred (:mod:`crawler.worker.leaseack`), and the scheduler logs that in one line naming its URL, its
site, the store's error and what to do (once a minute for an error that befalls every article alike:
:mod:`crawler.worker.faults`); Scrapy's own line says only the URL, at DEBUG. Scrapy logs a
dropped item (a repost, a page without an article) with the whole item too: here it is one line, the
item's URL and why it was dropped; a scraped item is its URL alone.

Scrapy asks for a line about every page crawled and every item scraped, at DEBUG, and creates its log
record whether or not a handler shows it: about 11 µs of the crawl's thread an article. Those two lines are
left out (Scrapy logs nothing for a formatter's None) when no handler their record would reach takes DEBUG.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy import Spider
from scrapy.http import Request, Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from crawler.errors import BodyTooLongError, StoreUnavailableError

__all__ = ["ItemLogFormatter"]


class ItemLogFormatter(LogFormatter):
    """See the module docstring."""

    def item_error(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        if isinstance(exception, StoreUnavailableError) and exception.lasting:
            return {
                "level": logging.DEBUG,
                "msg": "The article of %(url)s cannot be stored: its request is dead-lettered",
                "args": {"url": _url(item)},
            }
        if isinstance(exception, BodyTooLongError):
            return {
                "level": logging.DEBUG,
                "msg": "The body of %(url)s is too long: its request is dead-lettered",
                "args": {"url": _url(item)},
            }
        if isinstance(exception, StoreUnavailableError):
            return {
                "level": logging.DEBUG,
                "msg": "The article of %(url)s is not stored now: its request is deferred",
                "args": {"url": _url(item)},
            }
        result = super().item_error(item, exception, response, spider)
        return {**result, "msg": "Error processing the item of %(url)s", "args": {"url": _url(item)}}

    def dropped(
        self,
        item: Any,
        exception: BaseException,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        url = _url(item)
        if url is not None and str(url) in str(exception):
            return {**result, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
        return {
            **result,
            "msg": "Dropped %(url)s: %(exception)s",
            "args": {"url": url, "exception": exception},
        }

    def crawled(  # type: ignore[override]  # Scrapy skips a None, as its documentation says
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        if not _debug_shown(_ENGINE_LOGGER):
            return None
        return super().crawled(request, response, spider)

    def scraped(  # type: ignore[override]  # as crawled
        self,
        item: Any,
        response: Response | Failure | None,
        spider: Spider,
    ) -> LogFormatterResult | None:
        if not _debug_shown(_SCRAPER_LOGGER):
            return None
        result = super().scraped(item, response, spider)
        return {**result, "msg": "Scraped %(url)s", "args": {"url": _url(item)}}


# The loggers Scrapy's engine and scraper log a crawled page and a scraped item through.
_ENGINE_LOGGER = logging.getLogger("scrapy.core.engine")
_SCRAPER_LOGGER = logging.getLogger("scrapy.core.scraper")


def _debug_shown(logger: logging.Logger) -> bool:
    """Whether a DEBUG record of ``logger`` would reach a handler that takes it (as ``Logger.callHandlers``
    walks the handlers)."""
    if not logger.isEnabledFor(logging.DEBUG):
        return False
    current: logging.Logger | None = logger
    while current is not None:
        if any(handler.level <= logging.DEBUG for handler in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def _url(item: Any) -> Any:
    """The item's URL (its field ``url``), or None for an item without one."""
    return ItemAdapter(item).get("url")
