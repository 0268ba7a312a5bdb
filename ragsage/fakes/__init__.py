"""Every port with no network, for tests and for trying the engine out.

The model doubles (``FakeEmbedder``, ``FakeReranker``, ``FakeLLMClient``) are the
offline adapters of :mod:`ragsage.adapters.offline` plus a record of each call,
which a test asserts on and a server must not keep: the runtime builds the
adapters, never these.  The stores are :mod:`ragsage.adapters.memory`'s, under
the names the adapters reference gives them.  The parsing doubles and the
recording tracer exist for tests alone.
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
