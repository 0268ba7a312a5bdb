"""Questions about code in developers' words, generated from the code set's definitions.

    python -m evaluation_data.code_questions_developer
        [--documents .ragsage/eval/code/documents] [--per-language 60] [--per-document 6]
        [--seed 11] > evaluation_data/code_questions_developer.jsonl

A developer reading unfamiliar code names what they see and asks about it:
what a type is for and how to get one, what a function does, what it returns,
when it fails, how it works.  Each definition the tree-sitter grammars find
(never ragsage's own readers) offers such intents, each written in one of
several phrasings chosen by a seeded draw; the answer is the definition itself.
No doc comment is read, so the questions hold the definition's name and
little else of its words.  A name written more than once in the set (``new``,
``__init__``, ``Error``) is skipped, since its question would have several
right answers.

The file is generated once and committed: the questions and their dev/test
split (by a hash of the id) are frozen before any default is tuned on them.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluation_data.code_definitions import MIN_CODE_LINES, Definition, find_definitions
from evaluation_data.code_questions import Handwritten, seeded_pick
from ragsage.evaluation.writing import split_of

TYPE_NODES = re.compile(r"class|struct|enum|interface|trait|type_spec|type_alias|type_item|module")
CALLABLE_NODES = re.compile(r"function|method|constructor")
# Assignments that define a function in JavaScript and TypeScript.
ASSIGNED_NODES = re.compile(r"expression_statement|variable_declaration|lexical_declaration")
SKIPPED_NODES = re.compile(r"impl_item|mod_item|macro")
FAILS = re.compile(
    r"\b(?:raise|throw|throws|panic!?|die|abort|Err|errors?\.New|Errorf|Exception|"
    r"return\s+-1|return\s+NULL|return\s+nil,\s*\w*[eE]rr|exit\s+[1-9])\b"
)
RETURNS = re.compile(r"\breturn\b\s*[^;\s}]|->|\bresolve\(|\byield\b")

PHRASINGS: dict[str, tuple[str, ...]] = {
    "purpose": (
        "what does {name} do?",
        "what is {name} for?",
        "explain what {name} is responsible for",
        "what's the job of {name}?",
    ),
    "returns": (
        "what does {name} return?",
        "what do I get back when I call {name}?",
        "what is the result of {name}?",
    ),
    "fails": (
        "when does {name} fail?",
        "what errors can {name} produce?",
        "in which cases does {name} give up with an error?",
    ),
    "how": (
        "how is {name} implemented?",
        "how does {name} work?",
        "walk me through what happens inside {name}",
    ),
    "use": (
        "how do I call {name}?",
        "how is {name} meant to be used?",
        "what arguments does {name} take?",
    ),
    "type-purpose": (
        "what is {name} for?",
        "what does the {name} type represent?",
        "what is a {name} used for?",
    ),
    "type-create": (
        "how do I create a {name}?",
        "how do I construct a new {name}?",
        "how can I get an instance of {name}?",
    ),
    "type-holds": (
        "what does a {name} hold?",
        "what fields does {name} have?",
        "what data is kept in a {name}?",
    ),
}


@dataclass(frozen=True, slots=True)
class Offered(Handwritten):
    """A definition's question before the per-language pick: a frozen line, and its intent."""

    intent: str


def shown_name(language: str, item: Definition) -> str:
    """The definition's name as a developer writes it: qualified for a method."""
    if item.qualname == item.name or "." not in item.qualname:
        return item.name
    owner = item.qualname.rsplit(".", 2)[-2]
    joiner = "::" if language in {"rust", "cpp", "php"} else "#" if language == "ruby" else "."
    return f"{owner}{joiner}{item.name}"


def intents(item: Definition, code: str) -> list[str]:
    """What a developer may ask of this definition, by its kind and what its code does."""
    if SKIPPED_NODES.search(item.node_type):
        return []
    if TYPE_NODES.search(item.node_type):
        return ["type-purpose", "type-create", "type-holds"]
    callable_ = CALLABLE_NODES.search(item.node_type) or (
        ASSIGNED_NODES.search(item.node_type) and re.search(r"\bfunction\b|=>", code)
    )
    if not callable_:
        return []
    found = ["purpose", "how", "use"]
    if RETURNS.search(code):
        found.append("returns")
    if FAILS.search(code):
        found.append("fails")
    return found


def offered(root: Path, seed: int) -> Iterator[Offered]:
    """Every question the set's definitions offer, names written once in the set only."""
    files = sorted(path for path in root.rglob("*") if path.is_file())
    found: list[tuple[str, str, Definition, str, str]] = []
    names: Counter[str] = Counter()
    for path in files:
        document = path.relative_to(root).as_posix()
        language = document.split("/", 1)[0]
        source = path.read_bytes()
        for item in find_definitions(language, source):
            code = item.code(source)
            if sum(1 for line in code.splitlines() if line.strip()) < MIN_CODE_LINES:
                continue
            shown = shown_name(language, item)
            names[shown.lower()] += 1
            found.append((document, language, item, code, shown))
    for document, language, item, code, shown in found:
        if names[shown.lower()] > 1 or len(item.name) < 3:
            continue
        draw = random.Random(f"{seed}:{document}:{item.qualname}:{item.line}")
        for intent in intents(item, code):
            phrasing = draw.choice(PHRASINGS[intent])
            yield Offered(
                id=f"developer:{document}:{item.qualname}:{item.line}:{intent}",
                question=phrasing.format(name=shown),
                language=language,
                document=document,
                definition=item.qualname,
                line=item.name_line,
                intent=intent,
            )


def pick(
    questions: list[Offered], per_language: int, per_document: int, seed: int
) -> list[Offered]:
    """Per language a seeded pick, at most two intents a definition, a few per file."""
    return seeded_pick(
        questions,
        lambda q: q.language,
        per_language,
        per_document,
        seed,
        group_of=lambda q: (q.document, q.definition, q.line),
        per_group=2,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation_data.code_questions_developer",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--documents", type=Path, default=Path(".ragsage/eval/code/documents"))
    parser.add_argument("--per-language", type=int, default=60)
    parser.add_argument("--per-document", type=int, default=6)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    if not args.documents.is_dir():
        raise SystemExit(f"error: {args.documents}: no documents (build the code set first)")
    chosen = pick(
        list(offered(args.documents, args.seed)), args.per_language, args.per_document, args.seed
    )
    for question in chosen:
        record = {
            "id": question.id,
            "question": question.question,
            "language": question.language,
            "document": question.document,
            "definition": question.definition,
            "line": question.line,
            "intent": question.intent,
            "split": split_of(question.id),
        }
        print(json.dumps(record, ensure_ascii=False))
    counts = Counter(q.intent for q in chosen)
    print(f"{len(chosen)} questions; intents: {dict(sorted(counts.items()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
