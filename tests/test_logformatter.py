"""ItemLogFormatter: its lines about each crawled page and scraped item made only when DEBUG is shown."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from scrapy import Spider
from scrapy.http import HtmlResponse, Request

from crawler.worker.logformatter import ItemLogFormatter

URL = "http://127.0.0.1/news/1.html"
LOGGERS = ("scrapy.core.engine", "scrapy.core.scraper")


@pytest.fixture
def debug_loggers() -> Iterator[list[logging.Logger]]:
    """Scrapy's engine and scraper loggers taking every level, as under Scrapy's root handler."""
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    yield loggers
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


def _reached(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of ``logger`` reaches (pytest's own among them)."""
    reached: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        reached.extend(current.handlers)
        current = current.parent if current.propagate else None
    return reached


def test_crawled_and_scraped_are_not_made_unless_a_handler_shows_debug(
    debug_loggers: list[logging.Logger], monkeypatch: pytest.MonkeyPatch
) -> None:
    formatter, spider = ItemLogFormatter(), Spider("sites")
    request = Request(URL)
    response = HtmlResponse(URL, body=b"<html></html>", request=request)
    item = {"url": URL, "body": "text"}
    handlers = {handler for logger in debug_loggers for handler in _reached(logger)}
    for handler in handlers:  # a worker's log at INFO, its default
        monkeypatch.setattr(handler, "level", logging.INFO)

    assert formatter.crawled(request, response, spider) is None
    assert formatter.scraped(item, response, spider) is None

    monkeypatch.setattr(next(iter(handlers)), "level", logging.DEBUG)
    crawled = formatter.crawled(request, response, spider)
    scraped = formatter.scraped(item, response, spider)
    assert crawled is not None and crawled["level"] == logging.DEBUG
    assert crawled["msg"].startswith("Crawled (%(status)s) %(request)s")
    assert scraped == {"level": logging.DEBUG, "msg": "Scraped %(url)s", "args": {"url": URL}}
