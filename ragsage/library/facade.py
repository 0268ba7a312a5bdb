"""``ragsage.RAG``: index and search documents from a script, a notebook or an agent.

The engine is async; the facade gives every operation a plain method for
scripts and notebooks and an ``a``-prefixed coroutine for async code.  Both run
the work on an event loop in a private thread owned by the instance: a sync call
then works even where the calling thread already runs a loop (Jupyter), and a
Postgres pool is only ever used from the one loop it was opened on.  Source
tracking is recorded back in the caller's context, so runs stay per thread and
per task.
"""

from __future__ import annotations

import asyncio
import mimetypes
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ragsage.adapters.memory import MemoryDocumentStore, MemoryLexicalStore, MemoryVectorStore
from ragsage.adapters.offline import ExtractiveReader, HashingEmbedder
from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.core.errors import DocumentError, InvalidRequest, RagsageError
from ragsage.core.identity import document_id_for, legacy_document_id_for
from ragsage.core.ports import (
    Chunker,
    Contextualizer,
    DocumentParser,
    DocumentStore,
    Embedder,
    LexicalStore,
    LLMClient,
    PageClassifier,
    Reranker,
    Tracer,
    VectorStore,
)
from ragsage.core.types import Chunk, RawSource, Scope, SearchFilters
from ragsage.ingestion import IngestionConfig, IngestionPipeline, PreparedDocument
from ragsage.library.backends import Backend, LocalBackend, PostgresBackend
from ragsage.library.context import RAGContext
from ragsage.library.inputs import TextDocument, as_text_document, text_document
from ragsage.library.search_args import search_filters
from ragsage.library.tracking import RAGSource, SourceTracker, chunk_title
from ragsage.query import QueryConfig, QueryEngine, RetrievalOptions
from ragsage.query.options import DEFAULT_HYBRID_ALPHA
from ragsage.query.results import ChunkContext
from ragsage.runtime.loop import LoopThread

if TYPE_CHECKING:
    from ragsage.agent.tools import Tool
    from ragsage.settings import Settings

_T = TypeVar("_T")
FiltersArg = SearchFilters | Mapping[str, Any] | None


class RAG:
    """A knowledge base in one object: index text and files, search, cite.

    Build it with :meth:`default` (in memory, offline), :meth:`from_settings`
    (Postgres, as the service runs) or from explicit ports.  Close it when done
    (or use it as a context manager) to release its loop thread and connections.
    """

    def __init__(
        self,
        *,
        embedder: Embedder,
        vector_store: VectorStore,
        lexical_store: LexicalStore,
        document_store: DocumentStore,
        reranker: Reranker | None = None,
        parser: DocumentParser | None = None,
        chunker: Chunker | None = None,
        classifier: PageClassifier | None = None,
        contextualizer: Contextualizer | None = None,
        llm: LLMClient | None = None,
        tracer: Tracer | None = None,
        ingestion_config: IngestionConfig | None = None,
        query_config: QueryConfig | None = None,
        namespace: str = "default",
    ) -> None:
        backend = HeuristicBackend()
        model = llm or ExtractiveReader()
        pipeline = IngestionPipeline(
            parser=parser or backend,
            classifier=classifier or LayoutPageClassifier(),
            chunker=chunker or backend,
            contextualizer=contextualizer or HeadingWindowContextualizer(),
            embedder=embedder,
            llm=model,
            vector_store=vector_store,
            lexical_store=lexical_store,
            document_store=document_store,
            tracer=tracer,
            config=ingestion_config,
        )
        engine = QueryEngine(
            embedder=embedder,
            vector_store=vector_store,
            lexical_store=lexical_store,
            document_store=document_store,
            llm=model,
            reranker=reranker,
            tracer=tracer,
            config=query_config,
        )
        self._attach(LocalBackend(_scope(namespace), pipeline, engine))

    def _attach(self, backend: Backend) -> None:
        self._backend = backend
        self._tracker = SourceTracker(f"ragsage-run-{id(self)}")
        self._loop_thread: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self._closed = False

    @classmethod
    def default(
        cls,
        *,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        namespace: str = "default",
        ingestion_config: IngestionConfig | None = None,
    ) -> RAG:
        """An in-memory knowledge base with the real parsers; no network, no services.

        Without an embedder it uses the deterministic hashing embedder, which
        matches on shared words; pass a real one for semantic search.
        """
        return cls(
            embedder=embedder or HashingEmbedder(),
            vector_store=MemoryVectorStore(),
            lexical_store=MemoryLexicalStore(),
            document_store=MemoryDocumentStore(),
            reranker=reranker,
            ingestion_config=ingestion_config,
            namespace=namespace,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        namespace: str = "default",
        migrate: bool = False,
        **ports: Any,
    ) -> RAG:
        """A namespace of the Postgres database the settings name (default: environment).

        ``ports`` (``embedder=``, ``reranker=``, ``llm=`` ...) override the
        adapters the settings describe.  With ``migrate=True`` the schema is
        brought up to date first (needs the owner connection).
        """
        from ragsage.runtime import build_runtime
        from ragsage.settings import Settings

        runtime = build_runtime(settings or Settings.from_env(), **ports)
        rag = cls.__new__(cls)
        rag._attach(PostgresBackend(runtime, _scope(namespace)))
        if migrate:
            try:
                rag._run(runtime.database.migrate())
            except BaseException:
                rag.close()
                raise
        return rag

    @property
    def namespace(self) -> str:
        return self._backend.scope.namespace

    @property
    def has_reranker(self) -> bool:
        """Whether ``rerank=True`` can be asked for."""
        return self._backend.has_reranker

    # ------------------------------------------------------------------ lifecycle

    def _loop(self) -> LoopThread:
        with self._loop_lock:
            if self._closed:
                raise RagsageError("this RAG is closed")
            if self._loop_thread is None:
                self._loop_thread = LoopThread(name=f"ragsage-rag-{self.namespace}")
                # A RAG dropped without close() must not leave its thread behind.
                weakref.finalize(self, self._loop_thread.stop)
            return self._loop_thread

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        try:
            loop = self._loop()
        except BaseException:
            coroutine.close()
            raise
        return loop.run(coroutine)

    async def _arun(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        try:
            loop = self._loop()
        except BaseException:
            coroutine.close()
            raise
        return await asyncio.wrap_future(loop.submit(coroutine))

    def close(self) -> None:
        """Release connections and stop the loop thread; later calls raise."""
        with self._loop_lock:
            if self._closed:
                return
            self._closed = True
            loop, self._loop_thread = self._loop_thread, None
        if loop is None:
            loop = LoopThread(name="ragsage-rag-close")
        try:
            loop.run(self._backend.aclose())
        finally:
            loop.stop()

    async def aclose(self) -> None:
        """:meth:`close` for async code (the blocking part runs in a thread)."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ indexing

    def index_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        title: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> list[Chunk]:
        """Index ``text`` (read as Markdown) as one document; returns its stored chunks.

        Indexing again under the same ``document_id`` replaces the earlier version.
        """
        return self._run(
            self._index_many(
                [text_document(text, document_id, title, source, metadata, created_at)]
            )
        )

    async def aindex_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        title: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> list[Chunk]:
        return await self._arun(
            self._index_many(
                [text_document(text, document_id, title, source, metadata, created_at)]
            )
        )

    def index_file(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Chunk]:
        """Index a file of any format the parser reads (PDF, DOCX, PPTX, HTML, Markdown, text)."""
        source, chosen = _read_file(self.namespace, path, document_id, metadata)
        return self._run(self._index_file_source(source, chosen, title, path, document_id))

    async def aindex_file(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Chunk]:
        source, chosen = await asyncio.to_thread(
            _read_file, self.namespace, path, document_id, metadata
        )
        return await self._arun(self._index_file_source(source, chosen, title, path, document_id))

    async def _index_file_source(
        self,
        source: RawSource,
        chosen: str,
        title: str | None,
        path: str | Path,
        given: str | None,
    ) -> list[Chunk]:
        if given is None:
            # A file indexed before ids included the namespace keeps its old id, so
            # indexing it again replaces it rather than colliding with it.
            legacy = legacy_document_id_for(str(Path(path).resolve()))
            if await self._backend.document(legacy) is not None:
                chosen = legacy
        return await self._index_source(source, chosen, title)

    def index_document(self, document: TextDocument | Mapping[str, Any] | object) -> list[Chunk]:
        """Index one :class:`TextDocument` (or a mapping / object with its fields)."""
        return self._run(self._index_many([as_text_document(document)]))

    async def aindex_document(
        self, document: TextDocument | Mapping[str, Any] | object
    ) -> list[Chunk]:
        return await self._arun(self._index_many([as_text_document(document)]))

    def index_documents(
        self, documents: Iterable[TextDocument | Mapping[str, Any] | object]
    ) -> list[Chunk]:
        """Index several documents; all are chunked and embedded before any is stored."""
        return self._run(self._index_many([as_text_document(d) for d in documents]))

    async def aindex_documents(
        self, documents: Iterable[TextDocument | Mapping[str, Any] | object]
    ) -> list[Chunk]:
        return await self._arun(self._index_many([as_text_document(d) for d in documents]))

    def reindex(self, document_id: str, *, content: str | None = None) -> list[Chunk]:
        """Re-chunk and re-embed a document: from its kept pages, or from new ``content``."""
        return self._run(self._reindex(document_id, content))

    async def areindex(self, document_id: str, *, content: str | None = None) -> list[Chunk]:
        return await self._arun(self._reindex(document_id, content))

    def delete_document(self, document_id: str) -> bool:
        """Remove a document's vectors, keyword entries and registry rows; False if absent."""
        return self._run(self._backend.delete(document_id))

    async def adelete_document(self, document_id: str) -> bool:
        return await self._arun(self._backend.delete(document_id))

    async def _index_many(self, documents: Sequence[TextDocument]) -> list[Chunk]:
        pipeline = await self._backend.pipeline()
        prepared = [
            await self._prepare(
                pipeline, _text_source(document), document.id, document.title, document.created_at
            )
            for document in documents
        ]
        return await self._write_all(pipeline, prepared)

    async def _index_source(
        self, source: RawSource, document_id: str, title: str | None
    ) -> list[Chunk]:
        pipeline = await self._backend.pipeline()
        prepared = await self._prepare(pipeline, source, document_id, title, None)
        return await self._write_all(pipeline, [prepared])

    async def _prepare(
        self,
        pipeline: IngestionPipeline,
        source: RawSource,
        document_id: str,
        title: str | None,
        created_at: datetime | None,
    ) -> PreparedDocument:
        prepared = await pipeline.prepare(
            self._backend.scope, source, document_id=document_id, created_at=created_at
        )
        return _retitled(prepared, title) if title else prepared

    async def _write_all(
        self, pipeline: IngestionPipeline, prepared: Sequence[PreparedDocument]
    ) -> list[Chunk]:
        for one in prepared:
            await self._backend.write(pipeline, one)
        return [chunk for one in prepared for chunk in one.chunks]

    async def _reindex(self, document_id: str, content: str | None) -> list[Chunk]:
        document = await self._backend.document(document_id)
        if document is None:
            raise InvalidRequest(f"no document {document_id!r} in namespace {self.namespace!r}")
        pipeline = await self._backend.pipeline()
        if content is not None:
            metadata = {k: v for k, v in document.metadata.items() if k != "title"}
            replacement = TextDocument(
                id=document.id,
                content=content,
                metadata=metadata,
                source=document.source,
                title=document.title,
                created_at=None,
            )
            prepared = await self._prepare(
                pipeline, _text_source(replacement), document.id, document.title, None
            )
        else:
            pages = await self._backend.pages(document)
            prepared = await pipeline.prepare_from_pages(self._backend.scope, document, pages)
        return await self._write_all(pipeline, [prepared])

    # ------------------------------------------------------------------ retrieval

    def search(
        self,
        query: str,
        *,
        top_k: int = 5,
        filters: FiltersArg = None,
        hybrid_alpha: float = DEFAULT_HYBRID_ALPHA,
        rerank: bool = False,
        recency_bias: bool = False,
        recency_half_life_days: float = 30.0,
        chunks_above: int = 0,
        chunks_below: int = 0,
        min_score: float | None = None,
    ) -> RAGContext:
        """The best passages for ``query``, with scores, timings and citation numbers.

        ``filters`` is a :class:`~ragsage.core.types.SearchFilters` or a mapping with
        any of ``document_ids``, ``sources``, ``metadata``, ``created_after``,
        ``created_before``.  ``rerank=True`` needs a reranker.  ``top_k`` hits
        come back whenever that many passages match at all; ``min_score`` drops
        those whose score is below it.  Inside a run (:meth:`begin_run`) the hits
        are recorded as the run's sources.
        """
        options = self._options(
            top_k,
            filters,
            hybrid_alpha,
            rerank,
            recency_bias,
            recency_half_life_days,
            chunks_above,
            chunks_below,
            min_score,
        )
        return self._tracked(self._run(self._search(query, options)))

    async def asearch(
        self,
        query: str,
        *,
        top_k: int = 5,
        filters: FiltersArg = None,
        hybrid_alpha: float = DEFAULT_HYBRID_ALPHA,
        rerank: bool = False,
        recency_bias: bool = False,
        recency_half_life_days: float = 30.0,
        chunks_above: int = 0,
        chunks_below: int = 0,
        min_score: float | None = None,
    ) -> RAGContext:
        options = self._options(
            top_k,
            filters,
            hybrid_alpha,
            rerank,
            recency_bias,
            recency_half_life_days,
            chunks_above,
            chunks_below,
            min_score,
        )
        return self._tracked(await self._arun(self._search(query, options)))

    def _options(
        self,
        top_k: int,
        filters: FiltersArg,
        hybrid_alpha: float,
        rerank: bool,
        recency_bias: bool,
        recency_half_life_days: float,
        chunks_above: int,
        chunks_below: int,
        min_score: float | None = None,
    ) -> RetrievalOptions:
        if rerank and not self._backend.has_reranker:
            raise InvalidRequest(
                "rerank=True needs a reranker; build the RAG with reranker=... "
                "(for example LLMReranker(llm))"
            )
        return RetrievalOptions(
            top_k=top_k,
            filters=search_filters(filters),
            hybrid_alpha=hybrid_alpha,
            rerank=rerank,
            recency_bias=recency_bias,
            recency_half_life_days=recency_half_life_days,
            chunks_above=chunks_above,
            chunks_below=chunks_below,
            min_score=min_score,
        )

    async def _search(self, query: str, options: RetrievalOptions) -> RAGContext:
        if not isinstance(query, str):
            raise InvalidRequest(f"query must be a string, got {type(query).__name__}")

        async def call(engine: QueryEngine) -> RAGContext:
            found = await engine.search(self._backend.scope, query, options)
            return RAGContext(
                query=query,
                results=found.hits,
                total_found=found.total_found,
                timing_ms=dict(found.timing_ms),
            )

        return await self._backend.query(call)

    def _tracked(self, context: RAGContext) -> RAGContext:
        if not self._tracker.active:
            return context
        numbers = tuple(self._tracker.record(hit.chunk, hit.score) or 0 for hit in context.results)
        return RAGContext(
            query=context.query,
            results=context.results,
            total_found=context.total_found,
            timing_ms=context.timing_ms,
            citations=numbers,
        )

    def fetch_chunk(
        self, chunk_id: str, *, chunks_above: int = 0, chunks_below: int = 0
    ) -> ChunkContext | None:
        """A chunk by id with up to the given number of neighbours each side, or None."""
        _check_neighbours(chunks_above, chunks_below)
        found = self._run(self._fetch(chunk_id, chunks_above, chunks_below))
        return self._tracked_fetch(found)

    async def afetch_chunk(
        self, chunk_id: str, *, chunks_above: int = 0, chunks_below: int = 0
    ) -> ChunkContext | None:
        _check_neighbours(chunks_above, chunks_below)
        found = await self._arun(self._fetch(chunk_id, chunks_above, chunks_below))
        return self._tracked_fetch(found)

    async def _fetch(self, chunk_id: str, above: int, below: int) -> ChunkContext | None:
        scope = self._backend.scope

        async def call(engine: QueryEngine) -> ChunkContext | None:
            return await engine.fetch_chunk(scope, chunk_id, chunks_above=above, chunks_below=below)

        return await self._backend.query(call)

    def _tracked_fetch(self, found: ChunkContext | None) -> ChunkContext | None:
        if found is not None:
            # A passage read by id was not ranked; it enters the run unscored.
            self._tracker.record(found.chunk, 0.0)
        return found

    def chunk_vectors(self, chunk_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embedding of each chunk among ``chunk_ids`` the store can read back."""

        async def call(engine: QueryEngine) -> dict[str, list[float]]:
            read = getattr(engine.vector_store, "vectors", None)
            if read is None:
                return {}
            found = await read(self._backend.scope, list(chunk_ids))
            return {key: list(vector) for key, vector in found.items()}

        return self._run(self._engine_call(call))

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """``texts`` embedded as passages by the embedder this namespace searches with."""

        async def call(engine: QueryEngine) -> list[list[float]]:
            return [list(v) for v in await engine.embedder.embed(list(texts))]

        return self._run(self._engine_call(call))

    def list_sources(self) -> list[str]:
        """The distinct source names in this namespace, sorted."""
        return self._run(self._engine_call(lambda e: e.list_sources(self._backend.scope)))

    async def alist_sources(self) -> list[str]:
        return await self._arun(self._engine_call(lambda e: e.list_sources(self._backend.scope)))

    def count(self) -> int:
        """How many chunks this namespace holds."""
        return self._run(self._engine_call(lambda e: e.count(self._backend.scope)))

    async def acount(self) -> int:
        return await self._arun(self._engine_call(lambda e: e.count(self._backend.scope)))

    async def _engine_call(self, call: Callable[[QueryEngine], Awaitable[_T]]) -> _T:
        return await self._backend.query(call)

    # ------------------------------------------------------------------ source tracking

    def begin_run(self) -> None:
        """Start collecting what searches and fetches in this thread or task retrieve."""
        self._tracker.begin()

    def end_run(self) -> list[RAGSource]:
        """Close the run and return its sources, numbered 1..n in first-seen order."""
        return self._tracker.end()

    def current_sources(self) -> list[RAGSource]:
        """The open run's sources so far (empty outside a run)."""
        return self._tracker.current()

    # ------------------------------------------------------------------ agent tools

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        """The ``rag_search`` tool's payload; reranks only when a reranker exists."""
        context = self.search(query, top_k=top_k, rerank=rerank and self._backend.has_reranker)
        return {
            "query": context.query,
            "total_found": context.total_found,
            "results": [
                {
                    "citation": number,
                    "chunk_id": hit.chunk.id,
                    "document_id": hit.chunk.document_id,
                    "source": hit.chunk.source,
                    "title": chunk_title(hit.chunk),
                    "heading_path": list(hit.chunk.heading_path),
                    "score": hit.score,
                    "text": hit.context_text,
                }
                for number, hit in zip(context.citations, context.results, strict=True)
            ],
        }

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        """The ``rag_fetch_chunk`` tool's payload, or None when there is no such chunk."""
        found = self.fetch_chunk(chunk_id, chunks_above=chunks_above, chunks_below=chunks_below)
        if found is None:
            return None
        chunk = found.chunk
        return {
            "chunk_id": chunk.id,
            "document_id": chunk.document_id,
            "source": chunk.source,
            "title": chunk_title(chunk),
            "text": chunk.text,
            "context_above": [{"chunk_id": c.id, "text": c.text} for c in found.above],
            "context_below": [{"chunk_id": c.id, "text": c.text} for c in found.below],
        }

    def tool_list_sources(self) -> list[str]:
        return self.list_sources()

    def as_tools(self) -> list[Tool]:
        """``rag_search``, ``rag_fetch_chunk`` and ``rag_list_sources`` bound to this RAG."""
        from ragsage.agent.tools import build_tools

        return build_tools(self)

    def prompt_section(self) -> str:
        """System-prompt text describing the tools and how to cite their results."""
        from ragsage.agent.tools import prompt_section

        return prompt_section(self.as_tools())


def _scope(namespace: str) -> Scope:
    try:
        return Scope(namespace)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc


def _check_neighbours(above: int, below: int) -> None:
    # RetrievalOptions owns the bounds; building one checks them with its messages.
    RetrievalOptions(chunks_above=above, chunks_below=below)


def _text_source(document: TextDocument) -> RawSource:
    # Read as Markdown whatever the name, so headings structure the chunks.
    return RawSource(
        content=document.content.encode("utf-8"),
        filename=document.source or document.title or document.id,
        media_type="text/markdown",
        metadata=dict(document.metadata),
    )


def _read_file(
    namespace: str, path: str | Path, document_id: str | None, metadata: Mapping[str, Any] | None
) -> tuple[RawSource, str]:
    location = Path(path)
    try:
        data = location.read_bytes()
    except OSError as exc:
        raise DocumentError(str(location), f"cannot be read ({exc.strerror or exc})") from exc
    media_type, _ = mimetypes.guess_type(location.name)
    source = RawSource(
        content=data, filename=location.name, media_type=media_type, metadata=dict(metadata or {})
    )
    # The full path, not the name: two README.md files in different folders are two documents.
    return source, document_id or document_id_for(namespace, str(location.resolve()))


def _retitled(prepared: PreparedDocument, title: str) -> PreparedDocument:
    records = tuple(
        replace(
            record,
            chunk=replace(record.chunk, metadata={**record.chunk.metadata, "title": title}),
        )
        for record in prepared.records
    )
    return replace(prepared, document=replace(prepared.document, title=title), records=records)
