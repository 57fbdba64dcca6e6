"""The crawl commands of ``crawler``: ``demo``, ``temp``, ``worker``, ``schedule`` and ``run``
(docs/cli.md)."""

from __future__ import annotations

import argparse
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from scrapy.settings import Settings

from crawler.cli.options import add_set_option, settings_from
from crawler.cli.terminal import cut
from crawler.config import Config
from crawler.demo.sites import DEMO_ORIGIN, DEMO_PORT
from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.connection import connect, resolve_redis_url
from crawler.requests import JobCounts, enqueue_job
from crawler.rules import Rule, load_rule, load_rules
from crawler.schedule.grabs import GrabScheduler
from crawler.store import open_store
from crawler.worker.process import run_worker

logger = logging.getLogger(__name__)


def add_commands(commands: Any) -> None:
    """Add ``demo``, ``temp`` and ``worker`` to the ``crawler`` parser."""
    demo = commands.add_parser(
        "demo",
        help="serve the bundled demo news sites on 127.0.0.1, crawl them, print what was stored",
        description=(
            "The main job on embedded defaults: serve the demo news sites (3 sites, 150 articles, one"
            " in GBK) on 127.0.0.1, crawl them with rules/demo-*.yaml through the embedded Redis queue,"
            " store the articles in SQLite under CRAWLER_DATA_DIR/demo, and print what was stored."
        ),
    )
    demo.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"port of the demo sites (default {DEMO_PORT}, or any free one when that is taken)",
    )
    demo.add_argument(
        "--keep", action="store_true", help="keep the previous demo's data instead of starting anew"
    )
    demo.set_defaults(handler=run_demo)

    temp = commands.add_parser(
        "temp",
        help="crawl one site once, now: progress, then a summary",
        description=(
            "Crawl one site once, now: its index pages (or the --url pages alone, as article pages),"
            " the new articles they link to, with a progress bar; exits when the site's work is done."
        ),
    )
    temp.add_argument("site", help="site id (the rule file's name without .yaml)")
    temp.add_argument("--url", action="append", default=[], metavar="U", help="crawl this article page only")
    add_set_option(temp)
    temp.set_defaults(handler=run_temp)

    worker = commands.add_parser(
        "worker",
        help="one worker of the shared queue (run N of them, on any machine), until Ctrl-C",
        description="Take requests from the shared queue and crawl them, until Ctrl-C.",
    )
    worker.add_argument(
        "--sites", default="", help="comma-separated site ids this worker serves (default all)"
    )
    add_set_option(worker)
    worker.set_defaults(handler=run_worker_command)

    schedule = commands.add_parser(
        "schedule",
        help="the scheduler alone: queue each rule's regular grabs when due, until Ctrl-C",
        description=(
            "Queue each rule's index pages when its period (schedule.every or schedule.cron) is due, exactly"
            " once per period however many schedulers run (one is active at a time: a Redis lock)."
        ),
    )
    schedule.add_argument("--once", action="store_true", help="queue the grabs due now, then exit")
    add_set_option(schedule)
    schedule.set_defaults(handler=run_schedule_command)

    run = commands.add_parser(
        "run",
        help="scheduler and a worker on this machine, on embedded defaults, until Ctrl-C",
        description=(
            "The service on one machine: the scheduler and a worker in this process (embedded Redis and"
            " SQLite unless REDIS_URL and MONGO_URI say otherwise), until Ctrl-C; started again, it goes on"
            " where it stopped."
        ),
    )
    add_set_option(run)
    run.set_defaults(handler=run_service)


@contextmanager
def redis_for(config: Config) -> Iterator[str]:
    """The configuration's Redis: REDIS_URL, or the embedded server under its data folder (stopped at the
    end if this process started it)."""
    url, embedded = resolve_redis_url(config.redis_url, config.data_dir)
    try:
        yield url
    finally:
        if embedded is not None:
            embedded.close()


# --- crawler temp -------------------------------------------------------------------------------------


def run_temp(args: argparse.Namespace) -> int:
    config = Config.from_env()
    path = config.rules_dir / f"{args.site}.yaml"
    if not path.is_file():
        raise InputError(f"no rule for site {args.site!r}: {path} does not exist (see `crawler rules check`)")
    rule = load_rule(path)
    with redis_for(config) as url:
        settings = _crawl_settings(config, url, settings_from(args.set))
        job, counts = _crawl_job(
            settings, url, [rule], article_urls=args.url, title=f"temp crawl of {rule.site}"
        )
    _print_summary(job, counts)
    return 0 if counts.errors == 0 or counts.stored > 0 else 1


# --- crawler worker -----------------------------------------------------------------------------------


def run_worker_command(args: argparse.Namespace) -> int:
    config = Config.from_env()
    sites = [site for site in args.sites.split(",") if site]
    with redis_for(config) as url:
        settings = _crawl_settings(config, url, {"LOG_LEVEL": "INFO", **settings_from(args.set)})
        run_worker(settings, sites=sites)
    return 0


# --- crawler schedule and crawler run ----------------------------------------------------------------


def _grab_scheduler(settings: Any, url: str) -> GrabScheduler:
    return GrabScheduler(
        connect(url),
        Keys(settings["REDIS_KEY_PREFIX"]),
        lease_seconds=settings.getfloat("LEASE_SECONDS"),
        yield_boost=settings.getint("SCHEDULE_YIELD_BOOST"),
    )


def _rule_loader(folder: Path) -> Callable[[], list[Rule]]:
    """Reads the rules folder afresh (edits take effect at the next tick); broken files are logged once."""
    reported: set[str] = set()

    def load() -> list[Rule]:
        ruleset = load_rules(folder)
        for error in ruleset.errors:
            if str(error) not in reported:
                reported.add(str(error))
                logger.error("rule error, site not scheduled: %s", error)
        return list(ruleset.rules.values())

    return load


def run_schedule_command(args: argparse.Namespace) -> int:
    config = Config.from_env()
    with redis_for(config) as url:
        settings = _crawl_settings(config, url, {"LOG_LEVEL": "INFO", **settings_from(args.set)})
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        scheduler = _grab_scheduler(settings, url)
        load = _rule_loader(config.rules_dir)
        if args.once:
            for seeded in scheduler.tick(load()):
                print(f"queued the grab of {seeded.site} as job {seeded.job}")
            return 0
        stop = threading.Event()
        try:
            scheduler.run(
                load,
                stop,
                tick_seconds=settings.getfloat("SCHEDULE_TICK_SECONDS"),
                leader_seconds=settings.getfloat("SCHEDULE_LEADER_SECONDS"),
            )
        except KeyboardInterrupt:
            stop.set()
    return 0


def run_service(args: argparse.Namespace) -> int:
    config = Config.from_env()
    with redis_for(config) as url:
        settings = _crawl_settings(config, url, {"LOG_LEVEL": "INFO", **settings_from(args.set)})
        scheduler = _grab_scheduler(settings, url)
        stop = threading.Event()
        thread = threading.Thread(
            target=scheduler.run,
            args=(_rule_loader(config.rules_dir), stop),
            kwargs={
                "tick_seconds": settings.getfloat("SCHEDULE_TICK_SECONDS"),
                "leader_seconds": settings.getfloat("SCHEDULE_LEADER_SECONDS"),
            },
            name="scheduler",
            daemon=True,
        )
        thread.start()
        try:
            run_worker(settings)
        finally:
            stop.set()
            thread.join(timeout=10)
    return 0


# --- crawler demo -------------------------------------------------------------------------------------


def run_demo(args: argparse.Namespace) -> int:
    from crawler.demo.server import DemoError, DemoServer  # noqa: PLC0415 - loaded for the demo only

    console = Console()
    server = DemoServer(port=DEMO_PORT if args.port is None else args.port)
    try:
        server.start()
    except DemoError:
        if args.port is not None:
            raise
        console.print(f"Port {DEMO_PORT} is taken: the demo sites use a free port instead.")
        server = DemoServer(port=0).start()
    with server:
        config = Config.from_env()
        rules_dir = config.rules_dir
        directory = config.data_dir / "demo"
        if directory.exists() and not args.keep:
            shutil.rmtree(directory)
        demo_rules = directory / "rules"
        demo_rules.mkdir(parents=True, exist_ok=True)
        # The demo sites are on 127.0.0.1.
        config = config.replace(data_dir=directory, rules_dir=demo_rules, allow_private_networks=True)
        for path in sorted(rules_dir.glob("demo-*.yaml")):
            text = path.read_text(encoding="utf-8").replace(DEMO_ORIGIN, server.origin)
            (demo_rules / path.name).write_text(text, encoding="utf-8")
        ruleset = load_rules(demo_rules)
        for error in ruleset.errors:
            console.print(f"[red]rule error[/red] {error}")
        if not ruleset.rules:
            raise InputError(f"no demo rules (rules/demo-*.yaml) in {rules_dir}")
        console.print(f"Demo sites on {server.origin}: {', '.join(sorted(ruleset.rules))}")
        with redis_for(config) as url:
            settings = _crawl_settings(config, url, {})
            job, counts = _crawl_job(settings, url, ruleset.rules.values(), title="demo crawl")
    _print_summary(job, counts)
    _print_stored(console, directory)
    return 0


# --- shared -------------------------------------------------------------------------------------------


def _crawl_settings(config: Config, redis_url: str, overrides: dict[str, Any]) -> Settings:
    """The crawl's settings: the configuration, the Redis in use, WARNING logs, then ``overrides``."""
    # Scrapy logs through its own root handler, at LOG_LEVEL: the command line's handler steps aside.
    for handler in list(logging.root.handlers):
        logging.root.removeHandler(handler)
    return config.replace(redis_url=redis_url).settings({"LOG_LEVEL": "WARNING", **overrides})


def _crawl_job(
    settings: Any, url: str, rules: Any, *, article_urls: list[str] | None = None, title: str
) -> tuple[str, JobCounts]:
    server = connect(url)
    keys = Keys(settings["REDIS_KEY_PREFIX"])
    rules = list(rules)
    job = enqueue_job(
        server,
        keys,
        rules,
        article_urls=article_urls or (),
        lease_seconds=settings.getfloat("LEASE_SECONDS"),
        kind="temp",
        boost=settings.getint("SCHEDULE_TEMP_BOOST"),
    )
    started = time.monotonic()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} pages"),
        TextColumn(
            "stored {task.fields[stored]}  skipped {task.fields[skipped]}  errors {task.fields[errors]}"
        ),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        bar = progress.add_task(title, total=None, stored=0, skipped=0, errors=0)

        def tick() -> None:
            try:
                counts = JobCounts.read(server, keys, job)
            except redis.RedisError:
                return  # Redis away for a moment: the worker says so in the log; the bar waits
            progress.update(
                bar,
                completed=counts.fetched,
                total=counts.fetched + counts.pending,
                stored=counts.stored,
                skipped=counts.skipped,
                errors=counts.errors,
            )

        # Every rule: on a running service this worker takes any request of the shared queue, and helps.
        run_worker(settings, job=job, on_tick=tick)
        tick()
    counts = JobCounts.read(server, keys, job)
    logger.info("job %s done in %.1f s", job, time.monotonic() - started)
    return job, counts


def _print_summary(job: str, counts: JobCounts) -> None:
    print(
        f"fetched {counts.fetched} pages, stored {counts.stored} articles,"
        f" skipped {counts.skipped} (already seen or refused), errors {counts.errors}"
    )
    if counts.errors:
        print(f"the errors are dead letters, each with its reason: `crawler dead list --job {job}`")


def _print_stored(console: Console, directory: Path, sample: int = 3) -> None:
    """Per site: articles stored, where their bodies came from, and the newest few."""
    store = open_store({"CRAWLER_DATA_DIR": str(directory)})
    try:
        articles = list(store.iter_articles())
        table = Table(title=f"Stored in {directory}")
        for column in ("site", "articles", "body by rule", "body by qRead", "newest"):
            table.add_column(column)
        for site in sorted({str(article["site"]) for article in articles}):
            mine = [article for article in articles if article["site"] == site]
            from_qread = sum(1 for a in mine if (a.get("extraction") or {}).get("body_from") == "qread")
            newest = sorted(mine, key=lambda a: str(a.get("published") or ""), reverse=True)[:sample]
            table.add_row(
                site,
                str(len(mine)),
                str(len(mine) - from_qread),
                str(from_qread),
                "\n".join(
                    f"{a.get('published') or '?'}  {cut(str(a.get('title') or ''), 60)}" for a in newest
                ),
            )
        console.print(table)
        reposts = sum(int(row["reposts"]) for row in store.stats())
        console.print(
            f"{len(articles)} articles stored; {reposts} reposts (the same article under another URL)"
            " recorded against their originals instead of stored twice: `crawler articles stats`."
        )
    finally:
        store.close()
