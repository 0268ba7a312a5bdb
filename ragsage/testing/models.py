"""The offline model adapters, recording every call so a test can look at them.

The runtime builds the adapters of :mod:`ragsage.adapters.offline`, which keep
nothing per call; these doubles add the record a test asserts on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from ragsage.adapters.offline import (
    DEFAULT_DIMENSION,
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
    hashed_vector,
    overlap_score,
)
from ragsage.core.chunks import ScoredChunk
from ragsage.core.pages import PageImage
from ragsage.core.ports import InputType

__all__ = [
    "DEFAULT_DIMENSION",
    "FakeEmbedder",
    "FakeLLMClient",
    "FakeQueryRewriter",
    "FakeReranker",
    "hashed_vector",
    "overlap_score",
]


class FakeEmbedder(HashingEmbedder):
    """The hashing embedder; ``calls`` holds (input type, number of texts) per call."""

    def __init__(self, *, dimension: int = DEFAULT_DIMENSION) -> None:
        super().__init__(dimension=dimension)
        self.calls: list[tuple[InputType, int]] = []

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        self.calls.append((input_type, len(texts)))
        return await super().embed(texts, input_type=input_type)


class FakeReranker(OverlapReranker):
    """The overlap reranker; ``calls`` holds (query, number of candidates) per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        self.calls.append((query, len(candidates)))
        return await super().rerank(query, candidates, top_k=top_k)


class FakeLLMClient(ExtractiveReader):
    """The extractive reader; ``prompts`` and ``transcribed`` hold what it was given."""

    def __init__(self, *, max_sentences: int = 3) -> None:
        super().__init__(max_sentences=max_sentences)
        self.prompts: list[str] = []
        self.transcribed: list[PageImage] = []

    async def generate(self, prompt: str) -> AsyncIterator[str]:
        self.prompts.append(prompt)
        async for piece in super().generate(prompt):
            yield piece

    async def transcribe(self, image: PageImage) -> str:
        self.transcribed.append(image)
        return await super().transcribe(image)


class FakeQueryRewriter(TermRewriter):
    """The term rewriter under the name the tests and the seeds know."""
