"""Retrieval: from a question to the passages that pass the relevance floor.

rewrite against history → dense and lexical retrieval in parallel → weighted
fusion (reciprocal-rank or scaled-score) → optional recency bias → rerank →
relevance floor → the results read, long code passages scaled by their length
unless a reranker ordered them → adjacent windows of one definition joined →
under a budget, the passages that best fill it → context expansion.

When the stores can rank by chunk id and nothing downstream needs every
candidate's text (no rerank, no recency bias), retrieval ranks by id and reads
rows only for the results it returns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar, cast

from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.conversations import Turn
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.namespaced import embedder_for
from ragsage.core.ports import (
    DocumentStore,
    Embedder,
    FetchesChunks,
    LexicalStore,
    QueryRewriter,
    RanksText,
    RanksVectors,
    Reranker,
    Span,
    VectorStore,
)
from ragsage.core.scopes import Scope
from ragsage.core.text import clean
from ragsage.core.tracing import elapsed_ms, timed_stage
from ragsage.query.fusion import FusedRank, fuse, fuse_ranked, fusion_for
from ragsage.query.options import MAX_QUERY_CHARS, QueryConfig, RetrievalOptions
from ragsage.query.passages import fill_budget, join_windows, without_repeated_lines
from ragsage.query.results import ChunkContext, RetrievalResult, SearchHit
from ragsage.query.scores import apply_recency, has_signal, prefer_concise_code

_Found = TypeVar("_Found")
_Ranked = TypeVar("_Ranked")


class _RanksAndFetches(RanksVectors, FetchesChunks, Protocol):
    """A vector store that ranks by id and reads the chunks it ranked."""


class Retriever:
    """The retrieval stages of :class:`~ragsage.query.engine.QueryEngine`, over its ports."""

    def __init__(
        self,
        *,
        embedder: Embedder,
        vector_store: VectorStore,
        lexical_store: LexicalStore,
        document_store: DocumentStore,
        reranker: Reranker | None,
        rewriter: QueryRewriter | None,
        config: QueryConfig,
    ) -> None:
        self.embedder, self.vector_store = embedder, vector_store
        self.lexical_store, self.document_store = lexical_store, document_store
        self.reranker, self.rewriter, self.config = reranker, rewriter, config
        self._by_id = self._ranks_by_id()

    async def retrieve(
        self,
        root: Span,
        scope: Scope,
        query: str,
        options: RetrievalOptions,
        history: Sequence[Turn],
        *,
        answering: bool,
    ) -> RetrievalResult:
        timing: dict[str, float] = {}
        started = time.perf_counter()
        query = clean(query)
        _check_query(query)
        if not query.strip():
            # Nothing to look for: an honest empty result rather than an error.
            return RetrievalResult(query=query, hits=(), total_found=0, timing_ms={"total_ms": 0.0})
        history = [Turn(turn.role, clean(turn.content)) for turn in history]
        standalone = await self._rewrite(root, query, history, timing)
        rerank = options.rerank
        if rerank is None:
            rerank = answering or self.config.rerank_searches
        reranking = rerank and self.reranker is not None
        by_id = self._by_id
        passing: Sequence[ScoredChunk | FusedRank]
        carried: dict[str, Chunk] = {}
        if by_id is not None and not reranking and not options.recency_bias:
            passing, carried = await self._ranked_by_id(
                root, scope, standalone, options, timing, by_id
            )
            reranked = False
        else:
            passing, reranked = await self._ranked_rows(
                root, scope, standalone, options, timing, reranking
            )
        if answering:
            passing = [c for c in passing if self._passes_floor(c, reranked)]
        else:
            passing = [c for c in passing if has_signal(c, options.min_score)]
        root.set(passing=len(passing), reranked=reranked)
        chosen = await self._rows_of(
            root, scope, passing[: options.result_rows], timing, by_id, carried
        )
        if not reranked and self.config.fusion != "rrf":
            # A reranker has judged each passage whole; fused scores have not.  Rank
            # fusion's scores sit too close together to be scaled (the exponent was
            # chosen for scaled scores).  min_score was checked before, on the fused
            # score, so scaling never drops a result.
            chosen = prefer_concise_code(chosen, self.config.code_length_exponent)
        chosen = join_windows(chosen)
        if options.budget_tokens is not None:
            chosen = fill_budget(chosen, options.budget_tokens, standalone, top_k=options.top_k)
        else:
            chosen = without_repeated_lines(chosen)

        with timed_stage(
            root,
            timing,
            "expand_ms",
            "expand",
            above=options.chunks_above,
            below=options.chunks_below,
        ):
            hits = [await self._expand(scope, candidate, options) for candidate in chosen]
        timing["total_ms"] = elapsed_ms(started)
        return RetrievalResult(
            query=standalone, hits=tuple(hits), total_found=len(passing), timing_ms=timing
        )

    def _ranks_by_id(self) -> tuple[_RanksAndFetches, RanksText] | None:
        """The stores, when they can rank by id and read rows for the winners alone."""
        vectors, text = self.vector_store, self.lexical_store
        if isinstance(vectors, RanksVectors) and isinstance(vectors, FetchesChunks):
            if isinstance(text, RanksText):
                return cast(_RanksAndFetches, vectors), text
        return None

    async def _ranked_rows(
        self,
        root: Span,
        scope: Scope,
        query: str,
        options: RetrievalOptions,
        timing: dict[str, float],
        reranking: bool,
    ) -> tuple[list[ScoredChunk], bool]:
        """Fused (and maybe reranked) candidates, each read whole: what a reranker needs."""
        k, filters = options.candidate_count, options.filters
        lexical, dense = await self._both(
            root,
            scope,
            query,
            options,
            timing,
            lambda: self.lexical_store.search(scope, query, k=k, filters=filters),
            lambda v: self.vector_store.search(scope, v, k=k, filters=filters),
        )

        def fused_whole() -> list[ScoredChunk]:
            method, alpha = fusion_for(
                self.config.fusion, query, dense, lexical, options.hybrid_alpha
            )
            fused = fuse(method, dense, lexical, alpha=alpha, rrf_k=self.config.rrf_k)
            if options.recency_bias:
                fused = apply_recency(fused, options.recency_half_life_days)
            return fused

        fused = self._fuse(root, timing, len(dense), len(lexical), fused_whole)
        if not (reranking and self.reranker is not None and fused):
            return fused, False
        with timed_stage(root, timing, "rerank_ms", "rerank", candidates=len(fused)) as span:
            fused = list(await self.reranker.rerank(query, fused, top_k=options.candidate_count))
            span.set(kept=len(fused))
        return fused, True

    async def _ranked_by_id(
        self,
        root: Span,
        scope: Scope,
        query: str,
        options: RetrievalOptions,
        timing: dict[str, float],
        stores: tuple[_RanksAndFetches, RanksText],
    ) -> tuple[list[FusedRank], dict[str, Chunk]]:
        """Fused candidates known by id, and the chunks the stores read on the way.

        Each store reads the rows of its own first ``top_k`` only: the likely
        winners, so that usually no other row is read at all.
        """
        vectors, text = stores
        k, filters, rows = options.candidate_count, options.filters, options.top_k
        lexical, dense = await self._both(
            root,
            scope,
            query,
            options,
            timing,
            lambda: text.rank_text(scope, query, k=k, filters=filters, rows=rows),
            lambda v: vectors.rank_vectors(scope, v, k=k, filters=filters, rows=rows),
        )
        method, alpha = fusion_for(self.config.fusion, query, dense, lexical, options.hybrid_alpha)
        fused = self._fuse(
            root,
            timing,
            len(dense),
            len(lexical),
            lambda: fuse_ranked(method, dense, lexical, alpha=alpha, rrf_k=self.config.rrf_k),
        )
        carried = {r.chunk_id: r.chunk for r in (*dense, *lexical) if r.chunk is not None}
        return fused, carried

    async def _both(
        self,
        root: Span,
        scope: Scope,
        query: str,
        options: RetrievalOptions,
        timing: dict[str, float],
        lexical: Callable[[], Awaitable[Sequence[_Found]]],
        dense: Callable[[tuple[float, ...]], Awaitable[Sequence[_Ranked]]],
    ) -> tuple[Sequence[_Found], Sequence[_Ranked]]:
        """Both searches at once, each traced and timed, keyword first.

        Keyword goes first: its statement is the slower one on the server, so
        it goes out before the query is embedded (measured: 0.35 ms off p50).
        """
        return await asyncio.gather(
            self._lexical(root, options, timing, lexical),
            self._dense(root, scope, query, options, timing, dense),
        )

    @staticmethod
    def _fuse(
        root: Span,
        timing: dict[str, float],
        dense: int,
        lexical: int,
        fusing: Callable[[], list[_Found]],
    ) -> list[_Found]:
        """Run one of the fusions as the traced, timed ``fuse`` stage."""
        with timed_stage(root, timing, "fusion_ms", "fuse", dense=dense, lexical=lexical) as span:
            fused = fusing()
            span.set(candidates=len(fused))
        return fused

    async def _rows_of(
        self,
        root: Span,
        scope: Scope,
        chosen: Sequence[ScoredChunk | FusedRank],
        timing: dict[str, float],
        by_id: tuple[_RanksAndFetches, RanksText] | None,
        carried: dict[str, Chunk],
    ) -> list[ScoredChunk]:
        """The chosen candidates as chunks: those ranked by id and not carried are read now."""
        if by_id is None or not chosen or not isinstance(chosen[0], FusedRank):
            return [c for c in chosen if isinstance(c, ScoredChunk)]
        ids = [c.chunk_id for c in chosen if isinstance(c, FusedRank)]
        found = {key: carried[key] for key in ids if key in carried}
        missing = [key for key in ids if key not in found]
        if missing:
            with timed_stage(root, timing, "fetch_ms", "fetch", chunks=len(missing)):
                found.update((c.id, c) for c in await by_id[0].fetch_chunks(scope, missing))
        # A chunk re-indexed away between ranking and reading is left out.
        return [
            ScoredChunk(
                chunk=found[c.chunk_id],
                score=c.score,
                vector_score=c.vector_score,
                keyword_score=c.keyword_score,
            )
            for c in chosen
            if isinstance(c, FusedRank) and c.chunk_id in found
        ]

    async def _rewrite(
        self, root: Span, query: str, history: Sequence[Turn], timing: dict[str, float]
    ) -> str:
        if not history or self.rewriter is None:
            return query
        with timed_stage(root, timing, "rewrite_ms", "rewrite", turns=len(history)) as span:
            recent = list(history)[-self.config.max_history_turns :]
            rewritten = (await self.rewriter.rewrite(query, recent)).strip() or query
            span.set(changed=rewritten != query)
        return rewritten

    async def _dense(
        self,
        root: Span,
        scope: Scope,
        query: str,
        options: RetrievalOptions,
        timing: dict[str, float],
        search: Callable[[tuple[float, ...]], Awaitable[Sequence[_Found]]],
    ) -> Sequence[_Found]:
        if options.hybrid_alpha == 0.0:
            return []
        with timed_stage(root, timing, "embed_ms", "embed", model=self.embedder.model):
            vectors = await embedder_for(self.embedder, scope).embed([query], input_type="query")
        with timed_stage(root, timing, "vector_ms", "dense", k=options.candidate_count) as span:
            found = await search(tuple(vectors[0]))
            span.set(found=len(found))
        return found

    async def _lexical(
        self,
        root: Span,
        options: RetrievalOptions,
        timing: dict[str, float],
        search: Callable[[], Awaitable[Sequence[_Found]]],
    ) -> Sequence[_Found]:
        if options.hybrid_alpha == 1.0:
            return []
        with timed_stage(root, timing, "keyword_ms", "lexical", k=options.candidate_count) as span:
            found = await search()
            span.set(found=len(found))
        return found

    def _passes_floor(self, candidate: ScoredChunk | FusedRank, reranked: bool) -> bool:
        # Fused scores are rank arithmetic and carry no relevance; only the raw
        # per-stage scores can say "this passage is about the question".
        if reranked:
            return (candidate.rerank_score or 0.0) >= self.config.min_rerank_score
        floor = self.config.min_vector_score
        if floor is None:
            floor = self.embedder.similarity_floor
        if candidate.vector_score is not None and candidate.vector_score >= floor:
            return True
        return (
            candidate.keyword_score is not None
            and candidate.keyword_score > self.config.min_keyword_score
        )

    async def _expand(
        self, scope: Scope, candidate: ScoredChunk, options: RetrievalOptions
    ) -> SearchHit:
        above: tuple[Chunk, ...] = ()
        below: tuple[Chunk, ...] = ()
        if options.chunks_above or options.chunks_below:
            context = await self.neighbours(
                scope, candidate.chunk, options.chunks_above, options.chunks_below, options.filters
            )
            above, below = context.above, context.below
        return SearchHit(
            chunk=candidate.chunk,
            score=candidate.score,
            vector_score=candidate.vector_score,
            keyword_score=candidate.keyword_score,
            rerank_score=candidate.rerank_score,
            above=above,
            below=below,
        )

    async def neighbours(
        self,
        scope: Scope,
        chunk: Chunk,
        above: int,
        below: int,
        filters: SearchFilters | None = None,
    ) -> ChunkContext:
        """``chunk`` with its document's chunks around it, those ``filters`` pass.

        A neighbour is a passage like any other: it too must pass the filters
        (a restricted key's, say), even where its metadata is its own.
        """
        around = await self.document_store.chunks(
            scope,
            chunk.document_id,
            first=max(0, chunk.ordinal - above),
            last=chunk.ordinal + below,
        )
        if filters is not None and not filters.is_empty:
            around = [c for c in around if filters.matches(c)]
        return ChunkContext(
            chunk=chunk,
            above=tuple(c for c in around if c.ordinal < chunk.ordinal),
            below=tuple(c for c in around if c.ordinal > chunk.ordinal),
        )


def _check_query(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidRequest(
            f"the question is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,}"
        )
