"""``crawler status``: what the service is doing, from the counters in Redis (never from logs).

:func:`build_status` gathers it as one JSON-ready mapping (``--format json`` prints it as is); the
default output is a table per part. Sources:

- the queue (``crawler:queue``, ``crawler:leases``), the workers' heartbeats (``crawler:workers``,
  :mod:`crawler.heartbeat`), the active scheduler (``crawler:scheduler:leader``);
- per site, the grab state (``crawler:grab:<site>``, :mod:`crawler.grabs` and :mod:`crawler.revisit`),
  the last grab's job counters, and the hourly counters (``crawler:stats:<site>:<hour>``,
  :mod:`crawler.sitestats`) of the last 24 hours and of the 7 days before.

A site **needs attention** when, in the last 24 hours, it banned the crawler (403/429 or captcha pages),
most of its requests failed, or a field of its rule stopped matching (the share of article pages where
the field's XPath found nothing rose by ``FIELD_JUMP`` over its own history); when its grab is overdue
(no scheduler is running); or when its rule file has errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import redis
from rich.console import Console
from rich.table import Table

from crawler.heartbeat import workers_key
from crawler.queue import Keys
from crawler.redisconn import connect, decoded, hash_of
from crawler.rules import Rule, RuleSet, load_rules
from crawler.sitestats import hour_key, hour_of

__all__ = ["FIELD_JUMP", "add_commands", "build_status"]

HOURS_RECENT = 24
HOURS_HISTORY = 7 * 24
# A field "stopped matching" when its missing share over the last 24 h is at least this much above its
# share in the 7 days before (a field that never matched on some pages is no news), on at least
# FIELD_MIN_PAGES pages, and most pages miss it.
FIELD_JUMP = 0.3
FIELD_MIN_PAGES = 3
# Most requests failing, on at least this many, is a site problem rather than a blip.
ERROR_MIN_REQUESTS = 3
# A grab this late (seconds past due) means no scheduler is running.
OVERDUE_SECONDS = 300
# A worker is taken for dead after this many missed heartbeats.
MISSED_BEATS = 3


def add_commands(commands: Any) -> None:
    """Add ``status`` to the ``crawler`` parser."""
    status = commands.add_parser(
        "status",
        help="queue, leases, workers, and per site: grabs, new articles, errors, bans, fields, qRead",
        description=(
            "What the service is doing, read from Redis (REDIS_URL, or the embedded server under"
            " CRAWLER_DATA_DIR): the queue, leases, workers alive and their rate, and per site the last and"
            " next grab, new articles, fetch errors, bans, fields that stopped matching, qRead fallbacks."
            " Sites that need a person's attention are marked."
        ),
    )
    status.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    status.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    from crawler.crawlcli import data_dir, redis_for, rules_dir  # noqa: PLC0415 - crawlcli imports Scrapy
    from crawler.runner import crawl_settings  # noqa: PLC0415 - the same

    prefix = str(crawl_settings({})["REDIS_KEY_PREFIX"])
    with redis_for(data_dir()) as url:
        server = connect(url)
        report = build_status(server, prefix, load_rules(rules_dir()), time.time())
    if args.format == "json":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        _print(report)
    return 0


def build_status(server: redis.Redis, prefix: str, ruleset: RuleSet, now: float) -> dict[str, Any]:
    """The status of the service at ``now`` (epoch seconds), as a JSON-ready mapping."""
    keys = Keys(prefix)
    workers = []
    for worker, raw in sorted(server.hgetall(workers_key(prefix)).items()):
        beat = json.loads(raw)
        age = now - float(beat["seen"])
        beat_limit = MISSED_BEATS * float(beat["every"])
        workers.append(
            {
                "id": decoded(worker),
                "host": beat["host"],
                "pid": beat["pid"],
                "alive": age <= beat_limit,
                "seen_seconds_ago": round(age, 1),
                "pages": beat["pages"],
                "rate_per_minute": beat["rate"],
                "sites": beat.get("sites", []),
            }
        )
    leader = server.get(f"{prefix}:scheduler:leader")
    sites = [
        _site(server, prefix, rule, now) for rule in sorted(ruleset.rules.values(), key=lambda r: r.site)
    ]
    broken = [{"file": error.file, "error": str(error)} for error in ruleset.errors]
    return {
        "now": _iso(now),
        "queue": {"queued": int(server.zcard(keys.queue)), "leased": int(server.zcard(keys.leases))},
        "scheduler": {"active": None if leader is None else decoded(leader)},
        "workers": workers,
        "workers_alive": sum(1 for worker in workers if worker["alive"]),
        "sites": sites,
        "rule_errors": broken,
        "attention": sorted(
            {site["site"] for site in sites if site["attention"]} | {b["file"] for b in broken}
        ),
    }


def _site(server: redis.Redis, prefix: str, rule: Rule, now: float) -> dict[str, Any]:
    state = hash_of(server, f"{prefix}:grab:{rule.site}")
    recent, history = _counters(server, prefix, rule.site, now)
    last_job = state.get("job")
    last_new = None
    if last_job is not None:
        stored = server.hget(Keys(prefix).job(last_job), "stored")
        last_new = int(stored or 0)
    pages = recent["fields/pages"]
    fields = []
    for name in sorted(rule.fields):
        share = recent[f"fields/missing/{name}"] / pages if pages else 0.0
        past_pages = history["fields/pages"]
        past = history[f"fields/missing/{name}"] / past_pages if past_pages else 0.0
        stopped = pages >= FIELD_MIN_PAGES and share >= 0.5 and share - past >= FIELD_JUMP
        fields.append(
            {
                "field": name,
                "missing_24h": round(share, 3),
                "missing_before": round(past, 3),
                "stopped": stopped,
            }
        )
    requests = recent["crawl/pages"] + recent["crawl/errors"] + recent["crawl/not_modified"]
    attention = []
    if recent["ban"]:
        attention.append(f"banned: {recent['ban']} refusals (403/429) or captcha pages in 24 h")
    if recent["crawl/errors"] >= ERROR_MIN_REQUESTS and recent["crawl/errors"] * 2 > requests:
        attention.append(f"fetch errors: {recent['crawl/errors']} of {requests} requests in 24 h failed")
    attention.extend(
        f"field {field['field']} stopped matching: missing on {field['missing_24h']:.0%} of pages"
        f" (before: {field['missing_before']:.0%}): the site's layout changed?"
        for field in fields
        if field["stopped"]
    )
    next_due = float(state["next"]) if "next" in state else None
    if next_due is not None and now - next_due > OVERDUE_SECONDS and (rule.every or rule.cron):
        attention.append(f"grab overdue since {_iso(next_due)}: is a scheduler running?")
    if rule.every is not None:
        every = rule.every.total_seconds()
        schedule = f"every {_span(float(state.get('interval', every)))} (rule: {_span(every)})"
    else:
        schedule = f"cron {rule.cron}" if rule.cron else "none (temp crawls only)"
    return {
        "site": rule.site,
        "schedule": schedule,
        "last_grab": _iso(float(state["last"])) if "last" in state else None,
        "next_grab": None if next_due is None else _iso(next_due),
        "grabs": int(state.get("grabs", 0)),
        "yield": round(float(state["yield"]), 3) if "yield" in state else None,
        "new_last_grab": last_new,
        "new_24h": recent["store/new"],
        "reposts_24h": recent["store/repost"],
        "pages_24h": recent["crawl/pages"],
        "not_modified_24h": recent["crawl/not_modified"],
        "errors_24h": recent["crawl/errors"],
        "bans_24h": recent["ban"],
        "qread_fallbacks_24h": recent["extract/qread_fallback"],
        "fields": fields,
        "attention": attention,
    }


def _counters(server: redis.Redis, prefix: str, site: str, now: float) -> tuple[Counter[str], Counter[str]]:
    """The site's counters summed over the last 24 hours, and over the 7 days before."""
    hours = [hour_of(now - 3600 * back) for back in range(HOURS_RECENT + HOURS_HISTORY)]
    pipe = server.pipeline(transaction=False)
    for hour in hours:
        pipe.hgetall(hour_key(prefix, site, hour))
    recent: Counter[str] = Counter()
    history: Counter[str] = Counter()
    for index, values in enumerate(pipe.execute()):
        target = recent if index < HOURS_RECENT else history
        for name, count in values.items():
            target[decoded(name)] += int(count)
    return recent, history


def _print(report: dict[str, Any]) -> None:
    console = Console() if sys.stdout.isatty() else Console(width=140, color_system=None)
    queue = report["queue"]
    console.print(
        f"[bold]{report['now']}[/bold]  queue {queue['queued']} requests, {queue['leased']} leased;"
        f" scheduler: {report['scheduler']['active'] or 'none active'};"
        f" workers alive: {report['workers_alive']} of {len(report['workers'])}"
    )
    if report["workers"]:
        workers = Table(title="Workers", title_justify="left")
        for column in ("worker", "alive", "last beat", "pages", "pages/min", "sites"):
            workers.add_column(column)
        for worker in report["workers"]:
            workers.add_row(
                worker["id"],
                "yes" if worker["alive"] else "[red]no[/red]",
                f"{worker['seen_seconds_ago']:.0f} s ago",
                str(worker["pages"]),
                f"{worker['rate_per_minute']:.1f}",
                ",".join(worker["sites"]) or "all",
            )
        console.print(workers)
    sites = Table(title="Sites (counts over the last 24 h)", title_justify="left")
    for column in (
        "site",
        "schedule",
        "last grab",
        "next grab",
        "new last/24h",
        "errors",
        "bans",
        "304s",
        "qRead",
        "attention",
    ):
        sites.add_column(column, overflow="fold")
    for site in report["sites"]:
        sites.add_row(
            site["site"],
            site["schedule"],
            (site["last_grab"] or "never")[:16].replace("T", " "),
            (site["next_grab"] or "-")[:16].replace("T", " "),
            f"{'-' if site['new_last_grab'] is None else site['new_last_grab']}/{site['new_24h']}",
            str(site["errors_24h"]),
            str(site["bans_24h"]),
            str(site["not_modified_24h"]),
            str(site["qread_fallbacks_24h"]),
            "[red]NEEDS ATTENTION[/red]\n" + "\n".join(site["attention"]) if site["attention"] else "ok",
        )
    console.print(sites)
    for broken in report["rule_errors"]:
        console.print(f"[red]NEEDS ATTENTION[/red] rule file {broken['file']}: {broken['error']}")


def _span(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
