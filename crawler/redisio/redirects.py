"""Links that redirected to an article URL seen already, waiting for the article's document to record them.

A second link to an article (a short link, a tracking link, an old URL) that redirects to an article URL
queued or fetched already is skipped unfetched (crawler/worker/scheduler.py); its redirect chain (the URL
asked for first, then any on the way) is noted in the hash ``crawler:redirected``, field the article's URL,
one chain a line, its URLs separated by spaces (a URL as Scrapy queues it has none). The store pipeline adds
the notes of a URL to its document's ``redirected_from`` when the document is there (at once, when it was
stored before; else as its batch is written) and then removes those it recorded (any noted meanwhile
stay for the next). A link
skipped as redirecting to a URL that itself redirected to the article (a short link seen already) is the
article's too: noted under the short link, it is gathered with the article's notes, or added to the
document that records the short link.

A note of an article that is never stored (its page failed for good, or was no article) is dropped
``NOTE_SECONDS`` (7 days) after it was noted: the sorted set ``crawler:redirected-at`` keeps the time of
each note (member: the article's URL and the chain, on two lines; a chain noted again is noted once, at its
latest time), and each note drops (a hundred at most) the notes older than that, each from its article's
notes, so a note never goes with an earlier one its article's document had not recorded yet. ``note``
returns how many it dropped; the worker counts them (``redirect/notes_expired``). A member that is an
article URL alone, written by a crawler that timed each article's first note, drops that article's notes
that have no time of their own (those noted since keep theirs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import redis

from crawler.keys import Keys
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded, script

__all__ = ["NOTE_SECONDS", "chains", "forget", "gathered", "note", "noted"]

# How long a note waits for its article's document, from when it was noted: an article is stored within
# minutes of its link, or within hours behind a site's backoff; one that never is lets its notes go.
NOTE_SECONDS = 7 * 24 * 3600.0
# Notes past NOTE_SECONDS dropped by one note, at most (the rest go with the next notes).
_DROPPED_AT_ONCE = 100

# Links noted as redirecting to a link noted as redirecting... followed at most this far (Scrapy's
# REDIRECT_MAX_TIMES is 20 at most in practice).
_LEVELS = 20

# The Lua function that removes from the notes' hash KEYS[1] the chains of an article URL (a table: chain ->
# true); the field goes once none is left.
_WITHOUT = """
local function without(url, gone)
  local kept = {}
  for chain in string.gmatch(redis.call('HGET', KEYS[1], url) or '', '[^\\n]+') do
    if not gone[chain] then
      kept[#kept + 1] = chain
    end
  end
  if #kept == 0 then
    redis.call('HDEL', KEYS[1], url)
  else
    redis.call('HSET', KEYS[1], url, table.concat(kept, '\\n'))
  end
end
"""
# KEYS: the notes' hash, the time of each note (a sorted set). ARGV: the article's URL, the chain (its URLs
# separated by spaces), now, the time of the oldest notes kept, how many older ones to drop at most.
# Returns how many notes it dropped (an article URL alone, an earlier crawler's member, drops its notes
# that have no time of their own).
_NOTE = (
    _WITHOUT
    + """
local before = redis.call('HGET', KEYS[1], ARGV[1])
if not before then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
elseif not string.find('\\n' .. before .. '\\n', '\\n' .. ARGV[2] .. '\\n', 1, true) then
  redis.call('HSET', KEYS[1], ARGV[1], before .. '\\n' .. ARGV[2])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1] .. '\\n' .. ARGV[2])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
local dropped = 0
for _, member in ipairs(old) do
  redis.call('ZREM', KEYS[2], member)
  local url, chain = string.match(member, '^([^\\n]*)\\n(.*)$')
  if url then
    without(url, {[chain] = true})
    dropped = dropped + 1
  else
    local gone = {}
    for untimed in string.gmatch(redis.call('HGET', KEYS[1], member) or '', '[^\\n]+') do
      if not gone[untimed] and not redis.call('ZSCORE', KEYS[2], member .. '\\n' .. untimed) then
        gone[untimed] = true
        dropped = dropped + 1
      end
    end
    without(member, gone)
  end
end
return dropped
"""
)
# KEYS: the notes' hash, their times. ARGV: the article's URL, its notes as read. Removes those notes and
# their times (the ones noted since stay), and the article's first note time an earlier crawler kept.
_FORGET = (
    _WITHOUT
    + """
local gone = {}
for chain in string.gmatch(ARGV[2], '[^\\n]+') do
  gone[chain] = true
  redis.call('ZREM', KEYS[2], ARGV[1] .. '\\n' .. chain)
end
without(ARGV[1], gone)
redis.call('ZREM', KEYS[2], ARGV[1])
"""
)


def note(server: redis.Redis, keys: Keys, url: str, chain: Sequence[str], *, now: float | None = None) -> int:
    """Note that ``chain`` (the URL asked for first) redirected to the article URL ``url`` (at ``now``,
    Redis's clock by default); the notes noted ``NOTE_SECONDS`` before are dropped. How many notes
    were dropped."""
    moment = shared_now() if now is None else now
    oldest = moment - NOTE_SECONDS
    dropped = script(server, _NOTE)(
        [keys.redirected, keys.redirected_at],
        [url, " ".join(chain), repr(moment), repr(oldest), _DROPPED_AT_ONCE],
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
    """Remove the notes of each ``(url, notes as read)`` recorded by its document; those noted since stay."""
    with server.pipeline(transaction=False) as pipe:
        for url, notes in recorded:
            pipe.eval(_FORGET, 2, keys.redirected, keys.redirected_at, url, notes)
        pipe.execute()
