"""Scrapy settings of the crawler, grouped by prefix: plain values, no code. Each numeric one declares
the range it takes in its annotation (:class:`crawler.bounds.Range`; ``Seconds``: 0 or more), which every
crawl command checks before Redis starts.

Scrapy's own settings come first (with our ``RETRY_BACKOFF_`` beside Scrapy's retries and
``NETGUARD_PRIVATE_DOMAINS`` beside the resolver), then ours: ``REDIS_``, ``SCHEDULER_``, ``SCHEDULE_``,
``SUPERVISION_``, ``ROBOTS_``, ``BACKOFF_``, ``BAN_``, ``PROXY_``, ``SESSION_``, ``LEASE_``, ``BLOOM_``,
``STORE_``, ``MONGO_``, ``DEDUP_``, ``WORKER_``, ``TEXT_``, ``SUMMARY_``, ``RULES_``, ``SITEMAPS_``,
``DISCOVER_``, ``DOCUMENTS_``, ``QREAD_``. The settings that come from the environment (``REDIS_URL``,
``MONGO_URI``, ``MONGO_DB_PREFIX``, ``MONGO_WRITE_CONCERN``, ``CRAWLER_DATA_DIR``, ``CRAWLER_RULES_DIR``,
``CRAWLER_ALLOW_PRIVATE_NETWORKS``) are read, with their defaults, in :mod:`crawler.config`.
"""

from typing import Annotated

from crawler.bounds import Range, Seconds, SecondsAbove0

# --- Scrapy -------------------------------------------------------------------------------------------
BOT_NAME = "crawler"
# The one spider, serving every rule (`scrapy list` shows it, `scrapy crawl sites` runs it).
SPIDER_MODULES = ["crawler.worker.spider"]
# Where `scrapy genspider` would write a spider: the same module (the project has one spider).
NEWSPIDER_MODULE = "crawler.worker.spider"
# Identify ourselves; sites can reach the operator through the project's name.
USER_AGENT = "focused-crawler/0.1.0 (focused web crawler; obeys robots.txt)"
# robots.txt is obeyed unless a rule says otherwise (a rule's politeness.obey_robots: false turns it off).
ROBOTSTXT_OBEY = True
# Scrapy 2.19's RemoteControl extension runs Python sent to it over HTTP: never on.
REMOTE_CONTROL_ENABLED = False
# Scrapy's telnet console gives a Python shell to whoever reaches its port: never on.
TELNETCONSOLE_ENABLED = False
# Per-site politeness comes from each rule (download slot per site); these are the defaults.
CONCURRENT_REQUESTS: Annotated[int, Range("a number of requests", 1)] = 32
CONCURRENT_REQUESTS_PER_DOMAIN: Annotated[int, Range("a number of requests", 1)] = 8
# No delay of its own: a site's delay is its rule's, kept by the shared queue for every worker.
DOWNLOAD_DELAY: Seconds = 0.0
# AutoThrottle slows a slow site further; it never goes under the rule's delay, which the queue keeps.
AUTOTHROTTLE_ENABLED = True
# A site's slot delay before its first response (Scrapy's default is 5 s): none, as the rule's delay, kept by
# the queue, is the floor; AutoThrottle raises it from there when responses come slowly.
AUTOTHROTTLE_START_DELAY: Seconds = 0.0
# The requests AutoThrottle aims to have under way per site slot (a slot's delay moves toward latency / 8);
# Scrapy's default, 1, would space a site's requests one response time apart and undo a rule's concurrency
# above 1. No measurement of 8 is on record: it was set with the crawl core.
AUTOTHROTTLE_TARGET_CONCURRENCY: Annotated[float, Range("a number of requests", 0, above=True)] = 8.0
# Retries (Scrapy's RetryMiddleware), each one through the shared queue after its backoff; a site's bans
# are judged apart and hold the whole site back (BAN_, crawler/worker/bans.py).
RETRY_ENABLED = True
RETRY_TIMES: Annotated[int, Range("a number of retries", 0)] = 2
# Scrapy's list and 403 (a sign of a ban: tried again after the site's backoff). A 429, or a 503 with
# Retry-After, gets here only after BACKOFF_MAX_TRIES waits behind its site's backoff (BackoffMiddleware);
# a 503 without one is a server error of its page, as a 500.
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429, 403]
# Seconds a retry waits before a worker takes it again, doubled at each retry (1, 2, 4, ... s): a site
# that fails for a while is asked again after it, not RETRY_TIMES times in a second.
RETRY_BACKOFF_SECONDS: Seconds = 1.0
# The longest wait of one retry.
RETRY_BACKOFF_MAX_SECONDS: Seconds = 60.0
# Seconds a request may take, its body included, before it fails (and is retried).
DOWNLOAD_TIMEOUT: SecondsAbove0 = 30
# Decompressed size limits: a page over DOWNLOAD_MAXSIZE is dropped, one over DOWNLOAD_WARNSIZE logged.
DOWNLOAD_MAXSIZE: Annotated[int, Range("a number of bytes", 0)] = 32 * 1024 * 1024
DOWNLOAD_WARNSIZE: Annotated[int, Range("a number of bytes", 0)] = 8 * 1024 * 1024
# Links longer than this (characters) are not followed: Scrapy's own limit, which its UrlLengthMiddleware
# applies to the requests a spider yields, applied too where the crawl queues links itself.
URLLENGTH_LIMIT: Annotated[int, Range("a number of characters", 1)] = 2083
# Redirects followed for one request; more is an error, dead-lettered as "too many redirects".
REDIRECT_MAX_TIMES: Annotated[int, Range("a number of redirects", 0)] = 5
# Scrapy's HTTP/1.1 handler, closed without the race of its disconnect timeout (crawler/worker/download.py).
DOWNLOAD_HANDLERS = {
    "http": "crawler.worker.download.HTTPDownloadHandler",
    "https": "crawler.worker.download.HTTPDownloadHandler",
}
# The request fingerprinter of Scrapy 2.7+, also used by our queue and Bloom filter.
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
# The asyncio reactor: the text pool (crawler/worker/textwork.py) awaits asyncio futures.
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
# The level Scrapy's own log lines are kept from.
LOG_LEVEL = "INFO"
# Scrapy's log lines, which every command logs in (crawler.cli.main, crawler.cli.crawl).
LOG_FORMAT = "%(asctime)s [%(name)s] %(levelname)s: %(message)s"
LOG_DATEFORMAT = "%Y-%m-%d %H:%M:%S"
# An article the store could not write is logged in one line (its URL), never whole (its body).
LOG_FORMATTER = "crawler.worker.logformatter.ItemLogFormatter"
# Article pages are read once; index pages are re-read every grab: no HTTP cache.
HTTPCACHE_ENABLED = False

# Host names resolving to loopback, private or link-local addresses are refused as they are resolved to
# connect: the address checked is the address connected to.
TWISTED_DNS_RESOLVER = "crawler.worker.netguard.GuardedResolver"
# Domains every request of a crawl may reach on private addresses: `crawler extract --allow-private` and
# `crawler rules try` set them. A worker's rules that say `allow_private_addresses: true` allow their own
# domains to their own requests only (crawler.worker.netguard).
NETGUARD_PRIVATE_DOMAINS: list[str] = []
# scrapy-redis's scheduler on the leased queue: persists, JSON, renews leases, returns the unfinished.
SCHEDULER = "crawler.worker.scheduler.LeasedScheduler"
# Requests' Scrapy fingerprints tested against the Bloom filter in Redis.
DUPEFILTER_CLASS = "crawler.worker.dupefilter.RedisBloomDupeFilter"
# Ours among Scrapy's, each placed by what it must see before or after.
DOWNLOADER_MIDDLEWARES = {
    # Next to the downloader: a download that ended frees its site's slot (for every worker).
    "crawler.worker.slots.SiteSlotMiddleware": 950,
    # Other schemes than http(s), and loopback, private and link-local IP literals, refused at once.
    "crawler.worker.netguard.NetworkGuardMiddleware": 50,
    # A host name the resolver refused is reported as refused, not retried as a DNS failure (above 550,
    # the RetryMiddleware).
    "crawler.worker.netguard.RefusedHostMiddleware": 560,
    # A redirect to another scheme (mailto:, ftp:), to a URL with credentials, longer than URLLENGTH_LIMIT
    # or no request can be made of (http://[x, no host, port 0) is not followed: it fails as its 3xx
    # answer, naming its target, never its password (above 600, the RedirectMiddleware, which fails on a
    # mailto: target and on http://[x, and follows the others).
    "crawler.worker.netguard.UnfollowedRedirectMiddleware": 610,
    # Scrapy's redirect, but a redirect off the domains of the request's rule is not followed: the request
    # is skipped (crawler.worker.onsite); CheckedRefreshMiddleware keeps a meta refresh on them too.
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "crawler.worker.onsite.OnSiteRedirectMiddleware": 600,
    # Rules carry no HTTP credentials: nothing to add, nothing to leak to another host.
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
    # robots.txt fetched with, and read for, the User-Agent a rule's headers set (Scrapy's uses USER_AGENT).
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.worker.robots.AgentRobotsTxtMiddleware": 100,
    # Scrapy's decompression, but a body whose compressed data ends before its stream does is an error
    # (content encoding), not the first part of a page, which Scrapy's keeps.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "crawler.worker.compression.WholeDecompressionMiddleware": 590,
    # The pages the spider reads are decoded once, its way, before the meta refresh check (579) looks for
    # a meta refresh in them (after decompression at 590).
    "crawler.worker.pagetext.DecodeOnceMiddleware": 585,
    # Scrapy's meta refresh, but a page whose refresh leads to no http(s) URL (mailto:, javascript:,
    # http://[x) is read as it is, not failed with a ValueError; after the ban check (580), as Scrapy's was.
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "crawler.worker.refresh.CheckedRefreshMiddleware": 579,
    # Index pages of regular grabs are asked for with If-None-Match / If-Modified-Since.
    "crawler.worker.conditional.ConditionalIndexMiddleware": 570,
    # 403/429 and redirects to a login page are signs of a ban (after decompression at 590, before
    # retries at 550); challenge and empty pages are judged by the spider once read.
    "crawler.worker.bans.BanDetectionMiddleware": 580,
    # A 429, or a 503 with Retry-After, holds its site back for every worker; the request waits in the
    # queue without using a retry.
    "crawler.worker.backoff.BackoffMiddleware": 575,
    # A site's session (cookies, headers) and a proxy of the pool, before Scrapy's HttpProxyMiddleware
    # (750) sends the proxy's credentials.
    "crawler.worker.sessions.SessionMiddleware": 730,
    "crawler.worker.proxies.ProxyMiddleware": 740,
}
# Per-site counters are summed in Redis by the hour too (crawler status reads them).
STATS_CLASS = "crawler.worker.stats.RedisStatsCollector"
# Extensions of our own, beside Scrapy's.
EXTENSIONS = {
    # Each worker's heartbeat in Redis: alive, pages, rate.
    "crawler.worker.heartbeat.WorkerHeartbeat": 500,
    # Off (REMOTE_CONTROL_ENABLED), and not even loaded: its module imports aiohttp, 79 ms of CPU and
    # 9.6 MB of memory in every crawl process.
    "scrapy.extensions.remote_control.RemoteControl": None,
}
# Spider middlewares: ours added, two of Scrapy's that have nothing to do here turned off.
SPIDER_MIDDLEWARES = {
    # A request's lease is acknowledged once its items are stored and its links queued.
    "crawler.worker.leaseack.LeaseAckMiddleware": 10,
    # Depth is the rule's (meta["depth"], checked by the spider), not DEPTH_LIMIT's.
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    # Our requests are built fresh, never by copying response.meta: nothing for it to find.
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
}
# An article page gives one item: Scrapy's default of 100 parallel item slots per response only costs
# asyncio tasks (bench/crawl.py measured the crawl 7-45% faster at 8).
CONCURRENT_ITEMS: Annotated[int, Range("a number of items", 1)] = 8
# News pages need no session: no cookie jar to keep per site (Scrapy's advice for broad crawls).
COOKIES_ENABLED = False
# An article's way to the store: clean, text work (qRead, summary, fingerprints), discover, store.
ITEM_PIPELINES = {
    "crawler.worker.pipelines.clean.CleanPipeline": 100,
    "crawler.worker.pipelines.text.TextPipeline": 200,
    "crawler.worker.pipelines.discover.DiscoverPipeline": 300,
    "crawler.worker.pipelines.store.StorePipeline": 900,
}

# --- REDIS_: the shared queue's server ----------------------------------------------------------------
# Prefix of every key we write, so one Redis can hold several deployments.
REDIS_KEY_PREFIX = "crawler"

# --- SCHEDULER_: the leased queue ---------------------------------------------------------------------
# Always persist: one worker's clean exit must never wipe the shared queue.
SCHEDULER_PERSIST = True
# Requests are JSON in Redis, never pickle.
SCHEDULER_SERIALIZER = "crawler.redisio.serializer"
# Seconds between an idle worker's looks at the shared queue (Scrapy's own engine looks every 5 s).
SCHEDULER_IDLE_POLL_SECONDS: Seconds = 0.5
# Requests a worker leases in one round trip, to hand to the engine one by one (a site's politeness holds
# between them; they are held, so renewed, and returned when the worker stops). 8 take most of a page's
# Redis wait off the crawl without keeping many requests from other workers.
SCHEDULER_POP_BATCH: Annotated[int, Range("a number of requests", 1)] = 8

# --- SCHEDULE_: regular grabs (crawler/schedule/grabs.py) ------------------------------------------
# Seconds between two looks at which grabs are due (a grab starts at most this late).
SCHEDULE_TICK_SECONDS: SecondsAbove0 = 5.0
# Longest a due grab waits for the rule's last grab to end (its job's requests counted pending) before it is
# queued anyway, with a warning: a count nothing will bring down never holds a rule's grabs back for ever.
SCHEDULE_GRAB_WAIT_MAX_SECONDS: Seconds = 6 * 3600.0
# Seconds the active scheduler holds its lock; another takes over this long after it stops.
SCHEDULE_LEADER_SECONDS: SecondsAbove0 = 30.0
# Hours a job's hash (its counts and notes) is kept once a temp crawl saw it end, or a grab's once the next
# grab of its site is queued: a site grabbed every minute would otherwise leave 1,440 a day, for ever.
SCHEDULE_JOB_KEEP_HOURS: Annotated[float, Range("hours", 0, above=True)] = 24.0
# Index pages of regular grabs are read with If-None-Match / If-Modified-Since (304 when unchanged).
SCHEDULE_CONDITIONAL_REQUESTS = True
# Bounds of an adaptive schedule.every whose rule sets no schedule.min/max, as factors of every.
SCHEDULE_ADAPT_MIN_FACTOR: Annotated[float, Range("a factor of every", 0, 1, above=True)] = 0.5
SCHEDULE_ADAPT_MAX_FACTOR: Annotated[float, Range("a factor of every", 1)] = 4.0
# Priority over other grabs of a site whose grabs always find new articles (scaled by its yield, 0-1).
SCHEDULE_YIELD_BOOST: Annotated[int, Range("a priority")] = 5
# Priority of a temp crawl's requests over every regular grab's.
SCHEDULE_TEMP_BOOST: Annotated[int, Range("a priority")] = 100
# Seconds the set of the article URLs a `crawler temp SITE --again` job queued outlives the job's last link
# queued (a crashed crawl resumed within them fetches each page once still); deleted at the job's end.
SCHEDULE_TEMP_AGAIN_SECONDS: Annotated[int, Range("seconds", 1)] = 7 * 24 * 3600
# Seconds a temp crawl waits for a Redis that stopped answering (a server that cannot start again) or that
# refuses writes (a full disk) before it stops with an error, its requests left queued: a temp crawl always
# ends.
SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS: Seconds = 120.0

# --- SUPERVISION_: what crawler status reads -------------------------------------------------------------
# Seconds between two writes of the per-site counters to Redis.
SUPERVISION_FLUSH_SECONDS: SecondsAbove0 = 2.0
# Hours the hourly per-site counters are kept (the status view compares the last 24 h with the week before).
SUPERVISION_KEEP_HOURS: Annotated[float, Range("hours", 0, above=True)] = 192.0
# Seconds between two heartbeats of a worker (3 missed: the worker is taken for dead), and between two
# looks of a worker for dead ones whose leases to return to the queue.
SUPERVISION_HEARTBEAT_SECONDS: SecondsAbove0 = 5.0
# Seconds of heartbeats a worker's rate (responses per minute) is measured over.
SUPERVISION_RATE_SECONDS: SecondsAbove0 = 60.0
# Seconds after its last heartbeat a dead worker stays listed by crawler status (each worker's own, in its
# beat; a live worker is never forgotten); then it is left out, and the next beat of a live worker removes it.
SUPERVISION_FORGET_WORKER_SECONDS: Seconds = 3600.0

# --- ROBOTS_ and BACKOFF_: each site as a whole, for every worker (crawler/redisio/queue.py) ----------
# A robots.txt crawl-delay longer than the rule's delay is kept, up to this many seconds.
ROBOTS_MAX_CRAWL_DELAY: Seconds = 600.0
# A worker's parse of a robots.txt is fetched again after this many seconds (RFC 9309 2.4: at most 24 h).
ROBOTS_MAX_AGE_SECONDS: SecondsAbove0 = 86400.0
# Parses of robots.txt (one per host and User-Agent) a worker keeps, the least recently used dropped: one
# takes 2 KB for a short robots.txt, 110 KB for 4 KB of 130 rules (measured), so 1,000 stay under ~110 MB.
ROBOTS_CACHE_SIZE: Annotated[int, Range("a number of robots.txt parses", 1)] = 1000
# Seconds a robots.txt download may take (DOWNLOAD_TIMEOUT when shorter), and the times it is tried again
# (RETRY_TIMES when fewer): every page of its host waits for it, and with a page's 30 s and 2 retries a
# robots.txt that hangs held them 90 s. A robots.txt is a few KB, so 10 s is ample; one retry still gets
# past a dropped connection or a 503 of a moment. A host whose robots.txt hangs waits 20 s at most.
ROBOTS_DOWNLOAD_TIMEOUT: SecondsAbove0 = 10.0
ROBOTS_RETRY_TIMES: Annotated[int, Range("a number of retries", 0)] = 1
# A 429 without Retry-After holds its site back this long, doubled at each one since the last
# BACKOFF_CALM_SECONDS without any, at most BACKOFF_MAX_SECONDS (a Retry-After is kept up to that too).
BACKOFF_FIRST_SECONDS: Seconds = 5.0
BACKOFF_MAX_SECONDS: Seconds = 600.0
BACKOFF_CALM_SECONDS: Seconds = 300.0
# After a backoff the site is asked at most once every this many seconds, doubled at each backoff up to
# BACKOFF_MAX_THROTTLE_SECONDS, the delay halving every 2 minutes (THROTTLE_HALF_LIFE): 0.5 s keeps a
# site that allowed a few requests a second under its limit without slowing a fast one for long.
BACKOFF_THROTTLE_SECONDS: Seconds = 0.5
BACKOFF_MAX_THROTTLE_SECONDS: Seconds = 30.0
# Times one request is queued again behind its site's backoff before it goes on to RETRY_TIMES (a 429, or a
# 503 with Retry-After, uses no retry: the site asked to wait, the request did not fail).
BACKOFF_MAX_TRIES: Annotated[int, Range("a number of tries", 0)] = 8

# --- BAN_: a site (or a proxy) that stopped serving the crawler (crawler/worker/bans.py) --------------
# Answers of a site (and of a proxy) each worker judges together.
BAN_WINDOW: Annotated[int, Range("a number of answers", 1)] = 20
# A ban: at least this many signs (403, 429, challenge, login or empty pages) in the window, and at least
# this share of it. One odd page is never a ban.
BAN_MIN_SIGNALS: Annotated[int, Range("a number of signs", 1)] = 3
BAN_MIN_SHARE: Annotated[float, Range("a share", 0, 1)] = 0.5
# A banned site is held back this long for every worker, doubled as BACKOFF_ doubles.
BAN_BACKOFF_SECONDS: Seconds = 60.0

# --- PROXY_ and SESSION_: how sites are reached (crawler/worker/proxies.py, sessions.py) ---------------
# (The proxies of the sites whose rule names none are CRAWLER_PROXIES and CRAWLER_PROXY_FILE, read from
# the environment in crawler/config.py. None: requests go out directly.)
# Requests at once through one proxy, in each worker.
PROXY_CONCURRENCY: Annotated[int, Range("a number of requests", 1)] = 4
# A proxy that failed this many times in a row (or was banned) rests this many seconds, for every worker.
PROXY_MAX_FAILURES: Annotated[int, Range("a number of failures", 1)] = 3
PROXY_BENCH_SECONDS: Seconds = 300.0
# Seconds a worker's hold on a session lasts unless renewed (it renews it while it runs).
SESSION_LEASE_SECONDS: SecondsAbove0 = 60.0
# A session that was logged out or banned rests this long.
SESSION_BENCH_SECONDS: Seconds = 1800.0
# A request for which every session is held by other workers waits this long in the queue, at most
# SESSION_MAX_WAITS times, then is dead-lettered.
SESSION_WAIT_SECONDS: Seconds = 5.0
SESSION_MAX_WAITS: Annotated[int, Range("a number of waits", 0)] = 60

# --- LEASE_: requests being worked on -----------------------------------------------------------------
# Seconds a worker holds a request before it goes back to the queue, unless renewed.
LEASE_SECONDS: SecondsAbove0 = 60.0
# Seconds between renewals of a worker's leases (a third of LEASE_SECONDS keeps two tries in hand); a
# LEASE_SECONDS made shorter is renewed every third of it all the same (crawler/worker/scheduler.py).
LEASE_RENEW_SECONDS: SecondsAbove0 = 20.0

# --- BLOOM_: seen article URLs ------------------------------------------------------------------------
# URLs the first slice of the filter holds at BLOOM_ERROR_RATE; later slices grow by BLOOM_GROWTH.
BLOOM_CAPACITY: Annotated[int, Range("a number of URLs", 1)] = 1_000_000
# Target false-positive rate of the whole filter.
BLOOM_ERROR_RATE: Annotated[float, Range("a false-positive rate", 0, 1, above=True, below=True)] = 0.001
# Each new slice holds this many times the previous one's URLs.
BLOOM_GROWTH: Annotated[int, Range("a factor", 1)] = 2

# --- STORE_: where articles go ------------------------------------------------------------------------
# Articles per write: a batch is stored (one transaction, or one bulk write) before its requests are acked.
STORE_BATCH_SIZE: Annotated[int, Range("a number of articles", 1)] = 100
# Seconds an article waits for its batch to fill before the batch is written anyway.
STORE_FLUSH_SECONDS: Seconds = 0.2
# Seconds between tries to replay the local spool into MongoDB while it is unreachable.
STORE_SPOOL_RETRY_SECONDS: Seconds = 10.0
# Seconds before a page whose article could not be stored (disk full, read-only, store away) is fetched
# and stored again; its request keeps its lease meanwhile (crawler/redisio/queue.py defer).
STORE_RETRY_SECONDS: Seconds = 30.0
# Tries to store a page's article before its request is dead-lettered with the store's error.
STORE_MAX_ATTEMPTS: Annotated[int, Range("a number of tries", 1)] = 5
# Seconds a write to the SQLite store waits for another process's transaction on the same week's file
# (another worker's write, or a sqlite3 shell's) before it fails with "database is locked"; SQLite keeps at
# most 2147483 s (whole milliseconds in a C int, about 24 days: Python's sqlite3 makes a longer one 0).
STORE_BUSY_TIMEOUT_SECONDS: Annotated[
    float, Range("seconds", 0, 2147483, why="SQLite's limit, about 24 days")
] = 30.0

# --- MONGO_: the MongoDB store (crawler/store/mongo.py), used when MONGO_URI is set (crawler/config.py) ---
# Milliseconds to find a server or connect before the batch goes to the spool.
MONGO_TIMEOUT_MS: Annotated[int, Range("milliseconds", 1)] = 5000

# --- DEDUP_: the same article under another URL -------------------------------------------------------
# Look for an earlier copy of each new article's body and record the repost instead of storing it.
DEDUP_ENABLED = True
# Days before and after an article's first fetch within which a copy counts as a repost.
DEDUP_WINDOW_DAYS: Annotated[float, Range("days", 0)] = 7
# Most SimHash bits in which a near-duplicate body may differ; None: the tuned DEFAULT_MAX_DISTANCE of
# crawler/store/fingerprint.py, which says why.
DEDUP_MAX_DISTANCE: Annotated[int | None, Range("a bit count", 0, 64)] = None

# --- WORKER_: the worker's process ---------------------------------------------------------------------
# Seconds a thread holds the GIL before another may take it (Python's default is 0.005). The store's
# thread runs Python too; each time the reactor's thread waits on a socket or a regex it gives the GIL up
# and, at 5 ms, waited up to that long to get it back: 0.5 ms took the bench crawl from about 145 to
# 200 pages/s.
WORKER_SWITCH_INTERVAL: SecondsAbove0 = 0.0005
# Allocations of tracked objects between two young-generation collections of the cyclic garbage collector
# (Python's default is 700), whose older generations run the rarer for it; the objects alive once the
# crawl has started (modules, rules, Scrapy's components) are frozen out of every collection. The bench
# crawl's reactor thread collected for 1.9 of its 11.1 CPU s at 700 with nothing frozen (about 2,300
# objects freed in all), 0.44 of 10.2 s at 10,000 with them frozen; CPU per 1,000 articles 5.20 -> 4.63 s,
# peak RSS the same (docs/performance.md).
WORKER_GC_THRESHOLD: Annotated[int, Range("a number of allocations", 1)] = 10_000

# --- TEXT_: the per-article text work (qRead, summaries, fingerprints; crawler/worker/textwork.py) ------
# Processes doing it off the crawl's thread (0: on the crawl's thread). Two keep a 2-core machine busy;
# give one per spare core on a larger one.
TEXT_PROCESSES: Annotated[int, Range("a number of processes", 0)] = 2
# Seconds the crawl waits at its start for those processes to finish their imports, so its first requests
# do not share the cores with them (they then left up to 0.2 s after their politeness slot); 0: no wait.
TEXT_START_SECONDS: Seconds = 30.0
# Characters of an article's body, by its rule, from qRead or a PDF or DOCX document's text: a longer one
# is dead-lettered. Its text work takes about 40 bytes of memory a character (a page of one 20 MB line:
# 850 MB at the worker's peak), and MongoDB writes no document over 16 MB; the longest article of the
# extraction corpora has 49,264, a 20th of it.
TEXT_MAX_BODY_CHARS: Annotated[int, Range("a number of characters", 1)] = 1_000_000

# --- SUMMARY_: extractive summaries stored with each article -------------------------------------------
# Summary lengths in sentences (an empty list turns summaries off).
SUMMARY_SENTENCES = [1, 3]

# --- RULES_: applying site rules to pages ------------------------------------------------------------
# Seconds all of a rule's regular expressions may take on one page together (each search also stops at
# 0.2 s): a pattern that backtracks on every link costs a page this long, not 0.2 s a link.
RULES_REGEX_PAGE_SECONDS: SecondsAbove0 = 1.0
# Seconds between two reads of the rules folder for a site no rule of this worker names (a rule file added
# while it runs) while the folder is unchanged: a folder that changed since the last read (a file added,
# removed or written) is read at once, so a rule added just before its crawl starts is never missed; an
# unchanged one costs a flood of requests of an unknown site one scandir each, no YAML parse. Also the
# longest a worker goes on with a rule whose file was edited: the requests of known sites look at the
# folder (one scandir) at most this often.
RULES_RELOAD_SECONDS: Seconds = 5.0
# Seconds before a request is fetched again whose site's rule file is in this worker's rules folder but
# cannot be read by it (a key of a newer version during a rolling upgrade, a file broken or half-synced on
# this machine alone): another worker, or this one once the file is mended, takes it then.
RULES_UNREADABLE_RETRY_SECONDS: Seconds = 60.0
# Tries of such a request before it is dead-lettered naming the file's errors: 60 a minute apart leave a
# rolling upgrade an hour to reach every worker.
RULES_UNREADABLE_MAX_ATTEMPTS: Annotated[int, Range("a number of tries", 1)] = 60

# Article links read from one feed, index page or article page (a rule's depth >= 2), in its order: a
# news feed or index page lists tens; one of many thousands is an archive or a mistake, and its tail is old
# news a sitemap or the next pages reach (read whole, 100,000 of an index page held the crawl thread 6.9 s,
# 600,000 past a lease's 60 s).
RULES_MAX_LINKS: Annotated[int, Range("a number of links", 1)] = 1000

# --- SITEMAPS_: a rule's sitemaps (crawler/rules/sitemaps.py) ---------------------------------------
# Levels of sitemaps followed from a rule's: robots.txt -> sitemap index -> sitemap is 3; deeper nesting is
# left out (counted), so a sitemap index that lists itself or a chain of them ends.
SITEMAPS_MAX_DEPTH: Annotated[int, Range("a number of levels", 0)] = 3
# Bytes of one sitemap once uncompressed: the protocol's limit (a .gz past it is a bomb, refused).
SITEMAPS_MAX_BYTES: Annotated[int, Range("a number of bytes", 1)] = 50 * 1024 * 1024
# Entries of one sitemap read and queued per turn of the reactor, which runs between batches: a sitemap
# of the protocol's 50,000 held the crawl thread 3.7 s CPU read whole; 1,000 is one Bloom filter call.
SITEMAPS_BATCH_ENTRIES: Annotated[int, Range("a number of entries", 1)] = 1000
# A grab offers a sitemap's entries changed after the latest change the previous grab saw in it, less this
# margin (a page published late with an earlier date; what is offered twice, the Bloom filter skips);
# temp crawls offer every entry.
SITEMAPS_SINCE_MARGIN_SECONDS: Seconds = 3600.0

# --- DISCOVER_: discover crawls toward a topic (crawler/worker/discovery.py, crawler/discover/) -----------
# Requests of a discover job kept in the shared queue (queued or leased): few enough that the frontier's
# latest values and the bandit's latest rewards choose the next ones, enough to keep every worker busy.
DISCOVER_QUEUE_TARGET: Annotated[int, Range("a number of requests", 1)] = 16
# Pages a worker learns from between two shares of its link model through Redis.
DISCOVER_SYNC_PAGES: Annotated[int, Range("a number of pages", 1)] = 20
# Links a host keeps in the frontier at most (the best ones): a trap's endless pages stay bounded.
DISCOVER_FRONTIER_PER_HOST: Annotated[int, Range("a number of links", 1)] = 2000
# Days a discover host's entries in Redis (its frontier, best score, rewards, politeness) are kept untouched
# (no link kept to it, none released, no page of it fetched): a week, far past ROBOTS_MAX_AGE_SECONDS, so a
# host met again after it has its robots.txt read again; without it they grow with every host ever met.
DISCOVER_HOST_KEEP_DAYS: Annotated[float, Range("days", 0, above=True)] = 7.0
# Stored articles of each of a topic's example sites read as examples.
DISCOVER_EXAMPLE_ARTICLES: Annotated[int, Range("a number of articles", 0)] = 50

# --- DOCUMENTS_: PDF and DOCX articles (extractors/documents.py) -----------------------------------------
# Bytes of one PDF or DOCX article: a longer one is dead-lettered (its text would hold a text process).
DOCUMENTS_MAX_BYTES: Annotated[int, Range("a number of bytes", 1)] = 20 * 1024 * 1024

# --- QREAD_: the body when a rule's fields fall short -------------------------------------------------
# Extraction algorithm used when a rule's body is missing or shorter than its min_body_chars.
QREAD_ALGORITHM = "qread-learned"
# Default minimum body length (characters) under which qRead supplies the body.
QREAD_MIN_BODY_CHARS: Annotated[int, Range("a number of characters", 0)] = 200
