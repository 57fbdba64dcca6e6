"""The summary engine: sentence splitting, which sentences a summary keeps, and in which order."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from extractors.summary import sentences_in, split_sentences, summaries, summarize

CORPUS = Path(
    os.environ.get("EXTRACTION_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "extraction-dev")
)
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.json").is_file(),
    reason=f"the development set is not at {CORPUS} (set EXTRACTION_CORPUS to its folder)",
)

TITLE = "Harbour bridge reopens after six weeks of repairs"
LEAD = (
    "The Riverside harbour bridge reopened to traffic on Monday after six weeks of repairs that cost "
    "the city 4.2 million dollars, Mayor Ann Clarke said."
)
BOILERPLATE = [
    "Photo: Riverside Daily/J. Smith",
    "Advertisement",
    "Read more: How the city plans its roads budget",
    "Subscribe to our newsletter for the latest bridge news.",
    "Copyright 2026 Riverside Daily. All rights reserved.",
    "2026-03-02 09:15",
]
NEWS = f"""{BOILERPLATE[0]}

{LEAD}

Engineers replaced the worn expansion joints of the bridge and resurfaced the whole deck. The repairs were \
planned for eight weeks, but dry weather let the crews finish the bridge early. Ferry traffic fell back to \
its usual level within hours of the reopening.

{BOILERPLATE[1]}

Dr. Paul Reyes, the city engineer, said the bridge would need no major repairs for another 20 years. \
Cyclists will get a separate lane on the bridge next spring. It rained.

{BOILERPLATE[2]}

{BOILERPLATE[3]}

{BOILERPLATE[4]}

{BOILERPLATE[5]}
"""

ZH_TITLE = "长江大桥检修完成恢复通车"
ZH_LEAD = "经过为期三个月的全面检修，长江大桥于本周一上午恢复通车，市民出行重新变得便捷。"
ZH_NEWS = f"""本报讯（记者 王明）

{ZH_LEAD}

据介绍，此次检修更换了桥面铺装层和伸缩缝，并对全桥的照明系统进行了升级改造。交通部门提醒，大桥通车初期车流量较大，\
请驾驶员注意减速慢行，服从现场交警指挥！“我们会继续监测大桥的运行状况。”一位负责人说。

来源：江城日报

责任编辑：李华
"""


def sentence_count(summary: str) -> int:
    return len(split_sentences(summary))


def test_english_sentences_split_on_end_punctuation_before_a_capital() -> None:
    assert split_sentences("It rained. The match went on! Did it stop? 42 people stayed.") == [
        "It rained.",
        "The match went on!",
        "Did it stop?",
        "42 people stayed.",
    ]


def test_english_abbreviations_initials_and_decimals_do_not_end_a_sentence() -> None:
    text = (
        "Mr. Lee and Mrs. Ng met Dr. Ray, Prof. Kim and St. John at 10 Main St. on Jan. 5 with J. Smith. "
        "Prices rose 3.5 per cent in the U.S. Many firms, e.g. Acme Inc. and Bolt Ltd. Co. staff, i.e. "
        "No. 3 vs. No. 4 etc. Their bosses agreed. The U.K. economy grew 0.4 per cent."
    )
    assert split_sentences(text) == [
        "Mr. Lee and Mrs. Ng met Dr. Ray, Prof. Kim and St. John at 10 Main St. on Jan. 5 with J. Smith.",
        "Prices rose 3.5 per cent in the U.S. Many firms, e.g. Acme Inc. and Bolt Ltd. Co. staff, i.e. "
        "No. 3 vs. No. 4 etc. Their bosses agreed.",
        "The U.K. economy grew 0.4 per cent.",
    ]


def test_list_numbers_are_not_sentences() -> None:
    assert split_sentences("1. Close the road. 2. Repair the joints. IV. Reopen it.") == [
        "1. Close the road.",
        "2. Repair the joints.",
        "IV. Reopen it.",
    ]


def test_english_quotes_ellipses_and_lower_case_continuations() -> None:
    text = (
        'He said "stop." Then he left. "Why?" she asked. It was... strange. "Leave now!" "Fine." '
        "He waited (for an hour.) The end came at 5 p.m. on Monday."
    )
    assert split_sentences(text) == [
        'He said "stop."',
        "Then he left.",
        '"Why?" she asked.',
        "It was... strange.",
        '"Leave now!"',
        '"Fine."',
        "He waited (for an hour.)",
        "The end came at 5 p.m. on Monday.",
    ]


def test_chinese_sentences_keep_their_closing_quotes_and_brackets() -> None:
    text = "他说：“我们会赢。”然后离开了！真的吗？是的；当然……好吧。（记者 张三）"
    assert split_sentences(text) == [
        "他说：“我们会赢。”",
        "然后离开了！",
        "真的吗？",
        "是的；",
        "当然……",
        "好吧。",
        "（记者 张三）",
    ]
    assert split_sentences("「你好。」她笑了。『再见！』") == ["「你好。」", "她笑了。", "『再见！』"]


def test_a_chinese_quote_and_the_words_that_say_who_spoke_it_are_one_sentence() -> None:
    # “…。”X说。 is one sentence in Chinese: split after the quote, the summary gave "X说。" alone.
    text = "“这是我们盼了多年的好事。”在西河生活了几十年的老陈感慨地说。记者了解到，项目进展顺利。"
    assert split_sentences(text) == [
        "“这是我们盼了多年的好事。”在西河生活了几十年的老陈感慨地说。",
        "记者了解到，项目进展顺利。",
    ]
    # After a quote, a sentence that does not say who spoke stays a sentence of its own, even when a word
    # of it ends in a character that can mean "say" (名称: name).
    assert split_sentences("“这是好事。”记者了解到，项目进展顺利。") == [
        "“这是好事。”",
        "记者了解到，项目进展顺利。",
    ]
    assert split_sentences("“好。”这是新名称。下一句。") == ["“好。”", "这是新名称。", "下一句。"]
    # Traditional characters, and the verb with 道 after it.
    assert split_sentences("「好的。」他說。下一句。") == ["「好的。」他說。", "下一句。"]
    assert split_sentences("“难。”她坦言道。下一句。") == ["“难。”她坦言道。", "下一句。"]
    summary = summarize(text + "项目计划总投资51.9亿元。今年以来已召开6次专题会议。", 2)
    assert not summary.startswith("在西河")
    assert "感慨地说。" not in summary or "“这是我们盼了多年的好事。”" in summary


def test_paragraph_ends_end_sentences_and_white_space_is_normalised() -> None:
    text = (
        "  A heading without a full stop  \n\n"
        "First   sentence of\nthe body. Second one\n\n\n"
        "中文段落，第一句\n  继续。第二句。\n\n"
        "English after Chinese. 紧跟的中文句子。\n \n\u3000\n"
    )
    assert split_sentences(text) == [
        "A heading without a full stop",
        "First sentence of the body.",
        "Second one",
        "中文段落，第一句继续。",
        "第二句。",
        "English after Chinese.",
        "紧跟的中文句子。",
    ]


def test_summaries_of_one_and_three_sentences() -> None:
    one = summarize(NEWS, 1, title=TITLE)
    three = summarize(NEWS, 3, title=TITLE)
    assert sentence_count(one) == 1
    assert sentence_count(three) == 3
    assert one in three


def test_the_lead_with_the_key_facts_is_the_one_sentence_summary() -> None:
    assert summarize(NEWS, 1, title=TITLE) == LEAD
    assert summarize(NEWS, 1) == LEAD
    assert summarize(ZH_NEWS, 1, title=ZH_TITLE) == ZH_LEAD
    assert summarize(ZH_NEWS, 1) == ZH_LEAD


def test_boilerplate_is_never_chosen() -> None:
    for text, junk in ((NEWS, BOILERPLATE), (ZH_NEWS, ["记者 王明", "来源", "责任编辑"])):
        total = len(split_sentences(text))
        for count in range(1, total):
            for title in (None, TITLE if text is NEWS else ZH_TITLE):
                summary = summarize(text, count, title=title)
                assert summary
                for mark in junk:
                    assert mark not in summary, (count, title, summary)


def test_the_headline_repeated_in_the_body_is_left_out() -> None:
    headline = "Harbour bridge reopens early"
    text = f"{headline}\n\n{NEWS}"
    page_title = f"{headline} | Riverside Daily"
    kept = len(split_sentences(NEWS)) - len(BOILERPLATE) - 1  # "Copyright ... Daily." is two sentences
    summary = summarize(text, kept, title=page_title)
    assert headline not in summary
    assert summary == summarize(NEWS, kept, title=page_title)


def test_the_title_brings_in_the_sentences_about_it() -> None:
    cyclists = "Cyclists will get a separate lane on the bridge next spring."
    assert cyclists not in summarize(NEWS, 3)
    assert cyclists in summarize(NEWS, 3, title="Cyclists to get their own lane")


def test_short_sentences_and_fragments_come_after_full_sentences() -> None:
    text = (
        f"Bridge repairs\n\n{LEAD} The bridge reopened.\n\n"
        "Engineers replaced the worn expansion joints of the bridge and resurfaced the whole deck.\n\n"
        "Ferry traffic fell back to its usual level within hours of the bridge reopening."
    )
    assert split_sentences(summarize(text, 3)) == split_sentences(text)[1:2] + split_sentences(text)[3:]


def test_summary_keeps_the_original_order_whatever_the_scores() -> None:
    sentences = split_sentences(NEWS)
    # By score: the lead, the dry weather, Dr. Reyes, then the expansion joints (sentences 1, 3, 6, 2).
    assert summarize(NEWS, 4, title=TITLE) == " ".join(sentences[i] for i in (1, 2, 3, 6))
    for count in range(1, len(sentences)):
        chosen = split_sentences(summarize(NEWS, count))
        positions = [sentences.index(sentence) for sentence in chosen]
        assert positions == sorted(positions)


def test_cjk_sentences_are_joined_without_a_space_and_latin_ones_with_one() -> None:
    zh = summarize(ZH_NEWS, 2, title=ZH_TITLE)
    assert sentence_count(zh) == 2
    assert " " not in zh
    mixed = "The first sentence is in English.\n\n第二句是中文。\n\n第三句也是中文。"
    assert summarize(mixed, 3) == "The first sentence is in English. 第二句是中文。第三句也是中文。"


def test_a_sentence_saying_what_a_chosen_one_says_is_skipped() -> None:
    reworded = (
        "The Riverside harbour bridge reopened to traffic on Monday after six weeks of repairs costing the "
        "city 4.2 million dollars, said Mayor Ann Clarke."
    )
    text = f"{LEAD}\n\n{reworded}\n\n{NEWS.split(LEAD)[1]}"
    summary = summarize(text, 2, title=TITLE)
    assert LEAD in summary
    assert reworded not in summary
    assert sentence_count(summary) == 2


def test_a_sentence_repeated_many_times_is_chosen_once_and_crowds_nothing_out() -> None:
    repost = f"{LEAD}\n\n" * 12 + NEWS
    summary = summarize(repost, 3, title=TITLE)
    assert summary.count(LEAD) == 1
    assert summary == summarize(NEWS, 3, title=TITLE)


def test_summaries_are_deterministic_and_idempotent() -> None:
    three = summarize(NEWS, 3, title=TITLE)
    assert all(summarize(NEWS, 3, title=TITLE) == three for _ in range(5))
    assert summarize(three, 3, title=TITLE) == three
    assert summarize(three, 5) == three


def test_summaries_of_several_lengths_equal_the_single_summaries() -> None:
    for text, title in ((NEWS, TITLE), (ZH_NEWS, ZH_TITLE), (NEWS, None)):
        expected = {str(n): summarize(text, n, title=title) for n in (1, 2, 3, 20)}
        assert summaries(text, iter([1, 2, 3, 20]), title=title) == expected
    assert summaries(NEWS, []) == {}


def test_a_short_text_is_returned_whole() -> None:
    text = "Advertisement\n\nThe bridge reopened.   It rained."
    assert summarize(text, 3) == "Advertisement The bridge reopened. It rained."
    assert summarize(text, 5) == summarize(text, 3)


def test_empty_input_gives_an_empty_summary() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n\t\u3000\n") == []
    assert summarize("", 1) == ""
    assert summarize("  \n\n  ", 3, title=TITLE) == ""
    assert summaries("", [1, 3]) == {"1": "", "3": ""}


@pytest.mark.parametrize("count", [0, -1])
def test_a_summary_of_less_than_one_sentence_is_an_error(count: int) -> None:
    with pytest.raises(ValueError, match=rf"sentences={count}\b"):
        summarize(NEWS, count)
    with pytest.raises(ValueError, match=rf"sentences={count}\b"):
        summaries(NEWS, [3, count])
    with pytest.raises(ValueError, match=rf"sentences={count}\b"):
        summarize("", count)


def test_big_inputs_are_summarised() -> None:
    words = sorted({word.strip(".,:/").lower() for word in NEWS.split()} - {""})
    draw = random.Random(7)
    paragraphs = [
        f"{' '.join(draw.sample(words, 14)).capitalize()} at {i}.5 p.m. in the U.S. today. Dr. Reyes agreed! "
        f"{' '.join(draw.sample(words, 9)).capitalize()}."
        for i in range(900)
    ]
    big = "\n\n".join(paragraphs)
    assert len(big) > 100_000
    sentences = split_sentences(big)
    assert len(sentences) == 3 * len(paragraphs)
    result = summaries(big, [1, 5, 10], title="Bridge traffic report")
    for key, count in (("1", 1), ("5", 5), ("10", 10)):
        chosen = split_sentences(result[key])
        assert len(chosen) == count
        assert set(chosen) <= set(sentences)
    for degenerate in ("word " * 25_000, "Mr. " * 25_000, "中" * 100_000, "。" * 100_000, "Go. " * 25_000):
        assert len(summarize(degenerate, 3)) <= len(degenerate)


@needs_corpus
def test_golden_english_news_summary_starts_with_its_lead() -> None:
    page = _page("wcxb-0221")
    text = (CORPUS / "truth" / "wcxb-0221.txt").read_text(encoding="utf-8")
    first = split_sentences(text)[0]
    assert first.startswith("When HCA Healthcare, one of the largest hospital systems in the U.S., recently")
    assert summarize(text, 1, title=page["gt_title"]) == first
    three = summarize(text, 3, title=page["gt_title"])
    assert three.startswith(first)
    assert sentence_count(three) == 3


@needs_corpus
def test_golden_chinese_news_summary_leaves_out_the_byline_and_editor() -> None:
    page_id = "zh-9890f458-7af7-4e96-a507-6eb1b359d675"
    text = (CORPUS / "truth" / f"{page_id}.txt").read_text(encoding="utf-8")
    assert "责任编辑" in text
    assert "（记者 胡晓蓉）" in split_sentences(text)
    for title in (_page(page_id)["title"], None):
        result = summaries(text, [1, 3, 5], title=title)
        assert result["1"].startswith("近日，工信部发布2021年度绿色制造名单")
        for summary in result.values():
            assert "责任编辑" not in summary
            assert "胡晓蓉" not in summary
            assert " " not in summary


def _page(page_id: str) -> dict[str, str]:
    pages: list[dict[str, str]] = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))["pages"]
    return next(page for page in pages if page["id"] == page_id)


@pytest.mark.parametrize(
    ("text", "count", "shown"),
    [
        ("One fact here. Two facts here.\n\nThree facts here.", 3, 3),
        ("人工智能大模型投入应用。专家表示前景广阔。\n\n市民反响热烈。", 2, 2),
    ],
)
def test_sentences_in_counts_the_sentences_a_summary_shows(text: str, count: int, shown: int) -> None:
    assert sentences_in(summarize(text, count), text) == shown


def test_sentences_in_a_summary_of_repeated_paragraphs_is_fewer_than_asked() -> None:
    paragraph = "The council approved the new bridge over the river on {} after a long debate."
    text = "\n\n".join(paragraph.format(day) for day in ("Monday", "Tuesday", "Wednesday", "Thursday"))
    assert sentences_in(summarize(text, 3), text) == 1
    assert sentences_in("A text. Not of the body.", text) == 2, "split on its own when no summary of it"
