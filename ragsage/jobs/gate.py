"""The evaluation gate of a model switch: measure the new generation before it serves.

``ragsage reindex --gate DATASET`` builds the new generation *held*, then asks
the dataset's questions of the active and the building generation alike — each
through its own embedder and its own rows — and lets the switch happen only if
recall@10 did not fall by more than a margin.  The dataset's documents must be
the namespace's own documents: they are found by external id (the upload's file
name, or the path it was uploaded under), and questions about a document the
namespace does not hold are skipped, since no generation could answer them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ragsage.adapters.postgres.jobs import documents
from ragsage.core.errors import InvalidRequest
from ragsage.core.scopes import Scope
from ragsage.evaluation.datasets import Dataset, Question
from ragsage.evaluation.runner import EvalReport, evaluate
from ragsage.query import RetrievalOptions, RetrievalResult

if TYPE_CHECKING:
    from ragsage.runtime import Runtime

GATE_METRIC = "recall@10"
SHOWN_METRICS = ("recall@10", "ndcg@10", "mrr", "tokens@10")
DEFAULT_MARGIN = 0.02
RETRIEVAL_ALPHA: dict[str, float | None] = {"dense": 1.0, "hybrid": None}
# Recall is a mean of fractions; without a tolerance a drop of exactly the
# margin (0.50 -> 0.48) would read as 0.020000000000000018 and be refused.
_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class DatasetMatch:
    """Which of a dataset's documents the namespace holds, and the questions left to ask."""

    document_ids: dict[str, tuple[str, ...]]
    missing: tuple[str, ...]
    questions: tuple[Question, ...]
    skipped: int

    @property
    def matched(self) -> int:
        return sum(len(ids) for ids in self.document_ids.values())


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """Both generations' figures and whether the building one may switch in."""

    active: EvalReport
    building: EvalReport
    margin: float

    @property
    def drop(self) -> float:
        """How much recall@10 fell (negative when it rose)."""
        return self.active.metrics[GATE_METRIC] - self.building.metrics[GATE_METRIC]

    @property
    def passed(self) -> bool:
        return passes(
            self.active.metrics[GATE_METRIC], self.building.metrics[GATE_METRIC], self.margin
        )


def passes(active_recall: float, building_recall: float, margin: float) -> bool:
    """True unless recall fell by more than ``margin`` (absolute; a drop of exactly it passes)."""
    if not 0.0 <= margin <= 1.0:
        raise InvalidRequest(f"the gate margin must be between 0 and 1, got {margin}")
    return active_recall - building_recall <= margin + _TOLERANCE


def match_documents(dataset: Dataset, held: Mapping[str, str]) -> DatasetMatch:
    """Pair the dataset's documents with the namespace's (``held``: external id → id).

    A dataset id matches an external id equal to it, then one ending in
    ``/<id>`` (uploaded from a parent folder), then — when no other dataset
    document shares the name — its bare file name, which is what
    ``ragsage enqueue DIR`` records.  An ambiguous suffix match counts as missing.
    """
    names: dict[str, int] = {}
    for document in dataset.documents:
        base = PurePosixPath(document.id).name
        names[base] = names.get(base, 0) + 1
    mapping: dict[str, tuple[str, ...]] = {}
    missing: list[str] = []
    for document in dataset.documents:
        engine_id = _find(
            document.id, held, unique_name=names[PurePosixPath(document.id).name] == 1
        )
        if engine_id is None and document.filename != document.id:
            # A BEIR entry is uploaded as a file named after its id (d1 -> d1.md).
            engine_id = _find(document.filename, held, unique_name=False)
        if engine_id is None:
            missing.append(document.id)
            continue
        mapping[engine_id] = (*mapping.get(engine_id, ()), document.id)
    found = {dataset_id for ids in mapping.values() for dataset_id in ids}
    kept = tuple(q for q in dataset.questions if set(q.relevant) & found)
    return DatasetMatch(
        document_ids=mapping,
        missing=tuple(missing),
        questions=kept,
        skipped=len(dataset.questions) - len(kept),
    )


def _find(dataset_id: str, held: Mapping[str, str], *, unique_name: bool) -> str | None:
    if dataset_id in held:
        return held[dataset_id]
    below = [engine for external, engine in held.items() if external.endswith("/" + dataset_id)]
    if len(below) == 1:
        return below[0]
    if below:
        return None
    name = PurePosixPath(dataset_id).name
    if unique_name and name != dataset_id and name in held:
        return held[name]
    return None


async def match_namespace(runtime: Runtime, scope: Scope, dataset: Dataset) -> DatasetMatch:
    """:func:`match_documents` against what ``scope`` holds; refuses when nothing matches."""
    async with runtime.database.session(scope) as session:
        held = await documents.namespace_documents(session)
    match = match_documents(dataset, held)
    if not match.document_ids:
        raise InvalidRequest(
            f"none of the {len(dataset.documents)} documents of dataset {dataset.name!r} is in "
            f"namespace {scope.namespace!r} (matched by external id: the file name or path "
            "they were uploaded under); nothing was re-indexed"
        )
    if not match.questions:
        raise InvalidRequest(
            f"no question of dataset {dataset.name!r} is about a document namespace "
            f"{scope.namespace!r} holds; nothing was re-indexed"
        )
    return match


async def evaluate_generation(
    runtime: Runtime,
    scope: Scope,
    generation: int,
    match: DatasetMatch,
    retrieval: str = "hybrid",
) -> EvalReport:
    """The dataset's questions asked of one live generation, scored."""
    engine = await runtime.query_engine_for_generation(scope, generation)

    async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
        return await engine.search(scope, query, options)

    return await evaluate(
        search,
        match.questions,
        ks=(10,),
        # The reranker is the same on both sides; left out, it cannot hide a
        # worse embedding.
        options=RetrievalOptions(hybrid_alpha=RETRIEVAL_ALPHA[retrieval], rerank=False),
        document_ids=match.document_ids,
        config={"generation": generation, "retrieval": retrieval},
        count_tokens=runtime.count_tokens,
    )


async def judge_switch(
    runtime: Runtime,
    scope: Scope,
    *,
    active: int,
    building: int,
    match: DatasetMatch,
    margin: float = DEFAULT_MARGIN,
    retrieval: str = "hybrid",
) -> GateVerdict:
    """Evaluate both generations on the same questions and decide."""
    # Bad settings fail here, not after minutes of evaluation.
    passes(0.0, 0.0, margin)
    if retrieval not in RETRIEVAL_ALPHA:
        raise InvalidRequest(
            f"gate retrieval must be one of {', '.join(RETRIEVAL_ALPHA)}, got {retrieval!r}"
        )
    before = await evaluate_generation(runtime, scope, active, match, retrieval)
    after = await evaluate_generation(runtime, scope, building, match, retrieval)
    return GateVerdict(active=before, building=after, margin=margin)


def verdict_table(verdict: GateVerdict, labels: Sequence[str]) -> str:
    """Both generations' figures and the change, one metric a row."""
    first, second = labels
    width = max(len(first), len(second), 12)
    lines = [f"{'metric':<10}  {first:>{width}}  {second:>{width}}  {'change':>9}"]
    for name in SHOWN_METRICS:
        before, after = verdict.active.metrics[name], verdict.building.metrics[name]
        lines.append(
            f"{name:<10}  {_value(name, before):>{width}}  {_value(name, after):>{width}}  "
            f"{_change(name, after - before):>9}"
        )
    return "\n".join(lines)


def _value(name: str, value: float) -> str:
    return f"{value:.1f}" if name.startswith("tokens") else f"{value:.4f}"


def _change(name: str, delta: float) -> str:
    return f"{delta:+.1f}" if name.startswith("tokens") else f"{delta:+.4f}"
