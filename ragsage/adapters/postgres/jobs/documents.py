"""Documents as the service sees them: every upload's status, not only ingested ones."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs import document_rows, page_store
from ragsage.adapters.postgres.replicas import replicas_must_replay
from ragsage.adapters.postgres.sessions import (
    ScopedReads,
    namespace_of,
    read_from,
    read_rows,
    reads_namespace,
)
from ragsage.core.documents import DocumentRecord
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

_COLUMNS = (
    "id, external_id, filename, title, media_type, size_bytes, status, error, content_hash, "
    "metadata, created_at, updated_at, access"
)


def _record(row: Sequence[Any]) -> DocumentRecord:
    return DocumentRecord(
        id=row[0],
        external_id=row[1],
        filename=row[2],
        title=row[3],
        media_type=row[4],
        size_bytes=row[5],
        status=row[6],
        error=row[7],
        content_hash=row[8],
        metadata=dict(row[9] or {}),
        created_at=row[10],
        updated_at=row[11],
        access=tuple(row[12] or ()),
    )


async def get_document(
    source: AsyncSession | ScopedReads, document_id: str
) -> DocumentRecord | None:
    rows = await read_from(
        source,
        f"SELECT {_COLUMNS} FROM ragsage_documents WHERE namespace = %(namespace)s AND id = %(id)s",
        {"namespace": reads_namespace(source), "id": document_id},
    )
    return _record(rows[0]) if rows else None


async def list_documents(
    source: AsyncSession | ScopedReads,
    *,
    limit: int = 50,
    after: str | None = None,
    name: str | None = None,
) -> list[DocumentRecord]:
    """Newest first; ``after`` continues from a document id of the previous page.

    ``name`` keeps the documents whose file name or title holds it, ignoring
    case (``%`` and ``_`` in it are plain characters).
    """
    conditions: list[str] = []
    params: dict[str, Any] = {"namespace": reads_namespace(source), "limit": limit}
    if after is not None:
        conditions.append(
            "(created_at, id) < (SELECT created_at, id FROM ragsage_documents "
            "WHERE namespace = %(namespace)s AND id = %(after)s)"
        )
        params["after"] = after
    if name:
        conditions.append(
            "(filename ILIKE %(name)s ESCAPE '\\' OR title ILIKE %(name)s ESCAPE '\\')"
        )
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        params["name"] = f"%{escaped}%"
    rows = await read_from(
        source,
        f"SELECT {_COLUMNS} FROM ragsage_documents WHERE namespace = %(namespace)s"
        f"{''.join(f' AND {condition}' for condition in conditions)} "
        "ORDER BY created_at DESC, id DESC LIMIT %(limit)s",
        params,
    )
    return [_record(row) for row in rows]


async def delete_document(session: AsyncSession, document_id: str) -> bool:
    """Delete a document, its chunks, pages, bytes and jobs; False if there is none.

    Open jobs disappear with their rows, which a running job's heartbeat and
    final write both notice: it stops and writes nothing.
    """
    replicas_must_replay(session)  # a search on a replica must not find it after this
    params = {"namespace": namespace_of(session), "id": document_id}
    hashes = list(
        await session.scalars(
            text(
                "SELECT content_hash FROM ragsage_documents "
                "WHERE namespace = :namespace AND id = :id UNION "
                "SELECT content_hash FROM ragsage_jobs "
                "WHERE namespace = :namespace AND document_id = :id"
            ),
            params,
        )
    )
    deleted = (
        await session.execute(
            text(
                "DELETE FROM ragsage_documents WHERE namespace = :namespace AND id = :id "
                "RETURNING id"
            ),
            params,
        )
    ).first()
    if deleted is None:
        return False
    await session.execute(
        text("DELETE FROM ragsage_jobs WHERE namespace = :namespace AND document_id = :id"),
        params,
    )
    for content_hash in hashes:
        await page_store.delete_unreferenced(session, content_hash)
    return True


async def set_access(session: AsyncSession, document_id: str, access: Collection[str]) -> bool:
    """Give a document a new access list, on every row that copies it; False if none.

    One transaction: the next request sees the new list on every chunk of every
    generation and on every job.  Rows already holding the list are left alone;
    the others are rewritten, with their index entries (docs/tenants.md gives
    the cost).  The document row is updated first, which waits for a chunk
    write of the document in progress (it holds the row ``FOR SHARE``), so the
    chunks it writes are updated here too.
    """
    replicas_must_replay(session)  # a search on a replica must see the new list
    found = (
        await session.execute(
            text(
                "UPDATE ragsage_documents SET access = :access, updated_at = now() "
                "WHERE namespace = :namespace AND id = :id RETURNING id"
            ),
            {"namespace": namespace_of(session), "id": document_id, "access": sorted(set(access))},
        )
    ).first()
    if found is None:
        return False
    await copy_access(session, document_id, access)
    return True


async def copy_access(session: AsyncSession, document_id: str, access: Collection[str]) -> None:
    """Copy a document's list, already on its row, onto its chunks and jobs that differ."""
    params = {"namespace": namespace_of(session), "id": document_id, "access": sorted(set(access))}
    for table in ("ragsage_chunks", "ragsage_jobs"):
        await session.execute(
            text(
                f"UPDATE {table} SET access = :access WHERE namespace = :namespace "
                "AND document_id = :id AND access IS DISTINCT FROM CAST(:access AS text[])"
            ),
            params,
        )


async def cancel_job(session: AsyncSession, job_id: UUID) -> bool:
    """Cancel a queued or running job; a running one stops at its next step, writing nothing."""
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_jobs SET state = 'cancelled', lease_expires_at = NULL, "
                "finished_at = now(), updated_at = now() WHERE namespace = :namespace AND id = :id "
                "AND state IN ('queued', 'running') RETURNING document_id"
            ),
            {"namespace": namespace_of(session), "id": job_id},
        )
    ).first()
    if row is None:
        return False
    await document_rows.set_pending_status(session, row[0], "failed", "ingestion was cancelled")
    return True


async def retry_job(session: AsyncSession, job_id: UUID) -> bool:
    """Queue a failed or cancelled job again from its stored bytes; False if it cannot be."""
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_jobs j SET state = 'queued', error = NULL, stage = NULL, "
                "attempts = 0, deliveries = 0, lost_deliveries = 0, started_at = NULL, "
                "finished_at = NULL, recovered = false, run_after = NULL, "
                "enqueued_at = NULL, updated_at = now() "
                "WHERE j.namespace = :namespace AND j.id = :id "
                "AND j.state IN ('failed', 'cancelled') AND ragsage_content_kept(j.content_hash) "
                "RETURNING j.document_id"
            ),
            {"namespace": namespace_of(session), "id": job_id},
        )
    ).first()
    if row is None:
        return False
    await document_rows.set_pending_status(session, row[0], "queued", None)
    return True


async def namespace_documents(session: AsyncSession) -> dict[str, str]:
    """The namespace's ingested documents, external id → document id."""
    rows = await session.execute(
        text(
            "SELECT external_id, id FROM ragsage_documents "
            "WHERE namespace = :namespace AND status = 'ready'"
        ),
        {"namespace": namespace_of(session)},
    )
    return {str(external): str(identifier) for external, identifier in rows if external}


async def document_bytes(database: Database, scope: Scope, record: DocumentRecord) -> bytes | None:
    """The stored bytes of ``record``'s version, once the caller has read ``record``.

    They are read namespace-wide: stored bytes are hidden from a key bound to
    principals (storage migration 22) even when it may read the document they
    belong to, which is why the record, read as the caller, must come first.
    None when the document has no version yet or its bytes are gone.
    """
    if not record.content_hash:
        return None
    rows = await read_rows(
        database,
        Scope(scope.namespace),
        [
            (
                "SELECT data FROM ragsage_blobs "
                "WHERE namespace = %(namespace)s AND content_hash = %(hash)s",
                {"namespace": scope.namespace, "hash": record.content_hash},
            )
        ],
    )
    return bytes(rows[0][0]) if rows else None
