"""A relay on 127.0.0.1 in front of a Redis for the tests, which loses the reply to a command Redis ran.

Each connection a client opens to the relay is one to Redis (``upstream``: the path of its unix socket).
:meth:`LossyRelay.lose` arms it: the next commands whose bytes hold a given part (a key's name) are
relayed to Redis, which runs them, and the reply is dropped and the client's connection closed, as a
network that fails at that moment does. The client knows not whether Redis ran the command.
:meth:`LossyRelay.cut` closes the connections and each one as it is opened: Redis unreachable.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Self

__all__ = ["LossyRelay"]

_CHUNK = 1 << 20


class LossyRelay:
    """A relay that loses replies (see the module docstring); ``with`` starts and stops it."""

    __test__ = False

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.lost = 0
        self._part = b""
        self._left = 0
        self.cutting = False
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._sockets: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self._listener.getsockname()[1]}"

    def lose(self, part: bytes, times: int = 1) -> None:
        """Lose the replies to the next ``times`` commands whose bytes hold ``part``."""
        with self._lock:
            self._part, self._left = part, times

    def cut(self, cutting: bool = True) -> None:
        """Close the connections open and each one as it is opened (``cutting``), or relay them again."""
        self.cutting = cutting
        if cutting:
            for sock in self._sockets:
                _close(sock)

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._listener.close()
        for sock in self._sockets:
            _close(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.cutting:
                client.close()
                continue
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.upstream)
            self._sockets += (client, server)
            losing = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, losing), daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, losing), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, losing: threading.Event) -> None:
        while data := _received(client):
            with self._lock:
                if self._left and self._part in data:
                    self._left -= 1
                    losing.set()
            if not _sent(server, data):
                break
        _close(server)

    def _replies(self, server: socket.socket, client: socket.socket, losing: threading.Event) -> None:
        while data := _received(server):
            if losing.is_set():
                with self._lock:
                    self.lost += 1
                break
            if not _sent(client, data):
                break
        _close(client)
        _close(server)


def _received(sock: socket.socket) -> bytes:
    """What ``sock`` received next; empty once it is closed."""
    try:
        return sock.recv(_CHUNK)
    except OSError:
        return b""


def _sent(sock: socket.socket, data: bytes) -> bool:
    """Whether ``data`` went out through ``sock`` (not once it is closed)."""
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True


def _close(sock: socket.socket) -> None:
    """Close ``sock`` at once, though a thread waits on it (``close`` alone would not end that wait)."""
    with contextlib.suppress(OSError):  # closed already
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
