"""No input string makes an extractor raise: property-based tests over every algorithm."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extractors import ALGORITHMS, Extraction, get_extractor
from extractors.text import CJK_CHARACTERS, count_words

TAGS = [
    "html",
    "head",
    "title",
    "body",
    "div",
    "p",
    "br",
    "a",
    "span",
    "table",
    "tr",
    "td",
    "ul",
    "li",
    "h1",
    "script",
    "style",
    "nav",
    "article",
    "pre",
    "svg",
    "iframe",
    "!--",
    "?xml",
    "!DOCTYPE",
]
ATTRIBUTES = [
    "",
    ' class="nav"',
    ' id="content"',
    ' style="display:none"',
    " hidden",
    ' aria-hidden="true"',
    ' class="article-body"',
    ' href="http://example.test/"',
    ' charset="gbk"',
]

fragments = st.one_of(
    st.text(max_size=40),
    st.builds(lambda tag, attr: f"<{tag}{attr}>", st.sampled_from(TAGS), st.sampled_from(ATTRIBUTES)),
    st.builds(lambda tag: f"</{tag}>", st.sampled_from(TAGS)),
    st.sampled_from(
        [
            "长江大桥完成检修。",
            "\x00",
            "\ud800",
            "&amp;",
            "&#0;",
            "&#xD800;",
            "<![CDATA[",
            "]]>",
            "\r\n\r\n\r\n",
            "\u3000",
            "\ufeff",
            "\u200b",
            "<",
            ">",
            '"',
            "'",
        ]
    ),
)
html_like = st.lists(fragments, max_size=60).map("".join)


def check(algorithm: str, html: str) -> None:
    result = get_extractor(algorithm)(html)
    assert isinstance(result, Extraction)
    assert result.algorithm == algorithm
    assert result.text == "\n\n".join(result.paragraphs)
    if not result.text:
        assert result.notes


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text())
def test_any_text_is_taken(algorithm: str, text: str) -> None:
    check(algorithm, text)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html=html_like)
def test_any_tag_soup_is_taken(algorithm: str, html: str) -> None:
    check(algorithm, html)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_a_link_of_a_word_and_an_invisible_space_is_taken(algorithm: str) -> None:
    # Found by the test above: a link's words were split on white space without U+FEFF as space, so a link
    # had more words than its line, and qRead took the square root of a negative count.
    check(algorithm, "<A>0\r\ufeff")


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_deeply_nested_and_huge_inputs_are_taken(algorithm: str) -> None:
    check(algorithm, "<div>" * 100_000 + "deep text" + "</div>" * 100_000)
    check(algorithm, "<p>" + "word " * 2_000_000 + "</p>")
    check(algorithm, "<table>" + "<tr><td><a href='/x'>link</a></td></tr>" * 50_000 + "</table>")


# Words as count_words defines them: each CJK character one word, each run of other characters that are not
# white space one word.
WORD_RE = re.compile(rf"[{CJK_CHARACTERS}]|[^\s{CJK_CHARACTERS}]+")


# Latin, CJK and other characters, and white space of several kinds (and characters that are none).
WORD_CHARACTERS = "ab1,. \t\n\r\x0b\x1c\x85\u00a0\u2003\u3000\u200b\ufeff一二アア가ぁ，。\U00020000"


@settings(max_examples=2000, deadline=None)
@given(text=st.text(alphabet=WORD_CHARACTERS))
def test_words_are_counted_as_defined(text: str) -> None:
    assert count_words(text) == len(WORD_RE.findall(text))
