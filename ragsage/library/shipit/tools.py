"""The page's three agent tools: ``rag_search``, ``rag_fetch_chunk``, ``rag_list_sources``.

They are ragsage's own agent tools (:mod:`ragsage.agent.tools`: the same names,
parameters and defaults, the same argument checks, the same ``{"error": ...}``
answers instead of exceptions), bound to a shipit :class:`RAG` and answering
in the page's payload shapes.  After a search, ``metadata["rag_chunk_ids"]``
lists the chunk ids it returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ragsage.agent.tools import FETCH_CHUNK, LIST_SOURCES, SEARCH, Tool, build_tools
from ragsage.library.shipit.types import Chunk, RAGContext


class SearchableRAG(Protocol):
    """What the tools ask of a shipit :class:`~ragsage.library.shipit.RAG`."""

    @property
    def can_rerank(self) -> bool: ...

    def search(self, query: str, *, top_k: int, enable_reranking: bool) -> RAGContext: ...

    def fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> Chunk | None: ...

    def list_sources(self) -> list[str]: ...


class _PagePayloads:
    """The ToolBackend of ragsage's tools over a shipit RAG, in the page's shapes."""

    def __init__(self, rag: SearchableRAG, searched: dict[str, Any]) -> None:
        self.rag, self.searched = rag, searched

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        # Reranking when asked and possible; without a reranker the search still runs.
        context = self.rag.search(
            query, top_k=top_k, enable_reranking=rerank and self.rag.can_rerank
        )
        self.searched["rag_chunk_ids"] = [r.chunk.id for r in context.results]
        return {
            "query": context.query,
            "total_found": context.total_found,
            "results": [
                {
                    "citation": number,
                    "chunk_id": result.chunk.id,
                    "document_id": result.chunk.document_id,
                    "source": result.chunk.source,
                    "score": result.score,
                    "text": result.chunk.text,
                }
                for number, result in zip(context.citations, context.results, strict=True)
            ],
        }

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        found = self.rag.fetch_chunk(chunk_id, chunks_above=chunks_above, chunks_below=chunks_below)
        if found is None:
            return None
        return {
            "chunk_id": found.id,
            "document_id": found.document_id,
            "source": found.source,
            "text": found.text,
            "context_above": [
                {"chunk_id": c.id, "text": c.text} for c in found.metadata.get("context_above", [])
            ],
            "context_below": [
                {"chunk_id": c.id, "text": c.text} for c in found.metadata.get("context_below", [])
            ],
        }

    def tool_list_sources(self) -> list[str]:
        return self.rag.list_sources()


class RAGTool:
    """One of ragsage's tools bound to a shipit :class:`RAG`, with the page's attributes."""

    name = ""

    def __init__(self, rag: SearchableRAG) -> None:
        self.rag = rag
        self.metadata: dict[str, Any] = {}
        tools = build_tools(_PagePayloads(rag, self.metadata))
        self._tool: Tool = next(tool for tool in tools if tool.name == self.name)
        self.description = self._tool.description
        self.parameters = self._tool.parameters

    def openai_schema(self) -> dict[str, Any]:
        """The entry for a Chat Completions ``tools=[...]`` list."""
        return self._tool.openai_schema()

    def run(self, /, **arguments: Any) -> str:
        """Run with keyword arguments; always a JSON string."""
        return self(arguments)

    def __call__(self, arguments: str | Mapping[str, Any] | None = None) -> str:
        """Run with the arguments as the model sent them (a JSON string or a mapping)."""
        return self._tool(arguments)


class RAGSearchTool(RAGTool):
    name = SEARCH

    def __call__(self, arguments: str | Mapping[str, Any] | None = None) -> str:
        self.metadata["rag_chunk_ids"] = []  # a search that fails leaves no stale ids
        return self._tool(arguments)


class RAGFetchChunkTool(RAGTool):
    name = FETCH_CHUNK


class RAGListSourcesTool(RAGTool):
    name = LIST_SOURCES
