from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from ragsage.core.chunks import Chunk, ScoredChunk
from ragsage.core.documents import RawSource
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig, IngestResult
from ragsage.testing import FakeEngineKit

Ingest = Callable[..., Awaitable[IngestResult]]


def scored(name: str, text: str, score: float, language: str | None) -> ScoredChunk:
    """A candidate of document ``d`` as the stores return one, ``language`` in its metadata."""
    chunk = Chunk(
        id=f"d:{name}",
        document_id="d",
        ordinal=0,
        text=text,
        embed_text=text,
        metadata={"language": language} if language else {},
    )
    return ScoredChunk(chunk=chunk, score=score)


HANDBOOK = """# Employee handbook

## Holidays

Every employee receives 28 days of paid holiday per year. Unused holiday days may be
carried over into the first quarter of the next year, up to a maximum of five days.

## Expenses

Travel expenses are reimbursed within 14 days when the receipt is uploaded to the
finance portal. Meals abroad are covered up to 40 euros per day.

## Security

Laptops must use full-disk encryption. Report a lost device to the security desk
within one hour, day or night.
"""


@pytest.fixture
def kit() -> FakeEngineKit:
    return FakeEngineKit()


@pytest.fixture
def scope() -> Scope:
    return Scope("acme")


@pytest.fixture
def ingest(kit: FakeEngineKit, scope: Scope) -> Ingest:
    async def run(
        text: str | bytes,
        filename: str = "handbook.md",
        *,
        config: IngestionConfig | None = None,
        into: Scope | None = None,
        **kwargs: object,
    ) -> IngestResult:
        content = text.encode() if isinstance(text, str) else text
        pipeline = kit.ingestion(config or IngestionConfig(chunk_size=40, chunk_overlap=5))
        return await pipeline.ingest(into or scope, RawSource(content, filename), **kwargs)  # type: ignore[arg-type]

    return run
