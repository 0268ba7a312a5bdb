"""The dense search statement and the per-namespace memory of which path it took.

A namespace is ranked either by walking the HNSW graph or exactly, by every
distance; which is cheaper depends on its size and its share of the table.
:func:`dense_statement` writes the SQL for either (or for deciding), and
:class:`DensePaths` remembers each namespace's decision for a while.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from ragsage.adapters.postgres.graph_keys import own_key, shared_key, walk_limit
from ragsage.adapters.postgres.rows import CHUNK_COLUMNS, filter_sql
from ragsage.core.filters import SearchFilters

# Below this many rows of a generation, a namespace is ranked exactly: at most
# this many distances cost about what one graph walk does.
EXACT_BELOW = 1000
# Up to this many rows, a namespace that is a small share of the table is
# ranked exactly too: the walk must step over every other namespace's rows it
# meets, about k / share of them, and one step of the walk costs about as much
# as SHARE_FACTOR / k exact distances.  So rows * rows < SHARE_FACTOR * table
# rows says the exact ranking is the cheaper.  (1,859 chunks beside 8,000: the
# walk read 178 rows to keep 40, and at an evaluation's depth of 400 it was
# four times slower than ranking the 1,859 exactly; a namespace holding most of
# the table walks.)  The factor is a rule of thumb from that one case.
EXACT_CAP = 20_000
SHARE_FACTOR = 400
# The chunk columns a ranking by id reads.
KEY_COLUMNS = "c.document_id, c.ordinal"


def with_nearest_rows(sql: str) -> str:
    """``sql`` (a key-only :func:`dense_statement`) with the nearest ``:carried`` rows' chunks.

    Each of ``exact``'s two sets is numbered by similarity and cut at ``:k``
    (a walk in half precision takes more rows, graph_keys.walk_limit); the
    caller keeps one set, so its first rows are the nearest either way.
    """
    return (
        f"WITH ranked AS ({sql}) SELECT r.id, r.embedding_model, r.embedding_dim, r.path, "
        "r.exact, "
        f"r.document_id, r.ordinal, r.similarity, {CHUNK_COLUMNS} FROM (SELECT *, "
        "row_number() OVER (PARTITION BY exact ORDER BY similarity DESC, document_id, "
        "ordinal) AS place FROM ranked) r LEFT JOIN ragsage_chunks c "
        "ON r.place <= :carried AND c.namespace = :namespace AND c.generation = r.id "
        "AND c.document_id = r.document_id AND c.ordinal = r.ordinal "
        "WHERE r.place <= :k"
    )


_PathKey = tuple[str, int | None, frozenset[str] | None]
# How a dense statement finds its rows: ``choose`` decides from the namespace's
# size and graphs (and reports the choice), ``walk`` walks the shared HNSW graph
# and ranks exactly only when the walk came back short, ``own`` does the same
# on the namespace's own graph (:mod:`ragsage.adapters.postgres.graphs`; the
# shared one while it has none), ``exact`` ranks exactly.
DensePath = Literal["choose", "walk", "own", "exact"]
# The walks a ``choose`` statement reports it took (its ``path`` column).
_CHOSEN = "CASE WHEN (SELECT yes FROM own) THEN 'own' WHEN {small} THEN 'exact' ELSE 'walk' END"


def dense_statement(
    dim: int,
    filters: SearchFilters | None,
    *,
    namespace: str,
    generation: int | None = None,
    columns: str = CHUNK_COLUMNS,
    path: DensePath = "choose",
    hnsw_type: str = "vector",
) -> tuple[str, dict[str, Any]]:
    """The one statement of a dense search, and the parameters its filters bind.

    Its rows are ``(generation id, model, width, path, exact, chunk
    columns..., similarity)``: the searched generation comes back on every row
    (a single row with null chunk columns when it holds nothing), so no second
    round trip reads it, and ``path`` says which :data:`DensePath` was taken.

    ``near`` walks the width's HNSW index; ``hnsw.iterative_scan`` lets the walk
    go on past ``ef_search`` while filters or other namespaces' rows reject what
    it meets, up to ``hnsw.max_scan_tuples``.  A namespace that is a sliver of a
    big table can exhaust that budget before it meets ``k`` of its rows, and a
    namespace with fewer than ``k`` rows always would.  So ``exact`` ranks the
    generation's rows by computing every distance, through the primary key,
    when the namespace is *small* — it holds fewer than :data:`EXACT_BELOW`
    rows, or is so small a share of the table that the walk would step over
    more rows than it has (see :data:`SHARE_FACTOR`; the count the writers
    keep with the keyword term counts of migration 29, below :data:`EXACT_CAP`,
    against the table's row estimate) — or when the walk came back short.
    Those conditions hold no column, so Postgres evaluates them once and skips
    the scan they guard: a big namespace never starts the exact scan, a small
    one never walks the graph.  The exact branch orders by the uncast column,
    which no HNSW index matches.

    A namespace with a graph of its own walks it (``own``, chosen before any
    size rule): the graph's index is partial on the namespace, which the
    planner proves from the bound ``:namespace`` (statements are planned with
    their values), and ordered by the key it is built on
    (:mod:`~ragsage.adapters.postgres.graph_keys`).

    Deciding "small" costs more than the walk it guards (planning the count
    and share: about 0.7 of a 2 ms search on 8,000 chunks), so only the
    ``choose`` path decides it, and says what it decided in ``path``; a
    caller that remembers the answer sends ``walk`` or ``exact``, which skip
    the decision and stay correct whatever the namespace has become since
    (``walk`` still falls back to the exact ranking when it comes back short).

    Every table is read with its namespace (``:namespace``, bound here, as
    well as by Row-Level Security), so a distributed planner can route the
    statement.  ``generation`` names a live generation to search instead of
    the active one (bound as ``:generation``); the query vector is ``:query``
    and the count ``:k``.
    ``columns`` are the chunk columns returned (by default every one a
    :class:`Chunk` needs; a ranking by id asks for the key alone).
    ``hnsw_type`` is what the width's shared graph is built on (the walk
    orders by that key; similarities are computed in full precision).
    """
    where, params = filter_sql(filters)
    params["namespace"] = namespace
    if generation is None:
        chosen = "g.state = 'active'"
    else:
        chosen = "g.id = CAST(:generation AS integer) AND g.state IN ('active', 'building')"
    cast = f"CAST(:query AS vector({dim}))"
    exact_distance = f"c.embedding::vector({dim}) <=> {cast}"
    distance = f"{shared_key(dim, hnsw_type, 'c.embedding')} <=> CAST(:query AS {hnsw_type}({dim}))"
    rows = (
        "FROM ragsage_chunks c WHERE c.namespace = :namespace "
        f"AND c.generation = (SELECT id FROM g) AND c.embedding_dim = {dim}{where}"
    )
    deciding = ""
    small = {"walk": "false", "own": "false", "exact": "true"}.get(path, "(SELECT yes FROM small)")
    if path == "choose":
        deciding = (
            "n AS MATERIALIZED (SELECT ragsage_generation_chunks((SELECT id FROM g))::float8 "
            "AS rows), "
            f"small AS MATERIALIZED (SELECT NOT (SELECT yes FROM own) AND (n.rows < {EXACT_BELOW} "
            f"OR (n.rows < {EXACT_CAP} AND n.rows * n.rows < {SHARE_FACTOR} * (SELECT "
            "t.reltuples FROM pg_class t WHERE t.oid = 'ragsage_chunks'::regclass))) AS yes "
            "FROM n), "
        )
    if path in ("choose", "own"):
        deciding = (
            f"own AS MATERIALIZED (SELECT ragsage_graph_ready(:namespace, {dim}) AS yes), "
            + deciding
        )
        walks = "NOT (SELECT yes FROM own)"
        own_distance = f"{own_key(dim, 'c.embedding')} <=> CAST(:query AS halfvec({dim}))"
        walked = (
            f"shared AS (SELECT {columns}, 1 - ({exact_distance}) AS similarity {rows} "
            f"AND NOT {small} AND {walks} ORDER BY {distance} "
            f"LIMIT {walk_limit(':k', hnsw_type)}), "
            f"mine AS (SELECT {columns}, 1 - ({exact_distance}) AS similarity {rows} "
            f"AND (SELECT yes FROM own) ORDER BY {own_distance} "
            f"LIMIT {walk_limit(':k', 'halfvec')}), "
            "near AS (SELECT * FROM shared UNION ALL SELECT * FROM mine), "
        )
        reported = _CHOSEN.format(small=small) if path == "choose" else "'own'"
    else:
        walked = (
            f"near AS (SELECT {columns}, 1 - ({exact_distance}) AS similarity {rows} "
            f"AND NOT {small} ORDER BY {distance} LIMIT {walk_limit(':k', hnsw_type)}), "
        )
        reported = f"'{path}'"
    sql = (
        "WITH g AS MATERIALIZED (SELECT g.id, g.embedding_model, g.embedding_dim "
        f"FROM ragsage_generations g WHERE g.namespace = :namespace AND {chosen}), {deciding}"
        f"{walked}"
        f"exact AS (SELECT {columns}, 1 - (c.embedding <=> {cast}) AS similarity {rows} "
        f"AND ({small} OR (SELECT count(*) FROM near) < :k) "
        f"ORDER BY c.embedding <=> {cast} LIMIT :k) "
        f"SELECT g.id, g.embedding_model, g.embedding_dim, {reported} AS path, r.* FROM g "
        "LEFT JOIN (SELECT false AS exact, * FROM near UNION ALL SELECT true, * FROM exact) r "
        "ON true"
    )
    return sql, params


class DensePaths:
    """What the last ``choose`` statement decided for each namespace, for a while.

    One per process (the runtime shares it between the stores it builds), so
    most searches send the lean ``walk`` or ``exact`` statement.  A choice
    expires after ``seconds``; a stale one is never wrong, only slower, since
    ``walk`` falls back to the exact ranking and ``exact`` ranks every row.
    At most ``limit`` namespaces are remembered (the oldest go first).

    ``unplanned`` holds the widths found to have no search function of their
    own (:mod:`ragsage.adapters.postgres.dense_function`; a database not yet migrated
    by this version): those are searched by the statement alone.
    """

    def __init__(
        self,
        seconds: float = 60.0,
        limit: int = 10_000,
        *,
        graph_ef_search: int | None = None,
        hnsw_type: str = "vector",
    ) -> None:
        self.seconds, self.limit = seconds, limit
        # What the shared graphs are built on (PostgresConfig.hnsw_type): the
        # statement's walk must order by the same key.
        self.hnsw_type = hnsw_type
        # The candidate list a walk of a namespace's own graph keeps; None: as
        # any walk.  Those graphs hold the largest namespaces, where the shared
        # setting finds too few of the exact ten (see docs/scaling.md).
        self.graph_ef_search = graph_ef_search
        self._chosen: dict[_PathKey, tuple[DensePath, float]] = {}
        self.unplanned: set[int] = set()

    def path(
        self, namespace: str, generation: int | None, principals: frozenset[str] | None = None
    ) -> DensePath:
        """The remembered path, or ``choose``.  With ``principals``: a bound session's
        (``exact`` ranks its readable chunks, ``walk`` searches as any session does)."""
        remembered = self._chosen.get((namespace, generation, principals))
        if remembered is None or remembered[1] < time.monotonic():
            return "choose"
        return remembered[0]

    def remember(
        self,
        namespace: str,
        generation: int | None,
        path: DensePath,
        principals: frozenset[str] | None = None,
    ) -> None:
        if path == "choose":
            raise ValueError("a remembered path is one a statement took, never 'choose'")
        key = (namespace, generation, principals)
        self._chosen.pop(key, None)
        if len(self._chosen) >= self.limit:
            del self._chosen[next(iter(self._chosen))]
        self._chosen[key] = (path, time.monotonic() + self.seconds)


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form; ``repr`` keeps every float exactly."""
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"
