"""The shared request queue with leases: a request taken by a worker is leased, never deleted; and the
politeness of each site, shared by every worker.

scrapy-redis pops a request and deletes it: a worker that dies loses what it held. Here (all in Redis, each
step one Lua script, so workers on many machines agree):

- each site has its own queue, ``crawler:queue:<site>``: a sorted set of JSON requests, the score ordering
  by priority, then by arrival (FIFO within a priority). An identical request pushed twice is stored once.
- a site that may send now is in ``crawler:ready``, scored by its first request: ``pop`` takes the first
  request of the first ready site, so priorities hold across sites. A site that must wait is in
  ``crawler:gated`` until it may send again; a site with as many requests being downloaded
  (``crawler:downloading``) as its ``concurrency`` is in neither until one of them is downloaded (the
  worker says so at its next pop, or at once while it takes none: ``downloads_ended``) or its lease
  ends. Its politeness is ``crawler:polite:<site>`` (a hash): ``delay`` (the rule's), ``crawl_delay``
  (its robots.txt's), ``concurrency``, ``inflight``, ``next``, and a backoff (``until``, ``level``,
  ``reason``) after a 429 or 503. A pop sets ``next`` to
  now plus the largest of the delays, so every worker together sends the site at most one request per
  delay, however many there are; the time is Redis's own clock, the one clock every worker shares.
  What the rules and robots.txt set of it is kept in ``crawler:politeness`` too: a pop that finds the
  hash removed writes it again from there and holds the site for its delay.
- ``pop`` moves the request to ``crawler:leases`` (score = lease deadline, by Redis's clock as every time
  kept in a score here: workers whose machines' clocks differ keep each other's leases) and remembers its
  queue score and site in ``crawler:lease-scores`` and ``crawler:lease-sites``, and its holder (the
  popping worker's id) in ``crawler:lease-holders``; the worker keeps the member, which names the lease,
  in the request's metadata.
- ``ack`` removes the lease once the request's items are stored and its links queued; ``renew`` pushes the
  deadlines of a live worker's leases forward; ``requeue_expired`` puts every lease past its deadline back
  in its site's queue with its old score (a worker killed with SIGKILL stops renewing, so what it held
  returns); ``release_holders`` does the same at once for the leases of workers known dead (their
  heartbeat says so), which would hold their sites' download slots until they expire.
- ``handoff`` ends a lease and queues the request that replaces it (a retry, a redirect) in one step:
  the work goes on under a new lease, the old one is never left behind.
- ``defer`` ends a lease for now (an article that could not be stored): the request waits in
  ``crawler:delayed`` (score: when it may be taken again) and ``queue_due`` returns it to its queue, at
  most ``max_attempts`` times. A retry handed on with a backoff waits there too, as does any request for a
  site whose queue key holds another type (someone SET it): it is tried again every
  WRONG_TYPE_RECHECK_SECONDS until the key is removed.
- ``dead_letter`` ends a lease for good with a reason (an error after its retries, an entry that is no
  request): the member moves to ``crawler:dead`` (hash: member -> JSON with the reason), from where
  ``requeue_dead`` puts it back in the queue; a later ``ack`` of the same page (its slot and URL: a page
  fetched again) deletes it.
- ``back_off`` holds a site back for a while (a 429 or 503, its ``Retry-After``, a ban): every worker
  waits, its requests stay queued.
- a site paused (``crawler:paused``, a hash: site -> when; ``crawler sites pause``) is neither ready nor
  gated, nor are its discover crawl's host slots (``<site>@<host>``): its requests are held in its queues,
  retries and expired leases come back there, and no worker takes them until ``resume`` schedules the site
  again. Leases taken before the pause run to their end.
- workers share the sites' slots: a pop that takes nothing while downloads are under way makes its worker
  hungry (``crawler:hungry``, worker -> until when, for two of its idle polls: ``hungry_seconds``), and
  while another worker is hungry, each site whose slot a pop frees is offered to it
  (``crawler:offer:<site>``, the worker's id, expiring after OFFER_SECONDS), which the pops of other
  workers pass over, and the worker is woken (``crawler:wake:<worker>``, a list it waits on). Without this
  the pop that reports a download's end took the slot it freed again, and a worker looking for work found
  every site full. Both are kept by time alone: no worker is held to a share, and a hungry worker that
  died, or a pop that failed midway, holds no site longer than OFFER_SECONDS.
- ``crawler:pending`` counts, per site, the requests queued or leased and not yet ended, and
  ``crawler:job:<id>`` does the same for a job (``pending``): a job is done when its count is zero. An
  ended job's hash expires (``SCHEDULE_JOB_KEEP_HOURS``): a request of it that ends later counts in no job,
  nor one queued later (a late page's links): each push and each end writes the hash only while it is there
  (``job_kept``), so a job's hash is made before its first push (:func:`crawler.requests.open_job`).

Every request that enters the queue ends exactly once: acknowledged (stored, or nothing to store), or
dead-lettered with its reason; every lease that ends gives its site's slot back. The very same request
leased and waiting at once (deferred, then pushed again) is two requests until its copies meet in one
queue or in the delayed set: one from then on, counted once.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis

from crawler.errors import CrawlerError
from crawler.keys import SEEN_ALREADY, SKIP_PREFIX, Keys, hour_of
from crawler.redisio.clock import shared_now
from crawler.redisio.connection import decoded, hash_of, read_wrong_as
from crawler.settings import SCHEDULE_JOB_KEEP_HOURS, SUPERVISION_KEEP_HOURS

__all__ = [
    "SITE_LUA",
    "Ack",
    "DeadRequeue",
    "LeasedQueue",
    "NamedDead",
    "Popped",
    "SitePoliteness",
    "WrongKey",
    "WrongKeyError",
    "hungry_seconds",
]

logger = logging.getLogger(__name__)

# Seconds in which a site's throttle (the delay between requests a backoff left) halves: a site that asked
# to slow down is asked gently for a few minutes, then at its rule's pace again.
THROTTLE_HALF_LIFE = 120

# Seconds a site whose queue or politeness key holds another type is set aside (gated) before its keys
# are looked at again: once the key is removed its requests come out within this time, and the warning
# naming the key comes at most this often while it is not.
WRONG_TYPE_RECHECK_SECONDS = 60

# Seconds at least a worker whose pop took nothing while downloads were under way stays hungry (the sites
# whose slots other workers' pops free are offered to it; hungry_seconds): two of the default idle polls
# (SCHEDULER_IDLE_POLL_SECONDS 0.5), and a floor for shorter polls, so a hungry worker is not dropped
# between two pops that a busy reactor delays by a few hundred milliseconds.
HUNGRY_SECONDS = 1.0


def hungry_seconds(poll_seconds: float) -> float:
    """Seconds a worker that polls every ``poll_seconds`` (``SCHEDULER_IDLE_POLL_SECONDS``) stays hungry
    after a pop that took nothing: two polls, at least HUNGRY_SECONDS, so it stays hungry between its pops,
    and one that stopped popping (killed, busy) stops within two polls."""
    return max(2 * poll_seconds, HUNGRY_SECONDS)


# Seconds a freed slot is offered to the hungry worker before any worker may take it: the hungry worker is
# woken at once (crawler:wake:<worker>) and takes it within a few milliseconds; one that cannot (killed,
# stalled, an older version) holds the site at most this long, one idle poll.
OFFER_SECONDS = 0.5

# Ready sites offered to other workers that one pop passes over at most, looking for a site it may take.
MAX_PASSED = 100

# The queue score is -priority * 2**40 + an arrival counter (in _PUSH): priorities are small integers
# (rules say 0 by default) and the counter fills the rest of a double's 53-bit mantissa, so requests of
# one priority come out in the order they went in.

# The functions every script that queues a request or ends a lease shares (K: the key prefix). A site goes
# where it belongs: ready (scored by its first request), gated until the time it may send again, or
# nowhere (its queue is empty, or it has as many downloads under way as its concurrency: the end of one
# puts it back). A lease's download ends once: reported after the download, or with the lease.
SITE_LUA = (
    """
-- The delay a backoff left, halved every THROTTLE_HALF_LIFE seconds since.
local function throttle_of(throttle, since, now)
  if not throttle then return 0 end
  return tonumber(throttle) * 0.5 ^ ((now - (tonumber(since) or now)) / """
    + str(THROTTLE_HALF_LIFE)
    + """)
end
local function now_of()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
-- The longest crawl-delay the robots.txt of a site's (or slot's) hosts asked for (crawler:crawl-delays:
-- <site>, which a discover host's prune leaves), as stored, or nil: a slot made again for a host met after
-- its prune keeps it, as the worker tells a slot of it once per robots.txt read.
local function asked_of(key)
  local asked = redis.pcall('HVALS', key)
  local longest
  if type(asked) ~= 'table' or asked.err then return nil end
  for _, seconds in ipairs(asked) do
    if (tonumber(seconds) or 0) > (tonumber(longest) or 0) then longest = seconds end
  end
  return longest
end
-- The key of a site's own that holds another type than its own (someone SET it), and that type; false
-- when none does. Each command on it fails (WRONGTYPE): the site is set aside, not every site stopped.
local function wrong_key(K, site)
  local owns = {{K .. ':queue:' .. site, 'zset', 'sorted set'}, {K .. ':polite:' .. site, 'hash', 'hash'}}
  for _, owned in ipairs(owns) do
    local kind = redis.call('TYPE', owned[1]).ok
    if kind ~= 'none' and kind ~= owned[2] then return {owned[1], kind, owned[3]} end
  end
  return false
end
-- A site with such a key is gated for WRONG_TYPE_RECHECK_SECONDS, not dropped from ready for good: once
-- the key is removed, its requests come out again. Returns what wrong_key found.
local function set_aside(K, site, now)
  local bad = wrong_key(K, site)
  if bad then
    redis.call('ZREM', K .. ':ready', site)
    redis.call('ZADD', K .. ':gated', now + """
    + str(WRONG_TYPE_RECHECK_SECONDS)
    + """, site)
  end
  return bad
end
local function schedule_site(K, site, now)
  if redis.call('ZSCORE', K .. ':gated', site) then return end
  local bad = set_aside(K, site, now)
  if bad then return bad end
  -- A discover crawl's host slot (<site>@<host>) is paused with its site.
  if redis.call('HEXISTS', K .. ':paused', string.match(site, '^[^@]*')) == 1 then
    redis.call('ZREM', K .. ':ready', site)
    return
  end
  local head = redis.call('ZRANGE', K .. ':queue:' .. site, 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', K .. ':ready', site)
    return
  end
  local p = redis.call('HMGET', K .. ':polite:' .. site, 'inflight', 'concurrency', 'next', 'until')
  local limit = tonumber(p[2]) or 0
  if limit > 0 and (tonumber(p[1]) or 0) >= limit then
    redis.call('ZREM', K .. ':ready', site)
    return
  end
  local at = math.max(tonumber(p[3]) or 0, tonumber(p[4]) or 0)
  if at > now then
    redis.call('ZREM', K .. ':ready', site)
    redis.call('ZADD', K .. ':gated', at, site)
    return
  end
  redis.call('ZADD', K .. ':ready', head[2], site)
end
-- A request for a site whose queue key holds another type cannot go in (WRONGTYPE): it waits in the
-- delayed set for WRONG_TYPE_RECHECK_SECONDS with its score and site, as a retry's backoff does, and
-- queue_due tries it again then; the site is set aside (named by the pop). Nothing is lost, nothing loops.
local function enqueue(K, site, score, member)
  local added = redis.pcall('ZADD', K .. ':queue:' .. site, 'NX', score, member)
  if type(added) == 'table' then
    local bad = wrong_key(K, site)
    if not bad or bad[1] ~= K .. ':queue:' .. site then error(added.err) end
    added = redis.call('ZADD', K .. ':delayed', 'NX', now_of() + """
    + str(WRONG_TYPE_RECHECK_SECONDS)
    + """, member)
    if added == 1 then
      redis.call('HSET', K .. ':lease-scores', member, score)
      redis.call('HSET', K .. ':lease-sites', member, site)
    end
  end
  if added == 1 then schedule_site(K, site, now_of()) end
  return added
end
-- The site (queue slot) a leased or delayed request is kept under (lease-sites); when that entry is lost
-- (HDEL, the hash deleted or evicted), the request's own (meta.slot, else meta.site); false when it names
-- none.
local function site_of(K, member)
  local site = redis.call('HGET', K .. ':lease-sites', member)
  if site then return site end
  local ok, request = pcall(cjson.decode, member)
  local meta = ok and type(request) == 'table' and request.meta
  if type(meta) == 'table' then
    site = (type(meta.slot) == 'string' and meta.slot ~= '' and meta.slot) or meta.site
  end
  return type(site) == 'string' and site ~= '' and site
end
-- A request's queue score and site (lease-scores, lease-sites) are kept while it is leased or waits in the
-- delayed set, and forgotten once it is in neither: the very same request can be in both (pushed again
-- while leased, its queue key of another type: enqueue), and the end of the one must not take the other's.
-- Its holder (lease-holders) is forgotten once it is not leased.
local function forget(K, member)
  if redis.call('ZSCORE', K .. ':leases', member) then return end
  redis.pcall('HDEL', K .. ':lease-holders', member)
  if redis.call('ZSCORE', K .. ':delayed', member) then return end
  redis.call('HDEL', K .. ':lease-scores', member)
  redis.call('HDEL', K .. ':lease-sites', member)
end
-- The job a request counts in (its meta's ``job``), or false.
local function job_of(member)
  local ok, request = pcall(cjson.decode, member)
  local job = ok and type(request) == 'table' and type(request.meta) == 'table' and request.meta.job
  if type(job) ~= 'string' or job == '' then return false end
  return job
end
-- Whether a job's hash (its key, '' for none) is there to count a request's end in. An ended job's hash
-- expires (SCHEDULE_JOB_KEEP_HOURS): a request of it that ends later (a lease that outlived it, a dead
-- letter requeued after) counts in none, or HINCRBY would make the hash again, its pending negative and
-- with no time-to-live, kept for ever.
local function job_kept(key)
  return key ~= '' and redis.call('EXISTS', key) == 1
end
-- A request leaving its lease for the delayed set or a queue (deferred, handed on, released, expired)
-- counts a move of its job ('moved' in its hash, when it has one): LeasedQueue.job_lost's look reads the
-- leases last, and one that moves so during the look is in a place it read before.
local function moved(K, member)
  local job = job_of(member)
  local key = job and K .. ':job:' .. job
  if key and job_kept(key) then redis.pcall('HINCRBY', key, 'moved', 1) end
end
-- A copy of a request that meets the very same member queued or waiting already (enqueue 0, a deferral
-- onto a waiting copy) is one request with it from then on: the copy's count ends, its job's too.
local function merged(K, site, member)
  redis.call('HINCRBY', K .. ':pending', site, -1)
  local job = job_of(member)
  if job and job_kept(K .. ':job:' .. job) then redis.call('HINCRBY', K .. ':job:' .. job, 'pending', -1) end
end
local function downloaded(K, site, member)
  -- That set of another type (someone SET it; the pop leases nothing then) knows no download: the lease's
  -- is taken as under way and its slot given back, or a lease ended would stop here, Lua not rolled back.
  if not site or redis.pcall('SREM', K .. ':downloading', member) == 0 then return end
  local key = K .. ':polite:' .. site
  -- A politeness key overwritten with another type (set_aside) took its count with it: no slot to give back.
  local kind = redis.call('TYPE', key).ok
  if kind == 'hash' or kind == 'none' then
    -- A count that is no integer (someone wrote it: the pop sets the site aside and names it) counts none.
    local left = redis.pcall('HINCRBY', key, 'inflight', -1)
    if type(left) == 'number' and left < 0 then redis.call('HSET', key, 'inflight', 0) end
  end
  schedule_site(K, site, now_of())
end
"""
)

# KEYS: pending, job (or ''), sequence, attempts. ARGV: prefix, priority, member, site, job (or ''), its
# attempts so far (0 for a new request; a request taken out of the queue and queued again keeps its count).
# The job counts it only while its hash is there (job_kept): made before the job's first push, gone once
# the job ended and its hash expired.
_PUSH = (
    SITE_LUA
    + """
local score = -tonumber(ARGV[2]) * 1099511627776 + redis.call('INCR', KEYS[3])
local added = enqueue(ARGV[1], ARGV[4], score, ARGV[3])
if added == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[4], 1)
  if job_kept(KEYS[2]) then redis.call('HINCRBY', KEYS[2], 'pending', 1) end
  if tonumber(ARGV[6]) > 0 then redis.call('HSET', KEYS[4], ARGV[3], ARGV[6]) end
end
return added
"""
)

# KEYS: leases, lease-scores, lease-sites. ARGV: prefix, lease seconds, how many to lease at most, the
# popping worker's id ('' for none), the seconds it stays hungry when it may be made hungry (else '0'),
# then the leases this worker has downloaded since its last call (their sites' slots are free again).
# Sharing (see the module docstring): while another worker is hungry, each site whose slot this pop frees is
# offered to it (crawler:offer:<site>, for OFFER_SECONDS) and it is woken (crawler:wake:<worker>); a pop of
# any other worker passes over an offered site. A pop of a worker that may be hungry that takes nothing
# while downloads are under way makes it hungry (crawler:hungry, worker -> until when) for those seconds
# (hungry_seconds: two of its idle polls), and its wake lasts while it is hungry; a pop that takes one ends
# it. Both are kept by time alone: lost, or left by a pop that failed midway,
# they lapse.
# Sites whose wait is over become ready; the first request of the first ready site is leased, and its site
# counts one more download and may send again after its largest delay; again, up to the count. A site
# whose key holds another type is set aside (set_aside); one whose politeness hash was removed has it
# restored (restore) and waits its delay; one whose download count (inflight) is no integer is set aside.
# Reply: {those sites set aside or restored, each {site, key, its type ('none' when restored), the type
# expected}, or {site, key, 'inflight', its value}}, then member, site, member, site, ...; or false, seconds
# until the first gated site may send (false when none waits).
_POP = (
    SITE_LUA
    + """
-- A site whose politeness hash lost its settings (someone removed it: DEL, or SET then DEL) has them
-- written back from those its rule and robots.txt last set (crawler:politeness), and waits its delay from
-- now, since when its last request went is lost with the hash. False when none were set (a site no rule
-- configured, or that key of another type): the site is popped as before. A discover crawl's host slot
-- (<site>@<host>) whose hash and saved copy went with its idle host (Frontier.prune), met again by a request
-- its frontier did not release (a dead letter requeued), takes its rule's delay and concurrency, which the
-- slot was made with, and the longest crawl-delay its host's robots.txt asked for (crawler:crawl-delays:
-- <slot>, which the prune keeps): 'pruned', said by no warning. Its host is touched (Frontier.touched,
-- <prefix>:discover:<site>:touched), which the prune had taken it out of: once idle again, the prune drops
-- the slot made here with it (or its download count alone, when the rule saved none), as it would be kept
-- for ever otherwise.
local function restore(K, key, site, now)
  local saved = redis.pcall('HGET', K .. ':politeness', site)
  local fields, restored = {'concurrency', 'crawl_delay'}, true
  local at = string.find(site, '@', 1, true)
  if saved == false and at then
    local rule = string.sub(site, 1, at - 1)
    saved = redis.pcall('HGET', K .. ':politeness', rule)
    fields, restored = {'concurrency'}, 'pruned'
    redis.pcall('ZADD', K .. ':discover:' .. rule .. ':touched', now, string.sub(site, at + 1))
  end
  if type(saved) ~= 'string' then return false end
  local ok, settings = pcall(cjson.decode, saved)
  if not ok or type(settings) ~= 'table' or settings.delay == nil then return false end
  redis.call('HSET', key, 'delay', settings.delay)
  for _, field in ipairs(fields) do
    if settings[field] ~= nil then redis.call('HSETNX', key, field, settings[field]) end
  end
  local asked = restored == 'pruned' and asked_of(K .. ':crawl-delays:' .. site)
  if asked then redis.call('HSET', key, 'crawl_delay', asked) end
  local p = redis.call('HMGET', key, 'delay', 'crawl_delay', 'next')
  local interval = math.max(tonumber(p[1]) or 0, tonumber(p[2]) or 0)
  if interval > 0 then redis.call('HSET', key, 'next', math.max(tonumber(p[3]) or 0, now + interval)) end
  return restored
end
-- The error of a redis.pcall's reply, or false.
local function failure(reply)
  return type(reply) == 'table' and reply.err
end
local K = ARGV[1]
local count = tonumber(ARGV[3])
local me = ARGV[4]
local now = now_of()
-- The downloads set of another type fails the pop here, before it changes anything (downloaded() would give
-- the slots back): the worker tells the next pop of the same downloads again.
if #ARGV >= 6 then redis.call('SCARD', K .. ':downloading') end
-- The hungry worker longest unserved, other than this one: the sites whose slots this pop frees are its.
-- The keys of sharing are called with pcall: one of another type (someone SET it) shares nothing, and
-- stops no pop.
local hungry, hungry_ms = false, 0
if #ARGV >= 6 then
  redis.pcall('ZREMRANGEBYSCORE', K .. ':hungry', '-inf', now)
  local first = redis.pcall('ZRANGE', K .. ':hungry', 0, 1, 'WITHSCORES')
  first = failure(first) and {} or first
  for i = 1, #first, 2 do
    if first[i] ~= me then
      hungry, hungry_ms = first[i], math.max(math.ceil((tonumber(first[i + 1]) - now) * 1000), 1)
      break
    end
  end
end
for i = 6, #ARGV do
  local site = site_of(K, ARGV[i])
  downloaded(K, site, ARGV[i])
  if hungry and site
    and redis.call('SET', K .. ':offer:' .. site, hungry, 'PX', """
    + str(int(OFFER_SECONDS * 1000))
    + """, 'NX') then
    redis.pcall('LPUSH', K .. ':wake:' .. hungry, site)
    redis.pcall('LTRIM', K .. ':wake:' .. hungry, 0, 0)
    redis.call('PEXPIRE', K .. ':wake:' .. hungry, hungry_ms)
  end
end
local due = redis.call('ZRANGEBYSCORE', K .. ':gated', '-inf', now, 'LIMIT', 0, 100)
local wrong = {}
for _, site in ipairs(due) do
  redis.call('ZREM', K .. ':gated', site)
  local bad = schedule_site(K, site, now)
  if bad then wrong[#wrong + 1] = {site, bad[1], bad[2], bad[3]} end
end
-- Whether this pop may mark its worker hungry, and then marks or unmarks it; the reply of a pop that took
-- nothing (the seconds until a site may send: an offer passed over lapses within OFFER_SECONDS).
local function none_taken(passed)
  local hunger = tonumber(ARGV[5]) or 0
  if me ~= '' and hunger > 0 and redis.call('SCARD', K .. ':downloading') > 0 then
    redis.pcall('ZADD', K .. ':hungry', now + hunger, me)
  end
  local wait = passed and """
    + str(OFFER_SECONDS)
    + """ or false
  local first = redis.call('ZRANGE', K .. ':gated', 0, 0, 'WITHSCORES')
  if #first > 0 then wait = math.min(wait or math.huge, math.max(tonumber(first[2]) - now, 0)) end
  return {wrong, false, wait and tostring(wait)}
end
local out = {}
-- Ready sites offered to another worker are passed over (at most MAX_PASSED of them: few are offered at
-- once, each for OFFER_SECONDS).
local passed = 0
for _ = 1, count + 10 + """
    + str(MAX_PASSED)
    + """ do
  if #out >= 2 * count then break end
  local top = redis.call('ZRANGE', K .. ':ready', passed, passed)
  if #top == 0 then break end
  local site = top[1]
  local offered = redis.pcall('GET', K .. ':offer:' .. site)
  if failure(offered) then offered = false end
  if offered and offered ~= me then
    passed = passed + 1
    if passed > """
    + str(MAX_PASSED)
    + """ then break end
  else
    local key = K .. ':polite:' .. site
    local bad = set_aside(K, site, now)
    local item, p = {}, {}
    if bad then
      wrong[#wrong + 1] = {site, bad[1], bad[2], bad[3]}
    else
      p = redis.call('HMGET', key, 'delay', 'crawl_delay', 'throttle', 'throttle_since')
      local restored = not p[1] and restore(K, key, site, now)
      if restored then
        if restored ~= 'pruned' then wrong[#wrong + 1] = {site, key, 'none', 'hash'} end
        p = false
      else
        item = redis.call('ZPOPMIN', K .. ':queue:' .. site)
        -- The very same request as one leased now (queued again while it was: a grab's seeding done again)
        -- is one request with it, as a copy that meets it queued is: leased twice, one ack would end both
        -- leases and the copy's count (its site's, its job's) and download slot would be left for ever. (A
        -- leases key of another type answers an error here: the lease's write below puts the request back.)
        if #item > 0 and type(redis.pcall('ZSCORE', KEYS[1], item[1])) == 'string' then
          merged(K, site, item[1])
          item, p = {}, false
        end
      end
    end
    if not p then
      redis.call('ZREM', K .. ':ready', site)
      schedule_site(K, site, now)
    elseif #item == 0 then
      redis.call('ZREM', K .. ':ready', site)
    elseif failure(redis.pcall('HINCRBY', key, 'inflight', 1)) then
      -- A download count that is no integer (someone wrote it) counts no download: the site is set aside as
      -- for a key of another type, its request put back in its queue, and the other sites go on.
      redis.call('ZADD', K .. ':queue:' .. site, item[2], item[1])
      redis.call('ZREM', K .. ':ready', site)
      redis.call('ZADD', K .. ':gated', now + """
    + str(WRONG_TYPE_RECHECK_SECONDS)
    + """, site)
      wrong[#wrong + 1] = {site, key, 'inflight', redis.call('HGET', key, 'inflight')}
    else
      -- Lua is not rolled back: a lease that cannot be written (a key every site shares of another type)
      -- puts its request back in its queue, and its download count back, before the error, or each pop
      -- would lose one. Its score and site are written first: a lease without them could not return.
      local failed = failure(redis.pcall('HSET', KEYS[2], item[1], item[2]))
        or failure(redis.pcall('HSET', KEYS[3], item[1], site))
        or failure(redis.pcall('SADD', K .. ':downloading', item[1]))
        or failure(redis.pcall('ZADD', KEYS[1], now + tonumber(ARGV[2]), item[1]))
      if failed then
        redis.call('ZADD', K .. ':queue:' .. site, item[2], item[1])
        redis.call('HINCRBY', key, 'inflight', -1)
        error(failed)
      end
      -- Its holder: a key of another type (someone SET it) records none, and the lease ends by expiry.
      if me ~= '' then redis.pcall('HSET', K .. ':lease-holders', item[1], me) end
      local interval = math.max(tonumber(p[1]) or 0, tonumber(p[2]) or 0, throttle_of(p[3], p[4], now))
      if interval > 0 then redis.call('HSET', key, 'next', now + interval) end
      redis.call('ZREM', K .. ':ready', site)
      schedule_site(K, site, now)
      if offered then redis.call('DEL', K .. ':offer:' .. site) end
      out[#out + 1] = item[1]
      out[#out + 1] = site
    end
  end
end
if #out > 0 then
  if me ~= '' then redis.pcall('ZREM', K .. ':hungry', me) end
  return {wrong, unpack(out)}
end
return none_taken(passed > 0)
"""
)

# A name of dead-superseded freed, its letter gone (``unnamed``: the key dead-unnamed): counted (``freed``),
# so that a letter the last full pass that named the letters left waiting for it (its name naming another
# letter) is named at the next read (_UNNAMED). Never failing its caller (pcall).
_NAME_FREED = """
local function name_freed(unnamed)
  redis.pcall('HINCRBY', unnamed, 'freed', 1)
end
"""

# KEYS: leases, lease-scores, pending, job (or ''), attempts, lease-sites, the site's counters of this hour
# (or ''), dead, dead-superseded, dead-unnamed.
# ARGV: prefix, the lease, site, job (or ''), pages fetched, items stored, reposts recorded, items of those
# stored that were spooled, items updated (their URLs stored before), seconds the counters are kept,
# requests skipped (a redirect to a URL seen already: counted for the cause SEEN_ALREADY too), the name
# of the page's dead letter in dead-superseded (its slot and URL; '' for a page never fetched before), the
# worker ending it ('' for whoever holds it), then the page's other counts of its job, each a field and
# an amount (crawler.requests.count_job).
# A lease another worker holds now (it expired, or its holder was taken for dead, and that worker took it
# since) is not ended: that worker's download of it goes on, its site's slot taken, and ends it.
# The items stored less those spooled count as the site's new articles (``store/new``) in the same step
# that ends the lease: a worker killed before it wrote its other counters loses none of them, and an
# article stored again by the worker that takes over (same job: not "stored before") is counted then. An
# article spooled is none of them: whether it is new is known only once MongoDB takes it.
_ACK = (
    SITE_LUA
    + _NAME_FREED
    + """
local holder = ARGV[13] ~= '' and redis.pcall('HGET', ARGV[1] .. ':lease-holders', ARGV[2])
if type(holder) == 'string' and holder ~= ARGV[13] then return 0 end
if redis.call('ZREM', KEYS[1], ARGV[2]) == 0 then return 0 end
local site = site_of(ARGV[1], ARGV[2])
forget(ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[5], ARGV[2])
-- Its site's slot is given back before the counters: a job hash of another type (someone SET it) fails
-- them, and Lua is not rolled back.
downloaded(ARGV[1], site, ARGV[2])
redis.call('HINCRBY', KEYS[3], ARGV[3], -1)
if job_kept(KEYS[4]) then
  redis.call('HINCRBY', KEYS[4], 'pending', -1)
  if ARGV[5] ~= '0' then redis.call('HINCRBY', KEYS[4], 'fetched', ARGV[5]) end
  if ARGV[6] ~= '0' then redis.call('HINCRBY', KEYS[4], 'stored', ARGV[6]) end
  if ARGV[7] ~= '0' then redis.call('HINCRBY', KEYS[4], 'reposts', ARGV[7]) end
  if ARGV[8] ~= '0' then redis.call('HINCRBY', KEYS[4], 'spooled', ARGV[8]) end
  if ARGV[9] ~= '0' then redis.call('HINCRBY', KEYS[4], 'updated', ARGV[9]) end
  if ARGV[11] ~= '0' then
    redis.call('HINCRBY', KEYS[4], 'skipped', ARGV[11])
    redis.call('HINCRBY', KEYS[4], '"""
    + SKIP_PREFIX
    + SEEN_ALREADY
    + """', ARGV[11])
  end
  for at = 14, #ARGV, 2 do redis.call('HINCRBY', KEYS[4], ARGV[at], ARGV[at + 1]) end
end
local new = tonumber(ARGV[6]) - tonumber(ARGV[8])
if new > 0 and KEYS[7] ~= '' then
  redis.call('HINCRBY', KEYS[7], 'store/new', new)
  redis.call('EXPIRE', KEYS[7], ARGV[10])
end
-- The page's earlier dead letter goes, its page fetched now: last, and never failing the ack (a key of
-- another type leaves the letter, as requeue or drop would find it).
if ARGV[12] ~= '' then
  local letter = redis.pcall('HGET', KEYS[9], ARGV[12])
  if type(letter) == 'string' then
    redis.pcall('HDEL', KEYS[8], letter)
    redis.pcall('HDEL', KEYS[9], ARGV[12])
    name_freed(KEYS[10])
  end
end
return 1
"""
)

# KEYS: leases, lease-scores, pending, job (or ''), sequence, attempts, delayed, lease-sites, the job's set
# of the URLs it fetches (or ''). ARGV: prefix, the old lease, the new member, its priority, site, job (or
# ''), the seconds before it may be taken (0: at once), the new member's fingerprint, the set's
# time-to-live in seconds. A later one waits in the delayed set until queue_due moves it to its site's
# queue (a retry's backoff), with its queue score and site kept.
# A lease that is no longer held (it expired: its request is back in the queue, or with another worker)
# hands nothing on: the request goes on from the queue. With a set (a redirect of a job that fetches seen
# URLs again), a fingerprint the set holds hands nothing on (-2, the lease kept: the caller ends it as
# skipped); the set takes it only once it is handed on, in this call (a worker that dies before, or an
# error on the way, leaves it out: the redirect, fetched again, goes on) and never once the lease is lost
# (after its job's end, which deleted the set).
_HANDOFF = (
    SITE_LUA
    + """
local K = ARGV[1]
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return -1 end
if KEYS[9] ~= '' and redis.call('SISMEMBER', KEYS[9], ARGV[8]) == 1 then return -2 end
local old_site = site_of(K, ARGV[2])
local attempts = redis.call('HGET', KEYS[6], ARGV[2])
local site = ARGV[5]
local score = -tonumber(ARGV[4]) * 1099511627776 + redis.call('INCR', KEYS[5])
local added = 0
if tonumber(ARGV[7]) > 0 then
  -- A queue key of another type holds no request: the retry waits as any other (enqueue, once due).
  local queued = type(redis.pcall('ZSCORE', K .. ':queue:' .. site, ARGV[3])) == 'string'
  if not queued and redis.call('ZADD', KEYS[7], 'NX', now_of() + tonumber(ARGV[7]), ARGV[3]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[3], score)
    redis.call('HSET', KEYS[8], ARGV[3], site)
    added = 1
  end
else
  added = enqueue(K, site, score, ARGV[3])
end
-- The lease ends once its successor is in its place (Lua is not rolled back: an error writing it, a key
-- every site shares of another type, leaves the lease held).
redis.call('ZREM', KEYS[1], ARGV[2])
forget(K, ARGV[2])
if ARGV[3] ~= ARGV[2] then redis.call('HDEL', KEYS[6], ARGV[2]) end
downloaded(K, old_site, ARGV[2])
if added == 1 then moved(K, ARGV[3]) end
if added == 1 then
  if attempts then redis.call('HSET', KEYS[6], ARGV[3], attempts) end
else
  redis.call('HINCRBY', KEYS[3], site, -1)
  if job_kept(KEYS[4]) then redis.call('HINCRBY', KEYS[4], 'pending', -1) end
end
if KEYS[9] ~= '' then
  redis.call('SADD', KEYS[9], ARGV[8])
  redis.call('EXPIRE', KEYS[9], ARGV[9])
end
return added
"""
)

# KEYS: leases, attempts, delayed, lease-sites. ARGV: prefix, the lease, the seconds until it may be taken
# again, the most attempts, '1' when this try counts as one of them (else ''). Returns the attempts so far,
# 0 when they are used up (the lease is kept: the caller dead-letters it; never for a try not counted),
# -1 when not held. A deferred request leaves the leases for the delayed set (its queue score and site
# stay).
_DEFER = (
    SITE_LUA
    + """
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return -1 end
local attempts = tonumber(redis.call('HGET', KEYS[2], ARGV[2])) or 0
if ARGV[5] ~= '' then attempts = attempts + 1 end
if ARGV[5] ~= '' and attempts > tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[2], ARGV[2], attempts)
  return 0
end
-- Written where it waits before its lease ends: an error there (a key every site shares of another type)
-- leaves the lease held, Lua not being rolled back.
local site = site_of(ARGV[1], ARGV[2])
if redis.call('ZADD', KEYS[3], now_of() + tonumber(ARGV[3]), ARGV[2]) == 0 and site then
  merged(ARGV[1], site, ARGV[2])
end
redis.call('HSET', KEYS[2], ARGV[2], attempts)
redis.call('ZREM', KEYS[1], ARGV[2])
redis.pcall('HDEL', ARGV[1] .. ':lease-holders', ARGV[2])
downloaded(ARGV[1], site, ARGV[2])
moved(ARGV[1], ARGV[2])
return attempts
"""
)

# KEYS: leases, lease-scores, pending, job (or ''), dead, attempts, lease-sites, dead-superseded. ARGV:
# prefix, the lease, site (or '' for an entry that never was a request: no counter counted it), job (or
# ''), the record (JSON), the kind of error (counted in the job as error:<kind>), '1' when its page was
# fetched (else ''; counted in the job as fetched, and as errors_fetched: its error is no other request
# tried), the name of what it supersedes (or '').
_DEAD = (
    SITE_LUA
    + """
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
-- The dead letter is written before the lease ends: an error there (a key every site shares of another
-- type) leaves the lease held, Lua not being rolled back.
redis.call('HSET', KEYS[5], ARGV[2], ARGV[5])
if ARGV[8] ~= '' then
  local before = redis.call('HGET', KEYS[8], ARGV[8])
  if before and before ~= ARGV[2] then redis.call('HDEL', KEYS[5], before) end
  redis.call('HSET', KEYS[8], ARGV[8], ARGV[2])
end
redis.call('ZREM', KEYS[1], ARGV[2])
local site = site_of(ARGV[1], ARGV[2])
forget(ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[6], ARGV[2])
downloaded(ARGV[1], site, ARGV[2])
if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[3], -1) end
if job_kept(KEYS[4]) then
  redis.call('HINCRBY', KEYS[4], 'pending', -1)
  redis.call('HINCRBY', KEYS[4], 'errors', 1)
  if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[4], 'error:' .. ARGV[6], 1) end
  if ARGV[7] == '1' then
    redis.call('HINCRBY', KEYS[4], 'fetched', 1)
    redis.call('HINCRBY', KEYS[4], 'errors_fetched', 1)
  end
end
return 1
"""
)

# The entry of dead-superseded (KEYS: its key) under ``name`` goes when it names ``member``, a dead letter
# that is deleted (requeued or dropped): an entry a letter, never one of a letter gone (a listing URL that
# failed once, its letter dropped, kept its entry for ever). A letter no entry names (written before every
# letter was named, or no request) takes one from the letters less the names dead-unnamed keeps
# (``unnamed``: its key), when it is kept: it tells still whether a letter was written unnamed (_UNNAMED).
_UNSUPERSEDE = (
    _NAME_FREED
    + """
local function unsupersede(key, name, member, unnamed)
  if name ~= '' and redis.call('HGET', key, name) == member then
    redis.call('HDEL', key, name)
    name_freed(unnamed)
  elseif redis.pcall('HEXISTS', unnamed, 'letters') == 1 then
    redis.pcall('HINCRBY', unnamed, 'letters', -1)
  end
end
"""
)

# KEYS: dead, dead-superseded, dead-unnamed. ARGV: member, the name it may be kept under in dead-superseded
# (_superseded_as; or ''), ...
# Deletes those dead letters, each one's entry of dead-superseded with it; replies how many there were.
_DROP_DEAD = (
    _UNSUPERSEDE
    + """
local dropped = 0
for i = 1, #ARGV, 2 do
  if redis.call('HDEL', KEYS[1], ARGV[i]) == 1 then
    dropped = dropped + 1
    unsupersede(KEYS[2], ARGV[i + 1], ARGV[i], KEYS[3])
  end
end
return dropped
"""
)

# KEYS: dead, dead-superseded. ARGV: member, the name it may be kept under in dead-superseded
# (_superseded_as), ...
# Names in dead-superseded each of those dead letters that has no entry there (written before every letter
# was named there, or by a worker of that time): one whose name is free, or names a letter gone. A name
# that names another letter still there keeps it, the letter waiting. Reply: {how many names were added
# to the hash (one over a letter gone adds none: what the dead letters less the names went down by), how
# many letters wait}.
_INDEX_DEAD = """
local added, waiting = 0, 0
for i = 1, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    local kept = redis.call('HGET', KEYS[2], ARGV[i + 1])
    if not kept or (kept ~= ARGV[i] and redis.call('HEXISTS', KEYS[1], kept) == 0) then
      added = added + redis.call('HSET', KEYS[2], ARGV[i + 1], ARGV[i])
    elseif kept ~= ARGV[i] then
      waiting = waiting + 1
    end
  end
end
return {added, waiting}
"""

# KEYS: dead, dead-superseded, dead-unnamed.
# Reply: {the dead letters less the names in dead-superseded, 1 when there is nothing to name (else 0), the
# names freed so far}. A worker of this release names each letter it writes in the same call (_DEAD), and
# the ack, requeue and drop of a letter take its name with it: none of them changes the count, but a letter
# written unnamed (by a worker of a release before every letter was named, during a rolling upgrade; an
# entry that is no request) adds one. So while the count is the one the last full naming pass left
# (``letters``: _NAMED_ALL), and no name was freed since while a letter waited for one, there is nothing
# to name, and a read of the letters sends none of them to be named (LeasedQueue.dead_pages).
_UNNAMED = """
local unnamed = redis.call('HLEN', KEYS[1]) - redis.call('HLEN', KEYS[2])
local kept = redis.pcall('HMGET', KEYS[3], 'letters', 'waiting', 'seen', 'freed')
if kept.err then kept = {} end
local freed = kept[4] or '0'
local named = kept[1] and tonumber(kept[1]) == unnamed and (kept[2] == '0' or kept[3] == freed)
return {unnamed, named and 1 or 0, freed}
"""

# KEYS: dead, dead-superseded, dead-unnamed. ARGV: the dead letters less the names as a full naming pass
# began, the names freed so far then (_UNNAMED), what its own namings took from that count, the letters
# left waiting for a name (_INDEX_DEAD).
# Keeps what the pass left in dead-unnamed (``letters``, ``waiting``, and ``seen``: the names freed as it
# began, so that one freed during the pass is seen at the next read) when nothing else changed the count
# during the pass (1). Else (0) it keeps none, and the next read names again: a letter an older worker
# wrote during the pass, where HSCAN had read already, is found then.
_NAMED_ALL = """
local unnamed = redis.call('HLEN', KEYS[1]) - redis.call('HLEN', KEYS[2])
-- A key of another type (someone wrote it) is taken for none.
if redis.call('TYPE', KEYS[3]).ok ~= 'hash' then redis.call('DEL', KEYS[3]) end
redis.call('HDEL', KEYS[3], 'letters')
if unnamed ~= tonumber(ARGV[1]) - tonumber(ARGV[3]) then return 0 end
-- No letter: nothing to keep (a read of a data folder nothing was crawled in leaves no key), the next
-- read's pass over no letter costs nothing.
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[3])
  return 1
end
redis.call('HSET', KEYS[3], 'letters', unnamed, 'waiting', ARGV[4], 'seen', ARGV[2])
return 1
"""

# KEYS: dead, pending, job (or ''), sequence, dead-superseded, dead-unnamed. ARGV: prefix, the member, its
# priority, site, job (or ''), the kind of its error (or ''), '1' when its page was counted fetched (else
# ''), the member to queue, the seconds an ended job's hash is kept (SCHEDULE_JOB_KEEP_HOURS), the name it
# may be kept under in dead-superseded (_superseded_as; or ''): that entry goes with the letter
# (_UNSUPERSEDE). The job's hash, when it expired (an ended job's is kept that long), is written again with
# its pending count alone (its other counts went with it), and kept that long from now, as an ended job's
# hash that would expire sooner is: a hash without a time-to-live is a job under way, left as it is. A
# letter whose request is queued (or waits) already, the very same member (its job pushed it again), goes
# into that copy: requeued, its error taken from its job, the copy counted pending once.
_REQUEUE_DEAD = (
    SITE_LUA
    + _UNSUPERSEDE
    + """
if redis.call('HDEL', KEYS[1], ARGV[2]) == 0 then return 0 end
unsupersede(KEYS[5], ARGV[10], ARGV[2], KEYS[6])
local score = -tonumber(ARGV[3]) * 1099511627776 + redis.call('INCR', KEYS[4])
local added = enqueue(ARGV[1], ARGV[4], score, ARGV[8])
if added == 1 then redis.call('HINCRBY', KEYS[2], ARGV[4], 1) end
if ARGV[5] ~= '' then
  local ttl = redis.call('TTL', KEYS[3])
  if added == 1 then redis.call('HINCRBY', KEYS[3], 'pending', 1) end
  if ttl ~= -2 then
    redis.call('HINCRBY', KEYS[3], 'errors', -1)
    if ARGV[6] ~= '' then redis.call('HINCRBY', KEYS[3], 'error:' .. ARGV[6], -1) end
    if ARGV[7] == '1' then
      redis.call('HINCRBY', KEYS[3], 'fetched', -1)
      redis.call('HINCRBY', KEYS[3], 'errors_fetched', -1)
    end
  end
  if ttl ~= -1 and ttl < tonumber(ARGV[9]) then redis.call('EXPIRE', KEYS[3], ARGV[9]) end
end
return 1
"""
)

# Queued requests _TAKE_QUEUED takes out of the queue per call: the work of one call grows with it (about
# 30 microseconds a request, bench/queue_scale.py --forget), and Redis serves no one else meanwhile; 500
# keep each call near 20 ms, a pause no worker notices, where one call for a site of 300,000 held Redis
# for seconds (every other worker's pop refused BUSY).
TAKE_BATCH = 500

# Lease holders read per HSCAN call, and leases returned per call, by LeasedQueue.release_holders: a dead
# worker holds its pop batch and its downloads (tens); 500 keep a call to a few milliseconds, as TAKE_BATCH.
RELEASE_BATCH = 500

# Saved politeness fields (every site's and host slot's) HSCAN looks at per call for one discover rule's
# host slots (LeasedQueue.host_slots): as many as DEAD_SCAN_COUNT's page of dead letters, a few
# milliseconds of Redis a call however many slots there are.
HOST_SLOTS_SCAN = 1_000

# Dead letters read per HSCAN call (LeasedQueue.dead_pages), and deleted per call (drop_dead): one HGETALL
# of 100,000 held Redis 0.3 to 0.4 s and one HDEL of them 0.3 s, times that grow with them; 1,000 are a few
# milliseconds a call.
DEAD_SCAN_COUNT = 1_000

# KEYS: pending, leases, lease-scores, lease-sites, attempts, delayed. ARGV: prefix, site.
# Take every request of the site out of the queue: waiting (retries, deferred) and leased (for a caller
# that knows no worker is alive to hold a lease) ones now, each ended in its job (pending - 1, ``taken``
# + 1) and in the site's count, nothing of it left (its attempts neither); its queue set aside whole
# (``<prefix>:taking:<site>``, a RENAME: no worker takes one of them from now on) for _TAKE_QUEUED to take
# out TAKE_BATCH at a time. A queue set aside before by a take that was interrupted takes this one in.
# Reply: {member, its attempts so far, member, attempts, ...}.
_TAKE = (
    SITE_LUA
    + """
local K, site = ARGV[1], ARGV[2]
local queue, aside = K .. ':queue:' .. site, K .. ':taking:' .. site
-- A queue key of another type (wrong_key) holds no request: it is left as it is.
if redis.call('TYPE', queue).ok == 'zset' then
  if redis.call('EXISTS', aside) == 1 then
    redis.call('ZUNIONSTORE', aside, 2, aside, queue, 'AGGREGATE', 'MIN')
    redis.call('DEL', queue)
  else
    redis.call('RENAME', queue, aside)
  end
end
redis.call('ZREM', K .. ':ready', site)
redis.call('ZREM', K .. ':gated', site)
local taken = {}
local function take(set, leased)
  for _, member in ipairs(redis.call('ZRANGE', set, 0, -1)) do
    -- Its lease-sites entry (KEYS[4]) gone, the request's own site (site_of).
    if site_of(K, member) == site then
      redis.call('ZREM', set, member)
      if leased then
        redis.pcall('HDEL', K .. ':lease-holders', member)
        downloaded(K, site, member)
      end
      taken[#taken + 1] = member
    end
  end
end
-- The very same request leased and queued (or waiting) at once is two copies, each counted pending: the
-- site its lease is known by is forgotten once both sets are read, and the request is given back once,
-- its copy set aside with it.
take(KEYS[6], false)
take(KEYS[2], true)
local reply, given, count = {}, {}, #taken
for _, member in ipairs(taken) do
  redis.call('HDEL', KEYS[3], member)
  redis.call('HDEL', KEYS[4], member)
  local job = job_of(member)
  if job and not job_kept(K .. ':job:' .. job) then job = false end
  if job then redis.call('HINCRBY', K .. ':job:' .. job, 'pending', -1) end
  if not given[member] then
    given[member] = true
    if redis.call('ZREM', aside, member) == 1 then
      count = count + 1
      if job then redis.call('HINCRBY', K .. ':job:' .. job, 'pending', -1) end
    end
    reply[#reply + 1] = member
    reply[#reply + 1] = redis.call('HGET', KEYS[5], member) or '0'
    redis.call('HDEL', KEYS[5], member)
    if job then redis.call('HINCRBY', K .. ':job:' .. job, 'taken', 1) end
  end
end
if count > 0 and redis.call('HINCRBY', KEYS[1], site, -count) < 0 then
  redis.call('HSET', KEYS[1], site, 0)
end
return reply
"""
)

# KEYS: pending, attempts, lease-scores, lease-sites. ARGV: prefix, site, how many at most.
# Take up to that many of the requests _TAKE set aside out of the queue, first queued first, each ended in
# its job and in the site's count, nothing of it left; a copy of one leased or waiting since (pushed again
# after the take began) keeps its score, site and attempts. Reply as _TAKE's; empty once none is left.
_TAKE_QUEUED = (
    SITE_LUA
    + """
local K, site = ARGV[1], ARGV[2]
local items = redis.call('ZPOPMIN', K .. ':taking:' .. site, tonumber(ARGV[3]))
local reply = {}
for i = 1, #items, 2 do
  local member = items[i]
  local job = job_of(member)
  if job and job_kept(K .. ':job:' .. job) then
    redis.call('HINCRBY', K .. ':job:' .. job, 'pending', -1)
    redis.call('HINCRBY', K .. ':job:' .. job, 'taken', 1)
  end
  reply[#reply + 1] = member
  reply[#reply + 1] = redis.call('HGET', KEYS[2], member) or '0'
  if not (redis.call('ZSCORE', K .. ':delayed', member) or redis.call('ZSCORE', K .. ':leases', member)) then
    redis.call('HDEL', KEYS[2], member)
    redis.call('HDEL', KEYS[3], member)
    redis.call('HDEL', KEYS[4], member)
    redis.pcall('HDEL', K .. ':lease-holders', member)
  end
end
if #items > 0 and redis.call('HINCRBY', KEYS[1], site, -#items / 2) < 0 then
  redis.call('HSET', KEYS[1], site, 0)
end
return reply
"""
)

_RENEW = """
local t = redis.call('TIME')
local deadline = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  renewed = renewed + redis.call('ZADD', KEYS[1], 'XX', 'CH', deadline, ARGV[i])
end
return renewed
"""

# The function the scripts that return a leased or delayed request to its queue share (after SITE_LUA).
_BACK_LUA = """
-- Queue a leased or delayed request again with its queue score and site (lease-scores, lease-sites: KEYS[2],
-- KEYS[3]); its site. A site not kept there (that entry lost: HDEL, the hash deleted or evicted) is the
-- request's own (meta.slot, else meta.site); a score that is no number (someone wrote it), or one out of a
-- double's range, is read as 0, as one missing, and added to ``named`` ('score', member, value). A member
-- that names no site at all is kept in the dead letters ('site', member, ''), not dropped.
local function back(K, member, named)
  local site = site_of(K, member)
  local score = redis.call('HGET', KEYS[2], member) or '0'
  -- Lua reads a number out of a double's range (1e400) as inf, which Redis refuses as a score.
  local number = tonumber(score)
  if not (number and math.abs(number) < math.huge and string.match(score, '^-?%d+%.?%d*[eE]?[-+]?%d*$')) then
    table.insert(named, 'score')
    table.insert(named, member)
    table.insert(named, score)
    score = '0'
  end
  if not site then
    local reason = 'not queued again: it names no site (none kept in ' .. KEYS[3] .. ', none in its meta)'
    -- When and what kind, as a worker's dead letter says (crawler dead list), by Redis's clock.
    redis.call('HSET', K .. ':dead', member, cjson.encode({reason = reason, kind = 'no site', at = now_of()}))
    redis.call('SREM', K .. ':downloading', member)
    table.insert(named, 'site')
    table.insert(named, member)
    table.insert(named, '')
  elseif enqueue(K, site, score, member) == 0 then
    merged(K, site, member)
  end
  return site
end
"""

# KEYS: a sorted set by time (the leases, or the delayed requests), lease-scores, lease-sites. ARGV:
# prefix, now ('': Redis's clock), the most to move, 1 when the set holds leases (each one ends). Every
# member whose time has passed goes back to its site's queue with its old score (back). Reply: {how many,
# then what back named}.
_REQUEUE = (
    SITE_LUA
    + _BACK_LUA
    + """
local until_time = tonumber(ARGV[2]) or now_of()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', until_time, 'LIMIT', 0, tonumber(ARGV[3]))
local named = {}
for _, member in ipairs(due) do
  -- A lease ends once its request is queued again (an error on the way, a key every site shares of
  -- another type, leaves it held: Lua is not rolled back); a delayed request leaves the delayed set
  -- first, where enqueue puts it again while its queue key holds another type.
  if ARGV[4] ~= '1' then redis.call('ZREM', KEYS[1], member) end
  local site = back(ARGV[1], member, named)
  if ARGV[4] == '1' then
    redis.call('ZREM', KEYS[1], member)
    downloaded(ARGV[1], site, member)
    moved(ARGV[1], member)
  end
  forget(ARGV[1], member)
end
return {#due, unpack(named)}
"""
)

# KEYS: leases, lease-scores, lease-sites, lease-holders. ARGV: prefix, the holder ('' for any), then the
# leases to return to their queues now: with a holder, only those it still holds (lease-holders), so a lease
# taken since by another worker stays with it. Reply: as _REQUEUE's.
_RELEASE = (
    SITE_LUA
    + _BACK_LUA
    + """
local released, named = 0, {}
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i])
    and (ARGV[2] == '' or redis.pcall('HGET', KEYS[4], ARGV[i]) == ARGV[2]) then
    -- The lease ends once its request is queued again (as _REQUEUE's).
    local site = back(ARGV[1], ARGV[i], named)
    redis.call('ZREM', KEYS[1], ARGV[i])
    forget(ARGV[1], ARGV[i])
    downloaded(ARGV[1], site, ARGV[i])
    moved(ARGV[1], ARGV[i])
    released = released + 1
  end
end
return {released, unpack(named)}
"""
)

# KEYS: the site's politeness hash. ARGV: prefix, site, seconds to wait (empty: the doubling backoff),
# the first backoff's seconds, the longest, seconds of calm after which the doubling starts over, the
# reason, the delay between requests after a first backoff, the longest such delay. Every worker holds the
# site back until then; its requests stay queued. Each backoff that begins after the last one ended
# doubles the next wait, and the site's *throttle*: a delay between its requests afterwards (at least the
# given one), which halves every THROTTLE_HALF_LIFE seconds, so the site is asked gently, then faster again.
# Reply: the seconds.
_BACK_OFF = (
    SITE_LUA
    + """
local K, site = ARGV[1], ARGV[2]
if wrong_key(K, site) then return '0' end
local now = now_of()
local p = redis.call('HMGET', KEYS[1], 'until', 'level', 'throttle', 'throttle_since')
local last_until, level = tonumber(p[1]) or 0, tonumber(p[2]) or 0
if now - last_until > tonumber(ARGV[6]) then level = 0 end
-- Answers to requests sent before the backoff began (a burst of them) do not make it longer, nor slow the
-- site down again.
if now >= last_until then
  level = level + 1
  local throttle = math.min(math.max(2 * throttle_of(p[3], p[4], now), tonumber(ARGV[8])), tonumber(ARGV[9]))
  redis.call('HSET', KEYS[1], 'throttle', throttle, 'throttle_since', now)
end
level = math.max(level, 1)
local wait = tonumber(ARGV[3])
if not wait then wait = tonumber(ARGV[4]) * 2 ^ (level - 1) end
wait = math.min(wait, tonumber(ARGV[5]))
local until_time = math.max(now + wait, last_until)
redis.call('HSET', KEYS[1], 'until', until_time, 'level', level, 'reason', ARGV[7], 'since', now)
if redis.call('ZSCORE', K .. ':ready', site) or redis.call('ZSCORE', K .. ':gated', site) then
  redis.call('ZREM', K .. ':ready', site)
  redis.call('ZADD', K .. ':gated', until_time, site)
end
return tostring(until_time - now)
"""
)

# KEYS: a site's politeness hash, the politeness the rules set (crawler:politeness). ARGV: the site, then
# field, value, field, value, ... Kept in both: the pop writes the hash again from the second when the
# hash was removed. The hash is written unless it holds another type (someone SET it: the pop sets the
# site aside and names it; once it is removed, the pop restores it).
_POLITE = """
-- That key of another type (someone SET it) keeps nothing: the hash is written all the same.
local settings = {}
local saved = redis.pcall('HGET', KEYS[2], ARGV[1])
if type(saved) == 'string' then
  local ok, read = pcall(cjson.decode, saved)
  if ok and type(read) == 'table' then settings = read end
end
for i = 2, #ARGV, 2 do settings[ARGV[i]] = ARGV[i + 1] end
redis.pcall('HSET', KEYS[2], ARGV[1], cjson.encode(settings))
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1
"""

# KEYS: a site's politeness hash, crawler:politeness, its hosts' crawl-delays. ARGV: as _POLITE's. A hash made
# now (a new site, or one `crawler sites forget` dropped) takes the longest crawl-delay its hosts' robots.txt
# asked for, which forget keeps for ROBOTS_MAX_AGE_SECONDS: a worker tells it once per robots.txt read, and
# one running holds its read that long.
_CONFIGURE = (
    """
if redis.call('EXISTS', KEYS[1]) == 0 then
  local given, longest = false, nil
  for i = 2, #ARGV, 2 do given = given or ARGV[i] == 'crawl_delay' end
  local asked = redis.pcall('HVALS', KEYS[3])
  if not given and type(asked) == 'table' and not asked.err then
    for _, seconds in ipairs(asked) do
      if (tonumber(seconds) or 0) > (tonumber(longest) or 0) then longest = seconds end
    end
  end
  if longest then
    ARGV[#ARGV + 1] = 'crawl_delay'
    ARGV[#ARGV + 1] = longest
  end
end
"""
    + _POLITE
)

# KEYS: a discover host slot's politeness hash, crawler:politeness. ARGV: the slot, then field, value, ...
# Written as _POLITE writes them, where they are: the hash when it is one, the saved copy when there is one.
# A slot the prune dropped both of is made again from its rule's politeness, and the crawl-delay kept for
# its host, by the pop (_POP's restore), which a hash or a copy written here would keep from it; its
# frontier's next release writes the rule's delay and concurrency there, and its copy (frontier._RELEASE).
_POLITE_HOST = """
local saved = redis.pcall('HGET', KEYS[2], ARGV[1])
local ok, settings = pcall(cjson.decode, type(saved) == 'string' and saved or '')
if ok and type(settings) == 'table' then
  for i = 2, #ARGV, 2 do settings[ARGV[i]] = ARGV[i + 1] end
  redis.pcall('HSET', KEYS[2], ARGV[1], cjson.encode(settings))
end
if redis.call('TYPE', KEYS[1]).ok == 'hash' then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
"""

# KEYS: a site's (or host slot's) politeness hash, crawler:politeness, ready, gated, its hosts' crawl-delays.
# ARGV: the site, 'crawl_delay', the seconds the robots.txt of a host of the site asks for (0: none past the
# rule's delay), that host. The site's crawl-delay is the longest its hosts ask for: each host's is kept
# (a host asking for none left out), so the robots.txt of one host read after another's (the site's
# articles on another host than its index pages) never shortens the other's. That crawl-delay, longer than
# the interval the site's last pop gated it with (its robots.txt read as the site's first request
# downloads, popped with the rule's delay), gates it from that pop: its next request goes that long after
# the last, not the rule's delay after. The time of the last pop is its 'next' less that interval (a
# throttle left by a backoff is not taken from it: it only makes the wait longer). Then the crawl-delay is
# written as _POLITE writes it.
_CRAWL_DELAY = (
    """
-- The host is taken out of ARGV, whose fields _POLITE writes; a hash of another type keeps no other host's.
local host = table.remove(ARGV, 4)
local longest = tonumber(ARGV[3]) or 0
if longest > 0 then redis.pcall('HSET', KEYS[5], host, ARGV[3]) else redis.pcall('HDEL', KEYS[5], host) end
-- Told again: kept while the site is crawled, not for the time `crawler sites forget` left it.
redis.pcall('PERSIST', KEYS[5])
local asked = redis.pcall('HVALS', KEYS[5])
if type(asked) == 'table' then
  for _, seconds in ipairs(asked) do
    if (tonumber(seconds) or 0) > longest then longest, ARGV[3] = tonumber(seconds), seconds end
  end
end
local p = redis.pcall('HMGET', KEYS[1], 'delay', 'crawl_delay', 'next')
if type(p) == 'table' and p[3] then
  local interval = math.max(tonumber(p[1]) or 0, tonumber(p[2]) or 0)
  local wanted = tonumber(ARGV[3]) or 0
  if wanted > interval then
    local later = tonumber(p[3]) - interval + wanted
    local t = redis.call('TIME')
    if later > tonumber(t[1]) + tonumber(t[2]) / 1000000 then
      redis.call('HSET', KEYS[1], 'next', later)
      local gated = redis.call('ZSCORE', KEYS[4], ARGV[1])
      if gated or redis.call('ZREM', KEYS[3], ARGV[1]) == 1 then
        redis.call('ZADD', KEYS[4], math.max(tonumber(gated) or 0, later), ARGV[1])
      end
    end
  end
end
"""
    + _POLITE
)

# The site ARGV[2] and the queue slots of its discover crawl's hosts (<site>@<host>) that have requests
# pending (KEYS[2]: a slot is counted there as a site is).
_SLOTS_LUA = """
local function slots_of(pending, site)
  local found, prefix = {site}, site .. '@'
  for _, name in ipairs(redis.call('HKEYS', pending)) do
    if string.sub(name, 1, #prefix) == prefix then found[#found + 1] = name end
  end
  return found
end
"""

# KEYS: paused, pending. ARGV: prefix, site, when (epoch seconds). Pause the site (its first pause's time is
# kept): it and its discover host slots out of ready and gated, their requests held. Reply: 1 when it was
# not paused before.
_PAUSE = (
    _SLOTS_LUA
    + """
local added = redis.call('HSETNX', KEYS[1], ARGV[2], ARGV[3])
for _, slot in ipairs(slots_of(KEYS[2], ARGV[2])) do
  redis.call('ZREM', ARGV[1] .. ':ready', slot)
  redis.call('ZREM', ARGV[1] .. ':gated', slot)
end
return added
"""
)

# KEYS: paused, pending. ARGV: prefix, site. Resume the site: it and its discover host slots ready or gated
# again as their queues and politeness say. Reply: 1 when it was paused.
_RESUME = (
    SITE_LUA
    + _SLOTS_LUA
    + """
if redis.call('HDEL', KEYS[1], ARGV[2]) == 0 then return 0 end
local now = now_of()
for _, slot in ipairs(slots_of(KEYS[2], ARGV[2])) do schedule_site(ARGV[1], slot, now) end
return 1
"""
)

# KEYS: pending, crawler:politeness, ready, gated. ARGV: prefix, then seconds the crawl-delays robots.txt
# asked for are kept, then queue slots. What each slot (a site, or a discover host slot) has nothing pending,
# queued, set aside or downloading of (as the frontier's prune, which forget's dropping of the touches
# leaves no one to run) goes: its pending count, its politeness hash and saved copy (its backoff with
# them), its offer; its hosts' crawl-delays are kept that many seconds (_CONFIGURE). A slot with a request
# queued since the take (a grab of it) keeps them, or that request would go with no politeness. A key of
# another type is left (the pop names it). Reply: per slot, 1 when it had a politeness, else 0.
_FORGET_POLITENESS = """
local K, keep = ARGV[1], tonumber(ARGV[2])
local reply = {}
for i = 3, #ARGV do
  local slot = ARGV[i]
  local polite = K .. ':polite:' .. slot
  local queued = redis.pcall('ZCARD', K .. ':queue:' .. slot)
  local inflight = redis.pcall('HGET', polite, 'inflight')
  local had = 0
  if (tonumber(redis.call('HGET', KEYS[1], slot)) or 0) == 0 and queued == 0
    and redis.call('EXISTS', K .. ':taking:' .. slot) == 0
    and type(inflight) ~= 'table' and (tonumber(inflight) or 0) <= 0 then
    redis.call('HDEL', KEYS[1], slot)
    had = redis.call('DEL', polite)
    local saved = redis.pcall('HDEL', KEYS[2], slot)
    if saved == 1 then had = 1 end
    redis.call('DEL', K .. ':offer:' .. slot)
    redis.call('ZREM', KEYS[3], slot)
    redis.call('ZREM', KEYS[4], slot)
    redis.pcall('EXPIRE', K .. ':crawl-delays:' .. slot, keep)
  end
  reply[#reply + 1] = had
end
return reply
"""

# KEYS: pending. ARGV: prefix. The requests queued (not leased, not waiting), over every site; a queue key
# of another type (LeasedQueue.wrong_keys names it) holds none.
_QUEUED = """
local total = 0
for _, site in ipairs(redis.call('HKEYS', KEYS[1])) do
  local queued = redis.pcall('ZCARD', ARGV[1] .. ':queue:' .. site)
  if type(queued) == 'number' then total = total + queued end
end
return total
"""

# KEYS: pending, lease-sites, leases, delayed, lease-scores, then the jobs to write off. ARGV: prefix, site, 1
# to write off (else 0).
# {requests of the site and of its discover host slots (<site>@<host>) counted pending, 1 when Redis holds
# none of them (no queue of theirs that is a sorted set holds a request, no lease or delayed request is of
# them) and the site or a job counts some pending (else 0: none is lost), the jobs' pending written off};
# written off (the site's counts deleted, each job's pending set to 0, its 'lost' counting what it had)
# only when it holds none, in this one script: a request moves between those places in one.
_LOST = (
    SITE_LUA
    + """
local site, slot = ARGV[2], ARGV[2] .. '@'
local function ours(name) return name == site or string.sub(name, 1, #slot) == slot end
local names, counted = {}, 0
for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
  if ours(name) then
    table.insert(names, name)
    counted = counted + (tonumber(redis.call('HGET', KEYS[1], name)) or 0)
  end
end
-- Its queue, or the queue a take of the site set aside (_TAKE) and has not taken out yet.
local function held(name)
  for _, key in ipairs({ARGV[1] .. ':queue:' .. name, ARGV[1] .. ':taking:' .. name}) do
    if redis.call('TYPE', key).ok == 'zset' and redis.call('ZCARD', key) > 0 then return true end
  end
  return false
end
if held(site) then return {counted, 0, 0} end
for _, name in ipairs(names) do
  if held(name) then return {counted, 0, 0} end
end
-- A lease (or delayed request) whose lease-sites entry is gone (a partial write of an older version, a
-- manual HDEL) is the site's by its own meta (site_of).
for _, set in ipairs({KEYS[3], KEYS[4]}) do
  for _, member in ipairs(redis.call('ZRANGE', set, 0, -1)) do
    if redis.call('HEXISTS', KEYS[2], member) == 0 then
      local owner = site_of(ARGV[1], member)
      if owner and ours(owner) then return {counted, 0, 0} end
    end
  end
end
-- A lease's (or delayed request's) site whose member is in neither set (that set deleted or evicted, its
-- member lost with it) holds nothing: written off with the rest.
local orphans = {}
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields, 2 do
  if ours(fields[i + 1]) then
    if redis.call('ZSCORE', KEYS[3], fields[i]) or redis.call('ZSCORE', KEYS[4], fields[i]) then
      return {counted, 0, 0}
    end
    table.insert(orphans, {fields[i], fields[i + 1]})
  end
end
local written, owed = 0, counted
if ARGV[3] == '1' then
  for _, name in ipairs(names) do redis.call('HDEL', KEYS[1], name) end
  for _, orphan in ipairs(orphans) do
    -- A download its worker never reported (it was killed) gives its site's slot back, as a lease's end does.
    downloaded(ARGV[1], orphan[2], orphan[1])
    redis.call('HDEL', KEYS[2], orphan[1])
    redis.call('HDEL', KEYS[5], orphan[1])
    redis.pcall('HDEL', ARGV[1] .. ':lease-holders', orphan[1])
  end
end
for i = 6, #KEYS do
  if redis.call('TYPE', KEYS[i]).ok == 'hash' then
    local pending = tonumber(redis.call('HGET', KEYS[i], 'pending')) or 0
    if pending > 0 then
      owed = owed + pending
      if ARGV[3] == '1' then
        redis.call('HSET', KEYS[i], 'pending', 0)
        redis.call('HINCRBY', KEYS[i], 'lost', pending)
        written = written + pending
      end
    end
  end
end
-- Nothing counted pending, by the site or the jobs, is nothing lost.
return {counted, owed > 0 and 1 or 0, written}
"""
)


# The most members of the queues and delayed requests one call of the look for a job's requests reads
# (ZSCAN's count; the leases are read whole, as many as the workers' downloads under way): a look goes on
# over as many calls as the sets hold, Redis serving the workers in between. On the 2 shared cores of
# 2026-11-29, 1,000 a call held Redis 1.2-2.8 ms a call (10 ms at most) and 0.4-0.6 s in all for both
# looks through 100,000 members (200 calls); 5,000 a call held it 13-28 ms a call and 1.1 s in all (ZSCAN's
# replies, scores as text, cost more a member than ZRANGE's).
JOB_LOST_READ_MAX = 1000

# KEYS: pending, leases, delayed, the job's hash. ARGV: prefix, site, job, 1 to write off (else 0), the most
# members to read, the place and the ZSCAN cursor the last call of this look ended with ('' and '0' for its
# first call), the job's counts then, ``pending:moved`` ('' when nothing is known of them yet).
# One step of a look for the job's requests (meta.job): the leases whole first; then the delayed requests,
# and the queues of the site and of its discover host slots (in name order), each with the queue a take set
# aside (``taking``), read with ZSCAN, that many members a call at most; the leases whole again last. A
# request of the job that stays where it is during the look is found (ZSCAN returns every member present
# from its first call to its last); one that moves from the delayed set or a queue goes to a place read
# after it (its queue, the queue set aside, a lease), or ends, which changes the job's pending count, as
# does a request pushed meanwhile. One that leaves a lease for a place read before (deferred, handed on,
# released, expired) counts a move of its job (SITE_LUA's moved): a look answers only when neither count
# moved from its first call to its last. LeasedQueue.job_lost looks twice all the same.
# Reply: {the place the next call reads, its cursor, the job's counts} while the look goes on; false once
# a request of the job is found, or the job's counts moved (or it has no pending); once none was found,
# {'', '', the job's counts}, its pending written off (set to 0, its 'lost' counting what it had, and as
# many taken from the site's counts: first from those of its slots that count more than they hold queued or
# leased, where the lost requests were counted) in that last call. The other jobs of the site, and their
# counts, are left as they are.
_JOB_LOST = (
    SITE_LUA
    + """
local site, slot, job = ARGV[2], ARGV[2] .. '@', ARGV[3]
local budget = tonumber(ARGV[5])
local counts = redis.call('HMGET', KEYS[4], 'pending', 'moved')
local pending = tonumber(counts[1]) or 0
local state = pending .. ':' .. (tonumber(counts[2]) or 0)
if pending <= 0 or (ARGV[8] ~= '' and ARGV[8] ~= state) then return false end
-- Decoded only when it holds the job's id at all.
local function of_job(member)
  return string.find(member, job, 1, true) and job_of(member) == job
end
-- Whether the leases hold none of the job's requests: read whole, as many as the downloads under way.
local function no_lease()
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if of_job(member) then return false end
  end
  return true
end
-- The site and its discover host slots with requests pending, in name order (read once a call, when needed).
-- A call asks for them in that order: each search goes on from where the last ended.
local slots, at = false, 1
local function slot_after(last)
  if not slots then
    slots = {site}
    for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
      if string.sub(name, 1, #slot) == slot then table.insert(slots, name) end
    end
    table.sort(slots)
  end
  while slots[at] and slots[at] <= last do at = at + 1 end
  return slots[at] or false
end
-- The place read after ``place`` ('delayed', 'queue:<slot>', 'taking:<slot>'), or false after the last.
local function after(place)
  if string.sub(place, 1, 6) == 'queue:' then return 'taking:' .. string.sub(place, 7) end
  local found = slot_after(place == 'delayed' and '' or string.sub(place, 8))
  return found and 'queue:' .. found
end
local place, cursor = ARGV[6], ARGV[7]
if place == '' then
  if not no_lease() then return false end
  place, cursor = 'delayed', '0'
end
local read = 0
while place and read < budget do
  local key = place == 'delayed' and KEYS[3] or ARGV[1] .. ':' .. place
  -- A key of another type (someone SET it) holds no request.
  if redis.call('TYPE', key).ok == 'zset' then
    local scanned = redis.call('ZSCAN', key, cursor, 'COUNT', budget - read)
    cursor = scanned[1]
    for i = 1, #scanned[2], 2 do
      if of_job(scanned[2][i]) then return false end
    end
    read = read + #scanned[2] / 2
  else
    cursor = '0'
  end
  -- Each key read counts one, so that a call over many empty slots ends too.
  read = read + 1
  if cursor == '0' then place = after(place) end
end
if place then return {place, cursor, state} end
if not no_lease() then return false end
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[4], 'pending', 0)
  redis.call('HINCRBY', KEYS[4], 'lost', pending)
  local names, left = {site}, pending
  for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(name, 1, #slot) == slot then table.insert(names, name) end
  end
  -- What each slot holds of the other jobs' requests, queued (or set aside by a take) and leased: the lost
  -- requests were counted in the slots that count more than that, and are taken from those first.
  local held = {}
  for _, name in ipairs(names) do
    held[name] = 0
    for _, key in ipairs({ARGV[1] .. ':queue:' .. name, ARGV[1] .. ':taking:' .. name}) do
      local queued = redis.pcall('ZCARD', key)
      if type(queued) == 'number' then held[name] = held[name] + queued end
    end
  end
  for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local owner = site_of(ARGV[1], member)
    if owner and held[owner] then held[owner] = held[owner] + 1 end
  end
  local function take(name, most)
    local counted = tonumber(redis.call('HGET', KEYS[1], name)) or 0
    local taken = math.min(counted, left, most)
    if taken <= 0 then return end
    if taken == counted then
      redis.call('HDEL', KEYS[1], name)
    else
      redis.call('HINCRBY', KEYS[1], name, -taken)
    end
    left = left - taken
  end
  for _, name in ipairs(names) do
    take(name, (tonumber(redis.call('HGET', KEYS[1], name)) or 0) - held[name])
  end
  for _, name in ipairs(names) do take(name, math.huge) end
end
return {'', '', state}
"""
)


@dataclass(frozen=True, slots=True)
class DeadRequeue:
    """A dead letter to put back in the queue with :meth:`LeasedQueue.requeue_dead_many` (its arguments as
    :meth:`LeasedQueue.requeue_dead` takes them)."""

    member: str
    priority: int
    site: str
    job: str | None
    kind: str | None = None
    fetched: bool = False
    queued: str | bytes | None = None


@dataclass(frozen=True, slots=True)
class Unnamed:
    """What :meth:`LeasedQueue.unnamed` read as a full naming pass begins: the dead ``letters`` less the
    names in ``Keys.dead_superseded``, and the names ``freed`` so far (a count, as Redis keeps it)."""

    letters: int
    freed: str


@dataclass(frozen=True, slots=True)
class NamedDead:
    """What :meth:`LeasedQueue.index_dead` did: the names it ``added`` to ``Keys.dead_superseded`` (one over
    a letter gone adds none), and the letters ``waiting``, their name naming another letter still there."""

    added: int
    waiting: int


@dataclass(frozen=True, slots=True)
class Ack:
    """A lease to end with :meth:`LeasedQueue.ack_many`, and its job's counts (as :meth:`LeasedQueue.ack`
    takes them; ``spooled``: how many of the items stored went to the store's local spool; ``updated``:
    items whose URLs were stored before, written again instead of stored anew; ``counted_site``: the
    rule's site whose hourly counters count the items ``stored`` but not ``spooled`` as new articles,
    ``store/new``; empty: none; ``skipped``: 1 for a request that ended fetching nothing, its redirect
    target seen already; ``clears``: the name in ``Keys.dead_superseded`` (queue slot and URL on two
    lines) of a dead letter of the same page, which goes with the lease: the page ended well since it
    failed; empty: none is looked for, as for a page no crawl fetches twice; ``holder``: the worker that
    leased it (its id, as its pop recorded it), whose lease alone it ends, not one another worker took
    since; empty: whoever holds it; ``counts``: the page's other counts of its job, each a counter and
    an amount, :func:`crawler.requests.count_job`)."""

    lease: str
    site: str
    job: str | None
    fetched: int = 0
    stored: int = 0
    reposts: int = 0
    spooled: int = 0
    updated: int = 0
    counted_site: str = ""
    skipped: int = 0
    clears: str = ""
    holder: str = ""
    counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Popped:
    """What ``pop`` gave: the member and its site, or nothing and how long until a waiting site may send
    (None when no site waits)."""

    member: str | None
    site: str | None = None
    wait: float | None = None


@dataclass(frozen=True, slots=True)
class SitePoliteness:
    """A site's shared politeness as ``crawler status`` shows it."""

    site: str
    delay: float
    crawl_delay: float
    concurrency: int
    inflight: int
    backoff_until: float | None
    backoff_reason: str | None


@dataclass(frozen=True, slots=True)
class WrongKey:
    """A key of a site's own (its queue, its politeness hash) that holds another type than its own: someone
    SET it. Every command on it fails with WRONGTYPE, and the workers skip the site until it is removed."""

    site: str
    key: str
    kind: str
    expected: str
    effect: str = "the workers skip the site, its requests neither taken nor queued, until the key is removed"
    # The hash's field whose value (``kind``) is wrong, when the key's type is right (inflight: the pop cannot
    # count a download in it, :func:`unread_count`); None: the key's type is wrong.
    field: str | None = None

    def problem(self) -> str:
        """What is wrong and the fix, in one line."""
        if self.field is not None:
            return (
                f"Redis key {self.key} has {self.field} {self.kind!r}, not an integer (the site's downloads"
                " under way): the workers skip the site, its requests neither taken nor queued, until it is"
                f" mended; fix: redis-cli HDEL {self.key} {self.field}"
            )
        return (
            f"Redis key {self.key} is a {self.kind}, not a {self.expected}: {self.effect}; fix: redis-cli DEL"
            f" {self.key}"
        )


class WrongKeyError(CrawlerError):
    """What a command was to do with a site cannot be done: a key of the site's own holds another type
    (:class:`WrongKey`, named with the fix)."""


# The type each key of a site's own holds, as TYPE says it and as a person reads it.
_OWN_TYPES = (("zset", "sorted set"), ("hash", "hash"))
# The same of each key of the ack script (:data:`_ACK`'s KEYS): the leases, then hashes.
_ACK_KEY_TYPES = (_OWN_TYPES[0], *(_OWN_TYPES[1],) * 9)
# What a key of the ack script of another type does.
_ACK_FAILS = (
    "each acknowledgement that writes it fails, its pages left out of the worker's counts; the others go on"
)

# An integer as Redis reads one (string2ll: a '-' the only sign, no leading zero, no space), within the 64
# bits of HINCRBY, which must add 1 to it.
_REDIS_INTEGER = re.compile(r"0|-?[1-9][0-9]*", re.ASCII)


def unread_count(value: str | None) -> str | None:
    """``value``, a site's download count (``inflight``), when the pop cannot add a download to it (HINCRBY
    fails: the pop sets the site aside), else None (a count missing is 0)."""
    if value is None or (_REDIS_INTEGER.fullmatch(value) and -(2**63) <= int(value) < 2**63 - 1):
        return None
    return value


class LeasedQueue:
    """The shared queue of encoded requests with leases, per site, with each site's politeness; see the
    module docstring.

    A member is the request's canonical JSON (:mod:`crawler.requests` encodes and decodes it); the
    caller gives its priority, site and job, which the counters need.
    """

    def __init__(
        self,
        server: redis.Redis,
        keys: Keys,
        *,
        lease_seconds: float = 60.0,
        counters_keep_seconds: int = int(SUPERVISION_KEEP_HOURS * 3600),
    ) -> None:
        self.server = server
        self.keys = keys
        self.lease_seconds = lease_seconds
        self.counters_keep_seconds = counters_keep_seconds
        self._push = server.register_script(_PUSH)
        self._pop = server.register_script(_POP)
        self._ack = server.register_script(_ACK)
        self._renew = server.register_script(_RENEW)
        self._requeue = server.register_script(_REQUEUE)
        self._release = server.register_script(_RELEASE)
        self._handoff = server.register_script(_HANDOFF)
        self._defer = server.register_script(_DEFER)
        self._dead = server.register_script(_DEAD)
        self._requeue_dead = server.register_script(_REQUEUE_DEAD)
        self._drop_dead = server.register_script(_DROP_DEAD)
        self._index_dead = server.register_script(_INDEX_DEAD)
        self._unnamed = server.register_script(_UNNAMED)
        self._named_all = server.register_script(_NAMED_ALL)
        self._back_off = server.register_script(_BACK_OFF)
        self._polite = server.register_script(_CONFIGURE)
        self._polite_host = server.register_script(_POLITE_HOST)
        self._crawl_delay = server.register_script(_CRAWL_DELAY)
        self._queued = server.register_script(_QUEUED)
        self._take = server.register_script(_TAKE)
        self._take_queued = server.register_script(_TAKE_QUEUED)
        self._forget_politeness = server.register_script(_FORGET_POLITENESS)
        self._pause = server.register_script(_PAUSE)
        self._resume = server.register_script(_RESUME)
        self._lost = server.register_script(_LOST)
        self._job_lost = server.register_script(_JOB_LOST)

    def __len__(self) -> int:
        """Requests queued (neither leased nor waiting), over every site."""
        return int(self._queued(keys=[self.keys.pending], args=[self.keys.prefix]))

    def push(self, member: bytes, *, priority: int, site: str, job: str | None, attempts: int = 0) -> bool:
        """Queue ``member``; False when the very same member is already queued. ``attempts``: those it
        had so far (a request :meth:`take_site` took out, queued again), which go on counting. ``job``
        counts it while its hash is there (:func:`crawler.requests.open_job` makes it)."""
        keys, args = self._push_call(member, priority, site, job, attempts)
        return bool(self._push(keys=keys, args=args))

    def push_many(self, entries: Iterable[tuple[bytes, int, str, str | None]]) -> list[bool]:
        """:meth:`push` of each ``(member, priority, site, job)``, in one round trip to Redis (each push
        its own script call, atomic as :meth:`push`); for each, whether it was queued."""
        with self.server.pipeline(transaction=False) as pipeline:
            for member, priority, site, job in entries:
                keys, args = self._push_call(member, priority, site, job, 0)
                self._push(keys=keys, args=args, client=pipeline)
            return [bool(queued) for queued in pipeline.execute()]

    def _push_call(
        self, member: bytes, priority: int, site: str, job: str | None, attempts: int
    ) -> tuple[list[str], list[str | bytes | int]]:
        """The keys and arguments of the push script's call."""
        keys = [self.keys.pending, self.keys.job(job) if job else "", self.keys.sequence, self.keys.attempts]
        args: list[str | bytes | int] = [
            self.keys.prefix,
            int(priority),
            member,
            site,
            job or "",
            int(attempts),
        ]
        return keys, args

    def pop(self, downloaded: Iterable[str] = ()) -> Popped:
        """Lease the first request of the first site that may send now, for ``lease_seconds``; or nothing,
        with how long until a waiting site may send. The member (as text) names the lease.

        ``downloaded``: the leases whose download ended since the last call (their sites may send another
        request: a site's ``concurrency`` counts downloads, not the parsing and storing after them)."""
        return self.pop_many(downloaded, 1)[0]

    def pop_many(
        self,
        downloaded: Iterable[str] = (),
        count: int = 1,
        *,
        worker: str = "",
        may_hunger: bool = False,
        hungry_for: float = HUNGRY_SECONDS,
    ) -> list[Popped]:
        """:meth:`pop` up to ``count`` times in one call, each lease taken as :meth:`pop` takes it (a site's
        politeness holds between them); at least one entry, which has no member when nothing may be sent
        now (or ``count`` is 0: :meth:`downloads_ended`).

        ``worker``: the popping worker's id: a site offered to it is its to take, and, ``may_hunger``, a
        pop that takes nothing while downloads are under way makes it hungry for ``hungry_for`` seconds
        (:func:`hungry_seconds` of its idle poll; see the module docstring; its wake list is
        :meth:`Keys.wake_of <crawler.keys.Keys.wake_of>`)."""
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.lease_sites]
        hunger = hungry_for if may_hunger else 0.0
        args: list[str | float] = [
            self.keys.prefix,
            self.lease_seconds,
            max(count, 0),
            worker,
            hunger,
            *downloaded,
        ]
        wrong, *reply = self._pop(keys=keys, args=args)
        for site, key, kind, expected in wrong:
            if decoded(kind) == "inflight":
                logger.warning(
                    "Redis key %s has inflight %r, not an integer (the site's downloads under way): site %s"
                    " is skipped, its requests neither taken nor queued, until it is mended (redis-cli HDEL"
                    " %s inflight; looked at again every %d s)",
                    decoded(key),
                    decoded(expected),
                    decoded(site),
                    decoded(key),
                    WRONG_TYPE_RECHECK_SECONDS,
                )
                continue
            if decoded(kind) == "none":
                logger.warning(
                    "Redis key %s was removed: site %s's politeness (delay, concurrency, crawl-delay) written"
                    " again from %s; its next request waits its delay from now",
                    decoded(key),
                    decoded(site),
                    self.keys.politeness,
                )
                continue
            logger.warning(
                "Redis key %s is a %s, not a %s: site %s is skipped, its requests neither taken nor queued,"
                " until the key is removed (redis-cli DEL %s; looked at again every %d s)",
                decoded(key),
                decoded(kind),
                decoded(expected),
                decoded(site),
                decoded(key),
                WRONG_TYPE_RECHECK_SECONDS,
            )
        if not reply[0]:
            return [Popped(None, wait=float(reply[1]) if reply[1] else None)]
        return [
            Popped(decoded(member), decoded(site))
            for member, site in zip(reply[::2], reply[1::2], strict=True)
        ]

    def downloads_ended(self, downloaded: Iterable[str], *, worker: str = "") -> None:
        """Tell of ``downloaded``, leases whose download ended, as a pop does (their sites may send another
        request, a slot offered to the hungry worker longest unserved other than ``worker``), leasing
        nothing: for a worker that takes no request now, whose next pop may be long to come."""
        self.pop_many(downloaded, 0, worker=worker)

    def configure(
        self, site: str, *, delay: float, concurrency: int, obey_robots: bool = True, hosts: bool = False
    ) -> None:
        """A site's politeness from its rule: at most one request every ``delay`` seconds and
        ``concurrency`` at once, for every worker together (the workers and the jobs set it, alike); a
        rule that does not obey robots.txt (``obey_robots`` False) drops the crawl-delay one read before
        (:meth:`set_crawl_delay`), which no robots.txt read will lower again, and its hosts' (a host's
        kept from before would count again once the rule obeys robots.txt anew). With ``hosts`` (a
        discover rule's), the host slots of its crawl made so far (:meth:`host_slots`) take the same, in
        one round trip: their frontier's release writes a slot's politeness only as it makes the slot;
        the crawl-delay a host's robots.txt asks for stays, the longer of it and ``delay`` spacing the
        host's requests. Neither this nor :meth:`set_crawl_delay` and :meth:`back_off` writes to a
        politeness key that holds another type (:meth:`wrong_keys`): the site is set aside until it is
        removed."""
        fields: tuple[str | float, ...] = ("delay", delay, "concurrency", concurrency)
        if not obey_robots:
            fields = (*fields, "crawl_delay", 0.0)
        slots = [
            (site, self._polite, [self.keys.crawl_delays(site)]),
            *((slot, self._polite_host, []) for slot in (self.host_slots(site) if hosts else ())),
        ]
        with self.server.pipeline(transaction=False) as pipe:
            for slot, script, asked in slots:
                keys = [self.keys.polite(slot), self.keys.politeness, *asked]
                script(keys=keys, args=[slot, *fields], client=pipe)
                if not obey_robots:
                    pipe.delete(self.keys.crawl_delays(slot))
            pipe.execute()

    def host_slots(self, site: str) -> list[str]:
        """The queue slots of ``site``'s discover crawl's hosts (``<site>@<host>``) that have a politeness
        saved (``Keys.politeness``: a slot its frontier released to and did not prune since) or requests
        pending (a slot the pop made again from its rule's politeness); read a page at a time (HSCAN)."""
        pattern = _GLOB_SPECIAL.sub(r"\\\g<0>", site) + "@*"
        saved: list[str] = []
        try:
            scanned = self.server.hscan_iter(self.keys.politeness, match=pattern, count=HOST_SLOTS_SCAN)
            saved = [decoded(name) for name, _ in scanned]
        except redis.ResponseError as exc:
            # That key of another type (someone SET it) keeps no slot's politeness.
            if "WRONGTYPE" not in str(exc):
                raise
        return sorted({*saved, *_slots_of(site, self._pending_slots())[1:]})

    def forget_politeness(self, site: str, keep_asked: float) -> bool:
        """Drop the politeness of ``site`` and of its discover host slots, once their requests are taken
        (:meth:`take_sites`): their pending counts, politeness hashes and saved copies, offers; the
        crawl-delays their hosts' robots.txt asked for are kept ``keep_asked`` seconds, from which their
        politeness is made again (``_CONFIGURE``). A slot with requests pending again keeps its own.
        Whether any of them had a politeness."""
        pattern = _GLOB_SPECIAL.sub(r"\\\g<0>", site)
        slots = {site, *self.host_slots(site)}
        for kind in ("polite", "crawl-delays"):
            prefix = f"{self.keys.prefix}:{kind}:"
            for name in self.server.scan_iter(match=f"{prefix}{pattern}@*", count=HOST_SLOTS_SCAN):
                slots.add(decoded(name).removeprefix(prefix))
        keys = [self.keys.pending, self.keys.politeness, self.keys.ready, self.keys.gated]
        ordered, had = sorted(slots), False
        for start in range(0, len(ordered), TAKE_BATCH):
            args: list[str | int] = [self.keys.prefix, int(keep_asked), *ordered[start : start + TAKE_BATCH]]
            had = any(int(one) for one in self._forget_politeness(keys=keys, args=args)) or had
        return had

    def set_crawl_delay(self, site: str, seconds: float, host: str) -> None:
        """The crawl-delay the robots.txt of ``host``, a host of the site, asks for (0: none longer than the
        rule's delay); the site's is the longest its hosts ask for (used when longer than the rule's
        delay), from the site's last request on (``_CRAWL_DELAY``)."""
        keys = [
            self.keys.polite(site),
            self.keys.politeness,
            self.keys.ready,
            self.keys.gated,
            self.keys.crawl_delays(site),
        ]
        self._crawl_delay(keys=keys, args=[site, "crawl_delay", seconds, host])

    def pause(self, site: str, at: float) -> bool:
        """Hold ``site``'s queued requests (those of its discover crawl's host slots too; retries and
        expired leases as they come back) until :meth:`resume`; the leases taken before run to their end.
        False when it was paused already (its first pause's time ``at`` is kept)."""
        keys = [self.keys.paused, self.keys.pending]
        return bool(self._pause(keys=keys, args=[self.keys.prefix, site, f"{at:.3f}"]))

    def resume(self, site: str) -> bool:
        """Let workers take ``site``'s requests again; False when it was not paused."""
        return bool(self._resume(keys=[self.keys.paused, self.keys.pending], args=[self.keys.prefix, site]))

    def slots(self, site: str) -> list[str]:
        """``site``, then the queue slots of its discover crawl's hosts (``<site>@<host>``) that have
        requests pending (a slot is counted in ``crawler:pending`` as a site is)."""
        return _slots_of(site, self._pending_slots())

    def _pending_slots(self) -> list[str]:
        return [decoded(name) for name in self.server.hkeys(self.keys.pending)]

    def paused(self) -> dict[str, float]:
        """The sites paused, each with when it was paused (epoch seconds)."""
        return {site: float(at) for site, at in hash_of(self.server, self.keys.paused).items()}

    def queued(self, site: str) -> int:
        """``site``'s requests in its queue and its discover host slots' (neither leased nor waiting)."""
        (queued,) = self.queued_sites([site])
        return queued

    def queued_sites(self, sites: Sequence[str]) -> list[int]:
        """:meth:`queued` of each of ``sites``, in two round trips however many they are (a queue key that
        holds another type, :meth:`wrong_keys`, holds none)."""
        return self._sizes(sites, self.keys.queue_of)

    def set_aside_sites(self, sites: Sequence[str]) -> list[int]:
        """The requests of each of ``sites`` (and of its discover host slots) that a take set aside
        (``<prefix>:taking:<site>``) and has not taken out: a ``sites forget`` cut short leaves them, out of
        every worker's reach, until the site is forgotten again. Two round trips however many sites."""
        return self._sizes(sites, self.keys.taking)

    def _sizes(self, sites: Sequence[str], key_of: Callable[[str], str]) -> list[int]:
        """The members of ``key_of(slot)`` (a sorted set; one of another type holds none) summed over each
        of ``sites``' queue slots (its discover host slots too), in two round trips."""
        pending = self._pending_slots()
        slots = [_slots_of(site, pending) for site in sites]
        with self.server.pipeline(transaction=False) as pipe:
            for slot in (slot for of_site in slots for slot in of_site):
                pipe.zcard(key_of(slot))
            sizes = iter(read_wrong_as(pipe.execute(raise_on_error=False), 0))
        return [sum(int(next(sizes)) for _ in of_site) for of_site in slots]

    def wrong_keys(self, sites: Sequence[str]) -> dict[str, list[WrongKey]]:
        """The keys of each of ``sites`` (and of its discover host slots) that hold another type than their
        own, or a politeness hash whose download count the pop cannot count in (:func:`unread_count`): the
        pop sets such a site aside; by site, a site with none left out. Two round trips."""
        pending = self._pending_slots()
        owned = [
            (site, key, own)
            for site in sites
            for slot in _slots_of(site, pending)
            for key, own in zip((self.keys.queue_of(slot), self.keys.polite(slot)), _OWN_TYPES, strict=True)
        ]
        with self.server.pipeline(transaction=False) as pipe:
            for _, key, _ in owned:
                pipe.type(key)
                pipe.hget(key, "inflight")
            replies = pipe.execute(raise_on_error=False)
        wrong: dict[str, list[WrongKey]] = {}
        for (site, key, (own, said)), kind, inflight in zip(owned, replies[::2], replies[1::2], strict=True):
            if decoded(kind) not in ("none", own):
                wrong.setdefault(site, []).append(WrongKey(site, key, decoded(kind), said))
            elif own == "hash" and (unread := unread_count(decoded(inflight) if inflight else None)):
                wrong.setdefault(site, []).append(WrongKey(site, key, unread, said, field="inflight"))
        return wrong

    def back_off(
        self,
        site: str,
        *,
        seconds: float | None,
        first: float,
        longest: float,
        calm: float,
        reason: str,
        throttle: float = 0.0,
        longest_throttle: float = 0.0,
    ) -> float:
        """Hold ``site`` back for every worker: ``seconds`` (a Retry-After), else ``first`` doubled at each
        backoff since the last ``calm`` seconds without one, at most ``longest``; and then ask it at most
        once every ``throttle`` seconds (doubled at each backoff, at most ``longest_throttle``, halving
        every ``THROTTLE_HALF_LIFE`` seconds). Returns the seconds it is held back (0 for a site set aside
        for a key of another type, :meth:`wrong_keys`)."""
        args = [
            self.keys.prefix,
            site,
            "" if seconds is None else seconds,
            first,
            longest,
            calm,
            reason,
            throttle,
            longest_throttle,
        ]
        return float(self._back_off(keys=[self.keys.polite(site)], args=args))

    def politeness(self, sites: Iterable[str]) -> list[SitePoliteness]:
        """Each site's shared politeness and backoff (a backoff that is over shows as None); none for a
        site whose politeness key holds another type (:meth:`wrong_keys`)."""
        chosen = list(sites)
        now = float(self.server.time()[0])
        with self.server.pipeline(transaction=False) as pipe:
            for site in chosen:
                pipe.hmget(
                    self.keys.polite(site),
                    "delay",
                    "crawl_delay",
                    "concurrency",
                    "inflight",
                    "until",
                    "reason",
                )
            replies = read_wrong_as(pipe.execute(raise_on_error=False), [None] * 6)
        shown = []
        for site, reply in zip(chosen, replies, strict=True):
            delay, crawl_delay, concurrency, inflight, until, reason = (
                decoded(v) if v else None for v in reply
            )
            until_time = float(until) if until else None
            shown.append(
                SitePoliteness(
                    site,
                    float(delay or 0),
                    float(crawl_delay or 0),
                    int(concurrency or 0),
                    0 if unread_count(inflight) is not None else max(int(inflight or 0), 0),
                    until_time if until_time is not None and until_time > now else None,
                    reason if until_time is not None and until_time > now else None,
                )
            )
        return shown

    def ack(
        self, lease: str, *, site: str, job: str | None, fetched: int = 0, stored: int = 0, reposts: int = 0
    ) -> bool:
        """End ``lease`` for good: its work is done. False if it was not leased (any more).

        ``fetched``, ``stored`` and ``reposts`` go to its job's counters in the same call (one round trip a
        page)."""
        keys, args = self._ack_call(Ack(lease, site, job, fetched, stored, reposts))
        return bool(self._ack(keys=keys, args=args))

    def ack_many(self, acks: Iterable[Ack]) -> list[bool | redis.ResponseError]:
        """:meth:`ack` for each of ``acks``, in one round trip (a pipeline of the same script); each one's
        outcome, in order: the error Redis answered for one whose script failed (a key it writes of another
        type: :meth:`wrong_ack_keys`), each on its own. Raises ``redis.RedisError`` when Redis is away."""
        with self.server.pipeline(transaction=False) as pipe:
            for ack in acks:
                keys, args = self._ack_call(ack)
                self._ack(keys=keys, args=args, client=pipe)
            replies = pipe.execute(raise_on_error=False)
        return [done if isinstance(done, redis.ResponseError) else bool(done) for done in replies]

    def ack_keys(self, ack: Ack) -> list[str]:
        """The keys ``ack``'s script writes."""
        return [key for key in self._ack_call(ack)[0] if key]

    def wrong_ack_keys(self, ack: Ack) -> list[WrongKey]:
        """The keys ``ack``'s script writes that hold another type than their own (someone SET them: its
        script fails with WRONGTYPE), each with its fix (:meth:`WrongKey.problem`)."""
        owned = [(key, own) for key, own in zip(self._ack_call(ack)[0], _ACK_KEY_TYPES, strict=True) if key]
        with self.server.pipeline(transaction=False) as pipe:
            for key, _ in owned:
                pipe.type(key)
            kinds = pipe.execute()
        return [
            WrongKey(ack.site, key, decoded(kind), said, effect=_ACK_FAILS)
            for (key, (own, said)), kind in zip(owned, kinds, strict=True)
            if decoded(kind) not in ("none", own)
        ]

    def _ack_call(self, ack: Ack) -> tuple[list[str], list[str | int]]:
        """The keys and arguments of the ack script for ``ack``."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(ack.job) if ack.job else "",
            self.keys.attempts,
            self.keys.lease_sites,
            self.keys.stats(ack.counted_site, hour_of(shared_now())) if ack.counted_site else "",
            self.keys.dead,
            self.keys.dead_superseded,
            self.keys.dead_unnamed,
        ]
        args: list[str | int] = [self.keys.prefix, ack.lease, ack.site, ack.job or ""]
        counts = [ack.fetched, ack.stored, ack.reposts, ack.spooled, ack.updated]
        args += [*counts, self.counters_keep_seconds, ack.skipped, ack.clears, ack.holder]
        return keys, [*args, *(item for count in ack.counts for item in count)]

    def handoff(
        self,
        lease: str,
        member: bytes,
        *,
        priority: int,
        site: str,
        job: str | None,
        delay: float = 0.0,
        again: str = "",
        fingerprint: bytes = b"",
        again_seconds: int = 0,
    ) -> bool | None:
        """End ``lease`` and queue ``member`` in its place (a retry or a redirect of its request), in one
        step; with a ``delay`` (seconds), it is queued only that much later (a retry's backoff). False
        when the lease was no longer held (its request is queued again, or with another worker) or the
        very same member is queued already: nothing more to do either way. ``again``: the set of the URLs
        a job that fetches seen URLs again fetches (:meth:`Keys.again`), which takes ``fingerprint`` (its
        time-to-live renewed to ``again_seconds``) in the same step; None, nothing done and the lease
        kept, when it holds it already (the member's URL is fetched in the job)."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.sequence,
            self.keys.attempts,
            self.keys.delayed,
            self.keys.lease_sites,
            again,
        ]
        args: list[str | bytes | int | float] = [
            self.keys.prefix,
            lease,
            member,
            int(priority),
            site,
            job or "",
            max(delay, 0.0),
            fingerprint,
            int(again_seconds),
        ]
        handed = int(self._handoff(keys=keys, args=args))
        return None if handed == -2 else handed == 1

    def defer(self, lease: str, seconds: float, *, max_attempts: int, counted: bool = True) -> int:
        """End ``lease`` for now and queue its request again in ``seconds`` (its work could not be finished
        now). Returns the attempts so far; 0 when ``max_attempts`` are used up (the lease is kept:
        dead-letter it), -1 when it was not held any more. A try not ``counted`` (a wait for a lock another
        process holds) leaves the attempts as they were, and is never the last."""
        keys = [self.keys.leases, self.keys.attempts, self.keys.delayed, self.keys.lease_sites]
        args: list[str | float] = [self.keys.prefix, lease, seconds, max_attempts, "1" if counted else ""]
        return int(self._defer(keys=keys, args=args))

    def dead_letter(
        self,
        lease: str,
        record: bytes,
        *,
        site: str,
        job: str | None,
        kind: str = "",
        fetched: bool = False,
        supersedes: str = "",
    ) -> bool:
        """End ``lease`` for good and keep its member in the dead letters with ``record`` (JSON: the
        reason); its job counts an error of ``kind``, and a page fetched when ``fetched`` (its page was
        fetched, what came of it failed). ``site`` is empty for an entry that never was a request. A
        ``supersedes`` name (the page's queue slot and URL on two lines) replaces the dead letter last
        kept under that name (``Keys.dead_superseded``): a page that fails at every grab keeps one, which
        an ack of the page naming it (``Ack.clears``) deletes. False if it was not held."""
        keys = [
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.pending,
            self.keys.job(job) if job else "",
            self.keys.dead,
            self.keys.attempts,
            self.keys.lease_sites,
            self.keys.dead_superseded,
        ]
        args: list[str | bytes] = [
            self.keys.prefix,
            lease,
            site,
            job or "",
            record,
            kind,
            "1" if fetched else "",
            supersedes,
        ]
        return bool(self._dead(keys=keys, args=args))

    def dead(self) -> dict[str, str]:
        """The dead letters: member -> record (JSON), read DEAD_SCAN_COUNT at a time (a letter HSCAN gives
        twice is one entry of the mapping)."""
        return {member: record for page in self.dead_pages() for member, record in page.items()}

    def dead_pages(self) -> Iterator[dict[str, str]]:
        """The dead letters a page at a time (one HSCAN call of DEAD_SCAN_COUNT each): member -> record
        (JSON). The hash may change between pages: a letter there throughout comes at least once (twice
        when Redis grew or shrank the hash meanwhile), one added or deleted meanwhile may not come. When a
        letter may be missing from ``Keys.dead_superseded`` (:meth:`unnamed`), each page's are named there
        as they are read (:meth:`index_dead`), so that an ack of their page fetched again deletes them; by
        a Redis that refuses writes, they are read unnamed."""
        yield from self._dead_pages(self.unnamed())

    def _dead_pages(self, unnamed: Unnamed | None) -> Iterator[dict[str, str]]:
        """:meth:`dead_pages`, naming the letters as it reads them unless ``unnamed`` is None (nothing to
        name); read to the end, it keeps what is left unnamed (``_NAMED_ALL``)."""
        naming, added, waiting = unnamed is not None, 0, 0
        cursor = 0
        while True:
            cursor, page = cast(
                "tuple[int, dict[bytes, bytes]]",
                self.server.hscan(self.keys.dead, cursor, count=DEAD_SCAN_COUNT),
            )
            if page:
                letters = {decoded(member): decoded(record) for member, record in page.items()}
                if naming:
                    try:
                        named = self.index_dead(letters)
                        added, waiting = added + named.added, waiting + named.waiting
                    except redis.ResponseError as exc:
                        self._naming_refused(exc)
                        naming = False
                yield letters
            if not cursor:
                break
        if naming and unnamed is not None:
            try:
                self._named_all(
                    keys=self._naming_keys(), args=[unnamed.letters, unnamed.freed, added, waiting]
                )
            except redis.ResponseError as exc:
                self._naming_refused(exc)

    def _naming_refused(self, exc: redis.ResponseError) -> None:
        # Writes refused (memory full, a replica, a full disk, a reader's rights): the letters are read all
        # the same, and named at a read once Redis takes writes again.
        logger.debug("cannot name the dead letters read in %s: %s", self.keys.dead_superseded, exc)

    def unnamed(self) -> Unnamed | None:
        """The dead letters less the names in ``Keys.dead_superseded``, and the names freed so far (one
        call, ``_UNNAMED``), when some letter may be unnamed; None when the count is the one the last full
        naming pass left in ``Keys.dead_unnamed`` (``_NAMED_ALL``), none written unnamed since, and no name
        freed while a letter waited for one: nothing to name."""
        count, named, freed = self._unnamed(keys=self._naming_keys())
        return None if int(named) else Unnamed(int(count), decoded(freed))

    def _naming_keys(self) -> list[str]:
        return [self.keys.dead, self.keys.dead_superseded, self.keys.dead_unnamed]

    def index_dead(self, members: Iterable[str]) -> NamedDead:
        """Name in ``Keys.dead_superseded`` (``_superseded_as``) each of these dead letters that has no
        entry there: a letter written before every letter was named there (an article page's, by a worker
        of that time, or in an older data folder), which an ack of its page fetched again (``Ack.clears``)
        would never find. One call (``_INDEX_DEAD``), none for letters that are no request."""
        named = [(member, name) for member in members if (name := _superseded_as(member))]
        if not named:
            return NamedDead(0, 0)
        args = [part for pair in named for part in pair]
        added, waiting = self._index_dead(keys=[self.keys.dead, self.keys.dead_superseded], args=args)
        return NamedDead(int(added), int(waiting))

    def index_all_dead(self) -> None:
        """:meth:`index_dead` for every dead letter, as :meth:`dead_pages` reads them; one call, no page
        read, when nothing is to be named (:meth:`unnamed`)."""
        unnamed = self.unnamed()
        if unnamed is not None:
            for _ in self._dead_pages(unnamed):
                pass

    def requeue_dead(
        self,
        member: str,
        *,
        priority: int,
        site: str,
        job: str | None,
        kind: str | None = None,
        fetched: bool = False,
        queued: str | bytes | None = None,
        job_keep_hours: float = SCHEDULE_JOB_KEEP_HOURS,
    ) -> bool:
        """Put a dead letter back in the queue, as ``queued`` (its request as it is to be taken again;
        default ``member``): its job counts one error of ``kind`` fewer, and one page fetched fewer when
        ``fetched`` (it was counted fetched as it died); an ended job's hash is kept ``job_keep_hours``
        from now, written again with its pending count alone when it expired (``_REQUEUE_DEAD``); its
        entry in ``Keys.dead_superseded`` goes with it (named from ``member``: ``_superseded_as``). A
        letter whose request is queued already (its job pushed it again) goes into that copy, counted
        pending once. False if it is not (or no longer) a dead letter."""
        letter = DeadRequeue(member, priority, site, job, kind, fetched, queued)
        return self.requeue_dead_many([letter], job_keep_hours=job_keep_hours)[0]

    def requeue_dead_many(
        self, letters: Iterable[DeadRequeue], *, job_keep_hours: float = SCHEDULE_JOB_KEEP_HOURS
    ) -> list[bool]:
        """:meth:`requeue_dead` for each of ``letters``, in one round trip (a pipeline of the same script,
        each call deleting its letter and queueing its request together: stopped midway, each letter is
        either still dead or queued, never both nor neither); each one's outcome, in order."""
        keep = max(int(job_keep_hours * 3600), 1)
        with self.server.pipeline(transaction=False) as pipe:
            for letter in letters:
                keys = [
                    self.keys.dead,
                    self.keys.pending,
                    self.keys.job(letter.job) if letter.job else "",
                    self.keys.sequence,
                    self.keys.dead_superseded,
                    self.keys.dead_unnamed,
                ]
                args: list[str | bytes | int] = [
                    self.keys.prefix,
                    letter.member,
                    int(letter.priority),
                    letter.site,
                    letter.job or "",
                    letter.kind or "",
                    "1" if letter.fetched else "",
                    letter.member if letter.queued is None else letter.queued,
                    keep,
                    _superseded_as(letter.member),
                ]
                self._requeue_dead(keys=keys, args=args, client=pipe)
            return [bool(done) for done in pipe.execute()]

    def drop_dead(self, members: Iterable[str]) -> int:
        """Forget these dead letters for good, and their entries in ``Keys.dead_superseded`` (as
        :meth:`requeue_dead` does), DEAD_SCAN_COUNT a call; returns how many there were."""
        chosen = [part for member in members for part in (member, _superseded_as(member))]
        step = 2 * DEAD_SCAN_COUNT
        keys = [self.keys.dead, self.keys.dead_superseded, self.keys.dead_unnamed]
        return sum(
            int(self._drop_dead(keys=keys, args=chosen[start : start + step]))
            for start in range(0, len(chosen), step)
        )

    def renew(self, members: Iterable[str]) -> int:
        """Move the deadlines of these leases ``lease_seconds`` from now; returns how many were still held."""
        held = list(members)
        if not held:
            return 0
        return int(self._renew(keys=[self.keys.leases], args=[self.lease_seconds, *held]))

    def release(self, members: Iterable[str]) -> int:
        """Put these leases back in the queue now (a worker closing with work it has not finished)."""
        held = list(members)
        if not held:
            return 0
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.lease_sites, self.keys.lease_holders]
        return self._said_back(self.keys.leases, self._release(keys=keys, args=[self.keys.prefix, "", *held]))

    def release_holders(self, holders: Collection[str]) -> dict[str, int]:
        """Put every lease these workers (their ids, as the pop recorded them) still hold back in the queue
        now, as an expired lease goes back (its site's download slot freed, its attempts as they were): for
        workers known dead, whose leases would hold their sites until they expire. Leases are read
        RELEASE_BATCH at a time and returned RELEASE_BATCH a call; a lease taken since by another worker
        stays with it. Returns how many went back, by holder (those that had any)."""
        wanted = set(holders)
        if not wanted:
            return {}
        found: dict[str, list[str]] = {}
        for member, holder in self.server.hscan_iter(self.keys.lease_holders, count=RELEASE_BATCH):
            if (name := decoded(holder)) in wanted:
                found.setdefault(name, []).append(decoded(member))
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.lease_sites, self.keys.lease_holders]
        released: dict[str, int] = {}
        for holder, members in found.items():
            for start in range(0, len(members), RELEASE_BATCH):
                batch = members[start : start + RELEASE_BATCH]
                reply = self._release(keys=keys, args=[self.keys.prefix, holder, *batch])
                released[holder] = released.get(holder, 0) + self._said_back(self.keys.leases, reply)
        return {holder: count for holder, count in released.items() if count}

    def requeue_expired(self, now: float | None = None, limit: int = 1000) -> int:
        """Put up to ``limit`` leases whose deadline has passed at ``now`` (epoch seconds; None: by Redis's
        clock, which set it) back in the queue; returns how many."""
        keys = [self.keys.leases, self.keys.lease_scores, self.keys.lease_sites]
        moment = "" if now is None else now
        return self._said_back(
            self.keys.leases, self._requeue(keys=keys, args=[self.keys.prefix, moment, limit, 1])
        )

    def queue_due(self, now: float | None = None, limit: int = 1000) -> int:
        """Move up to ``limit`` delayed requests whose time has come (retries after their backoff, deferred
        ones) into the queue, at ``now`` (epoch seconds; None: by Redis's clock, which set their times);
        returns how many."""
        keys = [self.keys.delayed, self.keys.lease_scores, self.keys.lease_sites]
        moment = "" if now is None else now
        return self._said_back(
            self.keys.delayed, self._requeue(keys=keys, args=[self.keys.prefix, moment, limit, 0])
        )

    def _said_back(self, held_in: str, reply: list[Any]) -> int:
        """How many requests _REQUEUE or _RELEASE returned to their queues (its ``reply``), each value they
        named logged: a queue score that is no number, a member of ``held_in`` that names no site."""
        count, *named = reply
        for what, member, value in zip(named[::3], named[1::3], named[2::3], strict=True):
            text = decoded(member)
            if decoded(what) == "score":
                url, site = _url_and_site(text)
                logger.warning(
                    "Redis hash %s held %r as the queue score of request %s of site %s, not a number: it is"
                    " queued again with score 0, before the site's other requests of priority 0",
                    self.keys.lease_scores,
                    decoded(value),
                    url,
                    site,
                )
            else:
                logger.warning(
                    "Redis key %s held %r, which names no site (none kept in %s, none in its meta): it is not"
                    " queued again, but kept in the dead letters (crawler dead list)",
                    held_in,
                    text,
                    self.keys.lease_sites,
                )
        return int(count)

    def delayed(self) -> int:
        """Requests waiting for their time (a retry's backoff, a deferred store)."""
        return int(self.server.zcard(self.keys.delayed))

    def leased(self) -> int:
        return int(self.server.zcard(self.keys.leases))

    def pending(self, site: str | None = None) -> int:
        """Requests queued or leased and not yet acknowledged, for one site or all."""
        if site is not None:
            return int(self.server.hget(self.keys.pending, site) or 0)
        return sum(int(count) for count in self.server.hvals(self.keys.pending))

    def lost(self, site: str, *, write_off: bool = False, jobs: Sequence[str] = ()) -> tuple[int, int] | None:
        """The requests of ``site`` (and of its discover host slots) counted pending when Redis holds none
        of them (none queued, leased or waiting: their keys deleted, evicted, overwritten with another
        type, or Redis restarted from an older snapshot), and those of ``jobs`` written off; None when it
        holds one, or when neither the site nor any of ``jobs`` counts one pending (none is lost). With
        ``write_off``, the site's counts are deleted when it holds none (a count of 0 too), and the pending
        of each of ``jobs`` set to 0 (its ``lost`` counting what it had), in the same script."""
        keys = [
            self.keys.pending,
            self.keys.lease_sites,
            self.keys.leases,
            self.keys.delayed,
            self.keys.lease_scores,
            *(self.keys.job(job) for job in jobs),
        ]
        counted, none_held, written = self._lost(
            keys=keys, args=[self.keys.prefix, site, 1 if write_off else 0]
        )
        return (int(counted), int(written)) if int(none_held) else None

    def job_lost(self, site: str, job: str, *, write_off: bool = False) -> int | None:
        """The requests ``job``, of ``site``, counts pending when Redis holds none of them (none queued for
        the site or its discover host slots, leased or waiting: :meth:`lost` for one job, whatever the
        site's other jobs hold); None when it holds one, or the job counts none. With ``write_off``, the
        job's pending is set to 0 (its ``lost`` counting what it had) and as many taken from the site's
        counts, in the same script. It looks twice through every request those sets hold, each look a
        script call per JOB_LOST_READ_MAX members or so (_JOB_LOST), and answers only when both found none,
        the job's pending count unchanged from the first's start to the second's end, and none of its
        requests moved from a lease to a place read before (``moved`` in the job's hash: deferred, handed
        on, released, expired), the one way a look could miss a request that stays alive."""
        seen = self._job_look(site, job, "", write_off=False)
        answer = seen and self._job_look(site, job, seen, write_off=write_off)
        return int(answer.partition(":")[0]) if answer else None

    def _job_look(self, site: str, job: str, seen: str, *, write_off: bool) -> str | None:
        """One look of :meth:`job_lost`: the job's counts (``pending:moved``) it read, unchanged from its
        start (``seen``, when not '') to its end; None when it found a request of the job, or they moved."""
        keys = [self.keys.pending, self.keys.leases, self.keys.delayed, self.keys.job(job)]
        place, cursor = "", "0"
        while True:
            args: list[str | int] = [
                self.keys.prefix,
                site,
                job,
                int(write_off),
                JOB_LOST_READ_MAX,
                place,
                cursor,
                seen,
            ]
            reply = self._job_lost(keys=keys, args=args)
            if not isinstance(reply, list):
                return None
            place, cursor, seen = decoded(reply[0]), decoded(reply[1]), decoded(reply[2])
            if not place:
                return seen

    def job_pending(self, job: str) -> int:
        return int(self.server.hget(self.keys.job(job), "pending") or 0)

    def take_sites(
        self, sites: Iterable[str], *, held: Callable[[redis.Redis], bool], batch: int = TAKE_BATCH
    ) -> dict[str, dict[str, int]] | None:
        """Take every request of ``sites`` out of the queue (queued, waiting, and leased), each ended in its
        job (``taken`` counts them) and in its site's pending count, nothing of it left; by site, the
        members taken, each with its attempts so far (for :meth:`push` when it is queued again).

        Leases are taken too, so only while no worker is alive to hold one: ``held`` reads the workers'
        heartbeats (on the client it is given) and says whether one may; then nothing is taken (None). The
        taking is one transaction with that reading: a beat written in between (a worker that starts, or a
        demo that marks itself alive before it queues its job) makes it read them again. That transaction
        takes the waiting and leased requests and sets each site's queue aside; its queued requests are
        then taken ``batch`` at a time, Redis serving the workers between two batches (a request pushed
        meanwhile is queued anew, not taken)."""
        chosen = list(sites)
        keys = [
            self.keys.pending,
            self.keys.leases,
            self.keys.lease_scores,
            self.keys.lease_sites,
            self.keys.attempts,
            self.keys.delayed,
        ]
        with self.server.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(self.keys.workers)  # type: ignore[no-untyped-call]
                    if held(pipe):
                        return None
                    pipe.multi()
                    for site in chosen:
                        self._take(keys=keys, args=[self.keys.prefix, site], client=pipe)
                    replies = pipe.execute()
                except redis.WatchError:
                    continue
                break
        taken = {site: _members_taken(reply) for site, reply in zip(chosen, replies, strict=True)}
        for site in chosen:
            args: list[str | int] = [self.keys.prefix, site, max(batch, 1)]
            queued_keys = [
                self.keys.pending,
                self.keys.attempts,
                self.keys.lease_scores,
                self.keys.lease_sites,
            ]
            while reply := self._take_queued(keys=queued_keys, args=args):
                for member, attempts in _members_taken(reply).items():
                    taken[site].setdefault(member, attempts)
        return taken


def _members_taken(reply: list[Any]) -> dict[str, int]:
    """The members _TAKE or _TAKE_QUEUED took (its ``reply``), each with its attempts so far."""
    return {decoded(member): int(attempts) for member, attempts in zip(reply[::2], reply[1::2], strict=True)}


# The characters a glob pattern (HSCAN's MATCH) reads as more than themselves.
_GLOB_SPECIAL = re.compile(r"[*?\[\]\\]")


def _slots_of(site: str, pending: Iterable[str]) -> list[str]:
    """``site``, then the discover host slots (``<site>@<host>``) of ``pending``, the slots with requests
    pending, sorted."""
    prefix = f"{site}@"
    return [site, *sorted(name for name in pending if name.startswith(prefix))]


def _superseded_as(member: str) -> str:
    """The name a dead letter of ``member`` may be kept under in ``Keys.dead_superseded``, as the worker's
    scheduler names a listing page's: its queue slot and URL on two lines; '' for an entry that has
    neither (no request). Every way a letter goes (requeued, one or many, or dropped) names its entry so,
    and the entry goes when it names that letter (``_UNSUPERSEDE``)."""
    url, slot = _url_and_slot(member)
    return f"{slot}\n{url}" if url is not None and slot is not None else ""


def _url_and_site(member: str) -> tuple[str, str]:
    """The URL and the queue slot of the request ``member``, as far as it has them ("?" for what it
    lacks)."""
    url, slot = _url_and_slot(member)
    return url or "?", slot or "?"


def _url_and_slot(member: str) -> tuple[str | None, str | None]:
    """The URL and the queue slot (``meta.slot``, else ``meta.site``) of the request ``member``; None for
    what it lacks (an entry that is no request's JSON has neither)."""
    try:
        request = json.loads(member)
    except ValueError:
        request = None
    if not isinstance(request, dict):
        return None, None
    meta = request.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    url, slot = request.get("url"), meta.get("slot") or meta.get("site")
    return (url if isinstance(url, str) and url else None), (slot if isinstance(slot, str) else None)
