"""The Scrapy scheduler on the shared leased queue (``SCHEDULER``): scrapy-redis's, with what it lacks fixed.

Compared with ``scrapy_redis.scheduler.Scheduler``, which it subclasses:

- requests are leased, not deleted (:class:`crawler.redisio.queue.LeasedQueue`); the worker renews its
  leases every ``LEASE_RENEW_SECONDS``, or every third of ``LEASE_SECONDS`` when that is shorter
  (:func:`renew_seconds`), and puts back everyone's expired leases, and on close it returns
  the leases it still holds, so neither a crash nor a clean exit loses a request;
- a retry or a redirect of a leased request hands its lease on (one Redis script ends the old lease and
  queues the new request), so no lease is left behind; a retry waits its backoff (doubling) first, so a
  site that answers 503 for a while gets its requests again after it, not all at once;
- a request whose work could not be finished (its article not stored) is deferred, and tried again at
  most ``STORE_MAX_ATTEMPTS`` times; one that failed for good is dead-lettered with its reason;
- a queue entry that is no request of ours (not JSON, a class to import) is dead-lettered once;
- Redis going away (a restart, a failover) never stops it: each call that fails is counted
  (``redis/errors``) and tried again later, the lease loop keeps running;
- the queue always persists (``SCHEDULER_PERSIST`` is ignored: one worker's exit must never wipe the
  queue all workers share);
- requests are JSON (:func:`crawler.requests.encode_request`), never pickle;
- duplicate checks use Scrapy's request fingerprinter, through :mod:`crawler.worker.dupefilter`;
- stats and logs go through Scrapy's current APIs (no ``spider=`` argument, no ``Spider.log``);
- workers share the sites: a pop names its worker, which a pop that takes nothing makes hungry, and a
  thread waits on the worker's wake list (BLPOP, ``SCHEDULER_IDLE_POLL_SECONDS`` at most) for a site
  another worker's pop offers it, so it takes the slot at once (:mod:`crawler.redisio.queue`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ParamSpec, Self, TypeVar
from urllib.parse import urldefrag

import redis
from redis.exceptions import NoPermissionError
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.dupefilters import BaseDupeFilter
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object
from scrapy.utils.reactor import CallLaterOnce
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task
from xxhash import xxh3_64_intdigest

from crawler.commandline import counted, suggest
from crawler.errors import redacted, redacted_text
from crawler.redisio import redirects as redirect_notes
from crawler.redisio import serializer
from crawler.redisio.clock import redis_clock, shared_now
from crawler.redisio.connection import NO_PERMISSION_FIX, writes_refused
from crawler.redisio.embedded import RedisUnavailableError
from crawler.redisio.queue import Ack, LeasedQueue, Popped, hungry_seconds
from crawler.redisio.workers import Heartbeats, dead_workers, worker_id
from crawler.requests import (
    QueueEntryError,
    Work,
    count_job,
    decode_request,
    encode_request,
    job_counts,
    leased,
    push,
    redirects,
    without_lease,
)
from crawler.threads import STOP_SIGNALS, signals_blocked
from crawler.worker.connection import (
    helps,
    job_level,
    keys_of,
    outage_of,
    refused_reply,
    server_of,
    wrong_type,
)
from crawler.worker.discovery import discovery_of
from crawler.worker.dupefilter import RedisBloomDupeFilter
from crawler.worker.faults import RepeatedFaults
from crawler.worker.pipelines.store import store_pipeline_of, store_writes_again
from crawler.worker.sessions import COOKIE_SET_META

__all__ = ["NO_ANSWER", "LeasedScheduler", "leases_ending", "renew_seconds", "request_queued", "scheduler_of"]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

# The kinds of failure (crawler.worker.spider._kind) where the site did not answer: its URL may well be
# right, and the site's dead letters of them end once it answers again.
NO_ANSWER = frozenset({"connection", "timeout"})
# What became of a request that failed for good, as its lines say (RepeatedFaults).
DEAD_LETTERED = "dead-lettered"

# Entries looked at per call of next_request when they turn out to be no requests (dead-lettered), or
# requests of a site this worker has no rule of (put back, or dead-lettered, unfetched).
POISON_PER_CALL = 10
# Seconds between two looks of an idle worker at the delayed requests whose time has come.
DUE_CHECK_SECONDS = 1.0
# While its store holds a worker back, the downloads that ended are told to Redis together, this long after
# the first of them: each site's slot is freed within it, not at its lease's end, in one call for all
# (one call a download was 0.17 more round trips a page on bench/crawl.py, whose store holds back often).
DOWNLOADS_TOLD_SECONDS = 0.5

# Signal sent just before the leases of discover requests end, acknowledged or dead-lettered, with
# ``works``: their Works. Their jobs' queues are topped up from the frontier first
# (crawler.worker.discovery), counting these leases as ended, so a job's ``pending`` never reaches zero
# while its frontier has links and its budget has room.
leases_ending = object()

# Sent once a request that carries no lease (a link or a next page a callback gave) was queued, found
# seen already, or not queued for Redis failing (``lost``): the lease of the page that gave it ends only then.
request_queued = object()


@dataclass(frozen=True, slots=True)
class _Pending:
    """An acknowledgement not sent yet, the moment (the scheduler's ``clock``) its lease may expire, and
    the articles it ends (:meth:`LeasedScheduler.ack`'s ``written``)."""

    ack: Ack
    expires: float
    written: tuple[tuple[str, bool], ...]


def renew_seconds(settings: BaseSettings) -> float:
    """Seconds between two renewals of a worker's leases: ``LEASE_RENEW_SECONDS``, at most a third of
    ``LEASE_SECONDS``, so that a lease made shorter than the renewal interval (``-s LEASE_SECONDS=10``)
    is still renewed twice before it would expire."""
    return min(settings.getfloat("LEASE_RENEW_SECONDS"), settings.getfloat("LEASE_SECONDS") / 3)


class LeasedScheduler(Scheduler):  # type: ignore[misc]  # scrapy-redis ships no type hints
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        super().__init__(
            server=server_of(crawler),
            persist=True,
            # Made in open(): its first write fails there as itself, not as Scrapy's "Engine slot not
            # assigned" (the engine closes a scheduler it failed to build without the slot it closes).
            dupefilter=None,
            serializer=serializer,
        )
        self.crawler = crawler
        self.stats = crawler.stats
        self.keys = keys_of(crawler)
        self.heartbeats = Heartbeats(self.server, self.keys.workers)
        self.lease_seconds = settings.getfloat("LEASE_SECONDS")
        self.renew_seconds = renew_seconds(settings)
        # Seconds between two looks for dead workers whose leases to return: a heartbeat's.
        self.dead_seconds = settings.getfloat("SUPERVISION_HEARTBEAT_SECONDS")
        self.poll_seconds = settings.getfloat("SCHEDULER_IDLE_POLL_SECONDS")
        self.hungry_seconds = hungry_seconds(self.poll_seconds)
        self.retry_seconds = settings.getfloat("STORE_RETRY_SECONDS")
        self.max_attempts = settings.getint("STORE_MAX_ATTEMPTS")
        self.backoff_seconds = settings.getfloat("RETRY_BACKOFF_SECONDS")
        self.backoff_max_seconds = settings.getfloat("RETRY_BACKOFF_MAX_SECONDS")
        self.again_seconds = settings.getint("SCHEDULE_TEMP_AGAIN_SECONDS")
        self.worker = worker_id()
        self.held: set[str] = set()
        # Dead workers whose leases this worker returned to the queue (release_holders): not looked for again.
        self._released_dead: set[str] = set()
        # When this worker started (monotonic): it has had Redis since then at most, whatever outage came
        # before, so it takes a worker for dead by its silence alone only once it was there that long.
        self._started = time.monotonic()
        self.pop_batch = settings.getint("SCHEDULER_POP_BATCH")
        # Leased requests not yet given to the engine (held: renewed, and released when the worker stops).
        self._popped: deque[Popped] = deque()
        # Leases whose download ended, to report at the next pop (crawler.worker.slots).
        self.downloaded: list[str] = []
        self.outage = outage_of(crawler)
        # A store error that befalls every article alike (a damaged week's file, a full disk), and a site's
        # failure that befalls its requests alike (it is down: a connection refused, a timeout): said once,
        # then once a minute with a count, not once an article or request.
        self.faults = RepeatedFaults()
        # Per site that did not answer (NO_ANSWER), per reason its last dead letter's fault (RepeatedFaults
        # counts them): ended, with their count, once the site answers again.
        self._unanswered: dict[str, dict[str, str]] = {}
        self._next_due_check = 0.0
        self._not_before = 0.0
        self._wake = CallLaterOnce(self.wake_engine)
        # The clock by which this worker reckons when the leases it ended may expire (a test sets its own).
        self.clock: Callable[[], float] = time.monotonic
        # When (``clock``) the last renewal of the leases held began: each lease held then, or taken since,
        # lasts until LEASE_SECONDS after it at least.
        self._renewed = self.clock()
        # Acknowledgements waiting for the end of this reactor turn (flush_acks), each with the moment its
        # lease may expire and the articles it ends (ack's ``written``), and the discover requests among
        # them (leases_ending).
        self._acks: list[_Pending] = []
        # Acknowledgements Redis did not take (away, refusing writes), oldest first: sent again with the next
        # ones, or at the first renewal Redis answers, while their leases last; one whose lease may have
        # expired is dropped, its page fetched again (its lease may be another worker's now). So it never
        # holds more than one LEASE_SECONDS of acknowledgements, and while Redis is away, when no lease is
        # taken, no more than the leases held as it went.
        self._unsent: deque[_Pending] = deque()
        # The URLs of the articles this worker's acknowledgements counted (stored or updated), so that one
        # its job wrote before is counted once (see _counted_before): their 64-bit xxh3 digests, 8 bytes an
        # article (8.1 MB at 1,000,000 articles, where a set of the digests took 81 MB, and pybloom-live's
        # ScalableBloomFilter 6.7 MB, which took 0.2% of the articles it had not seen for some it had: said
        # re-stored). Exact but for two URLs of one digest: a chance in 2 x 10^13 an article looked up.
        self._counted = array("Q")
        # The keys of other types (someone SET them) acknowledgements failed on, each named once while it is.
        self._wrong_acks: set[str] = set()
        self._ending: list[Work] = []
        self._ack_soon = CallLaterOnce(self.flush_acks)
        self._tell_soon = CallLaterOnce(self._tell_downloads_ended)
        self._renewal: task.LoopingCall | None = None
        self._poll: task.LoopingCall | None = None
        self._dead_look: task.LoopingCall | None = None
        # Until when (monotonic) this worker's pops may not make it hungry: it put back a request it took.
        self._kept_nothing_until = 0.0
        self._closing = threading.Event()
        self._listener: threading.Thread | None = None
        crawler.signals.connect(self._woken, signal=store_writes_again)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.queue = LeasedQueue(
            self.server,
            self.keys,
            lease_seconds=self.lease_seconds,
            counters_keep_seconds=int(self.crawler.settings.getfloat("SUPERVISION_KEEP_HOURS") * 3600),
        )
        self.df = self._seen_filter()
        waiting = len(self.queue)
        if waiting:
            logger.info("Resuming: %s queued, %d leased", counted(waiting, "request"), self.queue.leased())
        self._renewal = task.LoopingCall(self.tend_leases)
        self._renewal.start(self.renew_seconds, now=True)
        self._dead_look = task.LoopingCall(self.release_dead)
        self._dead_look.start(self.dead_seconds, now=False)
        if self.poll_seconds > 0:
            self._poll = task.LoopingCall(self.wake_engine)
            self._poll.start(self.poll_seconds, now=False)
            self._listener = threading.Thread(target=self._listen, name="wake-listener", daemon=True)
            with signals_blocked(STOP_SIGNALS):
                self._listener.start()

    def _seen_filter(self) -> BaseDupeFilter:
        """The ``DUPEFILTER_CLASS`` (the Bloom filter, which writes its sizing as it is made); a Redis that
        fails that write (its memory filled since the start check, a user who may not run the command) is
        a :class:`RedisUnavailableError` saying why and what to do."""
        try:
            made: BaseDupeFilter = load_object(self.crawler.settings["DUPEFILTER_CLASS"]).from_crawler(
                self.crawler
            )
        except redis.RedisError as exc:
            raise _opening_error(self.server, exc, self.keys.prefix) from None
        return made

    def close(self, reason: str) -> None:
        for loop in (self._renewal, self._poll, self._dead_look):
            if loop is not None and loop.running:
                loop.stop()
        self._wake.cancel()
        self._ack_soon.cancel()
        self._tell_soon.cancel()
        self._closing.set()
        self._leave_sharing()
        self.flush_acks()
        self.faults.close()
        try:
            released = self.queue.release(self.held)
        except redis.RedisError as exc:
            self.outage.failed("return the unfinished requests", exc)
            released = 0
        if released:
            logger.info("Returned %d unfinished requests to the queue", released)
            self.stats.inc_value("lease/released", released)
        self.held.clear()
        self._popped.clear()

    def wake_engine(self) -> None:
        """Have the engine ask this scheduler for a request now. An idle engine asks only on its 5 s
        heartbeat (a private constant of Scrapy's engine); requests queued by other processes (a grab, a
        temp crawl) would wait that long. The engine's slot is private too: without it, nothing is done."""
        slot = getattr(self.crawler.engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def _listen(self) -> None:
        """The wake listener's thread: wait on this worker's wake list, at most one idle poll at a time
        (:meth:`_listen_seconds`), and have the engine take at once a site another worker's pop offered
        it. A Redis that fails is left to the pops to count (the idle poll goes on): the listener waits
        that long and listens again."""
        key = self.keys.wake_of(self.worker)
        wait = self._listen_seconds()
        while not self._closing.is_set():
            try:
                woken = self.server.blpop([key], timeout=wait)
            except redis.RedisError:
                self._closing.wait(wait)
                continue
            if woken is not None and not self._closing.is_set():
                from twisted.internet import reactor  # noqa: PLC0415 - the reactor the crawl installed

                reactor.callFromThread(self._woken)

    def _listen_seconds(self) -> float:
        """The longest wait of one BLPOP of the wake listener: an idle poll, capped at half the client's
        socket timeout (``socket_timeout`` of its connection pool). A BLPOP that waits the socket timeout
        or longer has its read time out first: redis-py retries it and then raises, so a listener polling
        40 s on a 30 s socket woke no worker for minutes. Half leaves the reply the other half to come."""
        socket_timeout = self.server.connection_pool.connection_kwargs.get("socket_timeout")
        if socket_timeout is None:
            return self.poll_seconds
        return min(self.poll_seconds, float(socket_timeout) / 2)

    def _leave_sharing(self) -> None:
        """Stop being offered sites, and end the wake listener: out of ``crawler:hungry`` (else the slots
        other workers free would be offered to this stopped worker, each held ``OFFER_SECONDS``, while its
        hunger lasts), and a wake pushed to its own list (expiring, as a pop's) ends the listener's BLPOP
        at once (else the reactor waited for it, up to one BLPOP's wait: :meth:`_listen_seconds`). A Redis
        that refuses them is not waited for: the offers lapse by time, and the listener's thread, a daemon,
        ends at its next turn."""
        key = self.keys.wake_of(self.worker)
        try:
            with self.server.pipeline(transaction=False) as pipe:
                pipe.zrem(self.keys.hungry, self.worker)
                if self._listener is not None:
                    pipe.lpush(key, "")
                    pipe.pexpire(key, int(self.hungry_seconds * 1000))
                # Each command on its own: a key of another type (someone SET it) fails that one alone.
                replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            logger.debug("Sites may be offered to this stopped worker until they lapse: %s", exc)
            return
        if self._listener is not None and not isinstance(replies[1], redis.RedisError):
            self._listener.join(self._listen_seconds() + 1)

    def _woken(self) -> None:
        """A site was offered to this worker: pop now, whatever wait the last pop set."""
        self._not_before = 0.0
        self.wake_engine()

    def tend_leases(self) -> None:
        """Renew what this worker holds; put back what any worker let expire. A Redis that is away is
        counted and tried again at the next turn: the loop never stops."""
        began = self.clock()
        try:
            self.queue.renew(self.held)
            self._renewed = began
            expired = self.queue.requeue_expired()
            due = self.queue.queue_due()
        except redis.RedisError as exc:
            self.outage.failed("renew the leases", exc)
            return
        # Each lease renewed, expired or due is written; with none, the scripts only read.
        self.outage.ok(wrote=bool(self.held) or expired > 0 or due > 0)
        if expired:
            logger.warning("%s went back to the queue", counted(expired, "expired lease"))
            self.stats.inc_value("lease/expired", expired)
        if self._unsent:  # Redis answers again
            self.flush_acks()

    def release_dead(self) -> None:
        """Return to the queue now the leases of the workers whose heartbeat says they are dead
        (:func:`crawler.redisio.workers.dead_workers`), each worker's once, not when they expire: they hold
        their sites' download slots meanwhile. One only silent counts once this worker had Redis longer than
        that silence may last, since its last failed call and since its start. A Redis that is away is
        counted and looked at again at the next turn."""
        try:
            now = redis_clock(self.server)
            beats = self.heartbeats.may_be_dead(now)
            quiet_since = max(self.outage.last_failed, self._started)
            dead = set(dead_workers(beats, now, quiet_for=time.monotonic() - quiet_since))
            dead.discard(self.worker)
            self._released_dead &= dead
            fresh = dead - self._released_dead
            if not fresh:
                return
            released = self.queue.release_holders(fresh)
        except redis.RedisError as exc:
            self.outage.failed("return the leases of dead workers", exc)
            return
        self._released_dead |= fresh
        if released:
            self.outage.ok(wrote=True)
            total = sum(released.values())
            logger.warning(
                "%s of dead workers went back to the queue: %s",
                counted(total, "lease"),
                ", ".join(f"{count} of {holder}" for holder, count in sorted(released.items())),
            )
            self.stats.inc_value("lease/released_dead", total)

    # --- requests in ---------------------------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        """Queue ``request``: a retry or a redirect of a leased one hands its lease on; any other is
        pushed, unless seen already, and :data:`request_queued` says whether Redis took it."""
        work = Work.of(request)
        try:
            if work.lease is not None:
                return self._hand_on(request, work)
            if not request.dont_filter and self.df.request_seen(request):
                self.df.log(request, self.spider)
                self._queued(request, lost=False)
                return False
            queued = push(self.queue, request, self.spider)
        except redis.RedisError as exc:
            if work.lease is not None:
                # A hand-on that Redis failed under: its lease leaves the hold, so it expires and goes back
                # to the queue (held, it would be renewed for ever and its crawl never end).
                self.held.discard(work.lease)
                self.outage.failed(f"queue {request.url}", exc)
            else:
                self.outage.failed(f"queue {request.url}: the page that gave it is fetched again", exc)
                self._queued(request, lost=True)
            return False
        self._queued(request, lost=False)
        self.outage.ok(wrote=True)  # the push script counts every push (INCR) first
        self.stats.inc_value("scheduler/enqueued/redis" if queued else "scheduler/already_queued")
        return queued

    def _queued(self, request: Request, *, lost: bool) -> None:
        self.crawler.signals.send_catch_log(request_queued, request=request, lost=lost)

    def _hand_on(self, request: Request, work: Work) -> bool:
        """A retry or a redirect of a leased request: its lease ends as the new request is queued. A
        redirect back to a URL of its own chain is a dead letter naming the loop; one to a URL seen
        already ends its request, counted skipped (an article's too: the seen filter passed its link,
        not where the link leads; a discover page's when its crawl reads that URL anyway, counted against
        the host of its link in the bandit), unless the user gave its page (``crawler temp --url``); a job
        that fetches seen URLs again (``crawler temp SITE --again``) skips only a URL it fetched itself."""
        assert work.lease is not None
        source = _redirected_from(request, work.lease)
        if source is not None:
            loop = self._loop(request)
            if loop is not None:
                wall = (
                    "; a redirect on the way set a cookie (Set-Cookie), which a crawl does not keep: a site"
                    " that wants a cookie sent gets it from a session file of the rule (access.sessions)"
                    if request.meta.get(COOKIE_SET_META)
                    else ""
                )
                self.dead_letter(
                    request.replace(url=source), f"a redirect loop: {loop}{wall}", kind="redirect loop"
                )
                return False
        filtered = not request.dont_filter or (source is not None and work.is_article)
        # Looked at, not marked: the URL is marked seen once its request is handed on (marked first, a
        # handoff Redis refused left it seen and never queued, and its page fetched again skipped it).
        bloom = self.df if isinstance(self.df, RedisBloomDupeFilter) else None
        seen = filtered and (bloom.seen_already(request) if bloom else self.df.request_seen(request))
        # A job that fetches seen URLs again tests the URL against its own set, in the handoff itself.
        again = self.keys.again(work.job) if filtered and work.again and work.job and not work.given else ""
        if not work.given and (
            (seen and not again) or (source is not None and self._read_already(request, work))
        ):
            self._skip_seen(request, work, source)
            return False
        # A request handed back to wait (for a free session) says how long; it is not kept in the queue.
        wait = float(request.meta.get("wait_seconds", 0.0))
        if wait:
            request = request.replace(meta={k: v for k, v in request.meta.items() if k != "wait_seconds"})
        member = encode_request(without_lease(request), self.spider)
        handed = self.queue.handoff(
            work.lease,
            member,
            priority=request.priority,
            site=work.slot,
            job=work.job,
            delay=max(self._backoff(work), wait),
            again=again,
            fingerprint=self.crawler.request_fingerprinter.fingerprint(request) if again else b"",
            again_seconds=self.again_seconds,
        )
        if handed is None:
            self._skip_seen(request, work, source)  # fetched in the job already: the lease is kept for it
            return False
        self.held.discard(work.lease)
        if handed and filtered and not seen and bloom is not None:
            self._mark_seen(bloom, request)
        self.stats.inc_value("lease/handed_on" if handed else "lease/handoff_expired")
        return handed

    def _mark_seen(self, bloom: RedisBloomDupeFilter, request: Request) -> None:
        """Mark ``request``, handed on, seen; Redis failing leaves it unmarked: a link to its URL found
        later is queued again, and its article stored over itself."""
        try:
            bloom.mark_seen(request)
        except redis.RedisError as exc:
            self.outage.failed(f"mark {request.url} seen: a link to it found later is fetched again", exc)

    def _skip_seen(self, request: Request, work: Work, source: str | None) -> None:
        """End the lease of ``request``, a retry or a redirect to a URL seen already, as skipped."""
        logger.info("Skipped %s: it redirects to %s, seen already", source or request.url, request.url)
        self.stats.inc_value("scheduler/redirect_seen")
        if work.is_article and source is not None:
            self._note_redirect(request)
        if work.is_discover and work.site is not None:
            asked = (request.meta.get("redirect_urls") or [source or request.url])[0]
            discovery_of(self.crawler).gave_nothing(work.site, str(asked))
        count_job(request, "unfetched")
        self.ack(request, skipped=1)

    def _note_redirect(self, request: Request) -> None:
        """An article link skipped as redirecting to ``request``'s URL, seen already: its redirect chain
        is noted for the article's document (:mod:`crawler.redisio.redirects`), which records it at once
        when it is stored, else as it is stored; notes not recorded within ``NOTE_SECONDS`` of being
        noted go (counted). Raises ``redis.RedisError`` when Redis fails."""
        url = urldefrag(request.url).url
        expired = redirect_notes.note(
            self.server, self.keys, url, [str(u) for u in request.meta.get("redirect_urls", ())]
        )
        if expired:
            self.stats.inc_value("redirect/notes_expired", expired)
            logger.info(
                "Dropped %s of links redirecting to articles not stored within %.0f days of the note",
                counted(expired, "note"),
                redirect_notes.NOTE_SECONDS / 86400,
            )
        pipeline = store_pipeline_of(self.crawler)
        if pipeline is not None:
            pipeline.redirected(url)

    def _read_already(self, request: Request, work: Work) -> bool:
        """A discover request redirected to a URL its crawl reads anyway (a seed, a link kept, a page read:
        :meth:`~crawler.worker.discovery.Discovery.read_already`); its page is marked seen once read."""
        if not work.is_discover or work.site is None:
            return False
        discovery = discovery_of(self.crawler)
        rule = discovery.rule(work.site)
        return rule is not None and discovery.read_already(rule, request, work.depth)

    def _loop(self, request: Request) -> str | None:
        """The redirects that led to ``request`` ("A redirects to B, which redirects to A") when its URL
        is one of theirs, as Scrapy's fingerprinter tells URLs apart; else None."""
        fingerprint = self.crawler.request_fingerprinter.fingerprint
        target = fingerprint(request)
        chain = request.meta.get("redirect_urls", ())
        if not any(fingerprint(request.replace(url=str(url))) == target for url in chain):
            return None
        return redirects(request)

    def _backoff(self, work: Work) -> float:
        """Seconds a retry waits before it may be taken again: ``RETRY_BACKOFF_SECONDS``, doubled at each
        retry, at most ``RETRY_BACKOFF_MAX_SECONDS`` (a redirect goes on at once). The leased member is
        the request as it was taken: a retry is a copy that was retried once more."""
        assert work.lease is not None
        try:
            taken = serializer.loads(work.lease)
            before = int(taken["meta"].get("retry_times", 0))
        except (ValueError, KeyError, TypeError, AttributeError):
            before = work.retries
        if work.retries <= before or self.backoff_seconds <= 0:
            return 0.0
        return float(min(self.backoff_seconds * 2 ** (work.retries - 1), self.backoff_max_seconds))

    # --- requests out --------------------------------------------------------------------------------

    def next_request(self) -> Request | None:
        for _ in range(POISON_PER_CALL):
            if not self._popped and not self._take():
                return None
            lease = self._popped.popleft().member
            assert lease is not None
            try:
                request = decode_request(lease, self.spider)
            except QueueEntryError as exc:
                self.held.discard(lease)
                self._dead_letter_entry(lease, str(exc))
                continue
            leased(request, lease)
            only = getattr(self.spider, "only_sites", None)
            if only and Work.of(request).site not in only:
                # A site this worker does not serve (`crawler worker --sites`): back to the queue at once
                # for a worker that does, never dropped.
                self.held.discard(lease)
                self._call("return a request of another site", False, self.queue.release, [lease])
                self.stats.inc_value("scheduler/returned_other_site")
                return None
            work = Work.of(request)
            if helps(self.crawler, work.job):
                # Before a set-aside: a request of a site with no rule here, dead-lettered or put back, was
                # taken too (its dead letter is counted in others/dead).
                self.stats.inc_value("others/taken")
                self.stats.inc_value(f"others/site/{work.site}")
            set_aside = getattr(self.spider, "set_aside_unruled", None)
            if set_aside is not None and set_aside(request):
                # What it takes it cannot keep: sites offered to it would wait for nothing.
                self._kept_nothing_until = time.monotonic() + self.hungry_seconds
                continue
            self.stats.inc_value("scheduler/dequeued/redis")
            return request
        return None

    def _take(self) -> bool:
        """Lease up to ``SCHEDULER_POP_BATCH`` requests in one round trip into this worker's buffer (held,
        so renewed, from now on); False when none may be sent now."""
        if time.monotonic() < self._not_before and not self.downloaded:
            return False  # every site with requests waits for its politeness delay or backoff
        if self.held and self._store_holds_back():
            if self.downloaded:
                self._tell_soon.schedule(DOWNLOADS_TOLD_SECONDS)
            return False
        try:
            reported, self.downloaded = self.downloaded, []
            try:
                popped = self.queue.pop_many(
                    reported,
                    self.pop_batch,
                    worker=self.worker,
                    may_hunger=self._may_hunger(),
                    hungry_for=self.hungry_seconds,
                )
            except redis.RedisError:
                self.downloaded.extend(reported)
                raise
            if popped[0].member is None and time.monotonic() >= self._next_due_check:
                # Nothing to take: retries whose backoff is over, deferred requests, back in the queue.
                self._next_due_check = time.monotonic() + DUE_CHECK_SECONDS
                if self.queue.queue_due():
                    popped = self.queue.pop_many(
                        (),
                        self.pop_batch,
                        worker=self.worker,
                        may_hunger=self._may_hunger(),
                        hungry_for=self.hungry_seconds,
                    )
        except redis.RedisError as exc:
            self.outage.failed("take a request", exc)
            return False
        # A request taken is leased (written); taking none may only have read.
        self.outage.ok(wrote=popped[0].member is not None)
        if popped[0].member is None:
            self._wait_for_gate(popped[0].wait)
            return False
        self.held.update(entry.member for entry in popped if entry.member is not None)
        self._popped.extend(popped)
        return True

    def download_ended(self, lease: str) -> None:
        """The download of the request leased as ``lease`` ended (:mod:`crawler.worker.slots`): told to
        Redis with the next pop, or within ``DOWNLOADS_TOLD_SECONDS`` while this worker leases nothing for
        its store cannot write (its engine, waiting for the articles it holds, may not ask for a request
        meanwhile: Scrapy's scraper takes no more while 5 MB of responses wait for their items)."""
        self.downloaded.append(lease)
        if self._store_holds_back():
            self._tell_soon.schedule(DOWNLOADS_TOLD_SECONDS)

    def _tell_downloads_ended(self) -> None:
        """Tell Redis of the downloads that ended, while this worker leases nothing (its store cannot
        write): told with the next pop, each held its site's slot until its lease ended (its article stored
        or deferred, a busy timeout later for a locked week), other workers taking none of its requests.
        None once the store writes again: the next pop tells them."""
        if not self.downloaded or not self._store_holds_back():
            return
        reported, self.downloaded = self.downloaded, []
        try:
            self.queue.downloads_ended(reported, worker=self.worker)
        except redis.RedisError as exc:
            self.downloaded.extend(reported)
            self.outage.failed("free the slots of the downloads that ended", exc)
            return
        self.outage.ok(wrote=False)

    def _store_holds_back(self) -> bool:
        """Whether the store cannot write now, so that this worker, which holds leases, leases no more:
        their pages' articles would be deferred and fetched again (:meth:`StorePipeline.holds_back`)."""
        pipeline = store_pipeline_of(self.crawler)
        return pipeline is not None and pipeline.holds_back()

    def _may_hunger(self) -> bool:
        """Whether a pop that takes nothing may make this worker hungry: only one whose wake listener runs
        (none with ``SCHEDULER_IDLE_POLL_SECONDS`` 0: no wake would reach it, and the sites offered to it
        would wait for nothing), not a worker of some sites only (`crawler worker --sites`: offered any
        site, it would put it back), nor one that put back a request it could not keep within as long as
        a hunger lasts (``hungry_seconds``)."""
        return (
            self._listener is not None
            and not getattr(self.spider, "only_sites", None)
            and time.monotonic() >= self._kept_nothing_until
        )

    def _wait_for_gate(self, wait: float | None) -> None:
        """Nothing may be sent now: ask Redis again when the first waiting site may send (at most
        ``SCHEDULER_IDLE_POLL_SECONDS`` later: another process may queue work for a site that is free),
        and wake the engine then."""
        if wait is None or wait <= 0:
            return
        wait = min(wait, self.poll_seconds) if self.poll_seconds > 0 else wait
        self._not_before = time.monotonic() + wait
        self._wake.schedule(wait)

    def _dead_letter_entry(self, lease: str, reason: str) -> None:
        """A queue entry that is no request: out of the queue for good, once, with the reason."""
        logger.error("Dead-lettered a queue entry: %s", reason)
        self.stats.inc_value("queue/poison")
        if helps(self.crawler, None):
            self.stats.inc_value("others/taken")
            self.stats.inc_value("others/dead")
        record = self._record(reason, url=None, site=None, job=None)
        self._call(
            "dead-letter a queue entry", True, self.queue.dead_letter, lease, record, site="", job=None
        )

    # --- how a request's work ends -------------------------------------------------------------------

    def ack(
        self,
        request: Request,
        *,
        fetched: int = 0,
        stored: int = 0,
        reposts: int = 0,
        spooled: int = 0,
        updated: int = 0,
        skipped: int = 0,
        written: Sequence[tuple[str, bool]] = (),
    ) -> None:
        """``request``'s work is done (items stored, links queued): its lease ends, and its job counts the
        page ``fetched``, the items ``stored`` (``spooled`` of them to the store's local spool), those
        ``updated`` (their URLs stored before), the ``reposts`` recorded and the requests ``skipped``
        (redirected to a URL seen already), and what else its page counted for it (``job_counts``: its
        links, a skip and why, ...); the site's hourly counters
        count the items ``stored`` but not ``spooled`` as new articles (``store/new``) in the same step,
        and the page's dead letter of an earlier fetch goes (a page fetched again: ``Work.fetched_again``).
        ``written``: the URL of each article stored or updated, and whether its own job had written it
        before, for the worker's own count (:meth:`flush_acks`)."""
        work = self._release_hold(request)
        if work is None or work.lease is None:
            return
        ack = Ack(
            work.lease,
            work.slot,
            work.job,
            fetched,
            stored,
            reposts,
            spooled,
            updated,
            work.site,
            skipped=skipped,
            clears=f"{work.slot}\n{request.url}" if work.fetched_again else "",
            holder=self.worker,
            counts=job_counts(request),
        )
        self._acks.append(_Pending(ack, self._renewed + self.lease_seconds, tuple(written)))
        if fetched:
            self._answered(work.site)
        if work.is_discover:
            self._ending.append(work)
        self._ack_soon.schedule()

    def flush_acks(self) -> None:
        """Send the acknowledgements of this reactor turn in one round trip (a stored batch releases up to
        ``STORE_BATCH_SIZE`` at once), after those Redis did not take before whose leases last still. Redis
        away, or refusing writes: they are kept and sent again (``_unsent``); one whose lease expired
        meanwhile is dropped (counted ``lease/ack_unsent``), its request fetched again and stored over
        itself, as when a worker dies after storing. One sent again whose lease is gone (Redis came back
        without it, or took it before it failed to answer) finds none: counted as a late one."""
        moment = self.clock()
        while self._unsent and self._unsent[0].expires <= moment:
            self._unsent.popleft()
            self.stats.inc_value("lease/ack_unsent")
        pending = [*self._unsent, *self._acks]
        self._unsent.clear()
        self._acks = []
        ending, self._ending = self._ending, []
        if not pending:
            return
        if ending:
            self.crawler.signals.send_catch_log(leases_ending, works=ending)
        acks = [entry.ack for entry in pending]
        try:
            outcomes = self.queue.ack_many(acks)
        except redis.RedisError as exc:
            self.outage.failed("acknowledge requests", exc)
            self._unsent.extend(pending)
            return
        failed = [
            (ack, done) for ack, done in zip(acks, outcomes, strict=True) if isinstance(done, Exception)
        ]
        refused = refused_reply(done for _, done in failed)
        if refused:  # Redis refuses writes (a full memory, a read-only replica, a user denied): as when away
            self.outage.failed("acknowledge requests", refused)
            self._unsent.extend(
                kept for kept, done in zip(pending, outcomes, strict=True) if refused_reply([done])
            )
        elif len(failed) < len(acks):
            self.outage.ok(wrote=True)
        if failed and not refused:
            self._say_wrong_acks([ack for ack, _ in failed], failed[0][1])
        late = outcomes.count(False)
        if late:
            self.stats.inc_value("lease/ack_after_expiry", late)
        landed = [entry for entry, done in zip(pending, outcomes, strict=True) if done is True]
        if self._wrong_acks:  # a key named that an ack wrote since holds its own type again
            for entry in landed:
                self._wrong_acks.difference_update(self.queue.ack_keys(entry.ack))
        again = self._counted_before(landed)
        for name, count in (
            ("acked/stored", sum(entry.ack.stored for entry in landed) - again),
            ("acked/stored_again", again),
            ("acked/spooled", sum(entry.ack.spooled for entry in landed)),
            ("acked/updated", sum(entry.ack.updated for entry in landed)),
        ):
            if count:
                self.stats.inc_value(name, count)

    def _counted_before(self, landed: list[_Pending]) -> int:
        """The articles of the acknowledgements ``landed`` that this worker counted before: written again
        over its own job's document after an acknowledgement of this worker's had counted it (Redis
        restored from an older snapshot gave their requests back), which the job counts again (its count
        went back with the snapshot) but the worker's closing line must not (it counted 340 articles of
        251). An article its job wrote unacknowledged (a batch stored in part before it failed, a worker
        killed between the write and the acknowledgement, a lease expired before it) was counted by no
        acknowledgement: it is counted stored, once, as its job counts it."""
        written = [
            (xxh3_64_intdigest(url.encode()), wrote) for entry in landed for url, wrote in entry.written
        ]
        # Only an article its job wrote before can be one counted before: those alone are looked for, all at
        # once (one scan of the digests: 23 ms at 1,000,000), in the rare acknowledgements that end one.
        asked = {digest for digest, job_wrote_before in written if job_wrote_before}
        seen = asked.intersection(self._counted) if asked else set()
        again = 0
        for digest, job_wrote_before in written:
            if job_wrote_before and digest in seen:
                again += 1
            else:
                seen.add(digest)
                self._counted.append(digest)
        return again

    def _say_wrong_acks(self, acks: list[Ack], error: redis.ResponseError) -> None:
        """Name, once while it holds another type, each key of ``acks`` (which failed with WRONGTYPE, the
        first ``error``) that does (their keys looked at once for the acks that share them); ``error``
        itself, once, when none does (a key their script finds by name)."""
        looked: set[tuple[str, ...]] = set()
        for ack in acks:
            keys = tuple(self.queue.ack_keys(ack))
            if keys in looked:
                continue
            looked.add(keys)
            try:
                wrong = self.queue.wrong_ack_keys(ack)
            except redis.RedisError as exc:
                self.outage.failed("look for the key an acknowledgement failed on", exc)
                return
            said = {item.key: item.problem() for item in wrong} or {
                str(error): f"{error} (a key its script writes holds another type: someone SET it)"
            }
            for key, problem in said.items():
                if key not in self._wrong_acks:
                    self._wrong_acks.add(key)
                    logger.warning(
                        "An acknowledgement of job %s (site %s) failed: %s", ack.job, ack.site, problem
                    )

    def defer(
        self,
        request: Request,
        reason: str,
        *,
        seconds: float | None = None,
        max_attempts: int | None = None,
        kind: str = "store",
        quiet: bool = False,
        uses_try: bool = True,
    ) -> str | None:
        """``request``'s work could not be finished (its article not stored): it is fetched again after
        ``seconds`` (``STORE_RETRY_SECONDS``), or dead-lettered as ``kind`` when ``max_attempts``
        (``STORE_MAX_ATTEMPTS``) tries are used up; one that ``uses_try`` not (a wait for a lock another
        process holds) is fetched again however often. Each deferral and dead letter logged, at DEBUG when
        ``quiet`` (its caller says it). The reason of its dead letter when it was dead-lettered, else
        None."""
        work = self._release_hold(request)
        if work is None or work.lease is None:
            return None
        seconds = self.retry_seconds if seconds is None else seconds
        max_attempts = self.max_attempts if max_attempts is None else max_attempts
        attempts = self._call(
            "defer a request",
            False,
            self.queue.defer,
            work.lease,
            seconds,
            max_attempts=max_attempts,
            counted=uses_try,
        )
        if attempts == 0 and uses_try:
            dead = f"{reason} (tried {counted(max_attempts, 'time')})"
            self.dead_letter(request, dead, kind=kind, held=False, fetched=True, quiet=quiet)
            return dead
        if attempts is not None and attempts >= 0:
            self.stats.inc_value(f"lease/deferred/{work.site}")
            level, since = (
                (logging.DEBUG, "")
                if quiet
                else self.faults.said("deferred", reason, job_level(self.crawler, work.job))
            )
            tries = (
                f"attempt {attempts} of {max_attempts}"
                if uses_try
                else f"as often as it takes: a wait mends that, no try used up ({attempts} of {max_attempts})"
            )
            logger.log(
                level,
                "%s of site %r: %s; it is tried again in %g s (%s)%s",
                redacted(request.url),
                work.site,
                reason,
                seconds,
                tries,
                since,
            )
        return None

    def dead_letter(
        self,
        request: Request,
        reason: str,
        *,
        kind: str = "other",
        held: bool = True,
        fetched: bool = False,
        quiet: bool = False,
    ) -> None:
        """``request`` failed for good (after its retries): its lease ends, it is kept with ``reason`` in
        the dead letters (``crawler dead``) in place of the page's earlier one, its job counts an error of
        ``kind`` ("HTTP 404", "timeout", ...), and so do the site's counters; with ``fetched`` (its page
        was fetched, what came of it failed: its article refused or never stored, the spider failed on it,
        a feed or sitemap that is none) the job counts the page fetched too, once, however many times it
        was fetched. A page of a discover crawl that failed unfetched counts against its host in the
        bandit. Its line is logged at DEBUG when ``quiet`` (its caller says it)."""
        work = self._release_hold(request) if held else Work.of(request)
        if work is None or work.lease is None:
            return
        self.stats.inc_value(f"dead/{work.site}")
        self.stats.inc_value(f"errors/{kind}/{work.site}")
        if helps(self.crawler, work.job):
            self.stats.inc_value("others/dead")
        level, since = (logging.DEBUG if quiet else job_level(self.crawler, work.job)), ""
        if kind == "store" and not quiet:
            level, since = self.faults.said(DEAD_LETTERED, redacted_text(reason), level)
        elif not quiet:
            level, since = self._site_fault(request, work, reason, kind, level)
        logger.log(
            level,
            "Dead-lettered %s of site %r: %s%s",
            redacted(request.url),
            work.site,
            redacted_text(reason),
            since,
        )
        if kind not in NO_ANSWER:
            self._answered(work.site)
        record = self._record(
            reason, url=request.url, site=work.site, job=work.job, kind=kind, fetched=fetched
        )
        if work.is_discover:
            if not fetched and work.site is not None:
                discovery_of(self.crawler).gave_nothing(work.site, request.url)
            self.crawler.signals.send_catch_log(leases_ending, works=[work])
        self._call(
            "dead-letter a request",
            True,
            self.queue.dead_letter,
            work.lease,
            record,
            site=work.slot,
            job=work.job,
            kind=kind,
            fetched=fetched,
            supersedes=f"{work.slot}\n{request.url}",
        )

    def _site_fault(
        self, request: Request, work: Work, reason: str, kind: str, level: int
    ) -> tuple[int, str]:
        """The level and the end of the line of a dead letter that is not the store's: the fault of its site
        and reason (less its URL: a site that is down fails each request alike) is said whole the first
        time, saying the next ones are counted, then once a minute with their count (:class:`RepeatedFaults`,
        the rest as the worker stops, or as the site answers again for a site that did not answer)."""
        fault = f"{redacted(request.url)} of site {work.site!r}: {redacted_text(reason)}"
        if kind in NO_ANSWER and work.site is not None:
            self._unanswered.setdefault(work.site, {})[reason] = fault
        return self.faults.said_first(
            DEAD_LETTERED,
            fault,
            level,
            lambda said: (
                f"; the next dead letters of the site alike are {said}"
                f" (`{suggest(f'dead list --site {work.site}')}` lists each)"
            ),
        )

    def _answered(self, site: str | None) -> None:
        """``site`` answered a request: its faults of no answer are over, each said with the count of its
        dead letters not said yet."""
        if site is None or site not in self._unanswered:
            return
        again = suggest(f"dead requeue --site {site}")
        for fault in self._unanswered.pop(site).values():
            self.faults.ended(
                DEAD_LETTERED,
                fault,
                over=f"Site {site!r} answers again (`{again}` asks again for its dead letters)",
            )

    def forget(self, request: Request) -> None:
        """Stop renewing ``request``'s lease (Redis failed under its work): it expires and goes back to
        the queue, for this worker or another."""
        self._release_hold(request)
        self.stats.inc_value("lease/forgotten")

    def _release_hold(self, request: Request) -> Work | None:
        work = Work.of(request)
        if work.lease is None or work.lease not in self.held:
            return None
        self.held.discard(work.lease)
        return work

    def _record(
        self,
        reason: str,
        *,
        url: str | None,
        site: str | None,
        job: str | None,
        kind: str | None = None,
        fetched: bool = False,
    ) -> bytes:
        record: dict[str, object] = {
            "reason": redacted_text(reason),
            "kind": kind,
            "url": None if url is None else redacted(url),
            "site": site,
            "job": job,
            "at": round(shared_now(), 3),
        }
        if fetched:
            record["fetched"] = True
        return json.dumps({**record, "worker": self.worker}, ensure_ascii=False).encode("utf-8")

    # --- Redis away ----------------------------------------------------------------------------------

    def _call(
        self, what: str, wrote: bool, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T | None:
        """``function(*args, **kwargs)``, or None (counted, logged) when Redis fails under it; ``wrote``:
        a call that succeeds has written (its script's first command is a write)."""
        try:
            result = function(*args, **kwargs)
        except redis.RedisError as exc:
            self.outage.failed(what, exc)
            return None
        self.outage.ok(wrote=wrote)
        return result

    def has_pending_requests(self) -> bool:
        return len(self) > 0

    def __len__(self) -> int:
        try:
            return len(self.queue) + len(self._popped)
        except redis.RedisError as exc:
            self.outage.failed("count the queue", exc)
            return len(self._popped)

    def __repr__(self) -> str:
        return f"<LeasedScheduler worker={self.worker}>"


def _redirected_from(request: Request, lease: str) -> str | None:
    """The URL of the leased request ``request`` is a redirect of (Scrapy counted one redirect more);
    None for a retry."""
    try:
        taken = serializer.loads(lease)
        url, before = taken["url"], int(taken["meta"].get("redirect_times", 0))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    redirected = int(request.meta.get("redirect_times", 0)) > before
    return url if redirected and isinstance(url, str) else None


def scheduler_of(crawler: Crawler) -> LeasedScheduler | None:
    """The crawler's scheduler, when it is ours (None before the crawl starts)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # Scrapy 2.19: "Crawler.engine is not set yet", before the crawl starts
        return None
    scheduler = engine.scheduler if engine is not None else None
    return scheduler if isinstance(scheduler, LeasedScheduler) else None


def _opening_error(server: redis.Redis, exc: redis.RedisError, prefix: str) -> RedisUnavailableError:
    """The error of a worker (of any crawl command) whose Redis failed ``exc`` as the crawl opened: what
    Redis refuses and the fix (:func:`writes_refused`), the command its user may not run, a key under
    ``prefix`` of another type, or the failure."""
    if isinstance(exc, NoPermissionError):
        return RedisUnavailableError(
            f'the user of the Redis URL may not run a command the worker needs (Redis says "{exc}");'
            f" {NO_PERMISSION_FIX}"
        )
    try:
        refused = writes_refused(server)
    except redis.RedisError:
        refused = None
    if refused is None and wrong_type(exc):
        refused = (
            f'Redis answered the crawl\'s first write with an error (Redis says "{exc}"); a key under'
            f" {prefix}: holds another type, written by another program: give the crawler a prefix of its own"
            " (REDIS_KEY_PREFIX), or another Redis database in REDIS_URL"
        )
    return RedisUnavailableError(
        refused or f"Redis failed as the crawl opened ({exc}): run the command again once Redis answers"
    )
