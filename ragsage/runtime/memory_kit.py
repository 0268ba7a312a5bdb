"""An engine held in memory: both pipelines over one set of in-process stores.

The offline CLI runs on it, with the real parsers and the offline models; the
tests' ``FakeEngineKit`` is the same kit with recording doubles.  A snapshot
writes the corpus as one JSON-able dict, so a corpus outlives the process.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ragsage.adapters.memory import MemoryDocumentStore, MemoryLexicalStore, MemoryVectorStore
from ragsage.core.ports import (
    Cache,
    Chunker,
    Contextualizer,
    DocumentParser,
    Embedder,
    LLMClient,
    PageClassifier,
    QueryRewriter,
    Reranker,
    Tracer,
)
from ragsage.core.tracing import NullTracer
from ragsage.ingestion import IngestionConfig, IngestionPipeline
from ragsage.query import QueryConfig, QueryEngine
from ragsage.runtime.composition import (
    EnginePorts,
    compose_ingestion,
    compose_query,
    offline_ports,
)

SNAPSHOT_VERSION = 1


class MemoryKit:
    """Every port instantiated once and shared, so ingest and query see one corpus.

    The models left out are the offline set's (:func:`offline_ports`); the
    parsing adapters are the caller's.  No parse cache unless one is given.
    """

    def __init__(
        self,
        *,
        parser: DocumentParser,
        classifier: PageClassifier,
        chunker: Chunker,
        contextualizer: Contextualizer,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        llm: LLMClient | None = None,
        rewriter: QueryRewriter | None = None,
        tracer: Tracer | None = None,
        cache: Cache | None = None,
    ) -> None:
        offline = offline_ports(embedder=embedder)
        self.parser, self.classifier = parser, classifier
        self.chunker, self.contextualizer = chunker, contextualizer
        self.embedder: Embedder = offline.embedder
        self.reranker: Reranker | None = reranker or offline.reranker
        self.llm: LLMClient = llm or offline.llm
        self.rewriter: QueryRewriter | None = rewriter or offline.rewriter
        self.tracer: Tracer = tracer or NullTracer()
        self.vector_store = MemoryVectorStore()
        self.lexical_store = MemoryLexicalStore()
        self.document_store = MemoryDocumentStore()
        self.cache = cache

    def ports(self) -> EnginePorts:
        """The kit's ports as they are now (a test may have swapped one).

        The kit's attributes carry the ports' own names, so they are read by name.
        """
        return EnginePorts(**{port.name: getattr(self, port.name) for port in fields(EnginePorts)})

    def ingestion(self, config: IngestionConfig | None = None) -> IngestionPipeline:
        return compose_ingestion(self.ports(), config)

    def query_engine(self, config: QueryConfig | None = None) -> QueryEngine:
        return compose_query(self.ports(), config)

    def snapshot(self) -> dict[str, Any]:
        """The whole corpus as one JSON-able dict."""
        return {
            "version": SNAPSHOT_VERSION,
            "embedding_model": self.embedder.model,
            "vectors": self.vector_store.snapshot(),
            "lexical": self.lexical_store.snapshot(),
            "documents": self.document_store.snapshot(),
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Load a corpus written by :meth:`snapshot`; raises ValueError if it is not one."""
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            raise ValueError("not a ragsage corpus snapshot (missing or unknown version)")
        if data.get("embedding_model") != self.embedder.model:
            raise ValueError(
                f"the corpus was embedded with {data.get('embedding_model')!r}, "
                f"not {self.embedder.model!r}"
            )
        try:
            self.vector_store.restore(data["vectors"])
            self.lexical_store.restore(data["lexical"])
            self.document_store.restore(data["documents"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"corrupt corpus snapshot ({exc})") from exc
