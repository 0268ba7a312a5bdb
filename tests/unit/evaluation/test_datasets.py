"""Loading both dataset layouts, and the error a user gets for each kind of bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragsage.evaluation import DatasetError, load_dataset

FIXTURES = Path(__file__).parents[2] / "fixtures" / "eval"


def test_qa_spans_dataset_loads_documents_and_questions() -> None:
    dataset = load_dataset(FIXTURES / "qa-tiny")
    assert dataset.format == "qa-spans" and dataset.name == "qa-tiny"
    assert "handbook/security.html" in {d.id for d in dataset.documents}
    assert len(dataset.questions) == 10
    dev = load_dataset(FIXTURES / "qa-tiny", split="dev")
    assert {q.split for q in dev.questions} == {"dev"} and len(dev.questions) == 6
    q09 = next(q for q in dataset.questions if q.id == "q09")
    assert q09.relevant == {"support/refunds.html": 1.0} and len(q09.answers) == 2


def test_beir_dataset_loads_graded_qrels_of_the_split() -> None:
    dataset = load_dataset(FIXTURES / "beir-tiny")
    assert dataset.format == "beir" and dataset.split == "test"
    b01 = next(q for q in dataset.questions if q.id == "b01")
    assert b01.relevant == {"d1": 2.0, "d2": 1.0} and b01.kind == "fact"
    # A query without a relevant document in the split is not a question.
    assert "b11" not in {q.id for q in dataset.questions}
    d1 = next(d for d in dataset.documents if d.id == "d1")
    assert d1.content.startswith(b"# Harbour cranes") and d1.filename == "d1.md"
    assert len(load_dataset(FIXTURES / "beir-tiny", split="dev").questions) == 2


@pytest.fixture
def qa_copy(tmp_path: Path) -> Path:
    target = tmp_path / "qa"
    shutil.copytree(FIXTURES / "qa-tiny", target)
    return target


def _append(path: Path, line: str) -> int:
    """Append a line to a JSONL file; its 1-based line number."""
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, line]) + "\n")
    return len(lines) + 1


def _question(**fields: object) -> str:
    base = {
        "id": "new",
        "question": "What?",
        "document": "handbook/travel.md",
        "answers": ["up to 180 euros"],
        "split": "dev",
    }
    return json.dumps({**base, **fields})


def test_bad_json_names_the_file_and_line(qa_copy: Path) -> None:
    questions = qa_copy / "questions.jsonl"
    line = _append(questions, '{"id": "broken", "question": ')
    with pytest.raises(DatasetError, match=rf"questions\.jsonl:{line}: invalid JSON"):
        load_dataset(qa_copy)


def test_a_question_whose_document_is_missing(qa_copy: Path) -> None:
    questions = qa_copy / "questions.jsonl"
    line = _append(questions, _question(document="handbook/nowhere.md"))
    with pytest.raises(DatasetError) as caught:
        load_dataset(qa_copy)
    assert f"questions.jsonl:{line}:" in str(caught.value)
    assert "'handbook/nowhere.md', which is not under documents/" in str(caught.value)


def test_an_empty_answer_span(qa_copy: Path) -> None:
    line = _append(qa_copy / "questions.jsonl", _question(answers=["up to", " -- "]))
    with pytest.raises(DatasetError, match=rf":{line}: question 'new' has an empty answer span"):
        load_dataset(qa_copy)


def test_an_unknown_split(qa_copy: Path) -> None:
    with pytest.raises(DatasetError, match=r"unknown split 'train'; the questions have: dev, test"):
        load_dataset(qa_copy, split="train")
    with pytest.raises(
        DatasetError, match=r"unknown split 'train'; qrels files exist for: dev, test"
    ):
        load_dataset(FIXTURES / "beir-tiny", split="train")


def test_duplicate_question_ids_and_missing_fields(qa_copy: Path) -> None:
    questions = qa_copy / "questions.jsonl"
    original = questions.read_text()
    line = _append(questions, _question(id="q01"))
    with pytest.raises(DatasetError, match=rf":{line}: duplicate question id 'q01'"):
        load_dataset(qa_copy)
    questions.write_text(original)
    line = _append(questions, json.dumps({"id": "x", "document": "handbook/travel.md"}))
    with pytest.raises(DatasetError, match=rf':{line}: "question" must be a non-empty string'):
        load_dataset(qa_copy)


def test_beir_qrels_naming_an_unknown_document(tmp_path: Path) -> None:
    target = tmp_path / "beir"
    shutil.copytree(FIXTURES / "beir-tiny", target)
    qrels = target / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "b01\td404\t1\n")
    line = len(qrels.read_text().splitlines())
    with pytest.raises(DatasetError, match=rf"test\.tsv:{line}: document 'd404' is not in corpus"):
        load_dataset(target)


def test_a_folder_that_is_no_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not a dataset"):
        load_dataset(tmp_path)
    with pytest.raises(DatasetError, match="not a directory"):
        load_dataset(tmp_path / "missing")
