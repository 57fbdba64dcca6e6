"""How relevant a fetched page is to a discover rule's topic, and why.

A topic is a weighted set of terms: the rule's keywords (weight 1; a keyword of several words counts as
one phrase; a Chinese keyword is found as it is written, since jieba may cut it otherwise in a sentence)
and the words that most example articles share (weight below 1, by how many of them hold it). A page's
relevance, from its title and main text:

1. its words: Latin words lower-cased with plurals folded (``batteries`` -> ``battery``), Chinese
   segmented with jieba; stopwords and one-character words left out;
2. the topic's mass in it: the weights of the topic words it holds, and of its keyword phrases and
   Chinese keywords;
3. the score: the mass's share of the page's words (at ``DENSITY_FULL`` and over, full marks) and the
   number of distinct topic terms it holds (at ``DISTINCT_FULL`` and over, full marks), weighed
   ``DENSITY_WEIGHT`` to the rest.

A page that only mentions a topic word twice in a long text scores low on both; a page about the topic
repeats its words and uses many of them. The reason (``why``) names the share and the terms found.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from crawler.commandline import counted

__all__ = ["Relevance", "Topic", "words"]

# A page's topic mass over its words at which the density half of the score is full: 4% is about one word
# in every sentence and a half, what an article about the topic has and a page that names it in passing
# (under 1%) has not.
DENSITY_FULL = 0.04
# Distinct topic terms at which the breadth half of the score is full: an article about a topic uses
# several of its words, a page on something else that mentions it uses one or two.
DISTINCT_FULL = 6
# The density's share of the score (the breadth's is the rest).
DENSITY_WEIGHT = 0.6
# A page shorter than this many words is scored as if it had them, so its share is full at 4 topic words
# (DENSITY_FULL of it): two on a short page (a box of other pages' headlines that names the topic) score
# 0.6 × 2% / 4% + 0.4 × 2 / 6 = 0.43, under the default threshold 0.5 (at 60 words, 0.63 and stored);
# three distinct ones score 0.65.
MIN_WORDS = 100
# The title's words count this many times: it says what the page is about.
TITLE_WEIGHT = 2
# Words the examples give a topic at most, and the weight of a word that every example holds (less for a
# word fewer of them hold): below a keyword's 1, the user's own words.
EXAMPLE_TERMS = 40
EXAMPLE_WEIGHT = 0.5
# The terms a reason names at most.
WHY_TERMS = 6

_LATIN = regex.compile(r"[\p{Latin}]{2,}")
_HAN_RUN = regex.compile(r"\p{Han}+")
_HAN = regex.compile(r"\p{Han}")

# English words that say nothing of a topic (the most frequent ones, and those of page chrome).
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me more
    most my myself no nor not now of off on once only or other our ours out over own same she should so
    some such than that the their theirs them then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your yours new said
    says one two three first last year years day days time like get got make made many much may might must
    news read more home page click here share comments comment login sign subscribe menu search next
    previous back top contact privacy terms cookies copyright rights reserved www http https com html
    的 了 是 在 和 与 及 也 有 就 都 而 及其 我们 他们 你们 这个 那个 一个 没有 不是 可以 因为 所以 但是
    如果 还是 已经 进行 表示 目前 其中 以及 通过 对于 这些 那些 自己 记者 报道 新闻 来源 责任编辑""".split()
)


@functools.cache
def _jieba() -> object:
    """jieba, its dictionary loaded once per process (about a second), with its log quiet."""
    import jieba  # noqa: PLC0415 - a second of loading, only where Chinese text is read

    jieba.setLogLevel(logging.WARNING)
    return jieba


def _fold(word: str) -> str:
    """``word`` with an English plural folded: ``batteries`` -> ``battery``, ``turbines`` -> ``turbine``."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The words of ``text`` a topic is matched on (see the module docstring, step 1), in order."""
    found: list[str] = []
    if _HAN.search(text) is None:
        for match in _LATIN.finditer(text.lower()):
            word = _fold(match.group())
            if word not in _STOPWORDS:
                found.append(word)
        return found
    jieba = _jieba()
    at = 0
    for run in _HAN_RUN.finditer(text):
        found.extend(words(text[at : run.start()]))
        segmented = jieba.lcut(run.group(), HMM=False)  # type: ignore[attr-defined]
        found.extend(word for word in segmented if len(word) > 1 and word not in _STOPWORDS)
        at = run.end()
    found.extend(words(text[at:]))
    return found


@dataclass(frozen=True, slots=True)
class Relevance:
    """A page's relevance to a topic: ``score`` from 0 to 1, the topic ``terms`` found with their counts,
    and ``why`` in one line."""

    score: float
    terms: tuple[tuple[str, int], ...]
    why: str


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic's terms and their weights, and its keyword phrases (tuples of words): see the module
    docstring."""

    terms: dict[str, float]
    phrases: tuple[tuple[str, ...], ...] = ()
    # Chinese keywords, found as written in the page's text.
    written: tuple[str, ...] = ()

    @classmethod
    def build(cls, keywords: Iterable[str], examples: Sequence[str] = ()) -> Topic:
        """The topic of ``keywords`` and of the texts of ``examples``."""
        terms: dict[str, float] = {}
        phrases: list[tuple[str, ...]] = []
        written: list[str] = []
        for keyword in keywords:
            if _HAN.search(keyword):
                written.append(keyword.strip())
                continue
            parts = tuple(words(keyword))
            if len(parts) == 1:
                terms[parts[0]] = 1.0
            elif parts:
                phrases.append(parts)
        # How many examples hold each word, then how often: the words most of them share are the topic's.
        held: Counter[str] = Counter()
        used: Counter[str] = Counter()
        for text in examples:
            found = words(text)
            held.update(set(found))
            used.update(found)
        ranked = sorted(held, key=lambda word: (-held[word], -used[word], word))
        for word in ranked[:EXAMPLE_TERMS]:
            if held[word] * 2 < len(examples):
                break
            terms.setdefault(word, round(EXAMPLE_WEIGHT * held[word] / len(examples), 3))
        return cls(terms=terms, phrases=tuple(dict.fromkeys(phrases)), written=tuple(dict.fromkeys(written)))

    @property
    def empty(self) -> bool:
        return not self.terms and not self.phrases and not self.written

    @property
    def summary(self) -> str:
        """What the topic holds, as a worker logs it: ``4 terms, 2 phrases and 1 Chinese keyword``."""
        parts = [counted(len(self.terms), "term"), counted(len(self.phrases), "phrase")]
        if self.written:
            parts.append(counted(len(self.written), "Chinese keyword"))
        return ", ".join(parts[:-1]) + " and " + parts[-1]

    def relevance(self, title: str | None, text: str) -> Relevance:
        """How relevant the page of ``title`` and main ``text`` is (see the module docstring)."""
        # 1. The page's words, the title's counted TITLE_WEIGHT times.
        page = words(title or "") * TITLE_WEIGHT + words(text)
        # 2. The topic's mass: its words' weights, and its phrases' (each a keyword).
        counts = Counter(word for word in page if word in self.terms)
        for phrase in self.phrases:
            found = _occurrences(page, phrase)
            if found:
                counts[" ".join(phrase)] = found
        if self.written:
            raw = f"{title or ''}\n" * TITLE_WEIGHT + text
            for keyword in self.written:
                found = raw.count(keyword)
                if found:
                    counts[keyword] = found
        mass = sum(self.terms.get(term, 1.0) * count for term, count in counts.items())
        distinct = sum(min(1.0, self.terms.get(term, 1.0) * 2) for term in counts)
        # 3. The score.
        density = mass / max(len(page), MIN_WORDS)
        # A topic of fewer terms than DISTINCT_FULL gets full marks for using them all.
        size = len(self.terms) + len(self.phrases) + len(self.written)
        breadth = distinct / min(DISTINCT_FULL, max(1, size))
        score = DENSITY_WEIGHT * min(1.0, density / DENSITY_FULL) + (1 - DENSITY_WEIGHT) * min(1.0, breadth)
        top = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:WHY_TERMS])
        if not counts:
            why = f"no topic term in {len(page)} words"
        else:
            named = ", ".join(f"{term} ×{count}" for term, count in top) + (
                ", ..." if len(counts) > len(top) else ""
            )
            of = (
                f"{len(page)} words"
                if len(page) >= MIN_WORDS
                else f"{len(page)} words, counted as {MIN_WORDS}"
            )
            why = f"topic terms are {density:.1%} of {of}, {len(counts)} distinct: {named}"
        return Relevance(score=round(score, 3), terms=top, why=why)


def _occurrences(page: Sequence[str], phrase: tuple[str, ...]) -> int:
    """How often the words of ``phrase`` follow each other in ``page``."""
    first, size = phrase[0], len(phrase)
    return sum(1 for at, word in enumerate(page) if word == first and tuple(page[at : at + size]) == phrase)
