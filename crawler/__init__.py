"""A focused web crawler service: YAML site rules, regular and temp grabs, qRead article extraction.

The command line lives in :mod:`crawler.cli` (the ``crawler`` console script); fetching one page politely
for it in :mod:`crawler.fetch`; the named exceptions every part raises in :mod:`crawler.errors`.
"""

from __future__ import annotations

__version__ = "0.1.0"
PROJECT_NAME = "focused-crawler"

__all__ = ["PROJECT_NAME", "__version__"]
