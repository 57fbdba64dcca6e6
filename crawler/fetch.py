"""Fetch one URL politely and safely, for the command line (the crawl itself goes through Scrapy).

What a fetch does, in order, for the URL given and again for every redirect:

* only ``http`` and ``https`` URLs, without credentials in them;
* robots.txt of the URL's origin is read (cached per origin) and obeyed, with RFC 9309 matching: the group
  of our product token ``focused-crawler`` else ``*``, ``*`` and ``$`` wildcards, the longest rule wins,
  ``Allow`` on ties; a robots.txt answering 4xx allows everything, one answering 5xx or unreachable refuses
  the fetch (pass ``obey_robots=False``, ``--ignore-robots`` on the command line, to skip the check);
* the host is resolved here, every address checked, and the connection made to a checked address (then the
  peer address checked again), so DNS cannot swap in another address between check and connection: any
  address that is not globally routable (loopback, private, link-local, shared, multicast, reserved) is
  refused with :class:`~crawler.errors.BlockedAddressError`;
* one ``timeout`` (seconds) bounds each request: connection, headers and body together;
* the body is limited to ``max_bytes`` *after* decompression (gzip and deflate are accepted), so a small
  compressed response cannot expand into gigabytes;
* at most ``max_redirects`` redirects; credentials are never sent, so none can follow a redirect.

The test-only allowance: the environment variable ``CRAWLER_ALLOW_PRIVATE_NETWORKS=1`` (or
``allow_private_networks=True``) lets fetches reach loopback and private addresses, so that the tests can
fetch from their local site server on 127.0.0.1. Production never sets it.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import os
import socket
import ssl
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field
from email.message import Message

from crawler import PROJECT_NAME, __version__
from crawler.errors import BlockedAddressError, FetchError, InputError

__all__ = [
    "ALLOW_PRIVATE_NETWORKS_ENV",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_REDIRECTS",
    "DEFAULT_TIMEOUT",
    "ROBOTS_TOKEN",
    "USER_AGENT",
    "Fetcher",
    "Response",
    "RobotsTxt",
    "blocked_reason",
    "fetch",
    "private_networks_allowed",
]

logger = logging.getLogger(__name__)

# Environment variable of the test-only allowance to fetch loopback/private addresses ("1" enables it).
ALLOW_PRIVATE_NETWORKS_ENV = "CRAWLER_ALLOW_PRIVATE_NETWORKS"
# The product token robots.txt groups are matched against, and the User-Agent header that starts with it.
ROBOTS_TOKEN = PROJECT_NAME
USER_AGENT = f"{ROBOTS_TOKEN}/{__version__} (focused web crawler; obeys robots.txt)"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_REDIRECTS = 5
# RFC 9309: crawlers must parse at least 500 KiB of a robots.txt; the rest is ignored.
ROBOTS_MAX_BYTES = 512 * 1024
_CHUNK = 64 * 1024
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5,*/*;q=0.1"
# Characters left as they are when a URL path/query is percent-encoded (RFC 3986 reserved + unreserved).
_URL_SAFE = "/?:@!$&'()*+,;=-._~%"
# The same for robots.txt matching, after decoding: '*' and '$' stay, so they keep their wildcard meaning.
_ROBOTS_SAFE = "/?:@!$&'()*+,;=-._~"


def private_networks_allowed() -> bool:
    """True when the test-only allowance ``CRAWLER_ALLOW_PRIVATE_NETWORKS=1`` is set in the environment."""
    return os.environ.get(ALLOW_PRIVATE_NETWORKS_ENV, "").strip() == "1"


@dataclass(frozen=True, slots=True)
class Response:
    """A fetched page: the final URL after redirects, its status, Content-Type and decompressed body."""

    url: str
    status: int
    content_type: str | None
    body: bytes
    redirects: tuple[str, ...] = ()

    @property
    def charset(self) -> str | None:
        """The ``charset`` parameter of the Content-Type header, as sent."""
        if not self.content_type:
            return None
        message = Message()
        message["content-type"] = self.content_type
        value = message.get_param("charset")
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class _Target:
    scheme: str
    host: str  # ASCII (IDNA) host name or IP address, without brackets
    port: int
    request_target: str  # path and query, percent-encoded
    url: str  # the normalized URL, without fragment

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if _DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}"


def _parse_url(url: str) -> _Target:
    """Split and normalize an http(s) URL; ``ValueError`` saying what is wrong with it otherwise."""
    url = url.strip()
    parts = urllib.parse.urlsplit(url)  # ValueError on a malformed IPv6 literal
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        raise ValueError(f"{shown}: only http:// and https:// URLs can be fetched")
    host = parts.hostname
    if not host:
        raise ValueError("no host name")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials in the URL are not supported (they would be sent in clear)")
    port = parts.port or _DEFAULT_PORTS[scheme]  # ValueError when out of range
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"invalid host name {host!r}: {exc}") from None
    path = urllib.parse.quote(parts.path or "/", safe=_URL_SAFE)
    query = urllib.parse.quote(parts.query, safe=_URL_SAFE)
    request_target = f"{path}?{query}" if query else path
    target = _Target(scheme, host, port, request_target, "")
    return _Target(scheme, host, port, request_target, target.origin + request_target)


def blocked_reason(address: str) -> str | None:
    """Why ``address`` may not be fetched (``"a loopback address"``), ``None`` when it is public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved or not ip.is_global:
        return "a reserved address, not globally routable"
    return None


# --- robots.txt -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    allow: bool
    pattern: str  # normalized, may hold '*' and a final '$'
    line: str  # as written, for messages


@dataclass(slots=True)
class RobotsTxt:
    """A parsed robots.txt (RFC 9309): groups of user-agent tokens and their allow/disallow rules."""

    groups: list[tuple[list[str], list[_Rule]]] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> RobotsTxt:
        groups: list[tuple[list[str], list[_Rule]]] = []
        agents: list[str] = []
        rules: list[_Rule] | None = None  # None until the current group has a rule line
        for raw in text.lstrip("\ufeff").splitlines():
            line = raw.split("#", 1)[0].strip()
            key, sep, value = line.partition(":")
            if not sep:
                continue
            key, value = key.strip().lower(), value.strip()
            if key == "user-agent":
                if rules is not None:  # a user-agent line after rules starts a new group
                    groups.append((agents, rules))
                    agents, rules = [], None
                token = value.split("/", 1)[0].strip().lower()
                if token:
                    agents.append(token)
            elif key in ("allow", "disallow") and agents:
                if rules is None:
                    rules = []
                if value:  # "Disallow:" with no path disallows nothing
                    rules.append(_Rule(key == "allow", _robots_normalize(value), f"{key.title()}: {value}"))
        if agents:
            groups.append((agents, rules or []))
        return cls(groups)

    def verdict(self, token: str, path: str) -> tuple[bool, str | None]:
        """Whether ``token`` may fetch ``path`` (path and query), and the deciding rule (None: no rule)."""
        if path.split("?", 1)[0] == "/robots.txt":
            return True, None
        token = token.lower()
        rules = [rule for agents, group in self.groups if token in agents for rule in group]
        if not rules and not any(token in agents for agents, _ in self.groups):
            rules = [rule for agents, group in self.groups if "*" in agents for rule in group]
        normalized = _robots_normalize(path)
        best: _Rule | None = None
        for rule in rules:
            if not _glob_match(rule.pattern, normalized):
                continue
            if best is None or (len(rule.pattern), rule.allow) > (len(best.pattern), best.allow):
                best = rule
        if best is None:
            return True, None
        return best.allow, best.line

    def allows(self, token: str, path: str) -> bool:
        return self.verdict(token, path)[0]


def _robots_normalize(path: str) -> str:
    # One percent-encoding for both sides: decode, then encode what is neither reserved nor unreserved.
    return urllib.parse.quote(urllib.parse.unquote(path), safe=_ROBOTS_SAFE)


def _glob_match(pattern: str, path: str) -> bool:
    """RFC 9309 matching: ``*`` is any run of characters, a final ``$`` anchors at the end; linear time."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    pieces = pattern.split("*")
    if not path.startswith(pieces[0]):
        return False
    position = len(pieces[0])
    if len(pieces) == 1:
        return not anchored or position == len(path)
    for piece in pieces[1:-1]:
        found = path.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    last = pieces[-1]
    if anchored:
        return path.endswith(last) and len(path) - len(last) >= position
    return path.find(last, position) >= 0


# --- fetching ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Fetcher:
    """Fetches pages one at a time with the checks of the module docstring; caches robots.txt per origin.

    ``allow_private_networks=None`` reads the test-only ``CRAWLER_ALLOW_PRIVATE_NETWORKS`` variable.
    """

    user_agent: str = USER_AGENT
    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_BYTES
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    obey_robots: bool = True
    allow_private_networks: bool | None = None
    _robots: dict[str, RobotsTxt] = field(default_factory=dict, repr=False)
    _ssl_context: ssl.SSLContext | None = field(default=None, repr=False)

    def fetch(self, url: str) -> Response:
        """GET ``url`` following redirects; :class:`InputError` for a bad URL, :class:`FetchError` else."""
        try:
            target = _parse_url(url)
        except ValueError as exc:
            raise InputError(f"invalid URL {url!r}: {exc}") from None
        response = self._follow(target, max_bytes=self.max_bytes, truncate=False, robots=self.obey_robots)
        if not 200 <= response.status < 300:
            raise FetchError(
                f"HTTP {response.status} {_reason(response.status)} for {response.url}"
                + (f" (redirected from {url})" if response.redirects else ""),
                url=response.url,
            )
        return response

    def _follow(self, target: _Target, *, max_bytes: int, truncate: bool, robots: bool) -> Response:
        redirects: list[str] = []
        while True:
            if robots:
                self._check_robots(target)
            status, headers, body = self._request(target, max_bytes=max_bytes, truncate=truncate)
            location = headers.get("Location")
            if status not in _REDIRECT_STATUSES or location is None:
                return Response(target.url, status, headers.get("Content-Type"), body, tuple(redirects))
            redirects.append(target.url)
            if len(redirects) > self.max_redirects:
                raise FetchError(
                    f"too many redirects: more than {self.max_redirects}, starting at {redirects[0]}"
                    f" (last: {target.url} -> {location})",
                    url=redirects[0],
                )
            next_url = urllib.parse.urljoin(target.url, location.strip())
            try:
                target = _parse_url(urllib.parse.urldefrag(next_url).url)
            except ValueError as exc:
                raise FetchError(
                    f"{target.url} redirected to {location!r}, which cannot be fetched: {exc}", url=target.url
                ) from None
            logger.debug("redirect %d: %s -> %s", status, redirects[-1], target.url)

    def _check_robots(self, target: _Target) -> None:
        robots = self._robots.get(target.origin)
        if robots is None:
            self._addresses(target)  # a refused address is reported for the page, not for its robots.txt
            robots = self._robots[target.origin] = self._read_robots(target)
        allowed, rule = robots.verdict(ROBOTS_TOKEN, target.request_target)
        if not allowed:
            raise FetchError(
                f"robots.txt of {target.origin} disallows {target.url} for user agent {ROBOTS_TOKEN!r}"
                f" (rule {rule!r}); pass --ignore-robots to fetch it anyway",
                url=target.url,
            )

    def _read_robots(self, target: _Target) -> RobotsTxt:
        robots_url = f"{target.origin}/robots.txt"
        try:
            response = self._follow(
                _parse_url(robots_url), max_bytes=ROBOTS_MAX_BYTES, truncate=True, robots=False
            )
        except BlockedAddressError:
            raise
        except FetchError as exc:
            raise FetchError(
                f"{exc} (reading robots.txt before {target.url}: a site whose robots.txt cannot be read is"
                " not fetched, RFC 9309; pass --ignore-robots to skip robots.txt)",
                url=target.url,
            ) from None
        if 400 <= response.status < 500 or response.status in _REDIRECT_STATUSES:
            logger.debug("%s answered %d: everything allowed", robots_url, response.status)
            return RobotsTxt()
        if not 200 <= response.status < 300:
            raise FetchError(
                f"{robots_url} answered HTTP {response.status} {_reason(response.status)}, so the site is"
                " taken to disallow everything (RFC 9309); pass --ignore-robots to fetch anyway",
                url=target.url,
            )
        return RobotsTxt.parse(response.body.decode("utf-8", "replace"))

    def _allow_private(self) -> bool:
        if self.allow_private_networks is None:
            return private_networks_allowed()
        return self.allow_private_networks

    def _addresses(self, target: _Target) -> list[tuple[int, str]]:
        """(family, address) of the host, every one checked: :class:`BlockedAddressError` if any fails."""
        try:
            infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise FetchError(
                f"cannot resolve host {target.host!r} of {target.url}: {exc}", url=target.url
            ) from None
        addresses = list(dict.fromkeys((int(info[0]), str(info[4][0])) for info in infos))
        if not addresses:
            raise FetchError(f"host {target.host!r} of {target.url} has no address", url=target.url)
        if not self._allow_private():
            for _, address in addresses:
                self._check_address(target, address)
        return addresses

    def _check_address(self, target: _Target, address: str) -> None:
        if self._allow_private():
            return
        reason = blocked_reason(address)
        if reason is not None:
            where = f"{address} is" if address == target.host else f"{target.host} resolves to {address},"
            raise BlockedAddressError(
                f"refusing to fetch {target.url}: {where} {reason}; loopback,"
                f" private and link-local addresses are never fetched ({ALLOW_PRIVATE_NETWORKS_ENV}=1 allows"
                " them, for tests against a local server only)",
                url=target.url,
            )

    def _connect(self, target: _Target, deadline: float) -> socket.socket:
        errors: list[str] = []
        for family, address in self._addresses(target):
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(_remaining(deadline, target))
                sock.connect((address, target.port))
            except OSError as exc:
                sock.close()
                errors.append(f"{address}: {exc.strerror or exc}")
                continue
            try:
                self._check_address(target, str(sock.getpeername()[0]))
            except BlockedAddressError:
                sock.close()
                raise
            return sock
        raise FetchError(
            f"cannot connect to {target.host} port {target.port} for {target.url}: {'; '.join(errors)}",
            url=target.url,
        )

    def _request(self, target: _Target, *, max_bytes: int, truncate: bool) -> tuple[int, Message, bytes]:
        """One GET without following redirects: status, headers and the body (empty for redirects/errors)."""
        deadline = time.monotonic() + self.timeout
        logger.debug("GET %s", target.url)
        sock = self._connect(target, deadline)
        connection: http.client.HTTPConnection
        try:
            if target.scheme == "https":
                if self._ssl_context is None:
                    self._ssl_context = ssl.create_default_context()
                sock = self._ssl_context.wrap_socket(sock, server_hostname=target.host)
                connection = http.client.HTTPSConnection(target.host, target.port, context=self._ssl_context)
            else:
                connection = http.client.HTTPConnection(target.host, target.port)
            connection.sock = sock
            connection.request(
                "GET",
                target.request_target,
                headers={
                    "User-Agent": self.user_agent,
                    "Accept": _ACCEPT,
                    "Accept-Encoding": "gzip, deflate",
                    "Connection": "close",
                },
            )
            response = connection.getresponse()
            try:
                status = response.status
                headers = response.msg
                logger.debug("%d %s (%s)", status, target.url, headers.get("Content-Type"))
                if not 200 <= status < 300:
                    return status, headers, b""
                body = _read_body(
                    response, sock, target, deadline=deadline, max_bytes=max_bytes, truncate=truncate
                )
                return status, headers, body
            finally:
                response.close()
        except TimeoutError:
            raise FetchError(
                f"timed out after {self.timeout:g} s fetching {target.url}", url=target.url
            ) from None
        except ssl.SSLError as exc:
            raise FetchError(f"TLS failed for {target.url}: {exc}", url=target.url) from None
        except (http.client.HTTPException, OSError) as exc:
            detail = str(exc) or type(exc).__name__
            raise FetchError(f"fetching {target.url} failed: {detail}", url=target.url) from None
        finally:
            sock.close()


def fetch(
    url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
    obey_robots: bool = True,
    allow_private_networks: bool | None = None,
) -> Response:
    """Fetch ``url`` once with a new :class:`Fetcher` (see the module docstring for the checks)."""
    fetcher = Fetcher(
        timeout=timeout,
        max_bytes=max_bytes,
        obey_robots=obey_robots,
        allow_private_networks=allow_private_networks,
    )
    return fetcher.fetch(url)


def _remaining(deadline: float, target: _Target) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"deadline passed for {target.url}")
    return left


def _read_body(
    response: http.client.HTTPResponse,
    sock: socket.socket,
    target: _Target,
    *,
    deadline: float,
    max_bytes: int,
    truncate: bool,
) -> bytes:
    """The decompressed body, at most ``max_bytes`` (cut there when ``truncate``, else a FetchError)."""

    def too_large(what: str) -> FetchError:
        return FetchError(
            f"response of {target.url} is larger than the limit of {max_bytes:,} bytes ({what});"
            " raise the limit with --max-bytes if the page is wanted",
            url=target.url,
        )

    coding = (response.getheader("Content-Encoding") or "identity").strip().lower()
    decoder: zlib._Decompress | None
    if coding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif coding == "deflate":
        decoder = zlib.decompressobj()
    elif coding in ("identity", ""):
        decoder = None
    else:
        raise FetchError(
            f"{target.url} was sent with Content-Encoding {coding!r}, which is not supported"
            " (only gzip and deflate were asked for)",
            url=target.url,
        )
    length = response.getheader("Content-Length")
    if decoder is None and not truncate and length and length.isdigit() and int(length) > max_bytes:
        raise too_large(f"Content-Length {int(length):,}")
    chunks: list[bytes] = []
    size = raw_size = 0
    first = True
    while size <= max_bytes and not response.isclosed():  # it closes itself at the end of a known length
        sock.settimeout(_remaining(deadline, target))
        chunk = response.read(_CHUNK)
        if not chunk:
            break
        raw_size += len(chunk)
        if raw_size > max_bytes and not truncate:
            raise too_large("before decompression")
        if decoder is None:
            chunks.append(chunk)
            size += len(chunk)
            continue
        if first and coding == "deflate" and not _looks_zlib(chunk):
            decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send
        first = False
        pending = chunk
        try:
            while pending and size <= max_bytes and not decoder.eof:
                out = decoder.decompress(pending, max_bytes + 1 - size)
                chunks.append(out)
                size += len(out)
                pending = decoder.unconsumed_tail
        except zlib.error as exc:
            raise FetchError(f"corrupt {coding} body from {target.url}: {exc}", url=target.url) from None
        if decoder.eof:
            break
    if size > max_bytes:
        if not truncate:
            raise too_large("after decompression" if decoder is not None else "while reading")
        return b"".join(chunks)[:max_bytes]
    return b"".join(chunks)


def _looks_zlib(data: bytes) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _reason(status: int) -> str:
    return http.client.responses.get(status, "")
