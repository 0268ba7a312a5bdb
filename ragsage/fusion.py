"""Weighted reciprocal-rank fusion of the dense and lexical result lists.

Ranks, not scores, are fused: cosine similarities and BM25/ts_rank scores live on
unrelated scales, and a rank is the one thing both lists agree on.  The fused
score therefore says nothing about absolute relevance — the query engine's
relevance floor reads the raw per-stage scores, which fusion keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragsage.types import ScoredChunk

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(
    dense: Sequence[ScoredChunk],
    lexical: Sequence[ScoredChunk],
    *,
    alpha: float = 0.5,
    k: int = DEFAULT_RRF_K,
) -> list[ScoredChunk]:
    """Fuse two ranked lists: score = α/(k+rank_dense) + (1-α)/(k+rank_lexical).

    ``alpha`` = 1 ranks by the dense list alone and 0 by the lexical list alone;
    a chunk missing from one list gets nothing from it.  Each chunk keeps the
    vector and keyword scores it had, and ties break on chunk id so the order is
    deterministic.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    fused: dict[str, ScoredChunk] = {}
    for weight, ranked in ((alpha, dense), (1.0 - alpha, lexical)):
        for rank, candidate in enumerate(ranked, start=1):
            contribution = weight / (k + rank)
            seen = fused.get(candidate.chunk.id)
            if seen is None:
                fused[candidate.chunk.id] = replace(candidate, score=contribution)
                continue
            fused[candidate.chunk.id] = replace(
                seen,
                score=seen.score + contribution,
                vector_score=_first(seen.vector_score, candidate.vector_score),
                keyword_score=_first(seen.keyword_score, candidate.keyword_score),
            )
    return sorted(fused.values(), key=lambda c: (-c.score, c.chunk.id))


def _first(a: float | None, b: float | None) -> float | None:
    return a if a is not None else b
