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
from collections.abc import Mapping
from dataclasses import dataclass, field
from uuid import UUID

import psycopg
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.observability.logs import bind_log_context, log_context
from ragsage.adapters.postgres import quotas
from ragsage.adapters.postgres.document_store import PgDocumentStore
from ragsage.adapters.postgres.generations import live_generations
from ragsage.adapters.postgres.jobs import document_rows, page_store, reindex, store, turns
from ragsage.core.documents import RawSource
from ragsage.core.errors import (
    DocumentError,
    InputError,
    RagsageError,
    StorageError,
    client_message,
)
from ragsage.core.generations import EmbeddingModelMismatch, Generation
from ragsage.core.jobs import Job, result_summary
from ragsage.core.scopes import Scope
from ragsage.core.tracing import timed_stage
from ragsage.jobs import memory
from ragsage.jobs.lease_keeper import LeaseHolder
from ragsage.jobs.versions import write_version
from ragsage.runtime import Runtime

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What one delivery of a job did.

    ``retry_in`` is set when it must run again (``attempts`` is then the job's
    attempt count, which marking the retry sent matches); ``follow_up`` lists
    jobs this one committed that must now be sent (an upload during a re-index
    also needs a re-index job for the building generation).  ``timings`` holds the stage
    durations (``parse_ms``, ...) of a delivery that succeeded.
    """

    job_id: UUID
    state: str
    message: str = ""
    retry_in: float | None = None
    follow_up: tuple[UUID, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    attempts: int | None = None


class LeaseLost(Exception):
    """The job was cancelled or handed to another worker while this one ran it."""


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


class _Progress:
    """The stage a job is in and how far it has got; the heartbeat carries both to the job row."""

    def __init__(self) -> None:
        self.stage: str | None = None
        self.counts: tuple[int, int] | None = None

    def enter(self, stage: str) -> None:
        self.stage, self.counts = stage, None

    def advance(self, done: int, total: int) -> None:
        self.counts = (done, total)

    def snapshot(self) -> tuple[str | None, tuple[int, int] | None]:
        return self.stage, self.counts


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
        progress: _Progress,
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
    progress = _Progress()
    process = _ingest if job.kind == "ingest" else _reindex
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


async def _ingest(runtime: Runtime, scope: Scope, job: Job, progress: _Progress) -> JobOutcome:
    pipeline = runtime.pipeline(await runtime.embedder_for_scope(scope))
    source = await _stored_source(
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
    async with runtime.database.session(scope) as session:
        if not await store.lock_running(session, job.id, job.attempts):
            raise LeaseLost(str(job.id))
        # The document row's lock serialises writers of its chunks; under it the
        # stored version says whether a newer upload got there first.
        stored = await document_rows.stored_version(session, job.document_id, lock=True)
        if store.is_superseded(job, stored):
            message = await store.supersede(session, job, stored or 0)
            return JobOutcome(job.id, "superseded", message)
        limits = await quotas.namespace_quotas(session, runtime.settings.quotas())
        await quotas.check_chunks(
            session,
            limits,
            document_id=job.document_id,
            filename=job.filename,
            adding=len(prepared.records),
        )
        previous = await document_rows.current_hash(session, job.document_id)
        result = await write_version(session, runtime, scope, pipeline, prepared)
        await document_rows.finish_document(session, job, previous, warnings=result.warnings)
        summary = result_summary(
            result.chunks, result.pages, result.vision_pages, result.parse_cache_hit
        )
        if result.warnings:
            summary["warnings"] = list(result.warnings)
        await store.succeed(session, job.id, timings=result.timing_ms, result=summary)
        queued = await reindex.queue_for_building(
            session,
            scope,
            document_id=job.document_id,
            content_hash=job.content_hash,
            filename=job.filename,
            media_type=job.media_type,
            metadata=dict(job.metadata),
        )
        follow_up = (queued,) if queued is not None else ()
    return JobOutcome(
        job.id,
        "succeeded",
        f"{result.chunks} chunks",
        follow_up=follow_up,
        timings=dict(result.timing_ms),
    )


async def _reindex(runtime: Runtime, scope: Scope, job: Job, progress: _Progress) -> JobOutcome:
    """Re-embed one document into a building generation, re-chunking only when needed.

    When the active generation's rows of the document were cut with the
    settings this worker has (storage migration 26), only their texts are
    embedded again and the rows copied with the new vectors; otherwise the
    document is chunked again from its stored pages.
    """
    async with runtime.database.session(scope) as session:
        live = await live_generations(session)
        target = next((g for g in live if g.id == job.generation), None)
        active = next((g for g in live if g.state == "active"), None)
        document = await PgDocumentStore(session).get(scope, job.document_id)
        kept = None
        if active is not None:
            fingerprint = runtime.chunking_fingerprint()
            kept = await reindex.kept_chunks(session, active.id, job.document_id, fingerprint)
        # A scan skipped when no transcriber was configured is stored as an empty
        # page; now that one is, the document is read again from its bytes.
        skipped = []
        if runtime.can_transcribe:
            skipped = await page_store.skipped_scan_numbers(session, job.content_hash)
        reread = bool(skipped)
        chunk_again = kept is None and not reread
        pages = await page_store.load_pages(session, job.content_hash) if chunk_again else []
    if target is None or target.state != "building":
        return await _finish_skipped(runtime, scope, job, "its generation is no longer building")
    if document is None or document.content_hash != job.content_hash:
        # Deleted, or replaced by a newer upload whose own job covers the new version.
        return await _finish_skipped(runtime, scope, job, "the document changed or was deleted")
    if kept is not None and active is not None and not reread:
        return await _reembed_kept(runtime, scope, job, target, active.id, kept, progress)
    embedder = runtime.embedder_for(target.embedder, target.embedding_model, target.embedding_dim)
    pipeline = runtime.pipeline(embedder)
    if pages and not reread:
        prepared = await pipeline.prepare_from_pages(
            scope, document, pages, on_stage=progress.enter, on_progress=progress.advance
        )
    else:
        # Ingested before pages were kept: fall back to the stored bytes (the
        # parse cache, then a parse), paying for vision only where unavoidable.
        source = await _stored_source(
            runtime, scope, job, "neither resolved pages nor the bytes are stored"
        )
        prepared = await pipeline.prepare(
            scope,
            source,
            document_id=job.document_id,
            created_at=document.created_at,
            on_stage=progress.enter,
            on_progress=progress.advance,
        )
    progress.enter("store")
    async with runtime.database.session(scope) as session:
        changed = await _changed_meanwhile(session, job, target)
        if changed is not None:
            return changed
        vectors, _, _ = runtime.stores(session, embedder=embedder)
        await vectors.upsert(scope, prepared.records)
        if reread:
            await page_store.save_pages(session, scope.namespace, job.content_hash, prepared.pages)
        summary: dict[str, object] = {
            "chunks": len(prepared.records),
            "pages_from": "bytes" if reread or not pages else "stored",
        }
        if reread:
            summary["pages_read_again"] = skipped
        return await _built(
            session, job, target, f"{len(prepared.records)} chunks", summary, prepared.timing_ms
        )


async def _changed_meanwhile(
    session: AsyncSession, job: Job, target: Generation
) -> JobOutcome | None:
    """Under the document's lock: the finished outcome if the job must not write now."""
    if not await store.lock_running(session, job.id, job.attempts):
        raise LeaseLost(str(job.id))
    if await document_rows.current_hash(session, job.document_id, lock=True) != job.content_hash:
        # Replaced while this ran; the newer version's own job fills the generation.
        await store.succeed(session, job.id, timings={}, result={"skipped": "the document changed"})
        await reindex.try_activate(session, target.id)
        return JobOutcome(job.id, "succeeded", "skipped: the document changed")
    return None


class _KeptRowsMoved(StorageError):
    """The kept rows changed between their read and their copy; a retry reads them again."""

    retryable = True


async def _reembed_kept(
    runtime: Runtime,
    scope: Scope,
    job: Job,
    target: Generation,
    source: int,
    kept: list[tuple[int, str]],
    progress: _Progress,
) -> JobOutcome:
    """Embed the kept texts with the target's model and copy the rows with the vectors."""
    embedder = runtime.embedder_for(target.embedder, target.embedding_model, target.embedding_dim)
    pipeline = runtime.pipeline(embedder)
    vectors, timings = await pipeline.embed_kept(
        scope, [text for _, text in kept], on_stage=progress.enter, on_progress=progress.advance
    )
    progress.enter("store")
    async with runtime.database.session(scope) as session:
        changed = await _changed_meanwhile(session, job, target)
        if changed is not None:
            return changed
        store_vectors, _, _ = runtime.stores(session, embedder=embedder)
        with (
            runtime.tracer.span("store", tenant=scope.namespace) as root,
            timed_stage(root, timings, "store_ms", "store", cpu_key="store_cpu_ms"),
        ):
            written = await store_vectors.copy_with_vectors(
                scope,
                job.document_id,
                source,
                [(ordinal, vector) for (ordinal, _), vector in zip(kept, vectors, strict=True)],
            )
        if written != len(kept):
            raise _KeptRowsMoved(
                f"{job.filename}: {written} of {len(kept)} kept chunks were found to copy"
            )
        summary: dict[str, object] = {
            "chunks": written,
            "pages_from": "stored",
            "chunks_from": f"generation {source}",
        }
        return await _built(session, job, target, f"{written} chunks re-embedded", summary, timings)


async def _built(
    session: AsyncSession,
    job: Job,
    target: Generation,
    what: str,
    summary: dict[str, object],
    timings: Mapping[str, float],
) -> JobOutcome:
    """Record a re-index job's success and switch generations if it was the last."""
    await store.succeed(session, job.id, timings=dict(timings), result=summary)
    switched = await reindex.try_activate(session, target.id)
    note = "; the new generation is now active" if switched else ""
    return JobOutcome(job.id, "succeeded", f"{what}{note}", timings=dict(timings))


async def _stored_source(runtime: Runtime, scope: Scope, job: Job, missing: str) -> RawSource:
    """The job's document version as uploaded, from the blob table."""
    async with runtime.database.session(scope) as session:
        data = await page_store.load_blob(session, job.content_hash)
    if data is None:
        raise DocumentError(job.filename, missing)
    source = RawSource(
        content=data, filename=job.filename, media_type=job.media_type, metadata=job.metadata
    )
    # Refused now, on its first delivery, rather than grown into and killed.
    memory.check_fits(source, runtime.settings.job_memory_limit, memory.resident_bytes())
    return source


async def _finish_skipped(runtime: Runtime, scope: Scope, job: Job, reason: str) -> JobOutcome:
    async with runtime.database.session(scope) as session:
        await store.succeed(session, job.id, timings={}, result={"skipped": reason})
        if job.generation is not None:
            await reindex.try_activate(session, job.generation)
    return JobOutcome(job.id, "succeeded", f"skipped: {reason}")


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
