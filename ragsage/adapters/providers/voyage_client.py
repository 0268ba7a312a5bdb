"""The voyageai SDK's embedding and rerank calls, bound to one key, endpoint and policy."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from ragsage.adapters.providers.config import RetryPolicy
from ragsage.adapters.providers.resilience import call_with_retries
from ragsage.adapters.providers.voyage_errors import voyage_translator


@dataclass(frozen=True, slots=True)
class VoyageClient:
    """Voyage's HTTP API through the voyageai SDK, with ragsage's retries and errors.

    It calls the SDK's resource classes (``voyageai.Embedding``,
    ``voyageai.Reranking``) rather than ``voyageai.AsyncClient``: that client's
    rerank wrapper indexes the caller's documents with whatever index the server
    sent, so one bad index would crash inside the SDK instead of being dropped by
    the reranker.  Each call opens its own HTTP session, so a client is not tied
    to the event loop it was first used on.
    """

    api_key: str = field(repr=False)
    base_url: str
    policy: RetryPolicy = RetryPolicy()
    keyless: bool = False

    async def embed(
        self,
        texts: Sequence[str],
        *,
        model: str,
        input_type: str | None,
        output_dimension: int | None,
        what: str,
    ) -> Any:
        """POST /embeddings; the reply as the SDK parsed it (vectors decoded)."""
        from voyageai.api_resources.embedding import Embedding

        create = cast(Callable[..., Awaitable[Any]], Embedding.acreate)
        request = partial(
            create,
            input=list(texts),
            model=model,
            input_type=input_type,
            # Chunks are far below Voyage's context lengths; should one not be,
            # embedding its start beats failing the whole document.
            truncation=True,
            output_dimension=output_dimension,
            **self._params(),
        )
        return await self._call(request, what)

    async def rerank(self, query: str, documents: Sequence[str], *, model: str, what: str) -> Any:
        """POST /rerank scoring every document (no server-side ``top_k``)."""
        from voyageai.api_resources.reranking import Reranking

        create = cast(Callable[..., Awaitable[Any]], Reranking.acreate)
        request = partial(
            create,
            query=query,
            documents=list(documents),
            model=model,
            top_k=None,
            truncation=True,
            **self._params(),
        )
        return await self._call(request, what)

    async def _call(self, request: Callable[[], Awaitable[Any]], what: str) -> Any:
        secrets = (self.api_key,)
        return await call_with_retries(
            request,
            what=what,
            policy=self.policy,
            translate=voyage_translator(what, secrets=secrets, keyless=self.keyless),
            secrets=secrets,
        )

    def _params(self) -> dict[str, Any]:
        return {
            "api_key": self.api_key,
            "base_url": self.base_url,
            "request_timeout": self.policy.timeout_seconds,
        }
