"""Evaluation datasets: the QA-span layout and the BEIR layout, read into one shape.

QA spans (``dataset.json`` with ``"format": "qa-spans"``)::

    documents/...      any file ragsage parses; its id is its path below documents/
    questions.jsonl    {"id", "question", "document", "answers": [...], "split", "kind",
                        "family"}

BEIR (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``): each corpus
entry becomes one Markdown document whose id is its ``_id``.

Every problem is reported as a :class:`DatasetError` naming the file and line,
because a typo in line 4,812 of a hand-edited file is otherwise a needle hunt.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ragsage.core.text import words
from ragsage.evaluation.errors import DatasetError

DatasetFormat = Literal["qa-spans", "beir"]
SpanMatch = Literal["contains", "overlap"]
SPAN_MATCHES: tuple[SpanMatch, ...] = ("contains", "overlap")
QA_SPLITS = ("dev", "test")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class EvalDocument:
    """One document to index: its dataset id, the name it is uploaded under, its bytes."""

    id: str
    filename: str
    content: bytes
    media_type: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """A query and what counts as finding it.

    ``relevant`` maps dataset document ids to their gain (graded BEIR qrels, or
    the one document of a QA question).  ``answers`` holds the QA spans; when it
    is empty, relevance is judged per document, the BEIR way.  ``match`` says
    how a chunk meets a span (see :mod:`ragsage.evaluation.judging`): it holds
    the span whole (``contains``), or it and the span mostly overlap
    (``overlap``: a definition's code, of which a chunk may hold a part).
    """

    id: str
    text: str
    relevant: Mapping[str, float]
    answers: tuple[str, ...] = ()
    kind: str | None = None
    split: str | None = None
    match: SpanMatch = "contains"
    family: str | None = None


@dataclass(frozen=True, slots=True)
class Dataset:
    """Documents to index and questions to ask, from one split of a dataset."""

    name: str
    format: DatasetFormat
    path: Path
    split: str | None
    documents: tuple[EvalDocument, ...]
    questions: tuple[Question, ...]
    description: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)


def as_plain_text(dataset: Dataset) -> Dataset:
    """The same dataset with every document uploaded as ``text/plain`` under a ``.txt`` name.

    The extension is replaced (``cmp/options.go`` goes up as ``cmp/options.txt``),
    so nothing but the text itself can tell the server what a file holds.
    Questions still name documents by id, so the judging is unchanged.
    """
    renamed = tuple(
        replace(
            document,
            filename=PurePosixPath(document.filename).with_suffix(".txt").as_posix(),
            media_type="text/plain",
        )
        for document in dataset.documents
    )
    return replace(dataset, documents=renamed)


def load_dataset(
    path: str | Path, split: str | None = None, families: Sequence[str] = ()
) -> Dataset:
    """Read the dataset at ``path``, recognising its layout by the files present.

    ``split`` chooses the questions: for QA spans ``None`` keeps every question;
    for BEIR ``None`` means ``test`` (or the only qrels file there is).
    ``families`` keeps only the QA questions of those families (all when empty).
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(root, "not a directory (expected a dataset folder)")
    if (root / "dataset.json").is_file():
        return _load_qa_spans(root, split, families)
    if (root / "corpus.jsonl").is_file():
        return _load_beir(root, split)
    raise DatasetError(
        root,
        "not a dataset: expected dataset.json (QA spans) or corpus.jsonl, queries.jsonl "
        "and qrels/ (BEIR)",
    )


# ---------------------------------------------------------------- QA spans


def _load_qa_spans(root: Path, split: str | None, families: Sequence[str]) -> Dataset:
    meta_path = root / "dataset.json"
    meta = _json_object(meta_path, meta_path.read_text(encoding="utf-8"), None)
    declared = meta.get("format", "qa-spans")
    if declared != "qa-spans":
        raise DatasetError(meta_path, f'"format" must be "qa-spans", got {declared!r}')
    documents = _qa_documents(root / "documents")
    known = {document.id for document in documents}
    questions_path = root / "questions.jsonl"
    if not questions_path.is_file():
        raise DatasetError(questions_path, "missing (one question per line is expected)")
    questions = list(_qa_questions(questions_path, known))
    if split is not None:
        present = sorted({q.split for q in questions if q.split})
        if split not in present:
            raise DatasetError(
                questions_path,
                f"unknown split {split!r}; the questions have: {', '.join(present) or 'none'}",
            )
        questions = [q for q in questions if q.split == split]
    if families:
        present = sorted({q.family for q in questions if q.family})
        if unknown := sorted(set(families) - set(present)):
            raise DatasetError(
                questions_path,
                f"unknown families {', '.join(unknown)}; the questions have: "
                f"{', '.join(present) or 'none'}",
            )
        questions = [q for q in questions if q.family in families]
    return Dataset(
        name=str(meta.get("name") or root.name),
        format="qa-spans",
        path=root,
        split=split,
        documents=documents,
        questions=tuple(questions),
        description=str(meta.get("description") or ""),
        info=meta,
    )


def _qa_documents(folder: Path) -> tuple[EvalDocument, ...]:
    if not folder.is_dir():
        raise DatasetError(folder, "missing (the documents of a QA-span dataset live here)")
    found = []
    for file in sorted(folder.rglob("*")):
        relative = file.relative_to(folder)
        if not file.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        name = PurePosixPath(*relative.parts).as_posix()
        media_type, _ = mimetypes.guess_type(file.name)
        found.append(EvalDocument(name, name, file.read_bytes(), media_type))
    if not found:
        raise DatasetError(folder, "holds no documents")
    return tuple(found)


def _qa_questions(path: Path, documents: set[str]) -> Iterator[Question]:
    seen: set[str] = set()
    for number, line in _lines(path):
        record = _json_object(path, line, number)
        ident = _string(record, "id", path, number)
        if ident in seen:
            raise DatasetError(path, f"duplicate question id {ident!r}", line=number)
        seen.add(ident)
        text = _string(record, "question", path, number)
        document = _string(record, "document", path, number)
        if document not in documents:
            raise DatasetError(
                path,
                f"question {ident!r} names document {document!r}, which is not under documents/",
                line=number,
            )
        answers = record.get("answers")
        if not isinstance(answers, list) or not answers:
            raise DatasetError(
                path, f'question {ident!r}: "answers" must be a non-empty list', line=number
            )
        for answer in answers:
            if not isinstance(answer, str) or not words(answer):
                raise DatasetError(
                    path,
                    f"question {ident!r} has an empty answer span {answer!r} (no words in it)",
                    line=number,
                )
        split = record.get("split")
        if split is not None and split not in QA_SPLITS:
            raise DatasetError(
                path,
                f"question {ident!r}: split must be one of {', '.join(QA_SPLITS)}, got {split!r}",
                line=number,
            )
        kind = record.get("kind")
        family = record.get("family")
        match = record.get("match", "contains")
        if match not in SPAN_MATCHES:
            raise DatasetError(
                path,
                f"question {ident!r}: match must be one of {', '.join(SPAN_MATCHES)}, "
                f"got {match!r}",
                line=number,
            )
        yield Question(
            id=ident,
            text=text,
            relevant={document: 1.0},
            answers=tuple(answers),
            kind=str(kind) if kind else None,
            split=split,
            match=match,
            family=str(family) if family else None,
        )


# ---------------------------------------------------------------- BEIR


def _load_beir(root: Path, split: str | None) -> Dataset:
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    if not queries_path.is_file():
        raise DatasetError(queries_path, "missing (a BEIR dataset needs queries.jsonl)")
    qrels_path = _qrels_file(root, split)
    documents = tuple(_beir_corpus(corpus_path))
    known = {document.id for document in documents}
    queries = dict(_beir_queries(queries_path))
    qrels = _beir_qrels(qrels_path, known, queries)
    questions = tuple(
        Question(
            id=ident,
            text=text,
            relevant=qrels[ident],
            kind=kind,
            split=qrels_path.stem,
        )
        for ident, (text, kind) in queries.items()
        if any(grade > 0 for grade in qrels.get(ident, {}).values())
    )
    return Dataset(
        name=root.name,
        format="beir",
        path=root,
        split=qrels_path.stem,
        documents=documents,
        questions=questions,
    )


def _qrels_file(root: Path, split: str | None) -> Path:
    folder = root / "qrels"
    available = sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []
    if not available:
        raise DatasetError(folder, "no qrels/<split>.tsv file")
    if split is None:
        split = "test" if "test" in available or len(available) > 1 else available[0]
    if split not in available:
        raise DatasetError(
            folder, f"unknown split {split!r}; qrels files exist for: {', '.join(available)}"
        )
    return folder / f"{split}.tsv"


def _beir_corpus(path: Path) -> Iterator[EvalDocument]:
    seen: set[str] = set()
    for number, line in _lines(path):
        record = _json_object(path, line, number)
        ident = _string(record, "_id", path, number)
        if ident in seen:
            raise DatasetError(path, f"duplicate corpus id {ident!r}", line=number)
        seen.add(ident)
        text = record.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(path, f"corpus entry {ident!r} has no text", line=number)
        title = record.get("title") or ""
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        filename = f"{_UNSAFE_NAME.sub('_', ident)[:200] or 'doc'}.md"
        yield EvalDocument(ident, filename, body.encode("utf-8"), "text/markdown")


def _beir_queries(path: Path) -> Iterator[tuple[str, tuple[str, str | None]]]:
    for number, line in _lines(path):
        record = _json_object(path, line, number)
        ident = _string(record, "_id", path, number)
        text = _string(record, "text", path, number)
        metadata = record.get("metadata")
        kind = metadata.get("kind") if isinstance(metadata, dict) else None
        yield ident, (text, str(kind) if kind else None)


def _beir_qrels(
    path: Path, documents: set[str], queries: Mapping[str, object]
) -> dict[str, dict[str, float]]:
    qrels: dict[str, dict[str, float]] = {}
    for number, line in _lines(path):
        cells = line.split("\t")
        if number == 1 and cells[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue  # the header row
        if len(cells) < 3:
            raise DatasetError(
                path, "expected three tab-separated cells: query-id, corpus-id, score", line=number
            )
        query, document, raw = (cell.strip() for cell in cells[:3])
        try:
            score = float(raw)
        except ValueError:
            raise DatasetError(path, f"score {raw!r} is not a number", line=number) from None
        if query not in queries:
            raise DatasetError(path, f"query {query!r} is not in queries.jsonl", line=number)
        if document not in documents:
            raise DatasetError(path, f"document {document!r} is not in corpus.jsonl", line=number)
        qrels.setdefault(query, {})[document] = score
    return qrels


# ---------------------------------------------------------------- shared readers


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if not path.is_file():
        raise DatasetError(path, "missing")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not UTF-8 text ({exc.reason})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def _json_object(path: Path, text: str, line: int | None) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            path, f"invalid JSON ({exc.msg} at column {exc.colno})", line=line
        ) from None
    if not isinstance(value, dict):
        raise DatasetError(path, "expected a JSON object", line=line)
    return value


def _string(record: Mapping[str, Any], key: str, path: Path, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(path, f'"{key}" must be a non-empty string', line=line)
    return value
