"""The evaluation gate of ``ragsage reindex``, run as a user runs it: the command, real workers.

The namespace holds the eval-gate dataset's documents (but one) among unrelated
notices, so recall@10 has room to tell a good embedding from a poor one: the
hashing embedder at 16 dimensions collides most words, at 256 it does not.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ragsage.core.jobs import JobState
from ragsage.core.scopes import Scope
from ragsage.query import RetrievalOptions
from ragsage.runtime import build_runtime

from .worker_harness import ROOT, Deployment

ACME = "acme"
DATASET = ROOT / "tests" / "fixtures" / "eval-gate"
OTHER_DATASET = ROOT / "tests" / "fixtures" / "eval" / "qa-tiny"
GOOD, POOR = "ragsage-hashing-256", "ragsage-hashing-16"
LEFT_OUT = "office/plants.md"
QUESTION = "How many weeks of paid parental leave do parents receive?"
# Words absent from the dataset, for notices that answer none of its questions.
FILLER = (
    "quarterly newsletter committee agenda minutes survey feedback roadmap milestone "
    "stakeholder workshop brainstorm offsite townhall announcement celebration anniversary "
    "recognition award mentor onboarding wiki glossary template checklist dashboard metric "
    "forecast quota territory campaign brochure webinar podcast interview candidate referral "
    "recruiter headcount reorganisation department division branch region headquarters "
    "subsidiary partner vendor procurement tender contract renewal warranty inventory "
    "warehouse shipment courier logistics customs tariff"
).split()


def _populate(deployment: Deployment) -> None:
    documents = DATASET / "documents"
    uploads: list[tuple[str, bytes]] = []
    for number, path in enumerate(sorted(documents.rglob("*.md"))):
        relative = path.relative_to(documents).as_posix()
        if relative == LEFT_OUT:
            continue
        # Half under their dataset path (an upload service), half under the bare
        # file name (what `ragsage enqueue DIR` records).
        uploads.append((relative if number % 2 else path.name, path.read_bytes()))
    chooser = random.Random(7)
    for number in range(60):
        lines = (" ".join(chooser.choice(FILLER) for _ in range(12)) for _ in range(4))
        body = "\n".join(f"{line.capitalize()}." for line in lines)
        uploads.append((f"notice-{number}.md", f"# Notice {number}\n\n{body}\n".encode()))
    outcomes = [
        deployment.enqueuer.enqueue_document(ACME, name, data=data) for name, data in uploads
    ]
    jobs = deployment.wait(ACME, [str(o.job_id) for o in outcomes], timeout=180)
    assert all(job.state is JobState.SUCCEEDED for job in jobs.values())


def _reindex(deployment: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ragsage.cli import main; sys.exit(main())",
            "reindex",
            "--namespace",
            ACME,
            *args,
        ],
        cwd=ROOT,
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _gate(deployment: Deployment, model: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _reindex(
        deployment,
        "--embedding-model",
        model,
        "--embedder",
        "hashing",
        "--gate",
        str(DATASET),
        "--gate-retrieval",
        "dense",
        "--timeout",
        "240",
        *extra,
    )


def _generations(deployment: Deployment) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in deployment.enqueuer.reindex.status(ACME):
        found.setdefault(str(row["state"]), []).append(str(row["embedding_model"]))
    return found


def _answer_ids(deployment: Deployment) -> list[str]:
    async def run() -> list[str]:
        runtime = build_runtime(deployment.settings)
        try:
            engine = await runtime.query_engine_for(Scope(ACME))
            found = await engine.search(Scope(ACME), QUESTION, RetrievalOptions(top_k=5))
            return [hit.chunk.id for hit in found.hits]
        finally:
            await runtime.aclose()

    return asyncio.run(run())


def _figures(output: str) -> dict[str, tuple[float, float]]:
    """The gate table's rows: metric → (active, new)."""
    rows = {}
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0] in ("recall@10", "ndcg@10", "mrr", "tokens@10"):
            rows[parts[0]] = (float(parts[1]), float(parts[2]))
    return rows


def test_the_gate_refuses_a_worse_model_and_switches_to_a_better_one(
    deployment: Deployment,
) -> None:
    deployment.worker().start(concurrency=2)
    _populate(deployment)
    before = _answer_ids(deployment)
    assert before

    unrelated = _reindex(
        deployment, "--embedding-model", POOR, "--gate", str(OTHER_DATASET), "--force"
    )
    assert unrelated.returncode == 2, unrelated.stderr
    assert "none of the 6 documents" in unrelated.stderr
    assert "nothing was re-indexed" in unrelated.stderr
    assert _generations(deployment) == {"active": [GOOD]}

    refused = _gate(deployment, POOR)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    figures = _figures(refused.stdout)
    assert set(figures) == {"recall@10", "ndcg@10", "mrr", "tokens@10"}
    old, new = figures["recall@10"]
    assert old - new > 0.02, figures
    assert GOOD in refused.stdout and POOR in refused.stdout
    assert "23 of 24 documents found, 23 questions" in refused.stdout
    assert f"not in the namespace: {LEFT_OUT}" in refused.stderr
    assert "1 question about them skipped" in refused.stderr
    assert "refused: recall@10 fell by" in refused.stderr
    assert f"ragsage reindex --namespace {ACME} --rollback" in refused.stderr
    assert "--force" in refused.stderr
    assert _generations(deployment) == {"active": [GOOD], "building": [POOR]}
    assert _answer_ids(deployment) == before  # still answered by the old generation
    status = _reindex(deployment, "--status")
    assert "complete, awaiting gate" in status.stdout, status.stdout
    # The verdict is kept on the generation, for GET /v1/reindex as well.
    (held,) = [g for g in deployment.enqueuer.reindex.status(ACME) if g["state"] == "building"]
    assert held["gate"]["passed"] is False and held["gate"]["forced"] is False
    assert (held["gate"]["active"], held["gate"]["new"]) == pytest.approx(
        figures["recall@10"], abs=5e-4
    )

    forced = _gate(deployment, POOR, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert _figures(forced.stdout)["recall@10"] == figures["recall@10"]
    assert "forced past the gate" in forced.stdout
    assert _generations(deployment) == {"active": [POOR], "retired": [GOOD]}

    better = _gate(deployment, GOOD)
    assert better.returncode == 0, better.stdout + better.stderr
    poor_recall, good_recall = _figures(better.stdout)["recall@10"]
    assert good_recall > poor_recall
    assert "passed the gate" in better.stdout
    assert _generations(deployment)["active"] == [GOOD]
    assert _answer_ids(deployment) == before


def test_gate_flags_are_checked_before_anything_runs(deployment: Deployment) -> None:
    alone = _reindex(deployment, "--embedding-model", POOR, "--force")
    assert alone.returncode == 2 and "--force: only meaningful with --gate" in alone.stderr
    margin = _gate(deployment, POOR, "--gate-margin", "1.5")
    assert margin.returncode == 2 and "margin must be between 0 and 1" in margin.stderr
    missing = _reindex(deployment, "--embedding-model", POOR, "--gate", str(Path("/nowhere")))
    assert missing.returncode == 2 and "/nowhere" in missing.stderr
