"""Text fingerprints for the duplicate-article pass: the normalised text behind the exact hash, and a SimHash
for near duplicates (the same article reposted under another URL with a new headline, a byline, site chrome
or its last paragraph cut).

``simhash`` is Charikar's SimHash over shingles of the normalised text:

1. Normalise: NFKC, case-folded, punctuation and symbols removed, white space collapsed (:func:`normalise`).
2. Tokens: a CJK character is one token, any other run of non-space characters is one, so Chinese and
   English are shingled alike and mixed text needs no language guess.
3. Features: the distinct ``SHINGLE``-token shingles (word 3-shingles in English, character 3-grams in
   Chinese). Shingles run across line breaks, so re-wrapped or re-paragraphed text keeps its features. A
   text with fewer than ``MIN_FEATURES`` of them has no SimHash (None): its fingerprint is not reliable.
4. Weights: a shingle starting in the first ``LEAD_SHINGLES`` tokens (the lead) weighs ``LEAD_WEIGHT``, the
   others 1.
5. Each feature is hashed to 64 bits with BLAKE2b (stable across processes and machines, unlike ``hash()``).
6. Bit ``i`` of the SimHash is 1 when the features with bit ``i`` set weigh more than half of all. The bits
   are counted on big integers, 64 times three operations whatever the number of features, so the cost is
   about one hash per feature (a 5,000-word text in about 5 ms).

Texts sharing most of their weighted features are a few bits apart; texts sharing few (different articles
about one event: same names and keywords, different sentences) are about 32 bits apart, as unrelated texts
are. ``bench/dedup.py`` measures both; it chose ``DEFAULT_MAX_DISTANCE``. A match within it is confirmed
by :func:`same_article` (the bodies' shared shingles), so that two SimHashes close by chance never make
two articles one.

The store keeps 4 band keys per SimHash (:func:`band_keys`, 16 bits each) and looks candidates up by
:func:`probe_keys`: each band's value and every value 1 or 2 bits from it. Two SimHashes at most 11 bits
apart always meet (pigeonhole: 4 bands of 3 flips or more would make 12), most up to the threshold do,
and an unrelated one comes up with a chance of 0.8% (4 x 137 / 65,536): a lookup reads about 1% of the
window, where 8 bands of 8 bits read 3%.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import AnyStr

import regex

from extractors.text import CJK_RE

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "LEAD_SHINGLES",
    "LEAD_WEIGHT",
    "MIN_FEATURES",
    "SAME_ARTICLE_SHARE",
    "SHINGLE",
    "SIMHASH_BANDS",
    "band_keys",
    "from_hex",
    "hamming",
    "normalise",
    "probe_keys",
    "same_article",
    "same_shingles",
    "shingles",
    "simhash",
    "to_hex",
]

# Tokens per shingle. Three words are specific enough that different articles about one event (same names,
# same keywords) share few shingles, and short enough that a small edit touches few of them; three CJK
# characters are about two Chinese words. bench/dedup.py --shingle: with 2, articles about one event share
# 10% of their shingles instead of 4% and the closest pairs come 2 bits nearer; 4 and 5 measure like 3.
SHINGLE = 3
# Below this many distinct shingles (a caption, a brief of a sentence or two) a SimHash is not reliable: a
# five-word byline alone moves a 40-shingle text about 7 bits on average (64/pi * acos(sqrt(40/45))), most
# of the threshold, and short stock texts ("Photo: ...", "Weather: ...") differ in a few words only. Such
# bodies get exact duplicate detection alone.
MIN_FEATURES = 40
# The lead: shingles starting in the first 300 tokens (a news article's first few paragraphs: 300 words, or
# 300 Chinese characters) weigh twice as much as the rest. News is written lead first, and reposts cut its end
# and append chrome there, so a trimmed last paragraph moves the SimHash about half as far.
# bench/dedup.py --lead-weight 1 (equal weights): recall at the threshold 0.93-0.95 instead of 0.96-0.98
# (seeds 1-3); leads of 200 to 300 tokens measured best, 150 and 400 a point lower, weight 3 like 2.
LEAD_SHINGLES = 300
LEAD_WEIGHT = 2
# Band keys of a SimHash: 4 bands of 16 bits, looked up with up to 2 bits flipped in a band (pigeonhole:
# within 11 bits, some band differs in 2 bits at most). bench/dedup.py seeds 1-3: of the reposts within the
# threshold, this finds 725/728, 764/767, 781/784, where 8 bands of 8 bits (same value) found 719, 761, 778
# while reading 3.7 times as many unrelated candidates.
SIMHASH_BANDS = 4
_BAND_BITS = 64 // SIMHASH_BANDS
_PROBE_FLIPS = 2
# Near-duplicate threshold in bits; every match within it is confirmed by same_article. bench/dedup.py
# (1,200 articles about 40 events, English and Chinese, 731 reposts with one or two edits, seed 1): reposts
# are median 4, p95 10 bits from their original; different articles about one event at least 16 (p5 25,
# median 31). SimHash alone is exact up to 14 bits and lets false matches in from 16 (precision 0.993),
# and chance collisions grow with the articles in the window (W x 3.9e-5 at 16 bits); with the shingle
# check, precision stays 1.000 up to 24 bits. 16: recall 0.992 through SqliteStore (seeds 1-3: 0.991 to
# 0.994); further out few reposts remain, and the band lookup finds fewer of them.
DEFAULT_MAX_DISTANCE = 16

# A near match (SimHash within the threshold) is confirmed when this share of the shorter body's distinct
# shingles is in the other body too. bench/dedup.py (seed 1): a repost keeps at least 0.79 of them (p1
# 0.85, median 0.997), different articles about one event share 0.26 at most. Templated news (two "company
# opens a warehouse" stories of the bundled demo sites, built from one pool of stock sentences) share 0.55:
# different articles all the same, which 0.7 keeps apart. Two unrelated texts whose SimHashes are close by
# chance share next to none, so the check also keeps chance matches from growing with the window.
SAME_ARTICLE_SHARE = 0.7

# Punctuation and symbols (© | · • and the like): removed, so "U.S." and "U.S" hash alike.
_PUNCT_RE = regex.compile(r"[\p{P}\p{S}]+")
# A token: one CJK character (the class of extractors.text.CJK_RE), or a run of other non-space characters.
_TOKEN_RE = re.compile(rf"{CJK_RE.pattern}|[^\s{CJK_RE.pattern[1:-1]}]+")
_HEX_DIGITS = frozenset("0123456789abcdef")


def normalise(text: str) -> str:
    """``text`` NFKC-normalised, case-folded, with punctuation and symbols removed and every run of white
    space made one space: the text of the exact hash and of the SimHash shingles."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT_RE.sub(" ", folded).split())


def shingles(text: str) -> list[str]:
    """The token shingles of ``text`` in text order, repeats included: ``SHINGLE`` consecutive tokens of
    its normalised text (a CJK character is a token, other tokens are split on white space), joined by a
    space. A text of fewer tokens has one shingle, all of them."""
    return _joined(_tokens(normalise(text)), " ")


def _tokens(normalised: str) -> list[str]:
    return _TOKEN_RE.findall(normalised) if CJK_RE.search(normalised) else normalised.split()


def _joined(tokens: Sequence[AnyStr], space: AnyStr) -> list[AnyStr]:
    """Every ``SHINGLE`` consecutive tokens joined by ``space`` (all of them when fewer)."""
    if len(tokens) <= SHINGLE:
        return [space.join(tokens)] if tokens else []
    return list(map(space.join, zip(*(tokens[i:] for i in range(SHINGLE)), strict=False)))


def simhash(text: str, *, normalised: bool = False) -> int | None:
    """The 64-bit SimHash (unsigned) of ``text``'s shingles, those of the lead counting ``LEAD_WEIGHT``
    times; None when it has fewer than ``MIN_FEATURES`` distinct shingles (an empty or very short text),
    whose fingerprint would not be reliable. ``normalised``: ``text`` is :func:`normalise`'s already."""
    if not normalised:
        text = normalise(text)
    # The shingles as the UTF-8 bytes their digests hash: the tokens encoded once, not every shingle (a
    # normalised text's tokens are split by single ASCII spaces, so the encoded text splits alike).
    if CJK_RE.search(text):
        tokens = [token.encode("utf-8") for token in _tokens(text)]
    else:
        tokens = text.encode("utf-8").split()
    sequence = _joined(tokens, b" ")
    lead = set(sequence[:LEAD_SHINGLES])
    rest = set(sequence[LEAD_SHINGLES:]) - lead
    if len(lead) + len(rest) < MIN_FEATURES:
        return None
    # One 8-byte digest per feature, a lead feature's repeated: the vote below counts each copy.
    digests = _digests(lead) * LEAD_WEIGHT + _digests(rest)
    votes = len(digests) // 8
    # Bit ``bit`` of every digest's byte ``column`` (byte 0 holds bits 63..56), as one big integer each:
    # the count of set bits is then three integer operations, not a loop over the features.
    ones = int.from_bytes(b"\x01" * votes)
    value = 0
    for column in range(8):
        column_bits = int.from_bytes(digests[column::8])
        for bit in range(8):
            if 2 * ((column_bits >> bit) & ones).bit_count() > votes:
                value |= 1 << ((7 - column) * 8 + bit)
    return value


def same_article(a: str, b: str) -> bool:
    """Whether two bodies whose SimHashes are close are the same article: at least
    ``SAME_ARTICLE_SHARE`` of the shorter one's distinct shingles are in the other."""
    return same_shingles(set(shingles(a)), set(shingles(b)))


def same_shingles(first: set[str], second: set[str]) -> bool:
    """:func:`same_article` of two bodies given by their sets of shingles."""
    smaller = min(len(first), len(second))
    return smaller > 0 and len(first & second) >= SAME_ARTICLE_SHARE * smaller


def _digests(features: set[bytes]) -> bytes:
    blake2b = hashlib.blake2b
    return b"".join([blake2b(feature, digest_size=8).digest() for feature in features])


def hamming(a: int, b: int) -> int:
    """Number of bits in which two SimHashes differ."""
    return (a ^ b).bit_count()


def band_keys(h: int) -> list[int]:
    """The ``SIMHASH_BANDS`` keys a store keeps for SimHash ``h``: band ``i`` (bits ``16i`` to ``16i + 15``)
    gives key ``i * 65536 + value``, so keys of different bands never collide."""
    mask = (1 << _BAND_BITS) - 1
    return [band << _BAND_BITS | (h >> (band * _BAND_BITS)) & mask for band in range(SIMHASH_BANDS)]


def probe_keys(h: int) -> list[int]:
    """The keys to look up for SimHash ``h``: each of its band keys with 0, 1 or 2 of the band's bits
    flipped (4 x 137). Any stored SimHash at most 11 bits from ``h`` has one of them."""
    flips = [0, *(1 << bit for bit in range(_BAND_BITS))]
    flips += [(1 << a) | (1 << b) for a in range(_BAND_BITS) for b in range(a + 1, _BAND_BITS)]
    return [key ^ flip for key in band_keys(h) for flip in flips]


def to_hex(h: int) -> str:
    """SimHash ``h`` as 16 lower-case hex digits (stores keep it as text: their integers are signed)."""
    if not 0 <= h < 1 << 64:
        raise ValueError(f"SimHash {h!r} is out of range: expected an unsigned 64-bit integer")
    return f"{h:016x}"


def from_hex(s: str) -> int:
    """The SimHash written by :func:`to_hex`."""
    if len(s) != 16 or not _HEX_DIGITS.issuperset(s):
        raise ValueError(f"SimHash {s!r} is not a SimHash: expected 16 lower-case hex digits")
    return int(s, 16)
