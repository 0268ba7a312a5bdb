"""Job bookkeeping in Postgres: every statement runs in a namespace-scoped session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs.document_rows import set_pending_status
from ragsage.adapters.postgres.jobs.page_store import delete_unreferenced
from ragsage.adapters.postgres.sessions import (
    ScopedReads,
    namespace_of,
    read_from,
    reads_namespace,
)
from ragsage.core.jobs import Job, JobState
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

_JOB_COLUMNS = (
    "id, namespace, document_id, kind, state, stage, content_hash, filename, media_type, "
    "metadata, attempts, deliveries, error, timings, result, lease_expires_at, enqueued_at, "
    "created_at, updated_at, started_at, finished_at, generation, lost_deliveries, version, "
    "job_class, progress_done, progress_total"
)
JOB_CLASSES = ("interactive", "bulk", "reindex")


def _job(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0],
        namespace=row[1],
        document_id=row[2],
        kind=row[3],
        state=JobState(row[4]),
        stage=row[5],
        content_hash=row[6],
        filename=row[7],
        media_type=row[8],
        metadata=dict(row[9] or {}),
        attempts=row[10],
        deliveries=row[11],
        error=row[12],
        timings=dict(row[13] or {}),
        result=dict(row[14]) if row[14] is not None else None,
        lease_expires_at=row[15],
        enqueued_at=row[16],
        created_at=row[17],
        updated_at=row[18],
        started_at=row[19],
        finished_at=row[20],
        generation=row[21],
        lost_deliveries=row[22],
        version=row[23],
        job_class=row[24],
        progress=(row[25], row[26]) if row[25] is not None and row[26] is not None else None,
    )


async def get_job(source: AsyncSession | ScopedReads, job_id: UUID) -> Job | None:
    rows = await read_from(
        source,
        f"SELECT {_JOB_COLUMNS} FROM ragsage_jobs WHERE namespace = %(namespace)s AND id = %(id)s",
        {"namespace": reads_namespace(source), "id": job_id},
    )
    return _job(rows[0]) if rows else None


async def list_jobs(
    source: AsyncSession | ScopedReads,
    *,
    state: JobState | None = None,
    document_id: str | None = None,
    limit: int = 50,
    before: UUID | None = None,
) -> list[Job]:
    """Newest first; ``before`` pages past a job id from the previous page."""
    clauses: list[str] = []
    params: dict[str, Any] = {"namespace": reads_namespace(source), "limit": limit}
    if state is not None:
        clauses.append("state = %(state)s")
        params["state"] = state.value
    if document_id is not None:
        clauses.append("document_id = %(document_id)s")
        params["document_id"] = document_id
    if before is not None:
        clauses.append(
            "(created_at, id) < (SELECT created_at, id FROM ragsage_jobs "
            "WHERE namespace = %(namespace)s AND id = %(before)s)"
        )
        params["before"] = before
    rows = await read_from(
        source,
        f"SELECT {_JOB_COLUMNS} FROM ragsage_jobs WHERE namespace = %(namespace)s"
        f"{''.join(f' AND {clause}' for clause in clauses)} "
        "ORDER BY created_at DESC, id DESC LIMIT %(limit)s",
        params,
    )
    return [_job(row) for row in rows]


async def insert_job(
    session: AsyncSession,
    *,
    job_id: UUID,
    namespace: str,
    document_id: str,
    kind: str,
    content_hash: str,
    filename: str,
    media_type: str | None,
    metadata: Mapping[str, Any],
    generation: int | None = None,
    version: int | None = None,
    job_class: str | None = None,
) -> None:
    """Insert a queued job; its class defaults to ``reindex`` for re-index work, else ``bulk``."""
    chosen = job_class or ("reindex" if kind == "reindex" else "bulk")
    if chosen not in JOB_CLASSES:
        raise ValueError(f"job class must be one of {', '.join(JOB_CLASSES)}; got {chosen!r}")
    await session.execute(
        text(
            "INSERT INTO ragsage_jobs (namespace, id, document_id, kind, state, content_hash, "
            "filename, media_type, metadata, generation, version, job_class, access) "
            "SELECT :namespace, :id, :document_id, :kind, 'queued', :hash, :filename, "
            ":media_type, :metadata, :generation, :version, :job_class, "
            # The document's access list (migration 22); a job of no stored document is open.
            # FOR SHARE waits for a list change in progress and reads the list it commits.
            "coalesce((SELECT d.access FROM ragsage_documents d WHERE d.namespace = :namespace "
            "AND d.id = :document_id FOR SHARE), '{}')"
        ),
        {
            "namespace": namespace,
            "id": job_id,
            "document_id": document_id,
            "kind": kind,
            "hash": content_hash,
            "filename": filename,
            "media_type": media_type,
            "metadata": Jsonb(dict(metadata)),
            "generation": generation,
            "version": version,
            "job_class": chosen,
        },
    )


async def mark_enqueued(
    session: AsyncSession, job_id: UUID, *, attempts: int | None = None
) -> None:
    """Record that the broker accepted the job's message (sent after the job's commit).

    With ``attempts`` only a job still at that attempt count is marked: if it
    ran and was re-queued meanwhile, the later re-queue's own send marks it.
    """
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET enqueued_at = now() WHERE namespace = :namespace "
            "AND id = :id AND state = 'queued' "
            "AND (CAST(:attempts AS integer) IS NULL OR attempts = :attempts)"
        ),
        {"namespace": namespace_of(session), "id": job_id, "attempts": attempts},
    )


async def mark_enqueued_many(session: AsyncSession, job_ids: Sequence[UUID]) -> None:
    """:func:`mark_enqueued` for many jobs in one statement."""
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET enqueued_at = now() WHERE namespace = :namespace "
            "AND id = ANY(:ids) AND state = 'queued'"
        ),
        {"namespace": namespace_of(session), "ids": list(job_ids)},
    )


async def claim(session: AsyncSession, job_id: UUID, lease_seconds: float) -> Job | None:
    """Take the job for this worker if it is queued, or running on an expired lease.

    Returns None when the job is finished or another worker holds a live lease:
    a duplicate or stale message then does nothing.  Taking over an expired
    lease counts the delivery that held it as lost.
    """
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_jobs SET state = 'running', stage = 'starting', "
                "progress_done = NULL, progress_total = NULL, "
                "attempts = attempts + 1, deliveries = deliveries + 1, "
                "lost_deliveries = lost_deliveries + (state = 'running')::int, "
                "lease_expires_at = now() + make_interval(secs => :lease), "
                "started_at = coalesce(started_at, now()), claimed_at = now(), "
                "recovered = false, run_after = NULL, updated_at = now() "
                "WHERE namespace = :namespace AND id = :id AND (state = 'queued' OR "
                "(state = 'running' AND lease_expires_at < now())) "
                f"RETURNING {_JOB_COLUMNS}"
            ),
            {"namespace": namespace_of(session), "id": job_id, "lease": lease_seconds},
        )
    ).first()
    return _job(row) if row else None


async def renew_lease(
    database: Database,
    scope: Scope,
    job_id: UUID,
    attempt: int,
    lease_seconds: float,
    stage: str | None,
    progress: tuple[int, int] | None = None,
) -> bool:
    """Extend attempt ``attempt``'s lease; False if the job is no longer that attempt's.

    A ``stage`` is recorded with ``progress`` (done, total) of that stage, or
    none; without a stage both stay as they were (the lease keeper's renewals).

    Sent as one message the server commits alone: through a session, the job's
    own heartbeat kept its transaction open (holding the job row) whenever the
    worker froze between the update and the commit, and the lease keeper's
    renewal waited behind that lock until the lease ran out.
    """
    rows = await database.write_at_once(
        scope,
        [
            (
                "UPDATE ragsage_jobs SET lease_expires_at = now() + make_interval(secs => "
                "%(lease)s), stage = coalesce(%(stage)s, stage), "
                "progress_done = CASE WHEN %(stage)s IS NULL THEN progress_done ELSE %(done)s END, "
                "progress_total = CASE WHEN %(stage)s IS NULL THEN progress_total "
                "ELSE %(total)s END, updated_at = now() "
                "WHERE namespace = %(namespace)s AND id = %(id)s AND state = 'running' "
                "AND attempts = %(attempt)s RETURNING id",
                {
                    "namespace": scope.namespace,
                    "id": job_id,
                    "attempt": attempt,
                    "lease": lease_seconds,
                    "stage": stage,
                    "done": progress[0] if progress else None,
                    "total": progress[1] if progress else None,
                },
            )
        ],
    )
    return bool(rows)


async def lock_running(session: AsyncSession, job_id: UUID, attempt: int) -> bool:
    """Lock the job row for the final write; False if it was cancelled or taken over."""
    row = (
        await session.execute(
            text(
                "SELECT state, attempts FROM ragsage_jobs "
                "WHERE namespace = :namespace AND id = :id FOR UPDATE"
            ),
            {"namespace": namespace_of(session), "id": job_id},
        )
    ).first()
    return row is not None and row[0] == "running" and row[1] == attempt


async def has_finished(session: AsyncSession, job_id: UUID, attempt: int) -> bool:
    """Whether this attempt of the job has reached an end state (another worker may have)."""
    state = await session.scalar(
        text(
            "SELECT state FROM ragsage_jobs WHERE namespace = :namespace AND id = :id "
            "AND attempts = :attempt AND state IN ('succeeded', 'failed', 'superseded')"
        ),
        {"namespace": namespace_of(session), "id": job_id, "attempt": attempt},
    )
    return state is not None


def is_superseded(job: Job, stored: int | None) -> bool:
    """True when a newer upload of the job's document is already stored.

    Jobs from before versions were numbered carry none and are never superseded.
    """
    return job.kind == "ingest" and job.version is not None and (stored or 0) >= job.version


async def supersede(session: AsyncSession, job: Job, stored: int) -> str:
    """Finish a job whose version is older than the stored one, writing nothing."""
    message = f"version {job.version} was not stored: version {stored} had been uploaded after it"
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET state = 'superseded', stage = NULL, error = NULL, "
            "lease_expires_at = NULL, result = :result, finished_at = now(), updated_at = now() "
            "WHERE namespace = :namespace AND id = :id AND state IN ('queued', 'running')"
        ),
        {
            "namespace": namespace_of(session),
            "id": job.id,
            "result": Jsonb({"superseded_by": stored, "reason": message}),
        },
    )
    await delete_unreferenced(session, job.content_hash)
    return message


async def succeed(
    session: AsyncSession,
    job_id: UUID,
    *,
    timings: Mapping[str, float],
    result: Mapping[str, Any],
) -> None:
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET state = 'succeeded', stage = NULL, error = NULL, "
            "lease_expires_at = NULL, timings = :timings, result = :result, "
            "finished_at = now(), updated_at = now() WHERE namespace = :namespace AND id = :id"
        ),
        {
            "namespace": namespace_of(session),
            "id": job_id,
            "timings": Jsonb(dict(timings)),
            "result": Jsonb(dict(result)),
        },
    )


async def fail(session: AsyncSession, job: Job, error: str) -> None:
    """Fail the job; a document with no ingested version becomes ``failed`` too.

    A failed re-index job leaves its document alone: the active generation
    still serves it, and the re-index status names the failure.
    """
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET state = 'failed', error = :error, lease_expires_at = NULL, "
            "finished_at = now(), updated_at = now() WHERE namespace = :namespace AND id = :id "
            "AND state IN ('queued', 'running')"
        ),
        {"namespace": namespace_of(session), "id": job.id, "error": error},
    )
    if job.kind != "ingest":
        return
    await set_pending_status(session, job.document_id, "failed", error)


async def fail_attempt(session: AsyncSession, job_id: UUID, attempt: int, reason: str) -> bool:
    """Fail attempt ``attempt`` of a running job, its file name and stage before ``reason``.

    For a watcher outside the worker (the lease keeper), which knows the job
    only by id and attempt; False if that attempt is no longer running.
    """
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_jobs SET state = 'failed', "
                "error = filename || ': ' || :reason "
                "|| coalesce(' (during ' || nullif(stage, 'starting') || ')', ''), "
                "lease_expires_at = NULL, finished_at = now(), updated_at = now() "
                "WHERE namespace = :namespace AND id = :id AND state = 'running' "
                "AND attempts = :attempt RETURNING kind, document_id, error"
            ),
            {
                "namespace": namespace_of(session),
                "id": job_id,
                "attempt": attempt,
                "reason": reason,
            },
        )
    ).first()
    if row is None:
        return False
    if row[0] == "ingest":
        await set_pending_status(session, row[1], "failed", row[2])
    return True


async def requeue(session: AsyncSession, job_id: UUID, error: str, retry_in: float = 0.0) -> None:
    """Put a job back in the queue after a transient failure, not yet sent.

    It may run again ``retry_in`` seconds from now, and then before other
    work (it is marked recovered).  The caller sends the retry after this
    commits and then marks it sent; if the send fails, the watchdog sends it
    once the unsent grace has passed.
    """
    await session.execute(
        text(
            "UPDATE ragsage_jobs SET state = 'queued', error = :error, lease_expires_at = NULL, "
            "enqueued_at = NULL, recovered = true, "
            "run_after = now() + make_interval(secs => :retry_in), updated_at = now() "
            "WHERE namespace = :namespace AND id = :id AND state = 'running'"
        ),
        {"namespace": namespace_of(session), "id": job_id, "error": error, "retry_in": retry_in},
    )


async def job_counts(system: AsyncSession) -> dict[str, int]:
    """Jobs by state across every namespace (a system session: metrics, never a tenant)."""
    rows = await system.execute(
        text("SELECT state, sum(jobs) FROM ragsage_job_counts() GROUP BY state")
    )
    return {str(row[0]): int(row[1]) for row in rows}
