"""Main-text extraction algorithms: a flat library with no Scrapy import.

Every algorithm has the same shape, ``extract(html, *, url=None, title=None, explain=False) -> Extraction``
(``explain`` also measures every block's title similarity, which the choice itself may not need); this
module picks one by name::

    from extractors import extract
    result = extract(html, algo="qread")  # qRead alone; the default adds the learned step
    print(result.text)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol

from extractors.model import Block, Extraction

__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHM", "Block", "Extraction", "UnknownAlgorithmError", "extract"]


class Extractor(Protocol):
    def __call__(
        self, html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
    ) -> Extraction: ...


# name -> "module:function"; modules are imported on first use so one algorithm's cost is not paid by all.
ALGORITHMS: dict[str, str] = {
    "qread": "extractors.qread:extract",
    "qread-learned": "extractors.qread:extract_learned",
    "qread-paper": "extractors.qread_paper:extract_paper",
    "density": "extractors.density:extract",
    "cedp": "extractors.cedp:extract",
}
DEFAULT_ALGORITHM = "qread-learned"


class UnknownAlgorithmError(ValueError):
    """An algorithm name that is not in ``ALGORITHMS``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown extraction algorithm {name!r}: expected one of {', '.join(ALGORITHMS)}")


def get_extractor(algo: str = DEFAULT_ALGORITHM) -> Extractor:
    """The ``extract`` function of the algorithm named ``algo``."""
    target = ALGORITHMS.get(algo)
    if target is None:
        raise UnknownAlgorithmError(algo)
    module_name, function_name = target.split(":")
    function: Callable[..., Extraction] = getattr(importlib.import_module(module_name), function_name)
    return function


def extract(
    html: str,
    *,
    url: str | None = None,
    title: str | None = None,
    algo: str = DEFAULT_ALGORITHM,
    explain: bool = False,
) -> Extraction:
    """Main text of ``html`` by the algorithm named ``algo`` (``qread-learned`` unless told otherwise)."""
    return get_extractor(algo)(html, url=url, title=title, explain=explain)
