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

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragsage.adapters.parsing.blocks import FENCE, Block, HeadingStack, split_blocks
from ragsage.adapters.parsing.markdown import LINE_ANCHOR
from ragsage.adapters.parsing.prose import Piece, TokenCounter, fit_text, split_prose
from ragsage.adapters.parsing.splitting import split_code, split_list, split_table
from ragsage.adapters.parsing.tokens import count_within
from ragsage.core.chunks import Chunk, ChunkSection, make_chunk
from ragsage.core.documents import Document
from ragsage.core.errors import InvalidRequest
from ragsage.core.pages import Page

_SEPARATOR = "\n\n"
# Formats whose headings are definitions (a function, a class): each is a unit
# a search should return by itself, so sections there never join.
_DEFINITION_FORMATS = frozenset({"python", "code"})
# The share of a window's lines the next window repeats at its start.
WINDOW_OVERLAP = 0.25
# The opening fence of a code reader's block: its info string names the line it starts on.
_ANCHORED_FENCE = re.compile(
    rf"^(?P<fence> {{0,3}}(?:`{{3,}}|~{{3,}})[^\s`]*)[ \t]+{LINE_ANCHOR}(?P<line>\d+)[ \t]*$",
    re.MULTILINE,
)


def chunk_pages(
    document: Document,
    pages: Sequence[Page],
    *,
    size: int,
    overlap: int,
    count: TokenCounter,
    join_below: float = 0.0,
    window: int = 0,
) -> list[Chunk]:
    """Structure-aware chunks of ``pages``, ordinals dense from 0 across all of them.

    ``join_below`` is the share of the budget under which a chunk takes in the
    next sibling section (0, the default, keeps every section apart).
    ``window`` (tokens, 0 for none) cuts a source file's code block longer than
    that into windows of about equal size, each marked ``window: [k, n]`` in
    its metadata: a long definition is then found by the lines that answer.
    Code chunks of a source file carry the ``lines`` they cover.
    """
    if size < 1:
        raise InvalidRequest(f"chunk size must be at least 1 token, got {size}")
    if not 0 <= overlap < size:
        raise InvalidRequest(f"chunk overlap must be in [0, {size}), got {overlap}")
    source_code = document.metadata.get("format") in _DEFINITION_FORMATS
    merge_below = 0 if source_code else int(size * join_below)
    packer = _Packer(document, size, overlap, count, merge_below=merge_below)
    if source_code:
        packer.window = min(window, size) if window > 0 else 0
    headings = HeadingStack()
    for page in pages:
        if page.text.strip():
            packer.page_texts[page.number] = page.text
            if source_code:
                packer.anchors[page.number] = _Anchors(page.text)
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
    # Source code only: where each page's fenced blocks start in their file, and
    # the size above which a block is cut into windows (0: never).
    anchors: dict[int, _Anchors] = field(default_factory=dict)
    window: int = 0

    def add(self, block: Block, page: int) -> None:
        if block.kind == "heading":
            self._heading(block, page)
            return
        shift = 0
        if block.kind == "code" and page in self.anchors:
            block, shift = _without_anchor(block)
        # Exact when the block fits; a block over budget is not encoded whole
        # just to learn that, since the splitter counts its parts anyway.
        tokens = count_within(self.count, block.text, self.size)
        # Only a definition's code is cut into windows.  A file's own code
        # (imports, top-level statements) can run to thousands of tokens: as
        # windows it flooded the results of the code set's questions.
        windowing = (
            bool(self.window)
            and block.kind == "code"
            and len(block.heading_path) > 1
            and tokens > self.window
        )
        if tokens > self.size or windowing:
            self.flush()
            if not windowing:
                for piece in self._split(block, shift):
                    self._emit([piece], block.heading_path, page)
                return
            # The definition stays whole (found by its words and its meaning), and
            # its windows follow it (found by their vectors alone: as keyword
            # candidates they crowded out whole definitions that answer).
            whole = (
                self._split(block, shift)
                if tokens > self.size
                else [Piece(block.text, block.start, block.end)]
            )
            for piece in whole:
                self._emit([piece], block.heading_path, page)
            pieces = self._windows(block, shift, tokens, page)
            for number, piece in enumerate(pieces, 1):
                extra = {"window": [number, len(pieces)]}
                self._emit([piece], block.heading_path, page, metadata=extra)
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

    def _windows(self, block: Block, shift: int, tokens: int, page: int) -> list[Piece]:
        """A definition's code over a window, cut into the fewest windows that hold it,
        as even as statements allow (no window is a stub), then overlapped."""
        if tokens > self.size:
            tokens = self.count(block.text)
        fewest = -(-tokens // self.window)
        share = -(-tokens // fewest)
        pieces: list[Piece] = []
        # Cuts fall on statements, not on tokens: a little room over the even
        # share, widened until the fewest windows hold the block.
        for slack in (8, 4, 2, 1):
            pieces = self._split(block, shift, min(self.window, share + self.window // slack))
            if len(pieces) <= fewest:
                break
        return self._overlapped(pieces, self.page_texts[page])

    @staticmethod
    def _overlapped(pieces: list[Piece], page_text: str) -> list[Piece]:
        """Each window after the first opens with the last quarter of the lines of the
        one before, so a few lines that answer a question are whole in some window."""
        out = pieces[:1]
        for before, piece in zip(pieces, pieces[1:], strict=False):
            opener, _, body = piece.text.partition("\n")
            lines = page_text[before.start : before.end].split("\n")
            keep = min(round(len(lines) * WINDOW_OVERLAP), len(lines) - 1)
            if keep <= 0 or not FENCE.match(opener):
                out.append(piece)  # a part cut as prose inside one line: nothing to repeat
                continue
            repeated = "\n".join(lines[-keep:])
            start = before.end - len(repeated)
            out.append(Piece(f"{opener}\n{repeated}\n{body}", start, piece.end))
        return out

    def _split(self, block: Block, shift: int = 0, size: int | None = None) -> list[Piece]:
        size = size or self.size
        if block.kind == "table":
            pieces = split_table(block.text, size, self.count)
        elif block.kind == "code":
            pieces = split_code(block.text, size, self.count)
        elif block.kind == "list":
            pieces = split_list(block.text, size, self.count)
        else:
            pieces = split_prose(block.text, size, self.overlap, self.count)
        # ``shift``: the characters of the line anchor the opening fence lost,
        # all before the parts' lines in the page.
        start = block.start + shift
        return [Piece(p.text, start + p.start, start + p.end) for p in pieces]

    def _emit(
        self,
        parts: list[Piece],
        path: tuple[str, ...],
        page: int,
        *,
        covers_headings: bool = True,
        paths: Sequence[tuple[str, ...]] = (),
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if covers_headings:
            self.pending = []
        anchors = self.anchors.get(page)
        lines = anchors.lines(parts[0].start, parts[-1].end) if anchors else None
        if lines is not None:
            metadata = {**(metadata or {}), "lines": list(lines)}
        self.chunks.append(
            make_chunk(
                self.document,
                len(self.chunks),
                _joined(parts),
                heading_path=path,
                page_numbers=(page,),
                metadata=metadata,
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


def _without_anchor(block: Block) -> tuple[Block, int]:
    """The code block with its line anchor out of the opening fence, and how many
    characters went: the anchor is for the chunker, not for readers."""
    first_line = block.text.partition("\n")[0]
    found = _ANCHORED_FENCE.match(first_line)
    if found is None:
        return block, 0
    opener = found.group("fence")
    text = opener + block.text[len(first_line) :]
    return replace(block, text=text), len(first_line) - len(opener)


class _Anchors:
    """Where a source page's fenced blocks sit, and the file line each starts on."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Per block: where its opening fence starts, where its first code line
        # starts, that line's number in the file, and where its last code line ends.
        self.blocks: list[tuple[int, int, int, int]] = []
        for found in _ANCHORED_FENCE.finditer(text):
            body = found.end() + 1
            fence = found.group("fence").lstrip()
            marker = fence[0] * (len(fence) - len(fence.lstrip(fence[0])))
            close = text.find("\n" + marker, body - 1)
            end = len(text) if close < 0 else max(close, body)
            self.blocks.append((found.start(), body, int(found.group("line")), end))
        self.fences = [fence for fence, _, _, _ in self.blocks]

    def lines(self, start: int, end: int) -> tuple[int, int] | None:
        """The file lines the page's characters ``start`` to ``end`` cover, if code."""
        first = self._line(start, at_end=False)
        last = self._line(max(end - 1, start), at_end=True)
        if first is None or last is None or last < first:
            return None
        return first, last

    def _line(self, offset: int, *, at_end: bool) -> int | None:
        """The file line at ``offset``: on a fence line, the block's first (or, past
        its code, the next block's first); an end past a block's code, its last."""
        index = bisect_right(self.fences, offset) - 1
        if index < 0:
            return None  # before any code: a heading
        _, body, line, end = self.blocks[index]
        if offset >= end and not at_end:
            if index + 1 == len(self.blocks):
                return None
            _, body, line, end = self.blocks[index + 1]
        offset = min(max(offset, body), max(end - 1, body))
        return line + self.text.count("\n", body, offset)
