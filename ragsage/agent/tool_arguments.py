"""The tools' arguments as pydantic models, from the search contract's field types.

Each model checks what a language model sent and generates the JSON schema the
tool publishes (:func:`published_schema`), so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator

from ragsage.agent.tool_limits import MAX_TOOL_NEIGHBOURS, MAX_TOOL_TOP_K, ArgumentError
from ragsage.query.requests import Integer, Query, Strict, problem


class SearchArguments(Strict):
    """The arguments of rag_search."""

    query: Query = Field(description="What to look for, in natural language or keywords.")
    top_k: Integer = Field(
        default=5, ge=1, le=MAX_TOOL_TOP_K, description="How many passages to return."
    )
    enable_reranking: bool = Field(
        default=False,
        description="Re-score the candidates with a reranking model: slower, often"
        " more precise for subtle questions.",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        # Deliberately stricter than the schema: a query of spaces finds nothing.
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class FetchArguments(Strict):
    """The arguments of rag_fetch_chunk."""

    chunk_id: str = Field(
        min_length=1,
        max_length=200,
        description="The chunk_id of a passage, as returned by rag_search.",
    )
    chunks_above: Integer = Field(
        default=0,
        ge=0,
        le=MAX_TOOL_NEIGHBOURS,
        description="How many preceding passages of the same document to include.",
    )
    chunks_below: Integer = Field(
        default=0,
        ge=0,
        le=MAX_TOOL_NEIGHBOURS,
        description="How many following passages of the same document to include.",
    )

    @field_validator("chunk_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class ListArguments(Strict):
    """rag_list_sources takes no arguments."""


_Arguments = TypeVar("_Arguments", bound=BaseModel)


def published_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema pydantic generates for ``model``, without its titles.

    Titles repeat the property names and the class name; a model reading the
    tool list gains nothing from them.
    """
    schema: dict[str, Any] = _untitled(model.model_json_schema())
    return schema


def _untitled(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: _untitled(value) for key, value in schema.items() if key != "title"}
    if isinstance(schema.get("properties"), dict):
        # Under "properties" the keys are argument names: one may be called "title".
        kept["properties"] = {name: _untitled(spec) for name, spec in schema["properties"].items()}
    return kept


def validated(tool: str, model: type[_Arguments], given: Mapping[str, Any]) -> _Arguments:
    """``given`` checked by the tool's model; null stands for an argument left out."""
    # Models often send null for an optional argument they mean to leave out.
    present = {name: value for name, value in given.items() if value is not None}
    try:
        return model.model_validate(present)
    except ValidationError as exc:
        raise ArgumentError(f"{tool}: {problem(exc, model, field_word='argument')}") from exc
