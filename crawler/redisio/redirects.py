"""Links that redirected to an article URL seen already, waiting for the article's document to record them.

A second link to an article (a short link, a tracking link, an old URL) that redirects to an article URL
queued or fetched already is skipped unfetched (crawler/worker/scheduler.py); its redirect chain (the URL
asked for first, then any on the way) is noted in the hash ``crawler:redirected``, field the article's URL,
one chain a line, its URLs separated by spaces (a URL as Scrapy queues it has none). The store pipeline adds
the notes of a URL to its document's ``redirected_from`` when the document is there (at once, when it was
stored before; else as its batch is written) and then removes them, unless more came meanwhile. A link
skipped as redirecting to a URL that itself redirected to the article (a short link seen already) is the
article's too: noted under the short link, it is gathered with the article's notes, or added to the
document that records the short link.

Notes of an article that is never stored (its page failed for good, or was no article) are dropped
``NOTE_SECONDS`` (7 days) after the article's first note: the sorted set ``crawler:redirected-at`` keeps
each article URL's first note time, and each note drops (a hundred at most) the notes older than that.
``note`` returns how many it dropped; the worker counts them (``redirect/notes_expired``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import redis

from crawler.keys import Keys
from crawler.redisio.connection import decoded

__all__ = ["NOTE_SECONDS", "chains", "forget", "gathered", "note", "noted"]

# How long the notes of an article URL wait for its document, from the first: an article is stored within
# minutes of its link, or within hours behind a site's backoff; one that never is lets its notes go.
NOTE_SECONDS = 7 * 24 * 3600.0
# Notes of articles past NOTE_SECONDS dropped by one note, at most (the rest go with the next notes).
_DROPPED_AT_ONCE = 100

# Links noted as redirecting to a link noted as redirecting... followed at most this far (Scrapy's
# REDIRECT_MAX_TIMES is 20 at most in practice).
_LEVELS = 20

# KEYS: the notes' hash, the time of each article URL's first note (a sorted set). ARGV: the article's URL,
# the chain (its URLs separated by spaces), now, the first note time of the oldest notes kept, how many
# older ones to drop at most. Returns how many articles' notes it dropped.
_NOTE = """
local before = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], before and (before .. '\\n' .. ARGV[2]) or ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
for _, url in ipairs(old) do
  redis.call('HDEL', KEYS[1], url)
  redis.call('ZREM', KEYS[2], url)
end
return #old
"""
# KEYS: the notes' hash, their first note times. ARGV: the article's URL, its notes as read. Removes them
# unless more came since.
_FORGET = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
"""


def note(server: redis.Redis, keys: Keys, url: str, chain: Sequence[str], *, now: float | None = None) -> int:
    """Note that ``chain`` (the URL asked for first) redirected to the article URL ``url`` (at ``now``,
    this machine's clock by default); the notes of articles first noted ``NOTE_SECONDS`` before are
    dropped. How many articles' notes were dropped."""
    moment = time.time() if now is None else now
    oldest = moment - NOTE_SECONDS
    dropped = server.eval(
        _NOTE,
        2,
        keys.redirected,
        keys.redirected_at,
        url,
        " ".join(chain),
        repr(moment),
        repr(oldest),
        _DROPPED_AT_ONCE,
    )
    return int(dropped)


def noted(server: redis.Redis, keys: Keys, urls: Sequence[str]) -> dict[str, str]:
    """The notes of those of ``urls`` that have some, as read (one round trip)."""
    if not urls:
        return {}
    values = server.hmget(keys.redirected, list(urls))
    return {url: decoded(value) for url, value in zip(urls, values, strict=True) if value is not None}


def chains(notes: str) -> list[str]:
    """The URLs of ``notes``, in the order they were noted, each chain's as it went."""
    return [url for line in notes.splitlines() for url in line.split()]


def gathered(server: redis.Redis, keys: Keys, notes: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The URLs of ``notes`` (an article URL's) and of the notes of those URLs, and so on (a link skipped
    as redirecting to a short link that was itself skipped as redirecting to the article), in order;
    with the notes read besides ``notes``, ``(url, notes)`` each, for :func:`forget`."""
    found = chains(notes)
    taken: list[tuple[str, str]] = []
    read: set[str] = set()
    ahead = found
    for _ in range(_LEVELS):
        asked = [url for url in dict.fromkeys(ahead) if url not in read]
        read.update(asked)
        more = noted(server, keys, asked)
        if not more:
            break
        taken.extend(more.items())
        ahead = [url for value in more.values() for url in chains(value)]
        found = [*found, *ahead]
    return found, taken


def forget(server: redis.Redis, keys: Keys, recorded: Iterable[tuple[str, str]]) -> None:
    """Remove the notes of each ``(url, notes as read)`` recorded by its document, unless more came since."""
    with server.pipeline(transaction=False) as pipe:
        for url, notes in recorded:
            pipe.eval(_FORGET, 2, keys.redirected, keys.redirected_at, url, notes)
        pipe.execute()
