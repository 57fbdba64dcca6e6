"""Command-line options shared by the commands: number types with clear errors, the fetch limits, and
``-s NAME=VALUE``."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from crawler import settings as defaults
from crawler.cli.terminal import tell
from crawler.commandline import command_name
from crawler.errors import InputError

__all__ = [
    "Age",
    "add_fetch_options",
    "add_set_option",
    "check_window",
    "data_folder",
    "known_settings",
    "no_rules_problem",
    "non_negative_int",
    "port_number",
    "positive_float",
    "positive_int",
    "resolve_ages",
    "rules_folder",
    "rules_in",
    "settings_from",
    "utc_stamp",
]

# Settings that are a number of seconds (or other units) or a factor: any number, even where the default
# is a whole one.
_DURATION_RE = re.compile(r"(SECONDS|TIMEOUT|DELAY|HOURS|DAYS|FACTOR|RATE|_MS)$")
# How a yes/no setting may be written on the command line.
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not (number > 0 and math.isfinite(number)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return number


def positive_int(value: str) -> int:
    number = non_negative_int(value)
    if number == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number


def non_negative_int(value: str) -> int:
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return number


def port_number(value: str) -> int:
    """A TCP port to listen on; 0 asks the system for a free one."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a port: expected a whole number from 0 to 65535"
            " (0 lets the system pick a free one)"
        )
    return number


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``-s NAME=VALUE`` (repeatable): a setting of crawler/settings.py overridden, as ``scrapy crawl -s``."""
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a setting of crawler/settings.py, as `scrapy crawl -s` does: -s LEASE_SECONDS=10",
    )


def settings_from(pairs: list[str]) -> dict[str, Any]:
    """The ``-s`` pairs as settings: each name a setting of :mod:`crawler.settings`, of the environment's
    (:mod:`crawler.config`) or of Scrapy's, each value of its default's type; :class:`InputError` names
    the pair, says what was expected and suggests the name meant."""
    known = known_settings()
    overrides: dict[str, Any] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            raise InputError(f"-s {pair!r}: expected NAME=VALUE, e.g. -s LEASE_SECONDS=30")
        if name not in known:
            close = difflib.get_close_matches(name.upper(), known, n=1)
            hint = f"; did you mean {close[0]}?" if close else " (see crawler/settings.py)"
            raise InputError(f"-s {pair!r}: no setting is named {name}{hint}")
        overrides[name] = _typed(pair, name, value, known[name])
    return overrides


def known_settings() -> dict[str, Any]:
    """Every setting a crawl knows, with its default: Scrapy's, then ours, then the environment's."""
    from scrapy.settings import default_settings  # noqa: PLC0415 - Scrapy only when a crawl is set up

    from crawler.config import Config  # noqa: PLC0415 - the same

    known = {name: getattr(default_settings, name) for name in dir(default_settings) if name.isupper()}
    known.update({name: getattr(defaults, name) for name in dir(defaults) if name.isupper()})
    known.update(Config().values())
    return known


def _typed(pair: str, name: str, value: str, default: Any) -> Any:
    """``value`` as a value of ``default``'s type (a string where the default says nothing); a duration or
    a factor takes any number whatever its default (Scrapy's ``DOWNLOAD_DELAY = 0``)."""
    text = value.strip()
    if isinstance(default, bool):
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        expected = "true or false (also 1/0, yes/no, on/off)"
    elif isinstance(default, int) and not _DURATION_RE.search(name):
        try:
            return int(text.replace("_", ""))
        except ValueError:
            expected = "a whole number"
    elif isinstance(default, float | int):
        try:
            number = float(text)
        except ValueError:
            expected = "a number"
        else:
            if math.isfinite(number):
                return number
            expected = "a finite number"
    elif isinstance(default, dict):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        expected = 'a JSON object, e.g. {"name": 1}'
    else:
        return value
    raise InputError(f"-s {pair!r}: {value!r} is not {expected} (the default is {default!r})")


def add_fetch_options(parser: argparse.ArgumentParser) -> None:
    """``--timeout`` and ``--max-bytes`` of a command that may fetch its page."""
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=float(defaults.DOWNLOAD_TIMEOUT),
        metavar="SECONDS",
        help=f"time limit of a request, its body included (default: {defaults.DOWNLOAD_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-bytes",
        type=positive_int,
        default=defaults.DOWNLOAD_MAXSIZE,
        metavar="N",
        help=f"size limit of the page, after decompression (default: {defaults.DOWNLOAD_MAXSIZE:,})",
    )


def data_folder(directory: Path) -> Path:
    """``directory`` when it is a folder; :class:`InputError` otherwise, for a command that only reads
    what crawls left there (a misspelt ``--data-dir`` must not look like an empty one)."""
    if directory.is_dir():
        return directory
    problem = (
        f"the data folder {str(directory)!r} is a file, not a folder"
        if directory.exists()
        else f"no data folder {str(directory)!r}: nothing was crawled there"
    )
    raise InputError(f"{problem} (give the folder of your crawls with --data-dir DIR)")


def rules_folder(directory: Path, given: str = "with --rules-dir DIR (or CRAWLER_RULES_DIR)") -> Path:
    """``directory`` when it is a folder; :class:`InputError` saying how to get one otherwise (checked
    before a command starts Redis or creates its data folder). ``given``: how the command is given a
    rules folder."""
    if directory.is_dir():
        return directory
    problem = "is not a folder" if directory.exists() else "does not exist"
    raise InputError(
        f"the rules folder {str(directory)!r} {problem}: give the folder of your site rules {given}, one"
        f" YAML file per site (docs/rules.md); or see the bundled demo sites crawled: `{command_name()} demo`"
    )


def rules_in(directory: Path) -> bool:
    """Whether the rules folder ``directory`` has a rule file (``<site>.yaml``) to serve or schedule."""
    from crawler.rules import rule_sites  # noqa: PLC0415 - crawler.rules loads lxml and yaml: `--help` stays light

    return bool(rule_sites(directory))


def no_rules_problem(directory: Path, meaning: str) -> str:
    """An empty rules folder ``directory``, what it means to the command (``meaning``), and how to give the
    folder that has the rules."""
    return (
        f"no rule files in {str(directory)!r}: {meaning}; give the folder of your site rules with --rules-dir"
        " DIR (or CRAWLER_RULES_DIR), one <site>.yaml file per site (docs/rules.md)"
    )


def utc_stamp(moment: datetime) -> str:
    """``moment`` in UTC to the second, as the commands say a ``--since`` or ``--until`` they read:
    ``2026-11-20T08:00:00Z``."""
    return f"{moment.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def check_window(
    since: datetime | None, until: datetime | None, *, option: str = "--", happened: str = "first seen"
) -> None:
    """InputError when ``--since`` is not before ``--until``: no article is first seen in that window.
    ``option``: the options' names before ``since`` and ``until`` (``--published-``), and ``happened``
    what their window is of (``published``)."""
    if since is None or until is None or since < until:
        return
    first, last = f"{option}since", f"{option}until"
    raise InputError(
        f"{first} {utc_stamp(since)} is not before {last} {utc_stamp(until)}: no article can be {happened}"
        f" at or after {first} and before {last}; give the earlier time to {first}"
    )


@dataclass(frozen=True, slots=True)
class Age:
    """A time given as an age (``--since 10m``): so long before now, now read by :func:`resolve_ages` by
    the clock that articles' ``first_seen`` follows."""

    given: str
    length: timedelta

    def before(self, now: float) -> datetime:
        """The time ``length`` before ``now`` (epoch seconds); the year 1 for an age that reaches past it
        from ``now`` though not from the clock the parser checked it by (this machine's)."""
        try:
            return datetime.fromtimestamp(now, UTC) - self.length
        except OverflowError:
            return datetime.min.replace(tzinfo=UTC)


def resolve_ages(args: argparse.Namespace, redis_url: str | None, *, needs_redis: bool) -> None:
    """The ages among ``args``'s options (``--since 10m``) made the times they are, so long before now by
    the clock that articles' ``first_seen`` follows: Redis's, one ``TIME`` read when ``redis_url``
    (``REDIS_URL``) names a Redis; without it, this machine's, which is the clock of the embedded Redis
    (it runs here). A Redis that does not answer is an error when the command ``needs_redis``; else the
    ages are counted from this machine's clock, and a warning says so."""
    ages = {name: value for name, value in vars(args).items() if isinstance(value, Age)}
    if not ages:
        return
    now = time.time()
    if redis_url:
        # Redis's modules, only when an age is given with a Redis to read the time of.
        import redis  # noqa: PLC0415

        from crawler.errors import redacted  # noqa: PLC0415
        from crawler.redisio.clock import shared_now  # noqa: PLC0415
        from crawler.redisio.connection import RedisUnavailableError, connect  # noqa: PLC0415

        try:
            connect(redis_url, reads_only=True).close()  # reads TIME: shared_now is Redis's clock
            now = shared_now()
        except (RedisUnavailableError, redis.RedisError) as exc:
            if needs_redis:
                raise
            given = ", ".join(f"--{name.replace('_', '-')} {age.given}" for name, age in ages.items())
            said = exc if isinstance(exc, RedisUnavailableError) else f"Redis at {redacted(redis_url)}: {exc}"
            tell(
                "warning",
                f"{given} counted back from this machine's clock, not from Redis's (REDIS_URL), which first"
                f" seen follows: {said}; a clock off by minutes moves the window as much",
            )
    for name, age in ages.items():
        setattr(args, name, age.before(now))
