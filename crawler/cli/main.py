"""The ``crawler`` command line: one sub-command per job (``extract``, ``demo``, ``temp``, ``worker``,
``articles``, ``rules check|try``; docs/cli.md).

Every error a user can cause ends as one line on stderr and an exit code, never a traceback:

* 0: done (``extract`` also exits 0 when the page has no main text; a note says so on stderr);
* 1: a fetch failed (network, timeout, HTTP error status, robots.txt, refused address, size limit), or a
  site rule has errors (``rules check``, ``rules try``);
* 2: usage or input error (bad arguments; a file that is missing, unreadable, empty, binary or too large;
  a URL that is malformed or not http/https);
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from collections.abc import Callable, Sequence

from crawler import __version__
from crawler.cli import articles, crawl, dead, extract, rules, status
from crawler.errors import CrawlerError

__all__ = ["EXIT_CODES_HELP", "build_parser", "main"]

EXIT_OK = 0
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    done (extract: also when no main text was found; a note says so on stderr)
  1    fetch failure: network, timeout, HTTP error status, robots.txt, refused address, size limit;
       rules: a rule has errors
  2    usage or input error: bad arguments; missing, unreadable, empty, binary or too large input;
       invalid or non-http(s) URL
  130  interrupted
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``crawler`` parser: global options and one sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog="crawler",
        description="A focused web crawler service: site rules, regular and temp grabs, article extraction.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is done on stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    extract.add_commands(commands, EXIT_CODES_HELP)
    crawl.add_commands(commands)
    articles.add_commands(commands)
    status.add_commands(commands)
    dead.add_commands(commands)
    rules.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crawler`` console script; returns the exit code."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except CrawlerError as exc:
        print(f"crawler {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"crawler {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`crawler extract ... | head`): nothing more to say, and nowhere to say it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
