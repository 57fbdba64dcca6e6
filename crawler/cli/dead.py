"""``crawler dead list|requeue|drop``: the requests that ended in an error, with the reason
(:mod:`crawler.deadletters`)."""

from __future__ import annotations

import argparse
import heapq
import io
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from crawler.cli.crawl import redis_for
from crawler.cli.terminal import PIPED_WIDTH, cut, one_line, table_console, tell
from crawler.commandline import counted, suggest
from crawler.config import Config
from crawler.deadletters import DeadLetter, dead_letter_pages, requeue
from crawler.errors import InputError
from crawler.redisio.connection import connect, decoded
from crawler.redisio.queue import LeasedQueue
from crawler.rules import RULE_SUFFIX, rule_file, rule_sites
from crawler.status import no_worker, queue_size, site_in_redis, workers_alive

__all__ = ["run_drop", "run_list", "run_requeue"]

# The least width of the reasons piped, the other columns whole: a usual reason ("HTTP 503 Service
# Unavailable (after 2 retries)") on one or two lines, not a word a line.
PIPED_REASON_WIDTH = 40


@contextmanager
def _queue(*, writes: bool) -> Iterator[LeasedQueue]:
    config = Config.from_env()
    with redis_for(config, reading=True) as url:
        server = connect(url, reads_only=not writes)
        try:
            yield LeasedQueue(server, config.keys)
        finally:
            server.close()


def _select(queue: LeasedQueue, args: argparse.Namespace) -> Iterator[list[DeadLetter]]:
    """The dead letters ``args`` select (IDs, --site, --job, --all), a page of the hash at a time (see
    :func:`dead_letter_pages`): a command may act on each page before it reads the next. IDs are checked
    before any is given (an unknown one is an error, nothing done); a --site or --job that selects none is
    checked once all were read (an error when misspelt: :func:`_check_filters`)."""
    ids = getattr(args, "ids", None)
    if ids is not None and not ids and not (args.all or args.site or args.job):
        raise InputError("say which dead letters: IDs, --site S, --job J, or --all")
    wanted = dict.fromkeys(ids or ())
    found: dict[str, DeadLetter] = {}
    site_seen = job_seen = False
    for page in dead_letter_pages(queue):
        site_seen = site_seen or any(letter.site == args.site for letter in page)
        job_seen = job_seen or any(letter.job == args.job for letter in page)
        chosen = [
            letter
            for letter in page
            if (args.site is None or letter.site == args.site)
            and (args.job is None or letter.job == args.job)
            and (not wanted or letter.id in wanted)
        ]
        if wanted:
            found.update((letter.id, letter) for letter in chosen)
        elif chosen:
            yield chosen
    if wanted:
        unknown = [given for given in wanted if given not in found]
        if unknown:
            among = " of the site or job given" if args.site or args.job else ""
            raise InputError(
                f"no dead letter {unknown[0]!r}{among}: expected an id that `{suggest('dead list')}` shows"
            )
        yield [found[given] for given in wanted]
        return
    _check_filters(queue, args.site if not site_seen else None, args.job if not job_seen else None)


def _check_filters(queue: LeasedQueue, site: str | None, job: str | None) -> None:
    """:class:`InputError` when ``site`` (one of no dead letter) has no rule and Redis holds nothing of it
    either (naming the site meant), or ``job`` (one of no dead letter) was never run: a misspelt name says
    so, rather than selecting nothing (``dead requeue --site guardain`` requeued 0). A site whose rule file
    was removed (docs/rules.md, "To remove a site") selects none, as one with a rule does."""
    if site is not None and not site_in_redis(queue.server, queue.keys, site):
        rule_file(Config.from_env().rules_dir, site)
    if job is not None and not queue.server.exists(queue.keys.job(job)):
        raise InputError(f"no job {job!r}: expected a job id of the job column of `{suggest('dead list')}`")


def run_list(args: argparse.Namespace) -> int:
    limit = None if args.all else args.limit
    with _queue(writes=False) as queue:
        if args.format == "jsonl" and limit is None:
            # Streamed a page of the hash at a time, in its order: 100,000 letters never held at once.
            for letters in _select(queue, args):
                sys.stdout.write("".join(_json_line(letter) for letter in letters))
            return 0
        total, groups, shown = _gathered(_select(queue, args), limit)
    if total > len(shown):
        more = f"`{suggest('dead list --limit 200')}` shows more, --all every one"
        if args.format != "table":
            tell("note", f"the latest {len(shown)} of {total:,} dead letters: {more}")
    if args.format == "jsonl":
        sys.stdout.write("".join(_json_line(letter) for letter in shown))
        return 0
    if args.format == "json":
        sys.stdout.write(json.dumps([letter.document() for letter in shown], ensure_ascii=False, indent=2))
        sys.stdout.write("\n")
        return 0
    if not total:
        of_site = "" if args.site is None else f" of site {args.site}"
        of_job = "" if args.job is None else f" of job {args.job}"
        print(f"no dead letters{of_site}{of_job}")
        return 0
    if total > len(shown):
        _print_summary(total, groups)
        if shown:
            _print_letters(shown, f"the latest {len(shown)} of {total:,} dead letters")
        print(f"{more} (`{suggest('dead list --all --format jsonl')}`: one a line, as read)")
    else:
        _print_letters(shown, counted(total, "dead letter"))
    return 0


def _json_line(letter: DeadLetter) -> str:
    return json.dumps(letter.document(), ensure_ascii=False) + "\n"


def _newest(letter: DeadLetter) -> tuple[float, str]:
    return (letter.at or 0.0, letter.id)


def _gathered(
    pages: Iterable[list[DeadLetter]], limit: int | None
) -> tuple[int, dict[tuple[str, str], list[float]], list[DeadLetter]]:
    """How many letters ``pages`` give; per site and kind of error their count and the latest one's time;
    and the ``limit`` latest of them, latest first (None: every one). What is held is the groups and the
    latest ``limit``, not every letter."""
    total = 0
    groups: dict[tuple[str, str], list[float]] = {}
    shown: list[DeadLetter] = []
    for letters in pages:
        total += len(letters)
        for letter in letters:
            group = groups.setdefault((letter.site or "-", letter.kind or "-"), [0, 0.0])
            group[0] += 1
            group[1] = max(group[1], letter.at or 0.0)
        if limit is None:
            shown.extend(letters)
        else:
            shown = heapq.nlargest(limit, shown + letters, key=_newest)
    return total, groups, sorted(shown, key=_newest, reverse=True)


def _when(at: float | None) -> str:
    return "-" if not at else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")


def _print_summary(total: int, groups: dict[tuple[str, str], list[float]]) -> None:
    """The letters counted by site and kind of error, the most first."""
    table = Table(title=f"{total:,} dead letters by site and kind of error", title_justify="left")
    for column in ("site", "kind", "letters", "latest (UTC)"):
        table.add_column(column, justify="right" if column == "letters" else "left")
    for (site, kind), (count, latest) in sorted(groups.items(), key=lambda item: (-item[1][0], item[0])):
        table.add_row(escape(site), escape(one_line(kind)), f"{int(count):,}", _when(latest))
    with table_console(PIPED_WIDTH) as console:
        console.print(table)


def _print_letters(letters: list[DeadLetter], title: str) -> None:
    rows = [
        (
            letter.id,
            _when(letter.at),
            letter.site or "-",
            one_line(letter.shown_url or "(no request)"),
            one_line(letter.shown_reason),
            letter.job or "-",
        )
        for letter in letters
    ]
    piped = not sys.stdout.isatty()
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(("id", "when (UTC)", "site", "url", "reason", "job")):
        # Piped, every cell but the reason is kept on one line, whole: what a person copies from a file or
        # `less` (a URL to a browser, an id or job to `dead requeue`); the reason is folded.
        whole = piped and column != "reason"
        widest = max(cell_len(column), *(cell_len(row[index]) for row in rows))
        least = widest if whole else min(widest, PIPED_REASON_WIDTH)
        table.add_column(column, overflow="fold", no_wrap=whole, min_width=least if piped else None)
    for row in rows:
        table.add_row(*map(escape, row))
    with table_console(_piped_width(table) if piped else PIPED_WIDTH) as console:
        console.print(table)


def _piped_width(table: Table) -> int:
    """The width of ``table`` piped: :data:`PIPED_WIDTH`, as every table's, or wider as its longest URL, on
    one line, needs (each other column folded as narrow as its longest word)."""
    console = Console(file=io.StringIO(), width=sys.maxsize, color_system=None)
    return max(PIPED_WIDTH, Measurement.get(console, console.options, table).minimum)


def run_requeue(args: argparse.Namespace) -> int:
    back = 0
    sites: Counter[str] = Counter()
    temp_jobs: Counter[tuple[str, str]] = Counter()
    last_temp: dict[str, str | None] = {}
    refused: list[DeadLetter] = []
    with _queue(writes=True) as queue:
        # Each page of the hash is requeued (one pipeline) before the next is read: a round trip a page,
        # not one a letter (100,000 took 74 s under load), nor every letter held here at once.
        for selected in _select(queue, args):
            done, not_requests = requeue(queue, selected)
            back += done
            refused.extend(not_requests)
            requeued = [letter for letter in selected if letter not in not_requests]
            sites.update(letter.site for letter in requeued if letter.site is not None)
            temp_jobs.update(_of_last_temp_crawls(queue, requeued, last_temp))
        waiting = queue_size(queue.server, queue.keys) if back else 0
        idle = no_worker(waiting, workers_alive(queue.server, queue.keys))
        again_jobs = {
            job for _, job in temp_jobs if queue.server.hexists(queue.keys.job(job), "fetches_seen")
        }
        aside = _set_aside(queue, sites) if back else []
    print(f"requeued {counted(back, 'dead letter')}")
    for line in aside:
        print(line)
    if idle:
        print(idle)
        for (site, job), letters in sorted(temp_jobs.items()):
            them, were = ("it", "letter it was") if letters == 1 else ("them", "letters they were")
            # A plain temp crawl goes on with a plain one, --again with --again (unfinished_temp_job).
            again = " --again" if job in again_jobs else ""
            print(
                f"or `{suggest(f'temp {site}{again}')}` crawls {them}, going on with its last temp crawl"
                f" (job {job}), whose dead {were}"
            )
    for letter in refused:
        tell("warning", f"not requeued {letter.id}: no request ({cut(letter.shown_reason, 100)}); drop it")
    return 0


def _set_aside(queue: LeasedQueue, sites: Counter[str]) -> list[str]:
    """Where the requeued letters (``sites``: how many of each site) of a site whose queue key holds
    another type wait (the queue put them in its delayed set, not in the site's queue), and the fix: one
    line per such site."""
    lines = []
    for site, wrong in sorted(queue.wrong_keys(sorted(sites)).items()):
        for key in wrong:
            if key.key == queue.keys.queue_of(site):
                waits = "request waits" if sites[site] == 1 else "requests wait"
                lines.append(
                    f"{site}: its {sites[site]:,} requeued {waits} in {queue.keys.delayed}, not in its queue:"
                    f" {key.problem()}"
                )
    return lines


def _of_last_temp_crawls(
    queue: LeasedQueue, letters: list[DeadLetter], last: dict[str, str | None]
) -> Counter[tuple[str, str]]:
    """How many of ``letters`` are of their site's last temp crawl, by site and job: the next ``crawler temp``
    of the site goes on with that job, and crawls them (docs/cli.md). ``last``: each site's last temp crawl
    read so far (filled here)."""
    found: Counter[tuple[str, str]] = Counter()
    for letter in letters:
        if letter.site is None or letter.job is None:
            continue
        if letter.site not in last:
            job = queue.server.get(queue.keys.temp(letter.site))
            last[letter.site] = None if job is None else decoded(job)
        if last[letter.site] == letter.job:
            found[letter.site, letter.job] += 1
    return found


def run_drop(args: argparse.Namespace) -> int:
    dropped = chosen = pages = 0
    seen_sites: set[str] = set()
    with _queue(writes=True) as queue:
        # Each page of the hash is dropped before the next is read: an HDEL of about DEAD_SCAN_COUNT
        # letters at a time, not one of every letter (Redis held 0.3 s by 100,000), nor all held here.
        for letters in _select(queue, args):
            dropped += queue.drop_dead(letter.member for letter in letters)
            chosen += len(letters)
            pages += sum(1 for letter in letters if letter.seen)
            seen_sites.update(letter.site or "" for letter in letters if letter.seen)
    print(f"dropped {counted(dropped, 'dead letter')}")
    if pages:
        print(_stay_seen(pages, chosen, sorted(seen_sites)))
    return 0


def _stay_seen(pages: int, chosen: int, sites: list[str]) -> str:
    """What becomes of the ``pages`` of ``chosen`` dropped letters, of ``sites``, that stay seen: crawls of
    a site skip them, and `crawler temp SITE --url URL` fetches one again; a site whose rule file was
    removed has no crawl, nor a temp crawl until its rule file is back."""
    folder = Config.from_env().rules_dir
    ruled = set(rule_sites(folder))
    removed = [site for site in sites if site not in ruled]
    temp = suggest(f"temp {sites[0] if len(sites) == 1 else 'SITE'} --url URL")
    it, again = ("it", "it") if pages == 1 else ("them", "one")
    if pages == 1:
        which = "its page stays" if chosen == 1 else "the page of 1 stays"
    else:
        which = f"their {pages:,} pages stay" if pages == chosen else f"the pages of {pages:,} stay"
    if not removed:
        return f"{which} seen: crawls of {', '.join(sites)} skip {it}; `{temp}` fetches {again} again"
    if len(removed) == 1:
        unruled = f"{removed[0]} has no rule file ({folder / removed[0]}{RULE_SUFFIX})"
        back = "once that file is back"
    else:
        unruled = f"{', '.join(removed)} have no rule file in {folder}"
        back = "once their files are back"
    if len(removed) == len(sites):
        return (
            f"{which} seen: {unruled}, so no crawl reads {it}; {back}, crawls of {', '.join(sites)} skip"
            f" {it} and `{temp}` fetches {again} again"
        )
    ruled_sites = ", ".join(site for site in sites if site in ruled)
    whose = "its" if len(removed) == 1 else "their"
    return (
        f"{which} seen: crawls of {ruled_sites} skip {it}; `{temp}` fetches {again} again; {unruled}: no"
        f" crawl reads {whose} pages until {back.removeprefix('once ')}"
    )
