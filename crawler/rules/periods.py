"""The periods of a rule's schedule: ``every`` (``20m``, ``1h30m``) and 5-field ``cron`` expressions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from croniter import CroniterBadDateError, croniter

from crawler.commandline import counted
from crawler.rules.errors import shown

__all__ = ["EXPECTED_CRON", "EXPECTED_EVERY", "check_cron", "cron_after", "parse_every"]

_DURATION_RE = re.compile(r"(?:[0-9]+[smhd])+")
_DURATION_PART_RE = re.compile(r"([0-9]+)([smhd])")
_DURATION_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_CRON_NUMBER_RE = re.compile(r"[0-9]+")
_MONTHS = {
    name: number for number, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)
}
_WEEKDAYS = {name: number for number, name in enumerate("sun mon tue wed thu fri sat".split())}
# name, lowest, highest, names allowed for the values (0 and 7 are both Sunday)
_CRON_FIELDS: tuple[tuple[str, int, int, Mapping[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _WEEKDAYS),
)

# The moment from which check_cron asks croniter for an expression's next time: any would do (whether a
# day comes in a month is the same in every year, but for 29 February, which 2000 has).
_CRON_PROBE = datetime(2000, 1, 1, tzinfo=UTC)

# The longest period of a schedule: a year (a leap year's days). A longer one is a typo, a grab years away;
# one of millions of days put the next grab past the year 9999, which no date reaches (the scheduler failed
# to log the grab it queued, and `crawler status` to show it), and 10**9 days passed timedelta's limit.
_LONGEST_EVERY = timedelta(days=366)

EXPECTED_EVERY = (
    "a period such as 90s, 20m, 1h, 1d or 1h30m: units s, m, h, d, more than 0 in all, a year (366d) at most"
)
EXPECTED_CRON = (
    'a cron expression of 5 fields "minute hour day-of-month month day-of-week", e.g. "*/20 * * * *"'
)


def parse_every(text: str) -> timedelta:
    """The period of ``schedule.every``: ``"90s"``, ``"20m"``, ``"1h30m"``, ``"1d"``, up to
    a year; ``ValueError`` else."""
    compact = "".join(text.split()).lower()
    if not _DURATION_RE.fullmatch(compact):
        raise ValueError("not a period")
    seconds = sum(
        int(number) * _DURATION_SECONDS[unit] for number, unit in _DURATION_PART_RE.findall(compact)
    )
    if seconds == 0:
        raise ValueError("a period of 0")
    if seconds > _LONGEST_EVERY.total_seconds():
        raise ValueError("a period over a year (366d)")
    return timedelta(seconds=seconds)


def check_cron(expression: str) -> str:
    """``expression`` with single spaces (and a range of one value as that value, :func:`_check_cron_item`)
    when it is a valid 5-field cron expression; ``ValueError`` saying
    which field is wrong otherwise (numbers, ``*``, ranges ``a-b``, steps ``/n``, lists ``a,b``, and the
    names jan-dec and sun-sat), or that it names no time (``0 0 31 2 *``: croniter finds none, and the
    scheduler could not plan its grabs)."""
    fields = expression.split()
    if len(fields) != len(_CRON_FIELDS):
        raise ValueError(f"{counted(len(fields), 'field')} instead of 5")
    fields = [
        ",".join(_check_cron_item(item, name, low, high, names) for item in text.split(","))
        for text, (name, low, high, names) in zip(fields, _CRON_FIELDS, strict=True)
    ]
    expression = " ".join(fields)
    try:
        cron_after(expression, _CRON_PROBE.timestamp())
    except CroniterBadDateError:
        # Its days of month are read alone (its day of week "*"), and none comes in its months.
        raise ValueError(
            f"day of month {shown(fields[2])} comes in no month of {shown(fields[3])} (February has 29 days,"
            " April, June, September and November 30): it names no time"
        ) from None
    return expression


def cron_after(expression: str, moment: float) -> float:
    """The first time after ``moment`` (epoch seconds) that the cron ``expression`` names, in UTC. Its days
    are those of its day of month or of its day of week when both are restricted (``0 0 1 * mon``: the 1st
    and every Monday), and those of both when either starts with ``*`` (``0 0 */2 * 1-5``: the odd days
    that are weekdays), as cron reads them (Vixie cron, cronie); croniter's default, either in both
    cases, named every weekday there."""
    day_or = not (expression.split()[2].startswith("*") or expression.split()[4].startswith("*"))
    start = datetime.fromtimestamp(moment, UTC)
    return float(croniter(expression, start, day_or=day_or).get_next(float))


def _check_cron_item(item: str, name: str, low: int, high: int, names: Mapping[str, int]) -> str:
    """``item`` of the field ``name``, a range of one value (``3-3``, ``3-3/2``) as that value: croniter
    (7.0) reads such a range as ``*``, every value (``0 3-3 * * *`` every hour, not at 03:00); and a step
    from one value in day of week, ``N/S``, as ``N-7/S`` (``1/2``: Mon, Wed, Fri, Sun; ``7/2``: Sunday),
    the ``N-highest/S`` croniter reads in the other fields (``5/15`` minutes: 5, 20, 35, 50). Cron (Vixie
    cron, cronie: steps after a range or ``*`` alone) rejects ``N/S``; it is read so rather than made an
    error of rules that load."""
    span, slash, step = item.partition("/")
    if slash and (not _CRON_NUMBER_RE.fullmatch(step) or not 1 <= int(step) <= high - low + 1):
        raise ValueError(f"{name} step {shown(step)} is not a number from 1 to {high - low + 1}")
    if span == "*":
        return item
    start, dash, end = span.partition("-")
    first = _cron_value(start, name, low, high, names)
    if not dash:
        if slash and names is _WEEKDAYS:
            # N/S runs to 7, Sunday, as cron's ranges of days of week do: croniter stops at 6 (and reads
            # 7/S as 0/S).
            return start if first == high else f"{first}-{high}/{step}"
        return item
    last = _cron_value(end, name, low, high, names)
    if last < first:
        raise ValueError(f"{name} range {shown(span)} ends before it starts")
    return start if last == first else item


def _cron_value(text: str, name: str, low: int, high: int, names: Mapping[str, int]) -> int:
    if _CRON_NUMBER_RE.fullmatch(text):
        value = int(text)
        if low <= value <= high:
            return value
        raise ValueError(f"{name} {value} is out of range {low}-{high}")
    if text.lower() in names:
        return names[text.lower()]
    value_shown = shown(text) if text else "an empty value"
    names_hint = f" or a name {', '.join(names)}" if names else ""
    raise ValueError(f"{name} {value_shown} is not a number {low}-{high}{names_hint}")
