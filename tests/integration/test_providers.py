"""The Voyage and OpenAI adapters, through the real SDKs, against a loopback server.

Each test starts its own :class:`ProviderServer`, builds the clients exactly as a
process would (:func:`build_provider_clients`), and asserts on what a caller
sees — vectors, scores, tokens, errors — and on what the server received.
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing

import pytest

from ragsage.adapters.providers import ProviderClients, ProviderConfig, build_provider_clients
from ragsage.adapters.providers.config import PLACEHOLDER_API_KEY
from ragsage.core.errors import ConfigurationError, PermanentProviderError, RetryableProviderError
from ragsage.core.types import Chunk, Document, PageImage, ScoredChunk, Turn
from tests.integration.provider_server import API_KEY, ProviderServer, Reply, vector_for

EMBEDDINGS = "/v1/embeddings"
RERANK = "/v1/rerank"
CHAT = "/v1/chat/completions"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    running = ProviderServer().start()
    yield running
    running.stop()


def config_for(server: ProviderServer, **overrides: object) -> ProviderConfig:
    values: dict[str, object] = {
        "openai_api_key": API_KEY,
        "voyage_api_key": API_KEY,
        "openai_base_url": server.url,
        "voyage_base_url": server.url,
        "timeout_seconds": 5.0,
        "max_retries": 2,
        "retry_backoff_seconds": 0.01,
        "max_retry_sleep_seconds": 3.0,
        **overrides,
    }
    return ProviderConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
async def clients(server: ProviderServer) -> AsyncIterator[ProviderClients]:
    built = build_provider_clients(config_for(server))
    yield built
    await built.aclose()


def candidate(number: int, text: str) -> ScoredChunk:
    chunk = Chunk(id=f"doc:{number}", document_id="doc", ordinal=number, text=text, embed_text=text)
    return ScoredChunk(chunk=chunk, score=1.0 / (number + 1))


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


# -- OpenAI embeddings --------------------------------------------------------


async def test_openai_embeds_in_batches_over_a_compatible_server(server: ProviderServer) -> None:
    clients = build_provider_clients(
        config_for(server, embedding_model="bge-small", embedding_dimension=8, embed_batch_size=3)
    )
    embedder = clients.openai_embedder()
    texts = [f"text {i}" for i in range(7)]
    server.dimension = 8  # the server's model is 8 wide, and no width is requested

    vectors = await embedder.embed(texts)

    requests = server.requests_to(EMBEDDINGS)
    assert [len(r.body["input"]) for r in requests] == [3, 3, 1]
    assert all(r.body["encoding_format"] == "float" for r in requests)
    assert all("dimensions" not in r.body for r in requests)
    assert vectors == [tuple(vector_for(text, 8)) for text in texts]
    assert embedder.model == "bge-small" and embedder.dimension == 8
    await clients.aclose()


async def test_openai_requests_a_shortened_width(server: ProviderServer) -> None:
    config = config_for(server, embedding_model="text-embedding-3-small", embedding_dimension=64)
    clients = build_provider_clients(config)
    vectors = await clients.openai_embedder().embed(["hi"], input_type="query")
    assert len(vectors[0]) == 64
    assert server.requests_to(EMBEDDINGS)[0].body["dimensions"] == 64
    await clients.aclose()


async def test_openai_embeddings_with_prefixes_for_asymmetric_models(
    server: ProviderServer, clients: ProviderClients
) -> None:
    from ragsage.adapters.providers import OpenAIEmbedder

    embedder = OpenAIEmbedder(
        clients.openai, model="e5", dimension=8, query_prefix="query: ", document_prefix="passage: "
    )
    server.dimension = 8
    await embedder.embed(["a"], input_type="query")
    await embedder.embed(["b"])
    assert [r.body["input"] for r in server.requests_to(EMBEDDINGS)] == [
        ["query: a"],
        ["passage: b"],
    ]


# -- OpenAI generation and vision ---------------------------------------------


async def test_generation_streams_token_by_token(
    server: ProviderServer, clients: ProviderClients
) -> None:
    import threading

    server.chat_reply = "Holidays are 28 days a year [1]."
    server.stream_gate = threading.Semaphore(0)
    received: list[str] = []

    async for token in clients.openai_llm().generate("How many holidays?"):
        received.append(token)
        server.stream_gate.release()

    assert received == server.stream_tokens()
    assert "".join(received) == server.chat_reply
    assert server.gate_timeouts == 0  # each token reached us before the next was sent
    body = server.requests_to(CHAT)[0].body
    assert body["stream"] is True and body["model"] == "gpt-4o"
    assert body["messages"] == [{"role": "user", "content": "How many holidays?"}]
    # A compatible server is sent the classic cap name (none is set by default).
    assert "max_tokens" not in body and "max_completion_tokens" not in body


async def test_generation_caps_tokens_under_the_name_the_endpoint_accepts(
    server: ProviderServer,
) -> None:
    from ragsage.adapters.providers import OpenAILLMClient, OpenAIService

    clients = build_provider_clients(config_for(server, generation_max_tokens=50))
    official = OpenAIService(clients.openai.sdk, token_parameter="max_completion_tokens")
    for llm in (clients.openai_llm(), OpenAILLMClient(official, generation_max_tokens=50)):
        async with aclosing(llm.generate("hi")) as tokens:
            await anext(tokens)  # stop after the first token: the stream is closed early
    first, second = server.requests_to(CHAT)
    assert first.body["max_tokens"] == 50 and "max_completion_tokens" not in first.body
    assert second.body["max_completion_tokens"] == 50 and "max_tokens" not in second.body
    await clients.aclose()


async def test_opening_a_stream_is_retried_but_a_broken_stream_is_raised(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.script(CHAT, Reply(503, {"error": {"message": "overloaded"}}))
    tokens = [token async for token in clients.openai_llm().generate("hi")]
    assert "".join(tokens) == server.chat_reply
    assert len(server.requests_to(CHAT)) == 2

    bad = b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\ndata: {not json\n\n'
    server.script(CHAT, Reply(200, bad, headers={"content-type": "text/event-stream"}))
    seen: list[str] = []
    with pytest.raises(PermanentProviderError, match="malformed"):
        async for token in clients.openai_llm().generate("hi"):
            seen.append(token)
    assert seen == ["Hel"]


async def test_a_stream_that_stalls_times_out(server: ProviderServer) -> None:
    import threading

    clients = build_provider_clients(config_for(server, timeout_seconds=0.3, max_retries=0))
    server.stream_gate = threading.Semaphore(0)  # never released: the second token never comes
    tokens: list[str] = []
    with pytest.raises(RetryableProviderError, match="stalled"):
        async for token in clients.openai_llm().generate("hi"):
            tokens.append(token)
    assert tokens == [server.stream_tokens()[0]]
    for _ in range(10):
        server.stream_gate.release()
    await clients.aclose()


async def test_transcription_sends_the_page_as_a_base64_image(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.chat_reply = "  # Invoice 42\n\nTotal: 120 EUR\n"

    text = await clients.openai_llm().transcribe(PageImage(PNG, media_type="image/png"))

    assert text == "# Invoice 42\n\nTotal: 120 EUR"
    body = server.requests_to(CHAT)[0].body
    assert body["model"] == "gpt-4o" and body.get("stream") in (None, False)
    assert body["max_tokens"] == 4096
    (message,) = body["messages"]
    parts = {part["type"]: part for part in message["content"]}
    url = parts["image_url"]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    assert "Markdown" in parts["text"]["text"]


@pytest.mark.parametrize(
    ("reply", "kind", "message"),
    [
        (Reply(429, {"error": {"message": "slow"}}), RetryableProviderError, "HTTP 429"),
        (Reply(500, {"error": {"message": "boom"}}), RetryableProviderError, "gave up after 3"),
        (Reply(401, {"error": {"message": "bad key"}}), PermanentProviderError, "refused.*401"),
        (Reply(404, {"error": {"message": "no model"}}), PermanentProviderError, "rejected.*404"),
        (Reply(200, b"{not json"), PermanentProviderError, "malformed reply"),
        (Reply(200, {"choices": []}), PermanentProviderError, "no choices"),
    ],
)
async def test_openai_failures_are_translated(
    server: ProviderServer,
    clients: ProviderClients,
    caplog: pytest.LogCaptureFixture,
    reply: Reply,
    kind: type[Exception],
    message: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(CHAT, *[reply] * 3)
    with pytest.raises(kind, match=message) as raised:
        await clients.openai_llm().transcribe(PageImage(PNG))
    assert API_KEY not in str(raised.value) and API_KEY not in caplog.text


async def test_openai_honours_retry_after(server: ProviderServer, clients: ProviderClients) -> None:
    server.script(CHAT, Reply(429, {"error": {"message": "slow"}}, headers={"retry-after": "1"}))
    started = time.monotonic()
    assert await clients.openai_llm().transcribe(PageImage(PNG)) == server.chat_reply
    assert time.monotonic() - started >= 0.95
    assert len(server.requests_to(CHAT)) == 2


# -- contextualizer and rewriter ----------------------------------------------


DOCUMENT = Document(id="d1", content_hash="h", title="Handbook", source="handbook.md")


def chunk_of(text: str) -> Chunk:
    return Chunk(id="d1:0", document_id="d1", ordinal=0, text=text, embed_text=text)


async def test_the_contextualizer_sends_the_document_as_a_cacheable_prefix(
    server: ProviderServer, clients: ProviderClients
) -> None:
    full_text = "# Handbook\n\nHolidays: 28 days.\n\nExpenses: paid within 14 days."
    server.chat_reply = "From the handbook's expenses section."
    contextualizer = clients.openai_contextualizer()

    first = await contextualizer.contextualize(
        DOCUMENT, chunk_of("Expenses: paid within 14 days."), full_text=full_text
    )
    await contextualizer.contextualize(
        DOCUMENT, chunk_of("Holidays: 28 days."), full_text=full_text
    )

    assert first == "From the handbook's expenses section.\n\nExpenses: paid within 14 days."
    one, two = (r.body for r in server.requests_to(CHAT))
    assert one["messages"][0]["role"] == "system" and full_text in one["messages"][0]["content"]
    assert one["messages"][0] == two["messages"][0]  # identical prefix for every chunk
    assert "Expenses: paid within 14 days." in one["messages"][1]["content"]
    assert one["model"] == "gpt-4o-mini" and one["max_tokens"] == 128


async def test_an_empty_context_leaves_the_chunk_unchanged(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.chat_reply = "   "
    text = await clients.openai_contextualizer().contextualize(
        DOCUMENT, chunk_of("Holidays: 28 days."), full_text="Holidays: 28 days."
    )
    assert text == "Holidays: 28 days."


async def test_a_huge_document_is_cut_to_a_window_around_the_chunk(
    server: ProviderServer,
) -> None:
    clients = build_provider_clients(config_for(server, context_document_chars=2000))
    full_text = "filler " * 1000 + "THE CHUNK TEXT" + " more" * 1000
    await clients.openai_contextualizer().contextualize(
        DOCUMENT, chunk_of("THE CHUNK TEXT"), full_text=full_text
    )
    system = server.requests_to(CHAT)[0].body["messages"][0]["content"]
    assert "THE CHUNK TEXT" in system and len(system) < 2200
    await clients.aclose()


async def test_the_rewriter_makes_no_call_without_history(
    server: ProviderServer, clients: ProviderClients
) -> None:
    assert await clients.openai_rewriter().rewrite("What is RLS?", []) == "What is RLS?"
    assert server.received == []


async def test_the_rewriter_resolves_a_follow_up(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.chat_reply = '"What does the Pro plan cost?"'
    history = [
        Turn("user", "Tell me about the Pro plan"),
        Turn("assistant", "It includes SSO."),
    ]
    rewritten = await clients.openai_rewriter().rewrite("How much is it?", history)

    assert rewritten == "What does the Pro plan cost?"
    body = server.requests_to(CHAT)[0].body
    user = body["messages"][1]["content"]
    assert "User: Tell me about the Pro plan" in user and "Assistant: It includes SSO." in user
    assert user.endswith("Last question: How much is it?")
    assert body["max_tokens"] == 256


async def test_an_empty_rewrite_falls_back_to_the_question(
    server: ProviderServer, clients: ProviderClients
) -> None:
    server.chat_reply = ""
    history = [Turn("user", "hi")]
    assert await clients.openai_rewriter().rewrite("And then?", history) == "And then?"


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
