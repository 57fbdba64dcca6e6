"""The crawl commands of ``crawler``: ``demo``, ``temp``, ``worker``, ``schedule`` and ``run``
(docs/cli.md)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import logging
import math
import os
import shlex
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import redis
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text
from scrapy.settings import Settings
from w3lib.url import canonicalize_url

from crawler.cli.options import (
    check_window,
    data_folder,
    no_rules_problem,
    resolve_ages,
    rules_folder,
    rules_in,
    settings_from,
    utc_stamp,
)
from crawler.cli.rules import unfetched_seeds_problem
from crawler.cli.terminal import cut, fit_progress, tell
from crawler.commandline import command_name, counted, given_folders, suggest
from crawler.config import Config
from crawler.deadletters import dead_letters
from crawler.demo.sites import DEMO_ORIGIN, DEMO_PORT, DEMO_RULES
from crawler.discover.frontier import Frontier
from crawler.errors import InputError, StoreError, Terminated, folder_advice, redacted, redacted_text
from crawler.keys import ROBOTS_DISALLOWED, SEEN_ALREADY, Keys
from crawler.redisio.clock import redis_clock
from crawler.redisio.connection import (
    connect,
    denial,
    denied,
    evicts,
    hash_of,
    resolve_redis_url,
    writes_refused,
)
from crawler.redisio.embedded import (
    AOF_FILE,
    EmbeddedRedis,
    RedisUnavailableError,
    live_users,
    server_directory,
)
from crawler.redisio.queue import LeasedQueue, WrongKeyError
from crawler.redisio.since import RECORD_FILE, read_record
from crawler.requests import (
    JobCounts,
    WrittenOff,
    end_again,
    enqueue_job,
    held_leases,
    keep_job,
    mark_temp_job,
    queue_in_job,
    take_leftovers,
    temp_job_ended,
    temp_job_seeding,
    unfinished_temp_job,
    write_off_lost,
)
from crawler.rules import Rule, load_rule, load_rules, rule_file
from crawler.rules.access import global_proxies
from crawler.schedule.grabs import GrabScheduler, rule_loader, when
from crawler.status import no_worker, workers_alive
from crawler.store import StoreConfig, store_config
from crawler.store.document import newest_published
from crawler.store.spool import waiting_under
from crawler.store.sqlite import SqliteStore
from crawler.threads import STOP_SIGNALS, signals_blocked
from crawler.worker.connection import RedisOutage
from crawler.worker.fetch import check_url
from crawler.worker.heartbeat import announced
from crawler.worker.process import check_worker_settings, run_worker

logger = logging.getLogger(__name__)


@contextmanager
def redis_for(config: Config, *, reading: bool = False) -> Iterator[str]:
    """The configuration's Redis: REDIS_URL, or the embedded server under its data folder (stopped at the
    end if this process started it). ``reading``: the command only reads; when the embedded server
    under the data folder holds no key (nothing was crawled there), it says so on stderr (a misspelt
    ``--data-dir`` shows nothing otherwise: an empty queue, as if all were well), or, when the folder's store
    holds articles, that their workers used another Redis (``REDIS_URL``); a Redis that refuses
    writes (its disk is full) is an error, except to such a command (``crawler status`` shows it). Such a
    command does not create a data folder that does not exist: :class:`InputError` names it."""
    with redis_and_server(config, reading=reading) as (url, _):
        yield url


@contextmanager
def redis_and_server(config: Config, *, reading: bool = False) -> Iterator[tuple[str, EmbeddedRedis | None]]:
    """:func:`redis_for`, and the embedded server behind the URL (None with REDIS_URL). A command or key
    Redis refuses the user (ACL) is :func:`denied_error`, read while the server runs: the embedded one
    stops as the command leaves it, and with it its ACL LOG, which names what a Lua script was refused."""
    if reading and not config.redis_url:
        data_folder(config.data_dir)
    url, embedded = resolve_redis_url(config.redis_url, config.data_dir, reads_only=reading)
    try:
        if reading and not config.redis_url and _holds_nothing(url):
            tell("note", _nothing_in_redis(config.data_dir, url, config.keys))
        yield url, embedded
    except redis.ResponseError as exc:
        if not denied(exc):
            raise
        raise denied_error(exc, url, config.keys.prefix) from None
    finally:
        if embedded is not None:
            embedded.close()


def denied_error(exc: redis.ResponseError, url: str | None, prefix: str) -> RedisUnavailableError:
    """The error of a command whose Redis at ``url`` (None: the embedded one, not running now) refused its
    user a command or key (``exc``: :func:`denied`): what and the fix (:func:`denial`), and that what it
    wrote before stands."""
    return RedisUnavailableError(
        f"{denial(exc, url, prefix)}; then run the command again: what it wrote before the refusal stands,"
        " each change whole"
    )


def _note_left(server: redis.Redis, keys: Keys, job: str, site: str | None, *, again: bool = False) -> None:
    """Say, as a temp crawl of ``job`` stops before its end (Ctrl-C, SIGTERM), what of it waits in the
    queue and what goes on with it: the queue is shared, so the next crawl on this Redis takes it, a
    temp crawl of any site too (``crawler temp SITE`` resumes the job of a crawl of a whole ``site``), and
    ``crawler sites forget SITE`` takes it out; a crawl of given URLs (no ``site``) is left to the
    workers."""
    with contextlib.suppress(redis.RedisError):
        left = JobCounts.read(server, keys, job).pending
        if left == 0:
            return
        wait = "waits" if left == 1 else "wait"
        waiting = f"stopped before its end: {counted(left, 'request')} of job {job} {wait} in the queue"
        then = _who_goes_on(site, job, one=left == 1, again=again)
        tell("note", waiting + (f"; {then}" if site is None else f": {then}"))


def _who_goes_on(site: str | None, job: str, *, one: bool, again: bool) -> str:
    """What takes the requests left of a temp crawl's ``job`` stopped before its end (``one`` request, or
    more) once workers may take them: the queue is shared, so the next crawl on this Redis, a temp crawl
    of any site too (``crawler temp SITE`` goes on with the job of a crawl of a whole ``site``), and
    ``crawler sites forget SITE`` takes them out; those of a crawl of given URLs (no ``site``) are left to
    the workers."""
    them = "it" if one else "them"
    if site is None:
        return f"a worker crawls {them} (`{suggest('worker')}`, or any crawl on this Redis)"
    whose = "its" if one else "their"
    return (
        f"the next crawl on this Redis takes {them}, at the pace of {whose} site, a temp crawl of any site"
        f" or a worker (`{_resume(site, again=again)}` goes on with job {job});"
        f" `{suggest(f'sites forget {site}')}` takes {them} out of the queue (and drops its grab state)"
    )


class _CommandWarnings(logging.Handler):
    """The log records of the crawler's own loggers while a command that crawls for a person runs
    (``temp``, ``demo``): a warning (what, why, the fix) is said as the command's own line,
    ``crawler temp: warning: ...``, as its other messages are, and so is the good news that ends an outage
    it warned of and what a stop asked for does (an INFO record logged with ``extra=TOLD``: ``crawler temp:
    note: Redis is back after 11.4 s``); every other record goes on to the root's handlers as it would
    have (Scrapy's log, at its ``LOG_LEVEL``, for diagnosing)."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.WARNING:
            tell("warning", redacted_text(record.getMessage()))
            return
        if record.levelno == logging.INFO and getattr(record, "told", False):
            tell("note", redacted_text(record.getMessage()))
            return
        for handler in logging.root.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


@contextmanager
def _warnings_said() -> Iterator[None]:
    """While it lasts, the crawler's warnings are the command's lines (:class:`_CommandWarnings`)."""
    ours = logging.getLogger("crawler")
    handler = _CommandWarnings()
    ours.addHandler(handler)
    ours.propagate = False
    try:
        yield
    finally:
        ours.removeHandler(handler)
        ours.propagate = True


def _nothing_in_redis(data_dir: Path, url: str, keys: Keys) -> str:
    """The note of a command that reads when the embedded Redis of ``data_dir`` (at ``url``) holds no key:
    its data lost, when the data folder's record says its processes saw the crawler's data in it
    (:mod:`crawler.redisio.since`); else a new data folder (or a misspelt one), unless its SQLite store
    holds articles: then workers stored them there while they kept their queue, counts and dead letters in
    another Redis (``REDIS_URL``)."""
    client = connect(url, reads_only=True)
    try:
        seen = read_record(data_dir, client, keys)
    finally:
        client.close()
    if seen is not None:
        return (
            f"the embedded Redis under {data_dir} holds nothing, yet this data folder's processes saw the"
            f" crawler's data in it until {datetime.fromtimestamp(seen.seen, UTC):%Y-%m-%dT%H:%M:%SZ}"
            f" ({data_dir / RECORD_FILE}): it lost it (its appendonly.aof removed or emptied, or a FLUSHALL);"
            " the articles stored are kept, the queue, the URLs seen and the dead letters are gone (pages"
            " are fetched again)"
        )
    with SqliteStore(data_dir, skip_damaged=True) as store:
        weeks = store.weeks()
        if not weeks:
            return f"nothing was crawled under {data_dir} yet (a new data folder); {_crawls_inside(data_dir)}"
        try:
            held = f"{counted(store.count(), 'article')} (of {counted(len(weeks), 'week')})"
        except StoreError:
            held = f"the articles of {counted(len(weeks), 'week')}"
    return (
        f"no Redis state under {data_dir}, yet its store holds {held}: the workers that stored them kept"
        " their queue, counts and dead letters in another Redis; did they run with REDIS_URL? set it as they"
        " had it to see them"
    )


def _crawls_inside(data_dir: Path) -> str:
    """Where the crawls of a data folder ``data_dir`` that holds none are: the data folders in it (an
    embedded Redis's file there), as the demo's ``data/demo`` is in ``./data``."""
    try:
        folders = sorted(entry for entry in data_dir.iterdir() if entry.is_dir())
    except OSError:
        folders = []
    inside = [folder for folder in folders if (server_directory(folder) / AOF_FILE).is_file()]
    if not inside:
        return "give the one of your crawls with --data-dir DIR"
    if len(inside) == 1:
        given = f"--data-dir {shlex.quote(str(inside[0]))}"
        return f"{inside[0]}, in it, holds crawls: give it with `{given}` before the command"
    return f"{', '.join(map(str, inside))}, in it, hold crawls: give the one of yours with --data-dir DIR"


def _holds_nothing(url: str) -> bool:
    """The Redis at ``url`` holds no key: no crawl, grab or dead letter was ever kept in it."""
    client = connect(url, reads_only=True)
    try:
        return int(client.dbsize()) == 0
    finally:
        client.close()


# --- crawler temp -------------------------------------------------------------------------------------

# Seconds a temp crawl sees its job not move with requests pending (or Redis hold none of its site's)
# before it looks whether they were lost (_requests_lost), and between two looks: a job that moves again,
# or a request found, starts it over.
LOST_REQUESTS_SECONDS = 5.0
# Seconds after a site's wait ends within which a new wait of the same cause is the same one lasting (not
# said again): a dead proxy benched anew at each PROXY_BENCH_SECONDS, a 429 asked again and again, come back
# within a few seconds of their wait's end; a minute also covers a tick or two of a slow Redis.
WAIT_LASTS_SECONDS = 60.0


def run_temp(args: argparse.Namespace) -> int:
    with _warnings_said():
        return _temp(args)


def _counted_pending(site: str, written: WrittenOff) -> str:
    """Who counted the requests ``written`` off pending: the site (its jobs as many or fewer), else its
    last jobs, with what the site counted."""
    if written.site >= written.jobs:
        return f"the {counted(written.site, 'request')} {site} counted pending"
    itself = f"{site} itself counting {written.site or 'none'}"
    return f"the {counted(written.jobs, 'request')} the last jobs of {site} counted pending, {itself}"


def _temp(args: argparse.Namespace) -> int:
    config = Config.from_env()
    rules_folder(config.rules_dir)
    rule = load_rule(rule_file(config.rules_dir, args.site))
    article_urls = [article_url(rule, given) for given in args.url or ()]
    window = StoredWindow.of(args, rule, config.redis_url)
    # Pages given (--url) or re-read from the store (--stored): a job of its own, never the site's crawl.
    given = bool(article_urls) or window is not None
    seen_again = _again(args, rule, given=given)
    unfetched = unfetched_seeds_problem(rule.discover) if rule.discover and not given else None
    if unfetched is not None:
        tell("warning", f"{unfetched} (discover.budget in {rule.path}: raise it over the seeds)")
    overrides = settings_from(args.set)
    store = _check_store(config, overrides)
    with _stored_pages(store, rule, window) as rereads, redis_for(config) as url:
        _warn_if_store_moved(config, store)
        settings = _crawl_settings(config, url, overrides)
        server, keys = connect(url), Keys(settings["REDIS_KEY_PREFIX"])
        if server.hexists(keys.paused, rule.site):
            raise InputError(
                f"site {rule.site} is paused: its requests are held, a temp crawl of it would wait for ever;"
                f" `{suggest(f'sites resume {rule.site}')}` first"
            )
        wrong = LeasedQueue(server, keys).wrong_keys([rule.site]).get(rule.site)
        if wrong:
            raise WrongKeyError(f"site {rule.site} cannot be crawled now: {wrong[0].problem()}")
        lost = write_off_lost(server, keys, rule.site)
        if lost is not None:
            fetches = (
                "this crawl fetches the articles seen before again"
                if seen_again
                else f"`{suggest(f'temp {rule.site} --again')}` fetches the articles seen before again"
            )
            tell(
                "note",
                f"Redis held none of {_counted_pending(rule.site, lost)} (lost with its queue key, deleted,"
                " evicted or overwritten, or with a Redis restarted from an older snapshot): their counts are"
                f" written off, and its last jobs no longer wait for them; {fetches}",
            )
        if seen_again or given or rule.discover:
            # Pages fetched again, whose dead letters of an older crawler their acks find only so.
            LeasedQueue(server, keys).index_all_dead()
        resumed = None if given else unfinished_temp_job(server, keys, rule.site, again=seen_again)
        before = None if resumed is None else JobCounts.read(server, keys, resumed)
        requeued = resumed is not None and temp_job_ended(server, keys, resumed)
        title = f"temp crawl of {rule.site}"
        if resumed is None:
            known = _stored_first_seen(store, article_urls)
            fresh = [page for page in article_urls if page not in known]
            if known or rereads is not None:
                with _queueing_shown(title, itertools.chain(known.items(), rereads or ())) as again:
                    job = _enqueue(settings, server, keys, [rule], article_urls=fresh, stored=again)
            else:
                temp_of = None if given else rule.site
                job = _enqueue(
                    settings, server, keys, [rule], article_urls=fresh, again=seen_again, temp_of=temp_of
                )
        else:
            job = resumed
            # What became of the job goes first, as the summary's first line says it: a narrow terminal
            # cuts the title from its end, down to MIN_TITLE_WIDTH, which the word fits.
            title = f"{'continued' if requeued else 'resumed'} {title} (job {job})"
            mark_temp_job(server, keys, job, ended=False)
            if temp_job_seeding(server, keys, job):
                _enqueue(settings, server, keys, [rule], again=seen_again, job=job, temp_of=rule.site)
            _note_held_leases(server, keys, job)
        started = redis_clock(server)
        try:
            counts, paused, helped = _crawl_job(
                settings, server, keys, job, title=title, site=rule.site, given=given, again=seen_again
            )
        except KeyboardInterrupt:
            _note_left(server, keys, job, rule.site if not given else None, again=seen_again)
            raise
        if not given and counts.pending == 0:
            mark_temp_job(server, keys, job, ended=True)
            if seen_again:
                end_again(server, keys, job)
        if counts.pending == 0:
            keep_job(server, keys, job, settings.getfloat("SCHEDULE_JOB_KEEP_HOURS"))
        discovered = _discover_summary(settings, url, rule, job, counts) if rule.discover else None
        seen_before = None if seen_again or given else _seen_before(server, keys, rule, counts, job, started)
    if before is not None:
        stored = (
            f"{counted(counts.stored, 'article')} stored in all, {before.stored} before this run,"
            f" {counts.stored - before.stored} in it; the counts below are the job's in all"
        )
        if requeued:
            fetched = "was" if before.pending == 1 else "were"
            print(
                f"continued job {job}, the last temp crawl of {rule.site}, which had ended: its"
                f" {counted(before.pending, 'dead letter')} requeued (`{suggest('dead requeue')}`) {fetched}"
                f" fetched again, {_listings_read(rule, counts.listings - before.listings)}: {stored}"
            )
        else:
            print(
                f"resumed job {job}, the last temp crawl of {rule.site}, which had not ended (it was killed"
                f" or stopped, or runs still): {stored}"
            )
    _print_summary(job, counts, settings, rule)
    if seen_before:
        print(seen_before)
    if seen_again:
        print(
            f"queued {counted(counts.again, 'article page')} seen before again (--again: this job only; the"
            " counts above say how they ended): their URLs stay seen for every other crawl"
        )
    if rereads is not None and window is not None:
        print(rereads.summary(window))
    if discovered:
        print(discovered)
    taken = counts.taken - (before.taken if before is not None else 0)
    if paused or taken:
        print(
            _paused_end(rule.site, job, counts.pending, given=given, again=seen_again)
            if paused
            else _forgotten_end(rule.site, job, taken)
        )
        for note in counts.notes:
            print(note)
        _print_helped(helped)
        return 1
    written = counts.stored + counts.updated
    if written == 0 and counts.unstored:
        articles = "the article" if counts.unstored == 1 else "the articles"
        print(
            f"{articles} of {counts.unstored} of the {counted(counts.fetched, 'page')} fetched could not be"
            " stored (errors of kind store): see the store's errors above, and in the dead letters"
        )
        code = 1
    elif counts.fetched == 0 and counts.stored == 0:
        if counts.skipped and not counts.errors and not counts.refused:
            pages = "its page was" if counts.skipped == 1 else f"its {counts.skipped} pages were"
            named = article_urls[0] if article_urls else rereads.first if rereads is not None else None
            page, which = (shlex.quote(named), "it") if named else ("URL", "a URL")
            robots = (
                f" (`{suggest(f'rules try {rule.site} {page}')}` says whether robots.txt disallows {which})"
                if ROBOTS_DISALLOWED in counts.skip_causes
                else ""
            )
            causes = _skip_causes(counts)
            why = causes[0][0] if len(causes) == 1 else _counted_causes(causes)
            print(f"nothing could be fetched: {pages} skipped: {why}{robots}")
        else:
            dead = f" (`{suggest('dead list')}` for the errors)" if counts.errors else ""
            # The notes, each a page of the rule's that failed and the key naming it, follow this line.
            where = "below" if counts.notes else "above"
            print(f"nothing could be fetched: see the reasons {where}{dead}")
        code = 1
    else:
        code = 0 if (counts.errors == 0 and counts.refused == 0) or written > 0 else 1
        if not given and not _found_anything(rule, counts):
            print(_no_links_hint(rule, counts.fetched))
    for note in counts.notes:
        print(note)
    _print_helped(helped)
    return code


def _seen_before(
    server: redis.Redis, keys: Keys, rule: Rule, counts: JobCounts, job: str, started: float
) -> str | None:
    """The line of a crawl of the whole site that stored nothing, its article links seen before: the
    command that fetches them again, and when the site has dead letters of earlier crawls (pages that
    failed: a site that was down), the one that fetches those alone; None for any other crawl. The dead
    letters of ``job`` (the summary's line names them) and those dead-lettered since the crawl
    ``started`` (Redis's clock: a page requeued, failed again by its worker or another) are not said to
    have failed before."""
    seen = counts.skip_causes.get(SEEN_ALREADY, 0)
    if not seen or rule.discover or counts.stored or counts.updated:
        return None
    links = (
        "the article link its listings gave was"
        if seen == 1
        else f"the {seen} article links its listings gave (a URL once for each listing that gave it) were"
    )
    line = (
        f"{links} seen before, by earlier crawls (`{suggest('sites forget')}` keeps URLs seen: the seen"
        f" filter cannot forget one): `{suggest(f'temp {rule.site} --again')}` fetches"
        f" {'it' if seen == 1 else 'them'} again"
    )
    dead = sum(
        1
        for letter in dead_letters(LeasedQueue(server, keys))
        if letter.site == rule.site and letter.job != job and (letter.at is None or letter.at < started)
    )
    if not dead:
        return line
    pages, are, which = (
        ("page", "is a dead letter", "that one") if dead == 1 else ("pages", "are dead letters", "those")
    )
    listed, requeued = suggest(f"dead list --site {rule.site}"), suggest(f"dead requeue --site {rule.site}")
    return (
        f"{line}; {dead} {pages} of {rule.site} {are}, failed before (`{listed}` says why): `{requeued}`"
        f" fetches just {which} again"
    )


def _print_helped(helped: Helped) -> None:
    """The last line of a temp crawl whose worker handled requests of other jobs (:class:`Helped`)."""
    if helped.taken or helped.dead:
        print(helped.said())


def _again(args: argparse.Namespace, rule: Rule, *, given: bool) -> bool:
    """Whether ``args`` ask for a crawl that fetches seen URLs again (``--again``); :class:`InputError`
    when they give pages too (``--url``, ``--stored``: fetched whatever the seen filter says already), or
    ``rule`` is a discover crawl's (its links are judged by its frontier)."""
    if not args.again:
        return False
    if given:
        option = "--url" if args.url else "--stored"
        raise InputError(
            f"--again follows {rule.site}'s index pages' links even when they were seen; the pages of"
            f" {option} are fetched whatever the seen filter says already: give one of the two"
            f" (`{suggest(f'temp {rule.site} --again')}`)"
        )
    if rule.discover is not None:
        raise InputError(
            f"--again: site {rule.site} is a discover crawl ({rule.path}): its frontier, not the seen filter"
            f" of articles, chooses the pages it reads; run `{suggest(f'temp {rule.site}')}` without --again"
        )
    return True


def _resume(site: str | None, *, again: bool) -> str:
    """The command that goes on with the unfinished job of a temp crawl of ``site``: a crawl with
    ``--again`` (``again``) goes on with such a job alone (:func:`crawler.requests.unfinished_temp_job`)."""
    return suggest(f"temp {site}{' --again' if again else ''}")


def _paused_end(site: str, job: str, left: int, *, given: bool, again: bool = False) -> str:
    """The last line of a temp crawl of ``job`` stopped as its ``site`` was paused, ``left`` requests of
    it held in the queue: what takes them once the site is resumed (:func:`_who_goes_on`)."""
    then = _who_goes_on(None if given else site, job, one=left == 1, again=again)
    return (
        f"stopped before its end: {site} was paused (`{suggest(f'sites pause {site}')}`),"
        f" {counted(left, 'request')} of job {job} held in the queue; after"
        f" `{suggest(f'sites resume {site}')}`, {then}"
    )


def _forgotten_end(site: str, job: str, taken: int) -> str:
    """The last line of a temp crawl of ``job`` of which ``taken`` requests were taken out of the queue
    unfetched while it ran (``crawler sites forget``): its end came without them."""
    one = taken == 1
    return (
        f"ended without {counted(taken, 'request')} of job {job}: {'it was' if one else 'they were'} taken"
        f" out of the queue unfetched while this crawl ran (`{suggest(f'sites forget {site}')}`);"
        f" {'its page stays' if one else 'their pages stay'} seen: `{suggest(f'temp {site} --url URL')}`"
        " fetches one"
    )


def _listings_read(rule: Rule, read: int) -> str:
    """What a continued temp crawl did of ``rule``'s listing pages, of which it read ``read`` (those
    among the requeued dead letters): the others wait for the next temp crawl, a new job."""
    if rule.discover is not None:
        listings, pages, whose = len(rule.discover.seeds), ("seed", "seeds"), "its"
    else:
        listings = (
            len(rule.start_urls)
            + len(rule.feeds)
            + len(rule.sitemaps)
            + len(rule.api.urls if rule.api else ())
        )
        pages, whose = ("listing page", "listing pages"), "the site's"
    later = f"`{suggest(f'temp {rule.site}')}` reads them, in a new job, once this one has ended"
    if not read:
        what = "its seeds" if rule.discover is not None else "the site's listings"
        return f"{what} not read again ({later})"
    links = "the links it gives" if read == 1 else "the links they give"
    if read >= listings:
        return f"{whose} {pages[0] if read == 1 else pages[1]} among them read again, with {links}"
    return (
        f"{read} of {whose} {listings} {pages[1]} among them read again, with {links}; the others"
        f" not read again ({later})"
    )


def _note_held_leases(server: redis.Redis, keys: Keys, job: str) -> None:
    """A note on stderr when leases of the resumed ``job`` are held (a crawl killed holds its leases until
    they expire): the crawl waits for them, and shows no progress meanwhile when they are all it has."""
    now = redis_clock(server)
    deadlines = held_leases(server, keys, job, now)
    if not deadlines:
        return
    one = len(deadlines) == 1
    them, requests = ("it", "the request") if one else ("them", "the requests")
    tell(
        "note",
        f"{counted(len(deadlines), 'request')} of job {job} {'is' if one else 'are'} leased to a worker that"
        f" stopped without ending {them} (killed), or runs still: this crawl waits up to"
        f" {math.ceil(max(deadlines) - now)} s for {'its lease' if one else 'their leases'} to expire and"
        f" {requests} to come back to the queue (a lease lasts LEASE_SECONDS from its worker's last renewal;"
        f" a worker that runs still renews {them}, and crawls {requests} itself)",
    )


def _found_anything(rule: Rule, counts: JobCounts) -> bool:
    """The crawl of ``rule``'s listings led somewhere: an article link found, an article stored or
    updated, or something that failed or was skipped (whose reasons the summary gives)."""
    return bool(
        rule.discover
        or counts.links
        or counts.stored
        or counts.updated
        or counts.reposts
        or counts.skipped
        or counts.errors
        or counts.refused
    )


def _no_links_hint(rule: Rule, fetched: int) -> str:
    """The line that says the ``fetched`` pages of ``rule``'s listings gave no article link, and which
    command shows what the rule finds on one."""
    urls = (*rule.start_urls, *rule.feeds, *rule.sitemaps, *(rule.api.urls if rule.api else ()))
    noun = "index page" if rule.start_urls else "page"
    pages = f"the {noun}" if fetched == 1 else f"the {fetched} {noun}s"
    picks = f" (index.links in {rule.path} picks them)" if rule.start_urls else ""
    # A URL with a secret (a token in its query) is not shown: the command names it URL.
    shown = urls[0] if urls and redacted(urls[0]) == urls[0] else None
    command = suggest(f"rules try {rule.site} {shlex.quote(shown) if shown else 'URL'}")
    return (
        f"{pages} gave no article links{picks}: `{command}` shows what the rule finds on"
        f" {'it' if fetched == 1 else 'one'}"
    )


def article_url(rule: Rule, given: str) -> str:
    """``given`` (a ``--url``) when it is an http(s) URL without credentials on ``rule``'s domains and
    none of its listings (start URLs, feeds, sitemaps: pages --url would store as articles);
    :class:`InputError` saying what is wrong otherwise, before anything is queued or resolved."""
    url = check_url(given)
    if rule.discover is not None:
        raise InputError(
            f"--url {url!r}: site {rule.site} is a discover crawl ({rule.path}): it starts from its seeds and"
            f" judges each page it reads; run `{suggest(f'temp {rule.site}')}` without --url, or see how it"
            f" judges that page with `{suggest(f'rules try {rule.site} {url}')}`"
        )
    if rule.absolute_url(url) is None:
        raise InputError(
            f"--url {url!r}: its host {urlsplit(url).hostname} is not on the domains of site {rule.site}:"
            f" {', '.join(rule.domains)} (or their subdomains; {rule.path}); give a page of that site, or"
            " crawl this one with the rule of its own site"
        )
    page = urldefrag(url).url
    # Compared as the crawl requests them (the host's case, a host alone's path /, the query's order).
    canonical = canonicalize_url(page)
    for listings, what, kind, read_from in (
        (rule.start_urls, "a start URL", "an index page", "index pages"),
        (rule.feeds, "a feed", "a list of links", "listings"),
        (rule.sitemaps, "a sitemap", "a list of links", "listings"),
    ):
        if canonical in (canonicalize_url(listing) for listing in listings):
            crawl = suggest(f"temp {rule.site}")
            try_it = suggest(f"rules try {rule.site} {shlex.quote(page)}")
            raise InputError(
                f"--url {url!r}: it is {what} of site {rule.site} ({rule.path}), {kind}, which --url would"
                f" store as an article: crawl the site from its {read_from} with `{crawl}`, or see what the"
                f" rule finds on it with `{try_it}`"
            )
    return url


@dataclass(frozen=True, slots=True)
class StoredWindow:
    """Which stored articles of a site ``crawler temp SITE --stored`` reads again: those first seen in
    ``week``, at or after ``since``, before ``until`` (as ``crawler articles list`` chooses them), the
    newest ``limit`` of them."""

    week: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None

    @classmethod
    def of(cls, args: argparse.Namespace, rule: Rule, redis_url: str | None) -> StoredWindow | None:
        """The window of ``args`` (None without ``--stored``), its ages (``--since 7d``) counted back from
        the clock ``first_seen`` follows, Redis's at ``redis_url`` (:func:`resolve_ages`); :class:`InputError`
        for an option of ``--stored`` given without it, ``--stored`` for a discover rule, or a window no
        article is in."""
        options = {"week": args.week, "since": args.since, "until": args.until, "limit": args.limit}
        if not args.stored:
            named = next((name for name, value in options.items() if value is not None), None)
            if named is not None:
                raise InputError(
                    f"--{named} chooses the stored articles that --stored reads again: give --stored with it"
                    f" (`{suggest(f'temp {rule.site} --stored --{named} ...')}`), or leave it out"
                )
            return None
        if rule.discover is not None:
            raise InputError(
                f"--stored: site {rule.site} is a discover crawl ({rule.path}): it judges each page as it"
                f" reads it from its seeds, and reads no page again by a rule; run"
                f" `{suggest(f'temp {rule.site}')}` without --stored"
            )
        resolve_ages(args, redis_url, needs_redis=True)
        check_window(args.since, args.until)
        return cls(args.week, args.since, args.until, args.limit)

    def described(self) -> str:
        """The window in words, after "the stored articles of SITE": empty for all of them."""
        parts = [
            *([f"first seen in week {self.week}"] if self.week else []),
            *([f"first seen at or after {utc_stamp(self.since)}"] if self.since else []),
            *([f"first seen before {utc_stamp(self.until)}"] if self.until else []),
            *([f"the newest {self.limit}"] if self.limit is not None else []),
        ]
        return f" ({', '.join(parts)})" if parts else ""


class _StoredPages:
    """The URL and ``first_seen`` of the stored articles of ``rule``'s site that ``crawler temp --stored``
    reads again, taken from the store's ``documents`` (read a page of rows at a time) as they are queued,
    so that memory stays bounded however many there are; counts those queued, and leaves out (counted)
    those no longer on the rule's domains."""

    def __init__(self, documents: Iterator[dict[str, Any]], rule: Rule) -> None:
        self._rule = rule
        self._pages = self._on_domains(documents)
        self.first: str | None = None
        self.queued = 0
        self.off_domains = 0
        self.first_off: str | None = None

    def _on_domains(self, documents: Iterator[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for document in documents:
            url = str(document["url"])
            if self._rule.absolute_url(url) is None:
                self.off_domains += 1
                self.first_off = self.first_off or url
                continue
            yield url, str(document["first_seen"])

    def check(self, window: StoredWindow) -> None:
        """Read the first page to queue; :class:`InputError` when there is none (before Redis starts)."""
        page = next(self._pages, None)
        if page is None:
            site, where = self._rule.site, window.described()
            if self.off_domains:
                raise InputError(
                    f"--stored: none of the {counted(self.off_domains, 'stored article')} of site"
                    f" {site}{where} is on its domains now ({', '.join(self._rule.domains)},"
                    f" {self._rule.path}; the first: {self.first_off}): nothing to read again"
                )
            raise InputError(
                f"--stored: site {site} has no stored articles{where}: nothing to read again;"
                f" `{suggest('articles stats')}` shows the weeks and sites stored"
            )
        self.first = page[0]
        self._pages = itertools.chain([page], self._pages)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for page in self._pages:
            self.queued += 1
            yield page

    def summary(self, window: StoredWindow) -> str:
        """The line after a crawl's summary: what was read again, and what was left as it was stored."""
        off = (
            f"; {counted(self.off_domains, 'stored article')} left out, no longer on the rule's domains"
            f" (the first: {self.first_off})"
            if self.off_domains
            else ""
        )
        return (
            f"read {counted(self.queued, 'stored article')} of site {self._rule.site}{window.described()}"
            f" again with the rule as it is now ({self._rule.path}): each one fetched is updated in place;"
            f" each one whose page failed (the errors) is left as it was stored{off}"
        )


def _stored_first_seen(store: StoreConfig, urls: list[str]) -> dict[str, str]:
    """The ``first_seen`` of each of ``urls`` (pages given with ``--url``) stored already, so that its
    fetch updates its document in the week that holds it, as a page of ``--stored`` does (a fetch is
    otherwise looked up in its own week and the week before only). None found when the store cannot be
    read (MongoDB away: the crawl spools its articles, docs/storage.md)."""
    if not urls:
        return {}
    found: dict[str, str] = {}
    try:
        with store.open() as opened:
            for url in urls:
                stored_url = urldefrag(url).url
                document = opened.get(stored_url)
                if document is not None and document["url"] == stored_url:
                    found[url] = str(document["first_seen"])
    except StoreError as error:
        logger.debug("the store could not tell which --url pages are stored: %s", error)
        return {}
    return found


@contextmanager
def _stored_pages(
    store: StoreConfig, rule: Rule, window: StoredWindow | None
) -> Iterator[_StoredPages | None]:
    """The stored articles ``window`` chooses of ``rule``'s site, from the store open while it lasts; None
    without a window (no ``--stored``). :class:`InputError` when there is none."""
    if window is None:
        yield None
        return
    with store.open() as opened:
        documents = opened.iter_articles(
            site=rule.site, week=window.week, since=window.since, until=window.until, limit=window.limit
        )
        pages = _StoredPages(documents, rule)
        pages.check(window)
        yield pages


# --- crawler worker -----------------------------------------------------------------------------------


def _serving_rules(directory: Path) -> None:
    """:class:`InputError` unless the rules folder ``directory`` has a rule file: a worker with none would
    take every request of the shared queue and dead-letter it (``no rule``)."""
    if not rules_in(rules_folder(directory)):
        raise InputError(
            no_rules_problem(
                directory,
                "a worker with no rule would take every request of the shared queue and dead-letter it",
            )
        )


def run_worker_command(args: argparse.Namespace) -> int:
    config = Config.from_env()
    _serving_rules(config.rules_dir)
    sites = [site for site in args.sites.split(",") if site]
    for site in sites:
        rule_file(config.rules_dir, site)  # a misspelt site is named, with the sites there
    overrides = {"LOG_LEVEL": "INFO", **settings_from(args.set)}
    store = _check_store(config, overrides)
    with redis_for(config) as url:
        _warn_if_stored_apart(config, store)
        _warn_if_store_moved(config, store)
        settings = _crawl_settings(config, url, overrides)
        run_worker(settings, sites=sites)
    return 0


# --- crawler schedule and crawler run ----------------------------------------------------------------


def _grab_scheduler(settings: Any, url: str) -> GrabScheduler:
    return GrabScheduler(
        connect(url),
        Keys(settings["REDIS_KEY_PREFIX"]),
        lease_seconds=settings.getfloat("LEASE_SECONDS"),
        yield_boost=settings.getint("SCHEDULE_YIELD_BOOST"),
        tick_seconds=settings.getfloat("SCHEDULE_TICK_SECONDS"),
        wait_max_seconds=settings.getfloat("SCHEDULE_GRAB_WAIT_MAX_SECONDS"),
        job_keep_hours=settings.getfloat("SCHEDULE_JOB_KEEP_HOURS"),
        data_dir=Path(settings["CRAWLER_DATA_DIR"]),
    )


def run_schedule_command(args: argparse.Namespace) -> int:
    config = Config.from_env()
    if not rules_in(rules_folder(config.rules_dir)):
        # The scheduler reads the folder again at every tick: a rule added later is scheduled then.
        tell("warning", no_rules_problem(config.rules_dir, "nothing is scheduled until one is added there"))
    overrides = {"LOG_LEVEL": "INFO", **settings_from(args.set)}
    check_worker_settings(config.settings(overrides))
    with redis_for(config) as url:
        settings = _crawl_settings(config, url, overrides)
        # --once prints what it did on stdout: its INFO logs would say it again on stderr.
        level = logging.INFO if args.verbose or not args.once else logging.WARNING
        logging.basicConfig(level=level, format=settings["LOG_FORMAT"], datefmt=settings["LOG_DATEFORMAT"])
        scheduler = _grab_scheduler(settings, url)
        load, rule_errors = rule_loader(config.rules_dir)
        if args.once:
            rules = load()
            for planned in scheduler.plan(rules):
                print(planned)
            queued = 0
            for seeded in scheduler.tick(rules):
                print(f"queued the grab of {seeded.site} as job {seeded.job}")
                queued += 1
            waiting = scheduler.waiting(rules)
            for wait in waiting:
                print(wait)
            for site in scheduler.paused(rules):
                resume = suggest(f"sites resume {site}")
                print(f"{site} is paused: no grab of it queued (`{resume}` resumes it)")
            if not queued and not waiting:
                print(_nothing_due(scheduler.upcoming(rules), any(rule.every or rule.cron for rule in rules)))
            alive = workers_alive(scheduler.server, scheduler.keys)
            if (idle := no_worker(queued, alive, "grab")) is not None:
                print(idle)
            return 0
        stop = threading.Event()
        try:
            scheduler.run(
                load,
                stop,
                leader_seconds=settings.getfloat("SCHEDULE_LEADER_SECONDS"),
                rule_errors=rule_errors,
            )
        except KeyboardInterrupt:
            stop.set()
            raise
    return 0


def _nothing_due(upcoming: list[tuple[float, str]], scheduled: bool) -> str:
    """What ``schedule --once`` says when no grab was due: when each site's next grab is; ``scheduled``:
    whether any rule has a schedule (a paused site's, or one whose grab time is no number, has no time)."""
    if not upcoming:
        if scheduled:
            return "nothing due: no next grab recorded that can be read (the lines above say why)"
        return "nothing due: no rule has a schedule (every or cron)"
    grabs = "grabs" if len(upcoming) > 1 else "grab"
    return f"nothing due: the next {grabs} at " + ", ".join(f"{when(due)} ({site})" for due, site in upcoming)


def run_service(args: argparse.Namespace) -> int:
    config = Config.from_env()
    _serving_rules(config.rules_dir)
    overrides = {"LOG_LEVEL": "INFO", **settings_from(args.set)}
    store = _check_store(config, overrides)
    with redis_for(config) as url:
        _warn_if_stored_apart(config, store)
        _warn_if_store_moved(config, store)
        settings = _crawl_settings(config, url, overrides)
        scheduler = _grab_scheduler(settings, url)
        stop = threading.Event()
        load, rule_errors = rule_loader(config.rules_dir, worker_logs=True)
        thread = threading.Thread(
            target=scheduler.run,
            args=(load, stop),
            kwargs={
                "leader_seconds": settings.getfloat("SCHEDULE_LEADER_SECONDS"),
                "rule_errors": rule_errors,
            },
            name="scheduler",
            daemon=True,
        )
        with signals_blocked(STOP_SIGNALS):
            thread.start()
        try:
            run_worker(settings)
        finally:
            stop.set()
            thread.join(timeout=10)
    return 0


# --- crawler demo -------------------------------------------------------------------------------------


def run_demo(args: argparse.Namespace) -> int:
    """``crawler demo``: serve the demo sites, crawl them into CRAWLER_DATA_DIR/demo and show what was
    stored; with ``--serve``, serve them until Ctrl-C for the user's own commands. Its data folder is
    held while it runs, and started anew (unless ``--keep``) only when nothing uses it."""
    config = Config.from_env()
    _check_store(config, {})
    directory = config.data_dir / "demo"
    with _demo_lock(directory), _warnings_said():
        if not args.keep:
            _start_anew(directory)
        return _demo(args, config, directory)


def _demo(args: argparse.Namespace, config: Config, directory: Path) -> int:
    """The demo on its data folder ``directory``, held (and started anew) by the caller."""
    from crawler.demo.server import DemoError, DemoServer  # noqa: PLC0415 - loaded for the demo only

    console = Console(stderr=args.serve)

    def note(text: str) -> None:
        """A line of the demo's own report; served (``--serve``), a note on stderr, as other commands say
        theirs, its stdout left to the commands that crawl the sites."""
        if args.serve:
            tell("note", text)
        else:
            console.print(text, markup=False, soft_wrap=True)

    server = DemoServer(port=DEMO_PORT if args.port is None else args.port)
    try:
        server.start()
    except DemoError:
        if args.port is not None:
            raise
        kept = (
            " The pages kept (--keep) from a demo on another port have other URLs now: crawled again, they"
            " are recorded as reposts of those, not stored; without --keep the demo starts anew."
            if args.keep
            else ""
        )
        note(f"Port {DEMO_PORT} is taken: the demo sites use a free port instead.{kept}")
        server = DemoServer(port=0).start()
    with server:
        demo_rules = _demo_rules(directory / "rules", server.origin)
        ruleset = load_rules(demo_rules)
        for error in ruleset.errors:
            console.print(f"[red]rule error[/red] {escape(str(error))}")
        if not ruleset.rules:
            raise InputError(f"no demo rules (demo-*.yaml) in {DEMO_RULES}: the installation is incomplete")
        if args.serve:
            with redis_for(config.replace(data_dir=directory)) as url:
                client = connect(url)
                queue = LeasedQueue(client, config.keys)
                leftovers, waiting = _leftovers(queue, sorted(ruleset.rules))
                # Served again: the user's crawls fetch them, in their jobs.
                queue_in_job(queue, leftovers.pop(server.origin, {}))
                client.close()
            for line in _leftovers_said(server.origin, 0, leftovers, waiting):
                note(line)
            return _serve(server.origin, directory, sorted(ruleset.rules))
        console.print(f"Demo sites on {server.origin}: {', '.join(sorted(ruleset.rules))}", markup=False)
        config = config.replace(data_dir=directory, rules_dir=demo_rules)
        given_folders(str(directory), str(demo_rules))  # what its crawl suggests runs on the demo's folders
        with redis_for(config) as url:
            settings = _crawl_settings(config, url, {})
            client, keys = connect(url), Keys(settings["REDIS_KEY_PREFIX"])
            queue = LeasedQueue(client, keys, lease_seconds=settings.getfloat("LEASE_SECONDS"))
            # Alive before its job is queued: another demo on this Redis takes none of it for leftovers.
            with announced(client, keys.workers, settings) as me:
                leftovers, waiting = _leftovers(queue, sorted(ruleset.rules), me)
                job = _enqueue(settings, client, keys, ruleset.rules.values())
                adopted = leftovers.pop(server.origin, {})
                queue_in_job(queue, adopted, job)
                for line in _leftovers_said(server.origin, len(adopted), leftovers, waiting):
                    console.print(line, markup=False, soft_wrap=True)
                counts, _, _ = _crawl_job(settings, client, keys, job, title="demo crawl")
    _print_summary(job, counts, settings)
    ways = {site: ways_in(rule) for site, rule in ruleset.rules.items()}
    _print_stored(console, store_config(settings), directory, ways)
    return 0


def _leftovers(
    queue: LeasedQueue, sites: list[str], me: str | None = None
) -> tuple[dict[str, dict[str, int]], int]:
    """What an earlier demo left in the queue of the demo's ``sites``, when no worker is alive on the
    Redis besides this process (``me``: its id as a worker, :func:`announced`): the requests taken out, by
    origin (:func:`take_leftovers`); else (a shared REDIS_URL: they may be a running demo's) none taken,
    and how many wait."""
    taken = take_leftovers(
        queue, sites, held=lambda client: workers_alive(client, queue.keys, besides=me) > 0
    )
    if taken is None:
        return {}, sum(queue.pending(site) for site in sites)
    return taken, 0


def _leftovers_said(origin: str, adopted: int, dropped: dict[str, dict[str, int]], waiting: int) -> list[str]:
    """What the demo on ``origin`` says of the requests an earlier demo on its Redis left (stopped before
    its end): those of its own origin (``adopted``) crawled in its job, those of another origin
    ``dropped`` (their server is gone: the demo serves the same pages on ``origin``); or, a worker being
    alive on the Redis, the requests ``waiting`` there, left to it."""
    said = []
    if waiting:
        said.append(
            f"{counted(waiting, 'request')} of the demo sites {'waits' if waiting == 1 else 'wait'} in the"
            " queue, and a worker is alive on this Redis: they may be another demo's, running, and are left"
            " to it (a crawl of the demo's sites helps with them)."
        )
    if adopted:
        said.append(
            f"An earlier demo on this port, stopped before its end, left {counted(adopted, 'request')} in"
            " the queue: crawled in this demo's job."
        )
    for gone, members in sorted(dropped.items()):
        said.append(
            f"An earlier demo on {gone}, stopped before its end, left {counted(len(members), 'request')} in"
            f" the queue: dropped, as nothing serves {gone} now; the demo serves the same pages on {origin}."
        )
    return said


DEMO_LOCK = "demo.lock"


@contextmanager
def _demo_lock(directory: Path) -> Iterator[None]:
    """Hold the demo's data folder ``directory`` (an ``flock`` on its ``demo.lock``, which holds this
    process's pid) while the demo crawls or serves; another ``crawler demo`` holding it is a usage error
    that names it."""
    lock = directory / DEMO_LOCK
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = lock.open("a+", encoding="ascii")
    except OSError as exc:
        advice = folder_advice(exc, directory) or "check the folder"
        raise InputError(f"cannot open {lock}, the demo's lock file: {exc}; {advice}") from exc
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            pid = f"pid {holder}" if holder.isdigit() else "its pid unknown"
            raise InputError(
                f"{directory} is in use by another `crawler demo` ({pid}), which crawls or serves the demo"
                f" sites with the rules in {directory / 'rules'}: stop it (Ctrl-C in its terminal"
                + (f", or `kill {holder}`" if holder.isdigit() else "")
                + "), or run this one on another data folder: `"
                + f"{command_name()} --data-dir OTHER demo`"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)


def _start_anew(directory: Path) -> None:
    """Empty the demo's data folder ``directory`` (but its lock file), unless something uses it: a
    process its embedded Redis (a worker, a crawl), or articles wait in its MongoDB spool; each is a usage
    error that names it and the ways out."""
    elsewhere = (
        f"keep the folder with `{suggest('demo --keep')}`, or run the demo on another data folder:"
        f" `{command_name()} --data-dir OTHER demo`"
    )
    users = live_users(directory)
    if users:
        pids = ", ".join(f"pid {pid}" for pid in users)
        raise InputError(
            f"cannot start the demo's data folder {directory} anew: processes use its embedded Redis"
            f" ({pids}; a `crawler worker` or crawl on it): stop them, or {elsewhere}"
        )
    spooled = waiting_under(directory / "spool")
    if spooled:
        folder = shlex.quote(str(directory))
        raise InputError(
            f"cannot start the demo's data folder {directory} anew: {spooled}, not written into MongoDB"
            f" yet: with MongoDB reachable, write them with"
            f" `MONGO_URI=URI {command_name()} --data-dir {folder} articles stats`; or {elsewhere}"
        )
    for path in directory.iterdir():
        if path.name == DEMO_LOCK:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def ways_in(rule: Rule) -> str:
    """How a rule reads its site: ``index pages``, ``RSS/Atom feed``, ``sitemap``, ``JSON API``,
    ``keyword search``, joined by ``+``."""
    ways = [
        name
        for name, used in (
            ("index pages", rule.start_urls),
            ("RSS/Atom feed", rule.feeds),
            ("sitemap", rule.sitemaps),
            ("JSON API", rule.api),
            ("keyword search", rule.search),
        )
        if used
    ]
    return " + ".join(ways)


def _demo_rules(folder: Path, origin: str) -> Path:
    """The bundled demo rules, copied to ``folder`` with the origin the demo sites are served on."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(DEMO_RULES.glob("demo-*.yaml")):
        text = path.read_text(encoding="utf-8").replace(DEMO_ORIGIN, origin)
        (folder / path.name).write_text(text, encoding="utf-8")
    return folder


def _demo_folders(directory: Path) -> str:
    """The options that point a command at the demo's data folder ``directory`` and the rules in it."""
    return f"--data-dir {shlex.quote(str(directory))} --rules-dir {shlex.quote(str(directory / 'rules'))}"


def _serve(origin: str, directory: Path, sites: list[str]) -> int:
    """Serve the demo sites until Ctrl-C, after saying how to crawl them."""
    folders = _demo_folders(directory)
    print(
        f"Serving the demo sites on {origin} ({', '.join(sites)}) until Ctrl-C. Their rules are in"
        f" {directory / 'rules'};"
        f" crawl them from another terminal:\n"
        f"  {command_name()} {folders} temp {sites[0]}\n"
        f"  {command_name()} {folders} run\n"
        f"  {command_name()} --data-dir {shlex.quote(str(directory))} articles stats",
        flush=True,
    )
    threading.Event().wait()
    return 0


# --- shared -------------------------------------------------------------------------------------------


def _check_store(config: Config, overrides: dict[str, Any]) -> StoreConfig:
    """The store settings a crawl would run with (``MONGO_URI``, ``DEDUP_WINDOW_DAYS``, ...), and its other
    numeric ones (``LEASE_SECONDS``, ``STORE_MAX_ATTEMPTS``, ``TEXT_PROCESSES``, ...), checked before Redis
    starts or anything is queued: a wrong value is a one-line usage error (exit 2), not a failure of the
    crawl as it opens."""
    settings = config.settings(overrides)
    check_worker_settings(settings)
    return store_config(settings)


def _warn_if_stored_apart(config: Config, store: StoreConfig) -> None:
    """One warning when a worker takes its work from a Redis other machines may share (``REDIS_URL``)
    but stores its articles in this machine's own SQLite files (no ``MONGO_URI``): the workers of other
    machines store theirs elsewhere (``crawler status`` shows it too). Given once Redis answered: a
    ``REDIS_URL`` refused is the only thing a command says."""
    if config.redis_url and store.local:
        logger.warning(
            "REDIS_URL is set (%s), MONGO_URI is not: this worker stores its articles in %s, its own SQLite"
            " files, and workers on other machines (or other data folders) in theirs; set MONGO_URI so they"
            " share one store (docs/operations.md)",
            redacted(config.redis_url),
            store.where(),
        )


def _warn_if_store_moved(config: Config, store: StoreConfig) -> None:
    """One warning when a crawl stores in MongoDB with the embedded Redis of a data folder that holds
    SQLite article files: the pages crawled into those were seen by that Redis and are not fetched again,
    so MongoDB never gets them."""
    sqlite = config.data_dir / "articles"
    if store.mongo is None or config.redis_url or not any(sqlite.glob("*.sqlite")):
        return
    logger.warning(
        "MONGO_URI is set, and the data folder %s holds SQLite article files (%s) from crawls without it: the"
        " pages those crawls fetched are seen already by its Redis and are not fetched again into MongoDB;"
        " to fill MongoDB from the start, give another data folder (`%s`); moving %s away ends this warning",
        config.data_dir,
        sqlite,
        f"{command_name()} --data-dir DIR ...",
        sqlite,
    )


def _crawl_settings(config: Config, redis_url: str, overrides: dict[str, Any]) -> Settings:
    """The crawl's settings: the configuration, the Redis in use, WARNING logs, then ``overrides``."""
    # Scrapy logs through its own root handler, at LOG_LEVEL: the command line's handler steps aside.
    for handler in list(logging.root.handlers):
        logging.root.removeHandler(handler)
    settings = config.replace(redis_url=redis_url).settings({"LOG_LEVEL": "WARNING", **overrides})
    # Checked here, where a wrong value is a clear error, not in the crawl (a traceback in the reactor).
    global_proxies(settings.get("CRAWLER_PROXIES"), settings.get("CRAWLER_PROXY_FILE"))
    return settings


def _enqueue(
    settings: Any,
    server: redis.Redis,
    keys: Keys,
    rules: Any,
    *,
    article_urls: list[str] | None = None,
    stored: Iterable[tuple[str, str]] | None = None,
    again: bool = False,
    job: str | None = None,
    temp_of: str | None = None,
) -> str:
    """Queue ``rules`` (or ``article_urls`` and ``stored`` pages of the one rule) as a new temp job (one
    that fetches seen URLs again: ``again``), or as ``job`` again, the last temp crawl of site ``temp_of``
    when given (:func:`crawler.requests.enqueue_job`); its id."""
    return enqueue_job(
        server,
        keys,
        list(rules),
        article_urls=article_urls or (),
        stored=stored,
        lease_seconds=settings.getfloat("LEASE_SECONDS"),
        job=job,
        kind="temp",
        boost=settings.getint("SCHEDULE_TEMP_BOOST"),
        again=again,
        temp_of=temp_of,
    )


class _ProgressLine(ProgressColumn):
    """A crawl's progress on one line of the ``console``'s width, however narrow: its title, a bar, the
    pages fetched of those known, stored, skipped and errors (a task with the field ``queueing``: the pages
    queued so far instead), and the time elapsed (:func:`crawler.cli.terminal.fit_progress` says what goes
    first when the line is too long)."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self._console = console

    def render(self, task: Task) -> RenderableType:
        done = int(task.completed)
        if task.fields.get("queueing"):
            pages, tallies = f"queueing {done} {task.fields['pages']}…", []
        else:
            known = "" if task.total is None else f"/{int(task.total)}"
            pages = f"{done}{known} {task.fields['pages']}"
            tallies = [(name, int(task.fields[name])) for name in ("stored", "skipped", "errors")]
        elapsed = TimeElapsedColumn().render(task)
        title, bar_width, counts, shown_elapsed = fit_progress(
            self._console.width, task.description, pages, tallies, elapsed.plain
        )
        parts: list[RenderableType] = [Text(title, style="bold")] if title else []
        if bar_width:
            parts.append(BarColumn(bar_width=bar_width).render(task))
        parts.append(Text(counts))
        if shown_elapsed:
            parts.append(elapsed)
        line = Table.grid(*(Column(no_wrap=True) for _ in parts), padding=(0, 1))
        line.add_row(*parts)
        return line


@contextmanager
def _queueing_shown(title: str, pages: Iterable[tuple[str, str]]) -> Iterator[Iterator[tuple[str, str]]]:
    """``pages`` (stored pages to read again) as they are taken to be queued, counted on a progress line
    titled ``title``, "queueing N pages…", on a terminal while the block lasts; the line is gone after it, and
    the crawl's own takes its place. 20,000 stored articles took 4-5 s to read from a SQLite store and queue
    on the embedded Redis of a 2-core machine (more with MongoDB or Redis across a network): the crawl's
    line starts after them."""
    with contextlib.ExitStack() as stack:
        with signals_blocked(STOP_SIGNALS):  # the line's refresh thread
            console = Console(stderr=True)
            # Shown on a terminal alone: rich ends a transient line with a blank one on a pipe.
            progress = stack.enter_context(
                Progress(
                    _ProgressLine(console), console=console, transient=True, disable=not console.is_terminal
                )
            )
        line = progress.add_task(title, total=None, pages="pages", queueing=True)
        progress.refresh()

        def each_shown() -> Iterator[tuple[str, str]]:
            for number, page in enumerate(pages, 1):
                progress.update(line, completed=number, pages="page" if number == 1 else "pages")
                yield page

        yield each_shown()


@dataclass(frozen=True, slots=True)
class Helped:
    """What a temp crawl's worker did of other jobs' requests, which it takes from the shared queue to
    help (its warnings of them are INFO records, the command's lines are its own job's): how many it
    ``taken``, how many of them it dead-lettered, of which ``sites``."""

    taken: int = 0
    dead: int = 0
    sites: tuple[str, ...] = ()

    @classmethod
    def of(cls, stats: dict[str, Any]) -> Helped:
        """From the worker's stats (the ``others/`` counters of the scheduler)."""
        sites = sorted(name.removeprefix("others/site/") for name in stats if name.startswith("others/site/"))
        return cls(int(stats.get("others/taken", 0)), int(stats.get("others/dead", 0)), tuple(sites))

    def said(self) -> str:
        sites = (
            f" ({'site' if len(self.sites) == 1 else 'sites'} {', '.join(self.sites)})" if self.sites else ""
        )
        dead = (
            f", {self.dead} of them dead-lettered: `{suggest('dead list')}` shows them" if self.dead else ""
        )
        handled = counted(self.taken, "request")
        return f"its worker also handled {handled} of other jobs from the shared queue{sites}{dead}"


def _crawl_job(
    settings: Any,
    server: redis.Redis,
    keys: Keys,
    job: str,
    *,
    title: str,
    site: str | None = None,
    given: bool = False,
    again: bool = False,
) -> tuple[JobCounts, bool, Helped]:
    """Crawl until ``job`` has nothing pending, with a progress bar titled ``title``; the job's counts, and
    whether the crawl stopped before its end because ``site``, whose requests the job holds, was paused
    (``crawler sites pause``): said once, then stopped once no lease of the job is held (the pages being
    fetched are in), its other requests left held in the queue; and what its worker did of other jobs'
    requests (none known when it stopped so); ``given``: the job crawls pages given, not the whole site
    (the workers go on with it once the site is resumed); ``again``: a crawl of ``crawler temp SITE
    --again``, which a temp crawl with --again goes on with."""
    started = time.monotonic()
    # A job's hash keeps when it was created (a job queued by an older version may not): its loss shows.
    dated = server.hexists(keys.job(job), "created")
    with contextlib.ExitStack() as stack:
        with signals_blocked(STOP_SIGNALS):  # the bar's refresh thread
            console = Console(stderr=True)
            progress = stack.enter_context(Progress(_ProgressLine(console), console=console, transient=False))
        bar = progress.add_task(title, total=None, pages="pages", stored=0, skipped=0, errors=0)
        patience: float = settings.getfloat("SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS")
        answered = [time.monotonic()]
        refused: list[_Refusal | None] = [None]
        # Whether the site's pause was said, and whether the crawl stopped for it.
        paused = [False, False]
        # Since when the job has not moved with requests pending, or Redis has held none of the site's
        # (_requests_lost), and what is said of it; the job's counts that moving changes, as last read.
        lost_since: list[float | None] = [None]
        moved: list[tuple[int, ...]] = [()]
        lost: list[str | None] = [None]
        queue = LeasedQueue(server, keys)
        waited = _Waited()

        def tick(outage: RedisOutage | None = None) -> bool:
            """Show the job's counters; False once Redis has not answered, or has refused writes (a full
            disk: it answers reads, yet the worker can take no request), or refused its user a command of
            the worker (``outage``, the worker's: SET passes, SADD is refused), for ``patience`` seconds; once
            ``site`` is paused and no lease of the job is held; and once Redis holds none of its pending
            requests, looked for once the job has not moved (or the site has held none) for
            LOST_REQUESTS_SECONDS (their counts written off: _requests_lost)."""
            try:
                counts = JobCounts.read(server, keys, job)
                refused[0] = _refusal(settings, keys, server, outage)
                held = site is not None and bool(server.hexists(keys.paused, site))
                fetching = bool(held and held_leases(server, keys, job, redis_clock(server)))
                now = (counts.pending, counts.fetched, counts.skipped, counts.errors, counts.refused)
                still, moved[0] = now == moved[0], now
                if site is None or not counts.pending or not (still or queue.lost(site) is not None):
                    lost_since[0] = None
                elif time.monotonic() - (lost_since[0] or time.monotonic()) >= LOST_REQUESTS_SECONDS:
                    lost[0] = _requests_lost(server, keys, job, site)
                    if lost[0] is not None:
                        return False
                    lost_since[0] = time.monotonic()  # held: looked for again after as long
                else:
                    lost_since[0] = lost_since[0] or time.monotonic()
                if site is not None and counts.pending:
                    _say_backoff(server, keys, site, job, waited, given=given, again=again)
            except redis.RedisError:
                # Redis away for a moment (the worker says so in the log): the bar waits, within patience.
                refused[0] = None
                return time.monotonic() - answered[0] < patience
            if refused[0] is None:
                answered[0] = time.monotonic()
            total = counts.tried
            progress.update(
                bar,
                completed=counts.fetched,
                total=total,
                pages="page" if total == 1 else "pages",
                stored=counts.stored,
                skipped=counts.skipped,
                errors=counts.errors,
            )
            if held and site is not None and not paused[0]:
                _say_paused(site, job, given=given, again=again)
            paused[0] = held
            if held and counts.pending and not fetching:
                paused[1] = True
                return False
            return time.monotonic() - answered[0] < patience

        # Every rule: on a running service this worker takes any request of the shared queue, and helps.
        helped = Helped()
        try:
            helped = Helped.of(run_worker(settings, job=job, on_tick=tick))
        except KeyboardInterrupt as stopped:
            if lost[0] is not None and not isinstance(stopped, Terminated):
                raise RedisUnavailableError(lost[0]) from None
            if isinstance(stopped, Terminated) or not paused[1]:
                if time.monotonic() - answered[0] < patience:
                    raise
                raise _redis_gone(
                    job, patience, refused[0], emptied=dated and _job_gone(server, keys, job)
                ) from None
        tick()
    if dated and not server.hexists(keys.job(job), "created"):
        # Its counters and requests are gone with it: its pending count read 0, which ended the crawl.
        raise RedisUnavailableError(
            f"Redis no longer holds job {job} (it was emptied while the crawl ran: FLUSHALL, REPLICAOF of an"
            " empty primary, or restarted without its data): the job's counts, the requests it had not"
            " fetched yet and the URLs it had seen are lost; the articles stored stay in the store"
            f" (`{suggest('articles list')}`); run the temp crawl again to fetch the rest (an article stored"
            " already is updated, not stored twice)"
        )
    counts = JobCounts.read(server, keys, job)
    logger.info("job %s %s in %.1f s", job, "stopped" if paused[1] else "done", time.monotonic() - started)
    return counts, paused[1], helped


def _requests_lost(server: redis.Redis, keys: Keys, job: str, site: str) -> str | None:
    """The error of a temp crawl of ``job`` whose pending requests of ``site`` Redis no longer holds,
    their counts written off (:meth:`LeasedQueue.lost`: the job is not resumed by the next temp crawl, which
    would wait for them again); None when Redis holds one of them after all, or the job counts none
    pending by then (its worker, a process of its own, ended the last of them since the tick read its
    count: the site then holds none, and none is lost)."""
    queue = LeasedQueue(server, keys)
    site_lost = queue.lost(site, write_off=True, jobs=[job])
    pending = site_lost[1] if site_lost is not None else queue.job_lost(site, job, write_off=True)
    if not pending:
        return None
    overwritten = [
        wrong
        for wrong in queue.wrong_keys([site]).get(site, [])
        if wrong.key.startswith(f"{keys.prefix}:queue:")
    ]
    evicting = evicts(server)
    if overwritten:
        wrong = overwritten[0]
        how = (
            f"Redis key {wrong.key} is a {wrong.kind} now, not a {wrong.expected} (someone SET it while the"
            " crawl ran): the requests queued in it were lost with its old value; first redis-cli DEL"
            f" {wrong.key}, then"
        )
    elif evicting:
        how = f"Redis dropped them to free memory: {evicting.removeprefix('Redis may evict keys: ')}; then"
    else:
        how = (
            "its keys were deleted (DEL, UNLINK) while the crawl ran, or Redis restarted from an older"
            " snapshot;"
        )
    return (
        f"Redis no longer holds the {counted(pending, 'request')} job {job} had not fetched yet: none is in"
        f" the queue of site {site} ({keys.queue_of(site)}), leased or waiting; {how}"
        f" `{suggest(f'temp {site} --again')}` fetches them (their URLs were seen: a plain temp crawl skips"
        f" them; the articles stored are updated, not stored twice, and stay in the store,"
        f" `{suggest('articles list')}`)"
    )


def _job_gone(server: redis.Redis, keys: Keys, job: str) -> bool:
    """Whether Redis answers that it no longer holds ``job`` (a job's hash keeps when it was created);
    False when it does not answer."""
    try:
        return not server.hexists(keys.job(job), "created")
    except redis.RedisError:
        return False


@dataclass(frozen=True, slots=True)
class _Refusal:
    """What a temp crawl's Redis refuses, as ``said``, and what ends it, as ``until``: "Redis takes
    writes"."""

    said: str
    until: str


def _refusal(settings: Any, keys: Keys, server: redis.Redis, outage: RedisOutage | None) -> _Refusal | None:
    """What Redis refuses a temp crawl now: writes (``writes_refused``), or a command to its user that the
    worker was refused (``outage``, the worker's: a user who may SET but not run SADD passes the write
    check, while its worker can take no request), said with the user, the command and the grant; None when
    it refuses neither."""
    refused = writes_refused(server)
    if refused is not None:
        return _Refusal(refused, "Redis takes writes")
    user = outage.refused_user() if outage is not None else None
    if user is None:
        return None
    said = denial(user[0], settings.get("REDIS_URL"), keys.prefix, user[1])
    return _Refusal(f"Redis refuses a command of the worker: {said}", "the user may run it")


def _redis_gone(
    job: str, patience: float, refused: _Refusal | None, *, emptied: bool
) -> RedisUnavailableError:
    """The error of a temp crawl of ``job`` stopped as Redis has not answered, or refused writes or a
    command (the refusal last read), for ``patience`` seconds; ``emptied``: Redis answers now, and holds
    the job no more."""
    until = refused.until if refused is not None else "Redis takes writes"
    if refused is not None:
        stopped = (
            f"{refused.said}; the temp crawl stops after {patience:g} s of it"
            " (SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS)"
        )
    else:
        stopped = (
            f"Redis has not answered for {patience:g} s (SCHEDULE_TEMP_REDIS_PATIENCE_SECONDS): the temp"
            " crawl stops"
        )
    if emptied:
        cause = (
            "the replica's sync replaced its data with its primary's"
            if refused is not None and "replica" in refused.said
            else "it was emptied meanwhile: FLUSHALL, or restarted without its data"
        )
        return RedisUnavailableError(
            f"{stopped}, and Redis no longer holds job {job} ({cause}): the job's counts, the requests it had"
            " not fetched yet and the URLs it had seen are lost; the articles stored stay in the store"
            f" (`{suggest('articles list')}`); once {until}, run the temp crawl again to fetch the rest (an"
            " article stored already is updated, not stored twice)"
        )
    if refused is not None:
        return RedisUnavailableError(f"{stopped}, job {job} left in the queue for when {until} again")
    return RedisUnavailableError(
        f"{stopped}, job {job} left in the queue for when Redis is back (the errors above say why)"
    )


@dataclass(slots=True)
class _Waited:
    """The waits of a temp crawl's site: the cause last said, and the end of its last wait (said or not)."""

    reason: str | None = None
    until: float | None = None


def _say_backoff(
    server: redis.Redis, keys: Keys, site: str, job: str, waited: _Waited, *, given: bool, again: bool
) -> None:
    """A note when ``site`` backs off (a 429, a 503 with Retry-After, its proxies benched: every worker
    waits) for a cause other than the one ``waited`` said last, or for it again once it ended
    WAIT_LASTS_SECONDS before: until when, and what Ctrl-C does meanwhile, as the progress line stays
    still."""
    polite = LeasedQueue(server, keys).politeness([site])
    until = polite[0].backoff_until if polite else None
    if until is None or until == waited.until:
        return
    seconds, micro = server.time()
    now = seconds + micro / 1e6
    lasting = waited.until is not None and now - waited.until < WAIT_LASTS_SECONDS
    waited.until = until
    if lasting and polite[0].backoff_reason == waited.reason:
        return
    waited.reason = polite[0].backoff_reason
    then = _who_goes_on(None if given else site, job, one=False, again=again)
    # The site asks with an HTTP answer (backoff.py); a ban or benched proxies are the workers' own call.
    asked = "asked every worker to wait" if (waited.reason or "").startswith("HTTP ") else "is held back"
    tell(
        "note",
        f"{site} {asked} ({waited.reason}): its requests wait until"
        f" {utc_stamp(datetime.fromtimestamp(until, UTC))} ({math.ceil(until - now)} s from now; said once"
        f" while it lasts); Ctrl-C stops this crawl and keeps its job's requests in the queue: {then}",
    )


def _say_paused(site: str, job: str, *, given: bool, again: bool = False) -> None:
    """The note of a temp crawl of ``job`` (of pages ``given``, or the whole site) whose ``site`` was paused
    while it ran: what takes its held requests once the site is resumed (:func:`_who_goes_on`)."""
    then = _who_goes_on(None if given else site, job, one=False, again=again)
    tell(
        "note",
        f"{site} was paused (`{suggest(f'sites pause {site}')}`): its requests are held; this temp crawl"
        f" stops once the pages it is fetching are in (Ctrl-C stops it now), the other requests of job"
        f" {job} left held in the queue; after `{suggest(f'sites resume {site}')}`, {then}",
    )


def _discover_summary(settings: Any, url: str, rule: Rule, job: str, counts: JobCounts) -> str:
    """What a discover crawl found: relevant pages of those read (stored, updated, or recorded as reposts
    of stored ones: the harvest of docs/discover.md, as `crawler status` counts it), its budget, the
    frontier left; then, when it read its seeds alone and every link on them was read before, a line
    saying so."""
    assert rule.discover is not None
    server = connect(url)
    keys = Keys(settings["REDIS_KEY_PREFIX"])
    job_hash = hash_of(server, keys.job(job))
    budget = job_hash.get("budget", "?")
    left = Frontier(server, keys, rule.site).size()
    relevant = counts.stored + counts.updated + counts.reposts
    harvest = f" (harvest {relevant / counts.fetched:.2f})" if counts.fetched else ""
    updated = f" {counts.updated} updated (stored before)," if counts.updated else ""
    summary = (
        f"discover: {counted(relevant, 'relevant page')} of {counts.fetched} read{harvest}:"
        f" {counts.stored} stored,{updated} {counts.reposts} recorded as reposts; budget {budget};"
        f" {counted(left, 'link waits', 'links wait')} in the frontier for its next crawl"
        " (temp or grab)"
    )
    seeds = len(rule.discover.seeds)
    seen = int(job_hash.get("links_seen", "0"))
    # Seeds past the budget are never read (a warning says so): the links to them were not read before.
    every_seed_read = seeds <= rule.discover.budget
    if (
        counts.fetched
        and seen
        and left == 0
        and every_seed_read
        and int(job_hash.get("issued", "0")) <= seeds
    ):
        links = "the link found on them" if seen == 1 else f"the {seen} links found on them"
        summary += (
            f"\ndiscover: nothing new to read: the seeds and {links} were read before; the frontier is"
            f" empty (the seeds are read again at every crawl, for new links; more seeds in {rule.path}"
            " lead further)"
        )
    return summary


def _skip_causes(counts: JobCounts) -> list[tuple[str, int]]:
    """Why the requests ``counts`` skipped were skipped, and how many for each cause (those a worker
    counted no cause for, as one from before causes were counted, too)."""
    uncounted = counts.skipped - sum(counts.skip_causes.values())
    return [*counts.skip_causes.items(), *([("cause not counted", uncounted)] if uncounted > 0 else [])]


def _counted_causes(causes: list[tuple[str, int]]) -> str:
    """The causes with their counts; the seen filter's counts the links met: a URL once for each listing
    (index page, feed, sitemap) that gave it, and for each link that redirected to it."""
    return ", ".join(
        f"{'links ' if cause == SEEN_ALREADY else ''}{cause}: {count}" for cause, count in causes
    )


def _print_summary(job: str, counts: JobCounts, settings: Settings, rule: Rule | None = None) -> None:
    """The counts of ``job``, a crawl of ``rule`` (None: of several rules), and what to do about them (of
    ``rule``'s published values that are no date, too)."""
    kinds = ", ".join(f"{kind}: {count}" for kind, count in counts.error_kinds.items())
    updated = f", updated {counts.updated} stored before" if counts.updated else ""
    print(
        f"fetched {counted(counts.fetched, 'page')}, stored {counted(counts.stored, 'article')}{updated},"
        f" skipped {counts.skipped}{f' ({_counted_causes(_skip_causes(counts))})' if counts.skipped else ''},"
        f" errors {counts.errors}" + (f" ({kinds})" if kinds and counts.errors else "")
    )
    if counts.spooled:
        waiting = store_config(settings).spooled()
        print(
            f"spooled {counts.spooled} of them to local disk, MongoDB being unreachable (MONGO_URI): "
            + (
                f"{waiting}, written into MongoDB when it is back: by the next crawl on this data folder, or"
                f" `{suggest('articles stats')}` (docs/storage.md)"
                if waiting
                else "they have been written into MongoDB since"
            )
        )
    if counts.reposts:
        print(
            f"recorded {counted(counts.reposts, 'repost')} (the same article under another URL) against"
            f" {'its original' if counts.reposts == 1 else 'their originals'}, not stored twice"
        )
    if counts.refused:
        how = (
            rule.private_refusals(
                "allows them if the site is on this machine or an intranet", "the warnings above"
            )
            if rule is not None
            else "a rule for a site on this machine or an intranet allows them with"
            " `allow_private_addresses: true`"
        )
        print(
            f"refused {counted(counts.refused, 'request')} to private addresses (loopback, private,"
            f" link-local): {how}"
        )
    if rule is not None and counts.unparsed_published:
        pages = counted(counts.unparsed_published, "page")
        print(
            rule.unparsed_published(
                f"the published value of {pages} of site {rule.site}", counts.unparsed_published
            )
        )
    if counts.errors:
        print(f"the errors are dead letters, each with its reason: `{suggest(f'dead list --job {job}')}`")


def _print_stored(
    console: Console, store: StoreConfig, directory: Path, ways: dict[str, str], sample: int = 3
) -> None:
    """Per site of ``ways`` (how its rule reads it), what the crawl's ``store`` holds: articles stored,
    where their bodies came from, and the newest few (a table on a terminal, plain lines when piped); a
    store that cannot be read (MongoDB unreachable) is said to be, with what waits in its spool."""
    place = str(directory) if store.local else store.where()
    folder = shlex.quote(str(directory))
    see = (
        f"`{command_name()} --data-dir {folder} articles stats` and"
        f" `{command_name()} --data-dir {folder} articles list --reposts`; the crawl's"
        f" counters per site with `{command_name()} {_demo_folders(directory)} status` (the demo's rules are"
        " there)"
    )
    try:
        with store.open() as opened:
            articles = [article for site in sorted(ways) for article in opened.iter_articles(site=site)]
            reposts = sum(int(row["reposts"]) for row in opened.stats() if row["site"] in ways)
    except StoreError as error:
        console.print(
            f"the articles stored cannot be shown: {error}. See them once it is back with {see}",
            soft_wrap=True,
            markup=False,
        )
        return
    table = Table(title=escape(f"Stored in {place}"))
    for column in ("site", "read from", "articles", "body by rule", "body by qRead", "newest published"):
        table.add_column(column)
    for site in sorted({str(article["site"]) for article in articles}):
        mine = [article for article in articles if article["site"] == site]
        from_qread = sum(1 for a in mine if (a.get("extraction") or {}).get("body_from") == "qread")
        newest = [
            f"{a.get('published') or '?'}  {cut(str(a.get('title') or ''), 60)}"
            for a in sorted(mine, key=newest_published, reverse=True)[:sample]
        ]
        if console.is_terminal:
            table.add_row(
                escape(site),
                escape(ways.get(site, "?")),
                str(len(mine)),
                str(len(mine) - from_qread),
                str(from_qread),
                escape("\n".join(newest)),
            )
        else:
            console.print(
                f"{site} (read from its {ways.get(site, '?')}): {len(mine)} articles, body by rule"
                f" {len(mine) - from_qread}, by qRead {from_qread}; newest published:",
                soft_wrap=True,
                markup=False,
            )
            for line in newest:
                console.print(f"  {line}", soft_wrap=True, markup=False)
    if console.is_terminal:
        console.print(table)
    console.print(
        f"{len(articles)} articles stored in {place}; {reposts} reposts (the same article under another URL)"
        f" recorded against their originals instead of stored twice. See them with {see}",
        soft_wrap=True,
        markup=False,
    )
