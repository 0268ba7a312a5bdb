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
* ``minmax`` — the same with each list stretched from its worst to its best.
  Source code's cosines sit close together, so divided by the best they barely
  tell candidates apart and keyword search decides; stretched, the dense list
  counts.  With ``score``, a question that names no code and whose candidates
  are mostly code is fused this way (:func:`fusion_for`), and, unless the
  request set the weight, with the two lists weighed equally; prose loses by
  it (docs/retrieval.md), so it is not the default for everything.

Either way the fused score says nothing about absolute relevance; the query
engine's relevance floor reads the raw per-stage scores, which fusion keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ragsage.core.chunks import Chunk, Ranked, ScoredChunk
from ragsage.core.text import names_code

DEFAULT_RRF_K = 60
# The dense weight in hybrid search.  Measured on the python-docs development
# set (docs/retrieval.md): with scaled-score fusion, 0.3 is the one weight at
# which hybrid beat both keyword-only and dense-only search on both splits; at
# 0.5 the weaker dense list pulled hybrid below keyword-only on the test split.
DEFAULT_HYBRID_ALPHA = 0.3
# The dense weight for a question about code that names none of it, once both
# lists are stretched, unless keyword search found one passage far above the
# rest: such a question's words are rarely the code's, so a flat keyword list
# is the weaker guide (measured on the code set's dev questions).
CODE_HYBRID_ALPHA = 0.5
# Keyword search "found the words" when its best score is at least this many
# times its fifth best.  On the code set's dev questions, 85 of 87 doc-comment
# sentences clear it and none of 64 questions in a developer's own words do.
DECISIVE_KEYWORD_RATIO = 2.0
FUSION_METHODS = ("rrf", "score", "minmax")
FusionMethod = Literal["rrf", "score", "minmax"]


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
    return fuse("rrf", dense, lexical, alpha=alpha, rrf_k=k)


def score_fusion(
    dense: Sequence[ScoredChunk], lexical: Sequence[ScoredChunk], *, alpha: float = 0.5
) -> list[ScoredChunk]:
    """Fuse two scored lists: score = α·scaled_dense + (1-α)·scaled_lexical.

    Each list's scores are divided by that list's highest (negative scores
    count as 0; a list of zeros scales to 1), and a chunk missing from a list
    gets 0 from it.
    """
    return fuse("score", dense, lexical, alpha=alpha)


def fuse(
    method: FusionMethod,
    dense: Sequence[ScoredChunk],
    lexical: Sequence[ScoredChunk],
    *,
    alpha: float,
    rrf_k: int = DEFAULT_RRF_K,
) -> list[ScoredChunk]:
    """Fuse with the named method."""
    ranked = fuse_ranked(
        method,
        [Ranked(c.chunk.id, c.score) for c in dense],
        [Ranked(c.chunk.id, c.score) for c in lexical],
        alpha=alpha,
        rrf_k=rrf_k,
    )
    # Each chunk keeps the first object met (dense first) and, per stage, the
    # first score either list gave it.
    first: dict[str, ScoredChunk] = {}
    stages: dict[str, tuple[float | None, float | None]] = {}
    for candidate in (*dense, *lexical):
        key = candidate.chunk.id
        first.setdefault(key, candidate)
        vector, keyword = stages.get(key, (None, None))
        stages[key] = (
            _first(vector, candidate.vector_score),
            _first(keyword, candidate.keyword_score),
        )
    return [
        replace(
            first[f.chunk_id],
            score=f.score,
            vector_score=stages[f.chunk_id][0],
            keyword_score=stages[f.chunk_id][1],
        )
        for f in ranked
    ]


@dataclass(frozen=True, slots=True)
class FusedRank:
    """A fused candidate known by id only (rows are read for the winners alone).

    It carries the same score fields as a :class:`ScoredChunk`, so the query
    engine filters either alike.
    """

    chunk_id: str
    score: float
    vector_score: float | None
    keyword_score: float | None
    rerank_score: float | None = None


def fuse_ranked(
    method: FusionMethod,
    dense: Sequence[Ranked],
    lexical: Sequence[Ranked],
    *,
    alpha: float,
    rrf_k: int = DEFAULT_RRF_K,
) -> list[FusedRank]:
    """:func:`fuse` on ids and raw scores: the one place the methods are computed.

    A chunk's vector score is its raw score in ``dense`` and its keyword score
    its raw score in ``lexical``; absent from a list, that score is None.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if method == "rrf":
        if rrf_k < 1:
            raise ValueError(f"k must be positive, got {rrf_k}")
        values = [[1.0 / (rrf_k + rank) for rank in range(1, len(r) + 1)] for r in (dense, lexical)]
    elif method == "score":
        values = [_max_scaled([c.score for c in r]) for r in (dense, lexical)]
    elif method == "minmax":
        values = [_min_max_scaled([c.score for c in r]) for r in (dense, lexical)]
    else:
        raise ValueError(f"unknown fusion method {method!r}; expected one of {FUSION_METHODS}")
    fused: dict[str, list[float | None]] = {}
    for slot, weight, ranked, scaled in (
        (1, alpha, dense, values[0]),
        (2, 1.0 - alpha, lexical, values[1]),
    ):
        for candidate, value in zip(ranked, scaled, strict=True):
            entry = fused.setdefault(candidate.chunk_id, [0.0, None, None])
            entry[0] = (entry[0] or 0.0) + weight * value
            if entry[slot] is None:
                entry[slot] = candidate.score
    return sorted(
        (FusedRank(key, float(e[0] or 0.0), e[1], e[2]) for key, e in fused.items()),
        key=lambda f: (-f.score, f.chunk_id),
    )


def _max_scaled(scores: Sequence[float]) -> list[float]:
    clipped = [max(score, 0.0) for score in scores]
    high = max(clipped, default=0.0)
    return [score / high if high > 0 else 1.0 for score in clipped]


def _min_max_scaled(scores: Sequence[float]) -> list[float]:
    # The last hit keeps a sliver, so a later factor (recency) can still lift it.
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    return [_FLOOR + (1 - _FLOOR) * (s - low) / (high - low) if high > low else 1.0 for s in scores]


_FLOOR = 0.01
# How many of each list's first candidates decide whether a question landed on code.
_LOOKED_AT = 5


def fusion_for(
    method: FusionMethod,
    query: str,
    dense: Sequence[Ranked | ScoredChunk],
    lexical: Sequence[Ranked | ScoredChunk],
    alpha: float | None = None,
) -> tuple[FusionMethod, float]:
    """The method and dense weight to fuse ``query``'s two lists with.

    ``method`` and ``alpha`` (None: :data:`DEFAULT_HYBRID_ALPHA`), except for a
    question about code that names none of it.  A question that names code
    (``run_connecting``, ``Type::method``, ``getLogger``) is for keyword search
    to find, and keeps them.  One that describes behaviour in words, and whose
    first candidates (those read whole) are mostly source code, gets both lists
    stretched and, unless the caller chose a weight or keyword search found one
    passage far above the rest (a comment's own words), weighed equally.
    """
    if method != "score" or names_code(query) or not _mostly_code(dense, lexical):
        return method, DEFAULT_HYBRID_ALPHA if alpha is None else alpha
    if alpha is None:
        alpha = DEFAULT_HYBRID_ALPHA if _decisive(lexical) else CODE_HYBRID_ALPHA
    return "minmax", alpha


def _mostly_code(
    dense: Sequence[Ranked | ScoredChunk], lexical: Sequence[Ranked | ScoredChunk]
) -> bool:
    kinds = [is_code(c.chunk) for c in (*dense[:_LOOKED_AT], *lexical[:_LOOKED_AT])]
    known = [kind for kind in kinds if kind is not None]
    return bool(known) and 2 * sum(known) > len(known)


def _decisive(lexical: Sequence[Ranked | ScoredChunk]) -> bool:
    if len(lexical) < _LOOKED_AT:
        return True
    return lexical[0].score >= DECISIVE_KEYWORD_RATIO * max(lexical[_LOOKED_AT - 1].score, 0.0)


def is_code(chunk: Chunk | None) -> bool | None:
    """A chunk as a code reader writes it: a language named, the text one fenced block.

    The language alone would not do: a caller's own metadata, which wins over
    the reader's, may say ``language: en`` of a page of prose.
    """
    if chunk is None:
        return None
    return "language" in chunk.metadata and chunk.text.lstrip().startswith("```")


def _first(a: float | None, b: float | None) -> float | None:
    return a if a is not None else b
