"""Main-text extraction bench: our extractors and the peers on a corpus with ground truth.

Run from the repo root::

    ./run.sh bench [ARGS]                     # installs the peers (pip install .[bench]) first
    .venv/bin/python bench/extraction.py [ARGS]
    .venv/bin/python -m bench.extraction [ARGS]

    --corpus DIR        corpus of shared/extraction-dev's layout (default: $EXTRACTION_CORPUS, else
                        ../shared/extraction-dev; without one, the bench says where to get it and skips)
    --only a,b          run these only: our algorithms (extractors.ALGORITHMS) and peers by name
                        (trafilatura, trafilatura-fast, readability, resiliparse, justext, justext-li,
                        boilerpy3, visible-text)
    --lang en|zh        pages of one language only
    --limit N           the first N pages (after --lang), in manifest order
    --per-page FILE     JSONL of per-page results, for error analysis
    --json FILE         the summary as JSON

Every extractor gets the decoded HTML string and the page URL, nothing else (justext also gets the page
language, to pick its stoplist). Scoring follows the corpus README (``extractors.scoring``): token P/R/F1
per page (character tokens for zh/ja) averaged over pages, acc = share of pages with F1 >= 0.9, the
scrapinghub shingle F1, the outcomes accurate/extra/missed, and the wall time of the extractor call alone
(after one warm-up call; pages go through the extractors in turn, so load hits all alike), median and p95
ms per page. An exception scores the page as empty output and is counted under ``errors``. The tables
are markdown, sorted by F1; ``x traf`` is the median time over trafilatura's median in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:  # run as a script: make `bench` and `extractors` importable
    sys.path.insert(0, str(_REPO_ROOT))

from bench.corpus import CORPUS_ENV, HOW_TO_GET, default_corpus  # noqa: E402
from bench.peers import PEER_NAMES, load_peers  # noqa: E402
from crawler.commandline import pip_install  # noqa: E402
from extractors import ALGORITHMS, get_extractor  # noqa: E402
from extractors.scoring import ACC_F1, PageScore, score_page, shingle_f1  # noqa: E402

LANGUAGES = ("en", "zh")
REFERENCE = "trafilatura"  # the speed ratio column is against this extractor's median

# (html, url, lang) -> text
Runner = Callable[[str, str | None, str], str]


@dataclass(frozen=True, slots=True)
class Page:
    id: str
    url: str | None
    lang: str
    html: str
    truth: str
    domain: str | None = None


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    label: str
    ours: bool
    run: Runner


@dataclass(slots=True)
class PageResult:
    page: Page
    score: PageScore
    ms: float
    chars: int
    error: str | None


@dataclass(slots=True)
class Row:
    """One extractor's figures over a set of pages."""

    name: str
    label: str
    pages: int
    f1: float
    f1_by_lang: dict[str, float | None]
    precision: float
    recall: float
    acc: float
    shingle_f1: float
    outcomes: dict[str, int]
    median_ms: float
    p95_ms: float
    errors: int
    ratio: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def read_html(path: Path) -> str:
    """A corpus page as text: UTF-8, gzip-compressed when its name ends in ``.gz`` (extraction-train)."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def load_corpus(corpus: Path, lang: str | None, limit: int | None) -> list[Page]:
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    pages: list[Page] = []
    for entry in manifest["pages"]:
        if lang is not None and entry["lang"] != lang:
            continue
        page_id = entry["id"]
        html_path = corpus / entry.get("html", f"html/{page_id}.html")
        truth_path = corpus / entry.get("truth", f"truth/{page_id}.txt")
        pages.append(
            Page(
                id=page_id,
                url=entry.get("url"),
                lang=entry["lang"],
                html=read_html(html_path),
                truth=truth_path.read_text(encoding="utf-8", errors="replace"),
                domain=entry.get("domain"),
            )
        )
        if limit is not None and len(pages) >= limit:
            break
    return pages


def _ours(name: str) -> Runner:
    """Our algorithm ``name`` as a runner (imports its module: raises when it is missing or broken)."""
    function = get_extractor(name)

    def run(html: str, url: str | None, lang: str) -> str:
        return function(html, url=url).text

    return run


def contenders(only: set[str] | None) -> tuple[list[Contender], dict[str, str]]:
    """What to run and ``{name: reason}`` for what cannot run (module or package missing)."""
    found: list[Contender] = []
    missing: dict[str, str] = {}
    for name in ALGORITHMS:
        if only is not None and name not in only:
            continue
        try:
            run = _ours(name)
        except Exception as error:  # noqa: BLE001 - a module being written may fail in any way
            missing[name] = f"{ALGORITHMS[name]} not importable ({type(error).__name__}: {error})"
            continue
        found.append(Contender(name, f"{name} (ours)", True, run))
    peers, missing_peers = load_peers(only)
    found.extend(Contender(peer.name, peer.label, False, peer.run) for peer in peers)
    missing.update(missing_peers)
    return found, missing


def run_all(found: Sequence[Contender], pages: Sequence[Page]) -> dict[str, list[PageResult]]:
    """Every page through every extractor, interleaved so that a change in the machine's load falls on all
    of them alike: one warm-up call each, then page by page, each call timed alone, in an order that
    rotates from page to page."""
    for contender in found:
        if pages:
            with contextlib.suppress(Exception):  # the timed pass counts the error
                contender.run(pages[0].html, pages[0].url, pages[0].lang)
    results: dict[str, list[PageResult]] = {contender.name: [] for contender in found}
    for number, page in enumerate(pages):
        if number % 20 == 0:
            print(f"  page {number + 1}/{len(pages)}", file=sys.stderr, flush=True)
        gc.collect()
        shift = number % len(found) if found else 0
        for contender in [*found[shift:], *found[:shift]]:
            results[contender.name].append(_timed(contender, page))
    return results


def _timed(contender: Contender, page: Page) -> PageResult:
    error: str | None = None
    start = time.perf_counter()
    try:
        text = contender.run(page.html, page.url, page.lang)
    except Exception as exc:  # noqa: BLE001 - any failure scores as empty output
        elapsed = time.perf_counter() - start
        text, error = "", f"{type(exc).__name__}: {exc}"[:300]
    else:
        elapsed = time.perf_counter() - start
    if not isinstance(text, str):
        text = ""
    return PageResult(page, score_page(text, page.truth, page.lang), elapsed * 1000, len(text), error)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarize(contender: Contender, results: Sequence[PageResult]) -> Row:
    scores = [r.score for r in results]
    outcomes = {"accurate": 0, "extra": 0, "missed": 0}
    for score in scores:
        outcomes[score.outcome] += 1
    by_lang: dict[str, float | None] = {}
    for lang in LANGUAGES:
        f1s = [r.score.f1 for r in results if r.page.lang == lang]
        by_lang[lang] = _mean(f1s) if f1s else None
    times = [r.ms for r in results]
    return Row(
        name=contender.name,
        label=contender.label,
        pages=len(results),
        f1=_mean([s.f1 for s in scores]),
        f1_by_lang=by_lang,
        precision=_mean([s.precision for s in scores]),
        recall=_mean([s.recall for s in scores]),
        acc=_mean([1.0 if s.f1 >= ACC_F1 else 0.0 for s in scores]),
        shingle_f1=shingle_f1(scores),
        outcomes=outcomes,
        median_ms=percentile(times, 50),
        p95_ms=percentile(times, 95),
        errors=sum(1 for r in results if r.error is not None),
    )


def add_ratios(rows: list[Row]) -> None:
    reference = next((row for row in rows if row.name == REFERENCE), None)
    for row in rows:
        if reference is not None and reference.median_ms > 0:
            row.ratio = row.median_ms / reference.median_ms


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown_table(rows: Sequence[Row], lang: str | None) -> str:
    """One markdown table; ``lang`` None for all pages (with the per-language F1 columns)."""
    header = ["extractor", "all F1" if lang is None else f"{lang} F1"]
    if lang is None:
        header += [f"{code} F1" for code in LANGUAGES]
    header += ["P", "R", "acc", "shingle F1", "accurate/extra/missed", "median ms", "p95 ms"]
    header += [f"× {REFERENCE}", "errors"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in sorted(rows, key=lambda r: r.f1, reverse=True):
        cells = [row.label, _num(row.f1)]
        if lang is None:
            cells += [_num(row.f1_by_lang[code]) for code in LANGUAGES]
        cells += [_num(row.precision), _num(row.recall), _num(row.acc), _num(row.shingle_f1)]
        cells.append("/".join(str(row.outcomes[key]) for key in ("accurate", "extra", "missed")))
        cells += [_num(row.median_ms, 1), _num(row.p95_ms, 1), _num(row.ratio, 2), str(row.errors)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _row_json(row: Row) -> dict[str, Any]:
    total = row.pages or 1
    return {
        "extractor": row.name,
        "label": row.label,
        "pages": row.pages,
        "f1": row.f1,
        "f1_by_lang": row.f1_by_lang,
        "precision": row.precision,
        "recall": row.recall,
        "acc": row.acc,
        "shingle_f1": row.shingle_f1,
        "outcomes": row.outcomes,
        "outcome_shares": {key: count / total for key, count in row.outcomes.items()},
        "median_ms": row.median_ms,
        "p95_ms": row.p95_ms,
        f"ratio_to_{REFERENCE}": row.ratio,
        "errors": row.errors,
    }


def _per_page_json(name: str, result: PageResult) -> dict[str, Any]:
    score = result.score
    return {
        "id": result.page.id,
        "lang": result.page.lang,
        "extractor": name,
        "P": round(score.precision, 4),
        "R": round(score.recall, 4),
        "F1": round(score.f1, 4),
        "shingle_P": round(score.shingle_precision, 4),
        "shingle_R": round(score.shingle_recall, 4),
        "outcome": score.outcome,
        "ms": round(result.ms, 3),
        "chars": result.chars,
        "error": result.error,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/extraction.py",
        description="Score main-text extractors against a corpus with ground truth.",
    )
    parser.add_argument(
        "--corpus", type=Path, help=f"corpus directory (default: $EXTRACTION_CORPUS, else {default_corpus()})"
    )
    parser.add_argument("--only", help="comma-separated extractor names (ours and peers)")
    parser.add_argument("--lang", choices=LANGUAGES, help="pages of this language only")
    parser.add_argument("--limit", type=int, help="the first N pages only")
    parser.add_argument("--per-page", type=Path, metavar="FILE", help="write per-page results as JSONL")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the summary as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    only: set[str] | None = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = only - set(ALGORITHMS) - set(PEER_NAMES)
        if unknown:
            known = ", ".join([*ALGORITHMS, *PEER_NAMES])
            print(
                f"unknown extractor(s) {', '.join(sorted(unknown))}: expected some of {known}",
                file=sys.stderr,
            )
            return 2
    corpus = args.corpus or default_corpus()
    if not (corpus / "manifest.json").is_file():
        print(
            f"no corpus at {corpus} (expected manifest.json, html/, truth/).\n{HOW_TO_GET}", file=sys.stderr
        )
        # Asked for by name, a missing corpus is an error; the default one missing skips the bench.
        return 2 if args.corpus or os.environ.get(CORPUS_ENV) else 0
    args.corpus = corpus
    pages = load_corpus(args.corpus, args.lang, args.limit)
    if not pages:
        print("no pages selected", file=sys.stderr)
        return 2

    found, missing = contenders(only)
    langs = [lang for lang in LANGUAGES if any(page.lang == lang for page in pages)]
    print(f"corpus {args.corpus}: {len(pages)} pages ({', '.join(langs)})", file=sys.stderr)

    all_results = run_all(found, pages)

    rows = [summarize(c, all_results[c.name]) for c in found]
    add_ratios(rows)
    by_lang: dict[str, list[Row]] = {}
    for lang in langs:
        by_lang[lang] = [summarize(c, [r for r in all_results[c.name] if r.page.lang == lang]) for c in found]
        add_ratios(by_lang[lang])

    print(f"## All pages ({len(pages)})\n")
    print(markdown_table(rows, None))
    for lang in langs if len(langs) > 1 else []:  # one language only: the table above is that language's
        count = sum(1 for page in pages if page.lang == lang)
        print(f"\n## {lang} ({count} pages)\n")
        print(markdown_table(by_lang[lang], lang))
    if missing:
        print("\nNot run (missing): " + "; ".join(f"{name}: {why}" for name, why in missing.items()))
        if any(name in PEER_NAMES for name in missing):
            install = pip_install("-e '.[bench]'")
            print(f"Install the peers with `{install}` (or `./run.sh bench`).")

    if args.per_page is not None:
        with args.per_page.open("w", encoding="utf-8") as out:
            for contender in found:
                for result in all_results[contender.name]:
                    out.write(json.dumps(_per_page_json(contender.name, result), ensure_ascii=False) + "\n")
    if args.json is not None:
        summary = {
            "corpus": str(args.corpus),
            "pages": len(pages),
            "pages_by_lang": {lang: sum(1 for p in pages if p.lang == lang) for lang in langs},
            "all": [_row_json(row) for row in rows],
            "by_lang": {lang: [_row_json(row) for row in by_lang[lang]] for lang in langs},
            "missing": missing,
        }
        args.json.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
