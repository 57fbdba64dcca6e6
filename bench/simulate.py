"""A simulated day of regular grabs: freshness, revisit bounds and 304s over the news farm.

    .venv/bin/python bench/simulate.py [--sites 20] [--hours 24] [--step-minutes 1] [--seed 1]

Runs the service as in ``tests/test_service.py``: the farm of generated news sites
(``crawler/demo/farm.py``, a real HTTP server on 127.0.0.1 whose articles appear on a controllable clock),
one real ``crawler worker`` process, the embedded Redis in a temporary folder (or ``REDIS_URL`` when set:
it must hold no ``crawler:*`` keys), and a :class:`crawler.schedule.grabs.GrabScheduler` ticking on the farm's
clock. Nothing sleeps through a period: the clock moves in ``--step-minutes`` steps from the farm's start
(a tick at the start, then one per step), and after each tick the script waits until the grabs it seeded
are done (their job has nothing pending).

The sites publish at different rates, deterministic for a seed: from a dead site (0.0001 articles/hour)
through 0.2, 0.5, 1, 2, 4, 6, 8, 12 to 20 articles/hour (each level twice for 20 sites, scaled by a random
factor of 0.8 to 1.25). The "operator" gives each one a period ``every`` of 10m, 20m, 30m, 1h or 2h
(about the time two articles take, moved one notch by chance, never so long that a period fills the
index page), with bounds ``min = every / 2`` and ``max = every * 4``.

Figures, per site and overall, from the farm's request log and the store:

* index fetches, their 200s and 304s, and the 200s of an unchanged page (the newest article the same as at
  the site's previous index read: a download a conditional request should have saved) - goal 0;
* the gaps between consecutive index reads against the bounds: shortest, longest, gaps under ``min`` -
  goal 0;
* the latency of each article published up to the site's last index read: when its page was first read
  (200) minus when it appeared on the index page (``Farm.published``; the farm's start for the backlog).
  "Within one period" is checked against the interval in force, which the crawler keeps within
  ``[min, max]``: latency <= ``max``. The count over the rule's plain ``every`` is printed too (a quiet
  site's interval grows towards ``max`` on purpose, so that stricter reading may fail for slow sites);
* articles published, fetched and stored, grabs, the final adapted interval and yield of each site.

A default day (20 sites, 24 h, 1-minute steps: about 2,100 grabs) took 230 s of wall time on the
development machine with one worker; ``--hours 2 --sites 5`` about 11 s. The exit code is 0 when the three
goals pass (the stricter reading of "one period" is informational), 1 when one fails, 2 when the run
aborts.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import redis  # noqa: E402

from crawler.demo.farm import LISTED, Farm, FarmSite, Visit  # noqa: E402
from crawler.keys import Keys  # noqa: E402
from crawler.redisio.connection import connect, hash_of  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.rules import load_rules, parse_every  # noqa: E402
from crawler.schedule.grabs import GrabScheduler  # noqa: E402
from crawler.store import open_store  # noqa: E402

PREFIX = "crawler"
# Seconds a seeded grab has to finish before the run is aborted.
JOB_TIMEOUT = 60.0
# Seconds the worker has to exit after SIGINT before it is killed.
STOP_TIMEOUT = 60.0
# Articles per hour of the rate levels, from a dead site to a busy one.
LEVELS = (0.0001, 0.2, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 20.0)
# The periods the operator chooses from (minutes).
PERIODS = (10, 20, 30, 60, 120)


class SimulationError(Exception):
    """The simulation cannot go on (a grab that does not finish, a worker that died)."""


def duration(minutes: int) -> str:
    """Minutes as a rule duration: ``"5m"``, ``"2h"``, ``"1h20m"``."""
    hours, rest = divmod(minutes, 60)
    text = (f"{hours}h" if hours else "") + (f"{rest}m" if rest else "")
    return text or "0m"


def build_sites(count: int, seed: int) -> list[FarmSite]:
    """``count`` sites spread over the rate levels, with the operator's periods and bounds."""
    rng = random.Random(seed)
    sites = []
    for i in range(count):
        level = round(i * (len(LEVELS) - 1) / max(count - 1, 1))
        base = LEVELS[level]
        per_hour = base if level == 0 else round(base * rng.uniform(0.8, 1.25), 2)
        # About two articles per period, one notch shorter or longer by chance...
        wanted = 120.0 / per_hour
        notch = min(range(len(PERIODS)), key=lambda n: abs(math.log(PERIODS[n] / wanted)))
        notch = min(max(notch + rng.choice((-1, 0, 0, 1)), 0), len(PERIODS) - 1)
        # ...but never so long that one period fills the index page.
        while notch > 0 and PERIODS[notch] / 60.0 * per_hour > LISTED / 2:
            notch -= 1
        every = PERIODS[notch]
        sites.append(
            FarmSite(
                f"site{i:02d}",
                per_hour=per_hour,
                every=duration(every),
                min=duration(every // 2),
                max=duration(every * 4),
            )
        )
    return sites


def minutes(text: str | None) -> float:
    assert text is not None
    return parse_every(text).total_seconds() / 60.0


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


@dataclass
class SiteFigures:
    site: FarmSite
    grabs: int = 0
    interval: float | None = None
    yield_: float | None = None
    index: int = 0
    ok: int = 0
    not_modified: int = 0
    unchanged_200: int = 0
    changed_304: int = 0
    gaps: list[float] = field(default_factory=list)
    below_min: int = 0
    above_max: int = 0
    latencies: list[float] = field(default_factory=list)
    over_every: int = 0
    over_max: int = 0
    published: int = 0
    fetched: int = 0
    missed: int = 0
    stored: int = 0


def appeared(farm: Farm, site: FarmSite, article: int) -> float:
    """When ``article`` first shows on the index page and its page stops answering 404 (the farm's start
    for the backlog)."""
    return max(farm.published(site.name, article), farm.start)


def figures(farm: Farm, states: dict[str, dict[str, str]], stored: dict[str, int]) -> list[SiteFigures]:
    """Per-site figures from the farm's request log, the grab states and the store's counts."""
    visits: dict[str, list[Visit]] = defaultdict(list)
    for visit in sorted(farm.log, key=lambda v: v.moment):
        visits[visit.site].append(visit)
    result = []
    for site in farm.sites:
        row = SiteFigures(site, stored=stored.get(site.name, 0))
        state = states.get(site.name, {})
        row.grabs = int(state.get("grabs", 0))
        row.interval = float(state["interval"]) if "interval" in state else None
        row.yield_ = float(state["yield"]) if "yield" in state else None
        index = [v for v in visits[site.name] if v.kind == "index"]
        row.index = len(index)
        row.ok = sum(v.status == 200 for v in index)
        row.not_modified = sum(v.status == 304 for v in index)
        for before, after in itertools.pairwise(index):
            same = farm.newest(site.name, after.moment) == farm.newest(site.name, before.moment)
            row.unchanged_200 += same and after.status == 200
            row.changed_304 += not same and after.status == 304
            row.gaps.append(after.moment - before.moment)
        low, high, every = minutes(site.min) * 60, minutes(site.max) * 60, minutes(site.every) * 60
        row.below_min = sum(gap < low for gap in row.gaps)
        row.above_max = sum(gap > high for gap in row.gaps)
        fetched: dict[int, float] = {}
        for visit in visits[site.name]:
            if visit.kind == "article" and visit.status == 200 and visit.article is not None:
                fetched.setdefault(visit.article, visit.moment)
        row.fetched = len(fetched)
        if index:
            last_read = index[-1].moment
            published = range(farm.newest(site.name, last_read) + 1)
            row.published = len(published)
            for k in published:
                if k not in fetched:
                    row.missed += 1
                    continue
                latency = fetched[k] - appeared(farm, site, k)
                row.latencies.append(latency)
                row.over_every += latency > every
                row.over_max += latency > high
        result.append(row)
    return result


def table(rows: list[SiteFigures]) -> list[str]:
    header = (
        "site", "per_hour", "every", "min/max", "interval", "yield", "grabs", "index 200/304",
        "unch.200", "chg.304", "gap min..max", "<min", "lat max", "lat p95", ">every", ">max",
        "pub/fetched/stored",
    )  # fmt: skip
    lines = []
    for row in rows:
        site = row.site
        gaps = f"{min(row.gaps) / 60:.0f}..{max(row.gaps) / 60:.0f}m" if row.gaps else "-"
        lat_max = f"{max(row.latencies) / 60:.1f}m" if row.latencies else "-"
        lat_p95 = f"{percentile(row.latencies, 0.95) / 60:.1f}m" if row.latencies else "-"
        lines.append(
            (
                site.name,
                f"{site.per_hour:g}",
                site.every,
                f"{site.min}/{site.max}",
                "-" if row.interval is None else f"{row.interval / 60:.1f}m",
                "-" if row.yield_ is None else f"{row.yield_:.2f}",
                str(row.grabs),
                f"{row.ok}/{row.not_modified}",
                str(row.unchanged_200),
                str(row.changed_304),
                gaps,
                str(row.below_min),
                lat_max,
                lat_p95,
                str(row.over_every),
                str(row.over_max),
                f"{row.published}/{row.fetched}/{row.stored}",
            )
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]

    def render(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in (0, 2, 3) else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [render(header), render(["-" * w for w in widths]), *(render(line) for line in lines)]


def summary(rows: list[SiteFigures], step: float) -> list[str]:
    index = sum(r.index for r in rows)
    ok = sum(r.ok for r in rows)
    not_modified = sum(r.not_modified for r in rows)
    unchanged = sum(r.unchanged_200 for r in rows)
    unchanged_reads = sum(r.unchanged_200 for r in rows) + sum(r.not_modified - r.changed_304 for r in rows)
    changed_304 = sum(r.changed_304 for r in rows)
    below = sum(r.below_min for r in rows)
    above = sum(r.above_max for r in rows)
    gaps = sum(len(r.gaps) for r in rows)
    latencies = [x for r in rows for x in r.latencies]
    published = sum(r.published for r in rows)
    fetched = sum(r.fetched for r in rows)
    missed = sum(r.missed for r in rows)
    stored = sum(r.stored for r in rows)
    over_every = sum(r.over_every for r in rows)
    over_max = sum(r.over_max for r in rows)
    grabs = sum(r.grabs for r in rows)
    slowest = max(rows, key=lambda r: max(r.latencies, default=0.0))
    lines = [
        f"grabs {grabs}; index fetches {index}: {ok} answered 200, {not_modified} answered 304",
        f"index reads of an unchanged page: {unchanged_reads}, of which {unchanged} cost a download (200);"
        f" changed pages answered 304 (stale): {changed_304}",
        f"gaps between index reads: {gaps}; under the site's min: {below}; over its max: {above}"
        f" (ticks every {step / 60:g} min)",
        f"articles published up to each site's last index read: {published}; fetched {fetched};"
        f" never fetched {missed}; stored {stored}",
        f"latency: max {max(latencies, default=0) / 60:.1f} min ({slowest.site.name}, max bound"
        f" {slowest.site.max}), p95 {percentile(latencies, 0.95) / 60:.1f} min, median"
        f" {percentile(latencies, 0.5) / 60:.1f} min; over the site's max bound: {over_max}; over its"
        f" plain every: {over_every} of {len(latencies)}",
        "",
        _check(
            unchanged == 0 and changed_304 == 0,
            f"unchanged index pages cost only 304s ({unchanged} unchanged 200s, {changed_304} stale 304s)",
        ),
        _check(below == 0, f"no index page fetched more often than its min bound ({below} gaps under min)"),
        _check(
            missed == 0 and over_max == 0 and stored == fetched,
            "new articles stored within one period, the interval in force (<= max bound):"
            f" {over_max} late, {missed} never fetched, {fetched - stored} fetched but not stored",
        ),
        f"NOTE  within the rule's plain every (a stricter reading, not a goal: quiet sites slow down on"
        f" purpose): {over_every} of {len(latencies)} later",
    ]
    return lines


def _check(passed: bool, text: str) -> str:
    return f"{'PASS' if passed else 'FAIL'}  {text}"


def wait_for_job(server: redis.Redis, job: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + JOB_TIMEOUT
    key = Keys(PREFIX).job(job)
    while int(server.hget(key, "pending") or 0) > 0:
        if worker.poll() is not None:
            raise SimulationError(f"the worker exited with code {worker.returncode}; its log:\n{_tail(log)}")
        if time.monotonic() > deadline:
            state = hash_of(server, key)
            raise SimulationError(
                f"grab job {job} did not finish within {JOB_TIMEOUT:g} s (job state {state});"
                f" the worker's log:\n{_tail(log)}"
            )
        time.sleep(0.01)


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is not None:
        return
    worker.send_signal(signal.SIGINT)
    try:
        worker.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def simulate(args: argparse.Namespace, folder: Path, url: str, err: TextIO) -> int:
    sites = build_sites(args.sites, args.seed)
    step = args.step_minutes * 60.0
    ticks = round(args.hours * 60 / args.step_minutes)
    rules_dir, data, log_path = folder / "rules", folder / "data", folder / "worker.log"
    rules_dir.mkdir()
    server = connect(url)
    started = time.perf_counter()
    try:
        if any(True for _ in server.scan_iter(f"{PREFIX}:*", count=100)):
            raise SimulationError(f"the Redis at REDIS_URL holds {PREFIX}:* keys: use an empty database")
        with Farm(sites, float(int(time.time()))) as farm:
            for site in sites:
                (rules_dir / f"{site.name}.yaml").write_text(farm.rule(site.name), encoding="utf-8")
            ruleset = load_rules(rules_dir)
            if ruleset.errors:
                raise SimulationError(f"rule errors: {ruleset.errors}")
            rules = list(ruleset.rules.values())
            env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
            env.update(
                REDIS_URL=url,
                CRAWLER_RULES_DIR=str(rules_dir),
                CRAWLER_DATA_DIR=str(data),
                CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
            )
            scheduler = GrabScheduler(server, Keys(PREFIX), clock=lambda: farm.now)
            with log_path.open("wb") as log:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "crawler.cli", "worker", "-s", "SCHEDULER_IDLE_POLL_SECONDS=0.05"],
                    cwd=REPO,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            try:
                grabs = 0
                for tick in range(ticks + 1):
                    farm.now = farm.start + tick * step
                    seeded = scheduler.tick(rules)
                    for grab in seeded:
                        wait_for_job(server, grab.job, worker, log_path)
                    grabs += len(seeded)
                    if tick and (tick * step) % 3600 < step:
                        print(
                            f"sim hour {tick * step / 3600:4.1f}: {grabs} grabs,"
                            f" {time.perf_counter() - started:.0f} s wall",
                            file=err,
                            flush=True,
                        )
            finally:
                stop_worker(worker)
            simulated = time.perf_counter() - started
        states = {site.name: hash_of(server, Keys(PREFIX).grab(site.name)) for site in sites}
    finally:
        server.close()
    with open_store({"CRAWLER_DATA_DIR": str(data)}) as store:
        stored = {site.name: store.count(site=site.name) for site in sites}
    rows = figures(farm, states, stored)
    worker_log = log_path.read_text("utf-8", "replace")
    print(
        f"{len(sites)} sites, {args.hours:g} simulated hours in {args.step_minutes:g}-minute steps"
        f" (seed {args.seed}), one worker\n"
    )
    print("\n".join(table(rows)))
    print(
        "\nunch.200: index reads answered 200 with nothing new since the site's previous read; chg.304:"
        " answered 304 though new articles had appeared;\n<min: gaps between index reads under the min"
        " bound; lat: first 200 of an article's page minus its appearance; >every/>max: latencies over"
        " the rule's every / max bound\n"
    )
    lines = summary(rows, step)
    print("\n".join(lines))
    tracebacks = worker_log.count("Traceback")
    errors = sum(" ERROR" in line or "ERROR:" in line for line in worker_log.splitlines())
    print(f"\nworker log: {tracebacks} tracebacks, {errors} error lines")
    print(f"wall time: {simulated:.0f} s simulated run, {time.perf_counter() - started:.0f} s in all")
    return 0 if all(line.startswith("PASS") for line in lines[-4:-1]) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sites", type=int, default=20, help="sites of the farm (default 20)")
    parser.add_argument("--hours", type=float, default=24.0, help="simulated hours (default 24)")
    parser.add_argument("--step-minutes", type=float, default=1.0, help="clock step (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.sites < 1 or args.hours <= 0 or args.step_minutes <= 0:
        parser.error("--sites, --hours and --step-minutes must be positive")
    folder = Path(tempfile.mkdtemp(prefix="crawler-sim-"))
    embedded: EmbeddedRedis | None = None
    try:
        url = os.environ.get("REDIS_URL") or ""
        if not url:
            embedded = EmbeddedRedis(folder / "redis-data")
            url = embedded.ensure()
        return simulate(args, folder, url, sys.stderr)
    except SimulationError as error:
        print(f"simulation aborted: {error}", file=sys.stderr)
        return 2
    finally:
        if embedded is not None:
            embedded.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
