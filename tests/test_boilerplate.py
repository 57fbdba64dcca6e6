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


def test_the_choice_is_the_best_run_of_lines() -> None:
    reading = _reading(_page(FEED))
    chosen = boilerplate.candidates(reading)
    middle = chosen[2:-3]
    logits = [1.0 if index in middle else -1.0 for index in chosen]
    assert boilerplate.choose(reading, chosen, logits) == set(middle)


def test_without_a_run_above_zero_qread_s_choice_stays() -> None:
    reading = _reading(_page(FEED))
    assert boilerplate.refine(reading, boilerplate.Model(-5.0, {})) == reading.kept


def test_chinese_pages_keep_qread_s_choice() -> None:
    """The model learned from English pages: on this page it would drop the last related item."""
    sentence = "市政府今天宣布了新的港口大桥计划，预计明年开工，将改善城市交通和居民出行。"
    teaser = "岛上的渡轮服务将在夏季增加班次，方便游客。"
    paragraphs = "".join(f"<p>{sentence * 3}{i}</p>" for i in range(5))
    feed = "".join(
        f'<div class="item"><h4><a href="/s{i}">相关新闻{i}</a></h4><p>{teaser * 2}</p></div>'
        for i in range(5)
    )
    html = f"<html><body><div>{paragraphs}</div><div>{feed}</div></body></html>"
    assert extract(html, algo="qread-learned").text == extract(html, algo="qread").text


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
