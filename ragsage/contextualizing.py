"""Contextual retrieval without a model call: situate a chunk from structure already known.

The chunker puts each chunk's heading path on it and the pipeline hands over the
document's full text, which is enough to say which document, which section, and
what is written just before and after, deterministically and offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragsage.parsing.tokens import DEFAULT_ENCODING, make_token_counter
from ragsage.types import Chunk, Document

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s")
_SPACE = re.compile(r"\s+")


class HeadingWindowContextualizer:
    """A Contextualizer built from document structure instead of inference.

    The text it returns is a short header (the document title, the chunk's
    heading path, and up to ``window`` neighbouring paragraphs from each side of
    the chunk in ``full_text``) followed by the chunk text unchanged.
    ``max_context_tokens`` is a hard ceiling on everything put before the chunk,
    counted in ``encoding_name`` (the chunker's encoding by default, so one token
    means the same thing across the pipeline).  When the ceiling bites, the
    farthest paragraphs go first, then whole sentences; no word is ever cut.
    ``window=0`` gives title and heading context only.  Deterministic, no I/O.
    """

    def __init__(
        self,
        *,
        window: int = 2,
        max_context_tokens: int = 128,
        encoding_name: str = DEFAULT_ENCODING,
    ) -> None:
        if window < 0:
            raise ValueError("window must not be negative")
        if max_context_tokens < 0:
            raise ValueError("max_context_tokens must not be negative")
        self.window = window
        self.max_context_tokens = max_context_tokens
        self.encoding_name = encoding_name
        self._count = make_token_counter(encoding_name)

    async def contextualize(self, document: Document, chunk: Chunk, *, full_text: str) -> str:
        """The chunk's text to embed: a bounded context header, then the chunk verbatim."""
        return self.context_for(document, chunk, full_text) + chunk.text

    def context_for(self, document: Document, chunk: Chunk, full_text: str) -> str:
        """Only the prefix: empty, or header lines ending in a blank line."""
        budget = _Budget(self._count, self.max_context_tokens)
        for line in _header_lines(document, chunk):
            budget.try_add_header(line)
        before, after = _neighbours(full_text, chunk.text, self.window)
        sides = ((before, budget.before, True), (after, budget.after, False))
        open_sides = {True: True, False: True}
        for distance in range(self.window):
            for paragraphs, chosen, is_before in sides:
                if open_sides[is_before] and distance < len(paragraphs):
                    open_sides[is_before] = budget.try_add(
                        chosen, paragraphs[distance], keep_end=is_before
                    )
        return budget.render()


class _Budget:
    """The prefix being assembled, never allowed past its token ceiling."""

    def __init__(self, count: Callable[[str], int], limit: int) -> None:
        self.count = count
        self.limit = limit
        self.header: list[str] = []
        self.before: list[str] = []  # nearest first
        self.after: list[str] = []  # nearest first

    def render(self) -> str:
        lines = list(self.header)
        if self.before:
            lines.append("Preceded by: " + " ".join(reversed(self.before)))
        if self.after:
            lines.append("Followed by: " + " ".join(self.after))
        return "\n".join(lines) + "\n\n" if lines else ""

    def fits(self) -> bool:
        return self.count(self.render()) <= self.limit

    def try_add_header(self, line: str) -> None:
        self.header.append(line)
        if not self.fits():
            self.header.pop()

    def try_add(self, chosen: list[str], paragraph: str, *, keep_end: bool) -> bool:
        """Add the paragraph, or as many whole sentences of it as fit; False once trimmed."""
        chosen.append(paragraph)
        if self.fits():
            return True
        chosen.pop()
        # Keep the sentences nearest the chunk: a preceding paragraph's last ones.
        sentences = _SENTENCE_BREAK.split(paragraph)
        for keep in range(len(sentences) - 1, 0, -1):
            part = sentences[-keep:] if keep_end else sentences[:keep]
            chosen.append(" ".join(part))
            if self.fits():
                return False
            chosen.pop()
        return False


def _header_lines(document: Document, chunk: Chunk) -> list[str]:
    lines = []
    title = _SPACE.sub(" ", document.title).strip()
    if title:
        lines.append(f"Document: {title}")
    if chunk.heading_path:
        lines.append("Section: " + " > ".join(chunk.heading_path))
    return lines


def _neighbours(full_text: str, text: str, window: int) -> tuple[list[str], list[str]]:
    """Up to ``window`` paragraphs each side of the chunk's place in the text, nearest first."""
    if window == 0 or not text.strip():
        return [], []
    start = full_text.find(text)
    length = len(text)
    if start < 0:
        # A chunk rebuilt from its block (a table part with its header repeated)
        # is not verbatim in the text; its first line still anchors it.
        first_line = text.strip().split("\n", 1)[0]
        start, length = full_text.find(first_line), len(first_line)
        if start < 0 or not first_line:
            return [], []
    before = _paragraphs(full_text[:start])[::-1][:window]
    after = _paragraphs(full_text[start + length :])[:window]
    return before, after


def _paragraphs(text: str) -> list[str]:
    """Prose paragraphs with whitespace collapsed; heading lines are already in the header."""
    out = []
    for block in _PARAGRAPH_BREAK.split(text):
        flat = _SPACE.sub(" ", block).strip()
        if flat and not _HEADING_LINE.match(block.strip()):
            out.append(flat)
    return out
