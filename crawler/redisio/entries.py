"""What feeds', sitemaps' and API pages' entries said of article URLs seen already, waiting for the article's
document to take it.

An entry (title, date, author) travels with the request its listing queues. When its URL was seen already
(another listing queued it first, in this worker or another, or its article was stored before the listing
was read), the request is not queued and its entry is noted here instead: the hash ``crawler:met-entries``,
field the article's URL, value the entry as JSON (a later entry's values over an earlier one's). The store
pipeline gives the article's document the fields it lacks from the note (never replacing a stored value)
when the document is there: at once for one stored before, else as its batch is written; then it removes
the note. Both sides look after writing their own part (the note, the document), so one of them sees the
other's. A document stored with a title, date and author takes nothing from a note: its batch removes the
notes of its URL (read with the batch's others, so a batch that has none writes nothing).

A note of an article that is never stored (its page failed for good, or was no article) is dropped
``NOTE_SECONDS`` after it was noted: the sorted set ``crawler:met-entries-at`` keeps when each URL was noted
last, and each note drops (a hundred at most) the notes older than that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import redis

from crawler.keys import Keys
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded, script

__all__ = ["DROP_OLD_LUA", "FIELDS", "NOTE_SECONDS", "forget", "note", "noted"]

# The fields an entry gives its article's document where the document has none.
FIELDS = ("title", "published", "author")
# How long a note waits for its article's document, from when it was noted last: as the notes of links
# redirecting to an article (crawler/redisio/redirects.py), an article is stored within minutes of its
# link, or within hours behind a site's backoff.
NOTE_SECONDS = 7 * 24 * 3600.0
# Notes past NOTE_SECONDS dropped by one note, at most (the rest go with the next notes).
_DROPPED_AT_ONCE = 100

# KEYS[1], KEYS[2]: a hash and the time of each of its fields (a sorted set). ARGV[2], ARGV[3]: the time of
# the oldest fields kept, how many older ones to drop at most. Drops them; returns how many.
DROP_OLD_LUA = """
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
for _, url in ipairs(old) do
  redis.call('ZREM', KEYS[2], url)
  redis.call('HDEL', KEYS[1], url)
end
return #old
"""

# KEYS: the notes' hash, their times. ARGV: now, the time of the oldest notes kept, how many older ones to
# drop at most, then URL and entry (JSON) pairs. An entry noted over an earlier one of the same URL keeps
# the earlier one's values it does not give. Returns how many notes it dropped.
_NOTE = (
    """
for i = 4, #ARGV, 2 do
  local entry = cjson.decode(ARGV[i + 1])
  local before = redis.call('HGET', KEYS[1], ARGV[i])
  if before then
    local merged = cjson.decode(before)
    for name, value in pairs(entry) do
      merged[name] = value
    end
    entry = merged
  end
  redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(entry))
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
"""
    + DROP_OLD_LUA
)
# KEYS: the notes' hash, their times. ARGV: URL and note (as read) pairs. Removes each note still as read
# (one noted again since stays for its document).
_FORGET = """
for i = 1, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('ZREM', KEYS[2], ARGV[i])
  end
end
"""


def note(
    server: redis.Redis, keys: Keys, entries: Mapping[str, Mapping[str, str]], *, now: float | None = None
) -> int:
    """Note the ``entries`` (article URL -> the values of :data:`FIELDS` its entry gave) in one call (at
    ``now``, Redis's clock by default); the notes noted ``NOTE_SECONDS`` before are dropped. How
    many notes were dropped."""
    if not entries:
        return 0
    moment = shared_now() if now is None else now
    pairs = [
        part
        for url, entry in entries.items()
        for part in (url, json.dumps({name: entry[name] for name in FIELDS if entry.get(name)}))
    ]
    dropped = script(server, _NOTE)(
        [keys.met_entries, keys.met_entries_at],
        [repr(moment), repr(moment - NOTE_SECONDS), _DROPPED_AT_ONCE, *pairs],
    )
    return int(dropped)


def noted(server: redis.Redis, keys: Keys, urls: Sequence[str]) -> dict[str, tuple[str, dict[str, str]]]:
    """The notes of those of ``urls`` that have some (one round trip): URL -> (the note as read, its values
    of :data:`FIELDS`)."""
    if not urls:
        return {}
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for url, value in zip(urls, server.hmget(keys.met_entries, list(urls)), strict=True):
        if value is not None:
            text = decoded(value)
            entry = json.loads(text)
            found[url] = (text, {name: entry[name] for name in FIELDS if isinstance(entry.get(name), str)})
    return found


def forget(server: redis.Redis, keys: Keys, taken: Iterable[tuple[str, str]]) -> None:
    """Remove the notes of each ``(url, note as read)`` its document took; those noted since stay."""
    pairs = [part for url, text in taken for part in (url, text)]
    if pairs:
        script(server, _FORGET)([keys.met_entries, keys.met_entries_at], pairs)
