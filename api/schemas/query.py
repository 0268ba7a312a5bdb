"""The bodies of searches, answers, chunks and sources (:mod:`api.routes.query`).

The search options and filters are the contract the facade and the agent tools
share (:mod:`ragsage.query.requests`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragsage.query.options import MAX_QUERY_CHARS
from ragsage.query.requests import Query, SearchOptions, Strict


class RetrievalOptionsBody(SearchOptions):
    """How to retrieve; defaults suit most questions."""


class SearchRequest(RetrievalOptionsBody):
    """Retrieval only: ranked passages with each stage's score."""

    query: Query
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )


class TurnBody(Strict):
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_QUERY_CHARS)


class QueryRequest(Strict):
    """A question, optionally in a conversation, answered with citations."""

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    history: list[TurnBody] = Field(default_factory=list, max_length=50)
    options: RetrievalOptionsBody = Field(default_factory=RetrievalOptionsBody)
    stream: bool = Field(
        default=False, description="Answer as Server-Sent Events (also: Accept: text/event-stream)."
    )
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )


class ChunkSectionOut(BaseModel):
    heading_path: list[str]
    start: int = Field(description="Where the section's part starts in the chunk's text")
    end: int
    page: int
    page_start: int = Field(description="Where the same words start in the page's text")
    page_end: int


class ChunkOut(BaseModel):
    id: str
    document_id: str
    ordinal: int
    text: str
    source: str
    title: str
    heading_path: list[str]
    page_numbers: list[int]
    metadata: dict[str, Any]
    created_at: datetime | None
    start_char: int
    end_char: int
    sections: list[ChunkSectionOut] = Field(
        description="The sections a chunk that joined small ones holds; empty: one section"
    )


class SearchResultOut(BaseModel):
    chunk: ChunkOut
    score: float
    vector_score: float | None
    keyword_score: float | None
    rerank_score: float | None
    above: list[ChunkOut]
    below: list[ChunkOut]


class SearchResponse(BaseModel):
    query: str
    total_found: int
    results: list[SearchResultOut]
    timing_ms: dict[str, float]


class PageBoxOut(BaseModel):
    """A box on a page, in the page's own units from its top-left corner (points on a PDF's
    text page, pixels on a scan read by OCR): divide by page_width and page_height."""

    page: int
    left: float
    top: float
    right: float
    bottom: float
    page_width: float
    page_height: float


class CitationOut(BaseModel):
    number: int
    chunk_id: str
    document_id: str
    source: str
    title: str
    heading_path: list[str] = Field(description="The section of the cited words")
    page_numbers: list[int]
    text: str
    quote: str = Field(description="The passage's words the answer used; empty when none aligned")
    start: int = Field(description="Where the quote starts in text")
    end: int
    page_start: int = Field(description="Where the quote starts in its page's text")
    page_end: int
    located: Literal["sentence", "passage"] = Field(
        description="sentence: the answer's words were found; passage: its first section is named"
    )
    boxes: list[PageBoxOut] = Field(
        description="Where the quote is drawn on its page (PDF pages); empty elsewhere"
    )
    lines: list[int] | None = Field(
        default=None,
        description="Source code: the first and last line of the file the quote (or the "
        "passage, when no quote was placed) covers; null elsewhere",
    )


class QueryResponse(BaseModel):
    answer: str
    citations: list[CitationOut]
    not_found: bool
    small_talk: bool
    query: str
    timing_ms: dict[str, float]


class ChunkResponse(BaseModel):
    chunk: ChunkOut
    above: list[ChunkOut]
    below: list[ChunkOut]


class SourcesResponse(BaseModel):
    sources: list[str]
