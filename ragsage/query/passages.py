"""From ranked chunks to the passages handed over: joined windows, and a budget of words.

A long definition of source code is indexed as windows (``window: [k, n]`` in a
chunk's metadata, see :mod:`ragsage.adapters.parsing.chunking`).  When a search
finds two or more adjacent windows of one definition they come back as one
passage, at the rank of the best of them, so a reader sees the lines in order
once.  A passage of code never repeats file lines a passage ranked above it
handed over already (a whole definition after one of its windows keeps only
its other lines).

A caller with a budget (``budget_tokens``: whitespace-separated words, counting
everything a result hands over, its heading path as well as its text) gets the
passages that best fill it, in rank order: a joined passage that does not fit
gives way to its best window, any other passage too long for what is left is
cut to its part that holds the most of the question's words, and no passage
repeats lines (or characters of a page) that one before it already handed over.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.text import words

# Below this many words left, a cut passage would say too little to be worth it.
MIN_CUT_WORDS = 24
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def heading_words(heading_path: Sequence[str], sections: Iterable[Sequence[str]] = ()) -> int:
    """The whitespace-separated words of a heading path and its sections' other headings."""
    seen = set(heading_path)
    extra = [part for path in sections for part in path if part not in seen]
    return sum(len(part.split()) for part in (*heading_path, *dict.fromkeys(extra)))


def handed_words(chunk: Chunk) -> int:
    """Every word a result hands over: its text and the headings returned with it."""
    sections = (section.heading_path for section in chunk.sections)
    return len(chunk.text.split()) + heading_words(chunk.heading_path, sections)


def window_of(chunk: Chunk) -> tuple[int, int] | None:
    """``(k, n)`` when the chunk is the k-th of n windows of one definition."""
    window = chunk.metadata.get("window")
    if isinstance(window, list) and len(window) == 2 and all(isinstance(v, int) for v in window):
        return window[0], window[1]
    return None


def join_windows(candidates: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Adjacent windows of one definition among ``candidates`` joined into one passage.

    The passage takes the place and the scores of its best window; the order
    of everything else is kept.
    """
    by_key: dict[tuple[str, int], int] = {}
    for index, candidate in enumerate(candidates):
        if window_of(candidate.chunk) is not None:
            by_key[(candidate.chunk.document_id, candidate.chunk.ordinal)] = index
    if len(by_key) < 2:
        return list(candidates)
    taken: set[int] = set()
    joined: dict[int, ScoredChunk] = {}
    for index, candidate in enumerate(candidates):
        if index in taken or window_of(candidate.chunk) is None:
            continue
        run = _run_around(candidates, by_key, index)
        if len(run) > 1:
            taken.update(run)
            best = min(run)  # the first in rank order is the best scored
            ordered = sorted(run, key=lambda i: candidates[i].chunk.ordinal)
            joined[best] = _joined([candidates[i] for i in ordered])
    if not joined:
        return list(candidates)
    out = []
    for index, candidate in enumerate(candidates):
        if index in joined:
            out.append(joined[index])
        elif index not in taken:
            out.append(candidate)
    return out


def _run_around(
    candidates: Sequence[ScoredChunk], by_key: dict[tuple[str, int], int], index: int
) -> list[int]:
    """The indexes of the windows of one definition adjacent to ``index``'s, itself included."""
    chunk = candidates[index].chunk
    run = [index]
    for step in (-1, 1):
        ordinal = chunk.ordinal
        while True:
            ordinal += step
            found = by_key.get((chunk.document_id, ordinal))
            if found is None or not _same_definition(chunk, candidates[found].chunk):
                break
            run.append(found)
    return run


def _same_definition(one: Chunk, other: Chunk) -> bool:
    first, second = window_of(one), window_of(other)
    return (
        first is not None
        and second is not None
        and first[1] == second[1]
        and one.heading_path == other.heading_path
        and one.page_numbers == other.page_numbers
    )


def _joined(run: Sequence[ScoredChunk]) -> ScoredChunk:
    """One passage of windows in file order: one fence around all their lines."""
    chunks = [candidate.chunk for candidate in run]
    opener, body, closer = _fenced_parts(chunks[0].text)
    bodies = [body]
    reached = _lines_of(chunks[0])
    for chunk in chunks[1:]:
        rows = _fenced_parts(chunk.text)[1].split("\n")
        lines = _lines_of(chunk)
        if reached is not None and lines is not None:
            # Windows overlap by a few lines: each is written once.
            rows = rows[max(0, reached[1] - lines[0] + 1) :]
            reached = lines
        bodies.append("\n".join(rows))
    closer = _fenced_parts(chunks[-1].text)[2]
    text = "\n".join(part for part in (opener, *bodies, closer) if part is not None)
    first, last = chunks[0], chunks[-1]
    metadata = dict(first.metadata)
    opening, closing = _lines_of(first), _lines_of(last)
    if opening is not None and closing is not None:
        metadata["lines"] = [opening[0], closing[1]]
    metadata["chunk_ids"] = [chunk.id for chunk in chunks]
    passage = replace(first, text=text, end_char=last.end_char, metadata=metadata)
    best = min(run, key=lambda candidate: (-candidate.score, candidate.chunk.id))
    return replace(best, chunk=passage)


def _fenced_parts(text: str) -> tuple[str | None, str, str | None]:
    """A fenced block's opening line, its body and its closing line (None when absent)."""
    lines = text.split("\n")
    opener = lines[0] if lines and _FENCE.match(lines[0]) else None
    if opener is not None:
        lines = lines[1:]
    closer = lines[-1] if len(lines) > 0 and _FENCE.match(lines[-1]) else None
    if closer is not None:
        lines = lines[:-1]
    return opener, "\n".join(lines), closer


# -- a budget of words ---------------------------------------------------------


@dataclass(slots=True)
class _Handed:
    """What was handed over so far: lines of each document, characters of each page."""

    lines: dict[str, list[tuple[int, int]]]
    spans: dict[tuple[str, int], list[tuple[int, int]]]

    def seen_lines(self, chunk: Chunk) -> list[tuple[int, int]]:
        return self.lines.setdefault(chunk.document_id, [])

    def seen_spans(self, chunk: Chunk) -> list[tuple[int, int]]:
        page = chunk.page_numbers[0] if chunk.page_numbers else 0
        return self.spans.setdefault((chunk.document_id, page), [])


def without_repeated_lines(candidates: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """Code passages without the file lines a passage before them already handed over."""
    handed = _Handed({}, {})
    out = []
    for candidate in candidates:
        if _lines_of(candidate.chunk) is None:
            out.append(candidate)
            continue
        passage = _without_repeats(candidate, handed)
        if passage is not None:
            out.append(passage)
            _remember(passage.chunk, handed)
    return out


def fill_budget(
    candidates: Sequence[ScoredChunk], budget: int, question: str, *, top_k: int | None = None
) -> list[ScoredChunk]:
    """The passages, in rank order, that best fill ``budget`` words of results.

    Each passage costs :func:`handed_words`.  One that repeats lines already
    handed over loses them (a passage left empty is dropped); one that does
    not fit what is left is replaced by its best window (joined windows) or
    cut to its part richest in the question's words, when at least
    :data:`MIN_CUT_WORDS` remain.  ``top_k`` caps the count.
    """
    wanted = set(words(question))
    handed = _Handed({}, {})
    out: list[ScoredChunk] = []
    left = budget
    for candidate in candidates:
        if left < MIN_CUT_WORDS or (top_k is not None and len(out) >= top_k):
            break
        passage = _without_repeats(candidate, handed)
        if passage is None:
            continue
        cost = handed_words(passage.chunk)
        if cost > left:
            passage = _fitted(passage, left, wanted)
            if passage is None:
                continue
            cost = handed_words(passage.chunk)
        out.append(passage)
        _remember(passage.chunk, handed)
        left -= cost
    return out


def _lines_of(chunk: Chunk) -> tuple[int, int] | None:
    lines = chunk.metadata.get("lines")
    if isinstance(lines, list) and len(lines) == 2 and all(isinstance(v, int) for v in lines):
        return lines[0], lines[1]
    return None


def _remember(chunk: Chunk, handed: _Handed) -> None:
    lines = _lines_of(chunk)
    if lines is not None:
        handed.seen_lines(chunk).append(lines)
    elif chunk.end_char > chunk.start_char:
        handed.seen_spans(chunk).append((chunk.start_char, chunk.end_char))


def _without_repeats(candidate: ScoredChunk, handed: _Handed) -> ScoredChunk | None:
    """The candidate without what was handed over already, or None if nothing is left."""
    chunk = candidate.chunk
    lines = _lines_of(chunk)
    if lines is not None:
        fresh = _fresh_range(lines, handed.seen_lines(chunk))
        if fresh is None:
            return None
        if fresh != lines:
            return replace(candidate, chunk=_code_lines(chunk, lines, fresh))
        return candidate
    if chunk.end_char <= chunk.start_char:
        return candidate
    span = (chunk.start_char, chunk.end_char)
    fresh = _fresh_range((span[0], span[1] - 1), handed.seen_spans(chunk))
    if fresh is None:
        return None
    if fresh == (span[0], span[1] - 1):
        return candidate
    # Overlapping prose (a paragraph cut with overlap): its repeated head goes
    # when the text is the page's own; otherwise it is kept whole.
    cut = fresh[0] - span[0]
    if fresh[1] == span[1] - 1 and 0 < cut < len(chunk.text):
        text = chunk.text[cut:].lstrip()
        if text:
            moved = replace(chunk, text=text, start_char=fresh[0])
            return replace(candidate, chunk=moved)
    return candidate


def _fresh_range(
    wanted: tuple[int, int], seen: Sequence[tuple[int, int]]
) -> tuple[int, int] | None:
    """The longest part of the inclusive range ``wanted`` that no ``seen`` range covers."""
    pieces = [wanted]
    for low, high in seen:
        next_pieces = []
        for start, end in pieces:
            if high < start or low > end:
                next_pieces.append((start, end))
                continue
            if start < low:
                next_pieces.append((start, low - 1))
            if end > high:
                next_pieces.append((high + 1, end))
        pieces = next_pieces
    if not pieces:
        return None
    return max(pieces, key=lambda piece: (piece[1] - piece[0], -piece[0]))


def _code_lines(chunk: Chunk, lines: tuple[int, int], keep: tuple[int, int]) -> Chunk:
    """A code passage cut to the file lines ``keep`` (inside its own ``lines``)."""
    opener, body, closer = _fenced_parts(chunk.text)
    rows = body.split("\n")
    first = keep[0] - lines[0]
    kept = rows[first : first + keep[1] - keep[0] + 1]
    text = "\n".join(part for part in (opener, "\n".join(kept), closer) if part is not None)
    return replace(chunk, text=text, metadata={**chunk.metadata, "lines": [keep[0], keep[1]]})


def _fitted(candidate: ScoredChunk, left: int, wanted: set[str]) -> ScoredChunk | None:
    """The candidate made to fit ``left`` words: its best window, or its richest part."""
    chunk = candidate.chunk
    room = left - heading_words(chunk.heading_path)
    if room < MIN_CUT_WORDS:
        return None
    lines = _lines_of(chunk)
    if lines is not None:
        opener, body, closer = _fenced_parts(chunk.text)
        rows = body.split("\n")
        fences = (opener is not None) + (closer is not None)
        start, end = _richest(rows, room - fences, wanted)
        if end <= start:
            return None
        keep = (lines[0] + start, lines[0] + end - 1)
        return replace(candidate, chunk=_code_lines(chunk, lines, keep))
    sentences = _SENTENCE_END.split(chunk.text)
    start, end = _richest(sentences, room, wanted)
    if end <= start:
        return None
    text = " ".join(sentences[start:end])
    return replace(candidate, chunk=replace(chunk, text=text))


def _richest(units: Sequence[str], room: int, wanted: set[str]) -> tuple[int, int]:
    """The run of ``units`` within ``room`` words holding the most of the question's words.

    Two pointers over the units: linear in their number.  Among runs as rich,
    the longest, then the earliest; a unit longer than ``room`` alone is never
    taken.
    """
    sizes = [len(unit.split()) for unit in units]
    hits = [len(set(words(unit)) & wanted) for unit in units]
    best = (0, 0, 0)  # hits, start, end
    start = total = found = 0
    for end, size in enumerate(sizes):
        total += size
        found += hits[end]
        while total > room and start <= end:
            total -= sizes[start]
            found -= hits[start]
            start += 1
        if end + 1 > start and (found, end + 1 - start) > (best[0], best[2] - best[1]):
            best = (found, start, end + 1)
    return best[1], best[2]


def cited_lines(chunk: Chunk, start: int, end: int) -> tuple[int, int] | None:
    """The file lines of a code passage's characters ``start`` to ``end`` (all of it
    when they are equal), or None for a passage that does not know its lines."""
    lines = _lines_of(chunk)
    if lines is None:
        return None
    if end <= start:
        return lines
    # The passage's first line is its opening fence; its code starts a line later.
    opened = _FENCE.match(chunk.text) is not None
    first = lines[0] + chunk.text.count("\n", 0, start) - opened
    last = lines[0] + chunk.text.count("\n", 0, max(end - 1, start)) - opened
    return max(first, lines[0]), min(max(last, first), lines[1])
