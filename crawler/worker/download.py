"""The HTTP download handler of a worker and of the commands that fetch: Scrapy's HTTP/1.1 handler, closed
without its race.

Scrapy's handler closes its connection pool with a 1 s timer that fires the pool's Deferred if the pool
has not (it hangs on some network errors), and cancels that timer only once its coroutine resumes, a turn
of the event loop after the pool fired. When the reactor is busy for a second as the crawl closes (a slow
machine; pipelines closing in the same turn; a clean clone compiling the modules it imports), the pool's
aborted connections and the timer are handled in one pass: the pool fires, then the timer fires it again,
and Twisted prints ``AlreadyCalledError`` "while handling timed call" as a raw traceback on stderr, after
a crawl that ended well; a pool slower than the timer fires it a second time too. Here the close waits
for the first of the pool and the timer, and neither fires the other's Deferred.

:func:`connection_lost` says in words how a site's connection ended before its whole answer came, which
Scrapy's exceptions for it say with no message (``ResponseDataLossError``) or with the ``repr`` of
Twisted failures (``DownloadFailedError``), and that a body was longer than its Content-Length
(:class:`BodyPastLength`, which Twisted drops without a word); :func:`undecompressed`, that a body sent
compressed could not be decompressed, which zlib says as ``error: Error -3 while decompressing data: ...``
(and Brotli as a bare ``error``, gzip as ``BadGzipFile``, Zstandard as ``ZstdError``, a compressed stream
cut short as ``CompressedBodyCut``).

A stop (Ctrl-C, SIGTERM) sends :data:`STOP_DOWNLOADS` to the crawl
(:class:`crawler.worker.fetch.SignalledProcess`): the handler cancels its downloads under way and refuses
new ones, each failing with :class:`DownloadStopped`, which a crawl neither retries nor dead-letters: its
lease goes back to the queue as the crawl closes. Scrapy's clean stop waits for every download under way,
up to its ``DOWNLOAD_TIMEOUT`` (30 s) for a site that hangs.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import zlib
from collections.abc import Callable
from functools import partial
from typing import NamedTuple
from urllib.parse import urldefrag

import brotli
from backports import zstd
from OpenSSL import SSL
from scrapy import Request
from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadConnectionRefusedError, DownloadFailedError, ResponseDataLossError
from scrapy.http import Response
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectError, ConnectionRefusedError
from twisted.internet.interfaces import IAddress
from twisted.web._newclient import (
    STATUS,
    HTTP11ClientProtocol,
    ParseError,
    ResponseFailed,
    ResponseNeverReceived,
)
from twisted.web._newclient import Request as TxRequest
from twisted.web.http import _DataLoss, _IdentityTransferDecoder
from twisted.web.iweb import IResponse

from crawler.requests import Work
from crawler.worker.compression import CompressedBodyCut, UnknownContentEncoding
from crawler.worker.faults import RepeatedFaults

__all__ = [
    "DECOMPRESSION_ERRORS",
    "HEAD_MAX_BYTES",
    "STOP_DOWNLOADS",
    "BodyPastLength",
    "DownloadStopped",
    "HTTPDownloadHandler",
    "HeadLineTooLong",
    "HeadTooLong",
    "StaleConnection",
    "body_cut",
    "connection_lost",
    "head_invalid",
    "head_too_long",
    "not_http",
    "tls_not_served",
    "undecompressed",
]

logger = logging.getLogger(__name__)

# What Scrapy's HttpCompressionMiddleware raises for a body it cannot decompress: deflate's and a damaged
# gzip stream's zlib error, a body that is no gzip at all, Brotli's and Zstandard's errors; and what
# WholeDecompressionMiddleware raises for one whose compressed data was cut short, or that is no text sent
# with an encoding no decompressor knows.
DECOMPRESSION_ERRORS: tuple[type[BaseException], ...] = (
    CompressedBodyCut,
    UnknownContentEncoding,
    zlib.error,
    gzip.BadGzipFile,
    brotli.error,
    zstd.ZstdError,
)

# The longest response head read, as Chrome's (ERR_RESPONSE_HEADERS_TOO_BIG past 256 KB): no page a browser
# shows has a longer one. Without it a server sending header lines without end took a worker to 3 GB of
# memory within DOWNLOAD_TIMEOUT (30 s): DOWNLOAD_MAXSIZE bounds the body only.
HEAD_MAX_BYTES = 256 * 1024

# OpenSSL's reason for a first record that is no TLS record: the port answered in plain text.
_WRONG_VERSION = "wrong version number"

# The signal that stops the downloads of a crawl (sent by crawler.worker.fetch.SignalledProcess); each
# handler answers with the number of downloads it cancelled.
STOP_DOWNLOADS = object()


class DownloadStopped(Exception):
    """A download cancelled, or refused, because the crawl stops: no failure of the page."""


class HeadLineTooLong(Exception):
    """A line of a response's head (its status line, a header) longer than the HTTP client reads
    (Twisted's ``LineReceiver.MAX_LENGTH``): the client closes the connection, which Twisted says as
    "Connection was closed cleanly"."""

    def __init__(self, line: bytes, limit: int) -> None:
        name, colon, _ = line[:200].partition(b":")
        what = f"its {name.decode('latin-1').strip()} header" if colon else "a line of its head"
        super().__init__(
            f"the response could not be read: {what} is longer than {limit} bytes, the longest line of a"
            " response's head the HTTP client reads"
        )


class HeadTooLong(Exception):
    """A response's head (its status line and headers, those of the 1xx answers before it included)
    longer than :data:`HEAD_MAX_BYTES`, in lines each within the client's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the response could not be read: its head (status line and headers) is longer than {limit:,}"
            " bytes, the longest head the HTTP client reads"
        )


class BodyPastLength(_DataLoss):
    """A response body longer than its Content-Length: the HTTP client reads the body to that length and
    leaves the rest, as a browser does; a data loss, as a body cut short of its Content-Length is (Scrapy
    fails it unless ``DOWNLOAD_FAIL_ON_DATALOSS`` is off, when it keeps it flagged ``dataloss``)."""

    def __init__(self, declared: int, past: int) -> None:
        super().__init__(
            f"the site sent more than its Content-Length, {declared:,} bytes (at least {past:,} more came"
            " after them): the page would be stored cut short; its server sends a wrong Content-Length"
            " (`-s DOWNLOAD_FAIL_ON_DATALOSS=False` on the crawl's command keeps pages as they are cut)"
        )


def body_cut(error: BaseException | None) -> BodyPastLength | None:
    """The :class:`BodyPastLength` a download failed with (``error``), if it did."""
    if isinstance(error, ResponseDataLossError) and isinstance(error.__cause__, ResponseFailed):
        for reason in error.__cause__.reasons:
            if isinstance(reason.value, BodyPastLength):
                return reason.value
    return None


def head_too_long(error: BaseException | None) -> HeadLineTooLong | HeadTooLong | None:
    """The :class:`HeadLineTooLong` or :class:`HeadTooLong` a download failed with (``error``), if it
    did."""
    if isinstance(error, DownloadFailedError) and isinstance(error.__cause__, ResponseFailed):
        for reason in error.__cause__.reasons:
            if isinstance(reason.value, HeadLineTooLong | HeadTooLong):
                return reason.value
    return None


def not_http(error: BaseException | None) -> ParseError | None:
    """Twisted's :class:`ParseError` of an answer whose status line is not HTTP (a port of another
    protocol) a download failed with (``error``), if it did."""
    if isinstance(error, DownloadFailedError) and isinstance(error.__cause__, ResponseFailed):
        for reason in error.__cause__.reasons:
            if isinstance(reason.value, ParseError):
                return reason.value
    return None


def head_invalid(error: BaseException | None) -> ValueError | None:
    """The ValueError of a response head Twisted's parser refused (a Content-Length of ``-1``, two that
    disagree) a download failed with (``error``), if it did."""
    if isinstance(error, DownloadFailedError) and isinstance(error.__cause__, ResponseFailed):
        for reason in error.__cause__.reasons:
            if isinstance(reason.value, ValueError):
                return reason.value
    return None


def connection_lost(error: BaseException | None) -> str | None:
    """How the connection of a download that failed with ``error`` ended before its whole answer came
    (``connection cut: ...``, ``connection closed before an answer: ...``, ``connection failed: the answer
    is not HTTP: ...`` for a status line twisted cannot read; a line of the response's head, or the head,
    too long: :class:`HeadLineTooLong`, :class:`HeadTooLong`); None for any other failure."""
    if isinstance(error, ResponseDataLossError):
        cut = body_cut(error)
        if cut is not None:
            return f"body cut: {cut}"
        return "connection cut: the site closed it before the whole response came"
    if not isinstance(error, DownloadFailedError) or not isinstance(error.__cause__, ResponseFailed):
        return None
    too_long = head_too_long(error)
    if too_long is not None:
        return str(too_long)
    cause = error.__cause__
    tls = _tls_failed(cause)
    if tls is not None:
        return f"connection failed: {tls}"
    causes = "; ".join(reason.getErrorMessage() for reason in cause.reasons)
    if isinstance(cause, ResponseNeverReceived):
        return f"connection closed before an answer: {causes}"
    invalid = head_invalid(error)
    if invalid is not None:
        return f"connection failed: the response could not be read: its head is no valid HTTP ({invalid})"
    unparsed = not_http(error)
    if unparsed is not None:
        return (
            f"connection failed: the answer is not HTTP (its status line: {unparsed.args[0]} in"
            f" {unparsed.data[:100]!r}): does that port serve the web?"
        )
    return f"connection failed: {causes}"


def tls_not_served(error: BaseException | None) -> bool:
    """Whether a download failed (``error``) because its port answered the TLS handshake without TLS:
    OpenSSL's "wrong version number", said of a first record that is no TLS record (a plain HTTP answer),
    which the same port gives again. A handshake cut or reset (a SysCallError, "unexpected eof") may be
    the network's and is not this."""
    if isinstance(error, DownloadFailedError) and isinstance(error.__cause__, ResponseFailed):
        for reason in error.__cause__.reasons:
            said = _openssl_errors(reason.value) if isinstance(reason.value, SSL.Error) else None
            if said is not None and _WRONG_VERSION in said:
                return True
    return False


def _tls_failed(cause: ResponseFailed) -> str | None:
    """That the TLS handshake of a download failed (``cause``, its failure), in OpenSSL's words (its
    list of (library, function, reason) errors, said "library: reason"), and what OpenSSL's "wrong version
    number" means; None for any other failure."""
    for reason in cause.reasons:
        if isinstance(reason.value, SSL.Error):
            said = _openssl_errors(reason.value) or reason.getErrorMessage()
            hint = (
                ": the port answers without TLS: does it serve http://, not https://?"
                if _WRONG_VERSION in said
                else ""
            )
            return f"the TLS handshake failed ({said}){hint}"
    return None


def _openssl_errors(error: SSL.Error) -> str | None:
    """pyOpenSSL's error list ``[(library, function, reason), ...]`` said "library: reason; ..."; None when
    ``error`` holds no such list (a SysCallError: an errno and its message)."""
    listed = error.args[0] if error.args else None
    if not isinstance(listed, list) or not all(isinstance(one, tuple) and len(one) == 3 for one in listed):
        return None
    return "; ".join(": ".join(part for part in (one[0], one[2]) if part) for one in listed)


def what_to_check(error: BaseException | None, proxy: str | None) -> str | None:
    """What to check when a download failed with ``error`` before any answer came: a connection refused
    (by the ``proxy``, shown without its credentials, when the request went through one: the crawler then
    connects to the proxy alone), a connection closed without an answer, or another connect error; None
    for any other failure (a TLS handshake that failed among them: :func:`connection_lost` says what to
    check)."""
    if isinstance(error, DownloadConnectionRefusedError | ConnectionRefusedError):
        if proxy is not None:
            return (
                f"nothing listens at the proxy {proxy}; check its address and port (the rule's"
                " access.proxies, else CRAWLER_PROXIES or CRAWLER_PROXY_FILE), or start it"
            )
        return "nothing listens there; check the port of the URL, or start the site's server"
    far = "the server" if proxy is None else f"the proxy {proxy}"
    if isinstance(error, ConnectError):
        return f"check that this machine reaches {far} (its network, a firewall between)"
    if not isinstance(error, DownloadFailedError) or not isinstance(error.__cause__, ResponseNeverReceived):
        return None
    if any(reason.check(SSL.Error) for reason in error.__cause__.reasons):
        return None  # connection_lost says it, in OpenSSL's words and what they mean (_tls_failed)
    serves = "the port of the URL serves the web" if proxy is None else "it is an HTTP proxy"
    return (
        f"{far} closed the connection without answering: check that {serves}, and try again; one that keeps"
        " doing so may refuse this client (its user agent, its address)"
    )


def undecompressed(error: BaseException | None) -> str | None:
    """That the body of a download that failed with ``error``, sent compressed (``Content-Encoding: gzip``
    or ``deflate``, ``br``, ``zstd``), could not be decompressed, with the decompressor's reason; None for
    any other failure."""
    if isinstance(error, DECOMPRESSION_ERRORS):
        return f"its body, sent compressed (Content-Encoding), could not be decompressed: {error}"
    return None


class _CutBody(_IdentityTransferDecoder):
    """The body decoder of a response found longer than its Content-Length: the end of its body, which
    Twisted's parser reads from its decoder once the response is complete, is a :class:`BodyPastLength`."""

    __slots__ = ("_cut",)

    def __init__(self, cut: BodyPastLength) -> None:
        super().__init__(0, None, None)  # type: ignore[no-untyped-call]
        self._cut = cut

    def noMoreData(self) -> None:
        raise self._cut


class StaleConnection(Exception):
    """The answer to a request sent on a connection kept from an earlier answer (Twisted's pool) whose
    status line is not HTTP, or too long: bytes the earlier answer sent past its Content-Length (or past a
    Content-Length of 0), which came once the connection was back in the pool, most likely. Not this
    request's answer: Twisted's pool asks it again once on a new connection. ``previous`` and
    ``previous_site``: the URL and site ("" if none) of the earlier request; ``past``: how many bytes of
    the line refused were past its Content-Length, 0 when white space (no cut)."""

    def __init__(self, url: str, previous: str, previous_site: str, read: str, past: int) -> None:
        self.url = url
        self.previous = previous
        self.previous_site = previous_site
        self.past = past
        super().__init__(
            f"the answer on a connection kept from the answer to {previous} is not HTTP ({read}): bytes that"
            " answer sent past its Content-Length, most likely"
        )


class _HeadLimitParser(_LenientHTTPClientParser):
    """Scrapy's response parser, whose line over the limit fails the response with
    :class:`HeadLineTooLong` (Twisted's closes the connection without a word), whose head over
    :data:`HEAD_MAX_BYTES` with :class:`HeadTooLong` (Twisted's reads every line of it, however many),
    whose body followed by more than white space past its Content-Length with :class:`BodyPastLength`
    (Twisted's drops those bytes without a word), and whose status line that is not HTTP, or too long, on a
    kept connection with :class:`StaleConnection` (``reused_after``, ``reused_site``: the URL and site of
    the connection's last request; ``stale``: told of it)."""

    _head_bytes = 0
    reused_after: str | None = None
    reused_site = ""
    stale: Callable[[StaleConnection], None] = staticmethod(lambda _: None)

    def lineLengthExceeded(self, line: bytes) -> None:
        # Raised into HTTP11ClientProtocol.dataReceived, which gives the connection up with it as reason.
        if self.state == STATUS:
            self._stale_answer(f"a first line longer than {self.MAX_LENGTH} bytes", line)
        raise HeadLineTooLong(line, self.MAX_LENGTH)

    def statusReceived(self, status: bytes) -> None:
        try:
            super().statusReceived(status)  # type: ignore[no-untyped-call]
        except ParseError as error:
            # The line and its LF at least (a CR before it is gone).
            self._stale_answer(f"its status line: {error.args[0]} in {error.data[:100]!r}", status + b"\n")
            raise

    def _stale_answer(self, read: str, line: bytes) -> None:
        """Raise :class:`StaleConnection` (what was ``read``, of the bytes ``line``) if the connection was
        kept from an earlier answer."""
        if self.reused_after is None:
            return
        stale = StaleConnection(
            self.request.absoluteURI.decode("ascii", "replace"),
            self.reused_after,
            self.reused_site,
            read,
            len(line) if line.strip() else 0,
        )
        self.stale(stale)
        # None of the bytes read was this request's answer: the failure is ResponseNeverReceived, which
        # Twisted's pool asks again on a new connection (an idempotent request without a body; Scrapy's
        # RetryMiddleware retries any other).
        self._everReceivedData = False
        raise stale

    def lineReceived(self, line: bytes) -> None:
        self._head_bytes += len(line) + 2
        if self._head_bytes > HEAD_MAX_BYTES:
            raise HeadTooLong(HEAD_MAX_BYTES)
        super().lineReceived(line)

    def _finished(self, rest: bytes) -> None:
        # rest: what came past the body in the same read, empty for an answer that ends with its body. A
        # CR LF after the body (servers that end it with one) is no cut. Bytes of a later read are not
        # seen: the parser is gone by then; the idle connection reads them (_HeadLimitProtocol.dataReceived),
        # or the next request's parser (StaleConnection).
        if rest.strip() and isinstance(self.bodyDecoder, _IdentityTransferDecoder):
            self.bodyDecoder = _CutBody(BodyPastLength(self.response.length, len(rest)))
            # The bytes left are no answer to the next request: the connection is not reused.
            self.connHeaders.addRawHeader(b"Connection", b"close")
        super()._finished(rest)  # type: ignore[no-untyped-call]


class _Hooks(NamedTuple):
    """What a connection tells its handler: an answer on it that is not HTTP (``stale``), bytes that came
    on it while it idled (``late``: the URL and site of its last request, how many bytes, when they came);
    and what it asks (``site_of``: a site downloading a URL now, the one that asked last, "" if none)."""

    stale: Callable[[StaleConnection], None]
    late: Callable[[str, str, int, str], None]
    site_of: Callable[[str], str]


class _HeadLimitProtocol(_LenientHTTP11ClientProtocol):
    """Scrapy's protocol with :class:`_HeadLimitParser`, which remembers its last request to say whose
    answer bytes that come while it idles in the pool (no request sent on it) went past."""

    _last: str | None = None
    _last_site = ""

    def __init__(self, quiescent: Callable[[HTTP11ClientProtocol], None], hooks: _Hooks):
        super().__init__(quiescent)  # type: ignore[no-untyped-call]
        self._hooks = hooks

    def request(self, request: TxRequest) -> Deferred[IResponse]:
        answer = super().request(request)
        # As Scrapy's own protocol does: request() makes the parser, of a class it names.
        parser = self._parser
        assert parser is not None
        parser.__class__ = _HeadLimitParser
        assert isinstance(parser, _HeadLimitParser)
        parser.reused_after = self._last
        parser.reused_site = self._last_site
        parser.stale = self._hooks.stale
        self._last = request.absoluteURI.decode("ascii", "replace")
        self._last_site = self._hooks.site_of(self._last)
        return answer

    def dataReceived(self, data: bytes) -> None:
        if self._parser is None and self.state == "QUIESCENT":
            # Bytes while no request is under way, past the last answer's Content-Length most likely: that
            # page was read cut short. White space is no cut, as in _HeadLimitParser._finished. The
            # connection is given up, as Twisted's protocol does (its parser is gone).
            if self._last is not None and data.strip():
                self._hooks.late(self._last, self._last_site, len(data), "as its connection idled")
                self._last = None
            self.abort()  # type: ignore[no-untyped-call]
            return
        super().dataReceived(data)  # type: ignore[no-untyped-call]


class _HeadLimitFactory(_LenientHTTP11ClientFactory):
    def __init__(
        self, quiescent: Callable[[HTTP11ClientProtocol], None], metadata: str, hooks: _Hooks
    ) -> None:
        super().__init__(quiescent, metadata)  # type: ignore[no-untyped-call]
        self._hooks = hooks

    def buildProtocol(self, addr: IAddress | None) -> HTTP11ClientProtocol:
        return _HeadLimitProtocol(self._quiescentCallback, self._hooks)


class HTTPDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler (``DOWNLOAD_HANDLERS`` for http and https) whose close waits for its
    connection pool to close, or for the disconnect timeout when the pool has not closed within it, and
    fires no Deferred twice: the pool's own Deferred is left to the pool; at :data:`STOP_DOWNLOADS`, its
    downloads under way are cancelled and new ones refused (:class:`DownloadStopped`); a line of a
    response's head over the client's limit fails it with :class:`HeadLineTooLong`, a head over
    :data:`HEAD_MAX_BYTES` with :class:`HeadTooLong`, not retried, nor is a head Twisted refuses
    (:func:`head_invalid`), an answer that is not HTTP, a port that answers https:// without TLS
    (:func:`tls_not_served`), or a body longer than its Content-Length (:func:`body_cut`), counted
    ``crawl/body_cut/<site>`` (when kept, ``DOWNLOAD_FAIL_ON_DATALOSS`` off, too); an answer that is not
    HTTP on a kept connection (:class:`StaleConnection`) is logged, counted ``crawl/stale_connection/<site>``
    and asked again once on a new connection (by Twisted's pool); bytes past the Content-Length of a
    connection's last answer that come while it idles in the pool, or that begin such an answer that is not
    HTTP, are logged and counted ``crawl/body_cut/<site>`` of that answer's request: its page was read, and
    is kept, as long as its Content-Length says. Those two lines are said once a site, then once a minute
    with their count (:class:`RepeatedFaults`): a server that sends a wrong Content-Length does so on each
    page."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # The pool calls its factory with the quiescent callback and the endpoint, as a class.
        hooks = _Hooks(stale=self._stale, late=self._late, site_of=self._site_of)
        self._pool._factory = partial(_HeadLimitFactory, hooks=hooks)  # type: ignore[assignment]
        # Read as a count is made: a handler may be built before the crawl sets the crawler's stats.
        self._crawler = crawler
        self._under_way: dict[asyncio.Future[Response], Request] = {}
        # The sites downloading each URL (as Twisted's request has it: no fragment) now, once a download, in
        # the order they asked: two sites may download a URL at once, and one's end leaves the other's.
        self._sites: dict[str, list[str]] = {}
        self._stopped = False
        # A server that sends a wrong Content-Length does so on each page: its lines said once a site, then
        # once a minute with a count.
        self._wrong_length = RepeatedFaults()
        crawler.signals.connect(self.stop, signal=STOP_DOWNLOADS)

    async def download_request(self, request: Request) -> Response:
        if self._stopped:
            raise DownloadStopped(f"{request.url} was not downloaded: the crawl stops")
        # A task of its own: cancelling it cancels the Deferred of Twisted's download, which closes its
        # connection.
        download = asyncio.ensure_future(super().download_request(request))
        self._under_way[download] = request
        url = urldefrag(request.url)[0]
        site = Work.of(request).site
        if site:
            self._sites.setdefault(url, []).append(site)
        try:
            response = await download
        except ResponseDataLossError as error:
            if body_cut(error) is not None:
                # The same server sends the same Content-Length again.
                request.meta["dont_retry"] = True
                self._count_cut(request)
            raise
        except DownloadFailedError as error:
            if (
                head_too_long(error) is not None
                or head_invalid(error) is not None
                or not_http(error) is not None
                or tls_not_served(error)
            ):
                # The same head, the same answer of another protocol, or the same port without TLS, comes
                # again on a retry: Scrapy's
                # RetryMiddleware passes it on to its dead letter at once.
                request.meta["dont_retry"] = True
            raise
        except asyncio.CancelledError:
            if not self._stopped or not download.cancelled():
                raise
            raise DownloadStopped(f"the download of {request.url} was cancelled: the crawl stops") from None
        finally:
            del self._under_way[download]
            if site:
                self._forget(url, site)
        if "dataloss" in response.flags:
            # Kept, DOWNLOAD_FAIL_ON_DATALOSS off: a body cut at its Content-Length is that long, one the
            # connection cut is shorter.
            declared = response.headers.get(b"Content-Length")
            if declared is not None and declared.isdigit() and int(declared) == len(response.body):
                self._count_cut(request)
        return response

    def _count_cut(self, request: Request) -> None:
        self._count(f"crawl/body_cut/{Work.of(request).site}")

    def _count(self, key: str) -> None:
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(key)

    def _stale(self, stale: StaleConnection) -> None:
        if stale.past:
            self._late(
                stale.previous,
                stale.previous_site,
                stale.past,
                f"in the read of the next request on its connection ({stale.url})",
            )
        site = next(
            (
                site
                for download, asked in self._under_way.items()
                if (site := Work.of(asked).site)
                and urldefrag(asked.url)[0] == stale.url
                and not download.done()
            ),
            "",
        )
        # What varies from page to page (the bytes read) left out: the fault is the server's.
        fault = f"{stale.url} after {stale.previous}: an answer on a kept connection was not HTTP"
        level, since = self._wrong_length.said(
            _of_site("were asked again on a new connection", site), fault, logging.WARNING
        )
        logger.log(level, "%s: %s is asked again on a new connection%s", stale, stale.url, since)
        if site:
            self._count(f"crawl/stale_connection/{site}")

    def _forget(self, url: str, site: str) -> None:
        sites = self._sites[url]
        sites.remove(site)
        if not sites:
            del self._sites[url]

    def _site_of(self, url: str) -> str:
        sites = self._sites.get(url)
        return sites[-1] if sites else ""

    def _late(self, url: str, site: str, received: int, when: str) -> None:
        said = (
            f"{url}: at least {received:,} bytes came past its Content-Length once its answer was read,"
            f" {when}: its server sends a wrong Content-Length; the page is kept as long as its"
            " Content-Length says, most likely cut short"
        )
        level, since = self._wrong_length.said(
            _of_site("had bytes past their Content-Length", site), said, logging.WARNING
        )
        logger.log(level, "%s%s", said, since)
        if site:
            self._count(f"crawl/body_cut/{site}")

    def stop(self) -> int:
        """Cancel the downloads under way and refuse any new one; how many were cancelled."""
        self._stopped = True
        cancelled = [download for download in self._under_way if download.cancel()]
        return len(cancelled)

    async def close(self) -> None:
        """Close the connection pool (waiting for it up to the disconnect timeout); the lines of a wrong
        Content-Length not said yet are said with their count."""
        self._wrong_length.close()
        closed: Deferred[None] = self._pool.closeCachedConnections()  # type: ignore[no-untyped-call]
        done: Deferred[None] = Deferred()

        def finish(_: object = None) -> None:
            if not done.called:
                done.callback(None)

        timeout = call_later(self._disconnect_timeout, finish)

        def pool_closed(_: object) -> None:
            timeout.cancel()  # a no-op once it ran
            finish()

        closed.addBoth(pool_closed)
        await maybe_deferred_to_future(done)


def _of_site(what: str, site: str) -> str:
    """``what`` befell requests of ``site`` ("" for a request of no site: a robots.txt), as the count of
    their lines says it (:class:`RepeatedFaults`): one fault a site."""
    return f"of site {site!r} {what}" if site else what
