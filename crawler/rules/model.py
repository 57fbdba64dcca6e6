"""The compiled rule, and applying it to a page: :meth:`Rule.article_links`, :meth:`Rule.next_page_url`
and :meth:`Rule.extract_fields`, all working on an lxml element (``response.selector.root``), and to a
feed's entries (:meth:`Rule.feed_entries`) and a sitemap's (:meth:`Rule.sitemap_entries`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta, tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar
from urllib.parse import quote_plus, urldefrag, urljoin, urlsplit

from lxml import etree
from w3lib.url import safe_url_string

from crawler.commandline import suggest
from crawler.rules.access import Proxy, Session
from crawler.rules.api import ApiRule
from crawler.rules.errors import RuleError, files_with_errors
from crawler.rules.expressions import RegexBudget, RuleRegex, RuleXPath
from crawler.rules.feeds import FeedEntry
from crawler.rules.sitemaps import SitemapEntry
from crawler.settings import QREAD_MIN_BODY_CHARS
from extractors.encoding import Doubt, query_codec
from extractors.text import normalize_space

__all__ = [
    "BEST_FIRST",
    "BREADTH_FIRST",
    "DISCOVER_STRATEGIES",
    "HTTP_SCHEMES",
    "LEARNED",
    "LISTING_PAGES",
    "PUBLISHED_FIX",
    "STANDARD_FIELDS",
    "DiscoverRule",
    "FieldRule",
    "LinkRule",
    "ListingKind",
    "Rule",
    "RuleSet",
    "SearchRule",
    "ascii_host",
    "base_url",
    "requested_url",
]

# How a discover crawl orders its frontier (see crawler.discover.frontier): by the learnt value of each link
# with a bandit over hosts, by the relevance of the page a link was found on, or by depth then arrival.
LEARNED = "learned"
BEST_FIRST = "best-first"
BREADTH_FIRST = "breadth-first"
DISCOVER_STRATEGIES = (LEARNED, BEST_FIRST, BREADTH_FIRST)
# What a rule's key says a URL is (Rule.listing_key): a crawl reads it as that.
ListingKind = Literal["feed", "sitemap", "api", "search"]

# Why an entry of a feed or a sitemap is not followed (Rule.feed_entries, Rule.sitemap_entries), as
# `crawler rules try` counts them.
OFF_DOMAINS: Final = "off the domains"
REPEATED: Final = "repeated"
REFUSED: Final = "refused by index.links"
# An entry of a feed or a sitemap: a link with what its document says of it.
_Entry = TypeVar("_Entry", FeedEntry, SitemapEntry)

# Per kind of listing page a rule key names (Rule.named_by): what the page should be.
LISTING_PAGES: Final = {
    "index": "an index page of the site",
    "feed": "the site's feed",
    "sitemap": "the site's sitemap",
    "api": "the API's first page",
    "seed": "a page its discover crawl starts from",
}
# The fields every article item has (None when the rule does not give them); any other name is custom.
STANDARD_FIELDS: Final = ("title", "body", "published", "author")
# What a rule's published field that gives no date the crawl recognises (crawler.worker.pipelines.clean) is
# to give instead.
PUBLISHED_FIX: Final = (
    "give a regex that captures an ISO-8601 date (2026-11-21, 2026-11-21T10:31:00) or an RFC 2822 one"
    " (Sat, 21 Nov 2026 10:31:00 GMT), or a date the crawl reads: year first (2026/11/21, 2026.11.21 10:31,"
    " 2026年11月21日) or with an English month name (November 21, 2026; 21 Nov 2026); day-first and"
    " month-first numeric dates (21/11/2026, 11/21/2026) are ambiguous and never read: for those, an XPath"
    " to the page's machine date (//time/@datetime, //meta[@property='article:published_time']/@content)"
)
# ...and what a rule's api.fields.published is to give instead.
API_PUBLISHED_FIX: Final = (
    "give a JMESPath to the item's date in a form the crawl reads: ISO-8601 (2026-11-21T10:31:00Z), RFC 2822"
    " (Sat, 21 Nov 2026 10:31:00 GMT), a Unix timestamp in seconds or milliseconds (1763634660,"
    " 1763634660000), year first (2026/11/21) or with an English month name (November 21, 2026)"
)

# White space HTML strips around attribute values such as href.
_HTML_SPACE = " \t\n\r\f"
HTTP_SCHEMES: Final = frozenset({"http", "https"})
# Elements whose text is not page text (unless an XPath selects them directly).
_NO_TEXT_TAGS = frozenset({"script", "style", "template"})
# Elements that start a new line in the text of an element, as a browser shows it.
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd details dialog div dl dt fieldset figcaption figure footer form"
    " h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody tfoot thead tr ul".split()
)


def ascii_host(host: str) -> str:
    """``host`` as ``domains`` holds host names and requests go to: lower case, without a final dot, an
    international name in its ASCII (IDNA) form (left as it is when it has none, e.g. a label too long)."""
    host = host.rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


_ALL_HREFS = etree.XPath("//a/@href", smart_strings=False)
_BASE_HREF = etree.XPath("(//base/@href)[1]", smart_strings=False)


# Where a page declares its charset, as a rule's encoding warning names it.
_DECLARED_BY = {"bom": "byte order mark", "declared": "Content-Type", "meta": "<meta>"}


@dataclass(frozen=True, slots=True, eq=False)
class FieldRule:
    """How one field is read: the first XPath with a non-empty result, joined, then the regex, stripped."""

    name: str
    xpath: tuple[RuleXPath, ...] = ()
    regex: RuleRegex | None = None
    join: str = " "
    strip: bool = True

    def extract(
        self, root: etree._Element, page_text: Callable[[], str], budget: RegexBudget | None = None
    ) -> str | None:
        """The field's value on the page ``root``; ``None`` when nothing (or only white space) was found.

        ``page_text`` gives the text of the whole page, for a regex without XPath.
        """
        if self.xpath:
            pieces: list[str] = []
            for xpath in self.xpath:
                pieces = [piece for text in _result_texts(xpath(root)) if (piece := self._clean(text))]
                if pieces:
                    break
            text: str | None = self.join.join(pieces)
        else:
            text = page_text()
        if text and self.regex is not None:
            text = self.regex.first(text, budget)
            if text is not None:
                text = self._clean(text)
        return text or None

    def _clean(self, text: str) -> str:
        return normalize_space(text) if self.strip else text


@dataclass(frozen=True, slots=True, eq=False)
class LinkRule:
    """Where an index page's article links are (areas or hrefs; ``()``: the whole page) and which to keep."""

    xpath: tuple[RuleXPath, ...] = ()
    allow: tuple[RuleRegex, ...] = ()
    deny: tuple[RuleRegex, ...] = ()

    def accepts(self, url: str, budget: RegexBudget | None = None) -> bool:
        """True when ``url`` matches one ``allow`` expression (or there are none) and no ``deny`` one. A
        ``deny`` expression that could not be run (out of time) refuses the link: it might have matched."""
        if self.allow and not any(pattern.matches(url, budget) for pattern in self.allow):
            return False
        return all(pattern.matches(url, budget) is False for pattern in self.deny)

    def hrefs(self, root: etree._Element) -> Iterator[str]:
        """Every href of the link areas (elements: each ``a/@href`` inside; strings: hrefs themselves)."""
        if not self.xpath:
            yield from _strings(_ALL_HREFS, root)
            return
        for xpath in self.xpath:
            for item in xpath(root):
                if isinstance(item, etree._Element):
                    for anchor in item.iter("a"):
                        href = anchor.get("href")
                        if href is not None:
                            yield href
                elif isinstance(item, str):
                    yield item


@dataclass(frozen=True, slots=True, eq=False)
class DiscoverRule:
    """A rule's ``discover``: a crawl toward a topic beyond the rule's own sites (see docs/discover.md)."""

    keywords: tuple[str, ...]
    seeds: tuple[str, ...]
    # The texts of the example articles (files next to the rule), and the sites whose stored articles
    # are examples too.
    examples: tuple[str, ...] = ()
    example_sites: tuple[str, ...] = ()
    budget: int = 500
    max_depth: int = 3
    # Hosts it may go to (and their subdomains; empty: any) and hosts it may not.
    domains: tuple[str, ...] = ()
    deny_domains: tuple[str, ...] = ()
    threshold: float = 0.5
    strategy: str = LEARNED

    def unfetched_seeds(self) -> tuple[str, ...]:
        """The seeds past the budget, which a crawl never fetches: the seeds come first, in their order,
        each counted against it."""
        return self.seeds[self.budget :]

    def allows_host(self, host: str | None) -> bool:
        """True when a link to ``host`` (no port) may be followed."""
        if not host:
            return False
        host = ascii_host(host)

        def within(domains: tuple[str, ...]) -> bool:
            return any(host == domain or host.endswith(f".{domain}") for domain in domains)

        return (not self.domains or within(self.domains)) and not within(self.deny_domains)


@dataclass(frozen=True, slots=True, eq=False)
class SearchRule:
    """A rule's ``search``: a search page's URL template, the keywords, and how its results are read."""

    url: str  # with {keyword}
    keywords: tuple[str, ...]
    links: LinkRule = field(default_factory=LinkRule)
    next_page: RuleXPath | None = None
    max_pages: int = 1
    # The web encoding the search page reads its query in (`gbk`, `big5`), by its WHATWG name.
    encoding: str = "utf-8"

    @property
    def codec(self) -> str:
        """The Python codec the keywords, and the query of the template and of next-page links, are
        percent-encoded in."""
        return query_codec(self.encoding)

    def urls(self) -> list[str]:
        """The first result page of each keyword: the keyword percent-encoded into the template, the
        template's query in ``encoding`` too (its path in UTF-8, as browsers send it)."""
        codec = self.codec
        queries = (quote_plus(keyword, encoding=codec) for keyword in self.keywords)
        return [safe_url_string(self.url.replace("{keyword}", query), encoding=codec) for query in queries]

    def requested(self, url: str) -> str:
        """``url`` as the crawl requests a result page: percent-encoded, its query in ``encoding`` (a
        character it has not as browsers send it), its path in UTF-8; ``?q=长江`` is ``?q=%B3%A4%BD%AD``
        in GBK."""
        return safe_url_string(_query_encodable(url, self.codec), encoding=self.codec)


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """One site's rule, validated and compiled; see docs/rules.md for each attribute's key and default."""

    site: str
    name: str
    path: Path
    domains: tuple[str, ...]
    start_urls: tuple[str, ...]
    links: LinkRule
    # RSS or Atom feeds listing the site's articles, read like index pages (see crawler.rules.feeds).
    feeds: tuple[str, ...] = ()
    # Sitemaps (or robots.txt files naming them) listing the site's articles (see crawler.rules.sitemaps).
    sitemaps: tuple[str, ...] = ()
    # A JSON API listing the site's articles, or holding them (see crawler.rules.api).
    api: ApiRule | None = None
    # Search result pages of keywords (a search engine's or the site's own search), read as index pages.
    search: SearchRule | None = None
    # A crawl toward a topic, beyond the rule's domains (see crawler.discover).
    discover: DiscoverRule | None = None
    next_page: RuleXPath | None = None
    max_pages: int = 1
    depth: int = 1
    fields: Mapping[str, FieldRule] = field(default_factory=lambda: MappingProxyType({}))
    min_body_chars: int = QREAD_MIN_BODY_CHARS
    delay: float = 0.0
    concurrency: int = 4
    obey_robots: bool = True
    priority: int = 0
    every: timedelta | None = None
    cron: str | None = None
    # Bounds of the adaptive period of `every` (None: the SCHEDULE_ADAPT_ factors of the settings).
    every_min: timedelta | None = None
    every_max: timedelta | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # The web encoding every page is read in, by its WHATWG name (`gbk`, `windows-1252`).
    encoding: str | None = None
    # The zone the site's times without a UTC offset are in (an IANA zone or a fixed offset).
    timezone: tzinfo | None = None
    # The site is on this machine or an intranet: its hosts may resolve to private addresses.
    allow_private: bool = False
    # How the site is reached (access:): its own proxies instead of the global ones, its sessions, and the
    # URLs of its login page (a session sent there was logged out).
    proxies: tuple[Proxy, ...] = ()
    sessions: tuple[Session, ...] = ()
    login_url: RuleRegex | None = None
    _subdomain_suffixes: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_subdomain_suffixes", tuple(f".{domain}" for domain in self.domains))

    @property
    def known_domains(self) -> tuple[str, ...]:
        """The rule's domains and those its discover crawl may go to (``allow_private_addresses`` lets
        them resolve to private addresses)."""
        return (*self.domains, *(self.discover.domains if self.discover else ()))

    def encoding_doubt(self, url: str, doubt: Doubt) -> str:
        """What to change when this rule's ``encoding`` leaves the page at ``url`` with ``doubt.replaced``
        characters undecodable: the key, and what the page says it is or is detected as, which the page is
        read as instead; or, ``doubt.replaced`` 0, that it decodes a valid UTF-8 page into other
        characters, or was kept on a page that declares UTF-8 and is valid UTF-8 with too few multi-byte
        characters to tell (``doubt.unproven``); or that it was set aside for the page's byte order mark."""
        unproven = doubt.unproven
        if unproven is not None:
            multi_byte = sum(not char.isascii() for char in unproven.text)
            declaration = _DECLARED_BY[unproven.source]
            return (
                f"{self.path}: its `encoding: {self.encoding}` reads {url}, whose {declaration} says utf-8"
                f" and which is valid UTF-8, but with {multi_byte} multi-byte characters, too few to tell"
                f" UTF-8 from {self.encoding}: read as {self.encoding}, as the key says; if the site's pages"
                " are UTF-8 now, remove the `encoding` key"
            )
        better = doubt.better
        if better is not None and better.source == "bom":
            return (
                f"{self.path}: its `encoding: {self.encoding}` is set aside for {url}, which starts with a"
                f" {better.encoding} byte order mark: read as {better.encoding}, as browsers read a page by"
                f" its mark whatever else names its encoding; if the site's pages are {better.encoding} now,"
                " remove the `encoding` key"
            )
        if doubt.replaced == 0 and better is not None:
            multi_byte = sum(not char.isascii() for char in better.text)
            return (
                f"{self.path}: its `encoding: {self.encoding}` reads {url} without an error, but the page"
                f" is valid UTF-8 with {multi_byte} multi-byte characters, which {self.encoding} turns into"
                " other characters: read as utf-8 instead; remove the `encoding` key, or set it to utf-8"
            )
        wrong = (
            f"{self.path}: its `encoding: {self.encoding}` leaves {doubt.replaced} characters of {url}"
            " undecodable"
        )
        if better is None:
            return (
                f"{wrong}, and the page decodes no better without it: check the page"
                f" (`{suggest(f'rules try {self.site} {url}')}`), then fix or remove the `encoding` key"
            )
        if better.source in _DECLARED_BY:
            page = f"the page's {_DECLARED_BY[better.source]} says {better.encoding}"
        elif better.source == "utf-8":
            page = "the page is valid UTF-8"
        elif better.doubt is not None:
            page = f"the page says {better.doubt.encoding} but is detected as {better.encoding}"
        else:
            page = f"the page is detected as {better.encoding}"
        return (
            f"{wrong}; {page}, which decodes it: read as {better.encoding} instead; remove the `encoding`"
            f" key, or set it to {better.encoding}"
        )

    def unparsed_published(self, published: str, pages: int = 1, *, api: bool = False) -> str:
        """What a crawl of this rule does with ``published`` (the field's value on one page, or the words
        that name it on ``pages`` pages; an item's value of the API when ``api``), no date it recognises,
        and the key of the rule to mend."""
        if api:
            given, key, fix = "the API gives it", "api.fields.published", API_PUBLISHED_FIX
        else:
            given = "the page gives it" if pages == 1 else "each page gives it"
            key, fix = "article.fields.published", PUBLISHED_FIX
        return (
            f"{published} is no date the crawl recognises: it is stored as {given} (and counted,"
            f" fields/unparsed/published/{self.site}); in {self.path}, {key}: {fix}"
        )

    def private_hint(self, allows: str) -> str:
        """How this rule lets requests to private addresses through, for a refusal to say: the key, then
        ``allows`` ("allows it"); for a discover rule, the host listed in ``discover.domains`` too."""
        if self.discover is not None:
            return (
                "a discover crawl fetches private addresses only on the hosts of its discover.domains: list"
                f" the host in discover.domains, with `allow_private_addresses: true`, in {self.path}"
            )
        return f"`allow_private_addresses: true` in {self.path} {allows}"

    def private_refusal(self, host: str) -> str:
        """What a refusal of ``host`` on a private address says to change in this rule's file: the key, or,
        for a host off its domains (which the key never opens), the domains."""
        if self.discover is not None:
            return self.private_hint("allows it")
        if self.allows_host(host):
            return (
                "loopback, private and link-local addresses are fetched only when asked:"
                f" {self.private_hint('allows it')}"
            )
        domains = ", ".join(self.domains)
        if self.allow_private:
            return (
                f"`allow_private_addresses: true` in {self.path} lets only its domains ({domains}) reach"
                f" private addresses, and {host} is not one of them: add {host} to `domains` in {self.path}"
                f" if {host} serves the site or its search"
            )
        return (
            f"{host} is not one of the domains ({domains}) of {self.path}, which does not say"
            f" `allow_private_addresses: true` either: add {host} to `domains` and the key to {self.path} if"
            f" {host} serves the site or its search"
        )

    def private_refusals(self, allows: str, named: str, refused: int = 0, on_domains: int = 0) -> str:
        """What refusals of this rule's requests on private addresses, counted, say to change: for a rule
        whose key lets its own domains through, that their hosts are off those domains (``named``: where
        each host is named, "the warnings above"), but for ``on_domains`` of the ``refused``, which were
        refused on its domains while it did not have the key; else :meth:`private_hint` with ``allows``."""
        if self.discover is None and self.allow_private:
            domains = ", ".join(self.domains)
            off = (
                "the only hosts its `allow_private_addresses: true` lets reach private addresses:"
                f" {named} name each host"
            )
            before = (
                f"to its domains ({domains}), when {self.path} did not say `allow_private_addresses: true`"
                " yet, as it does now"
            )
            if not on_domains:
                return f"their hosts are off the domains ({domains}) of {self.path}, {off}"
            if on_domains >= refused:
                return before
            return f"{on_domains} {before}; {refused - on_domains} to hosts off those domains, {off}"
        return self.private_hint(allows)

    def listing_key(self, url: str) -> tuple[ListingKind, str] | None:
        """How a crawl of this rule reads ``url`` when one of its keys names it (compared as requested:
        percent-encoded): ``("feed", "feeds[1]")``, ``("sitemap", ...)``, ``("api", "api.url")`` or
        ``("search", "search.url")``; None when no ``feeds``, ``sitemaps``, ``api.url`` or search URL
        names it."""
        named = self.named_by(url)
        if named is None or named[0] == "index" or named[0] == "seed":
            return None
        return named[0], named[1]

    def named_by(self, url: str) -> tuple[ListingKind | Literal["index", "seed"], str] | None:
        """What this rule's keys say ``url`` is (compared as requested: percent-encoded, a search URL's
        query in ``search.encoding``) and the key that names it: :meth:`listing_key`'s answers, then
        ``("index", "start_urls[0]")``, then a discover rule's ``("seed", "discover.seeds[0]")``; None
        when no key names it."""
        asked = safe_url_string(url)
        keys: tuple[tuple[ListingKind, str, tuple[str, ...]], ...] = (
            ("feed", "feeds", self.feeds),
            ("sitemap", "sitemaps", self.sitemaps),
            ("api", "api.url", self.api.urls if self.api else ()),
        )
        for kind, key, urls in keys:
            for index, named in enumerate(urls):
                if safe_url_string(named) == asked:
                    return kind, key if kind == "api" and len(urls) == 1 else f"{key}[{index}]"
        if self.search is not None and self.search.requested(url) in self.search.urls():
            return "search", "search.url"
        for index, named in enumerate(self.start_urls):
            if safe_url_string(named) == asked:
                return "index", f"start_urls[{index}]"
        for index, named in enumerate(self.discover.seeds if self.discover else ()):
            if safe_url_string(named) == asked:
                return "seed", f"discover.seeds[{index}]"
        return None

    def named_fix(self, url: str, kind: str | None = None) -> str | None:
        """What a message on ``url``, a listing page that could not be read, says to mend when a key of
        this rule names it (as a listing of ``kind``, when given): "`start_urls[1]` in rules/x.yaml names
        it: give the URL of an index page of the site there"; None when no such key names it."""
        named = self.named_by(url)
        if named is None or named[0] not in LISTING_PAGES or kind not in (None, named[0]):
            return None
        return f"`{named[1]}` in {self.path} names it: give the URL of {LISTING_PAGES[named[0]]} there"

    def allows_host(self, host: str | None) -> bool:
        """True when ``host`` (no port) is one of the rule's domains or a subdomain of one."""
        if not host:
            return False
        host = ascii_host(host)
        return host in self.domains or host.endswith(self._subdomain_suffixes)

    def redirect_off_site(self, asked: str, target: str) -> str | None:
        """Why a crawl of this rule does not follow a redirect of ``asked`` (the URL first asked for) to
        ``target``: its host is off the rule's domains (a discover rule's: off ``discover.domains``, or on
        ``deny_domains``, as its links are judged), in words that end with the fix; None when it is on the
        site. The host of ``www.`` or without it, and the host asked for (a search engine's, which the
        domains need not hold), count as on the site."""
        host = ascii_host(urlsplit(target).hostname or "")
        if self.discover is not None:
            if self.discover.allows_host(host):
                return None
            denied = [d for d in self.discover.deny_domains if host == d or host.endswith(f".{d}")]
            if denied:
                return (
                    f"{host} is on the discover.deny_domains of {self.path} ({denied[0]}); if the crawl"
                    f" should read it, take {denied[0]} out of `discover.deny_domains` in {self.path}"
                )
            return (
                f"{host} is off the discover.domains ({', '.join(self.discover.domains)}) of {self.path};"
                f" if the crawl should read it, add {host} to `discover.domains` in {self.path}"
            )
        bare = host.removeprefix("www.")
        if {bare, f"www.{bare}"} & {ascii_host(urlsplit(asked).hostname or "")} or any(
            self.allows_host(name) for name in (bare, f"www.{bare}")
        ):
            return None
        return (
            f"{host} is not on the domains of site {self.site} ({', '.join(self.domains)}, or their"
            f" subdomains): a site's articles are stored from its own domains only; if {host} is the"
            f" site's, add {bare} to `domains` in {self.path}"
        )

    def article_links(
        self,
        page_url: str,
        root: etree._Element,
        budget: RegexBudget | None = None,
        *,
        encoding: str = "utf-8",
        limit: int | None = None,
        left_out: Counter[str] | None = None,
    ) -> list[str]:
        """The article links of an index page read in the web ``encoding``: absolute, without fragment,
        their query percent-encoded as browsers encode it for such a page (:func:`query_codec`), on the
        rule's domains, kept by ``allow``/``deny``, each once, in document order, the page itself left out
        (read already: as an article it would be fetched again, to be skipped as one with no body); the
        first ``limit`` of them when given, ``left_out["past the limit"]`` counting the hrefs not read after
        them."""
        return self._page_links(
            self.links, page_url, root, budget, codec=query_codec(encoding), limit=limit, left_out=left_out
        )

    def search_results(
        self,
        search: SearchRule,
        page_url: str,
        root: etree._Element,
        budget: RegexBudget | None = None,
        *,
        encoding: str = "utf-8",
    ) -> list[str]:
        """The result links of a search page read in the web ``encoding``, as :meth:`article_links`, but on
        any host (the results of a search engine are other sites' pages) and kept by ``search.links``'
        ``allow``/``deny``."""
        return self._page_links(
            search.links, page_url, root, budget, any_host=True, codec=query_codec(encoding)
        )

    def _page_links(
        self,
        links: LinkRule,
        page_url: str,
        root: etree._Element,
        budget: RegexBudget | None,
        *,
        any_host: bool = False,
        codec: str,
        limit: int | None = None,
        left_out: Counter[str] | None = None,
    ) -> list[str]:
        base = base_url(page_url, root)
        found: list[str] = []
        seen_hrefs: set[str] = set()
        seen_urls = {requested_url(page_url, page_url, codec) or page_url}
        hrefs = links.hrefs(root)
        for href in hrefs:
            if href in seen_hrefs:
                continue
            seen_hrefs.add(href)
            url = self._absolute(base, href, any_host=any_host, codec=codec)
            if url is None or url in seen_urls:
                continue
            seen_urls.add(url)
            if links.accepts(url, budget):
                found.append(url)
                if len(found) == limit:
                    past = sum(1 for _ in hrefs)
                    if past and left_out is not None:
                        left_out["past the limit"] += past
                    break
        return found

    def search_next_page(self, search: SearchRule, page_url: str, root: etree._Element) -> str | None:
        """The next result page (``search.next_page``), on any host; the query of an href that holds the
        words as they are is encoded in ``search.encoding``, as the keywords are."""
        return self._next_page(search.next_page, page_url, root, any_host=True, codec=search.codec)

    def feed_entries(
        self,
        entries: Iterable[FeedEntry],
        feed_url: str,
        budget: RegexBudget | None = None,
        left_out: Counter[str] | None = None,
    ) -> list[FeedEntry]:
        """The entries of a feed whose links are articles of the rule: absolute (against ``feed_url``),
        without fragment, on the rule's domains, kept by ``index.links``' ``allow``/``deny``, each once;
        ``left_out`` counts the others by why, in words (``off the domains``, ``repeated``, ``refused by
        index.links``)."""
        return self._kept_entries(entries, feed_url, self.links, budget, left_out)

    def sitemap_entries(
        self,
        entries: Iterable[SitemapEntry],
        sitemap_url: str,
        *,
        pages: bool,
        budget: RegexBudget | None = None,
        left_out: Counter[str] | None = None,
        kept: set[str] | None = None,
    ) -> list[SitemapEntry]:
        """The entries of a sitemap the crawl follows: absolute, without fragment, on the rule's domains,
        each once; ``pages`` (a ``urlset``'s) also kept by ``index.links``' ``allow``/``deny``;
        ``left_out`` counts the others by why, as :meth:`feed_entries` does; ``kept``: the URLs kept from
        the same sitemap's earlier entries (a sitemap read in batches), those of these added to it."""
        return self._kept_entries(entries, sitemap_url, self.links if pages else None, budget, left_out, kept)

    def _kept_entries(
        self,
        entries: Iterable[_Entry],
        base: str,
        links: LinkRule | None,
        budget: RegexBudget | None,
        left_out: Counter[str] | None = None,
        seen: set[str] | None = None,
    ) -> list[_Entry]:
        """``entries`` whose URL, resolved against ``base``, is on the rule's domains and kept by ``links``
        (when given), each URL once (and none of ``seen``, to which they are added), carrying that URL;
        ``left_out`` (when given) counts the others by why."""
        kept: list[_Entry] = []
        seen = set() if seen is None else seen
        why = left_out if left_out is not None else Counter[str]()
        for entry in entries:
            url = self._absolute(base, entry.url)
            if url is None:
                why[OFF_DOMAINS] += 1
            elif url in seen:
                why[REPEATED] += 1
            elif links is not None and not links.accepts(url, budget):
                why[REFUSED] += 1
            else:
                seen.add(url)
                kept.append(replace(entry, url=url))
        return kept

    def next_page_url(self, page_url: str, root: etree._Element, *, encoding: str = "utf-8") -> str | None:
        """The next index page (``index.next_page``) when the rule has one and the page, read in the web
        ``encoding``, links to it (its query percent-encoded as :meth:`article_links` does)."""
        return self._next_page(self.next_page, page_url, root, codec=query_codec(encoding))

    def _next_page(
        self,
        xpath: RuleXPath | None,
        page_url: str,
        root: etree._Element,
        *,
        any_host: bool = False,
        codec: str | None = None,
    ) -> str | None:
        if xpath is None:
            return None
        base = base_url(page_url, root)
        current = self._absolute(page_url, page_url, any_host=any_host)
        for item in xpath(root):
            href: str | None = None
            if isinstance(item, etree._Element):
                href = (
                    item.get("href")
                    if item.tag == "a"
                    else next((a.get("href") for a in item.iter("a") if a.get("href") is not None), None)
                )
            elif isinstance(item, str):
                href = item
            url = self._absolute(base, href, any_host=any_host, codec=codec) if href is not None else None
            if url is not None and url != current:
                return url
        return None

    def extract_fields(
        self, root: etree._Element, budget: RegexBudget | None = None
    ) -> dict[str, str | None]:
        """Every field of the article page ``root``: the standard ones (None when absent) and custom ones.
        ``budget`` bounds the time of all the fields' regular expressions together."""
        page_text: list[str] = []

        def whole_text() -> str:
            if not page_text:
                page_text.append(_element_text(root))
            return page_text[0]

        values: dict[str, str | None] = dict.fromkeys(STANDARD_FIELDS)
        for name, spec in self.fields.items():
            values[name] = spec.extract(root, whole_text, budget)
        return values

    def needs_qread(self, body: str | None) -> bool:
        """True when qRead must supply the body: the rule gave none, or one shorter than min_body_chars."""
        return body is None or len(body) < self.min_body_chars

    @property
    def regex_timeouts(self) -> int:
        """How many searches of this rule's regular expressions ran out of time since it was loaded."""
        patterns = [*self.links.allow, *self.links.deny]
        patterns += [spec.regex for spec in self.fields.values() if spec.regex is not None]
        return sum(pattern.timeouts for pattern in patterns)

    def absolute_url(self, url: str) -> str | None:
        """``url`` as a crawl requests it (without fragment, percent-encoded), or None when it is no
        http(s) URL on the rule's domains."""
        return self._absolute(url, url)

    def _absolute(
        self, base: str, href: str, *, any_host: bool = False, codec: str | None = None
    ) -> str | None:
        """``href`` resolved against ``base``, without fragment, percent-encoded as Scrapy requests it (its
        query in ``codec``, else as the links of a page read in the rule's encoding, :func:`query_codec`,
        a character that encoding lacks as browsers send it); ``None`` when it is no http(s) URL or its
        host is not on the rule's domains (unless ``any_host``)."""
        url = requested_url(base, href, codec or query_codec(self.encoding or "utf-8"))
        if url is None:
            return None
        host = urlsplit(url).hostname
        return url if (any_host and host) or self.allows_host(host) else None


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The valid rules of a folder by site id, every error of the files that are not, and the sites of those
    files (``broken``: site id -> file; a file's name is its site id), which are not crawled."""

    directory: Path
    rules: Mapping[str, Rule]
    errors: tuple[RuleError, ...] = ()
    broken: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules.values())

    def __len__(self) -> int:
        return len(self.rules)

    def __contains__(self, site: object) -> bool:
        return site in self.rules

    def __getitem__(self, site: str) -> Rule:
        return self.rules[site]

    def get(self, site: str) -> Rule | None:
        return self.rules.get(site)

    @property
    def files_with_errors(self) -> tuple[str, ...]:
        """The files that have errors, each once, in the order they were read."""
        return files_with_errors(self.errors)


def requested_url(base: str, href: str, codec: str) -> str | None:
    """``href`` of a page at ``base`` as a browser requests it: resolved, without fragment, percent-encoded
    (its path in UTF-8, its host in IDNA, its query in ``codec``, the page's :func:`query_codec`, a
    character ``codec`` lacks as browsers send it, :func:`_query_encodable`); ``None`` when it is empty, a
    fragment alone, no http(s) URL, or one no request can be made of (a port out of range or 0, a host with
    a space, a user or password before the host: the crawl sends no credentials, and would show them).
    Rule crawls and discover crawls build their links with it."""
    href = href.strip(_HTML_SPACE)
    if not href or href.startswith("#"):
        return None
    try:
        # safe_url_string also turns an international host name into its IDNA form, as domains are.
        url = safe_url_string(_query_encodable(urldefrag(urljoin(base, href))[0], codec), encoding=codec)
        parts = urlsplit(url)
        requestable = (
            parts.port != 0  # .port: ValueError out of range
            and " " not in parts.netloc
            and parts.username is None
            and parts.password is None
        )
    except ValueError:
        return None
    return url if parts.scheme in HTTP_SCHEMES and requestable else None


def _query_encodable(url: str, codec: str) -> str:
    """``url`` with each character of its query that ``codec`` cannot encode written as a browser sends it
    (the URL standard's query encoding): as the HTML character reference ``&#N;``, percent-encoded
    (``%26%23N%3B``), so that it stays one value of the query."""
    path, mark, query = url.partition("?")
    try:
        query.encode(codec)
    except UnicodeEncodeError:
        return path + mark + "".join(_encodable(char, codec) for char in query)
    return url


def _encodable(char: str, codec: str) -> str:
    """``char`` as it is when ``codec`` encodes it, else as its character reference percent-encoded."""
    try:
        char.encode(codec)
    except UnicodeEncodeError:
        return f"%26%23{ord(char)}%3B"
    return char


def base_url(page_url: str, root: etree._Element) -> str:
    """The URL relative links of the page resolve against: its first ``<base href>`` when valid, else its
    URL (``crawler rules new`` and a discover crawl's links resolve them so too)."""
    for href in _strings(_BASE_HREF, root):
        try:
            base = urljoin(page_url, href.strip(_HTML_SPACE))
        except ValueError:
            return page_url
        return base if urlsplit(base).scheme in HTTP_SCHEMES else page_url
    return page_url


def _strings(xpath: etree.XPath, root: etree._Element) -> list[str]:
    """The string results of one of our own node-set XPath (they never fail on an element)."""
    result = xpath(root)
    return [item for item in result if isinstance(item, str)] if isinstance(result, list) else []


def _result_texts(results: Iterable[Any]) -> list[str]:
    """The text of each XPath result: elements give their text content, strings stay, numbers as XPath
    prints them (a boolean result is refused when the expression is compiled)."""
    texts: list[str] = []
    for item in results:
        if isinstance(item, etree._Element):
            texts.append(_element_text(item))
        elif isinstance(item, str):
            texts.append(item)
        elif isinstance(item, float):
            texts.append(str(int(item)) if item.is_integer() else str(item))
    return texts


def _element_text(element: etree._Element) -> str:
    """The text of ``element`` as a browser shows it: scripts and styles left out, a line break around each
    block element, comments skipped (their tails kept)."""
    if not isinstance(element.tag, str) or element.tag in _NO_TEXT_TAGS:
        return element.text or ""  # a comment, script or style selected on purpose
    parts: list[str] = []
    stack: list[tuple[etree._Element, bool]] = [(element, False)]
    while stack:
        node, closing = stack.pop()
        tag = node.tag
        block = tag in _BLOCK_TAGS and node is not element
        if closing:
            if block:
                parts.append("\n")
        elif isinstance(tag, str) and tag not in _NO_TEXT_TAGS:
            if block:
                parts.append("\n")
            if node.text:
                parts.append(node.text)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        if node is not element and node.tail:
            parts.append(node.tail)
    return "".join(parts)
