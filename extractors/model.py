"""The result shape of every extractor: text, title, paragraphs and the diagnostics behind the choice."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Block:
    """One candidate unit an extractor weighed: a qRead segment, a density-filter line, a CEDP tag path.

    ``lines`` and ``words`` are the qRead measures l(S) and w(S); ``density`` is the algorithm's own density
    (words per line for qRead, text/markup ratio for the density filter, text block density for CEDP);
    ``similarity`` is the cosine similarity with the title (0.0 when there is no title; ``None`` when it was
    not measured: extractors measure it for every block only when asked to ``explain``); ``score`` is what
    the algorithm ranked by; ``reason`` says in a few words why the block was kept or dropped.
    """

    index: int
    label: str
    lines: int
    words: int
    density: float
    similarity: float | None
    score: float
    chosen: bool
    reason: str
    preview: str


@dataclass(slots=True)
class Extraction:
    """Main text of one page and the evidence for it.

    ``text`` is the paragraphs joined by blank lines; it is empty when nothing article-like was found
    (``notes`` then says why). ``blocks`` lists every candidate in document order.
    """

    text: str
    title: str | None
    paragraphs: list[str]
    algorithm: str
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        paragraphs: list[str],
        *,
        title: str | None,
        algorithm: str,
        blocks: list[Block],
        notes: list[str],
    ) -> Extraction:
        """The extraction whose text is ``paragraphs`` joined by blank lines."""
        return cls("\n\n".join(paragraphs), title, paragraphs, algorithm, blocks, notes)

    @classmethod
    def empty(cls, algorithm: str, title: str | None, note: str) -> Extraction:
        return cls(text="", title=title, paragraphs=[], algorithm=algorithm, notes=[note])

    @property
    def chosen_blocks(self) -> list[Block]:
        return [block for block in self.blocks if block.chosen]
