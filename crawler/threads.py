"""The signals that stop a command cleanly, and helper threads that leave them to the main thread."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import termios
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["STOP_SIGNALS", "leave_the_terminal", "process_stopped", "signals_blocked"]

# The signals that stop a command cleanly: Ctrl-C, SIGTERM (a service manager, `docker stop`, `kill`) and
# SIGHUP (the command's terminal closed).
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def leave_the_terminal() -> None:
    """Send stdout and stderr to the null device where they are a terminal, as SIGHUP says it closed: a
    write to a terminal that hung up fails (EIO), and the clean stop that follows must not fail of it.
    Those sent to a file or a pipe (``nohup``, a log) keep what comes."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # what it held was for the terminal that is gone
            stream.flush()
    for fd in (1, 2):
        if _a_terminal(fd):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)


def _a_terminal(fd: int) -> bool:
    """Whether ``fd`` is a terminal, hung up or not: one that hung up is no tty to ``isatty`` any more, and
    answers every ioctl with EIO (a file, a pipe or the null device answers ENOTTY)."""
    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args[0] == errno.EIO)
    return True


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


def process_stopped(pid: int) -> bool:
    """True while the process ``pid`` is there but stopped (SIGSTOP, Ctrl-Z: state ``T``, or ``t`` under a
    debugger): it runs no code until SIGCONT. False when it runs, is gone, or there is no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")
