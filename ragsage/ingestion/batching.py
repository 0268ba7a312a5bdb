"""Bounded parallel work on one document: vision pages, contexts, embedding batches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from ragsage.core.errors import PermanentProviderError
from ragsage.core.ports import Embedder

_T = TypeVar("_T")
_R = TypeVar("_R")


async def bounded(limit: int, items: Sequence[_T], work: Callable[[_T], Awaitable[_R]]) -> list[_R]:
    """Run ``work`` over ``items`` with at most ``limit`` in flight, keeping order."""
    gate = asyncio.Semaphore(limit)

    async def one(item: _T) -> _R:
        async with gate:
            return await work(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    size: int,
    concurrency: int,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[tuple[float, ...]]:
    """The vectors of ``texts``, in order, embedded in batches of ``size``.

    ``on_progress`` is told (texts embedded, texts in all) at the start and
    after each batch.

    A provider that answers with the wrong number or width of vectors fails the
    document permanently: storing such vectors would corrupt its search.
    """
    batches = [texts[start : start + size] for start in range(0, len(texts), size)]
    done = 0

    async def one(batch: Sequence[str]) -> list[tuple[float, ...]]:
        nonlocal done
        vectors = await embedder.embed(list(batch))
        if len(vectors) != len(batch):
            raise PermanentProviderError(
                f"embedder {embedder.model} returned {len(vectors)} vectors for {len(batch)} texts"
            )
        for vector in vectors:
            if len(vector) != embedder.dimension:
                raise PermanentProviderError(
                    f"embedder {embedder.model} returned a {len(vector)}-wide vector; "
                    f"expected {embedder.dimension}"
                )
        done += len(batch)
        if on_progress is not None:
            on_progress(done, len(texts))
        return [tuple(vector) for vector in vectors]

    if on_progress is not None:
        on_progress(0, len(texts))
    results = await bounded(concurrency, batches, one)
    return [vector for batch in results for vector in batch]
