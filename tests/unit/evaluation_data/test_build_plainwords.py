"""The plain-words dataset builder: answer checks, overlap measures and the committed questions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evaluation_data import build_eval_plainwords as builder
from ragsage.core.pages import Page, ParsedDocument
from ragsage.core.text import words
from ragsage.evaluation.writing import QAQuestion, question_line, split_of

# Two small "parsed" manuals, written here, with the Markdown and line breaks a
# reader leaves behind.
BACKUPS = ParsedDocument(
    pages=(
        Page(1, "# Backups\n\nThe nightly job copies every table to the *archive* disk.\n"),
        Page(
            2,
            "## Restoring\n\nA restore replaces the live files;\nstop the server first. "
            "Old copies are kept for 30 days.\n",
        ),
    )
)
MIRRORS = ParsedDocument(
    pages=(Page(1, "Mirrors refresh hourly. Old copies are kept for 30 days."),)
)
TEXTS = {
    "docs/backups.md": builder.parsed_text(BACKUPS),
    "docs/mirrors.md": builder.parsed_text(MIRRORS),
}


def item(answer: str, document: str = "docs/backups.md", ident: str = "b-01") -> Any:
    return builder.Item(ident, "how do I get my data back?", document, answer)


def test_an_answer_is_found_across_markup_and_line_breaks() -> None:
    answers = [
        "The nightly job copies every table to the archive disk.",
        "A restore replaces the live files; stop the server first.",
    ]
    assert builder.verify([item(a) for a in answers], TEXTS) == []


def test_an_answer_not_in_its_document_is_named() -> None:
    problems = builder.verify([item("The nightly job copies every index.", ident="b-07")], TEXTS)
    assert problems == ["b-07: answer not in the parsed text of docs/backups.md"]


def test_an_answer_found_in_another_document_or_a_missing_document_is_refused() -> None:
    shared = builder.verify([item("Old copies are kept for 30 days.")], TEXTS)
    assert shared == ["b-01: answer also occurs in docs/mirrors.md"]
    missing = builder.verify([item("anything", document="docs/none.md")], TEXTS)
    assert missing == ["b-01: no document docs/none.md"]


def test_an_answer_twice_in_its_document_is_refused() -> None:
    texts = {"docs/a.md": "Stop the server. Then stop the server."}
    problems = builder.verify([item("stop the server", document="docs/a.md")], texts)
    assert problems == ["b-01: answer occurs 2 times in docs/a.md"]


def test_the_held_out_passage_is_never_an_answer() -> None:
    text = "This version doesn’t handle the REAL type. The SIZE constraints are allowed."
    problems = builder.verify(
        [item("This version doesn't handle the REAL type.", document="m.pdf")], {"m.pdf": text}
    )
    assert problems == ["b-01: answer touches a held-out passage"]


def test_span_count_matches_whole_words_only() -> None:
    tokens = builder.joined(words("The archive disk holds archived copies."))
    assert builder.span_count("archive disk", tokens) == 1
    assert builder.span_count("archive", tokens) == 1  # not also inside "archived"
    assert builder.span_count("", tokens) == 0


def test_word_overlap_counts_the_question_content_words_found_in_the_answer() -> None:
    answer = "The nightly job copies every table to the archive disk."
    overlap = builder.word_overlap("Which disk gets the nightly copies?", answer)
    assert overlap == pytest.approx(3 / 4)
    assert builder.word_overlap("How do I get my data back?", answer) == 0.0
    assert builder.word_overlap("what is it?", answer) is None


def test_rare_words_and_giveaways_follow_document_frequency() -> None:
    frequency = {"archive": 1, "disk": 40, "nightly": 2, "table": 60}
    answer = "The nightly job copies every table to the archive disk."
    rare = {"archive", "nightly", "job", "copies", "every"}
    assert builder.rare_words(answer, frequency, chunks=100) == rare
    assert builder.rare_share(answer, frequency, chunks=100) == pytest.approx(5 / 7)
    asked = builder.Item("b-02", "Which archive disk gets the table?", "docs/backups.md", answer)
    assert builder.giveaways(asked, frequency, chunks=100) == {"archive"}


def test_read_questions_refuses_missing_fields_and_repeated_ids(tmp_path: Path) -> None:
    good = {"id": "x-01", "question": "q?", "document": "d.pdf", "answer": "a."}
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="id used twice: x-01"):
        builder.read_questions(path)
    path.write_text(json.dumps({**good, "answer": ""}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="line 1: needs exactly"):
        builder.read_questions(path)


def test_split_is_fixed_by_the_id() -> None:
    assert [split_of(i) for i in ("tasn1-01", "py-logging-01", "sqlite-wal-03")] == [
        "dev",
        "test",
        "dev",
    ]
    line = json.loads(question_line(QAQuestion("py-logging-01", "q", "d", "a", "python")))
    assert line["split"] == "test"


def test_the_committed_questions_fit_the_pinned_sources() -> None:
    items = builder.read_questions(builder.DEFAULT_QUESTIONS)
    documents = {f"{s.package}/{name}" for s in builder.SOURCES for name in s.files}
    assert {i.document for i in items} <= documents
    splits = Counter(split_of(i.id) for i in items)
    assert splits["dev"] >= 50 and splits["test"] >= 50
    assert all(len(words(i.answer)) <= 60 for i in items)
    # The pinned libtasn1 case stays out of the data retrieval is tuned on.
    assert not any("real" in words(i.question) and "type" in words(i.question) for i in items)
    assert not any("REAL type" in i.answer for i in items)
