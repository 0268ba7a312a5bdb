"""The shipit ``RAG`` facade, on ragsage's chunker and query engine.

Two ways in.  ``RAG(vector_store=..., embedder=..., ...)`` and
:meth:`RAG.default` run on components written to the page (the stock
in-memory ones or a user's own): indexing chunks, embeds and adds to them
directly, and searching runs ragsage's query engine over them.
:meth:`RAG.from_settings` runs on ragsage's Postgres service instead, through
:class:`ragsage.RAG`, and hands back the page's types.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from copy import deepcopy
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from ragsage.core.errors import InvalidRequest
from ragsage.library.inputs import text_document
from ragsage.library.shipit.components import (
    DocumentChunker,
    HashingEmbedder,
    InMemoryBM25Store,
    InMemoryVectorStore,
    KeywordStore,
    Reranker,
    VectorStore,
    as_embedder,
)
from ragsage.library.shipit.engine_backed import EngineBacked
from ragsage.library.shipit.extraction import TextExtractor
from ragsage.library.shipit.pipeline import HybridSearchPipeline
from ragsage.library.shipit.types import (
    Chunk,
    Document,
    IndexFilters,
    RAGContext,
    RAGSource,
    SearchQuery,
    from_chunk_context,
    source_from,
    to_engine_chunk,
)
from ragsage.library.tracking import SourceTracker

if TYPE_CHECKING:
    from ragsage.library.shipit.tools import RAGTool
    from ragsage.settings import Settings

# Texts embedded per call while indexing.
EMBED_BATCH = 64
# Chunk metadata the chunker adds, not the document's own.
_DERIVED = frozenset({"title", "heading_path", "page_numbers", "sections"})


class RAG:
    """Index text and files, search them, cite what was found."""

    def __init__(
        self,
        *,
        vector_store: VectorStore,
        embedder: Any,
        keyword_store: KeywordStore | None = None,
        reranker: Reranker | None = None,
        chunker: DocumentChunker | None = None,
        auto_embed_on_add: bool = True,
    ) -> None:
        self.vector_store = vector_store
        self.embedder = as_embedder(embedder)
        self.keyword_store = keyword_store
        self.reranker = reranker
        self.chunker = chunker or DocumentChunker()
        self.auto_embed_on_add = auto_embed_on_add
        self._documents: dict[str, Document] = {}
        self._tracker = SourceTracker(f"ragsage-shipit-run-{id(self)}")
        self._engine: EngineBacked | None = None
        self.pipeline: HybridSearchPipeline | None = HybridSearchPipeline(
            vector_store, self.embedder, keyword_store, reranker
        )

    @classmethod
    def default(cls, *, embedder: Any = None, reranker: Reranker | None = None) -> RAG:
        """In memory: exact cosine search, BM25 keywords, ragsage's chunker.

        Without an embedder, the hashing one (offline; it matches shared words).
        """
        return cls(
            vector_store=InMemoryVectorStore(),
            embedder=embedder if embedder is not None else HashingEmbedder(),
            keyword_store=InMemoryBM25Store(),
            reranker=reranker,
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
        """A namespace of ragsage's Postgres index (see :meth:`ragsage.RAG.from_settings`)."""
        from ragsage.library.facade import RAG as EngineRAG
        from ragsage.settings import Settings

        # The page fuses by reciprocal rank; the service's default is scaled scores.
        chosen = (settings or Settings.from_env()).replace(fusion="rrf")
        rag = cls.__new__(cls)
        engine = EngineRAG.from_settings(chosen, namespace=namespace, migrate=migrate, **ports)
        rag._engine = EngineBacked(engine)
        # The page's components do not exist here: ragsage's own stores stand in.
        rag.vector_store = rag.keyword_store = rag.reranker = None  # type: ignore[assignment]
        rag.embedder = rag.chunker = None  # type: ignore[assignment]
        rag.auto_embed_on_add = True
        rag.pipeline = None
        rag._documents = {}
        rag._tracker = SourceTracker(f"ragsage-shipit-run-{id(rag)}")
        weakref.finalize(rag, engine.close)
        return rag

    # ------------------------------------------------------------------ lifecycle

    @property
    def can_rerank(self) -> bool:
        """Whether ``enable_reranking=True`` has a reranker to run."""
        if self._engine is not None:
            return self._engine.has_reranker
        return self.reranker is not None

    def close(self) -> None:
        """Release the loop thread (and, on Postgres, the connections)."""
        if self._engine is not None:
            self._engine.close()
        if self.pipeline is not None:
            self.pipeline.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ indexing

    def index_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        title: str | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Chunk]:
        """Index ``text`` (read as Markdown) as one document; indexing an id again replaces it."""
        given = text_document(text, document_id, title, source, metadata, None)
        return self.index_document(
            Document(given.id, given.content, dict(given.metadata), given.source, given.title)
        )

    def index_file(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Chunk]:
        """Index a file of any format ragsage reads; its name is the chunks' source."""
        if self._engine is not None:
            return self._engine.index_file(path, document_id, title, metadata)
        text = TextExtractor().extract(path)
        location = Path(path)
        return self.index_text(
            text,
            document_id=document_id or f"file_{location.resolve()}",
            title=title or location.stem,
            source=location.name,
            metadata=metadata,
        )

    def index_document(self, document: Document) -> list[Chunk]:
        """Chunk, embed (unless ``auto_embed_on_add`` is off) and store one document."""
        return self.index_documents([document])

    def index_documents(self, documents: Iterable[Document]) -> list[Chunk]:
        given = list(documents)
        for document in given:
            if not isinstance(document, Document):
                raise TypeError(f"expected a Document, got {type(document).__name__}")
        if self._engine is not None:
            return self._engine.index_documents(given)
        stored: list[Chunk] = []
        for document in given:
            chunks = self.chunker.chunk(document)
            if self.auto_embed_on_add:
                self._embed(chunks)
                titled = chunks[0].metadata.get("title") if chunks else None
                if titled:
                    title = self.embedder.embed([str(titled)], kind="passage")[0]
                    for chunk in chunks:
                        chunk.title_embedding = list(title)
            self._remove(document.id)
            self.vector_store.add(chunks)
            if self.keyword_store is not None:
                self.keyword_store.add(chunks)
            self._documents[document.id] = replace(document, metadata=deepcopy(document.metadata))
            stored.extend(chunks)
        return stored

    def _embed(self, chunks: list[Chunk]) -> None:
        for start in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[start : start + EMBED_BATCH]
            vectors = self.embedder.embed([c.text_for_embedding for c in batch], kind="passage")
            for chunk, vector in zip(batch, vectors, strict=True):
                chunk.embedding = list(vector)

    def reindex(self, document_id: str, *, content: str | None = None) -> list[Chunk]:
        """Chunk and embed a document again: as it was indexed, or with new ``content``."""
        if self._engine is not None:
            return self._engine.reindex(document_id, content)
        document = self._documents.get(document_id)
        if document is None and content is not None:
            # Indexed by another process: the stored chunks still say where it came from.
            held = self.vector_store.list_chunks(document_id)
            if held:
                first = held[0]
                metadata = {k: v for k, v in first.metadata.items() if k not in _DERIVED}
                document = Document(
                    document_id,
                    content,
                    metadata,
                    first.source,
                    first.metadata.get("title"),
                    first.created_at,
                )
        if document is None:
            raise InvalidRequest(
                f"no document {document_id!r} was indexed by this RAG; "
                "pass content=... to index it again from new text"
            )
        if content is not None:
            document = replace(document, content=content)
        return self.index_document(document)

    def delete_document(self, document_id: str) -> None:
        """Remove a document's chunks from every store (nothing happens if there are none)."""
        if self._engine is not None:
            self._engine.delete_document(document_id)
            return
        self._remove(document_id)
        self._documents.pop(document_id, None)

    def _remove(self, document_id: str) -> None:
        self.vector_store.delete_document(document_id)
        if self.keyword_store is not None:
            self.keyword_store.delete_document(document_id)

    # ------------------------------------------------------------------ query

    def search(
        self,
        query: str,
        *,
        top_k: int = 5,
        filters: IndexFilters | None = None,
        hybrid_alpha: float = 0.5,
        enable_reranking: bool = False,
        enable_recency_bias: bool = False,
        chunks_above: int = 0,
        chunks_below: int = 0,
    ) -> RAGContext:
        """The best chunks for ``query``: ``top_k`` of them whenever that many match at all.

        ``hybrid_alpha`` weighs dense against keyword results (1 is dense
        alone).  The page's default, 0.5, is kept here; ragsage's own API
        defaults to 0.3, which measured better on its evaluation sets.
        """
        request = SearchQuery(
            query=query,
            top_k=top_k,
            filters=filters,
            hybrid_alpha=hybrid_alpha,
            enable_reranking=enable_reranking,
            enable_recency_bias=enable_recency_bias,
            chunks_above=chunks_above,
            chunks_below=chunks_below,
        )
        if self._engine is not None:
            return self._engine.search(request)
        assert self.pipeline is not None
        context = self.pipeline.search(request)
        # The store's own chunk objects (with their embeddings), as the page's stores return.
        stored = {
            c.id: c for c in self.vector_store.get_many([r.chunk.id for r in context.results])
        }
        for result in context.results:
            result.chunk = stored.get(result.chunk.id, result.chunk)
        if self._tracker.active:
            context._citations = [
                self._tracker.record(to_engine_chunk(r.chunk), r.score) or 0
                for r in context.results
            ]
        return context

    def fetch_chunk(
        self, chunk_id: str, *, chunks_above: int = 0, chunks_below: int = 0
    ) -> Chunk | None:
        """A chunk by id, or None; asked-for neighbours ride in ``metadata["context_above"]``
        and ``metadata["context_below"]``."""
        if self._engine is not None:
            return self._engine.fetch_chunk(chunk_id, chunks_above, chunks_below)
        assert self.pipeline is not None
        found = self.pipeline.fetch(chunk_id, chunks_above, chunks_below)
        if found is None:
            return None
        self._tracker.record(found.chunk, 0.0)
        fetched = from_chunk_context(found)
        original = self.vector_store.get(chunk_id)
        if original is not None:
            fetched = replace(original, metadata={**original.metadata, **fetched.metadata})
        return fetched

    def list_sources(self) -> list[str]:
        if self._engine is not None:
            return self._engine.list_sources()
        return sorted(self.vector_store.list_sources())

    def count(self) -> int:
        """How many chunks are indexed."""
        if self._engine is not None:
            return self._engine.count()
        return int(self.vector_store.count())

    # ------------------------------------------------------------------ source tracking

    def begin_run(self) -> None:
        """Start collecting what this thread's searches and fetches retrieve."""
        if self._engine is not None:
            self._engine.begin_run()
        else:
            self._tracker.begin()

    def end_run(self) -> list[RAGSource]:
        """Close the run; its sources, numbered 1..n in the order first seen."""
        if self._engine is not None:
            return self._engine.end_run()
        return [source_from(source) for source in self._tracker.end()]

    def current_sources(self) -> list[RAGSource]:
        if self._engine is not None:
            return self._engine.current_sources()
        return [source_from(source) for source in self._tracker.current()]

    # ------------------------------------------------------------------ agent tools

    def as_tools(self) -> list[RAGTool]:
        """``rag_search``, ``rag_fetch_chunk`` and ``rag_list_sources`` bound to this RAG."""
        from ragsage.library.shipit.tools import (
            RAGFetchChunkTool,
            RAGListSourcesTool,
            RAGSearchTool,
        )

        return [RAGSearchTool(self), RAGFetchChunkTool(self), RAGListSourcesTool(self)]

    def prompt_section(self) -> str:
        """System-prompt text on the tools and how to cite them; override to change it."""
        from ragsage.agent.tools import prompt_section

        return prompt_section()
