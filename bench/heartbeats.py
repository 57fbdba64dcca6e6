"""The cost of a worker's heartbeat in a big fleet: one beat (the beat script) and one look for dead workers
(the scheduler's ``release_dead`` read and ``dead_workers``) with N workers registered, all alive on
other machines, before and after the index of ``crawler:workers`` (``Heartbeats``).

Run from the repo root::

    .venv/bin/python bench/heartbeats.py [--workers 1000] [--beats 200]

An embedded Redis in a temporary folder holds N workers' beats. Printed per way, the mean over ``--beats``
beats of: the wall time of a beat and of a look (this process's round trip, Redis's work and the decoding
of what it returns), and the entries of other workers each reads. Before: the beat script read the hash
whole (HGETALL) and so did the look, every entry decoded; a fleet of N beating every few seconds reads
N x N entries a period. The "before" script is kept here as the baseline, as it was (commit d3b8a36).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `crawler` importable
    sys.path.insert(0, str(_REPO_ROOT))

from crawler.keys import Keys  # noqa: E402
from crawler.redisio.clock import redis_clock  # noqa: E402
from crawler.redisio.connection import connect  # noqa: E402
from crawler.redisio.embedded import EmbeddedRedis  # noqa: E402
from crawler.redisio.workers import Heartbeats, beat_id, dead_workers  # noqa: E402

# The beat script before the index (crawler/worker/heartbeat.py at d3b8a36).
_BEFORE_BEAT = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local beats = redis.call('HGETALL', KEYS[1])
local now = tonumber(ARGV[3])
for i = 1, #beats, 2 do
  local ok, beat = pcall(cjson.decode, beats[i + 1])
  if ok and type(beat) == 'table' and tonumber(beat['seen']) then
    local dead_for = now - tonumber(beat['seen'])
    local forget = tonumber(beat['forget']) or tonumber(ARGV[4])
    if dead_for > forget and dead_for > 3 * (tonumber(beat['every']) or 0) then
      redis.call('HDEL', KEYS[1], beats[i])
    end
  end
end
"""

_FORGET = 3600.0


def _beat(number: int, now: float) -> dict[str, object]:
    """Worker ``number``'s beat at ``now``, as a worker of another machine writes it."""
    return {
        "host": f"far{number}",
        "pid": 4,
        "pid_space": "another machine",
        "started": now - 100,
        "seen": now,
        "every": 5.0,
        "responses": 1000,
        "rate": 60.0,
        "sites": [],
        "redis_errors": 0,
        "store": "/data/articles (far)",
        "forget": _FORGET,
    }


def _mean_ms(call: Callable[[], int], times: int) -> tuple[float, int]:
    """``call``'s mean wall time over ``times`` calls (ms), and the entries its last call read."""
    read = 0
    started = time.perf_counter()
    for _ in range(times):
        read = call()
    return (time.perf_counter() - started) * 1000 / times, read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1000, help="workers registered (default 1000)")
    parser.add_argument("--beats", type=int, default=200, help="beats and looks timed (default 200)")
    options = parser.parse_args(argv)
    key = Keys("bench").workers
    with tempfile.TemporaryDirectory() as folder, EmbeddedRedis(Path(folder), watch_seconds=0) as embedded:
        server = connect(embedded.ensure())
        now = redis_clock(server)
        heartbeats = Heartbeats(server, key)
        for number in range(options.workers):
            heartbeats.write(f"far{number}:4:aaaaaa", _beat(number, now), now, _FORGET)
        me = json.dumps(_beat(options.workers, now))
        before = server.register_script(_BEFORE_BEAT)

        def beat_before() -> int:
            before(keys=[key], args=["me:1:aaaaaa", me, now, _FORGET])
            return server.hlen(key) - 1

        def look_before() -> int:
            beats = {beat_id(worker): beat for worker, beat in server.hgetall(key).items()}
            dead_workers(beats, now, quiet_for=16.0)
            return len(beats) - 1

        def beat_after() -> int:
            return heartbeats.write("me:1:aaaaaa", _beat(options.workers, now), now, _FORGET)

        def look_after() -> int:
            beats = heartbeats.may_be_dead(now)
            dead_workers(beats, now, quiet_for=16.0)
            return len(beats)

        print(f"{options.workers} workers alive elsewhere, mean of {options.beats} (wall ms; entries read):")
        for name, beat, look in (("before", beat_before, look_before), ("after", beat_after, look_after)):
            beat_ms, beat_read = _mean_ms(beat, options.beats)
            look_ms, look_read = _mean_ms(look, options.beats)
            beat_said = f"beat {beat_ms:7.3f} ms ({beat_read} read)"
            print(f"  {name:6}  {beat_said}  look {look_ms:7.3f} ms ({look_read} read)")
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
