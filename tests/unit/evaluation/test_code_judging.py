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


def test_an_answer_counts_within_a_budget_when_half_its_lines_are_handed_over() -> None:
    from ragsage.evaluation.judging import found_within

    lines = DEFINITION.split("\n")
    filler = "\n".join(f"let unrelated_{i} = compute(step, {i}) + offset;" for i in range(60))
    words_before = len(filler.split())  # 300 tokens of other code from the same file
    # The definition's first half (7 of 13 lines) after the filler, in one ranking.
    ranked = [_chunk(filler), _chunk("\n".join(lines[:7]))]
    first_half_words = len("\n".join(lines[:7]).split())
    found = found_within(_question(), ranked, (words_before, words_before + first_half_words))
    assert found == {words_before: 0.0, words_before + first_half_words: 1.0}
    # Six lines are fewer than half: not found, whatever the budget.
    assert found_within(_question(), [_chunk("\n".join(lines[:6]))], (10_000,)) == {10_000: 0.0}
    # Lines handed over from another file do not count, and a line is counted once:
    # ten copies of "}" do not stand for the definition's closing braces and more.
    elsewhere = found_within(_question(), [_chunk(DEFINITION, "src/other.rs")], (10_000,))
    braces = found_within(_question(), [_chunk("}\n" * 10 + "    }\n" * 10)], (10_000,))
    assert elsewhere == braces == {10_000: 0.0}
    # A big chunk holding the whole definition spends its tokens before the answer.
    big = _chunk(filler + "\n" + DEFINITION)
    assert found_within(_question(), [big], (words_before,)) == {words_before: 0.0}
    assert found_within(_question(), [big], (words_before + 200,)) == {words_before + 200: 1.0}


def test_a_results_heading_words_are_spent_before_its_text() -> None:
    from dataclasses import replace

    from ragsage.evaluation.judging import found_within

    lines = DEFINITION.split("\n")
    half = "\n".join(lines[:7])
    words = len(half.split())
    plain = _chunk(half)
    # The same lines under a signature of 12 words: moving words into a heading
    # does not make them free.
    headed = replace(plain, heading_words=12)
    assert found_within(_question(), [plain], (words,)) == {words: 1.0}
    assert found_within(_question(), [headed], (words,)) == {words: 0.0}
    assert found_within(_question(), [headed], (words + 12,)) == {words + 12: 1.0}


def test_questions_keep_their_family_and_a_run_can_take_some_families(tmp_path: Path) -> None:
    record = {
        "id": "q1",
        "question": "where do we retry failed uploads",
        "document": "src/upload.rs",
        "answers": [DEFINITION],
        "family": "behaviour",
    }
    root = _write_dataset(tmp_path, record)
    with (root / "questions.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({**record, "id": "q2", "family": "doc-comment"}) + "\n")
    assert [q.family for q in load_dataset(root).questions] == ["behaviour", "doc-comment"]
    (only,) = load_dataset(root, families=["behaviour"]).questions
    assert only.id == "q1"
    with pytest.raises(DatasetError, match="unknown families generated; the questions have"):
        load_dataset(root, families=["generated"])


def test_resampling_files_widens_the_interval_when_one_file_carries_the_gain() -> None:
    # Two files gain a lot on many questions each, ten others not at all.
    pairs = [("go", 0.0, 1.0)] * 20 + [("go", 0.5, 0.5)] * 10
    files = ["a.go"] * 10 + ["b.go"] * 10 + [f"f{i}.go" for i in range(10)]
    _, low_questions, high_questions = paired_bootstrap(pairs, rounds=1000)
    delta, low_files, high_files = paired_bootstrap(pairs, rounds=1000, clusters=files)
    assert delta == pytest.approx(20 / 30)
    assert high_files - low_files > 1.5 * (high_questions - low_questions)
