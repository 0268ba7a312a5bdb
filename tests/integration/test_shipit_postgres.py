"""The shipit page's rows that mean something against a database, on ragsage's Postgres index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragsage.adapters.postgres import PostgresConfig
from ragsage.library.shipit import RAG, Chunk, Document, IndexFilters, RAGContext, RAGSource
from ragsage.settings import Settings

from .conftest import TEST_DIM

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"

HANDBOOK = """# Handbook

## Uploads

Failed uploads are retried three times with exponential backoff before the job is marked
as failed and the operator is paged.

## Holidays

Every employee receives 28 days of paid holiday per year, requested two weeks ahead.
"""


@pytest.fixture
def rag(pg_config: PostgresConfig) -> Iterator[RAG]:
    settings = Settings.from_env(
        {},
        database_url=pg_config.dsn,
        app_database_url=pg_config.app_dsn,
        embedding_dim=TEST_DIM,
    )
    built = RAG.from_settings(settings, namespace="shipit", migrate=True)
    try:
        yield built
    finally:
        built.close()


def test_the_pages_calls_on_postgres(rag: RAG) -> None:
    chunks = rag.index_text(
        HANDBOOK, document_id="handbook", source="handbook.md", metadata={"team": "hr"}
    )
    assert chunks and all(isinstance(c, Chunk) for c in chunks)
    assert chunks[0].embedding is not None and len(chunks[0].embedding) == TEST_DIM
    rag.index_document(
        Document(
            id="pasta",
            content="Pasta cooks in salted boiling water for nine minutes.",
            source="pasta.md",
            metadata={"team": "kitchen"},
            created_at=datetime.now(UTC) - timedelta(days=400),
        )
    )
    rag.index_file(EXAMPLES / "deployment-guide.pdf")
    assert rag.count() >= 3
    assert {"handbook.md", "pasta.md", "deployment-guide.pdf"} <= set(rag.list_sources())

    context = rag.search("how often are failed uploads retried?", enable_reranking=True)
    assert isinstance(context, RAGContext)
    best = context.results[0]
    assert best.chunk.document_id == "handbook" and "three times" in best.chunk.text
    assert best.chunk.embedding is not None and len(best.chunk.embedding) == TEST_DIM
    assert best.chunk.title_embedding is not None
    assert best.rerank_score is not None and "rerank_ms" in context.timing_ms
    assert {"embed_ms", "vector_ms", "keyword_ms", "total_ms"} <= set(context.timing_ms)

    # Fused by reciprocal rank, as the page says: no score above 1/(60 + 1).
    plain = rag.search("how often are failed uploads retried?")
    assert plain.results and all(0 < r.score <= 1 / 61 for r in plain.results)

    kitchen = rag.search("water", filters=IndexFilters(metadata_match={"team": "kitchen"}))
    assert {r.chunk.document_id for r in kitchen.results} == {"pasta"}
    recent = rag.search(
        "water", filters=IndexFilters(time_min=datetime.now(UTC) - timedelta(days=30))
    )
    assert all(r.chunk.document_id != "pasta" for r in recent.results)
    by_source = rag.search("uploads", filters=IndexFilters(sources=["handbook.md"]))
    assert by_source.results and {r.chunk.source for r in by_source.results} == {"handbook.md"}

    fetched = rag.fetch_chunk(best.chunk.id, chunks_above=1, chunks_below=1)
    assert fetched is not None and fetched.id == best.chunk.id
    assert fetched.embedding == best.chunk.embedding
    assert rag.fetch_chunk("handbook:999") is None

    search, fetch, sources = rag.as_tools()
    payload = json.loads(search({"query": "paid holiday days", "top_k": 2}))
    assert payload["results"][0]["document_id"] == "handbook"
    assert search.metadata["rag_chunk_ids"] == [r["chunk_id"] for r in payload["results"]]
    reranked = json.loads(search({"query": "paid holiday days", "enable_reranking": True}))
    assert "error" not in reranked and reranked["results"][0]["document_id"] == "handbook"
    read = json.loads(fetch({"chunk_id": payload["results"][0]["chunk_id"]}))
    assert "28 days" in read["text"]
    assert "pasta.md" in json.loads(sources())["sources"]

    rag.begin_run()
    rag.search("failed uploads", top_k=1)
    rag.search("boiling water", top_k=1)
    run = rag.end_run()
    assert [s.index for s in run] == [1, 2] and all(isinstance(s, RAGSource) for s in run)

    again = rag.reindex("pasta", content="Risotto needs constant stirring.")
    assert again[0].embedding is not None and len(again[0].embedding) == TEST_DIM
    assert "Risotto" in rag.search("risotto stirring").results[0].chunk.text
    before = rag.count()
    assert rag.delete_document("pasta") is None
    assert rag.count() < before
    assert all(r.chunk.document_id != "pasta" for r in rag.search("risotto").results)
