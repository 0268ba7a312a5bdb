"""``ragsage.RAG``: index and search documents from a script, a notebook or an agent.

The engine is async; the facade gives every operation a plain method for
scripts and notebooks and an ``a``-prefixed coroutine for async code, both
made from one definition (:mod:`ragsage.library.twins`).  Both run the work on
an event loop in a private thread owned by the instance: a sync call
then works even where the calling thread already runs a loop (Jupyter), and a
Postgres pool is only ever used from the one loop it was opened on.  Source
tracking is recorded back in the caller's context, so runs stay per thread and
per task.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsage.adapters.memory import MemoryDocumentStore, MemoryLexicalStore, MemoryVectorStore
from ragsage.adapters.offline import HashingEmbedder
from ragsage.core.chunks import Chunk
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.namespaced import embedder_for
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
from ragsage.core.scopes import scope_for
from ragsage.ingestion import IngestionConfig
from ragsage.library import indexing
from ragsage.library.backends import Backend, LocalBackend, PostgresBackend
from ragsage.library.context import RAGContext
from ragsage.library.inputs import TextDocument, as_text_document, text_document
from ragsage.library.private_loop import LoopOwner
from ragsage.library.tool_payloads import chunk_payload, search_payload
from ragsage.library.tracking import SourceTracker
from ragsage.library.tracking_runs import TracksSources
from ragsage.library.twins import Work, awaiting, blocking
from ragsage.query import QueryConfig, QueryEngine
from ragsage.query.results import ChunkContext
from ragsage.runtime.composition import compose, offline_ports

if TYPE_CHECKING:
    from ragsage.agent.tools import Tool
    from ragsage.settings import Settings

FiltersArg = SearchFilters | Mapping[str, Any] | None


class RAG(LoopOwner, TracksSources):
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
        # The offline set, with the caller's ports in place of its own.  The
        # reranker is the caller's alone: without one, searches do not rerank and
        # rerank=True is refused (docs/library.md).
        offline = offline_ports(embedder=embedder)
        engine = compose(
            replace(
                offline,
                vector_store=vector_store,
                lexical_store=lexical_store,
                document_store=document_store,
                reranker=reranker,
                parser=parser or offline.parser,
                chunker=chunker or offline.chunker,
                classifier=classifier or offline.classifier,
                contextualizer=contextualizer or offline.contextualizer,
                llm=llm or offline.llm,
                tracer=tracer,
            ),
            ingestion=ingestion_config,
            query=query_config,
        )
        self._attach(LocalBackend(scope_for(namespace), engine.ingestion, engine.query))

    def _attach(self, backend: Backend) -> None:
        self._backend = backend
        self._tracker = SourceTracker(f"ragsage-run-{id(self)}")
        self._open_loop(f"ragsage-rag-{backend.scope.namespace}")

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
        principals: Collection[str] | None = None,
        **ports: Any,
    ) -> RAG:
        """A namespace of the Postgres database the settings name (default: environment).

        ``ports`` (``embedder=``, ``reranker=``, ``llm=`` ...) override the
        adapters the settings describe.  With ``migrate=True`` the schema is
        brought up to date first (needs the owner connection).  ``principals``
        binds it as a bound API key is bound (docs/access.md): it reads only
        documents open to the namespace or listing one of them, and documents
        it indexes get them as their access list.
        """
        from ragsage.runtime import build_runtime
        from ragsage.settings import Settings

        scope = scope_for(namespace, principals)
        runtime = build_runtime(settings or Settings.from_env(), **ports)
        rag = cls.__new__(cls)
        rag._attach(PostgresBackend(runtime, scope))
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

    async def _release(self) -> None:
        await self._backend.aclose()

    # ------------------------------------------------------------------ indexing

    def _index_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        title: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Work[list[Chunk]]:
        """Index ``text`` (read as Markdown) as one document; returns its stored chunks.

        Indexing again under the same ``document_id`` replaces the earlier version.
        """
        document = text_document(text, document_id, title, source, metadata, created_at)
        return Work(indexing.index_documents(self._backend, [document]))

    index_text = blocking(_index_text)
    aindex_text = awaiting(_index_text)

    def _index_file(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Work[list[Chunk]]:
        """Index a file of any format the parser reads (PDF, DOCX, PPTX, HTML, Markdown, text)."""
        return Work(indexing.index_file(self._backend, path, document_id, title, metadata))

    index_file = blocking(_index_file)
    aindex_file = awaiting(_index_file)

    def _index_document(
        self, document: TextDocument | Mapping[str, Any] | object
    ) -> Work[list[Chunk]]:
        """Index one :class:`TextDocument` (or a mapping / object with its fields)."""
        return Work(indexing.index_documents(self._backend, [as_text_document(document)]))

    index_document = blocking(_index_document)
    aindex_document = awaiting(_index_document)

    def _index_documents(
        self, documents: Iterable[TextDocument | Mapping[str, Any] | object]
    ) -> Work[list[Chunk]]:
        """Index several documents; all are chunked and embedded before any is stored."""
        given = [as_text_document(d) for d in documents]
        return Work(indexing.index_documents(self._backend, given))

    index_documents = blocking(_index_documents)
    aindex_documents = awaiting(_index_documents)

    def _reindex(self, document_id: str, *, content: str | None = None) -> Work[list[Chunk]]:
        """Re-chunk and re-embed a document: from its kept pages, or from new ``content``."""
        return Work(indexing.reindex(self._backend, document_id, content))

    reindex = blocking(_reindex)
    areindex = awaiting(_reindex)

    def _delete_document(self, document_id: str) -> Work[bool]:
        """Remove a document's vectors, keyword entries and registry rows; False if absent."""
        return Work(self._backend.delete(document_id))

    delete_document = blocking(_delete_document)
    adelete_document = awaiting(_delete_document)

    def _set_access(self, document_id: str, access: Collection[str]) -> Work[bool]:
        """Give a document a new access list (``[]``: the whole namespace); False if absent.

        Postgres only: the in-memory stores keep no access lists.  A bound RAG
        may name only a non-empty subset of its principals.
        """
        return Work(self._backend.set_access(document_id, access))

    set_access = blocking(_set_access)
    aset_access = awaiting(_set_access)

    # ------------------------------------------------------------------ retrieval

    def _search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: FiltersArg = None,
        hybrid_alpha: float | None = None,
        rerank: bool = False,
        recency_bias: bool = False,
        recency_half_life_days: float = 30.0,
        chunks_above: int = 0,
        chunks_below: int = 0,
        min_score: float | None = None,
        budget_tokens: int | None = None,
    ) -> Work[RAGContext]:
        """The best passages for ``query``, with scores, timings and citation numbers.

        ``filters`` is a :class:`~ragsage.core.filters.SearchFilters` or a mapping with
        any of ``document_ids``, ``sources``, ``metadata``, ``created_after``,
        ``created_before``.  ``rerank=True`` needs a reranker.  ``top_k`` hits
        come back whenever that many passages match at all (5 unless given);
        ``min_score`` drops those whose score is below it.  ``budget_tokens``
        returns the passages that best fill that many words (headings counted),
        capped by ``top_k`` only when it is given.  Inside a run (:meth:`begin_run`) the hits
        are recorded as the run's sources.
        """
        if not isinstance(query, str):
            raise InvalidRequest(f"query must be a string, got {type(query).__name__}")
        from ragsage.query.requests import python_options  # pydantic loads on first use

        given = {"top_k": top_k, "budget_tokens": budget_tokens}
        options = python_options(
            {
                **{name: value for name, value in given.items() if value is not None},
                "hybrid_alpha": hybrid_alpha,
                "rerank": rerank,
                "recency_bias": recency_bias,
                "recency_half_life_days": recency_half_life_days,
                "chunks_above": chunks_above,
                "chunks_below": chunks_below,
                "min_score": min_score,
            },
            filters,
        )
        if rerank and not self._backend.has_reranker:
            raise InvalidRequest(
                "rerank=True needs a reranker; build the RAG with reranker=... "
                "(for example LLMReranker(llm))"
            )
        scope = self._backend.scope

        async def call(engine: QueryEngine) -> RAGContext:
            found = await engine.search(scope, query, options)
            return RAGContext(
                query=query,
                results=found.hits,
                total_found=found.total_found,
                timing_ms=dict(found.timing_ms),
            )

        return Work(self._backend.query(call), self._tracked)

    search = blocking(_search)
    asearch = awaiting(_search)

    def _fetch_chunk(
        self, chunk_id: str, *, chunks_above: int = 0, chunks_below: int = 0
    ) -> Work[ChunkContext | None]:
        """A chunk by id with up to the given number of neighbours each side, or None."""
        from ragsage.query.requests import python_options

        # The search contract owns the bounds; checking them here words them alike.
        python_options({"chunks_above": chunks_above, "chunks_below": chunks_below})
        scope = self._backend.scope

        async def call(engine: QueryEngine) -> ChunkContext | None:
            return await engine.fetch_chunk(
                scope, chunk_id, chunks_above=chunks_above, chunks_below=chunks_below
            )

        return Work(self._backend.query(call), self._tracked_fetch)

    fetch_chunk = blocking(_fetch_chunk)
    afetch_chunk = awaiting(_fetch_chunk)

    def chunk_vectors(self, chunk_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embedding of each chunk among ``chunk_ids`` the store can read back."""

        async def call(engine: QueryEngine) -> dict[str, list[float]]:
            read = getattr(engine.vector_store, "vectors", None)
            if read is None:
                return {}
            found = await read(self._backend.scope, list(chunk_ids))
            return {key: list(vector) for key, vector in found.items()}

        return self._run(self._backend.query(call))

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """``texts`` embedded as passages by the embedder this namespace searches with."""

        async def call(engine: QueryEngine) -> list[list[float]]:
            embedder = embedder_for(engine.embedder, self._backend.scope)
            return [list(v) for v in await embedder.embed(list(texts))]

        return self._run(self._backend.query(call))

    def _list_sources(self) -> Work[list[str]]:
        """The distinct source names in this namespace, sorted."""
        return Work(self._backend.query(lambda e: e.list_sources(self._backend.scope)))

    list_sources = blocking(_list_sources)
    alist_sources = awaiting(_list_sources)

    def _count(self) -> Work[int]:
        """How many chunks this namespace holds."""
        return Work(self._backend.query(lambda e: e.count(self._backend.scope)))

    count = blocking(_count)
    acount = awaiting(_count)

    # ------------------------------------------------------------------ agent tools

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        """The ``rag_search`` tool's payload; reranks only when a reranker exists."""
        rerank = rerank and self._backend.has_reranker
        return search_payload(self.search(query, top_k=top_k, rerank=rerank))

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        """The ``rag_fetch_chunk`` tool's payload, or None when there is no such chunk."""
        found = self.fetch_chunk(chunk_id, chunks_above=chunks_above, chunks_below=chunks_below)
        return None if found is None else chunk_payload(found)

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
