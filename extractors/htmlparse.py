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
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None
    if root is None:  # libxml2 found no element at all
        return None
    _adopt_siblings(root)
    return root


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
