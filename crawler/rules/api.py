"""JSON APIs as a site's index: a rule's ``api`` section, compiled (:class:`ApiRule`), and what it reads
from one page of JSON (:meth:`ApiRule.read`): the items, each item's fields, and the next page.

Every expression is JMESPath (https://jmespath.org), compiled when the rule is loaded. An item whose
``fields`` give a ``body`` is the article itself (stored without fetching a page); otherwise its ``url``
is fetched as an article page, the other fields filling the page's where it has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import jmespath
import jmespath.exceptions

from crawler.errors import CrawlerError
from crawler.rules.errors import RuleError
from crawler.rules.errors import shown as _shown
from extractors.encoding import Doubt, decode_checked

__all__ = [
    "EXPECTED_JMESPATH",
    "ApiError",
    "ApiItem",
    "ApiItemsError",
    "ApiPage",
    "ApiRule",
    "JmesPath",
    "json_text",
]

EXPECTED_JMESPATH = "a JMESPath expression such as data.items or user.name (https://jmespath.org)"
# JSON combines an escaped surrogate pair into its character: a surrogate left in a string is a lone one.
_LONE_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


class ApiError(CrawlerError):
    """A page of a rule's API that is no JSON, or whose items are no list (the message says which)."""


class ApiItemsError(ApiError):
    """A page of a rule's API that is JSON, but whose ``api.items`` gives no list (null, an object):
    ``gives`` says what it gives instead."""

    def __init__(self, message: str, gives: str) -> None:
        super().__init__(message)
        self.gives = gives


class JmesPath:
    """A JMESPath expression compiled at load time; :class:`RuleError` naming the file and key if invalid."""

    __slots__ = ("_compiled", "expression")

    def __init__(self, expression: str, *, file: str, key: str) -> None:
        self.expression = expression
        try:
            self._compiled = jmespath.compile(expression)
        except jmespath.exceptions.JMESPathError as exc:
            problem = " ".join(str(exc).split())
            raise RuleError(
                file, key, f"invalid JMESPath {_shown(expression)}: {problem}", EXPECTED_JMESPATH
            ) from None

    def search(self, data: Any) -> Any:
        try:
            return self._compiled.search(data)
        except jmespath.exceptions.JMESPathError:
            return None  # a function given a value of the wrong type: no result, as a missing key


@dataclass(frozen=True, slots=True)
class ApiItem:
    """One item of a page: its article's URL (absolute), and its fields as strings (None: not given)."""

    url: str
    fields: Mapping[str, str | None]

    @property
    def is_article(self) -> bool:
        """The item holds the article itself (a body): no page to fetch."""
        return bool(self.fields.get("body"))


@dataclass(frozen=True, slots=True)
class ApiPage:
    """What one page of the API gave: its items, how many had no usable URL, and the next page's URL;
    ``doubt`` when the rule's encoding did not read it (:func:`json_text`)."""

    items: tuple[ApiItem, ...]
    without_url: int
    next_url: str | None
    doubt: Doubt | None = None


def json_text(body: bytes, encoding: str | None) -> tuple[str | bytes, Doubt | None]:
    """The JSON ``body`` for :func:`json.loads`: as it is without an ``encoding`` (JSON says UTF-8, -16 or
    -32), else read in the rule's ``encoding`` as an HTML page is (:func:`extractors.encoding.decode_checked`:
    in the page's own encoding when the rule's leaves it undecodable or reads valid UTF-8 as other
    characters), with the doubt that says so."""
    if encoding is None:
        return body, None
    decoded = decode_checked(body, None, encoding)
    return decoded.text, decoded.doubt


@dataclass(frozen=True, slots=True, eq=False)
class ApiRule:
    """A rule's ``api`` section (see docs/rules.md#json-apis)."""

    urls: tuple[str, ...]
    items: JmesPath
    fields: Mapping[str, JmesPath] = field(default_factory=lambda: MappingProxyType({}))
    next: JmesPath | None = None
    cursor_param: str | None = None
    max_pages: int = 5

    def read(self, body: bytes, page_url: str, encoding: str | None = None) -> ApiPage:
        """The items and next page of the JSON ``body`` fetched from ``page_url`` (in ``encoding``, the
        rule's, when given and it reads the page: :func:`json_text`); :class:`ApiError` when it is no JSON,
        :class:`ApiItemsError` when ``items`` gives no list. Item URLs are resolved against ``page_url``;
        whether they are on the rule's domains is the rule's to say."""
        text, doubt = json_text(body, encoding)
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            start = body[:40].decode("utf-8", "replace").strip()
            raise ApiError(f"{page_url} is not JSON: {exc} (it starts {start!r})") from None
        found = self.items.search(data)
        if not isinstance(found, list):
            gives = _kind(found)
            raise ApiItemsError(
                f"{page_url}: api.items {_shown(self.items.expression)} gives {gives}, not a list of items",
                gives,
            )
        items: list[ApiItem] = []
        without_url = 0
        for entry in found:
            found_url = self.fields["url"].search(entry)
            url = _url_text(found_url.strip()) if isinstance(found_url, str) else None
            if not url:
                without_url += 1
                continue
            values = {name: _text(path.search(entry)) for name, path in self.fields.items() if name != "url"}
            items.append(ApiItem(urljoin(page_url, url), MappingProxyType(values)))
        return ApiPage(tuple(items), without_url, self._next_url(data, page_url), doubt)

    def _next_url(self, data: Any, page_url: str) -> str | None:
        if self.next is None:
            return None
        value = _text(self.next.search(data))
        if value is None:
            return None
        value = _url_text(value)
        if self.cursor_param is None:
            return urljoin(page_url, value)
        parts = urlsplit(page_url)
        query = [
            (name, old)
            for name, old in parse_qsl(parts.query, keep_blank_values=True)
            if name != self.cursor_param
        ]
        return urlunsplit(parts._replace(query=urlencode([*query, (self.cursor_param, value)])))


def _url_text(url: str) -> str:
    """``url`` with each lone surrogate (half an emoji a JSON escape cut, ``"\\ud83d"``: no character, no
    URL can encode it) as U+FFFD, as a browser reads it (the URL standard's USVString), which a request
    percent-encodes as ``%EF%BF%BD``. An ASCII ``url`` (most) is returned as it is (``isascii`` reads a
    flag of the string)."""
    return url if url.isascii() else _LONE_SURROGATE_RE.sub("\ufffd", url)


def _text(value: Any) -> str | None:
    """A field's value as stored: strings trimmed, numbers and booleans as JSON writes them, lists and
    objects as JSON; None for null, missing or empty."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null or no such key)"
    return {dict: "an object", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}"
    )
