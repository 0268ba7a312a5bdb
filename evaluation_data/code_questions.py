"""The code dataset's questions: from doc comments, and written by hand, resolved to spans."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from evaluation_data.code_definitions import MIN_CODE_LINES, Definition, find_definitions, line_of
from evaluation_data.code_doc_text import name_path, summary
from evaluation_data.code_sources import Source
from evaluation_data.code_specs import SPECS
from ragsage.core.text import words


@dataclass(frozen=True, slots=True)
class CodeQuestion:
    """One line of questions.jsonl, with the answer's code (no doc comment) for the report."""

    id: str
    question: str
    document: str
    answer: str
    kind: str  # the language
    family: str
    code: str = field(repr=False, default="")
    split: str | None = None  # None: fixed by the id's hash


@dataclass(frozen=True, slots=True)
class Document:
    """A sampled file: where it comes from and where it goes under ``documents/``."""

    source: Source
    relative: str
    content: bytes

    @property
    def path(self) -> str:
        """Its path below ``documents/``."""
        return f"{self.source.language}/{self.source.name}/{self.relative}"


def doc_comment_questions(document: str, language: str, source: bytes) -> list[CodeQuestion]:
    """Every doc-comment question one file offers, before the cross-file dedup and the pick."""
    found = find_definitions(language, source)
    headers = Counter(item.header for item in found)
    questions = []
    for item in found:
        # A header written twice (overloads with one signature, platform variants) is ambiguous.
        if not item.doc or item.nodoc or not item.header or headers[item.header] > 1:
            continue
        code = item.code(source)
        if sum(1 for line in code.splitlines() if line.strip()) < MIN_CODE_LINES:
            continue
        text = summary(item.doc, item.hidden, drop_leading=language == "go")
        if text is None:
            continue
        ident = f"doc-comment:{document}:{item.qualname}:{item.line}"
        questions.append(
            CodeQuestion(ident, text, document, item.span(source), language, "doc-comment", code)
        )
    return questions


def deduplicate(questions: Sequence[CodeQuestion]) -> list[CodeQuestion]:
    """Drop every question whose wording (as word tokens) is asked of more than one definition."""
    counts = Counter(tuple(words(q.question)) for q in questions)
    return [q for q in questions if counts[tuple(words(q.question))] == 1]


class _Pickable(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def document(self) -> str: ...


P = TypeVar("P", bound=_Pickable)


def seeded_pick(
    items: Sequence[P],
    language_of: Callable[[P], str],
    limit: int,
    per_document: int,
    seed: int,
    *,
    group_of: Callable[[P], object] | None = None,
    per_group: int = 0,
) -> list[P]:
    """Per language a seeded pick of at most ``limit``, at most ``per_document`` per file.

    With ``group_of``, also at most ``per_group`` of each group (a definition's intents).
    """
    by_language: dict[str, list[P]] = defaultdict(list)
    for item in sorted(items, key=lambda q: q.id):
        by_language[language_of(item)].append(item)
    taken: list[P] = []
    for language in sorted(by_language):
        pool = by_language[language]
        random.Random(f"{seed}:{language}").shuffle(pool)
        per_file: Counter[str] = Counter()
        per_key: Counter[object] = Counter()
        chosen = 0
        for item in pool:
            group = group_of(item) if group_of is not None else None
            if (
                chosen < limit
                and per_file[item.document] < per_document
                and (group_of is None or per_key[group] < per_group)
            ):
                per_file[item.document] += 1
                per_key[group] += 1
                taken.append(item)
                chosen += 1
    return sorted(taken, key=lambda q: q.id)


def choose(
    questions: Sequence[CodeQuestion], limit: int, per_document: int, seed: int
) -> list[CodeQuestion]:
    """Per language a seeded pick of at most ``limit``, at most ``per_document`` per file."""
    return seeded_pick(questions, lambda q: q.kind, limit, per_document, seed)


@dataclass(frozen=True, slots=True)
class Handwritten:
    """One line of a hand-written question file, such as code_questions_handwritten.jsonl."""

    id: str
    question: str
    language: str
    document: str
    definition: str
    line: int


def read_handwritten(path: Path) -> list[Handwritten]:
    """The hand-written questions, every field checked."""
    return _read_items(path, "hand-written question", _handwritten)


def _handwritten(record: dict[str, Any]) -> Handwritten:
    return Handwritten(
        id=str(record["id"]),
        question=str(record["question"]),
        language=str(record["language"]),
        document=str(record["document"]),
        definition=str(record["definition"]),
        line=int(record["line"]),
    )


class _Located(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def language(self) -> str: ...

    @property
    def document(self) -> str: ...


L = TypeVar("L", bound=_Located)


def _read_items(
    path: Path,
    what: str,
    build: Callable[[dict[str, Any]], L],
    problem: Callable[[L], str | None] = lambda item: None,
) -> list[L]:
    """One question per line of ``path``, built and checked; the first fault stops the build."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = build(json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"error: {path}:{number}: not a {what} ({exc})") from exc
        if item.language not in SPECS or not item.document.startswith(f"{item.language}/"):
            raise SystemExit(f"error: {path}:{number}: language and document do not agree")
        if (fault := problem(item)) is not None:
            raise SystemExit(f"error: {path}:{number}: {fault}")
        found.append(item)
    idents = Counter(item.id for item in found)
    if duplicated := sorted(ident for ident, count in idents.items() if count > 1):
        raise SystemExit(f"error: {path}: duplicate ids {', '.join(duplicated)}")
    return found


def _document_of(documents: dict[str, Document], family: str, item: _Located) -> Document:
    document = documents.get(item.document)
    if document is None:
        raise SystemExit(f"error: {family} question {item.id}: no document {item.document}")
    return document


def _family_id(item: _Located, family: str) -> str:
    return item.id if item.id.startswith(f"{family}:") else f"{family}:{item.id}"


def resolve(item: Handwritten, source: bytes) -> Definition:
    """The definition a hand-written question points at, by name and line; fails loudly."""
    matches = []
    for found in find_definitions(item.language, source):
        if item.definition not in {found.name, found.qualname}:
            continue
        if line_of(source, found.start) <= item.line <= found.name_line:
            matches.append(found)
    if len(matches) != 1:
        lines = sorted(
            f"{f.qualname}@{f.line}"
            for f in find_definitions(item.language, source)
            if f.name == item.definition
        )
        raise SystemExit(
            f"error: hand-written question {item.id}: {len(matches)} definitions named "
            f"{item.definition!r} span line {item.line} of {item.document} "
            f"(definitions of that name: {', '.join(lines) or 'none'})"
        )
    return matches[0]


def handwritten_questions(
    items: Sequence[Handwritten],
    documents: dict[str, Document],
    family: str = "handwritten",
    *,
    may_name: bool = False,
) -> list[CodeQuestion]:
    """Questions written down by name and line (by hand, or generated and frozen), resolved.

    A family whose questions describe behaviour may not name the definition
    (``may_name`` off); one in developers' words names it on purpose.
    """
    made = []
    for item in items:
        document = _document_of(documents, family, item)
        found = resolve(item, document.content)
        if not may_name and name_path(found.name).search(item.question):
            raise SystemExit(f"error: {family} question {item.id} names {found.name!r}")
        made.append(
            CodeQuestion(
                _family_id(item, family),
                item.question,
                item.document,
                found.span(document.content),
                item.language,
                family,
                found.code(document.content),
            )
        )
    return made


# A span question's answer is a few lines, not a definition: more than this
# many is a definition asked about in other words.
MAX_SPAN_LINES = 20


@dataclass(frozen=True, slots=True)
class SpanItem:
    """A question whose answer is a run of lines inside a long definition."""

    id: str
    question: str
    language: str
    document: str
    first: int
    last: int
    split: str


def read_spans(path: Path) -> list[SpanItem]:
    """The span questions, every field checked; their split is written with them."""
    return _read_items(path, "span question", _span, _span_problem)


def _span(record: dict[str, Any]) -> SpanItem:
    first, last = (int(value) for value in record["lines"])
    return SpanItem(
        id=str(record["id"]),
        question=str(record["question"]),
        language=str(record["language"]),
        document=str(record["document"]),
        first=first,
        last=last,
        split=str(record["split"]),
    )


def _span_problem(item: SpanItem) -> str | None:
    if item.split not in ("dev", "test"):
        return "split must be dev or test"
    if not 1 <= item.first <= item.last or item.last - item.first >= MAX_SPAN_LINES:
        return f"lines must run forwards, at most {MAX_SPAN_LINES}"
    return None


def span_questions(
    items: Sequence[SpanItem], documents: dict[str, Document], family: str = "span"
) -> list[CodeQuestion]:
    """Span questions resolved to their lines as they stand in the file."""
    made = []
    for item in items:
        document = _document_of(documents, family, item)
        lines = document.content.decode("utf-8").split("\n")
        if item.last > len(lines):
            raise SystemExit(
                f"error: {family} question {item.id}: {item.document} has {len(lines)} lines"
            )
        answer = "\n".join(lines[item.first - 1 : item.last])
        if not answer.strip():
            raise SystemExit(f"error: {family} question {item.id}: its lines are blank")
        made.append(
            CodeQuestion(
                _family_id(item, family),
                item.question,
                item.document,
                answer,
                item.language,
                family,
                answer,
                split=item.split,
            )
        )
    return made
