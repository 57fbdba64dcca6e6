"""The leased queue against the real embedded Redis: nothing a worker takes is lost."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from crawlsite import sites_spider
from scrapy import Request, Spider

from crawler.deadletters import dead_letters, requeue
from crawler.demo import DEMO_RULES
from crawler.discover.frontier import slot_of
from crawler.keys import Keys
from crawler.redisio import redirects, serializer
from crawler.redisio.bloom import RedisBloom
from crawler.redisio.connection import connect, decoded
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.queue import HUNGRY_SECONDS, OFFER_SECONDS, Ack, LeasedQueue
from crawler.requests import (
    Work,
    decode_request,
    encode_request,
    enqueue_job,
    leased,
    open_job,
    push,
    queue_in_job,
    queue_new,
    take_leftovers,
)
from crawler.rules import RuleSet, load_rules

SPIDER = Spider(name="sites")


def request(url: str, *, site: str = "news", job: str | None = "j1", priority: int = 0) -> Request:
    return Request(url, meta={"site": site, "job": job, "kind": "article"}, priority=priority)


def take(queue: LeasedQueue) -> Request | None:
    """Lease the next request, as the worker's scheduler does."""
    lease = queue.pop().member
    if lease is None:
        return None
    taken = decode_request(lease, SPIDER)
    leased(taken, lease)
    return taken


def ack(queue: LeasedQueue, request: Request) -> bool:
    work = Work.of(request)
    assert work.lease is not None
    return queue.ack(work.lease, site=work.site, job=work.job)


def make_queue(
    client: redis.Redis, lease_seconds: float = 60.0, jobs: tuple[str, ...] = ("j1",)
) -> LeasedQueue:
    """The queue of prefix ``test``, ``jobs`` made (as enqueue_job makes a job before its first push: a
    push counts in a job whose hash is there alone)."""
    for job in jobs:
        open_job(client, Keys("test"), job)
    return LeasedQueue(client, Keys("test"), lease_seconds=lease_seconds)


# The queue's scripts write times with 14 significant digits (Lua's tostring): 0.1 ms at today's epoch.
CLOCK_DIGITS = 0.001


def redis_now(client: redis.Redis) -> float:
    """Redis's clock, the one the queue's scripts read."""
    seconds, microseconds = client.time()
    return seconds + microseconds / 1_000_000


def test_requests_come_out_by_priority_then_in_arrival_order(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    for url, priority in [("http://a.test/1", 0), ("http://a.test/2", 0), ("http://a.test/3", 5)]:
        assert push(queue, request(url, priority=priority))
    popped = [take(queue) for _ in range(3)]
    assert [r.url for r in popped if r is not None] == [
        "http://a.test/3",
        "http://a.test/1",
        "http://a.test/2",
    ]
    assert take(queue) is None


def test_a_popped_request_is_leased_not_deleted_until_acknowledged(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/1"))
    assert queue.pending("news") == 1 and queue.job_pending("j1") == 1
    taken = take(queue)
    assert taken is not None and taken.meta["site"] == "news"
    assert len(queue) == 0 and queue.leased() == 1 and queue.pending("news") == 1
    assert ack(queue, taken)
    assert queue.leased() == 0 and queue.pending("news") == 0 and queue.job_pending("j1") == 0
    assert not ack(queue, taken), "a second acknowledgement changes nothing"
    assert queue.pending("news") == 0


def test_acknowledgements_in_one_round_trip_end_each_lease_once(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    for n in range(3):
        push(queue, request(f"http://a.test/{n}"))
    leases = [queue.pop().member for _ in range(3)]
    assert all(leases) and queue.leased() == 3
    acks = [Ack(str(lease), "news", "j1", fetched=1, stored=1) for lease in leases]
    assert queue.ack_many([*acks[:2], acks[0]]) == [True, True, False], "a lease ends once"
    assert queue.leased() == 1 and queue.pending("news") == 1 and queue.job_pending("j1") == 1
    assert queue.ack_many(acks[2:]) == [True]
    assert queue.leased() == 0 and queue.pending("news") == 0 and queue.job_pending("j1") == 0
    assert redis_client.hget(Keys("test").job("j1"), "stored") == b"3"
    assert queue.ack_many([]) == []


def test_an_expired_lease_goes_back_to_the_queue_with_its_place(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client, lease_seconds=30)
    push(queue, request("http://a.test/high", priority=3))
    push(queue, request("http://a.test/low"))
    taken = take(queue)
    assert taken is not None and taken.url == "http://a.test/high"
    assert queue.requeue_expired(now=time.time()) == 0, "not expired yet"
    assert queue.requeue_expired(now=time.time() + 31) == 1
    again = take(queue)
    assert again is not None and again.url == "http://a.test/high", "it keeps its priority"
    assert queue.pending("news") == 2


def test_renewal_keeps_a_lease_alive_and_release_returns_it(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client, lease_seconds=30)
    push(queue, request("http://a.test/1"))
    taken = take(queue)
    assert taken is not None
    lease = taken.meta["lease"]
    queue.lease_seconds = 120
    assert queue.renew([lease]) == 1
    assert queue.requeue_expired(now=time.time() + 60) == 0, "renewed past the old deadline"
    assert queue.release([lease]) == 1
    assert queue.leased() == 0 and len(queue) == 1


def test_the_same_request_twice_is_queued_once(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    assert push(queue, request("http://a.test/1"))
    assert not push(queue, request("http://a.test/1"))
    assert len(queue) == 1 and queue.pending("news") == 1


def test_requests_pushed_together_are_queued_as_pushed_one_by_one(redis_client: redis.Redis) -> None:
    """push_many (one round trip, for `crawler temp --stored`): each queued once, in priority then
    arrival order, counted in its job as push counts it."""
    queue = make_queue(redis_client)
    batch = [request("http://a.test/1"), request("http://a.test/2", priority=5), request("http://a.test/1")]
    queued = queue.push_many((encode_request(r), r.priority, "news", "j1") for r in batch)
    assert queued == [True, True, False]
    assert len(queue) == 2 and queue.job_pending("j1") == 2
    assert [r.url for r in (take(queue), take(queue)) if r is not None] == [
        "http://a.test/2",
        "http://a.test/1",
    ]


def test_requests_travel_as_json_and_come_back_whole(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    original = Request(
        "http://a.test/x?q=1",
        headers={"Accept-Language": "zh-CN"},
        meta={"site": "news", "job": None, "kind": "index", "page": 2},
        priority=4,
        dont_filter=True,
    )
    push(queue, original)
    stored = redis_client.zrange("test:queue:news", 0, -1)
    assert isinstance(stored, list)
    assert isinstance(stored[0], bytes)
    assert serializer.loads(stored[0])["url"] == "http://a.test/x?q=1"
    back = take(queue)
    assert back is not None
    assert back.url == original.url and back.priority == 4 and back.dont_filter
    assert back.headers.get("Accept-Language") == b"zh-CN"
    assert back.meta["page"] == 2


def test_a_retry_with_a_backoff_waits_then_goes_back_to_the_queue(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/1"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.handoff(lease, b'{"retry": 1}', priority=0, site="news", job="j1", delay=30)
    assert (len(queue), queue.leased(), queue.delayed()) == (0, 0, 1), "waiting, with no worker"
    assert queue.pending("news") == 1 and queue.job_pending("j1") == 1
    assert queue.queue_due(now=time.time()) == 0, "not yet"
    assert queue.queue_due(now=time.time() + 31) == 1
    assert (len(queue), queue.delayed()) == (1, 0)


def test_a_deferral_that_uses_no_try_comes_back_however_often_and_leaves_the_attempts_as_they_were(
    redis_client: redis.Redis,
) -> None:
    """A wait for a lock another process holds (``counted=False``) is never the last try: the request comes
    back each time, its attempts unchanged, and a counted failure after it has all its tries left."""
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/1"))
    for _ in range(3):
        lease = queue.pop().member
        assert lease is not None
        assert queue.defer(lease, 10, max_attempts=1, counted=False) == 0, "none counted so far"
        assert (queue.leased(), queue.delayed(), queue.pending("news")) == (0, 1, 1)
        assert queue.queue_due(now=time.time() + 11) == 1
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10, max_attempts=1) == 1, "its one try left"
    assert queue.queue_due(now=time.time() + 11) == 1
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10, max_attempts=1) == 0, "used up"


def test_a_deferred_request_comes_back_until_its_attempts_are_used_up(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/1"))
    for attempt in (1, 2):
        lease = queue.pop().member
        assert lease is not None
        assert queue.defer(lease, 10, max_attempts=2) == attempt
        assert (queue.leased(), queue.delayed(), queue.pending("news")) == (0, 1, 1)
        assert queue.queue_due(now=time.time() + 11) == 1
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10, max_attempts=2) == 0, "used up: still leased, for a dead letter"
    assert queue.dead_letter(lease, b'{"reason": "the store refused it"}', site="news", job="j1")
    assert (queue.leased(), queue.delayed(), queue.pending("news"), queue.job_pending("j1")) == (0, 0, 0, 0)
    assert list(queue.dead().values()) == ['{"reason": "the store refused it"}']


# --- each site's politeness, for every worker together ----------------------------------------------------


def test_a_site_sends_at_most_its_concurrency_at_once_and_a_download_frees_a_slot(
    redis_client: redis.Redis,
) -> None:
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.0, concurrency=2)
    for number in range(4):
        push(queue, request(f"http://a.test/{number}"))
    push(queue, request("http://b.test/1", site="other"))
    first, second = queue.pop(), queue.pop()
    assert (first.site, second.site) == ("news", "news")
    third = queue.pop()
    assert third.site == "other", "a full site waits; the other sites go on"
    assert queue.pop().member is None, "two downloads of news are under way"
    assert first.member is not None
    after_download = queue.pop([first.member])
    assert after_download.site == "news", "the ended download freed a slot"
    assert second.member is not None
    assert queue.ack(second.member, site="news", job="j1"), "a lease that ends frees its slot too"
    assert queue.pop().site == "news"
    assert queue.politeness(["news"])[0].inflight == 2


def test_a_site_sends_at_most_one_request_per_delay_and_says_when_it_may_again(
    redis_client: redis.Redis,
) -> None:
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.4, concurrency=10)
    for number in range(3):
        push(queue, request(f"http://a.test/{number}"))
    started = time.monotonic()
    before = redis_now(redis_client)
    assert queue.pop().member is not None
    waiting = queue.pop()
    after = redis_now(redis_client)
    assert waiting.member is None and waiting.wait is not None
    # 0.4 s from the first pop, less the time until the second (however long a loaded machine took).
    assert 0.4 - (after - before) - CLOCK_DIGITS <= waiting.wait <= 0.4 + CLOCK_DIGITS
    taken = 1
    while taken < 3:
        if queue.pop().member is not None:
            taken += 1
        else:
            time.sleep(0.02)
    assert time.monotonic() - started >= 0.8, "3 requests with a delay of 0.4 s take 0.8 s at least"


def test_a_crawl_delay_learned_after_a_request_went_holds_the_next_one(redis_client: redis.Redis) -> None:
    """A worker reads the site's robots.txt as it downloads the site's first request, popped with the
    rule's delay (0.2 s): the second request went 0.2 s after the first where robots.txt asked for 2 s
    (a temp crawl: /news/ then its next page 0.20 s later, the articles 2.00 s apart). A crawl-delay
    longer than the interval the last pop gated the site with now gates it from that pop."""
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.2, concurrency=10)
    queue.configure("other", delay=0.2, concurrency=10)
    for number in range(2):
        push(queue, request(f"http://a.test/{number}"))
        push(queue, request(f"http://b.test/{number}", site="other"))
    before = redis_now(redis_client)
    assert queue.pop().site == "news"
    assert queue.pop().site == "other"
    queue.set_crawl_delay("news", 30.0, "news.example")
    after = redis_now(redis_client)
    waiting = queue.pop()
    assert waiting.member is None and waiting.wait is not None
    # 0.2 s for the other site, its last pop's delay; the news site waits 30 s from its pop.
    assert waiting.wait <= 0.2 + CLOCK_DIGITS
    news = float(redis_client.hget("test:polite:news", "next") or 0)
    assert before + 30 - CLOCK_DIGITS <= news <= after + 30 + CLOCK_DIGITS
    assert float(redis_client.zscore("test:gated", "news") or 0) == news
    queue.set_crawl_delay("news", 30.0, "news.example")
    assert float(redis_client.hget("test:polite:news", "next") or 0) == news, "the same one: unchanged"
    queue.set_crawl_delay("other", 0.1, "other.example")
    assert float(redis_client.hget("test:polite:other", "crawl_delay") or 0) == 0.1


def test_a_waiting_site_never_holds_back_the_others(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    queue.configure("slow", delay=30.0, concurrency=1)
    for number in range(50):
        push(queue, request(f"http://slow.test/{number}", site="slow", priority=100))
    push(queue, request("http://fast.test/1", site="fast"))
    assert queue.pop().site == "slow", "the higher priority first"
    assert queue.pop().site == "fast", "then the others, while the slow site waits"
    assert queue.pop().member is None


def test_a_back_off_holds_the_site_for_every_worker_and_doubles(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/1"))
    push(queue, request("http://b.test/1", site="other"))

    def back_off(site: str, seconds: float | None = None, longest: float = 600.0) -> float:
        return queue.back_off(
            site, seconds=seconds, first=0.3, longest=longest, calm=300.0, reason="HTTP 429"
        )

    assert back_off("news") == pytest.approx(0.3, abs=0.01)
    assert back_off("news") == pytest.approx(0.3, abs=0.02), "a burst of answers is one backoff"
    time.sleep(0.35)
    assert back_off("news") == pytest.approx(0.6, abs=0.01), "the next one, after it ended, doubles"
    time.sleep(0.65)
    assert back_off("news") == pytest.approx(1.2, abs=0.01)
    until = redis_client.hget(Keys("test").polite("news"), "until")
    assert until is not None
    before = redis_now(redis_client)
    shorter = back_off("news", seconds=0.1)
    after = redis_now(redis_client)
    assert redis_client.hget(Keys("test").polite("news"), "until") == until, "a shorter wait never cuts it"
    # What is left of the 1.2 s (however long a loaded machine took since).
    assert float(until) - after - CLOCK_DIGITS <= shorter <= float(until) - before + CLOCK_DIGITS
    assert back_off("third", seconds=2.0) == pytest.approx(2.0, abs=0.01), "a Retry-After is what it asks"
    assert back_off("news", seconds=9999.0, longest=60.0) == pytest.approx(60.0, abs=0.01)
    assert queue.pop().site == "other"
    held = queue.pop()
    assert held.member is None and held.wait is not None and held.wait > 50
    (shown,) = queue.politeness(["news"])
    assert shown.backoff_until is not None and shown.backoff_reason == "HTTP 429"
    assert queue.pending("news") == 1, "its request stays queued"


def test_a_site_that_was_calm_starts_its_backoff_over(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    assert queue.back_off(
        "news", seconds=None, first=0.2, longest=60.0, calm=0.1, reason="HTTP 429"
    ) == pytest.approx(0.2)
    time.sleep(0.5)
    assert queue.back_off(
        "news", seconds=None, first=0.2, longest=60.0, calm=0.1, reason="HTTP 429"
    ) == pytest.approx(0.2)


def test_expired_and_released_leases_free_their_sites_slots(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client, lease_seconds=0.1)
    queue.configure("news", delay=0.0, concurrency=1)
    push(queue, request("http://a.test/1"))
    push(queue, request("http://a.test/2"))
    taken = queue.pop()
    assert taken.member is not None and queue.pop().member is None
    time.sleep(0.2)
    assert queue.requeue_expired() == 1
    again = queue.pop()
    assert again.member is not None, "the expired lease gave its slot back"
    assert queue.release([again.member]) == 1
    assert queue.pop().member is not None
    assert queue.politeness(["news"])[0].inflight == 1


# --- notes of links that redirected to an article seen already ------------------------------------------


def test_redirect_notes_of_an_article_never_stored_are_dropped_once_they_are_older_than_their_limit(
    redis_client: redis.Redis,
) -> None:
    keys = Keys("test")
    start = 1_800_000_000.0
    redirects.note(redis_client, keys, "http://news.test/dead", ["http://t.test/1"], now=start)
    redirects.note(redis_client, keys, "http://news.test/dead", ["http://t.test/2"], now=start + 60)
    redirects.note(redis_client, keys, "http://news.test/stored", ["http://t.test/3"], now=start + 60)
    later = start + redirects.NOTE_SECONDS - 1
    assert redirects.note(redis_client, keys, "http://news.test/late", ["http://t.test/4"], now=later) == 0
    assert set(redirects.noted(redis_client, keys, ["http://news.test/dead", "http://news.test/stored"])) == {
        "http://news.test/dead",
        "http://news.test/stored",
    }, "kept within the limit, counted from each note"
    notes = redirects.noted(redis_client, keys, ["http://news.test/stored"])
    redirects.forget(redis_client, keys, notes.items())
    expired = redirects.note(
        redis_client,
        keys,
        "http://news.test/new",
        ["http://t.test/5"],
        now=start + 61 + redirects.NOTE_SECONDS,
    )
    assert expired == 2, "the article never stored: its two notes dropped, once"
    assert set(
        redirects.noted(
            redis_client, keys, [f"http://news.test/{name}" for name in ("dead", "stored", "late", "new")]
        )
    ) == {
        "http://news.test/late",
        "http://news.test/new",
    }
    assert redis_client.hlen(keys.redirected) == 2
    assert redis_client.zcard(keys.redirected_at) == 2, "nothing left of the notes dropped or recorded"


def test_a_redirect_note_is_dropped_its_own_limit_after_it_was_noted_not_after_its_articles_first_note(
    redis_client: redis.Redis,
) -> None:
    # An article's earlier notes stayed in Redis (its document had not recorded them): a link noted for it
    # a day before they expire waits its own NOTE_SECONDS, and notes recorded go even when more came since.
    keys = Keys("test")
    start = 1_800_000_000.0
    article = "http://news.test/a"
    redirects.note(redis_client, keys, article, ["http://t.test/1"], now=start)
    read = redirects.noted(redis_client, keys, [article])
    day_before = start + redirects.NOTE_SECONDS - 86400
    redirects.note(redis_client, keys, article, ["http://t.test/2", "http://t.test/2b"], now=day_before)
    assert redirects.note(redis_client, keys, article, ["http://t.test/1"], now=day_before) == 0
    assert redirects.noted(redis_client, keys, [article]) == {
        article: "http://t.test/1\nhttp://t.test/2 http://t.test/2b"
    }, "a chain noted again is noted once"
    expired = redirects.note(
        redis_client, keys, "http://news.test/b", ["http://t.test/3"], now=start + redirects.NOTE_SECONDS + 1
    )
    assert expired == 0, "http://t.test/1 was noted again a day before: its limit starts from then"
    redirects.forget(redis_client, keys, read.items())
    assert redirects.noted(redis_client, keys, [article]) == {article: "http://t.test/2 http://t.test/2b"}, (
        "the note read and recorded is gone, the one that came since stays"
    )
    expired = redirects.note(
        redis_client,
        keys,
        "http://news.test/c",
        ["http://t.test/5"],
        now=day_before + redirects.NOTE_SECONDS + 1,
    )
    assert expired == 1, "the note that came since, dropped its own limit after it came"
    assert redirects.noted(redis_client, keys, [article]) == {}
    assert redis_client.zcard(keys.redirected_at) == 2, "one time for each note left: b's and c's"


def test_a_redirect_note_time_an_earlier_crawler_kept_per_article_drops_that_articles_notes(
    redis_client: redis.Redis,
) -> None:
    keys = Keys("test")
    start = 1_800_000_000.0
    redis_client.hset(keys.redirected, "http://news.test/old", "http://t.test/1\nhttp://t.test/2")
    redis_client.zadd(keys.redirected_at, {"http://news.test/old": start})
    expired = redirects.note(
        redis_client,
        keys,
        "http://news.test/new",
        ["http://t.test/3"],
        now=start + redirects.NOTE_SECONDS + 1,
    )
    assert expired == 2, "its two notes"
    assert redirects.noted(redis_client, keys, ["http://news.test/old"]) == {}
    assert redis_client.zrange(keys.redirected_at, 0, -1) == [b"http://news.test/new\nhttp://t.test/3"]


def test_a_link_noted_after_an_upgrade_outlives_its_articles_note_time_an_earlier_crawler_kept(
    redis_client: redis.Redis,
) -> None:
    # An earlier crawler timed the article's first note; a link noted for the article since, with a time of
    # its own, waits its own NOTE_SECONDS: the earlier time drops the earlier notes alone, counted each.
    keys = Keys("test")
    start = 1_800_000_000.0
    article = "http://news.test/old"
    redis_client.hset(keys.redirected, article, "http://t.test/1\nhttp://t.test/2")
    redis_client.zadd(keys.redirected_at, {article: start})
    later = start + redirects.NOTE_SECONDS - 86400
    redirects.note(redis_client, keys, article, ["http://t.test/3"], now=later)
    expired = redirects.note(
        redis_client, keys, "http://news.test/b", ["http://t.test/4"], now=start + redirects.NOTE_SECONDS + 1
    )
    assert expired == 2, "the two notes the earlier crawler timed"
    assert redirects.noted(redis_client, keys, [article]) == {article: "http://t.test/3"}
    expired = redirects.note(
        redis_client, keys, "http://news.test/c", ["http://t.test/5"], now=later + redirects.NOTE_SECONDS + 1
    )
    assert expired == 1
    assert redirects.noted(redis_client, keys, [article]) == {}


def test_seeds_of_the_seeds_list_are_read_by_our_parsing_and_their_extra_keys_never_make_a_form(
    tmp_path: Path, redis_server: str
) -> None:
    """DESIGN.md: scrapy-redis turns a JSON seed's extra keys into a form body; ours reads ``site``,
    ``url``, ``kind`` and ``job`` and nothing else (a GET, no body), and drops what is no seed, counted."""
    spider = sites_spider(tmp_path, redis_server)
    article = "http://127.0.0.1:9/a/1"
    seeds = [
        {"site": "news", "url": article, "kind": "article", "method": "POST", "body": "x=1", "extra": 1},
        {"site": "news", "url": "http://127.0.0.1:9/", "formdata": {"q": "1"}, "job": "j1"},
    ]
    requests = [spider.make_request_from_data(json.dumps(seed).encode()) for seed in seeds]
    assert [(r.method, r.url, r.body, Work.of(r).kind, Work.of(r).job) for r in requests if r] == [
        ("GET", article, b"", "article", None),
        ("GET", "http://127.0.0.1:9/", b"", "index", "j1"),
    ]
    assert spider.make_request_from_data(b"not json") is None
    assert spider.make_request_from_data(json.dumps({"site": "news", "link": article}).encode()) is None
    assert spider.crawler.stats is not None
    assert spider.crawler.stats.get_value("seeds/invalid") == 2


def test_a_late_note_of_a_job_whose_hash_expired_does_not_write_the_hash_again(
    tmp_path: Path, redis_server: str, redis_client: redis.Redis
) -> None:
    """The notes of a job's summary wrote its hash with HSET: a late page of an ended job whose hash expired
    (SCHEDULE_JOB_KEEP_HOURS) made it again, with no time-to-live, kept for ever. They write a hash that is
    there alone now (so do the worker's counts of a job, which its acknowledgements carry:
    test_a_request_that_ends_after_its_jobs_hash_expired_does_not_write_the_hash_again). A seed of the
    seeds list naming a job makes its hash, as enqueue_job does, before its first push: the job counts
    it."""
    spider = sites_spider(tmp_path, redis_server)
    keys = spider.keys
    open_job(redis_client, keys, "live")
    for job in ("live", "gone"):
        spider._note(job, "http://news.test/feed", "no feed")
    assert not redis_client.exists(keys.job("gone"))
    assert redis_client.hget(keys.job("live"), "note:http://news.test/feed") == b"no feed"
    seed = spider.make_request_from_data(
        json.dumps({"site": "news", "url": "http://news.test/", "job": "s"}).encode()
    )
    queue = LeasedQueue(redis_client, keys)
    assert seed is not None and push(queue, seed) and queue.job_pending("s") == 1


def test_the_spider_reads_the_rules_folder_once_at_start(
    tmp_path: Path, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules read for the download slots (``update_settings``) are the rules the spider serves
    (``from_crawler``): one read of the folder, not two."""
    from crawler.worker import spider as spider_module

    folders: list[str] = []

    def counted(directory: str | Path, **options: Any) -> RuleSet:
        folders.append(str(directory))
        return load_rules(directory, **options)

    monkeypatch.setattr(spider_module, "load_rules", counted)
    spider = sites_spider(tmp_path, redis_server)
    assert folders == [str(spider.crawler.settings["CRAWLER_RULES_DIR"])]
    assert sorted(spider.rules) == ["news"]
    assert (
        spider.crawler.settings.getdict("DOWNLOAD_SLOTS")["news"]["concurrency"]
        == spider.rules["news"].concurrency
    )


def test_a_crawler_never_started_keeps_no_rules_read_for_it(tmp_path: Path, redis_server: str) -> None:
    """The rules ``update_settings`` read for a crawler whose spider is never made (a crawler made and
    dropped) go with its settings: none are kept for a later settings object given the same id."""
    import gc

    from crawlsite import spider_settings
    from scrapy.utils.test import get_crawler

    from crawler.worker import spider as spider_module
    from crawler.worker.spider import SitesSpider

    before = set(spider_module._read_at_start)
    crawler = get_crawler(SitesSpider, settings_dict={**spider_settings(tmp_path), "REDIS_URL": redis_server})
    assert set(spider_module._read_at_start) - before == {id(crawler.settings)}
    del crawler
    gc.collect()
    assert set(spider_module._read_at_start) - before == set()


# --- requests taken out of a site's queue (a demo's leftovers) ---------------------------------------------


def _deferred_once(queue: LeasedQueue, *, then_queued: bool) -> None:
    """Lease the next request and defer it (one attempt counted), for 10 s or (waiting) an hour;
    ``then_queued``: it is queued again."""
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10 if then_queued else 3600, max_attempts=5) == 1
    if then_queued:
        assert queue.queue_due(now=time.time() + 11) == 1


def test_requests_taken_out_of_a_site_leave_no_attempts_behind(redis_client: redis.Redis) -> None:
    """A request taken out (queued, waiting or leased) is gone: its attempts go with it, or the attempts
    hash would grow with every request a demo drops."""
    queue = make_queue(redis_client)
    keys = Keys("test")
    push(queue, request("http://a.test/waiting"))
    _deferred_once(queue, then_queued=False)
    push(queue, request("http://a.test/leased"))
    _deferred_once(queue, then_queued=True)
    assert queue.pop().member is not None
    push(queue, request("http://a.test/queued"))
    _deferred_once(queue, then_queued=True)
    assert (len(queue), queue.delayed(), queue.leased()) == (1, 1, 1)
    assert redis_client.hlen(keys.attempts) == 3
    by_site = queue.take_sites(["news"], held=lambda _: False)
    assert by_site is not None
    taken = by_site["news"]
    assert sorted(json.loads(member)["url"] for member in taken) == [
        "http://a.test/leased",
        "http://a.test/queued",
        "http://a.test/waiting",
    ]
    assert list(taken.values()) == [1, 1, 1], "each one's attempts so far"
    assert redis_client.hlen(keys.attempts) == 0
    assert (len(queue), queue.delayed(), queue.leased(), queue.pending("news")) == (0, 0, 0, 0)


class _Batches:
    """Stands for LeasedQueue._take_queued (the script taking a site's queued requests out, a batch a call):
    records how many each call took, and runs ``between`` before the call numbered ``at``."""

    def __init__(self, queue: LeasedQueue, between: Any = None, at: int = 1) -> None:
        self.script = queue._take_queued
        self.taken: list[int] = []
        self.between, self.at = between, at
        queue._take_queued = self  # type: ignore[assignment]

    def __call__(self, **call: Any) -> Any:
        if self.between is not None and len(self.taken) == self.at:
            self.between()
        reply = self.script(**call)
        self.taken.append(len(reply) // 2)
        return reply


def test_the_dead_letters_read_a_batch_at_a_time_are_every_one_of_them(redis_client: redis.Redis) -> None:
    """LeasedQueue.dead reads the hash by HSCAN, DEAD_SCAN_COUNT at a time (one HGETALL of 100,000 held
    Redis 0.4 s): more letters than one batch come out, each once, with its record, as HGETALL gives them."""
    queue = make_queue(redis_client)
    letters = {f'{{"url": "http://a.test/{n}"}}': f'{{"reason": "HTTP 404", "n": {n}}}' for n in range(2_500)}
    with redis_client.pipeline(transaction=False) as pipe:
        for member, record in letters.items():
            pipe.hset("test:dead", member, record)
        pipe.execute()
    assert queue.dead() == letters
    assert {decoded(k): decoded(v) for k, v in redis_client.hgetall("test:dead").items()} == letters


def test_a_big_sites_queued_requests_are_taken_out_a_batch_a_call_and_none_is_left(
    redis_client: redis.Redis,
) -> None:
    """`sites forget` of a site of 300,000 queued requests took them in one script call: Redis answered no
    one else for 20 s (every worker's pop refused BUSY, or timed out). They are taken a batch a call, and
    every request still ends once: its count, its job's, its attempts."""
    queue = make_queue(redis_client)
    keys = Keys("test")
    push(queue, request("http://a.test/waiting"))
    _deferred_once(queue, then_queued=False)
    push(queue, request("http://a.test/retried"))
    _deferred_once(queue, then_queued=True)
    for number in range(6):
        push(queue, request(f"http://a.test/{number}"))
    push(queue, request("http://b.test/1", site="other"))
    assert queue.pop().member is not None, "a lease, taken too: no worker is alive"
    batches = _Batches(queue)
    by_site = queue.take_sites(["news"], held=lambda _: False, batch=2)
    assert by_site is not None
    urls = sorted(json.loads(member)["url"] for member in by_site["news"])
    assert urls == sorted(
        ["http://a.test/waiting", "http://a.test/retried", *(f"http://a.test/{n}" for n in range(6))]
    )
    assert by_site["news"][next(m for m in by_site["news"] if "retried" in m)] == 1, "its attempts so far"
    assert batches.taken == [2, 2, 2, 0], "the 6 left queued (one was leased), 2 a call"
    assert (queue.pending("news"), queue.job_pending("j1"), queue.delayed(), queue.leased()) == (0, 1, 0, 0)
    assert redis_client.hget(keys.job("j1"), "taken") == b"8"
    assert redis_client.hlen(keys.attempts) == 0 and redis_client.hlen(keys.lease_sites) == 0
    assert not redis_client.exists(keys.queue_of("news"), keys.taking("news"))
    assert (queue.pending("other"), queue.queued("other")) == (1, 1), "another site's requests stay"


def test_a_request_queued_and_leased_while_a_site_is_taken_out_is_left_to_its_worker(
    redis_client: redis.Redis,
) -> None:
    """Redis serves the workers between two batches: none of them takes a request set aside to be taken
    out, and a request queued for the site meanwhile (a new grab) is the site's anew, its lease kept."""
    queue = make_queue(redis_client)
    for number in range(5):
        push(queue, request(f"http://a.test/{number}"))
    leases: list[str | None] = []

    def worker() -> None:
        leases.append(queue.pop().member)
        push(queue, request("http://a.test/new"))
        leases.append(queue.pop().member)

    _Batches(queue, worker)
    by_site = queue.take_sites(["news"], held=lambda _: False, batch=2)
    assert by_site is not None and len(by_site["news"]) == 5
    assert leases[0] is None, "the queue set aside holds nothing a worker takes"
    assert leases[1] is not None and json.loads(leases[1])["url"] == "http://a.test/new"
    assert (queue.leased(), queue.pending("news"), queue.job_pending("j1")) == (1, 1, 1)
    assert queue.ack(leases[1], site="news", job="j1")
    assert (queue.pending("news"), queue.job_pending("j1")) == (0, 0)


def test_a_take_of_a_site_interrupted_between_batches_is_finished_by_the_next(
    redis_client: redis.Redis,
) -> None:
    """The taking stopped after a batch (the command killed, Redis gone): what it set aside stays counted
    pending and out of the workers' reach; the next take of the site takes it, and nothing is lost."""
    queue = make_queue(redis_client)
    for number in range(5):
        push(queue, request(f"http://a.test/{number}"))

    def cut() -> None:
        raise redis.ConnectionError("gone")

    _Batches(queue, cut)
    with pytest.raises(redis.ConnectionError):
        queue.take_sites(["news"], held=lambda _: False, batch=2)
    assert (queue.queued("news"), queue.pending("news"), queue.job_pending("j1")) == (0, 3, 3)
    assert queue.pop().member is None
    push(queue, request("http://a.test/later"))
    queue = make_queue(redis_client)
    by_site = queue.take_sites(["news"], held=lambda _: False, batch=2)
    assert by_site is not None
    assert sorted(json.loads(member)["url"] for member in by_site["news"]) == [
        "http://a.test/2",
        "http://a.test/3",
        "http://a.test/4",
        "http://a.test/later",
    ]
    assert (queue.pending("news"), queue.job_pending("j1")) == (0, 0)
    assert redis_client.hget(Keys("test").job("j1"), "taken") == b"6"
    assert not redis_client.exists(Keys("test").taking("news"))


def test_a_request_taken_out_and_queued_in_another_job_keeps_its_attempts(redis_client: redis.Redis) -> None:
    """A demo adopts an earlier demo's request in its own job (a new member): the attempts it had go on
    counting, so a request that fails ``max_attempts`` times still ends dead, and nothing is left of it."""
    queue = make_queue(redis_client, jobs=("j1", "j2"))
    keys = Keys("test")
    push(queue, request("http://a.test/1"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10, max_attempts=2) == 1
    assert queue.queue_due(now=time.time() + 11) == 1
    taken = take_leftovers(queue, ["news"], held=lambda _: False)
    assert taken is not None
    assert list(taken) == ["http://a.test"]
    assert queue_in_job(queue, taken["http://a.test"], "j2") == 1
    assert redis_client.hget(keys.job("j1"), "taken") == b"1" and queue.job_pending("j2") == 1
    lease = queue.pop().member
    assert lease is not None and json.loads(lease)["meta"]["job"] == "j2"
    assert queue.defer(lease, 10, max_attempts=2) == 2, "the count goes on"
    assert queue.queue_due(now=time.time() + 11) == 1
    lease = queue.pop().member
    assert lease is not None
    assert queue.defer(lease, 10, max_attempts=2) == 0, "used up"
    assert queue.dead_letter(lease, b'{"reason": "the store refused it"}', site="news", job="j2")
    assert redis_client.hlen(keys.attempts) == 0
    assert (queue.job_pending("j2"), queue.pending("news")) == (0, 0)


def test_a_beat_written_while_requests_are_taken_out_makes_the_take_read_the_beats_again(
    redis_client: redis.Redis, redis_server: str
) -> None:
    """The reading of the workers' beats and the taking are one transaction: a demo that marks itself
    alive between the two (then queues its job) is seen, and nothing is taken."""
    queue = make_queue(redis_client)
    keys = Keys("test")
    push(queue, request("http://a.test/1"))
    readings: list[int] = []

    def held(client: redis.Redis) -> bool:
        readings.append(client.hlen(keys.workers))
        if len(readings) == 1:
            other = connect(redis_server)
            other.hset(keys.workers, "elsewhere:1", json.dumps({"seen": time.time(), "every": 5}))
            other.close()
        return readings[-1] > 0

    assert queue.take_sites(["news"], held=held) is None
    assert readings == [0, 1]
    assert (len(queue), queue.pending("news")) == (1, 1)


def test_a_paused_sites_requests_are_held_with_those_coming_back_until_it_is_resumed(
    redis_client: redis.Redis,
) -> None:
    queue = make_queue(redis_client, lease_seconds=30)
    push(queue, request("http://a.test/1"))
    push(queue, request("http://a.test/2"))
    push(queue, request("http://b.test/1", site="other"))
    fetching = take(queue)
    assert fetching is not None and fetching.url == "http://a.test/1"
    assert queue.pause("news", at=1000.0)
    assert not queue.pause("news", at=2000.0), "paused already"
    assert queue.paused() == {"news": 1000.0}, "the first pause's time kept"
    other = take(queue)
    assert other is not None and other.meta["site"] == "other", "other sites go on"
    assert take(queue) is None, "the paused site's queued request is held"
    push(queue, request("http://a.test/3"))
    assert queue.requeue_expired(now=time.time() + 31) == 2, "both leases expired"
    assert take(queue) is not None, "the other site's lease came back to it"
    assert take(queue) is None, "a new request and an expired lease of the paused site are held"
    assert queue.queued("news") == 3 and queue.pending("news") == 3, "held, not dropped"
    assert redis_client.hlen(Keys("test").dead) == 0, "nor dead-lettered"
    assert queue.resume("news") and not queue.resume("news")
    assert queue.paused() == {}
    taken = [take(queue) for _ in range(3)]
    assert sorted(r.url for r in taken if r is not None) == [
        "http://a.test/1",
        "http://a.test/2",
        "http://a.test/3",
    ]


def test_a_paused_discover_sites_requests_in_its_hosts_slots_are_held_until_it_is_resumed(
    redis_client: redis.Redis,
) -> None:
    """A discover crawl queues each host's pages in a slot of its own (``<site>@<host>``): the pause,
    which held the site's own queue alone, let workers take them all."""
    queue = make_queue(redis_client)
    for host in ("a.test", "b.test"):
        discovered = request(f"http://{host}/1", site="finder")
        discovered.meta["slot"] = slot_of("finder", host)
        push(queue, discovered)
    push(queue, request("http://c.test/1", site="other"))
    assert queue.pause("finder", at=1000.0)
    other = take(queue)
    assert other is not None and other.meta["site"] == "other"
    assert take(queue) is None, "the paused site's hosts' requests are held"
    assert queue.queued("finder") == 2
    assert queue.resume("finder")
    taken = [take(queue) for _ in range(2)]
    assert sorted(r.url for r in taken if r is not None) == ["http://a.test/1", "http://b.test/1"]


def test_a_site_whose_queue_key_holds_another_type_is_named_and_does_not_stop_the_other_sites(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone SET a site's queue (or its politeness hash) to a string: each pop failed with WRONGTYPE
    once that site came first, and no site's request was taken again. The site is set aside, its key and
    type named once with the fix, and the other sites' requests come out."""
    queue = make_queue(redis_client)
    for site in ("alpha", "beta", "gamma"):
        for number in range(2):
            push(queue, request(f"http://{site}.test/{number}", site=site))
    redis_client.set("test:queue:alpha", "oops")
    redis_client.set("test:polite:beta", "oops")
    with caplog.at_level("WARNING"):
        taken = [queue.pop().member for _ in range(4)]
    assert [json.loads(member)["url"] for member in taken if member] == [
        "http://gamma.test/0",
        "http://gamma.test/1",
    ]
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        "Redis key test:queue:alpha is a string, not a sorted set: site alpha is skipped, its requests"
        " neither taken nor queued, until the key is removed (redis-cli DEL test:queue:alpha;"
        " looked at again every 60 s)",
        "Redis key test:polite:beta is a string, not a hash: site beta is skipped, its requests"
        " neither taken nor queued, until the key is removed (redis-cli DEL test:polite:beta;"
        " looked at again every 60 s)",
    ], said


@pytest.mark.parametrize("value", ["oops", "1.5", "99999999999999999999"])
def test_a_site_whose_inflight_count_is_no_integer_is_named_and_does_not_stop_the_other_sites(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    """Someone wrote a site's download count (HSET crawler:polite:alpha inflight oops): each pop of the
    site leased its request and then failed counting the download (HINCRBY: not an integer), Lua not
    being rolled back, so the site stayed first in ready and every pop failed, every site stalled (and a
    lease of the site taken before could not end: its download's slot was given back with HINCRBY too).
    The site is set aside as for a key of another type, named with the value and the fix, its request
    left queued; the other sites' requests come out, its lease ends, and once mended it sends again."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    before = take(queue)
    assert before is not None
    for site in ("alpha", "beta", "gamma"):
        push(queue, request(f"http://{site}.test/1", site=site))
    redis_client.hset("test:polite:alpha", "inflight", value)
    with caplog.at_level("WARNING"):
        taken = [queue.pop().member for _ in range(3)]
    assert sorted(json.loads(member)["url"] for member in taken if member) == [
        "http://beta.test/1",
        "http://gamma.test/1",
    ]
    assert [record.getMessage() for record in caplog.records] == [
        f"Redis key test:polite:alpha has inflight {value!r}, not an integer (the site's downloads under"
        " way): site alpha is skipped, its requests neither taken nor queued, until it is mended"
        " (redis-cli HDEL test:polite:alpha inflight; looked at again every 60 s)"
    ]
    assert queue.queued("alpha") == 1 and queue.leased() == 3
    assert ack(queue, before), "a lease of the site taken before ends"
    assert redis_client.hget("test:job:j1", "pending") == b"3"
    redis_client.hdel("test:polite:alpha", "inflight")
    redis_client.zadd("test:gated", {"alpha": 0})  # its 60 s are over
    after = take(queue)
    assert after is not None and after.url == "http://alpha.test/1"
    assert redis_client.hget("test:polite:alpha", "inflight") == b"1"


@pytest.mark.parametrize("value", ["007", "+7", " 7", "-0", "9223372036854775807"])
def test_a_download_count_the_pop_cannot_count_is_read_as_the_pop_reads_it_and_named_with_the_wrong_keys(
    redis_client: redis.Redis, value: str
) -> None:
    """A site's inflight of '007' (or '+7', ' 7', '-0', or 2**63-1: HINCRBY can add 1 to none of them)
    set the site aside in the pop, yet `crawler status` read it as 7 downloads under way (Python's int()),
    naming nothing, and LeasedQueue.wrong_keys (what `crawler temp` checks before it starts, and the status
    names) left it out: a temp crawl of the site waited for ever. Both read it as the pop does: named,
    with the fix, and no download counted."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/1", site="alpha"))
    redis_client.hset("test:polite:alpha", "inflight", value)
    assert not queue.pop().member, "the pop sets the site aside"
    assert queue.politeness(["alpha"])[0].inflight == 0
    assert [wrong.problem() for wrong in queue.wrong_keys(["alpha"])["alpha"]] == [
        f"Redis key test:polite:alpha has inflight {value!r}, not an integer (the site's downloads under"
        " way): the workers skip the site, its requests neither taken nor queued, until it is mended; fix:"
        " redis-cli HDEL test:polite:alpha inflight"
    ]
    redis_client.hset("test:polite:alpha", "inflight", "-7")
    assert queue.wrong_keys(["alpha"]) == {}
    assert queue.politeness(["alpha"])[0].inflight == 0


def test_a_site_set_aside_for_a_wrong_typed_key_comes_back_once_the_key_is_removed(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning's fix (redis-cli DEL the key) must bring the site's queued requests back: the site was
    taken out of ready for good, and nothing put it back, so its requests stayed queued, never taken. It
    is gated for WRONG_TYPE_RECHECK_SECONDS instead and looked at again then; a site set aside by a push
    (never in ready since its key went wrong) is named when its time comes."""
    queue = make_queue(redis_client)
    push(queue, request("http://beta.test/0", site="beta"))
    redis_client.set("test:polite:beta", "oops")
    push(queue, request("http://gamma.test/0", site="gamma"))
    redis_client.set("test:polite:gamma", "oops")
    push(queue, request("http://gamma.test/1", site="gamma"))

    def said(site: str) -> str:
        return (
            f"Redis key test:polite:{site} is a string, not a hash: site {site} is skipped, its requests"
            f" neither taken nor queued, until the key is removed (redis-cli DEL test:polite:{site}; looked"
            " at again every 60 s)"
        )

    with caplog.at_level("WARNING"):
        assert queue.pop().member is None
        assert [record.getMessage() for record in caplog.records] == [said("beta")]
        assert redis_client.zrange("test:gated", 0, -1) in ([b"beta", b"gamma"], [b"gamma", b"beta"])
        assert 55 < float(redis_client.zscore("test:gated", "beta") or 0) - redis_now(redis_client) <= 60
        caplog.clear()
        redis_client.delete("test:polite:beta")
        redis_client.zadd("test:gated", {"beta": 0, "gamma": 0})  # their 60 s are over
        first = queue.pop().member
        assert first and json.loads(first)["url"] == "http://beta.test/0"
        assert [record.getMessage() for record in caplog.records] == [said("gamma")]
    redis_client.delete("test:polite:gamma")
    redis_client.zadd("test:gated", {"gamma": 0})
    taken = [queue.pop().member for _ in range(2)]
    assert [json.loads(member)["url"] for member in taken if member] == [
        "http://gamma.test/0",
        "http://gamma.test/1",
    ]


def test_the_leases_of_a_site_whose_politeness_key_went_wrong_end_without_an_error(
    redis_client: redis.Redis,
) -> None:
    """A lease taken before the site's politeness hash was overwritten (SET test:polite:beta oops): its
    ack failed with WRONGTYPE when the script gave the site's slot back (HINCRBY inflight) after it had
    ended the lease and counted it, so the worker saw a Redis error and its retry found the lease no
    longer held; a pop reporting the download, and requeue_expired, failed the same way. The slot is
    given back only to a hash; the hash's inflight count went with it."""
    queue = make_queue(redis_client, lease_seconds=60)
    for number in range(3):
        push(queue, request(f"http://beta.test/{number}", site="beta"))
    first, second = take(queue), take(queue)
    assert first is not None and second is not None
    redis_client.set("test:polite:beta", "oops")
    assert ack(queue, first)
    assert redis_client.hget("test:job:j1", "pending") == b"2"
    work = Work.of(second)
    assert work.lease is not None
    assert queue.pop_many([work.lease], 1)[0].member is None
    redis_client.zadd("test:leases", {work.lease: 0})  # its lease ran out
    assert queue.requeue_expired() == 1
    assert redis_client.zcard("test:queue:beta") == 2


def test_the_requests_of_a_site_whose_queue_key_went_wrong_wait_and_are_never_lost(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone SET a site's queue key to a string while its requests were leased: the scripts that put a
    request back in that queue failed with WRONGTYPE after they had ended its lease (a retry's handoff,
    an expired lease's return, a dead letter's requeue: each request lost), a batch of pushes raised
    for every site in it, and a page's links were marked seen in the Bloom filter but not queued. Such a
    request waits in the delayed set, tried again every
    WRONG_TYPE_RECHECK_SECONDS, and goes to its queue once the key is removed; the other sites' requests
    are queued as usual."""
    queue = make_queue(redis_client)
    for number in range(3):
        push(queue, request(f"http://alpha.test/{number}", site="alpha"))
    push(queue, request("http://beta.test/0", site="beta"))
    retried, expired, dead = (take(queue) for _ in range(3))
    assert retried is not None and expired is not None and dead is not None
    redis_client.set("test:queue:alpha", "oops")

    retry = encode_request(request("http://alpha.test/0?retry=1", site="alpha"))
    assert queue.handoff(Work.of(retried).lease or "", retry, priority=0, site="alpha", job="j1")
    redis_client.zadd("test:leases", {Work.of(expired).lease or "": 0})  # its worker died
    assert queue.requeue_expired() == 1
    dead_lease = Work.of(dead).lease or ""
    assert queue.dead_letter(dead_lease, b'{"reason": "HTTP 500"}', site="alpha", job="j1")
    assert queue.requeue_dead(dead_lease, priority=0, site="alpha", job="j1")
    batch = [request("http://alpha.test/new", site="alpha"), request("http://beta.test/1", site="beta")]
    assert queue.push_many(
        (encode_request(r), 0, "alpha" if "alpha" in r.url else "beta", "j1") for r in batch
    ) == [
        True,
        True,
    ]
    bloom = RedisBloom(redis_client, "test:bloom", capacity=1000, error_rate=0.001)
    link = request("http://alpha.test/link", site="alpha")
    assert queue_new(bloom, Keys("test"), [link], [b"link"]) == [True]

    assert queue.pending("alpha") == 5 and queue.job_pending("j1") == 7
    assert queue.delayed() == 5 and queue.leased() == 0
    redis_client.zadd("test:gated", {"alpha": 0})  # its minute set aside is over: it is named
    with caplog.at_level("WARNING"):
        taken = [queue.pop().member for _ in range(3)]
    assert [json.loads(member)["url"] for member in taken if member] == [
        "http://beta.test/0",
        "http://beta.test/1",
    ]
    assert "Redis key test:queue:alpha is a string" in caplog.text
    assert queue.queue_due(now=time.time() + 3600) == 5, "still wrong: each waits another minute"
    assert queue.delayed() == 5
    first = redis_client.zrange("test:delayed", 0, 0, withscores=True)
    assert float(first[0][1]) > redis_now(redis_client) + 55, first

    redis_client.delete("test:queue:alpha")
    assert queue.queue_due(now=time.time() + 3600) == 5
    redis_client.zadd("test:gated", {"alpha": 0})  # its minute is over
    taken = [queue.pop().member for _ in range(6)]
    assert sorted(json.loads(member)["url"] for member in taken if member) == [
        "http://alpha.test/0?retry=1",
        "http://alpha.test/1",
        "http://alpha.test/2",
        "http://alpha.test/link",
        "http://alpha.test/new",
    ]
    assert queue.pending("alpha") == 5 and queue.job_pending("j1") == 7


def test_a_sites_politeness_written_while_its_key_holds_another_type_stops_no_other_site(
    redis_client: redis.Redis,
) -> None:
    """Someone SET a site's politeness hash to a string: writing its politeness (a worker reading its
    rules, a job queued by the scheduler or temp, a robots.txt's crawl-delay, a 429's backoff) raised
    WRONGTYPE, so a grab of that site and the sites after it in the same job was never queued, and a
    worker's start logged an error every second without end, leaving the sites after it unconfigured.
    Nothing is written to such a key (the pop sets the site aside and names it); the others go on."""
    queue = make_queue(redis_client)
    ruleset = load_rules(DEMO_RULES)
    first, second = (ruleset.rules[site] for site in ("demo-citynews", "demo-huaxia"))
    redis_client.set("test:polite:demo-citynews", "oops")
    queue.configure(first.site, delay=first.delay, concurrency=first.concurrency)
    queue.set_crawl_delay(first.site, 5.0, "127.0.0.1")
    held = queue.back_off(first.site, seconds=30, first=60, longest=3600, calm=600, reason="HTTP 429")
    assert held == 0.0
    assert redis_client.get("test:polite:demo-citynews") == b"oops"
    job = enqueue_job(redis_client, Keys("test"), [first, second])
    assert queue.pending(second.site) > 0 and queue.pending(first.site) > 0, "both sites' first pages"
    assert float(redis_client.hget("test:polite:demo-huaxia", "delay") or -1) == second.delay
    assert queue.job_pending(job) == queue.pending(first.site) + queue.pending(second.site)


def test_taking_a_sites_requests_while_its_queue_key_holds_another_type_takes_those_waiting(
    redis_client: redis.Redis,
) -> None:
    """take_sites (the demo taking its sites' leftovers, a forget) raised WRONGTYPE at the site's queue,
    taking none of the site's requests, nor those of the other sites in the same call. It takes those
    waiting (a request pushed while the key was wrong) and leaves the key, which holds none, as it is."""
    queue = make_queue(redis_client)
    redis_client.set("test:queue:alpha", "oops")
    push(queue, request("http://alpha.test/0", site="alpha"))
    push(queue, request("http://beta.test/0", site="beta"))
    taken = queue.take_sites(["alpha", "beta"], held=lambda _: False)
    assert taken is not None
    assert [json.loads(member)["url"] for site in ("alpha", "beta") for member in taken[site]] == [
        "http://alpha.test/0",
        "http://beta.test/0",
    ]
    assert queue.delayed() == 0 and queue.pending("alpha") == 0 and queue.job_pending("j1") == 0
    assert redis_client.get("test:queue:alpha") == b"oops"


@pytest.mark.parametrize("ending", ["acknowledged", "dead-lettered", "handed on", "expired", "released"])
def test_a_request_pushed_again_while_leased_and_its_queue_key_wrong_waits_whatever_ends_the_lease(
    redis_client: redis.Redis, ending: str
) -> None:
    """A request leased, its site's queue key SET to a string, the very same request pushed again (a link
    found again): that copy waits in the delayed set, its queue score and site kept in the hashes the
    lease keeps them in. The lease's end (its ack, its dead letter, its retry handed on, its expiry, its
    release) deleted them, and queue_due then dropped the copy for want of a site: the request was lost,
    counted pending."""
    queue = make_queue(redis_client)
    first = request("http://alpha.test/0", site="alpha")
    push(queue, first)
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    redis_client.set("test:queue:alpha", "oops")
    assert push(queue, request("http://alpha.test/0", site="alpha")), "it waits in the delayed set"
    assert queue.delayed() == 1 and queue.pending("alpha") == 2

    if ending == "acknowledged":
        assert queue.ack(lease, site="alpha", job="j1")
    elif ending == "dead-lettered":
        assert queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="alpha", job="j1")
    elif ending == "handed on":
        retry = encode_request(request("http://alpha.test/0?retry=1", site="alpha"))
        assert queue.handoff(lease, retry, priority=0, site="alpha", job="j1")
    elif ending == "expired":
        redis_client.zadd("test:leases", {lease: 0})  # its worker died
        assert queue.requeue_expired() == 1
    else:
        assert queue.release([lease]) == 1
    redis_client.delete("test:queue:alpha")
    handed = ending == "handed on"
    assert queue.queue_due(now=time.time() + 3600) == (2 if handed else 1)
    redis_client.zrem("test:gated", "alpha")  # its minute set aside is over
    redis_client.zadd("test:ready", {"alpha": 0})
    urls = sorted(taken.url for taken in (take(queue), take(queue)) if taken is not None)
    assert urls == ["http://alpha.test/0", *(["http://alpha.test/0?retry=1"] if handed else [])]
    assert queue.delayed() == 0


@pytest.mark.parametrize("shared", ["leases", "lease-scores", "lease-sites", "downloading"])
def test_a_pop_that_fails_on_a_shared_key_of_another_type_leaves_its_request_queued(
    redis_client: redis.Redis, shared: str
) -> None:
    """A key every site shares SET to a string (crawler:leases, the hashes of the leases' scores and sites,
    the downloads under way): the pop took the request out of its queue, then failed with WRONGTYPE
    writing its lease, and Lua is not rolled back: each pop lost one request, a worker asking again and
    again emptied the queue. The request goes back to its queue before the error is raised."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    redis_client.set(f"test:{shared}", "oops")
    for _ in range(3):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            queue.pop()
    redis_client.delete(f"test:{shared}")
    taken = take(queue)
    assert taken is not None and taken.url == "http://alpha.test/0"
    assert queue.leased() == 1 and len(queue) == 0


@pytest.mark.parametrize(
    ("ending", "shared"),
    [("deferred", "delayed"), ("retried after a backoff", "delayed"), ("dead-lettered", "dead")],
)
def test_a_lease_whose_next_place_is_a_shared_key_of_another_type_is_kept(
    redis_client: redis.Redis, ending: str, shared: str
) -> None:
    """crawler:delayed or crawler:dead SET to a string: deferring a lease (an article not stored), handing
    on its retry with a backoff, or dead-lettering it ended the lease first and then failed with WRONGTYPE
    writing where the request goes next (Lua is not rolled back): the request was in no place at all. The
    lease is ended only once its next place is written: it is kept, and ends as asked once the key is
    removed."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    retry = encode_request(request("http://alpha.test/0?retry=1", site="alpha"))

    def end() -> bool:
        if ending == "deferred":
            return queue.defer(lease, 5, max_attempts=3) == 1
        if ending == "retried after a backoff":
            return queue.handoff(lease, retry, priority=0, site="alpha", job="j1", delay=5) is True
        return queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="alpha", job="j1")

    redis_client.set(f"test:{shared}", "oops")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        end()
    assert queue.leased() == 1, "the lease is kept"
    redis_client.delete(f"test:{shared}")
    assert end()
    assert queue.leased() == 0
    assert (queue.delayed(), len(queue.dead())) == ((0, 1) if ending == "dead-lettered" else (1, 0))
    left = 0 if ending == "dead-lettered" else 1
    assert queue.pending("alpha") == left and queue.job_pending("j1") == left


@pytest.mark.parametrize("ending", ["expired", "released"])
def test_a_lease_returned_while_the_delayed_set_holds_another_type_is_queued_again(
    redis_client: redis.Redis, ending: str
) -> None:
    """crawler:delayed SET to a string: an expired or released lease was ended, then its script failed
    with WRONGTYPE looking whether the very same request also waits there (before it was queued again):
    the request was in no place at all. It is queued again before its lease ends."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    redis_client.set("test:delayed", "oops")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        if ending == "expired":
            redis_client.zadd("test:leases", {lease: 0})  # its worker died
            queue.requeue_expired()
        else:
            queue.release([lease])
    redis_client.delete("test:delayed")
    again = take(queue)
    assert again is not None and again.url == "http://alpha.test/0"


def _waiting_or_leased(queue: LeasedQueue, client: redis.Redis, place: str) -> tuple[str, Any]:
    """A request of site alpha of job j1 deferred (waiting in test:delayed) or leased, its time over, and
    the call that returns it to its queue."""
    push(queue, request("http://alpha.test/0", site="alpha"))
    push(queue, request("http://alpha.test/1", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    if place == "delayed":
        assert queue.defer(lease, 60, max_attempts=3) == 1
        client.zadd("test:delayed", {lease: 0})
        return lease, queue.queue_due
    if place == "expired":
        client.zadd("test:leases", {lease: 0})
        return lease, queue.requeue_expired
    return lease, lambda: queue.release([lease])


@pytest.mark.parametrize("place", ["delayed", "expired", "released"])
def test_a_request_whose_kept_queue_score_is_no_number_is_queued_again_and_named(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture, place: str
) -> None:
    """Someone wrote a request's queue score (HSET crawler:lease-scores MEMBER oops): queue_due took the
    delayed request out of crawler:delayed, then failed queueing it (ZADD: 'value is not a valid float'),
    Lua not being rolled back: the request was lost, counted pending. An expired or released lease failed
    the same way before it ended, every call, the leases due after it never returned. The request goes
    back to its queue with score 0 (as one whose score is missing), the value named."""
    queue = make_queue(redis_client)
    lease, back = _waiting_or_leased(queue, redis_client, place)
    redis_client.hset("test:lease-scores", lease, "oops")
    with caplog.at_level("WARNING"):
        assert back() == 1
    assert [record.getMessage() for record in caplog.records] == [
        "Redis hash test:lease-scores held 'oops' as the queue score of request http://alpha.test/0 of site"
        " alpha, not a number: it is queued again with score 0, before the site's other requests of"
        " priority 0"
    ]
    assert queue.leased() == 0 and queue.delayed() == 0
    again = take(queue)
    assert again is not None and again.url == "http://alpha.test/0"
    assert ack(queue, again)
    assert queue.pending("alpha") == 1 and queue.job_pending("j1") == 1


@pytest.mark.parametrize("value", ["1e400", "-1e999"])
@pytest.mark.parametrize("place", ["delayed", "expired", "released"])
def test_a_request_whose_kept_queue_score_is_out_of_a_doubles_range_is_queued_again_and_named(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture, place: str, value: str
) -> None:
    """A kept queue score written as a number too large for a double (HSET crawler:lease-scores MEMBER
    1e400) passed back()'s check (Lua reads it as inf), and Redis refused it (ZADD: 'value is not a valid
    float'): queue_due lost the delayed request (taken out of crawler:delayed first, Lua not rolled back),
    requeue_expired and release failed at it every call, the leases due after it never returned. It is
    read as no number: queued again with score 0, named."""
    queue = make_queue(redis_client)
    lease, back = _waiting_or_leased(queue, redis_client, place)
    redis_client.hset("test:lease-scores", lease, value)
    with caplog.at_level("WARNING"):
        assert back() == 1
    assert [record.getMessage() for record in caplog.records] == [
        f"Redis hash test:lease-scores held {value!r} as the queue score of request http://alpha.test/0 of"
        " site alpha, not a number: it is queued again with score 0, before the site's other requests of"
        " priority 0"
    ]
    assert queue.leased() == 0 and queue.delayed() == 0 and queue.queued("alpha") == 2


@pytest.mark.parametrize("place", ["delayed", "expired", "released"])
def test_a_request_whose_kept_site_is_missing_is_queued_again_in_the_site_it_names(
    redis_client: redis.Redis, place: str
) -> None:
    """A request's site missing from crawler:lease-sites (HDEL, or that hash deleted or evicted): queue_due
    took it out of crawler:delayed and queued it nowhere (`if site then enqueue`), an expired or released
    lease was ended the same way: the request was lost, yet counted pending in its site and its job,
    which never ended. Its site is read from the request itself (meta: slot, else site)."""
    queue = make_queue(redis_client)
    lease, back = _waiting_or_leased(queue, redis_client, place)
    redis_client.hdel("test:lease-sites", lease)
    assert back() == 1
    assert queue.leased() == 0 and queue.delayed() == 0
    for _ in range(2):
        again = take(queue)
        assert again is not None
        assert ack(queue, again)
    assert queue.pending("alpha") == 0 and queue.job_pending("j1") == 0
    assert redis_client.scard("test:downloading") == 0


@pytest.mark.parametrize("ending", ["acknowledged", "dead-lettered", "deferred", "handed on", "downloaded"])
def test_a_lease_whose_kept_site_is_missing_gives_its_sites_slot_back_as_it_ends(
    redis_client: redis.Redis, ending: str
) -> None:
    """A lease's site missing from crawler:lease-sites (HDEL, or that hash deleted or evicted): the scripts
    that end it (ack, dead_letter, defer, handoff) and the pop told of its download read no site, so its
    download never ended: the member stayed in crawler:downloading for ever and the site's inflight at 1,
    a site of concurrency 1 never sent its next request. Its site is read from the request itself (meta:
    slot, else site), as when it is queued again."""
    queue = make_queue(redis_client)
    queue.configure("alpha", delay=0, concurrency=1)
    for number in range(2):
        push(queue, request(f"http://alpha.test/{number}", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    redis_client.hdel("test:lease-sites", lease)
    if ending == "acknowledged":
        assert ack(queue, taken)
    elif ending == "dead-lettered":
        assert queue.dead_letter(lease, b"{}", site="alpha", job="j1")
    elif ending == "deferred":
        assert queue.defer(lease, 60, max_attempts=3) == 1
    elif ending == "handed on":
        assert queue.handoff(lease, b'{"retry": 1}', priority=0, site="alpha", job="j1", delay=60)
    else:
        popped = queue.pop([lease]).member
        assert popped is not None and json.loads(popped)["url"] == "http://alpha.test/1"
        assert redis_client.smembers("test:downloading") == {popped.encode()}
        return
    assert redis_client.smembers("test:downloading") == set()
    assert redis_client.hget("test:polite:alpha", "inflight") == b"0"
    following = take(queue)
    assert following is not None and following.url == "http://alpha.test/1"


@pytest.mark.parametrize(
    ("ending", "pending"), [("acknowledged", 0), ("dead-lettered", 0), ("handed on", 1), ("expired", 1)]
)
def test_a_lease_ended_while_the_downloads_set_holds_another_type_ends_whole(
    redis_client: redis.Redis, ending: str, pending: int
) -> None:
    """crawler:downloading SET to a string while a request was leased: the scripts that end a lease
    ended it, then failed with WRONGTYPE giving its download's slot back (Lua is not rolled back): an
    acknowledged or dead-lettered request stayed counted pending in its site and its job (the job never
    ended), and the site's inflight stayed 1 (a site of concurrency 1 never sent again, even once the key
    was removed). That set of another type knows no download: the lease's is taken as under way, its slot
    given back, and the lease ends whole."""
    queue = make_queue(redis_client)
    queue.configure("alpha", delay=0, concurrency=1)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    redis_client.delete("test:downloading")
    redis_client.set("test:downloading", "oops")
    if ending == "acknowledged":
        assert ack(queue, taken)
    elif ending == "dead-lettered":
        assert queue.dead_letter(lease, b"{}", site="alpha", job="j1")
    elif ending == "handed on":
        assert queue.handoff(lease, b'{"retry": 1}', priority=0, site="alpha", job="j1")
    else:
        redis_client.zadd("test:leases", {lease: 0})
        assert queue.requeue_expired() == 1
    assert queue.leased() == 0
    assert queue.pending("alpha") == pending and queue.job_pending("j1") == pending
    assert redis_client.hget("test:polite:alpha", "inflight") == b"0"
    assert redis_client.hlen("test:lease-scores") == 0 and redis_client.hlen("test:lease-sites") == 0


def test_a_download_reported_while_the_downloads_set_holds_another_type_is_given_back_once(
    redis_client: redis.Redis,
) -> None:
    """crawler:downloading SET to a string: a pop told of a download fails (WRONGTYPE) and the worker tells
    the next pop again. Since a6793ca each such pop gave the site's slot back before it failed, once per
    try: inflight went to 0 with the download still under way. The pop fails before it changes anything;
    the lease's end gives the slot back once."""
    queue = make_queue(redis_client)
    queue.configure("alpha", delay=0, concurrency=2)
    for number in range(2):
        push(queue, request(f"http://alpha.test/{number}", site="alpha"))
    first, second = take(queue), take(queue)
    assert first is not None and second is not None
    redis_client.delete("test:downloading")
    redis_client.set("test:downloading", "oops")
    for _ in range(2):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            queue.pop([Work.of(first).lease or ""])
    assert redis_client.hget("test:polite:alpha", "inflight") == b"2"
    assert ack(queue, first)
    assert redis_client.hget("test:polite:alpha", "inflight") == b"1"


def test_an_entry_of_the_delayed_set_that_names_no_site_is_dead_lettered_not_dropped(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry of crawler:delayed with no site kept and none of its own (someone wrote it there) was
    dropped by queue_due without a word. It is kept in the dead letters, which `crawler dead list` shows,
    and named."""
    queue = make_queue(redis_client)
    redis_client.zadd("test:delayed", {"not a request": 0})
    with caplog.at_level("WARNING"):
        assert queue.queue_due() == 1
    assert [record.getMessage() for record in caplog.records] == [
        "Redis key test:delayed held 'not a request', which names no site (none kept in test:lease-sites,"
        " none in its meta): it is not queued again, but kept in the dead letters (crawler dead list)"
    ]
    assert queue.delayed() == 0
    assert "no site" in json.loads(queue.dead()["not a request"])["reason"]


def test_a_dead_letter_that_names_no_site_says_when_and_what_kind(redis_client: redis.Redis) -> None:
    """The dead letter kept for an entry that names no site (the queue's own, written in Lua) held the
    reason alone: `crawler dead list` showed '-' for its time and no kind (`--format json`: null, null),
    where every dead letter a worker keeps has both. It says when (Redis's clock) and its kind."""
    queue = make_queue(redis_client)
    redis_client.zadd("test:delayed", {"not a request": 0})
    before = redis_now(redis_client)
    assert queue.queue_due() == 1
    [letter] = dead_letters(queue)
    assert letter.kind == "no site"
    assert letter.at is not None and before - 1 <= letter.at <= redis_now(redis_client) + 1


@pytest.mark.parametrize("ending", ["acknowledged", "dead-lettered"])
def test_a_lease_ended_while_its_job_hash_holds_another_type_gives_its_sites_slot_back(
    redis_client: redis.Redis, ending: str
) -> None:
    """A job's hash SET to a string: acknowledging or dead-lettering a lease of the job failed with
    WRONGTYPE at the job's counters, after the lease had ended and before the site's download slot was
    given back (Lua is not rolled back): a site of concurrency 1 never sent its next request, even once the
    key was removed. The slot is given back before the counters."""
    queue = make_queue(redis_client)
    queue.configure("alpha", delay=0, concurrency=1)
    for number in range(2):
        push(queue, request(f"http://alpha.test/{number}", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    redis_client.set("test:job:j1", "oops")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        if ending == "acknowledged":
            queue.ack(lease, site="alpha", job="j1")
        else:
            queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="alpha", job="j1")
    redis_client.delete("test:job:j1")
    following = take(queue)
    assert following is not None and following.url == "http://alpha.test/1"


@pytest.mark.parametrize("first", ["lease", "wait"])
def test_a_request_deferred_then_pushed_again_and_leased_is_fetched_whichever_of_the_two_ends_first(
    redis_client: redis.Redis, first: str
) -> None:
    """The very same request leased and waiting in the delayed set at once, with no key of another type:
    deferred (its article not stored), then pushed again (a link found again) and leased. Its ack deleted
    the queue score and site the waiting copy needs, and queue_due then dropped that copy: the request was
    lost, counted pending (fetched never again, pending 1). Since c56ff2d's forget() the copy is queued
    and fetched; the wait ending first queues it beside the lease, whose ack then ends it as ever."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    assert queue.defer(lease, 30, max_attempts=5) == 1
    assert push(queue, request("http://alpha.test/0", site="alpha")), "queued again beside its waiting copy"
    again = take(queue)
    assert again is not None and Work.of(again).lease == lease
    assert (queue.leased(), queue.delayed(), queue.pending("alpha")) == (1, 1, 2)

    if first == "wait":
        assert queue.queue_due(now=time.time() + 3600) == 1
    assert queue.ack(lease, site="alpha", job="j1")
    assert queue.queue_due(now=time.time() + 3600) == (0 if first == "wait" else 1)
    redis_client.zrem("test:gated", "alpha")  # its delay is over
    redis_client.zadd("test:ready", {"alpha": 0})
    fetched = take(queue)
    assert fetched is not None and fetched.url == "http://alpha.test/0"
    assert ack(queue, fetched)
    assert (queue.leased(), queue.delayed(), queue.pending("alpha"), queue.job_pending("j1")) == (0, 0, 0, 0)
    assert redis_client.scard("test:downloading") == 0


@pytest.mark.parametrize("first", ["lease", "wait"])
@pytest.mark.parametrize("ending", ["expired", "released", "deferred"])
def test_a_request_leased_and_waiting_at_once_is_one_request_once_its_copies_meet(
    redis_client: redis.Redis, first: str, ending: str
) -> None:
    """The very same request leased and waiting in the delayed set at once (deferred, pushed again,
    leased), each copy counted pending: a lease that expired, was released or deferred, met its waiting
    copy in its queue (or in the delayed set), and the two became one entry that was fetched and
    acknowledged once: pending stayed 1, for the site and the job, and the job never ended."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    assert queue.defer(lease, 30, max_attempts=5) == 1
    assert push(queue, request("http://alpha.test/0", site="alpha"))
    assert take(queue) is not None
    assert (queue.leased(), queue.delayed(), queue.job_pending("j1")) == (1, 1, 2)

    if first == "wait":
        assert queue.queue_due(now=time.time() + 3600) == 1
    if ending == "expired":
        redis_client.zadd("test:leases", {lease: 0})  # its worker died
        assert queue.requeue_expired() == 1
    elif ending == "released":
        assert queue.release([lease]) == 1
    else:
        assert queue.defer(lease, 30, max_attempts=5) == 2
    queue.queue_due(now=time.time() + 3600)
    redis_client.delete("test:polite:alpha")  # its delay is over
    redis_client.zrem("test:gated", "alpha")
    redis_client.zadd("test:ready", {"alpha": 0})
    fetched = take(queue)
    assert fetched is not None and fetched.url == "http://alpha.test/0"
    assert ack(queue, fetched)
    assert (queue.leased(), queue.delayed(), queue.queued("alpha")) == (0, 0, 0)
    assert (queue.pending("alpha"), queue.job_pending("j1")) == (0, 0)


def test_a_request_queued_again_while_leased_is_one_request_with_its_lease(redis_client: redis.Redis) -> None:
    """The very same request queued again while it is leased (a grab's seeding done again by the next tick,
    its start URL taken by a worker meanwhile), each copy counted pending: the copy was leased too, the one
    member leased twice, the first ack ended it and the second found no lease: after both pages, pending
    stayed 1 for the site and the job (the job never ended) and the site's download count 1 (a slot taken
    for ever). The copy is one request with the lease: not leased again, its counts ended."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    assert queue.push(lease.encode(), priority=0, site="alpha", job="j1"), "queued beside its lease"
    assert (queue.pending("alpha"), queue.job_pending("j1")) == (2, 2)
    assert take(queue) is None, "not leased twice"
    assert ack(queue, taken)
    assert (queue.pending("alpha"), queue.job_pending("j1"), len(queue), queue.leased()) == (0, 0, 0, 0)
    assert redis_client.hget("test:polite:alpha", "inflight") == b"0"


def test_a_request_leased_and_waiting_at_once_is_taken_out_of_both(redis_client: redis.Redis) -> None:
    """The very same request leased and waiting in the delayed set at once (deferred, pushed again, leased),
    taken out of the queue (a site forgotten, a demo adopting its leftovers): the waiting copy, taken first,
    deleted the site its lease is known by, so the lease was left behind, its count still pending, and
    dropped when it expired (its site unknown): pending 1 for the site with nothing anywhere."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    assert queue.defer(lease, 30, max_attempts=5) == 1
    assert push(queue, request("http://alpha.test/0", site="alpha"))
    assert take(queue) is not None
    assert (queue.leased(), queue.delayed(), queue.pending("alpha"), queue.job_pending("j1")) == (1, 1, 2, 2)

    by_site = queue.take_sites(["alpha"], held=lambda _: False)
    assert by_site is not None and by_site["alpha"] == {lease: 1}, "given back once, with its attempts"
    assert (queue.leased(), queue.delayed(), queue.pending("alpha"), queue.job_pending("j1")) == (0, 0, 0, 0)
    assert redis_client.scard("test:downloading") == 0
    assert redis_client.hlen("test:lease-sites") == 0


@pytest.mark.parametrize("place", ["leased", "waiting"])
def test_a_request_whose_kept_site_is_missing_still_holds_its_site_and_is_taken_with_it(
    redis_client: redis.Redis, place: str
) -> None:
    """A live lease (or a request waiting in crawler:delayed) whose crawler:lease-sites entry is gone (a
    partial write of an older version, a manual HDEL): LeasedQueue.lost looked for the site's leases in that
    hash alone, so it said Redis held none of the site's requests (1 counted, 0 held) and wrote off the site's
    count and its job's pending while a worker still held the request (a temp crawl ended 'lost' under it);
    take_sites compared that hash's entry with the site, so it left the request behind, counted pending in
    its site and its job, to come back to the queue once its lease expired. Both read the request's own site
    (meta: slot, else site) then, as the scripts that end a lease do."""
    queue = make_queue(redis_client)
    push(queue, request("http://alpha.test/0", site="alpha"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    if place == "waiting":
        assert queue.defer(lease, 60, max_attempts=3) == 1
    redis_client.hdel("test:lease-sites", lease)
    assert queue.lost("alpha", write_off=True, jobs=["j1"]) is None, "the request is held"
    assert queue.pending("alpha") == 1 and queue.job_pending("j1") == 1

    by_site = queue.take_sites(["alpha"], held=lambda _: False)
    assert by_site is not None and by_site["alpha"] == {lease: 1 if place == "waiting" else 0}
    assert (queue.leased(), queue.delayed(), queue.pending("alpha"), queue.job_pending("j1")) == (0, 0, 0, 0)
    assert redis_client.scard("test:downloading") == 0


def test_a_jobs_lost_requests_are_written_off_alone_past_any_number_of_another_jobs_in_front(
    redis_client: redis.Redis,
) -> None:
    """LeasedQueue.job_lost (a temp crawl's look for its own requests, its site holding another job's): the
    job whose requests Redis no longer holds is written off alone, the site's counts by as many, the other
    job's left. The look read at most JOB_LOST_READ_MAX (5,000) members from the heads of the sets: with
    6,000 of another job in front it could not tell (None), and a temp crawl waited for ever. It reads them
    all now, a bounded number each script call, and finds a request of the job wherever it is."""
    from crawler.redisio.queue import JOB_LOST_READ_MAX

    queue = make_queue(redis_client, jobs=("kept", "slotted", "gone"))
    front = 6_000
    with redis_client.pipeline(transaction=False) as pipe:
        for n in range(front):
            member = json.dumps({"url": f"http://news.test/o{n}", "meta": {"site": "news", "job": "other"}})
            pipe.zadd("test:queue:news", {member: n - front})
        pipe.hincrby("test:pending", "news", front)
        pipe.hset("test:job:other", "pending", front)
        pipe.execute()
    push(queue, request("http://news.test/kept", job="kept"))
    push(queue, request("http://news.test/slot", site="news@h.test", job="slotted"))
    redis_client.hincrby("test:pending", "news", 2)
    redis_client.hset("test:job:gone", "pending", 2)  # its 2 requests lost (ZREM by hand)

    assert queue.job_lost("news", "kept", write_off=True) is None, "its request is the queue's last"
    assert queue.job_lost("news", "slotted", write_off=True) is None, "its request is in a host slot's queue"
    redis_client.config_resetstat()
    assert queue.job_lost("news", "gone", write_off=True) == 2
    calls = redis_client.info("commandstats")["cmdstat_evalsha"]["calls"]
    assert calls >= 2 * front // (2 * JOB_LOST_READ_MAX), "two looks, each over many calls, not all in one"
    assert redis_client.hmget("test:job:gone", "pending", "lost") == [b"0", b"2"]
    assert queue.pending("news") == front + 1 and queue.job_pending("other") == front
    assert queue.job_pending("kept") == 1 and queue.job_pending("slotted") == 1


def test_a_jobs_lost_requests_are_taken_from_the_count_of_the_slot_they_were_counted_in(
    redis_client: redis.Redis,
) -> None:
    """A discover site's job whose requests were lost from a host slot's queue, beside another job's requests
    queued and leased in the site's own: job_lost took its 2 from the site's count first (HKEYS order), so
    'news' went from 3 to 1 and, once the other job's 3 requests ended, to -2, while 'news@h1.test' kept 2
    for ever (a count no request stands for: the host is never pruned, status shows it pending). They are
    taken from the counts past what their slot holds queued or leased."""
    queue = make_queue(redis_client, jobs=("other", "gone"))
    for n in range(3):
        push(queue, request(f"http://news.test/k{n}", job="other"))
    for n in range(2):
        push(queue, request(f"http://h1.test/j{n}", site="news@h1.test", job="gone"))
    leased_one = queue.pop_many((), 1, worker="host:1:aaaaaa")[0]
    assert leased_one.site == "news"
    redis_client.delete("test:queue:news@h1.test")
    assert queue.job_lost("news", "gone", write_off=True) == 2
    assert (queue.pending("news"), queue.pending("news@h1.test")) == (3, 0)
    leases = [cast(str, leased_one.member), *(cast(str, p.member) for p in queue.pop_many((), 2))]
    for lease in leases:
        assert queue.ack(lease, site="news", job="other")
    assert queue.pending("news") == 0 and queue.job_pending("other") == 0


def test_a_listing_page_dead_lettered_at_every_grab_keeps_one_dead_letter_the_latest(
    redis_client: redis.Redis,
) -> None:
    """A site whose index page failed (down, timing out) had it dead-lettered again at every grab, each a
    new dead letter (its request names its job): `crawler run` of a site down every minute kept 14 of its
    one URL after 15 minutes (bench/soak.py), 1,440 a day. A dead letter given what it supersedes (the
    worker gives a listing page's site and URL) replaces the one kept under the same name; others are kept
    as before."""
    queue = make_queue(redis_client)
    for job in ("j1", "j2", "j3"):
        push(queue, request("http://a.test/", job=job))
        lease = queue.pop().member
        assert lease is not None
        record = json.dumps({"reason": "HTTP 503", "job": job}).encode()
        assert queue.dead_letter(lease, record, site="news", job=job, supersedes="news\nhttp://a.test/")
    push(queue, request("http://a.test/article", job="j3"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="news", job="j3")
    kept = sorted(
        json.loads(member)["meta"]["job"] + " " + json.loads(member)["url"] for member in queue.dead()
    )
    assert kept == ["j3 http://a.test/", "j3 http://a.test/article"]
    assert queue.pending("news") == 0 and queue.leased() == 0


def test_a_listing_pages_entry_of_the_superseded_dead_letters_goes_with_its_letter(
    redis_client: redis.Redis,
) -> None:
    """crawler:dead-superseded names the dead letter kept for each listing page that failed. Its entry
    stayed once the letter was requeued or dropped: one for every listing URL that ever failed (a
    paginated index, search result pages), kept for ever. The entry goes with its letter; the letters of
    other pages, and their entries, stay."""
    queue = make_queue(redis_client)

    def failed(url: str, job: str) -> None:
        dead_letter_of(queue, url, job, record=json.dumps({"reason": "HTTP 503", "job": job}).encode())

    failed("http://a.test/?page=1", "j1")
    failed("http://a.test/?page=2", "j1")
    assert redis_client.hlen("test:dead-superseded") == 2
    by_url = {letter.url: letter for letter in dead_letters(queue)}
    assert requeue(queue, [by_url["http://a.test/?page=1"]]) == (1, [])
    assert redis_client.hkeys("test:dead-superseded") == [b"news\nhttp://a.test/?page=2"]
    taken = take(queue)
    assert taken is not None and taken.url == "http://a.test/?page=1"
    assert ack(queue, taken)
    failed("http://a.test/?page=1", "j2")
    (again,) = (letter for letter in dead_letters(queue) if letter.url == "http://a.test/?page=1")
    assert queue.drop_dead([again.member]) == 1
    assert redis_client.hkeys("test:dead-superseded") == [b"news\nhttp://a.test/?page=2"]
    assert [letter.url for letter in dead_letters(queue)] == ["http://a.test/?page=2"]


def test_a_dead_letter_requeued_alone_takes_its_listing_pages_entry_of_the_superseded_with_it(
    redis_client: redis.Redis,
) -> None:
    """The entry went with a letter requeued or dropped by `crawler dead` (efa1b68), which named it; a
    letter requeued alone (requeue_dead) named none and left it, naming a letter gone for ever. The queue
    names it itself, from the letter's request, for every way a letter goes."""
    queue = make_queue(redis_client)
    leases = {}
    for page in (1, 2, 3):
        record = json.dumps({"reason": "HTTP 503", "job": "j1"}).encode()
        leases[page] = dead_letter_of(queue, f"http://a.test/?page={page}", "j1", record=record)
    assert queue.requeue_dead(leases[1], priority=0, site="news", job="j1")
    assert sorted(redis_client.hkeys("test:dead-superseded")) == [
        b"news\nhttp://a.test/?page=2",
        b"news\nhttp://a.test/?page=3",
    ]
    assert queue.drop_dead([leases[2]]) == 1
    assert redis_client.hkeys("test:dead-superseded") == [b"news\nhttp://a.test/?page=3"]
    assert list(queue.dead()) == [leases[3]]


def test_a_dead_letter_written_before_every_letter_was_named_is_named_once_read_and_its_pages_ack_takes_it(
    redis_client: redis.Redis,
) -> None:
    """An ack of a page fetched again deletes its dead letter found through crawler:dead-superseded (736cbf2),
    where only listing pages' letters were named before: an article's letter written by an older worker
    (or kept in an older data folder) stayed listed for ever, its page stored since. Read (`crawler dead
    list`, status), a letter missing there is named, so the next ack of its page takes it; a name that
    names another letter still there keeps it."""
    queue = make_queue(redis_client, jobs=("j1", "j2", "j3"))
    url = "http://a.test/article"
    for job in ("j1", "j2"):
        push(queue, request(url, job=job))
        lease = queue.pop().member
        assert lease is not None
        assert queue.dead_letter(lease, b'{"reason": "HTTP 503"}', site="news", job=job)
    redis_client.delete("test:dead-superseded")

    letters = queue.dead()

    assert len(letters) == 2
    named = decoded(redis_client.hget("test:dead-superseded", f"news\n{url}") or b"")
    assert named in letters, "one of the page's letters is named"
    push(queue, request(url, job="j3"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.ack_many([Ack(lease, "news", "j3", fetched=1, clears=f"news\n{url}")]) == [True]
    assert list(queue.dead()) == [member for member in letters if member != named]
    assert redis_client.hget("test:dead-superseded", f"news\n{url}") is not None, "the other one, named"


class Sent(redis.Redis):
    """A client of ``client``'s Redis (its connections) that keeps the words of each command it sends."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(connection_pool=client.connection_pool)
        self.sent: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(args)
        return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]


def naming_calls(client: Sent, queue: LeasedQueue) -> int:
    """The calls of the script that names dead letters (_INDEX_DEAD) ``client`` sent since the last count
    (a first one twice: Redis knew no script of that SHA-1, redis-py loads it and calls again)."""
    calls = sum(words[:2] == ("EVALSHA", queue._index_dead.sha) for words in client.sent)
    client.sent.clear()
    return calls


def dead_letter_of(
    queue: LeasedQueue, url: str, job: str, *, named: bool = True, record: bytes = b'{"reason": "HTTP 503"}'
) -> str:
    """A dead letter of ``url`` fetched for ``job`` of site news, its name in dead-superseded as a worker
    writes a page's; not ``named``, as a worker before every letter was named wrote an article's. Its
    member."""
    push(queue, request(url, job=job))
    lease = queue.pop().member
    assert lease is not None
    supersedes = f"news\n{url}" if named else ""
    assert queue.dead_letter(lease, record, site="news", job=job, supersedes=supersedes)
    return lease


def test_reading_named_dead_letters_names_none_and_a_letter_written_unnamed_after_is_named_at_the_next_read(
    redis_client: redis.Redis,
) -> None:
    """Reading the dead letters named those missing from crawler:dead-superseded (f6678b7) at every read, a
    script call a page of 1,000 (`crawler status`, `dead list`), for ever, though once they are read through
    only a worker of an older release (a rolling upgrade) writes one unnamed. A read names none while the
    letters less the names are what the last full read left; a letter written unnamed after it is named at
    the next read, and the ack of its page fetched again takes it."""
    client = Sent(redis_client)
    queue = make_queue(client, jobs=("j1", "j2"))
    named = dead_letter_of(queue, "http://a.test/named", "j1")
    assert list(queue.dead()) == [named]
    assert naming_calls(client, queue) > 0, "the first read names what a worker of old may have left"

    assert list(queue.dead()) == [named]
    assert naming_calls(client, queue) == 0, "every letter named"

    old_url = "http://a.test/old"
    old = dead_letter_of(queue, old_url, "j1", named=False)
    assert sorted(queue.dead()) == sorted([named, old])
    assert naming_calls(client, queue) > 0
    assert decoded(redis_client.hget("test:dead-superseded", f"news\n{old_url}") or b"") == old
    push(queue, request(old_url, job="j2"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.ack_many([Ack(lease, "news", "j2", fetched=1, clears=f"news\n{old_url}")]) == [True]
    assert list(queue.dead()) == [named]
    assert naming_calls(client, queue) == 0


def test_dead_letters_that_stay_unnamed_dropped_or_requeued_hide_no_letter_written_unnamed_after(
    redis_client: redis.Redis,
) -> None:
    """A letter no name can be given (an entry that is no request; a second letter of a page whose name
    names the first) stays unnamed, so the letters outnumber the names by what the last full read left.
    Such a letter dropped or requeued takes one from that count: else the count went down by it, and a
    letter written unnamed after (one up) made it what the read left: never named. A name freed (its letter
    dropped) while a letter waits for it: the next read names that one."""
    client = Sent(redis_client)
    queue = make_queue(client, jobs=("j1", "j2"))
    url = "http://a.test/page"
    named = dead_letter_of(queue, url, "j1")
    second = dead_letter_of(queue, url, "j2", named=False)
    assert queue.push(b"not a request", priority=0, site="news", job=None)
    poison = queue.pop().member
    assert poison == "not a request"
    assert queue.dead_letter(poison, b'{"reason": "not JSON"}', site="", job=None)
    assert len(queue.dead()) == 3
    assert naming_calls(client, queue) > 0
    assert len(queue.dead()) == 3
    assert naming_calls(client, queue) == 0, "the two left unnamed: nothing to name"

    assert queue.drop_dead([poison]) == 1
    assert queue.requeue_dead(second, priority=0, site="news", job="j2")
    assert queue.pop().member == second
    assert queue.ack(second, site="news", job="j2")
    assert list(queue.dead()) == [named]
    assert naming_calls(client, queue) == 0
    old_url = "http://a.test/old"
    old = dead_letter_of(queue, old_url, "j1", named=False)
    assert sorted(queue.dead()) == sorted([named, old])
    assert naming_calls(client, queue) > 0
    assert decoded(redis_client.hget("test:dead-superseded", f"news\n{old_url}") or b"") == old

    waiting = dead_letter_of(queue, url, "j2", named=False)
    assert len(queue.dead()) == 3
    assert naming_calls(client, queue) > 0
    assert len(queue.dead()) == 3
    assert naming_calls(client, queue) == 0, "its page's name names the first letter"
    assert queue.drop_dead([named]) == 1
    assert sorted(queue.dead()) == sorted([old, waiting])
    assert decoded(redis_client.hget("test:dead-superseded", f"news\n{url}") or b"") == waiting


def test_a_name_freed_during_a_read_while_a_letter_waits_for_it_is_given_at_the_next_read(
    redis_client: redis.Redis,
) -> None:
    """Two letters of a page written before every letter was named: a read names one, the other waits for
    the name. Its page acknowledged while the read goes on (the name freed), the read keeps no count of
    the letters left unnamed, and the next read names the other one (else: nothing to name, for ever)."""
    queue = make_queue(redis_client, jobs=("j1", "j2", "j3"))
    url = "http://a.test/article"
    letters = {dead_letter_of(queue, url, job, named=False) for job in ("j1", "j2")}
    reading = queue.dead_pages()
    assert set(next(reading)) == letters
    first = decoded(redis_client.hget("test:dead-superseded", f"news\n{url}") or b"")
    assert first in letters
    push(queue, request(url, job="j3"))
    lease = queue.pop().member
    assert lease is not None
    assert queue.ack_many([Ack(lease, "news", "j3", fetched=1, clears=f"news\n{url}")]) == [True]
    assert list(reading) == []

    assert list(queue.dead()) == list(letters - {first})
    assert decoded(redis_client.hget("test:dead-superseded", f"news\n{url}") or b"") in letters - {first}


def test_dead_letters_are_read_from_a_redis_that_refuses_writes_though_they_cannot_be_named(
    tmp_path: Path,
) -> None:
    """Reading the dead letters names those written before every letter was named, a write: a Redis that
    refuses writes (its memory full, a replica, a full disk) failed `crawler dead list` and `crawler status`
    with them. They are read all the same, named once Redis takes writes again."""
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as server, connect(server.ensure()) as client:
        queue = make_queue(client)
        url = "http://a.test/article"
        push(queue, request(url))
        lease = queue.pop().member
        assert lease is not None
        assert queue.dead_letter(lease, b'{"reason": "HTTP 503"}', site="news", job=None)
        client.delete("test:dead-superseded")
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", "1")
        try:
            with pytest.raises(redis.ResponseError):
                client.set("test:probe", "1")  # the refusal holds
            assert len(queue.dead()) == 1
            assert client.hlen("test:dead-superseded") == 0
        finally:
            client.config_set("maxmemory", "0")
        assert len(queue.dead()) == 1
        assert client.hlen("test:dead-superseded") == 1, "named once writes are taken"


def test_a_dead_letter_requeued_after_its_jobs_hash_expired_gives_the_hash_a_time_to_live(
    redis_client: redis.Redis,
) -> None:
    """An ended job's hash expires SCHEDULE_JOB_KEEP_HOURS after it ended. A dead letter of it requeued
    later (`crawler dead requeue`) wrote the hash again without a time-to-live, and with its counts
    below zero (errors -1): it was kept for ever. It is written again with its pending count alone and
    kept as an ended job's is, from the requeue; an ended job's hash that would expire sooner is kept as
    long; a job under way (no time-to-live) is left as it is."""
    queue = make_queue(redis_client, jobs=("expired", "ending", "running"))
    for number, job in enumerate(("expired", "ending", "running")):
        push(queue, request(f"http://news.test/{number}", job=job))
        taken = take(queue)
        assert taken is not None
        lease = Work.of(taken).lease or ""
        assert queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="news", job=job, kind="HTTP 500")
        # The job's hash since: expired, ended (kept a minute more), under way.
        if job == "expired":
            redis_client.delete("test:job:expired")
        elif job == "ending":
            redis_client.expire("test:job:ending", 60)
        assert queue.requeue_dead(lease, priority=0, site="news", job=job, kind="HTTP 500")
        if job == "running":
            assert redis_client.ttl("test:job:running") == -1
        else:
            # SCHEDULE_JOB_KEEP_HOURS (24) from now.
            assert 86390 < redis_client.ttl(f"test:job:{job}") <= 86400, job
    assert redis_client.hgetall("test:job:expired") == {b"pending": b"1"}
    assert redis_client.hget("test:job:ending", "errors") == b"0"


def test_a_dead_letter_whose_request_is_queued_again_is_requeued_into_that_copy_and_counted(
    redis_client: redis.Redis,
) -> None:
    """A dead letter whose very request is queued again in its job (a grab's seeding finished by the next
    tick pushes its listing pages again, one of them failed for good meanwhile): `crawler dead requeue`
    deleted the letter, queued nothing (the copy is there), and answered that it was no dead letter: the
    command said "requeued 0 dead letters" of the letter it took away, and the job kept the error it
    counted, beside the copy counted pending. The letter goes into the copy: requeued, its error taken
    from its job, the copy counted pending once."""
    queue = make_queue(redis_client)
    push(queue, request("http://news.test/1", job="j1"))
    taken = take(queue)
    assert taken is not None
    lease = Work.of(taken).lease or ""
    record = b'{"reason": "HTTP 500 Internal Server Error", "kind": "HTTP 500"}'
    assert queue.dead_letter(lease, record, site="news", job="j1", kind="HTTP 500")
    assert queue.push(lease.encode(), priority=0, site="news", job="j1"), "the very same request again"
    (letter,) = dead_letters(queue)
    assert requeue(queue, [letter]) == (1, [])
    assert queue.dead() == {}
    assert len(queue) == 1 and queue.pending("news") == 1
    job = redis_client.hgetall("test:job:j1")
    assert (job[b"pending"], job[b"errors"], job[b"error:HTTP 500"]) == (b"1", b"0", b"0"), job


@pytest.mark.parametrize("end", ["ack", "dead letter", "handoff", "requeue", "take"])
def test_a_request_that_ends_after_its_jobs_hash_expired_does_not_write_the_hash_again(
    redis_client: redis.Redis, end: str
) -> None:
    """A request of an ended job whose hash expired (SCHEDULE_JOB_KEEP_HOURS) that ends later (a lease
    that outlived the job, a copy meeting a queued one, a site taken out) wrote the hash again with
    pending -1 and no time-to-live: kept for ever. Its end counts in no job now, nor do its page's counts
    its acknowledgement carries (crawler.requests.count_job: links found, a skip); while the hash lives, a
    request's end counts in it as before."""
    queue = make_queue(redis_client)
    first, second, third = (request(f"http://news.test/{k}", job="j1") for k in range(3))
    for queued in (first, second, third):
        push(queue, queued)
    taken = take(queue)
    assert taken is not None
    assert queue.ack_many([Ack(Work.of(taken).lease or "", "news", "j1", counts=(("links", 3),))]) == [True]
    assert redis_client.hmget("test:job:j1", "pending", "links") == [b"2", b"3"], "its hash lives: counted"
    late = take(queue)
    assert late is not None
    lease = Work.of(late).lease or ""
    if end == "requeue":  # the very same request queued again while leased: two copies
        assert queue.push(lease.encode(), priority=0, site="news", job="j1")
    redis_client.delete("test:job:j1")  # as its time-to-live ends
    if end == "ack":
        assert queue.ack_many([Ack(lease, "news", "j1", counts=(("links", 3),))]) == [True]
    elif end == "dead letter":
        assert queue.dead_letter(lease, b'{"reason": "HTTP 500"}', site="news", job="j1", kind="HTTP 500")
    elif end == "handoff":  # a redirect to the request queued already: the two are one
        (member,) = cast(list[bytes], queue.server.zrange("test:queue:news", 0, 0))
        assert queue.handoff(lease, member, priority=0, site="news", job="j1") is False
    elif end == "requeue":
        assert queue.requeue_expired(now=time.time() + 3600) == 1
    else:
        assert queue.take_sites(["news"], held=lambda _: False) is not None
    assert not redis_client.exists("test:job:j1")
    left = {"requeue": b"2", "take": b"0"}.get(end, b"1")
    assert redis_client.hget("test:pending", "news") == left, "the site's count as before"


@pytest.mark.parametrize("way", ["push", "push_many", "queue_new", "queue_new again"])
def test_a_late_push_of_a_job_whose_hash_expired_does_not_write_the_hash_again(
    redis_client: redis.Redis, way: str
) -> None:
    """A late page of an ended job (its lease outlived the job's hash, kept SCHEDULE_JOB_KEEP_HOURS) queues
    its links: each push's HINCRBY wrote the hash again, pending 1 and no time-to-live, kept for ever, and
    the job looked alive again. Its links are queued and counted in their site alone now; a job whose hash
    is there (made before its first push, as enqueue_job does) counts them as before: pending, and
    ``again`` for a seen link a job that fetches seen URLs again queues."""
    keys = Keys("test")
    queue = make_queue(redis_client, jobs=("live", "gone"))
    bloom = RedisBloom(redis_client, "test:bloom", capacity=1000, error_rate=0.001)
    again = way == "queue_new again"
    if again:  # each job's set of the links it queued is there, and the links were seen
        for job in ("live", "gone"):
            redis_client.sadd(keys.again(job), b"before")
            assert bloom.add(job)
    redis_client.delete(keys.job("gone"))  # as its time-to-live ends
    for job in ("live", "gone"):
        meta = {"site": "news", "job": job, "kind": "article", "again": again}
        link = Request(f"http://news.test/{job}", meta=meta)
        if way == "push":
            assert push(queue, link)
        elif way == "push_many":
            assert queue.push_many([(encode_request(link), 0, "news", job)]) == [True]
        else:
            assert queue_new(bloom, keys, [link], [job.encode()]) == [True]
    assert not redis_client.exists(keys.job("gone"))
    assert queue.job_pending("live") == 1 and queue.pending("news") == 2, (
        "queued: the live job counts its own"
    )
    assert redis_client.hget(keys.job("live"), "again") == (b"1" if again else None)


def test_a_new_jobs_first_pushes_are_counted_in_its_hash_made_before_them(redis_client: redis.Redis) -> None:
    """A push counts in a job whose hash is there alone: enqueue_job makes a new job's hash (its
    ``created``) before its first push, so each of its start pages is counted pending, its given articles
    (``--url``) and stored pages (``--stored``) too."""
    keys = Keys("test")
    ruleset = load_rules(DEMO_RULES)
    rule = ruleset.rules["demo-citynews"]
    queue = make_queue(redis_client, jobs=())
    job = enqueue_job(redis_client, keys, [rule])
    assert queue.job_pending(job) == queue.pending(rule.site) > 0
    given = enqueue_job(
        redis_client,
        keys,
        [rule],
        article_urls=["http://news.test/a"],
        stored=[("http://news.test/b", "1.0")],
    )
    assert given != job and queue.job_pending(given) == 2
    assert redis_client.hexists(keys.job(given), "created")


def test_a_worker_whose_download_ended_offers_the_slot_to_a_hungry_worker_and_wakes_it(
    redis_client: redis.Redis,
) -> None:
    """A worker reports a download's end with its next pop, and that pop freed the site's slot and took it
    again, while the other worker, looking every idle poll, found every slot taken: 2 workers, 150/0 pages.
    The freed slot is now offered to the hungry worker, which is woken; once it took one, it is not hungry
    and the first takes its slots again."""
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.0, concurrency=4)
    for number in range(8):
        push(queue, request(f"http://a.test/{number}"))
    alone = queue.pop_many(count=8, worker="a", may_hunger=True)
    assert len(alone) == 4, "a worker alone takes every slot of the site"
    assert queue.pop_many(count=8, worker="b", may_hunger=True)[0].member is None, (
        "the site is full: b is hungry"
    )
    first, second = alone[0].member, alone[1].member
    assert first is not None and second is not None
    passed = queue.pop_many([first], 8, worker="a", may_hunger=True)
    assert passed[0].member is None, "the slot a freed is offered to b"
    assert passed[0].wait is not None and passed[0].wait <= OFFER_SECONDS
    assert redis_client.lrange(Keys("test").wake_of("b"), 0, -1) == [b"news"], "b is woken"
    assert [p.site for p in queue.pop_many(count=8, worker="b", may_hunger=True)] == ["news"]
    assert [p.site for p in queue.pop_many([second], 8, worker="a", may_hunger=True)] == ["news"], (
        "b took a slot: it is not hungry, a takes its freed slots again"
    )
    assert queue.politeness(["news"])[0].inflight == 4


def test_a_worker_beside_one_that_takes_nothing_it_keeps_reaches_the_site_s_concurrency(
    redis_client: redis.Redis,
) -> None:
    """3b27b94's even share held a worker to ONE download beside a worker that takes what it cannot use
    (a rule it cannot read, put back; a rolling upgrade): ['news', None, None, None]. Such a worker takes
    the slot offered to it and puts it back; its pops then make it hungry no more (its scheduler passes
    may_hunger=False), and the other worker takes every slot of the site."""
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.0, concurrency=4)
    for number in range(12):
        push(queue, request(f"http://a.test/{number}"))
    first = queue.pop_many(count=1, worker="a", may_hunger=True)[0].member
    assert first is not None
    assert queue.pop_many(count=8, worker="a", may_hunger=True)[0].site == "news"
    assert queue.pop_many(count=8, worker="b", may_hunger=True)[0].member is None, "b is hungry"
    queue.pop_many([first], 8, worker="a", may_hunger=True)
    taken = queue.pop_many(count=1, worker="b", may_hunger=True)[0].member
    assert taken is not None, "b takes the slot offered to it"
    assert queue.release([taken]) == 1, "and puts it back, unread"
    assert queue.pop_many(count=8, worker="a", may_hunger=True)[0].site == "news", "a takes it"
    assert queue.pop_many(count=8, worker="b", may_hunger=False)[0].member is None, "b is not hungry"
    ended = [decoded(member) for member in redis_client.smembers("test:downloading")]
    after = queue.pop_many(ended, 8, worker="a", may_hunger=True)
    assert [p.site for p in after] == ["news"] * 4, "a takes every slot it frees: the site's concurrency"
    assert queue.politeness(["news"])[0].inflight == 4


def test_a_site_offered_to_a_worker_that_never_takes_it_is_taken_by_another_once_the_offer_lapses(
    redis_client: redis.Redis,
) -> None:
    """A hungry worker killed (or stalled) before it takes what is offered to it holds the site no longer
    than OFFER_SECONDS, and is hungry no longer than HUNGRY_SECONDS: both are kept by time alone."""
    queue, keys = make_queue(redis_client), Keys("test")
    queue.configure("news", delay=0.0, concurrency=1)
    for number in range(3):
        push(queue, request(f"http://a.test/{number}"))
    first = queue.pop_many(count=1, worker="a", may_hunger=True)[0].member
    assert first is not None
    assert queue.pop_many(count=1, worker="b", may_hunger=True)[0].member is None, "b is hungry"
    assert queue.pop_many([first], 1, worker="a", may_hunger=True)[0].member is None, "news is b's for now"
    assert 0 < redis_client.pttl(keys.offer_of("news")) <= OFFER_SECONDS * 1000
    assert 0 < redis_client.pttl(keys.wake_of("b")) <= HUNGRY_SECONDS * 1000
    while redis_client.exists(keys.offer_of("news")):
        time.sleep(0.05)
    assert queue.pop_many(count=1, worker="a", may_hunger=True)[0].site == "news", "the offer lapsed"
    while (redis_client.zscore(keys.hungry, "b") or 0.0) > redis_now(redis_client):
        time.sleep(0.05)
    second = queue.pop_many(count=1, worker="a", may_hunger=True)
    assert second[0].member is None, "news is at its concurrency"
    lease = queue.pop_many(
        [decoded(member) for member in redis_client.smembers(keys.downloading)],
        1,
        worker="a",
        may_hunger=True,
    )
    assert lease[0].site == "news", "b is hungry no more: nothing is offered to it"
    assert not redis_client.exists(keys.wake_of("b")), "its wake list went"


def test_a_pop_that_fails_midway_leaves_every_site_takeable(redis_client: redis.Redis) -> None:
    """f9b466a withheld the sites a pop freed for a hungry worker and put them back only on the script's
    normal return paths: Lua is not rolled back, so a pop that failed midway (its lease write put back
    before the error) left them out of ready for ever. An offer is kept by time alone: a pop failing
    after it made offers leaves every site ready, taken by the worker offered it at once, and by any
    other once the offers lapse."""
    queue, keys = make_queue(redis_client), Keys("test")
    for site in ("alpha", "beta"):
        queue.configure(site, delay=0.0, concurrency=1)
        for number in range(3):
            push(queue, request(f"http://{site}.test/{number}", site=site))
    held = queue.pop_many(count=8, worker="a", may_hunger=True)
    assert sorted(str(p.site) for p in held) == ["alpha", "beta"]
    assert queue.pop_many(count=8, worker="b", may_hunger=True)[0].member is None, "b is hungry"
    push(queue, request("http://gamma.test/0", site="gamma"))
    # The leases SET to a string: the pop offers b the two sites it frees, then fails leasing gamma's.
    redis_client.set(keys.leases, "oops")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        queue.pop_many([p.member for p in held if p.member], 8, worker="a", may_hunger=True)
    redis_client.delete(keys.leases)
    ready = sorted(decoded(site) for site in cast(list[bytes], redis_client.zrange(keys.ready, 0, -1)))
    assert ready == ["alpha", "beta", "gamma"]
    assert [p.site for p in queue.pop_many(count=8, worker="a", may_hunger=True)] == ["gamma"], "a, not b"
    while redis_client.exists(keys.offer_of("alpha"), keys.offer_of("beta")):
        time.sleep(0.05)
    assert sorted(str(p.site) for p in queue.pop_many(count=8, worker="a", may_hunger=True)) == [
        "alpha",
        "beta",
    ]


@pytest.mark.parametrize("shared", ["hungry", "offer:news", "wake:b"])
def test_a_key_of_sharing_of_another_type_stops_no_pop(redis_client: redis.Redis, shared: str) -> None:
    """The hungry workers, a site's offer or a worker's wake list written with another type (someone SET or
    HSET it): each pop reporting a download would fail with WRONGTYPE, and the worker tell it again, for
    ever. Such a key shares nothing; the site's slots are taken as without sharing."""
    queue = make_queue(redis_client)
    queue.configure("news", delay=0.0, concurrency=1)
    for number in range(3):
        push(queue, request(f"http://a.test/{number}"))
    first = queue.pop_many(count=1, worker="a", may_hunger=True)[0].member
    assert first is not None
    assert queue.pop_many(count=1, worker="b", may_hunger=True)[0].member is None
    if shared == "hungry":
        redis_client.set(f"test:{shared}", "oops")
    else:
        redis_client.hset(f"test:{shared}", "oops", "1")
    after = queue.pop_many([first], 1, worker="a", may_hunger=True)
    if shared == "hungry":
        assert after[0].site == "news", "nobody is hungry: a takes its slot again"
    else:
        taken = after[0].site or queue.pop_many(count=1, worker="b", may_hunger=True)[0].site
        assert taken == "news", "the slot is taken"


def test_a_request_popped_and_deferred_during_both_looks_is_not_written_off(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """job_lost's look reads the leases first and last, the delayed set and the queues in between, and
    answers only when the job's pending count did not move: a request popped once the look has read the
    delayed set and deferred (lease -> delayed) before the look ends is in no place the look reads after,
    its pending count unchanged. Both looks missed it so (a worker retrying it at once, twice), and the
    request, alive in the delayed set, was written off: pending 0, lost 1. A request leaving a lease for
    a place read before now counts a move of its job, and a look whose job moved answers None."""
    monkeypatch.setattr("crawler.redisio.queue.JOB_LOST_READ_MAX", 1)  # one place a call: the moves between
    queue = make_queue(redis_client)
    queue.configure("news", delay=0, concurrency=4)
    push(queue, request("http://news.test/retried", job="j1"))
    look = queue._job_lost
    places: list[str] = []

    def stepped(*, keys: list[str], args: list[Any]) -> Any:
        if args[5] == "":  # a look's first call: a retry that came due is queued again
            queue.queue_due(now=time.time() + 1)
        reply = look(keys=keys, args=args)
        if isinstance(reply, list):
            places.append(reply[0].decode())
            if places[-1] == "queue:news":  # the delayed set read: a worker pops the request, defers it
                lease = queue.pop().member
                assert lease is not None
                assert queue.defer(lease, 0, max_attempts=5) > 0
        return reply

    monkeypatch.setattr(queue, "_job_lost", stepped)
    assert queue.job_lost("news", "j1", write_off=True) is None
    assert places[:1] == ["queue:news"], "the request left the queue as the look came to it"
    assert redis_client.hget("test:job:j1", "pending") == b"1"
    assert redis_client.hget("test:job:j1", "lost") is None
    assert queue.delayed() == 1, "the request waits for its retry"


# --- the leases of a worker known dead ----------------------------------------------------------------------


def test_a_dead_workers_leases_go_back_at_once_freeing_its_sites_slots_and_no_other_workers(
    redis_client: redis.Redis,
) -> None:
    """A worker killed held its site's every download slot until its leases expired (60 s and the requeue
    loop's turn): the other workers fetched nothing of that site meanwhile."""
    queue = make_queue(redis_client)
    keys = Keys("test")
    queue.configure("news", delay=0.0, concurrency=2)
    queue.configure("blog", delay=0.0, concurrency=1)
    for n in range(3):
        push(queue, request(f"http://a.test/{n}"))
    push(queue, request("http://b.test/1", site="blog"))
    dead = [p.member for p in queue.pop_many((), 2, worker="host:1:aaaaaa") if p.site == "news"]
    alive = queue.pop_many((), 2, worker="host:2:bbbbbb")
    assert len(dead) == 2 and [p.site for p in alive] == ["blog"], "news's two slots are the dead one's"
    assert redis_client.hget(keys.lease_holders, cast(str, dead[0])) == b"host:1:aaaaaa"
    assert queue.release_holders({"host:1:aaaaaa", "host:9:gone"}) == {"host:1:aaaaaa": 2}
    assert queue.leased() == 1 and queue.queued("news") == 3
    assert redis_client.hkeys(keys.lease_holders) == [cast(str, alive[0].member).encode()]
    assert queue.politeness(["news"])[0].inflight == 0
    again = queue.pop_many((), 3, worker="host:2:bbbbbb")
    assert sorted(p.site or "" for p in again) == ["news", "news"], "its slots are free for the others"
    assert queue.renew([cast(str, alive[0].member)]) == 1, "the live worker's lease is its own still"
    assert queue.release_holders({"host:1:aaaaaa"}) == {}


def test_a_dead_workers_lease_taken_since_by_another_worker_stays_with_it(redis_client: redis.Redis) -> None:
    queue = make_queue(redis_client)
    keys = Keys("test")
    push(queue, request("http://a.test/1"))
    member = cast(str, queue.pop_many((), 1, worker="host:1:aaaaaa")[0].member)
    # The very same member leased again by another worker (its lease released, popped at once).
    assert queue.release([member]) == 1
    assert queue.pop_many((), 1, worker="host:2:bbbbbb")[0].member == member
    reply = queue._release(
        keys=[keys.leases, keys.lease_scores, keys.lease_sites, keys.lease_holders],
        args=[keys.prefix, "host:1:aaaaaa", member],
    )
    assert reply[0] == 0 and queue.leased() == 1
    assert redis_client.hget(keys.lease_holders, member) == b"host:2:bbbbbb"


def test_every_end_of_a_lease_forgets_its_holder(redis_client: redis.Redis) -> None:
    """The holders' hash holds the leases held, never a lease ended (it would grow with every pop)."""
    queue = make_queue(redis_client, lease_seconds=0.1)
    keys = Keys("test")
    for n in range(6):
        push(queue, request(f"http://a.test/{n}"))
    leases = [cast(str, p.member) for p in queue.pop_many((), 6, worker="host:1:aaaaaa")]
    assert redis_client.hlen(keys.lease_holders) == 6
    assert queue.ack(leases[0], site="news", job="j1")
    retry = encode_request(request("http://a.test/retry"), SPIDER)
    assert queue.handoff(leases[1], retry, priority=0, site="news", job="j1")
    assert queue.defer(leases[2], 60, max_attempts=3) == 1
    assert queue.dead_letter(leases[3], b'{"reason": "x"}', site="news", job="j1")
    assert queue.release([leases[4]]) == 1
    time.sleep(0.2)
    assert queue.requeue_expired() == 1
    assert redis_client.hlen(keys.lease_holders) == 0
    assert queue.pop_many((), 1, worker="host:1:aaaaaa")[0].member is not None
    assert queue.take_sites(["news"], held=lambda _: False) is not None
    assert redis_client.hlen(keys.lease_holders) == 0, "a lease taken with its site"
    push(queue, request("http://a.test/again"))
    assert queue.pop().member is not None
    assert redis_client.hlen(keys.lease_holders) == 0, "a pop naming no worker records no holder"


def test_a_lease_lost_with_the_leases_set_and_written_off_forgets_its_holder(
    redis_client: redis.Redis,
) -> None:
    """A lease whose member went with crawler:leases (the key deleted or evicted) is written off by
    LeasedQueue.lost with its site's counts; its lease-sites and lease-scores entries went, its holder's
    stayed in crawler:lease-holders for ever (56d81b2 drops it at every other end of a lease), and each
    live worker's look for a dead worker's leases read it again."""
    queue = make_queue(redis_client)
    keys = Keys("test")
    push(queue, request("http://a.test/0"))
    assert queue.pop_many((), 1, worker="host:1:aaaaaa")[0].member is not None
    redis_client.delete(keys.leases)
    assert queue.lost("news", write_off=True, jobs=["j1"]) == (1, 1)
    assert redis_client.hlen(keys.lease_sites) == 0 and redis_client.hlen(keys.lease_scores) == 0
    assert redis_client.hlen(keys.lease_holders) == 0
    assert queue.release_holders({"host:1:aaaaaa"}) == {}


def test_a_site_that_counts_nothing_pending_has_nothing_lost(redis_client: redis.Redis) -> None:
    """LeasedQueue.lost said Redis held none of the requests of a site whose pending count was 0 (its
    requests all ended: (0, 0), not None), as of one whose queue was deleted under its requests: its
    callers read it as lost. Nothing counted pending, by the site or the jobs given, is nothing lost (its
    count of 0 still deleted by a write-off); a job that counts requests the site holds none of is."""
    queue = make_queue(redis_client)
    push(queue, request("http://a.test/0"))
    taken = take(queue)
    assert taken is not None and ack(queue, taken)
    assert redis_client.hget("test:pending", "news") == b"0"

    assert queue.lost("news") is None
    assert queue.lost("news", jobs=["j1"]) is None
    assert queue.lost("news", write_off=True, jobs=["j1"]) is None
    assert not redis_client.hexists("test:pending", "news"), "its count of 0 deleted"
    assert redis_client.hget("test:job:j1", "lost") is None

    redis_client.hset("test:job:j1", "pending", 2)  # its requests' counts left, the site's gone
    assert queue.lost("news", jobs=["j1"]) == (0, 0)
    assert queue.lost("news", write_off=True, jobs=["j1"]) == (0, 2)
    assert redis_client.hmget("test:job:j1", "pending", "lost") == [b"0", b"2"]


def test_the_holders_hash_of_another_type_stops_no_pop_and_no_end_of_a_lease(
    redis_client: redis.Redis,
) -> None:
    """crawler:lease-holders written with another type (someone SET it) records no holder: the leases are
    taken, renewed and ended as before, and end by expiry when their worker dies."""
    queue = make_queue(redis_client, lease_seconds=0.1)
    keys = Keys("test")
    redis_client.set(keys.lease_holders, "oops")
    for number in range(4):
        push(queue, request(f"http://a.test/{number}"))
    leases = [cast(str, p.member) for p in queue.pop_many((), 4, worker="host:1:aaaaaa")]
    assert len(leases) == 4 and queue.renew(leases) == 4
    assert queue.ack(leases[0], site="news", job="j1")
    assert queue.defer(leases[1], 60, max_attempts=3) == 1
    assert queue.release([leases[2]]) == 1
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        queue.release_holders({"host:1:aaaaaa"})
    time.sleep(0.2)
    assert queue.requeue_expired() == 1
    assert redis_client.get(keys.lease_holders) == b"oops"


def test_leases_and_waits_go_by_redis_clock_whatever_the_clocks_of_the_workers_machines(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on a machine whose clock is 120 s behind (more than a lease) takes, renews, retries and
    defers; another worker, on time, tends the queue: the first one's lease is live, its waits unfinished."""
    behind = make_queue(redis_client, lease_seconds=30)
    on_time = make_queue(redis_client, lease_seconds=30)
    for n in range(3):
        push(behind, request(f"http://a.test/{n}"))
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 120)
    leases = [behind.pop().member for _ in range(3)]
    assert all(leases)
    behind.renew([str(leases[0])])
    assert behind.handoff(str(leases[1]), b'{"retry": 1}', priority=0, site="news", job="j1", delay=30)
    assert behind.defer(str(leases[2]), 30, max_attempts=3) == 1
    monkeypatch.setattr(time, "time", real)
    assert on_time.requeue_expired() == 0, "the lease is live: its deadline is 30 s from now"
    assert on_time.queue_due() == 0, "the retry and the deferred request wait their 30 s"
    assert (on_time.leased(), on_time.delayed(), len(on_time)) == (1, 2, 0)
    assert on_time.requeue_expired(now=real() + 31) == 1
    assert on_time.queue_due(now=real() + 31) == 2
