"""PDF and DOCX articles: text and metadata read (extractors/documents.py), the failures named (encrypted,
broken, a ZIP bomb, neither kind), and real temp crawls of the local test server's documents: stored in
the article shape, their text read off the crawl thread; a broken or encrypted one dead-lettered saying
so; one over DOCUMENTS_MAX_BYTES too."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pypdf
import pytest
from conftest import SiteServer
from crawlsite import Site
from siteserver import document_file, generated_text

from crawler.errors import BodyTooLongError
from crawler.worker.textjob import BodyTooLong, article_text
from extractors.documents import DocumentError, document_kind, read_document


@pytest.mark.parametrize("kind", ["pdf", "docx"])
def test_a_document_gives_its_text_and_its_metadata(kind: str) -> None:
    document = read_document(document_file("report", kind), f"report.{kind}")
    assert document.kind == kind
    assert document.title == "Document report" and document.author == "Doc Writer"
    # Both kinds write the moment alike (a DOCX said "2026-11-20T10:31:00Z").
    assert document.published == "2026-11-20T10:31:00+00:00"
    for paragraph in generated_text("report").split("\n\n"):
        assert paragraph in document.text


def test_pypdf_is_imported_by_the_first_pdf_read_not_by_a_text_process_or_a_crawl_starting(
    tmp_path: Path,
) -> None:
    """A text process imported pypdf as it started (0.064 s of CPU each), and so did the crawl's process
    with its spider, though only a PDF article needs it: it is imported by the first PDF read, which reads
    the PDF as before."""
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(document_file("report", "pdf"))
    probe = (
        "import sys\n"
        "import crawler.worker.spider, crawler.worker.textjob\n"
        "from extractors.documents import read_document\n"
        "print('STARTED', 'pypdf' in sys.modules)\n"
        "document = read_document(open(sys.argv[1], 'rb').read(), 'report.pdf')\n"
        "print('READ', 'pypdf' in sys.modules, document.kind, document.title)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, str(pdf)], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["STARTED False", "READ True pdf Document report"]


@pytest.mark.parametrize(
    ("created", "published"),
    [
        ("2026-11-20T11:31:00+01:00", "2026-11-20T10:31:00+00:00"),
        ("2026-11-20T10:31:00", "2026-11-20T10:31:00+00:00"),
        ("2026-11-20", "2026-11-20"),
        ("last Friday", "last Friday"),
    ],
)
def test_a_docx_date_is_written_in_utc_as_a_pdf_date_is(created: str, published: str) -> None:
    core = (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
        ' xmlns:dcterms="http://purl.org/dc/terms/">'
        f"<dcterms:created>{created}</dcterms:created></cp:coreProperties>"
    )
    assert read_document(_docx_with("docProps/core.xml", core.encode()), "d.docx").published == published


def test_a_docx_keeps_its_paragraphs() -> None:
    document = read_document(document_file("report", "docx"))
    assert document.text == generated_text("report")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (document_file("locked", "pdf"), "locked.pdf is an encrypted PDF: it needs a password to be read"),
        (document_file("broken", "pdf"), "broken.pdf is a broken PDF: "),
        (document_file("bomb", "docx"), "bomb.docx is a DOCX whose text would take 62,914,"),
        (b"PK\x03\x04word/ not really a zip", "x.docx is a broken DOCX: BadZipFile"),
        (b"<html>not a document</html>", "is neither a PDF nor a DOCX document (it starts b'<html>"),
    ],
)
def test_a_document_that_cannot_be_read_says_why(data: bytes, says: str) -> None:
    name = says.split(" ", 1)[0] if says.endswith(("read", ": ")) or "DOCX" in says else "x.docx"
    with pytest.raises(DocumentError) as raised:
        read_document(data, name)
    assert says in str(raised.value)


def test_a_docx_without_core_properties_has_no_metadata() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "word/document.xml",
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
            "<w:p><w:r><w:t>One </w:t></w:r><w:r><w:t>paragraph.</w:t></w:r></w:p></w:body></w:document>",
        )
    document = read_document(buffer.getvalue())
    assert (document.text, document.title, document.published) == ("One paragraph.", None, None)


def test_the_kind_comes_from_the_first_bytes() -> None:
    assert document_kind(document_file("x", "pdf")) == "pdf"
    assert document_kind(document_file("x", "docx")) == "docx"
    assert document_kind(b"PK\x03\x04 a zip of images") is None
    assert document_kind(b"<!DOCTYPE html>") is None


# --- crawls ------------------------------------------------------------------------------------------------


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path, name="docs")


def test_a_temp_crawl_stores_pdf_and_docx_articles_in_the_article_shape(site: Site) -> None:
    site.rule("/doc/annual.pdf", "/doc/minutes.docx", "/a/page")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    stored = site.stored()
    assert set(stored) == {"/doc/annual.pdf", "/doc/minutes.docx", "/a/page"}
    for path, name in (("/doc/annual.pdf", "annual"), ("/doc/minutes.docx", "minutes")):
        article = stored[path]
        assert article["title"] == f"Document {name}" and article["author"] == "Doc Writer"
        assert str(article["published"]).startswith("2026-11-20T10:31:00")
        assert generated_text(name).split("\n\n")[0] in str(article["body"])
        assert article["extraction"]["body_from"] == "document"
    assert stored["/doc/minutes.docx"]["extraction"]["algorithm"] == "docx"


def test_an_encrypted_or_broken_document_is_dead_lettered_saying_so(site: Site) -> None:
    """Each unreadable document is a page fetched and an error of kind `article refused`; requeued and
    refused again, the job counts each page fetched once still."""
    site.rule("/doc/locked.pdf", "/doc/broken.pdf", "/doc/fine.pdf")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    first = done.stdout.splitlines()[0]
    assert first.startswith("fetched 4 pages, stored 1 article,"), done.stdout
    assert first.endswith("errors 2 (article refused: 2)"), done.stdout
    reasons = {
        str(letter["url"]).removeprefix(site.server.origin): letter["reason"] for letter in site.dead()
    }
    assert "is an encrypted PDF: it needs a password to be read" in reasons["/doc/locked.pdf"]
    assert "is a broken PDF" in reasons["/doc/broken.pdf"]
    assert list(site.stored()) == ["/doc/fine.pdf"]
    assert (
        site.crawler("dead", "requeue", "--site", "docs").stdout.splitlines()[0] == "requeued 2 dead letters"
    )
    again = site.temp()
    said = again.stdout.splitlines()[1]
    assert said.startswith("fetched 4 pages, stored 1 article,"), again.stdout
    assert said.endswith("errors 2 (article refused: 2)"), again.stdout


def test_a_document_over_the_size_limit_is_dead_lettered(site: Site) -> None:
    site.rule("/doc/big.pdf", "/a/small")
    done = site.temp("-s", "DOCUMENTS_MAX_BYTES=500")
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert "is a document of" in letter["reason"] and "over DOCUMENTS_MAX_BYTES (500)" in letter["reason"]
    assert list(site.stored()) == ["/a/small"]


@pytest.mark.parametrize("kind", ["pdf", "docx"])
def test_a_document_whose_text_is_past_the_length_limit_is_dead_lettered_naming_it_and_the_limit(
    site: Site, kind: str
) -> None:
    """TEXT_MAX_BODY_CHARS bounded the body of an HTML page, not the text of a document: a 10 MB PDF of
    text, under DOCUMENTS_MAX_BYTES (20 MB), was stored as an article of millions of characters, its
    text work (cleaning, summaries, fingerprints) taking the text process's memory."""
    chars = len(read_document(document_file("long", kind), f"long.{kind}").text)
    site.rule(f"/doc/long.{kind}")
    done = site.temp("-s", "TEXT_MAX_BODY_CHARS=200")
    assert done.returncode == 1, done.stderr[-4000:]
    assert "errors 1 (body too long: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        f"{site.server.url(f'/doc/long.{kind}')}: the text of the document is {chars:,} characters, over"
        " TEXT_MAX_BODY_CHARS (200): no article is that long; if this one is,"
        f" `-s TEXT_MAX_BODY_CHARS={chars}` on the crawl's command (worker, run or temp), then requeue it"
    ), letter["reason"]
    assert list(site.stored()) == []


def test_rules_try_on_a_document_shows_what_the_crawl_would_store(site: Site) -> None:
    site.rule("/a/page")
    done = site.crawler("rules", "try", "docs", site.server.url("/doc/annual.pdf"))
    assert done.returncode == 0, done.stderr
    assert "as a PDF article (" in done.stdout and "  title      Document annual\n" in done.stdout
    assert generated_text("annual").split("\n\n")[0][:60] in done.stdout
    locked = site.crawler("rules", "try", "docs", site.server.url("/doc/locked.pdf"))
    assert locked.returncode == 2
    assert "locked.pdf is an encrypted PDF: it needs a password to be read" in locked.stderr


def _docx_with(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", _DOCUMENT_XML)
        archive.writestr(name, data)
    return buffer.getvalue()


_DOCUMENT_XML = (
    '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
    "<w:p><w:r><w:t>Text.</w:t></w:r></w:p></w:body></w:document>"
)


def test_a_docx_whose_properties_inflate_past_the_limit_is_refused() -> None:
    bomb = _docx_with("docProps/core.xml", b" " * (2 * 1024 * 1024))
    assert len(bomb) < 10_000
    with pytest.raises(DocumentError, match=r"whose properties would take 2,097,152 bytes .* \(a ZIP bomb\)"):
        read_document(bomb, "props.docx")


def test_a_docx_with_an_encrypted_entry_is_a_document_error() -> None:
    data = bytearray(_docx_with("docProps/app.xml", b"<x/>"))
    for header, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = data.find(header)
        data[start + flags_at] |= 1  # the entry says it is encrypted
    with pytest.raises(DocumentError, match=r"locked.docx is a broken DOCX: RuntimeError: .*encrypted"):
        read_document(bytes(data), "locked.docx")


def test_a_pdf_past_the_length_limit_is_read_only_up_to_the_page_that_passes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PDF was read whole (MAX_PAGES pages) before its text was measured: 2.9 s of CPU for 8.6 million
    characters, all to be dead-lettered. Its pages are read one by one, and the reading stops at the page
    that passes TEXT_MAX_BODY_CHARS; the reason says how much was read and suggests a limit for it all."""
    one = pypdf.PdfReader(io.BytesIO(document_file("long", "pdf")))
    writer = pypdf.PdfWriter()
    for _ in range(40):
        writer.add_page(one.pages[0])
    buffer = io.BytesIO()
    writer.write(buffer)
    page_chars = len(read_document(document_file("long", "pdf")).text)
    read: list[int] = []
    extract_text = pypdf.PageObject.extract_text

    def counted(page: pypdf.PageObject, *args: Any, **kwargs: Any) -> str:
        read.append(1)
        return extract_text(page, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counted)
    with pytest.raises(BodyTooLong) as raised:
        article_text(None, "u", None, None, "qread", (), buffer.getvalue(), max_chars=2 * page_chars + 10)
    assert len(read) == 3
    chars = 3 * page_chars + 4
    assert (raised.value.chars, raised.value.pages_read, raised.value.pages) == (chars, 3, 40)
    reason = str(BodyTooLongError("u", "the text of the document", chars, 2 * page_chars + 10, (3, 40)))
    assert reason == (
        f"u: the text of the document is {chars:,} characters in its first 3 of 40 pages (the rest not read),"
        f" over TEXT_MAX_BODY_CHARS ({2 * page_chars + 10:,}): no article is that long; if this one is,"
        f" `-s TEXT_MAX_BODY_CHARS={-(-chars * 40 // 3)}` (its 40 pages at that rate) on the crawl's command"
        " (worker, run or temp), then requeue it"
    )


def test_a_pdf_past_the_length_limit_with_more_pages_than_are_read_says_how_many_it_has() -> None:
    """A PDF of more than MAX_PAGES pages stopped early was said to have MAX_PAGES pages ('in its first 2
    of 300 pages'), its page count taken from the pages the reader would read. It says the document's
    count now, and suggests a limit for the pages that are read (MAX_PAGES) at the rate of those read."""
    from extractors.documents import MAX_PAGES, TextTooLong

    one = pypdf.PdfReader(io.BytesIO(document_file("long", "pdf")))
    writer = pypdf.PdfWriter()
    total = MAX_PAGES + 10
    for _ in range(total):
        writer.add_page(one.pages[0])
    buffer = io.BytesIO()
    writer.write(buffer)
    page_chars = len(read_document(document_file("long", "pdf")).text)
    with pytest.raises(TextTooLong) as raised:
        read_document(buffer.getvalue(), "big.pdf", max_chars=page_chars + 10)
    chars = 2 * page_chars + 2
    assert (raised.value.chars, raised.value.pages_read, raised.value.pages) == (chars, 2, total)
    assert raised.value.readable == MAX_PAGES
    reason = str(
        BodyTooLongError(
            "u", "the text of the document", chars, page_chars + 10, (2, total), readable=MAX_PAGES
        )
    )
    assert reason == (
        f"u: the text of the document is {chars:,} characters in its first 2 of {total} pages (the rest"
        f" not read), over TEXT_MAX_BODY_CHARS ({page_chars + 10:,}): no article is that long; if this one"
        f" is, `-s TEXT_MAX_BODY_CHARS={-(-chars * MAX_PAGES // 2)}` (its first {MAX_PAGES} pages, as many"
        " as are read, at that rate) on the crawl's command (worker, run or temp), then requeue it"
    )
