"""Language-aware word counting and title similarity.

A CJK character (Han, kana, Hangul) counts as one word; elsewhere a word is a run of non-space characters.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

CJK_CHARACTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
# Similarity terms: CJK characters one by one, other words lower-cased without punctuation.
_TERM_RE = re.compile(rf"[{CJK_CHARACTERS}]|[^\W_]+")
CJK_RE = re.compile(rf"[{CJK_CHARACTERS}]")
# A run of CJK characters.
CJK_RUN_RE = re.compile(rf"[{CJK_CHARACTERS}]+")
# A letter or digit of a script other than CJK: what makes a Latin word longer (CJK text, written without
# spaces, joins no Latin word: "到2027年" holds the word 2027).
NON_CJK_WORD_CHAR_RE = re.compile(rf"[^\W_{CJK_CHARACTERS}]")
# Characters str.split() does not take for white space but browsers show as nothing.
_INVISIBLE_SPACES = str.maketrans({"\u200b": " ", "\ufeff": " "})


def count_words(text: str) -> int:
    """Number of words in ``text``: each CJK character is one word, other words are split on white space."""
    if text.isascii() or not CJK_RE.search(text):
        return len(text.split())
    # A run of CJK characters counted by its length and the other words split apart once the runs are out:
    # half the time of a regular expression's match for each character.
    rest, runs = CJK_RUN_RE.subn(" ", text)
    return len(text) - len(rest) + runs + len(rest.split())


def terms(text: str | Iterable[str]) -> Counter[str]:
    """Bag of lower-cased terms for cosine similarity (CJK characters count one by one), of ``text`` or of
    lines as if joined by line breaks (a term never spans one), without the copy the joined text would be."""
    if isinstance(text, str):
        return Counter(_TERM_RE.findall(text.lower()))
    bag: Counter[str] = Counter()
    for line in text:
        bag.update(_TERM_RE.findall(line.lower()))
    return bag


def cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine similarity of two term bags; 0.0 when either is empty."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    dot = sum(count * large[term] for term, count in small.items() if term in large)
    if not dot:
        return 0.0
    return dot / (math.hypot(*a.values()) * math.hypot(*b.values()))


def block_similarity(
    text: str | Iterable[str], title_terms: Counter[str] | None, measure: bool
) -> float | None:
    """A block's title similarity for the diagnostics (of its text or its lines, see :func:`terms`): 0.0
    with no title, ``None`` when not measured."""
    if title_terms is None:
        return 0.0
    return round(cosine(terms(text), title_terms), 3) if measure else None


def cjk_share(text: str) -> float:
    """Share of non-space characters that are CJK: tells Chinese/Japanese text from the rest."""
    compact = len(text) - text.count(" ") - text.count("\n")
    if compact <= 0:
        return 0.0
    return len(CJK_RE.findall(text)) / compact


def normalize_space(text: str) -> str:
    """Collapse every run of white space (no-break, ideographic and zero-width spaces too) to one space."""
    return " ".join(split_space(text))


def split_space(text: str) -> list[str]:
    """The pieces of ``text`` between runs of white space (no-break, ideographic and zero-width too): its
    words, when it holds no CJK character."""
    if "\u200b" in text or "\ufeff" in text:
        text = text.translate(_INVISIBLE_SPACES)
    return text.split()
