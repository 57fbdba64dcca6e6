"""Requests of the crawl: what their metadata holds, how they are built from a rule, how they travel
through the shared queue (canonical JSON), and jobs (a set of requests queued together).

Metadata (``request.meta``), read through :class:`Work` only:

==============  ==================================================================================
``site``        the rule's site id (also the download slot: politeness is per site)
``kind``        ``index`` (a rule's start URL or its pagination), ``feed`` (one of its feeds), ``sitemap``
                (one of its sitemaps, or one they list), ``api`` (a page of its JSON API), ``search`` (a
                result page of one of its keywords) or ``article``
``job``         the job that queued it (a temp crawl, a regular grab), or None
``job_kind``    ``temp`` or ``grab``
``page``        index pages: 1 for a start URL, 2 for the page after it, ...; sitemaps: 1 for a rule's,
                2 for one it lists, ...; API and search result pages as index pages
``api_seen``    API pages: the URLs of the pages before it, so that a cursor that loops is seen
``depth``       article pages: 1 when linked from an index page, more when followed from articles; discover
                pages: 0 for a seed, one more per link followed
``boost``       priority over the rule's own (a temp crawl's, a productive site's grab)
``entry``       article pages found in a feed or a news sitemap: what it says of the article's ``title``,
                ``published`` and ``author``
``given``       article pages given by the user (``crawler temp --url``, ``--stored``): fetched whatever the
                seen filter says, their redirects too
``again``       requests of a job that fetches seen URLs again (``crawler temp SITE --again``): the article
                links found on them are queued whatever the seen filter says, once each in the job, and
                their articles are stored in the week that holds their URL
``first_seen``  article pages re-read from the store (``crawler temp --stored``): the ``first_seen`` of the
                stored document, so that the re-read updates it in its week (not a new one in this week's)
``slot``        discover pages: the queue slot of their host (``<site>@<host>``): politeness is per host
``link``        discover pages: the features of the link that led there (the link model learns from them)
``source``      discover pages: the relevance of the page the link was found on
``lease``       the queue member that names the request's lease, set when a worker takes it
``job_counts``  what its page adds to its job's counters (:func:`count_job`), until its acknowledgement
==============  ==================================================================================

Scrapy's own keys travel with a request through the queue too: ``retry_times`` (how often it was retried,
so retries stay bounded whichever worker takes the next try), ``redirect_urls``.

A *job*'s counters live in ``<prefix>:job:<id>`` (``pending``, ``fetched``, ``stored``, ``updated``
(articles whose URLs were stored before), ``skipped``, ``errors``, ``refused`` by the network guard,
``unparsed_published``: pages whose published is no date the crawl recognises, ``again``: article
requests queued though their URLs were seen, by a job that fetches seen URLs again, whose hash has
``fetches_seen`` 1); it is done when ``pending`` is back to zero, whichever workers did the work. Such a
job's article requests are in the set ``<prefix>:job:<id>:again`` (:meth:`Keys.again`), once each. The hash
is made before the job's first push (:func:`open_job`): the crawl writes a job's counts only while its hash
is there, so a late page of a job that ended, whose hash expired, makes it no more. What a page adds to
its job's counters (its ``links``, a listing read, a skip and why: :func:`count_job`) is written by its
acknowledgement, in the script that ends its lease and takes it out of ``pending``: once, though its
reply is lost or Redis was away meanwhile (the acknowledgement is kept and sent again), and never for a
page that ends otherwise (dead-lettered, put back, or fetched again after its worker died): the fetch
acknowledged counts it.
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast
from urllib.parse import urlsplit

import redis
from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from crawler import settings as defaults
from crawler.discover.frontier import slot_of
from crawler.errors import CrawlerError
from crawler.keys import SKIP_PREFIX, Keys
from crawler.redisio import serializer
from crawler.redisio.bloom import QueueTarget, RedisBloom
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded
from crawler.redisio.queue import LeasedQueue
from crawler.rules import Rule
from crawler.rules.model import DiscoverRule

__all__ = [
    "API",
    "ARTICLE",
    "DISCOVER",
    "FEED",
    "INDEX",
    "JOB_FIELDS",
    "LISTING_KINDS",
    "SEARCH",
    "SENT_ONLY_HEADERS",
    "SENT_ONLY_META",
    "SITEMAP",
    "JobCounts",
    "QueueEntryError",
    "Work",
    "WrittenOff",
    "article_request",
    "count_job",
    "decode_request",
    "discover_request",
    "encode_request",
    "end_again",
    "enqueue_job",
    "expired_leases",
    "held_leases",
    "index_request",
    "job_counts",
    "keep_job",
    "leased",
    "listing_request",
    "mark_temp_job",
    "open_job",
    "push",
    "queue_new",
    "redirects",
    "temp_job_ended",
    "temp_job_seeding",
    "unfinished_temp_job",
    "without_lease",
    "write_off_lost",
]

INDEX = "index"
FEED = "feed"
SITEMAP = "sitemap"
API = "api"
SEARCH = "search"
ARTICLE = "article"
DISCOVER = "discover"
# The kinds of page that list a rule's articles (see listing_request).
LISTING_KINDS = frozenset({INDEX, FEED, SITEMAP, API, SEARCH})
JOB_FIELDS = ("pending", "fetched", "stored", "updated", "skipped", "errors", "refused", "reposts", "spooled")


# The kinds a request's meta may name (any other is read as an index page); a tuple, as a meta read from
# the queue may hold any JSON value, which a set could not be asked about.
_KINDS = (ARTICLE, DISCOVER, *sorted(LISTING_KINDS))


class Work(NamedTuple):
    """What a request is for, from its metadata (see the module docstring).

    A named tuple, not a frozen dataclass: the crawl reads a request's Work some 14 times a page, and a
    tuple is made in 0.7 µs where the dataclass took 1.7 (its ``__init__`` sets each of its fields
    through ``object.__setattr__``)."""

    site: str
    kind: str
    job: str | None = None
    job_kind: str | None = None
    page: int = 1
    depth: int = 1
    boost: int = 0
    lease: str | None = None
    retries: int = 0
    slot: str = ""
    given: bool = False
    adapts: bool = False
    again: bool = False

    @classmethod
    def of(cls, request: Request) -> Work:
        get = request.meta.get
        kind, job, job_kind, lease = get("kind"), get("job"), get("job_kind"), get("lease")
        return cls(
            site=str(get("site", "")),
            kind=kind if kind in _KINDS else INDEX,
            job=job if isinstance(job, str) and job else None,
            job_kind=job_kind if isinstance(job_kind, str) else None,
            page=int(get("page", 1)),
            depth=int(get("depth", 1)),
            boost=int(get("boost", 0)),
            lease=lease if isinstance(lease, str) else None,
            retries=int(get("retry_times", 0)),
            slot=str(get("slot") or get("site", "")),
            given=get("given") is True,
            adapts=get("adapts") is True,
            again=get("again") is True,
        )

    @property
    def is_article(self) -> bool:
        return self.kind == ARTICLE

    @property
    def is_feed(self) -> bool:
        return self.kind == FEED

    @property
    def is_sitemap(self) -> bool:
        return self.kind == SITEMAP

    @property
    def is_api(self) -> bool:
        return self.kind == API

    @property
    def is_search(self) -> bool:
        return self.kind == SEARCH

    @property
    def is_discover(self) -> bool:
        return self.kind == DISCOVER

    @property
    def fetched_again(self) -> bool:
        """A page a crawl may fetch though it was fetched before, so one that may have a dead letter of
        its own: a listing page or a discover seed (never deduplicated), a page given by hand or of a job
        that fetches seen URLs again. Any other page's URL was new to the seen filter when it was queued."""
        seed = self.kind == DISCOVER and self.depth == 0
        return self.kind in LISTING_KINDS or self.given or self.again or seed

    @property
    def is_grab(self) -> bool:
        """A request of a regular grab (not of a temp crawl)."""
        return self.job_kind == "grab"


def leased(request: Request, lease: str) -> None:
    """Record in ``request`` the queue member that names its lease."""
    request.meta["lease"] = lease


def index_request(
    rule: Rule,
    url: str,
    *,
    job: str | None = None,
    page: int = 1,
    boost: int = 0,
    job_kind: str | None = None,
    again: bool = False,
) -> Request:
    """A request for one of ``rule``'s index pages (never deduplicated: index pages change). ``boost``
    raises its priority over the rule's own (a temp crawl's, or a productive site's grab); ``again``: of a
    job that fetches seen URLs again."""
    return listing_request(rule, INDEX, url, job=job, page=page, boost=boost, job_kind=job_kind, again=again)


def listing_request(
    rule: Rule,
    kind: str,
    url: str,
    *,
    job: str | None = None,
    page: int = 1,
    seen: Sequence[str] = (),
    boost: int = 0,
    job_kind: str | None = None,
    adapts: bool = False,
    again: bool = False,
) -> Request:
    """A request for a page that lists ``rule``'s articles, of ``kind``: an index page (``page``: 1 for a
    start URL, 2 for the next...), a feed, a sitemap (``page``: 1 for the rule's, 2 for one it lists...),
    a page of its JSON API (``seen``: the URLs of the pages before it in its chain) or a search result
    page. Never deduplicated: such pages change; a step above the rule's priority, and ``boost`` more.
    ``adapts``: the rule's first listing page, whose news in a regular grab adapts the site's revisit
    interval (:mod:`crawler.schedule.revisit`), once a grab. ``again``: of a job that fetches seen URLs
    again."""
    meta = _meta(rule, kind, job, job_kind, page=page, depth=0, boost=boost)
    if adapts:
        meta["adapts"] = True
    if again:
        meta["again"] = True
    headers = rule.headers or None
    if kind == API:
        meta["api_seen"] = list(seen)
        headers = {"Accept": "application/json", **rule.headers}
    return Request(url, meta=meta, headers=headers, priority=rule.priority + boost + 1, dont_filter=True)


def article_request(
    rule: Rule,
    url: str,
    *,
    job: str | None = None,
    depth: int = 1,
    boost: int = 0,
    job_kind: str | None = None,
    entry: Mapping[str, str] | None = None,
    given: bool = False,
    first_seen: str | None = None,
    again: bool = False,
) -> Request:
    """A request for one of ``rule``'s article pages; ``entry``: what a feed's entry says of it; ``given``:
    a page the user asked for (``crawler temp --url``), fetched whatever the seen filter says;
    ``first_seen``: that of its stored document, which it re-reads (``crawler temp --stored``); ``again``:
    of a job that fetches seen URLs again (``crawler temp SITE --again``)."""
    meta = _meta(rule, ARTICLE, job, job_kind, depth=depth, boost=boost)
    if entry:
        meta["entry"] = dict(entry)
    if given:
        meta["given"] = True
    if again:
        meta["again"] = True
    if first_seen is not None:
        meta["first_seen"] = first_seen
    return Request(url, meta=meta, headers=rule.headers or None, priority=rule.priority + boost)


def discover_request(
    rule: Rule,
    url: str,
    *,
    job: str | None,
    job_kind: str | None = None,
    depth: int = 0,
    features: Sequence[int] = (),
    source: float = 0.0,
    priority: int = 0,
) -> Request:
    """A request for a page of ``rule``'s discover crawl: in its host's queue slot; ``features``: those of
    the link that led there, ``source``: the relevance of the page it was on. A seed (depth 0) is
    fetched at every grab; a link found is deduplicated by the frontier."""
    host = (urlsplit(url).netloc or "").lower()
    meta = _meta(rule, DISCOVER, job, job_kind, depth=depth)
    meta["slot"] = meta["download_slot"] = slot_of(rule.site, host)
    if features:
        meta["link"] = list(features)
        meta["source"] = source
    return Request(url, meta=meta, headers=rule.headers or None, priority=priority, dont_filter=True)


def count_job(request: Request, field: str, amount: int = 1) -> None:
    """Add ``amount`` to what ``request``'s page adds to its job's counter ``field`` (no job: nothing),
    written by its acknowledgement (module docstring)."""
    if request.meta.get("job"):
        counts = request.meta.setdefault("job_counts", {})
        counts[field] = counts.get(field, 0) + amount


def job_counts(request: Request) -> tuple[tuple[str, int], ...]:
    """What ``request``'s page adds to its job's counters (:func:`count_job`)."""
    return tuple(request.meta.get("job_counts", {}).items())


def _meta(rule: Rule, kind: str, job: str | None, job_kind: str | None, **extra: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"site": rule.site, "kind": kind, "job": job, "download_slot": rule.site, **extra}
    if job_kind is not None:
        meta["job_kind"] = job_kind
    if not rule.obey_robots:
        meta["dont_obey_robotstxt"] = True
    return meta


# --- through the queue ---------------------------------------------------------------------------------


# What a request picks up on its way out is never queued: its proxy and the proxy's credentials, its
# session's cookies and headers are chosen again for each try, and no secret ever reaches Redis; its
# page's counts for its job (a try handed on counts its own).
SENT_ONLY_META = (
    "job_counts",
    "proxy",
    "_auth_proxy",
    "_scheme_proxy",
    "proxy_id",
    "proxy_sent",
    "session",
    "session_headers",
)
SENT_ONLY_HEADERS = ("Proxy-Authorization", "Cookie", "Authorization")


def encode_request(request: Request, spider: Spider | None = None) -> bytes:
    """``request`` as the queue keeps it: canonical JSON (never pickle), without what was added to send it
    (``SENT_ONLY_META``, ``SENT_ONLY_HEADERS`` and the session's own headers). Callbacks are named by
    method name, so ``spider`` is needed when the request has one."""
    data = request.to_dict(spider=spider)
    meta = data.get("meta") or {}
    dropped = {name.lower() for name in (*SENT_ONLY_HEADERS, *meta.get("session_headers", ()))}
    headers = data.get("headers") or {}
    data["headers"] = {
        name: value
        for name, value in headers.items()
        if (name.decode("latin-1") if isinstance(name, bytes) else name).lower() not in dropped
    }
    data["meta"] = {key: value for key, value in meta.items() if key not in SENT_ONLY_META}
    return serializer.dumps(data)


class QueueEntryError(CrawlerError):
    """A queue entry that is no request of ours: not JSON, not a request, or naming a class or a method
    it may not (the entry is dead-lettered once, never run)."""


def decode_request(member: bytes | str, spider: Spider) -> Request:
    """The request ``member`` encodes; one queued from outside a crawl gets the spider's ``on_error`` as
    its errback, so that a failure still ends its lease. :class:`QueueEntryError` when the entry is no
    request of ours: only plain Scrapy requests are queued (no ``_class``: it would name a class to
    import), with a URL, a site, and callbacks that are the spider's own methods."""
    shown = repr(member[:120])
    try:
        data = serializer.loads(member)
    except (ValueError, UnicodeDecodeError) as exc:
        raise QueueEntryError(f"queue entry {shown} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise QueueEntryError(f"queue entry {shown} is not a request: expected a JSON object")
    if "_class" in data:
        raise QueueEntryError(
            f"queue entry {shown} names the class {data['_class']!r}: only plain requests are queued"
        )
    meta = data.get("meta")
    if (
        not isinstance(data.get("url"), str)
        or not isinstance(meta, dict)
        or not isinstance(meta.get("site"), str)
    ):
        raise QueueEntryError(f"queue entry {shown} has no url or no site: expected a request of a site rule")
    for name in ("callback", "errback"):
        method = data.get(name)
        if method is not None and (not isinstance(method, str) or method.startswith("_")):
            raise QueueEntryError(f"queue entry {shown} has {name} {method!r}: expected a method name")
    if data.get("errback") is None and hasattr(spider, "on_error"):
        data["errback"] = "on_error"
    try:
        return request_from_dict(data, spider=spider)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise QueueEntryError(f"queue entry {shown} is not a request Scrapy can make: {exc}") from None


def push(queue: LeasedQueue, request: Request, spider: Spider | None = None) -> bool:
    """Queue ``request``; False when the very same request is already queued."""
    work = Work.of(request)
    return queue.push(
        encode_request(request, spider), priority=request.priority, site=work.slot, job=work.job
    )


def redirects(request: Request) -> str:
    """The redirects that led to ``request``, in one line: "A redirects to B, which redirects to C"."""
    urls = [*(str(url) for url in request.meta.get("redirect_urls", ())), request.url]
    return " redirects to ".join(urls[:2]) + "".join(f", which redirects to {url}" for url in urls[2:])


def without_lease(request: Request) -> Request:
    """A copy of ``request`` (a retry or a redirect of a leased one) without its old lease, to queue."""
    return request.replace(meta={key: value for key, value in request.meta.items() if key != "lease"})


def queue_new(
    bloom: RedisBloom,
    keys: Keys,
    requests: Sequence[Request],
    fingerprints: Sequence[bytes],
    *,
    again_seconds: int = defaults.SCHEDULE_TEMP_AGAIN_SECONDS,
) -> list[bool]:
    """Queue the requests whose fingerprints the Bloom filter has not seen, marking them seen in the same
    atomic calls (one per site, job and priority; a page's links share them). True for each new one.
    The requests of a job that fetches seen URLs again (meta ``again``) are queued seen or not, each once
    in the job (its set :meth:`Keys.again`, kept ``again_seconds`` after the last call), and marked seen
    as the others."""
    fresh = [False] * len(requests)
    groups: dict[tuple[str, str | None, int, bool], list[int]] = {}
    for index, request in enumerate(requests):
        work = Work.of(request)
        request.dont_filter = True  # tested here: the scheduler's dupefilter passes it
        groups.setdefault((work.slot, work.job, request.priority, work.again), []).append(index)
    for (site, job, priority, again), indices in groups.items():
        target = QueueTarget(
            prefix=keys.prefix,
            pending=keys.pending,
            sequence=keys.sequence,
            job_key=keys.job(job) if job else "",
            site=site,
            job=job,
            priority=priority,
            again=keys.again(job) if again and job else "",
            again_seconds=again_seconds,
        )
        added = bloom.add_and_queue(
            [fingerprints[i] for i in indices], [encode_request(requests[i]) for i in indices], target
        )
        for index, new in zip(indices, added, strict=True):
            fresh[index] = new
    return fresh


# --- jobs ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobCounts:
    """A job's counters: requests pending, pages fetched, articles stored, links skipped (and how many
    for each cause: ``skip_causes``, most first), errors (and how many of each kind), requests refused
    by the network guard, reposts recorded, the articles of
    those stored that went to the store's local spool (MongoDB unreachable), the articles whose URLs
    were stored before (written again, not stored anew: ``updated``), the article links found on its
    pages (``links``, seen already or not), the pages whose ``published`` is no date the crawl recognises
    (``unparsed_published``), the listing pages it read that were queued as the job started or requeued
    since (``listings``: start URLs, feeds, sitemaps, API pages, discover seeds), its requests taken out of
    the queue unfetched (``taken``: ``crawler sites forget``, a demo's leftovers), the article requests it
    queued though their URLs were seen (``again``: ``crawler temp SITE --again``), and the notes the crawl
    left for its summary (a rule's feed that is no feed, a start URL that failed: the ``note:<url>``
    fields). ``errors_fetched``: the errors whose pages were fetched (counted in ``fetched`` too: an
    article the store kept refusing, a body too long); none in a job of a version before it was counted.
    ``unfetched``: the requests of those skipped that ended with no page fetched (robots.txt disallowed
    them, ignored, redirected off the site or to a URL seen already; not the links seen already, never
    queued, nor the pages fetched with no article); none in a job of a version before it was counted."""

    pending: int
    fetched: int
    stored: int
    skipped: int
    errors: int
    refused: int
    reposts: int = 0
    spooled: int = 0
    updated: int = 0
    links: int = 0
    unparsed_published: int = 0
    listings: int = 0
    taken: int = 0
    again: int = 0
    errors_fetched: int = 0
    unfetched: int = 0
    error_kinds: Mapping[str, int] = field(default_factory=dict)
    skip_causes: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @classmethod
    def read(cls, server: redis.Redis, keys: Keys, job: str) -> JobCounts:
        values: dict[str, int] = {}
        notes: dict[str, str] = {}
        for name, value in server.hgetall(keys.job(job)).items():
            text = decoded(value)
            if text.lstrip("-").isdigit():
                values[decoded(name)] = int(text)
            elif decoded(name).startswith("note:"):
                notes[decoded(name)] = text
        kinds = {
            name.removeprefix("error:"): n for name, n in sorted(values.items()) if name.startswith("error:")
        }
        causes = {
            name.removeprefix(SKIP_PREFIX): n for name, n in values.items() if name.startswith(SKIP_PREFIX)
        }
        return cls(
            pending=values.get("pending", 0),
            fetched=values.get("fetched", 0),
            stored=values.get("stored", 0),
            skipped=values.get("skipped", 0),
            errors=values.get("errors", 0),
            refused=values.get("refused", 0),
            reposts=values.get("reposts", 0),
            spooled=values.get("spooled", 0),
            updated=values.get("updated", 0),
            links=values.get("links", 0),
            unparsed_published=values.get("unparsed_published", 0),
            listings=values.get("listings", 0),
            taken=values.get("taken", 0),
            again=values.get("again", 0),
            errors_fetched=values.get("errors_fetched", 0),
            unfetched=values.get("unfetched", 0),
            error_kinds={kind: count for kind, count in kinds.items() if count > 0},
            skip_causes=dict(sorted(causes.items(), key=lambda cause: (-cause[1], cause[0]))),
            notes=tuple(note for _, note in sorted(notes.items())),
        )

    @property
    def tried(self) -> int:
        """The requests of the job tried or to be: its pages fetched, its requests that failed with no
        page fetched (errors), were refused or skipped with none (``unfetched``), and those pending: each
        page the crawl asked for, so that the progress line's ``12/15 pages`` leaves out 3 its errors and
        skips say (a skipped request was left out: 3/3 of 5 asked for, the total going down as each was
        skipped)."""
        return self.fetched + self.errors - self.errors_fetched + self.refused + self.unfetched + self.pending

    @property
    def unstored(self) -> int:
        """Pages fetched whose articles the store kept refusing (errors of kind ``store``)."""
        return self.error_kinds.get("store", 0)


def unfinished_temp_job(server: redis.Redis, keys: Keys, site: str, *, again: bool = False) -> str | None:
    """The job of ``site``'s last temp crawl of the whole site while it has requests pending or is not
    queued in full (``seeding``: :func:`enqueue_job`'s ``temp_of``) (that crawl was killed or stopped before
    its end, or runs still), if it fetches seen URLs again as ``again`` asks (``crawler temp SITE
    --again``), else None."""
    last = server.get(keys.temp(site))
    if last is None:
        return None
    job = decoded(last)
    if server.hexists(keys.job(job), "fetches_seen") != again:
        return None
    if temp_job_seeding(server, keys, job):
        return job
    return job if JobCounts.read(server, keys, job).pending > 0 else None


def temp_job_seeding(server: redis.Redis, keys: Keys, job: str) -> bool:
    """The temp crawl that queued ``job`` stopped before all was queued (:func:`enqueue_job`'s
    ``temp_of``): queueing it again queues the rest."""
    return bool(server.hexists(keys.job(job), "seeding"))


def end_again(server: redis.Redis, keys: Keys, job: str) -> None:
    """Delete the set of the article requests ``job``, which fetched seen URLs again, queued: it ended."""
    server.delete(keys.again(job))


def held_leases(server: redis.Redis, keys: Keys, job: str, now: float) -> list[float]:
    """The deadlines of the leases of ``job``'s requests that have not expired at ``now`` (epoch seconds, by
    Redis's clock, which sets them): held by a worker that runs, or by one killed, until they expire and go
    back to the queue."""
    return _lease_deadlines(server, keys, job, f"({now}", "+inf")


def expired_leases(server: redis.Redis, keys: Keys, job: str, now: float) -> int:
    """How many leases of ``job``'s requests are past their deadline at ``now`` (epoch seconds, by Redis's
    clock): their worker was killed, and they wait for a live worker to put them back in the queue."""
    return len(_lease_deadlines(server, keys, job, "-inf", now))


def _lease_deadlines(
    server: redis.Redis, keys: Keys, job: str, low: float | str, high: float | str
) -> list[float]:
    """The deadlines of the leases of ``job``'s requests between ``low`` and ``high`` (scores)."""
    deadlines = []
    leases = server.zrangebyscore(keys.leases, low, high, withscores=True)
    for member, deadline in cast("list[tuple[bytes, float]]", leases):
        try:
            request = serializer.loads(member)
        except ValueError:
            continue  # no request of ours: dead-lettered when taken again
        meta = request.get("meta") if isinstance(request, dict) else None
        if isinstance(meta, dict) and meta.get("job") == job:
            deadlines.append(float(deadline))
    return deadlines


class WrittenOff(NamedTuple):
    """The requests :func:`write_off_lost` wrote off: those the site counted pending (``crawler:pending``),
    and those its last jobs counted, each count as it was (either may be 0: the site's count deleted, a
    job's hash expired)."""

    site: int
    jobs: int


def write_off_lost(server: redis.Redis, keys: Keys, site: str) -> WrittenOff | None:
    """When Redis holds none of the requests ``site`` counts pending (:meth:`LeasedQueue.lost`: lost with
    its queue key, or with a Redis restarted from an older snapshot), write their counts off, the site's
    and its last grab's and last temp crawl's jobs' (which would otherwise wait for them for ever); how
    many each counted, None when neither counted any or Redis holds one."""
    with server.pipeline(transaction=False) as pipe:
        pipe.hget(keys.grab(site), "job")
        pipe.get(keys.temp(site))
        # A key of another type (someone SET it) names no job: `crawler status` names the key.
        named = [job for job in pipe.execute(raise_on_error=False) if isinstance(job, bytes)]
    lost = LeasedQueue(server, keys).lost(site, write_off=True, jobs=[decoded(job) for job in named])
    return None if lost is None or not any(lost) else WrittenOff(*lost)


def mark_temp_job(server: redis.Redis, keys: Keys, job: str, *, ended: bool) -> None:
    """Record that a temp crawl saw ``job`` end (nothing pending), or that one goes on with it (its hash
    kept while it runs: :func:`keep_job` gave it a time-to-live when it last ended)."""
    if ended:
        server.hset(keys.job(job), "ended", f"{shared_now():.3f}")
    else:
        pipe = server.pipeline()
        pipe.hdel(keys.job(job), "ended")
        pipe.persist(keys.job(job))
        pipe.execute()


def keep_job(server: redis.Redis, keys: Keys, job: str, hours: float) -> None:
    """``job`` ended: its hash (counts, notes) expires after ``hours`` (SCHEDULE_JOB_KEEP_HOURS)."""
    server.expire(keys.job(job), max(int(hours * 3600), 1))


def temp_job_ended(server: redis.Redis, keys: Keys, job: str) -> bool:
    """A temp crawl saw ``job`` end: what it has pending now are dead letters requeued since."""
    return bool(server.hexists(keys.job(job), "ended"))


def take_leftovers(
    queue: LeasedQueue, sites: Iterable[str], *, held: Callable[[redis.Redis], bool]
) -> dict[str, dict[str, int]] | None:
    """Take the requests of ``sites`` out of the queue (:meth:`LeasedQueue.take_sites`: queued, waiting,
    leased; None, nothing taken, when ``held`` says a worker alive may hold them), each ended in its job;
    the members taken, each with its attempts so far, by the origin of their URL
    (``http://127.0.0.1:8631``)."""
    by_site = queue.take_sites(sites, held=held)
    if by_site is None:
        return None
    taken: dict[str, dict[str, int]] = {}
    for members in by_site.values():
        for member, attempts in members.items():
            try:
                parts = urlsplit(str(serializer.loads(member).get("url", "")))
            except (ValueError, UnicodeDecodeError, AttributeError):
                parts = urlsplit("")
            taken.setdefault(f"{parts.scheme}://{parts.netloc}", {})[member] = attempts
    return taken


def queue_in_job(queue: LeasedQueue, members: Mapping[str, int], job: str | None = None) -> int:
    """Queue ``members`` (taken out of the queue: :func:`take_leftovers`, with their attempts so far,
    which go on counting) again as requests of ``job`` (None: each of its own job, as it was); how many
    went in (a request queued already is queued once)."""
    added = 0
    for member, attempts in members.items():
        data = serializer.loads(member)
        meta = data["meta"]
        if job is not None:
            meta["job"] = job
        slot = str(meta.get("download_slot") or meta["site"])
        added += queue.push(
            serializer.dumps(data),
            priority=int(data.get("priority", 0)),
            site=slot,
            job=meta.get("job"),
            attempts=attempts,
        )
    return added


def open_job(server: redis.Redis, keys: Keys, job: str) -> None:
    """Make ``job``'s hash (its ``created`` time, kept when it has one), before its first push: a job
    counts its requests only while its hash is there (:data:`crawler.redisio.queue.SITE_LUA`'s
    ``job_kept``), so that a late page of a job that ended, whose hash expired, makes it no more."""
    # Rounded down: an article the job stores in the same millisecond is not "first seen before its job".
    server.hsetnx(keys.job(job), "created", f"{math.floor(shared_now() * 1000) / 1000:.3f}")


def enqueue_job(
    server: redis.Redis,
    keys: Keys,
    rules: Iterable[Rule],
    *,
    article_urls: Iterable[str] = (),
    stored: Iterable[tuple[str, str]] | None = None,
    lease_seconds: float = 60.0,
    job: str | None = None,
    kind: str = "temp",
    boost: int = 0,
    again: bool = False,
    temp_of: str | None = None,
) -> str:
    """Queue a job: each rule's start URLs as index pages, its feeds, sitemaps, API and search pages, its
    discover seeds, or, when
    ``article_urls`` or ``stored`` are given (one rule then), those pages alone as article pages
    (``stored``: the URL and ``first_seen`` of stored documents to re-read, taken one at a time, so that
    any number of them is queued in bounded memory). ``kind`` is ``temp``
    (a crawl asked for now) or ``grab`` (a regular grab of the schedule); ``boost`` raises the priority
    of its requests (and of the article requests they lead to) over the rule's own; ``again``: the
    article links of its listing pages are fetched even when their URLs were seen before, once each in
    the job (its hash has ``fetches_seen`` 1); ``temp_of``: the job is that site's last temp crawl of the
    whole site, recorded with the job's hash, ``seeding`` in it, before anything is queued, and ``seeding``
    cleared once all is (:func:`unfinished_temp_job`: a crawl killed while it queued leaves a job the next
    one goes on with, never requests of a job no crawl knows). Returns the job id (a
    new one unless given: queueing a job again adds nothing, since the queue stores an identical request
    once)."""
    job = job or uuid.uuid4().hex[:12]
    rules = list(rules)
    with server.pipeline(transaction=True) as pipe:
        if temp_of is not None:
            pipe.set(keys.temp(temp_of), job)
            pipe.hset(keys.job(job), "seeding", 1)
        pipe.hset(keys.job(job), mapping={"sites": ",".join(rule.site for rule in rules), "kind": kind})
        if again:
            pipe.hset(keys.job(job), "fetches_seen", 1)
        pipe.execute()
    open_job(server, keys, job)
    queue = LeasedQueue(server, keys, lease_seconds=lease_seconds)
    urls = list(article_urls)
    for rule in rules:
        queue.configure(
            rule.site,
            delay=rule.delay,
            concurrency=rule.concurrency,
            obey_robots=rule.obey_robots,
            hosts=rule.discover is not None,
        )
        if urls or stored is not None:
            for url in urls:
                push(queue, article_request(rule, url, job=job, boost=boost, job_kind=kind, given=True))
            requests = (
                article_request(rule, url, job=job, boost=boost, job_kind=kind, given=True, first_seen=seen)
                for url, seen in stored or ()
            )
            while batch := list(itertools.islice(requests, STORED_BATCH)):
                queue.push_many((encode_request(r), r.priority, Work.of(r).slot, job) for r in batch)
        else:
            firsts = [
                *((INDEX, url) for url in rule.start_urls),
                *((FEED, url) for url in rule.feeds),
                *((SITEMAP, url) for url in rule.sitemaps),
                *((API, url) for url in (rule.api.urls if rule.api else ())),
                *((SEARCH, url) for url in (rule.search.urls() if rule.search else ())),
            ]
            for number, (page_kind, url) in enumerate(firsts):
                request = listing_request(
                    rule, page_kind, url, job=job, boost=boost, job_kind=kind, adapts=number == 0, again=again
                )
                push(queue, request)
            if rule.discover is not None:
                _enqueue_seeds(server, keys, queue, rule, rule.discover, job, kind)
    if temp_of is not None:
        server.hdel(keys.job(job), "seeding")
    return job


# Stored pages queued per round trip to Redis (crawler temp --stored): 20,000 pushed one by one took 67 s
# on these machines, most of it waiting on the round trips.
STORED_BATCH = 500


def _enqueue_seeds(
    server: redis.Redis,
    keys: Keys,
    queue: LeasedQueue,
    rule: Rule,
    discover: DiscoverRule,
    job: str,
    kind: str,
) -> None:
    """A discover crawl's seeds, each in its host's slot, counted against the job's page budget (the
    frontier releases the rest of it: crawler.discover.frontier), a seed named twice once. The job's
    ``seeded`` says how many of them (in order) were queued, written with each one's count: a job queued
    again (its queueing cut short: ``seeding``) goes on from there, and a seed fetched meanwhile is
    neither queued nor counted again; the one whose count the cut lost, queued, is counted then."""
    key = keys.job(job)
    server.hset(key, "budget", discover.budget)
    seeded = int(server.hget(key, "seeded") or 0)
    seeds = list(dict.fromkeys(discover.seeds[: discover.budget]))
    for number, url in enumerate(seeds[seeded:], seeded + 1):
        request = discover_request(rule, url, job=job, job_kind=kind, priority=rule.priority + 1)
        slot = Work.of(request).slot
        queue.configure(slot, delay=rule.delay, concurrency=rule.concurrency, obey_robots=rule.obey_robots)
        push(queue, request)
        with server.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "issued", 1)
            pipe.hset(key, "seeded", number)
            pipe.execute()
