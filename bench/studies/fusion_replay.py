"""Save each question's dense and keyword candidates once, then replay fusions over them.

    python bench/studies/fusion_replay.py collect DATASET --split dev --embedder local --out FILE
    python bench/studies/fusion_replay.py replay FILE DATASET --split dev

``collect`` indexes the dataset in a throwaway namespace of the Postgres that
``RAGSAGE_DATABASE_URL`` names (as ``ragsage eval --backend postgres`` does) and
saves, per question, the dense-only and keyword-only results at the depth the
engine fuses for an evaluation (``candidate_count`` of ``top_k`` 20) with their
raw scores.  ``replay`` fuses those lists in several ways without touching a
database or a model, judges the top 20 as ``ragsage eval`` does, and prints
nDCG@10 and recall@10 averaged over kinds, each against keyword-only with the
same stratified paired bootstrap as ``ragsage eval --compare``.  One collect
costs an index build; each fusion tried after it costs a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragsage.cli.evaluation.backends import IndexConfig, in_postgres
from ragsage.core.chunks import Ranked
from ragsage.evaluation.datasets import Question, load_dataset
from ragsage.evaluation.judging import RankedChunk, judge
from ragsage.evaluation.metrics import question_metrics
from ragsage.evaluation.runs import paired_bootstrap
from ragsage.query import RetrievalOptions
from ragsage.query.fusion import fuse_ranked

TOP_K = 20
DEPTH = RetrievalOptions(top_k=TOP_K).candidate_count
# One candidate: chunk id, engine document id, text, raw score.
Candidate = tuple[str, str, str, float]
Fusion = Callable[[list[Candidate], list[Candidate]], list[str]]


async def collect(dataset_path: str, split: str, embedder: str, out: Path) -> None:
    dataset = load_dataset(dataset_path, split)
    async with in_postgres(dataset, IndexConfig(embedder=embedder)) as corpus:
        rows = []
        for question in dataset.questions:
            lists = {}
            for name, alpha in (("dense", 1.0), ("lexical", 0.0)):
                found = await corpus.search(
                    question.text,
                    RetrievalOptions(top_k=DEPTH, candidates=DEPTH, hybrid_alpha=alpha),
                )
                lists[name] = [
                    (
                        hit.chunk.id,
                        hit.chunk.document_id,
                        hit.chunk.text,
                        (hit.vector_score if alpha else hit.keyword_score) or 0.0,
                    )
                    for hit in found.hits
                ]
            rows.append({"id": question.id, "kind": question.kind, "lists": lists})
    mapping = {key: list(value) for key, value in corpus.document_ids.items()}
    out.write_text(json.dumps({"mapping": mapping, "rows": rows}))
    print(f"saved the candidates of {len(rows)} questions to {out}")


def scaled(scores: Sequence[float], how: str) -> list[float]:
    if not scores:
        return []
    if how == "3sigma":
        # Scaled by the list's own spread: mean - 3 sd is 0, mean + 3 sd is 1.
        mean, spread = statistics.mean(scores), statistics.pstdev(scores) or 1.0
        return [(s - mean + 3 * spread) / (6 * spread) for s in scores]
    clipped = [max(s, 0.0) for s in scores]
    high, low = max(clipped), min(clipped)
    if how == "minmax":
        return [(s - low) / (high - low) if high > low else 1.0 for s in clipped]
    return [s / high if high > 0 else 1.0 for s in clipped]


def weighted(alpha: float, how: str, *, missing_as_last: bool = False) -> Fusion:
    """Scaled-score fusion; ``missing_as_last`` scores a chunk absent from a list as its last."""

    def fused(dense: list[Candidate], lexical: list[Candidate]) -> list[str]:
        total: dict[str, float] = {}
        every = {c[0] for c in dense} | {c[0] for c in lexical}
        for ranked, weight in ((dense, alpha), (lexical, 1.0 - alpha)):
            values = scaled([c[3] for c in ranked], how)
            for candidate, value in zip(ranked, values, strict=True):
                total[candidate[0]] = total.get(candidate[0], 0.0) + weight * value
            if missing_as_last and values:
                for key in every - {c[0] for c in ranked}:
                    total[key] = total.get(key, 0.0) + weight * values[-1]
        return sorted(total, key=lambda key: (-total[key], key))

    return fused


def shipped(method: str, alpha: float) -> Fusion:
    """The engine's own fusion code, on the saved scores."""

    def fused(dense: list[Candidate], lexical: list[Candidate]) -> list[str]:
        return [
            f.chunk_id
            for f in fuse_ranked(
                method,  # type: ignore[arg-type]
                [Ranked(c[0], c[3]) for c in dense],
                [Ranked(c[0], c[3]) for c in lexical],
                alpha=alpha,
            )
        ]

    return fused


def fusions() -> dict[str, Fusion]:
    chosen: dict[str, Fusion] = {
        "keyword only": lambda dense, lexical: [c[0] for c in lexical],
        "dense only": lambda dense, lexical: [c[0] for c in dense],
    }
    for alpha in (0.1, 0.2, 0.3, 0.4, 0.5):
        chosen[f"shipped (score, /best) a={alpha}"] = shipped("score", alpha)
        chosen[f"min-max a={alpha}"] = weighted(alpha, "minmax")
        chosen[f"mean+-3sd a={alpha}"] = weighted(alpha, "3sigma")
        chosen[f"/best, missing as last a={alpha}"] = weighted(alpha, "best", missing_as_last=True)
    for alpha in (0.3, 0.5):
        chosen[f"rrf k=60 a={alpha}"] = shipped("rrf", alpha)
    return chosen


def replay(saved: Path, dataset_path: str, split: str) -> None:
    data: dict[str, Any] = json.loads(saved.read_text())
    questions: dict[str, Question] = {q.id: q for q in load_dataset(dataset_path, split).questions}
    mapping: dict[str, list[str]] = data["mapping"]
    rows = [row for row in data["rows"] if row["id"] in questions]
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for name, fusion in fusions().items():
        scores[name] = {}
        for row in rows:
            dense = [tuple(c) for c in row["lists"]["dense"]]
            lexical = [tuple(c) for c in row["lists"]["lexical"]]
            texts = {c[0]: (c[1], c[2]) for c in (*dense, *lexical)}
            order = fusion(dense, lexical)[:TOP_K]  # type: ignore[arg-type]
            ranked = []
            for key in order:
                document, text = texts[key]
                ranked.append(RankedChunk(key, document, tuple(mapping.get(document, ())), text))
            scores[name][row["id"]] = question_metrics(
                judge(questions[row["id"]], ranked), (10,), chunk_tokens=[0] * len(ranked)
            )
    kinds: dict[str, list[str]] = {}
    for row in rows:
        kinds.setdefault(row["kind"] or "", []).append(row["id"])
    print(f"{len(rows)} questions, {len(kinds)} kinds; averaged over kinds; delta against keyword")
    for name, per in scores.items():
        figures = [
            sum(statistics.mean(per[i][metric] for i in ids) for ids in kinds.values()) / len(kinds)
            for metric in ("ndcg@10", "recall@10")
        ]
        baseline = scores["keyword only"]
        pairs = [
            (row["kind"] or "", baseline[row["id"]]["ndcg@10"], per[row["id"]]["ndcg@10"])
            for row in rows
        ]
        delta, low, high = paired_bootstrap(pairs, rounds=2000)
        print(
            f"  {name:<34} nDCG@10 {figures[0]:.4f}  recall@10 {figures[1]:.4f}  "
            f"{delta:+.4f} [{low:+.4f}, {high:+.4f}]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gather = commands.add_parser("collect")
    gather.add_argument("dataset")
    gather.add_argument("--split", default="dev")
    gather.add_argument("--embedder", default="local")
    gather.add_argument("--out", type=Path, required=True)
    again = commands.add_parser("replay")
    again.add_argument("saved", type=Path)
    again.add_argument("dataset")
    again.add_argument("--split", default="dev")
    args = parser.parse_args()
    if args.command == "collect":
        asyncio.run(collect(args.dataset, args.split, args.embedder, args.out))
    else:
        replay(args.saved, args.dataset, args.split)


if __name__ == "__main__":
    main()
