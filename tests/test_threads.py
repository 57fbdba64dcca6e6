"""Helper threads leave Ctrl-C to the main thread (crawler/threads.py)."""

from __future__ import annotations

import signal
import threading

from crawler.threads import ctrl_c_blocked


def _blocked(native_id: int) -> bool:
    """Whether the thread ``native_id`` of this process blocks SIGINT (its SigBlk mask in /proc)."""
    with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
        mask = next(line.split()[1] for line in status if line.startswith("SigBlk:"))
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def test_a_thread_started_with_ctrl_c_blocked_never_takes_it_and_the_starter_gets_it_back() -> None:
    seen: list[bool] = []
    ready = threading.Event()

    def run() -> None:
        seen.append(_blocked(threading.get_native_id()))
        ready.set()

    before = _blocked(threading.get_native_id())
    with ctrl_c_blocked():
        assert _blocked(threading.get_native_id())
        thread = threading.Thread(target=run)
        thread.start()
    assert ready.wait(10)
    thread.join()
    assert seen == [True]
    assert _blocked(threading.get_native_id()) == before
    assert not before, "the main thread of the tests takes Ctrl-C"
