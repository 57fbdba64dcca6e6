"""Text printed on a terminal: what a page or a stored article holds must not drive the terminal, and long
values are cut to a width."""

from __future__ import annotations

import os
import re
import shlex

__all__ = ["COMMAND_ENV", "command_name", "cut", "given_folders", "printable", "suggest"]

# How the user runs this command (``./run.sh crawler`` sets it), for the commands a message suggests.
COMMAND_ENV = "CRAWLER_COMMAND"

# The global folder options of this command line (``--data-dir``, ``--rules-dir``), repeated in the
# commands its messages suggest.
_given: list[str] = []

# Terminal control characters (C0 but tab and newline, DEL, C1).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` without terminal control characters."""
    return _CONTROL_RE.sub("", text)


def cut(text: str, width: int) -> str:
    """``text`` on one line (white space collapsed), printable, at most ``width`` characters (an ellipsis
    ends a cut one)."""
    text = printable(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def command_name() -> str:
    """The command line that runs ``crawler`` here: ``$CRAWLER_COMMAND`` (``./run.sh crawler``), else
    ``crawler``."""
    return os.environ.get(COMMAND_ENV, "").strip() or "crawler"


def given_folders(data_dir: str | None, rules_dir: str | None) -> None:
    """Remember the ``--data-dir`` and ``--rules-dir`` this command line was given."""
    _given.clear()
    for option, value in (("--data-dir", data_dir), ("--rules-dir", rules_dir)):
        if value:
            _given.extend((option, shlex.quote(value)))


def suggest(arguments: str) -> str:
    """A command to run next, the way this one was run: ``crawler --data-dir D dead list --job J``."""
    return " ".join([command_name(), *_given, arguments])
