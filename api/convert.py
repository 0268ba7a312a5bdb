"""From engine values to response models (requests turn into options themselves)."""

from __future__ import annotations

from flask import Response
from pydantic import BaseModel

from api.schemas.query import (
    ChunkOut,
    ChunkSectionOut,
    CitationOut,
    SearchResponse,
    SearchResultOut,
)
from ragsage.core.chunks import Chunk
from ragsage.query import Citation, RetrievalResult


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
        sections=[ChunkSectionOut(**section.to_dict()) for section in value.sections],
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
