"""``HybridSearchPipeline``: ragsage's query engine over components written to the shipit page.

The page's components are synchronous and speak its types; the engine's
ports are async and speak ragsage's.  The adapters here translate, so a
vector store, keyword store, embedder or reranker a user wrote for the page
is searched by ragsage's engine: embedding, dense and keyword retrieval,
fusion, recency, reranking and neighbour expansion, with its timings.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragsage.core.chunks import Chunk as EngineChunk
from ragsage.core.chunks import EmbeddedChunk, ScoredChunk
from ragsage.core.documents import Document as EngineDocument
from ragsage.core.filters import SearchFilters
from ragsage.core.ports import InputType
from ragsage.core.scopes import Scope
from ragsage.library.shipit.components import Embedder, KeywordStore, Reranker, VectorStore
from ragsage.library.shipit.types import (
    IndexFilters,
    RAGContext,
    SearchQuery,
    from_engine_chunk,
    from_hit,
    to_engine_chunk,
    to_engine_filters,
)
from ragsage.query import QueryConfig, RetrievalOptions
from ragsage.query.fusion import DEFAULT_RRF_K
from ragsage.runtime.composition import compose_query, offline_ports
from ragsage.runtime.loop import LoopThread

if TYPE_CHECKING:
    from ragsage.core.pages import PageImage
    from ragsage.query.results import ChunkContext, RetrievalResult

_SCOPE = Scope("shipit")


def index_filters(filters: SearchFilters | None) -> IndexFilters | None:
    if filters is None or filters.is_empty:
        return None
    return IndexFilters(
        document_ids=sorted(filters.document_ids) if filters.document_ids is not None else None,
        sources=sorted(filters.sources) if filters.sources is not None else None,
        metadata_match=dict(filters.metadata) if filters.metadata else None,
        time_min=filters.created_after,
        time_max=filters.created_before,
    )


class EmbedderPort:
    """ragsage's Embedder port over an embedder with ``embed(texts, kind=...)``."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @property
    def model(self) -> str:
        return f"{type(self.embedder).__name__}-{self.dimension}"

    @property
    def dimension(self) -> int:
        return int(self.embedder.dimension)

    @property
    def similarity_floor(self) -> float:
        return 0.0  # an unknown model: every positive cosine counts as a match

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        kind = "query" if input_type == "query" else "passage"
        return [tuple(v) for v in self.embedder.embed(list(texts), kind=kind)]


class VectorPort:
    """ragsage's VectorStore port (and neighbour reads) over a page-shaped vector store."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None:
        for document_id in dict.fromkeys(r.chunk.document_id for r in records):
            self.store.delete_document(document_id)
        self.store.add([from_engine_chunk(r.chunk, embedding=list(r.vector)) for r in records])

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]:
        found = self.store.search(list(query_vector), k, index_filters(filters))
        return [
            ScoredChunk(to_engine_chunk(chunk), float(score), vector_score=float(score))
            for chunk, score in found
        ]

    async def delete(self, scope: Scope, document_id: str) -> None:
        self.store.delete_document(document_id)


class KeywordPort:
    """ragsage's LexicalStore port over a page-shaped keyword store."""

    def __init__(self, store: KeywordStore) -> None:
        self.store = store

    async def index(self, scope: Scope, chunks: Sequence[EngineChunk]) -> None:
        self.store.add([from_engine_chunk(chunk) for chunk in chunks])

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]:
        found = self.store.search(query, k, index_filters(filters))
        return [
            ScoredChunk(to_engine_chunk(chunk), float(score), keyword_score=float(score))
            for chunk, score in found
        ]

    async def delete(self, scope: Scope, document_id: str) -> None:
        self.store.delete_document(document_id)


class NoKeywords:
    """The lexical port when no keyword store is given: it finds nothing."""

    async def index(self, scope: Scope, chunks: Sequence[EngineChunk]) -> None:
        return None

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]:
        return []

    async def delete(self, scope: Scope, document_id: str) -> None:
        return None


class ChunkReads:
    """The engine's chunk reads (neighbours, a chunk by id) from the vector store.

    It is the query engine's document store: the page's stores keep chunks,
    not documents, so the document calls know only what chunks say.
    """

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    async def save(
        self, scope: Scope, document: EngineDocument, chunks: Sequence[EngineChunk]
    ) -> None:
        return None

    async def find_by_hash(self, scope: Scope, content_hash: str) -> EngineDocument | None:
        return None

    async def get(self, scope: Scope, document_id: str) -> EngineDocument | None:
        return None

    async def list(self, scope: Scope) -> Sequence[EngineDocument]:
        return []

    async def delete(self, scope: Scope, document_id: str) -> None:
        self.store.delete_document(document_id)

    async def get_chunk(self, scope: Scope, chunk_id: str) -> EngineChunk | None:
        found = self.store.get(chunk_id)
        return to_engine_chunk(found) if found is not None else None

    async def chunks(
        self, scope: Scope, document_id: str, *, first: int = 0, last: int | None = None
    ) -> Sequence[EngineChunk]:
        return [
            to_engine_chunk(chunk)
            for chunk in sorted(self.store.list_chunks(document_id), key=lambda c: c.chunk_index)
            if chunk.chunk_index >= first and (last is None or chunk.chunk_index <= last)
        ]

    async def count_chunks(self, scope: Scope) -> int:
        return int(self.store.count())


class RerankerPort:
    """ragsage's Reranker port over ``rerank(query, chunks, top_k) -> [(chunk, score)]``."""

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        by_id = {c.chunk.id: c for c in candidates}
        judged = self.reranker.rerank(
            query, [from_engine_chunk(c.chunk) for c in candidates], top_k
        )
        return [
            ScoredChunk(
                by_id[chunk.id].chunk,
                float(score),
                vector_score=by_id[chunk.id].vector_score,
                keyword_score=by_id[chunk.id].keyword_score,
                rerank_score=float(score),
            )
            for chunk, score in judged
            if chunk.id in by_id
        ]


def options_for(query: SearchQuery) -> RetrievalOptions:
    """The engine's options for the page's query (the engine checks the bounds)."""
    return RetrievalOptions(
        top_k=query.top_k,
        filters=to_engine_filters(query.filters),
        hybrid_alpha=query.hybrid_alpha,
        rerank=query.enable_reranking,
        recency_bias=query.enable_recency_bias,
        recency_half_life_days=query.recency_half_life_days,
        chunks_above=query.chunks_above,
        chunks_below=query.chunks_below,
    )


class HybridSearchPipeline:
    """Embed → dense and keyword retrieval → reciprocal-rank fusion → recency → rerank → expand.

    The order the page gives, run by ragsage's query engine over the given
    components.  Fusion here is reciprocal-rank, as the page says; ragsage's
    service fuses scaled scores by default (docs/library.md says why).
    """

    def __init__(
        self,
        vector_store: VectorStore,
        embedder: Embedder,
        keyword_store: KeywordStore | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.vector_store, self.embedder = vector_store, embedder
        self.keyword_store, self.reranker = keyword_store, reranker
        # The page's components in place of the offline set's stores and models;
        # only the query engine is used (the page indexes through its own chunker).
        self.engine = compose_query(
            replace(
                offline_ports(),
                embedder=EmbedderPort(embedder),
                vector_store=VectorPort(vector_store),
                lexical_store=(
                    KeywordPort(keyword_store) if keyword_store is not None else NoKeywords()
                ),
                document_store=ChunkReads(vector_store),
                llm=NoAnswers(),
                reranker=RerankerPort(reranker) if reranker is not None else None,
                rewriter=None,
            ),
            QueryConfig(fusion="rrf", rrf_k=DEFAULT_RRF_K, rerank_searches=False),
        )
        self._loop = LoopThread(name="ragsage-shipit-search")
        # A pipeline dropped without close() must not leave its thread behind.
        weakref.finalize(self, self._loop.stop)

    def search(self, query: SearchQuery) -> RAGContext:
        """The results for ``query``; reranks only when asked and a reranker was given."""
        if query.enable_reranking and self.reranker is None:
            raise ValueError("enable_reranking needs a reranker; pass reranker=... to the pipeline")
        found = self._run_search(query)
        return RAGContext(
            query=query.query,
            results=[from_hit(hit) for hit in found.hits],
            total_found=found.total_found,
            timing_ms=dict(found.timing_ms),
        )

    def fetch(self, chunk_id: str, above: int, below: int) -> ChunkContext | None:
        """A chunk by id with its neighbours (the engine's fetch, over the vector store)."""
        return self._loop.run(
            self.engine.fetch_chunk(_SCOPE, chunk_id, chunks_above=above, chunks_below=below)
        )

    def _run_search(self, query: SearchQuery) -> RetrievalResult:
        # The page's calls are synchronous; the engine runs on this pipeline's own
        # loop thread, so a caller inside a running loop (a notebook) is served too.
        return self._loop.run(self.engine.search(_SCOPE, query.query, options_for(query)))

    def close(self) -> None:
        """Stop the pipeline's loop thread."""
        self._loop.stop()


class NoAnswers:
    """The engine's LLM port for a pipeline that only searches: it is never asked."""

    def generate(self, prompt: str) -> AsyncIterator[str]:
        raise RuntimeError("the shipit search pipeline does not generate answers")

    async def transcribe(self, image: PageImage) -> str:
        raise RuntimeError("the shipit search pipeline does not read page images")
