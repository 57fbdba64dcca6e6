"""`Store.redirected_to` on a SQLite store of 50,000 articles over 20 weeks: the time of a lookup.

    .venv/bin/python bench/redirected_to.py [--articles 50000] [--weeks 20] [--lookups 200] [--data DIR]

Fills a SQLite store (under --data, default a temporary folder) with generated articles spread evenly over
the weeks, one in 20 of them reached through a redirect (its ``redirected_from`` holding one or two links,
as about 5 in 100 articles of a store of news), then times ``redirected_to`` (CPU and wall time per call,
the median of --lookups calls) for a link of the newest week, of the oldest (every newer week read first)
and for a URL that redirected to no article (every week read: the store pipeline's question for a feed
entry whose URL is seen but no article's). It also times ``get`` of a stored URL for comparison, and the
fill. The script uses the store's public methods only, so the same file measures an older commit (run
it from that commit's checkout). With ``--migrate``, the files are first made as a crawler of before the
table of redirects left them and the time of opening them (the table made) is printed.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.store import DedupPolicy, SqliteStore  # noqa: E402

WORDS = "city council river bridge market school police budget report storm weather election mayor".split()
BATCH = 2000
# One article in REDIRECTED was reached through a redirect: about 5 in 100 in a store of news.
REDIRECTED = 20
# What a file of version 8 made before the table of redirects lacks (tests/test_store.py says the same).
WITHOUT_TABLE = """
    DROP TRIGGER IF EXISTS articles_redirects_insert;
    DROP TRIGGER IF EXISTS articles_redirects_update;
    DROP TRIGGER IF EXISTS articles_redirects_delete;
    DROP TABLE IF EXISTS redirects;
"""


def fill(data: Path, total: int, weeks: int) -> tuple[float, list[str]]:
    """``total`` generated articles over ``weeks`` weeks: the seconds it took, and the links of the
    articles reached through a redirect, oldest first."""
    rng = random.Random(7)
    start = datetime(2026, 7, 6, tzinfo=UTC)
    step = timedelta(weeks=weeks) / total
    links: list[str] = []
    began = time.perf_counter()
    with SqliteStore(data, batch_size=BATCH, dedup=DedupPolicy(enabled=False)) as store:
        for first in range(0, total, BATCH):
            batch = []
            for n in range(first, min(first + BATCH, total)):
                redirects = []
                if n % REDIRECTED == 0:
                    redirects = [f"http://t.test/{n}"] + ([f"http://t.test/{n}/b"] if n % 40 == 0 else [])
                    links.append(redirects[0])
                batch.append(
                    {
                        "site": f"site{n % 3}",
                        "url": f"http://site{n % 3}.test/{n}.html",
                        "fetched_at": start + step * n,
                        "title": f"Article {n}",
                        "body": " ".join(rng.choice(WORDS) for _ in range(120)) + ".",
                        "redirected_from": redirects,
                    }
                )
            store.upsert_many(batch)
    return time.perf_counter() - began, links


def timed(call: Callable[[], object], times: int) -> tuple[float, float]:
    """The median CPU and wall milliseconds of ``times`` calls."""
    cpu, wall = [], []
    for _ in range(times):
        c, w = time.process_time(), time.perf_counter()
        call()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=50_000)
    parser.add_argument("--weeks", type=int, default=20)
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--migrate", action="store_true")
    args = parser.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="redirected-to-bench-"))
    seconds, links = fill(data, args.articles, args.weeks)
    files = sorted((data / "articles").glob("articles_*.sqlite"))
    print(f"filled {args.articles} articles in {len(files)} weeks ({len(links)} redirected): {seconds:.1f} s")
    if args.migrate:
        for path in files:
            with sqlite3.connect(path) as older:
                older.executescript(WITHOUT_TABLE)
            older.close()
        began = time.perf_counter()
        with SqliteStore(data) as store:
            store.count()
        print(
            f"opened {len(files)} weeks without the table of redirects: {time.perf_counter() - began:.2f} s"
        )
    with SqliteStore(data) as store:
        newest, oldest = links[-1], links[0]
        for url in (newest, oldest):
            found = store.redirected_to(url)
            assert found is not None, url
        assert store.redirected_to("http://t.test/nowhere") is None
        stored = f"http://site0.test/{args.articles // 2 // 3 * 3}.html"
        assert store.get(stored) is not None
        for what, call in (
            ("redirected_to, a link of the newest week", lambda: store.redirected_to(newest)),
            ("redirected_to, a link of the oldest week", lambda: store.redirected_to(oldest)),
            ("redirected_to, a URL of no article", lambda: store.redirected_to("http://t.test/nowhere")),
            ("get, a URL of the middle week", lambda: store.get(stored)),
        ):
            cpu, wall = timed(call, args.lookups)
            print(f"{what}: {cpu:.2f} ms CPU, {wall:.2f} ms wall (median of {args.lookups})")


if __name__ == "__main__":
    main()
