"""The Voyage adapters and the provider clients, through the real SDKs, against a loopback server.

Each test starts its own :class:`ProviderServer`, builds the clients exactly as a
process would (:func:`build_provider_clients`), and asserts on what a caller
sees — vectors, scores, tokens, errors — and on what the server received.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

import pytest

from ragsage.adapters.providers import ProviderClients, ProviderConfig, build_provider_clients
from ragsage.adapters.providers.config import PLACEHOLDER_API_KEY
from ragsage.core.errors import ConfigurationError, PermanentProviderError, RetryableProviderError
from ragsage.core.pages import PageImage
from tests.integration.provider_server import API_KEY, ProviderServer, Reply, vector_for

from .shared import (  # noqa: F401 (a fixture)
    EMBEDDINGS,
    PNG,
    RERANK,
    candidate,
    config_for,
)

# -- construction -------------------------------------------------------------


def test_the_config_keeps_keys_out_of_its_repr() -> None:
    config = ProviderConfig(openai_api_key=API_KEY, voyage_api_key=API_KEY)
    assert API_KEY not in repr(config)
    assert API_KEY not in repr(build_provider_clients(config).voyage)


async def test_clients_build_with_no_keys_and_fail_at_request_time(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    clients = build_provider_clients(config_for(server, openai_api_key="", voyage_api_key=""))
    try:
        with pytest.raises(PermanentProviderError, match="no API key is configured"):
            await clients.voyage_embedder().embed(["hello"])
        with pytest.raises(PermanentProviderError, match="HTTP 401"):
            await clients.openai_llm().transcribe(PageImage(PNG))
    finally:
        await clients.aclose()
    assert server.received[0].headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


def test_every_adapter_conforms_to_its_port(server: ProviderServer) -> None:
    from ragsage.core.ports import Contextualizer, Embedder, LLMClient, QueryRewriter, Reranker

    clients = build_provider_clients(config_for(server, embedding_model="text-embedding-3-large"))
    voyage = build_provider_clients(config_for(server))
    assert isinstance(voyage.voyage_embedder(), Embedder)
    assert isinstance(clients.openai_embedder(), Embedder)
    assert isinstance(voyage.voyage_reranker(), Reranker)
    assert isinstance(clients.openai_llm(), LLMClient)
    assert isinstance(clients.openai_contextualizer(), Contextualizer)
    assert isinstance(clients.openai_rewriter(), QueryRewriter)


def test_an_embedding_width_is_known_without_a_call(server: ProviderServer) -> None:
    clients = build_provider_clients(config_for(server))
    assert clients.voyage_embedder().dimension == 1024
    openai = build_provider_clients(config_for(server, embedding_model="text-embedding-3-small"))
    assert openai.openai_embedder().dimension == 1536
    with pytest.raises(ConfigurationError, match="RAGSAGE_EMBEDDING_DIM"):
        build_provider_clients(config_for(server, embedding_model="my-own-model")).openai_embedder()
    with pytest.raises(ConfigurationError, match="256, 512, 2048"):
        build_provider_clients(config_for(server, embedding_dimension=384)).voyage_embedder()
    assert server.received == []


# -- Voyage embeddings ----------------------------------------------------------


async def test_voyage_embeds_in_batches_with_the_input_type(
    server: ProviderServer, clients: ProviderClients
) -> None:
    embedder = clients.voyage_embedder()
    texts = [f"passage number {i}" for i in range(300)]

    vectors = await embedder.embed(texts)
    query = await embedder.embed(["which passage?"], input_type="query")

    sizes = [len(request.body["input"]) for request in server.requests_to(EMBEDDINGS)]
    assert sizes == [128, 128, 44, 1]
    assert [r.body["input_type"] for r in server.requests_to(EMBEDDINGS)] == ["document"] * 3 + [
        "query"
    ]
    assert all(r.body["model"] == "voyage-3-large" for r in server.requests_to(EMBEDDINGS))
    # The SDK asks for base64 and decodes it; the order of the texts is kept.
    assert vectors == [tuple(vector_for(text, 1024)) for text in texts]
    assert query[0] == tuple(vector_for("which passage?", 1024))


async def test_voyage_asks_for_a_shorter_width_when_configured(server: ProviderServer) -> None:
    clients = build_provider_clients(config_for(server, embedding_dimension=256))
    vectors = await clients.voyage_embedder().embed(["short"])
    assert len(vectors[0]) == 256 and clients.voyage_embedder().dimension == 256
    assert server.requests_to(EMBEDDINGS)[0].body["output_dimension"] == 256


async def test_a_reply_of_the_wrong_width_is_refused(
    server: ProviderServer, clients: ProviderClients
) -> None:
    data = [{"object": "embedding", "embedding": [0.5] * 12, "index": 0}]
    server.script(EMBEDDINGS, Reply(body={"data": data, "usage": {"total_tokens": 1}}))
    with pytest.raises(PermanentProviderError, match="12 dimensions where 1024 were expected"):
        await clients.voyage_embedder().embed(["hello"])


async def test_voyage_waits_out_a_rate_limit_then_succeeds(
    server: ProviderServer, clients: ProviderClients, caplog: pytest.LogCaptureFixture
) -> None:
    limited = Reply(429, {"detail": "Too many requests"}, headers={"Retry-After": "1"})
    server.script(EMBEDDINGS, limited)

    started = time.monotonic()
    vectors = await clients.voyage_embedder().embed(["hello"])

    assert time.monotonic() - started >= 0.95
    assert vectors == [tuple(vector_for("hello", 1024))]
    assert len(server.requests_to(EMBEDDINGS)) == 2
    assert "rate limited (HTTP 429)" in caplog.text and "retrying in 1.00 s" in caplog.text


async def test_voyage_gives_up_after_its_retries_with_a_retryable_error(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.script(EMBEDDINGS, *[Reply(500, {"detail": "boom"})] * 3)
    with pytest.raises(RetryableProviderError, match="gave up after 3 attempts") as raised:
        await clients.voyage_embedder().embed(["hello"])
    assert len(server.requests_to(EMBEDDINGS)) == 3
    assert raised.value.retryable


async def test_a_long_retry_after_is_left_to_the_job_runner(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.script(EMBEDDINGS, Reply(429, {"detail": "slow down"}, headers={"Retry-After": "120"}))
    started = time.monotonic()
    with pytest.raises(RetryableProviderError) as raised:
        await clients.voyage_embedder().embed(["hello"])
    assert raised.value.retry_after == 120.0
    assert time.monotonic() - started < 1.0
    assert len(server.requests_to(EMBEDDINGS)) == 1


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(401, {"detail": "Provided API key is invalid."}), "refused.*HTTP 401"),
        (Reply(403, {"detail": "Forbidden"}), "refused.*HTTP 403"),
        (Reply(400, {"detail": "input_type must be query or document"}), "rejected.*HTTP 400"),
        (Reply(404, {"detail": "Not found"}), "rejected.*HTTP 404"),
    ],
)
async def test_voyage_client_errors_are_permanent_and_not_retried(
    server: ProviderServer, clients: ProviderClients, reply: Reply, error: str
) -> None:
    server.script(EMBEDDINGS, reply)
    with pytest.raises(PermanentProviderError, match=error):
        await clients.voyage_embedder().embed(["hello"])
    assert len(server.requests_to(EMBEDDINGS)) == 1


async def test_a_key_echoed_by_the_provider_never_reaches_messages_or_logs(
    server: ProviderServer, clients: ProviderClients, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"detail": f"API key {API_KEY} is invalid"}
    cases: list[tuple[list[Reply], type[Exception]]] = [
        ([Reply(401, echo)], PermanentProviderError),
        ([Reply(401, {"error": {"message": f"bad key {API_KEY}"}})], PermanentProviderError),
        ([Reply(500, echo)] * 3, RetryableProviderError),
    ]
    for replies, kind in cases:
        server.script(EMBEDDINGS, *replies)
        with pytest.raises(kind) as raised:
            await clients.voyage_embedder().embed(["hello"])
        assert API_KEY not in str(raised.value)
        # The SDK's exception quotes the key, so it is not chained into tracebacks.
        assert raised.value.__cause__ is None
        logging.getLogger("test").error("logged failure", exc_info=raised.value)
    assert "[redacted]" in caplog.text and API_KEY not in caplog.text


async def test_an_ordinary_rejection_keeps_the_sdk_error_as_its_cause(
    server: ProviderServer, clients: ProviderClients, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(PermanentProviderError) as raised:
        bad_key = build_provider_clients(config_for(server, voyage_api_key="sk-wrong-key-123"))
        await bad_key.voyage_embedder().embed(["hello"])
    assert type(raised.value.__cause__).__module__.startswith("voyageai")
    assert "sk-wrong-key-123" not in str(raised.value) and "sk-wrong-key-123" not in caplog.text


async def test_a_voyage_body_that_is_not_json_is_a_clear_error(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.script(EMBEDDINGS, Reply(200, b"<html>proxy error</html>"))
    with pytest.raises(PermanentProviderError, match="malformed reply: HTTP 200 with a body"):
        await clients.voyage_embedder().embed(["hello"])
    server.script(EMBEDDINGS, Reply(200, {"unexpected": True}))
    with pytest.raises(PermanentProviderError, match="malformed reply"):
        await clients.voyage_embedder().embed(["hello"])


async def test_a_slow_provider_times_out_as_retryable(server: ProviderServer) -> None:
    clients = build_provider_clients(config_for(server, timeout_seconds=0.3, max_retries=0))
    server.script(EMBEDDINGS, Reply(200, {"data": []}, delay=2.0))
    started = time.monotonic()
    with pytest.raises(RetryableProviderError, match="timed out"):
        await clients.voyage_embedder().embed(["hello"])
    assert time.monotonic() - started < 1.5


async def test_an_unreachable_provider_is_retryable() -> None:
    clients = build_provider_clients(
        ProviderConfig(
            voyage_api_key=API_KEY,
            openai_api_key=API_KEY,
            voyage_base_url="http://127.0.0.1:9/v1",
            openai_base_url="http://127.0.0.1:9/v1",
            embedding_model="text-embedding-3-small",
            max_retries=1,
            retry_backoff_seconds=0.01,
        )
    )
    with pytest.raises(RetryableProviderError, match="could not reach"):
        await clients.voyage_reranker().rerank("q", [candidate(0, "a")], top_k=1)
    with pytest.raises(RetryableProviderError, match="could not reach"):
        await clients.openai_embedder().embed(["hello"])
    await clients.aclose()


# -- Voyage rerank ------------------------------------------------------------


async def test_voyage_reranks_by_index_and_applies_top_k(
    server: ProviderServer, clients: ProviderClients
) -> None:
    candidates = [
        candidate(0, "holidays are 28 days"),
        candidate(1, "expenses are paid within 14 days"),
        candidate(2, "expenses abroad cover meals"),
    ]
    ranked = await clients.voyage_reranker().rerank("expenses paid", candidates, top_k=2)

    assert [r.chunk.id for r in ranked] == ["doc:1", "doc:2"]
    assert [r.rerank_score for r in ranked] == [1.0, 0.5]
    assert ranked[0].score == candidates[1].score  # the fused score is left alone
    sent = server.requests_to(RERANK)[0].body
    assert sent["documents"] == [c.chunk.text for c in candidates]
    assert sent["model"] == "rerank-2" and sent["top_k"] is None


async def test_voyage_rerank_drops_results_with_bad_indexes(
    server: ProviderServer, clients: ProviderClients, caplog: pytest.LogCaptureFixture
) -> None:
    data = [
        {"index": 7, "relevance_score": 0.99},
        {"relevance_score": 0.98},
        {"index": "1", "relevance_score": 0.97},
        {"index": 1, "relevance_score": 0.9},
        {"index": 1, "relevance_score": 0.95},
        {"index": 0, "relevance_score": "high"},
        {"index": -1, "relevance_score": 0.8},
        {"index": 0, "relevance_score": 0.2},
    ]
    server.script(RERANK, Reply(body={"object": "list", "data": data}))
    candidates = [candidate(0, "first"), candidate(1, "second")]

    ranked = await clients.voyage_reranker().rerank("q", candidates, top_k=5)

    assert [(r.chunk.id, r.rerank_score) for r in ranked] == [("doc:1", 0.9), ("doc:0", 0.2)]
    assert caplog.text.count("dropped a result") == 6


async def test_voyage_rerank_of_nothing_makes_no_call(
    server: ProviderServer, clients: ProviderClients
) -> None:
    assert await clients.voyage_reranker().rerank("q", [], top_k=3) == []
    assert server.received == []


# -- import hygiene -------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "absent"),
    [
        ("import ragsage", ["voyageai", "openai", "numpy", "onnxruntime"]),
        (
            "import ragsage.adapters.providers",
            ["voyageai", "openai", "numpy", "onnxruntime", "PIL"],
        ),
    ],
)
def test_importing_loads_no_sdk(statement: str, absent: list[str]) -> None:
    probe = (
        f"import sys, json; {statement}; "
        f"print(json.dumps([m for m in {absent!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []
