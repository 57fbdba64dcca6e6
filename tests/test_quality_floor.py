"""The default extractor's quality on the whole development set must not regress.

The floors sit just under what qRead reaches (measured with ``bench/extraction.py``); scoring is
deterministic, so a drop below them is a real regression, never noise.
"""

from __future__ import annotations

import json

import pytest

from bench.corpus import default_corpus
from extractors import extract
from extractors.scoring import score_page

CORPUS = default_corpus()
# Reached on 2026-11-27: en 0.9527, zh 0.9684 (token F1, mean over pages; zh 0.9299 before the Chinese rules
# of that evening: a page of stamped posts gives its first post, a story ends at its comments' heading or a
# notice's and keeps its <h1> sub-headings; 0.9242 before the learned step ran on Chinese pages).
FLOORS = {"en": 0.95, "zh": 0.95}


@pytest.mark.skipif(
    not (CORPUS / "manifest.json").is_file(),
    reason=f"the development set is not at {CORPUS} (set EXTRACTION_CORPUS to its folder)",
)
def test_default_extractor_stays_above_its_quality_floor() -> None:
    pages = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))["pages"]
    scores: dict[str, list[float]] = {}
    for page in pages:
        html = (CORPUS / "html" / f"{page['id']}.html").read_text(encoding="utf-8")
        truth = (CORPUS / "truth" / f"{page['id']}.txt").read_text(encoding="utf-8")
        predicted = extract(html, url=page["url"]).text
        scores.setdefault(page["lang"], []).append(score_page(predicted, truth, page["lang"]).f1)
    means = {lang: sum(values) / len(values) for lang, values in scores.items()}
    assert set(means) == set(FLOORS)
    for lang, floor in FLOORS.items():
        assert means[lang] >= floor, f"{lang} token F1 {means[lang]:.4f} fell under its floor {floor}"
