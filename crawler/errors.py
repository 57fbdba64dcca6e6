"""The named exceptions of the crawler: one per domain; messages say what failed, the value and the fix.

Every exception carries the process exit code the command line uses for it, so ``crawler`` sub-commands
report any of them the same way: one line on stderr, that exit code, no traceback.
"""

from __future__ import annotations

__all__ = [
    "EXIT_FETCH",
    "EXIT_USAGE",
    "BlockedAddressError",
    "CrawlerError",
    "DocumentError",
    "FetchError",
    "InputError",
    "StoreError",
    "StoreUnavailableError",
    "Terminated",
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


class BlockedAddressError(FetchError):
    """A URL whose host resolves to a loopback, private, link-local or otherwise non-public address."""


class DocumentError(CrawlerError):
    """A PDF or DOCX article whose text cannot be read: encrypted, broken, or past a limit."""


class StoreError(CrawlerError):
    """The article store cannot be opened, read or written, or an article or query given to it is invalid."""


class Terminated(KeyboardInterrupt):
    """SIGTERM asked the process to stop (``docker stop``, a service manager, ``kill``): a
    KeyboardInterrupt, so every clean stop made for Ctrl-C runs, and the command exits with 143 (128 +
    SIGTERM) rather than Ctrl-C's 130."""


class StoreUnavailableError(StoreError):
    """The store could not write a batch (disk full, read-only, a corrupt file, the server away): its
    articles are not stored, and their requests are tried again later."""
