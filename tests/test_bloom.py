"""The Redis Bloom filter and the dupefilter on it, against the real embedded Redis server."""

from __future__ import annotations

import logging
import random
import threading
from typing import Any

import pytest
import redis
from bitarray import bitarray
from pybloom_live import BloomFilter
from scrapy import Request, Spider
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.test import get_crawler

from crawler.redisio.bloom import TIGHTENING, BloomError, RedisBloom, SliceGeometry
from crawler.redisio.connection import connect
from crawler.worker.dupefilter import RedisBloomDupeFilter

KEY = "test:bloom"
TARGET = 0.001


def random_items(count: int, seed: int) -> list[str]:
    """``count`` distinct random URL-like strings (fixed seed: the measured rates are reproducible)."""
    rng = random.Random(seed)
    return [f"http://site{rng.randrange(100)}.example/{rng.randbytes(12).hex()}" for _ in range(count)]


def false_positive_rate(bloom: RedisBloom, seed: int, count: int = 100_000) -> float:
    return sum(bloom.contains_many(random_items(count, seed))) / count


@pytest.mark.parametrize(
    ("capacity", "error_rate"), [(1, 0.5), (1000, 0.001), (123_457, 0.0005), (10**6, 1e-4)]
)
def test_slice_geometry_is_pybloom_bloomfilter_sizing(capacity: int, error_rate: float) -> None:
    reference = BloomFilter(capacity, error_rate)
    geometry = SliceGeometry.of(0, capacity, error_rate)
    assert (geometry.partitions, geometry.bits_per_partition) == (
        reference.num_slices,
        reference.bits_per_slice,
    )


def test_slices_grow_and_tighten_so_the_rates_sum_under_the_target(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET, growth=3)
    slices = [bloom.slice(i) for i in range(8)]
    assert [s.capacity for s in slices[:3]] == [1000, 3000, 9000]
    assert slices[0].error_rate == pytest.approx(TARGET * (1 - TIGHTENING))
    assert sum(s.error_rate for s in slices) < TARGET


def test_first_slice_is_pybloom_bloomfilter_bit_for_bit(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=5000, error_rate=TARGET)
    items = random_items(5000, seed=1)
    bloom.add_many(items)
    reference = BloomFilter(5000, TARGET * (1 - TIGHTENING))
    for item in items:
        reference.add(item)
    stored = bitarray(endian="big")  # SETBIT offset 0 is the high bit of the first byte
    bitmap = redis_client.get(f"{KEY}:s0")
    assert isinstance(bitmap, bytes)
    stored.frombytes(bitmap)
    assert len(stored) - reference.num_bits < 8
    assert not stored[reference.num_bits :].any()
    assert stored[: reference.num_bits] == reference.bitarray


def test_no_false_negatives_and_false_positive_rate_at_capacity(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=100_000, error_rate=TARGET)
    items = random_items(100_000, seed=2)
    added = bloom.add_many(items)
    assert sum(added) > 100_000 * (1 - 2 * TARGET)  # an item is reported seen only by a false positive
    assert bloom.count() == sum(added)
    assert all(bloom.contains_many(items))
    assert not any(bloom.add_many(items))
    assert false_positive_rate(bloom, seed=3) <= 2 * TARGET
    assert len(bloom.keys) == 2  # the metadata and one slice: it never grew


def test_growth_past_capacity_keeps_every_item_and_the_rate(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=2000, error_rate=TARGET, growth=2)
    items = random_items(40_000, seed=4)
    for start in range(0, len(items), 700):
        bloom.add_many(items[start : start + 700])
    assert len(bloom.keys) == 1 + 5  # slices of 2k, 4k, 8k, 16k and 32k items (10k in the last)
    assert all(bloom.contains_many(items))
    assert false_positive_rate(bloom, seed=5) <= 2 * TARGET
    assert redis_client.strlen(f"{KEY}:s4") == bloom.slice(4).nbytes


def test_one_batch_filling_several_slices(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=10, error_rate=TARGET, growth=2)
    items = [f"item-{i}" for i in range(1000)]
    assert sum(bloom.add_many(items)) >= 999
    assert len(bloom.keys) == 1 + 7  # 10 + 20 + ... + 640 >= 1000
    assert all(bloom.contains_many(items))


def test_duplicates_inside_one_batch(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET)
    assert bloom.add_many(["a", "b", "a", "x", b"x", "b"]) == [True, True, False, True, False, False]
    assert bloom.add("c")
    assert not bloom.add(b"c")
    assert "a" in bloom
    assert b"never added" not in bloom
    assert bloom.count() == 4


def test_a_client_that_missed_the_growth_still_finds_every_item(
    redis_server: str, redis_client: redis.Redis
) -> None:
    stale = RedisBloom(redis_client, KEY, capacity=100, error_rate=TARGET)
    assert stale.add("first")
    other = RedisBloom(connect(redis_server), KEY, capacity=100, error_rate=TARGET)
    items = random_items(2000, seed=6)
    other.add_many(items)
    assert len(other.keys) > 2
    assert all(stale.contains_many(items))
    assert not any(stale.add_many(items))
    assert stale.count() == other.count()


def test_racing_clients_never_both_add_one_item(redis_server: str, redis_client: redis.Redis) -> None:
    items = random_items(20_000, seed=7)
    orders = [items[:], items[::-1]]
    random.Random(8).shuffle(orders[0])
    results: list[dict[str, bool]] = [{}, {}]
    start = threading.Barrier(2)

    def work(index: int) -> None:
        client = connect(redis_server)
        bloom = RedisBloom(client, KEY, capacity=500, error_rate=TARGET)  # grows to 6 slices meanwhile
        start.wait()
        order = orders[index]
        for begin in range(0, len(order), 50):
            batch = order[begin : begin + 50]
            results[index].update(zip(batch, bloom.add_many(batch), strict=True))
        client.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not [item for item in items if results[0][item] and results[1][item]]
    added = sum(results[0].values()) + sum(results[1].values())
    assert added > len(items) * (1 - 2 * TARGET)  # neither: a false positive before either added it
    bloom = RedisBloom(redis_client, KEY, capacity=500, error_rate=TARGET)
    assert bloom.count() == added
    assert all(bloom.contains_many(items))


def test_a_client_with_other_settings_is_refused(redis_client: redis.Redis) -> None:
    RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET)
    with pytest.raises(BloomError, match=r"'capacity' is '1000' but this client was given '2000'"):
        RedisBloom(redis_client, KEY, capacity=2000, error_rate=TARGET)
    with pytest.raises(BloomError, match=r"'error_rate' is '0\.001' but this client was given '0\.01'"):
        RedisBloom(redis_client, KEY, capacity=1000, error_rate=0.01)


@pytest.mark.parametrize("field", ["slices", "last_count"])
def test_a_count_of_the_metadata_that_is_no_number_is_refused_naming_it_and_the_fix(
    redis_client: redis.Redis, field: str
) -> None:
    """The metadata hash written by hand or by another program (`HSET test:bloom:meta slices abc`): a
    BloomError naming the field, its value and how to set it back, not int()'s ValueError (a traceback of
    `crawler temp` in the fault hunt)."""
    RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET).add_many(["http://a.test/1"])
    redis_client.hset(f"{KEY}:meta", field, "abc")
    with pytest.raises(BloomError) as refused:
        RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET)
    assert str(refused.value).startswith(
        f"Bloom filter {KEY}: {KEY}:meta field '{field}' is 'abc', not a count, so the seen URLs cannot be"
        f" read: set it back, `HSET {KEY}:meta {field} N` (N: "
    )
    assert f"or delete the keys {KEY}:* to start an empty filter" in str(refused.value)


def test_a_whole_number_given_as_a_float_sizes_the_filter_as_that_whole_number(
    redis_client: redis.Redis,
) -> None:
    """A capacity or growth of 1000.0 / 2.0 is the whole number: a client given the int agrees with it."""
    RedisBloom(redis_client, KEY, capacity=1000.0, error_rate=TARGET, growth=2.0)  # type: ignore[arg-type]
    bloom = RedisBloom(redis_client, KEY, capacity=1000, error_rate=TARGET, growth=2)
    assert (bloom.capacity, bloom.growth) == (1000, 2)
    assert isinstance(bloom.capacity, int) and isinstance(bloom.growth, int)


@pytest.mark.parametrize(
    ("capacity", "error_rate", "growth", "message"),
    [
        (
            0,
            TARGET,
            2,
            "BLOOM_CAPACITY is 0: expected a number of URLs, 1 or more (a whole number) (the default is",
        ),
        (
            1000,
            1.5,
            2,
            "BLOOM_ERROR_RATE is 1.5: expected a false-positive rate above 0 and below 1 (the default",
        ),
        (
            1000,
            TARGET,
            0,
            "BLOOM_GROWTH is 0: expected a factor, 1 or more (a whole number) (the default is 2);",
        ),
        (1000, TARGET, 2.5, "BLOOM_GROWTH is 2.5: expected a factor, 1 or more (a whole number)"),
    ],
)
def test_bad_sizing_is_refused(
    redis_client: redis.Redis, capacity: int, error_rate: float, growth: Any, message: str
) -> None:
    """In the words of every setting's check (crawler.bounds.checked_setting), with the fix."""
    with pytest.raises(BloomError) as refused:
        RedisBloom(redis_client, KEY, capacity=capacity, error_rate=error_rate, growth=growth)
    assert str(refused.value).startswith(message)
    assert "or leave it out to take the default" in str(refused.value)


def test_bytes_used_count_and_clear(redis_client: redis.Redis) -> None:
    bloom = RedisBloom(redis_client, KEY, capacity=10_000, error_rate=TARGET)
    assert bloom.bytes_used() < 1000  # the metadata only
    added = sum(bloom.add_many(random_items(10_000, seed=9)))
    size = bloom.slice(0).nbytes
    assert size <= 10_000 * 2.0
    assert size <= bloom.bytes_used() <= size * 1.05 + 1000
    assert bloom.count() == added
    bloom.clear()
    assert bloom.count() == 0
    assert redis_client.exists(f"{KEY}:s0") == 0
    assert bloom.add("again")


def dupefilter_crawler(redis_url: str) -> tuple[RedisBloomDupeFilter, RFPDupeFilter]:
    crawler = get_crawler(
        settings_dict={
            "REDIS_URL": redis_url,
            "REDIS_KEY_PREFIX": "test",
            "BLOOM_CAPACITY": 1000,
            "BLOOM_ERROR_RATE": TARGET,
            "BLOOM_GROWTH": 2,
        }
    )
    return RedisBloomDupeFilter.from_crawler(crawler), RFPDupeFilter.from_crawler(crawler)


EQUIVALENT_REQUESTS = [
    Request("http://news.example/a?x=1&y=2"),
    Request("http://news.example/a?y=2&x=1"),  # query order: same fingerprint
    Request("http://news.example/a?x=1&y=2#comments"),  # fragment: same fingerprint
    Request("http://news.example/a?x=1&y=3"),
    Request("http://news.example/b", method="POST", body=b"q=1"),
    Request("http://news.example/b", method="POST", body=b"q=2"),
    Request("http://news.example/b", method="POST", body=b"q=1"),
    Request("http://NEWS.example:80/b"),
    Request("http://news.example/b"),
]


def test_dupefilter_agrees_with_scrapy_fingerprints(redis_server: str, redis_client: redis.Redis) -> None:
    ours, scrapys = dupefilter_crawler(redis_server)
    expected = [scrapys.request_seen(request) for request in EQUIVALENT_REQUESTS]
    assert expected == [False, True, True, False, False, False, True, False, False]
    assert [ours.request_seen(request) for request in EQUIVALENT_REQUESTS] == expected
    assert redis_client.exists("test:bloom:s0") == 1
    assert ours.stats.get_value("bloom/seen") == 3
    assert ours.stats.get_value("bloom/added") == 6


def test_dupefilter_batch_path(redis_server: str, redis_client: redis.Redis) -> None:
    ours, scrapys = dupefilter_crawler(redis_server)
    assert ours.seen_many(EQUIVALENT_REQUESTS) == [scrapys.request_seen(r) for r in EQUIVALENT_REQUESTS]
    assert ours.seen_many(EQUIVALENT_REQUESTS[:2]) == [True, True]
    assert ours.seen_many([]) == []
    assert ours.stats.get_value("bloom/seen") == 5
    assert ours.stats.get_value("bloom/added") == 6


def test_dupefilter_persists_and_logs_without_deprecations(
    redis_server: str, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    ours, _ = dupefilter_crawler(redis_server)
    request = Request("http://news.example/a")
    assert not ours.request_seen(request)
    ours.close("finished")
    again, _ = dupefilter_crawler(redis_server)
    assert again.request_seen(request)
    with caplog.at_level(logging.DEBUG, logger="crawler.worker.dupefilter"):
        again.log(request, Spider("sites"))
        again.log(request, Spider("sites"))
    assert [r.getMessage() for r in caplog.records] == [
        "Filtered duplicate request: <GET http://news.example/a> - no more duplicates will be shown"
        " (see DUPEFILTER_DEBUG to show all duplicates)"
    ]
