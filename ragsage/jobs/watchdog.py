"""Finding jobs whose worker died or whose message never reached the broker.

Runs periodically in every worker; an advisory lock makes one of them act per
round.  Listing stale jobs crosses namespaces, so it goes through the
privileged ``ragsage_stale_jobs`` function; each job is then re-queued inside
its own namespace's scoped session, re-checking that it is still stale.
"""

from __future__ import annotations

import logging
from uuid import UUID

from sqlalchemy import text

from ragsage.runtime import Runtime
from ragsage.types import Scope

_log = logging.getLogger(__name__)
_WATCHDOG_LOCK = 0x7261_6777  # "ragw"


async def stale_jobs(runtime: Runtime) -> list[tuple[str, UUID]] | None:
    """Stale jobs as (namespace, job id), or None if another watchdog holds the round."""
    settings = runtime.settings
    async with runtime.database.system_session() as session:
        if not await session.scalar(
            text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _WATCHDOG_LOCK}
        ):
            return None
        rows = await session.execute(
            text("SELECT namespace, job_id FROM ragsage_stale_jobs(:grace, :requeue)"),
            {"grace": settings.job_unsent_grace, "requeue": settings.job_requeue_after},
        )
        return [(str(row[0]), row[1]) for row in rows]


async def reclaim(runtime: Runtime, namespace: str, job_id: UUID) -> str | None:
    """Put a stale job back to ``queued``; its kind if it still needed it, else None."""
    settings = runtime.settings
    async with runtime.database.session(Scope(namespace)) as session:
        row = (
            await session.execute(
                text(
                    "UPDATE ragsage_jobs SET state = 'queued', lease_expires_at = NULL, "
                    "lost_deliveries = lost_deliveries + (state = 'running')::int, "
                    "enqueued_at = NULL, stage = NULL, updated_at = now() WHERE id = :id AND ("
                    "(state = 'running' AND lease_expires_at < now()) OR (state = 'queued' AND "
                    "(enqueued_at IS NULL OR enqueued_at < now() - make_interval(secs => :after))))"
                    " RETURNING kind"
                ),
                {"id": job_id, "after": settings.job_requeue_after},
            )
        ).first()
    if row is None:
        return None
    _log.warning("re-queueing job %s of namespace %s: its worker stopped", job_id, namespace)
    return str(row[0])
