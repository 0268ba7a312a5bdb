"""Build the Python-source retrieval dataset from the standard library on this machine.

    python -m evaluation_data pysource [--src DIR] [--out DIR] [--max-files N]
                                       [--max-questions N] [--seed N]

It copies a fixed, seeded subset of CPython's own modules (``/usr/lib/python3.11``
by default; tests, IDLE, lib2to3 and other tool trees left out) into
``<out>/documents/`` under their package paths, and writes questions in the
QA-span layout read by ``ragsage eval`` (see docs/evaluation-dataset.md):

* ``docstring``: a function's, method's or class's docstring, first sentence;
* ``identifier``: "what does shutil.copytree do" for a public definition.

The answer is the definition's header (``def name(...)`` or ``class Name(...)``,
as word tokens), kept only when it occurs once in its file and lies whole inside
one default-size chunk both when the file is read as plain text and when it is
read by the Python source reader, so the two can be compared on equal terms.
Nothing touches the network; the data is never committed.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evaluation_data.builder_cli import add_sampling, builder_parser
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.limits import DEFAULT_LIMITS
from ragsage.adapters.parsing.readers.code import module_name
from ragsage.adapters.parsing.readers.text import read_text
from ragsage.core.documents import Document, RawSource
from ragsage.core.pages import ParsedDocument
from ragsage.core.text import words
from ragsage.evaluation.writing import QAQuestion as Question
from ragsage.evaluation.writing import positive_int, split_table, write_qa_dataset
from ragsage.ingestion import IngestionConfig

DEFAULT_SRC = Path("/usr/lib/python3.11")
DEFAULT_OUT = Path(".ragsage/eval/python-source")
# Trees that are tools, tests or generated tables rather than library code.
EXCLUDED_DIRS = frozenset(
    {"test", "tests", "idlelib", "lib2to3", "turtledemo", "ensurepip", "pydoc_data"}
    | {"encodings", "site-packages", "dist-packages", "__pycache__", "tkinter", "msilib"}
)
EXCLUDED_FILES = frozenset({"this.py", "antigravity.py", "__phello__.foo.py"})
KINDS = ("docstring", "identifier")
MIN_SPAN, MAX_SPAN = 3, 40
MIN_SENTENCE, MAX_SENTENCE = 4, 40
# A first sentence starting like this points elsewhere instead of saying what the code does.
GENERIC_OPENINGS = (
    "see ",
    "alias for",
    "deprecated",
    "same as",
    "synonym for",
    "internal",
    "helper",
    "override",
    "overridden",
    "xxx",
    "todo",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf)\.$", re.IGNORECASE)
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True, slots=True)
class Definition:
    """A class, function or method found in a file, with what questions are made of."""

    qualname: str
    header: str
    summary: str | None
    public: bool


def select_files(root: Path, max_files: int, seed: int, max_bytes: int) -> list[str]:
    """A seeded sample of library modules (top level and one package deep), sorted."""
    found = []
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        if set(parts[:-1]) & EXCLUDED_DIRS or parts[-1] in EXCLUDED_FILES:
            continue
        if parts[0].startswith("config-") or not 2_000 <= path.stat().st_size <= max_bytes:
            continue
        found.append(relative)
    random.Random(seed).shuffle(found)
    return sorted(found[:max_files])


def definitions(source: str) -> list[Definition]:
    """Classes, functions and methods at module or class level (nested functions skipped)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    return list(_walk(tree.body, lines, ()))


def _walk(body: list[ast.stmt], lines: list[str], outer: tuple[str, ...]) -> Iterator[Definition]:
    for node in body:
        if not isinstance(node, _Definition):
            continue
        path = (*outer, node.name)
        yield Definition(
            qualname=".".join(path),
            header=header_words(node, lines),
            summary=first_sentence(ast.get_docstring(node) or ""),
            public=not any(part.startswith("_") for part in path),
        )
        if isinstance(node, ast.ClassDef):
            yield from _walk(node.body, lines, path)


def header_words(node: _Definition, lines: list[str]) -> str:
    """The ``def``/``class`` header as word tokens, cut to the span length limit."""
    end_line, end_col = node.body[0].lineno, node.body[0].col_offset
    text = "\n".join(lines[node.lineno - 1 : end_line])
    # Cut at the body's first statement; what is left ends in the header's colon.
    cut = len(text) - len(lines[end_line - 1]) + end_col
    tokens = words(text[node.col_offset : cut])
    return " ".join(tokens[:MAX_SPAN])


def first_sentence(docstring: str) -> str | None:
    """The docstring's first sentence when it stands alone as a question, else ``None``."""
    paragraph = docstring.strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    sentence = ""
    for piece in _SENTENCE_END.split(text):
        sentence = f"{sentence} {piece}".strip()
        if not _ABBREVIATION.search(sentence):
            break
    count = len(words(sentence))
    if not MIN_SENTENCE <= count <= MAX_SENTENCE:
        return None
    if sentence.lower().startswith(GENERIC_OPENINGS) or ">>>" in sentence:
        return None
    return sentence


def candidates(document: str, source: str) -> list[Question]:
    """Every question one file offers, before uniqueness and findability checks."""
    module = module_name(document)
    found = definitions(source)
    tokens = " " + " ".join(words(source)) + " "
    questions = []
    for item in found:
        span = item.header
        # A header written twice in a file (overloads, platform variants) is ambiguous.
        if len(span.split()) < MIN_SPAN or tokens.count(f" {span} ") != 1:
            continue
        if item.summary is not None:
            questions.append(_question(document, item, "docstring", item.summary))
        if item.public:
            asked = f"what does {module}.{item.qualname} do"
            questions.append(_question(document, item, "identifier", asked))
    return questions


def _question(document: str, item: Definition, kind: str, text: str) -> Question:
    ident = f"{kind}:{document}:{item.qualname}"
    return Question(ident, text, document, item.header, kind)


def span_in(span: str, chunk_words: str) -> bool:
    """Whether the span's tokens occur contiguously in a chunk's (both space-joined)."""
    return f" {span} " in f" {chunk_words} "


def chunk_words(parsed: ParsedDocument, backend: HeuristicBackend, name: str) -> list[str]:
    """The word tokens of each chunk at the default size, space-joined."""
    config = IngestionConfig()
    document = Document(
        id=name, content_hash="", title="", source=name, created_at=datetime.now(UTC)
    )
    made = backend.chunk(
        document, parsed.pages, size=config.chunk_size, overlap=config.chunk_overlap
    )
    return [" ".join(words(chunk.text)) for chunk in made]


def parsed_both_ways(backend: HeuristicBackend, root: Path, document: str) -> dict[str, list[str]]:
    """Chunk tokens of a file read as plain text and by the Python source reader."""
    source = RawSource((root / document).read_bytes(), document, "text/x-python")
    return {
        "plain": chunk_words(read_text(source, DEFAULT_LIMITS), backend, document),
        "code": chunk_words(backend.parse(source), backend, document),
    }


def deduplicate(questions: list[Question]) -> list[Question]:
    """Drop questions whose text is asked of more than one definition."""
    counts = Counter(q.question.lower() for q in questions)
    return [q for q in questions if counts[q.question.lower()] == 1]


def choose(questions: list[Question], limit: int, per_document: int, seed: int) -> list[Question]:
    """A seeded, capped sample: half of each kind, at most ``per_document`` per file and kind."""
    rng = random.Random(seed)
    taken: list[Question] = []
    for kind in KINDS:
        pool = sorted((q for q in questions if q.kind == kind), key=lambda q: q.id)
        rng.shuffle(pool)
        per_file: Counter[str] = Counter()
        chosen = 0
        for q in pool:
            if chosen >= limit // len(KINDS):
                break
            if per_file[q.document] < per_document:
                per_file[q.document] += 1
                taken.append(q)
                chosen += 1
    return sorted(taken, key=lambda q: q.id)


def write_dataset(
    out: Path, root: Path, documents: list[str], questions: list[Question], source: str
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written."""
    return write_qa_dataset(
        out,
        root,
        documents,
        questions,
        name="python-source",
        description=(
            f"{len(documents)} standard-library modules; {len(questions)} questions "
            "(docstring, identifier) answered by a definition's header, split dev/test "
            "by SHA-1 of the id"
        ),
        source=source,
    )


def build(args: argparse.Namespace) -> int:
    """Pick the modules, make and check the questions, write the dataset, print a summary."""
    root: Path = args.src
    if not (root / "os.py").is_file():
        raise SystemExit(f"error: {root} has no os.py; point --src at a Python library folder")
    documents = select_files(root, args.max_files, args.seed, args.max_bytes)
    backend = HeuristicBackend()
    found: list[Question] = []
    findable: list[Question] = []
    chunks = {"plain": 0, "code": 0}
    for document in documents:
        source = (root / document).read_text(encoding="utf-8")
        offered = candidates(document, source)
        made = parsed_both_ways(backend, root, document)
        for way, tokens in made.items():
            chunks[way] += len(tokens)
        found += offered
        findable += [
            q
            for q in offered
            if all(any(span_in(q.answer, chunk) for chunk in tokens) for tokens in made.values())
        ]
    unique = deduplicate(findable)
    questions = choose(unique, args.max_questions, args.max_per_document, args.seed)
    size = write_dataset(args.out, root, documents, questions, f"CPython standard library, {root}")
    print(f"source: {root}")
    print(
        f"files: {len(documents)}  chunks at default size: {chunks['plain']} as plain text, "
        f"{chunks['code']} by the source reader"
    )
    print(
        f"candidates: {len(found)}, answer inside one chunk both ways: {len(findable)}, "
        f"after dedup: {len(unique)}, kept: {len(questions)}"
    )
    print("\n".join(split_table(questions, list(KINDS))))
    print(f"wrote {args.out} ({size:,} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = builder_parser("pysource", __doc__, out=DEFAULT_OUT)
    parser.add_argument(
        "--src", type=Path, default=DEFAULT_SRC, help=f"library folder (default {DEFAULT_SRC})"
    )
    parser.add_argument("--max-files", type=positive_int, default=90)
    parser.add_argument(
        "--max-bytes", type=positive_int, default=80_000, help="skip larger modules (default 80000)"
    )
    parser.add_argument("--max-questions", type=positive_int, default=800)
    add_sampling(parser, per_document=8, unit="file")
    return build(parser.parse_args(argv))
