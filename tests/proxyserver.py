"""A forward HTTP proxy on 127.0.0.1 for the tests: a real proxy between the crawler and a local site.

It relays ``GET http://host:port/path`` requests (the absolute form a client sends a proxy) to their
origin, which must be on 127.0.0.1, adding ``Via: 1.1 <name>`` so the site knows which proxy a request
came through. With ``user`` and ``password``, a request without those credentials gets ``407``. It records
every ``Proxy-Authorization`` it saw and how many requests it relayed.
"""

from __future__ import annotations

import base64
import http.client
import http.server
import threading
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

__all__ = ["TestProxy"]

_HOP_BY_HOP = {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "via"}


class TestProxy:
    """A forward proxy for the tests (see the module docstring); ``with`` starts and stops it."""

    __test__ = False

    def __init__(self, name: str, *, user: str | None = None, password: str | None = None) -> None:
        self.name = name
        self.credentials = (
            base64.b64encode(f"{user}:{password}".encode()).decode() if user is not None else None
        )
        self.relayed = 0
        self.refused = 0
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, user: str | None = None, password: str | None = None) -> str:
        """The proxy's URL, with credentials when given."""
        credentials = f"{user}:{password}@" if user is not None else ""
        return f"http://{credentials}127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy._relay(self)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name=f"proxy-{self.name}", daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _relay(self, request: http.server.BaseHTTPRequestHandler) -> None:
        target = urlsplit(request.path)
        given = (request.headers.get("Proxy-Authorization") or "").removeprefix("Basic ").strip()
        if self.credentials is not None and given != self.credentials:
            with self._lock:
                self.refused += 1
            self._answer(request, 407, {"Proxy-Authenticate": 'Basic realm="test"'}, b"credentials, please")
            return
        if target.hostname != "127.0.0.1" or target.port is None:
            self._answer(request, 403, {}, b"this proxy relays to 127.0.0.1 only")
            return
        headers = {name: value for name, value in request.headers.items() if name.lower() not in _HOP_BY_HOP}
        headers["Via"] = f"1.1 {self.name}"
        connection = http.client.HTTPConnection("127.0.0.1", target.port, timeout=30)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            connection.request("GET", path or "/", headers=headers)
            answer = connection.getresponse()
            body = answer.read()
            relayed = {
                name: value
                for name, value in answer.getheaders()
                if name.lower() not in _HOP_BY_HOP | {"content-length", "transfer-encoding"}
            }
        finally:
            connection.close()
        with self._lock:
            self.relayed += 1
        self._answer(request, answer.status, relayed, body)

    @staticmethod
    def _answer(
        request: http.server.BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes
    ) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)
