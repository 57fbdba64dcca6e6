"""The demo news sites over HTTP, on 127.0.0.1 only.

As a process (the tests start it this way)::

    python -m crawler.demo.server [--port N] [--verbose] [--delay S] [--request-log FILE]

It prints the port alone on its first stdout line (``--port 0``, the default: the system picks one), then
the sites' URLs on stderr. It stops on SIGTERM or SIGINT, and when its standard input is a pipe that
reaches end of file, so a parent that dies does not leave it running (start it with ``stdin=PIPE``).

In-process (``crawler demo`` uses this)::

    with DemoServer(port=0) as server:
        print(server.origin)  # http://127.0.0.1:PORT

Paths (see :mod:`crawler.demo.sites`): ``/`` lists the sites; ``/robots.txt``; ``/citynews/``,
``/citynews/page/2/``, ``/citynews/2026/<slug>.html``; ``/techdaily/``, ``/techdaily/page/2/``,
``/techdaily/2026/11/<slug>.html``, ``/techdaily/feed.xml`` (RSS); ``/huaxia/``, ``/huaxia/index_2.html``,
``/huaxia/2026-11/20/c_<id>.htm``, ``/huaxia/api/list_1.json`` (JSON); section and about pages. Every
response has a Content-Type with its charset, a Content-Length and an ETag (``If-None-Match`` gives 304);
a directory path without its final slash is redirected (301); anything else is 404. GET and HEAD only.
Requests are not logged unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import http.server
import os
import signal
import stat
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from crawler.demo.layouts import Page, render_pages
from crawler.demo.sites import demo_sites
from crawler.errors import CrawlerError
from crawler.threads import STOP_SIGNALS, signals_blocked

__all__ = ["DemoError", "DemoServer", "main"]

HOST = "127.0.0.1"
NOT_FOUND = (
    b"<!DOCTYPE html>\n<html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>\n"
)


class DemoError(CrawlerError):
    """The demo server cannot run: its port is taken or cannot be bound."""


@dataclass(frozen=True, slots=True)
class _Served:
    page: Page
    etag: str


@functools.cache
def _served() -> dict[str, _Served]:
    """Every page, rendered once per process, with its entity tag."""
    return {
        path: _Served(page, f'"{hashlib.sha256(page.body).hexdigest()[:20]}"')
        for path, page in render_pages().items()
    }


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "DemoNews/1.0"
    protocol_version = "HTTP/1.1"
    verbose = False
    delay = 0.0
    request_log: _RequestLog | None = None

    def do_GET(self) -> None:
        if self.request_log is not None:
            self.request_log.write(self.path)
        if self.delay:
            time.sleep(self.delay)
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        pages = _served()
        served = pages.get(path)
        if served is None:
            if not path.endswith("/") and f"{path}/" in pages:
                self._send(301, b"", "text/plain; charset=utf-8", {"Location": f"{path}/"}, send_body)
            else:
                self._send(404, NOT_FOUND, "text/html; charset=utf-8", {}, send_body)
            return
        if served.etag in self.headers.get("If-None-Match", ""):
            self.send_response(304)
            self.send_header("ETag", served.etag)
            self.end_headers()
            return
        self._send(200, served.page.body, served.page.content_type, {"ETag": served.etag}, send_body)

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str], send_body: bool
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.verbose:
            super().log_message(format, *args)


class _RequestLog:
    """Every GET's path, one per line, for tests that check who fetched what."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - open for the server's life

    def write(self, path: str) -> None:
        with self._lock:
            self._file.write(path + "\n")


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up early is not the server's error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _bind(
    port: int, verbose: bool, *, delay: float = 0.0, request_log: _RequestLog | None = None
) -> _HTTPServer:
    handler = type(
        "DemoHandler", (_Handler,), {"verbose": verbose, "delay": delay, "request_log": request_log}
    )
    _served()  # render before listening: the first request is then as fast as the others
    try:
        return _HTTPServer((HOST, port), handler)
    except OSError as exc:
        raise DemoError(
            f"the demo server cannot listen on {HOST}:{port}: {exc.strerror or exc}"
            " (expected a free port; 0 lets the system pick one)"
        ) from exc


class DemoServer:
    """The demo sites served from a thread of this process, on 127.0.0.1; a context manager.

    ``port=0`` lets the system pick a free port; :attr:`origin` says which. Binding a port that is taken
    raises :class:`DemoError`.
    """

    def __init__(self, port: int = 0, *, verbose: bool = False) -> None:
        self._port = port
        self._verbose = verbose
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the demo server is not running: start it first")
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def start(self) -> DemoServer:
        if self._server is None:
            self._server = _bind(self._port, self._verbose)
            self._thread = threading.Thread(
                target=self._server.serve_forever, name=f"demo-server-{self.port}", daemon=True
            )
            with signals_blocked(STOP_SIGNALS):
                self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def _stdin_pipe() -> int | None:
    """The file descriptor of standard input when it is a pipe or a socket (a parent holds the other end)."""
    try:
        descriptor = sys.stdin.fileno()
        mode = os.fstat(descriptor).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    return descriptor if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crawler.demo.server", description="Serve the demo news sites on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free one)")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each answer (tests)")
    parser.add_argument("--request-log", metavar="FILE", help="append each GET's path to FILE (tests)")
    args = parser.parse_args(argv)
    request_log = _RequestLog(args.request_log) if args.request_log else None
    try:
        server = _bind(args.port, args.verbose, delay=args.delay, request_log=request_log)
    except DemoError as exc:
        sys.stderr.write(f"crawler.demo.server: error: {exc}\n")
        return exc.exit_code
    with server:
        port = server.server_address[1]
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        sites = " ".join(f"http://{HOST}:{port}{site.start_path}" for site in demo_sites())
        sys.stderr.write(f"serving the demo news sites: {sites}\n")

        def stop(signum: int, frame: FrameType | None) -> None:
            threading.Thread(target=server.shutdown, daemon=True).start()

        def stop_at_eof(descriptor: int) -> None:
            # os.read, not sys.stdin: a daemon thread blocked in a buffered read aborts interpreter exit.
            while os.read(descriptor, 4096):
                pass
            server.shutdown()

        signal.signal(signal.SIGTERM, stop)
        stdin = _stdin_pipe()
        if stdin is not None:
            with signals_blocked(STOP_SIGNALS):
                threading.Thread(target=stop_at_eof, args=(stdin,), daemon=True).start()
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
