"""How a site is reached: proxies and sessions (accounts), as rules and settings name them.

A proxy is an ``http://`` or ``https://`` URL, with a user name and password or without. Its **id** is the
URL without them (``http://proxy.example:8080``): the id is all that logs, Redis, ``crawler status`` and
error messages ever show; the credentials stay in the process's memory, on the way to the proxy.
Scrapy's downloader has no SOCKS support, so a ``socks5://`` proxy is an error that says so.

A session is a file (YAML or JSON) holding ``cookies`` and/or ``headers`` (mappings of names to strings):
a logged-in account's cookies, an API token. Its name is the file's name without its suffix. Its values
are never shown: a session prints as its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

import yaml

from crawler.errors import InputError, redacted
from crawler.rules.errors import YAML_UNREADABLE_VALUE, shown
from crawler.rules.files import read_regular

__all__ = [
    "PROXY_SCHEMES",
    "AccessError",
    "Proxy",
    "Session",
    "parse_proxy",
    "read_proxy_file",
    "read_session",
]

PROXY_SCHEMES = ("http", "https")
# Files of proxies or of a session are small: a bigger one is a mistake (a wrong path).
MAX_ACCESS_FILE_BYTES = 1024 * 1024


class AccessError(ValueError):
    """A proxy or a session that cannot be used; the message never holds a credential."""


@dataclass(frozen=True, slots=True)
class Proxy:
    """A proxy: ``id`` (its URL without credentials) is shown, ``url`` (with them) only used."""

    id: str
    url: str = field(repr=False, compare=False)

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True, slots=True)
class Session:
    """A named session: cookies and headers sent with each request of its site (never shown)."""

    name: str
    cookies: Mapping[str, str] = field(
        repr=False, compare=False, default_factory=lambda: MappingProxyType({})
    )
    headers: Mapping[str, str] = field(
        repr=False, compare=False, default_factory=lambda: MappingProxyType({})
    )

    def __str__(self) -> str:
        return self.name


def parse_proxy(text: str) -> Proxy:
    """The proxy ``text`` names; :class:`AccessError` (without its credentials) when it is none."""
    value = text.strip()
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise AccessError(f"not a proxy URL: {shown(redacted(value))}") from None
    scheme = parts.scheme.lower()
    if scheme.startswith("socks"):
        raise AccessError(
            f"{shown(redacted(value))}: SOCKS proxies are not supported (Scrapy's downloader speaks HTTP to"
            " proxies); use an http:// or https:// proxy"
        )
    if scheme not in PROXY_SCHEMES or not parts.hostname:
        raise AccessError(f"not a proxy URL: {shown(redacted(value))}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise AccessError(f"{shown(redacted(value))}: a proxy URL has no path")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    proxy_id = f"{scheme}://{host}" + (f":{port}" if port else "")
    return Proxy(proxy_id, value)


def global_proxies(listed: str | Sequence[str] | None, file: str | None) -> list[Proxy]:
    """The global proxies of the settings; :class:`InputError` naming the setting when one is wrong."""
    entries = re.split(r"[\s,]+", listed) if isinstance(listed, str) else list(listed or [])
    proxies: list[Proxy] = []
    for entry in (entry for entry in entries if entry.strip()):
        try:
            proxies.append(parse_proxy(entry))
        except AccessError as exc:
            raise InputError(
                f"setting CRAWLER_PROXIES: {exc}; expected http://[user:password@]host:port, separated by"
                " commas"
            ) from None
    if file:
        try:
            proxies.extend(read_proxy_file(Path(file)))
        except AccessError as exc:
            raise InputError(
                f"setting CRAWLER_PROXY_FILE: {exc}; expected a file of http://[user:password@]host:port"
                " lines"
            ) from None
    return list(dict.fromkeys(proxies))


def read_proxy_file(path: Path) -> list[Proxy]:
    """The proxies of a file, one URL per line (blank lines and ``#`` comments skipped)."""
    text = _read(path)
    proxies = []
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        try:
            proxies.append(parse_proxy(entry))
        except AccessError as exc:
            raise AccessError(f"{path}, line {number}: {exc}") from None
    if not proxies:
        raise AccessError(f"{path} lists no proxy (expected one http://host:port per line)")
    return proxies


def read_session(path: Path) -> Session:
    """The session of a file: ``cookies`` and/or ``headers``, mappings of names to strings."""
    text = _read(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AccessError(
            f"{path} is not YAML or JSON: {getattr(exc, 'problem', None) or 'unreadable'}"
        ) from None
    except YAML_UNREADABLE_VALUE as exc:
        raise AccessError(
            f"{path}: a value YAML takes for a date, a number or true/false is none ({exc}): quote the"
            " values (cookies and headers are strings)"
        ) from None
    expected = "a mapping with cookies and/or headers, each a mapping of names to strings"
    if not isinstance(data, dict) or not data or set(data) - {"cookies", "headers"}:
        raise AccessError(f"{path}: expected {expected}")
    values: dict[str, dict[str, str]] = {}
    for part in ("cookies", "headers"):
        entries = data.get(part, {})
        if not isinstance(entries, dict) or not all(
            isinstance(name, str) and isinstance(value, str) for name, value in entries.items()
        ):
            raise AccessError(f"{path}: {part} must be a mapping of names to strings (quote numbers)")
        values[part] = dict(entries)
    return Session(path.stem, MappingProxyType(values["cookies"]), MappingProxyType(values["headers"]))


def _read(path: Path) -> str:
    try:
        data, _size = read_regular(path, MAX_ACCESS_FILE_BYTES + 1)
    except OSError as exc:
        raise AccessError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_ACCESS_FILE_BYTES:
        raise AccessError(f"{path} is larger than {MAX_ACCESS_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AccessError(f"{path} is not UTF-8 text") from None
