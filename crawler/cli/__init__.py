"""The ``crawler`` command line (docs/cli.md): :mod:`~crawler.cli.main` parses and reports errors, and each
command group has its module: ``extract``, ``crawl`` (demo, temp, worker, schedule, run), ``articles``,
``status``, ``rules``."""

from __future__ import annotations

import signal
import sys

from crawler.commandline import command_name

# A script's background job (`crawler temp SITE &`) starts with SIGINT ignored, its shell's doing, which
# Scrapy overrides once a crawl runs: every command stops on Ctrl-C (`kill -INT`) from its start instead,
# its modules still loading, Redis starting or its job being queued, as it does later.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

try:
    from crawler.cli.main import main
except KeyboardInterrupt:
    # Ctrl-C while the command's modules load (about half a second), before main() can say it: said as
    # main() says it, with its exit code (EXIT_INTERRUPTED, not importable yet).
    sys.stderr.write(f"{command_name()}: interrupted\n")
    raise SystemExit(130) from None

__all__ = ["main"]
