"""The overlap reranker: how closely a passage states the question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragsage.adapters.offline.passage_scoring import passage_scores
from ragsage.core.chunks import ScoredChunk
from ragsage.core.text import terms


def overlap_score(query: str, text: str) -> float:
    """The share of the query's distinct terms that ``text`` contains, in [0, 1]."""
    wanted = set(terms(query))
    if not wanted:
        return 0.0
    return len(wanted & set(terms(text))) / len(wanted)


# The share of the reranked score taken from the question's best-matching
# sentence; the rest is the retrieval score.  (docs/retrieval.md: by term
# coverage alone the overlap reranker lowered nDCG@10 on both development sets.)
STATEMENT_SHARE = 0.5


class OverlapReranker:
    """Blends each candidate's retrieval score with how closely one of its sentences
    states the question (:func:`ragsage.adapters.offline.passage_scoring.passage_scores`).

    The retrieval half is scaled by the share of the question's terms the
    candidate holds, so a passage sharing one word of a four-word question
    stays under the engine's relevance floor, as it did when that share was the
    whole score; candidates sharing no term are dropped.  Both keep the honest
    "not found".
    """

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]:
        read = passage_scores(query, [candidate.chunk.text for candidate in candidates])
        best = max((candidate.score for candidate in candidates), default=0.0)
        share = STATEMENT_SHARE
        rescored = []
        for position, (passage, candidate) in enumerate(zip(read, candidates, strict=True)):
            if passage.coverage <= 0.0:
                continue
            retrieval = max(candidate.score, 0.0) / best if best > 0 else 0.0
            score = (1 - share) * retrieval * passage.coverage + share * passage.statement
            rescored.append((score, -position, replace(candidate, rerank_score=score)))
        rescored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [candidate for _, _, candidate in rescored[:top_k]]
