"""How an extraction is scored against ground truth, as ``shared/extraction-dev/README.md`` defines it.

Token P/R/F1 per page (white-space tokens; every non-space character for zh/ja), accuracy (F1 >= 0.9),
the seed's outcomes (accurate / extra / missed) and the shingle counts of the scrapinghub
article-extraction-benchmark (4-token shingles of ``\\w+`` tokens).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

CHARACTER_LANGUAGES = frozenset({"zh", "ja"})
_SHINGLE_TOKEN_RE = re.compile(r"\w+")
SHINGLE_SIZE = 4
ACCURATE_SHARE = 0.95  # the seed's "whole article": R (and for accurate, P) at least this
ACC_F1 = 0.9  # a page counts as correct for "acc" at this F1


@dataclass(frozen=True, slots=True)
class PageScore:
    precision: float
    recall: float
    f1: float
    shingle_precision: float
    shingle_recall: float

    @property
    def outcome(self) -> str:
        """``accurate`` (whole article, no junk), ``extra`` (whole article plus junk) or ``missed``."""
        if self.recall < ACCURATE_SHARE:
            return "missed"
        return "accurate" if self.precision >= ACCURATE_SHARE else "extra"


def tokens(text: str, lang: str) -> list[str]:
    """Scoring tokens: every non-space character for zh/ja, white-space separated strings otherwise."""
    if lang in CHARACTER_LANGUAGES:
        return [ch for ch in text if not ch.isspace()]
    return text.split()


def token_prf(predicted: str, truth: str, lang: str) -> tuple[float, float, float]:
    """Token precision, recall and F1 of ``predicted`` against ``truth``; an empty prediction scores 0."""
    pred = Counter(tokens(predicted, lang))
    gold = Counter(tokens(truth, lang))
    if not pred or not gold:
        return 0.0, 0.0, 0.0
    overlap = sum((pred & gold).values())
    if not overlap:
        return 0.0, 0.0, 0.0
    precision = overlap / sum(pred.values())
    recall = overlap / sum(gold.values())
    return precision, recall, 2 * precision * recall / (precision + recall)


def shingle_pr(predicted: str, truth: str) -> tuple[float, float]:
    """Per-page shingle precision and recall, from tp/fp/fn normalised to sum 1 (scrapinghub's metric)."""
    pred = _shingles(predicted)
    gold = _shingles(truth)
    tp = sum((pred & gold).values())
    fp = sum((pred - gold).values())
    fn = sum((gold - pred).values())
    total = tp + fp + fn
    if not total:
        return 1.0, 1.0
    tp_share, fp_share, fn_share = tp / total, fp / total, fn / total
    precision = tp_share / (tp_share + fp_share) if tp_share + fp_share else 0.0
    recall = tp_share / (tp_share + fn_share) if tp_share + fn_share else 0.0
    return precision, recall


def _shingles(text: str) -> Counter[tuple[str, ...]]:
    # Case kept, as in scrapinghub's evaluate.py (its `\w+` tokens are not lower-cased).
    words = _SHINGLE_TOKEN_RE.findall(text)
    if len(words) < SHINGLE_SIZE:
        return Counter([tuple(words)]) if words else Counter()
    return Counter(tuple(words[i : i + SHINGLE_SIZE]) for i in range(len(words) - SHINGLE_SIZE + 1))


def score_page(predicted: str, truth: str, lang: str) -> PageScore:
    precision, recall, f1 = token_prf(predicted, truth, lang)
    shingle_p, shingle_r = shingle_pr(predicted, truth)
    return PageScore(precision, recall, f1, shingle_p, shingle_r)


def shingle_f1(scores: list[PageScore]) -> float:
    """Harmonic mean of the mean shingle precision and the mean shingle recall over pages."""
    if not scores:
        return 0.0
    precision = sum(s.shingle_precision for s in scores) / len(scores)
    recall = sum(s.shingle_recall for s in scores) / len(scores)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
