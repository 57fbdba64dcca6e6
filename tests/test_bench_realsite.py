"""bench/realsite.py: the real-page site of bench/crawl.py --site real, on a small corpus of its own."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import lxml.html
import pytest

from bench import crawl
from bench.crawl import _stack_names, score_texts
from bench.realsite import RealSite, article_path

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The Harbour Bridge Opens | City News</title>
<style>body { font-family: Georgia; }</style>
<script>var Title = "Harbour"; if (a < b) { track('Open'); }</script></head>
<body class="Post Single"><!-- Header Menu --><nav><a href="/about/" title="About Us">About us</a></nav>
<article><h1>The Harbour Bridge Opens</h1>
<p>The NEW bridge over the harbour opened on Monday &amp; the mayor said it cost 50% less than planned.</p>
<p>Residents of McAllen walked across it; iPhone photos were everywhere &mdash; caf&eacute; owners too.</p>
</article><footer>Copyright City News</footer></body></html>
"""
TRUTH = """The Harbour Bridge Opens

The NEW bridge over the harbour opened on Monday & the mayor said it cost 50% less than planned.

Residents of McAllen walked across it; iPhone photos were everywhere — café owners too."""
FIRST = "Residents of McAllen walked across it; iPhone photos were everywhere &mdash; caf&eacute; owners too."
FIRST_TEXT = "Residents of McAllen walked across it; iPhone photos were everywhere — café owners too."
SECOND = "Engineers from Oslo checked every cable twice, and the ferry company lost half its trade."
ROOT = Path(__file__).resolve().parent.parent
MARKUP_RE = re.compile(r"<!--.*?-->|<script.*?</script>|<style.*?</style>|<[^>]*>|&\w+;", re.DOTALL)


def _corpus(tmp_path: Path) -> list[Path]:
    """Two corpora of the real site's layout: one with an English page, a Chinese one and a repost of the
    first, one with a gzip-compressed English page."""
    dev, train = tmp_path / "dev", tmp_path / "train"
    for root in (dev, train):
        (root / "html").mkdir(parents=True)
        (root / "truth").mkdir()
    (dev / "html" / "en-1.html").write_text(PAGE, encoding="utf-8")
    (dev / "truth" / "en-1.txt").write_text(TRUTH, encoding="utf-8")
    (dev / "html" / "zh-1.html").write_text("<html><body><p>中文</p></body></html>", encoding="utf-8")
    (dev / "truth" / "zh-1.txt").write_text("中文", encoding="utf-8")
    (dev / "html" / "en-3.html").write_text(PAGE, encoding="utf-8")  # a repost of en-1: left out
    (dev / "truth" / "en-3.txt").write_text(TRUTH.replace("Monday", "Tuesday"), encoding="utf-8")
    other = PAGE.replace(FIRST, SECOND).replace("harbour opened", "river closed")
    (train / "html" / "en-2.html.gz").write_bytes(gzip.compress(other.encode("utf-8")))
    second = TRUTH.replace(FIRST_TEXT, SECOND).replace("harbour opened", "river closed")
    (train / "truth" / "en-2.txt").write_text(second, encoding="utf-8")
    pages = {
        dev: [
            ("en-1", "en", "html/en-1.html"),
            ("zh-1", "zh", "html/zh-1.html"),
            ("en-3", "en", "html/en-3.html"),
        ],
        train: [("en-2", "en", "html/en-2.html.gz")],
    }
    for root, entries in pages.items():
        manifest = [
            {"id": id_, "lang": lang, "title": "Bridge", "html": html, "truth": f"truth/{id_}.txt"}
            for id_, lang, html in entries
        ]
        (root / "manifest.json").write_text(json.dumps({"pages": manifest}), encoding="utf-8")
    return [dev, train]


def test_copies_keep_markup_and_sizes_and_differ_in_words(tmp_path: Path) -> None:
    site = RealSite(120, _corpus(tmp_path), templates=True)
    assert [page.id for page in site.sources] == ["en-1", "en-2"]  # not the Chinese page, nor the repost
    assert site.repeats == {"en-3": "en-1"}
    assert site.pages == 3 and site.copies == 60
    original = PAGE.encode("utf-8")
    copies = [site.article_html(number) for number in (0, 2, 4)]  # copies 0, 1 and 2 of page en-1
    for page in copies:
        assert len(page) == len(original) == site.article_bytes(0)
        text = page.decode("utf-8")
        assert MARKUP_RE.findall(text) == MARKUP_RE.findall(PAGE)  # tags, comments, scripts, entities
        assert re.sub(r"[A-Za-z]", "x", text) == re.sub(r"[A-Za-z]", "x", PAGE)  # letters for letters
    words = [set(re.findall(r"[A-Za-z]{3,}", MARKUP_RE.sub(" ", page.decode()))) for page in copies]
    assert len(words[0] & words[1]) <= 2 and len(words[1] & words[2]) <= 2  # distinct articles
    assert RealSite(120, _corpus(tmp_path / "again"), templates=True).article_html(2) == copies[1]


def test_truth_of_a_copy_is_the_text_of_its_page(tmp_path: Path) -> None:
    site = RealSite(120, _corpus(tmp_path), templates=True)
    for number in (0, 1, 7, 119):
        root = lxml.html.document_fromstring(site.article_html(number))
        shown = str(root.xpath("string(//article)"))
        truth = site.article_text(number)
        assert shown.split() == truth.split()
        assert truth != site.article_text(number + 2)
        # Case patterns kept: Capitalised, UPPER, mixed (McAllen, iPhone).
        tokens = truth.split()
        assert tokens[0][0].isupper() and tokens[0][1:].islower()
        assert tokens[5].isupper()
        if site.source_of(number)[0].id == "en-1":
            assert re.search(r"\b[A-Z][a-z][A-Z][a-z]{4}\b", truth)
            assert re.search(r"\b[a-z][A-Z][a-z]{4}\b", truth)


def test_index_pages_list_every_article_once_with_a_pager(tmp_path: Path) -> None:
    site = RealSite(120, _corpus(tmp_path))
    listed: list[str] = []
    for page in range(1, site.pages + 1):
        root = lxml.html.document_fromstring(site.index_html(page))
        hrefs = root.xpath("//ul[@class='list']//a/@href")
        assert isinstance(hrefs, list)
        listed += dict.fromkeys(str(href) for href in hrefs)
        next_page = root.xpath("//div[@class='pager']/a[@rel='next']/@href")
        assert next_page == ([site.index_path(page + 1)] if page < site.pages else [])
    assert listed == [article_path(number) for number in range(120)]


def test_score_texts_against_the_copy_truth(tmp_path: Path) -> None:
    site = RealSite(120, _corpus(tmp_path))
    perfect = [(f"http://127.0.0.1{article_path(n)}", site.article_text(n)) for n in range(4)]
    assert score_texts(site, perfect)["f1"] == 1.0
    wrong_copy = [(f"http://127.0.0.1{article_path(n)}", site.article_text(n + 2)) for n in range(4)]
    quality = score_texts(site, [*wrong_copy, (f"http://127.0.0.1{article_path(9)}", None)])
    assert quality["scored"] == 5 and quality["empty"] == 1 and quality["f1"] < 0.5


def test_the_real_site_bench_without_its_corpora_says_so_once_before_anything(tmp_path: Path) -> None:
    """bench/crawl.py --site real in a clone without ../shared/: one message naming the missing manifests
    and where the corpora come from, nothing announced before it, exit code 2 (as bench/extraction.py's
    for a corpus it was asked for)."""
    copy = tmp_path / "clone" / "bench"
    shutil.copytree(ROOT / "bench", copy, ignore=shutil.ignore_patterns("__pycache__"))
    command = ["--site", "real", "--only", "scrapy-redis,recipe,ours", "--bloom-urls", "0"]
    done = subprocess.run(
        [sys.executable, str(copy / "crawl.py"), *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "", "nothing is announced before the corpora are checked"
    shared = tmp_path / "shared"
    for corpus in ("extraction-dev", "extraction-train"):
        assert f"{shared / corpus / 'manifest.json'}" in done.stderr, done.stderr
    assert "WCXB" in done.stderr and "bench/corpus.py" in done.stderr, done.stderr
    assert "server did not start" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("missing") == 1, done.stderr


def test_the_crawl_bench_without_py_spy_says_what_to_install_before_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/crawl.py --py-spy without py-spy beside the Python that runs it or on the PATH: one line naming
    it and the pip that installs it, exit code 2, before the site is served (it ended in a traceback, exit
    code 1, once the site was served and the first crawl started: FileNotFoundError of .venv/bin/py-spy)."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    samples = tmp_path / "samples"
    code = crawl.main(["--articles", "50", "--only", "ours", "--bloom-urls", "0", "--py-spy", str(samples)])
    said = capsys.readouterr()
    assert code == 2, said
    assert said.out == "", "nothing is announced before py-spy is looked for"
    install = f"{python} -m pip install py-spy"
    assert said.err == f"--py-spy: no py-spy in {python.parent} nor on the PATH; install it: {install}\n"
    assert not samples.exists()
    spy = tmp_path / "empty" / "py-spy"
    spy.parent.mkdir()
    spy.write_text("#!/bin/sh\n")
    spy.chmod(0o755)
    assert crawl.py_spy_program() == str(spy)


def test_the_crawl_bench_names_a_pipeline_of_one_command_once_with_its_count() -> None:
    assert _stack_names(["EVALSHA"] * 64 + ["HINCRBY", "EVALSHA"]) == "EVALSHA×64+HINCRBY+EVALSHA"
