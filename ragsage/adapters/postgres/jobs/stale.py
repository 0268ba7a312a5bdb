"""The watchdog's queries: one round's lock, the stale jobs, and putting one back in the queue."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.sessions import namespace_of

_WATCHDOG_LOCK = 0x7261_6777  # "ragw"


async def lock_round(owner: AsyncSession) -> bool:
    """Take the round's lock for the owner's transaction; False if another round holds it."""
    return bool(
        await owner.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _WATCHDOG_LOCK})
    )


async def stale_jobs(owner: AsyncSession, grace: float, requeue: float) -> list[tuple[str, UUID]]:
    """(namespace, job id) of every stale job in every namespace (a privileged function)."""
    rows = await owner.execute(
        text("SELECT namespace, job_id FROM ragsage_stale_jobs(:grace, :requeue)"),
        {"grace": grace, "requeue": requeue},
    )
    return [(str(row[0]), row[1]) for row in rows]


async def requeue_if_stale(
    session: AsyncSession, job_id: UUID, grace: float, after: float
) -> tuple[str, int] | None:
    """Put the job back to ``queued`` and unsent if it is still stale: its (kind, attempts).

    A job whose worker died is marked recovered, so it runs before other work.

    Stale means running past its lease, queued and unsent for ``grace`` seconds,
    or sent ``after`` seconds ago and never started.  The check is repeated
    here, in the job's own namespace, because the listing ran earlier.
    """
    row = (
        await session.execute(
            text(
                "UPDATE ragsage_jobs SET state = 'queued', lease_expires_at = NULL, "
                "lost_deliveries = lost_deliveries + (state = 'running')::int, "
                "recovered = recovered OR state = 'running', "
                "enqueued_at = NULL, stage = NULL, updated_at = now() "
                "WHERE namespace = :namespace AND id = :id AND ("
                "(state = 'running' AND lease_expires_at < now()) OR (state = 'queued' AND "
                "enqueued_at IS NULL AND updated_at < now() - make_interval(secs => :grace)) "
                "OR (state = 'queued' AND "
                "enqueued_at < now() - make_interval(secs => :after))) "
                "RETURNING kind, attempts"
            ),
            {"namespace": namespace_of(session), "id": job_id, "grace": grace, "after": after},
        )
    ).first()
    return None if row is None else (str(row[0]), int(row[1]))
