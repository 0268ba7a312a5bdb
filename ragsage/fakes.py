"""``ragsage.fakes``: a recording double for every port, by the path the reference page names.

They live in :mod:`ragsage.testing`.
"""

from ragsage.testing import (
    FakeCache,
    FakeChunker,
    FakeContextualizer,
    FakeDocumentParser,
    FakeDocumentStore,
    FakeEmbedder,
    FakeEngineKit,
    FakeLexicalStore,
    FakeLLMClient,
    FakePageClassifier,
    FakeQueryRewriter,
    FakeReranker,
    FakeSpan,
    FakeTracer,
    FakeVectorStore,
    RecordedSpan,
    all_fakes,
)

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
