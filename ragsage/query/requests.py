"""The search contract every caller shares: one pydantic model for options and filters.

The HTTP API validates request bodies with these models and publishes their
JSON schema; :class:`ragsage.RAG` validates its keyword arguments with them;
the agent tools build their argument models from the same field types and
publish the generated schema.  :func:`problem` says what is wrong with a
value in one sentence, for the callers that answer with text rather than a
list of errors (the facade raises it, a tool returns it to the model).

Not imported by ``import ragsage``: pydantic loads when a caller first
validates.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from ragsage.core.errors import InvalidRequest, json_type
from ragsage.core.types import SearchFilters
from ragsage.query.options import (
    DEFAULT_HYBRID_ALPHA,
    MAX_EXPANSION,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    RetrievalOptions,
)


class Strict(BaseModel):
    """Unknown fields refused, and no coercion between JSON types.

    ``0`` is not a boolean and ``false`` is not a number, whatever Python thinks.
    """

    model_config = ConfigDict(extra="forbid", strict=True)


def _timestamp(value: Any) -> Any:
    # JSON sends ISO 8601 text; a Python caller may pass the datetime itself.
    if not isinstance(value, str | datetime):
        raise ValueError("a timestamp is an ISO 8601 string")
    return value


def json_integer(value: Any) -> Any:
    """``value`` as a JSON integer: 3 and 3.0 are, true and "3" are not."""
    # JSON Schema counts 10.0 as an integer; neither it nor Python counts true as one here.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("an integer is required")
    return value


# Strict mode refuses every string for a datetime; JSON has no other way to send one.
Timestamp = Annotated[datetime, BeforeValidator(_timestamp), Field(strict=False)]
Integer = Annotated[int, Field(strict=False), BeforeValidator(json_integer)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
MetadataValue = str | int | float | bool


class Filters(Strict):
    """Restrictions applied before ranking; every given field must match."""

    document_ids: list[str] | None = Field(default=None, max_length=1000)
    sources: list[str] | None = Field(default=None, max_length=1000)
    metadata: dict[str, MetadataValue] | None = None
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None

    def to_filters(self) -> SearchFilters:
        return SearchFilters(
            document_ids=frozenset(self.document_ids) if self.document_ids is not None else None,
            sources=frozenset(self.sources) if self.sources is not None else None,
            metadata=dict(self.metadata) if self.metadata else None,
            created_after=self.created_after,
            created_before=self.created_before,
        )


class SearchOptions(Strict):
    """How to retrieve; defaults suit most questions."""

    top_k: Integer = Field(default=5, ge=1, le=MAX_TOP_K)
    filters: Filters | None = None
    hybrid_alpha: float = Field(default=DEFAULT_HYBRID_ALPHA, ge=0.0, le=1.0)
    rerank: bool | None = Field(
        default=None,
        description="Rerank the candidates. Unset: searches rerank with a provider's reranker "
        "but not with the offline one; answers rerank whenever a reranker is configured.",
    )
    min_score: float | None = Field(
        default=None,
        ge=-1e6,
        le=1e6,
        description="Searches only: drop results whose final score is below this. Without it "
        "a search returns top_k results whenever that many candidates match at all.",
    )
    recency_bias: bool = False
    recency_half_life_days: float = Field(default=30.0, gt=0, le=36500)
    chunks_above: Integer = Field(default=0, ge=0, le=MAX_EXPANSION)
    chunks_below: Integer = Field(default=0, ge=0, le=MAX_EXPANSION)

    def to_options(self, filters: SearchFilters | None = None) -> RetrievalOptions:
        """The engine's options; ``filters`` stands in for :attr:`filters` when given."""
        return RetrievalOptions(
            top_k=self.top_k,
            filters=filters or (self.filters.to_filters() if self.filters else None),
            hybrid_alpha=self.hybrid_alpha,
            rerank=self.rerank,
            min_score=self.min_score,
            recency_bias=self.recency_bias,
            recency_half_life_days=self.recency_half_life_days,
            chunks_above=self.chunks_above,
            chunks_below=self.chunks_below,
        )


def python_options(values: Mapping[str, Any], filters: object = None) -> RetrievalOptions:
    """A Python caller's search options, checked by the same models as a request body.

    The values are held to the very rules a JSON body is (``1`` is no boolean),
    and a ``datetime`` is a timestamp.  ``filters`` may be :class:`SearchFilters`
    itself, a mapping of its fields, or None; its ids and sources may be any
    collection of strings, or one string.  The first problem is raised as
    :class:`InvalidRequest` naming the argument.
    """
    try:
        options = SearchOptions.model_validate(values)
    except ValidationError as exc:
        raise InvalidRequest(problem(exc, SearchOptions, field_word="argument")) from exc
    return options.to_options(python_filters(filters))


def python_filters(value: object) -> SearchFilters | None:
    """:class:`SearchFilters` from itself, None, or a mapping with any of its field names."""
    if value is None or isinstance(value, SearchFilters):
        return value
    if not isinstance(value, Mapping):
        raise InvalidRequest(
            f"filters must be a mapping or SearchFilters, got {type(value).__name__}"
        )
    given = {key: _as_list(item) if key in _NAMES else item for key, item in value.items()}
    try:
        return Filters.model_validate(given).to_filters()
    except ValidationError as exc:
        raise InvalidRequest(problem(exc, Filters, field_word="filter")) from exc


_NAMES = ("document_ids", "sources")


def _as_list(value: object) -> object:
    if isinstance(value, str):
        return [value]  # one id given bare, not a string to read letter by letter
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return value


def problem(exc: ValidationError, model: type[BaseModel], *, field_word: str = "field") -> str:
    """The first thing wrong with the value, as one sentence naming the field."""
    error = exc.errors(include_url=False)[0]
    return _sentence(error, model, field_word)


def _sentence(error: ErrorDetails, model: type[BaseModel], field_word: str) -> str:
    name = ".".join(str(part) for part in error["loc"])
    value, kind = error.get("input"), error["type"]
    if kind == "missing":
        return f"missing required {field_word} {name!r}"
    if kind == "extra_forbidden":
        accepted = ", ".join(model.model_fields) or "none"
        return f"unknown {field_word} {name!r} (accepted {field_word}s: {accepted})"
    if kind == "string_type":
        return f"{name} must be a string, got {json_type(value)}"
    if kind == "string_too_short":
        return f"{name} must not be empty"
    if kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f"{name} is too long ({len(value)} characters, at most {limit})"
    if kind == "bool_type":
        return f"{name} must be true or false, got {json_type(value)} {value!r}"
    if kind == "value_error" and "integer is required" in error["msg"]:
        return f"{name} must be a whole number, got {json_type(value)} {value!r}"
    if kind == "value_error":
        return f"{name} {error['msg'].removeprefix('Value error, ')}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        low, high = _bounds(model, str(error["loc"][0]))
        if low is not None and high is not None and len(error["loc"]) == 1:
            return f"{name} must be between {low} and {high}, got {value}"
    return f"{name}: {error['msg']}"


def _bounds(model: type[BaseModel], name: str) -> tuple[Any, Any]:
    field = model.model_fields.get(name)
    low = high = None
    for rule in field.metadata if field is not None else ():
        low = getattr(rule, "ge", getattr(rule, "gt", low))
        high = getattr(rule, "le", getattr(rule, "lt", high))
    return low, high
