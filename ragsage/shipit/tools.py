"""The page's three agent tools: ``rag_search``, ``rag_fetch_chunk``, ``rag_list_sources``.

Each tool takes the arguments a model produced (a JSON string or a mapping),
checks them against its schema and answers with a JSON string; a bad
argument or a failing store gives ``{"error": ...}`` instead of an exception,
so the agent loop can show the model what went wrong.  After a search,
``metadata["rag_chunk_ids"]`` lists the chunk ids it returned.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragsage.agent.tools import MAX_TOOL_NEIGHBOURS, MAX_TOOL_TOP_K, openai_tool

if TYPE_CHECKING:
    from ragsage.shipit.facade import RAG

log = logging.getLogger(__name__)


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's parameters."""


class RAGTool:
    """A named tool with a JSON-Schema for its parameters, bound to one :class:`RAG`."""

    name = ""
    description = ""
    parameters: dict[str, Any] = {}

    def __init__(self, rag: RAG) -> None:
        self.rag = rag
        self.metadata: dict[str, Any] = {}
        self.parameters = json.loads(json.dumps(type(self).parameters))  # each tool its own copy

    def openai_schema(self) -> dict[str, Any]:
        """The entry for a Chat Completions ``tools=[...]`` list."""
        return openai_tool(self.name, self.description, self.parameters)

    def run(self, /, **arguments: Any) -> str:
        """Run with keyword arguments; always a JSON string."""
        try:
            checked = _checked(self.name, type(self).parameters, arguments)
            return json.dumps(self._run(checked), ensure_ascii=False, default=str)
        except ToolArgumentError as exc:
            return json.dumps({"error": str(exc)})
        except Exception as exc:  # noqa: BLE001 - the model gets the message, the log the trace
            log.warning("tool %s failed", self.name, exc_info=True)
            return json.dumps({"error": f"{self.name} failed: {exc}"})

    def __call__(self, arguments: str | Mapping[str, Any] | None = None) -> str:
        """Run with the arguments as the model sent them."""
        if arguments is None or arguments == "":
            return self.run()
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return json.dumps({"error": f"{self.name}: the arguments are not valid JSON"})
        if not isinstance(arguments, Mapping):
            return json.dumps({"error": f"{self.name}: the arguments must be a JSON object"})
        return self.run(**dict(arguments))

    def _run(self, arguments: dict[str, Any]) -> Any:
        """The payload for arguments already checked against :attr:`parameters`."""
        raise NotImplementedError


class RAGSearchTool(RAGTool):
    name = "rag_search"
    description = (
        "Search the indexed documents. Returns the best passages, each with a citation "
        "number to put in square brackets after the statements it supports."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in plain words."},
            "top_k": {
                "type": "integer",
                "default": 5,
                "minimum": 1,
                "maximum": MAX_TOOL_TOP_K,
                "description": "How many passages to return.",
            },
            "enable_reranking": {
                "type": "boolean",
                "default": False,
                "description": "Rescore the candidates with the reranker (slower, sharper).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def _run(self, arguments: dict[str, Any]) -> Any:
        query, top_k = arguments["query"], arguments["top_k"]
        enable_reranking = arguments["enable_reranking"]
        self.metadata["rag_chunk_ids"] = []
        if not query.strip():
            raise ToolArgumentError("rag_search: query must not be empty")
        reranking = enable_reranking and self.rag.can_rerank
        context = self.rag.search(query, top_k=top_k, enable_reranking=reranking)
        self.metadata["rag_chunk_ids"] = [r.chunk.id for r in context.results]
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


class RAGFetchChunkTool(RAGTool):
    name = "rag_fetch_chunk"
    description = "Read one passage by its chunk_id, with neighbouring passages if asked."
    parameters = {
        "type": "object",
        "properties": {
            "chunk_id": {"type": "string", "description": "A chunk_id from rag_search."},
            "chunks_above": {
                "type": "integer",
                "default": 0,
                "minimum": 0,
                "maximum": MAX_TOOL_NEIGHBOURS,
            },
            "chunks_below": {
                "type": "integer",
                "default": 0,
                "minimum": 0,
                "maximum": MAX_TOOL_NEIGHBOURS,
            },
        },
        "required": ["chunk_id"],
        "additionalProperties": False,
    }

    def _run(self, arguments: dict[str, Any]) -> Any:
        chunk_id = arguments["chunk_id"]
        chunks_above, chunks_below = arguments["chunks_above"], arguments["chunks_below"]
        found = self.rag.fetch_chunk(chunk_id, chunks_above=chunks_above, chunks_below=chunks_below)
        if found is None:
            return {"error": f"no chunk {chunk_id!r}"}
        above = found.metadata.get("context_above", [])
        below = found.metadata.get("context_below", [])
        return {
            "chunk_id": found.id,
            "document_id": found.document_id,
            "source": found.source,
            "text": found.text,
            "context_above": [{"chunk_id": c.id, "text": c.text} for c in above],
            "context_below": [{"chunk_id": c.id, "text": c.text} for c in below],
        }


class RAGListSourcesTool(RAGTool):
    name = "rag_list_sources"
    description = "List the names of the indexed sources (files and documents)."
    parameters = {"type": "object", "properties": {}, "additionalProperties": False}

    def _run(self, arguments: dict[str, Any]) -> Any:
        return {"sources": self.rag.list_sources()}


_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}


def _checked(tool: str, schema: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` checked against the tool's flat object schema, defaults filled in."""
    properties: Mapping[str, Any] = schema["properties"]
    unknown = sorted(set(given) - set(properties))
    if unknown:
        raise ToolArgumentError(f"{tool}: unknown argument(s) {', '.join(unknown)}")
    missing = [name for name in schema.get("required", ()) if name not in given]
    if missing:
        raise ToolArgumentError(f"{tool}: missing argument(s) {', '.join(missing)}")
    checked: dict[str, Any] = {}
    for name, spec in properties.items():
        if name not in given:
            if "default" in spec:
                checked[name] = spec["default"]
            continue
        value = given[name]
        wanted = spec["type"]
        # bool is an int in Python; a model's true is not a count.
        if not isinstance(value, _TYPES[wanted]) or (
            wanted == "integer" and isinstance(value, bool)
        ):
            raise ToolArgumentError(f"{tool}: {name} must be a {wanted}")
        if wanted == "integer" and not spec.get("minimum", value) <= value <= spec.get(
            "maximum", value
        ):
            raise ToolArgumentError(
                f"{tool}: {name} must be between {spec['minimum']} and {spec['maximum']}"
            )
        checked[name] = value
    return checked
