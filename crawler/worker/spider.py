"""The one spider: it serves every site rule, reading its work from the shared leased queue.

Index pages (a rule's start URLs and their pagination) and feeds are always fetched again; the article
links they give go through the Bloom filter, a page's links in one Redis call after they are deduplicated
within the page, so an article URL is fetched once. That same call queues the new ones: a URL is never
marked seen without its request queued. Article pages give one item each and are not followed further
unless the rule's ``depth`` says so; one found in a feed takes its title, date and author from the feed's
entry where the page has none; an entry met after its URL was seen (another listing queued it first, or its
article was stored before) gives the stored document what it lacks (crawler/redisio/entries.py).

A request that failed (after Scrapy's retries) is dead-lettered with the reason (``crawler dead``); one
refused by the network guard is counted as refused (with a warning that says how to allow it), one
refused on purpose (robots.txt, a captcha page) as skipped. Pages are decoded by
:func:`extractors.encoding.decode_checked`, as ``crawler extract`` and ``rules try`` decode them: a page whose
text holds many U+FFFD under its declared charset is decoded again by detection (a site that declares
UTF-8 and sends GBK), and counted; a rule's ``encoding`` that leaves U+FFFD gives way to the page's own
encoding when that decodes it, and is counted and warned of once a site. An HTML page is decoded once,
before Scrapy's meta refresh check, which reads the same text (:mod:`crawler.worker.pagetext`). A rule's
regular expressions share a time budget per page (``RULES_REGEX_PAGE_SECONDS``).

Seeds also come as JSON from the ``crawler:seeds`` list (``{"site": ..., "url": ..., "kind":
"index"|"feed"|"sitemap"|"api"|"search"|"article", "job": ...}``), read with our own parsing:
scrapy-redis would turn extra keys into a form body. The command line queues its seeds straight into
the leased queue instead, so none can be lost between a pop and a schedule.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import re
import socket
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, cast
from urllib.parse import urlsplit

import redis
from lxml import etree
from scrapy import Request, signals
from scrapy.core.downloader import Downloader
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import (
    CannotResolveHostError,
    DontCloseSpider,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import JsonResponse, Response, TextResponse
from scrapy.robotstxt import RobotParser
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy_redis.spiders import RedisSpider
from twisted.internet import task
from twisted.internet.defer import CancelledError
from twisted.internet.error import ConnectError, ConnectionLost, DNSLookupError
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseFailed

from crawler.commandline import counted, suggest
from crawler.config import apply_environment
from crawler.errors import BodyTooLongError, redacted, redacted_text
from crawler.items import Article, Discovered, Page
from crawler.keys import NOT_HTML, OFF_SITE, ROBOTS_DISALLOWED, SEEN_ALREADY, SKIP_PREFIX
from crawler.redisio import listings
from crawler.redisio.bloom import RedisBloom
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import resolve_redis_url
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.entries import FIELDS as ENTRY_FIELDS
from crawler.redisio.queue import LeasedQueue
from crawler.requests import (
    API,
    ARTICLE,
    INDEX,
    LISTING_KINDS,
    SEARCH,
    SITEMAP,
    Work,
    article_request,
    count_job,
    encode_request,
    listing_request,
    open_job,
    queue_new,
    redirects,
)
from crawler.rules import (
    LISTING_PAGES,
    RegexBudget,
    Rule,
    RuleFiles,
    RuleSet,
    RulesStamp,
    load_rules,
    rules_stamp,
)
from crawler.rules.api import ApiError, ApiItemsError
from crawler.rules.feeds import FeedError, read_feed
from crawler.rules.sitemaps import NotASitemapError, SitemapError, read_sitemap
from crawler.schedule.revisit import Revisits
from crawler.settings import DOWNLOAD_MAXSIZE
from crawler.worker.bans import Signal, looks_like_captcha, watch_of
from crawler.worker.connection import (
    job_level,
    keys_of,
    outage_of,
    server_of,
    write_job,
)
from crawler.worker.discovery import discovery_of
from crawler.worker.download import (
    DECOMPRESSION_ERRORS,
    DownloadStopped,
    connection_lost,
    head_too_long,
    undecompressed,
    what_to_check,
)
from crawler.worker.dupefilter import bloom_of
from crawler.worker.faults import RepeatedFaults
from crawler.worker.leaseack import ack, dead_letter, put_back
from crawler.worker.netguard import (
    ALLOW_HINT,
    BlockedRequest,
    allow_private_domains,
    blocked_by_guard,
    unfollowed_redirect,
)
from crawler.worker.onsite import OffSiteRedirect
from crawler.worker.pagetext import page_encoding, page_text, page_tree
from crawler.worker.pipelines.store import store_pipeline_of
from crawler.worker.robots import ROBOTS_REFUSAL, robots_agent
from crawler.worker.scheduler import NO_ANSWER, leases_ending, scheduler_of
from extractors import extract
from extractors.documents import document_kind
from extractors.encoding import Decoded, Doubt, sniff_binary
from extractors.htmlparse import page_title

__all__ = ["SitesSpider"]

logger = logging.getLogger(__name__)

# Content-Types of an HTML page: a rule's feed or sitemap that is one is named with its rule key.
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# An article page without any of its fields and under this size is "empty" (a site serving blank pages to
# a crawler it refuses), once the site's pages have matched this many times in this worker.
EMPTY_PAGE_BYTES = 2048
EMPTY_AFTER_MATCHED = 5
# What Scrapy's decompression says as it gives up a response whose body grew past DOWNLOAD_MAXSIZE.
DECOMPRESSED_PAST_MAXSIZE = "exceeded DOWNLOAD_MAXSIZE"
# What Scrapy's HTTP handler says as it gives up a response whose Content-Length is past DOWNLOAD_MAXSIZE.
DECLARED_PAST_MAXSIZE = re.compile(
    r"Expected to receive (\d+) bytes which is larger than download max size \((\d+)\)"
)
# What became of a request of a site with no rule here, as its lines say (RepeatedFaults).
_DEAD_LETTERED = "dead-lettered"
# What befell a page whose rule's regular expressions spent their time budget, as its lines say.
_SEARCHES_SKIPPED = "had searches skipped"


# The rules each crawler's spider serves, read once for its settings (``update_settings``, by the id of the
# crawler's settings), with the folder's stamp as it was read (an edit since is a change), and taken by its
# spider (``from_crawler``); an entry goes with its settings (a crawler
# never started), so that it is neither kept nor taken by later settings given the same id.
_read_at_start: dict[int, tuple[RulesStamp | None, RuleSet, RuleFiles]] = {}

# The embedded Redis servers ``scrapy crawl sites`` started or joined (no REDIS_URL), left at the end.
_embedded: list[EmbeddedRedis] = []


def _download_slot(rule: Rule) -> dict[str, Any]:
    """The settings of a worker's own download slot of ``rule``'s site (``DOWNLOAD_SLOTS``): the rule's
    concurrency, no delay (the shared queue holds the rule's delay for all workers together)."""
    return {"delay": 0.0, "concurrency": rule.concurrency}


def _reslot(downloader: Downloader, rule: Rule) -> None:
    """The download slots this worker made of ``rule``'s site, its own and those of the hosts of its
    discover crawl (``<site>@<host>``), take the rule's concurrency: Scrapy reads a slot's settings once,
    as it makes the slot (their delay stays 0: the shared queue holds the rule's)."""
    for key, slot in downloader.slots.items():
        if key.partition("@")[0] == rule.site:
            slot.concurrency = _download_slot(rule)["concurrency"]


def _changed_files(before: RulesStamp | None, after: RulesStamp | None) -> set[str]:
    """The names of the entries of the rules folder added, changed or removed between two stamps (none
    when either is unknown: the folder could not be read then)."""
    if before is None or after is None:
        return set()
    return {name for name, _stamp in set(before.entries) ^ set(after.entries)}


class _DownloadSlots(dict[str, dict[str, Any]]):
    """A worker's download slot settings (the downloader's ``per_slot_settings``, made from
    ``DOWNLOAD_SLOTS``): a discover page's slot, ``<site>@<host>``
    (:func:`crawler.requests.discover_request`), has its site's, as each host of a discover crawl has the
    rule's politeness in the shared queue. The downloader reads a slot's settings with ``get`` when it
    makes the slot."""

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key)
        site, at, _host = key.partition("@")
        if found is None and at:
            found = super().get(site)
        return default if found is None else found


def _leave_embedded() -> None:
    while _embedded:
        _embedded.pop().close()


class SitesSpider(RedisSpider):  # type: ignore[misc]  # scrapy-redis ships no type hints
    name = "sites"

    def __init__(self, *args: Any, sites: str | None = None, job: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.only_sites = {site for site in (sites or "").split(",") if site}
        self.job = job
        self.rules: dict[str, Rule] = {}
        # When the unchanged rules folder may be read again for added rules (a changed one is read at once).
        self._next_reload = 0.0
        # The rules folder as it was at the last read (rules_stamp): once it changed, it is read at once.
        self._read_stamp: RulesStamp | None = None
        # When the rules folder may be looked at again for a change of the rules of known sites.
        self._next_look = 0.0
        # A rule file was missing from a folder that had just changed: the next look reads it again.
        self._removal_held = False
        # What the last read of the rules folder parsed: the next one parses only the files changed since.
        self._rule_files = RuleFiles()
        self.rule_errors = 0
        # Per site whose rule file the last read found but could not load, its errors (one per line).
        self.unreadable: dict[str, str] = {}
        # The (site, errors) said already: a file's errors are warned of once, again once they change.
        self._unreadable_warned: set[tuple[str, str]] = set()
        # The requests dead-lettered for a site with no rule here (its rule file removed, or unreadable since
        # the worker started): said once, then in a line a minute with their count, the rest when its rule
        # is read again or the worker stops.
        self._unruled = RepeatedFaults()
        # Site -> the reason its requests are dead-lettered with while its rule file cannot be read here.
        self._unreadable_dead: dict[str, str] = {}
        # The pages whose rule's regular expressions spent their budget (a pattern that backtracks on each
        # page of its site): said once a site, then in a line a minute with their count.
        self._regex_spent_pages = RepeatedFaults()
        # The spider's own handle on the shared Bloom filter (see the bloom property), made at its first use.
        self._bloom: RedisBloom | None = None
        # Per site, the article pages where the rule's fields matched: an empty page after them is a sign.
        self.matched: dict[str, int] = {}
        # Per queue slot and host, the crawl-delay the host's robots.txt asks for (0: none past the rule's
        # delay) that Redis has not taken yet (away, or refusing writes): written again every second until
        # it does.
        self._crawl_delays: dict[tuple[str, str], float] = {}

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """The environment's settings (for ``scrapy crawl sites``), and per-site politeness (one download
        slot per rule, with the rule's concurrency: :func:`_download_slot`; a discover crawl's host slots
        take their site's once the spider opens: :class:`_DownloadSlots`)."""
        super().update_settings(settings)
        apply_environment(settings)
        if not settings.get("REDIS_URL"):
            # `scrapy crawl sites` without REDIS_URL: the embedded Redis under the data folder, started or
            # joined as `crawler worker` does, and left when the crawl closes.
            url, embedded = resolve_redis_url(None, Path(settings["CRAWLER_DATA_DIR"]))
            settings.set("REDIS_URL", url, priority="spider")
            if embedded is not None:
                _embedded.append(embedded)
        stamp = rules_stamp(settings["CRAWLER_RULES_DIR"])
        files = RuleFiles()
        ruleset = load_rules(settings["CRAWLER_RULES_DIR"], files=files)
        _read_at_start[id(settings)] = (stamp, ruleset, files)
        weakref.finalize(settings, _read_at_start.pop, id(settings), None)
        slots = {rule.site: _download_slot(rule) for rule in ruleset.rules.values()}
        settings.set("DOWNLOAD_SLOTS", {**settings.getdict("DOWNLOAD_SLOTS"), **slots}, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider: Self = super().from_crawler(crawler, *args, **kwargs)
        read = _read_at_start.pop(id(crawler.settings), None)
        if read is None:
            folder = crawler.settings["CRAWLER_RULES_DIR"]
            files = RuleFiles()
            read = (rules_stamp(folder), load_rules(folder, files=files), files)
        spider._read_stamp, ruleset, spider._rule_files = read
        settings = crawler.settings
        logger.info(
            "Redis %s, data folder %s, rules folder %s",
            redacted(settings["REDIS_URL"]),
            settings["CRAWLER_DATA_DIR"],
            settings["CRAWLER_RULES_DIR"],
        )
        spider.load(ruleset)
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.slots_opened, signal=signals.spider_opened)
        crawler.signals.connect(spider.robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(spider.leases_ending, signal=leases_ending)
        if _embedded:
            crawler.signals.connect(_leave_embedded, signal=signals.engine_stopped)
        return spider

    def setup_redis(self, crawler: Crawler | None = None) -> None:
        """scrapy-redis's set-up on the worker's one Redis client, with our keys."""
        assert crawler is not None
        self.keys = keys_of(crawler)
        self.redis_key = self.keys.seeds
        self.server = server_of(crawler)
        self.redis_batch_size = crawler.settings.getint("CONCURRENT_REQUESTS")
        self.redis_encoding = "utf-8"
        self.fetch_data = self.pop_list_queue
        self.count_size = self.server.llen
        self.max_idle_time = 0
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        self.queue = LeasedQueue(self.server, self.keys)
        # Sites whose rule's encoding was warned of (once a site), as leaving pages undecodable (False) or as
        # kept on a page that declares UTF-8 with too few multi-byte characters to prove it (True).
        self._encoding_warned: set[tuple[str, bool]] = set()
        self.revisits = Revisits(
            self.server,
            self.keys,
            min_factor=crawler.settings.getfloat("SCHEDULE_ADAPT_MIN_FACTOR"),
            max_factor=crawler.settings.getfloat("SCHEDULE_ADAPT_MAX_FACTOR"),
            tick_seconds=crawler.settings.getfloat("SCHEDULE_TICK_SECONDS"),
        )

    def load(self, ruleset: RuleSet) -> None:
        """Take the valid rules; a broken rule is logged (and counted when the crawl opens), and never
        stops the others. A job's crawl (``crawler temp``, whose own rule was loaded before) names the
        other broken files in one warning: they are no error of its own. A worker of some sites
        (``--sites``) logs the errors of their files alone: the others' are for the workers that serve
        them."""
        errors = [
            error
            for error in ruleset.errors
            if not self.only_sites or Path(error.file).stem in self.only_sites
        ]
        if self.job is None:
            for error in errors:
                logger.error("%s", error)
        elif errors:
            files = sorted({Path(error.file).name for error in errors})
            logger.warning(
                "%s errors: %s; see `%s`",
                counted(len(files), "other rule file has", "other rule files have"),
                ", ".join(files),
                suggest("rules check"),
            )
        self.rule_errors = len(errors)
        self._keep_unreadable(ruleset)
        self.rules = {
            site: rule
            for site, rule in ruleset.rules.items()
            if not self.only_sites or site in self.only_sites
        }
        for rule in self.rules.values():
            if rule.allow_private:
                allow_private_domains(rule.known_domains)
        logger.info("Serving %s: %s", counted(len(self.rules), "site rule"), ", ".join(sorted(self.rules)))

    def _keep_unreadable(self, ruleset: RuleSet) -> None:
        """The sites of this worker whose rule file ``ruleset`` found but could not load, with the
        errors."""
        self.unreadable = {
            site: "\n".join(str(error) for error in ruleset.errors if Path(error.file).stem == site)
            for site in ruleset.broken
            if not self.only_sites or site in self.only_sites
        }

    def private_domains_of(self, site: str) -> Sequence[str]:
        """The domains the requests of ``site`` may reach on private addresses: its rule's, when the rule
        says ``allow_private_addresses`` (the network guard asks, request by request)."""
        rule = self.rule_of(site)
        return rule.known_domains if rule is not None and rule.allow_private else ()

    def rule_of(self, site: str | None) -> Rule | None:
        """The rule of ``site``, as its file is now: the rules folder is read again when it changed
        (:meth:`_read_rules`)."""
        if not site or (self.only_sites and site not in self.only_sites):
            return self.rules.get(site or "")
        self._read_rules(known=site in self.rules)
        return self.rules.get(site)

    def _read_rules(self, *, known: bool) -> None:
        """Take the rule files added, edited or removed since this worker read the rules folder, as the
        rules it started with: the queue's politeness, this worker's download slot of the site
        (``update_settings``), the private domains they allow. For a site it knows (``known``), the folder
        is looked at at most every ``RULES_RELOAD_SECONDS`` (one ``scandir``,
        :func:`~crawler.rules.rules_stamp`, and a ``stat`` of each file the rules read besides their own,
        :meth:`~crawler.rules.RuleFiles.outdated`), and read when it changed or a file was read too soon
        after its change to be kept; for one it does not know yet, looked at every time, and read when it
        changed, else at most every ``RULES_RELOAD_SECONDS``.
        A rule file that now has errors leaves its site's rule as it was (the scheduler leaves the site
        out); one removed takes its rule away (its requests are dead letters of kind ``no rule``) once
        the folder has not changed for ``RULES_RELOAD_SECONDS``: an editor that saves by renaming (vim's
        default) leaves the folder without the file for a moment, and that moment takes no rule away (nor
        does a folder that cannot be read)."""
        settings = self.crawler.settings
        now = time.monotonic()
        if known and now < self._next_look:
            return
        every = settings.getfloat("RULES_RELOAD_SECONDS")
        self._next_look = now + every
        folder = settings["CRAWLER_RULES_DIR"]
        stamp = rules_stamp(folder)
        if (
            stamp == self._read_stamp
            and not self._removal_held
            and (known or now < self._next_reload)
            and not self._rule_files.outdated()
        ):
            return
        before, self._read_stamp = self._read_stamp, stamp
        self._next_reload = now + every
        ruleset = load_rules(folder, files=self._rule_files)
        fresh = {
            name: rule
            for name, rule in ruleset.rules.items()
            if not self.only_sites or name in self.only_sites
        }
        broken = set(ruleset.broken)
        self._keep_unreadable(ruleset)
        edited = _changed_files(before, stamp)
        added = sorted(name for name in fresh if name not in self.rules)
        # A rule read again is another object (RuleFiles keeps the one it read of an unchanged file): its
        # file, or a file it reads, changed (its bytes, for a file read too soon after a change for its stamp
        # to tell), or a file it reads was read too soon after a change to be kept.
        changed = sorted(name for name in fresh if name in self.rules and fresh[name] is not self.rules[name])
        removed = sorted(name for name in self.rules if name not in fresh and name not in broken)
        settled = stamp is not None and time.time_ns() - stamp.folder.mtime_ns >= every * 1e9
        held, self._removal_held = ([] if settled else removed), bool(removed) and not settled
        if held:
            removed = []
        kept = sorted(name for name in self.rules if name in broken and f"{name}.yaml" in edited)
        for new in fresh.values():
            old = self.rules.get(new.site)
            if old is None or (
                new.site in changed
                and (new.delay, new.concurrency, new.obey_robots)
                != (old.delay, old.concurrency, old.obey_robots)
            ):
                assert self.crawler.engine is not None
                self.queue.configure(
                    new.site,
                    delay=new.delay,
                    concurrency=new.concurrency,
                    obey_robots=new.obey_robots,
                    hosts=new.discover is not None,
                )
                self.crawler.engine.downloader.per_slot_settings[new.site] = _download_slot(new)
                _reslot(self.crawler.engine.downloader, new)
            if new.allow_private:
                allow_private_domains(new.known_domains)
        kept_rules = {name: self.rules[name] for name in self.rules if name in broken or name in held}
        # In place: the proxy pool looks rules up in this dict (ProxyPool.known).
        self.rules.clear()
        self.rules.update({**kept_rules, **fresh})
        for title, sites in (("added", added), ("changed", changed), ("removed", removed)):
            if sites:
                logger.warning("Rules %s while running: %s", title, ", ".join(sites))
        for site in added:
            self._unruled.ended(_DEAD_LETTERED, self._no_rule_reason(site))
            if (unread := self._unreadable_dead.pop(site, None)) is not None:
                self._unruled.ended(_DEAD_LETTERED, unread)
        if kept:
            logger.warning(
                "Rule files changed while running have errors, their sites keep the rule read before: %s;"
                " mend the files (`%s`): each is read again as it is saved",
                ", ".join(f"{site} ({'; '.join(self.unreadable[site].splitlines())})" for site in kept),
                suggest("rules check"),
            )

    def slots_opened(self) -> None:
        """The downloader's slot settings, as :class:`_DownloadSlots` (a discover host's slot has its
        site's)."""
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        downloader.per_slot_settings = _DownloadSlots(downloader.per_slot_settings)

    @property
    def bloom(self) -> RedisBloom:
        """The spider's own handle on the shared Bloom filter (a page's links are tested and queued in one
        call), made at its first use: making it reads the filter's parameters from Redis, so a worker whose
        spider opened while Redis was away makes it once Redis is back, at a use that handles Redis
        failing."""
        if self._bloom is None:
            self._bloom = bloom_of(self.crawler)
        return self._bloom

    def opened(self) -> None:
        self.bans = watch_of(self.crawler)
        self.regex_page_seconds = self.crawler.settings.getfloat("RULES_REGEX_PAGE_SECONDS")
        self.max_links = self.crawler.settings.getint("RULES_MAX_LINKS")
        self.url_limit = self.crawler.settings.getint("URLLENGTH_LIMIT")
        self.again_seconds = self.crawler.settings.getint("SCHEDULE_TEMP_AGAIN_SECONDS")
        self.max_size = self.crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self.max_body_chars = self.crawler.settings.getint("TEXT_MAX_BODY_CHARS")
        if self.rule_errors:
            self.count("rules/errors", self.rule_errors)
        self._configure_sites()

    def _configure_sites(self) -> None:
        """Each site's politeness (and its discover crawl's host slots'), for every worker together (the
        queue gates the site as a whole); while Redis is away (or refuses writes), tried again every second
        until it is back, the outage said once (:func:`outage_of`)."""
        try:
            for rule in list(self.rules.values()):
                self.queue.configure(
                    rule.site,
                    delay=rule.delay,
                    concurrency=rule.concurrency,
                    obey_robots=rule.obey_robots,
                    hosts=rule.discover is not None,
                )
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("set the sites' politeness, tried again every second", exc)
            from twisted.internet import reactor  # noqa: PLC0415 - the reactor the crawl installed

            task.deferLater(cast(IReactorTime, reactor), 1.0, self._configure_sites)
            return
        outage_of(self.crawler).ok(wrote=bool(self.rules))

    def robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        """A site's robots.txt, read or read again: a crawl-delay it asks for longer than the rule's delay
        is kept for every worker (at most ``ROBOTS_MAX_CRAWL_DELAY``); a shorter one, or none, puts the
        site back to its rule's delay, which a crawl-delay kept before no longer lengthens, unless another
        host of the site asks for one (the site keeps the longest its hosts ask for). One read for a rule
        that no longer obeys robots.txt (a request queued before it was changed) keeps none."""
        work = Work.of(request)
        rule = self.rule_of(work.site)
        if rule is None or not rule.obey_robots:
            return
        asked = robotparser.crawl_delay(robots_agent(request, self.crawler.settings))
        host = _robots_host(request.url)
        delay = 0.0
        if asked is not None and asked > rule.delay:
            delay = min(float(asked), self.crawler.settings.getfloat("ROBOTS_MAX_CRAWL_DELAY"))
            logger.info(
                "%s: robots.txt of %s asks for a crawl-delay of %g s (kept: %g s)",
                rule.site,
                host,
                asked,
                delay,
            )
        retrying = bool(self._crawl_delays)
        self._crawl_delays[work.slot, host] = delay
        if not retrying:
            self._keep_crawl_delays()

    def _keep_crawl_delays(self) -> None:
        """Write the crawl-delays robots.txt asked for that Redis has not taken yet; while Redis is away (or
        refuses writes), tried again every second until it is back, the outage said once
        (:func:`outage_of`)."""
        try:
            while self._crawl_delays:
                (slot, host), delay = next(iter(self._crawl_delays.items()))
                self.queue.set_crawl_delay(slot, delay, host)
                del self._crawl_delays[slot, host]
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(
                "keep the crawl-delay robots.txt asks for, tried again every second", exc
            )
            from twisted.internet import reactor  # noqa: PLC0415 - the reactor the crawl installed

            task.deferLater(cast(IReactorTime, reactor), 1.0, self._keep_crawl_delays)
            return
        outage_of(self.crawler).ok(wrote=True)

    async def start(self) -> AsyncIterator[Request]:
        """The seeds waiting as the crawl starts; none while Redis does not answer (the idle signal asks
        again, as it does for every seed after these)."""
        try:
            requests = list(self.next_requests())
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("read the seeds as the crawl starts", exc)
            return
        for request in requests:
            yield request

    def make_request_from_data(self, data: bytes) -> Request | None:
        """A seed from the ``seeds`` list: JSON with ``site``, ``url``, and optional ``kind`` and ``job``
        (whose hash is made, as a job's is before its first push: :func:`crawler.requests.open_job`)."""
        try:
            seed = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            logger.error("Seed is not JSON, dropped: %r", data[:200])
            self.count("seeds/invalid")
            return None
        if not isinstance(seed, dict) or not isinstance(seed.get("url"), str):
            logger.error("Seed has no url, dropped: %r", seed)
            self.count("seeds/invalid")
            return None
        rule = self.rule_of(str(seed.get("site")))
        if rule is None:
            logger.error("Seed names no known site rule, dropped: %r", seed)
            self.count("seeds/unknown_site")
            return None
        job = seed.get("job") if isinstance(seed.get("job"), str) and seed["job"] else None
        if job is not None:
            open_job(self.server, self.keys, job)  # before its first push, which counts it only then
        kind = seed.get("kind", INDEX)
        if kind == ARTICLE:
            return article_request(rule, seed["url"], job=job)
        return listing_request(rule, kind if kind in LISTING_KINDS else INDEX, seed["url"], job=job)

    def spider_idle(self) -> None:
        """More seeds if any; a job's crawl closes when the job has nothing pending, a worker never (nor a
        job's crawl while Redis cannot tell: it waits for Redis to come back)."""
        try:
            if self.job is not None:
                discovery_of(self.crawler).refill_job(self.job)
            else:
                discovery_of(self.crawler).refill_known()
            self.schedule_next_requests()
            if self.job is not None and self.queue.job_pending(self.job) <= 0:
                return
        except redis.RedisError as exc:
            outage_of(self.crawler).failed("look for more requests", exc)
        raise DontCloseSpider

    def leases_ending(self, works: list[Work]) -> None:
        """Leases of discover requests are about to end: their jobs are topped up first (the crawl's
        discover state is made then, at the first page of a discover crawl)."""
        discovery_of(self.crawler).leases_ending(works)

    # --- callbacks -------------------------------------------------------------------------------------

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any] | AsyncIterator[Any]:
        """Requests queued from outside a crawl have no callback: their ``kind`` says which page it is. A
        listing page (or a discover seed) read is counted in its job, and drops what the job's summary was
        to say of it failing (its dead letter was requeued and is read now)."""
        work = _work(response)
        if (work.kind in LISTING_PAGES or _is_seed(work)) and work.job:
            assert response.request is not None
            self._drop_note(work.job, _asked_url(response.request))
            count_job(response.request, "listings")
        if work.is_article:
            return self.parse_article(response)
        if work.is_feed:
            return self.parse_feed(response)
        if work.is_sitemap:
            return self.parse_sitemap(response)
        if work.is_api:
            return self.parse_api(response)
        if work.is_search:
            return self.parse_search(response)
        if work.is_discover:
            return self.parse_discover(response)
        return self.parse_index(response)

    def parse_discover(self, response: Response) -> Iterator[Article]:
        """A page of a discover crawl: an item whose text, relevance and links a text process reads, which
        then teaches the link model and fills the frontier (crawler.worker.discovery), and is stored when
        relevant. A PDF or DOCX document is read as an article link's is, and judged on its text; a page
        that is not text (an image) is a page read with no text, not relevant."""
        work = _work(response)
        meta = response.meta
        reached = Discovered(
            depth=work.depth,
            features=tuple(int(feature) for feature in meta.get("link", ())),
            source=float(meta.get("source", 0.0)),
            host=(urlsplit(response.url).netloc or "").lower(),
        )
        if document_kind(response.body):
            yield from self._document(response, reached)
            return
        rule, page = self._page(response)
        if rule is None:
            return
        if rule.discover is None:
            self._unreadable(
                response,
                f"discover/no_discover_rule/{rule.site}",
                f"the rule of {rule.site!r} ({rule.path}) has no discover section any more",
                "no rule",
            )
            return
        text, title, encoding = "", None, "utf-8"
        if page is None:  # not a text page (an image): read with no text, it teaches its link led nowhere
            reached.why = "not a text page"
        else:
            text, title = page.text, str(page_tree(page).xpath("normalize-space(//title)")) or None
            encoding = page_encoding(page)
        yield Article(
            site=rule.site,
            url=response.url,
            fetched_at=_fetched_now(),
            title=title,
            job=work.job,
            redirected_from=_redirected_from(response),
            page=Page(text, rule.min_body_chars, encoding=encoding),
            discover=reached,
        )

    def parse_search(self, response: Response) -> Iterator[Request]:
        """A result page of one of the rule's keywords: each result on the rule's domains queued as its
        article, each one on another rule's domains as that rule's article (new ones only), the others
        counted; then the next result page, up to ``search.max_pages``."""
        if response.status == 304:
            self._not_modified(response)
            return
        rule, page = self._page(response)
        if rule is None or page is None or rule.search is None:
            return
        work = _work(response)
        budget = RegexBudget(self.regex_page_seconds)
        before = rule.regex_timeouts
        root = page_tree(page)
        results = rule.search_results(rule.search, page.url, root, budget, encoding=page_encoding(page))
        self._regex_spent(rule, page.url, before, budget)
        by_rule: dict[str, tuple[Rule, list[str]]] = {}
        unruled = 0
        for url, owner in zip(results, self._rules_of_hosts(rule, results), strict=True):
            if owner is None:
                unruled += 1
            else:
                by_rule.setdefault(owner.site, (owner, []))[1].append(url)
        if unruled:
            self.count(f"crawl/search_unruled/{rule.site}", unruled)
        self.count(f"crawl/links/{rule.site}", len(results) - unruled)
        fresh = 0
        for owner, urls in by_rule.values():
            if owner is not rule:
                self.count(f"crawl/search_other_rules/{rule.site}", len(urls))
            requests = [_linked(owner, url, work) for url in urls]
            fresh += self._queue_new(owner, requests, _request(response))
        self._record_visit(rule, work, fresh)
        if work.page < rule.search.max_pages:
            next_url = rule.search_next_page(rule.search, page.url, root)
            if next_url:
                yield _next_listing(rule, SEARCH, next_url, work)

    def _rules_of_hosts(self, rule: Rule, urls: list[str]) -> list[Rule | None]:
        """For each of ``urls``, the rule whose domains hold its host: ``rule`` first, else another one this
        worker serves; when some are of none, the rules folder is read again once for rules added while
        the worker runs (as :meth:`rule_of`), not once a URL."""

        def owner(url: str) -> Rule | None:
            host = urlsplit(url).hostname
            if rule.allows_host(host):
                return rule
            return next((other for other in self.rules.values() if other.allows_host(host)), None)

        owners = [owner(url) for url in urls]
        if None in owners:
            self._read_rules(known=False)
            owners = [found or owner(url) for url, found in zip(urls, owners, strict=True)]
        return owners

    def parse_api(self, response: Response) -> Iterator[Any]:
        """A page of a rule's JSON API: an item that holds its article (a body) is stored as it is, any
        other one's URL queued as an article request (new ones only) with the item's fields as hints;
        then the next page, up to ``api.max_pages``, unless it repeats an earlier one (a cursor that
        loops). A page that is no JSON, or whose items are no list, is dead-lettered saying so."""
        rule = self._listing_rule(response)
        if rule is None or rule.api is None:
            return
        work = _work(response)
        try:
            page = rule.api.read(response.body, response.url, rule.encoding)
        except ApiItemsError as exc:
            self._unreadable(response, f"crawl/api_errors/{rule.site}", str(exc), "api.items no list")
            return
        except ApiError as exc:
            self._unreadable(response, f"crawl/api_errors/{rule.site}", str(exc), "not the API's JSON")
            return
        if page.doubt is not None:
            self._rule_encoding_doubted(rule, response.url, page.doubt)
        if page.without_url:
            self.count(f"crawl/api_no_url/{rule.site}", page.without_url)
        articles, links = [], []
        for item in page.items:
            url = rule.absolute_url(item.url)
            if url is None:
                self.count(f"crawl/api_off_domains/{rule.site}")
            elif not rule.links.accepts(url):
                self.count(f"crawl/api_refused/{rule.site}")
            elif item.is_article:
                articles.append((url, item))
            else:
                links.append((url, item))
        fetched_at = _fetched_now()
        for url, item in articles:
            fields = dict(item.fields)
            self.count(f"fields/pages/{rule.site}")
            yield Article(
                site=rule.site,
                url=url,
                fetched_at=fetched_at,
                title=fields.pop("title", None),
                body=fields.pop("body", None),
                published=fields.pop("published", None),
                author=fields.pop("author", None),
                fields=fields,
                job=work.job,
            )
        requests = [
            _linked(
                rule,
                url,
                work,
                entry={name: value for name, value in item.fields.items() if value is not None},
            )
            for url, item in links
        ]
        self.count(f"crawl/links/{rule.site}", len(links) + len(articles))
        fresh = self._queue_new(rule, requests, _request(response))
        self._record_visit(rule, work, fresh + len(articles))
        next_url = rule.absolute_url(page.next_url) if page.next_url else None
        if next_url is None or work.page >= rule.api.max_pages:
            return
        seen = [*response.meta.get("api_seen", ()), response.url]
        if next_url in seen:
            self.count(f"crawl/api_cursor_loop/{rule.site}")
            logger.log(
                job_level(self.crawler, work.job),
                "%s: the API's next page %s repeats page %d of this chain: the cursor loops, stopped",
                rule.site,
                next_url,
                seen.index(next_url) + 1,
            )
            return
        yield _next_listing(rule, API, next_url, work, seen=seen)

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Request]:
        """A sitemap (or a robots.txt naming sitemaps): the sitemaps it lists followed (up to
        ``SITEMAPS_MAX_DEPTH`` levels), the pages it lists queued as article requests (new ones only, with
        a news sitemap's title and date); in a regular grab, only the entries changed since the previous
        grab read this sitemap. A document that is no sitemap, or past the protocol's limits, is
        dead-lettered saying so.

        The entries are read and queued ``SITEMAPS_BATCH_ENTRIES`` at a time, the reactor running between
        batches (one of 50,000 pages held the crawl thread 3.7 s CPU read whole); the sitemap's lease ends
        once the last batch is queued, so a worker killed between two batches leaves it to be read again,
        the pages queued already then seen by the Bloom filter."""
        rule = self._listing_rule(response)
        if rule is None:
            return
        work = _work(response)
        settings = self.crawler.settings
        try:
            sitemap = read_sitemap(
                response.body,
                response.url,
                max_bytes=settings.getint("SITEMAPS_MAX_BYTES"),
                zone=rule.timezone,
            )
        except SitemapError as exc:
            if isinstance(exc, NotASitemapError):
                self._not_a_listing(rule, response, "sitemap", "sitemaps")
            self._unreadable(response, f"crawl/sitemap_errors/{rule.site}", str(exc), "not a sitemap")
            return
        since = self._sitemap_since(rule, response.url, work)
        too_deep = sitemap.lists_sitemaps and work.page >= settings.getint("SITEMAPS_MAX_DEPTH")
        batch = settings.getint("SITEMAPS_BATCH_ENTRIES")
        budget = RegexBudget(self.regex_page_seconds)
        before = rule.regex_timeouts
        kept: set[str] = set()
        changes: list[float] = []
        unchanged = left_out = fresh = 0
        for start in range(0, len(sitemap.entries), batch):
            if start:
                await asyncio.sleep(0)
            entries = rule.sitemap_entries(
                sitemap.entries[start : start + batch],
                response.url,
                pages=not sitemap.lists_sitemaps,
                budget=budget,
                kept=kept,
            )
            changes.extend(entry.changed.timestamp() for entry in entries if entry.changed is not None)
            changed = [
                e for e in entries if since is None or e.changed is None or e.changed.timestamp() > since
            ]
            unchanged += len(entries) - len(changed)
            if too_deep:
                left_out += len(changed)
            elif sitemap.lists_sitemaps:
                listed = [_next_listing(rule, SITEMAP, entry.url, work) for entry in changed]
                for request in self._queue_listings(rule, listed):
                    yield request
            else:
                self.count(f"crawl/links/{rule.site}", len(changed))
                requests = [_linked(rule, e.url, work, entry=e.hints()) for e in changed]
                fresh += self._queue_new(rule, requests, _request(response))
        self._regex_spent(rule, response.url, before, budget)
        if unchanged:
            self.count(f"crawl/sitemap_unchanged/{rule.site}", unchanged)
        if left_out:
            self.count(f"crawl/sitemap_too_deep/{rule.site}", left_out)
            logger.log(
                job_level(self.crawler, work.job),
                "%s: %s lists %s %s below the rule's (SITEMAPS_MAX_DEPTH): left out",
                rule.site,
                response.url,
                counted(left_out, "sitemap"),
                counted(work.page, "level"),
            )
        if not sitemap.lists_sitemaps:
            self._record_visit(rule, work, fresh)
        self._sitemap_read(rule, response.url, work, changes)

    def _sitemap_since(self, rule: Rule, url: str, work: Work) -> float | None:
        """The latest change a regular grab of ``rule`` saw in the sitemap ``url`` (by the site's own
        clock), less ``SITEMAPS_SINCE_MARGIN_SECONDS``; None for a temp crawl, a sitemap the rule's grabs
        never read (another rule's grabs may have), or Redis away (every entry is offered then)."""
        if not work.is_grab:
            return None
        try:
            value = self.server.hget(self.keys.sitemaps(rule.site), url)
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"read when {url} was read last: every entry is offered", exc)
            return None
        outage_of(self.crawler).ok(wrote=False)
        if value is None:
            return None
        margin: float = self.crawler.settings.getfloat("SITEMAPS_SINCE_MARGIN_SECONDS")
        return float(value) - margin

    def _sitemap_read(self, rule: Rule, url: str, work: Work, changes: list[float]) -> None:
        """A regular grab of ``rule`` read the sitemap ``url``, whose entries changed at ``changes``: the
        rule's next one offers what changed after its latest change (the site's clock against the site's:
        ours may differ)."""
        if not work.is_grab or not changes:
            return
        try:
            key, times = self.keys.sitemaps(rule.site), self.keys.sitemaps_at(rule.site)
            listings.keep(self.server, key, times, url, f"{max(changes):.3f}")
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"note when {url} was read: the next grab offers every entry", exc)
            return
        outage_of(self.crawler).ok(wrote=True)

    def parse_feed(self, response: Response) -> Iterator[Request]:
        """A rule's feed: its entries' links queued as article requests (new ones only), each with what
        its entry says of the article (title, date, author); a document that is no feed is dead-lettered
        with what it is."""
        rule = self._listing_rule(response)
        if rule is None:
            return
        work = _work(response)
        content_type = response.headers.get(b"Content-Type")
        try:
            feed = read_feed(
                response.body,
                response.url,
                content_type.decode("latin-1") if content_type else None,
                max_entries=self.max_links,
                zone=rule.timezone,
                now=shared_now(),
                # 0 lifts Scrapy's limit of a body; a gzip file's is never lifted (a gzip bomb).
                max_bytes=self.max_size or DOWNLOAD_MAXSIZE,
            )
        except FeedError as exc:
            self._not_a_listing(rule, response, "feed", "feeds")
            self._unreadable(response, f"crawl/feed_errors/{rule.site}", str(exc), "not a feed")
            return
        if feed.over_limit:
            self._over_limit(rule, work, f"the feed {response.url}", feed.over_limit, ("entry", "entries"))
        if feed.without_link:
            self.count(f"crawl/feed_no_link/{rule.site}", feed.without_link)
        budget = RegexBudget(self.regex_page_seconds)
        before = rule.regex_timeouts
        entries = rule.feed_entries(feed.entries, response.url, budget)
        self._regex_spent(rule, response.url, before, budget)
        self.count(f"crawl/links/{rule.site}", len(entries))
        requests = [_linked(rule, entry.url, work, entry=entry.hints()) for entry in entries]
        fresh = self._queue_new(rule, requests, _request(response))
        self._record_visit(rule, work, fresh)
        yield from ()

    def _over_limit(self, rule: Rule, work: Work, page: str, past: int, nouns: tuple[str, str]) -> None:
        """A listing ``page`` ("the feed URL") of ``rule`` went on past ``RULES_MAX_LINKS`` article links:
        the ``past`` entries or links after them, left out unread, are counted
        (``crawl/over_limit/<site>``) and logged once."""
        self.count(f"crawl/over_limit/{rule.site}", past)
        logger.log(
            job_level(self.crawler, work.job),
            "%s: %s has %s past its first %d, left out",
            rule.site,
            page,
            counted(past, *nouns),
            self.max_links,
        )

    def _article_links(
        self, rule: Rule, work: Work, page: TextResponse, root: etree._Element, budget: RegexBudget, what: str
    ) -> list[str]:
        """The first ``RULES_MAX_LINKS`` article links of ``page`` (``what``: "the index page"), those past
        them counted and logged once (:meth:`_over_limit`)."""
        left_out = Counter[str]()
        links = rule.article_links(
            page.url, root, budget, encoding=page_encoding(page), limit=self.max_links, left_out=left_out
        )
        if left_out["past the limit"]:
            self._over_limit(rule, work, f"{what} {page.url}", left_out["past the limit"], ("link", "links"))
        return links

    def parse_index(self, response: Response) -> Iterator[Request]:
        if response.status == 304:
            self._not_modified(response)
            return
        rule, page = self._page(response)
        if rule is None or page is None:
            return
        work = _work(response)
        budget = RegexBudget(self.regex_page_seconds)
        before = rule.regex_timeouts
        root = page_tree(page)
        links = self._article_links(rule, work, page, root, budget, "the index page")
        self._regex_spent(rule, page.url, before, budget)
        refused = response.meta.get("ban_signal")
        if refused is None and not links and looks_like_captcha(page.body):
            refused = "challenge page"
            self.bans.signal(
                rule.site, Signal(page.url, page.status, refused, response.meta.get("proxy_id"), shared_now())
            )
        if refused is not None:
            yield from self._retry_refused(response, rule, refused)
            return
        self.bans.ok(rule.site, response.meta.get("proxy_id"))
        self.count(f"crawl/links/{rule.site}", len(links))
        requests = [_linked(rule, url, work) for url in links]
        fresh = self._queue_new(rule, requests, _request(response))
        self._record_visit(rule, work, fresh)
        if work.page < rule.max_pages:
            next_url = rule.next_page_url(page.url, root, encoding=page_encoding(page))
            if next_url:
                yield _next_listing(rule, INDEX, next_url, work)

    def parse_article(self, response: Response) -> Iterator[Any]:
        # By its first bytes: servers send PDFs as text/plain or octet-stream as often as application/pdf.
        if document_kind(response.body):
            yield from self._document(response)
            return
        rule, page = self._page(response)
        if rule is None or page is None:
            return
        work = _work(response)
        budget = RegexBudget(self.regex_page_seconds)
        before = rule.regex_timeouts
        root = page_tree(page)
        fields = rule.extract_fields(root, budget)
        refused = self._refusal(rule, page, fields)
        if refused is not None:
            yield from self._retry_refused(response, rule, refused)
            return
        self.bans.ok(rule.site, response.meta.get("proxy_id"))
        body = fields.get("body")
        if body is not None and len(body) > self.max_body_chars:
            self._body_too_long(response, rule, len(body))
            return
        self.count(f"fields/pages/{rule.site}")
        for name, value in fields.items():
            # A standard field the rule does not give is missing on every page: no sign of anything.
            if value is None and name in rule.fields:
                self.count(f"fields/missing/{name}/{rule.site}")
        entry = _entry(response.meta)
        for name in ENTRY_FIELDS:
            if fields.get(name) is None and isinstance(entry.get(name), str):
                fields[name] = entry[name]
                self.count(f"fields/from_feed/{name}/{rule.site}")
        if fields.get("title") is None:
            # The title qRead reads (<title>, og:title, <h1>), from the tree parsed already: no extraction.
            fields["title"] = page_title(root)
            if fields["title"] is not None:
                self.count(f"fields/from_page/title/{rule.site}")
        yield Article(
            site=rule.site,
            url=page.url,
            fetched_at=_fetched_now(),
            title=fields.pop("title", None),
            body=fields.pop("body", None),
            published=fields.pop("published", None),
            author=fields.pop("author", None),
            fields=fields,
            job=work.job,
            redirected_from=_redirected_from(response),
            first_seen=_stored_first_seen(response),
            find_week=work.again and _stored_first_seen(response) is None,
            page=Page(page.text, rule.min_body_chars),
        )
        if work.depth < rule.depth:
            links = self._article_links(rule, work, page, root, budget, "the article page")
            requests = [_linked(rule, url, work, depth=work.depth + 1) for url in links]
            self._queue_new(rule, requests, _request(response))
        self._regex_spent(rule, page.url, before, budget)

    def _document(self, response: Response, discover: Discovered | None = None) -> Iterator[Article]:
        """An article link that gives a PDF or DOCX document: an item whose text and metadata a text
        process reads (off the crawl thread), with what a feed or API said of it (or, for a page of a
        discover crawl, how it was reached: ``discover``); one over ``DOCUMENTS_MAX_BYTES`` is
        dead-lettered saying so."""
        rule = self._rule(response)
        if rule is None:
            return
        self.count(f"crawl/pages/{rule.site}")
        limit = self.crawler.settings.getint("DOCUMENTS_MAX_BYTES")
        if len(response.body) > limit:
            size = len(response.body)
            reason = f"{response.url} is a document of {size:,} bytes, over DOCUMENTS_MAX_BYTES ({limit:,})"
            self._unreadable(response, f"crawl/document_too_large/{rule.site}", reason, "document too large")
            return
        said = _entry(response.meta)
        yield Article(
            site=rule.site,
            url=response.url,
            fetched_at=_fetched_now(),
            title=said.get("title"),
            published=said.get("published"),
            author=said.get("author"),
            job=_work(response).job,
            redirected_from=_redirected_from(response),
            first_seen=_stored_first_seen(response),
            find_week=_work(response).again and _stored_first_seen(response) is None,
            page=Page("", rule.min_body_chars, document=response.body),
            discover=discover,
        )

    def on_error(self, failure: Failure) -> None:
        """A request that failed still ends, and is counted: refused by the network guard, it is counted
        as refused and logged with how to allow it (a request of a site with no rule here is dead-lettered
        saying so, as when it is taken: no rule was there to allow it); refused on purpose (robots.txt,
        a captcha page), it is skipped; failed (an HTTP error status, the network, a timeout, after
        Scrapy's retries), it is dead-lettered with the reason. A download the crawl's stop cancelled
        (:class:`DownloadStopped`) ends nothing: its lease is held, and returned to the queue as the crawl
        closes."""
        request: Request = failure.request  # type: ignore[attr-defined]
        if isinstance(failure.value, DownloadStopped):
            logger.debug("%s: its lease goes back to the queue as the crawl closes", failure.value)
            return
        work = Work.of(request)
        site = work.site or "unknown"
        guarded = blocked_by_guard(failure) or (
            failure.value if isinstance(failure.value, BlockedRequest) else None
        )
        if guarded is not None:
            rule = self.rule_of(work.site)
            if rule is None and work.site:
                self._no_rule(request, work.site)
                return
            host = urlsplit(request.url).hostname or ""
            self.count(f"crawl/refused/{site}")
            if rule is not None and rule.discover is None and rule.allows_host(host):
                self.count(f"crawl/refused_on_domains/{site}")
            count_job(request, "refused")
            hint = rule.private_refusal(host) if rule else ALLOW_HINT
            logger.log(
                job_level(self.crawler, work.job), "Refused %s: %s; %s", request.url, guarded.reason, hint
            )
            ack(self.crawler, request)
            return
        if isinstance(failure.value, OffSiteRedirect):
            self._off_site(request, work, failure.value)
            return
        if (
            isinstance(failure.value, IgnoreRequest)
            and not isinstance(failure.value, HttpError)
            and not _too_many_redirects(failure)
            and not _too_large_decompressed(failure)
        ):
            self.count(f"crawl/ignored/{site}")
            message = failure.getErrorMessage()
            count_job(request, "skipped")
            count_job(request, SKIP_PREFIX + _skip_cause(message))
            logger.info("Ignored %s: %s", request.url, message)
            if work.is_discover and work.site and work.job and message.startswith(ROBOTS_REFUSAL):
                discovery_of(self.crawler).disallowed(work.site, work.job, work.lease, request.url)
            count_job(request, "unfetched")
            ack(self.crawler, request)
            return
        self.count(f"crawl/errors/{site}")
        reason = self._reason(failure, work)
        proxy = request.meta.get("proxy_id")
        if proxy:
            reason += f" (through the proxy {proxy})"
        kind = _kind(failure, self.url_limit)
        dead_letter(self.crawler, request, reason, kind)
        rule = self.rule_of(work.site)
        if rule is not None and (work.kind in LISTING_PAGES or _is_seed(work)):
            self._failed_listing(rule, request, work, reason, kind)

    # --- helpers ---------------------------------------------------------------------------------------

    def _not_modified(self, response: Response) -> None:
        """An index page unchanged since the last read (conditional request, 304): nothing new on it."""
        work = _work(response)
        rule = self.rule_of(work.site)
        if rule is None:
            return
        self.count(f"crawl/not_modified/{rule.site}")
        self._record_visit(rule, work, 0, not_modified=True)

    def _record_visit(self, rule: Rule, work: Work, found_new: int, *, not_modified: bool = False) -> None:
        """A listing page was read: when it is a regular grab's first (its rule's first start URL; else its
        first feed, for a site with no index page; else its first sitemap, API or search page), its news
        adapts the site's revisit interval, once a grab whatever the number of start URLs."""
        if work.adapts and work.is_grab:
            self.revisits.record(rule, found_new, shared_now(), not_modified=not_modified)

    def _reason(self, failure: Failure, work: Work) -> str:
        """Why a request failed, in one line (never empty)."""
        error = failure.value
        request: Request = failure.request  # type: ignore[attr-defined]
        after = f" (after {counted(work.retries, 'retry', 'retries')})" if work.retries else ""
        if isinstance(error, HttpError):
            status = error.response.status
            answer = f"HTTP {status} {http.client.responses.get(status, '')}".rstrip()
            unfollowed = unfollowed_redirect(error.response, self.url_limit)
            if unfollowed is not None:
                return f"{answer}: a redirect to {unfollowed.target}, not followed: {unfollowed.why}"
            return answer + after
        if isinstance(error, DownloadCancelledError | CancelledError):
            declared = DECLARED_PAST_MAXSIZE.match(str(error))
            if declared is not None:
                return (
                    f"download cancelled: the response was larger than DOWNLOAD_MAXSIZE ({int(declared[2]):,}"
                    f" bytes): {int(declared[1]):,} bytes by its Content-Length{self._larger_size(request)}"
                )
            detail = str(error) or (
                f"the response was larger than DOWNLOAD_MAXSIZE ({self.max_size:,} bytes) or its download"
                " was stopped"
            )
            return f"download cancelled: {detail}{self._larger_size(request)}"
        if isinstance(error, DownloadTimeoutError | TxTimeoutError):
            limit = request.meta.get("download_timeout") or self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
            return (
                f"timed out: {failure.getErrorMessage() or type(error).__name__}{after}; a site that is only"
                f" slow needs a longer DOWNLOAD_TIMEOUT than {limit:g} s:"
                f" `-s DOWNLOAD_TIMEOUT={2 * limit:g}` on the crawl's command (worker, run or temp), then"
                " requeue it"
            )
        if _too_large_decompressed(failure):
            return f"download cancelled: {failure.getErrorMessage()}{self._larger_size(request)}"
        if _too_many_redirects(failure):
            limit = self.crawler.settings.getint("REDIRECT_MAX_TIMES")
            return f"too many redirects: more than {limit} (REDIRECT_MAX_TIMES): {redirects(request)}"
        check = what_to_check(error, request.meta.get("proxy_id"))
        advice = f"; {check}" if check else ""
        lost = connection_lost(error)
        if lost is not None:
            return f"{lost.rstrip('.') if advice else lost}{after}{advice}"
        undecoded = undecompressed(error)
        if undecoded is not None:
            return f"{undecoded}{after}"
        return f"{type(error).__name__}: {failure.getErrorMessage() or 'no message'}{after}{advice}"

    def _larger_size(self, request: Request) -> str:
        """What to do about a page lost to the size limit, as the timeout's reason says."""
        limit = int(request.meta.get("download_maxsize", self.max_size))
        return (
            f"; a page this large needs a larger DOWNLOAD_MAXSIZE than {limit:,} bytes:"
            f" `-s DOWNLOAD_MAXSIZE={2 * limit}` on the crawl's command (worker, run or temp), then"
            " requeue it"
        )

    def _refusal(self, rule: Rule, page: TextResponse, fields: dict[str, str | None]) -> str | None:
        """What the article page is instead of the article, when it looks refused (see
        :mod:`crawler.worker.bans`): a login page it was redirected to, a challenge page, an empty page
        where the rule's fields matched before. A page with its title and its body is never refused."""
        proxy = page.meta.get("proxy_id")
        what = page.meta.get("ban_signal")
        if what is None:
            if any(value is not None for value in fields.values()):
                self.matched[rule.site] = self.matched.get(rule.site, 0) + 1
            # A page whose fields hold its article is never refused: its bytes are not searched then.
            if (
                not self._complete_by_rule(rule, fields)
                and looks_like_captcha(page.body)
                and not self._complete_by_qread(rule, page, fields)
            ):
                what = "challenge page"
            elif (
                all(value is None for value in fields.values())
                and len(page.body) < EMPTY_PAGE_BYTES
                and self.matched.get(rule.site, 0) >= EMPTY_AFTER_MATCHED
            ):
                what = "empty page"
            if what is not None:
                self.bans.signal(rule.site, Signal(page.url, page.status, what, proxy, shared_now()))
        return what

    @staticmethod
    def _complete_by_rule(rule: Rule, fields: dict[str, str | None]) -> bool:
        """The rule's fields hold an article: its title (when the rule reads one) and a body of
        ``min_body_chars``."""
        titled = "title" not in rule.fields or bool(fields.get("title"))
        return titled and len(fields.get("body") or "") >= rule.min_body_chars

    @staticmethod
    def _complete_by_qread(rule: Rule, page: TextResponse, fields: dict[str, str | None]) -> bool:
        """The page holds an article by qRead: its title (when the rule reads one) and a body of
        ``min_body_chars`` from qRead."""
        if "title" in rule.fields and not fields.get("title"):
            return False
        return len(extract(page.text, url=page.url, title=fields.get("title")).text) >= rule.min_body_chars

    def _retry_refused(self, response: Response, rule: Rule, what: str) -> Iterator[Request]:
        """A refused page is tried again (Scrapy's retries, after the site's backoff if a ban was declared),
        and at the end dead-lettered with what it was."""
        request = response.request
        assert request is not None
        self.count(f"crawl/refused_page/{rule.site}")
        retry = get_retry_request(request, spider=self, reason=what)
        if retry is None:
            retries = request.meta.get("retry_times", 0)
            reason = (
                f"{what} instead of the page at {response.url} (after {counted(retries, 'retry', 'retries')})"
            )
            dead_letter(self.crawler, request, reason, what)
            return
        yield retry

    def _regex_spent(self, rule: Rule, page_url: str, before: int, budget: RegexBudget) -> None:
        """Count the rule's regular expressions that ran out of time on the page at ``page_url`` (they
        matched nothing), and those skipped once the page's budget was spent."""
        timeouts = rule.regex_timeouts - before
        if timeouts:
            self.count(f"rules/regex_timeout/{rule.site}", timeouts)
        if budget.skipped:
            self.count(f"rules/regex_skipped/{rule.site}", budget.skipped)
            spent = (
                f"{rule.site}: the rule's regular expressions spent their {self.regex_page_seconds:g} s on"
            )
            level, since = self._regex_spent_pages.said(
                _SEARCHES_SKIPPED, f"{spent} {page_url}", logging.WARNING
            )
            logger.log(
                level,
                "%s %s: %s skipped%s",
                spent,
                page_url,
                counted(budget.skipped, "search", "searches"),
                since,
            )

    def _listing_rule(self, response: Response) -> Rule | None:
        """The rule of a feed, sitemap or API page to read; None when there is none to read: a 304 (counted,
        its visit recorded) or a site without rule (dead-lettered)."""
        if response.status == 304:
            self._not_modified(response)
            return None
        rule = self._rule(response)
        if rule is not None:
            self.count(f"crawl/pages/{rule.site}")
        return rule

    def _body_too_long(self, response: Response, rule: Rule, chars: int) -> None:
        """An article page whose rule's body has ``chars`` characters, over ``TEXT_MAX_BODY_CHARS``:
        dead-lettered naming the limit and how to raise it, counted ``crawl/body_too_long/<site>``."""
        reason = str(BodyTooLongError(response.url, "the rule's body", chars, self.max_body_chars))
        self._unreadable(response, f"crawl/body_too_long/{rule.site}", reason, "body too long")

    def _unreadable(self, response: Response, counter: str, reason: str, kind: str) -> None:
        """A page that is not what its request was for: fetched all the same (its job counts it, and its
        dead letter says so: requeued, the fetch is taken back), ``counter`` counted, the request
        dead-lettered with ``reason``."""
        self.count(counter)
        assert response.request is not None
        dead_letter(self.crawler, response.request, reason, kind, fetched=True)

    def _not_a_listing(self, rule: Rule, response: Response, what: str, key: str) -> None:
        """The page a rule's ``key`` (``feeds``, ``sitemaps``) led to is an HTML page, no ``what`` at all: a
        warning, and a note for its job's summary, naming the URL, what it is, and the rule file and key
        to mend (the key's URLs compared as requested: percent-encoded). Nothing for a page of another
        type: its dead letter says what is wrong with it."""
        assert response.request is not None
        content_type = response.headers.get(b"Content-Type")
        got = content_type.decode("latin-1").split(";")[0].strip().lower() if content_type else ""
        if got not in _HTML_TYPES:
            return
        fix = rule.named_fix(_asked_url(response.request), what) or (
            f"a {what} that `{key}` in {rule.path} leads to lists it: the site lists a page that is no {what}"
        )
        note = (
            f"{response.url} is not a {what} (got {got}): {fix}"
            f" (`{suggest(f'rules try {rule.site} URL')}` shows what a URL holds)"
        )
        job = _work(response).job
        logger.log(job_level(self.crawler, job), "%s: %s", rule.site, note)
        self._note(job, response.url, note)

    def _failed_listing(self, rule: Rule, request: Request, work: Work, reason: str, kind: str) -> None:
        """A listing request that failed for good (``reason``: ``HTTP 404 Not Found``, a timeout...; of
        ``kind``) whose URL, as first asked, is one the rule names (a start URL, a feed, a sitemap, the
        API's first page, a discover seed): a note for its job's summary naming the URL, the reason, and
        the rule file and key to mend; when the site did not answer (``NO_ANSWER``), first how to ask again
        once it does."""
        asked = _asked_url(request)
        fix = rule.named_fix(asked, "seed" if _is_seed(work) else work.kind)
        if fix is None:
            return
        if kind in NO_ANSWER:
            again = suggest(f"dead requeue --site {rule.site}")
            fix = f"the site did not answer: `{again}` asks again once it does; if the URL is wrong, {fix}"
        note = (
            f"{asked} could not be read ({reason}): {fix} (`{suggest(f'rules try {rule.site} URL')}` shows"
            " what a URL holds)"
        )
        self._note(work.job, asked, note)

    def _note(self, job: str | None, url: str, note: str) -> None:
        """``note`` on ``url`` kept for ``job``'s summary (``note:<url>``)."""
        if not job:
            return
        try:
            wrote = write_job(self.crawler, job, "HSET", f"note:{url}", redacted_text(note))
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"note in job {job}'s summary: {note}", exc)
            return
        outage_of(self.crawler).ok(wrote=wrote)

    def _drop_note(self, job: str, url: str) -> None:
        """Forget the note on ``url`` kept for ``job``'s summary, if any."""
        try:
            self.server.hdel(self.keys.job(job), f"note:{url}")
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"drop the note on {url} in job {job}'s summary", exc)
            return
        outage_of(self.crawler).ok(wrote=True)

    def _rule(self, response: Response) -> Rule | None:
        """The response's rule; without one, the request is dead-lettered saying how to mend it."""
        site = _work(response).site
        rule = self.rule_of(site)
        if rule is None:
            assert response.request is not None
            self._no_rule(response.request, site)
        return rule

    def set_aside_unruled(self, request: Request) -> bool:
        """End ``request`` before its download when this worker has no rule of its site (:meth:`_no_rule`):
        put back when it cannot read the site's rule file, dead-lettered ``no rule`` when there is no file
        of it; its page would be fetched for nothing. False when the rule is read (or the request names no
        site)."""
        site = Work.of(request).site
        if not site or self.rule_of(site) is not None:
            return False
        self._no_rule(request, site)
        return True

    def _no_rule(self, request: Request, site: str) -> None:
        """Dead-letter ``request`` of ``site``, which has no rule here, saying how to mend it; one whose
        rule file is here but cannot be read by this worker is put back (:meth:`_rule_unreadable`)."""
        errors = self.unreadable.get(site)
        if errors is not None:
            self._rule_unreadable(request, site, errors)
            return
        self.count("crawl/no_rule")
        reason = self._no_rule_reason(site)
        self._say_unruled(request, site, reason, unreadable=False)
        dead_letter(self.crawler, request, reason, "no rule", quiet=True)

    def _say_unruled(self, request: Request, site: str, reason: str, *, unreadable: bool) -> None:
        """Say ``request`` of ``site`` dead-lettered with ``reason`` for want of a rule here (its file
        removed, or ``unreadable``): the first whole with what befalls the site's other requests, the next
        at most once a minute with their count (:class:`RepeatedFaults`)."""
        level, end = self._unruled.said_first(
            _DEAD_LETTERED,
            reason,
            job_level(self.crawler, Work.of(request).job),
            lambda said: f"; {self._unruled_to_come(site, said, unreadable=unreadable)}",
        )
        logger.log(
            level,
            "Dead-lettered %s of site %r: %s%s",
            redacted(request.url),
            site,
            redacted_text(reason),
            end,
        )

    def _no_rule_reason(self, site: str) -> str:
        """Why a request of ``site`` is dead-lettered when this worker has no rule of it, and the fix."""
        # Host and whole path: the dead letter is read on any machine, whose own rules folder may have it.
        folder = f"{socket.gethostname()}:{Path(self.crawler.settings['CRAWLER_RULES_DIR']).resolve()}"
        return (
            f"no rule for site {site!r} in {folder}, the rules folder of the worker that took it: add or"
            f" fix its rule file there (`{suggest('rules check')}`), then"
            f" `{suggest(f'dead requeue --site {site}')}`; a site removed on purpose:"
            f" `{suggest(f'dead drop --site {site}')}`"
        )

    def _unruled_to_come(self, site: str, said: str, *, unreadable: bool) -> str:
        """What the first line of a site with no rule adds: how many of its requests are queued still (or
        pending, put back to wait, for a rule file ``unreadable``), and that those this worker takes are
        dead-lettered alike, ``said`` as :meth:`RepeatedFaults.said_first` phrases it."""
        state, count = ("pending", self.queue.pending) if unreadable else ("queued", self.queue.queued)
        try:
            left = f" ({count(site)} {state} now)"
        except redis.RedisError as exc:
            outage_of(self.crawler).failed(f"count the requests of site {site} {state}", exc)
            left = ""
        else:
            outage_of(self.crawler).ok(wrote=False)
        alike = (
            "are put back alike and dead-lettered once their tries are used up, until its rule file is read"
            if unreadable
            else "are dead-lettered alike until its rule is read again"
        )
        return f"the site's other requests this worker takes{left} {alike}, {said}"

    def _rule_unreadable(self, request: Request, site: str, errors: str) -> None:
        """``request`` of ``site``, whose rule file this worker found but cannot load (``errors``): a rule
        key of a newer version during a rolling upgrade, a file broken or not yet synced on this machine
        alone, which another worker may read. Put back for ``RULES_UNREADABLE_RETRY_SECONDS``, counted
        ``crawl/rule_unreadable/<site>``, the file's errors warned of once with the fix; dead-lettered
        with them after ``RULES_UNREADABLE_MAX_ATTEMPTS`` tries, said as a removed file's
        (:meth:`_say_unruled`)."""
        self.count(f"crawl/rule_unreadable/{site}")
        settings = self.crawler.settings
        seconds = settings.getfloat("RULES_UNREADABLE_RETRY_SECONDS")
        attempts = settings.getint("RULES_UNREADABLE_MAX_ATTEMPTS")
        fix = (
            "run the crawler version the rule is written for on this machine (a key of a newer version), or"
            f" mend the file here (`{suggest('rules check')}`)"
        )
        said = "; ".join(errors.splitlines())
        if (site, errors) not in self._unreadable_warned:
            self._unreadable_warned.add((site, errors))
            logger.warning(
                "This worker cannot read the rule file of site %r (%s): the requests of the site it takes are"
                " put back for another worker, tried again every %g s, dead-lettered after %s; %s",
                site,
                said,
                seconds,
                counted(attempts, "try", "tries"),
                fix,
            )
        reason = (
            f"the worker that took it cannot read the rule file of site {site!r} ({said}): {fix}, then"
            f" `{suggest(f'dead requeue --site {site}')}`"
        )
        dead = put_back(self.crawler, request, reason, seconds=seconds, max_attempts=attempts, kind="no rule")
        if dead is not None:
            self._unreadable_dead[site] = dead
            self._say_unruled(request, site, dead, unreadable=True)

    def _page(self, response: Response) -> tuple[Rule | None, TextResponse | None]:
        """The response's rule and the response as text, decoded by
        :func:`extractors.encoding.decode_checked` (the rule's encoding when it sets one): by
        :class:`~crawler.worker.pagetext.DecodeOnceMiddleware` already, for the HTML pages it decoded."""
        rule = self._rule(response)
        if rule is None:
            return None, None
        # A JSON document's selector would have the JSON data as its root, not a tree.
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        sent = content_type or "no Content-Type"
        job = _work(response).job
        if not isinstance(response, TextResponse) or isinstance(response, JsonResponse):
            self._not_html(rule.site, _request(response))
            logger.log(job_level(self.crawler, job), "Not an HTML page (%s), skipped: %s", sent, response.url)
            return rule, None
        # Scrapy trusts a text Content-Type: an image sent as text/html would be read as a page of mojibake.
        binary = sniff_binary(response.body, content_type)
        if binary is not None:
            self._not_html(rule.site, _request(response))
            logger.log(
                job_level(self.crawler, job),
                "Not an HTML page (%s, but it looks like %s), skipped: %s",
                sent,
                binary,
                response.url,
            )
            return rule, None
        self.count(f"crawl/pages/{rule.site}")
        text, decoded = page_text(response, rule.encoding)
        self._doubted(rule, response.url, decoded, job)
        return rule, text

    def _doubted(self, rule: Rule, url: str, decoded: Decoded, job: str | None) -> None:
        """Warn of, and count, a page whose declared charset left many U+FFFD (decoded again by detection
        when that fits far better: a site that declares UTF-8 and sends GBK), or whose rule's encoding left
        U+FFFD (decoded in the page's own encoding when that decodes it: the warning says which key to
        change, once a site; the count is status's)."""
        doubt = decoded.doubt
        if doubt is None:
            return
        if doubt.source == "given":
            self._rule_encoding_doubted(rule, url, doubt)
            return
        if doubt.better is None:
            self.count(f"crawl/charset_undecodable/{rule.site}")
            logger.log(
                job_level(self.crawler, job),
                "%s: %d characters cannot be decoded as %s (declared), and detection does no better",
                url,
                doubt.replaced,
                doubt.encoding,
            )
            return
        self.count(f"crawl/charset_mismatch/{rule.site}")
        logger.log(
            job_level(self.crawler, job),
            "%s: declared %s, but %d characters cannot be decoded so: decoded as %s (detected)",
            url,
            doubt.encoding,
            doubt.replaced,
            decoded.encoding,
        )

    def _rule_encoding_doubted(self, rule: Rule, url: str, doubt: Doubt) -> None:
        """Count a page (HTML or an API's JSON) that the rule's encoding did not read, or read though the
        page declares UTF-8 and is valid UTF-8 (``doubt.unproven``), and warn of each once a site, naming
        the key."""
        unproven = doubt.unproven is not None
        kind = "unproven_utf8" if unproven else "undecodable"
        self.count(f"crawl/rule_encoding_{kind}/{rule.site}")
        if (rule.site, unproven) not in self._encoding_warned:
            self._encoding_warned.add((rule.site, unproven))
            logger.warning("%s (said once a site)", rule.encoding_doubt(url, doubt))

    def _queue_new(self, rule: Rule, requests: list[Request], page: Request) -> int:
        """Queue the requests, found on ``page``, whose URLs the Bloom filter had not seen (those of a job
        that fetches seen URLs again: not queued in the job before), marking them seen in the same Redis
        call; how many were queued. The page's job counts the article links found (``links``: none on its
        index pages, its summary says so)."""
        kept = [request for request in requests if len(request.url) <= self.url_limit]
        if len(kept) < len(requests):
            self.count(f"crawl/url_too_long/{rule.site}", len(requests) - len(kept))
            logger.info(
                "Not following %d links of %s longer than URLLENGTH_LIMIT (%d characters)",
                len(requests) - len(kept),
                rule.site,
                self.url_limit,
            )
        requests = kept
        if not requests:
            return 0
        count_job(page, "links", len(requests))
        fingerprinter = self.crawler.request_fingerprinter
        queued = queue_new(
            self.bloom,
            self.keys,
            requests,
            [fingerprinter.fingerprint(r) for r in requests],
            again_seconds=self.again_seconds,
        )
        met = {
            request.url: entry
            for request, new in zip(requests, queued, strict=True)
            if not new and (entry := _entry(request.meta))
        }
        pipeline = store_pipeline_of(self.crawler) if met else None
        if pipeline is not None:
            pipeline.met(rule.site, met)
        fresh = sum(queued)
        skipped = len(requests) - fresh
        if fresh:
            self.count("bloom/added", fresh)
            self.count("scheduler/enqueued/redis", fresh)
        if skipped:
            self.count("bloom/seen", skipped)
            self.count(f"crawl/seen/{rule.site}", skipped)
            count_job(page, "skipped", skipped)
            count_job(page, SKIP_PREFIX + SEEN_ALREADY, skipped)
        return fresh

    def _queue_listings(self, rule: Rule, requests: list[Request]) -> list[Request]:
        """Queue ``requests``, the sitemaps a sitemap index lists (listing pages: never deduplicated), in
        one round trip to Redis, not one push each through the scheduler (50,000 of them took 72.7 s, 12 s
        of the crawl thread's CPU, in a real worker); those it did not queue: the ones for the scheduler
        when it is not the leased one, none else (one past ``URLLENGTH_LIMIT`` counted, as an article
        link is)."""
        scheduler = scheduler_of(self.crawler)
        if scheduler is None:
            return requests
        kept = [request for request in requests if len(request.url) <= self.url_limit]
        if len(kept) < len(requests):
            self.count(f"crawl/url_too_long/{rule.site}", len(requests) - len(kept))
        queued = sum(
            scheduler.queue.push_many(
                (encode_request(request, self), request.priority, work.slot, work.job)
                for request, work in ((request, Work.of(request)) for request in kept)
            )
        )
        outage_of(self.crawler).ok(wrote=True)
        self.count("scheduler/enqueued/redis", queued)
        if queued < len(kept):
            self.count("scheduler/already_queued", len(kept) - queued)
        return []

    def _off_site(self, request: Request, work: Work, redirect: OffSiteRedirect) -> None:
        """``request`` redirected off its site's domains: not followed, its request ended as skipped
        (a discover request's host counts a page that gave nothing, as one redirected to a page read)."""
        asked = str((request.meta.get("redirect_urls") or [request.url])[0])
        self.count(f"crawl/redirect_off_site/{work.site or 'unknown'}")
        count_job(request, "skipped")
        count_job(request, SKIP_PREFIX + OFF_SITE)
        via = f" (through {request.url})" if request.url != asked else ""
        logger.log(job_level(self.crawler, work.job), "Skipped %s%s: %s", asked, via, redirect)
        if work.is_discover and work.site:
            discovery_of(self.crawler).gave_nothing(work.site, asked)
        count_job(request, "unfetched")
        ack(self.crawler, request)

    def _not_html(self, site: str, page: Request) -> None:
        """Count ``page``, of ``site``, skipped as no HTML page, for the site and as a skip of its job."""
        self.count(f"crawl/not_text/{site}")
        count_job(page, "skipped")
        count_job(page, SKIP_PREFIX + NOT_HTML)

    def closed(self, reason: str) -> None:
        """The spider closes (Scrapy calls it, ``reason`` unused): the requests of sites with no rule not
        said yet are said with their count, and so are the pages whose regular expressions spent their
        time."""
        self._unruled.close()
        self._regex_spent_pages.close()

    def count(self, key: str, amount: int = 1) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key, amount)


def _skip_cause(message: str) -> str:
    """Why a request was ignored on purpose (its IgnoreRequest's ``message``), as its job counts the skip:
    a cause of a few words, the same for every request so refused."""
    if message.startswith(ROBOTS_REFUSAL):
        return ROBOTS_DISALLOWED
    return "ignored (the worker's log says why: Ignored URL)"


def _too_many_redirects(failure: Failure) -> bool:
    """Scrapy's redirect middleware gave the request up: more redirects than ``REDIRECT_MAX_TIMES``."""
    return isinstance(failure.value, IgnoreRequest) and str(failure.value) == "max redirections reached"


def _too_large_decompressed(failure: Failure) -> bool:
    """Scrapy's decompression gave the response up: its body grew past ``DOWNLOAD_MAXSIZE`` (an
    IgnoreRequest, yet a page lost to the size limit as one cancelled while downloading is)."""
    return isinstance(failure.value, IgnoreRequest) and DECOMPRESSED_PAST_MAXSIZE in str(failure.value)


def _kind(failure: Failure, url_limit: int) -> str:
    """The kind of a failed download, as errors are counted and summed up: ``HTTP 404``, ``DNS``,
    ``timeout``, ``connection``, ``size limit``, ``content encoding``, ``too many redirects``, a redirect
    not followed (``redirect too long``, ``redirect to no URL``; ``url_limit`` is ``URLLENGTH_LIMIT``), else
    the exception's name."""
    error = failure.value
    if isinstance(error, HttpError):
        unfollowed = unfollowed_redirect(error.response, url_limit)
        if unfollowed is not None:
            return unfollowed.kind
        return f"HTTP {error.response.status}"
    if _too_many_redirects(failure):
        return "too many redirects"
    if isinstance(error, DNSLookupError | CannotResolveHostError):
        return "DNS"
    if isinstance(error, DownloadTimeoutError | TxTimeoutError):
        return "timeout"
    if isinstance(error, DownloadCancelledError | CancelledError) or _too_large_decompressed(failure):
        return "size limit"
    if isinstance(error, DECOMPRESSION_ERRORS):
        return "content encoding"
    if head_too_long(error) is not None:
        return "header too long"
    if isinstance(
        error,
        ConnectError
        | ConnectionLost
        | ResponseFailed
        | DownloadConnectionRefusedError
        | DownloadFailedError
        | ResponseDataLossError,
    ):
        return "connection"
    return type(error).__name__


def _linked(
    rule: Rule, url: str, work: Work, *, entry: Mapping[str, str] | None = None, depth: int = 1
) -> Request:
    """The request for an article page ``work``'s page links: of its job, boost and kind, fetched again
    though seen when its job fetches seen URLs again (``crawler temp SITE --again``)."""
    return article_request(
        rule,
        url,
        job=work.job,
        depth=depth,
        boost=work.boost,
        job_kind=work.job_kind,
        again=work.again,
        entry=entry,
    )


def _next_listing(rule: Rule, kind: str, url: str, work: Work, *, seen: Sequence[str] = ()) -> Request:
    """The request for the listing page of ``kind`` that follows ``work``'s (its next index, search or API
    page, or a sitemap its sitemap index lists): one page further, of its job, boost, kind and --again flag;
    ``seen``: an API chain's pages before it."""
    return listing_request(
        rule,
        kind,
        url,
        job=work.job,
        page=work.page + 1,
        seen=seen,
        boost=work.boost,
        job_kind=work.job_kind,
        again=work.again,
    )


def _request(response: Response) -> Request:
    assert response.request is not None
    return response.request


def _work(response: Response) -> Work:
    return Work.of(_request(response))


def _is_seed(work: Work) -> bool:
    """A discover crawl's seed (depth 0): a page its rule names, as a start URL is."""
    return work.is_discover and work.depth == 0


def _asked_url(request: Request) -> str:
    """The URL ``request`` first asked for, before any redirect."""
    return str(request.meta.get("redirect_urls", [request.url])[0])


def _redirected_from(response: Response) -> tuple[str, ...]:
    """The URLs the request of ``response`` was redirected from, first the one asked for; none when it was
    not redirected."""
    return tuple(str(url) for url in response.meta.get("redirect_urls", ()))


def _entry(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a feed's, sitemap's or API's entry said of an article URL (its title, published, author), from
    the ``meta`` of its request; empty when none did."""
    entry = meta.get("entry")
    return entry if isinstance(entry, dict) else {}


def _fetched_now() -> str:
    """An article's ``fetched_at`` (its ``first_seen`` when new), now by Redis's clock, as ISO-8601 UTC:
    compared with its job's ``created``, and with the fetches of workers on other machines."""
    return datetime.fromtimestamp(shared_now(), UTC).isoformat(timespec="microseconds")


def _stored_first_seen(response: Response) -> str | None:
    """The ``first_seen`` of the stored document that the request of ``response`` re-read (``crawler temp
    --stored``), when its page is still at that URL (not redirected: another URL is another document);
    else None."""
    first_seen = response.meta.get("first_seen")
    if not isinstance(first_seen, str) or response.meta.get("redirect_urls"):
        return None
    return first_seen


# The port a scheme's URLs use when they name none.
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _robots_host(url: str) -> str:
    """The host whose robots.txt ``url`` reads, as its crawl-delay is kept (``Keys.crawl_delays``): lower
    case, its port only when not the scheme's default, without the user and password a URL may carry (they
    would be written to Redis and the log). One robots.txt read is one entry, whichever way its URLs name
    it, so a read that asks for no crawl-delay drops the one it asked for before. The scheme is left out,
    as the robots.txt middleware leaves it out (one parse per host and port serves http and https: RFC 9309
    has one robots.txt each), and as the entries written before this were keyed (the URL's netloc)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return host if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()) else f"{host}:{port}"
