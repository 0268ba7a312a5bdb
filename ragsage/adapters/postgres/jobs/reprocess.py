"""Reading a namespace's documents again from their stored bytes (``ragsage reprocess``).

Ingestion keeps each version's bytes, so a document can be read again when the
deployment learns to read it better: a transcriber configured after scans were
skipped for want of one, or a better parser.  Each document read again is a
new ingest job of the same bytes, numbered as a new version, so an upload that
arrives meanwhile still wins (see :mod:`ragsage.adapters.postgres.jobs.uploads`).
"""

from __future__ import annotations

from uuid import UUID, uuid4

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs import store
from ragsage.core.scopes import Scope

# A scan no transcriber read is kept as an empty vision page.
_HAS_SKIPPED_SCAN = (
    "EXISTS (SELECT 1 FROM ragsage_pages p WHERE p.namespace = d.namespace "
    "AND p.content_hash = d.content_hash "
    "AND p.route = 'vision' AND btrim(p.text) = '')"
)


async def queue(
    session: AsyncSession, scope: Scope, *, only_skipped_pages: bool = False
) -> list[UUID]:
    """Queue an ingest job for each ready document (or each with a skipped scan).

    Documents whose bytes are gone, or with a job already queued or running,
    are left alone.  Returns the new jobs' ids, to send once this commits.
    """
    condition = f"AND {_HAS_SKIPPED_SCAN} " if only_skipped_pages else ""
    rows = (
        await session.execute(
            text(
                "SELECT d.id, d.content_hash, coalesce(d.filename, d.source), d.media_type, "
                "d.metadata FROM ragsage_documents d "
                "WHERE d.namespace = :namespace AND d.status = 'ready' "
                "AND EXISTS (SELECT 1 FROM ragsage_blobs b WHERE b.namespace = d.namespace "
                "AND b.content_hash = d.content_hash) "
                "AND NOT EXISTS (SELECT 1 FROM ragsage_jobs j WHERE j.namespace = d.namespace "
                "AND j.document_id = d.id AND j.state IN ('queued', 'running')) "
                f"{condition}ORDER BY d.id FOR UPDATE OF d"
            ),
            {"namespace": scope.namespace},
        )
    ).all()
    job_ids: list[UUID] = []
    for document_id, content_hash, filename, media_type, metadata in rows:
        version = await session.scalar(
            text(
                "UPDATE ragsage_documents SET upload_version = upload_version + 1 "
                "WHERE namespace = :namespace AND id = :id RETURNING upload_version"
            ),
            {"namespace": scope.namespace, "id": document_id},
        )
        job_id = uuid4()
        await store.insert_job(
            session,
            job_id=job_id,
            namespace=scope.namespace,
            document_id=str(document_id),
            kind="ingest",
            content_hash=str(content_hash),
            filename=str(filename),
            media_type=media_type,
            metadata=dict(metadata or {}),
            version=int(version),
        )
        job_ids.append(job_id)
    return job_ids
