"""One shared instance of every fake, ready to wire both pipelines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragsage.adapters.offline import (
    DEFAULT_DIMENSION,
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
)
from ragsage.core.ports import (
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
from ragsage.fakes.models import FakeEmbedder, FakeLLMClient, FakeQueryRewriter, FakeReranker
from ragsage.fakes.parsing import (
    FakeChunker,
    FakeContextualizer,
    FakeDocumentParser,
    FakePageClassifier,
)
from ragsage.fakes.stores import FakeCache, FakeDocumentStore, FakeLexicalStore, FakeVectorStore
from ragsage.fakes.tracing import FakeTracer
from ragsage.ingestion import IngestionConfig, IngestionPipeline
from ragsage.query import QueryConfig, QueryEngine
from ragsage.tracing import NullTracer

SNAPSHOT_VERSION = 1


class FakeEngineKit:
    """Every fake, instantiated once and shared, so ingest and query see one corpus.

    The parsing adapters can be swapped (the CLI plugs in the real heuristic
    parser) while the stores and models stay in memory.
    """

    def __init__(
        self,
        *,
        parser: DocumentParser | None = None,
        classifier: PageClassifier | None = None,
        chunker: Chunker | None = None,
        contextualizer: Contextualizer | None = None,
        dimension: int | None = None,
        record: bool = True,
    ) -> None:
        # ``record=False`` (the offline CLI) runs the offline adapters, which
        # keep nothing per call, where a test wants doubles that record.
        self.parser: DocumentParser = parser or FakeDocumentParser()
        self.classifier: PageClassifier = classifier or FakePageClassifier()
        self.chunker: Chunker = chunker or FakeChunker()
        self.contextualizer: Contextualizer = contextualizer or FakeContextualizer()
        width = dimension or DEFAULT_DIMENSION
        self.embedder: Embedder = (
            FakeEmbedder(dimension=width) if record else HashingEmbedder(dimension=width)
        )
        self.reranker: Reranker = FakeReranker() if record else OverlapReranker()
        self.llm: LLMClient = FakeLLMClient() if record else ExtractiveReader()
        self.rewriter: QueryRewriter = FakeQueryRewriter() if record else TermRewriter()
        self.vector_store = FakeVectorStore()
        self.lexical_store = FakeLexicalStore()
        self.document_store = FakeDocumentStore()
        self.cache = FakeCache()
        self.tracer: Tracer = FakeTracer() if record else NullTracer()

    def ingestion(self, config: IngestionConfig | None = None) -> IngestionPipeline:
        return IngestionPipeline(
            parser=self.parser,
            classifier=self.classifier,
            chunker=self.chunker,
            contextualizer=self.contextualizer,
            embedder=self.embedder,
            llm=self.llm,
            vector_store=self.vector_store,
            lexical_store=self.lexical_store,
            document_store=self.document_store,
            cache=self.cache,
            tracer=self.tracer,
            config=config,
        )

    def query_engine(self, config: QueryConfig | None = None) -> QueryEngine:
        return QueryEngine(
            embedder=self.embedder,
            vector_store=self.vector_store,
            lexical_store=self.lexical_store,
            document_store=self.document_store,
            llm=self.llm,
            reranker=self.reranker,
            rewriter=self.rewriter,
            tracer=self.tracer,
            config=config,
        )

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


def all_fakes() -> Iterable[type]:
    """Every fake adapter class, one per port."""
    return (
        FakeDocumentParser,
        FakePageClassifier,
        FakeChunker,
        FakeContextualizer,
        FakeEmbedder,
        FakeReranker,
        FakeLLMClient,
        FakeQueryRewriter,
        FakeVectorStore,
        FakeLexicalStore,
        FakeDocumentStore,
        FakeCache,
        FakeTracer,
    )
