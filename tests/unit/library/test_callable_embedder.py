"""CallableEmbedder checks every reply; a bad one stores nothing."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence

import pytest

from ragsage import RAG, CallableEmbedder, ConfigurationError
from ragsage.adapters.functions import EmbedderOutputError
from ragsage.testing.models import hashed_vector

from .conftest import HANDBOOK

DIM = 64


def hashing(texts: list[str]) -> list[list[float]]:
    """A real (if simple) embedding function, as a user would pass one."""
    out = []
    for text in texts:
        dense = [0.0] * DIM
        for index, weight in hashed_vector(text, DIM).items():
            dense[index] = weight
        out.append(dense)
    return out


async def test_wraps_sync_and_async_functions() -> None:
    async def async_hashing(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return hashing(texts)

    for fn in (hashing, async_hashing):
        embedder = CallableEmbedder(fn, dimension=DIM, model="my-model")
        vectors = await embedder.embed(["alpha beta", "gamma"])
        assert len(vectors) == 2 and all(len(v) == DIM for v in vectors)
        assert vectors[0] == tuple(hashing(["alpha beta"])[0])
        assert embedder.model == "my-model" and embedder.dimension == DIM
        assert await embedder.embed([]) == []


def test_a_rag_on_a_callable_embedder_searches() -> None:
    with RAG.default(embedder=CallableEmbedder(hashing, dimension=DIM)) as rag:
        rag.index_text(HANDBOOK, document_id="handbook")
        assert "28 days" in rag.search("paid holiday days").results[0].chunk.text


def _drop_last(texts: list[str]) -> list[list[float]]:
    return hashing(texts)[:-1]


def _narrow(texts: list[str]) -> list[list[float]]:
    vectors = hashing(texts)
    vectors[-1] = vectors[-1][:-1]
    return vectors


def _nan(texts: list[str]) -> list[list[float]]:
    vectors = hashing(texts)
    vectors[0][5] = math.nan
    return vectors


def _text(texts: list[str]) -> list[object]:
    return [["x"] * DIM for _ in texts]


def _not_a_list(texts: list[str]) -> object:
    return {"vectors": hashing(texts)}


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_drop_last, r"returned 3 vectors for 4 texts"),
        (_narrow, rf"vector 3 has {DIM - 1} numbers, expected {DIM}"),
        (_nan, r"vector 0 holds nan at position 5; every number must be finite"),
        (_text, r"vector 0 holds 'x' at position 0, not a number"),
        (_not_a_list, r"returned dict, expected a list of vectors"),
    ],
)
async def test_a_wrong_reply_names_the_mismatch(
    fn: Callable[[list[str]], Sequence[object]], message: str
) -> None:
    embedder = CallableEmbedder(fn, dimension=DIM)  # type: ignore[arg-type]
    with pytest.raises(EmbedderOutputError, match=message):
        await embedder.embed(["a", "b", "c", "d"])


def _narrow_for_laptops(texts: list[str]) -> list[list[float]]:
    return _narrow(texts) if any("Laptops" in text for text in texts) else hashing(texts)


def test_nothing_is_stored_when_the_function_misbehaves() -> None:
    embedder = CallableEmbedder(_narrow_for_laptops, dimension=DIM)
    with RAG.default(embedder=embedder) as rag:
        with pytest.raises(EmbedderOutputError, match=f"expected {DIM}"):
            rag.index_text(HANDBOOK, document_id="handbook")
        # The first document embeds fine, but none is stored until all have.
        with pytest.raises(EmbedderOutputError):
            rag.index_documents(
                [{"id": "ok", "content": "Short note."}, {"id": "bad", "content": HANDBOOK}]
            )
        assert rag.count() == 0
        assert rag.list_sources() == []


def test_construction_checks_its_arguments() -> None:
    with pytest.raises(ConfigurationError, match="positive integer"):
        CallableEmbedder(hashing, dimension=0)
    with pytest.raises(ConfigurationError, match="needs a function"):
        CallableEmbedder("not callable", dimension=4)  # type: ignore[arg-type]


def test_conforms_to_the_embedder_port() -> None:
    from ragsage.core.ports import Embedder

    assert isinstance(CallableEmbedder(hashing, dimension=DIM), Embedder)
