"""Pass one of the chunker: Markdown into structural blocks under their heading path.

Each block knows the span of the page text it was read from (``start`` and
``end`` are character offsets), which the chunker passes on to its chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["heading", "paragraph", "list", "code", "table"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
# The opening (or closing) line of a fenced code block.
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One structural unit of a page; a heading's path ends with the heading itself."""

    kind: BlockKind
    text: str
    heading_path: tuple[str, ...]
    level: int = 0
    start: int = 0
    end: int = 0


class HeadingStack:
    """The open headings as a reader passes them, carried from page to page."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._open)

    def enter(self, level: int, title: str) -> tuple[str, ...]:
        """Open a heading, closing any at the same or a deeper level; returns the new path."""
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, title))
        return self.path


def split_blocks(markdown: str, headings: HeadingStack) -> list[Block]:
    """Cut one page's Markdown into headings, paragraphs, list runs, code and tables."""
    # Lines split at "\n" only, a trailing "\r" ignored for matching, so that
    # every offset is an offset into the page text exactly as it was given.
    raw = markdown.split("\n")
    offsets = [0] * len(raw)
    position = 0
    for index, line in enumerate(raw):
        offsets[index] = position
        position += len(line) + 1
    lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            path = headings.enter(level, title)
            start, end = _trimmed(markdown, offsets[i], offsets[i] + len(line))
            blocks.append(Block("heading", markdown[start:end], path, level, start, end))
            i += 1
            continue
        kind, stop = _block_at(lines, i)
        start, end = offsets[i], offsets[stop - 1] + len(lines[stop - 1])
        if kind == "code":
            start, end = _trimmed(markdown, start, end, chars="\n\r")
        else:
            start, end = _trimmed(markdown, start, end)
        blocks.append(Block(kind, markdown[start:end], headings.path, 0, start, end))
        i = stop
    return blocks


def _trimmed(text: str, start: int, end: int, chars: str | None = None) -> tuple[int, int]:
    """The span without the whitespace (or ``chars``) at its two ends."""
    inner = text[start:end]
    lead = len(inner) - len(inner.lstrip(chars))
    trail = len(inner) - len(inner.rstrip(chars))
    return start + lead, max(start + lead, end - trail)


def _block_at(lines: list[str], start: int) -> tuple[BlockKind, int]:
    """The kind of block starting at ``start`` and the index just past it."""
    fence = FENCE.match(lines[start])
    if fence:
        return "code", _fence_end(lines, start, fence.group(1))
    if _is_table_start(lines, start):
        end = start + 2
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        return "table", end
    if _LIST_ITEM.match(lines[start]):
        return "list", _list_end(lines, start)
    end = start + 1
    while end < len(lines) and lines[end].strip() and not _starts_block(lines, end):
        end += 1
    return "paragraph", end


def _fence_end(lines: list[str], start: int, opener: str) -> int:
    for end in range(start + 1, len(lines)):
        stripped = lines[end].strip()
        if stripped.startswith(opener[0] * len(opener)) and not stripped.strip(opener[0]):
            return end + 1
    return len(lines)  # an unclosed fence runs to the end of the page, as in CommonMark


def _list_end(lines: list[str], start: int) -> int:
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if not line.strip():
            # A blank line inside a list keeps it going only if the list resumes.
            nxt = end + 1
            if nxt < len(lines) and (_LIST_ITEM.match(lines[nxt]) or lines[nxt][:1] in " \t"):
                end = nxt
                continue
            return end
        if _HEADING.match(line) or FENCE.match(line) or _is_table_start(lines, end):
            return end
        end += 1
    return end


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].lstrip().startswith("|")
        and i + 1 < len(lines)
        and bool(_TABLE_SEPARATOR.match(lines[i + 1]))
        and "-" in lines[i + 1]
    )


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(
        _HEADING.match(line)
        or FENCE.match(line)
        or _LIST_ITEM.match(line)
        or _is_table_start(lines, i)
    )
