"""HNSW graphs of their own for the largest namespaces: which ones, built and dropped.

One shared graph per width serves every namespace, and walking it for one
namespace means stepping over every other namespace's vectors: a namespace
holding a fifth of a million chunks found 0.64 of its exact ten that way, and
a mid-size one (12,000 chunks) is cheaper ranked row by row (24 ms) than
walked.  A namespace whose live generation holds at least ``graph_rows``
chunks of a width therefore gets an index of its own, partial on its
namespace and width, in half precision (half the memory, the same recall in
our measurements) and on an expression no shared graph is built on
(:mod:`~ragsage.adapters.postgres.graph_keys`), so a search that orders by it
can only walk this graph.  Searches find it through
``ragsage_graph_ready`` and walk it as soon as it is valid
(``sql/nearest.sql``, :func:`~ragsage.adapters.postgres.dense_statements.dense_statement`).

Building an index needs the owner, so this runs from ``ragsage graphs`` (an
operator's command, or a periodic job beside the workers) and never inside a
request.  Each build is ``CONCURRENTLY``: the namespace keeps ingesting and
searching the shared graph while its own is built.  A graph whose namespace
fell below half the threshold (or is gone) is dropped, so a namespace near the
threshold is not rebuilt back and forth.  One round runs at a time (a session
advisory lock); a second returns at once.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.graph_keys import OWN_KEY_FUNCTION, own_key
from ragsage.core.scopes import NAMESPACE_PATTERN

_log = logging.getLogger(__name__)
_GRAPH_NAME = re.compile(r"^ragsage_graph_[0-9]{1,4}_[0-9a-f]{20}$")
_NAMESPACE = re.compile(NAMESPACE_PATTERN)
_LOCK = "SELECT pg_try_advisory_lock(hashtext('ragsage_graphs'))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtext('ragsage_graphs'))"
_EXISTING = (
    "SELECT c.relname, i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid "
    "WHERE t.relname = 'ragsage_chunks' AND c.relname LIKE 'ragsage\\_graph\\_%'"
)
_CANDIDATES = (
    "SELECT namespace, embedding_dim, chunks, ragsage_graph_name(namespace, embedding_dim) "
    "FROM ragsage_graph_candidates(CAST(:rows AS bigint))"
)


@dataclass(frozen=True, slots=True)
class GraphChange:
    """What one round did to one graph."""

    name: str
    action: Literal["built", "dropped", "kept", "failed"]
    namespace: str | None = None  # None for a dropped graph: its name is a digest
    width: int | None = None
    chunks: int | None = None
    seconds: float = 0.0
    size_bytes: int = 0
    error: str = ""


@dataclass(slots=True)
class GraphRound:
    """Every graph a round built, dropped, kept or failed to build."""

    changes: list[GraphChange] = field(default_factory=list)

    def of(self, action: str) -> list[GraphChange]:
        return [change for change in self.changes if change.action == action]


def graph_statement(name: str, namespace: str, width: int, *, m: int, ef_construction: int) -> str:
    """The ``CREATE INDEX CONCURRENTLY`` of one namespace's graph of one width.

    The namespace is written as a literal, as a partial index's predicate must
    be; it is checked against the namespace pattern first, which admits no quote.
    """
    if _GRAPH_NAME.fullmatch(name) is None:
        raise ValueError(f"not a graph's name: {name!r}")
    if _NAMESPACE.fullmatch(namespace) is None:
        raise ValueError(f"not a namespace: {namespace!r}")
    if not 1 <= width <= 4000:
        raise ValueError(f"vector width out of range: {width}")
    return (
        f"CREATE INDEX CONCURRENTLY {name} ON ragsage_chunks "
        f"USING hnsw (({own_key(width)}) halfvec_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) "
        f"WHERE embedding_dim = {int(width)} AND namespace = '{namespace}'"
    )


async def maintain_graphs(database: Database) -> GraphRound | None:
    """Build the graphs large namespaces lack and drop those no longer wanted.

    None when another round holds the lock.  A build that fails (a full disk,
    a cancelled statement) is reported and left invalid; the next round drops
    and builds it again, and meanwhile the namespace walks the shared graph.
    """
    config = database.config
    done = GraphRound()
    async with database.owner_autocommit() as connection:
        if not await connection.scalar(text(_LOCK)):
            return None
        try:
            await connection.execute(
                text(f"SET maintenance_work_mem = '{config.graph_build_memory}'")
            )
            # A graph built on another key or with other parameters than the
            # configured ones counts as a failed build: it is built again.
            built_as = (
                f"WITH (m='{config.graph_m}', ef_construction='{config.graph_ef_construction}')"
            )
            existing = {
                str(name): bool(valid) and f"{OWN_KEY_FUNCTION}(" in d and built_as in d
                for name, valid, d in await connection.execute(text(_EXISTING))
            }
            wanted = []
            if config.graph_rows > 0:
                keep_from = max(1, config.graph_rows // 2)
                found = await connection.execute(text(_CANDIDATES), {"rows": keep_from})
                wanted = [(str(n), int(w), int(c), str(name)) for n, w, c, name in found]
            keep = {name for *_, name in wanted}
            for name in sorted(set(existing) - keep):
                await _drop(connection, name)
                done.changes.append(GraphChange(name, "dropped"))
            for namespace, width, chunks, name in wanted:
                if existing.get(name):
                    done.changes.append(GraphChange(name, "kept", namespace, width, chunks))
                elif chunks >= config.graph_rows:
                    if name in existing:
                        await _drop(connection, name)  # a build that failed: start again
                    done.changes.append(
                        await _build(connection, database, name, namespace, width, chunks)
                    )
        finally:
            await connection.execute(text(_UNLOCK))
    return done


async def _drop(connection: AsyncConnection, name: str) -> None:
    if _GRAPH_NAME.fullmatch(name) is None:
        raise ValueError(f"not a graph's name: {name!r}")
    _log.info("dropping the graph %s", name)
    await connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))


async def _build(
    connection: AsyncConnection,
    database: Database,
    name: str,
    namespace: str,
    width: int,
    chunks: int,
) -> GraphChange:
    config = database.config
    statement = graph_statement(
        name, namespace, width, m=config.graph_m, ef_construction=config.graph_ef_construction
    )
    _log.info(
        "building a graph of its own for %s (%d chunks of width %d)", namespace, chunks, width
    )
    started = time.perf_counter()
    try:
        await connection.execute(text(statement))
    except DBAPIError as exc:
        # The build's own error (a full disk, a cancel) names no secret; it is
        # reported, not raised, so the other namespaces still get theirs.
        reason = str(exc.orig).splitlines()[0] if exc.orig is not None else type(exc).__name__
        _log.warning("building the graph %s failed: %s", name, reason)
        return GraphChange(name, "failed", namespace, width, chunks, error=reason)
    took = time.perf_counter() - started
    size = await connection.scalar(
        text("SELECT pg_relation_size(to_regclass(:name))"), {"name": name}
    )
    return GraphChange(name, "built", namespace, width, chunks, took, int(size or 0))
