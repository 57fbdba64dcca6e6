"""The learned boilerplate step: a linear model over the lines around qRead's article block.

qRead (``extractors/qread.py``, stages 1 to 6) finds the core and the article block by density and
markup; what it keeps around the core still holds related-story feeds, bios, comments and calls to action,
and it misses body lines the block boundary cut off. As the density-filter seed suggests, a classifier over
blocks decides what hand rules cannot:

1. Candidates: the lines from ``WINDOW`` lines before qRead's first kept line to ``WINDOW`` after its
   last, less those qRead found never to be text (link lists, the headline, captions, repeats) and any
   headline or caption line qRead did not keep (on a CJK page it keeps an ``<h1>`` sub-heading).
2. Features of each line, all binary (:func:`line_features`): the tag and the class and id words of its
   block and of the two blocks above it, its size, link share and kind, qRead's decision on it and where
   it sits relative to the lines qRead kept and to the headline, the words of the sub-heading it follows,
   its first Latin words (all of them for a short line; none for CJK text), and its neighbours' kinds and
   decisions.
3. Score: a logistic model whose weights ``bench/train_boilerplate.py`` fits on the extraction training
   set (``data/boilerplate.json``); a feature the training never saw weighs nothing.
4. Choice: the run of consecutive candidates with the largest sum of score times the square root of the
   line's words (an article is one run: boilerplate around it costs, body lines pay).

The model learned from English pages: on a CJK page the step runs only when qRead kept short lines
(:func:`applies`). The model is read once per process; without its file the step keeps qRead's choice.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from itertools import repeat
from typing import Any, TypeVar

from extractors.qread import GOOD, NOT_TEXT_TAGS, Reading
from extractors.text import CJK_RE

__all__ = [
    "MODEL_FILE",
    "Model",
    "candidates",
    "choose",
    "line_features",
    "line_logits",
    "load_model",
    "refine",
]

T = TypeVar("T")

MODEL_FILE = "boilerplate.json"
# Lines looked at beyond qRead's first and last kept ones: windows of 10, 20 and 40 lines scored the same
# token F1 in the held-out folds of the training set (0.935), and the smallest costs least.
WINDOW = 10

_WORD_RE = re.compile(r"[a-z]{2,20}")
_HEADING_TAGS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_CLASS_LEVELS = 3
# Steps up from the body's block and depths below it that the features tell apart; more are one feature, and
# are not counted further (a hostile page nests thousands of levels: counting them all took seconds).
_LEVELS_TOLD = 4
_HEADING_WORDS = 4
# A line of up to this many words is described by all its words, a longer one by its first few.
_SHORT_LINE = 8
_LEAD_WORDS = 3
# Enough characters for the first few words of a long line (longer words are not words of the model).
_LEAD_CHARS = 80
# The characters first read for them (see _lead_words): on the 10,287 long candidate lines of the 219
# development pages, reading 24, 32 or 40 characters first took 0.88x, 0.79x and 0.82x the time of reading
# _LEAD_CHARS at once (fewer than 24 hold three words too seldom; a quarter of the lines, CJK text and
# lines of figures, are read twice whatever the length).
_LEAD_SCAN = 32
# Line shapes whose weight a model remembers (about 5,000 on the 763 pages of the two corpora).
_SHAPES_REMEMBERED = 50_000
_NO_STATE = ("none", 0)
# The weight of a feature the model does not know, endlessly: ``map(weights.get, features, _ZEROS)`` stops
# with the features, and one endless iterator serves every sum (cheaper than one of their length each).
_ZEROS = repeat(0.0)
# The share of qRead's kept words in short lines from which the step runs on a CJK page (see applies). On
# the 69 Chinese development pages qRead alone scores 0.924 token F1, the step run on every page 0.929, and
# run from a share of 2% or 5%, 0.930 on 33 or 14 pages: the larger share costs least (the step takes about
# 0.4 ms on a Chinese page, a sixth of its time).
CJK_SHORT_SHARE = 0.05
# A line's shape (see shape_features): kind, size, link share, state, side, distance, share of the kept
# text before it, the states of the lines before and after it, where the headline is, CJK or not.
Shape = tuple[int, int, int, str, str, str, int, tuple[str, int], tuple[str, int], str, bool]


class Model:
    """A logistic model over named binary features: ``bias`` plus the weights of the features present."""

    __slots__ = ("_shapes", "bias", "weights", "word_weights")

    def __init__(self, bias: float, weights: dict[str, float]) -> None:
        self.bias = bias
        self.weights = weights
        self._shapes: dict[Shape, float] = {}
        # The weights of the ``word:`` features by their word: a line's words are weighed without
        # making their feature names.
        self.word_weights = {name[5:]: weight for name, weight in weights.items() if name.startswith("word:")}

    def weigh_shape(self, shape: Shape) -> float:
        """The weight of a line's shape features (:func:`shape_features`), remembered: lines of every page
        share a few thousand shapes, and a line's shape is 11 of its features."""
        weight = self._shapes.get(shape)
        if weight is None:
            if len(self._shapes) >= _SHAPES_REMEMBERED:
                self._shapes.clear()
            weight = self._shapes[shape] = self.weigh(shape_features(shape))
        return weight

    def logit(self, features: Sequence[str]) -> float:
        return self.bias + self.weigh(features)

    def weigh(self, features: Sequence[str]) -> float:
        """The sum of the weights of ``features``, without the bias."""
        return sum(map(self.weights.get, features, _ZEROS))

    def to_json(self) -> dict[str, Any]:
        return {"format": 1, "bias": self.bias, "weights": self.weights}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        return cls(float(data["bias"]), {str(k): float(v) for k, v in data["weights"].items()})


@functools.cache
def load_model() -> Model | None:
    """The shipped model, or None when the package has no model file (the step then keeps qRead's choice)."""
    try:
        text = resources.files("extractors").joinpath("data", MODEL_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return Model.from_json(json.loads(text))


def applies(reading: Reading) -> bool:
    """Whether the step runs on a page: always on a page of Latin text; on a CJK page (the model saw English
    pages only) when at least ``CJK_SHORT_SHARE`` of qRead's kept words are in lines too short to be article
    text on their own, the kind of boilerplate the step trims there."""
    if not reading.cjk:
        return True
    lines, kinds = reading.lines, reading.kinds
    total = short = 0
    for i in reading.kept:
        total += lines[i].words
        if kinds[i] != GOOD:
            short += lines[i].words
    return short >= CJK_SHORT_SHARE * total


def candidates(reading: Reading) -> list[int]:
    """Stage 1: the lines the step decides on, in document order."""
    if not reading.kept:
        return []
    low = max(0, min(reading.kept) - WINDOW)
    high = min(len(reading.lines), max(reading.kept) + WINDOW + 1)
    hard, lines, kept = reading.hard, reading.lines, reading.kept
    # A headline or caption tag is never text, but for the sub-headings qRead keeps on a CJK page.
    return [i for i in range(low, high) if i not in hard and (lines[i].tag not in NOT_TEXT_TAGS or i in kept)]


def refine(reading: Reading, model: Model | None = None) -> set[int]:
    """Stages 1 to 4: the lines kept after the learned step (qRead's own choice when there is no model)."""
    model = model or load_model()
    if model is None or not reading.kept:
        return reading.kept
    # 1. Candidates.
    chosen = candidates(reading)
    # 2. and 3. Features and scores.
    logits = line_logits(reading, chosen, model)
    # 4. The best run.
    return choose(reading, chosen, logits)


def choose(reading: Reading, chosen: list[int], logits: list[float]) -> set[int]:
    """Stage 4: the run of ``chosen`` lines with the largest sum of ``logits`` weighted by the square root
    of their words; qRead's own choice when no run scores above zero.

    Dropping the lines of the run scored below -2 or 0 as well scored lower in the held-out folds of the
    training set (0.9349 and 0.9304 token F1 against 0.9353): the run already holds the article."""
    lines = reading.lines
    best_sum, best = 0.0, (0, 0)
    running, start = 0.0, 0
    for position, (index, logit) in enumerate(zip(chosen, logits, strict=True)):
        if running <= 0.0:
            running, start = 0.0, position
        running += logit * math.sqrt(lines[index].words)
        if running > best_sum:
            best_sum, best = running, (start, position + 1)
    if best == (0, 0):
        return reading.kept
    return {chosen[p] for p in range(*best)}


def line_features(reading: Reading, chosen: list[int]) -> list[list[str]]:
    """Stage 2: the binary features of each line of ``chosen``, as the training script reads them."""
    return [
        shape_features(shape) + [f"word:{word}" for word in words] + heading + under + own + upper
        for shape, words, heading, under, own, upper in _described(reading, chosen, list)
    ]


def line_logits(reading: Reading, chosen: list[int], model: Model) -> list[float]:
    """Stages 2 and 3: ``model.logit(line_features(...)[n])`` of each line of ``chosen``, the features of
    its block and of the blocks above weighed once per distinct block."""
    bias, weigh, weigh_shape, word_weight = model.bias, model.weigh, model.weigh_shape, model.word_weights.get
    # A line's words weighed here rather than by a call of their own: there is one per line.
    return [
        bias + weigh_shape(shape) + sum(map(word_weight, words, _ZEROS)) + heading + under + own + upper
        for shape, words, heading, under, own, upper in _described(reading, chosen, weigh)
    ]


def _described(
    reading: Reading, chosen: list[int], blocks: Callable[[Sequence[str]], T]
) -> Iterator[tuple[Shape, list[str], T, T, T, T]]:
    """For each line of ``chosen``: its shape (:func:`shape_features`), its words (``word:`` features), and
    ``blocks`` of the features of the sub-heading it follows, of its distance from it (none or one
    feature), of its block and of the blocks above it; ``blocks`` is called once per distinct sub-heading,
    distance, block (its tag and names) and parent block."""
    lines, kinds, kept = reading.lines, reading.kinds, reading.kept
    if not chosen:
        return
    walk = reading.walk
    tags, attributes, parents = walk.tags, walk.attributes, walk.parents
    body, body_class = _body_block(reading)
    first_kept, last_kept = min(kept), max(kept)
    # The article block's lines are consecutive (the lines between its start and end events).
    block_first, block_last = (reading.in_block[0], reading.in_block[-1]) if reading.in_block else (0, -1)
    kept_words = sum(lines[i].words for i in kept) or 1
    headline = next((i for i, line in enumerate(lines) if line.tag == "h1"), -1)
    # The sub-heading each line follows (any heading line, a candidate or not; the headline ends it), as
    # features.
    none = heading = blocks([])
    heading_line = -1
    start = max(0, chosen[0] - WINDOW)
    headings: list[T] = []
    heading_lines: list[int] = []
    for i in range(start, chosen[-1] + 1):
        tag = lines[i].tag
        if tag == "h1":
            heading, heading_line = none, -1
        headings.append(heading)
        heading_lines.append(heading_line)
        if tag in _HEADING_TAGS:
            found = _words(lines[i].text, _HEADING_WORDS)
            heading, heading_line = (blocks([f"under:{word}" for word in found]), i) if found else (none, -1)
    # Each line's state (kept by qRead, in its block, out of it) with its kind, from the line before the
    # first candidate to the one after the last (none for a line beyond the page's first or last).
    low, high = chosen[0] - 1, chosen[-1] + 2
    states = [
        ("kept" if i in kept else "block" if block_first <= i <= block_last else "out", kinds[i])
        if 0 <= i < len(lines)
        else _NO_STATE
        for i in range(low, high)
    ]
    # ``blocks`` of the features of each distance from a sub-heading, of each block by its tag and names
    # (not by the block: the 18,498 candidate lines of the 219 development pages sit in 17,956 blocks of
    # 2,228 distinct tags and names), and of the blocks above each parent block.
    unders: dict[str, T] = {}
    own: dict[tuple[str, str | None, str | None], T] = {}
    upper: dict[int, T] = {}
    words_before = 0
    for i in chosen:
        line = lines[i]
        if i < first_kept:
            side, distance = "before", first_kept - i
        elif i > last_kept:
            side, distance = "after", i - last_kept
        else:
            side, distance = "inside", 0
        words = line.words
        share = line.link_words / words if words else 0.0
        size = words.bit_length()
        before = 10 * words_before // kept_words
        here, kind = states[i - low]
        shape = (
            kind,
            size if size < 9 else 9,
            0 if share == 0 else 1 if share < 0.34 else 2 if share <= 0.67 else 3,
            here,
            side,
            _BUCKETS[distance] if distance < _LAST_BUCKET else _BUCKETS[-1],
            before if before < 9 else 9,
            states[i - low - 1],
            states[i - low + 1],
            "none" if headline < 0 else "after" if i > headline else "before",
            line.cjk,
        )
        if here == "kept":
            words_before += words
        found = _words(line.text, _SHORT_LINE) if words <= _SHORT_LINE else _lead_words(line.text)
        heading_line = heading_lines[i - start]
        if heading_line < 0:
            under = none
        else:
            distance = i - heading_line
            name = _UNDER_DISTANCE[distance] if distance < _LAST_BUCKET else _UNDER_DISTANCE[-1]
            if name not in unders:
                unders[name] = blocks([name])
            under = unders[name]
        owner = line.owner
        names = attributes[owner]
        key = (tags[owner], names.get("class"), names.get("id"))
        if key not in own:
            own[key] = blocks(_own_features(*key))
        parent = parents[owner]
        if parent not in upper:
            upper[parent] = blocks(_upper_features(walk, parent, body, body_class))
        yield shape, found, headings[i - start], under, own[key], upper[parent]


def shape_features(shape: Shape) -> list[str]:
    """The features of a line's shape: its kind, size, link share, qRead's decision on it (its state),
    where it sits relative to the lines qRead kept and to the headline, how much of the kept text comes
    before it, its neighbours' states and kinds, and whether it is CJK text."""
    kind, size, links, here, side, bucket, share, before, after, headline, cjk = shape
    found = [
        f"kind:{kind}",
        f"size:{size}",
        f"links:{links}",
        f"state:{here}",
        f"where:{side}:{bucket}",
        f"where:{side}:{here}",
        f"share:{here}:{share}",
        f"prev:{before[0]}:{before[1]}",
        f"next:{after[0]}:{after[1]}",
        f"headline:{headline}",
    ]
    if cjk:
        found.append("cjk")
    return found


def _body_block(reading: Reading) -> tuple[int, str]:
    """The deepest block holding at least half of qRead's kept words, and its class: where the body's
    paragraphs sit, even when each paragraph has a wrapper of its own (held-out token F1 0.937 against
    0.936 for the parent block of most kept words, and a story in per-paragraph grid rows kept whole)."""
    counts: dict[int, int] = {}
    parents = reading.walk.parents
    total = 0
    for i in reading.kept:
        line = reading.lines[i]
        total += line.words
        block = parents[line.owner] if line.owner > 0 else 0
        counts[block] = counts.get(block, 0) + line.words
    # Words summed up the tree, deepest first (a block's walk id is larger than its parent's): the first
    # block with half of them holds all its descendants' words and is the deepest such block.
    queue = [-block for block in counts]
    heapq.heapify(queue)
    while queue:
        block = -heapq.heappop(queue)
        if 2 * counts[block] >= total:
            break
        parent = parents[block]
        if parent not in counts:
            counts[parent] = 0
            heapq.heappush(queue, -parent)
        counts[parent] += counts[block]
    body = block
    return body, reading.walk.attributes[body].get("class") or ""


def _bucket(distance: int) -> str:
    if distance <= 2:
        return str(distance)
    return "3-5" if distance <= 5 else "6-15" if distance <= 15 else "16+"


# _bucket of every distance up to the last bucket's first, looked up on the hot path.
_LAST_BUCKET = 16
_BUCKETS = tuple(_bucket(distance) for distance in range(_LAST_BUCKET + 1))
_UNDER_DISTANCE = tuple(f"under_distance:{bucket}" for bucket in _BUCKETS)


def _words(text: str, count: int) -> list[str]:
    """The first ``count`` words of ``text`` the model may know; ``-`` for a line without words (figures,
    symbols), none for CJK text: its words are words, just not ones an English model saw (as ``-``, the
    feature of a line of figures, they lowered the score of every Chinese line)."""
    found = _WORD_RE.findall(text.lower())[:count]
    if found:
        return found
    return [] if CJK_RE.search(text) else ["-"]


def _lead_words(text: str) -> list[str]:
    """``_words(text[:_LEAD_CHARS], _LEAD_WORDS)``, read from the first ``_LEAD_SCAN`` characters when they
    hold more than ``_LEAD_WORDS`` words: the first ones then end before the next starts, as in the longer
    text."""
    found = _WORD_RE.findall(text[:_LEAD_SCAN].lower())
    if len(found) > _LEAD_WORDS:
        return found[:_LEAD_WORDS]
    return _words(text[:_LEAD_CHARS], _LEAD_WORDS)


def _own_features(tag: str, class_: str | None, id_: str | None) -> Sequence[str]:
    """The tag and the class and id words of the line's own block."""
    return _block_features(0, tag, class_, id_)


@functools.lru_cache(maxsize=4096)
def _block_features(level: int, tag: str, class_: str | None, id_: str | None) -> tuple[str, ...]:
    """The tag and the class and id words of a block ``level`` blocks above a line (remembered: pages of
    one site share their blocks' names)."""
    names = f"{class_ or ''} {id_ or ''}".lower()
    return (f"t{level}:{tag}", *sorted({f"c{level}:{word}" for word in _WORD_RE.findall(names)}))


def _upper_features(walk: Any, parent: int, body: int, body_class: str) -> list[str]:
    """Tags and class and id words of the two blocks above the line's block, where they sit relative to
    the body's block (steps up from the body to a block holding them; inside it, how deep), and whether
    the line's parent block has the body's class."""
    tags, attributes, parents, span = walk.tags, walk.attributes, walk.parents, walk.span
    found: list[str] = []
    element = parent
    for level in range(1, _CLASS_LEVELS):
        if element < 0:
            break
        names = attributes[element]
        found.extend(_block_features(level, tags[element], names.get("class"), names.get("id")))
        element = parents[element]
    position = span[parent][0] if parent >= 0 else 0
    steps, element = 0, body
    while steps < _LEVELS_TOLD and element > 0 and not span[element][0] <= position < span[element][1]:
        element = parents[element]
        steps += 1
    found.append(_UP[steps])
    if steps == 0:
        depth, element = 1, parent
        while depth < _LEVELS_TOLD and element > body:
            element = parents[element]
            depth += 1
        found.append(_DEPTH[depth])
    same = parent >= 0 and (attributes[parent].get("class") or "") == body_class
    found.append(_SAME_CLASS[same])
    return found


# The names of _upper_features's features of a block's place, looked up on the hot path.
_UP = tuple(f"up:{steps}" for steps in range(_LEVELS_TOLD + 1))
_DEPTH = tuple(f"depth:{depth}" for depth in range(_LEVELS_TOLD + 1))
_SAME_CLASS = ("same_class:False", "same_class:True")
