"""The value types of the shipit RAG API, field for field as its reference page lists them.

These are plain, mutable dataclasses (code written against the page sets
``chunk.embedding`` after the fact).  The converters at the bottom translate to
and from ragsage's own frozen types, which the engine underneath works on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ragsage.core.chunks import Chunk as EngineChunk
from ragsage.core.chunks import ChunkSection, chunk_id
from ragsage.core.filters import SearchFilters
from ragsage.library.context import RAGContext as EngineContext
from ragsage.library.tracking import RAGSource as EngineSource
from ragsage.query.results import ChunkContext, SearchHit


@dataclass
class Document:
    """A document given as text."""

    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    title: str | None = None
    created_at: datetime | None = None


@dataclass
class Chunk:
    """A passage of a document; ``text_for_embedding`` is ``text`` unless given."""

    id: str
    document_id: str
    chunk_index: int
    text: str
    text_for_embedding: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    start_char: int = 0
    end_char: int = 0
    embedding: list[float] | None = None
    title_embedding: list[float] | None = None
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        if not self.text_for_embedding:
            self.text_for_embedding = self.text


@dataclass
class IndexFilters:
    """Conditions a chunk must meet to be searched; None means "any"."""

    document_ids: list[str] | None = None
    sources: list[str] | None = None
    metadata_match: dict[str, Any] | None = None
    time_min: datetime | None = None
    time_max: datetime | None = None

    def matches(self, chunk: Chunk) -> bool:
        """True when the chunk passes every filter that is set.

        A time bound excludes a chunk with no ``created_at``: nothing says it
        falls inside the window.
        """
        return _engine_filters(self).matches(to_engine_chunk(chunk))


@dataclass
class SearchQuery:
    """One search, as :class:`HybridSearchPipeline` takes it."""

    query: str
    top_k: int = 10
    filters: IndexFilters | None = None
    hybrid_alpha: float = 0.5
    enable_reranking: bool = False
    enable_recency_bias: bool = False
    recency_half_life_days: float = 30.0
    chunks_above: int = 0
    chunks_below: int = 0


@dataclass
class SearchResult:
    """One ranked chunk, its per-stage scores and the neighbours added around it."""

    chunk: Chunk
    score: float
    vector_score: float | None = None
    keyword_score: float | None = None
    rerank_score: float | None = None
    expanded_above: list[Chunk] = field(default_factory=list)
    expanded_below: list[Chunk] = field(default_factory=list)


@dataclass
class RAGSource:
    """A passage retrieved during a run; ``index`` is the number it is cited by."""

    index: int
    chunk_id: str
    document_id: str
    text: str
    score: float
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "text": self.text,
            "score": self.score,
            "source": self.source,
            "metadata": dict(self.metadata),
        }


# ---------------------------------------------------------------- conversions


def from_engine_chunk(chunk: EngineChunk, *, embedding: list[float] | None = None) -> Chunk:
    """The page's chunk for one of ragsage's (its heading path kept in metadata)."""
    metadata = dict(chunk.metadata)
    if chunk.heading_path:
        metadata.setdefault("heading_path", list(chunk.heading_path))
    if chunk.page_numbers:
        metadata.setdefault("page_numbers", list(chunk.page_numbers))
    if chunk.sections:
        metadata.setdefault("sections", [section.to_dict() for section in chunk.sections])
    return Chunk(
        id=chunk.id,
        document_id=chunk.document_id,
        chunk_index=chunk.ordinal,
        text=chunk.text,
        text_for_embedding=chunk.embed_text or chunk.text,
        metadata=metadata,
        source=chunk.source or None,
        start_char=chunk.start_char,
        end_char=chunk.end_char,
        embedding=embedding,
        created_at=chunk.created_at,
    )


def to_engine_chunk(chunk: Chunk) -> EngineChunk:
    """ragsage's chunk for one of the page's; a chunk id need not follow ragsage's form."""
    heading = chunk.metadata.get("heading_path")
    pages = chunk.metadata.get("page_numbers")
    sections = chunk.metadata.get("sections")
    return EngineChunk(
        id=chunk.id or chunk_id(chunk.document_id, chunk.chunk_index),
        document_id=chunk.document_id,
        ordinal=chunk.chunk_index,
        text=chunk.text,
        embed_text=chunk.text_for_embedding or chunk.text,
        heading_path=tuple(str(h) for h in heading) if isinstance(heading, list) else (),
        page_numbers=tuple(int(p) for p in pages) if isinstance(pages, list) else (),
        metadata=dict(chunk.metadata),
        source=chunk.source or "",
        created_at=_aware(chunk.created_at),
        start_char=chunk.start_char,
        end_char=chunk.end_char,
        sections=tuple(ChunkSection.from_dict(item) for item in sections if isinstance(item, dict))
        if isinstance(sections, list)
        else (),
    )


def to_engine_filters(filters: IndexFilters | None) -> SearchFilters | None:
    return None if filters is None else _engine_filters(filters)


def _engine_filters(filters: IndexFilters) -> SearchFilters:
    return SearchFilters(
        document_ids=_frozen(filters.document_ids),
        sources=_frozen(filters.sources),
        metadata=dict(filters.metadata_match) if filters.metadata_match else None,
        created_after=_aware(filters.time_min),
        created_before=_aware(filters.time_max),
    )


def _aware(moment: datetime | None) -> datetime | None:
    """A time without a zone is read as UTC, so it compares with the stored ones."""
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _frozen(values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    return frozenset([values] if isinstance(values, str) else values)


def from_hit(hit: SearchHit) -> SearchResult:
    return SearchResult(
        chunk=from_engine_chunk(hit.chunk),
        score=hit.score,
        vector_score=hit.vector_score,
        keyword_score=hit.keyword_score,
        rerank_score=hit.rerank_score,
        expanded_above=[from_engine_chunk(c) for c in hit.above],
        expanded_below=[from_engine_chunk(c) for c in hit.below],
    )


def from_chunk_context(found: ChunkContext) -> Chunk:
    """The fetched chunk; its neighbours ride in ``metadata`` as the page has no field for them."""
    chunk = from_engine_chunk(found.chunk)
    if found.above:
        chunk.metadata["context_above"] = [from_engine_chunk(c) for c in found.above]
    if found.below:
        chunk.metadata["context_below"] = [from_engine_chunk(c) for c in found.below]
    return chunk


def source_from(source: EngineSource) -> RAGSource:
    """The page's source record for ragsage's (which also carries a title)."""
    return RAGSource(
        index=source.index,
        chunk_id=source.chunk_id,
        document_id=source.document_id,
        text=source.text,
        score=source.score,
        source=source.source,
        metadata=dict(source.metadata),
    )


# The timings the page lists; each is present, 0 when its stage did not run.
_PAGE_TIMINGS = ("embed_ms", "vector_ms", "keyword_ms", "rerank_ms", "total_ms")


@dataclass
class RAGContext:
    """What a search returns: the results best first, totals and per-stage timings.

    ``timing_ms`` has ``embed_ms``, ``vector_ms``, ``keyword_ms``, ``rerank_ms``
    (when reranked) and ``total_ms``, plus ragsage's finer stages.
    """

    query: str
    results: list[SearchResult] = field(default_factory=list)
    total_found: int = 0
    timing_ms: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for stage in _PAGE_TIMINGS:
            self.timing_ms.setdefault(stage, 0.0)  # a stage that did not run took no time
        # Citation numbers: ranks, unless a tracked run numbered the passages.
        self._citations: list[int] = list(range(1, len(self.results) + 1))

    @property
    def citations(self) -> list[int]:
        """Each result's ``[n]`` number, in result order."""
        if len(self._citations) != len(self.results):
            return list(range(1, len(self.results) + 1))
        return list(self._citations)

    def to_prompt_context(self, max_chars: int = 8000) -> str:
        """The results as numbered ``[n]`` blocks for a prompt, at most ``max_chars`` long."""
        return self._engine().to_prompt_context(max_chars)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form."""
        return {
            "query": self.query,
            "total_found": self.total_found,
            "timing_ms": dict(self.timing_ms),
            "results": [
                {
                    "citation": number,
                    "chunk": _chunk_dict(result.chunk),
                    "score": result.score,
                    "vector_score": result.vector_score,
                    "keyword_score": result.keyword_score,
                    "rerank_score": result.rerank_score,
                    "expanded_above": [_chunk_dict(c) for c in result.expanded_above],
                    "expanded_below": [_chunk_dict(c) for c in result.expanded_below],
                }
                for number, result in zip(self.citations, self.results, strict=True)
            ],
        }

    def _engine(self) -> EngineContext:
        hits = tuple(
            SearchHit(
                chunk=to_engine_chunk(result.chunk),
                score=result.score,
                vector_score=result.vector_score,
                keyword_score=result.keyword_score,
                rerank_score=result.rerank_score,
                above=tuple(to_engine_chunk(c) for c in result.expanded_above),
                below=tuple(to_engine_chunk(c) for c in result.expanded_below),
            )
            for result in self.results
        )
        return EngineContext(
            query=self.query,
            results=hits,
            total_found=self.total_found,
            timing_ms=dict(self.timing_ms),
            citations=tuple(self.citations),
        )


def context_from(engine: EngineContext) -> RAGContext:
    """The page's context for ragsage's, keeping the run's citation numbers."""
    context = RAGContext(
        query=engine.query,
        results=[from_hit(hit) for hit in engine.results],
        total_found=engine.total_found,
        timing_ms=dict(engine.timing_ms),
    )
    context._citations = list(engine.citations)
    return context


def _chunk_dict(chunk: Chunk) -> dict[str, Any]:
    return {
        "id": chunk.id,
        "document_id": chunk.document_id,
        "chunk_index": chunk.chunk_index,
        "text": chunk.text,
        "source": chunk.source,
        "metadata": {k: v for k, v in chunk.metadata.items() if _plain(v)},
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "created_at": chunk.created_at.isoformat() if chunk.created_at else None,
    }


def _plain(value: object) -> bool:
    """JSON can carry it (the neighbours a fetch puts in metadata cannot)."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return value is None or isinstance(value, str | int | float | bool)
