"""The reference page's components (chunker, embedders, stores, reranker, pipeline) and errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ragsage.library.shipit import (
    RAG,
    CallableEmbedder,
    Chunk,
    Document,
    DocumentChunker,
    Embedder,
    HashingEmbedder,
    HybridSearchPipeline,
    InMemoryBM25Store,
    InMemoryVectorStore,
    KeywordStore,
    LLMReranker,
    RAGDependencyError,
    RAGIngestError,
    Reranker,
    SearchQuery,
    TextExtractor,
    VectorStore,
)

from .page_samples import EXAMPLES, HANDBOOK

# ---------------------------------------------------------------- components


def test_document_chunker_defaults_and_budget() -> None:
    chunker = DocumentChunker()
    assert (chunker.target_tokens, chunker.overlap_tokens, chunker.title_prefix_chars) == (
        512,
        64,
        64,
    )
    text = (EXAMPLES / "security-policy.md").read_text()
    chunks = DocumentChunker(target_tokens=128, overlap_tokens=16).chunk(
        Document(id="policy", content=text, title="Security policy", source="security-policy.md")
    )
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(c.text_for_embedding.startswith("Security policy") for c in chunks)
    assert all(c.source == "security-policy.md" for c in chunks)
    many = chunker.chunk_many([Document(id="a", content="one"), Document(id="b", content="two")])
    assert [c.document_id for c in many] == ["a", "b"]


def test_hashing_embedder_is_deterministic_normalised_and_seeded() -> None:
    embedder = HashingEmbedder()
    assert (embedder.dimension, embedder.seed) == (384, "shipit-rag")
    first, again = embedder.embed(["upload retry"])[0], embedder.embed(["upload retry"])[0]
    assert first == again and len(first) == 384
    assert math.isclose(math.sqrt(sum(v * v for v in first)), 1.0)
    assert embedder.embed(["upload retry"], kind="query") == [first]
    assert HashingEmbedder(seed="other").embed(["upload retry"])[0] != first
    assert isinstance(embedder, Embedder)


def test_callable_embedder_checks_width_and_count() -> None:
    embedder = CallableEmbedder(fn=lambda texts: [[1.0, 0.0] for _ in texts], dimension=2)
    assert embedder.embed(["a", "b"]) == [[1.0, 0.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="3 were declared"):
        CallableEmbedder(fn=lambda texts: [[1.0, 0.0] for _ in texts], dimension=3).embed(["a"])
    with pytest.raises(ValueError, match="1 vectors for 2 texts"):
        CallableEmbedder(fn=lambda texts: [[1.0]], dimension=1).embed(["a", "b"])


def test_in_memory_vector_store_follows_the_protocol_and_shows_all_chunks() -> None:
    store = InMemoryVectorStore()
    assert isinstance(store, VectorStore)
    a = Chunk("d:0", "d", 0, "a", embedding=[1.0, 0.0], source="d.md")
    b = Chunk("d:1", "d", 1, "b", embedding=[0.0, 1.0], source="d.md")
    store.add([b, a])
    assert [c.id for c, _ in store.search([1.0, 0.1], 1)] == ["d:0"]
    assert [c.id for c in store.list_chunks("d")] == ["d:0", "d:1"]
    assert {c.id for c in store.all_chunks()} == {"d:0", "d:1"}
    assert store.get_many(["d:1", "none"]) == [b] and store.list_sources() == ["d.md"]
    store.delete(["d:1"])
    assert store.count() == 1
    store.delete_document("d")
    assert store.count() == 0


def test_bm25_store_defaults_rank_rare_words_and_forget_deleted_chunks() -> None:
    store = InMemoryBM25Store()
    assert (store.k1, store.b) == (1.5, 0.75) and isinstance(store, KeywordStore)
    assert InMemoryBM25Store(k1=1.2, b=0.5).k1 == 1.2
    store.add(
        [
            Chunk("a:0", "a", 0, "the retry policy retries uploads"),
            Chunk("b:0", "b", 0, "the upload page lists uploads"),
            Chunk("c:0", "c", 0, "holiday allowance"),
        ]
    )
    assert [c.id for c, _ in store.search("retry uploads", 3)] == ["a:0", "b:0"]
    store.delete_document("a")
    assert [c.id for c, _ in store.search("retry", 3)] == []
    assert store.count() == 2


class ChatModel:
    """An LLM shaped as agent frameworks shape them: ``complete(messages=...)`` → ``.content``."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []

    def complete(self, *, messages: list[Any]) -> Any:
        self.calls.append(messages)
        prompt = messages[-1].content
        passages = [line for line in prompt.splitlines() if line.startswith("[")]
        marks = [10 if "holiday" in line.lower() else 2 for line in passages]
        return type("Reply", (), {"content": f"Scores: {json.dumps(marks)}"})()


def test_llm_reranker_uses_complete_messages_and_normalises_scores() -> None:
    model = ChatModel()
    reranker = LLMReranker(model)
    assert reranker.batch_size == 10 and isinstance(reranker, Reranker)
    chunks = [
        Chunk(f"d:{n}", "d", n, "upload retry" if n else "holiday allowance") for n in range(12)
    ]
    ranked = reranker.rerank("how many holidays?", chunks, top_k=3)
    assert len(model.calls) == 2  # 12 candidates in batches of 10
    assert ranked[0] == (chunks[0], 1.0) and all(0.0 <= s <= 1.0 for _, s in ranked)
    assert len(ranked) == 3
    with pytest.raises(TypeError, match="complete"):
        LLMReranker(object())


def test_hybrid_search_pipeline_runs_the_pages_stages() -> None:
    vectors, keywords, embedder = InMemoryVectorStore(), InMemoryBM25Store(), HashingEmbedder()
    rag = RAG(vector_store=vectors, embedder=embedder, keyword_store=keywords)
    rag.index_text(HANDBOOK, document_id="handbook")
    pipeline = HybridSearchPipeline(vectors, embedder, keywords, LLMReranker(ChatModel()))
    context = pipeline.search(SearchQuery(query="holiday days", top_k=2, enable_reranking=True))
    assert "28 days" in context.results[0].chunk.text
    assert context.results[0].rerank_score == 1.0 and "rerank_ms" in context.timing_ms
    dense_only = HybridSearchPipeline(vectors, embedder).search(SearchQuery(query="holiday"))
    assert dense_only.results and all(r.keyword_score is None for r in dense_only.results)


# ---------------------------------------------------------------- errors


def test_errors_and_the_text_extractor(tmp_path: Path) -> None:
    assert issubclass(RAGDependencyError, RuntimeError) and issubclass(RAGIngestError, RuntimeError)
    error = RAGIngestError("a.pdf", ValueError("broken"))
    assert error.path == "a.pdf" and isinstance(error.cause, ValueError)
    assert "Deployment" in TextExtractor().extract(EXAMPLES / "deployment-guide.pdf")
    with pytest.raises(RAGIngestError) as missing:
        TextExtractor().extract(tmp_path / "absent.md")
    assert missing.value.path.endswith("absent.md")
    corrupt = tmp_path / "broken.pdf"
    corrupt.write_bytes(b"%PDF-1.7\nnot really a pdf")
    with pytest.raises(RAGIngestError) as broken:
        RAG.default().index_file(corrupt)
    assert broken.value.path == str(corrupt)
