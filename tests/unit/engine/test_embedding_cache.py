from __future__ import annotations

from ragsage.adapters.embedding_cache import CachingEmbedder
from ragsage.testing import FakeCache, FakeEmbedder


async def test_each_distinct_text_is_embedded_once_per_model_and_input_type() -> None:
    inner, cache = FakeEmbedder(dimension=64), FakeCache()
    embedder = CachingEmbedder(inner, cache)

    first = await embedder.embed(["alpha beta", "gamma delta"])
    again = await embedder.embed(["gamma delta", "alpha beta", "new text"])
    query = await embedder.embed(["alpha beta"], input_type="query")

    assert inner.calls == [("document", 2), ("document", 1), ("query", 1)]
    assert [tuple(round(v, 5) for v in vec) for vec in again[:2]] == [
        tuple(round(v, 5) for v in vec) for vec in reversed(first)
    ]
    assert len(query[0]) == 64
    assert (embedder.hits, embedder.misses) == (2, 4)


async def test_a_damaged_entry_is_recomputed() -> None:
    inner, cache = FakeEmbedder(dimension=64), FakeCache()
    embedder = CachingEmbedder(inner, cache)
    await embedder.embed(["alpha"])
    await cache.set(embedder.key("alpha", "document"), "%%%not base64")
    vectors = await embedder.embed(["alpha"])
    assert len(vectors[0]) == 64 and len(inner.calls) == 2
    await cache.set(embedder.key("alpha", "document"), "AAAA")  # the wrong width
    await embedder.embed(["alpha"])
    assert len(inner.calls) == 3
