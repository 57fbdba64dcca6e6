"""Helper threads that leave Ctrl-C to the main thread."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

__all__ = ["STOP_SIGNALS", "ctrl_c_blocked", "stop_signals_blocked"]

# The signals that stop a command cleanly: Ctrl-C and SIGTERM (a service manager, `docker stop`, `kill`).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def ctrl_c_blocked() -> Iterator[None]:
    """Block Ctrl-C (SIGINT) on this thread for the ``with`` body: the threads started in it inherit the
    block and never take the signal.

    Python runs signal handlers on the main thread whichever thread the kernel picks, so a helper
    thread loses nothing by it; but while the text pool starts its processes (Ctrl-C ignored for them to
    inherit, blocked on the main thread so a Ctrl-C waits instead of being dropped), the kernel hands a
    Ctrl-C to any thread that does not block it, and there it would be dropped
    (``crawler/worker/textwork.py``).
    """
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """Block Ctrl-C and SIGTERM on this thread for the ``with`` body, as :func:`ctrl_c_blocked` does Ctrl-C:
    for the text pool, whose processes are started ignoring both (``crawler/worker/textwork.py``)."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
