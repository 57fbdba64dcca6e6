"""A rule's compiled expressions: regular expressions bounded in time (:class:`RuleRegex`) and XPath 1.0
checked at load time with EXSLT regular expressions off (:class:`RuleXPath`)."""

from __future__ import annotations

import logging
import math
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import lxml.html
import regex  # type: ignore[import-untyped, unused-ignore]
from lxml import etree

from crawler.commandline import counted
from crawler.rules.errors import RuleError
from crawler.rules.errors import shown as _shown

__all__ = [
    "EXPECTED_NODES_XPATH",
    "EXPECTED_REGEX",
    "EXPECTED_VALUE_XPATH",
    "EXPECTED_XPATH",
    "REGEX_TIMEOUT",
    "RegexBudget",
    "RuleRegex",
    "RuleXPath",
]

logger = logging.getLogger(__name__)
# Seconds between two lines of a regex that keeps running out of time (a pattern that backtracks on every
# page of its site): its first time said whole, then one line a minute with how many more, as a worker
# says a fault that befalls many requests (crawler.worker.faults).
TIMEOUT_REMINDER_SECONDS = 60.0

# Seconds one search of a rule's regular expression may take; past it the search counts as no match.
REGEX_TIMEOUT: Final = 0.2

# lxml resolves namespace prefixes, functions and variables only when it evaluates them, and a predicate
# only for the nodes it is tried on; so every XPath is also scanned (_xpath_problem) and run once on this
# page at load time, and a prefix (EXSLT's re:), an unknown function, a wrong number of arguments or a
# variable is a load error wherever it stands in the expression.
_PROBE_PAGE = lxml.html.document_fromstring(
    "<html><head><title>t</title><base href='http://probe.invalid/'></head>"
    "<body><div><a href='/a'>a</a><p>p</p></div></body></html>"
)

# XPath 1.0 functions (all that lxml offers with no extension) and node tests: name -> fewest, most arguments.
_XPATH_FUNCTIONS: Mapping[str, tuple[int, int | None]] = {
    **dict.fromkeys(("last", "position", "true", "false"), (0, 0)),
    **dict.fromkeys(("local-name", "namespace-uri", "name", "string", "string-length", "number"), (0, 1)),
    "normalize-space": (0, 1),
    **dict.fromkeys(("count", "id", "boolean", "not", "lang", "sum", "floor", "ceiling", "round"), (1, 1)),
    **dict.fromkeys(("starts-with", "contains", "substring-before", "substring-after"), (2, 2)),
    "concat": (2, None),
    "substring": (2, 3),
    "translate": (3, 3),
    **dict.fromkeys(("node", "text", "comment"), (0, 0)),
    "processing-instruction": (0, 1),
}
_XPATH_OPERATOR_NAMES = frozenset({"and", "or", "div", "mod"})
# XPath 1.0 tokens, enough to tell names, function calls, variables and prefixes outside string literals.
_XPATH_TOKEN_RE = re.compile(
    r"""(?P<literal>"[^"]*"|'[^']*')"""
    r"|(?P<variable>\$[^\W\d][\w.-]*(?::[^\W\d][\w.-]*)?)"
    r"|(?P<name>[^\W\d][\w.-]*(?::(?:[^\W\d][\w.-]*|\*))?)"
    r"|(?P<space>\s+)"
    r"|(?P<other>::|.)",
    re.DOTALL,
)

# A CSS selector's compound step (h1.headline, div#main, .lead) where an XPath goes: XPath has no # and no
# .class; its names may hold a dot, but HTML's element names never do. Found outside string literals, and
# not in an attribute's name (@data.x) or after an axis (attribute::x.y) or a prefix.
_CSS_STEP_RE = re.compile(r"(?<![\w.@:$-])(?:[A-Za-z_*][\w-]*)?(?:[.#][A-Za-z_-][\w-]*)+")
_CSS_PART_RE = re.compile(r"([.#]?)([A-Za-z_*-][\w-]*)")
_CSS_COMBINATOR_RE = re.compile(r"\s*>\s*|\s+")
_XPATH_LITERAL_RE = re.compile(r""""[^"]*"|'[^']*'""")

EXPECTED_XPATH = "an XPath 1.0 expression"
EXPECTED_REGEX = "a regular expression in the syntax of the Python regex module"
EXPECTED_NODES_XPATH = "an XPath selecting elements or href strings, e.g. //ul[@class='news'] or //a/@href"
EXPECTED_VALUE_XPATH = (
    "an XPath selecting elements, attributes or text, or giving a string or a number, e.g."
    " //div[@class='story']/p or //time/@datetime: a test goes inside brackets"
)


class RegexBudget:
    """The time a rule's regular expressions may take on one page, all their searches together
    (``RULES_REGEX_PAGE_SECONDS``): a search gets what is left of it, at most its own limit, and once it
    is spent the searches left are skipped (counted in ``skipped``), so a pattern that backtracks on every
    link costs a page about this long, not one limit per link. Only the searches' own time is spent: not
    the page's other work (the URLs of a 40,000-entry sitemap took 0.8 s CPU to read, their searches
    0.07 s), nor the reactor's between two batches of it."""

    __slots__ = ("_clock", "_left", "skipped")

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._left = seconds
        self.skipped = 0

    def left(self) -> float:
        """Seconds left for the page's searches."""
        return self._left

    def now(self) -> float:
        """The budget's clock, to time a search with (:meth:`spend`)."""
        return self._clock()

    def spend(self, started: float) -> None:
        """Take the time since ``started`` (:meth:`now` before a search) out of what is left."""
        self._left -= self._clock() - started


class RuleRegex:
    """A rule's regular expression, compiled once with ``regex``; every search is bounded in time.

    A search that runs past ``timeout`` seconds (or past what is left of the page's
    :class:`RegexBudget`) is counted in ``timeouts``, logged, and treated as no match.

    ``spaces``, for text whose white space was collapsed (a field's ``strip: true``), holds the white
    space characters that text has (a space, and those of the field's ``join``): a run of white space the
    pattern writes (or escapes: ``\u3000``, ``\xa0``, ``\t``) with any other character, which the text
    never has (a no-break or ideographic space copied from the page), is read as the one space the text
    has in its place; brackets that leave such a character out (``[^\xa0]``) are a :class:`RuleError`.
    """

    __slots__ = ("_compiled", "_said", "_unsaid", "file", "key", "pattern", "timeout", "timeouts")

    def __init__(
        self,
        pattern: str,
        *,
        timeout: float = REGEX_TIMEOUT,
        file: str = "<rule>",
        key: str = "regex",
        spaces: str | None = None,
    ) -> None:
        try:
            self._compiled: regex.Pattern[str] = regex.compile(pattern)
            if spaces is not None and not self._compiled.flags & regex.VERBOSE:
                self._compiled = regex.compile(_collapsed_spaces(pattern, spaces, self._compiled.flags))
        except _SpacesLeftOut as exc:
            raise RuleError(file, key, exc.problem, exc.expected) from None
        except regex.error as exc:
            raise RuleError(
                file,
                key,
                f"invalid regex {_shown(pattern)}: {exc}",
                EXPECTED_REGEX + _repeat_hint(pattern),
            ) from None
        self.pattern = pattern
        self.timeout = timeout
        self.file = file
        self.key = key
        self.timeouts = 0
        # When a timeout was last said (monotonic), and those since, unsaid (TIMEOUT_REMINDER_SECONDS).
        self._said = -math.inf
        self._unsaid = 0

    def __repr__(self) -> str:
        return f"RuleRegex({self.pattern!r})"

    @property
    def groups(self) -> int:
        """How many capturing groups the expression has."""
        groups: int = self._compiled.groups
        return groups

    def search(self, text: str, budget: RegexBudget | None = None) -> regex.Match[str] | None:
        """The first match in ``text``; ``None`` when there is none or the time limit ran out."""
        found = self.matches(text, budget)
        return found if isinstance(found, regex.Match) else None

    def matches(self, text: str, budget: RegexBudget | None = None) -> regex.Match[str] | bool | None:
        """The first match in ``text``, False when there is none, None when it could not be told: the time
        limit ran out, or the page's ``budget`` was spent before (the search was skipped)."""
        timeout = self.timeout
        if budget is not None:
            left = budget.left()
            if left <= 0:
                budget.skipped += 1
                return None
            timeout = min(timeout, left)
        started = budget.now() if budget is not None else 0.0
        try:
            match = self._compiled.search(text, timeout=timeout)
        except TimeoutError:
            self._timed_out(text, timeout)
            return None
        finally:
            if budget is not None:
                budget.spend(started)
        return False if match is None else match

    def findall(self, text: str) -> list[Any]:
        """Every match in ``text`` (as ``re.findall``); ``[]`` when the time limit ran out."""
        try:
            found: list[Any] = self._compiled.findall(text, timeout=self.timeout)
        except TimeoutError:
            self._timed_out(text, self.timeout)
            return []
        return found

    def first(self, text: str, budget: RegexBudget | None = None) -> str | None:
        """The first group of the first match (the whole match when there is no group), or ``None``."""
        match = self.search(text, budget)
        if match is None:
            return None
        value: str | None = match.group(1 if self.groups else 0)
        return value

    def _timed_out(self, text: str, timeout: float) -> None:
        """Count a search that ran out of time; say it, or at most once every
        ``TIMEOUT_REMINDER_SECONDS`` with how many more did since the last line."""
        self.timeouts += 1
        now = time.monotonic()
        if now - self._said < TIMEOUT_REMINDER_SECONDS:
            self._unsaid += 1
            return
        more = (
            f" (and {counted(self._unsaid, 'more time')} in the {now - self._said:.0f} s since the last line)"
            if self._unsaid
            else ""
        )
        self._said, self._unsaid = now, 0
        logger.warning(
            "%s: %s: regex %s ran past %.3g s on %d characters: treated as no match%s",
            self.file,
            self.key,
            _shown(self.pattern),
            timeout,
            len(text),
            more,
        )


# A token of a regular expression: an escape (of a code point, a named character, or one character) or
# one character.
_REGEX_TOKEN_RE = re.compile(
    r"\\(?:x\{[0-9A-Fa-f]{1,8}\}|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|N\{[^}]*\}|.)|.", re.DOTALL
)
# A counted repeat ({2}, {1,3}, {,2}), with its least count, lazy (?) or possessive (+).
_COUNTED_REPEAT_RE = re.compile(r"\{(?:(\d+)(?:,\d*)?|,\d+)\}([?+]?)")
# The opening of a group the regex module reads as written: a comment, or a group its flags make verbose.
_VERBATIM_GROUP_RE = re.compile(r"\(\?(?:#|[A-Za-z0-9]*x[A-Za-z0-9]*(?:-[A-Za-z0-9]*)?:)")
# The opening of a group that sets or clears flags for what it holds (``(?i:``, ``(?-x:``, ``(?x-i:``).
_SCOPED_FLAGS_RE = re.compile(r"\(\?([A-Za-z0-9]*)(?:-([A-Za-z0-9]*))?:")
_ESCAPED_SPACES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v"}
# What white space collapsing (extractors.text.normalize_space) turns into a space besides str.isspace().
_INVISIBLE_SPACES = frozenset("\u200b\ufeff")
# Every character collapsing turns into a space (str.isspace() holds for none past the BMP), in order.
_WHITE_SPACE = "".join(
    char for char in map(chr, range(0x10000)) if char.isspace() or char in _INVISIBLE_SPACES
)


class _SpacesLeftOut(Exception):
    """Brackets of a regular expression that leave out a white space character collapsed text never has."""

    def __init__(self, problem: str, expected: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.expected = expected


def _collapsed_spaces(pattern: str, spaces: str, flags: int) -> str:
    """``pattern`` (compiled with ``flags``) with each run of white space it writes or escapes that holds a
    character other than ``spaces`` read as one space, a counted repeat after it too (``\\u3000{2}``; one
    that may be none as a space that may be missing). Brackets of white space alone are part of such a run
    (``[\\xa0]{2}``); other brackets that match such a character, named or in a range, match a space too,
    and with a counted repeat a space stands for as many of them as the count lacks (``[,\\xa0]{2}``
    matches a space alone). Raises :class:`_SpacesLeftOut` for negated brackets that match a space but
    leave such a character out (``[^\\xa0]``): the text has none to leave out."""
    matches = list(_REGEX_TOKEN_RE.finditer(pattern))
    tokens = [token.group() for token in matches]
    out: list[str] = []
    run: list[str] = []
    foreign = False
    position = 0
    while position < len(tokens):
        begin, token = position, tokens[position]
        char = _space_of(token)
        position += 1
        if token == "[":
            position = _class_end(pattern, matches, begin, flags) + 1
            token = "".join(tokens[begin:position])
            members = tokens[begin + 1 : position - 1]
            bracket = regex.compile(token, flags)
            others = [found for found in _WHITE_SPACE if found not in spaces and bracket.fullmatch(found)]
            if members[:1] == ["^"]:
                _refuse_leaving_out(pattern, bracket, members, spaces, flags)
            elif members and all(_space_of(member) is not None for member in members):
                run.append(token)
                foreign = foreign or bool(others)
                continue
            elif others:
                repeat = (
                    _COUNTED_REPEAT_RE.match(pattern, matches[position].start())
                    if position < len(tokens)
                    else None
                )
                token = _widened(token, repeat, spaced=bracket.fullmatch(" ") is not None)
                while (
                    repeat is not None and position < len(tokens) and matches[position].start() < repeat.end()
                ):
                    position += 1
        elif char is not None:
            run.append(token)
            foreign = foreign or char not in spaces
            continue
        elif token == "(" and (end := _verbatim_group_end(pattern, matches, begin, flags)) is not None:
            position = end + 1
            token = "".join(tokens[begin:position])
        counted = _COUNTED_REPEAT_RE.match(pattern, matches[begin].start()) if foreign else None
        if counted is not None:
            out.append(" ?" if len(run) == 1 and int(counted.group(1) or 0) == 0 else " ")
            run, foreign = [], False
            while position < len(tokens) and matches[position].start() < counted.end():
                position += 1
            continue
        out.append(" " if foreign else "".join(run))
        run, foreign = [], False
        out.append(token)
    out.append(" " if foreign else "".join(run))
    return "".join(out)


def _widened(bracket: str, repeat: re.Match[str] | None, *, spaced: bool) -> str:
    """``bracket``, which matches white space the text never has, as it matches the one space the text
    has in its place (as it is when it matches a space, ``spaced``); with its counted ``repeat`` when it
    has one: as many of the bracket or a space as counted, or fewer when they hold a space, which may
    stand for the characters the count lacks."""
    widened = bracket if spaced else f"(?:{bracket}| )"
    if repeat is None:
        return widened
    least = int(repeat.group(1) or 0)
    if least < 2:
        return widened + repeat.group()
    counted = widened + repeat.group().removesuffix(repeat.group(2))
    # A run shorter than the count: ``before`` characters of the bracket, a space, then up to as many of
    # the bracket or a space as keep it short.
    shorter = "|".join(
        _repeated(bracket, before) + " " + _repeated(widened, least - 2 - before, up_to=True)
        for before in range(least - 1)
    )
    if repeat.group(2) == "?":
        return f"(?:{shorter}|{counted}?)"
    return f"(?>{counted}|{shorter})" if repeat.group(2) == "+" else f"(?:{counted}|{shorter})"


def _repeated(item: str, count: int, *, up_to: bool = False) -> str:
    """``item`` repeated ``count`` times, or up to ``count`` times."""
    if count == 0:
        return ""
    if up_to:
        return f"{item}{{0,{count}}}"
    return item if count == 1 else f"{item}{{{count}}}"


def _refuse_leaving_out(
    pattern: str, bracket: regex.Pattern[str], members: Sequence[str], spaces: str, flags: int
) -> None:
    """Raises :class:`_SpacesLeftOut` when the negated brackets ``bracket`` of ``pattern`` (their
    ``members``, ``^`` first) match a space but leave out white space other than ``spaces``: the text has
    none to leave out, and leaving out a space instead would leave out every space the page had too."""
    if bracket.fullmatch(" ") is None:
        return
    left_out = [char for char in _WHITE_SPACE if char not in spaces and bracket.fullmatch(char) is None]
    if not left_out:
        return
    named = [char for char in map(_space_of, members) if char in left_out]
    fix = _leaving_out_a_space(members, spaces, flags) or "the brackets without that character, with a space"
    raise _SpacesLeftOut(
        f"{bracket.pattern} in regex {_shown(pattern)} leaves out {_named((named or left_out)[0])}, which the"
        " text it searches never has: strip: true makes every run of white space one space",
        f"{fix} to leave out that space (every space of the text), or strip: false to search the"
        " text as the page has it",
    )


def _leaving_out_a_space(members: Sequence[str], spaces: str, flags: int) -> str | None:
    """Negated brackets (their ``members``, ``^`` first) as they leave out a space instead of the white
    space characters other than ``spaces`` they name: each such character left out alone, a range's end
    moved past it (``[^ \\u3001-\\u303f]`` for ``[^\\u3000-\\u303f]``); None when that gives no valid
    brackets free of them."""
    out = ["[^ "]
    last = len(members) - 1
    for position, member in enumerate(members[1:], start=1):
        char = _space_of(member)
        if member in "]-" and position == 1:  # first in the brackets, itself: no longer first after the space
            out.append("\\" + member)
        elif char is None or char in spaces:
            out.append(member)
        elif position < last - 1 and members[position + 1] == "-":
            out.append(_escaped(ord(char) + 1))
        elif position > 2 and members[position - 1] == "-":
            out.append(_escaped(ord(char) - 1))
    out.append("]")
    fixed = "".join(out)
    if fixed == "[^ ]":
        return fixed
    try:
        regex.compile(fixed, flags)
        _collapsed_spaces(fixed, spaces, flags)
    except (regex.error, _SpacesLeftOut):
        return None
    return fixed


def _escaped(code: int) -> str:
    """A character as a regular expression escapes it (``\\x9f``, ``\\u3001``)."""
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _class_end(pattern: str, tokens: Sequence[re.Match[str]], start: int, flags: int) -> int:
    """The position of the ``]`` token that closes the brackets opened at ``tokens[start]`` in ``pattern``
    (compiled with ``flags``), as the regex module reads them: the first ``]`` with which they compile
    alone (a ``]`` first in them is itself, ``[[:space:]]`` and ``[\\]]`` hold one); past the tokens when
    none does."""
    for position in range(start + 1, len(tokens)):
        if tokens[position].group() != "]":
            continue
        try:
            regex.compile(pattern[tokens[start].start() : tokens[position].end()], flags)
        except regex.error:
            continue
        return position
    return len(tokens)


def _verbatim_group_end(pattern: str, tokens: Sequence[re.Match[str]], start: int, flags: int) -> int | None:
    """The position of the ``)`` token that closes the group opened at ``tokens[start]`` in ``pattern``
    (compiled with ``flags``) when the regex module reads the group as written, with no white space to
    read as one space: a comment (``(?#...)``, which ends at its first ``)``), or a group whose flags
    make it verbose (``(?x:...)``, where a ``#`` starts a comment up to the end of the line, but not in a
    group within it that turns verbose off, ``(?-x:...)``); past the tokens when none does; None for any
    other group."""
    opening = _VERBATIM_GROUP_RE.match(pattern, tokens[start].start())
    if opening is None:
        return None
    position = _past(tokens, start, opening.end())
    if opening.group() == "(?#":
        return _comment_end(tokens, position)
    # Whether each open group is verbose, the innermost last.
    verbose = [True]
    while position < len(tokens):
        token = tokens[position].group()
        if token == "[":
            position = _class_end(pattern, tokens, position, flags)
        elif token == "#" and verbose[-1]:
            while position < len(tokens) and tokens[position].group() != "\n":
                position += 1
        elif token == "(" and pattern.startswith("(?#", tokens[position].start()):
            position = _comment_end(tokens, _past(tokens, position, tokens[position].start() + 3))
        elif token == "(":
            scoped = _SCOPED_FLAGS_RE.match(pattern, tokens[position].start())
            if scoped is None:
                verbose.append(verbose[-1])
            else:
                verbose.append("x" in scoped.group(1) or (verbose[-1] and "x" not in (scoped.group(2) or "")))
                position = _past(tokens, position, scoped.end()) - 1
        elif token == ")":
            verbose.pop()
            if not verbose:
                return position
        position += 1
    return position


def _past(tokens: Sequence[re.Match[str]], position: int, end: int) -> int:
    """The position of the first token from ``tokens[position]`` on that starts at ``end`` or after."""
    while position < len(tokens) and tokens[position].start() < end:
        position += 1
    return position


def _comment_end(tokens: Sequence[re.Match[str]], position: int) -> int:
    """The position of the ``)`` that ends a comment group whose text starts at ``tokens[position]``."""
    while position < len(tokens) and tokens[position].group() != ")":
        position += 1
    return position


def _named(char: str) -> str:
    """A character as its code point and Unicode name (``U+00A0 NO-BREAK SPACE``)."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'white space')}"


def _space_of(token: str) -> str | None:
    """The white space character a token of a regular expression writes or escapes, else None."""
    if len(token) == 1:
        char = token
    elif token[1] in _ESCAPED_SPACES and len(token) == 2:
        char = _ESCAPED_SPACES[token[1]]
    elif token[1] == "N" and len(token) > 2:
        try:
            char = unicodedata.lookup(token[3:-1])
        except KeyError:
            return None
    elif token[1] in "xuU" and len(token) > 2:
        code = int(token[2:].strip("{}"), 16)
        char = chr(code) if code <= sys.maxunicode else ""
    else:
        char = token[1]
    return char if char.isspace() or char in _INVISIBLE_SPACES else None


def _repeat_hint(pattern: str) -> str:
    """What to write for a pattern that starts with a repeat (``*.html``, a glob; ``?print=1``, a
    literal ``?``), else nothing."""
    if pattern[:1] not in ("*", "?", "+"):
        return ""
    if pattern[0] == "*":
        glob = "".join({"*": ".*", "?": "."}.get(char, regex.escape(char)) for char in pattern)
        return f", not a glob: {glob}{'' if pattern.endswith('*') else '$'}"
    return f", with the {pattern[0]} escaped to match itself: \\{pattern}"


class RuleXPath:
    """A rule's XPath 1.0 expression, compiled once by lxml with EXSLT regular expressions off.

    ``nodes=True`` also requires a node-set result (elements, attributes, text), as links need.
    """

    __slots__ = ("_compiled", "errors", "expression", "file", "key")

    def __init__(
        self, expression: str, *, nodes: bool = False, file: str = "<rule>", key: str = "xpath"
    ) -> None:
        self.expression = expression
        self.file = file
        self.key = key
        self.errors = 0
        css = _css_problem(expression)
        if css is not None:
            raise RuleError(file, key, css[0], css[1])
        try:
            self._compiled = etree.XPath(expression, regexp=False, smart_strings=False)
            tokens = _xpath_tokens(expression)
            problem = _xpath_problem(tokens)
            if problem is not None:
                raise RuleError(file, key, f"invalid XPath {_shown(expression)}: {problem[0]}", problem[1])
            probe = self._compiled(_PROBE_PAGE)
        except etree.XPathError as exc:
            css = _css_names_problem(expression)
            if css is not None:
                raise RuleError(file, key, css[0], css[1]) from None
            raise RuleError(file, key, f"invalid XPath {_shown(expression)}: {exc}", EXPECTED_XPATH) from None
        if isinstance(probe, bool):
            # XPath 1.0 types are static: a comparison or a boolean function gives a yes/no on every page.
            raise RuleError(
                file,
                key,
                f"XPath {_shown(expression)} gives a boolean (true or false), not a part of the page:"
                " its top level is a comparison or a boolean function",
                EXPECTED_NODES_XPATH if nodes else EXPECTED_VALUE_XPATH,
            )
        if nodes and not isinstance(probe, list):
            kind = "a number" if isinstance(probe, float) else "a string"
            raise RuleError(file, key, f"XPath {_shown(expression)} gives {kind}", EXPECTED_NODES_XPATH)
        found = _path_problems(expression)
        if found is not None:
            raise RuleError(file, key, found[0], found[1])

    def __repr__(self) -> str:
        return f"RuleXPath({self.expression!r})"

    def __call__(self, root: etree._Element) -> list[Any]:
        """The expression's results on ``root`` as a list (a string, number or boolean alone in it)."""
        try:
            result = self._compiled(root)
        except etree.XPathError as exc:
            self.errors += 1
            logger.warning("%s: %s: XPath %s failed: %s", self.file, self.key, _shown(self.expression), exc)
            return []
        return result if isinstance(result, list) else [result]


def _css_problem(expression: str) -> tuple[str, str] | None:
    """(problem, expected) when ``expression`` has a CSS selector's step (``h1.headline``, ``div#main``),
    with the XPath to write instead: of the whole expression when it is a CSS selector of such steps and
    the combinators `` `` and ``>``, else of the step."""
    unquoted = _XPATH_LITERAL_RE.sub(lambda literal: " " * len(literal.group()), expression)
    step = _CSS_STEP_RE.search(unquoted)
    if step is None:
        return None
    selector = expression.strip()
    compounds = _CSS_COMBINATOR_RE.split(selector)
    if all(_CSS_PART_RE.sub("", compound) == "" for compound in compounds):
        separators = [
            "/" if found.group().strip() == ">" else "//" for found in _CSS_COMBINATOR_RE.finditer(selector)
        ]
        exact = simple = "//"
        place = "an XPath such as"
    else:
        selector = step.group()
        compounds, separators = [selector], []
        exact = simple = ""
        place = f"for the step {selector}, a step such as"
    for position, compound in enumerate(compounds):
        if position:
            exact += separators[position - 1]
            simple += separators[position - 1]
        tag, classes, ids = _css_parts(compound)
        ids_test = "".join(f"[@id='{name}']" for name in ids)
        exact += tag + "".join(_CLASS_TEST.format(name) for name in classes) + ids_test
        simple += tag + "".join(f"[@class='{name}']" for name in classes) + ids_test
    simpler = ""
    if exact != simple and all(len(_css_parts(compound)[1]) <= 1 for compound in compounds):
        simpler = f", or simpler {simple} when that class is the element's only one"
    return (
        f"CSS selector {_shown(selector)} in XPath {_shown(expression)}: XPath has no .class or #id",
        f"{place} {exact}{simpler}",
    )


def _css_names_problem(expression: str) -> tuple[str, str] | None:
    """(problem, expected) for an invalid XPath that is a CSS selector of element names and the
    combinators `` `` and ``>`` (``div p``, ``article h1 > a``), with the XPath to write instead."""
    selector = expression.strip()
    compounds = _CSS_COMBINATOR_RE.split(selector)
    if len(compounds) < 2 or not all(_CSS_NAME_RE.fullmatch(compound) for compound in compounds):
        return None
    separators = [
        "/" if found.group().strip() == ">" else "//" for found in _CSS_COMBINATOR_RE.finditer(selector)
    ]
    xpath = "//" + compounds[0] + "".join(map(str.__add__, separators, compounds[1:]))
    return (
        f"CSS selector {_shown(selector)} in XPath {_shown(expression)}: XPath separates steps with / or //,"
        " not with spaces",
        f"an XPath such as {xpath}",
    )


_CSS_NAME_RE = re.compile(r"[A-Za-z][\w-]*|\*")


# The XPath 1.0 test of a CSS class: the word among the element's classes.
_CLASS_TEST = "[contains(concat(' ', normalize-space(@class), ' '), ' {} ')]"


def _css_parts(compound: str) -> tuple[str, list[str], list[str]]:
    """A CSS compound selector's element name (``*`` when none), its classes and its ids."""
    tag, classes, ids = "*", [], []
    for marker, name in _CSS_PART_RE.findall(compound):
        if marker == ".":
            classes.append(name)
        elif marker == "#":
            ids.append(name)
        else:
            tag = name
    return tag, classes, ids


def _xpath_tokens(expression: str) -> list[re.Match[str]]:
    """The tokens of the XPath ``expression``, white space left out."""
    return [match for match in _XPATH_TOKEN_RE.finditer(expression) if match.lastgroup != "space"]


def _xpath_problem(tokens: Sequence[re.Match[str]]) -> tuple[str, str] | None:
    """What lxml would only find when evaluating (problem, expected), for an expression that compiles, of
    its ``tokens``."""
    for position, token in enumerate(tokens):
        kind, text = token.lastgroup, token.group()
        if kind == "variable":
            return f"undefined variable {text}", f"{EXPECTED_XPATH} without variables"
        if kind != "name" or text in _XPATH_OPERATOR_NAMES:
            continue
        calls = position + 1 < len(tokens) and tokens[position + 1].group() == "("
        axis = position + 1 < len(tokens) and tokens[position + 1].group() == "::"
        if ":" in text and not axis:
            return (
                f"undefined namespace prefix {text.split(':', 1)[0]}:",
                f"{EXPECTED_XPATH} without namespace prefixes: EXSLT re: is off, use the field's regex key",
            )
        if not calls:
            continue
        if text not in _XPATH_FUNCTIONS:
            return f"unknown function {text}()", f"{EXPECTED_XPATH} using XPath 1.0 functions only"
        fewest, most = _XPATH_FUNCTIONS[text]
        arguments = _argument_count(tokens, position + 1)
        if arguments < fewest or (most is not None and arguments > most):
            wanted = (
                f"{fewest}"
                if fewest == most
                else f"{fewest} or more"
                if most is None
                else f"{fewest} to {most}"
            )
            noun = "argument" if wanted == "1" else "arguments"
            return f"{text}() takes {wanted} {noun}, not {arguments}", f"{EXPECTED_XPATH} with valid calls"
    return None


def _path_problems(expression: str) -> tuple[str, str] | None:
    """(problem, expected) when ``expression`` has paths or tests that find nothing on an HTML page
    (:func:`_relative_problem`, :func:`_predicate_problem`): every one of them named, each fixed in turn,
    and the expected XPath with them all fixed (``//a[rel=next]``: ``//a[@rel='next']``)."""
    problems: list[str] = []
    expected = ""
    fixed = expression
    while (found := _relative_problem(fixed) or _predicate_problem(fixed)) is not None:
        problem, expected, fixed = found
        problems.append(problem)
    if not problems:
        return None
    return f"XPath {_shown(expression)} " + "; and ".join(problems), expected


def _relative_problem(expression: str) -> tuple[str, str, str] | None:
    """(problem, expected, fixed expression) when a location path of ``expression`` (outside brackets)
    starts with a child step of an element other than head and body: read from the page's ``<html>``, it
    finds nothing."""
    tokens = _xpath_tokens(expression)
    depth = 0
    previous = None
    for position, token in enumerate(tokens):
        text = token.group()
        following = tokens[position + 1].group() if position + 1 < len(tokens) else None
        if text == "[":
            depth += 1
        elif text == "]":
            depth -= 1
        elif (
            depth == 0
            and token.lastgroup == "name"
            and previous in _PATH_START_AFTER
            and following not in ("(", "::")
            and text not in _HTML_CHILDREN
        ):
            start = token.start()
            fixed = expression[:start] + ("/" if text == "html" else "//") + expression[start:]
            return (
                f"starts at a child {text} of the page's <html> element, which has only head and body: it"
                " finds nothing",
                f"an XPath from the page's root: {fixed}",
                fixed,
            )
        previous = text
    return None


# What a location path may follow (None: the expression's start), and the only children of <html>.
_PATH_START_AFTER = frozenset({None, "(", ",", "|"})
_HTML_CHILDREN = frozenset({"head", "body"})


def _predicate_problem(expression: str) -> tuple[str, str, str] | None:
    """(problem, expected, fixed expression) when a test inside brackets reads an HTML attribute as a
    child element (``[property='og:title']``, ``contains(class, 'x')``) or compares an attribute with an
    unquoted word (``[@rel=next]``, a child element ``next``): valid XPath that finds nothing on an HTML
    page."""
    tokens = _xpath_tokens(expression)
    depth = 0
    for position, token in enumerate(tokens):
        text = token.group()
        depth += (text == "[") - (text == "]")
        if depth == 0 or token.lastgroup != "name":
            continue
        before = [other.group() for other in tokens[max(position - 4, 0) : position]]
        following = tokens[position + 1].group() if position + 1 < len(tokens) else None
        if following in ("(", "::"):
            continue
        start = token.start()
        if before[-1:] and before[-1] in _TEST_STARTS and _is_html_attribute(text):
            fixed = expression[:start] + "@" + expression[start:]
            return (
                f"tests a child element {text}, which HTML never has: {text} is an attribute",
                f"@{text}, as in {fixed}",
                fixed,
            )
        left = before[:-1] if before[-1:] == ["="] else []
        left = left[:-1] if left[-1:] == ["!"] else left
        if left[-2:-1] == ["@"] and following in ("]", "and", "or"):
            fixed = f"{expression[:start]}'{text}'{expression[token.end() :]}"
            return (
                f"compares @{left[-1]} with a child element {text}, not the text {text}: a string is quoted",
                fixed,
                fixed,
            )
    return None


def _is_html_attribute(name: str) -> bool:
    """True for a name HTML gives attributes and never elements (``href``, ``class``, ``data-id``)."""
    return name.lower() in _HTML_ATTRIBUTES or name.lower().startswith(("data-", "aria-"))


# What a test of a child step may follow inside brackets, and attributes no HTML element is named as.
_TEST_STARTS = frozenset({"[", "(", ",", "=", "<", ">", "and", "or"})
_HTML_ATTRIBUTES = frozenset(
    {
        "alt",
        "charset",
        "class",
        "content",
        "datetime",
        "href",
        "hreflang",
        "http-equiv",
        "id",
        "itemprop",
        "itemtype",
        "lang",
        "name",
        "property",
        "rel",
        "role",
        "src",
        "srcset",
        "target",
        "type",
        "value",
    }
)


def _argument_count(tokens: Sequence[re.Match[str]], opening: int) -> int:
    """How many arguments the call whose ``(`` is ``tokens[opening]`` has."""
    depth = 0
    commas = 0
    for token in tokens[opening:]:
        text = token.group()
        if text in "([":
            depth += 1
        elif text in ")]":
            depth -= 1
            if depth == 0:
                break
        elif text == "," and depth == 1:
            commas += 1
    empty = opening + 1 < len(tokens) and tokens[opening + 1].group() == ")"
    return 0 if empty else commas + 1
