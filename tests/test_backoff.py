"""The ``Retry-After`` header as the backoff middleware reads it (crawler/worker/backoff.py)."""

from __future__ import annotations

import pytest

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
