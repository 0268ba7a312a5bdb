"""Dense vectors in Postgres: whole-document replacement on write, HNSW search on read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pgvector import Vector
from pgvector.psycopg import register_vector_async
from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.errors import InvalidRequest
from ragsage.storage.generations import (
    EmbeddingModelMismatch,
    Generation,
    live_generations,
    read_generation,
    write_generation,
)
from ragsage.storage.isolation import EF_SEARCH_KEY
from ragsage.storage.rows import CHUNK_COLUMN_COUNT, CHUNK_COLUMNS, chunk_from_row, filter_sql
from ragsage.storage.sessions import scoped
from ragsage.types import EmbeddedChunk, Scope, ScoredChunk, SearchFilters

if TYPE_CHECKING:
    from ragsage.storage.database import Database

_COLUMNS = (
    "namespace, generation, document_id, ordinal, text, embed_text, heading_path, headings, "
    "page_numbers, metadata, source, created_at, embedding_model, embedding_dim, embedding, "
    "start_char, end_char"
)
# COPY cannot write into a table under Row-Level Security, so rows are copied into
# a temporary staging table and moved with one INSERT ... SELECT, which the
# policy checks row by row.  The staging table lives per connection and empties
# itself at every commit.
_STAGING = """CREATE TEMP TABLE IF NOT EXISTS ragsage_chunk_staging (
    namespace text, generation integer, document_id text, ordinal integer, text text,
    embed_text text, heading_path text[], headings text, page_numbers integer[],
    metadata jsonb, source text, created_at timestamptz, embedding_model text,
    embedding_dim integer, embedding vector, start_char integer, end_char integer
) ON COMMIT DELETE ROWS"""
_COPY = f"COPY ragsage_chunk_staging ({_COLUMNS}) FROM STDIN (FORMAT BINARY)"
# Binary COPY skips formatting each float as text, which costs ~40x more per row.
_COPY_TYPES = (
    "text",
    "int4",
    "text",
    "int4",
    "text",
    "text",
    "text[]",
    "text",
    "int4[]",
    "jsonb",
    "text",
    "timestamptz",
    "text",
    "int4",
    "vector",
    "int4",
    "int4",
)
_MOVE = f"INSERT INTO ragsage_chunks ({_COLUMNS}) SELECT {_COLUMNS} FROM ragsage_chunk_staging"


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form; ``repr`` keeps every float exactly."""
    return "[" + ",".join(repr(float(value)) for value in vector) + "]"


class PgVectorStore:
    """The VectorStore port over ``ragsage_chunks``; it writes every column of a chunk row.

    Every row records the embedding model and generation it belongs to, so a
    namespace can never silently mix models: a write or search with another
    model than the namespace's active one raises
    :class:`~ragsage.storage.generations.EmbeddingModelMismatch`.

    ``generation`` makes :meth:`search` read that live generation instead of the
    active one, so a re-index can be evaluated before it switches; writes are
    unaffected.
    """

    def __init__(
        self,
        target: Database | AsyncSession,
        *,
        embedding_model: str,
        embedding_dim: int,
        ef_search: int | None = None,
        embedder_kind: str = "hashing",
        generation: int | None = None,
    ) -> None:
        if not 1 <= embedding_dim <= 2000:
            raise ValueError(f"embedding_dim must be between 1 and 2000, got {embedding_dim}")
        self._target = target
        self.embedding_model, self.embedding_dim = embedding_model, embedding_dim
        self.ef_search = ef_search
        self.embedder_kind = embedder_kind
        self.generation = generation

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None:
        """Replace every chunk of the documents in ``records`` with ``records``.

        Delete-by-document, then insert: a re-chunk into fewer pieces must not
        leave the old tail searchable.  All of one document's chunks must come in
        one call.  Rows are written with COPY, not one INSERT each.
        """
        if not records:
            return
        for record in records:
            self._check_vector(record.vector)
        async with scoped(self._target, scope) as session:
            generation = await write_generation(
                session, scope, self.embedding_model, self.embedding_dim, self.embedder_kind
            )
            documents = sorted({record.chunk.document_id for record in records})
            await session.execute(
                text(
                    "DELETE FROM ragsage_chunks WHERE generation = :generation "
                    "AND document_id = ANY(:documents)"
                ),
                {"generation": generation.id, "documents": documents},
            )
            await session.execute(text(_STAGING))
            connection = await session.connection()
            raw = await connection.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None
            if driver.adapters.types.get("vector") is None:
                await register_vector_async(driver)
            async with driver.cursor() as cursor, cursor.copy(_COPY) as copy:
                copy.set_types(list(_COPY_TYPES))
                for record in records:
                    chunk = record.chunk
                    await copy.write_row(
                        (
                            scope.namespace,
                            generation.id,
                            chunk.document_id,
                            chunk.ordinal,
                            chunk.text,
                            chunk.embed_text,
                            list(chunk.heading_path),
                            " ".join(chunk.heading_path),
                            list(chunk.page_numbers),
                            Jsonb(dict(chunk.metadata)),
                            chunk.source,
                            chunk.created_at,
                            self.embedding_model,
                            self.embedding_dim,
                            Vector(list(record.vector)),
                            chunk.start_char,
                            chunk.end_char,
                        )
                    )
            await session.execute(text(_MOVE))
            # Emptied now, not only at commit: a second upsert in the same
            # transaction must not move these rows again.
            await session.execute(text("TRUNCATE ragsage_chunk_staging"))

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]:
        """Nearest chunks by cosine distance, scored as cosine similarity."""
        self._check_vector(query_vector)
        if k < 1:
            return []
        dim = self.embedding_dim
        where, params = filter_sql(filters)
        async with scoped(self._target, scope) as session:
            generation = await self._searched_generation(session, scope)
            if generation is None:
                return []
            # ef_search bounds how many neighbours one graph walk returns, so it
            # must be at least k; the session starts at the configured value.
            current = int(session.info.get(EF_SEARCH_KEY, 40))
            wanted = max(self.ef_search or current, k)
            if wanted != current:
                await session.execute(
                    text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(wanted)}
                )
                session.info[EF_SEARCH_KEY] = wanted
            distance = f"c.embedding::vector({dim}) <=> CAST(:query AS vector({dim}))"
            rows = await session.execute(
                text(
                    f"SELECT {CHUNK_COLUMNS}, 1 - ({distance}) AS similarity "
                    "FROM ragsage_chunks c "
                    f"WHERE c.generation = :generation AND c.embedding_dim = {dim}{where} "
                    f"ORDER BY {distance} LIMIT :k"
                ),
                {
                    "query": vector_literal(query_vector),
                    "generation": generation.id,
                    "k": k,
                    **params,
                },
            )
            found = [
                ScoredChunk(
                    chunk=chunk_from_row(row),
                    score=float(row[CHUNK_COLUMN_COUNT]),
                    vector_score=float(row[CHUNK_COLUMN_COUNT]),
                )
                for row in rows
            ]
        # relaxed_order may return neighbours slightly out of order; restore it.
        found.sort(key=lambda c: (-c.score, c.chunk.id))
        return found

    async def delete(self, scope: Scope, document_id: str) -> None:
        """Remove the document's chunks from every generation."""
        async with scoped(self._target, scope) as session:
            await session.execute(
                text("DELETE FROM ragsage_chunks WHERE document_id = :document_id"),
                {"document_id": document_id},
            )

    async def _searched_generation(self, session: AsyncSession, scope: Scope) -> Generation | None:
        if self.generation is None:
            return await read_generation(session, scope, self.embedding_model, self.embedding_dim)
        chosen = next((g for g in await live_generations(session) if g.id == self.generation), None)
        if chosen is None:
            raise InvalidRequest(
                f"namespace {scope.namespace!r} has no active or building generation "
                f"{self.generation}"
            )
        if (chosen.embedding_model, chosen.embedding_dim) != (
            self.embedding_model,
            self.embedding_dim,
        ):
            raise EmbeddingModelMismatch(
                scope.namespace, chosen, self.embedding_model, self.embedding_dim
            )
        return chosen

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self.embedding_dim:
            raise InvalidRequest(
                f"vector has {len(vector)} dimensions; this store holds {self.embedding_dim}"
            )
        # One C-level sum settles the common case: it is finite only if every value
        # is (or huge values overflowed it, which the exact check then clears).
        if not math.isfinite(sum(vector)) and not all(math.isfinite(v) for v in vector):
            raise InvalidRequest("vector contains NaN or infinite values")
