"""The multi-language code dataset builder, on small snippets written here."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evaluation_data import build_eval_code as builder
from evaluation_data import code_doc_text as doc_text
from evaluation_data import code_questions, pinned_packages
from evaluation_data import code_questions_developer as developer
from evaluation_data import code_sources as sources
from ragsage.evaluation.writing import split_of

RUST = b"""use std::fmt;

/// Parses a duration such as `5s` or `200ms` into milliseconds.
///
/// Returns `None` when [`parse_duration`] sees an unknown unit.
#[inline]
pub fn parse_duration(text: &str) -> Option<u64> {
    let (number, unit) = text.split_at(text.len() - 1);
    let value: u64 = number.parse().ok()?;
    Some(if unit == "s" { value * 1000 } else { value })
}

/// Opens the spool folder on Unix systems, creating it when missing.
#[cfg(unix)]
fn open_spool() -> u32 {
    let mode = 0o700;
    mode + 1
}

/// Opens the spool folder on Windows systems, creating it when missing.
#[cfg(windows)]
fn open_spool() -> u32 {
    let mode = 0;
    mode + 2
}

// A plain comment is not documentation.
fn undocumented_helper() -> u32 {
    let a = 1;
    a + 1
}
"""

GO = b"""package retry

// Backoff computes how long to wait before the next attempt, doubling each time.
func Backoff(attempt int) int {
	delay := 100
	for i := 0; i < attempt; i++ {
		delay *= 2
	}
	return delay
}

// Policy holds the limits that decide when retrying stops.
type Policy struct {
	MaxAttempts int
	MaxDelay    int
}
"""

PYTHON = b'''def load_settings(path, *, strict=False):
    """Read the settings file and merge it over the built-in defaults.

    Unknown keys raise only when ``strict`` is true.
    """
    data = {}
    with open(path) as handle:
        data.update(line.split("=", 1) for line in handle)
    return data


def short(x):
    """Too short."""
    return x
'''

JAVA = b"""package org.example;

public class Cache {
    /**
     * Evicts the entries that were least recently used until the size fits.
     *
     * @param limit the largest number of entries to keep
     * @return how many entries were dropped
     */
    public int trim(int limit) {
        int dropped = 0;
        while (size() > limit) {
            dropped++;
        }
        return dropped;
    }

    /** Removes every entry of the {@link Cache} and resets its counters. */
    public void clear() {
        entries = null;
        hits = 0;
    }
}
"""

TYPESCRIPT = b"""/**
 * Splits a list into pages of a fixed size, keeping the order of the items.
 *
 * @param items the list to split
 */
export function paginate<T>(items: T[], size: number): T[][] {
  const pages: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    pages.push(items.slice(i, i + size));
  }
  return pages;
}
"""


def _questions(language: str, source: bytes, document: str = "doc") -> dict[str, Any]:
    made = code_questions.doc_comment_questions(document, language, source)
    return {q.id.split(":")[2]: q for q in made}


def test_rust_doc_comment_becomes_the_question_without_the_name_and_markup() -> None:
    found = _questions("rust", RUST)
    question = found["parse_duration"]
    assert question.question == "Parses a duration such as 5s or 200ms into milliseconds."
    assert question.kind == "rust" and question.family == "doc-comment"


def test_rust_span_covers_doc_comment_attributes_and_body() -> None:
    question = _questions("rust", RUST)["parse_duration"]
    assert question.answer.startswith("/// Parses a duration")
    assert "#[inline]" in question.answer
    assert question.answer.endswith('Some(if unit == "s" { value * 1000 } else { value })\n}')
    assert question.answer in RUST.decode()
    # The code-only text used by the report leaves the comment out, not the attribute.
    assert "///" not in question.code and "#[inline]" in question.code


def test_duplicate_headers_and_undocumented_code_give_no_question() -> None:
    found = _questions("rust", RUST)
    # Two cfg variants share the header `fn open_spool() -> u32 {`: ambiguous, both dropped.
    assert "open_spool" not in found
    assert "undocumented_helper" not in found


def test_go_comment_drops_the_leading_name() -> None:
    found = _questions("go", GO)
    assert found["Backoff"].question == (
        "Computes how long to wait before the next attempt, doubling each time."
    )
    assert found["Backoff"].answer.startswith("// Backoff computes")
    assert found["Backoff"].answer.endswith("return delay\n}")
    # A one-type declaration carries its comment: the span starts at it and ends at "}".
    policy = found["Policy"]
    assert policy.question == "Holds the limits that decide when retrying stops."
    assert policy.answer.startswith("// Policy holds") and "type Policy struct" in policy.answer


def test_python_docstring_first_sentence_and_whole_function() -> None:
    found = _questions("python", PYTHON)
    question = found["load_settings"]
    assert question.question == "Read the settings file and merge it over the built-in defaults."
    assert question.answer.startswith("def load_settings(path, *, strict=False):")
    assert question.answer.endswith("return data")
    assert '"""' not in question.code
    assert "short" not in found  # under three lines of code


def test_java_javadoc_tags_links_and_names() -> None:
    found = _questions("java", JAVA)
    trim = found["Cache.trim"]
    assert trim.question == (
        "Evicts the entries that were least recently used until the size fits."
    )
    assert trim.answer.startswith("/**") and trim.answer.endswith("return dropped;\n    }")
    assert "@param" in trim.answer  # the span keeps the whole comment; the question does not
    # {@link Cache} is the enclosing class, not this method's name: it stays, as text.
    assert found["Cache.clear"].question == (
        "Removes every entry of the Cache and resets its counters."
    )


def test_typescript_export_is_part_of_the_span() -> None:
    question = _questions("typescript", TYPESCRIPT)["paginate"]
    assert question.question == (
        "Splits a list into pages of a fixed size, keeping the order of the items."
    )
    assert question.answer.startswith("/**\n * Splits")
    assert "export function paginate<T>" in question.answer
    assert question.answer.rstrip().endswith("return pages;\n}")


def test_names_are_hidden_in_code_form_and_prose_use_is_refused() -> None:
    hide = doc_text.hide_names
    assert hide("Like `Buffer::drain_into`, but keeps the head.", ["drain_into"]) == (
        "Like it, but keeps the head."
    )
    assert hide("Calls parseConfig() twice before giving up.", ["parseConfig"]) == (
        "Calls it twice before giving up."
    )
    # A name that is also an English word cannot be hidden in prose: no question.
    assert hide("Returns a new map with the keys sorted.", ["map"]) is None
    # "the Version class" becomes "this class", which hides even a plain-word name.
    assert hide("Returns the Version struct of a release.", ["Version"]) == (
        "Returns this struct of a release."
    )
    # Go: the sentence opens with the name, which is dropped.
    assert hide("Reader wraps a stream and counts bytes.", ["Reader"], drop_leading=True) == (
        "Wraps a stream and counts bytes."
    )


def test_summary_skips_pointers_usage_lines_and_short_sentences() -> None:
    summary = doc_text.summary
    assert summary("See the module documentation for details.", ["f"]) is None
    assert summary("Deprecated: use the other one instead please.", ["f"]) is None
    assert summary("It's an alias to dwarn() function.", ["dwarning"]) is None
    assert summary("Returns the size.", ["size_of"]) is None
    usage = "ConsumePrefix()\n\nStrips the expected prefix from the start of the string."
    assert summary(usage, ["ConsumePrefix"]) == (
        "Strips the expected prefix from the start of the string."
    )
    shell = "find_binary <bin>\nfind a binary in the usual places on the system."
    assert summary(shell, ["find_binary"]) == "Find a binary in the usual places on the system."


def test_questions_asked_of_two_definitions_are_dropped() -> None:
    make = code_questions.CodeQuestion
    same = [make(f"doc-comment:a.rs:f{i}:1", "Returns the length.", "a.rs", "x", "rust", "dc")
            for i in range(2)]  # fmt: skip
    other = make("doc-comment:a.rs:g:9", "Clears every cached entry.", "a.rs", "y", "rust", "dc")
    assert code_questions.deduplicate([*same, other]) == [other]


def test_choose_caps_per_file_and_language_and_is_seeded() -> None:
    make = code_questions.CodeQuestion
    pool = [
        make(f"doc-comment:{doc}:f{i}:1", f"q {doc} {i}", doc, "x", "go", "doc-comment")
        for doc in ("a.go", "b.go")
        for i in range(10)
    ]
    chosen = code_questions.choose(pool, limit=6, per_document=4, seed=3)
    assert len(chosen) == 6
    assert max(sum(q.document == doc for q in chosen) for doc in ("a.go", "b.go")) <= 4
    assert chosen == code_questions.choose(list(reversed(pool)), limit=6, per_document=4, seed=3)


def test_split_is_fixed_by_the_id() -> None:
    ident = "doc-comment:rust/x/src/lib.rs:parse:10"
    assert split_of(ident) == split_of(ident) in {"dev", "test"}
    assert {split_of(f"handwritten:q-{i}") for i in range(20)} == {"dev", "test"}


def test_handwritten_question_resolves_to_its_span_and_fails_loudly(tmp_path: Path) -> None:
    source = sources.Source("go", "deb", "pkg", "1", "0" * 64, "MIT", "root")
    document = code_questions.Document(source, "retry.go", GO)
    item = code_questions.Handwritten(
        "go-1", "how long do we wait between attempts?", "go", document.path, "Backoff", 4
    )
    made = code_questions.handwritten_questions([item], {document.path: document})
    assert made[0].answer.startswith("// Backoff computes") and made[0].family == "handwritten"
    wrong_line = dataclasses.replace(item, line=14)
    with pytest.raises(SystemExit, match="0 definitions named 'Backoff'"):
        code_questions.handwritten_questions([wrong_line], {document.path: document})
    naming = dataclasses.replace(item, question="when does Backoff double the delay?")
    with pytest.raises(SystemExit, match="names 'Backoff'"):
        code_questions.handwritten_questions([naming], {document.path: document})


def test_dataset_layout_has_family_match_and_hashes(tmp_path: Path) -> None:
    source = sources.Source("go", "deb", "pkg", "1", "0" * 64, "MIT", "root")
    document = code_questions.Document(source, "retry.go", GO)
    questions = code_questions.doc_comment_questions(document.path, "go", GO)
    meta = {"name": "code", "format": "qa-spans", "documents": {document.path: "h"}}
    out = tmp_path / "code"
    builder.write_dataset(out, [document], questions, meta)
    assert (out / "documents" / "go" / "pkg" / "retry.go").read_bytes() == GO
    lines = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert {line["match"] for line in lines} == {"overlap"}
    assert {line["family"] for line in lines} == {"doc-comment"}
    assert all(line["split"] == split_of(line["id"]) for line in lines)
    assert all(len(line["answers"]) == 1 for line in lines)
    # A folder that is not a dataset is never deleted.
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit, match="not replacing it"):
        builder.write_dataset(stranger, [document], questions, meta)


def test_tests_examples_and_vendored_files_are_excluded() -> None:
    excluded = sources.excluded
    assert excluded("src/tests.rs", "rust")
    assert excluded("cmp/internal/testprotos/foo.go", "go")
    assert excluded("pkg/util_test.go", "go")
    assert excluded("lib/widget.min.js", "javascript")
    assert excluded("src/types.d.ts", "typescript")
    assert excluded("java/util/package-info.java", "java")
    assert not excluded("src/parse.rs", "rust")
    assert not excluded("lib/router/layer.js", "javascript")


def test_sample_takes_files_in_turn_from_each_package() -> None:
    one = sources.Source("go", "deb", "one", "1", "0" * 64, "MIT", "root")
    two = sources.Source("go", "deb", "two", "1", "0" * 64, "MIT", "root")
    candidates = [(one, [f"a{i}.go" for i in range(10)]), (two, ["b0.go", "b1.go"])]
    taken = sources.sample_files(candidates, 6, seed=5)
    assert sum(source is two for source, _ in taken) == 2
    assert taken == sources.sample_files(candidates, 6, seed=5)


def test_a_pinned_version_that_is_gone_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        message = "E: Version '9.9-1' for 'librust-demo-dev' was not found\n"
        return subprocess.CompletedProcess(command, 100, "", message)

    monkeypatch.setattr(pinned_packages, "run_tool", refuse)
    source = sources.Source("rust", "deb", "librust-demo-dev", "9.9-1", "0" * 64, "MIT", "x")
    with pytest.raises(SystemExit, match="pinned version is not downloadable"):
        pinned_packages.fetch(source.pin, tmp_path)


def test_an_archive_with_other_bytes_than_pinned_is_refused(tmp_path: Path) -> None:
    source = sources.Source("javascript", "npm", "demo", "1.0.0", "0" * 64, "MIT", "package")
    (tmp_path / "archives").mkdir()
    (tmp_path / "archives" / "demo-1.0.0.tgz").write_bytes(b"not the pinned bytes")
    with pytest.raises(SystemExit, match="SOURCES pins"):
        pinned_packages.fetch(source.pin, tmp_path)


def test_the_committed_handwritten_questions_are_well_formed() -> None:
    items = code_questions.read_handwritten(builder.DEFAULT_HANDWRITTEN)
    assert len(items) >= 50
    assert {item.language for item in items} >= {
        "rust", "go", "python", "java", "javascript", "typescript", "c", "cpp",
    }  # fmt: skip
    for item in items:
        assert not doc_text.name_path(item.definition).search(item.question), item.id


def test_developer_questions_name_the_definition_and_ask_what_its_kind_allows(
    tmp_path: Path,
) -> None:
    root = tmp_path / "documents"
    (root / "go" / "pkg").mkdir(parents=True)
    (root / "go" / "pkg" / "retry.go").write_bytes(GO)
    (root / "python" / "pkg").mkdir(parents=True)
    (root / "python" / "pkg" / "settings.py").write_bytes(PYTHON)
    offered = list(developer.offered(root, seed=3))
    by_name: dict[str, set[str]] = {}
    for question in offered:
        assert question.definition.split(".")[-1] in question.question
        by_name.setdefault(question.definition, set()).add(question.intent)
    # A function that returns is asked what it returns; a type how to make one.
    assert by_name["Backoff"] == {"purpose", "how", "use", "returns"}
    assert by_name["Policy"] == {"type-purpose", "type-create", "type-holds"}
    # Its doc comment says "raise", its code does not: nothing to ask about failing.
    assert by_name["load_settings"] == {"purpose", "how", "use", "returns"}
    assert "short" not in by_name  # too short to be asked about
    assert offered == list(developer.offered(root, seed=3))  # seeded
    picked = developer.pick(offered, per_language=60, per_document=6, seed=3)
    per_definition = [(q.document, q.definition) for q in picked]
    assert max(per_definition.count(d) for d in per_definition) <= 2
    # Resolved like a hand-written question, but allowed to name its definition.
    source = sources.Source("go", "deb", "pkg", "1", "0" * 64, "MIT", "root")
    document = code_questions.Document(source, "retry.go", GO)
    asked = next(q for q in picked if q.definition == "Backoff")
    item = code_questions.Handwritten(
        asked.id, asked.question, "go", document.path, asked.definition, asked.line
    )
    (made,) = code_questions.handwritten_questions(
        [item], {document.path: document}, "developer", may_name=True
    )
    assert made.family == "developer" and made.id == asked.id
    assert made.answer.startswith("// Backoff computes")


def test_the_frozen_question_families_are_well_formed() -> None:
    for family, path, may_name in builder.FROZEN:
        items = code_questions.read_handwritten(path)
        assert len(items) >= 50, family
        assert {item.language for item in items} >= {
            "rust", "go", "python", "java", "javascript", "typescript", "c", "cpp",
        }  # fmt: skip
        for item in items:
            named = bool(doc_text.name_path(item.definition.split(".")[-1]).search(item.question))
            assert named == may_name or (may_name and not named and "::" in item.question), item.id


def test_span_questions_keep_their_lines_and_split_and_fail_loudly(tmp_path: Path) -> None:
    source = sources.Source("go", "deb", "pkg", "1", "0" * 64, "MIT", "root")
    document = code_questions.Document(source, "retry.go", GO)
    item = code_questions.SpanItem(
        "go-1", "how much longer is each wait?", "go", document.path, 5, 7, "test"
    )
    (made,) = code_questions.span_questions([item], {document.path: document})
    assert made.answer == "\n".join(GO.decode().split("\n")[4:7])
    assert (made.family, made.split, made.id) == ("span", "test", "span:go-1")
    out = tmp_path / "code"
    builder.write_dataset(out, [document], [made], {"name": "code", "format": "qa-spans"})
    (line,) = [json.loads(raw) for raw in (out / "questions.jsonl").read_text().splitlines()]
    assert (line["split"], line["family"]) == ("test", "span")
    beyond = dataclasses.replace(item, first=400, last=401)
    with pytest.raises(SystemExit, match="has 14 lines|has \\d+ lines"):
        code_questions.span_questions([beyond], {document.path: document})
    bad = tmp_path / "spans.jsonl"
    bad.write_text(json.dumps({**dataclasses.asdict(item), "lines": [9, 60]}) + "\n")
    with pytest.raises(SystemExit, match="at most 20"):
        code_questions.read_spans(bad)


def test_the_committed_span_questions_are_well_formed() -> None:
    items = code_questions.read_spans(builder.SPANS)
    assert sum(item.split == "test" for item in items) >= 40
    assert sum(item.split == "dev" for item in items) >= 20
    assert {item.language for item in items} == set(sources.LANGUAGE_ORDER)
    assert all(item.last - item.first < 15 for item in items)
