"""Fusing the dense and lexical result lists into one ranking.

Two methods, chosen by ``QueryConfig.fusion`` (measured with ``ragsage eval``;
see docs/retrieval.md):

* ``rrf`` — weighted reciprocal-rank fusion.  Ranks, not scores, are fused:
  cosine similarities and keyword ranks live on unrelated scales, and a rank is
  the one thing both lists agree on.
* ``score`` — weighted fusion of each list's scores, each divided by its
  list's best.  It keeps how far apart the hits are, which ranks throw away.
  (Min-max scaling measured 0.007 nDCG@10 higher but gives each list's last
  hit nothing at all, so no later factor, such as recency, could lift it.)

Either way the fused score says nothing about absolute relevance; the query
engine's relevance floor reads the raw per-stage scores, which fusion keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from ragsage.types import ScoredChunk

DEFAULT_RRF_K = 60
FUSION_METHODS = ("rrf", "score")
FusionMethod = Literal["rrf", "score"]


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
    _check_alpha(alpha)
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    return _combine(
        [
            (weight, ranked, [1.0 / (k + rank) for rank in range(1, len(ranked) + 1)])
            for weight, ranked in ((alpha, dense), (1.0 - alpha, lexical))
        ]
    )


def score_fusion(
    dense: Sequence[ScoredChunk], lexical: Sequence[ScoredChunk], *, alpha: float = 0.5
) -> list[ScoredChunk]:
    """Fuse two scored lists: score = α·scaled_dense + (1-α)·scaled_lexical.

    Each list's scores are divided by that list's highest (negative scores
    count as 0; a list of zeros scales to 1), and a chunk missing from a list
    gets 0 from it.
    """
    _check_alpha(alpha)
    return _combine(
        [
            (weight, ranked, _max_scaled(ranked))
            for weight, ranked in ((alpha, dense), (1.0 - alpha, lexical))
        ]
    )


def fuse(
    method: FusionMethod,
    dense: Sequence[ScoredChunk],
    lexical: Sequence[ScoredChunk],
    *,
    alpha: float,
    rrf_k: int = DEFAULT_RRF_K,
) -> list[ScoredChunk]:
    """Fuse with the named method."""
    if method == "rrf":
        return reciprocal_rank_fusion(dense, lexical, alpha=alpha, k=rrf_k)
    if method == "score":
        return score_fusion(dense, lexical, alpha=alpha)
    raise ValueError(f"unknown fusion method {method!r}; expected one of {FUSION_METHODS}")


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")


def _max_scaled(ranked: Sequence[ScoredChunk]) -> list[float]:
    scores = [max(candidate.score, 0.0) for candidate in ranked]
    high = max(scores, default=0.0)
    return [score / high if high > 0 else 1.0 for score in scores]


def _combine(
    lists: Sequence[tuple[float, Sequence[ScoredChunk], Sequence[float]]],
) -> list[ScoredChunk]:
    """Sum ``weight * value`` per chunk over the lists, keeping each stage's raw score."""
    fused: dict[str, ScoredChunk] = {}
    for weight, ranked, values in lists:
        for candidate, value in zip(ranked, values, strict=True):
            contribution = weight * value
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
