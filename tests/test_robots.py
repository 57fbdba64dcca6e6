"""robots.txt and a rule's own User-Agent: a temp crawl (the real ``crawler`` command, the embedded Redis)
of a server on 127.0.0.1 that records the User-Agent of every request it gets."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SITES_DIR, SiteServer
from crawlsite import COMMAND_TIMEOUT, RULE, Site, sites_spider
from scrapy import Request
from scrapy.http import Response, TextResponse
from scrapy.robotstxt import RobotParser
from scrapy.utils.test import get_crawler
from siteserver import SiteHandler
from siteserver import SiteServer as HttpServer
from twisted.internet.error import ConnectionRefusedError

from crawler.settings import USER_AGENT
from crawler.worker import robots
from crawler.worker.robots import AgentRobotsTxtMiddleware

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
    site.write_rule(RULE.format(start=start) + f'headers: {{User-Agent: "{RULE_AGENT}"}}\n', "agent")
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
    checked; the others were fetched as if the site had no robots.txt). The progress line counts them
    among the pages asked for (it said 3/3 pages of the 5 given, its total going down as each was
    skipped), as it counts a page that failed."""
    server, seen = recorded
    site = _agent_site(server, tmp_path)
    pages = ["/a/first", "/a/second", "/private/third", "/a/fourth", "/private/fifth"]
    done = site.temp(*(item for page in pages for item in ("--url", server.url(page))))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "fetched 3 pages, stored 3 articles, skipped 2 (disallowed by robots.txt: 2)" in done.stdout, (
        done.stdout
    )
    assert not [path for path, _ in seen if path.startswith("/private/")], seen
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("temp crawl of agent")]
    assert " 3/5 pages stored 3  skipped 2 " in line, "the 2 pages skipped are of the 5 asked for: " + line


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


class _RobotsHanging(SiteHandler):
    """The test site, whose robots.txt never answers: each request for it, counted in ``asked``, is held
    until ``released`` is set (the end of the test), then its connection closed."""

    def __init__(self, *args: object, asked: list[str], released: threading.Event, **kwargs: object) -> None:
        self.asked = asked
        self.released = released
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # the handler's own arguments

    def do_GET(self) -> None:
        if urllib.parse.urlsplit(self.path).path == "/robots.txt":
            self.asked.append(self.path)
            self.released.wait(COMMAND_TIMEOUT)
            self.close_connection = True
            return
        super().do_GET()


def test_a_robots_txt_that_hangs_holds_its_pages_for_its_own_timeout_and_one_retry(tmp_path: Path) -> None:
    """A robots.txt that never answers held its host's first page for the pages' DOWNLOAD_TIMEOUT 3 times
    (RETRY_TIMES 2: 90 s by default) before the crawl said a word of it. It is now asked ROBOTS_RETRY_TIMES
    + 1 times (2), each for ROBOTS_DOWNLOAD_TIMEOUT (10 s) or the pages' DOWNLOAD_TIMEOUT when shorter (3 s
    here), said once, naming that limit, and counted."""
    asked: list[str] = []
    released = threading.Event()
    handler = functools.partial(_RobotsHanging, asked=asked, released=released, directory=str(SITES_DIR))
    with HttpServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            site = Site(SiteServer("127.0.0.1", server.server_address[1], SITES_DIR), tmp_path, name="hang")
            site.rule("/a/first", "/a/second")
            done = site.temp("-s", "DOWNLOAD_TIMEOUT=3")
        finally:
            released.set()
            server.shutdown()
            thread.join()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "fetched 3 pages, stored 2 articles" in done.stdout, done.stdout
    assert len(asked) == 2, asked
    said = [line for line in done.stderr.splitlines() if "robots.txt" in line]
    assert said == [
        f"crawler temp: warning: robots.txt of 127.0.0.1:{server.server_address[1]} could not be fetched"
        " (timed out: no answer in 3 s, DOWNLOAD_TIMEOUT): its pages are crawled as if it allowed"
        " them"
    ], done.stderr[-3000:]
    (noted,) = [one for one in site.status()["sites"] if one["site"] == "hang"]
    assert noted["robots_unreachable_24h"] == 1, noted


def test_a_robots_txt_that_cannot_be_fetched_again_at_each_max_age_is_said_once_in_one_line(
    robots_unanswered: SiteServer, tmp_path: Path
) -> None:
    """A robots.txt that cannot be downloaded is tried again at each ROBOTS_MAX_AGE_SECONDS (24 h; 0.1 s
    here, past the site's delay of 0.3 s: each page's request tries it again): each try logged "Error
    downloading <GET .../robots.txt>" at ERROR (a line a host and day in a worker's log; at INFO in a temp
    crawl, 5 lines here). Now each try is at DEBUG; the host's warning says it once with the reason, and
    every try is counted (robots/unreachable/<site>)."""
    server = robots_unanswered
    site = Site(server, tmp_path, name="norobots")
    site.rule("/a/first", "/a/second", "/a/third", "/a/fourth")
    rule = site.rules / "norobots.yaml"
    rule.write_text(
        rule.read_text(encoding="utf-8") + "politeness: {delay: 0.3, concurrency: 1}\n", encoding="utf-8"
    )
    done = site.temp("-s", "ROBOTS_MAX_AGE_SECONDS=0.1", "-s", "LOG_LEVEL=INFO")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "robots.txt" in line]
    assert said == [
        f"crawler temp: warning: robots.txt of {server.host}:{server.port} could not be fetched (connection"
        " closed before an answer: Connection was closed cleanly): its pages are crawled as if it allowed"
        " them"
    ], said
    (noted,) = [one for one in site.status()["sites"] if one["site"] == "norobots"]
    assert noted["robots_unreachable_24h"] >= 1, noted


class _Changing(SiteHandler):
    """The test site, whose robots.txt allows everything until a page under /private/ has been served,
    then disallows /private/; each request's path recorded in ``seen``."""

    def __init__(self, *args: object, seen: list[str], **kwargs: object) -> None:
        self.seen = seen
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # the handler's own arguments

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        self.seen.append(path)
        if path == "/robots.txt":
            changed = any(seen.startswith("/private/") for seen in self.seen)
            body = "User-agent: *\nDisallow: /private/\n" if changed else "User-agent: *\nDisallow:\n"
            self._send(200, body.encode(), "text/plain")
        else:
            super().do_GET()


def test_a_robots_txt_changed_mid_crawl_is_obeyed_once_the_copy_is_older_than_its_max_age(
    tmp_path: Path,
) -> None:
    """A site disallows /private/ while it is crawled: the pages asked for past ROBOTS_MAX_AGE_SECONDS
    after the change are refused. Before, a worker kept the robots.txt it read first for its life, and
    fetched every /private/ page. The site's delay (0.3 s, one request at a time) is longer than the max
    age (0.1 s): each page's request finds the copy stale and waits for robots.txt read again."""
    seen: list[str] = []
    handler = functools.partial(_Changing, seen=seen, directory=str(SITES_DIR))
    private = ["/private/1", "/private/2", "/private/3"]
    with HttpServer(("127.0.0.1", 0), handler) as http:
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        try:
            server = SiteServer("127.0.0.1", http.server_address[1], SITES_DIR)
            site = Site(server, tmp_path, name="changing")
            site.rule("/a/1", *private, "/a/2")
            rule = site.rules / "changing.yaml"
            rule.write_text(
                rule.read_text(encoding="utf-8") + "politeness: {delay: 0.3, concurrency: 1}\n",
                encoding="utf-8",
            )
            done = site.temp("-s", "ROBOTS_MAX_AGE_SECONDS=0.1")
        finally:
            http.shutdown()
            thread.join()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    fetched = [path for path in seen if path.startswith("/private/")]
    assert len(fetched) == 1, f"the first /private/ page, then robots.txt disallows the others: {seen}"
    assert "skipped 2 (disallowed by robots.txt: 2)" in done.stdout, done.stdout
    assert seen.count("/robots.txt") > 2, seen
    (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "changing")
    assert status["robots_refreshed_24h"] == seen.count("/robots.txt") - 1, (status, seen)


class _Asking(SiteHandler):
    """The test site, whose robots.txt is ``robots[0]``, as the test sets it."""

    def __init__(self, *args: object, robots: list[str], **kwargs: object) -> None:
        self.robots = robots
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]  # the handler's own arguments

    def do_GET(self) -> None:
        if urllib.parse.urlsplit(self.path).path == "/robots.txt":
            self._send(200, self.robots[0].encode(), "text/plain")
        else:
            super().do_GET()


@pytest.mark.parametrize("asked", ["Crawl-delay: 0.1\n", ""], ids=["lowered below the rule's", "removed"])
def test_a_crawl_delay_robots_txt_lowers_or_removes_brings_the_site_back_to_its_rules_delay(
    tmp_path: Path, asked: str
) -> None:
    """A robots.txt crawl-delay longer than the rule's delay is kept in Redis, for every worker. Lowered
    to the rule's delay or below, or removed, it was kept all the same (only a longer one was written),
    by the workers started since too: the site stayed at the old crawl-delay. A worker that reads it so
    brings the site back to its rule's delay."""
    robots = ["User-agent: *\nDisallow:\nCrawl-delay: 1\n"]
    handler = functools.partial(_Asking, robots=robots, directory=str(SITES_DIR))
    with HttpServer(("127.0.0.1", 0), handler) as http:
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        try:
            server = SiteServer("127.0.0.1", http.server_address[1], SITES_DIR)
            site = Site(server, tmp_path, name="asking")
            site.rule("/a/1")
            rule = site.rules / "asking.yaml"
            rule.write_text(
                rule.read_text(encoding="utf-8") + "politeness: {delay: 0.2, concurrency: 1}\n",
                encoding="utf-8",
            )
            first = site.temp()
            assert first.returncode == 0, first.stdout + first.stderr[-3000:]
            (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "asking")
            assert status["politeness"]["crawl_delay"] == 1.0, status["politeness"]
            robots[0] = "User-agent: *\nDisallow:\n" + asked
            site.rule("/a/2")
            rule.write_text(
                rule.read_text(encoding="utf-8") + "politeness: {delay: 0.2, concurrency: 1}\n",
                encoding="utf-8",
            )
            again = site.temp()
        finally:
            http.shutdown()
            thread.join()
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "asking")
    assert status["politeness"]["crawl_delay"] == 0.0, status["politeness"]
    assert status["politeness"]["delay"] == 0.2, status["politeness"]


def test_a_rule_that_stops_obeying_robots_txt_drops_the_crawl_delay_it_asked_for(tmp_path: Path) -> None:
    """A robots.txt crawl-delay longer than the rule's delay is kept in Redis, for every worker, until a
    robots.txt read again lowers it. A rule turned to ``obey_robots: false`` reads no robots.txt again:
    the site kept the old crawl-delay, not the rule's delay. The rule's politeness, written by the job and
    the worker, drops it."""
    robots = ["User-agent: *\nDisallow:\nCrawl-delay: 1\n"]
    handler = functools.partial(_Asking, robots=robots, directory=str(SITES_DIR))
    with HttpServer(("127.0.0.1", 0), handler) as http:
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        try:
            server = SiteServer("127.0.0.1", http.server_address[1], SITES_DIR)
            site = Site(server, tmp_path, name="asking")
            rule = site.rules / "asking.yaml"
            for article, obey in (("/a/1", "true"), ("/a/2", "false")):
                site.rule(article)
                rule.write_text(
                    rule.read_text(encoding="utf-8")
                    + f"politeness: {{delay: 0.2, concurrency: 1, obey_robots: {obey}}}\n",
                    encoding="utf-8",
                )
                done = site.temp()
                assert done.returncode == 0, done.stdout + done.stderr[-3000:]
                (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "asking")
                if obey == "true":
                    assert status["politeness"]["crawl_delay"] == 1.0, status["politeness"]
        finally:
            http.shutdown()
            thread.join()
    assert status["politeness"]["crawl_delay"] == 0.0, status["politeness"]
    assert status["politeness"]["delay"] == 0.2, status["politeness"]


def test_a_hosts_robots_txt_without_a_crawl_delay_keeps_the_one_another_host_of_the_site_asks_for(
    tmp_path: Path,
) -> None:
    """A site's pages on two hosts (its index pages on one, its articles on another): each host's
    robots.txt is read, and each read wrote the site's crawl-delay, the last one read winning: the
    articles' host, asking for none, put the site back to its rule's delay, 0.2 s, though the index pages'
    host asks for 1 s. The site keeps the longest crawl-delay any of its hosts asks for."""
    slow = ["User-agent: *\nDisallow:\nCrawl-delay: 1\n"]
    plain = ["User-agent: *\nDisallow:\n"]
    with contextlib.ExitStack() as stack:
        handlers = [functools.partial(_Asking, robots=t, directory=str(SITES_DIR)) for t in (slow, plain)]
        servers = [stack.enter_context(HttpServer(("127.0.0.1", 0), handler)) for handler in handlers]
        for http in servers:
            thread = threading.Thread(target=http.serve_forever, daemon=True)
            thread.start()
            stack.callback(thread.join)
            stack.callback(http.shutdown)
        index, articles = (SiteServer("127.0.0.1", http.server_address[1], SITES_DIR) for http in servers)
        site = Site(index, tmp_path, name="two-hosts")
        site.rule(articles.url("/a/1"), articles.url("/a/2"))
        rule = site.rules / "two-hosts.yaml"
        rule.write_text(
            rule.read_text(encoding="utf-8") + "politeness: {delay: 0.2, concurrency: 1}\n", encoding="utf-8"
        )
        done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "stored 2 articles" in done.stdout, done.stdout
    (status,) = (entry for entry in site.status()["sites"] if entry["site"] == "two-hosts")
    assert status["politeness"]["crawl_delay"] == 1.0, status["politeness"]


class _Engine:
    """Scrapy's engine as the robots.txt middleware uses it: each robots.txt it asks for is answered by the
    test (``answer``, ``fail``), when the test says."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.pending: list[asyncio.Future[Response]] = []

    async def download_async(self, request: Request) -> Response:
        self.asked.append(request.url)
        answer: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self.pending.append(answer)
        return await answer

    async def answer(self, body: str, status: int = 200) -> None:
        url = self.asked[len(self.asked) - len(self.pending)]
        self.pending.pop(0).set_result(TextResponse(url, body=body.encode(), status=status))
        await _settle()

    async def fail(self) -> None:
        refused = ConnectionRefusedError("refused")  # type: ignore[no-untyped-call]  # Twisted's, untyped
        self.pending.pop(0).set_exception(refused)
        await _settle()


async def _settle() -> None:
    """Let every request that can go on do so."""
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The middleware's clock, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(robots, "monotonic", lambda: now[0])
    return now


def _middleware(**settings: object) -> tuple[AgentRobotsTxtMiddleware, _Engine]:
    values = {"ROBOTSTXT_OBEY": True, "ROBOTS_MAX_AGE_SECONDS": 100.0, "ROBOTS_CACHE_SIZE": 10, **settings}
    crawler = get_crawler(settings_dict=values)
    engine = _Engine()
    crawler.engine = engine  # type: ignore[assignment]  # the part of the engine the middleware uses
    return AgentRobotsTxtMiddleware.from_crawler(crawler), engine


async def _ask(middleware: AgentRobotsTxtMiddleware, url: str) -> asyncio.Task[RobotParser | None]:
    """The parse ``middleware`` gives for ``url`` (a page of site news), not done while it waits."""
    request = Request(url, meta={"site": "news", "slot": "news"})
    given = asyncio.ensure_future(middleware.robot_parser(request))
    await _settle()
    return given


def _allows(given: asyncio.Task[RobotParser | None], path: str) -> bool:
    parser = given.result()
    assert parser is not None
    return bool(parser.allowed(f"http://a.test{path}", "Bot"))


def test_a_stale_robots_txt_is_fetched_once_while_the_old_copy_serves_the_other_requests(
    clock: list[float],
) -> None:
    """Past ROBOTS_MAX_AGE_SECONDS the host's next request fetches robots.txt again and waits for it;
    the requests that come meanwhile are held to the old copy, without fetching it too. Before, it was
    never fetched again."""

    async def crawl() -> None:
        middleware, engine = _middleware()
        first = await _ask(middleware, "http://a.test/1")
        await engine.answer("User-agent: *\nDisallow: /old/\n")
        assert not _allows(first, "/old/x")
        clock[0] += 100.0
        waiting = await _ask(middleware, "http://a.test/2")
        meanwhile = [await _ask(middleware, f"http://a.test/{n}") for n in range(3, 6)]
        assert engine.asked == ["http://a.test/robots.txt"] * 2, "one refresh for the four requests"
        assert not waiting.done(), "the request that found it stale waits for the new copy"
        assert all(not _allows(given, "/old/x") for given in meanwhile), "the others keep to the old copy"
        await engine.answer("User-agent: *\nDisallow: /new/\n")
        assert _allows(waiting, "/old/x"), "the new copy"
        assert not _allows(waiting, "/new/x")
        after = await _ask(middleware, "http://a.test/6")
        assert not _allows(after, "/new/x")
        assert len(engine.asked) == 2, "fresh for another max age"
        assert middleware._stats.get_value("robots/refreshed/news") == 1

    asyncio.run(crawl())


@pytest.mark.parametrize("failure", ["refused", "503"])
def test_a_robots_txt_that_cannot_be_fetched_again_keeps_the_old_copy_for_another_max_age(
    clock: list[float], failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    """RFC 9309 2.4: a cached copy may be used while robots.txt is unreachable; a 5xx is read so too,
    rather than as an error page that would allow everything. The worker says so, and counts no
    robots.txt that could not be fetched (its pages were not crawled as if it allowed them)."""

    async def crawl() -> None:
        middleware, engine = _middleware()
        await _ask(middleware, "http://a.test/1")
        await engine.answer("User-agent: *\nDisallow: /old/\n")
        clock[0] += 100.0
        again = await _ask(middleware, "http://a.test/2")
        if failure == "refused":
            await engine.fail()
        else:
            await engine.answer("<html>Service Unavailable</html>", status=503)
        assert not _allows(again, "/old/x"), "the old copy"
        clock[0] += 99.0
        assert not _allows(await _ask(middleware, "http://a.test/3"), "/old/x")
        assert len(engine.asked) == 2, "not asked again before another max age"
        clock[0] += 1.0
        await _ask(middleware, "http://a.test/4")
        assert len(engine.asked) == 3, engine.asked
        assert middleware._stats.get_value("robots/refreshed/news") is None
        assert middleware._stats.get_value("robots/unreachable/news") is None

    asyncio.run(crawl())
    (said,) = [record.getMessage() for record in caplog.records if record.getMessage().startswith("robots")]
    assert said.startswith("robots.txt of a.test could not be fetched ("), said
    assert said.endswith("): the copy read before is kept"), said
    assert failure == "refused" or "(HTTP 503)" in said, said


def test_a_robots_txt_that_cannot_be_fetched_is_said_without_the_urls_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The warning that a host's robots.txt could not be fetched named the host as the URL's netloc, its
    user name and password with it (`robots.txt of user:secret@a.test could not be fetched`): the log's
    URLs are masked (crawler.worker.process), a netloc is no URL. Neither line of the failure shows it."""

    async def crawl() -> None:
        middleware, engine = _middleware()
        await _ask(middleware, "http://user:secret@a.test/1")
        await engine.fail()

    with caplog.at_level("DEBUG", logger="crawler.worker.robots"):
        asyncio.run(crawl())
    said = [record.getMessage() for record in caplog.records]
    assert "secret" not in caplog.text, caplog.text
    assert said[0].startswith("Error downloading <GET http://***@a.test/robots.txt>: "), said
    assert said[1].startswith("robots.txt of ***@a.test could not be fetched ("), said


def test_the_parses_a_worker_keeps_are_bounded_the_least_recently_used_dropped(clock: list[float]) -> None:
    """ROBOTS_CACHE_SIZE parses at most (a discover crawl meets thousands of hosts): the least recently
    used is dropped, and fetched again when next needed. Before, every host's parse was kept for the
    worker's life."""

    async def crawl() -> None:
        middleware, engine = _middleware(ROBOTS_CACHE_SIZE=2)
        for host in ("a", "b", "a", "c"):
            await _ask(middleware, f"http://{host}.test/page")
            if engine.pending:
                await engine.answer("User-agent: *\nDisallow: /no/\n")
        assert engine.asked == [f"http://{host}.test/robots.txt" for host in ("a", "b", "c")]
        assert len(middleware._parsers) == 2, list(middleware._parsers)
        await _ask(middleware, "http://a.test/page")
        assert len(engine.asked) == 3, "a, used after b, was kept"
        waiting = await _ask(middleware, "http://b.test/page")
        assert engine.asked[-1] == "http://b.test/robots.txt", "b, the least recently used, was dropped"
        await engine.answer("User-agent: *\nDisallow: /no/\n")
        assert not _allows(waiting, "/no/x")
        assert len(middleware._parsers) == 2, list(middleware._parsers)

    asyncio.run(crawl())


def test_a_robots_txt_read_for_a_rule_that_no_longer_obeys_it_writes_no_crawl_delay(tmp_path: Path) -> None:
    """A rule turned to ``obey_robots: false`` drops its site's crawl-delay (094cd8c), but a request queued
    before (its meta without dont_obey_robotstxt) still has robots.txt read for it: the worker kept the
    crawl-delay that robots.txt asked for again, 5.0 over the rule's delay, until the site's next job.
    robots.txt read for a rule that does not obey it now writes none."""
    import dataclasses

    from scrapy import signals
    from scrapy.robotstxt import ProtegoRobotParser

    from crawler.keys import Keys
    from crawler.redisio.connection import connect
    from crawler.redisio.embedded import EmbeddedRedis

    polite = Keys("crawler").polite("news")
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        spider = sites_spider(tmp_path, url)
        # The rule as the worker read it again (its file is not looked at again in this test).
        spider.rules["news"] = dataclasses.replace(spider.rules["news"], obey_robots=False)
        spider._next_look = float("inf")
        request = Request("http://127.0.0.1/a/1", meta={"site": "news", "slot": "news"})
        parser = ProtegoRobotParser.from_crawler(spider.crawler, b"User-agent: *\nCrawl-delay: 5\n")
        handled = spider.crawler.signals.send_catch_log(
            signal=signals.robots_parsed, robotparser=parser, request=request
        )
        assert [result for _, result in handled] == [None], "the spider's handler ran, and ended well"
        assert float(connect(url).hget(polite, "crawl_delay") or 0) == 0.0


def test_a_hosts_crawl_delay_is_kept_under_one_name_however_its_urls_name_it(tmp_path: Path) -> None:
    """The crawl-delay a host's robots.txt asks for was kept under the request URL's netloc: its default
    port written out (http://127.0.0.1:80/) or a user and password in the URL made another entry of the same
    robots.txt, which a read asking for none later did not drop (the site kept a crawl-delay of 5 s for
    ever), and the password went to Redis and to the log line. The host is now lower case, its port only
    when not the scheme's default, without the user and password."""
    from scrapy import signals
    from scrapy.robotstxt import ProtegoRobotParser

    from crawler.keys import Keys
    from crawler.redisio.connection import connect
    from crawler.redisio.embedded import EmbeddedRedis

    keys = Keys("crawler")
    with EmbeddedRedis(tmp_path / "data", watch_seconds=0) as redis_server:
        url = redis_server.ensure()
        client = connect(url)
        spider = sites_spider(tmp_path, url)
        spider._next_look = float("inf")

        def read(page: str, robots: bytes) -> None:
            request = Request(page, meta={"site": "news", "slot": "news"})
            parser = ProtegoRobotParser.from_crawler(spider.crawler, robots)
            spider.crawler.signals.send_catch_log(
                signal=signals.robots_parsed, robotparser=parser, request=request
            )

        read("http://127.0.0.1:80/a/1", b"User-agent: *\nCrawl-delay: 5\n")
        read("http://user:secret@127.0.0.1/a/2", b"User-agent: *\nCrawl-delay: 7\n")
        read("http://127.0.0.1:8080/a/3", b"User-agent: *\nCrawl-delay: 6\n")
        kept = {host: float(seconds) for host, seconds in client.hgetall(keys.crawl_delays("news")).items()}
        assert kept == {b"127.0.0.1": 7.0, b"127.0.0.1:8080": 6.0}
        read("http://127.0.0.1:8080/a/4", b"User-agent: *\n")
        read("http://127.0.0.1/a/5", b"User-agent: *\n")
        assert not client.exists(keys.crawl_delays("news")), "each read asking for none dropped its entry"
        assert float(client.hget(keys.polite("news"), "crawl_delay") or 0) == 0.0


def test_a_robots_txt_answering_a_5xx_when_first_fetched_is_said_and_counted_as_one_that_cannot_be_fetched(
    clock: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    """A robots.txt answering HTTP 500 (its retries spent) when first fetched had its error page parsed as
    the file, allowing everything with no word of it: no warning, robots_unreachable_24h 0 in the status,
    while a refused connection, or a 5xx at a refresh, was said and counted. RFC 9309 2.3.1.3: a 5xx is an
    unreachable robots.txt; it is read as one."""

    async def crawl() -> None:
        middleware, engine = _middleware()
        first = await _ask(middleware, "http://a.test/1")
        await engine.answer("User-agent: *\nDisallow: /down/\n", status=500)
        assert first.result() is None, "crawled as if it allowed everything, as when it cannot be fetched"
        assert middleware._stats.get_value("robots/unreachable/news") == 1
        clock[0] += 100.0
        again = await _ask(middleware, "http://a.test/2")
        await engine.answer("<html>Service Unavailable</html>", status=503)
        assert again.result() is None, "no copy was read before: none is kept"
        assert middleware._stats.get_value("robots/unreachable/news") == 2
        clock[0] += 100.0
        mended = await _ask(middleware, "http://a.test/3")
        await engine.answer("User-agent: *\nDisallow: /old/\n")
        assert not _allows(mended, "/old/x")

    asyncio.run(crawl())
    said = [record.getMessage() for record in caplog.records if record.getMessage().startswith("robots")]
    assert said == [
        "robots.txt of a.test could not be fetched (HTTP 500): its pages are crawled as if it allowed them"
    ], said
