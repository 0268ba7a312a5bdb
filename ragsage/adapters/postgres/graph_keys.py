"""The expressions the HNSW graphs are built on; a walk orders by the same one to use a graph.

Postgres uses an expression index only for a query that writes the very same
expression, so these are written in one place for the builders (the width's
shared graph in :mod:`~ragsage.adapters.postgres.migrations`, a namespace's own
in :mod:`~ragsage.adapters.postgres.graphs`) and the walks
(:mod:`~ragsage.adapters.postgres.dense_statements`; ``sql/nearest.sql`` writes
them out and says so).

The two keys differ on purpose.  A namespace's own graph is partial on its
namespace, so a walk of that namespace could use either graph, and the planner
has kept the shared one for the largest namespace.  The own graph's key
normalises the vector first: cosine distance does not change when a vector is
scaled, so the order is the same, but the expression is one no shared graph is
built on, and a walk that orders by it can only walk the namespace's graph.
"""

from __future__ import annotations

from ragsage.adapters.postgres.config import HNSW_TYPES


def _checked(hnsw_type: str) -> str:
    if hnsw_type not in HNSW_TYPES:
        raise ValueError(f"not a graph type: {hnsw_type!r}")
    return hnsw_type


def shared_key(dim: int, hnsw_type: str, column: str = "embedding") -> str:
    """The expression a width's shared graph is built on (``vector`` or ``halfvec``)."""
    return f"{column}::{_checked(hnsw_type)}({int(dim)})"


def shared_opclass(hnsw_type: str) -> str:
    return f"{_checked(hnsw_type)}_cosine_ops"


# The function an own graph's key applies, which tells such a graph's definition.
OWN_KEY_FUNCTION = "l2_normalize"


def own_key(dim: int, column: str = "embedding") -> str:
    """The expression a namespace's own graph is built on: normalised, half precision."""
    return f"{OWN_KEY_FUNCTION}({column}::halfvec({int(dim)}))::halfvec({int(dim)})"


def walk_limit(k: str, key_type: str) -> str:
    """How many rows a walk in ``key_type`` takes to return the nearest ``k`` (SQL).

    A half-precision key can swap neighbours at the edge of the top ``k``, so
    such a walk takes twice as many (at most 40 more) and the caller keeps the
    nearest ``k`` by full-precision similarity.
    """
    return k if _checked(key_type) == "vector" else f"least({k} * 2, {k} + 40)"
