"""Assertions every chunker test shares: within budget, nothing lost, spans that hold."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ragsage.core.chunks import Chunk
from ragsage.core.pages import Page

_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]")
# Fence lines wrap every part of a code block the chunker cut, so they are not words of it.
_FENCE_LINE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE)


def assert_within_budget(chunks: Sequence[Chunk], size: int, count: Callable[[str], int]) -> None:
    for chunk in chunks:
        assert chunk.text.strip(), f"chunk {chunk.id} is empty"
        assert count(chunk.text) <= size, f"chunk {chunk.id} has {count(chunk.text)} > {size}"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert len({c.id for c in chunks}) == len(chunks)


def assert_nothing_lost(pages: Sequence[Page], chunks: Sequence[Chunk]) -> None:
    """Every word of the pages' body text is in the chunks in order; heading words somewhere.

    The chunks are read as one string (fence lines aside) so that a word too
    long for the budget, cut across two chunks, is still found whole; repeats
    (overlap, table headers) are allowed because the search only moves forward.
    """
    joined = "".join(_FENCE_LINE.sub("", chunk.text).strip("\n") for chunk in chunks)
    pages_text = [_FENCE_LINE.sub("", page.text) for page in pages]
    body = [line for text in pages_text for line in text.split("\n") if not _HEADING.match(line)]
    position = 0
    for word in _WORD.findall("\n".join(body)):
        found = joined.find(word, position)
        assert found >= 0, f"{word!r} is missing or out of order (after offset {position})"
        position = found + len(word)
    known = set(_WORD.findall(joined)) | {
        word for chunk in chunks for title in chunk.heading_path for word in _WORD.findall(title)
    }
    titles = [line for page in pages for line in page.text.split("\n") if _HEADING.match(line)]
    missing = {word for line in titles for word in _WORD.findall(line)} - known
    # A heading word cut across chunks (a title too long for the budget) is in the joined text.
    assert all(word in joined for word in missing), f"heading words lost: {sorted(missing)[:5]}"


def assert_spans_hold(pages: Sequence[Page], chunks: Sequence[Chunk]) -> None:
    """Each chunk's span lies in its page, and the span's words are the chunk's, in order."""
    by_number = {page.number: page.text for page in pages}
    for chunk in chunks:
        text = by_number[chunk.page_numbers[0]]
        assert 0 <= chunk.start_char <= chunk.end_char <= len(text), chunk
        position = 0
        for word in _WORD.findall(text[chunk.start_char : chunk.end_char]):
            found = chunk.text.find(word, position)
            assert found >= 0, f"{word!r} of the span of {chunk.id} is not in its text"
            position = found + len(word)
