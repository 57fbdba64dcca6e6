"""Text printed on a terminal: what a page or a stored article holds must not drive the terminal, and long
values are cut to a width."""

from __future__ import annotations

import re

__all__ = ["cut", "fit_progress", "one_line", "printable"]

# The progress bar's width, and the least it is shrunk to before it is left out.
BAR_WIDTH = 40
MIN_BAR_WIDTH = 10

# Terminal control characters (C0 but tab and newline, DEL, C1).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
) -> tuple[str, int, str]:
    """A progress line of ``title``, a bar, ``pages``, the ``tallies`` (name, count) and ``elapsed`` fit into
    ``width`` columns: the title, the bar's width (0: none) and the text of the tallies. What goes first
    when it is narrow: the bar's width down to ``MIN_BAR_WIDTH``, the double spaces between the tallies,
    the tallies at 0 but the first, then the bar; the title is cut last."""
    spaced = "  ".join(f"{name} {count}" for name, count in tallies)
    single = " ".join(f"{name} {count}" for name, count in tallies)
    shown = " ".join(f"{name} {count}" for index, (name, count) in enumerate(tallies) if count or not index)
    for counts in (spaced, single, shown):
        room = width - len(f"{title}  {pages} {counts} {elapsed}")
        if room >= MIN_BAR_WIDTH:
            return title, min(room, BAR_WIDTH), counts
    room = width - len(f" {pages} {shown} {elapsed}")
    return cut(title, max(room, 1)), 0, shown
