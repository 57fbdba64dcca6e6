"""A rules folder of many sites: a worker's reload after an edit of one, `rules check`, `crawler status`.

    .venv/bin/python bench/many_rules.py [--rules 1000] [--rounds 3] [--yaml]

Writes ``--rules`` valid rules (the demo's three, copied under other names and domains) to a temporary
folder, then prints, alternating in each round:

- the crawl thread's CPU for a worker's read of the folder after one file was edited: ``rules_stamp`` and
  ``load_rules`` parsing the whole folder (as before ``RuleFiles``), then parsing the changed files alone;
- ``rules check``'s reading of the folder (``load_rules``, every file), with libyaml's YAML loader and with
  PyYAML's own (``--yaml``: this alone);
- ``build_status`` of every site against an embedded Redis holding each site's grab state, its last job
  and 8 hours of counters: wall and CPU time, client round trips and the commands Redis ran.

CPU time is this process's (``time.process_time``): the machine's other work moves wall times.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from crawler.demo import DEMO_RULES  # noqa: E402
from crawler.keys import Keys, hour_of  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.rules import RuleFiles, load_rules, rules_stamp  # noqa: E402
from crawler.rules import load as rules_load  # noqa: E402
from crawler.status import build_status  # noqa: E402


def write_rules(folder: Path, count: int) -> None:
    """``count`` rules, dated an hour ago (older than RuleFiles' window for files just written)."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(DEMO_RULES.glob("*.yaml"))]
    past = time.time() - 3600
    for number in range(count):
        host = f"site{number}.example.com"
        text = (
            texts[number % len(texts)]
            .replace("127.0.0.1:8631", host)
            .replace("[127.0.0.1]", f"[{host}]")
            .replace("allow_private_addresses: true", "allow_private_addresses: false")
        )
        path = folder / f"site{number:04d}.yaml"
        path.write_text(text, encoding="utf-8")
        os.utime(path, (past, past))


def reloads(folder: Path, rounds: int) -> None:
    time.sleep(rules_load.RACY_NS / 1e9)  # the files' change times (os.utime's) past RuleFiles' window
    files = RuleFiles()
    load_rules(folder, files=files)
    edited = folder / "site0001.yaml"
    text = edited.read_text(encoding="utf-8")
    for round_number in range(rounds):
        for mode in ("whole folder", "changed files"):
            edited.write_text(text + f"# edit {round_number} {mode}\n", encoding="utf-8")
            started = time.process_time()
            rules_stamp(folder)
            read = load_rules(folder, files=files if mode == "changed files" else None)
            spent = time.process_time() - started
            print(f"reload after one edit, {mode:13s}: {spent * 1000:8.1f} ms CPU ({len(read)} rules)")


def rules_check(folder: Path, rounds: int) -> None:
    """``rules check``'s read of the folder, alternately with libyaml's loader and with PyYAML's own (as
    when PyYAML was built without libyaml)."""
    libyaml = rules_load._LIBYAML_LOADER
    loaders = [("libyaml", libyaml)] if libyaml is not None else []
    for _round in range(rounds):
        for name, loader in [*loaders, ("PyYAML", None)]:
            rules_load._LIBYAML_LOADER = loader
            started = time.process_time()
            read = load_rules(folder)
            spent = time.process_time() - started
            print(f"rules check (load_rules), {name + ':':8s} {spent:8.2f} s CPU ({len(read)} rules)")
    rules_load._LIBYAML_LOADER = libyaml


def status(folder: Path, data: Path, rounds: int) -> None:
    ruleset = load_rules(folder)
    keys = Keys("crawler")
    with EmbeddedRedis(data / "redis") as embedded:
        server = connect(embedded.url)
        now = time.time()
        with server.pipeline(transaction=False) as pipe:
            for number, site in enumerate(ruleset.rules):
                job = f"job{number}"
                pipe.hset(keys.grab(site), mapping={"last": now - 600, "next": now + 600, "job": job})
                pipe.hset(keys.job(job), mapping={"stored": 3, "pending": 0})
                for back in range(0, 24, 3):
                    pipe.hset(keys.stats(site, hour_of(now - 3600 * back)), mapping={"crawl/pages": 10})
                pipe.hset(keys.pending, site, 1)
            pipe.execute()
        sent = [0]
        send: Callable[..., None] = redis.connection.AbstractConnection.send_packed_command

        def counted(
            connection: redis.connection.AbstractConnection, command: Any, check_health: bool = True
        ) -> None:
            sent[0] += 1
            send(connection, command, check_health)

        redis.connection.AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
        build_status(server, keys, ruleset, time.time())  # the connections made
        for _round in range(rounds):
            before = int(server.info("stats")["total_commands_processed"])
            sent[0] = 0
            started, wall = time.process_time(), time.perf_counter()
            report = build_status(server, keys, ruleset, time.time())
            cpu, wall = time.process_time() - started, time.perf_counter() - wall
            commands = int(server.info("stats")["total_commands_processed"]) - before - 1
            print(
                f"status (build_status):           {wall:8.2f} s wall, {cpu:.2f} s CPU, {sent[0]} round"
                f" trips, {commands:,} Redis commands ({len(report['sites'])} sites)"
            )
        redis.connection.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000, help="how many rules (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each measure (default 3)")
    parser.add_argument("--yaml", action="store_true", help="the rules check's read alone, with each loader")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawler-many-rules-") as root:
        folder = Path(root) / "rules"
        folder.mkdir()
        write_rules(folder, args.rules)
        print(f"{args.rules} rules in {folder}")
        if args.yaml:
            rules_check(folder, args.rounds)
            return
        reloads(folder, args.rounds)
        rules_check(folder, args.rounds)
        status(folder, Path(root), args.rounds)


if __name__ == "__main__":
    main()
