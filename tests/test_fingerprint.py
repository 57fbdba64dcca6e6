"""Text fingerprints of the duplicate-article pass: normalised text, SimHash, band keys, hex form."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.store import fingerprint
from crawler.store.fingerprint import (
    DEFAULT_MAX_DISTANCE,
    band_keys,
    from_hex,
    hamming,
    normalise,
    probe_keys,
    shingles,
    simhash,
    to_hex,
)

# One event, two outlets: the same names, numbers and keywords, different sentences. Hard-wrapped, as line
# breaks do not count.
BRIDGE = """Marlow Bay closed the Northgate Bridge to all traffic on Tuesday after inspectors found cracks
in two of its steel support beams, sending about 40,000 daily commuters onto ferries and a long detour
around the harbour.

Elena Ruiz, the city's chief engineer, said the cracks were discovered during a routine ultrasound survey on
Monday night. "We could not in good conscience let another truck cross that span," she told a news
conference at City Hall, adding that the bridge would stay shut at least until the end of the month.

The Marlow Bay Transit Authority added six extra ferry crossings an hour and laid on shuttle buses from the
northern suburbs. Queues at the ferry terminal stretched past the fish market by seven in the morning, and
several schools on the north shore opened late.

The bridge, which opened in 1968, carries the main road between the harbour district and the industrial
estates to the north. A report commissioned by the council two years ago warned that its beams were nearing
the end of their design life and put the cost of a full refurbishment at $12 million.

Councillor Mark Osei, who chairs the transport committee, said the report had been shelved because of budget
pressure. He called for an independent review of every bridge the city maintains and asked the mayor to
publish the survey results in full.

Local businesses on both sides of the river said the closure was already costing them customers. The owner
of a bakery near the southern ramp said takings had halved on the first morning.

Engineers will spend the coming week deciding whether the beams can be braced temporarily or must be
replaced before any traffic returns."""

BRIDGE_OTHER = """Commuters in Marlow Bay faced chaos on Tuesday morning as the Northgate Bridge stayed
closed, with city engineers warning that cracked support beams could keep it out of action for weeks.

Chief engineer Elena Ruiz told reporters that two steel beams had failed an ultrasound inspection late on
Monday. Her team is now checking the remaining beams one by one, and she declined to say when the span might
reopen to cars and trucks.

For the roughly 40,000 people who drive across the harbour each day, the closure meant a detour of more than
twenty minutes or a crowded ferry. The Marlow Bay Transit Authority said ferry ridership tripled before nine
o'clock, and it asked employers to let staff start later where they could.

Opposition councillors seized on a two-year-old consultants' study that priced repairs at $12 million. Mark
Osei, head of the transport committee, accused the mayor's office of ignoring the warning to save money, a
charge the mayor's spokesman rejected as political point-scoring.

Built in 1968, the bridge has been patched several times, most recently after a barge struck one of its
piers in 2019. Residents of the harbour district said they had complained for years about loose railings and
potholes on the deck.

The council will hold an emergency meeting on Thursday to decide how to pay for the work."""

YANGTZE = """本报讯 11月20日上午，江城市长江大桥因桥面出现多处裂缝实施全封闭，每天约四
万辆过江车辆被迫绕行。

江城市交通运输局局长王建华在现场表示，检测人员在例行检查中发现两根钢梁存在裂纹，为确保安全，决定立即封闭
大桥，预计封闭时间不少于一个月。

封闭期间，市公交集团新增六条过江轮渡航线，并在北岸开通接驳公交。早高峰时段，轮渡码头排起长队，部分学校推
迟上课。

据了解，长江大桥建成于1968年，是连接老城区与北部工业园区的主要通道。两年前的一份评估报告曾指出，大桥
钢梁已接近设计使用年限，全面维修需要资金约一千二百万元。

市人大代表李明认为，相关部门应当公开检测结果，并对全市桥梁开展全面安全评估。桥头附近的商户表示，封桥第一
天生意就减少了一半。

下一步，专家组将在一周内论证钢梁能否临时加固，还是必须更换后才能恢复通行。"""

YANGTZE_OTHER = """长江大桥封闭第二天，江城市民的出行依旧不轻松。早上七点，北岸轮渡码
头已经排起数百米长队，不少上班族干脆提前一个小时出门。

王建华在接受采访时说，两根钢梁的裂纹是在超声波检测中被发现的，目前检测人员正在逐一排查其余钢梁，暂时无法
确定恢复通车的时间。

对于每天驾车过江的约四万名市民来说，绕行意味着至少多花二十分钟。市公交集团称，轮渡客流比平时增加了两倍，
希望各单位能够错峰上班。

一些市人大代表翻出两年前的评估报告，报告估算维修费用约为一千二百万元。李明质疑有关部门为节省开支搁置了维
修计划，市政府新闻发言人则表示，维修计划一直在按程序推进。

这座1968年建成的大桥此前已经多次维修，2019年还曾被一艘驳船撞击桥墩。周四，市政府将召开专题会议研
究维修资金问题。"""


def repost(body: str, top: list[str], bottom: list[str]) -> str:
    return "\n\n".join([*top, body, *bottom])


def test_normalise_folds_case_width_punctuation_and_space() -> None:
    assert normalise("  Hello,\n\tWORLD!  ") == "hello world"
    assert normalise("ＡＢＣ　１２３") == "abc 123"  # NFKC: full-width letters, digits and space
    assert normalise("Straße") == "strasse"  # case folding, not only lower-casing
    assert normalise("“Don’t” — stop… U.S.") == "don t stop u s"
    assert (
        normalise("© 2026 Coastal Herald | All rights reserved.") == "2026 coastal herald all rights reserved"
    )
    assert normalise("北京，你好！\n（记者 张三）") == "北京 你好 记者 张三"
    assert normalise("") == ""
    assert normalise(" ,.;!? ") == ""


def test_shingles_are_word_3_grams_and_cjk_character_3_grams() -> None:
    assert shingles("The cat sat on the mat.") == ["the cat sat", "cat sat on", "sat on the", "on the mat"]
    assert shingles("长江大桥封闭") == ["长 江 大", "江 大 桥", "大 桥 封", "桥 封 闭"]
    assert shingles("Ruiz 说，大桥") == ["ruiz 说 大", "说 大 桥"]
    assert shingles("Two words") == ["two words"]
    assert shingles("") == []


def test_simhash_ignores_case_punctuation_and_line_breaks() -> None:
    reference = simhash(BRIDGE)
    assert reference is not None
    assert simhash(BRIDGE) == reference
    assert simhash(" ".join(BRIDGE.split())) == reference
    assert simhash(BRIDGE.upper().replace(", ", " ").replace(".", "!")) == reference
    assert hamming(reference, reference) == 0


def test_simhash_values_are_fixed() -> None:
    # Stores keep SimHashes: a change of the algorithm or of its constants changes these values, and the
    # stored ones then need computing again.
    assert to_hex(simhash(BRIDGE) or 0) == "1c256c9d51300b86"
    assert to_hex(simhash(YANGTZE) or 0) == "0a71e9d134db75f6"


@pytest.mark.parametrize("hash_seed", ["1", "4242"])
def test_simhash_does_not_depend_on_the_python_hash_seed(hash_seed: str) -> None:
    code = (
        "import sys\n"
        "from crawler.store.fingerprint import simhash, to_hex\n"
        "print(to_hex(simhash(sys.stdin.read())))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    for text in (BRIDGE, YANGTZE):
        result = subprocess.run(
            [sys.executable, "-c", code], input=text, env=env, capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == to_hex(simhash(text) or 0)


@pytest.mark.parametrize(
    ("text", "top", "bottom"),
    [
        (BRIDGE, ["By Tom Hale, Staff Reporter"], []),
        (BRIDGE, ["Share this article", "Advertisement"], ["Read more: Ferry fares frozen for a year"]),
        (
            BRIDGE,
            ["Share this article", "By Tom Hale, Staff Reporter"],
            ["© 2026 Coastal Herald. All rights reserved.", "Related: Budget vote | Harbour plan | Weather"],
        ),
        (YANGTZE, ["本报记者 张三"], []),
        (
            YANGTZE,
            ["分享到：微信 微博 QQ空间", "（记者 张三 通讯员 李四）"],
            ["责任编辑：王五", "版权所有 © 2026 江城日报"],
        ),
    ],
)
def test_a_repost_with_a_byline_or_chrome_is_within_the_threshold(
    text: str, top: list[str], bottom: list[str]
) -> None:
    original, reposted = simhash(text), simhash(repost(text, top, bottom))
    assert original is not None and reposted is not None
    assert hamming(original, reposted) <= DEFAULT_MAX_DISTANCE


@pytest.mark.parametrize("text", [BRIDGE, YANGTZE])
def test_a_repost_without_its_last_paragraph_is_within_the_threshold(text: str) -> None:
    trimmed = text.rsplit("\n\n", 1)[0]
    original, reposted = simhash(text), simhash(trimmed)
    assert original is not None and reposted is not None
    assert hamming(original, reposted) <= DEFAULT_MAX_DISTANCE


@pytest.mark.parametrize(("first", "second"), [(BRIDGE, BRIDGE_OTHER), (YANGTZE, YANGTZE_OTHER)])
def test_two_articles_about_the_same_event_are_beyond_the_threshold(first: str, second: str) -> None:
    a, b = simhash(first), simhash(second)
    assert a is not None and b is not None
    assert hamming(a, b) > DEFAULT_MAX_DISTANCE + 4


def test_short_texts_have_no_simhash() -> None:
    assert simhash("") is None
    assert simhash("   ") is None
    assert simhash("Photo: the Northgate Bridge at dawn. Credit: Elena Ruiz") is None
    assert simhash("长江大桥今天封闭。") is None
    enough = " ".join(f"word{i}" for i in range(fingerprint.MIN_FEATURES + fingerprint.SHINGLE - 1))
    assert len(set(shingles(enough))) == fingerprint.MIN_FEATURES
    assert simhash(enough) is not None
    assert simhash(enough.rsplit(" ", 1)[0]) is None


def test_band_keys_are_one_per_band_in_separate_ranges() -> None:
    h = 0x0123456789ABCDEF
    assert band_keys(h) == [0xCDEF, 65536 + 0x89AB, 2 * 65536 + 0x4567, 3 * 65536 + 0x0123]
    assert band_keys(0) == [band * 65536 for band in range(fingerprint.SIMHASH_BANDS)]
    probes = probe_keys(h)
    assert len(probes) == len(set(probes)) == 4 * (1 + 16 + 120)
    assert set(band_keys(h)) <= set(probes)
    assert all(
        band * 65536 <= key < (band + 1) * 65536
        for band in range(4)
        for key in probes[band * 137 : (band + 1) * 137]
    )


@given(
    st.integers(min_value=0, max_value=2**64 - 1),
    st.sets(st.integers(min_value=0, max_value=63), max_size=11),
)
def test_simhashes_within_11_bits_always_meet(h: int, flipped: set[int]) -> None:
    other = h
    for bit in flipped:
        other ^= 1 << bit
    assert hamming(h, other) == len(flipped)
    assert set(probe_keys(h)) & set(band_keys(other))
    assert set(probe_keys(other)) & set(band_keys(h))


def test_three_flips_in_every_band_are_not_found() -> None:
    h = 0
    other = sum(1 << (band * 16 + bit) for band in range(4) for bit in range(3))
    assert hamming(h, other) == 12
    assert not set(probe_keys(h)) & set(band_keys(other))


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_hex_round_trip(h: int) -> None:
    text = to_hex(h)
    assert len(text) == 16 and text == text.lower()
    assert from_hex(text) == h


def test_hex_rejects_what_is_not_a_simhash() -> None:
    assert to_hex(0) == "0" * 16
    assert to_hex(2**64 - 1) == "f" * 16
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            to_hex(bad)
    for text in ("", "abc", "0123456789ABCDEF", "0123456789abcdeg", "0x23456789abcdef"):
        with pytest.raises(ValueError, match="16 lower-case hex digits"):
            from_hex(text)


# --- phrases: containment and boilerplate ----------------------------------------------------------------


def test_a_paragraph_hash_ignores_case_punctuation_and_short_lines() -> None:
    text = "Related stories\n\nThe Council Met On Tuesday, In Private!\n\nBy Jo Ng"
    same = "the council met on tuesday in private"
    assert fingerprint.paragraph_hashes(text) == fingerprint.paragraph_hashes(same)
    assert len(fingerprint.paragraph_hashes(text)) == 1, "'Related stories' and 'By Jo Ng' are too short"


def test_boilerplate_paragraphs_take_their_phrases_out() -> None:
    disclaimer = "This article is general information and no advice of any kind whatsoever."
    text = f"{BRIDGE}\n\n{disclaimer}"
    everything = fingerprint.Phrases.of(text)
    (boilerplate,) = fingerprint.paragraph_hashes(disclaimer)
    own = fingerprint.Phrases.of(text, lambda hashes: [h for h in hashes if h == boilerplate])
    assert own.shingles == fingerprint.Phrases.of(BRIDGE).shingles
    assert len(everything.shingles) - len(own.shingles) == len(shingles(disclaimer))


def _phrases(shingles: frozenset[int], boilerplate: int = 0) -> fingerprint.Phrases:
    return fingerprint.Phrases(shingles, len(shingles) + boilerplate)


def test_a_part_must_be_found_nearly_whole_a_resemblance_mostly() -> None:
    whole = _phrases(frozenset(range(1000)))
    assert fingerprint.same_or_part(_phrases(frozenset(range(400))), whole)[0], "a 40% prefix"
    part_with_edits = _phrases(frozenset(range(340)) | frozenset(range(5000, 5060)))
    same, share, ratio = fingerprint.same_or_part(part_with_edits, whole)
    assert (same, share, ratio) == (False, 0.85, 0.4), "a part is copied: 85% shared is too little"
    edited = _phrases(frozenset(range(240, 1000)) | frozenset(range(5000, 5190)))
    same, share, ratio = fingerprint.same_or_part(whole, edited)
    assert same and share == 0.8 and ratio == 0.95, "one length: 80% shared is enough"
    tiny = _phrases(frozenset(range(30)))
    assert not fingerprint.same_or_part(tiny, whole)[0], "under MIN_FEATURES phrases: too little to tell"
    mostly_boilerplate = _phrases(frozenset(range(100)), boilerplate=150)
    assert not fingerprint.same_or_part(mostly_boilerplate, whole)[0], "its own phrases under OWN_SHARE"
    assert fingerprint.same_or_part(_phrases(frozenset(range(100)), boilerplate=90), whole)[0]


@given(st.integers(min_value=0, max_value=2**32), st.floats(min_value=0.3, max_value=1.0))
def test_a_part_finds_its_wholes_anchors_among_its_own_smallest(seed: int, share: float) -> None:
    words = [f"w{(seed * 7919 + n * 104729) % 1000003}" for n in range(600)]
    whole = fingerprint.Phrases.of(" ".join(words))
    part = fingerprint.Phrases.of(" ".join(words[: int(600 * share)]))
    anchors = set(whole.anchors())
    in_part = {a for a in anchors if (a + (1 << 64) if a < 0 else a) in part.shingles}
    assert in_part <= set(part.anchors(fingerprint.ANCHOR_PROBES)), "what the part holds, it probes"
    assert all(-(1 << 63) <= a < 1 << 63 for a in anchors), "signed 64-bit, as stores keep integers"
