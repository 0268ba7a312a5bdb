"""The upload path: store the bytes, the document and a job in one transaction.

The caller sends the job's message only after this commits (so a message never
names a job the database does not hold), and
then calls :func:`~ragsage.adapters.postgres.jobs.store.mark_enqueued`.  If the process dies in
between, the job sits ``queued`` with no ``enqueued_at`` and the watchdog sends
it, so an accepted upload is never lost.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.jobs import store
from ragsage.adapters.postgres.jobs.documents import copy_access, set_access
from ragsage.adapters.postgres.namespaces import upload_lock_key
from ragsage.adapters.postgres.quotas import check_upload, namespace_quotas
from ragsage.adapters.postgres.sessions import namespace_of
from ragsage.core.documents import upload_access
from ragsage.core.errors import Conflict, EmptyDocument, InvalidRequest, UploadTooLarge
from ragsage.core.identity import content_hash, document_id_for
from ragsage.core.jobs import JobState, Quotas, Upload, UploadOutcome
from ragsage.core.scopes import Scope
from ragsage.core.text import clean

MAX_FILENAME = 255


def validate(upload: Upload, max_bytes: int) -> None:
    """Refuse an upload that can never ingest, before anything is stored."""
    name = upload.filename
    if not name or len(name) > MAX_FILENAME or any(ord(ch) < 0x20 for ch in name):
        raise InvalidRequest(
            f"the file name must be 1-{MAX_FILENAME} characters without control characters"
        )
    if upload.external_id is not None and not 1 <= len(upload.external_id) <= 512:
        raise InvalidRequest("external_id must be 1-512 characters")
    if not upload.data:
        raise EmptyDocument(name, "the file is empty (0 bytes)")
    if len(upload.data) > max_bytes:
        raise UploadTooLarge(
            f"{name}: {len(upload.data):,} bytes is over the upload limit of {max_bytes:,} bytes"
        )


UPLOAD_CLASSES = ("interactive", "bulk")


def check_upload_class(job_class: str) -> str:
    """The class an upload's job waits in; anything but interactive or bulk is refused."""
    if job_class not in UPLOAD_CLASSES:
        raise InvalidRequest(
            f"job_class must be one of {', '.join(UPLOAD_CLASSES)}; got {job_class!r}"
        )
    return job_class


async def create_upload(
    session: AsyncSession,
    scope: Scope,
    upload: Upload,
    *,
    max_bytes: int,
    job_class: str = "bulk",
    quotas: Quotas | None = None,
) -> UploadOutcome:
    """Record ``upload`` and its job, or point at the document it duplicates.

    ``job_class`` places the job among its namespace's waiting work:
    ``interactive`` (one file a person is waiting for) runs before the
    namespace's ``bulk`` backlog.  ``quotas`` are the deployment's; the
    namespace's own overrides are read here, and an upload over one is refused
    (:class:`~ragsage.core.errors.QuotaExceeded`) before anything is stored.

    Identical bytes already in the namespace are not ingested again: the
    existing document (and its job, if one is still open) is returned.  If the
    last attempt at those bytes failed or was cancelled, a new job retries them.
    """
    upload = replace(
        upload,
        filename=clean(upload.filename),
        external_id=clean(upload.external_id) if upload.external_id is not None else None,
        metadata=_clean_metadata(upload.metadata),
        media_type=clean(upload.media_type) if upload.media_type else None,
    )
    validate(upload, max_bytes)
    check_upload_class(job_class)
    digest = content_hash(upload.data)
    external_id = upload.external_id or upload.filename
    # A document stored before ids included the namespace keeps the id it has.
    stored = await session.scalar(
        text(
            "SELECT id FROM ragsage_documents "
            "WHERE namespace = :namespace AND external_id = :external_id"
        ),
        {"namespace": scope.namespace, "external_id": external_id},
    )
    document_id = (
        str(stored) if stored is not None else document_id_for(scope.namespace, external_id)
    )
    # Shared with every other upload; a deletion of the namespace takes it alone,
    # so no upload lands in a namespace being erased.
    await session.execute(
        text("SELECT pg_advisory_xact_lock_shared(hashtextextended(:key, 0))"),
        {"key": upload_lock_key(scope)},
    )
    # Two uploads of the same bytes at once must not both become new work.
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"{scope.namespace}/{digest}"},
    )
    access = upload_access(scope, upload.access)
    if scope.bound:
        await _check_not_hidden(session, document_id, external_id)
    duplicate = await _duplicate(session, digest, document_id)
    # Bytes another document holds are that document's; an upload naming a list
    # for this one makes it a document of its own rather than change the other's.
    if duplicate is not None and (access is None or duplicate.document_id == document_id):
        if access is not None:
            await set_access(session, document_id, access)
        return duplicate
    limits = await namespace_quotas(session, quotas or Quotas())
    await check_upload(
        session,
        scope,
        limits,
        document_id=document_id,
        external_id=external_id,
        size=len(upload.data),
    )

    await session.execute(
        text(
            "INSERT INTO ragsage_blobs (namespace, content_hash, data, size_bytes) "
            "VALUES (:namespace, :hash, :data, :size) ON CONFLICT DO NOTHING"
        ),
        {
            "namespace": scope.namespace,
            "hash": digest,
            "data": upload.data,
            "size": len(upload.data),
        },
    )
    # A new document starts "queued"; an ingested one keeps serving its current
    # version until the new version's job succeeds.  The row lock this takes
    # orders concurrent uploads of the document, so the version numbers follow
    # the order in which they commit.
    version = await session.scalar(
        text(
            "INSERT INTO ragsage_documents (namespace, id, external_id, content_hash, title, "
            "source, filename, media_type, size_bytes, metadata, status, upload_version, access) "
            "VALUES (:namespace, :id, :external_id, :hash, :filename, :filename, :filename, "
            ":media_type, :size, :metadata, 'queued', 1, "
            "coalesce(CAST(:access AS text[]), CAST(:default_access AS text[]))) "
            "ON CONFLICT (namespace, id) DO UPDATE SET "
            # A new version keeps the document's list unless the upload names one.
            "access = coalesce(CAST(:access AS text[]), ragsage_documents.access), "
            "content_hash = CASE WHEN ragsage_documents.status = 'ready' "
            "THEN ragsage_documents.content_hash ELSE excluded.content_hash END, "
            "status = CASE WHEN ragsage_documents.status = 'ready' THEN 'ready' ELSE 'queued' END, "
            "upload_version = ragsage_documents.upload_version + 1, "
            "error = NULL, updated_at = now() RETURNING upload_version"
        ),
        {
            "namespace": scope.namespace,
            "id": document_id,
            "external_id": external_id,
            "hash": digest,
            "filename": upload.filename,
            "media_type": upload.media_type,
            "size": len(upload.data),
            "metadata": Jsonb(dict(upload.metadata)),
            "access": None if access is None else sorted(access),
            "default_access": sorted(scope.principals or ()),
        },
    )
    if access is not None:
        # The row above holds the list now; the stored version's chunks and jobs follow.
        await copy_access(session, document_id, access)
    job_id = uuid.uuid4()
    await store.insert_job(
        session,
        job_id=job_id,
        namespace=scope.namespace,
        document_id=document_id,
        kind="ingest",
        content_hash=digest,
        filename=upload.filename,
        media_type=upload.media_type,
        metadata=upload.metadata,
        version=int(version),
        job_class=job_class,
    )
    return UploadOutcome(job_id, document_id, JobState.QUEUED, duplicate=False, needs_sending=True)


async def _check_not_hidden(session: AsyncSession, document_id: str, external_id: str) -> None:
    """Refuse a bound key's upload that would replace a document it cannot read."""
    row = (
        await session.execute(
            text(
                "SELECT ragsage_document_taken(:id, :external_id), EXISTS (SELECT 1 FROM "
                "ragsage_documents d WHERE d.namespace = :namespace "
                "AND (d.id = :id OR d.external_id = :external_id))"
            ),
            {"namespace": namespace_of(session), "id": document_id, "external_id": external_id},
        )
    ).one()
    if row[0] and not row[1]:
        raise Conflict(
            "external_id names a document this key may not change; upload under another external_id"
        )


def _clean_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {
        clean(key): clean(value) if isinstance(value, str) else value
        for key, value in metadata.items()
    }


async def _duplicate(session: AsyncSession, digest: str, document_id: str) -> UploadOutcome | None:
    namespace = namespace_of(session)
    latest_own = (
        await session.execute(
            text(
                "SELECT content_hash FROM ragsage_jobs WHERE namespace = :namespace "
                "AND document_id = :id AND kind = 'ingest' "
                "ORDER BY version DESC NULLS LAST, created_at DESC LIMIT 1"
            ),
            {"namespace": namespace, "id": document_id},
        )
    ).first()
    if latest_own is not None and latest_own[0] != digest:
        # The document's last upload was other bytes: these are its next version,
        # even if an older version or another document holds the same bytes.
        return None
    ready = (
        await session.execute(
            text(
                "SELECT id FROM ragsage_documents WHERE namespace = :namespace "
                "AND content_hash = :hash AND status = 'ready' ORDER BY (id = :id) DESC LIMIT 1"
            ),
            {"namespace": namespace, "hash": digest, "id": document_id},
        )
    ).first()
    latest = (
        await session.execute(
            text(
                "SELECT id, document_id, state FROM ragsage_jobs WHERE namespace = :namespace "
                "AND content_hash = :hash AND kind = 'ingest' "
                "ORDER BY (state IN ('queued', 'running')) DESC, created_at DESC LIMIT 1"
            ),
            {"namespace": namespace, "hash": digest},
        )
    ).first()
    if ready is not None:
        job_id = latest[0] if latest is not None and latest[1] == ready[0] else None
        return UploadOutcome(job_id, ready[0], JobState.SUCCEEDED, True, needs_sending=False)
    if latest is not None and latest[2] in ("queued", "running"):
        return UploadOutcome(latest[0], latest[1], JobState(latest[2]), True, needs_sending=False)
    return None
