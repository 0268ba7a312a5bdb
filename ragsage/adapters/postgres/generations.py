"""Embedding generations: which model and width a namespace's vectors come from.

A namespace has exactly one *active* generation serving queries, and during a
re-index one *building* generation being filled with another model's vectors.
Rows of every generation share the chunk table, told apart by ``generation``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.sessions import namespace_of, read_rows
from ragsage.core.errors import ConfigurationError
from ragsage.core.generations import EmbeddingModelMismatch, Generation
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database


_COLUMNS = "id, embedding_model, embedding_dim, state, embedder"


async def live_generations(session: AsyncSession) -> list[Generation]:
    """The namespace's active and building generations."""
    rows = await session.execute(
        text(
            f"SELECT {_COLUMNS} FROM ragsage_generations "
            "WHERE namespace = :namespace AND state IN ('active', 'building') ORDER BY id"
        ),
        {"namespace": namespace_of(session)},
    )
    return [Generation(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4])) for r in rows]


async def active_generation(session: AsyncSession) -> Generation | None:
    """The generation serving queries, or None for a namespace with no vectors yet."""
    return next((g for g in await live_generations(session) if g.state == "active"), None)


async def active_generation_of(database: Database, scope: Scope) -> Generation | None:
    """:func:`active_generation` in one message (read on every request)."""
    rows = await read_rows(
        database,
        scope,
        [
            (
                f"SELECT {_COLUMNS} FROM ragsage_generations "
                "WHERE namespace = %(namespace)s AND state = 'active'",
                {"namespace": scope.namespace},
            )
        ],
    )
    if not rows:
        return None
    r = rows[0]
    return Generation(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]))


async def write_generation(
    session: AsyncSession, scope: Scope, model: str, dim: int, embedder: str = "hashing"
) -> Generation:
    """The live generation ``model`` writes into, creating the first one if needed."""
    for attempt in range(2):
        live = await live_generations(session)
        for generation in live:
            if (generation.embedding_model, generation.embedding_dim) == (model, dim):
                return generation
        active = next((g for g in live if g.state == "active"), None)
        if active is not None:
            raise EmbeddingModelMismatch(scope.namespace, active, model, dim)
        # A concurrent first write may win the race; the unique index on the one
        # active generation turns that into "nothing inserted", and we re-read.
        inserted = await session.execute(
            text(
                "INSERT INTO ragsage_generations "
                "(namespace, id, embedding_model, embedding_dim, state, activated_at, embedder) "
                "SELECT :namespace, coalesce(max(id), 0) + 1, :model, :dim, 'active', now(), "
                ":embedder "
                "FROM ragsage_generations WHERE namespace = :namespace "
                "ON CONFLICT DO NOTHING RETURNING id"
            ),
            {"namespace": scope.namespace, "model": model, "dim": dim, "embedder": embedder},
        )
        new_id = inserted.scalar()
        if new_id is not None:
            return Generation(int(new_id), model, dim, "active", embedder)
        if attempt:
            break
    raise ConfigurationError(f"could not create an embedding generation for {scope.namespace!r}")
