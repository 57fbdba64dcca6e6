"""Duplicate-article bench: precision and recall of the store's duplicate pass on reposts and on different
articles about the same event.

Run from the repo root::

    .venv/bin/python bench/dedup.py [--seed 1] [--articles 1200] [--topics 40] [--threshold BITS]

``--shingle`` and ``--lead-weight`` measure the fingerprint's tuned constants again with other values.

The corpus is deterministic for a seed:

1. Sentences: real English and Chinese text, the ground-truth texts of ``../shared/extraction-dev``
   (read at run time, never copied); random words when that folder is absent (``--corpus``).
2. Topics (events), two in three English: each has its own people, place, organisation, numbers, keywords
   (the most frequent words of one real text) and a quote.
3. Distinct articles: ``--articles`` in all, spread over the topics. Each is 4 to 14 paragraphs of sentences
   never used by another article of its topic, rewritten to carry the topic's names, numbers and keywords,
   with a lead sentence from shared templates and, for half of them, the topic's quote: articles about one
   event share their names and vocabulary, as different outlets' reports do, but not their sentences.
   Some carry their headline as the first body line, a byline, or site chrome.
4. Reposts: half of the articles are reposted under another URL (a quarter of those twice) within three
   days, each with one of these edits or two of them (``byline+trim``), chosen evenly:
   ``verbatim`` (the same body), ``headline`` (a new title; in the body too when the repost's site puts it
   there), ``byline`` ("By Jane Doe, Staff Reporter" / "本报记者 张三"), ``trim`` (last paragraph cut),
   ``boilerplate`` (other site chrome at the top and bottom: share lines, "Read more:", copyright, related
   links).

Detection (:func:`detect`) is a SimHash-only reference, the store's duplicate pass before issue 17: articles
in ``first_seen`` order; a body with the content hash of an article first seen within the window is an
exact duplicate; otherwise the candidates are the articles of the window sharing a SimHash band key (probed
with up to 2 bits flipped), and the closest one at most the threshold away (then the earliest) whose
shingles it shares is the original. A duplicate is not indexed (the store records it in its original's
reposts); anything else is. The store itself (:func:`detect_in_store`) also finds candidates by their
anchors and decides on containment (``crawler.store.fingerprint.Phrases``): it finds a few more.

Precision = duplicate decisions naming an article of the same story / all duplicate decisions. Recall =
reposts matched to their story / all reposts. Distances are SimHash bits between a repost and its original,
and between two distinct articles of one topic.

Last, issue 17's kinds (:func:`hard_kinds`) go through the store with the corpus: partial reposts, short
articles reposted trimmed or with a block of related links, distinct articles carrying one shared
disclaimer, and a page that is mostly that disclaimer; per kind, the recall and the distinct articles
dropped as reposts, and the store's time per article.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_REPO_ROOT = Path(__file__).resolve().parents[1]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from bench.corpus import default_corpus  # noqa: E402
from crawler.store import DedupPolicy, SqliteStore, fingerprint  # noqa: E402
from crawler.store.document import make_document  # noqa: E402

# The store's default window (crawler.store.base.DedupPolicy).
WINDOW = timedelta(days=7)
LANGS = ("en", "zh")
EDITS = ("headline", "byline", "trim", "boilerplate")
EDIT_KINDS = ("verbatim", *EDITS, *("+".join(pair) for pair in itertools.combinations(EDITS, 2)))
START = datetime(2026, 11, 2, tzinfo=UTC)
SWEEP = range(6, 25, 2)

FIRST_NAMES = (
    "James Maria Robert Linda Daniel Sofia Ahmed Priya Thomas Elena Kevin Grace Oliver Hannah Lucas Amara "
    "Samuel Chloe Victor Naomi Felix Irene Marcus Leila Owen Ruth Patrick Yuki Andre Helen"
).split()
LAST_NAMES = (
    "Carter Novak Okafor Lindqvist Moreau Haddad Brennan Kowalski Tanaka Alvarez Whitfield Osei Petrov "
    "Delgado Fischer Mbeki Sorensen Castillo Nakamura Duarte Gallagher Iyer Rossi Keller Abbott Vance"
).split()
PLACES = (
    "Rotterdam Leeds Tucson Gdansk Halifax Cork Adelaide Porto Tampere Geelong Lyon Boise Malmo Dundee "
    "Winnipeg Bergen Ghent Nagoya Valencia Spokane Aarhus Bristol Tacoma Graz"
).split()
ORG_KINDS = (
    "City Council",
    "Port Authority",
    "Transit Agency",
    "Health Department",
    "Water Board",
    "Police Department",
    "University",
    "Chamber of Commerce",
    "Fire Service",
    "School Board",
)
ROLES = ("Staff Reporter", "Associated Press", "Reuters", "Senior Correspondent", "Business Editor")
SITE_NAMES = (
    "The Daily Ledger",
    "Metro Wire",
    "Coastal Herald",
    "NewsNow",
    "The Evening Post",
    "Civic Times",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
STOPWORDS = frozenset(
    (
        "about after again against because before being between could during every first found people "
        "should their there these those through under where which while would years other still since "
        "around another without really always something things think going"
    ).split()
)
LEADS = (
    "{place} - {person} said on {day} that the {kw0} {kw1} would cost about {number}.",
    "The {org} confirmed on {day} that {number} residents were affected by the {kw0} in {place}.",
    "Officials in {place} are weighing the {kw0} after {person} of the {org} warned about {kw1}.",
    "{person} told reporters in {place} that the {kw1} was not expected before {day}.",
    "A {kw0} linked to the {org} has put {number} {kw1} at risk, {person} said.",
    "The {org} in {place} announced a review of the {kw0} on {day}, citing {number} {kw1}.",
    "{place} woke up on {day} to news of the {kw0}, with the {org} estimating {number}.",
    "Questions over the {kw0} dominated {day} in {place}, where {person} faced the {org}.",
)
TITLES = (
    "{Place} {kw0} raises questions for {org}",
    "{org} responds to {kw0} in {Place}",
    "{Person} on the {kw0}: what comes next for {Place}",
    "{Place} {kw0}: {number} affected, {org} says",
    "Inside the {kw0} that shook {Place}",
    "{org} under pressure over {kw1} after {kw0}",
)
TITLE_TWEAKS = ("UPDATE: {}", "{} | {site}", "{} (video)", "Breaking: {}", "{} - {site}")
TOP_CHROME = (
    "Share this article",
    "Share on Facebook · Share on X · Email",
    "Advertisement",
    "Listen to this article · {n} min",
    "Skip to main content",
    "Published {day} · Updated {n} hours ago",
)
BOTTOM_CHROME = (
    "Read more: {other}",
    "© 2026 {site}. All rights reserved.",
    "Related: {other} | {other2} | {other3}",
    "Sign up for our morning newsletter to get the day's top stories.",
    "Follow {site} on Facebook and X",
    "Comments are closed.",
)

ZH_SURNAMES = "王李张刘陈杨黄赵周吴徐孙马胡朱郭何罗高林"
ZH_GIVEN = "伟 芳 娜 敏 静 强 磊 军 洋 勇 艳 杰 涛 明 超 秀英 建华 志强 海燕 晓明 文博 思远".split()
ZH_PLACES = "杭州 成都 武汉 西安 南京 长沙 青岛 厦门 昆明 沈阳 济南 合肥 福州 南宁 贵阳 兰州".split()
ZH_ORG_KINDS = "交通运输局 卫生健康委员会 应急管理局 教育局 人民政府 公安局 气象台 生态环境局".split()
ZH_SITES = ("新华网", "人民网", "澎湃新闻", "新浪新闻", "搜狐新闻", "网易新闻")
ZH_DAYS = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
# Characters of Chinese function words: a keyword bigram holding one says little about a topic.
ZH_STOP = frozenset("的一是了在不和有这我他也就人们中为上个到说以对大年来时地要会出而与及将其")
ZH_LEADS = (
    "{day}，{org}发布消息称，{place}{kw0}{kw1}情况引发关注，涉及{number}。",
    "记者从{org}获悉，{place}{kw0}问题已影响{number}，{person}表示将尽快处理。",
    "{place}{kw0}一事持续发酵，{org}{day}回应称，{kw1}工作正在推进。",
    "{person}{day}在{place}表示，{kw0}{kw1}涉及{number}，{org}已介入调查。",
    "围绕{kw0}的争议，{org}负责人{person}{day}作出说明。",
    "{place}市民{day}关注的{kw0}{kw1}，{org}称共涉及{number}。",
)
ZH_TITLES = (
    "{place}{kw0}{kw1}引关注 {org}回应",
    "{org}：{place}{kw0}涉及{number}",
    "{person}谈{kw0}：{place}下一步怎么走",
    "{place}{kw0}调查：{kw1}背后",
    "聚焦{place}{kw0}{kw1}",
)
ZH_TITLE_TWEAKS = ("【关注】{}", "{}_{site}", "{}（视频）", "快讯：{}", "{}｜{site}")
ZH_ATTRIBUTIONS = ("{person}表示，", "据{org}介绍，", "{place}方面称，", "{person}说，", "{org}认为，")
ZH_BYLINES = ("本报记者 {name}", "（记者 {name} 通讯员 {name2}）", "{site}讯 记者{name}", "文/{name}")
ZH_TOP_CHROME = ("分享到：微信 微博 QQ空间", "字号：大 中 小", "来源：{site}", "打印本页 关闭窗口")
ZH_BOTTOM_CHROME = (
    "相关阅读：{other}",
    "版权所有 © 2026 {site} 未经授权禁止转载",
    "责任编辑：{name}",
    "扫一扫，关注我们的微信公众号",
    "相关新闻：{other}｜{other2}",
    "【纠错】【打印】【关闭】",
)
GENERATED_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have "
    "an they you were her she there been one all we their has would when if so no will more can out time "
    "up year also new market city plan water road school police court report budget project council "
    "health service public local family week month million group company river bridge train station price"
).split()
GENERATED_HAN = (
    "中国人民政府发展经济社会文化建设工作会议市场企业城市农村教育医疗科技交通环境安全管理服务群众干部"
    "改革开放创新项目资金投资生产产业技术质量标准政策规划部门地区单位活动组织情况问题方面研究调查报告"
)


@dataclass(frozen=True, slots=True)
class Article:
    url: str
    site: str
    lang: str
    topic: int
    title: str
    body: str
    first_seen: datetime
    story: str  # URL under which this text was first published (its own for an original)
    edit: str | None  # a repost's edits, e.g. "byline+trim"; None for an original


@dataclass(frozen=True, slots=True)
class Parts:
    """An article body before it is joined: chrome lines, headline and byline lines, paragraphs."""

    top: tuple[str, ...]
    headline: str | None
    byline: str | None
    paragraphs: tuple[str, ...]
    bottom: tuple[str, ...]

    def body(self) -> str:
        lines = [*self.top, self.headline, self.byline, *self.paragraphs, *self.bottom]
        return "\n\n".join(line for line in lines if line)


@dataclass
class Topic:
    index: int
    lang: str
    people: list[str]
    place: str
    org: str
    keywords: list[str]
    numbers: list[str]
    quote: str
    start: datetime
    used: set[int] = field(default_factory=set)


# --- sentences -----------------------------------------------------------------------------------------

_EN_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“‘(])")
_ZH_SPLIT_RE = re.compile(r"(?<=[。！？])")
_HAN_RE = re.compile(r"[\u4e00-\u9fff]")
_BAD_ZH_RE = re.compile(r"[\ue000-\uf8ff\ufffd]")
_WORD_RE = re.compile(r"[a-z]{6,}")


def english_sentences(text: str) -> list[str]:
    sentences = []
    for line in text.splitlines():
        for sentence in _EN_SPLIT_RE.split(line.strip().removeprefix("- ")):
            words = sentence.split()
            if (
                8 <= len(words) <= 40
                and sentence[-1] in ".!?"
                and sum(w.isalpha() for w in words) >= 0.7 * len(words)
            ):
                sentences.append(sentence)
    return sentences


def chinese_sentences(text: str) -> list[str]:
    joined = "".join(text.split())
    return [
        s
        for s in _ZH_SPLIT_RE.split(joined)
        if 12 <= len(s) <= 80 and not _BAD_ZH_RE.search(s) and len(_HAN_RE.findall(s)) >= 0.6 * len(s)
    ]


def load_texts(corpus: Path) -> dict[str, list[list[str]]]:
    """Sentences of each ground-truth text of the extraction dev set, by language; {} without it."""
    manifest = corpus / "manifest.json"
    if not manifest.is_file():
        return {}
    texts: dict[str, list[list[str]]] = {"en": [], "zh": []}
    for page in json.loads(manifest.read_text(encoding="utf-8"))["pages"]:
        if page["lang"] not in texts:
            continue
        truth = (corpus / page["truth"]).read_text(encoding="utf-8")
        split = english_sentences if page["lang"] == "en" else chinese_sentences
        sentences = list(dict.fromkeys(split(truth)))
        if sentences:
            texts[page["lang"]].append(sentences)
    return texts


def generated_texts(rng: random.Random) -> dict[str, list[list[str]]]:
    """Texts of random words and characters, the stand-in for the dev set."""
    english = [
        [
            " ".join(rng.choice(GENERATED_WORDS) for _ in range(rng.randint(10, 25))).capitalize() + "."
            for _ in range(40)
        ]
        for _ in range(150)
    ]
    chinese = [
        ["".join(rng.choice(GENERATED_HAN) for _ in range(rng.randint(15, 40))) + "。" for _ in range(40)]
        for _ in range(70)
    ]
    return {"en": english, "zh": chinese}


def english_keywords(sentences: Sequence[str], rng: random.Random) -> list[str]:
    counts = Counter(w for s in sentences for w in _WORD_RE.findall(s.lower()) if w not in STOPWORDS)
    return rng.sample([word for word, _ in counts.most_common(12)], 6)


def chinese_keywords(sentences: Sequence[str], rng: random.Random) -> list[str]:
    counts: Counter[str] = Counter()
    for sentence in sentences:
        counts.update(
            a + b
            for a, b in itertools.pairwise(sentence)
            if _HAN_RE.match(a) and _HAN_RE.match(b) and a not in ZH_STOP and b not in ZH_STOP
        )
    return rng.sample([pair for pair, _ in counts.most_common(12)], 6)


# --- the corpus ----------------------------------------------------------------------------------------


class Corpus:
    """Topics, their distinct articles and the reposts, from one random generator."""

    def __init__(self, texts: dict[str, list[list[str]]], topics: int, articles: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.texts = texts
        self.pools = {lang: [s for text in docs for s in text] for lang, docs in texts.items()}
        self.topics = [self.topic(i, "zh" if i % 3 == 2 else "en") for i in range(topics)]
        self.originals: list[tuple[Article, Parts]] = []
        for n in range(articles):
            self.originals.append(self.original(self.topics[n % topics], n))
        self.reposts = [repost for pair in self.originals for repost in self.reposts_of(*pair)]

    def articles(self) -> list[Article]:
        return sorted([a for a, _ in self.originals] + self.reposts, key=lambda a: (a.first_seen, a.url))

    # topics

    def topic(self, index: int, lang: str) -> Topic:
        rng = self.rng
        # Keywords from one real text long enough to have six frequent words.
        anchor = rng.choice([text for text in self.texts[lang] if len(text) >= 10])
        start = START + timedelta(hours=18 * index)
        if lang == "en":
            place = rng.choice(PLACES)
            return Topic(
                index,
                lang,
                [f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}" for _ in range(3)],
                place,
                f"{place} {rng.choice(ORG_KINDS)}",
                english_keywords(anchor, rng),
                [
                    str(rng.randint(12, 98)),
                    f"{rng.randint(2, 9)}.{rng.randint(1, 9)} million",
                    f"{rng.randint(1, 9)},{rng.randint(100, 999)}",
                ],
                rng.choice(self.pools[lang]),
                start,
            )
        place = rng.choice(ZH_PLACES)
        return Topic(
            index,
            lang,
            [self.chinese_name() for _ in range(3)],
            place,
            f"{place}市{rng.choice(ZH_ORG_KINDS)}",
            chinese_keywords(anchor, rng),
            [f"{rng.randint(12, 98)}万人", f"{rng.randint(2, 90)}亿元", f"{rng.randint(5, 95)}%"],
            rng.choice(self.pools[lang]),
            start,
        )

    def chinese_name(self) -> str:
        return self.rng.choice(ZH_SURNAMES) + self.rng.choice(ZH_GIVEN)

    def fill(self, template: str, topic: Topic) -> str:
        rng = self.rng
        keywords = rng.sample(topic.keywords, 2)
        return template.format(
            place=topic.place,
            Place=topic.place,
            person=rng.choice(topic.people),
            Person=rng.choice(topic.people),
            org=topic.org,
            day=rng.choice(DAYS if topic.lang == "en" else ZH_DAYS),
            number=rng.choice(topic.numbers),
            kw0=keywords[0],
            kw1=keywords[1],
        )

    def title(self, topic: Topic) -> str:
        title = self.fill(self.rng.choice(TITLES if topic.lang == "en" else ZH_TITLES), topic)
        return title[0].upper() + title[1:]

    # distinct articles

    def sentence(self, topic: Topic) -> str:
        """A sentence of the pool no other article of ``topic`` uses, carrying the topic's names, numbers
        and keywords."""
        pool = self.pools[topic.lang]
        index = self.rng.randrange(len(pool))
        for _ in range(20):
            if index not in topic.used:
                break
            index = self.rng.randrange(len(pool))
        topic.used.add(index)
        return self.english(pool[index], topic) if topic.lang == "en" else self.chinese(pool[index], topic)

    def english(self, sentence: str, topic: Topic) -> str:
        rng = self.rng
        entities = [*topic.people, *(p.split()[-1] for p in topic.people), topic.place, topic.org]
        words = sentence.split()
        out: list[str] = []
        for i, word in enumerate(words):
            proper = i > 0 and word[:1].isupper() and not words[i - 1].endswith((".", ":"))
            if proper and out and out[-1] in entities:
                continue  # one entity for a run of capitalised words
            out.append(rng.choice(entities) if proper else word)
        common = [i for i, w in enumerate(out) if len(w) >= 5 and w.isalpha() and w.islower()]
        for i in rng.sample(common, min(len(common), rng.choice((0, 1, 1, 2)))):
            out[i] = rng.choice(topic.keywords)
        text = re.sub(r"\d[\d,.]*\d|\d", lambda _: rng.choice(topic.numbers), " ".join(out))
        roll = rng.random()
        if roll < 0.15:
            return f"According to the {topic.org}, {text[0].lower()}{text[1:]}"
        if roll < 0.3 and text.endswith("."):
            return f"{text[:-1]}, {rng.choice(topic.people).split()[-1]} said."
        return text

    def chinese(self, sentence: str, topic: Topic) -> str:
        rng = self.rng
        text = re.sub(r"\d+(?:\.\d+)?", lambda _: rng.choice(topic.numbers), sentence)
        for _ in range(rng.choice((0, 1, 1, 2))):
            spans = [i for i in range(len(text) - 1) if _HAN_RE.match(text[i]) and _HAN_RE.match(text[i + 1])]
            if spans and topic.keywords:
                i = rng.choice(spans)
                text = text[:i] + rng.choice(topic.keywords) + text[i + 2 :]
        if rng.random() < 0.35:
            text = self.fill(rng.choice(ZH_ATTRIBUTIONS), topic) + text
        return text

    def paragraphs(self, topic: Topic) -> list[str]:
        rng = self.rng
        joiner = " " if topic.lang == "en" else ""
        paragraphs = [
            joiner.join(self.sentence(topic) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(4, 14))
        ]
        lead = self.fill(rng.choice(LEADS if topic.lang == "en" else ZH_LEADS), topic)
        paragraphs[0] = f"{lead}{joiner}{paragraphs[0]}"
        if rng.random() < 0.5:
            quote = (
                f"“{topic.quote}” {rng.choice(topic.people)} said."
                if topic.lang == "en"
                else f"{rng.choice(topic.people)}说：“{topic.quote}”"
            )
            paragraphs.insert(rng.randint(1, len(paragraphs) - 1), quote)
        return paragraphs

    def byline(self, lang: str) -> str:
        rng = self.rng
        if lang == "en":
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
            return rng.choice((f"By {name}, {rng.choice(ROLES)}", f"By {name} | {rng.choice(DAYS)}", name))
        return rng.choice(ZH_BYLINES).format(
            name=self.chinese_name(), name2=self.chinese_name(), site=rng.choice(ZH_SITES)
        )

    def chrome(self, lang: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Site chrome lines for the top and the bottom of a body."""
        rng = self.rng
        others = [self.title(rng.choice(self.topics)) for _ in range(3)]
        values = {
            "n": rng.randint(2, 9),
            "day": rng.choice(DAYS),
            "site": rng.choice(SITE_NAMES if lang == "en" else ZH_SITES),
            "other": others[0],
            "other2": others[1],
            "other3": others[2],
            "name": self.chinese_name(),
        }
        top, bottom = (TOP_CHROME, BOTTOM_CHROME) if lang == "en" else (ZH_TOP_CHROME, ZH_BOTTOM_CHROME)
        return (
            tuple(line.format(**values) for line in rng.sample(top, rng.randint(1, 2))),
            tuple(line.format(**values) for line in rng.sample(bottom, rng.randint(1, 3))),
        )

    def original(self, topic: Topic, n: int) -> tuple[Article, Parts]:
        rng = self.rng
        title = self.title(topic)
        top, bottom = self.chrome(topic.lang) if rng.random() < 0.3 else ((), ())
        parts = Parts(
            top,
            title if rng.random() < 0.4 else None,
            self.byline(topic.lang) if rng.random() < 0.3 else None,
            tuple(self.paragraphs(topic)),
            bottom,
        )
        site = f"{topic.lang}-news{rng.randrange(30)}"
        first_seen = topic.start + timedelta(minutes=rng.randrange(36 * 60))
        url = f"https://{site}.example/{first_seen:%Y/%m/%d}/story-{n}"
        return Article(url, site, topic.lang, topic.index, title, parts.body(), first_seen, url, None), parts

    # reposts

    def reposts_of(self, original: Article, parts: Parts) -> list[Article]:
        rng = self.rng
        if rng.random() >= 0.5:
            return []
        count = 2 if rng.random() < 0.25 else 1
        return [self.repost(original, parts, rng.choice(EDIT_KINDS), i) for i in range(count)]

    def repost(self, original: Article, parts: Parts, kind: str, i: int) -> Article:
        rng = self.rng
        title = original.title
        for edit in kind.split("+"):
            if edit == "headline":
                tweaks = TITLE_TWEAKS if original.lang == "en" else ZH_TITLE_TWEAKS
                site_name = rng.choice(SITE_NAMES if original.lang == "en" else ZH_SITES)
                if rng.random() < 0.5:
                    title = self.title(self.topics[original.topic])
                else:
                    title = rng.choice(tweaks).replace("{site}", site_name).format(title)
                parts = replace(parts, headline=title if rng.random() < 0.5 else None)
            elif edit == "byline":
                parts = replace(parts, byline=self.byline(original.lang))
            elif edit == "trim":
                parts = replace(parts, paragraphs=parts.paragraphs[:-1])
            elif edit == "boilerplate":
                top, bottom = self.chrome(original.lang)
                parts = replace(parts, top=top, bottom=bottom)
        site = f"aggregator{rng.randrange(12)}"
        first_seen = original.first_seen + timedelta(minutes=rng.randrange(10, 72 * 60))
        url = f"https://{site}.example/{first_seen:%Y%m%d}/{original.url.rsplit('/', 1)[1]}-r{i}"
        return Article(
            url, site, original.lang, original.topic, title, parts.body(), first_seen, original.url, kind
        )


# --- detection, as the store does it ------------------------------------------------------------------


@functools.cache
def prints(body: str) -> tuple[str, int | None]:
    """Content hash (as ``crawler.store.document.content_hash``) and SimHash of a body."""
    return hashlib.sha1(fingerprint.normalise(body).encode("utf-8")).hexdigest(), fingerprint.simhash(body)


def detect(
    articles: Iterable[Article],
    max_distance: int = fingerprint.DEFAULT_MAX_DISTANCE,
    window: timedelta = WINDOW,
    candidates: list[int] | None = None,
    verify: bool = True,
) -> dict[str, str | None]:
    """The URL of the article each one duplicates (None for a new one), processing ``articles`` in
    ``first_seen`` order as the store does; ``candidates`` receives the size of each band lookup (articles
    of the window sharing a band key: what the store reads to compare). ``verify``: confirm a near match
    by the bodies' shared shingles (``fingerprint.same_article``), as the store did before it decided on
    their distinctive phrases (``fingerprint.same_or_part``)."""
    by_hash: dict[str, list[Article]] = defaultdict(list)
    by_band: dict[int, list[Article]] = defaultdict(list)
    found: dict[str, str | None] = {}
    for article in sorted(articles, key=lambda a: (a.first_seen, a.url)):
        digest, own = prints(article.body)
        lower = article.first_seen - window
        best: tuple[int, datetime, Article] | None = None
        for other in by_hash.get(digest, ()):
            if other.first_seen >= lower and (best is None or (-1, other.first_seen) < best[:2]):
                best = (-1, other.first_seen, other)
        if own is not None:
            near = {
                other.url: other
                for key in fingerprint.probe_keys(own)
                for other in by_band.get(key, ())
                if other.first_seen >= lower
            }
            if candidates is not None:
                candidates.append(len(near))
            if best is None:
                ranked = sorted(
                    (distance, other.first_seen, other.url, other)
                    for other in near.values()
                    if (distance := fingerprint.hamming(own, prints(other.body)[1] or 0)) <= max_distance
                )
                for distance, first_seen, _, other in ranked:
                    if not verify or fingerprint.same_article(article.body, other.body):
                        best = (distance, first_seen, other)
                        break
        found[article.url] = None if best is None else best[2].url
        if best is None:
            by_hash[digest].append(article)
            if own is not None:
                for key in fingerprint.band_keys(own):
                    by_band[key].append(article)
    return found


@dataclass
class StoreRun:
    """What :func:`detect_in_store` saw: each article's decision (the URL of its original, None for a new
    one), the candidates the store's lookup found for it, and the time spent."""

    found: dict[str, str | None] = field(default_factory=dict)
    candidates: dict[str, set[str]] = field(default_factory=dict)
    documents_seconds: float = 0.0  # making the documents: their fingerprints, as a crawl's text pool does
    write_seconds: float = 0.0  # the store's write path: dedup (lookup included) and the write
    lookup_seconds: float = 0.0  # of which the candidate lookup


def detect_in_store(articles: Iterable[Article], max_distance: int) -> StoreRun:
    """The same decisions made by the crawler's own store: every article written into a fresh
    ``SqliteStore`` in ``first_seen`` order, 100 per batch, each ``Written`` outcome read back. The
    documents are made first (``make_document``: the content hash and SimHash, which a crawl's text pool
    computes), then written; the store's candidate lookup is watched (what it found, its time)."""
    policy = DedupPolicy(window=WINDOW, max_distance=max_distance)
    run = StoreRun()
    ordered = sorted(articles, key=lambda a: (a.first_seen, a.url))
    with tempfile.TemporaryDirectory() as folder, SqliteStore(folder, dedup=policy) as store:
        lookup = store._candidates

        def watched(*args: Any) -> list[Any]:
            started = time.perf_counter()
            found = lookup(*args)
            run.lookup_seconds += time.perf_counter() - started
            run.candidates[args[2]["url"]] = {candidate.url for candidate in found}
            return found

        store._candidates = watched  # type: ignore[method-assign,assignment]
        for start in range(0, len(ordered), 100):
            batch = ordered[start : start + 100]
            started = time.perf_counter()
            documents = [
                make_document(
                    {"site": "bench", "url": a.url, "fetched_at": a.first_seen, "title": None, "body": a.body}
                )
                for a in batch
            ]
            made = time.perf_counter()
            written = store.write(documents)
            run.documents_seconds += made - started
            run.write_seconds += time.perf_counter() - made
            for outcome in written:
                run.found[outcome.url] = outcome.original if outcome.outcome == "repost" else None
    return run


# --- scoring -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    decisions: int
    correct: int
    reposts: int
    detected: int

    @property
    def precision(self) -> float:
        return self.correct / self.decisions if self.decisions else 1.0

    @property
    def recall(self) -> float:
        return self.detected / self.reposts if self.reposts else 1.0


def score(articles: Sequence[Article], found: Mapping[str, str | None], story: Mapping[str, str]) -> Score:
    """Duplicate decisions among ``articles`` and how many name an article of the same story (``story``:
    URL to story, of every article); reposts among them and how many were matched to their story."""
    decisions = correct = reposts = detected = 0
    for article in articles:
        match = found[article.url]
        right = match is not None and story[match] == article.story
        decisions += match is not None
        correct += right
        reposts += article.edit is not None
        detected += article.edit is not None and right
    return Score(decisions, correct, reposts, detected)


def distance(a: Article, b: Article) -> int | None:
    first, second = prints(a.body)[1], prints(b.body)[1]
    return None if first is None or second is None else fingerprint.hamming(first, second)


def spread(values: Sequence[int]) -> str:
    """``min / p5 / median / p95 / max`` of ``values``."""
    if not values:
        return "-"
    ordered = sorted(values)
    p5, p95 = (ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.05, 0.95))
    return f"{ordered[0]} / {p5} / {statistics.median_low(ordered)} / {p95} / {ordered[-1]}"


def random_pair_rate(bits: int) -> float:
    """Chance that two unrelated SimHashes (64 independent fair bits each) are at most ``bits`` apart."""
    return sum(math.comb(64, k) for k in range(bits + 1)) / 2**64


def shared_shingles(a: Article, b: Article) -> float:
    """Share of the smaller article's shingles that the other one has too."""
    first, second = _shingle_set(a.body), _shingle_set(b.body)
    return len(first & second) / max(1, min(len(first), len(second)))


@functools.cache
def _shingle_set(body: str) -> frozenset[str]:
    return frozenset(fingerprint.shingles(body))


def report(corpus: Corpus, threshold: int) -> list[str]:
    articles = corpus.articles()
    story = {a.url: a.story for a in articles}
    originals = {a.url: a for a, _ in corpus.originals}
    lookups: list[int] = []
    found = detect(articles, threshold, WINDOW, lookups)

    in_store = detect_in_store(articles, threshold).found
    lines = ["| | decisions | precision | reposts | recall |", "|---|---:|---:|---:|---:|"]
    s = score(articles, in_store, story)
    lines.append(
        f"| all, through SqliteStore | {s.decisions} | {s.precision:.4f} | {s.reposts} | {s.recall:.4f} |"
    )
    for name, part in [
        ("all", articles),
        *((lang, [a for a in articles if a.lang == lang]) for lang in LANGS),
    ]:
        s = score(part, found, story)
        lines.append(f"| {name} | {s.decisions} | {s.precision:.4f} | {s.reposts} | {s.recall:.4f} |")
    differ = sum(in_store[url] != found[url] for url in found)
    lines.append(f"\ndecisions where the store and the bench's own detection differ: {differ}")
    wrong = [a for a in articles if (match := found[a.url]) is not None and story[match] != a.story]
    same_topic = sum(originals[story[found[a.url] or ""]].topic == a.topic for a in wrong)
    lines.append(f"\nfalse duplicates: {len(wrong)} ({same_topic} of them about the same event)")

    lines += [
        "",
        "| edit | reposts | detected | recall | bits to the original: min / p5 / median / p95 / max |",
        "|---|---:|---:|---:|---|",
    ]
    for kind in EDIT_KINDS:
        part = [a for a in corpus.reposts if a.edit == kind]
        s = score(part, found, story)
        bits = [d for a in part if (d := distance(a, originals[a.story])) is not None]
        lines.append(f"| {kind} | {s.reposts} | {s.detected} | {s.recall:.3f} | {spread(bits)} |")

    by_topic: dict[int, list[Article]] = defaultdict(list)
    for article in originals.values():
        by_topic[article.topic].append(article)
    same_pairs = [pair for group in by_topic.values() for pair in itertools.combinations(group, 2)]
    rng = random.Random(0)
    pool = list(originals.values())
    other_pairs = [(a, b) for a, b in (rng.sample(pool, 2) for _ in range(20_000)) if a.topic != b.topic]
    repost_bits = [d for a in corpus.reposts if (d := distance(a, originals[a.story])) is not None]
    same_bits = [d for a, b in same_pairs if (d := distance(a, b)) is not None]
    other_bits = [d for a, b in other_pairs if (d := distance(a, b)) is not None]
    same_shared = [shared_shingles(a, b) for a, b in same_pairs]
    repost_shared = [shared_shingles(a, originals[a.story]) for a in corpus.reposts]
    other_shared = [shared_shingles(a, b) for a, b in other_pairs]
    lines += [
        "",
        "| pairs | count | SimHash bits: min / p5 / median / p95 / max | shared shingles: mean / max |",
        "|---|---:|---|---|",
        f"| repost and original | {len(repost_bits)} | {spread(repost_bits)}"
        f" | {statistics.fmean(repost_shared):.3f} / min {min(repost_shared):.3f} |",
        f"| distinct, same event | {len(same_bits)} | {spread(same_bits)}"
        f" | {statistics.fmean(same_shared):.3f} / {max(same_shared):.3f} |",
        f"| distinct, other events (sample) | {len(other_bits)} | {spread(other_bits)}"
        f" | {statistics.fmean(other_shared):.3f} / {max(other_shared):.3f} |",
    ]

    unbanded = sum(
        not set(fingerprint.probe_keys(prints(a.body)[1] or 0))
        & set(fingerprint.band_keys(prints(originals[a.story].body)[1] or 0))
        for a in corpus.reposts
        if (d := distance(a, originals[a.story])) is not None and d <= threshold
    )
    rate = random_pair_rate(threshold)
    close = sum(d <= threshold for d in same_bits + other_bits)
    lines += [
        "",
        f"band lookup: {statistics.fmean(lookups):.1f} candidates per article on average"
        f" (max {max(lookups)}); reposts within {threshold} bits of their original but sharing no band key:"
        f" {unbanded}",
        f"unrelated pairs within {threshold} bits: {close} of the {len(same_bits) + len(other_bits)} distinct"
        f" pairs above; {rate:.1e} of pairs for independent SimHashes (binomial 64, 1/2). SimHash alone,"
        f" a store with W articles in the window would wrongly match about W x {rate:.1e} of new ones"
        f" ({min(1e4 * rate, 1):.2%} at W = 10,000): the shingle check (fingerprint.same_article) confirms"
        " every near match, and unrelated texts share next to no shingles",
    ]

    lines += [
        "",
        "| threshold | SimHash alone: false | precision | recall | with the shingle check: false | precision"
        " | recall | candidates/article |",
    ]
    lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for limit in SWEEP:
        sizes: list[int] = []
        bare = score(articles, detect(articles, limit, WINDOW, verify=False), story)
        s = score(articles, detect(articles, limit, WINDOW, sizes), story)
        mark = " (chosen)" if limit == threshold else ""
        lines.append(
            f"| {limit}{mark} | {bare.decisions - bare.correct} | {bare.precision:.4f} | {bare.recall:.4f}"
            f" | {s.decisions - s.correct} | {s.precision:.4f} | {s.recall:.4f}"
            f" | {statistics.fmean(sizes):.1f} |"
        )
    return lines


# --- the kinds of issue 17: partial reposts, short articles, shared boilerplate ---------------------------

# A legal disclaimer many outlets append (about 90 words): carried by distinct articles, it must never make
# them one, nor may a page that is mostly this disclaimer absorb them.
DISCLAIMER = (
    "This article is provided for general information only and does not constitute financial, legal or"
    " investment advice. Readers should seek independent professional advice before acting on anything in"
    " it. The publisher accepts no liability for any loss arising from the use of this content, and makes"
    " no representation as to its accuracy or completeness. Subscribers may not copy, republish or"
    " redistribute this article, in whole or in part, without the prior written permission of the publisher"
    " and its licensors."
)
# Words of a short article at most (issue 17: recall fell under 200 words).
SHORT_WORDS = 200


def hard_kinds(corpus: Corpus, seed: int) -> dict[str, list[Article]]:
    """Articles of issue 17's kinds, added to ``corpus``'s (English ones):

    - ``partial``: reposts of the first 30 to 60% of an original's paragraphs;
    - ``short+trim``, ``short+links``: short originals (under ``SHORT_WORDS`` words, stored as new
      articles: kind ``short``), reposted with their last paragraph cut, or with a "Related stories" block
      of five headlines appended;
    - ``carrier``: distinct new articles of 1 to 14 paragraphs that each end with the same disclaimer (none
      is a repost);
    - ``dominated``: one page that is mostly the disclaimer and 18 words of its own, stored before the
      carriers (none of them is its repost)."""
    rng = random.Random(seed * 7919 + 17)
    english = [(a, p) for a, p in corpus.originals if a.lang == "en"]
    kinds: dict[str, list[Article]] = defaultdict(list)

    def repost(original: Article, body: str, kind: str, n: int) -> Article:
        first_seen = original.first_seen + timedelta(minutes=rng.randrange(10, 48 * 60))
        url = f"https://aggregator{rng.randrange(12)}.example/{kind}/{n}"
        return Article(
            url, "aggregator", "en", original.topic, original.title, body, first_seen, original.url, kind
        )

    def new(topic: Topic, paragraphs: Sequence[str], kind: str, n: int, hours: float = 0.0) -> Article:
        first_seen = topic.start + timedelta(hours=hours, minutes=rng.randrange(36 * 60))
        url = f"https://{kind}{rng.randrange(30)}.example/{n}"
        body = "\n\n".join(paragraphs)
        return Article(
            url, f"{kind}-site", "en", topic.index, corpus.title(topic), body, first_seen, url, None
        )

    for n, (original, parts) in enumerate(rng.sample(english, min(300, len(english)))):
        keep = max(1, math.ceil(len(parts.paragraphs) * rng.uniform(0.3, 0.6)))
        kinds["partial"].append(
            repost(original, replace(parts, paragraphs=parts.paragraphs[:keep]).body(), "partial", n)
        )
    english_topics = [topic for topic in corpus.topics if topic.lang == "en"]
    for n in range(300):
        topic = rng.choice(english_topics)
        paragraphs: list[str] = []
        for paragraph in corpus.paragraphs(topic):
            if len(" ".join([*paragraphs, paragraph]).split()) > SHORT_WORDS:
                break
            paragraphs.append(paragraph)
        if len(paragraphs) < 2:
            continue
        short = new(topic, paragraphs, "short", n)
        kinds["short"].append(short)
        if n % 2:
            kinds["short+trim"].append(repost(short, "\n\n".join(paragraphs[:-1]), "short+trim", n))
        else:
            related = "Related stories\n\n" + "\n\n".join(
                corpus.title(rng.choice(english_topics)) for _ in range(5)
            )
            kinds["short+links"].append(repost(short, f"{short.body}\n\n{related}", "short+links", n))
    dominated_topic = english_topics[0]
    own = " ".join(corpus.sentence(dominated_topic).split()[:18])
    kinds["dominated"].append(new(dominated_topic, [own, DISCLAIMER], "dominated", 0, hours=-48))
    for n in range(300):
        topic = rng.choice(english_topics)
        own_paragraphs = corpus.paragraphs(topic)
        own_paragraphs = own_paragraphs[: rng.randint(1, len(own_paragraphs))]  # short ones too
        kinds["carrier"].append(new(topic, [*own_paragraphs, DISCLAIMER], "carrier", n))
    return kinds


# SimHash distances the lookup is measured at: up to the pigeonhole bound every one is found by the bands;
# from 12 to the threshold the bands find most, the anchors the rest.
LOOKUP_BUCKETS = ((0, 11), (12, 12), (13, 13), (14, 14), (15, 15), (16, 16))


def hard_report(corpus: Corpus, threshold: int, seed: int) -> list[str]:
    """Issue 17's kinds through SqliteStore with the corpus: recall per repost kind, distinct articles
    dropped per carrier kind; the lookup's recall per SimHash distance; the store's time per article."""
    kinds = hard_kinds(corpus, seed)
    added = [article for part in kinds.values() for article in part]
    articles = corpus.articles() + added
    story = {a.url: a.story for a in articles}
    run = detect_in_store(articles, threshold)
    found = run.found
    lines = [
        "| kind (issue 17) | articles | reposts found | recall | distinct articles dropped |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, part in kinds.items():
        s = score(part, found, story)
        recall = f"{s.recall:.3f}" if s.reposts else "-"
        dropped = sum(1 for a in part if a.edit is None and found[a.url] is not None)
        lines.append(f"| {kind} | {len(part)} | {s.detected} | {recall} | {dropped} |")
    s = score(articles, found, story)
    count = len(articles)
    lines.append(
        f"\nall {count} articles through SqliteStore: precision {s.precision:.4f}, recall {s.recall:.4f}"
    )
    by_url = {a.url: a for a in articles}
    buckets: dict[tuple[int, int], list[bool]] = {bucket: [] for bucket in LOOKUP_BUCKETS}
    for article in articles:
        original = by_url.get(article.story)
        if article.edit is None or original is None or found.get(original.url) is not None:
            continue  # an original, or one whose original is not stored itself
        bits = distance(article, original)
        for low, high in LOOKUP_BUCKETS:
            if bits is not None and low <= bits <= high:
                buckets[(low, high)].append(original.url in run.candidates.get(article.url, ()))
    lines.append("\n| SimHash bits to the original | reposts | found by the lookup | lookup recall |")
    lines.append("|---|---:|---:|---:|")
    for (low, high), hits in buckets.items():
        label = f"{low}-{high}" if low != high else str(low)
        rate = f"{sum(hits) / len(hits):.3f}" if hits else "-"
        lines.append(f"| {label} | {len(hits)} | {sum(hits)} | {rate} |")
    lines.append(
        f"\nper article: the store's write path {run.write_seconds * 1000 / count:.2f} ms (dedup, its lookup"
        f" {run.lookup_seconds * 1000 / count:.2f} ms, and the write); making the document beforehand"
        f" {run.documents_seconds * 1000 / count:.2f} ms (its content hash and SimHash: a crawl's text pool)"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--articles", type=int, default=1200, help="distinct articles (default 1200)")
    parser.add_argument("--topics", type=int, default=40, help="events they are about (default 40)")
    parser.add_argument(
        "--threshold", type=int, default=fingerprint.DEFAULT_MAX_DISTANCE, help="near-duplicate bits"
    )
    parser.add_argument("--corpus", type=Path, default=default_corpus(), help="the extraction dev set")
    # Knobs to measure the fingerprint's tuned constants again (they are read at every call).
    parser.add_argument("--shingle", type=int, default=fingerprint.SHINGLE, help="tokens per shingle")
    parser.add_argument("--lead-weight", type=int, default=fingerprint.LEAD_WEIGHT, help="1: equal weights")
    args = parser.parse_args(argv)
    fingerprint.SHINGLE = args.shingle
    fingerprint.LEAD_WEIGHT = args.lead_weight
    started = time.perf_counter()
    texts = load_texts(args.corpus)
    source = f"sentences of {args.corpus}"
    if not all(texts.get(lang) for lang in LANGS):
        texts = generated_texts(random.Random(args.seed))
        source = f"random words: no {args.corpus}"
    corpus = Corpus(texts, args.topics, args.articles, args.seed)
    short = sum(prints(a.body)[1] is None for a in corpus.articles())
    print(
        f"corpus: {len(corpus.originals)} distinct articles about {len(corpus.topics)} events,"
        f" {len(corpus.reposts)} reposts ({source}); {short} bodies under {fingerprint.MIN_FEATURES} shingles"
    )
    print(
        f"threshold {args.threshold} bits (DEFAULT_MAX_DISTANCE {fingerprint.DEFAULT_MAX_DISTANCE}), window"
        f" {WINDOW.days} days, {fingerprint.SHINGLE}-token shingles, lead weight {fingerprint.LEAD_WEIGHT}\n"
    )
    print("\n".join(report(corpus, args.threshold)))
    print()
    print("\n".join(hard_report(corpus, args.threshold, args.seed)))
    print(f"\nwhole run: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
