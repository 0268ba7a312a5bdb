"""What the ingestion and re-index jobs share: how a delivery ends, its progress,
the stored bytes it reads and the finish of a job with nothing to do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from uuid import UUID

from ragsage.adapters.postgres.jobs import page_store, reindex, store
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError
from ragsage.core.jobs import Job
from ragsage.core.scopes import Scope
from ragsage.jobs import memory
from ragsage.runtime import Runtime


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


class Progress:
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


async def stored_source(runtime: Runtime, scope: Scope, job: Job, missing: str) -> RawSource:
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


async def finish_skipped(runtime: Runtime, scope: Scope, job: Job, reason: str) -> JobOutcome:
    async with runtime.database.session(scope) as session:
        await store.succeed(session, job.id, timings={}, result={"skipped": reason})
        if job.generation is not None:
            await reindex.try_activate(session, job.generation)
    return JobOutcome(job.id, "succeeded", f"skipped: {reason}")
