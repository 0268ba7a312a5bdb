"""Splitting one block that is larger than the token budget, never past the budget.

Prose splits as :mod:`.prose` cuts it.  Tables split by rows with the header
repeated, and a row too big alone by its cells (each written ``column: value``),
then as prose.  Lists split between items and code between lines, re-fenced; an
item or a line too big alone splits as prose, so no part is ever over the
budget, whatever the input.

Every part carries the span of the block's text it came from (``start`` and
``end``, character offsets into the block), so a chunk knows where it sits in
its page without anyone searching the page for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ragsage.adapters.parsing.prose import Piece, TokenCounter, fit_text, split_prose
from ragsage.adapters.parsing.tokens import TokenTally

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
# A code line starting like this continues the statement above it; one ending
# like this leaves its statement open.
_CONTINUES_LINE = (")", "]", "}", ".", "&&", "||", "+", "-", "*", "/", "?", ":", "=", "|", ",")
_LEAVES_OPEN = (",", "(", "[", "\\", "=", "+", "-", "*", "&&", "||", "|", "?", ":", "->", "=>")


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
