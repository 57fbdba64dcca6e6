"""ISO-8601 dates and date-times read as Python's ``fromisoformat`` reads them, without its misreading of
a date's UTC offset as a time (for sitemaps' dates and pages' publication dates alike)."""

from __future__ import annotations

import re
from datetime import date, datetime

__all__ = ["read_iso"]

# An XML Schema date with its zone and no time (2026-11-20+08:00, or written short: +0800, +08, z).
_DATE_WITH_ZONE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[Zz]|[+-]\d{2}(?::?\d{2})?)")
# A date followed by anything but the T or space before a time, which datetime.fromisoformat takes as the
# separator all the same: it would read an XML Schema date's UTC offset (2026-11-20+08:00) as the time 08:00.
_NOT_A_TIME_AFTER_RE = re.compile(r"\d{4}-\d{2}-\d{2}[^Tt ]")


def read_iso(text: str) -> datetime | date | None:
    """``text`` as an ISO-8601 date (``2026-11-20``; with its zone, ``2026-11-20+08:00``, the date alone: no
    time to apply it to) or date-time (``2026-11-20T10:31:00+08:00``, its zone kept when it gives one, the
    date and time separated by T or a space); None when it is neither."""
    zoned = _DATE_WITH_ZONE_RE.fullmatch(text)
    try:
        return date.fromisoformat(zoned.group(1) if zoned else text)
    except ValueError:
        pass
    if _NOT_A_TIME_AFTER_RE.match(text) is not None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
