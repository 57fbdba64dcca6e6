"""Text of PDF and Word (DOCX) documents in the article shape: paragraphs, and the title, author and date
the document's own metadata gives.

1. The kind, from the first bytes: ``%PDF-``, or a ZIP archive holding ``word/document.xml``.
2. PDF (pypdf): an encrypted document is read when its user password is empty, refused otherwise; the
   text of at most ``MAX_PAGES`` pages, a page's lines joined, pages as paragraphs, read page by page: with
   ``max_chars``, :class:`TextTooLong` as soon as the pages read so far are longer (the rest unread).
3. DOCX (the standard library's zipfile and lxml): ``word/document.xml`` read only when its uncompressed
   size is under ``MAX_XML_BYTES`` (a ZIP bomb is refused before it inflates); each ``w:p`` a paragraph;
   ``docProps/core.xml`` (under ``MAX_CORE_BYTES``) gives title, creator and created date.

Every failure is a :class:`DocumentError` that says what the file is and what went wrong.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import lxml.etree

__all__ = [
    "MAX_PAGES",
    "MAX_XML_BYTES",
    "Document",
    "DocumentError",
    "TextTooLong",
    "document_kind",
    "read_document",
]

# Pages read of one PDF: a news document is a few pages; a 2,000-page report would hold the worker's text
# process for minutes.
MAX_PAGES = 300
# Uncompressed bytes of a DOCX's document.xml: a 300-page text is about 5 MB of XML.
MAX_XML_BYTES = 50 * 1024 * 1024
# Uncompressed bytes of a DOCX's docProps/core.xml (title, author, dates): a few hundred in practice.
MAX_CORE_BYTES = 1024 * 1024
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CORE = {
    "title": "{http://purl.org/dc/elements/1.1/}title",
    "author": "{http://purl.org/dc/elements/1.1/}creator",
    "published": "{http://purl.org/dc/terms/}created",
}
_PDF_DATE_RE = re.compile(r"D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:([+-Z])(\d{2})?'?(\d{2})?)?")
_BLANK_LINES_RE = re.compile(r"\n\s*\n+")

# pypdf reports each flaw of a broken file it reads around as a log warning: counted as the file's result.
logging.getLogger("pypdf").setLevel(logging.ERROR)


class DocumentError(ValueError):
    """A PDF or DOCX whose text cannot be read: encrypted, broken, or past a limit."""


class TextTooLong(ValueError):
    """A document whose text is longer than the ``max_chars`` it was read with: ``chars`` characters in
    its first ``pages_read`` of ``pages`` pages (a PDF), of which the first ``readable`` are read at most
    (MAX_PAGES); equal counts when all of it was read (a DOCX: 0)."""

    def __init__(self, chars: int, pages_read: int, pages: int, readable: int | None = None) -> None:
        super().__init__(chars, pages_read, pages, readable)
        self.chars = chars
        self.pages_read = pages_read
        self.pages = pages
        self.readable = pages if readable is None else readable


@dataclass(frozen=True, slots=True)
class Document:
    """A document's kind (``pdf`` or ``docx``), its text (paragraphs separated by a blank line) and what
    its metadata says (None when it says nothing)."""

    kind: str
    text: str
    title: str | None = None
    author: str | None = None
    published: str | None = None  # ISO 8601


def document_kind(data: bytes) -> str | None:
    """``pdf``, ``docx`` or None, from the first bytes (the Content-Type of a download is often wrong)."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04") and b"word/" in data[:4096]:
        return "docx"
    return None


def read_document(data: bytes, name: str = "the document", max_chars: int | None = None) -> Document:
    """Stages 1 to 3: the text and metadata of the PDF or DOCX ``data`` (``name`` names it in errors);
    :class:`TextTooLong` when its text is longer than ``max_chars``."""
    # 1.
    kind = document_kind(data)
    if kind == "pdf":
        return _read_pdf(data, name, max_chars)
    if kind == "docx":
        document = _read_docx(data, name)
        if max_chars is not None and len(document.text) > max_chars:
            raise TextTooLong(len(document.text), 0, 0)
        return document
    raise DocumentError(f"{name} is neither a PDF nor a DOCX document (it starts {data[:16]!r})")


def _read_pdf(data: bytes, name: str, max_chars: int | None) -> Document:
    # 2. pypdf is imported by the first PDF read (0.06 s of CPU): a text process and a crawl read none of
    # most sites.
    import pypdf  # noqa: PLC0415 - imported by the first PDF read
    import pypdf.errors  # noqa: PLC0415 - imported by the first PDF read

    paragraphs: list[str] = []
    chars = 0
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(f"{name} is an encrypted PDF: it needs a password to be read")
        pages = reader.pages[:MAX_PAGES]
        for number, page in enumerate(pages, start=1):
            text = _paragraph((page.extract_text() or "").strip())
            if not text:
                continue
            chars += len(text) + (2 if paragraphs else 0)
            paragraphs.append(text)
            if max_chars is not None and chars > max_chars:
                raise TextTooLong(chars, number, len(reader.pages), len(pages))
        info = reader.metadata
        title = _clean(info.get("/Title")) if info else None
        author = _clean(info.get("/Author")) if info else None
        published = _pdf_date(info.get("/CreationDate")) if info else None
    except (DocumentError, TextTooLong):
        raise
    except (pypdf.errors.PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise DocumentError(f"{name} is a broken PDF: {type(exc).__name__}: {exc}") from None
    return Document("pdf", "\n\n".join(paragraphs), title, author, published)


def _read_docx(data: bytes, name: str) -> Document:
    # 3.
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            body = archive.getinfo("word/document.xml")
            if body.file_size > MAX_XML_BYTES:
                raise DocumentError(
                    f"{name} is a DOCX whose text would take {body.file_size:,} bytes uncompressed, over"
                    f" {MAX_XML_BYTES:,} (a ZIP bomb, or a document too large to read)"
                )
            root = _xml(archive.read(body))
            core = None
            if "docProps/core.xml" in archive.namelist():
                info = archive.getinfo("docProps/core.xml")
                if info.file_size > MAX_CORE_BYTES:
                    raise DocumentError(
                        f"{name} is a DOCX whose properties would take {info.file_size:,} bytes uncompressed,"
                        f" over {MAX_CORE_BYTES:,} (a ZIP bomb)"
                    )
                core = _xml(archive.read(info))
    except DocumentError:
        raise
    except (
        zipfile.BadZipFile,
        KeyError,
        lxml.etree.XMLSyntaxError,
        OSError,
        EOFError,
        RuntimeError,  # an entry encrypted with a password
        NotImplementedError,  # a compression method zipfile does not have
    ) as exc:
        raise DocumentError(f"{name} is a broken DOCX: {type(exc).__name__}: {exc}") from None
    paragraphs = []
    for paragraph in root.iter(f"{_W}p"):
        text = "".join(node.text or "" for node in paragraph.iter(f"{_W}t"))
        if text.strip():
            paragraphs.append(" ".join(text.split()))
    meta = {key: _clean(core.findtext(tag)) if core is not None else None for key, tag in _CORE.items()}
    published = _docx_date(meta["published"])
    return Document("docx", "\n\n".join(paragraphs), meta["title"], meta["author"], published)


def _xml(data: bytes) -> lxml.etree._Element:
    parser = lxml.etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    return lxml.etree.fromstring(data, parser=parser)


def _paragraph(page: str) -> str:
    """A PDF page's text: its blank-line breaks kept, each paragraph's lines joined."""
    return "\n\n".join(" ".join(part.split()) for part in _BLANK_LINES_RE.split(page) if part.strip())


def _clean(value: object) -> str | None:
    text = " ".join(str(value).split()) if value is not None else ""
    return text or None


def _docx_date(value: str | None) -> str | None:
    """A DOCX date (W3CDTF, ``2026-11-20T10:31:00Z``) in UTC, written as a PDF's is (``+00:00``); a day
    alone as it is, and the text as it is when it is no date."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if len(value) == len("2026-11-20"):
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _pdf_date(value: object) -> str | None:
    """A PDF date (``D:20261120103100+01'00'``) as ISO 8601 in UTC (a date without offset taken as UTC)."""
    match = _PDF_DATE_RE.match(str(value or ""))
    if match is None:
        return None
    year, month, day, hour, minute, second, sign, off_hours, off_minutes = match.groups()
    offset = timedelta(hours=int(off_hours or 0), minutes=int(off_minutes or 0))
    try:
        moment = datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    return (moment - offset if sign == "+" else moment + offset if sign == "-" else moment).isoformat()
