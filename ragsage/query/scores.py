"""What a candidate's scores say: whether it matched at all, and how its age weighs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from ragsage.core.types import ScoredChunk
from ragsage.query.fusion import FusedRank

_DAY_SECONDS = 86_400.0


def has_signal(candidate: ScoredChunk | FusedRank, min_score: float | None) -> bool:
    """A search result: it shares a term with the query or points its way, and clears min_score."""
    if min_score is not None and candidate.score < min_score:
        return False
    return (
        (candidate.keyword_score or 0.0) > 0.0
        or (candidate.vector_score or 0.0) > 0.0
        or (candidate.rerank_score is not None and candidate.rerank_score > 0.0)
    )


def apply_recency(candidates: list[ScoredChunk], half_life_days: float) -> list[ScoredChunk]:
    """Weigh scores by age, then re-sort.

    A new chunk keeps its score, one ``half_life_days`` old keeps three
    quarters of it, and the oldest tend to half.
    """
    now = datetime.now(UTC)
    biased = []
    for candidate in candidates:
        created = candidate.chunk.created_at
        if created is None:
            factor = 0.5  # unknown age is treated as very old, never as brand new
        else:
            age_days = max(0.0, (now - created).total_seconds() / _DAY_SECONDS)
            factor = 0.5 + 0.5 * 2.0 ** (-age_days / half_life_days)
        biased.append(replace(candidate, score=candidate.score * factor))
    return sorted(biased, key=lambda c: (-c.score, c.chunk.id))
