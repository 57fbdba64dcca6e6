"""Helper threads that leave Ctrl-C to the main thread."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

__all__ = ["ctrl_c_blocked"]


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
