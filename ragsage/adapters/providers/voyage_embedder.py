"""Embedder over Voyage's embeddings endpoint, through the voyageai SDK."""

from __future__ import annotations

from collections.abc import Sequence

from ragsage.adapters.providers.batching import plan_batches
from ragsage.adapters.providers.catalog import VOYAGE_MODELS, resolve_embedding_model
from ragsage.adapters.providers.replies import field_of, vectors_from_reply
from ragsage.adapters.providers.voyage_client import VoyageClient
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import InputType

# Voyage takes up to 1,000 texts a request; the SDK's own helpers send 128.
MAX_BATCH_SIZE = 1000


class VoyageEmbedder:
    """Embedder over Voyage's embeddings endpoint.

    Texts go out in batches that fit the model's limits on texts and tokens per
    request, with ``input_type`` passed through so queries and documents get
    Voyage's asymmetric treatment.  The vector width is settled at construction
    from the configured width or the catalogue of known models — a store's
    column is sized by it — and every reply is checked against it.
    """

    def __init__(
        self,
        client: VoyageClient,
        *,
        model: str = "voyage-3-large",
        dimension: int | None = None,
        similarity_floor: float | None = None,
        batch_size: int = 128,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ConfigurationError(f"Voyage batch size must be 1 to {MAX_BATCH_SIZE}")
        self._client = client
        self._resolved = resolve_embedding_model(
            VOYAGE_MODELS,
            model,
            dimension=dimension,
            similarity_floor=similarity_floor,
            provider="Voyage",
        )
        self._batch_size = batch_size
        self._what = f"Voyage embeddings ({model})"

    @property
    def model(self) -> str:
        return self._resolved.name

    @property
    def dimension(self) -> int:
        return self._resolved.dimension

    @property
    def similarity_floor(self) -> float:
        return self._resolved.similarity_floor

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        vectors: list[tuple[float, ...]] = []
        for batch in plan_batches(
            texts, max_items=self._batch_size, max_tokens=self._resolved.max_batch_tokens
        ):
            chunk = [texts[index] for index in batch]
            reply = await self._client.embed(
                chunk,
                model=self._resolved.name,
                input_type=input_type,
                output_dimension=self._resolved.request_dimension,
                what=self._what,
            )
            vectors.extend(
                vectors_from_reply(
                    field_of(reply, "data"),
                    count=len(chunk),
                    dimension=self.dimension,
                    what=self._what,
                )
            )
        return vectors
