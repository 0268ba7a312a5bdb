"""Where a page's text sits on the page: enough to draw a highlight over a citation.

Only born-digital formats (a PDF's text layer) can tell; every other format
leaves a page without positions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Box(NamedTuple):
    """A rectangle on a page, in points from its top-left corner.

    A named tuple, not a dataclass: a page makes one a line, and building a
    frozen dataclass costs several times as much.
    """

    left: float
    top: float
    right: float
    bottom: float


class TextLine(NamedTuple):
    """One line of a page's text: its span in the text and its box on the page."""

    start: int
    end: int
    box: Box


# Rough advance widths (share of the font size) of a proportional Latin face,
# by kind of character: enough to place a span's ends inside a line whose two
# ends are known, within a character or two.
_NARROW = frozenset("ijlI!|.,:;'`")
_SEMI = frozenset('ftr()[]{}-"/\\ ')
_WIDE = {"m": 0.78, "w": 0.72, "M": 0.83, "W": 0.94}


def _advance(char: str) -> float:
    if char in _NARROW:
        return 0.26
    if char in _SEMI:
        return 0.30
    if char in _WIDE:
        return _WIDE[char]
    if char.isupper():
        return 0.68
    return 0.54


@dataclass(frozen=True, slots=True)
class PagePositions:
    """Where a page's text lines are: enough to draw a highlight over any span of it.

    Lines are kept, not characters: a page of 3,000 characters has about fifty
    lines, and reading two character cells a line keeps placing them cheap.  A
    span that starts or ends inside a line is cut there by the rough widths of
    the line's characters (measured on real PDFs, this places sentences as well
    as keeping every word's edges did).  ``text`` is the page's text, which the
    widths are read from; it is the page's own, not part of the stored form.
    The lines are held flat (start, end, left, top, right, bottom, then the
    next line's): a reader makes one record a line of every page it reads, and
    objects for each cost more than the placing itself.
    """

    width: float
    height: float
    flat: tuple[float, ...] = ()
    text: str = field(default="", compare=False, repr=False)

    @property
    def lines(self) -> tuple[TextLine, ...]:
        values = self.flat
        return tuple(
            TextLine(int(values[i]), int(values[i + 1]), Box(*values[i + 2 : i + 6]))
            for i in range(0, len(values), 6)
        )

    def boxes(self, start: int, end: int) -> list[Box]:
        """The boxes covering the page text's characters ``start`` to ``end``."""
        found: list[Box] = []
        for line in self.lines:
            if line.end <= start or line.start >= end or line.end <= line.start:
                continue
            left, right = line.box.left, line.box.right
            chars = self.text[line.start : line.end]
            if len(chars) == line.end - line.start:
                widths = [_advance(char) for char in chars]
                scale = (right - left) / (sum(widths) or 1.0)
                cut_left = left + sum(widths[: max(start, line.start) - line.start]) * scale
                right = left + sum(widths[: min(end, line.end) - line.start]) * scale
                left = cut_left
            found.append(Box(left, line.box.top, right, line.box.bottom))
        return found

    def to_dict(self) -> dict[str, Any]:
        values = self.flat
        return {
            "width": self.width,
            "height": self.height,
            "lines": [
                [int(values[i]), int(values[i + 1]), *values[i + 2 : i + 6]]
                for i in range(0, len(values), 6)
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], text: str = "") -> PagePositions:
        flat: list[float] = []
        for row in data.get("lines") or ():
            if len(row) < 6:
                raise ValueError("a line's record needs its span and its box")
            flat.extend(float(value) for value in row[:6])
        return cls(float(data["width"]), float(data["height"]), tuple(flat), text)
