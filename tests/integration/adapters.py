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

from ragsage.errors import PermanentProviderError, RetryableProviderError
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
        # One byte appended per call: atomic across worker processes, unlike a
        # read-modify-write of a number.
        with self.counter.open("ab") as tally:
            tally.write(b".")
            calls = tally.tell() - 1
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


class MarkedFailureEmbedder(FlakyEmbedder):
    """Refuses, permanently, any text holding a marker word (one bad document)."""

    def __init__(self, *, marker: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.marker = marker

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        if any(self.marker in text for text in texts):
            raise PermanentProviderError("the provider rejected this input (HTTP 400)")
        return await super().embed(texts, input_type=input_type)


def slow_second_model(settings: Settings) -> dict[str, Any]:
    """The default embedder as usual; any other hashing width slowed (and maybe picky)."""
    from ragsage.runtime import make_embedder

    delay = float(os.environ.get("TEST_EMBED_DELAY", "0"))
    marker = os.environ.get("TEST_REJECT_MARKER", "")
    counter = Path(os.environ["TEST_EMBED_COUNTER"])

    def factory(kind: str, model: str, dim: int | None) -> Any:
        if kind == "hashing" and dim not in (None, settings.embedding_dim):
            assert dim is not None
            if marker:
                return MarkedFailureEmbedder(
                    marker=marker, dimension=dim, delay=delay, fail_first=0, counter=counter
                )
            return FlakyEmbedder(dimension=dim, delay=delay, fail_first=0, counter=counter)
        return make_embedder(settings, kind, model, dim)

    return {"embedder_factory": factory}
