"""The re-index gate's rule and its dataset matching, without a database."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsage.core.errors import InvalidRequest
from ragsage.evaluation.datasets import load_dataset
from ragsage.evaluation.runner import EvalReport
from ragsage.jobs.gate import GateVerdict, match_documents, passes, verdict_table

DATASET = Path(__file__).resolve().parents[2] / "fixtures" / "eval-gate"


@pytest.mark.parametrize(
    ("active", "building", "margin", "expected"),
    [
        (0.50, 0.48, 0.02, True),  # a drop of exactly the margin is allowed
        (0.50, 0.4799, 0.02, False),  # just past it is not
        (0.90, 0.95, 0.02, True),  # a rise always passes
        (0.90, 0.90, 0.0, True),  # a zero margin still accepts no change
        (0.90, 0.8999, 0.0, False),
        (1.0, 0.0, 1.0, True),  # margin 1 accepts anything
    ],
)
def test_recall_may_fall_by_at_most_the_margin(
    active: float, building: float, margin: float, expected: bool
) -> None:
    assert passes(active, building, margin) is expected


@pytest.mark.parametrize("margin", [-0.01, 1.5])
def test_a_margin_outside_zero_to_one_is_refused(margin: float) -> None:
    with pytest.raises(InvalidRequest, match="margin must be between 0 and 1"):
        passes(0.5, 0.5, margin)


def _report(recall: float) -> EvalReport:
    metrics = {"recall@10": recall, "ndcg@10": recall / 2, "mrr": recall / 3, "tokens@10": 300.0}
    return EvalReport(ks=(10,), metrics=metrics, by_kind={}, questions=(), timing={})


def test_the_verdict_shows_both_generations_and_the_change() -> None:
    verdict = GateVerdict(active=_report(0.8), building=_report(0.7), margin=0.05)
    assert not verdict.passed and verdict.drop == pytest.approx(0.1)
    table = verdict_table(verdict, ("active", "new"))
    recall = next(line for line in table.splitlines() if line.startswith("recall@10"))
    assert recall.split() == ["recall@10", "0.8000", "0.7000", "-0.1000"]
    assert [line.split()[0] for line in table.splitlines()[1:]] == [
        "recall@10",
        "ndcg@10",
        "mrr",
        "tokens@10",
    ]


def test_documents_match_by_path_by_parent_folder_or_by_a_unique_file_name() -> None:
    dataset = load_dataset(DATASET)
    held = {
        "hr/probation.md": "doc-path",  # uploaded under its dataset path
        "exports/handbook/it/vpn.md": "doc-below",  # uploaded from a parent folder
        "canteen.md": "doc-name",  # `ragsage enqueue DIR` records the bare name
        "unrelated.md": "doc-other",
    }
    match = match_documents(dataset, held)
    assert match.document_ids == {
        "doc-path": ("hr/probation.md",),
        "doc-below": ("it/vpn.md",),
        "doc-name": ("facilities/canteen.md",),
    }
    assert len(match.missing) == len(dataset.documents) - 3
    matched = {dataset_id for ids in match.document_ids.values() for dataset_id in ids}
    assert {q.id for q in match.questions} == {
        q.id for q in dataset.questions if set(q.relevant) & matched
    }
    assert match.skipped == len(dataset.questions) - 3


def test_an_ambiguous_upload_path_matches_nothing() -> None:
    dataset = load_dataset(DATASET)
    held = {"a/hr/probation.md": "doc-a", "b/hr/probation.md": "doc-b"}
    assert match_documents(dataset, held).document_ids == {}


def test_beir_entries_match_the_files_they_were_uploaded_as() -> None:
    beir = Path(__file__).resolve().parents[2] / "fixtures" / "eval" / "beir-tiny"
    dataset = load_dataset(beir)
    held = {f"{document.id}.md": f"engine-{document.id}" for document in dataset.documents}
    match = match_documents(dataset, held)
    assert match.missing == ()
    assert match.document_ids == {
        f"engine-{document.id}": (document.id,) for document in dataset.documents
    }
