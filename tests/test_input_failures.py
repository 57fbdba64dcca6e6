"""Nothing lost, nothing hung when the input is broken: real crawls (the `crawler` commands, subprocesses)
against the local test server, through the real embedded Redis, when rule files or queue entries are
broken, when a rule's regular expressions are slow, when a host's name resolves to a private address as the
crawl connects, when a page lies about its charset or is cut at the size limit; and what each leaves
behind (dead letters, counters), read back with the commands a person would use. Retries, redirects and
failures for good are tests/test_failures.py; the store failing is tests/test_store_failures.py; Redis
killed, frozen or full and crawls stopped by a signal are tests/test_redis_failures.py."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import brotli
import pytest
from backports import zstd
from conftest import SiteServer, serving, stderr_until_interrupted
from crawlsite import (
    COMMAND_TIMEOUT,
    FAST_ARGS,
    RULE,
    WAIT_LIMIT,
    Site,
    sites_spider,
    unique,
)
from scrapy import Request
from scrapy.http import Response
from siteserver import (
    CP1252_PARAGRAPHS,
    CP1252_TITLE,
    GBK_EURO_PARAGRAPHS,
    GBK_PARAGRAPHS,
    GBK_TITLE,
    SHORT_UTF8_TITLE,
    article_page,
    generated_article,
    generated_text,
)

from crawler.config import ALLOW_PRIVATE_NETWORKS_ENV
from crawler.redisio.connection import connect
from crawler.redisio.embedded import EmbeddedRedis
from crawler.worker.compression import CompressedBodyCut, WholeDecompressionMiddleware, decompressed
from crawler.worker.download import DECOMPRESSION_ERRORS

# A crawl's text work on its own thread, for the tests of what is no text work.
NO_TEXT_PROCESSES = ("-s", "TEXT_PROCESSES=0")


@pytest.fixture
def site(site_server: SiteServer, tmp_path: Path) -> Site:
    return Site(site_server, tmp_path)


# --- broken rule files, broken queue entries ------------------------------------------------------------


def test_broken_rule_files_are_named_and_skipped_by_every_command(site: Site) -> None:
    site.rule("/a/good1", "/a/good2")
    (site.rules / "nul.yaml").write_bytes(b"name: x\x00\n")
    # Deeper than a rule file's brackets may nest (MAX_RULE_NESTING, refused before PyYAML's scanner, which
    # took 0.5 s for 2,000 levels in every read of the folder); the mapping, deeper than the parser goes.
    (site.rules / "deep.yaml").write_text("domains: " + "[" * 1000 + "\n", encoding="utf-8")
    (site.rules / "deepmap.yaml").write_text("domains: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "utf-8")
    checked = site.crawler("rules", "check")
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[-1] == "1 rule ok, 3 files with 3 errors"
    assert "nul.yaml: line 1, column 8: invalid YAML: the character U+0000" in checked.stdout
    assert "deep.yaml: line 1, column 210: invalid YAML: brackets nested 1,000 levels deep" in checked.stdout
    site.data.mkdir()  # status reads an existing data folder only
    status = site.status()
    assert sorted(Path(error["file"]).name for error in status["rule_errors"]) == [
        "deep.yaml",
        "deepmap.yaml",
        "nul.yaml",
    ]
    scheduled = site.crawler("schedule", "--once")
    assert scheduled.returncode == 0, scheduled.stderr[-3000:]
    # The text work on the crawl's thread: no text processes to start (2 s of a crawl that reads rule files).
    done = site.temp(*NO_TEXT_PROCESSES)
    assert done.returncode == 0 and "stored 2 articles" in done.stdout, done.stdout + done.stderr[-3000:]
    worker = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "worker", *NO_TEXT_PROCESSES],
        env=site.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = "".join(stderr_until_interrupted(worker, WAIT_LIMIT))
    assert "Serving 1 site rule: faults" in log and "Traceback" not in log, log[-4000:]
    assert "nul.yaml" in log


def test_a_temp_crawl_names_other_sites_broken_rule_files_in_one_warning_and_its_own_as_an_error(
    site: Site,
) -> None:
    site.rule("/a/fine")
    (site.rules / "a.yaml").write_text("domains: [127.0.0.1]\nbogus: 1\n", encoding="utf-8")
    (site.rules / "b.yaml").write_text("domains: [\n", encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0 and "stored 1 article," in done.stdout, done.stdout + done.stderr[-3000:]
    named = [line for line in done.stderr.splitlines() if "a.yaml" in line or "b.yaml" in line]
    assert len(named) == 1, named
    # A line of the command, as its other messages are, not a line of Scrapy's log.
    assert named == [
        "crawler temp: warning: 2 other rule files have errors: a.yaml, b.yaml; see `crawler rules check`"
    ], named
    assert " ERROR: " not in done.stderr, done.stderr[-3000:]
    assert not re.search(r"\[crawler\.[\w.]+\] WARNING: ", done.stderr), done.stderr[-3000:]
    (site.rules / f"{site.name}.yaml").write_text("domains: [127.0.0.1]\nbogus: 1\n", encoding="utf-8")
    own = site.temp()
    assert own.returncode == 1, own.stderr
    assert own.stderr.startswith(f"crawler temp: error: {site.rules / 'faults.yaml'}: bogus: unknown key"), (
        own.stderr
    )


def test_the_warning_of_other_broken_rule_files_suggests_checking_the_folder_as_the_crawler_was_run(
    site: Site,
) -> None:
    """The worker of a temp crawl suggests ``rules check`` the way the crawl was run: ``CRAWLER_COMMAND``
    and the ``--rules-dir`` given, so that it checks the folder the crawl read."""
    site.rule("/a/fine")
    (site.rules / "b.yaml").write_text("domains: [\n", encoding="utf-8")
    given = ("--rules-dir", str(site.rules))
    done = site.crawler(*given, "temp", site.name, *FAST_ARGS, CRAWLER_COMMAND="./run.sh crawler")
    assert done.returncode == 0 and "stored 1 article" in done.stdout, done.stdout + done.stderr[-3000:]
    assert (
        "./run.sh crawler temp: warning: 1 other rule file has errors: b.yaml; see `./run.sh crawler"
        f" --rules-dir {site.rules} rules check`"
    ) in done.stderr.splitlines(), done.stderr[-3000:]


def test_the_warnings_of_a_temp_crawl_are_its_own_lines_and_scrapys_log_keeps_its_level(site: Site) -> None:
    """`-s LOG_LEVEL=INFO` shows Scrapy's log at INFO, in its format, for diagnosing; the crawl's warnings
    stay lines of the command, once each."""
    site.rule("/a/fine")
    (site.rules / "b.yaml").write_text("domains: [\n", encoding="utf-8")
    done = site.crawler("temp", site.name, *FAST_ARGS, "-s", "LOG_LEVEL=INFO")
    assert done.returncode == 0 and "stored 1 article" in done.stdout, done.stdout + done.stderr[-3000:]
    lines = done.stderr.splitlines()
    said = "1 other rule file has errors: b.yaml; see `crawler rules check`"
    assert [line for line in lines if said in line] == [f"crawler temp: warning: {said}"], done.stderr[-3000:]
    assert any("[crawler.worker.spider] INFO: Serving" in line for line in lines), done.stderr[-3000:]
    assert any("[scrapy.core.engine] INFO: Spider opened" in line for line in lines), done.stderr[-3000:]


def test_queue_entries_that_are_no_requests_are_dead_lettered_once_and_never_run(site: Site) -> None:
    site.rule("/a/after-poison")
    marker = site.root / "imported"
    poison_module = site.root / "poisonmodule.py"
    poison_module.write_text(f"open({str(marker)!r}, 'w').close()\nclass Request: pass\n", encoding="utf-8")
    with EmbeddedRedis(site.data, watch_seconds=0) as redis_server:
        client = connect(redis_server.ensure())
        entry = {"url": "http://127.0.0.1/x", "_class": "poisonmodule.Request", "meta": {"site": "faults"}}
        client.zadd("crawler:queue:faults", {b"this is not JSON": -1e15, json.dumps(entry).encode(): -1e15})
        client.zadd("crawler:ready", {"faults": -1e15})
        client.close()
    done = site.crawler("temp", site.name, PYTHONPATH=str(site.root))
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stored 1 article," in done.stdout
    assert not marker.exists(), "the class an entry names is never imported"
    letters = site.dead()
    reasons = " | ".join(sorted(letter["reason"] for letter in letters))
    assert len(letters) == 2, reasons
    assert "names the class 'poisonmodule.Request'" in reasons
    assert "is not JSON" in reasons
    assert all(not letter["requeueable"] for letter in letters)
    assert site.status()["queue"] == {"queued": 0, "leased": 0, "expired": 0, "waiting": 0, "dead_letters": 2}


# --- the regular expressions' time, per page ------------------------------------------------------------


def test_a_rules_regular_expressions_share_one_time_budget_per_page(tmp_path: Path) -> None:
    import lxml.html

    from crawler.rules import RegexBudget, load_rule

    rule_file = tmp_path / "slow.yaml"
    rule_file.write_text(
        "domains: [news.test]\nstart_urls: ['http://news.test/']\nindex:\n  links: {allow: '(a|aa)+$'}\n",
        encoding="utf-8",
    )
    rule = load_rule(rule_file)
    links = "".join(f'<a href="/{"a" * 40}{n}b">x</a>' for n in range(200))
    root = lxml.html.document_fromstring(f"<html><body>{links}</body></html>")
    budget = RegexBudget(0.5)
    assert rule.article_links("http://news.test/", root, budget) == []
    # Each search may take 0.2 s: without the page's budget, 200 of them would take 40 s.
    assert rule.regex_timeouts <= 4, "the budget stops the searches once it is spent"
    assert budget.skipped >= 190


def test_an_index_page_past_the_link_limit_has_its_first_links_read_and_the_rest_counted(site: Site) -> None:
    """An index page of 100,000 article links held the crawl thread 6.9 s (one of 600,000, past a lease's
    60 s: fetched again): its first ``RULES_MAX_LINKS`` article links are read, the hrefs after them
    left out unread, counted and logged once, as a feed's entries past the limit are."""
    site.rule("/a/one", "/a/two", "/a/three", "/a/four", "/a/five")
    done = site.temp("-s", "RULES_MAX_LINKS=2")
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(site.stored()) == ["/a/one", "/a/two"]
    (said,) = [line for line in done.stderr.splitlines() if "past its first" in line]
    assert said.endswith(" has 3 links past its first 2, left out"), said
    assert "faults: the index page http://127.0.0.1:" in said, said


def test_an_article_page_past_the_link_limit_at_depth_2_has_its_first_links_followed_and_the_rest_counted(
    site: Site,
) -> None:
    """A rule of ``depth: 2`` follows the article links of its article pages: those are bounded by
    ``RULES_MAX_LINKS`` as an index page's are, the links after them counted and logged once."""
    site.rule("/linking/deep?n=5")
    rule_file = site.rules / f"{site.name}.yaml"
    rule_file.write_text("depth: 2\n" + rule_file.read_text("utf-8"), encoding="utf-8")
    done = site.temp("-s", "RULES_MAX_LINKS=2")
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(site.stored()) == ["/a/deep-0", "/a/deep-1", "/linking/deep?n=5"]
    (said,) = [line for line in done.stderr.splitlines() if "past its first" in line]
    assert said.endswith(" has 3 links past its first 2, left out"), said
    assert "faults: the article page http://127.0.0.1:" in said, said


# --- the network guard checks the address it connects to ----------------------------------------------

REBINDING = """
import socket, sys
real_getaddrinfo, real_gethostbyname = socket.getaddrinfo, socket.gethostbyname

def getaddrinfo(host, *args, **kwargs):  # what a check made before the connection would see
    if host == "rebind.test":
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 0))]
    return real_getaddrinfo(host, *args, **kwargs)

def gethostbyname(host):  # what the connection's own resolution sees
    return "127.0.0.1" if host == "rebind.test" else real_gethostbyname(host)

socket.getaddrinfo, socket.gethostbyname = getaddrinfo, gethostbyname
from crawler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_dns_rebinding_cannot_reach_a_private_address(site_server: SiteServer) -> None:
    env = {key: value for key, value in os.environ.items() if key != ALLOW_PRIVATE_NETWORKS_ENV}
    url = f"http://rebind.test:{site_server.port}/news/harbour-bridge.html"
    done = subprocess.run(
        [sys.executable, "-c", REBINDING, "extract", "--ignore-robots", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, done.stdout[:500]
    assert done.stdout == ""
    assert f"refusing to fetch {url}: rebind.test resolves to 127.0.0.1, a loopback address" in done.stderr


# --- pages that lie about their charset, and limits -----------------------------------------------------


def test_a_page_declaring_utf8_but_sent_in_gbk_is_stored_readable(site: Site) -> None:
    site.rule("/gbk-as-utf8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "declared utf-8" in done.stderr and "gb18030 (detected)" in done.stderr
    (article,) = site.stored().values()
    assert article["title"] == "长江大桥完成检修重新通车"
    assert "长江大桥于昨日清晨六时重新开放通行" in str(article["body"])
    assert "\ufffd" not in str(article["body"])


def test_a_utf16_page_without_a_byte_order_mark_is_read_as_its_content_type_says_not_taken_for_binary(
    site: Site,
) -> None:
    """Chinese in UTF-16 has a zero or control byte in one of every few bytes: a page so sent, its
    charset in its Content-Type and no byte order mark, was skipped as 'binary data'."""
    site.rule("/utf16")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Not an HTML page" not in done.stderr, done.stderr[-4000:]
    (article,) = site.stored().values()
    assert article["title"] == "长江大桥完成检修重新通车"
    assert "长江大桥于昨日清晨六时重新开放通行" in str(article["body"])


def test_a_gbk_pages_lone_0x80_is_read_as_the_euro_sign_and_leaves_its_charset_undoubted(site: Site) -> None:
    """A GB2312 page whose euro signs are the lone byte 0x80, as browsers write and read them in GBK: the
    crawl reads € (its 9 are no undecodable characters that set the page's charset aside or warn)."""
    site.rule("/gbk-euro")
    done = site.temp()
    assert done.returncode == 0 and "stored 1 article" in done.stdout, done.stdout + done.stderr[-4000:]
    assert "cannot be decoded" not in done.stderr and "declared gbk" not in done.stderr, done.stderr[-4000:]
    (article,) = site.stored().values()
    assert article["title"] == GBK_TITLE
    assert str(article["body"]) == "\n\n".join(GBK_EURO_PARAGRAPHS)


def test_a_page_declaring_utf8_but_sent_in_windows_1252_is_stored_readable(site: Site) -> None:
    """charset-normalizer's best guess for this French page is cp775, no web encoding: windows-1252, one of
    its next guesses, decodes it."""
    site.rule("/cp1252-as-utf8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "declared utf-8" in done.stderr and "windows-1252 (detected)" in done.stderr, done.stderr[-4000:]
    (article,) = site.stored().values()
    assert article["title"] == CP1252_TITLE
    assert str(article["body"]) == "\n\n".join(CP1252_PARAGRAPHS)


def test_a_rules_wrong_encoding_is_warned_of_once_a_site_and_counted_in_status(site: Site) -> None:
    """`encoding: utf8` on a site whose pages say gbk: the pages are read as gbk, the crawl says once which
    key of which file is wrong and what to set, and status counts the pages."""
    site.rule("/gbk", "/gbk?copy=2")
    rule_file = site.rules / f"{site.name}.yaml"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + "encoding: utf8\n", encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    said = " ".join(done.stderr.split())
    warning = f"{rule_file}: its `encoding: utf-8` leaves "
    assert said.count(warning) == 1, done.stderr[-4000:]
    fix = (
        "undecodable; the page's Content-Type says gbk, which decodes it: read as gbk instead; remove the"
        " `encoding` key, or set it to gbk"
    )
    assert fix in said, done.stderr[-4000:]
    assert {article["title"] for article in site.stored().values()} == {GBK_TITLE}
    status = site.crawler("status", "--format", "json")
    assert status.returncode == 0, status.stderr[-4000:]
    (shown,) = json.loads(status.stdout)["sites"]
    assert shown["rule_encoding_undecodable_24h"] == 2
    assert (
        "the rule's `encoding: utf-8` left characters undecodable (or read valid UTF-8 as other characters)"
        f" on 2 pages in 24 h: remove or fix it in {rule_file} (the crawl's warning says what the pages"
        f" declare; `crawler rules try {site.name} URL` shows what it reads of a page)"
    ) in shown["attention"]


def test_a_gbk_index_pages_article_link_is_requested_as_a_browser_requests_it(site: Site) -> None:
    """The link ``/a/长江?tag=新闻&mark=&#9972;`` of a GBK index page (no `encoding` key): its path in
    UTF-8, its query in GBK, the character GBK lacks as its character reference, as a browser sends it."""
    site.write_rule(RULE.format(start=site.server.url("/gbk-index")))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert list(site.stored()) == ["/a/%E9%95%BF%E6%B1%9F?tag=%D0%C2%CE%C5&mark=%26%239972%3B"]


def test_a_page_declaring_utf8_kept_in_the_rules_encoding_is_warned_of_and_counted_in_status(
    site: Site,
) -> None:
    """`encoding: gbk`, and a page that says utf-8 and is valid UTF-8 with too few multi-byte characters
    to prove it (GBK reads it without an error): read as the key says, warned of once and counted."""
    site.rule("/utf8-short", "/utf8-short?copy=2")
    rule_file = site.rules / f"{site.name}.yaml"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + "encoding: gbk\n", encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    said = " ".join(done.stderr.split())
    warning = f"{rule_file}: its `encoding: gbk` reads "
    assert said.count(warning) == 1, done.stderr[-4000:]
    assert "whose Content-Type says utf-8 and which is valid UTF-8, but with 4 multi-byte characters" in said
    assert {article["title"] for article in site.stored().values()} == {
        SHORT_UTF8_TITLE.encode().decode("gb18030")
    }
    (shown,) = site.status()["sites"]
    assert (shown["rule_encoding_unproven_utf8_24h"], shown["rule_encoding_undecodable_24h"]) == (2, 0)
    assert not any("encoding" in reason for reason in shown["attention"]), shown["attention"]


@pytest.mark.parametrize(
    ("path", "encoding", "page"),
    [("/utf8", "gbk", "Content-Type says utf-8"), ("/gb18030-meta", "utf-8", "<meta> says gb18030")],
    ids=["utf-8-pages-rule-gbk", "gb18030-pages-rule-utf-8"],
)
def test_a_page_the_rules_encoding_cannot_decode_is_stored_as_the_page_declares_it(
    site: Site, path: str, encoding: str, page: str
) -> None:
    """The rule's `encoding` leaves the page undecodable and the page's own declaration decodes it: the
    article is stored readable, and the crawl still says which key of which file to fix."""
    site.rule(path)
    rule_file = site.rules / f"{site.name}.yaml"
    rule_file.write_text(rule_file.read_text(encoding="utf-8") + f"encoding: {encoding}\n", encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    (article,) = site.stored().values()
    assert article["title"] == GBK_TITLE
    assert str(article["body"]) == "\n\n".join(GBK_PARAGRAPHS)
    said = " ".join(done.stderr.split())
    assert said.count(f"{rule_file}: its `encoding: {encoding}` leaves ") == 1, done.stderr[-4000:]
    read_as = page.rsplit(" ", 1)[1]
    fix = (
        f"the page's {page}, which decodes it: read as {read_as} instead; remove the `encoding` key,"
        f" or set it to {read_as}"
    )
    assert fix in said, done.stderr[-4000:]
    (shown,) = site.status()["sites"]
    assert shown["rule_encoding_undecodable_24h"] == 1


@pytest.mark.parametrize("path", ["/utf8-as-gb2312", "/utf8-as-gb2312?in=meta"], ids=["header", "meta"])
def test_a_page_declaring_gb2312_but_sent_in_utf8_is_warned_of_by_the_web_name_gbk(
    site: Site, path: str
) -> None:
    site.rule(path)
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"{path}: declared gbk, but " in done.stderr, done.stderr[-4000:]
    assert "gb18030" not in done.stderr
    (article,) = site.stored().values()
    assert article["title"] == "长江大桥完成检修重新通车"


@pytest.mark.parametrize(
    ("content_type", "head"),
    [("text/html; charset=gb2312", ""), ("text/html", '<meta charset="gb2312">')],
    ids=["header", "meta"],
)
def test_the_charset_a_misdeclaring_page_declares_is_named_without_decoding_it_again(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    content_type: str,
    head: str,
) -> None:
    """The page is decoded as it declares, then by detection; the charset it declares (in its Content-Type
    or its <meta>) is named from that first decoding, not by decoding the whole page a third time."""
    from scrapy.http import HtmlResponse, Request

    from extractors import encoding

    html = article_page(GBK_TITLE, GBK_PARAGRAPHS * 3, lang="zh").replace("<head>", f"<head>{head}")
    request = Request("http://127.0.0.1/news/bridge", meta={"site": "news", "kind": "article"})
    response = HtmlResponse(
        request.url, body=html.encode(), headers={"Content-Type": content_type}, request=request
    )
    decoded: list[str] = []
    full_decode = encoding._decoded

    def counted(data: bytes, name: str, source: encoding.Source) -> encoding.Decoded:
        decoded.append(source)
        return full_decode(data, name, source)

    with EmbeddedRedis(tmp_path / "redis") as server:
        spider = sites_spider(tmp_path, server.url)
        monkeypatch.setattr(encoding, "_decoded", counted)
        with caplog.at_level(logging.WARNING):
            rule, text = spider._page(response)
    assert rule is not None and text is not None and GBK_TITLE in text.text
    said = [record.getMessage() for record in caplog.records]
    assert any("/news/bridge: declared gbk, but " in line for line in said), said
    declared = "declared" if content_type.endswith("gb2312") else "meta"
    assert decoded == [declared, "detected"], "decoded by detection, not again to name its charset"


@pytest.mark.parametrize(
    ("body", "content_type", "decoded_by_scrapy"),
    [
        (article_page("Le pont", ["Un café à côté du pont."]).encode(), "text/html; charset=utf-8", False),
        (article_page("Le pont", ["Un café à côté du pont."]).encode("cp1252"), "text/html", False),
        (b"\xef\xbb\xbf" + article_page("Le pont", ["Un café."]).encode(), "text/html", True),
        (article_page(GBK_TITLE, GBK_PARAGRAPHS).encode("gbk") + b"\x80", "text/html; charset=gbk", False),
        (article_page(GBK_TITLE, GBK_PARAGRAPHS).encode("gbk") + b"\xff", "text/html; charset=gbk", True),
    ],
    ids=["utf-8", "cp1252", "byte-order-mark", "gbk-with-a-lone-0x80", "gbk-with-a-0xff"],
)
def test_a_page_is_decoded_once_on_the_crawl_thread_unless_scrapy_could_read_it_otherwise(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    body: bytes,
    content_type: str,
    decoded_by_scrapy: bool,
) -> None:
    """The text the rule's fields read is the one the crawl's own decoding made; Scrapy decodes the page
    again only when its reading may differ: a byte order mark, or U+FFFD, bytes that neither reads (a
    lone 0x80 of GBK is none: both read it as the euro sign)."""
    from scrapy.http import HtmlResponse, Request
    from w3lib.encoding import html_to_unicode

    from extractors import encoding

    request = Request("http://127.0.0.1/news/bridge", meta={"site": "news", "kind": "article"})
    response = HtmlResponse(request.url, body=body, headers={"Content-Type": content_type}, request=request)
    decoded = encoding.decode_checked(body, content_type)
    expected = response.replace(encoding=encoding.python_codec(decoded.encoding)).text
    scrapy_decodes: list[str] = []

    def counted(content_type: str | None, data: bytes, *args: Any, **kwargs: Any) -> tuple[str, str]:
        scrapy_decodes.append(content_type or "")
        return html_to_unicode(content_type, data, *args, **kwargs)

    with EmbeddedRedis(tmp_path / "redis") as server:
        spider = sites_spider(tmp_path, server.url)
        monkeypatch.setattr("scrapy.http.response.text.html_to_unicode", counted)
        rule, text = spider._page(response)
        assert rule is not None and text is not None
        assert text.text == expected
    assert bool(scrapy_decodes) is decoded_by_scrapy, scrapy_decodes


# Loaded by the crawl's processes (PYTHONPATH) before Scrapy or the crawler: notes each decoding of a whole
# page, by Scrapy (w3lib's html_to_unicode) or by the crawl (decode_checked), with the page's digest.
COUNT_DECODES = """
import hashlib
import os

import w3lib.encoding

import extractors.encoding


def _note(by, data):
    with open(os.environ["DECODES_LOG"], "a", encoding="utf-8") as log:
        log.write(by + " " + hashlib.sha256(data).hexdigest() + "\\n")


_html_to_unicode = w3lib.encoding.html_to_unicode
_decode_checked = extractors.encoding.decode_checked


def html_to_unicode(content_type, data, *args, **kwargs):
    _note("scrapy", data)
    return _html_to_unicode(content_type, data, *args, **kwargs)


def decode_checked(data, declared=None, given=None):
    _note("crawl", data)
    return _decode_checked(data, declared, given)


w3lib.encoding.html_to_unicode = html_to_unicode
extractors.encoding.decode_checked = decode_checked
"""


def test_a_crawls_pages_are_decoded_once_the_crawls_way_its_meta_refresh_check_included(site: Site) -> None:
    """Scrapy's meta refresh check reads the page the crawl decoded: an index page, a page that refreshes to
    an article, that article and another are each decoded once, by the crawl, never by Scrapy."""
    refreshed, plain = unique("refreshed"), unique("plain")
    site.rule(f"/refresh?to=/a/{refreshed}", f"/a/{plain}")
    hook = site.root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(COUNT_DECODES, encoding="utf-8")
    log = site.root / "decodes.log"
    done = site.crawler("temp", site.name, *FAST_ARGS, PYTHONPATH=str(hook), DECODES_LOG=str(log))
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert set(site.stored()) == {f"/a/{refreshed}", f"/a/{plain}"}
    decodes = log.read_text(encoding="utf-8").split()
    by, pages = decodes[0::2], decodes[1::2]
    assert "scrapy" not in by, decodes
    assert len(pages) == len(set(pages)) == 4, decodes


def test_an_undeclared_windows_1252_page_refreshes_to_the_url_the_crawl_reads_in_it(site: Site) -> None:
    """The meta refresh of a page that declares no charset is read as the crawl reads the page (windows-1252,
    detected), not as Scrapy's own detection would (cp775, which reads café as cafķ)."""
    site.rule("/refresh?to=/a/café-crème&in=cp1252")
    done = site.temp()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert set(site.stored()) == {"/a/caf%C3%A9-cr%C3%A8me"}


# How a page lost to the size limit (65,536 bytes) says what to do.
MAXSIZE_FIX = (
    "; a page this large needs a larger DOWNLOAD_MAXSIZE than 65,536 bytes: `-s DOWNLOAD_MAXSIZE=131072` on"
    " the crawl's command (worker, run or temp), then requeue it"
)


def test_a_response_cut_at_the_size_limit_is_dead_lettered_with_its_reason(site: Site) -> None:
    site.rule("/unsized?kb=200", "/a/small")
    done = site.temp("-s", "DOWNLOAD_MAXSIZE=65536")
    assert done.returncode == 0, done.stderr[-4000:]
    (letter,) = site.dead()
    assert "larger than DOWNLOAD_MAXSIZE (65,536 bytes)" in letter["reason"], letter
    assert letter["reason"].endswith(MAXSIZE_FIX), letter
    assert list(site.stored()) == ["/a/small"]


def test_a_response_declared_past_the_size_limit_is_dead_lettered_in_the_words_of_one_cut_at_it(
    site: Site,
) -> None:
    """A Content-Length over DOWNLOAD_MAXSIZE makes Scrapy give the download up before its body, saying so
    in its own words ("Expected to receive 1048576 bytes which is larger than download max size (65536)
    in request <GET ...>."), which were the dead letter's reason; said as for a page cut at the limit."""
    site.rule("/large?mb=1", "/a/small")
    done = site.temp("-s", "DOWNLOAD_MAXSIZE=65536")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "skipped 0, errors 1 (size limit: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        "download cancelled: the response was larger than DOWNLOAD_MAXSIZE (65,536 bytes):"
        " 1,048,576 bytes by its Content-Length" + MAXSIZE_FIX
    ), letter["reason"]
    assert list(site.stored()) == ["/a/small"]


def test_an_article_whose_body_is_past_the_length_limit_is_dead_lettered_naming_it_and_the_limit(
    site: Site,
) -> None:
    """A page whose rule's body was one line of 20 MB was stored whole: its text work (cleaning, summaries,
    fingerprints) took about 40 bytes of memory a character, 850 MB at the worker's peak, for a body no
    MongoDB store could write (16 MB a document)."""
    site.rule("/one-line?chars=3001", "/a/small")
    done = site.temp("-s", "TEXT_MAX_BODY_CHARS=2000")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (body too long: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        f"{site.server.url('/one-line?chars=3001')}: the rule's body is 3,001 characters, over"
        " TEXT_MAX_BODY_CHARS (2,000): no article is that long; if this one is, `-s TEXT_MAX_BODY_CHARS=3001`"
        " on the crawl's command (worker, run or temp), then requeue it"
    ), letter["reason"]
    assert list(site.stored()) == ["/a/small"]


def test_an_article_whose_body_from_qread_is_past_the_length_limit_is_dead_lettered_naming_it(
    site: Site,
) -> None:
    """The length limit held the rule's body only: a page whose rule reads no body, which qRead reads
    whole, one line of 20 MB, was stored whole, its text work taking the worker's memory all the same."""
    site.rule("/one-line-outside?chars=3001", "/a/small")
    done = site.temp("-s", "TEXT_MAX_BODY_CHARS=2000")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (body too long: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        f"{site.server.url('/one-line-outside?chars=3001')}: the body qRead read from the page is 3,001"
        " characters, over TEXT_MAX_BODY_CHARS (2,000): no article is that long; if this one is,"
        " `-s TEXT_MAX_BODY_CHARS=3001` on the crawl's command (worker, run or temp), then requeue it"
    ), letter["reason"]
    assert list(site.stored()) == ["/a/small"]


def test_status_of_a_site_whose_rule_file_broke_flags_no_field_its_rule_never_had(site: Site) -> None:
    """The crawl counted every standard field a page lacked, the rule's or not (author, published); status,
    which cannot read a broken rule's fields, took them from those counters: "field author found nothing
    on any page" of a rule with no author."""
    site.rule(*(f"/a/field{n}" for n in range(6)))
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    rule = site.rules / f"{site.name}.yaml"
    rule.write_text(rule.read_text(encoding="utf-8")[:60], encoding="utf-8")  # cut short: invalid YAML
    (report,) = site.status()["sites"]
    assert report["attention"][0] == (
        f"rule file has errors: {rule}: `crawler rules check {rule}` lists them"
    ), report["attention"]
    assert {"author", "published"}.isdisjoint(field["field"] for field in report["fields"]), report["fields"]
    assert not any("field " in reason for reason in report["attention"]), report["attention"]


def test_a_gzip_page_past_the_size_limit_once_decompressed_is_dead_lettered_as_an_uncompressed_one_is(
    site: Site,
) -> None:
    """Scrapy's decompression gives such a response up as an IgnoreRequest, which a crawl took for a skip:
    acknowledged with no dead letter, so raising DOWNLOAD_MAXSIZE could not get the page back."""
    site.rule("/large-gzip?mb=1", "/a/small")
    done = site.temp("-s", "DOWNLOAD_MAXSIZE=65536")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "skipped 0, errors 1 (size limit: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["url"].endswith("/large-gzip?mb=1"), letter
    assert "exceeded DOWNLOAD_MAXSIZE (65536 B) during decompression" in letter["reason"], letter
    assert letter["reason"].endswith(MAXSIZE_FIX), letter
    assert list(site.stored()) == ["/a/small"]


def test_a_json_document_at_an_article_or_index_url_is_a_page_with_no_article_not_a_spider_error(
    site: Site,
) -> None:
    """Scrapy parses a JSON response's selector as JSON, whose root (a dict) the rule's XPath failed on."""
    site.rule("/api-object", "/a/small")
    (site.rules / "api.yaml").write_text(RULE.format(start=site.server.url("/api-object")), encoding="utf-8")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith(
        "fetched 3 pages, stored 1 article, skipped 1 (not an HTML page: 1), errors 0\n"
    ), done.stdout
    assert "Not an HTML page (application/json), skipped: http://" in done.stderr, done.stderr[-4000:]
    assert site.dead() == []
    assert list(site.stored()) == ["/a/small"]
    index = site.crawler("temp", "api")
    assert index.returncode == 0, index.stderr[-4000:]
    assert index.stdout.startswith(
        "fetched 1 page, stored 0 articles, skipped 1 (not an HTML page: 1), errors 0\n"
    ), index.stdout
    assert "Traceback" not in index.stderr, index.stderr[-4000:]


def test_a_binary_page_at_an_article_url_is_warned_of_naming_what_it_was_sent_as(site: Site) -> None:
    """The warning of a page that is no text said 'Not a text page, skipped: URL', not what it was (a JSON
    document's names its type, as docs/cli.md says of both)."""
    site.rule("/binary", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith(
        "fetched 3 pages, stored 1 article, skipped 1 (not an HTML page: 1), errors 0\n"
    ), done.stdout
    said = f"Not an HTML page (application/octet-stream), skipped: {site.server.url('/binary')}"
    assert said in done.stderr, done.stderr[-4000:]
    assert site.dead() == []


def test_a_binary_page_sent_as_html_is_no_article_and_is_warned_of_naming_what_it_looks_like(
    site: Site,
) -> None:
    """A body that is no text whatever its Content-Type says (an image sent as text/html) was read as HTML
    and stored: an article of mojibake, its body from qRead."""
    site.rule("/binary?type=text/html", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith(
        "fetched 3 pages, stored 1 article, skipped 1 (not an HTML page: 1), errors 0\n"
    ), done.stdout
    url = site.server.url("/binary?type=text/html")
    said = re.search(
        r"Not an HTML page \(text/html, but it looks like binary data \(\d+% control bytes in the"
        r" first 8192 bytes\)\), skipped: (\S+)",
        done.stderr,
    )
    assert said is not None and said[1] == url, done.stderr[-4000:]
    assert site.dead() == []
    assert list(site.stored()) == ["/a/small"]


def test_pages_that_are_no_html_are_counted_in_status_with_a_note_saying_where_each_is_named(
    site: Site,
) -> None:
    """A page skipped as no HTML page (binary data, an image sent as text/html) was counted
    (crawl/not_text/<site>) but shown nowhere: no error, no dead letter, no skip in the summary, not in
    `crawler status`; only the crawl's warning said it. The summary line's skips name them."""
    site.rule("/binary", "/binary?type=text/html", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith(
        "fetched 4 pages, stored 1 article, skipped 2 (not an HTML page: 2), errors 0\n"
    ), done.stdout
    (shown,) = site.status()["sites"]
    assert shown["not_html_24h"] == 2, shown
    assert "2 pages in 24 h were no HTML page (binary data, an image, a JSON document...), not read: the" in (
        " ".join(shown["notes"])
    ), shown["notes"]


def test_an_article_nested_deeper_than_libxml2_parses_is_stored_with_its_text(tmp_path: Path) -> None:
    """An article page whose article stands 100,000 elements deep (a hostile or broken page) lost its
    text: libxml2 stops parsing at 2,048 levels, so neither the rule nor qRead found a body, and the page
    was skipped as 'no body' though its text was there. qRead reads it flat past 1,024 levels."""
    pages = tmp_path / "pages"
    pages.mkdir()
    depth = 100_000
    page = generated_article("deep").replace(
        '<div class="article">', "<div>" * depth + '<div class="article">', 1
    )
    (pages / "deep.html").write_text(
        page.replace("</body>", "</div>" * depth + "</body>", 1), encoding="utf-8"
    )
    with serving(pages, tmp_path / "server.log") as server:
        site = Site(server, tmp_path)
        site.rule("/deep.html", "/a/small")
        done = site.temp()
        stored = site.stored()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 3 pages, stored 2 articles, skipped 0, errors 0\n"), done.stdout
    assert stored["/deep.html"]["body"] == generated_text("deep"), stored["/deep.html"]["body"]


def test_the_rules_fields_of_an_article_nested_deeper_than_libxml2_parses_see_its_whole_tree(
    tmp_path: Path,
) -> None:
    """The rule's fields, read from Scrapy's selector, saw the tree libxml2 cut at 2,048 levels: a field
    past the nest (the page's footer) found nothing, and the headline, in the nest, was read from the
    page's <title>. They see the page read flat past 1,024 levels, as qRead does."""
    pages = tmp_path / "pages"
    pages.mkdir()
    depth = 100_000
    page = generated_article("deep").replace("<title>Article deep</title>", "<title>Deep | News</title>", 1)
    page = page.replace('<div class="article">', "<div>" * depth + '<div class="article">', 1)
    (pages / "deep.html").write_text(
        page.replace('<div class="footer">', "</div>" * depth + '<div class="footer">', 1), encoding="utf-8"
    )
    with serving(pages, tmp_path / "server.log") as server:
        site = Site(server, tmp_path)
        site.rule("/deep.html", "/a/small")
        rule = site.rules / f"{site.name}.yaml"
        footer = "    footer: {xpath: \"//div[@class='footer']/a[1]\"}\n"
        rule.write_text(rule.read_text(encoding="utf-8") + footer, encoding="utf-8")
        done = site.temp()
        stored = site.stored()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 3 pages, stored 2 articles, skipped 0, errors 0\n"), done.stdout
    deep = stored["/deep.html"]
    assert (deep["title"], deep["fields"]) == ("Article deep", {"footer": "About"}), deep
    assert deep["body"] == generated_text("deep"), deep["body"]


def test_an_article_page_with_no_body_is_a_skip_the_summary_names(site: Site) -> None:
    """An article page whose body neither the rule nor qRead finds was dropped (store/dropped_empty/<site>)
    with a warning alone: the summary read "skipped 0"; it names the skip. The warning was Scrapy's log
    line amid the command's output, '2026-11-29 19:16:02 [scrapy.core.scraper] WARNING: Dropped: no body
    in ...', which the summary says: it is logged at INFO (a worker's log)."""
    site.rule("/no-body/nothing", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("fetched 3 pages, stored 1 article, skipped 1 (no body: 1), errors 0\n"), (
        done.stdout
    )
    assert "no body in" not in done.stderr, done.stderr
    assert site.dead() == []


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_a_page_that_says_it_is_compressed_and_is_not_is_dead_lettered_saying_so(
    site: Site, encoding: str
) -> None:
    """Only zlib's error was recognised: a body that is no gzip at all, or no Brotli or Zstandard, was an
    error of kind BadGzipFile, 'error' (Brotli's exception) or ZstdError, its reason the bare exception."""
    site.rule(f"/uncompressed?as={encoding}", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (content encoding: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"].startswith(
        "its body, sent compressed (Content-Encoding), could not be decompressed: "
    ), letter
    assert list(site.stored()) == ["/a/small"]


def test_a_body_no_text_in_a_content_encoding_the_crawler_does_not_know_is_refused_naming_it() -> None:
    """A compressed body of an encoding no decompressor here knows (`Content-Encoding: foo`, or `gzip,
    foo`, foo applied last) was given on undecoded, skipped as no HTML page; it is a decompression error
    (dead-lettered as `content encoding`) naming the encoding. The known ones under it are not tried."""
    from scrapy.utils.test import get_crawler

    middleware = WholeDecompressionMiddleware.from_crawler(get_crawler())
    for header in ("foo", "gzip, foo", "gzip, Foo, identity"):
        answer = Response(
            "http://h.test/",
            headers={"Content-Encoding": header, "Content-Type": "text/html"},
            body=COMPRESSED["gzip"],
        )
        with pytest.raises(DECOMPRESSION_ERRORS) as refused:
            middleware.process_response(Request("http://h.test/"), answer)
        assert str(refused.value) == (
            "its Content-Encoding 'foo' is none the crawler decompresses (gzip, deflate, br, zstd, x-gzip)"
        ), header


def test_a_page_whose_gzip_body_cannot_be_decompressed_is_dead_lettered_saying_so(site: Site) -> None:
    site.rule("/bad-gzip", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (content encoding: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"].startswith(
        "its body, sent compressed (Content-Encoding), could not be decompressed: Error -3 while"
        " decompressing data: "
    ), letter
    assert list(site.stored()) == ["/a/small"]


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_page_whose_compressed_body_is_cut_short_is_dead_lettered_saying_so(
    site: Site, encoding: str
) -> None:
    """A body whose compressed data ends before its stream does (the answer complete by its
    Content-Length) was decompressed as far as it went, as Scrapy's decompression does, and its first half
    stored as the article, with no error nor warning; a body cut short by the connection is an error."""
    site.rule(f"/cut-compressed/cut?as={encoding}", "/a/small")
    done = site.temp()
    assert done.returncode == 0, done.stderr[-4000:]
    assert "errors 1 (content encoding: 1)" in done.stdout, done.stdout
    (letter,) = site.dead()
    assert letter["reason"] == (
        "its body, sent compressed (Content-Encoding), could not be decompressed: its compressed data"
        f" ({encoding}) ends before the end of its stream: the page was cut short"
    ), letter
    assert list(site.stored()) == ["/a/small"]


PAGE = ("<p>" + " ".join(f"word{n}" for n in range(20_000)) + "</p>").encode()
COMPRESSED = {
    "gzip": gzip.compress(PAGE),
    "deflate": zlib.compress(PAGE),
    "br": brotli.compress(PAGE),
    "zstd": zstd.compress(PAGE),
}


@pytest.mark.parametrize("encoding", sorted(COMPRESSED))
def test_a_compressed_body_is_decompressed_whole_and_refused_once_cut(encoding: str) -> None:
    whole = COMPRESSED[encoding]
    assert decompressed(whole, encoding, 0) == PAGE
    for cut in (whole[:-12], whole[: len(whole) // 2]):
        with pytest.raises(CompressedBodyCut, match=f"^its compressed data \\({encoding}\\) ends before"):
            decompressed(cut, encoding, 0)
    # Past the size limit, Scrapy's error, which its decompression turns into a refusal of the body.
    with pytest.raises(ValueError, match="exceeded the specified maximum"):
        decompressed(whole, encoding, 1000)


@pytest.mark.parametrize("encoding", sorted(COMPRESSED))
def test_an_answer_with_no_body_sent_with_a_content_encoding_is_no_body_cut_short(encoding: str) -> None:
    """A 304 (a regular grab's conditional index page) or a 204 sent with the Content-Encoding its page
    would have, and no body, was refused as 'its compressed data (br) ends before the end of its stream'
    (deflate too; gzip and zstd passed), where Scrapy's decompression gives it on, empty."""
    from scrapy.utils.test import get_crawler

    middleware = WholeDecompressionMiddleware.from_crawler(get_crawler())
    for status in (304, 204):
        answer = Response("http://h.test/", status=status, headers={"Content-Encoding": encoding}, body=b"")
        given = middleware.process_response(Request("http://h.test/"), answer)
        assert isinstance(given, Response)
        assert (given.status, given.body) == (status, b"")
        assert b"Content-Encoding" not in given.headers


def test_compressed_bodies_of_several_parts_or_of_other_kinds_are_decompressed_as_scrapy_does() -> None:
    more = b"<p>more</p>"
    members = COMPRESSED["gzip"] + gzip.compress(more)
    assert decompressed(members, "x-gzip", 0) == PAGE + more
    with pytest.raises(CompressedBodyCut):
        decompressed(members[:-5], "gzip", 0)
    assert decompressed(COMPRESSED["gzip"] + b"\0\0\0", "gzip", 0) == PAGE  # padding after the member
    # A wrong gzip check value: the page kept, as Scrapy keeps it.
    bad_check = COMPRESSED["gzip"][:-8] + b"\0" * 4 + COMPRESSED["gzip"][-4:]
    assert decompressed(bad_check, "gzip", 0) == PAGE
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    deflated = raw.compress(PAGE) + raw.flush()
    assert decompressed(deflated, "deflate", 0) == PAGE
    with pytest.raises(CompressedBodyCut):
        decompressed(deflated[:-20], "deflate", 0)
    assert decompressed(COMPRESSED["zstd"] + zstd.compress(more), "zstd", 0) == PAGE + more
    # Not a stream of its encoding: the decompressor's error, dead-lettered as content encoding.
    for encoding in COMPRESSED:
        with pytest.raises(DECOMPRESSION_ERRORS):
            decompressed(PAGE, encoding, 0)
