"""The leased queue at scale: Redis memory and the cost of a pop and an ack at 1k to 1,000,000 queued
requests over 10 to 500 sites, and the longest Redis command of `crawler sites forget`.

Run from the repo root::

    .venv/bin/python bench/queue_scale.py [--sizes 1000,100000,1000000] [--sites 10,500] [--pops 2000]
        [--forget 300000]

For each size and number of sites, an embedded Redis in a temporary folder is filled with that many
article requests (URLs of about 70 characters, the metadata a crawl gives them) spread evenly over the
sites, by the queue's own push script. Printed per row: Redis ``used_memory`` per queued request and per
site; then ``--pops`` pops with their acks, one request at a time as a worker takes them: Redis's own CPU
per pop and per ack (``INFO commandstats``, the script calls' ``usec_per_call``) and this process's CPU per
pop+ack (``time.process_time``). Flat figures down a column mean the crawl path costs O(log n) per request.

With ``--forget N``: one site holding N queued requests (and 1,000 delayed and 1,000 leased ones, no
worker alive) is forgotten as `crawler sites forget` forgets it (``LeasedQueue.take_sites``), while a
second client pops another site's requests: printed, the longest single Redis command (``SLOWLOG``), the
longest time that client waited for one pop, and the forget's own wall time and this process's peak RSS.

With ``--dead N``: N dead letters read as the `dead` commands and `crawler status` read them: this
process's CPU and the longest Redis command of each; then `crawler dead list` (the default page),
`dead list --all --format jsonl`, `dead requeue --all` and `dead drop --all`, each a process of its own
against N letters filled anew: its user CPU, wall time, peak RSS, Redis commands and the longest one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from multiprocessing.synchronize import Event
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `crawler` importable
    sys.path.insert(0, str(_REPO_ROOT))

import redis  # noqa: E402
from scrapy import Request  # noqa: E402

from crawler.keys import Keys  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.redisio.queue import LeasedQueue  # noqa: E402
from crawler.requests import encode_request  # noqa: E402
from crawler.status import dead_letters_by_site  # noqa: E402

# Requests pushed per pipeline: large enough that round trips do not dominate the fill, small enough
# that no one pipeline holds much memory.
_BATCH = 5_000
_JOB = "j1"


def _member_template() -> bytes:
    """A real article request as the queue keeps it, its URL's number a placeholder to fill."""
    url = "http://news.example.com/2026/11/25/an-article-slug-of-some-length-NUMBER__.html"
    meta = {"site": "SITE", "job": _JOB, "kind": "article", "depth": 1, "boost": 100}
    return encode_request(Request(url, meta=meta, priority=100))


def fill(queue: LeasedQueue, count: int, sites: list[str], *, offset: int = 0) -> None:
    """Push ``count`` requests spread evenly over ``sites`` (numbered from ``offset``)."""
    template = _member_template()
    batch: list[tuple[bytes, int, str, str | None]] = []
    for number in range(offset, offset + count):
        site = sites[number % len(sites)]
        member = template.replace(b"NUMBER__", b"%010d" % number).replace(b'"SITE"', b'"%s"' % site.encode())
        batch.append((member, 100, site, _JOB))
        if len(batch) >= _BATCH:
            queue.push_many(batch)
            batch.clear()
    if batch:
        queue.push_many(batch)


def _usec_per_call(server: redis.Redis) -> float:
    """Redis CPU microseconds per call of ``evalsha`` since the last reset (every script call is one)."""
    return float(server.info("commandstats").get("cmdstat_evalsha", {}).get("usec_per_call", 0.0))


def measure(server: redis.Redis, keys: Keys, size: int, site_count: int, pops: int) -> dict[str, float]:
    """One row: fill, memory, then ``pops`` pops and acks."""
    server.flushall()
    queue = LeasedQueue(server, keys, lease_seconds=600)
    sites = [f"site{number:03d}" for number in range(site_count)]
    before = int(server.info("memory")["used_memory"])
    started = time.perf_counter()
    fill(queue, size, sites)
    filled = time.perf_counter() - started
    used = int(server.info("memory")["used_memory"]) - before
    pops = min(pops, size)
    popped = []
    server.config_resetstat()
    cpu = time.process_time()
    for _ in range(pops):
        got = queue.pop()
        assert got.member is not None and got.site is not None
        popped.append((got.member, got.site))
    pop_cpu = time.process_time() - cpu
    pop_usec = _usec_per_call(server)
    server.config_resetstat()
    cpu = time.process_time()
    for member, site in popped:
        queue.ack(member, site=site, job=_JOB, fetched=1, stored=1)
    ack_cpu = time.process_time() - cpu
    ack_usec = _usec_per_call(server)
    return {
        "size": size,
        "sites": site_count,
        "fill_s": filled,
        "bytes_per_request": used / size,
        "bytes_per_site": used / site_count,
        "pop_usec": pop_usec,
        "ack_usec": ack_usec,
        "client_usec": (pop_cpu + ack_cpu) / pops * 1e6,
    }


def _longest_command(server: redis.Redis) -> tuple[float, str]:
    """The longest command of the slow log (milliseconds, its name), the log emptied."""
    entries = server.slowlog_get(128)
    server.slowlog_reset()
    if not entries:
        return 0.0, "-"
    worst = max(entries, key=lambda entry: entry["duration"])
    command = worst["command"]
    name = command.split(b" ")[0].decode() if isinstance(command, bytes) else str(command).split(" ")[0]
    return worst["duration"] / 1000, name


def _popping(url: str, prefix: str, stop: Event, results: multiprocessing.Queue[tuple[float, int]]) -> None:
    """Another worker (a process of its own): pop the other site's requests until ``stop``; put the
    longest wait for one pop and how many pops Redis refused (busy, or no answer within the client's
    timeout)."""
    other = LeasedQueue(connect(url), Keys(prefix), lease_seconds=600)
    worst, refused = 0.0, 0
    while not stop.is_set():
        started = time.perf_counter()
        try:
            other.pop()
        except redis.RedisError:
            refused += 1
        worst = max(worst, time.perf_counter() - started)
        time.sleep(0.001)
    results.put((worst, refused))


def forget(server: redis.Redis, url: str, keys: Keys, size: int) -> dict[str, float | str]:
    """Forget one site of ``size`` queued requests while another client pops another site's."""
    server.flushall()
    queue = LeasedQueue(server, keys, lease_seconds=600)
    fill(queue, size, ["big"])
    fill(queue, 2_000, ["big"], offset=size)
    for _ in range(1_000):
        queue.pop()
    for _ in range(1_000):
        lease = queue.pop().member
        assert lease is not None
        queue.defer(lease, 3600, max_attempts=5)
    fill(queue, 50_000, ["other"], offset=size + 10_000)
    # Only the commands slower than 1 ms are logged, and all of them kept: the longest is among them.
    server.config_set("slowlog-log-slower-than", 1_000)
    server.config_set("slowlog-max-len", 100_000)
    server.slowlog_reset()
    stop = multiprocessing.Event()
    results: multiprocessing.Queue[tuple[float, int]] = multiprocessing.Queue()
    worker = multiprocessing.Process(target=_popping, args=(url, keys.prefix, stop, results))
    worker.start()
    time.sleep(0.5)
    started = time.perf_counter()
    taken = queue.take_sites(["big"], held=lambda _pipe: False)
    took = time.perf_counter() - started
    time.sleep(0.5)
    stop.set()
    worst_wait, refused = results.get()
    worker.join()
    assert taken is not None
    longest, name = _longest_command(server)
    server.config_set("slowlog-log-slower-than", 10_000)
    server.config_set("slowlog-max-len", 128)
    return {
        "size": size,
        "taken": len(taken["big"]),
        "left": server.zcard(keys.queue_of("big")) + int(server.hget(keys.pending, "big") or 0),
        "forget_s": took,
        "longest_ms": longest,
        "longest_cmd": name,
        "worst_pop_wait_ms": worst_wait * 1000,
        "pops_refused": refused,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# The dead letters' sites and kinds of error (letter n: site n % 50, kind n % 3), as a summary by site
# and kind meets them after a bad night: 150 groups.
_DEAD_SITES = 50
_DEAD_KINDS = ("HTTP 404", "HTTP 503", "timeout")


def fill_dead(server: redis.Redis, keys: Keys, count: int) -> None:
    """``count`` dead letters, one a second up to now, of _DEAD_SITES sites and _DEAD_KINDS kinds."""
    server.flushall()
    template = _member_template()
    now = time.time()
    with server.pipeline(transaction=False) as pipe:
        for number in range(count):
            site = b"site%03d" % (number % _DEAD_SITES)
            member = template.replace(b"NUMBER__", b"%010d" % number).replace(b'"SITE"', b'"%s"' % site)
            kind = _DEAD_KINDS[number % len(_DEAD_KINDS)]
            record = {"reason": f"{kind} after 2 retries", "kind": kind, "at": now - count + number}
            pipe.hset(keys.dead, member, json.dumps(record))
            if number % _BATCH == _BATCH - 1:
                pipe.execute()
        pipe.execute()


def dead_commands(server: redis.Redis, url: str, keys: Keys, count: int) -> list[str]:
    """Run the `dead` commands as an operator does (each a process of its own, against ``count`` dead
    letters filled anew): a line for each, with its user CPU and peak RSS, how many Redis commands it
    gave and the longest one."""
    commands = (
        ("dead", "list"),
        ("dead", "list", "--all", "--format", "jsonl"),
        ("dead", "requeue", "--all"),
        ("dead", "drop", "--all"),
    )
    lines = []
    env = {**os.environ, "REDIS_URL": url}
    for command in commands:
        fill_dead(server, keys, count)
        server.config_set("slowlog-log-slower-than", 1_000)
        server.slowlog_reset()
        before = int(server.info("stats")["total_commands_processed"])
        started = time.monotonic()
        with (
            tempfile.TemporaryFile() as out,
            tempfile.TemporaryFile() as err,
            tempfile.NamedTemporaryFile() as rss,
        ):
            # os.wait4: this child's own CPU (RUSAGE_CHILDREN's is of all children so far). Its peak RSS is
            # /usr/bin/time's: Linux keeps a process's peak RSS across exec, so a child of this process
            # (hundreds of MB after the fill) would report no less than this process's.
            child = subprocess.Popen(
                ["/usr/bin/time", "-o", rss.name, "-f", "%M", sys.executable, "-m", "crawler.cli", *command],
                cwd=_REPO_ROOT,
                env=env,
                stdout=out,
                stderr=err,
            )
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - started
            peak_mb = int(rss.read().split()[-1]) / 1024
            size = out.tell()
            out.seek(0)
            said = out.readline().decode(errors="replace").strip()[:60]
            if child.returncode:
                err.seek(0)
                said = f"exit {child.returncode}: {err.read().decode(errors='replace').strip()[-100:]}"
        longest, name = _longest_command(server)
        given = int(server.info("stats")["total_commands_processed"]) - before - 3
        lines.append(
            f"{count:,} `crawler {' '.join(command)}`: user CPU {usage.ru_utime:.1f} s; wall {wall:.1f} s;"
            f" peak RSS {peak_mb:.0f} MB; {given:,} Redis commands, longest {longest:.0f} ms"
            f" ({name}); {size:,} bytes out: {said!r}"
        )
    server.config_set("slowlog-log-slower-than", 10_000)
    return lines


def dead_letters(server: redis.Redis, keys: Keys, count: int) -> list[str]:
    """Read ``count`` dead letters as the `dead` commands (LeasedQueue.dead) and `crawler status` (its count
    per site) read them: a line for each, with this process's CPU and Redis's longest command."""
    fill_dead(server, keys, count)
    lines = []
    readers = (
        ("dead letters read (dead list)", LeasedQueue(server, keys).dead),
        ("counted per site (status)", lambda: dead_letters_by_site(server, keys)),
    )
    for label, read in readers:
        server.config_set("slowlog-log-slower-than", 1_000)
        server.slowlog_reset()
        cpu = time.process_time()
        read()
        cpu = time.process_time() - cpu
        longest, name = _longest_command(server)
        lines.append(
            f"{count:,} {label}: client CPU {cpu:.2f} s; longest Redis command {longest:.0f} ms ({name})"
        )
    server.config_set("slowlog-log-slower-than", 10_000)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000", help="requests queued (comma-separated)")
    parser.add_argument("--sites", default="10,500", help="sites they are spread over (comma-separated)")
    parser.add_argument("--pops", type=int, default=2_000, help="pops and acks measured per row")
    parser.add_argument("--forget", type=int, default=0, help="queued requests of the site forgotten")
    parser.add_argument("--dead", type=int, default=0, help="dead letters read")
    args = parser.parse_args(argv)
    keys = Keys("crawler")
    with tempfile.TemporaryDirectory() as folder, EmbeddedRedis(Path(folder), watch_seconds=0) as embedded:
        url = embedded.ensure()
        server = connect(url)
        # The bench measures Redis's memory and CPU, not its disk: no append-only file to write.
        server.config_set("appendonly", "no")
        server.config_set("save", "")
        if args.sizes:
            print(
                f"{'requests':>10} {'sites':>6} {'fill s':>7} {'B/request':>10} {'B/site':>12}"
                f" {'pop us':>7} {'ack us':>7} {'client us':>10}"
            )
            for size in (int(text) for text in args.sizes.split(",")):
                for site_count in (int(text) for text in args.sites.split(",")):
                    row = measure(server, keys, size, site_count, args.pops)
                    print(
                        f"{row['size']:>10,} {row['sites']:>6} {row['fill_s']:>7.1f}"
                        f" {row['bytes_per_request']:>10,.0f} {row['bytes_per_site']:>12,.0f}"
                        f" {row['pop_usec']:>7.1f} {row['ack_usec']:>7.1f} {row['client_usec']:>10.0f}",
                        flush=True,
                    )
        if args.forget:
            forgot = forget(server, url, keys, args.forget)
            print(
                f"forget a site of {forgot['size']:,} queued requests (+1,000 delayed, 1,000 leased):"
                f" {forgot['taken']:,} taken, {forgot['left']} left; {forgot['forget_s']:.2f} s;"
                f" longest Redis command {forgot['longest_ms']:.0f} ms ({forgot['longest_cmd']});"
                f" another worker's longest pop {forgot['worst_pop_wait_ms']:.0f} ms,"
                f" {forgot['pops_refused']} refused;"
                f" peak RSS {forgot['peak_rss_mb']:.0f} MB"
            )
        if args.dead:
            for line in dead_letters(server, keys, args.dead):
                print(line)
            for line in dead_commands(server, url, keys, args.dead):
                print(line, flush=True)
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
