"""The HTTP download handler of a worker and of the commands that fetch: Scrapy's HTTP/1.1 handler, closed
without its race.

Scrapy's handler closes its connection pool with a 1 s timer that fires the pool's Deferred if the pool
has not (it hangs on some network errors), and cancels that timer only once its coroutine resumes, a turn
of the event loop after the pool fired. When the reactor is busy for a second as the crawl closes (a slow
machine; pipelines closing in the same turn; a clean clone compiling the modules it imports), the pool's
aborted connections and the timer are handled in one pass: the pool fires, then the timer fires it again,
and Twisted prints ``AlreadyCalledError`` "while handling timed call" as a raw traceback on stderr, after
a crawl that ended well. Here the timer is cancelled the moment the pool fires.
"""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

__all__ = ["HTTPDownloadHandler"]


class HTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler (``DOWNLOAD_HANDLERS`` for http and https) whose close fires the pool's
    Deferred once: by the pool, or by the timeout when the pool has not fired within it. A pool that fires
    after the timeout (its connections taking longer than that to abort) still fires it a second time,
    as with Scrapy's own handler: the timeout does not stop it."""

    async def close(self) -> None:
        closed: Deferred[None] = self._pool.closeCachedConnections()  # type: ignore[no-untyped-call]
        timeout = call_later(self._disconnect_timeout, closed.callback, None)

        def stop_timeout(result: object) -> object:
            timeout.cancel()  # a no-op once it ran
            return result

        closed.addBoth(stop_timeout)
        await maybe_deferred_to_future(closed)
