"""The ``crawler`` command's parser: every command and option, built without importing what the commands
use (Scrapy, Redis, lxml, rich), so ``crawler --help`` and a usage error answer at once. Each command's
handler is named ``"module:function"`` and imported when the command runs."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import re
import shlex
import textwrap
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from crawler import __version__
from crawler.cli.options import Age, add_fetch_options, add_set_option, non_negative_int, port_number
from crawler.cli.terminal import running
from crawler.commandline import command_name, did_you_mean, given_folder, suggest
from crawler.demo import DEMO_PORT
from extractors import ALGORITHMS, DEFAULT_ALGORITHM

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_BLOCKS",
    "EXIT_CODES_HELP",
    "RULES_EXIT_CODES_HELP",
    "build_parser",
    "folders_before_command",
]

EXIT_CODES_HELP = """\
exit codes:
  0    done (extract: also when no main text was found; a note says so on stderr)
  1    fetch failure: network, timeout, HTTP error status, robots.txt, refused address, size limit;
       rules: a rule has errors; articles: a week's file could not be read (the other weeks shown);
       sites forget: its question answered no; temp: its site paused while it ran (requests held),
       or forgotten (requests taken unfetched); temp, sites forget: a Redis key of the site holds
       another type (named, with the fix); status --check: something needs attention
  2    usage or input error: bad arguments; missing, unreadable, empty, binary or too large input;
       invalid or non-http(s) URL
  3    status --check: the status could not be read (Redis unreachable, or refusing its reads)
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM)
"""

RULES_EXIT_CODES_HELP = """\
exit codes:
  0    done: every rule is valid (check); the page was read and shown (try); the rule was written and
       checked (new)
  1    a rule has errors (each printed on its own line); try, new: the page could not be fetched
       (network, timeout, HTTP error status, robots.txt, refused address, size limit); try: a page the
       rule's feeds, sitemaps or api.url names is no feed, sitemap or JSON; new: the page is neither an
       HTML page nor a feed, or has no links that look like articles' (no file is written)
  2    usage or input error: bad arguments; a PATH, rule or page file that does not exist or cannot be
       read; an invalid or non-http(s) URL; new: rules/SITE.yaml exists (--force replaces it)
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM)
"""
# `extract --explain`: blocks shown unless --max-blocks says otherwise.
DEFAULT_MAX_BLOCKS = 200
# `articles list|search`, `dead list`: articles, dead letters shown unless --limit says otherwise.
DEFAULT_LIMIT = 20
# How `articles export --fields` names one of the rule's fields, which the document's `fields` holds.
NESTED_FIELD = "fields."
# A row of an epilog's exit codes' table: `  1    text`, the code indented, its text after spaces.
_TABLE_ROW_RE = re.compile(r"(?P<head> +\d+ +)(?P<text>\S.*)")
_RELATIVE_RE = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


# The options of ``crawler`` itself, given before the command, and what each takes.
_GLOBAL_OPTIONS = {"--data-dir": " DIR", "--rules-dir": " DIR", "--verbose": "", "-v": ""}


def _global_option(word: str) -> str | None:
    """The option of ``crawler`` itself that ``word`` (up to an ``=``) names: its whole name, or a prefix
    of it that argparse takes for it before the command (``--data``, ``--verb``; one that ``--version``
    shares is ambiguous there); None for any other word."""
    option = word.partition("=")[0]
    if option in _GLOBAL_OPTIONS:
        return option
    if len(option) <= 2 or not option.startswith("--"):
        return None
    named = [name for name in (*_GLOBAL_OPTIONS, "--version") if name.startswith(option)]
    return named[0] if len(named) == 1 and named[0] in _GLOBAL_OPTIONS else None


def folders_before_command(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """The ``--data-dir`` and ``--rules-dir`` given before the command in ``argv``, read before the parser
    runs, so that the commands its usage errors suggest repeat them; as the parser reads them, a prefix
    of either names it (``--data DIR``: no other option of ``crawler`` starts ``--d`` or ``--r``)."""
    found: dict[str, str | None] = {"--data-dir": None, "--rules-dir": None}
    words = iter(argv)
    for word in words:
        option, equals, value = word.partition("=")
        named = [name for name in found if len(option) > 2 and name.startswith(option)]
        if named:
            found[named[0]] = value if equals else next(words, None)
        elif not word.startswith("-"):
            break
    return found["--data-dir"], found["--rules-dir"]


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Wraps an epilog's text to the terminal as argparse wraps the options' help: a line that starts at the
    margin (a description; kept whole, `rules new --help` printed its description on one line of 627
    characters), and each row of the exit codes' table (`  1    text`, its text going on in lines indented
    under it), its text kept under the row's own and the code before it (written for 100 columns, the
    table overflowed an 80-column terminal)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        filled = []
        head = ""
        words: list[str] = []
        for line in [*text.splitlines(), ""]:
            row = _TABLE_ROW_RE.match(line)
            if row is None and line[:1].isspace() and head:
                words.append(line.strip())
                continue
            if head:
                filled.append(
                    textwrap.fill(
                        " ".join(words),
                        width,
                        initial_indent=indent + head,
                        subsequent_indent=indent + " " * len(head),
                        break_on_hyphens=False,
                    )
                )
            head, words = (row["head"], [row["text"]]) if row is not None else ("", [])
            if row is None and line[:1].isspace():
                filled.append(indent + line)
            elif row is None and (line or filled):
                filled.append(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(filled) + "\n"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose "unrecognized arguments" error says where a global option goes when one
    was given after the command (``crawler temp --rules-dir DIR SITE`` took DIR for the site), whose
    "arguments are required" error adds its ``dash_hint`` if it has one (a positional value that starts
    with ``-`` is taken for an option), and, for a SITE left out, the sites of the rules folder with the
    command given one (``site_example``: ``temp {site}``), and whose help names its command for
    :func:`crawler.cli.terminal.tell` (an error writing it starts ``crawler rules try: error:``)."""

    def __init__(
        self,
        *args: Any,
        dash_hint: Callable[[], str] | None = None,
        site_example: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.dash_hint = dash_hint
        self.site_example = site_example
        # What this parser has read of its arguments so far: a SITE left out is said after the others.
        self.read = argparse.Namespace()

    @property
    def command(self) -> str:
        """The command this parser reads, as typed after ``crawler`` (``rules try``; empty for
        ``crawler``'s own parser), whatever the way ``crawler`` is run (its ``prog``: command_name())."""
        return self.prog.removeprefix(command_name()).strip()

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        running(self.command)
        super().print_help(file)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, except that a command's parser (one with no commands of its own) refuses the
        arguments it does not know itself: argparse leaves them to the ``crawler`` parser, whose error
        would name neither the command nor its options."""
        self.read = argparse.Namespace() if namespace is None else namespace
        parsed, extras = super().parse_known_args(args, self.read)
        commands = any(isinstance(action, argparse._SubParsersAction) for action in self._actions)
        if extras and self.command and not commands:
            options = [option for action in self._actions for option in action.option_strings]
            choices = _choices_as_options(self._actions)
            close = [
                f"; did you mean {choices[option]!r}?" if option in choices else did_you_mean(option, options)
                for option in (word.partition("=")[0] for word in extras)
                if option.startswith("--") and option not in options
            ]
            message = f"unrecognized arguments: {' '.join(extras)}"
            if not any(_global_option(word) for word in extras):
                # A global option after the command is said by error() where it goes instead.
                help_command = suggest(f"{self.command} --help")
                message += f"{next(filter(None, close), '')} (`{help_command}` lists its options)"
            self.error(message)
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        if self.dash_hint is not None and message.startswith("the following arguments are required:"):
            message += f" ({self.dash_hint()})"
        if self.site_example is not None and message.startswith(_MISSING_SITE):
            message += f" ({self._sites_hint(self.site_example)})"
        if message in _MISSING_CHOICE:
            (choices,) = (
                action.choices for action in self._actions if isinstance(action, argparse._SubParsersAction)
            )
            help_command = suggest(f"{self.command} --help".lstrip())
            message += f" (one of: {', '.join(choices)}; `{help_command}` says what each does)"
        if message.startswith("unrecognized arguments:"):
            # The arguments alone: not the hint parse_known_args adds, whose command may hold a global option.
            given = re.split(r";| \(`", message.split(":", 1)[1], maxsplit=1)[0].split()
            for option, value in _GLOBAL_OPTIONS.items():
                if any(_global_option(word) == option for word in given):
                    message += (
                        f" ({option} is an option of crawler itself: give it before the command,"
                        f" as in `{command_name()} {option}{value} COMMAND ...`)"
                    )
                    break
        choice = _INVALID_CHOICE_RE.fullmatch(message)
        if choice is not None:
            message += did_you_mean(choice[1], re.findall(r"'([^']*)'", choice[2]))
        invalid = _INVALID_COMMAND_RE.match(message)
        if invalid is not None and "=" in invalid[1]:
            message += (
                f" (-s {invalid[1]} is an option of the commands that crawl: give it after the command, as in"
                f" `{suggest(f'temp SITE -s {invalid[1]}')}`)"
            )
        super().error(message)

    def _sites_hint(self, example: str) -> str:
        """The sites of the rules folder, as a SITE left out is told them, and the command ``example``
        (``temp {site}``) given one (:func:`_example_site`); or why that folder has none, and the fix. The
        folder is the one this command's own ``--rules-dir`` names (``rules try``), else ``crawler``'s,
        else CRAWLER_RULES_DIR's or ./rules."""
        from crawler.config import Config  # noqa: PLC0415 - light, but only a usage error needs it
        from crawler.rules import rule_sites  # noqa: PLC0415 - crawler.rules loads lxml and yaml

        own = getattr(self.read, "rules_dir_option", None)
        given = own or given_folder("--rules-dir")
        folder = Path(given) if given else Config.from_env().rules_dir
        if not folder.is_dir():
            problem = "is not a folder" if folder.exists() else "does not exist"
            return (
                f"the rules folder {str(folder)!r} {problem}: give the folder of your site rules with"
                " --rules-dir DIR (or CRAWLER_RULES_DIR), one YAML file per site (docs/rules.md)"
            )
        sites = rule_sites(folder)
        if not sites:
            return (
                f"the rules folder {str(folder)!r} holds no rule file:"
                f" `{suggest('rules new SITE URL')}` drafts one from a site's page (docs/rules.md)"
            )
        after = f" --rules-dir {shlex.quote(own)}" if own else ""
        site, host = _example_site(folder, sites)
        command = suggest(example.format(site=site) + after)
        real = (
            f": its rule crawls {host}, a real site on the Internet; `{suggest('demo')}` crawls sites served"
            " on this machine"
            if host
            else ""
        )
        listed = ", ".join(sites)
        return f"the id of a site of the rules folder {str(folder)!r}: {listed}; as in `{command}`{real}"


def _example_site(folder: Path, sites: Sequence[str]) -> tuple[str, str | None]:
    """The site of ``folder`` (one of ``sites``, sorted) a usage error shows a command with: the first
    whose rule crawls this machine (a demo's, a site under test), not a public site a first try would
    crawl, else the first; and the host on the Internet the one chosen crawls (None: none known)."""
    hosts = {site: _start_hosts(folder, site) for site in sites}
    site = next((site for site in sites if any(map(_on_this_machine, hosts[site]))), sites[0])
    internet = [host for host in hosts[site] if not _on_this_machine(host)]
    return site, None if any(map(_on_this_machine, hosts[site])) or not internet else internet[0]


def _start_hosts(folder: Path, site: str) -> list[str]:
    """The hosts of the start URLs of ``site``'s rule file in ``folder``, read as YAML alone (a rule that
    does not load as a rule still names them); none when it cannot be read."""
    import yaml  # noqa: PLC0415 - only a usage error needs it

    from crawler.rules import RULE_SUFFIX  # noqa: PLC0415 - crawler.rules loads lxml

    try:
        rule = yaml.safe_load((folder / f"{site}{RULE_SUFFIX}").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    urls = rule.get("start_urls") if isinstance(rule, dict) else None
    hosts = []
    for url in urls if isinstance(urls, list) else ():
        with contextlib.suppress(ValueError):  # a URL urlsplit refuses (a bracket left open) names none
            host = urlsplit(url.strip()).hostname if isinstance(url, str) else None
            hosts.extend([host] if host else [])
    return hosts


def _on_this_machine(host: str) -> bool:
    """Whether ``host`` (a URL's, lower case) names this machine: localhost or a loopback address."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _choices_as_options(actions: Sequence[argparse.Action]) -> dict[str, str]:
    """The value of an option with choices as it may be given for an option of its own (``--json`` for
    ``--format json``, as many tools take it), and the option and value it stands for."""
    return {
        f"--{choice}": f"{action.option_strings[-1]} {choice}"
        for action in actions
        if action.option_strings and action.choices is not None
        for choice in action.choices
        if isinstance(choice, str)
    }


# argparse's messages for a command, or a command's action, left out.
_MISSING_CHOICE = frozenset(f"the following arguments are required: {name}" for name in ("COMMAND", "ACTION"))
# argparse's message for a value an argument does not take (a command, an action, a --format), the value and
# those it takes.
_INVALID_CHOICE_RE = re.compile(r"argument \S+: invalid choice: '([^']*)' \(choose from (.*)\)")
# argparse's message for a SITE left out (the arguments after it, left out too, named after it).
_MISSING_SITE = "the following arguments are required: SITE"
# argparse's message for a command it does not know, and the word it took for one.
_INVALID_COMMAND_RE = re.compile(r"argument COMMAND: invalid choice: '([^']*)'")


def build_parser() -> argparse.ArgumentParser:
    """The ``crawler`` parser: global options and one sub-parser per command."""
    parser = _Parser(
        # As the user runs it (``./run.sh crawler`` sets CRAWLER_COMMAND): its usage, help and errors say so.
        prog=command_name(),
        description="A focused web crawler service: site rules, regular and temp grabs, article extraction.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is done on stderr")
    parser.add_argument(
        "--data-dir",
        dest="data_dir_option",
        metavar="DIR",
        help=(
            "the data folder: embedded Redis, SQLite stores, spool (default: $CRAWLER_DATA_DIR, else ./data)"
        ),
    )
    parser.add_argument(
        "--rules-dir",
        dest="rules_dir_option",
        metavar="DIR",
        help="the folder of site rules (default: $CRAWLER_RULES_DIR, else ./rules)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (
        _add_extract,
        _add_crawl,
        _add_articles,
        _add_status,
        _add_sites,
        _add_dead,
        _add_rules,
        _add_redis,
    ):
        add(commands)
    return parser


def _add_extract(commands: Any) -> None:
    """Add ``extract`` to the ``crawler`` parser."""
    extract = commands.add_parser(
        "extract",
        help="print the main text of one page (URL, file or - for stdin)",
        description=(
            "Print the main text of one page: an http(s) URL, an HTML file, or - for standard input."
            " URLs are fetched politely: robots.txt obeyed, a size limit, at most 5 redirects, and never"
            " from loopback, private or link-local addresses."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    extract.add_argument(
        "source", metavar="URL|FILE", help="http(s) URL, path of an HTML file, or - for standard input"
    )
    extract.add_argument(
        "--algo",
        choices=list(ALGORITHMS),
        default=DEFAULT_ALGORITHM,
        help=f"extraction algorithm (default: {DEFAULT_ALGORITHM})",
    )
    extract.add_argument(
        "--explain",
        action="store_true",
        help="show every block the algorithm weighed, which were chosen and why, then the text",
    )
    extract.add_argument("--title", metavar="T", help="the article title, instead of the page's own")
    extract.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    extract.add_argument(
        "--ignore-robots", action="store_true", help="fetch the URL even if its robots.txt disallows it"
    )
    extract.add_argument(
        "--allow-private",
        action="store_true",
        help="fetch the URL's host even on a loopback or private address (a page on this machine or an"
        " intranet); redirects elsewhere stay refused",
    )
    add_fetch_options(extract)
    extract.add_argument(
        "--max-blocks",
        type=non_negative_int,
        default=DEFAULT_MAX_BLOCKS,
        metavar="N",
        help=f"--explain: show the first N blocks and the chosen; 0: all (default: {DEFAULT_MAX_BLOCKS})",
    )
    extract.set_defaults(handler="crawler.cli.extract:run_extract")


def _add_crawl(commands: Any) -> None:
    """Add ``demo``, ``temp`` and ``worker`` to the ``crawler`` parser."""
    demo = commands.add_parser(
        "demo",
        help="serve the bundled demo news sites on 127.0.0.1, crawl them, print what was stored",
        description=(
            "The main job on embedded defaults: serve the demo news sites (3 sites, 150 articles, one"
            " in GBK) on 127.0.0.1, crawl them with the bundled demo rules through the embedded Redis"
            " queue, store the articles in SQLite under CRAWLER_DATA_DIR/demo (./data/demo), or in MongoDB"
            " with MONGO_URI set, and print what that store holds and the command that shows it."
        ),
    )
    demo.add_argument(
        "--port",
        type=port_number,
        default=None,
        help=f"port of the demo sites (default {DEMO_PORT}, or any free one when that is taken)",
    )
    demo.add_argument(
        "--keep", action="store_true", help="keep the previous demo's data instead of starting anew"
    )
    demo.add_argument(
        "--serve",
        action="store_true",
        help="only serve the demo sites, until Ctrl-C, and print the commands that crawl them (into the"
        " demo's data folder, started anew unless --keep)",
    )
    demo.set_defaults(handler="crawler.cli.crawl:run_demo")

    temp = commands.add_parser(
        "temp",
        site_example="temp {site}",
        help="crawl one site once, now: progress, then a summary",
        description=(
            "Crawl one site once, now: its index pages (or the --url pages alone, as article pages, or"
            " its stored articles again with --stored), the new articles they link to, with a progress"
            " bar; exits when the site's work is done."
        ),
    )
    temp.add_argument("site", metavar="SITE", help="site id (the rule file's name without .yaml)")
    temp.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="U",
        help="crawl this article page only, not the index pages (repeat --url for more pages)",
    )
    temp.add_argument(
        "--stored",
        action="store_true",
        help="fetch the site's stored articles again, not the index pages, and update each with the rule as"
        " it is now (--week, --since, --until and --limit choose which)",
    )
    temp.add_argument(
        "--again",
        action="store_true",
        help="follow the index pages' article links even when their URLs were seen before (this crawl only:"
        " each page once; a stored article is updated in place)",
    )
    temp.add_argument("--week", type=_week, metavar="W", help="--stored: one week's articles: 2026w47")
    temp.add_argument(
        "--since",
        type=_moment,
        metavar="T",
        help="--stored: first seen at or after: 2026-11-20, 2026-11-20T08:00Z or 7d",
    )
    temp.add_argument(
        "--until", type=_moment, metavar="T", help="--stored: first seen before (same forms as --since)"
    )
    temp.add_argument(
        "--limit", type=_count, metavar="N", help="--stored: the newest N articles first seen (default all)"
    )
    add_set_option(temp)
    temp.set_defaults(handler="crawler.cli.crawl:run_temp")

    worker = commands.add_parser(
        "worker",
        help="one worker of the shared queue (run N of them, on any machine), until Ctrl-C",
        description="Take requests from the shared queue and crawl them, until Ctrl-C.",
    )
    worker.add_argument(
        "--sites", default="", help="comma-separated site ids this worker serves (default all)"
    )
    add_set_option(worker)
    worker.set_defaults(handler="crawler.cli.crawl:run_worker_command")

    schedule = commands.add_parser(
        "schedule",
        help="the scheduler alone: queue each rule's regular grabs when due, until Ctrl-C",
        description=(
            "Queue each rule's index pages when its period (schedule.every or schedule.cron) is due, exactly"
            " once per period however many schedulers run (one is active at a time: a Redis lock)."
        ),
    )
    schedule.add_argument("--once", action="store_true", help="queue the grabs due now, then exit")
    add_set_option(schedule)
    schedule.set_defaults(handler="crawler.cli.crawl:run_schedule_command")

    run = commands.add_parser(
        "run",
        help="scheduler and a worker on this machine, on embedded defaults, until Ctrl-C",
        description=(
            "The service on one machine: the scheduler and a worker in this process (embedded Redis and"
            " SQLite unless REDIS_URL and MONGO_URI say otherwise), until Ctrl-C; started again, it goes on"
            " where it stopped."
        ),
    )
    add_set_option(run)
    run.set_defaults(handler="crawler.cli.crawl:run_service")


def _add_articles(commands: Any) -> None:
    """Add ``articles list|show|search|export|stats`` to the ``crawler`` parser."""
    articles = commands.add_parser(
        "articles",
        help="list, show, search, export stored articles, and count them per site and week",
        description=(
            "Read the article store: MongoDB when MONGO_URI is set, else the SQLite files under"
            " CRAWLER_DATA_DIR/articles. Same commands and output on both."
        ),
    )
    actions = articles.add_subparsers(dest="articles_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="stored articles, latest stored first")
    _add_filters(listing, limit=DEFAULT_LIMIT)
    listing.add_argument(
        "--reposts",
        action="store_true",
        help="only the articles that reposts were recorded against (`articles show ID` lists them)",
    )
    _add_format(listing, ("table", "json", "jsonl", "csv"))
    listing.set_defaults(handler="crawler.cli.articles:run_list")

    show = actions.add_parser("show", help="one article: every field, the text wrapped")
    show.add_argument("article", metavar="URL|ID", help="the article's URL, or its 16-digit id")
    _add_format(show, ("text", "json"))
    show.set_defaults(handler="crawler.cli.articles:run_show")

    search = actions.add_parser(
        "search",
        dash_hint=lambda: (
            "a TEXT that starts with - is taken for an option: give it after --, as in"
            f" `{suggest('articles search -- -light')}`"
        ),
        help='articles whose title or body has every word (or "phrase"), latest stored first',
        description=(
            'Full-text search of titles and bodies: every word or "quoted phrase" must appear (whole'
            " words; Chinese anywhere), case and accents ignored. MongoDB's text index or SQLite's FTS5"
            " finds them."
        ),
    )
    search.add_argument(
        "text",
        metavar="TEXT",
        type=_search_text,
        help='words and "phrases" to look for (after -- if it starts with -)',
    )
    _add_filters(search, limit=DEFAULT_LIMIT)
    _add_format(search, ("table", "json", "jsonl", "csv"))
    search.set_defaults(handler="crawler.cli.articles:run_search")

    export = actions.add_parser(
        "export",
        help="every matching article, streamed as JSON lines or CSV",
        description="Stream articles (oldest first) as JSON lines or CSV, in constant memory.",
    )
    _add_filters(export, limit=None)
    _add_format(export, ("jsonl", "csv"))
    export.add_argument(
        "--fields",
        type=_fields,
        metavar="F,F,...",
        help="only these fields, in this order (CSV columns; JSON keys): url,title,published; fields.NAME for"
        " one of the rule's fields (default every field)",
    )
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE (made complete, then renamed) instead of stdout; - is stdout",
    )
    export.set_defaults(handler="crawler.cli.articles:run_export")

    stats = actions.add_parser("stats", help="articles, reposts and qRead bodies per site and week")
    stats.add_argument("--site", help="one site's rows")
    stats.add_argument("--week", type=_week, metavar="W", help="one week's rows: 2026w47")
    _add_format(stats, ("table", "json", "jsonl", "csv"))
    stats.set_defaults(handler="crawler.cli.articles:run_stats")


def _add_filters(parser: argparse.ArgumentParser, *, limit: int | None) -> None:
    parser.add_argument("--site", help="one site's articles")
    parser.add_argument("--week", type=_week, metavar="W", help="one week's articles: 2026w47")
    parser.add_argument(
        "--since",
        type=_moment,
        metavar="T",
        help="first seen at or after: 2026-11-20, 2026-11-20T08:00Z or 24h, 7d",
    )
    parser.add_argument(
        "--until", type=_moment, metavar="T", help="first seen before (same forms as --since)"
    )
    parser.add_argument(
        "--published-since",
        type=_moment,
        metavar="T",
        help="published at or after (same forms as --since; a date alone is its midnight UTC); articles"
        " with no published date are left out",
    )
    parser.add_argument(
        "--published-until",
        type=_moment,
        metavar="T",
        help="published before (same forms); articles with no published date are left out",
    )
    parser.add_argument(
        "--limit",
        type=_count,
        default=limit,
        metavar="N",
        help=f"at most N articles (default {'all' if limit is None else limit})",
    )


def _add_format(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    parser.add_argument(
        "--format", choices=formats, default=formats[0], help=f"output format (default {formats[0]})"
    )


def _add_status(commands: Any) -> None:
    """Add ``status`` to the ``crawler`` parser."""
    status = commands.add_parser(
        "status",
        help="queue, leases, workers, and per site: grabs, new articles, errors, bans, fields, qRead",
        description=(
            "What the service is doing, read from Redis (REDIS_URL, or the embedded server under"
            " CRAWLER_DATA_DIR): the queue, leases, workers alive and their rate, and per site the last and"
            " next grab, new articles, fetch errors, bans, fields that stopped matching, qRead fallbacks."
            " Sites that need a person's attention are marked."
        ),
    )
    status.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    status.add_argument(
        "--site",
        help="one site of the rules folder: its counters and reasons, beside Redis, queue and workers",
    )
    status.add_argument(
        "--check",
        action="store_true",
        help="for cron, systemd, Nagios, CI: print only what needs attention, a line each (nothing when all"
        " is well); exit 1 when anything does, 0 when nothing, 3 when the status cannot be read",
    )
    status.set_defaults(handler="crawler.cli.status:run_status")


def _add_sites(commands: Any) -> None:
    """Add ``sites pause``, ``sites resume`` and ``sites forget`` to the ``crawler`` parser."""
    sites = commands.add_parser(
        "sites",
        help="pause a site (no grab, its queued requests held) or resume it, on every machine; forget it",
        description=(
            "Operate on one site of the rules folder without editing its rule, on every machine: what it"
            " changes lives in Redis (and, for forget --articles, the article store)."
        ),
    )
    actions = sites.add_subparsers(dest="sites_command", required=True, metavar="ACTION")
    pause = actions.add_parser(
        "pause",
        site_example="sites pause {site}",
        help="no regular grab of the site is queued, and its queued requests are held, until resumed",
        description=(
            "Pause SITE: the scheduler queues no regular grab of it, and workers take none of its queued"
            " requests (they are held, not dropped: retries come back to them); the requests being fetched"
            f" end as usual. `{command_name()} status` shows it PAUSED; `{command_name()} temp SITE` refuses"
            " it, and one running stops once its pages being fetched are in (exit 1), its other requests"
            " held until the resume."
        ),
    )
    pause.add_argument("site", metavar="SITE", help="site id (the rule file's name without .yaml)")
    pause.set_defaults(handler="crawler.cli.sites:run_pause")
    resume = actions.add_parser(
        "resume",
        site_example="sites resume {site}",
        help="crawl a paused site again: its held requests, and its grabs when due",
        description=(
            "Resume SITE: workers take its held requests again, and its next regular grab is queued when"
            " due (at the scheduler's next tick when it fell due during the pause)."
        ),
    )
    resume.add_argument("site", metavar="SITE", help="site id (the rule file's name without .yaml)")
    resume.set_defaults(handler="crawler.cli.sites:run_resume")
    forget = actions.add_parser(
        "forget",
        site_example="sites forget {site}",
        help="drop the site's grab state and queued requests (and its articles with --articles)",
        description=(
            "Forget SITE: take its requests out of the queue and drop its grab state (last and next grab,"
            " the validators and sitemap dates that make a grab read only what changed, its last temp"
            " crawl, a discover rule's frontier), so its next grab is a new rule's first and reads it"
            " whole; with --articles, delete its stored articles too. Its seen URLs stay seen: the Bloom"
            " filter is shared by every site and cannot remove one"
            f" (`{command_name()} temp SITE --again` fetches the articles its index pages link to again; a"
            " discover crawl reads a page seen before only as a seed). Asks first, unless --yes."
        ),
    )
    forget.add_argument("site", metavar="SITE", help="site id (the rule file's name without .yaml)")
    forget.add_argument("--articles", action="store_true", help="delete its stored articles too")
    forget.add_argument(
        "--yes", action="store_true", help="do not ask (needed when the input is no terminal)"
    )
    forget.set_defaults(handler="crawler.cli.sites:run_forget")


def _add_dead(commands: Any) -> None:
    """Add ``dead list``, ``dead requeue`` and ``dead drop`` to the ``crawler`` parser."""
    dead = commands.add_parser(
        "dead",
        help="requests that ended in an error (after their retries): list, requeue or drop them",
        description=(
            "Dead letters: every request that ended in an error (an HTTP error status, the network, a"
            " timeout, after its retries; an article the store kept refusing; a queue entry that was no"
            " request), with the reason. Requeue them once the cause is fixed, or drop them."
        ),
    )
    actions = dead.add_subparsers(dest="dead_command", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", help="the latest dead letters, latest first (and, past them, the count by site and kind)"
    )
    _add_selection(listing, ids=False)
    shown = listing.add_mutually_exclusive_group()
    shown.add_argument(
        "--limit",
        type=_count,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"the latest N (default {DEFAULT_LIMIT}; 0: the count by site and kind alone)",
    )
    shown.add_argument("--all", action="store_true", help="every one (jsonl: streamed, in Redis's order)")
    listing.add_argument(
        "--format", choices=("table", "json", "jsonl"), default="table", help="output format"
    )
    listing.set_defaults(handler="crawler.cli.dead:run_list")
    back = actions.add_parser("requeue", help="put dead letters back in the queue")
    _add_selection(back, ids=True)
    back.set_defaults(handler="crawler.cli.dead:run_requeue")
    drop = actions.add_parser("drop", help="forget dead letters for good")
    _add_selection(drop, ids=True)
    drop.set_defaults(handler="crawler.cli.dead:run_drop")


def _add_selection(parser: argparse.ArgumentParser, *, ids: bool) -> None:
    parser.add_argument("--site", help="one site's dead letters")
    parser.add_argument("--job", help=f"one job's dead letters (the id `{command_name()} temp` printed)")
    if ids:
        parser.add_argument(
            "ids", nargs="*", metavar="ID", help=f"dead letters by id (`{command_name()} dead list`)"
        )
        parser.add_argument(
            "--all", action="store_true", help="every dead letter (with --site/--job: theirs)"
        )


def _add_rules_dir(action: argparse.ArgumentParser) -> None:
    """``--rules-dir`` after a ``rules`` action too, where a user writes it: the option of ``crawler``
    itself (its dest), set only when given, so that one given before the command stays."""
    action.add_argument(
        "--rules-dir",
        dest="rules_dir_option",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="folder of the rules, as before the command (default: $CRAWLER_RULES_DIR, else ./rules)",
    )


def _add_rules(commands: Any) -> None:
    """Add ``rules check``, ``rules try`` and ``rules new`` to the ``crawler`` parser."""
    rules = commands.add_parser(
        "rules",
        help="check the site rules; try one on a page; draft a new one from a site's page",
        description=(
            "Site rules (rules/<site>.yaml, docs/rules.md): validate them, see what one extracts, or draft"
            " a site's first one."
        ),
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    actions = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="validate rule files and print every error",
        description=(
            "Validate rule files: print every error of every file, one per line (file: key path: problem"
            " (expected ...)), then a summary. Exit 1 when any rule has an error."
        ),
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    check.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="rule files, or folders of *.yaml rules (default: the rules folder, --rules-dir DIR)",
    )
    _add_rules_dir(check)
    check.set_defaults(handler="crawler.cli.rules:run_rules_check")

    try_ = actions.add_parser(
        "try",
        site_example="rules try {site} URL",
        help="show what a site's rule extracts from one page: links, next page, fields, qRead fallback",
        description=(
            "Read one page (an http(s) URL, fetched politely; an HTML file; or - for standard input) and"
            " apply SITE's rule to it as an index page (the article links and the next page) and as an"
            " article page (every field, and qRead's body when the rule's body is missing or shorter"
            " than min_body_chars)."
        ),
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    try_.add_argument(
        "site", metavar="SITE", help="site id (a rule file's name without .yaml), or a rule file"
    )
    try_.add_argument("source", metavar="URL|FILE", help="http(s) URL, path of an HTML file, or - for stdin")
    _add_rules_dir(try_)
    try_.add_argument(
        "--url",
        metavar="URL",
        help="the URL a file was saved from, to resolve its links (default: the rule's first start URL)",
    )
    try_.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    add_fetch_options(try_)
    try_.set_defaults(handler="crawler.cli.rules:run_rules_try")

    new = actions.add_parser(
        "new",
        help="draft a site's first rule from its home or section page: links, feeds, sitemaps, next page",
        description=(
            "Fetch URL (a site's home or section page, politely: robots.txt, the crawler's user agent) and"
            " its robots.txt, and write rules/SITE.yaml: URL as the start URL, its host's domain, the feeds"
            " the page advertises, the sitemaps robots.txt names, the article links' pattern guessed from"
            " the page's links to its site, and the next page's link when it has one; then check the rule"
            " as `rules check` does and print what was guessed and the commands to run next. URL may be the"
            " site's RSS or Atom feed: the rule reads that feed alone, its entries filtered by the pattern"
            " of their links, or every entry when those show no article's shape. Exit 1 when the page"
            " cannot be fetched, is no HTML page or feed, or has no links that look like articles' (a feed:"
            " no entry linking to its site; no file is written then), 2 when rules/SITE.yaml exists (--force"
            " replaces it)."
        ),
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    new.add_argument("site", metavar="SITE", help="the new site id: the rule file's name without .yaml")
    new.add_argument(
        "url", metavar="URL", help="http(s) URL of the site's home page, of a section page or of its feed"
    )
    new.add_argument("--force", action="store_true", help="replace rules/SITE.yaml when it exists")
    new.add_argument(
        "--allow-private",
        action="store_true",
        help="the site is on this machine or an intranet: fetch its host on a loopback or private address,"
        " and write `allow_private_addresses: true` in the rule",
    )
    _add_rules_dir(new)
    add_fetch_options(new)
    new.set_defaults(handler="crawler.cli.rules:run_rules_new")


def _add_redis(commands: Any) -> None:
    """Add ``redis repair`` to the ``crawler`` parser."""
    redis = commands.add_parser(
        "redis",
        help="the embedded Redis of the data folder: mend its append-only file",
        description="The embedded Redis server of the data folder (CRAWLER_DATA_DIR/redis).",
    )
    actions = redis.add_subparsers(dest="redis_command", required=True, metavar="ACTION")
    repair = actions.add_parser(
        "repair",
        help="mend a damaged append-only file the server cannot start with",
        description=(
            "Mend the embedded Redis's append-only file (CRAWLER_DATA_DIR/redis/appendonly.aof) when the"
            " server cannot start with it: keep a copy of it beside it, then cut it at the first damage"
            " (redis-check-aof --fix); say how much was cut. Only while no server runs on it."
        ),
    )
    repair.set_defaults(handler="crawler.cli.redis:run_repair")


# --- argument types (a store's week and time, read as the store reads them) ---------------------------


def _week(value: str) -> str:
    from crawler.errors import StoreError  # noqa: PLC0415 - the store's modules, when this option is given
    from crawler.store.document import parse_week  # noqa: PLC0415 - the same

    try:
        parse_week(value)
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _moment(value: str) -> datetime | Age:
    """The time ``value`` gives; an age (``10m``) as :class:`Age`, which the command makes a time by the
    clock that ``first_seen`` follows (:func:`crawler.cli.options.resolve_ages`)."""
    from crawler.errors import StoreError  # noqa: PLC0415 - the store's modules, when this option is given
    from crawler.store.document import parse_timestamp  # noqa: PLC0415 - the same

    relative = _RELATIVE_RE.match(value.strip())
    if relative is not None:
        try:
            length = timedelta(**{_UNITS[relative[2]]: int(relative[1])})
            past_year_1 = length > datetime.now(UTC) - datetime.min.replace(tzinfo=UTC)
        except OverflowError:
            past_year_1 = True
        if past_year_1:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a time: an age reaches back to the year 1 at most;"
                " give a date (2026-11-20) or a smaller age (30m, 24h, 7d, 2w)"
            )
        return Age(value.strip(), length)
    text = value.strip().replace("Z", "+00:00") if value.strip().endswith("Z") else value.strip()
    try:
        return parse_timestamp(text, "time")
    except StoreError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a time: expected 2026-11-20, 2026-11-20T08:00Z, or 30m, 24h, 7d, 2w ago"
        ) from None


def _fields(value: str) -> list[str]:
    """The document fields of ``export --fields``, in the order given: each a field of the document, or
    ``fields.NAME``, one of the rule's fields the document's ``fields`` holds; each once."""
    from crawler.rules.model import STANDARD_FIELDS  # noqa: PLC0415 - the rules' modules, when this option is given
    from crawler.store.document import DOCUMENT_FIELDS  # noqa: PLC0415 - the store's modules, when this option is given

    names = [name.strip() for name in value.split(",")]
    for name in names:
        nested = name.removeprefix(NESTED_FIELD)
        if name.startswith(NESTED_FIELD) and not nested:
            raise argparse.ArgumentTypeError(
                f"{value!r}: {name!r} names no field of the rule's: give {NESTED_FIELD}NAME"
                f" ({NESTED_FIELD}section)"
            )
        # The rule's title, body, published and author are the document's own; any other name of the
        # rule's (summary, url) is in its fields, as the crawl stores it.
        if name.startswith(NESTED_FIELD) and nested in STANDARD_FIELDS:
            raise argparse.ArgumentTypeError(
                f"{value!r}: {nested!r} is a field of the document itself: give {nested}, not {name}"
            )
        if name not in DOCUMENT_FIELDS and not name.startswith(NESTED_FIELD):
            what = f"no field is named {name!r}" if name else "an empty field name"
            raise argparse.ArgumentTypeError(
                f"{value!r}: {what}{did_you_mean(name, list(DOCUMENT_FIELDS))} (the fields are"
                f" {','.join(DOCUMENT_FIELDS)}, and {NESTED_FIELD}NAME for a field of the rule's)"
            )
        if names.count(name) > 1:
            raise argparse.ArgumentTypeError(f"{value!r}: field {name!r} is given twice: give each once")
    return names


def _search_text(value: str) -> str:
    from crawler.errors import StoreError  # noqa: PLC0415 - the store's modules, when this argument is given
    from crawler.store.base import search_terms  # noqa: PLC0415 - the same

    try:
        search_terms(value)
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a count: expected a whole number, 0 or more")
    return int(value)
