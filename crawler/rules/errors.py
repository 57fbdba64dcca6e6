"""The error of the rules domain: :class:`RuleError` names the file, the key path, the bad value and the
fix; :class:`RuleErrors` gathers every error of one file."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Final

from crawler.commandline import counted
from crawler.errors import EXIT_FETCH, CrawlerError

__all__ = ["YAML_UNREADABLE_VALUE", "RuleError", "RuleErrors", "files_with_errors", "shown"]

# What PyYAML's safe constructors raise at a value its tag cannot read: ValueError (2026-02-30, which YAML
# resolves as a date; !!int ten), LookupError (!!int with no value, !!bool maybe), AttributeError
# (!!timestamp x).
YAML_UNREADABLE_VALUE: Final = (ValueError, LookupError, AttributeError)


class RuleError(CrawlerError):
    """A rule file that cannot be used, or a value in it: names the file, the key path, the value, the fix.

    ``key`` is the key path (``article.fields.title.xpath[0]``), or ``line L, column C`` where the file is no
    YAML at all, or empty for problems of the whole file.
    """

    exit_code = EXIT_FETCH

    def __init__(self, file: str, key: str, problem: str, expected: str | None = None) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        self.expected = expected
        where = f"{file}: {key}: " if key else f"{file}: "
        super().__init__(where + problem + (f" (expected {expected})" if expected else ""))


class RuleErrors(RuleError):
    """Every error of one rule file (``str()`` gives one line per error)."""

    def __init__(self, file: str, errors: Sequence[RuleError]) -> None:
        self.errors = tuple(errors)
        count = len(self.errors)
        super().__init__(file, "", f"{counted(count, 'error')} in this rule file")

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


def files_with_errors(errors: Iterable[RuleError]) -> tuple[str, ...]:
    """The files of ``errors``, each once, in the order of the errors."""
    return tuple(dict.fromkeys(error.file for error in errors))


def shown(value: str, limit: int | None = 120) -> str:
    """A string as it is shown in messages: double-quoted, escaped, cut after ``limit`` characters (None:
    never, for a value the reader is to type, such as a path)."""
    if limit is not None and len(value) > limit:
        value = value[: limit - 1] + "…"
    return json.dumps(value, ensure_ascii=False)
