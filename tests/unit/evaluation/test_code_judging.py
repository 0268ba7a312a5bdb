"""Judging code questions by overlap, uploading as .txt, and the paired bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsage.evaluation.datasets import Question, as_plain_text, load_dataset
from ragsage.evaluation.errors import DatasetError
from ragsage.evaluation.judging import RankedChunk, judge
from ragsage.evaluation.runs import paired_bootstrap

DEFINITION = "\n".join(
    [
        "/// Retries the upload until the server accepts it or the attempts run out.",
        "pub fn upload_with_retry(client: &Client, body: &[u8], attempts: u32) -> Result<()> {",
        "    let mut delay = Duration::from_millis(100);",
        "    for attempt in 0..attempts {",
        "        match client.put(body) {",
        "            Ok(()) => return Ok(()),",
        "            Err(error) if error.is_transient() => sleep(delay),",
        "            Err(error) => return Err(error),",
        "        }",
        "        delay *= 2;",
        "    }",
        "    Err(Error::GaveUp(attempts))",
        "}",
    ]
)


def _question(match: str = "overlap") -> Question:
    return Question(
        id="q1",
        text="where do we retry failed uploads",
        relevant={"src/upload.rs": 1.0},
        answers=(DEFINITION,),
        match=match,  # type: ignore[arg-type]
    )


def _chunk(text: str, document: str = "src/upload.rs") -> RankedChunk:
    return RankedChunk("c", "e", (document,), text)


def test_a_chunk_holding_part_of_a_long_definition_answers_by_overlap() -> None:
    lines = DEFINITION.split("\n")
    first_half = "\n".join(lines[:7])
    second_half = "\n".join(lines[6:])
    for part in (first_half, second_half):
        judged = judge(_question(), [_chunk(part)])
        assert judged.covers[0] == frozenset({"0"})
    # The same part never holds the whole span, so containment says no.
    assert judge(_question("contains"), [_chunk(first_half)]).covers[0] == frozenset()


def test_a_chunk_that_only_mentions_the_definition_does_not_answer() -> None:
    unrelated = "\n".join(
        [
            "fn main() {",
            "    let client = Client::new(config.endpoint());",
            "    let report = build_report(&inputs);",
            '    upload_with_retry(&client, &report, 5).expect("upload");',
            '    println!("sent {} bytes", report.len());',
            "}",
        ]
    )
    assert judge(_question(), [_chunk(unrelated)]).covers[0] == frozenset()
    # The whole definition, but in another file: not the answer either.
    assert judge(_question(), [_chunk(DEFINITION, "src/other.rs")]).covers[0] == frozenset()


def test_a_big_chunk_holding_the_whole_definition_answers() -> None:
    padding = "\n".join(f"const LIMIT_{i}: usize = {i};" for i in range(40))
    judged = judge(_question(), [_chunk(f"{padding}\n{DEFINITION}\n{padding}")])
    assert judged.covers[0] == frozenset({"0"})


def _write_dataset(root: Path, record: dict[str, object]) -> Path:
    (root / "documents" / "src").mkdir(parents=True)
    (root / "documents" / "src" / "upload.rs").write_text(DEFINITION, encoding="utf-8")
    (root / "dataset.json").write_text(json.dumps({"name": "code", "format": "qa-spans"}))
    (root / "questions.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return root


def test_questions_carry_their_match_and_a_bad_one_names_the_line(tmp_path: Path) -> None:
    record = {
        "id": "q1",
        "question": "where do we retry failed uploads",
        "document": "src/upload.rs",
        "answers": [DEFINITION],
        "split": "dev",
        "kind": "rust",
        "match": "overlap",
    }
    dataset = load_dataset(_write_dataset(tmp_path / "good", record))
    assert dataset.questions[0].match == "overlap"
    bad = _write_dataset(tmp_path / "bad", {**record, "match": "fuzzy"})
    with pytest.raises(DatasetError, match="match must be one of contains, overlap"):
        load_dataset(bad)


def test_uploading_as_text_renames_every_file_but_keeps_its_id(tmp_path: Path) -> None:
    record = {"id": "q1", "question": "q", "document": "src/upload.rs", "answers": ["retry"]}
    dataset = as_plain_text(load_dataset(_write_dataset(tmp_path, record)))
    (document,) = dataset.documents
    assert (document.id, document.filename) == ("src/upload.rs", "src/upload.txt")
    assert document.media_type == "text/plain"


def test_the_bootstrap_interval_is_above_zero_only_for_a_consistent_gain() -> None:
    consistent = [(kind, 0.4, 0.6) for kind in ("go", "rust") for _ in range(30)]
    delta, low, high = paired_bootstrap(consistent, rounds=500)
    assert delta == pytest.approx(0.2) and low > 0 and high < 0.21
    # Half the questions gain what the other half lose: no evidence either way.
    mixed = [("go", 0.0, 1.0)] * 20 + [("go", 1.0, 0.0)] * 20
    delta, low, high = paired_bootstrap(mixed, rounds=500)
    assert delta == pytest.approx(0.0) and low < 0 < high


def test_each_kind_weighs_the_same_in_the_bootstrap() -> None:
    # A big family that loses a little cannot hide a small one that gains a lot.
    pairs = [("python", 0.5, 0.45)] * 90 + [("go", 0.2, 0.8)] * 10
    delta, _, _ = paired_bootstrap(pairs, rounds=200)
    assert delta == pytest.approx((-0.05 + 0.6) / 2)
