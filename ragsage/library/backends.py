"""Where the facade's documents live: in this process, or in Postgres.

Both backends expose the same few coroutines — an ingestion pipeline, a write,
the pages kept for re-indexing, a delete, and a query engine — so the facade
above them has one code path for notebooks and for a shared database.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Protocol, TypeVar

from ragsage.core.documents import Document
from ragsage.core.errors import InvalidRequest
from ragsage.core.pages import Page
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionPipeline, PreparedDocument
from ragsage.query import QueryEngine

if TYPE_CHECKING:
    from ragsage.runtime import Runtime

_T = TypeVar("_T")


class Backend(Protocol):
    """The storage side of :class:`ragsage.RAG`."""

    scope: Scope

    @property
    def has_reranker(self) -> bool: ...

    async def pipeline(self) -> IngestionPipeline: ...

    async def write(self, pipeline: IngestionPipeline, prepared: PreparedDocument) -> None: ...

    async def document(self, document_id: str) -> Document | None: ...

    async def pages(self, document: Document) -> list[Page]: ...

    async def delete(self, document_id: str) -> bool: ...

    async def set_access(self, document_id: str, access: Collection[str]) -> bool: ...

    async def query(self, call: Callable[[QueryEngine], Awaitable[_T]]) -> _T: ...

    async def aclose(self) -> None: ...


class LocalBackend:
    """Both pipelines held by this process (over in-memory stores, or any the caller passed)."""

    def __init__(self, scope: Scope, pipeline: IngestionPipeline, engine: QueryEngine) -> None:
        self.scope = scope
        self._pipeline, self._engine = pipeline, engine
        # Resolved pages per document, so reindex() needs neither the file nor vision.
        self._pages: dict[str, tuple[Page, ...]] = {}

    @property
    def has_reranker(self) -> bool:
        return self._engine.reranker is not None

    async def pipeline(self) -> IngestionPipeline:
        return self._pipeline

    async def write(self, pipeline: IngestionPipeline, prepared: PreparedDocument) -> None:
        await pipeline.store(self.scope, prepared)
        self._pages[prepared.document.id] = prepared.pages

    async def document(self, document_id: str) -> Document | None:
        return await self._pipeline.document_store.get(self.scope, document_id)

    async def pages(self, document: Document) -> list[Page]:
        kept = self._pages.get(document.id)
        if kept is None:
            raise InvalidRequest(
                f"document {document.id!r} was not indexed through this RAG, so its pages "
                "are not kept; pass content= to reindex it"
            )
        return list(kept)

    async def delete(self, document_id: str) -> bool:
        existed = await self.document(document_id) is not None
        pipeline = self._pipeline
        await pipeline.vector_store.delete(self.scope, document_id)
        await pipeline.lexical_store.delete(self.scope, document_id)
        await pipeline.document_store.delete(self.scope, document_id)
        self._pages.pop(document_id, None)
        return existed

    async def set_access(self, document_id: str, access: Collection[str]) -> bool:
        raise InvalidRequest(
            "access lists are kept by the Postgres stores (RAG.from_settings), not in memory"
        )

    async def query(self, call: Callable[[QueryEngine], Awaitable[_T]]) -> _T:
        return await call(self._engine)

    async def aclose(self) -> None:
        return None


class PostgresBackend:
    """A namespace of the Postgres database a :class:`Runtime` points at.

    Writes go through one transaction per document (chunks, registry row and
    the pages kept for re-indexing together), and every operation uses the
    namespace's active embedding generation, exactly as the worker and API do.
    """

    def __init__(self, runtime: Runtime, scope: Scope) -> None:
        self.scope = scope
        self.runtime = runtime

    @property
    def has_reranker(self) -> bool:
        return self.runtime.reranker is not None

    async def pipeline(self) -> IngestionPipeline:
        return self.runtime.pipeline(await self.runtime.embedder_for_scope(self.scope))

    async def write(self, pipeline: IngestionPipeline, prepared: PreparedDocument) -> None:
        from ragsage.adapters.postgres.jobs import document_rows, page_store, reindex
        from ragsage.adapters.postgres.replicas import replicas_must_replay
        from ragsage.jobs.versions import write_version

        document = prepared.document
        async with self.runtime.database.session(self.scope) as session:
            # The caller searches for what it indexed next, maybe on a replica.
            replicas_must_replay(session)
            previous = await document_rows.current_hash(session, document.id)
            await write_version(session, self.runtime, self.scope, pipeline, prepared)
            if previous is not None and previous != document.content_hash:
                await page_store.delete_unreferenced(session, previous)
            # Left queued, unsent: the workers' watchdog sends jobs nobody sent
            # (RAGSAGE_JOB_UNSENT_GRACE), as this process has no broker.
            await reindex.queue_for_building(
                session,
                self.scope,
                document_id=document.id,
                content_hash=document.content_hash,
                filename=document.source,
                media_type=None,
                metadata=dict(document.metadata),
            )

    async def document(self, document_id: str) -> Document | None:
        from ragsage.adapters.postgres import PgDocumentStore

        return await PgDocumentStore(self.runtime.database).get(self.scope, document_id)

    async def pages(self, document: Document) -> list[Page]:
        from ragsage.adapters.postgres.jobs import page_store

        async with self.runtime.database.session(self.scope) as session:
            pages = await page_store.load_pages(session, document.content_hash)
        if not pages:
            raise InvalidRequest(
                f"document {document.id!r} has no stored pages to re-index from; "
                "pass content= to reindex it"
            )
        return pages

    async def delete(self, document_id: str) -> bool:
        from ragsage.adapters.postgres.jobs.documents import delete_document

        async with self.runtime.database.session(self.scope) as session:
            return await delete_document(session, document_id)

    async def set_access(self, document_id: str, access: Collection[str]) -> bool:
        from ragsage.adapters.postgres.jobs.documents import set_access
        from ragsage.core.documents import upload_access

        checked = upload_access(self.scope, access)
        assert checked is not None
        async with self.runtime.database.session(self.scope) as session:
            return await set_access(session, document_id, checked)

    async def query(self, call: Callable[[QueryEngine], Awaitable[_T]]) -> _T:
        # Searches only read, and this backend's own writes return once the
        # replicas have them, so its searches may go to a replica.
        from ragsage.adapters.postgres.replicas import replica_reads

        with replica_reads():
            return await self.runtime.with_engine(self.scope, call)

    async def aclose(self) -> None:
        await self.runtime.aclose()
