"""``crawler articles``: look at what was stored (docs/cli.md).

``list``, ``show``, ``search``, ``export`` and ``stats`` read the store :func:`crawler.store.open_store`
opens from the configuration (MongoDB with ``MONGO_URI``, else the SQLite files under
``CRAWLER_DATA_DIR``). Their output depends only on the documents, so it is the same on both backends.
Tables by default (readable in a terminal, plain when piped); ``--format json|jsonl|csv`` for machines.
``export`` streams: one document in memory at a time, whatever the store's size.

A SQLite week file that cannot be read (damaged, or unreadable) is left out of reads across weeks: the
other weeks are shown, a warning on stderr names the file and what to do, and the exit code is
``EXIT_PARTIAL`` so that scripts see the output is incomplete. ``--week`` naming that week is an error.
"""

from __future__ import annotations

import argparse
import csv
import errno
import json
import os
import re
import shlex
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import urldefrag

import redis
from rich.cells import cell_len
from rich.markup import escape
from rich.table import Table

from crawler.cli.options import check_window, data_folder, resolve_ages
from crawler.cli.parser import NESTED_FIELD
from crawler.cli.terminal import output_advice, printable, table_console, tell
from crawler.commandline import command_name, counted, did_you_mean, suggest
from crawler.config import Config
from crawler.errors import CrawlerError, InputError, file_in_the_way
from crawler.redisio.connection import connect, resolve_redis_url
from crawler.redisio.embedded import AOF_FILE, RedisUnavailableError, server_directory
from crawler.store import DOCUMENT_FIELDS, Store, open_store
from crawler.store.base import limited
from extractors.summary import sentences_in

__all__ = ["ArticleNotFound", "run_export", "run_list", "run_search", "run_show", "run_stats"]

# Widest text `show` wraps to, however wide the terminal.
MAX_WRAP = 100
# Fields `show` prints in sections of their own, not on one labelled line.
_NOT_ONE_LINE = frozenset({"body", "summary", "reposts", "fields", "extraction", "redirected_from"})
# JSON-valued fields, written as JSON text in a CSV cell.
_NESTED = ("fields", "extraction", "summary", "reposts", "redirected_from")
# An article id as given: 16 hex digits, in either case.
_ID_RE = re.compile(r"[0-9a-f]{16}", re.IGNORECASE)
# Hex digits that are no article's id: part of one (a table's column cut), a dead letter's id or a job's.
_SHORT_ID_RE = re.compile(r"(?=.*[0-9])(?:[0-9a-f]{6,15}|[0-9a-f]{17,})", re.IGNORECASE)
# What to do when an export outgrew the largest file allowed.
_EXPORT_LESS = "export a part at a time (--week, --site, --since and --until)"
# Exit codes: the output is complete; the output leaves out weeks whose files could not be read.
EXIT_OK = 0
EXIT_PARTIAL = 1


class ArticleNotFound(CrawlerError):
    """No stored article has the URL or id asked for."""


def _check_site(store: Store, site: str | None, stats: list[dict[str, Any]] | None = None) -> None:
    """:class:`InputError` when ``site`` (if given) has no article in the store: a misspelt site id says so,
    with the sites that have articles, rather than showing nothing. ``stats``: the store's
    :meth:`Store.stats` of every week, when the caller has read them already; else the site's articles are
    counted (its index), and every week's statistics, which read every article, only to name the sites
    when it has none."""
    if site is None:
        return
    if stats is None and store.count(site):
        return
    sites = sorted({str(row["site"]) for row in (store.stats() if stats is None else stats)})
    if site in sites:
        return
    read = " in the weeks that could be read" if store.weeks_left_out() else ""
    if not sites:
        empty = read or ": the store has no articles yet"
        raise InputError(f"no articles of site {site!r}{empty} ({store!r})")
    hint = did_you_mean(site, sites)
    raise InputError(f"no articles of site {site!r}{read}{hint} (sites with articles: {', '.join(sites)})")


def _check_week(store: Store, week: str | None) -> None:
    """:class:`InputError` when ``week`` (if given) has no store: a week never crawled, or mistyped, says
    so, with the weeks stored, rather than showing nothing."""
    if week is None:
        return
    weeks = store.weeks()
    if week in weeks:
        return
    if not weeks:
        raise InputError(f"no articles of week {week!r}: the store has no articles yet ({store!r})")
    raise InputError(f"no articles of week {week!r} (weeks stored: {', '.join(weeks)})")


def _note_if_empty(store: Store, stats: list[dict[str, Any]] | None = None) -> None:
    """On stderr, when the store has no article at all: where articles come from (MongoDB when
    ``MONGO_URI`` is set; else, when crawls ran on the data folder's Redis, maybe MongoDB), or that they
    were deleted when the store has weeks (``sites forget SITE --articles``), and where the
    demo's are (not when weeks were left out: it has articles that could not be read). ``stats``: the store's
    :meth:`Store.stats` of every week, when the caller has read them already."""
    if (store.stats() if stats is None else stats) or store.weeks_left_out():
        return
    config = Config.from_env()
    data = config.data_dir
    command = command_name()
    crawl = suggest("temp SITE")
    rules = data / "rules"
    if any(rules.glob("demo-*.yaml")) and rules.resolve() != config.rules_dir.resolve():
        # A demo's folder (`crawler demo --serve` wrote its rules there): ./rules holds none of its sites.
        folders = f"--data-dir {shlex.quote(str(data))} --rules-dir {shlex.quote(str(rules))}"
        crawl = f"{command} {folders} temp SITE"
    weeks = store.weeks()
    if weeks:
        # Week stores are made by the first article stored in them: theirs were deleted since.
        span = weeks[0] if len(weeks) == 1 else f"{weeks[0]} to {weeks[-1]}"
        where = f"in {store!r}" if config.mongo_uri else f"under {data}"
        tell(
            "note",
            f"no articles stored {where}: its store has {counted(len(weeks), 'week')} of articles ({span}),"
            f" all deleted since (`{suggest('sites forget SITE --articles')}` deletes a site's); their URLs"
            f" stay seen: `{crawl} --again` fetches a site's articles again",
        )
        return
    if config.mongo_uri:
        tell("note", f"no articles stored in {store!r} yet; crawl first: `{crawl}`")
        return
    note = f"no articles stored under {data} yet; crawl first: `{crawl}`"
    if _crawled_on(data):
        note = (
            f"no articles stored under {data}, though crawls ran on its Redis (`{suggest('status')}` shows"
            " them): if their workers stored into MongoDB, set MONGO_URI as they had it to see their"
            f" articles; else crawl first: `{crawl}`"
        )
    demo = data / "demo"
    if demo.is_dir():
        shown = shlex.quote(str(demo))
        note += f"; the demo's are under {demo}: `{command} --data-dir {shown} articles stats`"
    tell("note", note)


def _crawled_on(data: Path) -> bool:
    """Whether the embedded Redis of the data folder ``data`` holds a key: crawls ran on it. False when it
    never ran there, or cannot say (it does not start: the note is only a hint)."""
    if not (server_directory(data) / AOF_FILE).is_file():
        return False
    try:
        url, embedded = resolve_redis_url(None, data, reads_only=True)
    except RedisUnavailableError:
        return False
    try:
        client = connect(url, reads_only=True)
        try:
            return int(client.dbsize()) > 0
        finally:
            client.close()
    except redis.RedisError:
        return False
    finally:
        if embedded is not None:
            embedded.close()


@contextmanager
def _store() -> Iterator[Store]:
    """The configured store, its reads across weeks leaving out the weeks whose files cannot be read; once
    closed, each week left out is named on stderr with the error that says what to do. Without
    ``MONGO_URI``, a data folder that does not exist (a misspelt ``--data-dir``) is an :class:`InputError`,
    as for ``status`` and ``dead``, rather than an empty store."""
    config = Config.from_env()
    if not config.mongo_uri:
        data_folder(config.data_dir)
    store = open_store(config.values(), skip_damaged=True)
    try:
        yield store
    finally:
        left_out = store.weeks_left_out()
        store.close()
        for week, error in left_out.items():
            tell("warning", f"articles of week {week} are missing from this output: {error}")


def _status(store: Store) -> int:
    """The exit code of a command that read ``store``: ``EXIT_PARTIAL`` when weeks were left out."""
    return EXIT_PARTIAL if store.weeks_left_out() else EXIT_OK


# --- list and search ----------------------------------------------------------------------------------


def _check_windows(args: argparse.Namespace) -> None:
    """The ages given (``--since 10m``) made times by the clock ``first_seen`` follows (Redis's, when
    ``REDIS_URL`` names it and it answers: :func:`resolve_ages`); InputError when ``--since`` is not before
    ``--until``, or ``--published-since`` not before ``--published-until``."""
    resolve_ages(args, Config.from_env().redis_url, needs_redis=False)
    check_window(args.since, args.until)
    check_window(args.published_since, args.published_until, option="--published-", happened="published")


def run_list(args: argparse.Namespace) -> int:
    _check_windows(args)
    with _store() as store:
        _check_site(store, args.site)
        _check_week(store, args.week)
        documents = store.iter_articles(
            site=args.site,
            week=args.week,
            since=args.since,
            until=args.until,
            limit=None if args.reposts else args.limit,
            published_since=args.published_since,
            published_until=args.published_until,
        )
        title = "Articles, latest stored first"
        if args.reposts:
            documents = limited((d for d in documents if d.get("reposts")), args.limit)
            title = "Articles with reposts recorded against them, latest stored first"
        if not _print_documents(documents, args.format, title=title, limit=args.limit):
            _note_if_empty(store)
        return _status(store)


def run_search(args: argparse.Namespace) -> int:
    _check_windows(args)
    with _store() as store:
        _check_site(store, args.site)
        _check_week(store, args.week)
        documents = store.search(
            args.text,
            site=args.site,
            week=args.week,
            limit=args.limit,
            since=args.since,
            until=args.until,
            published_since=args.published_since,
            published_until=args.published_until,
        )
        title = f"Articles with {args.text}, latest stored first"
        if not _print_documents(documents, args.format, title=title, limit=args.limit):
            _note_if_empty(store)
        return _status(store)


def _print_documents(documents: Iterable[dict[str, Any]], form: str, *, title: str, limit: int | None) -> int:
    """Print ``documents`` in ``form``; returns how many there were."""
    if form != "table":
        return _write_documents(documents, form, sys.stdout)
    table = Table(title=escape(title), title_justify="left")
    for column, style in (
        ("id", "dim"),
        ("first seen (UTC)", ""),
        ("site", "cyan"),
        ("published", ""),
        ("title", "bold"),
    ):
        table.add_column(column, style=style or None, overflow="fold")
    rows = 0
    for document in documents:
        table.add_row(
            escape(document["id"]),
            escape(document["first_seen"][:16].replace("T", " ")),
            escape(document["site"]),
            escape(str(document.get("published") or "")[:10]),
            escape(printable(document.get("title") or "(no title)")),
        )
        rows += 1
    if limit == 0:
        more = " shown (--limit 0: give 1 or more to see some)"
    elif limit is not None and rows == limit:
        more = " (the first ones: --limit N shows more)"
    else:
        more = ""
    with table_console() as console:
        if rows:
            console.print(table)
        console.print(f"{counted(rows, 'article')}{more}")
    return rows


# --- show -----------------------------------------------------------------------------------------------


def _summaries(summary: dict[str, str]) -> list[tuple[str, list[int]]]:
    """A document's summaries by the sentences asked, shortest first, each text once with the lengths
    that gave it (a body of few sentences has the same summary of 1 and of 3)."""
    shown: dict[str, list[int]] = {}
    for length, text in sorted(summary.items(), key=lambda pair: int(pair[0])):
        shown.setdefault(text, []).append(int(length))
    return list(shown.items())


def _repost_kind(record: dict[str, Any], original: str) -> str:
    """How a repost matched its original, in words: an exact copy, the same article edited, or one a part
    of the other; how much they share, and the SimHash distance."""
    match = record.get("match")
    if match == "exact":
        return "an exact copy"
    if match == "partial":
        kind = "a part of it" if record.get("partial_of") == original else "it holds this article whole"
    else:
        kind = "the same article, edited"
    details = []
    if record.get("share") is not None:
        details.append(f"{record['share']:.0%} of the shorter text's own phrases shared")
    if record.get("distance") is not None:
        details.append(f"SimHash {record['distance']} bits apart")
    return kind + (f" ({', '.join(details)})" if details else "")


def _reached(asked: str, url: str) -> str:
    """The start of the note of ``show`` on the repost ``url`` asked for as ``asked``: its own URL, or
    one that redirected to it."""
    if asked == url:
        return f"{printable(url)} is"
    return f"{printable(asked)} redirected to {printable(url)} when it was fetched,"


def _lookup(article: str) -> str:
    """What ``show`` looks ``article`` up by: an id in lower case (ids are hex digits), or the URL without
    its fragment (stored URLs have none)."""
    article = article.strip()
    if _ID_RE.fullmatch(article):
        return article.lower()
    return urldefrag(article).url


def run_show(args: argparse.Namespace) -> int:
    asked = _lookup(args.article)
    with _store() as store:
        document = store.get(asked)
        repost = redirect = None
        if document is None:
            document = store.redirected_to(asked)
            if document is not None:
                redirect = {"url": asked, "stored_as": document["url"]}
        if document is None:
            document = store.original_of(asked)
            if document is not None:
                repost = next(
                    r
                    for r in document["reposts"]
                    if asked == r["url"] or asked in r.get("redirected_from", ())
                )
        if document is None:
            raise ArticleNotFound(_not_found(store, args.article))
        _print_document(document, args.format, asked, repost=repost, redirect=redirect)
        return _status(store)


def _not_found(store: Store, article: str) -> str:
    """Why ``show`` found no ``article``: none is stored, or none in the weeks read, naming the weeks that
    could not be read (the warnings above say why) since it may be in one of them."""
    unread = sorted(store.weeks_left_out())
    if not unread:
        digits = article.strip()
        length = (
            f" ({len(digits)} hex digits: an article's id has 16; the ids of dead letters and jobs have 12)"
            if _SHORT_ID_RE.fullmatch(digits)
            else ""
        )
        return (
            f"no stored article has the URL or id {article!r}{length}: see `{suggest('articles list')}` or"
            " `search`"
        )
    weeks, them = (f"week {unread[0]}", "it") if len(unread) == 1 else (f"weeks {', '.join(unread)}", "them")
    return (
        f"no readable week holds the URL or id {article!r}; {weeks} could not be read (see above):"
        f" restore {them} (docs/operations.md, 'Backing up a week') and try again"
    )


def _print_document(
    document: dict[str, Any],
    form: str,
    asked: str,
    *,
    repost: dict[str, Any] | None = None,
    redirect: dict[str, str] | None = None,
) -> None:
    """Print ``document``, found by the URL or id ``asked``, as ``show`` does: JSON, or its fields and
    text. Asked for by the URL of a repost recorded against it (or one that redirected to the repost's),
    the repost's record comes first: the JSON's ``repost`` key, a note in text; asked for by a URL that
    redirected to it, ``redirect`` (``url`` asked for, ``stored_as``) likewise."""
    if form == "json":
        first = {
            name: said for name, said in (("repost", repost), ("redirect", redirect)) if said is not None
        }
        sys.stdout.write(json.dumps({**first, **document}, ensure_ascii=False, indent=2) + "\n")
        return
    width = min(shutil.get_terminal_size((MAX_WRAP, 24)).columns, MAX_WRAP)
    lines = []
    if repost is not None:
        lines += [
            f"{_reached(asked, repost['url'])} a repost of this article, {document['url']}:"
            f" {_repost_kind(repost, document['url'])} (recorded here, not stored again)",
            "",
        ]
    if redirect is not None:
        lines += [
            f"{printable(redirect['url'])} redirected to {printable(redirect['stored_as'])} when it was"
            f" fetched: this article is stored under {printable(redirect['stored_as'])}",
            "",
        ]
    labelled = [(f"{name}:", document[name]) for name in DOCUMENT_FIELDS if name not in _NOT_ONE_LINE] + [
        (f"fields.{name}:", value) for name, value in sorted((document.get("fields") or {}).items())
    ]
    label_width = max(14, *(len(label) + 1 for label, _ in labelled))
    for label, value in labelled:
        lines.append(f"{label:<{label_width}}{printable(str(value if value is not None else '-'))}")
    extraction = document.get("extraction") or {}
    if extraction:
        lines.append(
            f"{'extraction:':<{label_width}}body from {extraction.get('body_from')}"
            + (f" ({extraction['algorithm']})" if extraction.get("algorithm") else "")
            + f", {extraction.get('body_chars')} characters"
        )
    redirects = document.get("redirected_from") or []
    if redirects:
        lines.append("")
        lines.append("redirected from:")
        lines.extend(f"  {printable(url)}" for url in redirects)
    for text, lengths in _summaries(document.get("summary") or {}):
        shown = sentences_in(text, document.get("body") or "")
        others = " and ".join(str(length) for length in lengths if length != shown)
        also = "also " if shown in lengths else ""
        lines.append("")
        lines.append(
            f"summary, {counted(shown, 'sentence')}" + (f" ({also}of {others} asked):" if others else ":")
        )
        lines.extend(f"  {line}" for line in _wrapped(text, width - 2))
    reposts = document.get("reposts") or []
    if reposts:
        lines.append("")
        lines.append(f"reposts ({len(reposts)}), when fetched (UTC):")
        lines.extend(
            f"  {repost['fetched_at'][:16].replace('T', ' ')}  {repost['site']}"
            f"  {printable(repost['url'])}  ({_repost_kind(repost, document['url'])})"
            for repost in reposts
        )
    lines.append("")
    lines.append("body:")
    for paragraph in (document.get("body") or "").split("\n\n"):
        lines.extend(_wrapped(paragraph, width) or [""])
        lines.append("")
    sys.stdout.write("\n".join(lines).rstrip("\n") + "\n")


# Characters no line starts with (closing punctuation, iteration marks, small kana) and none ends with
# (opening punctuation), as Chinese and Japanese typesetting keep them (kinsoku): a line breaks before the
# character they hold on to.
_NO_LINE_START = frozenset(
    "，。、．：；！？）］｝〕〉》」』】〗〙〟’”｠…‥・ー々〻ゝゞヽヾ"
    "ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ,.:;!?)]}%"
)
_NO_LINE_END = frozenset("（［｛〔〈《「『【〖〘〝‘“｟([{")


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in "WF"


def _unbreakable(word: str) -> Iterator[str]:
    """The parts of ``word`` (no space in it) that a line may not break inside: it may break on either
    side of a wide character (Chinese text has no spaces), never before a character of _NO_LINE_START nor
    after one of _NO_LINE_END."""
    start = 0
    for index in range(1, len(word)):
        before, after = word[index - 1], word[index]
        if (_wide(before) or _wide(after)) and after not in _NO_LINE_START and before not in _NO_LINE_END:
            yield word[start:index]
            start = index
    yield word[start:]


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` printable, its white space collapsed, on lines of at most ``width`` terminal columns, each
    wide character counted as the two columns it takes (``textwrap`` counts one a character): broken at
    spaces, and between the characters of a run without any (Chinese text), no line starting with a
    closing punctuation mark (``，``, ``。``) nor ending with an opening one (:func:`_unbreakable`). A part
    wider than a line (a long URL; every wide character on a terminal narrower than it) is cut where the
    line ends."""
    lines: list[str] = []
    line, used = "", 0
    for word in printable(text).split():
        for index, part in enumerate(_unbreakable(word)):
            gap = 1 if index == 0 and line else 0
            columns = cell_len(part)
            if used + gap + columns <= width:
                line, used = line + " " * gap + part, used + gap + columns
                continue
            if line:
                lines.append(line)
            rest = part
            while columns > width and len(rest) > 1:
                cut = 1
                while cut < len(rest) and cell_len(rest[: cut + 1]) <= width:
                    cut += 1
                lines.append(rest[:cut])
                rest = rest[cut:]
                columns = cell_len(rest)
            line, used = rest, columns
    if line:
        lines.append(line)
    return lines


# --- export ---------------------------------------------------------------------------------------------


def _export_target(output: str | None, form: str) -> Path | None:
    """The file ``export -o OUTPUT`` writes, or None for stdout (no ``-o``, or ``-o -``); InputError when
    it cannot be a file: a folder, or in a folder that does not exist."""
    if output is None or output == "-":
        return None
    target = Path(output)
    if target.is_dir():
        raise InputError(
            f"-o {output} is a folder: give the path of a file to write the export to"
            f" ({target / f'articles.{form}'}, say), or - for stdout"
        )
    if not target.parent.is_dir():
        try:
            in_the_way = file_in_the_way(target.parent)
        except PermissionError:
            in_the_way = None
        if in_the_way is not None:
            raise InputError(
                f"-o {output}: {in_the_way} is a file, not a folder: give a path in a folder (or move the"
                " file away and make the folder)"
            )
        raise InputError(f"-o {output}: the folder {target.parent} does not exist: make it first")
    if target.is_symlink():
        # A link to a file not made yet is fine (the export makes it); one that leads back to itself
        # cannot be resolved to a file to write.
        try:
            os.stat(target)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(
                    f"-o {output} is a symbolic link that leads round in a loop ({exc.strerror}): point it at"
                    " a file, or give another -o FILE"
                ) from None
    return target


def run_export(args: argparse.Namespace) -> int:
    _check_windows(args)
    target = _export_target(args.output, args.format)
    fields = args.fields or DOCUMENT_FIELDS
    with _store() as store:
        _check_site(store, args.site)
        _check_week(store, args.week)
        documents = store.iter_articles(
            site=args.site,
            week=args.week,
            since=args.since,
            until=args.until,
            newest_first=False,
            limit=args.limit,
            published_since=args.published_since,
            published_until=args.published_until,
        )
        held: set[str] = set()
        if args.fields:
            documents = (_projected(document, fields, held) for document in documents)
        if target is not None and target.exists() and not target.is_file():
            # A device, a pipe or a socket (/dev/null, a FIFO, /dev/stdout): FILE.part renamed over it
            # would replace it by a plain file, so it is written into as stdout is.
            try:
                with target.open("w", encoding="utf-8", newline="") as handle:
                    count = _write_documents(documents, args.format, handle, fields)
            except OSError as exc:
                advice = output_advice(
                    exc, f"the disk {target} writes to, or give another -o FILE", _EXPORT_LESS
                )
                raise InputError(
                    f"cannot write the export to {target}: {exc}{advice}; what it holds is incomplete"
                ) from exc
        elif target is None:
            try:
                count = _write_documents(documents, args.format, sys.stdout, fields)
            except BrokenPipeError:
                raise
            except OSError as exc:
                # What stdout still buffers could not be written either: it goes nowhere, not to an
                # error at exit.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                advice = output_advice(
                    exc, "the disk stdout goes to, or give -o FILE on another disk", _EXPORT_LESS
                )
                raise InputError(
                    f"cannot write the export to stdout: {exc}{advice}; what it holds is incomplete"
                ) from exc
        else:
            # A symbolic link's file is written (FILE.part beside it, renamed over it), the link kept.
            written = target.resolve() if target.is_symlink() else target
            partial = written.with_name(written.name + ".part")
            # An export that left out weeks is written to no FILE, an earlier one or none: it stays in
            # FILE.part.
            incomplete = opened = False
            try:
                with partial.open("w", encoding="utf-8", newline="") as handle:
                    opened = True
                    count = _write_documents(documents, args.format, handle, fields)
                incomplete = bool(store.weeks_left_out())
                if not incomplete:
                    partial.replace(written)
            except OSError as exc:
                advice = output_advice(exc, f"the disk of {target.parent}", _EXPORT_LESS) or (
                    "" if opened else _unmade_advice(exc, partial)
                )
                raise InputError(
                    f"cannot write the export to {target}: {exc}{advice}"
                    + (f"; {target} is left as it was" if target.exists() else "")
                ) from exc
            finally:
                # Only the file this export made: not what stood in its way (a folder named FILE.part).
                if opened and not incomplete:
                    partial.unlink(missing_ok=True)
            if incomplete:
                kept = ", which is left as it was" if target.exists() else ""
                tell(
                    None,
                    f"exported {counted(count, 'article')} to {partial}, not to {target}{kept}: weeks are"
                    " missing from this export (see below)",
                )
                _warn_of_missing_fields(fields, held)
                return _status(store)
        tell(None, f"exported {counted(count, 'article')}")
        _warn_of_missing_fields(fields, held)
        return _status(store)


def _unmade_advice(exc: OSError, partial: Path) -> str:
    """What to do when the export's ``partial`` file (FILE.part, renamed to FILE once written) could not be
    made in its folder, which exists, for ``exc``; else nothing."""
    folder = partial.parent
    instead = "give -o FILE in a folder of a disk you can write to, or - for stdout"
    if exc.errno == errno.ENOENT:
        return f"; {folder} takes no new file (a system folder, as /proc or /sys are): {instead}"
    if exc.errno == errno.EROFS:
        return f"; {folder} is on a read-only file system: {instead}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"; this user may not make files in {folder}: {instead}"
    return ""


def _projected(document: dict[str, Any], fields: Sequence[str], held: set[str]) -> dict[str, Any]:
    """``document``'s ``fields`` (``fields.NAME``: the value of NAME in its ``fields``, None when it has
    none), adding the names its ``fields`` holds to ``held``."""
    nested = document["fields"] or {}
    held.update(nested)
    return {
        name: nested.get(name.removeprefix(NESTED_FIELD)) if name.startswith(NESTED_FIELD) else document[name]
        for name in fields
    }


def _warn_of_missing_fields(fields: Sequence[str], held: set[str]) -> None:
    """A warning for each ``fields.NAME`` asked that no exported article holds (a misspelt name: its
    column is empty), naming the names they hold, or saying they hold none."""
    names = (
        f"the names of their fields: {', '.join(sorted(held))}"
        if held
        else "none of them holds a field in its `fields`, the rule's fields beyond title, body, published"
        " and author"
    )
    for name in fields:
        if name.startswith(NESTED_FIELD) and name.removeprefix(NESTED_FIELD) not in held:
            tell("warning", f"no article exported has {name} ({names})")


def _write_documents(
    documents: Iterable[dict[str, Any]], form: str, out: IO[str], fields: Sequence[str] = DOCUMENT_FIELDS
) -> int:
    """Write ``documents`` one at a time as ``json`` (an array), ``jsonl`` or ``csv`` (its columns
    ``fields``); returns how many."""
    count = 0
    if form == "csv":
        writer = csv.writer(out)
        writer.writerow(fields)
        for document in documents:
            writer.writerow(
                [
                    # A rule's field (fields.NAME) may hold a list or a mapping: JSON as the nested columns.
                    json.dumps(document[name], ensure_ascii=False, sort_keys=True)
                    if name in _NESTED or isinstance(document[name], (list, dict))
                    else ("" if document[name] is None else document[name])
                    for name in fields
                ]
            )
            count += 1
        return count
    if form == "json":
        out.write("[")
    for document in documents:
        text = json.dumps(document, ensure_ascii=False)
        if form == "json":
            out.write(("\n  " if count == 0 else ",\n  ") + text)
        else:
            out.write(text + "\n")
        count += 1
    if form == "json":
        out.write("\n]\n" if count else "]\n")
    return count


# --- stats ----------------------------------------------------------------------------------------------


_STATS_FIELDS = ("week", "site", "articles", "reposts", "qread")


def run_stats(args: argparse.Namespace) -> int:
    """The store's counts read once: every week's when no week is asked for, the week's alone otherwise
    (a site asked for is checked by its count). A week asked for that a read across weeks left out (its
    file damaged) is read again on its own, to fail as it does when it is read alone."""
    with _store() as store:
        every_week = store.stats() if args.week is None else None
        _check_site(store, args.site, every_week)
        _check_week(store, args.week)
        read = every_week
        if read is None or args.week in store.weeks_left_out():
            read = store.stats(args.week)
        rows = [row for row in read if args.week in (None, row["week"]) and args.site in (None, row["site"])]
        if not rows:
            _note_if_empty(store, every_week)
        _print_stats(rows, args.format)
        return _status(store)


def _print_stats(rows: list[dict[str, Any]], form: str) -> None:
    """Print the rows of :meth:`Store.stats` and their total as a table or (``form`` json) JSON, or the
    rows alone as JSON lines or CSV."""
    totals = {key: sum(int(row[key]) for row in rows) for key in ("articles", "reposts", "qread")}
    if form == "json":
        sys.stdout.write(json.dumps({"weeks": rows, "total": totals}, ensure_ascii=False, indent=2) + "\n")
        return
    if form == "jsonl":
        sys.stdout.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        return
    if form == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=_STATS_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
        return
    table = Table(title="Stored articles per week and site", title_justify="left")
    table.add_column("week")
    table.add_column("site", style="cyan")
    for column in ("articles", "reposts", "qRead bodies"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            escape(row["week"]),
            escape(row["site"]),
            str(row["articles"]),
            str(row["reposts"]),
            str(row["qread"]),
        )
    table.add_section()
    table.add_row(
        "total", "", str(totals["articles"]), str(totals["reposts"]), str(totals["qread"]), style="bold"
    )
    with table_console() as console:
        console.print(table)
