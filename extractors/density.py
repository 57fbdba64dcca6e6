"""The density filter: keep the source lines of a page whose text outweighs their markup.

The first stage of "Extracting Useful Text from HTML" (Sujit Pal, 2009, after "The Easy Way to Extract Useful
Text from Arbitrary HTML"; described in ``shared/seeds/density-filter-boilerplate.txt``). The seed's second
stage, a boilerplate classifier trained on template-marked pages, needs a labelled corpus and is not part of
this filter.

1. Lines: the page source split at its line breaks (``\\n``, ``\\r\\n`` or ``\\r``, as Java's ``readLine``);
   lines that are empty once trimmed are skipped, as the seed's code does.
2. Text and markup: every character of a line is markup or text. The seed's scanner counts what lies between
   ``<`` and ``>`` as markup, restarting on every line. Here a tokenizer follows the markup across lines, so
   a tag or comment spanning several lines is markup on all of them, and the contents of ``<script>`` and
   ``<style>`` count as markup too: they are code, not text, and the seed notes that the filter lets them
   through (its classifier removed them afterwards). Text is entity-decoded with white space runs collapsed.
3. Length rule: lines with fewer than ``MIN_WORDS`` words of text are discarded before any statistics (the
   seed's ``MIN_CHARS_IN_TEXT``, which removes the text of ``<li>`` and ``<hx>`` lines).
4. Density of each remaining line: ``(N(text) + 1) / (N(text) + N(markup) + 1)``, characters counted; the
   seed's formula, with its ``+ 1`` that keeps an empty line from dividing by zero.
5. Threshold ``0.5 - stddev(densities)``, the sample standard deviation of the remaining lines' densities
   (commons-math's ``getStandardDeviation``, 0 for a single line); a line is kept when its density is
   strictly above it. The seed gives no smoothing and no neighbour rule, so none is applied.
6. Output: each kept line is a paragraph, in source order.

Where the seed is open: the length rule counts words, not characters, so that a CJK character is one word
(60 characters are about 10 English words with their spaces); a tag between two text runs of a line joins
them with a space unless it is an inline tag (``<a>``, ``<b>``, ...), which only affects the output text.
"""

from __future__ import annotations

import html as htmllib
import re
import statistics
from dataclasses import dataclass

from extractors.model import Block, Extraction
from extractors.text import block_similarity, count_words, normalize_space, terms

ALGORITHM = "density"

# The seed: "0.5 - stddev(densities) works quite well"; the base of the threshold.
THRESHOLD_BASE = 0.5
# The seed's MIN_CHARS_IN_TEXT = 60 characters, counted in words so that CJK lines are judged alike: an
# English word and its space average about six characters.
MIN_WORDS = 10
PREVIEW_CHARS = 80

_NEWLINE_RE = re.compile(r"\r\n?")
# C0 controls but tab and newline: never text, and harmful downstream (NUL in particular).
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# Markup, in the order a browser's tokenizer tries it: comments, raw-text elements with their code, tags,
# then declarations and processing instructions. An unclosed construct runs to the end, as in a browser.
_MARKUP_RE = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style)\b[^>]*>.*?(?:</\1\s*>|\Z)"
    r"|</?([A-Za-z][^\s/>]*)[^>]*(?:>|\Z)"
    r"|<[!?][^>]*(?:>|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_TITLE_RE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.DOTALL | re.IGNORECASE)
# Tags inside a word or a sentence: text on both sides of them runs on without a space.
_INLINE_TAGS = frozenset(
    {
        "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd", "mark", "q",
        "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Line:
    number: int  # 1-based line number in the source
    text: str
    markup: int  # characters of markup on the line


class _LineSplitter:
    """Accumulates text and markup pieces and cuts them into source lines."""

    def __init__(self) -> None:
        self.lines: list[_Line] = []
        self.markup_only = 0  # lines with markup and no text
        self._parts: list[str] = []
        self._markup = 0
        self._number = 1

    def text(self, piece: str) -> None:
        first, *rest = piece.split("\n")
        self._parts.append(first)
        for part in rest:
            self._end_line()
            self._parts.append(part)

    def markup(self, piece: str, glue: str) -> None:
        first, *rest = piece.split("\n")
        self._markup += len(first)
        self._parts.append(glue)
        for part in rest:
            self._end_line()
            self._markup += len(part)

    def finish(self) -> list[_Line]:
        self._end_line()
        return self.lines

    def _end_line(self) -> None:
        text = normalize_space(_CONTROL_RE.sub(" ", htmllib.unescape("".join(self._parts))))
        if text:
            self.lines.append(_Line(self._number, text, self._markup))
        elif self._markup:
            self.markup_only += 1
        self._parts.clear()
        self._markup = 0
        self._number += 1


def extract(
    html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
) -> Extraction:
    """Main text of ``html`` by the density filter (see the module docstring, stages 1-6)."""
    if not title:
        title = _page_title(html)
    if not html.strip():
        return Extraction.empty(ALGORITHM, title, "empty input")
    # 1. and 2. Source lines, each with its text and its count of markup characters.
    splitter = _LineSplitter()
    source = _NEWLINE_RE.sub("\n", html)
    position = 0
    for match in _MARKUP_RE.finditer(source):
        if match.start() > position:
            splitter.text(source[position : match.start()])
        tag = (match.group(2) or "").lower()
        splitter.markup(match.group(), "" if tag in _INLINE_TAGS else " ")
        position = match.end()
    splitter.text(source[position:])
    lines = splitter.finish()
    if not lines:
        return Extraction.empty(ALGORITHM, title, "no text in the page")
    # 3. The length rule, then 4. the density of the lines that pass it.
    words = [count_words(line.text) for line in lines]
    densities = [(len(line.text) + 1) / (len(line.text) + line.markup + 1) for line in lines]
    candidates = [i for i, count in enumerate(words) if count >= MIN_WORDS]
    if not candidates:
        return Extraction.empty(ALGORITHM, title, f"no line has {MIN_WORDS} words of text")
    # 5. Threshold 0.5 - stddev over the candidates; strictly above it is kept.
    spread = statistics.stdev(densities[i] for i in candidates) if len(candidates) > 1 else 0.0
    threshold = THRESHOLD_BASE - spread
    kept = {i for i in candidates if densities[i] > threshold}
    # 6. Kept lines are the paragraphs.
    paragraphs = [lines[i].text for i in sorted(kept)]
    title_terms = terms(title) if title else None
    blocks = [
        Block(
            index=index,
            label=f"line {line.number}",
            lines=1,
            words=words[index],
            density=round(densities[index], 3),
            similarity=block_similarity(line.text, title_terms, explain),
            score=round(densities[index], 3),
            chosen=index in kept,
            reason=_reason(words[index], densities[index], threshold),
            preview=line.text[:PREVIEW_CHARS],
        )
        for index, line in enumerate(lines)
    ]
    notes = [
        f"threshold {THRESHOLD_BASE} - stddev {spread:.3f} = {threshold:.3f} over {len(candidates)} lines "
        f"of at least {MIN_WORDS} words; {splitter.markup_only} lines of markup only"
    ]
    if not paragraphs:
        notes.append("no line is denser than the threshold")
    return Extraction.of(paragraphs, title=title, algorithm=ALGORITHM, blocks=blocks, notes=notes)


def _page_title(html: str) -> str | None:
    """The text of the page's ``<title>``; the filter reads the source, not a DOM."""
    found = _TITLE_RE.search(html)
    if found is None:
        return None
    return normalize_space(_CONTROL_RE.sub(" ", htmllib.unescape(found.group(1)))) or None


def _reason(words: int, density: float, threshold: float) -> str:
    if words < MIN_WORDS:
        return f"too short: {words} < {MIN_WORDS} words"
    if density > threshold:
        return f"density {density:.3f} > threshold {threshold:.3f}"
    return f"density {density:.3f} <= threshold {threshold:.3f}"
