"""robots.txt and a rule's own User-Agent: a temp crawl (the real ``crawler`` command, the embedded Redis)
of a server on 127.0.0.1 that records the User-Agent of every request it gets."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SITES_DIR, SiteServer
from crawlsite import COMMAND_TIMEOUT, RULE, Site
from siteserver import SiteHandler
from siteserver import SiteServer as HttpServer

from crawler.settings import USER_AGENT

RULE_AGENT = "RuleBot/1.0 (+http://bot.example/about)"
ROBOTS = "User-agent: RuleBot\nDisallow: /private/\nCrawl-delay: 0.2\n\nUser-agent: *\nDisallow:\n"


class _Recording(SiteHandler):
    """The test site, with a robots.txt that has a group for RuleBot, recording each request's path and
    User-Agent in ``seen``."""

    def __init__(self, *args: object, seen: list[tuple[str, str]], **kwargs: object) -> None:
        self.seen = seen
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # the handler's own arguments

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        self.seen.append((path, self.headers.get("User-Agent", "")))
        if path == "/robots.txt":
            self._send(200, ROBOTS.encode(), "text/plain")
        else:
            super().do_GET()


@pytest.fixture
def recorded() -> Iterator[tuple[SiteServer, list[tuple[str, str]]]]:
    seen: list[tuple[str, str]] = []
    handler = functools.partial(_Recording, seen=seen, directory=str(SITES_DIR))
    with HttpServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield SiteServer("127.0.0.1", server.server_address[1], SITES_DIR), seen
        finally:
            server.shutdown()
            thread.join()


def _agent_site(server: SiteServer, root: Path) -> Site:
    """Site ``agent``: an index page linking to ``/a/open`` and ``/private/closed``, read as RuleBot."""
    site = Site(server, root, name="agent")
    start = server.url("/links?to=/a/open,/private/closed")
    site.rules.mkdir(parents=True)
    rule = RULE.format(start=start) + f'headers: {{User-Agent: "{RULE_AGENT}"}}\n'
    (site.rules / "agent.yaml").write_text(rule, encoding="utf-8")
    return site


def test_robots_txt_is_fetched_with_and_read_for_the_rules_own_user_agent(
    recorded: tuple[SiteServer, list[tuple[str, str]]], tmp_path: Path
) -> None:
    server, seen = recorded
    site = _agent_site(server, tmp_path)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert [agent for path, agent in seen if path == "/robots.txt"] == [RULE_AGENT], seen
    assert all(agent == RULE_AGENT for _, agent in seen), f"never {USER_AGENT!r}: {seen}"
    assert "/private/closed" not in {path for path, _ in seen}, "RuleBot's group disallows /private/"
    assert list(site.stored()) == ["/a/open"]
    (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "agent")
    assert status["politeness"]["crawl_delay"] == 0.2, "RuleBot's crawl-delay, not the one of '*' (none)"


def test_rules_try_fetches_robots_txt_as_the_rule_and_names_its_agent_when_refused(
    recorded: tuple[SiteServer, list[tuple[str, str]]], tmp_path: Path
) -> None:
    server, seen = recorded
    site = _agent_site(server, tmp_path)
    refused = site.crawler("rules", "try", "agent", server.url("/private/closed"))
    assert refused.returncode == 1, refused.stderr
    assert f"disallows {server.url('/private/closed')} for user agent {RULE_AGENT!r}" in refused.stderr
    assert seen == [("/robots.txt", RULE_AGENT)], "robots.txt as RuleBot; the page itself never"
    # What to do, with what rules try has (it has no --ignore-robots, which it once told users to pass).
    assert "--ignore-robots" not in refused.stderr, refused.stderr
    assert "`politeness: {obey_robots: false}` in " in refused.stderr, refused.stderr


def test_rules_try_names_robotstxt_user_agent_when_it_is_set(
    recorded: tuple[SiteServer, list[tuple[str, str]]], tmp_path: Path
) -> None:
    """A deployment whose crawler/settings.py sets ROBOTSTXT_USER_AGENT: robots.txt is read for that agent
    (Scrapy's precedence), fetched with the rule's own, and the refusal names the agent it was read for."""
    server, seen = recorded
    site = _agent_site(server, tmp_path)
    refused = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, crawler.settings; crawler.settings.ROBOTSTXT_USER_AGENT = 'RuleBot';"
            " from crawler.cli.main import main; sys.exit(main())",
            *("rules", "try", "agent", server.url("/private/closed")),
        ],
        env=site.env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert refused.returncode == 1, refused.stderr
    assert f"disallows {server.url('/private/closed')} for user agent 'RuleBot';" in refused.stderr
    assert seen == [("/robots.txt", RULE_AGENT)], "robots.txt fetched as the rule's agent; the page never"


def test_a_temp_crawl_whose_pages_robots_txt_disallows_says_so_on_its_last_line(
    recorded: tuple[SiteServer, list[tuple[str, str]]], tmp_path: Path
) -> None:
    server, _ = recorded
    site = _agent_site(server, tmp_path)
    done = site.temp("--url", server.url("/private/closed"))
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "skipped 1 (disallowed by robots.txt: 1), errors 0" in done.stdout, done.stdout
    last = done.stdout.splitlines()[-1]
    # A page given with --url is fetched even when seen already: the cause named is the one counted.
    assert last.startswith("nothing could be fetched: its page was skipped: disallowed by robots.txt (`"), (
        done.stdout
    )
    assert "seen already" not in done.stdout, done.stdout
    named = f"rules try agent {server.url('/private/closed')}` says whether robots.txt disallows it)"
    assert named in last, "the command names the page given with --url"


def test_every_page_asked_for_while_robots_txt_is_fetched_is_held_to_it(
    recorded: tuple[SiteServer, list[tuple[str, str]]], tmp_path: Path
) -> None:
    """The pages of a crawl that wait together for the site's robots.txt are each checked against it: the
    disallowed one among them is skipped, wherever it comes (before, only the first page to wait was
    checked; the others were fetched as if the site had no robots.txt)."""
    server, seen = recorded
    site = _agent_site(server, tmp_path)
    pages = ["/a/first", "/a/second", "/private/third", "/a/fourth", "/private/fifth"]
    done = site.temp(*(item for page in pages for item in ("--url", server.url(page))))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "fetched 3 pages, stored 3 articles, skipped 2 (disallowed by robots.txt: 2)" in done.stdout, (
        done.stdout
    )
    assert not [path for path, _ in seen if path.startswith("/private/")], seen


class _RobotsUnanswered(SiteHandler):
    """The test site, whose robots.txt request has its connection closed with no answer."""

    def do_GET(self) -> None:
        if urllib.parse.urlsplit(self.path).path == "/robots.txt":
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def robots_unanswered() -> Iterator[SiteServer]:
    handler = functools.partial(_RobotsUnanswered, directory=str(SITES_DIR))
    with HttpServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield SiteServer("127.0.0.1", server.server_address[1], SITES_DIR)
        finally:
            server.shutdown()
            thread.join()


def test_a_robots_txt_that_cannot_be_fetched_is_said_once_and_counted_while_its_pages_come(
    robots_unanswered: SiteServer, tmp_path: Path
) -> None:
    """A robots.txt whose download failed (its retries spent) while its host's pages come through is read
    as allowing everything, as Scrapy does; a temp crawl showed nothing of it (Scrapy's errors are at INFO
    there). It says it once for the host, in its own words, and counts it for the status."""
    server = robots_unanswered
    site = Site(server, tmp_path, name="norobots")
    site.rule("/a/first", "/a/second", "/a/third")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "fetched 4 pages, stored 3 articles" in done.stdout, done.stdout
    said = [line for line in done.stderr.splitlines() if "robots.txt" in line]
    assert len(said) == 1, done.stderr[-3000:]
    assert said[0].startswith(
        f"crawler temp: warning: robots.txt of {server.host}:{server.port} could not be"
    ), said
    assert said[0].endswith(
        " could not be fetched (connection closed before an answer: Connection was closed cleanly): its pages"
        " are crawled as if it allowed them"
    ), said
    assert "ERROR" not in done.stderr, done.stderr[-3000:]
    (noted,) = [one for one in site.status()["sites"] if one["site"] == "norobots"]
    assert noted["robots_unreachable_24h"] == 1, noted
    assert any(
        note.startswith("robots.txt could not be fetched 1 time in 24 h") for note in noted["notes"]
    ), noted["notes"]
