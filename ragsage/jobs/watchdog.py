"""Finding jobs whose worker died or whose message never reached the broker.

Runs periodically in every worker.  One round has one owner: the advisory lock
is taken in a transaction that stays open until every stale job of the round
has been re-queued, sent and marked sent, so two watchdogs never work at once.
Listing stale jobs crosses namespaces, so it goes through the privileged
``ragsage_stale_jobs`` function; each job is then re-queued inside its own
namespace's scoped session, re-checking that it is still stale — and the
re-queue itself leaves the job fresh for the unsent grace, so even a second
round that somehow ran would not send it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from ragsage.adapters.postgres.jobs import stale, store
from ragsage.core.scopes import Scope
from ragsage.runtime import Runtime

_log = logging.getLogger(__name__)

# (namespace, job id, kind): publish the job's message as a recovered one.
Send = Callable[[str, UUID, str], None]


@dataclass(frozen=True, slots=True)
class Reclaimed:
    """A stale job put back to ``queued``, to be sent once."""

    kind: str
    attempts: int


async def run_round(
    runtime: Runtime, send: Send, *, requeue_after: float | None = None
) -> int | None:
    """Re-queue, send and mark every stale job; how many, or None if another round runs.

    ``send`` is called off the event loop (a broker publish blocks).  A job
    whose send fails stays queued and unsent; the next round sends it.  A job
    sent but never started is sent again after ``requeue_after`` seconds
    (``job_requeue_after`` unless given: the caller shortens it when the broker's
    queues are empty, so such a job's message must have been lost).
    """
    settings = runtime.settings
    requeue = settings.job_requeue_after if requeue_after is None else requeue_after
    async with runtime.database.system_session() as owner:
        if not await stale.lock_round(owner):
            return None
        sent = 0
        for namespace, job_id in await stale.stale_jobs(owner, settings.job_unsent_grace, requeue):
            reclaimed = await reclaim(runtime, namespace, job_id, requeue)
            if reclaimed is None:
                continue
            try:
                await asyncio.to_thread(send, namespace, job_id, reclaimed.kind)
            except Exception as exc:  # noqa: BLE001 - left unsent; the next round retries
                _log.warning("could not send job %s: %s", job_id, type(exc).__name__)
                continue
            async with runtime.database.session(Scope(namespace)) as session:
                await store.mark_enqueued(session, job_id, attempts=reclaimed.attempts)
            sent += 1
        return sent


async def reclaim(
    runtime: Runtime, namespace: str, job_id: UUID, requeue_after: float | None = None
) -> Reclaimed | None:
    """Put a stale job back to ``queued`` and unsent; None if it is no longer stale."""
    settings = runtime.settings
    after = settings.job_requeue_after if requeue_after is None else requeue_after
    async with runtime.database.session(Scope(namespace)) as session:
        row = await stale.requeue_if_stale(session, job_id, settings.job_unsent_grace, after)
    if row is None:
        return None
    _log.warning(
        "re-queueing job %s of namespace %s: its worker stopped or its message was lost",
        job_id,
        namespace,
    )
    kind, attempts = row
    return Reclaimed(kind=kind, attempts=attempts)
