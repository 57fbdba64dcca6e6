"""The dead letters: requests that ended in an error (after their retries), kept with the reason, until a
person puts them back in the queue (``crawler dead requeue``) or drops them (``crawler dead drop``).

Each is a queue member (the request's JSON) in the hash ``<prefix>:dead``, with a record: the reason, the
URL, site, job, when and which worker. An entry that was no request at all (not JSON, a class to import)
is kept the same way, with no site; it can be dropped, not requeued. A Bloom filter cannot forget: the URL
of a dropped article page stays seen, so only a page given by hand (``crawler temp SITE --url URL``) fetches
it again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from crawler.errors import redacted, redacted_text
from crawler.redisio import serializer
from crawler.redisio.queue import DeadRequeue, LeasedQueue

__all__ = ["DeadLetter", "dead_letter_pages", "dead_letters", "requeue"]

# The kinds of request (crawler.requests, which this layer may not import) whose URLs a crawl marks seen
# in the Bloom filter as it queues them; listing pages are never deduplicated.
_SEEN_KINDS = ("article", "discover")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead letter; ``id`` (12 hex digits of the member's SHA-1) names it on the command line."""

    id: str
    member: str
    reason: str
    kind: str | None  # what kind of error: "HTTP 404", "timeout", "challenge page", ...
    url: str | None
    site: str | None
    job: str | None
    at: float | None
    worker: str | None
    priority: int | None  # None: no request (it cannot be requeued)
    fetched: bool = False  # its job counted its page fetched as it died: a requeue takes that back
    seen: bool = False  # a page found by a crawl, its URL in the Bloom filter: never queued by a crawl again

    @property
    def shown_url(self) -> str | None:
        """The URL as ``crawler dead list`` shows it: its secrets masked (:func:`redacted`); ``url``, as
        requested, is the one a requeue fetches."""
        return None if self.url is None else redacted(self.url)

    @property
    def shown_reason(self) -> str:
        """The reason with the secrets of its URLs masked (a record kept before they were)."""
        return redacted_text(self.reason)

    def document(self) -> dict[str, Any]:
        """The dead letter as ``crawler dead list --format json`` shows it."""
        return {
            "id": self.id,
            "url": self.shown_url,
            "site": self.site,
            "job": self.job,
            "reason": self.shown_reason,
            "kind": self.kind,
            "at": self.at,
            "worker": self.worker,
            "requeueable": self.priority is not None,
        }


def dead_letters(queue: LeasedQueue) -> list[DeadLetter]:
    """Every dead letter, oldest first."""
    letters = [_letter(member, record) for member, record in queue.dead().items()]
    return sorted(letters, key=lambda letter: (letter.at or 0.0, letter.id))


def dead_letter_pages(queue: LeasedQueue) -> Iterator[list[DeadLetter]]:
    """Every dead letter, a page (one HSCAN call, about DEAD_SCAN_COUNT) at a time, in the hash's order:
    what a command that goes through 100,000 of them holds at once is a page. A letter HSCAN gives twice
    (the hash resized between two pages) comes once."""
    given: set[str] = set()
    for page in queue.dead_pages():
        letters = [_letter(member, record) for member, record in page.items()]
        fresh = [letter for letter in letters if letter.id not in given]
        given.update(letter.id for letter in fresh)
        yield fresh


def requeue(queue: LeasedQueue, letters: Iterable[DeadLetter]) -> tuple[int, list[DeadLetter]]:
    """Put ``letters`` back in the queue, their retries anew (their jobs count them pending again, one
    error fewer, and one page fetched fewer for those counted fetched), in one round trip (a pipeline:
    give a page of :func:`dead_letter_pages` at a time); how many went back, and those that are no
    request (left as they are)."""
    refused: list[DeadLetter] = []
    back: list[DeadRequeue] = []
    for letter in letters:
        if letter.priority is None or letter.site is None:
            refused.append(letter)
            continue
        back.append(
            DeadRequeue(
                letter.member,
                priority=letter.priority,
                site=letter.site,
                job=letter.job,
                kind=letter.kind,
                fetched=letter.fetched,
                queued=_retried_anew(letter.member),
            )
        )
    return sum(queue.requeue_dead_many(back)) if back else 0, refused


def _retried_anew(member: str) -> str | bytes:
    """The dead letter's request with Scrapy's count of its retries taken out (``retry_times``): requeued,
    it is tried ``RETRY_TIMES`` more times, as a request never tried is, not failed at its first error."""
    request = _request(member)
    meta = request.get("meta") if request is not None else None
    if request is None or not isinstance(meta, dict) or not meta.get("retry_times"):
        return member
    return serializer.dumps(
        {**request, "meta": {key: value for key, value in meta.items() if key != "retry_times"}}
    )


def _letter(member: str, record_text: str) -> DeadLetter:
    try:
        record = json.loads(record_text)
    except ValueError:
        record = {"reason": record_text}
    if not isinstance(record, dict):
        record = {"reason": str(record)}
    request = _request(member)
    meta = request.get("meta") if request is not None else None
    site = meta.get("site") if isinstance(meta, dict) else None
    job = meta.get("job") if isinstance(meta, dict) else None
    priority = request.get("priority", 0) if request is not None and isinstance(site, str) else None
    at = record.get("at")
    return DeadLetter(
        id=hashlib.sha1(member.encode("utf-8")).hexdigest()[:12],
        member=member,
        reason=str(record.get("reason") or "no reason recorded"),
        kind=str(record["kind"]) if record.get("kind") else None,
        url=request.get("url") if request is not None and isinstance(request.get("url"), str) else None,
        site=site if isinstance(site, str) else None,
        job=job if isinstance(job, str) else None,
        at=float(at) if isinstance(at, int | float) else None,
        worker=str(record["worker"]) if record.get("worker") else None,
        priority=int(priority) if isinstance(priority, int) else None,
        fetched=record.get("fetched") is True,
        seen=isinstance(meta, dict) and meta.get("kind") in _SEEN_KINDS and meta.get("given") is not True,
    )


def _request(member: str) -> dict[str, Any] | None:
    """The member as a request's JSON, or None when it is none (a poison entry)."""
    try:
        data = serializer.loads(member)
    except ValueError:
        return None
    if not isinstance(data, dict) or "_class" in data:
        return None
    return data
