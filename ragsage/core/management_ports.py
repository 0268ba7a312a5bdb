"""The ports the management services use: documents and jobs, usage, keys, webhooks.

Every method takes the caller's :class:`~ragsage.core.scopes.Scope`; the
stores read and change only what that scope may see (Row-Level Security in
the Postgres adapter, :mod:`ragsage.adapters.postgres.management`).  Reads
go to the primary, never a replica: a client reads its own upload at once
and never sees a job go back in time (docs/scaling.md, read replicas).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol
from uuid import UUID

from ragsage.core.documents import DocumentRecord
from ragsage.core.jobs import Job, JobState, Quotas
from ragsage.core.keys import Principal, Signer
from ragsage.core.scopes import Scope
from ragsage.core.sealing import Seals
from ragsage.core.webhooks import Delivery, Webhook


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

    async def overrides(self, scope: Scope) -> Mapping[str, int | None]:
        """The namespace's own settings (None: not set), as its own session reads them."""
        ...


class KeyRecords(Protocol):
    """API keys as requests present them: looked up by hash, never stored in the clear."""

    async def authenticate(self, key: str) -> Principal | None:
        """The principal of a live key, or None (one message, on the primary)."""
        ...

    async def find_signer(self, namespace: str, key_id: str, sealer: Seals) -> Signer | None:
        """A live delegate key with its signing secret opened by ``sealer``; else None."""
        ...

    async def rotate_signing_secret(self, scope: Scope, key_id: str, sealer: Seals) -> str | None:
        """A new signing secret for a live delegate key, stored sealed; None if none."""
        ...


@dataclass(frozen=True, slots=True)
class WebhookFields:
    """What a new endpoint is stored with, every field already checked."""

    url: str
    events: Sequence[str]
    sealed_secret: str
    principals: Sequence[str] | None
    description: str
    enabled: bool


class WebhookRecords(Protocol):
    """A namespace's webhook endpoints and their deliveries."""

    async def create(self, scope: Scope, fields: WebhookFields, most: int) -> Webhook | None:
        """The new endpoint; None when the namespace already has ``most`` (counted and
        stored in one transaction, so two creations cannot both pass the limit)."""
        ...

    async def list_webhooks(self, scope: Scope) -> list[Webhook]: ...

    async def get_webhook(self, scope: Scope, webhook_id: UUID) -> Webhook | None: ...

    async def update_webhook(
        self,
        scope: Scope,
        webhook_id: UUID,
        *,
        url: str | None,
        events: Sequence[str] | None,
        enabled: bool | None,
        principals: Sequence[str] | None,
        description: str | None,
    ) -> Webhook | None:
        """Change what is given (``principals`` may be :data:`~ragsage.core.webhooks.UNCHANGED`)."""
        ...

    async def delete_webhook(self, scope: Scope, webhook_id: UUID) -> bool: ...

    async def rotate_secret(
        self, scope: Scope, webhook_id: UUID, sealed_secret: str, grace: float
    ) -> Webhook | None:
        """The endpoint after its new secret is stored; None when there is no such one."""
        ...

    async def list_deliveries(
        self, scope: Scope, webhook_id: UUID, *, limit: int, state: str | None
    ) -> list[Delivery] | None: ...

    async def replay(self, scope: Scope, webhook_id: UUID, since: datetime | None) -> int | None:
        """How many undelivered events are scheduled again; None for no such endpoint."""
        ...


class ReceiverGuard(Protocol):
    """Which URLs may receive a namespace's events."""

    def host_of(self, url: str) -> str:
        """The URL's host; ValueError, saying what is wrong, unless it is a usable URL."""
        ...

    def refusal(self, host: str) -> str | None:
        """Why a literal address may not be a target (a private one, say); None for a
        name, which is judged at each delivery, or an address that may be one."""
        ...
