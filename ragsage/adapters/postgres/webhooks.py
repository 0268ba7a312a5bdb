"""Webhook endpoints and their deliveries in Postgres (migration 24).

Endpoints, events and deliveries are read and changed in the namespace's own
session; the dispatcher's work across namespaces goes through definer
functions (``sql/functions/claim_webhook_deliveries.sql`` and its neighbours).
Sealed secrets are written here but never read: the app role may not select them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.webhooks import UNCHANGED, Delivery, Webhook

_COLUMNS = (
    "id, url, events, enabled, principals, description, disabled_reason, failing_since, "
    "previous_secret_until, created_at, updated_at"
)
# A delivery of endpoint :id whose event its :principals may not see.
_UNSEEN = (
    "d.namespace = :namespace AND d.webhook_id = :id AND d.state <> 'delivered' "
    "AND e.namespace = d.namespace "
    "AND e.id = d.event_id AND NOT ragsage_webhook_admits(CAST(:principals AS text[]), e.access)"
)


def _webhook(row: Sequence[Any]) -> Webhook:
    return Webhook(
        id=str(row[0]),
        url=row[1],
        events=tuple(row[2]),
        enabled=bool(row[3]),
        principals=None if row[4] is None else tuple(row[4]),
        description=row[5],
        disabled_reason=row[6],
        failing_since=row[7],
        previous_secret_until=row[8],
        created_at=row[9],
        updated_at=row[10],
    )


async def create_webhook(
    session: AsyncSession,
    namespace: str,
    *,
    url: str,
    events: Sequence[str],
    sealed_secret: str,
    principals: Sequence[str] | None,
    description: str,
    enabled: bool,
) -> Webhook:
    row = (
        await session.execute(
            text(
                "INSERT INTO ragsage_webhooks (namespace, id, url, events, enabled, principals, "
                "description, sealed_secret) VALUES (:namespace, :id, :url, :events, :enabled, "
                f":principals, :description, :sealed) RETURNING {_COLUMNS}"
            ),
            {
                "namespace": namespace,
                "id": uuid.uuid4(),
                "url": url,
                "events": list(events),
                "enabled": enabled,
                "principals": None if principals is None else list(principals),
                "description": description,
                "sealed": sealed_secret,
            },
        )
    ).one()
    return _webhook(row)


async def list_webhooks(session: AsyncSession) -> list[Webhook]:
    rows = await session.execute(
        text(
            f"SELECT {_COLUMNS} FROM ragsage_webhooks WHERE namespace = :namespace "
            "ORDER BY created_at, id"
        ),
        {"namespace": namespace_of(session)},
    )
    return [_webhook(row) for row in rows]


async def get_webhook(session: AsyncSession, webhook_id: uuid.UUID) -> Webhook | None:
    row = (
        await session.execute(
            text(
                f"SELECT {_COLUMNS} FROM ragsage_webhooks WHERE namespace = :namespace AND id = :id"
            ),
            {"namespace": namespace_of(session), "id": webhook_id},
        )
    ).first()
    return _webhook(row) if row else None


async def count_webhooks(session: AsyncSession) -> int:
    count = await session.scalar(
        text("SELECT count(*) FROM ragsage_webhooks WHERE namespace = :namespace"),
        {"namespace": namespace_of(session)},
    )
    return int(count or 0)


async def update_webhook(
    session: AsyncSession,
    webhook_id: uuid.UUID,
    *,
    url: str | None = None,
    events: Sequence[str] | None = None,
    enabled: bool | None = None,
    principals: Sequence[str] | None = UNCHANGED,
    description: str | None = None,
) -> Webhook | None:
    """Change what is given; enabling an endpoint clears why the workers disabled it."""
    changes: list[str] = []
    params: dict[str, Any] = {"namespace": namespace_of(session), "id": webhook_id}
    if url is not None:
        changes.append("url = :url")
        params["url"] = url
    if events is not None:
        changes.append("events = :events")
        params["events"] = list(events)
    if enabled is not None:
        changes.append("enabled = :enabled")
        params["enabled"] = enabled
        if enabled:
            changes += ["disabled_reason = NULL", "failing_since = NULL"]
        else:
            # An admin's pause: no reason, so no events are kept for it meanwhile.
            changes.append("disabled_reason = NULL")
    if principals is not UNCHANGED:
        changes.append("principals = :principals")
        params["principals"] = None if principals is None else list(principals)
    if description is not None:
        changes.append("description = :description")
        params["description"] = description
    changes.append("updated_at = now()")
    if principals is not UNCHANGED:
        # An event being published holds the endpoint FOR KEY SHARE, which a plain
        # UPDATE does not wait for: without this lock its delivery, made for the old
        # principals, could commit after the sweep below and never be sent or failed.
        await session.execute(
            text(
                "SELECT 1 FROM ragsage_webhooks WHERE namespace = :namespace AND id = :id "
                "FOR UPDATE"
            ),
            params,
        )
    row = (
        await session.execute(
            text(
                f"UPDATE ragsage_webhooks SET {', '.join(changes)} "
                f"WHERE namespace = :namespace AND id = :id RETURNING {_COLUMNS}"
            ),
            params,
        )
    ).first()
    if row is not None and principals is not UNCHANGED and principals is not None:
        # Waiting events about documents the new principals may not read are not sent.
        await session.execute(
            text(
                "UPDATE ragsage_webhook_deliveries d SET state = 'failed', last_error = "
                "'not sent: the endpoint''s principals no longer admit this document' "
                f"FROM ragsage_webhook_events e WHERE {_UNSEEN}"
            ),
            {"namespace": params["namespace"], "id": webhook_id, "principals": list(principals)},
        )
    return _webhook(row) if row else None


async def delete_webhook(session: AsyncSession, webhook_id: uuid.UUID) -> bool:
    """Delete an endpoint and its deliveries; its events no other endpoint needs go too."""
    # One statement: its parts share one snapshot, in which the endpoint's own
    # deliveries still exist, hence the other endpoints' are asked for by id.
    deleted = (
        await session.execute(
            text(
                "WITH mine AS (DELETE FROM ragsage_webhook_deliveries "
                "WHERE namespace = :namespace AND webhook_id = :id "
                "RETURNING namespace, event_id), "
                "orphans AS (DELETE FROM ragsage_webhook_events e USING "
                "(SELECT DISTINCT namespace, event_id FROM mine) m "
                "WHERE e.namespace = m.namespace AND e.id = m.event_id AND NOT EXISTS ("
                "SELECT 1 FROM ragsage_webhook_deliveries o WHERE o.namespace = e.namespace "
                "AND o.event_id = e.id AND o.webhook_id <> :id)) "
                "DELETE FROM ragsage_webhooks WHERE namespace = :namespace AND id = :id "
                "RETURNING id"
            ),
            {"namespace": namespace_of(session), "id": webhook_id},
        )
    ).first()
    return deleted is not None


async def rotate_secret(
    session: AsyncSession, webhook_id: uuid.UUID, sealed_secret: str, grace: float
) -> bool:
    """Seal in a new secret; the old one keeps signing for ``grace`` seconds."""
    done = await session.scalar(
        text("SELECT ragsage_rotate_webhook_secret(:id, :sealed, :grace)"),
        {"id": webhook_id, "sealed": sealed_secret, "grace": grace},
    )
    return bool(done)


async def list_deliveries(
    session: AsyncSession,
    webhook_id: uuid.UUID,
    *,
    limit: int = 50,
    state: str | None = None,
) -> list[Delivery]:
    """An endpoint's deliveries, newest event first."""
    rows = await session.execute(
        text(
            "SELECT d.event_id, e.type, e.created_at, d.state, d.attempts, "
            "CASE WHEN d.state = 'pending' THEN d.next_attempt_at END, d.last_attempt_at, "
            "d.last_status, d.last_latency_ms, d.last_error "
            "FROM ragsage_webhook_deliveries d JOIN ragsage_webhook_events e "
            "ON e.namespace = d.namespace AND e.id = d.event_id "
            "WHERE d.namespace = :namespace AND d.webhook_id = :id "
            "AND (CAST(:state AS text) IS NULL OR d.state = :state) "
            "ORDER BY d.created_at DESC, d.event_id LIMIT :limit"
        ),
        {"namespace": namespace_of(session), "id": webhook_id, "state": state, "limit": limit},
    )
    return [
        Delivery(
            event_id=str(row[0]),
            event_type=row[1],
            event_created_at=row[2],
            state=row[3],
            attempts=int(row[4]),
            next_attempt_at=row[5],
            last_attempt_at=row[6],
            last_status=row[7],
            last_latency_ms=None if row[8] is None else float(row[8]),
            last_error=row[9],
        )
        for row in rows
    ]


async def replay(
    session: AsyncSession, webhook_id: uuid.UUID, since: datetime | None = None
) -> int:
    """Schedule an endpoint's undelivered events again, from now; how many."""
    # Only what the endpoint may see now: its principals may have narrowed since.
    result = await session.execute(
        text(
            "UPDATE ragsage_webhook_deliveries d SET state = 'pending', attempts = 0, "
            "first_attempt_at = NULL, claimed_until = NULL, "
            "next_attempt_at = clock_timestamp() "
            "FROM ragsage_webhooks w, ragsage_webhook_events e "
            "WHERE d.namespace = :namespace AND d.webhook_id = :id AND d.state = 'failed' "
            "AND w.namespace = d.namespace AND w.id = d.webhook_id "
            "AND e.namespace = d.namespace AND e.id = d.event_id "
            "AND ragsage_webhook_admits(w.principals, e.access) "
            "AND (CAST(:since AS timestamptz) IS NULL OR d.created_at >= :since)"
        ),
        {"namespace": namespace_of(session), "id": webhook_id, "since": since},
    )
    return max(0, int(result.rowcount or 0))  # type: ignore[attr-defined]


# ----------------------------------------------------------------- the dispatcher's doors


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery a dispatcher took to send now, with what sending it needs."""

    namespace: str
    webhook_id: uuid.UUID
    event_id: uuid.UUID
    attempt: int
    first_attempt_at: datetime
    url: str
    sealed_secret: str
    previous_sealed_secret: str | None
    event_type: str
    event_created_at: datetime
    data: dict[str, Any]


async def claim_deliveries(
    system: AsyncSession,
    wanted: int,
    *,
    per_endpoint: int,
    per_namespace: int,
    busy_hooks: Mapping[uuid.UUID, int],
    busy_namespaces: Mapping[str, int],
    lease: float,
) -> list[Claimed]:
    """Due deliveries to send now, beside what the caller already sends (see the SQL)."""
    rows = await system.execute(
        text(
            "SELECT namespace, webhook_id, event_id, attempts, first_attempt_at, url, "
            "sealed_secret, previous_sealed_secret, event_type, event_created_at, data "
            "FROM ragsage_claim_webhook_deliveries(:wanted, :per_endpoint, :per_namespace, "
            "CAST(:hooks AS uuid[]), CAST(:hook_counts AS integer[]), "
            "CAST(:namespaces AS text[]), CAST(:namespace_counts AS integer[]), :lease)"
        ),
        {
            "wanted": wanted,
            "per_endpoint": per_endpoint,
            "per_namespace": per_namespace,
            "hooks": list(busy_hooks),
            "hook_counts": list(busy_hooks.values()),
            "namespaces": list(busy_namespaces),
            "namespace_counts": list(busy_namespaces.values()),
            "lease": lease,
        },
    )
    return [
        Claimed(
            namespace=row[0],
            webhook_id=row[1],
            event_id=row[2],
            attempt=int(row[3]),
            first_attempt_at=row[4],
            url=row[5],
            sealed_secret=row[6],
            previous_sealed_secret=row[7],
            event_type=row[8],
            event_created_at=row[9],
            data=dict(row[10]),
        )
        for row in rows
    ]


async def record_delivery(
    system: AsyncSession,
    claimed: Claimed,
    *,
    outcome: str,
    status: int | None,
    latency_ms: float,
    error: str | None,
    retry_in: float | None,
) -> str:
    """Record one attempt: 'delivered', 'retry', 'failed', 'disabled' or 'stale'."""
    return str(
        await system.scalar(
            text(
                "SELECT ragsage_record_webhook_delivery(:ns, :hook, :event, :attempt, "
                ":outcome, :status, CAST(:latency AS real), :error, :retry_in)"
            ),
            {
                "ns": claimed.namespace,
                "hook": claimed.webhook_id,
                "event": claimed.event_id,
                "attempt": claimed.attempt,
                "outcome": outcome,
                "status": status,
                "latency": latency_ms,
                "error": error,
                "retry_in": retry_in or 0.0,
            },
        )
    )


async def purge_events(
    system: AsyncSession, delivered_keep: float, undelivered_keep: float, batch: int = 5000
) -> int:
    return int(
        await system.scalar(
            text("SELECT ragsage_purge_webhook_events(:delivered, :undelivered, :batch)"),
            {"delivered": delivered_keep, "undelivered": undelivered_keep, "batch": batch},
        )
        or 0
    )


async def backlog(system: AsyncSession) -> tuple[int, float]:
    """Deliveries waiting across every namespace, and the age (s) of the oldest one's event."""
    found = await system.execute(text("SELECT pending, oldest_age FROM ragsage_webhook_backlog()"))
    row = found.one()
    return int(row[0]), float(row[1])
