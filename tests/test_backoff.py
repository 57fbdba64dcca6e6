"""The ``Retry-After`` header as the backoff middleware reads it (crawler/worker/backoff.py)."""

from __future__ import annotations

import email.utils
import time
from datetime import UTC, datetime

import pytest
import redis

from crawler.worker.backoff import retry_after

NOW = 1_764_000_000.0  # 2025-11-24T16:00:00Z


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        (b"", None),
        (b"120", 120.0),
        (b" 7 ", 7.0),
        (b"0", 0.0),
        (b"Mon, 24 Nov 2025 16:01:00 GMT", 60.0),
        (b"Mon, 24 Nov 2025 15:00:00 GMT", 0.0),
        (b"soon", None),
        (b"-5", None),
        (b"\xb2", None),  # latin-1 SUPERSCRIPT TWO: a digit to str.isdigit, no number to float
        (b"1\xb2", None),
        (b"\xd9\xa1", None),  # ARABIC-INDIC DIGIT ONE in UTF-8, read as latin-1
    ],
)
def test_retry_after_reads_seconds_or_a_date_and_nothing_else(
    header: bytes | None, seconds: float | None
) -> None:
    assert retry_after(header, NOW) == seconds


@pytest.mark.parametrize("skew", [-600.0, 600.0])
def test_a_retry_after_date_read_by_a_worker_whose_clock_is_off_holds_the_site_as_long_as_asked(
    redis_server: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, skew: float
) -> None:
    """A ``Retry-After`` date 5 minutes ahead holds the site 5 minutes for every worker, counted from
    Redis's clock, by which the hold is kept: a worker whose machine's clock was 10 minutes ahead read it
    as no wait (a 503 then retried at once, the site not held), one 10 minutes behind as 15 minutes."""
    from scrapy.http import Request, Response
    from scrapy.utils.test import get_crawler

    from crawler import settings as project_settings
    from crawler.keys import Keys
    from crawler.redisio import clock as clock_module
    from crawler.worker.backoff import BackoffMiddleware

    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update(REDIS_URL=redis_server, STATS_CLASS="scrapy.statscollectors.MemoryStatsCollector")
    site = f"held{skew:+.0f}"
    real = time.time
    asked = email.utils.format_datetime(datetime.fromtimestamp(real() + 300, UTC), usegmt=True)
    monkeypatch.setattr(clock_module, "_offset", 0.0)  # restored after the test
    monkeypatch.setattr(time, "time", lambda: real() + skew)
    middleware = BackoffMiddleware(get_crawler(settings_dict=values))
    middleware.queue  # noqa: B018 - its connection measures this process's offset to Redis's clock
    request = Request(f"http://{site}.test/a/1", meta={"site": site})
    response = Response(request.url, status=503, headers={"Retry-After": asked}, request=request)
    assert middleware.process_response(request, response) is not response, "held back, not retried at once"
    seconds, microseconds = redis_client.time()
    until = float(redis_client.hget(Keys("crawler").polite(site), "until") or 0)
    assert 250 < until - (seconds + microseconds / 1e6) <= 300, "held 5 minutes by Redis's clock"
