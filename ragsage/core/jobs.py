"""Job and upload records as the job bookkeeping reads and writes them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from ragsage.core.serialization import iso_or_none


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # A newer upload of the same document was stored first: this version is
    # not written (it would overwrite the newer one) and did not fail.
    SUPERSEDED = "superseded"

    @property
    def finished(self) -> bool:
        return self not in {JobState.QUEUED, JobState.RUNNING}


@dataclass(frozen=True, slots=True)
class Job:
    """One ingestion (or re-index) job of one document version."""

    id: UUID
    namespace: str
    document_id: str
    kind: str
    state: JobState
    stage: str | None
    content_hash: str
    filename: str
    media_type: str | None
    metadata: Mapping[str, Any]
    attempts: int
    deliveries: int
    error: str | None
    timings: Mapping[str, float]
    result: Mapping[str, Any] | None
    lease_expires_at: datetime | None
    enqueued_at: datetime | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    generation: int | None = None
    lost_deliveries: int = 0
    version: int | None = None
    # interactive, bulk or reindex: where it waits among its namespace's jobs.
    job_class: str = "bulk"
    # Items the running stage has done of its total (chunks, while embedding).
    progress: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what the API and the CLI show)."""
        return {
            "id": str(self.id),
            "document_id": self.document_id,
            "kind": self.kind,
            "job_class": self.job_class,
            "state": self.state.value,
            "stage": self.stage,
            "progress": (
                {"done": self.progress[0], "total": self.progress[1]}
                if self.progress and self.state is JobState.RUNNING
                else None
            ),
            "filename": self.filename,
            "content_hash": self.content_hash,
            "attempts": self.attempts,
            "deliveries": self.deliveries,
            "lost_deliveries": self.lost_deliveries,
            "version": self.version,
            "error": self.error,
            "timings_ms": dict(self.timings),
            "result": dict(self.result) if self.result else None,
            "created_at": iso_or_none(self.created_at),
            "updated_at": iso_or_none(self.updated_at),
            "started_at": iso_or_none(self.started_at),
            "finished_at": iso_or_none(self.finished_at),
        }


@dataclass(frozen=True, slots=True)
class Quotas:
    """What one namespace may hold (0: no limit): set by the operator, never by a tenant."""

    documents: int = 0
    bytes: int = 0
    chunks: int = 0
    queued_jobs: int = 0

    def over(self, overrides: Mapping[str, int | None]) -> Quotas:
        """These defaults with a namespace's own values (None keeps the default)."""
        return Quotas(
            **{
                name: value if (value := overrides.get(name)) is not None else getattr(self, name)
                for name in ("documents", "bytes", "chunks", "queued_jobs")
            }
        )

    @property
    def any(self) -> bool:
        return bool(self.documents or self.bytes or self.chunks or self.queued_jobs)


@dataclass(frozen=True, slots=True)
class Upload:
    """A file handed to ragsage for ingestion."""

    filename: str
    data: bytes
    media_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    # Principals who may read the document; None leaves the choice to the uploader's
    # key (its own principals, or open to the namespace), or keeps a stored
    # document's list; an empty list opens it to the whole namespace.
    access: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class UploadOutcome:
    """What an upload became: a new job, or the existing document/job it duplicates."""

    job_id: UUID | None
    document_id: str
    state: JobState
    duplicate: bool
    needs_sending: bool


@dataclass(frozen=True, slots=True)
class WrittenVersion:
    """A document version just written in a job's final transaction: what its job records."""

    summary: dict[str, Any]
    timings: Mapping[str, float]
    warnings: tuple[str, ...] = ()


def result_summary(chunks: int, pages: int, vision_pages: int, cache_hit: bool) -> dict[str, Any]:
    """What a finished ingestion job records as its result."""
    return {
        "chunks": chunks,
        "pages": pages,
        "vision_pages": vision_pages,
        "parse_cache_hit": cache_hit,
    }
