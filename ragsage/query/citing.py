"""Where in a cited passage the answer's words come from.

An answer cites whole passages (``[n]``), but a passage may join several small
sections, and a reader following a citation wants the sentence, not the
passage's first heading.  So each cited passage's sentences are aligned with
the words the answer attributes to it: the text before each group of markers
belongs to every source the group names.  A sentence of the passage counts as
used when at least half of its content words appear in that text (an
extractive answer quotes it whole, a generated one paraphrases it); the best
one, with the used sentences next to it, is the cited span, and the section
holding it is the citation's section.  When no sentence is used, the citation
falls back to the passage's first section and says so (``located="passage"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsage.core.chunks import Chunk, ChunkSection
from ragsage.core.text import (
    FENCE_LINE,
    HEADING_LINE,
    LIST_ITEM,
    between_titles,
    is_table_row,
    words,
)

# Paragraphs are separated by blank lines.  In prose a sentence ends at . ! or ?
# followed by space (a line break inside a paragraph is only a wrap); in a
# paragraph of list items, table rows, headings or code, each line is a unit.
_PARAGRAPH = re.compile(r"(?:[^\n]|\n(?![ \t]*\n))+")
_LINE = re.compile(r"[^\n]+")
# A full stop inside a token ("0.8", "e.g", "api.v1") does not end a sentence;
# possessive, so a run of stops is read once (linear time on any text).
_SENTENCE = re.compile(r"[^.!?](?:[^.!?]|[.!?]++(?=[^\s.!?]))*+(?:[.!?]+(?=\s|$)|$)")
_STOP_WORDS = frozenset(
    "a an and are as at be but by can for from has have how in is it its of on or "
    "that the their this to was were what when where which who why will with".split()
)
# A sentence is used when this share of its content words is in the answer's text.
USED_SHARE = 0.5
# Sentences beside the best one join the span while they are used too, up to this many.
MAX_SENTENCES = 3


@dataclass(frozen=True, slots=True)
class Located:
    """Where a citation's words are: a span of the passage and the section holding it."""

    section: ChunkSection
    start: int
    end: int
    quote: str
    located: str  # "sentence": aligned with the answer; "passage": nothing aligned

    @property
    def page_start(self) -> int:
        """The span's start in the section's page text (exact when the section is verbatim)."""
        return self.section.page_start + max(0, self.start - self.section.start)

    @property
    def page_end(self) -> int:
        return min(self.section.page_end, self.page_start + (self.end - self.start))


def content_words(text: str) -> set[str]:
    """The words that can tie a sentence to an answer: longer than two letters, no function word.

    A shorter list of function words than :data:`ragsage.core.text.STOPWORDS`:
    words such as "both" or "not" carry a sentence's claim here.
    """
    return {word for word in words(text) if len(word) > 2 and word not in _STOP_WORDS}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Each sentence or structured line of ``text`` as (start, end), headings and fences out."""
    spans: list[tuple[int, int]] = []
    for paragraph in _PARAGRAPH.finditer(text):
        base, body = paragraph.start(), paragraph.group(0)
        lines = list(_LINE.finditer(body))
        if any(_structured(line.group(0)) for line in lines):
            units = [line.span() for line in lines if not _label(line.group(0))]
        else:
            units = [
                found.span()
                for start, end in _between_titles(lines)
                for found in _SENTENCE.finditer(body, start, end)
            ]
        for unit_start, unit_end in units:
            start, end = base + unit_start, base + unit_end
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start < end:
                spans.append((start, end))
    return spans


def _between_titles(lines: list[re.Match[str]]) -> list[tuple[int, int]]:
    """The stretches of a paragraph's lines with its unmarked title lines left out."""
    runs = between_titles([line.group(0) for line in lines])
    return [(lines[run.start].start(), lines[run.stop - 1].end()) for run in runs]


def _label(line: str) -> bool:
    """A heading or a fence line: it marks where text is, it is not text to quote."""
    return bool(HEADING_LINE.match(line) or FENCE_LINE.match(line))


def _structured(line: str) -> bool:
    """A list item, table row, heading or fence: a unit by itself, not part of a sentence."""
    return bool(LIST_ITEM.match(line)) or is_table_row(line) or _label(line)


def locate(chunk: Chunk, claim: str) -> Located:
    """Where ``chunk``'s text holds the words of ``claim`` (the text citing it)."""
    wanted = content_words(claim)
    spans = sentence_spans(chunk.text)
    shares: list[float] = []
    for start, end in spans:
        words = content_words(chunk.text[start:end])
        shared = len(words & wanted)
        shares.append(shared / len(words) if words and shared >= 2 else 0.0)
    used = [i for i, share in enumerate(shares) if share >= USED_SHARE]
    if not used:
        section = chunk.section_at(0)
        return Located(section, 0, len(chunk.text), "", "passage")
    best = max(used, key=lambda i: (shares[i], -i))
    first = last = best
    while last - first + 1 < MAX_SENTENCES:
        if last + 1 < len(spans) and shares[last + 1] >= USED_SHARE:
            last += 1
        elif first > 0 and shares[first - 1] >= USED_SHARE:
            first -= 1
        else:
            break
    start, end = spans[first][0], spans[last][1]
    return Located(chunk.section_at(start), start, end, chunk.text[start:end], "sentence")
