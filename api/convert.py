"""Between request models and engine values, and from engine values to responses."""

from __future__ import annotations

from flask import Response
from pydantic import BaseModel

from api.schemas import (
    ChunkOut,
    CitationOut,
    Filters,
    RetrievalOptionsBody,
    SearchResponse,
    SearchResultOut,
)
from ragsage.core.types import Chunk, SearchFilters
from ragsage.query import Citation, RetrievalOptions, RetrievalResult


def options(body: RetrievalOptionsBody) -> RetrievalOptions:
    return RetrievalOptions(
        top_k=body.top_k,
        filters=filters(body.filters),
        hybrid_alpha=body.hybrid_alpha,
        rerank=body.rerank,
        min_score=body.min_score,
        recency_bias=body.recency_bias,
        recency_half_life_days=body.recency_half_life_days,
        chunks_above=body.chunks_above,
        chunks_below=body.chunks_below,
    )


def filters(body: Filters | None) -> SearchFilters | None:
    if body is None:
        return None
    return SearchFilters(
        document_ids=frozenset(body.document_ids) if body.document_ids is not None else None,
        sources=frozenset(body.sources) if body.sources is not None else None,
        metadata=dict(body.metadata) if body.metadata else None,
        created_after=body.created_after,
        created_before=body.created_before,
    )


def chunk(value: Chunk) -> ChunkOut:
    return ChunkOut(
        id=value.id,
        document_id=value.document_id,
        ordinal=value.ordinal,
        text=value.text,
        source=value.source,
        title=str(value.metadata.get("title") or value.source),
        heading_path=list(value.heading_path),
        page_numbers=list(value.page_numbers),
        metadata=dict(value.metadata),
        created_at=value.created_at,
        start_char=value.start_char,
        end_char=value.end_char,
    )


def search(result: RetrievalResult) -> SearchResponse:
    return SearchResponse(
        query=result.query,
        total_found=result.total_found,
        results=[
            SearchResultOut(
                chunk=chunk(hit.chunk),
                score=hit.score,
                vector_score=hit.vector_score,
                keyword_score=hit.keyword_score,
                rerank_score=hit.rerank_score,
                above=[chunk(c) for c in hit.above],
                below=[chunk(c) for c in hit.below],
            )
            for hit in result.hits
        ],
        timing_ms=dict(result.timing_ms),
    )


def citation(value: Citation) -> CitationOut:
    return CitationOut(**value.to_dict())


def dump(model: BaseModel) -> Response:
    """A JSON response holding ``model``.

    pydantic writes the JSON itself: building the Python dict first and having
    Flask encode it took a tenth of a millisecond more for a page of results.
    """
    return Response(model.model_dump_json(), mimetype="application/json")
