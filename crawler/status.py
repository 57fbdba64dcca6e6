"""The status of the service, from the counters in Redis (never from logs): :func:`build_status` gathers
it as one JSON-ready mapping, which ``crawler status`` (:mod:`crawler.cli.status`) prints. Sources:

- the queue (``crawler:queue``, ``crawler:leases``: a lease past its deadline is ``expired``, its worker
  gone; a live worker puts it back in the queue), the workers' heartbeats (``crawler:workers``,
  :mod:`crawler.worker.heartbeat`: a dead worker shows 0 responses a minute, and is left out once its last
  beat is ``SUPERVISION_FORGET_WORKER_SECONDS`` old), the active scheduler (``crawler:scheduler:leader``),
  when Redis's crawler data began and when it was found lost (``crawler:since``,
  :mod:`crawler.redisio.since`);
- per site, the grab state (``crawler:grab:<site>``, :mod:`crawler.schedule.grabs` and
  :mod:`crawler.schedule.revisit`), the last grab's job counters, and the hourly counters
  (``crawler:stats:<site>:<hour>``, :mod:`crawler.worker.stats`) of the last 24 hours and of the 7 days
  before.

A site **needs attention** when, in the last 24 hours, it banned the crawler (a ban judged by
:mod:`crawler.worker.bans`, shown with its evidence), most of its requests failed (at least
``ERROR_MIN_REQUESTS``) or every one did, its errors rose (``RISING_FACTOR``, over hours in which it
made requests), or a field of its rule stopped matching (the share of article pages where the field's
XPath found nothing rose by ``FIELD_JUMP`` over its own history); when it is backing off (a 429,
a 503, a ban); when its store writes failed in the last ``STORE_FAILING_HOURS`` hours with no article
stored since (:mod:`crawler.worker.stats` keeps the moments); when its grabs found no new article for
``NO_NEWS_INTERVALS`` intervals; when its grab is overdue (no scheduler is running, and the site is not
paused: ``crawler sites pause``, which the status notes instead); or when its rule file has errors.
Redis needs attention when it refuses writes (its disk is full:
:func:`crawler.redisio.connection.writes_refused`) or may evict keys
(:func:`crawler.redisio.connection.evicts`); the store does when the workers alive store articles in
more than one place (each its own machine's SQLite files, with no ``MONGO_URI``: :func:`store_split`);
the workers do when an entry of their heartbeats cannot be read (:func:`_unreadable_beats`);
the queue does when requests wait and no worker is alive
(:func:`no_worker`); the scheduler does while its ticks fail with an unexpected error, queuing no grab
(:func:`ticks_failing`). The proxies' health is shown too.
"""

from __future__ import annotations

import json
import math
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from crawler.commandline import counted, span, suggest
from crawler.discover.frontier import Frontier
from crawler.discover.shared import SharedModel
from crawler.keys import Keys, hour_of
from crawler.redisio import storelocks
from crawler.redisio.clock import redis_clock
from crawler.redisio.connection import decoded, evicts, hash_of, writes_refused
from crawler.redisio.embedded import process_running
from crawler.redisio.queue import LeasedQueue, SitePoliteness, WrongKey
from crawler.redisio.since import BACK_SECONDS, RECORD_FILE, Seen, Since, read_record, read_since
from crawler.redisio.workers import beat_alive, beat_id, beat_suspended, pid_space, read_beat
from crawler.rules import PUBLISHED_FIX, Rule, RuleSet
from crawler.settings import SUPERVISION_FORGET_WORKER_SECONDS
from crawler.threads import process_stopped

__all__ = [
    "FIELD_JUMP",
    "build_status",
    "checked",
    "dead_letters_by_site",
    "needs_attention",
    "site_in_redis",
    "span",
    "status_sites",
    "store_split",
]

HOURS_RECENT = 24
HOURS_HISTORY = 7 * 24
# A field "stopped matching" when its missing share over the last 24 h is at least this much above its
# share in the 7 days before (a field that never matched on some pages is no news), on at least
# FIELD_MIN_PAGES pages, and most pages miss it; pages whose feed entry supplied the value miss nothing.
# One that found nothing on any page, with no article page in the 7 days before, never matched (a new rule's
# key to check).
FIELD_JUMP = 0.3
FIELD_MIN_PAGES = 3
# The counters of the pages where a rule field found nothing: fields/missing/<field>.
_MISSING = "fields/missing/"
# The counters of the pages where a feed entry supplied a field the page's own rule field did not find.
_FROM_FEED = "fields/from_feed/"
# Most requests failing, on at least this many, is a site problem rather than a blip; every request failing
# is one however few they were.
ERROR_MIN_REQUESTS = 3
# A grab this late (seconds past due) means no scheduler is running.
OVERDUE_SECONDS = 300
# Errors "rising": the last hour has this many times the hourly mean of the 23 hours before.
RISING_FACTOR = 3.0
# A site whose grabs found no new article for this many of its intervals needs a look.
NO_NEWS_INTERVALS = 5
# Store failures in this many hours (this one and the last) with no article stored since: the store cannot
# write now. A failure is tried again within minutes (STORE_RETRY_SECONDS), so a store still failing shows
# one within two hours; older ones are the dead letters' to tell.
STORE_FAILING_HOURS = 2
# The characters of an unreadable heartbeat the status quotes: enough to tell what wrote it.
BEAT_SHOWN = 40


def build_status(
    server: redis.Redis,
    keys: Keys,
    ruleset: RuleSet,
    now: float,
    site: str | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """The status of the service at ``now`` (epoch seconds), as a JSON-ready mapping; with ``site`` (one
    of :func:`status_sites`), of that site alone beside the service's own parts (Redis, the queue, the
    scheduler, workers, the store, proxies); ``data_dir``: the data folder whose record of Redis's crawler
    data tells a loss no process found yet (:mod:`crawler.redisio.since`)."""
    beats, unreadable = _beats(server, keys)
    workers = _workers(beats, redis_clock(server))
    split = store_split(workers)
    leader = server.get(keys.leader)
    scheduler = None if leader is None else decoded(leader)
    killed = _scheduler_killed(server, keys, scheduler)
    if killed is not None:
        scheduler = None
    dead = dead_letters_by_site(server, keys)
    shown = [(name, ruleset.get(name)) for name in ([site] if site is not None else status_sites(ruleset))]
    reads = _read_sites(server, keys, shown, now)
    unread = _scheduler_rule_errors(server, keys, scheduler)
    locks = storelocks.held(server, keys)
    sites = [
        _site(
            server,
            keys,
            name,
            rule,
            now,
            read,
            dead.get(name, 0),
            (ruleset.broken.get(name), unread.get(name)),
            scheduler,
            locks,
        )
        for (name, rule), read in zip(shown, reads, strict=True)
    ]
    broken = [
        {"file": error.file, "error": str(error)}
        for error in ruleset.errors
        if site is None or error.file == ruleset.broken.get(site)
    ]
    sites_files = set(ruleset.broken.values())
    health = {**_redis(server), **_since(server, keys, data_dir)}
    to_crawl = _to_crawl(server, keys)
    queue = {
        "queued": to_crawl["queued"],
        "leased": to_crawl["leased"],
        "expired": int(server.zcount(keys.leases, "-inf", redis_clock(server))),
        "waiting": to_crawl["waiting"],
        "dead_letters": sum(dead.values()),
    }
    alive = sum(1 for worker in workers if worker["alive"])
    idle = no_worker(sum(to_crawl.values()), alive)
    listed = set(status_sites(ruleset))
    failing = _tick_failure(server, keys, scheduler)
    elsewhere = (
        _dead_elsewhere({name: count for name, count in dead.items() if name not in listed})
        if site is None
        else None
    )
    return {
        "now": _iso(now),
        "rules_dir": str(ruleset.directory),
        "removed_sites": _removed_sites(server, keys) if not listed else [],
        "redis": health,
        "queue": queue,
        "scheduler": {
            "active": scheduler,
            "killed": killed,
            "failing": failing,
        },
        "workers": workers,
        "workers_alive": alive,
        "workers_figures": workers_figures(workers, health["writes_refused"]),
        "workers_unreadable": _unreadable_beats(keys, unreadable),
        "no_worker": idle,
        "store_split": split,
        "dead_elsewhere": elsewhere,
        "proxies": _proxies(server, keys, now),
        "sites": sites,
        "rule_errors": broken,
        "attention": sorted(
            {row["site"] for row in sites if row["attention"]}
            | {b["file"] for b in broken if b["file"] not in sites_files}
            | ({"redis"} if health["writes_refused"] or health["evicts"] else set())
            | ({"store"} if split else set())
            | ({"workers"} if unreadable else set())
            | ({"queue"} if idle else set())
            | ({"scheduler"} if failing else set())
            | ({"dead_letters"} if elsewhere else set())
        ),
    }


def needs_attention(report: dict[str, Any]) -> list[dict[str, str]]:
    """What of ``report`` (:func:`build_status`) needs attention, in the order and words the status table
    gives it: ``{"part": ..., "reason": ...}`` for a part of the service (``redis``, ``queue``,
    ``scheduler``, ``store``, ``dead_letters``, ``workers``), ``{"site": ..., "reason": ...}`` per reason of
    each site, ``{"file": ..., "reason": ...}`` per error of a rule file; empty when all is well."""
    health = report["redis"]
    parts = (
        ("redis", health["writes_refused"]),
        ("redis", health["evicts"]),
        ("queue", report["no_worker"]),
        ("scheduler", ticks_failing(report["scheduler"])),
        ("store", report["store_split"]),
        ("dead_letters", report["dead_elsewhere"]),
        ("workers", report["workers_unreadable"]),
    )
    return [
        *({"part": part, "reason": reason} for part, reason in parts if reason),
        *(
            {"site": site["site"], "reason": reason}
            for site in report["sites"]
            for reason in site["attention"]
        ),
        *(
            {
                "file": error["file"],
                "reason": f"{error['error'].removeprefix(error['file'] + ': ')}; {checked(error)}",
            }
            for error in report["rule_errors"]
        ),
    ]


def ticks_failing(scheduler: dict[str, Any]) -> str | None:
    """What needs attention in the report's ``scheduler`` (:func:`build_status`): the active scheduler's
    ticks failing with an unexpected error, which queue no grab while they do; None while they do not."""
    failing = scheduler["failing"]
    if not failing:
        return None
    return (
        f"the active scheduler, {scheduler['active']}, has its ticks failing since {failing['since']} with an"
        f" unexpected error ({counted(failing['ticks'], 'tick')} so far), no grab queued: {failing['error']};"
        " its log has the traceback, and it tries again every tick"
    )


def checked(error: dict[str, str]) -> str:
    """The command that lists the errors of a rule file, of the report's ``error`` of it."""
    file = error["file"]
    return f"`{suggest(f'rules check {file}')}` lists them"


def _removed_sites(server: redis.Redis, keys: Keys) -> list[str]:
    """The sites whose grabs Redis still holds (their last and next grab, read by the scheduler and by
    ``status``) when the rules folder has none: one SCAN of the key space, made only then."""
    start = len(keys.grab(""))
    return sorted({decoded(key)[start:] for key in server.scan_iter(match=keys.grab("*"), count=1000)})


def site_in_redis(server: redis.Redis, keys: Keys, site: str) -> bool:
    """Whether Redis holds anything of ``site``'s crawling (its grab state, requests, temp crawl, pause,
    politeness, ban): a site whose rule file is in another machine's rules folder alone, or removed (a
    ``crawler sites forget`` of an earlier version, up to 632b59a, left its politeness and ban)."""
    if server.exists(keys.grab(site), keys.queue_of(site), keys.temp(site), keys.polite(site)):
        return True
    if any(server.hexists(shared, site) for shared in (keys.paused, keys.politeness, keys.bans)):
        return True
    return int(server.hget(keys.pending, site) or 0) > 0


def status_sites(ruleset: RuleSet) -> list[str]:
    """The sites the status lists: those of the rules folder, their rule files broken or not."""
    return sorted({*ruleset.rules, *ruleset.broken})


def _scheduler_killed(server: redis.Redis, keys: Keys, scheduler: str | None) -> dict[str, Any] | None:
    """The active ``scheduler`` (the leader key's value) when it ran on this machine and its process is
    gone (killed: its lead holds until it lapses, up to ``SCHEDULE_LEADER_SECONDS``): its owner and pid;
    else None (where it runs unknown, a scheduler of a version before leader-process, or another machine)."""
    if scheduler is None:
        return None
    try:
        where = json.loads(decoded(server.get(keys.leader_process) or b"{}"))
        space = where.get("pid_space")
        if where.get("owner") != scheduler or space is None or space != pid_space():
            return None
        pid = int(where["pid"])
    except (redis.ResponseError, ValueError, TypeError, KeyError, AttributeError):
        return None  # the key overwritten (another type, no JSON object): nothing known of where it runs
    return None if process_running(pid) else {"owner": scheduler, "pid": pid}


def _overdue(since: str, scheduler: str | None) -> str:
    """Why a grab due ``since`` is not queued, and what to do: start a scheduler, or read the log of the
    active one."""
    if scheduler is None:
        return (
            f"grab overdue since {since}: no scheduler is active to queue it: start one with"
            f" `{suggest('schedule')}` (or `{suggest('run')}`, the scheduler with a worker)"
        )
    return (
        f"grab overdue since {since} though scheduler {scheduler} is active: its log says what it queues"
        " (does it read this rules folder?)"
    )


def workers_alive(server: redis.Redis, keys: Keys, *, besides: str | None = None) -> int:
    """How many workers are alive now: :func:`crawler.redisio.workers.beat_alive`; ``besides``: leaving out
    the worker of that id (this process's own)."""
    workers = _workers(_beats(server, keys)[0], redis_clock(server))
    return sum(1 for worker in workers if worker["alive"] and worker["id"] != besides)


def no_worker(requests: int, alive: int, what: str = "request") -> str | None:
    """What to do when ``requests`` (of a kind: ``what``) wait in the queue and no worker is ``alive`` to
    crawl them; None otherwise."""
    if not requests or alive:
        return None
    return (
        f"{counted(requests, what)} in the queue and no worker alive to crawl"
        f" {'them' if requests != 1 else 'it'}: start one with `{suggest('worker')}` (or `{suggest('run')}`,"
        " the scheduler with a worker)"
    )


def queue_size(server: redis.Redis, keys: Keys) -> int:
    """The requests a worker has to crawl: queued, waiting (retries, deferred) and leased."""
    return sum(_to_crawl(server, keys).values())


def _to_crawl(server: redis.Redis, keys: Keys) -> dict[str, int]:
    """The requests a worker has to crawl, by state: queued, leased, waiting (retries, deferred)."""
    queue = LeasedQueue(server, keys)
    return {"queued": len(queue), "leased": queue.leased(), "waiting": queue.delayed()}


def _beats(server: redis.Redis, keys: Keys) -> tuple[dict[str, dict[str, Any]], dict[str, bytes]]:
    """The workers' last heartbeats by worker id, and apart those that cannot be read
    (:func:`crawler.redisio.workers.read_beat`), each as written."""
    beats: dict[str, dict[str, Any]] = {}
    unreadable: dict[str, bytes] = {}
    for field, raw in sorted(server.hgetall(keys.workers).items()):
        beat = read_beat(raw)
        if beat is None:
            unreadable[beat_id(field)] = raw if isinstance(raw, bytes) else raw.encode()
        else:
            beats[beat_id(field)] = beat
    return beats, unreadable


def _workers(beats: dict[str, dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """The workers of their last heartbeats (``beats``: :func:`_beats`), those forgotten left out, judged at
    ``now`` by Redis's clock, which stamped them."""
    workers = []
    for worker, beat in beats.items():
        age = now - float(beat["seen"])
        alive = beat_alive(beat, now, worker)
        forget = float(beat.get("forget", SUPERVISION_FORGET_WORKER_SECONDS))
        if not alive and age > forget:
            continue  # as the heartbeat forgets it (crawler/worker/heartbeat.py), by the worker's own setting
        workers.append(
            {
                "id": worker,
                "host": beat.get("host"),
                "pid": beat.get("pid"),
                "alive": alive,
                "suspended": not alive and beat_suspended(beat, worker),
                "seen_seconds_ago": round(age, 1),
                "forget_seconds": forget,
                # A worker of an older version names its count of responses "pages".
                "responses": beat.get("responses", beat.get("pages", 0)),
                "rate_per_minute": beat.get("rate", 0.0) if alive else 0.0,
                "sites": beat.get("sites", []),
                "redis_errors": beat.get("redis_errors", 0),
                "store_paused": beat.get("store_paused", 0),
                "store": beat.get("store"),
            }
        )
    return workers


def _unreadable_beats(keys: Keys, unreadable: dict[str, bytes]) -> str | None:
    """What to do of the entries of the workers' hash that cannot be read (``unreadable``: worker id ->
    value, :func:`_beats`): no worker wrote them, or one of a version that writes another beat; None when
    there is none."""
    if not unreadable:
        return None
    shown = "; ".join(f"{worker}: {_cut(value)}" for worker, value in unreadable.items())
    fixes = " and ".join(f"`redis-cli HDEL {keys.workers} {shlex.quote(worker)}`" for worker in unreadable)
    return (
        f"{counted(len(unreadable), 'heartbeat')} in {keys.workers} cannot be read (not the JSON a worker"
        f" writes): {shown}; no worker is counted alive or dead by {'them' if len(unreadable) != 1 else 'it'}"
        f" and no beat removes {'them' if len(unreadable) != 1 else 'it'}: remove with {fixes} (a live"
        " worker writes its own again at its next beat)"
    )


def _cut(value: bytes) -> str:
    """A ``value`` of the workers' hash as a message quotes it: its first :data:`BEAT_SHOWN` characters,
    escaped; its bytes (``b'...'``) when it is no UTF-8."""
    try:
        text: str | bytes = value.decode("utf-8")
    except UnicodeDecodeError:
        text = value
    return repr(text[:BEAT_SHOWN]) + ("…" if len(text) > BEAT_SHOWN else "")


def workers_figures(workers: list[dict[str, Any]], refused: str | None) -> str | None:
    """That the ``workers``' figures are those of their last heartbeat, and its age, while Redis refuses
    writes (``refused``: :func:`writes_refused`): a worker writes none then, so its Redis errors (its
    heartbeat refused, at least) are not in them; None when Redis takes writes, or no worker is listed."""
    if refused is None or not workers:
        return None
    ages = ", ".join(f"{worker['id']}'s {worker['seen_seconds_ago']:.0f} s ago" for worker in workers)
    return (
        "the workers' figures (responses, responses/min, Redis errors) are those of their last heartbeat,"
        f" written before Redis refused writes: {ages}; the Redis errors of each since (a heartbeat"
        " refused, at least) are counted in its process and said in its log"
    )


def store_split(workers: list[dict[str, Any]]) -> str | None:
    """What to do when the ``workers`` alive store articles in more than one place (a shared Redis, and
    each worker's own SQLite files under its data folder: no ``MONGO_URI``); None when they share one."""
    places = sorted({str(worker["store"]) for worker in workers if worker["alive"] and worker.get("store")})
    if len(places) < 2:
        return None
    return (
        f"workers store articles in {len(places)} places: {', '.join(places)}; set MONGO_URI so they share"
        f" one store (docs/operations.md); `{suggest('status')}` lists each worker's store"
    )


def _redis(server: redis.Redis) -> dict[str, Any]:
    """The Redis server's health: version, uptime, the append-only file, memory, why it refuses writes
    when it does (its disk is full), and what to do when it may evict keys."""
    info = server.info()
    return {
        "version": decoded(info.get("redis_version", "")),
        "uptime_seconds": int(info.get("uptime_in_seconds", 0)),
        "aof_enabled": bool(info.get("aof_enabled", 0)),
        "aof_last_write_ok": decoded(info.get("aof_last_write_status", "ok")) == "ok",
        "used_memory_bytes": int(info.get("used_memory", 0)),
        "writes_refused": writes_refused(server),
        "evicts": evicts(server),
    }


def _since(server: redis.Redis, keys: Keys, data_dir: Path | None) -> dict[str, Any]:
    """When Redis's crawler data began (``data_began``), and when a worker or the scheduler found it lost
    (``data_lost``: ``at``, ``held_at`` when the one that found it last saw it there, ``found_by``), by
    ``crawler:since`` (:mod:`crawler.redisio.since`); None for what it does not say. A marker missing, or
    other than the one the data folder ``data_dir`` recorded, with no loss found since, is a loss no
    process found yet: ``at`` when the marker began anew (None: missing), ``held_at`` when the folder's
    processes last saw it, ``found_by`` None, ``record`` the folder's record file (None in the others);
    ``data_back`` (:func:`_back`): when it was found gone back to an older copy."""
    since = read_since(server, keys)
    seen = None if data_dir is None else read_record(data_dir, server, keys)
    lost = None
    if since is not None and since.lost is not None:
        held = None if since.held is None else _iso(since.held)
        lost = {"at": _iso(since.lost), "held_at": held, "found_by": since.by, "record": None}
    if seen is not None and (since is None or (since.lost is None and float(seen.began) != since.began)):
        assert data_dir is not None
        lost = {
            "at": None if since is None else _iso(since.began),
            "held_at": _iso(seen.seen),
            "found_by": None,
            "record": str(data_dir / RECORD_FILE),
        }
    return {
        "data_began": None if since is None else _iso(since.began),
        "data_lost": lost,
        "data_back": _back(since, seen, data_dir),
    }


def _back(since: Since | None, seen: Seen | None, data_dir: Path | None) -> dict[str, Any] | None:
    """When Redis was found gone back to an older copy of its data (``data_back``: ``to`` its last check in
    the copy, ``seen_at`` when the one that found it had seen it past that, ``found_at``, ``found_by``), by
    ``crawler:since``; or, its last check over ``BACK_SECONDS`` older than when the processes of the data
    folder ``data_dir`` last saw the same marker, a rollback no process found yet (``found_at`` and
    ``found_by`` None, ``record`` the folder's record file); None when neither."""
    if since is None:
        return None
    if (
        seen is not None
        and data_dir is not None
        and since.wrote is not None
        and float(seen.began) == since.began
        and seen.seen - since.wrote > BACK_SECONDS
    ):
        return {
            "to": _iso(since.wrote),
            "seen_at": _iso(seen.seen),
            "found_at": None,
            "found_by": None,
            "record": str(data_dir / RECORD_FILE),
        }
    if since.back is None:
        return None
    return {
        "to": _iso(since.back.to),
        "seen_at": _iso(since.back.seen),
        "found_at": _iso(since.back.found),
        "found_by": since.back.by,
        "record": None,
    }


def _dead_elsewhere(dead: dict[str, int]) -> str | None:
    """What to do about the ``dead`` letters (per site) of no site of the rules folder: sites whose rule
    file was removed or renamed, or was in another folder, and entries that were no request (``""``); no
    row of the Sites table shows them. None when there are none."""
    if not dead:
        return None
    whose = ", ".join(
        f"{name or 'entries that were no request'}: {count}"
        for name, count in sorted(dead.items(), key=lambda item: (not item[0], item[0]))
    )
    total = sum(dead.values())
    them, their = ("it", "its rule is") if total == 1 else ("them", "their rules are")
    return (
        f"{counted(total, 'dead letter belongs', 'dead letters belong')} to no site of the rules folder"
        f" ({whose}): `{suggest('dead list')}` shows {them}; requeue {them} once {their} back"
        f" (`{suggest('dead requeue --site SITE')}`), or drop {them}"
    )


def dead_letters_by_site(server: redis.Redis, keys: Keys) -> dict[str, int]:
    """Dead letters per site (an entry that was no request counts under ``""``)."""
    counts: Counter[str] = Counter()
    for raw in LeasedQueue(server, keys).dead().values():
        try:
            record = json.loads(raw)
        except ValueError:
            record = {}
        site = record.get("site") if isinstance(record, dict) else None
        counts[site if isinstance(site, str) else ""] += 1
    return dict(counts)


@dataclass(frozen=True, slots=True)
class _SiteReads:
    """What the status reads of one site in Redis (:func:`_read_sites`)."""

    state: dict[str, str]  # its grabs' hash
    hours: list[Counter[str]]  # its counters of each hour, the newest first
    last_new: int | None  # the articles its last job stored
    waiting: tuple[int, bool] | None  # the job its due grab waits for: requests pending, a temp crawl
    ban: dict[str, Any] | None
    paused: float | None
    polite: SitePoliteness
    queued: int
    sessions: list[tuple[str | None, str | None]]  # each session of its rule: held by, benched
    wrong: list[WrongKey]  # its keys that hold another type (someone SET them)
    lost: int  # its requests counted pending of which Redis holds none (LeasedQueue.lost), else 0
    set_aside: int  # its requests a `sites forget` cut short left set aside (LeasedQueue.set_aside_sites)
    temp: tuple[str, float | None, float | None] | None  # its last temp crawl: job, created, ended
    unnumbered: list[str]  # the fields of its grabs' hash that hold no number, each with its fix


# About 196 commands a site (its 192 hourly counter hashes): 50 sites are ~10,000 commands and a few MB of
# replies a round trip, where all of 1,000 sites in one pipeline held tens of MB in the client and the server.
SITES_PER_PIPELINE = 50


# What a key of a site's own other than its queue and politeness (its grabs, counters, sessions, jobs) holding
# another type does: each read or write of it fails, and the status reads it as empty.
_UNREADABLE = "the crawler can neither read nor write it (its status shows it empty) until it is removed"

# The fields of a site's grabs' hash (crawler/schedule/grabs.py) that hold a number: seconds since the epoch,
# seconds, counts, the yield.
_GRAB_NUMBERS = (
    "next",
    "last",
    "interval",
    "yield",
    "grabs",
    "deferred",
    "visits",
    "last_found",
    "first_visit",
    "waiting_since",
)


def _unnumbered(key: str, state: dict[str, str]) -> list[str]:
    """The fields of the grabs' hash ``state`` (at ``key``) in :data:`_GRAB_NUMBERS` that hold no finite
    number (edited by hand, another tool), each as a problem with its fix; they are taken out of ``state``,
    so the status reads them as absent."""
    unread = {
        field: state.pop(field)
        for field in [field for field in _GRAB_NUMBERS if field in state and not _is_number(state[field])]
    }
    return [
        f"Redis key {key} has {field} {value!r}, not a number (the site's grab state, edited by hand or by"
        " another tool): its status reads it as absent and the scheduler fails at the site's grabs (its log"
        f" names the error); fix: redis-cli HDEL {key} {field}, or redis-cli DEL {key} to start the site's"
        " schedule anew"
        for field, value in unread.items()
    ]


def _is_number(value: str) -> bool:
    """Whether ``value`` is a finite number as ``float`` reads it."""
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _read_first(
    server: redis.Redis, keys: Keys, sites: Sequence[tuple[str, Rule | None]], hours: list[str]
) -> list[tuple[str, Any]]:
    """The grab, counters of ``hours``, ban, pause, last temp crawl and sessions of each of ``sites``, in one
    pipeline: each
    reply with its key (an error as it is, see :func:`_reply`)."""
    pipe = server.pipeline(transaction=False)
    read: list[str] = []
    for site, rule in sites:
        read.append(keys.grab(site))
        pipe.hgetall(read[-1])
        for hour in hours:
            read.append(keys.stats(site, hour))
            pipe.hgetall(read[-1])
        read += [keys.bans, keys.paused, keys.temp(site)]
        pipe.hget(keys.bans, site)
        pipe.hget(keys.paused, site)
        pipe.get(read[-1])
        for session in rule.sessions if rule is not None else ():
            read += [keys.session(site, session.name), keys.session_bench(site, session.name)]
            pipe.get(read[-2])
            pipe.get(read[-1])
    return list(zip(read, pipe.execute(raise_on_error=False), strict=True))


def _reply(
    server: redis.Redis, site: str, read: tuple[str, Any], empty: Any, expected: str, wrong: list[WrongKey]
) -> Any:
    """The reply of a read of a key of ``site``'s own, or ``empty`` when the key holds another type than
    ``expected`` (noted in ``wrong``: the site needs attention, the others are reported as usual); any
    other error is raised."""
    key, reply = read
    if not isinstance(reply, redis.ResponseError):
        return reply
    if "WRONGTYPE" not in str(reply):
        raise reply
    wrong.append(WrongKey(site, key, decoded(server.type(key)), expected, _UNREADABLE))
    return empty


def _given(read: tuple[str, Any]) -> Any:
    """The reply of a read of a key shared by every site, any error raised."""
    if isinstance(read[1], redis.ResponseError):
        raise read[1]
    return read[1]


def _read_sites(
    server: redis.Redis, keys: Keys, sites: Sequence[tuple[str, Rule | None]], now: float
) -> list[_SiteReads]:
    """What the status reads of each of ``sites`` (a site and its rule), read for all of them together:
    their grabs, counters, ban, pause and sessions in a pipeline per SITES_PER_PIPELINE sites, the jobs
    those name in one more, their politeness and their queues in two each (a round trip each per site was
    3,017 for 300 sites, seconds on a Redis across a network). A key of a site's own holding another type
    is read as empty and named in the site's ``wrong``."""
    hours = [hour_of(now - 3600 * back) for back in range(HOURS_RECENT + HOURS_HISTORY)]
    replies = iter(
        reply
        for start in range(0, len(sites), SITES_PER_PIPELINE)
        for reply in _read_first(server, keys, sites[start : start + SITES_PER_PIPELINE], hours)
    )
    first = []
    unread: dict[str, list[WrongKey]] = {}
    for site, rule in sites:
        wrong = unread.setdefault(site, [])

        def own(empty: Any, expected: str, site: str = site, wrong: list[WrongKey] = wrong) -> Any:
            return _reply(server, site, next(replies), empty, expected, wrong)

        state = {decoded(name): decoded(value) for name, value in own({}, "hash").items()}
        counters = [
            Counter({decoded(name): int(count) for name, count in own({}, "hash").items()}) for _ in hours
        ]
        ban, paused = _given(next(replies)), _given(next(replies))
        unnumbered = _unnumbered(keys.grab(site), state) + _unread_ban(keys.bans, site, ban)
        temp = own(None, "string")
        sessions = [
            (decoded(held) if held else None, decoded(benched) if benched else None)
            for held, benched in (
                (own(None, "string"), own(None, "string")) for _ in (rule.sessions if rule else ())
            )
        ]
        first.append(
            (
                state,
                counters,
                _ban(ban, now),
                None if paused is None else float(paused),
                sessions,
                None if temp is None else decoded(temp),
                unnumbered,
            )
        )
    pipe = server.pipeline(transaction=False)
    asked: list[tuple[str, str]] = []
    for (site, _), (state, *_, temp, _) in zip(sites, first, strict=True):
        if temp is not None:
            asked.append((site, keys.job(temp)))
            pipe.hmget(asked[-1][1], ["created", "ended"])
        if "job" in state:
            asked.append((site, keys.job(state["job"])))
            pipe.hget(asked[-1][1], "stored")
        if "waiting" in state:
            asked.append((site, keys.job(state["waiting"])))
            pipe.hmget(asked[-1][1], ["pending", "kind"])
    jobs = iter(
        _reply(server, site, (key, reply), None, "hash", unread[site])
        for (site, key), reply in zip(asked, pipe.execute(raise_on_error=False), strict=True)
    )
    queue = LeasedQueue(server, keys)
    names = [site for site, _ in sites]
    set_aside = queue.wrong_keys(names)
    counted_pending: Counter[str] = Counter()
    for name, count in server.hgetall(keys.pending).items():
        counted_pending[decoded(name).partition("@")[0]] += int(count)
    reads = []
    for (state, counters, ban, paused, sessions, temp, unnumbered), polite, queued, aside in zip(
        first, queue.politeness(names), queue.queued_sites(names), queue.set_aside_sites(names), strict=True
    ):
        temp_crawl = None
        if temp is not None:
            # A job's hash expires SCHEDULE_JOB_KEEP_HOURS after it ended: its times are then unknown.
            created, ended = next(jobs) or (None, None)
            temp_crawl = (temp, _moment(created), _moment(ended))
        last_new = int(next(jobs) or 0) if "job" in state else None
        waiting = None
        if "waiting" in state:
            pending, kind = next(jobs) or (None, None)
            waiting = (int(pending or 0), kind == b"temp")
        site = polite.site
        # Queued ones are held: only a site counting requests pending with none queued is looked into.
        lost = (queue.lost(site) or (0, 0))[0] if counted_pending[site] > 0 and not queued else 0
        reads.append(
            _SiteReads(
                state,
                counters,
                last_new,
                waiting,
                ban,
                paused,
                polite,
                queued,
                sessions,
                set_aside.get(site, []) + unread[site],
                lost,
                aside,
                temp_crawl,
                unnumbered,
            )
        )
    return reads


def _moment(raw: bytes | None) -> float | None:
    """A time a job's hash holds (seconds since the epoch), None when it holds none."""
    return None if raw is None else float(raw)


def _tick_failure(server: redis.Redis, keys: Keys, scheduler: str | None) -> dict[str, Any] | None:
    """The unexpected error the active ``scheduler``'s ticks fail with (its ``error``, ``since`` when, the
    ``ticks`` failed), as it wrote it; None while they do not (or for a scheduler no longer active)."""
    if scheduler is None:
        return None
    try:
        record = json.loads(decoded(server.get(keys.tick_failure) or b"null"))
    except (redis.ResponseError, ValueError):  # another type, or not JSON: the scheduler writes it anew
        return None
    if not isinstance(record, dict) or record.get("scheduler") != scheduler:
        return None
    return {
        "error": str(record.get("error")),
        "since": _iso(float(record.get("since") or 0)),
        "ticks": int(record.get("ticks") or 0),
    }


def _scheduler_rule_errors(server: redis.Redis, keys: Keys, scheduler: str | None) -> dict[str, str]:
    """Site -> the errors of its rule file that the active ``scheduler`` wrote at its last tick (those of
    a scheduler no longer active are not read)."""
    errors: dict[str, str] = {}
    try:
        written = hash_of(server, keys.rule_errors)
    except redis.ResponseError:  # the key overwritten with another type: the scheduler writes it anew
        return errors
    for site, raw in written.items():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("scheduler") == scheduler:
            errors[site] = str(record.get("error"))
    return errors


def _site(
    server: redis.Redis,
    keys: Keys,
    site: str,
    rule: Rule | None,
    now: float,
    read: _SiteReads,
    dead: int,
    errors: tuple[str | None, str | None],
    scheduler: str | None,
    locks: list[dict[str, Any]],
) -> dict[str, Any]:
    """The status of ``site``: of its ``rule``, or (``rule`` None) of a site whose rule file has errors,
    from its counters and state in Redis (``read``); ``errors``: its rule file broken here, and the errors
    the active ``scheduler`` (for an overdue grab too) found in its own copy of the file; ``locks``: the
    store's write locks the workers found held (:func:`crawler.redisio.storelocks.held`)."""
    broken, unread = errors
    state = read.state
    recent, history = _summed(read.hours[:HOURS_RECENT]), _summed(read.hours[HOURS_RECENT:])
    last_new = read.last_new
    pages = recent["fields/pages"]
    if rule is not None:
        names = sorted(rule.fields)
    else:
        names = sorted(
            {name.removeprefix(_MISSING) for name in (*recent, *history) if name.startswith(_MISSING)}
        )
    fields: list[dict[str, Any]] = []
    for name in names:
        # None: no article page then, nothing measured (not 0% missing).
        share = recent[_MISSING + name] / pages if pages else None
        past_pages = history["fields/pages"]
        past = history[_MISSING + name] / past_pages if past_pages else None
        unsupplied = _unsupplied(recent, name, pages)
        flagged = (
            pages >= FIELD_MIN_PAGES
            and unsupplied >= 0.5
            and unsupplied - _unsupplied(history, name, past_pages) >= FIELD_JUMP
        )
        never_matched = flagged and past is None and recent[_MISSING + name] >= pages
        fields.append(
            {
                "field": name,
                "missing_24h": None if share is None else round(share, 3),
                "missing_before": None if past is None else round(past, 3),
                "stopped": flagged and not never_matched,
                "never_matched": never_matched,
            }
        )
    requests = recent["crawl/pages"] + recent["crawl/errors"] + recent["crawl/not_modified"]
    ban = read.ban
    polite = read.polite
    errors_by_kind = {
        name.removeprefix("errors/"): count
        for name, count in sorted(recent.items())
        if name.startswith("errors/")
    }
    attention = [wrong.problem() for wrong in read.wrong] + read.unnumbered
    if broken is not None:
        attention.append(f"rule file has errors: {broken}: `{suggest(f'rules check {broken}')}` lists them")
    elif unread is not None:
        attention.append(
            f"the active scheduler, {scheduler}, cannot read its copy of the site's rule file, so queues no"
            f" grab of it: {unread}; mend the file in that scheduler's rules folder"
            f" (`{suggest('rules check')}` there)"
        )
    if ban is not None:
        evidence = "; ".join(
            f"{signal['what']} at {signal['url']}"
            + (f" via {signal['proxy']}" if signal.get("proxy") else "")
            for signal in ban["signals"][-3:]
        )
        attention.append(
            f"banned at {ban['at_iso']} ({ban['what']}): {evidence}; the crawl slows it by itself,"
            f" `{suggest(f'sites pause {site}')}` stops its grabs until `{suggest(f'sites resume {site}')}`"
        )
    if polite.backoff_until is not None:
        attention.append(
            f"backing off until {_iso(polite.backoff_until)}: {polite.backoff_reason};"
            f" `{suggest(f'status --site {site}')}` shows its errors and bans"
        )
    failed = recent["crawl/errors"]
    if (failed >= ERROR_MIN_REQUESTS and failed * 2 > requests) or (failed and failed == requests):
        attention.append(f"fetch errors: {failed} of {requests} requests in 24 h failed: {_failed(site)}")
    last_hour, before, requested_before = _errors_rising(read.hours)
    if requested_before and last_hour >= ERROR_MIN_REQUESTS and last_hour > RISING_FACTOR * max(before, 1.0):
        attention.append(
            f"errors rising: {last_hour} in the last hour, against a mean of {before:.1f} an hour over the"
            f" {HOURS_RECENT - 1} h before: {_failed(site)}"
        )
    store_failing = _store_failing(read.hours[:STORE_FAILING_HOURS], site, locks, now)
    if store_failing is not None:
        attention.append(store_failing)
    no_news = _no_news(state, rule, now, site) if rule is not None else None
    if no_news is not None:
        attention.append(no_news)
    if recent["crawl/refused"]:
        count = recent["crawl/refused"]
        refused = f"refused {counted(count, 'request')} to private addresses in 24 h"
        if rule is not None:
            refused += ": " + rule.private_refusals(
                "allows them if the site is on this machine or an intranet",
                "the crawls' warnings",
                count,
                recent["crawl/refused_on_domains"],
            )
            refused += f"; `{suggest(f'rules check {rule.path}')}` checks the file once changed"
        else:
            refused += f"; `{suggest(f'status --site {site}')}` says why its rule file is not read"
        attention.append(refused)
    undecodable = recent["crawl/rule_encoding_undecodable"]
    if undecodable and rule is not None:
        attention.append(
            f"the rule's `encoding: {rule.encoding}` left characters undecodable (or read valid UTF-8 as"
            f" other characters) on {counted(undecodable, 'page')} in 24 h: remove or fix it in {rule.path}"
            " (the crawl's warning says what the pages declare;"
            f" `{suggest(f'rules try {site} URL')}` shows what it reads of a page)"
        )
    notes = []
    unproven = recent["crawl/rule_encoding_unproven_utf8"]
    if unproven and rule is not None and rule.encoding is not None:
        notes.append(
            f"the rule's `encoding: {rule.encoding}` read {counted(unproven, 'page')} in 24 h that say UTF-8"
            " and are valid UTF-8, with too few multi-byte characters to tell UTF-8 from"
            f" {rule.encoding}: if the site's pages are UTF-8 now, remove the key from {rule.path} (the"
            " crawl's warning names a page)"
        )
    not_html = recent["crawl/not_text"]
    if not_html:
        notes.append(
            f"{counted(not_html, 'page')} in 24 h {'was' if not_html == 1 else 'were'} no HTML page (binary"
            " data, an image, a JSON document...), not read: the crawl's warnings name each and what it"
            " looked like"
        )
    off_site = recent["crawl/redirect_off_site"]
    if off_site:
        notes.append(
            f"{counted(off_site, 'request')} in 24 h redirected off the site's domains, not followed: a"
            " site's articles are stored from its own domains only (the crawl's warnings name each target:"
            f" add its domain to `domains` in {rule.path if rule is not None else 'the rule file'} if it is"
            " the site's)"
        )
    unreachable = recent["robots/unreachable"]
    if unreachable:
        notes.append(
            f"robots.txt could not be fetched {counted(unreachable, 'time')} in 24 h: the site's pages were"
            " crawled as if it allowed them, as Scrapy does (the crawls' warnings say why)"
        )
    if read.lost:
        attention.append(
            f"{counted(read.lost, 'request')} counted pending, none of which Redis holds (none queued,"
            " leased or waiting): lost with the site's queue key (deleted, evicted, or overwritten by a SET)"
            " or with a Redis restarted from an older snapshot; the next grab (or"
            f" `{suggest(f'temp {site}')}`) queues its index pages again, `{suggest(f'temp {site} --again')}`"
            " fetches its articles seen before again (a plain crawl skips their URLs), and writes the count"
            " off"
        )
    if read.set_aside:
        attention.append(
            f"{counted(read.set_aside, 'request')} set aside by a `sites forget` that did not finish (cut"
            f" short by Ctrl-C, a kill or Redis gone), in {keys.taking(site)}: no worker takes"
            f" them, and their jobs count them pending; `{suggest(f'sites forget {site} --yes')}` takes them"
            " out"
        )
    if dead:
        attention.append(f"{counted(dead, 'dead letter')}: `{suggest(f'dead list --site {site}')}`")
    unparsed = recent["fields/unparsed/published"]
    if pages and unparsed * 2 > pages:
        reason = (
            f"published is no date the crawl recognises on {unparsed} of {pages} pages in 24 h"
            " (stored as the page gives it)"
        )
        if rule is not None:
            reason += f": {rule.path}: article.fields.published: {PUBLISHED_FIX}"
        reason += f"; `{suggest(f'rules try {site} URL')}` shows what it reads of a page"
        attention.append(reason)
    for field in fields:
        if field["stopped"]:
            attention.append(
                f"field {field['field']} stopped matching: missing on {field['missing_24h']:.0%} of pages"
                f" (before: {_share(field['missing_before'])}): the site's layout changed?"
                f" `{suggest(f'rules try {site} URL')}` shows what each field finds on a page"
            )
        elif field["never_matched"]:
            where = rule.path if rule is not None else "the site's rule file"
            attention.append(
                f"field {field['field']} found nothing on any page (no article page before): check"
                f" article.fields.{field['field']} in {where} with `{suggest(f'rules try {site} URL')}`"
            )
    scheduled = rule is not None and bool(rule.every or rule.cron)
    # The next grab the scheduler set stays in Redis when the rule loses its schedule: none comes.
    next_due = float(state["next"]) if "next" in state and (scheduled or rule is None) else None
    waiting = _waiting(state, read.waiting) if scheduled else None
    paused = read.paused
    if paused is not None:
        notes.append(
            f"paused since {_iso(paused)}: no regular grab, its queued requests held;"
            f" `{suggest(f'sites resume {site}')}` resumes it"
        )
    elif next_due is not None and now - next_due > OVERDUE_SECONDS and scheduled:
        if waiting is None:
            attention.append(_overdue(_iso(next_due), scheduler))
        else:
            waited_for = "a temp crawl of the site" if waiting["temp"] else "the last grab"
            attention.append(
                f"grab due since {_iso(next_due)} waits for {waited_for}, job {waiting['job']}, to end"
                f" ({counted(waiting['pending'], 'request')} of it pending: a slow crawl, or no worker"
                f" running: `{suggest('worker')}` starts one)"
            )
    if rule is None:
        schedule = "unknown"
    elif rule.every is not None:
        every = rule.every.total_seconds()
        schedule = f"every {span(float(state.get('interval', every)))} (rule: {span(every)})"
    else:
        schedule = f"cron {rule.cron}" if rule.cron else "none (temp crawls only)"
    discovering = (
        rule.discover is not None
        if rule is not None
        else any(name.startswith("discover/") for name in recent)
    )
    return {
        "site": site,
        "rule_broken": broken is not None,
        "scheduler_rule_error": unread,
        "schedule": schedule,
        "last_grab": _iso(float(state["last"])) if "last" in state else None,
        "last_temp": None
        if read.temp is None
        else {
            "job": read.temp[0],
            "started": None if read.temp[1] is None else _iso(read.temp[1]),
            "ended": None if read.temp[2] is None else _iso(read.temp[2]),
        },
        "next_grab": None if next_due is None else _iso(next_due),
        "grabs": int(state.get("grabs", 0)),
        "grab_waiting": waiting,
        "paused": None if paused is None else _iso(paused),
        "queued": read.queued,
        "lost_requests": read.lost,
        "set_aside_requests": read.set_aside,
        "grabs_deferred": int(state.get("deferred", 0)),
        "yield": round(float(state["yield"]), 3) if "yield" in state else None,
        "new_last_grab": last_new,
        "new_24h": recent["store/new"],
        "reposts_24h": recent["store/repost"],
        "pages_24h": recent["crawl/pages"],
        "not_modified_24h": recent["crawl/not_modified"],
        "errors_24h": sum(errors_by_kind.values()) or recent["crawl/errors"],
        "errors_by_kind_24h": errors_by_kind,
        "refused_24h": recent["crawl/refused"],
        "not_html_24h": not_html,
        "redirect_off_site_24h": off_site,
        "rule_encoding_undecodable_24h": recent["crawl/rule_encoding_undecodable"],
        "rule_encoding_unproven_utf8_24h": recent["crawl/rule_encoding_unproven_utf8"],
        "bans_24h": recent["ban"],
        "ban_signals_24h": recent["ban_signal"],
        "ban": ban,
        "backoffs_24h": recent["backoff"],
        "robots_unreachable_24h": recent["robots/unreachable"],
        "robots_refreshed_24h": recent["robots/refreshed"],
        "backing_off_until": None if polite.backoff_until is None else _iso(polite.backoff_until),
        "backoff_reason": polite.backoff_reason,
        "politeness": {
            "delay": polite.delay,
            "crawl_delay": polite.crawl_delay,
            "concurrency": polite.concurrency,
            "downloading": polite.inflight,
        },
        "sessions": [
            {"name": session.name, "held_by": held, "benched": benched}
            for session, (held, benched) in zip(rule.sessions if rule else (), read.sessions, strict=True)
        ],
        "dead_letters": dead,
        "qread_fallbacks_24h": recent["extract/qread_fallback"],
        "article_pages_24h": pages,
        "article_pages_before": history["fields/pages"],
        "fields": fields,
        "discover": _discover(server, keys, site, recent) if discovering else None,
        "attention": attention,
        "notes": notes,
    }


def _waiting(state: dict[str, str], job: tuple[int, bool] | None) -> dict[str, Any] | None:
    """The due grab that waits for the site's last grab, or a temp crawl of the site, to end
    (:mod:`crawler.schedule.grabs`): that job (``job``: its requests pending, whether it is a temp crawl),
    since when; None when no grab waits."""
    if "waiting" not in state or job is None:
        return None
    since = state.get("waiting_since")
    pending, temp = job
    return {
        "job": state["waiting"],
        "temp": temp,
        "pending": pending,
        "since": None if since is None else _iso(float(since)),
    }


def _discover(server: redis.Redis, keys: Keys, site: str, recent: Counter[str]) -> dict[str, Any]:
    """A discover crawl's last 24 hours (pages relevant and not; the links of its pages kept in the
    frontier, refused by the rule's domains, seen already; the links released from the frontier to the
    queue; the link model's time a page; the idle hosts whose entries went) and its state (the frontier's
    links and hosts, the model's shared updates)."""
    read = recent["discover/relevant"] + recent["discover/irrelevant"]
    frontier = Frontier(server, keys, site)
    model = SharedModel(server, keys, site, "status")
    pages = recent["discover/model_pages"]
    return {
        "relevant_24h": recent["discover/relevant"],
        "irrelevant_24h": recent["discover/irrelevant"],
        "harvest_24h": round(recent["discover/relevant"] / read, 3) if read else None,
        "links_kept_24h": recent["discover/links_kept"],
        "links_refused_24h": recent["discover/links_refused"],
        "links_seen_24h": recent["discover/links_seen"],
        "links_released_24h": recent["discover/released"],
        "model_ms_per_page_24h": (
            round(recent["discover/model_microseconds"] / pages / 1000, 3) if pages else None
        ),
        "frontier_links": frontier.size(),
        "frontier_hosts": int(server.hlen(frontier.target.best)),
        "hosts_expired_24h": recent["discover/hosts_expired"],
        "model_shares": int(server.xlen(model.log_key)),
    }


def _unsupplied(counters: Counter[str], name: str, pages: int) -> float:
    """The share of ``pages`` where the field ``name`` found nothing and no feed entry supplied it (the
    feed is what the rule relies on there: those pages lack nothing); 0.0 without pages."""
    return max(counters[_MISSING + name] - counters[_FROM_FEED + name], 0) / pages if pages else 0.0


def _share(value: float | None) -> str:
    return "no article page" if value is None else f"{value:.0%}"


def _ban(raw: bytes | None, now: float) -> dict[str, Any] | None:
    """The site's last ban (``raw``: as kept) within 24 hours, with its evidence (the signals that made
    it)."""
    if raw is None:
        return None
    try:
        ban = json.loads(raw)
    except ValueError:
        return None
    if not _ban_read(ban) or now - float(ban["at"]) > HOURS_RECENT * 3600:
        return None
    return {**ban, "at_iso": _iso(float(ban["at"]))}


def _ban_read(ban: object) -> bool:
    """Whether ``ban`` (a ban record's JSON) is one a worker writes: an object with its time ``at``."""
    if not isinstance(ban, dict) or isinstance(ban.get("at"), bool):
        return False
    return isinstance(ban.get("at"), int | float) and math.isfinite(ban["at"])


def _unread_ban(key: str, site: str, raw: bytes | None) -> list[str]:
    """The ban record ``raw`` of ``site`` (in the hash ``key``) as a problem with its fix when it is none a
    worker writes (edited by hand, another tool), else nothing."""
    if raw is None:
        return []
    try:
        if _ban_read(json.loads(raw)):
            return []
    except ValueError:  # no JSON (nor UTF-8)
        pass
    return [
        f"Redis key {key} has {site} {raw.decode(errors='replace')!r}, no ban record a worker writes (a JSON"
        " object with its time at, a number): its status shows no ban of the site; fix: redis-cli HDEL"
        f" {key} {site} (a worker writes the site's next ban anew)"
    ]


def _errors_rising(hours: list[Counter[str]]) -> tuple[int, float, bool]:
    """The site's errors in the last hour, their hourly mean over the 23 hours before (``hours``: its
    counters of each hour, the newest first), and whether it made any request in those hours: errors of a
    site new to the service rise from nothing, and "most of its requests failed" says what matters then."""
    counts = [hour["crawl/errors"] for hour in hours[:HOURS_RECENT]]
    history = any(
        hour["crawl/pages"] or hour["crawl/errors"] or hour["crawl/not_modified"]
        for hour in hours[1:HOURS_RECENT]
    )
    return counts[0], sum(counts[1:]) / (HOURS_RECENT - 1), history


def _failed(site: str) -> str:
    """The commands that show a ``site``'s failed requests: their kinds, and those given up."""
    return (
        f"`{suggest(f'status --site {site}')}` gives their kinds, `{suggest(f'dead list --site {site}')}`"
        " the requests given up and why"
    )


def _store_failing(
    hours: list[Counter[str]], site: str, locks: list[dict[str, Any]], now: float
) -> str | None:
    """ "the store cannot write" when the site's last store failure in ``hours`` (its
    counters, the newest first) came after its last article the store answered, if any
    (:mod:`crawler.worker.stats`): an article stored since clears it; "the store is locked" when that
    failure found a week's SQLite file locked by another process, with the file, its holder and since
    when it is held, of the ``locks`` the workers found held since that article, in those hours
    (:func:`_lock_held`). Whether its articles were tried again or dead-lettered at once is told by
    ``store/lasting`` (failures no wait mends) against ``store/unavailable``."""
    failed_at = max(hour["store/failed_at_ms"] for hour in hours)
    stored_at = max(hour["store/stored_at_ms"] for hour in hours)
    if not failed_at or failed_at <= stored_at:
        return None
    failures = sum(hour["store/unavailable"] for hour in hours)
    if max(hour["store/locked_at_ms"] for hour in hours) >= failed_at:
        since = max(stored_at, (now - STORE_FAILING_HOURS * 3600) * 1000)
        held = [_lock_held(lock, now) for lock in locks if lock["seen"] >= since]
        if held:
            return (
                f"the store is locked: {counted(sum(hour['store/locked'] for hour in hours), 'write')} found"
                " the write lock of a week's SQLite file held past the busy timeout in the last"
                f" {STORE_FAILING_HOURS} h, the last at {_iso(failed_at / 1000)}, no article stored since:"
                f" {'; '.join(held)}; each article is tried again until the lock is let go, none"
                " dead-lettered for it (docs/operations.md, 'Nothing lost, nothing hung')"
            )
        return (
            f"the store is locked: {counted(sum(hour['store/locked'] for hour in hours), 'write')} found"
            " the write lock of a week's SQLite file held past the busy timeout in the last"
            f" {STORE_FAILING_HOURS} h, the last at {_iso(failed_at / 1000)}, no article stored since:"
            " another process holds it, a worker stopped (SIGSTOP) in its write or a sqlite3 shell's"
            " transaction, which the workers' log names (`kill -CONT PID` lets a stopped one finish, or end"
            " it); each article is tried again until the lock is let go, none dead-lettered for it"
            " (docs/operations.md, 'Nothing lost, nothing hung')"
        )
    lasting = sum(hour["store/lasting"] for hour in hours)
    if not lasting:
        fate = "each article is tried again, then dead-lettered"
    elif lasting >= failures:
        fate = "each article was dead-lettered at once, as no wait mends its failure (a damaged week's file)"
    else:
        fate = (
            f"{lasting} of them, which no wait mends (a damaged week's file), dead-lettered at once, the"
            " others' articles tried again, then dead-lettered"
        )
    return (
        f"the store cannot write: {counted(failures, 'write')} failed in the last {STORE_FAILING_HOURS} h,"
        f" the last at {_iso(failed_at / 1000)}, no article stored since: the workers' log names the store"
        f" and what to do (a full disk: free space on it); {fate}"
        " (docs/operations.md, 'Nothing lost, nothing hung'); those given up:"
        f" `{suggest(f'dead list --site {site}')}`, queued again once it writes:"
        f" `{suggest(f'dead requeue --site {site}')}`"
    )


def _lock_held(lock: dict[str, Any], now: float) -> str:
    """What the status says of a week's file whose write lock a worker found held (``lock``: a note of
    :mod:`crawler.redisio.storelocks`): since when (first found so by that machine's workers, none of
    their writes into the file succeeding since), and its holder with what to do: a
    process stopped on this machine with `kill -CONT`; one of another machine (another pid space) named
    as such, this machine unable to tell whether it is stopped."""
    since = lock["since"] / 1000
    held = f"{lock['path']} found locked since {_iso(since)} ({span(max(now - since, 0))})"
    pid = lock.get("holder")
    if not isinstance(pid, int):
        return (
            f"{held}, by a process no worker could name (a lock of another machine's, or let go as it was"
            f" asked): `fuser {lock['path']}` on the machine of the data folder names the processes that have"
            " it open"
        )
    if lock.get("pid_space") is None or lock.get("pid_space") != pid_space():
        return (
            f"{held}, by process {pid} on {lock.get('host')}, the machine of the worker that found it: this"
            " status runs on another machine and cannot tell whether it is stopped; there, `kill -CONT"
            f" {pid}` lets a stopped one (SIGSTOP, Ctrl-Z) finish, or end its transaction"
        )
    if process_stopped(pid):
        return (
            f"{held}, by process {pid}, stopped (SIGSTOP, Ctrl-Z) in its transaction: `kill -CONT {pid}` lets"
            " it finish (or end it)"
        )
    if process_running(pid):
        return (
            f"{held}, by process {pid}, running: a sqlite3 shell or a script left in a write transaction,"
            " or a crawler upgrading the file; end its transaction (COMMIT or ROLLBACK) or the process"
        )
    return f"{held}, by process {pid}, gone since: the lock went with it, and the next try stores"


def _no_news(state: dict[str, str], rule: Rule, now: float, site: str) -> str | None:
    """ "no new articles for N grabs" when the site's grabs found nothing new for ``NO_NEWS_INTERVALS`` of
    its intervals (at least that many grabs)."""
    if rule.every is None or int(state.get("visits", 0)) < NO_NEWS_INTERVALS:
        return None
    interval = float(state.get("interval", rule.every.total_seconds()))
    since = float(state.get("last_found", state.get("first_visit", now)))
    if now - since < NO_NEWS_INTERVALS * interval:
        return None
    found = f"since {_iso(since)}" if "last_found" in state else "in any grab so far"
    index = rule.start_urls[0] if rule.start_urls else "URL"
    return (
        f"no new articles {found} ({NO_NEWS_INTERVALS}+ intervals): is the rule still finding its links?"
        f" `{suggest(f'rules try {site} {index}')}` shows the links it finds"
    )


def _proxies(server: redis.Redis, keys: Keys, now: float) -> list[dict[str, Any]]:
    """Each proxy's health, by its id (never its credentials)."""
    prefix = keys.proxy("")
    shown = []
    for key in sorted(server.scan_iter(match=f"{prefix}*", count=1000)):
        health = hash_of(server, decoded(key))
        until = float(health.get("benched_until", 0) or 0)
        shown.append(
            {
                "proxy": decoded(key).removeprefix(prefix),
                "ok": int(health.get("ok", 0)),
                "failed": int(health.get("failed", 0)),
                "banned": int(health.get("banned", 0)),
                "benches": int(health.get("benches", 0)),
                "latency_ms": int(health["latency_ms"]) if "latency_ms" in health else None,
                "benched": until > now,
                "benched_until": _iso(until) if until > now else None,
                "reason": health.get("reason") if until > now else None,
            }
        )
    return shown


def _summed(hours: list[Counter[str]]) -> Counter[str]:
    """The counters of ``hours`` added up, those at 0 kept (``Counter``'s ``+`` drops them)."""
    total: Counter[str] = Counter()
    for hour in hours:
        total.update(hour)
    return total


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
