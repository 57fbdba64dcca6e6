"""``crawler sites pause|resume SITE``: hold one site's crawling, on every machine, without editing its rule
(the pause lives in Redis: :meth:`crawler.redisio.queue.LeasedQueue.pause`)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager

from crawler.cli.crawl import redis_for
from crawler.cli.options import rules_folder
from crawler.commandline import suggest
from crawler.config import Config
from crawler.redisio.connection import connect
from crawler.redisio.queue import LeasedQueue
from crawler.rules import rule_file
from crawler.schedule.grabs import when

__all__ = ["run_pause", "run_resume"]


@contextmanager
def _queue(config: Config) -> Iterator[LeasedQueue]:
    with redis_for(config) as url:
        server = connect(url)
        try:
            yield LeasedQueue(server, config.keys)
        finally:
            server.close()


def run_pause(args: argparse.Namespace) -> int:
    config = Config.from_env()
    rule_file(rules_folder(config.rules_dir), args.site)
    with _queue(config) as queue:
        newly = queue.pause(args.site, time.time())
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
        if args.site not in queue.paused():
            rule_file(folder, args.site)
            print(f"{args.site} is not paused: nothing to resume")
            return 0
        queue.resume(args.site)
        held = queue.queued(args.site)
        due = queue.server.hget(config.keys.grab(args.site), "next")
    if due is None:
        grab = "its first regular grab, if its rule has a schedule, is queued at the scheduler's next tick"
    elif float(due) <= time.time():
        grab = "its regular grab, due since the pause, is queued at the scheduler's next tick"
    else:
        grab = f"its next regular grab is due at {when(float(due))}"
    print(f"resumed {args.site}: workers take its queued requests again ({held:,} now); {grab}")
    return 0
