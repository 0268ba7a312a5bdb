"""Splitting one block that is larger than the token budget, never mid-word.

Prose splits at sentence boundaries, then word boundaries, carrying ``overlap``
tokens of trailing words into the next part so a sentence cut in two is still
readable from either side.  Tables split by rows with the header repeated, and
lists and code by items and lines; those parts are whole units already, so no
overlap is added.  A single word (or row) that cannot fit alone becomes its own
part flagged ``oversized``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

TokenCounter = Callable[[str], int]

_WORD = re.compile(r"\S+\s*")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")


@dataclass(frozen=True, slots=True)
class Piece:
    """A part of a block ready to become a chunk's text."""

    text: str
    oversized: bool = False


def split_prose(text: str, size: int, overlap: int, count: TokenCounter) -> list[Piece]:
    """Cut prose into parts of at most ``size`` tokens with ``overlap`` carried over."""
    words = _WORD.findall(text.strip())
    if not words:
        return []
    units = _units(words, size, count)
    # Each unit is counted once; a part is grown on the sum of its units' counts
    # and then checked (and if need be shortened) with one exact count.
    costs = [count("".join(words[a:b]).strip()) for a, b in units]

    def tokens(start: int, end: int) -> int:
        return count("".join(words[start:end]).strip())

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
        pieces.append(_piece(words, start, end, size, count))
        first = last + 1
        if first < len(units):
            start = _overlap_start(words, start, end, units[first][1], size, overlap, count)
    return pieces


def split_table(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a Markdown table into row groups, each repeating the header and separator."""
    lines = text.split("\n")
    head = "\n".join(lines[:2])
    return _pack(
        lines[2:],
        size,
        count,
        wrap=lambda body: f"{head}\n{body}",
        too_big=lambda row: [Piece(f"{head}\n{row}", oversized=True)],
    )


def split_code(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a fenced code block by lines, re-fencing every part."""
    lines = text.split("\n")
    opener = lines[0]
    has_closer = len(lines) > 1 and lines[-1].strip().startswith(opener.strip()[:3])
    body = lines[1:-1] if has_closer else lines[1:]
    closer = lines[-1] if has_closer else opener.strip()[:3]

    def wrap(inner: str) -> str:
        return f"{opener}\n{inner}\n{closer}"

    def too_big(line: str) -> list[Piece]:
        # The fences' tokens do not simply add to the line's, so the budget for the
        # words shrinks until every fenced part fits (or is down to single words).
        budget = max(1, size - count(wrap("")))
        while True:
            parts = [wrap(p.text) for p in split_prose(line, budget, 0, count)]
            if budget == 1 or all(count(part) <= size for part in parts):
                return [Piece(part, oversized=count(part) > size) for part in parts]
            budget -= 1

    return _pack(body, size, count, wrap=wrap, too_big=too_big)


def split_list(text: str, size: int, count: TokenCounter) -> list[Piece]:
    """Cut a list run between items; an item too big alone splits as prose."""
    items: list[str] = []
    for line in text.split("\n"):
        if items and (not line.strip() or line[:1] in " \t"):
            items[-1] += "\n" + line
        else:
            items.append(line)
    return _pack(
        [item.rstrip() for item in items],
        size,
        count,
        wrap=lambda body: body,
        too_big=lambda item: split_prose(item, size, 0, count),
    )


def _pack(
    units: list[str],
    size: int,
    count: TokenCounter,
    *,
    wrap: Callable[[str], str],
    too_big: Callable[[str], list[Piece]],
) -> list[Piece]:
    pieces: list[Piece] = []
    current: list[str] = []
    for unit in units:
        if count(wrap(unit)) > size:
            if current:
                pieces.append(Piece(wrap("\n".join(current))))
                current = []
            pieces.extend(too_big(unit))
        elif current and count(wrap("\n".join([*current, unit]))) > size:
            pieces.append(Piece(wrap("\n".join(current))))
            current = [unit]
        else:
            current.append(unit)
    if current:
        pieces.append(Piece(wrap("\n".join(current))))
    return pieces


def _units(words: list[str], size: int, count: TokenCounter) -> list[tuple[int, int]]:
    """Word ranges that each fit: sentences, or word runs of a sentence too long."""
    units: list[tuple[int, int]] = []
    start = 0
    for index, word in enumerate(words):
        if _SENTENCE_END.search(word.rstrip()) or index == len(words) - 1:
            units.extend(_sentence_units(words, start, index + 1, size, count))
            start = index + 1
    return units


def _sentence_units(
    words: list[str], start: int, end: int, size: int, count: TokenCounter
) -> list[tuple[int, int]]:
    if count("".join(words[start:end]).strip()) <= size:
        return [(start, end)]
    runs: list[tuple[int, int]] = []
    run_start = start
    while run_start < end:
        run_end = _fill(words, run_start, end, size, count)
        runs.append((run_start, run_end))
        run_start = run_end
    return runs


def _fill(words: list[str], start: int, end: int, size: int, count: TokenCounter) -> int:
    """The end of the longest word run from ``start`` that fits ``size`` (at least one word)."""
    # Per-word counts estimate the run cheaply; the exact count of the joined
    # text then trims it, since tokens can merge across a word boundary.
    used = 0
    stop = start
    while stop < end:
        cost = count(words[stop].strip())
        if stop > start and used + cost > size:
            break
        used += cost
        stop += 1
    while stop - start > 1 and count("".join(words[start:stop]).strip()) > size:
        stop -= 1
    return stop


def _overlap_start(
    words: list[str],
    floor: int,
    end: int,
    next_end: int,
    size: int,
    overlap: int,
    count: TokenCounter,
) -> int:
    """Where the next part starts: the most trailing words that fit ``overlap``.

    Only words of the part just emitted (from ``floor``) are carried, and never
    so many that the next unit no longer fits ``size`` with them.
    """
    if overlap <= 0:
        return end

    def fits(start: int) -> bool:
        return count("".join(words[start:end]).strip()) <= overlap

    # Binary search: a longer suffix never has fewer tokens.
    low, high = floor + 1, end  # high (no overlap) always fits
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    start = high
    while start < end and count("".join(words[start:next_end]).strip()) > size:
        start += 1
    return start


def _piece(words: list[str], start: int, end: int, size: int, count: TokenCounter) -> Piece:
    text = "".join(words[start:end]).strip()
    return Piece(text, oversized=end - start == 1 and count(text) > size)
