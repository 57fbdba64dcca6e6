"""``ItemLogFormatter`` (``LOG_FORMATTER``): Scrapy's log lines, except that an article the store could not
write is not logged whole.

Scrapy logs an item that fails in the pipelines at ERROR with the whole item, its body and all, and does
so again at every retry: a full disk would fill the log with article bodies. The request of such an article
is deferred (:mod:`crawler.worker.leaseack`), and the scheduler logs that in one line naming its URL, its
site, the store's error and what to do; Scrapy's own line says only the URL, at DEBUG.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy import Spider
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from crawler.errors import StoreUnavailableError

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
        if isinstance(exception, StoreUnavailableError):
            return {
                "level": logging.DEBUG,
                "msg": "The article of %(url)s is not stored now: its request is deferred",
                "args": {"url": ItemAdapter(item).get("url")},
            }
        return super().item_error(item, exception, response, spider)
