"""An ingestion job's last transaction, as one call: its version written and the job done.

Under the job's lease and its document row's lock: a newer upload stored
first supersedes the job; the namespace's chunk quota is checked; the version
is written (by the caller, in this transaction), the document row and the job
finished, and the version queued for a re-index that is building.  All of it
commits together or not at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres import quotas
from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.jobs import document_rows, reindex, store
from ragsage.core.jobs import Job, Quotas, WrittenVersion
from ragsage.core.scopes import Scope


@dataclass(frozen=True, slots=True)
class FinalWrite:
    """How the last transaction ended: the lease lost, the job superseded, or written."""

    lease_lost: bool = False
    superseded: str | None = None  # the job's message when a newer upload got there first
    written: WrittenVersion | None = None
    follow_up: tuple[UUID, ...] = ()


async def finish_ingestion(
    database: Database,
    scope: Scope,
    job: Job,
    *,
    quota_defaults: Quotas,
    adding: int,
    write: Callable[[AsyncSession], Awaitable[WrittenVersion]],
) -> FinalWrite:
    """Write ``job``'s version with ``write`` (``adding`` chunks) and finish the job."""
    async with database.session(scope) as session:
        if not await store.lock_running(session, job.id, job.attempts):
            return FinalWrite(lease_lost=True)
        # The document row's lock serialises writers of its chunks; under it the
        # stored version says whether a newer upload got there first.
        stored = await document_rows.stored_version(session, job.document_id, lock=True)
        if store.is_superseded(job, stored):
            return FinalWrite(superseded=await store.supersede(session, job, stored or 0))
        limits = await quotas.namespace_quotas(session, quota_defaults)
        await quotas.check_chunks(
            session, limits, document_id=job.document_id, filename=job.filename, adding=adding
        )
        previous = await document_rows.current_hash(session, job.document_id)
        written = await write(session)
        await document_rows.finish_document(session, job, previous, warnings=written.warnings)
        await store.succeed(session, job.id, timings=written.timings, result=written.summary)
        queued = await reindex.queue_for_building(
            session,
            scope,
            document_id=job.document_id,
            content_hash=job.content_hash,
            filename=job.filename,
            media_type=job.media_type,
            metadata=dict(job.metadata),
        )
    return FinalWrite(written=written, follow_up=(queued,) if queued is not None else ())
