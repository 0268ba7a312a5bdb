"""Running one ingestion job: claim, process under a lease, write once, record the outcome.

The expensive part (parse, vision, chunk, embed) runs outside any transaction
under a lease kept alive from outside the work (:mod:`ragsage.jobs.lease_keeper`)
and a heartbeat that reports the stage and notices cancellation.  The write is one transaction that
locks the job row, replaces the document's chunks, keeps its resolved pages and
marks the job succeeded — so a crash leaves either the old version or the new
one, and a duplicate delivery can never write twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from uuid import UUID

import psycopg
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.observability.logs import bind_log_context, log_context
from ragsage.adapters.postgres.jobs import document_rows, store, turns
from ragsage.adapters.postgres.jobs.final_write import finish_ingestion
from ragsage.core.errors import (
    DocumentError,
    InputError,
    RagsageError,
    client_message,
)
from ragsage.core.generations import EmbeddingModelMismatch
from ragsage.core.jobs import Job, WrittenVersion, result_summary
from ragsage.core.scopes import Scope
from ragsage.jobs.lease_keeper import LeaseHolder
from ragsage.jobs.reindex_job import reindex_document
from ragsage.jobs.steps import JobOutcome, LeaseLost, Progress, stored_source
from ragsage.jobs.versions import write_version
from ragsage.runtime import Runtime

_log = logging.getLogger(__name__)


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: provider hiccups, lost connections, timeouts."""
    if isinstance(exc, EmbeddingModelMismatch):
        return True  # the namespace switched generations mid-job: redo with the new one
    if isinstance(exc, RagsageError):
        return exc.retryable
    if isinstance(exc, DBAPIError):
        return exc.connection_invalidated or isinstance(exc, OperationalError)
    return isinstance(exc, psycopg.OperationalError | ConnectionError | TimeoutError)


def backoff(settings_base: float, attempt: int, ceiling: float) -> float:
    """Exponential backoff with full jitter, so retries from many jobs spread out."""
    return random.uniform(0.5, 1.0) * min(ceiling, settings_base**attempt)


# While a job's stage or its progress changes, the row is updated this often
# (the lease itself only needs the slower heartbeat), so a long job's progress
# moves on a watching page at about this pace.
PROGRESS_EVERY = 2.0


class _Heartbeat:
    """Renews the job's lease and reports its stage until stopped."""

    def __init__(
        self,
        runtime: Runtime,
        scope: Scope,
        job: Job,
        work: asyncio.Task[JobOutcome],
        progress: Progress,
    ) -> None:
        self.runtime, self.scope, self.job, self.work = runtime, scope, job, work
        self.progress = progress
        self.lost = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _beat(self) -> None:
        settings = self.runtime.settings
        sent = self.progress.snapshot()
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(min(settings.job_heartbeat, PROGRESS_EVERY))
            now = self.progress.snapshot()
            if now == sent and time.monotonic() - renewed < settings.job_heartbeat * 0.99:
                continue
            stage, counts = now
            try:
                alive = await store.renew_lease(
                    self.runtime.database,
                    self.scope,
                    self.job.id,
                    self.job.attempts,
                    settings.job_lease,
                    stage,
                    counts,
                )
            except Exception as exc:  # noqa: BLE001 - one missed beat is survivable
                _log.warning("heartbeat for job %s failed: %s", self.job.id, type(exc).__name__)
                continue
            sent, renewed = now, time.monotonic()
            if not alive:
                if await self._finished():
                    return  # this attempt's final write committed first: nothing was lost
                # Cancelled, or the lease expired and another worker took over.
                self.lost = True
                self.work.cancel()
                return

    async def _finished(self) -> bool:
        async with self.runtime.database.session(self.scope) as session:
            return await store.has_finished(session, self.job.id, self.job.attempts)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A job this worker now holds under a lease, in its namespace."""

    scope: Scope
    job: Job


async def claim_next(runtime: Runtime, *, tries: int = 8) -> Claimed | JobOutcome | None:
    """Claim the job whose turn it is, in whichever namespace; None if none can run now.

    A worker's message is a turn, not an order to run the job it names: the
    fair order across namespaces (``ragsage_next_job``) decides.  Another
    worker may claim the chosen job first; the next one is chosen then.  An
    outcome is returned for a job that ended at its claim (superseded, or
    failed as poison).
    """
    settings = runtime.settings
    taken: list[UUID] = []
    for _ in range(tries):
        async with runtime.database.system_session() as system:
            chosen = await turns.next_job(system, settings.job_namespace_slots, taken)
        if chosen is None:
            return None
        namespace, job_id = chosen
        with log_context(namespace=namespace, job_id=str(job_id)):
            claimed = await claim(runtime, Scope(namespace), job_id)
        if isinstance(claimed, Claimed) or claimed.state != "skipped":
            return claimed
        taken.append(job_id)
    return None


async def run_claimed(
    runtime: Runtime, claimed: Claimed, lease: LeaseHolder | None = None
) -> JobOutcome:
    """Run a job claimed by :func:`claim_next` and record its outcome."""
    with log_context(namespace=claimed.scope.namespace, job_id=str(claimed.job.id)):
        return await _run_claimed(runtime, claimed, lease)


async def claim(runtime: Runtime, scope: Scope, job_id: UUID) -> Claimed | JobOutcome:
    """Take the job under a lease, or say why it will not run (``skipped`` if not ours)."""
    settings = runtime.settings
    async with runtime.database.session(scope) as session:
        job = await store.claim(session, job_id, settings.job_lease)
        if job is None:
            current = await store.get_job(session, job_id)
            state = current.state.value if current else "missing"
            return JobOutcome(job_id, "skipped", f"job is {state}; nothing to do")
        if job.kind == "ingest":
            # A newer upload already stored: this version's work would be thrown away.
            stored = await document_rows.stored_version(session, job.document_id)
            if store.is_superseded(job, stored):
                message = await store.supersede(session, job, stored or 0)
                return JobOutcome(job_id, "superseded", message)
        if job.lost_deliveries >= settings.job_max_deliveries:
            # Only deliveries that died count: retries after a recorded transient
            # failure finished, and are bounded by job_max_attempts instead.
            message = (
                f"{job.filename}: gave up after {job.lost_deliveries} deliveries that never "
                "finished (the file may crash the worker)"
            )
            await store.fail(session, job, message)
            return JobOutcome(job_id, "failed", message)
        if job.kind == "ingest":
            await document_rows.mark_processing(session, job.document_id)
    return Claimed(scope, job)


async def _run_claimed(runtime: Runtime, claimed: Claimed, lease: LeaseHolder | None) -> JobOutcome:
    scope, job = claimed.scope, claimed.job
    # Undone with the rest when the caller's log_context exits.
    bind_log_context(document_id=job.document_id, kind=job.kind)
    progress = Progress()
    process = _ingest if job.kind == "ingest" else reindex_document
    if lease is not None:
        lease.hold(scope.namespace, job.id, job.attempts)
    work = asyncio.create_task(process(runtime, scope, job, progress))
    heartbeat = _Heartbeat(runtime, scope, job, work, progress)
    heartbeat.start()
    try:
        outcome = await work
    except asyncio.CancelledError:
        if heartbeat.lost:
            return JobOutcome(job.id, "abandoned", "job was cancelled or taken over")
        raise
    except Exception as exc:
        return await _record_failure(runtime, scope, job, exc)
    finally:
        await heartbeat.stop()
        if lease is not None:
            lease.release(job.id)
    if outcome.state == "succeeded":
        # After the commit, so the new rows count; see storage migration 15.
        await runtime.database.refresh_statistics()
    return outcome


async def _ingest(runtime: Runtime, scope: Scope, job: Job, progress: Progress) -> JobOutcome:
    pipeline = runtime.pipeline(await runtime.embedder_for_scope(scope))
    source = await stored_source(
        runtime, scope, job, "the uploaded bytes are missing (deleted meanwhile?)"
    )
    # Dated by its upload, as the document listing is.
    prepared = await pipeline.prepare(
        scope,
        source,
        document_id=job.document_id,
        created_at=job.created_at,
        on_stage=progress.enter,
        on_progress=progress.advance,
    )
    progress.enter("store")

    async def write(session: AsyncSession) -> WrittenVersion:
        result = await write_version(session, runtime, scope, pipeline, prepared)
        summary = result_summary(
            result.chunks, result.pages, result.vision_pages, result.parse_cache_hit
        )
        if result.warnings:
            summary["warnings"] = list(result.warnings)
        return WrittenVersion(summary, result.timing_ms, tuple(result.warnings))

    done = await finish_ingestion(
        runtime.database,
        scope,
        job,
        quota_defaults=runtime.settings.quotas(),
        adding=len(prepared.records),
        write=write,
    )
    if done.lease_lost:
        raise LeaseLost(str(job.id))
    if done.superseded is not None:
        return JobOutcome(job.id, "superseded", done.superseded)
    assert done.written is not None
    return JobOutcome(
        job.id,
        "succeeded",
        f"{done.written.summary['chunks']} chunks",
        follow_up=done.follow_up,
        timings=dict(done.written.timings),
    )


async def _record_failure(runtime: Runtime, scope: Scope, job: Job, exc: Exception) -> JobOutcome:
    settings = runtime.settings
    if isinstance(exc, LeaseLost):
        return JobOutcome(job.id, "abandoned", "job was cancelled or taken over before the write")
    if isinstance(exc, InputError):
        message = str(exc)
        if not isinstance(exc, DocumentError):
            message = f"{job.filename}: {message}"
        outcome = JobOutcome(job.id, "failed", message)
    elif is_transient(exc) and job.attempts < settings.job_max_attempts:
        delay = backoff(settings.job_retry_backoff, job.attempts, settings.job_retry_backoff_max)
        message = f"attempt {job.attempts} failed ({_describe(exc)}); retrying in {delay:.1f}s"
        _log.warning("job %s: %s", job.id, message)
        try:
            async with runtime.database.session(scope) as session:
                await store.requeue(session, job.id, message, retry_in=delay)
        except Exception:  # noqa: BLE001 - the lease will expire and the watchdog retries
            _log.warning("job %s: could not record the retry; the watchdog will", job.id)
        return JobOutcome(job.id, "retry", message, retry_in=delay, attempts=job.attempts)
    elif is_transient(exc):
        outcome = JobOutcome(
            job.id,
            "failed",
            f"{job.filename}: gave up after {job.attempts} attempts: {_describe(exc)}",
        )
    elif (shown := client_message(exc)) is not None:
        # A provider refusing an input, a misconfiguration: said as it is.
        outcome = JobOutcome(job.id, "failed", f"{job.filename}: {shown}")
    else:
        _log.exception("job %s failed unexpectedly", job.id)
        outcome = JobOutcome(
            job.id, "failed", f"{job.filename}: internal error ({type(exc).__name__})"
        )
    async with runtime.database.session(scope) as session:
        await store.fail(session, job, outcome.message)
    return outcome


def _describe(exc: BaseException) -> str:
    shown = client_message(exc)
    return shown if shown is not None else type(exc).__name__
