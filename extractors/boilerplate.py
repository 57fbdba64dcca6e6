"""The learned boilerplate step: a linear model over the lines around qRead's article block.

qRead (``extractors/qread.py``, stages 1 to 6) finds the core and the article block by density and
markup; what it keeps around the core still holds related-story feeds, bios, comments and calls to action,
and it misses body lines the block boundary cut off. As the density-filter seed suggests, a classifier over
blocks decides what hand rules cannot:

1. Candidates: the lines from ``WINDOW`` lines before qRead's first kept line to ``WINDOW`` after its
   last, less those qRead found never to be text (link lists, the headline, captions, repeats) and any
   headline or caption line.
2. Features of each line, all binary (:func:`line_features`): the tag and the class and id words of its
   block and of the two blocks above it, its size, link share and kind, qRead's decision on it and where
   it sits relative to the lines qRead kept and to the headline, the words of the sub-heading it follows,
   its first words (all of them for a short line), and its neighbours' kinds and decisions.
3. Score: a logistic model whose weights ``bench/train_boilerplate.py`` fits on the extraction training
   set (``data/boilerplate.json``); a feature the training never saw weighs nothing.
4. Choice: the run of consecutive candidates with the largest sum of score times the square root of the
   line's words (an article is one run: boilerplate around it costs, body lines pay).

The model is read once per process; without its file the step keeps qRead's choice.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from importlib import resources
from itertools import repeat
from typing import Any, TypeVar

from extractors.qread import NOT_TEXT_TAGS, Reading

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
_HEADING_WORDS = 4
# A line of up to this many words is described by all its words, a longer one by its first few.
_SHORT_LINE = 8
_LEAD_WORDS = 3
# Enough characters for the first few words of a long line (longer words are not words of the model).
_LEAD_CHARS = 80


class Model:
    """A logistic model over named binary features: ``bias`` plus the weights of the features present."""

    __slots__ = ("bias", "weights")

    def __init__(self, bias: float, weights: dict[str, float]) -> None:
        self.bias = bias
        self.weights = weights

    def logit(self, features: Sequence[str]) -> float:
        return self.bias + self.weigh(features)

    def weigh(self, features: Sequence[str]) -> float:
        """The sum of the weights of ``features``, without the bias."""
        return sum(map(self.weights.get, features, repeat(0.0, len(features))))

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


def candidates(reading: Reading) -> list[int]:
    """Stage 1: the lines the step decides on, in document order."""
    if not reading.kept:
        return []
    low = max(0, min(reading.kept) - WINDOW)
    high = min(len(reading.lines), max(reading.kept) + WINDOW + 1)
    hard, lines = reading.hard, reading.lines
    return [i for i in range(low, high) if i not in hard and lines[i].tag not in NOT_TEXT_TAGS]


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
    return [found + own + upper for found, own, upper in _described(reading, chosen, list)]


def line_logits(reading: Reading, chosen: list[int], model: Model) -> list[float]:
    """Stages 2 and 3: ``model.logit(line_features(...)[n])`` of each line of ``chosen``, the features of
    its block and of the blocks above weighed once per distinct block."""
    return [
        model.logit(found) + own + upper for found, own, upper in _described(reading, chosen, model.weigh)
    ]


def _described(
    reading: Reading, chosen: list[int], blocks: Callable[[list[str]], T]
) -> Iterator[tuple[list[str], T, T]]:
    """For each line of ``chosen``: its own features, then ``blocks`` of the features of its block and of
    those of the blocks above it, each computed once per distinct block (their tag and names; the parent)."""
    walk = reading.walk
    body, body_class = _body_block(reading)
    own: dict[tuple[str, str], T] = {}
    upper: dict[int, T] = {}
    for found, owner in _line_parts(reading, chosen):
        block = walk.blocks[owner]
        key = (block.tag, _names(block))
        if key not in own:
            own[key] = blocks(_own_features(*key))
        parent = walk.parents[owner]
        if parent not in upper:
            upper[parent] = blocks(_upper_features(walk, parent, body, body_class))
        yield found, own[key], upper[parent]


def _line_parts(reading: Reading, chosen: list[int]) -> Iterator[tuple[list[str], int]]:
    """The features of each line of ``chosen`` but those of its blocks, and its block (walk id)."""
    lines, kinds, kept = reading.lines, reading.kinds, reading.kept
    if not chosen:
        return
    first_kept, last_kept = min(kept), max(kept)
    in_block = set(reading.in_block)
    kept_words = sum(lines[i].words for i in kept) or 1
    headline = next((i for i, line in enumerate(lines) if line.tag == "h1"), -1)
    # The sub-heading each line follows (any heading line, a candidate or not; the headline ends it).
    heading: list[str] = []
    heading_line = -1
    headings = {}
    for i in range(max(0, chosen[0] - WINDOW), chosen[-1] + 1):
        tag = lines[i].tag
        if tag == "h1":
            heading, heading_line = [], i
        headings[i] = (heading, heading_line)
        if tag in _HEADING_TAGS:
            heading, heading_line = _words(lines[i].text, _HEADING_WORDS), i
    # Each line's state (kept by qRead, in its block, out of it) with its kind, from the line before the
    # first candidate to the one after the last.
    low, high = chosen[0] - 1, chosen[-1] + 2
    states = {
        i: ("kept" if i in kept else "block" if i in in_block else "out", kinds[i])
        for i in range(max(0, low), min(len(lines), high))
    }
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
        text = line.text
        here, kind = states[i]
        before, after = states.get(i - 1, ("none", 0)), states.get(i + 1, ("none", 0))
        found = [
            f"kind:{kind}",
            f"size:{min(words.bit_length(), 9)}",
            f"links:{0 if share == 0 else 1 if share < 0.34 else 2 if share <= 0.67 else 3}",
            f"state:{here}",
            f"where:{side}:{_bucket(distance)}",
            f"where:{side}:{here}",
            f"share:{here}:{min(9, 10 * words_before // kept_words)}",
            f"prev:{before[0]}:{before[1]}",
            f"next:{after[0]}:{after[1]}",
            f"headline:{'none' if headline < 0 else 'after' if i > headline else 'before'}",
        ]
        if here == "kept":
            words_before += words
        if line.cjk:
            found.append("cjk")
        if words > _SHORT_LINE:
            found.extend([f"word:{word}" for word in _words(text[:_LEAD_CHARS], _LEAD_WORDS)])
        else:
            found.extend([f"word:{word}" for word in _words(text, _SHORT_LINE)])
        heading, heading_line = headings[i]
        if heading:
            found.extend([f"under:{word}" for word in heading])
            found.append(f"under_distance:{_bucket(i - heading_line)}")
        yield found, line.owner


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
        while block >= 0:
            counts[block] = counts.get(block, 0) + line.words
            block = parents[block]
    # The deepest block with at least half of the kept words (walk ids grow with depth along a chain).
    body = max(block for block, words in counts.items() if 2 * words >= total)
    return body, reading.walk.blocks[body].get("class") or ""


def _bucket(distance: int) -> str:
    if distance <= 2:
        return str(distance)
    return "3-5" if distance <= 5 else "6-15" if distance <= 15 else "16+"


def _words(text: str, count: int) -> list[str]:
    return _WORD_RE.findall(text.lower())[:count] or ["-"]


def _names(block: Any) -> str:
    return f"{block.get('class') or ''} {block.get('id') or ''}".lower()


def _own_features(tag: str, names: str) -> list[str]:
    """The tag and the class and id words of the line's own block."""
    return [f"t0:{tag}", *sorted({f"c0:{word}" for word in _WORD_RE.findall(names)})]


def _upper_features(walk: Any, parent: int, body: int, body_class: str) -> list[str]:
    """Tags and class and id words of the two blocks above the line's block, where they sit relative to
    the body's block (steps up from the body to a block holding them; inside it, how deep), and whether
    the line's parent block has the body's class."""
    found = []
    element = parent
    for level in range(1, _CLASS_LEVELS):
        if element < 0:
            break
        block = walk.blocks[element]
        found.append(f"t{level}:{block.tag}")
        found.extend(sorted({f"c{level}:{word}" for word in _WORD_RE.findall(_names(block))}))
        element = walk.parents[element]
    position = walk.span[parent][0] if parent >= 0 else 0
    steps, element = 0, body
    while element > 0 and not walk.span[element][0] <= position < walk.span[element][1]:
        element = walk.parents[element]
        steps += 1
    found.append(f"up:{min(steps, 4)}")
    if steps == 0:
        depth, element = 1, parent
        while element > body:
            element = walk.parents[element]
            depth += 1
        found.append(f"depth:{min(depth, 4)}")
    same = parent >= 0 and (walk.blocks[parent].get("class") or "") == body_class
    found.append(f"same_class:{same}")
    return found
