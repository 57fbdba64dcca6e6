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
