"""Evaluating retrieval over an already-indexed corpus through any search callable.

Indexing is someone else's job (see :mod:`ragsage.cli.evaluation.backends`): this
module only asks questions and scores the answers, so a re-index gate can point
:func:`evaluate` at one specific generation, and the CLI at a fresh index.
Questions are asked one at a time, in dataset order, so latencies are not
inflated by each other and the same corpus always gives the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragsage.core.chunks import Chunk
from ragsage.evaluation.datasets import Question
from ragsage.evaluation.judging import (
    BUDGETS,
    RankedChunk,
    document_order,
    found_within,
    judge,
)
from ragsage.evaluation.metrics import aggregate, percentile, question_metrics
from ragsage.query import RetrievalOptions, RetrievalResult
from ragsage.query.options import MAX_TOP_K
from ragsage.query.passages import heading_words

SearchFn = Callable[[str, RetrievalOptions], Awaitable[RetrievalResult]]
DEFAULT_KS = (1, 5, 10, 20)
NDCG_K = 10
# Results asked for when answers are judged at token budgets: enough small
# chunks to fill the largest budget.
BUDGET_DEPTH = 60


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """How one question fared: its metrics and what was retrieved, in rank order."""

    id: str
    question: str
    kind: str | None
    metrics: dict[str, float]
    chunk_ids: tuple[str, ...]
    documents: tuple[str, ...]
    latency_ms: float
    family: str | None = None
    # The document holding the answer, for a bootstrap that resamples files.
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "kind": self.kind,
            "family": self.family,
            "source": self.source,
            "metrics": self.metrics,
            "chunk_ids": list(self.chunk_ids),
            "documents": list(self.documents),
            "latency_ms": self.latency_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionResult:
        return cls(
            id=str(data["id"]),
            question=str(data["question"]),
            kind=data.get("kind"),
            metrics={str(k): float(v) for k, v in data["metrics"].items()},
            chunk_ids=tuple(data.get("chunk_ids", ())),
            documents=tuple(data.get("documents", ())),
            latency_ms=float(data.get("latency_ms", 0.0)),
            family=data.get("family"),
            source=data.get("source"),
        )


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Aggregate and per-question results of one evaluation, with what produced them."""

    ks: tuple[int, ...]
    metrics: dict[str, float]
    by_kind: dict[str, dict[str, float]]
    questions: tuple[QuestionResult, ...]
    timing: dict[str, float]
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "ks": list(self.ks),
            "metrics": self.metrics,
            "by_kind": self.by_kind,
            "timing": self.timing,
            "questions": [question.to_dict() for question in self.questions],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalReport:
        return cls(
            ks=tuple(int(k) for k in data["ks"]),
            metrics={str(k): float(v) for k, v in data["metrics"].items()},
            by_kind={
                str(kind): {str(k): float(v) for k, v in values.items()}
                for kind, values in data.get("by_kind", {}).items()
            },
            questions=tuple(QuestionResult.from_dict(q) for q in data["questions"]),
            timing={str(k): float(v) for k, v in data.get("timing", {}).items()},
            config=dict(data.get("config", {})),
        )

    def with_timing(self, **extra: float) -> EvalReport:
        return replace(self, timing={**self.timing, **extra})


def retrieval_depth(ks: Sequence[int], mrr_depth: int | None = None) -> int:
    """How many chunks to ask for so every requested cut-off can be scored."""
    checked = check_ks(ks)
    if mrr_depth is not None and mrr_depth < 1:
        raise ValueError(f"the MRR depth must be at least 1, got {mrr_depth}")
    depth = max(*checked, NDCG_K, mrr_depth or 0)
    if depth > MAX_TOP_K:
        raise ValueError(f"the deepest cut-off is {depth}, but search returns at most {MAX_TOP_K}")
    return depth


def check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    if not ks:
        raise ValueError("give at least one k")
    for k in ks:
        if not 1 <= k <= MAX_TOP_K:
            raise ValueError(f"k must be between 1 and {MAX_TOP_K}, got {k}")
    # nDCG@10 is the headline figure and what --compare ranks questions by.
    return tuple(sorted({*ks, NDCG_K}))


async def evaluate(
    search: SearchFn,
    questions: Sequence[Question],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    options: RetrievalOptions | None = None,
    mrr_depth: int | None = None,
    document_ids: Mapping[str, Sequence[str]] | None = None,
    config: Mapping[str, Any] | None = None,
    count_tokens: Callable[[str], int],
) -> EvalReport:
    """Ask every question through ``search`` and score the rankings.

    ``count_tokens`` measures the text a cut-off hands over (``tokens@k``); the
    chunker's own counter makes the figures comparable with the chunk budget.

    ``options`` sets how to retrieve (alpha, rerank, filters); its ``top_k`` is
    raised to the deepest cut-off needed.  ``document_ids`` maps the engine's
    document ids to the dataset's (engine documents missing from it count as
    irrelevant); without it the engine's ids are taken to be the dataset's.
    ``mrr_depth`` cuts MRR (default: everything retrieved).
    """
    wanted = check_ks(ks)
    depth = retrieval_depth(wanted, mrr_depth)
    if any(question.answers for question in questions):
        depth = max(depth, min(BUDGET_DEPTH, MAX_TOP_K))
    chosen = replace(options or RetrievalOptions(), top_k=depth)
    results: list[QuestionResult] = []
    started = time.perf_counter()
    for question in questions:
        asked = time.perf_counter()
        found = await search(question.text, chosen)
        latency = (time.perf_counter() - asked) * 1000
        ranked = [_ranked(hit.chunk, document_ids) for hit in found.hits]
        metrics = question_metrics(
            judge(question, ranked),
            wanted,
            chunk_tokens=[count_tokens(chunk.text) for chunk in ranked],
            mrr_depth=mrr_depth,
        )
        for budget, handed in found_within(question, ranked, BUDGETS).items():
            metrics[f"budget@{budget}"] = handed
        results.append(
            QuestionResult(
                id=question.id,
                question=question.text,
                kind=question.kind,
                metrics=metrics,
                chunk_ids=tuple(chunk.chunk_id for chunk in ranked),
                documents=tuple(
                    (chunk.documents or (chunk.engine_document_id,))[0]
                    for chunk in document_order(ranked)
                ),
                latency_ms=round(latency, 3),
                family=question.family,
                source=next(iter(question.relevant)) if len(question.relevant) == 1 else None,
            )
        )
    query_seconds = time.perf_counter() - started
    return summarise(
        results,
        wanted,
        timing={"query_s": round(query_seconds, 3)},
        config={
            **(config or {}),
            "ks": list(wanted),
            "top_k": depth,
            "hybrid_alpha": chosen.hybrid_alpha,
            "rerank": chosen.rerank,
            "mrr_depth": mrr_depth,
        },
    )


def summarise(
    results: Sequence[QuestionResult],
    ks: Sequence[int],
    *,
    timing: Mapping[str, float],
    config: Mapping[str, Any],
) -> EvalReport:
    """Aggregate per-question results into a report (overall and per kind)."""
    kinds = sorted({r.kind for r in results if r.kind})
    latencies = [r.latency_ms for r in results]
    return EvalReport(
        ks=tuple(ks),
        metrics=aggregate([r.metrics for r in results]),
        by_kind={kind: aggregate([r.metrics for r in results if r.kind == kind]) for kind in kinds},
        questions=tuple(results),
        timing={
            **timing,
            "questions": float(len(results)),
            "p50_ms": round(percentile(latencies, 0.50), 3),
            "p95_ms": round(percentile(latencies, 0.95), 3),
        },
        config=dict(config),
    )


def _ranked(chunk: Chunk, mapping: Mapping[str, Sequence[str]] | None) -> RankedChunk:
    document_id = chunk.document_id
    documents = (document_id,) if mapping is None else tuple(mapping.get(document_id, ()))
    words = heading_words(chunk.heading_path, [s.heading_path for s in chunk.sections])
    return RankedChunk(chunk.id, document_id, documents, chunk.text, words)
