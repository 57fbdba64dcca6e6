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
import json
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.etree
from rich.console import Console
from rich.table import Table
from rich.text import Text

from crawler import __version__, articlescli, crawlcli, statuscli
from crawler.errors import CrawlerError, InputError
from crawler.fetch import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, Fetcher
from crawler.rules import RULE_SUFFIX, Rule, RuleError, RuleErrors, load_rule, load_rules
from crawler.settings import QREAD_ALGORITHM
from crawler.terminal import cut, printable
from extractors import ALGORITHMS, DEFAULT_ALGORITHM, Block, Extraction, get_extractor
from extractors.encoding import Decoded, decode, sniff_binary
from extractors.htmlparse import parse_html

__all__ = [
    "Page",
    "build_parser",
    "decode_page",
    "main",
    "read_page",
    "run_algorithm",
    "run_extract",
    "run_rules_check",
    "run_rules_try",
]

logger = logging.getLogger(__name__)

EXIT_OK = 0
# `crawler rules`: a rule file has errors.
EXIT_RULE_ERRORS = RuleError.exit_code
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

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_ENCODING_SOURCES = {
    "bom": "byte order mark",
    "declared": "Content-Type header",
    "meta": "<meta> in the page",
    "utf-8": "valid UTF-8",
    "utf-16": "UTF-16 without byte order mark",
    "detected": "detected by charset-normalizer",
    "default": "fallback, nothing else fitted",
}
PREVIEW_WIDTH = 60
LABEL_WIDTH = 32
DEFAULT_MAX_BLOCKS = 200


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
    _add_extract(commands)
    crawlcli.add_commands(commands)
    articlescli.add_commands(commands)
    statuscli.add_commands(commands)
    _add_rules(commands)
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


# --- crawler extract --------------------------------------------------------------------------------------


def _add_extract(commands: Any) -> None:
    extract = commands.add_parser(
        "extract",
        help="print the main text of one page (URL, file or - for stdin)",
        description=(
            "Print the main text of one page: an http(s) URL, an HTML file, or - for standard input."
            " URLs are fetched politely: robots.txt obeyed, a size limit, at most 5 redirects, and never"
            " from loopback, private or link-local addresses."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of each request: connection, headers and body (default: {DEFAULT_TIMEOUT:g})",
    )
    extract.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"size limit of the page, after decompression (default: {DEFAULT_MAX_BYTES:,})",
    )
    extract.add_argument(
        "--max-blocks",
        type=_non_negative_int,
        default=DEFAULT_MAX_BLOCKS,
        metavar="N",
        help=f"--explain: show the first N blocks and the chosen; 0: all (default: {DEFAULT_MAX_BLOCKS})",
    )
    extract.set_defaults(handler=run_extract)


@dataclass(frozen=True, slots=True)
class Page:
    """The bytes of the page to extract from, and where they came from."""

    source: str  # as the user gave it: URL, path or "-"
    data: bytes
    url: str | None = None  # final URL when fetched
    content_type: str | None = None
    redirects: tuple[str, ...] = ()


def run_extract(args: argparse.Namespace) -> int:
    """``crawler extract``: read or fetch the page, decode it, extract, print."""
    page = read_page(
        args.source,
        max_bytes=args.max_bytes,
        timeout=args.timeout,
        obey_robots=not args.ignore_robots,
    )
    decoded = decode_page(page)
    extraction = run_algorithm(
        decoded.text,
        url=page.url,
        title=args.title,
        algo=args.algo,
        source=page.source,
        explain=args.explain,
    )
    if args.title:
        title_source = "given with --title"
    else:
        title_source = "from the page" if extraction.title else "none found"
    if args.format == "json":
        document: dict[str, Any] = {
            "source": page.source,
            "url": page.url,
            "redirects": list(page.redirects),
            "encoding": decoded.encoding,
            "encoding_source": decoded.source,
            "algorithm": extraction.algorithm,
            "title": extraction.title,
            "title_source": title_source,
            "text": extraction.text,
            "paragraphs": extraction.paragraphs,
            "notes": extraction.notes,
        }
        if args.explain:
            document["blocks"] = [asdict(block) for block in extraction.blocks]
        print(json.dumps(document, ensure_ascii=False, indent=2))
    elif args.explain:
        report = Report(page, decoded, extraction, title_source)
        console = Console(file=sys.stdout, highlight=False)
        if console.is_terminal:
            _explain_rich(console, report, args.max_blocks)
        else:
            _explain_plain(report, args.max_blocks)
    elif extraction.text:
        print(printable(extraction.text))
    if not extraction.text:
        why = "; ".join(extraction.notes) or "no block was chosen"
        print(f"crawler extract: no main text found in {page.source}: {why}", file=sys.stderr)
    return EXIT_OK


def read_page(source: str, *, max_bytes: int, timeout: float, obey_robots: bool) -> Page:
    """The page's bytes from a URL, a file or stdin (``-``); :class:`InputError` / ``FetchError`` else."""
    if source == "-":
        return Page("-", _limited(sys.stdin.buffer.read(max_bytes + 1), "standard input", max_bytes))
    if _URL_RE.match(source):
        fetcher = Fetcher(timeout=timeout, max_bytes=max_bytes, obey_robots=obey_robots)
        response = fetcher.fetch(source)
        return Page(source, response.body, response.url, response.content_type, response.redirects)
    path = Path(source)
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except FileNotFoundError:
        hint = "give the path of an HTML file, an http(s) URL, or - for standard input"
        host = source.split("/", 1)[0]
        if ("/" in source.strip("/") and "." in host.strip(".")) or source.startswith("www."):
            hint = f"did you mean the URL https://{source} ?"
        raise InputError(f"no such file: {source!r} ({hint})") from None
    except IsADirectoryError:
        raise InputError(f"{source!r} is a directory, not an HTML file") from None
    except OSError as exc:
        raise InputError(f"cannot read {source!r}: {exc.strerror or exc}") from None
    return Page(source, _limited(data, repr(source), max_bytes))


def _limited(data: bytes, what: str, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise InputError(
            f"{what} is larger than the limit of {max_bytes:,} bytes (raise it with --max-bytes)"
        )
    return data


def decode_page(page: Page) -> Decoded:
    """The page as text; :class:`InputError` when it is empty or not text at all."""
    what = f"the page fetched from {page.url}" if page.url else _shown(page.source)
    if not page.data.strip():
        raise InputError(f"{what} is empty: there is no page to extract from")
    kind = sniff_binary(page.data)
    if kind is not None:
        sent = f", sent as {page.content_type}" if page.content_type else ""
        raise InputError(f"{what} is not HTML: it looks like {kind}{sent}")
    decoded = decode(page.data, page.content_type)
    logger.debug("decoded %s as %s (%s)", page.source, decoded.encoding, decoded.source)
    return decoded


def run_algorithm(
    html: str, *, url: str | None, title: str | None, algo: str, source: str, explain: bool = False
) -> Extraction:
    """Run the extractor named ``algo``; an input that breaks the parser is an :class:`InputError`."""
    try:
        extractor = get_extractor(algo)
    except ImportError as exc:
        raise InputError(f"algorithm {algo!r} is not available in this installation: {exc}") from None
    try:
        return extractor(html, url=url, title=title, explain=explain)
    except (RecursionError, MemoryError, lxml.etree.LxmlError) as exc:
        raise InputError(
            f"{_shown(source)} could not be processed by {algo}: {type(exc).__name__}: {exc}"
        ) from None


def _shown(source: str) -> str:
    return "standard input" if source == "-" else repr(source)


def _shown_blocks(blocks: list[Block], max_blocks: int) -> tuple[list[Block], int]:
    """The first ``max_blocks`` blocks (0: all) and every chosen one; and how many are left out."""
    if not max_blocks or len(blocks) <= max_blocks:
        return blocks, 0
    shown = [block for position, block in enumerate(blocks) if position < max_blocks or block.chosen]
    return shown, len(blocks) - len(shown)


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``--explain`` shows about one extraction."""

    page: Page
    decoded: Decoded
    extraction: Extraction
    title_source: str


def _summary(report: Report) -> list[tuple[str, str]]:
    page, decoded, extraction = report.page, report.decoded, report.extraction
    chosen = extraction.chosen_blocks
    rows = [("source", printable(page.source))]
    if page.url:
        after = f" (after {len(page.redirects)} redirects)" if page.redirects else ""
        rows.append(("url", page.url + after))
    rows += [
        ("encoding", f"{decoded.encoding} ({_ENCODING_SOURCES[decoded.source]})"),
        ("algorithm", extraction.algorithm),
        ("title", f"{printable(extraction.title or '-')} ({report.title_source})"),
        ("chosen", f"{len(chosen)} of {len(extraction.blocks)} blocks, {sum(b.words for b in chosen)} words"),
        ("notes", printable("; ".join(extraction.notes)) or "-"),
    ]
    return rows


_COLUMNS = ("#", "label", "lines", "words", "density", "title sim", "score", "chosen", "reason", "preview")
_NUMERIC = frozenset({"#", "lines", "words", "density", "title sim", "score"})


def _block_cells(block: Block) -> list[str]:
    return [
        str(block.index),
        cut(block.label, LABEL_WIDTH),
        str(block.lines),
        str(block.words),
        f"{block.density:.2f}",
        "-" if block.similarity is None else f"{block.similarity:.3f}",
        f"{block.score:.2f}",
        "✓" if block.chosen else "",
        cut(block.reason, 40),
        cut(block.preview, PREVIEW_WIDTH),
    ]


def _explain_plain(report: Report, max_blocks: int) -> None:
    extraction = report.extraction
    for name, value in _summary(report):
        print(f"{name:<10} {value}")
    print()
    blocks, hidden = _shown_blocks(extraction.blocks, max_blocks)
    rows = [list(_COLUMNS)] + [_block_cells(block) for block in blocks]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_COLUMNS))]
    for row in rows:
        cells = [
            cell.rjust(width) if _COLUMNS[column] in _NUMERIC else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
    if hidden:
        print(f"... {hidden} more blocks not shown (--max-blocks 0 shows all)")
    print()
    print("--- main text ---")
    if extraction.text:
        print(printable(extraction.text))


def _explain_rich(console: Console, report: Report, max_blocks: int) -> None:
    extraction = report.extraction
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    for name, value in _summary(report):
        summary.add_row(Text(name), Text(value))
    console.print(summary)
    blocks, hidden = _shown_blocks(extraction.blocks, max_blocks)
    table = Table(title=Text(f"{extraction.algorithm}: blocks weighed, in document order"), show_lines=False)
    for name in _COLUMNS:
        if name in _NUMERIC:
            table.add_column(name, justify="right", no_wrap=True)
        elif name == "preview":
            table.add_column(name, overflow="ellipsis", no_wrap=True, ratio=1, min_width=20)
        else:
            table.add_column(name, overflow="ellipsis", no_wrap=name != "reason", min_width=len(name))
    for block in blocks:
        style = "bold green" if block.chosen else None
        table.add_row(*(Text(cell) for cell in _block_cells(block)), style=style)
    console.print(table)
    if hidden:
        console.print(Text(f"... {hidden} more blocks not shown (--max-blocks 0 shows all)"))
    console.rule("main text")
    if extraction.text:
        console.print(Text(printable(extraction.text)))


# --- crawler rules ----------------------------------------------------------------------------------------

RULES_EXIT_CODES_HELP = """\
exit codes:
  0    done: every rule is valid (check); the page was read and shown (try)
  1    a rule has errors (each printed on its own line); try: the page could not be fetched
  2    usage or input error: bad arguments; a PATH, rule or page file that does not exist or cannot be
       read; an invalid or non-http(s) URL
  130  interrupted
"""


def _add_rules(commands: Any) -> None:
    rules = commands.add_parser(
        "rules",
        help="check the site rules; try one on a page",
        description="Site rules (rules/<site>.yaml, docs/rules.md): validate them, or see what one extracts.",
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="rule files, or folders of *.yaml rules (default: $CRAWLER_RULES_DIR, else ./rules)",
    )
    check.set_defaults(handler=run_rules_check)

    try_ = actions.add_parser(
        "try",
        help="show what a site's rule extracts from one page: links, next page, fields, qRead fallback",
        description=(
            "Read one page (an http(s) URL, fetched politely; an HTML file; or - for standard input) and"
            " apply SITE's rule to it as an index page (the article links and the next page) and as an"
            " article page (every field, and qRead's body when the rule's body is missing or shorter"
            " than min_body_chars)."
        ),
        epilog=RULES_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    try_.add_argument(
        "site", metavar="SITE", help="site id (a rule file's name without .yaml), or a rule file"
    )
    try_.add_argument("source", metavar="URL|FILE", help="http(s) URL, path of an HTML file, or - for stdin")
    try_.add_argument(
        "--rules-dir",
        metavar="DIR",
        help="folder of the rules (default: $CRAWLER_RULES_DIR, else ./rules)",
    )
    try_.add_argument(
        "--url",
        metavar="URL",
        help="the URL a file was saved from, to resolve its links (default: the rule's first start URL)",
    )
    try_.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    try_.add_argument(
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of each request (default: {DEFAULT_TIMEOUT:g})",
    )
    try_.add_argument(
        "--max-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"size limit of the page, after decompression (default: {DEFAULT_MAX_BYTES:,})",
    )
    try_.set_defaults(handler=run_rules_try)


def run_rules_check(args: argparse.Namespace) -> int:
    """``crawler rules check``: every error of every rule file, one per line, then a summary."""
    paths = [Path(path) for path in args.paths] or [crawlcli.rules_dir()]
    loaded: dict[str, Rule] = {}
    errors: list[RuleError] = []
    files = 0
    for path in paths:
        if path.is_dir():
            ruleset = load_rules(path)
            rules, found = list(ruleset), ruleset.errors
            files += len(rules) + len(ruleset.files_with_errors)
        elif path.exists():
            files += 1
            try:
                rules, found = [load_rule(path)], ()
            except RuleErrors as exc:
                rules, found = [], exc.errors
        else:
            raise InputError(f"no such rule file or folder: {str(path)!r}")
        errors += found
        for rule in rules:
            other = loaded.get(rule.site)
            if other is not None and other.path.resolve() != rule.path.resolve():
                problem = f"site id {rule.site!r} is also the site of {other.path}"
                errors.append(RuleError(str(rule.path), "", problem, "one rule file per site id"))
            else:
                loaded[rule.site] = rule
    for error in errors:
        print(printable(str(error)))
    summary = _counted(len(loaded), "rule") + " ok"
    if errors:
        bad_files = len(dict.fromkeys(error.file for error in errors))
        summary += f", {_counted(bad_files, 'file')} with {_counted(len(errors), 'error')}"
    print(summary)
    if not files:
        print(f"crawler rules check: no *.yaml rule file in {', '.join(map(str, paths))}", file=sys.stderr)
    return EXIT_RULE_ERRORS if errors else EXIT_OK


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class Trial:
    """What ``crawler rules try`` found on one page."""

    rule: Rule
    page: Page
    decoded: Decoded
    url: str
    links: list[str]
    next_page: str | None
    fields: dict[str, str | None]
    qread_body: str | None  # None when the rule's own body is long enough

    @property
    def body_from(self) -> str:
        return "qread" if self.rule.needs_qread(self.fields["body"]) else "rule"

    @property
    def body_note(self) -> str:
        body, minimum = self.fields["body"], self.rule.min_body_chars
        if body is None:
            return f"qRead: the rule gives no body (min_body_chars {minimum})"
        if self.body_from == "qread":
            return f"qRead: the rule's body has {len(body):,} characters < min_body_chars {minimum}"
        return f"the rule: {len(body):,} characters >= min_body_chars {minimum}"


def run_rules_try(args: argparse.Namespace) -> int:
    """``crawler rules try``: the links, next page and fields SITE's rule finds on one page."""
    candidate = Path(args.site)
    if args.site.endswith(RULE_SUFFIX) and candidate.is_file():
        path = candidate
    else:
        directory = crawlcli.rules_dir(args.rules_dir)
        path = directory / f"{args.site}{RULE_SUFFIX}"
        if not path.is_file():
            sites = sorted(entry.stem for entry in directory.glob(f"*{RULE_SUFFIX}"))
            known = f" (sites: {', '.join(sites)})" if sites else f" (no rules in {directory})"
            raise InputError(f"no rule for site {args.site!r}: {str(path)!r} does not exist{known}")
    try:
        rule = load_rule(path)
    except RuleErrors as exc:
        for error in exc.errors:
            print(f"crawler rules: error: {printable(str(error))}", file=sys.stderr)
        return exc.exit_code
    if args.url is not None and not _URL_RE.match(args.url):
        raise InputError(f"--url {args.url!r} is not an http(s) URL")
    page = read_page(
        args.source, max_bytes=args.max_bytes, timeout=args.timeout, obey_robots=rule.obey_robots
    )
    if rule.encoding:
        page = replace(page, content_type=f"text/html; charset={rule.encoding}")
    decoded = decode_page(page)
    root = parse_html(decoded.text)
    if root is None:
        raise InputError(f"{_shown(page.source)} holds no HTML element to apply the rule to")
    url = page.url or args.url or rule.start_urls[0]
    if not rule.allows_host(urlsplit(url).hostname):
        print(
            f"crawler rules try: note: {url} is not on the rule's domains ({', '.join(rule.domains)}):"
            " its links are all dropped",
            file=sys.stderr,
        )
    fields = rule.extract_fields(root)
    qread_body = None
    if rule.needs_qread(fields["body"]):
        extraction = run_algorithm(
            decoded.text, url=url, title=fields["title"], algo=QREAD_ALGORITHM, source=page.source
        )
        qread_body = extraction.text or None
    trial = Trial(
        rule,
        page,
        decoded,
        url,
        rule.article_links(url, root),
        rule.next_page_url(url, root),
        fields,
        qread_body,
    )
    if args.format == "json":
        print(json.dumps(_trial_document(trial), ensure_ascii=False, indent=2))
    else:
        _print_trial(trial)
    return EXIT_OK


def _trial_document(trial: Trial) -> dict[str, Any]:
    rule = trial.rule
    return {
        "site": rule.site,
        "rule_file": str(rule.path),
        "source": trial.page.source,
        "url": trial.url,
        "encoding": trial.decoded.encoding,
        "links": trial.links,
        "next_page": trial.next_page,
        "fields": trial.fields,
        "min_body_chars": rule.min_body_chars,
        "body_from": trial.body_from,
        "body": trial.qread_body if trial.body_from == "qread" else trial.fields["body"],
    }


def _print_trial(trial: Trial) -> None:
    rule, page = trial.rule, trial.page
    as_url = "" if page.url else f" (links resolved as {trial.url})"
    print(f"rule       {rule.site} ({printable(rule.name)}), {rule.path}")
    print(f"page       {printable(page.source)}{as_url}")
    how = "the rule's encoding key" if rule.encoding else _ENCODING_SOURCES[trial.decoded.source]
    print(f"encoding   {trial.decoded.encoding} ({how})")
    print()
    print(f"as an index page: {_counted(len(trial.links), 'article link')}")
    for link in trial.links:
        print(f"  {printable(link)}")
    if rule.next_page is None:
        next_page = "- (the rule has no index.next_page)"
    else:
        next_page = printable(trial.next_page) if trial.next_page else "- (none found)"
    print(f"next page  {next_page}")
    print()
    print("as an article page:")
    width = max(len(name) for name in trial.fields)
    for name, value in trial.fields.items():
        lines = ["-"] if value is None else printable(value).splitlines() or [""]
        print(f"  {name:<{width}}  {lines[0]}".rstrip())
        for line in lines[1:]:
            print(f"  {'':<{width}}  {line}".rstrip())
    print(f"body from  {trial.body_note}")
    if trial.body_from == "qread":
        print()
        print(f"--- body from {QREAD_ALGORITHM} ---")
        print(printable(trial.qread_body) if trial.qread_body else "(qRead found no main text either)")


# --- argument types ---------------------------------------------------------------------------------------


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not (number > 0 and math.isfinite(number)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return number


def _positive_int(value: str) -> int:
    number = _non_negative_int(value)
    if number == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number


def _non_negative_int(value: str) -> int:
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value!r}")
    return number


if __name__ == "__main__":
    sys.exit(main())
