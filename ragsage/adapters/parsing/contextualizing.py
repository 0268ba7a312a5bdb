"""Contextual retrieval without a model call: situate a chunk from structure already known.

The chunker puts each chunk's heading path and its span in the page on it, and
the pipeline hands over the pages, which is enough to say which document,
which section, and what is written just before and after, deterministically
and offline.

All the chunks of a document are situated in one pass: the pages' paragraphs
are indexed once, each chunk finds its neighbours by binary search on its
span, and a neighbour too long for the budget is cut to the part nearest the
chunk before any token is counted, so the cost grows with the document, not
with the document times its chunks.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragsage.adapters.parsing.languages import BY_NAME
from ragsage.adapters.parsing.readers.code_sections import LICENCE_WORDS, comment_words
from ragsage.adapters.parsing.tokens import (
    DEFAULT_ENCODING,
    count_within,
    cuts_apply,
    is_cut,
    make_token_counter,
    token_floor,
)
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document
from ragsage.core.offload import run_cpu
from ragsage.core.pages import Page
from ragsage.core.text import name_words

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s")
_SPACE = re.compile(r"\s+")
_PAGE_SEPARATOR = "\n\n"  # how the pipeline's full text joins pages
# No token of the encodings used here is longer than this many characters on
# average over a sentence, so this many characters per token of budget always
# hold more text than the budget can take.
_CHARS_PER_TOKEN = 16
_MAX_NAME_WORDS = 48
_FENCE_OPENING = re.compile(r"\s*`{3,}([^`\s]*)")


class HeadingWindowContextualizer:
    """A Contextualizer built from document structure instead of inference.

    The text it returns is a short header (the document title, the chunk's
    heading path, and up to ``window`` neighbouring paragraphs from each side of
    the chunk) followed by the chunk text unchanged.  ``max_context_tokens`` is
    a hard ceiling on everything put before the chunk, counted in
    ``encoding_name`` (the chunker's encoding by default, so one token means
    the same thing across the pipeline).  When the ceiling bites, the farthest
    paragraphs go first, then whole sentences; no word is ever cut.
    ``window=0`` gives title and heading context only.  A chunk of source code
    gets no neighbours (they are other definitions) but a ``Names:`` line: the
    words its compound identifiers are made of.  Deterministic, no I/O.
    """

    def __init__(
        self,
        *,
        window: int = 2,
        max_context_tokens: int = 128,
        encoding_name: str = DEFAULT_ENCODING,
    ) -> None:
        if window < 0:
            raise ValueError("window must not be negative")
        if max_context_tokens < 0:
            raise ValueError("max_context_tokens must not be negative")
        self.window = window
        self.max_context_tokens = max_context_tokens
        self.encoding_name = encoding_name
        self._count = make_token_counter(encoding_name)

    async def contextualize(self, document: Document, chunk: Chunk, *, full_text: str) -> str:
        """One chunk's text to embed, found in ``full_text`` by search (the port's form)."""
        index = _ParagraphIndex([Page(1, full_text)])
        located = _located_in(chunk, full_text)
        return self._context(document, chunk, index, located) + chunk.text

    async def contextualize_pages(
        self, document: Document, chunks: Sequence[Chunk], pages: Sequence[Page]
    ) -> list[str]:
        """Every chunk's text to embed, situated by its span in one pass over ``pages``.

        The work is pure CPU, so it runs off the event loop (:func:`run_cpu`),
        which keeps serving the other coroutines of the process meanwhile.
        """
        return await run_cpu(self.texts, document, chunks, pages)

    def texts(
        self, document: Document, chunks: Sequence[Chunk], pages: Sequence[Page]
    ) -> list[str]:
        """The synchronous body of :meth:`contextualize_pages`, for a worker thread."""
        index = _ParagraphIndex(pages)
        # Neighbouring chunks try the same paragraphs: each part is counted once.
        counts: dict[str, int] = {}
        out = []
        for chunk in chunks:
            span = index.span_of(chunk)
            out.append(self._context(document, chunk, index, span, counts) + chunk.text)
        return out

    def _context(
        self,
        document: Document,
        chunk: Chunk,
        index: _ParagraphIndex,
        span: tuple[int, int] | None,
        counts: dict[str, int] | None = None,
    ) -> str:
        budget = _Budget(self._count, self.max_context_tokens, counts)
        for line in _header_lines(document, chunk):
            budget.try_add_header(line)
        if _is_code(document, chunk):
            # Source code: the neighbours are other definitions, and their words
            # in this chunk's vector would make it answer for them.  What the
            # chunk's own names say in plain words is the context it lacks.
            # A later window of a long definition lost the doc comment its first
            # window holds: the comment's first line says what the whole is for.
            if span is not None and _later_window(chunk):
                summary = index.definition_summary(chunk.page_numbers[0], span[0])
                if summary:
                    budget.try_add_header(f"Summary: {summary}")
            _add_names(budget, name_words(chunk.text, _MAX_NAME_WORDS))
            return budget.render()
        if self.window and span is not None and chunk.text.strip():
            reach = max(1, self.max_context_tokens) * _CHARS_PER_TOKEN
            before = index.before(span[0], self.window, reach)
            after = index.after(span[1], self.window, reach)
            sides = ((before, budget.before, True), (after, budget.after, False))
            open_sides = {True: True, False: True}
            for distance in range(self.window):
                for paragraphs, chosen, is_before in sides:
                    if open_sides[is_before] and distance < len(paragraphs):
                        open_sides[is_before] = budget.try_add(
                            chosen, paragraphs[distance], keep_end=is_before
                        )
        return budget.render()


@dataclass(frozen=True, slots=True)
class _Paragraph:
    start: int  # offsets in the pages joined as the pipeline joins them
    end: int
    text: str  # the raw text of the paragraph
    heading: bool


class _ParagraphIndex:
    """The pages' paragraphs in order, with spans, for neighbour lookups by offset."""

    def __init__(self, pages: Sequence[Page]) -> None:
        self.bases: dict[int, int] = {}
        self.pages: dict[int, str] = {}
        self.paragraphs: list[_Paragraph] = []
        base = 0
        for page in pages:
            if not page.text.strip():
                continue
            self.bases.setdefault(page.number, base)
            self.pages.setdefault(page.number, page.text)
            start = 0
            for found in _PARAGRAPH_BREAK.finditer(page.text):
                self._add(page.text, base, start, found.start())
                start = found.end()
            self._add(page.text, base, start, len(page.text))
            base += len(page.text) + len(_PAGE_SEPARATOR)
        self.starts = [p.start for p in self.paragraphs]
        self.ends = [p.end for p in self.paragraphs]

    def _add(self, text: str, base: int, start: int, end: int) -> None:
        body = text[start:end]
        if body.strip():
            heading = bool(_HEADING_LINE.match(body.strip()))
            self.paragraphs.append(_Paragraph(base + start, base + end, body, heading))

    def span_of(self, chunk: Chunk) -> tuple[int, int] | None:
        """The chunk's span in the joined pages: from its offsets, else by search in its page."""
        page = chunk.page_numbers[0] if chunk.page_numbers else None
        if page is None or page not in self.bases:
            return None
        base = self.bases[page]
        if chunk.end_char > chunk.start_char:
            return base + chunk.start_char, base + chunk.end_char
        located = _located_in(chunk, self.pages[page])
        return None if located is None else (base + located[0], base + located[1])

    def definition_summary(self, page: int, offset: int) -> str | None:
        """The first line of the doc comment (or docstring) opening the code block of
        page ``page`` that holds the joined offset ``offset``, if one does in its first lines."""
        text = self.pages[page]
        start = offset - self.bases[page]
        opener = text.rfind("```", 0, start)
        if opener < 0:
            return None
        body = text.find("\n", opener) + 1
        return doc_summary(text[body:start].split("\n")[:_SUMMARY_LINES])

    def before(self, offset: int, window: int, reach: int) -> list[str]:
        """Up to ``window`` paragraphs ending before ``offset``, nearest first, flattened."""
        out: list[str] = []
        i = bisect_right(self.starts, offset) - 1
        while i >= 0 and len(out) < window:
            paragraph = self.paragraphs[i]
            i -= 1
            if paragraph.heading:
                continue
            # The paragraph the chunk starts inside gives only what precedes the chunk.
            cut = min(paragraph.end, offset) - paragraph.start
            first = max(0, cut - reach)
            flat = _flatten(paragraph.text[first:cut], cut_before=first > 0, cut_after=False)
            if flat:
                out.append(flat)
        return out

    def after(self, offset: int, window: int, reach: int) -> list[str]:
        """Up to ``window`` paragraphs starting after ``offset``, nearest first, flattened."""
        out: list[str] = []
        i = bisect_left(self.ends, offset + 1)
        while i < len(self.paragraphs) and len(out) < window:
            paragraph = self.paragraphs[i]
            i += 1
            if paragraph.heading:
                continue
            cut = max(paragraph.start, offset) - paragraph.start
            last = min(len(paragraph.text), cut + reach)
            flat = _flatten(
                paragraph.text[cut:last], cut_before=False, cut_after=last < len(paragraph.text)
            )
            if flat:
                out.append(flat)
        return out


def _flatten(text: str, *, cut_before: bool, cut_after: bool) -> str:
    """Whitespace collapsed; a word the window cut through at its far side is left out."""
    words = text.split()
    if cut_before and words and not text[:1].isspace():
        words = words[1:]
    if cut_after and words and not text[-1:].isspace():
        words = words[:-1]
    return " ".join(words)


def _located_in(chunk: Chunk, text: str) -> tuple[int, int] | None:
    """Where the chunk sits in ``text``, by search: for chunks that carry no span."""
    if not chunk.text.strip():
        return None
    start = text.find(chunk.text)
    if start >= 0:
        return start, start + len(chunk.text)
    # A chunk rebuilt from its block (a table part with its header repeated)
    # is not verbatim in the text; its first line still anchors it.
    first_line = chunk.text.strip().split("\n", 1)[0]
    start = text.find(first_line) if first_line else -1
    return None if start < 0 else (start, start + len(first_line))


class _Budget:
    """The prefix being assembled, never allowed past its token ceiling.

    The prefix is counted as the sum of its parts (each line's label, each
    paragraph with the space before it) wherever the place between two parts
    is a cut of the encoding (see :mod:`ragsage.adapters.parsing.tokens`), so
    a part met again (the next chunk tries the same neighbours) is never
    encoded twice; the sum is the exact count of the rendered prefix.
    """

    def __init__(
        self, count: Callable[[str], int], limit: int, counts: dict[str, int] | None = None
    ) -> None:
        self.count = count
        self.limit = limit
        self.header: list[str] = []
        self.before: list[str] = []  # nearest first
        self.after: list[str] = []  # nearest first
        self._counts = counts if counts is not None else {}
        self._cuts = cuts_apply(count)

    def _parts(self) -> list[str]:
        """The prefix in pieces: each line's label, each paragraph with its space, line ends."""
        lines = [[line] for line in self.header]
        if self.before:
            lines.append(["Preceded by:", *(" " + p for p in reversed(self.before))])
        if self.after:
            lines.append(["Followed by:", *(" " + p for p in self.after)])
        parts: list[str] = []
        for line in lines:
            parts.extend(line)
            parts[-1] += "\n"
        if parts:
            parts[-1] += "\n"  # the prefix ends in a blank line
        return parts

    def render(self) -> str:
        return "".join(self._parts())

    def tokens(self, parts: list[str] | None = None) -> int:
        """The exact token count of :meth:`render` (of ``parts``, if already made)."""
        parts = self._parts() if parts is None else parts
        if not parts:
            return 0
        if not self._cuts:
            return self.count("".join(parts))
        total = 0
        segment = parts[0]
        for part in parts[1:]:
            if segment and _joins_at_cut(segment, part):
                total += self._part(segment)
                segment = part
            else:
                segment += part
        return total + self._part(segment)

    def _part(self, text: str) -> int:
        known = self._counts.get(text)
        if known is None:
            known = self._counts[text] = self.count(text)
        return known

    def fits(self) -> bool:
        parts = self._parts()
        # A candidate longer in words than the whole ceiling is refused unread.
        if token_floor("".join(parts)) > self.limit:
            return False
        return self.tokens(parts) <= self.limit

    def try_add_header(self, line: str) -> None:
        self.header.append(line)
        if not self.fits():
            self.header.pop()

    def try_add(self, chosen: list[str], paragraph: str, *, keep_end: bool) -> bool:
        """Add the paragraph, or as many whole sentences of it as fit; False once trimmed."""
        chosen.append(paragraph)
        if self.fits():
            return True
        chosen.pop()
        # Keep the sentences nearest the chunk: a preceding paragraph's last ones.
        # Each sentence is counted once; the sum is checked with one exact count
        # and shortened a sentence at a time only if joins added tokens.
        # The estimate may overshoot by the label and joins; the exact check trims.
        room = self.limit - self.tokens() + 4
        sentences = _SENTENCE_BREAK.split(paragraph)
        if keep_end:
            sentences.reverse()
        kept: list[str] = []
        used = 0
        for sentence in sentences[:-1] if len(sentences) > 1 else []:
            cost = count_within(self.count, sentence, room - used - 1) + 1
            if used + cost > room:
                break
            kept.append(sentence)
            used += cost
        while kept:
            part = " ".join(reversed(kept)) if keep_end else " ".join(kept)
            chosen.append(part)
            if self.fits():
                return False
            chosen.pop()
            kept.pop()
        return False


def _joins_at_cut(left: str, right: str) -> bool:
    """True when ``left + right`` may be counted as ``left`` and ``right`` apart."""
    # The cut test reads one character before the place and the indent after it.
    joined = left[-1:] + right
    return is_cut(joined, 1, len(joined))


def _later_window(chunk: Chunk) -> bool:
    window = chunk.metadata.get("window")
    return isinstance(window, list) and bool(window) and window[0] != 1


# A doc comment opens a definition: it is looked for in its first lines only.
_SUMMARY_LINES = 12
_COMMENT_MARKERS = ("///", "//!", "//", "/**", "/*", "*", "#", "--")
_DOCSTRING_QUOTES = ('"""', "'''", 'r"""', 'b"""', 'u"""')
# A shebang or a Rust attribute opens like a comment but is not one.
_NOT_COMMENTS = ("#!", "#[")


def doc_summary(lines: Sequence[str]) -> str | None:
    """The first line of words of the doc comment among a definition's first lines.

    Comments count only before the definition's first line of code (a
    comment inside the body is not its documentation); a docstring counts
    right after the header (Python).
    """
    in_docstring = False
    code_lines = 0
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if in_docstring:
            return _words_of(line.strip("\"'"))
        quote = next((q for q in _DOCSTRING_QUOTES if line.startswith(q)), None)
        if quote is not None:
            rest = line[len(quote) :].strip().strip("\"'")
            if rest:
                return _words_of(rest)
            in_docstring = True
            continue
        if line.startswith(_COMMENT_MARKERS) and not line.startswith(_NOT_COMMENTS):
            text = comment_words(line)
            if code_lines == 0 and not any(word in text.lower() for word in LICENCE_WORDS):
                words = _words_of(text)
                if words:
                    return words
            continue
        if line.startswith(("@", "#[")):
            continue  # decorators and attributes belong to the header
        code_lines += 1
        if code_lines > 3:  # past the header: no docstring follows
            return None
    return None


def _words_of(text: str) -> str | None:
    words = _SPACE.sub(" ", text).strip()
    return words[:_MAX_SUMMARY_CHARS] if any(c.isalpha() for c in words) else None


_MAX_SUMMARY_CHARS = 160


def _is_code(document: Document, chunk: Chunk) -> bool:
    """A chunk of a source file as a code reader wrote it: a fenced block of its language.

    The language alone would not do: a caller's own metadata may say
    ``language: en`` of a page of prose.
    """
    language = BY_NAME.get(str(document.metadata.get("language", "")))
    if language is None:
        return False
    # The writer (markdown.fenced) lengthens the fence past any backticks in the code.
    opening = _FENCE_OPENING.match(chunk.text)
    return opening is not None and opening[1] == language.fence


def _add_names(budget: _Budget, names: list[str]) -> None:
    """A ``Names:`` line of as many of ``names`` as the budget leaves room for."""
    while names:
        budget.header.append("Names: " + " ".join(names))
        if budget.fits():
            return
        budget.header.pop()
        names = names[: len(names) // 2]


def _header_lines(document: Document, chunk: Chunk) -> list[str]:
    lines = []
    title = _SPACE.sub(" ", document.title).strip()
    if title:
        lines.append(f"Document: {title}")
    if chunk.heading_path:
        lines.append("Section: " + " > ".join(chunk.heading_path))
    return lines
