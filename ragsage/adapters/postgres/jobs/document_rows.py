"""A document's row as its jobs change it: status, stored version, content hash, file details."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs.page_store import delete_unreferenced
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.jobs import Job


async def stored_version(
    session: AsyncSession, document_id: str, *, lock: bool = False
) -> int | None:
    """The upload version whose chunks the document holds (0 before any); None if deleted.

    With ``lock`` the document row stays locked to the end of the transaction,
    which is what serialises two writes of one document's chunks.
    """
    value = await _document_field(session, document_id, "stored_version", lock)
    return int(value) if value is not None else None


async def _document_field(session: AsyncSession, document_id: str, column: str, lock: bool) -> Any:
    assert column in ("stored_version", "content_hash")  # never caller-supplied text
    return await session.scalar(
        text(
            f"SELECT {column} FROM ragsage_documents WHERE namespace = :namespace AND id = :id"
            + (" FOR UPDATE" if lock else "")
        ),
        {"namespace": namespace_of(session), "id": document_id},
    )


async def set_pending_status(
    session: AsyncSession, document_id: str, status: str, error: str | None
) -> None:
    """Give a document ``status`` unless it is ``ready``; either way record ``error``.

    A ready document keeps serving its ingested version whatever happens to the
    job of a newer one, so only documents without one change status.
    """
    await session.execute(
        text(
            "UPDATE ragsage_documents SET "
            "status = CASE WHEN status = 'ready' THEN status ELSE :status END, "
            "error = :error, updated_at = now() "
            "WHERE namespace = :namespace AND id = :document_id"
        ),
        {
            "namespace": namespace_of(session),
            "document_id": document_id,
            "status": status,
            "error": error,
        },
    )


async def mark_processing(session: AsyncSession, document_id: str) -> None:
    await session.execute(
        text(
            "UPDATE ragsage_documents SET status = 'processing', updated_at = now() "
            "WHERE namespace = :namespace AND id = :id AND status IN ('queued', 'failed')"
        ),
        {"namespace": namespace_of(session), "id": document_id},
    )


async def current_hash(
    session: AsyncSession, document_id: str, *, lock: bool = False
) -> str | None:
    """The content hash the document row holds now (``lock``: and keep the row locked)."""
    value = await _document_field(session, document_id, "content_hash", lock)
    return str(value) if value is not None else None


async def finish_document(
    session: AsyncSession,
    job: Job,
    previous_hash: str | None,
    *,
    warnings: Sequence[str] = (),
) -> None:
    """After a version is stored: record its file details and drop the replaced blob.

    Warnings (a scanned page nothing could read) stay on the document's
    ``error`` while it is ``ready``, so a partly read file is visible as such.
    """
    await session.execute(
        text(
            "UPDATE ragsage_documents SET filename = :filename, media_type = :media_type, "
            "size_bytes = (SELECT size_bytes FROM ragsage_blobs "
            "WHERE namespace = :namespace AND content_hash = :hash), "
            "status = 'ready', error = :warning, "
            "stored_version = greatest(stored_version, coalesce(:version, 0)), "
            "updated_at = now() WHERE namespace = :namespace AND id = :id"
        ),
        {
            "namespace": namespace_of(session),
            "id": job.document_id,
            "version": job.version,
            "filename": job.filename,
            "media_type": job.media_type,
            "hash": job.content_hash,
            "warning": "; ".join(warnings) or None,
        },
    )
    if previous_hash and previous_hash != job.content_hash:
        await delete_unreferenced(session, previous_hash)
