"""A page decoded once, the crawl's way, before Scrapy's meta refresh check reads it.

Scrapy's ``MetaRefreshMiddleware`` (:class:`~crawler.worker.refresh.CheckedRefreshMiddleware` here, 579)
looks for a ``<meta http-equiv="refresh">`` in the first 4,096 characters of every HTML page, and would
decode the page for it in Scrapy's own reading of its encoding.
:class:`DecodeOnceMiddleware` (585: after decompression at 590, as responses pass ``process_response`` in
decreasing order) decodes the pages the spider reads (article, index, search and discover pages) as the
spider reads them, by :func:`extractors.encoding.decode_checked` in the rule's ``encoding`` when it sets one,
and hands on the response as that text: the meta refresh is looked for in it, and the spider reads it
without decoding the page again (:func:`page_text`). The spider reads the page's tree by :func:`page_tree`,
not Scrapy's ``response.selector``, which the response caches and which points back at it: a reference
cycle that kept each response, its text and its tree alive until the cyclic garbage collector ran.

The meta refresh is thus read in the crawl's reading of the page. The two readings differ only on a page
that declares no charset (neither in its Content-Type nor in a ``<meta>``) and is not UTF-8, which Scrapy's
detection (charset-normalizer on the whole page, any Python codec) may read otherwise than the crawl's (on
its first bytes, web encodings only): an undeclared windows-1252 page whose meta refresh sends to
``/a/café`` sends there, where Scrapy's reading (cp775) would send to ``/a/cafķ``. Where Scrapy must
decode the page itself to read it as the crawl does (a byte order mark, U+FFFD in the text: see
:func:`read_as`), it decodes it in the crawl's encoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Self
from weakref import WeakKeyDictionary

from lxml import etree
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.selector import Selector
from scrapy.utils.response import get_base_url
from w3lib.encoding import read_bom

from crawler.requests import ARTICLE, DISCOVER, INDEX, SEARCH, Work
from crawler.rules import Rule
from extractors.encoding import Decoded, decode_checked, python_codec
from extractors.htmlparse import cut_at_depth, flat_page

# The kinds of request whose page the spider reads as text (feeds, sitemaps and APIs are read as bytes).
PAGE_KINDS = frozenset({ARTICLE, INDEX, SEARCH, DISCOVER})

# The responses page_text made, with the ``encoding`` they were decoded as given and the decoding.
_decoded: WeakKeyDictionary[Response, tuple[str | None, Decoded]] = WeakKeyDictionary()


def page_text(response: TextResponse, given: str | None) -> tuple[TextResponse, Decoded]:
    """``response`` read as text by :func:`extractors.encoding.decode_checked` (as the encoding ``given``,
    a rule's, when it is not None), and that decoding: the ones :class:`DecodeOnceMiddleware` made when it
    decoded this response so, without decoding it again."""
    kept = _decoded.get(response)
    if kept is not None and kept[0] == given:
        return response, kept[1]
    content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
    decoded = decode_checked(response.body, content_type, given)
    text = read_as(response, decoded)
    _decoded[text] = (given, decoded)
    return text, decoded


def page_encoding(text: TextResponse) -> str:
    """The web encoding (its WHATWG name: ``gbk``, not the ``gb18030`` that decodes it) of a response
    :func:`page_text` made: the one a browser encodes the query of the page's links in."""
    return _decoded[text][1].encoding


def page_tree(text: TextResponse) -> etree._Element:
    """The tree of ``text`` as Scrapy's ``text.selector.root`` parses it, without caching the selector on
    the response: Scrapy's cached selector holds the response, and that cycle left the response (its body,
    text and tree) to the cyclic garbage collector instead of freeing it when the spider is done with it.
    A page nested deeper than libxml2 parses (it stops at 2,048 levels, all after lost) is parsed again
    flat (:func:`extractors.htmlparse.flat_page`), as qRead reads it: the rule's fields, title and links
    see its whole text."""
    root: etree._Element = Selector(response=text).root
    if cut_at_depth(root):
        flat = Selector(
            text=flat_page(text.text),
            type="xml" if isinstance(text, XmlResponse) else "html",
            base_url=get_base_url(text),
        )
        root = flat.root
    return root


def read_as(response: TextResponse, decoded: Decoded) -> TextResponse:
    """``response`` in ``decoded``'s encoding, its ``text`` the ``decoded`` text when Scrapy's own decoding
    in that encoding would give the same, so that a page is decoded once: when the body has no byte order
    mark (Scrapy would take the mark's encoding) and the text no U+FFFD (bytes neither decoder reads, which
    Scrapy's might replace otherwise)."""
    text = response.replace(encoding=python_codec(decoded.encoding))
    assert isinstance(text, TextResponse)
    if read_bom(response.body)[0] is None and "\ufffd" not in decoded.text:
        text._cached_ubody = decoded.text
    return text


class DecodeOnceMiddleware:
    """Decodes the HTML pages the spider reads as it reads them, before Scrapy's meta refresh check (see
    the module docstring). On for the sites spider; off (``NotConfigured``) for a spider that serves no
    site rules."""

    def __init__(self, rule_of: Callable[[str], Rule | None]) -> None:
        self.rule_of = rule_of

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        rule_of: Callable[[str], Rule | None] | None = getattr(crawler.spider, "rule_of", None)
        if rule_of is None:
            raise NotConfigured("the spider serves no site rules (it has no rule_of)")
        return cls(rule_of)

    def process_response(self, request: Request, response: Response) -> Response:
        if not isinstance(response, HtmlResponse):
            return response
        work = Work.of(request)
        if work.kind not in PAGE_KINDS:
            return response
        rule = self.rule_of(work.site)
        if rule is None:
            return response
        text, _ = page_text(response, rule.encoding)
        return text
