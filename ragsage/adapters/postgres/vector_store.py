"""Dense vectors in Postgres: whole-document replacement on write, HNSW search on read.

The port's face only: the write path (staging, COPY, the move) is in
:mod:`~ragsage.adapters.postgres.chunk_writes` and the ranking in
:mod:`~ragsage.adapters.postgres.dense_search`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.chunk_writes import clear_documents, copy_chunks, copy_vectors
from ragsage.adapters.postgres.dense_search import DenseSearch
from ragsage.adapters.postgres.dense_statements import KEY_COLUMNS, DensePaths
from ragsage.adapters.postgres.isolation import to_driver_style
from ragsage.adapters.postgres.rows import (
    CHUNK_COLUMNS,
    NAMESPACE_ACTIVE_GENERATION,
    chunk_from_row,
)
from ragsage.adapters.postgres.sessions import read_rows, scoped
from ragsage.core.chunks import Chunk, EmbeddedChunk, Ranked, ScoredChunk, chunk_id, split_chunk_id
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.generations import Generation
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database


class PgVectorStore:
    """The VectorStore port over ``ragsage_chunks``; it writes every column of a chunk row.

    Every row records the embedding model and generation it belongs to, so a
    namespace can never silently mix models: a write or search with another
    model than the namespace's active one raises
    :class:`~ragsage.adapters.postgres.generations.EmbeddingModelMismatch`.

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
        paths: DensePaths | None = None,
        chunking: str | None = None,
    ) -> None:
        if not 1 <= embedding_dim <= 2000:
            raise ValueError(f"embedding_dim must be between 1 and 2000, got {embedding_dim}")
        self._target = target
        self.embedding_model, self.embedding_dim = embedding_model, embedding_dim
        self.ef_search = ef_search
        self.embedder_kind = embedder_kind
        self.generation = generation
        self.paths = paths if paths is not None else DensePaths()
        # Recorded with every row written (see copy_with_vectors); None: never reused.
        self.chunking = chunking

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
            documents = sorted({record.chunk.document_id for record in records})
            generation = await self._clear_documents(session, scope, documents)
            await copy_chunks(
                session,
                scope,
                generation,
                records,
                embedding_model=self.embedding_model,
                embedding_dim=self.embedding_dim,
                chunking=self.chunking,
            )
        if not isinstance(self._target, AsyncSession):
            # Committed by now; a caller's own session is its to commit (and refresh).
            await self._target.refresh_statistics()

    async def copy_with_vectors(
        self,
        scope: Scope,
        document_id: str,
        source_generation: int,
        vectors: Sequence[tuple[int, tuple[float, ...]]],
    ) -> int:
        """Write a document's rows of ``source_generation`` again with new vectors.

        A re-index whose chunking is unchanged (storage migration 26) sends
        only each chunk's ordinal and vector; text, headings, spans and the
        keyword column are copied inside the database, not rebuilt.  Returns
        the rows written, which the caller compares with what it sent.
        """
        for _, vector in vectors:
            self._check_vector(vector)
        async with scoped(self._target, scope) as session:
            generation = await self._clear_documents(session, scope, [document_id])
            moved = await copy_vectors(
                session,
                scope,
                generation,
                document_id,
                source_generation,
                vectors,
                embedding_model=self.embedding_model,
                embedding_dim=self.embedding_dim,
            )
        if not isinstance(self._target, AsyncSession):
            await self._target.refresh_statistics()
        return moved

    async def _clear_documents(
        self, session: AsyncSession, scope: Scope, documents: Sequence[str]
    ) -> Generation:
        """The generation written into, with the documents' rows in it deleted."""
        return await clear_documents(
            session,
            scope,
            documents,
            embedding_model=self.embedding_model,
            embedding_dim=self.embedding_dim,
            embedder_kind=self.embedder_kind,
        )

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]:
        """Nearest chunks by cosine distance, scored as cosine similarity.

        One statement reads the searched generation, walks the HNSW index and,
        only when the walk came back short, ranks the namespace's rows exactly
        (see :mod:`~ragsage.adapters.postgres.dense_search`): a small namespace
        beside a big one gets ``k`` chunks whenever it has them.
        """
        ranked = await self.rank_vectors(scope, query_vector, k=k, filters=filters, rows=k)
        return [
            ScoredChunk(chunk=r.chunk, score=r.score, vector_score=r.score)
            for r in ranked
            if r.chunk is not None  # always so: every row carries its chunk
        ]

    async def rank_vectors(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
        rows: int = 0,
    ) -> Sequence[Ranked]:
        """:meth:`search`'s ranking by chunk id; the first ``rows`` carry their chunk."""
        self._check_vector(query_vector)
        found = await self._dense().nearest(scope, query_vector, k, filters, max(0, rows))
        ranked = [
            Ranked(
                chunk_id(str(row[0]), int(row[1])),
                float(row[2]),
                chunk_from_row(row[3:]) if row[3] is not None else None,
            )
            for row in found
        ]
        ranked.sort(key=lambda r: (-r.score, r.chunk_id))
        return ranked

    async def fetch_chunks(self, scope: Scope, chunk_ids: Sequence[str]) -> Sequence[Chunk]:
        """The searched generation's chunks among ``chunk_ids``, in the order asked."""
        rows = await self._rows_by_id(scope, chunk_ids, CHUNK_COLUMNS)
        found = {chunk.id: chunk for chunk in map(chunk_from_row, rows)}
        return [found[value] for value in chunk_ids if value in found]

    async def vectors(self, scope: Scope, chunk_ids: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The stored vectors of the searched generation's chunks among ``chunk_ids``."""
        columns = f"{KEY_COLUMNS}, CAST(c.embedding AS real[])"
        rows = await self._rows_by_id(scope, chunk_ids, columns)
        return {chunk_id(str(d), int(o)): tuple(map(float, v)) for d, o, v in rows if v}

    async def _rows_by_id(
        self, scope: Scope, chunk_ids: Sequence[str], columns: str
    ) -> list[tuple[Any, ...]]:
        """``columns`` of the searched generation's rows among ``chunk_ids`` (any order)."""
        wanted = [key for key in map(split_chunk_id, chunk_ids) if key is not None]
        if not wanted:
            return []
        searched = (
            NAMESPACE_ACTIVE_GENERATION
            if self.generation is None
            else "CAST(:generation AS integer)"
        )
        sql = (
            f"SELECT {columns} FROM unnest(CAST(:documents AS text[]), "
            "CAST(:ordinals AS integer[])) AS w(document_id, ordinal) "
            "JOIN ragsage_chunks c ON c.namespace = :namespace "
            "AND c.document_id = w.document_id AND c.ordinal = w.ordinal "
            f"AND c.generation = {searched}"
        )
        params = {
            "namespace": scope.namespace,
            "documents": [document for document, _ in wanted],
            "ordinals": [ordinal for _, ordinal in wanted],
            "generation": self.generation,
        }
        return await read_rows(self._target, scope, [(to_driver_style(sql), params)])

    def _dense(self) -> DenseSearch:
        # Built for each search, so a setting changed on the store holds from the next.
        return DenseSearch(
            target=self._target,
            embedding_model=self.embedding_model,
            embedding_dim=self.embedding_dim,
            generation=self.generation,
            ef_search=self.ef_search,
            paths=self.paths,
        )

    async def delete(self, scope: Scope, document_id: str) -> None:
        """Remove the document's chunks from every generation."""
        async with scoped(self._target, scope) as session:
            await session.execute(
                text(
                    "DELETE FROM ragsage_chunks "
                    "WHERE namespace = :namespace AND document_id = :document_id"
                ),
                {"namespace": scope.namespace, "document_id": document_id},
            )

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self.embedding_dim:
            raise InvalidRequest(
                f"vector has {len(vector)} dimensions; this store holds {self.embedding_dim}"
            )
        # One C-level sum settles the common case: it is finite only if every value
        # is (or huge values overflowed it, which the exact check then clears).
        if not math.isfinite(sum(vector)) and not all(math.isfinite(v) for v in vector):
            raise InvalidRequest("vector contains NaN or infinite values")
