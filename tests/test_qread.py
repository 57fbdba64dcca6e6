"""qRead on hand-made pages and golden pages of the development set: what must be kept and what must go."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from extractors import extract, qread
from extractors.qread import (
    _BODY,
    _BODY_MARK_RE,
    _BOILERPLATE_WORDS,
    _WORDED,
    LEXBOR_MOST_TAGS,
    THETA,
    _looks_boilerplate,
)
from extractors.qread_paper import extract_paper
from extractors.text import terms

PAGES = Path(__file__).parent / "pages"
GOLDEN = Path(__file__).parent / "golden"
GOLDEN_CASES: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text(encoding="utf-8"))["cases"]


def page(name: str) -> str:
    return (PAGES / name).read_text(encoding="utf-8")


def story_page(title: str, paragraphs: list[str], after: str = "") -> str:
    """A page titled ``title`` whose one block holds ``paragraphs``, each a <p>; ``after``, HTML after
    that block."""
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return f"<html><head><title>{title}</title></head><body><div>{body}</div>{after}</body></html>"


def test_one_sentence_article_is_found_among_longer_link_lists() -> None:
    result = extract(page("one_sentence.html"))
    assert result.text == "The harbour bridge reopened to traffic on Monday after six weeks of repairs."
    assert result.title == "Harbour bridge reopens after repairs | Riverside Daily"


def test_article_in_several_equal_density_blocks_is_kept_whole() -> None:
    result = extract(page("equal_density.html"))
    assert result.paragraphs[0].startswith("The city council published its traffic plan on Tuesday")
    assert result.paragraphs[-1].startswith("Residents can comment on the traffic plan")
    assert len(result.paragraphs) == 4
    for junk in ("Buy a new car today", "Cycle lanes: what you need to know", "Home", "Market Square"):
        assert junk not in result.text


def test_an_article_nested_deeper_than_two_thousand_elements_is_read() -> None:
    """A browser shows text however deep it sits; libxml2's tree ended at 2,047 levels and lost it."""
    story = "The council voted on Tuesday to keep the old library open for another year of readers."
    paragraphs = [f"{story} Paragraph {number}." for number in range(1, 4)]
    inner = "".join(f"<p>{text}</p>" for text in paragraphs)
    nested = f"{'<div>' * 3000}{inner}{'</div>' * 3000}"
    html = f"<html><head><title>Library</title></head><body>{nested}</body></html>"
    assert extract(html).paragraphs == paragraphs


def test_a_named_anchor_left_open_does_not_make_the_story_a_link_list() -> None:
    """An ``<a name>`` never closed is opened again in every block after it, as a browser builds the
    page; it is no link (no ``href``), so the story under it is text, not a list of links."""
    paragraphs = [
        f"The harbour bridge reopened on Monday after six weeks of repairs, day {day}." for day in (1, 2, 3)
    ]
    html = story_page("Bridge", paragraphs).replace("<div>", '<div><a name="top">', 1)
    assert extract(html).paragraphs == paragraphs


def test_a_named_anchor_is_no_link_on_a_page_too_large_for_lexbor() -> None:
    """A page of more than ``LEXBOR_MOST_TAGS`` tags is read from libxml2's tree by the same walk: text inside
    an ``<a name>`` (no ``href``) is text there too, not a list of links."""
    paragraphs = [
        f"The harbour bridge reopened on Monday after six weeks of repairs, day {day}." for day in (1, 2, 3)
    ]
    anchored = [f'<a name="day{day}">{text}</a>' for day, text in enumerate(paragraphs, 1)]
    html = story_page("Bridge", anchored, after=f"<div>{'<span></span>' * LEXBOR_MOST_TAGS}</div>")
    assert extract(html).paragraphs == paragraphs


def test_a_page_of_thousands_of_unclosed_elements_is_read_from_libxml2s_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tags opened and never closed nest as deep as they are many, and lexbor's parse takes time in the
    square of the depth: a page within ``LEXBOR_MOST_TAGS`` tags whose tags are mostly left open is parsed
    by libxml2, which stops nesting at 2,047 levels; its story, before them, is read."""
    paragraphs = [
        f"The harbour bridge reopened on Monday after six weeks of repairs, day {day}." for day in (1, 2, 3)
    ]
    html = story_page("Bridge", paragraphs, after="<div>" * (LEXBOR_MOST_TAGS - 100))
    parsed: list[str] = []

    def recorded(markup: str) -> LexborHTMLParser:
        parsed.append(markup)
        return LexborHTMLParser(markup)

    monkeypatch.setattr(qread, "LexborHTMLParser", recorded)
    assert extract(html).paragraphs == paragraphs
    assert parsed == []


def test_navigation_heavy_portal_page_yields_only_the_story() -> None:
    result = extract(page("portal.html"))
    assert len(result.paragraphs) == 3
    assert result.paragraphs[0].startswith("After two years of building work")
    for junk in ("Top stories", "Floods close roads", "More news", "Crosswords", "Privacy"):
        assert junk not in result.text


def test_chinese_page_counts_characters_as_words() -> None:
    result = extract(page("chinese.html"))
    assert result.paragraphs == [
        "经过为期三个月的全面检修，长江大桥于本周一上午恢复通车，市民出行重新变得便捷。",
        "据介绍，此次检修更换了桥面铺装层和伸缩缝，并对全桥的照明系统进行了升级改造。",
        "交通部门提醒，大桥通车初期车流量较大，请驾驶员注意减速慢行，服从现场交警指挥。",
    ]
    chosen = result.chosen_blocks
    assert chosen and all(block.words > 100 for block in chosen)


def test_a_chinese_news_pages_dateline_and_reprint_notice_are_not_the_article() -> None:
    """A dateline with the source ("2026-11-20 09:15:00来源：…") before the story and the copyright and
    reprint notices after it are long lines of text, but never the article's."""
    result = extract(page("chinese_notices.html"))
    assert len(result.paragraphs) == 3
    assert result.paragraphs[0].startswith("记者从市民政局获悉")
    assert result.paragraphs[-1].startswith("市民政局有关负责人表示")
    for junk in ("来源", "原创版权", "转载申请"):
        assert junk not in result.text


@pytest.mark.parametrize(
    "dateline", ["2026-11-20 09:15更新 来源：江州日报客户端", "2026年11月20日 09:15 | 来源：江州日报客户端"]
)
def test_a_chinese_dateline_updated_or_with_a_bar_before_its_source_is_not_the_article(dateline: str) -> None:
    """Portals write "更新" (updated) or a bar between the time and the source: still a dateline."""
    html = page("chinese_notices.html").replace("2026-11-20 09:15:00来源：江州日报客户端", dateline)
    result = extract(html)
    assert result.paragraphs[0].startswith("记者从市民政局获悉")
    assert "来源" not in result.text


def test_the_pagination_of_a_chinese_story_is_not_its_text() -> None:
    """A portal's page bar above and below the story, and a row of page numbers, are never text."""
    bar = "<p>第1页/共2页 &lt;&lt; 上一页 | 下一页 &gt;&gt;</p>"
    html = (
        page("chinese_notices.html")
        .replace("<p>记者从市民政局获悉", f"{bar}<p>记者从市民政局获悉")
        .replace("<p>原创版权", f"<p>[1] [2]</p>{bar}<p>原创版权")
    )
    result = extract(html)
    assert len(result.paragraphs) == 3
    for junk in ("上一页", "第1页", "[1]"):
        assert junk not in result.text


def test_a_notice_word_early_in_a_chinese_story_does_not_cut_it() -> None:
    """Only a notice in the second half of the text ends the article: a story that opens on one is kept."""
    opening = "<p>未经许可不得入内的老旧厂房，如今改建成了养老服务中心。</p>"
    html = page("chinese_notices.html").replace("<p>记者从市民政局获悉", f"{opening}<p>记者从市民政局获悉")
    result = extract(html)
    assert result.paragraphs[0].startswith("未经许可不得入内")
    assert result.paragraphs[-1].startswith("市民政局有关负责人表示")


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
@pytest.mark.parametrize(
    ("name", "first", "last", "junk"),
    [
        # A blog's page of posts, in an old table layout: each post under its title and a stamp with the
        # seconds, its paragraphs split by <br> and indented with "　　".
        (
            "chinese_blog_posts.html",
            "周末和两个朋友",
            "中午在河边",
            ["打印", "春天的第一场雨", "昨夜下了", "萧红"],
        ),
        # A forum thread: each post under its author and "发表于 2007-6-2 10:21", the replies long and short.
        (
            "chinese_forum_thread.html",
            "最近听说",
            "拓宽马路当然是好事",
            ["小林子", "支持楼主", "顶一下", "说句公道话"],
        ),
        # A post with its readers' comments, each under a name and a stamp.
        (
            "chinese_post_comments.html",
            "去年冬天",
            "现在我已经能",
            ["发表于", "网友评论", "写得真好", "手工的东西"],
        ),
    ],
    ids=["blog-page", "forum-thread", "post-comments"],
)
def test_a_chinese_page_of_stamped_posts_gives_the_first_post(
    algo: str, name: str, first: str, last: str, junk: list[str]
) -> None:
    """A forum thread, a blog's page of posts and a post with its comments hold one post after another,
    each under a stamp of its date and time: the article is the first post, whose text is the densest
    block's only with the others."""
    result = extract(page(name), algo=algo)
    assert result.paragraphs[0].startswith(first)
    assert result.paragraphs[-1].startswith(last)
    for word in junk:
        assert word not in result.text


def test_a_chinese_story_with_dates_and_one_stamp_is_kept_whole() -> None:
    """Dates in a story's text and one stamp after it (when it was published) do not make posts."""
    story = [
        "2003年5月，这座城市开始修建第一条地铁线路，前后用了整整六年时间才全部完工通车。",
        "2009年9月28日 10:30，首班列车从火车站出发，沿线挤满了前来体验的市民和外地游客。",
        "2019年12月，第五条线路开通，地铁日均客流第一次突破了三百万人次，成为出行首选。",
        "市交通部门表示，到2030年还将新建四条线路，基本形成覆盖主城区的轨道交通网络。",
    ]
    paragraphs = "".join(f"<p>{text}</p>" for text in story)
    stamp = "<p>发布时间：2024-03-15 22:36:05</p><p>编辑：李明</p>"
    html = f"<html><head><title>地铁十五年</title></head><body><div>{paragraphs}{stamp}</div></body></html>"
    assert extract(html).paragraphs == story


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_post_ends_at_its_comments_heading(algo: str) -> None:
    """Readers' comments under "网友评论", long enough to be taken for text and in the same block as the
    post (an old page's unnamed blocks): the article ends at the heading."""
    result = extract(page("chinese_comments_heading.html"), algo=algo)
    assert len(result.paragraphs) == 3
    assert result.paragraphs[0].startswith("上个月终于")
    assert result.paragraphs[-1].startswith("好在小区门口")
    for junk in ("网友评论", "老同学", "恭喜乔迁", "小笼包"):
        assert junk not in result.text


def test_a_box_of_related_links_inside_a_chinese_story_does_not_end_it() -> None:
    """A box of links under "推荐阅读" or "相关新闻" often sits inside a story, which goes on after it; a line
    that speaks of comments is not their heading."""
    story = [
        "市文化局今天公布，今年将新建二十个社区图书馆，每个图书馆的藏书都不少于一万册。",
        "评论人士认为，社区图书馆离居民更近，能让老人和孩子在家门口就借到需要的书籍。",
        "据介绍，新馆将延长开放时间到晚上九点，并提供自助借还和电子阅览等多项服务。",
    ]
    box = (
        '<div><p>推荐阅读</p><p><a href="/1">全民阅读月活动启动</a></p><p><a href="/2">书店夜读</a></p></div>'
    )
    body = f"<p>{story[0]}</p><p>{story[1]}</p>{box}<p>{story[2]}</p>"
    html = f"<html><head><title>新建社区图书馆</title></head><body><div>{body}</div></body></html>"
    paragraphs = extract(html).paragraphs
    assert [text for text in paragraphs if text in story] == story


@pytest.mark.parametrize(
    "heading", ["江州网版权与免责声明：", "郑 重 声 明"], ids=["site-disclaimer", "spaced-out"]
)
def test_a_notice_under_a_heading_that_names_the_site_or_is_spaced_out_ends_a_chinese_story(
    heading: str,
) -> None:
    """A news site's "XX网版权与免责声明：" or a forum's "郑 重 声 明" heads numbered clauses long enough to
    be taken for text: the story ends at the heading."""
    story = [
        "江州市今年将投入两亿元改造老旧小区，涉及居民一万二千户，主要包括加装电梯和更换管网。",
        "市住建局表示，改造方案将逐个小区征求居民意见，超过三分之二的居民同意后才能开工。",
        "去年完成改造的三十个小区中，居民满意度超过九成，加装的电梯已经全部投入使用。",
    ]
    clauses = [
        "① 凡本网注明“来源：江州网”的所有作品，版权均属于江州网，未经授权不得转载、摘编或使用。",
        "② 凡本网注明“来源：其他媒体”的作品，均转载自其它媒体，目的在于传递更多信息，不代表本网观点。",
    ]
    assert extract(story_page("老旧小区改造", [*story, heading, *clauses])).paragraphs == story


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_storys_timeline_of_dated_announcements_is_not_taken_for_posts(algo: str) -> None:
    """A story's timeline, each entry a date and time and what was issued ("发布暴雪预警"), is its text:
    "发布" there is not a post's stamp, which writes it beside the time ("发表于 2007-6-2 10:21")."""
    story = [
        "今年入冬以来，我市遭遇了三次大范围降雪过程，全市各部门提前部署，确保了道路畅通和群众生活正常。",
        "据市应急管理局介绍，此次降雪过程中，全市共出动除雪车辆一千二百余台次，清扫主次干道四百多公里。",
        "2022年2月13日 07:00 气象台发布暴雪预警",
        "2022年2月13日 09:30 应急局发布三级响应",
        "2022年2月14日 18:00 气象台发布解除预警",
        "市应急管理局有关负责人表示，下一步将继续加强值班值守，密切关注天气变化，及时发布预警信息，全力保障群众安全。",
    ]
    assert extract(story_page("我市全力应对降雪_江州日报网", story), algo=algo).paragraphs == story


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_storys_sub_heading_that_asks_about_a_disclaimer_does_not_end_it(algo: str) -> None:
    """A short line that names a disclaimer ends the story only when it heads one (it ends on "声明"): a
    sub-heading that asks about one ("免责声明是否有效？") is the story's."""
    story = [
        "近日，市民张先生在网上购买了一台洗衣机，收货后发现机器无法正常使用，商家却以页面上的说明为由拒绝退货。",
        "商家表示，商品页面早已写明“特价商品一经售出概不退换”，张先生下单即视为同意，因此不承担退货责任。",
        "张先生认为，洗衣机收到时就无法使用，属于质量问题，与是否特价无关，商家理应退货或者更换新机。",
        "格式条款中的免责声明是否有效？",
        "律师介绍，经营者以格式条款排除消费者依法享有的退货权利，这样的条款依法无效，消费者仍可要求退货。",
        "律师提醒，消费者遇到类似情况应保留购物凭证和聊天记录，必要时可以向市场监管部门投诉或者提起诉讼。",
    ]
    assert extract(story_page("网购特价商品能否退货_江州日报网", story), algo=algo).paragraphs == story


def test_h1_sub_headings_inside_a_chinese_story_are_kept_and_its_headline_is_not() -> None:
    """An editor who makes each sub-heading an ``<h1>``: between the story's paragraphs, a heading unlike
    the title is the story's, and the headline (like the title) stays out wherever it is."""
    title = "春季养生：早睡早起身体好"
    paragraphs = [
        "春天气温回升，人体新陈代谢加快，这时候调整作息，比一年中任何时候都更容易见效。",
        "专家建议，晚上十一点前入睡，早上六点半左右起床，午饭后可以小睡二十分钟左右。",
        "饮食上宜清淡，多吃新鲜蔬菜，少吃油炸和辛辣食物，每天喝足一千五百毫升的水。",
    ]
    body = (
        f"<h1>{title}</h1><p>{paragraphs[0]}</p><h1>怎样安排一天的作息？</h1><p>{paragraphs[1]}</p>"
        f"<h1>饮食要注意什么</h1><p>{paragraphs[2]}</p>"
    )
    html = f"<html><head><title>{title}_健康频道</title></head><body><div>{body}</div></body></html>"
    assert extract(html).paragraphs == [
        paragraphs[0],
        "怎样安排一天的作息？",
        paragraphs[1],
        "饮食要注意什么",
        paragraphs[2],
    ]


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
@pytest.mark.parametrize("title", ["江州日报网", "新闻中心_江州日报网"])
def test_a_long_h1_headline_of_a_chinese_story_is_not_its_text_when_the_title_names_only_the_site(
    algo: str, title: str
) -> None:
    """A headline long enough to be an article line opens the story's lines: it is no sub-heading, though
    the page's title (the site's name) is unlike it."""
    headline = "江州新增五个社区养老服务中心，可为周边近两万名老年人提供日间照料和助餐服务"
    html = (
        page("chinese_notices.html")
        .replace("<title>江州新增五个社区养老服务中心_江州日报网</title>", f"<title>{title}</title>")
        .replace("<h1>江州新增五个社区养老服务中心</h1>", f"<h1>{headline}</h1>")
    )
    result = extract(html, algo=algo)
    assert result.paragraphs[0].startswith("记者从市民政局获悉")
    assert "日间照料和助餐服务" not in result.text


def test_a_hidden_copy_of_the_article_does_not_double_the_body() -> None:
    """A hidden "republish this article" box holds the headline, the body, a date and an image URL: its
    article marks do not make it text, so the body comes out once."""
    result = extract(page("hidden_copy.html"))
    assert len(result.paragraphs) == 5
    assert result.paragraphs[0].startswith("More than four hundred volunteers")
    assert result.paragraphs[-1].startswith("The results will be sent")
    for junk in ("Republish this article", "2026-06-28", "cdn.valleypost.example", "Creative Commons"):
        assert junk not in result.text


def test_a_body_class_inside_a_boilerplate_looking_wrapper_keeps_the_body() -> None:
    """The story sits in a wrapper whose class ends in "sidebar" (a grid with a table of contents beside
    the text); the ``article-body`` inside it marks the article, so the wrapper is not boilerplate."""
    result = extract(page("body_in_sidebar_class.html"))
    assert len(result.paragraphs) == 6
    assert result.paragraphs[0].startswith("Cloud computing has moved")
    assert result.paragraphs[-1].startswith("That stickiness is why")


def test_a_hidden_copy_of_the_article_does_not_outweigh_the_body_in_a_layout_class() -> None:
    """The story sits in the content column of a layout with a sidebar (``sidebar-content``, a class word
    of boilerplate), and a hidden "republish this story" box holds a copy of it: the column holds all the
    text a reader sees, so it is kept, and the hidden copy stays out."""
    result = extract(page("hidden_copy_beside_layout_class.html"))
    assert len(result.paragraphs) == 4
    assert result.paragraphs[0].startswith("The library on Mill Street")
    assert result.paragraphs[-1].startswith("Local growers say")
    assert "Republish" not in result.text


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_sidebar_holding_a_hidden_copy_of_the_story_is_not_kept_for_it(algo: str) -> None:
    """The hidden "republish this story" box sits inside the sidebar: the sidebar's share of the text a
    reader sees is of its shown teasers, not of the copy it hides, so it stays out."""
    html = page("hidden_copy_beside_layout_class.html")
    start = html.index('<div class="republish-box"')
    end = html.index("</div>", start) + len("</div>")
    box = html[start:end]
    teasers = (
        "<h3>Most read</h3><p>Council votes to keep the night buses running through the winter after a"
        " petition signed by two thousand riders.</p><p>The old swimming baths on Quay Road will reopen in"
        " May with a new roof, the trust that runs them said on Tuesday.</p>"
    )
    html = (
        (html[:start] + html[end:])
        .replace('<div class="sidebar-content">', '<div class="story">')
        .replace(
            '<div class="sidebar"><a href="/most-read">Most read</a> <a href="/weather">Weather</a></div>',
            f'<aside class="sidebar">{teasers}{box}</aside>',
        )
    )
    result = extract(html, algo=algo)
    assert len(result.paragraphs) == 4
    assert result.paragraphs[-1].startswith("Local growers say")
    for junk in ("Most read", "night buses", "Republish"):
        assert junk not in result.text


def test_parts_react_streamed_at_the_end_of_the_page_are_read_in_their_place() -> None:
    """A streamed React page holds its story in hidden ``<div id="S:n">`` parts after the footer, and a
    script (gone from the saved page) moves each into its ``<template id="B:n">`` or ``P:n``: the story
    is read, in its order, without the sidebar and the footer."""
    result = extract(page("react_streamed.html"))
    starts = ["An index fund is", "Because nobody", "Over long periods", "Most brokers"]
    found = [next(i for i, p in enumerate(result.paragraphs) if p.startswith(start)) for start in starts]
    assert found == sorted(found)
    for junk in ("Popular this week", "Savings rates climb", "independent publisher"):
        assert junk not in result.text


def test_a_wordpress_post_whose_classes_name_its_tags_is_not_a_tag_list() -> None:
    """WordPress's post classes ("tag-energy category-heating ... status-publish hentry") name the post's
    terms: the post's element is the article, not a tag cloud to leave out."""
    result = extract(page("wordpress_post_classes.html"))
    assert len(result.paragraphs) == 3
    assert result.paragraphs[0].startswith("A smart thermostat learns")
    assert result.paragraphs[-1].startswith("The savings are largest")


def test_a_code_highlighters_classes_do_not_hide_its_comments() -> None:
    """Inside ``<pre>``, "hljs-comment" is a highlighter's class, not a comment thread; a hidden
    ``<pre>`` (a copy for machines) stays hidden."""
    result = extract(page("highlighted_code.html"))
    assert "# record the staged files with a message" in result.text
    assert "# fetch the changes from the remote branch" in result.text
    assert "a copy for machines" not in result.text


def test_headline_is_left_out_because_it_is_the_title() -> None:
    assert "How the city plans" not in extract(page("equal_density.html")).text


def test_explanation_marks_the_densest_segment_and_gives_its_measures() -> None:
    result = extract(page("portal.html"), explain=True)
    densest = [block for block in result.blocks if block.reason.startswith("densest")]
    assert len(densest) == 1
    block = densest[0]
    assert block.chosen
    assert block.density == pytest.approx(block.words / block.lines, abs=0.01)
    assert block.density == max(b.density for b in result.blocks if b.lines)
    assert block.similarity is not None
    assert 0.0 <= block.similarity <= 1.0
    assert all(b.similarity is None for b in extract(page("portal.html")).blocks)
    assert block.reason == f"densest: 3 of {block.lines} lines kept"
    assert any(note.startswith("article block: ") and "div.article" in note for note in result.notes)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("aAΣσß İ,.-_\t長江\u200b"), max_size=12), max_size=6))
def test_the_terms_of_lines_are_those_of_their_joined_text(lines: list[str]) -> None:
    # A huge page's segments are weighed line by line, not joined: the same bag, in the same order.
    assert list(terms(lines).items()) == list(terms("\n".join(lines)).items())


@pytest.mark.parametrize("first", [78, 79, 80, 81])
def test_a_segments_preview_is_the_start_of_its_text(first: int) -> None:
    html = f"<html><body><p>{'x' * first}</p><p>{'y' * 30}</p><p>end</p></body></html>"
    (block,) = extract(html, algo="qread").blocks
    assert block.preview == ("x" * first + "\n" + "y" * 30 + "\nend")[:80].replace("\n", " / ")


def test_paper_version_splits_segments_at_theta_empty_source_lines() -> None:
    gap = "\n" * (THETA + 1)
    html = (
        "<html><body>"
        f"<div>Home</div>\n<div>News</div>\n<div>Sport</div>{gap}"
        "<p>The first line of the article has quite a few words in it.</p>"
        "<p>The second line of the article has about as many words as that.</p>"
        f"{gap}<div>Contact</div>\n<div>Privacy</div>"
        "</body></html>"
    )
    result = extract_paper(html)
    assert [block.lines for block in result.blocks] == [3, 2, 2]
    assert result.paragraphs == [
        "The first line of the article has quite a few words in it.",
        "The second line of the article has about as many words as that.",
    ]


def test_paper_version_puts_adjacent_blocks_on_lines_of_their_own() -> None:
    # Blocks with no line break between them in the source: their words must not run together.
    html = (
        "<html><body><div>The end of a paragraph</div><div>Next paragraph here</div>"
        "<ul><li>one item</li><li>two items</li></ul><h2>A heading</h2>its tail"
        "<table><tr><td>cell a</td><td>cell b</td></tr></table><p>bold <b>words</b>and<i>more</i></p>"
        "</body></html>"
    )
    assert (
        extract_paper(html).text
        == extract(html, algo="qread").text
        == "\n\n".join(
            [
                "The end of a paragraph",
                "Next paragraph here",
                "one item",
                "two items",
                "A heading",
                "its tail",
                "cell a",
                "cell b",
                "bold wordsandmore",
            ]
        )
    )


def test_paper_version_keeps_the_empty_source_lines_around_blocks() -> None:
    # A block that already ends its source line gets no second line break: θ counts the source's lines,
    # and θ - 1 empty lines do not split a segment.
    gap = "\n" * THETA
    html = f"<html><body><div>Home</div>  {gap}<div>News</div>\n<div>Sport</div>\n</body></html>"
    assert [block.lines for block in extract_paper(html).blocks] == [3]


def test_paper_version_uses_the_title_for_a_short_article() -> None:
    html = (
        "<html><head><title>Ferry strike ends</title></head><body>"
        "<div>Latest: markets rise, rail works planned for the weekend, and more</div>\n\n\n\n"
        "<p>The ferry strike ends today.</p>\n\n\n\n"
        "<div>Advertise with us and reach readers across the whole region every week</div>"
        "</body></html>"
    )
    result = extract_paper(html)
    assert result.text == "The ferry strike ends today."
    # --explain said "densest" of it, while the first block, the densest, was left out.
    densest = max(result.blocks, key=lambda block: block.density)
    assert not densest.chosen, result.blocks
    assert [(block.index, block.reason) for block in result.blocks if block.chosen] == [
        (1, f"most like the title: the densest, #{densest.index}, is not")
    ], result.blocks


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[case["id"] for case in GOLDEN_CASES])
def test_golden_page(case: dict[str, Any]) -> None:
    html = (GOLDEN / f"{case['id']}.html").read_text(encoding="utf-8")
    text = " ".join(extract(html, url=case["url"]).text.split())
    for snippet in case["must_contain"]:
        assert snippet in text, f"missing {snippet!r}"
    for snippet in case["must_not_contain"]:
        assert snippet not in text, f"junk {snippet!r}"


def _looks_boilerplate_by_definition(value: str) -> int:
    """The rule of ``_looks_boilerplate`` without its fast paths: an article-body mark, else a boilerplate
    word as the first or last part of a class token that does not flag whether a layout has a sidebar or
    comments ("has-sidebar", "no-comments", "sidebar-enabled"), BEM modifiers and elements cut off."""
    value = value.lower()
    if _BODY_MARK_RE.search(value):
        return _BODY
    for token in value.split():
        if re.fullmatch(r"(?:has|with|without|no)-(?:[a-z0-9]+-)*(?:sidebars?|comments?)", token):
            continue
        if re.fullmatch(r"[a-z0-9_-]*-(?:enabled|disabled)(?:--[a-z]+)?", token):
            continue
        parts = re.findall(r"[a-z0-9]+", token.split("--", 1)[0].split("__", 1)[0])
        if parts and (parts[0] in _BOILERPLATE_WORDS or parts[-1] in _BOILERPLATE_WORDS):
            return _WORDED
    return 0


_CLASS_WORDS = st.sampled_from(
    [
        *sorted(_BOILERPLATE_WORDS),
        *["Nav", "FOOTER", "Share", "article", "entry", "post", "story", "body", "content", "text", "main"],
        *["wrap", "grid", "x1", "navigation", "é", "ü", "İ", "has", "with", "no", "enabled", "disabled"],
    ]
)
_CLASS_GLUE = st.sampled_from(["", " ", "-", "_", "--", "__", ":", "/", "\t"])


@given(
    st.lists(st.tuples(_CLASS_WORDS, _CLASS_GLUE), max_size=6).map(lambda pairs: "".join(map("".join, pairs)))
)
@example("x1-nav")
@example("layout--sidebar")
@example("nav__item is-Open")
@example("Entry_Content")
@example("navigation")
@example("post has-sidebar")
@example("sidebar-enabled--false")
@example("no-print has-mega-menu")
def test_class_names_are_judged_by_their_rule(value: str) -> None:
    assert _looks_boilerplate.__wrapped__(value) == _looks_boilerplate_by_definition(value)


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_sentence_holding_a_screen_reader_label_is_kept_whole_without_the_label(algo: str) -> None:
    # A link with an icon's hidden label ("external icon") in the middle of a paragraph: the label is not
    # the article, the words before and after it are (they were dropped with it).
    label = (
        '<span class="visually-hidden sr-only" aria-label=" external icon" role="img"></span>'
        '<span class="cdc-icon-external" aria-hidden="true">external icon</span>'
    )
    paragraphs = "".join(
        f"<p>Paragraph {n} of the guide says plainly what the reader needs to know about healthy meals"
        f" and why it matters, with <a href='https://example.org/{n}'>a source{label}</a> to read more."
        " The sentence after the link goes on with more of the advice.</p>"
        for n in range(6)
    )
    page = f"<html><head><title>Healthy eating</title></head><body><main>{paragraphs}</main></body></html>"
    text = extract(page, algo=algo).text
    for n in range(6):
        assert f"Paragraph {n} of the guide says plainly" in text, text
        assert "with a source to read more. The sentence after the link goes on" in text, text
    assert "external icon" not in text


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_storys_sub_heading_named_like_comments_does_not_end_it(algo: str) -> None:
    """A story's section that quotes readers under "网友评论", among its paragraphs, is the story's: the
    comments' heading ends the article only when no article text follows in the article's block."""
    story = [
        "本月起，我市在老城区试行夜间免费停车，晚上八点至次日早上七点，路边停车位一律不再收费。",
        "据市交通局介绍，此次试行涉及老城区三十二条道路的一千六百多个停车位，试行期为半年。",
        "网友评论",
        "不少网友在留言中表示，这项政策确实解决了老小区居民停车难的实际困难，希望能够长期坚持下去。",
        "也有网友建议，试行范围可以扩大到新城区，同时加强早高峰前的车辆引导，避免占道影响通行。",
        "市交通局有关负责人表示，试行期满后将综合评估实施效果，并认真研究市民提出的意见和建议。",
    ]
    assert extract(story_page("老城区试行夜间免费停车_江州日报网", story), algo=algo).paragraphs == story


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_live_blogs_stamped_entries_are_not_taken_for_posts(algo: str) -> None:
    """A market live blog, each entry under its time with the seconds, is one story: its entries go on in
    the block of its first paragraphs, where a thread's later posts each sit in a block of their own."""
    story = [
        "今天A股三大指数集体高开，市场成交较昨日同期明显放量，以下为本报记者带来的盘中实时播报。",
        "本报记者将持续关注市场动态，及时为投资者带来最新消息，投资者据此操作，风险自担。",
        "2024-03-15 09:30:00",
        "沪指高开百分之零点二，创业板指高开百分之零点五，半导体板块领涨，多只个股涨停，市场情绪回暖。",
        "2024-03-15 10:15:32",
        "北向资金净流入超过二十亿元，白酒板块午前拉升，贵州茅台涨逾百分之二，食品饮料板块全线走强。",
        "2024-03-15 11:30:00",
        "沪指半日上涨百分之零点八，两市成交额突破六千亿元，较昨日同期明显放量，个股涨多跌少。",
    ]
    assert extract(story_page("A股早盘直播_江州财经网", story), algo=algo).paragraphs == story


# A Chinese tutorial whose short sentences speak of the previous and next articles and pages: its text.
TUTORIAL_STORY = [
    "这一篇我们来看看如何在自己的电脑上配置开发环境，包括编辑器、解释器和常用的第三方工具包。",
    "在上一篇文章中，我们介绍了安装。",
    "首先打开命令行窗口，输入安装命令，等待下载完成后，再输入版本查询命令，确认安装已经成功。",
    "上一页的截图里标出了按钮。",
    "然后新建一个项目文件夹，在里面创建虚拟环境，这样每个项目用到的工具包就不会互相影响了。",
    "下一篇我们再谈调试技巧。",
    "最后打开编辑器，选择刚才创建的虚拟环境作为解释器，运行一个简单的程序，检查输出是否正常。",
]


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_storys_short_lines_that_speak_of_the_previous_article_are_its_text(algo: str) -> None:
    """A sentence that speaks of the previous article ("在上一篇文章中", "下一篇我们再谈") is the story's
    text: a page bar writes the words alone, beside a bar, arrows or a colon ("上一篇：", "上一页 |")."""
    story = TUTORIAL_STORY
    bar = '<p>上一篇：<a href="/1">入门教程（一）</a> 下一篇：<a href="/3">入门教程（三）</a></p>'
    html = story_page("Python入门教程（二）_小舟的技术博客", story, after=f"<div>{bar}</div>")
    assert extract(html, algo=algo).paragraphs == story


@pytest.mark.parametrize(
    ("heading", "statement"),
    [
        (
            "郑重声明",
            "本公司郑重声明，网传本公司即将破产重组的消息纯属谣言，公司经营一切正常，将依法追究造谣者的责任。",
        ),
        (
            "二、关于格式条款中的免责声明",
            "格式条款中的免责声明并非一律无效，只有不合理地免除或者减轻经营者责任的条款，才会被法院认定无效。",
        ),
    ],
)
@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_storys_sub_heading_ending_on_a_statement_does_not_end_it(
    algo: str, heading: str, statement: str
) -> None:
    """A sub-heading that ends on "声明" heads the story's own prose (a company's statement it reports, a law
    explainer's section): a site's notice under such a heading is a list of numbered clauses."""
    story = [
        "近日，网上流传一则消息，称本市一家知名家电企业资金链断裂，即将申请破产重组，引发消费者担忧。",
        "记者昨日来到该企业位于城东的生产基地，看到各条生产线正常运转，工人们正在忙着赶制出口订单。",
        "该企业有关负责人告诉记者，今年以来企业订单饱满，一季度销售收入同比增长百分之十二，经营稳定。",
        "律师提醒，编造并传播虚假信息损害企业商业信誉的，要依法承担民事责任，情节严重的还可能构成犯罪。",
        heading,
        statement,
        "市场监管部门表示，将会同有关部门依法处理此事，也提醒广大消费者不信谣、不传谣，理性看待网络信息。",
    ]
    assert extract(story_page("家电企业回应破产传闻_江州日报网", story), algo=algo).paragraphs == story


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_statement_a_chinese_story_quotes_in_its_second_half_does_not_end_it(algo: str) -> None:
    """A line that opens on "声明：" ends the story as a site's notice only when the story does not go on
    after it in its block: a story quotes a company's statement and goes on."""
    story = [
        "近日，网上流传一则消息，称本市一家知名家电企业资金链断裂，即将申请破产重组，引发消费者担忧。",
        "记者昨日来到该企业位于城东的生产基地，看到各条生产线正常运转，工人们正在忙着赶制出口订单。",
        "该企业有关负责人告诉记者，今年以来企业订单饱满，一季度销售收入同比增长百分之十二，经营稳定。",
        "当天下午，该企业在官方网站发布声明，全文如下。",
        "声明：公司将依法追究造谣者的法律责任，并保留向公安机关报案的权利，公司经营一切正常。",
        "市场监管部门表示，将会同有关部门依法处理此事，也提醒广大消费者不信谣、不传谣，理性看待网络信息。",
        "律师提醒，编造并传播虚假信息损害企业商业信誉的，要依法承担民事责任，情节严重的还可能构成犯罪。",
    ]
    assert extract(story_page("家电企业回应破产传闻_江州日报网", story), algo=algo).paragraphs == story


@pytest.mark.parametrize(
    "notice",
    [
        [
            "本文来源：江州日报，转载请注明出处，未经授权不得转载、摘编或以其他方式使用上述作品，违者必究。",
            "凡本网注明来源为其他媒体的作品，均转载自其它媒体，目的在于传递更多信息，并不代表本网赞同其观点。",
        ],
        [
            "声明：本文仅代表作者个人观点，与本网无关。其原创性以及文中陈述文字和内容未经本站证实，请读者仅作参考。",
            "如有侵权或者内容有误，请及时联系我们，我们将在第一时间进行核实并处理，投诉邮箱：service@example.com。",
        ],
        [
            "免责声明：本站所刊载的信息仅供参考，不构成任何投资建议，投资者据此操作风险自担。",
            "关注江州网官方微信公众号，每天推送本地最新资讯和便民服务信息，欢迎扫描下方二维码关注我们。",
        ],
        [
            "免责声明：文章内容仅供参考，不构成投资建议，投资者据此操作，风险自担。",
            "市场有风险，投资需谨慎。以上内容仅代表作者个人观点，与平台立场无关，请读者自行判断并核实相关信息。",
        ],
        [
            "未经许可，不得转载或镜像本站内容。",
            "新闻热线：0571-12345678，欢迎广大读者踊跃爆料，一经采用即付稿酬，重大新闻线索还将给予额外奖励。",
        ],
    ],
    ids=[
        "reprint-then-other-media",
        "statement-then-contact",
        "disclaimer-then-follow-us",
        "disclaimer-then-risk",
        "reprint-then-hotline",
    ],
)
@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_notice_of_two_paragraphs_in_a_chinese_storys_block_ends_it(algo: str, notice: list[str]) -> None:
    """A site's notice often sits in the story's block and goes on past its first line (other media's
    works, how to reach the site, its social account, a word on risk): the story still ends at it, where a
    story that quotes a statement goes on with its own paragraphs."""
    story = [
        "江州市今年将投入两亿元改造老旧小区，涉及居民一万二千户，主要包括加装电梯和更换管网。",
        "市住建局表示，改造方案将逐个小区征求居民意见，超过三分之二的居民同意后才能开工。",
        "去年完成改造的三十个小区中，居民满意度超过九成，加装的电梯已经全部投入使用。",
        "市住建局有关负责人表示，明年还将继续推进改造工作，争取三年内完成全部老旧小区的改造任务。",
    ]
    body = "".join(f"<p>{text}</p>" for text in [*story, *notice])
    html = f"<html><head><title>老旧小区改造_江州网</title></head><body><div>{body}</div></body></html>"
    assert extract(html, algo=algo).paragraphs == story


@pytest.mark.parametrize("heading", ["三、郑重声明", "（三）公司免责声明"])
@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_numbered_section_of_a_chinese_story_that_ends_on_a_statement_is_its_text(
    algo: str, heading: str
) -> None:
    """A heading numbered itself ("三、", "（三）") is a section of the story's outline, its numbered points
    the story's prose, even as the story's last section: a site's notice heading is not numbered."""
    story = [
        "一、传闻从何而来",
        "近日，网上流传一则消息，称本市一家知名家电企业资金链断裂，即将申请破产重组，引发消费者担忧。",
        "二、记者实地探访",
        "记者昨日来到该企业位于城东的生产基地，看到各条生产线正常运转，工人们正在忙着赶制出口订单。",
        "该企业有关负责人告诉记者，今年以来企业订单饱满，一季度销售收入同比增长百分之十二，经营稳定。",
        heading,
        "1. 公司目前生产经营一切正常，各项业务有序开展，网传资金链断裂、申请破产重组的消息纯属谣言。",
        "2. 公司已就此事向公安机关报案，将依法追究造谣者和恶意传播者的法律责任，维护公司合法权益。",
    ]
    body = "".join(f"<p>{text}</p>" for text in story)
    title = "家电企业回应破产传闻_江州日报网"
    html = f"<html><head><title>{title}</title></head><body><div>{body}</div></body></html>"
    assert extract(html, algo=algo).paragraphs[-3:] == story[-3:]


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_an_h1_sub_heading_of_a_chinese_story_like_its_title_is_kept(algo: str) -> None:
    """Only the headline is the title: a later ``<h1>`` sub-heading that shares the title's words
    ("早睡早起身体好在哪里？" under "春季养生：早睡早起身体好") is the story's."""
    title = "春季养生：早睡早起身体好"
    paragraphs = [
        "春天气温回升，人体新陈代谢加快，这时候调整作息，比一年中任何时候都更容易见效。",
        "专家建议，晚上十一点前入睡，早上六点半左右起床，午饭后可以小睡二十分钟左右。",
        "饮食上宜清淡，多吃新鲜蔬菜，少吃油炸和辛辣食物，每天喝足一千五百毫升的水。",
    ]
    body = (
        f"<h1>{title}</h1><p>{paragraphs[0]}</p><h1>早睡早起身体好在哪里？</h1><p>{paragraphs[1]}</p>"
        f"<h1>饮食要注意什么</h1><p>{paragraphs[2]}</p>"
    )
    html = f"<html><head><title>{title}_健康频道</title></head><body><div>{body}</div></body></html>"
    assert extract(html, algo=algo).paragraphs == [
        paragraphs[0],
        "早睡早起身体好在哪里？",
        paragraphs[1],
        "饮食要注意什么",
        paragraphs[2],
    ]


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_chinese_photo_page_with_a_headline_and_captions_alone_is_read(algo: str) -> None:
    """A Chinese gallery page holds no article line but its ``<h1>`` headline and captions: read, no text
    of its own (the headline and captions are no article text), where it raised IndexError."""
    caption = "春节期间，江州市民在人民公园观看灯会，各式各样的花灯吸引了大批游客驻足拍照留念。"
    figures = "".join(
        f'<figure><img src="/{n}.jpg"><figcaption>{caption.replace("春节", day)}</figcaption></figure>'
        for n, day in enumerate(["春节", "元宵"])
    )
    html = (
        "<html><head><title>组图：江州人民公园灯会开幕_江州网</title></head><body><div>"
        f"<h1>组图：江州人民公园灯会开幕，数十万市民游客赏灯过大年</h1>{figures}</div></body></html>"
    )
    assert extract(html, algo=algo).paragraphs == []


@pytest.mark.parametrize("seconds", ["", ":05"], ids=["minutes", "seconds"])
@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_the_stamps_of_a_chinese_question_and_its_answers_are_datelines(algo: str, seconds: str) -> None:
    """A Q&A page stamps the question and each answer ("提问于 2020-01-01 10:00", "回答于 …"): datelines,
    not text, and the answers stay (they are no thread's later posts)."""
    question = "我家孩子今年五岁，最近晚上总是咳嗽，白天却好好的，吃了几天止咳药也不见好，请问这是什么原因？"
    answers = [
        "夜间咳嗽而白天正常，常见的原因有过敏性咳嗽、鼻后滴漏和胃食管反流，建议先到医院儿科做个检查。",
        "平时要注意保持室内空气湿润，睡前不要吃东西，被褥要经常晾晒，避免接触尘螨等过敏原。",
        "如果咳嗽超过四周，还伴有喘息，要考虑咳嗽变异性哮喘的可能，需要在医生指导下规范治疗。",
    ]
    lines = [
        question,
        f"提问于 2020-01-01 10:00{seconds}",
        answers[0],
        answers[1],
        f"回答于 2020-01-01 12:30{seconds}",
        answers[2],
        f"回答于 2020-01-02 08:15{seconds}",
    ]
    body = "".join(f"<p>{text}</p>" for text in lines)
    title = "孩子晚上咳嗽白天不咳是怎么回事_健康问答"
    html = f"<html><head><title>{title}</title></head><body><div>{body}</div></body></html>"
    assert extract(html, algo=algo).paragraphs == [question, *answers]


@pytest.mark.parametrize(
    "end",
    [
        '<p>{last}</p><p>上一篇：<a href="/1">入门教程（一）</a> 下一篇：<a href="/3">入门教程（三）</a></p>',
        '<div><p>{last}</p><p>上一篇：<a href="/1">入门教程（一）</a></p>'
        '<p>下一篇：<a href="/3">入门教程（三）</a></p></div>',
        '<p>{last}<br>上一篇：<a href="/1">入门教程（一）</a> 下一篇：<a href="/3">入门教程（三）</a></p>',
    ],
    ids=["after-the-last-paragraph", "in-the-last-paragraphs-block", "in-the-last-paragraph"],
)
def test_a_chinese_storys_page_bar_in_the_block_of_its_last_paragraph_is_not_brought_back(end: str) -> None:
    """A "上一篇/下一篇" bar after the story's last article line, in its block, is never text: qRead leaves it
    out as a short line after the text, and the learned step does not pull it back."""
    story = TUTORIAL_STORY
    body = "".join(f"<p>{text}</p>" for text in story[:-1]) + end.format(last=story[-1])
    title = "Python入门教程（二）_小舟的技术博客"
    html = f"<html><head><title>{title}</title></head><body><div>{body}</div></body></html>"
    assert extract(html, algo="qread-learned").paragraphs == story


_LIBRARY_STORY = [
    "The library on Mill Street will open on Sundays from next month, the council said on Tuesday evening.",
    "Opening on Sundays was the most common request in last year's survey of more than two thousand readers.",
    "The extra hours will be paid for by closing the branch an hour earlier on Monday and Tuesday evenings.",
    "Volunteers from the friends of the library will run the reading groups for children on Sunday mornings.",
    "The council will look again at the hours next spring, once it knows how many readers come on Sundays.",
]


def _library_page(body: str, after: str = "") -> str:
    return (
        "<html><head><title>Library opens on Sundays | Valley Post</title></head><body>"
        '<div class="top"><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a></div>'
        f'<div class="page"><h1>Library opens on Sundays</h1>{body}{after}</div>'
        '<div class="bottom"><a href="/about">About us</a> <a href="/contact">Contact</a></div>'
        "</body></html>"
    )


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_single_br_inside_a_paragraph_joins_its_lines(algo: str) -> None:
    """A paragraph is one line of text: a single ``<br>`` inside a ``<p>`` is a space between its words,
    where two in a row or one before a numbered item ("2. ") still end a line."""
    first, second = _LIBRARY_STORY[1].split(" of ", 1)
    paragraphs = [
        f"<p>{_LIBRARY_STORY[0]}</p>",
        f"<p>{first}<br>of {second}</p>",
        f"<p>{_LIBRARY_STORY[2]}<br><br>{_LIBRARY_STORY[3]}</p>",
        "<p>The hours from next month, as the council set them out on Tuesday evening:<br>"
        "1. Sundays from ten in the morning until four in the afternoon, all year round.<br>"
        "2. Mondays and Tuesdays from nine in the morning until seven in the evening.</p>",
        f"<p>{_LIBRARY_STORY[4]}</p>",
    ]
    assert extract(_library_page("".join(paragraphs)), algo=algo).paragraphs == [
        *_LIBRARY_STORY[:4],
        "The hours from next month, as the council set them out on Tuesday evening:",
        "1. Sundays from ten in the morning until four in the afternoon, all year round.",
        "2. Mondays and Tuesdays from nine in the morning until seven in the evening.",
        _LIBRARY_STORY[4],
    ]


@pytest.mark.parametrize("flag", ["has-sidebar", "with-sidebar", "no-comments", "sidebar-enabled--false"])
@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_class_that_flags_a_layout_does_not_hide_the_story_it_wraps(algo: str, flag: str) -> None:
    """A class such as ``has-sidebar`` or ``no-comments`` says what the layout around the story has or
    shows, not that the block is a sidebar or the comments: the story's paragraphs inside it are kept."""
    first = "".join(f"<p>{text}</p>" for text in _LIBRARY_STORY[:2])
    rest = "".join(f"<p>{text}</p>" for text in _LIBRARY_STORY[2:])
    body = f'<div class="intro">{first}</div><div class="story-rest {flag}">{rest}</div>'
    assert extract(_library_page(body), algo=algo).paragraphs == _LIBRARY_STORY


@pytest.mark.parametrize("algo", ["qread", "qread-learned"])
def test_a_copyright_notice_under_the_story_is_not_its_text(algo: str) -> None:
    """A line with "©" and a year is the site's notice, even as long as a paragraph of the story."""
    notice = (
        "<p>© 2026 The Valley Post and its licensors. All rights reserved. No part of this story may be"
        " copied or sent on without the written permission of the publisher.</p>"
    )
    body = "".join(f"<p>{text}</p>" for text in _LIBRARY_STORY) + notice
    html = _library_page(f'<div class="story">{body}</div>')
    result = extract(html, algo=algo)
    assert result.paragraphs == _LIBRARY_STORY
