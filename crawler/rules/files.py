"""Reading the files a rules folder holds (rules, session files, example articles): regular files only,
opened without waiting, so that a FIFO or a device put where one should be is an error, not a hang."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_regular"]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_regular(path: Path, limit: int) -> tuple[bytes, int]:
    """At most ``limit`` bytes of the regular file ``path``, and its size; :class:`OSError` when it cannot
    be read or is no regular file (opened with O_NONBLOCK: opening a FIFO to read waits for a writer)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        # A socket cannot be opened ("No such device or address"): named as what it is.
        raise _not_regular(os.stat(path).st_mode, path) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(mode, path)
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            data = stream.read(limit)
        return data, max(os.fstat(descriptor).st_size, len(data))
    finally:
        os.close(descriptor)


def _not_regular(mode: int, path: Path) -> OSError:
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return OSError(errno.EINVAL, f"{kind}, not a regular file", str(path))
