"""The management ports over Postgres: documents, jobs and usage of one scope.

Reads are one message each on the primary (:class:`ScopedReads`); changes run
in one session pinned to the caller's scope, so Row-Level Security decides
what a key may touch.
"""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from ragsage.adapters.postgres import quotas
from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.jobs import documents, store
from ragsage.adapters.postgres.namespaces import own_overrides
from ragsage.adapters.postgres.sessions import ScopedReads
from ragsage.core.documents import DocumentRecord
from ragsage.core.jobs import Job, JobState, Quotas
from ragsage.core.management_ports import JobAction, JobChange, NamespaceUsage
from ragsage.core.types import Scope

_CHANGES = {JobAction.CANCEL: documents.cancel_job, JobAction.RETRY: documents.retry_job}


class PgDocumentRecords:
    """Documents' records, access lists and stored bytes."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def list_documents(
        self, scope: Scope, *, limit: int, after: str | None, name: str | None
    ) -> list[DocumentRecord]:
        reads = ScopedReads(self._database, scope)
        return await documents.list_documents(reads, limit=limit, after=after, name=name)

    async def get_document(self, scope: Scope, document_id: str) -> DocumentRecord | None:
        return await documents.get_document(ScopedReads(self._database, scope), document_id)

    async def set_access(
        self, scope: Scope, document_id: str, access: Collection[str]
    ) -> DocumentRecord | None:
        async with self._database.session(scope) as session:
            if not await documents.set_access(session, document_id, access):
                return None
            return await documents.get_document(session, document_id)

    async def delete_document(self, scope: Scope, document_id: str) -> bool:
        async with self._database.session(scope) as session:
            return await documents.delete_document(session, document_id)

    async def document_bytes(self, scope: Scope, record: DocumentRecord) -> bytes | None:
        return await documents.document_bytes(self._database, scope, record)


class PgJobRecords:
    """Ingestion jobs, read and steered."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def list_jobs(
        self, scope: Scope, *, state: JobState | None, limit: int, before: UUID | None
    ) -> list[Job]:
        reads = ScopedReads(self._database, scope)
        return await store.list_jobs(reads, state=state, limit=limit, before=before)

    async def get_job(self, scope: Scope, job_id: UUID) -> Job | None:
        return await store.get_job(ScopedReads(self._database, scope), job_id)

    async def change_job(self, scope: Scope, job_id: UUID, action: JobAction) -> JobChange | None:
        async with self._database.session(scope) as session:
            before = await store.get_job(session, job_id)
            if before is None:
                return None
            if not await _CHANGES[action](session, job_id):
                return JobChange(before, None)
            return JobChange(before, await store.get_job(session, job_id))


class PgUsageRecords:
    """A namespace's holdings and overrides, read in one session."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def usage(self, scope: Scope, defaults: Quotas) -> NamespaceUsage:
        async with self._database.session(scope) as session:
            held = await quotas.usage(session)
            overrides = await own_overrides(session)
            limits = await quotas.namespace_quotas(session, defaults)
        return NamespaceUsage(held, overrides, limits)
