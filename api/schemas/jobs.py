"""The bodies of ingestion jobs (:mod:`api.routes.jobs`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel


class JobProgress(BaseModel):
    """How far a running job's stage has got: chunks embedded of the document's total."""

    done: int
    total: int


class JobOut(BaseModel):
    id: str
    document_id: str
    kind: str
    job_class: Literal["interactive", "bulk", "reindex"]
    state: Literal["queued", "running", "succeeded", "failed", "cancelled", "superseded"]
    stage: str | None
    progress: JobProgress | None
    filename: str
    content_hash: str
    attempts: int
    deliveries: int
    lost_deliveries: int
    version: int | None
    error: str | None
    timings_ms: dict[str, float]
    result: dict[str, Any] | None
    created_at: datetime | None
    updated_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None


class JobList(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None
