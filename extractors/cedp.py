"""CEDP: Web news extraction via the tag path feature weighted by text block density.

Wu et al., "Online Web news extraction via tag path feature weighted by text block density", Sci Sin
Inform 47(8), 2017 (``shared/seeds/cedp-tag-path-extraction.txt``), in its CEDP-NLTD form. The seed holds
the abstract and Algorithm 1, which leaves ``pathF``, ``densityF``, ``combine``, ``smoothing`` and ``thresh``
as parameters; they are taken from the papers it builds on, as said at each stage:

1. Parse the page into a tree and drop what is never text (scripts, styles, ...; CEPR [28] and CETD [15]
   strip scripts, styles and comments before measuring).
2. The normalised text node sequence ``nts``: every non-empty text node ``v_i`` in document order, its
   content ``c(v_i)`` with white space collapsed, its tag path (the tag names from ``<html>`` down to the
   element holding the text) and its text block, the nearest enclosing element that is not an inline tag.
3. ``pathF``: the text-to-tag-path ratio of CEPR [28], ``TPR(p) = words of the text nodes with path p /
   number of those nodes``. Content paths carry many long nodes, navigation paths many short ones.
4. ``densityF``: the text density of the node's text block, ``TD = C / T`` of CETD [15] (``C`` the text of
   the block's subtree, ``T`` its descendant tags, at least 1), counting only text outside links: our
   reading of NLTD, which the seed names but does not define, as "non-link text density". A block of links
   has density 0 whatever its path; a paragraph holding a link lends its density to the link's text.
5. ``combine``: ``f(v_i) = pathF(p(v_i)) * densityF(B(v_i))``, the path feature weighted by the density.
6. ``smoothing``: a Gaussian kernel over the sequence (σ = ``SIGMA`` nodes), so a short node between content
   nodes follows its neighbours, as CETR and CEPR smooth their per-line and per-node features (and so may
   the node just before or after the article).
7. ``thresh``: Otsu's threshold [30] (the one threshold method the seed cites) over the smoothed features of
   the page (on a square-root scale, see below); a node is content when ``sf(v_i) >= thresh``.
8. Output: the content nodes in document order; consecutive ones of the same text block make a paragraph.

Where the seed is open: lengths are counted in words with a CJK character as one word (CETD counts
characters; words keep English and Chinese pages on one scale). Otsu's split is computed on the square root
of the smoothed feature: the feature is a product of two lengths (words per node of the path, words per tag
of the block), and its square root, their geometric mean, is a length again. On the raw product one very
long paragraph takes a class of its own and the rest of the article falls below the threshold; on a log
scale any text at all separates from link-only nodes and footers come along.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import lxml.etree
import lxml.html

from extractors.htmlparse import page_title, parse_html
from extractors.model import Block, Extraction
from extractors.text import block_similarity, count_words, normalize_space, terms

ALGORITHM = "cedp"

# Never text of the page: scripts and styles (the papers' preprocessing) and the other elements whose
# content a reader does not see as text (the <title> is the title, not body text).
_DROP_TAGS = ("script", "style", "noscript", "template", "title", "svg", "math", "object", "embed", "iframe")
# Phrasing tags: they do not make a text block of their own, their text belongs to the enclosing block.
_INLINE_TAGS = frozenset(
    {
        "a", "abbr", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn", "em", "font", "i",
        "img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub",
        "sup", "time", "tt", "u", "var", "wbr",
    }
)  # fmt: skip
# Standard deviation of the Gaussian smoothing, in nodes (the seed does not give its kernel): σ = 1 mixes each
# node with its immediate neighbours (weight 0.61) and only faintly with the next ones, so a short article is
# not blurred into the navigation around it.
SIGMA = 1.0
# The kernel is cut at three standard deviations, where its weight falls under 1.2% of the centre's.
RADIUS = 3
# Tag path labels show at most this many innermost steps, so a pathologically deep page stays cheap.
LABEL_STEPS = 16
PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class _Node:
    text: str
    words: int
    path: int  # tag path id
    block: int  # text block id


@dataclass(slots=True)
class _Tree:
    nodes: list[_Node]
    path_parent: list[int]  # tag path id -> id of the path one step shorter (-1 at the root)
    path_tag: list[str]  # tag path id -> its last tag
    block_words: list[int]  # text block id -> words in its subtree
    block_link_words: list[int]  # text block id -> of those, words inside links
    block_tags: list[int]  # text block id -> descendant elements


def extract(
    html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
) -> Extraction:
    """Main text of ``html`` by CEDP-NLTD (see the module docstring, stages 1-8)."""
    root = parse_html(html)
    if root is None:
        return Extraction.empty(ALGORITHM, title, "no HTML document in the input")
    title = title or page_title(root)
    # 1. What is never text goes.
    lxml.etree.strip_elements(root, *_DROP_TAGS, with_tail=False)
    # 2. The normalised text node sequence with tag paths and text blocks.
    tree = _walk(root)
    nodes = tree.nodes
    if not nodes:
        return Extraction.empty(ALGORITHM, title, "no text in the page")
    # 3. pathF: text-to-tag-path ratio.
    path_words = [0] * len(tree.path_tag)
    path_count = [0] * len(tree.path_tag)
    for node in nodes:
        path_words[node.path] += node.words
        path_count[node.path] += 1
    # 4. densityF: non-link text density of each text block.
    densities = [
        (words - link) / max(1, tags)
        for words, link, tags in zip(tree.block_words, tree.block_link_words, tree.block_tags, strict=True)
    ]
    # 5. combine: the path feature weighted by the block density.
    features = [path_words[n.path] / path_count[n.path] * densities[n.block] for n in nodes]
    # 6. smoothing.
    smoothed = _gaussian_smooth(features)
    # 7. thresh: Otsu over the page's smoothed features.
    threshold = _otsu_threshold(smoothed)
    kept = [value >= threshold for value in smoothed]
    # 8. Content nodes, grouped into paragraphs by text block.
    paragraphs: list[str] = []
    current: list[str] = []
    previous_block = -1
    for node, keep in zip(nodes, kept, strict=True):
        if node.block != previous_block and current:
            paragraphs.append(normalize_space(" ".join(current)))
            current = []
        previous_block = node.block
        if keep:
            current.append(node.text)
    if current:
        paragraphs.append(normalize_space(" ".join(current)))
    title_terms = terms(title) if title else None
    labels = {path: _label(tree, path) for path in {node.path for node in nodes}}
    blocks = [
        Block(
            index=index,
            label=labels[node.path],
            lines=1,
            words=node.words,
            density=round(densities[node.block], 3),
            similarity=block_similarity(node.text, title_terms, explain),
            score=round(smoothed[index], 3),
            chosen=kept[index],
            reason=f"feature {smoothed[index]:.3f} {'>=' if kept[index] else '<'} threshold {threshold:.3f}",
            preview=node.text[:PREVIEW_CHARS],
        )
        for index, node in enumerate(nodes)
    ]
    notes = [f"Otsu threshold {threshold:.3f} over {len(nodes)} text nodes, {len(path_count)} tag paths"]
    return Extraction.of(paragraphs, title=title, algorithm=ALGORITHM, blocks=blocks, notes=notes)


def _walk(root: lxml.html.HtmlElement) -> _Tree:
    """Text nodes in document order with their tag path and text block, and each block's counts.

    One iterative pass (``iterwalk``): a deeply nested page does not reach the recursion limit. Each
    element counts as a tag of its nearest text block; a block's counts go to the enclosing block when it
    closes, so every block ends up with the counts of its whole subtree.
    """
    tree = _Tree([], [], [], [], [], [])
    nodes = tree.nodes
    block_words = tree.block_words
    block_link_words = tree.block_link_words
    block_tags = tree.block_tags
    path_ids: dict[tuple[int, str], int] = {}
    paths: list[int] = [-1]  # tag path id of each open element, under a sentinel for the root's parent
    opened: list[bool] = []  # whether each open element is a text block of its own
    blocks: list[int] = []  # open text blocks, innermost last
    in_link = 0

    def add_text(raw: str) -> None:
        text = normalize_space(raw)
        if text:
            count = count_words(text)
            block = blocks[-1]
            nodes.append(_Node(text, count, paths[-1], block))
            block_words[block] += count
            if in_link:
                block_link_words[block] += count

    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if blocks:
                block_tags[blocks[-1]] += 1
            key = (paths[-1], tag)
            path = path_ids.get(key)
            if path is None:
                path = path_ids[key] = len(tree.path_tag)
                tree.path_parent.append(key[0])
                tree.path_tag.append(tag)
            paths.append(path)
            is_block = tag not in _INLINE_TAGS or not blocks
            opened.append(is_block)
            if is_block:
                blocks.append(len(block_words))
                block_words.append(0)
                block_link_words.append(0)
                block_tags.append(0)
            if tag == "a":
                in_link += 1
            if element.text:
                add_text(element.text)
            continue
        if tag == "a":
            in_link -= 1
        paths.pop()
        if opened.pop():
            closed = blocks.pop()
            if not blocks:
                break  # the root: its tail is outside the document
            block_words[blocks[-1]] += block_words[closed]
            block_link_words[blocks[-1]] += block_link_words[closed]
            block_tags[blocks[-1]] += block_tags[closed]
        if element.tail:
            add_text(element.tail)
    return tree


def _gaussian_smooth(values: list[float]) -> list[float]:
    """Gaussian-weighted mean of each value with its ``RADIUS`` neighbours on either side.

    At the ends of the sequence the weights of the neighbours that exist are renormalised.
    """
    size = len(values)
    total = [0.0] * size
    weight = [0.0] * size
    for offset in range(-RADIUS, RADIUS + 1):
        w = math.exp(-(offset * offset) / (2 * SIGMA * SIGMA))
        low, high = max(0, -offset), min(size, size - offset)  # positions whose neighbour at offset exists
        if low >= high:
            continue
        shifted = values[low + offset : high + offset]
        total[low:high] = [t + w * v for t, v in zip(total[low:high], shifted, strict=True)]
        weight[low:high] = [x + w for x in weight[low:high]]
    return [t / x for t, x in zip(total, weight, strict=True)]


def _otsu_threshold(values: list[float]) -> float:
    """Otsu's threshold on the square roots of the values: the split with the largest between-class variance.

    Exact over the sorted values rather than over a histogram; returns the smallest value of the upper
    class, or the smallest value when all are equal (everything is kept then).
    """
    ordered = sorted(values)
    roots = [math.sqrt(v) for v in ordered]
    size = len(roots)
    total = sum(roots)
    best, best_variance = 0, -1.0
    below = 0.0
    for k in range(1, size):
        below += roots[k - 1]
        if roots[k] == roots[k - 1]:
            continue
        mean_low = below / k
        mean_high = (total - below) / (size - k)
        variance = k * (size - k) * (mean_low - mean_high) ** 2
        if variance > best_variance:
            best, best_variance = k, variance
    return ordered[best]


def _label(tree: _Tree, path: int) -> str:
    """The tag path as ``html/body/div/p``, its innermost ``LABEL_STEPS`` steps only when deeper."""
    steps: list[str] = []
    while path >= 0 and len(steps) < LABEL_STEPS:
        steps.append(tree.path_tag[path])
        path = tree.path_parent[path]
    if path >= 0:
        steps.append("…")
    return "/".join(reversed(steps))
