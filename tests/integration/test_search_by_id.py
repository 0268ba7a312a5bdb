"""Ranking by id, then reading the winners' rows, finds exactly what reading every row does.

The winners' rows come with the ranking (each store carries its own first
``top_k``) or are fetched after fusion; both must match the whole-row path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ragsage.adapters.postgres import Database
from ragsage.core.chunks import Chunk, EmbeddedChunk, ScoredChunk
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope
from ragsage.query import QueryConfig, QueryEngine, RetrievalOptions

from . import helpers

CORPUS = Path(__file__).parents[1] / "fixtures" / "eval" / "qa-tiny"
ACME, GLOBEX = Scope("acme"), Scope("globex")


class _Whole:
    """A store with the plain port only: the engine must read every candidate's row."""

    def __init__(self, store: object) -> None:
        self._store = store

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None:
        await self._store.upsert(scope, records)  # type: ignore[attr-defined]

    async def index(self, scope: Scope, chunks: Sequence[Chunk]) -> None:
        await self._store.index(scope, chunks)  # type: ignore[attr-defined]

    async def search(self, scope: Scope, query: object, **options: object) -> Sequence[ScoredChunk]:
        found: Sequence[ScoredChunk] = await self._store.search(scope, query, **options)  # type: ignore[attr-defined]
        return found

    async def delete(self, scope: Scope, document_id: str) -> None:
        await self._store.delete(scope, document_id)  # type: ignore[attr-defined]


class _NothingCarried(_Whole):
    """Ranks by id but carries no chunk: every winner must be fetched."""

    async def rank_vectors(self, scope: Scope, vector: object, **options: object) -> object:
        return await self._store.rank_vectors(scope, vector, **{**options, "rows": 0})  # type: ignore[attr-defined]

    async def rank_text(self, scope: Scope, query: str, **options: object) -> object:
        return await self._store.rank_text(scope, query, **{**options, "rows": 0})  # type: ignore[attr-defined]

    async def fetch_chunks(self, scope: Scope, chunk_ids: Sequence[str]) -> object:
        return await self._store.fetch_chunks(scope, chunk_ids)  # type: ignore[attr-defined]


def _engines(db: Database) -> tuple[QueryEngine, QueryEngine, QueryEngine]:
    kit = helpers.kit()
    pg = helpers.stores(db, kit)
    config = QueryConfig(rerank_searches=False)  # as the offline defaults search

    def engine(vectors: object, lexical: object) -> QueryEngine:
        return QueryEngine(
            embedder=kit.embedder,
            vector_store=vectors,  # type: ignore[arg-type]
            lexical_store=lexical,  # type: ignore[arg-type]
            document_store=pg.documents,
            llm=kit.llm,
            reranker=kit.reranker,
            config=config,
        )

    return (
        engine(pg.vectors, pg.lexical),
        engine(_Whole(pg.vectors), _Whole(pg.lexical)),
        engine(_NothingCarried(pg.vectors), _NothingCarried(pg.lexical)),
    )


def _seen(hits: Sequence[object]) -> list[tuple[object, ...]]:
    return [
        (h.chunk, h.score, h.vector_score, h.keyword_score, h.above, h.below)  # type: ignore[attr-defined]
        for h in hits
    ]


async def test_search_by_id_returns_what_reading_every_row_returns(db: Database) -> None:
    kit = helpers.kit()
    for path in sorted((CORPUS / "documents").rglob("*.md")):
        await helpers.ingest(db, kit, ACME, path.read_text(), path.name, chunk_size=60)
    await helpers.ingest(db, kit, GLOBEX, "# Hotels\n\nGlobex pays any hotel night.", "g.md")
    questions = [
        json.loads(line)["question"]
        for line in (CORPUS / "questions.jsonl").read_text().split("\n")
        if line
    ]
    by_id, whole, fetched = _engines(db)
    variants = [
        RetrievalOptions(top_k=5),
        RetrievalOptions(top_k=3, hybrid_alpha=0.0),
        RetrievalOptions(top_k=3, hybrid_alpha=1.0),
        RetrievalOptions(top_k=20, min_score=0.2, chunks_above=1, chunks_below=1),
        RetrievalOptions(top_k=5, filters=SearchFilters(sources=frozenset({"travel.md"}))),
    ]
    compared = 0
    for question in questions:
        for options in variants:
            ranked = await by_id.search(ACME, question, options)
            read = await whole.search(ACME, question, options)
            late = await fetched.search(ACME, question, options)
            assert _seen(ranked.hits) == _seen(read.hits) == _seen(late.hits), (question, options)
            assert ranked.total_found == read.total_found == late.total_found
            assert ("fetch_ms" in late.timing_ms) == bool(late.hits)
            assert "fetch_ms" not in read.timing_ms
            assert all(h.chunk.source != "g.md" for h in ranked.hits)
            compared += bool(ranked.hits)
    assert compared > len(questions) * 3  # most searches found something to compare


async def test_fetching_by_id_reads_only_the_callers_namespace(db: Database) -> None:
    kit = helpers.kit()
    acme = await helpers.ingest(db, kit, ACME, "# Vault\n\nThe zirconium vault.", "a.md")
    vectors = helpers.stores(db, kit).vectors
    wanted = [f"{acme.document.id}:0", "not-an-id", f"{acme.document.id}:99"]
    (found,) = await vectors.fetch_chunks(ACME, wanted)  # the unknown ids are left out
    assert (found.id, found.source) == (wanted[0], "a.md") and "zirconium" in found.text
    assert await vectors.fetch_chunks(GLOBEX, wanted) == []
