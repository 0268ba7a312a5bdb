"""Writing a QA-span dataset: what the builders of the ``evaluation_data`` package share."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsage.core.text import content_words, words


@dataclass(frozen=True, slots=True)
class QAQuestion:
    """One line of questions.jsonl before its split is assigned."""

    id: str
    question: str
    document: str
    answer: str
    kind: str


def split_of(question_id: str) -> str:
    """``dev`` or ``test``, fixed by a hash of the id so the split never drifts."""
    bucket = int(hashlib.sha1(question_id.encode()).hexdigest()[:8], 16)
    return "dev" if bucket % 2 == 0 else "test"


def write_qa_dataset(
    out: Path,
    root: Path,
    documents: Sequence[str],
    questions: Sequence[QAQuestion],
    *,
    name: str,
    description: str,
    source: str,
) -> int:
    """Replace ``out`` with a QA-span dataset copied from ``root``; the bytes written."""
    meta = {"name": name, "format": "qa-spans", "description": description, "source": source}
    files = ((document, (root / document).read_bytes()) for document in documents)
    return write_dataset_folder(out, files, meta, [question_line(q) for q in questions])


def write_dataset_folder(
    out: Path,
    documents: Iterable[tuple[str, bytes]],
    meta: Mapping[str, Any],
    question_lines: Sequence[str],
) -> int:
    """Replace ``out`` with ``documents/`` (path, bytes), ``dataset.json`` and
    ``questions.jsonl``; the bytes written."""
    clear_dataset_folder(out)
    for path, content in documents:
        target = out / "documents" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    (out / "dataset.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    write_questions(out, question_lines)
    return folder_size(out)


def word_overlap(question: str, text: str) -> float | None:
    """Share of the question's content words (stop words aside) that occur in ``text``."""
    asked = set(content_words(question))
    if not asked:
        return None
    present = set(words(text))
    return sum(1 for word in asked if word in present) / len(asked)


def clear_dataset_folder(out: Path) -> None:
    """Empty ``out`` for a new build, refusing a folder that holds files but no
    ``dataset.json``: that is not a dataset a builder wrote, and is not deleted."""
    if out.exists() and any(out.iterdir()) and not (out / "dataset.json").is_file():
        raise SystemExit(f"error: {out} is not empty and holds no dataset.json; not replacing it")
    shutil.rmtree(out, ignore_errors=True)


def question_line(question: QAQuestion, **extra: str) -> str:
    """One line of questions.jsonl, its split fixed by the id; ``extra`` adds fields."""
    record = {
        "id": question.id,
        "question": question.question,
        "document": question.document,
        "answers": [question.answer],
        "split": split_of(question.id),
        "kind": question.kind,
        **extra,
    }
    return json.dumps(record, ensure_ascii=False)


def write_questions(out: Path, lines: Sequence[str]) -> None:
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def folder_size(out: Path) -> int:
    """The bytes of every file below ``out``."""
    return sum(path.stat().st_size for path in out.rglob("*") if path.is_file())


def split_table(questions: Sequence[QAQuestion], kinds: Sequence[str]) -> list[str]:
    """One line per question family: how many questions each split holds."""
    table = Counter((q.kind, split_of(q.id)) for q in questions)
    return [
        f"  {kind:<11} dev {table[(kind, 'dev')]:>4}  test {table[(kind, 'test')]:>4}"
        for kind in kinds
    ]


def positive_int(text: str) -> int:
    """An ``argparse`` type for the builders' size caps."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value
