"""The named exceptions of the crawler: one per domain; messages say what failed, the value and the fix.

Every exception carries the process exit code the command line uses for it, so ``crawler`` sub-commands
report any of them the same way: one line on stderr, that exit code, no traceback. :func:`folder_advice`
gives the fix of a file or folder that could not be made or written, by its ``errno``; :func:`redacted` is
a URL as a message may show it (``MONGO_URI``, ``REDIS_URL``, proxies, start URLs, URLs to fetch), and
:func:`redacted_text` a message with every http(s) URL in it so.
"""

from __future__ import annotations

import errno
import re
import stat
from pathlib import Path

__all__ = [
    "EXIT_FETCH",
    "EXIT_USAGE",
    "BlockedAddressError",
    "BodyTooLongError",
    "CrawlerError",
    "DocumentError",
    "FetchError",
    "HttpStatusError",
    "HungUp",
    "InputError",
    "NotAListingError",
    "StoreError",
    "StoreSettingError",
    "StoreUnavailableError",
    "Terminated",
    "file_in_the_way",
    "folder_advice",
    "redacted",
    "redacted_text",
]

# Exit codes of the command line (also listed in `crawler --help` and docs/cli.md).
EXIT_FETCH = 1
EXIT_USAGE = 2


class CrawlerError(Exception):
    """Base of every error reported to the user (as opposed to bugs, which keep their traceback)."""

    exit_code = EXIT_FETCH


class InputError(CrawlerError):
    """An input given by the user cannot be used: a missing or unreadable file, an empty or binary input,
    input over the size limit, or a URL that is malformed or not http/https."""

    exit_code = EXIT_USAGE


class FetchError(CrawlerError):
    """A URL could not be fetched: network failure, timeout, HTTP error status, refused by robots.txt,
    a loopback/private/link-local address, too many redirects, a response over the size limit."""

    exit_code = EXIT_FETCH

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class HttpStatusError(FetchError):
    """A URL answered with an HTTP error status ``status`` (``HTTP 404 Not Found for URL``)."""

    def __init__(self, message: str, *, url: str, status: int) -> None:
        super().__init__(message, url=url)
        self.status = status


class BlockedAddressError(FetchError):
    """A URL whose host resolves to a loopback, private, link-local or otherwise non-public address."""


class DocumentError(CrawlerError):
    """A PDF or DOCX article whose text cannot be read: encrypted, broken, or past a limit."""


class BodyTooLongError(CrawlerError):
    """An article's body (``what``: the rule's, or the one qRead read from the page) of ``chars``
    characters, over ``TEXT_MAX_BODY_CHARS`` (``limit``): its request is dead-lettered, kind "body too
    long", with this reason. A PDF read only up to the page that passed the limit says so (``pages``: the
    pages read, of how many) and suggests a limit for all its pages at the rate of those read, or for the
    first ``readable`` (the most that are read, when it has more)."""

    def __init__(
        self,
        url: str,
        what: str,
        chars: int,
        limit: int,
        pages: tuple[int, int] = (0, 0),
        *,
        readable: int | None = None,
    ) -> None:
        read, total = pages
        length, setting = f"{chars:,} characters", f"`-s TEXT_MAX_BODY_CHARS={chars}`"
        if read < total:
            length += f" in its first {read} of {total:,} pages (the rest not read)"
            counted = total if readable is None else min(readable, total)
            whose = (
                f"its {total:,} pages"
                if counted == total
                else f"its first {counted:,} pages, as many as are read,"
            )
            setting = f"`-s TEXT_MAX_BODY_CHARS={-(-chars * counted // read)}` ({whose} at that rate)"
        super().__init__(
            f"{url}: {what} is {length}, over TEXT_MAX_BODY_CHARS ({limit:,}): no article is that long;"
            f" if this one is, {setting} on the crawl's command (worker, run or temp), then requeue it"
        )


class NotAListingError(CrawlerError):
    """A page that the rule's ``feeds``, ``sitemaps`` or ``api.url`` names is no feed, sitemap or JSON of
    its API: a crawl dead-letters it."""


class StoreError(CrawlerError):
    """The article store cannot be opened, read or written, or an article or query given to it is invalid."""


class StoreSettingError(StoreError):
    """A store setting (``MONGO_URI``, ``MONGO_DB_PREFIX``, ``DEDUP_WINDOW_DAYS``, ...) has a value the store
    cannot use: a usage error, found before anything is crawled or read."""

    exit_code = EXIT_USAGE


class Terminated(KeyboardInterrupt):
    """SIGTERM asked the process to stop (``docker stop``, a service manager, ``kill``): a
    KeyboardInterrupt, so every clean stop made for Ctrl-C runs, and the command exits with 143 (128 +
    SIGTERM) rather than Ctrl-C's 130."""


class HungUp(KeyboardInterrupt):
    """SIGHUP asked the process to stop (its terminal closed): the clean stop of :class:`Terminated`, and
    the exit code 129 (128 + SIGHUP)."""


class StoreUnavailableError(StoreError):
    """The store could not write a batch (disk full, read-only, a corrupt file, the server away): its
    articles are not stored, and their requests are tried again later; or, when ``lasting`` (an error no
    wait mends: a damaged file, no permission, a read-only disk), dead-lettered at once. When ``locked``
    (a week's SQLite file whose write lock another process holds), the wait uses up no try: its requests
    are tried again until the lock is let go."""

    def __init__(self, message: str, *, lasting: bool = False, locked: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting
        self.locked = locked


def folder_advice(exc: OSError, folder: Path) -> str:
    """What to do when a file or folder in ``folder`` (or ``folder`` itself) could not be made or written
    for ``exc``: free space on its disk (full, or over a quota), raise the limit a file grew past, move
    away the file that stands where a folder must be (named), or make the folder writable (``folder``, or
    the folder above it that exists when it does not: the one it cannot be made in), or give another
    folder than one that takes no new entry (ENOENT from a folder that is there: /proc, /sys); empty for
    any other error, which says best what is wrong."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free space on the disk of {folder}"
    if exc.errno == errno.EFBIG:
        return (
            f"a file in {folder} may grow no larger (`ulimit -f`, or its file system's limit): raise the"
            " limit, or give another data folder"
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        try:
            in_the_way = file_in_the_way(Path(exc.filename) if exc.filename else folder)
        except PermissionError as denied:
            return (
                f"the crawler's user may not search {Path(denied.filename).parent}: make it readable and"
                " searchable by that user, or give another data folder"
            )
        if in_the_way is not None:
            return f"{in_the_way} is a file, not a folder: move it away, or give another data folder"
    if exc.errno == errno.ENOENT and exc.filename:
        # Else a folder above was removed meanwhile: the error says so.
        above = Path(exc.filename).parent
        if _seen_folder(above):
            return f"{above} takes no new file or folder (a system folder): give another data folder"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        existing = next((part for part in [folder, *folder.parents] if _seen_folder(part)), folder)
        return f"make {existing} writable by the crawler's user, or give another data folder"
    return ""


def _seen_folder(path: Path) -> bool:
    """Whether ``path`` is a folder this user can see: False too when a folder above it may not be entered
    (``Path.is_dir`` raises that EACCES)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def file_in_the_way(path: Path) -> Path | None:
    """The first of ``path`` and the folders above it, from the top, that exists and is no folder; None
    when there is none. :class:`PermissionError` when a folder on the way may not be searched (its
    ``filename`` is the entry of that folder that could not be looked at): whether a file stands below it
    cannot be told."""
    for part in [*reversed(path.parents), path]:
        try:
            mode = part.stat().st_mode
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                raise
            return None
        if not stat.S_ISDIR(mode):
            return part
    return None


# Where the authority of a URL ends (after its scheme's ``//``).
_AUTHORITY_END_RE = re.compile(r"[/?#]")
# An authority that holds no user name: a host (or [IPv6 address]) and a port of digits, or a list of them
# (MongoDB's h1:27017,h2).
_HOST_PORT_RE = re.compile(r"(?:\[[^\]]*\]|[^:@,\[\]]*)(?::\d+)?(?:,(?:\[[^\]]*\]|[^:@,\[\]]*)(?::\d+)?)*")
# The rest of a password cut by an unencoded "?" or "#" after digits, read as a port ("user:1234?x@host"): no
# query of name=value pairs, an "@", then a host.
_PASSWORD_TAIL_RE = re.compile(r"[?#][^=&;/@]*@[^/?#@]*(?:[/?#]|$)")
# Names of query or fragment parameters whose values may be secrets (redis://host/0?password=...,
# ?api_key=...), matched whole: ?author=, ?design=, ?keyword= and ?passage= are no secrets.
_SECRET_NAMES = (
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "token",
    "access_token",
    "auth",
    "authorization",
    "code",
    "auth_code",
    "authorization_code",
    "ticket",
    "jwt",
    "api_key",
    "apikey",
    "key",
    "secret",
    "client_secret",
    "sig",
    "signature",
    "session",
    "sessionid",
    "session_id",
    "sid",
    "jsessionid",
    "phpsessid",
    "credential",
    "credentials",
    "cookie",
)
# Endings of such names after a "_" or "-" (refresh_token, x-api-key, aws_secret, x-amz-signature).
_SECRET_SUFFIXES = ("token", "key", "secret", "password", "passwd", "signature", "sig", "auth", "sessionid")
_SECRET_PARAMETER_RE = re.compile(
    r"(?P<name>[?#&;](?:"
    + "|".join(_SECRET_NAMES)
    + r"|[^=?#&;]*[_-](?:"
    + "|".join(_SECRET_SUFFIXES)
    + r"))=)[^?#&;]*",
    re.IGNORECASE,
)

# The user name and password of a URL inside another one's query or fragment (?next=http://u:pw@host/),
# plain or percent-encoded: up to the last "@" before its host, which ends at a "/", "?", "#", "&" or ";".
_NESTED_USERINFO_RE = re.compile(
    r"(?<![a-z0-9+.-])(?P<scheme>[a-z][a-z0-9+.-]*(?::|%3a)(?:/|%2f){2})(?:[^/?#&;%]|%(?!2f|3f|23)[0-9a-f]{2})*(?P<at>@|%40)",
    re.IGNORECASE,
)

# An http(s) URL inside a message: up to a space, a quote or an angle bracket (Scrapy's "<GET url>").
_URL_IN_TEXT_RE = re.compile(r"https?://[^\s'\"<>]+", re.IGNORECASE)


def redacted(url: str) -> str:
    """``url`` as a message may show it: its user name and password, whatever stands before the ``@`` of
    its authority, as ``***`` (a user name can be the secret: a proxy's API key, a token); the values of
    query or fragment parameters that may be secrets (``password=``, ``token=``, ``api_key=``, OAuth's
    ``code=``...) as ``***``, and so the user name and password of a URL in a query or fragment value
    (``?next=http://u:pw@host/``, plain or percent-encoded); scheme, host, port and path as they are. A
    value with no ``scheme://`` is read as an authority and what follows it (``user:pw@host:3128``).

    >>> redacted("redis://user:s3cret@db.test:6379/0?password=s3cret&health=1")
    'redis://***@db.test:6379/0?password=***&health=1'
    >>> redacted("https://site.test/login?next=http://u:s3cret@evil.test/")
    'https://site.test/login?next=http://***@evil.test/'
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    found = _AUTHORITY_END_RE.search(rest)
    end = found.start() if found else len(rest)
    if "@" in rest and (not _HOST_PORT_RE.fullmatch(rest[:end]) or _PASSWORD_TAIL_RE.match(rest, end)):
        # The authority holds a user name; its password may hold an unencoded "@", "/", "?" or "#"
        # ("user:p@ss", "user:pa/ss@host", "user:pa?ss@host", which urlparse reads as a query): it runs to
        # the last "@" before the path that follows its first "@".
        path = rest.find("/", rest.index("@"))
        at = rest.rindex("@", 0, path if path >= 0 else len(rest))
    else:
        at = -1
    if at >= 0:
        rest = "***" + rest[at:]
    shown = _NESTED_USERINFO_RE.sub(r"\g<scheme>***\g<at>", f"{scheme}{separator}{rest}")
    return _SECRET_PARAMETER_RE.sub(r"\g<name>***", shown)


def redacted_text(text: str) -> str:
    """``text`` with each http(s) URL in it :func:`redacted`: a dead letter's reason, a note for a job's
    summary, a log line's URL.

    >>> redacted_text("HTTP 503 at https://site.test/feed?token=s3cret (after 2 retries)")
    'HTTP 503 at https://site.test/feed?token=*** (after 2 retries)'
    """
    return _URL_IN_TEXT_RE.sub(lambda found: redacted(found.group()), text)
