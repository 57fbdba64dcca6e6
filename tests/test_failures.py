"""Nothing lost, nothing hung: real crawls (the `crawler` commands, subprocesses) against the local test
server, through the real embedded Redis, when requests are retried and redirected, fail for good; and what
each leaves behind (dead letters, counters), read back with the commands a person would use. Broken rule
files and queue entries, slow regular expressions, DNS rebinding, lying charsets and pages cut at the size
limit are tests/test_input_failures.py; the store failing is tests/test_store_failures.py; Redis killed,
frozen or full and crawls stopped by a signal are tests/test_redis_failures.py."""

from __future__ import annotations

import http.server
import json
import logging
import re
import shlex
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import SiteServer
from crawlsite import (
    COMMAND_TIMEOUT,
    FAST_ARGS,
    RULE,
    WAIT_LIMIT,
    Site,
    sites_spider,
    unique,
    wait_until,
)
from siteserver import generated_article

from crawler.cli.crawl import Helped
from crawler.keys import Keys
from crawler.redisio.connection import connect, decoded
from crawler.redisio.embedded import EmbeddedRedis


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path)


# --- retries, redirects, failures for good ------------------------------------------------------------


def test_retried_redirected_and_failed_requests_each_end_once_and_the_temp_crawl_exits(site: Site) -> None:
    recovers, fails = unique("recovers"), unique("fails")
    site.rule(
        "/a/plain",
        "/r/moved",
        f"/flaky/{recovers}?fail=1",
        f"/flaky/{fails}?fail=99",
        "/status/404",
        "http://127.0.0.1:9/a/nobody-listens",
    )
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 3 articles" in done.stdout and "errors 3" in done.stdout, done.stdout
    assert "crawler dead list --job" in done.stdout
    assert set(site.stored()) == {"/a/plain", "/a/moved", f"/flaky/{recovers}?fail=1"}
    reasons = {
        str(letter["url"]).removeprefix(site.server.origin): letter["reason"] for letter in site.dead()
    }
    assert reasons[f"/flaky/{fails}?fail=99"] == "HTTP 503 Service Unavailable (after 2 retries)"
    assert reasons["/status/404"] == "HTTP 404 Not Found"
    refused = reasons["http://127.0.0.1:9/a/nobody-listens"]
    assert refused.startswith("DownloadConnectionRefusedError"), refused
    assert refused.endswith(
        "; nothing listens there; check the port of the URL, or start the site's server"
    ), refused
    report = site.status()
    assert report["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 3}, (
        "no lease left"
    )
    (faults,) = report["sites"]
    assert faults["backoffs_24h"] == 0, "a page answering 503 without Retry-After never held the site back"

    # A misspelt site or job is an error, not a selection of nothing.
    misspelt = site.crawler("dead", "requeue", "--site", f"{site.name}x")
    assert misspelt.returncode == 2, misspelt.stdout
    assert f"no rule for site '{site.name}x'" in misspelt.stderr, misspelt.stderr
    assert f"did you mean '{site.name}'?" in misspelt.stderr, misspelt.stderr
    unknown_job = site.crawler("dead", "list", "--job", "000000000000")
    assert unknown_job.returncode == 2 and "no job '000000000000'" in unknown_job.stderr, unknown_job.stderr
    assert site.status()["queue"]["dead_letters"] == 3
    requeued = site.crawler("dead", "requeue", "--site", site.name)
    assert requeued.stdout.splitlines()[0] == "requeued 3 dead letters"
    assert site.status()["queue"] == {"queued": 3, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 0}
    # A site with a rule and no dead letter left selects nothing, rightly.
    assert site.crawler("dead", "list", "--site", site.name).returncode == 0


@pytest.mark.parametrize(("query", "header"), [("", None), ("&retry_after=0", "0")], ids=["none", "zero"])
def test_a_page_answering_503_without_a_wait_asked_is_retried_then_a_dead_letter(
    site: Site, query: str, header: str | None
) -> None:
    path = f"/flaky/{unique('busy')}?fail=99{query}"
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(site.server.url(f"/flaky/{unique('probe')}?fail=1{query}"), timeout=WAIT_LIMIT)
    answer.value.close()
    assert answer.value.code == 503 and answer.value.headers.get("Retry-After") == header
    site.rule("/a/calm", path)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {"/a/calm"}
    origin = site.server.origin
    reasons = {str(letter["url"]).removeprefix(origin): letter["reason"] for letter in site.dead()}
    # A Retry-After of 0 asks for no wait: a server error of the page, as without one.
    assert reasons == {path: "HTTP 503 Service Unavailable (after 2 retries)"}
    (busy,) = site.status()["sites"]
    assert busy["backoffs_24h"] == 0, "a 503 that asks for no wait never holds the site back"


@pytest.mark.parametrize("asked", ["9" * 400, "Fri, 31 Dec 9999 23:59:59 GMT"], ids=["number", "date"])
def test_a_wait_asked_past_the_longest_backoff_is_said_as_kept_to_it(site: Site, asked: str) -> None:
    """A Retry-After too large for a float (400 nines) or a date in the year 9999 was said 'Retry-After inf s'
    and 'Retry-After 2.51606e+11 s' in the warning and the site's backoff reason, while every worker waited
    BACKOFF_MAX_SECONDS."""
    path = f"/flaky/{unique('far')}?fail=1&retry_after={quote(asked)}"
    site.rule(path)
    done = site.temp("-s", "BACKOFF_MAX_SECONDS=1")
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {path}
    said = "with HTTP 503, Retry-After past BACKOFF_MAX_SECONDS (1 s): every worker waits 1 s"
    assert f"answered {site.server.url(path)} {said}" in done.stderr, done.stderr[-4000:]


def test_a_wait_asked_as_a_date_is_said_in_whole_seconds_as_the_wait_is(site: Site) -> None:
    """A Retry-After date (whole seconds) a few seconds ahead was said to the ten-thousandth of a second it
    was read at, beside the whole seconds waited: 'with HTTP 503, Retry-After 2.5156 s: every worker waits 3
    s'; the site's backoff reason in the status kept the fraction too."""
    path = f"/flaky/{unique('dated')}?fail=1&retry_in=3"
    site.rule(path)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert set(site.stored()) == {path}
    said = re.search(r"with HTTP 503, Retry-After (\S+) s: every worker waits (\S+) s", done.stderr)
    assert said is not None, done.stderr[-4000:]
    assert said[1] == said[2] and said[1].isdigit(), said[0]


def test_a_page_retried_once_says_after_1_retry(site: Site) -> None:
    path = f"/flaky/{unique('once')}?fail=99"
    site.rule("/a/calm", path)
    done = site.temp("-s", "RETRY_TIMES=1")
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert letter["reason"] == "HTTP 503 Service Unavailable (after 1 retry)", letter


def test_a_page_that_timed_out_says_the_limit_and_how_to_raise_it(site: Site) -> None:
    # A limit of 4 s: the index page, read with it too, never takes that long on a loaded machine.
    site.rule("/slow?seconds=12")
    done = site.temp("-s", "DOWNLOAD_TIMEOUT=4", "-s", "RETRY_TIMES=0")
    assert "errors 1 (timeout: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"].startswith("timed out: "), letter
    assert letter["reason"].endswith(
        "; a site that is only slow needs a longer DOWNLOAD_TIMEOUT than 4 s: `-s DOWNLOAD_TIMEOUT=8` on the"
        " crawl's command (worker, run or temp), then requeue it"
    ), letter


def test_an_article_whose_link_redirected_is_shown_by_the_url_asked_for(site: Site) -> None:
    """An article link that redirects (``/r/ID`` to ``/a/ID``) is stored under the URL it led to; ``articles
    show`` of the URL the listing gave finds it there, and says so."""
    moved = unique("moved")
    site.rule(f"/r/{moved}")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    asked, stored = site.server.url(f"/r/{moved}"), site.server.url(f"/a/{moved}")
    assert set(site.stored()) == {f"/a/{moved}"}
    shown = site.crawler("articles", "show", asked)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.splitlines()[0] == (
        f"{asked} redirected to {stored} when it was fetched: this article is stored under {stored}"
    ), shown.stdout
    assert re.search(rf"^url: +{re.escape(stored)}$", shown.stdout, re.MULTILINE), shown.stdout
    assert f"\nredirected from:\n  {asked}\n" in shown.stdout, shown.stdout
    as_json = site.crawler("articles", "show", asked, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert list(document)[:2] == ["redirect", "id"]
    assert document["redirect"] == {"url": asked, "stored_as": stored}
    assert (document["url"], document["redirected_from"]) == (stored, [asked])
    direct = json.loads(site.crawler("articles", "show", stored, "--format", "json").stdout)
    assert "redirect" not in direct and direct["url"] == stored


def test_an_article_link_whose_page_refreshes_to_the_article_stores_it_under_the_url_it_led_to(
    site: Site,
) -> None:
    """A page whose ``<meta http-equiv="refresh">`` sends to an article is followed as a 3xx redirect is:
    the article is stored under the URL it led to, the link recorded in its ``redirected_from``."""
    moved = unique("refreshed")
    asked = f"/refresh?to=/a/{moved}"
    site.rule(asked)
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "stored 1 article, skipped 0, errors 0" in done.stdout, done.stdout
    stored = site.stored()
    assert set(stored) == {f"/a/{moved}"}
    assert stored[f"/a/{moved}"]["redirected_from"] == [site.server.url(asked)]
    assert site.dead() == []


@pytest.mark.parametrize("target", ["mailto:desk@news.test", "javascript:go()", "http://[x/y"])
def test_a_page_whose_meta_refresh_leads_to_no_url_a_request_can_be_made_of_is_read_as_it_is(
    site: Site, target: str
) -> None:
    """A meta refresh to a mailto: or javascript: target (no '//': Scrapy's request of it fails, 'Missing
    scheme') or to http://[x (its URL cannot be read) was dead-lettered as 'ValueError: Missing scheme in
    request url: mailto:...', kind ValueError; a browser stays on such a page, as the crawl stays on one
    whose refresh leads to ftp: or data: (Scrapy's own rule): it is read as it is."""
    asked = f"/refresh?to={quote(target, safe='')}"
    site.rule(asked, "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert site.dead() == []
    assert set(site.stored()) == {asked, "/a/small"}


def test_every_link_that_redirects_to_an_article_seen_is_recorded_in_its_redirected_from(site: Site) -> None:
    """A second link that redirects to an article seen already is skipped, not fetched again, yet the
    article records it among its ``redirected_from``, as the first: one in the same listing as the
    article's own link (queued beside it, the article maybe not stored yet), and one found by a later
    crawl, the article stored long before; ``articles show`` of either finds the article."""
    name = unique("twice")
    site.rule(f"/a/{name}", f"/r/{name}")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-4000:]
    assert "stored 1 article, skipped 1" in first.stdout, first.stdout
    stored = site.server.url(f"/a/{name}")
    short = site.server.url(f"/r/{name}")
    assert site.stored()[f"/a/{name}"]["redirected_from"] == [short]

    later = f"/redirect-chain/1?to=/r/{name}"
    site.rule(f"/a/{name}", f"/r/{name}", later)
    second = site.temp()
    assert second.returncode == 0, second.stdout + second.stderr[-4000:]
    assert "stored 0 articles, skipped 3" in second.stdout, "the two links seen, the third's redirect"
    (document,) = site.stored().values()
    asked = site.server.url(later)
    assert document["redirected_from"][:2] == [short, asked], document["redirected_from"]
    assert f"/r/{name}" not in "".join(document["redirected_from"][2:]), "the short link once"
    for link in (short, asked):
        shown = site.crawler("articles", "show", link)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        assert shown.stdout.splitlines()[0].startswith(f"{link} redirected to {stored} when it was fetched")


class _Elsewhere(http.server.BaseHTTPRequestHandler):
    """Another site: ``/back?to=URL`` redirects to URL, any other path is an article; each path asked for
    is kept in the server's ``asked``."""

    server: _ElsewhereServer

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/back":
            self.send_response(302)
            self.send_header("Location", urllib.parse.parse_qs(parts.query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = generated_article(parts.path.rsplit("/", 1)[-1]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ElsewhereServer(http.server.ThreadingHTTPServer):
    asked: list[str]


@pytest.fixture
def elsewhere() -> Iterator[_ElsewhereServer]:
    """Another site on this machine, reached as localhost: a host the test rule's domains (127.0.0.1) do
    not hold."""
    server = _ElsewhereServer(("127.0.0.1", 0), _Elsewhere)
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _progress_line(done: subprocess.CompletedProcess[str]) -> str:
    """The last progress line of a temp crawl (stderr, not a terminal: drawn once, as it ends)."""
    return [line for line in done.stderr.splitlines() if line.startswith("temp crawl of ")][-1]


def test_a_redirect_off_the_rules_domains_is_skipped_naming_its_host_and_one_on_them_is_stored(
    site: Site, elsewhere: _ElsewhereServer
) -> None:
    """A site's articles are the site's: an article link that redirects (302, or a meta refresh) to a host
    off the rule's domains was followed, and the other site's page stored under the site. It is now
    skipped unfetched, counted (``crawl/redirect_off_site/<site>``, the summary's "redirected off the
    site"), the warning naming the target and its host; a redirect on the site is stored as before, and a
    chain that leaves the site and comes back is skipped at the hop that leaves it."""
    away = f"http://localhost:{elsewhere.server_address[1]}"
    on, back = unique("on"), unique("back")
    home = site.server.url(f"/a/{back}")
    off, chain = f"{away}/a/off", f"{away}/back?to={quote(home, safe='')}"
    refreshed = f"{away}/a/refreshed"
    site.rule(
        f"/r/{on}",
        f"/redirect?to={quote(off, safe='')}",
        f"/redirect?to={quote(chain, safe='')}",
        f"/refresh?to={quote(refreshed, safe='')}",
    )
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert done.stdout.splitlines()[0] == (
        "fetched 2 pages, stored 1 article, skipped 3 (redirected off the site: 3), errors 0"
    ), done.stdout + done.stderr[-4000:]
    assert list(site.stored()) == [f"/a/{on}"]
    assert elsewhere.asked == []
    assert " 2/5 pages " in _progress_line(done), "the 3 pages skipped are of the 5 asked for"
    why = (
        "which a crawl does not follow: localhost is not on the domains of site faults (127.0.0.1, or"
        " their subdomains): a site's articles are stored from its own domains only; if localhost is the"
        " site's, add localhost to `domains` in"
    )
    for asked, target in (
        (f"/redirect?to={quote(off, safe='')}", off),
        (f"/redirect?to={quote(chain, safe='')}", chain),
        (f"/refresh?to={quote(refreshed, safe='')}", refreshed),
    ):
        assert f"Skipped {site.server.url(asked)}: it redirects to {target}, {why}" in done.stderr, (
            done.stderr[-4000:]
        )
    hours = site.status()["sites"]
    assert [entry["redirect_off_site_24h"] for entry in hours] == [3], hours


def test_a_redirect_to_another_scheme_is_a_dead_letter_naming_its_target(site: Site) -> None:
    """A crawl said "HTTP 302 Found" of a redirect to ftp: (left unfollowed by Scrapy), and "ValueError:
    Missing scheme in request url" of one to mailto: (Scrapy's redirect failed on it)."""
    site.rule("/redirect?to=ftp://127.0.0.1/x", "/redirect?to=mailto:desk@example.com", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 2 (redirect to another scheme: 2)" in done.stdout, done.stdout
    reasons = sorted(letter["reason"] for letter in site.dead())
    assert reasons == [
        f"HTTP 302 Found: a redirect to {target}, not followed: a crawl fetches http and https only"
        for target in ("ftp://127.0.0.1/x", "mailto:desk@example.com")
    ], reasons
    assert list(site.stored()) == ["/a/small"]


def test_a_link_with_credentials_is_no_link_to_follow_and_its_password_is_never_shown(site: Site) -> None:
    """A link with a user and password (``http://user:secret@host/...``) was queued and failed, a dead
    letter of kind ValueError ('invalid hostname: user:secret@127.0.0.1'), its password in the warning
    and in `crawler dead list`: no request can be made of it, as of a link to port 0."""
    site.rule(site.server.url("/a/cred").replace("http://", "http://user:secret@"), "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 2 pages, stored 1 article, skipped 0, errors 0\n"), done.stdout
    assert "secret" not in done.stderr, done.stderr[-4000:]
    assert site.dead() == []
    assert list(site.stored()) == ["/a/small"]


def test_a_link_longer_than_urllength_limit_is_not_followed_by_a_rule_or_a_discover_crawl(site: Site) -> None:
    """Scrapy's URLLENGTH_LIMIT (2083 characters) holds for the requests a spider yields: the crawl queues
    its links itself, so a link of any length was queued, kept in Redis and fetched (a 200 KB query was
    fetched, and dead-lettered as HTTP 414, its whole URL in the warning)."""
    long_link = "/a/" + "x" * 2100
    site.rule(long_link, "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 2 pages, stored 1 article, skipped 0, errors 0\n"), done.stdout
    assert list(site.stored()) == ["/a/small"]
    seed = site.server.url("/links?to=" + ",".join([long_link.replace("x", "y"), "/a/harbour"]))
    (site.rules / "web.yaml").write_text(
        f"discover:\n  topic: {{keywords: [harbour]}}\n  seeds: ['{seed}']\n  domains: [127.0.0.1]\n"
        "  max_depth: 1\nallow_private_addresses: true\n",
        encoding="utf-8",
    )
    done = site.crawler("temp", "web", *FAST_ARGS)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 2 pages, "), done.stdout


def test_a_redirect_too_long_or_with_credentials_is_a_dead_letter_naming_it_without_the_password(
    site: Site,
) -> None:
    """URLLENGTH_LIMIT held for links, not for redirect targets: a redirect to a 2,103-character URL was
    followed (its target fetched). A redirect to http://user:secret@host/... was followed and failed as
    'ValueError: invalid hostname: user:secret@127.0.0.1', its password in the warning, in Scrapy's
    robots.txt error line, in the dead letter and in `crawler dead list`."""
    site.rule("/redirect-long?n=2100", "/redirect-credentials", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 2 (redirect too long: 1, redirect with credentials: 1)" in done.stdout, done.stdout
    assert "secret" not in done.stdout + done.stderr, done.stderr[-4000:]
    letters = {letter["url"].rsplit("/", 1)[1]: letter for letter in site.dead()}
    target = site.server.url("/a/" + "x" * 2100)
    assert letters["redirect-long?n=2100"]["reason"] == (
        f"HTTP 302 Found: a redirect to {target[:100]}... ({len(target):,} characters), not followed: longer"
        " than URLLENGTH_LIMIT (2,083 characters)"
    )
    assert letters["redirect-credentials"]["reason"] == (
        f"HTTP 302 Found: a redirect to {site.server.url('/a/cred').replace('http://', 'http://***@')}, not"
        " followed: a crawl sends no user name or password in a URL"
    )
    listed = site.crawler("dead", "list")
    assert listed.returncode == 0 and "secret" not in listed.stdout + listed.stderr, listed.stdout
    assert list(site.stored()) == ["/a/small"]


def test_an_unfollowed_3xx_answer_whose_location_is_no_url_is_a_dead_letter_of_its_status(site: Site) -> None:
    """A 300 answer (which no redirect follows) with a Location that cannot be read as a URL ('http://[x',
    an unclosed IPv6 address) failed as 'ValueError: Invalid IPv6 URL' in the check for a redirect to another
    scheme, not as its HTTP status."""
    site.rule("/redirect?status=300&to=http%3A%2F%2F%5Bx%2Fy", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (HTTP 300: 1)" in done.stdout, done.stdout
    assert [letter["reason"] for letter in site.dead()] == ["HTTP 300 Multiple Choices"]
    assert list(site.stored()) == ["/a/small"]


def test_a_redirect_whose_location_no_request_can_be_made_of_is_a_dead_letter_of_its_status_naming_it(
    site: Site,
) -> None:
    """A 302 whose Location is no URL a request can be made of (an unclosed IPv6 address, a port out of range
    or 0, a space in its host, no host name) failed as Scrapy's redirect made it: 'ValueError: Invalid IPv6
    URL' and 'Port out of range 0-65535', counted as 'ValueError', or a request to port 0, retried and
    refused; one to http://:8080/ (no host name) still did: 'ValueError: invalid hostname: ', its robots.txt
    logged as an ERROR; a link such as these is never queued."""
    targets = [
        "http://[x/y",
        "http://127.0.0.1:99999/a/far",
        "http://127.0.0.1:0/a/far",
        "http://ex ample.test/",
        "http://:8080/a/far",
    ]
    site.rule(*(f"/redirect?to={quote(target, safe='')}" for target in targets), "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 5 (redirect to no URL: 5)" in done.stdout, done.stdout
    problems = [
        "Invalid IPv6 URL",
        "Port out of range 0-65535",
        "port 0",
        "a space in its host",
        "no host name",
    ]
    assert sorted(letter["reason"] for letter in site.dead()) == sorted(
        f"HTTP 302 Found: a redirect to {target}, not followed: no request can be made of it ({problem})"
        for target, problem in zip(targets, problems, strict=True)
    )
    assert list(site.stored()) == ["/a/small"]


def test_a_redirect_to_a_page_seen_is_skipped_and_a_redirect_loop_is_a_dead_letter_naming_the_loop(
    site: Site,
) -> None:
    """Every request leased ends counted: a redirect to a URL queued already is skipped (seen already); a
    redirect back to a URL of its own chain (cut by the seen filter) and one past ``REDIRECT_MAX_TIMES``
    are errors whose dead letters name the URL and the loop."""
    site.rule("/a/landing", "/r/landing", "/redirect-loop", "/redirect-pair", "/redirect-chain/7?to=/a/far")
    done = site.temp("-s", "LOG_LEVEL=INFO")
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert done.stdout.splitlines()[0] == (
        "fetched 2 pages, stored 1 article, skipped 1 (links seen already: 1), errors 3"
        " (redirect loop: 2, too many redirects: 1)"
    ), done.stdout + done.stderr[-8000:]
    skipped = (
        f"Skipped {site.server.url('/r/landing')}: it redirects to {site.server.url('/a/landing')}, seen"
    )
    assert skipped in done.stderr, done.stderr[-4000:]
    assert " 2/6 pages " in _progress_line(done), "the page skipped is one of the 6 asked for"
    reasons = {
        str(letter["url"]).removeprefix(site.server.origin): letter["reason"] for letter in site.dead()
    }
    loop, pair = site.server.url("/redirect-loop"), site.server.url("/redirect-pair")
    chain = site.server.url("/redirect-chain/7?to=/a/far")

    def chain_at(n: int) -> str:
        return site.server.url(f"/redirect-chain/{n}?to=%2Fa%2Ffar")

    assert reasons == {
        "/redirect-loop": f"a redirect loop: {loop} redirects to {loop}",
        "/redirect-pair?x=1": f"a redirect loop: {pair} redirects to {pair}?x=1, which redirects to {pair}",
        "/redirect-chain/2?to=%2Fa%2Ffar": f"too many redirects: more than 5 (REDIRECT_MAX_TIMES): {chain}"
        + "".join(f"{', which' if n < 6 else ''} redirects to {chain_at(n)}" for n in (6, 5, 4, 3, 2)),
    }
    assert site.status()["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 3}
    # The loop the user met: a temp crawl of one URL (never seen before) that redirects in a loop.
    fresh = Site(site.server, site.root / "fresh")
    fresh.rule("/a/landing")
    again = fresh.temp("--url", pair)
    assert again.returncode == 1, again.stdout + again.stderr[-4000:]
    assert again.stdout.splitlines()[0].endswith("skipped 0, errors 1 (redirect loop: 1)"), again.stdout
    assert (
        "nothing could be fetched: see the reasons above (`crawler dead list` for the errors)" in again.stdout
    )


_FRAME_RE = re.compile(r"(\d+)/(\d+) pages? +stored (\d+) +skipped (\d+) +errors (\d+)")


def _last_progress(stderr: str) -> tuple[int, ...]:
    """The counts of the last frame of a temp crawl's progress line, as on a terminal: pages done, pages
    in all, stored, skipped, errors."""
    frames = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", frame) for frame in re.split(r"[\r\n]", stderr)]
    counts = [tuple(map(int, found.groups())) for frame in frames if (found := _FRAME_RE.search(frame))]
    assert counts, stderr[-4000:]
    return counts[-1]


@pytest.mark.parametrize(
    ("links", "settings", "last", "summary"),
    [
        # A site that is down: its index page fails; the bar ended at "0/0 pages ... errors 1".
        (
            None,
            (),
            (0, 1, 0, 0, 1),
            "fetched 0 pages, stored 0 articles, skipped 0, errors 1 (connection: 1)",
        ),
        # An article whose page was fetched, then dead-lettered (its body too long), is tried once: counted
        # fetched and an error, it is one page of the total.
        (
            ("/a/plain", "http://127.0.0.1:9/a/nobody-listens"),
            ("-s", "TEXT_MAX_BODY_CHARS=10"),
            (2, 3, 0, 0, 2),
            "fetched 2 pages, stored 0 articles, skipped 0, errors 2 (body too long: 1, connection: 1)",
        ),
    ],
)
def test_the_progress_lines_total_counts_the_requests_that_failed(
    site: Site, links: tuple[str, ...] | None, settings: tuple[str, ...], last: tuple[int, ...], summary: str
) -> None:
    if links is None:
        site.write_rule(RULE.format(start="http://127.0.0.1:9/news/"))
    else:
        site.rule(*links)
    done = site.crawler(
        "temp", site.name, *FAST_ARGS, *settings, COLUMNS="200", TTY_COMPATIBLE="1", TTY_INTERACTIVE="1"
    )
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert _last_progress(done.stderr) == last
    assert done.stdout.splitlines()[0] == summary, done.stdout


def test_a_redirect_loop_through_a_cookie_set_says_the_cookie_was_not_kept_and_what_sends_one(
    site: Site,
) -> None:
    """A site's cookie wall (a redirect that sets a cookie, back to the page that wants it) was a dead letter
    naming the loop only, which reads as a broken site: the crawl keeps no cookie (COOKIES_ENABLED is off),
    and the reason says so and that a session file of the rule sends one."""
    site.rule("/cookie-wall/wall", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    wall, setter = site.server.url("/cookie-wall/wall"), site.server.url("/set-cookie/wall")
    assert [letter["reason"] for letter in site.dead()] == [
        f"a redirect loop: {wall} redirects to {setter}, which redirects to {wall}; a redirect on the way"
        " set a cookie (Set-Cookie), which a crawl does not keep: a site that wants a cookie sent gets it"
        " from a session file of the rule (access.sessions)"
    ]
    assert list(site.stored()) == ["/a/small"]


def test_a_url_given_to_temp_that_redirects_to_a_stored_article_is_fetched_and_written_over_it(
    site: Site,
) -> None:
    """``crawler temp SITE --url U`` fetches U whatever the seen filter says, and writes a stored article
    over its document; a U that redirects to a stored article (an index page's link that moved) is the
    same page asked for by the user: fetched and written over it, not skipped as "seen already" (which
    left exit code 1 and "nothing could be fetched ... disallowed by robots.txt")."""
    site.rule("/a/landing")
    first = site.temp()
    assert first.returncode == 0, first.stdout + first.stderr[-4000:]
    again = site.temp("--url", site.server.url("/r/landing"))
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert again.stdout.splitlines() == [
        "fetched 1 page, stored 0 articles, updated 1 stored before, skipped 0, errors 0"
    ], again.stdout + again.stderr[-4000:]


def test_a_request_of_a_site_on_this_machine_whose_rule_is_gone_is_a_dead_letter_saying_so(
    site: Site,
) -> None:
    """A queued request whose site has no rule in the worker's folder (its rule file removed or renamed,
    or it came from another rules folder) is dead-lettered "no rule for site ..." with how to mend it,
    when its host is on this machine as when it is not: not refused as a private address with the advice
    to add `allow_private_addresses: true` (which its rule had), and so lost."""
    site.rule("/a/landing")
    (site.rules / "faults.yaml").write_text(
        (site.rules / "faults.yaml").read_text(encoding="utf-8") + "allow_private_addresses: true\n",
        encoding="utf-8",
    )
    (site.rules / "gone.yaml").write_text(
        RULE.format(start=site.server.url("/status/404")) + "allow_private_addresses: true\n",
        encoding="utf-8",
    )
    first = site.crawler("temp", "gone", *FAST_ARGS, CRAWLER_ALLOW_PRIVATE_NETWORKS="0")
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    (site.rules / "gone.yaml").unlink()
    requeued = site.crawler("dead", "requeue", "--site", "gone", CRAWLER_ALLOW_PRIVATE_NETWORKS="0")
    assert requeued.returncode == 0, requeued.stderr
    crawl = site.crawler("temp", "faults", *FAST_ARGS, CRAWLER_ALLOW_PRIVATE_NETWORKS="0")
    assert crawl.returncode == 0, crawl.stdout + crawl.stderr[-4000:]
    assert "Refused" not in crawl.stderr, crawl.stderr[-4000:]
    letters = [letter for letter in site.dead() if letter["site"] == "gone"]
    assert [(letter["kind"], str(letter["reason"]).split(",")[0]) for letter in letters] == [
        ("no rule", f"no rule for site 'gone' in {socket.gethostname()}:{site.rules.resolve()}")
    ], letters


def test_a_request_of_a_site_with_no_rule_file_here_is_dead_lettered_unfetched(site: Site) -> None:
    """A request a worker takes whose site has no rule file in its folder was fetched, then dead-lettered
    "no rule": its page asked of the site for nothing. It is dead-lettered as it is taken, unfetched."""
    site.rule("/a/landing")
    name = unique("ruleless")
    site.rule(f"/flaky/{name}?fail=3", name="ruleless")
    first = site.crawler("temp", "ruleless", *FAST_ARGS)
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    (site.rules / "ruleless.yaml").unlink()
    requeued = site.crawler("dead", "requeue", "--site", "ruleless")
    assert requeued.returncode == 0, requeued.stderr
    crawl = site.crawler("temp", "faults", *FAST_ARGS)
    assert crawl.returncode == 0, crawl.stdout + crawl.stderr[-4000:]
    letters = [letter for letter in site.dead() if letter["site"] == "ruleless"]
    assert [(letter["kind"], str(letter["reason"]).split(",")[0]) for letter in letters] == [
        ("no rule", f"no rule for site 'ruleless' in {socket.gethostname()}:{site.rules.resolve()}")
    ], letters
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"3", "asked thrice by the first crawl, never by the worker with no rule"


def test_a_request_whose_rule_file_this_worker_cannot_read_is_put_back_for_later_not_dead_lettered(
    site: Site,
) -> None:
    """A request a worker takes whose site's rule file is in its folder but does not load there (a key of a
    newer version during a rolling upgrade, a file broken on one machine) is put back for later, counted,
    its file's errors warned of once with the fix; once a worker can read the file, it is fetched and
    stored. Not dead-lettered "no rule for site" (what a site without any rule file still is). Nor
    fetched before it is put back: the worker that cannot read its rule fetched it at each return."""
    site.rule("/a/landing")
    name = unique("upgraded")
    flaky = f"/flaky/{name}?fail=3"
    site.rule(flaky, name="upgraded")
    first = site.crawler("temp", "upgraded", *FAST_ARGS)
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    rule = (site.rules / "upgraded.yaml").read_text(encoding="utf-8")
    (site.rules / "upgraded.yaml").write_text(rule + "a_newer_key: 1\n", encoding="utf-8")
    requeued = site.crawler("dead", "requeue", "--site", "upgraded")
    assert requeued.returncode == 0, requeued.stderr

    unreadable = ["-s", "RULES_UNREADABLE_RETRY_SECONDS=1", "-s", "RULES_UNREADABLE_MAX_ATTEMPTS=1000"]
    old = site.crawler("temp", "faults", *FAST_ARGS, *unreadable)
    assert old.returncode == 0, old.stdout + old.stderr[-4000:]
    warned = [line for line in old.stderr.splitlines() if "cannot read the rule file" in line]
    assert len(warned) == 1, old.stderr[-4000:]
    assert "This worker cannot read the rule file of site 'upgraded'" in warned[0], warned
    assert f'{site.rules / "upgraded.yaml"}: a_newer_key: unknown key "a_newer_key"' in warned[0], warned
    assert "run the crawler version the rule is written for on this machine" in warned[0], warned
    assert [letter for letter in site.dead() if letter["site"] == "upgraded"] == []
    assert site.status()["queue"]["waiting"] == 1, "the request put back, waiting for its time"
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"3", "asked thrice by the first crawl, never by the worker that put it back"

    (site.rules / "upgraded.yaml").write_text(rule, encoding="utf-8")
    worker = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", *FAST_ARGS, *unreadable],
        env=site.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: flaky in site.stored(), "the request put back fetched and stored")
    finally:
        worker.terminate()
        worker.wait(timeout=COMMAND_TIMEOUT)
    assert site.dead() == [], "nothing dead-lettered"
    assert site.status()["queue"]["waiting"] == 0


def test_a_crawl_that_fetched_nothing_and_the_status_suggest_dead_list_as_the_crawler_was_run(
    site: Site,
) -> None:
    """The commands suggested after a failed temp crawl and by ``status`` repeat how ``crawler`` was run:
    ``CRAWLER_COMMAND`` (``./run.sh`` sets it) and the ``--data-dir`` given."""
    site.write_rule(RULE.format(start="http://127.0.0.1:9/nobody-listens"), "nowhere")
    given = ("--data-dir", str(site.data))
    done = site.crawler(*given, "temp", "nowhere", *FAST_ARGS, CRAWLER_COMMAND="./run.sh crawler")
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    suggested = f"./run.sh crawler --data-dir {site.data} dead list"
    # The reason is the line after it: the rule's start URL that failed and the key naming it.
    said = done.stdout.splitlines()
    line = said.index(f"nothing could be fetched: see the reasons below (`{suggested}` for the errors)")
    assert said[line + 1].startswith("http://127.0.0.1:9/nobody-listens could not be read"), done.stdout
    status = site.crawler(*given, "status", "--format", "json", CRAWLER_COMMAND="./run.sh crawler")
    (nowhere,) = json.loads(status.stdout)["sites"]
    assert f"1 dead letter: `{suggested} --site nowhere`" in nowhere["attention"]


def test_a_temp_crawl_whose_index_page_gives_no_article_link_says_what_shows_why(site: Site) -> None:
    start = site.server.url("/links?to=/a/one,/a/two")
    rule = RULE.format(start=start).replace(
        """links: {xpath: "//ul[@class='news']"}""", """links: {allow: ["/nothing/"]}"""
    )
    site.write_rule(rule, "nomatch")
    done = site.crawler("temp", "nomatch", *FAST_ARGS)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "stored 0 articles" in done.stdout and "errors 0" in done.stdout, done.stdout
    assert (
        f"the index page gave no article links (index.links in {site.rules / 'nomatch.yaml'} picks them):"
        f" `crawler rules try nomatch {shlex.quote(start)}` shows what the rule finds on it"
    ) in done.stdout.splitlines(), done.stdout


def test_a_temp_crawl_whose_start_url_answers_404_names_the_rules_key(site: Site) -> None:
    start = site.server.url("/status/404")
    site.write_rule(RULE.format(start=start), "gone")
    # Run as ./run.sh runs it: the command it suggests is written so.
    done = site.crawler("temp", "gone", *FAST_ARGS, CRAWLER_COMMAND="./run.sh crawler")
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "errors 1 (HTTP 404: 1)" in done.stdout, done.stdout
    assert (
        f"{start} could not be read (HTTP 404 Not Found): `start_urls[0]` in {site.rules / 'gone.yaml'}"
        " names it: give the URL of an index page of the site there (`./run.sh crawler rules try gone URL`"
        " shows what a URL holds)"
    ) in done.stdout.splitlines(), done.stdout


def test_a_discover_crawl_whose_seed_answers_404_names_the_rules_key(site: Site) -> None:
    seed = site.server.url("/status/404")
    site.write_rule(
        f"discover:\n  topic: {{keywords: [harbour]}}\n  seeds: ['{seed}']\n  domains: [127.0.0.1]\n"
        "allow_private_addresses: true\n",
        "lost",
    )
    done = site.crawler("temp", "lost", *FAST_ARGS)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "errors 1 (HTTP 404: 1)" in done.stdout, done.stdout
    assert (
        f"{seed} could not be read (HTTP 404 Not Found): `discover.seeds[0]` in {site.rules / 'lost.yaml'}"
        " names it: give the URL of a page its discover crawl starts from there (`crawler rules try lost URL`"
        " shows what a URL holds)"
    ) in done.stdout.splitlines(), done.stdout


def test_a_discover_crawl_continued_whose_requeued_dead_letter_is_its_seed_says_it_read_it_again(
    site: Site,
) -> None:
    seed = site.server.url(f"/flaky/{unique('seed')}?fail=3")  # its three tries fail, then it answers
    site.write_rule(
        f"discover:\n  topic: {{keywords: [article]}}\n  seeds: ['{seed}']\n  domains: [127.0.0.1]\n"
        "allow_private_addresses: true\n",
        "lost",
    )
    first = site.crawler("temp", "lost", *FAST_ARGS)
    assert f"{seed} could not be read (HTTP 503" in first.stdout, first.stdout
    job = first.stdout.split("dead list --job ")[1][:12]
    assert site.crawler("dead", "requeue", "--site", "lost").returncode == 0
    again = site.crawler("temp", "lost", *FAST_ARGS)
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert again.stdout.splitlines()[0].startswith(
        f"continued job {job}, the last temp crawl of lost, which had ended: its 1 dead letter requeued"
        " (`crawler dead requeue`) was fetched again, its seed among them read again, with the links it"
        " gives: "
    ), again.stdout
    assert "could not be read" not in again.stdout, again.stdout


def test_a_discover_crawl_whose_budget_leaves_seeds_unread_never_says_they_were_read_before(
    site: Site,
) -> None:
    """Budget 1 of 2 seeds (a warned-of rule): the first seed links to the second alone, a link to a seed,
    counted seen. The second was never read: the crawl must not say "the seeds and the link found on them
    were read before"."""
    two = unique("two")
    first_seed, second_seed = site.server.url(f"/links?to=/a/{two}"), site.server.url(f"/a/{two}")
    site.write_rule(
        f"discover:\n  topic: {{keywords: [article]}}\n  seeds: ['{first_seed}', '{second_seed}']"
        "\n  budget: 1\n  domains: [127.0.0.1]\nallow_private_addresses: true\n",
        "short",
    )
    done = site.crawler("temp", "short", *FAST_ARGS)
    assert done.stdout.startswith("fetched 1 page,"), done.stdout + done.stderr[-4000:]
    assert "budget 1 is smaller than the 2 seeds" in done.stderr, done.stderr[-4000:]
    assert "read before" not in done.stdout, done.stdout


def test_a_temp_crawl_whose_start_url_does_not_answer_says_to_ask_again_not_to_change_the_url(
    site: Site,
) -> None:
    """A start URL whose server does not answer (connection refused) is no wrong URL: the last line says
    to ask again once the site answers, and only then, if the URL is wrong, the key to mend (a 404 still
    says to give another URL)."""
    start = "http://127.0.0.1:9/nobody-listens"
    site.write_rule(RULE.format(start=start), "down")
    done = site.crawler("temp", "down", *FAST_ARGS)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    last = done.stdout.splitlines()[-1]
    assert last.startswith(f"{start} could not be read (DownloadConnectionRefusedError: "), last
    assert last.endswith(
        "): the site did not answer: `crawler dead requeue --site down` asks again once it does; if the URL"
        f" is wrong, `start_urls[0]` in {site.rules / 'down.yaml'} names it: give the URL of an index page"
        " of the site there (`crawler rules try down URL` shows what a URL holds)"
    ), last


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("length", "connection cut: the site closed it before the whole response came"),
        ("chunked", "connection cut: the site closed it before the whole response came"),
        ("nothing", "connection closed before an answer: Connection was closed cleanly"),
    ],
)
def test_a_start_url_whose_connection_is_cut_is_a_connection_error_saying_so_and_to_ask_again(
    site: Site, how: str, reason: str
) -> None:
    """A start URL whose server closes the connection before the end of its response (half the page sent
    under a Content-Length of the whole, or chunks with no last one), or before any answer, is a
    `connection` error whose reason says what happened, and the last line says to ask again."""
    start = site.server.url(f"/cut/{unique('cut')}?how={how}")
    site.write_rule(RULE.format(start=start), "cut")
    done = site.crawler("temp", "cut", *FAST_ARGS)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    if how == "nothing":
        reason += (
            " (after 2 retries); the server closed the connection without answering: check that the port of"
            " the URL serves the web, and try again; one that keeps doing so may refuse this client (its user"
            " agent, its address)"
        )
    else:
        reason += " (after 2 retries)"
    (letter,) = site.dead()
    assert letter["reason"] == reason, letter
    assert letter["kind"] == "connection", letter
    assert done.stdout.splitlines()[-1] == (
        f"{start} could not be read ({reason}): the site did not answer: `crawler dead"
        " requeue --site cut` asks again once it does; if the URL is wrong, `start_urls[0]` in"
        f" {site.rules / 'cut.yaml'} names it: give the URL of an index page of the site there (`crawler"
        " rules try cut URL` shows what a URL holds)"
    ), done.stdout


def test_a_page_whose_server_answers_no_http_is_a_connection_error_saying_so(site: Site) -> None:
    """A port that speaks another protocol (an SSH server's greeting) was dead-lettered as "connection
    failed: ('wrong number of parts', b'SSH-2.0-OpenSSH_9.6')", twisted's error as it is. The same answer
    comes again on a retry: the request is dead-lettered at once, asked once (it was asked thrice,
    RETRY_TIMES 2)."""
    name = unique("not-http")
    site.rule(f"/not-http?id={name}", "/a/small")
    done = site.temp()
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        "connection failed: the answer is not HTTP (its status line: wrong number of parts in"
        " b'SSH-2.0-OpenSSH_9.6'): does that port serve the web?"
    ), letter
    assert list(site.stored()) == ["/a/small"]
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"1", "asked once, not retried"


def test_an_https_url_of_a_server_without_tls_is_a_connection_error_saying_so(site: Site) -> None:
    """An https:// URL of a port that serves plain HTTP was dead-lettered as "connection closed before an
    answer: [('SSL routines', '', 'wrong version number')]", OpenSSL's error list as it is, and was asked
    thrice though the port answers the same: the reason says the TLS handshake failed, in OpenSSL's words,
    and what that error means; asked once."""
    tls = "https://" + site.server.origin.removeprefix("http://") + "/a/tls"
    site.rule(tls, "/a/small")
    done = site.temp()
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    assert [letter["reason"] for letter in site.dead()] == [
        "connection failed: the TLS handshake failed (SSL routines: wrong version number): the port answers"
        " without TLS: does it serve http://, not https://?"
    ], "asked once, not retried"
    assert list(site.stored()) == ["/a/small"]


def test_an_https_url_whose_handshake_is_cut_is_still_retried(site: Site) -> None:
    """A handshake the server cuts (it reads the TLS hello and closes) may be the network's: unlike a port
    without TLS, it is retried (RETRY_TIMES 2)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def cut() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                accepted.append(1)
                connection.recv(4096)

    threading.Thread(target=cut, daemon=True).start()
    try:
        site.rule(f"https://127.0.0.1:{listener.getsockname()[1]}/a/cut", "/a/small")
        done = site.temp()
    finally:
        listener.close()
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert "(after 2 retries)" in str(letter["reason"]), letter["reason"]
    assert len(accepted) >= 3, "a connection for each try at least"


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ("-1", "Value contains non-decimal digits: b'-1'"),
        ("10;20", "Invalid response: conflicting Content-Length headers: b'10,20'"),
    ],
    ids=["negative", "conflicting"],
)
def test_a_response_whose_head_is_no_valid_http_is_refused_once_saying_so(
    site: Site, values: str, problem: str
) -> None:
    """A response with a Content-Length of -1, or two that disagree, failed as "connection failed: Value
    contains non-decimal digits: b'-1'", Twisted's words alone, and was asked thrice (RETRY_TIMES 2),
    though the same head comes again: the reason says the head is no valid HTTP; asked once."""
    name = unique("length")
    site.rule(f"/bad-length/{name}?as={values}", "/a/small")
    done = site.temp()
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    assert [letter["reason"] for letter in site.dead()] == [
        f"connection failed: the response could not be read: its head is no valid HTTP ({problem})"
    ]
    assert list(site.stored()) == ["/a/small"]
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"1", "asked once, not retried"


def _site_counter(site: Site, name: str) -> int:
    """The counter ``name`` of ``site``'s rule summed over the hours its crawls wrote."""
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        total = sum(
            int(client.hget(key, name) or 0) for key in client.scan_iter(f"crawler:stats:{site.name}:*")
        )
        client.close()
    return total


def test_a_page_whose_body_is_longer_than_its_content_length_is_refused_once_saying_so(site: Site) -> None:
    """A response whose Content-Length is shorter than the body it sends was cut at that length by the
    HTTP client without a word, and the first half of the article stored as the article (351 of its 852
    body characters, ending mid-sentence), nothing counted. It is refused as Scrapy refuses a body cut
    short (DOWNLOAD_FAIL_ON_DATALOSS), counted (crawl/body_cut/<site>), asked once: the same server sends
    the same length again. A CR LF past the length (servers that end the body with one) is no cut."""
    name, whole = unique("long"), unique("tail")
    site.rule(f"/long-body/{name}", f"/long-body/{whole}?tail=1", "/a/small")
    done = site.temp()
    assert "errors 1 (connection: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    declared = len(generated_article(name).encode()) // 2
    assert letter["reason"] == (
        f"body cut: the site sent more than its Content-Length, {declared:,} bytes (at least"
        f" {len(generated_article(name).encode()) - declared:,} more came after them): the page would be"
        " stored cut short; its server sends a wrong Content-Length (`-s DOWNLOAD_FAIL_ON_DATALOSS=False` on"
        " the crawl's command keeps pages as they are cut)"
    ), letter
    assert sorted(site.stored()) == ["/a/small", f"/long-body/{whole}?tail=1"]
    assert _site_counter(site, "crawl/body_cut") == 1
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"1", "asked once, not retried"


def test_a_page_cut_at_its_content_length_is_kept_and_counted_when_data_loss_is_allowed(site: Site) -> None:
    """With DOWNLOAD_FAIL_ON_DATALOSS off, as the dead letter of a body cut past its Content-Length says,
    the page is kept as it was cut, and still counted (crawl/body_cut/<site>)."""
    name = unique("long")
    site.rule(f"/long-body/{name}", "/a/small")
    done = site.temp("-s", "DOWNLOAD_FAIL_ON_DATALOSS=False")
    assert "stored 2 articles, skipped 0, errors 0" in done.stdout, done.stdout
    assert sorted(site.stored()) == ["/a/small", f"/long-body/{name}"]
    assert _site_counter(site, "crawl/body_cut") == 1


def _start_url_failed_then_requeued(
    site: Site,
) -> tuple[str, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """A rule whose start URL fails for good (three 503s): its temp crawl (exit 1), then `crawler dead
    requeue` and the temp crawl that continues the job (exit 0). The start URL and the two crawls."""
    start = site.server.url(f"/flaky/{unique('start')}?fail=3")
    site.write_rule(RULE.format(start=start), "mended")
    first = site.crawler("temp", "mended", *FAST_ARGS)
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    assert site.crawler("dead", "requeue", "--site", "mended").returncode == 0
    again = site.crawler("temp", "mended", *FAST_ARGS)
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    return start, first, again


def test_a_start_url_read_once_its_dead_letter_is_requeued_is_no_longer_said_unreadable(
    site: Site,
) -> None:
    """The note of a start URL that failed for good ("could not be read ...: `start_urls[0]` ... names
    it") goes once the URL is read: the crawl that continues the job after `crawler dead requeue` reads
    it, and its summary does not repeat that it could not be read."""
    start, first, again = _start_url_failed_then_requeued(site)
    assert first.stdout.splitlines()[-1].startswith(f"{start} could not be read (HTTP 503"), first.stdout
    assert again.stdout.splitlines()[1].startswith("fetched 1 page, "), again.stdout
    assert "could not be read" not in again.stdout, again.stdout


def test_dead_list_labels_when_utc_and_its_json_keeps_the_epoch_seconds(site: Site) -> None:
    site.rule("/a/plain", "/status/404")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    listed = site.crawler("dead", "list")
    assert listed.returncode == 0, listed.stderr
    header = next(line for line in listed.stdout.splitlines() if " site " in line)
    assert "when (UTC)" in header, listed.stdout
    assert f"{datetime.fromtimestamp(float(letter['at']), UTC):%Y-%m-%d %H:%M}" in listed.stdout, (
        listed.stdout
    )


def test_dead_list_with_no_dead_letter_says_so_in_one_line(site: Site) -> None:
    """A crawl that ended without an error leaves no dead letter: `crawler dead list` says so in one line
    (of the site, or of the job, it was asked for), not as a title over an empty table."""
    site.rule(f"/a/{unique('fine')}")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    keys = Keys("crawler")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        (job,) = (decoded(key).removeprefix(keys.job("")) for key in client.keys(keys.job("*")))
        client.close()
    for selection, said in (
        ((), "no dead letters"),
        (("--site", site.name), f"no dead letters of site {site.name}"),
        (("--job", job), f"no dead letters of job {job}"),
    ):
        listed = site.crawler("dead", "list", *selection)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout == f"{said}\n", listed.stdout
    assert json.loads(site.crawler("dead", "list", "--format", "json").stdout) == []


def test_dead_drop_says_the_pages_stay_seen_and_the_temp_url_it_names_fetches_one_again(site: Site) -> None:
    """A Bloom filter forgets nothing: `crawler dead drop` says that the dropped pages stay seen (the
    site's crawls skip them) and how to fetch one again, and that way works."""
    path = f"/flaky/{unique('dropped')}?fail=3"
    page = site.server.url(path)
    site.rule(path)
    first = site.temp()
    assert first.returncode == 1 and [letter["url"] for letter in site.dead()] == [page], first.stdout
    dropped = site.crawler("dead", "drop", "--site", site.name)
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.splitlines() == [
        "dropped 1 dead letter",
        f"its page stays seen: crawls of {site.name} skip it; `crawler temp {site.name} --url URL` fetches"
        " it again",
    ], dropped.stdout
    again = site.temp()
    assert "skipped 1 " in again.stdout and path not in site.stored(), again.stdout
    given = site.temp("--url", page)
    assert given.returncode == 0, given.stdout + given.stderr[-4000:]
    assert path in site.stored()


def test_dead_drop_of_a_removed_site_names_no_temp_crawl_of_it(site: Site) -> None:
    """A site whose rule file was removed (docs/rules.md, "To remove a site"): `crawler dead drop --site`
    of its dead letters said `crawler temp SITE --url URL` fetches its page again, which fails for a site
    with no rule. It says that no crawl reads the site, and that the temp crawl does once the rule is back."""
    path = f"/flaky/{unique('removed')}?fail=3"
    site.rule(path)
    first = site.temp()
    assert first.returncode == 1 and len(site.dead()) == 1, first.stdout
    (site.rules / f"{site.name}.yaml").unlink()
    site.write_rule(RULE.format(start=site.server.url("/a/plain")), "other")
    dropped = site.crawler("dead", "drop", "--site", site.name)
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.splitlines() == [
        "dropped 1 dead letter",
        f"its page stays seen: {site.name} has no rule file ({site.rules / site.name}.yaml), so no crawl"
        f" reads it; once that file is back, crawls of {site.name} skip it and `crawler temp {site.name}"
        " --url URL` fetches it again",
    ], dropped.stdout


def test_a_temp_crawl_continued_whose_requeued_dead_letter_is_the_start_url_says_it_read_it_again(
    site: Site,
) -> None:
    """The start URL failed for good; `dead requeue` put it back. The crawl that continues the job reads
    it, and its first line says so, not that the site's listings were not read again."""
    _, _, again = _start_url_failed_then_requeued(site)
    said = again.stdout.splitlines()[0]
    assert said.startswith("continued job "), again.stdout
    assert (
        ": its 1 dead letter requeued (`crawler dead requeue`) was fetched again, the site's listing page"
        " among them read again, with the links it gives: 0 articles stored in all, 0 before this run, 0 in"
        " it; the counts below are the job's in all"
    ) in said, said


def test_a_start_url_with_a_token_is_dead_lettered_and_listed_masked_and_requeued_as_written(
    site: Site,
) -> None:
    """A start URL holding a secret in its query (``?token=...``) failed for good: its dead letter was
    stored and `crawler dead list` showed it as written, and so did the worker's warning and the temp
    crawl's summary. They show it masked (``token=***``); the queued request keeps it, so that `crawler
    dead requeue` fetches the page it names."""
    start = site.server.url(f"/flaky/{unique('token')}?fail=3&token=s3cret")
    site.write_rule(RULE.format(start=start), "keyed")
    first = site.crawler("temp", "keyed", *FAST_ARGS)
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    assert "token=***" in first.stdout and "s3cret" not in first.stdout + first.stderr, first.stdout
    (letter,) = site.dead()
    assert letter["url"] == start.replace("s3cret", "***"), letter
    listed = site.crawler("dead", "list")
    assert listed.returncode == 0 and "s3cret" not in listed.stdout + listed.stderr, listed.stdout
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        dead = client.hgetall(Keys("crawler").dead)
        client.close()
    assert dead and not any(b"s3cret" in record for record in dead.values()), dead
    assert all(b"token=s3cret" in member for member in dead), "the request, as requested, for the requeue"
    assert site.crawler("dead", "requeue", "--site", "keyed").returncode == 0
    again = site.crawler("temp", "keyed", *FAST_ARGS)
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]
    assert "s3cret" not in again.stdout + again.stderr, again.stdout


def test_a_rule_without_a_title_field_stores_the_pages_title_and_a_title_search_finds_it(
    site: Site,
) -> None:
    start = site.server.url("/links?to=/a/untitled1")
    rule = RULE.format(start=start).replace("    title: {xpath: //h1}\n", "")
    assert "title:" not in rule
    site.write_rule(rule)
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    article = site.stored()["/a/untitled1"]
    assert article["title"] == "Article untitled1", "the page's title, as qRead reads it"
    assert article["extraction"]["body_from"] == "rule"
    found = site.crawler("articles", "search", "untitled1", "--format", "json")
    assert found.returncode == 0, found.stderr
    assert [hit["title"] for hit in json.loads(found.stdout)] == ["Article untitled1"], found.stdout


def test_status_says_why_a_killed_temp_crawls_worker_is_still_listed_and_until_when(site: Site) -> None:
    site.rule("/slow?seconds=20")
    with site.temp_running("-s", "SUPERVISION_HEARTBEAT_SECONDS=0.5") as crawl:
        # status reads no data folder until the temp crawl has created it.
        wait_until(
            lambda: site.data.is_dir() and len(site.status()["workers"]) == 1,
            "the temp crawl's worker to beat",
        )
        crawl.kill()  # SIGKILL: the worker never removes its heartbeat
        crawl.communicate(timeout=COMMAND_TIMEOUT)
    wait_until(lambda: site.status()["workers_alive"] == 0, "the killed worker to be taken for dead")
    status = site.crawler("status")
    assert status.returncode == 0, status.stderr
    shown = " ".join(status.stdout.split())
    assert (
        "workers alive: 0 of 1 (1 stopped without a clean stop, killed or its machine gone: listed until"
        " 1h00m after its last beat, SUPERVISION_FORGET_WORKER_SECONDS; forgotten in "
    ) in shown, shown


def test_a_retry_or_a_redirect_hands_its_lease_on(redis_client: Any) -> None:
    from scrapy import Request, Spider

    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import decode_request, encode_request, leased, open_job, push, without_lease

    keys = Keys("test")
    queue = LeasedQueue(redis_client, keys)
    open_job(redis_client, keys, "j")
    spider = Spider(name="sites")
    push(queue, Request("http://a.test/1", meta={"site": "news", "job": "j", "kind": "article"}))
    lease = queue.pop().member
    assert lease is not None
    taken = decode_request(lease, spider)
    leased(taken, lease)
    retry = taken.replace(meta={**taken.meta, "retry_times": 1}, dont_filter=True)
    assert queue.handoff(lease, encode_request(without_lease(retry)), priority=0, site="news", job="j"), (
        "the retry is queued in the old request's place"
    )
    assert (queue.leased(), len(queue), queue.pending("news"), queue.job_pending("j")) == (0, 1, 1, 1)
    again = queue.pop().member
    assert again is not None and decode_request(again, spider).meta["retry_times"] == 1
    assert not queue.handoff(lease, b"{}", priority=0, site="news", job="j"), "a lease ends once"
    assert queue.ack(again, site="news", job="j")
    assert (queue.leased(), len(queue), queue.pending("news"), queue.job_pending("j")) == (0, 0, 0, 0)


def test_a_repost_fetched_again_is_not_counted_as_recorded_again(site: Site) -> None:
    """``/a/one?copy=1`` serves the article of ``/a/one``: a repost. A second crawl of both records nothing
    new, and says so: no "recorded 1 repost" line, and the repost is kept once."""
    site.rule("/a/one")
    urls = ("--url", site.server.url("/a/one"), "--url", site.server.url("/a/one?copy=1"))
    first = site.temp(*urls)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "stored 1 article," in first.stdout and "recorded 1 repost " in first.stdout, first.stdout
    again = site.temp(*urls)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "fetched 2 pages, stored 0 articles, updated 1 stored before," in again.stdout, again.stdout
    assert "recorded" not in again.stdout, again.stdout
    (original,) = site.stored().values()
    (repost,) = original["reposts"]
    assert {original["url"], repost["url"]} == {site.server.url("/a/one"), site.server.url("/a/one?copy=1")}


def test_a_repost_is_logged_in_one_line_naming_its_url_never_the_article(site: Site) -> None:
    """Scrapy logs a dropped item whole (its body and all): the project's log formatter logs one line."""
    site.rule("/a/one")
    urls = ("--url", site.server.url("/a/one"), "--url", site.server.url("/a/one?copy=1"))
    first = site.temp(*urls, "-s", "LOG_LEVEL=INFO")
    assert first.returncode == 0, first.stderr[-4000:]
    (dropped,) = [line for line in first.stderr.splitlines() if "Dropped" in line]
    assert " is a repost of " in dropped and site.server.url("/a/one") in dropped, dropped
    assert "Article(" not in first.stderr and "body=" not in first.stderr, first.stderr[-4000:]


def test_an_article_stored_before_and_fetched_again_is_counted_updated_not_stored(site: Site) -> None:
    """The store writes an article whose URL it holds over itself ("updated"): the job counts it apart
    from the articles stored, and the summary says so."""
    site.rule("/a/again")
    url = site.server.url("/a/again")
    first = site.temp("--url", url)
    assert first.returncode == 0, first.stderr[-4000:]
    assert first.stdout.startswith("fetched 1 page, stored 1 article, skipped 0"), first.stdout
    again = site.temp("--url", url)
    assert again.returncode == 0, again.stderr[-4000:]
    said = again.stdout.splitlines()[0]
    assert said.startswith("fetched 1 page, stored 0 articles, updated 1 stored before, skipped 0"), said
    assert list(site.stored()) == ["/a/again"], "one document, written over"


def test_a_crawl_that_wrote_its_articles_again_and_had_an_error_exits_0_as_one_storing_them_anew(
    site: Site,
) -> None:
    """An article written again (updated: its URL stored before) is written as one stored anew is: a crawl
    that wrote articles exits 0 despite an error, whichever of the two they were."""
    site.rule("/a/again")
    article, missing = site.server.url("/a/again"), site.server.url("/status/404")
    first = site.temp("--url", article, "--url", missing)
    assert first.returncode == 0, first.stdout + first.stderr[-4000:]
    again = site.temp("--url", article, "--url", missing)
    said = again.stdout.splitlines()[0]
    assert said.startswith("fetched 1 page, stored 0 articles, updated 1 stored before,"), said
    assert "errors 1 (HTTP 404: 1)" in said, said
    assert again.returncode == 0, again.stdout + again.stderr[-4000:]


# --- links are marked seen only as they are queued ------------------------------------------------------


def test_an_index_pages_links_are_queued_by_the_call_that_marks_them_seen(
    redis_server: str, redis_client: Any, tmp_path: Path
) -> None:
    from scrapy.http import HtmlResponse, Request

    from crawler.redisio.queue import LeasedQueue
    from crawler.requests import open_job

    spider = sites_spider(tmp_path, redis_server)
    spider.opened()
    open_job(redis_client, Keys("crawler"), "j1")
    links = "".join(f'<li><a href="/a/{n}">{n}</a></li>' for n in range(5))
    request = Request("http://127.0.0.1/", meta={"site": "news", "kind": "index", "job": "j1"})
    response = HtmlResponse(
        "http://127.0.0.1/", body=f"<ul class='news'>{links}</ul>".encode(), request=request
    )
    output = list(spider.parse_index(response))
    queue = LeasedQueue(redis_client, Keys("crawler"))
    assert not [out for out in output if isinstance(out, Request)], "nothing left for a later push"
    assert len(queue) == 5 and spider.bloom.count() == 5, "marked seen and queued, together"
    assert queue.job_pending("j1") == 5
    assert list(spider.parse_index(response)) == [] and len(queue) == 5, "seen: not queued again"


def test_a_rule_whose_regex_searches_run_out_of_time_on_every_page_is_said_once_not_lines_a_page(
    redis_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A rule whose regular expression runs out of time on every article of its site (a pattern that
    backtracks), spending the page's budget (RULES_REGEX_PAGE_SECONDS): "regex ... ran past N s on M
    characters: treated as no match" and "the rule's regular expressions spent their N s on URL: K
    skipped" were warned at each page (20 pairs for 20 pages here), the same fault of the rule. Each is said
    whole at its first page, then at most once a minute with how many more; the pages' count as the worker
    stops."""
    from scrapy.http import HtmlResponse, Request

    from crawler.rules import load_rules

    spider = sites_spider(tmp_path, redis_server, RULES_REGEX_PAGE_SECONDS=1e-9)
    spider.opened()
    rule = tmp_path / "rules" / "news.yaml"
    # The title's search spends the page's budget; the heading's, after it, is skipped.
    slow = '    title: {xpath: //h1, regex: "(.+)"}\n    heading: {xpath: //h1, regex: "(.+)"}\n'
    rule.write_text(
        RULE.format(start="http://127.0.0.1/").replace("    title: {xpath: //h1}\n", slow), encoding="utf-8"
    )
    spider.rules.update(load_rules(tmp_path / "rules").rules)
    with caplog.at_level(logging.WARNING):
        for number in range(20):
            url = f"http://127.0.0.1/a/{number}"
            request = Request(url, meta={"site": "news", "kind": "article", "job": "j1"})
            body = b"<h1>One</h1><div class='article'><p>Its text.</p></div>"
            list(spider.parse_article(HtmlResponse(url, body=body, request=request)))
        spider.closed("finished")
    said = [record.getMessage() for record in caplog.records]
    assert [line for line in said if "ran past" in line] == [
        f'{rule}: article.fields.title.regex: regex "(.+)" ran past 1e-09 s on 3 characters: treated as no'
        " match"
    ], said
    spent = [line for line in said if "regular expressions spent" in line]
    assert spent[0] == (
        "news: the rule's regular expressions spent their 1e-09 s on http://127.0.0.1/a/0: 1 search skipped"
    ), said
    assert len(spent) == 2, said
    assert re.fullmatch(
        r"19 more requests had searches skipped so in the \d+ s since the last line, the last: news: the"
        r" rule's regular expressions spent their 1e-09 s on http://127.0.0.1/a/19",
        spent[1],
    ), said


# --- a page is freed when the spider is done with it --------------------------------------------------


def test_a_page_decoded_once_and_parsed_is_freed_without_the_cyclic_garbage_collector(
    redis_server: str, tmp_path: Path
) -> None:
    """A page the decode-once middleware decoded and the spider parsed is freed by reference counting
    when dropped: nothing it holds (Scrapy's cached selector held the response) points back at it, so a
    crawl never keeps hundreds of parsed pages waiting for the cyclic garbage collector."""
    import gc
    import weakref

    from scrapy.http import HtmlResponse, Request

    from crawler.items import Article
    from crawler.worker.pagetext import DecodeOnceMiddleware

    spider = sites_spider(tmp_path, redis_server)
    spider.opened()
    middleware = DecodeOnceMiddleware.from_crawler(spider.crawler)
    pages = {
        "index": b"<ul class='news'><li><a href='/a/1'>one</a></li></ul>",
        "article": b"<title>T</title><h1>One</h1><div class='article'><p>Its text.</p></div>",
    }
    gc.collect()
    gc.disable()
    try:
        for kind, body in pages.items():
            url = f"http://127.0.0.1/{kind}"
            request = Request(url, meta={"site": "news", "kind": kind, "job": "j1"})
            fetched = HtmlResponse(url, body=body, request=request, headers={"Content-Type": "text/html"})
            page = middleware.process_response(request, fetched)
            parse = spider.parse_index if kind == "index" else spider.parse_article
            output = list(parse(page))
            if kind == "article":
                assert [type(item) for item in output] == [Article] and output[0].title == "One", output
            freed = weakref.ref(page)
            del fetched, page, output
            assert freed() is None, f"the {kind} page is kept alive by a reference cycle"
    finally:
        gc.enable()


def test_the_schedulers_rule_errors_are_its_own_log_lines_and_a_dead_letter_names_its_worker_as_status_does(
    site: Site,
) -> None:
    """The scheduler logged the errors of a rule file under [crawler.cli.crawl], the command's logger, not
    its own, [crawler.schedule.grabs]; a dead letter named its worker `host:pid:id` where `crawler status`
    named workers `host:pid`. Both name it `host:pid:start` (the process start: crawler.redisio.workers)."""
    site.rule("/status/404")
    (site.rules / "broken.yaml").write_text("article: {}\n", encoding="utf-8")
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr
    said = [line for line in scheduled.stderr.splitlines() if "rule error, site not scheduled" in line]
    assert said and all("[crawler.schedule.grabs] ERROR: " in line for line in said), scheduled.stderr
    done = site.temp()
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    (letter,) = site.dead()
    assert re.fullmatch(rf"{re.escape(socket.gethostname())}:\d+:[0-9a-f]{{6}}", letter["worker"]), letter


def test_a_temp_crawl_warns_of_its_own_dead_letters_not_of_the_other_jobs_its_worker_helps_with(
    site: Site,
) -> None:
    """A temp crawl's worker takes any request of the shared queue: its warnings were those of every job it
    helped with, a grab of another site dead-lettering among them (found by a new user's walk). The
    command's warnings are its own job's; the other's dead letter is kept as ever."""
    other = site.rule("/status/410", name="other")
    with (site.rules / f"{other}.yaml").open("a", encoding="utf-8") as rule:
        rule.write("schedule: {every: 1h}\n")
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr
    # The slow page holds the temp crawl's job open while its worker takes the grab of the other site.
    site.rule("/status/404", "/slow?seconds=4")
    done = site.temp()
    assert f"Dead-lettered {site.server.url('/status/404')} of site 'faults'" in done.stderr, done.stderr
    assert "of site 'other'" not in done.stderr, done.stderr
    assert {(letter["site"], letter["url"].removeprefix(site.server.origin)) for letter in site.dead()} == {
        ("faults", "/status/404"),
        ("other", "/status/410"),
    }


def test_a_temp_crawl_says_what_its_worker_did_of_other_jobs_in_one_line_at_its_end(site: Site) -> None:
    """A temp crawl's worker takes any request of the shared queue: the warnings of what befell the other
    jobs' requests (a page that is no HTML page) were the command's lines, and its summary said nothing of
    the other jobs' requests it had dead-lettered. What it prints is its own job's; one line at its end
    says how many requests of other jobs it handled, how many it dead-lettered, and where they are."""
    other = "other"
    starts = '", "'.join(site.server.url(path) for path in ("/binary?type=text/html", "/status/410"))
    (site.rules / f"{other}.yaml").parent.mkdir(parents=True, exist_ok=True)
    (site.rules / f"{other}.yaml").write_text(
        RULE.format(start=starts) + "schedule: {every: 1h}\n", encoding="utf-8"
    )
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr
    # The slow page holds the temp crawl's job open while its worker takes the grab of the other site.
    site.rule("/status/404", "/slow?seconds=4")
    done = site.temp()
    assert "Not an HTML page" not in done.stderr, done.stderr
    assert "of site 'other'" not in done.stderr, done.stderr
    assert f"Dead-lettered {site.server.url('/status/404')} of site 'faults'" in done.stderr, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "its worker also handled 2 requests of other jobs from the shared queue (site other), 1 of them"
        " dead-lettered: `crawler dead list` shows them"
    ), done.stdout


def test_a_temp_crawl_counts_the_requests_of_a_removed_site_it_dead_lettered_among_those_it_handled(
    site: Site,
) -> None:
    """A grab of another site queued, then its rule file removed (docs/rules.md, "To remove a site"): the
    temp crawl's worker took its request and dead-lettered it (`no rule`) before counting it taken, and
    its last line said "its worker also handled 0 requests of other jobs from the shared queue, 1 of them
    dead-lettered"."""
    other = "other"
    (site.rules / f"{other}.yaml").parent.mkdir(parents=True, exist_ok=True)
    (site.rules / f"{other}.yaml").write_text(
        RULE.format(start=site.server.url("/a/removed")) + "schedule: {every: 1h}\n", encoding="utf-8"
    )
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr
    (site.rules / f"{other}.yaml").unlink()
    # The slow page holds the temp crawl's job open while its worker takes the grab of the other site.
    site.rule("/a/plain", "/slow?seconds=4")
    done = site.temp()
    assert [letter["site"] for letter in site.dead()] == [other]
    assert done.stdout.splitlines()[-1] == (
        "its worker also handled 1 request of other jobs from the shared queue (site other), 1 of them"
        " dead-lettered: `crawler dead list` shows them"
    ), done.stdout


def test_a_temp_crawl_says_until_when_its_site_asked_to_wait_and_that_ctrl_c_keeps_its_job(
    site: Site,
) -> None:
    """A site's Retry-After (up to BACKOFF_MAX_SECONDS, 600 s) held the temp crawl with no word of it but
    the worker's warning of the wait's length: the crawl says until when its site's requests wait, and
    what Ctrl-C does meanwhile: its requests stay in the shared queue, for the next crawl on this Redis, as
    its Ctrl-C note says (d64005a), not for `crawler temp faults` alone."""
    page = unique("wait")
    site.rule(f"/flaky/{page}?fail=1&retry_after=5")
    done = site.temp()
    assert done.returncode == 0 and "stored 1 article" in done.stdout, done.stdout + done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "asked every worker to wait" in line]
    assert len(said) == 1, done.stderr[-3000:]
    assert re.fullmatch(
        r"crawler temp: note: faults asked every worker to wait \(HTTP 503, Retry-After 5 s\): its requests"
        r" wait until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+ s from now; said once while it lasts\); Ctrl-C"
        r" stops this crawl and keeps its job's requests in the queue: the next crawl on this Redis takes"
        r" them, at the pace of their site, a temp crawl of any site or a worker \(`crawler temp faults` goes"
        r" on with job [0-9a-f]{12}\); `crawler sites forget faults` takes them out of the queue \(and drops"
        r" its grab state\)",
        said[0],
    ), said[0]


def test_a_response_whose_header_line_is_too_long_says_so_not_that_the_connection_was_closed(
    site: Site,
) -> None:
    """A response with a 2 MB header line read 'connection failed: Connection was closed cleanly.' in its
    dead letter and the crawl's warning: the HTTP client closes the connection on a line over its limit.
    The reason says what happened, the header and the limit; the warning names the URL. The same answer
    comes again on a retry: the request is dead-lettered at once, asked once (it was asked thrice,
    RETRY_TIMES 2)."""
    name = unique("long")
    page = f"/long-header?kb=2048&id={name}"
    site.rule(page)
    done = site.temp()
    url = site.server.url(page)
    reason = (
        "the response could not be read: its X-Long header is longer than 16384 bytes, the longest line of a"
        " response's head the HTTP client reads"
    )
    assert f"Dead-lettered {url} of site 'faults': {reason}" in done.stderr, done.stderr[-3000:]
    assert [(letter["kind"], letter["reason"]) for letter in site.dead()] == [("header too long", reason)]
    assert "errors 1 (header too long: 1)" in done.stdout, done.stdout
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"1", "asked once, not retried"


def test_a_response_whose_head_is_past_the_limit_is_refused_once_saying_so(site: Site) -> None:
    """A response head of many short header lines was read whole however long it grew (only a line past
    16384 bytes was refused): a server sending header lines without end took a worker to 3 GB of memory
    within DOWNLOAD_TIMEOUT (30 s), then a timeout. A head past 256 KB (400 headers of 1 KB here) is
    refused as Chrome refuses it, named as a header line too long is, and not retried."""
    name = unique("many")
    page = f"/many-headers?kb=400&id={name}"
    site.rule(page, "/a/small")
    done = site.temp()
    assert "errors 1 (header too long: 1)" in done.stdout, done.stdout
    reason = (
        "the response could not be read: its head (status line and headers) is longer than 262,144 bytes,"
        " the longest head the HTTP client reads"
    )
    assert [(letter["kind"], letter["reason"]) for letter in site.dead()] == [("header too long", reason)]
    assert list(site.stored()) == ["/a/small"]
    with urllib.request.urlopen(site.server.url(f"/asked/{name}"), timeout=COMMAND_TIMEOUT) as answer:
        assert answer.read() == b"1", "asked once, not retried"


def test_a_temp_crawl_says_each_failure_once_in_its_own_words(site: Site) -> None:
    """A temp crawl printed Scrapy's ERROR lines among its own: 'Gave up retrying <GET ...>' before each
    dead letter's warning, and 'Error downloading <GET .../robots.txt>' of a host that cannot be reached.
    Each failure is said once, by the crawl's own line; Scrapy's, and each try at a robots.txt, at DEBUG
    (shown at LOG_LEVEL=DEBUG: in a worker's log, at its LOG_LEVEL INFO, they were a line per request)."""
    fails, nobody = unique("fails"), "http://127.0.0.1:9/a/nobody-listens"
    site.rule(f"/flaky/{fails}?fail=99", nobody)
    done = site.temp()
    assert done.returncode == 1 and "errors 2" in done.stdout, done.stdout + done.stderr[-3000:]
    for url in (site.server.url(f"/flaky/{fails}?fail=99"), nobody):
        said = [line for line in done.stderr.splitlines() if url in line]
        assert len(said) == 1 and said[0].startswith(f"crawler temp: warning: Dead-lettered {url} "), said
    assert "ERROR" not in done.stderr, done.stderr[-3000:]
    site.rule(f"/flaky/{unique('fails')}?fail=99", f"{nobody}-too")
    diagnosed = site.temp("-s", "LOG_LEVEL=DEBUG")
    for lowered in (
        "[scrapy.downloadermiddlewares.retry] DEBUG: Gave up retrying <GET",
        "[crawler.worker.robots] DEBUG: Error downloading <GET http://127.0.0.1:9/robots.txt>: ",
    ):
        assert lowered in diagnosed.stderr, lowered


def _grab_by_a_worker(site: Site, done: Callable[[], bool], what: str, *args: str) -> str:
    """The log of a `crawler worker` (``args`` added) that crawls the site's grab (its rule given a schedule,
    the grab queued by `crawler schedule --once`) until ``done()`` (``what`` it waits for), then stopped."""
    with (site.rules / f"{site.name}.yaml").open("a", encoding="utf-8") as rule:
        rule.write("schedule: {every: 1h}\n")
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr
    worker = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", *FAST_ARGS, *args],
        env=site.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(done, what)
    finally:
        worker.terminate()
        _, log = worker.communicate(timeout=COMMAND_TIMEOUT)
    return log


def test_a_site_that_is_down_is_said_once_then_in_a_count_while_each_url_stays_in_the_dead_letters(
    site: Site,
) -> None:
    """A site that went down gave a worker's log two lines per request of its queue (12 here): Scrapy's
    ERROR "Gave up retrying <GET URL>" and the warning "Dead-lettered URL of site 'S': ... connection
    refused" (robots.txt of its host, two more). Now the first dead letter is said whole, saying that the
    next ones alike are counted; the rest in one line as the site answers again (its slow page, last), with
    their count, the last URL and the reason; Scrapy's line is at DEBUG. `crawler dead list` names each,
    the counters (dead/<site>, errors/connection/<site>) count each."""
    down = [f"http://127.0.0.1:9/a/down-{number}" for number in range(12)]
    site.rule(*down, "/slow?seconds=6")
    log = _grab_by_a_worker(site, lambda: "/slow?seconds=6" in site.stored(), "the site's slow page stored")
    said = [line for line in log.splitlines() if "127.0.0.1:9" in line]
    assert len(said) == 3, "\n".join(said)
    assert re.search(r"WARNING: robots\.txt of 127\.0\.0\.1:9 could not be fetched \(", said[0]), said
    assert "WARNING: Dead-lettered http://127.0.0.1:9/a/down-" in said[1], said
    assert "nothing listens there" in said[1] and "said once a minute with a count" in said[1], said
    assert re.search(
        r"WARNING: Site 'faults' answers again \(`crawler dead requeue --site faults` asks again for its dead"
        r" letters\): 11 more requests dead-lettered so in the \d+ s since the last line, the last:"
        r" http://127\.0\.0\.1:9/a/down-\d+ of site 'faults': DownloadConnectionRefusedError.*nothing listens"
        r" there",
        said[2],
    ), said
    assert sorted(letter["url"] for letter in site.dead()) == sorted(down)
    (faults,) = site.status()["sites"]
    assert faults["dead_letters"] == 12 and faults["errors_by_kind_24h"] == {"connection": 12}, faults


def test_a_url_answered_429_for_ever_is_said_once_then_counted_then_dead_lettered(site: Site) -> None:
    """A URL answered 429 for ever waited behind its site's backoff BACKOFF_MAX_TRIES (8) times, then
    through Scrapy's 2 retries, each wait a warning in a worker's log ("faults answered URL with HTTP 429:
    every worker waits N s before its next request there"), then Scrapy's ERROR "Gave up retrying" and its
    dead letter: 13 lines for one URL. Now the first wait is said, saying the next are counted
    (backoff/<site>), the rest said with their count as the worker stops; its dead letter, one line."""
    site.rule("/status/429", "/a/plain")
    short = ("BACKOFF_MAX_SECONDS=1", "BACKOFF_THROTTLE_SECONDS=0.1", "BACKOFF_MAX_THROTTLE_SECONDS=0.1")
    log = _grab_by_a_worker(
        site,
        lambda: len(site.dead()) == 1,
        "the URL answered 429 dead-lettered",
        *(f"--set={pair}" for pair in short),
    )
    url = site.server.url("/status/429")
    said = [line for line in log.splitlines() if url in line]
    assert len(said) == 3, "\n".join(said)
    assert said[0].endswith(
        f"WARNING: faults answered {url} with HTTP 429: every worker waits 1 s before its next request there;"
        " while the site goes on asking so, said once a minute with a count"
    ), said
    assert (
        f"WARNING: Dead-lettered {url} of site 'faults': HTTP 429 Too Many Requests (after 2 retries)"
        in said[1]
    )
    waits = re.search(
        rf"WARNING: (\d+) more requests were answered with a wait so in the \d+ s since the last line, the"
        rf" last: faults answered {re.escape(url)} with HTTP 429$",
        said[2],
    )
    assert waits is not None, said
    assert _site_counter(site, "backoff") == 1 + int(waits[1]) >= 9


def test_a_dead_proxy_benched_again_and_again_is_said_once_then_counted(site: Site) -> None:
    """A proxy that is down is benched after PROXY_MAX_FAILURES (3) failures in a row, back after
    PROXY_BENCH_SECONDS, and benched again at its next 3 failures: "Proxy P benched for 300 s: 3 failures
    in a row" came again at each, 12 lines an hour. Now its first bench is said, the next ones counted
    (proxy/benched) and said with their count as the worker stops (or hourly, or as it works again)."""
    pages = '", "'.join(site.server.url(f"/a/behind-{number}") for number in range(8))
    site.write_rule(RULE.format(start=pages))
    done = site.crawler(
        "temp",
        site.name,
        *FAST_ARGS,
        "-s",
        "PROXY_BENCH_SECONDS=0.5",
        "-s",
        "CRAWLER_PROXIES=http://127.0.0.1:9",
    )
    assert "errors 8" in done.stdout, done.stdout + done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "proxy http://127.0.0.1:9 benched" in line.lower()]
    assert len(said) == 2, said
    assert said[0] == (
        "crawler temp: warning: Proxy http://127.0.0.1:9 benched for 0.5 s: 3 failures in a row; benched"
        " again while it fails so, said once an hour with a count"
    ), said
    more = re.fullmatch(
        r"crawler temp: warning: (\d+) more times proxy http://127\.0\.0\.1:9 benched so in the \d+ s since"
        r" the last line, the last: 3 failures in a row",
        said[1],
    )
    assert more is not None, said
    (proxy,) = site.status()["proxies"]
    assert proxy["benches"] == 1 + int(more[1]) and proxy["failed"] >= 24, proxy
    # The temp crawl's note of the wait came at each bench (6 in a run): now once while it lasts, and not
    # as a wait the site asked for.
    waits = [line for line in done.stderr.splitlines() if "every proxy of the site is benched" in line]
    assert len(waits) == 1 and int(more[1]) >= 1, waits
    assert waits[0].startswith(
        "crawler temp: note: faults is held back (every proxy of the site is benched): its requests wait"
        " until "
    ), waits
    assert "s from now; said once while it lasts); Ctrl-C stops this crawl" in waits[0], waits


def test_the_line_of_other_jobs_handled_points_to_the_dead_letters_only_when_there_are_some() -> None:
    """The temp crawl's last line of the other jobs' requests its worker handled sent the reader to
    `crawler dead list` when it had dead-lettered none of them, where none of them is."""
    assert Helped(taken=2, sites=("other",)).said() == (
        "its worker also handled 2 requests of other jobs from the shared queue (site other)"
    )
    assert Helped(taken=2, dead=1, sites=("other",)).said() == (
        "its worker also handled 2 requests of other jobs from the shared queue (site other), 1 of them"
        " dead-lettered: `crawler dead list` shows them"
    )


def _late_bytes_server(
    short: str, body: bytes, late: bytes, articles: tuple[str, ...] = ("innocent",)
) -> tuple[socket.socket, list[tuple[int, str]]]:
    """A raw HTTP/1.1 server on 127.0.0.1 that keeps its connections open: its page ``short`` is ``body``
    under a Content-Length of ``len(body)``, and ``late``, more of it, comes past that length after a
    pause: just before the answer to the next request on the same connection (as a server whose Content-
    Length is short sends the rest of its body once it is sent); ``/`` is an index page that links to
    ``/<name>``, the article ``name``, of each of ``articles`` in turn (``short`` may be one of them). The
    listener, and the requests it was sent (their connection's number and path)."""
    listener = socket.create_server(("127.0.0.1", 0))
    asked: list[tuple[int, str]] = []
    links = "".join(f"<li><a href='/{name}'>{name}</a></li>" for name in articles)
    index = f"<html><body><ul class='news'>{links}</ul></body></html>".encode()
    pages = {f"/{name}": generated_article(name).encode() for name in articles} | {"/": index, short: body}

    def serve(connection: socket.socket, number: int) -> None:
        pending = b""
        with connection, connection.makefile("rb") as reader:
            while request := reader.readline():
                while reader.readline() not in (b"\r\n", b""):
                    pass
                path = request.split()[1].decode()
                asked.append((number, path))
                body = pages.get(path, b"")
                head = f"HTTP/1.1 {200 if path in pages else 404} OK\r\nContent-Length: {len(body)}\r\n\r\n"
                connection.sendall(pending + head.encode() + body)
                pending = late if path == short else b""

    def accept() -> None:
        number = 0
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            number += 1
            threading.Thread(target=serve, args=(connection, number), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener, asked


def _crawl_one_at_a_time(
    site: Site, start: str, *listeners: socket.socket
) -> subprocess.CompletedProcess[str]:
    """`crawler temp` of ``site`` with a rule that starts at ``start`` (a raw server of the test) and asks
    one page at a time (a kept connection serves the next request), then ``listeners`` closed."""
    try:
        site.write_rule(RULE.format(start=start) + "politeness: {concurrency: 1}\n")
        return site.temp()
    finally:
        for listener in listeners:
            listener.close()


@pytest.mark.parametrize(
    ("robots", "late"),
    [(b"User-agent: *\n", b"Disallow: /private/\n"), (b"", b"User-agent: *\nDisallow: /private/\n")],
    ids=["short_length", "zero_length"],
)
def test_bytes_past_a_content_length_that_come_late_do_not_fail_the_next_request(
    site: Site, robots: bytes, late: bytes
) -> None:
    """Bytes past a response's Content-Length (or past a Content-Length of 0) that come in a later read,
    once the connection went back to the pool and the next request was sent on it, were read as that
    request's answer: the innocent index page was dead-lettered "the answer is not HTTP (its status line:
    non-integer status code in b'Disallow: /private/')", not retried, its site not crawled. An answer that
    is not HTTP on a reused connection is asked again once on a new connection, as a stale pooled
    connection is, and counted (crawl/stale_connection/<site>)."""
    listener, asked = _late_bytes_server("/robots.txt", robots, late)
    start = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    done = _crawl_one_at_a_time(site, start, listener)
    assert "stored 1 article, skipped 0, errors 0" in done.stdout, done.stdout + str(site.dead())
    assert list(site.stored()) == [f"{start}innocent"]
    assert asked[:3] == [(1, "/robots.txt"), (1, "/"), (2, "/")], asked
    assert _site_counter(site, "crawl/stale_connection") == 1
    assert _site_counter(site, "crawl/body_cut") == 0, "robots.txt is the request of no site"
    first = late.splitlines()[0]
    assert (
        f"{start}robots.txt: at least {len(first) + 1} bytes came past its Content-Length once its answer was"
        f" read, in the read of the next request on its connection ({start}): its server sends a wrong"
        " Content-Length"
    ) in done.stderr, done.stderr[-4000:]
    assert (
        f"the answer on a connection kept from the answer to {start}robots.txt is not HTTP (its status line:"
        f" non-integer status code in {first!r}): bytes that answer sent past its Content-Length, most"
        f" likely: {start} is asked again on a new connection"
    ) in done.stderr, done.stderr[-4000:]


def test_bytes_past_a_content_length_that_come_in_the_next_requests_read_count_the_page_they_cut(
    site: Site,
) -> None:
    """Bytes past an article's Content-Length that came in the read of the next request on its kept
    connection had that request asked again (crawl/stale_connection/<site>), but the article, read as long
    as its Content-Length said and stored cut short, was neither counted nor named as the page cut. It is,
    as when the bytes come while the connection idles: a warning naming its URL, crawl/body_cut/<site> of
    its request's site (robots.txt, of no site, is not counted: the test above)."""
    cut = unique("cut")
    article = generated_article(cut).encode()
    # Past half the article and the white space there: the late bytes start with more (a cut).
    rest = article[len(article) // 2 :].lstrip()
    declared = len(article) - len(rest)
    listener, asked = _late_bytes_server(f"/{cut}", article[:declared], rest, (cut, "innocent"))
    start = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    done = _crawl_one_at_a_time(site, start, listener)
    assert "stored 2 articles, skipped 0, errors 0" in done.stdout, done.stdout + str(site.dead())
    assert sorted(site.stored()) == sorted([f"{start}{cut}", f"{start}innocent"])
    assert asked == [(1, "/robots.txt"), (1, "/"), (1, f"/{cut}"), (1, "/innocent"), (2, "/innocent")], asked
    assert _site_counter(site, "crawl/stale_connection") == 1
    assert _site_counter(site, "crawl/body_cut") == 1
    # The status line the next request's parser refused: the late bytes up to their first line's end.
    refused = len(rest.partition(b"\n")[0]) + 1
    assert (
        f"{start}{cut}: at least {refused:,} bytes came past its Content-Length once its answer was read, in"
        f" the read of the next request on its connection ({start}innocent): its server sends a wrong"
        " Content-Length; the page is kept as long as its Content-Length says, most likely cut short"
    ) in done.stderr, done.stderr[-4000:]


def _short_length_server(articles: tuple[str, ...]) -> socket.socket:
    """A raw HTTP/1.1 server on 127.0.0.1 that keeps its connections open and sends a wrong Content-Length
    on every article: half its body's length, the rest sent just before the answer to the next request on
    the same connection; ``/`` is an index page that links to ``/<name>`` of each of ``articles``."""
    listener = socket.create_server(("127.0.0.1", 0))
    links = "".join(f"<li><a href='/{name}'>{name}</a></li>" for name in articles)
    index = f"<html><body><ul class='news'>{links}</ul></body></html>".encode()
    pages = {f"/{name}": generated_article(name).encode() for name in articles}

    def serve(connection: socket.socket) -> None:
        pending = b""
        with connection, connection.makefile("rb") as reader:
            while request := reader.readline():
                while reader.readline() not in (b"\r\n", b""):
                    pass
                path = request.split()[1].decode()
                body = pages.get(path, index if path == "/" else b"")
                declared = len(body) // 2 if path in pages else len(body)
                head = f"HTTP/1.1 {200 if body else 404} OK\r\nContent-Length: {declared}\r\n\r\n"
                connection.sendall(pending + head.encode() + body[:declared])
                pending = body[declared:]

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


def test_a_server_that_sends_a_wrong_content_length_on_every_page_is_said_once_then_counted(
    site: Site,
) -> None:
    """A server whose every page is longer than its Content-Length (the rest coming before the answer to
    the next request on its connection) gave two warnings a page: "URL: at least N bytes came past its
    Content-Length once its answer was read, in the read of the next request ..." and "the answer on a
    connection kept from the answer to URL is not HTTP ...: URL is asked again on a new connection" (16
    for 8 articles). Now each is said once for the site, the rest counted (crawl/body_cut/<site>,
    crawl/stale_connection/<site>) and said with their count at the end."""
    articles = tuple(unique(f"short{number}") for number in range(8))
    listener = _short_length_server(articles)
    start = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    done = _crawl_one_at_a_time(site, start, listener)
    assert "stored 8 articles" in done.stdout, done.stdout + done.stderr[-4000:]
    past = [
        line
        for line in done.stderr.splitlines()
        if "past their Content-Length" in line or "came past" in line
    ]
    again = [line for line in done.stderr.splitlines() if "new connection" in line]
    assert len(past) == 2 and len(again) == 2, "\n".join(past + again)
    assert "its server sends a wrong Content-Length" in past[0], past
    cut = re.fullmatch(
        r"crawler temp: warning: (\d+) more requests of site 'faults' had bytes past their Content-Length so"
        r" in the \d+ s since the last line, the last: http://\S+: at least [\d,]+ bytes came past its"
        r" Content-Length.*",
        past[1],
    )
    assert cut is not None, past
    stale = re.fullmatch(
        r"crawler temp: warning: (\d+) more requests of site 'faults' were asked again on a new connection so"
        r" in the \d+ s since the last line, the last: .*",
        again[1],
    )
    assert stale is not None, again
    assert _site_counter(site, "crawl/body_cut") == 1 + int(cut[1]) >= 6
    assert _site_counter(site, "crawl/stale_connection") == 1 + int(stale[1]) >= 6


def _idle_late_bytes_servers(cut: str, innocent: str) -> tuple[socket.socket, socket.socket, threading.Event]:
    """Two raw HTTP/1.1 servers on 127.0.0.1 that keep their connections open. The second's ``/`` is an
    index page that links to the first's ``/cut``, then to its own ``/innocent``; the first answers
    ``/cut`` (the article ``cut``) under a Content-Length of half its body, and sends the rest once the
    crawl asks ``/innocent`` (the request after ``/cut``: its connection idles in the pool then), which the
    second answers once the client has closed the connection of ``/cut``. The two listeners, and the event
    set when the client closed it."""
    first, second = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    answered, send_rest, closed = threading.Event(), threading.Event(), threading.Event()
    article = generated_article(cut).encode()
    declared = len(article) // 2
    index = (
        f"<html><body><ul class='news'><li><a href='http://127.0.0.1:{first.getsockname()[1]}/cut'>Cut</a>"
        "</li><li><a href='/innocent'>Innocent</a></li></ul></body></html>"
    ).encode()

    def answer(connection: socket.socket, body: bytes | None, length: int | None = None) -> None:
        if body is None:
            connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body) if length is None else length}\r\n\r\n"
        connection.sendall(head.encode() + body[: length if length is not None else len(body)])

    def serve(connection: socket.socket, pages: Callable[[socket.socket, str], None]) -> None:
        with connection, connection.makefile("rb") as reader:
            while request := reader.readline():
                while reader.readline() not in (b"\r\n", b""):
                    pass
                pages(connection, request.split()[1].decode())

    def first_pages(connection: socket.socket, path: str) -> None:
        if path != "/cut":
            answer(connection, None)
            return
        answer(connection, article, declared)
        answered.set()
        if send_rest.wait(WAIT_LIMIT):
            connection.sendall(article[declared:])
            connection.settimeout(WAIT_LIMIT)
            if connection.recv(1) == b"":
                closed.set()

    def second_pages(connection: socket.socket, path: str) -> None:
        if path == "/innocent" and answered.is_set():
            send_rest.set()
            closed.wait(WAIT_LIMIT)
        answer(connection, {"/": index, "/innocent": generated_article(innocent).encode()}.get(path))

    def accept(listener: socket.socket, pages: Callable[[socket.socket, str], None]) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(connection, pages), daemon=True).start()

    threading.Thread(target=accept, args=(first, first_pages), daemon=True).start()
    threading.Thread(target=accept, args=(second, second_pages), daemon=True).start()
    return first, second, closed


def test_bytes_past_a_content_length_that_come_while_the_connection_idles_are_counted(site: Site) -> None:
    """Bytes past a response's Content-Length that come in a later read while its connection idles in the
    pool (no request sent on it yet) closed the connection without a word: the page, cut at its
    Content-Length, was stored, nothing counted. It is kept (whole as its Content-Length tells), and the
    server's wrong Content-Length is logged and counted (crawl/body_cut/<site>)."""
    cut, innocent = unique("cut"), unique("innocent")
    first, second, closed = _idle_late_bytes_servers(cut, innocent)
    start = f"http://127.0.0.1:{second.getsockname()[1]}/"
    cut_url = f"http://127.0.0.1:{first.getsockname()[1]}/cut"
    done = _crawl_one_at_a_time(site, start, first, second)
    assert closed.is_set(), "the client closed the connection the rest came on"
    assert "stored 2 articles, skipped 0, errors 0" in done.stdout, done.stdout + str(site.dead())
    assert sorted(site.stored()) == sorted([cut_url, f"{start}innocent"])
    assert _site_counter(site, "crawl/body_cut") == 1
    rest = len(generated_article(cut).encode()) - len(generated_article(cut).encode()) // 2
    assert (
        f"{cut_url}: at least {rest:,} bytes came past its Content-Length once its answer was read, as its"
        " connection idled: its server sends a wrong Content-Length; the page is kept as long as its"
        " Content-Length says, most likely cut short"
    ) in done.stderr, done.stderr[-4000:]


# The handler in a real reactor, downloading from a raw server on 127.0.0.1 (this head, then a script's own
# lines): what it counted, printed as JSON on its last line.
_HANDLER_SCRIPT_HEAD = """
import asyncio
import json
import socket
import threading
import time
from scrapy import Request
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler
from crawler.config import crawl_settings

settings = crawl_settings()
install_reactor(settings["TWISTED_REACTOR"])
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from crawler.worker.download import HTTPDownloadHandler

listener = socket.create_server(("127.0.0.1", 0))
origin = "http://127.0.0.1:%d" % listener.getsockname()[1]

def accept(serve):
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(connection,), daemon=True).start()

def read_head(reader):
    asked = reader.readline()
    while reader.readline() not in (b"\\r\\n", b""):
        pass
    return asked.split()[1].decode() if asked else None

def wait_closed(connection):
    try:
        while connection.recv(1024):
            pass
    except OSError:
        pass

async def until(event):
    deadline = time.monotonic() + 60
    while not event.is_set():
        assert time.monotonic() < deadline, "the server saw it within 60 s"
        await asyncio.sleep(0.01)

def counted(crawler):
    stats = crawler.stats.get_stats()
    return {key: value for key, value in stats.items() if "body_cut" in key or "stale" in key}

def page(site):
    return Request(origin + "/page", meta={"site": site})

def answer_half(connection, body):
    connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))

def run(downloads):
    done = Deferred.fromFuture(asyncio.ensure_future(downloads()))
    done.addBoth(lambda result: reactor.callLater(0, reactor.stop) and result)
    reactor.run()
"""


def _run_handler_script(script: str) -> Any:
    run = subprocess.run(
        [sys.executable, "-c", _HANDLER_SCRIPT_HEAD + script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.splitlines()[-1])


# The site "second" downloads /page on a connection kept from /warm (of no site), whose answer waits while
# the site "first" downloads /page on a connection of its own, to its end; then the kept connection answers
# bytes that are no HTTP, and the pool asks "second"'s /page again on a new connection, which answers under a
# Content-Length of half its body and sends the rest once the download ended (the connection idles then).
ONE_ENDS_BEFORE_THE_OTHER_IS_ASKED_AGAIN = """
BODY, REST = b"<p>the first half</p>", b"<p>the second half</p>"
OK = b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok"
asked_on_kept, go, downloaded, closed = (threading.Event() for _ in range(4))

def serve(connection):
    kept = False
    with connection, connection.makefile("rb") as reader:
        while (path := read_head(reader)) is not None:
            if path == "/warm":
                kept = True
                connection.sendall(OK)
            elif kept:
                asked_on_kept.set()
                go.wait(60)
                connection.sendall(b"junk\\r\\n")
                return
            elif not go.is_set():
                connection.sendall(OK)
            else:
                answer_half(connection, BODY)
                downloaded.wait(60)
                connection.sendall(REST)
                wait_closed(connection)
                closed.set()
                return

async def downloads():
    crawler = get_crawler(settings_dict=dict(settings))
    handler = HTTPDownloadHandler(crawler)
    await handler.download_request(Request(origin + "/warm"))
    second = asyncio.ensure_future(handler.download_request(page("second")))
    await until(asked_on_kept)
    await handler.download_request(page("first"))
    go.set()
    await second
    downloaded.set()
    await until(closed)
    await handler.close()
    print(json.dumps(counted(crawler)), flush=True)

threading.Thread(target=accept, args=(serve,), daemon=True).start()
run(downloads)
"""


def test_late_bytes_of_a_download_asked_again_after_another_site_downloaded_its_url_count_for_its_site() -> (
    None
):
    """The handler kept one site a URL (the one that asked last), deleted when any download of it ended: a
    download of the site "second" asked again on a new connection once "first"'s download of the same URL,
    begun after it, had ended found none, and the bytes past the Content-Length of its answer were not
    counted. Each download of a URL keeps its site until its own end."""
    assert _run_handler_script(ONE_ENDS_BEFORE_THE_OTHER_IS_ASKED_AGAIN) == {
        "crawl/stale_connection/second": 1,
        "crawl/body_cut/second": 1,
    }


# Two downloads of the same URL, of the sites "first" and "second", at once, each on a connection of its own
# to a raw server on 127.0.0.1 that answers the URL under a Content-Length of half its body and sends the
# rest once both downloads ended (their connections idle in the pool then).
SAME_URL_TWO_SITES = """
BODY, REST = b"<p>the first half</p>", b"<p>the second half</p>"
downloaded, closed = threading.Event(), threading.Semaphore(0)

def serve(connection):
    with connection, connection.makefile("rb") as reader:
        read_head(reader)
        answer_half(connection, BODY)
        downloaded.wait(60)
        connection.sendall(REST)
        wait_closed(connection)
    closed.release()

async def downloads():
    crawler = get_crawler(settings_dict=dict(settings))
    handler = HTTPDownloadHandler(crawler)
    await asyncio.gather(*(handler.download_request(page(site)) for site in ("first", "second")))
    downloaded.set()
    deadline = time.monotonic() + 60
    for _ in range(2):
        while not closed.acquire(blocking=False):
            assert time.monotonic() < deadline, "the client closes both connections"
            await asyncio.sleep(0.01)
    await handler.close()
    print(json.dumps(counted(crawler)), flush=True)

threading.Thread(target=accept, args=(serve,), daemon=True).start()
run(downloads)
"""


def test_bytes_past_a_content_length_of_one_url_two_sites_download_at_once_are_all_counted() -> None:
    """Each of two downloads of one URL at once, of two sites, gets bytes past its Content-Length while its
    connection idles: both are counted, none lost. For which of the two sites each is counted cannot be
    told: a connection notes a site downloading its request's URL as it sends it, the one that asked last
    (the handler keeps the sites downloading a URL, not which request is whose)."""
    said = _run_handler_script(SAME_URL_TWO_SITES)
    assert sum(said.values()) == 2, said
    assert set(said) <= {"crawl/body_cut/first", "crawl/body_cut/second"}, said
