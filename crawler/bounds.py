"""The range a numeric setting takes, declared beside it in :mod:`crawler.settings` as its annotation
(``BAN_MIN_SHARE: Annotated[float, Range("a share", 0, 1)] = 0.5``), read by :func:`declared_ranges`."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType, UnionType
from typing import Annotated, Any, get_args, get_type_hints

__all__ = ["Range", "Seconds", "SecondsAbove0", "checked_setting", "declared_ranges", "setting_in_range"]


@dataclass(frozen=True)
class Range:
    """The finite values a numeric setting takes, ``unit`` saying what it counts: from ``lowest`` to
    ``highest``; ``above`` refuses ``lowest`` itself, ``below`` refuses ``highest`` itself; ``why`` says
    what sets the range, when it is not the setting's meaning; ``whole``: whole numbers only (the setting's
    annotation is ``int``, :func:`declared_ranges` sets it)."""

    unit: str
    lowest: float = -math.inf
    highest: float = math.inf
    above: bool = False
    below: bool = False
    why: str = ""
    whole: bool = False

    def admits(self, value: float) -> bool:
        if not math.isfinite(value) or (self.whole and not float(value).is_integer()):
            return False
        over_lowest = value > self.lowest if self.above else value >= self.lowest
        under_highest = value < self.highest if self.below else value <= self.highest
        return over_lowest and under_highest

    def __str__(self) -> str:
        """The range in words: ``seconds above 0``, ``a share from 0 to 1``, ``a number of tries, 1 or
        more``, and in parentheses ``a whole number`` when it is one and ``why``."""
        unbounded = self.lowest == -math.inf and self.highest == math.inf
        whole = "a whole number" if self.whole and not unbounded else ""
        notes = "; ".join(note for note in (whole, self.why) if note)
        return f"{self._words()} ({notes})" if notes else self._words()

    def _words(self) -> str:
        if self.lowest == -math.inf and self.highest == math.inf:
            return f"{self.unit}, any {'whole ' if self.whole else ''}number"
        if self.highest == math.inf:
            if self.above:
                return f"{self.unit} above {self.lowest:.15g}"
            return f"{self.unit}, {self.lowest:.15g} or more"
        if not self.above and not self.below:
            return f"{self.unit} from {self.lowest:.15g} to {self.highest:.15g}"
        lowest = f"above {self.lowest:.15g}" if self.above else f"{self.lowest:.15g} or more"
        highest = f"below {self.highest:.15g}" if self.below else f"{self.highest:.15g} at most"
        return f"{self.unit}{' ' if self.above else ', '}{lowest} and {highest}"


# The ranges of most durations.
Seconds = Annotated[float, Range("seconds", 0)]
SecondsAbove0 = Annotated[float, Range("seconds", 0, above=True)]


@functools.cache
def declared_ranges(module: ModuleType) -> Mapping[str, Range]:
    """The :class:`Range` each setting of ``module`` declares in its annotation, by name; ``whole`` when
    the annotation is ``int`` (or ``int | None``). Read once per module (``get_type_hints`` evaluates every
    annotation), for every component that checks a setting."""
    ranges: dict[str, Range] = {}
    for name, hint in get_type_hints(module, include_extras=True).items():
        for note in getattr(hint, "__metadata__", ()):
            if isinstance(note, Range):
                kind = hint.__origin__
                kinds = get_args(kind) if isinstance(kind, UnionType) else (kind,)
                ranges[name] = dataclasses.replace(note, whole=int in kinds)
    return MappingProxyType(ranges)


def checked_setting(
    name: str, value: object, taken: Range, *, default: object, error: type[Exception]
) -> float | None:
    """The setting ``name`` given as ``value`` (a number, or its text) as a number in the range ``taken``;
    None when it is not given (None or empty), for the caller's default. ``error`` (the caller's named
    exception) otherwise, saying the setting, the value, the range, the default (unless None) and the fix:
    the one wording of every check of a numeric setting (the store's, a crawl's)."""
    if value is None or value == "":
        return None
    number: float | None = None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            # A whole number's text as Scrapy's getint() reads it ("2.0" is none); a number as a float.
            number = float(int(value) if isinstance(value, str) and taken.whole else value)
        except (ValueError, OverflowError):  # OverflowError: a whole number past any float's range
            number = None
    if number is not None and taken.admits(number):
        return number
    known = "" if default is None else f" (the default is {default!r})"
    raise error(
        f"{name} is {value!r}: expected {taken}{known}; set {name} to a value in that range where it is given"
        f" (-s {name}=VALUE, the environment or crawler/settings.py), or leave it out to take the default"
    )


def setting_in_range(
    source: Mapping[str, Any], name: str, module: ModuleType, *, error: type[Exception]
) -> float:
    """The numeric setting ``name`` of ``source`` (a crawl's settings), checked against the range ``module``
    (crawler/settings.py) declares beside it (:func:`checked_setting`); its default in ``module`` when it is
    not given."""
    default: float = getattr(module, name)
    number = checked_setting(
        name, source.get(name), declared_ranges(module)[name], default=default, error=error
    )
    return default if number is None else number
