"""``WholeDecompressionMiddleware`` (a downloader middleware, in the place of Scrapy's
HttpCompressionMiddleware, 590): Scrapy's decompression, but a body whose compressed data ends before its
stream does is an error, as a body its connection cut short is.

Scrapy's decompression keeps as much as it can of such a body and says nothing: a gzip member without its
end, a deflate, Brotli or Zstandard stream never finished. A page whose server cut its compressed stream
but sent a whole answer (a Content-Length that of the cut, or a last chunk) was stored as an article of
its first part. Here :func:`decompressed` fails such a body with :class:`CompressedBodyCut`, dead-lettered
as ``content encoding`` (:data:`crawler.worker.download.DECOMPRESSION_ERRORS`):

1. Brotli and Zstandard are decompressed here, as Scrapy does (in pieces of ``_PIECE`` bytes, each frame
   of a Zstandard body, up to ``DOWNLOAD_MAXSIZE``), and a stream that has not ended when the data does
   is cut short.
2. gzip and deflate are decompressed by Scrapy. A gzip stream of one member ends with the size of what it
   holds (modulo 2**32), a zlib stream with its Adler-32: when the body decompressed matches, the stream
   ended (a few microseconds a page).
3. Otherwise (raw deflate, gzip of several members or padded, a cut) :func:`_zlib_ends` reads the stream
   once more, its output kept nowhere, to see whether it ends within the data.

A body whose ``Content-Encoding`` names one no decompressor here knows (``identity`` aside, which means
none) is given on as it is when it is text (a page sent as it is under a server's wrong token, such as
``utf-8``, as browsers read it), and fails with :class:`UnknownContentEncoding` otherwise (Scrapy's
decompression gives it on undecoded, a binary response of a page that said it was HTML).

An empty body (a 304 or 204 sent with the Content-Encoding of its page) is left empty, as Scrapy's
decompression leaves it. A body that is no such stream, whose gzip check value is wrong, or that
decompresses past ``DOWNLOAD_MAXSIZE`` is left as Scrapy's decompression leaves it: it fails on the first
and the last and keeps the second.
"""

from __future__ import annotations

import zlib
from itertools import chain

import brotli
from backports import zstd
from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import ACCEPTED_ENCODINGS, HttpCompressionMiddleware
from scrapy.http import Response
from scrapy.utils._compression import _check_max_size

from extractors.encoding import looks_binary

__all__ = ["CompressedBodyCut", "UnknownContentEncoding", "WholeDecompressionMiddleware", "decompressed"]

# The Content-Encoding tokens Scrapy's decompression reads, as it reads them.
KNOWN_ENCODINGS = (*(name.decode() for name in ACCEPTED_ENCODINGS), "x-gzip")

# Bytes decompressed at a time, as Scrapy's decompression reads them.
_PIECE = 65536


class CompressedBodyCut(ValueError):
    """A body sent compressed whose compressed data ends before its stream does."""

    def __init__(self, encoding: str) -> None:
        super().__init__(
            f"its compressed data ({encoding}) ends before the end of its stream: the page was cut short"
        )


class UnknownContentEncoding(ValueError):
    """A body that is no text, sent with a Content-Encoding no decompressor here knows."""

    def __init__(self, encoding: str) -> None:
        known = ", ".join(KNOWN_ENCODINGS)
        super().__init__(f"its Content-Encoding {encoding!r} is none the crawler decompresses ({known})")


class WholeDecompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, failing a body whose compressed stream was cut short, or that is no text
    and sent with an encoding no decompressor knows (see the module docstring)."""

    def process_response(  # type: ignore[override]  # hooks take no spider (Scrapy 2.14+)
        self, request: Request, response: Response
    ) -> Request | Response:
        if request.method != "HEAD" and response.body:
            tokens = [
                token.strip().lower().decode("latin-1")
                for token in chain.from_iterable(
                    value.split(b",") for value in response.headers.getlist("Content-Encoding")
                )
            ]
            unknown = [token for token in tokens if token not in KNOWN_ENCODINGS and token != "identity"]
            if unknown and looks_binary(response.body):
                raise UnknownContentEncoding(unknown[-1])
        return super().process_response(request, response)

    @staticmethod
    def _decode(body: bytes, encoding: bytes, max_size: int) -> bytes:
        return decompressed(body, encoding.decode("latin-1"), max_size)


def decompressed(body: bytes, encoding: str, max_size: int) -> bytes:
    """``body`` decompressed from ``encoding`` (a ``Content-Encoding`` Scrapy reads: ``gzip``, ``x-gzip``,
    ``deflate``, ``br``, ``zstd``), at most ``max_size`` bytes (0: no limit; past it, Scrapy's
    ``_DecompressionMaxSizeExceeded``); :class:`CompressedBodyCut` when its stream ends after the data.
    An empty body is no stream cut short: a 304 or 204 sent with the Content-Encoding of its page."""
    if not body:
        return body
    if encoding == "br":
        return _unbrotli(body, max_size)
    if encoding == "zstd":
        return _unzstd(body, max_size)
    whole = HttpCompressionMiddleware._decode(body, encoding.encode("latin-1"), max_size)
    if encoding in ("gzip", "x-gzip"):
        ends = int.from_bytes(body[-4:], "little") == len(whole) & 0xFFFFFFFF
        if not ends and _zlib_ends(body, zlib.MAX_WBITS | 16, max_size, members=True) is False:
            raise CompressedBodyCut(encoding)
    elif encoding == "deflate":
        ends = int.from_bytes(body[-4:], "big") == zlib.adler32(whole)
        # A zlib stream, or raw deflate as some servers send it (Scrapy's decompression reads both).
        if not ends and _zlib_ends(body, zlib.MAX_WBITS, max_size, members=False) is False:
            raise CompressedBodyCut(encoding)
    return whole


def _unbrotli(body: bytes, max_size: int) -> bytes:
    stream = brotli.Decompressor()
    pieces = [stream.process(body, output_buffer_limit=_PIECE)]
    size = len(pieces[0])
    _check_max_size(size, max_size)
    while not stream.is_finished():
        piece = stream.process(b"", output_buffer_limit=_PIECE)
        if not piece:
            raise CompressedBodyCut("br")
        size += len(piece)
        _check_max_size(size, max_size)
        pieces.append(piece)
    return b"".join(pieces)


def _unzstd(body: bytes, max_size: int) -> bytes:
    """Each frame in turn, as Scrapy's decompression reads them all."""
    data, pieces, size = body, [], 0
    while data:
        stream = zstd.ZstdDecompressor()
        piece = stream.decompress(data, _PIECE)
        while True:
            size += len(piece)
            _check_max_size(size, max_size)
            pieces.append(piece)
            if stream.eof or stream.needs_input:
                break
            piece = stream.decompress(b"", _PIECE)
        if not stream.eof:
            raise CompressedBodyCut("zstd")
        data = stream.unused_data
    return b"".join(pieces)


def _zlib_ends(body: bytes, wbits: int, max_size: int, *, members: bool) -> bool | None:
    """Whether the zlib, gzip (``wbits``) or raw deflate (on a zlib error, for ``deflate``) stream of
    ``body`` ends within it; None when that is not known (no such stream; its check value wrong; more
    than ``max_size`` bytes in it).

    1. Decompress the data in pieces until the stream ends or the data does. 2. With ``members`` (gzip),
    data left after the end that starts as a gzip member is another member, read the same way (what is
    left otherwise is ignored, as Scrapy's decompression ignores it)."""
    data, size = body, 0
    try:
        while True:
            try:
                stream = zlib.decompressobj(wbits)
                size += len(stream.decompress(data, _PIECE))
            except zlib.error:
                if wbits != zlib.MAX_WBITS:
                    raise
                stream = zlib.decompressobj(-zlib.MAX_WBITS)
                size += len(stream.decompress(data, _PIECE))
            data = stream.unconsumed_tail
            while data and not stream.eof:
                if max_size and size > max_size:
                    return None
                size += len(stream.decompress(data, _PIECE))
                data = stream.unconsumed_tail
            if not stream.eof:
                size += len(stream.flush())
                if not stream.eof:
                    return False
            data = stream.unused_data
            if not members or not data.startswith(b"\x1f\x8b"):
                return True
    except zlib.error:
        return None
