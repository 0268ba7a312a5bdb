"""Every port with no network, for tests and for trying the engine out.

The model doubles (``FakeEmbedder``, ``FakeReranker``, ``FakeLLMClient``) are the
offline adapters of :mod:`ragsage.adapters.offline` plus a record of each call,
which a test asserts on and a server must not keep: the runtime builds the
adapters, never these.  The stores are :mod:`ragsage.adapters.memory`'s, under
the names the adapters reference gives them.  The parsing doubles and the
recording tracer exist for tests alone.
"""

from ragsage.testing.kit import FakeEngineKit, all_fakes
from ragsage.testing.models import FakeEmbedder, FakeLLMClient, FakeQueryRewriter, FakeReranker
from ragsage.testing.parsing import (
    FakeChunker,
    FakeContextualizer,
    FakeDocumentParser,
    FakePageClassifier,
)
from ragsage.testing.stores import FakeCache, FakeDocumentStore, FakeLexicalStore, FakeVectorStore
from ragsage.testing.tracing import FakeSpan, FakeTracer, RecordedSpan

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
