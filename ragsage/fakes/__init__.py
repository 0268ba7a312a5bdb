"""Genuine in-memory implementations of every port.

Not mocks: each is a small working adapter with no network, so the pipelines
run end to end offline — in tests, in the CLI, and for anyone who has just
installed the package.  Retrieval is real enough to mean something: the hashing
embedder's cosine tracks shared terms, the lexical store is BM25, and the
reranker prunes candidates that share nothing with the query, which is what
makes the honest "not found" fire.  Nothing here is tuned for quality.
"""

from ragsage.fakes.kit import FakeEngineKit, all_fakes
from ragsage.fakes.models import FakeEmbedder, FakeLLMClient, FakeQueryRewriter, FakeReranker
from ragsage.fakes.parsing import (
    FakeChunker,
    FakeContextualizer,
    FakeDocumentParser,
    FakePageClassifier,
)
from ragsage.fakes.stores import FakeCache, FakeDocumentStore, FakeLexicalStore, FakeVectorStore
from ragsage.fakes.tracing import FakeSpan, FakeTracer, RecordedSpan

__all__ = [
    "FakeCache",
    "FakeChunker",
    "FakeContextualizer",
    "FakeDocumentParser",
    "FakeDocumentStore",
    "FakeEmbedder",
    "FakeEngineKit",
    "FakeLLMClient",
    "FakeLexicalStore",
    "FakePageClassifier",
    "FakeQueryRewriter",
    "FakeReranker",
    "FakeSpan",
    "FakeTracer",
    "FakeVectorStore",
    "RecordedSpan",
    "all_fakes",
]
