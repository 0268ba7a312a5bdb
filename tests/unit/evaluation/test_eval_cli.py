"""``ragsage eval`` in process on the committed tiny datasets, as a user runs it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragsage.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "eval"
QA, BEIR = str(FIXTURES / "qa-tiny"), str(FIXTURES / "beir-tiny")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["eval", *argv]) == 0
    return capsys.readouterr().out


def test_lexical_retrieval_finds_the_exact_phrase_question(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = run(capsys, QA, "--retrieval", "lexical", "--no-cache", "--json")
    report = json.loads(out)
    by_id = {q["id"]: q for q in report["questions"]}
    assert by_id["q06"]["metrics"]["mrr"] == 1.0
    assert report["metrics"]["pass@5"] == 1.0
    assert report["config"]["hybrid_alpha"] == 0.0 and report["config"]["backend"] == "memory"
    assert report["timing"]["questions"] == 10.0
    # QA answers are also judged within token budgets: what a small budget
    # finds, a bigger one finds too.
    assert report["metrics"]["budget@1320"] >= report["metrics"]["budget@330"] > 0.5
    assert by_id["q06"]["metrics"]["budget@330"] == 1.0
    table = run(capsys, QA, "--retrieval", "lexical", "--no-cache")
    assert "found within a token budget (whitespace tokens)  330: " in table


def test_printed_figures_match_the_saved_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "runs" / "hybrid.json"
    table = run(capsys, BEIR, "--no-cache", "--k", "1", "5", "--save", str(saved))
    run_file = json.loads(saved.read_text())
    metrics = run_file["metrics"]
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line.strip()}
    assert rows["metric"] == ["@1", "@5", "@10"]
    assert rows["nDCG"] == [f"{metrics[f'ndcg@{k}']:.3f}" for k in (1, 5, 10)]
    assert rows["recall"] == [f"{metrics[f'recall@{k}']:.3f}" for k in (1, 5, 10)]
    assert rows["tokens"] == [f"{metrics[f'tokens@{k}']:.0f}" for k in (1, 5, 10)]
    assert rows["MRR"][0] == f"{metrics['mrr']:.3f}"
    assert float(rows["tokens"][0]) > 0
    # Each question's ranking is saved with its metrics.
    first = run_file["questions"][0]
    assert first["documents"] and first["chunk_ids"] and "ndcg@10" in first["metrics"]


def test_the_same_flags_give_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    one = json.loads(run(capsys, QA, "--no-cache", "--json"))
    two = json.loads(run(capsys, QA, "--no-cache", "--json"))
    assert one["metrics"] == two["metrics"]
    assert [q["chunk_ids"] for q in one["questions"]] == [q["chunk_ids"] for q in two["questions"]]


def test_compare_reports_the_questions_lexical_wins_over_dense(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dense, lexical = tmp_path / "dense.json", tmp_path / "lexical.json"
    run(capsys, QA, "--no-cache", "--retrieval", "dense", "--save", str(dense))
    run(capsys, QA, "--no-cache", "--retrieval", "lexical", "--save", str(lexical))
    out = run(capsys, "--compare", str(dense), str(lexical))
    assert "wins" in out and "biggest wins:" in out
    # The biggest win is the question whose nDCG@10 rose most between the reports.
    before, after = (
        {q["id"]: q for q in json.loads(path.read_text())["questions"]} for path in (dense, lexical)
    )
    gains = {
        qid: after[qid]["metrics"]["ndcg@10"] - before[qid]["metrics"]["ndcg@10"] for qid in before
    }
    best = max(gains, key=lambda qid: gains[qid])
    assert gains[best] > 0
    wins_section = out.split("biggest wins:")[1].split("biggest losses:")[0]
    assert f"[{best}] {before[best]['question']}" in wins_section.splitlines()[1]
    ndcg_row = next(line for line in out.splitlines() if line.startswith("ndcg@10"))
    a, b, delta = ndcg_row.split()[1:]
    assert float(b) > float(a) and delta.startswith("+")
    as_json = json.loads(run(capsys, "--compare", str(dense), str(lexical), "--json"))
    assert best in as_json["wins"] and best not in as_json["losses"]


def test_the_local_model_caches_embeddings_between_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    args = (BEIR, "--embedder", "local", "--retrieval", "dense", "--cache-dir", str(cache))
    first = json.loads(run(capsys, *args, "--json"))
    with sqlite3.connect(cache / "embeddings.sqlite3") as db:
        (stored,) = db.execute("SELECT count(*) FROM entries").fetchone()
    # nine one-chunk documents plus ten questions
    assert stored == 19
    second = json.loads(run(capsys, *args, "--json"))
    assert first["metrics"] == second["metrics"]
    assert first["config"]["embedding_model"] == "all-MiniLM-L6-v2"
    assert first["metrics"]["ndcg@10"] > 0.8


def test_bad_input_is_a_readable_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["eval", QA, "--split", "train"]) == 2
    assert "unknown split 'train'" in capsys.readouterr().err
    assert main(["eval", QA, "--k", "0"]) == 2
    assert "k must be between 1 and 100" in capsys.readouterr().err
    assert main(["eval", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "no such run file" in capsys.readouterr().err
    assert main(["eval", QA, "--backend", "api"]) == 2
    assert "--api-url" in capsys.readouterr().err
