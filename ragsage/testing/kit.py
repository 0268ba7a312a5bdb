"""The memory kit with a recording double for every port, as the tests use it."""

from __future__ import annotations

from collections.abc import Iterable

from ragsage.adapters.offline import DEFAULT_DIMENSION
from ragsage.core.ports import Chunker, Contextualizer, DocumentParser, PageClassifier
from ragsage.runtime.memory_kit import MemoryKit
from ragsage.testing.models import FakeEmbedder, FakeLLMClient, FakeQueryRewriter, FakeReranker
from ragsage.testing.parsing import (
    FakeChunker,
    FakeContextualizer,
    FakeDocumentParser,
    FakePageClassifier,
)
from ragsage.testing.stores import FakeCache, FakeDocumentStore, FakeLexicalStore, FakeVectorStore
from ragsage.testing.tracing import FakeTracer

__all__ = ["FakeEngineKit", "all_fakes"]


class FakeEngineKit(MemoryKit):
    """Every fake, instantiated once and shared, so ingest and query see one corpus.

    The parsing adapters can be swapped for real ones while the stores and
    models stay in memory.  The models record their calls and the tracer its
    spans, for the tests to assert on.
    """

    def __init__(
        self,
        *,
        parser: DocumentParser | None = None,
        classifier: PageClassifier | None = None,
        chunker: Chunker | None = None,
        contextualizer: Contextualizer | None = None,
        dimension: int | None = None,
    ) -> None:
        # A parse cache in memory too (the offline kit has none), for the tests to watch.
        cache = FakeCache()
        super().__init__(
            parser=parser or FakeDocumentParser(),
            classifier=classifier or FakePageClassifier(),
            chunker=chunker or FakeChunker(),
            contextualizer=contextualizer or FakeContextualizer(),
            embedder=FakeEmbedder(dimension=dimension or DEFAULT_DIMENSION),
            reranker=FakeReranker(),
            llm=FakeLLMClient(),
            rewriter=FakeQueryRewriter(),
            tracer=FakeTracer(),
            cache=cache,
        )
        self.cache: FakeCache = cache


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
