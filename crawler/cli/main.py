"""The ``crawler`` command line: one sub-command per job (``extract``, ``demo``, ``temp``, ``worker``,
``articles``, ``rules check|try``; docs/cli.md).

Every error a user can cause ends as one line on stderr and an exit code, never a traceback:

* 0: done (``extract`` also exits 0 when the page has no main text; a note says so on stderr);
* 1: a fetch failed (network, timeout, HTTP error status, robots.txt, refused address, size limit), a
  site rule has errors (``rules check``, ``rules try``), ``articles`` left out a week whose file could
  not be read (the other weeks shown), ``sites forget`` was answered no, or ``temp`` stopped as its site
  was paused while it ran (its requests held) or ended without requests ``sites forget`` took,
  ``temp`` or ``sites forget`` found a Redis key of the site holding another type (named, with the fix),
  or ``status --check`` found something that needs attention;
* 2: usage or input error (bad arguments; a file that is missing, unreadable, empty, binary or too large;
  a URL that is malformed or not http/https), or stdout that cannot be written (a full disk, a file past
  ``ulimit -f``): the output is cut short;
* 1 too: Redis went away while a command ran, or held it past the socket timeout (one line: run it again
  once Redis answers), or refused its user a command or a key (ACL: one line naming it, the user and the
  fix);
* 3: ``status --check`` could not read the status (Redis unreachable, or refusing its reads);
* 130: interrupted (Ctrl-C);
* 143: terminated (SIGTERM), after the same clean stop as Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, NoReturn, TextIO, cast

from crawler.cli.parser import build_parser, folders_before_command
from crawler.cli.terminal import output_advice, running, tell
from crawler.commandline import given_folders
from crawler.config import Config
from crawler.errors import EXIT_FETCH, EXIT_USAGE, CrawlerError, HungUp, Terminated
from crawler.settings import LOG_DATEFORMAT, LOG_FORMAT
from crawler.threads import leave_the_terminal

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_HUNG_UP = 129
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def _redis_gone() -> tuple[type[BaseException], ...]:
    """Redis's connection errors once a command loaded its client, none before (it cannot have failed):
    ``crawler --help`` and the commands that use no Redis do not load it."""
    client = sys.modules.get("redis")
    return () if client is None else (client.ConnectionError, client.TimeoutError)


def _redis_refused() -> tuple[type[BaseException], ...]:
    """Redis's error replies once a command loaded its client, none before (:func:`_redis_gone`)."""
    client = sys.modules.get("redis")
    return () if client is None else (client.ResponseError,)


def _denial(exc: BaseException) -> CrawlerError | None:
    """The error of Redis refusing the user of REDIS_URL a command or key (ACL) outside the command's
    Redis (:func:`crawler.cli.crawl.redis_and_server` says those of the embedded server too); None when
    ``exc`` is another error."""
    # Imported here: the commands that use no Redis do not load it.
    from crawler.cli.crawl import denied_error  # noqa: PLC0415
    from crawler.redisio.connection import denied  # noqa: PLC0415

    if not denied(exc):
        return None
    config = Config.from_env()
    return denied_error(exc, config.redis_url, config.keys.prefix)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crawler`` console script; returns the exit code."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    # Scrapy's own handler takes SIGTERM (and Ctrl-C) while a crawl runs, and the crawl's SIGHUP
    # (crawler.worker.fetch.SignalledProcess).
    previous = signal.signal(signal.SIGTERM, _terminate)
    previous_hangup = signal.signal(signal.SIGHUP, _hang_up)
    stdout = _Stdout(sys.stdout)
    sys.stdout = cast(TextIO, stdout)
    try:
        parser = build_parser()
        given_folders(*folders_before_command(sys.argv[1:] if argv is None else argv))
        args = _parse(parser, argv, stdout)
        # The global folders are the environment's, for this command and every process it starts.
        if args.data_dir_option:
            os.environ["CRAWLER_DATA_DIR"] = args.data_dir_option
        if args.rules_dir_option:
            os.environ["CRAWLER_RULES_DIR"] = args.rules_dir_option
        given_folders(args.data_dir_option, args.rules_dir_option)
        # A command with actions (``rules``) keeps the action in ``<command>_command`` (``rules_command``).
        running(" ".join(filter(None, (args.command, getattr(args, f"{args.command}_command", None)))))
        logging.basicConfig(
            level=logging.DEBUG if args.verbose else logging.WARNING,
            format=LOG_FORMAT,
            datefmt=LOG_DATEFORMAT,
            stream=sys.stderr,
        )
        code = _handler(args.handler)(args)
        sys.stdout.flush()
        return code
    except CrawlerError as exc:
        tell("error", str(exc))
        return exc.exit_code
    except _redis_gone() as exc:
        # Redis answered as the command began (its connection is checked then) and went away meanwhile, or
        # held a command past the socket timeout. Imported here: the commands that use no Redis do not load
        # it.
        from crawler.redisio.connection import lost_while  # noqa: PLC0415

        said = lost_while("the command ran", exc)
        kept = "what it wrote before stands, each change whole; run it again once Redis answers"
        tell("error", f"{said}: {kept}")
        return EXIT_FETCH
    except _redis_refused() as exc:
        refused = _denial(exc)
        if refused is None:
            raise
        tell("error", str(refused))
        return refused.exit_code
    except Terminated:
        tell(None, "terminated (SIGTERM)")
        return EXIT_TERMINATED
    except HungUp:
        tell(None, "hung up (SIGHUP)")
        return EXIT_HUNG_UP
    except KeyboardInterrupt:
        tell(None, "interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`crawler extract ... | head`): nothing more to say, and nowhere to say it.
        _drop_stdout()
        return EXIT_OK
    except OSError as exc:
        if exc is not stdout.failure:
            raise
        # What stdout still buffers cannot be written either: it goes nowhere, not to an error at exit.
        _drop_stdout()
        advice = output_advice(
            exc,
            "the disk stdout goes to, or send the output to another disk",
            "send the output to a file system that takes it, or ask for less",
        )
        tell("error", f"cannot write the output to stdout: {exc}{advice}; the output is cut short")
        return EXIT_USAGE
    except SystemExit as exc:
        # rich's consoles meet a broken pipe the same way (stdout sent to /dev/null), then exit with 1.
        if isinstance(exc.__context__, BrokenPipeError):
            return EXIT_OK
        raise
    finally:
        sys.stdout = stdout.stream
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGHUP, previous_hangup)


class _Stdout:
    """``sys.stdout`` while a command runs, keeping the error a write to it failed with: :func:`main` tells
    that error as the output cut short, and an error of another file as what it is."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as exc:
            self.failure = exc
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            self.failure = exc
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, stdout: _Stdout
) -> argparse.Namespace:
    """The command line ``argv`` parsed by ``parser``. ``--help`` and ``--version`` end here with
    SystemExit(0), after argparse wrote stdout and took an error writing it for none: that error is
    raised instead, as a command's would be, and so is one flushing what they wrote."""
    try:
        return parser.parse_args(argv)
    except SystemExit:
        sys.stdout.flush()
        if stdout.failure is not None:
            raise stdout.failure from None
        raise


def _drop_stdout() -> None:
    """Send stdout to the null device: what it still buffers is thrown away, not written at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _terminate(signum: int, frame: FrameType | None) -> NoReturn:
    """SIGTERM: stop as on Ctrl-C (a KeyboardInterrupt in the main thread), to exit with 143."""
    raise Terminated


def _hang_up(signum: int, frame: FrameType | None) -> NoReturn:
    """SIGHUP (the terminal closed): stop as on SIGTERM, to exit with 129, writing no more to the terminal."""
    leave_the_terminal()
    raise HungUp


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    """The command's handler, ``"module:function"``, imported now (with what it uses)."""
    module, _, function = name.partition(":")
    handler: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), function)
    return handler
