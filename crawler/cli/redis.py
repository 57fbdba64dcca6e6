"""``crawler redis repair``: mend the embedded Redis's append-only file when the server cannot start with
it (:meth:`crawler.redisio.embedded.EmbeddedRedis.repair`)."""

from __future__ import annotations

import argparse

from crawler.cli.options import data_folder
from crawler.commandline import suggest
from crawler.config import Config
from crawler.redisio.embedded import EmbeddedRedis

__all__ = ["run_repair"]


def run_repair(args: argparse.Namespace) -> int:
    repair = EmbeddedRedis(data_folder(Config.from_env().data_dir)).repair()
    if repair.backup is None:
        print(f"{repair.path} is not damaged ({repair.size} bytes): nothing was changed")
        return 0
    print(
        f"mended {repair.path}: cut the last {repair.cut} of its {repair.size} bytes, from the damage at"
        f" byte {repair.kept} on (the writes they held are lost: requests queued, URLs marked seen,"
        f" counters); the file as it was is in {repair.backup}"
    )
    print(
        "next: run the command that stopped again (a crawl that still runs starts the server by itself);"
        f" `{suggest('status')}` shows what the queue holds; remove {repair.backup} once all is well"
    )
    return 0
