"""Model adapters the worker under test loads through ``RAGSAGE_ADAPTERS``.

Honest offline providers with the failure modes real ones have: latency, and a
run of transient errors (what a provider adapter turns HTTP 503 into).  Knobs
come from environment variables so each test's worker process can differ.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsage.errors import RetryableProviderError
from ragsage.fakes.models import FakeEmbedder
from ragsage.ports import InputType
from ragsage.settings import Settings


class FlakyEmbedder(FakeEmbedder):
    """The hashing embedder behind a provider that is slow, and fails N times first."""

    def __init__(self, *, dimension: int, delay: float, fail_first: int, counter: Path) -> None:
        super().__init__(dimension=dimension)
        self.delay, self.fail_first, self.counter = delay, fail_first, counter

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if self.delay:
            await asyncio.sleep(self.delay)
        calls = int(self.counter.read_text()) if self.counter.exists() else 0
        self.counter.write_text(str(calls + 1))
        if calls < self.fail_first:
            raise RetryableProviderError("embedding provider answered HTTP 503 (unavailable)")
        return await super().embed(texts, input_type=input_type)


def flaky(settings: Settings) -> dict[str, Any]:
    return {
        "embedder": FlakyEmbedder(
            dimension=settings.embedding_dim,
            delay=float(os.environ.get("TEST_EMBED_DELAY", "0")),
            fail_first=int(os.environ.get("TEST_EMBED_FAIL_FIRST", "0")),
            counter=Path(os.environ["TEST_EMBED_COUNTER"]),
        )
    }


class CrashingEmbedder(FakeEmbedder):
    """A provider call that takes the whole worker process down, every time."""

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        os._exit(3)


def crashing(settings: Settings) -> dict[str, Any]:
    return {"embedder": CrashingEmbedder(dimension=settings.embedding_dim)}
