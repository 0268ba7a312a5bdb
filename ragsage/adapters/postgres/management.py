"""The management ports over Postgres: documents, jobs, usage, keys and webhooks.

Reads are one message each on the primary (:class:`ScopedReads`); changes run
in one session pinned to the caller's scope, so Row-Level Security decides
what a key may touch.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from uuid import UUID

from sqlalchemy import text

from ragsage.adapters.postgres import keys, quotas, webhooks
from ragsage.adapters.postgres.database import Database
from ragsage.adapters.postgres.jobs import documents, store
from ragsage.adapters.postgres.namespaces import own_overrides
from ragsage.adapters.postgres.sessions import ScopedReads
from ragsage.core.documents import DocumentRecord
from ragsage.core.jobs import Job, JobState, Quotas
from ragsage.core.keys import Principal, Signer
from ragsage.core.management_ports import JobAction, JobChange, NamespaceUsage, WebhookFields
from ragsage.core.scopes import Scope
from ragsage.core.sealing import Seals
from ragsage.core.webhooks import Delivery, Webhook

_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")
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

    async def overrides(self, scope: Scope) -> Mapping[str, int | None]:
        async with self._database.session(scope) as session:
            return await own_overrides(session)


class PgKeyRecords:
    """API keys, found by their hash; delegate keys' sealed secrets."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def authenticate(self, key: str) -> Principal | None:
        return await keys.authenticate_on(self._database, key)

    async def find_signer(self, namespace: str, key_id: str, sealer: Seals) -> Signer | None:
        return await keys.find_signer_on(self._database, namespace, key_id, sealer)

    async def rotate_signing_secret(self, scope: Scope, key_id: str, sealer: Seals) -> str | None:
        async with self._database.session(scope) as session:
            return await keys.rotate_signing_secret(session, key_id, sealer)


class PgWebhookRecords:
    """Webhook endpoints and their deliveries, through the namespace's own sessions."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def create(self, scope: Scope, fields: WebhookFields, most: int) -> Webhook | None:
        async with self._database.session(scope) as session:
            await session.execute(_LOCK, {"key": f"ragsage-webhooks/{scope.namespace}"})
            if await webhooks.count_webhooks(session) >= most:
                return None
            return await webhooks.create_webhook(
                session,
                scope.namespace,
                url=fields.url,
                events=fields.events,
                sealed_secret=fields.sealed_secret,
                principals=fields.principals,
                description=fields.description,
                enabled=fields.enabled,
            )

    async def list_webhooks(self, scope: Scope) -> list[Webhook]:
        async with self._database.session(scope) as session:
            return await webhooks.list_webhooks(session)

    async def get_webhook(self, scope: Scope, webhook_id: UUID) -> Webhook | None:
        async with self._database.session(scope) as session:
            return await webhooks.get_webhook(session, webhook_id)

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
        async with self._database.session(scope) as session:
            return await webhooks.update_webhook(
                session,
                webhook_id,
                url=url,
                events=events,
                enabled=enabled,
                principals=principals,
                description=description,
            )

    async def delete_webhook(self, scope: Scope, webhook_id: UUID) -> bool:
        async with self._database.session(scope) as session:
            return await webhooks.delete_webhook(session, webhook_id)

    async def rotate_secret(
        self, scope: Scope, webhook_id: UUID, sealed_secret: str, grace: float
    ) -> Webhook | None:
        async with self._database.session(scope) as session:
            if not await webhooks.rotate_secret(session, webhook_id, sealed_secret, grace):
                return None
            return await webhooks.get_webhook(session, webhook_id)

    async def list_deliveries(
        self, scope: Scope, webhook_id: UUID, *, limit: int, state: str | None
    ) -> list[Delivery] | None:
        async with self._database.session(scope) as session:
            if await webhooks.get_webhook(session, webhook_id) is None:
                return None
            return await webhooks.list_deliveries(session, webhook_id, limit=limit, state=state)

    async def replay(self, scope: Scope, webhook_id: UUID, since: datetime | None) -> int | None:
        async with self._database.session(scope) as session:
            if await webhooks.get_webhook(session, webhook_id) is None:
                return None
            return await webhooks.replay(session, webhook_id, since)
