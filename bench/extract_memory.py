"""Peak memory of `crawler extract` on one huge page, each run in a fresh process.

    .venv/bin/python bench/extract_memory.py [--mb 21] [--only qread-learned,qread-paper]

Writes two generated article pages of about --mb MB to a temporary folder: one in ASCII, one with
typographic punctuation (a dash and curly quotes in every paragraph: Python then holds the text in two
bytes a character, as on most real pages). The article is tens of thousands of paragraphs, then a
sidebar of related links and a comment section. Runs `crawler extract PAGE --algo NAME` (and, for the
default algorithm, with `--explain`) to /dev/null and prints each run's peak RSS and wall time.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extractors import ALGORITHMS, DEFAULT_ALGORITHM  # noqa: E402

WORDS = (
    "the harbour bridge reopened on saturday morning after three months of repairs engineers replaced every"
    " expansion joint on the main span and cyclists get a wider lane on the northern side city council said"
    " traffic"
).split()


def page(size: int, typographic: bool) -> str:
    """An article page of about ``size`` characters: 80% article, 10% related links, 10% comments."""
    rng = random.Random(7)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."

    closing = " text — “quoted”." if typographic else " text."
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        "<title>Harbour bridge reopens after three months of repairs</title>",
        "<script>" + "var x = 1;" * 2000 + "</script><style>body{margin:0}</style></head><body>",
        '<nav class="menu"><ul>',
        *(f'<li><a href="/s/{n}">Section {n}</a></li>' for n in range(200)),
        '</ul></nav><div class="wrap"><article><h1>Harbour bridge reopens after three months of repairs</h1>',
    ]
    length = sum(map(len, parts))

    def add_until(share: float, make: Callable[[int], str]) -> None:
        nonlocal length
        while length < share * size:
            part = make(len(parts))
            parts.append(part)
            length += len(part)

    add_until(
        0.8,
        lambda n: (
            f'<p class="para">{" ".join(sentence(rng.randint(8, 20)) for _ in range(5))}'
            f' <a href="/x/{n}">link {n}</a> <b>bold</b>{closing}</p>\n'
        ),
    )
    parts.append('</article><aside class="sidebar">')
    add_until(0.9, lambda n: f'<div class="related"><a href="/r/{n}">{sentence(6)}</a></div>\n')
    parts.append('</aside><section class="comments">')
    add_until(
        1.0,
        lambda n: f'<div class="comment"><span class="author">user{n}</span><p>{sentence(12)}</p></div>\n',
    )
    parts.append("</section></div><footer>About us | Privacy</footer></body></html>")
    return "".join(parts)


def peak(arguments: list[str]) -> tuple[float, float]:
    """Peak RSS (MB) and wall time (s) of ``crawler ARGUMENTS`` in a fresh process, output to /dev/null."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "crawler.cli", *arguments], stdout=sink)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"crawler {' '.join(arguments)} exited with {process.returncode}")
    return usage.ru_maxrss / 1024, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=21.0, help="size of each page in MB (default 21)")
    parser.add_argument("--only", default=",".join(ALGORITHMS), help="comma-separated algorithm names")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ALGORITHMS))
    if unknown:
        parser.error(
            f"--only: unknown algorithm {', '.join(unknown)} (expected some of {', '.join(ALGORITHMS)})"
        )
    size = int(args.mb * 1024 * 1024)
    with tempfile.TemporaryDirectory(prefix="extract-memory-") as folder:
        print("| page | command | peak RSS | seconds |")
        print("|---|---|---:|---:|")
        for typographic in (False, True):
            path = Path(folder) / ("typographic.html" if typographic else "ascii.html")
            path.write_text(page(size, typographic), encoding="utf-8")
            label = f"{path.stat().st_size / 2**20:.1f} MB, {'typographic' if typographic else 'ASCII'}"
            runs = [["--algo", name] for name in names]
            if DEFAULT_ALGORITHM in names:
                runs.append(["--algo", DEFAULT_ALGORITHM, "--explain"])
            for options in runs:
                rss, seconds = peak(["extract", str(path), *options])
                print(
                    f"| {label} | `crawler extract PAGE {' '.join(options)}` | {rss:.0f} MB | {seconds:.1f} |"
                )


if __name__ == "__main__":
    main()
