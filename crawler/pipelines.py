"""Item pipelines, in ITEM_PIPELINES order: clean (100) -> qRead fallback (200) -> summary (300) ->
store (900).

They take the dict the spider yields for an article page: ``site``, ``url``, ``fetched_at``, ``title``,
``body``, ``published``, ``author``, ``fields``, ``job``, and the private keys ``_html`` (the decoded page)
and ``_min_body_chars`` (the rule's minimum body length), which are never stored. Every outcome is a
crawler stat (the status view reads them): ``extract/rule_body/<site>``, ``extract/short_body/<site>``,
``extract/qread_fallback/<site>``, ``store/new/<site>``, ``store/updated/<site>``,
``store/unchanged/<site>``, ``store/repost/<site>``, ``store/spooled/<site>``,
``store/dropped_empty/<site>``, ``store/errors/<site>``.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime
from typing import Any, Self
from urllib.parse import urldefrag

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from crawler.errors import InputError
from crawler.store import Store, StoreError, Written, open_store
from crawler.store.base import check_article
from extractors import ALGORITHMS, DEFAULT_ALGORITHM, extract
from extractors.summary import summaries
from extractors.text import normalize_space

__all__ = [
    "CleanPipeline",
    "QreadFallbackPipeline",
    "StorePipeline",
    "SummaryPipeline",
    "clean_body",
    "clean_line",
    "normalize_published",
]

logger = logging.getLogger(__name__)

# Control characters but tab, newline and carriage return (C0, DEL, C1): never part of an article's text.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# A blank line (white space allowed on it): the paragraph separator of a body.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")
_LINE_FIELDS = ("title", "author")
# QREAD_MIN_BODY_CHARS when the settings do not say (crawler/settings.py does).
DEFAULT_MIN_BODY_CHARS = 200

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_TIME = r"(?:[T\s,]*(\d{1,2})[:时](\d{2})(?:[:分](\d{2}))?)?"
# Year first with - / . or 年 月 日 (unambiguous); day-first and month-first numeric dates are left alone.
_NUMERIC_DATE_RE = re.compile(
    r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?!\d)\s*日?" + _TIME
)
_MONTH_DAY_YEAR_RE = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_DAY_MONTH_YEAR_RE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE)


def clean_line(value: Any) -> Any:
    """One-line text with white space collapsed and control characters removed; "" becomes None.
    Values that are not strings are returned as they are."""
    if not isinstance(value, str):
        return value
    return normalize_space(_CONTROL_RE.sub(" ", value)) or None


def clean_body(value: Any) -> Any:
    """Paragraphs (separated by blank lines) cleaned like :func:`clean_line`, empty ones dropped, joined
    by one blank line; None when nothing is left. Values that are not strings are returned as they are."""
    if not isinstance(value, str):
        return value
    paragraphs = (normalize_space(part) for part in _PARAGRAPH_BREAK_RE.split(_CONTROL_RE.sub(" ", value)))
    return "\n\n".join(part for part in paragraphs if part) or None


def normalize_published(text: str) -> str:
    """ISO-8601 form of a publication date, ``2026-11-20``, or ``2026-11-20T10:31:00`` (with the page's
    UTC offset when it gives one) when it has a time; ``text`` unchanged when no date is recognised.

    Recognised: ISO-8601, RFC 2822 (``Fri, 20 Nov 2026 10:31:00 GMT``), year-first numeric dates
    (``2026/11/20``, ``2026.11.20 10:31``, ``2026年11月20日``) and English month names
    (``November 20, 2026``, ``20 Nov. 2026``), anywhere in the text.
    """
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).isoformat(timespec="seconds")
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(text).isoformat(timespec="seconds")
    except (TypeError, ValueError, IndexError):
        pass
    found = _date_in(text)
    return text if found is None else found


def _date_in(text: str) -> str | None:
    """The first recognised date (and time) inside ``text``, ISO-8601."""
    match = _NUMERIC_DATE_RE.search(text)
    if match is not None:
        year, month, day, hour, minute, second = match.groups()
        return _iso(int(year), int(month), int(day), hour, minute, second)
    match = _MONTH_DAY_YEAR_RE.search(text)
    if match is not None:
        month_name, day, year = match.groups()
        return _iso(int(year), _MONTHS[month_name.lower()], int(day), None, None, None)
    match = _DAY_MONTH_YEAR_RE.search(text)
    if match is not None:
        day, month_name, year = match.groups()
        return _iso(int(year), _MONTHS[month_name.lower()], int(day), None, None, None)
    return None


def _iso(
    year: int, month: int, day: int, hour: str | None, minute: str | None, second: str | None
) -> str | None:
    try:
        if hour is None or minute is None:
            return date(year, month, day).isoformat()
        moment = datetime(year, month, day, int(hour), int(minute), int(second or 0))
    except ValueError:
        return None
    return moment.isoformat(timespec="seconds")


class CleanPipeline:
    """White space of title, author and published collapsed, body paragraphs cleaned, empty strings to
    None (custom fields too), ``published`` in ISO-8601 when it parses, the URL's fragment dropped."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls()

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        url = item.get("url")
        if isinstance(url, str):
            item["url"] = urldefrag(url.strip()).url
        for name in _LINE_FIELDS:
            if name in item:
                item[name] = clean_line(item[name])
        if "published" in item:
            published = clean_line(item["published"])
            item["published"] = normalize_published(published) if isinstance(published, str) else published
        if "body" in item:
            item["body"] = clean_body(item["body"])
        fields = item.get("fields")
        if isinstance(fields, dict):
            item["fields"] = {name: clean_line(value) for name, value in fields.items()}
        return item


class QreadFallbackPipeline:
    """The body from ``QREAD_ALGORITHM`` when the rule's is missing or shorter than the rule's
    ``min_body_chars`` (``_min_body_chars`` in the item, default ``QREAD_MIN_BODY_CHARS``), if longer;
    records where the body came from in ``extraction``. An item left without a body gets no
    ``extraction`` (StorePipeline drops it)."""

    def __init__(self, crawler: Crawler, algorithm: str, min_body_chars: int) -> None:
        self.crawler = crawler
        self.algorithm = algorithm
        self.min_body_chars = min_body_chars

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        algorithm = crawler.settings.get("QREAD_ALGORITHM", DEFAULT_ALGORITHM)
        if algorithm not in ALGORITHMS:
            raise InputError(
                f"setting QREAD_ALGORITHM is {algorithm!r}: expected one of {', '.join(ALGORITHMS)}"
            )
        min_body_chars = crawler.settings.getint("QREAD_MIN_BODY_CHARS", DEFAULT_MIN_BODY_CHARS)
        if min_body_chars < 0:
            raise InputError(
                f"setting QREAD_MIN_BODY_CHARS is {min_body_chars!r}: expected a character count, 0 or more"
            )
        return cls(crawler, algorithm, min_body_chars)

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        site = item.get("site")
        body = item.get("body") or None
        minimum = item.get("_min_body_chars")
        if minimum is None:
            minimum = self.min_body_chars
        rule_chars = len(body) if isinstance(body, str) else 0
        if body is not None and rule_chars >= minimum:
            return self._from_rule(item, site, rule_chars)
        self._count(f"extract/short_body/{site}")
        html = item.get("_html")
        if html:
            result = extract(html, url=item.get("url"), title=item.get("title"), algo=self.algorithm)
            text = clean_body(result.text)
            if text and len(text) > rule_chars:
                item["body"] = text
                item["extraction"] = {
                    "body_from": "qread",
                    "algorithm": result.algorithm,
                    "body_chars": len(text),
                }
                self._count(f"extract/qread_fallback/{site}")
                logger.debug(
                    "body of %s from %s: %d characters", item.get("url"), result.algorithm, len(text)
                )
                return item
        return self._from_rule(item, site, rule_chars) if body is not None else item

    def _from_rule(self, item: dict[str, Any], site: object, chars: int) -> dict[str, Any]:
        item["extraction"] = {"body_from": "rule", "algorithm": None, "body_chars": chars}
        self._count(f"extract/rule_body/{site}")
        return item

    def _count(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)


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

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        body = item.get("body")
        if isinstance(body, str) and body:
            title = item.get("title")
            item["summary"] = summaries(body, self.lengths, title=title if isinstance(title, str) else None)
        return item


class StorePipeline:
    """Stores each item in the store of ``open_store(settings)`` (opened when the spider opens, closed
    when it closes), keys starting with ``_`` removed first; an item with no body (even after the qRead
    fallback) is dropped.

    Group commit: items wait (at most ``STORE_FLUSH_SECONDS``) until ``STORE_BATCH_SIZE`` of them can
    be written together; the batch is written on a thread of its own (the store's only thread, so the
    crawl never waits on a disk or a network write), and each item moves on, and its request is
    acknowledged, only once its batch is stored. A bad item is refused alone, before it joins a batch.
    A repost (the same article as a stored one, under another URL) is recorded against the original and
    dropped at INFO level: it is no stored article.
    """

    def __init__(self, crawler: Crawler, batch_size: int, flush_seconds: float) -> None:
        self.crawler = crawler
        self.batch_size = batch_size
        self.flush_seconds = flush_seconds
        self.store: Store | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[Written]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Future[None]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        batch_size = crawler.settings.getint("STORE_BATCH_SIZE", 100)
        flush_seconds = crawler.settings.getfloat("STORE_FLUSH_SECONDS", 0.2)
        if batch_size < 1 or flush_seconds < 0:
            raise InputError(
                f"settings STORE_BATCH_SIZE {batch_size!r} and STORE_FLUSH_SECONDS {flush_seconds!r}:"
                " expected a batch of 1 or more articles and 0 or more seconds"
            )
        return cls(crawler, batch_size, flush_seconds)

    async def open_spider(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        self.store = await self._run(open_store, self.crawler.settings)
        logger.info("storing articles in %r", self.store)

    async def close_spider(self) -> None:
        if self._executor is None:
            return
        await self._flush()
        if self.store is not None:
            await self._run(self.store.close)
            self.store = None
        self._executor.shutdown(wait=True)
        self._executor = None

    async def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        if self.store is None:
            raise StoreError("StorePipeline got an item before the spider opened: the store is not open")
        for key in [key for key in item if key.startswith("_")]:
            del item[key]  # in place: Scrapy logs a dropped item, which must not carry the page
        site = item.get("site")
        if not item.get("body"):
            self._count(f"store/dropped_empty/{site}")
            raise DropItem(
                f"no body in {item.get('url')} of site {site!r}, neither from the rule nor from qRead"
            )
        try:
            check_article(item)
        except StoreError:
            self._count(f"store/errors/{site}")
            raise
        written = asyncio.get_running_loop().create_future()
        self._waiting.append((item, written))
        if len(self._waiting) >= self.batch_size:
            await self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds, self._flush_soon)
        try:
            result = await written
        except StoreError:
            self._count(f"store/errors/{site}")
            raise
        self._count(f"store/{result.outcome}/{site}")
        if result.outcome == "repost":
            raise DropItem(
                f"{result.url} is a repost of {result.original}: recorded there, not stored again",
                log_level="INFO",
            )
        return item

    def _flush_soon(self) -> None:
        self._timer = None
        flush = asyncio.ensure_future(self._flush())
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        """Write the waiting items as one batch; each item's future gets its result or the batch's error."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._waiting = self._waiting, []
        if not batch or self.store is None or self._executor is None:
            return
        loop = asyncio.get_running_loop()
        writing = loop.run_in_executor(self._executor, self.store.upsert_many, [item for item, _ in batch])

        def settle(done: asyncio.Future[list[Written]]) -> None:
            error = StoreError("the batch write was cancelled") if done.cancelled() else done.exception()
            for index, (_, written) in enumerate(batch):
                if error is not None:
                    written.set_exception(error)
                else:
                    written.set_result(done.result()[index])

        writing.add_done_callback(settle)
        await asyncio.wait([writing])

    async def _run(self, function: Any, *args: Any) -> Any:
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def _count(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)
