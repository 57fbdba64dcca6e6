"""The embedded Redis server's reaper: ``python -m crawler.redisio.reaper DATA_DIR SERVER_PID SECONDS``.

The process that starts the embedded server (:mod:`crawler.redisio.embedded`) starts this one beside it,
in its own session; it forks at once and the launcher exits, so the reaper is nobody's child and
outlives its starter. Every ``SECONDS`` it looks at the server's users (``redis/users/<pid>-<token>``)
under the start lock; when none of their processes is alive (the last one was killed with SIGKILL, so it
could not shut the server down) it shuts the server down with SHUTDOWN, which flushes its append-only
file. A server that refuses writes (MISCONF: its append-only file could not be written, a full disk) is
not shut down, as SHUTDOWN would exit without what it holds in memory and could not write: the reaper says
so once and goes on looking, and shuts it down once it takes writes again (space was freed). A look that
fails (the start lock or the users' folder cannot be read or written, the server's socket cannot be
opened) is said once, with why, and tried again at the next one. It exits once the server ``SERVER_PID``
is gone, however it went (a process that took its pid since, no redis-server of this folder, is not it).
Its log goes to ``redis.log``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from crawler.errors import CrawlerError
from crawler.redisio.embedded import EmbeddedRedis

__all__ = ["reap"]

logger = logging.getLogger(__name__)


def reap(data_dir: Path, server_pid: int, seconds: float) -> None:
    """Shut the embedded server of ``data_dir`` down once it has no live user; return when it is gone."""
    server = EmbeddedRedis(data_dir, watch_seconds=0)
    said = False
    failure = ""
    while server.runs_server(server_pid):
        time.sleep(seconds)
        try:
            kept = server.stop_if_unused(server_pid)
        except (OSError, CrawlerError) as exc:
            if str(exc) != failure:
                logger.warning(
                    "cannot look at the users of the embedded Redis server (pid %d) at %s: %s; looking again"
                    " every %g s",
                    server_pid,
                    server.socket_path,
                    exc,
                    seconds,
                )
            failure = str(exc)
            continue
        failure = ""
        if kept and not said:
            logger.warning(
                "no live process uses the embedded Redis server (pid %d) at %s, but it refuses writes"
                " (MISCONF: it could not write its append-only file %s): not shutting it down, which would"
                " lose what it holds in memory; free space on the disk of %s: it then writes what it holds"
                " and takes writes again by itself, and this reaper shuts it down",
                server_pid,
                server.socket_path,
                server.aof_path,
                server.directory,
            )
        said = kept


def main(argv: list[str]) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s crawler reaper [%(process)d]: %(message)s", stream=sys.stderr
    )
    data_dir, server_pid, seconds = argv
    if os.fork():
        return 0  # the launcher exits at once (its starter waits for it); the reaper goes on alone
    reap(Path(data_dir), int(server_pid), float(seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
