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
are. ``bench/dedup.py`` measures both; it chose ``DEFAULT_MAX_DISTANCE``. The store confirms a match
within it on the bodies' distinctive phrases (:func:`same_or_part`, below), so that two SimHashes close by
chance never make two articles one; :func:`same_article`, the same check on all their shingles, is the
reference ``bench/dedup.py`` measured the threshold with.

The store keeps 4 band keys per SimHash (:func:`band_keys`, 16 bits each), and looks candidates up by
those keys and by the body's anchors (step 3 below). The anchors find what the threshold promises: every
repost up to 16 bits away in ``bench/dedup.py``, where the bands alone, even probed with every value 1 or
2 bits from each band's (:func:`probe_keys`: 548 keys, two thirds of the lookup's time), found about 60%
of those 15 and 16 bits away.

A repost may also be a part of its original (an outlet republishes its first paragraphs), or the original
a part of it (a short article with a block of links appended): far apart in SimHash bits, though one
holds the other. :class:`Phrases` decides on containment, on the phrases that are the body's own:

1. **Paragraphs**: each line of at least ``PARAGRAPH_TOKENS`` tokens, normalised, is hashed
   (:func:`paragraph_hashes`); a store counts in how many stored documents each one occurs. A paragraph in
   ``COMMON_DOCUMENTS`` or more of them besides the stored one compared with (:func:`common_of`: a
   disclaimer, a paywall notice, a newsletter call) is boilerplate.
2. **Distinctive shingles**: the 64-bit hashes of the shingles of the body's lines, but its boilerplate
   paragraphs' (:meth:`Phrases.of`). Shingles here stay within a line: a line's are kept or left out
   with it.
3. **Anchors**: a stored document keeps its ``ANCHORS`` smallest distinctive shingle hashes (a bottom-k
   sketch) in an index; a new body looks up its ``ANCHOR_PROBES`` smallest. A body that holds a share
   ``p`` of another's shingles holds each of its anchors with chance ``p``: a repost of 30% of its
   original misses all 16 with chance 0.7^16 = 0.3%; whichever body is the part, the part's smallest
   hashes that the other holds are among the other's smallest too.
4. **Decision** (:func:`same_or_part`): the share of the shorter body's distinctive shingles found in the
   longer one. Bodies of about one length (the shorter at least ``PART_RATIO`` of the longer) are one
   article from ``SAME_ARTICLE_SHARE`` (edits, rephrased sentences); one much shorter must be found
   nearly whole (``PART_SHARE``), since a part that is a repost is copied, not rewritten.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import AnyStr

import regex
import xxhash

from extractors.text import CJK_RE

__all__ = [
    "ANCHORS",
    "ANCHOR_PROBES",
    "COMMON_DOCUMENTS",
    "DEFAULT_MAX_DISTANCE",
    "LEAD_SHINGLES",
    "LEAD_WEIGHT",
    "MIN_FEATURES",
    "OWN_SHARE",
    "PARAGRAPH_TOKENS",
    "PART_RATIO",
    "PART_SHARE",
    "SAME_ARTICLE_SHARE",
    "SHINGLE",
    "SIMHASH_BANDS",
    "Phrases",
    "band_keys",
    "common_of",
    "from_hex",
    "hamming",
    "normalise",
    "paragraph_hashes",
    "probe_keys",
    "same_article",
    "same_or_part",
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
# Band keys of a SimHash: 4 bands of 16 bits. Probed with up to 2 bits flipped in a band (probe_keys, the
# bench's SimHash-only lookup; pigeonhole: within 11 bits, some band differs in 2 bits at most), they found
# 725/728, 764/767, 781/784 of the reposts within the threshold (bench/dedup.py seeds 1-3), where 8 bands of
# 8 bits (same value) found 719, 761, 778 while reading 3.7 times as many unrelated candidates.
SIMHASH_BANDS = 4
_BAND_BITS = 64 // SIMHASH_BANDS
_PROBE_FLIPS = 2
# Near-duplicate threshold in bits; every match within it is confirmed on the bodies (same_or_part; in
# bench/dedup.py's SimHash-only reference, same_article). bench/dedup.py
# (1,200 articles about 40 events, English and Chinese, 731 reposts with one or two edits, seed 1): reposts
# are median 4, p95 10 bits from their original; different articles about one event at least 16 (p5 25,
# median 31). SimHash alone is exact up to 14 bits and lets false matches in from 16 (precision 0.993),
# and chance collisions grow with the articles in the window (W x 3.9e-5 at 16 bits); with the shingle
# check, precision stays 1.000 up to 24 bits. 16: recall 0.992 through SqliteStore with the band lookup
# (seeds 1-3: 0.991 to 0.994); further out few reposts remain that are not partial (those the anchors find).
DEFAULT_MAX_DISTANCE = 16

# A near match (SimHash within the threshold) is confirmed when this share of the shorter body's distinct
# shingles is in the other body too. bench/dedup.py (seed 1): a repost keeps at least 0.79 of them (p1
# 0.85, median 0.997), different articles about one event share 0.26 at most. Templated news (two "company
# opens a warehouse" stories of the bundled demo sites, built from one pool of stock sentences) share 0.55:
# different articles all the same, which 0.7 keeps apart. Two unrelated texts whose SimHashes are close by
# chance share next to none, so the check also keeps chance matches from growing with the window.
SAME_ARTICLE_SHARE = 0.7
# A body shorter than this share of the other (in distinctive shingles) is a part of it when it is found in
# it at PART_SHARE or more. bench/dedup.py seed 1: reposts with one or two edits keep 0.81 of their
# original's length or more 95 times in 100 (at least 0.64); partial reposts are 0.19 to 0.92 of it (median
# 0.56); a short article with five headlines appended is 0.76 to 0.89 of its repost.
PART_RATIO = 0.8
# A part is copied, not rewritten: partial reposts share 1.000 of their shingles with the whole (seed 1, all
# 300), reposts with edits 0.80 at least (1 in 100 under 0.87). A page that is mostly a disclaimer and a
# line of its own shares 0.82 with any article carrying the disclaimer, before the disclaimer is known as
# boilerplate (step 1): under this.
PART_SHARE = 0.9
# The shorter body's own shingles found in the longer must be this share of all its shingles (boilerplate
# included) too: two bodies that share a little besides their boilerplate are not one article, however
# little else they have. bench/crawl.py's generated site draws each article's 5 to 9 paragraphs from a pool
# of 1,000 (each in about 28 articles): without it, an article stored early, whose paragraphs had become
# common but one, was found whole in a later article, which was taken for its repost (2,258 of 4,000).
OWN_SHARE = 0.5
# Tokens a line needs to be counted as a paragraph (and to be boilerplate when common): a byline or a share
# line ("By Jane Doe, Staff Reporter", "Share on Facebook · Email") has them; "Related stories" is too short
# to say anything.
PARAGRAPH_TOKENS = 4
# Stored documents a paragraph occurs in, besides the one compared with (common_of), to be boilerplate.
# Two: a repost is not stored, so an article's own paragraph is in one stored document (its original's)
# however often it is reposted, two if it was stored twice; two more documents carrying it make it
# shared text.
COMMON_DOCUMENTS = 2
# Anchors a stored document keeps (its smallest distinctive shingle hashes), and the smallest hashes a new
# body looks up: a part of 30% misses all 16 anchors of its whole with chance 0.3%; a body that holds a
# shorter one finds its anchors among its 32 smallest when the shorter is half its length or more.
ANCHORS = 16
ANCHOR_PROBES = 32
# Bodies whose lines' hashes are kept (8 KB for 1,000 words, and the body, the cache's key: 17 KB in all),
# and bodies whose phrases are (sets: about 70 KB for 1,000 words): the stored articles a burst of reposts of
# one story is compared with are read again and again. bench/dedup.py: 1.3 ms an article in the store so,
# 2.0 ms with 256 bodies kept as sets and no more. Together about 87 MB at 1,000 words (docs/performance.md).
LINES_CACHED = 4096
PHRASES_CACHED = 256
# Paragraph hashes are kept in 63 bits: SQLite and MongoDB integers are signed 64-bit.
_HASH_MASK = (1 << 63) - 1

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


def paragraph_hashes(text: str) -> list[int]:
    """The hashes of ``text``'s paragraphs (its lines of ``PARAGRAPH_TOKENS`` tokens or more, normalised),
    each once, in text order."""
    return list(dict.fromkeys(paragraph for paragraph, _ in _lines(text) if paragraph is not None))


@functools.lru_cache(maxsize=PHRASES_CACHED)
def _phrases(text: str, boilerplate: frozenset[int]) -> Phrases:
    """:meth:`Phrases.of` once its boilerplate is known: a stored body is compared with many new ones."""
    lines = _lines(text)
    kept = b"".join(hashes for paragraph, hashes in lines if paragraph not in boilerplate)
    own = frozenset(array("Q", kept))
    if not boilerplate:
        return Phrases(own, len(own))
    return Phrases(own, len(frozenset(array("Q", b"".join(hashes for _, hashes in lines)))))


@dataclass(frozen=True)
class Phrases:
    """A body's distinctive shingles (see the module docstring, step 2): their 64-bit hashes."""

    shingles: frozenset[int]
    # The body's shingles, boilerplate included: how many.
    total: int

    @classmethod
    def of(cls, text: str, common: Callable[[list[int]], Iterable[int]] | None = None) -> Phrases:
        """The shingles of ``text``'s lines but its paragraphs that ``common`` (given the paragraphs'
        hashes) says are boilerplate."""
        paragraphs = paragraph_hashes(text)
        boilerplate = frozenset(common(paragraphs)) if common is not None and paragraphs else frozenset()
        return _phrases(text, boilerplate)

    @functools.cached_property
    def smallest(self) -> tuple[int, ...]:
        """The ``ANCHOR_PROBES`` smallest shingle hashes, in order."""
        return tuple(sorted(self.shingles)[:ANCHOR_PROBES])  # a C sort: faster than heapq here

    def anchors(self, count: int = ANCHORS) -> list[int]:
        """The ``count`` smallest shingle hashes (a bottom-k sketch, ``count`` at most ``ANCHOR_PROBES``),
        signed as stores keep 64-bit integers: the anchors a store indexes (``ANCHORS``), or those a new
        body looks up (``ANCHOR_PROBES``)."""
        return [h - (1 << 64) if h >> 63 else h for h in self.smallest[:count]]


def common_of(
    counts: Callable[[list[int]], Mapping[int, int]], besides: Collection[int] = ()
) -> Callable[[list[int]], list[int]]:
    """The boilerplate test :meth:`Phrases.of` takes, from ``counts`` (paragraph hash -> the stored
    documents it occurs in): ``COMMON_DOCUMENTS`` or more, not counting the stored document compared with
    (``besides``: its paragraphs). An article stored twice (out of each other's window, or missed) keeps
    its paragraphs its own when a third copy is compared with either."""

    def common(hashes: list[int]) -> list[int]:
        found = counts(hashes)
        return [h for h in hashes if found.get(h, 0) - (h in besides) >= COMMON_DOCUMENTS]

    return common


def same_or_part(shorter: Phrases, longer: Phrases) -> tuple[bool, float, float]:
    """Whether two bodies are one article, either whole or one a part of the other (step 4); the share of
    the shorter's shingles found in the longer, and the shorter's length as a share of the longer's."""
    if len(shorter.shingles) > len(longer.shingles):
        shorter, longer = longer, shorter
    size = len(shorter.shingles)
    if size < MIN_FEATURES:  # too little of its own to tell
        return False, 0.0, 0.0
    shared = len(shorter.shingles & longer.shingles)
    share, ratio = shared / size, size / len(longer.shingles)
    enough = share >= (SAME_ARTICLE_SHARE if ratio >= PART_RATIO else PART_SHARE)
    return enough and shared >= OWN_SHARE * shorter.total, share, ratio


@functools.lru_cache(maxsize=LINES_CACHED)
def _lines(text: str) -> tuple[tuple[int | None, bytes], ...]:
    """Each line of ``text`` with words: its paragraph hash (None under ``PARAGRAPH_TOKENS`` tokens) and the
    hashes of its shingles (xxHash64: a tenth of BLAKE2b's time, and these hashes need no more), packed as
    unsigned 64-bit integers (8 bytes a shingle, a seventh of a set's memory)."""
    hashed = xxhash.xxh64_intdigest
    lines = []
    # normalise(), line by line: one pass of each step over the whole text.
    folded = _PUNCT_RE.sub(" ", unicodedata.normalize("NFKC", text).casefold())
    for line in folded.splitlines():
        normalised = " ".join(line.split())
        if not normalised:
            continue
        if CJK_RE.search(normalised):
            tokens = [token.encode("utf-8") for token in _tokens(normalised)]
        else:
            tokens = normalised.encode("utf-8").split()
        paragraph = None
        if len(tokens) >= PARAGRAPH_TOKENS:
            paragraph = hashed(normalised.encode("utf-8")) & _HASH_MASK
        lines.append((paragraph, array("Q", map(hashed, _joined(tokens, b" "))).tobytes()))
    return tuple(lines)


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
    """The keys a SimHash-only lookup probes for SimHash ``h`` (``bench/dedup.py``'s reference): each of
    its band keys with 0, 1 or 2 of the band's bits flipped (4 x 137). Any stored SimHash at most 11 bits
    from ``h`` has one of them."""
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
