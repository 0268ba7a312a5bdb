"""Ranking metrics over judged rankings: pure functions, no I/O.

A :class:`Judged` ranking says, for each ranked position, which *relevance units*
that position satisfies — relevant documents for BEIR, answer spans for QA —
and what each unit is worth.  Every metric is defined on that one shape, so the
two dataset formats share one tested implementation:

* a position's gain is the largest grade among the units it is the first to
  satisfy (a second chunk holding the same answer earns nothing);
* the ideal ranking puts one unit per position, best grade first.

QA answer spans are alternative wordings of one answer, so a QA ranking is
marked ``one_answer``: for nDCG only its first relevant position earns a gain,
against an ideal of one — otherwise a chunk holding two phrasings of the answer
at rank 1 would score below a perfect ranking.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Judged:
    """A ranking as seen by the judge: the units each position covers, and their grades."""

    covers: tuple[frozenset[str], ...]
    grades: Mapping[str, float]
    one_answer: bool = False

    @property
    def relevant_units(self) -> frozenset[str]:
        return frozenset(unit for unit, grade in self.grades.items() if grade > 0)


def gains(judged: Judged) -> list[float]:
    """The gain each position contributes, counting each unit only where first covered."""
    if judged.one_answer:
        relevant = judged.relevant_units
        first = next((i for i, c in enumerate(judged.covers) if c & relevant), None)
        return [1.0 if i == first else 0.0 for i in range(len(judged.covers))]
    seen: set[str] = set()
    out = []
    for covered in judged.covers:
        fresh = [u for u in covered if u not in seen and judged.grades.get(u, 0.0) > 0]
        seen.update(covered)
        out.append(max((judged.grades[u] for u in fresh), default=0.0))
    return out


def dcg(values: Sequence[float]) -> float:
    """Discounted cumulative gain with the standard ``log2(rank + 1)`` discount."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(values, start=1))


def ndcg_at(judged: Judged, k: int) -> float:
    """nDCG@k; 0 when nothing is relevant."""
    ideal = sorted((g for g in judged.grades.values() if g > 0), reverse=True)[:k]
    if judged.one_answer:
        ideal = ideal[:1]
    best = dcg(ideal)
    return dcg(gains(judged)[:k]) / best if best > 0 else 0.0


def recall_at(judged: Judged, k: int) -> float:
    """Share of the relevant units covered by the first ``k`` positions."""
    relevant = judged.relevant_units
    if not relevant:
        return 0.0
    found = set().union(*judged.covers[:k]) & relevant
    return len(found) / len(relevant)


def reciprocal_rank(judged: Judged, depth: int | None = None) -> float:
    """1 / rank of the first position covering a relevant unit, within ``depth``."""
    relevant = judged.relevant_units
    positions = judged.covers if depth is None else judged.covers[:depth]
    for rank, covered in enumerate(positions, start=1):
        if covered & relevant:
            return 1.0 / rank
    return 0.0


def pass_at(judged: Judged, k: int) -> float:
    """1 if any of the first ``k`` positions covers a relevant unit, else 0."""
    return 1.0 if reciprocal_rank(judged, k) > 0 else 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def question_metrics(
    judged: Judged,
    ks: Sequence[int],
    *,
    chunk_tokens: Sequence[int],
    mrr_depth: int | None = None,
) -> dict[str, float]:
    """Every metric of one question: ``ndcg@k``, ``recall@k``, ``pass@k``, ``tokens@k``, ``mrr``.

    ``chunk_tokens`` are the token counts of the ranked chunks, so ``tokens@k``
    is the size of what the first ``k`` chunks hand to a reader.
    """
    out: dict[str, float] = {}
    for k in sorted(set(ks)):
        out[f"ndcg@{k}"] = ndcg_at(judged, k)
        out[f"recall@{k}"] = recall_at(judged, k)
        out[f"pass@{k}"] = pass_at(judged, k)
        out[f"tokens@{k}"] = float(sum(chunk_tokens[:k]))
    out["mrr"] = reciprocal_rank(judged, mrr_depth)
    return out


def aggregate(per_question: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over questions (metrics missing from one count as absent)."""
    names = sorted({name for metrics in per_question for name in metrics})
    return {name: mean([m[name] for m in per_question if name in m]) for name in names}
