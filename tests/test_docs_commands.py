"""Every command line of README.md and docs/cli.md, run as written, or listed with the reason it is not run
here (issue 11: docs and behaviour must not drift apart).

The commands are the lines of the ``sh`` code blocks (``text`` blocks hold synopses and output). Each one
runs under bash, as a user types it, in a sandbox laid out like a checkout: ``run.sh``, ``pyproject.toml``
and ``scrapy.cfg``, the project's virtualenv, ``rules/`` holding the demo rules (pointed at the demo
server this module starts: nothing but 127.0.0.1 is reached), and ``./data``. A line changes only where a
user fills something in (``SITE``, ``PAGE``, the demo's port), as its case says. A documented command
without a case, and a case whose command is no longer documented, fail the module; so does an inline
``crawler ...`` span of the two files that the real parser refuses. Commands that run until Ctrl-C are
interrupted once they have done their work, and must exit with 130 as ``--help`` says.

The SQLite backup and restore commands of docs/operations.md run as written too, on a week whose writer
was killed, and so does its loop that drops old weeks. The tree of docs/architecture.md names every module
of crawler/, and nothing crawler/ lacks; every file of the checkout the docs and the code name exists; the
groups of crawler/settings.py are named by their settings' prefixes.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import io
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from crawler.cli.parser import build_parser
from crawler.demo import DEMO_ORIGIN, DEMO_RULES, demo_site
from crawler.demo.server import DemoServer

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "README.md", ROOT / "docs" / "cli.md")
OPERATIONS = ROOT / "docs" / "operations.md"
COMMAND_TIMEOUT = 240.0
READY_TIMEOUT = 120.0
INTERRUPTED = 130
_FENCE_RE = re.compile(r"^```(\S*)\s*$")
_INLINE_RE = re.compile(r"`(crawler [^`]+)`")
# A line a command writes on stderr (`crawler rules try: error: ...`): the command as typed, then a colon.
_MESSAGE_RE = re.compile(r"^crawler [a-z ]+:")
_COMMENT_RE = re.compile(r"\s+#\s.*$")


# --- the documented commands ---------------------------------------------------------------------------


def documented_commands() -> list[str]:
    """The lines of the ``sh`` blocks of README.md and docs/cli.md, trailing comments cut, in order."""
    lines: list[str] = []
    for path in DOCS:
        language: str | None = None
        for raw in path.read_text(encoding="utf-8").splitlines():
            fence = _FENCE_RE.match(raw.strip())
            if fence:
                language = None if language is not None else fence.group(1)
                continue
            if language == "sh" and raw.strip():
                line = _COMMENT_RE.sub("", raw.strip())
                if line not in lines:
                    lines.append(line)
    return lines


def untyped_blocks() -> list[str]:
    """Code blocks of the two files that say neither ``sh`` (commands) nor ``text`` (everything else)."""
    found = []
    for path in DOCS:
        inside = False
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fence = _FENCE_RE.match(raw.strip())
            if fence:
                if not inside and fence.group(1) not in ("sh", "text"):
                    found.append(f"{path.name}:{number}")
                inside = not inside
    return found


# --- the sandbox -----------------------------------------------------------------------------------------


@dataclass
class Sandbox:
    """A folder laid out like a checkout, the demo server its rules point at, and the demo's articles."""

    path: Path
    origin: str
    env: dict[str, str]
    demo_done: bool = False

    @property
    def checkout(self) -> Path:
        return ROOT

    def fill(self, text: str) -> str:
        return text.replace("{origin}", self.origin)

    def ensure_demo(self) -> None:
        """`crawler demo` has stored its articles under ./data/demo (once per module)."""
        if not self.demo_done:
            run = subprocess.run(
                ["crawler", "demo"],
                cwd=self.path,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            self.demo_done = True

    def stored(self, site: str | None = None) -> int:
        """Articles in the SQLite store under ./data (0 when there is none yet), or of ``site``."""
        total = 0
        for path in (self.path / "data" / "articles").glob("*.sqlite"):
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
                total += connection.execute(
                    "SELECT count(*) FROM articles WHERE ? IS NULL OR site = ?", (site, site)
                ).fetchone()[0]
        return total

    def ensure_crawled(self, site: str) -> None:
        """The store under ./data holds articles of ``site``: its `crawler temp`, run here when no case
        has crawled it before (the case run alone)."""
        if not self.stored(site):
            run = subprocess.run(
                ["crawler", "temp", site],
                cwd=self.path,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
            assert run.returncode == 0, run.stderr[-3000:]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    path = tmp_path_factory.mktemp("checkout")
    for name in ("run.sh", "pyproject.toml", "scrapy.cfg"):
        shutil.copy2(ROOT / name, path / name)
    # run.sh's virtualenv: the one running these tests, already installed (its stamp is fresh).
    venv = path / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.prefix) / "bin")
    (venv / "pyvenv.cfg").symlink_to(Path(sys.prefix) / "pyvenv.cfg")
    (venv / ".installed-dev").touch()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CRAWLER_", "REDIS_", "MONGO_"))
        and name not in ("COLUMNS", "EXTRACTION_CORPUS")
    }
    env["PATH"] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    with DemoServer(port=0) as server:
        rules = path / "rules"
        rules.mkdir()
        for rule in DEMO_RULES.glob("demo-*.yaml"):
            text = rule.read_text(encoding="utf-8").replace(DEMO_ORIGIN, server.origin)
            (rules / rule.name).write_text(text, encoding="utf-8")
        # A page saved from the demo site, as a user saves one to try a rule or an extractor on.
        article = demo_site("citynews").page_articles(1)[0]
        with urllib.request.urlopen(article.url(server.origin), timeout=30) as response:
            (path / "page.html").write_bytes(response.read())
        yield Sandbox(path, server.origin, env)


# --- how each command is checked -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass(frozen=True)
class Run:
    """Run the line and wait for it: its exit code, and text its output must hold."""

    expect: tuple[str, ...] = ()
    code: int = 0
    fill: Mapping[str, str] = field(default_factory=dict)
    cwd: str = "sandbox"  # or "checkout": the repository itself (read-only commands)
    demo: bool = False  # needs the demo's articles under ./data/demo
    crawled: str | None = None  # needs articles of this site under ./data
    check: Callable[[Result, Sandbox], None] | None = None


@dataclass(frozen=True)
class UntilCtrlC:
    """Start the line, wait until ``ready`` holds (text of its output, or a check made from the sandbox
    before the start), run ``meanwhile`` (documented lines that need it running), then Ctrl-C it: exit
    code ``code``."""

    ready: str | Callable[[Sandbox], Callable[[], bool]]
    code: int = INTERRUPTED
    meanwhile: tuple[str, ...] = ()
    demo: bool = False


@dataclass(frozen=True)
class Meanwhile:
    """Run by the case of ``during`` while that command runs."""

    during: str
    expect: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotRun:
    reason: str


Case = Run | UntilCtrlC | Meanwhile | NotRun

SITE = {"SITE": "demo-citynews"}
# The global options of a documented command on a demo site: a checkout's ./rules holds none of the demo's.
DEMO_FOLDERS = "--data-dir data/demo --rules-dir data/demo/rules "
INTERNET = "fetches a page of the Internet: tests and benchmarks reach 127.0.0.1 only"
BENCHMARK = (
    "a benchmark: minutes of CPU, figures in docs/ (performance.md, operations.md, storage.md); never timed"
    " in tests"
)


def _shows_the_demo_articles(result: Result, sandbox: Sandbox) -> None:
    """The demo's last line names a command that shows what it stored: run it as printed."""
    named = re.findall(r"`([^`]+ articles stats)`", result.stdout)
    assert named, result.stdout[-2000:]
    shown = _bash(named[-1], sandbox.path, sandbox.env)
    assert shown.code == 0, shown.stderr
    assert re.search(r"total\s.*\b146\b", shown.stdout), shown.stdout


def _printed_main_text(result: Result, sandbox: Sandbox) -> None:
    assert len(result.stdout.split()) > 50, result.output


def _stores_articles(sandbox: Sandbox) -> Callable[[], bool]:
    """Ready once the store holds more articles than when the command started."""
    before = sandbox.stored()
    return lambda: sandbox.stored() > before


def _shown_paused(result: Result, sandbox: Sandbox, folders: str = "") -> None:
    """`crawler status` shows the site paused; resumed, the sandbox's other commands crawl it again.
    ``folders`` are the global options the pause was given (the demo's data and rules folders)."""
    shown = _bash(f"crawler {folders}status --site demo-citynews", sandbox.path, sandbox.env)
    assert shown.code == 0, shown.stderr
    assert "PAUSED" in shown.stdout, shown.stdout
    resumed = _bash(f"crawler {folders}sites resume demo-citynews", sandbox.path, sandbox.env)
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout.startswith("resumed demo-citynews"), resumed.stdout


def _drafted_a_rule(result: Result, sandbox: Sandbox) -> None:
    """`crawler rules new` wrote a rule that `rules check` passes; removed after, so that the sandbox's
    other commands see the demo's rules alone."""
    rule = sandbox.path / "rules" / "mysite.yaml"
    try:
        assert "1 rule ok" in result.stdout, result.output
        checked = _bash("crawler rules check rules/mysite.yaml", sandbox.path, sandbox.env)
        assert checked.code == 0, checked.output
    finally:
        rule.unlink(missing_ok=True)


CASES: dict[str, Case] = {
    # README.md
    "./run.sh demo": Run(expect=("stored 146 articles", "4 reposts"), check=_shows_the_demo_articles),
    "./run.sh test": NotRun("the test suite itself, which runs this test"),
    "./run.sh crawler rules check": Run(expect=("3 rules ok",)),
    "./run.sh crawler rules new SITE URL": Run(
        fill={"SITE": "mysite", "URL": "{origin}/citynews/ --allow-private"}, check=_drafted_a_rule
    ),
    "./run.sh crawler rules try SITE PAGE": Run(
        expect=("links", "title"), fill={**SITE, "PAGE": "{origin}/citynews/"}
    ),
    "./run.sh crawler temp SITE": Run(expect=("stored", "errors 0"), fill=SITE),
    "./run.sh crawler temp SITE --stored --since 7d": Run(
        expect=("stored before", "errors 0", "again with the rule as it is now"),
        fill=SITE,
        crawled="demo-citynews",
    ),
    "./run.sh crawler run": UntilCtrlC(ready=_stores_articles),
    "./run.sh crawler status": Run(expect=("demo-citynews", "queue")),
    "./run.sh crawler sites pause SITE": Run(
        expect=("paused demo-citynews",), fill=SITE, check=_shown_paused
    ),
    "./run.sh crawler articles stats": Run(expect=("total",)),
    "./run.sh crawler articles list": Run(expect=("article",)),
    "./run.sh crawler dead list": Run(expect=("dead letters",)),
    "./run.sh crawler extract PAGE --explain": Run(expect=("main text",), fill={"PAGE": "page.html"}),
    "./run.sh crawler demo --serve": UntilCtrlC(ready="crawl them from another terminal"),
    "./run.sh crawler worker": UntilCtrlC(ready="Spider opened"),
    "./run.sh crawler schedule": UntilCtrlC(ready="active scheduler"),
    "./run.sh crawler --data-dir data/demo articles stats": Run(expect=("146",), demo=True),
    "docker compose up -d --build --scale worker=4": NotRun(
        "no Docker engine on these machines: tests/test_compose.py checks the compose file and the image"
    ),
    "./run.sh bench": NotRun(
        "installs the peers with pip and scores 219 pages for minutes; test_bench_without_its_corpus_says_"
        "where_to_get_it runs bench/extraction.py without the corpus"
    ),
    ".venv/bin/python bench/crawl.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/dedup.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/export.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/extract_memory.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/simulate.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/chaos.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/scaling.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/many_rules.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/soak.py --minutes 40": NotRun(BENCHMARK),
    ".venv/bin/python bench/queue_scale.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/listings.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/focus.py": NotRun(BENCHMARK),
    ".venv/bin/python bench/train_boilerplate.py": NotRun(BENCHMARK),
    # docs/cli.md
    "crawler --data-dir data/demo articles stats": Run(expect=("146",), demo=True),
    "crawler extract https://example.com/news/story.html": NotRun(INTERNET),
    "crawler extract page.html --algo qread-paper --explain": Run(expect=("qread-paper", "main text")),
    "crawler extract - --format json < page.html": Run(expect=('"algorithm": "qread-learned"', '"text"')),
    "crawler extract --allow-private http://127.0.0.1:8631/citynews/": Run(
        fill={"http://127.0.0.1:8631": "{origin}"}, check=_printed_main_text
    ),
    "crawler rules check": Run(expect=("3 rules ok",)),
    "crawler rules check rules/guardian.yaml": Run(expect=("1 rule ok",), cwd="checkout"),
    "crawler rules check guardian": Run(expect=("1 rule ok",), cwd="checkout"),
    "crawler rules try guardian https://www.theguardian.com/world": NotRun(INTERNET),
    "crawler rules new mysite http://127.0.0.1:8631/citynews/ --allow-private": Run(
        fill={"http://127.0.0.1:8631": "{origin}"}, check=_drafted_a_rule
    ),
    "crawler demo": Run(expect=("stored 146 articles",), check=_shows_the_demo_articles),
    "crawler --data-dir data/demo articles search harbour": Run(expect=("harbour",), demo=True),
    "crawler --data-dir data/demo articles list --reposts": Run(
        expect=("reposts recorded against them",), demo=True
    ),
    "crawler --data-dir data/demo --rules-dir data/demo/rules status": Run(
        expect=("demo-citynews", "demo-huaxia", "demo-techdaily"), demo=True
    ),
    "crawler demo --serve": UntilCtrlC(
        ready="crawl them from another terminal",
        meanwhile=("crawler --data-dir data/demo --rules-dir data/demo/rules temp demo-citynews",),
    ),
    "crawler --data-dir data/demo --rules-dir data/demo/rules temp demo-citynews": Meanwhile(
        during="crawler demo --serve", expect=("fetched", "errors 0")
    ),
    f"crawler {DEMO_FOLDERS}sites pause demo-citynews": Run(
        expect=("paused demo-citynews",),
        demo=True,
        check=lambda result, sandbox: _shown_paused(result, sandbox, DEMO_FOLDERS),
    ),
    f"crawler {DEMO_FOLDERS}sites resume demo-citynews": Run(expect=("demo-citynews",), demo=True),
    f"crawler {DEMO_FOLDERS}sites forget demo-citynews --yes": Run(
        expect=("forgot demo-citynews", "stay seen"), demo=True
    ),
    "crawler --data-dir data/demo redis repair": Run(
        expect=("is not damaged", "nothing was changed"), demo=True
    ),
    "scrapy crawl sites": UntilCtrlC(ready="Spider opened", code=0),
}


def _bash(
    line: str, cwd: Path, env: Mapping[str, str], timeout: float = COMMAND_TIMEOUT, *, shell: str = "bash"
) -> Result:
    run = subprocess.run(
        [shell, "-c", line],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(run.returncode, run.stdout, run.stderr)


def _filled(line: str, case: Run, sandbox: Sandbox) -> str:
    for placeholder, value in case.fill.items():
        line = re.sub(rf"(?<![\w/.-]){re.escape(placeholder)}(?![\w-])", sandbox.fill(value), line)
    return line


def _check_output(line: str, result: Result, code: int, expect: tuple[str, ...]) -> None:
    assert result.code == code, f"{line!r} exited with {result.code}, not {code}:\n{result.output[-3000:]}"
    assert "Traceback" not in result.output, result.output[-3000:]
    for text in expect:
        assert text in result.output, f"{line!r} does not say {text!r}:\n{result.output[-3000:]}"


def _readiness(case: UntilCtrlC, sandbox: Sandbox, log: Path) -> Callable[[], bool]:
    if not isinstance(case.ready, str):
        return case.ready(sandbox)
    text = case.ready
    return lambda: text in log.read_text(encoding="utf-8", errors="replace")


def _until_ctrl_c(line: str, case: UntilCtrlC, sandbox: Sandbox) -> None:
    log = sandbox.path / (re.sub(r"\W+", "-", line) + ".log")
    ready = _readiness(case, sandbox, log)
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(
            ["bash", "-c", line],
            cwd=sandbox.path,
            env=sandbox.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                output = log.read_text(encoding="utf-8", errors="replace")
                if ready():
                    break
                assert process.poll() is None, f"{line!r} ended with {process.returncode}:\n{output[-3000:]}"
                assert time.monotonic() < deadline, (
                    f"{line!r} not ready in {READY_TIMEOUT:g} s:\n{output[-3000:]}"
                )
                time.sleep(0.2)
            for during in case.meanwhile:
                meanwhile = CASES[during]
                assert isinstance(meanwhile, Meanwhile)
                result = _bash(during, sandbox.path, sandbox.env)
                _check_output(during, result, 0, meanwhile.expect)
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
            code = process.wait(60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    output = log.read_text(encoding="utf-8", errors="replace")
    assert code == case.code, f"{line!r} exited with {code} after Ctrl-C, not {case.code}:\n{output[-3000:]}"
    assert "Traceback" not in output, output[-3000:]


# --- the tests -------------------------------------------------------------------------------------------


def test_every_documented_command_has_a_case_and_every_case_is_documented() -> None:
    documented = documented_commands()
    missing = [line for line in documented if line not in CASES]
    stale = [line for line in CASES if line not in documented]
    assert not missing, f"documented commands with no case here (run them or say why not): {missing}"
    assert not stale, f"cases of commands the docs no longer hold: {stale}"


def test_a_command_naming_a_demo_site_gives_the_demo_folders() -> None:
    """The sandbox's ./rules holds the demo's rules, a checkout's does not (rules/guardian.yaml alone): a
    documented command that names a demo site runs as a user copies it only on the demo's folders, which
    it must give (a new user's `crawler sites pause demo-citynews` was refused: no rule for the site)."""
    demo_sites = {rule.stem for rule in DEMO_RULES.glob("demo-*.yaml")}
    assert demo_sites and not demo_sites & {rule.stem for rule in (ROOT / "rules").glob("*.yaml")}
    bare = [
        line
        for line in documented_commands()
        if any(re.search(rf"\b{site}\b", line) for site in demo_sites) and DEMO_FOLDERS not in line
    ]
    assert not bare, f"documented commands on a demo site without `{DEMO_FOLDERS.strip()}`: {bare}"


def test_every_code_block_says_whether_it_holds_commands() -> None:
    assert not untyped_blocks(), "code blocks must be ```sh (commands, run here) or ```text"


def test_the_global_options_help_says_what_the_cli_reference_says() -> None:
    """`crawler --help` describes --data-dir and --rules-dir in the words of docs/cli.md's table of the
    options before the command (its backticks left out, argparse's "default:" for its "default")."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows: dict[str, str] = {}
    for option, meaning in re.findall(r"^\| `(--[a-z-]+) [A-Z]+` \| (.+) \|$", text, re.MULTILINE):
        rows.setdefault(option, meaning)  # the first table's: a command's own table comes later
    helps = {
        option: action.help
        for action in build_parser()._actions
        for option in action.option_strings
        if option in ("--data-dir", "--rules-dir")
    }
    assert helps
    for option, said in helps.items():
        assert said is not None
        assert said.replace("(default: ", "(default ") == rows[option].replace("`", ""), option


def test_every_inline_crawler_command_parses() -> None:
    """A `crawler ...` span in the prose parses, or only lacks its arguments (`crawler rules try` names
    the command): a misspelt command or option, a command that does not exist (`crawler grab`), or a bad
    value, fails."""
    parser = build_parser()
    checked = 0
    for path in DOCS:
        for span in _INLINE_RE.findall(path.read_text(encoding="utf-8")):
            if _MESSAGE_RE.match(span):
                continue  # a message, whose words are no command line (an apostrophe: `its job's requests`)
            words = shlex.split(span)[1:]
            command = next((word for word in words if not word.startswith("-")), "")
            if command.isupper() or re.search(r"[\[|]|\.\.\.", span):
                continue  # placeholders (`crawler COMMAND --help`) and synopses (`[--keep]`, `A|B`)
            errors = io.StringIO()
            try:
                with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
                    parser.parse_args(words)
            except SystemExit as done:
                if done.code != 0 and "arguments are required" not in errors.getvalue():
                    pytest.fail(f"{path.name}: `{span}` does not parse: {errors.getvalue().strip()}")
            checked += 1
    assert checked >= 10, "the docs name fewer crawler commands inline than expected: is the pattern right?"


@pytest.mark.parametrize("line", documented_commands())
def test_documented_command(line: str, sandbox: Sandbox) -> None:
    case = CASES.get(line)
    if case is None:
        pytest.fail(f"no case for the documented command {line!r}")
    if isinstance(case, NotRun):
        pytest.skip(f"not run: {case.reason}")
    if isinstance(case, Meanwhile):
        pytest.skip(f"run while {case.during!r} runs, by its test")
    if case.demo:
        sandbox.ensure_demo()
    if isinstance(case, Run) and case.crawled is not None:
        sandbox.ensure_crawled(case.crawled)
    if isinstance(case, UntilCtrlC):
        _until_ctrl_c(line, case, sandbox)
        return
    cwd = sandbox.checkout if case.cwd == "checkout" else sandbox.path
    result = _bash(_filled(line, case, sandbox), cwd, sandbox.env)
    _check_output(line, result, case.code, case.expect)
    if case.check is not None:
        case.check(result, sandbox)


def test_bench_without_its_corpus_says_where_to_get_it(tmp_path: Path) -> None:
    env = {**os.environ, "EXTRACTION_CORPUS": str(tmp_path / "none")}
    named = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "extraction.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert named.returncode == 2
    assert "WCXB" in named.stderr and "Chinese Web Content Extraction Dataset" in named.stderr
    assert "CC-BY-4.0" in named.stderr and "MIT" in named.stderr
    # The default corpus missing (a user's clone): the same message, and the bench skips (exit 0).
    copy = tmp_path / "clone" / "bench"
    shutil.copytree(ROOT / "bench", copy, ignore=shutil.ignore_patterns("__pycache__"))
    del env["EXTRACTION_CORPUS"]
    skipped = subprocess.run(
        [sys.executable, str(copy / "extraction.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
        cwd=tmp_path,
    )
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout == "" and "WCXB" in skipped.stderr


# --- docs/operations.md: backing up and restoring a SQLite week ------------------------------------------


def section_blocks(path: Path, heading: str) -> list[list[str]]:
    """The ``sh`` blocks of the section of ``path`` under ``heading`` (a whole heading line), each as its
    lines, trailing comments cut."""
    blocks: list[list[str]] = []
    inside_section = False
    block: list[str] | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        fence = _FENCE_RE.match(raw.strip())
        if block is not None:
            if fence:
                blocks.append(block)
                block = None
            elif raw.strip():
                block.append(_COMMENT_RE.sub("", raw.strip()))
        elif fence:
            block = [] if inside_section and fence.group(1) == "sh" else None
            if block is None:
                continue
        elif raw.startswith("#"):
            inside_section = raw.strip() == heading
    return blocks


# A writer of the week 2026w47 (the docs' week): FIRST to LAST articles, then, with KILL, SIGKILL.
_WEEK_WRITER = """
import os, random, signal, sys
from crawler.store import SqliteStore

first, last, kill = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "kill"
words = ["".join(random.Random(n).choices("bdfgklmnprstvaeiou", k=7)) for n in range(900)]
store = SqliteStore("data")
store.upsert_many(
    {
        "site": "north",
        "url": f"http://north.test/{n}",
        "fetched_at": f"2026-11-18T{n // 60 % 24:02d}:{n % 60:02d}:00Z",
        "title": f"Report {n}",
        "body": "\\n\\n".join(" ".join(random.Random(n * 10 + p).choices(words, k=70)) for p in range(4)),
    }
    for n in range(first, last)
)
if kill:
    os.kill(os.getpid(), signal.SIGKILL)
store.close()
"""


def _write_week(folder: Path, first: int, last: int, *, kill: bool = False) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WEEK_WRITER, str(first), str(last), "kill" if kill else "close"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert done.returncode == (-signal.SIGKILL if kill else 0), done.stderr[-3000:]


def test_the_documented_sqlite_restore_mends_a_week_whose_killed_writer_left_a_wal_file(
    tmp_path: Path,
) -> None:
    blocks = [
        block
        for block in section_blocks(OPERATIONS, "## Backing up a week")
        if any("data/articles/" in line for line in block)
    ]
    assert len(blocks) == 2, f"operations.md should give the SQLite backup, then the restore: {blocks}"
    backup, restore = blocks
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CRAWLER_", "MONGO_"))}
    week = tmp_path / "data" / "articles" / "articles_2026w47.sqlite"
    _write_week(tmp_path, 0, 60)
    for line in backup:
        result = _bash(line, tmp_path, env)
        assert result.code == 0, f"{line!r}: {result.output}"
    _write_week(tmp_path, 60, 120)
    _write_week(tmp_path, 120, 180, kill=True)
    wal = week.with_name(week.name + "-wal")
    assert wal.stat().st_size > 0, "the killed writer left its writes in the -wal file"

    for line in restore:
        result = _bash(line, tmp_path, env)
        assert result.code == 0, f"{line!r}: {result.output}"
    stats = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--data-dir", "data", "articles", "stats", "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert stats.returncode == 0, stats.stderr[-3000:]
    assert json.loads(stats.stdout)["total"]["articles"] == 60, "the backup's articles, read whole"
    with sqlite3.connect(week) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    connection.close()


def test_the_documented_sqlite_backup_of_a_week_not_on_disk_fails_and_makes_no_week_file(
    tmp_path: Path,
) -> None:
    """The backup line names the docs' week, 2026w47; run as written where that week has no file (another
    week is this one, or a name mistyped), `sqlite3` made data/articles/articles_2026w47.sqlite, empty,
    exited 0 with a backup of nothing, and `crawler articles` then reads that empty week as one to restore.
    The line as documented fails there, naming the file, and makes no file in data/articles."""
    (backup,) = [
        block
        for block in section_blocks(OPERATIONS, "## Backing up a week")
        if any(".backup" in line for line in block)
    ]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CRAWLER_", "MONGO_"))}
    (tmp_path / "data" / "articles").mkdir(parents=True)
    results = [_bash(line, tmp_path, env) for line in backup]
    assert results[-1].code != 0, results[-1].output
    assert "articles_2026w47.sqlite" in results[-1].output, results[-1].output
    assert not list((tmp_path / "data" / "articles").iterdir())


def _iso_week(day: datetime.date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}w{week:02d}"


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_the_documented_sqlite_drop_of_old_weeks_keeps_the_last_12_and_exits_0(
    tmp_path: Path, shell: str
) -> None:
    """The loop of "Dropping old weeks", run as written (in bash, and in the `sh` its block is marked for,
    dash on Debian) on the files of this week and the 19 before it (a -wal and -shm beside each): the 12
    newest weeks stay (the newest, last in the loop, is kept), the others go with their companions, and the
    loop exits 0."""
    blocks = [
        block
        for block in section_blocks(OPERATIONS, "## Dropping old weeks")
        if any("data/articles/" in line for line in block)
    ]
    assert len(blocks) == 1, f"operations.md should give one SQLite loop that drops old weeks: {blocks}"
    folder = tmp_path / "data" / "articles"
    folder.mkdir(parents=True)
    today = datetime.datetime.now(datetime.UTC).date()
    weeks = [_iso_week(today - datetime.timedelta(weeks=back)) for back in range(20)]
    for week in weeks:
        for suffix in ("", "-wal", "-shm"):
            (folder / f"articles_{week}.sqlite{suffix}").write_bytes(b"")
    result = _bash("\n".join(blocks[0]), tmp_path, os.environ, shell=shell)
    if _iso_week(datetime.datetime.now(datetime.UTC).date()) != weeks[0]:
        pytest.skip("a new ISO week began while the loop ran: its cutoff moved")
    assert result.code == 0, f"the loop exited with {result.code}:\n{result.output}"
    kept = sorted(path.name for path in folder.iterdir())
    expected = sorted(
        f"articles_{week}.sqlite{suffix}" for week in weeks[:12] for suffix in ("", "-wal", "-shm")
    )
    assert kept == expected, f"kept {kept}, not the last 12 weeks {weeks[:12]}"


# --- docs/architecture.md: the tree of crawler/ ----------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
_TREE_ENTRY_RE = re.compile(r"^  (\S+)(.*)$")
_MODULE_NAME_RE = re.compile(r"(?<![\w.])(\w+\.py)\b")


def crawler_tree() -> dict[str, str]:
    """The entries of crawler/ in the tree of docs/architecture.md: the name at the entry's indent
    (``cli/``, ``status.py``) -> the entry's text, its continuation lines included."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    start = lines.index("## The tree")
    opening = next(number for number in range(start, len(lines)) if lines[number].startswith("```"))
    closing = next(number for number in range(opening + 1, len(lines)) if lines[number].startswith("```"))
    block = lines[opening + 1 : closing]
    assert block and block[0].startswith("crawler/"), f"the tree should start with crawler/: {block[:1]}"
    entries: dict[str, str] = {}
    name = ""
    for line in block[1:]:
        if not line.startswith(" "):
            break  # extractors/, the next top-level folder
        entry = _TREE_ENTRY_RE.match(line)
        if entry:
            name = entry.group(1)
            entries[name] = entry.group(2)
        else:
            entries[name] += " " + line.strip()
    return entries


def test_the_architecture_tree_names_every_module_of_crawler_and_no_other() -> None:
    package = ROOT / "crawler"
    tree = crawler_tree()
    unnamed = []
    for module in sorted(package.rglob("*.py")):
        if module.name == "__init__.py":
            continue
        parts = module.relative_to(package).parts
        if len(parts) == 1:
            named = module.name in tree
        else:
            named = module.name in _MODULE_NAME_RE.findall(tree.get(f"{parts[0]}/", ""))
        if not named:
            unnamed.append(str(module.relative_to(ROOT)))
    assert not unnamed, f"docs/architecture.md's tree leaves out {unnamed}"
    stale = [
        f"{name} {module}"
        for name, text in tree.items()
        if name.endswith("/")
        for module in _MODULE_NAME_RE.findall(text)
        if not any((package / name).rglob(module))
    ]
    stale += [name for name in tree if not (package / name).exists()]
    assert not stale, f"docs/architecture.md's tree names what crawler/ no longer holds: {stale}"


# --- the files the docs and comments name; crawler/settings.py's groups ---------------------------------

SETTINGS = ROOT / "crawler" / "settings.py"
_PROJECT_FILE_RE = re.compile(r"(?<![\w/.-])((?:crawler|extractors|bench)/[\w/]+\.py)\b")
_SECTION_RE = re.compile(r"^# --- (?P<title>.*?) -+$")
_PREFIX_RE = re.compile(r"\b([A-Z]+_)(?=[\s,:]|$)")
_SETTING_RE = re.compile(r"^([A-Z][A-Z0-9_]*)\s*[:=]")


def test_every_project_file_the_docs_and_the_code_name_exists() -> None:
    """A path such as ``crawler/schedule/grabs.py`` in README.md, docs/, or the comments and strings of
    crawler/, extractors/ and bench/ names a file of the checkout."""
    sources = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("crawler", "extractors", "bench"):
        sources += sorted((ROOT / folder).rglob("*.py"))
    missing = sorted(
        f"{source.relative_to(ROOT)}: {path}"
        for source in sources
        for path in set(_PROJECT_FILE_RE.findall(source.read_text(encoding="utf-8")))
        if not (ROOT / path).is_file()
    )
    assert not missing, f"files named that the checkout does not hold: {missing}"


def test_no_doc_names_a_scratch_file_outside_the_checkout() -> None:
    """README.md and docs/ name no file under /tmp (a measure's scratch script, which no reader has): a
    measure is redone with a script of bench/ or from its description."""
    named = sorted(
        f"{source.relative_to(ROOT)}:{number}: {line.strip()}"
        for source in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
        if "/tmp/" in line
    )
    assert not named, f"scratch files named that a reader cannot have: {named}"


def settings_sections() -> list[tuple[str, list[str]]]:
    """The sections of crawler/settings.py after Scrapy's: each header's title and the settings under it."""
    sections: list[tuple[str, list[str]]] = []
    for line in SETTINGS.read_text(encoding="utf-8").splitlines():
        header = _SECTION_RE.match(line)
        if header:
            sections.append((header.group("title"), []))
            continue
        setting = _SETTING_RE.match(line)
        if setting and sections:
            sections[-1][1].append(setting.group(1))
    return sections[1:]


def test_each_settings_group_is_named_by_the_prefixes_of_its_settings() -> None:
    """Each header of crawler/settings.py (``# --- BAN_: ...``) names the prefixes of the settings under it,
    no other, and the module's docstring lists every group."""
    docstring = SETTINGS.read_text(encoding="utf-8").split('"""')[1]
    wrong = []
    for title, names in settings_sections():
        prefixes = _PREFIX_RE.findall(title.split(":", 1)[0])
        assert prefixes, f"crawler/settings.py: the header {title!r} names no prefix"
        for prefix in prefixes:
            if not any(name.startswith(prefix) for name in names):
                wrong.append(f"{title!r}: {prefix} names no setting")
            if f"``{prefix}``" not in docstring:
                wrong.append(f"{prefix} is not in the docstring")
        wrong += [f"{title!r}: {name} is not named" for name in names if not name.startswith(tuple(prefixes))]
    assert not wrong, f"crawler/settings.py's groups: {wrong}"


def test_every_setting_has_its_comment() -> None:
    """DESIGN.md's convention: every setting of crawler/settings.py has a one-line comment. A setting's
    comment is on the line above it, or is that of the setting just above it with the same first word
    (``BACKOFF_FIRST_SECONDS`` then ``BACKOFF_MAX_SECONDS`` under one comment)."""
    source = SETTINGS.read_text(encoding="utf-8")
    lines = source.splitlines()
    previous: tuple[str, int] | None = None
    bare = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = [target.id for target in targets if isinstance(target, ast.Name) and target.id.isupper()]
        if not names:
            previous = None
            continue
        name = names[0]
        above = lines[node.lineno - 2].strip()
        shares = (
            previous is not None
            and previous[1] == node.lineno - 1
            and previous[0].split("_")[0] == name.split("_")[0]
        )
        if not above.startswith("#") and not shares:
            bare.append(f"line {node.lineno}: {name}")
        previous = (name, node.end_lineno or node.lineno)
    assert not bare, f"crawler/settings.py: settings without a comment above them: {bare}"
