"""Command-line options shared by the commands: number types with clear errors, the fetch limits, and
``-s NAME=VALUE``."""

from __future__ import annotations

import argparse
import math

from crawler.errors import InputError
from crawler.worker.fetch import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT

__all__ = [
    "add_fetch_options",
    "add_set_option",
    "non_negative_int",
    "positive_float",
    "positive_int",
    "settings_from",
]


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


def settings_from(pairs: list[str]) -> dict[str, str]:
    """The ``-s`` pairs as settings."""
    overrides: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.isupper():
            raise InputError(f"--set {pair!r}: expected NAME=VALUE with an upper-case setting name")
        overrides[name] = value
    return overrides


def add_fetch_options(parser: argparse.ArgumentParser) -> None:
    """``--timeout`` and ``--max-bytes`` of a command that may fetch its page."""
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of each request: connection, headers and body (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"size limit of the page, after decompression (default: {DEFAULT_MAX_BYTES:,})",
    )
