from __future__ import annotations

from ragsage.adapters.embedding_cache import CachingEmbedder, embed_cache_prefix
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.testing import FakeCache, FakeEmbedder, FakeEngineKit


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


class KeptCache:
    """A cache that shows its keys."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self.entries.get(key)

    async def set(self, key: str, value: str) -> None:
        self.entries[key] = value


async def test_each_namespace_keeps_its_own_vectors_through_ingestion_and_search() -> None:
    inner, cache = FakeEmbedder(dimension=64), KeptCache()
    kit = FakeEngineKit()
    kit.embedder = CachingEmbedder(inner, cache)
    source = RawSource(b"Refunds take five days from the day the parcel arrives.", "refunds.txt")
    for namespace in ("acme", "acme:eu"):  # ':' is allowed in a namespace
        await kit.ingestion().ingest(Scope(namespace), source)
    # The same text, embedded once per namespace: the second tenant got no faster answer
    # telling it the first had embedded it.
    assert [kind for kind, _ in inner.calls] == ["document", "document"]

    engine = kit.query_engine()
    for namespace in ("acme", "acme:eu", "acme"):
        found = await engine.search(Scope(namespace), "how long do refunds take")
        assert found.hits
    assert [kind for kind, _ in inner.calls].count("query") == 2  # acme's second was cached

    keys = [key for key in cache.entries if key.startswith("ragsage:embed:")]
    owners = {key for key in keys if key.startswith(embed_cache_prefix("acme"))}
    assert owners and len(owners) == len(keys) // 2
    assert all(key.startswith(embed_cache_prefix("acme:eu")) for key in set(keys) - owners)


async def test_a_question_one_reader_asked_is_no_cache_hit_for_a_reader_of_another_group() -> None:
    inner, cache = FakeEmbedder(dimension=64), KeptCache()
    kit = FakeEngineKit()
    kit.embedder = CachingEmbedder(inner, cache)
    source = RawSource(b"Salary bands are reviewed every April by the pay board.", "pay.txt")
    await kit.ingestion().ingest(Scope("acme"), source)
    engine = kit.query_engine()
    hr, eng = Scope("acme", frozenset({"group:hr"})), Scope("acme", frozenset({"group:eng"}))
    question = "when are salary bands reviewed"
    for scope in (hr, hr, eng, Scope("acme"), Scope("acme", frozenset({"group:hr"}))):
        await engine.search(scope, question)
    # hr asked twice and once more under an equal set: one embedding; eng and the
    # unbound reader each paid for their own, learning nothing of hr's question.
    assert [kind for kind, _ in inner.calls].count("query") == 3
