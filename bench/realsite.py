"""The real-page bench site of ``bench/crawl.py --site real``: real article pages, many distinct copies.

The pages are the English ones of the extraction corpora beside the checkout (``../shared/extraction-dev``,
``html/<id>.html``, 150 English pages of 219; ``../shared/extraction-train``, ``html/<id>.html.gz``, 544),
each with its ground-truth main text (``truth/<id>.txt``), less the pages whose truth repeats an earlier
page's (:func:`repeats`: two pages of 694, whose copies would be reposts of each other). Article ``n`` is copy
``n // P`` of page ``n % P`` (``P`` pages), served at the same paths as the synthetic site
(``/news/NNN/aNNNNNN.html``), listed by generated index pages (``/news/``, ``/news/page/N/``: 50 articles
each, with the synthetic site's markup: headlines, teasers, "most read" links and a pager).

Every copy is a distinct article: each word of the page's text (a run of ASCII letters outside tags,
comments, ``<script>``, ``<style>`` and character references) is replaced by a word of the same length from
a fixed vocabulary (the words of the corpus truths, by length), chosen by a hash of (copy number, word in
lower case), with the word's case pattern kept. So markup, tags, attributes and byte sizes are unchanged,
one word is always replaced by the same word within a copy (word frequencies keep their shape), and two
copies share few words and almost no 4-word shingle. The ground truth of a copy is the page's truth with
the same substitution (:meth:`RealSite.article_text`).

Rendering: every page is parsed once into a template (its bytes with ``%s`` where the words are, and the
word of each slot; about 180 MB for the 692 pages); a copy is one ``%`` format of the template with the
copy's words (:meth:`RealSite.article_html`, about 0.7 ms for a 190 KB page), so no copy is ever held
in memory for long. ``bench/crawl.py``'s server renders each copy once at its start into an unlinked
temporary file and serves the copies from there, so that it does no substitution during the crawls.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import math
import random
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CORPORA",
    "LANGUAGE",
    "PER_PAGE",
    "PageTemplate",
    "RealSite",
    "WordSubstitution",
    "article_path",
    "default_corpora",
    "index_path",
    "missing_corpora",
]

PER_PAGE = 50  # articles listed per index page (as the synthetic site)
MOST_READ = 10  # "most read" links on every index page, to articles of any page
TEASER_CHARS = 160
LANGUAGE = "en"  # the pages used: the corpora's pages of this language
CORPORA = ("extraction-dev", "extraction-train")  # folders beside the checkout, under ../shared/
MIN_CHOICES = 26  # a word length with fewer vocabulary words gets made-up words up to this many
REPEAT_SHARE = 0.5  # a page sharing this much of its truth's shingles with an earlier page is left out

# A page's source, scanned once: what is never text (comments, script and style elements, CDATA, tags
# with their attributes, character references) is group 1 and stays; a run of ASCII letters (group 2)
# is a word. A tag whose quotes do not balance falls back to "up to the next >".
_SOURCE_RE = re.compile(
    r"""(?si:(<!--.*?-->|<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!\[CDATA\[.*?\]\]>"""
    r"""|<[a-z/!?](?:"[^"]*"|'[^']*'|[^'">])*>|<[a-z/!?][^>]*>|&#?[a-z0-9]+;))|([A-Za-z]+)"""
)  # case-insensitive for the markup only: with IGNORECASE, [A-Za-z] would match "İ", "ı", "ſ" and "K"
_WORD_RE = re.compile(r"[A-Za-z]+")
_SHINGLE_WORD_RE = re.compile(r"\w+")


def article_path(number: int) -> str:
    return f"/news/{number // 1000:03d}/a{number:06d}.html"


def index_path(page: int) -> str:
    return "/news/" if page == 1 else f"/news/page/{page}/"


def index_parts(
    page: int, pages: int, articles: int, title: Callable[[int], str], teaser: Callable[[int], str]
) -> tuple[str, str, str]:
    """The list, the "most read" links and the pager of index page ``page`` (both bench sites): each
    article linked three times (picture, headline, "read more"), titles and teasers as HTML."""
    first = (page - 1) * PER_PAGE
    items = "".join(
        f'<li class="item"><a class="thumb" href="{article_path(number)}">'
        f'<img src="/img/{number}.jpg" alt=""></a><h3><a href="{article_path(number)}">{title(number)}</a>'
        f'</h3><p class="teaser">{teaser(number)}...</p>'
        f'<a class="more" href="{article_path(number)}">Read more</a></li>\n'
        for number in range(first, min(first + PER_PAGE, articles))
    )
    rng = random.Random(-page)
    most_read = "".join(
        f'<li><a href="{article_path(number)}">{title(number)}</a></li>'
        for number in rng.sample(range(articles), min(MOST_READ, articles))
    )
    pager = []
    if page > 1:
        pager.append(f'<a rel="prev" href="{index_path(page - 1)}">Newer</a>')
    pager.extend(
        f'<a href="{index_path(other)}">{other}</a>'
        for other in range(max(1, page - 2), min(pages, page + 2) + 1)
    )
    if page < pages:
        pager.append(f'<a rel="next" href="{index_path(page + 1)}">Older</a>')
    return items, most_read, " ".join(pager)


def default_corpora() -> list[Path]:
    """``../shared/extraction-dev`` and ``../shared/extraction-train`` beside the checkout."""
    shared = Path(__file__).resolve().parents[2] / "shared"
    return [shared / name for name in CORPORA]


# --- the substitution ----------------------------------------------------------------------------------


class WordSubstitution:
    """Word -> a word of the same length from the vocabulary, by a hash of (copy, word in lower case),
    with the word's case pattern (lower, Capitalised, UPPER, or letter by letter for anything else).

    The vocabulary is the given words (ASCII letters only), by length, in lower case; a length with fewer
    than MIN_CHOICES words gets made-up words up to that many. The choice for ``word`` of length L in
    ``copy`` is ``vocabulary[L][(h(word) + h(copy, L)) % len(vocabulary[L])]`` with h a 64-bit BLAKE2b:
    one word always gets the same substitute within a copy, and two copies give a word the same one only
    when their offsets for its length agree (1 in 26 for one-letter words, 1 in 400 or fewer above).
    """

    def __init__(self, words: Iterable[str]) -> None:
        by_length: dict[int, set[str]] = {}
        for word in words:
            if word.isascii() and word.isalpha():
                by_length.setdefault(len(word), set()).add(word.lower())
        self.vocabulary: dict[int, list[str]] = {}
        for length in range(1, max(by_length, default=1) + 1):
            self.vocabulary[length] = sorted(by_length.get(length, ()))
        self._cased: dict[int, tuple[list[bytes], list[bytes], list[bytes]]] = {}
        self._hashes: dict[str, int] = {}
        self._offsets: dict[tuple[int, int], int] = {}

    def choices(self, length: int) -> list[str]:
        """The vocabulary words of ``length`` letters (made-up ones added when there are too few)."""
        choices = self.vocabulary.get(length, [])
        if len(choices) < MIN_CHOICES:
            rng = random.Random(length)
            extended = set(choices) | (set(_LETTERS) if length == 1 else set())
            while len(extended) < MIN_CHOICES:
                extended.add("".join(rng.choice(_LETTERS) for _ in range(length)))
            choices = self.vocabulary[length] = sorted(extended)
        return choices

    def cased(self, length: int) -> tuple[list[bytes], list[bytes], list[bytes]]:
        """The choices of ``length`` letters as bytes: lower case, Capitalised, UPPER."""
        variants = self._cased.get(length)
        if variants is None:
            choices = self.choices(length)
            variants = self._cased[length] = (
                [word.encode() for word in choices],
                [word.capitalize().encode() for word in choices],
                [word.upper().encode() for word in choices],
            )
        return variants

    def hash(self, word: str) -> int:
        """h(word), of a word in lower case."""
        value = self._hashes.get(word)
        if value is None:
            value = self._hashes[word] = _hash64(word)
        return value

    def offset(self, copy: int, length: int) -> int:
        key = (copy, length)
        value = self._offsets.get(key)
        if value is None:
            value = self._offsets[key] = _hash64(f"copy {copy}, length {length}")
        return value

    def lower(self, copy: int, word: str) -> str:
        """The substitute of ``word`` (lower case) in ``copy``, in lower case."""
        choices = self.choices(len(word))
        return choices[(self.hash(word) + self.offset(copy, len(word))) % len(choices)]

    def word(self, copy: int, word: str) -> str:
        """The substitute of ``word`` in ``copy``, with ``word``'s case pattern."""
        return _cased(self.lower(copy, word.lower()), word)

    def text(self, copy: int, text: str) -> str:
        """``text`` with every run of ASCII letters substituted (plain text: a truth, a title)."""
        cache: dict[str, str] = {}

        def replace(match: re.Match[str]) -> str:
            word = match[0]
            substitute = cache.get(word)
            if substitute is None:
                substitute = cache[word] = self.word(copy, word)
            return substitute

        return _WORD_RE.sub(replace, text)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
LOWER, CAPITALISED, UPPER, MIXED = range(4)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _case_of(word: str) -> int:
    if word.islower():
        return LOWER
    if word.isupper():
        return UPPER if len(word) > 1 else CAPITALISED
    if word[0].isupper() and word[1:].islower():
        return CAPITALISED
    return MIXED


def _cased(substitute: str, original: str) -> str:
    case = _case_of(original)
    if case == LOWER:
        return substitute
    if case == UPPER:
        return substitute.upper()
    if case == CAPITALISED:
        return substitute.capitalize()
    return "".join(
        new.upper() if old.isupper() else new for new, old in zip(substitute, original, strict=True)
    )


@dataclass(frozen=True, slots=True)
class PageTemplate:
    """A page's bytes with ``%s`` in place of each word of its text. ``slots`` gives each slot's word as an
    index into the page's distinct words (exact case), which are kept as their length, case pattern
    (``LOWER`` ...) and h(word in lower case); ``mixed`` holds the words of mixed case (index, word)."""

    template: bytes
    size: int  # bytes of the page (and of every copy)
    slots: array[int]
    lengths: array[int]
    cases: array[int]
    hashes: array[int]
    mixed: tuple[tuple[int, str], ...]

    @classmethod
    def parse(cls, source: str, substitution: WordSubstitution) -> PageTemplate:
        pieces: list[str] = []
        slots = array("I")
        index: dict[str, int] = {}
        position = 0
        for match in _SOURCE_RE.finditer(source):
            word = match[2]
            if word is None:
                continue
            pieces.append(source[position : match.start()].replace("%", "%%"))
            pieces.append("%s")
            slots.append(index.setdefault(word, len(index)))
            position = match.end()
        pieces.append(source[position:].replace("%", "%%"))
        words = list(index)
        cases = [_case_of(word) for word in words]
        return cls(
            template="".join(pieces).encode("utf-8"),
            size=len(source.encode("utf-8")),
            slots=slots,
            lengths=array("H", map(len, words)),
            cases=array("B", (LOWER if case == MIXED else case for case in cases)),
            hashes=array("Q", (substitution.hash(word.lower()) for word in words)),
            mixed=tuple(
                (i, word) for i, (word, case) in enumerate(zip(words, cases, strict=True)) if case == MIXED
            ),
        )

    def render(self, copy: int, substitution: WordSubstitution) -> bytes:
        """The page of ``copy``: ``substitution.word(copy, w)`` for every word ``w``, the rest as it is."""
        tables = {
            length: (substitution.cased(length), substitution.offset(copy, length))
            for length in set(self.lengths)
        }
        words: list[bytes] = []
        append = words.append
        for length, case, value in zip(self.lengths, self.cases, self.hashes, strict=True):
            variants, offset = tables[length]
            choices = variants[case]
            append(choices[(value + offset) % len(choices)])
        for i, word in self.mixed:
            words[i] = substitution.word(copy, word).encode("ascii")
        return self.template % tuple(map(words.__getitem__, self.slots))


# --- the site ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourcePage:
    id: str
    html_path: Path
    truth: str
    title: str


def missing_corpora(corpora: Sequence[Path]) -> str | None:
    """What is missing of ``corpora`` (their manifest.json), and where the corpora come from; None when
    every one is there."""
    missing = [str(root / "manifest.json") for root in corpora if not (root / "manifest.json").is_file()]
    if not missing:
        return None
    return (
        f"--site real: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing: the real-page"
        f" site is built from the English pages of the extraction corpora {', '.join(CORPORA)}, in"
        " ../shared/ beside the checkout. They are not in this repository: build them as bench/corpus.py"
        " says (from WCXB v1.0 and the Chinese Web Content Extraction Dataset: sources, commits, licences,"
        " layout) and put them there."
    )


def load_pages(corpora: Sequence[Path]) -> list[SourcePage]:
    """The pages of LANGUAGE in the corpora's manifests, in manifest order; SystemExit naming what is
    missing when a corpus is not there (:func:`missing_corpora`)."""
    missing = missing_corpora(corpora)
    if missing is not None:
        raise SystemExit(missing)
    pages: list[SourcePage] = []
    for root in corpora:
        manifest = root / "manifest.json"
        for entry in json.loads(manifest.read_text(encoding="utf-8"))["pages"]:
            if entry.get("lang") != LANGUAGE:
                continue
            html_path = root / entry.get("html", f"html/{entry['id']}.html")
            truth_path = root / entry.get("truth", f"truth/{entry['id']}.txt")
            pages.append(
                SourcePage(
                    id=entry["id"],
                    html_path=html_path,
                    truth=truth_path.read_text(encoding="utf-8"),
                    title=entry.get("title") or entry.get("gt_title") or entry["id"],
                )
            )
    if not pages:
        raise SystemExit(f"--site real: no {LANGUAGE} page in {', '.join(map(str, corpora))}")
    return pages


def repeats(pages: Sequence[SourcePage]) -> dict[str, str]:
    """Pages whose truth repeats an earlier page's (at least REPEAT_SHARE of its distinct 4-word shingles,
    or of the earlier one's, are shared): ``{id: id of the earlier page}``. Two such pages would make every
    pair of their copies with one copy number a repost of each other."""
    owner: dict[int, int] = {}  # shingle hash -> the first page that has it
    sizes: list[int] = []
    found: dict[str, str] = {}
    for number, page in enumerate(pages):
        words = _SHINGLE_WORD_RE.findall(page.truth.lower())
        own = {hash(tuple(words[i : i + 4])) for i in range(max(len(words) - 3, 1))}
        sizes.append(len(own))
        shared = Counter(owner[key] for key in own if key in owner)
        for earlier, count in shared.most_common(1):
            if count >= REPEAT_SHARE * min(len(own), sizes[earlier]):
                found[page.id] = pages[earlier].id
        for key in own:
            owner.setdefault(key, number)
    return found


def read_html(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8")


class RealSite:
    """The real-page site of ``articles`` articles. ``templates=True`` (the server) parses every page into
    a :class:`PageTemplate`; without it (the crawl processes) only the truths and titles are read. Pages
    repeating an earlier one (``repeats``: id -> id of the earlier page) are left out."""

    def __init__(self, articles: int, corpora: Sequence[Path] | None = None, *, templates: bool = False):
        self.articles = articles
        self.pages = math.ceil(articles / PER_PAGE)
        pages = load_pages(default_corpora() if corpora is None else corpora)
        self.repeats = repeats(pages)
        self.sources = [page for page in pages if page.id not in self.repeats]
        self.substitution = WordSubstitution(
            word for page in self.sources for word in _WORD_RE.findall(page.truth)
        )
        self.templates: list[PageTemplate] = []
        if templates:
            for page in self.sources:
                source = read_html(page.html_path)
                self.templates.append(PageTemplate.parse(source, self.substitution))

    article_path = staticmethod(article_path)
    index_path = staticmethod(index_path)

    def source_of(self, number: int) -> tuple[SourcePage, int]:
        """The source page of article ``number`` and its copy number."""
        return self.sources[number % len(self.sources)], number // len(self.sources)

    @property
    def copies(self) -> int:
        """Copies of the most copied page."""
        return math.ceil(self.articles / len(self.sources))

    def article_html(self, number: int) -> bytes:
        """Article ``number``'s page (UTF-8): its source page with the words of its copy."""
        copy = number // len(self.sources)
        return self.templates[number % len(self.sources)].render(copy, self.substitution)

    def article_bytes(self, number: int) -> int:
        """Size of article ``number``'s page in bytes (every copy has its source page's size)."""
        return self.templates[number % len(self.sources)].size

    def article_text(self, number: int) -> str:
        """The ground truth of article ``number``: its source's truth with the words of its copy."""
        page, copy = self.source_of(number)
        return self.substitution.text(copy, page.truth)

    def title(self, number: int) -> str:
        page, copy = self.source_of(number)
        return self.substitution.text(copy, " ".join(page.title.split()))

    def index_html(self, page: int) -> str:
        def teaser(number: int) -> str:
            source, copy = self.source_of(number)
            return html.escape(
                self.substitution.text(copy, " ".join(source.truth[:400].split())[:TEASER_CHARS])
            )

        items, most_read, pager = index_parts(
            page, self.pages, self.articles, lambda number: html.escape(self.title(number)), teaser
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>Latest news, page {page} | Bench Reader</title></head><body>"
            '<header class="masthead"><a class="logo" href="/">Bench Reader</a></header>\n'
            f'<main><h1>Latest news</h1><ul class="list">\n{items}</ul>'
            f'<aside class="most-read"><h2>Most read</h2><ol>{most_read}</ol></aside>'
            f'<div class="pager">{pager}</div></main>\n'
            "<footer><p>Bench Reader: real pages, words substituted per copy.</p></footer></body></html>\n"
        )
