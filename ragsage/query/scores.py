"""What a candidate's scores say: whether it matched at all, how its age weighs, what it costs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from ragsage.core.chunks import ScoredChunk
from ragsage.query.fusion import FusedRank, is_code

_DAY_SECONDS = 86_400.0
# A code passage of more words than this costs a reader more of its budget than
# a short one that scores as well, so its score is scaled by (this / its words)
# to the power CODE_LENGTH_EXPONENT.  Source definitions run from one line to
# hundreds, where prose chunks are cut to similar sizes; a whole long function
# ranked a hair above a ten-line one that answers the question pushed the
# answer out of what a reader takes in.  On the code set's dev questions
# (docs/retrieval.md, "Long code passages"), exponents of 0.2 to 0.5 with 100
# words all moved behaviour questions' answers into the first 660 tokens more
# often; 0.3 kept the doc-comment family's nDCG@10 within 0.001.
CONCISE_CODE_WORDS = 100
CODE_LENGTH_EXPONENT = 0.3


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

    def factor(candidate: ScoredChunk) -> float:
        created = candidate.chunk.created_at
        if created is None:
            return 0.5  # unknown age is treated as very old, never as brand new
        age_days = max(0.0, (now - created).total_seconds() / _DAY_SECONDS)
        return float(0.5 + 0.5 * 2.0 ** (-age_days / half_life_days))

    return _rescored(candidates, factor)


def prefer_concise_code(
    candidates: Sequence[ScoredChunk],
    exponent: float = CODE_LENGTH_EXPONENT,
    concise_words: int = CONCISE_CODE_WORDS,
) -> list[ScoredChunk]:
    """``candidates`` with each long code passage's score scaled by its length, re-sorted.

    Only source code (:func:`~ragsage.query.fusion.is_code`) longer than
    ``concise_words`` whitespace-separated words is scaled; prose and short
    code keep their scores, as does a score of 0 or less (scaling would raise
    a negative one).  ``exponent`` 0 changes nothing.
    """
    if exponent <= 0:
        return list(candidates)

    def factor(candidate: ScoredChunk) -> float:
        # Code first: only a code passage's words are counted.
        if candidate.score <= 0 or not is_code(candidate.chunk):
            return 1.0
        words = len(candidate.chunk.text.split())
        return (concise_words / words) ** exponent if words > concise_words else 1.0

    return _rescored(candidates, factor)


def _rescored(
    candidates: Sequence[ScoredChunk], factor: Callable[[ScoredChunk], float]
) -> list[ScoredChunk]:
    """Each candidate's score times its ``factor``, best first (ties by chunk id, as fused)."""
    weighed = []
    for candidate in candidates:
        weight = factor(candidate)
        weighed.append(
            candidate if weight == 1.0 else replace(candidate, score=candidate.score * weight)
        )
    return sorted(weighed, key=lambda c: (-c.score, c.chunk.id))
