"""qRead: the main text of an article page from the word density of its text segments.

qRead (Wang and Wang, described in ``shared/seeds/kwb-crawler-and-qread.txt``) reads text structure, not the
DOM. The seed's own version is :func:`extractors.qread_paper.extract_paper`, kept to be compared with
this one on the same corpus.

``extract`` (``algo="qread"``; the default extractor, ``extract_learned``, adds stage 7) keeps qRead's
core, the densest segment, and fixes what the measurements on the development set showed
(``docs/extraction.md``):

1. Filter: drop what is never text (scripts, styles, media, form inputs).
2. Lines come from the DOM, not the source: every block element ends a line (minified pages have one
   source line), and each line knows its words, its words inside links and its block element; a single
   ``<br>`` inside a ``<p>`` joins its text (two in a row, or one before a numbered item, end a line). Lines
   in blocks that look like boilerplate (``<nav>``, hidden, class or id words such as ``sidebar``,
   ``share``, ``comments``, but not a layout's flags such as ``has-sidebar``) are left out, unless the
   block holds an article mark or most of the page's text (a hidden block only the latter: a hidden copy
   of the article is metadata, not a second body; "most of the page's text" is of the text shown, hidden
   blocks' left out). A hidden inline element (an icon's screen-reader label inside a link) leaves out
   its own text, not the line.
   WordPress's post classes (``tag-energy ... status-publish``) mark the article, class words inside
   ``<pre>`` are a code highlighter's, and the parts a React page streamed hidden at its end are walked
   in their places (``htmlparse.place_streamed``).
3. Segments: the empty lines between two text lines are the containers closed and opened between them,
   so θ keeps its meaning whatever the source formatting.
4. The core is the segment with the most words outside links per line, weighted by the square root of
   its size, so one long caption does not beat a twenty-paragraph article.
5. The article block: among the ancestors of the core's article lines, the block with the most article
   words times their share of all its words. This is the seed's "several segments of equal density" case
   done on the tree: an article split by an advert or a sub-heading is one block.
6. Clean the block: leave out link lists, short lines before the first and after the last article line
   (datelines, share bars), captions, repeated long lines, a copyright notice ("© 2026 ..."), and the
   headline (the line most like the title: the seed's title similarity, used where it helps); on Chinese
   pages, pagination ("上一页", "[1] [2]", never text wherever it is on the page), the posts after the
   first on a page of stamped posts (a forum thread, a blog's page of posts), the comments' heading and
   all after it, a dateline with its source and a copyright or reprint notice that ends the text.
7. Only in ``extract_learned`` (``algo="qread-learned"``, the default): the learned boilerplate step of
   ``extractors/boilerplate.py`` trims what stage 6 kept and pulls in body lines around it.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import lxml.etree
import lxml.html
from selectolax.lexbor import LexborHTMLParser, LexborNode

from extractors.htmlparse import page_title, parse_tree, place_streamed
from extractors.model import Block, Extraction
from extractors.text import CJK_CHARACTERS, CJK_RE, block_similarity, cosine, count_words, split_space, terms

ALGORITHM = "qread"
LEARNED_ALGORITHM = "qread-learned"

# The seed: "In practice, θ = 3 is sufficient" empty lines between two segments.
THETA = 3
PREVIEW_CHARS = 80


@dataclass(slots=True)
class Line:
    """A text line of the page, with its words and those in links."""

    text: str
    words: int
    link_words: int
    gap: int  # empty lines before this one
    tag: str
    owner: int = 0  # walk id of the block element holding the line
    position: int = 0  # walk event count when the line ended
    cjk: bool = False


@dataclass(slots=True)
class Segment:
    """A run of lines with fewer than θ empty lines between them."""

    start: int  # index of the first line in the line list
    end: int  # one past the last line
    words: int
    content_words: int
    lines: int

    @property
    def density(self) -> float:
        return self.words / self.lines if self.lines else 0.0


def split_segments(lines: list[Line], theta: int) -> list[Segment]:
    """The segments of ``lines``: a line with ``theta`` or more empty lines before it starts a new one."""
    segments: list[Segment] = []
    start = 0
    for index in range(1, len(lines) + 1):
        if index == len(lines) or lines[index].gap >= theta:
            part = lines[start:index]
            words = sum(line.words for line in part)
            content = sum(line.words - line.link_words for line in part)
            segments.append(Segment(start, index, words, content, len(part)))
            start = index
    return segments


def segments_extraction(
    algorithm: str,
    title: str | None,
    lines: list[Line],
    segments: list[Segment],
    similarities: list[float | None],
    chosen: set[int],
    reasons: dict[int, str],
    kept_lines: set[int] | None = None,
) -> Extraction:
    """The extraction of the ``chosen`` segments (only their ``kept_lines`` when given), with every segment
    as a block: its density, its title similarity and the reason it was or was not chosen."""
    paragraphs = [
        lines[i].text
        for index in sorted(chosen)
        for i in range(segments[index].start, segments[index].end)
        if kept_lines is None or i in kept_lines
    ]
    blocks = [
        Block(
            index=index,
            label=f"lines {segment.start + 1}-{segment.end}",
            lines=segment.lines,
            words=segment.words,
            density=round(segment.density, 2),
            similarity=None if similarities[index] is None else round(similarities[index] or 0.0, 3),
            score=round(segment.density, 2),
            chosen=index in chosen,
            reason=reasons.get(index, "densest" if index in chosen else ""),
            preview=_preview(lines, segment),
        )
        for index, segment in enumerate(segments)
    ]
    notes = [] if paragraphs else ["no line was kept"]
    return Extraction.of(paragraphs, title=title, algorithm=algorithm, blocks=blocks, notes=notes)


def segment_texts(lines: list[Line], segment: Segment) -> Iterable[str]:
    """The texts of the segment's lines (its text, joined by line breaks: not joined, a huge page's segment
    would be one more copy of its text)."""
    return (lines[i].text for i in range(segment.start, segment.end))


def _preview(lines: list[Line], segment: Segment) -> str:
    """The first ``PREVIEW_CHARS`` characters of the segment's text, its line breaks shown as `` / ``."""
    texts: list[str] = []
    joined = -1  # length of the texts joined by line breaks
    for text in segment_texts(lines, segment):
        if joined >= PREVIEW_CHARS:
            break
        texts.append(text)
        joined += len(text) + 1
    return "\n".join(texts)[:PREVIEW_CHARS].replace("\n", " / ")


# Elements that end a text line.
BLOCK_TAGS = frozenset(
    "p div li h1 h2 h3 h4 h5 h6 td th tr dt dd blockquote pre section article main aside header "
    "footer nav ul ol dl table tbody thead tfoot figure figcaption form fieldset address details "
    "summary hr caption center body legend".split()
)
# Containers: opening or closing one counts as an empty line between the text around it.
_CONTAINER_TAGS = frozenset(
    "div section article main aside header footer nav ul ol dl table td form fieldset figure body "
    "center details".split()
)
# Never text of the page: removed outright. (Not <head> itself: broken markup can put the body inside it.)
_DROP_TAGS = tuple(
    "script style noscript template svg math iframe object embed canvas audio video "
    "input option title meta link base".split()
)
# Inline formatting: its text joins the parent's (in C), so the walk has fewer elements to visit.
_FORMATTING_TAGS = tuple(
    "b i em strong u s small big font abbr cite code mark q sub sup time bdi wbr img strike tt kbd var "
    "ins del".split()
)
# Usually not text of the page, but broken markup can nest the whole page inside one: removed when small.
_SUSPECT_TAGS = ("nav", "button", "select", "textarea")
# class/id words of blocks that are never the article. A word counts when it starts or ends a class token
# ("sidebar", "site-sidebar", "nav__item"), not in the middle of one or as a BEM modifier
# ("inline-and-sidebar-container", "layout--sidebar" describe a layout that has a sidebar).
_BOILERPLATE_WORDS = frozenset(
    "nav navbar navigation menu breadcrumb breadcrumbs footer sidebar share sharing social comment "
    "comments related recommended promo advert advertisement ad ads banner cookie cookies newsletter "
    "subscribe popup modal pagination pager toolbar author byline bio caption credit credits meta "
    "tags tag categories signup cta popular trending disclaimer disclosure print".split()
)
_TOKEN_PART_RE = re.compile(r"[a-z0-9]+")
# A class token that flags whether a layout has a sidebar or comments, not a part of it: "has-sidebar",
# "with-nav-sidebar", "no-comments", "sidebar-enabled--false" sit on the wrapper of the article. Not any
# "has-"/"no-" token: "no-print" and "has-mega-menu" mark the page's furniture itself.
_LAYOUT_FLAG_RE = re.compile(
    r"(?:has|with|without|no)-(?:[a-z0-9]+-)*(?:sidebars?|comments?)$|[a-z0-9_-]*-(?:enabled|disabled)(?:--[a-z]+)?$"
)
_BOILERPLATE_BYTES = frozenset(word.encode() for word in _BOILERPLATE_WORDS)
# Every byte but [a-z0-9] to a space: split() then gives the parts _TOKEN_PART_RE finds.
_PARTS_APART = bytes(byte if byte in b"abcdefghijklmnopqrstuvwxyz0123456789" else 32 for byte in range(256))


@functools.lru_cache(maxsize=8192)
def _looks_boilerplate(words: str) -> int:
    """``_WORDED`` when a class or id token says boilerplate, ``_BODY`` when one says article body."""
    words = words.lower()
    if ("body" in words or "content" in words or "text" in words) and _BODY_MARK_RE.search(words):
        return _BODY
    if "status-publish" in words and _POST_CLASS_RE.search(words):
        return _BODY
    # Most values hold no boilerplate word at all: one look at all their parts settles them (in bytes when
    # ASCII, in half the time of the regular expression).
    if words.isascii():
        if _BOILERPLATE_BYTES.isdisjoint(words.encode().translate(_PARTS_APART).split()):
            return 0
    elif _BOILERPLATE_WORDS.isdisjoint(_TOKEN_PART_RE.findall(words)):
        return 0
    for token in words.split():
        if _ends_worded(token.split("--", 1)[0].split("__", 1)[0]) and not _LAYOUT_FLAG_RE.match(token):
            return _WORDED
    return 0


def _ends_worded(name: str) -> bool:
    """Whether the first or the last part of a class token's ``name`` (its ``_TOKEN_PART_RE`` runs) is a
    boilerplate word: in bytes when ASCII, in half the time of the regular expression."""
    if name.isascii():
        parts = name.encode().translate(_PARTS_APART).split()
        return bool(parts) and (parts[0] in _BOILERPLATE_BYTES or parts[-1] in _BOILERPLATE_BYTES)
    found = _TOKEN_PART_RE.findall(name)
    return bool(found) and (found[0] in _BOILERPLATE_WORDS or found[-1] in _BOILERPLATE_WORDS)


# Marks of the article itself: a block holding one of them is not boilerplate, whatever its class says.
_ARTICLE_MARK_TAGS = frozenset({"article", "main", "h1"})
# What the walk does with each tag, as bit flags looked up once per element.
_BLOCK, _CONTAINER, _SUSPECT, _MARK, _LINK, _BREAK, _CODE = 1, 2, 4, 8, 16, 32, 64
_TAG_KIND: dict[object, int] = {
    tag: (tag in BLOCK_TAGS and _BLOCK)
    | (tag in _CONTAINER_TAGS and _CONTAINER)
    | (tag in _SUSPECT_TAGS and _SUSPECT)
    | (tag in _ARTICLE_MARK_TAGS and _MARK)
    | (tag == "a" and _LINK)
    | (tag == "br" and _BREAK)
    | (tag == "pre" and _CODE)
    for tag in {*BLOCK_TAGS, *_CONTAINER_TAGS, *_SUSPECT_TAGS, *_ARTICLE_MARK_TAGS, "a", "br"}
}
# What marks a boilerplate-looking element (see _looks_boilerplate and _hidden), and what guards it (an
# article mark).
_WORDED, _HIDDEN, _GUARDED, _BODY = 1, 2, 4, 8
# Class or id words of the article's body ("article-body", "entry-content", "post_text", "storyBody"): a
# mark of the article like <article>, guarding a boilerplate-looking block that holds it.
_BODY_MARK_RE = re.compile(r"(?:article|entry|post|story)[-_]*(?:body|content|text)\b")
# WordPress's post_class() on the element holding a post: "post-1571 type-post status-publish ... hentry
# tag-thermostats category-news". Its tag and category words name the post's terms, not a tag list, and
# it guards the boilerplate-looking blocks around the post as an article mark does.
_POST_CLASS_RE = re.compile(r"(?:^|\s)type-[a-z0-9_-]+\s(?:.*\s)?status-publish(?:\s|$)")
_HIDDEN_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_NEVER_SUSPECT_TAGS = frozenset({"html", "body", "article", "main"})
_DROP = frozenset(_DROP_TAGS)
_FORMATTING = frozenset(_FORMATTING_TAGS)
# The attributes that may mark an element, read during the walk (a third of the time of XPath queries,
# whose results are one Python object per attribute): its names (see _looks_boilerplate) and those that
# may hide it (see _hidden).
_NAME_ATTRIBUTES = frozenset({"class", "id"})
_SHOWN_ATTRIBUTES = frozenset({"style", "hidden", "aria-hidden"})
_MARKING_ATTRIBUTES = _NAME_ATTRIBUTES | _SHOWN_ATTRIBUTES | {"itemprop"}
# A block whose class says boilerplate but holds more than this share of the page's text is kept.
MAX_BOILERPLATE_SHARE = 0.6
# Lines of these blocks are not the article's text: the headline (it is the title) and picture captions.
NOT_TEXT_TAGS = frozenset({"h1", "figcaption"})
# Lines of Chinese news pages that are never the article (see _notices): the start of a notice on
# copyright or reprinting, and a date with the source ("2022-02-13 07:00:00来源：", "2005-04-05 06:40更新
# 来源：", "2022年02月13日 07:00 | 来源：").
_NOTICE_RE = re.compile(
    r"\W*(?:反侵权公告|版权声明|版权所有|原创版权|转载申请|转载请|未经(?:书面)?(?:许可|授权)|免责声明"
    r"|本文(?:系|为|来源|转自|仅代表)|声明[：:])"
)
# A short line that heads such a notice, the words at its end ("振兴东北网版权与免责声明：",
# "郑 重 声 明"), not a sub-heading that names one ("格式条款中的免责声明是否有效？").
_NOTICE_HEADING_RE = re.compile(r"(?:版权|免责|郑重)声明\W*$")
# A notice's heading heads numbered clauses ("1. 任何言论纯属作者个人观点", "① 凡本网注明"), where a story's
# sub-heading that ends on "声明" heads its prose ("郑重声明" over a company's statement it reports). A
# heading numbered itself ("三、郑重声明") is a section of the story's outline, whatever follows it.
_CLAUSE_RE = re.compile(
    r"\W*(?:\d{1,2}\s*[.、．)）]|[①-⑳]|[一二三四五六七八九十]{1,3}、|[(（][一二三四五六七八九十\d]{1,3}[)）])"
)
# A line of a notice's own: one that opens it, one of its numbered clauses, or one that goes on about the
# site, its rights or how to reach it ("凡本网注明…", "如有侵权，请联系我们", "欢迎关注公众号").
_NOTICE_OR_CLAUSE_RE = re.compile(
    f"{_NOTICE_RE.pattern}|{_CLAUSE_RE.pattern}"
    r"|.*?(?:本网|本站|侵权|版权|转载|删除|联系我们|公众号|二维码|扫码|免责)"
)
_COPYRIGHT_RE = re.compile(r"©\s*(?:19|20)\d\d")
_DATELINE_RE = re.compile(
    r"\W*\d{4}[-./年]\d{1,2}[-./月]\d{1,2}日?\s*(?:\d{1,2}:\d{2}(?::\d{2})?)?\s*(?:更新|发布)?\s*[|｜丨]?"
    r"\s*来源[：:]"
)
# A Q&A page's stamp of a question or an answer, the end of its line ("提问于 2020-01-01 10:00",
# "张医生 回答于 2020年1月1日", "2020-01-01 10:00 回答"): a dateline.
_QA_DATE = r"\d{4}[-/.年]\d{1,2}[-/.月]\d{1,2}日?(?:\s*\d{1,2}:\d{2}(?::\d{2})?)?"
_QA_WORDS = r"(?:提问|回答|解答|追问|追答|采纳)"
_QA_STAMP_RE = re.compile(rf"{_QA_WORDS}(?:于|时间)?\W{{0,3}}{_QA_DATE}\W*$|{_QA_DATE}\s*{_QA_WORDS}\W*$")
# A post's stamp on a forum thread or a blog's page of posts: the full date and time a program wrote, with
# the seconds or beside a word that says it was posted ("2005-03-18 01:58:01", "发表于 2004年12月27日 12:40",
# "2004-12-27 12:40 发表"), not a word of what follows it (a story's timeline: "07:00 气象台发布暴雪预警").
_STAMP_RE = re.compile(r"\d{4}[-/.年]\d{1,2}[-/.月]\d{1,2}日?\s*\d{1,2}:\d{2}(:\d{2})?")
_POSTED = r"(?:发表|发布|发贴|发帖|张贴|回复|留言)"
_POSTED_BEFORE_RE = re.compile(_POSTED + r"(?:于|时间|日期)?\W{0,3}$")
_POSTED_AFTER_RE = re.compile(r"\s*" + _POSTED + r"(?:于|时间|日期)?(?!\w)")
# A short line of a Chinese page that turns its pages: "上一页", "下一篇：", "第1页/共3页", "[1] [2] [3]". The
# words stand alone, not in a sentence ("在上一篇文章中", "下一篇我们再谈").
_PAGINATION_RE = re.compile(
    rf"[上下]一[页篇](?:文章)?(?![{CJK_CHARACTERS}])|第\s*\d+\s*页\s*/?\s*共\s*\d+\s*页"
    r"|^\W*(?:\[\d+\]\s*){2,}\W*$"
)
# A "上一篇/下一页" bar's start: after a single <br> in a paragraph it is a line of its own, pagination.
_PAGE_TURN_RE = re.compile(r"\W*[上下]一[页篇]")
# The heading of a Chinese article's comments, the whole of its line ("评论", "网友评论(12)", "发表评论：").
# Not the heading of links to other stories ("相关新闻", "推荐阅读"): a box of them often sits inside the
# story, which goes on after it.
_COMMENTS_HEADING_RE = re.compile(
    r"\W*(?:网友|读者|热门|最新|精彩|全部|相关|发表|我要|查看)?(?:评论|留言)(?:列表|区)?\W*\d*\W*"
)
# Stamps after the article text that make it a page of posts (see _later_posts): one alone is the article's
# own (when it was published).
LATER_POSTS = 2
# A line before the article text that is this similar to the title, and not much longer, is the headline.
HEADLINE_SIMILARITY = 0.6
HEADLINE_SIZE = 1.5
# Pages with more tags than this ("<" counted) are parsed by libxml2, not lexbor (see _walk_page); the 763
# pages of the development and training sets have at most 15,400.
LEXBOR_MOST_TAGS = 30_000
# Pages with more tags left open than this (tags less twice the closing tags: "<" less twice "</" counted)
# are parsed by libxml2 too: open tags nest, and lexbor's parse takes time in the square of the depth. The
# 763 pages have at most 938 (void elements, <p> and <li> left open); 5,000 levels take lexbor 0.02 s.
LEXBOR_MOST_OPEN_TAGS = 5_000


@dataclass(slots=True)
class Reading:
    """What stages 1 to 6 found on a page: its lines, their kinds, the article block and the lines kept.

    ``hard`` holds the lines of the block that are never text whatever the learned step says (link
    lists, the headline, captions, repeats); ``kept`` is qRead's own choice. It holds no part of the
    page's tree (its blocks are their tags and attributes): the tree goes when the walk ends.
    """

    title: str | None
    lines: list[Line]
    walk: _Walk
    segments: list[Segment]
    similarities: list[float | None]
    best: int
    kinds: list[int]
    container: int
    in_block: list[int]
    kept: set[int]
    hard: set[int]
    dropped: dict[str, int]
    cjk: bool


def extract(
    html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
) -> Extraction:
    """qRead with DOM cues: the default extractor (see the module docstring, stages 1-6).

    The segments' title similarity is a diagnostic here (the headline is found line by line): it is
    measured when ``explain`` asks for it.
    """
    reading = read(html, title=title, explain=explain)
    if isinstance(reading, Extraction):
        return reading
    return _extraction(reading, reading.kept, ALGORITHM)


def extract_learned(
    html: str, *, url: str | None = None, title: str | None = None, explain: bool = False
) -> Extraction:
    """``extract`` and then stage 7, the learned boilerplate step (``extractors.boilerplate``): what qRead
    kept around its core trimmed, what it missed pulled in, by a model fitted on the training pages.

    The model learned from English pages only: on a CJK page the step runs only where qRead kept short
    lines (``boilerplate.applies``). The default extractor (docs/extraction.md).
    """
    reading = read(html, title=title, explain=explain)
    if isinstance(reading, Extraction):
        reading.algorithm = LEARNED_ALGORITHM
        return reading
    # Imported here: it imports this module, and a process that never extracts never loads its model.
    from extractors import boilerplate  # noqa: PLC0415

    if not boilerplate.applies(reading):
        extraction = _extraction(reading, reading.kept, LEARNED_ALGORITHM)
        extraction.notes.append(
            "the learned boilerplate step did not run: a CJK page whose kept lines are long (the model"
            " learned from English pages)"
        )
        return extraction
    kept = boilerplate.refine(reading)
    removed = len(reading.kept - kept)
    if removed:
        reading.dropped["the learned boilerplate step"] = removed
    return _extraction(reading, kept, LEARNED_ALGORITHM)


def read(html: str, *, title: str | None = None, explain: bool = False) -> Reading | Extraction:
    """Stages 1 to 6 of ``extract``: the page's reading, or an empty extraction saying why there is none."""
    # 1. Filter: what is never text; 2. lines from the DOM, boilerplate blocks left out; 3. empty lines
    # from the containers between them.
    walked = _walk_page(html, title)
    if walked is None:
        return Extraction.empty(ALGORITHM, title, "no HTML document in the input")
    walk, title = walked
    lines = walk.lines
    segments = split_segments(lines, THETA)
    if not segments:
        return Extraction.empty(ALGORITHM, title, "no text left after filtering")
    title_terms = terms(title) if title else None
    similarities = [block_similarity(segment_texts(lines, s), title_terms, explain) for s in segments]
    # 4. The core: the best segment by content density and size.
    scores = [_score(s) for s in segments]
    best = max(range(len(segments)), key=scores.__getitem__)
    # 5. The article block: the ancestor of the core's article lines with the most article words and
    # the largest share of them.
    cjk = sum(1 for line in lines if line.cjk) * 2 > len(lines)
    kinds = [_kind(line, cjk) for line in lines]
    core = [i for i in range(segments[best].start, segments[best].end) if kinds[i] == GOOD] or [
        segments[best].start,
        segments[best].end - 1,
    ]
    first, last = lines[core[0]], lines[core[-1]]
    container = _article_container(walk, kinds, first.owner, last.owner)
    low, high = walk.span[container]
    in_block = [i for i, line in enumerate(lines) if low <= line.position < high]
    dropped: dict[str, int] = {}
    hard: set[int] = set()

    def drop(indices: Iterable[int], why: str, *, never_text: bool = False) -> None:
        for index in indices:
            dropped[why] = dropped.get(why, 0) + 1
            if never_text:
                hard.add(index)

    # 6. Clean the block.
    inside = [i for i in in_block if kinds[i] != BAD]
    drop((i for i in in_block if kinds[i] == BAD), "mostly links", never_text=True)
    # Short lines before the first and after the last article line are datelines, bylines, share bars.
    good_lines = [i for i in inside if kinds[i] == GOOD]
    if good_lines:
        drop(
            (i for i in inside if not good_lines[0] <= i <= good_lines[-1]), "short, before or after the text"
        )
        inside = [i for i in inside if good_lines[0] <= i <= good_lines[-1]]
    # A long headline is an article line itself: a sub-heading sits between article lines of other tags.
    body = [i for i in good_lines if lines[i].tag not in NOT_TEXT_TAGS]
    headline = _headline(lines, title_terms) if cjk and body else None
    kept = {
        i
        for i in inside
        if lines[i].tag not in NOT_TEXT_TAGS
        or (cjk and bool(body) and body[0] < i < body[-1] and _sub_heading(lines, i, title_terms, headline))
    }
    drop((i for i in inside if i not in kept), "headline or caption tag", never_text=True)
    # A long line met twice is a carousel or a repeated teaser: the article says a thing once.
    seen: set[str] = set()
    for i in sorted(kept):
        if kinds[i] == GOOD:
            if lines[i].text in seen:
                kept.discard(i)
                drop([i], "repeated", never_text=True)
            seen.add(lines[i].text)
    # The headline is the title, not text, whatever tag holds it.
    if title_terms:
        title_words = count_words(title or "")
        for i in sorted(kept):
            if kinds[i] == GOOD and lines[i].words > HEADLINE_SIZE * title_words:
                break
            if lines[i].words <= HEADLINE_SIZE * title_words and (
                cosine(terms(lines[i].text), title_terms) >= HEADLINE_SIMILARITY
            ):
                kept.discard(i)
                drop([i], "the headline", never_text=True)
    # A copyright notice ("© 2026 The Valley Post. All rights reserved.") is the site's, not the article's.
    notices = [i for i in sorted(kept) if "©" in lines[i].text and _COPYRIGHT_RE.search(lines[i].text)]
    kept.difference_update(notices)
    drop(notices, "a copyright notice", never_text=True)
    # On a Chinese page: the posts after the first, a news page's dateline with its source, and the
    # copyright or reprint notice that ends it.
    if cjk:
        # Wherever it is: the learned step looks at lines qRead did not keep (a bar after the last paragraph).
        pagination = [
            i for i, line in enumerate(lines) if kinds[i] != GOOD and _PAGINATION_RE.search(line.text)
        ]
        kept.difference_update(pagination)
        drop(pagination, "pagination", never_text=True)
        later = _later_posts(lines, walk.parents, kinds, kept)
        kept.difference_update(later)
        drop(later, "the posts after the first (a thread or a blog's page of posts)", never_text=True)
        comments = _comments(lines, walk.parents, kinds, kept)
        kept.difference_update(comments)
        drop(comments, "the comments' heading and what follows it", never_text=True)
        datelines, notice = _notices(lines, walk.parents, kinds, kept)
        kept.difference_update(datelines, notice)
        drop(datelines, "a dateline", never_text=True)
        drop(notice, "a copyright or reprint notice and what follows it", never_text=True)
    return Reading(
        title, lines, walk, segments, similarities, best, kinds, container, in_block, kept, hard, dropped, cjk
    )


def _walk_page(html: str, title: str | None) -> tuple[_Walk, str | None] | None:
    """The walk of the page's tree and its title (``title`` when given), or ``None`` when ``html`` holds no
    document.

    Lexbor's tree unless the page could nest too deep for it (:func:`_lexbor_parses`) or has parts React
    streamed hidden at its end: libxml2's elements move with their children when the streamed parts are
    put in place (:func:`htmlparse.place_streamed`): once lexbor's walk found such parts, libxml2's tree is
    walked only with them in place.
    """
    if not html or html.isspace():
        return None
    streamed = False
    if _lexbor_parses(html):
        parser = LexborHTMLParser(html)
        if parser.root is not None:
            walk = _walk(_LexborTree(parser.root))
            if not walk.streamed:
                return walk, title or _page_title(parser)
            streamed = True
    root = parse_tree(html)
    if root is None:
        return None
    title = title or page_title(root)
    if not streamed:
        walk = _walk(_Libxml2Tree(_filtered(root)))
        if not walk.streamed:
            return walk, title
        again = parse_tree(html)
        if again is None:
            return walk, title
        root = again
    place_streamed(root)
    return _walk(_Libxml2Tree(_filtered(root))), title


def _lexbor_parses(html: str) -> bool:
    """Whether lexbor parses ``html``: lexbor's parse takes time in the square of the nesting depth (40,000
    nested elements, 2.5 s), where libxml2 stops at 2,047 levels. Tags bound the depth, and tags left open
    (``<`` less twice ``</``) catch the cheapest deep page, thousands of tags never closed: a page of more
    than ``LEXBOR_MOST_TAGS`` tags or ``LEXBOR_MOST_OPEN_TAGS`` tags left open goes to libxml2. The count
    is fooled by closing tags that close nothing (``<div></b>`` 14,900 times nests 14,900 deep in lexbor,
    0.2 s): it bounds the worst case, it does not prove the depth. The closing tags are counted only on a
    page of more tags than ``LEXBOR_MOST_OPEN_TAGS`` (a few)."""
    tags = html.count("<")
    if tags <= LEXBOR_MOST_OPEN_TAGS:
        return True
    return tags <= LEXBOR_MOST_TAGS and tags - 2 * html.count("</") <= LEXBOR_MOST_OPEN_TAGS


def _headline(lines: list[Line], title_terms: Counter[str] | None) -> int | None:
    """The page's first ``<h1>`` like the title (``HEADLINE_SIMILARITY``): its headline."""
    if title_terms is None:
        return None
    return next(
        (
            i
            for i, line in enumerate(lines)
            if line.tag == "h1" and cosine(terms(line.text), title_terms) >= HEADLINE_SIMILARITY
        ),
        None,
    )


def _sub_heading(lines: list[Line], i: int, title_terms: Counter[str] | None, headline: int | None) -> bool:
    """Whether line ``i`` of a CJK page's article block, between its first and last article lines not in an
    ``<h1>`` or a caption, is an ``<h1>`` its editor made a sub-heading, not the ``headline`` (nor its text
    again): one unlike the title ("怎样判断自己是否属于脂溢性脱发呢？"), or one like it after the headline
    ("早睡早起身体好在哪里？" under "春季养生：早睡早起身体好")."""
    line = lines[i]
    if line.tag != "h1" or title_terms is None:
        return False
    if cosine(terms(line.text), title_terms) < HEADLINE_SIMILARITY:
        return True
    return headline is not None and i > headline and line.text != lines[headline].text


def _later_posts(lines: list[Line], parents: list[int], kinds: list[int], kept: set[int]) -> list[int]:
    """The kept lines of a CJK page from the second post on, when the article is one post of several: a
    forum thread or a blog's page of posts, each post under a stamp of its date and time
    ("2005-03-18 01:58:01", "发表于 2004年12月27日 12:40"), or a post with its readers' stamped comments. The
    article is the first post. When ``LATER_POSTS`` or more stamps follow article text, the lines from the
    first of them to the end, with the short lines just before it (the next post's title, a "[打印]"
    link), unless the article text goes on after them in its own block (a live blog's stamped entries)."""
    order = sorted(kept)
    text_seen = False
    stamps: list[int] = []
    for position, i in enumerate(order):
        if kinds[i] == GOOD:
            text_seen = True
        elif text_seen and (stamp := _STAMP_RE.search(lines[i].text)):
            text = lines[i].text
            posted = _POSTED_BEFORE_RE.search(text, 0, stamp.start()) or _POSTED_AFTER_RE.match(
                text, stamp.end()
            )
            if (stamp[1] or posted) and not _dateline(text, kinds[i]):
                stamps.append(position)
    if len(stamps) < LATER_POSTS or _text_goes_on(lines, parents, kinds, order, stamps[0]):
        return []
    cut = stamps[0]
    while kinds[order[cut - 1]] != GOOD:
        cut -= 1
    return order[cut:]


def _comments(lines: list[Line], parents: list[int], kinds: list[int], kept: set[int]) -> list[int]:
    """The kept lines of a CJK page from the heading of its comments after article text
    (``_COMMENTS_HEADING_RE``, the whole line) to the end: readers' comments kept as text because they
    are long, or because their block holds most of the page's words. A heading the article text goes on
    after, in its own block, is the story's sub-heading ("网友评论" over quoted readers), not the
    comments'."""
    order = sorted(kept)
    text_seen = False
    for position, i in enumerate(order):
        if kinds[i] == GOOD:
            text_seen = True
        elif (
            text_seen
            and _COMMENTS_HEADING_RE.fullmatch(lines[i].text)
            and not _text_goes_on(lines, parents, kinds, order, position)
        ):
            return order[position:]
    return []


def _text_goes_on(
    lines: list[Line],
    parents: list[int],
    kinds: list[int],
    order: list[int],
    at: int,
    unless: re.Pattern[str] | None = None,
    least: int = 1,
) -> bool:
    """Whether ``least`` article lines after ``order[at]`` (ones that ``unless`` does not match) sit in the
    block of an article line before it: the story goes on there, where a thread's later posts and readers'
    comments each sit in blocks of their own."""
    before = {parents[lines[i].owner] for i in order[:at] if kinds[i] == GOOD}
    going_on = (
        i
        for i in order[at:]
        if kinds[i] == GOOD
        and parents[lines[i].owner] in before
        and (unless is None or not unless.match(lines[i].text))
    )
    return len(list(itertools.islice(going_on, least))) == least


def _notices(
    lines: list[Line], parents: list[int], kinds: list[int], kept: set[int]
) -> tuple[list[int], list[int]]:
    """The kept CJK lines that are a dateline with the source ("2022-02-13 07:00 来源：央广网"), and those
    from a copyright or reprint notice ("反侵权公告", "原创版权禁止商业转载", "声明：该文观点仅代表作者本人",
    a short line "郑 重 声 明" over numbered clauses) in the second half of the kept text to the end. Not a
    notice the story goes on after in its block (two lines of article text or more that are no notice,
    numbered clause or line about the site, its rights or how to reach it): a statement the story quotes
    ("声明：公司将…")."""
    order = sorted(kept)
    datelines = [i for i in order if lines[i].cjk and _dateline(lines[i].text, kinds[i])]
    total = sum(lines[i].words for i in order)
    before = 0
    for position, i in enumerate(order):
        text = lines[i].text
        if (
            2 * before >= total
            and lines[i].cjk
            and (
                _NOTICE_RE.match(text)
                or (
                    kinds[i] != GOOD
                    and _NOTICE_HEADING_RE.search(text.replace(" ", ""))
                    and not _CLAUSE_RE.match(text)
                    and position + 1 < len(order)
                    and _CLAUSE_RE.match(lines[order[position + 1]].text)
                )
            )
            and not _text_goes_on(lines, parents, kinds, order, position, _NOTICE_OR_CLAUSE_RE, least=2)
        ):
            return datelines, order[position:]
        before += lines[i].words
    return datelines, []


def _dateline(text: str, kind: int) -> bool:
    """Whether a CJK line is a dateline: a date with the source ("2022-02-13 07:00 来源：央广网"), or a short
    line ending on a Q&A page's stamp ("回答于 2020-01-01 10:00")."""
    return bool(_DATELINE_RE.match(text) or (kind != GOOD and _QA_STAMP_RE.search(text)))


def _filtered(root: lxml.etree._Element) -> lxml.etree._Element:
    """Stage 1: ``root`` without what is never text, formatting tags merged into their parents' text."""
    lxml.etree.strip_elements(root, *_DROP_TAGS, with_tail=False)
    lxml.etree.strip_tags(root, *_FORMATTING_TAGS)
    return root


def render(reading: Reading, kept: set[int]) -> str:
    """The text of the ``kept`` lines of ``reading``, as ``extract`` gives it."""
    return "\n\n".join(reading.lines[i].text for i in sorted(kept))


def _extraction(reading: Reading, kept: set[int], algorithm: str) -> Extraction:
    """The extraction of the ``kept`` lines of ``reading``, with the notes saying what was left out and
    what the learned step added."""
    segments, best = reading.segments, reading.best
    added = len(kept - reading.kept)
    chosen = {index for index, s in enumerate(segments) if not kept.isdisjoint(range(s.start, s.end))}
    reasons = {}
    for index in chosen | {best}:
        segment = segments[index]
        count = len(kept.intersection(range(segment.start, segment.end)))
        role = "densest" if index == best else "in the article block"
        reasons[index] = f"{role}: {count} of {segment.lines} lines kept"
    boilerplate = (
        f"{_lines(reading.walk.dropped)} left out in boilerplate blocks (navigation, sharing, comments, "
        "hidden...)"
    )
    no_article = not kept and GOOD not in reading.kinds
    notes = [
        boilerplate,
        f"article block: {_path(reading.walk, reading.container)}, around segment {best}, "
        f"{len(reading.in_block)} lines",
        *(f"{_lines(count)} of the article block left out: {why}" for why, count in reading.dropped.items()),
    ]
    if no_article:
        notes = [_no_article_text(reading), *([boilerplate] if reading.walk.dropped else [])]
    if added:
        notes.append(f"{_lines(added)} outside qRead's choice added by the learned boilerplate step")
    extraction = segments_extraction(
        algorithm, reading.title, reading.lines, segments, reading.similarities, chosen, reasons, kept
    )
    extraction.notes = notes if no_article else notes + extraction.notes
    return extraction


def _no_article_text(reading: Reading) -> str:
    """The note of a page none of whose lines is an article line: what its lines are instead."""
    unit = "characters" if reading.cjk else "words"
    short = [line.words for line, kind in zip(reading.lines, reading.kinds, strict=True) if kind == NEUTRAL]
    links = reading.kinds.count(BAD)
    found = [
        *([f"{_counted(len(short), 'short line')} ({_counted(sum(short), unit[:-1])})"] if short else []),
        *([f"{_counted(links, 'line')} mostly links"] if links else []),
    ]
    least = f"{GOOD_LINE_CJK} characters" if reading.cjk else f"{GOOD_LINE_WORDS} words"
    return f"no article text on the page: {', '.join(found)}, no article line ({least} or more outside links)"


def _lines(count: int) -> str:
    return _counted(count, "line")


def _counted(count: int, thing: str) -> str:
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


def _path(walk: _Walk, element: int) -> str:
    """Where an element sits: its label and its two nearest ancestors', outermost first."""
    labels: list[str] = []
    while element >= 0 and len(labels) < 3:
        labels.append(_label(walk.tags[element], walk.attributes[element]))
        element = walk.parents[element]
    return " > ".join(reversed(labels))


GOOD, NEUTRAL, BAD = 1, 0, -1
# Words outside links that make a line article text on its own (CJK: characters, about two per word).
GOOD_LINE_WORDS = 10
GOOD_LINE_CJK = 20
# A line with more than this share of its words in links is a link list (menu, related articles); between
# a half and nine tenths the development set scores the same, two thirds sits in the middle.
LINK_LIST_SHARE = 2 / 3


def _kind(line: Line, cjk: bool) -> int:
    if line.link_words > LINK_LIST_SHARE * line.words:
        return BAD
    content = line.words - line.link_words
    return GOOD if content >= (GOOD_LINE_CJK if cjk else GOOD_LINE_WORDS) else NEUTRAL


def _article_container(walk: _Walk, kinds: list[int], first: int, last: int) -> int:
    """The block (walk id) around the core whose article words times their share of its words is largest.

    Words of link lines count twice in the share: a block that gains a list of links pays for it.
    """
    good = [0]
    total = [0]
    for line, kind in zip(walk.lines, kinds, strict=True):
        content = line.words - line.link_words
        good.append(good[-1] + (content if kind == GOOD else 0))
        total.append(total[-1] + line.words + (line.words if kind == BAD else 0))
    positions = [line.position for line in walk.lines]
    candidates = _common_ancestors(walk.parents, first, last)
    best, best_score = candidates[0], -math.inf
    for element in candidates:
        low, high = walk.span[element]
        i, j = bisect_left(positions, low), bisect_left(positions, high)
        words = good[j] - good[i]
        score = words * words / (total[j] - total[i]) if words else 0.0
        if score > best_score:
            best, best_score = element, score
    return best


def _common_ancestors(parents: list[int], first: int, last: int) -> list[int]:
    """The common ancestors of two elements, innermost first."""
    chain = []
    node = first
    while node >= 0:
        chain.append(node)
        node = parents[node]
    on_chain = set(chain)
    node = last
    while node not in on_chain:
        node = parents[node]
    return chain[chain.index(node) :]


def _score(segment: Segment) -> float:
    """qRead's density d(S), of the words outside links, times the square root of their number.

    Density alone lets a one-line caption beat a long article; the size weight fixes that. On the
    development set the square root scores above the logarithm and plain density (0.940, 0.939, 0.939
    en token F1), though all three are close: the article block (stage 5) absorbs most of the difference.
    """
    return segment.content_words / segment.lines * math.sqrt(segment.content_words)


@dataclass(slots=True)
class _Walk:
    lines: list[Line]
    parents: list[int]  # walk id of each block element's parent block element (-1 for the root)
    span: list[tuple[int, int]]  # walk id -> positions of its start and end events
    # The block elements as qRead's later stages read them: two lists, not an object per block (a page has
    # hundreds of blocks; making the objects took about 3% of the extraction's time).
    tags: list[str]  # walk id -> the block element's tag
    attributes: list[dict[str, str | None]]  # walk id -> its attributes
    dropped: int  # lines left out in boilerplate blocks
    streamed: bool  # a hidden part React streamed at the end of the page (see htmlparse.place_streamed)


def _page_title(parser: LexborHTMLParser) -> str | None:
    """As ``htmlparse.page_title``: the first ``<title>``, else Open Graph title, else first ``<h1>``."""
    title = parser.css_first("title")
    if title is not None and (text := " ".join(title.text(deep=True).split())):
        return text
    meta = parser.css_first('meta[property="og:title"][content]')
    if meta is not None and (text := " ".join((meta.attributes.get("content") or "").split())):
        return text
    heading = parser.css_first("h1")
    return (" ".join(heading.text(deep=True).split()) or None) if heading is not None else None


# What a tree's walk tells the walk's logic (_walk), in document order with stage 1's filter done (nothing
# that is never text, formatting elements walked through as if they were not there): an element starts
# (its tag and attributes) or ends, each with the text that came before it; or text comes after text.
_START, _END, _TEXT = 0, 1, 2
_Event = tuple[int, Any, str, dict[str, str | None] | None, str | None]
# What lexbor's walk does with a node that is neither text nor an element of a tag the walk names (see
# _lexbor_tags): walk through a formatting element, leave out a node with what it holds (stage 1's filter,
# comments, the doctype), or tell of an element by the name lexbor gives it (custom elements too).
_ELEMENT, _FORMATTING_ELEMENT, _OTHER = 0, 1, 2


def _lexbor_tags() -> tuple[int, dict[int, str], dict[int, int]]:
    """The tag id of text nodes (``LexborNode.tag_id``), the names of the tags the walk tells apart by
    their ids, and what lexbor's walk does with the other nodes by their ids (``_ELEMENT`` when not
    found): ``LexborNode.tag`` takes four to five times the time of ``tag_id``, an element's name decoded
    anew on each call."""
    parser = LexborHTMLParser("<!DOCTYPE html><p>text<!-- comment --></p>")
    document = parser.root.parent if parser.root is not None else None
    nodes = {node.tag: node.tag_id for node in document.traverse(include_text=True)} if document else {}
    special = ("-text", "-comment", "-doctype", "-document")
    if missing := sorted(name for name in special if name not in nodes):
        raise RuntimeError(f"selectolax's lexbor tree has none of {missing}")
    roles = {nodes[name]: _OTHER for name in special[1:]}
    roles.update((parser.create_node(tag).tag_id, _FORMATTING_ELEMENT) for tag in _FORMATTING_TAGS)
    roles.update((parser.create_node(tag).tag_id, _OTHER) for tag in _DROP_TAGS)
    named = {str(tag) for tag in _TAG_KIND} | _NEVER_SUSPECT_TAGS | {"head", "span"}
    return nodes["-text"], {parser.create_node(tag).tag_id: tag for tag in named}, roles


_LEXBOR_TEXT, _LEXBOR_NAMES, _LEXBOR_ROLES = _lexbor_tags()
_LEXBOR_BLOCKS = frozenset(tag_id for tag_id, name in _LEXBOR_NAMES.items() if name in BLOCK_TAGS)


class _LexborTree:
    """Lexbor's HTML5 tree as the walk reads it: walked along its first-child and next-sibling links.

    Lexbor's tree is a browser's: an ``<a>`` left open is opened again in each block after it.
    """

    def __init__(self, root: LexborNode) -> None:
        self.root = (root.tag or "html", root.attributes)
        self._top = root

    def events(self) -> Iterator[_Event]:
        node: LexborNode | None = self._top
        # The open nodes whose children are walked: elements the walk was told of, formatting elements (in
        # ``formatting``, which the walk was not told of).
        path: list[LexborNode] = []
        formatting: list[LexborNode] = []
        before: str | None = None
        while node is not None:
            tag_id = node.tag_id
            child = None
            # Text nodes first, then the tags the walk names (most elements): one test settles a node in
            # the common cases (about 1,900 nodes a page).
            if tag_id == _LEXBOR_TEXT:
                text = node.text_content
                if text:
                    if before:
                        yield _TEXT, None, "", None, before
                    before = text
            else:
                name = _LEXBOR_NAMES.get(tag_id)
                if name is None:
                    role = _LEXBOR_ROLES.get(tag_id, _ELEMENT)
                    if role == _ELEMENT:
                        name = node.tag
                    elif role == _FORMATTING_ELEMENT:
                        child = node.first_child
                        if child is not None:
                            path.append(node)
                            formatting.append(node)
                if name:
                    yield _START, node, name, node.attributes, before
                    before = None
                    child = node.first_child
                    if child is None:
                        yield _END, node, "", None, None
                    else:
                        path.append(node)
            if child is not None:
                node = child
                continue
            while True:
                following = node.next
                if following is not None:
                    node = following
                    break
                if not path:
                    node = None
                    break
                node = path.pop()
                if formatting and formatting[-1] is node:
                    formatting.pop()
                else:
                    yield _END, node, "", None, before
                    before = None
        if before:
            yield _TEXT, None, "", None, before

    @staticmethod
    def holds_block(node: LexborNode) -> bool:
        # By tag ids: a CSS selector of the block tags is parsed anew on each call, 15 times the time.
        return any(inner.tag_id in _LEXBOR_BLOCKS for inner in node.traverse())

    @staticmethod
    def after_br(br: LexborNode) -> tuple[str, str | None]:
        """The text after the ``<br>`` up to the next element that is not formatting (libxml2's tail once
        the formatting is stripped), and that element's tag."""
        tail: list[str] = []
        following = _after(br)
        while following is not None:
            name = following.tag or ""
            if name == "-text":
                tail.append(following.text_content or "")
            elif name in _FORMATTING:
                tail.append(following.text(deep=True))
            elif name and name[0] != "-" and name not in _DROP:
                break
            following = _after(following)
        return "".join(tail), None if following is None else following.tag


def _after(node: LexborNode) -> LexborNode | None:
    """The node after ``node`` once formatting elements are stripped: its next sibling, else the next
    sibling of the formatting element that ends with it."""
    following = node.next
    while following is None:
        parent = node.parent
        if parent is None or parent.tag not in _FORMATTING:
            return None
        node = parent
        following = node.next
    return following


class _Libxml2Tree:
    """libxml2's tree, filtered (:func:`_filtered`), as the walk reads it: for a page whose streamed parts
    were put in place (:func:`htmlparse.place_streamed`) or that could nest too deep for lexbor
    (:func:`_lexbor_parses`)."""

    def __init__(self, root: lxml.etree._Element) -> None:
        self.root = (str(root.tag), _attributes(root))
        self._top = root

    def events(self) -> Iterator[_Event]:
        before: str | None = None
        for event, element in lxml.etree.iterwalk(self._top, events=("start", "end")):
            if event == "start":
                yield _START, element, element.tag, _attributes(element), before
                before = element.text
            else:
                yield _END, element, "", None, before
                before = element.tail
        if before:
            yield _TEXT, None, "", None, before

    @staticmethod
    def holds_block(element: lxml.etree._Element) -> bool:
        return next(element.iter(*BLOCK_TAGS), None) is not None

    @staticmethod
    def after_br(br: lxml.etree._Element) -> tuple[str, str | None]:
        """The ``<br>``'s tail and the tag of the element after it."""
        following = br.getnext()
        return br.tail or "", None if following is None else following.tag


def _attributes(element: lxml.etree._Element) -> dict[str, str | None]:
    return {str(key): str(value) for key, value in element.items()}


def _walk(tree: _LexborTree | _Libxml2Tree) -> _Walk:
    """Lines of text in document order, with the block element each belongs to and its ancestry.

    Lines inside boilerplate blocks (stage 1) are left out, unless the block holds an article mark or most
    of the page's text: a class word is a hint, not proof ("no-sidebar" on the page wrapper). Only an
    ``<a>`` with an ``href`` makes link text (an anchor, ``<a name>``, is none: in a browser's tree one
    left open is opened again in every block after it).
    """
    lines: list[Line] = []
    pieces: list[str] = []
    link_pieces: list[str] = []
    parents: list[int] = [-1]
    starts: list[int] = [0]  # walk id -> position of its start event
    ends: list[int] = [0]  # walk id -> position of its end event
    tags = [tree.root[0]]  # walk id -> block element's tag
    block_attributes = [tree.root[1]]  # walk id -> its attributes
    stack: list[int] = [0]  # open block elements, walk ids
    suspects: list[list[int]] = []  # [start, end, _HIDDEN | _GUARDED flags] of boilerplate-looking elements
    open_suspects: list[tuple[object, list[int]]] = []
    open_kinds: list[int] = []  # _TAG_KIND of the open elements
    skipped: list[object] = []  # open hidden inline elements, whose text is left out
    holds_block, after_br = tree.holds_block, tree.after_br
    gap = 0
    in_link = 0
    # Inside <pre>, class words are a highlighter's ("hljs-comment", "token tag"), not the page's layout.
    in_code = 0
    streamed = False
    tag = "body"
    position = 0

    def flush() -> None:
        # White space between inline elements is kept as one space: words stay apart as a browser shows them.
        nonlocal gap
        words = split_space("".join(pieces))
        pieces.clear()
        if words:
            text = " ".join(words)
            cjk = not text.isascii() and CJK_RE.search(text) is not None
            link_words = 0
            if link_pieces:
                link_text = "".join(link_pieces)
                link_words = count_words(link_text) if cjk else len(split_space(link_text))
            lines.append(
                Line(
                    text,
                    count_words(text) if cjk else len(words),
                    link_words,
                    gap,
                    tag,
                    stack[-1],
                    position,
                    cjk,
                )
            )
            gap = 0
        link_pieces.clear()

    for event, node, name, attributes, text in tree.events():
        if text and not skipped:
            if not text.isspace():
                pieces.append(text)
                if in_link:
                    link_pieces.append(text)
            elif pieces:
                pieces.append(" ")
        if event == _START:
            position += 1
            kind = _TAG_KIND.get(name, 0)
            verdict = 0
            if attributes and not in_code and name not in _NEVER_SUSPECT_TAGS:
                # The names alone, and the values of the few that may mark it: a page's other values
                # (links, image sources) are long, and most elements have some.
                for key, value in attributes.items():
                    if key in _MARKING_ATTRIBUTES:
                        if key in _NAME_ATTRIBUTES:
                            verdict |= _looks_boilerplate(value or "")
                        elif key in _SHOWN_ATTRIBUTES:
                            verdict |= _hidden(key, value or "")
                        elif value == "articleBody":
                            verdict |= _BODY
            # Most elements have no verdict: the tag alone settles them.
            if verdict and attributes:
                if verdict & _HIDDEN and not streamed:
                    streamed = _streamed_part(name, attributes)
                if verdict & _HIDDEN and not kind & (_BLOCK | _CONTAINER) and not holds_block(node):
                    # A hidden inline element (an icon's screen-reader label in a link): its text is left
                    # out, the sentence around it kept whole (as a hidden block, it took the sentence
                    # with it).
                    skipped.append(node)
                elif kind & _SUSPECT or verdict & _HIDDEN or (verdict & _WORDED and not kind & _MARK):
                    record = [position, 0, verdict & _HIDDEN]
                    suspects.append(record)
                    open_suspects.append((node, record))
            elif kind & _SUSPECT:
                record = [position, 0, 0]
                suspects.append(record)
                open_suspects.append((node, record))
            if open_suspects and (kind & _MARK or verdict & _BODY):
                for _, record in open_suspects:
                    record[2] |= _GUARDED
            if kind & _BLOCK:
                if pieces:
                    flush()
                tag = name
                stack.append(len(parents))
                parents.append(stack[-2])
                starts.append(position)
                ends.append(position)
                tags.append(name)
                block_attributes.append(attributes or {})
                if kind & _CONTAINER:
                    gap += 1
                elif kind & _CODE:  # <pre>: a block, not a container
                    in_code += 1
            elif kind & _BREAK:
                # A paragraph is one line: a single <br> inside a <p> joins its text as a space.
                if pieces:
                    if tags[stack[-1]] == "p" and not _ends_line(*after_br(node)):
                        pieces.append(" ")
                    else:
                        flush()
            elif kind & _LINK:
                if attributes and "href" in attributes:
                    in_link += 1
                else:
                    kind = 0
            open_kinds.append(kind)
        elif event == _END:
            position += 1
            kind = open_kinds.pop()
            if skipped and skipped[-1] is node:
                skipped.pop()
            if kind & _BLOCK:
                if pieces:
                    flush()
                if len(stack) > 1:
                    ends[stack.pop()] = position
                if kind & _CONTAINER:
                    gap += 1
                elif kind & _CODE:
                    in_code -= 1
            elif kind & _LINK:
                in_link -= 1
            if open_suspects and open_suspects[-1][0] is node:
                if pieces:
                    flush()
                open_suspects.pop()[1][1] = position
    flush()
    ends[0] = position + 1
    span = list(zip(starts, ends, strict=True))
    kept = _without_boilerplate(lines, suspects)
    return _Walk(kept, parents, span, tags, block_attributes, len(lines) - len(kept), streamed)


def _streamed_part(name: str, attributes: dict[str, str | None]) -> bool:
    """:func:`htmlparse.is_streamed_part` on an element's tag and attributes."""
    return name == "div" and "hidden" in attributes and (attributes.get("id") or "")[:2] == "S:"


def _ends_line(tail: str, following: str | None) -> bool:
    """Whether a ``<br>`` inside a ``<p>``, with the text ``tail`` after it and then the element of tag
    ``following``, ends a line: two in a row, or one before a numbered item ("2. ", "① ", "一、": a list or a
    notice's clauses written as a paragraph) or a Chinese page turn ("上一篇：")."""
    if tail and not tail.isspace():
        return _CLAUSE_RE.match(tail) is not None or _PAGE_TURN_RE.match(tail) is not None
    return following == "br"


def _label(tag: str, attributes: dict[str, str | None]) -> str:
    """An element's tag with its first class, or its id: enough for a person to find it."""
    classes = (attributes.get("class") or "").split()
    if classes:
        return f"{tag}.{classes[0]}"
    ident = attributes.get("id")
    return f"{tag}#{ident}" if ident else str(tag)


def _hidden(name: str, value: str) -> int:
    """``_HIDDEN`` when an element's ``style``, ``hidden`` or ``aria-hidden`` attribute (``name``, one of
    ``_SHOWN_ATTRIBUTES``) says it is not shown."""
    if name == "style":
        return _HIDDEN if _HIDDEN_RE.search(value) else 0
    return _HIDDEN if name == "hidden" or value == "true" else 0


def _without_boilerplate(lines: list[Line], suspects: list[list[int]]) -> list[Line]:
    if not suspects or not lines:
        return lines
    positions = [line.position for line in lines]
    words = [0]
    for line in lines:
        words.append(words[-1] + line.words)
    limit = MAX_BOILERPLATE_SHARE * words[-1]
    doomed = bytearray(len(lines))
    # Hidden blocks first, an article mark inside or not: a hidden copy of the article (metadata for
    # machines) would show the body twice. What they hold is then not counted in the share of a block
    # whose class says boilerplate, in the block or in the page: that share is of the text a reader sees.
    for start, end, flags in suspects:
        if flags & _HIDDEN:
            i, j = bisect_left(positions, start), bisect_left(positions, end + 1)
            if words[j] - words[i] <= limit:
                doomed[i:j] = b"\x01" * (j - i)
    shown = [0]
    for line, drop in zip(lines, doomed, strict=True):
        shown.append(shown[-1] + (0 if drop else line.words))
    limit = MAX_BOILERPLATE_SHARE * shown[-1]
    for start, end, flags in suspects:
        # An article mark inside guards a block whose class says boilerplate.
        if flags & (_GUARDED | _HIDDEN):
            continue
        i, j = bisect_left(positions, start), bisect_left(positions, end + 1)
        if shown[j] - shown[i] <= limit:
            doomed[i:j] = b"\x01" * (j - i)
    return [line for line, drop in zip(lines, doomed, strict=True) if not drop]
