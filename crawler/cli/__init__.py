"""The ``crawler`` command line (docs/cli.md): :mod:`~crawler.cli.main` parses and reports errors, and each
command group has its module: ``extract``, ``crawl`` (demo, temp, worker, schedule, run), ``articles``,
``status``, ``rules``."""

from __future__ import annotations

import sys

try:
    from crawler.cli.main import main
except KeyboardInterrupt:
    # Ctrl-C while the command's modules load (about half a second), before main() can say it: said as
    # main() says it, with its exit code (EXIT_INTERRUPTED, not importable yet).
    sys.stderr.write("crawler: interrupted\n")
    raise SystemExit(130) from None

__all__ = ["main"]
