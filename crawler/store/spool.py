"""A local spool of documents the store could not write: a JSON-lines file replayed in order.

The MongoDB store writes here when the server is unreachable, so a worker goes on crawling, acknowledges
what it spooled (it is on local disk, flushed and fsynced) and never holds more than one batch in memory.
Each spool file belongs to one process, which holds an exclusive ``flock`` on it while it lives; a file
nobody holds (its worker crashed or stopped while the server was down) is an orphan, which the next store
opened on the same folder with the same name (``mongo_<prefix>``) takes over and replays.

A file is named ``<name>@<host>-<pid>.jsonl``: ``@`` occurs in no name (nor host name), so a name's files
are told from another's exactly (``mongo_news@...`` from ``mongo_news-a@...``). Earlier versions named
them ``<name>-<host>-<pid>.jsonl``, where a ``-`` in the name or the host makes the name unclear; such a
file is taken over when its name is clear (see :meth:`Spool._earlier`), and named in a warning otherwise.

Replay reads ``batch`` lines at a time from the offset kept beside the file (``<file>.offset``, written
after each batch is stored), so a replay cut short resumes where it stopped; writing a batch twice is
harmless, since the store's writes are upserts.
"""

from __future__ import annotations

import fcntl
import glob
import json
import logging
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

from crawler.commandline import counted
from crawler.errors import StoreError, folder_advice

__all__ = ["Spool", "waiting_under"]

logger = logging.getLogger(__name__)

_SUFFIX = ".jsonl"
# Between a spool's name and the host that wrote the file: in no name.
_SEPARATOR = "@"


class Spool:
    """This process's spool file in ``directory`` (created on first append), locked while open; ``name``
    (``mongo_<prefix>``) tells its files from those of other names in the folder."""

    def __init__(self, directory: Path, name: str) -> None:
        if not name or _SEPARATOR in name or "/" in name:
            raise ValueError(f"spool name {name!r}: expected a file name without {_SEPARATOR!r}")
        self.directory = directory
        self.name = name
        self.path = directory / f"{name}{_SEPARATOR}{socket.gethostname()}-{os.getpid()}{_SUFFIX}"
        self._file: BinaryIO | None = None
        self._unclear: set[Path] = set()  # files of earlier versions named in a warning already
        # The files its scans for orphans could not open, warned of once each until they open or go.
        self._unopened: set[Path] = set()

    def __repr__(self) -> str:
        return f"Spool({str(self.path)!r})"

    @property
    def pending(self) -> bool:
        """Whether documents wait in this process's file."""
        return self._file is not None or self.path.exists()

    def append(self, documents: Sequence[dict[str, Any]]) -> None:
        """Add ``documents`` at the end, flushed and fsynced before returning. A write that fails (a full
        disk) is cut off again, so the file holds whole lines of spooled documents only: the next
        append starts a line of its own; a file it was the first write of is removed (no empty file
        left to look like a spool)."""
        handle = self._open()
        lines = "".join(json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n" for d in documents)
        data = memoryview(lines.encode("utf-8"))
        end = os.fstat(handle.fileno()).st_size
        try:
            while data:
                data = data[handle.write(data) :]
            os.fsync(handle.fileno())
        except OSError as exc:
            try:
                os.ftruncate(handle.fileno(), end)
            except OSError as cut:
                logger.warning("cannot cut the spool file %s back to %s bytes: %s", self.path, end, cut)
            else:
                if end == 0:
                    _remove(self.path)
                    self._close()
            raise StoreError(
                f"cannot spool {counted(len(documents), 'article')} to {self.path}: {exc}: free disk space"
                f" under {self.directory}, or bring the store back"
            ) from exc

    def replay(self, batch: int) -> Iterator[list[dict[str, Any]]]:
        """Batches of this file's documents in order, from the saved offset. The caller stores each
        batch before asking for the next; when the file is exhausted it is removed."""
        yield from _replay(self.path, batch)
        self._close()
        _remove(self.path)

    def waiting(self) -> str | None:
        """What waits in the spool files of this kind in the folder (this process's, those of live
        processes, orphans): how many articles, in which file (or how many files); None when nothing."""
        return _waiting(self.directory, self._files())

    def orphans(self) -> list[Path]:
        """Spool files of this kind in the folder that no live process holds, oldest first. A file that
        cannot be opened is warned of once (a scan comes every STORE_SPOOL_RETRY_SECONDS), again once it
        opened or was gone in between."""
        found, unopened = [], set()
        for path in self._files():
            if path == self.path:
                continue
            try:
                with path.open("a", encoding="utf-8") as handle:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            except OSError as exc:
                unopened.add(path)
                if path not in self._unopened:
                    logger.warning(
                        "cannot look at the spool file %s: %s; the articles it may hold are not replayed"
                        " until it can be opened (looked at again at each replay, said again only once it"
                        " opened)",
                        path,
                        exc,
                    )
                continue
            found.append(path)
        self._unopened = unopened
        return found

    def adopt(self, orphan: Path, batch: int) -> Iterator[list[dict[str, Any]]]:
        """Batches of an orphan spool file, held locked while replayed, removed when exhausted."""
        with orphan.open("a", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            yield from _replay(orphan, batch)
            _remove(orphan)

    def close(self) -> None:
        """Release the lock; a file with documents left stays for the next store to replay."""
        self._close()

    def _files(self) -> list[Path]:
        """This name's spool files in the folder, oldest first: ``<name>@*.jsonl``, and those of earlier
        versions whose name tells they are its."""
        if not self.directory.is_dir():
            return []
        name = glob.escape(self.name)
        files = [*self.directory.glob(f"{name}{_SEPARATOR}*{_SUFFIX}")]
        files.extend(
            path
            for path in self.directory.glob(f"{name}-*{_SUFFIX}")
            if _SEPARATOR not in path.name and self._earlier(path)  # (else another name's, of this version)
        )
        return sorted(files, key=_modified)

    def _earlier(self, path: Path) -> bool:
        """Whether ``path``, a file named by an earlier version ``<name>-<host>-<pid>.jsonl``, is this
        name's: written on this host, or neither the name nor the host holds a ``-``. A longer name's
        written on this host (``<name>-<more>-<this host>-<pid>``) is left to its own store. Else it may be
        another name's (``mongo_news`` on host ``a-vm`` and ``mongo_news-a`` on host ``vm`` both wrote
        ``mongo_news-a-vm-<pid>.jsonl``): it is named in a warning, once, and left alone."""
        host, _, pid = path.name[len(self.name) + 1 : -len(_SUFFIX)].rpartition("-")
        here = socket.gethostname()
        if pid.isdigit() and host and (host == here or "-" not in self.name + host):
            return True
        if pid.isdigit() and host.endswith(f"-{here}"):
            return False
        if path not in self._unclear:
            self._unclear.add(path)
            logger.warning(
                "the spool file %s, named by an earlier version, may hold articles of %s or of another"
                " database prefix: if they are %s's, rename it %s (and its .offset file, if any, to the"
                " same name and .offset) to have them replayed",
                path,
                self.name,
                self.name,
                f"{self.name}{_SEPARATOR}{host or 'HOST'}-{pid or 'PID'}{_SUFFIX}",
            )
        return False

    def _open(self) -> BinaryIO:
        if self._file is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                handle = self.path.open("ab", buffering=0)
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                advice = folder_advice(exc, self.directory)
                raise StoreError(
                    f"cannot open the spool file {self.path}, where the articles MongoDB could not take wait:"
                    f" {exc}" + (f"; {advice}" if advice else "")
                ) from exc
            self._file = handle
        return self._file

    def _close(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            handle.close()


def waiting_under(directory: Path) -> str | None:
    """What waits in the spool files of any name in ``directory`` (how many articles, in which file or
    how many files); None when nothing does."""
    files = sorted(directory.glob(f"*{_SUFFIX}"), key=_modified) if directory.is_dir() else []
    return _waiting(directory, files)


def _waiting(directory: Path, files: list[Path]) -> str | None:
    """What waits in the spool ``files`` of ``directory``: how many articles, in which file (or how many
    files); None when nothing does."""
    counts = [(path, count) for path in files if (count := _left(path))]
    if not counts:
        return None
    total = sum(count for _, count in counts)
    articles = counted(total, "article waits", "articles wait")
    if len(counts) == 1:
        return f"{articles} in the spool {counts[0][0]}"
    return f"{articles} in {len(counts)} spool files under {directory}"


def _replay(path: Path, batch: int) -> Iterator[list[dict[str, Any]]]:
    offset_path = path.with_name(path.name + ".offset")
    try:
        offset = int(offset_path.read_text(encoding="ascii")) if offset_path.exists() else 0
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"cannot read the spool offset {offset_path}: {exc}: delete it to replay {path} from the start"
        ) from exc
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read the spool file {path}: {exc}") from exc
    with handle:
        handle.seek(offset)
        while True:
            documents = []
            for line in iter(handle.readline, b""):
                if not line.endswith(b"\n"):
                    break  # cut short by a crash while it was written, so never acknowledged: skipped
                try:
                    documents.append(json.loads(line))
                except ValueError as exc:
                    raise _no_document(path, offset, exc) from exc
                offset += len(line)
                if len(documents) >= batch:
                    break
            if not documents:
                break
            yield documents
            try:
                offset_path.write_text(str(offset), encoding="ascii")
            except OSError as exc:
                advice = folder_advice(exc, path.parent)
                raise StoreError(
                    f"cannot save how far the spool {path} was written into MongoDB in {offset_path}:"
                    f" [Errno {exc.errno}] {exc.strerror}" + (f"; {advice}" if advice else "") + ": the"
                    " replay goes on from its last saved place then (what it writes again is written once)"
                ) from exc
    _remove(offset_path)


def _no_document(path: Path, offset: int, exc: ValueError) -> StoreError:
    """The error for the line of the spool file ``path`` at byte ``offset`` that is no JSON document: which
    line, and how to mend it."""
    with path.open("rb") as handle:
        number = 1 + sum(chunk.count(b"\n") for chunk in _chunks(handle, offset))
    return StoreError(
        f"cannot replay the spool {path}: its line {number} is no JSON document ({exc}), as a write cut"
        f" short by a full disk leaves: with every crawler on the folder stopped, see it with `sed -n"
        f" {number}p {path}`, put what it holds of whole documents on lines of their own or take it out"
        f" (`sed -i {number}d {path}`); the lines after it are replayed then"
    )


def _chunks(handle: IO[bytes], size: int) -> Iterator[bytes]:
    """The first ``size`` bytes of ``handle``, a megabyte at a time."""
    while size > 0:
        chunk = handle.read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)
        yield chunk


def _left(path: Path) -> int:
    """How many documents of the spool file ``path`` are still to be replayed (whole lines after its saved
    offset); 0 for a file that cannot be read (its replay says why)."""
    offset_path = path.with_name(path.name + ".offset")
    try:
        offset = int(offset_path.read_text(encoding="ascii")) if offset_path.exists() else 0
        with path.open("rb") as handle:
            handle.seek(offset)
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except (OSError, ValueError):
        return 0


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("cannot remove %s: %s", path, exc)
