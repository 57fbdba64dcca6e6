"""``crawler extract URL|FILE``: the main text of one page, and with ``--explain`` why."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from crawler.cli.pages import Page, decode_page, encoding_reason, read_page, run_algorithm
from crawler.cli.terminal import cut, printable, tell
from crawler.commandline import suggest
from crawler.rules.model import ascii_host
from extractors import Block, Extraction
from extractors.encoding import Decoded

__all__ = ["run_extract"]

PREVIEW_WIDTH = 60
LABEL_WIDTH = 32


def run_extract(args: argparse.Namespace) -> int:
    """``crawler extract``: read or fetch the page, decode it, extract, print."""
    page = read_page(
        args.source,
        max_bytes=args.max_bytes,
        timeout=args.timeout,
        obey_robots=not args.ignore_robots,
        private_domains=_own_host(args.source) if args.allow_private else (),
        private_hint=_redirect_refusal(args.source) if args.allow_private else None,
    )
    decoded = decode_page(page)
    # Decoded, the bytes are not needed: a 21 MB page holds 21 MB less while it is extracted.
    page = replace(page, data=b"")
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
            "encoding_reason": encoding_reason(decoded),
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
        tell("note", f"no main text found in {page.source}: {why}")
    return 0


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
        ("encoding", f"{decoded.encoding} ({encoding_reason(decoded)})"),
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


def _own_host(source: str) -> tuple[str, ...]:
    """The host of the URL ``source`` (none for a file), the one host ``--allow-private`` lets through, in
    the form the request goes to (an international name in ASCII)."""
    host = urllib.parse.urlsplit(source.strip()).hostname
    return (ascii_host(host),) if host else ()


def _redirect_refusal(source: str) -> Callable[[str], str]:
    """What a refusal of a private host says under ``--allow-private``, which lets the host of ``source``
    through: the refused host is another one, a redirect's target."""
    own = urllib.parse.urlsplit(source.strip()).hostname

    def hint(host: str) -> str:
        return (
            f"{host} is the target of a redirect from {source}, another host than {own}: --allow-private"
            " allows private addresses only on the host of the URL given; give the target's URL to"
            f" `{suggest('extract --allow-private URL')}` if it is wanted"
        )

    return hint


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
