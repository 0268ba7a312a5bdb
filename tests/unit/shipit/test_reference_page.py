"""Every name, field, default and behaviour of the shipit RAG API reference page, in order.

The page lives with the team's seed pages, outside this repository; each table row
and example is transcribed here as the page gives it, and run against
``ragsage.library.shipit`` in memory (the Postgres half is in
``tests/integration/test_shipit_postgres.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import ragsage.library.shipit as shipit
from ragsage.library.shipit import (
    RAG,
    Chunk,
    Document,
    HashingEmbedder,
    IndexFilters,
    RAGContext,
    RAGFetchChunkTool,
    RAGListSourcesTool,
    RAGSearchTool,
    RAGSource,
    SearchQuery,
    SearchResult,
)

from .page_samples import EXAMPLES, HANDBOOK

REQUIRED = object()

# The page's dataclass tables: (field, default) in the page's order.
TABLES: dict[type, list[tuple[str, Any]]] = {
    Document: [
        ("id", REQUIRED),
        ("content", REQUIRED),
        ("metadata", {}),
        ("source", None),
        ("title", None),
        ("created_at", None),
    ],
    Chunk: [
        ("id", REQUIRED),
        ("document_id", REQUIRED),
        ("chunk_index", REQUIRED),
        ("text", REQUIRED),
        ("text_for_embedding", ""),  # "defaults to text": checked below
        ("metadata", {}),
        ("source", None),
        ("start_char", 0),
        ("end_char", 0),
        ("embedding", None),
        ("title_embedding", None),
        ("created_at", None),
    ],
    IndexFilters: [
        ("document_ids", None),
        ("sources", None),
        ("metadata_match", None),
        ("time_min", None),
        ("time_max", None),
    ],
    SearchQuery: [
        ("query", REQUIRED),
        ("top_k", 10),
        ("filters", None),
        ("hybrid_alpha", 0.5),
        ("enable_reranking", False),
        ("enable_recency_bias", False),
        ("recency_half_life_days", 30.0),
        ("chunks_above", 0),
        ("chunks_below", 0),
    ],
    SearchResult: [
        ("chunk", REQUIRED),
        ("score", REQUIRED),
        ("vector_score", None),
        ("keyword_score", None),
        ("rerank_score", None),
        ("expanded_above", []),
        ("expanded_below", []),
    ],
    RAGContext: [("query", REQUIRED), ("results", []), ("total_found", 0), ("timing_ms", {})],
    RAGSource: [
        ("index", REQUIRED),
        ("chunk_id", REQUIRED),
        ("document_id", REQUIRED),
        ("text", REQUIRED),
        ("score", REQUIRED),
        ("source", None),
        ("metadata", {}),
    ],
}


def default(value: dataclasses.Field[Any]) -> Any:
    if value.default is not dataclasses.MISSING:
        return value.default
    if value.default_factory is not dataclasses.MISSING:
        return value.default_factory()
    return REQUIRED


@pytest.mark.parametrize("kind", list(TABLES), ids=lambda k: k.__name__)
def test_each_dataclass_has_the_pages_fields_and_defaults_in_order(kind: type) -> None:
    found = [(f.name, default(f)) for f in dataclasses.fields(kind)]
    assert found == TABLES[kind]


def test_the_top_level_imports_and_the_prefixed_names() -> None:
    page_names = (
        "RAG Document Chunk IndexFilters RAGContext RAGSource SearchQuery SearchResult "
        "DocumentChunker HashingEmbedder CallableEmbedder Embedder InMemoryVectorStore "
        "VectorStore InMemoryBM25Store KeywordStore LLMReranker Reranker HybridSearchPipeline "
        "RAGSearchTool RAGFetchChunkTool RAGListSourcesTool TextExtractor RAGDependencyError "
        "RAGIngestError"
    ).split()
    assert all(hasattr(shipit, name) for name in page_names)
    assert shipit.RAGChunk is Chunk and shipit.RAGDocument is Document
    assert shipit.RAGIndexFilters is IndexFilters and shipit.RAGSearchQuery is SearchQuery
    assert shipit.RAGSearchResult is SearchResult


def test_a_chunks_text_for_embedding_defaults_to_its_text() -> None:
    chunk = Chunk(id="d:0", document_id="d", chunk_index=0, text="hello")
    assert chunk.text_for_embedding == "hello"
    assert Chunk("d:1", "d", 1, "a", text_for_embedding="b").text_for_embedding == "b"


def test_index_filters_match_every_configured_condition() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    chunk = Chunk(
        "a:0", "a", 0, "t", metadata={"team": "hr", "year": 2026}, source="a.md", created_at=now
    )
    assert IndexFilters().matches(chunk)
    assert IndexFilters(document_ids=["a"], sources=["a.md"]).matches(chunk)
    assert not IndexFilters(document_ids=["b"]).matches(chunk)
    assert not IndexFilters(sources=["b.md"]).matches(chunk)
    assert IndexFilters(metadata_match={"team": "hr"}).matches(chunk)
    assert not IndexFilters(metadata_match={"team": "it"}).matches(chunk)
    assert IndexFilters(time_min=now - timedelta(days=1), time_max=now).matches(chunk)
    assert not IndexFilters(time_min=now + timedelta(seconds=1)).matches(chunk)
    assert not IndexFilters(time_max=now - timedelta(seconds=1)).matches(chunk)
    # No date says nothing about a window, so it is outside it.
    assert not IndexFilters(time_min=now).matches(Chunk("b:0", "b", 0, "t"))


# ---------------------------------------------------------------- the facade


def test_the_constructor_takes_the_pages_arguments() -> None:
    parameters = inspect.signature(RAG.__init__).parameters
    assert [(n, p.default) for n, p in parameters.items() if n != "self"] == [
        ("vector_store", inspect.Parameter.empty),
        ("embedder", inspect.Parameter.empty),
        ("keyword_store", None),
        ("reranker", None),
        ("chunker", None),
        ("auto_embed_on_add", True),
    ]
    assert all(
        p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in parameters.items() if n != "self"
    )


@pytest.mark.parametrize(
    ("method", "defaults"),
    [
        ("index_text", {"document_id": None, "title": None, "source": None, "metadata": None}),
        ("index_file", {"document_id": None, "title": None, "metadata": None}),
        ("reindex", {"content": None}),
        (
            "search",
            {
                "top_k": 5,
                "filters": None,
                "hybrid_alpha": 0.5,
                "enable_reranking": False,
                "enable_recency_bias": False,
                "chunks_above": 0,
                "chunks_below": 0,
            },
        ),
        ("fetch_chunk", {"chunks_above": 0, "chunks_below": 0}),
    ],
)
def test_each_method_has_the_pages_keyword_defaults(method: str, defaults: dict[str, Any]) -> None:
    parameters = inspect.signature(getattr(RAG, method)).parameters
    assert {n: p.default for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY} == defaults


@pytest.fixture
def rag() -> RAG:
    built = RAG.default(embedder=HashingEmbedder())
    built.index_text(
        HANDBOOK, document_id="handbook", source="handbook.md", metadata={"team": "hr"}
    )
    built.index_text(
        "Pasta cooks in salted boiling water for nine minutes.",
        document_id="pasta",
        source="pasta.md",
        metadata={"team": "kitchen"},
    )
    return built


def test_default_indexes_and_searches_with_the_pages_arguments(rag: RAG) -> None:
    context = rag.search("how often are failed uploads retried?")
    assert isinstance(context, RAGContext)
    assert context.results[0].chunk.document_id == "handbook"
    assert "retried three times" in context.results[0].chunk.text
    assert {"embed_ms", "vector_ms", "keyword_ms", "total_ms"} <= set(context.timing_ms)
    best = context.results[0]
    assert isinstance(best, SearchResult) and isinstance(best.chunk, Chunk)
    assert best.vector_score is not None and best.keyword_score is not None
    assert best.chunk.embedding is not None and len(best.chunk.embedding) == 384
    # The title the chunker read from the first heading, embedded once for the document.
    assert best.chunk.metadata["title"] == "Handbook"
    assert best.chunk.title_embedding == HashingEmbedder().embed(["Handbook"])[0]


def test_search_filters_reranking_recency_and_expansion(rag: RAG) -> None:
    only_kitchen = rag.search("water", filters=IndexFilters(metadata_match={"team": "kitchen"}))
    assert {r.chunk.document_id for r in only_kitchen.results} == {"pasta"}
    handbook_only = rag.search("uploads", filters=IndexFilters(sources=["handbook.md"]))
    assert handbook_only.results
    assert {r.chunk.source for r in handbook_only.results} == {"handbook.md"}
    # A time given without a zone is read as UTC, not refused.
    naive = IndexFilters(time_min=datetime(2020, 1, 1))
    assert rag.search("uploads", filters=naive).results == []  # nothing here has a date
    with pytest.raises(ValueError, match="reranker"):
        rag.search("uploads", enable_reranking=True)
    # Every timing the page lists is there, 0 for a stage that did not run.
    keyword_only = rag.search("uploads", hybrid_alpha=0.0)
    assert keyword_only.timing_ms["vector_ms"] == keyword_only.timing_ms["rerank_ms"] == 0.0
    # Recency: of two otherwise identical notes, the newer one comes first.
    dated = RAG.default()
    now = datetime.now(UTC)
    for name, age in (("old", 400), ("new", 1)):
        dated.index_document(
            Document(
                id=name,
                content="Quarterly report on upload retries.",
                created_at=now - timedelta(days=age),
            )
        )
    plain = [r.chunk.document_id for r in dated.search("upload retries").results]
    biased = dated.search("upload retries", enable_recency_bias=True).results
    assert sorted(plain) == ["new", "old"] and biased[0].chunk.document_id == "new"
    assert biased[0].score > biased[1].score
    small = RAG.default()
    small.index_text(
        "\n\n".join(f"## Part {n}\n\n" + f"word{n} " * 120 for n in range(6)), document_id="long"
    )
    middle = small.search("word3", top_k=1, chunks_above=1, chunks_below=1).results[0]
    assert [c.chunk_index for c in middle.expanded_above] == [middle.chunk.chunk_index - 1]
    assert [c.chunk_index for c in middle.expanded_below] == [middle.chunk.chunk_index + 1]


def test_index_document_documents_file_reindex_delete_count_and_sources(rag: RAG) -> None:
    before = rag.count()
    chunks = rag.index_document(
        Document(id="note", content="Kubernetes pods restart.", title="Ops")
    )
    assert [c.chunk_index for c in chunks] == [0] and chunks[0].metadata["title"] == "Ops"
    rag.index_documents([Document(id="x", content="alpha"), Document(id="y", content="beta")])
    assert rag.count() == before + 3
    pdf = rag.index_file(EXAMPLES / "deployment-guide.pdf")
    assert pdf and pdf[0].source == "deployment-guide.pdf"
    assert "deployment-guide.pdf" in rag.list_sources()
    rag.reindex("note", content="Kubernetes pods are rescheduled on drain.")
    assert "rescheduled" in rag.search("drain rescheduled").results[0].chunk.text
    assert rag.delete_document("note") is None
    assert all(r.chunk.document_id != "note" for r in rag.search("kubernetes").results)
    assert rag.fetch_chunk("note:0") is None


def test_fetch_chunk_returns_a_chunk_with_its_neighbours(rag: RAG) -> None:
    chunks = rag.index_text(
        "\n\n".join(f"## Step {n}\n\n" + f"step{n} " * 150 for n in range(4)), document_id="steps"
    )
    found = rag.fetch_chunk(chunks[1].id, chunks_above=1, chunks_below=1)
    assert isinstance(found, Chunk) and found.id == chunks[1].id
    assert [c.id for c in found.metadata["context_above"]] == [chunks[0].id]
    assert [c.id for c in found.metadata["context_below"]] == [chunks[2].id]


def test_source_tracking_numbers_sources_in_first_seen_order(rag: RAG) -> None:
    rag.begin_run()
    first = rag.search("failed uploads retried", top_k=1)
    rag.search("pasta boiling water", top_k=1)
    again = rag.search("failed uploads retried", top_k=1)
    assert [s.index for s in rag.current_sources()] == [1, 2]
    sources = rag.end_run()
    assert all(isinstance(s, RAGSource) for s in sources)
    assert [s.document_id for s in sources] == ["handbook", "pasta"]
    assert first.citations == again.citations == [1]
    assert sources[0].to_dict()["index"] == 1


def test_rag_context_renders_numbered_blocks_and_a_dict(rag: RAG) -> None:
    context = rag.search("retried uploads", top_k=2)
    block = context.to_prompt_context()
    assert block.startswith("[1] ") and "retried three times" in block
    assert len(context.to_prompt_context(max_chars=120)) <= 120
    data = json.loads(json.dumps(context.to_dict()))
    assert data["query"] == "retried uploads" and data["results"][0]["citation"] == 1


# ---------------------------------------------------------------- tools


def test_the_three_tools_and_their_payloads(rag: RAG) -> None:
    search, fetch, sources = rag.as_tools()
    assert (type(search), type(fetch), type(sources)) == (
        RAGSearchTool,
        RAGFetchChunkTool,
        RAGListSourcesTool,
    )
    assert [t.name for t in (search, fetch, sources)] == [
        "rag_search",
        "rag_fetch_chunk",
        "rag_list_sources",
    ]
    props = search.parameters["properties"]
    assert search.parameters["required"] == ["query"]
    assert (props["top_k"]["default"], props["enable_reranking"]["default"]) == (5, False)
    fetch_props = fetch.parameters["properties"]
    assert (fetch_props["chunks_above"]["default"], fetch_props["chunks_below"]["default"]) == (
        0,
        0,
    )
    assert sources.parameters["properties"] == {}

    found = json.loads(search('{"query": "failed uploads retried"}'))
    assert set(found) == {"query", "total_found", "results"}
    hit = found["results"][0]
    assert set(hit) == {"citation", "chunk_id", "document_id", "source", "score", "text"}
    assert search.metadata["rag_chunk_ids"] == [r["chunk_id"] for r in found["results"]]
    # No reranker here: asking for reranking still searches, without it.
    unranked = json.loads(search(json.dumps({"query": "retried", "enable_reranking": True})))
    assert unranked["results"] and search.metadata["rag_chunk_ids"]

    steps = rag.index_text(
        "\n\n".join(f"## Step {n}\n\n" + f"step{n} " * 150 for n in range(3)), document_id="steps"
    )
    read = json.loads(fetch({"chunk_id": steps[1].id, "chunks_above": 1, "chunks_below": 1}))
    assert read["text"] == steps[1].text
    assert [c["chunk_id"] for c in read["context_above"]] == [steps[0].id]
    assert [c["chunk_id"] for c in read["context_below"]] == [steps[2].id]
    assert json.loads(sources()) == {"sources": ["handbook.md", "pasta.md"]}
    # A failed search leaves no stale ids behind; an argument named like Python's self is refused.
    assert "error" in json.loads(search({"query": "  "})) and search.metadata["rag_chunk_ids"] == []
    assert "error" in json.loads(sources('{"self": 1}'))
    assert "error" in json.loads(search({"query": "x", "top_k": 0}))
    assert "error" in json.loads(search({"query": "x", "top_k": True}))
    assert "error" in json.loads(search("not json"))
    assert "rag_search" in rag.prompt_section()
