"""Helper threads that leave Ctrl-C and SIGTERM to the main thread."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable, Iterator

__all__ = ["STOP_SIGNALS", "signals_blocked"]

# The signals that stop a command cleanly: Ctrl-C and SIGTERM (a service manager, `docker stop`, `kill`).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def signals_blocked(signals: Iterable[signal.Signals]) -> Iterator[None]:
    """Block ``signals`` on this thread for the ``with`` body: the threads and processes started in it
    inherit the block. A blocked signal sent to the process goes to a thread that does not block it, or
    waits until one does.

    Python runs signal handlers on the main thread whichever thread the kernel picks, so a helper thread
    started with the :data:`STOP_SIGNALS` blocked loses nothing by it, and a stop goes to the main thread,
    waking it; the text pool's processes start with them blocked, and drop one sent to the crawl's
    process group meanwhile (``crawler/worker/textwork.py``).
    """
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
