"""The tree-sitter source reader, seen through the chunks a search would return.

Each language has a snippet shaped like real code in ``source_fixtures/``: a
documented type or class with methods, a free function, attributes where the
language has them, and a blank line followed by an indented line inside each
definition.  Whatever the language, a method's chunk is filed under the file,
its container and its own signature; its lines keep their indentation; its
doc comment, attributes and closing brace are in the same chunk; and no line
of the file goes missing.
"""

from __future__ import annotations

import logging
import re
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsage.adapters.parsing.languages import BY_NAME, LANGUAGES, Language
from ragsage.adapters.parsing.readers.source import read_source
from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.core.chunks import Chunk
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import ParsedDocument
from tests.unit.parsing.conftest import make_document
from tests.unit.parsing.fenced import code_lines

from .source_cases import BACKEND, BY_LANGUAGE, CASES, FIXTURES, SIZE, Case, Definition

DEFINITIONS = [
    pytest.param(case, definition, id=f"{case.language}-{kind}")
    for case in CASES
    for kind, definition in (("method", case.method), ("function", case.function))
]


def _source(case: Case) -> RawSource:
    return RawSource((FIXTURES / case.fixture).read_bytes(), case.filename)


def _text(case: Case) -> str:
    return (FIXTURES / case.fixture).read_text(encoding="utf-8")


def _chunk(parsed: ParsedDocument, size: int = SIZE) -> list[Chunk]:
    document = make_document(parsed.title, source="repo", metadata=parsed.metadata)
    return list(BACKEND.chunk(document, parsed.pages, size=size, overlap=0))


@cache
def _read(language: str) -> tuple[ParsedDocument, tuple[Chunk, ...]]:
    case = BY_LANGUAGE[language]
    if language == "python":
        # The backend sends Python to its ``ast`` reader; this is the tree-sitter one.
        read = read_source(_source(case), BY_NAME["python"])
        parsed = ParsedDocument(read.pages, read.title, {**read.metadata, "format": "code"})
    else:
        parsed = BACKEND.parse(_source(case))
    return parsed, tuple(_chunk(parsed))


def _lines_of(case: Case, definition: Definition) -> list[str]:
    lines = _text(case).split("\n")
    marked = [i for i, line in enumerate(lines) if definition.marker in line]
    assert len(marked) == 1, f"the marker {definition.marker!r} must name one line"
    first = marked[0] - definition.back
    last = lines.index(definition.end, marked[0])
    return lines[first : last + 1]


def _after_blank(lines: list[str]) -> tuple[str, str]:
    """The indented line that follows a blank line in a definition, and the line before."""
    for index in range(1, len(lines) - 1):
        if not lines[index].strip() and lines[index + 1][:1] in (" ", "\t"):
            return lines[index - 1], lines[index + 1]
    raise AssertionError("the fixture's definition has no indented line after a blank one")


def _holding(chunks: tuple[Chunk, ...], line: str) -> Chunk:
    found = [chunk for chunk in chunks if line in chunk.text.split("\n")]
    assert len(found) == 1, f"{line!r} is in {len(found)} chunks"
    return found[0]


@pytest.mark.parametrize(("case", "definition"), DEFINITIONS)
def test_a_definition_is_filed_under_its_file_container_and_signature(
    case: Case, definition: Definition
) -> None:
    parsed, chunks = _read(case.language)
    assert parsed.metadata["language"] == case.language
    assert "parse_warning" not in parsed.metadata
    _, indented = _after_blank(_lines_of(case, definition))
    assert _holding(chunks, indented).heading_path == definition.path


@pytest.mark.parametrize(("case", "definition"), DEFINITIONS)
def test_indentation_and_blank_lines_inside_a_definition_are_kept(
    case: Case, definition: Definition
) -> None:
    _, chunks = _read(case.language)
    before, indented = _after_blank(_lines_of(case, definition))
    # Tabs stay tabs, and the blank line stays between the two lines.
    assert f"{before}\n\n{indented}" in _holding(chunks, indented).text


@pytest.mark.parametrize(("case", "definition"), DEFINITIONS)
def test_a_definition_is_whole_in_one_chunk_from_its_doc_comment_to_its_end(
    case: Case, definition: Definition
) -> None:
    _, chunks = _read(case.language)
    lines = _lines_of(case, definition)
    whole = "\n".join(lines)
    _, indented = _after_blank(lines)
    chunk = _holding(chunks, indented)
    assert whole in chunk.text, (
        f"the chunk under {chunk.heading_path} does not hold the whole definition:\n{chunk.text}"
    )


@pytest.mark.parametrize("case", CASES, ids=[case.language for case in CASES])
def test_every_line_of_the_file_is_in_a_chunk_once_and_in_order(case: Case) -> None:
    _, chunks = _read(case.language)
    kept = [line for chunk in chunks for line in code_lines(chunk.text) if line.strip()]
    assert kept == [line for line in _text(case).split("\n") if line.strip()]


# A line that only closes something, with perhaps a comment naming what it closes.
_ONLY_CLOSES = re.compile(r"\s*(?:(?:[)}\]];?|end|esac|fi|done)\s*)+(?://.*|#\s.*)?")


@pytest.mark.parametrize("case", CASES, ids=[case.language for case in CASES])
def test_no_chunk_is_only_the_closing_lines_of_a_container(case: Case) -> None:
    _, chunks = _read(case.language)
    for chunk in chunks:
        lines = [line for line in code_lines(chunk.text) if line.strip()]
        assert not all(_ONLY_CLOSES.fullmatch(line) for line in lines), (
            f"a chunk under {chunk.heading_path} holds only {lines}"
        )


# -- Files the grammar cannot read ------------------------------------------------------

GARBAGE = (
    "package main\n\nfunc ok() int {\n\treturn 1\n}\n\n"
    + "<<<<<<< HEAD\n)))) ]]] @@@ ### !!! %%% ^^^ &&& ~~~\n=======\n" * 20
)


def _only_block(parsed: ParsedDocument, title: str, fence: str) -> list[str]:
    text = parsed.pages[0].text
    assert text.startswith(f"# {title}\n\n```{fence} startline=1\n")
    assert text.count("```") == 2, "the whole file is one fenced block"
    return code_lines(text)


@pytest.mark.parametrize(("filename", "label"), [("cmd/main.go", "Go"), ("src/lib.rs", "Rust")])
def test_a_file_that_is_mostly_garbage_is_indexed_whole_with_a_warning(
    filename: str, label: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragsage.adapters.parsing.readers.source"):
        parsed = BACKEND.parse(RawSource(GARBAGE.encode(), filename))
    warning = parsed.metadata["parse_warning"]
    share = re.search(rf"(\d+)% of the file did not parse as {label}\b", warning)
    assert share is not None and int(share.group(1)) > 30, warning
    assert _only_block(parsed, filename, BY_NAME[parsed.metadata["language"]].fence) == (
        GARBAGE.rstrip("\n").split("\n")
    )
    assert filename in caplog.text and "without code structure" in caplog.text
    chunks = _chunk(parsed, size=64)
    kept = [line for chunk in chunks for line in code_lines(chunk.text) if line.strip()]
    assert kept == [line for line in GARBAGE.split("\n") if line.strip()]


def test_a_missing_grammar_indexes_the_file_whole_and_names_the_package(
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing = Language("rust", "Rust", (".rs",), "tree_sitter_nonexistent")
    text = _text(BY_LANGUAGE["rust"])
    with caplog.at_level(logging.WARNING, logger="ragsage.adapters.parsing.readers.source"):
        parsed = read_source(RawSource(text.encode(), "src/store/cache.rs"), missing)
    assert "tree_sitter_nonexistent" in parsed.metadata["parse_warning"]
    assert "Rust" in parsed.metadata["parse_warning"]
    assert _only_block(parsed, "src/store/cache.rs", "rust") == text.rstrip("\n").split("\n")
    assert "src/store/cache.rs" in caplog.text


def test_nul_bytes_are_refused_as_not_source() -> None:
    with pytest.raises(ParseError) as raised:
        BACKEND.parse(RawSource(b"package main\n\x00\x00\x01func main() {}\n", "cmd/main.go"))
    assert raised.value.filename == "cmd/main.go"
    assert "NUL" in raised.value.reason


def test_latin1_bytes_are_read_with_a_warning_and_keep_their_structure() -> None:
    source = (
        "package konto\n\n"
        "// Abheben prüft den Saldo.\n"
        "func Abheben(betrag int) error {\n"
        "\tif betrag < 0 {\n"
        "\t\treturn fehler\n"
        "\t}\n"
        "\treturn nil\n"
        "}\n"
    )
    parsed = BACKEND.parse(RawSource(source.encode("latin-1"), "konto/konto.go"))
    assert "UTF-8" in parsed.metadata["parse_warning"]
    chunks = _chunk(parsed)
    chunk = _holding(tuple(chunks), "\t\treturn fehler")
    assert chunk.heading_path[-1] == "func Abheben(betrag int) error"
    assert re.search(r"// Abheben pr.{1,2}ft den Saldo\.", chunk.text)


# -- Generated files ---------------------------------------------------------------------

count = make_token_counter("cl100k_base")
PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))

_name = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True).map(lambda n: f"v_{n}")
_number = st.integers(0, 9999).map(str)
_words = st.lists(
    st.sampled_from(["counts", "the", "rows", "left", "after", "a", "retry", "cache", "bytes"]),
    min_size=1,
    max_size=10,
).map(" ".join)
# One generated line: its text, and the heading its chunk belongs under (None for the file).
Owned = tuple[str, str | None]


@st.composite
def _statement(draw: st.DrawFn, go: bool, depth: int) -> list[str]:
    pad = ("\t" if go else "    ") * depth
    inner = ("\t" if go else "    ") * (depth + 1)
    a, b, n = draw(_name), draw(_name), draw(_number)
    bind = f"{a} := " if go else f"let {a} = "
    end = "" if go else ";"
    kind = draw(st.sampled_from(["let", "add", "comment", "blank", "call", "chain", "if"]))
    if kind == "let":
        return [f"{pad}{bind}{b} + {n}{end}"]
    if kind == "add":
        return [f"{pad}{a} += {n}{end}"]
    if kind == "comment":
        return [f"{pad}// {draw(_words)}"]
    if kind == "blank":
        return [""]
    if kind == "call" or go and kind == "chain":
        return [f"{pad}{bind}compute(", f"{inner}{b},", f"{inner}{n},", f"{pad}){end}"]
    if kind == "chain":
        chain = [".iter()", f".map(|x| x * {n})", ".sum();"]
        return [f"{pad}{bind}{b}", *(f"{inner}{call}" for call in chain)]
    if depth >= 3:
        return [f"{pad}{a} -= {n}{end}"]
    body = draw(st.lists(_statement(go, depth + 1), min_size=1, max_size=4))
    return [f"{pad}if {a} > {n} {{", *(line for lines in body for line in lines), f"{pad}}}"]


@st.composite
def _definition(draw: st.DrawFn, go: bool) -> list[Owned]:
    name, parameter = draw(_name), draw(_name)
    signature = f"func {name}({parameter} int) int" if go else f"fn {name}({parameter}: u32) -> u32"
    docs = [f"{'//' if go else '///'} {draw(_words)}" for _ in range(draw(st.integers(0, 2)))]
    if not go and draw(st.booleans()):
        docs.append("#[inline]")
    body = draw(st.lists(_statement(go, 1), min_size=1, max_size=25))
    tail = f"\treturn {parameter}" if go else f"    {parameter}"
    lines = [*docs, f"{signature} {{", *(line for part in body for line in part), tail, "}"]
    return [(line, signature) for line in lines]


@st.composite
def _loose(draw: st.DrawFn, go: bool) -> list[Owned]:
    kind = draw(st.sampled_from(["comment", "item"]))
    if kind == "comment":
        return [(f"// {draw(_words)}", None)]
    return [(f"var {draw(_name)} = {draw(_number)}" if go else f"use std::{draw(_name)};", None)]


@st.composite
def _file(draw: st.DrawFn) -> tuple[str, list[Owned]]:
    go = draw(st.booleans())
    items = draw(st.lists(st.one_of(_definition(go), _loose(go)), min_size=1, max_size=8))
    lines: list[Owned] = [("package gen", None)] if go else []
    for item in items:
        if lines:
            lines.extend([("", None)] * draw(st.integers(1, 2)))
        lines.extend(item)
    return ("gen/gen.go" if go else "src/gen.rs"), lines


@PROPERTY
@given(_file(), st.sampled_from([64, 96, 128]))
def test_generated_files_chunk_within_budget_each_line_under_its_definition(
    generated: tuple[str, list[Owned]], size: int
) -> None:
    filename, owned = generated
    text = "\n".join(line for line, _ in owned) + "\n"
    parsed = BACKEND.parse(RawSource(text.encode(), filename))
    assert "parse_warning" not in parsed.metadata, parsed.metadata
    chunks = _chunk(parsed, size=size)
    expected = [(line, owner) for line, owner in owned if line.strip()]
    position = 0
    for chunk in chunks:
        assert count(chunk.text) <= size, f"{count(chunk.text)} tokens: {chunk.text}"
        lines = [line for line in code_lines(chunk.text) if line.strip()]
        taken = expected[position : position + len(lines)]
        assert [line for line, _ in taken] == lines, "a line is lost, repeated or moved"
        owners = {owner for _, owner in taken}
        # A definition never shares a chunk with its neighbours or the file's loose lines.
        assert len(owners) == 1, chunk.text
        (owner,) = owners
        assert chunk.heading_path[1:] == ((owner,) if owner else ()), chunk.text
        position += len(lines)
    assert position == len(expected), "lines at the end of the file are lost"


# Punctuation no grammar accepts: a merge gone wrong, a binary dump pasted as text.
NOISE = "x = 1\n" + "}}} )) ]] ;; {{ (( <<< >>> ||| &&& \\\\ '' \"\" @@ $$ `` ?? ::\n" * 30


@pytest.mark.parametrize("language", [language.name for language in LANGUAGES])
def test_every_language_reads_a_file_it_cannot_parse_as_one_block(language: str) -> None:
    spec = BY_NAME[language]
    # PHP reads anything outside <?php ... ?> as page text, so its noise starts inside.
    text = ("<?php\n" if language == "php" else "") + NOISE
    filename = f"broken{spec.extensions[0]}"
    parsed = read_source(RawSource(text.encode(), filename), spec)
    assert f"did not parse as {spec.label}" in parsed.metadata["parse_warning"]
    assert _only_block(parsed, filename, spec.fence) == text.rstrip("\n").split("\n")
