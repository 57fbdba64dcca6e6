"""Site rules: ``rules/<site>.yaml`` read, validated and compiled once (the reference is docs/rules.md).

A rule file is data, never code: it is read with PyYAML's safe loader, checked against a schema that
rejects unknown keys at every level, and every regular expression and XPath in it is compiled at load time.
Regular expressions use the ``regex`` module and run with a time limit (:class:`RuleRegex`); XPath are
compiled by lxml with EXSLT regular expressions off (:class:`RuleXPath`).

Every problem is a :class:`RuleError` naming the file, the key path, the bad value and what was expected::

    rules/citynews.yaml: article.fields.title.xpath: invalid XPath "//h1[": Invalid expression
    (expected an XPath 1.0 expression)

:func:`load_rules` reads a whole folder and returns every valid rule *and* every error of every file (one
broken file never stops the others); :func:`load_rule` reads one file and raises :class:`RuleErrors`, which
lists every error of that file.

The spider uses three methods of a :class:`Rule`, all working on an lxml element (``response.selector.root``):
:meth:`Rule.article_links`, :meth:`Rule.next_page_url` and :meth:`Rule.extract_fields`.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeVar
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
import regex  # type: ignore[import-untyped, unused-ignore]
import yaml  # type: ignore[import-untyped, unused-ignore]
from lxml import etree
from w3lib.url import safe_url_string

from crawler.errors import EXIT_FETCH, CrawlerError
from crawler.settings import QREAD_MIN_BODY_CHARS
from extractors.encoding import normalize_encoding
from extractors.text import normalize_space

__all__ = [
    "REGEX_TIMEOUT",
    "RULE_SUFFIX",
    "STANDARD_FIELDS",
    "FieldRule",
    "LinkRule",
    "Rule",
    "RuleError",
    "RuleErrors",
    "RuleRegex",
    "RuleSet",
    "RuleXPath",
    "check_cron",
    "load_rule",
    "load_rules",
    "parse_every",
    "parse_rule",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

# Seconds one search of a rule's regular expression may take; past it the search counts as no match.
REGEX_TIMEOUT: Final = 0.2
# Rule files are small; anything larger is a mistake (or an attack on the YAML parser).
MAX_RULE_BYTES: Final = 1024 * 1024
RULE_SUFFIX: Final = ".yaml"
# The fields every article item has (None when the rule does not give them); any other name is custom.
STANDARD_FIELDS: Final = ("title", "body", "published", "author")

# Allowed keys at each level of a rule file, in the order docs/rules.md lists them.
_TOP_KEYS = (
    "name",
    "domains",
    "start_urls",
    "index",
    "depth",
    "article",
    "politeness",
    "priority",
    "schedule",
    "headers",
    "encoding",
)
_INDEX_KEYS = ("links", "next_page", "max_pages")
_LINKS_KEYS = ("xpath", "allow", "deny")
_ARTICLE_KEYS = ("fields", "min_body_chars")
_FIELD_KEYS = ("xpath", "regex", "join", "strip")
_POLITENESS_KEYS = ("delay", "concurrency", "obey_robots")
_SCHEDULE_KEYS = ("every", "cron", "min", "max")

_SITE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FIELD_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_HOST_LABELS_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*")
# RFC 9110 token characters: what a header name may hold.
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
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
# White space HTML strips around attribute values such as href.
_HTML_SPACE = " \t\n\r\f"
_HTTP_SCHEMES = frozenset({"http", "https"})
# Elements whose text is not page text (unless an XPath selects them directly).
_NO_TEXT_TAGS = frozenset({"script", "style", "template"})
# Elements that start a new line in the text of an element, as a browser shows it.
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd details dialog div dl dt fieldset figcaption figure footer form"
    " h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody tfoot thead tr ul".split()
)

_ALL_HREFS = etree.XPath("//a/@href", smart_strings=False)
_BASE_HREF = etree.XPath("(//base/@href)[1]", smart_strings=False)
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

EXPECTED_XPATH = "an XPath 1.0 expression"
EXPECTED_REGEX = "a regular expression in the syntax of the Python regex module"
EXPECTED_NODES_XPATH = "an XPath selecting elements or href strings, e.g. //ul[@class='news'] or //a/@href"
EXPECTED_EVERY = "a period such as 90s, 20m, 1h, 1d or 1h30m: units s, m, h, d, more than 0 in all"
EXPECTED_CRON = (
    'a cron expression of 5 fields "minute hour day-of-month month day-of-week", e.g. "*/20 * * * *"'
)


# --- errors -------------------------------------------------------------------------------------------------


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
        super().__init__(file, "", f"{count} error{'s' if count != 1 else ''} in this rule file")

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


# --- compiled expressions ----------------------------------------------------------------------------------


class RuleRegex:
    """A rule's regular expression, compiled once with ``regex``; every search is bounded in time.

    A search that runs past ``timeout`` seconds is counted in ``timeouts``, logged, and treated as no match.
    """

    __slots__ = ("_compiled", "file", "key", "pattern", "timeout", "timeouts")

    def __init__(
        self, pattern: str, *, timeout: float = REGEX_TIMEOUT, file: str = "<rule>", key: str = "regex"
    ) -> None:
        try:
            self._compiled: regex.Pattern[str] = regex.compile(pattern)
        except regex.error as exc:
            raise RuleError(file, key, f"invalid regex {_shown(pattern)}: {exc}", EXPECTED_REGEX) from None
        self.pattern = pattern
        self.timeout = timeout
        self.file = file
        self.key = key
        self.timeouts = 0

    def __repr__(self) -> str:
        return f"RuleRegex({self.pattern!r})"

    @property
    def groups(self) -> int:
        """How many capturing groups the expression has."""
        groups: int = self._compiled.groups
        return groups

    def search(self, text: str) -> regex.Match[str] | None:
        """The first match in ``text``; ``None`` when there is none or the time limit ran out."""
        try:
            return self._compiled.search(text, timeout=self.timeout)
        except TimeoutError:
            self._timed_out(text)
            return None

    def findall(self, text: str) -> list[Any]:
        """Every match in ``text`` (as ``re.findall``); ``[]`` when the time limit ran out."""
        try:
            found: list[Any] = self._compiled.findall(text, timeout=self.timeout)
        except TimeoutError:
            self._timed_out(text)
            return []
        return found

    def first(self, text: str) -> str | None:
        """The first group of the first match (the whole match when there is no group), or ``None``."""
        match = self.search(text)
        if match is None:
            return None
        value: str | None = match.group(1 if self.groups else 0)
        return value

    def _timed_out(self, text: str) -> None:
        self.timeouts += 1
        logger.warning(
            "%s: %s: regex %s ran past %g s on %d characters: treated as no match",
            self.file,
            self.key,
            _shown(self.pattern),
            self.timeout,
            len(text),
        )


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
        try:
            self._compiled = etree.XPath(expression, regexp=False, smart_strings=False)
            problem = _xpath_problem(expression)
            if problem is not None:
                raise RuleError(file, key, f"invalid XPath {_shown(expression)}: {problem[0]}", problem[1])
            probe = self._compiled(_PROBE_PAGE)
        except etree.XPathError as exc:
            raise RuleError(file, key, f"invalid XPath {_shown(expression)}: {exc}", EXPECTED_XPATH) from None
        if nodes and not isinstance(probe, list):
            kind = (
                "a boolean"
                if isinstance(probe, bool)
                else "a number"
                if isinstance(probe, float)
                else "a string"
            )
            raise RuleError(file, key, f"XPath {_shown(expression)} gives {kind}", EXPECTED_NODES_XPATH)

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


def _xpath_problem(expression: str) -> tuple[str, str] | None:
    """What lxml would only find when evaluating (problem, expected), for an expression that compiles."""
    tokens = [
        (match.lastgroup, match.group())
        for match in _XPATH_TOKEN_RE.finditer(expression)
        if match.lastgroup != "space"
    ]
    for position, (kind, text) in enumerate(tokens):
        if kind == "variable":
            return f"undefined variable {text}", f"{EXPECTED_XPATH} without variables"
        if kind != "name" or text in _XPATH_OPERATOR_NAMES:
            continue
        calls = position + 1 < len(tokens) and tokens[position + 1][1] == "("
        axis = position + 1 < len(tokens) and tokens[position + 1][1] == "::"
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


def _argument_count(tokens: Sequence[tuple[str | None, str]], opening: int) -> int:
    """How many arguments the call whose ``(`` is ``tokens[opening]`` has."""
    depth = 0
    commas = 0
    for _kind, text in tokens[opening:]:
        if text in "([":
            depth += 1
        elif text in ")]":
            depth -= 1
            if depth == 0:
                break
        elif text == "," and depth == 1:
            commas += 1
    empty = opening + 1 < len(tokens) and tokens[opening + 1][1] == ")"
    return 0 if empty else commas + 1


# --- the rule -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class FieldRule:
    """How one field is read: the first XPath with a non-empty result, joined, then the regex, stripped."""

    name: str
    xpath: tuple[RuleXPath, ...] = ()
    regex: RuleRegex | None = None
    join: str = " "
    strip: bool = True

    def extract(self, root: etree._Element, page_text: Callable[[], str]) -> str | None:
        """The field's value on the page ``root``; ``None`` when nothing (or only white space) was found.

        ``page_text`` gives the text of the whole page, for a regex without XPath.
        """
        if self.xpath:
            pieces: list[str] = []
            for xpath in self.xpath:
                pieces = [piece for text in _result_texts(xpath(root)) if (piece := self._clean(text))]
                if pieces:
                    break
            text: str | None = self.join.join(pieces)
        else:
            text = page_text()
        if text and self.regex is not None:
            text = self.regex.first(text)
            if text is not None:
                text = self._clean(text)
        return text or None

    def _clean(self, text: str) -> str:
        return normalize_space(text) if self.strip else text


@dataclass(frozen=True, slots=True, eq=False)
class LinkRule:
    """Where an index page's article links are (areas or hrefs; ``()``: the whole page) and which to keep."""

    xpath: tuple[RuleXPath, ...] = ()
    allow: tuple[RuleRegex, ...] = ()
    deny: tuple[RuleRegex, ...] = ()

    def accepts(self, url: str) -> bool:
        """True when ``url`` matches one ``allow`` expression (or there are none) and no ``deny`` one."""
        if self.allow and not any(pattern.search(url) for pattern in self.allow):
            return False
        return not any(pattern.search(url) for pattern in self.deny)

    def hrefs(self, root: etree._Element) -> Iterator[str]:
        """Every href of the link areas (elements: each ``a/@href`` inside; strings: hrefs themselves)."""
        if not self.xpath:
            yield from _strings(_ALL_HREFS, root)
            return
        for xpath in self.xpath:
            for item in xpath(root):
                if isinstance(item, etree._Element):
                    for anchor in item.iter("a"):
                        href = anchor.get("href")
                        if href is not None:
                            yield href
                elif isinstance(item, str):
                    yield item


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """One site's rule, validated and compiled; see docs/rules.md for each attribute's key and default."""

    site: str
    name: str
    path: Path
    domains: tuple[str, ...]
    start_urls: tuple[str, ...]
    links: LinkRule
    next_page: RuleXPath | None = None
    max_pages: int = 1
    depth: int = 1
    fields: Mapping[str, FieldRule] = field(default_factory=lambda: MappingProxyType({}))
    min_body_chars: int = QREAD_MIN_BODY_CHARS
    delay: float = 0.0
    concurrency: int = 4
    obey_robots: bool = True
    priority: int = 0
    every: timedelta | None = None
    cron: str | None = None
    # Bounds of the adaptive period of `every` (None: the SCHEDULE_ADAPT_ factors of the settings).
    every_min: timedelta | None = None
    every_max: timedelta | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    encoding: str | None = None
    _subdomain_suffixes: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_subdomain_suffixes", tuple(f".{domain}" for domain in self.domains))

    def allows_host(self, host: str | None) -> bool:
        """True when ``host`` (no port) is one of the rule's domains or a subdomain of one."""
        if not host:
            return False
        host = host.rstrip(".").lower()
        return host in self.domains or host.endswith(self._subdomain_suffixes)

    def article_links(self, page_url: str, root: etree._Element) -> list[str]:
        """The article links of an index page: absolute, without fragment, on the rule's domains, kept by
        ``allow``/``deny``, each once, in document order."""
        base = _base_url(page_url, root)
        links: list[str] = []
        seen_hrefs: set[str] = set()
        seen_urls: set[str] = set()
        for href in self.links.hrefs(root):
            if href in seen_hrefs:
                continue
            seen_hrefs.add(href)
            url = self._absolute(base, href)
            if url is None or url in seen_urls:
                continue
            seen_urls.add(url)
            if self.links.accepts(url):
                links.append(url)
        return links

    def next_page_url(self, page_url: str, root: etree._Element) -> str | None:
        """The next index page (``index.next_page``) when the rule has one and the page links to it."""
        if self.next_page is None:
            return None
        base = _base_url(page_url, root)
        current = self._absolute(page_url, page_url)
        for item in self.next_page(root):
            href: str | None = None
            if isinstance(item, etree._Element):
                href = (
                    item.get("href")
                    if item.tag == "a"
                    else next((a.get("href") for a in item.iter("a") if a.get("href") is not None), None)
                )
            elif isinstance(item, str):
                href = item
            url = self._absolute(base, href) if href is not None else None
            if url is not None and url != current:
                return url
        return None

    def extract_fields(self, root: etree._Element) -> dict[str, str | None]:
        """Every field of the article page ``root``: the standard ones (None when absent) and custom ones."""
        page_text: list[str] = []

        def whole_text() -> str:
            if not page_text:
                page_text.append(_element_text(root))
            return page_text[0]

        values: dict[str, str | None] = dict.fromkeys(STANDARD_FIELDS)
        for name, spec in self.fields.items():
            values[name] = spec.extract(root, whole_text)
        return values

    def needs_qread(self, body: str | None) -> bool:
        """True when qRead must supply the body: the rule gave none, or one shorter than min_body_chars."""
        return body is None or len(body) < self.min_body_chars

    @property
    def regex_timeouts(self) -> int:
        """How many searches of this rule's regular expressions ran out of time since it was loaded."""
        patterns = [*self.links.allow, *self.links.deny]
        patterns += [spec.regex for spec in self.fields.values() if spec.regex is not None]
        return sum(pattern.timeouts for pattern in patterns)

    def _absolute(self, base: str, href: str) -> str | None:
        """``href`` resolved against ``base``, without fragment, percent-encoded as Scrapy requests it;
        ``None`` when it is no http(s) URL or its host is not on the rule's domains."""
        href = href.strip(_HTML_SPACE)
        if not href or href.startswith("#"):
            return None
        try:
            # safe_url_string also turns an international host name into its IDNA form, as domains are.
            url = safe_url_string(urldefrag(urljoin(base, href))[0], encoding=self.encoding or "utf-8")
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme not in _HTTP_SCHEMES or not self.allows_host(parts.hostname):
            return None
        return url


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The valid rules of a folder by site id, and every error of the files that are not."""

    directory: Path
    rules: Mapping[str, Rule]
    errors: tuple[RuleError, ...] = ()

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules.values())

    def __len__(self) -> int:
        return len(self.rules)

    def __contains__(self, site: object) -> bool:
        return site in self.rules

    def __getitem__(self, site: str) -> Rule:
        return self.rules[site]

    def get(self, site: str) -> Rule | None:
        return self.rules.get(site)

    @property
    def files_with_errors(self) -> tuple[str, ...]:
        """The files that have errors, each once, in the order they were read."""
        return tuple(dict.fromkeys(error.file for error in self.errors))


# --- loading -----------------------------------------------------------------------------------------------


def load_rules(
    directory: str | Path, *, min_body_chars: int = QREAD_MIN_BODY_CHARS, regex_timeout: float = REGEX_TIMEOUT
) -> RuleSet:
    """Every ``*.yaml`` rule of ``directory``: the valid ones and the errors of all the others.

    ``min_body_chars`` is the default of ``article.min_body_chars`` (the QREAD_MIN_BODY_CHARS setting);
    ``regex_timeout`` the time limit of one regex search. A folder that cannot be read is a RuleError.
    """
    folder = Path(directory)
    try:
        entries = sorted(entry for entry in folder.iterdir() if not entry.name.startswith("."))
    except OSError as exc:
        raise RuleError(
            str(folder),
            "",
            f"cannot read the rules folder: {exc.strerror or exc}",
            "a folder of *.yaml rules",
        ) from None
    rules: dict[str, Rule] = {}
    errors: list[RuleError] = []
    for entry in entries:
        if entry.suffix == ".yml":
            errors.append(
                RuleError(str(entry), "", "rule files end in .yaml: this one is not read", "a .yaml file")
            )
            continue
        if entry.suffix != RULE_SUFFIX or entry.is_dir():
            continue
        try:
            rule = load_rule(entry, min_body_chars=min_body_chars, regex_timeout=regex_timeout)
        except RuleErrors as exc:
            errors.extend(exc.errors)
            continue
        rules[rule.site] = rule
    return RuleSet(folder, MappingProxyType(rules), tuple(errors))


def load_rule(
    path: str | Path, *, min_body_chars: int = QREAD_MIN_BODY_CHARS, regex_timeout: float = REGEX_TIMEOUT
) -> Rule:
    """The rule of one file (its name without ``.yaml`` is the site id); :class:`RuleErrors` lists every
    error of the file otherwise."""
    path = Path(path)
    file = str(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_RULE_BYTES + 1)
    except OSError as exc:
        raise RuleErrors(
            file, [RuleError(file, "", f"cannot read the file: {exc.strerror or exc}")]
        ) from None
    if len(data) > MAX_RULE_BYTES:
        raise RuleErrors(
            file,
            [RuleError(file, "", "the file is too large", f"a rule file under {MAX_RULE_BYTES:,} bytes")],
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}"
        raise RuleErrors(file, [RuleError(file, "", problem, "a UTF-8 YAML file")]) from None
    return parse_rule(
        text,
        site=path.name.removesuffix(RULE_SUFFIX),
        file=file,
        min_body_chars=min_body_chars,
        regex_timeout=regex_timeout,
    )


def parse_rule(
    text: str,
    *,
    site: str,
    file: str | None = None,
    min_body_chars: int = QREAD_MIN_BODY_CHARS,
    regex_timeout: float = REGEX_TIMEOUT,
) -> Rule:
    """The rule of site ``site`` from the YAML ``text`` (``file`` names it in errors, default
    ``rules/<site>.yaml``); :class:`RuleErrors` lists every error otherwise."""
    file = file if file is not None else f"rules/{site}{RULE_SUFFIX}"
    check = _Checker(file, regex_timeout)
    data, readable = _read_yaml(text, check)
    if not _SITE_ID_RE.fullmatch(site):
        check.fail(
            "",
            f"site id {_shown(site)} (the file name) is not allowed",
            "letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    if readable:
        rule = _build_rule(data, site, Path(file), check, min_body_chars)
        if rule is not None and not check.errors:
            return rule
    raise RuleErrors(file, check.errors)


def parse_every(text: str) -> timedelta:
    """The period of ``schedule.every``: ``"90s"``, ``"20m"``, ``"1h30m"``, ``"1d"``; ``ValueError`` else."""
    compact = "".join(text.split()).lower()
    if not _DURATION_RE.fullmatch(compact):
        raise ValueError("not a period")
    seconds = sum(
        int(number) * _DURATION_SECONDS[unit] for number, unit in _DURATION_PART_RE.findall(compact)
    )
    if seconds == 0:
        raise ValueError("a period of 0")
    return timedelta(seconds=seconds)


def check_cron(expression: str) -> str:
    """``expression`` with single spaces when it is a valid 5-field cron expression; ``ValueError`` saying
    which field is wrong otherwise (numbers, ``*``, ranges ``a-b``, steps ``/n``, lists ``a,b``, and the
    names jan-dec and sun-sat)."""
    fields = expression.split()
    if len(fields) != len(_CRON_FIELDS):
        raise ValueError(f"{len(fields)} field{'s' if len(fields) != 1 else ''} instead of 5")
    for text, (name, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for item in text.split(","):
            _check_cron_item(item, name, low, high, names)
    return " ".join(fields)


def _check_cron_item(item: str, name: str, low: int, high: int, names: Mapping[str, int]) -> None:
    span, slash, step = item.partition("/")
    if slash and (not _CRON_NUMBER_RE.fullmatch(step) or not 1 <= int(step) <= high - low + 1):
        raise ValueError(f"{name} step {step!r} is not a number from 1 to {high - low + 1}")
    if span == "*":
        return
    start, dash, end = span.partition("-")
    first = _cron_value(start, name, low, high, names)
    if dash and _cron_value(end, name, low, high, names) < first:
        raise ValueError(f"{name} range {span!r} ends before it starts")


def _cron_value(text: str, name: str, low: int, high: int, names: Mapping[str, int]) -> int:
    if _CRON_NUMBER_RE.fullmatch(text):
        value = int(text)
        if low <= value <= high:
            return value
        raise ValueError(f"{name} {value} is out of range {low}-{high}")
    if text.lower() in names:
        return names[text.lower()]
    shown = repr(text) if text else "an empty value"
    names_hint = f" or a name {', '.join(names)}" if names else ""
    raise ValueError(f"{name} {shown} is not a number {low}-{high}{names_hint}")


# --- reading the YAML ---------------------------------------------------------------------------------------


def _read_yaml(text: str, check: _Checker) -> tuple[object, bool]:
    """The YAML document of ``text`` (PyYAML's safe loader) and whether there is one; syntax errors and
    duplicate keys are reported (a document with duplicate keys is still checked further)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            check.fail("", "the file is empty", "a mapping with at least domains, start_urls and index")
            return None, False
        for key_node in _duplicate_keys(node):
            mark = key_node.start_mark
            check.fail(
                f"line {mark.line + 1}, column {mark.column + 1}",
                f"duplicate key {_shown(key_node.value)}",
                "each key once in a mapping: YAML would keep only the last one",
            )
        return loader.construct_document(node), True
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = ", ".join(part for part in (exc.context, exc.problem) if part)
        check.fail(where, f"invalid YAML: {problem}")
        return None, False
    except yaml.YAMLError as exc:
        check.fail("", f"invalid YAML: {exc}")
        return None, False
    finally:
        loader.dispose()


def _duplicate_keys(root: yaml.Node) -> list[yaml.ScalarNode]:
    """The key nodes that repeat an earlier key of the same mapping (each node visited once: aliases)."""
    duplicates: list[yaml.ScalarNode] = []
    visited: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                    identity = (key_node.tag, key_node.value)
                    if identity in seen:
                        duplicates.append(key_node)
                    seen.add(identity)
                stack += (key_node, value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return sorted(duplicates, key=lambda key_node: (key_node.start_mark.line, key_node.start_mark.column))


# --- checking and building ----------------------------------------------------------------------------------


class _Checker:
    """Collects every error of one file; each helper returns the value read (or a default after an error)."""

    def __init__(self, file: str, regex_timeout: float) -> None:
        self.file = file
        self.regex_timeout = regex_timeout
        self.errors: list[RuleError] = []

    def fail(self, key: str, problem: str, expected: str | None = None) -> None:
        self.errors.append(RuleError(self.file, key, problem, expected))

    def wrong_type(self, key: str, value: object, expected: str) -> None:
        self.fail(key, f"wrong type: {_described(value)}", expected)

    def mapping(
        self, value: object, key: str, allowed: Sequence[str] | None, expected: str
    ) -> dict[str, Any] | None:
        """``value`` as a mapping of string keys; unknown keys (when ``allowed`` is given) are errors."""
        if not isinstance(value, dict):
            self.wrong_type(key, value, expected)
            return None
        checked: dict[str, Any] = {}
        for name, item in value.items():
            if not isinstance(name, str):
                self.fail(
                    _join(key, str(name)), f"key {_described(name)} is not a string", "a key name (quote it)"
                )
            elif allowed is not None and name not in allowed:
                close = difflib.get_close_matches(name, allowed, n=1)
                hint = f"; did you mean {_shown(close[0])}?" if close else ""
                self.fail(
                    _join(key, name), f"unknown key {_shown(name)}", f"one of: {', '.join(allowed)}{hint}"
                )
            else:
                checked[name] = item
        return checked

    def missing(self, key: str, expected: str) -> None:
        self.fail(key, "missing", expected)

    def integer(self, data: Mapping[str, Any], name: str, key: str, default: int, minimum: int | None) -> int:
        if name not in data:
            return default
        value = data[name]
        expected = "a whole number" + (f" >= {minimum}" if minimum is not None else "")
        if not isinstance(value, int) or isinstance(value, bool):
            self.wrong_type(_join(key, name), value, expected)
            return default
        if minimum is not None and value < minimum:
            self.fail(_join(key, name), f"out of range: {value}", expected)
            return default
        return value

    def number(self, data: Mapping[str, Any], name: str, key: str, default: float, minimum: float) -> float:
        if name not in data:
            return default
        value = data[name]
        expected = f"a number >= {minimum:g}"
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.wrong_type(_join(key, name), value, expected)
            return default
        if not math.isfinite(value) or value < minimum:
            self.fail(_join(key, name), f"out of range: {value}", expected)
            return default
        return float(value)

    def boolean(self, data: Mapping[str, Any], name: str, key: str, default: bool) -> bool:
        if name not in data:
            return default
        value = data[name]
        if not isinstance(value, bool):
            self.wrong_type(_join(key, name), value, "true or false")
            return default
        return value

    def string(self, value: object, key: str, expected: str, *, empty: bool = False) -> str | None:
        if not isinstance(value, str):
            self.wrong_type(key, value, expected)
            return None
        if not empty and not value.strip():
            self.fail(key, f"empty string {_shown(value)}", expected)
            return None
        return value

    def strings(self, value: object, key: str, expected: str, convert: Callable[[str, str], _T]) -> list[_T]:
        """One string or a non-empty list of them, each turned into a value by ``convert(string, key path)``;
        the RuleError that ``convert`` raises for a bad string is collected."""
        if isinstance(value, str):
            items: list[tuple[str, object]] = [(key, value)]
        elif isinstance(value, list) and value:
            items = [(f"{key}[{index}]", item) for index, item in enumerate(value)]
        else:
            self.wrong_type(key, value, f"{expected}, or a list of them")
            return []
        converted: list[_T] = []
        for path, item in items:
            text = self.string(item, path, expected)
            if text is not None:
                try:
                    converted.append(convert(text, path))
                except RuleError as exc:
                    self.errors.append(exc)
        return converted

    def regexes(self, value: object, key: str) -> tuple[RuleRegex, ...]:
        def compile_regex(pattern: str, path: str) -> RuleRegex:
            return RuleRegex(pattern, timeout=self.regex_timeout, file=self.file, key=path)

        return tuple(self.strings(value, key, EXPECTED_REGEX, compile_regex))

    def xpaths(self, value: object, key: str, *, nodes: bool) -> tuple[RuleXPath, ...]:
        def compile_xpath(expression: str, path: str) -> RuleXPath:
            return RuleXPath(expression, nodes=nodes, file=self.file, key=path)

        expected = EXPECTED_NODES_XPATH if nodes else EXPECTED_XPATH
        return tuple(self.strings(value, key, expected, compile_xpath))


def _build_rule(data: object, site: str, path: Path, check: _Checker, min_body_chars: int) -> Rule | None:
    if not isinstance(data, dict):
        check.fail(
            "", f"the rule is {_described(data)}", "a mapping with at least domains, start_urls, index"
        )
        return None
    top = check.mapping(data, "", _TOP_KEYS, "a mapping of rule keys (see docs/rules.md)") or {}

    name = site
    if "name" in top:
        name = check.string(top["name"], "name", "a display name") or site
    domains = _domains(top, check)
    start_urls = _start_urls(top, check, domains)
    links, next_page, max_pages = _index(top, check)
    depth = check.integer(top, "depth", "", 1, 1)
    fields, min_body = _article(top, check, min_body_chars)
    politeness = top.get("politeness", {})
    politeness = check.mapping(politeness, "politeness", _POLITENESS_KEYS, "a mapping") or {}
    delay = check.number(politeness, "delay", "politeness", 0.0, 0.0)
    concurrency = check.integer(politeness, "concurrency", "politeness", 4, 1)
    obey_robots = check.boolean(politeness, "obey_robots", "politeness", True)
    priority = check.integer(top, "priority", "", 0, None)
    every, cron, bounds = _schedule(top, check)
    headers = _headers(top, check)
    encoding = None
    if "encoding" in top:
        label = check.string(top["encoding"], "encoding", "a web text encoding such as utf-8, gbk or big5")
        if label is not None:
            encoding = normalize_encoding(label)
            if encoding is None:
                check.fail(
                    "encoding",
                    f"unknown encoding {_shown(label)}",
                    "a web text encoding such as utf-8, gbk, gb18030, big5, shift_jis or windows-1252",
                )
    if check.errors:
        return None
    return Rule(
        site=site,
        name=name,
        path=path,
        domains=domains,
        start_urls=start_urls,
        links=links,
        next_page=next_page,
        max_pages=max_pages,
        depth=depth,
        fields=MappingProxyType(fields),
        min_body_chars=min_body,
        delay=delay,
        concurrency=concurrency,
        obey_robots=obey_robots,
        priority=priority,
        every=every,
        cron=cron,
        every_min=bounds[0],
        every_max=bounds[1],
        headers=MappingProxyType(headers),
        encoding=encoding,
    )


def _domains(top: Mapping[str, Any], check: _Checker) -> tuple[str, ...]:
    expected = "a host name such as example.com, without scheme, port or path"

    def host_name(value: str, key: str) -> str:
        host = value.strip().rstrip(".").lower()
        try:
            return str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            pass
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
        if not _HOST_LABELS_RE.fullmatch(host):
            raise RuleError(check.file, key, f"not a host name: {_shown(value)}", expected)
        return host

    if "domains" not in top:
        check.missing("domains", f"a list of host names, each {expected}")
        return ()
    return tuple(dict.fromkeys(check.strings(top["domains"], "domains", expected, host_name)))


def _start_urls(top: Mapping[str, Any], check: _Checker, domains: Sequence[str]) -> tuple[str, ...]:
    expected = "an http:// or https:// URL of an index page"

    def start_url(value: str, key: str) -> str:
        url = value.strip()
        try:
            parts = urlsplit(url)
            valid = parts.scheme in _HTTP_SCHEMES and bool(parts.hostname) and parts.port != 0
        except ValueError:
            valid = False
        if not valid:
            raise RuleError(check.file, key, f"not an http(s) URL: {_shown(value)}", expected)
        if parts.username is not None or parts.password is not None:
            raise RuleError(check.file, key, f"credentials in the URL {_shown(value)}", "a URL without them")
        host = (parts.hostname or "").rstrip(".")
        if domains and not any(host == domain or host.endswith(f".{domain}") for domain in domains):
            raise RuleError(
                check.file,
                key,
                f"host {_shown(host)} of {_shown(value)} is not in domains",
                "a URL on the domains",
            )
        return url

    if "start_urls" not in top:
        check.missing("start_urls", f"a list of URLs, each {expected}")
        return ()
    return tuple(dict.fromkeys(check.strings(top["start_urls"], "start_urls", expected, start_url)))


def _index(top: Mapping[str, Any], check: _Checker) -> tuple[LinkRule, RuleXPath | None, int]:
    expected_links = "a mapping with xpath (link areas or hrefs), allow or both, and optionally deny"
    if "index" not in top:
        check.missing("index", "a mapping with links, and optionally next_page and max_pages")
        return LinkRule(), None, 1
    index = check.mapping(top["index"], "index", _INDEX_KEYS, "a mapping with links, next_page, max_pages")
    if index is None:
        return LinkRule(), None, 1
    links = LinkRule()
    if "links" not in index:
        check.missing("index.links", expected_links)
    else:
        spec = check.mapping(index["links"], "index.links", _LINKS_KEYS, expected_links)
        if spec is not None:
            if "xpath" not in spec and "allow" not in spec:
                check.fail("index.links", "neither xpath nor allow", expected_links)
            links = LinkRule(
                xpath=check.xpaths(spec["xpath"], "index.links.xpath", nodes=True) if "xpath" in spec else (),
                allow=check.regexes(spec["allow"], "index.links.allow") if "allow" in spec else (),
                deny=check.regexes(spec["deny"], "index.links.deny") if "deny" in spec else (),
            )
    next_page = None
    if "next_page" in index:
        value = index["next_page"]
        if isinstance(value, str):
            found = check.xpaths(value, "index.next_page", nodes=True)
            next_page = found[0] if found else None
        else:
            check.wrong_type("index.next_page", value, EXPECTED_NODES_XPATH)
    max_pages = check.integer(index, "max_pages", "index", 1, 1)
    return links, next_page, max_pages


def _article(
    top: Mapping[str, Any], check: _Checker, min_body_chars: int
) -> tuple[dict[str, FieldRule], int]:
    if "article" not in top:
        return {}, min_body_chars
    article = check.mapping(top["article"], "article", _ARTICLE_KEYS, "a mapping with fields, min_body_chars")
    if article is None:
        return {}, min_body_chars
    fields: dict[str, FieldRule] = {}
    if "fields" in article:
        specs = check.mapping(article["fields"], "article.fields", None, "a mapping of field names to specs")
        for name, spec in (specs or {}).items():
            field_rule = _field(name, spec, check)
            if field_rule is not None:
                fields[name] = field_rule
    return fields, check.integer(article, "min_body_chars", "article", min_body_chars, 0)


def _field(name: str, value: object, check: _Checker) -> FieldRule | None:
    key = f"article.fields.{name}"
    if not _FIELD_NAME_RE.fullmatch(name):
        check.fail(
            key,
            f"field name {_shown(name)} is not allowed",
            "letters, digits and _, not starting with a digit",
        )
        return None
    spec = check.mapping(
        value, key, _FIELD_KEYS, "a mapping with xpath, regex or both, and optionally join and strip"
    )
    if spec is None:
        return None
    if "xpath" not in spec and "regex" not in spec:
        check.fail(
            key,
            "neither xpath nor regex",
            "a mapping with xpath, regex or both, and optionally join and strip",
        )
        return None
    xpath = check.xpaths(spec["xpath"], f"{key}.xpath", nodes=False) if "xpath" in spec else ()
    pattern = None
    if "regex" in spec:
        if isinstance(spec["regex"], str):
            found = check.regexes(spec["regex"], f"{key}.regex")
            pattern = found[0] if found else None
        else:
            check.wrong_type(f"{key}.regex", spec["regex"], EXPECTED_REGEX)
    join = " "
    if "join" in spec:
        join = check.string(spec["join"], f"{key}.join", "a string put between the pieces", empty=True) or " "
    strip = check.boolean(spec, "strip", key, True)
    return FieldRule(name, xpath, pattern, join, strip)


def _schedule(
    top: Mapping[str, Any], check: _Checker
) -> tuple[timedelta | None, str | None, tuple[timedelta | None, timedelta | None]]:
    """``every``, ``cron``, and the bounds ``min``/``max`` of an adaptive ``every``."""
    expected = 'a mapping with one of every (e.g. 20m) or cron (e.g. "*/20 * * * *"), and min/max with every'
    nothing: tuple[timedelta | None, timedelta | None] = (None, None)
    if "schedule" not in top:
        return None, None, nothing
    schedule = check.mapping(top["schedule"], "schedule", _SCHEDULE_KEYS, expected)
    if schedule is None:
        return None, None, nothing
    if ("every" in schedule) == ("cron" in schedule):
        check.fail(
            "schedule", "both every and cron" if "every" in schedule else "neither every nor cron", expected
        )
        return None, None, nothing
    if "every" not in schedule:
        if "min" in schedule or "max" in schedule:
            check.fail("schedule", "min or max with cron", "min and max bound an adaptive every, not a cron")
            return None, None, nothing
        value = schedule["cron"]
        if not isinstance(value, str):
            check.wrong_type("schedule.cron", value, EXPECTED_CRON)
            return None, None, nothing
        try:
            return None, check_cron(value), nothing
        except ValueError as exc:
            check.fail("schedule.cron", f"invalid cron expression {_shown(value)}: {exc}", EXPECTED_CRON)
            return None, None, nothing
    periods: dict[str, timedelta] = {}
    for key in ("every", "min", "max"):
        if key not in schedule:
            continue
        value = schedule[key]
        if not isinstance(value, str):
            check.wrong_type(f"schedule.{key}", value, EXPECTED_EVERY)
            continue
        try:
            periods[key] = parse_every(value)
        except ValueError as exc:
            check.fail(f"schedule.{key}", f"{exc}: {_shown(value)}", EXPECTED_EVERY)
    if "every" not in periods:
        return None, None, nothing
    every = periods["every"]
    low, high = periods.get("min"), periods.get("max")
    if low is not None and low > every:
        check.fail("schedule.min", f"{_shown(schedule['min'])} is longer than every", "a period up to every")
    if high is not None and high < every:
        check.fail(
            "schedule.max", f"{_shown(schedule['max'])} is shorter than every", "a period from every up"
        )
    return every, None, (low, high)


def _headers(top: Mapping[str, Any], check: _Checker) -> dict[str, str]:
    if "headers" not in top:
        return {}
    headers = check.mapping(top["headers"], "headers", None, "a mapping of header names to values") or {}
    checked: dict[str, str] = {}
    for name, value in headers.items():
        key = f"headers.{name}"
        if not _HEADER_NAME_RE.fullmatch(name):
            check.fail(key, f"invalid header name {_shown(name)}", "letters, digits and -")
        elif not isinstance(value, str):
            check.wrong_type(key, value, "a string value (quote numbers)")
        elif any(char in value for char in "\r\n\0"):
            check.fail(key, f"line break in the value {_shown(value)}", "a value on one line")
        else:
            checked[name] = value
    return checked


# --- helpers -----------------------------------------------------------------------------------------------


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else name


def _shown(value: str, limit: int = 120) -> str:
    """A string as it is shown in messages: double-quoted, escaped, cut after ``limit`` characters."""
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return json.dumps(value, ensure_ascii=False)


def _described(value: object) -> str:
    """What a YAML value is, for a message: ``the string "5"``, ``a list of 2 items``, ``null``."""
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {_shown(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value}"


def _base_url(page_url: str, root: etree._Element) -> str:
    """The URL relative links of the page resolve against: its ``<base href>`` when valid, else its URL."""
    for href in _strings(_BASE_HREF, root):
        try:
            base = urljoin(page_url, href.strip(_HTML_SPACE))
        except ValueError:
            return page_url
        return base if urlsplit(base).scheme in _HTTP_SCHEMES else page_url
    return page_url


def _strings(xpath: etree.XPath, root: etree._Element) -> list[str]:
    """The string results of one of our own node-set XPath (they never fail on an element)."""
    result = xpath(root)
    return [item for item in result if isinstance(item, str)] if isinstance(result, list) else []


def _result_texts(results: Iterable[Any]) -> list[str]:
    """The text of each XPath result: elements give their text content, strings stay, numbers as XPath."""
    texts: list[str] = []
    for item in results:
        if isinstance(item, etree._Element):
            texts.append(_element_text(item))
        elif isinstance(item, str):
            texts.append(item)
        elif isinstance(item, bool):
            texts.append("true" if item else "false")
        elif isinstance(item, float):
            texts.append(str(int(item)) if item.is_integer() else str(item))
    return texts


def _element_text(element: etree._Element) -> str:
    """The text of ``element`` as a browser shows it: scripts and styles left out, a line break around each
    block element, comments skipped (their tails kept)."""
    if not isinstance(element.tag, str) or element.tag in _NO_TEXT_TAGS:
        return element.text or ""  # a comment, script or style selected on purpose
    parts: list[str] = []
    stack: list[tuple[etree._Element, bool]] = [(element, False)]
    while stack:
        node, closing = stack.pop()
        tag = node.tag
        block = tag in _BLOCK_TAGS and node is not element
        if closing:
            if block:
                parts.append("\n")
        elif isinstance(tag, str) and tag not in _NO_TEXT_TAGS:
            if block:
                parts.append("\n")
            if node.text:
                parts.append(node.text)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        if node is not element and node.tail:
            parts.append(node.tail)
    return "".join(parts)
