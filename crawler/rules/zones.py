"""A rule's ``timezone``: the zone a site writes the times of its pages in, an IANA zone name
(``Asia/Shanghai``, read with :mod:`zoneinfo`) or a fixed UTC offset (``+08:00``)."""

from __future__ import annotations

import functools
import re
import zoneinfo
from datetime import timedelta, timezone, tzinfo

from crawler.commandline import did_you_mean, pip_install
from crawler.rules.errors import shown

__all__ = ["EXPECTED_ZONE", "site_zone", "zone_hint", "zone_name"]

EXPECTED_ZONE = (
    "an IANA time zone name such as Asia/Shanghai, Europe/Berlin or America/New_York, or a fixed UTC offset"
    " such as +08:00 (quoted)"
)
# A fixed UTC offset: +08:00, +0800, -05:30.
_OFFSET_RE = re.compile(r"([+-])(\d{2}):?(\d{2})")
# The widest offsets any place keeps (UTC-12:00, UTC+14:00 on the Line Islands): a wider one is a typo.
_MAX_OFFSET = timedelta(hours=14)
# Names of the zone database that name no place's zone: the machine's own zone (another on each
# machine that reads the rule), the rules file of POSIX TZ strings, and tzdata's placeholder.
_NO_SITE_ZONE = frozenset({"localtime", "posixrules", "Factory"})


def site_zone(name: str) -> tzinfo | None:
    """The zone ``name`` names, a fixed offset (``+08:00``, ``-0530``) or an IANA zone of this machine's
    zone database (``Asia/Shanghai``); None when it names none."""
    offset = _OFFSET_RE.fullmatch(name)
    if offset is not None:
        sign, hours, minutes = offset.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        if int(minutes) >= 60 or delta > _MAX_OFFSET:
            return None
        return timezone(-delta if sign == "-" else delta)
    if name in _NO_SITE_ZONE:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def zone_hint(name: str) -> str:
    """What a message on ``name``, which names no zone, ends with: the closest zone name (``; did you mean
    "Asia/Shanghai"?``, case aside), or, on a machine without a zone database, how to install one; for
    ``localtime`` (a zone of the database, the machine's own), why a rule cannot use it."""
    if name.strip().casefold() == "localtime":
        return (
            " here: it names the zone of each machine that reads the rule, one another on each; give the zone"
            " the site writes its times in"
        )
    names = _zone_names()
    if not names:
        return (
            f"; this machine has no time zone database: install the tzdata package: {pip_install('tzdata')}"
        )
    folded = {known.casefold(): known for known in names}
    if name.strip().casefold() in folded:
        return f"; did you mean {shown(folded[name.strip().casefold()])}?"
    return did_you_mean(name, sorted(names), quote=shown)


def zone_name(zone: tzinfo) -> str:
    """``zone`` as a rule names it: ``Asia/Shanghai``, ``+08:00``."""
    if isinstance(zone, zoneinfo.ZoneInfo):
        return zone.key
    offset = zone.utcoffset(None) or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(offset) // timedelta(minutes=1)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


@functools.cache
def _zone_names() -> frozenset[str]:
    """The zone names of this machine's zone database (or the tzdata package), less those of no place."""
    return frozenset(zoneinfo.available_timezones() - _NO_SITE_ZONE)
