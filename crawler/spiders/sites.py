"""The one spider: it serves every site rule, reading its work from the shared leased queue.

Index pages (a rule's start URLs and their pagination) are always fetched again; the article links they
give go through the Bloom filter, a page's links in one Redis call after they are deduplicated within the
page, so an article URL is fetched once. Article pages give one item each and are not followed further
unless the rule's ``depth`` says so.

Seeds also come as JSON from the ``crawler:seeds`` list (``{"site": ..., "url": ..., "kind":
"index"|"article", "job": ...}``), read with our own parsing: scrapy-redis would turn extra keys into a
form body. The command line queues its seeds straight into the leased queue instead, so none can be lost
between a pop and a schedule.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.settings import BaseSettings
from scrapy_redis.spiders import RedisSpider
from twisted.python.failure import Failure

from crawler.middlewares import ack
from crawler.queue import Keys
from crawler.revisit import Revisits
from crawler.rules import Rule, RuleSet, load_rules
from crawler.scheduler import scheduler_of

logger = logging.getLogger(__name__)

INDEX = "index"
ARTICLE = "article"


def index_request(
    rule: Rule,
    url: str,
    *,
    job: str | None = None,
    page: int = 1,
    boost: int = 0,
    job_kind: str | None = None,
) -> Request:
    """A request for one of ``rule``'s index pages (never deduplicated: index pages change). ``boost``
    raises its priority over the rule's own (a temp crawl's, or a productive site's grab)."""
    return Request(
        url,
        meta=_meta(rule, INDEX, job, job_kind, page=page, depth=0, boost=boost),
        headers=rule.headers or None,
        priority=rule.priority + boost + 1,
        dont_filter=True,
    )


def article_request(
    rule: Rule,
    url: str,
    *,
    job: str | None = None,
    depth: int = 1,
    boost: int = 0,
    job_kind: str | None = None,
) -> Request:
    """A request for one of ``rule``'s article pages."""
    return Request(
        url,
        meta=_meta(rule, ARTICLE, job, job_kind, depth=depth, boost=boost),
        headers=rule.headers or None,
        priority=rule.priority + boost,
    )


def _meta(rule: Rule, kind: str, job: str | None, job_kind: str | None, **extra: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"site": rule.site, "kind": kind, "job": job, "download_slot": rule.site, **extra}
    if job_kind is not None:
        meta["job_kind"] = job_kind
    if not rule.obey_robots:
        meta["dont_obey_robotstxt"] = True
    return meta


class SitesSpider(RedisSpider):  # type: ignore[misc]  # scrapy-redis ships no type hints
    name = "sites"

    def __init__(self, *args: Any, sites: str | None = None, job: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.only_sites = {site for site in (sites or "").split(",") if site}
        self.job = job
        self.rules: dict[str, Rule] = {}
        self.rule_errors = 0

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """Per-site politeness: one download slot per rule, with the rule's delay and concurrency."""
        super().update_settings(settings)
        ruleset = load_rules(settings["CRAWLER_RULES_DIR"])
        slots = {
            rule.site: {"delay": rule.delay, "concurrency": rule.concurrency}
            for rule in ruleset.rules.values()
        }
        settings.set("DOWNLOAD_SLOTS", {**settings.getdict("DOWNLOAD_SLOTS"), **slots}, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider: Self = super().from_crawler(crawler, *args, **kwargs)
        spider.keys = Keys(crawler.settings["REDIS_KEY_PREFIX"])
        spider.load(load_rules(crawler.settings["CRAWLER_RULES_DIR"]))
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        return spider

    def setup_redis(self, crawler: Crawler | None = None) -> None:
        assert crawler is not None
        self.redis_key = f"{crawler.settings['REDIS_KEY_PREFIX']}:seeds"
        super().setup_redis(crawler)
        self.revisits = Revisits(
            self.server,
            crawler.settings["REDIS_KEY_PREFIX"],
            min_factor=crawler.settings.getfloat("SCHEDULE_ADAPT_MIN_FACTOR", 0.5),
            max_factor=crawler.settings.getfloat("SCHEDULE_ADAPT_MAX_FACTOR", 4.0),
        )

    def load(self, ruleset: RuleSet) -> None:
        """Take the valid rules; a broken rule is logged (and counted when the crawl opens), and never
        stops the others."""
        for error in ruleset.errors:
            logger.error("%s", error)
        self.rule_errors = len(ruleset.errors)
        self.rules = {
            site: rule
            for site, rule in ruleset.rules.items()
            if not self.only_sites or site in self.only_sites
        }
        logger.info("Serving %d site rules: %s", len(self.rules), ", ".join(sorted(self.rules)))

    def opened(self) -> None:
        if self.rule_errors:
            self.count("rules/errors", self.rule_errors)

    async def start(self) -> AsyncIterator[Request]:
        for request in self.next_requests():
            yield request

    def make_request_from_data(self, data: bytes) -> Request | None:
        """A seed from the ``seeds`` list: JSON with ``site``, ``url``, and optional ``kind`` and ``job``."""
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
        rule = self.rules.get(str(seed.get("site")))
        if rule is None:
            logger.error("Seed names no known site rule, dropped: %r", seed)
            self.count("seeds/unknown_site")
            return None
        job = seed.get("job") if isinstance(seed.get("job"), str) else None
        if seed.get("kind", INDEX) == ARTICLE:
            return article_request(rule, seed["url"], job=job)
        return index_request(rule, seed["url"], job=job)

    def spider_idle(self) -> None:
        """More seeds if any; a job's crawl closes when the job has nothing pending, a worker never."""
        self.schedule_next_requests()
        scheduler = scheduler_of(self.crawler)
        if self.job is not None and scheduler is not None and scheduler.queue.job_pending(self.job) <= 0:
            return
        raise DontCloseSpider

    # --- callbacks -------------------------------------------------------------------------------------

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        """Requests queued from outside a crawl have no callback: their ``kind`` says which page it is."""
        if response.meta.get("kind") == ARTICLE:
            return self.parse_article(response)
        return self.parse_index(response)

    def parse_index(self, response: Response) -> Iterator[Request]:
        if response.status == 304:
            self._not_modified(response)
            return
        rule, page = self._page(response)
        if rule is None or page is None:
            return
        before = rule.regex_timeouts
        links = rule.article_links(page.url, page.selector.root)
        self._regex_timeouts(rule, before)
        self.count(f"crawl/links/{rule.site}", len(links))
        job, boost, job_kind = (
            response.meta.get("job"),
            int(response.meta.get("boost", 0)),
            self._job_kind(response),
        )
        requests = [article_request(rule, url, job=job, boost=boost, job_kind=job_kind) for url in links]
        fresh = list(self._unseen(rule, requests, job))
        yield from fresh
        self._record_visit(rule, response, len(fresh))
        number = int(response.meta.get("page", 1))
        if number < rule.max_pages:
            next_url = rule.next_page_url(page.url, page.selector.root)
            if next_url:
                yield index_request(rule, next_url, job=job, page=number + 1, boost=boost, job_kind=job_kind)

    def parse_article(self, response: Response) -> Iterator[Any]:
        rule, page = self._page(response)
        if rule is None or page is None:
            return
        before = rule.regex_timeouts
        fields = rule.extract_fields(page.selector.root)
        self._regex_timeouts(rule, before)
        self.count(f"fields/pages/{rule.site}")
        for name, value in fields.items():
            if value is None:
                self.count(f"fields/missing/{name}/{rule.site}")
        job = response.meta.get("job")
        yield {
            "site": rule.site,
            "url": page.url,
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "title": fields.pop("title", None),
            "body": fields.pop("body", None),
            "published": fields.pop("published", None),
            "author": fields.pop("author", None),
            "fields": fields,
            "job": job,
            "_html": page.text,
            "_min_body_chars": rule.min_body_chars,
        }
        depth = int(response.meta.get("depth", 1))
        if depth < rule.depth:
            links = rule.article_links(page.url, page.selector.root)
            boost, job_kind = int(response.meta.get("boost", 0)), self._job_kind(response)
            requests = [
                article_request(rule, url, job=job, depth=depth + 1, boost=boost, job_kind=job_kind)
                for url in links
            ]
            yield from self._unseen(rule, requests, job)

    def on_error(self, failure: Failure) -> None:
        """A request that failed (network, HTTP status, robots.txt) still ends its lease, and is counted."""
        request: Request = failure.request  # type: ignore[attr-defined]
        site = request.meta.get("site", "unknown")
        if isinstance(failure.value, IgnoreRequest):
            self.count(f"crawl/ignored/{site}")
            self.job_count(request.meta.get("job"), "skipped")
            logger.info("Ignored %s: %s", request.url, failure.getErrorMessage())
        else:
            self.count(f"crawl/errors/{site}")
            self.job_count(request.meta.get("job"), "errors")
            logger.warning("Failed %s: %s", request.url, failure.getErrorMessage())
        ack(self.crawler, request)

    # --- helpers ---------------------------------------------------------------------------------------

    def _not_modified(self, response: Response) -> None:
        """An index page unchanged since the last read (conditional request, 304): nothing new on it."""
        rule = self.rules.get(str(response.meta.get("site")))
        if rule is None:
            return
        self.count(f"crawl/not_modified/{rule.site}")
        self._record_visit(rule, response, 0, not_modified=True)

    def _record_visit(
        self, rule: Rule, response: Response, found_new: int, *, not_modified: bool = False
    ) -> None:
        """A regular grab's first index page was read: its news adapts the site's revisit interval."""
        if int(response.meta.get("page", 1)) == 1 and self._job_kind(response) == "grab":
            self.revisits.record(rule, found_new, time.time(), not_modified=not_modified)

    @staticmethod
    def _job_kind(response: Response) -> str | None:
        kind = response.meta.get("job_kind")
        return kind if isinstance(kind, str) else None

    def _regex_timeouts(self, rule: Rule, before: int) -> None:
        """Count the rule's regular expressions that ran out of time on this page (they matched nothing)."""
        timeouts = rule.regex_timeouts - before
        if timeouts:
            self.count(f"rules/regex_timeout/{rule.site}", timeouts)

    def _page(self, response: Response) -> tuple[Rule | None, TextResponse | None]:
        """The response's rule and the response as text (the rule's encoding when it sets one)."""
        site = response.meta.get("site")
        rule = self.rules.get(str(site))
        if rule is None:
            self.count("crawl/no_rule")
            logger.error("No rule for site %r of %s: dropped", site, response.url)
            return None, None
        if not isinstance(response, TextResponse):
            self.count(f"crawl/not_text/{rule.site}")
            logger.warning("Not a text page, skipped: %s", response.url)
            return rule, None
        self.count(f"crawl/pages/{rule.site}")
        if rule.encoding:
            response = response.replace(encoding=rule.encoding)
        assert isinstance(response, TextResponse)
        return rule, response

    def _unseen(self, rule: Rule, requests: list[Request], job: str | None) -> Iterable[Request]:
        """The requests whose URLs the Bloom filter had not seen (test-and-set, one Redis call)."""
        scheduler = scheduler_of(self.crawler)
        if scheduler is None or not requests:
            return requests
        seen = scheduler.df.seen_many(requests)
        fresh = [request for request, was_seen in zip(requests, seen, strict=True) if not was_seen]
        for request in fresh:
            request.dont_filter = True  # already tested and set above
        skipped = len(requests) - len(fresh)
        if skipped:
            self.count(f"crawl/seen/{rule.site}", skipped)
            self.job_count(job, "skipped", skipped)
        return fresh

    def count(self, key: str, amount: int = 1) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key, amount)

    def job_count(self, job: str | None, field: str, amount: int = 1) -> None:
        if job:
            self.server.hincrby(self.keys.job(job), field, amount)
