"""Where the extraction development set is, and how to get it when it is not there.

The set (219 pages with ground-truth main text) is not in this repository: it stays a measurement set,
and its pages belong to their sources. ``EXTRACTION_CORPUS`` names its folder; the default is
``../shared/extraction-dev`` beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CORPUS_ENV", "HOW_TO_GET", "HOW_TO_GET_TRAINING", "default_corpus"]

CORPUS_ENV = "EXTRACTION_CORPUS"

HOW_TO_GET = """\
The extraction development set is not in this repository. Build one of the same layout from its two
public sources (or use any folder of that layout) and give it with --corpus DIR or EXTRACTION_CORPUS:
  1. WCXB v1.0, https://github.com/Murrough-Foley/web-content-extraction-benchmark (CC-BY-4.0,
     attribution: Murrough Foley, WCXB), commit c039d5ee9f5a: dev/html/*.html.gz with the
     ground_truth.main_content of dev/ground-truth/*.json;
  2. Chinese Web Content Extraction Dataset,
     https://github.com/immortal-autumn/Chinese-Web-Content-Extraction-Dataset (MIT, (c) 2022 Elwin),
     commit 99d0ef08419109: original/*.html with cleaned/*.txt.
Layout: html/<id>.html (UTF-8), truth/<id>.txt, manifest.json {"pages": [{"id", "url", "lang", ...}]}
(docs/extraction.md)."""


HOW_TO_GET_TRAINING = """\
The extraction training set is not in this repository either. Build it from WCXB v1.0,
https://github.com/Murrough-Foley/web-content-extraction-benchmark (CC-BY-4.0, attribution: Murrough
Foley, WCXB), commit c039d5ee9f5a: every page of the dev split whose page_type is article, less the pages
of the development set and those without ground truth, in the development set's layout (html/<id>.html
or html/<id>.html.gz), and give it with --corpus DIR (docs/extraction.md)."""


def default_corpus() -> Path:
    """``$EXTRACTION_CORPUS``, else ``../shared/extraction-dev`` beside the checkout."""
    configured = os.environ.get(CORPUS_ENV, "").strip()
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[2] / "shared" / "extraction-dev"
