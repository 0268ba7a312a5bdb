"""The storage ports the management services use: documents and jobs, and usage.

Every method takes the caller's :class:`~ragsage.core.types.Scope`; the
stores read and change only what that scope may see (Row-Level Security in
the Postgres adapter, :mod:`ragsage.adapters.postgres.management`).  Reads
go to the primary, never a replica: a client reads its own upload at once
and never sees a job go back in time (docs/scaling.md, read replicas).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol
from uuid import UUID

from ragsage.core.documents import DocumentRecord
from ragsage.core.jobs import Job, JobState, Quotas
from ragsage.core.types import Scope


class JobAction(StrEnum):
    """What a caller may ask of one job."""

    CANCEL = "cancel"
    RETRY = "retry"


@dataclass(frozen=True, slots=True)
class JobChange:
    """A job before an action, and after it (None when the job's state refused it)."""

    before: Job
    after: Job | None


@dataclass(frozen=True, slots=True)
class NamespaceUsage:
    """What a namespace holds now, its own overrides, and the quotas that follow."""

    held: Mapping[str, int]
    overrides: Mapping[str, int | None]
    quotas: Quotas


class DocumentRecords(Protocol):
    """Every upload's record, whatever its ingestion status, and its stored bytes."""

    async def list_documents(
        self, scope: Scope, *, limit: int, after: str | None, name: str | None
    ) -> list[DocumentRecord]: ...

    async def get_document(self, scope: Scope, document_id: str) -> DocumentRecord | None: ...

    async def set_access(
        self, scope: Scope, document_id: str, access: Collection[str]
    ) -> DocumentRecord | None:
        """The record with its new list, or None when the scope holds no such document."""
        ...

    async def delete_document(self, scope: Scope, document_id: str) -> bool: ...

    async def document_bytes(self, scope: Scope, record: DocumentRecord) -> bytes | None:
        """The stored bytes of a record the caller has read; None when gone."""
        ...


class JobRecords(Protocol):
    """Ingestion jobs as callers see and steer them."""

    async def list_jobs(
        self, scope: Scope, *, state: JobState | None, limit: int, before: UUID | None
    ) -> list[Job]: ...

    async def get_job(self, scope: Scope, job_id: UUID) -> Job | None: ...

    async def change_job(self, scope: Scope, job_id: UUID, action: JobAction) -> JobChange | None:
        """The job before and after ``action``, in one transaction; None when absent."""
        ...


class UsageRecords(Protocol):
    """A namespace's holdings and its own quota overrides."""

    async def usage(self, scope: Scope, defaults: Quotas) -> NamespaceUsage: ...
