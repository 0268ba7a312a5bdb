"""What retrieval and answering hand back to callers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragsage.core.chunks import Chunk
from ragsage.core.geometry import Box, PagePositions
from ragsage.core.serialization import chunk_to_dict


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One retrieved chunk, its per-stage scores, and any neighbours added around it."""

    chunk: Chunk
    score: float
    vector_score: float | None = None
    keyword_score: float | None = None
    rerank_score: float | None = None
    above: tuple[Chunk, ...] = ()
    below: tuple[Chunk, ...] = ()

    @property
    def context_text(self) -> str:
        """The hit's text with its expanded neighbours, in reading order."""
        return "\n\n".join(chunk.text for chunk in (*self.above, self.chunk, *self.below))

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk": chunk_to_dict(self.chunk),
            "score": self.score,
            "vector_score": self.vector_score,
            "keyword_score": self.keyword_score,
            "rerank_score": self.rerank_score,
            "above": [chunk_to_dict(chunk) for chunk in self.above],
            "below": [chunk_to_dict(chunk) for chunk in self.below],
        }


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """The ranked hits for one query, with how long each stage took."""

    query: str
    hits: tuple[SearchHit, ...]
    total_found: int
    timing_ms: dict[str, float] = field(default_factory=dict)

    @property
    def not_found(self) -> bool:
        return not self.hits

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "total_found": self.total_found,
            "results": [hit.to_dict() for hit in self.hits],
            "timing_ms": dict(self.timing_ms),
        }


@dataclass(frozen=True, slots=True)
class PageBox:
    """Where cited words are drawn on their page, from its top-left corner.

    In the page's own units: points on a PDF page with a text layer, pixels on
    a scan read by OCR; ``page_width``/``page_height`` are the page's size in
    the same units, so a viewer draws the box in proportion.
    """

    page: int
    left: float
    top: float
    right: float
    bottom: float
    page_width: float
    page_height: float

    @classmethod
    def on(cls, page: int, box: Box, positions: PagePositions) -> PageBox:
        return cls(
            page, box.left, box.top, box.right, box.bottom, positions.width, positions.height
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "left": round(self.left, 2),
            "top": round(self.top, 2),
            "right": round(self.right, 2),
            "bottom": round(self.bottom, 2),
            "page_width": round(self.page_width, 2),
            "page_height": round(self.page_height, 2),
        }


@dataclass(frozen=True, slots=True)
class Citation:
    """A source the answer cited as ``[number]``, and where in it the cited words are.

    ``heading_path``, ``title`` and ``page_numbers`` name the section and page
    of the cited words (:mod:`ragsage.query.citing`), which in a passage that
    joined small sections need not be its first.  ``quote`` is the passage's
    text the answer used, at ``start``/``end`` in ``text`` and at
    ``page_start``/``page_end`` in its page's text; ``located`` says whether it
    was found (``"sentence"``) or the answer's words matched no sentence and
    the citation names the passage's first section (``"passage"``).  ``boxes``
    draw the quote on its page, for pages whose lines were placed (PDFs).
    ``lines`` are the source file's lines the quote (or, unplaced, the whole
    passage) covers, for source code; None elsewhere.
    """

    number: int
    chunk_id: str
    document_id: str
    source: str
    title: str
    heading_path: tuple[str, ...]
    page_numbers: tuple[int, ...]
    text: str
    quote: str = ""
    start: int = 0
    end: int = 0
    page_start: int = 0
    page_end: int = 0
    located: str = "passage"
    boxes: tuple[PageBox, ...] = ()
    lines: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": list(self.lines) if self.lines else None,
            "number": self.number,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "source": self.source,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "page_numbers": list(self.page_numbers),
            "text": self.text,
            "quote": self.quote,
            "start": self.start,
            "end": self.end,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "located": self.located,
            "boxes": [box.to_dict() for box in self.boxes],
        }


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """A piece of the answer text, in order."""

    text: str


@dataclass(frozen=True, slots=True)
class CitationsEvent:
    """The sources the finished answer actually cited, by their ``[n]`` number."""

    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The end of an answer stream, with the whole answer and how it was reached."""

    answer: str
    not_found: bool
    small_talk: bool
    query: str
    timing_ms: dict[str, float]


AnswerEvent = TokenEvent | CitationsEvent | DoneEvent


@dataclass(frozen=True, slots=True)
class Answer:
    """A finished answer: text, citations, and how it was reached."""

    text: str
    citations: tuple[Citation, ...]
    not_found: bool
    small_talk: bool
    query: str
    timing_ms: dict[str, float]


@dataclass(frozen=True, slots=True)
class ChunkContext:
    """A chunk fetched by id with its neighbours in the same document."""

    chunk: Chunk
    above: tuple[Chunk, ...] = ()
    below: tuple[Chunk, ...] = ()
