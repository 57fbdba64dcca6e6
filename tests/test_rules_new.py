"""``crawler rules new SITE URL``: a site's first rule drafted from one of its pages. Three small fake sites
of three shapes, served by the test site server on 127.0.0.1 (dated slugs with a feed and rel=next; a
Chinese site of ``content_12345.htm`` pages and 下一页; numeric ids in folders), each drafted and then
crawled with ``crawler temp`` end to end; the pattern guessing on lists of links; the errors."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html
import pytest
import yaml
from conftest import SiteServer, serving
from crawlsite import Site
from siteserver import feed_document

import crawler.cli.rules
from crawler.cli.main import main
from crawler.cli.pages import Page
from crawler.requests import INDEX, listing_request
from crawler.rules import load_rule
from crawler.rules.draft import (
    Draft,
    DraftError,
    LinkPattern,
    draft_feed_rule,
    draft_rule,
    guess_title,
    robots_sitemaps,
    rule_text,
)
from crawler.rules.feeds import read_feed
from crawler.rules.load import parse_rule

WORDS = (
    "council harbour bridge ferry library market square residents plan vote report meeting chair traffic"
    " week month year school river museum park station road budget mayor police weather festival garden"
    " hospital teachers workers builders repairs opening hours timetable tickets bus tram cyclists"
).split()
ZH_CHARACTERS = (
    "市政府昨日召开新闻发布会介绍了城市建设最新进展"
    "有关负责人表示相关工作将按照计划稳步推进确保年底前全面完成各项任务"
)


def _article(title: str, lang: str = "en") -> str:
    """An article page whose text is its own (random words seeded by its title: no two are near
    duplicates, which the store would keep once)."""
    chance = random.Random(title)
    if lang == "zh":
        paragraphs = ["".join(chance.choices(ZH_CHARACTERS, k=120)) + "。" for _ in range(5)]
    else:
        paragraphs = [" ".join(chance.choices(WORDS, k=60)).capitalize() + "." for _ in range(5)]
    body = "\n".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title></head>'
        f'<body><nav><a href="/">Home</a></nav><article><h1>{title}</h1>{body}</article></body></html>'
    )


def _index(title: str, links: list[tuple[str, str]], extra_head: str = "", lang: str = "en") -> str:
    items = "\n".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>{extra_head}'
        f"</head><body><ul>{items}</ul></body></html>"
    )


def _write(root: Path, path: str, html: str) -> None:
    file = root / path.lstrip("/")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(html, encoding="utf-8")


EN_ARTICLES = [
    "/en/2026/11/28/harbour-bridge-reopens-to-traffic.html",
    "/en/2026/11/28/new-ferry-timetable-starts-monday.html",
    "/en/2026/11/27/library-extends-weekend-opening-hours.html",
    "/en/2026/11/27/council-delays-vote-on-parking-plan.html",
]
EN_PAGE_2 = ["/en/2026/11/26/market-square-trees-replanted-this-week.html"]
ZH_ARTICLES = ["/zh/news/content_10231.htm", "/zh/news/content_10232.htm", "/zh/news/content_10233.htm"]
ZH_PAGE_2 = ["/zh/news/content_10230.htm"]
ID_ARTICLES = ["/ids/story/48213/", "/ids/story/48214/", "/ids/story/48215/"]
# A page linking each article and its AMP copy (slug.amp.html, the same text).
AMP_ARTICLES = [
    "/amp/news/2026/11/28/mayor-opens-river-park.html",
    "/amp/news/2026/11/27/tram-timetable-changes.html",
]
# A site whose pages' <title> carries its name: "Mayor opens river park | City News".
SUFFIXED_SLUGS = ["mayor-opens-river-park", "tram-timetable-changes", "school-roof-repaired", "new-bus-lane"]
# The articles of the sites whose pages give their dates (_build_dated_sites), and the dates.
DATED_SLUGS = ["harbour-bridge-reopens", "ferry-timetable-changes", "library-opens-late", "tram-line-goes-on"]
DATED_TIMES = [f"2026-11-{20 + number}T10:3{number}:00+08:00" for number in range(len(DATED_SLUGS))]
# The test server's feed of the English site's articles (its entries link to them, relative).
FEED_OF_EN = "/feed?to=" + ",".join(EN_ARTICLES)


def _build_sites(root: Path) -> None:
    """The fake sites' files under ``root``."""
    nav = [("/en/tag/transport/", "Transport"), ("/en/about.html", "About"), ("/en/category/local/", "Local")]
    feed = '<link rel="alternate" type="application/rss+xml" href="/feed?to=/en/2026/11/28/x.html">'
    _write(
        root,
        "/en/index.html",
        _index("Courier", [*nav, *((a, a) for a in EN_ARTICLES), ("page2.html", "Next ›")], feed),
    )
    _write(root, "/en/page2.html", _index("Courier, page 2", [*nav, *((a, a) for a in EN_PAGE_2)]))
    for path in EN_ARTICLES + EN_PAGE_2:
        _write(root, path, _article(path.rsplit("/", 1)[1].removesuffix(".html").replace("-", " ")))
    zh_nav = [("/zh/about.shtml", "关于我们"), ("/zh/list_1.shtml", "1")]
    _write(
        root,
        "/zh/list_1.shtml",
        _index("新闻", [*zh_nav, *((a, "新闻") for a in ZH_ARTICLES), ("list_2.shtml", "下一页")], lang="zh"),
    )
    page_2 = _index("新闻 2", [*zh_nav, *((a, "新闻") for a in ZH_PAGE_2)], lang="zh")
    _write(root, "/zh/list_2.shtml", page_2)
    for number, path in enumerate(ZH_ARTICLES + ZH_PAGE_2):
        _write(root, path, _article(f"城市建设新闻第{number}号", "zh"))
    id_nav = [("/ids/", "Home"), ("/ids/login/", "Log in"), ("/ids/page/2/", "2")]
    _write(root, "/ids/index.html", _index("Ids", [*id_nav, *((a, a) for a in ID_ARTICLES)]))
    for number, path in enumerate(ID_ARTICLES):
        _write(root, path + "index.html", _article(f"Story number {number}"))
    amp_links = [(link, "a") for article in AMP_ARTICLES for link in (article, article[:-5] + ".amp.html")]
    _write(root, "/amp/index.html", _index("Amp", [("/amp/about/", "About"), *amp_links]))
    for path, _ in amp_links:
        _write(root, path, _article(path.rsplit("/", 1)[1].split(".")[0].replace("-", " ")))
    _write(root, "/nav/index.html", _index("Nav only", [("/nav/about/", "About"), ("/nav/tag/x/", "X")]))
    for folder, og in (("sfx", "{title} | City News"), ("og", "{title}")):
        links = [(f"/{folder}/2026/11/{slug}.html", slug) for slug in SUFFIXED_SLUGS]
        _write(root, f"/{folder}/index.html", _index("City News", [(f"/{folder}/about/", "About"), *links]))
        for path, slug in links:
            title = slug.replace("-", " ").capitalize()
            meta = f'<meta property="og:title" content="{og.format(title=title)}">'
            head = f"<title>{title} | City News</title>{meta}"
            page = _article(title).replace(f"<title>{title}</title>", head)
            _write(root, path, page.replace("<nav>", '<nav><a href="/"><img alt="City News"></a>'))
    _build_dated_sites(root)
    advertised = f'<link rel="alternate" type="application/rss+xml" href="{FEED_OF_EN}">'
    _write(root, "/feedonly/index.html", _index("Feed only", [("/feedonly/about/", "About")], advertised))


def _build_dated_sites(root: Path) -> None:
    """Sites whose articles give their publication date: /dated-meta/ in an article:published_time meta,
    JSON-LD and a <time>; /dated-ld/ in JSON-LD and two <time>s (the article's, a comment's); /dated-time/
    in a <time> alone; /dated-some/ in a <time> on half its articles."""
    for folder in ("meta", "ld", "time", "some"):
        links = [(f"/dated-{folder}/2026/11/{slug}.html", slug) for slug in DATED_SLUGS]
        _write(root, f"/dated-{folder}/index.html", _index("Courier", [("/about/", "About"), *links]))
        for number, (path, slug) in enumerate(links):
            when = DATED_TIMES[number]
            meta = f'<meta property="article:published_time" content="{when}">'
            data = f'{{"@context": "https://schema.org", "@type": "NewsArticle", "datePublished": "{when}"}}'
            ld = f'<script type="application/ld+json">{data}</script>'
            time = f'<time datetime="{when}">{slug}</time>'
            comment = '<aside><time datetime="2026-11-29T08:00:00Z">a reader wrote</time></aside>'
            head, body = {
                "meta": (meta + ld, time),
                "ld": (ld, time + comment),
                "time": ("", time),
                "some": ("", time if number % 2 else ""),
            }[folder]
            page = _article(slug.replace("-", " ")).replace("</head>", head + "</head>")
            _write(root, path, page.replace("</article>", body + "</article>"))


@pytest.fixture(scope="module")
def fake_sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteServer]:
    root = tmp_path_factory.mktemp("fake-sites")
    _build_sites(root)
    with serving(root, tmp_path_factory.mktemp("fake-sites-log") / "stderr.log") as server:
        yield server


def _drafted(site: Site, url: str, *more: str) -> tuple[int, str, str]:
    done = site.crawler("rules", "new", site.name, url, "--allow-private", *more)
    return done.returncode, done.stdout, done.stderr


def _drafted_from_feed(site: Site, feed: str) -> tuple[dict[str, Any], str]:
    """The rule `rules new` drafted for site from the URL of a feed, checked to read that feed; and the
    command's stdout."""
    code, stdout, stderr = _drafted(site, feed)
    assert code == 0, stderr
    document = yaml.safe_load((site.rules / f"{site.name}.yaml").read_text(encoding="utf-8"))
    assert document["feeds"] == [feed]
    return document, stdout


@pytest.mark.parametrize(
    ("path", "pattern", "articles", "next_xpath"),
    [
        (
            "/en/index.html",
            r"^https?://[^/]+/en/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$",
            EN_ARTICLES + EN_PAGE_2,
            "//a[normalize-space(.)='Next ›']/@href",
        ),
        (
            "/zh/list_1.shtml",
            r"^https?://[^/]+/zh/news/content_\d+\.htm$",
            ZH_ARTICLES + ZH_PAGE_2,
            "//a[normalize-space(.)='下一页']/@href",
        ),
        ("/ids/index.html", r"^https?://[^/]+/ids/story/\d+/$", ID_ARTICLES, None),
        (
            "/amp/index.html",
            r"^https?://[^/]+/amp/news/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$",
            AMP_ARTICLES,
            None,
        ),
    ],
)
def test_drafted_rule_crawls_the_site(
    fake_sites: SiteServer,
    tmp_path: Path,
    path: str,
    pattern: str,
    articles: list[str],
    next_xpath: str | None,
) -> None:
    site = Site(fake_sites, tmp_path, name="drafted")
    code, stdout, stderr = _drafted(site, fake_sites.url(path))
    assert code == 0, stderr
    rule_path = site.rules / "drafted.yaml"
    assert f"wrote {rule_path} (1 rule ok" in stdout
    document = yaml.safe_load(rule_path.read_text(encoding="utf-8"))
    assert document["domains"] == ["127.0.0.1"]
    assert document["start_urls"] == [fake_sites.url(path)]
    assert document["allow_private_addresses"] is True
    assert document["index"]["links"]["allow"] == [pattern]
    assert document["index"].get("next_page") == next_xpath
    # The test server's robots.txt names a sitemap: the rule reads it (its one page is no article link).
    assert document["sitemaps"] == [fake_sites.url("/sitemap.xml?to=/a/from-robots")]
    assert "# schedule: {every: 1h}" in rule_path.read_text(encoding="utf-8")
    first = fake_sites.url(articles[0])
    assert f"crawler rules try drafted {first}" in stdout
    assert "crawler temp drafted" in stdout
    load_rule(rule_path)

    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    stored = site.stored()
    assert sorted(stored) == sorted(articles)
    assert all(len(article["body"]) > 200 for article in stored.values())
    assert "repost" not in crawl.stdout + crawl.stderr  # no AMP copy fetched beside its article


def test_the_feed_the_page_advertises_is_in_the_rule(fake_sites: SiteServer, tmp_path: Path) -> None:
    site = Site(fake_sites, tmp_path, name="courier")
    code, stdout, stderr = _drafted(site, fake_sites.url("/en/index.html"))
    assert code == 0, stderr
    document = yaml.safe_load((site.rules / "courier.yaml").read_text(encoding="utf-8"))
    assert document["feeds"] == [fake_sites.url("/feed?to=/en/2026/11/28/x.html")]
    assert f"feeds          {fake_sites.url('/feed?to=/en/2026/11/28/x.html')}" in stdout


def test_an_existing_rule_is_kept_without_force(fake_sites: SiteServer, tmp_path: Path) -> None:
    site = Site(fake_sites, tmp_path, name="kept")
    site.rules.mkdir(parents=True)
    rule_path = site.rules / "kept.yaml"
    rule_path.write_text("domains: [example.com]\n", encoding="utf-8")
    code, _, stderr = _drafted(site, fake_sites.url("/ids/index.html"))
    assert code == 2
    assert f"{rule_path} exists already: pass --force to replace it" in stderr
    assert rule_path.read_text(encoding="utf-8") == "domains: [example.com]\n"
    code, _, stderr = _drafted(site, fake_sites.url("/ids/index.html"), "--force")
    assert code == 0, stderr
    assert "/ids/story/" in rule_path.read_text(encoding="utf-8")


def test_a_rule_file_made_while_the_page_is_fetched_is_kept_without_force(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is checked before the fetch and written after it: one made meanwhile (by hand, by another
    `rules new`) is not overwritten without --force; with it, it is replaced, whole."""
    rules = tmp_path / "rules"
    rules.mkdir()
    rule_path = rules / "raced.yaml"
    html = _index("Ids", [(a, a) for a in ID_ARTICLES]).encode()

    def fetched(source: str, **_: object) -> Page:
        rule_path.write_text("domains: [mine.example]\n", encoding="utf-8")
        return Page(source, html, url=source, content_type="text/html; charset=utf-8")

    monkeypatch.setattr(crawler.cli.rules, "read_page", fetched)
    monkeypatch.setenv("CRAWLER_RULES_DIR", str(rules))
    assert main(["rules", "new", "raced", "https://ids.example/ids/"]) == 2
    assert f"{rule_path} was made while the page was fetched: pass --force" in capsys.readouterr().err
    assert rule_path.read_text(encoding="utf-8") == "domains: [mine.example]\n"
    assert [entry.name for entry in rules.iterdir()] == ["raced.yaml"]
    assert main(["rules", "new", "raced", "https://ids.example/ids/", "--force"]) == 0
    assert "/ids/story/" in rule_path.read_text(encoding="utf-8")
    assert [entry.name for entry in rules.iterdir()] == ["raced.yaml"]


@pytest.mark.parametrize("code", [errno.EPERM, errno.EXDEV, errno.ENOTSUP])
def test_a_folder_without_hard_links_gets_the_rule_by_an_exclusive_create(
    code: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule file was written by a hard link of a temporary file, which a vfat or exFAT folder (EPERM), or
    some network shares, refuse: `rules new` said 'cannot write PATH: [Errno 1] Operation not permitted'
    and wrote nothing there. Where the link fails the file is made by an exclusive create, which still
    keeps a file made meanwhile without --force."""
    rules = tmp_path / "rules"
    rules.mkdir()
    rule_path = rules / "vfat.yaml"
    html = _index("Ids", [(a, a) for a in ID_ARTICLES]).encode()
    made_meanwhile = False

    def fetched(source: str, **_: object) -> Page:
        if made_meanwhile:
            rule_path.write_text("domains: [mine.example]\n", encoding="utf-8")
        return Page(source, html, url=source, content_type="text/html; charset=utf-8")

    def no_link(source: object, target: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(crawler.cli.rules, "read_page", fetched)
    monkeypatch.setattr(os, "link", no_link)
    monkeypatch.setenv("CRAWLER_RULES_DIR", str(rules))
    assert main(["rules", "new", "vfat", "https://ids.example/ids/"]) == 0, capsys.readouterr().err
    assert f"wrote {rule_path} (1 rule ok" in capsys.readouterr().out
    assert "/ids/story/" in rule_path.read_text(encoding="utf-8")
    assert [entry.name for entry in rules.iterdir()] == ["vfat.yaml"]
    assert main(["rules", "new", "vfat", "https://ids.example/ids/"]) == 2
    assert f"{rule_path} exists already: pass --force" in capsys.readouterr().err
    rule_path.unlink()
    made_meanwhile = True
    assert main(["rules", "new", "vfat", "https://ids.example/ids/"]) == 2
    assert f"{rule_path} was made while the page was fetched: pass --force" in capsys.readouterr().err
    assert rule_path.read_text(encoding="utf-8") == "domains: [mine.example]\n"
    assert [entry.name for entry in rules.iterdir()] == ["vfat.yaml"]
    # Nor can it be renamed there: the error said, the empty file made for it removed.
    rule_path.unlink()
    made_meanwhile = False

    def no_rename(source: object, target: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "replace", no_rename)
    assert main(["rules", "new", "vfat", "https://ids.example/ids/"]) == 2
    assert f"cannot write {rule_path}: [Errno 5] Input/output error" in capsys.readouterr().err
    assert list(rules.iterdir()) == []


@pytest.mark.parametrize("kind", ["folder", "fifo", "socket"])
def test_force_onto_what_is_no_rule_file_is_refused(
    fake_sites: SiteServer, tmp_path: Path, kind: str
) -> None:
    site = Site(fake_sites, tmp_path, name="odd")
    site.rules.mkdir(parents=True)
    rule_path = site.rules / "odd.yaml"
    said = {"folder": "a folder", "fifo": "a named pipe (FIFO)", "socket": "a socket"}[kind]
    with contextlib.ExitStack() as stack:
        if kind == "folder":
            rule_path.mkdir()
        elif kind == "fifo":
            os.mkfifo(rule_path)
        else:
            held = stack.enter_context(socket.socket(socket.AF_UNIX))
            held.bind(str(rule_path))
        code, _, stderr = _drafted(site, fake_sites.url("/ids/index.html"), "--force")
    assert code == 2
    assert f"{rule_path} is {said}, not a rule file: --force replaces a rule file only" in stderr


def test_a_missing_rules_folder_is_made_and_said_and_the_header_names_the_file(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    site = Site(fake_sites, tmp_path, name="fresh")
    folder = tmp_path / "my rules"
    assert not folder.exists()
    url = fake_sites.url("/ids/index.html")
    done = site.crawler("--rules-dir", str(folder), "rules", "new", "fresh", url, "--allow-private")
    assert done.returncode == 0, done.stderr
    assert f"made the rules folder {folder} (it did not exist)" in done.stdout
    text = (folder / "fresh.yaml").read_text(encoding="utf-8")
    assert text.startswith(f"# {folder / 'fresh.yaml'}: drafted by `crawler rules new`")


def test_the_commands_the_drafted_rule_names_are_written_as_the_crawler_was_run(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    """The draft's header named `./run.sh crawler rules try` (CRAWLER_COMMAND, which run.sh exports) and
    its schedule comment `crawler run` and `crawler temp`: both now name them the way crawler was run."""
    site = Site(fake_sites, tmp_path, name="fresh")
    url = fake_sites.url("/ids/index.html")
    done = site.crawler("rules", "new", "fresh", url, "--allow-private", CRAWLER_COMMAND="./run.sh crawler")
    assert done.returncode == 0, done.stderr
    text = (site.rules / "fresh.yaml").read_text(encoding="utf-8")
    assert "drafted by `./run.sh crawler rules new`" in text, text
    assert (
        "# schedule: {every: 1h}           # regular grabs (`./run.sh crawler run`); `./run.sh crawler temp`"
        " crawls it now\n"
    ) in text, text


def test_rules_dir_is_taken_after_each_rules_action_as_before_the_command(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    """`rules try SITE URL --rules-dir DIR` was accepted, `rules check --rules-dir DIR` and `rules new SITE
    URL --rules-dir DIR` refused ('unrecognized arguments'): each takes it as given before the command, and
    the commands `rules new` suggests repeat it."""
    site = Site(fake_sites, tmp_path, name="fresh")
    folder = tmp_path / "mine"
    new = site.crawler(
        "rules",
        "new",
        "fresh",
        fake_sites.url("/ids/index.html"),
        "--allow-private",
        "--rules-dir",
        str(folder),
    )
    assert new.returncode == 0, new.stderr
    assert (folder / "fresh.yaml").is_file() and not (site.rules / "fresh.yaml").exists()
    assert (
        f"  crawler --rules-dir {folder} temp fresh    # crawl the site once, now" in new.stdout.splitlines()
    )
    check = site.crawler("rules", "check", "--rules-dir", str(folder))
    assert (check.returncode, check.stdout) == (0, "1 rule ok\n"), check.stderr
    tried = site.crawler("rules", "try", "fresh", fake_sites.url(ID_ARTICLES[0]), "--rules-dir", str(folder))
    assert tried.returncode == 0, tried.stderr


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/nav/index.html", "none of the 2 links of {url} to 127.0.0.1 looks like an article link"),
        (
            "/feed",
            "the feed {url} has no entries linking to 127.0.0.1 (0 entries in all): give the URL of a feed"
            " that lists the site's articles, or of a section page that lists them",
        ),
        # A sitemap was 'not an RSS or Atom feed (it starts '<?xml version="1.0"...'), nor an HTML page
        # (got application/xml)': it is named a sitemap, with the rule key that reads one.
        (
            "/sitemap.xml?to=/a/1",
            "{url} is a sitemap (<urlset>, 1 entry), not a page or feed to draft a rule from: give the URL of"
            " the site's home page, of a section page or of its feed; a rule reads the sitemap with"
            " `sitemaps: [{url}]` beside the `index.links.allow` that keeps its articles"
            " (docs/rules.md#sitemaps)",
        ),
        # A gzipped sitemap was 'neither an HTML page nor an RSS or Atom feed (got application/x-gzip)':
        # served as x-gzip or gzip, or its gzip undone as a Content-Encoding, it is named as the plain one.
        *(
            (
                f"/sitemap.xml.gz?to=/a/1,/a/2{served}",
                "{url} is a sitemap (<urlset>, 2 entries), not a page or feed to draft a rule from: give"
                " the URL of the site's home page, of a section page or of its feed; a rule reads the"
                " sitemap with `sitemaps: [{url}]` beside the `index.links.allow` that keeps its articles"
                " (docs/rules.md#sitemaps)",
            )
            for served in ("", "&served=application/gzip", "&encoded=1", "&served=application/octet-stream")
        ),
        (
            "/sitemap-bomb.xml.gz",
            "{url} decompresses to more than 52,428,800 bytes, over the limit of a sitemap (a gzip bomb, or a"
            " sitemap to split): give the URL of the site's home page or of a section page that lists its"
            " articles",
        ),
        (
            "/feed-bomb.xml.gz",
            "{url} decompresses to more than 33,554,432 bytes, over the size limit of a page after"
            " decompression (a gzip bomb, or a feed to read with a larger DOWNLOAD_MAXSIZE, or --max-bytes of"
            " a command): give the URL of the site's home page or of a section page that lists its articles",
        ),
        ("/status/204", "{url} is neither an HTML page nor an RSS or Atom feed"),
        (
            "/status/404",
            "HTTP 404 Not Found for {url}: check the URL, or give the URL of the site's home page or of a"
            " section page that lists its articles",
        ),
        ("/status/410", "HTTP 410 Gone for {url}: check the URL, or give the URL of the site's home page"),
        (
            "/status/503",
            "HTTP 503 Service Unavailable for {url}: the site is failing (a server error, not a wrong URL):"
            " try again later",
        ),
        (
            "/status/429",
            "HTTP 429 Too Many Requests for {url}: the site asks for fewer requests (not a wrong URL): try"
            " again later",
        ),
        ("/private/page.html", "robots.txt of {origin} disallows {url}"),
    ],
)
def test_no_rule_is_written_when_none_can_be_drafted(
    fake_sites: SiteServer, tmp_path: Path, path: str, said: str
) -> None:
    site = Site(fake_sites, tmp_path, name="nothing")
    url = fake_sites.url(path)
    code, _, stderr = _drafted(site, url)
    assert code == 1
    assert said.format(url=url, origin=fake_sites.origin) in stderr
    assert not (site.rules / "nothing.yaml").exists()


def test_a_private_address_needs_allow_private(fake_sites: SiteServer, tmp_path: Path) -> None:
    site = Site(fake_sites, tmp_path, name="private")
    url = fake_sites.url("/ids/index.html")
    done = site.crawler("rules", "new", "private", url, CRAWLER_ALLOW_PRIVATE_NETWORKS="")
    assert done.returncode == 1
    assert "pass --allow-private to `crawler rules new`" in done.stderr
    assert not (site.rules / "private.yaml").exists()


def test_a_redirect_to_another_private_host_is_refused_saying_what_allow_private_allows(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    """--allow-private lets `rules new` fetch the host of the URL given: a redirect from it to another
    private host was refused saying 'pass --allow-private to `crawler rules new`', which was passed."""
    site = Site(fake_sites, tmp_path, name="moved")
    target = fake_sites.url("/ids/index.html").replace("127.0.0.1", "localhost")
    url = fake_sites.url(f"/redirect?to={target}")
    done = site.crawler("rules", "new", "moved", url, "--allow-private", CRAWLER_ALLOW_PRIVATE_NETWORKS="")
    assert done.returncode == 1
    assert f"refusing to fetch {target}: localhost resolves to 127.0.0.1" in done.stderr
    assert "pass --allow-private" not in done.stderr
    assert (
        f"localhost is the target of a redirect from {url}, another host than 127.0.0.1: --allow-private"
        " allows private addresses only on the host of the URL given; give the target's URL to `crawler"
        " rules new moved URL --allow-private` if it is the site's"
    ) in done.stderr
    assert not (site.rules / "moved.yaml").exists()


def _pattern(links: list[str], page: str = "https://news.example/") -> str:
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    return _link_pattern(
        draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    ).regex


def _link_pattern(draft: Draft) -> LinkPattern:
    """The pattern of a page's draft, which has one (a feed's may read every entry instead)."""
    assert draft.pattern is not None
    return draft.pattern


def test_a_page_nested_deeper_than_the_parser_reads_is_drafted_from_all_its_links() -> None:
    """draft_rule and guess_title parsed pages with lxml.html's own parser, which stops at 256 levels of
    nesting (no huge_tree), all after lost: of a section page whose 3,000 items each leave a <div> open,
    the draft read the first 253 links; sample pages whose headline stands after 100,000 nested <div> gave
    no title guess. They read pages as the extractors do (parse_html: 2,048 levels, a page deeper read
    again flat)."""
    items = "".join(
        f"<div class='item'><a href='/2026/11/28/story-number-{n}-of-the-day'>Story {n}</a>"
        for n in range(3000)
    )
    draft = draft_rule(
        "s", f"<html><body>{items}</body></html>", "https://news.example/", encoding="utf-8", robots=None,
        allow_private=False,
    )  # fmt: skip
    assert len(draft.matched) == 3000, draft.matched[-3:]
    nest = "<div>" * 100_000 + "</div>" * 100_000
    pages = [
        f"<html><head><title>Story {n} | Paper</title></head><body>{nest}<h1>Story {n}</h1>" for n in (1, 2)
    ]
    title = guess_title(pages)
    assert title is not None
    assert (title.xpath, title.example, title.site_name) == ("//h1", "Story 1", "Paper")


def test_sections_merge_and_navigation_stays_out() -> None:
    regex = _pattern(
        [
            "/world/2026/11/28/one-two-three",
            "/sport/2026/11/28/four-five-six",
            "/world/2026/11/27/seven-eight-nine",
            "/tag/one-two-three",
            "/tag/four-five-six",
            "/about",
            "/page/2",
        ]
    )
    assert regex == r"^https?://[^/]+/[^/]+/\d{4}/\d{1,2}/\d{1,2}/[^/]+$"
    assert not re.search(regex, "https://news.example/tag/one-two-three")


def test_chinese_dated_shtml_links() -> None:
    regex = _pattern(
        [
            "/gn/202611/t20261128_5873424.shtml",
            "/gn/202611/t20261127_5873401.shtml",
            "/gn/index_2.shtml",
            "/gn/index.shtml",
        ],
        page="https://www.news.example.cn/gn/index.shtml",
    )
    assert regex == r"^https?://[^/]+/gn/\d{4}\d{2}/t\d+_\d+\.shtml$"


def test_a_page_without_links_to_its_site() -> None:
    with pytest.raises(DraftError, match=r"has no links to news\.example"):
        _pattern(["https://elsewhere.example/2026/11/28/a-b-c"])


def test_a_page_whose_links_are_javascript_says_so() -> None:
    """A page whose <a> elements run JavaScript (href="javascript:...", href="#" with an onclick) was
    refused as having '0 links in all', as if it had no <a>; the error now says what its <a> lead to."""
    html = (
        "".join(f'<a href="javascript:void(0)" onclick="go({n})">story {n}</a>' for n in range(3))
        + '<a href="#top">top</a><a href="#">menu</a><a onclick="more()">more</a>'
        + '<a href="mailto:desk@news.example">mail</a><a href="JavaScript:next()">next</a>'
    )
    with pytest.raises(DraftError) as raised:
        draft_rule("s", html, "https://news.example/", encoding="utf-8", robots=None, allow_private=False)
    assert str(raised.value) == (
        "https://news.example/ has no links to news.example (0 links in all; 8 of its 8 <a> elements lead to"
        " no page the crawl fetches: 4 javascript:, 2 a place on the page (#...), 1 without an href,"
        " 1 mailto:; the crawl runs no JavaScript): give the URL of the site's home page or of a section"
        " page that lists its articles"
    )


def test_robots_sitemaps_on_the_site() -> None:
    robots = b"User-agent: *\nSitemap: /sitemap.xml\nsitemap: https://news.example/news.xml # news\n"
    assert robots_sitemaps(robots, "https://news.example/") == [
        "https://news.example/sitemap.xml",
        "https://news.example/news.xml",
    ]


def test_query_ids_and_a_rel_next_link() -> None:
    html = (
        '<a href="/article.php?id=10234">a</a><a href="/article.php?id=10235">b</a>'
        '<a href="/list.php?page=2" rel="next">2</a><a href="/list.php?page=3">3</a>'
    )
    draft = draft_rule(
        "s", html, "http://forum.example/list.php", encoding="utf-8", robots=None, allow_private=False
    )
    assert _link_pattern(draft).regex == r"^https?://[^/]+/article\.php\?id=\d+$"
    assert draft.next_page is not None
    assert (draft.next_page.xpath, draft.next_page.url) == (
        "//a[@rel='next']/@href",
        "http://forum.example/list.php?page=2",
    )


def test_months_written_as_words() -> None:
    regex = _pattern(
        [
            "/world/2026/nov/28/harbour-bridge-reopens",
            "/uk-news/2026/nov/27/ferry-timetable-changes",
            "/world/europe",
            "/profile/some-writer-name",
        ],
        page="https://www.paper.example/world",
    )
    assert regex == r"^https?://[^/]+/[^/]+/\d{4}/[a-z]{3}/\d{1,2}/[^/]+$"


def test_wordpress_post_ids_and_substack_posts_are_articles() -> None:
    """'p' was a navigation word, so WordPress's default links to its posts (/?p=123) and Substack's
    (/p/a-long-post-slug) were left out as navigation: a WordPress home page was refused with 'none of the
    5 links ... looks like an article link'. A page number (?p=2, /p/2) is no article sign either way."""
    wordpress = _pattern(["/?p=123", "/?p=124", "/?p=130", "/?page_id=2", "/?cat=3", "/?p=2", "/?paged=2"])
    assert wordpress == r"^https?://[^/]+/\?p=\d+$"
    substack = _pattern(["/p/why-the-ferry-runs-late", "/p/a-harbour-bridge-story", "/about", "/archive"])
    assert substack == r"^https?://[^/]+/p/[^/]+$"


def _crawled_links(draft: Draft, html: str) -> list[str]:
    """The article links a crawl of the drafted rule takes from the page ``html`` it was drafted from."""
    rule = parse_rule(
        rule_text(draft, today="2026-11-28", command="crawler", path="rules/s.yaml"), site=draft.site
    )
    return rule.article_links(draft.url, lxml.html.document_fromstring(html))


def test_a_base_href_on_another_host_puts_that_host_in_the_domains() -> None:
    """The crawl resolves a page's links against its <base href> (Rule.article_links): relative links of a
    page whose base is on another host are that host's. The draft resolved them so too but kept only the
    page's domain, so the page was refused ('has no links to news.example'); with both hosts' links it
    must name both domains, or the crawl leaves the other host's links out."""
    page = "https://news.example/local/"
    html = (
        '<html><head><base href="https://www.citypaper.example/local/"></head><body>'
        '<a href="2026/11/28/harbour-bridge-reopens.html">a</a>'
        '<a href="2026/11/27/new-ferry-timetable-starts.html">b</a>'
        '<a href="https://news.example/2026/11/26/library-opens-on-sundays.html">c</a>'
        '<a href="/about/">about</a></body></html>'
    )
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert draft.domains == ("news.example", "citypaper.example")
    assert _link_pattern(draft).regex == r"^https?://[^/]+/local/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$"
    assert draft.matched == [
        "https://www.citypaper.example/local/2026/11/28/harbour-bridge-reopens.html",
        "https://www.citypaper.example/local/2026/11/27/new-ferry-timetable-starts.html",
    ]
    assert _crawled_links(draft, html) == draft.matched


def test_a_page_of_an_international_host_name_has_its_links() -> None:
    """The page's links are in their IDNA form (https://www.xn--bcher-kva.example/...), as the crawl requests
    them; a page URL given with its Unicode host (https://www.bücher.example/) was compared as it came, so
    draft_rule said 'has no links to bücher.example'. Hosts are compared in their IDNA form, the domain
    named so, and the page's own link is left out as on any host."""
    page = "https://www.bücher.example/news/"
    html = (
        '<a href="/2026/11/28/harbour-bridge-reopens.html">a</a>'
        '<a href="/2026/11/27/new-ferry-timetable-starts.html">b</a>'
        '<a href="https://www.bücher.example/2026/11/26/library-opens-on-sundays.html">c</a>'
        '<a href="/news/">news</a><a href="/about/">about</a>'
    )
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert draft.domains == ("xn--bcher-kva.example",)
    assert _link_pattern(draft).regex == r"^https?://[^/]+/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$"
    assert len(draft.matched) == 3
    assert "https://www.xn--bcher-kva.example/news/" not in draft.site_links
    assert _crawled_links(draft, html) == draft.matched


@pytest.mark.parametrize(
    ("amp", "deny"),
    [
        ("/news/2026/11/{day}/{slug}.amp.html", r"\.amp\.[0-9A-Za-z]+(?:[?#]|$)"),
        ("/amp/news/2026/11/{day}/{slug}.html", r"/amp(?:[/?#]|$)"),
        ("/news/2026/11/{day}/{slug}.html?amp=1", r"[?&](?:amp(?:=[^&]*)?|outputType=amp)(?:&|$)"),
        ("/news/2026/11/{day}/{slug}.html?outputType=amp", r"[?&](?:amp(?:=[^&]*)?|outputType=amp)(?:&|$)"),
    ],
)
def test_amp_copies_beside_their_articles_are_left_out(amp: str, deny: str) -> None:
    """A news page links each article twice, its page and its AMP copy (slug.amp.html, /amp/..., ?amp=1,
    ?outputType=amp). The pattern took in the .amp.html copies ('[^/]+\\.html'), so the crawl fetched every
    article twice (9 pages for 4 articles, 4 'reposts'), and an /amp/ folder of as many links could win the
    guess. The copies whose article is on the page are left out of the guess and denied by the rule."""
    slugs = [
        (28, "harbour-bridge-reopens"),
        (27, "new-ferry-timetable-starts"),
        (26, "library-opens-sundays"),
    ]
    articles = [f"/news/2026/11/{day}/{slug}.html" for day, slug in slugs]
    copies = [amp.format(day=day, slug=slug) for day, slug in slugs]
    html = "".join(
        f'<a href="{article}">a</a><a href="{copy}">amp</a>'
        for article, copy in zip(articles, copies, strict=True)
    )
    html += '<a href="/about/">about</a>'
    draft = draft_rule("s", html, "https://news.example/", encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == r"^https?://[^/]+/news/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$"
    wanted = [f"https://news.example{article}" for article in articles]
    assert draft.matched == wanted
    assert _crawled_links(draft, html) == wanted
    text = rule_text(draft, today="2026-11-28", command="crawler", path="rules/s.yaml")
    if re.search(_link_pattern(draft).regex, f"https://news.example{copies[0]}"):
        assert draft.deny == (deny,)
        assert "    # the AMP copies of its articles (3 links, e.g. https://news.example" in text
    else:
        assert draft.deny == ()
        assert "deny" not in text


def test_an_amp_folder_is_denied_only_when_it_holds_copies() -> None:
    """A site whose articles are under /amp/ (no copies of them beside) keeps them: nothing is denied."""
    html = "".join(f'<a href="/amp/2026/11/2{n}/story-of-the-day-{n}.html">a</a>' for n in range(4))
    draft = draft_rule("s", html, "https://amp.example/", encoding="utf-8", robots=None, allow_private=False)
    assert len(draft.matched) == 4
    assert draft.deny == ()


def test_a_start_url_given_with_an_international_host_is_requested_in_its_idna_form() -> None:
    """The start URL is written as given (https://www.bücher.example/新闻/, readable in the rule), its
    links and domains in their IDNA form: the rule loads, its start URL in the IDNA form on its domains,
    and the crawl's request of it goes to that host with its path percent-encoded; `temp --url` and
    `rules try` know it as the rule's start URL. (A real crawl on 127.0.0.1 cannot serve such a host.)"""
    page = "https://www.bücher.example/新闻/"
    html = (
        '<a href="/2026/11/28/harbour-bridge-reopens.html">a</a>'
        '<a href="/2026/11/27/new-ferry-timetable-starts.html">b</a>'
    )
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    text = rule_text(draft, today="2026-11-28", command="crawler", path="rules/s.yaml")
    assert f"start_urls:\n  - '{page}'" in text
    rule = parse_rule(text, site="s")
    assert rule.start_urls == ("https://www.xn--bcher-kva.example/新闻/",)
    request = listing_request(rule, INDEX, rule.start_urls[0])
    assert request.url == "https://www.xn--bcher-kva.example/%E6%96%B0%E9%97%BB/"
    assert rule.allows_host(urlsplit(request.url).hostname)
    assert rule.named_by(page) == ("index", "start_urls[0]")
    assert rule.named_by(request.url) == ("index", "start_urls[0]")


@pytest.mark.parametrize(
    ("links", "regex", "example"),
    [
        (
            [f"/news/content_1023{n}.htm;jsessionid=0A1B2C3D4E5F60718293A4B5" for n in range(3)],
            r"^https?://[^/]+/news/content_\d+\.htm(?:;jsessionid=[^/?]*)?$",
            "/news/content_10230.htm",
        ),
        (
            [
                "/story/48213/?utm_source=home&utm_medium=web",
                "/story/48214/",
                "/story/48215/?utm_source=home",
            ],
            r"^https?://[^/]+/story/\d+/(?:\?utm_[a-z_]+=[^&]*(?:&utm_[a-z_]+=[^&]*)*)?$",
            "/story/48213/",
        ),
        (
            [f"/?p={n}&PHPSESSID=9f8e7d6c5b4a39281706f5e4d3c2b1a0" for n in (123, 124, 130)],
            r"^https?://[^/]+/\?p=\d+(?:&PHPSESSID=[^&]*)*$",
            "/?p=123",
        ),
        (
            ["/article.php?sid=10234&utm_campaign=x", "/article.php?utm_campaign=y&sid=10235", "/about.php"],
            r"^https?://[^/]+/article\.php\?(?:utm_[a-z_]+=[^&]*&)*sid=\d+(?:&utm_[a-z_]+=[^&]*)*$",
            "/article.php?sid=10234",
        ),
        (
            ["/?p=123&UTM_Source=feed", "/?p=124", "/?p=130"],
            r"^https?://[^/]+/\?p=\d+(?:&UTM_Source=[^&]*)*$",
            "/?p=123",
        ),
    ],
)
def test_session_ids_and_tracking_are_no_part_of_the_pattern(
    links: list[str], regex: str, example: str
) -> None:
    """A session id in the links (;jsessionid=, PHPSESSID=, a sid= that is no number) and utm_ tracking
    were part of the guessed shape: the session's value written into the pattern (content_\\d+\\.htm;
    jsessionid=\\d+A1B2...), the next session's links refused, and links with and without utm_source
    split into groups of one. The crawl requests links as they are (it does not drop such parameters), so
    the pattern is guessed without them and allows them where the page had them; the examples leave
    them out (a story id in sid=10234 is kept)."""
    page = "https://news.example/"
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == regex
    articles = [link for link in draft.site_links if "about" not in link]
    assert draft.matched == articles
    assert _crawled_links(draft, html) == articles
    assert draft.example == page.rstrip("/") + example
    assert re.search(regex, draft.example)
    assert f"e.g. {draft.example}\n" in rule_text(
        draft, today="2026-11-28", command="crawler", path="rules/s.yaml"
    )


def test_a_feed_drafts_a_rule_reading_it_and_a_page_that_has_only_a_feed_names_it(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    """A feed's URL (RSS or Atom) was refused ('is not an HTML page (got application/rss+xml)'), and a page
    whose only way to its articles is the feed it advertises was refused without naming the feed ('none
    of the 1 links ... looks like an article link'). A feed now drafts a rule that reads it (its entries'
    links give the pattern; no start URL, no next page); the page's refusal names its feed and the command
    that drafts from it."""
    site = Site(fake_sites, tmp_path, name="fed")
    page = fake_sites.url("/feedonly/index.html")
    feed = fake_sites.url(FEED_OF_EN)
    code, _, stderr = _drafted(site, page)
    assert code == 1
    assert (
        f"looks like an article link (a date, a numeric id or a long slug in its path; paths such as"
        f" /feedonly/about/): give the URL of a section page that lists articles, or write the rule by hand"
        f" (docs/rules.md); the page advertises the feed {feed}: `crawler rules new fed '{feed}'` drafts a"
        " rule that reads it"
    ) in stderr
    assert not (site.rules / "fed.yaml").exists()

    document, stdout = _drafted_from_feed(site, feed)
    assert "start_urls" not in document
    assert document["index"]["links"]["allow"] == [r"^https?://[^/]+/en/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$"]
    assert "next_page" not in document["index"]
    assert f"feed           {feed}" in stdout
    assert "4 of the feed's 4 links to 127.0.0.1, e.g." in stdout
    assert f"crawler rules try fed {fake_sites.url(EN_ARTICLES[0])}" in stdout
    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert sorted(site.stored()) == sorted(EN_ARTICLES)


def test_a_feed_whose_links_show_no_article_shape_drafts_a_rule_reading_every_entry(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    """A feed whose entries link to /a/1, /a/2, /a/3 (an id too short to tell from a menu's page on an
    index) was refused, 'none of the 3 links of the feed ... looks like an article link', the rule that
    reads every entry given in the error to write by hand. A feed lists articles: that rule is written,
    with no index, and its crawl stores the entries; the robots.txt's sitemaps, which no index would
    filter, are named in a comment, not read."""
    site = Site(fake_sites, tmp_path, name="fed")
    feed = fake_sites.url("/feed?to=/a/1,/a/2,/a/3")
    document, stdout = _drafted_from_feed(site, feed)
    assert "index" not in document
    assert "start_urls" not in document
    assert "sitemaps" not in document
    assert "article links  every entry of the feed (no index)\n" in stdout
    assert (
        "its 3 links to 127.0.0.1 show no date, numeric id or long slug to filter them by, e.g."
        f" {fake_sites.url('/a/1')}\n"
    ) in stdout
    assert f"crawler rules try fed {fake_sites.url('/a/1')}" in stdout
    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert sorted(site.stored()) == ["/a/1", "/a/2", "/a/3"]


def test_a_draft_reading_every_entry_of_a_feed_leaves_the_sitemaps_of_robots_txt_out() -> None:
    links = ["https://news.example/news/story-1.html", "https://news.example/news/story-2.html"]
    feed = read_feed(feed_document(links, "rss").encode(), "https://news.example/rss")
    robots = b"User-agent: *\nSitemap: https://news.example/sitemap.xml\n"
    draft = draft_feed_rule("s", feed, "https://news.example/rss", robots=robots, allow_private=False)
    assert draft.pattern is None
    assert draft.sitemaps == ()
    text = rule_text(draft, today="2026-11-28", command="crawler", path="rules/s.yaml")
    document = yaml.safe_load(text)
    assert "sitemaps" not in document
    assert "index" not in document
    assert "# sitemaps: ['https://news.example/sitemap.xml']\n" in text
    assert parse_rule(text, site="s").feeds


def test_a_year_folder_then_a_month_and_day_folder_is_a_date() -> None:
    """Chinese portals date their articles /2026/1128/ (a year's folder, then one of its month and day):
    that was two ids (/\\d+/\\d+/), no date, so a page's photo links of as many ids won the tie and the
    drafted rule read the photos instead of the news."""
    regex = _pattern(
        [
            "/photo/40610001.html",
            "/photo/40610002.html",
            "/photo/40610003.html",
            "/n1/2026/1128/c1002-40612345.html",
            "/n1/2026/1128/c1004-40612346.html",
            "/n1/2026/1127/c1002-40611111.html",
        ],
        page="http://world.people.example.cn/",
    )
    assert regex == r"^https?://[^/]+/n\d+/\d{4}/\d{4}/c\d+-\d+\.html$"


def test_a_session_id_in_the_page_url_is_no_part_of_the_start_url() -> None:
    """A page reached with a session id in its URL (;jsessionid=..., ?PHPSESSID=...) gave it to the rule's
    start_urls, a session every grab would send again (and a secret the logs redact, written into the
    rule file); the start URL is the page's without it."""
    links = "".join(f'<a href="/news/{n}/">x</a>' for n in (48213, 48214, 48215))
    for page, start in [
        ("https://news.example/news/;jsessionid=0A1B2C3D4E5F6071", "https://news.example/news/"),
        (
            "https://news.example/list.php?cat=7&PHPSESSID=9f8e7d6c5b4a3928",
            "https://news.example/list.php?cat=7",
        ),
    ]:
        draft = draft_rule("s", links, page, encoding="utf-8", robots=None, allow_private=False)
        assert draft.url == start
        assert f"start_urls:\n  - '{start}'\n" in rule_text(
            draft, today="2026-11-28", command="crawler", path="rules/s.yaml"
        )


@pytest.mark.parametrize(
    "query",
    [
        "",
        "&format=atom&served=application/gzip",
        "&format=rss1&served=application/octet-stream",
        "&encoded=1",
    ],
)
def test_a_gzipped_feed_drafts_a_rule_reading_it_that_the_crawl_reads(
    query: str, fake_sites: SiteServer, tmp_path: Path
) -> None:
    """A feed.xml.gz (served as application/x-gzip, application/gzip or octet-stream) was refused as
    '... is neither an HTML page nor an RSS or Atom feed (got application/x-gzip)', and a crawl of a rule
    naming one dead-lettered it as no feed: both read it decompressed, as a gzipped sitemap is read; a gzip
    Content-Encoding that left the plain feed under the gzip type is a feed too."""
    site = Site(fake_sites, tmp_path, name="fed")
    feed = fake_sites.url(f"/feed.xml.gz?to=/a/1,/a/2,/a/3{query}")
    _, stdout = _drafted_from_feed(site, feed)
    assert "article links  every entry of the feed (no index)\n" in stdout
    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert sorted(site.stored()) == ["/a/1", "/a/2", "/a/3"]
    assert site.dead() == []


@pytest.mark.parametrize("served", ["text/html", "text/plain", "application/octet-stream"])
def test_a_feed_served_as_another_type_drafts_a_rule_reading_it(
    served: str, fake_sites: SiteServer, tmp_path: Path
) -> None:
    """A feed a server sends as text/html, text/plain or application/octet-stream (a .rss file of a
    misconfigured server) is read by the crawl as any feed (feedparser reads the document), but `rules new`
    went by the type alone: as HTML, 'has no links to 127.0.0.1 (0 links in all)'; else 'is neither an
    HTML page nor an RSS or Atom feed (got text/plain)'. A document that opens as RSS, RDF or Atom does is
    drafted from as a feed."""
    site = Site(fake_sites, tmp_path, name="fed")
    feed = fake_sites.url(f"{FEED_OF_EN}&served={served}")
    _, stdout = _drafted_from_feed(site, feed)
    assert "4 of the feed's 4 links to 127.0.0.1, e.g." in stdout


@pytest.mark.parametrize(
    ("articles", "regex"),
    [
        (
            [
                "/c/2026-11-28/doc-inaurkmy1234567.shtml",
                "/c/2026-11-28/doc-inaurkmz2345678.shtml",
                "/c/2026-11-27/doc-imcwipii3456789.shtml",
            ],
            r"^https?://[^/]+/c/\d{4}-\d{2}-\d{2}/doc-[a-z]+\d+\.shtml$",
        ),
        (
            [
                "/news/article/JH4A5B6C0001899O.html",
                "/news/article/KB2D3E4F0001899O.html",
                "/news/article/JH7X8Y9Z00019BCD.html",
            ],
            r"^https?://[^/]+/news/article/[0-9A-Z]{16}\.html$",
        ),
        (
            ["/story/5f3a9b2c.html", "/story/a91bc07d.html", "/story/0c4e8f1a42.html"],
            r"^https?://[^/]+/story/[0-9a-f]{8,10}\.html$",
        ),
        (["/a/AbC123xyz", "/a/XyZ987abc", "/a/QrS456def"], r"^https?://[^/]+/a/[0-9A-Za-z]{9}$"),
    ],
)
def test_article_ids_of_letters_and_digits_are_one_group(articles: list[str], regex: str) -> None:
    """Ids that mix letters and digits (sina's doc-inaurkmy1234567, 163's JH4A5B6C0001899O, hex and
    base36 ids) had their letters written as they are: each article a group of its own, and the pattern
    made from one link. Shapes that differ only in such an id are one group, the id written as a class
    that matches its members, not the page's navigation."""
    navigation = ["/news/world/", "/tag/economy/", "/about/", "/news/sport/"]
    links = [
        navigation[0],
        articles[0],
        navigation[1],
        articles[1],
        navigation[2],
        articles[2],
        navigation[3],
    ]
    page = "https://news.example/"
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == regex
    full = [page.rstrip("/") + link for link in articles]
    assert draft.matched == full
    assert _crawled_links(draft, html) == full


def test_a_year_and_month_folder_then_a_day_folder_is_one_date() -> None:
    """A date written /2026-11/20/ (a folder of the year and month, then one of the day) had its day read as
    a number of its own (\\d+), not as the date's day."""
    regex = _pattern(
        ["/2026-11/20/harbour-bridge-reopens.html", "/2026-11/19/storm-hits-the-coast.html", "/tag/weather/"]
    )
    assert regex == r"^https?://[^/]+/\d{4}-\d{2}/\d{1,2}/[^/]+\.html$"


def test_a_lone_year_folder_is_a_year_not_a_numeric_id() -> None:
    """A year's folder with no month after it (/2026/harbour-bridge-reopens.html) was read as a numeric id:
    written \\d+ and described 'which hold a slug, a numeric id'."""
    links = ["/2026/harbour-bridge-reopens.html", "/2025/ferry-timetable-changes-again.html", "/tag/ferry/"]
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    draft = draft_rule("s", html, "https://news.example/", encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == r"^https?://[^/]+/\d{4}/[^/]+\.html$"
    assert _link_pattern(draft).signs == ("year", "slug")
    text = rule_text(draft, today="2026-11-28", command="crawler", path="rules/s.yaml")
    assert "to news.example, which hold a year, a slug;\n" in text
    assert _crawled_links(draft, html) == [f"https://news.example{link}" for link in links[:2]]
    # A number at the end of the path stays an id, whatever its digits: /story/2019/ is story 2019.
    assert _pattern(["/story/2019/", "/story/2020/", "/story/1987/"]) == r"^https?://[^/]+/story/\d+/$"


# A page's navigation of letters-and-digits tokens, several of each kind: tags, users, videos, ads, profiles,
# sessioned sections, and links to images, scripts and photos named by a CDN's hash (a gallery of more
# images than the page has articles).
TOKEN_NAVIGATION = [
    *(f"/tag/abc{n}" for n in (123, 456, 789, 321)),
    *(f"/user/u{n}" for n in (12345, 23456, 34567, 45678)),
    *(f"/video/v{n}" for n in (8100, 8101, 7202, 6303)),
    *(f"/video/v{token}" for token in ("45fda9988", "926f6967e", "0a1b2c3d4", "e5f6a7b8c")),
    *(f"/page/{n}" for n in (2, 3, 4, 5)),
    *(f"/ad/{token}" for token in ("x1y2z3", "y5z2z4", "z9z9y2", "x8y8z1")),
    *(f"/ad/{token}" for token in ("zy3x0q91a2b7", "q0z9y8x7w6v5", "k1x2y3z4a5b6", "m9n8b7v6c5x4")),
    *(f"/u/{token}" for token in ("en659o2v21", "ye4scmejvq", "w3w1e5ulrq", "p0o9i8u7y6")),
    *(f"/profile/u{n}" for n in (95397, 59302, 25103, 11874)),
    *(f"/world;jsessionid={token}" for token in ("0A1B2C3D4E5F6071", "8192A3B4C5D6E7F8")),
    *(f"/sport?sid={token}" for token in ("9f8e7d6c5b4a", "1a2b3c4d5e6f")),
    *(f"/static/img/{n:x}.jpg" for n in range(0xFEC94DBCA3A0, 0xFEC94DBCA3A8)),  # a gallery of 8
    *(f"/cdn/{token}/photo.jpg" for token in ("33296c87009e8a7f", "d6ba2b0aee0ca923", "f8670a1b2c3d4e5f")),
    *(f"/assets/app.{token}.js" for token in ("21de49f1", "3f9a8b7c", "0c4e8f1a")),
]


@pytest.mark.parametrize(
    ("articles", "regex"),
    [
        (
            [f"/news/2026/11/{28 - n % 3}/harbour-bridge-story-number-{n}.html" for n in range(6)],
            r"^https?://[^/]+/news/\d{4}/\d{1,2}/\d{1,2}/[^/]+\.html$",
        ),
        ([f"/story/{48213 + n}/" for n in range(6)], r"^https?://[^/]+/story/\d+/$"),
        (
            [f"/c/2026-11-28/doc-i{word}{1234567 + n}.shtml" for n, word in enumerate("nauskmyzqrst")][:6],
            r"^https?://[^/]+/c/\d{4}-\d{2}-\d{2}/doc-[a-z]+\d+\.shtml$",
        ),
        (
            [
                f"/a/{token}"
                for token in ("5f3a9b2c1d", "a91bc07d3e", "0c4e8f1a42", "77aa88bb99", "d00dfeed12")
            ],
            r"^https?://[^/]+/a/[0-9a-f]{10}$",
        ),
    ],
)
def test_navigation_of_letter_and_digit_tokens_is_no_article(articles: list[str], regex: str) -> None:
    """Shapes that differ only in words and in a token of letters and digits were one group, whatever the
    token: /u/en659o2v21, /video/v45fda9988, /profile/u95397 and /ad/x1y2z3 counted together, and with a
    CDN's hashed image links, outnumbered the page's articles (^https?://[^/]+/[^/]+/[0-9a-z]{5,12}$); its
    [^/]+ matched /tag/abc123 and /user/u12345, navigation. A group whose only sign is such a token keeps
    its words and its kind of token (letters then digits, hex, other), a link to an image, a script or a
    style sheet is no article, and a pattern whose [^/]+ would match the page's navigation names its
    group's words instead."""
    links = [*TOKEN_NAVIGATION[::2], *articles, *TOKEN_NAVIGATION[1::2]]
    page = "https://news.example/"
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == regex
    full = [page.rstrip("/") + link for link in articles]
    assert draft.matched == full
    assert _crawled_links(draft, html) == full


def test_a_section_word_that_would_take_in_navigation_is_written_as_the_groups_words() -> None:
    """Sections merged as [^/]+ (/world/48213/ with /sport/48214/) took in the page's navigation of the
    same shape: /user/10001/ and /tag/10002/ were kept as articles by ^https?://[^/]+/[^/]+/\\d+/$."""
    articles = ["/world/48213/", "/sport/48214/", "/world/48215/", "/sport/48216/"]
    links = ["/user/10001/", *articles, "/tag/10002/", "/about/"]
    page = "https://news.example/"
    html = "".join(f'<a href="{link}">x</a>' for link in links)
    draft = draft_rule("s", html, page, encoding="utf-8", robots=None, allow_private=False)
    assert _link_pattern(draft).regex == r"^https?://[^/]+/(?:sport|world)/\d+/$"
    assert _crawled_links(draft, html) == [page.rstrip("/") + link for link in articles]


def test_a_month_or_day_folder_is_two_digits_only_where_the_site_writes_a_leading_zero() -> None:
    """A month's or day's folder of two digits was written \\d{2}, one digit \\d{1,2}, and each was a group of
    its own: a site that writes 9 November /2026/11/9/ had its links of the 9th left out when the 10th and
    11th's were more (^https?://[^/]+/\\d{4}/\\d{2}/\\d{2}/[^/]+$), and a rule drafted on 28 November
    missed the articles of 1 to 9 December and of January to September. Month and day are \\d{1,2} unless
    the links show a leading zero (/2026/11/05/), which says the site writes two digits."""
    unpadded = ["/2026/11/11/a-b-c", "/2026/11/10/d-e-f", "/2026/11/10/g-h-i", "/2026/11/9/j-k-l"]
    regex = _pattern([*unpadded, "/tag/x/"])
    assert regex == r"^https?://[^/]+/\d{4}/\d{1,2}/\d{1,2}/[^/]+$"
    assert re.search(regex, "https://news.example/2026/12/5/m-n-o")
    assert (
        _pattern(["/2026/11/28/a-b-c", "/2026/11/27/d-e-f"])
        == r"^https?://[^/]+/\d{4}/\d{1,2}/\d{1,2}/[^/]+$"
    )
    padded = ["/2026/11/28/a-b-c", "/2026/11/05/d-e-f", "/2026/nov/28/g-h-i", "/2026/nov/05/j-k-l"]
    assert _pattern(padded[:2]) == r"^https?://[^/]+/\d{4}/\d{2}/\d{2}/[^/]+$"
    assert _pattern(padded[2:]) == r"^https?://[^/]+/\d{4}/[a-z]{3}/\d{2}/[^/]+$"


@pytest.mark.parametrize(
    ("folder", "name", "xpath"),
    [("sfx", "h1", "//h1"), ("og", "og:title", "//meta[@property='og:title']/@content")],
)
def test_the_title_field_is_drafted_from_sample_articles_without_the_sites_name(
    fake_sites: SiteServer, tmp_path: Path, folder: str, name: str, xpath: str
) -> None:
    """A rule drafted with no title field stored the page's <title>, "Mayor opens river park | City News":
    the draft reads 3 of the articles and takes the og:title, else the h1, that they all have without the
    site's name; its output says so, and the crawl stores the titles without it."""
    site = Site(fake_sites, tmp_path, name="city")
    code, stdout, stderr = _drafted(site, fake_sites.url(f"/{folder}/index.html"))
    assert code == 0, stderr
    document = yaml.safe_load((site.rules / "city.yaml").read_text(encoding="utf-8"))
    assert document["article"]["fields"] == {"title": {"xpath": xpath}}, document
    lines = stdout.splitlines()
    at = lines.index(f"title          {xpath}")
    assert lines[at + 1] == (
        f"               the {name} of 3 sample articles, its <title> carries 'City News', e.g. Mayor opens"
        " river park"
    ), lines
    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    titles = {article["title"] for article in site.stored().values()}
    assert titles == {slug.replace("-", " ").capitalize() for slug in SUFFIXED_SLUGS}, titles


@pytest.mark.parametrize(
    ("folder", "name", "published"),
    [
        (
            "meta",
            "article:published_time meta",
            {"xpath": "//meta[@property='article:published_time']/@content"},
        ),
        (
            "ld",
            "JSON-LD datePublished",
            {
                "xpath": "//script[@type='application/ld+json'][contains(., 'datePublished')]",
                "regex": r'"datePublished"\s*:\s*"([^"]+)"',
            },
        ),
        ("time", "<time datetime>", {"xpath": "//time/@datetime"}),
    ],
)
def test_the_published_field_is_drafted_from_the_date_every_sample_article_gives(
    fake_sites: SiteServer, tmp_path: Path, folder: str, name: str, published: dict[str, str]
) -> None:
    """A drafted rule had no published field, and the crawl stores no date a rule does not point to: every
    article was stored without one though each page gave it. The draft takes the most specific source
    that gives a date on every sample article (the meta before the JSON-LD, the JSON-LD before a page's
    <time>s), and the crawl stores each article's date."""
    site = Site(fake_sites, tmp_path, name="dated")
    code, stdout, stderr = _drafted(site, fake_sites.url(f"/dated-{folder}/index.html"))
    assert code == 0, stderr
    document = yaml.safe_load((site.rules / "dated.yaml").read_text(encoding="utf-8"))
    assert document["article"]["fields"] == {"title": {"xpath": "//h1"}, "published": published}, document
    lines = stdout.splitlines()
    regex = f" regex {published['regex']}" if "regex" in published else ""
    at = lines.index(f"published      {published['xpath']}{regex}")
    assert lines[at + 1] == (
        f"               the {name} of 3 sample articles, e.g. {DATED_TIMES[0]} (stored as {DATED_TIMES[0]})"
    ), lines
    crawl = site.temp()
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    dates = {path: article["published"] for path, article in site.stored().items()}
    paths = [f"/dated-{folder}/2026/11/{slug}.html" for slug in DATED_SLUGS]
    assert dates == dict(zip(paths, DATED_TIMES, strict=True)), dates


def test_no_published_field_is_drafted_when_the_sample_articles_do_not_all_give_a_date(
    fake_sites: SiteServer, tmp_path: Path
) -> None:
    site = Site(fake_sites, tmp_path, name="dated")
    code, stdout, stderr = _drafted(site, fake_sites.url("/dated-some/index.html"))
    assert code == 0, stderr
    document = yaml.safe_load((site.rules / "dated.yaml").read_text(encoding="utf-8"))
    assert document["article"]["fields"] == {"title": {"xpath": "//h1"}}, document
    assert (
        "published      - (no date meta, JSON-LD datePublished or <time> that 3 sample articles agree on:"
        " an article is stored without one unless a feed's or news sitemap's entry gives it)"
    ) in stdout.splitlines(), stdout
