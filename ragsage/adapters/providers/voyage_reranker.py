"""Reranker over Voyage's rerank endpoint, through the voyageai SDK."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from ragsage.adapters.providers.replies import field_of, score_of
from ragsage.adapters.providers.resilience import malformed
from ragsage.adapters.providers.voyage_client import VoyageClient
from ragsage.core.chunks import ScoredChunk

_log = logging.getLogger("ragsage.adapters.providers")


class VoyageReranker:
    """Reranker over Voyage's rerank endpoint (a cross-encoder).

    Voyage sees only the candidates' texts and answers with positions into that
    list plus a relevance score; the adapter rebuilds its result from its own
    candidates by those positions, so the model never handles chunk identities.
    A result whose position is missing, out of range or repeated, or whose score
    is not a number, is dropped and logged: a malformed reply must never attach
    a score (and so a citation) to the wrong passage.  Every candidate is
    scored; the per-call ``top_k`` is applied here.
    """

    def __init__(self, client: VoyageClient, *, model: str = "rerank-2") -> None:
        self._client = client
        self._model = model
        self._what = f"Voyage rerank ({model})"

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        if not candidates or top_k <= 0:
            return []
        reply = await self._client.rerank(
            query,
            [candidate.chunk.text for candidate in candidates],
            model=self._model,
            what=self._what,
        )
        results = field_of(reply, "data")
        if not isinstance(results, list):
            raise malformed(self._what, "no list of results in it")
        scored: dict[int, ScoredChunk] = {}
        for result in results:
            index, score = field_of(result, "index"), score_of(result)
            valid = isinstance(index, int) and not isinstance(index, bool)
            if not valid or not 0 <= index < len(candidates) or index in scored or score is None:
                _log.warning("%s: dropped a result with index %r", self._what, index)
                continue
            scored[index] = replace(candidates[index], rerank_score=score)
        ranked = sorted(scored.items(), key=lambda item: (-(item[1].rerank_score or 0.0), item[0]))
        return [candidate for _, candidate in ranked[:top_k]]
