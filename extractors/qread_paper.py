"""qRead exactly as the seed describes it (``algo="qread-paper"``), kept to be compared with the default
:func:`extractors.qread.extract` on the same corpus.

1. Filter: drop ``<head>``, comments, scripts, styles, and ``<div>`` navigation blocks (class or id ``menu``
   or ``nav``).
2. Remove every tag, marking ``</p>`` and ``<br>`` as line breaks first; the other lines are the source's,
   but two blocks on one source line (``<div>a</div><div>b</div>``) are two lines, as a browser shows them.
3. Split the lines into segments separated by at least θ = 3 empty lines.
4. Word density d(S) = w(S) / l(S): words over non-empty lines; a CJK character is a word.
5. The densest segment is the article, corrected by cosine similarity with the title: a short article
   (one or two sentences) is the segment most similar to the title when the densest one shares nothing
   with it, and the other segments of (nearly) the same density that resemble the title join it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import lxml.etree

from extractors.htmlparse import page_title, parse_tree
from extractors.model import Extraction
from extractors.qread import (
    BLOCK_TAGS,
    THETA,
    Line,
    Segment,
    segment_texts,
    segments_extraction,
    split_segments,
)
from extractors.text import cosine, count_words, normalize_space, terms

__all__ = ["PAPER_ALGORITHM", "extract_paper"]

PAPER_ALGORITHM = "qread-paper"
# Segments this close to the top density count as "the same density" (seed case 2); 10% absorbs rounding
# of short segments without merging text of another kind.
SAME_DENSITY = 0.9
# Title similarity from which a segment is taken to be about the article (seed cases 1 and 2).
TITLE_SIMILARITY = 0.2

_PAPER_DROP_TAGS = ("script", "style")
_NAV_RE = re.compile(r"\b(menu|nav)\b", re.IGNORECASE)


def extract_paper(
    html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
) -> Extraction:
    """qRead exactly as the seed describes it (see the module docstring, stages 1-5).

    Title similarity is part of the choice here, so it is measured for every segment whatever ``explain``.
    """
    root = parse_tree(html)
    if root is None:
        return Extraction.empty(PAPER_ALGORITHM, title, "no HTML document in the input")
    title = title or page_title(root)
    # 1. Filter: comments (the parser drops them), scripts, styles; the head and div menus while walking.
    lxml.etree.strip_elements(root, *_PAPER_DROP_TAGS, with_tail=False)
    # 2. Remove the tags; </p> and <br> become line breaks, the source's own line breaks stay.
    raw_lines = "".join(_paper_text(root)).split("\n")
    lines: list[Line] = []
    empty = 0
    for raw in raw_lines:
        text = normalize_space(raw)
        if not text:
            empty += 1
            continue
        lines.append(Line(text, count_words(text), 0, empty, "text"))
        empty = 0
    # 3. Segments: runs of lines with fewer than θ empty lines between them.
    segments = split_segments(lines, THETA)
    if not segments:
        return Extraction.empty(PAPER_ALGORITHM, title, "no text left after filtering")
    # 4. and 5. Densest segment, corrected by title similarity.
    title_terms = terms(title) if title else None
    similarities = [
        cosine(terms(segment_texts(lines, s)), title_terms) if title_terms else 0.0 for s in segments
    ]
    chosen, reasons = _paper_choice(segments, similarities)
    return segments_extraction(PAPER_ALGORITHM, title, lines, segments, list(similarities), chosen, reasons)


def _paper_text(root: lxml.etree._Element) -> Iterable[str]:
    """Text and tails in document order, with a line break after every ``</p>`` and ``<br>``, and between
    two blocks that share a source line (``<div>a</div><div>b</div>``), as the default qRead splits them.

    ``<head>`` and ``<div>`` navigation menus are skipped, their tails kept.
    """
    lines = _SourceLines()
    walker = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, element in walker:
        if event == "start":
            if element.tag == "head" or (
                element.tag == "div" and _NAV_RE.search(f"{element.get('class', '')} {element.get('id', '')}")
            ):
                walker.skip_subtree()
                lines.block_edge()
                if element.tail:
                    yield lines.add(element.tail)
                continue
            if element.tag in BLOCK_TAGS:
                lines.block_edge()
            if element.text:
                yield lines.add(element.text)
            continue
        if element.tag in ("p", "br"):
            yield lines.add("\n")
        elif element.tag in BLOCK_TAGS:
            lines.block_edge()
        if element.tail:
            yield lines.add(element.tail)


class _SourceLines:
    """The source lines of the text given to ``add``, and a line break owed between two blocks on one.

    The break is added only where text would follow on the same line: a block that ends its source line
    adds no empty line, so θ still counts the source's empty lines.
    """

    __slots__ = ("has_text", "owed")

    def __init__(self) -> None:
        self.has_text = False  # the current line holds text
        self.owed = False  # a block started or ended after that text

    def block_edge(self) -> None:
        self.owed = self.has_text

    def add(self, text: str) -> str:
        """``text``, after a line break when one is owed and ``text`` continues the current line."""
        first, newline, rest = text.partition("\n")
        continues = bool(first.strip())
        if self.owed and continues:
            text = "\n" + text
        if newline:
            self.has_text = bool(rest.rpartition("\n")[2].strip())
            self.owed = False
        elif continues:
            self.has_text = True
            self.owed = False
        return text


def _paper_choice(segments: list[Segment], similarities: list[float]) -> tuple[set[int], dict[int, str]]:
    """The segments chosen (module docstring, stage 5), and the reason of each one chosen that is not
    the densest, which `--explain` shows: a short article most like the title, and the segments of the
    same density like the title that join it."""
    densest = max(range(len(segments)), key=lambda i: segments[i].density)
    main, reasons = densest, {}
    if similarities[densest] < TITLE_SIMILARITY:
        # Case 1: a one- or two-sentence article is not the densest segment, but it resembles the title.
        similar = [i for i, sim in enumerate(similarities) if sim >= TITLE_SIMILARITY]
        if similar:
            main = max(similar, key=lambda i: (similarities[i], segments[i].density))
            reasons[main] = f"most like the title: the densest, #{densest}, is not"
    top = segments[main].density
    # Case 2: an article spread over several segments of the same density, each like the title.
    joined = {
        i
        for i, segment in enumerate(segments)
        if i != main and segment.density >= SAME_DENSITY * top and similarities[i] >= TITLE_SIMILARITY
    }
    reasons.update((i, f"as dense as #{main}, and like the title") for i in joined)
    return {main} | joined, reasons
