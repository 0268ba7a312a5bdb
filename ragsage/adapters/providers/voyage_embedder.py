"""Embedder over Voyage's embeddings endpoint, through the voyageai SDK."""

from __future__ import annotations

from typing import Any

from ragsage.adapters.providers.batched_embedder import BatchedEmbedder
from ragsage.adapters.providers.catalog import VOYAGE_MODELS
from ragsage.adapters.providers.voyage_client import VoyageClient
from ragsage.core.ports import InputType

# Voyage takes up to 1,000 texts a request; the SDK's own helpers send 128.
MAX_BATCH_SIZE = 1000


class VoyageEmbedder(BatchedEmbedder):
    """Embedder over Voyage's embeddings endpoint (the contract of :class:`BatchedEmbedder`).

    ``input_type`` is passed through, so queries and documents get Voyage's
    asymmetric treatment.
    """

    provider = "Voyage"
    max_batch_size = MAX_BATCH_SIZE

    def __init__(
        self,
        client: VoyageClient,
        *,
        model: str = "voyage-3-large",
        dimension: int | None = None,
        similarity_floor: float | None = None,
        batch_size: int = 128,
    ) -> None:
        super().__init__(
            VOYAGE_MODELS,
            model,
            dimension=dimension,
            similarity_floor=similarity_floor,
            batch_size=batch_size,
        )
        self._client = client

    async def _request(self, texts: list[str], input_type: InputType) -> Any:
        return await self._client.embed(
            texts,
            model=self._resolved.name,
            input_type=input_type,
            output_dimension=self._resolved.request_dimension,
            what=self._what,
        )
