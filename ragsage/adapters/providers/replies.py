"""Reading provider replies defensively: a wrong shape is an error, never a guess."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragsage.adapters.providers.resilience import malformed


def field_of(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, ``item.name`` for an SDK object, else ``None``."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def vectors_from_reply(
    data: Any, *, count: int, dimension: int, what: str
) -> list[tuple[float, ...]]:
    """The ``count`` vectors of an embeddings reply's ``data``, in input order."""
    if not isinstance(data, Sequence) or isinstance(data, str | bytes):
        raise malformed(what, "no list of embeddings in it")
    if len(data) != count:
        raise malformed(what, f"{len(data)} embeddings for {count} inputs")
    ordered: list[tuple[float, ...] | None] = [None] * count
    for position, item in enumerate(data):
        index = field_of(item, "index")
        if index is None:
            index = position  # some compatible servers omit it; order is then the contract
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise malformed(what, f"embedding index {index!r} is out of range")
        if ordered[index] is not None:
            raise malformed(what, f"embedding index {index} appears twice")
        ordered[index] = _vector(field_of(item, "embedding"), dimension, what)
    return [vector for vector in ordered if vector is not None]


def _vector(raw: Any, dimension: int, what: str) -> tuple[float, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise malformed(what, "an embedding is not a list of numbers")
    if len(raw) != dimension:
        raise malformed(
            what, f"an embedding has {len(raw)} dimensions where {dimension} were expected"
        )
    try:
        vector = tuple(float(value) for value in raw)
    except (TypeError, ValueError):
        raise malformed(what, "an embedding holds something other than numbers") from None
    if not all(math.isfinite(value) for value in vector):
        raise malformed(what, "an embedding holds NaN or infinity")
    return vector


def score_of(item: Any) -> float | None:
    """A finite relevance score from a rerank result, or ``None``."""
    raw = field_of(item, "relevance_score")
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    score = float(raw)
    return score if math.isfinite(score) else None
