"""``crawler articles``: look at what was stored (docs/cli.md).

``list``, ``show``, ``search``, ``export`` and ``stats`` read the store :func:`crawler.store.open_store`
opens from the configuration (MongoDB with ``MONGO_URI``, else the SQLite files under
``CRAWLER_DATA_DIR``). Their output depends only on the documents, so it is the same on both backends.
Tables by default (readable in a terminal, plain when piped); ``--format json|jsonl|csv`` for machines.
``export`` streams: one document in memory at a time, whatever the store's size.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from crawler.cli.terminal import printable
from crawler.config import Config
from crawler.errors import CrawlerError, InputError
from crawler.store import DOCUMENT_FIELDS, Store, open_store
from crawler.store.document import parse_timestamp, parse_week

__all__ = ["ArticleNotFound", "add_commands"]

_RELATIVE_RE = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# Widest text `show` wraps to, however wide the terminal.
MAX_WRAP = 100
DEFAULT_LIMIT = 20
# JSON-valued fields, written as JSON text in a CSV cell.
_NESTED = ("fields", "extraction", "summary", "reposts")


class ArticleNotFound(CrawlerError):
    """No stored article has the URL or id asked for."""


def add_commands(commands: Any) -> None:
    """Add ``articles list|show|search|export|stats`` to the ``crawler`` parser."""
    articles = commands.add_parser(
        "articles",
        help="list, show, search, export stored articles, and count them per site and week",
        description=(
            "Read the article store: MongoDB when MONGO_URI is set, else the SQLite files under"
            " CRAWLER_DATA_DIR/articles. Same commands and output on both."
        ),
    )
    actions = articles.add_subparsers(dest="articles_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="stored articles, newest first")
    _add_filters(listing, limit=DEFAULT_LIMIT)
    _add_format(listing, ("table", "json", "jsonl", "csv"))
    listing.set_defaults(handler=run_list)

    show = actions.add_parser("show", help="one article: every field, the text wrapped")
    show.add_argument("article", metavar="URL|ID", help="the article's URL, or its 16-digit id")
    _add_format(show, ("text", "json"))
    show.set_defaults(handler=run_show)

    search = actions.add_parser(
        "search",
        help='articles whose title or body has every word (or "phrase"), newest first',
        description=(
            'Full-text search of titles and bodies: every word or "quoted phrase" must appear (whole'
            " words; Chinese anywhere), case ignored. MongoDB's text index or SQLite's FTS5 finds them."
        ),
    )
    search.add_argument("text", help='words and "phrases" to look for')
    search.add_argument("--site", help="one site's articles")
    search.add_argument("--week", type=_week, help="one week's articles: 2026w47")
    search.add_argument(
        "--limit", type=_count, default=DEFAULT_LIMIT, help=f"at most N (default {DEFAULT_LIMIT})"
    )
    _add_format(search, ("table", "json", "jsonl", "csv"))
    search.set_defaults(handler=run_search)

    export = actions.add_parser(
        "export",
        help="every matching article, streamed as JSON lines or CSV",
        description="Stream articles (oldest first) as JSON lines or CSV, in constant memory.",
    )
    _add_filters(export, limit=None)
    _add_format(export, ("jsonl", "csv"))
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE (made complete, then renamed) instead of stdout"
    )
    export.set_defaults(handler=run_export)

    stats = actions.add_parser("stats", help="articles, reposts and qRead bodies per site and week")
    _add_format(stats, ("table", "json"))
    stats.set_defaults(handler=run_stats)


def _add_filters(parser: argparse.ArgumentParser, *, limit: int | None) -> None:
    parser.add_argument("--site", help="one site's articles")
    parser.add_argument("--week", type=_week, help="one week's articles: 2026w47")
    parser.add_argument(
        "--since", type=_moment, help="first seen at or after: 2026-11-20, 2026-11-20T08:00Z or 24h, 7d"
    )
    parser.add_argument("--until", type=_moment, help="first seen before (same forms as --since)")
    parser.add_argument(
        "--limit",
        type=_count,
        default=limit,
        help=f"at most N articles (default {'all' if limit is None else limit})",
    )


def _add_format(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument(
        "--format", choices=formats, default=formats[0], help=f"output format (default {formats[0]})"
    )


def _week(value: str) -> str:
    try:
        parse_week(value)
    except CrawlerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _moment(value: str) -> datetime:
    relative = _RELATIVE_RE.match(value.strip())
    if relative is not None:
        return datetime.now(UTC) - timedelta(**{_UNITS[relative[2]]: int(relative[1])})
    text = value.strip().replace("Z", "+00:00") if value.strip().endswith("Z") else value.strip()
    try:
        return parse_timestamp(text, "time")
    except CrawlerError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a time: expected 2026-11-20, 2026-11-20T08:00Z, or 30m, 24h, 7d, 2w ago"
        ) from None


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a count: expected a whole number, 0 or more")
    return int(value)


@contextmanager
def _store() -> Iterator[Store]:
    store = open_store(Config.from_env().values())
    try:
        yield store
    finally:
        store.close()


# --- list and search ----------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    with _store() as store:
        documents = store.iter_articles(
            site=args.site, week=args.week, since=args.since, until=args.until, limit=args.limit
        )
        _print_documents(documents, args.format, title="Articles, newest first", limit=args.limit)
    return 0


def run_search(args: argparse.Namespace) -> int:
    with _store() as store:
        documents = store.search(args.text, site=args.site, week=args.week, limit=args.limit)
        _print_documents(
            documents, args.format, title=f"Articles with {args.text}, newest first", limit=args.limit
        )
    return 0


def _print_documents(
    documents: Iterable[dict[str, Any]], form: str, *, title: str, limit: int | None
) -> None:
    if form != "table":
        _write_documents(documents, form, sys.stdout)
        return
    table = Table(title=title, title_justify="left")
    for column, style in (
        ("id", "dim"),
        ("first seen", ""),
        ("site", "cyan"),
        ("published", ""),
        ("title", "bold"),
    ):
        table.add_column(column, style=style or None, overflow="fold")
    rows = 0
    for document in documents:
        table.add_row(
            document["id"],
            document["first_seen"][:16].replace("T", " "),
            document["site"],
            str(document.get("published") or "")[:10],
            printable(document.get("title") or "(no title)"),
        )
        rows += 1
    console = _console()
    if rows:
        console.print(table)
    more = " (the first ones: --limit N shows more)" if limit is not None and rows == limit else ""
    console.print(f"{rows} article{'s' if rows != 1 else ''}{more}")


# --- show -----------------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace) -> int:
    with _store() as store:
        document = store.get(args.article)
        note = None
        if document is None:
            document = store.original_of(args.article)
            note = f"{args.article} is a repost of this article (it is recorded here, not stored again)"
    if document is None:
        raise ArticleNotFound(
            f"no stored article has the URL or id {args.article!r}: see `crawler articles list` or `search`"
        )
    if args.format == "json":
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        return 0
    width = min(shutil.get_terminal_size((MAX_WRAP, 24)).columns, MAX_WRAP)
    lines = [] if note is None else [note, ""]
    for name in DOCUMENT_FIELDS:
        if name in {"body", "summary", "reposts", "fields", "extraction"}:
            continue
        lines.append(
            f"{name + ':':<14}{printable(str(document[name] if document[name] is not None else '-'))}"
        )
    for name, value in sorted((document.get("fields") or {}).items()):
        lines.append(f"{'fields.' + name + ':':<14}{printable(str(value if value is not None else '-'))}")
    extraction = document.get("extraction") or {}
    if extraction:
        lines.append(
            f"{'extraction:':<14}body from {extraction.get('body_from')}"
            + (f" ({extraction['algorithm']})" if extraction.get("algorithm") else "")
            + f", {extraction.get('body_chars')} characters"
        )
    for length, text in sorted((document.get("summary") or {}).items(), key=lambda pair: int(pair[0])):
        lines.append("")
        lines.append(f"summary, {length} sentence{'s' if length != '1' else ''}:")
        lines.extend(textwrap.wrap(printable(text), width, initial_indent="  ", subsequent_indent="  "))
    reposts = document.get("reposts") or []
    if reposts:
        lines.append("")
        lines.append(f"reposts ({len(reposts)}):")
        lines.extend(
            f"  {repost['fetched_at'][:16].replace('T', ' ')}  {repost['site']}"
            f"  {printable(repost['url'])}  ({repost['match']}, {repost['distance']} bits)"
            for repost in reposts
        )
    lines.append("")
    lines.append("body:")
    for paragraph in (document.get("body") or "").split("\n\n"):
        lines.extend(textwrap.wrap(printable(paragraph), width) or [""])
        lines.append("")
    sys.stdout.write("\n".join(lines).rstrip("\n") + "\n")
    return 0


# --- export ---------------------------------------------------------------------------------------------


def run_export(args: argparse.Namespace) -> int:
    with _store() as store:
        documents = store.iter_articles(
            site=args.site,
            week=args.week,
            since=args.since,
            until=args.until,
            newest_first=False,
            limit=args.limit,
        )
        if args.output is None:
            count = _write_documents(documents, args.format, sys.stdout)
        else:
            target = Path(args.output)
            partial = target.with_name(target.name + ".part")
            try:
                with partial.open("w", encoding="utf-8", newline="") as handle:
                    count = _write_documents(documents, args.format, handle)
                partial.replace(target)
            except OSError as exc:
                raise InputError(f"cannot write the export to {target}: {exc}") from exc
    sys.stderr.write(f"exported {count} article{'s' if count != 1 else ''}\n")
    return 0


def _write_documents(documents: Iterable[dict[str, Any]], form: str, out: IO[str]) -> int:
    """Write ``documents`` one at a time as ``json`` (an array), ``jsonl`` or ``csv``; returns how many."""
    count = 0
    if form == "csv":
        writer = csv.writer(out)
        writer.writerow(DOCUMENT_FIELDS)
        for document in documents:
            writer.writerow(
                [
                    json.dumps(document[name], ensure_ascii=False, sort_keys=True)
                    if name in _NESTED
                    else ("" if document[name] is None else document[name])
                    for name in DOCUMENT_FIELDS
                ]
            )
            count += 1
        return count
    if form == "json":
        out.write("[")
    for document in documents:
        text = json.dumps(document, ensure_ascii=False)
        if form == "json":
            out.write(("\n  " if count == 0 else ",\n  ") + text)
        else:
            out.write(text + "\n")
        count += 1
    if form == "json":
        out.write("\n]\n" if count else "]\n")
    return count


# --- stats ----------------------------------------------------------------------------------------------


def run_stats(args: argparse.Namespace) -> int:
    with _store() as store:
        rows = store.stats()
    totals = {key: sum(int(row[key]) for row in rows) for key in ("articles", "reposts", "qread")}
    if args.format == "json":
        sys.stdout.write(json.dumps({"weeks": rows, "total": totals}, ensure_ascii=False, indent=2) + "\n")
        return 0
    table = Table(title="Stored articles per week and site", title_justify="left")
    table.add_column("week")
    table.add_column("site", style="cyan")
    for column in ("articles", "reposts", "qRead bodies"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(row["week"], row["site"], str(row["articles"]), str(row["reposts"]), str(row["qread"]))
    table.add_section()
    table.add_row(
        "total", "", str(totals["articles"]), str(totals["reposts"]), str(totals["qread"]), style="bold"
    )
    _console().print(table)
    return 0


def _console() -> Console:
    """Rich output on a terminal; plain text, 100 columns wide, when piped (the same on every machine)."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=MAX_WRAP, color_system=None, force_terminal=False, soft_wrap=False)
