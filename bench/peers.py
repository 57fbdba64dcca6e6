"""Adapters for the peers measured by ``bench/extraction.py``: each is ``(html, url, lang) -> text``.

Each peer package is optional: ``load_peers`` returns the adapters whose package imports and names the
others, so the bench can say what to install (``pip install .[bench]``) instead of failing.
Only ``justext`` uses ``lang`` (to pick its stoplist); the others get the decoded HTML and the URL at most.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lxml.etree
import lxml.html

PeerFunction = Callable[[str, str | None, str], str]

# Tags whose start and end break the text into separate lines (HTML block-level and table/list elements).
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "center", "dd", "details",
        "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frame",
        "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "iframe", "legend",
        "li", "main", "menu", "nav", "ol", "option", "p", "pre", "section", "summary", "table", "tbody",
        "td", "tfoot", "th", "thead", "title", "tr", "ul",
    }
)  # fmt: skip
# Never rendered: script/style/noscript as the corpus README says, plus <head>, inert <template> content and
# the fallback text inside <iframe> (libxml2 parses it as text; browsers never show it).
INVISIBLE_TAGS = frozenset({"script", "style", "noscript", "template", "head", "iframe"})


def block_text(root: Any) -> str:
    """Text of an lxml tree without script/style/noscript, one line per block, white space collapsed.

    Iterative (``iterwalk``), so very deep pages do not hit the recursion limit.
    """
    parts: list[str] = []
    skipping = 0
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else None  # comments and PIs have no str tag
        if event == "start":
            if skipping or tag is None or tag.lower() in INVISIBLE_TAGS:
                skipping += 1
                continue
            if tag.lower() in BLOCK_TAGS:
                parts.append("\n")
            if element.text:
                parts.append(element.text)
            continue
        # "end": the element's tail belongs to its parent, which is visible whenever this one was entered
        if skipping:
            skipping -= 1
        elif tag is not None and tag.lower() in BLOCK_TAGS:
            parts.append("\n")
        if element.tail and not skipping and element is not root:
            parts.append(element.tail)
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _parse(html: str) -> Any:
    """An lxml tree of ``html`` (``None`` for an empty or unparsable string)."""
    if not html.strip():
        return None
    try:
        return lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None


_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=True, no_network=True)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# --- the adapters: each ``_make_*`` imports its package (ImportError when it is missing) and returns
# the function that the bench times.


def _make_trafilatura(fast: bool) -> PeerFunction:
    import trafilatura  # noqa: PLC0415

    # trafilatura's defaults (precision/recall balance, fallbacks on unless fast, tables kept) except
    # comments: the corpus truth is the article without its reader comments.
    def run(html: str, url: str | None, lang: str) -> str:
        return trafilatura.extract(html, url=url, fast=fast, include_comments=False) or ""

    return run


def _make_readability() -> PeerFunction:
    from readability import Document  # noqa: PLC0415

    def run(html: str, url: str | None, lang: str) -> str:
        root = _parse(Document(html).summary())
        return block_text(root) if root is not None else ""

    return run


def _make_resiliparse() -> PeerFunction:
    from resiliparse.extract.html2text import extract_plain_text  # noqa: PLC0415

    def run(html: str, url: str | None, lang: str) -> str:
        return str(extract_plain_text(html, main_content=True))

    return run


# justext has no Chinese (or Japanese) stoplist. With an empty stoplist every paragraph has stop-word
# density 0 and the default thresholds would call all of them boilerplate, so for those languages we use
# the language-independent mode justext's own documentation suggests: an empty stoplist with
# stopwords_low = stopwords_high = 0, which leaves the classification to length and link density
# (paragraphs longer than length_high are good, shorter ones near-good and kept next to good ones).
_JUSTEXT_STOPLISTS = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "ru": "Russian"}


# ``justext-li`` runs that language-independent mode on every language, English included: on this corpus it
# beats the English stoplist on English pages (it keeps more of the article), so it is shown beside it.


def _make_justext(language_independent: bool = False) -> PeerFunction:
    import justext  # noqa: PLC0415

    stoplists: dict[str, frozenset[str]] = {}

    def run(html: str, url: str | None, lang: str) -> str:
        name = None if language_independent else _JUSTEXT_STOPLISTS.get(lang)
        if name is None:
            paragraphs = justext.justext(html, frozenset(), stopwords_low=0, stopwords_high=0)
        else:
            if name not in stoplists:
                stoplists[name] = justext.get_stoplist(name)
            paragraphs = justext.justext(html, stoplists[name])
        return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)

    return run


def _make_boilerpy3() -> PeerFunction:
    from boilerpy3 import extractors  # noqa: PLC0415

    extractor = extractors.ArticleExtractor()

    def run(html: str, url: str | None, lang: str) -> str:
        return str(extractor.get_content(html))

    return run


def _make_visible_text() -> PeerFunction:
    def run(html: str, url: str | None, lang: str) -> str:
        root = _parse(html)
        if root is None:
            return ""
        body = root.find("body")
        return block_text(body if body is not None else root)

    return run


@dataclass(frozen=True, slots=True)
class PeerSpec:
    """A peer: ``name`` for ``--only``, ``distribution`` for its version and for the missing-package note."""

    name: str
    distribution: str | None
    make: Callable[[], PeerFunction]
    suffix: str = ""

    @property
    def label(self) -> str:
        if self.distribution is None:
            return self.name
        return f"{self.distribution} {_version(self.distribution)}{self.suffix}"


PEERS: tuple[PeerSpec, ...] = (
    PeerSpec("trafilatura", "trafilatura", lambda: _make_trafilatura(fast=False)),
    PeerSpec("trafilatura-fast", "trafilatura", lambda: _make_trafilatura(fast=True), " fast"),
    PeerSpec("readability", "readability-lxml", _make_readability),
    PeerSpec("resiliparse", "resiliparse", _make_resiliparse),
    PeerSpec("justext", "justext", _make_justext, " (per-language stoplist)"),
    PeerSpec("justext-li", "justext", lambda: _make_justext(True), " (language-independent)"),
    PeerSpec("boilerpy3", "boilerpy3", _make_boilerpy3),
    PeerSpec("visible-text", None, _make_visible_text),
)
PEER_NAMES = tuple(peer.name for peer in PEERS)


@dataclass(frozen=True, slots=True)
class LoadedPeer:
    name: str
    label: str
    run: PeerFunction


def load_peers(names: set[str] | None = None) -> tuple[list[LoadedPeer], dict[str, str]]:
    """The peers (all, or those in ``names``) whose package imports, and ``{name: reason}`` for the rest."""
    for noisy in ("trafilatura", "readability", "readability.readability", "justext", "boilerpy3"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    loaded: list[LoadedPeer] = []
    missing: dict[str, str] = {}
    for spec in PEERS:
        if names is not None and spec.name not in names:
            continue
        try:
            run = spec.make()
        except ImportError as error:
            missing[spec.name] = f"{spec.distribution or spec.name} not importable ({error})"
            continue
        loaded.append(LoadedPeer(spec.name, spec.label, run))
    return loaded, missing
