"""A namespace's quotas, checked where its rows are written.

An upload is refused before any of its bytes are kept; the chunk count is
known only once a document is read, so that quota is checked in the job's
final write, whose transaction then rolls back and leaves the previous version.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.namespaces import own_overrides
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.errors import QuotaExceeded
from ragsage.core.jobs import Quotas
from ragsage.core.scopes import Scope

# The namespace's chunks in the generation serving its searches.
_SERVING_CHUNKS = (
    "SELECT count(*) FROM ragsage_chunks c JOIN ragsage_generations g "
    "ON g.namespace = c.namespace AND g.id = c.generation AND g.state = 'active' "
    "WHERE c.namespace = :namespace"
)


async def namespace_quotas(session: AsyncSession, defaults: Quotas) -> Quotas:
    """The deployment's quotas with the namespace's own overrides over them."""
    overrides = await own_overrides(session)
    return defaults.over({name.removeprefix("quota_"): value for name, value in overrides.items()})


async def check_upload(
    session: AsyncSession,
    scope: Scope,
    quotas: Quotas,
    *,
    document_id: str,
    external_id: str,
    size: int,
) -> None:
    """Refuse an upload that would pass the queued-jobs, documents or bytes quota.

    The counts are the whole namespace's, whatever the uploader's key may read
    (the privileged ``ragsage_upload_room``, functions/upload_room.sql).
    """
    if not (quotas.queued_jobs or quotas.documents or quotas.bytes):
        return
    # Uploads of a quota-bound namespace take turns, so two cannot both pass
    # on the last unit of room.
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"ragsage-quota/{scope.namespace}"},
    )
    row = (
        await session.execute(
            text(
                "SELECT queued, documents, present, stored_bytes "
                "FROM ragsage_upload_room(:id, :external_id)"
            ),
            {"id": document_id, "external_id": external_id},
        )
    ).one()
    queued, documents, replacing, stored = int(row[0]), int(row[1]), bool(row[2]), int(row[3])

    def told(count: int) -> int | None:
        # A bound key learns that a quota is reached, never the namespace's count.
        return None if scope.bound else count

    if quotas.queued_jobs and queued + 1 > quotas.queued_jobs:
        raise QuotaExceeded(
            "queued jobs",
            quotas.queued_jobs,
            told(queued),
            "jobs",
            "upload again once some have run",
        )
    if quotas.documents and not replacing and documents + 1 > quotas.documents:
        raise QuotaExceeded("documents", quotas.documents, told(documents), "documents")
    if quotas.bytes and stored + size > quotas.bytes:
        raise QuotaExceeded(
            "stored bytes", quotas.bytes, told(stored), "bytes", f"this file would add {size:,}"
        )


async def check_chunks(
    session: AsyncSession, quotas: Quotas, *, document_id: str, filename: str, adding: int
) -> None:
    """Refuse a version whose chunks would pass the chunk quota (in the serving generation).

    A re-index's building generation is not counted: while both exist, the
    namespace holds its documents twice only until the old one is dropped.
    """
    if not quotas.chunks:
        return
    held = int(
        await session.scalar(
            text(f"{_SERVING_CHUNKS} AND c.document_id <> :id"),
            {"namespace": namespace_of(session), "id": document_id},
        )
        or 0
    )
    if held + adding > quotas.chunks:
        raise QuotaExceeded(
            "chunks",
            quotas.chunks,
            held,
            "chunks",
            f"{filename} would add {adding:,}; the document keeps its previous version",
        )


async def usage(session: AsyncSession) -> dict[str, int]:
    """What the scoped namespace holds now: documents, serving chunks, bytes, jobs."""
    row = (
        await session.execute(
            text(
                "SELECT (SELECT count(*) FROM ragsage_documents WHERE namespace = :namespace), "
                f"({_SERVING_CHUNKS}), "
                "(SELECT coalesce(sum(size_bytes), 0) FROM ragsage_blobs "
                "WHERE namespace = :namespace), "
                "(SELECT count(*) FROM ragsage_jobs "
                "WHERE namespace = :namespace AND state = 'queued'), "
                "(SELECT count(*) FROM ragsage_jobs "
                "WHERE namespace = :namespace AND state = 'running')"
            ),
            {"namespace": namespace_of(session)},
        )
    ).one()
    names = ("documents", "chunks", "stored_bytes", "jobs_queued", "jobs_running")
    return {name: int(value) for name, value in zip(names, row, strict=True)}
