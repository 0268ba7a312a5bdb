"""Attacks 4 and 5: one reader timing another's questions, and filters compared two ways.

4. Query vectors were cached per namespace, so a question a ``group:hr``
   reader had asked came back about 6 ms faster for a ``group:eng`` reader:
   timing told it which questions hr asked.  The cache is now keyed by the
   reader's principal set; here the cache's own entries show it (a reader of
   another group pays for its own embedding), since tests never assert timings.
5. A restricted key filtered to ``{"public": true}`` was kept from a document
   tagged ``{"public": 1}`` by its searches (jsonb) but was served it by
   ``/v1/chunks`` and ``/v1/sources`` (Python's ``True == 1``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from ragsage.adapters.embedding_cache import CachingEmbedder, embed_cache_prefix
from ragsage.adapters.offline.hashing import HashingEmbedder
from ragsage.core.keys import Role
from ragsage.runtime import build_runtime
from ragsage.runtime.infrastructure import build_cache
from tests.integration.api_harness import ApiServer, ingested, make_key, serve
from tests.integration.worker_harness import Deployment

PAY = (
    b"# Pay\n\n## Bands\n\nSalary bands are reviewed every April by the pay board, "
    b"which publishes the new ranges a month later.\n"
)


def _query_vectors(deployment: Deployment) -> set[bytes]:
    cache = redis.Redis.from_url(deployment.settings.cache_redis_url)
    try:
        return {
            key
            for key in cache.scan_iter(match=embed_cache_prefix("acme") + "*")
            if b":query:" in key
        }
    finally:
        cache.close()


@pytest.fixture
def cached_api(running: Deployment) -> Iterator[ApiServer]:
    """The API with its query vectors cached, as with any model worth caching.

    The tests' hashing embedder is not cached in production (a vector is
    cheaper to make than to fetch), so here the same embedder is wrapped.
    """
    settings = running.settings
    cache = build_cache(settings)
    assert cache is not None
    embedder = CachingEmbedder(HashingEmbedder(dimension=settings.embedding_dim), cache)
    # The runtime owns the cache, and closes it with the app.
    yield from serve(running, build_runtime(settings, embedder=embedder, cache=cache))


def test_a_question_one_group_asked_is_no_faster_for_another_group(
    running: Deployment, cached_api: ApiServer
) -> None:
    api = cached_api
    writer = api.client(make_key(running.settings, "acme", Role.WRITE))
    ingested(writer, "pay.md", PAY)
    hr = api.client(make_key(running.settings, "acme", Role.READ, ["group:hr"]))
    eng = api.client(make_key(running.settings, "acme", Role.READ, ["group:eng"]))
    question = {"query": "when are salary bands reviewed", "top_k": 3}

    assert hr.post("/v1/search", json=question).status_code == 200
    after_hr = _query_vectors(running)
    assert hr.post("/v1/search", json=question).status_code == 200
    assert _query_vectors(running) == after_hr  # hr's own repeat is served from its cache
    assert eng.post("/v1/search", json=question).status_code == 200
    after_eng = _query_vectors(running)
    # eng's search found nothing of hr's in the cache: it embedded (and stored) its own.
    assert len(after_eng - after_hr) == 1


def test_a_filter_on_true_never_serves_a_document_tagged_one(
    running: Deployment, api: ApiServer
) -> None:
    writer = api.client(make_key(running.settings, "acme", Role.WRITE))
    for name, public in (("open.md", True), ("numeric.md", 1)):
        text = f"# {name}\n\nThe quarterly wombat census counts {name} burrows.\n".encode()
        reply = writer.post(
            "/v1/documents",
            files={"file": (name, text, "text/markdown")},
            data={"metadata": json.dumps({"public": public})},
        )
        assert reply.status_code == 202, reply.text
        running.wait("acme", [reply.json()["job_id"]])
    everything = writer.post("/v1/search", json={"query": "wombat census", "top_k": 10}).json()
    chunk_of = {hit["chunk"]["source"]: hit["chunk"]["id"] for hit in everything["results"]}
    assert set(chunk_of) == {"open.md", "numeric.md"}

    delegate = api.client(make_key(running.settings, "acme", Role.DELEGATE))
    issued = delegate.post(
        "/v1/restricted-keys",
        json={
            "principals": ["user:kim"],
            "expires_in": 600,
            "filters": {"metadata": {"public": True}},
        },
    )
    assert issued.status_code == 201, issued.text
    kim = api.client(issued.json()["key"])
    found = kim.post("/v1/search", json={"query": "wombat census", "top_k": 10}).json()
    assert {hit["chunk"]["source"] for hit in found["results"]} == {"open.md"}
    assert kim.get(f"/v1/chunks/{chunk_of['open.md']}").status_code == 200
    hidden = kim.get(f"/v1/chunks/{chunk_of['numeric.md']}")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"
    assert kim.get("/v1/sources").json()["sources"] == ["open.md"]
