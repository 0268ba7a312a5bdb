"""The shipit ``RAG``'s operations on ragsage's Postgres index, in the page's types.

:meth:`ragsage.library.shipit.RAG.from_settings` hands every call here: the
work runs in :class:`ragsage.RAG` and the answers are turned into the page's
chunks and contexts, with the vectors the page's chunks carry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsage.library.shipit.types import (
    Chunk,
    Document,
    RAGContext,
    RAGSource,
    SearchQuery,
    context_from,
    from_chunk_context,
    from_engine_chunk,
    source_from,
    to_engine_filters,
)

if TYPE_CHECKING:
    from ragsage.library.facade import RAG as EngineRAG


class EngineBacked:
    """One namespace of the Postgres index, answering as the page's components would."""

    def __init__(self, engine: EngineRAG) -> None:
        self.engine = engine

    @property
    def has_reranker(self) -> bool:
        return self.engine.has_reranker

    def close(self) -> None:
        self.engine.close()

    def index_file(
        self,
        path: str | Path,
        document_id: str | None,
        title: str | None,
        metadata: dict[str, Any] | None,
    ) -> list[Chunk]:
        found = self.engine.index_file(
            path, document_id=document_id, title=title, metadata=metadata
        )
        return self.with_vectors([from_engine_chunk(chunk) for chunk in found])

    def index_documents(self, documents: Sequence[Document]) -> list[Chunk]:
        found = self.engine.index_documents(
            {
                "id": d.id,
                "content": d.content,
                "metadata": dict(d.metadata),
                "source": d.source,
                "title": d.title,
                "created_at": d.created_at,
            }
            for d in documents
        )
        return self.with_vectors([from_engine_chunk(chunk) for chunk in found])

    def reindex(self, document_id: str, content: str | None) -> list[Chunk]:
        found = self.engine.reindex(document_id, content=content)
        return self.with_vectors([from_engine_chunk(c) for c in found])

    def delete_document(self, document_id: str) -> None:
        self.engine.delete_document(document_id)

    def search(self, request: SearchQuery) -> RAGContext:
        found = self.engine.search(
            request.query,
            top_k=request.top_k,
            filters=to_engine_filters(request.filters),
            hybrid_alpha=request.hybrid_alpha,
            rerank=request.enable_reranking,
            recency_bias=request.enable_recency_bias,
            chunks_above=request.chunks_above,
            chunks_below=request.chunks_below,
        )
        context = context_from(found)
        self.with_vectors(
            [
                chunk
                for r in context.results
                for chunk in (r.chunk, *r.expanded_above, *r.expanded_below)
            ]
        )
        return context

    def fetch_chunk(self, chunk_id: str, chunks_above: int, chunks_below: int) -> Chunk | None:
        found = self.engine.fetch_chunk(
            chunk_id, chunks_above=chunks_above, chunks_below=chunks_below
        )
        if found is None:
            return None
        fetched = from_chunk_context(found)
        around = [
            *fetched.metadata.get("context_above", []),
            *fetched.metadata.get("context_below", []),
        ]
        self.with_vectors([fetched, *around])
        return fetched

    def list_sources(self) -> list[str]:
        return self.engine.list_sources()

    def count(self) -> int:
        return self.engine.count()

    def begin_run(self) -> None:
        self.engine.begin_run()

    def end_run(self) -> list[RAGSource]:
        return [source_from(source) for source in self.engine.end_run()]

    def current_sources(self) -> list[RAGSource]:
        return [source_from(source) for source in self.engine.current_sources()]

    def with_vectors(self, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks with their stored vectors, and their title's embedded."""
        if not chunks:
            return chunks
        stored = self.engine.chunk_vectors([c.id for c in chunks])
        titles = sorted({str(c.metadata["title"]) for c in chunks if c.metadata.get("title")})
        embedded = dict(zip(titles, self.engine.embed_texts(titles), strict=True)) if titles else {}
        for chunk in chunks:
            chunk.embedding = stored.get(chunk.id)
            title = chunk.metadata.get("title")
            chunk.title_embedding = embedded.get(str(title)) if title else None
        return chunks
