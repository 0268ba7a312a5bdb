"""The operator's per-namespace settings, and an overview of every namespace's queue.

Overrides are written on the owner's connection (the database credentials),
never by an API key: a tenant's own sessions may read its row, not change it.
Even the owner's write is pinned to the one namespace it names, so the
table's row policy checks it as it checks every tenant row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from ragsage.core.types import Scope


@dataclass(frozen=True, slots=True)
class NamespaceQueue:
    """One namespace's jobs waiting and running, and its share of worker slots."""

    namespace: str
    queued: int
    running: int
    # None: the deployment's RAGSAGE_JOB_NAMESPACE_SLOTS; 0: no cap.
    job_slots: int | None


async def set_job_slots(
    owner: AsyncConnection, isolation_variable: str, scope: Scope, slots: int | None
) -> None:
    """Set (or, with None, clear) the namespace's share of worker slots."""
    if slots is not None and slots < 0:
        raise ValueError("job slots must be 0 (no cap) or more")
    await owner.execute(
        text("SELECT set_config(:variable, :namespace, true)"),
        {"variable": isolation_variable, "namespace": scope.namespace},
    )
    await owner.execute(
        text(
            "INSERT INTO ragsage_namespace_settings (namespace, job_slots) "
            "VALUES (:namespace, :slots) ON CONFLICT (namespace) DO UPDATE "
            "SET job_slots = excluded.job_slots, updated_at = now()"
        ),
        {"namespace": scope.namespace, "slots": slots},
    )


async def own_job_slots(session: AsyncSession) -> int | None:
    """The scoped namespace's override, as its own session reads it (None: no override)."""
    value = await session.scalar(text("SELECT job_slots FROM ragsage_namespace_settings"))
    return None if value is None else int(value)


async def queue_overview(owner: AsyncConnection) -> list[NamespaceQueue]:
    """Every namespace with jobs or an override: waiting and running jobs, its slots.

    Read as ``ragsage_system`` (which the owner holds), whose policies let it
    see every namespace's job counts and settings and nothing it could change.
    """
    await owner.execute(text("SET LOCAL ROLE ragsage_system"))
    rows = await owner.execute(
        text(
            "WITH counts AS (SELECT namespace, "
            "sum(jobs) FILTER (WHERE state = 'queued') AS queued, "
            "sum(jobs) FILTER (WHERE state = 'running') AS running "
            "FROM ragsage_job_counts() GROUP BY namespace) "
            "SELECT coalesce(c.namespace, s.namespace), coalesce(c.queued, 0), "
            "coalesce(c.running, 0), s.job_slots "
            "FROM counts c FULL JOIN ragsage_namespace_settings s ON s.namespace = c.namespace "
            "ORDER BY 1"
        )
    )
    await owner.execute(text("RESET ROLE"))
    return [NamespaceQueue(str(row[0]), int(row[1]), int(row[2]), row[3]) for row in rows.all()]
