"""``crawler status [--format json] [--site SITE] [--check]``: the service's status (:mod:`crawler.status`),
or one site's beside the service's own parts, as tables or JSON; with ``--check``, only what needs
attention, and an exit code that says whether anything does."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from crawler.cli.crawl import redis_and_server
from crawler.cli.options import no_rules_problem, rules_folder, rules_in
from crawler.cli.sites import no_rule_here
from crawler.cli.terminal import table_console, tell
from crawler.commandline import counted, did_you_mean, span
from crawler.config import Config
from crawler.errors import InputError
from crawler.redisio.clock import redis_clock
from crawler.redisio.connection import RedisUnavailableError, connect, denial, denied, lost_while
from crawler.redisio.embedded import EmbeddedRedis, live_users
from crawler.rules import load_rules
from crawler.status import (
    build_status,
    checked,
    needs_attention,
    site_in_redis,
    status_sites,
    ticks_failing,
)
from crawler.worker.connection import wrong_type

__all__ = ["EXIT_ATTENTION", "EXIT_UNREADABLE", "run_status"]

# `status --check`: something needs attention; the status could not be read (Redis unreachable, refusing
# the status's reads): a code apart from 1 and from usage errors (2), Nagios's UNKNOWN.
EXIT_ATTENTION = 1
EXIT_UNREADABLE = 3
# Piped, the indent of the lines a block's first cell goes on over when it is longer than a line: deeper
# than the block's ``  name: value`` lines, so it is read as none of them.
FIRST_CELL_INDENT = 4


def run_status(args: argparse.Namespace) -> int:
    try:
        return _run_status(args)
    except RedisUnavailableError as exc:
        if not args.check:
            raise
        tell("error", str(exc))
        return EXIT_UNREADABLE


def _run_status(args: argparse.Namespace) -> int:
    config = Config.from_env()
    if not rules_in(rules_folder(config.rules_dir)):
        tell("note", no_rules_problem(config.rules_dir, "no site to show"))
    ruleset = load_rules(config.rules_dir)
    with redis_and_server(config, reading=True) as (url, embedded):
        server = connect(url, reads_only=True)
        try:
            if args.site is not None and args.site not in (sites := status_sites(ruleset)):
                if not site_in_redis(server, config.keys, args.site):
                    raise _unknown_site(args.site, sites, config.rules_dir)
                tell("note", no_rule_here(config.rules_dir, args.site))
            report = build_status(
                server, config.keys, ruleset, redis_clock(server), args.site, config.data_dir
            )
        except redis.ResponseError as exc:
            if denied(exc):
                said = denial(exc, config.redis_url, config.keys.prefix)
                raise RedisUnavailableError(f"{said}; then run the status again") from None
            fix = (
                f"a key under {config.keys.prefix}: holds another type, written by another program: give the"
                " crawler a prefix of its own (REDIS_KEY_PREFIX), or another Redis database in REDIS_URL"
                if wrong_type(exc)
                else "Redis's log says why"
            )
            raise RedisUnavailableError(
                f'Redis answered a read of the status with an error (Redis says "{exc}"); {fix}'
            ) from None
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"{lost_while('the status was read', exc)}; run the status again once Redis answers"
            ) from None
        report["redis"]["embedded"] = None if embedded is None else _embedded(embedded, config.data_dir)
    if args.check:
        return _print_check(report, args.format)
    if args.format == "json":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        with table_console() as console:
            _print(console, sys.stdout.isatty(), report)
    return 0


def _print_check(report: dict[str, Any], form: str) -> int:
    """``--check``: what needs attention, each a line ``<site, part or rule file>: <reason>`` (nothing when
    all is well), or in JSON those entries (:func:`needs_attention`); :data:`EXIT_ATTENTION` when any
    does."""
    entries = needs_attention(report)
    if form == "json":
        sys.stdout.write(json.dumps(entries, ensure_ascii=False, indent=2) + "\n")
    else:
        for entry in entries:
            sys.stdout.write(
                f"{entry.get('site') or entry.get('part') or entry['file']}: {entry['reason']}\n"
            )
    return EXIT_ATTENTION if entries else 0


def _embedded(embedded: EmbeddedRedis, data_dir: Path) -> dict[str, Any]:
    """What the status says of the data folder's embedded Redis: whether this command started it (no other
    process ran it: each command starts it on demand, and the last to leave stops it), where its data
    lives, and the other processes that use it."""
    return {
        "started_by_this_command": embedded.owner,
        "data": str(embedded.aof_path),
        "users": [pid for pid in live_users(data_dir) if pid != os.getpid()],
    }


def _unknown_site(site: str, sites: list[str], folder: Path) -> InputError:
    """The error of a ``site`` none of the ``sites`` the status lists (the rules of ``folder``) and of
    which Redis holds nothing, naming them and the one meant if one is close."""
    known = f"sites: {', '.join(sites)}" if sites else "no rules there"
    hint = did_you_mean(site, sites)
    return InputError(
        f"no site {site!r} in {folder}: --site takes the id of a rule of the rules folder{hint} ({known})"
    )


def _expired(expired: int) -> str:
    """The leases past their deadline, said apart: their worker is gone, and a live worker's tend puts
    them back in the queue; empty when none is."""
    if not expired:
        return ""
    return f" ({expired} of them expired: back in the queue when a worker runs)"


def _alive(worker: dict[str, Any]) -> str:
    """A worker's cell of the ``alive`` column: a suspended one's with the command that resumes it."""
    if worker["alive"]:
        return "yes"
    if worker["suspended"]:
        return f"[red]no[/red], suspended (kill -CONT {worker['pid']})"
    return "[red]no[/red]"


def _scheduler(scheduler: dict[str, Any]) -> str:
    """The active scheduler (and whether its ticks fail with an unexpected error: said below); or none, and
    the one killed on this machine whose lead has not lapsed yet."""
    if scheduler["active"]:
        failing = scheduler.get("failing")
        if not failing:
            return str(scheduler["active"])
        return f"{scheduler['active']}, its ticks failing (NEEDS ATTENTION below)"
    killed = scheduler.get("killed")
    if not killed:
        return "none active"
    return (
        f"none active ({killed['owner']} stopped without a clean stop, killed: its process {killed['pid']} is"
        f" gone; a scheduler started now takes over once its lead lapses, within SCHEDULE_LEADER_SECONDS)"
    )


def _stopped(workers: list[dict[str, Any]]) -> str:
    """What the workers listed as dead are: suspended on this machine (SIGSTOP), each with the command
    that resumes it, or stopped without a clean stop, each listed until its
    ``SUPERVISION_FORGET_WORKER_SECONDS`` after its last beat (crawler.worker.heartbeat); empty when
    none is."""
    dead = [worker for worker in workers if not worker["alive"]]
    if not dead:
        return ""
    suspended = [worker for worker in dead if worker["suspended"]]
    said = []
    if suspended:
        its, it = ("its process", "it") if len(suspended) == 1 else ("their processes", "them")
        resume = " ".join(str(worker["pid"]) for worker in suspended)
        said.append(
            f"{len(suspended)} suspended on this machine, {its} stopped (SIGSTOP, Ctrl-Z): {its.split()[0]}"
            f" leases go back to the queue as a dead worker's; `kill -CONT {resume}` resumes {it}"
        )
    gone = [worker for worker in dead if not worker["suspended"]]
    if gone:
        forget = max(worker["forget_seconds"] for worker in gone)
        soonest = min(max(w["forget_seconds"] - w["seen_seconds_ago"], 0.0) for w in gone)
        machine, beat, forgotten = (
            ("its machine", "its", "forgotten")
            if len(gone) == 1
            else ("their machines", "each one's", "the first forgotten")
        )
        said.append(
            f"{len(gone)} stopped without a clean stop, killed or {machine} gone: listed until {span(forget)}"
            f" after {beat} last beat, SUPERVISION_FORGET_WORKER_SECONDS; {forgotten} in {span(soonest)}"
        )
    return f" ({'; '.join(said)})"


def _uptime(health: dict[str, Any]) -> str:
    """How long Redis has been up, and for the embedded server whether this command started it (then its
    uptime is this command's: none ran it) or who runs it, and where its data lives."""
    embedded = health.get("embedded")
    if embedded is None:
        return f"up {span(health['uptime_seconds'])}"
    data = escape(embedded["data"])
    if embedded["started_by_this_command"]:
        return (
            "embedded, started by this command to read it (no crawl, worker or scheduler runs on this data"
            " folder: each command starts it on demand, and the last one using it stops it); its data in"
            f" {data}"
        )
    users = ", ".join(f"pid {pid}" for pid in embedded["users"]) or "other processes"
    return f"embedded, up {span(health['uptime_seconds'])}, run by {users}; its data in {data}"


def _print(console: Console, terminal: bool, report: dict[str, Any]) -> None:
    """The ``report`` for people: tables in a ``terminal``; else blocks of lines that fit the console's
    width, but for the messages that need attention, each on one line."""
    queue = report["queue"]
    console.print(
        f"[bold]{report['now']}[/bold]  queue {counted(queue['queued'], 'request')},"
        f" {queue['leased']} leased{_expired(queue['expired'])},"
        f" {queue['waiting']} waiting (retries, deferred),"
        f" {counted(queue['dead_letters'], 'dead letter')};"
        f" scheduler: {escape(_scheduler(report['scheduler']))};"
        f" workers alive: {report['workers_alive']} of {len(report['workers'])}{_stopped(report['workers'])}",
        soft_wrap=terminal,
    )
    health = report["redis"]
    aof = (
        "off" if not health["aof_enabled"] else "ok" if health["aof_last_write_ok"] else "[red]FAILING[/red]"
    )
    version = escape(str(health["version"]))
    console.print(
        f"redis {version}: {_uptime(health)}, append-only file {aof},"
        f" memory {health['used_memory_bytes'] / 1e6:.1f} MB",
        soft_wrap=terminal,
    )
    if health["data_began"] is not None:
        console.print(f"Redis's crawler data began at {health['data_began']}", soft_wrap=terminal)
    if health["data_lost"] is not None:
        console.print(Text.assemble(("NOTE", "yellow"), " ", _lost(health["data_lost"])), soft_wrap=True)
    if health["data_back"] is not None:
        console.print(Text.assemble(("NOTE", "yellow"), " ", _back(health["data_back"])), soft_wrap=True)
    if health["writes_refused"]:
        console.print(
            Text.assemble(("NEEDS ATTENTION", "red"), " ", health["writes_refused"]), soft_wrap=True
        )
    if health["evicts"]:
        console.print(Text.assemble(("NEEDS ATTENTION", "red"), " ", health["evicts"]), soft_wrap=True)
    if report["no_worker"]:
        console.print(Text.assemble(("NEEDS ATTENTION", "red"), " ", report["no_worker"]), soft_wrap=True)
    if failing := ticks_failing(report["scheduler"]):
        console.print(Text.assemble(("NEEDS ATTENTION", "red"), " ", failing), soft_wrap=True)
    if report["store_split"]:
        console.print(Text.assemble(("NEEDS ATTENTION", "red"), " ", report["store_split"]), soft_wrap=True)
    if report["dead_elsewhere"]:
        console.print(
            Text.assemble(("NEEDS ATTENTION", "red"), " ", report["dead_elsewhere"]), soft_wrap=True
        )
    if report["workers_unreadable"]:
        console.print(
            Text.assemble(("NEEDS ATTENTION", "red"), " ", report["workers_unreadable"]), soft_wrap=True
        )
    if report["workers"]:
        _show(
            console,
            terminal,
            "Workers",
            ("worker", "alive", "last beat", "responses", "responses/min", "Redis errors", "sites", "store"),
            (
                (
                    escape(worker["id"]),
                    _alive(worker),
                    f"{worker['seen_seconds_ago']:.0f} s ago",
                    str(worker["responses"]),
                    f"{worker['rate_per_minute']:.1f}",
                    _redis_errors(worker, report["workers_figures"]),
                    escape(",".join(worker["sites"]) or "all"),
                    escape(worker["store"] or "-"),
                )
                for worker in report["workers"]
            ),
        )
        if report["workers_figures"]:
            console.print(Text.assemble(("NOTE", "yellow"), " ", report["workers_figures"]), soft_wrap=True)
    if not report["sites"]:
        _print_no_sites(console, terminal, report)
    else:
        _show(
            console,
            terminal,
            "Sites (counts over the last 24 h)",
            (
                "site",
                "schedule",
                "last grab (UTC)",
                "next grab (UTC)",
                "new last/24h",
                "pages",
                "errors",
                "bans",
                "backoffs",
                "304s",
                "qRead",
            ),
            (
                (
                    escape(site["site"]),
                    escape(site["schedule"]),
                    _grab_time(site["last_grab"], site, _never_grabbed(site)),
                    _next_grab(site),
                    f"{'-' if site['new_last_grab'] is None else site['new_last_grab']}/{site['new_24h']}",
                    str(site["pages_24h"]),
                    escape(_errors(site)),
                    _bans(site),
                    str(site["backoffs_24h"]),
                    str(site["not_modified_24h"]),
                    str(site["qread_fallbacks_24h"]),
                )
                for site in report["sites"]
            ),
        )
    attention = [site for site in report["sites"] if site["attention"]]
    for site in attention:
        console.print(Text.assemble(("NEEDS ATTENTION", "red"), " ", (site["site"], "bold")), soft_wrap=True)
        for reason in site["attention"]:
            console.print(Text.assemble("  ", reason), soft_wrap=True)
    noted = [site for site in report["sites"] if site["notes"]]
    for site in noted:
        console.print(Text.assemble(("NOTE", "yellow"), " ", (site["site"], "bold")), soft_wrap=True)
        for note in site["notes"]:
            console.print(Text.assemble("  ", note), soft_wrap=True)
    if attention or noted:
        console.print()
    _print_fields(console, terminal, report["sites"])
    discovering = [site for site in report["sites"] if site.get("discover")]
    if discovering:
        _show(
            console,
            terminal,
            "Discover crawls (counts over the last 24 h)",
            (
                "site",
                "relevant",
                "read",
                "harvest",
                "links kept",
                "refused",
                "seen already",
                "released",
                "frontier",
                "hosts",
                "model ms/page",
                "model syncs",
            ),
            (_discovered(site) for site in discovering),
        )
    if report["proxies"]:
        _show(
            console,
            terminal,
            "Proxies",
            ("proxy", "ok", "failed", "banned", "latency", "state"),
            (_proxy(proxy) for proxy in report["proxies"]),
        )
    for broken in report["rule_errors"]:
        console.print(
            f"[red]NEEDS ATTENTION[/red] {escape(broken['error'])}; {escape(checked(broken))}", soft_wrap=True
        )


def _lost(lost: dict[str, Any]) -> str:
    """The line of a loss of Redis's crawler data (``redis.data_lost`` of the report)."""
    gone = "the requests queued, the URLs seen, the dead letters and the counters before it are gone"
    if lost["record"] is not None:
        began = (
            "no worker or scheduler has run on it since"
            if lost["at"] is None
            else f"it began anew at {lost['at']}"
        )
        return (
            f"Redis lost its data after {lost['held_at']} (a FLUSHALL or a restart without persistence, while"
            f" no crawler process ran): this data folder's processes saw it held then ({lost['record']}),"
            f" {began}; {gone} (pages are fetched again); the next worker or scheduler says it in its log"
        )
    found = f"found by {lost['found_by']}" if lost["found_by"] else "found"
    if lost["held_at"]:
        found += f", which saw it held at {lost['held_at']}"
    return (
        f"Redis lost its data at {lost['at']} (a FLUSHALL or a restart without persistence): {found}; {gone}"
    )


def _back(back: dict[str, Any]) -> str:
    """The line of Redis gone back to an older copy of its data (``redis.data_back`` of the report)."""
    why = "a restart from an older snapshot or append-only file, or a failover to a replica that was behind"
    gone = (
        "the writes between are gone: pages acknowledged or marked seen then are fetched again, the jobs and"
        " requests are as they were in the copy"
    )
    if back["record"] is not None:
        return (
            f"Redis went back to an older copy of its data ({why}), while no crawler process ran: its last"
            f" check in it is at {back['to']}, yet this data folder's processes saw it at {back['seen_at']}"
            f" ({back['record']}); {gone}; the next worker or scheduler says it in its log"
        )
    found = f"found by {back['found_by']}" if back["found_by"] else "found"
    return (
        f"Redis went back to an older copy of its data at {back['found_at']} ({why}): {found}, which had seen"
        f" it at {back['seen_at']}, past its last check in the copy at {back['to']}; {gone}"
    )


def _redis_errors(worker: dict[str, Any], stale: str | None) -> str:
    """A ``worker``'s count of Redis errors, and as of when while its figures are ``stale`` (Redis
    refuses writes: :func:`crawler.status.workers_figures`)."""
    errors = str(worker["redis_errors"])
    return f"{errors} as of {worker['seen_seconds_ago']:.0f} s ago" if stale else errors


def _print_no_sites(console: Console, terminal: bool, report: dict[str, Any]) -> None:
    """In place of an empty Sites table: no site, in which rules folder (its full path too), and the sites
    whose grabs Redis still holds (their rule files removed, or in another folder). Why and the fix are
    the note on stderr (:func:`_run_status`), not repeated here."""
    folder = Path(report["rules_dir"])
    console.print(
        f"Sites: none in {escape(str(folder))!r} ({escape(str(folder.resolve()))})", soft_wrap=terminal
    )
    if removed := report["removed_sites"]:
        console.print(
            f"Redis still holds the last and next grab of {counted(len(removed), 'site')} with no rule file"
            f" there: {escape(', '.join(removed))}",
            soft_wrap=terminal,
        )


def _show(
    console: Console,
    terminal: bool,
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
) -> None:
    """The ``rows`` (cells in rich markup) under ``title``: a table in a terminal; piped, a block per row
    that fits the console's width however many columns there are: its first cell on a line (a long
    one folded over lines indented by :data:`FIRST_CELL_INDENT`), then each other column as
    ``  name: value``, a long value folded over the lines below it, never cut; a blank line after the last
    block."""
    if terminal:
        table = Table(title=title, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    console.print(title, markup=False)
    for first, *cells in rows:
        _print_first(console, first)
        block = Table.grid(padding=(0, 1))
        block.add_column(no_wrap=True)
        block.add_column(overflow="fold")
        for name, cell in zip(columns[1:], cells, strict=True):
            block.add_row(f"{name}:", cell)
        console.print(Padding(block, (0, 0, 0, 2), expand=False))
    console.print()


def _print_first(console: Console, cell: str) -> None:
    """A block's first ``cell`` (rich markup) on a line; one longer than the console's width folded over
    lines indented by :data:`FIRST_CELL_INDENT`, never cut."""
    text = Text.from_markup(cell)
    if text.cell_len <= console.width:
        console.print(text)
        return
    head, *rest = text.wrap(console, console.width - FIRST_CELL_INDENT, overflow="fold")
    console.print(head)
    for line in rest:
        console.print(Text.assemble(" " * FIRST_CELL_INDENT, line))


def _discovered(site: dict[str, Any]) -> tuple[str, ...]:
    """The cells of a discover crawl's row."""
    found = site["discover"]
    harvest, cost = found["harvest_24h"], found["model_ms_per_page_24h"]
    return (
        escape(site["site"]),
        str(found["relevant_24h"]),
        str(found["relevant_24h"] + found["irrelevant_24h"]),
        "-" if harvest is None else f"{harvest:.2f}",
        str(found["links_kept_24h"]),
        str(found["links_refused_24h"]),
        str(found["links_seen_24h"]),
        str(found["links_released_24h"]),
        str(found["frontier_links"]),
        str(found["frontier_hosts"]),
        "-" if cost is None else f"{cost:.3f}",
        str(found["model_shares"]),
    )


def _proxy(proxy: dict[str, Any]) -> tuple[str, ...]:
    """The cells of a proxy's row."""
    state = (
        f"benched until {proxy['benched_until'][11:19]}: {escape(proxy['reason'])}"
        if proxy["benched"]
        else "ok"
    )
    return (
        escape(proxy["proxy"]),
        str(proxy["ok"]),
        str(proxy["failed"]),
        str(proxy["banned"]),
        "-" if proxy["latency_ms"] is None else f"{proxy['latency_ms']} ms",
        state,
    )


def _errors(site: dict[str, Any]) -> str:
    """A site's errors, and of which kinds: ``3 (HTTP 404: 2, timeout: 1)``."""
    kinds = ", ".join(f"{kind}: {count}" for kind, count in site["errors_by_kind_24h"].items())
    return f"{site['errors_24h']} ({kinds})" if kinds else str(site["errors_24h"])


def _bans(site: dict[str, Any]) -> str:
    """A site's bans, and the ban signs seen: ``1 (3 signs)``."""
    signs = site["ban_signals_24h"]
    if not signs:
        return str(site["bans_24h"])
    return f"{site['bans_24h']} ({counted(signs, 'sign')})"


def _print_fields(console: Console, terminal: bool, sites: list[dict[str, Any]]) -> None:
    """Per site with rule fields, the share of its article pages where each field found nothing, in the last
    24 h and in the 7 days before (``-``: no article page then); a field that stopped matching, or never
    matched, says so."""
    shown = [site for site in sites if site["fields"]]
    if not shown:
        return
    rows = []
    for site in shown:
        recent, before = site["article_pages_24h"], site["article_pages_before"]
        cells = []
        for field in site["fields"]:
            share = "-" if field["missing_24h"] is None else f"{field['missing_24h']:.0%}"
            past = "-" if field["missing_before"] is None else f"{field['missing_before']:.0%}"
            cell = escape(f"{field['field']} {share} ({past})")
            if field["stopped"]:
                cell = f"[red]{cell} STOPPED MATCHING[/red]"
            elif field["never_matched"]:
                cell = f"[red]{cell} NEVER MATCHED[/red]"
            cells.append(cell)
        rows.append((escape(site["site"]), f"{recent} ({before})", ", ".join(cells)))
    _show(
        console,
        terminal,
        "Rule fields: share of article pages where the field found nothing, last 24 h (7 days before)",
        ("site", "article pages", "fields"),
        rows,
    )


def _next_grab(site: dict[str, Any]) -> str:
    if site["paused"] is not None:
        return "PAUSED"
    return _grab_time(site["next_grab"], site, "-") + _grab_waiting(site["grab_waiting"])


def _grab_time(moment: str | None, site: dict[str, Any], none: str) -> str:
    """``moment`` (ISO 8601, UTC), one of ``site``'s last and next grab, as the table shows it: to the
    minute, or to the second when the two are under a minute apart (a schedule of 30 s), which would read
    alike to the minute; ``none`` when there is none."""
    if moment is None:
        return none
    last, following = site["last_grab"], site["next_grab"]
    close = (
        last is not None
        and following is not None
        and abs(datetime.fromisoformat(following) - datetime.fromisoformat(last)) < timedelta(minutes=1)
    )
    return moment[: 19 if close else 16].replace("T", " ")


def _never_grabbed(site: dict[str, Any]) -> str:
    """The last grab of ``site``, which had none: ``never``, and when its last temp crawl started (a new
    user's ``crawler temp SITE`` is no grab of the scheduler's, and its site was crawled all the same)."""
    temp = site["last_temp"]
    if temp is None:
        return "never"
    if temp["started"] is None:
        return f"never (temp crawl {temp['job']})"
    return f"never (temp crawl {temp['started'][:16].replace('T', ' ')})"


def _grab_waiting(waiting: dict[str, Any] | None) -> str:
    if waiting is None:
        return ""
    return " (waits for the temp crawl)" if waiting["temp"] else " (waits for the last grab)"
