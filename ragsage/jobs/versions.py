"""Writing a prepared document version: its chunks, its registry row and its pages, together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragsage.adapters.postgres.jobs import page_store
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ragsage.ingestion import IngestionPipeline, IngestResult, PreparedDocument
    from ragsage.runtime import Runtime


async def write_version(
    session: AsyncSession,
    runtime: Runtime,
    scope: Scope,
    pipeline: IngestionPipeline,
    prepared: PreparedDocument,
) -> IngestResult:
    """Write a prepared document version in the caller's transaction.

    Chunks, registry row and the resolved pages a later re-index starts from go
    in together: a chunk row refers to its document's, a check deferred to commit.
    """
    vectors, lexical, documents = runtime.stores(session, embedder=pipeline.embedder)
    result = await pipeline.store(
        scope, prepared, vector_store=vectors, lexical_store=lexical, document_store=documents
    )
    await page_store.save_pages(
        session, scope.namespace, prepared.document.content_hash, prepared.pages
    )
    return result
