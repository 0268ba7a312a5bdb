"""Embedder over the OpenAI embeddings API, or any server that speaks it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsage.adapters.providers.batched_embedder import BatchedEmbedder
from ragsage.adapters.providers.catalog import OPENAI_MODELS
from ragsage.adapters.providers.openai_service import OpenAIService
from ragsage.core.ports import InputType

# OpenAI takes up to 2,048 inputs a request; smaller requests suit local servers.
MAX_BATCH_SIZE = 2048


class OpenAIEmbedder(BatchedEmbedder):
    """Embedder over ``/embeddings`` of OpenAI or an OpenAI-compatible server.

    Same contract as the Voyage embedder (:class:`BatchedEmbedder`).  OpenAI's
    models are symmetric, so ``input_type`` changes nothing by default; models
    served elsewhere that expect marked queries and passages (the e5 family,
    say) get ``query_prefix``/``document_prefix``.
    """

    provider = "OpenAI"
    max_batch_size = MAX_BATCH_SIZE

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
        super().__init__(
            OPENAI_MODELS,
            model,
            dimension=dimension,
            similarity_floor=similarity_floor,
            batch_size=batch_size,
        )
        self._service = service
        self._prefixes = {"query": query_prefix, "document": document_prefix}

    def _prepared(self, texts: Sequence[str], input_type: InputType) -> Sequence[str]:
        prefix = self._prefixes[input_type]
        return [prefix + text for text in texts] if prefix else texts

    async def _request(self, texts: list[str], input_type: InputType) -> Any:
        return await self._service.embed(
            texts,
            model=self._resolved.name,
            dimensions=self._resolved.request_dimension,
            what=self._what,
        )
