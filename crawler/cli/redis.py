"""``crawler redis repair``: mend the embedded Redis's append-only file when the server cannot start with
it (:meth:`crawler.redisio.embedded.EmbeddedRedis.repair`)."""

from __future__ import annotations

import argparse

from crawler.cli.options import data_folder
from crawler.commandline import suggest
from crawler.config import Config
from crawler.errors import redacted
from crawler.redisio.embedded import EmbeddedRedis, RedisUnavailableError

__all__ = ["run_repair"]


def run_repair(args: argparse.Namespace) -> int:
    config = Config.from_env()
    embedded = EmbeddedRedis(data_folder(config.data_dir))
    if config.redis_url is not None and not embedded.aof_path.is_file():
        raise RedisUnavailableError(
            f"no append-only file {embedded.aof_path}: REDIS_URL is set ({redacted(config.redis_url)}), so"
            " the crawls' queue is in that server, not in an embedded Redis of this data folder; this command"
            " mends the embedded server's file alone: mend that server's append-only file with its own"
            " redis-check-aof --fix"
        )
    repair = embedded.repair()
    if repair.backup is None:
        print(f"{repair.path} is not damaged ({repair.size:,} bytes): nothing was changed")
        return 0
    print(
        f"mended {repair.path}: cut the last {repair.cut:,} of its {repair.size:,} bytes, from the damage at"
        f" byte {repair.kept:,} on (the writes they held are lost: requests queued, URLs marked seen,"
        f" counters); the file as it was is in {repair.backup}"
    )
    print(
        "next: run the command that stopped again (a crawl that still runs starts the server by itself);"
        f" `{suggest('status')}` shows what the queue holds; remove {repair.backup} once all is well"
    )
    return 0
