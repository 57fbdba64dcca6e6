"""extractors.encoding: bytes of a page to text the way browsers do it, never an exception."""

from __future__ import annotations

import codecs
import random
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import extractors.encoding
from extractors.encoding import (
    DOUBT_REPLACEMENTS,
    SNIFF_BYTES,
    charset_from_content_type,
    declared_encoding,
    decode,
    decode_checked,
    decode_html,
    looks_binary,
    normalize_encoding,
    python_codec,
    redetect,
    sniff_binary,
)

CHINESE = "<p>新华社北京11月22日电 长江大桥经过三个月检修，于昨日清晨重新通车，市民纷纷表示出行方便。</p>"
FRENCH = "<p>Le pont du port a rouvert samedi matin après trois mois de travaux attendus des riverains.</p>"
RUSSIAN = "<p>Мост через гавань открылся в субботу утром после трёх месяцев ремонта, сообщили в мэрии.</p>"


def page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>t</title></head><body>{body}</body></html>"


@pytest.mark.parametrize(
    ("bom", "codec", "name"),
    [
        (codecs.BOM_UTF8, "utf-8", "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16le"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16be"),
        (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32le"),
    ],
)
def test_byte_order_mark_wins_over_every_declaration(bom: bytes, codec: str, name: str) -> None:
    html = page(CHINESE, '<meta charset="iso-8859-1">')
    result = decode(bom + html.encode(codec), declared="text/html; charset=gbk")
    assert (result.text, result.encoding, result.source) == (html, name, "bom")


def test_header_charset_wins_over_meta() -> None:
    html = page(CHINESE, '<meta charset="utf-8">')  # a lying <meta>: the header is right
    result = decode(html.encode("gbk"), declared="text/html; charset=GBK")
    assert (result.text, result.source) == (html, "declared")


@pytest.mark.parametrize("declared", ["gbk", "text/html; charset=gbk", 'text/html;charset="GBK"', "GB2312"])
def test_declared_charset_as_label_or_content_type(declared: str) -> None:
    assert decode_html(CHINESE.encode("gbk"), declared) == CHINESE


def test_gbk_and_gb2312_are_gbk_read_as_gb18030() -> None:
    text = CHINESE + "<p>𠀀 and € and 碁</p>"  # outside GB2312/GBK: only GB18030 has them
    result = decode(text.encode("gb18030"), declared="gb2312")
    assert (result.text, result.encoding) == (text, "gbk")
    assert normalize_encoding("GBK") == normalize_encoding("x-gbk") == normalize_encoding("GB2312") == "gbk"
    assert python_codec("gbk") == python_codec("gb18030") == "gb18030"
    assert decode(text.encode("gb18030"), declared="GB18030").encoding == "gb18030"


# GBK text with euro signs, each the lone byte 0x80 that WHATWG's GBK encoder (and Windows' code page 936)
# writes, among GBK's two-byte codes: 0x81 0x80 is one of them (U+4E90), its 0x80 a trail byte.
EURO_GBK = "<p>票价€5，儿童€2.5，€€</p><p>亐€</p>"


def euro_gbk(text: str) -> bytes:
    return b"\x80".join(part.encode("gbk") for part in text.split("€"))


@pytest.mark.parametrize("declared", ["gbk", "GB2312", "gb18030", "text/html; charset=gb2312"])
def test_a_lone_0x80_of_a_gbk_page_is_the_euro_sign_as_whatwgs_decoder_reads_it(declared: str) -> None:
    """WHATWG's GBK and GB18030 decoder (one decoder) reads a lone 0x80 as U+20AC, where Python's gb18030
    codec has an error (U+FFFD); every way a page is decoded reads it so, the strict decode of a rule's
    ``encoding`` too, and it is no undecodable character that sets the declared charset aside."""
    html = page(EURO_GBK * DOUBT_REPLACEMENTS)
    data = euro_gbk(html)
    assert decode_html(data, declared) == html
    result = decode_checked(data, declared)
    assert (result.text, result.doubt) == (html, None)
    name = normalize_encoding(declared if "=" not in declared else "gb2312")
    assert name is not None
    given = decode_checked(data, "text/html", given=name)
    assert (given.text, given.encoding, given.source, given.doubt) == (html, name, "given", None)


def test_a_gbk_pages_other_undecodable_bytes_stay_u_fffd_beside_its_euro_signs() -> None:
    """Only a lone 0x80 is the euro sign: 0xFF, and a lead byte whose next byte ends no character, are
    U+FFFD, and the 0x80 after them is a euro sign (WHATWG's decoder reads it again as a lead byte)."""
    data = euro_gbk(EURO_GBK) + b"\xff\x80" + b"\x81\x30\x80A"
    assert decode_html(data, "gbk") == EURO_GBK + "\ufffd€" + "\ufffd0€A"


def test_an_undeclared_gbk_page_with_euro_signs_is_detected_as_without_them() -> None:
    """charset-normalizer decodes with Python's gb18030 codec, for which a lone 0x80 is an error: a GBK page
    that declares nothing is still detected as GB18030 when its euro signs are, read as the euro sign."""
    html = page(EURO_GBK * 3)
    result = decode(euro_gbk(html))
    assert (result.text, result.encoding, result.source) == (html, "gb18030", "detected")
    assert decode_checked(euro_gbk(html), "text/html").text == html


@pytest.mark.parametrize(
    ("label", "name", "codec"),
    [
        ("ISO-8859-1", "windows-1252", "cp1252"),
        ("latin1", "windows-1252", "cp1252"),
        ("us-ascii", "windows-1252", "cp1252"),
        ("cp1252", "windows-1252", "cp1252"),
        ("x-cp1251", "windows-1251", "cp1251"),
        ("Shift_JIS", "shift_jis", "cp932"),
        ("windows-31j", "shift_jis", "cp932"),
        ("EUC-KR", "euc-kr", "cp949"),
        ("big5-hkscs", "big5", "big5hkscs"),
        ("tis-620", "windows-874", "cp874"),
        ("iso-8859-9", "windows-1254", "cp1254"),
        ("ISO-8859-15", "iso-8859-15", "iso8859-15"),
        ("mac-roman", "macintosh", "mac-roman"),
        ("x-mac-cyrillic", "x-mac-cyrillic", "mac-cyrillic"),
        ("cp866", "ibm866", "cp866"),
        ("EUC-JP", "euc-jp", "euc_jp"),
        ("UTF8", "utf-8", "utf-8"),
    ],
)
def test_an_encoding_is_named_as_whatwg_names_it_and_decoded_as_browsers_do(
    label: str, name: str, codec: str
) -> None:
    assert normalize_encoding(label) == name
    assert python_codec(name) == codec


@pytest.mark.parametrize(
    "head",
    [
        '<meta charset="windows-1251">',
        "<meta charset=windows-1251>",
        '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
        "<META HTTP-EQUIV='content-type' CONTENT='text/html;charset=cp1251'>",
    ],
)
def test_meta_charset(head: str) -> None:
    html = page(RUSSIAN, head)
    result = decode(html.encode("cp1251"))
    assert (result.text, result.encoding, result.source) == (html, "windows-1251", "meta")


def test_meta_charset_in_a_comment_is_ignored() -> None:
    html = page(CHINESE, '<!-- <meta charset="iso-8859-1"> --><meta charset="gbk">')
    assert decode(html.encode("gbk")).encoding == "gbk"


def test_xml_declaration() -> None:
    html = '<?xml version="1.0" encoding="windows-1251"?>' + page(RUSSIAN)
    assert decode_html(html.encode("cp1251")) == html


def test_meta_declaring_utf16_in_ascii_bytes_means_utf8() -> None:
    html = page("<p>café</p>", '<meta charset="utf-16">')
    assert decode(html.encode("utf-8")).encoding == "utf-8"


def test_unknown_or_dangerous_labels_are_ignored() -> None:
    html = page(FRENCH, '<meta charset="rot13">')
    for label in ("rot13", "base64", "hex", "zlib", "undefined", "no-such-charset", "idna", ""):
        assert normalize_encoding(label) is None
        result = decode(html.encode("utf-8"), declared=label)
        assert (result.text, result.encoding) == (html, "utf-8")


def test_latin1_label_is_read_as_windows_1252() -> None:
    html = page("<p>“quoted” – and €</p>")
    assert decode_html(html.encode("cp1252"), "iso-8859-1") == html


@pytest.mark.parametrize(
    ("text", "codec", "expected"),
    [
        (CHINESE * 3, "gbk", "gb18030"),
        (FRENCH * 3, "cp1252", "windows-1252"),
        (RUSSIAN * 3, "cp1251", "windows-1251"),
        ("<p>日本語のテキストです。これは検出のためのテストページです。</p>" * 3, "shift_jis", "shift_jis"),
    ],
)
def test_detection_without_any_declaration(text: str, codec: str, expected: str) -> None:
    result = decode(page(text).encode(codec))
    assert result.source == "detected"
    assert result.encoding == expected
    assert result.text == page(text)


@pytest.mark.parametrize(
    "text",
    [
        "Café crème ... €5\n" * 4,
        page("<p>Café crème ... €5, thé glacé ... €4, goûter ... €6.</p>" * 4, '<meta charset="utf-8">'),
        page("<p>Thé glacé ... €5</p>" * 6, '<meta charset="utf-8">'),
    ],
)
def test_detection_passes_over_guesses_that_are_no_web_encoding(text: str) -> None:
    """charset-normalizer's best guess for these is cp775 or mac_latin2, which no browser reads."""
    detected = redetect(text.encode("cp1252"))
    assert detected is not None
    assert (detected.encoding, detected.text) == ("windows-1252", text)
    if "<meta" not in text:
        assert decode(text.encode("cp1252")).encoding == "windows-1252"


def test_plain_utf8_needs_no_detection() -> None:
    html = page(CHINESE + FRENCH)
    assert decode(html.encode()).source == "utf-8"


def test_utf16_without_bom() -> None:
    html = page(FRENCH)
    for codec, name in (("utf-16-le", "utf-16le"), ("utf-16-be", "utf-16be")):
        result = decode(html.encode(codec))
        assert (result.text, result.encoding) == (html, name)
        assert not looks_binary(html.encode(codec))


def test_invalid_bytes_are_replaced_not_raised() -> None:
    data = page("<p>good</p>").encode() + b"\xff\xfe\xc3(\x80bad\xe4\xb8"
    text = decode_html(data, "utf-8")
    assert text.startswith(page("<p>good</p>"))
    assert "\ufffd" in text
    assert "bad" in text


def test_invalid_bytes_in_declared_multibyte_encoding() -> None:
    data = CHINESE.encode("gbk")[:-3] + b"\x81\x30\xff\xff"
    assert "长江大桥" in decode_html(data, "gbk")


@pytest.mark.parametrize(
    ("head", "source"), [('<meta charset="utf-8">', "meta"), ("", "utf-8")], ids=["meta", "undeclared"]
)
def test_a_given_encoding_leaving_a_few_characters_undecodable_gives_way_to_clean_utf8(
    head: str, source: str
) -> None:
    """UTF-8 read as GBK mostly decodes, into other Chinese characters: the few U+FFFD it leaves are the
    sign, and the page's own UTF-8 reads it whole."""
    html = page("<h1>长江大桥重新通车</h1><p>大桥于昨日清晨重新开放。</p>", head)
    replaced = decode(html.encode(), "gbk").text.count("\ufffd")
    assert 0 < replaced < DOUBT_REPLACEMENTS
    result = decode_checked(html.encode(), "text/html", given="gbk")
    assert (result.text, result.encoding, result.source) == (html, "utf-8", source)
    assert result.doubt is not None
    assert (result.doubt.encoding, result.doubt.source, result.doubt.replaced) == ("gbk", "given", replaced)
    assert result.doubt.better == replace(result, doubt=None)


def test_a_given_encoding_leaving_many_characters_undecodable_gives_way_to_the_pages_meta() -> None:
    html = page(CHINESE * 3, '<meta charset="gb18030">')
    result = decode_checked(html.encode("gb18030"), "text/html", given="utf-8")
    assert (result.text, result.encoding, result.source) == (html, "gb18030", "meta")
    assert result.doubt is not None and result.doubt.source == "given"


def test_a_given_encoding_is_kept_for_a_stray_byte_that_a_single_byte_declaration_would_hide() -> None:
    """A GBK site whose pages say iso-8859-1 (the reason for its rule's `encoding: gbk`): windows-1252
    decodes almost any bytes, so its clean reading of a page with one bad byte proves nothing."""
    html = page(CHINESE, '<meta charset="iso-8859-1">')
    data = html.encode("gbk").replace("清晨".encode("gbk"), b"\xc7\xe5<")
    result = decode_checked(data, "text/html", given="gbk")
    assert (result.encoding, result.source, result.doubt) == ("gbk", "given", None)
    assert "长江大桥" in result.text


def test_a_given_encoding_is_kept_for_stray_bytes_however_many_a_single_byte_declaration_would_hide() -> None:
    """The same GBK site saying iso-8859-1, a page with 8 bad bytes among its Chinese: windows-1252 reads
    it without a U+FFFD, as it reads any bytes, which proves nothing; GBK reads all but the bad bytes."""
    html = page(CHINESE * 3, '<meta charset="iso-8859-1">')
    data = html.encode("gbk")
    for word in ("市民", "方便", "检修"):
        first = word.encode("gbk")
        data = data.replace(first, first[:1] + b"<" + first[2:])
    result = decode_checked(data, "text/html", given="gbk")
    assert (result.encoding, result.source) == ("gbk", "given")
    assert result.text.count("\ufffd") >= DOUBT_REPLACEMENTS, result.text
    assert result.doubt is not None and result.doubt.better is None
    assert "长江大桥" in result.text


def test_a_given_utf8_that_reads_none_of_a_single_byte_page_gives_way_to_its_declaration() -> None:
    html = page(FRENCH * 8, '<meta charset="windows-1252">')
    result = decode_checked(html.encode("cp1252"), "text/html", given="utf-8")
    assert (result.text, result.encoding, result.source) == (html, "windows-1252", "meta")
    assert result.doubt is not None and result.doubt.encoding == "utf-8"


@pytest.mark.parametrize(
    ("body", "given"),
    [
        ("<h1>长江大桥重新通车</h1>" * 3, "gbk"),
        ("<p>Café crème, thé glacé, goûter à côté.</p>" * 2, "windows-1252"),
    ],
    ids=["utf-8-read-as-gbk", "utf-8-read-as-windows-1252"],
)
def test_a_given_encoding_that_reads_a_valid_utf8_page_cleanly_as_other_characters_gives_way_to_utf8(
    body: str, given: str
) -> None:
    """A UTF-8 page read as GBK (or windows-1252) can decode without an error, into other characters: valid
    UTF-8 with many multi-byte characters is the evidence (text in another encoding seldom is valid UTF-8)."""
    html = page(body)
    data = html.encode()
    assert data.decode(python_codec(given)) != html
    result = decode_checked(data, "text/html", given=given)
    assert (result.text, result.encoding, result.source) == (html, "utf-8", "utf-8")
    assert result.doubt is not None
    assert (result.doubt.encoding, result.doubt.source, result.doubt.replaced) == (given, "given", 0)
    assert result.doubt.better == replace(result, doubt=None)


def test_a_given_encoding_is_kept_for_a_page_with_too_few_multi_byte_characters_to_prove_utf8() -> None:
    html = page("<p>Le café du port a rouvert samedi matin.</p>")
    result = decode_checked(html.encode(), "text/html", given="windows-1252")
    assert (result.encoding, result.source, result.doubt) == ("windows-1252", "given", None)


@pytest.mark.parametrize(
    ("bom", "codec", "name"),
    [(codecs.BOM_UTF8, "utf-8", "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16le")],
)
def test_a_byte_order_mark_is_read_before_a_given_encoding_as_browsers_read_it(
    bom: bytes, codec: str, name: str
) -> None:
    """A byte order mark settles a page's encoding for browsers whatever else says otherwise, a chosen
    encoding included: a rule's windows-1252 reads it as the mark says, not as "ï»¿" and mojibake (or NUL
    bytes) under the few multi-byte characters that would not prove UTF-8 by themselves; the doubt names
    the key it set aside."""
    html = page("<p>Le café du port a rouvert.</p>")
    result = decode_checked(bom + html.encode(codec), "text/html", given="windows-1252")
    assert (result.text, result.encoding, result.source) == (html, name, "bom")
    assert result.doubt is not None
    assert (result.doubt.encoding, result.doubt.source, result.doubt.replaced, result.doubt.unproven) == (
        "windows-1252",
        "given",
        0,
        None,
    )
    kept = decode_checked(bom + html.encode(codec), "text/html", given=name)
    assert (kept.text, kept.encoding, kept.doubt) == (html, name, None)


@pytest.mark.parametrize(
    ("head", "declared", "source"),
    [('<meta charset="utf-8">', "text/html", "meta"), ("", "text/html; charset=utf-8", "declared")],
    ids=["meta", "content-type"],
)
def test_a_given_encoding_kept_on_a_page_declaring_utf8_with_too_few_multi_byte_characters_says_so(
    head: str, declared: str, source: str
) -> None:
    """Valid UTF-8 with two multi-byte characters proves little (one GBK character in six is valid UTF-8
    too), so the rule's key reads the page; the doubt tells what the page declares and that it is UTF-8."""
    html = page("<p>Le café du port a rouvert, près du quai.</p>", head)
    result = decode_checked(html.encode(), declared, given="windows-1252")
    assert (result.text, result.encoding, result.source) == (
        html.encode().decode("cp1252"),
        "windows-1252",
        "given",
    )
    assert result.doubt is not None
    assert (result.doubt.encoding, result.doubt.source, result.doubt.replaced, result.doubt.better) == (
        "windows-1252",
        "given",
        0,
        None,
    )
    unproven = result.doubt.unproven
    assert unproven is not None
    assert (unproven.text, unproven.encoding, unproven.source, unproven.doubt) == (
        html,
        "utf-8",
        source,
        None,
    )


@pytest.mark.parametrize(
    ("bom", "codec", "name", "given"),
    [
        (codecs.BOM_UTF8, "utf-8", "utf-8", "windows-1252"),
        (codecs.BOM_UTF8, "utf-8", "utf-8", "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16le", "windows-1252"),
    ],
    ids=["utf8-under-windows-1252", "utf8-under-utf8", "utf16-under-windows-1252"],
)
def test_a_byte_order_mark_wins_over_a_given_encoding_that_decodes_the_page(
    bom: bytes, codec: str, name: str, given: str
) -> None:
    """Browsers read a page by its byte order mark whatever else names its encoding, a user's choice
    included (and so does Scrapy, which the crawl's pages with one are left to): with two multi-byte
    characters, too few to prove UTF-8 without the mark, the page is read as the mark says, its mark left
    out; the doubt tells the key was set aside for it when the key names another encoding."""
    html = page("<p>Le café du port a rouvert, près du quai.</p>", '<meta charset="utf-8">')
    data = bom + html.encode(codec)
    assert data.decode(python_codec(given)) != html
    result = decode_checked(data, "text/html", given=given)
    assert (result.text, result.encoding, result.source) == (html, name, "bom")
    if name == given:
        assert result.doubt is None
        return
    assert result.doubt is not None
    assert (result.doubt.encoding, result.doubt.source, result.doubt.replaced, result.doubt.unproven) == (
        given,
        "given",
        0,
        None,
    )
    assert result.doubt.better == replace(result, doubt=None)


@pytest.mark.parametrize("stray", [1, 12], ids=["a-stray-byte", "many-stray-bytes"])
def test_a_given_encoding_is_kept_against_a_content_type_saying_utf16_without_a_byte_order_mark(
    stray: int,
) -> None:
    """UTF-16 decodes almost any bytes of even length (into CJK noise): a server's charset=utf-16 on a page
    with no byte order mark proves nothing against the rule's key, however many bad bytes it has."""
    html = page("<p>Sunny today, 25 degrees.</p>" * 12)
    data = html.encode("gbk").replace(b"25", b"2\xff", stray)
    data += b" " * (len(data) % 2)
    result = decode_checked(data, "text/html; charset=utf-16", given="gbk")
    assert (result.encoding, result.source) == ("gbk", "given"), result.text[:60]
    assert "Sunny today" in result.text


def test_a_given_encoding_that_decodes_the_page_is_used_without_detection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_detection(sample: bytes) -> str | None:
        raise AssertionError("detection ran on a page the given encoding decodes")

    monkeypatch.setattr(extractors.encoding, "_detect", no_detection)
    html = page(CHINESE, '<meta charset="utf-8">')
    result = decode_checked(html.encode("gbk"), "text/html; charset=utf-8", given="gbk")
    assert (result.text, result.encoding, result.source, result.doubt) == (html, "gbk", "given", None)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2048), declared=st.one_of(st.none(), st.text(max_size=30)))
def test_decode_never_raises(data: bytes, declared: str | None) -> None:
    """Any bytes under any declared charset decode, to text in an encoding named by its WHATWG name (the one
    a rule's ``encoding`` and the query's percent-encoding take), found by a step of :func:`decode`'s own
    (``given`` is decode_checked's); :func:`looks_binary` takes any bytes too."""
    result = decode(data, declared)
    assert isinstance(result.text, str)
    assert normalize_encoding(result.encoding) == result.encoding, result
    assert result.source != "given", result
    looks_binary(data)


@pytest.mark.parametrize(
    ("bom", "name"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16le"),
        (codecs.BOM_UTF16_BE, "utf-16be"),
        (codecs.BOM_UTF32_LE, "utf-32le"),
        (codecs.BOM_UTF32_BE, "utf-32be"),
    ],
)
def test_declared_encoding_byte_order_mark_wins_over_the_header_and_the_meta(bom: bytes, name: str) -> None:
    data = bom + page(FRENCH, '<meta charset="iso-8859-1">').encode("latin-1")
    assert declared_encoding(data, "text/html; charset=gbk") == (name, "bom")


def test_declared_encoding_header_wins_over_meta() -> None:
    data = page(RUSSIAN, '<meta charset="utf-8">').encode("cp1251")
    assert declared_encoding(data, "text/html; charset=windows-1251") == ("windows-1251", "declared")
    assert declared_encoding(data, "windows-1251") == ("windows-1251", "declared")


@pytest.mark.parametrize(
    "head",
    [
        '<meta charset="windows-1251">',
        '<meta http-equiv="Content-Type" content="text/html; charset=cp1251">',
    ],
)
def test_declared_encoding_meta_is_found_without_or_past_a_useless_header(head: str) -> None:
    data = page(RUSSIAN, head).encode("cp1251")
    for declared in (None, "", "text/html", "text/html; charset=no-such-charset"):
        assert declared_encoding(data, declared) == ("windows-1251", "meta")
    xml = ('<?xml version="1.0" encoding="windows-1251"?>' + page(RUSSIAN)).encode("cp1251")
    assert declared_encoding(xml) == ("windows-1251", "meta")


def test_declared_encoding_is_none_for_a_page_declaring_nothing() -> None:
    assert declared_encoding(page(CHINESE).encode("gbk"), "text/html") is None
    assert declared_encoding(page(CHINESE).encode()) is None
    late = page(FRENCH * 200, '<meta charset="windows-1252">').replace("<meta", FRENCH * 100 + "<meta", 1)
    assert len(late.split("<meta")[0].encode()) > 8192
    assert declared_encoding(late.encode()) is None, "a <meta> past the first 8192 bytes is not read"


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("latin1", "windows-1252"),
        ("ISO-8859-1", "windows-1252"),
        ("us-ascii", "windows-1252"),
        ("x-gbk", "gbk"),
        ("gb2312", "gbk"),
        ("GBK", "gbk"),
        ("gb18030", "gb18030"),
        ("x-sjis", "shift_jis"),
        ("big5-hkscs", "big5"),
        ("utf8", "utf-8"),
    ],
)
def test_declared_encoding_reads_web_labels_as_browsers_do(label: str, name: str) -> None:
    data = page(FRENCH).encode()
    assert declared_encoding(data, f"text/html; charset={label}") == (name, "declared")
    assert declared_encoding(page(FRENCH, f'<meta charset="{label}">').encode()) == (name, "meta")


@settings(max_examples=200, deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=512),
        st.sampled_from(
            ["", '<meta charset="gb2312">', '<meta charset="latin1">', '<meta charset="utf-16">']
        ).map(lambda head: page(FRENCH, head).encode()),
    ),
    bom=st.sampled_from([b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE]),
    declared=st.one_of(
        st.none(), st.sampled_from(["text/html; charset=x-gbk", "latin1", "rot13"]), st.text(max_size=30)
    ),
)
def test_declared_encoding_is_what_decode_decides_by_the_declarations(
    data: bytes, bom: bytes, declared: str | None
) -> None:
    found = declared_encoding(bom + data, declared)
    result = decode(bom + data, declared)
    if found is None:
        assert result.source not in ("bom", "declared", "meta")
    else:
        assert (result.encoding, result.source) == found


def test_charset_from_content_type() -> None:
    assert charset_from_content_type("text/html; charset=UTF-8") == "UTF-8"
    assert charset_from_content_type('text/html; charset="gbk"; foo=bar') == "gbk"
    assert charset_from_content_type("text/html") is None
    assert charset_from_content_type(None) is None


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "PNG"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF"),
        (b"\x1f\x8b\x08\x00" + bytes(50), "gzip"),
        (b"PK\x03\x04" + bytes(50), "ZIP"),
        (b"\xff\xd8\xff\xe0" + bytes(50), "JPEG"),
    ],
)
def test_binary_formats_are_named(data: bytes, kind: str) -> None:
    found = sniff_binary(data)
    assert found is not None
    assert kind in found


def test_random_bytes_are_binary() -> None:
    data = random.Random(42).randbytes(20_000)
    assert looks_binary(data)
    assert "binary data" in (sniff_binary(data) or "")
    decode(data)  # still decodes, for callers that insist


def test_zero_bytes_are_binary() -> None:
    assert looks_binary(bytes(1000))


@pytest.mark.parametrize(
    "text",
    [page(CHINESE), page(FRENCH), page(RUSSIAN), "plain text\twith tabs\r\nand\fform feeds\x1b[0m", ""],
)
def test_text_is_not_binary(text: str) -> None:
    for codec in ("utf-8", "utf-16"):
        assert sniff_binary(text.encode(codec)) is None


@pytest.mark.parametrize("charset", ["utf-16le", "utf-16be"])
def test_utf16_text_without_a_byte_order_mark_is_text_when_its_content_type_names_utf16(charset: str) -> None:
    for text in (page(CHINESE), page(RUSSIAN)):
        assert sniff_binary(text.encode(charset), f"text/html; charset={charset}") is None
    noise = random.Random(7).randbytes(20_000)
    found = sniff_binary(noise, f"text/html; charset={charset}")
    assert "binary data" in (found or ""), "random bytes are not text"


def test_a_stray_control_byte_does_not_make_a_page_binary() -> None:
    data = page(FRENCH * 20).encode() + b"\x00\x01"
    assert not looks_binary(data)


# 240 control bytes (3% of the first 8 KB): a string of an inline script, or a data URI, written raw.
_RAW_CONTROLS = "".join(chr(byte) for byte in (*range(0x01, 0x09), *range(0x0E, 0x1A))) * 10


@pytest.mark.parametrize(
    ("html", "charset"),
    [
        (page(FRENCH * 60, head=f"<script>var key = '{_RAW_CONTROLS}';</script>"), None),
        (page(f"<img src='data:image/png,{_RAW_CONTROLS}'>" + RUSSIAN * 30), None),
        (f"\n  <html><body><script>x='{_RAW_CONTROLS}'</script>{CHINESE * 40}</body></html>", "gbk"),
        (
            f"<!-- generated -->\n<head><title>t</title></head><script>x='{_RAW_CONTROLS}'</script>"
            + FRENCH * 60,
            None,
        ),
    ],
)
def test_an_html_page_with_many_control_bytes_in_a_script_is_text(html: str, charset: str | None) -> None:
    """More than 2% control bytes in the first 8 KB made a page binary data, and a crawl skipped it, though
    it starts as HTML (a doctype, <html>, a <head> or <body> tag in its first KB) and decodes in its
    charset."""
    data = html.encode(charset or "utf-8")
    assert data[:SNIFF_BYTES].count(b"\x01") >= 10
    declared = f"text/html; charset={charset}" if charset else "text/html"
    assert sniff_binary(data, declared) is None


@pytest.mark.parametrize(
    "start", [b"<!doctype html><html><head>", b"<html><body>", b"<head><title>t</title>"]
)
def test_random_bytes_after_html_markup_are_binary(start: bytes) -> None:
    data = start + random.Random(11).randbytes(20_000)
    assert "binary data" in (sniff_binary(data) or "")
    assert "binary data" in (sniff_binary(data, "text/html; charset=windows-1252") or "")


# What the test below runs in a process of its own: sniff_binary of a page that opens with many comments
# and is not HTML then, with more than MAX_CONTROL_SHARE control bytes.
_COMMENTS_THEN_NO_HTML = """
from extractors.encoding import sniff_binary
page = b"<!---->" * 140 + b"<div>" + b"\\x01" * 300 + b"x" * 7000
print(sniff_binary(page, "text/html"))
"""


def test_a_page_opening_with_many_comments_is_sniffed_at_once() -> None:
    """The look for an HTML page's start (a doctype or <html> after comments) could read the comments in
    as many ways as they can be grouped, 2 to the power of their number: 22 comments took 0.26 s, each
    two more four times that, and 140 of them (980 bytes) with control bytes hung the worker that sniffed
    the page, and with it every site's crawl. Run apart, so that the hang fails the test after a minute
    instead of holding the suite."""
    run = subprocess.run(
        [sys.executable, "-c", _COMMENTS_THEN_NO_HTML], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.startswith("binary data (")
