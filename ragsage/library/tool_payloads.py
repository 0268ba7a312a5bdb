"""The agent tools' payloads from the facade's results (shapes in :mod:`ragsage.agent.tools`)."""

from __future__ import annotations

from typing import Any

from ragsage.core.chunks import Chunk
from ragsage.library.context import RAGContext
from ragsage.library.tracking import chunk_title
from ragsage.query.results import ChunkContext


def search_payload(context: RAGContext) -> dict[str, Any]:
    """``rag_search``'s answer: each hit with its citation number and its text in context."""
    return {
        "query": context.query,
        "total_found": context.total_found,
        "results": [
            {
                "citation": number,
                "chunk_id": hit.chunk.id,
                "document_id": hit.chunk.document_id,
                "source": hit.chunk.source,
                "title": chunk_title(hit.chunk),
                "heading_path": list(hit.chunk.heading_path),
                "sections": section_names(hit.chunk),
                "score": hit.score,
                "text": hit.context_text,
            }
            for number, hit in zip(context.citations, context.results, strict=True)
        ],
    }


def chunk_payload(found: ChunkContext) -> dict[str, Any]:
    """``rag_fetch_chunk``'s answer: the chunk and the neighbours asked for."""
    chunk = found.chunk
    return {
        "chunk_id": chunk.id,
        "document_id": chunk.document_id,
        "source": chunk.source,
        "title": chunk_title(chunk),
        "sections": section_names(chunk),
        "text": chunk.text,
        "context_above": [{"chunk_id": c.id, "text": c.text} for c in found.above],
        "context_below": [{"chunk_id": c.id, "text": c.text} for c in found.below],
    }


def section_names(chunk: Chunk) -> list[str]:
    """The sections a passage that joined small ones holds, in order; empty for one section.

    An agent quoting such a passage can then name the section of its sentence.
    """
    return [" > ".join(section.heading_path) for section in chunk.sections]
