"""Without their corpus, the extraction bench and the training script say where to get it, and fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("script", "missing", "names"),
    [
        ("bench/extraction.py", "no corpus at", "The extraction development set is not in this repository"),
        ("bench/train_boilerplate.py", "no training corpus at", "The extraction training set is not in this"),
    ],
)
def test_a_missing_corpus_is_named_with_where_to_get_it(
    tmp_path: Path, script: str, missing: str, names: str
) -> None:
    done = subprocess.run(
        [sys.executable, script, "--corpus", str(tmp_path / "nowhere")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{missing} {tmp_path / 'nowhere'} (expected manifest.json, html/, truth/)" in done.stderr
    assert names in done.stderr
    assert "Murrough-Foley/web-content-extraction-benchmark" in done.stderr
    assert "--corpus DIR" in done.stderr
    assert "Traceback" not in done.stderr


def _train(corpus: Path, sklearn: str) -> subprocess.CompletedProcess[str]:
    """bench/train_boilerplate.py run with ``--corpus corpus``, scikit-learn ``installed`` (an empty module
    in its place) or ``missing`` (its import refused), whatever this environment holds."""
    module = "types.ModuleType('sklearn')" if sklearn == "installed" else "None"
    shim = (
        f"import runpy, sys, types; sys.modules['sklearn'] = {module}; sys.argv = sys.argv[1:];"
        " runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", shim, "bench/train_boilerplate.py", "--corpus", str(corpus)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_training_names_the_missing_install_first_then_the_missing_corpus(tmp_path: Path) -> None:
    """The install is named with the pip of the Python that runs the script (./run.sh's .venv/bin/python,
    relative to the checkout), not `pip install`, which may install into another Python."""
    python = Path(sys.executable)
    named = python.relative_to(REPO) if python.is_relative_to(REPO) else python
    install = (
        "bench/train_boilerplate.py needs scikit-learn, in the project's train extra:"
        f" {named} -m pip install -e '.[train]'"
    )
    nowhere = tmp_path / "nowhere"
    both = _train(nowhere, "missing")
    assert both.returncode == 2, both.stderr
    assert both.stderr.startswith(install + "\n"), both.stderr
    assert f"no training corpus at {nowhere}" in both.stderr and "Traceback" not in both.stderr
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "manifest.json").write_text("[]", encoding="utf-8")
    install_only = _train(tmp_path / "corpus", "missing")
    assert (install_only.returncode, install_only.stderr) == (2, install + "\n")
    corpus_only = _train(nowhere, "installed")
    assert corpus_only.returncode == 2, corpus_only.stderr
    assert corpus_only.stderr.startswith(f"no training corpus at {nowhere}"), corpus_only.stderr
    assert "scikit-learn" not in corpus_only.stderr
