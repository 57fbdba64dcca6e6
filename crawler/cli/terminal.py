"""Text printed on a terminal: what a page or a stored article holds must not drive the terminal, and long
values are cut to a width."""

from __future__ import annotations

import re

__all__ = ["counted", "cut", "one_line", "printable"]

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


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, else ``noun`` + ``s``) unless it is 1:
    ``1 page``, ``2 pages``, ``0 pages``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
