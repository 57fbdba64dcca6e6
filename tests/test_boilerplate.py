"""The learned boilerplate step (``algo="qread-learned"``) on pages built here: what it must drop, what it
must keep, and that its fast scoring is the model the training script fits."""

from __future__ import annotations

import random

import pytest

from extractors import boilerplate, extract
from extractors.qread import Reading, read

_WORDS = (
    "river council budget transit station harbour school teacher funding plan study weather storm energy "
    "price market farmer village bridge road museum library hospital nurse patient doctor ferry island "
    "coast forest wildlife park summer winter vote mayor district report survey engineer project housing "
    "rent tenant landlord water supply pipe"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(9, 14)) for _ in range(4))


RNG = random.Random(7)
BODY = [_paragraph(RNG) for _ in range(6)]
TEASERS = [(_sentence(RNG, 7), f"{_sentence(RNG, 18)} {_sentence(RNG, 12)}") for _ in range(5)]
# A related-story feed after the article, in blocks whose class and id say nothing.
FEED = '<div class="more"><h3>Read these next</h3>{}</div>'.format(
    "".join(
        f'<div class="item"><h4><a href="/s{i}">{head}</a></h4><p>{summary}</p></div>'
        for i, (head, summary) in enumerate(TEASERS)
    )
)
CALL_TO_ACTION = (
    '<div class="box"><h3>Get the morning briefing</h3><p>Sign up for our free newsletter and get the '
    "stories that matter about the harbour, the council and the coast in your inbox every morning.</p>"
    "<p>Enter your email address</p></div>"
)


def _page(after: str) -> str:
    paragraphs = "".join(f"<p>{text}</p>" for text in BODY)
    return (
        "<html><head><title>Council approves the harbour bridge plan</title></head><body>"
        '<div class="top"><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a></div>'
        '<div class="wrap"><div class="main"><h1>Council approves the harbour bridge plan</h1>'
        f'<div class="txt">{paragraphs}</div>{after}</div></div>'
        '<div class="bottom"><a href="/about">About us</a> <a href="/contact">Contact</a></div>'
        "</body></html>"
    )


def test_a_related_story_feed_after_the_article_is_dropped() -> None:
    html = _page(FEED)
    plain = extract(html, algo="qread").text
    learned = extract(html, algo="qread-learned")
    assert TEASERS[0][1] in plain  # qRead alone keeps the feed: the step is what drops it
    assert learned.text == "\n\n".join(BODY)
    assert learned.algorithm == "qread-learned"
    assert any("the learned boilerplate step" in note for note in learned.notes)


def test_a_newsletter_call_to_action_after_the_article_is_dropped() -> None:
    html = _page(CALL_TO_ACTION)
    assert "Sign up for our free newsletter" in extract(html, algo="qread").text
    assert extract(html, algo="qread-learned").text == "\n\n".join(BODY)


def test_an_article_alone_is_kept_whole() -> None:
    assert extract(_page(""), algo="qread-learned").text == "\n\n".join(BODY)


# A news page in plain English for the failure kinds of issue 14: each kind is boilerplate that qRead alone
# keeps, put before or after the story in blocks whose class and id say nothing.
STORY = [
    "The city council voted on Tuesday to approve a new bridge across the harbour, ending a debate that "
    "has divided residents for more than a decade.",
    "The bridge, which will carry buses, cyclists and pedestrians but not private cars, is expected to "
    "cost about 240 million dollars and to open in 2029.",
    "Supporters say it will cut the journey from the eastern suburbs to the city centre by twenty minutes "
    "and take pressure off the ferry service, which has struggled with rising demand since the pandemic.",
    "Opponents, led by a group of shop owners on the waterfront, argue that the construction will block "
    "access to their businesses for at least three years and that the money would be better spent on the "
    "existing tram network.",
    "The mayor, speaking after the vote, said the council had listened to both sides and had added a fund "
    "of five million dollars to support businesses affected by the works.",
    "Engineers will begin surveying the seabed next month, and the first contracts are due to be signed "
    "in the spring, according to a report presented to the council.",
    "A final design will be published for public comment before the end of the year, and residents will "
    "be able to see models of the bridge at the central library from January.",
]
AUTHOR_BIO = (
    '<div class="box"><div class="pic"><img src="/a.jpg" alt=""></div><div class="txt2"><h4>Maria Lopez</h4>'
    "<p>Maria Lopez is a senior reporter at The Harbour Times, where she covers city hall, transport and "
    "housing. Before joining the paper in 2018 she worked for public radio in Portland. She lives in the "
    "eastern suburbs with her two children.</p>"
    '<p><a href="/authors/maria-lopez">More stories by Maria Lopez</a></p></div></div>'
)
REVIEWER_BIO = (
    '<div class="box"><p>Medically reviewed by Dr. James Chen, MD</p><p>Dr. James Chen is a '
    "board-certified physician in internal medicine with fifteen years of experience. He has reviewed "
    "health content for our readers since 2020 and teaches at the state university medical school.</p></div>"
)
COMMENTS = (
    '<div class="box2"><h3>3 Responses</h3><div class="c"><p><b>Peter Walsh</b></p>'
    "<p>March 5, 2024 at 10:41 am</p><p>About time. I have been stuck on that ferry every morning for years "
    'and this will finally give us another way into town.</p><p><a href="#r">Reply</a></p></div>'
    '<div class="c"><p><b>Anne K.</b></p><p>March 5, 2024 at 11:02 am</p><p>What about the shops on the '
    "waterfront? Three years of building works will close half of them, and five million dollars will not "
    'go far.</p><p><a href="#r">Reply</a></p></div><h3>Leave a Reply</h3><p>Your email address will not '
    "be published. Required fields are marked *</p></div>"
)
POLL_AND_DISCLAIMER = (
    '<div class="box"><h3>Poll</h3><p>Do you support the new harbour bridge?</p><p>Yes, it is long '
    "overdue</p><p>No, the money should go to the trams</p><p>Not sure yet</p><p>View results</p></div>"
    '<div class="box"><p>Disclaimer: The views expressed in reader comments and polls do not reflect those '
    "of The Harbour Times or its staff. Results are not scientific.</p></div>"
)
NEWSLETTER_FORM = (
    '<form class="f"><h3>Never miss a story</h3><p>Get the best of The Harbour Times delivered to your '
    "inbox every weekday morning. Free, and you can unsubscribe at any time.</p>"
    '<input type="email"><button>Subscribe</button></form>'
)
HEADLINE_LIST = '<div class="list"><h3>Latest news</h3>{}</div>'.format(
    "".join(
        f'<div class="it"><h4><a href="/n{i}">{head}</a></h4><p>{summary}</p></div>'
        for i, (head, summary) in enumerate(
            [
                (
                    "Storm warning issued for the coast",
                    "Forecasters expect winds of up to 100 kilometres an hour along the coast on Thursday "
                    "night, with heavy rain inland.",
                ),
                (
                    "School budget cuts spark protest",
                    "Hundreds of parents and teachers gathered outside the education office on Monday to "
                    "protest against planned cuts to school budgets.",
                ),
                (
                    "New library opens in the north",
                    "The long-awaited library in the northern district opened its doors on Saturday with a "
                    "reading festival for children and families.",
                ),
            ]
        )
    )
)
TABLE_OF_CONTENTS = (
    '<div class="box"><p>Contents</p><ol><li><a href="#a">The vote</a></li><li><a href="#b">The cost</a>'
    '</li><li><a href="#c">What happens next</a></li></ol></div>'
)
TAG_CLOUD = (
    '<div class="box"><p>Topics: <a href="/t/harbour">harbour</a>, <a href="/t/council">city council</a>, '
    '<a href="/t/transport">transport</a>, <a href="/t/bridge">bridges</a></p></div>'
)
FAQ = (
    '<div class="sec"><h2>Frequently asked questions</h2><h3>When will the bridge open?</h3><p>The council '
    "expects the bridge to open to buses, cyclists and pedestrians in 2029, if construction starts on time "
    "next year.</p><h3>Can cars use the bridge?</h3><p>No. Private cars will not be allowed on the bridge, "
    "which is reserved for public transport, bicycles and people on foot.</p><h3>How much will it cost?</h3>"
    "<p>The current estimate is about 240 million dollars, including the five million dollar fund for "
    "affected businesses.</p></div>"
)


def _news_page(before: str = "", after: str = "") -> str:
    paragraphs = "".join(f"<p>{text}</p>" for text in STORY)
    return (
        "<html><head><title>Council approves harbour bridge | The Harbour Times</title></head><body>"
        '<div class="top"><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a> '
        '<a href="/opinion">Opinion</a></div>'
        f'<div class="wrap"><div class="main">{before}<h1>Council approves harbour bridge</h1>'
        f'<div class="txt">{paragraphs}</div>{after}</div></div>'
        '<div class="bottom"><a href="/about">About us</a> <a href="/contact">Contact</a> '
        '<a href="/privacy">Privacy</a></div></body></html>'
    )


@pytest.mark.parametrize(
    ("before", "after", "junk"),
    [
        pytest.param("", AUTHOR_BIO, "senior reporter", id="author bio"),
        pytest.param("", REVIEWER_BIO, "board-certified physician", id="reviewer bio"),
        pytest.param("", COMMENTS, "stuck on that ferry", id="reader comments"),
        pytest.param("", POLL_AND_DISCLAIMER, "do not reflect those", id="poll and disclaimer"),
        pytest.param("", NEWSLETTER_FORM, "delivered to your inbox", id="newsletter form"),
        pytest.param(HEADLINE_LIST, "", "Hundreds of parents", id="headline list before the story"),
    ],
)
def test_boilerplate_qread_keeps_is_dropped_by_the_default_extractor(
    before: str, after: str, junk: str
) -> None:
    html = _news_page(before, after)
    assert junk in extract(html, algo="qread").text  # qRead alone keeps it: the step is what drops it
    result = extract(html)
    assert result.algorithm == "qread-learned"
    assert result.paragraphs == STORY


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(TABLE_OF_CONTENTS, "", id="table of contents"),
        pytest.param("", TAG_CLOUD, id="tag cloud"),
    ],
)
def test_link_boilerplate_stays_out(before: str, after: str) -> None:
    assert extract(_news_page(before, after)).paragraphs == STORY


def test_body_lines_qread_cuts_at_the_edges_are_pulled_in() -> None:
    """qRead leaves out short lines before the first and after the last article line (datelines, share
    bars); the step brings back those that are the story's: its first sub-heading and a sign-off."""
    heading, sign_off = "What the council decided", "For The Harbour Times, I'm Maria Lopez in Riverside."
    html = _news_page().replace('<div class="txt">', f'<div class="txt"><h2>{heading}</h2>', 1)
    html = html.replace(f"<p>{STORY[-1]}</p>", f"<p>{STORY[-1]}</p><p>{sign_off}</p>", 1)
    assert extract(html, algo="qread").paragraphs == STORY
    assert extract(html).paragraphs == [heading, *STORY, sign_off]


FLOOD = [
    "The river rose faster than anyone in the valley could remember, and by midnight the water had reached "
    "the steps of the town hall.",
    "Volunteers filled sandbags in the car park of the school until the power failed at about two in the "
    "morning.",
    "By dawn the main road was closed and the bridge at the mill had been shut by engineers worried about "
    "debris.",
    "The mayor said nobody had been hurt, but that forty homes near the river had water in their ground "
    "floors.",
    "Forecasters expect the river to fall slowly over the weekend, though more rain is due on Monday.",
    "The council has opened the sports hall for families who cannot return home, with meals served from "
    "noon.",
]


def test_paragraphs_each_in_its_own_wrapper_are_all_kept() -> None:
    """Missed body: every paragraph sits in its own grid row (``div.blk > div.row > div.col``), so no block
    but the content wrapper holds most of the story, and a long subtitle sits in the header beside it."""
    subtitle = (
        "Forty homes flooded and the main road closed after a night of rain that the valley's oldest "
        "residents say was the worst they had seen in their lives, with more rain forecast for Monday and "
        "the council warning people to stay away from the river banks until the water falls."
    )
    rows = "".join(
        f'<div class="blk"><div class="row"><div class="col"><span>{text}</span></div></div></div>'
        for text in FLOOD
    )
    html = (
        "<html><head><title>Flood closes valley road | Valley News</title></head><body>"
        '<div class="top"><a href="/">Home</a> <a href="/news">News</a> <a href="/sport">Sport</a></div>'
        f'<div class="hero"><h1>Flood closes valley road</h1><h2 class="sub">{subtitle}</h2>'
        "<p>By Ann Lee, 4 March 2025</p></div>"
        f'<div class="content">{rows}</div>'
        '<div class="bottom"><a href="/about">About</a> <a href="/contact">Contact</a></div></body></html>'
    )
    assert extract(html).paragraphs[-len(FLOOD) :] == FLOOD


@pytest.mark.xfail(
    strict=True,
    reason="not handled: the training pages hold their FAQ in the truth on about a third of the pages that "
    "have one, so the model keeps a FAQ after the story (docs/extraction.md)",
)
def test_a_faq_after_the_story_is_dropped() -> None:
    assert extract(_news_page("", FAQ)).paragraphs == STORY


def _reading(html: str) -> Reading:
    reading = read(html)
    assert isinstance(reading, Reading)
    return reading


@pytest.mark.parametrize("after", [FEED, CALL_TO_ACTION, ""])
def test_the_fast_scores_are_the_fitted_model_s(after: str) -> None:
    """``line_logits`` (run time, block features weighed once per block) gives what the training script's
    features give through ``Model.logit``."""
    model = boilerplate.load_model()
    assert model is not None and len(model.weights) > 1000
    reading = _reading(_page(after))
    chosen = boilerplate.candidates(reading)
    expected = [model.logit(found) for found in boilerplate.line_features(reading, chosen)]
    assert boilerplate.line_logits(reading, chosen, model) == pytest.approx(expected, abs=1e-9)


def _deepest_block_with_half_the_words(reading: Reading) -> int:
    """``_body_block`` by its definition: every block's kept words counted up its whole ancestry."""
    parents = reading.walk.parents
    counts: dict[int, int] = {}
    for i in reading.kept:
        line = reading.lines[i]
        block = parents[line.owner] if line.owner > 0 else 0
        while block >= 0:
            counts[block] = counts.get(block, 0) + line.words
            block = parents[block]
    total = sum(reading.lines[i].words for i in reading.kept)
    return max(block for block, words in counts.items() if 2 * words >= total)


@pytest.mark.parametrize("layout", ["paragraphs", "grid rows", "nested sections"])
def test_the_body_block_is_the_deepest_with_half_the_kept_words(layout: str) -> None:
    if layout == "paragraphs":
        html = _page(FEED)
    elif layout == "grid rows":
        rows = "".join(f'<div class="row"><div class="col"><p>{text}</p></div></div>' for text in BODY)
        html = f'<html><body><h1>Harbour bridge</h1><div class="grid">{rows}</div>{FEED}</body></html>'
    else:
        sections = "".join(
            f"<section><div><h2>Part {n}</h2><p>{BODY[n]}</p><p>{BODY[n + 3]}</p></div></section>"
            for n in range(3)
        )
        html = f"<html><body><main><article>{sections}</article></main>{CALL_TO_ACTION}</body></html>"
    reading = _reading(html)
    body, _ = boilerplate._body_block(reading)
    assert body == _deepest_block_with_half_the_words(reading)
    assert body > 0, "the body's block is below the root on each of these pages"


def test_the_choice_is_the_best_run_of_lines() -> None:
    reading = _reading(_page(FEED))
    chosen = boilerplate.candidates(reading)
    middle = chosen[2:-3]
    logits = [1.0 if index in middle else -1.0 for index in chosen]
    assert boilerplate.choose(reading, chosen, logits) == set(middle)


def test_without_a_run_above_zero_qread_s_choice_stays() -> None:
    reading = _reading(_page(FEED))
    assert boilerplate.refine(reading, boilerplate.Model(-5.0, {})) == reading.kept


# A Chinese news story: five long paragraphs.
ZH_STORY = [
    "市政府今天宣布了新的港口大桥计划，预计明年开工，将改善城市交通和居民出行。",
    "大桥全长三公里，设有公交专用道和自行车道，不允许私家车通行，总投资约十五亿元。",
    "支持者认为，大桥将使东部郊区到市中心的通勤时间缩短二十分钟，并减轻轮渡的压力。",
    "反对者则担心施工期间海滨商铺的生意会受到影响，市政府为此设立了五千万元的补偿基金。",
    "工程师将于下月开始勘测海床，首批合同预计在明年春天签署，最终设计将公开征求意见。",
]
ZH_PARAGRAPHS = [f"{sentence}{ZH_STORY[(i + 1) % 5]}" for i, sentence in enumerate(ZH_STORY)]
# Forum replies under the story, in the same table: short ones, then a long one that makes qRead keep them.
# Their footers give the day, not the time: replies under stamps of the time are posts that qRead leaves out
# itself (tests/test_qread.py, test_a_chinese_page_of_stamped_posts_gives_the_first_post).
ZH_REPLIES = "".join(
    f'<tr><td class="p2"><a href="/u{i}">← 返回</a></td></tr><tr><td class="p4">{text}</td></tr>'
    f"<tr><td>〓 发布于 2024/03/1{i} by 网友{i} 〓</td></tr>"
    for i, text in enumerate(
        [
            "顶一下",
            "楼主说得好",
            "支持！",
            "无聊",
            "我赞成",
            "悲哀啊",
            "我家就住在海边，每天坐轮渡上班，真心希望大桥能早点建好，省下不少时间。",
        ]
    )
)


def _zh_page(after: str) -> str:
    paragraphs = "".join(f"<p>{text}</p>" for text in ZH_PARAGRAPHS)
    return (
        "<html><head><title>港口大桥计划公布</title></head><body>"
        f'<table><tr><td class="p4">{paragraphs}</td></tr>{after}</table></body></html>'
    )


def test_short_replies_qread_keeps_after_a_chinese_story_are_dropped() -> None:
    html = _zh_page(ZH_REPLIES)
    assert "楼主说得好" in extract(html, algo="qread").text  # qRead alone keeps them: the step drops them
    assert boilerplate.applies(_reading(html))
    assert extract(html).paragraphs == ZH_PARAGRAPHS


def test_a_chinese_page_of_long_lines_keeps_qread_s_choice() -> None:
    """The model learned from English pages: on a CJK page of long lines it does not run (on this page it
    would drop the last related item)."""
    sentence = "市政府今天宣布了新的港口大桥计划，预计明年开工，将改善城市交通和居民出行。"
    teaser = "岛上的渡轮服务将在夏季增加班次，方便游客。"
    paragraphs = "".join(f"<p>{sentence * 3}{i}</p>" for i in range(5))
    feed = "".join(
        f'<div class="item"><h4><a href="/s{i}">相关新闻{i}</a></h4><p>{teaser * 2}</p></div>'
        for i in range(5)
    )
    html = f"<html><body><div>{paragraphs}</div><div>{feed}</div></body></html>"
    reading = _reading(html)
    assert not boilerplate.applies(reading)
    assert boilerplate.refine(reading) != reading.kept
    learned = extract(html, algo="qread-learned")
    assert learned.text == extract(html, algo="qread").text
    assert any("the learned boilerplate step did not run" in note for note in learned.notes)


def test_a_line_of_chinese_text_has_no_word_features_and_a_line_of_figures_has_the_no_word_one() -> None:
    """Words the model never saw weigh nothing; ``word:-`` says a line has no words (figures, symbols),
    which a line of Chinese text does."""
    html = _zh_page("<tr><td>2024-03-15 22:36</td></tr><tr><td>Harbour bridge 港口大桥</td></tr>")
    reading = _reading(html)
    chosen = boilerplate.candidates(reading)
    texts = [reading.lines[i].text for i in chosen]
    features = dict(zip(texts, boilerplate.line_features(reading, chosen), strict=True))
    assert not [name for name in features[ZH_PARAGRAPHS[0]] if name.startswith("word:")]
    assert "word:-" in features["2024-03-15 22:36"]
    assert {"word:harbour", "word:bridge"} <= set(features["Harbour bridge 港口大桥"])


@pytest.mark.parametrize(
    "text",
    [
        "The council approved the harbour bridge plan on Tuesday after a long debate about the costs.",
        "Councillors approved extraordinarily large sums for the harbour bridge plan on Tuesday night.",
        "A councillorshipwrecked harbourmasterships and the bridge plan were debated for hours on end.",
        "Tue 12:30 | 4,500 | a b c | Council approves the harbour bridge plan after a debate at night",
        "Bridge plan: council approves it 港口大桥 after a long debate about what the bridge will cost all",
        "2024-03-15 22:36 · 12 · 34 · 56 · 78 · 90 · 12 · 34 · 56 · 78 · 90 · 12 · 34 · 56 · 78 · 90",
        "港口大桥计划获得议会批准，议会在周二经过长时间辩论后批准了该计划，预计明年开始动工建设新的港口大桥。",
        "İstanbul ΣΑΣ council approves the harbour bridge plan after a long debate about what it costs",
    ],
)
def test_a_long_line_s_first_words_read_from_its_start_are_those_of_its_lead(text: str) -> None:
    """The first words of a long line, read from its first characters (words crossing where that reading
    ends, words longer than the model's, no words), are those of its first ``_LEAD_CHARS``."""
    assert boilerplate._lead_words(text) == boilerplate._words(
        text[: boilerplate._LEAD_CHARS], boilerplate._LEAD_WORDS
    )


def test_without_a_model_file_qread_s_choice_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("extractors.boilerplate.resources.files", lambda _package: _Missing())
    boilerplate.load_model.cache_clear()
    try:
        assert boilerplate.load_model() is None
        reading = _reading(_page(FEED))
        assert boilerplate.refine(reading) == reading.kept
    finally:
        boilerplate.load_model.cache_clear()


class _Missing:
    """A package folder without the model file."""

    def joinpath(self, *_parts: str) -> _Missing:
        return self

    def read_text(self, encoding: str) -> str:
        raise FileNotFoundError("data/boilerplate.json")
