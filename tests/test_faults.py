"""``RepeatedFaults`` (crawler/worker/faults.py): a fault that befalls many requests alike is said once,
then at most once every ``every`` seconds with the count of requests it befell in between (a clock given
to it, no waiting)."""

from __future__ import annotations

import logging

import pytest

from crawler.worker.faults import RepeatedFaults

DAMAGED = "its article could not be stored: the week's file is damaged"


def test_a_fault_is_said_once_then_again_a_minute_on_with_the_count_of_requests_between(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    faults = RepeatedFaults(60.0, clock=lambda: now[0])
    said = [faults.said("dead-lettered", DAMAGED, logging.WARNING)]
    for _ in range(999):
        now[0] += 0.05
        said.append(faults.said("dead-lettered", DAMAGED, logging.WARNING))
    assert said[0] == (logging.WARNING, "")
    assert set(said[1:]) == {(logging.DEBUG, "")}
    # Another fault, or the same befalling another kind of end, is said on its own.
    assert faults.said("deferred", DAMAGED, logging.WARNING) == (logging.WARNING, "")
    assert faults.said("dead-lettered", "disk full", logging.INFO) == (logging.INFO, "")
    now[0] = 161.0
    assert faults.said("dead-lettered", DAMAGED, logging.WARNING) == (
        logging.WARNING,
        " (and 999 more requests dead-lettered so in the 61 s since the last line)",
    )
    now[0] = 170.0
    faults.said("dead-lettered", DAMAGED, logging.WARNING)
    with caplog.at_level(logging.WARNING, logger="crawler.worker.faults"):
        faults.close()
    assert [record.getMessage() for record in caplog.records] == [
        f"1 more request dead-lettered so in the 9 s since the last line, the last: {DAMAGED}"
    ]


def test_a_fault_is_the_same_whichever_request_or_batch_it_befell() -> None:
    faults = RepeatedFaults(60.0, clock=lambda: 0.0)
    first = "could not write: cannot write 1 article (first http://a.test/1) to w.sqlite: disk full"
    other = "could not write: cannot write 12 articles (first http://a.test/9) to w.sqlite: disk full"
    assert faults.said("deferred", first, logging.WARNING) == (logging.WARNING, "")
    assert faults.said("deferred", other, logging.WARNING) == (logging.DEBUG, "")
    assert faults.said("deferred", other.replace("w.sqlite", "v.sqlite"), logging.WARNING) == (
        logging.WARNING,
        "",
    )


def test_a_fault_that_ended_is_said_whole_when_it_comes_back() -> None:
    now = [0.0]
    faults = RepeatedFaults(60.0, clock=lambda: now[0])
    assert faults.said("deferred", "disk full", logging.WARNING) == (logging.WARNING, "")
    now[0] = 600.0
    assert faults.said("deferred", "disk full", logging.WARNING) == (logging.WARNING, "")


def test_a_fault_that_was_mended_says_its_unsaid_requests_and_is_said_whole_if_it_comes_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    faults = RepeatedFaults(60.0, clock=lambda: now[0])
    gone = "no rule for site 'gone'"
    assert faults.new("dead-lettered", gone)
    faults.said("dead-lettered", gone, logging.WARNING)
    assert not faults.new("dead-lettered", gone)
    for _ in range(4):
        faults.said("dead-lettered", gone, logging.WARNING)
    now[0] = 12.0
    with caplog.at_level(logging.WARNING, logger="crawler.worker.faults"):
        faults.ended("dead-lettered", gone)
        faults.ended("dead-lettered", gone)
    assert [record.getMessage() for record in caplog.records] == [
        f"4 more requests dead-lettered so in the 12 s since the last line, the last: {gone}"
    ]
    assert faults.new("dead-lettered", gone)
    assert faults.said("dead-lettered", gone, logging.WARNING) == (logging.WARNING, "")


def test_the_sizes_of_a_page_are_no_new_fault() -> None:
    """A server whose every page is longer than its Content-Length dead-letters each with its own sizes
    ("3,456 bytes (at least 120 more came after them)"): one fault of the site, not one a page."""
    faults = RepeatedFaults(60.0, clock=lambda: 0.0)
    cut = (
        "http://a.test/{} of site 'a': the site sent more than its Content-Length, {} bytes (at least {} more"
    )
    assert faults.said("dead-lettered", cut.format(1, "3,456", 120), logging.WARNING) == (logging.WARNING, "")
    assert faults.said("dead-lettered", cut.format(2, "12,001", 7), logging.WARNING) == (logging.DEBUG, "")
    assert faults.new("dead-lettered", cut.format(3, "4", "1,234").replace("'a'", "'b'"))


def test_a_fault_ended_by_what_mended_it_says_so_in_one_line_with_its_unsaid_requests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A site that answers again ends its faults of no answer: one line says so, with the count of the
    dead letters not said yet (none: the line alone, at INFO)."""
    now = [0.0]
    faults = RepeatedFaults(60.0, clock=lambda: now[0])
    down = "http://a.test/1 of site 'a': connection refused"
    for number in range(5):
        faults.said("dead-lettered", down.replace("/1", f"/{number}"), logging.WARNING)
    faults.said("dead-lettered", "http://b.test/1 of site 'b': connection refused", logging.WARNING)
    now[0] = 9.0
    with caplog.at_level(logging.INFO, logger="crawler.worker.faults"):
        faults.ended("dead-lettered", down, over="Site 'a' answers again")
        faults.ended(
            "dead-lettered", "http://b.test/1 of site 'b': connection refused", over="Site 'b' answers again"
        )
    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [
        (
            logging.WARNING,
            "Site 'a' answers again: 4 more requests dead-lettered so in the 9 s since the last line, the"
            " last: http://a.test/4 of site 'a': connection refused",
        ),
        (logging.INFO, "Site 'b' answers again"),
    ]


@pytest.mark.parametrize(
    ("every", "how"),
    [(60.0, "once a minute"), (3600.0, "once an hour"), (90.0, "every 90 s")],
)
def test_a_faults_first_line_says_how_often_its_next_requests_are_said_as_its_every_says(
    every: float, how: str
) -> None:
    """Its callers each wrote "said once a minute with a count" (or once an hour) in their hint themselves,
    whatever the ``every`` of their RepeatedFaults; said_first phrases it from ``every`` for them."""
    faults = RepeatedFaults(every, clock=lambda: 0.0)

    def hint(said: str) -> str:
        return f"; its next requests alike are {said}"

    first = faults.said_first("dead-lettered", DAMAGED, logging.WARNING, hint)
    assert first == (logging.WARNING, f"; its next requests alike are said {how} with a count")
    assert faults.said_first("dead-lettered", DAMAGED, logging.WARNING, hint) == (logging.DEBUG, "")
