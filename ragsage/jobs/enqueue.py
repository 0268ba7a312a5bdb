"""The enqueue interface for upload services: store, commit, then send.

    from ragsage.library.enqueue import Enqueuer   # the documented path; it lives here
    enqueuer = Enqueuer(Settings.from_env())
    outcome = enqueuer.enqueue_document("acme", "handbook.pdf", data=pdf_bytes)
    enqueuer.job_status("acme", outcome.job_id)
    enqueuer.enqueue_documents("acme", [Upload("a.md", a_bytes), Upload("b.md", b_bytes)])

The bytes, the document row and the job row are committed in one transaction
before the broker hears of the job, so a worker never receives a job it cannot
read; a crash between the commit and the send is repaired by the watchdog.
"""

from __future__ import annotations

import logging
import mimetypes
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from celery import Celery
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.celery.broker import create_celery, publish
from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.jobs.uploads import check_upload_class, create_upload
from ragsage.core.errors import BrokerUnavailable, InputError, InvalidRequest
from ragsage.core.jobs import Job, JobState, Upload, UploadOutcome
from ragsage.core.scopes import Scope, scope_for
from ragsage.jobs.reindexing import ReindexControls
from ragsage.runtime import build_database
from ragsage.runtime.loop import LoopThread
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
# Single uploads between two looks at whether the job table needs new statistics.
_STATISTICS_EVERY = 16


class Enqueuer:
    """Accepts uploads for one deployment: its database and its broker.

    ``reindex`` holds the re-index controls (start, switch, roll back, status),
    on this enqueuer's database and loop, sending through it.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        celery: Celery | None = None,
        database: Database | None = None,
        loop: LoopThread | None = None,
    ) -> None:
        """Own a database pool and loop, or share a process's (the API passes its own)."""
        self.settings = settings
        self.queue = settings.queue()
        self.celery = celery or create_celery(self.queue)
        self._owns = database is None
        self.database = database or build_database(settings)
        self._loop = loop or LoopThread("ragsage-enqueue")
        self._single_uploads = 0
        self.reindex = ReindexControls(settings, self.database, self._loop, self._send_committed)

    def enqueue_document(
        self,
        namespace: str,
        filename: str,
        data: bytes | None = None,
        *,
        path: str | Path | None = None,
        media_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        external_id: str | None = None,
        job_class: str = "bulk",
        access: Collection[str] | None = None,
        principals: Collection[str] | None = None,
    ) -> UploadOutcome:
        """Accept one file for ingestion; returns its job, or the document it duplicates.

        ``job_class`` is ``bulk`` (the default: a service feeding many files) or
        ``interactive`` (a person waits for this one): a namespace's interactive
        jobs run before its bulk backlog.  Across namespaces, turns are fair
        whatever the class (docs/ingestion.md).

        ``access`` names the principals who may read the document (``[]``: the
        whole namespace; None: a new document is open, or gets ``principals``,
        and a new version keeps its list).  ``principals`` uploads as a key
        bound to them would: the document it replaces must be readable by one
        of them, and ``access`` must be a non-empty subset of them.
        """
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
            access=None if access is None else tuple(access),
        )
        check_upload_class(job_class)
        scope = scope_for(namespace, principals)
        outcome = self._loop.run(self._record(scope, upload, job_class))
        if outcome.needs_sending and outcome.job_id is not None:
            self._send_committed(namespace, [outcome.job_id])
        return outcome

    def enqueue_documents(
        self,
        namespace: str,
        uploads: Iterable[Upload],
        *,
        batch_files: int = 64,
        batch_bytes: int = 64 * 1024 * 1024,
        job_class: str = "bulk",
        principals: Collection[str] | None = None,
    ) -> list[UploadOutcome | InputError]:
        """Accept many files: per batch, one transaction, then the sends, then one update.

        The answer lists, in order, each upload's outcome or, for a file the
        service refuses (empty, too large, a bad name), the error that says
        why; the other files go ahead.  ``uploads`` is read lazily, so a
        folder of any size is held in memory only a batch at a time.
        ``job_class`` and ``principals`` are as for :meth:`enqueue_document`,
        for every file; each :class:`Upload` may carry its own ``access``.
        """
        check_upload_class(job_class)
        scope = scope_for(namespace, principals)
        results: list[UploadOutcome | InputError] = []
        batch: list[Upload] = []
        size = 0
        for upload in uploads:
            batch.append(upload)
            size += len(upload.data)
            if len(batch) >= batch_files or size >= batch_bytes:
                results.extend(self._enqueue_batch(scope, batch, job_class))
                batch, size = [], 0
        if batch:
            results.extend(self._enqueue_batch(scope, batch, job_class))
        return results

    def _enqueue_batch(
        self, scope: Scope, batch: Sequence[Upload], job_class: str
    ) -> list[UploadOutcome | InputError]:
        outcomes = self._loop.run(self._record_many(scope, batch, job_class))
        unsent = [
            outcome.job_id
            for outcome in outcomes
            if isinstance(outcome, UploadOutcome) and outcome.needs_sending and outcome.job_id
        ]
        self._send_committed(scope.namespace, unsent)
        return outcomes

    def _send_committed(
        self,
        namespace: str,
        job_ids: Sequence[UUID],
        kind: str = "ingest",
        countdown: float | None = None,
    ) -> int:
        """Send committed jobs' messages and note those the broker took; returns how many.

        A broker outage is not the upload's failure: the jobs are committed, so
        the rest are left unsent for the watchdog, which sends a job once it has
        waited unsent past the grace period.  Those the broker did take are
        noted even so.
        """
        sent: list[UUID] = []
        try:
            for job_id in job_ids:
                publish(self.celery, self.queue, namespace, job_id, kind=kind, countdown=countdown)
                sent.append(job_id)
        except BrokerUnavailable as exc:
            _log.warning(
                "broker unavailable (%s): %d committed job(s) left for the watchdog to send",
                type(exc.__cause__).__name__,
                len(job_ids) - len(sent),
            )
        if sent:
            self._loop.run(self._mark_enqueued_many(Scope(namespace), sent))
        return len(sent)

    async def _record_many(
        self, scope: Scope, batch: Sequence[Upload], job_class: str
    ) -> list[UploadOutcome | InputError]:
        results: list[UploadOutcome | InputError] = []
        async with self.database.session(scope) as session:
            for upload in batch:
                try:
                    # Refusals (quotas included) are decided before any statement
                    # writes, so they never spoil the shared transaction.
                    results.append(await self._create(session, scope, upload, job_class))
                except InputError as exc:
                    results.append(exc)
        await self.database.refresh_job_statistics()
        return results

    async def _mark_enqueued_many(self, scope: Scope, job_ids: Sequence[UUID]) -> None:
        async with self.database.session(scope) as session:
            await store.mark_enqueued_many(session, job_ids)

    def send(
        self, namespace: str, job_id: UUID, countdown: float | None = None, kind: str = "ingest"
    ) -> bool:
        """Publish a committed job's message and note that the broker has it.

        False when the broker is away: the job stays committed and unsent, and
        the watchdog sends it later.
        """
        return self._send_committed(namespace, [job_id], kind=kind, countdown=countdown) == 1

    def run(self, coroutine: Any) -> Any:
        """Run a coroutine on this enqueuer's loop (its database lives there)."""
        return self._loop.run(coroutine)

    def namespaces(self) -> list[str]:
        """Every namespace with documents (through the privileged listing function)."""

        async def read() -> list[str]:
            async with self.database.system_session() as session:
                return list(await session.scalars(text("SELECT * FROM ragsage_namespaces()")))

        return self._loop.run(read())

    def job_status(self, namespace: str, job_id: UUID | str) -> Job | None:
        """The job's current row (state, stage, attempts, error, timings)."""
        identifier = UUID(str(job_id))

        async def read() -> Job | None:
            async with self.database.session(Scope(namespace)) as session:
                return await store.get_job(session, identifier)

        return self._loop.run(read())

    def close(self) -> None:
        if self._owns:
            self._loop.run(self.database.dispose())
            self._loop.stop()
        self.celery.close()

    async def _record(self, scope: Scope, upload: Upload, job_class: str) -> UploadOutcome:
        async with self.database.session(scope) as session:
            outcome = await self._create(session, scope, upload, job_class)
        # One upload adds one job: looking at the table's growth every few is enough.
        self._single_uploads += 1
        if self._single_uploads % _STATISTICS_EVERY == 1:
            await self.database.refresh_job_statistics()
        return outcome

    async def _create(
        self, session: AsyncSession, scope: Scope, upload: Upload, job_class: str
    ) -> UploadOutcome:
        return await create_upload(
            session,
            scope,
            upload,
            max_bytes=self.settings.max_upload_bytes,
            job_class=job_class,
            quotas=self.settings.quotas(),
        )


_default: Enqueuer | None = None
_guard = threading.Lock()


def default_enqueuer() -> Enqueuer:
    """One enqueuer per process, configured from the environment."""
    global _default
    with _guard:
        if _default is None:
            _default = Enqueuer(Settings.from_env())
        return _default


def enqueue_document(
    namespace: str,
    filename: str,
    data: bytes | None = None,
    *,
    path: str | Path | None = None,
    media_type: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    external_id: str | None = None,
    job_class: str = "bulk",
    access: Collection[str] | None = None,
) -> UploadOutcome:
    """:meth:`Enqueuer.enqueue_document` on the environment's deployment."""
    return default_enqueuer().enqueue_document(
        namespace,
        filename,
        data,
        path=path,
        media_type=media_type,
        metadata=metadata,
        external_id=external_id,
        job_class=job_class,
        access=access,
    )


def job_status(namespace: str, job_id: UUID | str) -> Job | None:
    """:meth:`Enqueuer.job_status` on the environment's deployment."""
    return default_enqueuer().job_status(namespace, job_id)


def enqueue_documents(
    namespace: str, uploads: Iterable[Upload], *, job_class: str = "bulk"
) -> list[UploadOutcome | InputError]:
    """:meth:`Enqueuer.enqueue_documents` on the environment's deployment."""
    return default_enqueuer().enqueue_documents(namespace, uploads, job_class=job_class)


def upload_from_path(
    path: Path, filename: str | None = None, access: Collection[str] | None = None
) -> Upload:
    """An :class:`Upload` of a file's bytes, its type guessed from its name."""
    name = filename or path.name
    return Upload(
        filename=name,
        data=path.read_bytes(),
        media_type=mimetypes.guess_type(name)[0],
        access=None if access is None else tuple(access),
    )


__all__ = [
    "Enqueuer",
    "JobState",
    "Upload",
    "default_enqueuer",
    "enqueue_document",
    "enqueue_documents",
    "job_status",
    "upload_from_path",
]
