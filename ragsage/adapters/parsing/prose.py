"""Cutting prose within a token budget, and the piece every split returns.

Prose splits at sentence boundaries, then word boundaries, carrying ``overlap``
tokens of trailing words into the next part so a sentence cut in two is still
readable from either side.  A single word longer than the budget (a data URI,
a minified line) is cut between characters, so no part is ever over the
budget, whatever the input.  Each piece carries the span of the text it came
from.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from ragsage.adapters.parsing.tokens import SuffixCounts, count_within

TokenCounter = Callable[[str], int]

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
# A token of cl100k or o200k spans at most a few dozen characters; the window
# bounds the search for where to cut a giant word, keeping each cut cheap.
_CHARS_PER_TOKEN_CEILING = 64


@dataclass(frozen=True, slots=True)
class Piece:
    """A part of a block ready to become a chunk's text, and the span it covers."""

    text: str
    start: int
    end: int


def split_prose(text: str, size: int, overlap: int, count: TokenCounter) -> list[Piece]:
    """Cut prose into parts of at most ``size`` tokens with ``overlap`` carried over."""
    words = _Words(text, count)
    for match in _WORD.finditer(text):
        words.add(*match.span(), size)
    if not len(words):
        return []
    units = _units(words, size)
    # Each unit is counted once; a part is grown on the sum of its units' counts
    # and then checked (and if need be shortened) with one exact count.
    costs = [words.tokens(a, b) for a, b in units]
    tokens = words.tokens

    pieces: list[Piece] = []
    start, first = units[0][0], 0
    while first < len(units):
        used = tokens(start, units[first][0]) if start < units[first][0] else 0
        last = first
        while last + 1 < len(units) and used + costs[last] + costs[last + 1] <= size:
            used += costs[last]
            last += 1
        while last > first and tokens(start, units[last][1]) > size:
            last -= 1
        end = units[last][1]
        while end - start > 1 and tokens(start, end) > size:
            # Overlap carried in can tip a part over; the carried words go first.
            start += 1
        pieces.append(words.piece(start, end))
        first = last + 1
        if first < len(units):
            start = _overlap_start(words, start, end, units[first][1], size, overlap)
    return pieces


def fit_text(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """``text`` whole when it fits, else cut as prose: for heading lines and other odd units."""
    if count_within(count, text, size) <= size:
        return [Piece(text, 0, len(text))]
    return split_prose(text, size, 0, count)


class _Words:
    """The words of a text by their spans; a run of words is read as the text has it.

    Spans are kept in two integer arrays, 16 bytes a word: a paragraph with no
    blank line in millions of words (a CSV file, a one-line dump) would cost
    about ten times that as a list of tuples.
    """

    def __init__(self, text: str, count: TokenCounter) -> None:
        self.text = text
        self.count = count
        self.starts = array("q")
        self.ends = array("q")

    def add(self, start: int, end: int, size: int) -> None:
        """Append the word at ``start:end``, cut into parts of at most ``size`` tokens."""
        # A word of few characters cannot be over the budget; skip counting it.
        if end - start <= size or self.count(self.text[start:end]) <= size:
            self.starts.append(start)
            self.ends.append(end)
            return
        position = start
        while position < end:
            stop = _longest_fit(self.text, position, end, size, self.count)
            self.starts.append(position)
            self.ends.append(stop)
            position = stop

    def __len__(self) -> int:
        return len(self.starts)

    def word(self, index: int) -> str:
        return self.text[self.starts[index] : self.ends[index]]

    def run(self, start: int, end: int) -> str:
        return self.text[self.starts[start] : self.ends[end - 1]]

    def tokens(self, start: int, end: int) -> int:
        return self.count(self.run(start, end)) if end > start else 0

    def suffixes(self, start: int, end: int) -> SuffixCounts:
        """Counts of ``run(i, end)`` by the offset of word ``i``, for ``start <= i < end``."""
        return SuffixCounts(self.count, self.text, self.starts[start], self.ends[end - 1])

    def piece(self, start: int, end: int) -> Piece:
        return Piece(self.run(start, end), self.starts[start], self.ends[end - 1])


def _longest_fit(text: str, start: int, end: int, size: int, count: TokenCounter) -> int:
    """The end of the longest run of characters from ``start`` within ``size`` tokens."""
    low, high = start + 1, min(end, start + size * _CHARS_PER_TOKEN_CEILING)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[start:middle]) <= size:
            low = middle
        else:
            high = middle - 1
    return low


def _units(words: _Words, size: int) -> list[tuple[int, int]]:
    """Word ranges that each fit: sentences, or word runs of a sentence too long."""
    units: list[tuple[int, int]] = []
    start = 0
    last = len(words) - 1
    for index in range(len(words)):
        if index == last or _SENTENCE_END.search(words.word(index)):
            units.extend(_sentence_units(words, start, index + 1, size))
            start = index + 1
    return units


def _sentence_units(words: _Words, start: int, end: int, size: int) -> list[tuple[int, int]]:
    if count_within(words.count, words.run(start, end), size) <= size:
        return [(start, end)]
    runs: list[tuple[int, int]] = []
    run_start = start
    while run_start < end:
        run_end = _fill(words, run_start, end, size)
        runs.append((run_start, run_end))
        run_start = run_end
    return runs


def _fill(words: _Words, start: int, end: int, size: int) -> int:
    """The end of the longest word run from ``start`` that fits ``size`` (at least one word)."""
    # Per-word counts estimate the run cheaply; the exact count of the run's
    # text then trims it, since tokens can merge across a word boundary.
    used = 0
    stop = start
    while stop < end:
        cost = words.tokens(stop, stop + 1)
        if stop > start and used + cost > size:
            break
        used += cost
        stop += 1
    while stop - start > 1 and words.tokens(start, stop) > size:
        stop -= 1
    return stop


def _overlap_start(
    words: _Words, floor: int, end: int, next_end: int, size: int, overlap: int
) -> int:
    """Where the next part starts: the most trailing words that fit ``overlap``.

    Only words of the part just emitted (from ``floor``) are carried, and never
    so many that the next unit no longer fits ``size`` with them.
    """
    if overlap <= 0:
        return end
    # Binary search: a longer suffix never has fewer tokens.  A probe far from
    # the end is over ``overlap`` by its words alone, and is not encoded.
    low, high = floor + 1, end  # high (no overlap) always fits
    while low < high:
        middle = (low + high) // 2
        if count_within(words.count, words.run(middle, end), overlap) <= overlap:
            high = middle
        else:
            low = middle + 1
    start = high
    if start < end and count_within(words.count, words.run(start, next_end), size) > size:
        # Carried words go one at a time until the next unit fits: every try
        # is a suffix of the first, so the span is counted once, in parts.
        reach = words.suffixes(start, next_end)
        while start < end and reach(words.starts[start]) > size:
            start += 1
    return start
