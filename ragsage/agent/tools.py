"""Three retrieval tools an LLM agent can call: search, fetch a chunk, list sources.

A :class:`Tool` couples a JSON-Schema description (what the model sees) with a
callable that takes the arguments the model produced, checks them against that
description, asks a :class:`ToolBackend` and answers with a JSON string.  The
callable never raises: a model that sends a bad argument, or a backend that fails,
gets ``{"error": "..."}`` back so the agent loop can show it to the model and let
it try again.  Everything here is standard library, so ``import ragsage`` stays
light; the backends (the in-process facade, the HTTP client) live elsewhere.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragsage.core.errors import RagsageError
from ragsage.query.options import MAX_QUERY_CHARS

log = logging.getLogger(__name__)

SEARCH = "rag_search"
FETCH_CHUNK = "rag_fetch_chunk"
LIST_SOURCES = "rag_list_sources"

MAX_TOOL_TOP_K = 20
MAX_TOOL_NEIGHBOURS = 5


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


class ArgumentError(ValueError):
    """The model's arguments do not fit the tool's schema."""


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
    # Each tool gets its own copy of the schema, so a caller editing one cannot change
    # what the validator enforces.
    return [
        Tool(name, description, copy.deepcopy(schema), _guarded(name, body(backend)))
        for name, description, schema, body in (
            (SEARCH, _SEARCH_DESCRIPTION, _SEARCH_SCHEMA, _search),
            (FETCH_CHUNK, _FETCH_DESCRIPTION, _FETCH_SCHEMA, _fetch_chunk),
            (LIST_SOURCES, _LIST_DESCRIPTION, _LIST_SCHEMA, _list_sources),
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
            f"{tool}: the arguments must be a JSON object, got {_json_type(arguments)}"
        )
    bad_keys = [key for key in arguments if not isinstance(key, str)]
    if bad_keys:
        raise ArgumentError(f"{tool}: argument names must be strings, got {bad_keys[0]!r}")
    return dict(arguments)


def _validated(tool: str, schema: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``given`` against one of this module's flat object schemas; fill defaults."""
    properties: Mapping[str, Mapping[str, Any]] = schema["properties"]
    unknown = sorted(set(given) - set(properties))
    if unknown:
        accepted = ", ".join(properties) or "none"
        raise ArgumentError(
            f"{tool}: unknown argument {unknown[0]!r} (accepted arguments: {accepted})"
        )
    missing = [name for name in schema.get("required", ()) if given.get(name) is None]
    if missing:
        raise ArgumentError(f"{tool}: missing required argument {missing[0]!r}")
    values: dict[str, Any] = {}
    for name, spec in properties.items():
        value = given.get(name)
        # Models often send null for an optional argument they mean to leave out.
        values[name] = spec["default"] if value is None else _checked(tool, name, spec, value)
    return values


def _checked(tool: str, name: str, spec: Mapping[str, Any], value: Any) -> Any:
    kind = spec["type"]
    if kind == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"{tool}: {name} must be a string, got {_json_type(value)}")
        if len(value.strip()) < spec.get("minLength", 0):
            raise ArgumentError(f"{tool}: {name} must not be empty")
        if len(value) > spec.get("maxLength", math.inf):
            raise ArgumentError(
                f"{tool}: {name} is too long ({len(value)} characters, at most {spec['maxLength']})"
            )
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ArgumentError(
                f"{tool}: {name} must be true or false, got {_json_type(value)} {value!r}"
            )
        return value
    if kind == "integer":
        # JSON Schema counts 3.0 as an integer; Python's bool is an int subclass but not here.
        whole = isinstance(value, float) and value.is_integer()
        if isinstance(value, bool) or not (isinstance(value, int) or whole):
            raise ArgumentError(
                f"{tool}: {name} must be a whole number, got {_json_type(value)} {value!r}"
            )
        number = int(value)
        low, high = spec["minimum"], spec["maximum"]
        if not low <= number <= high:
            raise ArgumentError(f"{tool}: {name} must be between {low} and {high}, got {number}")
        return number
    raise AssertionError(f"unhandled schema type {kind!r}")  # pragma: no cover


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


# --- tool bodies ---------------------------------------------------------------------


def _search(backend: ToolBackend) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        args = _validated(SEARCH, _SEARCH_SCHEMA, arguments)
        return backend.tool_search(
            args["query"], top_k=args["top_k"], rerank=args["enable_reranking"]
        )

    return run


def _fetch_chunk(backend: ToolBackend) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        args = _validated(FETCH_CHUNK, _FETCH_SCHEMA, arguments)
        chunk = backend.tool_fetch_chunk(
            args["chunk_id"],
            chunks_above=args["chunks_above"],
            chunks_below=args["chunks_below"],
        )
        if chunk is None:
            return {"error": f"no chunk with id {args['chunk_id']!r}"}
        return chunk

    return run


def _list_sources(backend: ToolBackend) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        _validated(LIST_SOURCES, _LIST_SCHEMA, arguments)
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
    " with a `citation` number to cite as [n], its chunk_id, source, title and text; an"
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

_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for, in natural language or keywords.",
        },
        "top_k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOOL_TOP_K,
            "default": 5,
            "description": "How many passages to return.",
        },
        "enable_reranking": {
            "type": "boolean",
            "default": False,
            "description": "Re-score the candidates with a reranking model: slower, often"
            " more precise for subtle questions.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

_FETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The chunk_id of a passage, as returned by rag_search.",
        },
        "chunks_above": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_TOOL_NEIGHBOURS,
            "default": 0,
            "description": "How many preceding passages of the same document to include.",
        },
        "chunks_below": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_TOOL_NEIGHBOURS,
            "default": 0,
            "description": "How many following passages of the same document to include.",
        },
    },
    "required": ["chunk_id"],
    "additionalProperties": False,
}

_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}

_PROMPT_LINES = {
    SEARCH: f"- `{SEARCH}`: find passages relevant to a question; each result has a"
    " `citation` number.",
    FETCH_CHUNK: f"- `{FETCH_CHUNK}`: read a passage in full by its chunk_id, with"
    " neighbouring passages when you need more context.",
    LIST_SOURCES: f"- `{LIST_SOURCES}`: list the documents the collection holds.",
}
