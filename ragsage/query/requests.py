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

import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)
from pydantic_core import ErrorDetails

from ragsage.core.errors import InvalidRequest, json_type
from ragsage.core.filters import SearchFilters
from ragsage.query.options import (
    MAX_BUDGET_TOKENS,
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
        raise ValueError("must be an ISO 8601 timestamp or a datetime")
    return value


def _zoned(value: datetime) -> datetime:
    # Stored times carry their zone; a time written without one is read as UTC,
    # so that comparing the two can never fail.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def json_integer(value: Any) -> Any:
    """``value`` as a JSON integer: 3 and 3.0 are, true and "3" are not."""
    # JSON Schema counts 10.0 as an integer; neither it nor Python counts true as one here.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("an integer is required")
    return value


# Strict mode refuses every string for a datetime; JSON has no other way to send one.
Timestamp = Annotated[
    datetime, BeforeValidator(_timestamp), AfterValidator(_zoned), Field(strict=False)
]
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

    @classmethod
    def of(cls, filters: SearchFilters) -> Filters:
        """The request form of ``filters`` (what :meth:`to_filters` reads back)."""
        return cls(
            document_ids=sorted(filters.document_ids) if filters.document_ids is not None else None,
            sources=sorted(filters.sources) if filters.sources is not None else None,
            metadata=dict(filters.metadata) if filters.metadata else None,
            created_after=filters.created_after,
            created_before=filters.created_before,
        )


class SearchOptions(Strict):
    """How to retrieve; defaults suit most questions."""

    top_k: Integer = Field(default=5, ge=1, le=MAX_TOP_K)
    filters: Filters | None = None
    hybrid_alpha: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Dense weight against keyword search: 1 dense only, 0 keyword only. Unset: "
        "0.3, or 0.5 for a question about source code that names none of it, unless keyword "
        "search found one passage far above the rest.",
    )
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
    budget_tokens: Integer | None = Field(
        default=None,
        ge=1,
        le=MAX_BUDGET_TOKENS,
        description="Return the passages that best fill this many whitespace-separated words, "
        "counting each result's heading path with its text: a long passage gives way to its "
        "best window, and no two passages repeat the same lines. top_k, when given, still "
        "caps the count.",
    )

    def to_options(self, filters: SearchFilters | None = None) -> RetrievalOptions:
        """The engine's options; ``filters`` stands in for :attr:`filters` when given."""
        # Under a budget the count is the budget's to decide, unless top_k was sent.
        budgeted = self.budget_tokens is not None and "top_k" not in self.model_fields_set
        return RetrievalOptions(
            top_k=MAX_TOP_K if budgeted else self.top_k,
            budget_tokens=self.budget_tokens,
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

    The values are held to the rules a JSON body is (``1`` is no boolean),
    with what Python adds: any integral number is an integer and any real one
    a number (numpy's included), and a ``datetime`` is a timestamp.  ``filters``
    may be :class:`SearchFilters` itself, a mapping of its fields, or None.
    The first problem is raised as :class:`InvalidRequest` naming the argument.
    """
    try:
        options = SearchOptions.model_validate({k: _python_number(v) for k, v in values.items()})
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
    # Ids and sources may be any collection of strings, or one string; metadata
    # any mapping, its values compared as the stores compare them.
    given = {key: _as_list(item) if key in _NAMES else item for key, item in value.items()}
    metadata = given.pop("metadata", None)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidRequest(f"filter metadata must be a mapping, got {type(metadata).__name__}")
    try:
        checked = Filters.model_validate(given).to_filters()
    except ValidationError as exc:
        raise InvalidRequest(problem(exc, Filters, field_word="filter")) from exc
    return replace(checked, metadata=dict(metadata) if metadata else None)


_NAMES = ("document_ids", "sources")


def _as_list(value: object) -> object:
    if isinstance(value, str):
        return [value]  # one id given bare, not a string to read letter by letter
    if isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        return list(value)
    return value


def _python_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def problem(exc: ValidationError, model: type[BaseModel], *, field_word: str = "field") -> str:
    """The first thing wrong with the value, as one sentence naming the field.

    An unknown field is named before anything else: a misspelt argument
    also leaves the real one missing, and the misspelling is the mistake.
    """
    errors = exc.errors(include_url=False)
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    return _sentence(error, model, field_word)


_TYPE_WORDS = {"string_type": "a string", "list_type": "a list", "dict_type": "an object"}
# The parts of an error's location that name a type of a union, not a field.
_TYPE_TAG = re.compile(r"^(?:str|int|float|bool|none)$|\[")


def _sentence(error: ErrorDetails, model: type[BaseModel], field_word: str) -> str:
    where = [str(part) for part in error["loc"] if not _TYPE_TAG.search(str(part))]
    name = ".".join(where)
    value, kind = error.get("input"), error["type"]
    if kind in ("missing", "extra_forbidden"):
        return _absent_or_unknown(kind, name, len(where), model, field_word)
    if kind in _TYPE_WORDS:
        return f"{name} must be {_TYPE_WORDS[kind]}, got {json_type(value)}"
    if kind == "string_too_short":
        return f"{name} must not be empty"
    if kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f"{name} is too long ({len(value)} characters, at most {limit})"
    if kind in ("bool_type", "float_type", "float_parsing"):
        wanted = "true or false" if kind == "bool_type" else "a number"
        return f"{name} must be {wanted}, got {json_type(value)} {value!r}"
    if kind.startswith("datetime"):
        return f"{name} is not an ISO 8601 timestamp: {value!r}"
    message = error["msg"].removeprefix("Value error, ")
    if kind == "value_error" and "integer is required" in message:
        return f"{name} must be a whole number, got {json_type(value)} {value!r}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        if len(where) == 1:
            return f"{name} must be {_range(model, where[0])}, got {value}"
    if message.startswith("must "):
        return f"{name} {message}"
    return f"{name}: {message}"


def _absent_or_unknown(
    kind: str, name: str, depth: int, model: type[BaseModel], field_word: str
) -> str:
    if kind == "missing":
        return f"missing required {field_word} {name!r}"
    if depth > 1:
        return f"unknown {field_word} {name!r}"
    accepted = ", ".join(model.model_fields) or "none"
    return f"unknown {field_word} {name!r} (accepted {field_word}s: {accepted})"


def _range(model: type[BaseModel], name: str) -> str:
    """The field's bounds in words: ``between 1 and 20``, ``more than 0 and at most 9``."""
    field = model.model_fields.get(name)
    bounds: dict[str, Any] = {}
    for rule in field.metadata if field is not None else ():
        for kind in ("ge", "gt", "le", "lt"):
            if getattr(rule, kind, None) is not None:
                bounds[kind] = getattr(rule, kind)
    if "ge" in bounds and "le" in bounds:
        return f"between {bounds['ge']} and {bounds['le']}"
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    return " and ".join(f"{words[kind]} {limit}" for kind, limit in bounds.items())
