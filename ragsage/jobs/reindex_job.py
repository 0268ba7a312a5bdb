"""A re-index job: one document re-embedded into the generation being built."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.document_store import PgDocumentStore
from ragsage.adapters.postgres.generations import live_generations
from ragsage.adapters.postgres.jobs import document_rows, page_store, reindex, store
from ragsage.core.errors import (
    StorageError,
)
from ragsage.core.generations import Generation
from ragsage.core.jobs import Job
from ragsage.core.scopes import Scope
from ragsage.core.tracing import timed_stage
from ragsage.jobs.steps import JobOutcome, LeaseLost, Progress, finish_skipped, stored_source
from ragsage.runtime import Runtime


async def reindex_document(
    runtime: Runtime, scope: Scope, job: Job, progress: Progress
) -> JobOutcome:
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
        return await finish_skipped(runtime, scope, job, "its generation is no longer building")
    if document is None or document.content_hash != job.content_hash:
        # Deleted, or replaced by a newer upload whose own job covers the new version.
        return await finish_skipped(runtime, scope, job, "the document changed or was deleted")
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
        source = await stored_source(
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
    progress: Progress,
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
