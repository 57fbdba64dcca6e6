"""Focus bench: harvest rate and recall of discover crawls on generated webs, per strategy, at one page
budget, and the link model's cost per page.

Run from the repo root::

    .venv/bin/python bench/focus.py                    # 3 webs of 200 hosts, budget 600
    .venv/bin/python bench/focus.py --webs 5 --budget 1000 --hosts 300
    .venv/bin/python bench/focus.py --webs 1 --budget 300  # smoke run

Each web is ``crawler.demo.web`` of one seed (1, 2, 3, ...), served on 127.0.0.1 (one port per host) in its
own process. On each web, one after another, each strategy runs ``crawler temp`` of the same discover rule
(the topic's keywords, ``TOPIC_KEYWORDS``; the directory's four pages as seeds; the same budget, depth
and politeness), in a fresh data folder (its own embedded Redis, Bloom filter and model):

- ``breadth-first``: the frontier by depth, then arrival;
- ``best-first``: the frontier by the relevance of the page a link was found on (the classic focused
  crawler's baseline);
- ``learned`` (ours): the frontier by the online link model's value, the hosts by the Thompson-sampling
  bandit.

What each fetched is read from the web server's request log (robots.txt left out). **Harvest rate**:
relevant pages (the generator's ground truth: articles of the topic) over pages fetched. **Recall**:
relevant pages fetched over the web's relevant pages. **Stored**: the pages our relevance scorer kept, and
how many of them the ground truth calls relevant (the scorer's precision).

The model's cost: over 400 article pages of the first web, for each page the features and value of each
of its links, one update and the values of the links a refill values again (``REVALUED``), timed in this
process (the page's links read beforehand, as a text process reads them); the median of 5 runs, each
with the features' cache emptied.

The last line: ``harvest: ours X.XX× breadth-first, Y.YY× best-first (N webs, budget B)``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.demo.web import SimWeb, served  # noqa: E402
from crawler.discover.frontier import REVALUED  # noqa: E402
from crawler.discover.links import LinkModel, clear_feature_cache, link_features, page_links  # noqa: E402
from crawler.rules.model import BEST_FIRST, BREADTH_FIRST, LEARNED  # noqa: E402

STRATEGIES = (BREADTH_FIRST, BEST_FIRST, LEARNED)
CRAWL_TIMEOUT = 900


@dataclass(frozen=True, slots=True)
class Run:
    strategy: str
    web: int
    fetched: int
    relevant: int
    total_relevant: int
    stored: int
    stored_relevant: int
    seconds: float

    @property
    def harvest(self) -> float:
        return self.relevant / self.fetched if self.fetched else 0.0

    @property
    def recall(self) -> float:
        return self.relevant / self.total_relevant if self.total_relevant else 0.0


def crawl(
    strategy: str, web: SimWeb, origins: list[str], log: Path, budget: int, depth: int, seed: int
) -> Run:
    """One temp crawl of ``strategy`` on the web; what it fetched, from the request log."""
    port_host = {int(origin.rsplit(":", 1)[1]): index for index, origin in enumerate(origins)}
    work = Path(tempfile.mkdtemp(prefix="focus-"))
    try:
        rules = work / "rules"
        rules.mkdir()
        rule = web.rule(origins, budget=budget, max_depth=depth, strategy=strategy)
        (rules / "web.yaml").write_text(
            f"name: The topic across the generated web ({strategy})\n{rule}", "utf-8"
        )
        before = log.stat().st_size if log.exists() else 0
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
        env.update(
            CRAWLER_DATA_DIR=str(work / "data"),
            CRAWLER_RULES_DIR=str(rules),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
        )
        started = time.perf_counter()
        _crawler(env, "temp", "web")
        seconds = time.perf_counter() - started
        with log.open("rb") as handle:
            handle.seek(before)
            lines = handle.read().decode().split("\n")
        fetched = relevant = 0
        for line in lines:
            parts = line.split()
            if len(parts) != 3 or parts[2] == "/robots.txt":
                continue
            fetched += 1
            relevant += web.relevant(int(parts[1]), parts[2])
        stored, stored_relevant = stored_pages(env, web, port_host)
        return Run(strategy, seed, fetched, relevant, web.relevant_pages(), stored, stored_relevant, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _crawler(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``crawler ARGS`` run with ``env``; a failure ends the bench, saying why."""
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"crawler {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}"
        )
    return done


def stored_pages(env: dict[str, str], web: SimWeb, port_host: dict[int, int]) -> tuple[int, int]:
    """Pages the crawl stored (its scorer called relevant), and how many of them are."""
    listed = _crawler(env, "articles", "export", "--site", "web", "--format", "jsonl")
    stored = good = 0
    for line in listed.stdout.splitlines():
        url = urlsplit(json.loads(line)["url"])
        stored += 1
        good += web.relevant(port_host.get(url.port or 0, -1), url.path)
    return stored, good


def model_cost(web: SimWeb, pages: int = 400, repeat: int = 5) -> float:
    """Milliseconds a page of the link model's work takes: the features and value of each of its links,
    one update, and the values of the few links a refill values again (``REVALUED``); the median of
    ``repeat`` runs over the same pages, each with the features' cache emptied first."""
    origins = [f"http://127.0.0.1:{20000 + index}" for index in range(len(web.hosts))]
    rng = random.Random(0)
    read: list[tuple[list[tuple[str, str, str]], bool]] = []
    while len(read) < pages:
        host = rng.randrange(1, len(web.hosts))
        sections = web.hosts[host].sections
        if not sections:
            continue
        section = rng.randrange(len(sections))
        page = rng.randrange(sections[section].pages)
        path = web.article_path(host, section, page)
        html = web.page(host, path, origins) or ""
        read.append((page_links(html, origins[host] + path), web.relevant(host, path)))
    runs = []
    for _ in range(repeat):
        clear_feature_cache()
        model = LinkModel()
        previous = link_features("http://127.0.0.1:1/x", "", "", 0.0, 1)
        started = time.perf_counter()
        for links, relevant in read:
            model.learn(previous, 1.0 if relevant else 0.0)
            for url, anchor, context in links:
                features = link_features(url, anchor, context, 1.0 if relevant else 0.0, 2)
                model.value(features)
            for _ in range(REVALUED):
                model.value(previous)
            previous = features
        runs.append((time.perf_counter() - started) * 1000 / len(read))
    return statistics.median(runs)


def _ratio(ours: float, theirs: float) -> str:
    """``ours`` over ``theirs`` as ``X.XX×``; ``inf×`` when theirs found nothing (a budget spent before any
    article: breadth-first on the directory's home pages, at a small budget)."""
    return f"{ours / theirs:.2f}×" if theirs > 0 else "inf×"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--webs", type=int, default=3, help="generated webs, seeds 1..N (default 3)")
    parser.add_argument("--hosts", type=int, default=200, help="hosts of each web (default 200)")
    parser.add_argument("--budget", type=int, default=600, help="pages each crawl fetches (default 600)")
    parser.add_argument("--depth", type=int, default=8, help="the rule's max_depth (default 8)")
    args = parser.parse_args(argv)
    runs: list[Run] = []
    cost = model_cost(SimWeb(1, args.hosts))
    for seed in range(1, args.webs + 1):
        web = SimWeb(seed, args.hosts)
        log = Path(tempfile.mkdtemp(prefix="focus-log-")) / "requests.log"
        with served(seed, args.hosts, log) as origins:
            for strategy in STRATEGIES:
                run = crawl(strategy, web, origins, log, args.budget, args.depth, seed)
                runs.append(run)
                print(
                    f"web {seed} {strategy:>13}: fetched {run.fetched:4d}, relevant {run.relevant:4d}"
                    f" (harvest {run.harvest:.3f}, recall {run.recall:.3f}),"
                    f" stored {run.stored} ({run.stored_relevant} relevant), {run.seconds:.1f} s",
                    flush=True,
                )
        shutil.rmtree(log.parent, ignore_errors=True)
    print()
    print(f"{'strategy':>13} | harvest (mean, per web)          | recall | stored precision")
    means: dict[str, float] = {}
    for strategy in STRATEGIES:
        mine = [run for run in runs if run.strategy == strategy]
        means[strategy] = statistics.mean(run.harvest for run in mine)
        each = ", ".join(f"{run.harvest:.3f}" for run in mine)
        recall = statistics.mean(run.recall for run in mine)
        precision = sum(run.stored_relevant for run in mine) / max(1, sum(run.stored for run in mine))
        print(f"{strategy:>13} | {means[strategy]:.3f} ({each}) | {recall:.3f}  | {precision:.3f}")
    print(
        f"link model: {cost:.3f} ms a page (features, values, one update, values again;"
        " 400 pages, median of 5)"
    )
    print(
        f"harvest: ours {_ratio(means[LEARNED], means[BREADTH_FIRST])} breadth-first,"
        f" {_ratio(means[LEARNED], means[BEST_FIRST])} best-first ({args.webs} webs, budget {args.budget})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
