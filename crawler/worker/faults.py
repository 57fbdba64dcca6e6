"""``RepeatedFaults``: one fault that befalls many requests alike (a damaged week's file, a full disk: the
same store error for every article; a site that is down: the same connection refused for each of its
requests; a proxy benched again and again) is said once, not once a request. Its first request's line is
logged whole; the requests after it are logged at DEBUG and counted, and the next one at least
``REMINDER_SECONDS`` after the last line said is logged whole again, with how many requests the fault
befell in between; when the fault ends (what caused it was mended) or the worker stops, a fault with
requests still unsaid is said once more with their count. Every request is still dead-lettered or
deferred as before: only its log line is spared."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from crawler.commandline import counted
from crawler.worker.connection import REMINDER_SECONDS

__all__ = ["RepeatedFaults"]

logger = logging.getLogger(__name__)

# What names the request in a reason, not its fault: a URL, the store's "cannot write 3 articles (first
# URL)" of the batch (or the lone article) whose write failed, and a page's sizes ("3,456 bytes (at least
# 120 more ...)" of a server that sends a wrong Content-Length).
_VARYING = re.compile(r"\b\d+ articles? \(first [^)]*\)|https?://[^\s;,)]+|\b\d[\d,]*(?= bytes\b| more\b)")


@dataclass(slots=True)
class _Fault:
    """When a fault was last said, and the requests it befell since, unsaid, and the last one's reason."""

    said: float
    reason: str
    unsaid: int = 0


class RepeatedFaults:
    """See the module docstring. A fault is the ``reason`` of a dead letter or a deferral less what names
    a request (its URLs, and the store's "N articles (first URL)" of the write it failed in), under a
    ``what`` (what became of the request)."""

    def __init__(
        self,
        every: float = REMINDER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        noun: str = "request",
    ) -> None:
        self.every = every
        self._clock = clock
        # What a fault befalls, as its count says it: "12 more requests", "11 more times".
        self.noun = noun
        self._faults: dict[tuple[str, str], _Fault] = {}

    def said(self, what: str, reason: str, level: int) -> tuple[int, str]:
        """The level to log a request's fault at (``level`` when it is said, else DEBUG), and what to add
        to its line when said: the count of requests it befell since its last line (empty the first
        time, or when none)."""
        now = self._clock()
        key = (what, _VARYING.sub("...", reason))
        fault = self._faults.get(key)
        if fault is None:
            self._forget_quiet(now)
            self._faults[key] = _Fault(now, reason)
            return level, ""
        fault.reason = reason
        if now - fault.said < self.every:
            fault.unsaid += 1
            return logging.DEBUG, ""
        since = f" (and {self._since(fault, what, now)})" if fault.unsaid else ""
        fault.said, fault.unsaid = now, 0
        return level, since

    def said_first(self, what: str, reason: str, level: int, hint: Callable[[str], str]) -> tuple[int, str]:
        """:meth:`said`, the end of the fault's first line being ``hint(said)`` (how its next requests are
        said, ``said`` phrasing it from ``every``: ``said once a minute with a count``; a fault said for
        the first time has none to count)."""
        first = self.new(what, reason)
        level, since = self.said(what, reason, level)
        return level, hint(f"said {self._how_often()} with a count") if first else since

    def _how_often(self) -> str:
        return {60.0: "once a minute", 3600.0: "once an hour"}.get(self.every, f"every {self.every:g} s")

    def new(self, what: str, reason: str) -> bool:
        """True when the fault of ``reason`` under ``what`` was not said yet (:meth:`said` will say it
        whole, with no count)."""
        return (what, _VARYING.sub("...", reason)) not in self._faults

    def ended(self, what: str, reason: str, level: int = logging.WARNING, *, over: str = "") -> None:
        """The fault of ``reason`` under ``what`` is over (what caused it was mended): its requests not
        said yet are said with their count, and it is forgotten (if it comes back, its first request is
        said whole at once). With ``over`` (what ended it), that is said in any case, at INFO when no
        request is left unsaid, with their count after it when some are."""
        key = (what, _VARYING.sub("...", reason))
        fault = self._faults.pop(key, None)
        if fault is None:
            return
        if not over:
            self._say(what, fault, level, self._clock())
        elif fault.unsaid:
            logger.log(
                level, "%s: %s, the last: %s", over, self._since(fault, what, self._clock()), fault.reason
            )
        else:
            logger.info("%s", over)

    def close(self, level: int = logging.WARNING) -> None:
        """Say each fault whose last requests were not said, with their count."""
        now = self._clock()
        for (what, _), fault in self._faults.items():
            self._say(what, fault, level, now)
        self._faults.clear()

    def _say(self, what: str, fault: _Fault, level: int, now: float) -> None:
        if fault.unsaid:
            logger.log(level, "%s, the last: %s", self._since(fault, what, now), fault.reason)

    def _since(self, fault: _Fault, what: str, now: float) -> str:
        """``12 more requests <what> so in the 61 s since the last line``."""
        more = counted(fault.unsaid, f"more {self.noun}")
        return f"{more} {what} so in the {now - fault.said:.0f} s since the last line"

    def _forget_quiet(self, now: float) -> None:
        """Drop the faults said over ``every`` seconds ago with nothing unsaid: they befell no request
        since (their next request is a first one again)."""
        for key in [
            key for key, fault in self._faults.items() if not fault.unsaid and now - fault.said >= self.every
        ]:
            del self._faults[key]
