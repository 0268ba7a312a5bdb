"""Splitting one block that is larger than the token budget, never past the budget.

Prose splits at sentence boundaries, then word boundaries, carrying ``overlap``
tokens of trailing words into the next part so a sentence cut in two is still
readable from either side.  Tables split by rows with the header repeated, and
a row too big alone by its cells (each written ``column: value``), then as
prose.  Lists split between items and code between lines, re-fenced; an item
or a line too big alone splits as prose.  A single word longer than the
budget (a data URI, a minified line) is cut between characters, so no part is
ever over the budget, whatever the input.

Every part carries the span of the block's text it came from (``start`` and
``end``, character offsets into the block), so a chunk knows where it sits in
its page without anyone searching the page for it.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from ragsage.adapters.parsing.tokens import SuffixCounts, TokenTally, count_within

TokenCounter = Callable[[str], int]

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
# A code line starting like this continues the statement above it; one ending
# like this leaves its statement open.
_CONTINUES_LINE = (")", "]", "}", ".", "&&", "||", "+", "-", "*", "/", "?", ":", "=", "|", ",")
_LEAVES_OPEN = (",", "(", "[", "\\", "=", "+", "-", "*", "&&", "||", "|", "?", ":", "->", "=>")
# A token of cl100k or o200k spans at most a few dozen characters; the window
# bounds the search for where to cut a giant word, keeping each cut cheap.
_CHARS_PER_TOKEN_CEILING = 64


@dataclass(frozen=True, slots=True)
class Piece:
    """A part of a block ready to become a chunk's text, and the span it covers."""

    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Line:
    """A unit of a block and where it starts; its first ``skip`` characters are not
    in the page (a cell's column label)."""

    text: str
    start: int
    skip: int = 0

    @property
    def end(self) -> int:
        return self.start + len(self.text) - self.skip

    def place(self, pieces: list[Piece]) -> list[Piece]:
        """Pieces cut from this unit's text, their spans moved onto the page."""
        return [
            Piece(
                p.text,
                self.start + max(p.start - self.skip, 0),
                self.start + max(p.end - self.skip, 0),
            )
            for p in pieces
        ]


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


def split_table(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a Markdown table into row groups, each repeating the header and separator."""
    lines = _lines(text)
    if len(lines) < 3:
        return split_prose(text, size, 0, count)
    head = f"{lines[0].text}\n{lines[1].text}"
    names = [name.strip() for name in _cells(lines[0].text)]
    pieces = _pack(
        lines[2:],
        size,
        count,
        head=f"{head}\n",
        too_big=lambda row: _split_row(row, names, size, count),
    )
    if pieces and not pieces[0].text.startswith(head):
        # The first row went cell by cell: the header leads on its own, so it is
        # read before the rows it names.
        pieces = [*fit_text(head, size, count), *pieces]
    return pieces


def split_code(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a fenced code block by lines, re-fencing every part."""
    lines = _lines(text)
    opener = lines[0].text
    fence = opener.strip()[:3]
    has_closer = len(lines) > 1 and lines[-1].text.strip().startswith(fence)
    body = lines[1:-1] if has_closer else lines[1:]
    closer = lines[-1].text if has_closer else fence

    def wrap(inner: str) -> str:
        return f"{opener}\n{inner}\n{closer}"

    if not body:
        return split_prose(text, size, 0, count)

    def too_big(line: _Line) -> list[Piece]:
        # The fences' tokens do not simply add to the line's, so the budget for
        # the words shrinks until every fenced part fits.
        budget = max(1, size - count(wrap("")))
        while True:
            parts = line.place(split_prose(line.text, budget, 0, count))
            fenced = [Piece(wrap(p.text), p.start, p.end) for p in parts]
            if all(count(p.text) <= size for p in fenced):
                return fenced
            if budget == 1:
                # Not even one token fits between the fences: the bare code it is.
                return parts
            budget -= 1

    return _pack(
        body,
        size,
        count,
        head=f"{opener}\n",
        tail=f"\n{closer}",
        too_big=too_big,
        cut_before=statement_starts([line.text for line in body]),
    )


def statement_starts(lines: list[str]) -> list[bool]:
    """Which lines of code start a statement of the block's main level: good places to cut.

    The main level is the most common indentation deeper than the shallowest
    (a function's body, not its header and closing brace), or the shallowest
    when all lines share it.  A line there starts a statement unless it
    continues the one before: it opens with a closing bracket or an operator,
    or the line above ends in a comma, an open bracket, an operator or a
    backslash.  Cutting only there keeps statements whole whatever the language.
    """
    depths = [len(line) - len(line.lstrip()) if line.strip() else -1 for line in lines]
    present = [depth for depth in depths if depth >= 0]
    if not present:
        return [False] * len(lines)
    shallowest = min(present)
    deeper = [depth for depth in present if depth > shallowest]
    main = max(set(deeper), key=deeper.count) if deeper else shallowest
    starts: list[bool] = []
    above = ""
    for line, depth in zip(lines, depths, strict=True):
        stripped = line.strip()
        starts.append(
            0 <= depth <= main
            and not stripped.startswith(_CONTINUES_LINE)
            and not above.endswith(_LEAVES_OPEN)
        )
        if stripped:
            above = stripped
    return starts


def split_list(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a list run between items; an item too big alone splits as prose."""
    items: list[_Line] = []
    for line in _lines(text):
        if items and (not line.text.strip() or line.text[:1] in " \t"):
            last = items[-1]
            items[-1] = _Line(text[last.start : line.end], last.start)
        else:
            items.append(line)
    items = [_Line(item.text.rstrip(), item.start) for item in items if item.text.strip()]
    return _pack_lines(items, size, count)


def fit_text(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """``text`` whole when it fits, else cut as prose: for heading lines and other odd units."""
    if count_within(count, text, size) <= size:
        return [Piece(text, 0, len(text))]
    return split_prose(text, size, 0, count)


def _split_row(row: _Line, names: list[str], size: int, count: TokenCounter) -> list[Piece]:
    """A table row too big for the budget, as ``column: value`` lines packed by cell."""
    units: list[_Line] = []
    position = 0
    for index, cell in enumerate(_cells(row.text)):
        position = row.text.find(cell, position)
        value = cell.strip()
        if value:
            name = names[index] if index < len(names) else ""
            label = f"{name}: " if name else ""
            where = row.start + position + cell.index(value)
            units.append(_Line(label + value, where, skip=len(label)))
        position += len(cell)
    if not units:
        return row.place(split_prose(row.text, size, 0, count))
    return _pack_lines(units, size, count)


def _pack_lines(units: list[_Line], size: int, count: TokenCounter) -> list[Piece]:
    """Units packed one a line, unwrapped; a unit too big alone is cut as prose."""
    return _pack(
        units,
        size,
        count,
        too_big=lambda unit: unit.place(split_prose(unit.text, size, 0, count)),
    )


def _pack(
    units: list[_Line],
    size: int,
    count: TokenCounter,
    *,
    head: str = "",
    tail: str = "",
    too_big: Callable[[_Line], list[Piece]],
    cut_before: list[bool] | None = None,
) -> list[Piece]:
    """Units packed greedily one a line between ``head`` and ``tail``, each part within ``size``.

    A part's text is ``head``, its units joined by newlines, then ``tail``.
    Whether one more unit still fits is asked of the exact count of the part
    with it, but the units already in are not encoded again for the answer:
    a tally keeps the count of the part up to its last cut.

    ``cut_before`` marks the units a part should preferably start with (code
    statements): a full part ends before the last such unit in its second
    half, and the units after it open the next part.
    """
    pieces: list[Piece] = []
    current: list[_Line] = []
    alone = TokenTally(count, head)  # the head, to which each unit is tried alone
    part = alone.copy()  # the head and the units in ``current``

    def close() -> None:
        if current:
            start, end = current[0].start, current[-1].end
            body = "\n".join(u.text for u in current)
            pieces.append(Piece(f"{head}{body}{tail}", start, end))
            current.clear()

    def close_at_statement() -> None:
        nonlocal part
        cut = _last_cut(current, cut_before, first_index) if cut_before is not None else None
        if cut is None:
            close()
            return
        carried = current[cut:]
        del current[cut:]
        close()
        current.extend(carried)
        part = alone.copy()
        part.append("\n".join(u.text for u in carried))

    first_index = 0  # the index in ``units`` of current[0]
    for index, unit in enumerate(units):
        if alone.within(unit.text + tail, size) > size:
            close()
            pieces.extend(too_big(unit))
            continue
        if current and part.within(f"\n{unit.text}{tail}", size) > size:
            close_at_statement()
            first_index = index - len(current)
            if current and part.within(f"\n{unit.text}{tail}", size) > size:
                close()
        if current:
            part.append(f"\n{unit.text}")
        else:
            part = alone.copy()
            part.append(unit.text)
            first_index = index
        current.append(unit)
    close()
    return pieces


def _last_cut(current: list[_Line], cut_before: list[bool], first: int) -> int | None:
    """The position in ``current`` of its last statement start in the second half, if any."""
    for position in range(len(current) - 1, max(len(current) // 2, 1) - 1, -1):
        if cut_before[first + position]:
            return position
    return None


def _lines(text: str) -> list[_Line]:
    lines: list[_Line] = []
    start = 0
    for line in text.split("\n"):
        lines.append(_Line(line, start))
        start += len(line) + 1
    return lines


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return _CELL_SPLIT.split(inner)


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
