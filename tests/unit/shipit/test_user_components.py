"""Components a user wrote to the shipit page, not ours, searched by ragsage's engine."""

from __future__ import annotations

import json
import math
from typing import Any

from ragsage.library.shipit import RAG, Chunk, IndexFilters, LLMReranker

NOTES = {
    "retry": "Failed uploads are retried three times with exponential backoff.",
    "holiday": "Every employee receives 28 days of paid holiday a year.",
    "laptop": "Laptops use full-disk encryption and lost ones are reported within an hour.",
}


class ListVectorStore:
    """A user's store: a plain list, dot products on unit vectors, written from the protocol."""

    def __init__(self) -> None:
        self.rows: list[Chunk] = []

    def add(self, chunks: list[Chunk]) -> None:
        self.rows += chunks

    def delete(self, chunk_ids: list[str]) -> None:
        self.rows = [c for c in self.rows if c.id not in chunk_ids]

    def delete_document(self, document_id: str) -> None:
        self.rows = [c for c in self.rows if c.document_id != document_id]

    def get(self, chunk_id: str) -> Chunk | None:
        return next((c for c in self.rows if c.id == chunk_id), None)

    def get_many(self, chunk_ids: list[str]) -> list[Chunk]:
        return [c for c in self.rows if c.id in chunk_ids]

    def list_chunks(self, document_id: str) -> list[Chunk]:
        return [c for c in self.rows if c.document_id == document_id]

    def search(
        self, query_embedding: list[float], top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]:
        scored = [
            (c, sum(a * b for a, b in zip(query_embedding, c.embedding, strict=True)))
            for c in self.rows
            if c.embedding is not None and (filters is None or filters.matches(c))
        ]
        return sorted(scored, key=lambda pair: -pair[1])[:top_k]

    def count(self) -> int:
        return len(self.rows)

    def list_sources(self) -> list[str]:
        return sorted({c.source for c in self.rows if c.source})


class SubstringKeywords:
    """A user's keyword store: counts the query's words found in each chunk."""

    def __init__(self) -> None:
        self.rows: dict[str, Chunk] = {}

    def add(self, chunks: list[Chunk]) -> None:
        self.rows.update((c.id, c) for c in chunks)

    def delete(self, chunk_ids: list[str]) -> None:
        for value in chunk_ids:
            self.rows.pop(value, None)

    def delete_document(self, document_id: str) -> None:
        self.delete([k for k, c in self.rows.items() if c.document_id == document_id])

    def search(
        self, query: str, top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]:
        words = [w for w in query.lower().split() if len(w) > 3]
        scored = [(c, float(sum(w in c.text.lower() for w in words))) for c in self.rows.values()]
        return sorted([p for p in scored if p[1] > 0], key=lambda p: -p[1])[:top_k]

    def count(self) -> int:
        return len(self.rows)


def letters(texts: list[str]) -> list[list[float]]:
    """A user's embedding function: letter frequencies, unit length."""
    vectors = []
    for text in texts:
        counts = [float(text.lower().count(chr(97 + n))) for n in range(26)]
        norm = math.sqrt(sum(v * v for v in counts)) or 1.0
        vectors.append([v / norm for v in counts])
    return vectors


class Judge:
    """A user's LLM: replies as a dict, judging by one word."""

    def complete(self, *, messages: list[Any]) -> dict[str, str]:
        lines = [line for line in messages[0]["content"].splitlines() if line.startswith("[")]
        return {"content": json.dumps([9 if "encryption" in line else 1 for line in lines])}


def built(auto_embed: bool = True) -> tuple[RAG, ListVectorStore]:
    store = ListVectorStore()
    rag = RAG(
        vector_store=store,
        embedder=letters,  # a bare function: its width is probed once
        keyword_store=SubstringKeywords(),
        reranker=LLMReranker(Judge()),
        auto_embed_on_add=auto_embed,
    )
    for name, text in NOTES.items():
        rag.index_text(text, document_id=name, source=f"{name}.md")
    return rag, store


def test_a_users_stores_function_and_llm_serve_search_rerank_and_tools() -> None:
    rag, store = built()
    assert rag.embedder.dimension == 26 and store.count() == 3
    found = rag.search("failed uploads retried", top_k=3)
    assert found.results[0].chunk.document_id == "retry"
    assert found.results[0].chunk is store.get("retry:0")  # the user's own object back
    reranked = rag.search("lost laptops", top_k=3, enable_reranking=True)
    assert reranked.results[0].chunk.document_id == "laptop"
    assert reranked.results[0].rerank_score == 0.9
    tool = rag.as_tools()[0]
    payload = json.loads(tool({"query": "holiday days", "enable_reranking": True}))
    assert (
        payload["results"]
        and tool.metadata["rag_chunk_ids"][0] == payload["results"][0]["chunk_id"]
    )
    rag.delete_document("retry")
    assert store.count() == 2 and rag.list_sources() == ["holiday.md", "laptop.md"]


def test_without_auto_embedding_chunks_are_stored_bare_and_found_by_keywords() -> None:
    rag, store = built(auto_embed=False)
    assert all(c.embedding is None for c in store.rows)
    found = rag.search("paid holiday", top_k=3)
    assert [r.chunk.document_id for r in found.results] == ["holiday"]
    assert found.results[0].vector_score is None and found.results[0].keyword_score == 2.0


def test_reindex_after_a_restart_with_new_content_and_metadata_kept_apart() -> None:
    rag, store = built()
    restarted = RAG(vector_store=store, embedder=letters, keyword_store=SubstringKeywords())
    chunks = restarted.reindex("holiday", content="Every employee receives 30 days of holiday.")
    assert "30 days" in chunks[0].text and chunks[0].source == "holiday.md"
    assert [c.text for c in store.list_chunks("holiday")] == [chunks[0].text]
    tags = ["hr"]
    many = rag.index_text(
        "\n\n".join(f"## Part {n}\n\n" + f"word{n} " * 200 for n in range(2)),
        document_id="parts",
        metadata={"tags": tags},
    )
    many[0].metadata["tags"].append("changed")
    assert many[1].metadata["tags"] == ["hr"] and tags == ["hr"]


def test_the_reranker_reads_a_reply_that_quotes_passage_markers() -> None:
    class Chatty:
        def complete(self, *, messages: list[Any]) -> str:
            json.dumps(messages)  # the messages go to a chat API as JSON, as they are
            return "[2, 9]\nPassage [2] answers it; passage [1] does not."

    chunks = [Chunk("a:0", "a", 0, "one"), Chunk("b:0", "b", 0, "two")]
    ranked = LLMReranker(Chatty()).rerank("q", chunks, top_k=2)
    assert [(c.id, s) for c, s in ranked] == [("b:0", 0.9), ("a:0", 0.2)]
