"""Robust HTML parsing shared by the extractors: any string in, an lxml tree or ``None`` out, never an exception."""

from __future__ import annotations

import re

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
    default_doctype=False,
)


def parse_html(html: str) -> lxml.html.HtmlElement | None:
    """Parse a decoded HTML string; ``None`` when it holds no document at all (empty, or nothing but noise)."""
    if not html or not html.strip():
        return None
    cleaned = _FORBIDDEN_RE.sub(" ", _XML_DECL_RE.sub("", html, count=1))
    try:
        root = lxml.html.document_fromstring(cleaned.encode("utf-8", "replace"), parser=_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None
    if not isinstance(root, lxml.html.HtmlElement):
        return None
    return root


def page_title(root: lxml.html.HtmlElement) -> str | None:
    """The page's ``<title>``, else its Open Graph title, else its first ``<h1>``; white space collapsed."""
    for xpath in ("//title", "//meta[@property='og:title']/@content", "//h1"):
        found = root.xpath(xpath)
        if not found:
            continue
        value = found[0] if isinstance(found[0], str) else found[0].text_content()
        text = " ".join(str(value).split())
        if text:
            return text
    return None
