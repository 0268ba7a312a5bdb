"""The two-pass structure-aware Markdown chunker.

Pass one (:mod:`ragsage.parsing.blocks`) cuts every page into headings,
paragraphs, list runs, fenced code and tables, each under its heading path.
Pass two, here, packs consecutive blocks of one section into chunks of at most
``size`` tokens.  A heading always closes the chunk before it, so no chunk
spans two sections and each carries the path of the section it came from; a
page break closes it too, so every chunk cites exactly one page.  Heading lines
live in ``heading_path``, not in the text, except for a heading with no body
of its own, which becomes a chunk so that no words of the page are lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsage.errors import InvalidRequest
from ragsage.parsing.blocks import Block, HeadingStack, split_blocks
from ragsage.parsing.splitting import (
    Piece,
    TokenCounter,
    split_code,
    split_list,
    split_prose,
    split_table,
)
from ragsage.types import Chunk, Document, Page, make_chunk

_SEPARATOR = "\n\n"


def chunk_pages(
    document: Document,
    pages: Sequence[Page],
    *,
    size: int,
    overlap: int,
    count: TokenCounter,
) -> list[Chunk]:
    """Structure-aware chunks of ``pages``, ordinals dense from 0 across all of them."""
    if size < 1:
        raise InvalidRequest(f"chunk size must be at least 1 token, got {size}")
    if not 0 <= overlap < size:
        raise InvalidRequest(f"chunk overlap must be in [0, {size}), got {overlap}")
    packer = _Packer(document, size, overlap, count)
    headings = HeadingStack()
    for page in pages:
        if page.text.strip():
            for block in split_blocks(page.text, headings):
                packer.add(block, page.number)
            packer.flush()
    packer.finish()
    return packer.chunks


@dataclass(slots=True)
class _Packer:
    document: Document
    size: int
    overlap: int
    count: TokenCounter
    chunks: list[Chunk] = field(default_factory=list)
    # Body blocks of the open chunk, their running token estimate, and where they sit.
    texts: list[str] = field(default_factory=list)
    tokens: int = 0
    path: tuple[str, ...] = ()
    page: int = 0
    # Headings opened since the last body chunk, with their page numbers.
    pending: list[tuple[Block, int]] = field(default_factory=list)

    def add(self, block: Block, page: int) -> None:
        if block.kind == "heading":
            self.flush()
            self._open_heading(block, page)
            return
        tokens = self.count(block.text)
        if tokens > self.size:
            self.flush()
            for piece in self._split(block):
                self._emit(piece.text, block.heading_path, page, oversized=piece.oversized)
            return
        if self.texts and self.tokens + 1 + tokens > self.size:
            self.flush()
        self.texts.append(block.text)
        self.tokens += tokens + (1 if len(self.texts) > 1 else 0)
        self.path, self.page = block.heading_path, page

    def flush(self) -> None:
        # Token counts are not exactly additive across a join, so the open
        # chunk is re-counted whole and shortened by blocks if it overflows.
        texts = self.texts
        self.texts, self.tokens = [], 0
        while texts:
            take = len(texts)
            while take > 1 and self.count(_SEPARATOR.join(texts[:take])) > self.size:
                take -= 1
            self._emit(_SEPARATOR.join(texts[:take]), self.path, self.page)
            texts = texts[take:]

    def finish(self) -> None:
        self.flush()
        self._emit_dangling(self.pending)
        self.pending = []

    def _open_heading(self, block: Block, page: int) -> None:
        closed = [(b, p) for b, p in self.pending if b.level >= block.level]
        self.pending = [(b, p) for b, p in self.pending if b.level < block.level]
        self._emit_dangling(closed)
        self.pending.append((block, page))

    def _emit_dangling(self, headings: list[tuple[Block, int]]) -> None:
        """A heading no body chunk fell under becomes text, so its words are kept."""
        while headings:
            take = len(headings)
            while take > 1 and self.count(_joined(headings[:take])) > self.size:
                take -= 1
            text = _joined(headings[:take])
            last, page = headings[take - 1]
            # One heading line is a unit of its own: too long alone, it is flagged.
            oversized = self.count(text) > self.size
            self._emit(text, last.heading_path, page, oversized=oversized, covers_headings=False)
            headings = headings[take:]

    def _split(self, block: Block) -> list[Piece]:
        if block.kind == "table":
            return split_table(block.text, self.size, self.count)
        if block.kind == "code":
            return split_code(block.text, self.size, self.count)
        if block.kind == "list":
            return split_list(block.text, self.size, self.count)
        return split_prose(block.text, self.size, self.overlap, self.count)

    def _emit(
        self,
        text: str,
        path: tuple[str, ...],
        page: int,
        *,
        oversized: bool = False,
        covers_headings: bool = True,
    ) -> None:
        if covers_headings:
            self.pending = []
        self.chunks.append(
            make_chunk(
                self.document,
                len(self.chunks),
                text,
                heading_path=path,
                page_numbers=(page,),
                metadata={"oversized": True} if oversized else None,
            )
        )


def _joined(headings: list[tuple[Block, int]]) -> str:
    return _SEPARATOR.join(block.text for block, _ in headings)
