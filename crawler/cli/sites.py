"""``crawler sites pause|resume SITE``: hold one site's crawling, on every machine, without editing its rule
(the pause lives in Redis: :meth:`crawler.redisio.queue.LeasedQueue.pause`); ``crawler sites forget SITE
[--articles]``: drop what Redis holds of its crawling (its grab state, its requests) and, with
``--articles``, its stored articles. Its seen URLs stay: the Bloom filter of seen URLs is shared by every
site and cannot remove one (:mod:`crawler.redisio.bloom`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from crawler.cli.crawl import redis_for
from crawler.cli.options import rules_folder
from crawler.cli.terminal import tell
from crawler.commandline import counted, suggest
from crawler.config import Config
from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import RedisUnavailableError, connect, decoded, hash_of, lost_while
from crawler.redisio.queue import LeasedQueue, WrongKeyError
from crawler.rules import RULE_SUFFIX, Rule, RuleErrors, load_rule, rule_file
from crawler.schedule.grabs import GrabScheduler, when
from crawler.settings import ROBOTS_MAX_AGE_SECONDS
from crawler.status import site_in_redis, workers_alive
from crawler.store import open_store

__all__ = ["EXIT_DECLINED", "no_rule_here", "run_forget", "run_pause", "run_resume"]

# `sites forget` answered no at its question: nothing was forgotten.
EXIT_DECLINED = 1


@contextmanager
def _queue(config: Config) -> Iterator[LeasedQueue]:
    with redis_for(config) as url:
        server = connect(url)
        try:
            yield LeasedQueue(server, config.keys)
        finally:
            server.close()


def no_rule_here(folder: Path, site: str) -> str:
    """That ``folder`` has no rule file of ``site``, whose crawling Redis holds."""
    return (
        f"this rules folder has no rule file of {site} ({folder / f'{site}{RULE_SUFFIX}'}): Redis holds its"
        " crawling, from the rules folder of another machine"
    )


def _ruled_or_known(folder: Path, queue: LeasedQueue, keys: Keys, site: str) -> None:
    """:class:`InputError` (:func:`~crawler.rules.rule_file`'s) when ``site`` has no rule file in ``folder``
    and Redis holds nothing of it; a note when Redis alone knows it."""
    try:
        rule_file(folder, site)
    except InputError:
        if not site_in_redis(queue.server, keys, site):
            raise
        tell("note", no_rule_here(folder, site))


def run_pause(args: argparse.Namespace) -> int:
    config = Config.from_env()
    folder = rules_folder(config.rules_dir)
    with _queue(config) as queue:
        _ruled_or_known(folder, queue, config.keys, args.site)
        newly = queue.pause(args.site, shared_now())
        since = queue.paused()[args.site]
        held = queue.queued(args.site)
    resume = f"`{suggest(f'sites resume {args.site}')}`"
    if not newly:
        print(f"{args.site} is paused already, since {when(since)}; {resume} resumes it")
        return 0
    print(
        f"paused {args.site}: no regular grab of it is queued, and workers take none of its queued requests"
        f" ({held:,} now; those being fetched end as usual), on every machine, until {resume}"
    )
    return 0


def run_resume(args: argparse.Namespace) -> int:
    config = Config.from_env()
    folder = rules_folder(config.rules_dir)
    with _queue(config) as queue:
        _ruled_or_known(folder, queue, config.keys, args.site)
        if args.site not in queue.paused():
            print(f"{args.site} is not paused: nothing to resume")
            return 0
        queue.resume(args.site)
        held = queue.queued(args.site)
        state = hash_of(queue.server, config.keys.grab(args.site))
        due = state.get("next")
        # The site's last grab or temp crawl, whose requests the pause held, ends before a due grab comes.
        waits = GrabScheduler(queue.server, config.keys).held_by(args.site, state)
    unscheduled = _unscheduled(folder, args.site)
    if unscheduled is not None:
        grab = unscheduled
    elif due is None:
        grab = _first_grab(folder, args.site)
    elif float(due) <= shared_now() and waits is not None:
        grab = f"its regular grab, due since {when(float(due))}, is queued once {waits.ended()}"
    elif float(due) <= shared_now():
        grab = f"its regular grab, due since {when(float(due))}, is queued at the scheduler's next tick"
    else:
        grab = f"its next regular grab is due at {when(float(due))}"
    print(f"resumed {args.site}: workers take its queued requests again ({held:,} now); {grab}")
    return 0


def run_forget(args: argparse.Namespace) -> int:
    config = Config.from_env()
    folder = rules_folder(config.rules_dir)
    site = args.site
    articles = " and its stored articles" if args.articles else ""
    with _queue(config) as queue:
        if not site_in_redis(queue.server, config.keys, site):
            rule_file(folder, site)
        queues = config.keys.queue_of("")
        wrong = [key for key in queue.wrong_keys([site]).get(site, []) if key.key.startswith(queues)]
        if wrong:
            raise WrongKeyError(
                f"cannot take {site}'s requests out of the queue: {wrong[0].problem()}, then forget it"
            )
        if not args.yes:
            if not sys.stdin.isatty():
                given = f"sites forget {site}{' --articles' if args.articles else ''} --yes"
                raise InputError(
                    f"`sites forget` asks before it forgets {site}'s grab state and queued"
                    f" requests{articles}, and its input is no terminal to answer on: give --yes to forget"
                    f" without asking, as in `{suggest(given)}`"
                )
            if not _confirmed(site, articles):
                print(f"nothing of {site} was forgotten")
                return EXIT_DECLINED
        try:
            taken = queue.take_sites(queue.slots(site), held=lambda pipe: _fetching(pipe, config.keys, site))
            if taken is None:
                raise InputError(
                    f"a live worker is fetching requests of {site}: `{suggest(f'sites pause {site}')}` first,"
                    f" then forget it once they end (`{suggest(f'status --site {site}')}`: downloading 0)"
                )
            dropped = _drop_state(queue.server, config.keys, site)
            if queue.forget_politeness(site, ROBOTS_MAX_AGE_SECONDS):
                dropped.append("politeness")
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise RedisUnavailableError(
                f"{lost_while(f'{site} was forgotten', exc)}: the requests not yet taken out of"
                f" its queue stay there or wait set aside in {config.keys.taking(site)} (no worker takes"
                f" those; they stay counted pending), and its grab state may be left; once Redis answers"
                f" again, `{suggest(f'sites forget {site} --yes')}` takes them out and drops it"
            ) from exc
    requests = sum(len(members) for members in taken.values())
    state = f"its grab state dropped ({', '.join(dropped)})" if dropped else "it had no grab state to drop"
    path = folder / f"{site}{RULE_SUFFIX}"
    rule = _rule_in(path)
    print(
        f"forgot {site}: {counted(requests, 'request')} taken out of the queue, {state};"
        f" {_next_grab(path, rule, site)}"
    )
    if args.articles:
        with open_store(config.values()) as store:
            deleted = store.delete_site(site)
        print(f"deleted {counted(deleted, 'article')} of {site} from {store!r}")
    print(f"its seen URLs stay seen: {_seen_stay(rule, site)}")
    return 0


def _rule_in(path: Path) -> Rule | RuleErrors | None:
    """The rule of ``path``; its errors when it does not load; None when there is no such file."""
    if not path.is_file():
        return None
    try:
        return load_rule(path)
    except RuleErrors as errors:
        return errors


def _seen_stay(rule: Rule | RuleErrors | None, site: str) -> str:
    """What the forgotten ``site``'s crawls read of the pages it saw, the Bloom filter keeping them seen, and
    the command that fetches them again: a discover ``rule`` refuses ``--again`` and ``--url``, and a site
    with no rule file (None) has none to run until its rule is back."""
    shared = "the Bloom filter of seen URLs is shared by every site and cannot remove one"
    if isinstance(rule, Rule) and rule.discover is not None:
        return (
            f"{shared}, so a crawl of this discover site reads its seeds and only the links it never saw;"
            f" a page read before is read again only as a seed (`discover.seeds` in {rule.path})"
        )
    if rule is None:
        return (
            f"{shared}, so a rule of {site} added back to this rules folder skips the article pages it"
            f" fetched before; `{suggest(f'temp {site} --again')}` then fetches them again"
        )
    return (
        f"{shared}, so its grabs fetch only articles they never saw; `{suggest(f'temp {site} --again')}`"
        f" fetches every article its index pages link to again, `{suggest(f'temp {site} --url URL')}` one"
        " page"
    )


def _confirmed(site: str, articles: str) -> bool:
    """The answer, on the terminal, to whether to forget ``site``."""
    # Written to stdout here: input() writes its prompt to stderr when stdin and stdout are terminals.
    sys.stdout.write(
        f"forget {site}'s grab state and queued requests{articles}? Its seen URLs stay seen. [y/N] "
    )
    sys.stdout.flush()
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


def _fetching(server: redis.Redis, keys: Keys, site: str) -> bool:
    """Whether a live worker may hold a lease of ``site``: then nothing of it is taken. The queue keeps the
    site of a retry waiting out its delay beside those of the leases: such a request is no lease."""
    owners = server.hgetall(keys.lease_sites).items()
    # The site's queue, and its discover crawl's host slots (<site>@<host>).
    members = [decoded(member) for member, owner in owners if decoded(owner).partition("@")[0] == site]
    leased = bool(members) and any(score is not None for score in server.zmscore(keys.leases, members))
    return leased and workers_alive(server, keys) > 0


def _drop_state(server: redis.Redis, keys: Keys, site: str) -> list[str]:
    """Delete ``site``'s grab state and last ban; what it held of them, in words (none: it held nothing)."""
    kinds = {
        keys.grab(site): "last and next grab",
        keys.validators(site): "validators",
        keys.validators_at(site): "validators",
        keys.sitemaps(site): "sitemap dates",
        keys.sitemaps_at(site): "sitemap dates",
        keys.temp(site): "temp crawl",
    }
    for name in server.scan_iter(match=f"{keys.prefix}:discover:{site}:*"):
        kinds[decoded(name)] = "discover frontier"
    pipe = server.pipeline(transaction=True)
    for name in kinds:
        pipe.delete(name)
    pipe.hdel(keys.bans, site)
    *deleted, banned = pipe.execute()
    dropped = list(dict.fromkeys(kind for kind, count in zip(kinds.values(), deleted, strict=True) if count))
    return [*dropped, "ban"] if banned else dropped


def _unscheduled(folder: Path, site: str) -> str | None:
    """What a site whose rule in ``folder`` loads and has no schedule gets instead of a regular grab (the
    next grab a scheduler set while it had one stays in Redis and never comes); None for any other."""
    path = folder / f"{site}{RULE_SUFFIX}"
    if not path.is_file():
        return None
    try:
        rule = load_rule(path)
    except RuleErrors:
        return None
    if rule.every is not None or rule.cron is not None:
        return None
    return _no_schedule(site)


def _first_grab(folder: Path, site: str) -> str:
    """When the first regular grab of ``site``, resumed before any scheduler planned one, comes: as its
    rule in ``folder`` schedules it; hedged when that rule is not there or does not load (the scheduler's
    may be on another machine)."""
    path = folder / f"{site}{RULE_SUFFIX}"
    try:
        rule = load_rule(path) if path.is_file() else None
    except RuleErrors:
        rule = None
    if rule is not None and rule.cron is not None:
        return f"its first regular grab is at its cron expression's next time ({rule.cron})"
    if rule is not None and rule.every is not None:
        return "its first regular grab is queued at the scheduler's next tick"
    return "its first regular grab, if its rule has a schedule, is queued at the scheduler's next tick"


def _no_schedule(site: str) -> str:
    return f"its rule has no `schedule`: no regular grab (`{suggest(f'temp {site}')}` crawls it)"


def _next_grab(path: Path, rule: Rule | RuleErrors | None, site: str) -> str:
    """When the forgotten ``site`` is grabbed next, as its ``rule`` (read from ``path``) schedules it."""
    if rule is None:
        return (
            f"it has no rule file in this rules folder ({path}): a scheduler of this folder grabs it no more,"
            " but one whose rules folder has it (on another machine) grabs it anew at its next tick, as a new"
            f" rule's first: remove its file there too, or `{suggest(f'sites pause {site}')}` holds it on"
            " every machine"
        )
    if isinstance(rule, RuleErrors):
        return f"its next grab is a new rule's first, once {path} loads (`{suggest('rules check')}`)"
    if rule.cron is not None:
        return f"its next grab is a new rule's first: at its cron expression's next time ({rule.cron})"
    if rule.every is not None:
        return "its next grab is a new rule's first: at the scheduler's next tick"
    return _no_schedule(site)
