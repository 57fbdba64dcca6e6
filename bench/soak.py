"""Soak bench: `crawler run` left running, sampled every minute for what grows without bound.

Run from the repo root::

    .venv/bin/python bench/soak.py --minutes 40            # 30 farm sites, failing sites, a discover rule
    .venv/bin/python bench/soak.py --minutes 5 --sites 5   # smoke run

It starts, in a fresh folder (``--work``, default a temporary one; the embedded Redis of its data folder):

- a farm of ``--sites`` generated news sites on 127.0.0.1 (``crawler.demo.farm``; index pages, feeds,
  sitemaps and APIs) whose clock is the real time, each publishing one to two articles a minute, with
  ``schedule.every`` of 1 or 2 minutes;
- three failing sites on a server of their own whose robots.txt is a 404: one answers 503 to every page,
  one answers its index and 500 to its articles, one never answers within ``DOWNLOAD_TIMEOUT`` (5 s here);
- a discover rule over ``crawler.demo.web`` (60 hosts on 127.0.0.1, one port each), every 2 minutes;
- ``crawler run`` (the scheduler and a worker), its output to ``run.log``;
- every 5 minutes a ``crawler temp`` of a farm site, and a ``crawler temp SITE --again``.

Every ``--every`` seconds it samples: the Redis keys by kind (SCAN; a key's site, job, host or hour parts
counted as one kind), ``used_memory``, the crawler:politeness fields, the lease, delayed and dead sets, the
ended jobs' hashes and how many have no time-to-live, the RSS, open fds and threads of every process (the
run, its children, the Redis server), the log's size and the data folder's files. At the end it prints
each figure's growth per hour (a least-squares line through the samples after the first ``--warmup``
minutes), the biggest growers first; every sample is kept in ``samples.jsonl`` of the folder.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.demo.farm import Farm, FarmSite  # noqa: E402
from crawler.demo.web import SimWeb, served  # noqa: E402

# Discover web size: enough hosts that the host slots keep coming over the run.
WEB_HOSTS = 60
# Seconds between the temp crawls the harness starts beside the service.
TEMP_EVERY = 300.0
# Seconds the failing site that hangs waits before its answer (past the run's DOWNLOAD_TIMEOUT).
HANG_SECONDS = 20.0
RUN_SETTINGS = ("DOWNLOAD_TIMEOUT=5", "RETRY_TIMES=1")


class _Failing(http.server.BaseHTTPRequestHandler):
    """Three failing sites: /down/ (503 everywhere), /broken/ (index fine, articles 500), /hang/ (no
    answer within the timeout); robots.txt is a 404 for them all."""

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        if parts[0] == "down" or parts == ["robots.txt"]:
            self._send(503 if parts[0] == "down" else 404, b"no")
        elif parts[0] == "broken" and len(parts) == 1:
            minute = int(time.time() // 60)
            links = "".join(f'<li><a href="/broken/a/{minute - k}.html">x</a></li>' for k in range(5))
            self._send(200, f'<html><body><ul class="list">{links}</ul></body></html>'.encode())
        elif parts[0] == "hang":
            time.sleep(HANG_SECONDS)
            self._send(200, b"<html><body>late</body></html>")
        else:
            self._send(500, b"oops")

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        return None


def _failing_rule(origin: str, name: str) -> str:
    return (
        f"name: Failing site {name}\ndomains: [127.0.0.1]\nstart_urls: ['{origin}/{name}/']\n"
        f"index:\n  links:\n    xpath: [\"//ul[@class='list']\"]\n    allow: ['/{name}/a/']\n"
        "article:\n  fields:\n    title: {xpath: '//h1'}\n    body: {xpath: '//p'}\n"
        "politeness: {delay: 0, concurrency: 2}\nschedule: {every: 1m}\n"
    )


def _farm_sites(count: int) -> list[FarmSite]:
    sites = []
    for n in range(count):
        kind = n % 4
        sites.append(
            FarmSite(
                f"s{n:02d}",
                per_hour=60.0 + 60.0 * (n % 3) / 2,
                every="1m" if n % 2 else "2m",
                feed=kind == 1,
                sitemap=kind == 2,
                api=kind == 3,
            )
        )
    return sites


# --- sampling -------------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"^[0-9a-f]{8,}$|^\d+$|^s\d\d$|^(down|broken|hang|web)$|^\d{10}$")


def _kind(key: str) -> str:
    """A key's kind: its parts with site, job and hour names as '*' (crawler:stats:*:*)."""
    parts = key.split(":")
    return ":".join("*" if _VARIABLE.match(part) else part for part in parts)


def _proc(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) if "VmRSS" in status else 0  # type: ignore[union-attr]
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return {"rss_kb": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def sample(client: redis.Redis, run_pid: int, work: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    kinds: Counter[str] = Counter()
    ended = jobs_no_ttl = 0
    for key in client.scan_iter(count=1000):
        name = key.decode()
        kinds[_kind(name)] += 1
        if re.fullmatch(r"crawler:job:[^:]+", name) and client.type(name) == b"hash":
            ended += bool(client.hexists(name, "ended"))
            jobs_no_ttl += client.ttl(name) == -1
    figures.update({f"keys {kind}": count for kind, count in kinds.items()})
    figures["keys total"] = sum(kinds.values())
    figures["jobs ended"] = ended
    figures["jobs without ttl"] = jobs_no_ttl
    info = client.info("memory")
    figures["redis used_memory"] = info["used_memory"]
    figures.update(
        {
            "politeness fields": client.hlen("crawler:politeness"),
            "leases": client.zcard("crawler:leases"),
            "delayed": client.zcard("crawler:delayed"),
            "dead": client.hlen("crawler:dead"),
            "attempts": client.hlen("crawler:attempts"),
            "lease-sites": client.hlen("crawler:lease-sites"),
            "lease-scores": client.hlen("crawler:lease-scores"),
            "pending fields": client.hlen("crawler:pending"),
            "workers": client.hlen("crawler:workers"),
            "redirected-at": client.zcard("crawler:redirected-at"),
        }
    )
    redis_pid = int((work / "data" / "redis" / "redis.pid").read_text())
    pids = {"run": run_pid, "redis": redis_pid}
    for n, child in enumerate(sorted(_children(run_pid))):
        pids[f"run child {n}"] = child
    for label, pid in pids.items():
        try:
            for what, value in _proc(pid).items():
                figures[f"{label} {what}"] = value
        except (OSError, AttributeError):
            pass
    figures["run children"] = len(pids) - 2
    figures["log bytes"] = (work / "run.log").stat().st_size
    total = 0
    for path in (work / "data").rglob("*"):
        if path.is_file():
            size = path.stat().st_size
            total += size
            if path.suffix in (".sqlite-wal", ".sqlite-shm") or path.name.endswith(("-wal", "-shm")):
                figures[f"file {path.name}"] = size
            elif path.name.startswith("appendonly") or path.suffix == ".aof":
                figures["aof bytes"] = figures.get("aof bytes", 0) + size
    figures["data bytes"] = total
    return figures


def growth(samples: list[dict[str, Any]], warmup: float) -> list[tuple[str, float, float, float]]:
    """Each figure's least-squares slope per hour over the samples after ``warmup`` seconds, with its first
    and last value."""
    late = [s for s in samples if s["t"] >= warmup] or samples
    names = sorted({name for s in late for name in s if name != "t"})
    rows = []
    for name in names:
        points = [(s["t"], s[name]) for s in late if isinstance(s.get(name), int | float)]
        if len(points) < 2:
            continue
        mean_t = sum(t for t, _ in points) / len(points)
        mean_v = sum(v for _, v in points) / len(points)
        spread = sum((t - mean_t) ** 2 for t, _ in points)
        slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0
        rows.append((name, slope * 3600, points[0][1], points[-1][1]))
    return sorted(rows, key=lambda row: -abs(row[1]) / (abs(row[3]) + 1))


# --- the run --------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--sites", type=int, default=30)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=5.0, help="minutes left out of the growth")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "-s", "--set", action="append", default=[], help="NAME=VALUE, a setting of the run and temp crawls"
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="soak-"))
    shutil.rmtree(work, ignore_errors=True)
    (work / "rules").mkdir(parents=True)
    print(f"soak: {work}", flush=True)
    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    failing.daemon_threads = True
    threading.Thread(target=failing.serve_forever, daemon=True).start()
    failing_origin = f"http://127.0.0.1:{failing.server_address[1]}"
    start = time.time()
    farm = Farm(_farm_sites(args.sites), start=start)
    web = SimWeb(1, WEB_HOSTS)
    with farm, served(1, WEB_HOSTS, work / "web.log") as origins:
        for site in farm.sites:
            (work / "rules" / f"{site.name}.yaml").write_text(farm.rule(site.name))
        for name in ("down", "broken", "hang"):
            (work / "rules" / f"{name}.yaml").write_text(_failing_rule(failing_origin, name))
        rule = web.rule(origins, budget=40, max_depth=3, every="2m")
        (work / "rules" / "web.yaml").write_text(f"name: Discover on the generated web\n{rule}")
        env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "MONGO_URI")}
        env.update(
            CRAWLER_DATA_DIR=str(work / "data"),
            CRAWLER_RULES_DIR=str(work / "rules"),
            CRAWLER_ALLOW_PRIVATE_NETWORKS="1",
        )
        settings = [part for setting in (*RUN_SETTINGS, *args.set) for part in ("-s", setting)]
        command = [sys.executable, "-m", "crawler.cli"]
        with (work / "run.log").open("wb") as log:
            run = subprocess.Popen(
                [*command, "run", *settings], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
        samples: list[dict[str, Any]] = []
        temps: list[subprocess.Popen[bytes]] = []
        socket = work / "data" / "redis" / "redis.sock"
        client: redis.Redis | None = None
        end = start + args.minutes * 60
        next_sample = start + 10
        next_temp = start + 60
        temp_count = 0
        try:
            while time.time() < end and run.poll() is None:
                farm.now = time.time()
                if time.time() >= next_temp:
                    name = farm.sites[temp_count % len(farm.sites)].name
                    again = ["--again"] if temp_count % 2 else []
                    with (work / "temp.log").open("ab") as temp_log:
                        temps.append(
                            subprocess.Popen(
                                [*command, "temp", name, *again, *settings],
                                env=env,
                                stdout=temp_log,
                                stderr=temp_log,
                                stdin=subprocess.DEVNULL,
                            )
                        )
                    temp_count += 1
                    next_temp += TEMP_EVERY
                if time.time() >= next_sample and socket.exists():
                    client = client or redis.Redis(unix_socket_path=str(socket))
                    figures = sample(client, run.pid, work)
                    figures["t"] = round(time.time() - start, 1)
                    samples.append(figures)
                    with (work / "samples.jsonl").open("a") as out:
                        out.write(json.dumps(figures) + "\n")
                    print(
                        f"[{figures['t'] / 60:5.1f} min] keys {figures['keys total']}, used_memory "
                        f"{figures['redis used_memory']}, politeness {figures['politeness fields']}, "
                        f"run RSS {figures.get('run rss_kb')} kB, fds {figures.get('run fds')}, "
                        f"log {figures['log bytes']}",
                        flush=True,
                    )
                    next_sample += args.every
                time.sleep(0.5)
        finally:
            for temp in temps:
                if temp.poll() is None:
                    temp.send_signal(signal.SIGINT)
            run.send_signal(signal.SIGINT)
            try:
                run.wait(60)
            except subprocess.TimeoutExpired:
                run.kill()
            for temp in temps:
                try:
                    temp.wait(30)
                except subprocess.TimeoutExpired:
                    temp.kill()
            failing.shutdown()
    hours = (samples[-1]["t"] - samples[0]["t"]) / 3600 if len(samples) > 1 else 0
    print(
        f"\ngrowth per hour over {hours * 60:.0f} min after {args.warmup:g} min of warm-up"
        f" ({len(samples)} samples, settings: {' '.join((*RUN_SETTINGS, *args.set))}):"
    )
    print(f"{'figure':58} {'per hour':>14} {'first':>12} {'last':>12}")
    for name, per_hour, first, last in growth(samples, args.warmup * 60):
        if per_hour:
            print(f"{name:58} {per_hour:14.1f} {first:12} {last:12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
