"""The local test site server: a real HTTP server on 127.0.0.1, run as a subprocess by the tests.

    python tests/siteserver.py [--root DIR] [--port N] [--verbose]

It binds 127.0.0.1 only (port 0: the system picks one) and prints the port alone on its first stdout line.
It stops on SIGTERM/SIGINT, and when its standard input reaches end of file, so a test process that dies
does not leave it running (start it with ``stdin=subprocess.PIPE``).

Static files come from ``--root`` (default: ``tests/sites`` beside this file). Special routes:

=============================  ====================================================================
``/robots.txt``                disallows ``/private/`` (but allows ``/private/allowed.html``) for all
``/private/<name>``            an article page (robots.txt forbids fetching it)
``/redirect?to=P&status=302``  a redirect to ``P`` (any path or URL) with the given 3xx status
``/redirect-chain/N?to=P``     N redirects in a row, then to ``P``
``/redirect-loop``             a redirect to itself, forever
``/redirect-pair``             a redirect to ``/redirect-pair?x=1``, which redirects back, forever
``/redirect-long?n=N``        a redirect to ``/a/`` then N ``x`` (a target longer than the URL asked for)
``/redirect-credentials``     a redirect to ``/a/cred`` of this server with ``user:secret@`` before its host
``/long-header?kb=N``          an article page whose header ``X-Long`` is N KB long (2048: 2 MB); ``&id=ID``:
                               counted as ``/asked/ID`` says
``/many-headers?kb=N``         an article page whose head holds N headers ``X-Many-<n>`` of 1 KB each;
                               ``&id=ID``: counted as ``/asked/ID`` says
``/large?mb=N``                an N MB HTML page (Content-Length set), streamed
``/large-gzip?mb=N``           an N MB HTML page sent gzip-compressed (a few KB on the wire)
``/one-line?chars=N``          an article page whose body is one paragraph of N characters
``/one-line-outside?chars=N``  the same paragraph outside the test rule's ``div.article``: qRead reads it
``/not-http``                  an SSH server's greeting, no HTTP answer, then the connection closed;
                               ``?id=ID``: counted as ``/asked/ID`` says
``/bad-gzip``                  a page sent as ``Content-Encoding: gzip`` whose body is no gzip
``/uncompressed?as=E``         an article page sent as it is, with ``Content-Encoding: E`` (``gzip``, ``br``,
                               ``zstd``, ...): compressed, it says, and it is not
``/cut-compressed/ID?as=E``    the article page of ID compressed (``E``: ``gzip``, ``deflate``, ``br`` or
                               ``zstd``), the compressed data cut in half and sent whole: its Content-Length
                               that of the half, the answer complete, the compressed stream not
``/gbk``                       a Chinese article in GBK; its charset only in the Content-Type header
``/utf16``                     the same article in UTF-16LE without a byte order mark, its charset
                               (``utf-16le``) in the Content-Type header
``/gbk-index``                 an index page in GBK (charset in the Content-Type) whose one link,
                               ``GBK_INDEX_HREF``, has Chinese in its path and query, and ``GBK_LACKS_MARK``
``/status/N``                  an empty response with status N
``/slow?seconds=S``            an article page sent after S seconds
``/binary?type=T``             64 KB of random bytes as application/octet-stream (or as ``T``)
``/echo-headers``              an HTML page listing the request's headers, one ``<li>`` per header
``/no-body/ID``                an HTML page with a headline ID and no text (no body for a rule or qRead)
``/links?to=P,Q,...``          an index page whose ``<ul class="news">`` links to P, Q, ... (paths or URLs)
``/a/ID``                      a generated article page, "Article ID" (any ID)
``/linking/ID?n=N``            the article page of ID whose ``<ul class="news">`` links to N articles,
                               ``/a/ID-0`` to ``/a/ID-(N-1)`` (a rule of ``depth: 2`` follows them)
``/bad-length/ID?as=V;W``      the article page of ID sent with a header ``Content-Length`` of each value
                               (``-1``; ``10;20``: two that disagree); counted as ``/asked/ID`` says
``/long-body/ID``              the article page of ID sent whole under a Content-Length of half its bytes
                               (the rest past the length the client reads), the connection then closed;
                               ``?tail=1``: the page under its Content-Length, then ``\r\n`` past it;
                               counted as ``/asked/ID`` says
``/r/ID``                      a 302 redirect to ``/a/ID``
``/cookie-wall/ID``            the article page of ID to a request with the cookie ``wall=1``; without it a
                               302 to ``/set-cookie/ID``, a 302 back that sets that cookie (a cookie wall)
``/refresh?to=P``              a page whose ``<meta http-equiv="refresh">`` sends to ``P`` at once (UTF-8,
                               declared); ``&in=cp1252``: the French article in windows-1252 with no
                               charset declared, which Scrapy's own detection reads as cp775
``/flaky/ID?fail=N``           503 for the first N requests of ID, then the article; ``&retry_after=S``:
                               the 503 sends ``Retry-After: S`` (else none); ``&retry_in=S``: the HTTP
                               date S seconds after the request
``/held/ID?seconds=S``          the first request of ID held unanswered S seconds (then the article), the
                               later ones answered with the article at once
``/asked/ID``                  how many requests of ``/held/ID``, ``/flaky/ID``, ``/long-header?id=ID``,
                               ``/many-headers?id=ID``, ``/not-http?id=ID``, ``/bad-length/ID`` or
                               ``/long-body/ID`` came so far (plain text)
``/cut/ID?how=H``              the article page of ID cut in half, the connection then closed: ``length``
                               (the default) declares the whole page's Content-Length, ``chunked`` sends
                               it in chunks and no last chunk, ``nothing`` sends no answer at all
``/gbk-as-utf8``               the GBK article, sent with ``charset=utf-8`` in its Content-Type
``/gbk-euro``                  an article in GBK with prices in euros (``GBK_EURO_PARAGRAPHS``), each € the
                               lone byte 0x80 (as WHATWG's GBK encoder writes it), ``charset=gb2312``
``/utf8-as-gb2312``            the same article, its paragraphs thrice, in UTF-8 sent with ``charset=gb2312``;
                               ``?in=meta``: declared in ``<meta charset>``, the Content-Type without one
``/utf8``                      the same article in UTF-8, ``charset=utf-8`` in its Content-Type
``/gb18030-meta``              the same article in GB18030, declared in ``<meta charset>`` only
``/utf8-short``                an English article whose title starts with two Chinese characters, in UTF-8,
                               ``charset=utf-8`` in its Content-Type (GBK reads it cleanly, as others)
``/cp1252-as-utf8``            a French article in windows-1252 that declares utf-8 in its Content-Type and
                               its ``<meta>``; charset-normalizer guesses cp775 first (no web encoding)
``/unsized?kb=N``              an N KB HTML page without Content-Length (its end is the connection's)
``/feed?to=P,Q&format=F``      a feed of entries linking to P, Q, ... (relative as given): ``rss`` (RSS
                               2.0, the default), ``rss1`` (RSS 1.0), ``rss091`` or ``atom``; entry N
                               is dated N days after 2026-11-01 08:00 UTC (``&dates=naive``: without a
                               UTC offset, ``2026-11-01 08:00:00``), by "Author N"; with an ``ETag`` (a
                               304 when ``If-None-Match`` names it) and a ``Last-Modified``;
                               ``&elsewhere=N`` adds N entries linking to ``http://elsewhere.test/a/K``
``/feed.xml.gz?to=P,Q``        the same feed gzip-compressed, as application/x-gzip (``&served=T``: as
                               ``T``; ``&encoded=1``: with ``Content-Encoding: gzip``)
``/feed-bomb.xml.gz``          40 KB of gzip that inflate to 40 MB of white space in an RSS channel
``/sitemap.xml?to=P,Q``        a sitemap (``urlset``) of P, Q, ...; ``&lastmod=D1,D2`` their lastmod,
                               ``&news=1`` a news sitemap (``news:title`` "News N", ``news:
                               publication_date`` 2026-11-(N+1)T08:00Z; ``&news=date``: the date
                               alone, 2026-11-(N+1); ``&news=naive``: 2026-11-(N+1)T08:00:00,
                               no UTC offset); ``.xml.gz``: gzip-compressed, as application/x-gzip
                               (``&served=T``: as ``T``; ``&encoded=1``: with ``Content-Encoding: gzip``)
``/sitemap-index.xml?to=S,T``  a sitemap index of the sitemaps S, T, ...; ``&lastmod=`` as above
``/sitemap-loop.xml``          a sitemap index that lists itself
``/sitemap-bomb.xml.gz``       60 KB of gzip that inflate to 60 MB of white space in a ``urlset``
``/api?pages=N&per=K``         a JSON API: ``{"data": {"posts": [...]}, "paging": {"next": C}}``, page
                               ``&cursor=C`` (1 to N; the first has none), K posts each: ``link``
                               ``/a/api-C-I``, ``title``, ``user.name``, ``created`` (2026-11-(C+I)
                               08:00Z), ``stats.likes``, and with ``&full=1`` the article in
                               ``content.text``; ``&loop=1``: ``next`` is always 1 (the cursor loops);
                               ``&title=T``: titles "T C-I", the JSON in UTF-8 (not escaped);
                               ``&surrogate=1``: post 0's title and author end with a lone surrogate,
                               ``\\ud83d`` (half an emoji, as a JSON escape: JSON allows it);
                               ``&surrogate=link``: post 0's link ends with one; ``&naive=1``:
                               ``created`` without a UTC offset, ``2026-11-(C+I) 08:00``
``/api-object``                JSON whose ``data.posts`` is an object, not a list
``/search?q=K&page=P``         a search result page for K (pages 1 to 3, ``<a rel="next">``): in
                               ``<ol class="results">``, ``/a/found-K-P`` here, ``/a/there-K-P``
                               on host ``localhost`` (another site), ``http://elsewhere.test/K``
``/search-gbk?q=K&page=P``     a GBK search page, as many Chinese portals' are: its query read as GBK;
                               for ``GBK_KEYWORD`` (pages 1 to 2) ``/a/gbk-found-P`` in ``<ol
                               class="results">`` and a ``<a rel="next">`` with the keyword as is in
                               its href, for any other query (UTF-8 too) no results; ``&mark=1``:
                               the href holds ``&mark=&#9972;`` too (a character GBK lacks), and a
                               page finds results only for a ``mark`` of 1 or as browsers send that
                               one (``%26%239972%3B``)
``/doc/NAME.pdf``, ``.docx``    a PDF or DOCX of the generated article NAME (title "Document NAME",
                               author "Doc Writer", created 2026-11-20 10:31 UTC), sent as
                               ``application/pdf`` or the Word type; ``/doc/locked.pdf``: encrypted
                               (password "secret"); ``/doc/broken.pdf``: cut after 200 bytes;
                               ``/doc/bomb.docx``: a DOCX whose text inflates to 60 MB
=============================  ====================================================================

robots.txt also names ``/sitemap.xml?to=/a/from-robots`` (``Sitemap:``).
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import functools
import gzip
import hashlib
import html
import http.server
import io
import json
import random
import sys
import threading
import time
import urllib.parse
import zipfile
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import brotli
import pypdf
from backports import zstd

DEFAULT_ROOT = Path(__file__).resolve().parent / "sites"

ROBOTS_TXT = """\
# robots.txt of the local test server
User-agent: *
Disallow: /private/
Allow: /private/allowed.html
"""

GBK_TITLE = "长江大桥完成检修重新通车"
GBK_PARAGRAPHS = (
    "本报讯 经过为期三个月的检修，长江大桥于昨日清晨六时重新开放通行。市交通管理部门表示，"
    "此次检修更换了全部伸缩缝，并对桥面进行了重新铺装。",
    "据介绍，检修期间，过江车辆经隧道和轮渡分流，高峰时段平均通行时间增加了二十分钟。"
    "通车首日，大桥车流量恢复到检修前的九成左右。",
    "市民王先生说：“以前每天上班都要绕路，现在终于方便了。”交通部门提醒驾驶人，"
    "大桥限速每小时六十公里，大型货车仍需在夜间通行。",
)
# Paragraphs with 9 euro signs, which /gbk-euro sends as the byte 0x80 (Python's gbk codec has no €).
GBK_EURO_PARAGRAPHS = tuple(f"{paragraph}票价€5，儿童€2.5，老人€1。" for paragraph in GBK_PARAGRAPHS)
# Valid GB18030 in UTF-8 (each run of Chinese an even number of characters): read as GBK, as "棣栭〉 harbour".
SHORT_UTF8_TITLE = "首页 harbour"
# The keyword the GBK search page (/search-gbk) finds results for.
GBK_KEYWORD = "长江大桥"
# A character GBK lacks (U+26F4 FERRY) as a GBK page writes it, and as a browser sends it in a query.
GBK_LACKS_MARK = "&#9972;"
# The href of /gbk-index's link, as the GBK page writes it.
GBK_INDEX_HREF = f"/a/长江?tag=新闻&amp;mark={GBK_LACKS_MARK}"
# French in windows-1252 that charset-normalizer takes for cp775 first, windows-1252 coming after.
CP1252_TITLE = "Le café du marché"
CP1252_PARAGRAPHS = ("Café crème ... €5, thé glacé ... €4, goûter ... €6.",) * 4


def article_page(title: str, paragraphs: tuple[str, ...] | list[str], *, lang: str = "en") -> str:
    """A small article page with navigation and footer around the text."""
    body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    return f"""<!DOCTYPE html>
<html lang="{lang}"><head><title>{title}</title></head>
<body>
<div class="nav"><a href="/">Home</a> <a href="/news/">News</a> <a href="/sport/">Sport</a></div>
<div class="article"><h1>{title}</h1>
{body}
</div>
<div class="footer"><a href="/about">About</a> <a href="/contact">Contact</a></div>
</body></html>
"""


PRIVATE_PAGE = article_page(
    "Private report on the harbour accounts",
    [
        "This page sits under /private/, which the robots.txt of the test server disallows to all.",
        "It is served all the same, so that fetching it with robots.txt ignored can be checked.",
    ],
)
SLOW_PAGE = article_page("A slow page", ["This page was sent late on purpose, to test time limits."])
_LARGE_PARAGRAPH = (
    "<p>Filler paragraph of the large test page: the quick brown fox jumps over the lazy dog, again and"
    " again, so that the page grows to the size asked for without any structure worth extracting.</p>\n"
)


# Requests so far per ID of /flaky/ID, /held/ID, /long-header?id=ID and /not-http?id=ID (the server is
# threaded).
_COUNTS: dict[str, int] = {}
_COUNTS_LOCK = threading.Lock()


def _asked(name: str) -> int:
    """Count a request of ``name``; how many came so far, this one included."""
    with _COUNTS_LOCK:
        _COUNTS[name] = _COUNTS.get(name, 0) + 1
        return _COUNTS[name]


def generated_article(name: str) -> str:
    """The article page of ``/a/NAME``: a headline and three paragraphs of words drawn for that name, so
    that two generated articles never look like reposts of each other."""
    return article_page(f"Article {name}", generated_text(name).split("\n\n"))


def generated_text(name: str) -> str:
    """The three paragraphs of ``/a/NAME``, a blank line between them."""
    words = random.Random(name).choices(_WORDS, k=120)
    return "\n\n".join(" ".join(words[start : start + 40]).capitalize() + "." for start in range(0, 120, 40))


_WORDS = [
    "harbour", "bridge", "council", "river", "station", "market", "school", "library", "garden", "tower",
    "ferry", "tunnel", "museum", "stadium", "hospital", "airport", "festival", "election", "budget", "storm",
    "engineer", "teacher", "driver", "farmer", "nurse", "mayor", "artist", "student", "trader", "pilot",
    "opens", "closes", "repairs", "builds", "plans", "delays", "wins", "loses", "moves", "reports",
    "early", "late", "quiet", "busy", "new", "old", "northern", "southern", "eastern", "western",
    "monday", "tuesday", "friday", "morning", "evening", "summer", "winter", "spring", "autumn", "night",
]  # fmt: skip


FEED_TYPES = {
    "rss": "application/rss+xml",
    "rss1": "application/rdf+xml",
    "rss091": "text/xml",
    "atom": "application/atom+xml; charset=utf-8",
}


FIRST_ENTRY_DATE = datetime(2026, 11, 1, 8, tzinfo=UTC)


def feed_document(links: list[str], kind: str, *, naive: bool = False) -> str:
    """A feed of ``kind`` (see ``FEED_TYPES``) whose entry N links to ``links[N]``, titled "Entry N", dated
    N days after 2026-11-01 08:00 UTC (``naive``: without a UTC offset, ``2026-11-01 08:00:00`` in RSS 2.0
    as feeds of Chinese sites write it) and written by "Author N" (RSS: ``authorN@newsroom.example (Author
    N)``, an email ending in more than 4 letters; RSS 0.91 entries have neither date nor author)."""
    entries = [(n, link, FIRST_ENTRY_DATE + timedelta(days=n)) for n, link in enumerate(links)]
    zone = "" if naive else "Z"
    if kind == "atom":
        items = "".join(
            f'<entry><title>Entry {n}</title><link rel="alternate" href="{html.escape(link)}"/>'
            f"<id>urn:entry:{n}</id><updated>{date:%Y-%m-%dT%H:%M:%S}{zone}</updated>"
            f"<author><name>Author {n}</name></author></entry>"
            for n, link, date in entries
        )
        return (
            '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
            f"<title>Test feed</title><id>urn:feed</id><updated>2026-11-24T08:00:00Z</updated>{items}</feed>"
        )
    if kind == "rss1":
        items = "".join(
            f'<item rdf:about="{html.escape(link)}"><title>Entry {n}</title><link>{html.escape(link)}</link>'
            f"<dc:date>{date:%Y-%m-%dT%H:%M:%S}{zone}</dc:date><dc:creator>Author {n}</dc:creator></item>"
            for n, link, date in entries
        )
        return (
            '<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
            ' xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<channel rdf:about="urn:feed"><title>Test feed</title></channel>{items}</rdf:RDF>'
        )
    dated = kind != "rss091"
    items = "".join(
        f"<item><title>Entry {n}</title><link>{html.escape(link)}</link>"
        + (
            f"<pubDate>{_pub_date(date, naive)}</pubDate>"
            f"<author>author{n}@newsroom.example (Author {n})</author>"
            if dated
            else ""
        )
        + "</item>"
        for n, link, date in entries
    )
    version = "2.0" if dated else "0.91"
    channel = f"<channel><title>Test feed</title>{items}</channel>"
    return f'<?xml version="1.0"?><rss version="{version}">{channel}</rss>'


def _pub_date(moment: datetime, naive: bool) -> str:
    """An RSS 2.0 ``pubDate`` of ``moment`` (UTC): RFC 2822, or (``naive``) ``2026-11-01 08:00:00``, no UTC
    offset."""
    return str(moment.replace(tzinfo=None)) if naive else email.utils.format_datetime(moment)


def api_page(query: dict[str, str]) -> dict[str, Any]:
    """A page of the ``/api`` route (see the module docstring)."""
    pages, per, cursor = (
        int(query.get("pages", "1")),
        int(query.get("per", "2")),
        int(query.get("cursor", "1")),
    )
    posts = []
    for item in range(per):
        post: dict[str, Any] = {
            "link": f"/a/api-{cursor}-{item}",
            "title": f"{query.get('title', 'API post')} {cursor}-{item}",
            "user": {"name": f"Writer {item}"},
            "created": f"2026-11-{cursor + item:02d}"
            + (" 08:00" if query.get("naive") == "1" else "T08:00:00Z"),
            "stats": {"likes": cursor * 10 + item},
        }
        if query.get("full") == "1":
            post["content"] = {"text": generated_text(f"api-{cursor}-{item}")}
        if query.get("surrogate") == "1" and item == 0:
            post["title"] += " \ud83d"
            post["user"]["name"] += "\ud83d"
        if query.get("surrogate") == "link" and item == 0:
            post["link"] += "\ud83d"
        posts.append(post)
    following = 1 if query.get("loop") == "1" else cursor + 1 if cursor < pages else None
    return {"data": {"posts": posts}, "paging": {"next": following}}


DOCUMENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


@functools.cache
def document_file(name: str, kind: str) -> bytes:
    """The ``/doc/NAME.KIND`` file (see the module docstring)."""
    if name == "bomb" and kind == "docx":
        return docx_document("Bomb", [" " * (60 * 1024 * 1024)])
    paragraphs = generated_text(name).split("\n\n")
    if kind == "docx":
        return docx_document(f"Document {name}", paragraphs)
    pdf = pdf_document(f"Document {name}", paragraphs)
    if name == "locked":
        writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
        writer.encrypt("secret", algorithm="AES-128")
        locked = io.BytesIO()
        writer.write(locked)
        return locked.getvalue()
    return pdf[:200] if name == "broken" else pdf


def pdf_document(title: str, paragraphs: list[str]) -> bytes:
    """A one-page PDF of ``paragraphs`` (one text line each) in Helvetica, with a title, an author and a
    creation date in its metadata."""
    lines = []
    for number, paragraph in enumerate(paragraphs):
        text = paragraph.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        lines.append(f"BT /F1 9 Tf 36 {760 - 40 * number} Td ({text}) Tj ET")
    content = "\n".join(lines).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"
        b" /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) /Author (Doc Writer) /CreationDate (D:20261120103100Z) >>".encode("latin-1"),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    start = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        start,
    )
    return bytes(out)


def docx_document(title: str, paragraphs: list[str]) -> bytes:
    """A DOCX of ``paragraphs`` with a title, an author and a creation date in docProps/core.xml."""
    word = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = "".join(f"<w:p><w:r><w:t>{html.escape(p)}</w:t></w:r></w:p>" for p in paragraphs)
    core = (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/">'
        f"<dc:title>{html.escape(title)}</dc:title><dc:creator>Doc Writer</dc:creator>"
        "<dcterms:created>2026-11-20T10:31:00Z</dcterms:created></cp:coreProperties>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
        )
        archive.writestr(
            "word/document.xml", f'<w:document xmlns:w="{word}"><w:body>{body}</w:body></w:document>'
        )
        archive.writestr("docProps/core.xml", core)
    return buffer.getvalue()


def sitemap_document(
    kind: str, links: list[str], dates: list[str], *, news: bool, date_only: bool = False, naive: bool = False
) -> str:
    """A ``urlset`` or ``sitemapindex`` of ``links`` (``dates[N]``, when given, the lastmod of link N); a
    news sitemap gives link N the title "News N" and the date 2026-11-(N+1) 08:00 UTC (``date_only``:
    2026-11-(N+1), no time; ``naive``: 2026-11-(N+1)T08:00:00, no UTC offset)."""
    item = "sitemap" if kind == "sitemapindex" else "url"
    entries = []
    for n, link in enumerate(links):
        lastmod = f"<lastmod>{dates[n]}</lastmod>" if n < len(dates) else ""
        published = f"2026-11-{n + 1:02d}" + ("" if date_only else "T08:00:00" if naive else "T08:00:00Z")
        extra = (
            f"<news:news><news:publication><news:name>Test</news:name><news:language>en</news:language>"
            f"</news:publication><news:publication_date>{published}</news:publication_date>"
            f"<news:title>News {n}</news:title></news:news>"
            if news
            else ""
        )
        entries.append(f"<{item}><loc>{html.escape(link)}</loc>{lastmod}{extra}</{item}>")
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><{kind} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        f' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">{"".join(entries)}</{kind}>'
    )


@functools.cache
def _sitemap_bomb() -> bytes:
    head = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    return gzip.compress(head + b" " * (60 * 1024 * 1024) + b"</urlset>", compresslevel=9)


@functools.cache
def _feed_bomb() -> bytes:
    """Past DOWNLOAD_MAXSIZE (32 MB) once decompressed, and past --max-bytes of a command by default."""
    head = b'<?xml version="1.0"?><rss version="2.0"><channel><title>Bomb</title>'
    return gzip.compress(head + b" " * (40 * 1024 * 1024) + b"</channel></rss>", compresslevel=9)


@functools.cache
def _gzipped_page(megabytes: float) -> bytes:
    size = int(megabytes * 1024 * 1024)
    page = _LARGE_PARAGRAPH.encode() * (size // len(_LARGE_PARAGRAPH) + 1)
    return gzip.compress(page[:size], compresslevel=6)


def _compressed(body: bytes, encoding: str) -> bytes:
    if encoding == "deflate":
        return zlib.compress(body)
    if encoding == "br":
        return bytes(brotli.compress(body))
    if encoding == "zstd":
        return zstd.compress(body)
    return gzip.compress(body)


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files from the root, plus the special routes of the module docstring."""

    server_version = "TestSiteServer/1.0"
    verbose = False

    def do_GET(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        query = {key: values[-1] for key, values in urllib.parse.parse_qs(parts.query).items()}
        path = parts.path
        if path == "/robots.txt":
            sitemap = f"Sitemap: http://{self.headers.get('Host')}/sitemap.xml?to=/a/from-robots\n"
            self._send(200, (ROBOTS_TXT + sitemap).encode(), "text/plain; charset=utf-8")
        elif path.startswith("/private/"):
            self._send(200, PRIVATE_PAGE.encode(), "text/html; charset=utf-8")
        elif path == "/redirect":
            self._redirect(query.get("to", "/"), int(query.get("status", "302")))
        elif path.startswith("/redirect-chain/"):
            left = int(path.rsplit("/", 1)[1] or 0)
            to = query.get("to", "/")
            if left > 1:
                self._redirect(f"/redirect-chain/{left - 1}?to={urllib.parse.quote(to, safe='')}", 302)
            else:
                self._redirect(to, 302)
        elif path == "/redirect-loop":
            self._redirect("/redirect-loop", 302)
        elif path == "/redirect-pair":
            self._redirect("/redirect-pair" if "x" in query else "/redirect-pair?x=1", 302)
        elif path == "/redirect-long":
            self._redirect("/a/" + "x" * int(query.get("n", "3000")), 302)
        elif path == "/redirect-credentials":
            self._redirect(f"http://user:secret@{self.headers.get('Host')}/a/cred", 302)
        elif path == "/long-header":
            if "id" in query:
                _asked(query["id"])
            long_headed = generated_article("long-header").encode()
            self._send(
                200,
                long_headed,
                "text/html; charset=utf-8",
                {"X-Long": "a" * int(query.get("kb", "2048")) * 1024},
            )
        elif path == "/many-headers":
            if "id" in query:
                _asked(query["id"])
            many = {f"X-Many-{n}": "m" * 1000 for n in range(int(query.get("kb", "400")))}
            self._send(200, generated_article("many-headers").encode(), "text/html; charset=utf-8", many)
        elif path == "/large":
            self._send_large(float(query.get("mb", "40")))
        elif path == "/not-http":
            if "id" in query:
                _asked(query["id"])
            self.close_connection = True
            self.wfile.write(b"SSH-2.0-OpenSSH_9.6\r\n")
        elif path == "/one-line":
            chars = int(query.get("chars", "1000"))
            page = article_page("One line", [("word " * chars)[:chars]])
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path == "/one-line-outside":
            chars = int(query.get("chars", "1000"))
            line = ("word " * chars)[:chars]
            page = article_page("One line", []).replace(
                '</div>\n<div class="footer">',
                f'</div>\n<div class="text"><p>{line}</p></div>\n<div class="footer">',
                1,
            )
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path == "/large-gzip":
            body = _gzipped_page(float(query.get("mb", "40")))
            self._send(200, body, "text/html; charset=utf-8", {"Content-Encoding": "gzip"})
        elif path == "/gbk-index":
            index = f'<html><body><ul class="news"><li><a href="{GBK_INDEX_HREF}">大桥</a></li></ul></body>'
            self._send(200, index.encode("gbk"), "text/html; charset=GBK")
        elif path == "/gbk":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS, lang="zh")
            self._send(200, chinese.encode("gbk"), "text/html; charset=GBK")
        elif path == "/utf16":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS, lang="zh")
            self._send(200, chinese.encode("utf-16-le"), "text/html; charset=utf-16le")
        elif path.startswith("/status/"):
            self._send(int(path.rsplit("/", 1)[1]), b"", "text/plain")
        elif path == "/slow":
            time.sleep(float(query.get("seconds", "5")))
            self._send(200, SLOW_PAGE.encode(), "text/html; charset=utf-8")
        elif path.startswith("/no-body/"):
            name = html.escape(path.removeprefix("/no-body/"))
            page = f"<html><head><title>{name}</title></head><body><h1>{name}</h1></body></html>"
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path == "/echo-headers":
            items = "".join(
                f"<li class='header' data-name='{html.escape(name.lower())}'>{html.escape(value)}</li>"
                for name, value in self.headers.items()
            )
            page = f"<html><head><title>Headers</title></head><body><ul>{items}</ul></body></html>"
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path == "/links":
            items = "".join(
                f'<li><a href="{html.escape(link)}">{html.escape(link)}</a></li>'
                for link in query.get("to", "").split(",")
                if link
            )
            page = f"<html><head><title>Index</title></head><body><ul class='news'>{items}</ul></body></html>"
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path.startswith("/a/"):
            self._send(200, generated_article(path.removeprefix("/a/")).encode(), "text/html; charset=utf-8")
        elif path.startswith("/linking/"):
            name = path.removeprefix("/linking/")
            count = int(query.get("n", "0"))
            items = "".join(f'<li><a href="/a/{name}-{n}">{n}</a></li>' for n in range(count))
            page = generated_article(name).replace("</body>", f"<ul class='news'>{items}</ul></body>", 1)
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path.startswith("/cookie-wall/"):
            name = path.removeprefix("/cookie-wall/")
            if "wall=1" in self.headers.get("Cookie", ""):
                self._send(200, generated_article(name).encode(), "text/html; charset=utf-8")
            else:
                self._redirect(f"/set-cookie/{name}", 302)
        elif path.startswith("/set-cookie/"):
            self.send_response(302)
            self.send_header("Location", "/cookie-wall/" + path.removeprefix("/set-cookie/"))
            self.send_header("Set-Cookie", "wall=1; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith("/bad-length/"):
            name = path.removeprefix("/bad-length/")
            _asked(name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            for value in query.get("as", "-1").split(";"):
                self.send_header("Content-Length", value)
            self.end_headers()
            self.wfile.write(generated_article(name).encode())
            self.close_connection = True
        elif path.startswith("/long-body/"):
            name = path.removeprefix("/long-body/")
            _asked(name)
            self._send_long(generated_article(name).encode(), query)
        elif path.startswith("/r/"):
            self._redirect("/a/" + path.removeprefix("/r/"), 302)
        elif path == "/refresh":
            to = html.escape(query.get("to", "/"))
            refresh = f'<head><meta http-equiv="refresh" content="0; url={to}">'
            if query.get("in") == "cp1252":
                french = article_page(CP1252_TITLE, CP1252_PARAGRAPHS, lang="fr")
                self._send(200, french.replace("<head>", refresh, 1).encode("cp1252"), "text/html")
            else:
                page = generated_article("refresh").replace("<head>", refresh, 1)
                self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path.startswith("/flaky/"):
            name = path.removeprefix("/flaky/")
            seen = _asked(name)
            if seen <= int(query.get("fail", "1")):
                wait = query.get("retry_after")
                if "retry_in" in query:
                    wait = email.utils.formatdate(time.time() + float(query["retry_in"]), usegmt=True)
                self._send(503, b"busy", "text/plain", {} if wait is None else {"Retry-After": wait})
            else:
                self._send(200, generated_article(name).encode(), "text/html; charset=utf-8")
        elif path.startswith("/held/"):
            name = path.removeprefix("/held/")
            seen = _asked(name)
            if seen == 1:
                time.sleep(float(query.get("seconds", "5")))
            self._send(200, generated_article(name).encode(), "text/html; charset=utf-8")
        elif path.startswith("/asked/"):
            with _COUNTS_LOCK:
                asked = _COUNTS.get(path.removeprefix("/asked/"), 0)
            self._send(200, str(asked).encode(), "text/plain")
        elif path == "/bad-gzip":
            body = b"\x1f\x8b\x08\x00garbage" * 50
            self._send(200, body, "text/html; charset=utf-8", {"Content-Encoding": "gzip"})
        elif path == "/uncompressed":
            headers = {"Content-Encoding": query.get("as", "gzip")}
            self._send(200, generated_article("uncompressed").encode(), "text/html; charset=utf-8", headers)
        elif path.startswith("/cut-compressed/"):
            encoding = query.get("as", "gzip")
            whole = _compressed(generated_article(path.removeprefix("/cut-compressed/")).encode(), encoding)
            headers = {"Content-Encoding": encoding}
            self._send(200, whole[: len(whole) // 2], "text/html; charset=utf-8", headers)
        elif path.startswith("/cut/"):
            self._send_cut(generated_article(path.removeprefix("/cut/")).encode(), query.get("how", "length"))
        elif path == "/gbk-euro":
            chinese = article_page(GBK_TITLE, GBK_EURO_PARAGRAPHS, lang="zh")
            body = b"\x80".join(part.encode("gbk") for part in chinese.split("€"))
            self._send(200, body, "text/html; charset=gb2312")
        elif path == "/gbk-as-utf8":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS, lang="zh")
            self._send(200, chinese.encode("gbk"), "text/html; charset=utf-8")
        elif path == "/utf8-as-gb2312":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS * 3, lang="zh")
            if query.get("in") == "meta":
                chinese = chinese.replace("<head>", '<head><meta charset="gb2312">', 1)
                self._send(200, chinese.encode(), "text/html")
            else:
                self._send(200, chinese.encode(), "text/html; charset=gb2312")
        elif path == "/utf8":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS, lang="zh")
            self._send(200, chinese.encode(), "text/html; charset=utf-8")
        elif path == "/utf8-short":
            short = article_page(SHORT_UTF8_TITLE, [generated_text("short")], lang="zh")
            self._send(200, short.encode(), "text/html; charset=utf-8")
        elif path == "/gb18030-meta":
            chinese = article_page(GBK_TITLE, GBK_PARAGRAPHS, lang="zh")
            chinese = chinese.replace("<head>", '<head><meta charset="gb18030">', 1)
            self._send(200, chinese.encode("gb18030"), "text/html")
        elif path == "/cp1252-as-utf8":
            french = article_page(CP1252_TITLE, CP1252_PARAGRAPHS, lang="fr")
            french = french.replace("<head>", '<head><meta charset="utf-8">', 1)
            self._send(200, french.encode("cp1252"), "text/html; charset=utf-8")
        elif path == "/unsized":
            size = int(float(query.get("kb", "100")) * 1024)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Connection", "close")
            self.end_headers()
            block = _LARGE_PARAGRAPH.encode()
            sent = 0
            while sent < size:
                self.wfile.write(block)
                sent += len(block)
            self.close_connection = True
        elif path == "/feed.xml.gz":
            links = [link for link in query.get("to", "").split(",") if link]
            body = gzip.compress(feed_document(links, query.get("format", "rss")).encode())
            headers = {"Content-Encoding": "gzip"} if query.get("encoded") == "1" else {}
            self._send(200, body, query.get("served", "application/x-gzip"), headers)
        elif path == "/feed-bomb.xml.gz":
            self._send(200, _feed_bomb(), "application/x-gzip")
        elif path == "/feed":
            links = [link for link in query.get("to", "").split(",") if link]
            links += [f"http://elsewhere.test/a/{n}" for n in range(int(query.get("elsewhere", "0")))]
            naive = query.get("dates") == "naive"
            body = feed_document(links, query.get("format", "rss"), naive=naive).encode()
            etag = f'"{hashlib.sha1(body).hexdigest()[:16]}"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
            else:
                headers = {"ETag": etag, "Last-Modified": "Tue, 24 Nov 2026 08:00:00 GMT"}
                served = query.get("served") or FEED_TYPES[query.get("format", "rss")]  # a server's mistake
                self._send(200, body, served, headers)
        elif path in ("/sitemap.xml", "/sitemap.xml.gz", "/sitemap-index.xml"):
            links = [link for link in query.get("to", "").split(",") if link]
            dates = [date for date in query.get("lastmod", "").split(",") if date]
            kind = "sitemapindex" if path == "/sitemap-index.xml" else "urlset"
            news, date_only = query.get("news") in ("1", "date", "naive"), query.get("news") == "date"
            naive = query.get("news") == "naive"
            body = sitemap_document(kind, links, dates, news=news, date_only=date_only, naive=naive).encode()
            if path.endswith(".gz"):
                # A server's ways with a .gz file: its type (x-gzip or gzip, &served=), and sent as it is
                # or once more as a gzip Content-Encoding (&encoded=1), which the client undoes.
                headers = {"Content-Encoding": "gzip"} if query.get("encoded") == "1" else {}
                self._send(200, gzip.compress(body), query.get("served", "application/x-gzip"), headers)
            else:
                self._send(200, body, "application/xml")
        elif path == "/sitemap-loop.xml":
            loop = sitemap_document("sitemapindex", ["/sitemap-loop.xml"], [], news=False)
            self._send(200, loop.encode(), "application/xml")
        elif path == "/sitemap-bomb.xml.gz":
            self._send(200, _sitemap_bomb(), "application/x-gzip")
        elif path == "/api":
            escaped = query.get("surrogate") in ("1", "link")
            self._send(200, json.dumps(api_page(query), ensure_ascii=escaped).encode(), "application/json")
        elif path == "/api-object":
            self._send(200, b'{"data": {"posts": {"link": "/a/x"}}}', "application/json")
        elif path == "/search":
            keyword, number = query.get("q", ""), int(query.get("page", "1"))
            port = self.headers.get("Host", "127.0.0.1:80").rsplit(":", 1)[-1]
            results = [
                f"/a/found-{keyword}-{number}",
                f"http://localhost:{port}/a/there-{keyword}-{number}",
                f"http://elsewhere.test/{keyword}",
            ]
            items = "".join(
                f'<li><a href="{html.escape(link)}">{html.escape(link)}</a></li>' for link in results
            )
            after = f"/search?q={urllib.parse.quote_plus(keyword)}&amp;page={number + 1}"
            following = f'<a rel="next" href="{after}">More</a>' if number < 3 else ""
            page = f"<html><body><ol class='results'>{items}</ol>{following}</body></html>"
            self._send(200, page.encode(), "text/html; charset=utf-8")
        elif path == "/search-gbk":
            try:
                gbk_query = urllib.parse.parse_qs(parts.query, encoding="gbk", errors="strict")
            except UnicodeDecodeError:
                gbk_query = {}
            number = int(query.get("page", "1"))
            mark = gbk_query.get("mark", [None])[-1]
            found = gbk_query.get("q", [""])[-1] == GBK_KEYWORD and mark in (None, "1", GBK_LACKS_MARK)
            items = f'<li><a href="/a/gbk-found-{number}">{GBK_TITLE}</a></li>' if found else ""
            marked = f"&amp;mark={GBK_LACKS_MARK}" if mark is not None else ""
            following = (
                f'<a rel="next" href="/search-gbk?q={GBK_KEYWORD}&amp;page={number + 1}{marked}">下一页</a>'
                if found and number < 2
                else ""
            )
            page = f"<html><body><ol class='results'>{items}</ol>{following}</body></html>"
            self._send(200, page.encode("gbk"), "text/html; charset=GBK")
        elif path.startswith("/doc/"):
            name, _, kind = path.removeprefix("/doc/").rpartition(".")
            self._send(200, document_file(name, kind), DOCUMENT_TYPES.get(kind, "application/octet-stream"))
        elif path == "/binary":
            binary_type = query.get("type", "application/octet-stream")
            self._send(200, random.Random(7).randbytes(64 * 1024), binary_type)
        else:
            super().do_GET()

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_cut(self, body: bytes, how: str) -> None:
        self.close_connection = True
        if how == "nothing":
            return
        half = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if how == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(half)
        self.wfile.flush()

    def _send_long(self, body: bytes, query: dict[str, str]) -> None:
        self.close_connection = True
        declared = len(body) if query.get("tail") else len(body) // 2
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        self.wfile.write(body + b"\r\n" if query.get("tail") else body)

    def _redirect(self, location: str, status: int) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_large(self, megabytes: float) -> None:
        size = int(megabytes * 1024 * 1024)
        block = _LARGE_PARAGRAPH.encode() * 512
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        sent = 0
        while sent < size:
            piece = block[: size - sent]
            self.wfile.write(piece)
            sent += len(piece)

    def log_message(self, format: str, *args: Any) -> None:
        if self.verbose:
            super().log_message(format, *args)


class SiteServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up early (the size limit tests do) is expected, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="directory of static files")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    args = parser.parse_args(argv)
    SiteHandler.verbose = args.verbose
    handler = functools.partial(SiteHandler, directory=str(args.root))
    with SiteServer(("127.0.0.1", args.port), handler) as server:
        sys.stdout.write(f"{server.server_address[1]}\n")
        sys.stdout.flush()

        def stop_at_eof() -> None:
            sys.stdin.read()
            server.shutdown()

        threading.Thread(target=stop_at_eof, daemon=True).start()
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
