"""Search arguments as a caller writes them, turned into the engine's types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ragsage.core.errors import InvalidRequest
from ragsage.core.types import SearchFilters

_KEYS = ("document_ids", "sources", "metadata", "created_after", "created_before")


def search_filters(value: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
    """``SearchFilters`` from itself, None, or a mapping with any of its field names."""
    if value is None or isinstance(value, SearchFilters):
        return value
    if not isinstance(value, Mapping):
        raise InvalidRequest(
            f"filters must be a mapping or SearchFilters, got {type(value).__name__}"
        )
    unknown = sorted(str(key) for key in value if key not in _KEYS)
    if unknown:
        raise InvalidRequest(f"unknown filter(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidRequest(f"filter metadata must be a mapping, got {type(metadata).__name__}")
    return SearchFilters(
        document_ids=_names(value.get("document_ids"), "document_ids"),
        sources=_names(value.get("sources"), "sources"),
        metadata=dict(metadata) if metadata else None,
        created_after=_time(value.get("created_after"), "created_after"),
        created_before=_time(value.get("created_before"), "created_before"),
    )


def _names(value: object, name: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset({value})  # one id given bare, not a string of letters
    items = list(value) if isinstance(value, Iterable) else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise InvalidRequest(f"filter {name} must be a list of strings")
    return frozenset(items)


def _time(value: object, name: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    raise InvalidRequest(f"filter {name} must be a datetime, got {type(value).__name__}")
