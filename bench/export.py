"""`crawler articles export` in constant memory: peak RSS of exports of 1k, 10k and 100k articles.

    .venv/bin/python bench/export.py [--articles 100000] [--data DIR]

Fills a SQLite store (under --data, kept between runs, default /tmp/crawler-export-bench) with generated
articles of about 2 KB each, then runs `crawler articles export` (JSON lines and CSV, to /dev/null) in a
fresh process per size and prints each one's peak RSS and rate. Memory that does not grow with the
number of articles is the goal; the rate is for information. With MONGO_URI set, the articles are
copied into MongoDB (prefix ``exportbench``) and exported from there too.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.cli import main as crawler_main  # noqa: E402
from crawler.store import DedupPolicy, SqliteStore, StoreError, open_store  # noqa: E402

WORDS = (
    "city council river bridge market school police budget report storm weather election mayor"
    " museum hospital train station park festival court judge company workers price energy water"
).split()
BATCH = 2000


def fill(data: Path, total: int) -> None:
    """Generated articles until the store holds ``total``: 3 sites over 4 weeks, bodies of ~2 KB."""
    rng = random.Random(7)
    start = datetime(2026, 10, 26, tzinfo=UTC)
    with SqliteStore(data, batch_size=BATCH, dedup=DedupPolicy(enabled=False)) as store:
        have = store.count()
        for first in range(have, total, BATCH):
            batch = []
            for n in range(first, min(first + BATCH, total)):
                paragraphs = [
                    " ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "." for _ in range(5)
                ]
                batch.append(
                    {
                        "site": f"site{n % 3}",
                        "url": f"http://site{n % 3}.test/{n}.html",
                        "fetched_at": start + timedelta(seconds=n * 24),
                        "title": f"Article {n}",
                        "body": "\n\n".join(paragraphs),
                        "published": (start + timedelta(seconds=n * 24)).date().isoformat(),
                    }
                )
            store.upsert_many(batch)
            print(f"  filled {first + len(batch)}/{total}", file=sys.stderr, end="\r")
    print(file=sys.stderr)


def child(form: str, limit: int) -> None:
    """Run the export in this process to /dev/null; print peak RSS (KB) and seconds."""
    started = time.perf_counter()
    with open(os.devnull, "w", encoding="utf-8") as sink:
        sys.stdout = sink
        code = crawler_main(["articles", "export", "--format", form, "--limit", str(limit)])
        sys.stdout = sys.__stdout__
    elapsed = time.perf_counter() - started
    print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {elapsed:.3f} {code}")


def measure(data: Path, form: str, limit: int, mongo_uri: str | None) -> tuple[float, float]:
    env = {key: value for key, value in os.environ.items() if key != "MONGO_URI"}
    env["CRAWLER_DATA_DIR"] = str(data)
    if mongo_uri:
        env.update(MONGO_URI=mongo_uri, MONGO_DB_PREFIX="exportbench")
    result = subprocess.run(
        [sys.executable, __file__, "--child", form, str(limit)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rss_kb, seconds, code = result.stdout.split()
    assert code == "0", result.stderr
    return int(rss_kb) / 1024, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/crawler-export-bench"))
    parser.add_argument("--child", nargs=2, metavar=("FORMAT", "LIMIT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    fill(args.data, args.articles)
    backends: list[tuple[str, str | None]] = [("sqlite", None)]
    mongo_uri = os.environ.get("MONGO_URI")
    if mongo_uri:
        settings = {**os.environ, "MONGO_DB_PREFIX": "exportbench", "CRAWLER_DATA_DIR": str(args.data)}
        try:
            with SqliteStore(args.data) as source, open_store(settings) as copy:
                if copy.count() < args.articles:
                    copy.upsert_many(source.iter_articles(newest_first=False))
        except StoreError as exc:
            print(
                f"bench/export.py: MONGO_URI is set, and {exc}: unset MONGO_URI to measure SQLite alone",
                file=sys.stderr,
            )
            sys.exit(2)
        backends.append(("mongodb", mongo_uri))
    sizes = sorted({min(1000, args.articles), min(10_000, args.articles), args.articles})
    print(
        f"{'backend':<8} {'format':<6} {'articles':>9} {'peak RSS MB':>12} {'seconds':>8} {'articles/s':>11}"
    )
    for backend, uri in backends:
        for form in ("jsonl", "csv"):
            for size in sizes:
                rss, seconds = measure(args.data, form, size, uri)
                print(
                    f"{backend:<8} {form:<6} {size:>9} {rss:>12.1f} {seconds:>8.2f} {size / seconds:>11.0f}"
                )


if __name__ == "__main__":
    main()
