"""Bytes of a web page to text: the character encoding found the way browsers find it, never an exception.

Order (the WHATWG encoding sniffing algorithm, simplified):

1. a byte order mark (UTF-8, UTF-16, UTF-32);
2. the charset declared by the transport (the HTTP ``Content-Type`` header), passed as ``declared``;
3. ``<meta charset>``, ``<meta http-equiv="Content-Type" content="...; charset=...">`` or an XML
   declaration in the first ``PRESCAN_BYTES`` bytes;
4. valid UTF-8, else UTF-16 without a BOM, else what ``charset-normalizer`` detects (the best of its
   guesses that is a web encoding and decodes the page without U+FFFD), else windows-1252.

:func:`declared_encoding` is steps 1 to 3 alone, which read the first bytes only: the encoding a page
declares, named without decoding the page (:func:`decode` takes its answer, so the two never disagree).

Labels are read as browsers read them: GB2312 is GBK, ISO-8859-1 and ASCII are windows-1252. An encoding is
named as the WHATWG Encoding Standard names it (``utf-8``, ``windows-1252``, ``gbk``, ``shift_jis``; IANA's
``utf-32le``/``be``, which only a BOM selects), the name every report gives, and decoded by the Python codec
that matches the browsers' decoder (:func:`python_codec`): GBK by GB18030, Big5 by Big5-HKSCS, Shift_JIS
by cp932, EUC-KR by cp949, and a lone byte 0x80 of GBK or GB18030 is the euro sign, as WHATWG's decoder of
both reads it (:func:`_decode`; detection too, :func:`_detect`). Only text encodings used on the web are
accepted; a label naming anything else (``rot13``, ``base64``, an unknown name) is ignored and the next step
decides. Bytes that the chosen encoding cannot decode become U+FFFD.

:func:`decode_checked` is how a crawl reads a page, and every command that shows one: :func:`decode`, but a
declared charset that leaves many U+FFFD is set aside for the detected one when that fits far better, and a
charset given by the caller (a rule's ``encoding`` key) is used whatever the page declares but a byte order
mark (which browsers follow whatever else names the encoding) as long as it decodes the page (it gives way
to the page's own encoding when that decodes what it cannot, and to UTF-8
when the page is valid UTF-8 with many multi-byte characters, which it may decode into other characters;
kept on a page that declares UTF-8 and is valid UTF-8 with fewer, it is doubted, ``Doubt.unproven``).

:func:`sniff_binary` tells data that is not text at all (images, archives, random bytes), so that callers can
say "this is not HTML" instead of extracting noise.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import charset_normalizer

__all__ = [
    "DOUBT_REPLACEMENTS",
    "UTF8_EVIDENCE",
    "Decoded",
    "Doubt",
    "charset_from_content_type",
    "declared_encoding",
    "decode",
    "decode_checked",
    "decode_html",
    "looks_binary",
    "normalize_encoding",
    "python_codec",
    "query_codec",
    "redetect",
    "sniff_binary",
]

# How far the <meta> declaration is looked for (browsers: 1024 bytes; real pages put long scripts first).
PRESCAN_BYTES = 8192
# How much of the input is shown to charset-normalizer: enough to decide, bounded in time for huge pages.
DETECT_BYTES = 256 * 1024
# U+FFFD from this many on, :func:`decode_checked` doubts the charset a page declares and tries detection.
DOUBT_REPLACEMENTS = 8
# Multi-byte characters from this many on, a page that is valid UTF-8 is read as UTF-8 whatever encoding a
# caller gives (:func:`decode_checked`): text in another encoding that is valid UTF-8 so far is rare.
UTF8_EVIDENCE = 8
# How much of the input is looked at to tell binary data from text.
SNIFF_BYTES = 8192
# Share of control bytes (other than tab, newlines, form feed, escape) above which data is not text.
MAX_CONTROL_SHARE = 0.02
# How far an HTML page's start (a doctype, <html>, a <head> or <body> tag) is looked for: a page whose
# control bytes pass MAX_CONTROL_SHARE (in a script's string, a data URI) is text when it starts as HTML.
MARKUP_BYTES = 1024

Declaration = Literal["bom", "declared", "meta"]
Source = Declaration | Literal["utf-8", "utf-16", "detected", "default", "given"]

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with the UTF-16 one.
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32le"),
    (codecs.BOM_UTF32_BE, "utf-32be"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
)

# Web labels Python does not know, mapped to one it does.
_LABEL_ALIASES = {
    "x-gbk": "gbk",
    "x-sjis": "shift_jis",
    "windows-31j": "cp932",
    "ms_kanji": "cp932",
    "windows-874": "cp874",
    "x-cp1250": "cp1250",
    "x-cp1251": "cp1251",
    "x-cp1252": "cp1252",
    "x-cp1253": "cp1253",
    "x-cp1254": "cp1254",
    "x-cp1255": "cp1255",
    "x-cp1256": "cp1256",
    "x-cp1257": "cp1257",
    "x-cp1258": "cp1258",
    "x-mac-roman": "mac-roman",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-ukrainian": "mac-cyrillic",
    "iso-8859-8-i": "iso8859-8",
    "iso-8859-6-i": "iso8859-6",
    "unicode-1-1-utf-8": "utf-8",
    "unicode11utf8": "utf-8",
    "unicode20utf8": "utf-8",
    "x-unicode20utf8": "utf-8",
    "x-euc-jp": "euc_jp",
    "csgb2312": "gb2312",
    "chinese": "gb2312",
    "x-x-big5": "big5",
}
# The Python codec of WHATWG's GBK encoder (:func:`_whatwg_gbk_encode`), the query codec of GBK pages
# (``_CODECS``): a name that w3lib's and urllib's quoting take like any codec's.
_WHATWG_GBK = "whatwg_gbk"
# The web encodings, by their WHATWG names (IANA's for UTF-32, which only a BOM selects), each with the
# Python codec that decodes its pages as browsers do (a superset where the WHATWG decoder is one: Big5 as
# Big5-HKSCS, Shift_JIS as cp932, EUC-KR as cp949), and the one a browser percent-encodes a URL's query in
# for such a page: the same, but for UTF-16 and UTF-32, whose pages send UTF-8, and GBK (below).
_CODECS: dict[str, tuple[str, str]] = {
    "utf-16le": ("utf-16-le", "utf-8"),
    "utf-16be": ("utf-16-be", "utf-8"),
    "utf-32le": ("utf-32-le", "utf-8"),
    "utf-32be": ("utf-32-be", "utf-8"),
    **{
        name: (codec, codec)
        for name, codec in {
            "utf-8": "utf-8",
            "gb18030": "gb18030",
            "big5": "big5hkscs",
            "shift_jis": "cp932",
            "euc-jp": "euc_jp",
            "iso-2022-jp": "iso2022_jp",
            "euc-kr": "cp949",
            "koi8-r": "koi8-r",
            "koi8-u": "koi8-u",
            "macintosh": "mac-roman",
            "x-mac-cyrillic": "mac-cyrillic",
            "ibm866": "cp866",
            "windows-874": "cp874",
            **{f"windows-{number}": f"cp{number}" for number in range(1250, 1259)},
            **{
                f"iso-8859-{number}": f"iso8859-{number}"
                for number in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)
            },
        }.items()
    },
    # GBK pages are decoded as GB18030, their superset, as browsers decode them; their queries are encoded
    # by WHATWG's GBK encoder (_WHATWG_GBK), without GB18030's four-byte sequences, which a GBK page cannot
    # read.
    "gbk": ("gb18030", _WHATWG_GBK),
}
# Python codec names (``codecs.lookup(label).name``) of the labels, mapped to the web encoding a browser
# reads them as (GB2312 as GBK, ISO-8859-1 and ASCII as windows-1252, ...); a label whose codec is not here
# is no web text encoding.
_WEB_NAMES = {
    **{codec: name for name, (codec, _) in _CODECS.items()},
    "gb2312": "gbk",
    "gbk": "gbk",
    "hz": "gbk",
    "gb18030": "gb18030",
    "iso8859-1": "windows-1252",
    "ascii": "windows-1252",
    "iso8859-9": "windows-1254",
    "iso8859-11": "windows-874",
    "tis-620": "windows-874",
    "big5": "big5",
    "shift_jis": "shift_jis",
    "euc_kr": "euc-kr",
    "utf-8-sig": "utf-8",
    "utf-16": "utf-16le",
    "utf-32": "utf-32le",
}
# The bytes that start a multi-byte UTF-8 sequence (C0, C1 and F5 to FF start none).
_UTF8_LEAD_BYTES = bytes(range(0xC2, 0xF5))
_BOM_LENGTHS = {encoding: len(bom) for bom, encoding in _BOMS}
_WIDE = frozenset({"utf-16le", "utf-16be", "utf-32le", "utf-32be"})
# Encodings whose byte sequences are checked: text in another encoding seldom decodes cleanly in them, so a
# clean decode is evidence (a single-byte encoding decodes almost any bytes, which proves nothing).
_MULTI_BYTE = _WIDE | {"utf-8", "gbk", "gb18030", "big5", "shift_jis", "euc-jp", "iso-2022-jp", "euc-kr"}

_CHARSET_RE = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:()+-]{1,40})""", re.IGNORECASE)
_META_RE = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)
_XML_DECL_RE = re.compile(rb"""^\s*<\?xml\b[^>]*\bencoding\s*=\s*["']([A-Za-z0-9_.:-]{1,40})["']""")
_COMMENT_RE = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)
_TEXT_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([^\s"';,]+)""", re.IGNORECASE)

# The start of an HTML page, after white space and comments: a doctype or <html>; or a <head> or <body>
# tag anywhere in its first MARKUP_BYTES (<header> is none). A comment's text holds no "-->": with
# <!--.*?--> the comments could be grouped in 2**n ways, each tried when no doctype follows them.
_HTML_START_RE = re.compile(
    rb"\s*(?:<!--(?:[^-]|-(?!->))*-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.IGNORECASE
)
_HTML_TAG_RE = re.compile(rb"<(?:head|body)[\s/>]", re.IGNORECASE)
# Bytes that do not occur in text (WHATWG MIME sniffing's "binary data bytes").
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"RIFF", "a RIFF file (WebP image, WAV or AVI)"),
    (b"PK\x03\x04", "a ZIP archive (or a DOCX/XLSX/EPUB file)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
    (b"\x00\x00\x01\x00", "an icon"),
    (b"OggS", "an Ogg media file"),
    (b"ID3", "an MP3 file"),
    (b"wOFF", "a WOFF font"),
    (b"wOF2", "a WOFF2 font"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE document (DOC/XLS/PPT)"),
    (b"SQLite format 3\x00", "an SQLite database"),
)


@dataclass(frozen=True, slots=True)
class Decoded:
    """Decoded text, the web encoding's name (WHATWG's: ``windows-1252``, ``gbk``; see
    :func:`python_codec` for the codec that decoded it), and which step of the sniffing decided it."""

    text: str
    encoding: str
    source: Source
    # Set by decode_checked when the charset first tried left DOUBT_REPLACEMENTS U+FFFD or more.
    doubt: Doubt | None = None


@dataclass(frozen=True, slots=True)
class Doubt:
    """The charset :func:`decode_checked` tried first on a page (declared by it, or given by the caller),
    the U+FFFD it left, and what the page was read as instead (``None``: nothing decodes it better)."""

    encoding: str
    source: Declaration | Literal["given"]
    replaced: int
    better: Decoded | None
    # A given charset kept on a page that declares UTF-8 and is valid UTF-8, with fewer than UTF8_EVIDENCE
    # multi-byte characters (too few to tell it from text in the given charset): that UTF-8 reading.
    unproven: Decoded | None = None


def normalize_encoding(label: str | None) -> str | None:
    """The name (WHATWG's) of the web encoding a browser reads the charset ``label`` (or Python codec
    name) as; ``None`` when it is no web text encoding.

    >>> normalize_encoding("GB2312"), normalize_encoding("latin1"), normalize_encoding("rot13")
    ('gbk', 'windows-1252', None)
    """
    if not label:
        return None
    name = label.strip().strip("\"'").strip().lower()
    name = _LABEL_ALIASES.get(name, name)
    try:
        name = codecs.lookup(name).name
    except (LookupError, ValueError):
        return None
    return _WEB_NAMES.get(name)


def _whatwg_gbk_encode(text: str, errors: str = "strict") -> tuple[bytes, int]:
    """``text`` encoded by WHATWG's GBK encoder: GB18030's one- and two-byte codes (Python's gbk codec has
    all of them but the private use area's, GBK 1.0's radicals and a few more, 2,149 characters), the
    euro sign as the byte 0x80 (GB18030's 0xA2E3 otherwise), and no four-byte sequence: what has none
    is an error, handled by ``errors``. U+E5E5, whose GB18030 code 0xA3A0 browsers decode as U+3000, is
    one too."""
    try:
        return text.encode("gbk"), len(text)
    except UnicodeEncodeError:
        pass
    encoded = bytearray()
    position = 0
    while position < len(text):
        char = text[position]
        # A lone surrogate encodes to nothing, and is an error too.
        code = b"\x80" if char == "\u20ac" else char.encode("gb18030", "ignore")
        if 0 < len(code) <= 2 and char != "\ue5e5":
            encoded += code
            position += 1
            continue
        error = UnicodeEncodeError(_WHATWG_GBK, text, position, position + 1, "not in WHATWG's GBK")
        replacement, position = codecs.lookup_error(errors)(error)
        encoded += replacement.encode("gbk") if isinstance(replacement, str) else replacement
    return bytes(encoded), len(text)


def _whatwg_codec(name: str) -> codecs.CodecInfo | None:
    """The codec search function of ``_WHATWG_GBK``, which decodes as browsers decode GBK: as GB18030."""
    if name != _WHATWG_GBK:
        return None
    return codecs.CodecInfo(_whatwg_gbk_encode, codecs.lookup("gb18030").decode, name=_WHATWG_GBK)


codecs.register(_whatwg_codec)


def _euro_or(errors: str) -> Callable[[UnicodeError], tuple[str | bytes, int]]:
    """A codec error handler for Python's gb18030 decoder: a lone 0x80 (one where a character starts, not
    a second byte) is the euro sign, as WHATWG's GB18030 decoder, GBK's too, reads it (its error is that
    byte alone); any other error is left to the handler ``errors``."""
    handler = codecs.lookup_error(errors)

    def euro_or(error: UnicodeError) -> tuple[str | bytes, int]:
        if isinstance(error, UnicodeDecodeError) and error.object[error.start] == 0x80:
            return "\u20ac", error.start + 1
        return handler(error)

    return euro_or


# The error handlers that decode gb18030 as WHATWG does, by the handler they add the euro sign to.
_GB18030_ERRORS = {"strict": "whatwg_gb18030_strict", "replace": "whatwg_gb18030_replace"}
codecs.register_error(_GB18030_ERRORS["strict"], _euro_or("strict"))
codecs.register_error(_GB18030_ERRORS["replace"], _euro_or("replace"))


def python_codec(name: str) -> str:
    """The Python codec that decodes the web encoding ``name`` (from :func:`normalize_encoding`) as
    browsers do: ``gbk`` is decoded as ``gb18030``, ``windows-1252`` as ``cp1252`` (a lone 0x80 of GBK
    and GB18030 as the euro sign too, which :func:`_decode` adds)."""
    return _CODECS[name][0]


def _decode(data: bytes, name: str, errors: Literal["strict", "replace"] = "strict") -> str:
    """``data`` in the web encoding ``name`` as browsers decode it: by :func:`python_codec`, and for GBK
    and GB18030 a lone 0x80 as the euro sign (Windows' code page 936 has it there), which Python's gb18030
    codec takes for an error, as w3lib's decoding (Scrapy's ``response.text``) does too; other errors
    are ``errors``'s."""
    codec = python_codec(name)
    return data.decode(codec, _errors(codec, errors))


def _errors(codec: str, errors: Literal["strict", "replace"]) -> str:
    """The error handler that decodes with ``codec`` as browsers do: ``errors``, but for gb18030."""
    return _GB18030_ERRORS[errors] if codec == "gb18030" else errors


def query_codec(name: str) -> str:
    """The Python codec a browser percent-encodes a URL's query in for a page in the web encoding ``name``
    (from :func:`normalize_encoding`): :func:`python_codec`'s but for UTF-16 and UTF-32, whose pages send
    UTF-8, and ``gbk``, which is WHATWG's GBK encoder (``whatwg_gbk``, see ``_CODECS``)."""
    return _CODECS[name][1]


def charset_from_content_type(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` header value, as given (not normalized)."""
    if not content_type:
        return None
    match = _TEXT_CHARSET_RE.search(content_type)
    return match.group(1) if match else None


def sniff_binary(data: bytes, declared: str | None = None) -> str | None:
    """What ``data`` is when it is not text (``"a PNG image"``, ``"binary data ..."``); ``None`` for text.
    ``declared``, the charset the transport gives (a bare label or a whole ``Content-Type``, as for
    :func:`decode`): UTF-16 it names is text when it decodes, though most of its bytes may be control bytes
    (Chinese or Russian, without a byte order mark)."""
    if any(data.startswith(bom) for bom, _ in _BOMS):
        return None
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    sample = data[:SNIFF_BYTES]
    if not sample:
        return None
    if _utf16_without_bom(sample) is not None or _declared_utf16(sample, declared):
        return None
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > max(2, MAX_CONTROL_SHARE * len(sample)) and not _html_page(sample, declared):
        share = controls / len(sample)
        return f"binary data ({share:.0%} control bytes in the first {len(sample)} bytes)"
    return None


def _html_page(sample: bytes, declared: str | None) -> bool:
    """``sample``, the start of a page, is HTML: it starts as a page does (:data:`_HTML_START_RE`, or a
    <head> or <body> tag in its first ``MARKUP_BYTES``), and decodes without an error in the encoding it
    declares (``declared``, else its <meta>), else in UTF-8: random bytes after a tag do not."""
    start = sample[:MARKUP_BYTES]
    if not (_HTML_START_RE.match(start) or _HTML_TAG_RE.search(start)):
        return False
    found = declared_encoding(sample, declared)
    codec = python_codec(found[0] if found is not None else "utf-8")
    decoder = codecs.getincrementaldecoder(codec)(_errors(codec, "strict"))
    try:
        decoder.decode(sample, final=False)  # the sample may end inside a character
    except UnicodeDecodeError:
        return False
    return True


def looks_binary(data: bytes) -> bool:
    """True when ``data`` is not text (an image, an archive, random bytes): see :func:`sniff_binary`."""
    return sniff_binary(data) is not None


def declared_encoding(data: bytes, declared: str | None = None) -> tuple[str, Declaration] | None:
    """The web encoding (its WHATWG name) that a page's bytes declare, and where: its byte order mark,
    else ``declared`` (the transport's charset, as for :func:`decode`), else the ``<meta>`` charset or XML
    declaration in its first ``PRESCAN_BYTES`` bytes. ``None`` when none of them names a web encoding
    (:func:`decode` then detects it). Reads those bytes only: never decodes the page.

    >>> declared_encoding(b"<meta charset=gb2312>", "text/html; charset=latin1")
    ('windows-1252', 'declared')
    """
    for bom, bom_encoding in _BOMS:
        if data.startswith(bom):
            return bom_encoding, "bom"
    label = declared
    if label and ("=" in label or "/" in label):
        label = charset_from_content_type(label)
    encoding = normalize_encoding(label)
    if encoding is not None:
        return encoding, "declared"
    encoding = _prescan(data[:PRESCAN_BYTES])
    if encoding is not None:
        return encoding, "meta"
    return None


def decode(data: bytes, declared: str | None = None) -> Decoded:
    """Decode a page's bytes (see the module docstring for the order); never raises for any input.

    ``declared`` is the charset given by the transport: either a bare label (``"gbk"``) or a whole
    ``Content-Type`` value (``"text/html; charset=gbk"``).
    """
    found = declared_encoding(data, declared)
    if found is not None:
        name, source = found
        return _decoded(data[_BOM_LENGTHS[name] :] if source == "bom" else data, name, source)
    wide = _utf16_without_bom(data[:SNIFF_BYTES])
    if wide is not None:
        return _decoded(data, wide, "utf-16")
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        pass
    encoding = _detect(data[:DETECT_BYTES])
    if encoding is not None:
        return _decoded(data, encoding, "detected")
    return _decoded(data, "windows-1252", "default")


def decode_checked(data: bytes, declared: str | None = None, given: str | None = None) -> Decoded:
    """The page as a crawl reads it: as the web encoding ``given`` (a rule's ``encoding`` key) when there
    is one and it decodes the page (:func:`_given_or_own`), else as :func:`decode` finds it, except that a
    charset declared in the Content-Type (``declared``) or a ``<meta>`` that leaves ``DOUBT_REPLACEMENTS``
    U+FFFD or more is set aside for the detected one when that leaves a quarter as many or fewer (a site
    that declares UTF-8 and sends GBK). ``doubt`` tells a charset set aside (``doubt.better`` is then the
    result), or one that left so many U+FFFD with nothing better (``doubt.better`` is ``None``)."""
    if given is not None:
        return _given_or_own(data, declared, given)
    result = decode(data, declared)
    if result.source not in ("declared", "meta"):
        return result
    replaced = result.text.count("\ufffd")
    if replaced < DOUBT_REPLACEMENTS:
        return result
    detected = redetect(data)
    if detected is None or detected.text.count("\ufffd") * 4 > replaced:
        return replace(result, doubt=Doubt(result.encoding, result.source, replaced, None))
    return replace(detected, doubt=Doubt(result.encoding, result.source, replaced, detected))


def _given_or_own(data: bytes, declared: str | None, given: str) -> Decoded:
    """``data`` in the encoding of its byte order mark when it has one, whatever ``given`` is, as browsers
    read it (a user's choice of encoding included) and Scrapy does (:func:`_by_bom`). Else in the ``given``
    encoding when that decodes it: one strict decode, no detection, unless
    the page is valid UTF-8 with ``UTF8_EVIDENCE`` multi-byte characters or more (:func:`_proven_utf8`),
    read as UTF-8 then (``doubt.replaced`` is 0: a UTF-8 page that GBK decodes into other characters);
    with fewer, on a page that declares UTF-8, the UTF-8 reading is ``doubt.unproven`` (one GBK character
    in six is valid UTF-8, so a few prove nothing against the key, but the choice is told). When
    it leaves U+FFFD, the page's own encoding (:func:`decode_checked` without ``given``) when that leaves a
    quarter as many or fewer of the ``DOUBT_REPLACEMENTS`` or more and is evidence (:func:`_reads_better`);
    or, for fewer U+FFFD, the page's declared charset or UTF-8 when either is a multi-byte encoding that
    decodes it cleanly. Else the ``given`` one, doubted when it leaves ``DOUBT_REPLACEMENTS`` or more."""
    by_bom = _by_bom(data, given)
    if by_bom is not None:
        return by_bom
    try:
        text = _decode(data, given)
    except UnicodeDecodeError:
        pass
    else:
        if given == "utf-8":
            return Decoded(text, given, "given")
        utf8 = _proven_utf8(data)
        if utf8 is not None:
            return replace(utf8, doubt=Doubt(given, "given", 0, utf8))
        unproven = _declared_utf8(data, declared)
        doubt = None if unproven is None else Doubt(given, "given", 0, None, unproven)
        return Decoded(text, given, "given", doubt)
    result = _decoded(data, given, "given")
    replaced = result.text.count("\ufffd")
    if replaced < DOUBT_REPLACEMENTS:
        own = _clean_multi_byte(data, declared)
        return result if own is None else replace(own, doubt=Doubt(given, "given", replaced, own))
    own = decode_checked(data, declared)
    if own.text.count("\ufffd") * 4 > replaced or not _reads_better(own, result, replaced):
        return replace(result, doubt=Doubt(given, "given", replaced, None))
    return replace(own, doubt=Doubt(given, "given", replaced, own))


def _by_bom(data: bytes, given: str) -> Decoded | None:
    """``data`` in the encoding of its byte order mark, as :func:`decode` reads it; doubted, with the
    U+FFFD ``given`` leaves, when ``given`` is another encoding; ``None`` when it has no byte order mark."""
    if not any(data.startswith(bom) for bom, _ in _BOMS):
        return None
    result = decode(data)
    if result.encoding == given:
        return result
    replaced = _decoded(data, given, "given").text.count("\ufffd")
    return replace(result, doubt=Doubt(given, "given", replaced, result))


def _proven_utf8(data: bytes) -> Decoded | None:
    """``data`` as UTF-8 when it is valid UTF-8 with ``UTF8_EVIDENCE`` multi-byte characters or more (text
    in another encoding seldom is: GBK or windows-1252 bytes break a UTF-8 sequence within a few
    characters); ``None`` otherwise. Counts lead bytes first, so most pages cost no decode at all."""
    if len(data) - len(data.translate(None, _UTF8_LEAD_BYTES)) < UTF8_EVIDENCE:
        return None
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        return None


def _declared_utf8(data: bytes, declared: str | None) -> Decoded | None:
    """``data`` as UTF-8 when it declares UTF-8 (:func:`declared_encoding`), is valid UTF-8 and has a
    multi-byte character, which another encoding reads as other characters; ``None`` otherwise."""
    if len(data.translate(None, _UTF8_LEAD_BYTES)) == len(data):
        return None
    found = declared_encoding(data, declared)
    if found is None or found[0] != "utf-8":
        return None
    try:
        return Decoded(data.decode("utf-8"), "utf-8", found[1])
    except UnicodeDecodeError:
        return None


def _reads_better(own: Decoded, given: Decoded, replaced: int) -> bool:
    """Whether ``own``, the page's own reading with few U+FFFD, is evidence against the ``given`` reading,
    which left ``replaced``: a multi-byte encoding's is; a single-byte encoding decodes any bytes, so its
    reading is only when the ``given`` one read next to nothing (U+FFFD are half its non-ASCII characters
    or more: UTF-8 over windows-1252), not stray bytes among text it reads (GBK that says iso-8859-1)."""
    if own.encoding in _MULTI_BYTE:
        return _proves(own.encoding, own.source)
    return replaced * 2 >= sum(not char.isascii() for char in given.text)


def _proves(encoding: str, source: Source) -> bool:
    """Whether a clean reading in the multi-byte ``encoding`` (found by ``source``) of a page without a
    byte order mark (:func:`_by_bom` reads one) is evidence: UTF-16 and UTF-32 decode almost any bytes of
    the right length, so only the zero bytes of UTF-16's ASCII (``utf-16``) are, not a charset a server
    or a ``<meta>`` names."""
    return encoding not in _WIDE or source == "utf-16"


def _clean_multi_byte(data: bytes, declared: str | None) -> Decoded | None:
    """``data`` in the multi-byte encoding it declares (:func:`declared_encoding`; not UTF-16 or UTF-32,
    :func:`_proves`), else in UTF-8, when that decodes it without an error; ``None`` when neither does."""
    found = declared_encoding(data, declared)
    if found is not None and found[0] in _MULTI_BYTE and _proves(*found):
        name, source = found
        try:
            return Decoded(_decode(data, name), name, source)
        except UnicodeDecodeError:
            pass
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        return None


def redetect(data: bytes) -> Decoded | None:
    """The page decoded by detection alone (charset-normalizer), whatever it declares: for a page whose
    declared charset leaves undecodable bytes. None when nothing is detected."""
    encoding = _detect(data[:DETECT_BYTES])
    if encoding is None:
        return None
    return _decoded(data, encoding, "detected")


def _decoded(data: bytes, encoding: str, source: Source) -> Decoded:
    return Decoded(_decode(data, encoding, "replace"), encoding, source)


def decode_html(data: bytes, declared: str | None = None) -> str:
    """The text of a page's bytes: BOM, then ``declared``, then ``<meta>``, then detection; never raises."""
    return decode(data, declared).text


def _prescan(head: bytes) -> str | None:
    match = _XML_DECL_RE.match(head)
    if match:
        encoding = normalize_encoding(match.group(1).decode("ascii"))
        if encoding is not None:
            return _ascii_compatible(encoding)
    head = _COMMENT_RE.sub(b"", head)
    for meta in _META_RE.finditer(head):
        found = _CHARSET_RE.search(meta.group(0))
        if found:
            encoding = normalize_encoding(found.group(1).decode("ascii"))
            if encoding is not None:
                return _ascii_compatible(encoding)
    return None


def _ascii_compatible(encoding: str) -> str:
    # A <meta> that could be read as ASCII cannot be UTF-16 or UTF-32: browsers take UTF-8 then.
    return "utf-8" if encoding in _WIDE else encoding


def _declared_utf16(sample: bytes, declared: str | None) -> bool:
    """Whether ``declared`` names UTF-16 and ``sample`` decodes as it (a pair or a character the sample
    cuts off at its end aside); random bytes hold a lone surrogate every hundred or so characters."""
    if declared and ("=" in declared or "/" in declared):
        declared = charset_from_content_type(declared)
    encoding = normalize_encoding(declared)
    if encoding not in ("utf-16le", "utf-16be"):
        return False
    try:
        codecs.getincrementaldecoder(encoding)().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _utf16_without_bom(sample: bytes) -> str | None:
    """``utf-16le``/``be`` when ``sample`` looks like mostly-ASCII UTF-16 (zero bytes at one parity)."""
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16le"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16be"
    return None


def _detect(sample: bytes) -> str | None:
    """The web encoding charset-normalizer ranks best among those that decode ``sample`` without U+FFFD
    (:func:`_ranked`); when none does, GB18030 if it ranks so ``sample`` read as GB18030 (a lone 0x80 the
    euro sign) with its euro signs as spaces: charset-normalizer decodes with Python's codec, which takes
    the lone 0x80 of a GBK page's € (WHATWG's and Windows' encoding of it) for an error, and ranks short
    Chinese text with € written as GB18030 does (0xA2E3) no web encoding at all."""
    found = _ranked(sample)
    if found is not None or b"\x80" not in sample:
        return found
    decoder = codecs.getincrementaldecoder("gb18030")(_GB18030_ERRORS["strict"])
    try:
        euro_free = decoder.decode(sample, final=False).replace("\u20ac", " ").encode("gb18030")
    except UnicodeDecodeError:
        return None
    return "gb18030" if _ranked(euro_free) in {"gbk", "gb18030"} else None


def _ranked(sample: bytes) -> str | None:
    """The web encoding charset-normalizer ranks best among those that decode ``sample`` without U+FFFD.
    Its guesses that are no web encoding are passed over (it may rank cp775 or mac_latin2 first for a
    short French page in windows-1252, which no browser would read so)."""
    web = [(match, normalize_encoding(match.encoding)) for match in charset_normalizer.from_bytes(sample)]
    clean = [
        (match, name)
        for match, name in web
        if name is not None and "\ufffd" not in _decoded_head(sample, name)
    ]
    if not clean:
        return None
    best, name = clean[0]
    # Short Western texts fit several single-byte encodings equally well; windows-1252, the web's default
    # legacy encoding, wins such ties (charset-normalizer would pick cp1250 for French).
    for match, _ in clean:
        if (match.chaos, match.coherence) == (best.chaos, best.coherence) and (
            "cp1252" in match.could_be_from_charset
        ):
            return "windows-1252"
    return name


def _decoded_head(sample: bytes, encoding: str) -> str:
    """``sample``, the start of a page, decoded: a character cut at its end is left out, not replaced."""
    codec = python_codec(encoding)
    decoder = codecs.getincrementaldecoder(codec)(_errors(codec, "replace"))
    return decoder.decode(sample, final=False)
