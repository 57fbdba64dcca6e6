"""``crawler dead list|requeue|drop``: the requests that ended in an error, with the reason
(:mod:`crawler.deadletters`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from crawler.cli.crawl import redis_for
from crawler.cli.terminal import cut
from crawler.config import Config
from crawler.deadletters import DeadLetter, dead_letters, requeue
from crawler.errors import InputError
from crawler.redisio.connection import connect
from crawler.redisio.queue import LeasedQueue

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add ``dead list``, ``dead requeue`` and ``dead drop`` to the ``crawler`` parser."""
    dead = commands.add_parser(
        "dead",
        help="requests that ended in an error (after their retries): list, requeue or drop them",
        description=(
            "Dead letters: every request that ended in an error (an HTTP error status, the network, a"
            " timeout, after its retries; an article the store kept refusing; a queue entry that was no"
            " request), with the reason. Requeue them once the cause is fixed, or drop them."
        ),
    )
    actions = dead.add_subparsers(dest="dead_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the dead letters, oldest first")
    _add_selection(listing, ids=False)
    listing.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    listing.set_defaults(handler=run_list)
    back = actions.add_parser("requeue", help="put dead letters back in the queue")
    _add_selection(back, ids=True)
    back.set_defaults(handler=run_requeue)
    drop = actions.add_parser("drop", help="forget dead letters for good")
    _add_selection(drop, ids=True)
    drop.set_defaults(handler=run_drop)


def _add_selection(parser: argparse.ArgumentParser, *, ids: bool) -> None:
    parser.add_argument("--site", help="one site's dead letters")
    parser.add_argument("--job", help="one job's dead letters (the id `crawler temp` printed)")
    if ids:
        parser.add_argument("ids", nargs="*", metavar="ID", help="dead letters by id (`crawler dead list`)")
        parser.add_argument(
            "--all", action="store_true", help="every dead letter (with --site/--job: theirs)"
        )


@contextmanager
def _queue() -> Iterator[LeasedQueue]:
    config = Config.from_env()
    with redis_for(config) as url:
        server = connect(url)
        try:
            yield LeasedQueue(server, config.keys)
        finally:
            server.close()


def _selected(queue: LeasedQueue, args: argparse.Namespace) -> list[DeadLetter]:
    letters = [
        letter
        for letter in dead_letters(queue)
        if (args.site is None or letter.site == args.site) and (args.job is None or letter.job == args.job)
    ]
    ids = getattr(args, "ids", None)
    if ids is None:
        return letters
    if ids:
        known = {letter.id: letter for letter in letters}
        unknown = [given for given in ids if given not in known]
        if unknown:
            among = " of the site or job given" if args.site or args.job else ""
            raise InputError(
                f"no dead letter {unknown[0]!r}{among}: expected an id that `crawler dead list` shows"
            )
        return [known[given] for given in ids]
    if not (args.all or args.site or args.job):
        raise InputError("say which dead letters: IDs, --site S, --job J, or --all")
    return letters


def run_list(args: argparse.Namespace) -> int:
    with _queue() as queue:
        letters = _selected(queue, args)
    if args.format == "json":
        sys.stdout.write(json.dumps([letter.document() for letter in letters], ensure_ascii=False, indent=2))
        sys.stdout.write("\n")
        return 0
    console = Console() if sys.stdout.isatty() else Console(width=160, color_system=None)
    table = Table(title=f"{len(letters)} dead letter{'s' if len(letters) != 1 else ''}", title_justify="left")
    for column in ("id", "when", "site", "url", "reason", "job"):
        table.add_column(column, overflow="fold")
    for letter in letters:
        when = "-" if letter.at is None else datetime.fromtimestamp(letter.at, UTC).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            letter.id,
            when,
            letter.site or "-",
            cut(letter.url or "(no request)", 80),
            cut(letter.reason, 100),
            letter.job or "-",
        )
    console.print(table)
    return 0


def run_requeue(args: argparse.Namespace) -> int:
    with _queue() as queue:
        back, refused = requeue(queue, _selected(queue, args))
    print(f"requeued {back} dead letter{'s' if back != 1 else ''}")
    for letter in refused:
        print(f"not requeued {letter.id}: no request ({cut(letter.reason, 100)}); drop it", file=sys.stderr)
    return 0


def run_drop(args: argparse.Namespace) -> int:
    with _queue() as queue:
        dropped = queue.drop_dead(letter.member for letter in _selected(queue, args))
    print(f"dropped {dropped} dead letter{'s' if dropped != 1 else ''}")
    return 0
