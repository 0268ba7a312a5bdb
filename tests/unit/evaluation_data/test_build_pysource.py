"""The python-source dataset builder, on a small module written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluation_data import build_eval_pysource as builder
from ragsage.core.text import words
from ragsage.evaluation.writing import split_of

MODULE = '''"""Copy trees of files."""

import os


def copytree(src, dst, symlinks=False,
             ignore=None, *, dirs_exist_ok=False):
    """Recursively copy a directory tree and return the destination directory.

    More detail that is not part of the question.
    """
    return dst


def _helper(path):
    """Internal helper for copytree."""
    return path


def quiet(x):
    return x


class Archive(Base):
    """Read and write archives, e.g. tar files."""

    def open(self, name, mode="r"):
        """See the module documentation."""

    def extract(self, member, path=None):
        """Extract one member to the given path, keeping its permissions."""
        def inner():
            """Never asked about: nested in a function."""
        return inner


if os.name == "nt":
    def quiet(x):
        return -x
'''


def _by_id(document: str = "pkg/files.py") -> dict[str, Any]:
    return {q.id: q for q in builder.candidates(document, MODULE)}


def test_docstring_questions_use_the_first_sentence_and_the_header_as_answer() -> None:
    found = _by_id()
    copy = found["docstring:pkg/files.py:copytree"]
    assert (
        copy.question == "Recursively copy a directory tree and return the destination directory."
    )
    # The header spans two lines; its words, punctuation dropped, are the answer.
    assert copy.answer == "def copytree src dst symlinks false ignore none dirs exist ok false"
    extract = found["docstring:pkg/files.py:Archive.extract"]
    assert extract.question == "Extract one member to the given path, keeping its permissions."
    assert extract.answer == "def extract self member path none"


def test_identifier_questions_name_the_dotted_path_of_public_definitions() -> None:
    found = _by_id()
    assert found["identifier:pkg/files.py:copytree"].question == "what does pkg.files.copytree do"
    assert found["identifier:pkg/files.py:Archive"].answer == "class archive base"
    assert "identifier:pkg/files.py:Archive.extract" in found
    assert "identifier:pkg/files.py:_helper" not in found


def test_unhelpful_ambiguous_and_nested_definitions_give_no_question() -> None:
    found = _by_id()
    assert "docstring:pkg/files.py:_helper" not in found  # "Internal helper ..." says nothing
    assert "docstring:pkg/files.py:Archive.open" not in found  # points elsewhere
    # An abbreviation does not end the sentence early.
    assert found["docstring:pkg/files.py:Archive"].question == (
        "Read and write archives, e.g. tar files."
    )
    # Two definitions share the header "def quiet x": neither can be told apart.
    assert not any("quiet" in ident for ident in found)
    assert not any("inner" in ident for ident in found)


def test_answers_are_findable_in_both_parses_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "files.py").write_text(MODULE)
    made = builder.parsed_both_ways(builder.HeuristicBackend(), tmp_path, "pkg/files.py")
    assert set(made) == {"plain", "code"}
    for question in builder.candidates("pkg/files.py", MODULE):
        assert 3 <= len(question.answer.split()) <= 40
        assert question.answer == " ".join(words(question.answer))
        for chunks in made.values():
            assert any(builder.span_in(question.answer, chunk) for chunk in chunks)


def test_the_script_writes_a_qa_span_dataset_with_a_fixed_split(tmp_path: Path) -> None:
    src = tmp_path / "lib"
    (src / "pkg").mkdir(parents=True)
    (src / "os.py").write_text('"""Operating system."""\n' + "X = 1\n" * 400)
    (src / "pkg" / "files.py").write_text(MODULE + "\n" * 2000)
    (src / "test").mkdir()
    (src / "test" / "test_files.py").write_text(MODULE + "\n" * 2000)
    out = tmp_path / "out"
    assert builder.main(["--src", str(src), "--out", str(out)]) == 0
    assert sorted(p.relative_to(out / "documents").as_posix() for p in out.rglob("*.py")) == [
        "os.py",
        "pkg/files.py",
    ]
    meta = json.loads((out / "dataset.json").read_text())
    assert meta["format"] == "qa-spans" and meta["name"] == "python-source"
    lines = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert {q["kind"] for q in lines} == {"docstring", "identifier"}
    assert all(q["document"] == "pkg/files.py" for q in lines)
    assert all(q["split"] == split_of(q["id"]) for q in lines)
    assert split_of("docstring:pkg/files.py:copytree") in {"dev", "test"}
