"""Embedder over the OpenAI embeddings API, or any server that speaks it."""

from __future__ import annotations

from collections.abc import Sequence

from ragsage.adapters.providers.batching import plan_batches
from ragsage.adapters.providers.catalog import OPENAI_MODELS, resolve_embedding_model
from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.adapters.providers.replies import field_of, vectors_from_reply
from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import InputType

# OpenAI takes up to 2,048 inputs a request; smaller requests suit local servers.
MAX_BATCH_SIZE = 2048


class OpenAIEmbedder:
    """Embedder over ``/embeddings`` of OpenAI or an OpenAI-compatible server.

    Same contract as the Voyage embedder: batches sized to the request limits,
    a width known at construction (catalogue or configuration) and checked on
    every reply.  OpenAI's models are symmetric, so ``input_type`` changes
    nothing by default; models served elsewhere that expect marked queries and
    passages (the e5 family, say) get ``query_prefix``/``document_prefix``.
    """

    def __init__(
        self,
        service: OpenAIService,
        *,
        model: str = "text-embedding-3-small",
        dimension: int | None = None,
        similarity_floor: float | None = None,
        batch_size: int = 128,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ConfigurationError(f"OpenAI embedding batch size must be 1 to {MAX_BATCH_SIZE}")
        self._service = service
        self._resolved = resolve_embedding_model(
            OPENAI_MODELS,
            model,
            dimension=dimension,
            similarity_floor=similarity_floor,
            provider="OpenAI",
        )
        self._batch_size = batch_size
        self._prefixes = {"query": query_prefix, "document": document_prefix}
        self._what = f"OpenAI embeddings ({model})"

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
        prefix = self._prefixes[input_type]
        marked = [prefix + text for text in texts] if prefix else list(texts)
        vectors: list[tuple[float, ...]] = []
        for batch in plan_batches(
            marked, max_items=self._batch_size, max_tokens=self._resolved.max_batch_tokens
        ):
            chunk = [marked[index] for index in batch]
            reply = await self._service.embed(
                chunk,
                model=self._resolved.name,
                dimensions=self._resolved.request_dimension,
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
