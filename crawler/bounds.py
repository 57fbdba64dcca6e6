"""The range a numeric setting takes, declared beside it in :mod:`crawler.settings` as its annotation
(``BAN_MIN_SHARE: Annotated[float, Range("a share", 0, 1)] = 0.5``), read by :func:`declared_ranges`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, get_type_hints

__all__ = ["Range", "Seconds", "SecondsAbove0", "declared_ranges"]


@dataclass(frozen=True)
class Range:
    """The finite values a numeric setting takes, ``unit`` saying what it counts: from ``lowest`` to
    ``highest``; ``above`` refuses ``lowest`` itself, ``below`` refuses ``highest`` itself; ``why`` says
    what sets the range, when it is not the setting's meaning."""

    unit: str
    lowest: float = -math.inf
    highest: float = math.inf
    above: bool = False
    below: bool = False
    why: str = ""

    def admits(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        over_lowest = value > self.lowest if self.above else value >= self.lowest
        under_highest = value < self.highest if self.below else value <= self.highest
        return over_lowest and under_highest

    def __str__(self) -> str:
        """The range in words: ``seconds above 0``, ``a share from 0 to 1``, ``a number of tries, 1 or
        more``, and ``why`` in parentheses."""
        return f"{self._words()} ({self.why})" if self.why else self._words()

    def _words(self) -> str:
        if self.lowest == -math.inf and self.highest == math.inf:
            return f"{self.unit}, any number"
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


def declared_ranges(module: ModuleType) -> dict[str, Range]:
    """The :class:`Range` each setting of ``module`` declares in its annotation, by name."""
    ranges: dict[str, Range] = {}
    for name, hint in get_type_hints(module, include_extras=True).items():
        for note in getattr(hint, "__metadata__", ()):
            if isinstance(note, Range):
                ranges[name] = note
    return ranges
