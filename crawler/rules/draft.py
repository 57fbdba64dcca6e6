"""A site's first rule drafted from one of its pages (``crawler rules new SITE URL``): its domain, the feeds
the page advertises, the sitemaps its robots.txt names, the article links' pattern and the next page; or
from its feed (:func:`draft_feed_rule`), the pattern guessed from the entries' links, or none (every entry
read) when they show no article's shape.

How the article pattern is guessed:

1. the page's links to its own site (its host, or a subdomain of the host without ``www.``; hosts compared
   in their IDNA form, as links are requested) are taken, each once, the page itself left out; resolved as
   the crawl resolves them, against the page's ``<base href>`` when it has one: the links to the base's
   site are taken too, and the rule names its domain beside the page's;
2. each link's path is given a shape, segment by segment: a date (``/2026/11/28/``, ``/2026/nov/28/``,
   ``20261128``, ``/2026/1128/``, ``/2026-11/28/``) becomes ``\\d{4}``, ``\\d{1,2}`` (``\\d{2}`` when a
   group's links show a leading zero, ``/11/05/``), ``[a-z]{3}``...; a year's folder with no month after
   it (``/2026/slug.html``) ``\\d{4}``, a year; a run of digits ``\\d+``
   (``content_12345.htm`` is ``content_\\d+\\.htm``); a slug of three words or more
   (``harbour-bridge-reopens``) ``[^/]+``; an extension (``.html``, ``.shtml``, ``.htm``, ``.php``...)
   stays; other segments (``news``, ``world``) stay as written; a query keeps its keys, its values
   ``\\d+`` or ``[^&]*``. A session id (``;jsessionid=...`` ending the path; ``PHPSESSID=``, ``sid=``
   and the like in the query, unless a number: a story's id) and ``utm_`` tracking are no part of the
   shape: the crawl requests the links as they are, so the pattern allows them where the links have
   them, and the examples leave them out. A shape says what it holds: a date, a year, an id (a run of 3 digits
   or more), a slug, or navigation (a segment such as ``tag``, ``category``, ``about``, ``login``,
   ``page``, ``index``; a query key such as ``page``);
3. the shapes that look like articles (a date, a year, an id or a slug, and no navigation) are grouped with
   those that differ from them only in words (``/world/2026/...`` with ``/sport/2026/...``: the word becomes
   ``[^/]+``), or only in a token of letters and digits (sina's ``doc-inaurkmy1234567``, 163's
   ``JH4A5B6C0001899O``, a hex id; one of 8 characters or more is an id whatever its runs of digits): the
   group's tokens are written as a class that matches them (``[a-z]+\\d+``, ``[0-9A-Z]{16}``,
   ``[0-9a-f]{8,10}``), or as written (digits ``\\d+``) when they are alike. Tokens group with tokens of
   their kind (hex, letters then digits, digits then letters, other; their cases), and shapes whose only
   sign is such a token (no date, year or slug: /u/en659o2v21, /video/v45fda9988) keep their words:
   users, videos and ads are not sections of one kind of page. A link to an image, a script, a style
   sheet, a font or a media file (``.jpg``, ``.js``...) is no article;
4. the group with the most links wins (the stronger sign breaks a tie: a date, a year, a slug, an id), and
   its pattern is written as a regex of the whole URL, checked against every link it was made from; when a
   word written ``[^/]+`` would take in a link of the page that looks like no article (``/user/10001/``
   beside ``/world/48213/``), the group's words are written instead: ``(?:sport|world)``;
5. a link that is the AMP copy of an article linked on the page (or feed) too (``slug.amp.html``, an ``amp``
   folder, an ``amp`` or ``outputType=amp`` query beside ``slug.html``) is left out of steps 2 to 4, and
   when the pattern would keep such copies, their form is denied (``index.links.deny``): the crawl fetches
   each article once, not twice (the store would record the copy as a repost).

How the title field is guessed (:func:`guess_title`), from a few of the article pages the pattern keeps:

1. each sample page's ``<title>``, its Open Graph title (``og:title``) and its ``<h1>`` elements are read;
2. the site's name is what the ``<title>`` of every sample page ends (or starts) with beyond a separator
   (``| City News``): the title the crawl would store from the page's own ``<title>`` carries it;
3. the first of og:title and the ``<h1>`` (a page with one) found on every sample page, its values all
   different (a logo's ``<h1>`` is the same on each) and none carrying that name, is the title field.

How the published field is guessed (:func:`guess_published`), from the same pages: the crawl stores no
date a rule does not point to (qRead reads the body alone), so the first of these that gives, read as the
crawl reads it, a date the crawl recognises (:func:`crawler.published.published_date`) on every sample page
is the published field: the ``article:published_time`` meta (one on each page), the JSON-LD
``datePublished`` (the first in the page's ``application/ld+json`` scripts), the ``<time>`` marked
``itemprop="datePublished"``, else the page's only ``<time datetime>``: the most specific first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urljoin, urlsplit

import lxml.html

from crawler.errors import CrawlerError
from crawler.published import published_date
from crawler.rules.expressions import RuleRegex, RuleXPath
from crawler.rules.feeds import Feed
from crawler.rules.model import FieldRule, ascii_host, base_url, requested_url
from crawler.rules.sitemaps import SitemapError, read_sitemap
from extractors.encoding import query_codec
from extractors.htmlparse import parse_html

__all__ = [
    "Draft",
    "DraftError",
    "LinkPattern",
    "NextPage",
    "NoArticleLinks",
    "PublishedGuess",
    "TitleGuess",
    "draft_feed_rule",
    "draft_rule",
    "guess_published",
    "guess_title",
    "robots_sitemaps",
    "rule_text",
    "without_session",
]


class DraftError(CrawlerError):
    """No rule can be drafted from the page: it is no HTML page, or has no links to its site that look
    like articles'."""


class NoArticleLinks(DraftError):
    """The page has no links to its site that look like articles'; ``feeds``: the feeds on its site it
    advertises, from which a rule may be drafted instead."""

    def __init__(self, message: str, feeds: Sequence[str]) -> None:
        super().__init__(message)
        self.feeds = tuple(feeds)


# Path segments (and query keys) of navigation, not articles: section lists, tags, accounts, pagination.
# Not "p": WordPress's ?p=123 and Substack's /p/some-post-slug are posts, and a page number (?p=2, /p/2)
# is too short to be taken for an id anyway.
_NAV_WORDS = frozenset(
    {
        "about",
        "account",
        "archive",
        "archives",
        "author",
        "authors",
        "categories",
        "category",
        "contact",
        "feed",
        "feeds",
        "help",
        "index",
        "list",
        "login",
        "logout",
        "page",
        "paged",
        "pages",
        "pg",
        "privacy",
        "register",
        "rss",
        "search",
        "signin",
        "signup",
        "subscribe",
        "tag",
        "tags",
        "terms",
        "topic",
        "topics",
        "user",
        "users",
    }
)
_EXTENSION_RE = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)
# Links to files no article is (images, scripts, style sheets, fonts, media), often named by a CDN's hash.
_FILE_RE = re.compile(
    r"\.(?:avif|bmp|css|gif|ico|jpe?g|js|json|m4a|map|mjs|mp3|mp4|ogg|png|svg|ttf|webm|webp|woff2?)$",
    re.IGNORECASE,
)
_YEAR_RE = re.compile(r"(?:19|20)\d{2}")
_MONTH_RE = re.compile(r"0?[1-9]|1[0-2]")
_DAY_RE = re.compile(r"0?[1-9]|[12]\d|3[01]")
# Months as some sites write them in their paths (/world/2026/nov/28/...).
_MONTH_NAMES = frozenset("jan feb mar apr may jun jul aug sep oct nov dec".split())
# A date in one segment: 20261128, 2026-11-28, 2026_11_28, 202611 (a month's folder, as Chinese sites have).
_PACKED_DATE_RE = re.compile(r"((?:19|20)\d{2})([-_]?)(0[1-9]|1[0-2])(?:([-_]?)(0[1-9]|[12]\d|3[01]))?")
# A month and day in one folder after a year's, as Chinese portals write dates: /2026/1128/.
_MONTH_DAY_RE = re.compile(r"(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
_DIGITS_RE = re.compile(r"\d+")
# Ids are 3 digits or more: a shorter number is a page of a list (/page/2, index_2.shtml) as often as not.
_ID_DIGITS = 3
# An id of letters and digits (hex, base36: 5f3a9b2c, JH4A5B6C0001899O) is this long or more, whatever its
# runs of digits: a shorter word with a digit (mp3, g20, h5) is a name as often as an id.
_ALNUM_ID_CHARS = 8
# Words of a segment are split on these (doc-inaurkmy1234567 is doc and inaurkmy1234567).
_SEPARATORS = "[-_.]+"
# A token of letters and digits, both.
_ALNUM_RE = re.compile(r"(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]+")
_LETTERS_DIGITS_RE = re.compile(r"[A-Za-z]+\d+")
_DIGITS_LETTERS_RE = re.compile(r"\d+[A-Za-z]+")
_HEX_LETTERS = frozenset("abcdefABCDEF")
# Stands in a shape's segment for a token of letters and digits, written once its group is known (step 3).
_ALNUM = "\x00"
# A slug has this many words or more: two-word paths (/world-news) are sections as often as articles.
_SLUG_WORDS = 3
# Which sign wins a tie between two groups of as many links: a year's folder alone (/2026/slug.html) says
# less than a whole date, more than a slug.
_STRENGTH = {"date": 4, "year": 3, "slug": 2, "id": 1}
_ANY_SEGMENT = "[^/]+"
# A month's or day's folder, whatever its digits: a site that writes 28 November /11/28/ may write 5 December
# /12/5/; \d{2} once a group's links show a leading zero (/11/05/), which says it writes two digits.
_MONTH_OR_DAY = r"\d{1,2}"
# The texts of a next-page link, lowercased: English, Chinese, and the arrows both use.
_NEXT_TEXTS = ("next", "next page", "next »", "next ›", "next >", "older", "»", "›", "下一页", "下页", "后页")
_XML_SPACE_RE = re.compile(r"[ \t\n\r]+")
_FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})
# Query keys (and path parameters) of a session, lowercased: its value changes from one visit to the next.
_SESSION_KEYS = frozenset({"jsessionid", "phpsessid", "sid", "sessionid", "session_id"})
_PATH_SESSION_RE = re.compile(r";(?P<name>[A-Za-z_]+)=[^/;?]*$")
_TRACKING_PREFIX = "utm_"
_TRACKING_KEY = "utm_[a-z_]+"
_TRACKING_KEY_RE = re.compile(_TRACKING_KEY)


@dataclass(frozen=True, slots=True)
class _Shape:
    segments: tuple[str, ...]  # each a regex
    literal: tuple[bool, ...]  # which segments are words as written
    trailing_slash: bool
    pairs: tuple[str, ...]  # the query's pairs, each a regex, without sessions and tracking
    signs: frozenset[str]
    path_sessions: frozenset[str] = frozenset()  # the names of a session ending the path
    # The keys of sessions and tracking in the query, each a regex: before the first pair, after each.
    ignored: tuple[frozenset[str], ...] = (frozenset(),)
    alnum: tuple[str, ...] = ()  # the tokens of letters and digits, in the order of their _ALNUM
    # The lengths of its month's and day's folders, and whether one has a leading zero (/2026/11/05/).
    folder_digits: frozenset[int] = frozenset()
    leading_zero: bool = False

    @property
    def looks_like_article(self) -> bool:
        return not self.signs & {"nav", "file"} and bool(self.signs & _STRENGTH.keys())

    @property
    def by_token_alone(self) -> bool:
        """Whether its only sign of an article is a token of letters and digits (no date, slug or year)."""
        return bool(self.alnum) and not self.signs & {"date", "year", "slug"}

    @property
    def strength(self) -> int:
        return max((_STRENGTH.get(sign, 0) for sign in self.signs), default=0)

    def regex(self) -> str:
        path = "/" + "/".join(self.segments) + ("/" if self.trailing_slash and self.segments else "")
        if self.path_sessions:
            path += f"(?:;{_either(self.path_sessions)}=[^/?]*)?"
        return f"^https?://[^/]+{path}{self._query()}$"

    def _query(self) -> str:
        if not self.pairs:
            names = frozenset().union(*self.ignored)
            if not names:
                return ""
            key = _either(names)
            return rf"(?:\?{key}=[^&]*(?:&{key}=[^&]*)*)?"
        query = r"\?"
        for position, pair in enumerate(self.pairs):
            before = self.ignored[position]
            if before:
                key = _either(before)
                query += f"(?:{key}=[^&]*&)*" if position == 0 else f"(?:&{key}=[^&]*)*"
            query += pair if position == 0 else "&" + pair
        if self.ignored[-1]:
            query += f"(?:&{_either(self.ignored[-1])}=[^&]*)*"
        return query


def _either(names: frozenset[str]) -> str:
    """A regex of any of ``names`` (regexes themselves)."""
    ordered = sorted(names)
    return ordered[0] if len(ordered) == 1 else "(?:" + "|".join(ordered) + ")"


@dataclass(frozen=True, slots=True)
class LinkPattern:
    """The article links' regex, the links it was made from (in page order) and what it found in them."""

    regex: str
    links: tuple[str, ...]
    signs: tuple[str, ...]  # date, slug, id: the signs of articles it holds


@dataclass(frozen=True, slots=True)
class NextPage:
    """The next index page's XPath and the URL it gives on the page."""

    xpath: str
    url: str
    text: str  # what the link is: rel="next", or its text


# The article pages `rules new` fetches beside the page to guess the title and published fields from:
# enough to tell a title from a site-wide heading, few enough to add a second or two to the command.
TITLE_SAMPLES = 3
# The title fields guessed, in order of preference: the Open Graph title is meant to be the article's.
TITLE_XPATHS = (("og:title", "//meta[@property='og:title']/@content"), ("h1", "//h1"))
# What parts a site's name from the article's title in a <title>: | - – — : · »
_TITLE_SEPARATOR = re.compile(r"\s+[|\-–—:·»]\s+")


@dataclass(frozen=True, slots=True)
class TitleGuess:
    """The title field guessed from the sample article pages (:func:`guess_title`)."""

    name: str  # og:title or h1
    xpath: str
    samples: int  # the sample pages read
    example: str  # its value on the first
    site_name: str | None  # what the pages' <title>s carry beside the article's title


def guess_title(pages: Sequence[str]) -> TitleGuess | None:
    """The title field of the article ``pages`` (HTML), see the module's docstring; None when no candidate
    is found on every page, or fewer than two pages were read."""
    roots = _roots(pages)
    if len(roots) < 2:
        return None
    titles = [" ".join(str(root.xpath("string(//title)")).split()) for root in roots]
    site_name = _site_name(titles)
    for name, xpath in TITLE_XPATHS:
        values = []
        for root in roots:
            matches = root.xpath(xpath)
            found = [
                " ".join(
                    (value.text_content() if isinstance(value, lxml.html.HtmlElement) else str(value)).split()
                )
                for value in (matches if isinstance(matches, list) else [])
            ]
            values.append(found[0] if len(found) == 1 else "")
        if not all(values) or len(set(values)) < len(values):
            continue
        if site_name is not None and any(site_name in value for value in values):
            continue
        return TitleGuess(name, xpath, len(roots), values[0], site_name)
    return None


# The published fields guessed, most specific first: (what it is, its XPath, its regex or None). A field of
# XPath alone is taken only where it finds one value on each page (a page's other <time>s may be comments').
PUBLISHED_FIELDS = (
    ("article:published_time meta", "//meta[@property='article:published_time']/@content", None),
    (
        "JSON-LD datePublished",
        "//script[@type='application/ld+json'][contains(., 'datePublished')]",
        r'"datePublished"\s*:\s*"([^"]+)"',
    ),
    ("<time itemprop=datePublished>", "//time[@itemprop='datePublished']/@datetime", None),
    ("<time datetime>", "//time/@datetime", None),
)


@dataclass(frozen=True, slots=True)
class PublishedGuess:
    """The published field guessed from the sample article pages (:func:`guess_published`)."""

    name: str  # what it reads: the article:published_time meta, the JSON-LD datePublished, a <time>
    xpath: str
    regex: str | None
    samples: int  # the sample pages read
    example: str  # its value on the first
    stored: str  # that value as the crawl stores it (ISO-8601)


def guess_published(pages: Sequence[str]) -> PublishedGuess | None:
    """The published field of the article ``pages`` (HTML), see the module's docstring; None when no
    candidate gives a recognised date on every page, or fewer than two pages were read."""
    roots = _roots(pages)
    if len(roots) < 2:
        return None
    for name, xpath, regex in PUBLISHED_FIELDS:
        selector = RuleXPath(xpath)
        spec = FieldRule("published", (selector,), None if regex is None else RuleRegex(regex, spaces=" "))
        values = []
        for root in roots:
            if regex is None and len(selector(root)) != 1:
                break
            value = spec.extract(root, lambda: "")
            stored = published_date(value) if value is not None else None
            if value is None or stored is None:
                break
            values.append((value, stored))
        else:
            return PublishedGuess(name, xpath, regex, len(roots), *values[0])
    return None


def _roots(pages: Sequence[str]) -> list[lxml.html.HtmlElement]:
    """The ``pages`` (HTML) parsed, those that cannot be left out."""
    return [root for root in map(parse_html, pages) if root is not None]


def _site_name(titles: Sequence[str]) -> str | None:
    """What every one of ``titles`` ends (else starts) with past a separator: the site's name."""
    ends = [_TITLE_SEPARATOR.split(title) for title in titles]
    if not all(len(parts) > 1 for parts in ends):
        return None
    for index in (-1, 0):
        if len({parts[index] for parts in ends}) == 1 and ends[0][index]:
            return ends[0][index]
    return None


@dataclass(frozen=True, slots=True)
class Draft:
    """What ``crawler rules new`` guessed of a site from one of its pages."""

    site: str
    url: str  # the page (or feed), after redirects, without a session id: the start URL
    domains: tuple[str, ...]  # the page's, then its <base href>'s when links are on it
    site_links: tuple[str, ...]  # the page's links to its site, each once, in order
    # None: a feed's entries read whole, their links showing no article's shape to filter them by.
    pattern: LinkPattern | None
    next_page: NextPage | None
    feeds: tuple[str, ...]
    sitemaps: tuple[str, ...]
    allow_private: bool
    off_site_feeds: tuple[str, ...] = field(default=())  # feeds on other hosts, which a rule cannot name
    from_feed: bool = False  # url is a feed, the rule's only source: the entries' links gave the pattern
    amp_copies: tuple[str, ...] = ()  # links to AMP copies of the page's articles, left out of the guess
    deny: tuple[str, ...] = ()  # index.links.deny: the forms of the AMP copies the pattern would keep
    title: TitleGuess | None = None  # the title field, from sample article pages
    published: PublishedGuess | None = None  # the published field, from the same pages
    # The sitemaps robots.txt names, left out of a rule with no pattern: it would read every page they list.
    unfiltered_sitemaps: tuple[str, ...] = ()

    @property
    def matched(self) -> list[str]:
        """The page's links to its site that the pattern keeps and no ``deny`` refuses."""
        if self.pattern is None:
            return list(self.site_links)
        compiled = re.compile(self.pattern.regex)
        denied = [re.compile(regex) for regex in self.deny]
        return [
            link
            for link in self.site_links
            if compiled.search(link) and not any(deny.search(link) for deny in denied)
        ]

    @property
    def denied(self) -> list[str]:
        """The AMP copies the pattern keeps and ``deny`` refuses."""
        if self.pattern is None:
            return []
        compiled = re.compile(self.pattern.regex)
        denied = [re.compile(regex) for regex in self.deny]
        return [
            link
            for link in self.amp_copies
            if compiled.search(link) and any(deny.search(link) for deny in denied)
        ]

    @property
    def example(self) -> str:
        """The first link the pattern keeps, without a session id or tracking (:func:`without_session`)."""
        return without_session(self.matched[0])


def site_domain(host: str) -> str:
    """The domain a rule of a page on ``host`` names: the host without ``www.`` (subdomains are allowed)."""
    return host.removeprefix("www.") if host.count(".") >= 2 else host


def url_domain(url: str) -> str:
    """The domain a rule of a page at ``url`` names, in the form links are requested in (IDNA)."""
    return site_domain(ascii_host(urlsplit(url).hostname or ""))


def on_domain(url: str, domain: str) -> bool:
    host = ascii_host(urlsplit(url).hostname or "")
    return host == domain or host.endswith("." + domain)


def draft_rule(
    site: str,
    html: str,
    url: str,
    *,
    encoding: str,
    robots: bytes | None,
    allow_private: bool,
) -> Draft:
    """The rule of ``site`` guessed from its page ``html`` at ``url`` (read in the web ``encoding``) and
    its robots.txt (``robots``, None when it had none); :class:`DraftError` when the page has no links to
    its site that look like articles'."""
    root = parse_html(html)
    if root is None:
        raise DraftError(f"{url} holds no HTML to read links from")
    domain = url_domain(url)
    codec = query_codec(encoding)
    base = base_url(url, root)
    base_domain = url_domain(base)
    hrefs = [anchor.get("href") for anchor in root.iter("a")]
    links = _unique(requested_url(base, href or "", codec) for href in hrefs)
    own = requested_url(url, url, codec) or url
    wanted = (domain,) if on_domain(base, domain) else (domain, base_domain)
    site_links = tuple(link for link in links if _on_domains(link, wanted) and link != own)
    domains = tuple(
        name for name in wanted if name == domain or any(on_domain(link, name) for link in site_links)
    )
    named = " or ".join(wanted)
    feeds = _feeds(root, base, codec)
    own_feeds = [feed for feed in feeds if _on_domains(feed, domains)]
    if not site_links:
        raise NoArticleLinks(
            f"{url} has no links to {named} ({len(links)} links in all{_unfollowed(hrefs, base, codec)}):"
            " give the URL of the site's home page or of a section page that lists its articles",
            own_feeds,
        )
    amp_copies = _amp_copies(site_links)
    pattern = _article_pattern([link for link in site_links if link not in amp_copies])
    if pattern is None:
        raise NoArticleLinks(
            f"none of the {len(site_links)} links of {url} to {named} looks like an article link (a date, a"
            f" numeric id or a long slug in its path; {_shapes_seen(site_links)}): give the URL of a"
            " section page that lists articles, or write the rule by hand (docs/rules.md)",
            own_feeds,
        )
    return Draft(
        site=site,
        url=without_session(url),
        domains=domains,
        site_links=site_links,
        pattern=pattern,
        next_page=_next_page(root, base, codec, domains, own),
        feeds=tuple(feed for feed in feeds if _on_domains(feed, domains)),
        sitemaps=_own_sitemaps(robots, url, domains),
        allow_private=allow_private,
        off_site_feeds=tuple(feed for feed in feeds if not _on_domains(feed, domains)),
        amp_copies=tuple(amp_copies),
        deny=_amp_deny(pattern, amp_copies),
    )


def draft_feed_rule(site: str, feed: Feed, url: str, *, robots: bytes | None, allow_private: bool) -> Draft:
    """The rule of ``site`` that reads the feed ``feed`` at ``url`` (its robots.txt ``robots``): the
    pattern guessed from its entries' links as from a page's, on the feed's domain (and on the one its
    entries are on when none is on the feed's); no pattern, every entry read, when no link looks like an
    article's (a feed lists articles: ``/news/story-1.html`` is one, though no page's link of that shape
    tells it from a page of the site's menu); :class:`DraftError` when it has no entry on those domains."""
    domain = url_domain(url)
    links = _unique(requested_url(url, entry.url, "utf-8") for entry in feed.entries)
    domains: tuple[str, ...] = (domain,)
    if links and not any(on_domain(link, domain) for link in links):
        hosts = Counter(url_domain(link) for link in links)
        domains += (hosts.most_common(1)[0][0],)
    site_links = tuple(link for link in links if _on_domains(link, domains))
    if not site_links:
        raise DraftError(
            f"the feed {url} has no entries linking to {' or '.join(domains)} ({len(feed.entries)} entries in"
            " all): give the URL of a feed that lists the site's articles, or of a section page that lists"
            " them"
        )
    amp_copies = _amp_copies(site_links)
    pattern = _article_pattern([link for link in site_links if link not in amp_copies])
    sitemaps = _own_sitemaps(robots, url, domains)
    return Draft(
        site=site,
        url=without_session(url),
        domains=domains,
        site_links=site_links,
        pattern=pattern,
        next_page=None,
        feeds=(without_session(url),),
        sitemaps=() if pattern is None else sitemaps,
        allow_private=allow_private,
        from_feed=True,
        amp_copies=tuple(amp_copies),
        deny=() if pattern is None else _amp_deny(pattern, amp_copies),
        unfiltered_sitemaps=sitemaps if pattern is None else (),
    )


def _own_sitemaps(robots: bytes | None, url: str, domains: Sequence[str]) -> tuple[str, ...]:
    """The sitemaps on ``domains`` that ``robots`` (the robots.txt of ``url``'s host, None when it has
    none) lists."""
    sitemaps = robots_sitemaps(robots, url) if robots is not None else []
    return tuple(sitemap for sitemap in sitemaps if _on_domains(sitemap, domains))


def _unfollowed(hrefs: Sequence[str | None], base: str, codec: str) -> str:
    """What the ``<a>`` of ``hrefs`` that give no link lead to (``javascript:``, a place on the page, no
    href, another scheme), for the error of a page without links to its site; empty when there are none."""
    kinds: Counter[str] = Counter()
    for href in hrefs:
        text = (href or "").strip()
        if href is None:
            kinds["without an href"] += 1
        elif text.startswith("#") or not text:
            kinds["a place on the page (#...)"] += 1
        elif requested_url(base, text, codec) is None:
            scheme = urlsplit(text).scheme.lower()
            kinds[f"{scheme}:" if scheme else "no URL a request can be made of"] += 1
    if not kinds:
        return ""
    said = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    return f"; {kinds.total()} of its {len(hrefs)} <a> elements lead to no page the crawl fetches: {said}" + (
        "; the crawl runs no JavaScript" if "javascript:" in kinds else ""
    )


def _on_domains(url: str, domains: Sequence[str]) -> bool:
    return any(on_domain(url, domain) for domain in domains)


def _unique(urls: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(url for url in urls if url is not None))


def _shape(url: str) -> _Shape:
    """The shape of ``url``'s path and query (step 2 of the module's docstring)."""
    parts = urlsplit(url)
    path = parts.path
    path_sessions: frozenset[str] = frozenset()
    session = _path_session(path)
    if session is not None:
        path = path[: session.start()]
        path_sessions = frozenset({_literal(session.group("name"))})
    pieces = [piece for piece in path.split("/") if piece]
    segments: list[str] = []
    literal: list[bool] = []
    signs: set[str] = {"file"} if _FILE_RE.search(path) else set()
    alnum: list[str] = []
    folders: list[str] = []
    index = 0
    while index < len(pieces):
        piece = pieces[index]
        date = _date_folders(pieces[index:])
        if date:
            folders += [
                folder
                for folder, pattern in zip(pieces[index:], date, strict=False)
                if pattern == _MONTH_OR_DAY
            ]
            segments += date
            literal += [False] * len(date)
            signs.add("date")
            index += len(date)
            continue
        if index < len(pieces) - 1 and _YEAR_RE.fullmatch(piece):
            segments.append(r"\d{4}")
            literal.append(False)
            signs.add("year")
            index += 1
            continue
        extension = _EXTENSION_RE.search(piece)
        stem = piece[: extension.start()] if extension else piece
        suffix = _literal(extension.group()) if extension else ""
        pattern, sign = _stem_shape(stem)
        if _ALNUM in pattern:
            alnum += [token for token in re.split(_SEPARATORS, stem) if _ALNUM_RE.fullmatch(token)]
        if sign is None and stem.lower() in _NAV_WORDS:
            sign = "nav"
        if sign is not None:
            signs.add(sign)
        segments.append(pattern + suffix)
        literal.append(sign in (None, "nav"))
        index += 1
    pairs: list[str] = []
    ignored: list[set[str]] = [set()]
    for pair in parts.query.split("&") if parts.query else ():
        key, _, value = pair.partition("=")
        skipped = _ignored_key(key, value)
        if skipped is not None:
            ignored[-1].add(skipped)
            continue
        if key.lower() in _NAV_WORDS:
            signs.add("nav")
        if value.isdigit():
            signs.add("id" if len(value) >= _ID_DIGITS else "small")
            pairs.append(f"{_literal(key)}=\\d+")
        else:
            pairs.append(f"{_literal(key)}=[^&]*")
        ignored.append(set())
    return _Shape(
        tuple(segments),
        tuple(literal),
        path.endswith("/"),
        tuple(pairs),
        frozenset(signs),
        path_sessions,
        tuple(map(frozenset, ignored)),
        tuple(alnum),
        frozenset(map(len, folders)),
        any(folder.startswith("0") for folder in folders),
    )


def _path_session(path: str) -> re.Match[str] | None:
    """A session id ending ``path`` (``;jsessionid=...``), or None."""
    found = _PATH_SESSION_RE.search(path)
    return found if found is not None and found.group("name").lower() in _SESSION_KEYS else None


def _ignored_key(key: str, value: str) -> str | None:
    """The regex of a query key of tracking (``utm_source``) or a session (its value no number: a ``sid``
    of digits is a story's id), which the shape leaves out; None for the others."""
    if key.lower().startswith(_TRACKING_PREFIX):
        return _TRACKING_KEY if _TRACKING_KEY_RE.fullmatch(key) else _literal(key)
    if key.lower() in _SESSION_KEYS and not value.isdigit():
        return _literal(key)
    return None


def without_session(url: str) -> str:
    """``url`` without the session id and tracking the article pattern leaves out (step 2)."""
    parts = urlsplit(url)
    session = _path_session(parts.path)
    path = parts.path[: session.start()] if session is not None else parts.path
    kept = []
    for pair in parts.query.split("&") if parts.query else ():
        key, _, value = pair.partition("=")
        if _ignored_key(key, value) is None:
            kept.append(pair)
    return parts._replace(path=path, query="&".join(kept)).geturl()


def _date_folders(pieces: Sequence[str]) -> list[str]:
    """The patterns of a date written as folders at the start of ``pieces`` (``2026/11/28``, ``2026/11``,
    ``2026/1128``), or of one folder holding a date (``20261128``, ``2026-11-28``, ``202611``, followed by
    its day's folder: ``2026-11/20``); empty when there is none."""
    if _YEAR_RE.fullmatch(pieces[0]) and len(pieces) > 1 and _MONTH_RE.fullmatch(pieces[1]):
        found = [r"\d{4}", _MONTH_OR_DAY]
        if len(pieces) > 2 and _DAY_RE.fullmatch(pieces[2]):
            found.append(_MONTH_OR_DAY)
        return found
    if _YEAR_RE.fullmatch(pieces[0]) and len(pieces) > 1 and _MONTH_DAY_RE.fullmatch(pieces[1]):
        return [r"\d{4}", r"\d{4}"]
    if _YEAR_RE.fullmatch(pieces[0]) and len(pieces) > 1 and pieces[1].lower() in _MONTH_NAMES:
        found = [r"\d{4}", "[a-z]{3}"]
        if len(pieces) > 2 and _DAY_RE.fullmatch(pieces[2]):
            found.append(_MONTH_OR_DAY)
        return found
    packed = _PACKED_DATE_RE.fullmatch(pieces[0])
    if packed:
        first, second, day = packed.group(2, 4, 5)
        found = [r"\d{4}" + first + r"\d{2}" + (second + r"\d{2}" if day else "")]
        if not day and len(pieces) > 1 and _DAY_RE.fullmatch(pieces[1]):
            found.append(_MONTH_OR_DAY)
        return found
    return []


def _stem_shape(stem: str) -> tuple[str, str | None]:
    """A segment's pattern without its extension, and its sign (id, slug, small, or None for a word)."""
    if stem.isdigit():
        return r"\d+", "id" if len(stem) >= _ID_DIGITS else "small"
    words = [word for word in re.split(r"[-_.]+", stem) if word]
    if len(words) >= _SLUG_WORDS and sum(not word.isdigit() for word in words) >= 2:
        return _ANY_SEGMENT, "slug"
    runs = _DIGITS_RE.findall(stem)
    if runs:
        if any(_PACKED_DATE_RE.fullmatch(run) for run in runs if len(run) == 8):
            return _digits_shape(stem), "date"
        pieces = re.split(f"({_SEPARATORS})", stem)
        pattern = "".join(
            _ALNUM if _ALNUM_RE.fullmatch(piece) else _digits_shape(piece) for piece in pieces if piece
        )
        alnum_id = any(len(piece) >= _ALNUM_ID_CHARS for piece in pieces if _ALNUM_RE.fullmatch(piece))
        return pattern, "id" if alnum_id or max(map(len, runs)) >= _ID_DIGITS else "small"
    return _literal(stem), None


def _digits_shape(text: str) -> str:
    """``text`` as a regex with its runs of digits ``\\d+``, the rest as written."""
    return "".join(
        r"\d+" if piece.isdigit() else _literal(piece) for piece in re.split(r"(\d+)", text) if piece
    )


def _alnum_class(tokens: Sequence[str]) -> str:
    """The regex of a group's tokens of letters and digits that stand at one place: as written (its digits
    ``\\d+``) when they are alike, else a class of them: ``[a-z]+\\d+`` (letters then digits, as sina's
    inaurkmy1234567), ``\\d+[a-z]+``, or their characters and lengths (``[0-9a-f]{8}``, ``[0-9A-Z]{16}``)."""
    if len({_digits_shape(token) for token in tokens}) == 1:
        return _digits_shape(tokens[0])
    chars = set("".join(tokens))
    letters = ("A-Z" if any(char.isupper() for char in chars) else "") + (
        "a-z" if any(char.islower() for char in chars) else ""
    )
    if all(_LETTERS_DIGITS_RE.fullmatch(token) for token in tokens):
        return f"[{letters}]+\\d+"
    if all(_DIGITS_LETTERS_RE.fullmatch(token) for token in tokens):
        return f"\\d+[{letters}]+"
    if chars - set("0123456789") <= _HEX_LETTERS:
        letters = letters.replace("a-z", "a-f").replace("A-Z", "A-F")
    shortest, longest = min(map(len, tokens)), max(map(len, tokens))
    return f"[0-9{letters}]" + (f"{{{shortest}}}" if shortest == longest else f"{{{shortest},{longest}}}")


def _token_kind(token: str) -> str:
    """What a token of letters and digits is, as a group's tokens are to be alike: hex (5f3a9b2c, a1234),
    letters then digits (inaurkmy1234567), digits then letters, or other (JH4A5B6C0001899O), and its
    cases."""
    cases = ("A" if any(char.isupper() for char in token) else "") + (
        "a" if any(char.islower() for char in token) else ""
    )
    if set(token) - set("0123456789") <= _HEX_LETTERS:
        return "hex " + cases
    if _LETTERS_DIGITS_RE.fullmatch(token):
        return "letters digits " + cases
    if _DIGITS_LETTERS_RE.fullmatch(token):
        return "digits letters " + cases
    return "other " + cases


def _literal(text: str) -> str:
    """``text`` as a regex that matches it, without the escapes a reader need not see (``uk-news``, not
    ``uk\\-news``: a dash is special only in brackets)."""
    return re.escape(text).replace("\\-", "-")


def _article_pattern(links: Sequence[str]) -> LinkPattern | None:
    """Steps 3 and 4 of the module's docstring: the article links' pattern, or None when no shape looks
    like articles'."""
    shapes = {link: _shape(link) for link in links}
    families: dict[tuple[object, ...], list[str]] = {}
    for link, shape in shapes.items():
        if not shape.looks_like_article:
            continue
        words_out = tuple(
            None if is_word and not shape.by_token_alone else segment
            for segment, is_word in zip(shape.segments, shape.literal, strict=True)
        )
        kinds = tuple(map(_token_kind, shape.alnum))
        families.setdefault((words_out, kinds, shape.trailing_slash, shape.pairs), []).append(link)
    if not families:
        return None
    members = max(
        families.values(),
        key=lambda family: (len(family), max(shapes[link].strength for link in family)),
    )
    first = shapes[members[0]]
    words = [
        sorted({shapes[link].segments[position] for link in members}) if is_word else [segment]
        for position, (segment, is_word) in enumerate(zip(first.segments, first.literal, strict=True))
    ]
    segments = tuple(word[0] if len(word) == 1 else _ANY_SEGMENT for word in words)
    classes = iter(
        [_alnum_class(tokens) for tokens in zip(*(shapes[link].alnum for link in members), strict=True)]
    )
    segments = tuple(
        re.sub(_ALNUM, lambda _: next(classes), segment) if _ALNUM in segment else segment
        for segment in segments
    )
    lengths = frozenset().union(*(shapes[link].folder_digits for link in members))
    if lengths == {2} and any(shapes[link].leading_zero for link in members):
        segments = tuple(r"\d{2}" if segment == _MONTH_OR_DAY else segment for segment in segments)
    signs = frozenset().union(*(shapes[link].signs for link in members)) & _STRENGTH.keys()
    merged = _Shape(
        segments,
        first.literal,
        first.trailing_slash,
        first.pairs,
        signs,
        frozenset().union(*(shapes[link].path_sessions for link in members)),
        tuple(
            frozenset().union(*gap) for gap in zip(*(shapes[link].ignored for link in members), strict=True)
        ),
    )
    regex = merged.regex()
    others = [link for link, shape in shapes.items() if not shape.looks_like_article]
    if _ANY_SEGMENT in segments and any(re.search(regex, link) for link in others):
        merged = replace(
            merged,
            segments=tuple(
                "(?:" + "|".join(word) + ")" if len(word) > 1 else segment
                for word, segment in zip(words, merged.segments, strict=True)
            ),
        )
        regex = merged.regex()
    compiled = re.compile(regex)
    missed = [link for link in members if not compiled.search(link)]
    assert not missed, f"the pattern {regex} misses links it was made from: {missed}"
    ordered = tuple(sorted(signs, key=lambda sign: -_STRENGTH[sign]))
    return LinkPattern(regex, tuple(members), ordered)


# The forms of an AMP copy's URL (Google's accelerated mobile pages, a news site's second URL of each
# article): ``.amp`` before the extension, an ``amp`` folder, an ``amp`` or ``outputType=amp`` query; each
# with the regex that denies it and the substitution that gives the article's own URL.
_AMP_FORMS = (
    (r"\.amp\.[0-9A-Za-z]+(?:[?#]|$)", re.compile(r"\.amp(?=\.[0-9A-Za-z]+$)"), "path"),
    (r"/amp(?:[/?#]|$)", re.compile(r"/amp(?=/|$)"), "path"),
    (
        r"[?&](?:amp(?:=[^&]*)?|outputType=amp)(?:&|$)",
        re.compile(r"(?:^|&)(?:amp(?:=[^&]*)?|outputType=amp)(?=&|$)"),
        "query",
    ),
)


def _amp_articles(link: str) -> list[str]:
    """The URLs of the article ``link`` would be an AMP copy of, one per form of :data:`_AMP_FORMS` it has
    (each alone: ``/amp/news/x.amp.html`` may be the copy of ``/amp/news/x.html``)."""
    parts = urlsplit(link)
    articles = []
    for _, form, where in _AMP_FORMS:
        if where == "path":
            article = parts._replace(path=form.sub("", parts.path) or "/").geturl()
        else:
            article = parts._replace(query=form.sub("", parts.query).lstrip("&")).geturl()
        if article != link:
            articles.append(article)
    return articles


def _amp_copies(links: Sequence[str]) -> list[str]:
    """The links that are AMP copies of an article linked on the page too: its second URL, which a crawl
    would fetch again (the store then records it as a repost)."""
    present = set(links)
    return [link for link in links if any(article in present for article in _amp_articles(link))]


def _amp_deny(pattern: LinkPattern, copies: Sequence[str]) -> tuple[str, ...]:
    """The ``deny`` regexes of the AMP forms that ``pattern`` would keep among ``copies``, each denying
    none of the links the pattern was made from."""
    compiled = re.compile(pattern.regex)
    kept = [copy for copy in copies if compiled.search(copy)]
    return tuple(
        deny
        for deny, _, _ in _AMP_FORMS
        if any(re.search(deny, copy) for copy in kept)
        and not any(re.search(deny, link) for link in pattern.links)
    )


def _shapes_seen(links: Sequence[str]) -> str:
    """The most common shapes of ``links``, for the error of a page without article links."""
    counts: dict[str, int] = {}
    for link in links:
        parts = urlsplit(link)
        key = parts.path + ("?" + parts.query if parts.query else "")
        shown = re.sub(r"/[^/]+", "/x", key) if len(key) > 40 else key
        counts[shown] = counts.get(shown, 0) + 1
    common = sorted(counts.items(), key=lambda item: -item[1])[:4]
    return "paths such as " + ", ".join(path for path, _ in common)


def _feeds(root: lxml.html.HtmlElement, base: str, codec: str) -> list[str]:
    """The RSS and Atom feeds the page advertises (``<link rel="alternate" type="application/rss+xml">``)."""
    found = []
    for element in root.iter("link"):
        rel = str(element.get("rel") or "").lower().split()
        kind = str(element.get("type") or "").split(";")[0].strip().lower()
        if "alternate" in rel and kind in _FEED_TYPES:
            found.append(requested_url(base, str(element.get("href") or ""), codec))
    return _unique(found)


def robots_sitemaps(robots: bytes, url: str) -> list[str]:
    """The sitemaps a robots.txt names in its ``Sitemap:`` lines, as a crawl reads them
    (:func:`read_sitemap`), resolved against the page's ``url``."""
    try:
        named = read_sitemap(robots, urljoin(url, "/robots.txt")).entries
    except SitemapError:  # a robots.txt that is a broken gzip file, or over 50 MB: it names none
        return []
    return _unique([requested_url(url, entry.url, "utf-8") for entry in named])


def _next_page(
    root: lxml.html.HtmlElement, base: str, codec: str, domains: Sequence[str], own: str
) -> NextPage | None:
    """The next page link: an ``<a>`` (or a ``<link>``) whose rel is next, else an ``<a>`` whose text is
    next's (``next``, ``下一页``, ``›``), on the site and not the page itself."""
    candidates: list[tuple[str, str, str]] = []
    for tag in ("a", "link"):
        for element in root.iter(tag):
            rel = str(element.get("rel") or "").split()
            if "next" in [value.lower() for value in rel]:
                test = (
                    "@rel='next'"
                    if element.get("rel") == "next"
                    else "contains(concat(' ', normalize-space(@rel), ' '), ' next ')"
                )
                candidates.append((f"//{tag}[{test}]/@href", str(element.get("href") or ""), 'rel="next"'))
    for anchor in root.iter("a"):
        # As XPath's normalize-space() reads it: a no-break space is no white space to it.
        text = " ".join(filter(None, _XML_SPACE_RE.split(anchor.text_content())))
        if text.lower() in _NEXT_TEXTS and not ("'" in text and '"' in text):
            quote = '"' if "'" in text else "'"
            candidates.append(
                (
                    f"//a[normalize-space(.)={quote}{text}{quote}]/@href",
                    str(anchor.get("href") or ""),
                    repr(text),
                )
            )
    for xpath, href, what in candidates:
        target = requested_url(base, href, codec)
        if target is not None and target != own and _on_domains(target, domains):
            return NextPage(xpath, target, what)
    return None


def _yaml(value: str) -> str:
    """``value`` as a YAML string: single-quoted (a regex's backslashes as they are), double-quoted when
    it holds a single quote."""
    if "'" in value:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"'{value}'"


def rule_text(draft: Draft, *, today: str, command: str, path: str) -> str:
    """The YAML of ``draft``'s rule, with comments saying what was guessed and from how many links;
    ``path``: the file it is written to, as its first comment names it; ``command``: how ``crawler`` is
    run, as the commands its comments name are written."""
    matched = len(draft.matched)
    owners = " and ".join(draft.domains)
    source = "feed" if draft.from_feed else "page"
    lines = [
        f"# {path}: drafted by `{command} rules new` on {today} from",
        f"# {draft.url}. Guessed from that one {source}: check it with"
        f" `{command} rules try {draft.site} URL`",
        f"# on an article and on this {source}, then edit it (docs/rules.md).",
        f"domains: [{', '.join(map(_yaml, draft.domains))}]",
    ]
    if draft.allow_private:
        lines.append("allow_private_addresses: true   # the site is on this machine or an intranet")
    if draft.from_feed:
        lines.append("feeds:                           # the site's articles are read from this feed alone")
    else:
        lines += ["start_urls:", f"  - {_yaml(draft.url)}"]
        if draft.feeds:
            lines.append('feeds:                           # advertised by the page (<link rel="alternate">)')
    lines += [f"  - {_yaml(feed)}" for feed in draft.feeds]
    for feed in draft.off_site_feeds:
        lines.append(f"# feed on another host, which a rule of {owners} cannot read: {feed}")
    if draft.sitemaps:
        lines.append("sitemaps:                        # named by robots.txt (Sitemap:); a temp crawl reads")
        lines.append("                                 # every page they list that index.links allows")
        lines += [f"  - {_yaml(sitemap)}" for sitemap in draft.sitemaps]
    pattern = draft.pattern
    if pattern is None:
        lines += [
            f"# no index: every entry of the feed is read; its {matched} links to {owners} (e.g.",
            f"# {draft.example}) show no date, numeric id or long slug to filter them by",
        ]
        if draft.unfiltered_sitemaps:
            lines.append("# sitemaps named by robots.txt, left out: with no index.links.allow to filter")
            lines.append("# them, a crawl would read every page they list as an article")
            lines += [f"# sitemaps: [{_yaml(sitemap)}]" for sitemap in draft.unfiltered_sitemaps]
    else:
        signs = ", ".join(
            {"date": "a date", "year": "a year", "slug": "a slug", "id": "a numeric id"}[sign]
            for sign in pattern.signs
        )
        lines += [
            "index:",
            "  links:",
            f"    # guessed from {len(pattern.links)} of the {source}'s {len(draft.site_links)} links to"
            f" {owners}, which hold {signs};",
            f"    # it keeps {matched} of them, e.g. {draft.example}",
            f"    allow: [{_yaml(pattern.regex)}]",
        ]
    denied = draft.denied
    if draft.deny:
        lines += [
            f"    # the AMP copies of its articles ({len(denied)} links, e.g. {denied[0]}):"
            " each article once",
            f"    deny: [{', '.join(map(_yaml, draft.deny))}]",
        ]
    if draft.next_page is not None:
        next_page = draft.next_page
        lines += [
            f"  next_page: {_yaml(next_page.xpath)}",
            f"  # found: the link {next_page.text} to {next_page.url}",
            "  max_pages: 2                   # index pages read per grab, this one and the next",
        ]
    title, published = draft.title, draft.published
    if title is None and published is None:
        lines += [
            "# article:                        # no fields: the title and body are the page's own (qRead);",
            "#   fields:                       # add XPath fields when `rules try` shows what to improve",
            '#     title: {xpath: "//h1"}',
        ]
    else:
        lines += [
            "article:",
            "  fields:                         # the body is the page's own (qRead); add XPath fields when",
            "                                  # `rules try` shows what to improve",
        ]
    if title is not None:
        carried = f", where their <title> carries {title.site_name!r}" if title.site_name else ""
        lines += [
            f"    # the {title.name} of the {title.samples} sample articles read{carried}",
            f"    title: {{xpath: {_yaml(title.xpath)}}}",
        ]
    if published is not None:
        regex = f", regex: {_yaml(published.regex)}" if published.regex is not None else ""
        lines += [
            f"    # the {published.name} of the {published.samples} sample articles read, e.g."
            f" {published.example}",
            f"    published: {{xpath: {_yaml(published.xpath)}{regex}}}",
        ]
    lines += [
        "politeness:",
        "  delay: 1                         # seconds between two requests to the site",
        "  concurrency: 2",
        f"# schedule: {{every: 1h}}           # regular grabs (`{command} run`); `{command} temp` crawls it"
        " now",
    ]
    return "\n".join(lines) + "\n"
