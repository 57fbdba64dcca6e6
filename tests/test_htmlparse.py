"""Parsing never raises and never loses a part of the page that a browser would show."""

from __future__ import annotations

import lxml.etree

from extractors import extract
from extractors.htmlparse import FLAT_DEPTH, cut_at_depth, flat_page, page_title, parse_html, parse_tree


def test_a_second_html_document_after_the_first_is_read_too() -> None:
    html = (
        "<html><head><title>Two documents</title></head><body><p>First part.</p></body></html>"
        "<html><body><div><p>The article text that a broken template wrote after the first document "
        "ended, long enough to be the main text of the page by any measure.</p></div></body></html>"
    )
    for parse in (parse_tree, parse_html):
        root = parse(html)
        assert root is not None
        assert "broken template" in str(root.xpath("string()"))
    assert "broken template" in extract(html).text


def test_nothing_to_parse_gives_none_and_control_characters_do_not_break_parsing() -> None:
    for html in ("", "   \n\t"):
        assert parse_tree(html) is None
        assert parse_html(html) is None
    root = parse_tree("<p>a\x00b\x01c</p>")
    assert root is not None
    assert root.xpath("string()") == "a\ufffdb\x01c"


def test_title_comes_from_title_then_open_graph_then_h1() -> None:
    def title(html: str) -> str | None:
        root = parse_tree(html)
        assert root is not None
        return page_title(root)

    assert title("<title> A  page </title><h1>Head</h1>") == "A page"
    assert title('<meta property="og:title" content="OG title"><h1>Head</h1>') == "OG title"
    assert title("<body><h1>Only <b>heading</b></h1></body>") == "Only heading"
    assert title("<body><p>none</p></body>") is None


def test_streamed_parts_are_moved_into_their_templates_by_parse_html() -> None:
    """``parse_html`` (the other extractors' parser) puts React's streamed parts where their templates
    stand, nested parts included; a hidden part without a template stays as it is."""
    html = (
        "<html><body><main><p>Before.</p><template id='B:0'></template><p>After.</p></main>"
        "<footer>Footer.</footer>"
        "<div hidden id='S:0'><p>First part.</p><template id='P:1'></template></div>"
        "<div hidden id='S:1'><p>Nested part.</p></div>"
        "<div hidden id='S:7'><p>No place.</p></div></body></html>"
    )
    root = parse_html(html)
    assert root is not None
    main = root.find(".//main")
    assert main is not None
    assert [p.text_content() for p in main.iter("p")] == ["Before.", "First part.", "Nested part.", "After."]
    assert root.xpath("//div[@id='S:7']/@hidden") == [""]


def test_an_xml_declaration_is_left_out_only_where_the_page_starts() -> None:
    for parse in (parse_tree, parse_html):
        root = parse(' \n<?XML version="1.0" encoding="utf-8"?><p>Text</p>')
        assert root is not None
        assert root.xpath("string()") == "Text"
        root = parse('<p>Text</p><p><?xml version="1.0"?>more</p>')
        assert root is not None
        assert "more" in str(root.xpath("string()"))


def _deep_page(depth: int) -> str:
    """A page whose article, two paragraphs, stands ``depth`` elements deep, a paragraph after them."""
    return (
        "<html><head><title>Deep</title></head><body><h1>Deep</h1>"
        + "<div>" * depth
        + "<div class='article'><p>First <b>bold</b> paragraph.</p><p>Second paragraph.</p></div>"
        + "</div>" * depth
        + "<p>After the nest.</p></body></html>"
    )


def test_a_page_nested_deeper_than_libxml2_parses_keeps_its_text() -> None:
    """libxml2 stops parsing a page at 2,048 levels of nesting (with huge_tree): the rest of the page was
    lost, the article inside the nest and all after it (100,000 levels: the tree held the title alone).
    The page is read again with the tags past FLAT_DEPTH levels left out, each block a line break."""
    for parse in (parse_tree, parse_html):
        root = parse(_deep_page(100_000))
        assert root is not None
        pieces = list(root.itertext())
        assert "First bold paragraph." in "".join(pieces), pieces[-10:]
        assert "Second paragraph." in pieces, "a block's tags left out make a line break"
        assert "After the nest." in pieces, pieces[-10:]


def test_a_tree_libxml2_cut_at_its_depth_is_told_by_the_tree_alone() -> None:
    """Scrapy's selector keeps no error log: a tree libxml2 stopped at its depth limit is told by its last
    element, as deep as the limit; a page as deep but parsed whole ends a few levels deep."""
    parser = lxml.etree.HTMLParser(huge_tree=True)
    cut = lxml.etree.fromstring(_deep_page(3000), parser=parser)
    whole = lxml.etree.fromstring(_deep_page(2000), parser=parser)
    assert "After the nest." not in str(cut.xpath("string()"))
    assert "After the nest." in str(whole.xpath("string()"))
    assert (cut_at_depth(cut), cut_at_depth(whole)) == (True, False)


def test_a_page_within_the_depth_is_read_as_it_is() -> None:
    """The flat reading leaves alone a page no deeper than FLAT_DEPTH, tags and text."""
    page = _deep_page(FLAT_DEPTH - 10)
    assert flat_page(page) == page
