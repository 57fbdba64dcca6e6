"""A worker's part in discover crawls (see docs/discover.md): each discover rule's topic, link model and
frontier, and what a fetched page teaches them.

For each page of a discover crawl, once its item is done (stored, dropped: not relevant, a repost, no
body; or refused), never while its store is deferred (:meth:`Discovery.settle`, from
:mod:`crawler.worker.leaseack`): a page fetched again because its store failed teaches, keeps and counts
once, and the page its request was redirected to is not left seen by a store that failed. Redis failing
partway defers its request; read again, the page of the same lease teaches, keeps and counts only what it
had not (its record in Redis, see :mod:`crawler.discover.frontier`):

1. **learn**: the link model learns that the features of the link that led to the page predict its
   label (relevant: a score at the rule's ``threshold`` or over); the page's host counts one relevant or
   irrelevant page for the bandit;
2. **keep**: its links that the crawl follows (:func:`~crawler.discover.links.followed_links`: host
   within ``domains``, not in ``deny_domains``, depth within ``max_depth``, not the page itself nor a
   seed; ``crawler rules try`` shows the same) get their features and the model's value, and the new
   ones are kept in the frontier (through the Bloom filter, in one call); a page its request was
   redirected to (and each URL on the way after the first) is marked seen in the Bloom filter too, as a
   link kept is: a link to it elsewhere is not fetched again (a seed is never marked);
3. **refill**: just before the page's lease ends (acknowledged once its article is stored or dropped,
   or dead-lettered: :data:`~crawler.worker.scheduler.leases_ending`), the job's requests in the queue
   are topped up to ``DISCOVER_QUEUE_TARGET`` from the frontier, the bandit choosing the host of each
   request, within the job's page budget (a request may wait for the links of a host whose pages are
   pending while the job has other requests pending); before it, at most once a ``PRUNE_SECONDS`` per
   rule and worker, the hosts untouched for ``DISCOVER_HOST_KEEP_DAYS`` lose their entries in Redis, a
   batch of them (:meth:`~crawler.discover.frontier.Frontier.prune`), counted in
   ``discover/hosts_expired/<site>``.

Every lease of a discover request refills so before it ends (a page read, failed, refused or no text),
counting itself and the leases ending with it as ended: the last page of a job to end sees the frontier
with its own links, so a job counts nothing pending only when its budget is spent or its frontier is
empty. An idle worker refills too (after Redis failed under a refill): a temp crawl its own job, from
the rules of the job's sites alone; any other worker the jobs it refilled last. The model's time (features,
update, predictions; the crawl thread's CPU time, which the text processes beside it do not inflate) is
counted in ``discover/model_microseconds/<site>`` and ``discover/model_pages/<site>``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Self
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

import redis
from scrapy import Request, signals
from scrapy.crawler import Crawler

from crawler.discover.frontier import Entry, Frontier
from crawler.discover.links import followed_links, link_features
from crawler.discover.shared import SharedModel
from crawler.discover.topic import Topic
from crawler.errors import StoreError
from crawler.items import Article, Discovered
from crawler.redisio.connection import decoded
from crawler.requests import Work, discover_request, encode_request
from crawler.rules import Rule
from crawler.rules.model import LEARNED, DiscoverRule
from crawler.store import open_store
from crawler.worker.connection import keys_of, outage_of, server_of
from crawler.worker.dupefilter import bloom_of

__all__ = ["Discovery", "discovery_of", "is_relevant"]

logger = logging.getLogger(__name__)

# Links a worker remembers having put through the Bloom filter (about 100 bytes each): the menus, boxes and
# related links of the pages of the hosts it crawls lately.
KNOWN_LINKS = 100_000
# How long a page's record (what it taught, kept and counted) is kept at least: its request read again
# after Redis failed under it (deferred, or its lease expired) finds it.
RECORD_SECONDS = 3600
# Choices of hosts a refill makes at most (see Frontier.release: a host whose best link lost its value is
# left for the next choice).
REFILL_ROUNDS = 3
# Seconds between two prunes of a rule's idle hosts by one worker: a call of a batch of
# crawler.discover.frontier.PRUNE_BATCH hosts (up to about 10 ms of Redis), 36,000 hosts an hour a worker,
# more than a worker meets (the generated web: 400 hosts known in 1,200 pages, 70 s).
PRUNE_SECONDS = 10.0


class Discovery:
    """The discover rules' topics, models and frontiers of one worker (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.server = server_of(crawler)
        self.keys = keys_of(crawler)
        settings = crawler.settings
        self.queue_target = settings.getint("DISCOVER_QUEUE_TARGET")
        self.sync_pages = settings.getint("DISCOVER_SYNC_PAGES")
        self.per_host = settings.getint("DISCOVER_FRONTIER_PER_HOST")
        self.keep_seconds = max(1, round(settings.getfloat("DISCOVER_HOST_KEEP_DAYS") * 86400))
        # Per discover rule, when this worker last pruned its idle hosts (time.monotonic()).
        self._pruned: dict[str, float] = {}
        self.example_articles = settings.getint("DISCOVER_EXAMPLE_ARTICLES")
        self.url_limit = settings.getint("URLLENGTH_LIMIT")
        # A page's record outlives the tries of its request (see Frontier.settle).
        self.record_seconds = max(
            RECORD_SECONDS,
            int(2 * settings.getfloat("STORE_RETRY_SECONDS") * settings.getint("STORE_MAX_ATTEMPTS")),
        )
        self.worker = uuid.uuid4().hex[:12]
        self._topics: dict[str, Topic] = {}
        self._models: dict[str, SharedModel] = {}
        self._frontiers: dict[str, Frontier] = {}
        # Discover jobs this worker refilled and that may want more (job -> site).
        self._jobs: dict[str, str] = {}
        # Links this worker put through the Bloom filter lately, oldest first: seen, whatever the filter
        # said then (a page's menu and boxes come again page after page; their features are not made again).
        self._known: dict[str, None] = {}
        # The fingerprints of each discover rule's seeds (site -> its seeds and their fingerprints).
        self._seeds: dict[str, tuple[tuple[str, ...], frozenset[bytes]]] = {}
        self._bloom = bloom_of(crawler)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def rule(self, site: str) -> Rule | None:
        """The discover rule of ``site``, None when the spider has no such rule (or it is no discover
        rule)."""
        spider = self.crawler.spider
        rule = spider.rule_of(site) if spider is not None and hasattr(spider, "rule_of") else None
        return rule if rule is not None and rule.discover is not None else None

    def topic(self, site: str) -> Topic | None:
        """The topic of ``site``'s discover rule, built on first use: its keywords, its example files, and
        the latest ``DISCOVER_EXAMPLE_ARTICLES`` stored articles of its example sites."""
        topic = self._topics.get(site)
        rule = self.rule(site)
        if topic is not None or rule is None:
            return topic
        assert rule.discover is not None
        examples = [*rule.discover.examples, *self._stored_examples(rule.discover)]
        topic = self._topics[site] = Topic.build(rule.discover.keywords, examples)
        logger.info(
            "%s: discover topic of %s (%d examples)",
            site,
            topic.summary,
            len(examples),
        )
        return topic

    def _stored_examples(self, discover: DiscoverRule) -> list[str]:
        if not discover.example_sites:
            return []
        texts: list[str] = []
        try:
            with open_store(self.crawler.settings) as store:
                for site in discover.example_sites:
                    texts.extend(
                        f"{document.get('title') or ''}\n{document['body']}"
                        for document in store.iter_articles(site=site, limit=self.example_articles)
                        if document.get("body")
                    )
        except StoreError as exc:
            logger.warning("Discover topic: the stored examples cannot be read (%s): keywords only", exc)
        return texts

    def model(self, site: str) -> SharedModel:
        model = self._models.get(site)
        if model is None:
            model = self._models[site] = SharedModel(
                self.server, self.keys, site, self.worker, sync_every=self.sync_pages
            )
            model.load()
        return model

    def closed(self) -> None:
        """The crawl stopped: each link model shares what it learnt since its last sync (a crawl of fewer
        pages than a sync would keep nothing of it for the next crawl), and deletes its mark of numbered
        shares (crawler.redisio.once); Redis failing is counted."""
        for site, model in self._models.items():
            try:
                model.close()
            except redis.RedisError as exc:
                outage_of(self.crawler).failed(f"share the link model of {site}'s discover crawl", exc)

    def frontier(self, rule: Rule) -> Frontier:
        frontier = self._frontiers.get(rule.site)
        if frontier is None:
            assert rule.discover is not None
            frontier = self._frontiers[rule.site] = Frontier(
                self.server,
                self.keys,
                rule.site,
                strategy=rule.discover.strategy,
                per_host=self.per_host,
                keep_seconds=self.keep_seconds,
                keep_asked=self.crawler.settings.getfloat("ROBOTS_MAX_AGE_SECONDS"),
            )
        return frontier

    def settle(self, article: Article, lease: str | None = None) -> None:
        """``article``'s item is done (see the module docstring): its page of a discover crawl, if it is
        one and its rule is still a discover rule, teaches and keeps its links (:meth:`page`; ``lease``:
        its request's). Raises ``redis.RedisError`` when Redis fails."""
        page = article.discover
        rule = self.rule(article.site) if page is not None else None
        if page is not None and rule is not None:
            self.page(rule, page, article.url, article.job, lease, article.redirected_from)

    def page(
        self,
        rule: Rule,
        page: Discovered,
        url: str,
        job: str | None = None,
        lease: str | None = None,
        redirected_from: Sequence[str] = (),
    ) -> None:
        """The page at ``url`` of ``rule``'s discover crawl (of ``job``, its request's lease ``lease``;
        reached through redirects from ``redirected_from``, first the URL asked for) was read: learn, keep
        its links (steps 1 and 2 of the module docstring); its links seen already are counted in the job's
        ``links_seen``. Raises ``redis.RedisError`` when Redis fails: read again (its request deferred),
        the page of the same lease teaches, keeps and counts what it did not yet, once (its record in
        Redis: :meth:`~crawler.discover.frontier.Frontier.settle`)."""
        discover = rule.discover
        assert discover is not None
        frontier = self.frontier(rule)
        record = frontier.record(lease)
        with self.server.pipeline(transaction=True) as pipe:
            pipe.hsetnx(record, "learnt", 1)
            pipe.expire(record, self.record_seconds)
            pipe.hexists(record, "settled")
            first, _, settled = pipe.execute()
        if settled:
            return
        score = page.score or 0.0
        relevant = is_relevant(discover, score)
        fingerprinter = self.crawler.request_fingerprinter
        seeds = self._seed_fingerprints(rule)
        if redirected_from:
            reached = (fingerprinter.fingerprint(Request(link)) for link in (*redirected_from[1:], url))
            self._bloom.add_many([mark for mark in reached if mark not in seeds])
        followed = followed_links(
            discover,
            url,
            page.depth,
            page.links,
            lambda link: fingerprinter.fingerprint(Request(link)),
            seeds,
            self._known,
            self.url_limit,
        )
        started = time.thread_time()
        # 1. Learn (once: not again when read again after Redis failed).
        model = self.model(rule.site)
        learns = bool(first) and bool(page.features)
        if learns:
            model.model.learn(page.features, 1.0 if relevant else 0.0)
        # 2. Keep (the features and values of its links).
        depth = page.depth + 1
        entries: list[Entry] = []
        for (link, anchor, context), parts, _ in followed.links:
            features = link_features(link, anchor, context, score, depth, parts)
            entries.append(Entry(link, depth, tuple(features), score, model.model.value(features)))
        spent = time.thread_time() - started
        self._count(f"discover/model_microseconds/{rule.site}", int(spent * 1e6))
        self._count(f"discover/model_pages/{rule.site}")
        if learns:
            model.learnt()
        hosts = [parts.netloc.lower() for _, parts, _ in followed.links]
        fingerprints = [fingerprint for _, _, fingerprint in followed.links]
        frontier.keep(self._bloom, fingerprints, hosts, entries, record, self.record_seconds)
        found = len(entries) + followed.seen
        job_key = self.keys.job(job) if job is not None else ""
        kept = frontier.settle(record, page.host, relevant, found, job_key, self.record_seconds)
        if kept is None:
            return
        self._known.update(dict.fromkeys(entry.url for entry in entries))
        while len(self._known) > KNOWN_LINKS:
            del self._known[next(iter(self._known))]
        self._count(f"discover/{'relevant' if relevant else 'irrelevant'}/{rule.site}")
        self._count(f"discover/links_kept/{rule.site}", kept)
        self._count(f"discover/links_seen/{rule.site}", found - kept)
        self._count(f"discover/links_refused/{rule.site}", followed.refused)

    def gave_nothing(self, site: str, url: str) -> None:
        """A request of ``site``'s discover crawl to ``url`` spent its budget and read no page: it failed
        for good (an HTTP error, a timeout, ...), or it was redirected to a page the crawl reads anyway
        (skipped). Its host counts a page that gave nothing for the bandit, so a host that keeps failing,
        or whose links lead back to pages read already, fades as one that gives nothing does. Redis
        failing is counted."""
        rule = self.rule(site)
        if rule is None:
            return
        try:
            self.frontier(rule).reward((urlsplit(url).netloc or "").lower(), relevant=False)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"count a page of {site}'s discover crawl that gave nothing", exc)

    def disallowed(self, site: str, job: str, lease: str | None, url: str) -> None:
        """A request of ``site``'s discover crawl (of ``job``, its lease ``lease``) to ``url`` was never
        fetched: robots.txt disallows it. Its job gets its budget back, and its host counts a page that
        gave nothing for the bandit (a host whose links robots.txt disallows fades, rather than win draw
        after draw with an untouched record); both once, its record in Redis: the request read again after
        its lease expired gets nothing more. The refill as its lease ends releases another link in its
        place. Redis failing is counted: the budget then stays spent."""
        rule = self.rule(site)
        if rule is None:
            return
        frontier = self.frontier(rule)
        host = (urlsplit(url).netloc or "").lower()
        try:
            frontier.refund(frontier.record(lease), self.keys.job(job), self.record_seconds, host)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"give back the budget of a disallowed page of {site}", exc)

    def read_already(self, rule: Rule, request: Request, depth: int) -> bool:
        """A request of ``rule``'s discover crawl, at ``depth``, was redirected to ``request``'s URL, which
        the crawl reads anyway: one of the seeds each of its crawls queues (those within its budget), or,
        for a link (a seed's page is read at every crawl, wherever it redirects), a URL the Bloom filter
        has (a link kept, a page read). Raises ``redis.RedisError`` when Redis fails."""
        assert rule.discover is not None
        fingerprint = self.crawler.request_fingerprinter.fingerprint
        target = fingerprint(request)
        if any(fingerprint(Request(url)) == target for url in rule.discover.seeds[: rule.discover.budget]):
            return True
        return depth > 0 and target in self._bloom

    def _seed_fingerprints(self, rule: Rule) -> frozenset[bytes]:
        """The request fingerprints of ``rule``'s seeds (made again when the rule's seeds change)."""
        assert rule.discover is not None
        seeds = tuple(rule.discover.seeds)
        cached = self._seeds.get(rule.site)
        if cached is None or cached[0] != seeds:
            fingerprinter = self.crawler.request_fingerprinter
            cached = self._seeds[rule.site] = (
                seeds,
                frozenset(fingerprinter.fingerprint(Request(url)) for url in seeds),
            )
        return cached[1]

    def leases_ending(self, works: list[Work]) -> None:
        """The leases of these discover requests are about to end: their jobs are refilled first, counting
        them as ended (step 3); Redis failing is counted and left to the idle refill."""
        ending = Counter((work.site, work.job) for work in works if work.job is not None)
        for (site, job), count in ending.items():
            rule = self.rule(site)
            if rule is not None:
                self._refill_safely(rule, job, count)

    def refill(self, rule: Rule, job: str, *, ending: int = 0) -> int:
        """Top ``job``'s requests in the queue up to ``DISCOVER_QUEUE_TARGET`` from the frontier, within
        its budget; how many were queued. The job's ``pending`` still counts the ``ending`` leases whose
        refill this is: they are left out."""
        frontier = self.frontier(rule)
        self._prune(rule.site, frontier)
        budget, issued, pending, kind = self.server.hmget(
            self.keys.job(job), "budget", "issued", "pending", "kind"
        )
        job_kind = decoded(kind) if kind is not None else None
        room = min(self.queue_target - (_number(pending) - ending), _number(budget) - _number(issued))
        if room <= 0:
            return 0
        self._jobs[job] = rule.site
        # Requests pending besides the ending leases choose again as they end: a request the bandit would
        # give a host whose links are not in yet may wait for them.
        others = _number(pending) - ending > 0
        assert rule.discover is not None
        seeded = {urlsplit(seed).netloc.lower() for seed in rule.discover.seeds}
        spider = self.crawler.spider

        def request_of(entry: Entry, host: str) -> tuple[bytes, int]:
            priority = rule.priority + max(0, int(frontier.score(entry, 0) * 100))
            request = discover_request(
                rule,
                entry.url,
                job=job,
                job_kind=job_kind,
                depth=entry.depth,
                features=entry.features,
                source=entry.source,
                priority=priority,
            )
            return encode_request(request, spider), priority

        model = self.model(rule.site).model
        value_of = None
        if frontier.strategy == LEARNED:

            def value_of(entry: Entry) -> float:
                return model.value(entry.features)

        def release(count: int, revalue: Callable[[Entry], float] | None) -> tuple[int, int]:
            return frontier.release(
                count,
                job=job,
                budget=_number(budget),
                delay=rule.delay,
                concurrency=rule.concurrency,
                request_of=request_of,
                obey_robots=rule.obey_robots,
                value_of=revalue,
                wait=others,
                seeded=seeded,
            )

        released = 0
        # A chosen host whose best link is worth less now is left for the next choice: choose again, a
        # few times at most.
        for _ in range(REFILL_ROUNDS):
            queued, left = release(room - released, value_of)
            released += queued
            if not left or released >= room:
                break
        else:
            if released == 0:  # every choice fell: the best links as they are, so no crawl stops with links
                released = release(room, None)[0]
        self._count(f"discover/released/{rule.site}", released)
        if released == 0:
            self._jobs.pop(job, None)  # budget spent or frontier empty: nothing more to do for it here
        return released

    def _prune(self, site: str, frontier: Frontier) -> None:
        """Forget a batch of the rule's idle hosts, once a ``PRUNE_SECONDS`` at most."""
        now, last = time.monotonic(), self._pruned.get(site)
        if last is not None and now - last < PRUNE_SECONDS:
            return
        self._pruned[site] = now
        self._count(f"discover/hosts_expired/{site}", frontier.prune())

    def refill_job(self, job: str) -> None:
        """Refill ``job`` for the discover rule of each of its sites (a temp crawl's idle worker), a rule file
        added while the worker runs included; never from another rule's frontier, which would spend the
        job's budget on that rule's pages. Raises ``redis.RedisError`` when Redis fails to name the job's
        sites; a refill that Redis fails under is counted and left to the next time."""
        sites = decoded(self.server.hget(self.keys.job(job), "sites") or b"")
        for site in filter(None, sites.split(",")):
            rule = self.rule(site)
            if rule is not None:
                self._refill_safely(rule, job)

    def refill_known(self) -> None:
        """Refill the discover jobs this worker refilled last (an idle worker): a job whose refill Redis
        failed under goes on."""
        for job, site in list(self._jobs.items()):
            rule = self.rule(site)
            if rule is None:
                self._jobs.pop(job, None)
            else:
                self._refill_safely(rule, job)

    def _refill_safely(self, rule: Rule, job: str, ending: int = 0) -> None:
        try:
            queued = self.refill(rule, job, ending=ending)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"refill {rule.site}'s discover crawl", exc)
            return
        outage_of(self.crawler).ok(wrote=queued > 0)

    def _count(self, key: str, amount: int = 1) -> None:
        assert self.crawler.stats is not None
        if amount:
            self.crawler.stats.inc_value(key, amount)


def is_relevant(discover: DiscoverRule, score: float) -> bool:
    """A page of ``score`` is relevant to ``discover``'s topic: at its ``threshold`` or over."""
    return score >= discover.threshold


def _number(value: bytes | str | None) -> int:
    text = decoded(value) if value is not None else ""
    return int(text) if text.lstrip("-").isdigit() else 0


_discoveries: WeakKeyDictionary[Crawler, Discovery] = WeakKeyDictionary()


def discovery_of(crawler: Crawler) -> Discovery:
    """The crawl's discover state, made on first use."""
    found = _discoveries.get(crawler)
    if found is None:
        found = _discoveries[crawler] = Discovery.from_crawler(crawler)
    return found
