"""Text printed on a terminal: what a page or a stored article holds must not drive the terminal, and long
values are cut to a width; the lines a command writes on stderr start with the command as typed and their
kind (:func:`tell`)."""

from __future__ import annotations

import errno
import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

from crawler.commandline import command_name

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "PIPED_WIDTH",
    "cut",
    "fit_progress",
    "one_line",
    "output_advice",
    "printable",
    "running",
    "table_console",
    "tell",
]

# The width of every command's tables when its output is not a terminal: the same on every machine.
PIPED_WIDTH = 100
# The progress bar's width, and the least it is shrunk to before it is left out.
BAR_WIDTH = 40
MIN_BAR_WIDTH = 10
# The least a progress line's title is cut to before it is left out, and its pages before the elapsed time is.
MIN_TITLE_WIDTH = 10
MIN_PAGES_WIDTH = 5

# Terminal control characters (C0 but tab and newline, DEL, C1).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# The command being run, as typed after ``crawler`` (``rules try``): what every line :func:`tell` writes
# starts with, after the way ``crawler`` is run (``crawler``, ``./run.sh crawler``: command_name()).
_command: list[str] = []


def running(command: str) -> None:
    """Record the command being run, as typed after ``crawler`` (``rules try``), for :func:`tell`."""
    _command[:] = command.split()


@contextmanager
def table_console(piped_width: int = PIPED_WIDTH) -> Iterator[Console]:
    """The console a command prints its tables on: rich on a terminal; else plain text, ``piped_width``
    columns wide, written out when the block ends with no line ending in a space (rich pads cells and
    titles to the table's width)."""
    from rich.console import Console  # noqa: PLC0415 - rich only for a table: `crawler --help` loads none

    if sys.stdout.isatty():
        yield Console()
        return
    piped = io.StringIO()
    yield Console(file=piped, width=piped_width, color_system=None, force_terminal=False)
    sys.stdout.write("".join(f"{line.rstrip()}\n" for line in piped.getvalue().splitlines()))


def tell(kind: Literal["note", "warning", "error"] | None, message: str) -> None:
    """``message`` on stderr after the command as typed and its ``kind`` (None: an end, such as
    ``interrupted`` or ``exported 48 articles``, with no kind): ``crawler rules try: note: ...``
    (``./run.sh crawler rules try: note: ...`` run through ``./run.sh``), as argparse writes its usage
    errors. Each line of a message of several (the errors of a rule file) starts
    so. Terminal control characters are left out: a message may quote what a site sent (a Content-Type,
    a URL)."""
    prefix = ": ".join([" ".join([command_name(), *_command]), *([kind] if kind else [])])
    for line in message.splitlines() or [""]:
        print(f"{prefix}: {printable(line)}", file=sys.stderr)


def output_advice(exc: OSError, disk: str, less: str) -> str:
    """What to do when a command's output could not be written for ``exc``: free space on ``disk`` when it
    is full, ``less`` when the file grew past the largest allowed; else nothing."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"; free space on {disk}"
    if exc.errno == errno.EFBIG:
        return f"; the file grew past the largest allowed (`ulimit -f`, or its file system's limit): {less}"
    return ""


def printable(text: str) -> str:
    """``text`` without terminal control characters."""
    return _CONTROL_RE.sub("", text)


def one_line(text: str) -> str:
    """``text`` on one line (white space collapsed), printable."""
    return printable(" ".join(text.split()))


def cut(text: str, width: int) -> str:
    """``text`` on one line (white space collapsed), printable, at most ``width`` characters (an ellipsis
    ends a cut one)."""
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def fit_progress(
    width: int, title: str, pages: str, tallies: list[tuple[str, int]], elapsed: str
) -> tuple[str, int, str, str]:
    """A progress line of ``title``, a bar, ``pages``, the ``tallies`` (name, count) and ``elapsed`` fit into
    ``width`` columns, its parts joined by one space: the title ("": none), the bar's width (0: none), the
    text of the pages and tallies, and the elapsed time ("": none). What goes first when it is narrow: the
    bar's width down to ``MIN_BAR_WIDTH``, the double spaces between the tallies, the tallies at 0 but the
    first, then the bar; then the title is cut down to ``MIN_TITLE_WIDTH``, then left out; then the tallies
    from the last; then the pages are cut, and the elapsed time left out when even that does not fit."""
    spaced = "  ".join(f"{name} {count}" for name, count in tallies)
    single = " ".join(f"{name} {count}" for name, count in tallies)
    shown = [f"{name} {count}" for index, (name, count) in enumerate(tallies) if count or not index]
    for counts in (spaced, single, " ".join(shown)):
        room = width - len(f"{title}  {pages} {counts} {elapsed}")
        if room >= MIN_BAR_WIDTH:
            return title, min(room, BAR_WIDTH), " ".join(filter(None, (pages, counts))), elapsed
    title = one_line(title)
    for kept in range(len(shown), -1, -1):
        text = " ".join([pages, *shown[:kept]])
        room = width - len(f" {text} {elapsed}")
        if kept == len(shown) and room >= min(len(title), MIN_TITLE_WIDTH):
            return cut(title, room), 0, text, elapsed
        if len(f"{text} {elapsed}") <= width:
            return "", 0, text, elapsed
    room = width - len(f" {elapsed}")
    if room >= MIN_PAGES_WIDTH:
        return "", 0, cut(pages, room), elapsed
    return "", 0, cut(pages, max(width, 1)), ""
