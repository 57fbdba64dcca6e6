"""The ``crawler`` command line (docs/cli.md): :mod:`~crawler.cli.main` parses and reports errors, and each
command group has its module: ``extract``, ``crawl`` (demo, temp, worker, schedule, run), ``articles``,
``status``, ``rules``."""

from __future__ import annotations

from crawler.cli.main import main

__all__ = ["main"]
