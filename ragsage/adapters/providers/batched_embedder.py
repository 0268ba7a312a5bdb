"""What the hosted embedders share: a model resolved up front, batches, checked replies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsage.adapters.providers.batching import plan_batches
from ragsage.adapters.providers.catalog import (
    EmbeddingModelInfo,
    ResolvedEmbeddingModel,
    resolve_embedding_model,
)
from ragsage.adapters.providers.replies import field_of, vectors_from_reply
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import InputType


class BatchedEmbedder:
    """An embedder whose provider takes a batch per request and replies with ``data``.

    The width is settled at construction, from the configured one or the
    catalogue of known models (a store's column is sized by it), and every
    reply is checked against it.  Texts go out in batches that fit the
    model's limits on texts and tokens per request; a subclass sends one.
    """

    provider = ""
    max_batch_size = 1

    def __init__(
        self,
        catalogue: dict[str, EmbeddingModelInfo],
        model: str,
        *,
        dimension: int | None,
        similarity_floor: float | None,
        batch_size: int,
    ) -> None:
        if not 1 <= batch_size <= self.max_batch_size:
            raise ConfigurationError(
                f"{self.provider} embedding batch size must be 1 to {self.max_batch_size}"
            )
        self._resolved: ResolvedEmbeddingModel = resolve_embedding_model(
            catalogue,
            model,
            dimension=dimension,
            similarity_floor=similarity_floor,
            provider=self.provider,
        )
        self._batch_size = batch_size
        self._what = f"{self.provider} embeddings ({model})"

    @property
    def model(self) -> str:
        return self._resolved.name

    @property
    def dimension(self) -> int:
        return self._resolved.dimension

    @property
    def similarity_floor(self) -> float:
        return self._resolved.similarity_floor

    async def _request(self, texts: list[str], input_type: InputType) -> Any:
        """One request's reply for ``texts``, which fit the request limits."""
        raise NotImplementedError

    def _prepared(self, texts: Sequence[str], input_type: InputType) -> Sequence[str]:
        return texts

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        marked = self._prepared(texts, input_type)
        vectors: list[tuple[float, ...]] = []
        for batch in plan_batches(
            marked, max_items=self._batch_size, max_tokens=self._resolved.max_batch_tokens
        ):
            chunk = [marked[index] for index in batch]
            reply = await self._request(chunk, input_type)
            vectors.extend(
                vectors_from_reply(
                    field_of(reply, "data"),
                    count=len(chunk),
                    dimension=self.dimension,
                    what=self._what,
                )
            )
        return vectors
