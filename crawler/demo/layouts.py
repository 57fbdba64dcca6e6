"""The HTML of the demo news sites: each site has its own layout, as real sites do.

Every page is rendered once, up front, by :func:`render_pages`: a map from path to :class:`Page` (encoded
bytes and Content-Type). Links are root-relative, so the pages do not depend on the server's port.

What the layouts put in on purpose:

* boilerplate around the text: navigation menus, a "most read" sidebar, a newsletter box, a footer,
  related-story lists, comments;
* repeated links: on an index page articles are linked two or three times (headline and "read more" or
  comments links, photo boxes), some on every page (top story, editor's picks, most read), and some
  items link to articles of other pages (City News "related", 华夏网 "编辑推荐");
* a link to each site's private article (robots.txt disallows it) and, on TechDaily, sponsored posts in
  the feed (the rule denies them);
* the article layouts ``feature`` (the body sits in another container than the rule's XPath names) and
  ``short`` (the rule's XPath finds only a one-sentence lead; the rest is nested below it);
* other ways in than index pages: TechDaily's RSS feed (``/techdaily/feed.xml``) and 华夏网's JSON news
  list (``/huaxia/api/list_N.json``), which the demo's rules read.
"""

from __future__ import annotations

import abc
import email.utils
import html
import json
from dataclasses import dataclass
from datetime import datetime

from crawler.demo.sites import FEATURE, INDEX_PAGES, SHORT, DemoArticle, DemoSite, demo_sites, robots_txt

__all__ = ["Page", "render_pages"]

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True, slots=True)
class Page:
    """One page as served: its bytes and its Content-Type (with the charset for text)."""

    body: bytes
    content_type: str


def render_pages() -> dict[str, Page]:
    """Every page of every demo site, the root page and robots.txt, by path."""
    pages = {
        "/robots.txt": Page(robots_txt().encode(), "text/plain; charset=utf-8"),
        "/": Page(_root_page(demo_sites()).encode(), "text/html; charset=utf-8"),
    }
    for site in demo_sites():
        layout = _LAYOUTS[site.id](site)
        content_type = f"text/html; charset={site.encoding}"
        for path, text in layout.pages().items():
            pages[path] = Page(text.encode(site.encoding), content_type)
        pages.update(layout.data_pages())
    return pages


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _root_page(sites: list[DemoSite]) -> str:
    items = "\n".join(f'<li><a href="{site.start_path}">{_e(site.name)}</a></li>' for site in sites)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Demo news sites</title></head>
<body><h1>Demo news sites</h1>
<ul>
{items}
</ul>
<p>Served by crawler.demo.server for <code>crawler demo</code>.</p>
</body></html>
"""


class _Layout(abc.ABC):
    """What every site renders; the subclasses say how."""

    def __init__(self, site: DemoSite) -> None:
        self.site = site
        articles = site.articles
        self.most_read = tuple(articles[i] for i in (3, 11, 17, 25, 36))
        self.picks = tuple(articles[i] for i in (1, 12, 30))

    def pages(self) -> dict[str, str]:
        site = self.site
        pages = {path: self.index(page) for page, path in enumerate(site.index_paths, start=1)}
        for article in (*site.articles, *site.private_articles, *site.denied_articles):
            pages[article.path] = self.article(article)
        for section in site.sections:
            listed = tuple(article for article in site.articles if article.section == section.name)
            pages[section.path] = self.listing(section.name, listed)
        pages.update(self.extra_pages())
        return pages

    @abc.abstractmethod
    def index(self, page: int) -> str:
        """The index page number ``page`` (1-based)."""

    @abc.abstractmethod
    def article(self, article: DemoArticle) -> str:
        """The page of one article."""

    @abc.abstractmethod
    def listing(self, title: str, articles: tuple[DemoArticle, ...]) -> str:
        """A section's page: its articles, no pagination."""

    @abc.abstractmethod
    def extra_pages(self) -> dict[str, str]:
        """The site's other pages (about, contact) by path."""

    def data_pages(self) -> dict[str, Page]:
        """The site's machine-readable pages (a feed, a JSON API), each with its own type, by path."""
        return {}

    def related(self, article: DemoArticle, count: int = 4) -> list[DemoArticle]:
        """Other articles of the same section, the nearest in time first."""
        same = [
            other for other in self.site.articles if other.section == article.section and other != article
        ]
        same.sort(key=lambda other: abs((other.published - article.published).total_seconds()))
        return same[:count]

    def previous_page_article(self, page: int, position: int) -> DemoArticle:
        """An article of the page before ``page``: index items link back to one now and then."""
        earlier = self.site.page_articles(page - 1)
        return earlier[(position * 3) % len(earlier)]

    @staticmethod
    def body_html(article: DemoArticle, paragraph: str = "<p>{}</p>") -> list[str]:
        return [paragraph.format(_e(text)) for text in article.paragraphs]


# --- City News --------------------------------------------------------------------------------------------


def _city_date(when: datetime) -> str:
    return f"{_WEEKDAYS[when.weekday()]} {when.day} {_MONTHS[when.month - 1]} {when.year}, {when:%H:%M}"


class _CityNews(_Layout):
    def head(self, title: str) -> str:
        site = self.site
        menu = "\n".join(
            f'    <li><a href="{section.path}">{_e(section.name)}</a></li>' for section in site.sections
        )
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
</head>
<body>
<header class="masthead">
  <a class="logo" href="/citynews/">City News</a>
  <p class="tagline">News for the city, every day since 1887</p>
  <nav class="menu"><ul>
    <li><a href="/citynews/">Home</a></li>
{menu}
    <li><a href="/citynews/about/">About us</a></li>
  </ul></nav>
</header>
<div class="wrap">
"""

    def tail(self) -> str:
        most_read = "\n".join(
            f'    <li><a href="{article.path}">{_e(article.title)}</a></li>' for article in self.most_read
        )
        return f"""<aside class="sidebar">
  <div class="most-read"><h4>Most read</h4>
  <ol>
{most_read}
  </ol></div>
  <div class="newsletter"><h4>Newsletter</h4>
  <p>Get the day's headlines in your inbox every morning.</p>
  <form action="/citynews/newsletter/" method="post"><input type="email" name="email">
  <button type="submit">Sign up</button></form></div>
</aside>
</div>
<footer class="site-footer">
  <ul>
    <li><a href="/citynews/about/">About us</a></li>
    <li><a href="/citynews/contact/">Contact</a></li>
    <li><a href="/citynews/about/#advertise">Advertise</a></li>
    <li>Our partners: <a href="/techdaily/">TechDaily</a>, <a href="/huaxia/">华夏网</a></li>
  </ul>
  <p>© 2026 City News Ltd. All rights reserved. Registered in the city, company no. 00418827.</p>
</footer>
</body>
</html>
"""

    def item(self, article: DemoArticle, related: DemoArticle | None = None) -> str:
        teaser = article.paragraphs[0].split(". ")[0].rstrip(".") + "."
        section = self.site.section(article.section)
        also = (
            f'\n    <p class="related">Related: <a href="{related.path}">{_e(related.title)}</a></p>'
            if related
            else ""
        )
        return f"""  <li class="item">
    <a class="thumb" href="{article.path}"><span class="kicker">{_e(section.name)}</span></a>
    <h3><a href="{article.path}">{_e(article.title)}</a></h3>
    <p class="teaser">{_e(teaser)}</p>
    <p class="meta">By {_e(article.author)} · {_e(_city_date(article.published))}</p>
    <a class="more" href="{article.path}">Read more</a>{also}
  </li>"""

    def index(self, page: int) -> str:
        site = self.site
        top = site.articles[0]
        items = [
            self.item(article, self.previous_page_article(page, n) if page > 1 and n % 3 == 1 else None)
            for n, article in enumerate(site.page_articles(page))
        ]
        if page == 1:
            private = site.private_articles[0]
            items.insert(
                3,
                f"""  <li class="item members">
    <h3><a href="{private.path}">{_e(private.title)}</a></h3>
    <p class="teaser">Log in with your subscriber account to read this story.</p>
  </li>""",
            )
        pager = []
        if page > 1:
            pager.append(f'<a rel="prev" href="{site.index_paths[page - 2]}">Newer stories</a>')
        pager.append(f'<span class="count">Page {page} of {INDEX_PAGES}</span>')
        if page < INDEX_PAGES:
            pager.append(f'<a rel="next" href="{site.index_paths[page]}">Older stories</a>')
        title = "City News – latest news" + (f" (page {page})" if page > 1 else "")
        newline = "\n"
        return f"""{self.head(title)}<main class="content">
  <section class="top-story">
    <span class="label">Top story</span>
    <h2><a href="{top.path}">{_e(top.title)}</a></h2>
    <p>{_e(top.paragraphs[0].split(". ")[0].rstrip("."))}.</p>
  </section>
  <h1 class="page-title">Latest news</h1>
<ul class="list">
{newline.join(items)}
</ul>
  <div class="pager">{" ".join(pager)}</div>
</main>
{self.tail()}"""

    def article(self, article: DemoArticle) -> str:
        section = self.site.section(article.section)
        paragraphs = self.body_html(article)
        if article.layout == FEATURE:
            half = len(paragraphs) // 2
            body = f"""  <figure class="hero"><div class="picture"></div>
  <figcaption>Photograph: City News</figcaption></figure>
  <div class="feature-body">
    <section class="chapter">
{chr(10).join(paragraphs[:half])}
    </section>
    <section class="chapter">
{chr(10).join(paragraphs[half:])}
    </section>
  </div>"""
        elif article.layout == SHORT:
            body = f"""  <div class="story">
{paragraphs[0]}
    <div class="story-body">
{chr(10).join(paragraphs[1:])}
    </div>
  </div>"""
        else:
            body = f"""  <div class="story">
{chr(10).join(paragraphs)}
  </div>"""
        related = "\n".join(
            f'    <li><a href="{other.path}">{_e(other.title)}</a></li>' for other in self.related(article)
        )
        return f"""{self.head(f"{article.title} | City News")}<main class="content">
<article class="story-page">
  <nav class="breadcrumb"><a href="/citynews/">Home</a> ›
  <a href="{section.path}">{_e(section.name)}</a></nav>
  <h1 class="headline">{_e(article.title)}</h1>
  <p class="meta"><span class="byline">By {_e(article.author)}</span>
  <time datetime="{article.published.isoformat()}">{_e(_city_date(article.published))}</time></p>
{body}
  <div class="share">Share this story:
  <button type="button">Email</button> <button type="button">Copy link</button></div>
</article>
<section class="related-stories"><h3>More from {_e(section.name)}</h3>
  <ul>
{related}
  </ul>
</section>
</main>
{self.tail()}"""

    def listing(self, title: str, articles: tuple[DemoArticle, ...]) -> str:
        items = "\n".join(self.item(article) for article in articles)
        return f"""{self.head(f"{title} | City News")}<main class="content">
  <h1 class="page-title">{_e(title)}</h1>
<ul class="list">
{items}
</ul>
</main>
{self.tail()}"""

    def extra_pages(self) -> dict[str, str]:
        about = f"""{self.head("About us | City News")}<main class="content">
  <h1 class="page-title">About us</h1>
  <p>City News has reported on the city since 1887. Our newsroom is on the quayside.</p>
  <h2 id="advertise">Advertise with us</h2>
  <p>Reach the city's readers every morning. Write to our advertising team.</p>
</main>
{self.tail()}"""
        contact = f"""{self.head("Contact | City News")}<main class="content">
  <h1 class="page-title">Contact</h1>
  <p>Send news tips to the newsdesk. Letters to the editor are published on Saturdays.</p>
</main>
{self.tail()}"""
        return {"/citynews/about/": about, "/citynews/contact/": contact}


# --- TechDaily --------------------------------------------------------------------------------------------


def _tech_date(when: datetime) -> str:
    hour = when.hour % 12 or 12
    noon = "AM" if when.hour < 12 else "PM"
    return f"{_MONTHS[when.month - 1][:3]} {when.day}, {when.year} · {hour}:{when:%M} {noon}"


def _comments(article: DemoArticle) -> int:
    return sum(map(ord, article.path)) % 90 + 3


class _TechDaily(_Layout):
    def head(self, title: str, meta: str = "") -> str:
        topics = "\n".join(
            f'    <a href="{section.path}">{_e(section.name)}</a>' for section in self.site.sections
        )
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{_e(title)}</title>{meta}
</head>
<body>
<div id="top-bar">
  <a class="brand" href="/techdaily/">Tech<b>Daily</b></a>
  <div class="nav-links">
{topics}
  </div>
  <a class="subscribe" href="/techdaily/about/">Subscribe</a>
</div>
<div id="content">
"""

    def tail(self) -> str:
        trending = "\n".join(
            f'    <li><a href="{article.path}">{_e(article.title)}</a></li>' for article in self.most_read
        )
        return f"""<div id="trending">
  <h3>Trending</h3>
  <ul>
{trending}
  </ul>
</div>
</div>
<div id="footer">
  <p>TechDaily — independent technology news, reader-supported.</p>
  <a href="/techdaily/about/">About</a> · <a href="/techdaily/about/#privacy">Privacy</a> ·
  <a href="/techdaily/about/#staff">Staff</a> · <a href="/citynews/">City News</a>
</div>
</body>
</html>
"""

    def card(self, article: DemoArticle) -> str:
        section = self.site.section(article.section)
        summary = article.paragraphs[0].split(". ")[0].rstrip(".") + "."
        return f"""  <article class="card">
    <div class="card-topic"><a href="{section.path}">{_e(section.name)}</a></div>
    <a class="card-link" href="{article.path}"><h2 class="card-title">{_e(article.title)}</h2></a>
    <div class="card-meta">by {_e(article.author)} · {_e(_tech_date(article.published))}</div>
    <p class="card-summary">{_e(summary)}</p>
    <a class="card-comments" href="{article.path}">{_comments(article)} comments</a>
  </article>"""

    def index(self, page: int) -> str:
        site = self.site
        cards = [self.card(article) for article in site.page_articles(page)]
        if page in (1, 3):
            sponsored = site.denied_articles[0 if page == 1 else 1]
            cards.insert(
                4,
                f"""  <article class="card sponsored">
    <span class="badge">Sponsored</span>
    <a class="card-link" href="{sponsored.path}"><h2 class="card-title">{_e(sponsored.title)}</h2></a>
  </article>""",
            )
        if page == 1:
            draft = site.private_articles[0]
            cards.insert(
                7,
                f"""  <article class="card upcoming">
    <span class="badge">Coming soon</span>
    <a class="card-link" href="{draft.path}"><h2 class="card-title">{_e(draft.title)}</h2></a>
  </article>""",
            )
        picks = "\n".join(
            f'    <a class="pick" href="{article.path}">{_e(article.title)}</a>' for article in self.picks
        )
        pagination = []
        if page > 1:
            pagination.append(f'<a class="prev" rel="prev" href="{site.index_paths[page - 2]}">« Newer</a>')
        pagination.append(f"<span>{page} / {INDEX_PAGES}</span>")
        if page < INDEX_PAGES:
            pagination.append(f'<a class="next" rel="next" href="{site.index_paths[page]}">Older »</a>')
        title = "TechDaily: technology news" + (f" – page {page}" if page > 1 else "")
        newline = "\n"
        return f"""{self.head(title)}<div class="feed">
  <div class="editors-picks">
    <h2>Editor's picks</h2>
{picks}
  </div>
{newline.join(cards)}
</div>
<nav class="pagination">{" ".join(pagination)}</nav>
{self.tail()}"""

    def article(self, article: DemoArticle) -> str:
        section = self.site.section(article.section) if article.section != "Sponsored" else None
        stamp = f"{article.published:%Y-%m-%dT%H:%M:%SZ}"
        meta = f"""
<meta property="og:title" content="{_e(article.title)}">
<meta property="article:published_time" content="{stamp}">
<meta property="article:section" content="{_e(article.section)}">
<meta name="author" content="{_e(article.author)}">"""
        paragraphs = self.body_html(article)
        if article.layout == FEATURE:
            body = f"""  <div class="longread">
    <p class="longread-intro">{_e(article.paragraphs[0])}</p>
{chr(10).join(f'    <section class="longread-part">{p}</section>' for p in paragraphs[1:])}
  </div>"""
        elif article.layout == SHORT:
            body = f"""  <div class="post-content entry">
    {paragraphs[0]}
    <div class="post-continued">
{chr(10).join(paragraphs[1:])}
    </div>
  </div>"""
        else:
            middle = max(1, len(paragraphs) // 2)
            body = f"""  <div class="post-content entry">
{chr(10).join(paragraphs[:middle])}
    <div class="ad-slot">Advertisement</div>
{chr(10).join(paragraphs[middle:])}
  </div>"""
        kicker = f'<a href="{section.path}">{_e(section.name)}</a>' if section else "Sponsored"
        return f"""{self.head(f"{article.title} | TechDaily", meta)}<div class="post">
  <header class="post-header">
    <span class="kicker">{kicker}</span>
    <h1 class="post-title">{_e(article.title)}</h1>
    <div class="post-meta">by <a rel="author" href="/techdaily/about/#staff">{_e(article.author)}</a>
    <span class="sep">|</span>
    <time class="published" datetime="{stamp}">{_e(_tech_date(article.published))}</time></div>
  </header>
{body}
  <div class="post-tags">Filed under: {kicker}</div>
</div>
<div class="comments" id="comments">
  <h3>{_comments(article)} comments</h3>
  <div class="comment"><b>pixel_pusher</b><p>Interesting, but I'll wait for the reviews.</p></div>
  <div class="comment"><b>grumpy_admin</b><p>We have heard all this before.</p></div>
</div>
{self.tail()}"""

    def listing(self, title: str, articles: tuple[DemoArticle, ...]) -> str:
        newline = "\n"
        return f"""{self.head(f"{title} | TechDaily")}<div class="feed">
<h1>{_e(title)}</h1>
{newline.join(self.card(article) for article in articles)}
</div>
{self.tail()}"""

    def extra_pages(self) -> dict[str, str]:
        about = f"""{self.head("About | TechDaily")}<div class="page">
<h1>About TechDaily</h1>
<p>TechDaily covers the technology industry with a small, independent team.</p>
<h2 id="staff">Staff</h2>
<p>{_e(", ".join(sorted({article.author for article in self.site.articles})))}.</p>
<h2 id="privacy">Privacy</h2>
<p>We count visits without cookies and never sell data about our readers.</p>
</div>
{self.tail()}"""
        return {"/techdaily/about/": about}

    def data_pages(self) -> dict[str, Page]:
        """``/techdaily/feed.xml``: an RSS 2.0 feed of every post the index pages list, in their order
        (sponsored posts and the draft too), with its date and author; the demo's rule reads it alone."""
        site = self.site
        posts: list[DemoArticle] = []
        for page in range(1, INDEX_PAGES + 1):
            listed = list(site.page_articles(page))
            if page in (1, 3):
                listed.insert(4, site.denied_articles[0 if page == 1 else 1])
            if page == 1:
                listed.insert(7, site.private_articles[0])
            posts += listed
        items = "\n".join(
            f"  <item><title>{_e(post.title)}</title><link>{post.path}</link><guid>{post.path}</guid>"
            f"<pubDate>{email.utils.format_datetime(post.published)}</pubDate>"
            f"<dc:creator>{_e(post.author)}</dc:creator></item>"
            for post in posts
        )
        feed = f"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
  <title>TechDaily</title><link>/techdaily/</link><description>Technology news</description>
{items}
</channel></rss>
"""
        return {"/techdaily/feed.xml": Page(feed.encode(), "application/rss+xml; charset=utf-8")}


# --- 华夏网 (huaxia) ------------------------------------------------------------------------------------


class _Huaxia(_Layout):
    def head(self, title: str) -> str:
        nav = " | ".join(f'<a href="{section.path}">{_e(section.name)}</a>' for section in self.site.sections)
        return f"""<!DOCTYPE html>
<html>
<head>
<meta http-equiv="Content-Type" content="text/html; charset=gbk">
<title>{_e(title)}</title>
<meta name="keywords" content="华夏网,新闻,国内,财经,科技,社会,文化">
</head>
<body>
<div class="top">
  <div class="logo"><a href="/huaxia/">华夏网</a></div>
  <div class="nav"><a href="/huaxia/">首页</a> | {nav} | <a href="/huaxia/about.html">关于我们</a></div>
</div>
<div class="main">
"""

    def tail(self, recommended: tuple[DemoArticle, ...] = ()) -> str:
        ranking = "\n".join(
            f'    <li><em>{n}</em><a href="{article.path}" target="_blank">{_e(article.title)}</a></li>'
            for n, article in enumerate(self.most_read, start=1)
        )
        picks = "\n".join(
            f'    <li><a href="{article.path}" target="_blank">{_e(article.title)}</a></li>'
            for article in recommended
        )
        recommended_box = (
            f"""  <div class="tuijian"><h3>编辑推荐</h3>
  <ul>
{picks}
  </ul></div>
"""
            if recommended
            else ""
        )
        return f"""<div class="right">
  <div class="phb"><h3>点击排行</h3>
  <ol>
{ranking}
  </ol></div>
{recommended_box}</div>
</div>
<div class="foot">
  <a href="/huaxia/about.html">关于我们</a> | <a href="/huaxia/about.html#contact">联系我们</a> |
  <a href="/huaxia/about.html#ads">广告服务</a> | <a href="/citynews/">City News</a>
  <p>Copyright 2026 华夏网 版权所有 未经书面授权禁止转载、摘编</p>
</div>
</body>
</html>
"""

    @staticmethod
    def line(article: DemoArticle) -> str:
        return (
            f'    <li><span class="date">[{article.published:%m-%d %H:%M}]</span>'
            f'<a href="{article.path}" target="_blank">{_e(article.title)}</a></li>'
        )

    def index(self, page: int) -> str:
        site = self.site
        top = site.articles[0]
        lines = [self.line(article) for article in site.page_articles(page)]
        if page == 1:
            private = site.private_articles[0]
            lines.insert(
                5,
                f'    <li><span class="date">[内部]</span><a href="{private.path}">'
                f"{_e(private.title)}</a></li>",
            )
        pager = [f"共{INDEX_PAGES}页", f'<a href="{site.index_paths[0]}">首页</a>']
        if page > 1:
            pager.append(f'<a href="{site.index_paths[page - 2]}">上一页</a>')
        for number, path in enumerate(site.index_paths, start=1):
            pager.append(f"<b>{number}</b>" if number == page else f'<a href="{path}">{number}</a>')
        if page < INDEX_PAGES:
            pager.append(f'<a rel="next" href="{site.index_paths[page]}">下一页</a>')
        pager.append(f'<a href="{site.index_paths[-1]}">尾页</a>')
        following = site.page_articles(page % INDEX_PAGES + 1)[:4]
        newline = "\n"
        photos = "\n".join(
            f'    <li><a class="pic" href="{article.path}" target="_blank"><span>图片新闻</span></a>'
            f'<a href="{article.path}" target="_blank">{_e(article.title)}</a></li>'
            for article in site.page_articles(page)[1:9:2]
        )
        return f"""{self.head("华夏网_新闻中心" + (f"_第{page}页" if page > 1 else ""))}<div class="left">
  <div class="toutiao">
    <h2><a href="{top.path}" target="_blank">{_e(top.title)}</a></h2>
    <p>{_e(top.paragraphs[0].split("。")[0])}。<a href="{top.path}" target="_blank">[详细]</a></p>
  </div>
  <div class="tupian"><h3>图片新闻</h3>
  <ul>
{photos}
  </ul></div>
  <div class="newslist">
  <h3>最新新闻</h3>
  <ul>
{newline.join(lines)}
  </ul>
  </div>
  <div class="page">{" ".join(pager)}</div>
</div>
{self.tail(following)}"""

    def article(self, article: DemoArticle) -> str:
        section = self.site.section(article.section)
        paragraphs = self.body_html(article, "<p>\u3000\u3000{}</p>")
        if article.layout == FEATURE:
            body = f"""  <div class="TRS_Editor"><div class="Custom_UnionStyle">
{chr(10).join(paragraphs)}
  </div></div>"""
        elif article.layout == SHORT:
            body = f"""  <div id="content">
{paragraphs[0]}
    <div class="content-more">
{chr(10).join(paragraphs[1:])}
    </div>
  </div>"""
        else:
            body = f"""  <div id="content">
{chr(10).join(paragraphs)}
  </div>"""
        editor = ("孙丽", "马超", "胡波", "郭燕")[len(article.path) % 4]
        related = "\n".join(
            f'    <li><a href="{other.path}" target="_blank">{_e(other.title)}</a>'
            f"<span>{other.published:%m-%d}</span></li>"
            for other in self.related(article, 5)
        )
        return f"""{self.head(f"{article.title}_华夏网")}<div class="left">
<div class="crumbs">当前位置：<a href="/huaxia/">首页</a> &gt;
<a href="{section.path}">{_e(section.name)}</a> &gt; 正文</div>
<div class="article">
  <h1 id="title">{_e(article.title)}</h1>
  <div class="info">{article.published:%Y-%m-%d %H:%M}\u3000来源：华夏网\u3000作者：{_e(article.author)}</div>
{body}
  <div class="editor">（责任编辑：{editor}）</div>
  <div class="share">分享到：<span>微信</span> <span>微博</span> <span>QQ空间</span></div>
</div>
<div class="xgxw"><h3>相关新闻</h3>
  <ul>
{related}
  </ul>
</div>
</div>
{self.tail()}"""

    def listing(self, title: str, articles: tuple[DemoArticle, ...]) -> str:
        newline = "\n"
        return f"""{self.head(f"{title}_华夏网")}<div class="left">
  <div class="newslist">
  <h3>{_e(title)}</h3>
  <ul>
{newline.join(self.line(article) for article in articles)}
  </ul>
  </div>
</div>
{self.tail()}"""

    def extra_pages(self) -> dict[str, str]:
        about = f"""{self.head("关于我们_华夏网")}<div class="left">
<h1>关于我们</h1>
<p>华夏网是一家综合性新闻网站，提供国内、财经、科技、社会、文化等各类新闻资讯。</p>
<h2 id="contact">联系我们</h2>
<p>新闻热线及读者来信，请通过网站留言板与编辑部联系。</p>
<h2 id="ads">广告服务</h2>
<p>广告合作事宜，请联系本网广告部。</p>
</div>
{self.tail()}"""
        return {"/huaxia/about.html": about}

    def data_pages(self) -> dict[str, Page]:
        """``/huaxia/api/list_N.json``: the portal's news list as JSON (UTF-8), ten stories a page as the
        index pages list them (the internal story too), each page naming the next; the demo's rule reads
        it alone."""
        site = self.site
        pages = {}
        for page in range(1, INDEX_PAGES + 1):
            stories = list(site.page_articles(page))
            if page == 1:
                stories.insert(5, site.private_articles[0])
            listed = [
                {"url": story.path, "title": story.title, "time": f"{story.published:%Y-%m-%d %H:%M:%S}"}
                for story in stories
            ]
            following = f"/huaxia/api/list_{page + 1}.json" if page < INDEX_PAGES else None
            document = {"code": 0, "data": {"list": listed, "next": following}}
            body = json.dumps(document, ensure_ascii=False).encode()
            pages[f"/huaxia/api/list_{page}.json"] = Page(body, "application/json; charset=utf-8")
        return pages


_LAYOUTS: dict[str, type[_Layout]] = {"citynews": _CityNews, "techdaily": _TechDaily, "huaxia": _Huaxia}
