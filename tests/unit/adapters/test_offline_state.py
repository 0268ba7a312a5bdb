"""The offline model adapters a keyless server runs keep nothing from one call to the next.

A long-running API answers millions of questions on them; anything they kept
per call would grow without bound (the recording test doubles kept 5 MB per
1,000 answers).
"""

from __future__ import annotations

import asyncio
import copy
import sys
from typing import Any

from ragsage.adapters.offline import (
    ExtractiveReader,
    HashingEmbedder,
    OverlapReranker,
    TermRewriter,
)
from ragsage.core.chunks import Chunk, ScoredChunk, chunk_id
from ragsage.core.conversations import Turn
from ragsage.core.pages import PageImage
from ragsage.core.prompts import PromptSource, grounded_prompt
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

PASSAGES = [
    "Annual leave is 25 days a year, plus public holidays. Unused days carry over.",
    "The office opens at 8am. Parking is free for staff with a permit.",
    "Expenses are paid monthly; submit receipts within 30 days of purchase.",
]


def _state(adapter: object) -> Any:
    return copy.deepcopy(vars(adapter))


def _candidates() -> list[ScoredChunk]:
    return [
        ScoredChunk(
            chunk=Chunk(id=chunk_id("doc", i), document_id="doc", ordinal=i, text=t, embed_text=t),
            score=1.0 - i / 10,
        )
        for i, t in enumerate(PASSAGES)
    ]


async def _use_each(embedder, reranker, reader, rewriter, rounds: int) -> None:  # type: ignore[no-untyped-def]
    for n in range(rounds):
        question = f"how many days of leave do I get in year {n}?"
        await embedder.embed([question], input_type="query")
        await embedder.embed(PASSAGES * 3)
        await reranker.rerank(question, _candidates(), top_k=2)
        sources = [PromptSource(i + 1, f"policy {i}", text) for i, text in enumerate(PASSAGES)]
        prompt = grounded_prompt(question, sources)
        async for _ in reader.generate(prompt):
            pass
        await reader.transcribe(PageImage(data=f"scanned page {n}".encode()))
        await rewriter.rewrite("and parking?", [Turn("user", question), Turn("assistant", "25")])


def test_the_offline_adapters_hold_the_same_state_after_a_thousand_calls() -> None:
    adapters = HashingEmbedder(dimension=64), OverlapReranker(), ExtractiveReader(), TermRewriter()
    before = [_state(adapter) for adapter in adapters]
    sizes = [sys.getsizeof(vars(adapter)) for adapter in adapters]
    asyncio.run(_use_each(*adapters, rounds=1000))
    assert [_state(adapter) for adapter in adapters] == before
    assert [sys.getsizeof(vars(adapter)) for adapter in adapters] == sizes


def test_a_keyless_runtime_builds_the_offline_adapters_not_test_doubles() -> None:
    settings = Settings.from_env(
        {},
        database_url="postgresql://nobody@127.0.0.1:1/none",
        embedder="hashing",
        embedding_dim=384,
        reranker="overlap",
        transcriber="none",
    )
    runtime = build_runtime(settings, cache=None)
    built = [runtime.embedder, runtime.reranker, runtime.llm.generator, runtime.rewriter]  # type: ignore[attr-defined]
    kinds = [HashingEmbedder, OverlapReranker, ExtractiveReader, TermRewriter]
    assert [type(adapter) for adapter in built] == kinds
    assert not any(type(adapter).__module__.startswith("ragsage.testing") for adapter in built)


def test_the_same_check_catches_the_recording_doubles() -> None:
    from ragsage.testing import FakeEmbedder, FakeLLMClient, FakeReranker

    doubles = FakeEmbedder(dimension=64), FakeReranker(), FakeLLMClient(), TermRewriter()
    before = [_state(double) for double in doubles]
    asyncio.run(_use_each(*doubles, rounds=3))
    after = [_state(double) for double in doubles]
    assert [a != b for a, b in zip(after, before, strict=True)] == [True, True, True, False]
