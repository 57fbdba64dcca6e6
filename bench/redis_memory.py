"""Redis memory per queued and per leased request, for the capacity model of docs/performance.md.

Run from the repo root::

    .venv/bin/python bench/redis_memory.py [--requests N]

Pushes N article requests (URLs of 70 characters, the metadata a crawl gives them) into the leased queue
of an embedded Redis in a temporary folder, reads ``used_memory`` before and after, then leases them all
and reads it again. A stored article costs Redis nothing but its URL's bits in the Bloom filter (about 2
bytes, ``bench/bloom.py``): articles go to SQLite or MongoDB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `crawler` importable
    sys.path.insert(0, str(_REPO_ROOT))

from scrapy import Request  # noqa: E402

from crawler.keys import Keys  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.redisio.queue import LeasedQueue  # noqa: E402
from crawler.requests import push  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests to queue (default 20000)")
    args = parser.parse_args(argv)
    count = max(args.requests, 1)
    with tempfile.TemporaryDirectory() as folder, EmbeddedRedis(Path(folder), watch_seconds=0) as embedded:
        server = connect(embedded.ensure())
        keys = Keys("crawler")
        queue = LeasedQueue(server, keys)
        before = int(server.info("memory")["used_memory"])
        for number in range(count):
            url = f"http://news.example.com/2026/11/25/an-article-slug-of-some-length-{number:08d}.html"
            meta = {"site": "news", "job": "j1", "kind": "article", "depth": 1, "boost": 100}
            push(queue, Request(url, meta=meta, priority=100))
        queued = int(server.info("memory")["used_memory"])
        member = server.zrange(keys.queue_of("news"), 0, 0)[0]
        while queue.pop_many(count=100)[0].member is not None:
            pass
        leased = int(server.info("memory")["used_memory"])
        server.close()
    print(f"{count:,} requests; a queue entry (JSON) is {len(member)} bytes")
    print(f"Redis memory per queued request: {(queued - before) / count:,.0f} bytes")
    print(f"Redis memory per leased request: {(leased - before) / count:,.0f} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
