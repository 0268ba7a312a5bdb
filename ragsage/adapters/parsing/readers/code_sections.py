"""Source code as Markdown: one heading per definition, the code itself in fenced blocks.

Both code readers (Python's ``ast`` reader and the tree-sitter reader for every
other language) find a file's definitions as nested line ranges, then write
them out here the same way: a heading for the file, one for each class,
module, impl or function inside it, and every line of the file in exactly one
fenced block, in file order and verbatim, so indentation survives and the
chunker files each block under the path of the definition it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragsage.adapters.parsing.markdown import fenced, heading
from ragsage.adapters.parsing.markdown import inline as one_line

# Long parameter lists would crowd the rest of the heading path out of the
# contextualizer's bounded header, so a signature is cut at a parameter boundary.
MAX_SIGNATURE_CHARS = 120


@dataclass(slots=True)
class Section:
    """A heading and the inclusive 1-based line range it owns, minus its children's."""

    title: str
    depth: int
    first: int
    last: int
    children: list[Section] = field(default_factory=list)


def render(section: Section, lines: list[str], language: str) -> list[str]:
    """The Markdown blocks of ``section`` and everything under it, in file order."""
    blocks: list[str] = []
    _render(section, lines, language, blocks)
    return blocks


def _render(section: Section, lines: list[str], language: str, blocks: list[str]) -> None:
    # Lines after a child definition belong to the parent again, so the
    # parent's heading is repeated before them: the chunker then files them
    # under the parent's path rather than the child's.
    title = heading(min(section.depth + 1, 6), section.title)
    blocks.append(title)
    cursor, after_child = section.first, False
    for child in section.children:
        own = code_lines(lines, cursor, child.first - 1)
        if own:
            if after_child:
                blocks.append(title)
            blocks.append(fenced(own, language, first_line=cursor))
        _render(child, lines, language, blocks)
        cursor, after_child = child.last + 1, True
    tail = code_lines(lines, cursor, section.last)
    if tail:
        if after_child:
            blocks.append(title)
        blocks.append(fenced(tail, language, first_line=cursor))


def code_lines(lines: list[str], first: int, last: int) -> str:
    """Lines ``first..last`` (1-based, inclusive); empty when all are blank.

    Blank edges are kept: :func:`fenced` drops them and counts them, so the
    block knows the line it starts on.
    """
    chunk = "\n".join(lines[first - 1 : last])
    return chunk if chunk.strip() else ""


# Words of a comment that make it a licence header or a tool's setting, not a summary.
LICENCE_WORDS = ("copyright", "licen", "spdx", "-*-", "all rights reserved")


def comment_words(comment: str) -> str:
    """The first line of words in a comment, its markers gone."""
    for raw in comment.split("\n"):
        line = raw.strip().lstrip("/*!#-").strip().removesuffix("*/").strip()
        if line:
            return line
    return ""


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def unstructured(title: str, text: str, language: str) -> str:
    """A whole file under one heading, as one fenced block: no structure, nothing lost."""
    return "\n\n".join([heading(1, title), fenced(text, language, first_line=1)])
