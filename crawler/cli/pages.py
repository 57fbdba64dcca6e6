"""The page a command works on: read from a file or standard input, or fetched through Scrapy
(:mod:`crawler.worker.fetch`), decoded, and given to an extractor."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lxml.etree

from crawler.commandline import url_meant
from crawler.errors import InputError
from extractors import Extraction, get_extractor
from extractors.encoding import Decoded, decode_checked, sniff_binary

__all__ = [
    "ENCODING_SOURCES",
    "URL_RE",
    "Page",
    "decode_page",
    "encoding_reason",
    "read_page",
    "run_algorithm",
    "shown",
]

logger = logging.getLogger(__name__)

URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
ENCODING_SOURCES = {
    "bom": "byte order mark",
    "declared": "Content-Type header",
    "meta": "<meta> in the page",
    "utf-8": "valid UTF-8",
    "utf-16": "UTF-16 without byte order mark",
    "detected": "detected by charset-normalizer",
    "default": "fallback, nothing else fitted",
    "given": "the rule's encoding key",
}


@dataclass(frozen=True, slots=True)
class Page:
    """The bytes of the page to extract from, and where they came from."""

    source: str  # as the user gave it: URL, path or "-"
    data: bytes
    url: str | None = None  # final URL when fetched
    content_type: str | None = None
    redirects: tuple[str, ...] = ()
    also: Mapping[str, bytes | None] = field(default_factory=dict)  # read_page's ``also``: their bodies
    followed: Mapping[str, bytes | None] = field(default_factory=dict)  # read_page's ``follow``: the same


def read_page(
    source: str,
    *,
    also: Sequence[str] = (),
    max_bytes: int,
    timeout: float,
    obey_robots: bool,
    headers: Mapping[str, str] | None = None,
    private_domains: Sequence[str] = (),
    proxy: str | None = None,
    robots_hint: str | None = None,
    private_hint: Callable[[str], str] | None = None,
    follow: Callable[[Page], Sequence[str]] | None = None,
) -> Page:
    """The page's bytes from a URL (fetched with ``headers``; hosts of ``private_domains`` may be private
    addresses; ``also``, ``robots_hint``, ``private_hint`` and ``follow`` (given the page) as
    :func:`crawler.worker.fetch.fetch` takes them: the bodies of ``also`` that answered 2xx are in the
    page's ``also``, None for the others, and so those ``follow`` named in its ``followed``), a
    file or stdin (``-``);
    :class:`InputError` / ``FetchError`` else."""
    if not source.strip():
        raise InputError("no page given: expected an http(s) URL, the path of an HTML file, or - for stdin")
    if source == "-":
        return Page("-", _limited(sys.stdin.buffer.read(max_bytes + 1), "standard input", max_bytes))
    if URL_RE.match(source):
        from crawler.worker.fetch import fetch  # noqa: PLC0415 - Scrapy only when a URL is fetched

        response = fetch(
            source,
            also=also,
            timeout=timeout,
            max_bytes=max_bytes,
            obey_robots=obey_robots,
            headers=headers,
            private_domains=private_domains,
            proxy=proxy,
            robots_hint=robots_hint,
            private_hint=private_hint,
            follow=(
                None
                if follow is None
                else lambda got: follow(Page(source, got.body, got.url, got.content_type, got.redirects))
            ),
        )
        bodies = {url: got.body if got is not None else None for url, got in response.also.items()}
        followed = {url: got.body if got is not None else None for url, got in response.followed.items()}
        return Page(
            source, response.body, response.url, response.content_type, response.redirects, bodies, followed
        )
    path = Path(source)
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except FileNotFoundError:
        hint = "give the path of an HTML file, an http(s) URL, or - for standard input"
        host = source.split("/", 1)[0]
        if ("/" in source.strip("/") and "." in host.strip(".")) or source.startswith("www."):
            hint = f"did you mean the URL {url_meant(source) or f'https://{source}'} ?"
        raise InputError(f"no such file: {source!r} ({hint})") from None
    except IsADirectoryError:
        raise InputError(f"{source!r} is a directory, not an HTML file") from None
    except OSError as exc:
        raise InputError(f"cannot read {source!r}: {exc.strerror or exc}") from None
    return Page(source, _limited(data, repr(source), max_bytes))


def _limited(data: bytes, what: str, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise InputError(
            f"{what} is larger than the limit of {max_bytes:,} bytes (raise it with --max-bytes)"
        )
    return data


def decode_page(page: Page, given: str | None = None) -> Decoded:
    """The page as text, decoded as a crawl decodes it (:func:`extractors.encoding.decode_checked`; as
    ``given``, a rule's encoding, when there is one); :class:`InputError` when it is empty or not text."""
    what = f"the page fetched from {page.url}" if page.url else shown(page.source)
    if not page.data or page.data.isspace():
        raise InputError(f"{what} is empty: there is no page to extract from")
    kind = sniff_binary(page.data, page.content_type)
    if kind is not None:
        sent = f", sent as {page.content_type}" if page.content_type else ""
        raise InputError(f"{what} is not HTML: it looks like {kind}{sent}")
    decoded = decode_checked(page.data, page.content_type, given)
    logger.debug("decoded %s as %s (%s)", page.source, decoded.encoding, decoded.source)
    return decoded


def encoding_reason(decoded: Decoded) -> str:
    """Why the page was decoded as it was: ``meta in the page``, or ``detected by charset-normalizer: utf-8
    (Content-Type header) leaves 36 characters undecodable``."""
    reason = ENCODING_SOURCES[decoded.source]
    doubt = decoded.doubt
    if doubt is None:
        return reason
    if doubt.unproven is not None:
        multi_byte = sum(not char.isascii() for char in doubt.unproven.text)
        return (
            f"{reason}, though the {ENCODING_SOURCES[doubt.unproven.source]} says utf-8 and the page is valid"
            f" UTF-8, with {multi_byte} multi-byte characters (too few to tell)"
        )
    if doubt.better is not None and doubt.better.source == "bom":
        return (
            f"{reason}, which browsers read the page by whatever else names its encoding: {doubt.encoding}"
            f" ({ENCODING_SOURCES[doubt.source]}) set aside"
        )
    if doubt.replaced == 0:
        return f"{reason}: {doubt.encoding} ({ENCODING_SOURCES[doubt.source]}) reads it as other characters"
    left = f"{doubt.replaced} characters undecodable"
    if doubt.better is None:
        return f"{reason}, which leaves {left}"
    return f"{reason}: {doubt.encoding} ({ENCODING_SOURCES[doubt.source]}) leaves {left}"


def run_algorithm(
    html: str, *, url: str | None, title: str | None, algo: str, source: str, explain: bool = False
) -> Extraction:
    """Run the extractor named ``algo``; an input that breaks the parser is an :class:`InputError`."""
    try:
        extractor = get_extractor(algo)
    except ImportError as exc:
        raise InputError(f"algorithm {algo!r} is not available in this installation: {exc}") from None
    try:
        return extractor(html, url=url, title=title, explain=explain)
    except (RecursionError, MemoryError, lxml.etree.LxmlError) as exc:
        raise InputError(
            f"{shown(source)} could not be processed by {algo}: {type(exc).__name__}: {exc}"
        ) from None


def shown(source: str) -> str:
    return "standard input" if source == "-" else repr(source)
