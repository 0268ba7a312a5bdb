"""Domain values shared by every port and pipeline.

All of them are frozen dataclasses: a value that crosses a port boundary cannot be
mutated behind the back of the stage that produced it, and equal values compare
equal, which is what the tests and the dedup logic lean on.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from ragsage.core import json_match
from ragsage.core.errors import InvalidRequest

NAMESPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
_NAMESPACE = re.compile(NAMESPACE_PATTERN)
# A principal is an opaque name such as ``group:sales`` or ``user:ana@example.com``.
# No comma (the session setting lists them comma-separated) and no leading ``*``
# (the setting's mark for a session bound to no principal).
PRINCIPAL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+/=#-]{0,199}$"
_PRINCIPAL = re.compile(PRINCIPAL_PATTERN)
MAX_PRINCIPALS = 64


def _principals_problem(names: frozenset[Any], what: str) -> str | None:
    """What is wrong with a set of principal names, or None."""
    for name in names:
        if not isinstance(name, str) or not _PRINCIPAL.fullmatch(name):
            return (
                f"{what} holds {name!r}: a principal name is 1-200 characters of letters, "
                "digits and _ . : @ + / = # -, starting with a letter or digit"
            )
    if len(names) > MAX_PRINCIPALS:
        return f"{what} names {len(names)} principals; at most {MAX_PRINCIPALS}"
    return None


def check_principals(names: Any, what: str = "an access list") -> frozenset[str]:
    """``names`` as a set of valid principal names, or InvalidRequest naming the bad one."""
    from ragsage.core.errors import InvalidRequest

    if isinstance(names, str) or not isinstance(names, (list, tuple, set, frozenset)):
        raise InvalidRequest(f"{what} must be a list of principal names")
    found = frozenset(names)
    problem = _principals_problem(found, what)
    if problem is not None:
        raise InvalidRequest(problem)
    return found


@dataclass(frozen=True, slots=True)
class Scope:
    """The tenant a piece of work belongs to, and whom it reads for.

    ``principals`` None is a session bound to no principal: it reads every
    document of the namespace (workers, the CLI, unbound keys).  A set binds
    it: it reads only documents whose access list is empty or names one of
    them, which the database enforces (docs/tenants.md, "Access lists").
    """

    namespace: str
    principals: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not _NAMESPACE.fullmatch(self.namespace):
            raise ValueError(
                "namespace must be 1-128 characters of letters, digits, '_', '.', ':' or '-', "
                f"starting with a letter or digit; got {self.namespace!r}"
            )
        if self.principals is not None:
            if not self.principals:
                raise ValueError("a bound scope names at least one principal")
            problem = _principals_problem(self.principals, "a scope's principals")
            if problem is not None:
                raise ValueError(problem)

    @property
    def bound(self) -> bool:
        return self.principals is not None

    def unbound(self) -> Scope:
        """The same namespace, read for no principal in particular."""
        return Scope(self.namespace)


def scope_for(namespace: str, principals: Collection[str] | None = None) -> Scope:
    """The scope a caller names, bound to ``principals`` when given (docs/access.md).

    A malformed namespace or principal name is the caller's error: InvalidRequest.
    """
    try:
        return Scope(namespace, None if principals is None else frozenset(principals))
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None


@dataclass(frozen=True, slots=True)
class RawSource:
    """An uploaded file as bytes, before anything has looked inside it."""

    content: bytes
    filename: str
    media_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


class PageRoute(StrEnum):
    """How a page's text is obtained: from its text layer, or by a vision model."""

    TEXT = "text"
    VISION = "vision"


@dataclass(frozen=True, slots=True)
class PageLayout:
    """What the parser measured about a page, for the page classifier to judge."""

    text_chars: int
    image_area_ratio: float = 0.0
    largest_bitmap_area: float = 0.0


@dataclass(frozen=True, slots=True)
class PageImage:
    """A rendered page (or an uploaded picture) for vision transcription."""

    data: bytes
    media_type: str = "image/png"
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a parsed document as Markdown (empty until vision fills it).

    ``positions`` says where the text's lines sit on the page, when the reader
    can tell (a born-digital PDF); None for formats without a page to show.
    """

    number: int
    text: str
    layout: PageLayout | None = None
    image: PageImage | None = None
    route: PageRoute | None = None
    positions: PagePositions | None = None


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


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """Parser output: the pages in order, and a title when the format carries one."""

    pages: tuple[Page, ...]
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        return "\n\n".join(page.text for page in self.pages if page.text.strip())


@dataclass(frozen=True, slots=True)
class Document:
    """A document as the knowledge base records it."""

    id: str
    content_hash: str
    title: str
    source: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ChunkSection:
    """The part of a chunk that one section of its document holds.

    ``start``/``end`` are offsets in the chunk's text; ``page_start``/``page_end``
    the same words' span in the text of page ``page``.  A chunk that joined
    small sections lists each, in order, so a citation can name the section a
    quoted sentence sits in rather than the chunk's first.
    """

    heading_path: tuple[str, ...]
    start: int
    end: int
    page: int = 0
    page_start: int = 0
    page_end: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "heading_path": list(self.heading_path),
            "start": self.start,
            "end": self.end,
            "page": self.page,
            "page_start": self.page_start,
            "page_end": self.page_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkSection:
        return cls(
            heading_path=tuple(str(part) for part in data.get("heading_path") or ()),
            start=int(data.get("start") or 0),
            end=int(data.get("end") or 0),
            page=int(data.get("page") or 0),
            page_start=int(data.get("page_start") or 0),
            page_end=int(data.get("page_end") or 0),
        )


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable passage of a document.

    ``text`` is what a reader sees and what gets cited; ``embed_text`` is what the
    embedder sees (the text plus any context a contextualizer prepended). ``source``
    and ``created_at`` are copied from the document so stores can filter and apply
    recency bias without a join.  ``start_char``/``end_char`` are the span of the
    page text (of the chunk's first page) the chunk was cut from; a chunk that
    repeats a table header, or merges sections, covers that span without being a
    verbatim slice of it.  ``sections`` lists the sections a joined chunk holds
    (empty: all of it is ``heading_path``'s); :meth:`section_at` reads it.
    """

    id: str
    document_id: str
    ordinal: int
    text: str
    embed_text: str
    heading_path: tuple[str, ...] = ()
    page_numbers: tuple[int, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    created_at: datetime | None = None
    start_char: int = 0
    end_char: int = 0
    sections: tuple[ChunkSection, ...] = ()

    def section_at(self, offset: int) -> ChunkSection:
        """The section holding the chunk text's character at ``offset``: the last one
        starting at or before it (a one-section chunk's is all of it)."""
        if self.sections:
            started = [section for section in self.sections if section.start <= offset]
            return started[-1] if started else self.sections[0]
        page = self.page_numbers[0] if self.page_numbers else 0
        return ChunkSection(
            self.heading_path, 0, len(self.text), page, self.start_char, self.end_char
        )


def chunk_id(document_id: str, ordinal: int) -> str:
    """The id of a document's ``ordinal``-th chunk: ``<document>:<ordinal>``."""
    return f"{document_id}:{ordinal}"


def split_chunk_id(value: str) -> tuple[str, int] | None:
    """(document id, ordinal) of a chunk id, or None when ``value`` is not one."""
    document_id, _, ordinal = value.rpartition(":")
    if not document_id or not ordinal.isdigit() or len(ordinal) > 9:
        return None
    return document_id, int(ordinal)


@dataclass(frozen=True, slots=True)
class EmbeddedChunk:
    """A chunk together with the vector of its ``embed_text``."""

    chunk: Chunk
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A retrieval candidate; each stage's score is kept apart from the fused one."""

    chunk: Chunk
    score: float
    vector_score: float | None = None
    keyword_score: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate by chunk id and its stage's raw score.

    ``chunk`` is there when the store read the row anyway (the first few
    results of a ranking); otherwise it is read later, if the candidate wins.
    """

    chunk_id: str
    score: float
    chunk: Chunk | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, for rewriting follow-up questions."""

    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions a retrieval applies before ranking; every set field must match.

    ``metadata`` matches when each key is present on the chunk with a value equal
    by JSON's rules (``true`` is not ``1``; ``1`` is ``1.0``), as the SQL of a search
    compares them (:mod:`ragsage.core.json_match`);
    ``created_after``/``created_before`` bound the document's creation time
    (inclusive), and a chunk with no time fails any time bound.
    """

    document_ids: frozenset[str] | None = None
    sources: frozenset[str] | None = None
    metadata: Mapping[str, Any] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None

    def matches(self, chunk: Chunk) -> bool:
        return self.admits(chunk.document_id, chunk.source, chunk.metadata, chunk.created_at)

    def matches_document(self, document: Document) -> bool:
        return self.admits(document.id, document.source, document.metadata, document.created_at)

    def admits(
        self,
        document_id: str,
        source: str,
        metadata: Mapping[str, Any],
        created_at: datetime | None,
    ) -> bool:
        """True if a passage of this document, source, metadata and time passes every filter."""
        if self.document_ids is not None and document_id not in self.document_ids:
            return False
        if self.sources is not None and source not in self.sources:
            return False
        if self.metadata and not json_match.contains(metadata, self.metadata):
            return False
        if self.created_after is not None or self.created_before is not None:
            if created_at is None:
                return False
            if self.created_after is not None and created_at < self.created_after:
                return False
            if self.created_before is not None and created_at > self.created_before:
                return False
        return True

    def narrowing(self, asked: SearchFilters | None) -> SearchFilters:
        """What passes both these filters and ``asked``: each field the stricter of the two.

        Two metadata filters that want different values for one key pass
        nothing, as do two sets of ids or sources with nothing in common.
        """
        if asked is None or asked.is_empty:
            return self
        metadata = dict(asked.metadata or {})
        nothing = False
        for key, value in (self.metadata or {}).items():
            nothing = nothing or (key in metadata and not json_match.equal(metadata[key], value))
            metadata[key] = value
        ids = _both(self.document_ids, asked.document_ids)
        return SearchFilters(
            document_ids=frozenset() if nothing else ids,
            sources=_both(self.sources, asked.sources),
            metadata=metadata or None,
            created_after=_latest(self.created_after, asked.created_after),
            created_before=_earliest(self.created_before, asked.created_before),
        )

    @property
    def is_empty(self) -> bool:
        return (
            self.document_ids is None
            and self.sources is None
            and not self.metadata
            and self.created_after is None
            and self.created_before is None
        )


def _both(one: frozenset[str] | None, other: frozenset[str] | None) -> frozenset[str] | None:
    if one is None or other is None:
        return other if one is None else one
    return one & other


def _latest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else max(one, other)


def _earliest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else min(one, other)


def make_chunk(
    document: Document,
    ordinal: int,
    text: str,
    *,
    heading_path: tuple[str, ...] = (),
    page_numbers: tuple[int, ...] = (),
    metadata: Mapping[str, Any] | None = None,
    start_char: int = 0,
    end_char: int = 0,
    sections: tuple[ChunkSection, ...] = (),
) -> Chunk:
    """A chunk of ``document`` carrying the document's source, time and metadata.

    Chunkers build chunks through this so every one of them copies the document
    fields the stores filter on in the same way (the document title lands in the
    metadata so citations can name it); ``embed_text`` starts as the text and the
    contextualizer replaces it.
    """
    merged = {"title": document.title, **document.metadata, **(metadata or {})}
    return Chunk(
        id=chunk_id(document.id, ordinal),
        document_id=document.id,
        ordinal=ordinal,
        text=text,
        embed_text=text,
        heading_path=heading_path,
        page_numbers=page_numbers,
        metadata=merged,
        source=document.source,
        created_at=document.created_at,
        start_char=start_char,
        end_char=end_char,
        sections=sections,
    )
