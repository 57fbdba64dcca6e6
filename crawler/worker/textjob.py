"""What a text process runs (:mod:`crawler.worker.textwork` sends the work): the body from qRead when the
rule's falls short (or from a PDF or DOCX document), the summaries and the fingerprints of an article, in
plain values.

It imports no Scrapy or Twisted, so a process of the pool starts on about 0.19 s of CPU, not 0.47 s.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass

from crawler.discover.links import Link, page_links
from crawler.discover.topic import Relevance, Topic
from crawler.store.document import fingerprints
from crawler.threads import STOP_SIGNALS
from crawler.worker.pipelines.clean import clean_body
from extractors import extract
from extractors.documents import TextTooLong, read_document
from extractors.summary import summaries

__all__ = ["Args", "BodyTooLong", "TextResult", "article_text", "article_texts", "quiet_child", "ready"]

# Seconds between a pool process's looks at whether its parent still runs.
_PARENT_CHECK_SECONDS = 1.0

Args = tuple[
    str | None, str, str | None, str | None, str, tuple[int, ...], bytes | None, Topic | None, str, int | None
]


class BodyTooLong(ValueError):
    """The body qRead read from a page, or the text of a document, has ``chars`` characters, over the limit
    it was given; a PDF's in its first ``pages_read`` of ``pages`` pages, the rest unread (equal counts when
    all of it was read), of which the first ``readable`` are read at most."""

    def __init__(self, chars: int, pages_read: int = 0, pages: int = 0, readable: int | None = None) -> None:
        super().__init__(chars, pages_read, pages, readable)
        self.chars = chars
        self.pages_read = pages_read
        self.pages = pages
        self.readable = pages if readable is None else readable


@dataclass(frozen=True, slots=True)
class TextResult:
    """What :func:`article_text` found: the body from qRead or the document (None when the rule's stays),
    its algorithm (``pdf`` or ``docx`` for a document), the summaries by length (None without a body or
    without lengths), the body's content hash and SimHash (hex), and what a document's metadata says
    (``title``, ``author``, ``published``); for a page of a discover crawl, its relevance to the topic and
    its links."""

    qread_body: str | None
    algorithm: str | None
    summary: dict[str, str] | None
    content_hash: str | None
    simhash: str | None
    metadata: dict[str, str] | None = None
    relevance: Relevance | None = None
    links: list[Link] | None = None


def article_text(
    html: str | None,
    url: str,
    title: str | None,
    body: str | None,
    algorithm: str,
    lengths: tuple[int, ...],
    document: bytes | None = None,
    topic: Topic | None = None,
    encoding: str = "utf-8",
    max_chars: int | None = None,
) -> TextResult:
    """The text work of one article (in a pool process): with ``document`` (a PDF or DOCX), its text and
    metadata (:class:`~extractors.documents.DocumentError` when it cannot be read); with ``html`` (the
    rule's body fell short), the body qRead finds there, kept when longer than ``body``; then, on the
    body kept, its summaries of ``lengths`` sentences and its fingerprints; with ``topic`` (a page of a
    discover crawl), its relevance (from its title and the body kept) and its links (their query in the
    page's web ``encoding``). :class:`BodyTooLong` when qRead's body, or the document's text, is over
    ``max_chars``, before any work on it (a PDF's pages past it are not read)."""
    qread_body = found_by = None
    metadata = None
    if document is not None:
        try:
            read = read_document(document, url, max_chars)
        except TextTooLong as exc:
            raise BodyTooLong(exc.chars, exc.pages_read, exc.pages, exc.readable) from None
        qread_body, found_by = clean_body(read.text), read.kind
        found = {"title": read.title, "author": read.author, "published": read.published}
        metadata = {name: value for name, value in found.items() if value}
    elif html:
        result = extract(html, url=url, title=title, algo=algorithm)
        if max_chars is not None and len(result.text) > max_chars:
            raise BodyTooLong(len(result.text))
        text = clean_body(result.text)
        if text and len(text) > len(body or ""):
            qread_body, found_by = text, result.algorithm
    kept = qread_body or body
    relevance = links = None
    if topic is not None:
        relevance = topic.relevance(title, kept or "")
        links = page_links(html, url, encoding=encoding) if html else []
    if not kept:
        return TextResult(qread_body, found_by, None, None, None, metadata, relevance, links)
    summary = summaries(kept, list(lengths), title=title) if lengths else None
    return TextResult(qread_body, found_by, summary, *fingerprints(kept), metadata, relevance, links)


def article_texts(batch: list[Args]) -> list[TextResult | Exception]:
    """:func:`article_text` of each article of ``batch`` (in a pool process): its result, or the error
    it raised, so one bad page fails only its own article."""
    results: list[TextResult | Exception] = []
    for args in batch:
        try:
            results.append(article_text(*args))
        except Exception as exc:  # noqa: BLE001 - given back to the article's own caller, raised there
            results.append(exc)
    return results


def ready() -> int:
    """The process's id: a first call that makes a pool process start, and says which one answered."""
    return os.getpid()


def quiet_child() -> None:
    """A pool process leaves its parent's process group, so a signal to the group (a terminal's Ctrl-C, a
    service manager's stop) reaches the parent only, which stops the crawl and then the pool; a signal
    sent to the process alone stops it as any process (``terminate()``, which the standard library uses
    on the survivors of a broken pool, or an operator's ``kill PID``). It ends when its parent is gone
    (a worker killed with SIGKILL never shuts its pool down).

    It was started with Ctrl-C and SIGTERM blocked (``crawler/worker/textwork.py``): one sent to the
    group before it left is pending, and is dropped here rather than stopping it."""
    os.setpgid(0, 0)
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)  # a pending signal that is ignored is dropped
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
