"""What a new user meets in the first hour (issue 11), beyond the documented commands that
``test_docs_commands.py`` runs: sites on this machine allowed by their rule only, and refused with how to
allow them; ``-s`` checked; commands run outside a checkout; answers that name what was meant; a command
line that starts without loading the crawl machinery.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from conftest import SiteServer, stderr_until_interrupted
from crawlsite import wait_until
from rich.console import Console
from scrapy.settings import Settings

from crawler.cli.crawl import _print_stored, article_url
from crawler.commandline import span
from crawler.demo import DEMO_ORIGIN, DEMO_RULES
from crawler.demo.server import DemoServer
from crawler.errors import InputError
from crawler.keys import Keys
from crawler.redisio.connection import connect, resolve_redis_url
from crawler.redisio.embedded import EmbeddedRedis
from crawler.redisio.since import RECORD_FILE, DataMarker
from crawler.rules import load_rule
from crawler.store import store_config
from crawler.store.sqlite import SqliteStore

COMMAND_TIMEOUT = 240.0
ALLOW_KEY = "allow_private_addresses: true"


def without_crawler_settings() -> dict[str, str]:
    """This process's environment less the crawler's settings (``CRAWLER_*``, ``REDIS_*``, ``MONGO_*``):
    a command run with it finds only what its working folder holds."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CRAWLER_", "REDIS_", "MONGO_"))
    }


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


def crawler(*args: str, cwd: Path, env: dict[str, str] | None = None, stdout: int = subprocess.PIPE) -> Ran:
    """`crawler ARGS` in a fresh process, with no Redis, MongoDB or crawler settings from outside; its
    standard output to ``stdout`` (captured by default)."""
    environment = without_crawler_settings()
    environment.update(env or {})
    run = subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=cwd,
        env=environment,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return Ran(run.returncode, run.stdout or "", run.stderr)


@pytest.fixture(scope="module")
def demo_origin() -> Iterator[str]:
    with DemoServer(port=0) as server:
        yield server.origin


def demo_rule(
    folder: Path, origin: str, site: str = "citynews", *, allow: bool, host: str = "127.0.0.1"
) -> Path:
    """The demo rule of ``site`` in ``folder``, served at ``origin`` (on ``host``), with or without the
    allowance of private addresses."""
    text = (DEMO_RULES / f"demo-{site}.yaml").read_text(encoding="utf-8")
    text = text.replace(DEMO_ORIGIN, origin.replace("127.0.0.1", host))
    text = text.replace("domains: [127.0.0.1]", f"domains: [{host}]")
    if not allow:
        text = text.replace(ALLOW_KEY, "allow_private_addresses: false")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"demo-{site}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- private addresses: the rule's own hosts, and no other ---------------------------------------------


def test_a_rule_that_allows_private_addresses_is_crawled_on_this_machine(
    tmp_path: Path, demo_origin: str
) -> None:
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    run = crawler("temp", "demo-citynews", cwd=tmp_path)
    assert run.code == 0, run.stderr[-3000:]
    stored = re.search(r"stored (\d+) articles", run.stdout)
    assert stored and int(stored.group(1)) >= 45, run.stdout
    assert "refused" not in run.stdout


def test_a_private_address_is_refused_with_what_and_how_to_allow_it(tmp_path: Path, demo_origin: str) -> None:
    # Two rules on this machine: citynews allows its host (127.0.0.1), techdaily (on localhost) does not.
    # The allowance of one rule is not the other's.
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    refused = demo_rule(tmp_path / "rules", demo_origin, "techdaily", allow=False, host="localhost")
    run = crawler("temp", "demo-techdaily", cwd=tmp_path)
    assert run.code == 1, "a temp crawl that stored nothing because it was refused is a failure"
    assert "stored 0 articles" in run.stdout
    assert "refused 1 request to private addresses" in run.stdout and ALLOW_KEY in run.stdout
    assert f"Refused {demo_origin.replace('127.0.0.1', 'localhost')}/techdaily/" in run.stderr
    assert "localhost resolves to 127.0.0.1, a loopback address" in run.stderr
    assert f"`{ALLOW_KEY}` in {refused.relative_to(tmp_path)} allows it" in run.stderr
    assert "Gave up retrying" not in run.stderr, "a refused address was retried as a DNS failure"
    status = crawler("status", "--format", "json", cwd=tmp_path)
    assert status.code == 0, status.stderr
    assert "refused 1 request to private addresses in 24 h" in status.stdout


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_allowance_is_the_requests_own_rules_on_a_host_that_two_rules_share(
    tmp_path: Path, demo_origin: str, host: str
) -> None:
    # citynews allows its host, techdaily on the same host does not: techdaily is refused as if alone.
    demo_rule(tmp_path / "rules", demo_origin, allow=True, host=host)
    refused = demo_rule(tmp_path / "rules", demo_origin, "techdaily", allow=False, host=host)
    run = crawler("temp", "demo-techdaily", cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr[-3000:]
    assert "stored 0 articles" in run.stdout
    assert "refused 1 request to private addresses" in run.stdout and ALLOW_KEY in run.stdout
    assert f"Refused {demo_origin.replace('127.0.0.1', host)}/techdaily/" in run.stderr
    kind = "127.0.0.1 is a loopback address" if host == "127.0.0.1" else "localhost resolves to 127.0.0.1"
    assert kind in run.stderr
    assert f"`{ALLOW_KEY}` in {refused.relative_to(tmp_path)} allows it" in run.stderr
    allowed = crawler("temp", "demo-citynews", cwd=tmp_path)
    assert allowed.code == 0, allowed.stderr[-3000:]
    stored = re.search(r"stored (\d+) articles", allowed.stdout)
    assert stored and int(stored.group(1)) >= 45, allowed.stdout
    assert "refused" not in allowed.stdout


def test_rules_try_fetches_a_private_page_only_when_the_rule_allows_it(
    tmp_path: Path, demo_origin: str
) -> None:
    allowed = demo_rule(tmp_path / "allowed", demo_origin, allow=True)
    run = crawler("rules", "try", str(allowed), f"{demo_origin}/citynews/", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "/citynews/2026/" in run.stdout
    refused = demo_rule(tmp_path / "refused", demo_origin, allow=False)
    run = crawler("rules", "try", str(refused), f"{demo_origin}/citynews/", cwd=tmp_path)
    assert run.code == 1
    assert "127.0.0.1 is a loopback address" in run.stderr and ALLOW_KEY in run.stderr


def test_rules_try_refusing_a_private_page_names_the_cause_the_rule_file_and_the_key_to_change(
    tmp_path: Path, demo_origin: str
) -> None:
    """The rule allows private addresses on its domains (127.0.0.1), and localhost is not one of them: the
    refusal says so, not to add the key the rule has; without the key, it names the rule file to add it
    to."""
    on_localhost = demo_origin.replace("127.0.0.1", "localhost") + "/citynews/"
    rule = demo_rule(tmp_path / "rules", demo_origin, allow=True).relative_to(tmp_path)
    run = crawler("rules", "try", "demo-citynews", on_localhost, cwd=tmp_path)
    assert run.code == 1, run.stdout
    assert run.stderr.strip() == (
        f"crawler rules try: error: refusing to fetch {on_localhost}: localhost resolves to 127.0.0.1, a"
        f" loopback address; `{ALLOW_KEY}` in {rule} lets only its domains (127.0.0.1) reach private"
        f" addresses, and localhost is not one of them: add localhost to `domains` in {rule} if localhost"
        " serves the site or its search"
    )
    rule = demo_rule(tmp_path / "rules", demo_origin, allow=False).relative_to(tmp_path)
    run = crawler("rules", "try", "demo-citynews", f"{demo_origin}/citynews/", cwd=tmp_path)
    assert run.code == 1, run.stdout
    assert run.stderr.strip().endswith(
        "127.0.0.1 is a loopback address; loopback, private and link-local addresses are fetched only when"
        f" asked: `{ALLOW_KEY}` in {rule} allows it"
    ), run.stderr
    run = crawler("rules", "try", "demo-citynews", on_localhost, cwd=tmp_path)
    assert run.code == 1, run.stdout
    assert run.stderr.strip().endswith(
        f"localhost resolves to 127.0.0.1, a loopback address; localhost is not one of the domains"
        f" (127.0.0.1) of {rule}, which does not say `{ALLOW_KEY}` either: add localhost to `domains` and the"
        f" key to {rule} if localhost serves the site or its search"
    ), run.stderr


def test_a_crawl_whose_start_page_redirects_off_the_rules_domains_skips_it_naming_the_host_and_the_rule_file(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """The rule allows private addresses on its domains (127.0.0.1), and its start page redirects to
    localhost, which is not one of them: the redirect is not followed (the guard refused it before; it is
    now never sent), and the crawl's warning, its summary and `status` say so, naming the host and the
    rule file, not to add the key the rule has."""
    away = f"http://localhost:{site_server.port}/links?to=/a/away"
    start = site_server.url(f"/redirect?to={urllib.parse.quote(away, safe='')}")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "away.yaml").write_text(
        f"domains: [127.0.0.1]\n{ALLOW_KEY}\nstart_urls: [{start!r}]\n"
        "index:\n  links: {xpath: \"//ul[@class='news']\"}\n"
        "article:\n  fields:\n    title: {xpath: //h1}\n    body: {xpath: \"//div[@class='article']/p\"}\n",
        encoding="utf-8",
    )
    rule = Path("rules", "away.yaml")
    run = crawler("temp", "away", cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr[-3000:]
    assert (
        f"Skipped {start}: it redirects to {away}, which a crawl does not follow: localhost is not on the"
        " domains of site away (127.0.0.1, or their subdomains): a site's articles are stored from its own"
        f" domains only; if localhost is the site's, add localhost to `domains` in {rule}"
    ) in run.stderr, run.stderr[-3000:]
    assert "allows it" not in run.stderr and "Refused" not in run.stderr
    assert run.stdout.splitlines()[:2] == [
        "fetched 0 pages, stored 0 articles, skipped 1 (redirected off the site: 1), errors 0",
        "nothing could be fetched: its page was skipped: redirected off the site",
    ], run.stdout
    status = crawler("status", cwd=tmp_path)
    assert status.code == 0, status.stderr
    assert (
        "1 request in 24 h redirected off the site's domains, not followed: a site's articles are stored"
        " from its own domains only (the crawl's warnings name each target: add its domain to `domains` in"
        f" {rule} if it is the site's)"
    ) in " ".join(status.stdout.split()), status.stdout


def test_status_says_refusals_on_the_rules_own_host_came_before_its_key_not_that_they_were_off_its_domains(
    tmp_path: Path, demo_origin: str
) -> None:
    """A crawl refused on the rule's own host (127.0.0.1) for want of the key, which was added since (what a
    new user does next): `status` says the refusals came before the key, not that their hosts are off the
    rule's domains, which 127.0.0.1 is not."""
    rule = demo_rule(tmp_path / "rules", demo_origin, allow=False).relative_to(tmp_path)
    run = crawler("temp", "demo-citynews", cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr[-3000:]
    assert "refused 1 request to private addresses" in run.stdout
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    status = crawler("status", cwd=tmp_path)
    assert status.code == 0, status.stderr
    assert "off the domains" not in status.stdout, status.stdout
    assert (
        "refused 1 request to private addresses in 24 h: to its domains (127.0.0.1), when"
        f" {rule} did not say `{ALLOW_KEY}` yet, as it does now"
    ) in status.stdout, status.stdout


# --- temp --url: the pages given, checked before anything starts ----------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("notaurl", "invalid URL 'notaurl': no scheme: only http:// and https:// URLs can be fetched"),
        # A host and path typed without a scheme: said so, with the URL meant (http for a port or an IP
        # address, as a site on this machine has); `localhost:8631/...` was said to have the scheme
        # 'localhost'.
        (
            "127.0.0.1:8631/citynews/",
            "invalid URL '127.0.0.1:8631/citynews/': no scheme: only http:// and https:// URLs can be"
            " fetched; did you mean 'http://127.0.0.1:8631/citynews/'?",
        ),
        (
            "localhost:8631/citynews/",
            "invalid URL 'localhost:8631/citynews/': no scheme: only http:// and https:// URLs can be"
            " fetched; did you mean 'http://localhost:8631/citynews/'?",
        ),
        (
            "www.citynews.example/local/",
            "invalid URL 'www.citynews.example/local/': no scheme: only http:// and https:// URLs can be"
            " fetched; did you mean 'https://www.citynews.example/local/'?",
        ),
        (
            "ftp://127.0.0.1/x",
            "invalid URL 'ftp://127.0.0.1/x': scheme 'ftp': only http:// and https:// URLs can be fetched",
        ),
    ],
)
def test_temp_of_a_url_that_is_no_http_url_is_a_usage_error(
    tmp_path: Path, demo_origin: str, url: str, message: str
) -> None:
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    run = crawler("temp", "demo-citynews", "--url", url, cwd=tmp_path)
    assert run.code == 2, run.stdout + run.stderr[-3000:]
    assert run.stderr.strip() == f"crawler temp: error: {message}"
    assert not (tmp_path / "data").exists(), "a bad --url started Redis or queued a request"


def test_a_worker_for_a_site_with_no_rule_is_refused_naming_the_sites(
    tmp_path: Path, demo_origin: str
) -> None:
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    run = crawler("worker", "--sites", "demo-citynews,demo-citynew", cwd=tmp_path)
    assert run.code == 2, run.stdout + run.stderr[-3000:]
    assert "no rule for site 'demo-citynew'" in run.stderr and "did you mean 'demo-citynews'?" in run.stderr
    assert not (tmp_path / "data").exists(), "a misspelt site started Redis"


def test_a_url_with_credentials_is_refused_and_its_password_never_shown(
    tmp_path: Path, demo_origin: str
) -> None:
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    url = demo_origin.replace("://", "://reader:s3cr3t-pw@") + "/citynews/"
    run = crawler("temp", "demo-citynews", "--url", url, cwd=tmp_path)
    assert run.code == 2, run.stdout + run.stderr[-3000:]
    shown = url.replace("reader:s3cr3t-pw@", "***@")
    assert run.stderr.strip() == (
        f"crawler temp: error: invalid URL {shown!r}: credentials in the URL are not supported (they would"
        " be sent in clear)"
    )
    assert not (tmp_path / "data").exists(), "a URL with credentials was queued"
    # `extract` says the same of it, as blind to the password.
    run = crawler("extract", url, cwd=tmp_path)
    assert run.code == 2 and "credentials in the URL" in run.stderr, run.stderr
    assert "s3cr3t" not in run.stderr


def test_a_url_off_the_rules_domains_is_refused_before_anything_is_queued(
    tmp_path: Path, demo_origin: str
) -> None:
    rule = demo_rule(tmp_path / "rules", demo_origin, allow=True)
    # An address, not a name: nothing is resolved, whether the command checks it first or not.
    url = demo_origin.replace("127.0.0.1", "127.0.0.2") + "/citynews/"
    run = crawler("temp", "demo-citynews", "--url", url, cwd=tmp_path)
    assert run.code == 2, run.stdout + run.stderr[-3000:]
    assert run.stderr.strip() == (
        f"crawler temp: error: --url {url!r}: its host 127.0.0.2 is not on the domains of site"
        f" demo-citynews: 127.0.0.1 (or their subdomains; {rule.relative_to(tmp_path)}); give a page of"
        " that site, or crawl this one with the rule of its own site"
    )
    assert not (tmp_path / "data").exists(), "a URL off the rule's domains was queued"


def test_a_start_url_given_with_url_is_refused_naming_it_and_the_command_that_crawls_the_site(
    tmp_path: Path, demo_origin: str
) -> None:
    """--url fetches its pages as article pages: a start URL, an index page, would be stored as an article
    (its list of links as a body). It is refused before anything is queued, naming it and `crawler temp
    SITE`, which reads it as an index page."""
    rule = demo_rule(tmp_path / "rules", demo_origin, allow=True)
    start = demo_origin + "/citynews/"
    assert start in rule.read_text(encoding="utf-8"), "the rule's start URL"
    run = crawler("temp", "demo-citynews", "--url", start + "#top", cwd=tmp_path)
    assert run.code == 2, run.stdout + run.stderr[-3000:]
    assert run.stderr.strip() == (
        f"crawler temp: error: --url {start + '#top'!r}: it is a start URL of site demo-citynews"
        f" ({rule.relative_to(tmp_path)}), an index page, which --url would store as an article: crawl the"
        " site from its index pages with `crawler temp demo-citynews`, or see what the rule finds on it with"
        f" `crawler rules try demo-citynews {start}`"
    )
    assert not (tmp_path / "data").exists(), "a start URL was queued as an article"


IDN_RULE = """
domains: [Bücher.example]
start_urls: ["http://xn--bcher-kva.example/"]
index:
  links: {xpath: "//a/@href"}
"""


@pytest.mark.parametrize(
    "url",
    [
        "http://bücher.example/a.html",
        "http://NEWS.BÜCHER.example./a.html",
        "https://xn--bcher-kva.example:8443/a.html",
        " http://bücher.example/a.html#top ",
    ],
)
def test_temp_takes_a_url_on_the_rules_domains_however_its_host_is_written(tmp_path: Path, url: str) -> None:
    (tmp_path / "books.yaml").write_text(IDN_RULE, encoding="utf-8")
    rule = load_rule(tmp_path / "books.yaml")
    assert article_url(rule, url) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        "http://notbücher.example/a.html",
        "http://bücher.example.elsewhere.test/a.html",
        "http://xn--bcher-kva.example.elsewhere.test/a.html",
        "http://127.0.0.1/a.html",
    ],
)
def test_temp_refuses_a_url_off_the_rules_domains_however_its_host_is_written(
    tmp_path: Path, url: str
) -> None:
    (tmp_path / "books.yaml").write_text(IDN_RULE, encoding="utf-8")
    rule = load_rule(tmp_path / "books.yaml")
    with pytest.raises(
        InputError, match=re.escape("not on the domains of site books: xn--bcher-kva.example (")
    ):
        article_url(rule, url)


def test_a_lone_url_refused_for_its_private_address_sends_to_no_dead_letter(
    tmp_path: Path, demo_origin: str
) -> None:
    demo_rule(tmp_path / "rules", demo_origin, allow=False)
    run = crawler("temp", "demo-citynews", "--url", f"{demo_origin}/citynews/a-story.html", cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr[-3000:]
    assert "refused 1 request to private addresses" in run.stdout and ALLOW_KEY in run.stdout
    assert run.stdout.splitlines()[-1] == "nothing could be fetched: see the reasons above"
    assert "dead list" not in run.stdout, "a refusal is no dead letter"
    letters = crawler("dead", "list", "--format", "json", cwd=tmp_path)
    assert letters.code == 0 and json.loads(letters.stdout) == [], letters.stdout + letters.stderr


# --- -s NAME=VALUE --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (
            "LEASE_SECONS=5",
            "-s 'LEASE_SECONS=5': no setting is named LEASE_SECONS; did you mean LEASE_SECONDS?",
        ),
        ("LEASE_SECONDS=abc", "-s 'LEASE_SECONDS=abc': 'abc' is not a number (the default is 60.0)"),
        ("ROBOTSTXT_OBEY=maybe", "'maybe' is not true or false"),
        ("CONCURRENT_REQUESTS=1.5", "'1.5' is not a whole number"),
        ("LEASE_SECONDS", "expected NAME=VALUE"),
    ],
)
def test_set_options_are_checked_before_anything_starts(tmp_path: Path, pair: str, message: str) -> None:
    for command in (["temp", "demo-citynews"], ["worker"], ["schedule", "--once"], ["run"]):
        run = crawler("--rules-dir", str(DEMO_RULES), *command, "-s", pair, cwd=tmp_path)
        assert run.code == 2, (command, run.stderr)
        assert message in run.stderr, (command, run.stderr)
        assert "Traceback" not in run.stderr
    assert not (tmp_path / "data").exists(), "a bad -s started Redis or created the data folder"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "CRAWLER_PROXIES",
            "garbage",
            'setting CRAWLER_PROXIES: not a proxy URL: "garbage"; expected http://',
        ),
        ("CRAWLER_PROXIES", "socks5://u:pw@127.0.0.1:1080", '"socks5://***@127.0.0.1:1080": SOCKS proxies'),
        ("CRAWLER_PROXY_FILE", "missing.txt", "setting CRAWLER_PROXY_FILE: cannot read missing.txt"),
    ],
)
def test_bad_global_proxies_are_a_clear_error_before_the_crawl(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    for command in (["temp", "demo-citynews"], ["worker"]):
        run = crawler("--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path, env={variable: value})
        assert run.code == 2, (command, run.stderr)
        assert message in run.stderr and "Traceback" not in run.stderr, (command, run.stderr)
        assert "pw@" not in run.stderr


def test_a_data_folder_that_does_not_exist_is_an_error_of_the_commands_that_read_it(tmp_path: Path) -> None:
    reading = (["status"], ["dead", "list"], ["dead", "requeue", "--all"], ["dead", "drop", "--all"])
    for command in (*reading, ["redis", "repair"]):
        run = crawler("--data-dir", "data/mien", "--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
        assert run.code == 2, (command, run.stderr)
        assert run.stderr == (
            f"crawler {' '.join(command[:2])}: error: no data folder 'data/mien': nothing was crawled there"
            " (give the folder of your crawls with --data-dir DIR)\n"
        ), command
        assert not (tmp_path / "data").exists(), f"{command} created the data folder"


@pytest.mark.parametrize("command", [["status"], ["dead", "list"], ["articles", "list"]])
def test_a_data_folder_that_is_a_file_is_said_to_be_one(tmp_path: Path, command: list[str]) -> None:
    """It said 'nothing was crawled there' of a file given for --data-dir."""
    (tmp_path / "crawls.tar").write_bytes(b"not a folder")
    run = crawler("--data-dir", "crawls.tar", "--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert run.stderr == (
        f"crawler {' '.join(command)}: error: the data folder 'crawls.tar' is a file, not a folder (give the"
        " folder of your crawls with --data-dir DIR)\n"
    )


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
def test_a_data_folder_that_cannot_be_made_names_the_folder_that_takes_none_and_what_to_do(
    tmp_path: Path,
) -> None:
    """A data folder under /proc (a file system that takes no new folder: mkdir fails with ENOENT, as
    though /proc were not there) said "cannot write /proc/x: No such file or directory", and the demo
    "[Errno 2] ...: check the folder": no folder to give instead. Each names /proc and says to give
    another data folder."""
    rule = demo_rule(tmp_path / "rules", "http://127.0.0.1:9", allow=True)
    advice = "/proc takes no new file or folder (a system folder): give another data folder"
    commands = {
        ("temp", "demo-citynews"): "crawler temp: error: cannot start the embedded Redis: cannot write"
        f" /proc/x: No such file or directory; {advice}, then run the command again\n",
        ("demo",): "crawler demo: error: cannot open /proc/x/demo/demo.lock, the demo's lock file: [Errno 2]"
        f" No such file or directory: '/proc/x'; {advice}\n",
    }
    for command, said in commands.items():
        run = crawler("--data-dir", "/proc/x", "--rules-dir", str(rule.parent), *command, cwd=tmp_path)
        assert (run.code, run.stderr) == (1 if command[0] == "temp" else 2, said), command


def test_a_data_folder_nothing_was_crawled_in_is_noted_by_the_commands_that_read(tmp_path: Path) -> None:
    for command in (["status"], ["dead", "list"]):
        misspelt = tmp_path / command[0] / "dmeo"
        misspelt.mkdir(parents=True)
        run = crawler("--data-dir", str(misspelt), "--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
        assert run.code == 0, run.stderr
        assert run.stderr.startswith(
            f"crawler {' '.join(command)}: note: nothing was crawled under {misspelt} yet (a new data folder)"
        ), command
        # Run again, the folder has an embedded Redis, still holding nothing: noted again.
        again = crawler("--data-dir", str(misspelt), "--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
        assert again.code == 0 and "note: nothing was crawled" in again.stderr, command


def test_a_data_folder_nothing_was_crawled_in_names_the_data_folder_of_crawls_inside_it(
    tmp_path: Path,
) -> None:
    """After `./run.sh demo`, whose crawls are in data/demo, `crawler status` in the same folder read ./data
    and said 'nothing was crawled under data yet (a new data folder); give the one of your crawls with
    --data-dir DIR', naming no folder: the data folder in it that holds crawls is named."""
    demo = tmp_path / "data" / "demo"
    (demo / "redis").mkdir(parents=True)
    (demo / "redis" / "appendonly.aof").write_bytes(b"")
    (tmp_path / "data" / "notes").mkdir()
    for command in (["status"], ["dead", "list"]):
        run = crawler("--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
        assert run.code == 0, run.stderr
        assert run.stderr == (
            f"crawler {' '.join(command)}: note: nothing was crawled under data yet (a new data folder);"
            " data/demo, in it, holds crawls: give it with `--data-dir data/demo` before the command\n"
        ), command


def test_a_data_folder_whose_store_holds_articles_is_not_called_new_when_its_redis_holds_nothing(
    tmp_path: Path,
) -> None:
    """Workers run with REDIS_URL store their articles under the data folder and keep nothing in its
    embedded Redis: read without REDIS_URL, it said 'nothing was crawled under DIR yet (a new data
    folder)' beside 1,600 articles stored."""
    data = tmp_path / "crawls"
    with SqliteStore(data) as store:
        for number in range(3):
            store.upsert(
                {
                    "site": "demo-citynews",
                    "url": f"http://news.test/{number}",
                    "fetched_at": "2026-11-20T10:00:00Z",
                    "title": f"Title {number}",
                    "body": f"Body number {number} of the city's news.",
                    "job": "job-1",
                }
            )
    for command, name in (
        (["status"], "status"),
        (["status", "--check"], "status"),
        (["dead", "list"], "dead list"),
    ):
        run = crawler("--data-dir", str(data), "--rules-dir", str(DEMO_RULES), *command, cwd=tmp_path)
        assert run.code == 0, run.stderr
        assert run.stderr == (
            f"crawler {name}: note: no Redis state"
            f" under {data}, yet its store holds 3 articles (of 1 week): the workers that stored them kept"
            " their queue, counts and dead letters in another Redis; did they run with REDIS_URL? set it as"
            " they had it to see them\n"
        ), command


def test_a_data_folder_whose_embedded_redis_lost_the_data_its_processes_saw_says_so_not_redis_url(
    tmp_path: Path,
) -> None:
    """The embedded Redis of a data folder whose store holds articles emptied while no process ran (its
    append-only file removed, a FLUSHALL): read, it said the workers had kept their state in another Redis
    and asked whether they ran with REDIS_URL. The data folder's record says its processes saw the
    crawler's data in that Redis: the note says it was lost, and status's NOTE since when."""
    data = tmp_path / "crawls"
    with SqliteStore(data) as store:
        store.upsert(
            {
                "site": "demo-citynews",
                "url": "http://news.test/1",
                "fetched_at": "2026-11-20T10:00:00Z",
                "title": "Title",
                "body": "Body of the city's news.",
                "job": "job-1",
            }
        )
    with EmbeddedRedis(data, watch_seconds=0) as server:
        client = connect(server.ensure())
        DataMarker(client, Keys("crawler"), "w:1:a", data).check(5000.0)
        client.flushall()
        client.close()
    run = crawler("--data-dir", str(data), "--rules-dir", str(DEMO_RULES), "status", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert run.stderr == (
        f"crawler status: note: the embedded Redis under {data} holds nothing, yet this data folder's"
        f" processes saw the crawler's data in it until 1970-01-01T01:23:20Z ({data / RECORD_FILE}): it"
        " lost it (its appendonly.aof removed or emptied, or a FLUSHALL); the articles stored are kept, the"
        " queue, the URLs seen and the dead letters are gone (pages are fetched again)\n"
    )
    assert "NOTE Redis lost its data after 1970-01-01T01:23:20Z" in " ".join(run.stdout.split()), run.stdout


def test_articles_of_a_data_folder_crawled_on_its_redis_with_none_stored_there_name_mongodb(
    tmp_path: Path,
) -> None:
    """Workers run with MONGO_URI keep their queue in the data folder's embedded Redis and store nothing
    under it: `articles list` without MONGO_URI said 'crawl first'."""
    data = tmp_path / "crawls"
    data.mkdir()
    fresh = crawler("--data-dir", str(data), "articles", "list", cwd=tmp_path)
    assert fresh.code == 0, fresh.stderr
    assert fresh.stderr == (
        f"crawler articles list: note: no articles stored under {data} yet; crawl first:"
        f" `crawler --data-dir {data} temp SITE`\n"
    )
    url, embedded = resolve_redis_url(None, data)
    try:
        redis.Redis.from_url(url).hset(Keys("crawler").job("job-1"), "pending", 0)
    finally:
        if embedded is not None:
            embedded.close()
    run = crawler("--data-dir", str(data), "articles", "list", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert run.stderr == (
        f"crawler articles list: note: no articles stored under {data}, though crawls ran on its Redis"
        f" (`crawler --data-dir {data} status` shows them): if their workers stored into MongoDB, set"
        f" MONGO_URI as they had it to see their articles; else crawl first: `crawler --data-dir {data} temp"
        " SITE`\n"
    )


def test_articles_of_a_data_folder_whose_articles_were_forgotten_say_so_not_mongodb(tmp_path: Path) -> None:
    """`sites forget SITE --articles` deleted the only site's articles of a data folder crawled on its Redis:
    `articles stats` said 'if their workers stored into MongoDB, set MONGO_URI', a guess the week left in
    the store belies; a plain temp crawl would not fetch the articles again either (their URLs stay seen)."""
    data, rules = tmp_path / "data", tmp_path / "rules"
    shutil.copytree(DEMO_RULES, rules)
    store = SqliteStore(data)
    document = {"site": "demo-citynews", "url": "http://c.test/a", "fetched_at": "2026-11-17T10:00:00Z"}
    store.upsert({**document, "title": "T", "body": "The words of the article."})
    store.close()
    url, embedded = resolve_redis_url(None, data)
    try:
        redis.Redis.from_url(url).hset(Keys("crawler").job("job-1"), "pending", 0)
    finally:
        if embedded is not None:
            embedded.close()
    folders = ("--data-dir", str(data), "--rules-dir", str(rules))
    forgot = crawler(*folders, "sites", "forget", "demo-citynews", "--articles", "--yes", cwd=tmp_path)
    assert forgot.code == 0 and "\ndeleted 1 article of demo-citynews from " in forgot.stdout, forgot
    run = crawler(*folders, "articles", "stats", cwd=tmp_path)
    assert run.code == 0, run.stderr
    given = f"crawler --data-dir {data} --rules-dir {rules}"
    assert run.stderr == (
        f"crawler articles stats: note: no articles stored under {data}: its store has 1 week of articles"
        f" (2026w47), all deleted since (`{given} sites forget SITE --articles` deletes a site's); their URLs"
        f" stay seen: `{given} temp SITE --again` fetches a site's articles again\n"
    )


def test_suggested_commands_repeat_how_this_one_was_run(tmp_path: Path) -> None:
    data = tmp_path / "my data"
    data.mkdir()
    run = crawler(
        "--data-dir",
        str(data),
        "dead",
        "drop",
        "nope",
        cwd=tmp_path,
        env={"CRAWLER_COMMAND": "./run.sh crawler"},
    )
    assert run.code == 2, run.stderr
    assert f"`./run.sh crawler --data-dir '{data}' dead list` shows" in run.stderr


# --- outside a checkout ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["status"], ["worker"], ["schedule"], ["run"], ["temp", "news"]])
def test_without_a_rules_folder_commands_say_how_to_give_one_and_create_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    run = crawler(*command, cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert (
        "the rules folder 'rules' does not exist: give the folder of your site rules with --rules-dir DIR"
        in (run.stderr)
    )
    assert list(tmp_path.iterdir()) == [], "the command created files before it failed"


@pytest.mark.parametrize("command", [["worker"], ["run"]])
def test_a_worker_with_an_empty_rules_folder_is_refused_before_it_takes_a_request(
    tmp_path: Path, command: list[str]
) -> None:
    """A worker with no rule would take every request of the shared queue and dead-letter it (``no rule``):
    an empty (or wrong) rules folder is an input error, before Redis starts."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "notes.txt").write_text("not a rule", encoding="utf-8")
    run = crawler(*command, cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert run.stderr == (
        f"crawler {command[0]}: error: no rule files in 'rules': a worker with no rule would take every"
        " request of the shared queue and dead-letter it; give the folder of your site rules with --rules-dir"
        " DIR (or CRAWLER_RULES_DIR), one <site>.yaml file per site (docs/rules.md)\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["rules"], "the command created files"


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_a_worker_starts_without_scrapys_start_up_lists_unless_at_debug(
    tmp_path: Path, demo_origin: str, level: str
) -> None:
    """Scrapy's start-up lists (versions, overridden settings, enabled components: about 80 lines) are
    DEBUG lines: a worker at INFO starts with where it runs (Redis, data and rules folders) and the sites
    it serves, one at DEBUG shows them as DEBUG."""
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    environment = without_crawler_settings()
    with subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", "-s", f"LOG_LEVEL={level}"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as worker:
        lines = stderr_until_interrupted(worker, COMMAND_TIMEOUT)
        assert worker.returncode == 130, "".join(lines)  # interrupted
    lists = [
        line
        for line in lines
        if re.search(
            r"Scrapy \S+ started|Versions:|Overridden settings:|Enabled (addons|extensions|downloader)", line
        )
    ]
    if level == "INFO":
        assert lists == [], "".join(lines)
        ours = [line.split("] INFO: ", 1)[1] for line in lines[:2]]
        assert ours == [
            f"Redis unix://{tmp_path / 'data/redis/redis.sock'}, data folder data, rules folder rules\n",
            "Serving 1 site rule: demo-citynews\n",
        ], "".join(lines)
        # Ctrl-C, a stop asked for: INFO lines (a warning before), Scrapy's without its trailing space.
        stop = [line.split("] ", 1)[1] for line in lines if "SIGINT" in line]
        assert stop == [
            "INFO: Received SIGINT, shutting down gracefully; send it again to force an unclean shutdown\n",
            "INFO: stopping (SIGINT): no download under way\n",
        ], "".join(lines)
    else:
        assert len(lists) == 6, "".join(lines)
        assert all(" DEBUG: " in line for line in lists), "".join(lists)


def test_a_worker_that_finds_requests_queued_as_it_starts_counts_them_in_words(
    tmp_path: Path, demo_origin: str
) -> None:
    """The scheduler's first grab of a one-start-URL rule is one request: the worker that starts then
    says so in the singular."""
    demo_rule(tmp_path / "rules", demo_origin, allow=True)
    scheduled = crawler("schedule", "--once", cwd=tmp_path)
    assert scheduled.code == 0, scheduled.stderr
    environment = without_crawler_settings()
    with subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as worker:
        assert worker.stderr is not None
        lines = []
        for line in worker.stderr:
            lines.append(line)
            if "Resuming:" in line or "storing articles" in line:
                break
        worker.send_signal(signal.SIGINT)
        lines += worker.communicate(timeout=COMMAND_TIMEOUT)[1].splitlines(keepends=True)
    resuming = [line.split("] INFO: ", 1)[1] for line in lines if "Resuming:" in line]
    assert resuming == ["Resuming: 1 request queued, 0 leased\n"], "".join(lines)


def test_a_page_whose_regex_searches_ran_out_of_time_is_named_in_the_warning(
    tmp_path: Path, demo_origin: str
) -> None:
    """A field regex that backtracks past the page's regex budget (RULES_REGEX_PAGE_SECONDS): the warning
    names the page the budget was spent on, and counts the searches skipped."""
    path = demo_rule(tmp_path / "rules", demo_origin, allow=True)
    text = path.read_text(encoding="utf-8")
    title = """    title: {xpath: "//h1[@class='headline']"}\n"""
    assert title in text
    # The story's letters and spaces as a's, the rest left out, then a b: (a+)+$ backtracks on that run of
    # a's to its time limit.
    letters = "bcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ "
    as_a = f"translate(//div[@class='story'], '{letters}', '{'a' * len(letters)}')"
    run_of_a = f"concat(translate({as_a}, translate({as_a}, 'a', ''), ''), 'b')"
    slow = f"""    title: {{xpath: "{run_of_a}", regex: '(a+)+$'}}\n"""
    # Six such searches outlast the page's second: the searches after it are skipped.
    more = "".join(slow.replace("title:", f"slow{n}:") for n in range(5))
    path.write_text(text.replace(title, slow + more), encoding="utf-8")
    with urllib.request.urlopen(f"{demo_origin}/citynews/", timeout=30) as response:
        index = response.read().decode("utf-8")
    found = re.search(r'href="(/citynews/\d{4}/[\w-]+\.html)"', index)
    assert found, index[:3000]
    article = demo_origin + found.group(1)
    run = crawler("temp", "demo-citynews", "--url", article, cwd=tmp_path)
    spent = [line for line in run.stderr.splitlines() if "spent their" in line]
    prefix = (
        f"crawler temp: warning: demo-citynews: the rule's regular expressions spent their 1 s on {article}: "
    )
    assert len(spent) == 1 and spent[0].startswith(prefix), run.stderr[-3000:]
    assert re.fullmatch(r"1 search skipped|([2-9]|\d\d+) searches skipped", spent[0][len(prefix) :]), spent


def test_what_a_worker_did_names_the_articles_it_updated_and_the_kinds_of_its_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from crawler.worker import process
    from crawler.worker.process import _what_it_did

    monkeypatch.setattr(process, "PROCESS_STARTED", time.monotonic() - 61.4, raising=False)
    stats = {
        "elapsed_time_seconds": 61.4,
        "finish_reason": "finished",
        "crawl/pages/a": 2,
        "crawl/pages/b": 1,
        "acked/stored": 1,
        "acked/updated": 2,
        "dead/a": 2,
        "dead/b": 1,
        "errors/http/a": 2,
        "errors/no rule/b": 1,
    }
    assert _what_it_did(stats) == (
        "The worker ran 61 s (finished): fetched 3 pages, stored 1 article, updated 2 stored before,"
        " errors 3 (http: 2, no rule: 1)"
    )


def test_a_worker_says_it_ran_as_long_as_its_process_not_its_spider(monkeypatch: pytest.MonkeyPatch) -> None:
    # "The worker ran 4 s" of a process that ran about 8 s: Scrapy's elapsed time starts as the spider
    # opens, after the imports and Redis's start, and ends as it closes, before the stop.
    from crawler.worker import process
    from crawler.worker.process import _what_it_did

    monkeypatch.setattr(process, "PROCESS_STARTED", time.monotonic() - 8.2, raising=False)
    stats = {"elapsed_time_seconds": 4.1, "finish_reason": "shutdown", "crawl/pages/a": 3, "acked/stored": 2}
    assert (
        _what_it_did(stats) == "The worker ran 8 s (shutdown): fetched 3 pages, stored 2 articles, errors 0"
    )


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_a_worker_stops_with_one_line_of_what_it_did_not_scrapys_stats_unless_at_debug(
    tmp_path: Path, demo_origin: str, level: str
) -> None:
    """A worker's stop at INFO dumped Scrapy's stats ("Dumping Scrapy stats:" and a dict of 40 lines or
    more) and said nothing of its own of what it did. The dump is a DEBUG line, as the start-up lists are,
    and the worker says in one line what it did, as a temp crawl's summary counts it."""
    from crawler.redisio.connection import connect
    from crawler.redisio.embedded import EmbeddedRedis
    from crawler.requests import JobCounts, enqueue_job

    rule = demo_rule(tmp_path / "rules", demo_origin, allow=True)
    environment = without_crawler_settings()
    log = tmp_path / "worker.log"
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as server:
        url = server.ensure()
        client = connect(url)
        keys = Keys("crawler")
        job = enqueue_job(client, keys, [load_rule(rule)])
        with log.open("w", encoding="utf-8") as stream:
            worker = subprocess.Popen(
                [sys.executable, "-m", "crawler.cli", "worker", "-s", f"LOG_LEVEL={level}"],
                cwd=tmp_path,
                env={**environment, "REDIS_URL": url},
                stdout=subprocess.DEVNULL,
                stderr=stream,
                stdin=subprocess.DEVNULL,
            )
            try:
                wait_until(lambda: JobCounts.read(client, keys, job).pending == 0, "the job to be done")
                counts = JobCounts.read(client, keys, job)
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(COMMAND_TIMEOUT)
        client.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    assert worker.returncode == 130, "\n".join(lines[-40:])  # interrupted
    dumps = [line for line in lines if "Dumping Scrapy stats:" in line]
    if level == "INFO":
        assert dumps == [], "\n".join(lines[-60:])
        assert [line for line in lines if re.match(r" ?[{']\S+': ", line)] == [], "no line of the dict"
    else:
        assert len(dumps) == 1 and " DEBUG: " in dumps[0], "\n".join(lines[-60:])
    # What it did, not the line of the stop asked for (INFO: "stopping (SIGINT): ...").
    did = [
        line.split("] INFO: ", 1)[1]
        for line in lines
        if "[crawler.worker.process] INFO: " in line and "] INFO: stopping (" not in line
    ]
    assert counts.fetched > 0 and counts.stored > 0, counts
    assert len(did) == 1 and re.fullmatch(
        rf"The worker ran \d+ s \(shutdown\): fetched {counts.fetched} pages, stored {counts.stored}"
        rf" articles, errors {counts.errors}",
        did[0],
    ), "\n".join(lines[-60:])


def test_the_scheduler_and_status_on_an_empty_rules_folder_say_so(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    scheduled = crawler("schedule", "--once", cwd=tmp_path)
    assert scheduled.code == 0, scheduled.stderr
    assert scheduled.stderr.startswith(
        "crawler schedule: warning: no rule files in 'rules': nothing is scheduled until one is added there;"
        " give the folder of your site rules with --rules-dir DIR"
    ), scheduled.stderr
    shown = crawler("status", cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    # Said once: the note on stderr says why and the fix; stdout, the data, only that no site is shown.
    assert "crawler status: note: no rule files in 'rules': no site to show; give the folder" in shown.stderr
    assert shown.stderr.count("no rule files") == 1, shown.stderr
    assert f"Sites: none in 'rules' ({tmp_path / 'rules'})" in " ".join(shown.stdout.split()), shown.stdout
    assert "no rule files" not in shown.stdout and "--rules-dir" not in shown.stdout, shown.stdout


def test_the_demo_runs_from_any_folder_with_its_packaged_rules(tmp_path: Path) -> None:
    run = crawler("demo", "--port", "0", cwd=tmp_path)
    assert run.code == 0, run.stderr[-3000:]
    assert "stored 146 articles" in run.stdout
    assert "`crawler --data-dir data/demo articles stats`" in run.stdout
    assert "┃" not in run.stdout, "a table drawn for a terminal on a pipe"
    # Every command its last line suggests is whole: run as given, each shows the demo's articles or
    # sites (./rules holds none of them, ./data none of its articles).
    suggested = re.findall(r"`([^`]*)`", run.stdout.splitlines()[-1])
    assert suggested == [
        "crawler --data-dir data/demo articles stats",
        "crawler --data-dir data/demo articles list --reposts",
        "crawler --data-dir data/demo --rules-dir data/demo/rules status",
    ], run.stdout[-2000:]
    for command in suggested:
        shown = crawler(*command.split()[1:], cwd=tmp_path)
        assert shown.code == 0, f"{command}: {shown.stderr[-3000:]}"
        assert "demo-citynews" in shown.stdout, f"{command}: {shown.stdout[-2000:]}"
    status = crawler(*suggested[-1].split()[1:], cwd=tmp_path)
    for site in ("demo-citynews", "demo-huaxia", "demo-techdaily"):
        assert site in status.stdout
    assert sorted(path.name for path in (tmp_path / "data" / "demo" / "rules").iterdir()) == [
        "demo-citynews.yaml",
        "demo-huaxia.yaml",
        "demo-techdaily.yaml",
    ]


def test_the_commands_the_demo_crawl_suggests_point_at_the_demos_folders(tmp_path: Path) -> None:
    """The demo crawls into data/demo with the rules in data/demo/rules: what its summary and its worker
    suggest runs on those folders (MongoDB unreachable: the articles are spooled in data/demo)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"mongodb://127.0.0.1:{probe.getsockname()[1]}/"  # nothing listens there
    run = crawler("demo", "--port", "0", cwd=tmp_path, env={"MONGO_URI": uri})
    assert run.code == 0, run.stderr[-3000:]
    command = "crawler --data-dir data/demo --rules-dir data/demo/rules"
    assert f"by the next crawl on this data folder, or `{command} articles stats`" in run.stdout, run.stdout
    assert f"by the next crawl or `{command} articles` command on this data folder" in run.stderr, run.stderr


def test_the_demo_with_mongodb_unreachable_ends_with_what_its_store_says_not_0_articles_stored(
    tmp_path: Path,
) -> None:
    """With MONGO_URI set the demo stores into MongoDB: its closing lines read that store, not the SQLite
    files of data/demo; MongoDB unreachable, they say so and what waits in the spool."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there
    env = {"MONGO_URI": f"mongodb://127.0.0.1:{port}/", "MONGO_TIMEOUT_MS": "200"}
    run = crawler("demo", "--port", "0", cwd=tmp_path, env=env)
    assert run.code == 0, run.stderr[-3000:]
    stored = re.search(r"stored (\d+) articles", run.stdout)
    assert stored and int(stored.group(1)) >= 145, run.stdout
    (spool,) = [path.relative_to(tmp_path) for path in (tmp_path / "data" / "demo" / "spool").glob("*.jsonl")]
    assert "articles stored in data/demo" not in run.stdout, run.stdout
    assert run.stdout.splitlines()[-1].startswith(
        f"the articles stored cannot be shown: cannot reach MongoDB at 127.0.0.1:{port} (MONGO_URI) within"
        f" 200 ms (MONGO_TIMEOUT_MS): 127.0.0.1:{port}: [Errno 111] Connection refused; {stored.group(1)}"
        f" articles wait in the spool {spool}, written into MongoDB when it is back. See them once it is"
        " back with `crawler --data-dir data/demo articles stats`"
    ), run.stdout[-2000:]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("extract", "page.html"), id="extract"),
        pytest.param(("articles", "list"), id="articles list (through rich)"),
    ],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, command: tuple[str, ...]) -> None:
    """`crawler ... | head`: once the reader has closed the pipe, the command stops, says nothing and exits
    with 0 (what rich's consoles do with a broken pipe is exit with 1)."""
    (tmp_path / "page.html").write_text(
        "<html><body><p>"
        + "The harbour bridge opens to buses and bicycles next spring. " * 5
        + "</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "data").mkdir()
    reader, writer = os.pipe()
    os.close(reader)  # gone before the command writes its first line
    try:
        run = crawler("--data-dir", str(tmp_path / "data"), *command, cwd=tmp_path, stdout=writer)
    finally:
        os.close(writer)
    assert run.code == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert "Broken pipe" not in run.stderr


# --- answers that name what was meant --------------------------------------------------------------------


def test_temp_of_an_unknown_site_suggests_the_one_meant(tmp_path: Path) -> None:
    run = crawler("--rules-dir", str(DEMO_RULES), "temp", "demo-citynew", cwd=tmp_path)
    assert run.code == 2
    assert "no rule for site 'demo-citynew'" in run.stderr
    assert "did you mean 'demo-citynews'?" in run.stderr
    assert "(sites: demo-citynews, demo-huaxia, demo-techdaily)" in run.stderr


@pytest.mark.parametrize("given", ["demo-citynews.yaml", "rules/demo-citynews.yaml"])
def test_temp_of_a_rule_file_name_says_to_give_the_site_id(tmp_path: Path, given: str) -> None:
    """It said 'rules/rules/demo-citynews.yaml.yaml' does not exist."""
    shutil.copytree(DEMO_RULES, tmp_path / "rules")
    run = crawler("temp", given, cwd=tmp_path)
    assert run.code == 2
    assert run.stderr == (
        f"crawler temp: error: {given!r} is a rule file, not a site id: give the site id, the rule file's"
        " name without .yaml, 'demo-citynews' for rules/demo-citynews.yaml (sites: demo-citynews,"
        " demo-huaxia, demo-techdaily)\n"
    )


def test_a_rule_in_a_yml_file_is_named_with_how_to_have_it_read(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", rules / "citynews.yml")
    for command in (["temp", "citynews"], ["rules", "try", "citynews", "page.html"]):
        run = crawler("--rules-dir", str(rules), *command, cwd=tmp_path)
        assert run.code == 2, (command, run.stderr)
        old, new = rules / "citynews.yml", rules / "citynews.yaml"
        renamed = f'rename "{old}" to "{new}"'
        assert renamed in run.stderr, (command, run.stderr)


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["temp", "--rules-dir", str(DEMO_RULES), "demo-citynews"], "--rules-dir"),
        (["articles", "stats", "--data-dir=data"], "--data-dir"),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(
    tmp_path: Path, command: list[str], option: str
) -> None:
    run = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "./run.sh crawler"})
    assert run.code == 2, run.stderr
    assert f"{option} is an option of crawler itself: give it before the command" in run.stderr, run.stderr
    assert f"as in `./run.sh crawler {option} DIR COMMAND ...`" in run.stderr, run.stderr


def test_the_help_usage_and_messages_of_crawler_run_through_run_sh_name_it_as_run(tmp_path: Path) -> None:
    """`./run.sh crawler sites pause --help` said `usage: crawler sites pause` and the command's errors
    `crawler sites pause: error:` while the commands they suggest said `./run.sh crawler ...`
    (CRAWLER_COMMAND, which run.sh exports): the usage, the help, each line on stderr and the commands
    suggested now all name the command the way it was run."""
    run = {"CRAWLER_COMMAND": "./run.sh crawler"}
    helped = crawler("sites", "pause", "--help", cwd=tmp_path, env=run)
    assert helped.code == 0, helped.stderr
    assert helped.stdout.startswith("usage: ./run.sh crawler sites pause [-h] SITE\n"), helped.stdout
    assert "`./run.sh crawler status` shows it PAUSED" in " ".join(helped.stdout.split()), helped.stdout
    unknown = crawler("status", "--json", cwd=tmp_path, env=run)
    assert unknown.code == 2, unknown.stderr
    assert unknown.stderr.startswith("usage: ./run.sh crawler status "), unknown.stderr
    assert unknown.stderr.splitlines()[-1] == (
        "./run.sh crawler status: error: unrecognized arguments: --json; did you mean '--format json'?"
        " (`./run.sh crawler status --help` lists its options)"
    ), unknown.stderr
    told = crawler("extract", "no-such-page.html", cwd=tmp_path, env=run)
    assert told.code == 2, told.stderr
    assert told.stderr.startswith("./run.sh crawler extract: error: no such file: 'no-such-page.html'"), (
        told.stderr
    )


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ["temp", "demo-citynews", "--limt", "3"],
            "crawler temp: error: unrecognized arguments: --limt 3; did you mean '--limit'?"
            " (`crawler temp --help` lists its options)",
        ),
        (
            ["rules", "check", "--quiet"],
            "crawler rules check: error: unrecognized arguments: --quiet"
            " (`crawler rules check --help` lists its options)",
        ),
        (
            ["status", "now"],
            "crawler status: error: unrecognized arguments: now (`crawler status --help` lists its options)",
        ),
        # A value of --format given as an option of its own, as many tools take it, was named with no
        # hint: the closest option's name is far from `--json`.
        (
            ["status", "--json"],
            "crawler status: error: unrecognized arguments: --json; did you mean '--format json'?"
            " (`crawler status --help` lists its options)",
        ),
        (
            ["articles", "export", "--csv"],
            "crawler articles export: error: unrecognized arguments: --csv; did you mean '--format csv'?"
            " (`crawler articles export --help` lists its options)",
        ),
    ],
)
def test_an_unknown_option_of_a_command_is_named_with_that_command(
    tmp_path: Path, command: list[str], said: str
) -> None:
    run = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert run.code == 2, run.stderr
    assert run.stderr.startswith(f"usage: crawler {command[0]} "), run.stderr
    assert run.stderr.splitlines()[-1] == said, run.stderr


@pytest.mark.parametrize(
    ("command", "said", "meant"),
    [
        (
            ["tmp", "demo-citynews"],
            "argument COMMAND: invalid choice: 'tmp' (choose from 'extract', ",
            "temp",
        ),
        (
            ["rules", "chek"],
            "crawler rules: error: argument ACTION: invalid choice: 'chek' (choose from ",
            "check",
        ),
        (
            ["articles", "export", "--format", "json"],
            "invalid choice: 'json' (choose from 'jsonl', 'csv')",
            "jsonl",
        ),
    ],
)
def test_a_mistyped_command_action_or_option_value_names_the_closest_one(
    tmp_path: Path, command: list[str], said: str, meant: str
) -> None:
    """`crawler tmp`, `rules chek`, `articles export --format json` gave argparse's 'invalid choice' and
    its list alone, while a mistyped option or site gets "did you mean": the closest choice is named too."""
    run = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert run.code == 2, run.stderr
    last = run.stderr.splitlines()[-1]
    assert said in last, run.stderr
    assert last.endswith(f"); did you mean {meant!r}?"), run.stderr


def test_an_unknown_option_after_a_global_option_given_before_its_command_is_not_said_to_be_misplaced(
    tmp_path: Path,
) -> None:
    """`crawler --data-dir DIR status --bogus`: the error's hint, the command's help with the data folder as
    given, holds --data-dir, which was read for a global option given after the command: "(--data-dir is an
    option of crawler itself: give it before the command ...)", where it was."""
    run = crawler("--data-dir", "data", "status", "--bogus", cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert run.code == 2, run.stderr
    assert run.stderr.splitlines()[-1] == (
        "crawler status: error: unrecognized arguments: --bogus"
        " (`crawler --data-dir data status --help` lists its options)"
    ), run.stderr


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ["temp", "demo-citynews", "--data", "elsewhere"],
            "crawler temp: error: unrecognized arguments: --data elsewhere (--data-dir is an option of"
            " crawler itself: give it before the command, as in `crawler --data-dir DIR COMMAND ...`)",
        ),
        (
            ["dead", "list", "--rules=elsewhere"],
            "crawler dead list: error: unrecognized arguments: --rules=elsewhere (--rules-dir is an option"
            " of crawler itself: give it before the command, as in `crawler --rules-dir DIR COMMAND ...`)",
        ),
        (
            ["status", "--verb"],
            "crawler status: error: unrecognized arguments: --verb (--verbose is an option of crawler itself:"
            " give it before the command, as in `crawler --verbose COMMAND ...`)",
        ),
    ],
)
def test_a_global_option_abbreviated_after_the_command_says_where_it_goes(
    tmp_path: Path, command: list[str], said: str
) -> None:
    # argparse takes --data for --data-dir before the command: after it, the hint is the one of the whole
    # name, not a did-you-mean of one of the command's own options (--data: '--again').
    run = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert run.code == 2, run.stderr
    assert run.stderr.splitlines()[-1] == said, run.stderr


def test_a_setting_before_the_command_says_it_goes_after(tmp_path: Path) -> None:
    run = crawler(
        "-s", "LEASE_SECONDS=5", "temp", "citynews", cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"}
    )
    assert run.code == 2, run.stderr
    assert (
        "(-s LEASE_SECONDS=5 is an option of the commands that crawl: give it after the command, as in"
        " `crawler temp SITE -s LEASE_SECONDS=5`)"
    ) in " ".join(run.stderr.split()), run.stderr


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            [],
            "crawler: error: the following arguments are required: COMMAND (one of: extract, demo, temp,"
            " worker, schedule, run, articles, status, sites, dead, rules, redis; `crawler --help` says what"
            " each does)",
        ),
        (
            ["articles"],
            "crawler articles: error: the following arguments are required: ACTION (one of: list, show,"
            " search, export, stats; `crawler articles --help` says what each does)",
        ),
        (
            ["--data-dir", "data/demo", "dead"],
            "crawler dead: error: the following arguments are required: ACTION (one of: list, requeue, drop;"
            " `crawler --data-dir data/demo dead --help` says what each does)",
        ),
    ],
)
def test_a_command_without_its_action_names_the_actions(
    tmp_path: Path, command: list[str], said: str
) -> None:
    run = crawler(*command, cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert run.stderr.splitlines()[-1] == said


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ["--rules-dir", "mine", "temp"],
            "crawler temp: error: the following arguments are required: SITE (the id of a site of the rules"
            " folder 'mine': citynews, techdaily; as in `crawler --rules-dir mine temp citynews`)",
        ),
        (
            ["rules", "try", "--rules-dir", "mine"],
            "crawler rules try: error: the following arguments are required: SITE, URL|FILE (the id of a"
            " site of the rules folder 'mine': citynews, techdaily; as in `crawler rules try citynews URL"
            " --rules-dir mine`)",
        ),
        (
            ["--rules-dir", "empty", "temp"],
            "crawler temp: error: the following arguments are required: SITE (the rules folder 'empty' holds"
            " no rule file: `crawler --rules-dir empty rules new SITE URL` drafts one from a site's page"
            " (docs/rules.md))",
        ),
        (
            ["temp"],
            "crawler temp: error: the following arguments are required: SITE (the rules folder 'rules' does"
            " not exist: give the folder of your site rules with --rules-dir DIR (or CRAWLER_RULES_DIR), one"
            " YAML file per site (docs/rules.md))",
        ),
        *(
            (
                ["--rules-dir", "mine", "sites", action],
                f"crawler sites {action}: error: the following arguments are required: SITE (the id of a site"
                f" of the rules folder 'mine': citynews, techdaily; as in `crawler --rules-dir mine sites"
                f" {action} citynews`)",
            )
            for action in ("pause", "resume", "forget")
        ),
    ],
)
def test_a_command_without_its_site_names_the_sites_of_the_rules_folder(
    tmp_path: Path, command: list[str], said: str
) -> None:
    # Other site errors (a misspelt one) list the rules folder's sites; argparse's said "SITE" alone.
    (tmp_path / "mine").mkdir()
    (tmp_path / "empty").mkdir()
    for site in ("techdaily", "citynews"):
        (tmp_path / "mine" / f"{site}.yaml").write_text("start_urls: []\n", encoding="utf-8")
    run = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert run.code == 2, run.stderr
    assert run.stderr.splitlines()[-1] == said, run.stderr


@pytest.mark.parametrize("command", [["temp"], ["sites", "forget"]])
def test_a_command_without_its_site_shows_a_site_of_this_machine_not_a_public_one(
    tmp_path: Path, command: list[str]
) -> None:
    """A new user's `crawler temp` (or `sites forget`) without a site named the first of the rules folder,
    the example `guardian`, The Guardian's public site: a first try crawled the Internet. A site whose rule
    crawls this machine (a demo's) is shown first; a public one alone is said to be one."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "guardian.yaml").write_text(
        "start_urls:\n  - https://www.theguardian.com/world\n", encoding="utf-8"
    )
    (rules / "zlocal.yaml").write_text("start_urls: ['http://127.0.0.1:8631/news/']\n", encoding="utf-8")
    both = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert both.code == 2, both.stderr
    shown = " ".join(command)
    assert both.stderr.splitlines()[-1].endswith(
        f"(the id of a site of the rules folder 'rules': guardian, zlocal; as in `crawler {shown} zlocal`)"
    ), both.stderr
    (rules / "zlocal.yaml").unlink()
    alone = crawler(*command, cwd=tmp_path, env={"CRAWLER_COMMAND": "crawler"})
    assert alone.stderr.splitlines()[-1].endswith(
        f"(the id of a site of the rules folder 'rules': guardian; as in `crawler {shown} guardian`: its rule"
        " crawls www.theguardian.com, a real site on the Internet; `crawler demo` crawls sites served on this"
        " machine)"
    ), alone.stderr


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_demo_port_out_of_range_is_a_usage_error_naming_the_range(tmp_path: Path, port: str) -> None:
    run = crawler("demo", f"--port={port}", cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert (
        f"crawler demo: error: argument --port: {port!r} is not a port: expected a whole number from 0 to"
        " 65535 (0 lets the system pick a free one)"
    ) in run.stderr
    assert "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == [], "the command created files before it failed"


def test_extract_of_an_empty_source_says_what_it_expects(tmp_path: Path) -> None:
    run = crawler("extract", "", cwd=tmp_path)
    assert run.code == 2
    assert "no page given: expected an http(s) URL, the path of an HTML file, or - for stdin" in run.stderr


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(40, "40s"), (84, "1m24s"), (1200, "20m"), (1260.4, "21m"), (3600, "1h00m"), (11_100, "3h05m")],
)
def test_status_shows_intervals_to_the_second_under_an_hour(seconds: float, shown: str) -> None:
    assert span(seconds) == shown


# --- a quick start ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "unused"),
    [
        (["--help"], ("scrapy", "twisted", "redis", "lxml", "rich", "yaml")),
        (["rules", "check", str(DEMO_RULES)], ("scrapy", "twisted", "redis")),
        (["temp", "--help"], ("scrapy", "twisted", "redis", "lxml")),
    ],
)
def test_the_command_line_loads_only_what_the_command_uses(argv: list[str], unused: tuple[str, ...]) -> None:
    probe = (
        "import sys\n"
        "from crawler.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('IMPORTED=' + ','.join(sorted(name for name in {unused!r} if name in sys.modules)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
    )
    assert run.returncode == 0, run.stderr
    imported = run.stdout.rpartition("IMPORTED=")[2].strip()
    assert imported == "", f"`crawler {' '.join(argv)}` imported {imported}"


def test_a_command_on_the_sqlite_store_does_not_load_pymongo(tmp_path: Path) -> None:
    # pymongo (slow to import) is loaded for a MongoDB store only, as crawler.store says.
    probe = (
        "import sys\n"
        "from crawler.cli.main import main\n"
        f"code = main(['--data-dir', {str(tmp_path)!r}, 'articles', 'stats'])\n"
        "print('IMPORTED=' + ','.join(sorted(name for name in ('pymongo', 'bson') if name in sys.modules)))\n"
        "sys.exit(code)\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("MONGO_URI", "REDIS_URL")}
    run = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    imported = run.stdout.rpartition("IMPORTED=")[2].strip()
    assert imported == "", f"`crawler articles stats` on a SQLite store imported {imported}"


def test_run_sh_runs_crawler_in_the_folder_it_is_run_from_and_suggests_itself(tmp_path: Path) -> None:
    # A checkout with its virtualenv (the one running these tests), and a user's folder elsewhere with a
    # rules/ of its own: `CHECKOUT/run.sh crawler ...` reads the user's folder, not the checkout's, and the
    # commands it suggests are run the same way.
    root = Path(__file__).resolve().parents[1]
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("run.sh", "pyproject.toml"):
        shutil.copy2(root / name, checkout / name)
    venv = checkout / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.prefix) / "bin")
    (venv / ".installed-dev").touch()
    (checkout / "rules").mkdir()
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", checkout / "rules" / "checkouts.yaml")
    mine = tmp_path / "mine"
    (mine / "rules").mkdir(parents=True)
    shutil.copy(DEMO_RULES / "demo-citynews.yaml", mine / "rules" / "mine.yaml")
    sentence = "A saved page holds this sentence of article text, long enough to be read as the article. "
    (mine / "page.html").write_text(f"<html><body><p>{sentence * 5}</p></body></html>", encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("CRAWLER_")}

    def run_sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(checkout / "run.sh"), "crawler", *args],
            cwd=mine,
            env=environment,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    check = run_sh("rules", "try", "nosuch", "page.html")
    assert check.returncode == 2, check.stderr
    assert "(sites: mine)" in check.stderr, check.stderr
    extract = run_sh("extract", "page.html")
    assert extract.returncode == 0, extract.stderr
    assert sentence.strip() in extract.stdout, extract.stdout
    misplaced = run_sh("articles", "stats", "--data-dir=data")
    assert f"as in `{checkout / 'run.sh'} crawler --data-dir DIR COMMAND ...`" in misplaced.stderr, (
        misplaced.stderr
    )


def test_temp_of_a_rule_file_with_several_errors_prefixes_each_error_line_as_rules_try_does(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "typo.yaml").write_text("name: Typo\nstart_urls: 12\nfeeds: 7\n", encoding="utf-8")
    page = tmp_path / "page.html"
    page.write_text("<html><body><h1>x</h1></body></html>", encoding="utf-8")
    temp = crawler("temp", "typo", cwd=tmp_path)
    tried = crawler("rules", "try", "typo", str(page), cwd=tmp_path)
    assert temp.code == tried.code == 1, temp.stderr + tried.stderr
    said = tried.stderr.splitlines()
    assert len(said) > 1 and all(line.startswith("crawler rules try: error: ") for line in said), said
    assert temp.stderr.splitlines() == [
        line.replace("crawler rules try: ", "crawler temp: ", 1) for line in said
    ], temp.stderr


def test_schedule_logs_in_the_format_of_the_crawls(tmp_path: Path) -> None:
    """`crawler -v schedule --once` logs as `worker` and `run` do, Scrapy's way:
    ``2026-11-28 00:57:53 [crawler.redisio.embedded] INFO: ...``, every line of it."""
    run = crawler("--rules-dir", str(DEMO_RULES), "-v", "schedule", "--once", cwd=tmp_path)
    assert run.code == 0, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert any("[crawler.redisio.embedded] INFO: " in line for line in lines), run.stderr
    scrapy_way = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+\] (DEBUG|INFO|WARNING|ERROR): ")
    assert all(scrapy_way.match(line) for line in lines), run.stderr


def test_a_sites_session_never_follows_a_redirect_to_another_host(
    tmp_path: Path, site_server: SiteServer
) -> None:
    """DESIGN.md, security: credentials never follow a redirect to another host. The site's session (a
    cookie and a header) goes with its request to 127.0.0.1, not with the redirect to localhost, another host
    of the site's domains (a redirect off them is not followed at all)."""
    rules = tmp_path / "rules"
    (rules / "sessions").mkdir(parents=True)
    (rules / "sessions" / "member.yaml").write_text(
        "cookies: {session: member-token}\nheaders: {X-Api-Key: key-secret}\n", encoding="utf-8"
    )
    (rules / "members.yaml").write_text(
        f"domains: [127.0.0.1, localhost]\n{ALLOW_KEY}\nstart_urls: [{site_server.url('/links?to=/a/1')!r}]\n"
        "index:\n  links: {xpath: //ul}\n"
        "article:\n  fields:\n    title: {xpath: //title}\n    body: {xpath: //ul}\n"
        "    cookie: {xpath: \"//li[@data-name='cookie']\"}\n"
        "    key: {xpath: \"//li[@data-name='x-api-key']\"}\n"
        "access:\n  sessions: [sessions/member.yaml]\n",
        encoding="utf-8",
    )
    away = f"http://localhost:{site_server.port}/echo-headers"
    direct = site_server.url("/echo-headers")
    redirected = site_server.url(f"/redirect?to={urllib.parse.quote(away, safe='')}")
    env = {"CRAWLER_ALLOW_PRIVATE_NETWORKS": "1"}
    run = crawler("temp", "members", "--url", direct, "--url", redirected, cwd=tmp_path, env=env)
    assert run.code == 0, run.stdout + run.stderr[-3000:]
    export = crawler("articles", "export", cwd=tmp_path, env=env)
    stored = {document["url"]: document for document in map(json.loads, export.stdout.splitlines())}
    assert set(stored) == {direct, away}, export.stdout + export.stderr
    assert stored[direct]["fields"] == {"cookie": "session=member-token", "key": "key-secret"}
    assert "member-token" not in json.dumps(stored[away]) and "key-secret" not in json.dumps(stored[away])


def test_the_demos_newest_articles_are_the_newest_published_then_the_newest_stored(tmp_path: Path) -> None:
    """The demo's "newest" of a site: by the published day, then by its time of day where it has one (in
    UTC: 09:00 at +08:00 is before 08:00 UTC), then by the time stored, newest first; a published value
    that is no date comes after every date."""
    stored = [  # (url, published, first seen): stored in this order
        ("a", "2026-11-20", "2026-11-28T09:00:01Z"),
        ("b", "2026-11-20T09:00:00+08:00", "2026-11-28T09:00:02Z"),
        ("c", "21/11/2026", "2026-11-28T09:00:03Z"),
        ("d", "2026-11-19", "2026-11-28T09:00:04Z"),
        ("e", "2026-11-20T08:00:00+00:00", "2026-11-28T09:00:05Z"),
        ("f", "2026-11-20", "2026-11-28T09:00:06Z"),
    ]
    store = store_config(Settings({"CRAWLER_DATA_DIR": str(tmp_path), "MONGO_URI": ""}))
    with store.open() as opened:
        for index, (name, published, first_seen) in enumerate(stored):
            words = " ".join(f"{name}{index}w{n}" for n in range(60))
            opened.upsert(
                {
                    "site": "citynews",
                    "url": f"http://city.example/{name}",
                    "fetched_at": first_seen,
                    "title": f"Story {name}",
                    "body": words,
                    "published": published,
                }
            )
    out = io.StringIO()
    _print_stored(Console(file=out, width=100), store, tmp_path, {"citynews": "index pages"}, sample=6)
    shown = [line.split()[-1] for line in out.getvalue().splitlines() if "Story " in line]
    assert shown == ["e", "b", "f", "a", "d", "c"], out.getvalue()


def test_ctrl_c_while_the_command_loads_is_said_as_interrupted_not_a_traceback(tmp_path: Path) -> None:
    """The ``crawler`` command imports its modules for about half a second before ``main`` runs: a Ctrl-C
    then printed a KeyboardInterrupt traceback and ended the command killed by SIGINT. The Ctrl-C is made
    here by an import hook that raises KeyboardInterrupt as ``crawler.cli.main`` is imported."""
    script = (
        "import sys\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'crawler.cli.main':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "from crawler.cli import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "status"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stderr) == (130, "crawler: interrupted\n")


CITY_RULE = """
domains: [city.example]
start_urls: ["http://city.example", "http://city.example/news/?b=2&a=1"]
index:
  links: {xpath: "//a/@href"}
"""


@pytest.mark.parametrize(
    "url",
    ["http://city.example/", "HTTP://City.Example", "http://city.example/news/?a=1&b=2#top"],
)
def test_a_start_url_given_with_url_is_refused_however_it_is_written(tmp_path: Path, url: str) -> None:
    """The start URL as the crawl requests it (its host's case, the path / of a host alone, the order of its
    query's arguments): the very page the site's crawl reads as an index page."""
    (tmp_path / "city.yaml").write_text(CITY_RULE, encoding="utf-8")
    rule = load_rule(tmp_path / "city.yaml")
    with pytest.raises(InputError, match="it is a start URL of site city"):
        article_url(rule, url)
    assert article_url(rule, "http://city.example/news/a.html") == "http://city.example/news/a.html"
