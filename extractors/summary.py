"""Extractive summaries of article text: the seed's "summary engine", without a proprietary service.

The seed (``shared/seeds/kwb-crawler-and-qread.txt``) asks for summaries of several lengths per article. A
summary here is a few sentences of the article itself, chosen by a score and given back in their order:

1. Split the text into sentences (``split_sentences``).
2. Content terms of each sentence: lower-cased words without stop words; CJK text as character bigrams,
   since Chinese has no spaces between words and two characters are the commonest word length.
3. Score: centrality (cosine of the sentence's terms with the centroid of the terms that recur in the
   article, relative to the most central sentence), plus similarity to the title, plus a bonus for the
   lead, where news puts the key facts. Short sentences and fragments without end punctuation (captions,
   sub-headings) score less; boilerplate (bylines, datelines, credits, "Read more", copyright), the
   headline repeated in the body and the repeats of a sentence are never chosen.
4. Choose among the best-scored candidates, best first, skipping a sentence too similar to one already
   chosen; the summary keeps the original order.

Stages 1 to 3 run once per text, so ``summaries`` gives several lengths for the price of one.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from extractors.qread import HEADLINE_SIMILARITY, HEADLINE_SIZE
from extractors.text import CJK_RE, CJK_RUN_RE, cjk_share, cosine, count_words, normalize_space, terms

# A sentence is Chinese/Japanese, joined to its CJK neighbours without a space, from this share of CJK
# characters: Chinese sentences full of figures and Latin names stay above it, English quoting a name below.
CJK_SHARE = 0.3
# Shorter sentences rarely carry a fact on their own (a CJK character is about half a word).
MIN_WORDS = 6
MIN_CJK_CHARS = 10
# A boilerplate mark only condemns a sentence this short: a long one starting "记者从...获悉" is the lead.
BOILERPLATE_WORDS = 15
BOILERPLATE_CJK_CHARS = 30
# Title similarity and centrality are both cosines; the title counts half, as it names the topic but is
# often a teaser or carries the site name.
TITLE_WEIGHT = 0.5
# The first full sentence gets half a perfect centrality, falling to nothing after LEAD_SENTENCES: the
# lead holds the key facts of a news story, yet an article's best sentence can still beat it.
LEAD_WEIGHT = 0.5
LEAD_SENTENCES = 3
# Score factor of short sentences and fragments: kept as a last resort, behind every full sentence alike.
PARTIAL_FACTOR = 0.5
# Two sentences this similar say the same thing: a summary keeps the first chosen.
REDUNDANCY = 0.5
# Only this many candidates per summary sentence are compared for redundancy, so choosing stays linear.
POOL_FACTOR = 3

_PARAGRAPH_RE = re.compile(r"\n\s*\n")
# A line break between two CJK characters is a hard wrap: Chinese puts no space between words.
_WRAP_RE = re.compile(rf"(?<={CJK_RE.pattern})\s*\n\s*(?={CJK_RE.pattern})")
# Sentence ends: CJK punctuation ends a sentence whatever follows; Latin punctuation only before white space
# (never inside 3.5 or U.S.), and _latin_end checks what comes after it. The leading lookahead lets the
# scan skip other characters fast.
_END_MARK_RE = re.compile(
    r"(?=[。！？；….!?])(?:(?:[。！？；]|…{2,})+[”’」』）)》〕】\"']*"
    r"|(?P<latin>[.!?…]+)[\"'”’)\]»]*(?=\s))"
)
# What follows a CJK quote that ends in its own full stop, saying who spoke it ("“…。”老陈说。"): the
# quote and these words are one sentence. Up to 30 characters, enough for a name and a title; the verbs in
# simplified and traditional characters, but not the words that end in one of them (小说 a novel, 传说 a
# legend, 名称 a name: 称 counts only as 声称 or 宣称, 道 only after a verb, not in 知道 or 报道).
_CJK_CLOSING_QUOTES = ("”", "」", "』")
_ATTRIBUTION_RE = re.compile(
    r"[^。！？；…“”「」『』\n]{0,30}?"
    r"(?:(?:[说說问問笑写寫答喊叹嘆]|坦言)道|(?<![小传傳学學])[说說]|表示|指出|介[绍紹]|坦言|感[叹嘆]"
    r"|[声聲宣][称稱]|告[诉訴][记記]者)[。！？]"
)
_NEXT_CHAR_RE = re.compile(r"\s+(\S)")
_OPENING_QUOTES = frozenset("\"'“‘(［[«「『（")
# The word before a full stop, inner dots included ("U.S", "e.g").
_TOKEN_BEFORE_RE = re.compile(r"(?<![\w.])[\w.]+$")
# Characters looked at before a full stop for an abbreviation: the longest ones ("J.R.R", "approx") fit.
_ABBREVIATION_WINDOW = 12
_ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr Prof St Jr Sr vs etc Inc Ltd Co Corp No Nos Gen Gov Sen Rep Rev Lt Col Capt Sgt Mt Ft "
    "Fig al approx Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
# Initials and dotted abbreviations: J. Smith, J.R.R. Tolkien, U.S., e.g., a.m.
_INITIALS_RE = re.compile(r"[A-Z]|[A-Za-z](?:\.[A-Za-z])+")
# A list number or letter ("1.", "b.", "iv.") is not a sentence of its own (so neither is "Yes." or "OK.").
_LIST_MARK_RE = re.compile(r"\s*\w{1,3}")
# A full sentence ends with end punctuation; captions and sub-headings do not.
_FULL_SENTENCE_RE = re.compile(r"[.!?…。！？；][\"'”’」』）)\]》〕】»]*$")
# The terms of extractors.text.terms in text without CJK characters.
_WORD_TERM_RE = re.compile(r"[^\W_]+")
# Words too common to tell sentences apart; single letters and digits too (the "s" of "Lilly's").
_STOP_WORDS = frozenset(
    "a about above after again against all also am an and any are as at be because been before being below "
    "between both but by can could did do does doing down during each few for from further had has have "
    "having he her here hers him his how however i if in into is it its itself just me more most my no nor "
    "not now of off on once only or other our ours out over own same she should so some such than that the "
    "their theirs them then there these they this those through to too under until up very was we were what "
    "when where which while who whom why will with would you your yours said says say told according "
    "one two new like may might must shall us".split()
) | frozenset(string.ascii_lowercase + string.digits)
# Starts of credits, teasers, share bars, bylines ("By Jane Doe") and Chinese editor and source lines.
_BOILERPLATE_START_RE = re.compile(
    r"\W*(?:"
    r"(?i:(?:photos?|images?|pictures?|caption|credits?|source)\s*[:：]|advertisement|sponsored|read more"
    r"|read also|see also|related(?: \w+)?\s*:|more from|subscribe|sign up|follow us|share (?:this|on)"
    r"|click here)"
    r"|By [A-Z]\w+ [A-Z]"
    r"|责任编辑|编辑[：:]|来源[：:]|原标题|图片来源|摄影[：:\s]|扫码|点击)"
)
# A Chinese byline and nothing else: "（记者 张倩）", "本报讯（记者 王明 通讯员 李华）", not "他对记者说，…".
_CJK_BYLINE_RE = re.compile(r"\W*\w{0,5}?\W?(?:记者|通讯员)[\s\w·、：:]{0,24}\W*")
# Marks that make a short sentence boilerplate wherever they are.
_BOILERPLATE_ANYWHERE_RE = re.compile(r"(?i:copyright|all rights reserved)|©|版权所有|未经授权")
# A sentence of nothing but a date or a time is a dateline.
_DATELINE_RE = re.compile(r"[\d\s/:.,\-年月日时分]+")


@dataclass(slots=True)
class _Sentence:
    text: str
    position: int
    terms: Counter[str]
    cjk: bool


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, whose paragraphs are separated by blank lines, white space normalised.

    Latin text ends a sentence at . ! ? or an ellipsis (with the closing quotes and brackets after it)
    followed by white space and an upper-case letter, a digit, an opening quote or a CJK character, but not
    after an abbreviation (Mr., U.S., e.g., Jan., J. Smith) or a list number. CJK text ends one after 。！？；
    and ……, closing quotes and brackets included, unless the words after a closing quote say who spoke it
    ("“…。”老陈说。" is one sentence). A paragraph end always ends a sentence.
    """
    sentences: list[str] = []
    for raw in _PARAGRAPH_RE.split(text):
        paragraph = _WRAP_RE.sub("", raw) if "\n" in raw else raw
        for piece in _paragraph_sentences(paragraph):
            sentence = normalize_space(piece)
            if sentence:
                sentences.append(sentence)
    return sentences


def _paragraph_sentences(paragraph: str) -> Iterator[str]:
    start = 0
    for match in _END_MARK_RE.finditer(paragraph):
        if match["latin"] is not None and not _latin_end(paragraph, match, start):
            continue
        if match[0].endswith(_CJK_CLOSING_QUOTES) and _ATTRIBUTION_RE.match(paragraph, match.end()):
            continue
        yield paragraph[start : match.end()]
        start = match.end()
    yield paragraph[start:]


def _latin_end(paragraph: str, match: re.Match[str], start: int) -> bool:
    """Whether Latin end punctuation ends the sentence begun at ``start``."""
    following = _NEXT_CHAR_RE.match(paragraph, match.end())
    if following is None:
        return False
    after = following[1]
    if not (after.isupper() or after.isdigit() or after in _OPENING_QUOTES or CJK_RE.match(after)):
        return False
    if match["latin"] != ".":
        return True
    if _LIST_MARK_RE.fullmatch(paragraph, start, match.start()):
        return False
    window = max(start, match.start() - _ABBREVIATION_WINDOW)
    token = _TOKEN_BEFORE_RE.search(paragraph, window, match.start())
    return token is None or not (token[0] in _ABBREVIATIONS or _INITIALS_RE.fullmatch(token[0]))


def summarize(text: str, sentences: int, *, title: str | None = None) -> str:
    """At most ``sentences`` sentences of ``text``, the best by score, in their original order.

    Sentences are joined by a space, except two CJK sentences, which are joined directly. A text of no more
    than ``sentences`` sentences is returned whole; an empty one gives "". ``sentences`` below 1 is a
    ``ValueError``.
    """
    _check_length(sentences)
    return _choose(*_analyse(text, title), sentences)


def summaries(text: str, lengths: Iterable[int], *, title: str | None = None) -> dict[str, str]:
    """``summarize(text, n, title=title)`` for each ``n`` of ``lengths``, keyed by ``str(n)``.

    The text is split and scored once for all lengths.
    """
    counts = list(lengths)
    for count in counts:
        _check_length(count)
    sentences, ranked = _analyse(text, title)
    return {str(count): _choose(sentences, ranked, count) for count in counts}


def sentences_in(summary: str, text: str) -> int:
    """How many sentences ``summary`` shows, ``summary`` being one of ``text`` (its sentences, in their
    order, joined as :func:`summarize` joins them): fewer than the length asked when the others repeat
    one chosen. Counted by matching the sentences of ``text`` in turn; when ``summary`` is no summary of
    ``text`` (a body changed since), the sentences :func:`split_sentences` finds in it."""
    at = count = 0
    for sentence in split_sentences(text):
        if at == len(summary):
            break
        if summary.startswith(sentence, at):
            at += len(sentence)
            count += 1
            if summary.startswith(" ", at):
                at += 1
    return count if at == len(summary) else len(split_sentences(summary))


def _check_length(sentences: int) -> None:
    if sentences < 1:
        raise ValueError(f"a summary needs at least 1 sentence, got sentences={sentences!r}")


def _analyse(text: str, title: str | None) -> tuple[list[_Sentence], list[_Sentence]]:
    """All sentences of ``text``, and those that may be chosen, best first (stages 1 to 3)."""
    # 1. and 2. Sentences and their content terms.
    sentences = [
        _Sentence(
            sentence,
            position,
            _content_terms(sentence),
            not sentence.isascii() and cjk_share(sentence) >= CJK_SHARE,
        )
        for position, sentence in enumerate(split_sentences(text))
    ]
    # 3. Score, once per distinct sentence (a repeat is never chosen nor counted twice): centrality against
    # the terms found in more than one sentence, title, lead, penalties.
    first: dict[str, _Sentence] = {}
    for sentence in sentences:
        first.setdefault(sentence.text, sentence)
    distinct = list(first.values())
    frequency: Counter[str] = Counter()
    for sentence in distinct:
        frequency.update(sentence.terms.keys())
    centroid = {term: count for term, count in frequency.items() if count > 1}
    centrality = [
        sum(centroid.get(term, 0) for term in sentence.terms) / math.sqrt(len(sentence.terms))
        if sentence.terms
        else 0.0
        for sentence in distinct
    ]
    top_centrality = max(centrality, default=0.0) or 1.0
    title_terms = _content_terms(title) if title else Counter[str]()
    title_words = count_words(title) if title else 0
    scored: list[tuple[float, int, _Sentence]] = []
    lead = 0
    for sentence, central in zip(distinct, centrality, strict=True):
        words = count_words(sentence.text)
        similarity = cosine(sentence.terms, title_terms)
        if _boilerplate(sentence, words) or (
            similarity >= HEADLINE_SIMILARITY and words <= HEADLINE_SIZE * title_words
        ):
            continue
        score = central / top_centrality + TITLE_WEIGHT * similarity
        minimum = MIN_CJK_CHARS if sentence.cjk else MIN_WORDS
        if words >= minimum and _FULL_SENTENCE_RE.search(sentence.text):
            score += LEAD_WEIGHT * max(0.0, 1.0 - lead / LEAD_SENTENCES)
            lead += 1
        else:
            score *= PARTIAL_FACTOR
        scored.append((-score, sentence.position, sentence))
    scored.sort(key=lambda entry: entry[:2])
    return sentences, [sentence for _, _, sentence in scored]


def _content_terms(text: str) -> Counter[str]:
    """Words but stop words, and the character bigrams of CJK runs (a lone character counts alone)."""
    runs = [] if text.isascii() else CJK_RUN_RE.findall(text)
    if not runs:  # most sentences: the words of extractors.text.terms, counted once
        return Counter([word for word in _WORD_TERM_RE.findall(text.lower()) if word not in _STOP_WORDS])
    words = terms(CJK_RUN_RE.sub(" ", text))
    bag = Counter({word: count for word, count in words.items() if word not in _STOP_WORDS})
    bag.update([run[i : i + 2] for run in runs for i in range(max(1, len(run) - 1))])
    return bag


def _boilerplate(sentence: _Sentence, words: int) -> bool:
    if _DATELINE_RE.fullmatch(sentence.text):
        return True
    if words > (BOILERPLATE_CJK_CHARS if sentence.cjk else BOILERPLATE_WORDS):
        return False
    return bool(
        _BOILERPLATE_START_RE.match(sentence.text)
        or _BOILERPLATE_ANYWHERE_RE.search(sentence.text)
        or _CJK_BYLINE_RE.fullmatch(sentence.text)
    )


def _choose(sentences: list[_Sentence], ranked: list[_Sentence], count: int) -> str:
    """Stage 4: the best ``count`` candidates that repeat no chosen one, joined in their original order."""
    if len(sentences) <= count:
        chosen = sentences
    else:
        chosen = []
        for candidate in ranked[: POOL_FACTOR * count]:
            if all(cosine(candidate.terms, other.terms) < REDUNDANCY for other in chosen):
                chosen.append(candidate)
                if len(chosen) == count:
                    break
        chosen.sort(key=lambda sentence: sentence.position)
    parts: list[str] = []
    for i, sentence in enumerate(chosen):
        if i and not (sentence.cjk and chosen[i - 1].cjk):
            parts.append(" ")
        parts.append(sentence.text)
    return "".join(parts)
