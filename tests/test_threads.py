"""Helper threads leave Ctrl-C and SIGTERM to the main thread (crawler/threads.py)."""

from __future__ import annotations

import signal
import threading

from crawler.threads import STOP_SIGNALS, signals_blocked


def _blocked(native_id: int) -> set[signal.Signals]:
    """Which of the stop signals the thread ``native_id`` of this process blocks (its SigBlk mask in
    /proc)."""
    with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
        mask = int(next(line.split()[1] for line in status if line.startswith("SigBlk:")), 16)
    return {signum for signum in STOP_SIGNALS if mask & (1 << (signum - 1))}


def test_a_thread_started_with_stop_signals_blocked_never_takes_them_and_the_starter_unblocks() -> None:
    seen: list[set[signal.Signals]] = []
    ready = threading.Event()

    def run() -> None:
        seen.append(_blocked(threading.get_native_id()))
        ready.set()

    before = _blocked(threading.get_native_id())
    with signals_blocked(STOP_SIGNALS):
        assert _blocked(threading.get_native_id()) == STOP_SIGNALS
        thread = threading.Thread(target=run)
        thread.start()
    assert ready.wait(10)
    thread.join()
    assert seen == [STOP_SIGNALS]
    assert _blocked(threading.get_native_id()) == before
    assert not before, "the main thread of the tests takes Ctrl-C and SIGTERM"
