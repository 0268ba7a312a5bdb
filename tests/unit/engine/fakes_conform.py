"""Type-checked by test_fakes_cover_ports: each fake must satisfy its Protocol for mypy."""

from __future__ import annotations

from ragsage import testing as fakes
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.adapters.postgres import PgDocumentStore, PgLexicalStore, PgVectorStore
from ragsage.core import ports


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


def ranking_by_id(vectors: PgVectorStore, text: PgLexicalStore) -> list[object]:
    # Optional capabilities of stores (a search then reads rows for the winners
    # alone): the Postgres stores have them; a store without them is searched whole.
    ranks: ports.RanksVectors = vectors
    fetches: ports.FetchesChunks = vectors
    words: ports.RanksText = text
    return [ranks, fetches, words]


def placing(documents: PgDocumentStore) -> list[object]:
    # An optional capability of a document store: the Postgres one kept where its
    # pages' lines are; citations from a store without it carry no boxes.
    placed: ports.PagePositionsReader = documents
    return [placed]
