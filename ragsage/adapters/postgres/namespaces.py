"""The operator's per-namespace settings, and an overview of every namespace's queue.

Overrides are written on the owner's connection (the database credentials),
never by an API key: a tenant's own sessions may read its row, not change it.
Even the owner's write is pinned to the one namespace it names, so the
table's row policy checks it as it checks every tenant row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from ragsage.adapters.postgres.config import principals_variable_for
from ragsage.adapters.postgres.isolation import UNBOUND, set_local
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.scopes import Scope


@dataclass(frozen=True, slots=True)
class NamespaceQueue:
    """One namespace's jobs waiting and running, and its share of worker slots."""

    namespace: str
    queued: int
    running: int
    # None: the deployment's RAGSAGE_JOB_NAMESPACE_SLOTS; 0: no cap.
    job_slots: int | None


# The overrides an operator may set, by column; None clears one back to the setting.
OVERRIDES = (
    "job_slots",
    "quota_documents",
    "quota_bytes",
    "quota_chunks",
    "quota_queued_jobs",
    "search_timeout_ms",
)


async def set_overrides(
    owner: AsyncConnection,
    isolation_variable: str,
    scope: Scope,
    values: Mapping[str, int | None],
) -> None:
    """Set (a number) or clear (None) some of the namespace's overrides; others stay."""
    unknown = set(values) - set(OVERRIDES)
    if unknown:
        raise ValueError(f"not a namespace setting: {', '.join(sorted(unknown))}")
    if any(value is not None and value < 0 for value in values.values()):
        raise ValueError("namespace settings must be 0 (no limit) or more")
    if values.get("search_timeout_ms") == 0:
        raise ValueError("a search timeout must be at least 1 ms")
    if not values:
        return
    await pin_owner(owner, isolation_variable, scope)
    # Column names come from OVERRIDES above, never from the caller's text.
    columns = [name for name in OVERRIDES if name in values]
    await owner.execute(
        text(
            f"INSERT INTO ragsage_namespace_settings (namespace, {', '.join(columns)}) "
            f"VALUES (:namespace, {', '.join(':' + c for c in columns)}) "
            "ON CONFLICT (namespace) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in columns)
            + ", updated_at = now()"
        ),
        {"namespace": scope.namespace, **{c: values[c] for c in columns}},
    )


async def pin_owner(owner: AsyncConnection, isolation_variable: str, scope: Scope) -> None:
    """Pin the owner's transaction to one namespace, as a tenant's session is pinned.

    Bound to no principal: the owner's work (erasure, say) covers every document.
    """
    pins = (
        set_local(isolation_variable, scope.namespace),
        set_local(principals_variable_for(isolation_variable), UNBOUND),
    )
    await owner.exec_driver_sql("; ".join(pins))


async def own_overrides(session: AsyncSession) -> dict[str, int | None]:
    """The scoped namespace's overrides as its own session reads them (None: not set)."""
    row = (
        await session.execute(
            text(
                f"SELECT {', '.join(OVERRIDES)} FROM ragsage_namespace_settings "
                "WHERE namespace = :namespace"
            ),
            {"namespace": namespace_of(session)},
        )
    ).first()
    if row is None:
        return dict.fromkeys(OVERRIDES)
    return {
        name: None if value is None else int(value)
        for name, value in zip(OVERRIDES, row, strict=True)
    }


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


# Deleted first: an in-flight final write holds its job row's lock, so deleting
# the job rows waits for it to commit (its rows are then seen, and deleted, by
# the statements after), and a write that comes later finds its job gone and
# writes nothing.  Chunks go before the documents they reference, and after
# their generations, so the chunk trigger counts none of the rows it deletes.
_FIRST = ("ragsage_jobs", "ragsage_generations", "ragsage_chunks")
_LAST = ("ragsage_documents",)


async def namespace_tables(owner: AsyncConnection) -> list[str]:
    """Every ragsage table that holds rows by namespace, read from the catalogue.

    A table added later is found here without anyone listing it.
    """
    names = list(
        await owner.scalars(
            text(
                "SELECT c.table_name FROM information_schema.columns c "
                "JOIN information_schema.tables t USING (table_schema, table_name) "
                "WHERE c.table_schema = current_schema() AND c.column_name = 'namespace' "
                "AND t.table_type = 'BASE TABLE' AND c.table_name LIKE 'ragsage\\_%' "
                "ORDER BY c.table_name"
            )
        )
    )
    middle = [name for name in names if name not in _FIRST + _LAST]
    return [*(n for n in _FIRST if n in names), *middle, *(n for n in _LAST if n in names)]


async def delete_namespace_rows(
    owner: AsyncConnection, isolation_variable: str, scope: Scope
) -> dict[str, int]:
    """Delete every row of ``scope``'s namespace in every ragsage table; rows per table.

    One transaction (the caller's): it commits whole or not at all.  The
    namespace is pinned as for a tenant's session, and every statement names it
    too, so a policy that lets the owner see more can never widen a delete.
    Uploads of the namespace wait on the same lock, so none lands half-way.
    """
    await pin_owner(owner, isolation_variable, scope)
    await owner.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": upload_lock_key(scope)},
    )
    removed: dict[str, int] = {}
    for table in await namespace_tables(owner):
        # The name comes from the catalogue, not from a caller.
        result = await owner.execute(
            text(f'DELETE FROM "{table}" WHERE namespace = :namespace'),
            {"namespace": scope.namespace},
        )
        removed[table] = max(0, result.rowcount or 0)
    return removed


def upload_lock_key(scope: Scope) -> str:
    """The advisory lock uploads share and a namespace's deletion takes alone."""
    return f"ragsage-namespace/{scope.namespace}"


async def namespace_rows(
    owner: AsyncConnection, isolation_variable: str, scope: Scope
) -> dict[str, int]:
    """Rows the namespace holds in every ragsage table, read as a deletion would see them."""
    await pin_owner(owner, isolation_variable, scope)
    counts: dict[str, int] = {}
    for table in await namespace_tables(owner):
        counts[table] = int(
            await owner.scalar(
                text(f'SELECT count(*) FROM "{table}" WHERE namespace = :namespace'),
                {"namespace": scope.namespace},
            )
            or 0
        )
    return counts
