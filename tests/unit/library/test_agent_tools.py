"""The facade as the agent tools' backend: what a model calling the tools gets back."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ragsage import RAG

from .conftest import HANDBOOK


@pytest.fixture
def rag() -> Iterator[RAG]:
    with RAG.default() as built:
        built.index_text(HANDBOOK, document_id="handbook", source="handbook.md")
        built.index_text("Parking is free on weekends.", document_id="parking", source="p.md")
        yield built


def test_the_three_tools_have_openai_schemas(rag: RAG) -> None:
    tools = rag.as_tools()
    assert [tool.name for tool in tools] == ["rag_search", "rag_fetch_chunk", "rag_list_sources"]
    for tool in tools:
        schema = tool.openai_schema()
        assert schema["type"] == "function"
        assert schema["function"]["parameters"]["type"] == "object"


def test_search_then_fetch_then_list_as_a_model_would(rag: RAG) -> None:
    search, fetch, sources = rag.as_tools()
    rag.begin_run()
    found = json.loads(search('{"query": "lost laptop", "top_k": 2}'))
    first = found["results"][0]
    assert first["citation"] == 1 and first["source"] == "handbook.md"
    assert first["title"] == "Employee handbook" and "lost device" in first["text"]

    fetched = json.loads(fetch({"chunk_id": first["chunk_id"], "chunks_above": 1}))
    assert fetched["chunk_id"] == first["chunk_id"] and fetched["document_id"] == "handbook"
    assert all(item["chunk_id"] != first["chunk_id"] for item in fetched["context_above"])

    assert json.loads(sources()) == {"sources": ["handbook.md", "p.md"]}
    assert [s.chunk_id for s in rag.end_run()][0] == first["chunk_id"]


def test_bad_arguments_and_missing_chunks_are_error_payloads(rag: RAG) -> None:
    search, fetch, _ = rag.as_tools()
    assert "error" in json.loads(search('{"top_k": 3}'))
    assert "error" in json.loads(search("{not json"))
    missing = json.loads(fetch({"chunk_id": "nope:0"}))
    assert "nope:0" in missing["error"]
    # Reranking asked of a RAG without a reranker still answers.
    assert json.loads(search({"query": "parking", "enable_reranking": True}))["results"]


def test_prompt_section_names_the_tools_and_the_citation_rule(rag: RAG) -> None:
    text = rag.prompt_section()
    for name in ("rag_search", "rag_fetch_chunk", "rag_list_sources"):
        assert name in text
    assert "[1]" in text


GUIDE = (
    "# Guide\n\n## Keys\n\nKeys are hashed with SHA-256 before storage.\n\n"
    "## Leases\n\nA job lease expires after one minute without a heartbeat.\n"
)


def test_a_passage_holding_several_sections_names_them(rag: RAG) -> None:
    """The library's hits and the tools say which sections a joined passage holds."""
    rag.index_text(GUIDE, document_id="guide", source="guide.md")
    [hit] = [
        h
        for h in rag.search("job lease heartbeat", top_k=5).results
        if h.chunk.source == "guide.md"
    ]
    assert [s.heading_path for s in hit.chunk.sections] == [("Guide", "Keys"), ("Guide", "Leases")]
    search, fetch, _ = rag.as_tools()
    found = json.loads(search('{"query": "job lease heartbeat", "top_k": 5}'))
    [guide] = [r for r in found["results"] if r["source"] == "guide.md"]
    assert guide["sections"] == ["Guide > Keys", "Guide > Leases"]
    assert json.loads(fetch({"chunk_id": guide["chunk_id"]}))["sections"] == guide["sections"]
