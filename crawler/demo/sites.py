"""The bundled demo news sites, as data: what each site publishes and what a crawl of it must store.

Three sites of 50 articles each, generated from :mod:`crawler.demo.vocab` by seeded random choices (the same
articles on every run, whatever the Python hash seed):

* ``citynews`` (City News, English, UTF-8): ``/citynews/``, ``/citynews/page/2/`` ... ``/page/5/``,
  articles at ``/citynews/2026/<slug>.html``; ``/citynews/private/`` is disallowed by robots.txt;
* ``techdaily`` (TechDaily, English, UTF-8): ``/techdaily/``, ``/techdaily/page/N/``, articles at
  ``/techdaily/2026/11/<slug>.html``; ``/techdaily/drafts/`` is disallowed; sponsored posts share the
  article URL shape (``.../sponsored-<slug>.html``) and the rule denies them;
* ``huaxia`` (华夏网, Chinese, served in GBK): ``/huaxia/``, ``/huaxia/index_2.html`` ...,
  articles at ``/huaxia/2026-11/20/c_<id>.htm``; ``/huaxia/internal/`` is disallowed.

Each site lists 10 articles per index page over 5 pages, newest first. Per site, 3 articles have a layout
the rule's body XPath misses (``feature``) or reads only a short lead of (``short``), so the body must come
from qRead; 4 articles in all are reposts of another one (same text, another URL, on the same or another
site, with a changed headline and/or an added line).
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from crawler.demo.vocab import CITYNEWS, HUAXIA, TECHDAILY, SectionVocab, SiteVocab

__all__ = [
    "ARTICLES_PER_PAGE",
    "ARTICLES_PER_SITE",
    "DEMO_ORIGIN",
    "DEMO_PORT",
    "DEMO_RULES",
    "INDEX_PAGES",
    "DemoArticle",
    "DemoSection",
    "DemoSite",
    "demo_site",
    "demo_sites",
    "robots_txt",
]

# The rules that crawl the demo sites (package data: a pip-installed crawler has them too).
DEMO_RULES = Path(__file__).resolve().parent / "rules"
# The origin the bundled rules (DEMO_RULES/demo-*.yaml) name; `crawler demo` serves there by default.
DEMO_PORT = 8631
DEMO_ORIGIN = f"http://127.0.0.1:{DEMO_PORT}"
ARTICLES_PER_PAGE = 10
INDEX_PAGES = 5
ARTICLES_PER_SITE = ARTICLES_PER_PAGE * INDEX_PAGES
SEED = 2026

STANDARD, FEATURE, SHORT = "standard", "feature", "short"
# The layouts whose body the rule's XPath misses (feature) or reads only the short lead of (short).
QREAD_LAYOUTS = frozenset({FEATURE, SHORT})


@dataclass(frozen=True, slots=True)
class DemoArticle:
    """One article page of a demo site, and what a crawl must store for it."""

    site: str  # site id: "citynews"
    path: str  # "/citynews/2026/council-approves-a-new-public-library-in-riverside.html"
    title: str
    paragraphs: tuple[str, ...]  # the body, as the reader sees it
    published: datetime  # aware, in the site's time zone
    author: str
    section: str  # the custom field the rules read
    layout: str = STANDARD  # "standard", or "feature"/"short": the body comes from qRead
    repost_of: str | None = None  # path of the original article when this is a repost

    @property
    def body(self) -> str:
        return "\n\n".join(self.paragraphs)

    @property
    def needs_qread(self) -> bool:
        """The rule's body XPath misses this layout's body, or finds less than ``min_body_chars`` of it."""
        return self.layout in QREAD_LAYOUTS

    @property
    def published_date(self) -> str:
        """``YYYY-MM-DD`` in the site's time zone: the day the page says."""
        return self.published.date().isoformat()

    @property
    def published_stored(self) -> str:
        """What a crawl stores of the rules' ``published`` field: the day and time of day, with the UTC
        offset the page gives (``2026-11-20T08:30:00+00:00``); 华夏网's pages give none, and its rule's
        ``timezone`` (Asia/Shanghai) gives Beijing time's (``2026-11-20T09:00:00+08:00``)."""
        return self.published.isoformat(timespec="seconds")

    def url(self, origin: str = DEMO_ORIGIN) -> str:
        return origin + self.path


@dataclass(frozen=True, slots=True)
class DemoSection:
    name: str  # "Transport", "财经"
    slug: str
    path: str  # the section's listing page


@dataclass(frozen=True, slots=True)
class DemoSite:
    """One demo news site: its pages' paths and its articles, newest first (the order the index lists)."""

    id: str  # "citynews"; the rule is DEMO_RULES/demo-<id>.yaml
    name: str
    language: str  # "en" or "zh"
    encoding: str  # what the pages are encoded in and declare: "utf-8" or "gbk"
    index_paths: tuple[str, ...]  # the index pages, first to last
    sections: tuple[DemoSection, ...]
    articles: tuple[DemoArticle, ...]  # ARTICLES_PER_SITE, newest first: 10 per index page
    robots_disallow: str  # a path prefix robots.txt disallows
    private_articles: tuple[DemoArticle, ...]  # linked from an index page, under robots_disallow
    denied_articles: tuple[DemoArticle, ...] = ()  # linked where articles are, excluded by the rule's deny

    @property
    def rule_id(self) -> str:
        return f"demo-{self.id}"

    @property
    def start_path(self) -> str:
        return self.index_paths[0]

    def page_articles(self, page: int) -> tuple[DemoArticle, ...]:
        """The articles index page ``page`` (1-based) lists."""
        start = (page - 1) * ARTICLES_PER_PAGE
        return self.articles[start : start + ARTICLES_PER_PAGE]

    def article(self, path: str) -> DemoArticle:
        for article in self.articles:
            if article.path == path:
                return article
        raise KeyError(f"{self.id} has no article at {path!r}")

    def section(self, name: str) -> DemoSection:
        for section in self.sections:
            if section.name == name:
                return section
        raise KeyError(f"{self.id} has no section named {name!r}")


def demo_sites() -> list[DemoSite]:
    """The three demo sites: citynews, techdaily, huaxia."""
    return list(_build())


def demo_site(site_id: str) -> DemoSite:
    for site in _build():
        if site.id == site_id:
            return site
    raise KeyError(f"no demo site {site_id!r}: expected one of {', '.join(s.id for s in _build())}")


def robots_txt() -> str:
    """The robots.txt of the demo origin: every site's private area is disallowed to all."""
    lines = ["# robots.txt of the demo news sites", "User-agent: *"]
    lines += [f"Disallow: {site.robots_disallow}" for site in _build()]
    return "\n".join(lines) + "\n"


# --- generation -------------------------------------------------------------------------------------------

_ALTERNATIVE = re.compile(r"\[([^\[\]]*)\]")
_CST = timezone(timedelta(hours=8), "CST")


@dataclass(frozen=True, slots=True)
class _Scheme:
    """How one site names its pages."""

    id: str
    name: str
    language: str
    encoding: str
    vocab: SiteVocab
    newest: datetime  # publication time of the newest article
    index_path: Callable[[int], str]
    section_path: Callable[[str], str]
    article_path: Callable[[datetime, str], str]  # (published, slug or id)
    private_path: Callable[[str], str]
    robots_disallow: str
    private_prefix: str  # title prefix of the private article
    slots: Callable[[SiteVocab, SectionVocab, random.Random], dict[str, str]]


@dataclass(slots=True)
class _Draft:
    """An article being generated."""

    scheme: _Scheme
    section: SectionVocab
    title: str
    paragraphs: list[str]
    published: datetime
    author: str
    key: str  # slug (English) or numeric id (Chinese)
    layout: str = STANDARD


def _fill(template: str, slots: dict[str, str], rng: random.Random, quotes: list[str] | None = None) -> str:
    text = _ALTERNATIVE.sub(lambda match: rng.choice(match.group(1).split("|")), template)
    if "{quote}" in text and quotes:
        slots = {**slots, "quote": quotes.pop()}
    return text.format_map(slots)


def _capitalised(slots: dict[str, str]) -> dict[str, str]:
    """Each slot also under its capitalised name: ``{Subject}`` is ``{subject}`` starting with a capital."""
    return {
        **slots,
        **{key[:1].upper() + key[1:]: value[:1].upper() + value[1:] for key, value in slots.items()},
    }


def _names(vocab: SiteVocab, section: SectionVocab, rng: random.Random) -> dict[str, str]:
    names = vocab.names | section.names
    return {key: rng.choice(values) for key, values in sorted(names.items())}


def _english_numbers(rng: random.Random) -> dict[str, str]:
    return {
        "n": f"{rng.randrange(120, 4800, 10):,}",
        "n2": str(rng.randrange(3, 19)),
        "pct": str(rng.randrange(4, 43)),
        "pct2": f"{rng.randrange(12, 95) / 10:.1f}",
        "hours": rng.choice(("two", "three", "four", "five")),
        "year": str(rng.randrange(1952, 2020)),
        "year2": str(rng.choice((2027, 2028, 2029))),
        "route": str(rng.randrange(2, 99)),
        "jobs": str(rng.randrange(20, 400, 10)),
        "grams": str(rng.randrange(18, 140) * 10),
    }


def _citynews_slots(vocab: SiteVocab, section: SectionVocab, rng: random.Random) -> dict[str, str]:
    slots = _names(vocab, section, rng) | _english_numbers(rng)
    slots["place2"] = rng.choice([place for place in vocab.names["place"] if place != slots["place"]])
    slots["surname"] = slots["who"].rsplit(" ", 1)[1]
    slots["money"] = f"£{rng.randrange(12, 480) / 10:.1f} million"
    slots["money2"] = f"£{rng.randrange(12, 95)},000"
    slots["subject"] = rng.choice(section.subjects)
    resident, description = slots["resident"].split("|")
    slots["resident"] = resident
    slots["resident_desc"] = description.format_map(slots)
    slots["venue"] = slots["venue"].format_map(slots)
    return _capitalised(slots)


def _techdaily_slots(vocab: SiteVocab, section: SectionVocab, rng: random.Random) -> dict[str, str]:
    slots = _names(vocab, section, rng) | _english_numbers(rng)
    slots["surname"] = slots["ceo"].rsplit(" ", 1)[1]
    slots["money"] = f"${rng.randrange(4, 180)} million"
    slots["money2"] = f"${rng.randrange(12, 420)} million"
    slots["subject"] = rng.choice(section.subjects)
    return _capitalised(slots)


def _huaxia_slots(vocab: SiteVocab, section: SectionVocab, rng: random.Random) -> dict[str, str]:
    slots = _names(vocab, section, rng)
    slots |= {
        "subject": rng.choice(section.subjects),
        "n": str(rng.randrange(20, 980, 10)),
        "n2": str(rng.randrange(3, 16)),
        "pct": f"{rng.randrange(30, 450) / 10:.1f}",
        "pct2": f"{rng.randrange(20, 120) / 10:.1f}",
        "dec": f"{rng.randrange(2, 19) / 10:.1f}",
        "km": str(rng.randrange(12, 180)),
        "speed": str(rng.choice((80, 100, 120, 160, 200, 250, 350))),
        "minutes": str(rng.randrange(20, 90, 5)),
        "month": str(rng.randrange(1, 13)),
        "year2": str(rng.choice((2027, 2028, 2029, 2030))),
        "money": f"{rng.randrange(12, 850) / 10:.1f}",
        "money2": f"{rng.randrange(5, 95) / 10:.1f}",
    }
    return slots


def _slug(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    if len(slug) > 72:
        slug = slug[:72].rsplit("-", 1)[0]
    return slug


SCHEMES = (
    _Scheme(
        id="citynews",
        name="City News",
        language="en",
        encoding="utf-8",
        vocab=CITYNEWS,
        newest=datetime(2026, 11, 20, 8, 30, tzinfo=UTC),
        index_path=lambda page: "/citynews/" if page == 1 else f"/citynews/page/{page}/",
        section_path=lambda slug: f"/citynews/section/{slug}/",
        article_path=lambda published, key: f"/citynews/{published.year}/{key}.html",
        private_path=lambda key: f"/citynews/private/{key}.html",
        robots_disallow="/citynews/private/",
        private_prefix="Subscribers only: ",
        slots=_citynews_slots,
    ),
    _Scheme(
        id="techdaily",
        name="TechDaily",
        language="en",
        encoding="utf-8",
        vocab=TECHDAILY,
        newest=datetime(2026, 11, 20, 7, 15, tzinfo=UTC),
        index_path=lambda page: "/techdaily/" if page == 1 else f"/techdaily/page/{page}/",
        section_path=lambda slug: f"/techdaily/topic/{slug}/",
        article_path=lambda published, key: f"/techdaily/{published:%Y/%m}/{key}.html",
        private_path=lambda key: f"/techdaily/drafts/{key}.html",
        robots_disallow="/techdaily/drafts/",
        private_prefix="Draft: ",
        slots=_techdaily_slots,
    ),
    _Scheme(
        id="huaxia",
        name="华夏网",
        language="zh",
        encoding="gbk",
        vocab=HUAXIA,
        newest=datetime(2026, 11, 20, 9, 0, tzinfo=_CST),
        index_path=lambda page: "/huaxia/" if page == 1 else f"/huaxia/index_{page}.html",
        section_path=lambda slug: f"/huaxia/{slug}/",
        article_path=lambda published, key: f"/huaxia/{published:%Y-%m/%d}/c_{key}.htm",
        private_path=lambda key: f"/huaxia/internal/c_{key}.htm",
        robots_disallow="/huaxia/internal/",
        private_prefix="内部参考：",
        slots=_huaxia_slots,
    ),
)
_SCHEMES = {scheme.id: scheme for scheme in SCHEMES}


@dataclass(frozen=True, slots=True)
class _Repost:
    site: str  # where the repost appears
    index: int  # its position in that site's list (0: newest)
    section: str  # its section there
    original_site: str
    original_index: int
    original_section: str  # forced on the original, so that the pair makes sense
    headline: str = "{title}"  # the repost's headline; {title} is the original's
    added_line: str | None = None  # {title} is the original's title
    line_first: bool = False  # the added line opens the article instead of closing it


REPOSTS = (
    _Repost("citynews", 14, "City", "citynews", 31, "City", headline="Latest: {title}"),
    _Repost(
        "techdaily",
        9,
        "Mobility",
        "citynews",
        38,
        "Transport",
        added_line="This article first appeared in City News and is republished with permission.",
    ),
    _Repost(
        "citynews",
        22,
        "Business",
        "techdaily",
        35,
        "Startups",
        headline="Technology: {title}",
        added_line="This story was first published by our partners at TechDaily.",
        line_first=True,
    ),
    _Repost(
        "huaxia",
        6,
        "社会",
        "huaxia",
        33,
        "社会",
        headline="聚焦民生｜{title}",
        added_line="（原标题：{title}）",
    ),
)
# Per site: the positions whose layout needs qRead (none is a repost or an original of one).
QREAD_POSITIONS = {
    "citynews": ((4, FEATURE), (26, SHORT), (43, FEATURE)),
    "techdaily": ((2, SHORT), (27, FEATURE), (46, FEATURE)),
    "huaxia": ((7, FEATURE), (24, FEATURE), (41, SHORT)),
}


class _Generator:
    """Writes the articles of every site, one seeded random stream per site."""

    def __init__(self) -> None:
        self.titles: set[str] = set()
        self.paths: set[str] = set()

    def headline(
        self, scheme: _Scheme, section: SectionVocab, rng: random.Random
    ) -> tuple[str, str, dict[str, str]]:
        """A headline no other article has, the lead that goes with it, and the slots of the article."""
        while True:
            slots = scheme.slots(scheme.vocab, section, rng)
            story = rng.randrange(len(section.headlines))
            title = _fill(section.headlines[story], slots, rng)
            title = title[:1].upper() + title[1:]
            if title not in self.titles:
                self.titles.add(title)
                return title, _fill(section.leads[story], slots, rng), slots

    def draft(
        self, scheme: _Scheme, section: SectionVocab, published: datetime, rng: random.Random, layout: str
    ) -> _Draft:
        title, lead, slots = self.headline(scheme, section, rng)
        if scheme.language == "zh":  # a numeric id: hours since the start of the year, after a base
            key = str(1180000 + int((published - datetime(2026, 1, 1, tzinfo=_CST)).total_seconds()) // 3600)
        else:
            key = _slug(title)
        author = rng.choice(scheme.vocab.authors)
        paragraphs = self.paragraphs(scheme, section, lead, slots, rng, short_lead=layout == SHORT)
        return _Draft(scheme, section, title, paragraphs, published, author, key, layout)

    @staticmethod
    def paragraphs(
        scheme: _Scheme,
        section: SectionVocab,
        lead_sentence: str,
        slots: dict[str, str],
        rng: random.Random,
        *,
        short_lead: bool,
    ) -> list[str]:
        """The body: the lead sentence (alone when ``short_lead``), then sentences of the section and site."""
        joiner = " " if scheme.language == "en" else ""
        pool = [*section.sentences, *scheme.vocab.shared]
        rng.shuffle(pool)
        quotes = list(scheme.vocab.quotes)
        rng.shuffle(quotes)
        lead = [lead_sentence]
        if not short_lead:
            lead.append(_fill(pool.pop(), slots, rng, quotes))
        paragraphs = [joiner.join(lead)]
        for _ in range(rng.randint(3, 5)):
            count = rng.randint(2, 3)
            paragraphs.append(joiner.join(_fill(pool.pop(), slots, rng, quotes) for _ in range(count)))
        return paragraphs

    def article(self, draft: _Draft, *, path: str | None = None, repost_of: str | None = None) -> DemoArticle:
        scheme = draft.scheme
        path = path or scheme.article_path(draft.published, draft.key)
        if path in self.paths:
            raise ValueError(f"two demo articles at {path}")
        self.paths.add(path)
        return DemoArticle(
            site=scheme.id,
            path=path,
            title=draft.title,
            paragraphs=tuple(draft.paragraphs),
            published=draft.published,
            author=draft.author,
            section=draft.section.name,
            layout=draft.layout,
            repost_of=repost_of,
        )


def _section(scheme: _Scheme, name: str) -> SectionVocab:
    return next(section for section in scheme.vocab.sections if section.name == name)


@functools.cache
def _build() -> tuple[DemoSite, ...]:
    generator = _Generator()
    rngs = {scheme.id: random.Random(f"{SEED}:{scheme.id}") for scheme in SCHEMES}
    forced = {(r.original_site, r.original_index): r.original_section for r in REPOSTS}
    forced |= {(r.site, r.index): r.section for r in REPOSTS}
    drafts: dict[str, list[_Draft]] = {}
    for scheme in SCHEMES:
        rng = rngs[scheme.id]
        layouts = dict(QREAD_POSITIONS[scheme.id])
        published = scheme.newest
        site_drafts = []
        for index in range(ARTICLES_PER_SITE):
            name = forced.get((scheme.id, index))
            section = _section(scheme, name) if name else rng.choice(scheme.vocab.sections)
            site_drafts.append(generator.draft(scheme, section, published, rng, layouts.get(index, STANDARD)))
            published -= timedelta(minutes=rng.randrange(180, 540, 5))
        drafts[scheme.id] = site_drafts
    slots = {(repost.site, repost.index) for repost in REPOSTS}
    articles = {
        scheme.id: {
            index: generator.article(draft)
            for index, draft in enumerate(drafts[scheme.id])
            if (scheme.id, index) not in slots
        }
        for scheme in SCHEMES
    }
    for repost in REPOSTS:
        original = articles[repost.original_site][repost.original_index]
        draft = drafts[repost.original_site][repost.original_index]
        slot = drafts[repost.site][repost.index]
        articles[repost.site][repost.index] = _repost(generator, repost, draft, original, slot)
    return tuple(
        _site(scheme, generator, [articles[scheme.id][i] for i in range(ARTICLES_PER_SITE)], rngs[scheme.id])
        for scheme in SCHEMES
    )


def _repost(
    generator: _Generator, repost: _Repost, draft: _Draft, original: DemoArticle, slot: _Draft
) -> DemoArticle:
    """The original's text under the repost's URL, date and section, with its headline and added line."""
    scheme = _SCHEMES[repost.site]
    title = repost.headline.format(title=draft.title)
    paragraphs = list(draft.paragraphs)
    if repost.added_line:
        line = repost.added_line.format(title=draft.title)
        if repost.line_first:
            paragraphs.insert(0, line)
        else:
            paragraphs.append(line)
    key = slot.key if scheme.language == "zh" else _slug(title)
    section = _section(scheme, repost.section)
    copy = _Draft(scheme, section, title, paragraphs, slot.published, draft.author, key)
    return generator.article(copy, repost_of=original.path)


def _site(
    scheme: _Scheme, generator: _Generator, articles: list[DemoArticle], rng: random.Random
) -> DemoSite:
    section = rng.choice(scheme.vocab.sections)
    private = generator.draft(scheme, section, scheme.newest - timedelta(hours=2), rng, STANDARD)
    private.title = scheme.private_prefix + private.title
    key = private.key if scheme.language == "zh" else _slug(private.title)
    private_article = generator.article(private, path=scheme.private_path(key))
    return DemoSite(
        id=scheme.id,
        name=scheme.name,
        language=scheme.language,
        encoding=scheme.encoding,
        index_paths=tuple(scheme.index_path(page) for page in range(1, INDEX_PAGES + 1)),
        sections=tuple(
            DemoSection(s.name, s.slug, scheme.section_path(s.slug)) for s in scheme.vocab.sections
        ),
        articles=tuple(articles),
        robots_disallow=scheme.robots_disallow,
        private_articles=(private_article,),
        denied_articles=_sponsored(generator) if scheme.id == "techdaily" else (),
    )


def _sponsored(generator: _Generator) -> tuple[DemoArticle, ...]:
    """TechDaily's sponsored posts: they look like articles in the feed, and the rule denies them."""
    posts = (
        (
            "How Halyard Networks helps retailers move to the cloud",
            datetime(2026, 11, 19, 12, 0, tzinfo=UTC),
            (
                "Retailers face a busy season every year. Halyard Networks helps them grow without worry.",
                "Book a free consultation with our cloud team and get three months of support included.",
            ),
        ),
        (
            "Five ways Fernhill Energy cuts the power bill of your data centre",
            datetime(2026, 11, 16, 12, 0, tzinfo=UTC),
            (
                "Energy is the fastest-growing cost of running servers. Fernhill Energy has a plan for that.",
                "Download our free guide and see how much your company could save this winter.",
            ),
        ),
    )
    articles = []
    for title, published, paragraphs in posts:
        path = f"/techdaily/{published:%Y/%m}/sponsored-{_slug(title)}.html"
        generator.paths.add(path)
        articles.append(
            DemoArticle(
                "techdaily",
                path,
                f"Sponsored: {title}",
                paragraphs,
                published,
                "TechDaily Studio",
                "Sponsored",
            )
        )
    return tuple(articles)
