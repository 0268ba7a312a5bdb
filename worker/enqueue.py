"""The enqueue interface for upload services: store, commit, then send.

    from worker.enqueue import enqueue_document
    outcome = enqueue_document("acme", "handbook.pdf", data=pdf_bytes)
    outcome.job_id  # poll with job_status(...)

The bytes, the document row and the job row are committed in one transaction
before the broker hears of the job, so a worker can never receive a job it
cannot read, and a crash between the two is repaired by the watchdog.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from uuid import UUID

from ragsage.errors import InvalidRequest
from ragsage.jobs import store
from ragsage.jobs.records import Job, Upload, UploadOutcome
from ragsage.jobs.uploads import create_upload
from ragsage.types import Scope
from worker import process
from worker.app import settings
from worker.tasks import send_job


def enqueue_document(
    namespace: str,
    filename: str,
    data: bytes | None = None,
    *,
    path: str | Path | None = None,
    media_type: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    external_id: str | None = None,
) -> UploadOutcome:
    """Accept one file for ingestion and return its job (or the document it duplicates)."""
    if (data is None) == (path is None):
        raise InvalidRequest("give exactly one of data or path")
    content = Path(path).read_bytes() if path is not None else data
    assert content is not None
    upload = Upload(
        filename=filename,
        data=content,
        media_type=media_type or mimetypes.guess_type(filename)[0],
        metadata=dict(metadata or {}),
        external_id=external_id,
    )
    here = process.current(settings)
    scope = Scope(namespace)
    outcome = here.loop.run(_record(here, scope, upload))
    if outcome.needs_sending and outcome.job_id is not None:
        send_job(namespace, outcome.job_id)
        here.loop.run(_mark_enqueued(here, scope, outcome.job_id))
    return outcome


async def _record(here: process.ProcessRuntime, scope: Scope, upload: Upload) -> UploadOutcome:
    async with here.runtime.database.session(scope) as session:
        return await create_upload(
            session, scope, upload, max_bytes=here.runtime.settings.max_upload_bytes
        )


async def _mark_enqueued(here: process.ProcessRuntime, scope: Scope, job_id: UUID) -> None:
    async with here.runtime.database.session(scope) as session:
        await store.mark_enqueued(session, job_id)


def job_status(namespace: str, job_id: UUID | str) -> Job | None:
    """The job's current row (state, stage, attempts, error, timings)."""
    here = process.current(settings)
    identifier = UUID(str(job_id))

    async def read() -> Job | None:
        async with here.runtime.database.session(Scope(namespace)) as session:
            return await store.get_job(session, identifier)

    return here.loop.run(read())
