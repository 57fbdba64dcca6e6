"""Seen-URL bench: Redis bytes per URL and false positives of our Bloom filter against scrapy-redis's set.

Run from the repo root::

    .venv/bin/python bench/bloom.py [--urls 1000000] [--probes 200000] [--error-rate 0.001]

One run, one embedded Redis server (``crawler.redisio.embedded``, in a temporary folder, the product's
configuration: append-only file on), three stores of the same fingerprints (20-byte SHA-1 of synthetic
URLs, the shape of Scrapy's request fingerprints):

- ``scrapy-redis set``: a Redis SET of 40-hex fingerprints, as scrapy-redis's ``RFPDupeFilter`` keeps them
  (SADD, 1000 members per command);
- ``RedisBloom at capacity``: ``capacity = --urls``, one slice;
- ``RedisBloom grown``: ``capacity = --urls / 8``, growth 2: four slices, the last one an eighth full.

Both filters take ``add_many`` batches of 1000 (one Lua call each). Bytes are ``MEMORY USAGE`` (what Redis
holds, overhead included); "bitmap" is the sum of the slices' STRLEN. The false-positive rate is measured
on ``--probes`` fingerprints never added. Times are wall clock, client hashing included.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

import redis  # noqa: E402

from crawler.redisio.bloom import RedisBloom  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402

BATCH = 1000


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    urls: int
    redis_bytes: int
    bitmap_bytes: int | None
    false_positives: int
    probes: int
    seconds: float


def fingerprints(count: int, seed: int) -> list[bytes]:
    """SHA-1 digests of ``count`` distinct synthetic article URLs."""
    rng = random.Random(seed)
    return [
        hashlib.sha1(
            f"https://site{rng.randrange(500)}.example/{i}/{rng.getrandbits(64):016x}.html".encode()
        ).digest()
        for i in range(count)
    ]


def bench_set(client: redis.Redis, added: Sequence[bytes], probes: Sequence[bytes]) -> Row:
    key = "bench:dupefilter"
    started = time.perf_counter()
    for start in range(0, len(added), BATCH):
        client.sadd(key, *(fp.hex() for fp in added[start : start + BATCH]))
    seconds = time.perf_counter() - started
    size = int(client.memory_usage(key, samples=0) or 0)
    client.delete(key)
    return Row("scrapy-redis set (40-hex SHA-1)", len(added), size, None, 0, len(probes), seconds)


def bench_bloom(
    client: redis.Redis,
    name: str,
    capacity: int,
    error_rate: float,
    added: Sequence[bytes],
    probes: Sequence[bytes],
) -> Row:
    bloom = RedisBloom(client, f"bench:bloom:{capacity}", capacity=capacity, error_rate=error_rate, growth=2)
    started = time.perf_counter()
    for start in range(0, len(added), BATCH):
        bloom.add_many(added[start : start + BATCH])
    seconds = time.perf_counter() - started
    redis_bytes = bloom.bytes_used()
    bitmap = sum(int(client.strlen(key)) for key in bloom.keys[1:])
    false_positives = 0
    for start in range(0, len(probes), BATCH):
        false_positives += sum(bloom.contains_many(probes[start : start + BATCH]))
    bloom.clear()
    return Row(name, len(added), redis_bytes, bitmap, false_positives, len(probes), seconds)


def table(rows: Sequence[Row], error_rate: float) -> str:
    lines = [
        f"| store (target FP {error_rate:.2%}) | URLs | Redis bytes | bytes/URL | bitmap bytes/URL"
        " | FP rate (false/probes) | insert s | URLs/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        bitmap = f"{row.bitmap_bytes / row.urls:.2f}" if row.bitmap_bytes is not None else "-"
        lines.append(
            f"| {row.name} | {row.urls:,} | {row.redis_bytes:,} | {row.redis_bytes / row.urls:.2f} | {bitmap}"
            f" | {row.false_positives / row.probes:.3%} ({row.false_positives}/{row.probes:,})"
            f" | {row.seconds:.1f} | {row.urls / row.seconds:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=1_000_000, help="fingerprints added (default 1000000)")
    parser.add_argument("--probes", type=int, default=200_000, help="others tested for false positives")
    parser.add_argument("--error-rate", type=float, default=0.001, help="target false-positive rate")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    everything = fingerprints(args.urls + args.probes, args.seed)
    added, probes = everything[: args.urls], everything[args.urls :]
    with tempfile.TemporaryDirectory(prefix="bench-bloom-") as folder, EmbeddedRedis(Path(folder)) as server:
        client = connect(server.url)
        rows = [
            bench_set(client, added, probes),
            bench_bloom(client, "RedisBloom at capacity", args.urls, args.error_rate, added, probes),
            bench_bloom(
                client, "RedisBloom grown (capacity/8)", args.urls // 8, args.error_rate, added, probes
            ),
        ]
        client.close()
    print(table(rows, args.error_rate))
    print(f"\nwhole run: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
