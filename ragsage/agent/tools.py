"""Three retrieval tools an LLM agent can call: search, fetch a chunk, list sources.

A :class:`Tool` couples a JSON-Schema description (what the model sees) with a
callable that takes the arguments the model produced, checks them, asks a
:class:`ToolBackend` and answers with a JSON string.  Each tool's arguments are
a pydantic model built from the search contract's field types
(:mod:`ragsage.query.requests`): the model checks them, and its generated JSON
schema is what the tool publishes, so the two cannot disagree.  The callable
never raises: a model that sends a bad argument, or a backend that fails, gets
``{"error": "..."}`` back so the agent loop can show it to the model and let it
try again.  The backends (the in-process facade, the HTTP client) live elsewhere.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragsage.agent.tool_limits import ArgumentError
from ragsage.core.errors import RagsageError, json_type

log = logging.getLogger(__name__)

SEARCH = "rag_search"
FETCH_CHUNK = "rag_fetch_chunk"
LIST_SOURCES = "rag_list_sources"


class ToolBackend(Protocol):
    """What the tools need from a knowledge base; payload shapes are in the module docs."""

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        """Rank passages for ``query``: ``{"query", "total_found", "results": [...]}``."""
        ...

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        """One chunk with its neighbours, or None when there is no such chunk."""
        ...

    def tool_list_sources(self) -> list[str]:
        """Every source name in the knowledge base."""
        ...


@dataclass(frozen=True)
class Tool:
    """One callable tool: its name, when to use it, its argument schema and its body."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., str]

    def openai_schema(self) -> dict[str, Any]:
        """The entry for the ``tools=[...]`` list of an OpenAI Chat Completions request."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def __call__(self, arguments: str | Mapping[str, Any] | None = None) -> str:
        """Run with the arguments as the model sent them (a JSON string) or as a mapping."""
        try:
            parsed = _parse_arguments(self.name, arguments)
        except ArgumentError as exc:
            return _error(str(exc))
        return self.function(**parsed)


def build_tools(backend: ToolBackend) -> list[Tool]:
    """The three retrieval tools, bound to ``backend``."""
    # pydantic loads here, when tools are built, not with `import ragsage`.
    from ragsage.agent.tool_arguments import (
        FetchArguments,
        ListArguments,
        SearchArguments,
        published_schema,
    )

    # Each tool gets its own copy of the schema, so a caller editing one cannot change
    # what the validator enforces.
    return [
        Tool(name, description, copy.deepcopy(published_schema(model)), _guarded(name, body))
        for name, description, model, body in (
            (SEARCH, _SEARCH_DESCRIPTION, SearchArguments, _search(backend)),
            (FETCH_CHUNK, _FETCH_DESCRIPTION, FetchArguments, _fetch_chunk(backend)),
            (LIST_SOURCES, _LIST_DESCRIPTION, ListArguments, _list_sources(backend)),
        )
    ]


def prompt_section(tools: Sequence[Tool] | None = None) -> str:
    """Text for a system prompt: what each tool is for and how to cite what it found."""
    names = {tool.name for tool in tools} if tools is not None else set(_PROMPT_LINES)
    lines = [line for name, line in _PROMPT_LINES.items() if name in names]
    extra = [tool for tool in tools or () if tool.name not in _PROMPT_LINES]
    lines += [f"- `{tool.name}`: {tool.description}" for tool in extra]
    return "\n".join(
        [
            "## Knowledge base",
            "You can look things up in the user's document collection with these tools:",
            *lines,
            "",
            "Rules for answering from it:",
            "- Search before you answer any question about the documents; search again with"
            " other words if the first results miss the point.",
            "- Each search result carries a `citation` number. Put that number in square"
            " brackets, e.g. [1] or [2][3], right after every statement it supports.",
            "- Cite only results you actually retrieved in this conversation, and never"
            " invent sources, numbers or quotations.",
            "- If the results do not contain the answer, say that the documents do not cover"
            " it instead of guessing.",
        ]
    )


# --- argument handling -------------------------------------------------------------


def _parse_arguments(tool: str, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str | bytes):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise ArgumentError(f"{tool}: the arguments are not valid JSON ({exc})") from exc
        except RecursionError as exc:
            raise ArgumentError(f"{tool}: the arguments are nested too deeply") from exc
    if not isinstance(arguments, Mapping):
        raise ArgumentError(
            f"{tool}: the arguments must be a JSON object, got {json_type(arguments)}"
        )
    bad_keys = [key for key in arguments if not isinstance(key, str)]
    if bad_keys:
        raise ArgumentError(f"{tool}: argument names must be strings, got {bad_keys[0]!r}")
    return dict(arguments)


# --- tool bodies ---------------------------------------------------------------------


def _search(backend: ToolBackend) -> Callable[..., Any]:
    from ragsage.agent.tool_arguments import SearchArguments, validated

    def run(**arguments: Any) -> Any:
        args = validated(SEARCH, SearchArguments, arguments)
        return backend.tool_search(args.query, top_k=args.top_k, rerank=args.enable_reranking)

    return run


def _fetch_chunk(backend: ToolBackend) -> Callable[..., Any]:
    from ragsage.agent.tool_arguments import FetchArguments, validated

    def run(**arguments: Any) -> Any:
        args = validated(FETCH_CHUNK, FetchArguments, arguments)
        chunk = backend.tool_fetch_chunk(
            args.chunk_id, chunks_above=args.chunks_above, chunks_below=args.chunks_below
        )
        if chunk is None:
            return {"error": f"no chunk with id {args.chunk_id!r}"}
        return chunk

    return run


def _list_sources(backend: ToolBackend) -> Callable[..., Any]:
    from ragsage.agent.tool_arguments import ListArguments, validated

    def run(**arguments: Any) -> Any:
        validated(LIST_SOURCES, ListArguments, arguments)
        return {"sources": list(backend.tool_list_sources())}

    return run


def _guarded(name: str, body: Callable[..., Any]) -> Callable[..., str]:
    """Wrap a tool body so every outcome, failures included, is a JSON string."""

    def call(**arguments: Any) -> str:
        try:
            return _dumps(body(**arguments))
        except (RagsageError, ValueError) as exc:
            return _error(str(exc) or f"{name} failed ({type(exc).__name__})")
        except Exception:
            # The message of an unexpected error may carry URLs or credentials; the log
            # (which redacts secrets) keeps the detail, the model gets only the kind.
            log.exception("tool %s failed unexpectedly", name)
            return _error(f"{name} failed unexpectedly; the details are in the server log")

    return call


def _dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


def _error(message: str) -> str:
    return _dumps({"error": message})


# --- what the model sees -------------------------------------------------------------

_SEARCH_DESCRIPTION = (
    "Search the user's document collection for passages relevant to a question. Use it"
    " before answering anything the documents might cover. Returns ranked passages, each"
    " with a `citation` number to cite as [n], its chunk_id, source, title and text (and,"
    " for a passage holding several sections, their names in `sections`); an"
    " empty result list means nothing relevant was found."
)
_FETCH_DESCRIPTION = (
    "Read one passage in full by the chunk_id a search returned, optionally with the"
    " neighbouring passages of the same document before (chunks_above) and after"
    " (chunks_below) it. Use it when a search hit is cut short or needs its surroundings."
)
_LIST_DESCRIPTION = (
    "List the names of every source (file or document) in the collection. Use it when the"
    " user asks what the knowledge base contains, or to check a source exists."
)


_PROMPT_LINES = {
    SEARCH: f"- `{SEARCH}`: find passages relevant to a question; each result has a"
    " `citation` number.",
    FETCH_CHUNK: f"- `{FETCH_CHUNK}`: read a passage in full by its chunk_id, with"
    " neighbouring passages when you need more context.",
    LIST_SOURCES: f"- `{LIST_SOURCES}`: list the documents the collection holds.",
}
