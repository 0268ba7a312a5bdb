"""Type-checked by test_fakes_cover_ports: each fake must satisfy its Protocol for mypy."""

from __future__ import annotations

from ragsage import fakes, ports
from ragsage.contextualizing import HeadingWindowContextualizer


def conformance() -> list[object]:
    parser: ports.DocumentParser = fakes.FakeDocumentParser()
    classifier: ports.PageClassifier = fakes.FakePageClassifier()
    chunker: ports.Chunker = fakes.FakeChunker()
    contextualizer: ports.Contextualizer = fakes.FakeContextualizer()
    # An optional capability of a contextualizer: the shipped offline one has it.
    pages: ports.PageContextualizer = HeadingWindowContextualizer()
    both: ports.Contextualizer = HeadingWindowContextualizer()
    embedder: ports.Embedder = fakes.FakeEmbedder()
    reranker: ports.Reranker = fakes.FakeReranker()
    llm: ports.LLMClient = fakes.FakeLLMClient()
    rewriter: ports.QueryRewriter = fakes.FakeQueryRewriter()
    vectors: ports.VectorStore = fakes.FakeVectorStore()
    lexical: ports.LexicalStore = fakes.FakeLexicalStore()
    documents: ports.DocumentStore = fakes.FakeDocumentStore()
    cache: ports.Cache = fakes.FakeCache()
    tracer: ports.Tracer = fakes.FakeTracer()
    span: ports.Span = tracer.span("root", tenant="t")
    return [
        parser,
        classifier,
        chunker,
        contextualizer,
        pages,
        both,
        embedder,
        reranker,
        llm,
        rewriter,
        vectors,
        lexical,
        documents,
        cache,
        tracer,
        span,
    ]
