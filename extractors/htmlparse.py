"""Robust HTML parsing for the extractors: any string in, an lxml tree or ``None`` out, never an exception."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import lxml.etree
import lxml.html

# Characters XML forbids (C0 controls but tab/newline/return, lone surrogates, U+FFFE/U+FFFF): lxml refuses
# text containing them, so they are replaced by a space before parsing.
_FORBIDDEN_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)

# The depth past which flat_page leaves tags out: far below the 2,048 levels past which libxml2 (with
# huge_tree) stops parsing a page, and deeper than pages nest (the 219 pages of extraction-dev: 55 at most).
FLAT_DEPTH = 1024
# The depth of the last element of a tree libxml2 (with huge_tree) stopped parsing at its depth limit: the
# elements it had open, 2,048 with the root; a page's last element stands a few levels deep.
CUT_DEPTH = 2047
# A start or end tag, as flat_page counts the depth.
_TAG_RE = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*>")
# Elements without an end tag: they nest nothing.
_VOID = frozenset(
    (
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
        "track", "wbr",
    )
)  # fmt: skip
# Elements whose tags flat_page keeps past its depth, one at a time (none in another): paragraphs and
# headings, which qRead reads as such. A link's too, one at a time (in one of them or not): its href is
# what a discover crawl and `crawler rules new` read, its text what qRead's link density counts.
_FLAT_KEPT = frozenset(("p", "h1", "h2", "h3", "h4", "h5", "h6"))
# Elements whose tags, left out, leave a line break, so that blocks of text do not run together.
_BLOCKS = frozenset(
    (
        "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "figcaption", "figure",
        "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "li", "main", "nav", "ol", "p", "pre",
        "section", "table", "td", "th", "tr", "ul",
    )
)  # fmt: skip

_PARSER = lxml.html.HTMLParser(
    encoding="utf-8",
    remove_comments=True,
    remove_pis=True,
    huge_tree=True,
    no_network=True,
)


# The same parser without lxml.html's element classes (a third faster to walk) and without the table of
# id attributes (nothing looks elements up by id), for the hot paths.
_PLAIN_PARSER = lxml.etree.HTMLParser(
    encoding="utf-8",
    collect_ids=False,
    remove_comments=True,
    remove_pis=True,
    huge_tree=True,
    no_network=True,
)


def parse_html(html: str) -> lxml.html.HtmlElement | None:
    """Parse a decoded HTML string; ``None`` when it holds no document at all (empty, or only noise)."""
    data = _prepare(html)
    if data is None:
        return None
    try:
        root = lxml.html.document_fromstring(data, parser=_PARSER)
        if _too_deep(_PARSER):
            root = lxml.html.document_fromstring(_encoded(flat_page(html)), parser=_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None
    if not isinstance(root, lxml.html.HtmlElement):
        return None
    _adopt_siblings(root)
    if "S:" in html:
        place_streamed(root)
    return root


def parse_tree(html: str) -> lxml.etree._Element | None:
    """Like ``parse_html`` but with plain lxml elements, for speed; read-only use. Streamed parts are not
    put in place (:func:`place_streamed`): a look for them costs a tenth of a millisecond on every page,
    and qRead's walk tells when a page has them.

    Control characters are left in (libxml2's HTML parser takes them, and a scan of the page costs a
    millisecond), so the tree's text must not be assigned back to it.
    """
    if not html or html.isspace():
        return None
    data = _without_xml_declaration(html).encode("utf-8", "replace")
    try:
        root = lxml.etree.fromstring(data, parser=_PLAIN_PARSER)
        if _too_deep(_PLAIN_PARSER):
            flat = _without_xml_declaration(flat_page(html)).encode("utf-8", "replace")
            root = lxml.etree.fromstring(flat, parser=_PLAIN_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None
    if root is None:  # libxml2 found no element at all
        return None
    _adopt_siblings(root)
    return root


def flat_page(html: str) -> str:
    """``html`` with the tags past ``FLAT_DEPTH`` levels of nesting left out (a block's as a ``<br>``), but
    for a paragraph's or heading's in none other and a link's in no other, its text kept: what libxml2
    parses of a page nested deeper than it reads, its text and links whole. The same page when it nests no
    deeper. The depth is counted by the tags as written (an element left open counts until the end), which
    only a page libxml2 could not read goes through."""
    depth = past = 0
    open_kept = ""
    open_link = False

    def kept(tag: re.Match[str]) -> str:
        nonlocal depth, past, open_kept, open_link
        name = tag[2].lower()
        if name in _VOID:
            return tag[0]
        if tag[1]:
            if name == open_kept:
                open_kept = ""
                return tag[0]
            if name == "a" and open_link:
                open_link = False
                return tag[0]
            if not past:
                depth = max(depth - 1, 0)
                return tag[0]
            past -= 1
        elif depth < FLAT_DEPTH:
            depth += 1
            return tag[0]
        elif name in _FLAT_KEPT and not open_kept:
            open_kept = name
            return tag[0]
        elif name == "a" and not open_link:
            open_link = True
            return tag[0]
        else:
            past += 1
        return "<br>" if name in _BLOCKS else ""

    return _TAG_RE.sub(kept, html)


def cut_at_depth(root: lxml.etree._Element) -> bool:
    """Whether libxml2 stopped parsing the page of ``root`` at its depth limit, all after lost, told by the
    tree alone, for a parser whose error log is not at hand (Scrapy's selector): its last element stands
    ``CUT_DEPTH`` levels deep. A walk down the last children, a few steps on a page no deeper."""
    depth = 0
    while len(root):
        root = root[-1]
        depth += 1
    return depth >= CUT_DEPTH


def _too_deep(parser: lxml.etree.HTMLParser) -> bool:
    """Whether ``parser``'s last page nested deeper than libxml2 reads: it stopped there, the rest lost."""
    last = parser.error_log.last_error
    return last is not None and last.type_name == "ERR_RESOURCE_LIMIT" and "depth" in last.message


def place_streamed(root: lxml.etree._Element) -> None:
    """Put the parts of a page that React streamed last where they belong, as its script does in a browser.

    A streamed server render sends each suspended part at the end of the page, in a hidden ``<div
    id="S:n">``, and a script moves it into the place kept by ``<template id="B:n">`` (a boundary) or
    ``<template id="P:n">`` (a segment). A saved page often has no scripts left; the parts stay hidden and
    out of order without this, and they can be the whole article.
    """
    places: dict[str, lxml.etree._Element] = {}
    for element in root.iter("template"):
        name = element.get("id") or ""
        if name[:2] in ("B:", "P:"):
            places[name[2:]] = element
    parts = [element for element in root.iter("div") if is_streamed_part(element)]
    for part in parts:
        place = places.get((part.get("id") or "")[2:])
        parent = None if place is None else place.getparent()
        if place is None or parent is None:
            continue
        _keep_tail(part)
        part.tail = place.tail
        del part.attrib["hidden"]
        parent.replace(place, part)


def is_streamed_part(element: lxml.etree._Element) -> bool:
    """Whether ``element`` is a part React streamed at the end of the page, which :func:`place_streamed`
    moves: a ``<div hidden id="S:n">`` (not one hidden by its style)."""
    return (
        element.tag == "div" and element.get("hidden") is not None and (element.get("id") or "")[:2] == "S:"
    )


def _keep_tail(element: lxml.etree._Element) -> None:
    """Leave the text after ``element`` where it is, before the element moves (lxml moves it along)."""
    tail = element.tail
    if not tail or tail.isspace():
        return
    previous = element.getprevious()
    parent = element.getparent()
    if previous is not None:
        previous.tail = (previous.tail or "") + tail
    elif parent is not None:
        parent.text = (parent.text or "") + tail


def _adopt_siblings(root: lxml.etree._Element) -> None:
    """Move top-level elements after the root into it: a page that holds two ``<html>`` documents one
    after the other parses as two roots, and a walk from the first would miss the second."""
    for sibling in list(root.itersiblings()):
        root.append(sibling)


def _prepare(html: str) -> bytes | None:
    if not html or html.isspace():
        return None
    return _encoded(html)


def _encoded(html: str) -> bytes:
    return _FORBIDDEN_RE.sub(" ", _without_xml_declaration(html)).encode("utf-8", "replace")


def _without_xml_declaration(html: str) -> str:
    """``html`` without the XML declaration it starts with, if any. Matched at the start only: a
    substitution tries the pattern at every position of the page (about 1% of an extraction's time)."""
    declaration = _XML_DECL_RE.match(html)
    return html[declaration.end() :] if declaration else html


def page_title(root: lxml.etree._Element) -> str | None:
    """The page's ``<title>``, else its Open Graph title, else its first ``<h1>``; white space collapsed.

    Each is the first of its kind in the document (``root`` and any top-level element after it), found by
    a walk that stops there (an XPath query such as ``//title`` reads the whole tree first); an empty one
    goes on to the next kind.
    """
    tops = [root, *root.itersiblings()]
    title = _first(tops, "title")
    if title is not None and (text := _string(title)):
        return text
    for meta in (meta for top in tops for meta in top.iter("meta")):
        content = meta.get("content") if meta.get("property") == "og:title" else None
        if content is not None:
            if text := " ".join(content.split()):
                return text
            break
    heading = _first(tops, "h1")
    return (_string(heading) or None) if heading is not None else None


def _first(tops: list[lxml.etree._Element], tag: str) -> lxml.etree._Element | None:
    return next((found for top in tops for found in top.iter(tag)), None)


def _string(element: lxml.etree._Element) -> str:
    """The element's text with its descendants' (XPath's string value), white space collapsed."""
    pieces = cast("Iterator[str]", element.itertext())  # lxml gives str (its stubs say bytes too)
    return " ".join("".join(pieces).split())
