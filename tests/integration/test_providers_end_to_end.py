"""The whole pipeline on the production adapters, pointed at a local wire server.

Ingestion embeds through the OpenAI SDK, contextualizes with a chat model and
reads a scanned page with the vision route; the query is rewritten, reranked by
Voyage and answered by a streamed chat completion — every call over HTTP in the
providers' own formats, into a real Postgres.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ragsage.adapters.postgres import PostgresConfig
from ragsage.core.conversations import Turn
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.runtime import Runtime, build_runtime
from ragsage.settings import Settings

from ..fixtures.make_fixtures import build_all
from .helpers import HOTEL_DETAILS
from .provider_server import API_KEY, ProviderServer

ACME = Scope("acme")
TRAVEL = (
    b"# Travel policy\n\n## Hotels\n\nHotel nights in Paris are reimbursed up to 180 euros. "
    + HOTEL_DETAILS
    + b"\n\n## Trains\n\nFirst class is allowed for journeys over four hours.\n"
)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    running = ProviderServer(dimension=256).start()
    yield running
    running.stop()


@pytest.fixture
def settings(pg_config: PostgresConfig, server: ProviderServer) -> Settings:
    return Settings.from_env(
        {},
        database_url=pg_config.dsn,
        app_database_url=pg_config.app_dsn,
        embedding_dim=256,
        embedder="openai",
        embedding_model="text-embedding-3-small",
        generator="openai",
        reranker="voyage",
        contextualizer="openai",
        rewriter="openai",
        transcriber="openai",
        openai_api_key=API_KEY,
        voyage_api_key=API_KEY,
        openai_base_url=server.url,
        voyage_base_url=server.url,
        provider_timeout=5.0,
    )


async def ingest(runtime: Runtime, name: str, data: bytes) -> int:
    pipeline = runtime.pipeline(await runtime.embedder_for_scope(ACME))
    prepared = await pipeline.prepare(ACME, RawSource(data, name))
    async with runtime.database.session(ACME) as session:
        vectors, lexical, documents = runtime.stores(session, embedder=pipeline.embedder)
        result = await pipeline.store(
            ACME, prepared, vector_store=vectors, lexical_store=lexical, document_store=documents
        )
    return result.chunks


async def test_ingest_and_answer_through_the_provider_adapters(
    settings: Settings, server: ProviderServer, tmp_path: object
) -> None:
    runtime = build_runtime(settings)
    try:
        await runtime.database.migrate()
        assert await ingest(runtime, "travel.md", TRAVEL) >= 2
        documents = server.requests_to("/v1/embeddings")
        assert documents and all(r.body["model"] == "text-embedding-3-small" for r in documents)
        contexts = [
            r
            for r in server.requests_to("/v1/chat/completions")
            if "Travel policy" in json.dumps(r.body)
        ]
        assert contexts, "each chunk was situated by the context model"

        server.chat_reply = "Hotel nights in Paris are reimbursed up to 180 euros [1]."
        engine = await runtime.query_engine_for(ACME)
        answer = await engine.answer(
            ACME,
            "And in Paris?",
            history=[Turn("user", "How much is a hotel night?")],
        )

        assert answer.text == server.chat_reply
        assert [c.source for c in answer.citations] == ["travel.md"]
        assert "Hotels" in answer.citations[0].heading_path
        assert server.requests_to("/v1/rerank"), "candidates were reranked by Voyage"
        streamed = [r for r in server.requests_to("/v1/chat/completions") if r.body.get("stream")]
        assert streamed, "the answer was generated as a stream"
    finally:
        await runtime.aclose()


async def test_a_scanned_page_is_read_by_the_vision_model(
    settings: Settings, server: ProviderServer, tmp_path: object
) -> None:
    from pathlib import Path

    scan = build_all(Path(str(tmp_path)) / "fixtures")["scan.png"].read_bytes()
    server.chat_reply = "Warranty claims close after two years."
    runtime = build_runtime(settings)
    try:
        await runtime.database.migrate()
        assert await ingest(runtime, "scan.png", scan) >= 1
        vision = [
            r
            for r in server.requests_to("/v1/chat/completions")
            if "image_url" in json.dumps(r.body)
        ]
        assert vision, "the page image went to the vision model"
        found = await (await runtime.query_engine_for(ACME)).search(ACME, "warranty claims")
        assert found.hits and found.hits[0].chunk.source == "scan.png"
    finally:
        await runtime.aclose()


async def test_a_scanned_pdf_is_read_offline_by_ocr(
    pg_config: PostgresConfig, tmp_path: object
) -> None:
    from pathlib import Path

    from ..fixtures.make_fixtures import SCANNED_TEXT

    offline = Settings.from_env(
        {},
        database_url=pg_config.dsn,
        app_database_url=pg_config.app_dsn,
        embedding_dim=256,
    )
    scanned = build_all(Path(str(tmp_path)) / "fixtures")["scanned.pdf"].read_bytes()
    runtime = build_runtime(offline)  # no keys: the transcriber is Tesseract
    try:
        await runtime.database.migrate()
        assert await ingest(runtime, "scanned.pdf", scanned) >= 1
        phrase = " ".join(SCANNED_TEXT.split()[:3])
        found = await (await runtime.query_engine_for(ACME)).search(ACME, phrase)
        assert found.hits and found.hits[0].chunk.source == "scanned.pdf"
        assert found.hits[0].chunk.page_numbers == (1,)
    finally:
        await runtime.aclose()
