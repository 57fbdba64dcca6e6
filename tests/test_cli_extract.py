"""`crawler extract` run as a real subprocess: real exit codes and stderr, real HTTP from the local server."""

from __future__ import annotations

import http.server
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import SITES_DIR, SiteServer, command_stderr
from scrapy import Request
from siteserver import CP1252_PARAGRAPHS

from crawler.cli import extract as extractcli
from crawler.cli.parser import EXIT_CODES_HELP, RULES_EXIT_CODES_HELP
from crawler.config import ALLOW_PRIVATE_NETWORKS_ENV
from crawler.settings import USER_AGENT
from crawler.worker.netguard import private_allowed
from extractors import ALGORITHMS

ARTICLE = SITES_DIR / "news" / "harbour-bridge.html"
ARTICLE_PATH = "/news/harbour-bridge.html"
ARTICLE_TITLE = "Harbour bridge reopens after three months of repairs"
# Sentences of the article that sit on one source line, so every algorithm keeps them whole.
ARTICLE_SENTENCES = (
    "six o'clock on Saturday morning",
    "Engineers replaced every expansion joint on the main span",
    "Cyclists get a wider lane on the northern side",
)
BOILERPLATE = ("Related stories", "Finally! Took long enough.", "About us", "Privacy")
CLI_TIMEOUT = 180
# How long a test waits for a condition (a request to arrive, a stopped command to exit).
WAIT_LIMIT = 120.0


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def crawler(
    *args: str, stdin: bytes = b"", allow_private: bool = True, env: dict[str, str] | None = None
) -> Run:
    """Run ``crawler ARGS`` in a subprocess (``python -m crawler.cli``) and collect what it printed."""
    environment = {key: value for key, value in os.environ.items() if key not in _CONSOLE_VARIABLES}
    environment.pop(ALLOW_PRIVATE_NETWORKS_ENV, None)
    if allow_private:
        environment[ALLOW_PRIVATE_NETWORKS_ENV] = "1"
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-m", "crawler.cli", *args],
        input=stdin,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        env=environment,
        check=False,
    )
    run = Run(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        command_stderr(done.stderr.decode("utf-8", "replace")),
    )
    # Whatever happened, it is reported, not crashed on; `-X dev` also shows leaked sockets and files.
    assert "Traceback" not in run.stderr, run.stderr
    assert "Warning" not in run.stderr, run.stderr
    return run


_CONSOLE_VARIABLES = frozenset({"TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "NO_COLOR", "COLUMNS"})


def assert_article(text: str) -> None:
    for sentence in ARTICLE_SENTENCES:
        assert sentence in text
    for junk in BOILERPLATE:
        assert junk not in text


def one_line_error(run: Run, code: int, *fragments: str) -> str:
    """The run failed with ``code`` and one line on stderr holding every fragment; returns the line."""
    assert run.code == code, run
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# --- files and standard input -----------------------------------------------------------------------------


def test_file_prints_the_article_text() -> None:
    run = crawler("extract", str(ARTICLE))
    assert (run.code, run.stderr) == (0, "")
    assert_article(run.stdout)


# What `crawler COMMAND` says, after its name, when its stdout is on a full disk.
CUT_SHORT = (
    "error: cannot write the output to stdout: [Errno 28] No space left on device; free space on the disk"
    " stdout goes to, or send the output to another disk; the output is cut short"
)


def to_full_disk(*args: str) -> tuple[int, str]:
    """Run ``crawler ARGS`` in a subprocess with stdout on /dev/full (each write fails as on a full disk):
    its exit code and what it said on stderr."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-m", "crawler.cli", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=CLI_TIMEOUT,
            check=False,
        )
    return done.returncode, command_stderr(done.stderr)


@pytest.mark.parametrize("form", [(), ("--format", "json"), ("--explain",)])
def test_output_to_a_full_disk_is_one_line_that_says_it_was_cut(form: tuple[str, ...]) -> None:
    assert to_full_disk("extract", *form, str(ARTICLE)) == (2, f"crawler extract: {CUT_SHORT}\n")


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (("--help",), "crawler"),
        (("--version",), "crawler"),
        (("extract", "--help"), "crawler extract"),
        (("rules", "try", "--help"), "crawler rules try"),
    ],
)
def test_help_to_a_full_disk_is_one_line_that_says_it_was_cut(args: tuple[str, ...], command: str) -> None:
    assert to_full_disk(*args) == (2, f"{command}: {CUT_SHORT}\n")


def test_standard_input() -> None:
    run = crawler("extract", "-", stdin=ARTICLE.read_bytes())
    assert run.code == 0
    assert_article(run.stdout)


def test_explain_shows_blocks_and_marks_the_chosen_ones() -> None:
    blocks = crawler("extract", "--explain", "--format", "json", str(ARTICLE)).json()["blocks"]
    chosen = {block["index"] for block in blocks if block["chosen"]}
    assert chosen

    run = crawler("extract", "--explain", str(ARTICLE))
    assert run.code == 0
    report, _, text = run.stdout.partition("--- main text ---")
    assert_article(text)
    lines = report.splitlines()
    assert lines[0].split() == ["source", str(ARTICLE)]
    assert f"title      {ARTICLE_TITLE}" in report
    assert "(from the page)" in report
    assert "algorithm  qread" in report
    assert "notes" in report
    header = next(line for line in lines if line.startswith("#"))
    for column in ("label", "lines", "words", "density", "title sim", "score", "chosen", "reason", "preview"):
        assert column in header
    rows = [line for line in lines if line[:1].isdigit()]
    assert len(rows) == len(blocks)
    marked = {int(row.split()[0]) for row in rows if "✓" in row}
    assert marked == chosen
    chosen_row = next(row for row in rows if "✓" in row)
    assert "densest" in chosen_row
    assert "Harbour bridge" in chosen_row or "harbour bridge" in chosen_row


def test_explain_with_a_given_title() -> None:
    run = crawler("extract", "--explain", "--title", "Bridge repairs", str(ARTICLE))
    assert run.code == 0
    assert "title      Bridge repairs (given with --title)" in run.stdout


def test_explain_draws_a_table_on_a_terminal() -> None:
    # rich treats the output as a terminal when TTY_COMPATIBLE=1, as it does for a real one.
    run = crawler("extract", "--explain", str(ARTICLE), env={"TTY_COMPATIBLE": "1", "COLUMNS": "160"})
    assert run.code == 0
    assert "┃" in run.stdout
    assert "✓" in run.stdout
    assert "title sim" in run.stdout
    assert "main text" in run.stdout


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_each_algorithm(algo: str) -> None:
    run = crawler("extract", "--algo", algo, "--format", "json", str(ARTICLE))
    assert run.code == 0, run.stderr
    document = run.json()
    assert document["algorithm"] == algo
    for sentence in ARTICLE_SENTENCES:
        assert sentence in document["text"]
    assert document["encoding"] == "utf-8"


def test_unknown_algorithm_is_a_usage_error() -> None:
    run = crawler("extract", "--algo", "magic", str(ARTICLE))
    assert run.code == 2
    assert "invalid choice: 'magic'" in run.stderr


def test_help_documents_the_exit_codes() -> None:
    run = crawler("extract", "--help")
    assert run.code == 0
    assert "exit codes:" in run.stdout
    for option in ("--algo", "--explain", "--title", "--format", "--ignore-robots"):
        assert option in run.stdout


@pytest.mark.parametrize(
    "command",
    [("extract",), ("rules",), ("rules", "check"), ("rules", "try"), ("rules", "new")],
    ids=["extract", "rules", "rules-check", "rules-try", "rules-new"],
)
def test_help_wraps_its_description_to_the_terminal(command: tuple[str, ...]) -> None:
    """`crawler rules new --help` printed its description on one line of 627 characters (`rules try`
    289, `extract` 226) where `temp --help` wrapped its own to the terminal: the description is wrapped
    as the options' help is."""
    run = crawler(*command, "--help", env={"COLUMNS": "80"})
    assert run.code == 0
    description = run.stdout.split("\n\n")[1]
    assert max(map(len, description.splitlines())) <= 80, description


@pytest.mark.parametrize(
    "command",
    [(), ("extract",), ("rules",), ("rules", "check"), ("rules", "try"), ("rules", "new")],
    ids=["crawler", "extract", "rules", "rules-check", "rules-try", "rules-new"],
)
@pytest.mark.parametrize("columns", [60, 80])
def test_help_wraps_its_exit_codes_to_the_terminal(command: tuple[str, ...], columns: int) -> None:
    """The exit codes' table of `crawler --help`, `extract --help` and the `rules` commands' was kept as
    written, for 100 columns: lines of 99 and 103 characters in an 80-column terminal, which broke them
    mid-word. Each row is wrapped to the terminal, its text under the row's own, every word kept."""
    run = crawler(*command, "--help", env={"COLUMNS": str(columns)})
    assert run.code == 0
    table = run.stdout[run.stdout.index("exit codes:") :]
    assert max(map(len, table.splitlines())) <= columns, table
    written = EXIT_CODES_HELP if command in ((), ("extract",)) else RULES_EXIT_CODES_HELP
    assert table.split() == written.split(), table
    rows = re.findall(r"^  (\d+) +\S", table, re.MULTILINE)
    assert rows == re.findall(r"^  (\d+) +\S", written, re.MULTILINE)
    assert all(line.startswith(("  ", "exit codes:")) for line in table.splitlines() if line), table
    assert all(re.match(r"  \d+ +\S|       \S", line) for line in table.splitlines()[1:] if line), table


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("articles", "list"), ("[--week W]", "[--since T]", "[--until T]", "[--limit N]")),
        (("articles", "export"), ("[--week W]", "[--since T]", "[--until T]", "[--limit N]")),
        (("articles", "stats"), ("[--week W]",)),
        (("dead", "list"), ("[--limit N | --all]",)),
        (("temp",), ("[--limit N]", "SITE")),
    ],
    ids=["articles-list", "articles-export", "articles-stats", "dead-list", "temp"],
)
def test_usage_names_the_values_as_the_help_and_docs_cli_do(
    command: tuple[str, ...], shown: tuple[str, ...]
) -> None:
    """The usage of `articles list` read `[--since SINCE] [--until UNTIL] [--published-since T]` and
    `[--limit LIMIT]` beside a help of "at most N articles", `temp`'s `site` where every other command
    says `SITE`: the values are named as docs/cli.md's synopses and the options' help name them."""
    run = crawler(*command, "--help")
    assert run.code == 0
    usage = " ".join(run.stdout.partition("\n\n")[0].split())
    for value in shown:
        assert value in usage, usage


def test_rules_try_help_gives_every_cause_of_exit_1_docs_cli_gives() -> None:
    """`rules try` exits 1 for a rule with errors, a page not fetched (robots.txt, a refused address...) and
    a page its feeds, sitemaps or api.url names that is no feed, sitemap or JSON (docs/cli.md): its help
    says so."""
    run = crawler("rules", "try", "--help")
    assert run.code == 0
    exit_1 = " ".join(run.stdout.partition("exit codes:")[2].partition("\n  2 ")[0].split())
    for cause in (
        "a rule has errors",
        "could not be fetched",
        "robots.txt",
        "refused address",
        "no feed, sitemap or JSON",
    ):
        assert cause in exit_1, exit_1


def test_rules_new_help_gives_the_exit_codes_of_new() -> None:
    """`rules new --help` listed the exit codes of `check` and `try` alone ("0 done: every rule is valid
    (check); the page was read and shown (try)"): a page with no article links (1) and a rule file that
    exists without --force (2) were nowhere in it (docs/cli.md, `crawler rules new`)."""
    run = crawler("rules", "new", "--help")
    assert run.code == 0
    codes = " ".join(run.stdout.partition("exit codes:")[2].split())
    exit_0, _, rest = codes.partition(" 1 ")
    exit_1, _, exit_2 = rest.partition(" 2 ")
    assert "the rule was written and checked (new)" in exit_0, exit_0
    refused = "new: the page is neither an HTML page nor a feed, or has no links that look like articles'"
    assert refused in exit_1, exit_1
    assert "new: rules/SITE.yaml exists (--force replaces it)" in exit_2, exit_2


@pytest.mark.parametrize(
    ("make", "fragments"),
    [
        (lambda directory: directory / "missing.html", ("no such file", "missing.html")),
        (lambda directory: directory, ("is a directory",)),
    ],
    ids=["missing-file", "directory"],
)
def test_unusable_path(tmp_path: Path, make: Any, fragments: tuple[str, ...]) -> None:
    one_line_error(crawler("extract", str(make(tmp_path))), 2, *fragments)


def test_missing_file_that_looks_like_a_url_gets_a_hint() -> None:
    one_line_error(
        crawler("extract", "www.example.com/news"), 2, "did you mean the URL https://www.example.com"
    )


def test_missing_file_that_looks_like_a_url_of_this_machine_gets_an_http_hint() -> None:
    """`127.0.0.1:8631/citynews/` (the demo's site, a page served here) was given the hint of an https
    URL, which a server on a port of this machine seldom speaks: http, as `rules new` and `temp --url`
    suggest for it."""
    one_line_error(
        crawler("extract", "127.0.0.1:8631/citynews/"),
        2,
        "did you mean the URL http://127.0.0.1:8631/citynews/",
    )


@pytest.mark.parametrize("content", [b"", b"   \n\t\n  "], ids=["empty", "blank"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.html"
    path.write_bytes(content)
    one_line_error(crawler("extract", str(path)), 2, "is empty")


def test_empty_standard_input() -> None:
    one_line_error(crawler("extract", "-"), 2, "standard input is empty")


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "random.html"
    path.write_bytes(random.Random(1).randbytes(200_000))
    one_line_error(crawler("extract", str(path)), 2, "is not HTML", "binary data")


def test_image_file(tmp_path: Path) -> None:
    path = tmp_path / "photo.html"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + random.Random(2).randbytes(5000))
    one_line_error(crawler("extract", str(path)), 2, "is not HTML", "PNG image")


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    one_line_error(
        crawler("extract", "--max-bytes", "1000", str(ARTICLE)), 2, "larger than the limit of 1,000 bytes"
    )


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "broken.html"
    html = ARTICLE.read_bytes().replace(b"Engineers replaced", b"Engineers \xff\xfe\xc3 replaced")
    path.write_bytes(html)
    run = crawler("extract", str(path))
    assert run.code == 0
    assert "Engineers \ufffd" in run.stdout
    assert "six o'clock on Saturday morning" in run.stdout


def test_terminal_control_characters_are_not_printed(tmp_path: Path) -> None:
    path = tmp_path / "escape.html"
    text = "The harbour bridge reopened \x1b]0;owned\x07 today \u009b31m after repairs. " * 20
    path.write_text(f"<html><body><p>{text}</p></body></html>", encoding="utf-8")
    run = crawler("extract", str(path))
    assert run.code == 0
    assert "reopened" in run.stdout
    for control in ("\x1b", "\x07", "\u009b"):
        assert control not in run.stdout


# --- hostile and huge pages: a message or an empty result, never a traceback --------------------------------


@pytest.fixture(scope="module")
def hostile_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    paragraph = "<p>" + "Filler words of a very large page, repeated until it weighs twenty megabytes. " * 3
    pages = {
        "20mb": "<html><head><title>Big</title></head><body>"
        + (paragraph + "</p>\n") * (20 * 1024 * 1024 // (len(paragraph) + 5))
        + "</body></html>",
        "nested-divs": "<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>",
        "unclosed-tags": "<html><body>" + "<div><p><span><b><i><table><tr><td>text <a href='x'>" * 20_000,
        "single-line-10mb": "<html><body><p>" + "word " * (2 * 1024 * 1024) + "</p></body></html>",
        "only-markup": "<html><head><script>var x = 1;</script></head><body><div></div></body></html>",
        "not-html": "just some text\nwith two lines",
    }
    paths = {}
    for name, content in pages.items():
        paths[name] = directory / f"{name}.html"
        paths[name].write_text(content, encoding="utf-8")
    return paths


@pytest.mark.parametrize("algo", list(ALGORITHMS))
@pytest.mark.parametrize(
    "name", ["20mb", "nested-divs", "unclosed-tags", "single-line-10mb", "only-markup", "not-html"]
)
def test_hostile_page(hostile_pages: dict[str, Path], name: str, algo: str) -> None:
    run = crawler("extract", "--algo", algo, str(hostile_pages[name]))
    if run.code == 0 and not run.stdout.strip():
        assert run.stderr.startswith("crawler extract: note: no main text found in"), run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    elif run.code != 0:
        one_line_error(run, 2, "crawler extract: error:")


def test_no_main_text_is_an_empty_result_with_a_note(hostile_pages: dict[str, Path]) -> None:
    run = crawler("extract", "--format", "json", str(hostile_pages["only-markup"]))
    assert run.code == 0
    document = run.json()
    assert document["text"] == ""
    assert document["notes"]
    assert "no main text found" in run.stderr


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_page_with_no_article_text_says_so_and_what_it_holds(tmp_path: Path, algo: str) -> None:
    """A page whose whole text is "About us": the notes say it holds no article text and what it holds
    instead, not an article block of 0 lines."""
    page = tmp_path / "about.html"
    page.write_text("<html><head><title>About</title></head><body><p>About us</p></body></html>")
    run = crawler("extract", "--explain", "--algo", algo, "--format", "json", str(page))
    assert run.code == 0, run.stderr
    notes = run.json()["notes"]
    assert notes[0] == (
        "no article text on the page: 1 short line (2 words),"
        " no article line (10 words or more outside links)"
    ), notes
    assert not any("article block" in note or "no line was kept" in note for note in notes), notes
    assert f"no main text found in {page}: {notes[0]}" in run.stderr


# --- URLs from the local test server ----------------------------------------------------------------------


def test_url_from_the_local_server(site_server: SiteServer) -> None:
    run = crawler("extract", "--format", "json", site_server.url(ARTICLE_PATH))
    assert run.code == 0, run.stderr
    document = run.json()
    assert document["url"] == site_server.url(ARTICLE_PATH)
    assert document["redirects"] == []
    assert_article(document["text"])


def test_robots_txt_disallow_is_refused(site_server: SiteServer) -> None:
    url = site_server.url("/private/report.html")
    one_line_error(
        crawler("extract", url),
        1,
        f"robots.txt of {site_server.origin} disallows {url}",
        f"for user agent {USER_AGENT!r};",  # what robots.txt was read for: the User-Agent sent, not a token
        "--ignore-robots",
    )


def test_ignore_robots(site_server: SiteServer) -> None:
    run = crawler("extract", "--ignore-robots", site_server.url("/private/report.html"))
    assert run.code == 0, run.stderr
    assert "sits under /private/" in run.stdout


def test_robots_txt_allow_rule_wins_when_longer(site_server: SiteServer) -> None:
    run = crawler("extract", site_server.url("/private/allowed.html"))
    assert run.code == 0, run.stderr
    assert "sits under /private/" in run.stdout, run.stdout


def test_redirect_is_followed(site_server: SiteServer) -> None:
    start = site_server.url(f"/redirect-chain/3?to={ARTICLE_PATH}")
    run = crawler("extract", "--format", "json", start)
    assert run.code == 0, run.stderr
    document = run.json()
    assert document["url"] == site_server.url(ARTICLE_PATH)
    assert len(document["redirects"]) == 3
    assert document["redirects"][0] == start
    assert_article(document["text"])


def test_redirect_to_a_disallowed_path_is_refused(site_server: SiteServer) -> None:
    one_line_error(crawler("extract", site_server.url("/redirect?to=/private/x.html")), 1, "disallows")


def test_redirect_loop_is_cut(site_server: SiteServer) -> None:
    run = crawler("extract", site_server.url("/redirect-loop"))
    one_line_error(run, 1, "too many redirects: more than 5")


@pytest.mark.parametrize("target", ["file:///etc/passwd", "mailto:desk@example.com"])
def test_redirect_to_another_scheme_is_refused(site_server: SiteServer, target: str) -> None:
    """A mailto: target made Scrapy's redirect fail (`Missing scheme in request url`), not refused so."""
    one_line_error(
        crawler("extract", site_server.url(f"/redirect?to={target}")),
        1,
        f"redirected to {target!r}",
        "only http:// and https://",
    )


def test_redirect_to_a_location_that_is_no_url_is_refused_naming_it(site_server: SiteServer) -> None:
    """Kept as the crawl's redirect to no URL came to be refused: Scrapy's redirect failed on it, and
    extract said 'fetching URL failed: Invalid IPv6 URL', not naming the Location."""
    one_line_error(
        crawler("extract", site_server.url("/redirect?to=http%3A%2F%2F%5Bx%2Fy")),
        1,
        "redirected to 'http://[x/y', which cannot be fetched:",
        "no request can be made of it (Invalid IPv6 URL)",
    )


# Makes every asyncio callback of the process it is on the PYTHONPATH of a slow one.
EVERY_CALLBACK_SLOW = """
import asyncio.base_events

_init = asyncio.base_events.BaseEventLoop.__init__


def _every_callback_slow(self):
    _init(self)
    self.slow_callback_duration = 0.0


asyncio.base_events.BaseEventLoop.__init__ = _every_callback_slow
"""


def test_asyncio_slow_callback_lines_are_not_taken_for_the_command_s_own(
    site_server: SiteServer, tmp_path: Path
) -> None:
    """Under `-X dev`, asyncio logs each callback that took over 0.1 s ('[asyncio] WARNING: Executing <Task
    ...> took 0.115 seconds'): on a loaded machine a one-line error came with a line more and failed."""
    (tmp_path / "sitecustomize.py").write_text(EVERY_CALLBACK_SLOW, encoding="utf-8")
    run = crawler("extract", site_server.url("/redirect-loop"), env={"PYTHONPATH": str(tmp_path)})
    one_line_error(run, 1, "too many redirects: more than 5")


def test_redirect_with_credentials_or_too_long_is_refused_without_the_password(
    site_server: SiteServer,
) -> None:
    """A redirect to http://user:secret@host/... was followed and failed as 'invalid hostname:
    user:secret@127.0.0.1'; one longer than URLLENGTH_LIMIT was followed and its page extracted."""
    run = crawler("extract", site_server.url("/redirect-credentials"))
    one_line_error(run, 1, "redirected to 'http://***@127.0.0.1", "credentials in the URL are not supported")
    assert "secret" not in run.stdout + run.stderr, run.stderr
    run = crawler("extract", site_server.url("/redirect-long?n=2100"))
    one_line_error(
        run, 1, "characters)', which cannot be fetched: longer than URLLENGTH_LIMIT (2,083 characters)"
    )


def test_a_page_is_decoded_as_the_crawl_decodes_it(site_server: SiteServer) -> None:
    """The page declares utf-8 in its Content-Type and its <meta> but is in windows-1252: the crawl decodes
    it by detection, and so does extract, saying why."""
    run = crawler("extract", "--format", "json", site_server.url("/cp1252-as-utf8"))
    assert run.code == 0, run.stderr
    document = run.json()
    assert (document["encoding"], document["encoding_source"]) == ("windows-1252", "detected")
    why = "detected by charset-normalizer: utf-8 (Content-Type header) leaves 36 characters undecodable"
    assert document["encoding_reason"] == why
    assert CP1252_PARAGRAPHS[0] in document["text"]
    assert "\ufffd" not in document["text"]
    run = crawler("extract", "--explain", site_server.url("/cp1252-as-utf8"))
    assert f"\nencoding   windows-1252 ({why})" in run.stdout


def test_gbk_page_with_charset_only_in_the_header(site_server: SiteServer) -> None:
    run = crawler("extract", "--format", "json", site_server.url("/gbk"))
    assert run.code == 0, run.stderr
    document = run.json()
    assert (document["encoding"], document["encoding_source"]) == ("gbk", "declared")
    assert document["title"] == "长江大桥完成检修重新通车"
    assert "长江大桥于昨日清晨六时重新开放通行" in document["text"]
    assert "\ufffd" not in document["text"]


FRENCH = "Le pont du port a rouvert samedi matin après trois mois de travaux, « enfin », disent-ils."
JAPANESE = "港の橋は三か月の工事を終えて土曜日の朝に再開した。市民は「やっと」と話している。"


@pytest.mark.parametrize(
    ("head", "text", "codec", "name", "found"),
    [
        ("", FRENCH, "cp1252", "windows-1252", "detected"),
        ('<meta charset="iso-8859-1">', FRENCH, "cp1252", "windows-1252", "meta"),
        ('<meta charset="Shift_JIS">', JAPANESE, "cp932", "shift_jis", "meta"),
    ],
)
def test_the_encoding_is_reported_by_its_web_name(
    tmp_path: Path, head: str, text: str, codec: str, name: str, found: str
) -> None:
    path = tmp_path / "page.html"
    body = f"<p>{text}</p>" * 3
    path.write_bytes(f"<html><head>{head}<title>t</title></head><body>{body}</body></html>".encode(codec))
    document = crawler("extract", "--format", "json", str(path)).json()
    assert (document["encoding"], document["encoding_source"]) == (name, found)
    assert text in document["text"]
    assert f"\nencoding   {name} (" in crawler("extract", "--explain", str(path)).stdout


def test_loopback_is_refused_without_the_allowance(site_server: SiteServer, tmp_path: Path) -> None:
    url = site_server.url(ARTICLE_PATH)
    given = ("--rules-dir", str(tmp_path))
    one_line_error(
        crawler(*given, "extract", url, allow_private=False, env={"CRAWLER_COMMAND": "./run.sh crawler"}),
        1,
        f"refusing to fetch {url}",
        "127.0.0.1 is a loopback address",
        f"allow_private_addresses: true` in the site's rule (crawls and `./run.sh crawler {' '.join(given)}"
        " rules try`)",
        f"--allow-private for `./run.sh crawler {' '.join(given)} extract`",
    )


def test_allow_private_fetches_the_urls_own_host_and_no_other(site_server: SiteServer) -> None:
    url = site_server.url(ARTICLE_PATH)
    run = crawler("extract", "--allow-private", url, allow_private=False)
    assert run.code == 0, run.stderr
    assert run.stdout.strip()
    # A redirect to another private host (localhost resolves to loopback) is refused all the same.
    elsewhere = f"http://localhost:{site_server.port}{ARTICLE_PATH}"
    redirect = site_server.url(f"/redirect?to={urllib.parse.quote(elsewhere, safe='')}")
    line = one_line_error(
        crawler("extract", "--allow-private", redirect, allow_private=False),
        1,
        f"refusing to fetch {elsewhere}",
        "localhost resolves to 127.0.0.1",
        f"localhost is the target of a redirect from {redirect}, another host than 127.0.0.1:"
        " --allow-private allows private addresses only on the host of the URL given",
        "`crawler extract --allow-private URL`",
    )
    assert "--allow-private for" not in line


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("localhost", "a loopback address"),
        ("169.254.169.254", "a link-local address"),
        ("10.1.2.3", "a private address"),
        ("[::1]", "a loopback address"),
        ("0.0.0.0", "the unspecified address"),
    ],
)
def test_non_public_addresses_are_refused_before_connecting(host: str, kind: str) -> None:
    one_line_error(crawler("extract", f"http://{host}:9/page", allow_private=False), 1, "refusing", kind)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://example.com/x", "scheme 'ftp'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("http://user:secret@example.com/", "credentials"),
        ("http:///nohost", "no host name"),
        ("http://example.com:99999/", "invalid URL"),
    ],
)
def test_bad_urls_are_usage_errors(url: str, fragment: str) -> None:
    one_line_error(crawler("extract", url, allow_private=False), 2, "invalid URL", fragment)


def test_response_over_the_size_limit(site_server: SiteServer) -> None:
    one_line_error(
        crawler("extract", site_server.url("/large?mb=40")), 1, "larger than the limit of 33,554,432 bytes"
    )


def test_compressed_response_is_limited_after_decompression(site_server: SiteServer) -> None:
    one_line_error(
        crawler("extract", "--max-bytes", "5000000", site_server.url("/large-gzip?mb=40")),
        1,
        "larger than the limit of 5,000,000 bytes (after decompression)",
    )


def test_compressed_response_within_the_limit(site_server: SiteServer) -> None:
    run = crawler("extract", "--format", "json", site_server.url("/large-gzip?mb=1"))
    assert run.code == 0, run.stderr
    assert "quick brown fox" in run.json()["text"]


def test_http_error_status(site_server: SiteServer) -> None:
    url = site_server.url("/status/404")
    one_line_error(crawler("extract", url), 1, f"HTTP 404 Not Found for {url}")


def test_binary_response(site_server: SiteServer) -> None:
    one_line_error(
        crawler("extract", site_server.url("/binary")), 2, "is not HTML", "sent as application/octet-stream"
    )


def test_what_a_site_sent_is_said_without_terminal_control_characters(site_server: SiteServer) -> None:
    """A Content-Type holding escape sequences (a colour, a window title) was written as it came, to the
    terminal of the person who ran the command."""
    sent = "application/x-bin\x1b[31mRED\x1b]0;title\x07"
    run = crawler("extract", site_server.url(f"/binary?type={urllib.parse.quote(sent)}"))
    one_line_error(run, 2, "is not HTML", "sent as application/x-bin[31mRED]0;title")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", run.stderr), repr(run.stderr)


def test_timeout(site_server: SiteServer) -> None:
    line = one_line_error(
        crawler("extract", "--timeout", "1", site_server.url("/slow?seconds=3")), 1, "timed out after 1 s"
    )
    assert line.endswith(
        ": no answer in that time; check that the server runs and this machine reaches it, or give a slow"
        " server more time with --timeout"
    ), line


def test_https_to_a_plain_http_port_says_what_to_check(site_server: SiteServer) -> None:
    """The TLS handshake with a server that speaks plain HTTP fails: OpenSSL's reason alone ('wrong
    version number') said nothing of what to do."""
    url = site_server.url("/a/plain").replace("http://", "https://", 1)
    run = crawler("extract", "--ignore-robots", url)
    assert run.code == 1, run
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith(f"crawler extract: error: fetching {url} failed: "), line
    assert line.endswith(
        "the TLS handshake failed (SSL routines: wrong version number): the port answers without TLS: does it"
        " serve http://, not https://?"
    ), line


def _proxied_rule(folder: Path, proxy: str) -> None:
    """The rule ``proxied`` of ``folder``, whose requests go through ``proxy``."""
    folder.mkdir()
    (folder / "proxied.yaml").write_text(
        "domains: [127.0.0.1]\nallow_private_addresses: true\nstart_urls: [http://127.0.0.1/]\n"
        f"index: {{links: {{allow: ['/a/']}}}}\naccess: {{proxies: ['{proxy}']}}\n",
        encoding="utf-8",
    )


def test_a_proxy_that_refuses_the_connection_is_named_not_the_site(
    site_server: SiteServer, tmp_path: Path
) -> None:
    """`rules try` through a rule's proxy where nothing listens said 'cannot connect to 127.0.0.1 port
    <the site's port>...: nothing listens there; check the port of the URL, or start the site's server':
    the site's address, which was never connected to."""
    _proxied_rule(tmp_path / "rules", "http://user:secret@127.0.0.1:9")
    url = site_server.url("/a/plain")
    run = crawler("--rules-dir", str(tmp_path / "rules"), "rules", "try", "proxied", url)
    assert run.code == 1, run
    line = run.stderr.strip().splitlines()[-1]
    assert line == (
        f"crawler rules try: error: cannot connect to the proxy 127.0.0.1 port 9 for {url}: connection"
        " refused: nothing listens at the proxy http://***@127.0.0.1:9; check its address and port (the"
        " rule's access.proxies, else CRAWLER_PROXIES or CRAWLER_PROXY_FILE), or start it"
    ), line
    assert "secret" not in run.stderr


def test_connection_refused() -> None:
    # Port 9 (discard) on loopback: nothing listens there in the test environment.
    run = crawler("extract", "--ignore-robots", "http://127.0.0.1:9/")
    line = one_line_error(run, 1, "cannot connect to 127.0.0.1 port 9")
    assert line.endswith(
        "connection refused: nothing listens there; check the port of the URL, or start the site's server"
    ), line


def test_a_host_that_does_not_resolve_says_what_to_check() -> None:
    # .invalid is never a host (RFC 2606): its lookup fails, online or not.
    run = crawler("extract", "--ignore-robots", "http://no-such-host.invalid/")
    line = one_line_error(
        run, 1, "cannot resolve host 'no-such-host.invalid' of http://no-such-host.invalid/"
    )
    assert line.endswith("; check the host name in the URL, and that this machine reaches its DNS server"), (
        line
    )


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("length", "connection cut: the site closed it before the whole response came"),
        (
            "nothing",
            "connection closed before an answer: Connection was closed cleanly; the server closed the"
            " connection without answering: check that the port of the URL serves the web, and try again;"
            " one that keeps doing so may refuse this client (its user agent, its address)",
        ),
    ],
)
def test_a_connection_the_site_cuts_is_said_in_words(site_server: SiteServer, how: str, said: str) -> None:
    url = site_server.url(f"/cut/extract?how={how}")
    line = one_line_error(crawler("extract", url), 1)
    assert line == f"crawler extract: error: fetching {url} failed: {said}", line


@pytest.mark.parametrize("command", ["extract", "rules try"])
def test_a_body_that_cannot_be_decompressed_is_said_in_words(
    site_server: SiteServer, tmp_path: Path, command: str
) -> None:
    """As a crawl's dead letter says it, not as zlib's ``Error -3 while decompressing data`` alone."""
    url = site_server.url("/bad-gzip")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "gzipped.yaml").write_text(
        "domains: [127.0.0.1]\nallow_private_addresses: true\nstart_urls: [http://127.0.0.1/]\n"
        "index: {links: {allow: ['/a/']}}\n",
        encoding="utf-8",
    )
    arguments = ["extract", url] if command == "extract" else ["rules", "try", "gzipped", url]
    line = one_line_error(crawler("--rules-dir", str(rules), *arguments), 1)
    assert line.startswith(
        f"crawler {command}: error: fetching {url} failed: its body, sent compressed (Content-Encoding),"
        " could not be decompressed: Error -3 while decompressing data: "
    ), line


def test_allow_private_lets_an_international_host_through_in_the_form_the_request_goes_to() -> None:
    url = "http://Bücher.intranet:8080/a"
    requested = urllib.parse.urlsplit(Request(url).url).hostname
    assert requested == "xn--bcher-kva.intranet"
    assert private_allowed(requested, extractcli._own_host(url))


class _Held(http.server.BaseHTTPRequestHandler):
    """Answers robots.txt with a 404 and holds every other request unanswered until the server stops."""

    asked = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_error(404)
            return
        type(self).asked.set()
        type(self).release.wait()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("sign", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
@pytest.mark.parametrize("command", ["extract", "rules try"])
def test_a_fetch_stopped_by_ctrl_c_or_sigterm_says_so_not_that_it_failed(
    tmp_path: Path, command: str, sign: signal.Signals, code: int, said: str
) -> None:
    """Stopped while its page is being fetched, a command says it was interrupted (exit 130, 143 for
    SIGTERM), not that the fetch timed out or failed; at once: Scrapy's clean stop waited for the download,
    up to its --timeout (30 s by default)."""
    _Held.asked.clear()
    _Held.release.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Held)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/news/held.html"
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "held.yaml").write_text(
        "domains: [127.0.0.1]\nallow_private_addresses: true\nstart_urls: [http://127.0.0.1/news/]\n"
        "index: {links: {allow: ['/news/']}}\n",
        encoding="utf-8",
    )
    arguments = ["extract", "--allow-private", url] if command == "extract" else ["rules", "try", "held", url]
    arguments += ["--timeout", str(10 * WAIT_LIMIT)]  # longer than the wait for the command's end
    env = {key: value for key, value in os.environ.items() if key != ALLOW_PRIVATE_NETWORKS_ENV}
    process = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "--rules-dir", str(rules), *arguments],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _Held.asked.wait(WAIT_LIMIT), "the page was asked for"
        process.send_signal(sign)
        _, err = process.communicate(timeout=WAIT_LIMIT)
    finally:
        _Held.release.set()
        if process.poll() is None:
            process.kill()
            process.communicate()
        server.shutdown()
        server.server_close()
    assert process.returncode == code, err[-3000:]
    assert err == f"crawler {command}: {said}\n", err[-3000:]
