"""Documents and their jobs as a caller manages them: pages, access lists, deletion, retries."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Generic, TypeVar
from uuid import UUID

from ragsage.core.documents import DocumentRecord, upload_access
from ragsage.core.errors import Conflict, NotFound
from ragsage.core.jobs import Job, JobState
from ragsage.core.management_ports import DocumentRecords, JobAction, JobRecords
from ragsage.core.scopes import Scope

_Item = TypeVar("_Item")


@dataclass(frozen=True, slots=True)
class Page(Generic[_Item]):
    """One page of a listing, and the cursor of the next (None: this is the last)."""

    items: list[_Item]
    next_cursor: str | None


class Documents:
    """A namespace's documents as the scope's key may see and change them."""

    def __init__(self, records: DocumentRecords) -> None:
        self._records = records

    async def page(
        self, scope: Scope, *, limit: int, after: str | None = None, name: str | None = None
    ) -> Page[DocumentRecord]:
        """Newest first; ``name`` keeps those whose file name or title holds it."""
        found = await self._records.list_documents(scope, limit=limit + 1, after=after, name=name)
        items, more = found[:limit], len(found) > limit
        return Page(items, items[-1].id if more and items else None)

    async def get(self, scope: Scope, document_id: str) -> DocumentRecord:
        record = await self._records.get_document(scope, document_id)
        if record is None:
            raise NotFound(f"no document {document_id!r}")
        return record

    async def change_access(
        self, scope: Scope, document_id: str, access: Collection[str]
    ) -> DocumentRecord:
        """Give the document a new access list, on every chunk and job of it at once.

        A key bound to principals may give only a non-empty list within its own.
        """
        checked = upload_access(scope, access)
        assert checked is not None  # a list was given
        record = await self._records.set_access(scope, document_id, checked)
        if record is None:
            raise NotFound(f"no document {document_id!r}")
        return record

    async def delete(self, scope: Scope, document_id: str) -> None:
        """Delete the document, its chunks, bytes and jobs."""
        if not await self._records.delete_document(scope, document_id):
            raise NotFound(f"no document {document_id!r}")

    async def stored_bytes(self, scope: Scope, record: DocumentRecord) -> bytes:
        """The bytes of a record the caller has read (:meth:`get` first: access decides)."""
        data = await self._records.document_bytes(scope, record)
        if data is None:
            raise NotFound(f"document {record.id!r} has no stored file to draw")
        return data


class Jobs:
    """A namespace's ingestion jobs: listed, read, cancelled and retried."""

    def __init__(self, records: JobRecords) -> None:
        self._records = records

    async def page(
        self,
        scope: Scope,
        *,
        limit: int,
        state: JobState | None = None,
        before: str | None = None,
    ) -> Page[Job]:
        """Newest first; ``before`` is a job id from the page before."""
        cursor = _job_id(before) if before is not None else None
        found = await self._records.list_jobs(scope, state=state, limit=limit + 1, before=cursor)
        items, more = found[:limit], len(found) > limit
        return Page(items, str(items[-1].id) if more and items else None)

    async def get(self, scope: Scope, job_id: str) -> Job:
        job = await self._records.get_job(scope, _job_id(job_id))
        if job is None:
            raise NotFound(f"no job {job_id!r}")
        return job

    async def cancel(self, scope: Scope, job_id: str) -> Job:
        """Cancel a queued or running job."""
        change = await self._records.change_job(scope, _job_id(job_id), JobAction.CANCEL)
        if change is None:
            raise NotFound(f"no job {job_id!r}")
        if change.after is None:
            raise Conflict(f"job {job_id} is already {change.before.state.value}")
        return change.after

    async def retry(self, scope: Scope, job_id: str) -> Job:
        """Put a failed or cancelled job back in the queue's table; the caller sends it."""
        change = await self._records.change_job(scope, _job_id(job_id), JobAction.RETRY)
        if change is None:
            raise NotFound(f"no job {job_id!r}")
        if change.after is None:
            raise Conflict(
                f"job {job_id} is {change.before.state.value}; only failed or cancelled jobs "
                "whose bytes are still stored can be retried"
            )
        return change.after


def _job_id(raw: str) -> UUID:
    """A job id; anything that is not one names no job."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFound(f"no job {raw!r}") from None
