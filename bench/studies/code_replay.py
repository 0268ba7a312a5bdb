"""Save the code set's candidate lists once, then replay graphs and length scaling over them.

    python bench/studies/code_replay.py collect [--dataset .ragsage/eval/code]
                                [--ef-construction 40 64] [--out runs/code-replay.json]
    python bench/studies/code_replay.py replay [runs/code-replay.json] [--split dev]
                                [--exponents 0 0.1 0.2 0.3 0.5] [--words 100]

``collect`` starts ``ragsage up`` with offline defaults in a fresh data folder,
uploads the code set through the API (one ``ragsage eval --backend api`` run),
and reads the stack's Postgres directly: every chunk, and for every question of
both splits its keyword candidates (the engine's own function) and its dense
candidates walked through the shared graph built with each ``--ef-construction``
(rebuilt in place, ``m`` as configured, ``ef_search`` 160) and ranked exactly.
It also prints each graph's recall of the exact top ten at ``ef_search`` 160 and
400 for every seventh question, with the walk's median time.

``replay`` fuses each question's saved lists as the engine does (``fusion_for``,
``fuse_ranked``, the top 60), scales long code passages
(``prefer_concise_code``) for each exponent and word threshold, and prints per
family the answers found within 660 tokens (of n, and averaged over languages
against the plain baseline's saved run, ``runs/code-budget/baseline-*.json``,
which ``code_budget.py`` writes) and nDCG@10.  No model or database is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

# Run as a script, this folder (bench/studies/) is on sys.path: its sibling imports directly.
from eval_code_api import RAGSAGE, _stack

from ragsage.core.chunks import Chunk, Ranked, ScoredChunk
from ragsage.evaluation.datasets import Question, load_dataset
from ragsage.evaluation.judging import RankedChunk, found_within, judge
from ragsage.evaluation.metrics import question_metrics
from ragsage.query import RetrievalOptions
from ragsage.query.fusion import fuse_ranked, fusion_for
from ragsage.query.scores import prefer_concise_code

TOP_K = 60
DEPTH = RetrievalOptions(top_k=TOP_K).candidate_count
PORT = 8734
FAMILIES = ("developer", "behaviour", "behaviour-2", "doc-comment", "handwritten")


def collect(dataset: Path, builds: list[int], out: Path) -> None:
    import psycopg

    from ragsage.adapters.postgres import lexical_store as keyword
    from ragsage.adapters.postgres.config import PostgresConfig
    from ragsage.adapters.providers import LocalEmbedder, locate_local_model

    splits = [load_dataset(str(dataset), split).questions for split in ("dev", "test")]
    questions = [q for asked in splits for q in asked]
    stack = _stack(dict(os.environ), PORT)
    with stack as key:
        upload = [
            str(RAGSAGE), "eval", str(dataset), "--split", "dev", "--family", "behaviour",
            "--backend", "api", "--api-url", f"http://127.0.0.1:{PORT}", "--api-timeout", "3600",
        ]  # fmt: skip
        subprocess.run(upload, env={**os.environ, "RAGSAGE_API_KEY": key}, check=True)
        url = f"postgresql://postgres@/ragsage?host={stack.data / 'postgres'}"
        with psycopg.connect(url, autocommit=True) as db:
            db.execute(
                "SELECT set_config('ragsage.namespace', 'default', false), "
                "set_config('ragsage.principals', '*', false)"
            )
            rows = db.execute(
                "SELECT document_id, ordinal, source, text, metadata, embedding_dim "
                "FROM ragsage_chunks WHERE namespace = 'default' ORDER BY document_id, ordinal"
            ).fetchall()
            chunks = {f"{r[0]}:{r[1]}": [r[0], r[1], r[2], r[3], r[4]] for r in rows}
            dim = int(rows[0][5])
            vectors = LocalEmbedder(locate_local_model()).embed_sync([q.text for q in questions])
            literals = ["[" + ",".join(f"{x:.7f}" for x in v) + "]" for v in vectors]
            lists: dict[str, dict[str, list[tuple[str, float]]]] = {q.id: {} for q in questions}
            for question in questions:
                found = db.execute(
                    "SELECT * FROM ragsage_keyword_search(%s, %s, %s, %s, %s, NULL, NULL, NULL, "
                    "NULL, NULL, true, NULL, 0)",
                    (
                        question.text,
                        bool(keyword._SEARCH_SYNTAX.search(question.text)),
                        DEPTH,
                        keyword.COMMON_TERM_ROWS,
                        keyword.COMMON_SAMPLE_ROWS,
                    ),
                ).fetchall()
                lists[question.id]["keyword"] = [
                    (f"{r[0]}:{r[1]}", float(r[keyword.CHUNK_COLUMN_COUNT])) for r in found
                ]
            exact = f"embedding <=> %s::vector({dim})"
            _rank(db, dim, questions, literals, lists, "exact", exact)
            db.execute("SET hnsw.iterative_scan = relaxed_order")
            m = PostgresConfig(dsn=url).hnsw_m
            for build in builds:
                db.execute(f"DROP INDEX ragsage_chunks_embedding_{dim}")
                db.execute(
                    f"CREATE INDEX ragsage_chunks_embedding_{dim} ON ragsage_chunks USING hnsw "
                    f"((embedding::vector({dim})) vector_cosine_ops) "
                    f"WITH (m = {m}, ef_construction = {build}) WHERE embedding_dim = {dim}"
                )
                # The expression and the width predicate of the partial index, so it is walked.
                walked = f"embedding::vector({dim}) <=> %s::vector({dim})"
                for ef in (400, 160):
                    db.execute(f"SET hnsw.ef_search = {ef}")
                    name = f"graph {m}/{build}" + (f" ef {ef}" if ef != 160 else "")
                    took = _rank(db, dim, questions, literals, lists, name, walked)
                    sample = questions[::7]
                    recall = statistics.mean(
                        len(_top(lists[q.id][name]) & _top(lists[q.id]["exact"])) / 10
                        for q in sample
                    )
                    print(
                        f"m {m}, ef_construction {build}, ef_search {ef}: recall of the exact "
                        f"top ten {recall:.3f} over {len(sample)} questions, walk p50 "
                        f"{statistics.median(took):.2f} ms"
                    )
    out.write_text(json.dumps({"chunks": chunks, "lists": lists}))
    print(f"saved {len(chunks)} chunks and the lists of {len(questions)} questions to {out}")


def _rank(
    db: Any,
    dim: int,
    questions: list[Question],
    literals: list[str],
    lists: dict[str, dict[str, list[tuple[str, float]]]],
    name: str,
    distance: str,
) -> list[float]:
    took = []
    for question, literal in zip(questions, literals, strict=True):
        started = time.perf_counter()
        found = db.execute(
            f"SELECT document_id || ':' || ordinal, 1 - ({distance}) FROM ragsage_chunks "
            f"WHERE namespace = 'default' AND embedding_dim = {dim} "
            f"ORDER BY {distance} LIMIT {DEPTH}",
            (literal, literal),
        ).fetchall()
        took.append((time.perf_counter() - started) * 1000)
        lists[question.id][name] = [(r[0], float(r[1])) for r in found]
    return took


def _top(ranked: list[tuple[str, float]]) -> set[str]:
    return {key for key, _ in ranked[:10]}


def replay(
    saved: Path, dataset: Path, split: str, exponents: list[float], words: list[int]
) -> None:
    data = json.loads(saved.read_text())
    chunks = {
        key: Chunk(id=key, document_id=d, ordinal=o, text=t, embed_text="", metadata=m)
        for key, (d, o, _, t, m) in data["chunks"].items()
    }
    sources = {key: row[2] for key, row in data["chunks"].items()}
    questions = [q for q in load_dataset(str(dataset), split).questions if q.family in FAMILIES]
    dense_lists = [name for name in next(iter(data["lists"].values())) if name != "keyword"]
    for dense in dense_lists:
        for exponent in exponents:
            for threshold in words if exponent else words[:1]:
                print(f"\n{dense}, exponent {exponent}, {threshold} words:")
                _print(questions, split, _judged(data, chunks, sources, questions, dense,
                       exponent, threshold))  # fmt: skip


def _judged(
    data: dict[str, Any],
    chunks: dict[str, Chunk],
    sources: dict[str, str],
    questions: list[Question],
    dense_name: str,
    exponent: float,
    threshold: int,
) -> dict[str, tuple[float, float]]:
    out = {}
    for question in questions:
        saved = data["lists"][question.id]
        dense = [Ranked(key, score, chunks[key]) for key, score in saved[dense_name]]
        lexical = [Ranked(key, score, chunks[key]) for key, score in saved["keyword"]]
        method, alpha = fusion_for("score", question.text, dense, lexical)
        fused = fuse_ranked(method, dense, lexical, alpha=alpha)[:TOP_K]
        hits = [ScoredChunk(chunk=chunks[f.chunk_id], score=f.score) for f in fused]
        hits = prefer_concise_code(hits, exponent, threshold)
        ranked = [
            RankedChunk(h.chunk.id, h.chunk.document_id, (sources[h.chunk.id],), h.chunk.text)
            for h in hits
        ]
        found = found_within(question, ranked)[660]
        ndcg = question_metrics(judge(question, ranked), (10,), chunk_tokens=[0] * len(ranked))
        out[question.id] = (found, ndcg["ndcg@10"])
    return out


def _print(questions: list[Question], split: str, judged: dict[str, tuple[float, float]]) -> None:
    for family in FAMILIES:
        asked = [q for q in questions if q.family == family]
        baseline_run = Path(f"runs/code-budget/baseline-{family}-{split}.json")
        if not asked or not baseline_run.exists():
            continue
        base = {
            q["id"]: q["metrics"]["budget@660"]
            for q in json.loads(baseline_run.read_text())["questions"]
        }
        ours: dict[str, list[float]] = defaultdict(list)
        theirs: dict[str, list[float]] = defaultdict(list)
        for q in asked:
            ours[q.kind or ""].append(judged[q.id][0])
            theirs[q.kind or ""].append(base[q.id])
        found = sum(judged[q.id][0] for q in asked)
        print(
            f"  {family:<12} found@660 {int(found):>3} of {len(asked):>3} (baseline "
            f"{int(sum(base[q.id] for q in asked)):>3}), by language "
            f"{_by_kind(ours):.3f} vs {_by_kind(theirs):.3f}, nDCG@10 "
            f"{statistics.mean(judged[q.id][1] for q in asked):.3f}"
        )


def _by_kind(values: dict[str, list[float]]) -> float:
    return statistics.mean(statistics.mean(v) for v in values.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gather = commands.add_parser("collect")
    gather.add_argument("--dataset", type=Path, default=Path(".ragsage/eval/code"))
    gather.add_argument("--ef-construction", type=int, nargs="+", default=[40, 64])
    gather.add_argument("--out", type=Path, default=Path("runs/code-replay.json"))
    again = commands.add_parser("replay")
    again.add_argument("saved", type=Path, nargs="?", default=Path("runs/code-replay.json"))
    again.add_argument("--dataset", type=Path, default=Path(".ragsage/eval/code"))
    again.add_argument("--split", default="dev")
    again.add_argument("--exponents", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.5])
    again.add_argument("--words", type=int, nargs="+", default=[100])
    args = parser.parse_args()
    if args.command == "collect":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        collect(args.dataset, args.ef_construction, args.out)
    else:
        replay(args.saved, args.dataset, args.split, args.exponents, args.words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
