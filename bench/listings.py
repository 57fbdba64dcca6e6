"""The crawl thread's CPU on one large listing page: feeds, index pages and sitemaps of 1k to 100k entries.

    .venv/bin/python bench/listings.py [--sizes 1000,10000,100000] [--only utf16,broken,index,...]

Builds each listing in memory (tests/siteserver.py's feeds and sitemaps), reads it as the spider does
(read_feed; Rule.article_links with RULES_MAX_LINKS; read_sitemap and Rule.sitemap_entries) and prints
the CPU seconds (time.process_time) of the read, with how many entries it kept. A sitemap past the
protocol's 50,000 entries is refused: a sitemap's sizes stop at 50,000. No network, no Redis: the
spider's requests and queueing of the kept links come on top.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from lxml import html  # noqa: E402
from siteserver import feed_document, sitemap_document  # noqa: E402

from crawler.rules import parse_rule  # noqa: E402
from crawler.rules.feeds import read_feed  # noqa: E402
from crawler.rules.sitemaps import MAX_ENTRIES as SITEMAP_MAX_ENTRIES  # noqa: E402
from crawler.rules.sitemaps import read_sitemap  # noqa: E402
from crawler.settings import RULES_MAX_LINKS  # noqa: E402

SITE = "http://news.test"
RULE = parse_rule(
    """
domains: [news.test]
start_urls: ["http://news.test/"]
index:
  links: {xpath: "//ul[@class='news']"}
article:
  fields:
    title: {xpath: //h1}
""",
    site="bench",
)


def _utf16(n: int) -> Callable[[], int]:
    document = feed_document([f"/a/{i}" for i in range(n)], "rss")
    body = document.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-16"?>').encode(
        "utf-16"
    )
    return lambda: len(read_feed(body, f"{SITE}/feed.xml").entries)


def _broken(n: int) -> Callable[[], int]:
    body = feed_document([f"/a/{i}" for i in range(n)], "rss").replace("</title>", "<br></title>").encode()
    return lambda: len(read_feed(body, f"{SITE}/feed.xml").entries)


def _index(n: int) -> Callable[[], int]:
    items = "".join(f'<li><a href="/a/{i}">{i}</a></li>' for i in range(n))
    body = f"<html><body><ul class='news'>{items}</ul></body></html>".encode()

    def read() -> int:
        root = html.fromstring(body)
        return len(RULE.article_links(f"{SITE}/", root, limit=RULES_MAX_LINKS, left_out=Counter()))

    return read


def _sitemap(kind: str, compress: bool) -> Callable[[int], Callable[[], int]]:
    def build(n: int) -> Callable[[], int]:
        body = sitemap_document(kind, [f"{SITE}/a/{i}" for i in range(n)], [], news=kind == "urlset").encode()
        if compress:
            body = gzip.compress(body)

        def read() -> int:
            sitemap = read_sitemap(body, f"{SITE}/sitemap.xml")
            return len(RULE.sitemap_entries(sitemap.entries, f"{SITE}/sitemap.xml", pages=kind == "urlset"))

        return read

    return build


LISTINGS: dict[str, Callable[[int], Callable[[], int]]] = {
    "utf16": _utf16,
    "broken": _broken,
    "index": _index,
    "sitemapindex": _sitemap("sitemapindex", compress=False),
    "sitemap.gz": _sitemap("urlset", compress=True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="entries of each listing, comma-separated"
    )
    parser.add_argument("--only", default=",".join(LISTINGS), help="listings to read, comma-separated")
    args = parser.parse_args()
    for name in args.only.split(","):
        for asked in (int(text) for text in args.sizes.split(",")):
            size = min(asked, SITEMAP_MAX_ENTRIES) if name.startswith("sitemap") else asked
            read = LISTINGS[name](size)
            started = time.process_time()
            kept = read()
            print(f"{name:>12} {size:>7,} entries: {time.process_time() - started:6.3f} s CPU, {kept:,} kept")


if __name__ == "__main__":
    main()
