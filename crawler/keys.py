"""Every Redis key the service writes, in one place (as scrapy-redis keeps its ``defaults.py``).

All keys start with the deployment's prefix (``REDIS_KEY_PREFIX``, default ``crawler``), so one Redis can
hold several deployments. What each key holds is described where it is written, named here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

__all__ = [
    "NOT_HTML",
    "NO_BODY",
    "OFF_SITE",
    "ROBOTS_DISALLOWED",
    "SEEN_ALREADY",
    "SKIP_PREFIX",
    "Keys",
    "hour_of",
]

# A job's requests skipped for a cause are counted in its field ``skip:<cause>`` too, beside ``skipped``;
# links and redirects to URLs seen already for the cause ``seen already``, pages robots.txt disallows
# for ``disallowed by robots.txt``, pages fetched that are no HTML page (binary data, a JSON document) for
# ``not an HTML page``, article pages with no body, neither the rule's nor qRead's, for ``no body``,
# requests redirected to a host off their rule's domains for ``redirected off the site``.
SKIP_PREFIX = "skip:"
SEEN_ALREADY = "seen already"
ROBOTS_DISALLOWED = "disallowed by robots.txt"
NOT_HTML = "not an HTML page"
NO_BODY = "no body"
OFF_SITE = "redirected off the site"


def hour_of(moment: float) -> str:
    """The UTC hour of ``moment`` (epoch seconds) as the hourly stats keys name it: ``2026112210``."""
    return _hour_name(int(moment // 3600))


@lru_cache(maxsize=64)
def _hour_name(hour: int) -> str:
    # The crawl names the hour of every counted event: strftime once per hour, not per event.
    return datetime.fromtimestamp(hour * 3600, UTC).strftime("%Y%m%d%H")


class Keys:
    """The Redis keys of one deployment."""

    __slots__ = (
        "attempts",
        "bans",
        "bloom",
        "dead",
        "dead_superseded",
        "dead_unnamed",
        "delayed",
        "downloading",
        "gated",
        "hungry",
        "leader",
        "leader_process",
        "lease_holders",
        "lease_scores",
        "lease_sites",
        "leases",
        "met_entries",
        "met_entries_at",
        "paused",
        "pending",
        "politeness",
        "prefix",
        "ready",
        "redirected",
        "redirected_at",
        "rule_errors",
        "seeds",
        "sequence",
        "since",
        "store_locks",
        "tick_failure",
        "workers",
    )

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        # The leased request queue (crawler/redisio/queue.py), one sorted set of JSON requests per site
        # (queue_of): the sites that may send now, by their first request (a sorted set), and those that
        # wait for their politeness delay or backoff, by the time they may send again (a sorted set).
        self.ready = f"{prefix}:ready"
        # Links that redirected to an article URL seen already, skipped unfetched, until the article's
        # document records them (a hash: the article's URL -> the redirect chains; redisio/redirects.py).
        self.redirected = f"{prefix}:redirected"
        # When each of those notes was noted (a sorted set: the article's URL and the chain, on two lines):
        # old notes are dropped.
        self.redirected_at = f"{prefix}:redirected-at"
        # What a feed's, sitemap's or API's entry said of an article URL seen already (title, date, author),
        # until the article's document takes what it lacks (a hash: the URL -> JSON; redisio/entries.py),
        # and when each was noted (a sorted set: the URL): old notes are dropped.
        self.met_entries = f"{prefix}:met-entries"
        self.met_entries_at = f"{prefix}:met-entries-at"
        self.gated = f"{prefix}:gated"
        # The leases whose download is under way (a set): what a site's concurrency counts.
        self.downloading = f"{prefix}:downloading"
        # The workers whose last pop took nothing while downloads were under way (a sorted set: worker id ->
        # until when it counts as hungry): the sites whose slots other workers' pops free are offered to them.
        self.hungry = f"{prefix}:hungry"
        # Requests being worked on: a sorted set by lease deadline, and each one's queue score and site
        # (hashes; a request waiting in `delayed` keeps them too).
        self.leases = f"{prefix}:leases"
        self.lease_scores = f"{prefix}:lease-scores"
        self.lease_sites = f"{prefix}:lease-sites"
        # Each lease's holder (a hash: member -> the popping worker's id), by which the leases of a worker
        # known dead go back to the queue at once (LeasedQueue.release_holders), not when they expire.
        self.lease_holders = f"{prefix}:lease-holders"
        # Requests whose work could not be finished (their article not stored), tries so far (a hash).
        self.attempts = f"{prefix}:attempts"
        # Requests waiting for their time (a retry's backoff, a deferred store): a sorted set by that time.
        self.delayed = f"{prefix}:delayed"
        # Requests that ended in an error, with the reason (a hash: member -> JSON).
        self.dead = f"{prefix}:dead"
        # The dead letter kept for each page that failed (a hash: queue slot and URL on two lines -> its
        # member in `dead`): the next dead letter of the page replaces it, one a page, not one a grab; the
        # entry goes with its letter (requeued, dropped, or the page fetched again and its request acked).
        self.dead_superseded = f"{prefix}:dead-superseded"
        # What the last full pass that named the dead letters left (a hash): `letters`, the letters less the
        # names in `dead_superseded` (while the count is that, none was written unnamed since, and a read of
        # the letters names none: LeasedQueue.unnamed); `waiting`, those whose name names another letter;
        # `freed`, the names freed so far (a letter gone with its name), and `seen`, those as the pass began:
        # a name freed since while a letter waits for one has the next read name them again.
        self.dead_unnamed = f"{prefix}:dead-unnamed"
        # Requests queued or leased and not yet acknowledged, per site (a hash).
        self.pending = f"{prefix}:pending"
        # Each site's politeness as its rule and robots.txt set it (a hash: site -> JSON: delay, concurrency,
        # crawl_delay), kept apart from its politeness hash (polite): a pop restores that hash from it when
        # it was removed, so the site is never crawled faster than its rule allows.
        self.politeness = f"{prefix}:politeness"
        # The arrival counter that orders requests of one priority.
        self.sequence = f"{prefix}:sequence"
        # JSON seeds pushed by scripts and `scrapy crawl sites` users (a list).
        self.seeds = f"{prefix}:seeds"
        # The Bloom filter of seen article URLs: `<bloom>:meta` and its slices `<bloom>:s0`, `:s1`, ...
        self.bloom = f"{prefix}:bloom"
        # Bans declared, with their evidence (a hash: site -> JSON: when, what, the signals).
        self.bans = f"{prefix}:bans"
        # Workers' heartbeats (a hash: worker id -> JSON), indexed by `<workers>:due` (a sorted set: worker
        # id -> when its next beat is due, by Redis's clock) and `<workers>:in:<pid space>` (a set a pid
        # space of the workers that beat in it): a beat reads only the workers that may be dead
        # (redisio/workers.py).
        self.workers = f"{prefix}:workers"
        # Sites paused by `crawler sites pause` (a hash: site -> epoch seconds it was paused): no regular
        # grab is queued, and their queued requests are held (redisio/queue.py), until they are resumed.
        self.paused = f"{prefix}:paused"
        # The write locks of SQLite week files that workers' writes found held by another process (a hash:
        # pid space and file -> JSON: holder, since, last seen; redisio/storelocks.py), for the status.
        self.store_locks = f"{prefix}:store-locks"
        # The one active scheduler of regular grabs (a string with a time-to-live).
        self.leader = f"{prefix}:scheduler:leader"
        # Where the active scheduler runs (JSON: owner, the leader key's value; pid; pid_space), written as it
        # takes the lead: `crawler status` on its machine knows a killed one gone before its lead lapses.
        self.leader_process = f"{prefix}:scheduler:leader-process"
        # The rule files the active scheduler cannot read, so grabs not (a hash: site -> JSON: scheduler,
        # error), written at each of its ticks: its rules folder may not be the one `crawler status` reads.
        self.rule_errors = f"{prefix}:scheduler:rule-errors"
        # The unexpected error the active scheduler's ticks fail with while they do (JSON: scheduler, error,
        # since, ticks), for `crawler status`; removed by the first tick that works again.
        self.tick_failure = f"{prefix}:scheduler:tick-failure"
        # When this Redis's crawler data began, and when a worker or scheduler found it lost (a hash:
        # began, lost, held, by; wrote, the last check; back, back_seen, back_found, back_by: gone back to
        # an older copy; redisio/since.py): a FLUSHALL or a restart without persistence takes it with the
        # rest, which tells the loss.
        self.since = f"{prefix}:since"

    def queue_of(self, site: str) -> str:
        """A site's queued requests (a sorted set: JSON request -> priority and arrival)."""
        return f"{self.prefix}:queue:{site}"

    def offer_of(self, site: str) -> str:
        """The hungry worker a site's freed slot is offered to (a string that expires: the worker's id)."""
        return f"{self.prefix}:offer:{site}"

    def wake_of(self, worker: str) -> str:
        """A worker's wake list (at most one entry, that expires): a pop that offers it a site pushes the
        site there, and the worker's scheduler waits on it (BLPOP)."""
        return f"{self.prefix}:wake:{worker}"

    def taking(self, site: str) -> str:
        """A site's queued requests set aside to be taken out of the queue (``crawler sites forget``, a demo
        adopting its leftovers: :meth:`crawler.redisio.queue.LeasedQueue.take_sites`), in batches; a sorted
        set as the queue is. One left behind (the taking interrupted) is taken by the next take of the
        site."""
        return f"{self.prefix}:taking:{site}"

    def validators(self, site: str) -> str:
        """ETag and Last-Modified of the last answer to each of a site's index pages, feeds, sitemaps and
        API pages (a hash: URL -> JSON ``[etag, last_modified]``). Per site: a rule reading a page another
        rule reads gets the whole page at its first grab. The one hash ``<prefix>:validators`` of every
        site that earlier versions kept is no longer read (``DEL`` it to free its memory)."""
        return f"{self.prefix}:validators:{site}"

    def validators_at(self, site: str) -> str:
        """When each URL of :meth:`validators` was read last (a sorted set: URL -> epoch seconds, Redis's
        clock): those not read for a month are dropped (crawler/redisio/listings.py)."""
        return f"{self.prefix}:validators-at:{site}"

    def sitemaps(self, site: str) -> str:
        """The latest change a regular grab of a site saw in each of its sitemaps (a hash: URL -> epoch
        seconds, by the sitemap's own dates). Per site: a rule reading a sitemap another rule reads is
        offered every entry at its first grab. The one hash ``<prefix>:sitemaps`` of every site that earlier
        versions kept is no longer read (``DEL`` it to free its memory)."""
        return f"{self.prefix}:sitemaps:{site}"

    def sitemaps_at(self, site: str) -> str:
        """When each sitemap of :meth:`sitemaps` was read last (a sorted set: URL -> epoch seconds, Redis's
        clock): those not read for a month are dropped (crawler/redisio/listings.py)."""
        return f"{self.prefix}:sitemaps-at:{site}"

    def polite(self, site: str) -> str:
        """A site's politeness, shared by every worker (a hash): ``delay``, ``crawl_delay``, ``concurrency``,
        ``inflight``, ``next`` (when it may send again), and its backoff: ``until``, ``level``,
        ``reason``."""
        return f"{self.prefix}:polite:{site}"

    def crawl_delays(self, site: str) -> str:
        """The crawl-delay the robots.txt of each host of a site (or host slot) asks for, past the rule's
        delay (a hash: host -> seconds; the host lower case, with its port when not the scheme's default,
        http and https alike, as the robots.txt middleware reads one per host): the site's ``crawl_delay``
        is the longest of them. ``crawler sites forget`` keeps it ``ROBOTS_MAX_AGE_SECONDS``, the politeness
        the site's next grab writes starting from it (a running worker tells it only as it reads robots.txt
        again), and so does a discover host slot's prune; a robots.txt read since keeps it for good."""
        return f"{self.prefix}:crawl-delays:{site}"

    def applied(self, writer: str) -> str:
        """The number of the last flush of ``writer`` (a worker's site counters, its proxies' health, its
        copy of a discover link model) that Redis applied: a flush sent again is applied once
        (:mod:`crawler.redisio.once`; a string with a time-to-live)."""
        return f"{self.prefix}:applied:{writer}"

    def proxy(self, proxy: str) -> str:
        """A proxy's health (by its id, its URL without credentials; a hash): ``ok``, ``failed``,
        ``banned``, ``latency_ms``, ``benched_until``, ``reason``."""
        return f"{self.prefix}:proxy:{proxy}"

    def session(self, site: str, name: str) -> str:
        """Which worker holds a site's session (a string with a time-to-live)."""
        return f"{self.prefix}:session:{site}:{name}"

    def session_bench(self, site: str, name: str) -> str:
        """A session benched after a ban or a logout, and why (a string with a time-to-live)."""
        return f"{self.prefix}:session-bench:{site}:{name}"

    def job(self, job: str) -> str:
        """A job's counters: pending, fetched, stored, skipped (``skip:<cause>``: of them for each cause;
        ``unfetched``: the requests of them ended with no page fetched), errors, refused, links (article
        links found), taken (requests taken out of the queue unfetched: an interrupted demo's, by the next
        demo), again (article requests queued though seen, by a job that fetches seen URLs again: ``crawler
        temp SITE --again``, whose hash has ``fetches_seen`` 1), lost (requests it counted pending that
        Redis no longer held, written off: LeasedQueue.lost), moved (its requests that left a lease for the
        delayed set or a queue: LeasedQueue.job_lost reads it) (a discover crawl's too: budget, issued,
        links_seen, seeded: its seeds queued so far), its notes, what it is, when a temp crawl saw it end
        (``ended``), and, a temp crawl's, ``seeding`` until all its first requests are queued (a hash)."""
        return f"{self.prefix}:job:{job}"

    def again(self, job: str) -> str:
        """The fingerprints of the article requests a job that fetches seen URLs again (``crawler temp SITE
        --again``) has queued, each once in the job (a set with a time-to-live, deleted at the job's end)."""
        return f"{self.prefix}:job:{job}:again"

    def temp(self, site: str) -> str:
        """The job of a site's last temp crawl (a string): the next temp crawl of the site goes on with it
        while it has requests pending."""
        return f"{self.prefix}:temp:{site}"

    def grab(self, site: str) -> str:
        """A site's regular grabs and adaptive revisits: next, last, job, interval, yield, ... (a hash)."""
        return f"{self.prefix}:grab:{site}"

    def stats(self, site: str, hour: str) -> str:
        """A site's counters of one UTC hour (``2026112210``): ``store/new``, ``ban``, ... (a hash)."""
        return f"{self.prefix}:stats:{site}:{hour}"
