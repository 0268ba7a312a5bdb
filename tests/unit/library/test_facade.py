"""The facade end to end on the in-memory stores and the real parsers."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ragsage import RAG, InvalidRequest, RagsageError, TextDocument
from ragsage.core.errors import DocumentError
from ragsage.testing import FakeReranker

from ..library.conftest import EXAMPLES, HANDBOOK, numbered_sections


def test_default_indexes_every_example_format_and_finds_each(rag: RAG) -> None:
    formats = {path.suffix for path in EXAMPLES.iterdir()}
    assert {".pdf", ".docx", ".pptx", ".html", ".md", ".txt"} <= formats
    for path in sorted(EXAMPLES.iterdir()):
        chunks = rag.index_file(path)
        assert chunks and all(chunk.source == path.name for chunk in chunks)
    assert rag.list_sources() == sorted(path.name for path in EXAMPLES.iterdir())
    assert rag.count() >= len(formats)

    context = rag.search("quarterly roadmap", top_k=3)
    assert context.results[0].chunk.source == "quarterly-roadmap.pptx"
    assert context.total_found >= len(context.results)
    assert {"embed_ms", "vector_ms", "keyword_ms", "total_ms"} <= context.timing_ms.keys()


def test_index_text_returns_chunks_with_title_source_and_metadata(rag: RAG) -> None:
    chunks = rag.index_text(
        HANDBOOK,
        document_id="handbook",
        title="Staff handbook",
        source="hr/handbook.md",
        metadata={"team": "hr"},
    )
    assert [chunk.id for chunk in chunks] == [f"handbook:{n}" for n in range(len(chunks))]
    assert all(chunk.source == "hr/handbook.md" for chunk in chunks)
    assert all(chunk.metadata["title"] == "Staff handbook" for chunk in chunks)
    assert all(chunk.metadata["team"] == "hr" for chunk in chunks)

    hit = rag.search("how many days of paid holiday").results[0]
    assert hit.chunk.document_id == "handbook"
    assert "28 days" in hit.chunk.text


def test_filters_restrict_by_document_source_and_metadata(rag: RAG) -> None:
    rag.index_text(
        "Refunds are paid within 14 days.", document_id="a", source="a.md", metadata={"lang": "en"}
    )
    rag.index_text(
        "Refunds are paid within 30 days.", document_id="b", source="b.md", metadata={"lang": "de"}
    )

    def found(**filters: object) -> set[str]:
        return {h.chunk.document_id for h in rag.search("refunds paid", filters=filters).results}

    assert found() == {"a", "b"}
    assert found(document_ids=["b"]) == {"b"}
    assert found(sources=["a.md"]) == {"a"}
    assert found(metadata={"lang": "de"}) == {"b"}
    assert found(metadata={"lang": "fr"}) == set()
    with pytest.raises(InvalidRequest, match="unknown filter"):
        rag.search("refunds", filters={"doc_ids": ["a"]})


def test_created_before_filter_and_recency_bias(rag: RAG) -> None:
    old = datetime.now(UTC) - timedelta(days=400)
    rag.index_document(TextDocument(id="old", content="Pricing plans: basic.", created_at=old))
    rag.index_document({"id": "new", "content": "Pricing plans: premium."})
    newest_first = rag.search("pricing plans", recency_bias=True, recency_half_life_days=7)
    assert newest_first.results[0].chunk.document_id == "new"
    only_old = rag.search(
        "pricing plans", filters={"created_before": datetime.now(UTC) - timedelta(days=1)}
    )
    assert [h.chunk.document_id for h in only_old.results] == ["old"]


def test_neighbours_expand_each_hit(rag: RAG) -> None:
    rag.index_text(numbered_sections(8, words=120), document_id="long")
    assert rag.count() >= 5
    plain = rag.search("topic4", top_k=1).results[0]
    expanded = rag.search("topic4", top_k=1, chunks_above=1, chunks_below=1).results[0]
    assert expanded.chunk.id == plain.chunk.id
    ordinal = expanded.chunk.ordinal
    assert [c.ordinal for c in expanded.above] == [ordinal - 1]
    assert [c.ordinal for c in expanded.below] == [ordinal + 1]
    assert expanded.above[0].text in expanded.context_text

    fetched = rag.fetch_chunk(plain.chunk.id, chunks_above=2)
    assert fetched is not None and fetched.chunk == plain.chunk
    assert [c.ordinal for c in fetched.above] == [ordinal - 2, ordinal - 1]
    assert rag.fetch_chunk("long:999") is None


def test_delete_removes_the_document_from_search_and_counts(rag: RAG) -> None:
    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
    rag.index_text("Parking is free on weekends.", document_id="parking", source="parking.md")
    before = rag.count()

    assert rag.delete_document("handbook") is True
    assert rag.delete_document("handbook") is False
    assert rag.search("paid holiday per year").results == ()
    assert rag.list_sources() == ["parking.md"]
    assert 0 < rag.count() < before
    assert rag.fetch_chunk("handbook:0") is None


def test_reindex_with_new_content_replaces_the_old_text(rag: RAG) -> None:
    rag.index_text(
        numbered_sections(6, words=120), document_id="doc", title="Guide", source="guide.md"
    )
    assert rag.count() > 1
    chunks = rag.reindex("doc", content="The office opens at 8 o'clock sharp.")
    assert len(chunks) == 1 and rag.count() == 1
    assert chunks[0].source == "guide.md" and chunks[0].metadata["title"] == "Guide"
    assert rag.search("topic3").results == ()
    assert rag.search("office opens").results[0].chunk.id == "doc:0"


def test_reindex_without_content_rebuilds_from_the_kept_pages(rag: RAG) -> None:
    first = rag.index_file(EXAMPLES / "security-policy.md")
    again = rag.reindex(first[0].document_id)
    assert [c.text for c in again] == [c.text for c in first]
    with pytest.raises(InvalidRequest, match="no document 'missing'"):
        rag.reindex("missing")


def test_index_documents_accepts_dataclasses_mappings_and_objects(rag: RAG) -> None:
    class Note:
        def __init__(self, id: str, content: str) -> None:
            self.id, self.content = id, content

    chunks = rag.index_documents(
        [
            TextDocument(id="one", content="Alpha topic text.", source="one.txt"),
            {"id": "two", "content": "Beta topic text.", "title": "Two"},
            Note("three", "Gamma topic text."),
        ]
    )
    assert sorted({c.document_id for c in chunks}) == ["one", "three", "two"]
    with pytest.raises(InvalidRequest, match="unknown document field"):
        rag.index_document({"id": "x", "content": "y", "body": "z"})
    with pytest.raises(InvalidRequest, match="string 'content'"):
        rag.index_document({"id": "x"})


def test_bad_input_gets_clear_errors(rag: RAG, tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="nothing.pdf"):
        rag.index_file(tmp_path / "nothing.pdf")
    with pytest.raises(RagsageError, match="empty"):
        rag.index_text("")
    with pytest.raises(InvalidRequest, match="top_k"):
        rag.search("x", top_k=0)
    with pytest.raises(InvalidRequest, match="needs a reranker"):
        rag.search("x", rerank=True)
    with pytest.raises(InvalidRequest, match="chunks_above"):
        rag.fetch_chunk("a:0", chunks_above=-1)
    with pytest.raises(InvalidRequest, match="namespace"):
        RAG.default(namespace="no spaces allowed")


def test_to_dict_is_json_and_mirrors_the_results(rag: RAG) -> None:
    rag.index_text(HANDBOOK, document_id="handbook")
    context = rag.search("travel expenses receipt", chunks_below=1)
    data = json.loads(json.dumps(context.to_dict()))
    assert data["query"] == "travel expenses receipt"
    assert data["total_found"] == context.total_found
    assert [r["chunk"]["id"] for r in data["results"]] == [h.chunk.id for h in context.results]
    assert [r["citation"] for r in data["results"]] == list(range(1, len(context.results) + 1))
    assert data["timing_ms"]["total_ms"] >= 0


def test_prompt_context_numbers_blocks_and_names_their_source(rag: RAG) -> None:
    rag.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
    context = rag.search("holiday expenses security", top_k=3)
    text = context.to_prompt_context()
    for number, hit in enumerate(context.results, start=1):
        assert f"[{number}] Employee handbook" in text
        assert hit.chunk.text.strip()[:40] in text
    assert "(handbook.md)" in text
    assert len(context.to_prompt_context(max_chars=120)) <= 120


def test_rerank_uses_the_configured_reranker() -> None:
    reranker = FakeReranker()
    with RAG.default(reranker=reranker) as rag:
        rag.index_text(HANDBOOK, document_id="handbook")
        context = rag.search("lost laptop device", rerank=True)
        assert reranker.calls and context.results[0].rerank_score is not None
        assert "rerank_ms" in context.timing_ms


def test_sync_calls_work_inside_a_running_event_loop(rag: RAG) -> None:
    async def notebook_cell() -> tuple[int, int]:
        # As in Jupyter: this thread already runs a loop, and the sync API still works.
        rag.index_text(HANDBOOK, document_id="handbook")
        found = rag.search("paid holiday")
        counted = await rag.acount()
        return len(found.results), counted

    hits, counted = asyncio.run(notebook_cell())
    assert hits >= 1 and counted == rag.count()


async def test_async_twins_match_the_sync_methods() -> None:
    async with RAG.default() as rag:
        chunks = await rag.aindex_text(HANDBOOK, document_id="handbook", source="handbook.md")
        await rag.aindex_file(EXAMPLES / "operations-faq.txt")
        await rag.aindex_documents([{"id": "n", "content": "Night shift rota."}])
        assert await rag.acount() == rag.count() == len(chunks) + 2
        assert await rag.alist_sources() == rag.list_sources()
        found = await rag.asearch("paid holiday")
        assert found.results[0].chunk.document_id == "handbook"
        fetched = await rag.afetch_chunk(found.results[0].chunk.id)
        assert fetched is not None
        await rag.areindex("n", content="Day shift rota.")
        assert await rag.adelete_document("n") is True


def test_a_closed_rag_refuses_work() -> None:
    rag = RAG.default()
    rag.index_text("Hello there.", document_id="x")
    rag.close()
    rag.close()  # closing twice is harmless
    with pytest.raises(RagsageError, match="closed"):
        rag.search("hello")


def test_namespaces_do_not_share_state() -> None:
    with RAG.default(namespace="a") as first, RAG.default(namespace="b") as second:
        first.index_text(HANDBOOK, document_id="handbook")
        assert second.count() == 0 and first.namespace == "a"


def test_explicit_ports_are_used_as_given() -> None:
    from ragsage.testing import FakeDocumentStore, FakeEmbedder, FakeLexicalStore, FakeVectorStore

    vectors, lexical, documents = FakeVectorStore(), FakeLexicalStore(), FakeDocumentStore()
    embedder = FakeEmbedder(dimension=128)

    def build() -> RAG:
        return RAG(
            embedder=embedder,
            vector_store=vectors,
            lexical_store=lexical,
            document_store=documents,
        )

    with build() as writer, build() as reader:
        writer.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
        # Same stores, same namespace: the second facade reads what the first wrote.
        assert reader.list_sources() == ["handbook.md"]
        assert reader.search("paid holiday").results[0].chunk.document_id == "handbook"
    assert embedder.calls, "the given embedder did the embedding"


def test_a_search_by_budget_hands_over_at_most_that_many_words(rag: RAG) -> None:
    for path in sorted(EXAMPLES.iterdir()):
        rag.index_file(path)
    for budget in (40, 150, 600):
        found = rag.search("quarterly roadmap goals and owners", budget_tokens=budget).results
        words = sum(
            len(hit.chunk.text.split()) + sum(len(part.split()) for part in hit.chunk.heading_path)
            for hit in found
        )
        assert found and words <= budget
    # Without top_k the budget decides the count; with it, top_k caps it.
    for n in range(12):
        rag.index_text(f"Shipment {n} of zirconium left dock {n}.", document_id=f"note-{n}")
    assert len(rag.search("zirconium shipment", budget_tokens=5000).results) >= 12
    assert len(rag.search("zirconium shipment", budget_tokens=5000, top_k=2).results) == 2
    with pytest.raises(InvalidRequest, match="budget_tokens"):
        rag.search("roadmap", budget_tokens=0)
