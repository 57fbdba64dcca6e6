"""The article item: what the spider gives for an article page and the pipelines complete, stored as the
document of :mod:`crawler.store.document` (which lists every stored field).

It is a dataclass (Scrapy's ``itemadapter`` takes it). The page itself travels with it for the qRead
fallback (:attr:`Article.page`) but is never stored, logged or shown in its ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Article", "Discovered", "Page"]


@dataclass(frozen=True, slots=True)
class Page:
    """The article page as the spider read it: its decoded text and the rule's minimum body length; for a
    PDF or DOCX document, its bytes (its text is read in a text process); for a discover crawl's page, the
    web encoding it was read in (its links' queries are written in it), else ``utf-8`` (unread: an article
    page of a rule's crawl has no links taken by the text pipeline)."""

    html: str
    min_body_chars: int
    document: bytes | None = None
    encoding: str = "utf-8"


@dataclass(slots=True)
class Discovered:
    """What a page of a discover crawl brings beside its article: how it was reached (its ``depth``, the
    ``features`` of the link that led there, the relevance of the page that link was on, its ``host``;
    the URLs its request was redirected from are the article's ``redirected_from``), then, once its text
    is read, its relevance to the topic (``score``, ``why``) and its links (URL, anchor text, context
    text)."""

    depth: int
    features: tuple[int, ...]
    source: float
    host: str
    score: float | None = None
    why: str | None = None
    links: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Article:
    """One article page's item (see the module docstring)."""

    site: str
    url: str
    fetched_at: str
    title: str | None = None
    body: str | None = None
    published: str | None = None
    author: str | None = None
    fields: dict[str, str | None] = field(default_factory=dict)
    job: str | None = None
    extraction: dict[str, Any] | None = None
    summary: dict[str, str] | None = None
    # The URLs its request was redirected from, first the one asked for (Scrapy's redirect_urls).
    redirected_from: tuple[str, ...] = ()
    # The first fetch of its stored document, when its page was re-read from the store (``crawler temp
    # --stored``): the store updates that document in its own week; None: ``fetched_at``.
    first_seen: str | None = None
    # A page of a job that fetches seen URLs again (``crawler temp SITE --again``) with no ``first_seen``:
    # the store pipeline looks its URL up in every week, so that a document stored weeks ago is updated
    # in its own week (a write looks in its week and the week before only).
    find_week: bool = field(default=False, repr=False, compare=False)
    page: Page | None = field(default=None, repr=False, compare=False)
    # The body's content hash and SimHash when the text pool computed them (the store computes them
    # otherwise); None until then.
    fingerprints: tuple[str | None, str | None] | None = field(default=None, repr=False, compare=False)
    # A page of a discover crawl: how it was reached and what it holds (never stored as such).
    discover: Discovered | None = field(default=None, repr=False, compare=False)
    # Stored in the store's local spool, not in MongoDB yet (unreachable): set by the StorePipeline.
    spooled: bool = field(default=False, repr=False, compare=False)
    # Its URL was stored before its crawl job (the store updated it, or kept a newer fetch): set by the
    # StorePipeline.
    stored_before: bool = field(default=False, repr=False, compare=False)
    # Its URL's document was its own job's, found there: written again (Redis restored from an older
    # snapshot, an acknowledgement lost, a batch stored in part): set by the StorePipeline.
    job_wrote_before: bool = field(default=False, repr=False, compare=False)
    # What the item pipelines add to its job's counters, handed to its page's request as they end with it
    # (crawler.worker.leaseack), which its acknowledgement writes (crawler.requests.count_job).
    job_counts: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def count_job(self, name: str) -> None:
        """Add 1 to its job's counter ``name`` (no job: nothing), written with its page's acknowledgement."""
        if self.job:
            self.job_counts[name] = self.job_counts.get(name, 0) + 1

    def document(self) -> dict[str, Any]:
        """The fields the store keeps (the page left out)."""
        return {
            "site": self.site,
            "url": self.url,
            "fetched_at": self.fetched_at,
            "title": self.title,
            "body": self.body,
            "published": self.published,
            "author": self.author,
            "fields": self.fields,
            "job": self.job,
            "extraction": self.extraction,
            "summary": self.summary,
            "redirected_from": list(self.redirected_from),
            "first_seen": self.first_seen,
        }
