"""bench/chaos.py: each re-fetch goes to the fault that broke the fetch before it (its attribution alone:
the bench itself runs for minutes)."""

from __future__ import annotations

from bench.chaos import Fault, attribute


def test_each_refetch_goes_to_the_fault_that_broke_the_fetch_before_it() -> None:
    faults = [
        Fault("worker", "worker killed", 10.0, 10.0, {1, 2, 3, 9}),
        Fault("redis", "Redis killed", 20.0, 23.0, {1, 4, 5, 9}, {11, 12}),
        Fault("site", "the site answers 503", 30.0, 38.0),
        Fault("store", "the store locked", 40.0, 75.0),
    ]
    served = {
        1: [9.0, 15.0],  # its worker killed, then fetched again before Redis was killed
        2: [9.5],  # its worker killed, never fetched again: expected, not re-fetched
        3: [12.0],  # leased by the killed worker, first fetched after: nothing broken
        4: [19.0],  # served before Redis was killed, its lease held: acknowledged once it is back
        5: [21.5],  # served while Redis was away: acknowledged once it is back
        6: [69.0, 76.0],  # deferred while the store was locked
        7: [80.5, 81.0],  # nothing broke it, near no fault
        8: [31.0, 32.0],  # nothing broke it, served while the site answered 503
        9: [9.8, 30.0],  # broken by its worker's kill (Redis's kill breaks no lease it held)
        10: [50.0, 58.0],  # deferred while no store was locked: unexplained, near the lock
        11: [19.5, 31.5],  # acknowledged before Redis was killed, its lease back after the restart
        12: [22.0],  # leased after the restart, served once: nothing broken
    }
    deferrals = [(6, 70.5), (10, 76.5)]

    by_fault, unexplained = attribute(served, faults, deferrals)

    assert [(item.broke, item.refetched, item.near) for item in by_fault] == [
        (3, 2, 0),
        (1, 1, 0),
        (0, 0, 1),
        (1, 1, 1),
    ]
    assert sorted((item.article, item.fetched, item.again) for item in unexplained) == [
        (7, 80.5, 81.0),
        (8, 31.0, 32.0),
        (10, 50.0, 58.0),
    ]
