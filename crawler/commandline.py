"""The commands a message suggests, written the way the user runs ``crawler``: ``$CRAWLER_COMMAND``
(``./run.sh crawler``), else ``crawler``, with the ``--data-dir`` and ``--rules-dir`` the command line was
given. Every part may suggest one: the workers of a crawl run in the process of its command. Every part
writes a count the same way too: :func:`counted` (``1 page``, ``2 pages``), and the value meant of a
mistyped one: :func:`did_you_mean`. A part logs the good news that ends an outage it warned of (Redis
back), and what a stop asked for does (Ctrl-C), at INFO with ``extra=TOLD``: a command that crawls for
a person (``temp``, ``demo``) says that record as a note, where it leaves its other INFO records to the
log."""

from __future__ import annotations

import contextlib
import difflib
import ipaddress
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "COMMAND_ENV",
    "TOLD",
    "command_name",
    "counted",
    "did_you_mean",
    "given_folder",
    "given_folders",
    "pip_install",
    "suggest",
    "url_meant",
]

# How the user runs this command (``./run.sh crawler`` sets it), for the commands a message suggests.
COMMAND_ENV = "CRAWLER_COMMAND"

# The ``extra`` of an INFO log record a command that crawls for a person says too (docstring).
TOLD = {"told": True}

# The global folder options of this command line (``--data-dir``, ``--rules-dir``) and their values,
# repeated in the commands its messages suggest.
_given: dict[str, str] = {}


def command_name() -> str:
    """The command line that runs ``crawler`` here: ``$CRAWLER_COMMAND`` (``./run.sh crawler``), else
    ``crawler``."""
    return os.environ.get(COMMAND_ENV, "").strip() or "crawler"


def given_folders(data_dir: str | None, rules_dir: str | None) -> None:
    """Remember the ``--data-dir`` and ``--rules-dir`` this command line was given."""
    _given.clear()
    _given.update(
        {option: value for option, value in (("--data-dir", data_dir), ("--rules-dir", rules_dir)) if value}
    )


def given_folder(option: str) -> str | None:
    """The folder this command line gave ``option`` (``--rules-dir``), as given; None when none."""
    return _given.get(option)


def suggest(arguments: str) -> str:
    """A command to run next, the way this one was run: ``crawler --data-dir D dead list --job J``."""
    given = (f"{option} {shlex.quote(value)}" for option, value in _given.items())
    return " ".join([command_name(), *given, arguments])


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, else ``noun`` + ``s``) unless it is 1:
    ``1 page``, ``2 pages``, ``0 pages``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


# A host name (with a dot, or localhost) or an IP address, a port, a path: a URL typed without its scheme,
# which urlsplit reads as a path (`127.0.0.1:8631/x`) or as the scheme `localhost` (`localhost:8631/x`).
_WITHOUT_SCHEME_RE = re.compile(
    r"(?P<host>localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+|\[[0-9a-f:.]+\])(?::(?P<port>\d{1,5}))?(?:[/?#].*)?",
    re.IGNORECASE | re.DOTALL,
)


def url_meant(text: str) -> str | None:
    """The URL meant by ``text`` when it is a host and path typed without the scheme: http for a port, an
    IP address or localhost (a site on this machine or an intranet), else https; None for any other
    text."""
    typed = _WITHOUT_SCHEME_RE.fullmatch(text)
    if typed is None:
        return None
    host = typed["host"]
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        local = typed["port"] is not None or host == "localhost"
    else:
        local = True
    return f"{'http' if local else 'https'}://{text}"


def did_you_mean(value: str, choices: list[str], quote: Callable[[str], str] = repr) -> str:
    """The hint a message about a mistyped ``value`` ends with: ``; did you mean 'x'?`` naming the closest
    of the ``choices`` as ``quote`` writes it (a rule file's errors: ``"x"``), or empty when none is
    close."""
    close = difflib.get_close_matches(value, choices, n=1)
    return f"; did you mean {quote(close[0])}?" if close else ""


def span(seconds: float) -> str:
    """A duration as the status shows it: ``40s``, ``1m24s``, ``20m``, ``3h05m``."""
    if seconds < 3600:
        whole = round(seconds)
        minutes, rest = divmod(whole, 60)
        if not minutes:
            return f"{rest}s"
        return f"{minutes}m{rest:02d}s" if rest else f"{minutes}m"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


def pip_install(requirements: str) -> str:
    """The command that installs ``requirements`` into the Python running this one, with its own pip
    (``pip`` on the PATH may be another Python's: ./run.sh's is ``.venv/bin/python``), the interpreter named
    relative to the working folder when under it."""
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):
        python = python.relative_to(Path.cwd())
    return f"{shlex.quote(str(python))} -m pip install {requirements}"
