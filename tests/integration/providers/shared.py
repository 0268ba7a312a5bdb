"""What the provider tests share: the loopback server, its clients, a config and candidates."""

from __future__ import annotations

import base64

from ragsage.adapters.providers import ProviderConfig
from ragsage.core.chunks import Chunk, ScoredChunk
from tests.integration.provider_server import API_KEY, ProviderServer

EMBEDDINGS = "/v1/embeddings"
RERANK = "/v1/rerank"
CHAT = "/v1/chat/completions"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


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


def candidate(number: int, text: str) -> ScoredChunk:
    chunk = Chunk(id=f"doc:{number}", document_id="doc", ordinal=number, text=text, embed_text=text)
    return ScoredChunk(chunk=chunk, score=1.0 / (number + 1))
