"""The value of a link before it is fetched: its features, and an online model learnt from every page.

A link's features (hashed to ``FEATURE_BITS`` bits with CRC-32, the same in every process and on every
machine, unlike Python's ``hash``):

- ``h=``: its host; ``u=``: the words of its path and query (a number is ``u=N``), ``p=``: how many
  segments its path has;
- ``a=``: the words of its anchor text (``a=-`` when it has none), ``c=``: the words around it (its
  parent block's text), Chinese as character pairs;
- ``s=``: how relevant the page it was found on is (five steps), ``d=``: its depth from a seed;
- ``b``: a bias.

The model (:class:`LinkModel`) is a logistic regression over them, learnt by stochastic gradient
descent with a per-feature step (AdaGrad): each fetched page teaches it that the features of the link
that led there predict that page's label (relevant or not). Its value is the chance that a link's
target is relevant. One update and one prediction cost about as many dictionary reads as a link has
features (some 20 to 40).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import zlib
from collections.abc import Callable, Container, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

import regex
from lxml import etree

from crawler.rules.model import DiscoverRule, base_url, requested_url
from extractors.encoding import query_codec
from extractors.htmlparse import parse_tree

__all__ = [
    "FEATURE_BITS",
    "Followed",
    "Link",
    "LinkModel",
    "clear_feature_cache",
    "followed_links",
    "link_features",
    "page_links",
    "tokens",
]

# A link as a page gives it: its absolute URL (no fragment), its anchor text, the text around it.
Link = tuple[str, str, str]

# Features are hashed into 2**20 slots: collisions among the few hundred thousand a long crawl sees stay
# rare, and only the slots in use take memory.
FEATURE_BITS = 20
_MASK = (1 << FEATURE_BITS) - 1
# Words of the text around a link kept at most: a block's first words say what it lists.
CONTEXT_WORDS = 24
# Links of a page kept at most (the first ones): a page that links to thousands is a directory or a trap.
LINKS_PER_PAGE = 300
# Characters of anchor and context text kept.
ANCHOR_CHARS = 200
CONTEXT_CHARS = 300
# The text around a link is its parent's, or its parent's parent's when shorter than this (a link alone in
# a list item takes its list's).
CONTEXT_MIN_CHARS = 20
# AdaGrad's base step: large enough that a few pages move a new feature's weight, its per-feature decay
# (the root of the feature's summed squared gradients) keeps a frequent feature's weight steady.
LEARNING_RATE = 0.5
# A score is squashed from at most this far from zero (math.exp overflows past about 709).
_LOGIT_LIMIT = 30.0

_WORD = regex.compile(r"[\p{Latin}\p{N}]+|\p{Han}+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_HAN = regex.compile(r"\p{Han}")
_URL_PARTS = re.compile(r"[^0-9a-z]+")


def tokens(text: str, limit: int = 0) -> list[str]:
    """The words of a short text (an anchor, a block): Latin words lower-cased, each run of Chinese as its
    character pairs (one character alone as itself); at most ``limit`` (0: all)."""
    if text.isascii():  # most anchors and blocks: the plain ``re`` is three times as fast
        words = [word for word in _ASCII_WORD.findall(text.lower()) if len(word) > 1 and not word.isdigit()]
        return words[:limit] if limit else words
    found: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        if _HAN.match(word):
            found.extend(word[at : at + 2] for at in range(max(1, len(word) - 1)))
        elif len(word) > 1 and not word.isdigit():
            found.append(word)
        if limit and len(found) >= limit:
            return found[:limit]
    return found


def page_links(html: str, url: str, limit: int = LINKS_PER_PAGE, *, encoding: str = "utf-8") -> list[Link]:
    """The http(s) links of the page ``html`` at ``url``, read in the web ``encoding``, each once (the first
    anchor), in order, with their anchor and context text; each URL as a browser requests it (its query
    in the page's encoding, :func:`~crawler.rules.model.requested_url`, against the base the crawl reads,
    :func:`~crawler.rules.model.base_url`), as a rule's crawl builds it."""
    codec = query_codec(encoding)
    root = parse_tree(html)
    if root is None:
        return []
    base = base_url(url, root)
    found: dict[str, Link] = {}
    for anchor in root.iter("a"):
        target = requested_url(base, anchor.get("href") or "", codec)
        if target is None or target in found:
            continue
        block = anchor.getparent()
        context = _text(block) if block is not None else ""
        if block is not None and len(context) < CONTEXT_MIN_CHARS:
            above = block.getparent()
            context = _text(above) if above is not None and above.tag != "body" else context
        found[target] = (target, _text(anchor)[:ANCHOR_CHARS], context[:CONTEXT_CHARS])
        if len(found) >= limit:
            break
    return list(found.values())


@dataclass(frozen=True, slots=True)
class Followed:
    """The links of a page a discover crawl follows, each with its URL split and its request fingerprint
    (the Bloom filter then keeps the new ones), and how many it does not: ``refused`` (to a host the rule
    does not allow, or one no URL may have), ``seen`` (to the page itself or to a seed, or known seen)."""

    links: list[tuple[Link, SplitResult, bytes]]
    refused: int = 0
    seen: int = 0


def followed_links(
    discover: DiscoverRule,
    page_url: str,
    depth: int,
    links: Iterable[Link],
    fingerprint: Callable[[str], bytes],
    seeds: AbstractSet[bytes],
    known: Container[str] = frozenset(),
    max_length: int | None = None,
) -> Followed:
    """The links of the page at ``page_url`` (``depth`` from a seed) that ``discover``'s crawl follows:
    none past ``max_depth``; of the others, those to a host within ``domains`` and not in
    ``deny_domains``, other than the page itself and the seeds (``seeds``: their fingerprints; the seeds
    are read at every crawl and never go through the Bloom filter) and the URLs in ``known``; none longer
    than ``max_length`` characters (refused). ``fingerprint``: the crawl's request fingerprint of a URL."""
    if depth + 1 > discover.max_depth:
        return Followed([])
    followed: list[tuple[Link, SplitResult, bytes]] = []
    refused = seen = 0
    itself = fingerprint(page_url)
    for link in links:
        if link[0] in known:
            seen += 1
            continue
        if max_length is not None and len(link[0]) > max_length:
            refused += 1
            continue
        try:
            parts = urlsplit(link[0])
            allowed = discover.allows_host(parts.hostname)
        except ValueError:  # a host or port no URL may have
            allowed = False
        if not allowed:
            refused += 1
            continue
        mark = fingerprint(link[0])
        if mark == itself or mark in seeds:
            seen += 1
        else:
            followed.append((link, parts, mark))
    return Followed(followed, refused, seen)


def _text(element: etree._Element) -> str:
    return " ".join(" ".join(str(text) for text in element.itertext()).split())


# Features of a few characters ("u=html", "p=2", a host) come again link after link: their slots are kept.
@functools.lru_cache(maxsize=1 << 16)
def _slot(feature: str) -> int:
    return zlib.crc32(feature.encode()) & _MASK


def link_features(
    url: str, anchor: str, context: str, source: float, depth: int, parts: SplitResult | None = None
) -> list[int]:
    """The hashed features of a link to ``url`` (see the module docstring), each once; ``parts``: the URL
    split already."""
    parts = parts or urlsplit(url)
    path = parts.path.lower()
    named = [f"h={parts.netloc.lower()}", f"p={path.count('/')}", f"s={min(4, int(source * 5))}"]
    named.append(f"d={min(depth, 6)}")
    named.extend(
        "u=N" if word.isdigit() else f"u={word}"
        for word in _URL_PARTS.split(f"{path} {parts.query.lower()}")
        if 1 < len(word) <= 30
    )
    named.append("b")
    slots = set(map(_slot, named))
    slots.update(_text_slots("a", anchor))
    slots.update(_text_slots("c", context))
    return list(slots)


def clear_feature_cache() -> None:
    """Forget the slots kept (for a measure that starts cold)."""
    _text_slots.cache_clear()
    _slot.cache_clear()


@functools.lru_cache(maxsize=4096)
def _text_slots(kind: str, text: str) -> tuple[int, ...]:
    """The slots of the words of an anchor (``a``) or a context (``c``): a page's menu and its blocks'
    texts come again link after link, and pages of a site share them."""
    if kind == "c":
        return tuple(_slot(f"c={word}") for word in tokens(text, CONTEXT_WORDS))
    return tuple(_slot(f"a={word}") for word in tokens(text) or ["-"])


def _squash(score: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-_LOGIT_LIMIT, min(_LOGIT_LIMIT, score))))


@dataclass(slots=True)
class LinkModel:
    """Logistic regression over hashed binary features, learnt online with AdaGrad (see the module
    docstring). ``weights`` and ``squares`` (each feature's summed squared gradients) are the model;
    ``changes`` holds what this process learnt since :meth:`take_changes` (for sharing it)."""

    rate: float = LEARNING_RATE
    weights: dict[int, float] = field(default_factory=dict)
    squares: dict[int, float] = field(default_factory=dict)
    changes: dict[int, list[float]] = field(default_factory=dict)
    updates: int = 0

    def value(self, features: Iterable[int]) -> float:
        """The chance that the target of a link with ``features`` is relevant."""
        return _squash(sum(map(self.weights.get, features, itertools.repeat(0.0))))

    def learn(self, features: Iterable[int], label: float) -> float:
        """One step toward predicting ``label`` (1: relevant, 0: not) for ``features``; the value
        predicted before the step."""
        features = list(features)
        predicted = self.value(features)
        gradient = predicted - label
        if gradient == 0.0:
            return predicted
        squared = gradient * gradient
        weights, squares, changes = self.weights, self.squares, self.changes
        for feature in features:
            total = squares.get(feature, 0.0) + squared
            squares[feature] = total
            step = self.rate * gradient / math.sqrt(total)
            weights[feature] = weights.get(feature, 0.0) - step
            change = changes.get(feature)
            if change is None:
                changes[feature] = [-step, squared]
            else:
                change[0] -= step
                change[1] += squared
        self.updates += 1
        return predicted

    def take_changes(self) -> dict[int, list[float]]:
        """What was learnt here since the last call (feature -> [weight change, squares change])."""
        changes, self.changes = self.changes, {}
        return changes

    def merge(self, changes: Iterable[tuple[int, float, float]]) -> None:
        """Add what another process learnt (feature, weight change, squares change)."""
        weights, squares = self.weights, self.squares
        for feature, weight, square in changes:
            weights[feature] = weights.get(feature, 0.0) + weight
            squares[feature] = squares.get(feature, 0.0) + square
