"""Documents and their chunks in reading order, for dedup, listing and neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.isolation import to_driver_style
from ragsage.adapters.postgres.migrations import STATISTICS_TABLES
from ragsage.adapters.postgres.replicas import replicas_must_replay
from ragsage.adapters.postgres.rows import (
    CHUNK_COLUMNS,
    NAMESPACE_ACTIVE_GENERATION,
    chunk_from_row,
)
from ragsage.adapters.postgres.sessions import read_rows, scoped
from ragsage.core.chunks import Chunk, split_chunk_id
from ragsage.core.documents import Document
from ragsage.core.geometry import PagePositions
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

_DOCUMENT_COLUMNS = "id, content_hash, title, source, metadata, created_at"


def _document(row: Sequence[Any]) -> Document:
    return Document(
        id=row[0],
        content_hash=row[1],
        title=row[2],
        source=row[3],
        metadata=dict(row[4] or {}),
        created_at=row[5],
    )


class PgDocumentStore:
    """The DocumentStore port over ``ragsage_documents`` and the active chunk generation.

    The port sees only documents whose current version is ingested (``ready``);
    uploads still queued or failed are the job bookkeeping's business.
    """

    def __init__(self, target: Database | AsyncSession) -> None:
        self._target = target

    async def save(self, scope: Scope, document: Document, chunks: Sequence[Chunk]) -> None:
        """Insert or replace the document row; its chunks are written by the vector store.

        A new document's access list is the writer's principals (open, for a
        session bound to none); a stored one keeps its list.
        """
        async with scoped(self._target, scope) as session:
            await session.execute(
                text(
                    "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source, "
                    "metadata, created_at, external_id, filename, status, access) "
                    "VALUES (:namespace, :id, :hash, :title, :source, :metadata, "
                    "coalesce(:created_at, now()), :source, :source, 'ready', "
                    "CAST(:access AS text[])) "
                    "ON CONFLICT (namespace, id) DO UPDATE SET "
                    "content_hash = excluded.content_hash, "
                    "title = excluded.title, source = excluded.source, "
                    # created_at stays: finishing an ingest must not move a document
                    # in the newest-first listing (a page being read would skip or
                    # repeat it).
                    "metadata = excluded.metadata, "
                    "status = 'ready', error = NULL, updated_at = now()"
                ),
                {
                    "namespace": scope.namespace,
                    "id": document.id,
                    "hash": document.content_hash,
                    "title": document.title,
                    "source": document.source,
                    "metadata": Jsonb(dict(document.metadata)),
                    "created_at": document.created_at,
                    "access": sorted(scope.principals or ()),
                },
            )

    async def find_by_hash(self, scope: Scope, content_hash: str) -> Document | None:
        return await self._one(
            scope,
            f"SELECT {_DOCUMENT_COLUMNS} FROM ragsage_documents WHERE namespace = :namespace "
            "AND content_hash = :value AND status = 'ready' "
            "ORDER BY created_at LIMIT 1",
            content_hash,
        )

    async def get(self, scope: Scope, document_id: str) -> Document | None:
        return await self._one(
            scope,
            f"SELECT {_DOCUMENT_COLUMNS} FROM ragsage_documents "
            "WHERE namespace = :namespace AND id = :value AND status = 'ready'",
            document_id,
        )

    async def _one(self, scope: Scope, sql: str, value: str) -> Document | None:
        rows = await self._read(scope, sql, {"namespace": scope.namespace, "value": value})
        return _document(rows[0]) if rows else None

    async def _read(self, scope: Scope, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        # In one message when bound to a Database, so a replica may answer it.
        return await read_rows(self._target, scope, [(to_driver_style(sql), params)])

    async def list(self, scope: Scope) -> Sequence[Document]:
        rows = await self._read(
            scope,
            f"SELECT {_DOCUMENT_COLUMNS} FROM ragsage_documents "
            "WHERE namespace = :namespace AND status = 'ready' ORDER BY source, id",
            {"namespace": scope.namespace},
        )
        return [_document(row) for row in rows]

    async def delete(self, scope: Scope, document_id: str) -> None:
        """Delete the document; its chunks in every generation go with it (cascade)."""
        async with scoped(self._target, scope) as session:
            await session.execute(
                text("DELETE FROM ragsage_documents WHERE namespace = :namespace AND id = :id"),
                {"namespace": scope.namespace, "id": document_id},
            )

    async def get_chunk(self, scope: Scope, chunk_id: str) -> Chunk | None:
        key = split_chunk_id(chunk_id)
        if key is None:
            return None
        document_id, ordinal = key
        found = await self.chunks(scope, document_id, first=ordinal, last=ordinal)
        return found[0] if found else None

    async def chunks(
        self, scope: Scope, document_id: str, *, first: int = 0, last: int | None = None
    ) -> Sequence[Chunk]:
        rows = await self._read(
            scope,
            f"SELECT {CHUNK_COLUMNS} FROM ragsage_chunks c WHERE c.namespace = :namespace "
            f"AND c.generation = {NAMESPACE_ACTIVE_GENERATION} "
            "AND c.document_id = :document_id "
            "AND c.ordinal >= :first AND (CAST(:last AS integer) IS NULL "
            "OR c.ordinal <= :last) ORDER BY c.ordinal",
            {
                "namespace": scope.namespace,
                "document_id": document_id,
                "first": first,
                "last": last,
            },
        )
        return [chunk_from_row(row) for row in rows]

    async def page_positions(
        self, scope: Scope, pages: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], PagePositions]:
        """The line positions kept with the current version's pages asked for.

        The pages asked for are those of passages the caller has just read, so
        they are read namespace-wide: stored pages are hidden from a key bound
        to principals (storage migration 22), whose citations would otherwise
        have no boxes.
        """
        if not pages:
            return {}
        rows = await self._read(
            Scope(scope.namespace),
            "SELECT d.id, p.number, p.positions, p.text FROM unnest(CAST(:ids AS text[]), "
            "CAST(:numbers AS integer[])) AS w(id, number) "
            "JOIN ragsage_documents d ON d.namespace = :namespace AND d.id = w.id "
            "JOIN ragsage_pages p ON p.namespace = :namespace "
            "AND p.content_hash = d.content_hash AND p.number = w.number "
            "WHERE p.positions IS NOT NULL",
            {
                "namespace": scope.namespace,
                "ids": [document_id for document_id, _ in pages],
                "numbers": [number for _, number in pages],
            },
        )
        return {
            (str(row[0]), int(row[1])): PagePositions.from_dict(row[2], text=row[3]) for row in rows
        }

    async def count_chunks(self, scope: Scope) -> int:
        rows = await self._read(
            scope,
            "SELECT count(*) FROM ragsage_chunks c WHERE c.namespace = :namespace "
            f"AND c.generation = {NAMESPACE_ACTIVE_GENERATION}",
            {"namespace": scope.namespace},
        )
        return int(rows[0][0]) if rows else 0


async def purge_namespace(session: AsyncSession) -> None:
    """Delete every row of the session's namespace, in every ragsage table.

    No WHERE clause, on purpose: Row-Level Security limits each statement to the
    session's namespace, and a hand-written predicate would be a second, weaker
    copy of that guarantee.
    """
    replicas_must_replay(session)  # an erased namespace must not be found on a replica
    for table in (
        # Generations before chunks: the chunk trigger then counts no row it deletes.
        "ragsage_generations",
        "ragsage_chunks",
        *STATISTICS_TABLES,
        "ragsage_pages",
        "ragsage_jobs",
        "ragsage_blobs",
        "ragsage_documents",
    ):
        await session.execute(text(f"DELETE FROM {table}"))
