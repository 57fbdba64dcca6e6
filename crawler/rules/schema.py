"""The rule schema: every key a rule file may hold, checked and compiled (:func:`build_rule`), each error
collected with the file, the key path, the value and what was expected (:class:`Checker`)."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta, tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from crawler.commandline import counted, did_you_mean, url_meant
from crawler.errors import redacted
from crawler.rules.access import (
    AccessError,
    Proxy,
    Session,
    parse_proxy,
    read_proxy_file,
    read_session,
)
from crawler.rules.api import EXPECTED_JMESPATH, ApiRule, JmesPath
from crawler.rules.errors import RuleError
from crawler.rules.errors import shown as _shown
from crawler.rules.expressions import (
    EXPECTED_NODES_XPATH,
    EXPECTED_REGEX,
    EXPECTED_XPATH,
    RuleRegex,
    RuleXPath,
)
from crawler.rules.files import read_regular
from crawler.rules.model import (
    DISCOVER_STRATEGIES,
    HTTP_SCHEMES,
    DiscoverRule,
    FieldRule,
    LinkRule,
    Rule,
    SearchRule,
    ascii_host,
)
from crawler.rules.periods import EXPECTED_CRON, EXPECTED_EVERY, check_cron, parse_every
from crawler.rules.zones import EXPECTED_ZONE, site_zone, zone_hint
from extractors import extract
from extractors.encoding import decode_html, normalize_encoding, query_codec

__all__ = ["EXPECTED_RULE", "Checker", "build_rule"]

_T = TypeVar("_T")


# Allowed keys at each level of a rule file, in the order docs/rules.md lists them.
_TOP_KEYS = (
    "name",
    "domains",
    "allow_private_addresses",
    "start_urls",
    "feeds",
    "sitemaps",
    "api",
    "search",
    "discover",
    "index",
    "depth",
    "article",
    "politeness",
    "priority",
    "schedule",
    "headers",
    "encoding",
    "timezone",
    "access",
)
# What a rule reads its articles' links from, besides start_urls and index; discover needs no domains.
_SOURCE_KEYS = ("feeds", "sitemaps", "api", "search")
EXPECTED_RULE = (
    f"a mapping with domains, and start_urls and index, {', '.join(_SOURCE_KEYS[:-1])} or {_SOURCE_KEYS[-1]};"
    " or a mapping with discover"
)
_INDEX_KEYS = ("links", "next_page", "max_pages")
_LINKS_KEYS = ("xpath", "allow", "deny")
_ARTICLE_KEYS = ("fields", "min_body_chars")
_API_KEYS = ("url", "items", "fields", "next", "cursor_param", "max_pages")
_SEARCH_KEYS = ("url", "keywords", "encoding", "links", "next_page", "max_pages")
_DISCOVER_KEYS = ("topic", "seeds", "budget", "max_depth", "domains", "deny_domains", "threshold", "strategy")
_TOPIC_KEYS = ("keywords", "examples", "sites")
# An example article file read at most this far: an article is a few tens of kilobytes.
_EXAMPLE_MAX_BYTES = 2_000_000
_FIELD_KEYS = ("xpath", "regex", "join", "strip")
_POLITENESS_KEYS = ("delay", "concurrency", "obey_robots")
_SCHEDULE_KEYS = ("every", "cron", "min", "max")
_ACCESS_KEYS = ("proxies", "proxies_file", "sessions", "login_url")
# The keys a key of a rule takes, by its dotted name (None: any name, as a field's); a key not here takes
# none (a number, a string, a list), so no key is said to belong under it when it is left empty.
_KEYS_UNDER: dict[str, Sequence[str] | None] = {
    "api": _API_KEYS,
    "search": _SEARCH_KEYS,
    "discover": _DISCOVER_KEYS,
    "index": _INDEX_KEYS,
    "article": _ARTICLE_KEYS,
    "politeness": _POLITENESS_KEYS,
    "schedule": _SCHEDULE_KEYS,
    "headers": None,
    "access": _ACCESS_KEYS,
    "api.fields": None,
    "search.links": _LINKS_KEYS,
    "discover.topic": _TOPIC_KEYS,
    "index.links": _LINKS_KEYS,
    "article.fields": None,
}

_FIELD_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_HOST_LABELS_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*")
# RFC 9110 token characters: what a header name may hold.
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Credentials the queue never keeps (crawler/requests.py, SENT_ONLY_HEADERS): a session sends them.
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


def _belongs_under(key: str, before: object, name: str) -> bool:
    """Whether ``name``, a key of ``key`` that ``key`` does not take, is one the key ``before`` it takes."""
    if not isinstance(before, str) or _join(key, before) not in _KEYS_UNDER:
        return False
    taken = _KEYS_UNDER[_join(key, before)]
    return taken is None or name in taken


class Checker:
    """Collects every error of one file; each helper returns the value read (or a default after an error)."""

    def __init__(self, file: str, regex_timeout: float) -> None:
        self.file = file
        self.regex_timeout = regex_timeout
        self.errors: list[RuleError] = []
        # The files besides the rule file that the rule was built from (sessions, proxies, examples):
        # a rule read again only when its files changed (:class:`~crawler.rules.load.RuleFiles`) looks
        # at them too.
        self.reads: list[Path] = []

    def reading(self, path: Path) -> Path:
        """``path``, a file the rule is about to read, noted in :attr:`reads`."""
        self.reads.append(path)
        return path

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
        before: object = None
        for name, item in value.items():
            if not isinstance(name, str):
                self.fail(
                    _join(key, str(name)), f"key {_described(name)} is not a string", "a key name (quote it)"
                )
            elif allowed is not None and name not in allowed:
                hint = did_you_mean(name, list(allowed), quote=_shown)
                if not hint and _belongs_under(key, before, name) and value[before] is None:
                    # `links:` left empty, its keys written at its own indentation: YAML reads them as its
                    # siblings.
                    hint = (
                        f"; or, if it belongs to {before}, the key before it, which has no value: indented"
                        f" deeper than {before}, under it"
                    )
                self.fail(
                    _join(key, name), f"unknown key {_shown(name)}", f"one of: {', '.join(allowed)}{hint}"
                )
            else:
                checked[name] = item
            before = name
        return checked

    def section(
        self,
        top: Mapping[str, Any],
        name: str,
        allowed: Sequence[str],
        required: Sequence[str],
        expected: str,
    ) -> dict[str, Any] | None:
        """The section ``name`` of ``top`` (None when absent or not a mapping): its keys ``allowed``, each of
        ``required`` there."""
        if name not in top:
            return None
        section = self.mapping(top[name], name, allowed, expected)
        if section is None:
            return None
        for key in required:
            if key not in section:
                self.missing(f"{name}.{key}", expected)
        return section

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
        elif value == []:
            self.fail(key, "an empty list", f"{expected}, or a list of one or more")
            return []
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

    def regexes(self, value: object, key: str, *, spaces: str | None = None) -> tuple[RuleRegex, ...]:
        def compile_regex(pattern: str, path: str) -> RuleRegex:
            return RuleRegex(pattern, timeout=self.regex_timeout, file=self.file, key=path, spaces=spaces)

        return tuple(self.strings(value, key, EXPECTED_REGEX, compile_regex))

    def xpaths(self, value: object, key: str, *, nodes: bool) -> tuple[RuleXPath, ...]:
        def compile_xpath(expression: str, path: str) -> RuleXPath:
            return RuleXPath(expression, nodes=nodes, file=self.file, key=path)

        expected = EXPECTED_NODES_XPATH if nodes else EXPECTED_XPATH
        return tuple(self.strings(value, key, expected, compile_xpath))


def build_rule(data: object, site: str, path: Path, check: Checker, min_body_chars: int) -> Rule | None:
    if not isinstance(data, dict):
        check.fail("", f"the rule is {_described(data)}", EXPECTED_RULE)
        return None
    top = check.mapping(data, "", _TOP_KEYS, "a mapping of rule keys (see docs/rules.md)") or {}

    name = site
    if "name" in top:
        name = check.string(top["name"], "name", "a display name") or site
    domains = _domains(top, check) if "domains" in top or "discover" not in top else ()
    discover = _discover(top, check, path)
    feeds = _urls(top, "feeds", check, domains, "an http:// or https:// URL of an RSS or Atom feed")
    sitemaps = _urls(
        top,
        "sitemaps",
        check,
        domains,
        "an http:// or https:// URL of a sitemap, or of a robots.txt naming some",
    )
    api = _api(top, check, domains)
    search = _search(top, check)
    if "start_urls" in top or not any(key in top for key in (*_SOURCE_KEYS, "discover")):
        start_urls = _start_urls(top, check, domains)
        links, next_page, max_pages = _index(top, check)
    else:
        # A site read from its feeds, sitemaps or API alone: index.links, when given, still filters their
        # links.
        start_urls = ()
        links, next_page, max_pages = (
            _index(top, check, filters_only=True) if "index" in top else (LinkRule(), None, 1)
        )
    depth = check.integer(top, "depth", "", 1, 1)
    fields, min_body = _article(top, check, min_body_chars)
    politeness = top.get("politeness", {})
    expected = "a mapping with delay, concurrency, obey_robots"
    politeness = check.mapping(politeness, "politeness", _POLITENESS_KEYS, expected) or {}
    delay = check.number(politeness, "delay", "politeness", 0.0, 0.0)
    concurrency = check.integer(politeness, "concurrency", "politeness", 4, 1)
    obey_robots = check.boolean(politeness, "obey_robots", "politeness", True)
    allow_private = check.boolean(top, "allow_private_addresses", "", False)
    if allow_private and _discovers_anywhere(top) and not domains:
        check.fail(
            "allow_private_addresses",
            "applies to discover.domains, which this discover rule does not have",
            "the private hosts listed in discover.domains",
        )
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
    zone = _timezone(top, check)
    proxies, sessions, login_url = _access(top, check, path)
    if check.errors:
        return None
    return Rule(
        site=site,
        name=name,
        path=path,
        domains=domains,
        start_urls=start_urls,
        links=links,
        feeds=feeds,
        sitemaps=sitemaps,
        api=api,
        search=search,
        discover=discover,
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
        timezone=zone,
        allow_private=allow_private,
        proxies=proxies,
        sessions=sessions,
        login_url=login_url,
    )


def _timezone(top: Mapping[str, Any], check: Checker) -> tzinfo | None:
    """``timezone``: the zone the site's times without a UTC offset are read in; None when not given (or
    after an error)."""
    if "timezone" not in top:
        return None
    value = top["timezone"]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 60:
        # YAML 1.1 reads h:mm unquoted as a number in base 60: +8:00 is 480.
        hours, minutes = divmod(abs(value), 60)
        written = f"{hours}:{minutes:02d}"
        unquoted = f"-{written}" if value < 0 else f"{written} or +{written}"
        check.fail(
            "timezone",
            f"wrong type: the number {value}, as YAML reads an unquoted {unquoted} (a number in base 60):"
            f" quote it, '{'-' if value < 0 else '+'}{hours:02d}:{minutes:02d}'",
            EXPECTED_ZONE,
        )
        return None
    name = check.string(value, "timezone", EXPECTED_ZONE)
    if name is None:
        return None
    zone = site_zone(name)
    if zone is None:
        check.fail("timezone", f"{_shown(name)} is no time zone{zone_hint(name)}", EXPECTED_ZONE)
    return zone


def _access(
    top: Mapping[str, Any], check: Checker, path: Path
) -> tuple[tuple[Proxy, ...], tuple[Session, ...], RuleRegex | None]:
    """``access``: the site's proxies (a list, or a file of them), its session files (relative to the
    rule's folder) and the regex of its login page's URL. No credential is ever in an error message."""
    if "access" not in top:
        return (), (), None
    expected = "a mapping with proxies or proxies_file, sessions, login_url"
    access = check.mapping(top["access"], "access", _ACCESS_KEYS, expected)
    if access is None:
        return (), (), None
    proxies: list[Proxy] = []
    if "proxies" in access and "proxies_file" in access:
        check.fail("access", "both proxies and proxies_file", "one of them")
    elif "proxies" in access:

        def proxy(value: str, key: str) -> Proxy:
            try:
                return parse_proxy(value)
            except AccessError as exc:
                raise RuleError(check.file, key, str(exc), "http://[user:password@]host:port") from None

        proxies = check.strings(access["proxies"], "access.proxies", "a proxy URL", proxy)
    elif "proxies_file" in access:
        name = check.string(access["proxies_file"], "access.proxies_file", "a file of proxy URLs")
        if name is not None:
            try:
                proxies = read_proxy_file(check.reading(path.parent / name))
            except AccessError as exc:
                check.fail("access.proxies_file", str(exc), "a file of proxy URLs, one per line")

    def session(value: str, key: str) -> Session:
        try:
            return read_session(check.reading(path.parent / value))
        except AccessError as exc:
            raise RuleError(
                check.file, key, str(exc), "a YAML or JSON file with cookies and/or headers"
            ) from None

    sessions = (
        check.strings(access["sessions"], "access.sessions", "a session file", session)
        if "sessions" in access
        else []
    )
    names = [s.name for s in sessions]
    for duplicate in sorted({name for name in names if names.count(name) > 1}):
        check.fail(
            "access.sessions", f"two sessions named {_shown(duplicate)}", "session files of different names"
        )
    login = check.regexes(access["login_url"], "access.login_url")[:1] if "login_url" in access else ()
    return tuple(dict.fromkeys(proxies)), tuple(sessions), login[0] if login else None


def _domains(top: Mapping[str, Any], check: Checker, key: str = "domains") -> tuple[str, ...]:
    expected = "a host name such as example.com, without scheme, port or path"

    def host_name(value: str, key: str) -> str:
        host = value.strip().rstrip(".").lower()
        try:
            return str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            pass
        host = ascii_host(host)
        if not _HOST_LABELS_RE.fullmatch(host):
            raise RuleError(check.file, key, f"not a host name: {_shown(value)}", expected)
        return host

    if "domains" not in top:
        check.missing("domains", f"a list of host names, each {expected}")
        return ()
    return tuple(dict.fromkeys(check.strings(top["domains"], key, expected, host_name)))


def _start_urls(top: Mapping[str, Any], check: Checker, domains: Sequence[str]) -> tuple[str, ...]:
    expected = "an http:// or https:// URL of an index page"
    if "start_urls" not in top:
        others = f"{', '.join(_SOURCE_KEYS)} or discover"
        check.missing("start_urls", f"a list of URLs, each {expected} (or {others})")
        return ()
    return _urls(top, "start_urls", check, domains, expected)


def _urls(
    top: Mapping[str, Any],
    name: str,
    check: Checker,
    domains: Sequence[str],
    expected: str,
    path: str | None = None,
    domains_key: str = "domains",
) -> tuple[str, ...]:
    """The URLs of key ``name`` (one, or a list; ``path``: its key path, default ``name``): http(s),
    without credentials, on the ``domains`` (of the key ``domains_key``). An international host name is
    compared with the domains, and kept, in its ASCII (IDNA) form: the form requests go to."""

    def url_of(value: str, key: str) -> str:
        url = value.strip()
        try:
            parts = urlsplit(url)
            valid = parts.scheme in HTTP_SCHEMES and bool(parts.hostname) and parts.port != 0
        except ValueError:
            valid = False
        if not valid:
            meant = url_meant(url)
            hint = f"; did you mean {_shown(redacted(meant))}?" if meant is not None else ""
            raise RuleError(
                check.file, key, f"not an http(s) URL: {_shown(redacted(value))}", expected + hint
            )
        if parts.username is not None or parts.password is not None:
            raise RuleError(
                check.file, key, f"credentials in the URL {_shown(redacted(value))}", "a URL without them"
            )
        written = parts.hostname or ""
        host = ascii_host(written)
        if not host.isascii():
            raise RuleError(
                check.file,
                key,
                f"invalid host name {_shown(written)} in {_shown(value)}",
                "a host name whose labels have 1 to 63 characters",
            )
        if domains and not any(host == domain or host.endswith(f".{domain}") for domain in domains):
            raise RuleError(
                check.file,
                key,
                f"host {_shown(written.rstrip('.'))} of {_shown(value)} is not in {domains_key}",
                "a URL on the domains" if domains_key == "domains" else f"a URL on {domains_key}",
            )
        if not written.isascii():
            port = f":{parts.port}" if parts.port is not None else ""
            return urlunsplit(parts._replace(netloc=f"{host}{port}"))
        return url

    if name not in top:
        return ()
    return tuple(dict.fromkeys(check.strings(top[name], path or name, expected, url_of)))


def _api(top: Mapping[str, Any], check: Checker, domains: Sequence[str]) -> ApiRule | None:
    """``api``: a JSON endpoint as the site's index (its URLs, JMESPath to the items, each item's fields
    and the next page)."""
    expected = "a mapping with url, items, fields (with url), and optionally next, cursor_param, max_pages"
    errors = len(check.errors)
    api = check.section(top, "api", _API_KEYS, ("url", "items", "fields"), expected)
    if api is None:
        return None

    def path(value: object, key: str) -> JmesPath | None:
        text = check.string(value, key, EXPECTED_JMESPATH)
        if text is None:
            return None
        try:
            return JmesPath(text, file=check.file, key=key)
        except RuleError as exc:
            check.errors.append(exc)
            return None

    urls = _urls(api, "url", check, domains, "an http:// or https:// URL of the API's first page", "api.url")
    items = path(api["items"], "api.items") if "items" in api else None
    fields: dict[str, JmesPath] = {}
    if "fields" in api:
        specs = check.mapping(api["fields"], "api.fields", None, "a mapping of field names to JMESPath") or {}
        if "url" not in specs:
            check.missing("api.fields.url", "the JMESPath of each item's article URL")
        for name, spec in specs.items():
            if not _FIELD_NAME_RE.fullmatch(name):
                check.fail(
                    f"api.fields.{name}",
                    f"field name {_shown(name)} is not allowed",
                    "letters, digits and _, not starting with a digit",
                )
                continue
            compiled = path(spec, f"api.fields.{name}")
            if compiled is not None:
                fields[name] = compiled
    next_page = path(api["next"], "api.next") if "next" in api else None
    cursor = (
        check.string(api["cursor_param"], "api.cursor_param", "a query parameter name")
        if "cursor_param" in api
        else None
    )
    if cursor is not None and next_page is None:
        check.fail("api.cursor_param", "without api.next", "api.next: the JMESPath of the next cursor")
    max_pages = check.integer(api, "max_pages", "api", 5, 1)
    if len(check.errors) > errors or items is None:
        return None
    return ApiRule(urls, items, MappingProxyType(fields), next_page, cursor, max_pages)


def _search(top: Mapping[str, Any], check: Checker) -> SearchRule | None:
    """``search``: a search page's URL template with ``{keyword}``, the keywords, and how its results and
    its next page are found (as ``index``)."""
    expected = (
        "a mapping with url (with {keyword}), keywords, links, and optionally encoding, next_page, max_pages"
    )
    errors = len(check.errors)
    search = check.section(top, "search", _SEARCH_KEYS, ("url", "keywords", "links"), expected)
    if search is None:
        return None
    encoding = _search_encoding(search, check)
    template = None
    if "url" in search:
        template = check.string(search["url"], "search.url", "an http(s) URL with {keyword} in it")
        if template is not None:
            parts = urlsplit(template.replace("{keyword}", "x"))
            shown = _shown(redacted(template))
            if "{keyword}" not in template:
                check.fail(
                    "search.url", f"no {{keyword}} in {shown}", "a URL with {keyword} where the words go"
                )
            elif parts.scheme not in HTTP_SCHEMES or not parts.hostname:
                check.fail("search.url", f"not an http(s) URL: {shown}", "an http(s) URL with {keyword}")
            elif parts.username is not None or parts.password is not None:
                check.fail("search.url", f"credentials in the URL {shown}", "a URL without them")
            elif encoding is not None and (unencodable := _unencodable(parts.query, encoding)) is not None:
                check.fail(
                    "search.url",
                    f"{shown} cannot be encoded in {encoding} (search.encoding): {unencodable}",
                    f"the query's other characters in {encoding}, or percent-encoded in it",
                )

    def keyword(text: str, path: str) -> str:
        text = text.strip()
        unencodable = _unencodable(text, encoding) if encoding is not None else None
        if unencodable is not None:
            raise RuleError(
                check.file,
                path,
                f"{_shown(text)} cannot be encoded in {encoding} (search.encoding): {unencodable}",
                f"a keyword {encoding} can encode, or search.encoding utf-8 if the search page reads UTF-8",
            )
        return text

    keywords: list[str] = []
    if "keywords" in search:
        keywords = check.strings(search["keywords"], "search.keywords", "a keyword or phrase", keyword)
    links = LinkRule()
    if "links" in search:
        expected_links = "a mapping with xpath (result areas or hrefs), allow or both, and optionally deny"
        links = _links(search["links"], "search.links", check, expected_links)
    next_page = _next_page(search, "search", check)
    max_pages = check.integer(search, "max_pages", "search", 1, 1)
    if len(check.errors) > errors or template is None or encoding is None:
        return None
    return SearchRule(template, tuple(dict.fromkeys(keywords)), links, next_page, max_pages, encoding)


def _search_encoding(search: Mapping[str, Any], check: Checker) -> str | None:
    """``search.encoding``: the web encoding the search page reads its query in (default UTF-8); None after
    an error."""
    if "encoding" not in search:
        return "utf-8"
    expected = (
        "the encoding the search page reads its query in, such as utf-8, gbk, big5, shift_jis or euc-kr"
    )
    label = check.string(search["encoding"], "search.encoding", expected)
    if label is None:
        return None
    encoding = normalize_encoding(label)
    if encoding is None:
        check.fail("search.encoding", f"unknown encoding {_shown(label)}", expected)
    elif encoding.startswith(("utf-16", "utf-32")):
        check.fail(
            "search.encoding",
            f"{_shown(label)}: a URL's query is never sent in UTF-16 or UTF-32 (browsers send UTF-8 for such"
            " pages)",
            "utf-8",
        )
        return None
    return encoding


def _unencodable(text: str, encoding: str) -> str | None:
    """The first character of ``text`` that the web encoding ``encoding`` has not, in words; None when it
    has them all."""
    try:
        text.encode(query_codec(encoding))
    except UnicodeEncodeError as exc:
        character = text[exc.start]
        return f"{_shown(character)} (U+{ord(character):04X}) is not in it"
    return None


def _discover(top: Mapping[str, Any], check: Checker, path: Path) -> DiscoverRule | None:
    """``discover``: a crawl toward a topic (keywords, example article files next to the rule, sites whose
    stored articles are examples), from seed URLs, within a page budget, a depth and domains."""
    expected = (
        "a mapping with topic, seeds, and optionally budget, max_depth, domains, deny_domains, threshold,"
        " strategy"
    )
    errors = len(check.errors)
    section = check.section(top, "discover", _DISCOVER_KEYS, ("topic", "seeds"), expected)
    if section is None:
        return None
    keywords: list[str] = []
    examples: list[str] = []
    sites: list[str] = []
    topic_expected = "a mapping with keywords, examples (article files), sites (whose articles), or several"
    topic = check.mapping(section.get("topic", {}), "discover.topic", _TOPIC_KEYS, topic_expected) or {}
    if "keywords" in topic:
        keywords = check.strings(
            topic["keywords"], "discover.topic.keywords", "a keyword or phrase", lambda text, _: text.strip()
        )
    if "examples" in topic:
        examples = check.strings(
            topic["examples"],
            "discover.topic.examples",
            "the path of an article file (text or HTML), relative to the rule file",
            lambda name, key: _example(name, key, check, path),
        )
    if "sites" in topic:
        sites = check.strings(
            topic["sites"],
            "discover.topic.sites",
            "a site id (a rule file's name)",
            lambda text, _: text.strip(),
        )
    if "topic" in section and not any(key in topic for key in _TOPIC_KEYS):
        check.fail("discover.topic", "no keywords, examples or sites", topic_expected)
    allowed = (
        _domains({"domains": section["domains"]}, check, "discover.domains") if "domains" in section else ()
    )
    denied = (
        _domains({"domains": section["deny_domains"]}, check, "discover.deny_domains")
        if "deny_domains" in section
        else ()
    )
    seeds = _urls(
        section, "seeds", check, allowed, "an http(s) URL to start from", "discover.seeds", "discover.domains"
    )
    budget = check.integer(section, "budget", "discover", 500, 1)
    max_depth = check.integer(section, "max_depth", "discover", 3, 1)
    threshold = check.number(section, "threshold", "discover", 0.5, 0.0)
    if threshold >= 1.0:
        check.fail(
            "discover.threshold", f"{threshold!r} is 1 or more", "a relevance between 0 and 1, e.g. 0.5"
        )
    strategy = DISCOVER_STRATEGIES[0]
    if "strategy" in section:
        given = check.string(section["strategy"], "discover.strategy", " or ".join(DISCOVER_STRATEGIES))
        if given is not None and given not in DISCOVER_STRATEGIES:
            check.fail(
                "discover.strategy", f"unknown strategy {_shown(given)}", " or ".join(DISCOVER_STRATEGIES)
            )
        elif given is not None:
            strategy = given
    if len(check.errors) > errors:
        return None
    return DiscoverRule(
        keywords=tuple(dict.fromkeys(keywords)),
        seeds=seeds,
        examples=tuple(examples),
        example_sites=tuple(dict.fromkeys(sites)),
        budget=budget,
        max_depth=max_depth,
        domains=allowed,
        deny_domains=denied,
        threshold=threshold,
        strategy=strategy,
    )


def _discovers_anywhere(top: Mapping[str, Any]) -> bool:
    """Whether the rule has a discover section without ``domains`` (read from the file, so that the check
    holds whatever other error the section has)."""
    section = top.get("discover")
    return isinstance(section, dict) and "domains" not in section


def _example(name: str, key: str, check: Checker, path: Path) -> str:
    """The text of the example article file ``name`` (relative to the rule file ``path``), decoded as a
    page is (BOM, ``<meta>`` charset, detection); an HTML file's main text."""
    file = check.reading(path.parent / name.strip())
    try:
        data, _size = read_regular(file.resolve(), _EXAMPLE_MAX_BYTES)
    except OSError as exc:
        raise RuleError(
            check.file,
            key,
            f"cannot read {_shown(name)} ({file}: {exc.strerror or exc})",
            "an article file next to the rule",
        ) from None
    text = decode_html(data)
    if text.lstrip()[:1] == "<":
        text = extract(text).text
    if not text.strip():
        raise RuleError(check.file, key, f"no text in {_shown(name)}", "an article file with its text")
    return text


def _index(
    top: Mapping[str, Any], check: Checker, *, filters_only: bool = False
) -> tuple[LinkRule, RuleXPath | None, int]:
    """``index``; with ``filters_only`` (a rule without index pages), ``links`` only filters the links of
    its feeds, sitemaps and API, and ``deny`` alone is enough."""
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
        links = _links(index["links"], "index.links", check, expected_links, deny_alone=filters_only)
    next_page = _next_page(index, "index", check)
    max_pages = check.integer(index, "max_pages", "index", 1, 1)
    return links, next_page, max_pages


def _links(value: object, key: str, check: Checker, expected: str, *, deny_alone: bool = False) -> LinkRule:
    """``index.links`` or ``search.links``: where the links are (``xpath``), which are kept (``allow``,
    ``deny``); ``deny`` alone only with ``deny_alone`` (links that are not read off a page)."""
    spec = check.mapping(value, key, _LINKS_KEYS, expected)
    if spec is None:
        return LinkRule()
    if "xpath" not in spec and "allow" not in spec and not (deny_alone and "deny" in spec):
        check.fail(key, "neither xpath nor allow", expected)
    return LinkRule(
        xpath=check.xpaths(spec["xpath"], f"{key}.xpath", nodes=True) if "xpath" in spec else (),
        allow=check.regexes(spec["allow"], f"{key}.allow") if "allow" in spec else (),
        deny=check.regexes(spec["deny"], f"{key}.deny") if "deny" in spec else (),
    )


def _next_page(section: Mapping[str, Any], key: str, check: Checker) -> RuleXPath | None:
    """``index.next_page`` or ``search.next_page``: the XPath of the next page's link, when given."""
    if "next_page" not in section:
        return None
    value = section["next_page"]
    if not isinstance(value, str):
        check.wrong_type(f"{key}.next_page", value, EXPECTED_NODES_XPATH)
        return None
    found = check.xpaths(value, f"{key}.next_page", nodes=True)
    return found[0] if found else None


def _article(top: Mapping[str, Any], check: Checker, min_body_chars: int) -> tuple[dict[str, FieldRule], int]:
    if "article" not in top:
        return {}, min_body_chars
    article = check.mapping(top["article"], "article", _ARTICLE_KEYS, "a mapping with fields, min_body_chars")
    if article is None:
        return {}, min_body_chars
    fields: dict[str, FieldRule] = {}
    if "fields" in article:
        expected = "a mapping of field names to specs"
        given = article["fields"]
        if (
            given
            and isinstance(given, list)
            and all(isinstance(one, dict) and len(one) == 1 for one in given)
        ):
            expected += ': the same lines without their "- ", each field name a key of fields'
        specs = check.mapping(given, "article.fields", None, expected)
        for name, spec in (specs or {}).items():
            field_rule = _field(name, spec, check)
            if field_rule is not None:
                fields[name] = field_rule
    return fields, check.integer(article, "min_body_chars", "article", min_body_chars, 0)


def _field(name: str, value: object, check: Checker) -> FieldRule | None:
    key = f"article.fields.{name}"
    if not _FIELD_NAME_RE.fullmatch(name):
        check.fail(
            key,
            f"field name {_shown(name)} is not allowed",
            "letters, digits and _, not starting with a digit",
        )
        return None
    expected = "a mapping with xpath, regex or both, and optionally join and strip"
    if isinstance(value, str):
        expected += f", as in {name}: {{xpath: {_shown(value)}}}"
    spec = check.mapping(value, key, _FIELD_KEYS, expected)
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
    join = " "
    if "join" in spec:
        join = check.string(spec["join"], f"{key}.join", "a string put between the pieces", empty=True) or " "
    strip = check.boolean(spec, "strip", key, True)
    pattern = None
    if "regex" in spec:
        if isinstance(spec["regex"], str):
            # The regex of a stripped XPath result searches text whose only white space is a space and
            # the join's.
            spaces = " " + join if strip and "xpath" in spec else None
            found = check.regexes(spec["regex"], f"{key}.regex", spaces=spaces)
            pattern = found[0] if found else None
        else:
            check.wrong_type(f"{key}.regex", spec["regex"], EXPECTED_REGEX)
    return FieldRule(name, xpath, pattern, join, strip)


def _schedule(
    top: Mapping[str, Any], check: Checker
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


def _headers(top: Mapping[str, Any], check: Checker) -> dict[str, str]:
    if "headers" not in top:
        return {}
    headers = check.mapping(top["headers"], "headers", None, "a mapping of header names to values") or {}
    checked: dict[str, str] = {}
    for name, value in headers.items():
        key = f"headers.{name}"
        if not _HEADER_NAME_RE.fullmatch(name):
            check.fail(key, f"invalid header name {_shown(name)}", "letters, digits and -")
        elif name.lower() in _CREDENTIAL_HEADERS:
            check.fail(
                key,
                "a credential is never sent from headers (the queue does not keep it)",
                "the proxy's user and password in its URL in access.proxies, http://user:password@host:port"
                if name.lower() == "proxy-authorization"
                else "it in a session file of access.sessions, never sent after a redirect to another host",
            )
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
    if value == []:
        return "an empty list"
    if isinstance(value, list):
        return f"a list of {counted(len(value), 'item')}"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value}"
