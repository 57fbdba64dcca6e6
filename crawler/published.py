"""A publication date as sites write it (ISO-8601, RFC 2822, year-first numeric dates, English month
names, Unix timestamps, the 12-hour and Chinese clocks) in ISO-8601, a time without a UTC offset read in the
site's zone when one is given: for the clean pipeline, feeds' entries and ``crawler rules try`` alike."""

from __future__ import annotations

import email.utils
import re
import time
from datetime import UTC, date, datetime, tzinfo

from crawler.isodates import read_iso

__all__ = ["in_zone", "published_date"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
# A time (10:31, 10.31, 10时31分; not the count 1.234), with its fraction of a second (dropped) and its
# UTC offset when the page gives one.
_TIME = (
    r"(?:[T\s,]*(?:at\s+)?(\d{1,2})[:：.时](\d{2})(?!\d)(?:[:：.分](\d{2})(?!\d)(?:\.\d+)?)?"
    r"(?:\s*(Z|(?:UTC|GMT)\s*[+-]\d{1,2}(?::?\d{2})?|[+-]\d{2}:?\d{2}|UTC|GMT)(?!\d))?)?"
)
# An offset after GMT or UTC, in hours alone too (GMT+8), which RFC 2822's parser reads as GMT.
_NAMED_OFFSET_RE = re.compile(r"(?:UTC|GMT)\s*[+-]\d")
# Year first with - / . or 年 月 日 (unambiguous); day-first and month-first numeric dates are left alone.
_NUMERIC_DATE_RE = re.compile(
    r"(?<!\d)(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})(?!\d)\s*日?" + _TIME
)
_MONTH_DAY_YEAR_RE = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b" + _TIME, re.IGNORECASE
)
_DAY_MONTH_YEAR_RE = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b" + _TIME, re.IGNORECASE
)
# A Unix timestamp, as APIs give dates: seconds (with a fraction, dropped) or milliseconds, 2001 to 2286.
_TIMESTAMP_RE = re.compile(r"(\d{10})(?:\.\d+)?|(\d{13})")
# How far past the time now a timestamp (or the date and hour its digits may read as) may count: a later
# one is no publication date but other digits (a date and hour without separators, 2026112010, counts to
# 2034).
_TIMESTAMP_AHEAD_SECONDS = 86_400
# A time of the 12-hour clock (2:05 PM, 10:31 p.m., 12:40pm), which the parsers below would read as the
# morning's.
_TWELVE_HOUR_RE = re.compile(
    r"(?<![\d:.])(\d{1,2})([:.]\d{2}(?:[:.]\d{2})?)\s*([ap])\.?\s?m\b\.?", re.IGNORECASE
)
# An hour with a dot or comma after it, whose dotted minutes (10.31) datetime.fromisoformat reads as a
# fraction of the hour's first second (10:00:00.31).
_HOUR_FRACTION_RE = re.compile(r"\d[T ]\d{2}[.,]\d")
# A time of the Chinese clock, whose word before it says the part of the day (下午2:05 is 14:05).
_CHINESE_CLOCK_RE = re.compile(r"(上午|早上|凌晨|中午|下午|晚上)\s*(\d{1,2})(?=[:：.时]\d{2})")
# The parts of the day whose hours before noon (or, at noon, before 11) are the afternoon's; 晚上 (the
# evening) at 12 is midnight, the next day's 00, so 24, no time of the date (left alone by _iso).
_AFTERNOON = {"下午": 12, "晚上": 13, "中午": 11}


def published_date(text: str, *, now: float | None = None, zone: tzinfo | None = None) -> str | None:
    """ISO-8601 form of a publication date, ``2026-11-20``, or ``2026-11-20T10:31:00`` (with the page's
    UTC offset when it gives one) when it has a time; None when no date is recognised. A time without a
    UTC offset is read in ``zone`` when given (the rule's ``timezone``) and written with the offset it has
    there (:func:`in_zone`); a date alone stays a date.

    Recognised: ISO-8601, RFC 2822 (``Fri, 20 Nov 2026 10:31:00 GMT``), year-first numeric dates
    (``2026/11/20``, ``2026.11.20 10:31``, ``2026年11月20日``) and English month names
    (``November 20, 2026``, ``20 Nov. 2026``), anywhere in the text. Day-first and month-first numeric
    dates (``21/11/2026``) are ambiguous and never read. A time may be dotted (``10.31``); one of the
    12-hour clock (``2:05 PM``, ``下午2:05``) is read as the 24-hour time it is; an impossible one
    (``25:99``) leaves the date alone. A Unix timestamp alone (``1763634660``, in milliseconds
    ``1763634660000``) is the UTC time it counts to, unless that is more than a day ahead of ``now`` (the
    time now by default). Ten digits alone that are a date and hour (``2026112010``) are that date and
    hour, unless more than a day ahead; digits that read both ways are the later of the two, the one
    nearer to the crawl, which reads new pages (``2024031510`` is 2024-03-15 10:00 until 2034-02-20, when
    it counts to then).
    """
    timestamp = _TIMESTAMP_RE.fullmatch(text.strip())
    if timestamp is not None:
        return _timestamp(timestamp, time.time() if now is None else now, zone)
    text = _TWELVE_HOUR_RE.sub(_twenty_four_hour, text)
    text = _CHINESE_CLOCK_RE.sub(_chinese_hour, text)
    moment = read_iso(text) if _HOUR_FRACTION_RE.search(text) is None else None
    if isinstance(moment, datetime):
        return in_zone(moment, zone).isoformat(timespec="seconds")
    if moment is not None:
        return moment.isoformat()
    if _NAMED_OFFSET_RE.search(text) is not None and (found := _date_in(text, zone)) is not None:
        return found
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return _date_in(text, zone)
    # A zone RFC 2822 does not know (GMT+0800) leaves the time without one: the text may say it all the same.
    if parsed.tzinfo is None:
        return _date_in(text, zone) or in_zone(parsed, zone).isoformat(timespec="seconds")
    return parsed.isoformat(timespec="seconds")


def in_zone(moment: datetime, zone: tzinfo | None) -> datetime:
    """``moment``, when it has no UTC offset, read in ``zone`` (without a zone, as it is). A wall time
    that a change of the clocks makes ambiguous is read as the zone's rules read it with ``fold`` 0, as
    java.time does: in the hour repeated when clocks go back (02:30 on 2026-10-25 in Europe/Berlin), the
    first of the two (``+02:00``); in the hour skipped when they go forward (02:30 on 2026-03-29), the
    time it is on the clocks after the change, an hour on (``03:30+02:00``): no clock showed 02:30."""
    if zone is None or moment.tzinfo is not None:
        return moment
    placed = moment.replace(tzinfo=zone)
    try:
        return placed.astimezone(UTC).astimezone(zone)
    except OverflowError:  # at the edge of the calendar (year 1, 9999) no datetime holds it in UTC
        return placed


def _timestamp(found: re.Match[str], now: float, zone: tzinfo | None) -> str | None:
    """The time a timestamp (:data:`_TIMESTAMP_RE`) counts to, or the date and hour its ten digits are
    (in ``zone``, else in UTC, and then written without an offset), whichever is later but not more than a
    day ahead of ``now`` (see :func:`published_date`)."""
    seconds, milliseconds = found.groups()
    latest = now + _TIMESTAMP_AHEAD_SECONDS
    moment = int(seconds) if seconds is not None else int(milliseconds) // 1000
    counted = datetime.fromtimestamp(moment, UTC) if moment <= latest else None
    # Milliseconds, or seconds with a fraction, are a timestamp only.
    hour = _date_and_hour(seconds, zone) if seconds == found.group() else None
    if hour is not None and hour.timestamp() <= latest and (counted is None or hour > counted):
        return (hour if zone is not None else hour.replace(tzinfo=None)).isoformat(timespec="seconds")
    return None if counted is None else counted.isoformat(timespec="seconds")


def _date_and_hour(digits: str, zone: tzinfo | None) -> datetime | None:
    """Ten digits as the date and hour they write (``2026112010``, 2026-11-20 10:00) in ``zone``, else in
    UTC; None when they write no such date or hour."""
    try:
        hour = datetime(int(digits[:4]), int(digits[4:6]), int(digits[6:8]), int(digits[8:]))
    except ValueError:
        return None
    return in_zone(hour, zone) if zone is not None else hour.replace(tzinfo=UTC)


def _twenty_four_hour(match: re.Match[str]) -> str:
    """A 12-hour time as the 24-hour time it is (``2:05 PM`` as ``14:05``); an hour out of 1-12 as it was."""
    hour = int(match.group(1))
    if not 1 <= hour <= 12:
        return match.group()
    return f"{hour % 12 + (12 if match.group(3).lower() == 'p' else 0):02d}{match.group(2)}"


def _chinese_hour(match: re.Match[str]) -> str:
    """The hour of a Chinese clock's time as the 24-hour hour it is (下午2 as 14, 上午12 as 00; 晚上12,
    the next day's, as 24)."""
    part, hour = match.group(1), int(match.group(2))
    if part in _AFTERNOON:
        hour += 12 if hour < _AFTERNOON[part] else 0
    elif hour == 12:
        hour = 0
    return f" {hour:02d}"


def _date_in(text: str, zone: tzinfo | None) -> str | None:
    """The first recognised date (and time, without a UTC offset read in ``zone``) inside ``text``,
    ISO-8601."""
    match = _NUMERIC_DATE_RE.search(text)
    if match is not None:
        year, month, day, hour, minute, second, offset = match.groups()
        return _iso(int(year), int(month), int(day), hour, minute, second, offset, zone)
    match = _MONTH_DAY_YEAR_RE.search(text)
    if match is not None:
        month_name, day, year, hour, minute, second, offset = match.groups()
        return _iso(int(year), _MONTHS[month_name.lower()], int(day), hour, minute, second, offset, zone)
    match = _DAY_MONTH_YEAR_RE.search(text)
    if match is not None:
        day, month_name, year, hour, minute, second, offset = match.groups()
        return _iso(int(year), _MONTHS[month_name.lower()], int(day), hour, minute, second, offset, zone)
    return None


def _iso(
    year: int,
    month: int,
    day: int,
    hour: str | None,
    minute: str | None,
    second: str | None,
    offset: str | None,
    default: tzinfo | None,
) -> str | None:
    """The date (and time, in its ``offset``, else in the ``default`` zone) in ISO-8601; the date alone
    when the time is impossible (25:99), None when the date is (2026-02-30)."""
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    if hour is None or minute is None:
        return found.isoformat()
    try:
        zone = None if offset is None else datetime.strptime(_utc_offset(offset), "%z").tzinfo
        moment = datetime(year, month, day, int(hour), int(minute), int(second or 0), tzinfo=zone)
    except ValueError:
        return found.isoformat()
    return in_zone(moment, default).isoformat(timespec="seconds")


def _utc_offset(zone: str) -> str:
    """A zone a date-time in a page's text ends with (``Z``, ``GMT``, ``UTC+05:30``, ``+0800``, ``GMT+8``)
    as a UTC offset ``strptime``'s ``%z`` reads."""
    offset = zone.upper().removeprefix("UTC").removeprefix("GMT").strip()
    if not offset or offset == "Z":
        return "+0000"
    hours, _, minutes = offset[1:].partition(":")
    if not minutes and len(hours) > 2:
        hours, minutes = hours[:-2], hours[-2:]
    return f"{offset[0]}{int(hours):02d}{minutes or '00'}"
