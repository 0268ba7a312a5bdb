"""The two-pass structure-aware Markdown chunker.

Pass one (:mod:`ragsage.adapters.parsing.blocks`) cuts every page into headings,
paragraphs, list runs, fenced code and tables, each under its heading path.
Pass two, here, packs consecutive blocks into chunks of at most ``size``
tokens; no chunk's text is ever longer, whatever the input, because a block
too big alone is cut by :mod:`ragsage.adapters.parsing.splitting` down to single
characters if it must.

A heading closes the chunk before it, so each chunk carries the path of the
section it came from.  Asked to (``join_below``), a chunk still small takes in
the sibling or deeper section that follows, its heading line written into the
text, so a page of one-line sections does not become a heap of tiny chunks
(source code aside, where every definition stays its own unit); the joined
chunk keeps the first section's path, whose heading is not in its text, and
lists every section it holds with its span (``Chunk.sections``).  A page break
always closes a chunk, so every chunk cites exactly one page.  Heading lines
otherwise live in ``heading_path``, not in the text, except for a heading with
no body of its own, which becomes a chunk so that no words of the page are lost.

Every chunk records the span of its page's text it covers (``start_char`` and
``end_char``), so later stages never search the text for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsage.adapters.parsing.blocks import Block, HeadingStack, split_blocks
from ragsage.adapters.parsing.prose import Piece, TokenCounter, fit_text, split_prose
from ragsage.adapters.parsing.splitting import split_code, split_list, split_table
from ragsage.adapters.parsing.tokens import count_within
from ragsage.core.errors import InvalidRequest
from ragsage.core.types import Chunk, ChunkSection, Document, Page, make_chunk

_SEPARATOR = "\n\n"
# Formats whose headings are definitions (a function, a class): each is a unit
# a search should return by itself, so sections there never join.
_DEFINITION_FORMATS = frozenset({"python", "code"})


def chunk_pages(
    document: Document,
    pages: Sequence[Page],
    *,
    size: int,
    overlap: int,
    count: TokenCounter,
    join_below: float = 0.0,
) -> list[Chunk]:
    """Structure-aware chunks of ``pages``, ordinals dense from 0 across all of them.

    ``join_below`` is the share of the budget under which a chunk takes in the
    next sibling section (0, the default, keeps every section apart).
    """
    if size < 1:
        raise InvalidRequest(f"chunk size must be at least 1 token, got {size}")
    if not 0 <= overlap < size:
        raise InvalidRequest(f"chunk overlap must be in [0, {size}), got {overlap}")
    joins = document.metadata.get("format") not in _DEFINITION_FORMATS
    merge_below = int(size * join_below) if joins else 0
    packer = _Packer(document, size, overlap, count, merge_below=merge_below)
    headings = HeadingStack()
    for page in pages:
        if page.text.strip():
            packer.page_texts[page.number] = page.text
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
    merge_below: int
    chunks: list[Chunk] = field(default_factory=list)
    # Parts of the open chunk, the section each belongs to, their running token
    # estimate, and where they sit.
    parts: list[Piece] = field(default_factory=list)
    part_paths: list[tuple[str, ...]] = field(default_factory=list)
    tokens: int = 0
    path: tuple[str, ...] = ()
    page: int = 0
    level: int = 0
    # The level of the section being read, and headings opened since the last
    # body chunk, with their page numbers.
    section_level: int = 0
    pending: list[tuple[Block, int]] = field(default_factory=list)
    # Headings of small sections joining the open chunk: written before its next part.
    joining: list[tuple[Block, int]] = field(default_factory=list)
    joining_tokens: int = 0
    page_texts: dict[int, str] = field(default_factory=dict)

    def add(self, block: Block, page: int) -> None:
        if block.kind == "heading":
            self._heading(block, page)
            return
        # Exact when the block fits; a block over budget is not encoded whole
        # just to learn that, since the splitter counts its parts anyway.
        tokens = count_within(self.count, block.text, self.size)
        if tokens > self.size:
            self.flush()
            for piece in self._split(block):
                self._emit([piece], block.heading_path, page)
            return
        part = Piece(block.text, block.start, block.end)
        if self.joining:
            part, tokens = self._with_joining_headings(part, tokens)
        if self.parts and self.tokens + 1 + tokens > self.size:
            self.flush()
        if not self.parts:
            self.path, self.page, self.level = block.heading_path, page, self.section_level
        self.parts.append(part)
        self.part_paths.append(block.heading_path)
        self.tokens += tokens + (1 if len(self.parts) > 1 else 0)

    def flush(self) -> None:
        # Token counts are not exactly additive across a join, so the open
        # chunk is re-counted whole and shortened by parts if it overflows.
        parts, paths = self.parts, self.part_paths
        self.parts, self.part_paths, self.tokens = [], [], 0
        while parts:
            take = len(parts)
            while take > 1 and self._over(_joined(parts[:take])):
                take -= 1
            self._emit(parts[:take], self.path, self.page, paths=paths[:take])
            parts, paths = parts[take:], paths[take:]
        joining, self.joining, self.joining_tokens = self.joining, [], 0
        for heading, page in joining:
            self._open_heading(heading, page)

    def finish(self) -> None:
        self.flush()
        self._emit_dangling(self.pending)
        self.pending = []

    def _heading(self, block: Block, page: int) -> None:
        small = self.tokens + self.joining_tokens < self.merge_below
        if self.parts and page == self.page and small and block.level >= self.level:
            self.joining.append((block, page))
            self.joining_tokens += self.count(block.text) + 1
            return
        self.flush()
        self._open_heading(block, page)

    def _with_joining_headings(self, part: Piece, tokens: int) -> tuple[Piece, int]:
        """The part with the joining headings before it, or alone if they no longer fit."""
        headings = [heading for heading, _ in self.joining]
        text = _SEPARATOR.join([*(h.text for h in headings), part.text])
        joined = count_within(self.count, text, self.size)
        if self.parts and joined <= self.size and self.tokens + 1 + joined <= self.size:
            self.joining, self.joining_tokens = [], 0
            return Piece(text, headings[0].start, part.end), joined
        # It does not fit: the open chunk closes, and the headings open the part's section.
        self.flush()
        return part, tokens

    def _open_heading(self, block: Block, page: int) -> None:
        closed = [(b, p) for b, p in self.pending if b.level >= block.level]
        self.pending = [(b, p) for b, p in self.pending if b.level < block.level]
        self._emit_dangling(closed)
        self.pending.append((block, page))
        self.section_level = block.level

    def _emit_dangling(self, headings: list[tuple[Block, int]]) -> None:
        """A heading no body chunk fell under becomes text, so its words are kept."""
        while headings:
            page = headings[0][1]
            take = 1
            while (
                take < len(headings)
                and headings[take][1] == page
                and self._adjacent(headings[take - 1][0], headings[take][0], page)
                and not self._over(_joined_headings(headings[: take + 1]))
            ):
                take += 1
            first, last = headings[0][0], headings[take - 1][0]
            if take == 1:
                # One heading line is a unit of its own, cut as prose only if too long.
                pieces = fit_text(first.text, self.size, self.count)
                spans = [Piece(p.text, first.start + p.start, first.start + p.end) for p in pieces]
            else:
                spans = [Piece(_joined_headings(headings[:take]), first.start, last.end)]
            for span in spans:
                self._emit([span], last.heading_path, page, covers_headings=False)
            headings = headings[take:]

    def _over(self, text: str) -> bool:
        return count_within(self.count, text, self.size) > self.size

    def _adjacent(self, first: Block, second: Block, page: int) -> bool:
        """True when only blank space lies between two headings, so one span covers both."""
        between = self.page_texts.get(page, "")[first.end : second.start]
        return first.end <= second.start and not between.strip()

    def _split(self, block: Block) -> list[Piece]:
        if block.kind == "table":
            pieces = split_table(block.text, self.size, self.count)
        elif block.kind == "code":
            pieces = split_code(block.text, self.size, self.count)
        elif block.kind == "list":
            pieces = split_list(block.text, self.size, self.count)
        else:
            pieces = split_prose(block.text, self.size, self.overlap, self.count)
        return [Piece(p.text, block.start + p.start, block.start + p.end) for p in pieces]

    def _emit(
        self,
        parts: list[Piece],
        path: tuple[str, ...],
        page: int,
        *,
        covers_headings: bool = True,
        paths: Sequence[tuple[str, ...]] = (),
    ) -> None:
        if covers_headings:
            self.pending = []
        self.chunks.append(
            make_chunk(
                self.document,
                len(self.chunks),
                _joined(parts),
                heading_path=path,
                page_numbers=(page,),
                start_char=parts[0].start,
                end_char=parts[-1].end,
                sections=_sections(parts, paths, path, page),
            )
        )


def _sections(
    parts: Sequence[Piece], paths: Sequence[tuple[str, ...]], path: tuple[str, ...], page: int
) -> tuple[ChunkSection, ...]:
    """Where each section's parts sit in the joined text; empty when all are ``path``'s."""
    if all(each == path for each in paths):
        return ()
    sections: list[ChunkSection] = []
    offset = 0
    for part, path in zip(parts, paths, strict=True):
        end = offset + len(part.text)
        last = sections[-1] if sections else None
        if last is not None and last.heading_path == path:
            sections[-1] = ChunkSection(path, last.start, end, page, last.page_start, part.end)
        else:
            sections.append(ChunkSection(path, offset, end, page, part.start, part.end))
        offset = end + len(_SEPARATOR)
    return tuple(sections)


def _joined(parts: Sequence[Piece]) -> str:
    return _SEPARATOR.join(part.text for part in parts)


def _joined_headings(headings: list[tuple[Block, int]]) -> str:
    return _SEPARATOR.join(block.text for block, _ in headings)
