"""Fit the learned boilerplate step's model (``extractors/data/boilerplate.json``) on extraction-train.

Deterministic: the same pages give the same file. Needs scikit-learn:
``.venv/bin/python -m pip install -e '.[train]'``.

1. Read every page with qRead's stages 1 to 6 (``extractors.qread.read``) and take the candidate lines
   and their features (``extractors.boilerplate``).
2. Label each line: body text when the ground truth holds it (a line of up to three tokens: the same
   tokens in a row in the truth; a longer one: at least half its token trigrams found in the truth).
3. Keep the features seen on pages of at least ``--min-sites`` sites: a class word of one site teaches
   nothing about the next.
4. Fit a logistic regression (liblinear, L2), each page weighing the same, shared by its lines in
   proportion to the square root of their words.
5. Cross-validate by site (5 folds grouped by domain): each fold's pages are extracted with a model fitted
   on the other folds; the held-out token F1 and acc are printed beside qRead's alone and the peers'
   (``--peers``, on the same pages: ``.venv/bin/python -m pip install -e '.[bench]'``).
6. Fit on every page and write the model (``--write``), features of weight under 0.001 left out.

    .venv/bin/python bench/train_boilerplate.py                 # cross-validation only
    .venv/bin/python bench/train_boilerplate.py --write         # and write the model
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `bench` and `extractors` importable
    sys.path.insert(0, str(_REPO_ROOT))

from bench.corpus import HOW_TO_GET_TRAINING  # noqa: E402
from bench.extraction import Page, load_corpus  # noqa: E402
from bench.peers import load_peers  # noqa: E402
from crawler.commandline import pip_install  # noqa: E402
from extractors import boilerplate  # noqa: E402
from extractors.qread import Reading, read, render  # noqa: E402
from extractors.scoring import ACC_F1, token_prf, tokens  # noqa: E402

TRAIN_CORPUS = _REPO_ROOT.parent / "shared" / "extraction-train"
MODEL_PATH = _REPO_ROOT / "extractors" / "data" / boilerplate.MODEL_FILE
FOLDS = 5
# Regularisation and the sites a feature must be seen on: of C 0.03-1 and 2, 3 or 5 sites, C = 0.03 with
# 2 sites scored best in the held-out folds (token F1 0.935 against 0.918-0.934, 2026-11-25).
C = 0.03
MIN_SITES = 2
MIN_WEIGHT = 0.001
# Each page weighs the same in the fit, as in the score (a mean over pages), shared by its lines in
# proportion to the square root of their words: held-out token F1 0.9383 against 0.9370 when lines weighed
# the square root of their words alone (long pages then outweighed short ones). C was chosen at this scale.
PAGE_WEIGHT = 100.0


@dataclass(slots=True)
class Sample:
    page: Page
    reading: Reading
    chosen: list[int]
    features: list[list[str]]
    labels: list[int]

    @property
    def domain(self) -> str:
        return self.page.domain or self.page.id


def label_lines(reading: Reading, chosen: list[int], truth: str, lang: str) -> list[int]:
    """Stage 2: 1 for each chosen line the truth holds, else 0."""
    truth_tokens = tokens(truth, lang)
    joined = f" {' '.join(truth_tokens)} "
    trigrams = set(zip(truth_tokens, truth_tokens[1:], truth_tokens[2:], strict=False))
    labels = []
    for i in chosen:
        found = tokens(reading.lines[i].text, lang)
        if len(found) <= 3:
            labels.append(int(bool(found) and f" {' '.join(found)} " in joined))
        else:
            grams = list(zip(found, found[1:], found[2:], strict=False))
            labels.append(int(sum(gram in trigrams for gram in grams) >= 0.5 * len(grams)))
    return labels


def load(corpus: Path, limit: int | None) -> list[Sample]:
    """Stage 1 and 2 for every page of ``corpus`` qRead keeps something of."""
    samples = []
    for page in load_corpus(corpus, None, limit):
        reading = read(page.html)
        if not isinstance(reading, Reading):
            continue
        chosen = boilerplate.candidates(reading)
        features = boilerplate.line_features(reading, chosen) if chosen else []
        labels = label_lines(reading, chosen, page.truth, page.lang)
        samples.append(Sample(page, reading, chosen, features, labels))
    return samples


def fit(samples: list[Sample], c: float, min_sites: int) -> boilerplate.Model:
    """Stages 3 and 4 on ``samples``."""
    from scipy.sparse import csr_matrix  # noqa: PLC0415 - training only
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415 - training only

    sites: dict[str, set[str]] = {}
    for sample in samples:
        for found in sample.features:
            for feature in found:
                sites.setdefault(feature, set()).add(sample.domain)
    vocabulary = sorted(feature for feature, where in sites.items() if len(where) >= min_sites)
    column = {feature: i for i, feature in enumerate(vocabulary)}
    rows: list[int] = []
    cols: list[int] = []
    labels: list[int] = []
    weights: list[float] = []
    for sample in samples:
        page_total = sum(math.sqrt(max(1, sample.reading.lines[i].words)) for i in sample.chosen) or 1.0
        for index, found, label in zip(sample.chosen, sample.features, sample.labels, strict=True):
            row = len(labels)
            for feature in set(found):
                if feature in column:
                    rows.append(row)
                    cols.append(column[feature])
            labels.append(label)
            weights.append(PAGE_WEIGHT * math.sqrt(max(1, sample.reading.lines[index].words)) / page_total)
    matrix = csr_matrix(([1.0] * len(rows), (rows, cols)), shape=(len(labels), len(vocabulary)))
    model = LogisticRegression(C=c, solver="liblinear", max_iter=1000)
    model.fit(matrix, labels, sample_weight=weights)
    coefficients = model.coef_[0]
    kept = {
        feature: round(float(coefficients[i]), 4)
        for feature, i in column.items()
        if abs(coefficients[i]) >= MIN_WEIGHT
    }
    return boilerplate.Model(round(float(model.intercept_[0]), 4), kept)


def text_of(sample: Sample, model: boilerplate.Model | None) -> str:
    if model is None or not sample.chosen:
        return render(sample.reading, sample.reading.kept)
    logits = [model.logit(found) for found in sample.features]
    return render(sample.reading, boilerplate.choose(sample.reading, sample.chosen, logits))


def folds_of(samples: list[Sample]) -> list[int]:
    """Stage 5: a fold per domain, domains dealt to the folds by size so the folds are alike."""
    sizes = Counter(sample.domain for sample in samples)
    fold_sizes = [0] * FOLDS
    fold_of: dict[str, int] = {}
    for domain, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        fold = min(range(FOLDS), key=lambda f: (fold_sizes[f], f))
        fold_of[domain] = fold
        fold_sizes[fold] += size
    return [fold_of[sample.domain] for sample in samples]


def score(samples: list[Sample], texts: list[str]) -> tuple[float, float]:
    f1s = [token_prf(text, s.page.truth, s.page.lang)[2] for s, text in zip(samples, texts, strict=True)]
    return sum(f1s) / len(f1s), sum(f >= ACC_F1 for f in f1s) / len(f1s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=TRAIN_CORPUS)
    parser.add_argument("--c", type=float, default=C)
    parser.add_argument("--min-sites", type=int, default=MIN_SITES)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--write", action="store_true", help=f"write the model to {MODEL_PATH}")
    parser.add_argument(
        "--peers", default="trafilatura,readability", help="peers scored on the same pages ('' for none)"
    )
    args = parser.parse_args(argv)
    # What is missing, the install first (what a user does before anything else), then the corpus.
    absent: list[str] = []
    try:
        import sklearn  # noqa: F401, PLC0415 - only to say what is missing before the long part
    except ImportError:
        install = pip_install("-e '.[train]'")
        absent.append(
            f"bench/train_boilerplate.py needs scikit-learn, in the project's train extra: {install}"
        )
    if not (args.corpus / "manifest.json").is_file():
        absent.append(
            f"no training corpus at {args.corpus} (expected manifest.json, html/, truth/).\n"
            + HOW_TO_GET_TRAINING
        )
    if absent:
        print("\n".join(absent), file=sys.stderr)
        return 2
    samples = load(args.corpus, args.limit)
    print(f"{len(samples)} pages, {sum(len(s.chosen) for s in samples)} candidate lines", flush=True)
    folds = folds_of(samples)
    held_out: list[str] = [""] * len(samples)
    for fold in range(FOLDS):
        train = [s for s, f in zip(samples, folds, strict=True) if f != fold]
        model = fit(train, args.c, args.min_sites)
        for i, (sample, f) in enumerate(zip(samples, folds, strict=True)):
            if f == fold:
                held_out[i] = text_of(sample, model)
    base_f1, base_acc = score(samples, [text_of(s, None) for s in samples])
    f1, acc = score(samples, held_out)
    print("| extractor | token F1 | acc |\n|---|---:|---:|")
    print(f"| qRead alone | {base_f1:.3f} | {base_acc:.3f} |")
    print(f"| qRead + learned step, held-out folds | {f1:.3f} | {acc:.3f} |")
    peers, missing = load_peers({name for name in args.peers.split(",") if name})
    for peer in peers:
        texts = []
        for sample in samples:
            try:
                texts.append(peer.run(sample.page.html, sample.page.url, sample.page.lang))
            except Exception:  # noqa: BLE001 - a peer's failure on a page scores that page 0
                texts.append("")
        peer_f1, peer_acc = score(samples, texts)
        print(f"| {peer.label} | {peer_f1:.3f} | {peer_acc:.3f} |")
    for name, reason in missing.items():
        print(f"not run: {name}: {reason}")
    if args.write:
        model = fit(samples, args.c, args.min_sites)
        MODEL_PATH.parent.mkdir(exist_ok=True)
        MODEL_PATH.write_text(json.dumps(model.to_json(), indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH}: {len(model.weights)} features")
    return 0


if __name__ == "__main__":
    sys.exit(main())
