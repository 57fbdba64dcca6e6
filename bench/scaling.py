"""Scaling bench: one, two or more ``crawler worker`` processes against one Redis, on one site.

Run from the repo root::

    .venv/bin/python bench/scaling.py                          # 10,000 articles: 1 worker, then 2
    .venv/bin/python bench/scaling.py --workers 1 --articles 100000   # a worker's peak RSS at 100k
    .venv/bin/python bench/scaling.py --repeat 3 -s TEXT_PROCESSES=0

    --articles N      article pages of the site (default 10000)
    --site KIND       synthetic (default) or real: the sites of bench/crawl.py
    --workers 1,2     the worker counts to run, in turn (default 1,2)
    --repeat N        run each count N times, in turn; the table shows each count's median run
    -s NAME=VALUE     a setting of every worker (repeatable)

Each run has its own data folder and embedded Redis: the parent enqueues the site's job as ``crawler temp``
does, then starts the workers at once, each in a fresh process running ``run_worker(settings, job=...)``
as ``crawler worker`` does (its text pool included), and waits for all of them. The site's rule allows 32
downloads at once per worker (its ``concurrency`` holds for every worker together). pages/s = responses of
all the workers / seconds from the first worker's first request to the last worker's end (bench/crawl.py's
BenchMeter in each worker, its moments in epoch seconds). CPU: user + system seconds of the workers and
their helper processes (reaped children of this process) and of the Redis server, per 1,000 stored
articles. Peak RSS: each worker process's own ``VmHWM``, the largest one
shown. Redis memory: ``used_memory`` at the end, with every article stored and nothing queued. Articles
stored + reposts (articles the duplicate pass recorded as another's repost: the synthetic site builds its
articles from a pool of 1,000 paragraphs, and a few of them share most of theirs) = the site's articles.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.crawl import (
    COMMON_SETTINGS,
    CONCURRENCY,
    SITE_ID,
    SITES,
    BenchMeter,
    BenchSite,
    SiteServer,
    _peak_rss_kb,
    _redis_info,
    _settings_from,
    make_site,
    median_run,
    real_rule_yaml,
)
from crawler import settings as project_settings

# A worker runs this bench's main() from a `-c` command, not this file, as bench/crawl.py's crawls do
# (CHILD_MAIN there): the text processes it spawns have no file to run again.
WORKER_MAIN = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r});"
    " from bench.scaling import main; sys.exit(main())"
)

DEFAULT_ARTICLES = 10_000


def _rule_text(site_kind: str, articles: int, origin: str, workers: int) -> str:
    site = make_site(site_kind, articles)
    text = site.rule_yaml(origin) if isinstance(site, BenchSite) else real_rule_yaml(site, origin)
    concurrency = f"concurrency: {CONCURRENCY}"
    if concurrency not in text:
        raise SystemExit(f"the bench rule has no {concurrency!r} line to scale")
    return text.replace(concurrency, f"concurrency: {CONCURRENCY * workers}")


def _config(workdir: Path, redis_url: str | None = None) -> Any:
    from crawler.config import Config  # noqa: PLC0415 - the parent imports the crawler late

    config = Config(data_dir=workdir / "data", rules_dir=workdir / "rules", allow_private_networks=True)
    return config if redis_url is None else config.replace(redis_url=redis_url)


def worker(workdir: Path, redis_url: str, job: str, result: Path, settings: Mapping[str, Any]) -> int:
    """One worker in this process until the job is done; its stats as JSON in ``result``."""
    from crawler.worker.process import run_worker  # noqa: PLC0415

    os.environ["CRAWLER_ALLOW_PRIVATE_NETWORKS"] = "1"
    # The bench's extension beside the project's (a crawl's EXTENSIONS replace the project's whole).
    extensions: dict[Any, int | None] = {**project_settings.EXTENSIONS, BenchMeter: 0}
    merged = {**COMMON_SETTINGS, **settings, "EXTENSIONS": extensions}
    stats = run_worker(_config(workdir, redis_url).settings(merged), job=job, sites=[SITE_ID])
    outcome = {
        "first": stats["bench/started_at"],
        "end": stats["bench/ended_at"],
        "responses": stats["bench/responses"],
        "peak_rss_kb": _peak_rss_kb(),
        "errors": stats.get("log_count/ERROR", 0),
    }
    result.write_text(json.dumps(outcome), encoding="utf-8")
    return 0


@dataclass(frozen=True, slots=True)
class Run:
    workers: int
    responses: int
    seconds: float
    stored: int
    reposts: int
    cpu_workers: float
    cpu_redis: float
    peak_rss_kb: int
    redis_memory: int
    errors: int

    @property
    def rate(self) -> float:
        return self.responses / self.seconds if self.seconds else 0.0

    @property
    def cpu_per_1000(self) -> float:
        return 1000 * (self.cpu_workers + self.cpu_redis) / self.stored if self.stored else 0.0


def run(
    workers: int, site_kind: str, articles: int, origin: str, folder: Path, settings: Mapping[str, Any]
) -> Run:
    """One run of ``workers`` workers on a fresh data folder and Redis."""
    from crawler.cli.crawl import redis_for  # noqa: PLC0415
    from crawler.keys import Keys  # noqa: PLC0415
    from crawler.redisio.connection import connect  # noqa: PLC0415
    from crawler.requests import enqueue_job  # noqa: PLC0415
    from crawler.rules import load_rule  # noqa: PLC0415
    from crawler.store import open_store  # noqa: PLC0415

    workdir = Path(tempfile.mkdtemp(prefix=f"workers-{workers}-", dir=folder))
    rules = workdir / "rules"
    rules.mkdir()
    path = rules / f"{SITE_ID}.yaml"
    path.write_text(_rule_text(site_kind, articles, origin, workers), encoding="utf-8")
    rule = load_rule(path)
    config = _config(workdir)
    with redis_for(config) as url:
        settings_of_run = config.replace(redis_url=url).settings({**COMMON_SETTINGS, **settings})
        server = connect(url)
        keys = Keys(settings_of_run["REDIS_KEY_PREFIX"])
        job = enqueue_job(server, keys, [rule], lease_seconds=settings_of_run.getfloat("LEASE_SECONDS"))
        before = _redis_info(url)
        cpu_before = _children_cpu()
        results = [workdir / f"worker-{number}.json" for number in range(workers)]
        logs = [(workdir / f"worker-{number}.log").open("wb") for number in range(workers)]
        env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "MONGO_URI"}}
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WORKER_MAIN,
                    "--worker",
                    "--workdir",
                    str(workdir),
                    "--redis-url",
                    url,
                    "--job",
                    job,
                    "--result",
                    str(result),
                    "--settings-json",
                    json.dumps(dict(settings)),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
            for result, log in zip(results, logs, strict=True)
        ]
        codes = [process.wait() for process in processes]
        for log in logs:
            log.close()
        cpu_workers = _children_cpu() - cpu_before
        after = _redis_info(url)
        server.close()
    for number, code in enumerate(codes):
        if code != 0 or not results[number].exists():
            log_path = workdir / f"worker-{number}.log"
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
            raise SystemExit(f"worker {number} of {workers} failed (exit code {code}); {log_path}:\n{tail}")
    outcomes = [json.loads(result.read_text(encoding="utf-8")) for result in results]
    store = open_store(config.settings({}))
    try:
        stored = store.count(site=rule.site)
        reposts = sum(row["reposts"] for row in store.stats() if row["site"] == rule.site)
    finally:
        store.close()
    return Run(
        workers=workers,
        responses=sum(outcome["responses"] for outcome in outcomes),
        seconds=max(outcome["end"] for outcome in outcomes) - min(outcome["first"] for outcome in outcomes),
        stored=stored,
        reposts=reposts,
        cpu_workers=cpu_workers,
        cpu_redis=after["cpu"] - before["cpu"],
        peak_rss_kb=max(outcome["peak_rss_kb"] for outcome in outcomes),
        redis_memory=after["used_memory"],
        errors=sum(outcome["errors"] for outcome in outcomes),
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def table(runs: Sequence[Run], articles: int) -> str:
    one = next((r for r in runs if r.workers == 1), None)
    lines = [
        "| workers | pages | articles stored (+ reposts) | seconds | pages/s | vs 1 worker"
        " | CPU s per 1,000 articles (workers, Redis) | largest worker peak RSS MB"
        " | Redis memory MB at the end | errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        ratio = f"{r.rate / one.rate:.2f}x" if one is not None and one.rate else "-"
        check = "" if r.stored + r.reposts == articles else " (MISSING)"
        lines.append(
            f"| {r.workers} | {r.responses:,} | {r.stored:,} (+ {r.reposts:,}){check}"
            f" | {r.seconds:.1f} | {r.rate:.1f} | {ratio}"
            f" | {r.cpu_per_1000:.2f} ({1000 * r.cpu_workers / max(r.stored, 1):.2f},"
            f" {1000 * r.cpu_redis / max(r.stored, 1):.2f}) | {r.peak_rss_kb / 1024:.0f}"
            f" | {r.redis_memory / 2**20:.1f} | {r.errors} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=DEFAULT_ARTICLES, help="article pages of the site")
    parser.add_argument(
        "--site", choices=SITES, default="synthetic", help="the generated site, or real pages"
    )
    parser.add_argument("--workers", default="1,2", help="worker counts to run, in turn (default 1,2)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="runs of each count; the median")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--settings-json", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.workdir, args.redis_url, args.job, args.result, json.loads(args.settings_json))
    try:
        counts = [int(part) for part in args.workers.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--workers {args.workers!r}: expected worker counts separated by commas, e.g. 1,2")
    if not counts or min(counts) < 1:
        parser.error(f"--workers {args.workers!r}: expected counts of 1 or more")
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: expected 1 or more")
    settings = _settings_from(parser, args.set)
    started = time.perf_counter()
    print(f"Serving the {args.site} site: {args.articles:,} articles ...", flush=True)
    server = SiteServer.start(args.articles, args.site)
    runs: dict[int, list[Run]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scaling-") as folder:
            for number in range(1, args.repeat + 1):
                for workers in counts:
                    print(f"Run {number}: {workers} worker(s) ...", flush=True)
                    one = run(workers, args.site, args.articles, server.origin, Path(folder), settings)
                    print(f"  {one.responses:,} pages in {one.seconds:.1f} s: {one.rate:.1f} pages/s")
                    runs.setdefault(workers, []).append(one)
    finally:
        server.stop()
    medians = [median_run(done) for done in runs.values()]
    print(f"\n{table(medians, args.articles)}\n")
    if args.repeat > 1:
        for workers, done in runs.items():
            rates = ", ".join(f"{r.rate:.1f}" for r in done)
            print(f"{workers} worker(s): pages/s of the {len(done)} runs: {rates}")
    settings_shown = ", ".join(f"{name}={value}" for name, value in settings.items()) or "defaults"
    print(
        f"settings: {settings_shown}; {os.cpu_count()} CPUs; whole run {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
