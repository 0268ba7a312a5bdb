"""The engine from its ports: the one place the two pipelines are put together.

Every caller that runs the engine builds it here: the runtime (Postgres, the
API and the worker), the memory kit (the offline CLI and the tests' kit), the
``RAG`` facade, the in-memory evaluation and the shipit search pipeline.  They
differ only in the ports they hand over; where one departs from
:func:`offline_ports`, it says so at the call, and docs/architecture.md ("One
engine, five callers") lists each difference and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsage.adapters.memory import MemoryDocumentStore, MemoryLexicalStore, MemoryVectorStore
from ragsage.adapters.offline import (
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
)
from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.adapters.parsing.languages import CODE_WINDOW
from ragsage.core.ports import (
    Cache,
    Chunker,
    Contextualizer,
    DocumentParser,
    DocumentStore,
    Embedder,
    LexicalStore,
    LLMClient,
    PageClassifier,
    QueryRewriter,
    Reranker,
    Tracer,
    VectorStore,
)
from ragsage.ingestion import IngestionConfig, IngestionPipeline
from ragsage.query import QueryConfig, QueryEngine


@dataclass(frozen=True, slots=True)
class EnginePorts:
    """Every port the ingestion pipeline and the query engine run on, shared by both."""

    parser: DocumentParser
    classifier: PageClassifier
    chunker: Chunker
    contextualizer: Contextualizer
    embedder: Embedder
    llm: LLMClient
    vector_store: VectorStore
    lexical_store: LexicalStore
    document_store: DocumentStore
    reranker: Reranker | None = None
    rewriter: QueryRewriter | None = None
    cache: Cache | None = None
    tracer: Tracer | None = None


@dataclass(frozen=True, slots=True)
class Engine:
    """Both pipelines over one set of ports, so what one writes the other reads."""

    ingestion: IngestionPipeline
    query: QueryEngine


def compose(
    ports: EnginePorts,
    *,
    ingestion: IngestionConfig | None = None,
    query: QueryConfig | None = None,
) -> Engine:
    """The ingestion pipeline and the query engine over ``ports`` (building opens nothing)."""
    return Engine(compose_ingestion(ports, ingestion), compose_query(ports, query))


def compose_ingestion(
    ports: EnginePorts, config: IngestionConfig | None = None
) -> IngestionPipeline:
    """The ingestion half of :func:`compose`, for a caller that only writes."""
    return IngestionPipeline(
        parser=ports.parser,
        classifier=ports.classifier,
        chunker=ports.chunker,
        contextualizer=ports.contextualizer,
        embedder=ports.embedder,
        llm=ports.llm,
        vector_store=ports.vector_store,
        lexical_store=ports.lexical_store,
        document_store=ports.document_store,
        cache=ports.cache,
        tracer=ports.tracer,
        config=config,
    )


def compose_query(ports: EnginePorts, config: QueryConfig | None = None) -> QueryEngine:
    """The query half of :func:`compose`, for a caller that only reads (a request)."""
    return QueryEngine(
        embedder=ports.embedder,
        vector_store=ports.vector_store,
        lexical_store=ports.lexical_store,
        document_store=ports.document_store,
        llm=ports.llm,
        reranker=ports.reranker,
        rewriter=ports.rewriter,
        tracer=ports.tracer,
        config=config,
    )


def offline_ports(
    *,
    embedder: Embedder | None = None,
    code_chunking: str = "definitions",
    code_window: int = CODE_WINDOW,
) -> EnginePorts:
    """The offline set: the real parsers, the keyless models and fresh in-memory stores.

    What the runtime builds from settings with no keys, minus what only a
    service has (Postgres, a Redis cache, Tesseract for scans).  No parse cache:
    beside stores that live in this process it would hold a second copy of
    every document for the life of the process, with nothing to bound it.
    """
    backend = HeuristicBackend(code_chunking=code_chunking, code_window=code_window)
    return EnginePorts(
        parser=backend,
        classifier=LayoutPageClassifier(),
        chunker=backend,
        contextualizer=HeadingWindowContextualizer(),
        embedder=embedder or HashingEmbedder(),
        llm=ExtractiveReader(),
        vector_store=MemoryVectorStore(),
        lexical_store=MemoryLexicalStore(),
        document_store=MemoryDocumentStore(),
        reranker=OverlapReranker(),
        rewriter=TermRewriter(),
    )
