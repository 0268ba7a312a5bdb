"""The OpenAI adapters (and the contextualizer and rewriter on them) against a loopback server."""

from __future__ import annotations

import base64
import logging
import time
from contextlib import aclosing

import pytest

from ragsage.adapters.providers import ProviderClients, build_provider_clients
from ragsage.core.chunks import Chunk
from ragsage.core.conversations import Turn
from ragsage.core.documents import Document
from ragsage.core.errors import PermanentProviderError, RetryableProviderError
from ragsage.core.pages import PageImage
from tests.integration.provider_server import API_KEY, ProviderServer, Reply, vector_for

from .shared import (  # noqa: F401 (a fixture)
    CHAT,
    EMBEDDINGS,
    PNG,
    config_for,
)

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
